"""The ``metro`` commands that use a server (submit, watch, result, download, predict), run as a
person runs them: separate processes against the live server and worker."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tests.clients.conftest import ROOT, Live, write_training_csv


def as_step(step: dict[str, Any]) -> Any:
    """A result's refinement (JSON) as the attributes metro_cli reads from the client's model."""
    from types import SimpleNamespace

    scores = [SimpleNamespace(**s) for s in step["scores"]]
    return SimpleNamespace(**{**step, "scores": scores})


def metro(live: Live | None, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
          timeout: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
    environment = dict(live.env if live else {**os.environ, "COLUMNS": "200"})
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], cwd=cwd or ROOT, env=environment,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def assert_one_line_error(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def manifest(live: Live, model_id: str) -> dict:
    r = httpx.get(
        f"{live.url}/v1/models/{model_id}", headers={"Authorization": f"Bearer {live.api_key}"}
    )
    assert r.status_code == 200, r.text
    return r.json()["manifest"]


def test_submit_watch_result_download_predict(live: Live, tmp_path: Path) -> None:
    train = write_training_csv(tmp_path / "train.csv", seed=1)
    done = metro(
        live, "submit", "--dataset", str(train), "--label-column", "y", "--positive-label", "1",
        "--metric", "f_beta", "--beta", "2", "--n-lambdas", "3", "--max-iter", "20",
        "--repeats", "2", "--baseline", "erm", "--set", "search.shift=minimal",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    assert str(uuid.UUID(job_id)) == job_id  # the id alone on stdout, for $(metro submit ...)
    assert "uploaded train.csv as dataset://" in done.stderr

    watched = metro(live, "watch", job_id, "--interval", "0.2", "--timeout", "90")
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert "succeeded" in watched.stdout
    model_id = watched.stdout.strip().rsplit("model ", 1)[1].strip()
    raw = json.loads(metro(live, "result", job_id, "--json").stdout)
    assert {s["method"] for s in raw["summary"]} == {"metro", "erm"}
    choices = raw["choices"]
    # watch's "best" is the result's selection score, named F2 and with its split (the pooled
    # held-out rows of the 5 folds the search chose by), over both repeats...
    selection = raw["selection"]
    assert (selection["split"], selection["n_folds"], selection["n"]) == ("cross-validation", 5, 2)
    best = f"best F2 {selection['mean']:.4f} ± {selection['std']:.4f} (5-fold CV, 2 repeats)"
    assert best in watched.stdout, watched.stdout
    # ... and its lambda is the delivered model's trained one, beside each repeat's choice,
    # each labelled with its repeat.
    trained = (
        f"trained λ {choices[0]['trained_lambda']:.4g} (shift minimal) in repeat 0, the model "
        f"delivered; each repeat chose: repeat 0 {choices[0]['trained_lambda']:.4g} (minimal), "
        f"repeat 1 {choices[1]['trained_lambda']:.4g} (minimal)"
    )
    assert trained in watched.stdout, watched.stdout
    # Not a terminal: plain, complete lines (no live bar cut to 80 columns), the last one on the
    # delivered model's lambda, not on the last step fitted (repeat 1's).
    assert "…" not in watched.stdout and "━" not in watched.stdout, watched.stdout
    *lines, final = watched.stdout.strip().splitlines()
    assert lines and all(line.startswith(f"{job_id[:8]} ") for line in lines), lines
    assert re.fullmatch(
        rf"{job_id[:8]} succeeded 100% trained λ {choices[0]['trained_lambda']:.4g} "
        rf"{re.escape(best)} \d+\.\ds",
        lines[-1],
    ), lines[-1]
    assert final.startswith(f"job {job_id} succeeded in ") and final.endswith(f"model {model_id}")
    # The positive label, as `metro result` names it (the model's labels: --positive-label 1).
    positive = "positive label 1 (negative 0): F2 counts 1 as positive"
    assert final.endswith(f"; {positive}; model {model_id}"), final

    table = metro(live, "result", job_id)
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if "split" in line)
    # methods side by side, named as the result (and the dashboard) name them
    assert header.index("METRO") < header.index("ERM"), header
    assert "metro" not in header and "erm" not in header
    for split in ("validation", "test"):
        row = next(line for line in table.stdout.splitlines() if split in line)
        assert row.count("±") == 2, row  # mean ± std for both methods, two repeats
    # The refit (the default) trained every model on the validation rows: the row says so, and
    # the caption what that means, as the result's validation_in_sample does.
    assert raw["validation_in_sample"] is True
    row = next(line for line in table.stdout.splitlines() if "validation" in line)
    assert "validation (in-sample)" in row, row
    assert "the refit trained each model on these rows" in " ".join(table.stdout.split())
    assert "F2, higher is better" in table.stdout and "f_beta(2)" not in table.stdout
    assert trained in table.stdout and f"METRO chose by {best[5:]}" in table.stdout
    # The last line names the model, and it is the only line that starts with "model ".
    assert [line for line in table.stdout.splitlines() if line.startswith("model ")] == [
        f"model {model_id}"
    ]
    assert table.stdout.strip().splitlines()[-1] == f"model {model_id}"
    # ... after the line that says which class F2 counted (the result's labels, from the model)
    assert raw["labels"] == {"positive": 1, "negative": 0}
    assert table.stdout.strip().splitlines()[-2] == (
        "positive label 1 (negative 0): F2 counts 1 as positive"
    )
    # The refinement step of each repeat, each number labelled with its repeat, in the same
    # numbers as the result's choices.
    outcomes = []
    for c in choices:
        step = c["refinement"]
        label = f"repeat {c['repeat']}" + (" (the model delivered)" if c["repeat"] == 0 else "")
        if step["kept"]:
            outcomes.append(
                f"{label} kept (T = {step['temperature']:.4g}"
                f"{', spread held' if step['scale'] == 'held' else ''}), "
                f"F2 {step['score_before']:.4f} "
                f"-> {c['selection_score']:.4f}"
            )
        else:  # the server's words for why (core.records.Refinement.not_kept_reason)
            outcomes.append(f"{label} not kept, " + step["not_kept_reason"])
    kept = sum(c["refinement"]["kept"] for c in choices)
    refined = f"refinement kept in {kept} of 2 repeats (5-fold CV): " + "; ".join(outcomes)
    assert refined in table.stdout, table.stdout

    # The model's id alone, for MODEL=$(metro result JOB --model-id).
    only = metro(live, "result", job_id, "--model-id")
    assert (only.returncode, only.stdout, only.stderr) == (0, f"{model_id}\n", "")

    # A choice's warning is a note on stderr, as `watch` writes it: the report on stdout still
    # ends on the model's line, and `| tail -1` still gives the model.
    stored = _job_choices(live, job_id)
    warned = [dict(stored[0], warnings=[{"code": "few_true_positives", "message": "thin"}])]
    _set_job(live, job_id, choices=warned + stored[1:])
    try:
        noted = metro(live, "result", job_id)
    finally:
        _set_job(live, job_id, choices=stored)
    assert noted.returncode == 0, noted.stderr
    assert "warning: repeat 0: thin" in noted.stderr, noted.stderr
    assert "warning" not in noted.stdout and noted.stdout.splitlines()[-1] == f"model {model_id}"

    info = manifest(live, model_id)
    weights = tmp_path / "weights.safetensors"
    got = metro(live, "download", model_id, "--output", str(weights))
    assert got.returncode == 0, got.stderr
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == info["weights_sha256"]
    got = metro(live, "download", model_id, "--format", "onnx", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    onnx_file = tmp_path / f"model-{model_id}.onnx"
    assert hashlib.sha256(onnx_file.read_bytes()).hexdigest() == info["onnx_sha256"]
    # A job id stands for the job's delivered model.
    by_job = tmp_path / "by-job"
    by_job.mkdir()
    got = metro(live, "download", job_id, "--format", "onnx", "--output", str(by_job))
    assert got.returncode == 0, got.stderr
    assert (by_job / onnx_file.name).read_bytes() == onnx_file.read_bytes()
    # A folder the library loads as a model (the weights alone were none for it), deciding as
    # the service's endpoint does; a folder already holding files is not written into.
    folder = tmp_path / "bundle"
    got = metro(live, "download", job_id, "--format", "folder", "--output", str(folder))
    assert got.returncode == 0, got.stderr
    from metro_cli.download import FOLDER_FILES

    from metro import load_classifier
    from metro.serialization import MANIFEST_FILE, WEIGHTS_FILE

    assert FOLDER_FILES == (WEIGHTS_FILE, MANIFEST_FILE)
    loaded = load_classifier(folder)
    assert (folder / WEIGHTS_FILE).read_bytes() == weights.read_bytes()
    # Into a directory that holds files, as the file formats write into one: model-<id>/ in
    # it; a second time that folder is not written over. A new folder may be named dir/.
    again = metro(live, "download", job_id, "--format", "folder", "--output", str(folder))
    assert again.returncode == 0, again.stderr
    assert load_classifier(folder / f"model-{model_id}").manifest_ == loaded.manifest_
    third = metro(live, "download", job_id, "--format", "folder", "--output", str(folder))
    assert third.returncode == 1 and "not an empty folder" in third.stderr, third.stderr
    fresh = metro(live, "download", job_id, "--format", "folder", "-o", f"{tmp_path}/fresh/")
    assert fresh.returncode == 0 and (tmp_path / "fresh" / WEIGHTS_FILE).is_file(), fresh.stderr

    # Rows with the label column too, and the features in another order: the model's
    # feature columns are picked by name.
    rows = tmp_path / "rows.csv"
    lines = train.read_text().splitlines()[:8]
    rows.write_text("\n".join(",".join(reversed(line.split(","))) for line in lines) + "\n")
    scores = tmp_path / "scores.csv"
    got = metro(live, "predict", model_id, "--input", str(rows), "--output", str(scores))
    assert got.returncode == 0, got.stderr
    with scores.open() as handle:
        written = list(csv.DictReader(handle))
    assert len(written) == 7  # one per input row
    assert list(written[0]) == ["margin", "label"]  # the raw h(x), named for what it is
    # The label is the margin's sign (the tuned threshold is folded into the model).
    assert all((float(r["margin"]) >= 0) == (r["label"] == "1") for r in written)
    # Without --output, the same CSV on stdout (and the count on stderr).
    piped = metro(live, "predict", model_id, "--input", str(rows))
    assert piped.returncode == 0, piped.stderr
    assert list(csv.DictReader(piped.stdout.splitlines())) == written
    assert "scored 7 rows; positive label 1" in " ".join(piped.stderr.split())
    by_job_id = metro(live, "predict", job_id, "--input", str(rows))
    assert (by_job_id.returncode, by_job_id.stdout) == (0, piped.stdout), by_job_id.stderr
    features = [line.split(",")[:-1] for line in lines[1:]]  # the file's own order, y last
    local = loaded.decision_function(np.array(features, dtype=np.float32))
    np.testing.assert_allclose(local, [float(r["margin"]) for r in written], rtol=1e-5, atol=1e-5)


def test_predict_into_a_pipe_that_closes_early_stops_quietly(live: Live, tmp_path: Path) -> None:
    """`metro predict ... | head -2`: once head has read its lines, the rest of the output has
    no reader; metro stops as Unix tools do, with SIGPIPE's status (141) and nothing on stderr."""
    train = write_training_csv(tmp_path / "train.csv", n=120, seed=3)
    done = metro(
        live, "submit", "-d", str(train), "--label-column", "y", "-m", "f1", "--n-lambdas", "3",
        "--max-iter", "20", "--set", "search.cv=null", "--set", "search.refine=off", "--watch",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.splitlines()[0]
    many = write_training_csv(tmp_path / "many.csv", n=20_000, seed=4)  # ~400 kB of output
    line = (
        f"{sys.executable} -m cli.main predict {job_id} --input {many} --batch-size 10000"
        ' | head -2; echo "status ${PIPESTATUS[0]}"'
    )
    piped = subprocess.run(
        ["bash", "-c", line], cwd=ROOT, env=live.env, capture_output=True, text=True, timeout=120
    )
    assert piped.stderr == "", piped.stderr
    head, status = piped.stdout.splitlines()[:2], piped.stdout.splitlines()[-1]
    assert head[0] == "margin,label" and len(piped.stdout.splitlines()) == 3, piped.stdout
    assert status == "status 141", piped.stdout


def test_result_model_id_and_a_job_without_a_model(live: Live) -> None:
    job_id = _job_mid_search(live, [(0, 0.9)])
    try:
        for args in (["result", job_id, "--model-id"], ["predict", job_id, "-i", "x.csv"]):
            assert_one_line_error(
                metro(live, *args), f"job {job_id} has no model: it is running",
                f"`metro watch {job_id}` follows it",
            )  # fmt: skip
    finally:
        _set_job(live, job_id, state="failed", failure_reason="test over", lease_owner=None)
    assert_one_line_error(metro(live, "download", job_id), "has no model: it is failed: test over")
    assert_one_line_error(  # not "not ready": it never will be, and why
        metro(live, "result", job_id), "Conflict (409)", f"job {job_id} failed: test over"
    )
    absent = str(uuid.uuid4())
    assert_one_line_error(metro(live, "result", absent, "--model-id"), "Not found (404)", absent)
    assert_one_line_error(
        metro(live, "download", absent), "Not found (404)", "nor is it a job's id"
    )
    assert_one_line_error(metro(live, "result", absent, "--model-id", "--json"), "give one of them")


def test_a_constrained_job_from_the_command_line(live: Live, tmp_path: Path) -> None:
    """--at-least / --at-most make the job's constraints (after a job file's; METRIC=BOUND@C
    asks for a confidence); watch and result show each one's value beside the metric, for METRO
    and the baseline, and the confidence a constraint must hold at, where it has one."""
    job_file = tmp_path / "job.yaml"
    job_file.write_text("constraints: [{metric: recall, at_least: 0.7, confidence: 0.9}]\n")
    done = metro(
        live, "submit", "-d", "builtin://synthetic?n_samples=400&n_features=5&positive_fraction=0.3",
        "-f", str(job_file), "-m", "precision", "--at-most", "false_positive_rate=0.5@0.8",
        "--n-lambdas", "3", "--max-iter", "20", "--baseline", "koyejo1",
        "--set", "search.cv=null", "--set", "search.multipliers=[0, 4]", "--watch",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.splitlines()[0].strip()
    raw = httpx.get(
        f"{live.url}/v1/jobs/{job_id}/result", headers={"Authorization": f"Bearer {live.api_key}"}
    ).json()
    assert [c["name"] for c in raw["constraints"]] == [
        "recall >= 0.7", "false_positive_rate <= 0.5"
    ]  # fmt: skip
    [choice] = raw["choices"]
    recall, fpr = choice["constraint_values"]
    met = "met" if choice["constraints_satisfied"] else "NOT met"
    assert [c["confidence"] for c in raw["constraints"]] == [0.9, 0.8]
    where = (
        f"constraints {met} where chosen: Recall ≥ 0.7 (90% confidence) {recall:.4f}; "
        f"False positive rate ≤ 0.5 (80% confidence) {fpr:.4f} (validation)"
    )
    assert where in done.stdout, done.stdout

    table = metro(live, "result", job_id)
    assert table.returncode == 0, table.stderr
    out = table.stdout
    assert (
        "Precision under Recall ≥ 0.7 (90% confidence), "
        "False positive rate ≤ 0.5 (80% confidence), higher is better"
    ) in out, out
    summary = {(s["method"], s["split"]): s for s in raw["summary"]}
    lines = out.splitlines()
    for i, name in enumerate(
        ["Recall ≥ 0.7 (90% confidence)", "False positive rate ≤ 0.5 (80% confidence)"]
    ):
        row = next(line for line in lines if name in line and "test" in line)
        for method in ("metro", "koyejo1"):
            assert f"{summary[(method, 'test')]['constraint_means'][i]:.4f}" in row, row
    held = next(line for line in lines if "all hold" in line and "test" in line)
    words = [
        "yes" if summary[(m, "test")]["constraints_held"] else "no" for m in ("metro", "koyejo1")
    ]
    assert [c.strip() for c in held.split("│") if c.strip()][-2:] == words, held
    assert where in out


def _job_mid_search(live: Live, steps: list[tuple[int | None, float | None]]) -> str:
    """A running job (held by a worker that is not there) whose trace has these (fold,
    validation metric) steps and whose search has not chosen yet: what `metro watch` sees
    between two polls of a real search, held still."""
    from datetime import UTC, datetime, timedelta

    from core.db.models import Job, LambdaStep
    from tests.worker.test_pipeline import _insert_job

    body = {
        "metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"},
        "search": {"strategy": "grid", "n_lambdas": 3},
    }  # fmt: skip
    job_id = _insert_job(live.cluster, body)
    now = datetime.now(UTC)
    with live.cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        job.state, job.lease_owner, job.attempts = "running", "elsewhere", 1
        job.lease_expires_at, job.started_at = now + timedelta(hours=1), now
        job.progress, job.current_lambda = 0.3, -0.5
        session.add_all(
            LambdaStep(job_id=job.id, repeat=0, step=i, fold=fold, lambda_=-0.25 * (1 + i % 3),
                       shift="minimal", validation_metric=value)
            for i, (fold, value) in enumerate(steps)
        )  # fmt: skip
        session.commit()
    return job_id


def _set_job(live: Live, job_id: str, **values: object) -> None:
    from core.db.models import Job

    with live.cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        for name, value in values.items():
            setattr(job, name, value)
        session.commit()


def _job_choices(live: Live, job_id: str) -> list[dict]:
    from core.db.models import Job

    with live.cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None and job.choices is not None
        return [dict(c) for c in job.choices]


def test_watch_names_the_best_score_so_far_apart_from_the_chosen_one(live: Live) -> None:
    job_id = _job_mid_search(
        live, [(0, 0.90), (0, 0.95), (0, None), (1, 0.93), (1, 0.97), (1, 0.96)]
    )
    try:
        # Before the search has chosen: the best held-out score of one step, with its fold.
        early = metro(live, "watch", job_id, "--interval", "0.1", "--timeout", "0.3")
        assert_one_line_error(early, "still running")
        assert "best so far F1 0.9700 (fold 2 of 5, held-out)" in early.stdout, early.stdout
        assert "best -" not in early.stdout and "best F1" not in early.stdout

        # Once it has chosen: the selection score, as `metro result` reports it, and nothing
        # of the trace's single-fold scores.
        choice = {
            "repeat": 0, "trained_lambda": -0.5, "shift": "minimal", "ratio_reached": None,
            "tuned_threshold": 0.0, "selection_score": 0.9123,
            "selection_split": "cross-validation", "n_folds": 5, "selection_counts": None,
            "warnings": [],
        }  # fmt: skip
        _set_job(live, job_id, choices=[choice], best_lambda=-0.5)
        chosen = metro(live, "watch", job_id, "--interval", "0.1", "--timeout", "0.3")
        assert_one_line_error(chosen, "still running")
        assert "best F1 0.9123 (5-fold CV)" in chosen.stdout, chosen.stdout
        assert "so far" not in chosen.stdout and "0.9700" not in chosen.stdout
    finally:
        _set_job(live, job_id, state="failed", failure_reason="test over", lease_owner=None)


def test_a_failing_job_makes_watch_exit_nonzero_with_its_reason(live: Live, tmp_path: Path) -> None:
    broken = live.data_dir / f"no-label-{uuid.uuid4().hex[:6]}.csv"
    broken.write_text("a,b,label\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(40)))
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        "metric: {preset: jaccard}\n"
        f"dataset: {{uri: 'file://{broken}'}}\n"
        "search: {strategy: grid, n_lambdas: 3}\n"
        "training: {max_iter: 10}\n"
    )
    done = metro(live, "submit", "--file", str(job_file), "--watch")
    line = assert_one_line_error(done, "failed: label column 'y' not found")
    job_id = done.stdout.strip().splitlines()[0]
    assert job_id in line
    again = metro(live, "watch", job_id)
    assert_one_line_error(again, "label column 'y' not found")
    assert_one_line_error(metro(live, "cancel", job_id), "Conflict (409)")  # it is over


def test_errors_are_one_line(live: Live, tmp_path: Path) -> None:
    absent = str(uuid.uuid4())
    # A bad key, from the flag (which wins over METRO_API_KEY).
    assert_one_line_error(metro(live, "result", absent, "--api-key", "nope"), "401")
    assert_one_line_error(metro(live, "watch", absent), "Not found (404)", absent)
    # A job the API refuses names the field.
    assert_one_line_error(
        metro(live, "submit", "-d", "builtin://breast_cancer", "-m", "f1", "--set",
              "metric.beta=2"),
        "Invalid job (422)", "metric.beta", "it takes 'zero_division'",
    )  # fmt: skip
    # What the API's document says (its presets, its fields) is checked before anything is sent:
    # a flag's value as it is parsed (a usage error, exit 2), a job file's or --set's after.
    usage = metro(live, "submit", "-d", "builtin://breast_cancer", "--metric", "no_such_metric")
    assert usage.returncode == 2 and len(usage.stderr.strip().splitlines()) == 1, usage.stderr
    assert "'--metric'" in usage.stderr and "'no_such_metric' is not one of" in usage.stderr
    assert_one_line_error(
        metro(live, "submit", "-d", "builtin://breast_cancer", "--set",
              "metric.preset=no_such_metric"),
        "job field 'metric.preset'", "'no_such_metric' is not one of accuracy,",
    )  # fmt: skip
    assert_one_line_error(
        metro(live, "submit", "-d", "builtin://breast_cancer", "-m", "precision", "--set",
              "metric.min_recall=0.8"),
        "unknown field(s) in the job: metric.min_recall",
    )  # fmt: skip
    assert_one_line_error(
        metro(live, "submit", "-d", "builtin://breast_cancer", "-m", "f1", "--set", "serach={}"),
        "unknown field(s) in the job: serach (did you mean 'search'?)",
    )  # fmt: skip
    # A bound no classifier could miss or meet: the server's check, naming the constraint.
    assert_one_line_error(
        metro(live, "submit", "-d", "builtin://breast_cancer", "-m", "f1",
              "--at-least", "recall=1.2"),
        "Invalid job (422)", "constraints.0.at_least: at_least 1.2 is outside",
    )  # fmt: skip
    assert_one_line_error(metro(live, "download", "not-an-id"), "not a model id")
    # Uploads: the URI alone on stdout; a file a job could not load is refused at once.
    train = write_training_csv(tmp_path / "t.csv")
    up = metro(live, "upload", str(train), "--label-column", "y")
    assert up.returncode == 0 and up.stdout.startswith("dataset://"), up.stderr
    assert "240 rows" in up.stderr
    assert_one_line_error(  # checked before the upload, naming the columns there are
        metro(live, "upload", str(train), "--label-column", "target"),
        "label column 'target' not found", "'a', 'b', 'c', 'd', 'y'",
    )  # fmt: skip
    assert_one_line_error(
        metro(live, "predict", absent, "-i", str(tmp_path / "none.csv"), "-o", "x.csv"), "404"
    )
    # Unreachable, or no key at all.
    assert_one_line_error(
        metro(live, "result", absent, "--url", "http://127.0.0.1:9"), "cannot reach"
    )
    assert_one_line_error(metro(None, "result", absent, env={"METRO_API_KEY": ""}), "no API key")


def test_admin_prunes_finished_jobs_from_the_command_line(live: Live) -> None:
    """`metro admin prune-jobs`: what it would delete and did, on stdout a job a line; a state
    that is not a finished one is refused in one line."""
    job = metro(live, "submit", "-d", "builtin://breast_cancer", "-m", "f1", "--n-lambdas", "3")
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    assert metro(live, "cancel", job_id).returncode == 0
    from sqlalchemy import select

    from core.db.models import Job, Tenant

    with live.cluster.app.state.sessionmaker() as session:  # the tenant of the test's key
        tenant = session.scalar(
            select(Tenant.name)
            .join(Job, Job.tenant_id == Tenant.id)
            .where(Job.id == uuid.UUID(job_id))
        )
    for dry in (True, False):
        done = metro(live, "admin", "prune-jobs", "--older-than", "0", "--state", "cancelled",
                     "--tenant", tenant, *(["--dry-run"] if dry else []),
                     env=live.cluster.env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert job_id in done.stdout.split(), done.stdout
        assert ("would delete" if dry else "deleted") in done.stderr, done.stderr
    assert_one_line_error(metro(live, "result", job_id), "404")
    assert_one_line_error(
        metro(live, "admin", "prune-jobs", "--older-than", "1", "--state", "running",
              env=live.cluster.env),
        "only finished jobs are pruned, not running ones",
    )  # fmt: skip


def test_usage_errors_are_one_line_naming_the_option() -> None:
    cases = [
        (["predict", str(uuid.uuid4())], "error: missing option '--input' / '-i'"),
        (["admin", "create-key"], "error: missing option '--tenant'"),
        (["admin", "prune-jobs", "--older-than", "1e6"], "error: invalid value for '--older-than'"),
        (["submit", "--n-lambdas", "many"], "error: invalid value for '--n-lambdas'"),
        (["sumbit"], "error: no such command 'sumbit'"),
        (["submit", "--at-least", "recall"], "error: invalid value for '--at-least': 'recall' is"),
        (
            ["submit", "--at-most", "recall=high"],
            "error: invalid value for '--at-most': 'recall=high': the bound 'high' is not a number",
        ),
    ]
    for args, start in cases:
        done = metro(None, *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(start), (args, done.stderr)
        listed = "commands" if "no such command" in start else "options"
        assert f"--help` lists the {listed}" in lines[0]
        assert "Usage:" not in done.stderr and "╭" not in done.stderr and done.stdout == ""
    # No arguments at all still shows the help, as before.
    assert "Usage: metro" in metro(None).stdout + metro(None).stderr


def test_a_server_command_without_the_server_installed_says_so(capsys) -> None:
    """With the client installed alone, `metro serve` was "no such command 'serve' (`metro
    --help` lists the options)"."""
    from metro_cli.app import create_app, run

    client_alone = create_app(plugins=False)
    for command in ("serve", "worker", "admin"):
        assert run(client_alone, [command]) == 2
        said = " ".join(capsys.readouterr().err.split())
        assert said.startswith(f"error: '{command}' is a command of the METRO server, which is "
                               "not installed here (only its client is)"), said  # fmt: skip


def _dataset_ids(live: Live) -> set[str]:
    r = httpx.get(
        f"{live.url}/v1/datasets", params={"limit": 200},
        headers={"Authorization": f"Bearer {live.api_key}"}, timeout=10,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    return {d["id"] for d in r.json()["items"]}


def test_submit_checks_a_local_file_before_uploading_it(live: Live, tmp_path: Path) -> None:
    churn = tmp_path / "churn.csv"
    churn.write_text(
        # tenure not a row number (which the upload's check would warn of, on stderr)
        "tenure,charges,churned\n"
        + "".join(f"{(i * 7) % 23},{i * 1.5},{i % 3 == 0:d}\n" for i in range(60))
    )
    before = _dataset_ids(live)
    # No --label-column: the default 'y' is not there, and the error lists the columns.
    line = assert_one_line_error(
        metro(live, "submit", "-d", str(churn), "-m", "f1"),
        "label column 'y' not found", "tenure", "charges", "churned", "--label-column",
    )  # fmt: skip
    assert "local files are not enabled" not in line
    # A file that does not exist is named as such, not as a server setting.
    line = assert_one_line_error(
        metro(live, "submit", "-d", str(tmp_path / "chrun.csv"), "-m", "f1"), "no such file"
    )
    assert "chrun.csv" in line and "not enabled" not in line
    # A positive label the column does not hold.
    assert_one_line_error(
        metro(live, "submit", "-d", str(churn), "--label-column", "churned",
              "--positive-label", "2", "-m", "f1"),
        "positive_label 2 is not one of the labels",
    )  # fmt: skip
    # A job the server refuses (a metric parameter precision does not take, a bound out of its
    # metric's range): the file went up for it, and is deleted again.
    for refused, fragment in [
        (["-m", "precision", "--set", "metric.beta=2"], "metric.beta"),
        (["-m", "f1", "--at-most", "recall=-1"], "constraints.0.at_most"),
    ]:
        assert_one_line_error(
            metro(live, "submit", "-d", str(churn), "--label-column", "churned", *refused),
            "Invalid job (422)", fragment, "its upload was deleted, nothing is left on the server",
        )  # fmt: skip
    assert _dataset_ids(live) == before, "a refused submission left an upload behind"
    # A job file naming the local file by its path: the server reads a URI without a scheme as
    # a path of its own, and the refusal says how to upload it instead.
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps({"metric": {"preset": "f1"}, "dataset": {"uri": str(churn)}}))
    assert_one_line_error(
        metro(live, "submit", "-f", str(job_file)),
        "Invalid job (422)", f"is a file on this machine: give it with --dataset {churn}",
    )  # fmt: skip


def test_submit_with_an_idempotency_key_and_a_local_file_can_be_run_again(
    live: Live, tmp_path: Path
) -> None:
    """Each run uploaded the file anew (a new dataset:// URI, so another job's spec) and the
    second was refused: "this Idempotency-Key was already used for a different job
    submission", though the help promises the same job."""
    churn = tmp_path / "churn.csv"
    churn.write_text(
        "tenure,charges,churned\n" + "".join(f"{i},{i * 2.5},{i % 4 == 0:d}\n" for i in range(60))
    )
    before = _dataset_ids(live)
    key = f"retry-{uuid.uuid4()}"
    args = (
        "submit", "-d", str(churn), "--label-column", "churned", "--positive-label", "1",
        "-m", "f1", "--n-lambdas", "3", "--max-iter", "10", "--idempotency-key", key,
    )  # fmt: skip
    first = metro(live, *args)
    assert first.returncode == 0, first.stderr
    again = metro(live, *args)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == first.stdout.strip()  # the same job
    assert "an upload of the same bytes" in again.stderr
    assert len(_dataset_ids(live) - before) == 1  # one upload, not two
    # Another key on the same bytes takes that upload too; a job of its own.
    other = metro(live, *args[:-1], f"other-{uuid.uuid4()}")
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() != first.stdout.strip()
    assert len(_dataset_ids(live) - before) == 1


def test_positive_label_in_the_json_form_the_help_shows(live: Live, tmp_path: Path) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text(
        "a,b,answer\n"
        + "".join(f"{i},{(i * 7) % 11},{'yes' if i % 3 == 0 else 'no'}\n" for i in range(60))
    )
    assert '"yes"' in metro(None, "submit", "--help").stdout  # the form the help text shows
    up = metro(live, "upload", str(answers), "--label-column", "answer", "--positive-label",
               '"yes"')  # fmt: skip
    assert up.returncode == 0, up.stderr
    done = metro(
        live, "submit", "-d", str(answers), "--label-column", "answer",
        "--positive-label", '"yes"', "-m", "f1", "--n-lambdas", "3", "--max-iter", "10",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    r = httpx.get(
        f"{live.url}/v1/jobs/{done.stdout.strip()}",
        headers={"Authorization": f"Bearer {live.api_key}"}, timeout=10,
    )  # fmt: skip
    assert r.json()["spec"]["dataset"]["positive_label"] == "yes"


def test_numbers_of_several_repeats_are_labelled_with_their_repeat() -> None:
    """What `metro result` and `metro watch` print from a result's choices, without a server:
    every per-repeat number says which repeat it is, and none of the lines starts with "model "
    (that is the last line of `metro result`, the model's id)."""
    from types import SimpleNamespace

    from metro_cli.choices import choices_text, constraint_label, refinement_text

    def choice(
        repeat: int, lam: float, score: float, before: float, kept: bool, scale: str = "free"
    ) -> Any:
        step = SimpleNamespace(
            kept=kept, temperature=0.2 if kept else None, score_before=before,
            scale=scale if kept else None,
            not_kept_reason=None if kept else f"no refined model beat the choice's {before:.4f}",
        )  # fmt: skip
        return SimpleNamespace(
            repeat=repeat, trained_lambda=lam, shift="minimal", ratio_reached=None,
            selection_score=score, selection_split="cross-validation", n_folds=5,
            refinement=step,
        )  # fmt: skip

    one = [choice(0, -0.5, 0.9, 0.9, False)]
    assert refinement_text(one, "F2") == (
        "refinement not kept: no refined model beat the choice's 0.9000 (5-fold CV)"
    )
    three = [
        choice(0, -0.8333, 0.8883, 0.8883, False),
        choice(1, -0.5833, 0.93, 0.91, True),
        choice(2, -0.8333, 0.9117, 0.9117, False),
    ]
    assert refinement_text(three, "F2") == (
        "refinement kept in 1 of 3 repeats (5-fold CV): repeat 0 (the model delivered) not "
        "kept, no refined model beat the choice's 0.8883; repeat 1 kept (T = 0.2), F2 0.9100 "
        "-> 0.9300; repeat 2 not kept, no refined model beat the choice's 0.9117"
    )
    # A stage of the held-spread schedule (search.refine_scale) is named as one.
    held = [choice(0, -0.5833, 0.93, 0.91, True, scale="held")]
    assert refinement_text(held, "F2") == (
        "refinement kept (T = 0.2, spread held): F2 0.9100 -> 0.9300 (5-fold CV)"
    )
    # A step that was not kept says why in the server's words (their wording is
    # tests/core/test_records.py's), and no more than "not kept" without them.
    dropped = choice(0, -0.5, 0.25, 0.25, False)
    dropped.refinement.not_kept_reason = "the server's reason"
    assert refinement_text([dropped], "F2") == (
        "refinement not kept: the server's reason (5-fold CV)"
    )
    dropped.refinement.not_kept_reason = None
    assert refinement_text([dropped], "F2") == "refinement not kept (5-fold CV)"
    three[1].ratio_reached, three[2].ratio_reached = -0.61, -0.7
    text = choices_text(three)
    assert text is not None and not text.startswith("model ")
    assert text == (
        "trained λ -0.8333 (shift minimal) in repeat 0, the model delivered; each repeat chose: "
        "repeat 0 -0.8333 (minimal), repeat 1 -0.5833 (minimal), repeat 2 -0.8333 (minimal); "
        "ratio reached repeat 0 -, repeat 1 -0.61, repeat 2 -0.7"
    )
    assert constraint_label("Recall ≥ 0.8", 0.9) == "Recall ≥ 0.8 (90% confidence)"
    assert constraint_label("Recall ≥ 0.8", 0.975) == "Recall ≥ 0.8 (97.5% confidence)"
    assert constraint_label("Recall ≥ 0.8", None) == "Recall ≥ 0.8"


def test_an_unmet_constraint_shows_the_tightest_bound_some_fit_met() -> None:
    """`metro result` / `watch` under a constraint no fit met: beside its value where chosen,
    the tightest bound some fit met on its own (the choice's constraint_reach), per repeat; a
    met constraint, or a result without the field (an older server), shows the value alone."""
    from types import SimpleNamespace

    from metro_cli.choices import chosen_constraints_text

    def choice(value: float, met: bool, reach: list[float | None] | None, repeat: int = 0) -> Any:
        return SimpleNamespace(
            repeat=repeat, constraint_values=[value], constraints_satisfied=met,
            constraint_reach=reach, selection_split="cross-validation", n_folds=5,
        )  # fmt: skip

    names = ["Precision ≥ 0.7 (90% confidence)"]
    assert chosen_constraints_text([choice(0.65, False, [0.5812])], names) == (
        "constraints NOT met where chosen: Precision ≥ 0.7 (90% confidence) 0.6500 "
        "(tightest met: 0.5812) (5-fold CV)"
    )
    assert chosen_constraints_text(
        [choice(0.65, False, [0.5812]), choice(0.6, False, [0.55], repeat=1)], names
    ) == (
        "constraints NOT met where chosen: Precision ≥ 0.7 (90% confidence) 0.6500, 0.6000 "
        "(tightest met: 0.5812, 0.5500) (5-fold CV, 2 repeats)"
    )
    for met, reach in [(True, [0.81]), (False, None), (False, [None])]:
        text = chosen_constraints_text([choice(0.75, met, reach)], names)
        assert text is not None and "tightest" not in text
    # Only the repeat that missed carries a reach, and it is named.
    assert chosen_constraints_text(
        [choice(0.72, True, [0.9]), choice(0.6, False, [0.55], repeat=1)], names
    ) == (
        "constraints NOT met (by repeat 1) where chosen: Precision ≥ 0.7 (90% confidence) "
        "0.7200, 0.6000 (tightest met: repeat 1 0.5500) (5-fold CV, 2 repeats)"
    )
    # A multi-label job chose per label: the label that missed is named, the others met.
    labelled = [
        choice(0.82, True, [0.88]), choice(0.93, True, [0.99]), choice(0.61, False, [0.6108])
    ]  # fmt: skip
    for c, label in zip(labelled, ["red", "green", "blue"], strict=True):
        c.label = label
    assert chosen_constraints_text(labelled, ["Recall ≥ 0.8"]) == (
        "constraints NOT met (by blue) where chosen: Recall ≥ 0.8 red 0.8200, green 0.9300, "
        "blue 0.6100 (tightest met: blue 0.6108) (5-fold CV)"
    )


def _write_table(path: Path, header: list[str], rows: Iterable[list[Any]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def test_a_macro_f1_job_from_the_command_line(live: Live, tmp_path: Path) -> None:
    """An averaged job from a local multi-class CSV: --average, the per-class table of
    `metro result`, and `metro predict` writing each class's margin beside the label."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.csv"
    names = ["setosa", "versicolor", "virginica"]
    _write_table(path, ["a", "b", "c", "d", "species"],
                 ([*row, names[label]] for row, label in zip(X, y, strict=True)))  # fmt: skip
    done = metro(
        live, "submit", "-d", str(path), "--label-column", "species", "-m", "f1",
        "--average", "macro", "--n-lambdas", "3", "--max-iter", "30", "--refine", "off",
        "--watch",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.splitlines()[0].strip()
    raw = httpx.get(
        f"{live.url}/v1/jobs/{job_id}/result", headers={"Authorization": f"Bearer {live.api_key}"}
    ).json()
    # watch names each class's lambda and the average the job chose by, never one lambda
    lambdas = ", ".join(f"{c['label']} {c['trained_lambda']:.4g}" for c in raw["classes"])
    assert f"trained λ per class: {lambdas}" in done.stdout, done.stdout
    # worded as a binary job's choice is ("cross-validation" here, "5-fold CV" everywhere else)
    assert f"best F1 (macro) {raw['selection']['mean']:.4f} (5-fold CV)" in done.stdout
    table = metro(live, "result", job_id)
    assert table.returncode == 0, table.stderr
    out = table.stdout
    assert "F1 (macro), higher is better" in out, out  # the dashboard's words
    assert f"METRO chose by F1 (macro) {raw['selection']['mean']:.4f} (5-fold CV)" in out
    assert "Per class: F1 of each class" in out
    assert "chosen by: the class's F1 on the held-out rows as its own one-vs-rest" in " ".join(
        out.split()
    )
    for entry in raw["classes"]:
        row = next(line for line in out.splitlines() if f"│ {entry['label']} " in line)
        test = next(s for s in entry["summary"] if (s["method"], s["split"]) == ("metro", "test"))
        assert f"{test['mean']:.4f}" in row, row
    scored = metro(live, "predict", job_id, "-i", str(path))
    assert scored.returncode == 0, scored.stderr
    # The averaged model keeps its training ranges too, inside the file's own.
    headers = {"Authorization": f"Bearer {live.api_key}"}
    [model] = [m for m in httpx.get(f"{live.url}/v1/models", headers=headers).json()["items"]
               if m["job_id"] == job_id]  # fmt: skip
    ranges = model["manifest"]["feature_ranges"]
    read = X.astype(np.float32)
    assert len(ranges["min"]) == 4 and all(
        read[:, j].min() <= low <= high <= read[:, j].max()
        for j, (low, high) in enumerate(zip(ranges["min"], ranges["max"], strict=True))
    )
    far = httpx.post(
        f"{live.url}/v1/models/{model['id']}/predict", headers=headers,
        json={"instances": [[ranges["min"][0], ranges["min"][1], 1e4, ranges["max"][3]]]},
    ).json()["out_of_range"]  # fmt: skip
    assert [(c["column"], c["rows_outside"]) for c in far["columns"]] == [("c", 1)]
    lines = list(csv.reader(scored.stdout.splitlines()))
    assert lines[0] == ["margin", "label", "margin:setosa", "margin:versicolor", "margin:virginica"]
    assert len(lines) == 151
    for margin, label, *per_class in lines[1:]:
        values = [float(v) for v in per_class]
        assert label == names[values.index(max(values))] and float(margin) == max(values)


def test_columns_that_are_not_features_are_left_out_from_upload_to_predict(
    live: Live, tmp_path: Path
) -> None:
    """A customer table with an id and a name: `--ignore-columns` leaves them out of the
    upload's check and of training (a text column failed the upload, and a numeric id was a
    feature), and `metro predict` scores the same file, reading the model's features by name."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=160, n_features=3, n_informative=2, n_redundant=0,
                               weights=[0.7], random_state=0)  # fmt: skip
    path = tmp_path / "customers.csv"
    _write_table(path, ["customer_id", "name", "a", "b", "c", "churned"],
                 ([1000 + i, f"client {i}", *row, label]
                  for i, (row, label) in enumerate(zip(X, y, strict=True))))  # fmt: skip
    common = ["-d", str(path), "--label-column", "churned", "-m", "f1", "--n-lambdas", "3",
              "--max-iter", "30", "--refine", "off"]  # fmt: skip
    unknown = metro(live, "submit", *common, "--ignore-columns", "name,zip")
    assert_one_line_error(unknown, "--ignore-columns names ['zip'], not a column")
    # the id kept: the job's delivered choice says it looks like one
    kept = metro(live, "submit", *common, "--ignore-columns", "name", "--watch")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    said = metro(live, "result", kept.stdout.splitlines()[0].strip(), "--json")
    [choice] = json.loads(said.stdout)["choices"]
    [warning] = [w for w in choice["warnings"] if w["code"] == "id_like_feature"]
    assert "'customer_id' hold a different integer on every row" in warning["message"]
    done = metro(live, "submit", *common, "--ignore-columns", "customer_id,name", "--watch")
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.splitlines()[0].strip()
    headers = {"Authorization": f"Bearer {live.api_key}"}
    job = httpx.get(f"{live.url}/v1/jobs/{job_id}", headers=headers).json()
    assert job["state"] == "succeeded", job
    [model] = [m for m in httpx.get(f"{live.url}/v1/models", headers=headers).json()["items"]
               if m["job_id"] == job_id]  # fmt: skip
    assert model["manifest"]["feature_names"] == ["a", "b", "c"]
    scored = metro(live, "predict", job_id, "-i", str(path))
    assert scored.returncode == 0, scored.stderr
    assert len(scored.stdout.splitlines()) == 161


def test_predict_names_the_columns_outside_the_training_ranges(live: Live, tmp_path: Path) -> None:
    """A model scores a value 1000 times its training range as readily as any other: the
    job's manifest keeps each feature's training min and max, the endpoint names the columns
    of a request outside them, and `metro predict` says so on stderr (the CSV unchanged)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=160, n_features=3, n_informative=2, n_redundant=0,
                               random_state=1)  # fmt: skip
    path = tmp_path / "train.csv"
    _write_table(path, ["a", "b", "c", "y"],
                 ([*row, label] for row, label in zip(X, y, strict=True)))  # fmt: skip
    done = metro(
        live, "submit", "-d", str(path), "--label-column", "y", "-m", "f1", "--n-lambdas", "3",
        "--max-iter", "30", "--refine", "off", "--watch",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.splitlines()[0].strip()
    headers = {"Authorization": f"Bearer {live.api_key}"}
    [model] = [m for m in httpx.get(f"{live.url}/v1/models", headers=headers).json()["items"]
               if m["job_id"] == job_id]  # fmt: skip
    ranges = model["manifest"]["feature_ranges"]
    # Over the rows it was trained on (as float32, as the worker reads them): inside the
    # file's own.
    low, high = np.array(ranges["min"]), np.array(ranges["max"])
    read = X.astype(np.float32)
    assert np.all(read.min(axis=0) <= low) and np.all(high <= read.max(axis=0))
    assert np.all(low < high)
    middle = ((low + high) / 2).tolist()
    url = f"{live.url}/v1/models/{model['id']}/predict"
    inside = httpx.post(url, headers=headers, json={"instances": [middle, low.tolist()]}).json()
    assert inside["out_of_range"] is None
    far = [middle, [middle[0], 1000 * float(np.abs(X[:, 1]).max()), middle[2]], middle]
    notice = httpx.post(url, headers=headers, json={"instances": far}).json()["out_of_range"]
    assert notice["n_rows"] == 1 and notice["columns"] == [
        {"column": "b", "index": 1, "rows_outside": 1, "training_min": ranges["min"][1],
         "training_max": ranges["max"][1]},
    ]  # fmt: skip

    calm, loud = tmp_path / "inside.csv", tmp_path / "outside.csv"
    _write_table(calm, ["a", "b", "c"], [middle, middle])
    _write_table(loud, ["a", "b", "c"], far)
    quiet = metro(live, "predict", job_id, "-i", str(calm))
    assert quiet.returncode == 0 and "outside" not in quiet.stderr, quiet.stderr
    said = metro(live, "predict", job_id, "-i", str(loud), "--batch-size", "2")
    assert said.returncode == 0, said.stderr
    assert len(said.stdout.splitlines()) == 4  # the header and every row, scored all the same
    [line] = [w for w in said.stderr.splitlines() if "outside" in w]
    assert line.startswith("warning: 1 of 3 rows hold values outside the range the model was "
                           "trained on: b (1 rows; trained on ["), line  # fmt: skip
    assert "a range check, not a drift test" in line


def test_a_multilabel_submission_is_refused_at_upload_for_a_label_not_0_or_1(
    live: Live, tmp_path: Path
) -> None:
    """A label column of yes/no passed the upload (checked for its shape only) and the job
    (which cannot read the file), and the job failed on a worker; now the upload is checked as
    the job reads it, and refused before any job is made. `metro upload` says what its check
    found (an id-like feature) on stderr."""
    rows = [[i % 7, 1000 + i, i % 2, "yes" if i % 3 else "no"] for i in range(80)]
    path = tmp_path / "tags.csv"
    _write_table(path, ["a", "customer", "red", "blue"], rows)
    headers = {"Authorization": f"Bearer {live.api_key}"}
    jobs_before = len(httpx.get(f"{live.url}/v1/jobs", headers=headers).json()["items"])
    refused = metro(
        live, "submit", "-d", str(path), "--label-columns", "red,blue", "-m", "f1",
        "--average", "macro", "--n-lambdas", "3",
    )  # fmt: skip
    assert_one_line_error(refused, "label column 'blue' must hold 0 and 1")
    assert len(httpx.get(f"{live.url}/v1/jobs", headers=headers).json()["items"]) == jobs_before
    uploaded = metro(live, "upload", str(path), "--label-columns", "red,customer",
                     "--ignore-columns", "blue")  # fmt: skip
    assert uploaded.returncode == 1 and "label column 'customer' must hold 0 and 1" in (
        uploaded.stderr
    ), uploaded.stderr
    uploaded = metro(live, "upload", str(path), "--label-column", "red", "--positive-label", "1",
                     "--ignore-columns", "blue")  # fmt: skip
    assert uploaded.returncode == 0, uploaded.stderr
    assert "warning: tags.csv: id_like_feature: the feature(s) 'customer' hold" in (uploaded.stderr)
    both = metro(live, "upload", str(path), "--label-column", "red", "--label-columns", "a,red")
    assert_one_line_error(both, "not both")


def test_a_multilabel_jobs_result_names_its_labels(live: Live, tmp_path: Path) -> None:
    """Each row of the per-target table is a label column: "Per label", not "Per class"."""
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=120, n_features=4, n_classes=2, random_state=0)
    path = tmp_path / "tags.csv"
    _write_table(path, ["a", "b", "c", "d", "red", "blue"],
                 ([*x, *y] for x, y in zip(X, Y, strict=True)))  # fmt: skip
    done = metro(
        live, "submit", "-d", str(path), "--label-columns", "red,blue", "-m", "f1",
        "--average", "macro", "--n-lambdas", "3", "--max-iter", "20", "--refine", "off",
        "--watch",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = metro(live, "result", done.stdout.splitlines()[0].strip()).stdout
    assert "Per label: F1 of each label" in out and "Per class" not in out, out
    assert "chosen by: the label's F1" in " ".join(out.split())


def test_an_averaged_job_on_a_two_class_text_column_is_submitted(live: Live, tmp_path: Path):
    """Averaged over a yes/no column, no class is the positive one: the upload's binary check
    asked for --positive-label, and the job then refused it (it does not apply with average)."""
    path = tmp_path / "answers.csv"
    path.write_text("a,b,answer\n" + "".join(f"{i},{i % 5},{'yes' if i % 3 else 'no'}\n"
                                               for i in range(60)))  # fmt: skip
    done = metro(
        live, "submit", "-d", str(path), "--label-column", "answer", "-m", "f1",
        "--average", "macro", "--n-lambdas", "3", "--max-iter", "10", "--refine", "off",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = done.stdout.strip()
    job = httpx.get(
        f"{live.url}/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {live.api_key}"}
    ).json()
    assert job["spec"]["metric"]["average"] == "macro", job
    assert job["spec"]["dataset"]["label_column"] == "answer"
    metro(live, "cancel", job_id)


def test_a_cuda_job_no_worker_takes_says_why_it_waits(live: Live) -> None:
    """The live cluster's worker serves the cpu queue only: a cuda job sat at "queued 0%" in
    metro watch, and metro submit said nothing, for as long as anyone waited."""
    done = metro(
        live, "submit", "--dataset", "builtin://breast_cancer", "--metric", "f1",
        "--device", "cuda", "--n-lambdas", "3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    try:
        assert "waiting: no worker serving the gpu queue has reported" in done.stderr
        watched = metro(live, "watch", job_id, "--interval", "0.1", "--timeout", "0.5")
        assert watched.returncode == 1 and "Traceback" not in watched.stderr
        waiting, error = watched.stderr.strip().splitlines()  # said once, then the timeout
        assert waiting.startswith("waiting: no worker serving the gpu queue"), watched.stderr
        assert error.startswith("error: ") and "still queued" in error
        assert watched.stdout.count("queued 0%") == 1, watched.stdout
    finally:
        metro(live, "cancel", job_id)
