from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, fbeta_score, jaccard_score
from sklearn.utils.estimator_checks import estimator_checks_generator

from metro import MetricSpec, MetroClassifier, f_beta
from metro.search import MetroFitWarning
from metro.trainer import TrainingCancelled

FAST = {"max_iter": 60}


def _data(n=600, seed=0, weight=0.15):
    X, y = make_classification(
        n_samples=n,
        n_features=8,
        n_informative=4,
        weights=[1 - weight, weight],
        flip_y=0.02,
        random_state=seed,
    )
    return X.astype(np.float32), y


def test_fit_predict_and_fitted_attributes():
    X, y = _data()
    clf = MetroClassifier(
        metric="f1",
        n_lambdas=11,
        shift="minimal",
        cv=None,
        threshold="zero",
        random_state=0,
        training=FAST,
    )
    clf.fit(X, y)
    lo, hi = clf.lambda_range_
    assert lo <= clf.best_lambda_ <= hi
    assert clf.n_features_in_ == 8
    assert list(clf.classes_) == [0, 1]
    # 11 grid points then the refit on all the data
    assert len(clf.trace_) == 12
    assert [s.step for s in clf.trace_] == list(range(12))
    pred = clf.predict(X)
    assert set(np.unique(pred)) <= {0, 1}
    assert clf.score(X, y) == pytest.approx(f1_score(y, pred))
    assert clf.decision_function(X).shape == (600,)
    # the chosen lambda is the grid point with the best validation F1; the refinement step
    # after it is kept only when its refined model scores better on the same rows
    grid = clf.trace_[:-1]
    chosen = max(s.validation_metric for s in grid)
    step = clf.refinement_
    assert clf.metric_.score_from_loss(step.loss_before) == pytest.approx(chosen)
    if step.kept:
        assert clf.best_score_ > chosen and clf.threshold_ == 0.0
    else:
        assert clf.best_score_ == pytest.approx(chosen)


def test_metro_beats_unweighted_logistic_on_f1_for_imbalanced_data():
    X, y = _data(n=2000, seed=1, weight=0.08)
    Xte, yte = X[1000:], y[1000:]
    metro = MetroClassifier(metric="f1", random_state=0).fit(X[:1000], y[:1000])
    # The unweighted logistic regression itself (scikit-learn's, its default C): what a user
    # has before METRO. (It was METRO's own default search for accuracy: a second full search.)
    erm = LogisticRegression().fit(X[:1000], y[:1000])
    assert f1_score(yte, metro.predict(Xte)) > f1_score(yte, erm.predict(Xte))


@pytest.mark.parametrize("search", ["grid", "bisection", "dinkelbach"])
def test_every_strategy_runs_and_records_its_trace(search):
    X, y = _data(seed=2)
    steps = []
    clf = MetroClassifier(
        metric="jaccard",
        search=search,
        n_lambdas=7,
        epsilon=0.05,
        random_state=0,
        training=FAST,
        callback=steps.append,
    ).fit(X, y)
    assert steps == clf.trace_
    assert clf.search_result_.strategy == search
    assert 0.0 <= clf.score(X, y) <= 1.0
    assert clf.score(X, y) == pytest.approx(jaccard_score(y, clf.predict(X)))
    # the lambda and shift reported are those the delivered model was trained with (the refit,
    # the trace's last step); the ratio a bracketing search reached is a separate number
    assert clf.best_lambda_ == clf.trace_[-1].lam and clf.best_shift_ == clf.trace_[-1].shift
    assert isinstance(clf.warnings_, list)
    if search != "grid":
        a, b = clf.search_result_.bracket
        assert a <= b
        assert clf.ratio_reached_ == pytest.approx((a + b) / 2) == clf.lambda_star_
    else:
        assert clf.ratio_reached_ is None and clf.lambda_star_ == clf.best_lambda_


def test_string_labels_and_pos_label():
    X, y = _data(seed=3)
    labels = np.where(y == 1, "fraud", "ok")
    clf = MetroClassifier(
        metric="f_beta",
        metric_params={"beta": 2.0},
        pos_label="fraud",
        n_lambdas=5,
        random_state=0,
        training=FAST,
    ).fit(X, labels)
    pred = clf.predict(X)
    assert set(np.unique(pred)) <= {"fraud", "ok"}
    expected = fbeta_score(labels, pred, beta=2.0, pos_label="fraud")
    assert clf.score(X, labels) == pytest.approx(expected)


def test_metric_spec_object_and_cross_validation():
    X, y = _data(seed=4)
    spec = MetricSpec.from_confusion(numerator={"tp": 1.0}, denominator={"tp": 1, "fp": 1, "fn": 1})
    clf = MetroClassifier(
        metric=spec, cv=3, n_lambdas=5, shift="minimal", random_state=0, training=FAST
    ).fit(X, y)
    # 3 folds x 5 lambdas, then the refit
    assert len(clf.trace_) == 16
    assert {s.fold for s in clf.trace_[:-1]} == {0, 1, 2}


def test_prediction_independent_denominator_needs_one_fit():
    X, y = _data(seed=5)
    clf = MetroClassifier(metric="balanced_accuracy", random_state=0, training=FAST).fit(X, y)
    assert clf.search_result_.strategy == "exact"
    # one fit (the default shift is "minimal") on each of the 5 folds, then the refit
    assert len(clf.trace_) == 5 + 1


def test_shift_auto_tries_both_shifts():
    X, y = _data(seed=6)
    clf = MetroClassifier(metric="f1", shift="auto", n_lambdas=5, random_state=0, training=FAST)
    clf.fit(X, y)
    assert {s.shift for s in clf.trace_} == {"minimal", "paper"}
    assert clf.best_shift_ in {"minimal", "paper"}


def test_reproducible_with_random_state():
    X, y = _data(seed=7)
    a = MetroClassifier(n_lambdas=5, random_state=3, training=FAST).fit(X, y)
    b = clone(a).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-5, atol=1e-6)
    assert a.best_lambda_ == b.best_lambda_


def test_cancellation_from_the_callback():
    X, y = _data(seed=8)

    def stop(step):
        raise TrainingCancelled("stop")

    with pytest.raises(TrainingCancelled):
        MetroClassifier(search="bisection", callback=stop, training=FAST).fit(X, y)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"metric": "nope"}, "unknown metric 'nope'"),
        ({"surrogate": "nope"}, "unknown surrogate 'nope'"),
        ({"search": "nope"}, "unknown search strategy 'nope'"),
        ({"model": "cnn3"}, "cnn3"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"metric": "f_beta", "metric_params": {"beta": -1}}, "beta must be a positive number"),
        ({"n_lambdas": 0}, "n_lambdas"),
        ({"shift": "sideways"}, "unknown shift"),
        ({"search": "bisection", "cv": 3}, "only available with the grid strategy"),
        ({"cv": "sometimes"}, "cv must be 'auto', an integer or null"),
        ({"cv": 1}, "cv must be an integer between 2 and 20"),
        ({"threshold": "high"}, "unknown threshold 'high'"),
    ],
)
def test_bad_parameters_are_clear_value_errors(params, message):
    X, y = _data(n=200, seed=9)
    with pytest.raises(ValueError, match=message):
        MetroClassifier(**params).fit(X, y)


def test_more_than_two_classes_is_refused():
    X, _ = _data(n=90)
    y = np.repeat([0, 1, 2], 30)
    with pytest.raises(ValueError, match=r"exactly two classes|binary"):
        MetroClassifier().fit(X, y)


def test_f_beta_preset_matches_spec_passed_directly():
    X, y = _data(seed=10)
    a = MetroClassifier(
        metric="f_beta", metric_params={"beta": 0.5}, n_lambdas=5, random_state=0, training=FAST
    ).fit(X, y)
    b = MetroClassifier(metric=f_beta(0.5), n_lambdas=5, random_state=0, training=FAST).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def _sklearn_checks():
    """scikit-learn's estimator checks, less the array-API one (it needs SCIPY_ARRAY_API set and
    torch tensors as input, which is not what this estimator takes)."""
    estimator = MetroClassifier(n_lambdas=3, random_state=0, training={"max_iter": 30})
    expected = {"check_sample_weight_equivalence_on_dense_data": "sample weights are not supported"}
    for est, check in estimator_checks_generator(
        estimator, legacy=True, expected_failed_checks=expected, mark="xfail"
    ):
        name = getattr(check, "func", check).__name__
        if name != "check_array_api_input":
            yield pytest.param(est, check, id=name)


@pytest.mark.parametrize(("estimator", "check"), list(_sklearn_checks()))
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_default_chooses_by_five_folds_and_carries_its_threshold():
    X, y = _data(seed=7)
    clf = MetroClassifier(metric="f1", n_lambdas=5, random_state=0, training=FAST).fit(X, y)
    assert clf.n_splits_ == 5
    grid_steps = clf.trace_[:-1]
    assert {s.fold for s in grid_steps} == set(range(5))
    assert len(grid_steps) == 5 * 5  # folds x lambdas (one shift), then the refit
    assert clf.trace_[-1].fold is None and clf.trace_[-1].lam == clf.best_lambda_
    # the model carries the threshold: its own sign is the decision, and it equals the raw
    # refit's score compared with threshold_
    raw = clf.search_result_.final.model()
    from metro.trainer import predict_scores

    raw_scores = predict_scores(raw, X)[:, 0]
    np.testing.assert_allclose(clf.decision_function(X), raw_scores - clf.threshold_, atol=1e-5)
    assert np.array_equal(clf.predict(X) == 1, raw_scores - clf.threshold_ >= 0)
    assert clf.best_score_ == pytest.approx(-clf.search_result_.selection_loss)
    # folds are seeded by random_state: the same fit twice gives the same model
    again = MetroClassifier(metric="f1", n_lambdas=5, random_state=0, training=FAST).fit(X, y)
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


def test_threshold_zero_and_a_holdout_keep_the_papers_rule():
    X, y = _data(seed=8)
    clf = MetroClassifier(
        metric="f1", n_lambdas=5, cv=None, threshold="zero", random_state=0, training=FAST
    ).fit(X, y)
    assert clf.threshold_ == 0.0 and clf.n_splits_ == 0
    assert all(s.fold is None for s in clf.trace_)


def test_tuned_threshold_does_not_lose_to_zero_on_the_held_out_folds():
    X, y = _data(n=900, seed=9, weight=0.1)
    # The search's own choice (a refinement after it starts from each one's answer and may land
    # anywhere, so it is off here).
    kw = dict(metric="f_beta", metric_params={"beta": 0.5}, n_lambdas=7, random_state=0,
              training=FAST, refine="off")  # fmt: skip
    tuned = MetroClassifier(**kw).fit(X, y)
    zero = MetroClassifier(threshold="zero", **kw).fit(X, y)
    # the same folds and fits: tuning can only raise the pooled held-out score it chose by
    assert tuned.best_score_ >= zero.best_score_


# -- scikit-learn's conventions ---------------------------------------------------------------

QUICK = {"n_lambdas": 3, "cv": 2, "refine": "off", "training": FAST, "random_state": 0}


def test_decision_function_is_positive_for_classes_1_whichever_class_is_positive():
    # scikit-learn's scorers and tools read a binary decision_function as classes_[1]'s score;
    # with pos_label = classes_[0] it was h(x) as it is, and roc_auc came out near 0.
    from sklearn.metrics import get_scorer, roc_auc_score

    X, y = _data(seed=4)
    labels = np.where(y == 1, "fraud", "ok")  # classes_ = ["fraud", "ok"]: fraud is classes_[0]
    clf = MetroClassifier(metric="f1", pos_label="fraud", **QUICK).fit(X, labels)
    assert clf.classes_.tolist() == ["fraud", "ok"] and clf.pos_label_ == "fraud"
    h = clf.margin(X)
    np.testing.assert_array_equal(clf.decision_function(X), -h)
    np.testing.assert_array_equal(clf.predict(X), np.where(h >= 0, "fraud", "ok"))
    assert get_scorer("roc_auc")(clf, X, labels) == roc_auc_score(labels == "ok", -h) > 0.8
    default = MetroClassifier(metric="f1", **QUICK).fit(X, y)  # pos_label classes_[1]
    np.testing.assert_array_equal(default.decision_function(X), default.margin(X))


def test_an_averaged_fit_on_two_classes_scores_in_one_column():
    from sklearn.metrics import get_scorer

    from metro.multiclass import class_margins

    X, y = _data(seed=5)
    clf = MetroClassifier(metric="f1", average="macro", **QUICK).fit(X, y)
    scores = clf.decision_function(X)
    margins = class_margins(clf, X)
    assert scores.shape == (len(y),) and margins.shape == (len(y), 2)
    np.testing.assert_allclose(scores, margins[:, 1] - margins[:, 0])
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(scores > 0).astype(int)])
    assert get_scorer("roc_auc")(clf, X, y) > 0.8  # was a ValueError on the (n, 2) scores
    assert clf.__sklearn_tags__().classifier_tags.multi_class
    assert not MetroClassifier().__sklearn_tags__().classifier_tags.multi_class


def test_a_model_fitted_on_a_gpu_predicts_on_a_machine_without_one():
    X, y = _data(seed=6)
    clf = MetroClassifier(metric="f1", **QUICK).fit(X, y)
    expected = clf.predict(X)
    clf.device_ = "cuda"  # what device "auto" records on a machine with a GPU
    if not __import__("torch").cuda.is_available():
        np.testing.assert_array_equal(clf.predict(X), expected)  # was: CUDA is not available


def test_random_state_takes_a_random_state_once_per_fit():
    X, y = _data(seed=7)
    first = MetroClassifier(metric="f1", **{**QUICK, "random_state": np.random.RandomState(3)})
    second = MetroClassifier(metric="f1", **{**QUICK, "random_state": np.random.RandomState(3)})
    np.testing.assert_array_equal(first.fit(X, y).predict(X), second.fit(X, y).predict(X))
    for bad in (-1, 2**32, 1.5, True):
        with pytest.raises(ValueError, match="random_state"):
            MetroClassifier(metric="f1", **{**QUICK, "random_state": bad}).fit(X, y)


def test_a_refit_in_the_other_mode_leaves_nothing_of_the_first():
    X, y = _data(seed=8)
    clf = MetroClassifier(metric="f1", **QUICK).fit(X, y)
    assert hasattr(clf, "model_")
    clf.set_params(average="macro", multiclass="per_class").fit(X, y)
    assert clf.estimators_ and not hasattr(clf, "model_")
    assert not hasattr(clf, "pos_label_")
    clf.set_params(multiclass="multinomial").fit(X, y)  # one model of both classes' logits
    assert clf.model_.n_models == 2 and clf.estimators_ == [] and clf.lambdas_ is None
    clf.set_params(average=None, multiclass="per_class").fit(X, y)
    assert hasattr(clf, "model_") and not hasattr(clf, "estimators_")
    assert not hasattr(clf, "multiclass_") and not hasattr(clf, "offsets_")


def test_score_refuses_labels_it_never_saw_and_takes_a_column():
    X, y = _data(seed=9)
    clf = MetroClassifier(metric="f1", **QUICK).fit(X, y)
    with pytest.raises(ValueError, match="not fitted on"):
        clf.score(X, y + 5)  # was -0.0
    with pytest.warns(Warning, match="column-vector y"):
        assert clf.score(X, y.reshape(-1, 1)) == clf.score(X, y)
    assert str(clf.score(X, 1 - clf.predict(X))) == "0.0"  # not "-0.0"


def test_an_averaged_fit_takes_a_column_vector_y_with_scikit_learns_warning():
    from sklearn.exceptions import DataConversionWarning

    X, y = _data(seed=10)
    flat = MetroClassifier(metric="f1", average="macro", **QUICK).fit(X, y)
    with pytest.warns(DataConversionWarning):
        column = MetroClassifier(metric="f1", average="macro", **QUICK).fit(X, y.reshape(-1, 1))
    np.testing.assert_array_equal(column.predict(X), flat.predict(X))


def test_fit_issues_each_search_warning_where_the_user_looks():
    """warnings_ is an attribute nobody reads by accident: fit also issues each one as a
    MetroFitWarning, with its code, and an averaged fit names the class it is about."""
    import warnings

    from metro import MetroFitWarning
    from metro.search import WarningCode

    X, _ = _data(seed=11)
    noise = (np.arange(X.shape[0]) % 7 == 0).astype(int)  # labels unrelated to X
    binary = MetroClassifier(metric="f1", **QUICK)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        binary.fit(np.ones_like(X), noise)  # nothing to learn: it predicts one class
    issued = [w.message for w in caught if issubclass(w.category, MetroFitWarning)]
    assert [w.code for w in issued] == [w.code for w in binary.warnings_]
    assert isinstance(issued[0].code, WarningCode)
    assert [str(w) for w in issued] == [f"{w.code.value}: {w.message}" for w in binary.warnings_]
    assert all(w.filename == __file__ for w in caught if w.category is MetroFitWarning)

    labels = np.array(["ant", "bee", "cat"])[np.arange(X.shape[0]) % 3]  # unrelated too
    for multiclass in ("per_class", "multinomial"):
        averaged = MetroClassifier(metric="f1", average="macro", multiclass=multiclass, **QUICK)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            averaged.fit(X, labels)
        issued = [str(w.message) for w in caught if issubclass(w.category, MetroFitWarning)]
        expected = [
            f"{w.code.value}: class {c!r}: {w.message}"
            for c, ws in zip(["ant", "bee", "cat"], averaged.class_warnings_, strict=True)
            for w in ws
        ]
        assert issued == expected and expected, multiclass
    # The multinomial model's classes are checked against the constant as each class's search
    # checks its own: labels the features do not predict say so.
    assert WarningCode.NO_SIGNAL in {w.code for ws in averaged.class_warnings_ for w in ws}


def test_every_setting_of_the_search_is_a_keyword_with_its_default():
    """Four settings (selection, lambda_min, lambda_max, multipliers) could only be given by
    passing a whole SearchConfig: each is now a keyword, and the two lists cannot drift."""
    import inspect

    from metro import SearchConfig
    from metro.options import options_of

    keywords = inspect.signature(MetroClassifier).parameters
    for name, (_, default) in options_of(SearchConfig).items():
        keyword = "search" if name == "strategy" else name
        assert keyword in keywords, name
        assert keywords[keyword].default == default, name
    clf = MetroClassifier(lambda_min=-0.8, lambda_max=-0.2, multipliers=[0, 2], selection="last")
    config = clf._search_config()
    assert (config.lambda_min, config.lambda_max, config.multipliers, config.selection) == (
        -0.8, -0.2, (0.0, 2.0), "last",
    )  # fmt: skip
    with pytest.raises(ValueError, match="selection"):
        MetroClassifier(selection="first")._search_config()


def test_a_feature_float32_cannot_hold_apart_is_refused_before_the_fit():
    """A Unix time that varies by minutes: cast to float32 first (as fit did), its 400 values
    collapsed to 2 and the default delivered F1 0.54, predicting every row positive."""
    rng = np.random.default_rng(0)
    signal = rng.uniform(0, 50, 400)
    y = (signal + rng.normal(0, 3, 400) > 35).astype(int)
    X = np.column_stack([1.7e9 + signal, rng.normal(size=400)])
    frame = pd.DataFrame(X, columns=["seen_at", "noise"])
    clf = MetroClassifier(n_lambdas=3, cv=3, refine="off", random_state=0)
    with pytest.raises(ValueError, match=r"^column 'seen_at' cannot be held in float32"):
        clf.fit(frame, y)
    with pytest.raises(ValueError, match=r"^column 0 cannot be held in float32"):
        MetroClassifier(metric="f1", average="macro", n_lambdas=3, cv=3).fit(X, y)
    centred = X - [1.7e9, 0.0]
    assert clf.fit(centred, y).score(centred, y) > 0.85
    # Too large for float32 at all: said so, not "subtract a constant near 1e+37".
    huge = centred.copy()
    huge[3, 1] = 1e39
    with pytest.raises(ValueError, match=r"1 of them too large for float32 \(first at row 3"):
        clf.fit(huge, y)
    # A constant column has nothing to lose, whatever float32 makes of its value.
    assert clf.fit(np.column_stack([centred, np.full(400, 0.1)]), y).n_features_in_ == 3


def test_refit_false_with_folds_is_refused_not_ignored():
    """With folds the refit ran anyway (n_fits_ 4 for cv=3, the last step on every row)."""
    X, y = make_classification(n_samples=120, random_state=0)
    with pytest.raises(ValueError, match=r"^refit=false needs cv=null .*\(cv=3\)"):
        MetroClassifier(refit=False, cv=3, n_lambdas=3).fit(X, y)
    with pytest.raises(ValueError, match=r"cv='auto'"):
        MetroClassifier(refit=False, n_lambdas=3).fit(X, y)
    held_out = MetroClassifier(refit=False, cv=None, n_lambdas=3, refine="off", random_state=0)
    refitted = clone(held_out).set_params(refit=True)
    assert held_out.fit(X, y).n_fits_ + 1 == refitted.fit(X, y).n_fits_
    # Bisection chooses on a holdout whatever cv says: refit=False is honoured there.
    MetroClassifier(refit=False, search="bisection", max_steps=3, refine="off").fit(X, y)


def test_bad_settings_found_late_or_in_other_words_are_refused_up_front_by_name():
    X, y = make_classification(n_samples=60, random_state=0)
    fast = {"n_lambdas": 3, "refine": "off"}
    with pytest.raises(
        ValueError, match=r"^validation_fraction must be a number in \[0, 1\), got 'x'"
    ):
        MetroClassifier(validation_fraction="x", cv=None, **fast).fit(X, y)  # was float()'s words
    with pytest.raises(
        ValueError, match=r"^callback must be a callable taking a TraceStep, got int"
    ):
        MetroClassifier(callback=3, **fast).fit(X, y)  # was a TypeError after the first fold
    two_each = np.array([0, 0, 1, 1])
    with pytest.raises(
        ValueError,
        match=r"^cv=3 means 3 cross-validation folds, but every class has fewer rows than that "
        r"\(the largest has 2\): set cv to at most 2 or to None",
    ):
        MetroClassifier(cv=3, **fast).fit(X[:4], two_each)  # was scikit-learn's n_splits message


@pytest.mark.parametrize("metric", ["f1", "balanced_accuracy"])
def test_a_fitted_classifier_pickles_and_predicts_as_before(metric):
    """A balanced-accuracy fit held a local function in its metric and no longer pickled."""
    import pickle

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + rng.normal(size=300) > 1).astype(int)
    clf = MetroClassifier(metric=metric, n_lambdas=3, refine="off", training=FAST).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(again.predict(X), clf.predict(X))
    assert again.score(X, y) == clf.score(X, y)


def test_text_labels_without_pos_label_say_which_class_the_metric_is_for():
    """'Yes' and 'no': the greater label is 'no' ('Y' sorts first), and F1 was optimised for
    it without a word, where the service asks for positive_label."""
    import warnings

    from metro.datasets._labels import default_positive

    X, y = _data(n=200)
    text = np.where(y == 1, "Yes", "no")
    clf = MetroClassifier(n_lambdas=3, cv=3, refine="off", training=FAST, random_state=0)
    with pytest.warns(UserWarning, match=r"optimised for 'no', .* pass pos_label='Yes'"):
        clf.fit(X, text)
    assert clf.pos_label_ == "no"
    # Labels that say which class is positive ("+1", "TRUE") are taken at their word, as the
    # service takes them: '-1', the greater ('+' sorts first), was the class F1 was for.
    for spelled, positive in ((("+1", "-1"), "+1"), (("TRUE", "false"), "TRUE")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = clone(clf).fit(X, np.where(y == 1, *spelled))
        assert fitted.pos_label_ == positive and fitted.predict(X[:1]).dtype.kind == "U"
        assert not [w for w in caught if "pos_label was not given" in str(w.message)]
        assert default_positive(list(spelled)) == positive  # the service's rule
    for labels, given in ((y, None), (text, "Yes")):  # 0/1 say it; a given pos_label says it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clone(clf).set_params(pos_label=given).fit(X, labels)
        assert not [w for w in caught if "pos_label was not given" in str(w.message)]


def test_an_id_like_feature_is_warned_of():
    """A customer id sorted with the label scored F1 1.0 on held-out and test rows without a
    word: the fit now names the column (a different integer on every row, filling a range)."""
    X, y = _data(n=200)
    order = np.argsort(y, kind="stable")
    frame = pd.DataFrame(X[order][:, :3], columns=["a", "b", "c"])
    frame.insert(0, "customer_id", np.arange(1000, 1200))
    clf = MetroClassifier(n_lambdas=3, cv=3, refine="off", training=FAST, random_state=0)
    with pytest.warns(MetroFitWarning, match=r"id_like_feature: .*'customer_id' hold a different"):
        clf.fit(frame, y[order])
    assert [w.code.value for w in clf.warnings_].count("id_like_feature") == 1
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # no id: no such warning
        warnings.simplefilter("always")
        clone(clf).fit(frame.drop(columns="customer_id"), y[order])
    assert not [w for w in caught if "id_like_feature" in str(w.message)]


def test_a_training_seed_seeds_the_split_as_a_jobs_does():
    """`training={"seed": 3}` (a job's training section, whose seed "seeds the splits") seeded
    the trainer only: two fits drew different folds and chose different lambdas."""
    X, y = _data(n=400, seed=1)
    fits = [
        MetroClassifier(n_lambdas=7, refine="off", training={**FAST, "seed": 3}).fit(X, y)
        for _ in range(2)
    ]
    assert fits[0].best_lambda_ == fits[1].best_lambda_
    seeded = MetroClassifier(n_lambdas=7, refine="off", training=FAST, random_state=3).fit(X, y)
    assert seeded.best_lambda_ == fits[0].best_lambda_
    assert np.array_equal(seeded.decision_function(X), fits[0].decision_function(X))
    from metro.trainer import TrainingConfig

    config = MetroClassifier(n_lambdas=7, refine="off", training=TrainingConfig(max_iter=60))
    assert np.array_equal(
        config.fit(X, y).decision_function(X), config.fit(X, y).decision_function(X)
    )
    # an averaged fit's classes as well (its folds' seed was drawn from the global generator)
    X3, y3 = _data(n=300, seed=4)
    y3 = y3 + (X3[:, 0] > 1).astype(int)
    averaged = MetroClassifier(n_lambdas=3, refine="off", average="macro",
                               training={**FAST, "seed": 3})  # fmt: skip
    first = averaged.fit(X3, y3).decision_function(X3)
    assert np.array_equal(first, averaged.fit(X3, y3).decision_function(X3))
    # random_state, given, seeds both (a job's repeat seeds its fits so)
    other = MetroClassifier(
        n_lambdas=7, refine="off", training={**FAST, "seed": 3}, random_state=5
    ).fit(X, y)
    again = MetroClassifier(n_lambdas=7, refine="off", training=FAST, random_state=5).fit(X, y)
    assert np.array_equal(other.decision_function(X), again.decision_function(X))


def test_an_exact_metric_fits_whatever_lambda_interval_is_given():
    """A metric whose denominator is fixed fits once, at any lambda alike: a lambda_min past
    its range failed the fit with "empty lambda interval" (and a job on it, on a worker)."""
    X, y = _data(n=300, seed=2)
    given = MetroClassifier(metric="accuracy", lambda_min=5.0, training=FAST, random_state=0)
    plain = MetroClassifier(metric="accuracy", training=FAST, random_state=0)
    assert np.array_equal(given.fit(X, y).predict(X), plain.fit(X, y).predict(X))
    # under constraints too (the constrained grid had its own call, which still refused it)
    floor = [{"metric": "recall", "at_least": 0.5}]
    kwargs = dict(metric="accuracy", constraints=floor, training=FAST, random_state=0)
    constrained = MetroClassifier(lambda_min=5.0, **kwargs).fit(X, y)
    assert np.array_equal(constrained.predict(X), MetroClassifier(**kwargs).fit(X, y).predict(X))


def test_pos_label_is_the_class_as_y_spells_it():
    """pos_label=1 for boolean y (1.0 for 0/1 y) is that class: predict returns y's own
    classes, and a saved model reads back the fit's classes."""
    import tempfile

    from metro import load_classifier

    X, y = _data(n=200)
    clf = MetroClassifier(n_lambdas=3, cv=3, refine="off", training=FAST, random_state=0)
    for labels, given in ((y == 1, 1), (y, 1.0), (y, True)):
        fitted = clone(clf).set_params(pos_label=given).fit(X, labels)
        assert fitted.pos_label_ == given and type(fitted.pos_label_) is type(fitted.classes_[1])
        assert fitted.predict(X).dtype == np.asarray(labels).dtype
        with tempfile.TemporaryDirectory() as target:
            fitted.save(target, onnx=False)
            saved = load_classifier(target)
        assert saved.classes_.tolist() == fitted.classes_.tolist()
        assert np.array_equal(saved.predict(X), fitted.predict(X))
