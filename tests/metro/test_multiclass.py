"""Averaged fits (metro.multiclass): the estimator with average=, per class and multinomial.
The metric algebra is tests/metro/test_averaging.py's, the argmax's offsets test_argmax.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_iris, make_classification, make_multilabel_classification
from sklearn.metrics import f1_score, recall_score

from metro import MetroClassifier, get_metric, load_classifier
from metro.argmax import tune_offsets
from metro.averaging import class_cells
from metro.multiclass import multinomial_model, resolve_multiclass, stacked_model
from metro.search.base import FEW_TRUE_POSITIVES, MetroFitWarning, WarningCode

FAST = {"max_iter": 60}
# One METRO search per class: what the tests up to the multinomial section are about.
SMALL = {"n_lambdas": 5, "refine": "off", "training": FAST, "multiclass": "per_class"}


def test_recall_averaged_over_labels_is_trained():
    X, Y = make_multilabel_classification(n_samples=200, n_classes=3, random_state=0)
    clf = MetroClassifier(metric="recall", average="macro", cv=2, random_state=0, **SMALL)
    assert clf.fit(X, Y).score(X, Y) == pytest.approx(
        recall_score(Y, clf.predict(X), average="macro")
    )


# -- the estimator ------------------------------------------------------------------------------


def _iris():
    X, y = load_iris(return_X_y=True)
    return X.astype(np.float32), np.array(["setosa", "versicolor", "virginica"])[y]


def test_multiclass_fit_attributes_and_predictions():
    X, y = _iris()
    clf = MetroClassifier(average="macro", random_state=0, **SMALL).fit(X, y)
    assert clf.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    assert clf.target_type_ == "multiclass" and clf.average_ == "macro"
    assert len(clf.estimators_) == 3
    for attr in ("lambdas_", "thresholds_", "best_scores_", "offsets_"):
        assert getattr(clf, attr).shape == (3,)
    assert clf.decision_rule_ == "tuned"
    assert clf.best_score_ >= clf.ovr_score_
    margins = clf.decision_function(X)
    assert margins.shape == (150, 3)
    pred = clf.predict(X)
    assert pred.tolist() == clf.classes_[np.argmax(margins, axis=1)].tolist()
    # the per-class margins are the binary fits' thresholded margins plus the offsets
    raw = np.column_stack([e.decision_function(X) for e in clf.estimators_])
    np.testing.assert_allclose(margins, raw + clf.offsets_, rtol=1e-6)
    assert clf.score(X, y) == pytest.approx(f1_score(y, pred, average="macro"))
    assert clf.score(X, y) > 0.8


def test_multilabel_fit_attributes_and_predictions():
    X, Y = make_multilabel_classification(n_samples=200, n_features=6, n_classes=3, random_state=0)
    clf = MetroClassifier(average="macro", random_state=0, **SMALL).fit(X, Y)
    assert clf.target_type_ == "multilabel-indicator"
    assert clf.classes_.tolist() == [0, 1, 2]
    assert clf.offsets_.tolist() == [0.0, 0.0, 0.0]
    margins = clf.decision_function(X)
    P = clf.predict(X)
    assert margins.shape == P.shape == (200, 3)
    assert np.array_equal(P, (margins >= 0).astype(int))
    # each label is its own binary fit on its own column
    for j, est in enumerate(clf.estimators_):
        assert np.array_equal(est.predict(X), P[:, j])
    assert clf.score(X, Y) == pytest.approx(f1_score(Y, P, average="macro"))
    assert 0 < clf.best_score_ <= 1
    halves = Y.astype(float)
    halves[0, 0] = 0.5  # was counted as a positive, where fit and scikit-learn refuse it
    with pytest.raises(ValueError, match="y must be a 0/1 indicator matrix"):
        clf.score(X, halves)


def test_binary_y_with_macro_is_both_classes_as_sklearn():
    X, y = make_classification(n_samples=200, n_features=5, weights=[0.7], random_state=0)
    clf = MetroClassifier(average="macro", random_state=0, **SMALL).fit(X, y)
    assert clf.target_type_ == "binary" and len(clf.estimators_) == 2
    pred = clf.predict(X)
    assert clf.score(X, y) == pytest.approx(f1_score(y, pred, average="macro"))


def test_binary_default_unchanged():
    X, y = make_classification(n_samples=200, n_features=5, weights=[0.7], random_state=0)
    params = dict(n_lambdas=5, cv=None, training=FAST, random_state=0)
    a = MetroClassifier(**params).fit(X, y)
    b = MetroClassifier(average=None, **params).fit(X, y)
    assert MetroClassifier().average is None
    assert a.best_lambda_ == b.best_lambda_ and a.threshold_ == b.threshold_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.decision_function(X).shape == (200,) and a.average_ is None


def test_micro_multilabel_fit_tunes_the_labels_offsets_together(tmp_path):
    """average='micro': the same per-label fits as 'macro' (same folds and seed), then offsets
    tuned on their pooled held-out margins for the pooled F1; best_score_ is the pooled F1 of
    the held-out cells it reports, never below every label's own threshold's."""
    from metro.averaging import averaged_score

    X, Y = make_multilabel_classification(n_samples=300, n_features=6, n_classes=4, random_state=2)
    clf = MetroClassifier(average="micro", random_state=0, **SMALL).fit(X, Y)
    assert clf.average_ == "micro" and clf.decision_rule_ == "tuned"
    assert clf.selection_cells_.shape == (4, 4)
    assert clf.selection_cells_.sum(axis=1).tolist() == [300.0] * 4  # every row held out once
    assert clf.best_score_ == pytest.approx(
        averaged_score(clf.metric_, clf.selection_cells_, "micro")
    )
    assert clf.best_score_ >= clf.per_label_score_
    raw = np.column_stack([e.decision_function(X) for e in clf.estimators_])
    np.testing.assert_allclose(clf.decision_function(X), raw + clf.offsets_, rtol=1e-6, atol=1e-6)
    assert clf.score(X, Y) == pytest.approx(f1_score(Y, clf.predict(X), average="micro"))
    macro = MetroClassifier(average="macro", random_state=0, **SMALL).fit(X, Y)
    np.testing.assert_allclose(macro.decision_function(X), raw, rtol=1e-6, atol=1e-6)
    with torch.no_grad():
        stacked = stacked_model(clf)(torch.as_tensor(X, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(stacked, clf.decision_function(X), rtol=1e-5, atol=1e-5)
    # The saved manifest says what the service's does: the offsets folded in, and the rule.
    clf.save(tmp_path / "micro")
    manifest = load_classifier(tmp_path / "micro").manifest_
    assert manifest["decision_rule"] == "tuned"
    assert manifest["offsets"] == pytest.approx(clf.offsets_.tolist())
    assert (
        MetroClassifier(average="macro", random_state=0, **SMALL).fit(X, Y).per_label_score_ is None
    )


@pytest.mark.filterwarnings("ignore::metro.search.base.MetroFitWarning")
def test_micro_multilabel_without_folds_keeps_each_labels_threshold():
    """A holdout gives no pooled held-out margins to tune on: offsets 0, and best_score_ the
    pooled F1 of the labels' own held-out counts."""
    from metro.averaging import averaged_score

    X, Y = make_multilabel_classification(n_samples=200, n_features=6, n_classes=3, random_state=0)
    clf = MetroClassifier(average="micro", cv=None, random_state=0, **SMALL).fit(X, Y)
    assert clf.decision_rule_ == "per_label" and clf.offsets_.tolist() == [0.0, 0.0, 0.0]
    cells = np.array([e.search_result_.selection_counts for e in clf.estimators_])
    assert clf.best_score_ == pytest.approx(averaged_score(clf.metric_, cells, "micro"))


def test_micro_multilabel_whose_margins_cannot_be_rebuilt_says_so(monkeypatch):
    """Folds, but one label's out-of-fold margins cannot be rebuilt: the offsets are not tuned
    (each label keeps its own threshold), which went unsaid (only a holdout's was said, by the
    service). Constructed: no natural data was found that triggers it, so the piece that
    rebuilds the margins (metro.multiclass._oof_margins) is made to fail for the second label
    (its second call); the others' are rebuilt as usual."""
    import metro.multiclass as multiclass

    rebuild = multiclass._oof_margins
    calls: list[int] = []

    def failing_for_the_second(*args, **kwargs):
        calls.append(1)
        return None if len(calls) == 2 else rebuild(*args, **kwargs)

    monkeypatch.setattr(multiclass, "_oof_margins", failing_for_the_second)
    X, Y = make_multilabel_classification(n_samples=300, n_features=6, n_classes=3, random_state=2)
    with pytest.warns(MetroFitWarning) as issued:
        clf = MetroClassifier(average="micro", random_state=0, **SMALL).fit(X, Y)
    assert len(calls) == 3 and clf.n_splits_ > 0  # folds, and every label's margins asked for
    assert clf.decision_rule_ == "per_label" and clf.offsets_.tolist() == [0.0, 0.0, 0.0]
    codes = [[w.code for w in ws] for ws in clf.class_warnings_]
    assert WarningCode.OFFSETS_NOT_TUNED in codes[1]
    assert WarningCode.OFFSETS_NOT_TUNED not in codes[0] + codes[2]
    said = [
        str(w.message)
        for w in issued
        if isinstance(w.message, MetroFitWarning) and w.message.code == "offsets_not_tuned"
    ]
    assert len(said) == 1 and said[0].startswith("offsets_not_tuned: label 1: its out-of-fold")


def test_micro_multiclass_is_trained_for_the_accuracy():
    """Multi-class micro-F1 is the accuracy: the argmax's offsets are tuned for it."""
    from sklearn.metrics import accuracy_score

    X, y = _iris()
    clf = MetroClassifier(average="micro", random_state=0, **SMALL).fit(X, y)
    assert clf.decision_rule_ == "tuned" and clf.best_score_ >= clf.ovr_score_
    pred = clf.predict(X)
    assert clf.score(X, y) == pytest.approx(accuracy_score(y, pred))
    assert clf.score(X, y) == pytest.approx(f1_score(y, pred, average="micro"))


@pytest.mark.parametrize(
    ("kwargs", "y", "match"),
    [
        ({"average": "samples"}, "multiclass", "average='samples' is not supported"),
        (
            {"average": "micro", "constraints": [{"metric": "recall", "at_least": 0.5}]},
            "multilabel",
            "constraints do not apply with average='micro'",
        ),
        ({"average": "macro", "metric": "accuracy"}, "multiclass", "per-label presets"),
        ({"average": "macro", "metric": "balanced_accuracy"}, "multiclass", "per-label presets"),
        (
            {"average": "macro", "constraints": [{"metric": "recall", "at_least": 0.5}]},
            "multiclass",
            "no per-class constraint survives",
        ),
        ({"average": "macro", "pos_label": 1}, "multiclass", "pos_label does not apply"),
        ({"average": "macro"}, "constant_label", "label 1 is constant"),
        ({"average": "macro"}, "one_positive", "class 3 has 1 positive"),
        ({"average": "macro"}, "single", "single class"),
        ({"average": "macro"}, "continuous", "the type of the target is continuous"),
        ({}, "multiclass", "Pass average='macro'"),
        ({}, "multilabel", "Pass average='macro'"),
        # Alone, each class's recall is best predicting that class everywhere: iris scored
        # 0.33, every row one class. Over 0/1 labels it is trained (test below).
        ({"average": "macro", "metric": "recall"}, "multiclass", "balanced accuracy"),
        ({"average": "weighted", "metric": "RECALL"}, "multiclass", "not trained for"),
        ({"average": "macro"}, "multilabel_signs", "must hold 0 and 1"),  # was "constant"
        ({"average": "macro"}, "multilabel_12", "got the values \\[1, 2\\]"),
    ],
)
def test_validation_errors(kwargs, y, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    targets = {
        "multiclass": np.arange(40) % 3,
        "multilabel": np.column_stack([np.arange(40) % 2, np.arange(40) % 3 == 0]).astype(int),
        "constant_label": np.column_stack([np.arange(40) % 2, np.zeros(40)]).astype(int),
        "one_positive": np.r_[np.arange(39) % 3, 3],
        "single": np.zeros(40, dtype=int),
        "continuous": rng.normal(size=40),
        "multilabel_signs": np.column_stack([np.arange(40) % 2, np.arange(40) % 3 == 0]) * 2 - 1,
        "multilabel_12": np.column_stack([np.arange(40) % 2, np.arange(40) % 3 == 0]) + 1,
    }
    with pytest.raises(ValueError, match=match):
        MetroClassifier(**kwargs).fit(X, targets[y])


# -- one stack for the service: scores equal the margins ------------------------------------------


@pytest.mark.parametrize("kind", ["multiclass", "multilabel"])
def test_stacked_model_scores_are_the_margins(kind):
    import torch

    from metro.multiclass import stacked_model

    if kind == "multiclass":
        X, y = load_iris(return_X_y=True)
    else:
        X, y = make_multilabel_classification(n_samples=200, n_classes=3, random_state=0)
    est = MetroClassifier(average="macro", cv=3, random_state=0, **SMALL).fit(X, y)
    stack = stacked_model(est)
    assert stack.n_models == len(est.estimators_)
    with torch.no_grad():
        scores = stack(torch.as_tensor(X, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(scores, est.decision_function(X), rtol=1e-5, atol=1e-5)


def test_concatenate_reexpresses_linear_models_on_one_standardization():
    import torch

    from metro.models import build_model, concatenate, get_model_spec

    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.normal(size=(50, 4)), dtype=torch.float32)
    spec = get_model_spec("linear")
    a = build_model(spec, input_shape=(4,), n_models=1, X_stats=X[:25])
    b = build_model(spec, input_shape=(4,), n_models=2, X_stats=X[25:] * 3 + 1)
    with torch.no_grad():
        for m in (a, b):
            m.weight.normal_()
            m.bias.normal_()
    both = concatenate([a, b])
    with torch.no_grad():
        expected = torch.cat([a(X), b(X)], dim=1)
        np.testing.assert_allclose(both(X).numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    mlp = get_model_spec("mlp", hidden=(3,))
    m1 = build_model(mlp, input_shape=(4,), n_models=1, X_stats=X[:25])
    m2 = build_model(mlp, input_shape=(4,), n_models=1, X_stats=X[25:])
    with pytest.raises(ValueError, match="only when linear"):
        concatenate([m1, m2])
    with pytest.raises(ValueError, match="one kind"):
        concatenate([a, m1])


def test_multilabel_constraints_hold_each_label_to_them_and_multiclass_refuses_them():
    X, Y = make_multilabel_classification(n_samples=400, n_classes=3, random_state=1)
    from metro.search import SearchConfig

    floor = [{"metric": "recall", "at_least": 0.9}]
    # a whole SearchConfig: two multipliers keep the constrained grid small
    search = SearchConfig(n_lambdas=5, cv=3, refine="off", multipliers=(0.0, 4.0))
    est = MetroClassifier(
        average="macro", constraints=floor, search=search, training=FAST, random_state=0
    )
    est.fit(X, Y)
    for e in est.estimators_:
        assert len(e.constraints_) == 1 and e.constraints_[0].bound == 0.9
        # where it chose: each label's recall is held to the floor (or the warning says not)
        assert e.constraints_satisfied_ is False or e.constraint_values_[0] >= 0.9 - 1e-9
    # The binary fit's attributes, on the averaged estimator: a row per label, and whether
    # every label's held (they were only on estimators_[k]).
    assert est.constraints_ is est.estimators_[0].constraints_
    assert est.constraint_values_.shape == (3, 1)
    assert est.constraint_values_[:, 0].tolist() == [
        e.constraint_values_[0] for e in est.estimators_
    ]
    own = [e.constraints_satisfied_ for e in est.estimators_]
    assert est.class_constraints_satisfied_ == own and est.constraints_satisfied_ == all(own)
    free = MetroClassifier(average="macro", cv=3, random_state=0, **SMALL).fit(X, Y)
    recall = lambda clf: recall_score(Y, clf.predict(X), average=None)  # noqa: E731
    assert np.mean(recall(est)) > np.mean(recall(free))
    X3, y3 = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="argmax over the classes"):
        MetroClassifier(average="macro", constraints=floor, **SMALL).fit(X3, y3)


def test_a_dataframes_label_columns_name_its_labels_everywhere(tmp_path):
    """classes_ was [0, 1, 2] for a DataFrame Y, so errors, warnings and the saved model's
    classes named positions, and warnings_ did not say whose each was."""
    X, Y = make_multilabel_classification(n_samples=300, n_features=5, n_classes=3, random_state=1)
    Y[:, 2] = 0
    Y[:4, 2] = 1  # four positives: the label's choice rests on few true positives
    frame = pd.DataFrame(Y, columns=["red", "green", "blue"])
    floor = [{"metric": "recall", "at_least": 0.8}]
    est = MetroClassifier(metric="precision", average="macro", constraints=floor, **SMALL)
    with pytest.warns(MetroFitWarning, match=r"label 'blue': "):
        est.fit(X, frame)
    assert est.classes_.tolist() == ["red", "green", "blue"]
    assert est.warnings_ and all(w.message.startswith("label 'blue': ") for w in est.warnings_)
    manifest = est.save(tmp_path, onnx=False)
    assert manifest["classes"] == ["red", "green", "blue"]
    assert [c["label"] for c in manifest["class_constraints"]] == ["red", "green", "blue"]
    assert [c["selection_values"][0] for c in manifest["class_constraints"]] == pytest.approx(
        est.constraint_values_[:, 0].tolist()
    )
    assert manifest["constraints"][0]["name"] == "recall >= 0.8"
    assert manifest["constraints_satisfied"] == est.constraints_satisfied_
    assert load_classifier(tmp_path).classes_.tolist() == ["red", "green", "blue"]
    # A MultiIndex's names are tuples: one class each, not a 2-D classes_
    frame.columns = pd.MultiIndex.from_tuples([("tag", "red"), ("tag", "green"), ("tag", "blue")])
    assert MetroClassifier(average="macro", **SMALL).fit(X, frame).classes_.shape == (3,)
    frame.iloc[:, 2] = 0
    with pytest.raises(ValueError, match="blue"):
        MetroClassifier(average="macro", **SMALL).fit(X, frame)


def test_classes_smaller_than_every_fold_are_refused_naming_cv():
    """scikit-learn's own "n_splits=5 cannot be greater than the number of members in each
    class" named neither the classes nor the setting to change."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.repeat(np.arange(10), 4)
    clf = MetroClassifier(metric="f1", average="macro", n_lambdas=3, refine="off")
    words = r"^cv='auto' means 5 cross-validation folds, but every class has fewer rows than that "
    with pytest.raises(ValueError, match=words + r"\(the largest has 4\): set cv to at most 4"):
        clf.fit(X, y)
    assert clf.set_params(cv=4).fit(X, y).classes_.tolist() == list(range(10))


def test_a_weighted_multilabel_fit_without_held_out_rows_weighs_its_labels():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5))
    Y = (X @ rng.normal(size=(5, 3)) + rng.normal(size=(300, 3)) > [0.3, 1.2, 2.0]).astype(int)
    clf = MetroClassifier(
        metric="f1", average="weighted", n_lambdas=5, cv=None, validation_fraction=0.0,
        refine="off", random_state=0,
    ).fit(X, Y)  # fmt: skip
    assert clf.selection_cells_ is None
    support = Y.sum(axis=0)
    assert clf.best_score_ == pytest.approx(np.average(clf.best_scores_, weights=support))
    assert clf.best_score_ != pytest.approx(np.mean(clf.best_scores_))


def test_a_class_the_tuned_argmax_is_right_about_on_few_rows_is_warned_of():
    """A weighted precision of 0.933 (0.786 on the training rows) rested on one held-out row of
    a class of 133, scored 1.0, without a word: each class's search had judged its own
    threshold, and the offsets then moved the decisions."""
    X, y = make_classification(
        n_samples=900, n_features=8, n_informative=5, n_classes=4, n_clusters_per_class=1,
        weights=[0.5, 0.3, 0.15, 0.05], random_state=0,
    )  # fmt: skip
    clf = MetroClassifier(metric="precision", average="weighted", random_state=0, **SMALL)
    with pytest.warns(MetroFitWarning, match=r"class 2: the argmax \(offsets tuned\) predicts"):
        clf.fit(X, y)
    tp, fp, fn, _ = clf.selection_cells_[2].tolist()
    assert tp < FEW_TRUE_POSITIVES
    [thin] = [w for w in clf.class_warnings_[2] if w.code == WarningCode.FEW_TRUE_POSITIVES]
    assert thin.message == (
        f"the argmax (offsets tuned) predicts it for {tp + fp:.0f} held-out rows, {tp:.0f} of "
        f"them right, of {tp + fn:.0f} in it: its part of the average rests on {tp:.0f} true "
        "positives"
    )
    # warnings_ names the class of each (three "predicts every one ..." said not whose)
    assert [w.message for w in clf.warnings_] == [f"class 2: {thin.message}"]
    assert all(not ws for c, ws in enumerate(clf.class_warnings_) if c != 2)


def test_offsets_are_tuned_on_the_margins_the_refined_classes_deliver():
    """Where a class's refinement was kept, its offsets were tuned on the held-out margins of
    the choice before the step, whose scale can be far from the refined model's: the delivered
    argmax then decided otherwise than the held-out one (class 4: 16 rows where the held-out
    argmax gave 131; on real data whole classes were never predicted, without a warning)."""
    X, y = make_classification(
        n_samples=800, n_features=4, n_informative=3, n_redundant=0, n_classes=5,
        n_clusters_per_class=1, class_sep=0.6, random_state=0,
    )  # fmt: skip
    clf = MetroClassifier(
        metric="f1", average="macro", random_state=0, n_lambdas=7, multiclass="per_class"
    ).fit(X, y)
    refined = [e.refinement_ is not None and e.refinement_.temperature is not None
               for e in clf.estimators_]  # fmt: skip
    assert any(refined)
    held_out = clf.selection_cells_[:, 0] + clf.selection_cells_[:, 1]  # predicted, per class
    delivered = np.bincount(np.searchsorted(clf.classes_, clf.predict(X)), minlength=5)
    assert np.all(np.abs(delivered - held_out) <= 0.15 * held_out + 10), (delivered, held_out)


def test_a_class_the_delivered_argmax_never_predicts_is_warned_of():
    """A delivered model whose argmax never outputs a class the held-out argmax predicted
    (Chile: 3 of 5 classes, CES11: all but one) carried no warning; a class it never predicts
    scores 0 in the average the held-out rows promised."""
    from metro.multiclass import unpredicted_class_warnings

    X, y = make_classification(
        n_samples=600, n_features=4, n_informative=3, n_redundant=0, n_classes=4,
        n_clusters_per_class=1, random_state=1,
    )  # fmt: skip
    clf = MetroClassifier(metric="f1", average="macro", random_state=0, **SMALL).fit(X, y)
    assert unpredicted_class_warnings(clf, X) == [None] * 4
    clf.offsets_ = clf.offsets_.copy()
    clf.offsets_[2] = -1e6  # the delivered margins, not the held-out ones, lose class 2
    found = unpredicted_class_warnings(clf, X)
    assert [w is None for w in found] == [True, True, False, True]
    assert found[2].code == WarningCode.PREDICTS_ONE_CLASS
    assert "predicts it for none of the 600 rows it was refit on" in found[2].message


def test_an_averaged_fit_on_a_dataframe_keeps_its_feature_names_quietly():
    """The check of the delivered argmax scored the fit's own (validated, nameless) rows through
    the prediction path, which warned "X does not have valid feature names" on every fit of a
    DataFrame and failed scikit-learn's check_dataframe_column_names_consistency."""
    import warnings

    import pandas as pd
    from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency

    X, y = make_classification(
        n_samples=300, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
        n_clusters_per_class=1, random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", category=MetroFitWarning)
        MetroClassifier(average="macro", random_state=0, **SMALL).fit(
            pd.DataFrame(X, columns=list("abcd")), y
        )
    check_dataframe_column_names_consistency(
        "MetroClassifier", MetroClassifier(average="macro", **SMALL)
    )


# -- the multinomial model (multiclass="multinomial"; per_class is the default) -----------------


def _wine():
    from sklearn.datasets import load_wine

    return load_wine(return_X_y=True)


def test_the_multinomial_model_is_a_tuned_multinomial_logistic_regression():
    """The delivered scores minus the offsets are scikit-learn's multinomial logits on
    StandardScaler'd rows, and the offsets are tune_offsets' on the out-of-fold
    log-probabilities of that model on the fit's folds: TunedArgmaxLogistic's rule."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _wine()
    X = X.astype(np.float32).astype(np.float64)  # the rows the library fits on
    est = MetroClassifier(
        metric="f1", average="macro", random_state=0, cv=4, multiclass="multinomial"
    ).fit(X, y)
    assert est.multiclass_ == "multinomial" and est.decision_rule_ == "tuned"
    assert est.lambdas_ is None and est.estimators_ == []
    np.testing.assert_array_equal(est.thresholds_, np.zeros(3))
    assert est.n_splits_ == 4 and est.n_fits_ == 5

    def logistic():
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))

    logits = logistic().fit(X, y).decision_function(X)
    np.testing.assert_allclose(est.decision_function(X) - est.offsets_, logits, atol=1e-3)
    np.testing.assert_array_equal(est.predict(X), np.argmax(logits + est.offsets_, axis=1))

    # The folds: the library's (stratified on the class, shuffled with the fit's drawn seed).
    seed = int(np.random.RandomState(0).randint(np.iinfo(np.int32).max))
    oof = np.empty((y.size, 3))
    for train, held in StratifiedKFold(4, shuffle=True, random_state=seed).split(X, y):
        oof[held] = logistic().fit(X[train], y[train]).predict_log_proba(X[held])
    spec = get_metric("f1").resolve(np.array([0, 1]))
    offsets, score = tune_offsets(oof, y, spec=spec, average="macro")
    assert est.best_score_ == pytest.approx(score, abs=1e-9)
    np.testing.assert_allclose(est.offsets_, offsets, atol=1e-4)
    cells = class_cells(y, np.argmax(oof + offsets, axis=1), 3)
    np.testing.assert_allclose(est.selection_cells_, cells)
    assert est.best_score_ == pytest.approx(
        f1_score(y, np.argmax(oof + offsets, 1), average="macro")
    )


def test_a_multinomial_fit_saves_and_loads_as_its_own_scores(tmp_path):
    """safetensors and ONNX both score what the fit does (offsets folded into the biases)."""
    import onnxruntime as ort

    X, y = _wine()
    names = np.array(["a", "b", "c"])[y]
    est = MetroClassifier(
        metric="f1", average="weighted", random_state=1, multiclass="multinomial"
    ).fit(X, names)
    manifest = est.save(tmp_path / "m")
    assert manifest["multiclass"] == "multinomial" and manifest["class_lambdas"] is None
    loaded = load_classifier(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    session = ort.InferenceSession(str(tmp_path / "m" / "model.onnx"))
    (scores,) = session.run(None, {session.get_inputs()[0].name: X.astype(np.float32)})
    np.testing.assert_allclose(scores, est.decision_function(X), atol=1e-4)
    np.testing.assert_allclose(
        stacked_model(est)(torch.as_tensor(X, dtype=torch.float32)).detach().numpy(),
        est.decision_function(X), atol=1e-5,
    )  # fmt: skip


def test_per_class_is_the_default_and_networks_only_take_it():
    X, y = load_iris(return_X_y=True)
    est = MetroClassifier(average="macro", random_state=0, n_lambdas=3, refine="off").fit(X, y)
    assert est.multiclass_ == "per_class" and len(est.estimators_) == 3
    assert est.lambdas_.shape == (3,) and np.all(np.isfinite(est.lambdas_))
    assert resolve_multiclass("multinomial", "linear") == "multinomial"
    assert resolve_multiclass("per_class", "mlp") == "per_class"
    with pytest.raises(ValueError, match="linear model"):
        MetroClassifier(average="macro", model="mlp", multiclass="multinomial").fit(X, y)
    Y = np.column_stack([y == 0, y == 1]).astype(int)
    with pytest.raises(ValueError, match="multi-label"):
        MetroClassifier(average="macro", multiclass="multinomial").fit(X, Y)
    with pytest.raises(ValueError, match="unknown multiclass"):
        MetroClassifier(average="macro", multiclass="softmax").fit(X, y)
    # Without average y is binary, one METRO search: multinomial was ignored without a word.
    with pytest.raises(ValueError, match="pass average='macro', 'weighted' or 'micro'"):
        MetroClassifier(multiclass="multinomial").fit(X, (y == 1).astype(int))
    # multi-label data is one search per label
    fitted = MetroClassifier(average="macro", n_lambdas=3, refine="off", random_state=0).fit(X, Y)
    assert fitted.multiclass_ == "per_class" and len(fitted.estimators_) == 2


def test_a_class_missing_from_a_folds_training_rows_gets_a_floor_logit():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    model = multinomial_model(X, np.array([0, 0, 1, 1, 0, 1]), 3)
    scores = model(torch.as_tensor(X)).detach().numpy()
    assert np.all(scores[:, 2] < scores[:, :2].min(axis=1) - 20)
