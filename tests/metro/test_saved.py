"""MetroClassifier.save and load_classifier: a fitted estimator written as the service writes a
job's model (no pickle) and read back to predict exactly as it did."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from metro import MetroClassifier, load_classifier
from metro.serialization import MANIFEST_FILE, ONNX_FILE, WEIGHTS_FILE, ModelFormatError

FAST = {"n_lambdas": 3, "cv": 3, "refine": "off", "random_state": 0}


def _binary(labels=("stay", "churn")):
    X, y = make_classification(n_samples=200, weights=[0.8], random_state=0)
    frame = pd.DataFrame(X[:, :5], columns=[f"f{i}" for i in range(5)])
    return frame, np.where(y == 1, labels[1], labels[0])


@pytest.mark.parametrize("pos_label", ["churn", "stay"])
def test_a_binary_classifier_predicts_the_same_after_save_and_load(tmp_path, pos_label):
    X, y = _binary()
    est = MetroClassifier(pos_label=pos_label, **FAST).fit(X, y)
    manifest = est.save(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted(
        [MANIFEST_FILE, ONNX_FILE, WEIGHTS_FILE]
    )
    loaded = load_classifier(tmp_path / "m")
    assert np.array_equal(loaded.predict(X), est.predict(X))
    assert np.array_equal(loaded.margin(X), est.margin(X))
    assert np.array_equal(loaded.decision_function(X), est.decision_function(X))
    assert loaded.classes_.tolist() == est.classes_.tolist() and loaded.pos_label_ == pos_label
    assert loaded.feature_names_in_.tolist() == [f"f{i}" for i in range(5)]
    # What a reader of the file asks: the labels, the lambda, the score the choice was made by.
    on_disk = json.loads((tmp_path / "m" / MANIFEST_FILE).read_text())
    assert on_disk == manifest and on_disk["labels"]["positive"] == pos_label
    assert on_disk["trained_lambda"] == pytest.approx(est.best_lambda_)
    assert on_disk["best_score"] == pytest.approx(est.best_score_) and on_disk["threshold"] == 0.0
    assert on_disk["metric"] == {"name": "f1", "display_name": "F1"}
    with pytest.raises(ValueError, match="not the ones the model was fitted on"):
        loaded.predict(X[X.columns[::-1]])
    with pytest.raises(ValueError, match=r"X has rows of shape \(4,\); the model takes \(5,\)"):
        loaded.predict(X.to_numpy()[:, :4])


def test_the_onnx_file_it_writes_scores_as_the_estimator(tmp_path):
    import onnxruntime as ort

    X, y = _binary()
    est = MetroClassifier(**FAST).fit(X, y)
    est.save(tmp_path)
    session = ort.InferenceSession(str(tmp_path / ONNX_FILE))
    [score] = session.run(["score"], {"x": X.to_numpy(np.float32)})
    assert np.allclose(score[:, 0], est.margin(X), atol=1e-5)
    assert np.array_equal(score[:, 0] >= 0, est.predict(X) == est.pos_label_)
    # The file itself says which column each of x's positions is, and how to decide: a
    # retrained model's order follows its new file's columns, which the bare graph hid.
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["feature_names"]) == [f"f{i}" for i in range(5)]
    assert json.loads(meta["threshold"]) == 0.0
    assert json.loads(meta["labels"])["positive"] == est.pos_label_


def test_a_table_that_cannot_be_scored_is_refused_naming_its_column_and_row(tmp_path):
    X, y = _binary()
    loaded = load_classifier(MetroClassifier(**FAST).fit(X, y).save(tmp_path) and tmp_path)
    text = X.astype({"f2": object})
    text.loc[3, "f2"] = "N/A"
    with pytest.raises(ValueError, match=r"column 'f2', row 3 holds 'N/A'"):
        loaded.predict(text)
    gap = X.copy()
    gap.loc[4, "f1"] = np.nan
    with pytest.raises(
        ValueError, match=r"1 NaN or infinite values \(first at row 4, column 'f1'\)"
    ):
        loaded.predict(gap)


@pytest.mark.parametrize("kind", ["multiclass", "multilabel"])
def test_a_classifier_of_several_classes_predicts_the_same_after_save_and_load(tmp_path, kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    if kind == "multiclass":
        y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + rng.normal(0, 0.5, (240, 3)), axis=1)]
    else:
        y = (X[:, :3] + rng.normal(0, 0.5, (240, 3)) > 0.3).astype(int)
    est = MetroClassifier(average="macro", **FAST).fit(X, y)
    manifest = est.save(tmp_path, onnx=False)
    assert manifest["decision"] == ("argmax" if kind == "multiclass" else "per_label")
    loaded = load_classifier(tmp_path)
    assert np.array_equal(loaded.predict(X), est.predict(X))
    assert np.allclose(loaded.decision_function(X), est.decision_function(X), atol=1e-6)
    assert loaded.classes_.tolist() == est.classes_.tolist()
    assert not (tmp_path / ONNX_FILE).exists()


def test_a_changed_weights_file_is_refused(tmp_path):
    X, y = _binary()
    MetroClassifier(**FAST).fit(X, y).save(tmp_path, onnx=False)
    weights = tmp_path / WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="does not match its recorded sha256"):
        load_classifier(tmp_path)


def test_saving_an_unfitted_classifier_says_so(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MetroClassifier().save(tmp_path)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"labels": {}}, "names no labels"),  # was read as 1 and 0
        ({"labels": None}, "names no labels"),
        ({"labels": {"positive": "a", "negative": "a"}}, "are the same"),
        ({"threshold": "0"}, "threshold is not a number"),  # was int()'s ValueError
    ],
)
def test_a_manifest_that_does_not_say_how_to_decide_is_refused(tmp_path, edit, said):
    X, y = _binary()
    MetroClassifier(**FAST).fit(X, y).save(tmp_path, onnx=False)
    path = tmp_path / MANIFEST_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **edit}))
    with pytest.raises(ModelFormatError, match=said):
        load_classifier(tmp_path)


def test_a_row_that_overflows_the_model_is_refused_by_every_path(tmp_path):
    """Finite values far outside the training data's scale overflow inside the model: the
    service answered 422 ("has no score") while the estimator and a saved model decided the NaN
    margin as the negative class (and a multi-class model's inf scores as a class)."""
    X, y = _binary()
    X = X / 1000  # a small scale: 3e38, standardized, leaves float32's range
    far = pd.DataFrame([[3e38] * 5, [0.0] * 5], columns=X.columns)
    est = MetroClassifier(**FAST).fit(X, y)
    est.save(tmp_path / "binary", onnx=False)
    rng = np.random.default_rng(0)
    Xm = rng.normal(size=(240, 4)) / 1000
    ym = np.array(["a", "b", "c"])[np.argmax(Xm[:, :3] + rng.normal(0, 0.5, (240, 3)), axis=1)]
    multi = MetroClassifier(average="macro", **FAST).fit(Xm, ym)
    multi.save(tmp_path / "multi", onnx=False)
    binary = [est.predict, est.margin, est.decision_function]
    loaded = load_classifier(tmp_path / "binary")
    binary += [loaded.predict, loaded.margin, loaded.decision_function]
    for method in binary:
        with pytest.raises(ValueError, match=r"row 0 of X has no score: its values overflow"):
            method(far)
    reloaded = load_classifier(tmp_path / "multi")
    rows = np.array([[0.0] * 4, [3e38, -3e38, 3e38, 0.0]])
    for method in [multi.predict, multi.decision_function, reloaded.predict]:
        with pytest.raises(ValueError, match=r"row 1 of X has no score"):
            method(rows)
    # An evaluation of held-out rows (a job's test split) counts the row, as a binary
    # evaluation does, rather than fail on one outlier.
    from metro.multiclass import class_margins

    margins = class_margins(multi, rows, refuse_undefined=False)
    assert np.isfinite(margins[0]).all() and not np.isfinite(margins[1]).all()
    assert est.predict(far.iloc[1:]).shape == (1,)  # the other row alone is scored


def test_labels_of_different_kinds_are_predicted_as_themselves(tmp_path):
    """A built-in dataset's labels (9 and "not 9"): predict failed to mix them
    (DTypePromotionError) and classes_ held the text "9", not the positive label."""
    X, y = _binary()
    est = MetroClassifier(**FAST).fit(X, y)
    est.save(tmp_path, onnx=False)
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    manifest["labels"] = {"positive": 9, "negative": "not 9"}
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    loaded = load_classifier(tmp_path)
    predicted = loaded.predict(X).tolist()
    assert set(predicted) == {9, "not 9"}
    assert [v == 9 for v in predicted] == (est.predict(X) == est.pos_label_).tolist()
    assert loaded.classes_.tolist() == ["not 9", 9] and loaded.pos_label_ == 9


@pytest.mark.parametrize(
    ("negative", "positive", "classes"),
    [(2.5, 1, [1.0, 2.5]), (0, True, [0, 1]), ("no", "yes", ["no", "yes"]), (1, 0, [0, 1])],
)
def test_labels_of_one_kind_are_sorted_and_typed_as_numpy_reads_them(
    tmp_path, negative, positive, classes
):
    """Numbers of several kinds (2.5 and 1, 0 and True) are numbers: sorted, as before; only
    text beside numbers keeps the manifest's order in an object array."""
    X, y = _binary()
    MetroClassifier(**FAST).fit(X, y).save(tmp_path, onnx=False)
    manifest = json.loads((tmp_path / MANIFEST_FILE).read_text())
    manifest["labels"] = {"positive": positive, "negative": negative}
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(manifest))
    loaded = load_classifier(tmp_path)
    assert loaded.classes_.dtype != object and loaded.classes_.tolist() == classes
    assert loaded.predict(X).dtype != object
