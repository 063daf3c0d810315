"""`metro compare JOB_A JOB_B` without a server: the API's answers (in the shape the server gives
them) come from a mock transport under the generated client, as a live server's would."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
import pytest
from metro_cli import compare as compare_module
from metro_cli.api import Api
from metro_cli.app import create_app
from typer.testing import CliRunner

NOW = "2026-11-30T00:00:00Z"


def _job(job_id: str, *, state: str = "succeeded", data: str | None = "a" * 64,
         uri: str = "builtin://breast_cancer", metric: tuple[str, str] = ("f_beta(2)", "F2"),
         failure: str | None = None) -> dict[str, Any]:  # fmt: skip
    spec = {
        "dataset": {"uri": uri, "label_column": "y", "positive_label": 1},
        "metric": {"preset": "f_beta", "beta": 2.0},
        "metric_info": {"name": metric[0], "display_name": metric[1], "greater_is_better": True},
    }
    return {"id": job_id, "state": state, "spec": spec, "dataset_uri": uri, "progress": 1.0,
            "current_lambda": None, "best_lambda": -0.5, "choices": None, "data_sha256": data,
            "attempts": 1, "failure_reason": failure, "waiting": None, "cancel_requested": False,
            "created_at": NOW, "updated_at": NOW, "started_at": NOW,
            "finished_at": NOW}  # fmt: skip


def _result(job_id: str, scores: dict[tuple[str, str], list[float]], *,
            metric: tuple[str, str] = ("f_beta(2)", "F2"), in_sample: bool = True,
            test_rows: int = 114) -> dict[str, Any]:  # fmt: skip
    """A binary job's result: each (method, split)'s values per repeat, summarised as the
    server summarises them (mean, sample std)."""
    import statistics

    summary = [
        {"method": m, "split": s, "n": len(v), "mean": sum(v) / len(v),
         "std": statistics.stdev(v) if len(v) > 1 else None}
        for (m, s), v in scores.items()
    ]  # fmt: skip
    runs = [
        {"method": m, "repeat": r, "split": s, "value": x, "lambda": -0.5,
         "confusion": {"tp": 30, "fp": 10, "fn": 4, "tn": test_rows - 44}}
        for (m, s), v in scores.items() for r, x in enumerate(v)
    ]  # fmt: skip
    choice = {"repeat": 0, "strategy": "grid", "trained_lambda": -0.5, "shift": "minimal",
              "ratio_reached": None, "tuned_threshold": 0.125, "selection_score": 0.9,
              "selection_split": "cross-validation", "n_folds": 5, "selection_counts": None,
              "warnings": []}  # fmt: skip
    return {"job_id": job_id, "metric": metric[0], "metric_display_name": metric[1],
            "greater_is_better": True, "trained_lambda": -0.5, "shift": "minimal",
            "lambda_star": -0.5, "selection": None, "choices": [choice], "constraints": [],
            "summary": summary, "method_names": {"metro": "METRO", "erm": "ERM"}, "runs": runs,
            "validation_in_sample": in_sample,
            "labels": {"positive": 1, "negative": 0}}  # fmt: skip


def _model(job_id: str, data: str | None) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "job_id": job_id, "formats": ["safetensors"],
            "sha256": "0" * 64, "created_at": NOW,
            "manifest": {"trained_lambda": -0.5, "tuned_threshold": 0.125, "threshold": 0.0,
                         "data_sha256": data}}  # fmt: skip


class FakeServer:
    """The API's answers for the jobs it knows (a job of another tenant is as unknown: 404)."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.datasets: dict[str, dict[str, Any]] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        missing = httpx.Response(404, json={"type": "https://metro.example/problems/not-found",
                                            "title": "Not found", "status": 404,
                                            "detail": f"no such resource: {path}"})  # fmt: skip
        if path == "/v1/models":
            job = request.url.params.get("job_id")
            items = [self.models[job]] if job in self.models else []
            return httpx.Response(200, json={"items": items, "next_cursor": None})
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "datasets"] and parts[2] in self.datasets:
            return httpx.Response(200, json=self.datasets[parts[2]])
        if parts[:2] != ["v1", "jobs"] or parts[2] not in self.jobs:
            return missing
        if len(parts) == 3:
            return httpx.Response(200, json=self.jobs[parts[2]])
        if parts[3] == "result" and parts[2] in self.results:
            return httpx.Response(200, json=self.results[parts[2]])
        return httpx.Response(409, json={"title": "Conflict", "status": 409,
                                         "detail": "the job has not succeeded"})  # fmt: skip


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    fake = FakeServer()

    def api(url: str, key: str | None) -> Api:
        made = Api(url, key)
        made.client.set_httpx_client(
            httpx.Client(base_url=made.url, transport=httpx.MockTransport(fake))
        )
        return made

    monkeypatch.setattr(compare_module, "Api", api)
    from rich.console import Console

    # wide enough that no row wraps (the command's console writes to the runner's stdout)
    monkeypatch.setattr(compare_module, "console", Console(width=200))
    return fake


def _run(*args: str) -> Any:
    return CliRunner().invoke(
        create_app(plugins=False),
        ["compare", *args, "--url", "http://metro.test", "--api-key", "k"],
    )


def _add(server: FakeServer, scores: dict[tuple[str, str], list[float]], **job: Any) -> str:
    job_id = str(uuid.uuid4())
    metric = job.get("metric", ("f_beta(2)", "F2"))
    server.jobs[job_id] = _job(job_id, **job)
    server.results[job_id] = _result(job_id, scores, metric=metric)
    server.models[job_id] = _model(job_id, job.get("data", "a" * 64))
    return job_id


OLD = {("metro", "validation"): [0.91, 0.93], ("metro", "test"): [0.80, 0.84],
       ("erm", "validation"): [0.85, 0.87], ("erm", "test"): [0.70, 0.72]}  # fmt: skip
NEW = {("metro", "validation"): [0.95, 0.95], ("metro", "test"): [0.87, 0.85],
       ("erm", "validation"): [0.88, 0.90], ("erm", "test"): [0.75, 0.75]}  # fmt: skip


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_two_jobs_on_the_same_data_side_by_side_with_metros_test_difference(server):
    a, b = _add(server, OLD), _add(server, NEW)
    run = _run(a, b)
    assert run.exit_code == 0, run.output
    text = " ".join(run.output.split())
    assert "same metric: F2" in text and "same data: yes (equal data_sha256)" in text
    difference = _mean(NEW[("metro", "test")]) - _mean(OLD[("metro", "test")])
    assert f"METRO on test, B - A: {difference:+.4f} F2 (B better; higher is better)" in text
    # each mean ± std as `metro result` prints it, validation named in-sample as there
    from metro_cli.result import result_table
    from metro_client.models import JobResult
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(result_table(JobResult.from_dict(server.results[a])))
    shown_by_result = console.export_text()
    for name in ("METRO", "ERM"):
        [row] = [r for r in run.output.splitlines() if f"│ {name} test " in r]
        values = re.findall(r"\d\.\d{4} ± \d\.\d{4}", row)
        assert len(values) == 2 and values[0] in shown_by_result, (row, shown_by_result)
    assert "│ METRO validation (in-sample) " in run.output
    assert "validation (in-sample): the refit" in text
    assert "'1'" not in run.output and "positive label │ 1" in " ".join(run.output.split())

    as_json = _run(a, b, "--json")
    assert as_json.exit_code == 0, as_json.output
    both = json.loads(as_json.output)
    assert both["same_metric"] is True and both["same_data"] is True
    assert both["metro_test_difference"] == pytest.approx(difference)
    assert both["a"]["scores"]["erm"]["test"]["mean"] == pytest.approx(_mean(OLD[("erm", "test")]))
    assert both["b"]["tuned_threshold"] == 0.125 and both["a"]["n_test_rows"] == 114
    assert both["a"]["validation_in_sample"] is True and both["a"]["positive_label"] == 1


def test_different_metrics_are_said_plainly_and_given_no_difference(server):
    a = _add(server, OLD)
    b = _add(server, NEW, metric=("f1", "F1"), data="b" * 64)
    run = _run(a, b)
    assert run.exit_code == 0, run.output
    text = " ".join(run.output.split())
    assert "DIFFERENT metrics: A measured F2, B F1: their values are not comparable" in text
    assert "DIFFERENT data: the data_sha256 differ" in text and "B - A" not in text
    both = json.loads(_run(a, b, "--json").output)
    assert both["same_metric"] is False and both["metro_test_difference"] is None
    assert both["same_data"] is False


def test_an_upload_is_named_by_its_file_and_rows(server):
    dataset = str(uuid.uuid4())
    server.datasets[dataset] = {"id": dataset, "uri": f"dataset://{dataset}",
        "filename": "churn-2026-10.csv", "format": ".csv", "size_bytes": 10, "sha256": "1" * 64,
        "n_rows": 400, "n_columns": 5, "columns": None, "label_column": "churned",
        "labels": [0, 1], "created_at": NOW}  # fmt: skip
    a = _add(server, OLD, uri=f"dataset://{dataset}", data=None)
    server.models[a]["manifest"]["data_sha256"] = "c" * 64  # the manifest's, where the job lacks it
    b = _add(server, NEW, uri=f"dataset://{uuid.uuid4()}", data=None)  # its upload deleted
    server.models[b]["manifest"]["data_sha256"] = None
    both = json.loads(_run(a, b, "--json").output)
    assert both["a"]["dataset_filename"] == "churn-2026-10.csv" and both["a"]["n_rows"] == 400
    assert both["a"]["data_sha256"] == "c" * 64
    assert both["b"]["dataset_filename"] is None and both["b"]["n_rows"] is None
    assert both["same_data"] is None
    run = _run(a, b)
    assert "same data: unknown (no data_sha256 for job B)" in " ".join(run.output.split())
    assert "(churn-2026-10.csv)" in run.output


@pytest.mark.parametrize(
    ("state", "failure", "said"),
    [
        ("running", None, "is running, not succeeded (`metro watch {id}` follows it): it has no"),
        ("failed", "out of memory\ntrace", "is failed, not succeeded: out of memory: it has no"),
    ],
)
def test_a_job_that_has_not_finished_is_one_line_naming_it_and_its_state(
    server, state, failure, said
):
    a = _add(server, OLD)
    b = str(uuid.uuid4())
    server.jobs[b] = _job(b, state=state, failure=failure)
    run = _run(a, b)
    assert run.exit_code == 1
    lines = run.output.strip().splitlines()
    assert len(lines) == 1, run.output
    assert lines[0] == f"error: job B ({b}) " + said.format(id=b) + " result", run.output


def test_a_job_not_found_or_of_another_tenant_is_not_found(server):
    a = _add(server, OLD)
    elsewhere = str(uuid.uuid4())  # the server answers another tenant's job with 404 too
    run = _run(elsewhere, a)
    assert run.exit_code == 1 and len(run.output.strip().splitlines()) == 1, run.output
    assert run.output.startswith(f"error: job A ({elsewhere}): Not found (404)"), run.output
    run = _run(a, "not-a-uuid")
    assert run.exit_code == 1 and "'not-a-uuid' is not a job B id" in run.output, run.output


def test_different_constraints_are_said_and_shown(server):
    """Two jobs of one metric under different floors: METRO's objective under a precision floor
    and without one are not the same problem, and the comparison says so (as `metro result`'s
    title names the constraints)."""
    a, b = _add(server, OLD), _add(server, NEW)
    floor = {"name": "precision >= 0.7", "display_name": "Precision ≥ 0.7",
             "metric_display_name": "Precision", "sense": "at_least", "bound": 0.7,
             "confidence": None}  # fmt: skip
    server.results[b]["constraints"] = [floor]
    run = _run(a, b)
    assert run.exit_code == 0, run.output
    text = " ".join(run.output.split())
    assert "DIFFERENT constraints: A has none, B Precision ≥ 0.7" in text, run.output
    both = json.loads(_run(a, b, "--json").output)
    assert both["same_constraints"] is False
    assert both["a"]["constraints"] == [] and both["b"]["constraints"] == ["Precision ≥ 0.7"]
    server.results[a]["constraints"] = [floor]
    text = " ".join(_run(a, b).output.split())
    assert "DIFFERENT constraints" not in text and "same constraints: Precision ≥ 0.7" in text


@pytest.mark.parametrize(
    ("other", "shown"),
    [
        (("precision", "Precision (zero_division 1)"), "Precision (zero_division 1)"),
        (("weighted_accuracy", "Weighted accuracy (w_fn 20)"), "Weighted accuracy (w_fn 20)"),
    ],
)
def test_one_metric_name_with_other_parameters_is_a_different_metric(server, other, shown):
    """The machine name alone does not tell a metric: precision with zero_division 1 scores the
    same counts differently, and so does a weighted accuracy with other costs."""
    base = (other[0], other[0].replace("_", " ").capitalize())
    a = _add(server, OLD, metric=base)
    b = _add(server, NEW, metric=other)
    both = json.loads(_run(a, b, "--json").output)
    assert both["same_metric"] is False and both["metro_test_difference"] is None
    text = " ".join(_run(a, b).output.split())
    assert f"DIFFERENT metrics: A measured {base[1]}, B {shown}" in text and "B - A" not in text
