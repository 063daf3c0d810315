"""Averaged jobs end to end through a real worker: a multi-class and a multi-label table
uploaded, trained for macro-F1, traced per class, scored beside the baselines, downloaded as
ONNX with one score per class, and predicted with the endpoint giving what the ONNX gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris, make_multilabel_classification
from sklearn.metrics import f1_score

from tests.worker.conftest import Cluster, shards_helped

# One METRO search per class (search.multiclass, the default): what most tests here are about;
# the multinomial model has its own test.
FAST = {
    "model": {"kind": "linear"},
    "search": {"n_lambdas": 4, "cv": 3, "refine": "off", "multiclass": "per_class"},
    "training": {"max_iter": 40},
}


def _upload(cluster: Cluster, frame: pd.DataFrame) -> str:
    r = cluster.client.post(
        "/v1/datasets",
        files={"file": ("data.csv", frame.to_csv(index=False).encode(), "text/csv")},
        headers=cluster.headers,
    )
    assert r.status_code == 201, r.text
    return str(r.json()["uri"])


def _upload_checked(cluster: Cluster, frame: pd.DataFrame, label_column: str) -> Any:
    """The upload's answer for ``frame`` checked by its ``label_column`` (status not asserted)."""
    return cluster.client.post(
        "/v1/datasets",
        files={"file": ("data.csv", frame.to_csv(index=False).encode(), "text/csv")},
        data={"label_column": label_column},
        headers=cluster.headers,
    )


def iris_mlp_job(
    cluster: Cluster, *, hidden: int, search: dict, epochs: int, batch_size: int
) -> dict:
    """A macro-F1 job on iris (uploaded, its classes as 0 / 1 / 2) with a one-layer MLP
    trained by SGD, long enough per fit to share or interrupt; the refinement off."""
    X, y = load_iris(return_X_y=True)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(species=y)
    return {
        "metric": {"preset": "f1", "average": "macro"},
        "dataset": {"uri": _upload(cluster, frame), "label_column": "species"},
        "model": {"kind": "mlp", "hidden": [hidden]},
        "search": {**search, "refine": "off"},
        "training": {"optimizer": "sgd", "epochs": epochs, "batch_size": batch_size},
    }


def _onnx_scores(cluster: Cluster, model_id: str, X: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    r = cluster.client.get(
        f"/v1/models/{model_id}/download", params={"format": "onnx"}, headers=cluster.headers
    )
    assert r.status_code == 200
    session = ort.InferenceSession(r.content)
    (out,) = session.run(None, {"x": X.astype(np.float32)})
    return np.asarray(out)


def test_a_multiclass_macro_f1_job(pair: Cluster):
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(species=names)
    uri = _upload(pair, frame)
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {"uri": uri, "label_column": "species"}, **FAST}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    assert job["spec"]["metric"] == {"preset": "f1", "average": "macro"}
    assert job["best_lambda"] is None  # one lambda per class, none for the job

    # The trace: every class's search, numbered in the order they ran, each step naming its class
    trace = pair.trace(job_id)
    assert [s["step"] for s in trace] == list(range(len(trace)))
    assert [s["label"] for s in trace] == sorted(s["label"] for s in trace)
    assert {(s["class_index"], s["label"]) for s in trace} == {
        (0, "setosa"), (1, "versicolor"), (2, "virginica"),
    }  # fmt: skip

    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert result["average"] == "macro" and result["metric_display_name"] == "F1 (macro)"
    assert [c["label"] for c in result["classes"]] == ["setosa", "versicolor", "virginica"]
    assert result["trained_lambda"] is None
    methods = {(s["method"], s["split"]) for s in result["summary"]}
    assert methods == {
        ("metro", "validation"), ("metro", "test"), ("ovr-threshold", "test"),
        ("logistic", "test"), ("logistic-tuned", "test"),
    }  # fmt: skip
    overall = {(r["method"], r["split"]): r for r in result["runs"] if r["class_index"] is None}
    per_class = [r for r in result["runs"] if r["class_index"] is not None]
    assert len(per_class) == 3 * 5  # 3 classes x (metro validation, test, 3 baselines)
    test = overall[("metro", "test")]
    assert sum(test["confusion"].values()) == 3 * 30  # 30 test rows, each in 3 one-vs-rest cells
    metro_test = sorted(
        (r for r in per_class if (r["method"], r["split"]) == ("metro", "test")),
        key=lambda r: r["class_index"],
    )
    # The average is the mean of the classes' own F1s, each from its one-vs-rest counts.
    for r in metro_test:
        c = r["confusion"]
        assert r["value"] == pytest.approx(2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"]))
    assert test["value"] == pytest.approx(np.mean([r["value"] for r in metro_test]))
    assert test["value"] > 0.8
    for entry in result["classes"]:
        choice = next(c for c in result["choices"] if c["label"] == entry["label"])
        assert entry["trained_lambda"] == choice["trained_lambda"]
        assert entry["offset"] == choice["offset"]

    # The model: one ONNX score per class; the endpoint's margins are the ONNX output, and its
    # labels are the argmax's classes, with the test F1 the result reports.
    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    manifest = model["manifest"]
    assert manifest["classes"] == ["setosa", "versicolor", "virginica"]
    assert manifest["decision"] == "argmax" and manifest["labels"] is None
    assert manifest["offsets"] == [c["offset"] for c in result["classes"]]
    onnx = _onnx_scores(pair, model["id"], X)
    r = pair.client.post(
        f"/v1/models/{model['id']}/predict", json={"instances": X.tolist()}, headers=pair.headers
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["classes"] == manifest["classes"]
    np.testing.assert_allclose(np.array(body["class_margins"]), onnx, rtol=1e-4, atol=1e-4)
    expected = np.array(manifest["classes"])[np.argmax(onnx, axis=1)]
    assert body["labels"] == expected.tolist()
    assert f1_score(names, body["labels"], average="macro") > 0.8


def test_a_multilabel_job_decides_each_label_by_its_sign(pair: Cluster):
    X, Y = make_multilabel_classification(n_samples=300, n_features=6, n_classes=3, random_state=0)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    for j, name in enumerate(("red", "green", "blue")):
        frame[name] = Y[:, j]
    uri = _upload(pair, frame)
    job_id = pair.submit(
        {"metric": {"preset": "jaccard", "average": "weighted"},
         "dataset": {"uri": uri, "label_columns": ["red", "green", "blue"]}, "repeats": 2,
         **FAST}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert [c["label"] for c in result["classes"]] == ["red", "green", "blue"]
    # two repeats: a choice per label and repeat, the summaries over both, the model repeat 0's
    assert [(c["repeat"], c["label"]) for c in result["choices"]] == [
        (r, label) for r in (0, 1) for label in ("red", "green", "blue")
    ]
    assert all(s["n"] == 2 for s in result["summary"])
    assert {s["repeat"] for s in pair.trace(job_id)} == {0, 1}
    assert all(c["offset"] is None for c in result["classes"])
    # the multinomial model with tuned offsets is a multi-class baseline only
    assert {s["method"] for s in result["summary"]} == {"metro", "ovr-threshold", "logistic"}
    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    assert model["manifest"]["decision"] == "per_label"
    assert model["manifest"]["offsets"] is None  # no argmax: was a list of zeros
    onnx = _onnx_scores(pair, model["id"], X[:20])
    body = pair.client.post(
        f"/v1/models/{model['id']}/predict",
        json={"instances": X[:20].tolist()},
        headers=pair.headers,
    ).json()
    names = np.array(["red", "green", "blue"])
    assert body["labels"] == [names[row >= 0].tolist() for row in onnx]


def test_a_micro_multilabel_job_delivers_the_offsets_it_tuned_for_the_pooled_metric(
    pair: Cluster,
):
    """metric.average micro over label columns: the labels' offsets, tuned together on the
    pooled held-out margins, are in the result's classes and choices, in the manifest and in
    the delivered model (ONNX and the endpoint decide by score + nothing more); the average
    reported where it chose is the pooled F1 of the counts it reports there."""
    X, Y = make_multilabel_classification(n_samples=300, n_features=6, n_classes=3, random_state=4)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    for j, name in enumerate(("red", "green", "blue")):
        frame[name] = Y[:, j]
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "micro"},
         "dataset": {"uri": _upload(pair, frame), "label_columns": ["red", "green", "blue"]},
         **FAST}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    offsets = [c["offset"] for c in result["classes"]]
    assert all(isinstance(o, float) for o in offsets)
    assert [c["offset"] for c in result["choices"]] == offsets
    assert result["notices"] == []
    [validation] = [
        r for r in result["runs"]
        if r["method"] == "metro" and r["split"] == "validation" and r["class_index"] is None
    ]  # fmt: skip
    tp, fp, fn = (validation["confusion"][k] for k in ("tp", "fp", "fn"))
    assert validation["value"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    assert model["manifest"]["decision"] == "per_label"
    assert model["manifest"]["decision_rule"] == "tuned"
    assert model["manifest"]["offsets"] == pytest.approx(offsets)
    onnx = _onnx_scores(pair, model["id"], X[:30])
    body = pair.client.post(
        f"/v1/models/{model['id']}/predict", json={"instances": X[:30].tolist()},
        headers=pair.headers,
    ).json()  # fmt: skip
    names = np.array(["red", "green", "blue"])
    assert body["labels"] == [names[row >= 0].tolist() for row in onnx]
    refused = pair.client.post(
        "/v1/jobs",
        json={"metric": {"preset": "f1", "average": "micro"},
              "dataset": job["spec"]["dataset"],
              "constraints": [{"metric": "recall", "at_least": 0.5}]},
        headers=pair.headers,
    )  # fmt: skip
    assert refused.status_code == 422, refused.text
    assert "constraints do not apply with average='micro'" in refused.text


def test_a_multilabel_npz_upload_trains_each_label_it_names(pair: Cluster):
    import io

    X, Y = make_multilabel_classification(n_samples=240, n_features=5, n_classes=3, random_state=1)
    buffer = io.BytesIO()
    np.savez(buffer, X=X, y=Y, label_names=np.array(["red", "green", "blue"]))
    r = pair.client.post(
        "/v1/datasets", files={"file": ("labels.npz", buffer.getvalue(), "application/zip")},
        headers=pair.headers,
    )  # fmt: skip
    assert r.status_code == 201, r.text
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {"uri": r.json()["uri"], "label_columns": ["blue", "red"]}, **FAST}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert [c["label"] for c in result["classes"]] == ["blue", "red"]
    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    body = pair.client.post(
        f"/v1/models/{model['id']}/predict", json={"instances": X[:20].tolist()},
        headers=pair.headers,
    ).json()  # fmt: skip
    onnx = _onnx_scores(pair, model["id"], X[:20])
    names = np.array(["blue", "red"])
    assert body["labels"] == [names[row >= 0].tolist() for row in onnx]


def test_an_averaged_jobs_id_like_feature_is_warned_of_as_a_binary_jobs_is(pair: Cluster):
    """A binary job's delivered choice warns of a feature that holds a different integer on
    every row; an averaged job's said nothing (only its upload's answer did)."""
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    names = np.array(["setosa", "versicolor", "virginica"])[y[order]]
    frame = pd.DataFrame(X[order], columns=["a", "b", "c", "d"]).assign(
        customer_id=np.arange(5000, 5000 + len(y)), species=names
    )
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {"uri": _upload(pair, frame), "label_column": "species"},
         "search": {"multiclass": "multinomial"}}
    )  # fmt: skip
    assert pair.wait_state(job_id, timeout=120)["state"] == "succeeded"
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    for choice in result["choices"]:  # every class's model was trained on it
        [warning] = [w for w in choice["warnings"] if w["code"] == "id_like_feature"]
        assert "'customer_id'" in warning["message"]
    assert all(c["warnings"] == ["id_like_feature"] for c in result["classes"])
    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    [said] = [w for w in model["manifest"]["warnings"] if w["code"] == "id_like_feature"]
    assert said["message"].startswith("the feature(s) 'customer_id'")


def test_a_multiclass_job_trains_the_multinomial_model_when_asked(pair: Cluster):
    """A linear multi-class job with search.multiclass multinomial: one multinomial regression
    with tuned offsets, no lambda anywhere (null, not a number), its model the logits plus the
    offsets in safetensors and ONNX alike, deciding as the result's test figures say."""
    from safetensors.numpy import load as load_safetensors

    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(species=names)
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {"uri": _upload(pair, frame), "label_column": "species"},
         "search": {"multiclass": "multinomial"}}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    assert job["spec"]["search"]["multiclass"] == "multinomial"
    assert pair.trace(job_id) == []  # no search per class

    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert result["multiclass"] == "multinomial"
    assert [c["trained_lambda"] for c in result["classes"]] == [None] * 3
    assert [c["tuned_threshold"] for c in result["classes"]] == [0.0] * 3
    assert all(c["trained_lambda"] is None and c["shift"] is None for c in result["choices"])
    assert all(r["lambda"] is None for r in result["runs"])
    test = {r["method"]: r["value"] for r in result["runs"]
            if r["class_index"] is None and r["split"] == "test" and r["repeat"] == 0}  # fmt: skip
    assert test["metro"] > 0.8

    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    manifest = model["manifest"]
    assert manifest["multiclass"] == "multinomial" and manifest["class_lambdas"] is None
    assert manifest["class_thresholds"] == [0.0] * 3
    assert manifest["offsets"] == [c["offset"] for c in result["classes"]]
    onnx = _onnx_scores(pair, model["id"], X)
    r = pair.client.get(
        f"/v1/models/{model['id']}/download", params={"format": "safetensors"},
        headers=pair.headers,
    )  # fmt: skip
    assert r.status_code == 200
    tensors = load_safetensors(r.content)
    z = (X.astype(np.float32) - tensors["mean"]) / tensors["std"]
    np.testing.assert_allclose(z @ tensors["weight"] + tensors["bias"], onnx, atol=1e-4)
    body = pair.client.post(
        f"/v1/models/{model['id']}/predict", json={"instances": X.tolist()}, headers=pair.headers
    ).json()
    assert body["labels"] == np.array(manifest["classes"])[np.argmax(onnx, axis=1)].tolist()


def test_averaged_jobs_are_refused_where_they_cannot_run(pair: Cluster):
    frame = pd.DataFrame({"x": np.arange(12.0), "y": ["a", "b", "c"] * 4})
    uri = _upload(pair, frame)

    def refused(body: dict, *where: object) -> str:
        r = pair.client.post("/v1/jobs", json=body, headers=pair.headers)
        assert r.status_code == 422, r.text
        errors = r.json()["errors"]
        assert any(tuple(e["loc"]) == ("body", *where) for e in errors), errors
        return str(errors)

    dataset = {"uri": uri}
    assert "per-label presets" in refused(
        {"metric": {"preset": "accuracy", "average": "macro"}, "dataset": dataset},
        "metric", "preset",
    )  # fmt: skip
    assert "argmax over the classes" in refused(
        {"metric": {"preset": "f1", "average": "macro"}, "dataset": dataset,
         "constraints": [{"metric": "recall", "at_least": 0.5}]},
        "constraints",
    )  # fmt: skip
    refused(
        {"metric": {"preset": "f1", "average": "macro"}, "dataset": dataset,
         "baselines": ["erm"]},
        "baselines",
    )  # fmt: skip
    assert "linear model" in refused(
        {"metric": {"preset": "f1", "average": "macro"}, "dataset": dataset,
         "model": {"kind": "mlp", "hidden": [4]}, "search": {"multiclass": "multinomial"}},
        "search", "multiclass",
    )  # fmt: skip
    refused(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {**dataset, "positive_label": "a"}},
        "dataset", "positive_label",
    )  # fmt: skip
    refused(
        {"metric": {"preset": "f1"}, "dataset": {**dataset, "label_columns": ["y"]}},
        "dataset", "label_columns",
    )  # fmt: skip
    refused(
        {"metric": {"preset": "f1", "average": "samples"}, "dataset": dataset}, "metric", "average"
    )
    # Each class's recall alone is best predicting that class everywhere: no argmax follows.
    assert "balanced accuracy" in refused(
        {"metric": {"preset": "recall", "average": "macro"}, "dataset": dataset},
        "metric", "preset",
    )  # fmt: skip
    # One 0/1 column is binary data; it trained, then failed at 99% (IndexError).
    assert "at least 2" in refused(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {**dataset, "label_columns": ["y"]}},
        "dataset", "label_columns",
    )  # fmt: skip
    # A column named twice: accepted, then the job failed in the worker.
    assert "must not repeat a column; ['y'] appear(s) more than once" in refused(
        {"metric": {"preset": "f1", "average": "macro"},
         "dataset": {**dataset, "label_columns": ["y", "x", "y"]}},
        "dataset", "label_columns",
    )  # fmt: skip


def test_a_class_too_small_to_train_fails_the_job_with_its_reason(pair: Cluster):
    frame = pd.DataFrame({"x": np.arange(40.0), "y": ["a"] * 20 + ["b"] * 19 + ["c"]})
    uri = _upload(pair, frame)
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"}, "dataset": {"uri": uri}, **FAST}
    )
    job = pair.wait_state(job_id, timeout=60)
    assert job["state"] == "failed"
    assert "class 'c' has 1 positive row" in job["failure_reason"]


def test_a_class_of_two_rows_trains_on_both(pair: Cluster):
    """The documented least: two rows of a class. The stratified split put one on each side,
    and the job failed for a class of one training row."""
    rng = np.random.default_rng(0)
    labels = ["a"] * 20 + ["b"] * 19 + ["c"] * 2
    frame = pd.DataFrame({"x": rng.normal(size=41), "y": labels})
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"}, "dataset": {"uri": _upload(pair, frame)},
         **FAST}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job["failure_reason"]
    assert [c["label"] for c in job["choices"]] == ["a", "b", "c"]


def test_a_binary_job_spec_and_hash_are_unchanged(pair: Cluster):
    """A binary job's stored spec holds no averaging and no label_columns."""
    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
    r = pair.client.post("/v1/jobs", json=body, headers=pair.headers)
    assert r.status_code == 201, r.text
    spec = r.json()["spec"]
    assert spec["metric"] == {"preset": "f1"}
    assert set(spec["dataset"]) == {"uri", "label_column", "positive_label"}
    pair.client.post(f"/v1/jobs/{r.json()['id']}/cancel", headers=pair.headers)


def test_an_upload_checked_with_a_multiclass_label_column_records_its_classes(pair: Cluster):
    frame = pd.DataFrame({"x": np.arange(12.0), "kind": ["b", "a", "c"] * 4})
    r = _upload_checked(pair, frame, "kind")
    assert r.status_code == 201, r.text
    assert r.json()["labels"] == ["a", "b", "c"]
    uri = r.json()["uri"]
    # a binary job on that column is refused now, naming what the column holds
    r = pair.client.post(
        "/v1/jobs",
        json={"metric": {"preset": "f1"}, "dataset": {"uri": uri, "label_column": "kind"}},
        headers=pair.headers,
    )
    assert r.status_code == 422 and "exactly two classes" in r.text
    # and a column that is neither two classes nor readable as several is refused as before
    bad = pd.DataFrame({"x": np.arange(6.0), "kind": ["a"] * 6})
    r = _upload_checked(pair, bad, "kind")
    assert r.status_code == 422 and "at least two classes; found 1 class: ['a']" in r.text
    # a column of more classes than the limit says so, not that it is not two classes
    many = pd.DataFrame({"x": np.arange(240.0), "kind": [f"k{i % 120}" for i in range(240)]})
    r = _upload_checked(pair, many, "kind")
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["msg"].startswith(
        "labels have 120 classes, more than the limit of 100"
    ), r.text


def test_an_averaged_jobs_work_counts_its_classes(make_cluster, monkeypatch):
    """The API cannot know how many classes a file holds: the worker checks the work with them
    (one search per class) and names the factor."""
    from tests.worker.test_limits import Queue
    from tests.worker.test_pipeline import _insert_job, _solo_context
    from worker import runner

    cluster = make_cluster()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    path = cluster.data_dir / "pets.csv"
    pd.DataFrame({"x": np.arange(30.0), "kind": ["a", "b", "c"] * 10}).to_csv(path, index=False)
    body = {"metric": {"preset": "f1", "average": "macro"},
            "dataset": {"uri": path.as_uri(), "label_column": "kind"}, **FAST}  # fmt: skip
    ctx = _solo_context(cluster)
    ctx.settings = ctx.settings.model_copy(update={"max_job_work": 1})
    job_id = _insert_job(cluster, body)
    assert runner.run_job(job_id, ctx) == "failed"
    reason = cluster.job(job_id)["failure_reason"]
    assert "repeats x 3 classes or labels, is more than this server's limit" in reason, reason
    assert cluster.trace(job_id) == []


def test_the_builtin_digits_train_as_ten_classes(pair: Cluster):
    """The first macro-F1 job needs no file: builtin://digits without a positive digit is the
    ten digits."""
    job_id = pair.submit(
        {"metric": {"preset": "f1", "average": "macro"}, "dataset": {"uri": "builtin://digits"},
         "model": {"kind": "linear"}, "search": {"n_lambdas": 3, "cv": 2, "refine": "off"},
         "training": {"max_iter": 20}}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=180)
    assert job["state"] == "succeeded", job
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert [c["label"] for c in result["classes"]] == list(range(10))
    test = next(s for s in result["summary"] if (s["method"], s["split"]) == ("metro", "test"))
    assert test["mean"] > 0.8

    def refused(dataset: dict, *where: object) -> str:
        body = {"metric": {"preset": "f1", "average": "macro"}, "dataset": dataset}
        r = pair.client.post("/v1/jobs", json=body, headers=pair.headers)
        assert r.status_code == 422, r.text
        [error] = r.json()["errors"]
        assert tuple(error["loc"]) == ("body", "dataset", *where), error
        return str(error["msg"])

    assert "negative needs positive" in refused({"uri": "builtin://digits?negative=3"}, "uri")
    assert "needs a table" in refused(
        {"uri": "builtin://digits", "label_columns": ["a", "b"]}, "label_columns"
    )


def test_a_multilabel_job_holds_each_label_to_its_constraint(pair: Cluster):
    """ "Each label's recall at least 0.9": every label's search is held to it, the baseline's
    thresholds are chosen under it, and each label's row says its recall and whether it held."""
    X, Y = make_multilabel_classification(n_samples=400, n_features=6, n_classes=3, random_state=1)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    for j, name in enumerate(("red", "green", "blue")):
        frame[name] = Y[:, j]
    uri = _upload(pair, frame)
    job_id = pair.submit(
        {"metric": {"preset": "precision", "average": "macro"},
         "dataset": {"uri": uri, "label_columns": ["red", "green", "blue"]},
         "constraints": [{"metric": "recall", "at_least": 0.9}],
         **{**FAST, "search": {**FAST["search"], "multipliers": [0, 4]}}}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=180)
    assert job["state"] == "succeeded", job
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert [c["name"] for c in result["constraints"]] == ["recall >= 0.9"]
    # each label's choice was made under the floor
    assert all(c["constraint_values"] is not None for c in result["choices"])
    rows = [r for r in result["runs"] if r["split"] == "test"]
    for r in rows:
        c = r["confusion"]
        if r["class_index"] is None:
            labels = [
                x for x in rows if x["method"] == r["method"] and x["class_index"] is not None
            ]
            assert r["constraint_values"][0] == pytest.approx(
                np.mean([x["constraint_values"][0] for x in labels])
            )
            assert r["constraints_hold"] == all(x["constraints_hold"] for x in labels)
            continue
        recall = c["tp"] / (c["tp"] + c["fn"])
        assert r["constraint_values"][0] == pytest.approx(recall)
        assert r["constraints_hold"] == (recall >= 0.9)
    metro = [r for r in rows if r["method"] == "metro" and r["class_index"] is not None]
    assert np.mean([r["constraint_values"][0] for r in metro]) > 0.8
    # The delivered model's manifest says it was trained under the floor, and each label's
    # own values and verdicts (it said nothing of the constraints).
    [manifest] = [
        m["manifest"]
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    [constraint] = manifest["constraints"]
    assert constraint["metric"] == "recall" and constraint["at_least"] == 0.9
    average_test = next(
        r for r in rows if r["method"] == "metro" and r["repeat"] == 0 and r["class_index"] is None
    )
    assert constraint["scores"]["test"] == pytest.approx(average_test["constraint_values"][0])
    assert manifest["constraints_hold"]["test"] == average_test["constraints_hold"]
    own = manifest["class_constraints"]
    assert [c["label"] for c in own] == ["red", "green", "blue"]
    for c, choice, r in zip(own, result["choices"], metro, strict=True):
        assert c["selection_values"] == choice["constraint_values"]
        assert c["satisfied"] == choice["constraints_satisfied"]
        assert c["scores"]["test"] == pytest.approx(r["constraint_values"])
        assert c["hold"]["test"] == r["constraints_hold"]
    assert manifest["constraints_satisfied"] == all(c["satisfied"] for c in own)


def test_two_workers_share_an_averaged_jobs_grids_and_match_one_worker(pair: Cluster):
    """Each class's fold grids are shards an idle worker may fit (built as the job's worker
    builds them, metro.multiclass.class_solver): the trace, metrics and model are exactly those
    of the same job run by one worker alone."""
    from tests.worker.test_pipeline import _assert_same_as_one_run_alone

    body = iris_mlp_job(pair, hidden=8, search={"n_lambdas": 6, "cv": 2}, epochs=12, batch_size=16)
    shared = pair.submit(body)
    assert pair.wait_state(shared, timeout=180)["state"] == "succeeded"
    shards = sorted(f.key for f in pair.fits(shared) if f.shareable)
    assert shards == sorted(
        f"r0/class{c}.fold{k}/c0/s{i}" for c in range(3) for k in range(2) for i in range(2)
    )
    assert shards_helped(pair, shared) >= 1, "the second worker took no shard"

    _assert_same_as_one_run_alone(pair, body, shared)


@pytest.mark.parametrize("target", ["multiclass", "multilabel"])
def test_every_class_keeps_two_rows_of_each_side_to_train_on(target: str):
    """More classes than test rows: the stratified split is impossible and the shuffled one
    sent some small classes' rows all, or all but one, to the test side."""
    from metro.datasets import MultiTargetDataset
    from worker.averaged import _split

    sizes = [2, 3, 2, *[4] * 17]  # 20 classes in 75 rows: a test side of 15
    n = sum(sizes)
    members = np.repeat(np.arange(len(sizes)), sizes)
    if target == "multiclass":
        y = members
    else:  # label j on the rows of class j, and one more label on every row but two
        y = np.eye(len(sizes) + 1, dtype=np.int64)[members]
        y[2:, -1] = 1
    names = tuple(f"k{c:02d}" for c in range(len(sizes) + (target == "multilabel")))
    data = MultiTargetDataset(
        X=np.zeros((n, 1)), y=y, classes=names, target=target, feature_names=None, source="t"
    )
    for seed in range(40):
        train, test = _split(data, seed)
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(n))
        positives = data.indicators[train].sum(axis=0)
        negatives = len(train) - positives
        assert positives.min() >= 2 and negatives.min() >= 2, (seed, positives, negatives)
        assert len(test) >= 15 - 6, seed  # at most two rows moved for each of the small three


def test_a_class_the_tuned_argmax_rests_on_few_rows_of_carries_the_warning_in_its_choice():
    """The library's warning of a class whose part of the average rests on few true positives
    (found after the offsets, not by the class's own search) reaches the job's choices."""
    from types import SimpleNamespace

    from sklearn.datasets import make_classification

    from metro import MetroClassifier
    from worker.averaged import AveragedRun

    X, y = make_classification(
        n_samples=900, n_features=8, n_informative=5, n_classes=4, n_clusters_per_class=1,
        weights=[0.5, 0.3, 0.15, 0.05], random_state=0,
    )  # fmt: skip
    est = MetroClassifier(
        metric="precision", average="weighted", random_state=0, n_lambdas=5, refine="off",
        training={"max_iter": 60}, multiclass="per_class",
    )  # fmt: skip
    with pytest.warns(UserWarning):
        est.fit(X, y)
    choices = AveragedRun._choices(SimpleNamespace(classes=[0, 1, 2, 3]), 0, est)  # type: ignore[arg-type]
    codes = [[w.code for w in c.warnings] for c in choices]
    assert codes == [[], [], ["few_true_positives"], []]
    assert choices[2].warnings[0].message.startswith("the argmax (offsets tuned) predicts it")
