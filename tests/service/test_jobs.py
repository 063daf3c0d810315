"""POST/GET /v1/jobs, cancel, trace and result."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from core.db.models import Job
from service.crud.jobs import record_lambda_step, record_metric_result
from tests.service.conftest import job_body, upload


def test_submit_returns_201_location_and_normalized_spec(client, tenant):
    r = client.post("/v1/jobs", json=job_body(), headers=tenant.headers)
    assert r.status_code == 201
    job = r.json()
    assert r.headers["location"].endswith(f"/v1/jobs/{job['id']}")
    assert job["state"] == "queued"
    assert job["progress"] == 0.0 and job["attempts"] == 0
    spec = job["spec"]
    # Defaults filled in from the library's own objects.
    assert spec["surrogate"] == {"name": "logistic"}
    assert spec["search"]["strategy"] == "grid" and spec["search"]["n_lambdas"] == 21
    assert spec["model"]["kind"] == "linear"
    assert spec["training"]["optimizer"] == "auto"
    assert spec["training"]["warm_start"] is True
    assert "compile" not in spec["training"]  # off: the spec (and its hash) as before the option
    assert spec["metric"] == {"preset": "f1"}
    assert spec["metric_info"] == {"name": "f1", "display_name": "F1", "greater_is_better": True}
    assert spec["repeats"] == 1 and spec["baselines"] == []
    assert client.get(r.headers["location"], headers=tenant.headers).json()["id"] == job["id"]


@pytest.mark.parametrize(
    "metric",
    [
        {"preset": "f_beta", "beta": 2.0},
        {"preset": "jaccard"},
        {"preset": "balanced_accuracy"},
        {"alpha": [-0.5, -0.5, -0.5, -0.5], "beta": [0.25, 0.75, 0.75, 1.25]},
        {"numerator": {"tp": 2}, "denominator": {"tp": 2, "fp": 1, "fn": 1}},
    ],
)
def test_submit_accepts_every_metric_form(client, tenant, metric):
    r = client.post("/v1/jobs", json=job_body(metric=metric), headers=tenant.headers)
    assert r.status_code == 201, r.text


def test_submit_with_all_sections(client, tenant):
    body = job_body(
        surrogate={"name": "sigmoid", "k": 2.0},
        model={"kind": "mlp", "hidden": [32, 16]},
        search={"strategy": "bisection", "epsilon": 0.01},
        training={"optimizer": "sgd", "epochs": 3, "seed": 7, "compile": True},
        repeats=3,
        baselines=["erm", "koyejo1", "koyejo2", "parambath"],
    )
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["surrogate"] == {"name": "sigmoid", "k": 2.0}
    assert spec["model"]["hidden"] == [32, 16]
    assert spec["search"]["strategy"] == "bisection" and spec["search"]["epsilon"] == 0.01
    assert spec["training"]["epochs"] == 3 and spec["training"]["lr"] == 0.02
    assert spec["training"]["compile"] is True
    assert spec["repeats"] == 3 and len(spec["baselines"]) == 4


def _errors(r) -> list[dict[str, Any]]:
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == 422 and body["type"].endswith("/validation")
    return body["errors"]


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"metric": {"preset": "nonsense"}}, ["body", "metric", "preset"]),
        ({"metric": {"preset": "f_beta", "beta": -1}}, ["body", "metric", "beta"]),
        # Was accepted and trained for F1 (the library's beta = 1 default), while f1 with a
        # beta is refused: an F-beta must say which.
        ({"metric": {"preset": "f_beta"}}, ["body", "metric", "beta"]),
        ({"metric": {"preset": "FBETA"}}, ["body", "metric", "beta"]),
        (
            {"constraints": [{"metric": "f_beta", "at_least": 0.5}]},
            ["body", "constraints", 0, "params", "beta"],
        ),
        ({"metric": {"alpha": [1, 1, 1, 1], "beta": [0, 0, 0, 0]}}, ["body", "metric", "beta"]),
        (
            {"metric": {"numerator": {"tq": 1}, "denominator": {"tp": 1}}},
            ["body", "metric", "numerator"],
        ),
        ({"surrogate": {"name": "magic"}}, ["body", "surrogate", "name"]),
        ({"metric": {"preset": "f3"}}, ["body", "metric", "preset"]),
        ({"metric": {"preset": "x" * 101}}, ["body", "metric", "preset"]),
        (
            {"metric": {"numerator": {}, "denominator": {"tp": 1}}},
            ["body", "metric", "numerator"],
        ),
        (
            {"dataset": {"uri": "builtin://digits", "positive_label": "x" * 256}},
            ["body", "dataset", "positive_label"],
        ),
        ({"surrogate": {"name": "hinge", "k": 3}}, ["body", "surrogate", "k"]),
        ({"search": {"n_lambdas": 0}}, ["body", "search", "n_lambdas"]),
        ({"search": {"shift": "sideways"}}, ["body", "search", "shift"]),
        # Two fields sent, both named: the one the message is about leads it.
        ({"search": {"strategy": "bisection", "cv": 3}}, ["body", "search", "cv"]),
        ({"search": {"lambda_min": 1.0, "lambda_max": 0.0}}, ["body", "search", "lambda_min"]),
        (
            {"search": {"refine_temperatures": [0.1, 0.0]}},
            ["body", "search", "refine_temperatures", 1],
        ),
        ({"search": {"refine_consistency": 0.5}}, ["body", "search", "refine_consistency"]),
        # With folds the refit ran whatever refit said.
        ({"search": {"refit": False}}, ["body", "search", "refit"]),
        ({"search": {"refine_anneal": "sometimes"}}, ["body", "search", "refine_anneal"]),
        ({"search": {"refine_scale": "sharp"}}, ["body", "search", "refine_scale"]),
        ({"search": {"refine_signal": 1.0}}, ["body", "search", "refine_signal"]),
        ({"training": {"lr": -1}}, ["body", "training", "lr"]),
        ({"training": {"device": "cuda:" + "9" * 20}}, ["body", "training", "device"]),
        ({"training": {"device": "cuda:01"}}, ["body", "training", "device"]),
        ({"training": {"warm_start": "sometimes"}}, ["body", "training", "warm_start"]),
        ({"training": {"compile": "sometimes"}}, ["body", "training", "compile"]),
        # A linear model trains with full-batch L-BFGS: nothing to compile or augment.
        ({"training": {"compile": True}}, ["body", "training", "compile"]),
        ({"training": {"augment": True}}, ["body", "training", "augment"]),
        ({"model": {"kind": "mlp", "hidden": [0]}}, ["body", "model", "hidden", 0]),
        ({"baselines": ["erm", "erm"]}, ["body", "baselines"]),
    ],
)
def test_invalid_spec_is_422_naming_the_field(client, tenant, overrides, loc):
    r = client.post("/v1/jobs", json=job_body(**overrides), headers=tenant.headers)
    errors = _errors(r)
    assert r.json()["title"] == "Invalid job"
    assert [e["loc"] for e in errors] == [loc], errors
    assert all(e["msg"] for e in errors)
    # Nothing was created.
    assert client.get("/v1/jobs", headers=tenant.headers).json()["items"] == []


@pytest.mark.parametrize(
    ("body", "loc_prefix"),
    [
        ({"dataset": {"uri": "builtin://breast_cancer"}}, ["body", "metric"]),  # missing
        ({"metric": {"preset": "f1"}}, ["body", "dataset"]),
        ({"metric": {"what": 1}, "dataset": {"uri": "builtin://digits"}}, ["body", "metric"]),
        (job_body(model={"kind": "transformer"}), ["body", "model", "kind"]),
        (job_body(repeats=0), ["body", "repeats"]),
        (job_body(baselines=["nope"]), ["body", "baselines", 0]),
        (job_body(unknown_field=1), ["body", "unknown_field"]),
        (job_body(search={"refine": "always"}), ["body", "search", "refine"]),
    ],
)
def test_schema_errors_are_problem_json(client, tenant, body, loc_prefix):
    errors = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert any(e["loc"][: len(loc_prefix)] == loc_prefix for e in errors), errors


@pytest.mark.parametrize(
    ("metric", "unknown", "takes"),
    [
        ({"preset": "precision", "min_recall": 0.8}, ["min_recall"], "it takes 'zero_division'"),
        ({"preset": "f_beta", "beta": 2, "min_recall": 0.8}, ["min_recall"], "it takes 'beta'"),
        ({"preset": "f1", "beta": 2, "gamma": 1}, ["beta", "gamma"], "it takes 'zero_division'"),
        ({"preset": "accuracy", "zero_division": 1}, ["zero_division"], "it takes no parameters"),
    ],
)
def test_unknown_metric_parameter_is_422_naming_it_and_the_accepted_ones(
    client, tenant, metric, unknown, takes
):
    r = client.post("/v1/jobs", json=job_body(metric=metric), headers=tenant.headers)
    errors = _errors(r)
    assert [e["loc"] for e in errors] == [["body", "metric", name] for name in unknown]
    for e in errors:
        assert takes in e["msg"] and f"metric {metric['preset']!r}" in e["msg"], e
        assert "unexpected keyword" not in e["msg"] and "()" not in e["msg"], e
    assert "unexpected keyword" not in r.text


def test_f_beta_without_beta_says_what_to_give(client, tenant):
    """It trained for F1 (the library's default beta), while f1 with a beta is refused."""
    r = client.post("/v1/jobs", json=job_body(metric={"preset": "f_beta"}), headers=tenant.headers)
    (error,) = _errors(r)
    assert error["loc"] == ["body", "metric", "beta"]
    assert "f_beta needs a beta" in error["msg"] and "use the f1 preset" in error["msg"]
    # A misspelt beta is named as such, beside the missing one (it said only "needs a beta").
    misspelt = job_body(metric={"preset": "f_beta", "bta": 2})
    errors = _errors(client.post("/v1/jobs", json=misspelt, headers=tenant.headers))
    assert [e["loc"] for e in errors] == [["body", "metric", "bta"], ["body", "metric", "beta"]]
    assert "has no parameter 'bta'" in errors[0]["msg"]
    # With its beta, the normalized metric (and so the spec hash) is as before.
    metric = {"preset": "f_beta", "beta": 2}
    r = client.post("/v1/jobs", json=job_body(metric=metric), headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["metric"] == {"preset": "f_beta", "beta": 2.0}
    assert r.json()["spec"]["metric_info"]["display_name"] == "F2"
    # A weighted accuracy's costs are in its name: jobs with different costs read alike.
    metric = {"preset": "weighted_accuracy", "w_fn": 20}
    r = client.post("/v1/jobs", json=job_body(metric=metric), headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["metric_info"]["display_name"] == "Weighted accuracy (w_fn 20)"


def test_zero_division_of_a_preset_is_kept_and_bounded(client, tenant):
    """sklearn.metrics' zero_division: given, it is part of the spec (a precision floor that
    flagging nothing meets is another question); out of [0, 1], a 422 naming it, in the metric
    and in a constraint's params alike."""
    plain = client.post("/v1/jobs", json=job_body(), headers=tenant.headers)
    assert plain.status_code == 201, plain.text
    assert "zero_division" not in plain.json()["spec"]["metric"]
    body = job_body(
        metric={"preset": "f1", "zero_division": 1},
        constraints=[{"metric": "precision", "params": {"zero_division": 1}, "at_least": 0.7}],
    )
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["metric"]["zero_division"] == 1.0
    assert spec["constraints"][0]["params"] == {"zero_division": 1.0}
    # Shown with its convention wherever the job's names are shown.
    assert spec["metric_info"]["display_name"] == "F1 (zero_division 1)"
    assert spec["constraint_info"][0] == {
        "name": "precision(zero_division=1) >= 0.7",
        "display_name": "Precision (zero_division 1) ≥ 0.7",
        "metric_display_name": "Precision (zero_division 1)",
    }
    for bad, loc in (
        (job_body(metric={"preset": "precision", "zero_division": 2}), ["body", "metric"]),
        (
            job_body(
                constraints=[
                    {"metric": "precision", "params": {"zero_division": -1}, "at_least": 0.7}
                ]
            ),
            ["body", "constraints", 0],
        ),
    ):
        errors = _errors(client.post("/v1/jobs", json=bad, headers=tenant.headers))
        assert errors and all(e["loc"][: len(loc)] == loc for e in errors), errors
        assert any("zero_division" in (e["msg"] + str(e["loc"])) for e in errors), errors


def test_several_invalid_sections_are_all_reported(client, tenant):
    body = job_body(
        metric={"preset": "nope"}, surrogate={"name": "nope"}, dataset={"uri": "ftp://x/y.csv"}
    )
    locs = [e["loc"] for e in _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))]
    assert ["body", "metric", "preset"] in locs and ["body", "surrogate", "name"] in locs
    assert ["body", "dataset", "uri"] in locs


@pytest.mark.parametrize(
    "uri",
    [
        "builtin://no_such_set",
        "ftp://example.com/x.csv",
        "http://example.com/x.csv",
        "file:///etc/passwd",
        "/etc/passwd",
        "relative/path.csv",
        "s3://bucket-only",
        "s3://bucket/data.exe",
        "dataset://not-a-uuid",
        "dataset://9d6a1d2e-5b7f-4c3e-8a1b-2f4e6c8d0a13",  # a well-formed id no upload has
    ],
)
def test_bad_dataset_uri_is_422(client, tenant, uri):
    body = job_body(dataset={"uri": uri})
    errors = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert errors[0]["loc"] == ["body", "dataset", "uri"]


@pytest.mark.parametrize(
    ("uri", "said"),
    [
        # Read as relative local paths: "local files are not enabled" or "must be absolute".
        (f"dataset:{uuid.UUID(int=7)}", "a dataset URI is written dataset://...; this one lacks"),
        ("file:/data/a.csv", "a file URI is written file://...; this one lacks the '//'"),
        # A query and a host were "file URIs must be absolute".
        ("file:///data/a.csv?x=1", "file URIs take no query or fragment"),
        ("file://otherhost/data/a.csv", "file URIs must be absolute, as in file:///data/train.csv"),
        ("s3:bucket/a.csv", "an s3 URI is written s3://...; this one lacks the '//'"),
        # Read as dataset://<id>, the rest dropped without a word.
        (f"dataset://{uuid.UUID(int=7)}/x.csv", "a dataset URI is dataset://<id>, as the upload"),
        (f"dataset://{uuid.UUID(int=7)}?v=2", "a dataset URI is dataset://<id>, as the upload"),
    ],
)
def test_a_malformed_uri_is_refused_for_what_is_wrong_with_it(client, tenant, uri, said):
    body = job_body(dataset={"uri": uri})
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert error["loc"] == ["body", "dataset", "uri"]
    assert error["msg"].startswith(said), error["msg"]


def test_file_uri_under_a_data_root(client, tenant, service_dirs):
    path = service_dirs["data"] / "train.csv"
    path.write_text("a,b,y\n1,2,0\n3,4,1\n")
    r = client.post(
        "/v1/jobs", json=job_body(dataset={"uri": f"file://{path}"}), headers=tenant.headers
    )
    assert r.status_code == 201, r.text
    assert r.json()["dataset_uri"] == f"file://{path}"
    # A symlink inside the root pointing outside it is refused.
    link = service_dirs["data"] / "escape.csv"
    if not link.exists():
        link.symlink_to("/etc/hostname")
    errors = _errors(
        client.post(
            "/v1/jobs", json=job_body(dataset={"uri": f"file://{link}"}), headers=tenant.headers
        )
    )
    assert "no readable dataset" in errors[0]["msg"]
    # ".." cannot climb out either, and the message does not reveal whether the file exists.
    sneaky = f"file://{service_dirs['data']}/../../../../etc/passwd"
    errors = _errors(
        client.post("/v1/jobs", json=job_body(dataset={"uri": sneaky}), headers=tenant.headers)
    )
    assert "no readable dataset" in errors[0]["msg"]
    missing_uri = f"file://{service_dirs['data']}/missing.csv"
    missing = _errors(
        client.post("/v1/jobs", json=job_body(dataset={"uri": missing_uri}), headers=tenant.headers)
    )
    assert missing[0]["msg"].replace(missing_uri, "") == errors[0]["msg"].replace(sneaky, "")


def test_s3_uri_only_under_an_allowed_prefix(client, tenant, settings, monkeypatch):
    body = job_body(dataset={"uri": "s3://bucket/path/train.parquet"})
    errors = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert errors[0]["loc"] == ["body", "dataset", "uri"]
    assert "no readable dataset" in errors[0]["msg"]
    monkeypatch.setattr(settings, "data_uri_prefixes", ["s3://bucket/path/"])
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["dataset_uri"] == "s3://bucket/path/train.parquet"


# -- idempotency ------------------------------------------------------------------------------


def test_idempotent_submission_returns_the_same_job(client, tenant):
    headers = {**tenant.headers, "Idempotency-Key": "retry-me-1"}
    first = client.post("/v1/jobs", json=job_body(), headers=headers)
    assert first.status_code == 201
    # A retry, spelling out a default this time: the same request after normalization.
    again = client.post("/v1/jobs", json=job_body(surrogate={"name": "logistic"}), headers=headers)
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["location"] == first.headers["location"]
    assert len(client.get("/v1/jobs", headers=tenant.headers).json()["items"]) == 1


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ({"metric": {"preset": "f1"}}, {"metric": {"preset": "F1", "zero_division": 0}}),
        ({"metric": {"preset": "f_beta", "beta": 2}},
         {"metric": {"preset": "fbeta", "beta": 2.0, "zero_division": 0.0}}),
        ({"metric": {"preset": "weighted_accuracy"}},
         {"metric": {"preset": "weighted_accuracy", "w_tp": 1, "w_fn": 1.0}}),
        ({"surrogate": {"name": "sigmoid"}}, {"surrogate": {"name": "sigmoid", "k": 1}}),
        ({"constraints": [{"metric": "precision", "at_least": 0.5}]},
         {"constraints": [{"metric": "precision", "params": {"zero_division": 0},
                           "at_least": 0.5}]}),
    ],
    ids=["preset default", "alias and defaults", "weights", "surrogate", "constraint"],
)  # fmt: skip
def test_spelling_out_a_default_or_an_alias_is_the_same_job(client, tenant, first, again):
    """Only what the client sent of a preset's, surrogate's or constraint's parameters was
    stored, so spelling out a default (or writing fbeta for f_beta) made another job, and a
    retry with the same Idempotency-Key a 422 idempotency-key-reused."""
    headers = {**tenant.headers, "Idempotency-Key": f"spelled-{uuid.uuid4()}"}
    a = client.post("/v1/jobs", json=job_body(**first), headers=headers)
    assert a.status_code == 201, a.text
    b = client.post("/v1/jobs", json=job_body(**again), headers=headers)
    assert b.status_code == 200, b.text
    assert b.json()["id"] == a.json()["id"]
    assert "fbeta" not in str(a.json()["spec"]) and "zero_division" not in str(a.json()["spec"])


@pytest.mark.parametrize(
    "extra",
    [{}, {"constraints": [{"metric": "recall", "at_least": 0.5, "confidence": 0.9}]},
     {"metric": {"preset": "f_beta", "beta": 2}}],
    ids=["plain", "constrained", "f-beta"],
)  # fmt: skip
def test_the_spec_a_job_returns_can_be_submitted_again(client, tenant, extra):
    """The returned spec ("every default filled in") held metric_info and constraint_info,
    which the submission refused (422 extra_forbidden): a job could not be copied or retried
    from what the API said it was. They are accepted and derived anew."""
    headers = {**tenant.headers, "Idempotency-Key": f"copy-{uuid.uuid4()}"}
    first = client.post("/v1/jobs", json=job_body(**extra), headers=headers)
    assert first.status_code == 201, first.text
    spec = first.json()["spec"]
    assert "metric_info" in spec and ("constraint_info" in spec) == bool(extra.get("constraints"))
    again = client.post("/v1/jobs", json=spec, headers=headers)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"], again.text
    copy = client.post("/v1/jobs", json=spec, headers=tenant.headers)
    assert copy.status_code == 201 and copy.json()["spec"] == spec
    # What a client writes there changes nothing: the server's own resolution is stored.
    edited = {**spec, "metric_info": {**spec["metric_info"], "display_name": "Mine"}}
    assert client.post("/v1/jobs", json=edited, headers=tenant.headers).json()["spec"] == spec


def test_idempotency_key_reused_with_another_body_is_422(client, tenant):
    headers = {**tenant.headers, "Idempotency-Key": "retry-me-2"}
    assert client.post("/v1/jobs", json=job_body(), headers=headers).status_code == 201
    r = client.post("/v1/jobs", json=job_body(metric={"preset": "jaccard"}), headers=headers)
    assert r.status_code == 422
    assert r.json()["type"].endswith("/idempotency-key-reused")


def test_idempotency_keys_are_per_tenant(client, tenant, other_tenant):
    a = client.post("/v1/jobs", json=job_body(), headers={**tenant.headers, "Idempotency-Key": "k"})
    b = client.post(
        "/v1/jobs", json=job_body(), headers={**other_tenant.headers, "Idempotency-Key": "k"}
    )
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"]


def test_concurrent_submissions_with_one_key_make_one_job(client, tenant):
    from concurrent.futures import ThreadPoolExecutor

    headers = {**tenant.headers, "Idempotency-Key": "race"}
    with ThreadPoolExecutor(8) as pool:
        responses = list(
            pool.map(lambda _: client.post("/v1/jobs", json=job_body(), headers=headers), range(8))
        )
    assert sorted(r.status_code for r in responses) == [200] * 7 + [201]
    assert len({r.json()["id"] for r in responses}) == 1


def _deadlock() -> Exception:
    import psycopg
    from sqlalchemy.exc import OperationalError

    return OperationalError("INSERT INTO jobs ...", {}, psycopg.errors.DeadlockDetected("x"))


def test_a_submission_postgres_aborts_for_a_lock_cycle_is_run_again(client, tenant, monkeypatch):
    """Submissions with one key, the quota's tenant lock and a worker claiming the new job
    closed a cycle of lock waits (measured: 5 of 10 concurrent submissions); Postgres aborted
    one transaction each time and the API answered 503 "database unavailable"."""
    from service.crud import jobs as crud_jobs

    real = crud_jobs.store.add_job
    aborted: list[int] = []

    def add_job_once_aborted(*args: Any, **kwargs: Any) -> Any:
        if not aborted:
            aborted.append(1)
            raise _deadlock()
        return real(*args, **kwargs)

    monkeypatch.setattr(crud_jobs.store, "add_job", add_job_once_aborted)
    headers = {**tenant.headers, "Idempotency-Key": "cycle"}
    r = client.post("/v1/jobs", json=job_body(), headers=headers)
    assert r.status_code == 201 and aborted == [1], r.text
    again = client.post("/v1/jobs", json=job_body(), headers=headers)
    assert again.status_code == 200 and again.json()["id"] == r.json()["id"]
    # Aborted every time: a 503 that says what happened, with nothing stored.
    monkeypatch.setattr(
        crud_jobs.store, "add_job", lambda *a, **k: (_ for _ in ()).throw(_deadlock())
    )
    r = client.post("/v1/jobs", json=job_body(), headers={**tenant.headers, "Idempotency-Key": "x"})
    assert r.status_code == 503 and r.headers["retry-after"]
    assert r.json()["detail"] == (
        "the database aborted this request for a concurrent one (a conflict of locks); retry it"
    )
    assert len(client.get("/v1/jobs", headers=tenant.headers).json()["items"]) == 1


def test_a_database_whose_disk_is_full_says_so(client, tenant, monkeypatch):
    """SQLite's "database or disk is full" (and Postgres' 53100) answered "the database is
    unavailable for the moment" while readiness said the database was fine."""
    import sqlite3

    import psycopg
    from sqlalchemy.exc import OperationalError

    from service.crud import jobs as crud_jobs

    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13  # type: ignore[attr-defined]
    for orig in (full, psycopg.errors.DiskFull("could not extend file")):
        error = OperationalError("INSERT INTO jobs ...", {}, orig)
        monkeypatch.setattr(
            crud_jobs.store, "add_job", lambda *a, error=error, **k: (_ for _ in ()).throw(error)
        )
        r = client.post("/v1/jobs", json=job_body(), headers=tenant.headers)
        assert r.status_code == 503 and r.headers["retry-after"], r.text
        assert r.json()["detail"] == (
            "the database has no room left to write (its disk is full); retry once it has"
        )


def test_empty_idempotency_key_is_422(client, tenant):
    r = client.post("/v1/jobs", json=job_body(), headers={**tenant.headers, "Idempotency-Key": ""})
    assert r.status_code == 422


# -- reading and listing ----------------------------------------------------------------------


def test_get_unknown_job_is_404_problem(client, tenant):
    r = client.get(f"/v1/jobs/{uuid.uuid4()}", headers=tenant.headers)
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["type"].endswith("/not-found")


def test_malformed_job_id_is_422(client, tenant):
    assert client.get("/v1/jobs/not-a-uuid", headers=tenant.headers).status_code == 422


def test_list_filters_by_state(client, tenant, submit, set_job):
    a, b = submit(tenant), submit(tenant)
    set_job(b["id"], state="running")
    running = client.get("/v1/jobs", params={"state": "running"}, headers=tenant.headers).json()
    assert [j["id"] for j in running["items"]] == [b["id"]]
    queued = client.get("/v1/jobs", params={"state": "queued"}, headers=tenant.headers).json()
    assert [j["id"] for j in queued["items"]] == [a["id"]]
    assert (
        client.get("/v1/jobs", params={"state": "bogus"}, headers=tenant.headers).status_code == 422
    )


def test_pagination_is_stable_while_rows_are_inserted(client, tenant, submit):
    original = [submit(tenant)["id"] for _ in range(7)]
    expected = list(reversed(original))  # newest first
    seen: list[str] = []
    page = client.get("/v1/jobs", params={"limit": 3}, headers=tenant.headers).json()
    seen += [j["id"] for j in page["items"]]
    while page["next_cursor"]:
        submit(tenant)  # a new job arrives between page fetches
        page = client.get(
            "/v1/jobs", params={"limit": 3, "cursor": page["next_cursor"]}, headers=tenant.headers
        ).json()
        seen += [j["id"] for j in page["items"]]
    assert seen == expected


def test_pagination_limit_is_capped_and_cursor_validated(client, tenant, submit):
    for _ in range(3):
        submit(tenant)
    r = client.get("/v1/jobs", params={"limit": 10_000}, headers=tenant.headers)
    assert r.status_code == 200 and len(r.json()["items"]) == 3
    assert client.get("/v1/jobs", params={"limit": 0}, headers=tenant.headers).status_code == 422
    for bad in ("garbage", "W10", "WyJ4IiwieSJd"):  # not base64 JSON / wrong length / bad values
        r = client.get("/v1/jobs", params={"cursor": bad}, headers=tenant.headers)
        assert r.status_code == 422, bad
        assert r.json()["errors"][0]["loc"] == ["query", "cursor"]


# -- cancel -----------------------------------------------------------------------------------


def test_cancel_queued_job_is_immediate_and_repeatable(client, tenant, submit):
    job = submit(tenant)
    r = client.post(f"/v1/jobs/{job['id']}/cancel", headers=tenant.headers)
    assert r.status_code == 200
    assert r.json()["state"] == "cancelled" and r.json()["finished_at"] is not None
    again = client.post(f"/v1/jobs/{job['id']}/cancel", headers=tenant.headers)
    assert again.status_code == 200 and again.json()["state"] == "cancelled"


def test_cancel_running_job_asks_the_worker(client, tenant, submit, set_job):
    job = submit(tenant)
    set_job(job["id"], state="running")
    r = client.post(f"/v1/jobs/{job['id']}/cancel", headers=tenant.headers)
    assert r.json()["state"] == "cancelling" and r.json()["cancel_requested"] is True


@pytest.mark.parametrize("state", ["succeeded", "failed"])
def test_cancel_finished_job_is_409(client, tenant, submit, set_job, state):
    job = submit(tenant)
    set_job(job["id"], state=state)
    r = client.post(f"/v1/jobs/{job['id']}/cancel", headers=tenant.headers)
    assert r.status_code == 409
    assert r.headers["content-type"].startswith("application/problem+json")


def test_cancel_unknown_job_is_404(client, tenant):
    assert client.post(f"/v1/jobs/{uuid.uuid4()}/cancel", headers=tenant.headers).status_code == 404


# -- trace and result ---------------------------------------------------------------------------


def _add_trace(app, job_id: str, repeats: int, steps: int) -> None:
    with app.state.sessionmaker() as session:
        for repeat in range(repeats):
            for step in range(steps):
                assert record_lambda_step(
                    session,
                    uuid.UUID(job_id),
                    repeat=repeat,
                    step=step,
                    lambda_=-1 + step / 10,
                    shift="minimal",
                    surrogate_loss=0.5,
                    l_lambda=0.01 * step,
                    train_metric=0.8,
                    validation_metric=0.7,
                    seconds=0.1,
                    method="metro",
                )
        session.commit()


def test_trace_pages_in_search_order_and_ignores_duplicate_writes(client, app, tenant, submit):
    job = submit(tenant)
    _add_trace(app, job["id"], repeats=2, steps=4)
    with app.state.sessionmaker() as session:
        # A worker retrying a write it already made: no duplicate point.
        assert not record_lambda_step(session, uuid.UUID(job["id"]), repeat=0, step=0, lambda_=9.0)
        session.commit()
    seen = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        page = client.get(
            f"/v1/jobs/{job['id']}/trace", params=params, headers=tenant.headers
        ).json()
        seen += [(p["repeat"], p["step"], p["lambda"]) for p in page["items"]]
        if not page["next_cursor"]:
            break
        params["cursor"] = page["next_cursor"]
    assert [(r, s) for r, s, _ in seen] == [(r, s) for r in range(2) for s in range(4)]
    assert seen[0][2] == -1.0
    assert (
        client.get(
            f"/v1/jobs/{job['id']}/trace", params={"cursor": "WyJhIiwiYiJd"}, headers=tenant.headers
        ).status_code
        == 422
    )


def test_trace_of_unknown_job_is_404(client, tenant):
    assert client.get(f"/v1/jobs/{uuid.uuid4()}/trace", headers=tenant.headers).status_code == 404


def test_result_is_409_until_succeeded(client, tenant, submit):
    job = submit(tenant)
    r = client.get(f"/v1/jobs/{job['id']}/result", headers=tenant.headers)
    assert r.status_code == 409 and r.json()["type"].endswith("/not-ready")


def test_the_result_of_a_job_that_ended_without_one_says_why(client, tenant, submit, set_job):
    """A failed job's result was "not ready ... available once it has succeeded", which it
    never will, and its failure_reason was not said."""
    failed, cancelled = submit(tenant), submit(tenant)
    set_job(failed["id"], state="failed", failure_reason="the data has no positive row")
    set_job(cancelled["id"], state="cancelled")
    r = client.get(f"/v1/jobs/{failed['id']}/result", headers=tenant.headers)
    assert r.status_code == 409 and r.json()["type"].endswith("/conflict"), r.text
    assert r.json()["detail"] == (
        f"job {failed['id']} failed: the data has no positive row; it has no result"
    )
    r = client.get(f"/v1/jobs/{cancelled['id']}/result", headers=tenant.headers)
    assert r.json()["detail"] == f"job {cancelled['id']} cancelled; it has no result"


def test_result_with_repeats_and_baselines(client, app, tenant, submit, set_job):
    job = submit(tenant, repeats=3, baselines=["erm"])
    values = {"metro": [0.8, 0.9, 0.85], "erm": [0.7, 0.7, 0.7]}
    with app.state.sessionmaker() as session:
        for method, vals in values.items():
            for repeat, value in enumerate(vals):
                for split in ("validation", "test"):
                    assert record_metric_result(
                        session,
                        uuid.UUID(job["id"]),
                        method=method,
                        repeat=repeat,
                        split=split,
                        metric_value=value,
                        tp=10,
                        fp=2,
                        fn=3,
                        tn=85,
                        lambda_=-0.4 if method == "metro" else None,
                    )
        assert not record_metric_result(
            session,
            uuid.UUID(job["id"]),
            method="erm",
            repeat=0,
            split="test",
            metric_value=0.0,
            tp=0,
            fp=0,
            fn=0,
            tn=0,
        )
        session.commit()
    set_job(job["id"], state="succeeded", best_lambda=-0.4, progress=1.0)
    r = client.get(f"/v1/jobs/{job['id']}/result", headers=tenant.headers)
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["lambda_star"] == -0.4 and result["metric"] == "f1"
    assert [(s["method"], s["split"]) for s in result["summary"]] == [
        ("metro", "validation"),
        ("metro", "test"),
        ("erm", "validation"),
        ("erm", "test"),
    ]
    metro_test = result["summary"][1]
    assert metro_test["n"] == 3
    assert metro_test["mean"] == pytest.approx(0.85)
    assert metro_test["std"] == pytest.approx(0.05)
    assert result["summary"][3]["std"] == pytest.approx(0.0)
    # The names people read, one definition for the result, metro result and the dashboard.
    assert result["method_names"] == {"metro": "METRO", "erm": "ERM"}
    assert len(result["runs"]) == 12
    run = result["runs"][0]
    assert run["confusion"] == {"tp": 10, "fp": 2, "fn": 3, "tn": 85}
    assert "lambda" in run


def test_result_of_unknown_job_is_404(client, tenant):
    assert client.get(f"/v1/jobs/{uuid.uuid4()}/result", headers=tenant.headers).status_code == 404


def test_validation_uses_the_library_objects():
    """The service builds the very objects the workers run, so the two cannot disagree."""
    from core import job_spec
    from metro.metrics import MetricSpec
    from metro.models import ModelSpec
    from metro.search.config import SearchConfig
    from metro.surrogates import Surrogate
    from metro.trainer import TrainingConfig

    assert isinstance(job_spec.build_metric({"preset": "jaccard"}), MetricSpec)
    assert isinstance(job_spec.build_surrogate({"name": "hinge"}), Surrogate)
    assert isinstance(job_spec.build_search({}), SearchConfig)
    assert isinstance(job_spec.build_model_spec({"kind": "mlp", "hidden": [8]}), ModelSpec)
    assert isinstance(job_spec.build_training_config({"epochs": 2}), TrainingConfig)


def test_stored_spec_rebuilds_the_same_objects(client, tenant):
    """What a worker reads back (the normalized spec) rebuilds to the submitted configuration."""
    from core import job_spec

    body = job_body(
        metric={"preset": "f_beta", "beta": 0.5},
        model={"kind": "mlp", "hidden": [8, 4]},
        search={"strategy": "dinkelbach"},
        training={"epochs": 5},
    )
    spec = client.post("/v1/jobs", json=body, headers=tenant.headers).json()["spec"]
    assert job_spec.build_metric(spec["metric"]).name == "f_beta(0.5)"
    assert job_spec.build_model_spec(spec["model"]).hidden == (8, 4)
    assert job_spec.build_search(spec["search"]).strategy == "dinkelbach"
    assert job_spec.build_training_config(spec["training"]).epochs == 5
    assert job_spec.build_surrogate(spec["surrogate"]).name == "logistic"


# -- hand-off to the workers ----------------------------------------------------------------------


def test_submission_enqueues_once_after_commit(client, app, tenant):
    queue = app.state.job_queue
    headers = {**tenant.headers, "Idempotency-Key": f"enqueue-{uuid.uuid4().hex}"}
    r = client.post("/v1/jobs", json=job_body(), headers=headers)
    assert r.status_code == 201
    job_id = r.json()["id"]
    assert queue.sent.count(job_id) == 1  # and the fake checked the row was committed first
    assert client.post("/v1/jobs", json=job_body(), headers=headers).status_code == 200
    assert queue.sent.count(job_id) == 1  # a replay is the same job: no second message
    with app.state.sessionmaker() as session:
        assert session.get(Job, uuid.UUID(job_id)).enqueued_at is not None


def test_broker_down_still_accepts_the_job(client, app, tenant):
    """The job is in the database; the reconciler sends its message when the broker is back."""
    queue = app.state.job_queue
    queue.fail = True
    try:
        r = client.post("/v1/jobs", json=job_body(), headers=tenant.headers)
    finally:
        queue.fail = False
    assert r.status_code == 201 and r.json()["state"] == "queued"
    with app.state.sessionmaker() as session:
        assert session.get(Job, uuid.UUID(r.json()["id"])).enqueued_at is None


def test_builtin_dataset_parameters_are_checked_at_submission(client, tenant):
    bad = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://digits"}}
    response = client.post("/v1/jobs", json=bad, headers=tenant.headers)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"][:2] == ["body", "dataset"]
    assert "positive" in response.text
    wrong_label = {
        "metric": {"preset": "f1"},
        "dataset": {"uri": "builtin://breast_cancer", "positive_label": "cat"},
    }
    assert client.post("/v1/jobs", json=wrong_label, headers=tenant.headers).status_code == 422
    # a large synthetic set is judged by its parameters, not generated at submission
    big = {
        "metric": {"preset": "f1"},
        "dataset": {"uri": "builtin://synthetic?n_samples=200000&positive_fraction=0.1"},
    }
    assert client.post("/v1/jobs", json=big, headers=tenant.headers).status_code == 201


# -- the per-tenant quota -----------------------------------------------------------------------
def test_active_jobs_per_tenant_are_capped_with_a_429(client, settings, make_tenant, monkeypatch):
    monkeypatch.setattr(settings, "max_active_jobs_per_tenant", 3)
    t, other = make_tenant(), make_tenant()
    first = client.post("/v1/jobs", json=job_body(), headers={**t.headers, "Idempotency-Key": "a"})
    assert first.status_code == 201
    for _ in range(2):
        assert client.post("/v1/jobs", json=job_body(), headers=t.headers).status_code == 201
    refused = client.post("/v1/jobs", json=job_body(), headers=t.headers)
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("application/problem+json")
    body = refused.json()
    assert body["type"].endswith("/quota-exceeded") and "at once is 3" in body["detail"]
    # Nothing was created by the refused request, a retry of an accepted one is still answered,
    # and another tenant is not affected.
    assert len(client.get("/v1/jobs", headers=t.headers).json()["items"]) == 3
    replay = client.post("/v1/jobs", json=job_body(), headers={**t.headers, "Idempotency-Key": "a"})
    assert replay.status_code == 200 and replay.json()["id"] == first.json()["id"]
    assert client.post("/v1/jobs", json=job_body(), headers=other.headers).status_code == 201
    # A finished (here: cancelled) job frees its place.
    cancelled = client.post(f"/v1/jobs/{first.json()['id']}/cancel", headers=t.headers)
    assert cancelled.status_code == 200, cancelled.text
    assert client.post("/v1/jobs", json=job_body(), headers=t.headers).status_code == 201


def test_concurrent_submissions_do_not_overshoot_the_quota(
    client, settings, make_tenant, monkeypatch
):
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(settings, "max_active_jobs_per_tenant", 3)
    t = make_tenant()
    with ThreadPoolExecutor(8) as pool:
        codes = list(
            pool.map(
                lambda _: client.post("/v1/jobs", json=job_body(), headers=t.headers).status_code,
                range(8),
            )
        )
    assert sorted(codes) == [201] * 3 + [429] * 5
    assert len(client.get("/v1/jobs", headers=t.headers).json()["items"]) == 3


# -- constraints ----------------------------------------------------------------------------------

RECALL_FLOOR = {"metric": "recall", "at_least": 0.9}


def test_constraints_are_recorded_with_their_defaults_and_names(client, tenant):
    body = job_body(
        metric={"preset": "precision"},
        constraints=[
            {"metric": "Recall", "at_least": 0.9},
            {"metric": "false_positive_rate", "at_most": 0.1, "confidence": 0.9},
            {"metric": {"alpha": [0, 0, 1, 0], "beta": [0, 0, 0, 1], "name": "positive_rate"},
             "at_most": 0.5},
        ],
    )  # fmt: skip
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["constraints"] == [
        {"metric": "recall", "params": {}, "at_least": 0.9, "confidence": None},
        {"metric": "false_positive_rate", "params": {}, "at_most": 0.1, "confidence": 0.9},
        {"metric": {"alpha": [0.0, 0.0, 1.0, 0.0], "beta": [0.0, 0.0, 0.0, 1.0],
                    "greater_is_better": False, "zero_division": 0.0, "name": "positive_rate"},
         "at_most": 0.5, "confidence": None},
    ]  # fmt: skip
    assert spec["constraint_info"] == [
        {"name": "recall >= 0.9", "display_name": "Recall ≥ 0.9",
         "metric_display_name": "Recall"},
        {"name": "false_positive_rate <= 0.1", "display_name": "False positive rate ≤ 0.1",
         "metric_display_name": "False positive rate"},
        {"name": "positive_rate <= 0.5", "display_name": "positive_rate ≤ 0.5",
         "metric_display_name": "positive_rate"},
    ]  # fmt: skip
    # The stored spec rebuilds: the worker hands these to the library as they are.
    from core.job_spec import build_job_objects

    objects = build_job_objects(spec)
    assert objects.constraints == tuple(spec["constraints"])


def test_an_unconstrained_spec_is_unchanged(client, tenant):
    spec = client.post("/v1/jobs", json=job_body(), headers=tenant.headers).json()["spec"]
    assert "constraints" not in spec and "constraint_info" not in spec
    # An empty list is the unconstrained job itself: the same spec, so the same hash.
    headers = {**tenant.headers, "Idempotency-Key": "no-constraints"}
    first = client.post("/v1/jobs", json=job_body(), headers=headers)
    again = client.post("/v1/jobs", json=job_body(constraints=[]), headers=headers)
    assert (first.status_code, again.status_code) == (201, 200)


def test_constraints_take_part_in_the_spec_hash(client, tenant):
    headers = {**tenant.headers, "Idempotency-Key": "constrained"}
    first = client.post("/v1/jobs", json=job_body(constraints=[RECALL_FLOOR]), headers=headers)
    assert first.status_code == 201
    # The same constraint with its defaults spelled out: the same job.
    spelled = {"metric": "RECALL", "params": {}, "at_least": 0.9, "confidence": None}
    again = client.post("/v1/jobs", json=job_body(constraints=[spelled]), headers=headers)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    # Another bound, or none at all, is another job.
    for other in ([{**RECALL_FLOOR, "at_least": 0.8}], []):
        r = client.post("/v1/jobs", json=job_body(constraints=other), headers=headers)
        assert r.status_code == 422 and r.json()["type"].endswith("/idempotency-key-reused")


@pytest.mark.parametrize(
    ("constraints", "overrides", "loc", "words"),
    [
        ([{"metric": "recal", "at_least": 0.9}], {}, [0, "metric"], "unknown metric 'recal'"),
        ([{"metric": "recall", "at_least": 0.9, "at_most": 0.95}], {}, [0, "at_most"], "not both"),
        ([{"metric": "recall"}], {}, [0, "at_least"], "exactly one of at_least and at_most"),
        ([{"metric": "recall", "at_least": 1.5}], {}, [0, "at_least"], "no classifier can meet"),
        ([{"metric": "false_positive_rate", "at_most": -0.1}], {}, [0, "at_most"], "[0, 1]"),
        ([{"metric": "recall", "at_least": 0}], {}, None, None),  # the range's edge is allowed
        ([{"metric": "recall", "at_least": 0.9, "confidence": 1.2}], {}, [0, "confidence"],
         "less than 1"),
        ([{"metric": "f_beta", "params": {"gamma": 2}, "at_least": 0.5}], {},
         [0, "params", "gamma"], "it takes 'beta'"),
        ([{"metric": "recall", "at_leest": 0.9}], {}, [0, "at_leest"], "unknown constraint field"),
        ([{"metric": {"alpha": [1, 0, 0, 0], "beta": [0, 0, 0, 0]}, "at_least": 0.5}], {},
         [0, "metric"], "beta is all zeros"),
        ([RECALL_FLOOR, {"metric": "precision", "at_least": 2}], {}, [1, "at_least"], "range"),
        ([{"metric": "recall", "at_least": "high"}], {}, [0, "at_least"], "number"),
        ([RECALL_FLOOR], {"search": {"strategy": "bisection"}}, "strategy", "grid strategy"),
        ([RECALL_FLOOR] * 5, {}, [], "at most 4"),
    ],
    ids=[
        "unknown-preset", "both-bounds", "no-bound", "floor-above-range", "ceiling-below-range",
        "edge-ok", "confidence", "unknown-param", "unknown-field", "bad-coefficients",
        "second-constraint", "not-a-number", "bisection", "too-many",
    ],
)  # fmt: skip
def test_a_bad_constraint_is_422_naming_its_field(
    client, tenant, constraints, overrides, loc, words
):
    body = job_body(metric={"preset": "precision"}, constraints=constraints, **overrides)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    if loc is None:
        assert r.status_code == 201, r.text
        return
    errors = _errors(r)
    want = ["body", "search", "strategy"] if loc == "strategy" else ["body", "constraints", *loc]
    assert [e["loc"] for e in errors] == [want], errors
    assert words in errors[0]["msg"], errors
    assert client.get("/v1/jobs", headers=tenant.headers).json()["items"] == []


@pytest.mark.parametrize("value", ["NaN", "Infinity"])
def test_a_non_finite_bound_is_422_naming_it(client, tenant, value):
    text = (
        '{"metric": {"preset": "precision"}, "dataset": {"uri": "builtin://breast_cancer"}, '
        f'"constraints": [{{"metric": "recall", "at_least": {value}}}]}}'
    )
    r = client.post(
        "/v1/jobs", content=text, headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert [e["loc"] for e in _errors(r)] == [["body", "constraints", 0, "at_least"]]


def test_result_and_trace_carry_the_constraint_values(client, app, tenant, submit, set_job):
    job = submit(tenant, metric={"preset": "precision"}, constraints=[RECALL_FLOOR], repeats=2,
                 baselines=["koyejo1"])  # fmt: skip
    job_id = uuid.UUID(job["id"])
    # (method, repeat) -> (recall on validation, on test)
    recalls = {("metro", 0): (0.92, 0.88), ("metro", 1): (0.95, 0.91),
               ("koyejo1", 0): (0.9, 0.93), ("koyejo1", 1): (0.91, 0.94)}  # fmt: skip
    with app.state.sessionmaker() as session:
        for (method, repeat), values in recalls.items():
            for split, value in zip(("validation", "test"), values, strict=True):
                assert record_metric_result(
                    session, job_id, method=method, repeat=repeat, split=split,
                    metric_value=0.7, tp=10, fp=2, fn=3, tn=85, constraint_values=[value],
                    constraints_hold=value >= 0.9,
                )  # fmt: skip
        assert record_lambda_step(
            session, job_id, repeat=0, step=0, lambda_=-0.5, shift="minimal", mu=0.25,
            constraint_values=[0.87], validation_metric=0.6,
        )  # fmt: skip
        session.commit()
    choice = {
        "repeat": 0, "trained_lambda": -0.5, "shift": "minimal", "ratio_reached": None,
        "tuned_threshold": 0.0, "selection_score": 0.7, "selection_split": "cross-validation",
        "n_folds": 5, "selection_counts": None, "constraint_values": [0.91],
        "constraints_satisfied": True,
        "warnings": [{"code": "constraints_not_met", "message": "no fit met every constraint"}],
    }  # fmt: skip
    set_job(job["id"], state="succeeded", best_lambda=-0.5, progress=1.0, choices=[choice])
    result = client.get(f"/v1/jobs/{job['id']}/result", headers=tenant.headers).json()
    assert result["constraints"] == [
        {"name": "recall >= 0.9", "display_name": "Recall ≥ 0.9", "metric_display_name": "Recall",
         "sense": "at_least", "bound": 0.9, "confidence": None}
    ]  # fmt: skip
    run = next(
        r for r in result["runs"] if (r["method"], r["repeat"], r["split"]) == ("metro", 0, "test")
    )
    assert (run["constraint_values"], run["constraints_hold"]) == ([0.88], False)
    summary = {(s["method"], s["split"]): s for s in result["summary"]}
    assert summary[("metro", "test")]["constraint_means"] == [pytest.approx(0.895)]
    assert summary[("metro", "test")]["constraints_held"] == 1
    assert summary[("koyejo1", "test")]["constraints_held"] == 2
    assert result["choices"][0]["constraint_values"] == [0.91]
    assert result["choices"][0]["warnings"][0]["code"] == "constraints_not_met"
    [step] = client.get(f"/v1/jobs/{job['id']}/trace", headers=tenant.headers).json()["items"]
    assert (step["mu"], step["constraint_values"]) == (0.25, [0.87])


def test_the_normalized_model_spec_holds_only_what_its_kind_uses(client, tenant):
    images = {"uri": "builtin://digits?positive=3&as_images=true"}
    for model, dataset, expected in [
        ({"kind": "linear"}, None, {"kind": "linear"}),
        ({"kind": "mlp", "hidden": [16]}, None, {"kind": "mlp", "hidden": [16]}),
        ({"kind": "mlp"}, None, {"kind": "mlp", "hidden": [64]}),
        ({"kind": "cnn3"}, images, {"kind": "cnn3", "channels": [32, 64, 128]}),
    ]:
        body = job_body(model=model, **({"dataset": dataset} if dataset else {}))
        r = client.post("/v1/jobs", json=body, headers=tenant.headers)
        assert r.status_code == 201, r.text
        assert r.json()["spec"]["model"] == expected


def test_a_model_that_cannot_take_the_datas_examples_is_refused_where_they_are_known(
    client, tenant
):
    """cnn3 on a table was accepted, then its job failed in the worker: the shape of a
    built-in's and an uploaded table's examples is known at submission."""
    rows = b"a,b,y\n" + b"".join(f"{i},{i % 3},{i % 2}\n".encode() for i in range(20))
    uploaded = upload(client, tenant, rows, "rows.csv").json()["uri"]
    for uri, shape in (("builtin://breast_cancer", "(30,)"), (uploaded, "(2,)")):
        body = job_body(model={"kind": "cnn3"}, dataset={"uri": uri})
        r = client.post("/v1/jobs", json=body, headers=tenant.headers)
        assert r.status_code == 422, r.text
        [error] = r.json()["errors"]
        assert error["loc"] == ["body", "model", "kind"]
        assert (
            error["msg"] == f"model kind 'cnn3' needs image inputs of shape (C, H, W), got {shape}"
        )
    # the 8x8 digits as images: what cnn3 takes
    small = job_body(
        model={"kind": "cnn3"}, dataset={"uri": "builtin://digits?positive=3&as_images=true"}
    )
    assert client.post("/v1/jobs", json=small, headers=tenant.headers).status_code == 201


@pytest.mark.parametrize(
    ("model", "field", "message"),
    [
        ({"kind": "linear", "hidden": [3]}, "hidden", "'linear' models have no 'hidden'"),
        ({"kind": "mlp", "channels": [1, 2, 3]}, "channels", "their only size is 'hidden'"),
        ({"kind": "cnn3", "hidden": [3]}, "hidden", "their only size is 'channels'"),
    ],
)
def test_a_size_the_models_kind_does_not_have_is_refused_not_dropped(
    client, tenant, model, field, message
):
    """Was accepted and dropped: `metro submit --model mlp --channels 1,2,3` trained the default
    mlp, and a linear model with hidden layers a linear model, without a word."""
    r = client.post("/v1/jobs", json=job_body(model=model), headers=tenant.headers)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "model", field] and message in error["msg"]


@pytest.mark.parametrize(
    ("model", "stored"),
    [
        ({"kind": "linear"}, {"kind": "linear", "hidden": [64], "channels": [32, 64, 128]}),
        (
            {"kind": "mlp", "hidden": [16]},
            {"kind": "mlp", "hidden": [16], "channels": [32, 64, 128]},
        ),
    ],
)
def test_a_job_stored_with_every_kinds_sizes_is_replayed_by_its_key(
    client, app, tenant, model, stored
):
    """A job submitted before the model spec held only its kind's sizes was stored, and hashed,
    with hidden and channels: a retry of it with its Idempotency-Key is still the same request."""
    from core.job_spec import spec_hash

    headers = {**tenant.headers, "Idempotency-Key": f"before-the-upgrade-{model['kind']}"}
    first = client.post("/v1/jobs", json=job_body(model=model), headers=headers)
    assert first.status_code == 201, first.text
    with app.state.sessionmaker() as session:  # as the earlier version stored it
        job = session.get(Job, uuid.UUID(first.json()["id"]))
        assert job is not None
        job.spec = {**job.spec, "model": stored}
        job.request_hash = spec_hash(job.spec)
        session.commit()
    again = client.post("/v1/jobs", json=job_body(model=model), headers=headers)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["spec"]["model"] == stored  # the stored spec is what it is
    # Another job under the same key is still refused.
    other = job_body(model={"kind": "mlp", "hidden": [8]})
    r = client.post("/v1/jobs", json=other, headers=headers)
    assert r.status_code == 422 and r.json()["type"].endswith("/idempotency-key-reused")


@pytest.mark.parametrize(
    ("uri", "positive", "status"),
    [
        ("builtin://breast_cancer", "cat", 422),
        ("builtin://breast_cancer", "benign", 201),
        ("builtin://digits?positive=3", 4, 422),
        ("builtin://digits?positive=3", "3", 201),  # "3" for the label 3, as the worker reads it
        ("builtin://digits?positive=3", "not 3", 201),
        ("builtin://synthetic", True, 201),  # true for the label 1
        ("builtin://synthetic", "yes", 422),
        # Past the check's row cap (judged by its parameters): its labels were not checked.
        ("builtin://synthetic?n_samples=200000&positive_fraction=0.1", "yes", 422),
        ("builtin://synthetic?n_samples=200000&positive_fraction=0.1", 0, 201),
    ],
)
def test_a_builtin_positive_label_is_checked_at_its_field(client, tenant, uri, positive, status):
    body = job_body(dataset={"uri": uri, "positive_label": positive})
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == status, r.text
    if status == 422:
        (error,) = _errors(r)
        assert error["loc"] == ["body", "dataset", "positive_label"]  # was body.dataset.uri
        assert f"positive_label {positive!r} is not one of the labels" in error["msg"]


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"search": {"n_lambdas": "7"}}, ["body", "search", "n_lambdas"]),
        ({"search": {"n_lambdas": 7.0}}, ["body", "search", "n_lambdas"]),
        ({"training": {"epochs": "10"}}, ["body", "training", "epochs"]),
        ({"training": {"warm_start": "true"}}, ["body", "training", "warm_start"]),
        ({"repeats": "2"}, ["body", "repeats"]),
        ({"training": {"lr": "0.1"}}, ["body", "training", "lr"]),
    ],
)
def test_strict_types_a_string_or_a_float_for_an_integer_is_422(client, tenant, overrides, loc):
    """Were accepted as 7, 10, True, 2 and 0.1: a number is a JSON number of its own type."""
    errors = _errors(client.post("/v1/jobs", json=job_body(**overrides), headers=tenant.headers))
    assert any(e["loc"][: len(loc)] == loc for e in errors), errors


def test_strict_types_still_take_an_integer_where_a_float_belongs(client, tenant):
    body = job_body(search={"n_lambdas": 7}, training={"lr": 1, "weight_decay": 0})
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["search"]["n_lambdas"] == 7


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"metric": {"preset": "f_beta", "beta": "2"}}, ["body", "metric", "beta"]),
        ({"metric": {"alpha": [1, 0, 0, "0"], "beta": [0, 0, 0, 1]}},
         ["body", "metric", "alpha", 3]),
        ({"surrogate": {"name": "sigmoid", "k": "2"}}, ["body", "surrogate", "k"]),
        ({"constraints": [{"metric": "recall", "at_least": "0.8"}]},
         ["body", "constraints", 0, "at_least"]),
        ({"constraints": [{"metric": "f_beta", "params": {"beta": "2"}, "at_least": 0.5}]},
         ["body", "constraints", 0, "params", "beta"]),
        ({"dataset": {"uri": "builtin://breast_cancer", "label_column": 1}},
         ["body", "dataset", "label_column"]),
    ],
    ids=["preset-param", "coefficient", "surrogate-param", "bound", "constraint-param", "label"],
)  # fmt: skip
def test_a_string_for_a_number_is_422_in_every_section(client, tenant, overrides, loc):
    """As in search and training: "0.8" is not silently taken for 0.8 anywhere in a job."""
    r = client.post("/v1/jobs", json=job_body(**overrides), headers=tenant.headers)
    assert [e["loc"] for e in _errors(r)] == [loc], r.text


def test_an_error_answer_lists_at_most_50_errors(client, tenant, add_model):
    """100,000 bad cells of a prediction came back as 100,000 errors, a 9.5 MB answer."""
    model = add_model(tenant, weight=[1.0] * 20)
    rows = [["x"] * 20 for _ in range(40)]
    r = client.post(
        f"/v1/models/{model['id']}/predict", json={"instances": rows}, headers=tenant.headers
    )
    assert r.status_code == 422
    errors = r.json()["errors"]
    assert len(errors) == 51 and errors[0]["loc"] == ["body", "instances", 0, 0]
    assert errors[-1] == {
        "loc": ["body"],
        "msg": "and 750 more errors not listed",
        "type": "too_many_errors",
    }


def test_an_error_answer_does_not_send_a_huge_input_back(client, tenant):
    """A 5 MiB unknown key of metric came back three times (loc, msg and detail: 15.7 MB), an
    unknown preset twice; answers are now cut short, still naming the field."""
    key = "k" * 20_000  # within the test server's body limit
    body = job_body(metric={"preset": "f1", key: 1})
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422 and len(r.content) < 5_000, len(r.content)
    [error] = r.json()["errors"]
    assert error["loc"][:2] == ["body", "metric"] and error["loc"][2].startswith("kkk")
    assert error["loc"][2].endswith("(19,800 more characters)")
    r = client.post(
        "/v1/jobs", json=job_body(surrogate={"name": "s" * 20_000}), headers=tenant.headers
    )
    assert r.status_code == 422 and len(r.content) < 5_000, len(r.content)
    assert r.json()["errors"][0]["loc"] == ["body", "surrogate", "name"]
    assert r.json()["errors"][0]["msg"].startswith("unknown surrogate 'sss")
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": "builtin://digits", "positive_label": "x" * 256}),
        headers=tenant.headers,
    )
    assert r.json()["errors"][0]["msg"] == (
        "Input should be a valid boolean, or a valid integer, or a valid number, or a string of "
        "at most 255 characters"
    )


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"metric": {"preset": "f_beta", "beta": float("nan")}}, ["body", "metric", "beta"]),
        ({"search": {"lambda_min": float("nan")}}, ["body", "search", "lambda_min"]),
        ({"search": {"epsilon": float("inf")}}, ["body", "search", "epsilon"]),
        ({"search": {"multipliers": [0.0, float("nan")]}}, ["body", "search", "multipliers", 1]),
    ],
)
def test_nan_in_a_bounded_number_is_said_to_be_nan(client, tenant, overrides, loc):
    """NaN fails every bound, and was refused with the bound's words ('Input should be less
    than or equal to 1000'), as if the number were too large."""
    body = json.dumps(job_body(**overrides))  # NaN and Infinity, as JavaScript writes them
    headers = {**tenant.headers, "Content-Type": "application/json"}
    r = client.post("/v1/jobs", content=body, headers=headers)
    assert _errors(r) == [
        {"loc": loc, "msg": "Input should be a finite number", "type": "finite_number"}
    ]


def test_a_model_kind_is_taken_in_any_case_as_the_library_takes_it(client, tenant):
    """`MetroClassifier(model="MLP")` and `metro submit --model MLP` trained an MLP; the API
    answered 422 "Input should be 'linear', 'mlp' or 'cnn3'"."""
    r = client.post(
        "/v1/jobs", json=job_body(model={"kind": "MLP", "hidden": [8]}), headers=tenant.headers
    )
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["model"] == {"kind": "mlp", "hidden": [8]}
    bad = client.post("/v1/jobs", json=job_body(model={"kind": "SVM"}), headers=tenant.headers)
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["body", "model", "kind"]


def test_one_lambda_bound_past_the_metrics_range_is_422_not_a_failed_job(client, tenant):
    """`search.lambda_min: 5` alone: the worker filled lambda_max with F1's top (0), and the job
    was accepted and failed with "empty lambda interval [5.0, 0.0]"."""
    for search, field, said in [
        ({"lambda_min": 5}, "lambda_min", "lambda_min 5 is not below 0, the top of f1's"),
        ({"lambda_max": -5}, "lambda_max", "lambda_max -5 is not above -1, the bottom of f1's"),
    ]:
        r = client.post("/v1/jobs", json=job_body(search=search), headers=tenant.headers)
        assert r.status_code == 422, r.text
        [error] = r.json()["errors"]
        assert error["loc"] == ["body", "search", field] and said in error["msg"], error
    ok = client.post(
        "/v1/jobs", json=job_body(search={"lambda_min": 5, "lambda_max": 6}), headers=tenant.headers
    )
    assert ok.status_code == 201, ok.text
    # no search for a metric whose denominator is fixed: nothing to refuse
    exact = client.post(
        "/v1/jobs", json=job_body(metric={"preset": "accuracy"}, search={"lambda_min": 5}),
        headers=tenant.headers,
    )  # fmt: skip
    assert exact.status_code == 201, exact.text


def test_augment_on_a_table_is_422_not_a_failed_job(client, tenant):
    """`training.augment` on tabular data was accepted and failed on the worker with "augment
    needs image inputs"; the model's own check on the data's shape was already made."""
    body = job_body(model={"kind": "mlp", "hidden": [4]}, training={"augment": True, "epochs": 1})
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["loc"] == ["body", "training", "augment"]
    assert (
        "needs image inputs of shape (C, H, W); this data's examples have shape (30,)"
        in (error["msg"])
    )


def test_a_committed_job_is_answered_201_though_the_hint_read_after_it_fails(
    client, tenant, monkeypatch
):
    """The workers' roll call (for a queued job's `waiting`) is read after the job's commit: a
    dropped connection there answered 503 for a job that existed and ran, and a client
    retrying without an Idempotency-Key trained it twice."""
    import psycopg
    from sqlalchemy import exc

    from service.api.routes import jobs as jobs_route

    def dropped(*args, **kwargs):
        raise exc.OperationalError("SELECT", {}, psycopg.OperationalError("server closed"))

    monkeypatch.setattr(jobs_route, "live_kinds", dropped)
    r = client.post("/v1/jobs", json=job_body(), headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "queued" and r.json()["waiting"] is None
    got = client.get(f"/v1/jobs/{r.json()['id']}", headers=tenant.headers)
    assert got.status_code == 200 and got.json()["id"] == r.json()["id"]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"model": {"kind": "mlp", "hidden": [4]}}, "multinomial is a linear model"),
        ({"dataset": {"uri": "builtin://digits", "label_columns": ["a", "b"]}}, "multi-label"),
        ({"metric": {"preset": "f1"}}, "a binary job is one METRO search"),
    ],
)
def test_a_multinomial_job_it_cannot_train_is_refused_at_its_setting(
    client, tenant, overrides, words
):
    """search.multiclass multinomial with a network, multi-label data or a binary metric: said
    at search.multiclass (a binary job's was stored as asked and ignored)."""
    body = job_body(
        metric={"preset": "f1", "average": "macro"}, dataset={"uri": "builtin://digits"},
        search={"multiclass": "multinomial"},
    )  # fmt: skip
    body.update(overrides)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    [error] = [e for e in _errors(r) if e["loc"] == ["body", "search", "multiclass"]]
    assert words in error["msg"], error
    assert "search.multiclass: " in r.json()["detail"]


def test_only_a_multinomial_jobs_spec_stores_how_its_classes_are_trained(client, tenant):
    """search.multiclass is stored where it changes what is trained: every other job's spec
    (and so its hash, and an Idempotency-Key's replay across the release that added it) is as
    before the setting; its absence reads as per_class."""
    binary = client.post("/v1/jobs", json=job_body(), headers=tenant.headers).json()
    assert "multiclass" not in binary["spec"]["search"]
    classes = job_body(
        metric={"preset": "f1", "average": "macro"}, dataset={"uri": "builtin://digits"}
    )
    for asked in ({}, {"search": {"multiclass": "per_class"}}):
        multi = client.post("/v1/jobs", json={**classes, **asked}, headers=tenant.headers)
        assert multi.status_code == 201, multi.text
        assert "multiclass" not in multi.json()["spec"]["search"]
    chosen = {**classes, "search": {"multiclass": "multinomial"}}
    multi = client.post("/v1/jobs", json=chosen, headers=tenant.headers)
    assert multi.json()["spec"]["search"]["multiclass"] == "multinomial"
