"""The ``metro`` commands on a user's own data, run as a person runs them against the live server
and worker: a local file checked before it is uploaded, an idempotent resubmission, the positive
label's forms, a multi-class and a multi-label job, columns that are not features, and values
outside a model's training ranges. Split from test_cli.py so that the two run side by side."""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tests.clients.conftest import Live
from tests.clients.test_cli import assert_one_line_error, metro


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
