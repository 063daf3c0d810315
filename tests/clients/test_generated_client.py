"""The generated Python client (clients/python): it is exactly what the generator makes from the
current API, its names read naturally, and it drives a live server end to end on its own."""

from __future__ import annotations

import hashlib
import importlib
import io
import pkgutil
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.clients.conftest import ROOT, Live, write_training_csv

CLIENTS = ROOT / "clients"
# Made by installing or running the client, not by the generator; and the hand-written parts of
# clients/python that generate.py keeps (the user CLI, metro_cli).
_NOT_GENERATED = {"__pycache__", ".ruff_cache", "build", "dist", "metro_cli"}


def _tree(root: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_dir() or any(
            part in _NOT_GENERATED or part.endswith(".egg-info") for part in rel.parts
        ):
            continue
        files[rel.as_posix()] = path.read_bytes().replace(b"\r\n", b"\n")
    return files


def test_committed_client_is_what_the_generator_makes(tmp_path: Path) -> None:
    # Regenerating over an earlier output replaces what the generator wrote and keeps the
    # hand-written CLI.
    (tmp_path / "python" / "metro_cli").mkdir(parents=True)
    (tmp_path / "python" / "metro_cli" / "kept.py").write_text("# hand-written\n")
    (tmp_path / "python" / "stale.py").write_text("# generated from an older API\n")
    done = subprocess.run(
        [sys.executable, str(CLIENTS / "generate.py"), "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "python" / "metro_cli" / "kept.py").read_text() == "# hand-written\n"
    assert not (tmp_path / "python" / "stale.py").exists()
    fix = "regenerate it with `python clients/generate.py` and commit the result"
    committed_doc = (CLIENTS / "openapi.json").read_bytes().replace(b"\r\n", b"\n")
    assert committed_doc == (tmp_path / "openapi.json").read_bytes(), (
        f"clients/openapi.json is not the API's current OpenAPI document: {fix}"
    )
    committed, generated = _tree(CLIENTS / "python"), _tree(tmp_path / "python")
    only_committed = sorted(set(committed) - set(generated))
    only_generated = sorted(set(generated) - set(committed))
    changed = sorted(k for k in set(committed) & set(generated) if committed[k] != generated[k])
    assert not (only_committed or only_generated or changed), (
        f"clients/python has drifted from the API ({fix}): extra {only_committed}, "
        f"missing {only_generated}, changed {changed}"
    )


def test_the_api_guides_settings_table_is_the_documents() -> None:
    """docs/api.md lists every setting of a job with what it takes and its default, written from
    the OpenAPI document (which the library's declarations make): a setting added, a bound or a
    default changed, and the table must be written again."""
    from clients.generate import SETTINGS_BEGIN, SETTINGS_END, openapi_document, settings_table

    text = (ROOT / "docs" / "api.md").read_text()
    committed = text[text.index(SETTINGS_BEGIN) : text.index(SETTINGS_END) + len(SETTINGS_END)]
    assert committed == settings_table(openapi_document()), (
        "docs/api.md's settings table is not the API's: run `python clients/generate.py`"
    )
    for path in ("search.lambda_min", "search.multipliers", "training.compile", "metric.w_tp",
                 "dataset.label_columns", "search.refine_confidence"):  # fmt: skip
        assert f"| `{path}` |" in committed, path


def test_names_read_naturally() -> None:
    import metro_client.api as api
    import metro_client.models as models

    operations = set()
    for tag in pkgutil.iter_modules(api.__path__):
        package = importlib.import_module(f"metro_client.api.{tag.name}")
        operations |= {f"{tag.name}.{op.name}" for op in pkgutil.iter_modules(package.__path__)}
    assert {
        "jobs.submit_job", "jobs.list_jobs", "jobs.get_job", "jobs.cancel_job", "jobs.delete_job",
        "jobs.get_job_trace", "jobs.get_job_result", "datasets.upload_dataset",
        "datasets.list_datasets", "datasets.get_dataset", "datasets.delete_dataset",
        "models.list_models", "models.get_model", "models.download_model", "models.predict",
        "models.delete_model",
        "health.healthz", "health.readyz", "health.metrics",
    } == operations  # fmt: skip
    for name in models.__all__:
        # None of FastAPI's schema names (JobOut, Page_JobOut_, Body_upload_dataset, ...)
        assert not re.search(r"^(Body|Page)|(Out|In|Type\d+|Item)$", name), name
    for name in ("Job", "JobCreate", "JobPage", "Dataset", "Model", "LambdaStep", "Problem"):
        assert name in models.__all__


def test_end_to_end_with_only_the_generated_client(live: Live, tmp_path: Path) -> None:
    from metro_client.api.datasets import get_dataset, upload_dataset
    from metro_client.api.health import readyz
    from metro_client.api.jobs import get_job, get_job_result, get_job_trace, list_jobs, submit_job
    from metro_client.api.models import download_model, get_model, list_models, predict
    from metro_client.models import (
        DatasetRef,
        JobCreate,
        ModelSpec,
        PredictRequest,
        PresetMetric,
        Problem,
        SearchSpec,
        TrainingSpec,
        UploadDatasetBody,
    )
    from metro_client.types import File

    csv = write_training_csv(tmp_path / "train.csv")
    with live.client() as client:
        assert readyz.sync(client=client).status == "ready"

        # Upload a dataset.
        with csv.open("rb") as handle:
            body = UploadDatasetBody(
                file=File(payload=handle, file_name="train.csv"), label_column="y"
            )
            dataset = upload_dataset.sync(client=client, body=body)
        assert not isinstance(dataset, Problem), dataset
        assert dataset.uri == f"dataset://{dataset.id}" and dataset.n_rows == 240
        assert dataset.sha256 == hashlib.sha256(csv.read_bytes()).hexdigest()
        assert get_dataset.sync(dataset.id, client=client).columns == ["a", "b", "c", "d", "y"]

        # Submit a job; the same Idempotency-Key returns the same job.
        metric = PresetMetric(preset="f_beta", beta=1.0)  # a preset's parameters are fields
        spec = JobCreate(
            metric=metric,
            dataset=DatasetRef(uri=dataset.uri, label_column="y", positive_label=1),
            model=ModelSpec(kind="linear"),
            search=SearchSpec(strategy="grid", n_lambdas=4, shift="minimal"),
            training=TrainingSpec(max_iter=30),
            baselines=["erm"],
        )
        key = uuid.uuid4().hex
        created = submit_job.sync_detailed(client=client, body=spec, idempotency_key=key)
        assert created.status_code == 201, created.content
        assert created.headers["Location"].endswith(f"/v1/jobs/{created.parsed.id}")
        job = created.parsed
        again = submit_job.sync_detailed(client=client, body=spec, idempotency_key=key)
        assert again.status_code == 200 and again.parsed.id == job.id

        # Poll it.
        deadline = time.monotonic() + 60
        while job.state not in ("succeeded", "failed", "cancelled"):
            assert time.monotonic() < deadline, f"job still {job.state}"
            time.sleep(0.1)
            job = get_job.sync(job.id, client=client)
        assert job.state == "succeeded", job.failure_reason
        assert job.progress == 1.0 and job.best_lambda is not None
        assert job.spec["search"]["n_lambdas"] == 4
        listed = list_jobs.sync(client=client, state="succeeded")
        assert job.id in [j.id for j in listed.items]

        # The trace, two steps a page.
        steps, cursor = [], None
        while True:
            page = get_job_trace.sync(job.id, client=client, limit=2, cursor=cursor)
            steps += page.items
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        assert len(steps) >= 4 and [s.step for s in steps] == list(range(len(steps)))
        assert all(s.method == "metro" for s in steps)
        assert sum(s.validation_metric is not None for s in steps) >= 4  # (a refit step has none)
        assert job.best_lambda in {s.lambda_ for s in steps}

        # The result: METRO and the baseline on both splits.
        result = get_job_result.sync(job.id, client=client)
        assert result.metric == "f1" and result.lambda_star == job.best_lambda  # f_beta, beta 1
        assert {(s.method, s.split) for s in result.summary} == {
            (m, split) for m in ("metro", "erm") for split in ("validation", "test")
        }
        for run in result.runs:
            c = run.confusion
            assert 0 <= run.value <= 1 and c.tp + c.fp + c.fn + c.tn > 0

        # The model: manifest, both downloads with their digests.
        (model,) = list_models.sync(client=client, job_id=job.id).items
        model = get_model.sync(model.id, client=client)
        manifest = model.manifest.to_dict()
        assert manifest["feature_names"] == ["a", "b", "c", "d"]
        assert model.formats == ["safetensors", "onnx"]
        weights = download_model.sync(model.id, client=client, format_="safetensors")
        assert hashlib.sha256(weights.payload.read()).hexdigest() == model.sha256
        onnx_file = download_model.sync(model.id, client=client, format_="onnx")
        onnx_bytes = onnx_file.payload.read()
        assert hashlib.sha256(onnx_bytes).hexdigest() == manifest["onnx_sha256"]

        # Predict, by position and by name (columns reordered by the server).
        rows = np.loadtxt(csv, delimiter=",", skiprows=1)[:5, :4]
        by_position = predict.sync(
            model.id, client=client, body=PredictRequest(instances=rows.tolist())
        )
        by_name = predict.sync(
            model.id, client=client,
            body=PredictRequest(columns=["d", "c", "b", "a"], data=rows[:, ::-1].tolist()),
        )  # fmt: skip
        assert len(by_position.margins) == 5 and set(by_position.labels) <= {0, 1}
        # float32 scores: equal up to round-off relative to their size
        assert by_name.margins == pytest.approx(by_position.margins, rel=1e-5, abs=1e-6)
        import onnxruntime as ort

        session = ort.InferenceSession(io.BytesIO(onnx_bytes).getvalue())
        (onnx_scores,) = session.run(None, {session.get_inputs()[0].name: rows.astype(np.float32)})
        assert onnx_scores[:, 0] == pytest.approx(by_position.margins, abs=1e-4)

        # Errors come back as parsed problems.
        missing = get_job.sync_detailed(uuid.uuid4(), client=client)
        assert missing.status_code == 404 and isinstance(missing.parsed, Problem)
        bad = predict.sync(model.id, client=client, body=PredictRequest(instances=[[1.0, 2.0]]))
        assert isinstance(bad, Problem) and bad.status == 422
        assert bad.errors[0].loc == ["body", "instances", 0]


def test_the_client_sends_only_what_its_user_set():
    """A job built with the generated models carries the fields its user set and no default:
    the server's defaults apply, so a client built today does not pin today's defaults."""
    from metro_client.models import (
        DatasetRef,
        JobCreate,
        ModelSpec,
        PresetMetric,
        SearchSpec,
        SurrogateSpec,
        TrainingSpec,
    )

    for section in (SearchSpec(), TrainingSpec(), ModelSpec(), SurrogateSpec()):
        assert section.to_dict() == {}, type(section).__name__
    job = JobCreate(metric=PresetMetric(preset="f1"), dataset=DatasetRef(uri="builtin://digits"))
    assert job.to_dict() == {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://digits"}}
    assert SearchSpec(n_lambdas=9).to_dict() == {"n_lambdas": 9}
    # The defaults are still documented: in the served document, and in each field's docstring.
    source = (CLIENTS / "python/metro_client/models/search_spec.py").read_text()
    assert "Server default: 21" in source


def test_a_spec_built_from_a_dict_refuses_the_fields_its_schema_forbids():
    """``JobCreate.from_dict`` (how the client's README builds a job) dropped a misspelled field
    at any level without a word, and the job ran on the defaults; the server answers such a
    field with a 422 (additionalProperties false). Answers stay open to new fields."""
    from metro_client.models import ConfusionCounts, JobCreate

    base = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://digits"}}
    misspelled = [
        ({**base, "serch": {"n_lambdas": 3}}, "JobCreate: serch"),
        ({**base, "search": {"n_lambda": 3}}, "SearchSpec: n_lambda"),
        ({**base, "dataset": {"uri": "builtin://digits", "labelcolumn": "y"}}, "DatasetRef: "),
        ({**base, "training": {"epoch": 3}}, "TrainingSpec: epoch"),
    ]
    for body, said in misspelled:
        with pytest.raises(ValueError, match=f"^unknown field\\(s\\) of {said}"):
            JobCreate.from_dict(body)
    # a union: no member takes it, and the error says why each refused
    with pytest.raises(ValueError, match=r"^metric: as PresetMetric: unknown field\(s\).*bta"):
        JobCreate.from_dict({**base, "metric": {"preset": "f1", "bta": 1}})
    good = {**base, "search": {"n_lambdas": 3}}
    assert JobCreate.from_dict(good).to_dict() == good
    answer = {"tp": 1, "fp": 2, "fn": 3, "tn": 4, "a_field_of_a_newer_server": 5}
    assert ConfusionCounts.from_dict(answer).additional_properties == {
        "a_field_of_a_newer_server": 5
    }


def test_the_client_readmes_example_runs_as_written(live: Live, tmp_path: Path) -> None:
    """The example of clients/python/README.md, pasted into a file and run against a live
    service (it once named modules the generator's template made up: metro_client.api.my_tag)."""
    readme = (CLIENTS / "python" / "README.md").read_text()
    block = readme.split("<!-- client example -->", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], env=live.env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("metro test F2 0.") for line in lines), lines


def test_a_spec_from_a_dict_takes_the_names_the_server_takes():
    """The server reads a preset and a model's kind in any case, and the presets' aliases; the
    client's from_dict refused them (``{"preset": "F1"}`` raised ``KeyError: 'numerator'``, from
    the last form of a metric). It reads them as the server stores them."""
    from metro_client.models import JobCreate

    body = {
        "metric": {"preset": "F1"},
        "dataset": {"uri": "builtin://digits"},
        "model": {"kind": "MLP"},
        "constraints": [{"metric": "Specificity", "at_least": 0.5}, {"metric": "FBeta",
                        "params": {"beta": 2}, "at_least": 0.1}],
    }  # fmt: skip
    sent = JobCreate.from_dict(body).to_dict()
    assert sent["metric"] == {"preset": "f1"}
    assert sent["model"] == {"kind": "mlp"}
    assert [c["metric"] for c in sent["constraints"]] == ["true_negative_rate", "f_beta"]
    # Exact-case choices stay exact, as the server's are.
    with pytest.raises(TypeError, match="Grid"):
        JobCreate.from_dict({**body, "search": {"strategy": "Grid"}})
    # A name nothing reads: one error naming the field and each form's reason.
    with pytest.raises(ValueError) as refused:
        JobCreate.from_dict({**body, "metric": {"preset": "F2x"}})
    said = str(refused.value)
    assert said.startswith("metric: as PresetMetric: Unexpected value 'F2x'")
    assert "as CoefficientMetric: missing 'alpha'" in said
    assert "as ConfusionMetric: missing 'numerator'" in said


def test_every_enum_the_server_reads_in_other_spellings_is_read_so_by_the_client():
    """Each enum of the document marked x-any-case or x-aliases: the client's check takes the
    upper-case spelling and each alias, giving the value the server stores."""
    import json

    from metro_client import models

    document = json.loads((CLIENTS / "openapi.json").read_text(encoding="utf-8"))
    marked: list[dict] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("enum") and ("x-any-case" in node or "x-aliases" in node):
                marked.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    checks = [
        getattr(module, name)
        for info in pkgutil.iter_modules(models.__path__)
        for module in [importlib.import_module(f"metro_client.models.{info.name}")]
        for name in dir(module)
        if name.startswith("check_")
    ]
    assert len(marked) >= 3  # the metric's preset, a constraint's preset, the model's kind
    for node in marked:
        values = set(node["enum"])
        readers = [c for c in checks if _takes_all(c, values)]
        assert readers, f"no check reads {sorted(values)}"
        for check in readers:
            for value in values:
                if node.get("x-any-case"):
                    assert check(value.upper()) == value
            for alias, value in (node.get("x-aliases") or {}).items():
                assert check(alias) == value
                assert check(alias.upper()) == value


def _takes_all(check: object, values: set[str]) -> bool:
    try:
        return all(check(v) == v for v in values)  # type: ignore[operator]
    except TypeError:
        return False
