"""GET /v1/models, download, and predict."""

from __future__ import annotations

import hashlib
import json
import math
import uuid

import numpy as np
import pytest

from metro._testing import write_mlp_artifact
from service.crud.models import register_model


def test_get_and_list_models(client, tenant, add_model):
    a = add_model(tenant)
    b = add_model(tenant, feature_names=["x", "y", "z"], onnx=True)
    listed = client.get("/v1/models", headers=tenant.headers).json()
    assert [m["id"] for m in listed["items"]] == [b["id"], a["id"]]
    r = client.get(f"/v1/models/{b['id']}", headers=tenant.headers)
    assert r.status_code == 200
    model = r.json()
    assert model["sha256"] == b["sha256"] and model["formats"] == ["safetensors", "onnx"]
    manifest = model["manifest"]
    assert manifest["architecture"]["kind"] == "linear"
    assert manifest["input_shape"] == [3] and manifest["format_version"] == 2
    assert manifest["n_features"] == 3 and manifest["feature_names"] == ["x", "y", "z"]
    assert manifest["lambda_star"] == -0.42 and manifest["weights_sha256"] == b["sha256"]
    assert client.get(f"/v1/models/{uuid.uuid4()}", headers=tenant.headers).status_code == 404


def test_list_models_of_a_job(client, app, tenant, other_tenant, submit, add_model):
    job = submit(tenant)
    add_model(tenant)  # no job
    with app.state.sessionmaker() as session:
        model = register_model(
            session, tenant_id=tenant.id, job_id=uuid.UUID(job["id"]), artifact_uri="models/x",
            sha256="0" * 64, manifest={},
        )  # fmt: skip
    listed = client.get("/v1/models", params={"job_id": job["id"]}, headers=tenant.headers).json()
    assert [m["id"] for m in listed["items"]] == [str(model.id)]
    assert listed["items"][0]["job_id"] == job["id"]
    theirs = client.get("/v1/models", params={"job_id": job["id"]}, headers=other_tenant.headers)
    assert theirs.status_code == 200 and theirs.json()["items"] == []
    bad = client.get("/v1/models", params={"job_id": "nope"}, headers=tenant.headers)
    assert bad.status_code == 422


def test_download_safetensors_and_onnx(client, tenant, add_model):
    m = add_model(tenant, onnx=True)
    r = client.get(f"/v1/models/{m['id']}/download", headers=tenant.headers)
    assert r.status_code == 200
    assert hashlib.sha256(r.content).hexdigest() == m["sha256"]
    assert r.headers["etag"] == f'"{m["sha256"]}"'
    assert "attachment" in r.headers["content-disposition"]
    r = client.get(
        f"/v1/models/{m['id']}/download", params={"format": "onnx"}, headers=tenant.headers
    )
    assert r.status_code == 200 and r.content == (m["dir"] / "model.onnx").read_bytes()
    assert r.content[:2] != b"" and len(r.content) > 100
    assert r.headers["etag"] == f'"{hashlib.sha256(r.content).hexdigest()}"'


@pytest.mark.parametrize("format", ["safetensors", "onnx"])
def test_a_download_the_client_holds_is_not_sent_again(client, tenant, add_model, format):
    """The answer carried an ETag (and Cache-Control: no-cache asks a client's cache to
    revalidate), but If-None-Match naming it sent the whole file again."""
    m = add_model(tenant, onnx=True)
    path, params = f"/v1/models/{m['id']}/download", {"format": format}
    etag = client.get(path, params=params, headers=tenant.headers).headers["etag"]
    for given in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        r = client.get(path, params=params, headers={**tenant.headers, "If-None-Match": given})
        assert r.status_code == 304 and r.content == b"", given
        assert r.headers["etag"] == etag
    other = client.get(path, params=params, headers={**tenant.headers, "If-None-Match": '"x"'})
    assert other.status_code == 200 and other.headers["etag"] == etag


def test_download_failures(client, tenant, add_model):
    m = add_model(tenant)
    r = client.get(
        f"/v1/models/{m['id']}/download", params={"format": "onnx"}, headers=tenant.headers
    )
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")
    r = client.get(
        f"/v1/models/{m['id']}/download", params={"format": "pickle"}, headers=tenant.headers
    )
    assert r.status_code == 422
    assert (
        client.get(f"/v1/models/{uuid.uuid4()}/download", headers=tenant.headers).status_code == 404
    )


@pytest.mark.parametrize(
    ("file", "damage"), [("model.safetensors", b"garbage"), ("model.onnx", b"x")]
)
def test_a_model_file_damaged_in_the_store_is_never_served(client, tenant, add_model, file, damage):
    # Served as 200 under an ETag naming other bytes (safetensors), or unchecked (ONNX); a
    # missing file was a 404 that blamed the client, where predict answers the same loss as
    # the server's fault.
    m = add_model(tenant, onnx=True)
    params = {"format": "onnx" if file == "model.onnx" else "safetensors"}
    url = f"/v1/models/{m['id']}/download"
    (m["dir"] / file).write_bytes(damage)
    r = client.get(url, params=params, headers=tenant.headers)
    assert r.status_code == 500 and r.json()["type"].endswith("/artifact-unavailable"), r.text
    (m["dir"] / file).unlink()
    r = client.get(url, params=params, headers=tenant.headers)
    assert r.status_code == 500 and r.json()["type"].endswith("/artifact-unavailable"), r.text


def test_a_model_whose_manifest_file_was_edited_is_never_served(app, client, tenant, add_model):
    """The weights' digest covers the weights only: a manifest.json edited (or restored from
    another model) in the store swapped the labels of every prediction, answered 200, while the
    model's page showed the recorded ones."""
    import json as jsonlib

    from core.db.models import Model

    m = add_model(tenant)
    manifest_file = m["dir"] / "manifest.json"
    manifest = jsonlib.loads(manifest_file.read_text())
    # As PostgreSQL's jsonb gives the recorded copy back: a float may come back an integer.
    manifest["threshold"] = 1e23
    manifest_file.write_text(jsonlib.dumps(manifest))
    with app.state.sessionmaker() as session:
        session.get(Model, uuid.UUID(m["id"])).manifest = {**manifest, "threshold": 10**23}
        session.commit()
    row = {"instances": [[0.0, 1.0, 2.0]]}
    url = f"/v1/models/{m['id']}/predict"
    assert client.post(url, json=row, headers=tenant.headers).status_code == 200

    m = add_model(tenant)  # not loaded yet: the edit comes before the first prediction
    manifest_file = m["dir"] / "manifest.json"
    manifest = jsonlib.loads(manifest_file.read_text())
    labels = manifest["labels"]
    manifest["labels"] = {"positive": labels["negative"], "negative": labels["positive"]}
    manifest_file.write_text(jsonlib.dumps(manifest))
    r = client.post(f"/v1/models/{m['id']}/predict", json=row, headers=tenant.headers)
    assert r.status_code == 500 and r.json()["type"].endswith("/artifact-unavailable"), r.text


def test_a_model_deleted_between_its_row_and_its_files_is_404_not_a_store_fault(
    app, client, tenant, add_model, monkeypatch
):
    """A download or prediction that read the model's row before a concurrent delete committed,
    and opened its files after the delete removed them, answered 500 artifact-unavailable (and
    logged an ERROR, an operator's alarm) where the model was simply gone."""
    import shutil

    from core import artifacts
    from service import inference
    from service.crud import models as model_crud

    def deleted_meanwhile(real):
        def opened(*args, **kwargs):
            with app.state.sessionmaker() as session:  # the delete, in another request
                where = model_crud.delete_model(session, tenant.id, uuid.UUID(m["id"]))
            shutil.rmtree(m["dir"].parent / where.rsplit("/", 1)[-1])
            return real(*args, **kwargs)

        return opened

    m = add_model(tenant)
    monkeypatch.setattr(artifacts, "open_checked", deleted_meanwhile(artifacts.open_checked))
    r = client.get(f"/v1/models/{m['id']}/download", headers=tenant.headers)
    assert r.status_code == 404 and r.json()["type"].endswith("/not-found"), r.text
    monkeypatch.undo()
    m = add_model(tenant)
    monkeypatch.setattr(inference, "load_model", deleted_meanwhile(inference.load_model))
    r = client.post(
        f"/v1/models/{m['id']}/predict", json={"instances": [[0.0, 1.0, 2.0]]},
        headers=tenant.headers,
    )  # fmt: skip
    assert r.status_code == 404 and r.json()["type"].endswith("/not-found"), r.text
    # files lost while the row stays: still the store's fault
    monkeypatch.undo()
    m = add_model(tenant)
    (m["dir"] / "manifest.json").unlink()
    r = client.post(
        f"/v1/models/{m['id']}/predict", json={"instances": [[0.0, 1.0, 2.0]]},
        headers=tenant.headers,
    )  # fmt: skip
    assert r.status_code == 500 and r.json()["type"].endswith("/artifact-unavailable"), r.text


def test_a_row_whose_score_overflows_is_refused_not_decided(client, tenant, add_model):
    # Finite values that overflow the model's standardization (1e36 / 1e-3): inf - inf is NaN,
    # which was answered as margin 0 and the positive label.
    m = add_model(tenant, weight=[1.0, 1.0], bias=-5.0, std=[1e-3, 1e-3])
    r = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[0.0, 0.0], [1e36, -1e36]]},
        headers=tenant.headers,
    )
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "instances", 1] and "overflow" in error["msg"]
    ok = client.post(
        f"/v1/models/{m['id']}/predict", json={"instances": [[0.0, 0.0]]}, headers=tenant.headers
    )
    assert ok.status_code == 200 and ok.json()["margins"] == [-5.0]
    # One sign only: the score leaves float32's range (the ONNX file's is -inf). It was clipped
    # to -3.4e38 and answered 200; a multi-class model's clipped scores tied, and the first
    # class won whatever the model ranked first.
    r = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[0.0, 0.0], [3.4e38, 3.4e38]]},
        headers=tenant.headers,
    )
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "instances", 1]


def test_a_row_whose_float32_terms_overflow_is_refused_though_they_cancel(
    client, tenant, add_model
):
    # 2 x 3e38 and 2 x -3e38 overflow the module's float32 sum (NaN; the ONNX file: inf)
    # though they cancel: the float64 sum scored the row 0.5, which no other path gives.
    m = add_model(tenant, weight=[2.0, 2.0], bias=0.5, std=[1.0, 1.0])
    r = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[1.0, 1.0], [3e38, -3e38]]},
        headers=tenant.headers,
    )
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "instances", 1]


def test_float32s_largest_as_printed_is_a_float32(client, tenant, add_model):
    # 3.4028235e38 (numpy's print of float32's largest) is just past it in float64 but rounds
    # to it: the library and the ONNX file score it, and the API answered 422.
    m = add_model(tenant, weight=[1e-39, 0.0], bias=1.0, std=[1.0, 1.0])
    ok = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[3.4028235e38, -3.4028235e38]]},
        headers=tenant.headers,
    )
    assert ok.status_code == 200, ok.text
    past = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[0.0, 3.4028236e38]]},  # rounds to float32's infinity
        headers=tenant.headers,
    )
    assert past.status_code == 422 and past.json()["errors"][0]["loc"] == [
        "body",
        "instances",
        0,
        1,
    ]


def test_predict_instances(client, tenant, add_model):
    m = add_model(tenant, weight=[1.0, -1.0, 0.5], bias=0.25)
    rows = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    r = client.post(
        f"/v1/models/{m['id']}/predict", json={"instances": rows}, headers=tenant.headers
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["margins"] == pytest.approx([1.25, -1.75, 0.25])  # h(x), raw
    # One name, one meaning: "scores" is the manifest's metric per split, not a second margins.
    # A binary model has no classes (an averaged job's model answers them and their margins).
    assert set(out) == {
        "model_id", "margins", "labels", "classes", "class_margins", "positive_label",
        "out_of_range",
    }  # fmt: skip
    assert out["classes"] is None and out["class_margins"] is None
    assert out["labels"] == ["yes", "no", "yes"]
    assert out["positive_label"] == "yes"  # which label a margin >= 0 is (F1 counted it)
    assert out["model_id"] == m["id"]
    assert out["out_of_range"] is None  # a manifest without ranges: nothing checked


def test_the_prediction_schema_says_the_margin_is_a_raw_decision_function(client):
    props = client.get("/openapi.json").json()["components"]["schemas"]["PredictResponse"][
        "properties"
    ]
    assert "raw margin h(x)" in props["margins"]["description"]
    assert "not a probability" in props["margins"]["description"]
    assert set(props) == {
        "model_id", "margins", "labels", "classes", "class_margins", "positive_label",
        "out_of_range",
    }  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        {"instances": [[1.0, 2.0, 3.0]]},
        {"columns": ["a", "b", "c"], "data": [[1.0, 2.0, 3.0]]},
        {},
        {"columns": ["a", "b", "c"]},
        {"data": [[1.0, 2.0, 3.0]]},
        {"instances": [[1.0, 2.0, 3.0]], "data": [[1.0, 2.0, 3.0]]},
        {"instances": [[1.0, 2.0, 3.0]], "columns": ["a", "b", "c"]},
        {"instances": [[1.0, 2.0, 3.0]], "columns": ["a", "b", "c"], "data": [[1.0, 2.0, 3.0]]},
        {"instances": [[1.0, 2.0, 3.0]], "columns": None, "data": None},  # null: not given
        {"columns": ["a", "b", "c"], "data": [[1.0, 2.0, 3.0]], "instances": None},
        {"instances": None},
        {"instances": []},  # no row: refused with "give at least one row"
        {"columns": ["a", "a", "b"], "data": [[1.0, 2.0, 3.0]]},  # a name twice
        {"columns": ["a", "b", "c"], "data": []},
    ],
)
def test_the_documented_prediction_body_is_what_the_server_takes(client, tenant, add_model, body):
    """The document says a prediction's body is ``instances`` or ``columns`` + ``data``
    (its oneOf), as the server reads it; it said every field was optional."""
    import jsonschema

    schema = client.get("/openapi.json").json()["components"]["schemas"]["PredictRequest"]
    m = add_model(tenant, feature_names=["a", "b", "c"])
    r = client.post(f"/v1/models/{m['id']}/predict", json=body, headers=tenant.headers)
    documented = jsonschema.Draft202012Validator(schema).is_valid(body)
    assert documented == (r.status_code == 200), (body, r.status_code, r.text)


def test_predict_standardizes_and_reorders_named_columns(client, tenant, add_model):
    m = add_model(
        tenant,
        weight=[2.0, 1.0],
        bias=0.0,
        feature_names=["a", "b"],
        mean=[1.0, 0.0],
        std=[2.0, 1.0],
    )
    r = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"columns": ["b", "a"], "data": [[3.0, 5.0]]},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    assert r.json()["margins"] == pytest.approx([2.0 * (5.0 - 1.0) / 2.0 + 3.0])
    # A cell that is not a number, named by its column (its place alone sent the user counting)
    bad = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"columns": ["b", "a"], "data": [[3.0, 5.0], [1.0, "N/A"]]},
        headers=tenant.headers,
    )
    assert bad.status_code == 422
    [error] = bad.json()["errors"]
    assert error["loc"] == ["body", "data", 1, 1] and error["msg"].endswith(", column 'a'")
    assert "data.1.1: " in bad.json()["detail"] and "column 'a'" in bad.json()["detail"]


def test_predict_mlp_matches_torch(client, app, tenant, service_dirs):
    import torch

    rel = f"models/{uuid.uuid4().hex}"
    _, digest, manifest, net = write_mlp_artifact(service_dirs["artifacts"] / rel, d=4, hidden=8)
    with app.state.sessionmaker() as session:
        model = register_model(
            session,
            tenant_id=tenant.id,
            job_id=None,
            artifact_uri=rel,
            sha256=digest,
            manifest=manifest,
        )
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    r = client.post(
        f"/v1/models/{model.id}/predict", json={"instances": x.tolist()}, headers=tenant.headers
    )
    assert r.status_code == 200, r.text
    with torch.no_grad():
        expected = net(torch.from_numpy(x)).reshape(-1).tolist()
    assert r.json()["margins"] == pytest.approx(expected, rel=1e-5, abs=1e-5)
    assert set(r.json()["labels"]) <= {0, 1}


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"instances": []}, ["body", "instances"]),
        ({"instances": [[1.0, 2.0, 3.0], [1.0, 2.0]]}, ["body", "instances", 1]),
        ({"columns": ["a", "b"], "data": [[1.0, 2.0]]}, ["body", "columns"]),
        ({"instances": [[1.0, 2.0, 3.0]] * 101}, ["body", "instances"]),
        ({"instances": [[1.0, 2.0, 1e39]]}, ["body", "instances", 0, 2]),
    ],
)
def test_predict_row_validation(client, tenant, add_model, body, loc):
    m = add_model(tenant)
    r = client.post(f"/v1/models/{m['id']}/predict", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == loc
    assert r.json()["title"] == "Invalid prediction request"


def test_predict_refuses_nan_and_infinity(client, tenant, add_model):
    m = add_model(tenant)
    for token in ("NaN", "Infinity", "-Infinity"):
        raw = f'{{"instances": [[1.0, 2.0, 3.0], [1.0, {token}, 3.0]]}}'
        r = client.post(
            f"/v1/models/{m['id']}/predict",
            content=raw,
            headers={**tenant.headers, "Content-Type": "application/json"},
        )
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["loc"] == ["body", "instances", 1, 1]


def test_predict_named_columns_must_match(client, tenant, add_model):
    m = add_model(tenant, feature_names=["x", "y", "z"])
    for columns in (["x", "y"], ["x", "y", "q"], ["x", "x", "y"]):
        r = client.post(
            f"/v1/models/{m['id']}/predict",
            json={"columns": columns, "data": [[1.0] * len(columns)]},
            headers=tenant.headers,
        )
        assert r.status_code == 422, columns
    both = {"instances": [[1.0, 2.0, 3.0]], "columns": ["x"], "data": [[1.0]]}
    assert (
        client.post(f"/v1/models/{m['id']}/predict", json=both, headers=tenant.headers).status_code
        == 422
    )
    assert (
        client.post(f"/v1/models/{m['id']}/predict", json={}, headers=tenant.headers).status_code
        == 422
    )


def test_linear_models_are_scored_without_the_torch_module(client, app, tenant, add_model):
    """A linear model's forward is taken out of the module at load (numpy float32); predicting
    must not go through the module, whose per-call overhead dwarfs a few rows' arithmetic."""
    m = add_model(tenant, weight=[1.0, -1.0, 0.5], bias=0.25)
    url = f"/v1/models/{m['id']}/predict"
    r = client.post(url, json={"instances": [[1.0, 0.0, 0.0]]}, headers=tenant.headers)
    assert r.status_code == 200, r.text
    loaded = app.state.model_cache.peek((uuid.UUID(m["id"]), m["sha256"]))
    assert loaded.linear is not None

    def forbidden(*args, **kwargs):
        raise AssertionError("the torch module was called")

    loaded.module.forward = forbidden
    r = client.post(url, json={"instances": [[0.0, 2.0, 0.0]]}, headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.json()["margins"] == pytest.approx([-1.75])


@pytest.mark.parametrize("d", [1, 3, 40])
def test_linear_scorer_agrees_with_the_module(d):
    """The numpy form of a linear model gives the module's float32 scores (to rounding)."""
    import torch

    from metro.models import ModelSpec, StackedModel
    from service.inference import LinearScorer

    rng = np.random.default_rng(d)
    module = StackedModel(ModelSpec("linear"), input_shape=(d,), n_models=1)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(rng.normal(size=(d, 1)), dtype=torch.float32))
        module.bias.fill_(-0.3)
        module.mean.copy_(torch.tensor(rng.normal(size=d)))
        module.std.copy_(torch.tensor(rng.uniform(0.1, 3.0, size=d)))
    x = rng.normal(size=(64, d)).astype(np.float32)
    with torch.inference_mode():
        expected = module.eval()(torch.from_numpy(x))[:, 0].numpy()
    got = LinearScorer.of(module)(x)
    assert got.dtype == np.float32 and got.shape == (64, 1)  # one column per model
    np.testing.assert_allclose(got[:, 0], expected, rtol=1e-5, atol=1e-6)


def test_a_rows_score_does_not_depend_on_its_batch():
    """A row's margin was moved by an ulp by the batch it came in (float32 products summed in
    a BLAS kernel's order), which flipped the label of a row at the threshold between a row
    sent alone, in a batch, and as ``columns`` (another memory layout)."""
    import torch

    from metro.models import ModelSpec, StackedModel
    from service.inference import LinearScorer

    rng = np.random.default_rng(0)
    d = 60
    module = StackedModel(ModelSpec("linear"), input_shape=(d,), n_models=3)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(rng.normal(size=(d, 3)), dtype=torch.float32))
        module.std.copy_(torch.tensor(rng.uniform(0.1, 3.0, size=d)))
    scorer = LinearScorer.of(module)
    x = rng.normal(size=(500, d)).astype(np.float32)
    batch = scorer(x)
    alone = np.concatenate([scorer(x[i : i + 1]) for i in range(len(x))])
    reordered = scorer(np.asfortranarray(x[:, ::-1])[:, ::-1])
    assert np.array_equal(batch, alone) and np.array_equal(batch, reordered)


def test_loaded_models_are_cached(client, app, tenant, add_model):
    m = add_model(tenant)
    loads = app.state.metrics.model_loads
    before = loads._value.get()
    for _ in range(5):
        r = client.post(
            f"/v1/models/{m['id']}/predict",
            json={"instances": [[1.0, 2.0, 3.0]]},
            headers=tenant.headers,
        )
        assert r.status_code == 200
    assert loads._value.get() == before + 1


def test_corrupt_artifact_is_500_without_internals(client, tenant, add_model, service_dirs):
    m = add_model(tenant)
    (m["dir"] / "model.safetensors").write_bytes(b"tampered")
    r = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[1.0, 2.0, 3.0]]},
        headers=tenant.headers,
    )
    assert r.status_code == 500
    assert r.headers["content-type"].startswith("application/problem+json")
    assert str(service_dirs["artifacts"]) not in r.text and "Traceback" not in r.text
    assert "sha256" not in r.text


def test_predict_unknown_model_is_404(client, tenant):
    r = client.post(
        f"/v1/models/{uuid.uuid4()}/predict", json={"instances": [[1.0]]}, headers=tenant.headers
    )
    assert r.status_code == 404


def test_manifest_round_trips_through_json(tenant, add_model):
    m = add_model(tenant)
    manifest = json.loads((m["dir"] / "manifest.json").read_text())
    assert manifest["weights_sha256"] == m["sha256"]
    assert not math.isnan(manifest["lambda_star"])


def test_score_equal_to_threshold_is_positive(client, tenant, add_model):
    """The decision rule is score >= threshold (the paper's sign(0) = +1), as in the library."""
    m = add_model(tenant, weight=[1.0, 0.0, 0.0], bias=0.0)
    r = client.post(
        f"/v1/models/{m['id']}/predict",
        json={"instances": [[0.0, 5.0, 5.0], [-1e-3, 0.0, 0.0]]},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    assert r.json()["margins"] == [0.0, pytest.approx(-1e-3)]
    assert r.json()["labels"] == ["yes", "no"]


def test_predict_cnn3_with_flattened_rows(client, app, tenant, service_dirs):
    """Image models take rows of C*H*W values, reshaped to the model's input."""
    import torch

    from metro.models import ModelSpec, build_model
    from metro.serialization import save_model

    shape = (2, 4, 4)
    model = build_model(
        ModelSpec("cnn3", channels=(3, 4, 5)), input_shape=shape, n_models=1, seed=1
    )
    rel = f"models/{uuid.uuid4().hex}"
    manifest = save_model(service_dirs["artifacts"] / rel, model.eval(), onnx=False)
    with app.state.sessionmaker() as session:
        row = register_model(
            session,
            tenant_id=tenant.id,
            job_id=None,
            artifact_uri=rel,
            sha256=manifest["weights_sha256"],
            manifest=manifest,
        )
    x = np.random.default_rng(0).normal(size=(3, *shape)).astype(np.float32)
    r = client.post(
        f"/v1/models/{row.id}/predict",
        json={"instances": x.reshape(3, -1).tolist()},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    with torch.no_grad():
        expected = model(torch.from_numpy(x))[:, 0].tolist()
    assert r.json()["margins"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    bad = client.post(
        f"/v1/models/{row.id}/predict", json={"instances": [[0.0] * 5]}, headers=tenant.headers
    )
    assert bad.status_code == 422


def test_the_manifest_is_served_exactly_as_the_model_file_has_it(client, tenant, add_model):
    """Typed in the OpenAPI document (core.records.ModelManifest), yet the answer is the file's
    manifest key for key: nothing the file lacks appears as null, and a key this version does
    not know is kept."""
    m = add_model(tenant)
    stored = json.loads((m["dir"] / "manifest.json").read_text())
    served = client.get(f"/v1/models/{m['id']}", headers=tenant.headers).json()["manifest"]
    assert served == stored
    assert "constraints" not in served  # a field of the type the file does not have

    from core.records import ModelManifest

    extended = {**stored, "from_a_newer_worker": {"x": 1}}
    assert ModelManifest.model_validate(extended).model_dump(mode="json", exclude_unset=True) == (
        extended
    )
    document = client.get("/openapi.json").json()["components"]["schemas"]
    assert {"trained_lambda", "selection", "weights_sha256"} <= set(
        document["ModelManifest"]["properties"]
    )


@pytest.mark.parametrize("value", ["17.99", " 1e1 ", True])
def test_a_prediction_value_is_a_json_number(client, tenant, add_model, value):
    """Text and booleans were read as numbers ("17.99", true as 1.0) and scored, 200, where a
    job's numbers are strict; a JSON integer is still a number."""
    m = add_model(tenant, weight=[1.0, 1.0])
    url = f"/v1/models/{m['id']}/predict"
    r = client.post(url, json={"instances": [[1, value]]}, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "instances", 0, 1]
    r = client.post(
        url, json={"columns": ["x0", "x1"], "data": [[value, 1]]}, headers=tenant.headers
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:3] == ["body", "data", 0], r.text
    ok = client.post(url, json={"instances": [[1, 2]]}, headers=tenant.headers)
    assert ok.status_code == 200 and ok.json()["margins"] == [3.0]


def test_the_downloaded_weights_load_with_the_models_manifest(client, tenant, add_model, tmp_path):
    """docs/api.md: the weights beside the manifest GET /v1/models/{id} answers are a model
    folder metro.serialization.load_model reads, scoring as the endpoint does."""
    import torch

    from metro.serialization import load_model

    m = add_model(tenant, weight=[1.0, -2.0], bias=0.5)
    got = client.get(f"/v1/models/{m['id']}/download", headers=tenant.headers)
    manifest = client.get(f"/v1/models/{m['id']}", headers=tenant.headers).json()["manifest"]
    (tmp_path / "model.safetensors").write_bytes(got.content)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    model, loaded = load_model(tmp_path)
    rows = [[1.0, 0.0], [0.0, 3.0]]
    with torch.no_grad():
        margins = model(torch.tensor(rows)).reshape(-1).tolist()
    answer = client.post(
        f"/v1/models/{m['id']}/predict", json={"instances": rows}, headers=tenant.headers
    ).json()
    served = answer["margins"]
    assert margins == pytest.approx(served) and loaded["weights_sha256"] == m["sha256"]
    # metro.load_classifier reads the same folder and gives the endpoint's labels too.
    from metro import load_classifier

    classifier = load_classifier(tmp_path, expected_sha256=m["sha256"])
    assert classifier.predict(np.array(rows)).tolist() == answer["labels"]
    assert classifier.margin(np.array(rows)).tolist() == pytest.approx(served)


def test_a_head_of_a_download_reads_no_byte_of_the_file(client, tenant, add_model, monkeypatch):
    """HEAD was served as a GET whose body was dropped: the whole file read and hashed (a
    model of hundreds of MB, for a monitor's probe)."""
    from core import artifacts

    m = add_model(tenant, onnx=True)
    url = f"/v1/models/{m['id']}/download"
    got = client.get(url, headers=tenant.headers)

    def read(*args, **kwargs):
        raise AssertionError("a HEAD read the file")

    monkeypatch.setattr(artifacts, "open_checked", read)
    head = client.head(url, headers=tenant.headers)
    assert head.status_code == 200 and head.content == b""
    for name in ("etag", "content-disposition", "content-type"):
        assert head.headers[name] == got.headers[name], name
    # no length where the GET states none (a bodiless answer said 0 bytes)
    assert head.headers.get("content-length") == got.headers.get("content-length")
    onnx = client.head(url, params={"format": "onnx"}, headers=tenant.headers)
    assert onnx.status_code == 200 and onnx.headers["content-type"] == "application/onnx"
    (m["dir"] / "model.onnx").unlink()  # a lost file is the store's fault on HEAD too
    assert client.head(url, params={"format": "onnx"}, headers=tenant.headers).status_code == 500
    assert (
        client.head(f"/v1/models/{uuid.uuid4()}/download", headers=tenant.headers).status_code
        == 404
    )


def test_the_document_says_how_many_rows_a_prediction_takes(client, settings):
    """METRO_MAX_PREDICT_ROWS, a 422 past it (test_predict_row_validation): the served schema
    of each form's rows says this deployment's limit."""
    schema = client.get("/openapi.json").json()["components"]["schemas"]["PredictRequest"]
    for name in ("instances", "data"):
        [rows] = [m for m in schema["properties"][name]["anyOf"] if m.get("type") == "array"]
        assert rows["maxItems"] == settings.max_predict_rows and rows["minItems"] == 1


def test_a_prediction_bodys_form_error_is_said_in_its_own_words(client, tenant, add_model):
    """pydantic put "Value error, " before the check's own message, in the error and the
    detail."""
    m = add_model(tenant)
    body = {"data": [[1.0, 2.0, 3.0]]}
    r = client.post(f"/v1/models/{m['id']}/predict", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["msg"] == "give 'instances', or both 'columns' and 'data'"
    assert "Value error" not in r.text


def test_recorded_manifests_are_compared_by_value_and_integers_exactly():
    from service.inference import same_json

    assert same_json({"t": 1e23, "l": [0.1, -0.0]}, {"t": 10**23, "l": [0.1, 0]})  # via jsonb
    assert same_json(10**400, 10**400) and not same_json(10**400, 10**400 + 1)
    assert not same_json({"labels": {"positive": 1}}, {"labels": {"positive": 0}})
    assert not same_json(True, 1) and not same_json([1, 2], [1, 2, 3])


RANGES = {"min": [0.0, -1.0, None], "max": [1.0, 1.0, None]}


def test_a_row_outside_the_training_ranges_is_named_and_still_scored(client, tenant, add_model):
    m = add_model(tenant, feature_names=["age", "income", "free"], feature_ranges=RANGES)
    url = f"/v1/models/{m['id']}/predict"
    inside = [[0.0, 1.0, 5e6], [0.5, -1.0, -5e6]]  # edges are inside; "free" has no range
    r = client.post(url, json={"instances": inside}, headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.json()["out_of_range"] is None
    rows = [[0.5, 0.0, 0.0], [1000.0, 0.0, 0.0], [2.0, -3.0, 0.0], [0.5, 0.5, 0.0]]
    r = client.post(
        url, json={"columns": ["income", "age", "free"], "data": [[b, a, c] for a, b, c in rows]},
        headers=tenant.headers,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["margins"] == pytest.approx([1.0 * a - 1.0 * b for a, b, _ in rows])
    notice = body["out_of_range"]
    assert notice["n_rows"] == 2 and notice["n_columns"] == 2
    assert notice["columns"] == [
        {"column": "age", "index": 0, "rows_outside": 2, "training_min": 0.0,
         "training_max": 1.0},
        {"column": "income", "index": 1, "rows_outside": 1, "training_min": -1.0,
         "training_max": 1.0},
    ]  # fmt: skip
    assert "2 of 4 row(s)" in notice["message"]


def _damage_manifest(app, m, **changes):
    """Write changed manifest keys into the model's file and the database's copy alike (the
    load compares the two: damage in one only is a mismatch, not this)."""
    import json

    from core.db.models import Model

    path = m["dir"] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))
    with app.state.sessionmaker() as session:
        session.get(Model, uuid.UUID(m["id"])).manifest = manifest
        session.commit()


def test_a_model_of_unreadable_ranges_is_scored_without_the_range_check(
    app, client, tenant, add_model, caplog
):
    """Ranges of another width (the file and the database's copy alike) made every prediction
    of the model a 500, though its weights and decision are intact and the ranges only inform:
    its rows are scored, the range check skipped, and the log says so once per load."""
    import logging

    m = add_model(tenant, feature_ranges={"min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 1.0]})
    _damage_manifest(app, m, feature_ranges={"min": [0.0], "max": [1.0]})
    app.state.model_cache.clear()
    url = f"/v1/models/{m['id']}/predict"
    far = [[50.0, 2.0, 4.0]]  # outside the ranges it was written with: not checked now
    with caplog.at_level(logging.WARNING, logger="service.inference"):
        for _ in range(2):
            r = client.post(url, json={"instances": far}, headers=tenant.headers)
            assert r.status_code == 200, r.text
            assert r.json()["margins"] == pytest.approx([50.0 - 2.0 + 0.5 * 4.0])
            assert r.json()["out_of_range"] is None
    said = [rec.getMessage() for rec in caplog.records if rec.name == "service.inference"]
    assert len(said) == 1, said  # the second request was answered by the loaded model
    assert "feature_ranges are unreadable" in said[0] and "has 1 features" in said[0]


def test_a_manifest_of_null_n_features_is_an_artifact_error(app, client, tenant, add_model, caplog):
    """A null n_features beside its ranges ended the prediction in int(None)'s TypeError (an
    unhandled 500): the manifest is refused as one whose n_features does not match its
    input_shape is, an artifact error whose log line names the field."""
    import logging

    m = add_model(tenant, feature_ranges={"min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 1.0]})
    _damage_manifest(app, m, n_features=None)
    app.state.model_cache.clear()
    with caplog.at_level(logging.ERROR):
        r = client.post(
            f"/v1/models/{m['id']}/predict", json={"instances": [[0.5, 0.5, 0.5]]},
            headers=tenant.headers,
        )  # fmt: skip
    assert r.status_code == 500 and r.json()["type"].endswith("/artifact-unavailable"), r.text
    logged = " ".join(rec.getMessage() for rec in caplog.records)
    assert "n_features is not a number: None" in logged and "TypeError" not in logged
