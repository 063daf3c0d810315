"""The refinement step after the search's choice (metro.search.refine): kept only when the
refined fold models score better on the pooled held-out rows, and then what the result reports is
what the refined models did there."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score, precision_score
from sklearn.model_selection import StratifiedKFold

from metro import MetroClassifier
from metro.constraints import get_constraints
from metro.datasets import load_dataset
from metro.examples import figure1_data
from metro.metrics import get_metric
from metro.models import get_model_spec
from metro.search import SearchConfig, run_search
from metro.search.finite import FiniteHypothesisSolver
from metro.search.safeguard import constant_decisions, held_out_decisions, win_probability
from metro.search.solver import TrainerSolver, delivered_model
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig, predict_scores


def _synthetic(n: int) -> tuple[np.ndarray, np.ndarray]:
    data = load_dataset(
        f"builtin://synthetic?n_samples={n}&n_features=20&positive_fraction=0.05&seed=0"
    )
    return data.X.astype(np.float32), data.y.astype(np.int64)


def _solvers(X, y, spec, folds, constraints=()):
    def solver(tr, va):
        return TrainerSolver(
            spec, X[tr], y[tr], surrogate=get_surrogate("logistic"),
            model=get_model_spec("linear"), config=TrainingConfig(device="cpu"),
            X_validation=None if va is None else X[va],
            y_validation=None if va is None else y[va], constraints=constraints,
        )  # fmt: skip

    return [solver(tr, va) for tr, va in folds], solver(np.arange(y.size), None)


def _refined_by_hand(X, y, folds, result, fold_solvers) -> tuple[np.ndarray, np.ndarray]:
    """Each fold's chosen fit refined by its solver as the default schedule does (hottest first,
    each temperature from the one before, from the search's threshold, at the kept stage's scale)
    down to the kept temperature, deciding by its sign on its held-out rows: (labels,
    predictions), pooled."""
    step = result.refinement
    schedule = [t for (t, _), scale in zip(step.losses, step.scales, strict=True)
                if scale == step.scale]  # fmt: skip
    assert schedule == sorted(schedule, reverse=True)  # annealed, the default
    sharpen = step.scale == "free"
    predicted, truth = [], []
    for (_, va), fit, solver in zip(folds, result.fold_fits, fold_solvers, strict=True):
        model, offset = fit.model(), -step.threshold_before
        for t in schedule[: schedule.index(step.temperature) + 1]:
            model = solver.refine(model, offset=offset, temperature=t, sharpen=sharpen)
            offset = 0.0
        predicted.append(predict_scores(model, X[va])[:, 0] >= 0)
        truth.append(y[va])
    return np.concatenate(truth), np.concatenate(predicted)


def test_a_kept_refinement_reports_the_refined_folds_pooled_metric() -> None:
    X, y = figure1_data(1000, seed=0)
    spec = get_metric("f1").resolve(y)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    fold_solvers, refit = _solvers(X, y, spec, folds)
    config = SearchConfig(n_lambdas=7)
    result = run_search(fold_solvers[0], config=config, fold_solvers=fold_solvers,
                        refit_solver=refit)  # fmt: skip
    ref = result.refinement
    assert ref is not None and ref.kept  # checked: kept on this sample (by 0.0004 of F1)
    assert result.threshold == 0.0
    assert result.selection_loss < ref.loss_before
    # Oracle: refine each fold's chosen fit by hand at the kept temperature, pool, score.
    labels, decisions = _refined_by_hand(X, y, folds, result, fold_solvers)
    pooled = f1_score(labels, decisions)
    assert -result.selection_loss == pytest.approx(pooled)
    # The held-out counts users read are the refined folds', cell by cell (fp and fn swapped
    # passed: their total and the F1 above are the same either way).
    (tn_, fp_), (fn_, tp_) = confusion_matrix(labels, decisions)
    assert result.selection_counts == (tp_, fp_, fn_, tn_)
    kept = [loss for (t, loss), scale in zip(ref.losses, ref.scales, strict=True)
            if (scale, t) == (ref.scale, ref.temperature)]  # fmt: skip
    assert kept == [pytest.approx(result.selection_loss)]
    tp, fp, fn, tn = result.selection_counts
    assert tp + fp + fn + tn == y.size
    # The delivered model is the refit, refined on every row, deciding by its sign.
    model = delivered_model(result)
    assert model is result.refined_model
    assert set(np.unique(predict_scores(model, X)[:, 0] >= 0)) == {False, True}


def test_refinement_off_and_solvers_that_cannot_refine_leave_the_result_alone() -> None:
    X, y = _synthetic(600)
    spec = get_metric("f1").resolve(y)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    fold_solvers, refit = _solvers(X, y, spec, folds)
    off = run_search(fold_solvers[0], config=SearchConfig(n_lambdas=3, refine="off"),
                     fold_solvers=fold_solvers, refit_solver=refit)  # fmt: skip
    assert off.refinement is None and off.refined_model is None
    # A finite hypothesis set has no model to refine: the search runs as before.
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 50)
    finite = FiniteHypothesisSolver(
        spec, labels, rng.integers(0, 2, (50, 6)),
        y_validation=labels, predictions_validation=rng.integers(0, 2, (50, 6)),
    )  # fmt: skip
    result = run_search(finite, config=SearchConfig(n_lambdas=3, cv=None))
    assert result.refinement is None


def test_the_estimator_reports_the_refinement_and_never_a_worse_held_out_score() -> None:
    X, y = _synthetic(1000)
    on = MetroClassifier(metric="f1", n_lambdas=5, random_state=0).fit(X, y)
    off = MetroClassifier(metric="f1", n_lambdas=5, random_state=0, refine="off").fit(X, y)
    assert off.refinement_ is None
    assert on.refinement_ is not None
    assert on.best_score_ >= off.best_score_
    assert on.refinement_.loss_before == pytest.approx(-off.best_score_)
    if on.refinement_.kept:
        assert on.threshold_ == 0.0 and on.best_score_ > off.best_score_
    d = on.refinement_.to_dict()
    # Annealed, at both scales (the default): the free schedule first.
    stages = [(row["scale"], row["temperature"]) for row in d["losses"]]
    assert stages == [(scale, t) for scale in ("free", "held") for t in (0.5, 0.2, 0.05)]
    assert d["scale"] == on.refinement_.scale and (d["scale"] is None) == (not d["kept"])


def test_refinement_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown refine 'always'"):
        SearchConfig(refine="always")
    for bad in [(), (0.0,), (float("nan"),), "0.1", (0.1,) * 11]:
        with pytest.raises(ValueError, match="refine_temperatures"):
            SearchConfig(refine_temperatures=bad)
    with pytest.raises(ValueError, match="refine_temperatures"):
        MetroClassifier(refine_temperatures=(-1.0,)).fit(*_synthetic(200))


def test_under_a_constraint_a_kept_refinement_meets_it_on_the_pooled_held_out_rows() -> None:
    data = load_dataset(
        "builtin://synthetic?n_samples=3000&n_features=10&positive_fraction=0.1&seed=0"
    )
    X, y = data.X.astype(np.float32), data.y.astype(np.int64)
    spec = get_metric("f1").resolve(y)
    constraints = get_constraints([{"metric": "precision", "at_least": 0.5}], y)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    fold_solvers, refit = _solvers(X, y, spec, folds, constraints)
    result = run_search(
        fold_solvers[0], config=SearchConfig(n_lambdas=5), fold_solvers=fold_solvers,
        refit_solver=refit, constraints=constraints,
    )  # fmt: skip
    step = result.refinement
    assert step is not None and step.kept  # checked: kept on this sample
    kept = list(zip(step.scales, (t for t, _ in step.losses), strict=True)).index(
        (step.scale, step.temperature)
    )
    assert len(step.feasible) == len(step.losses) == 6 and step.feasible[kept]
    assert result.constraints_satisfied
    pooled_y, pooled_p = _refined_by_hand(X, y, folds, result, fold_solvers)
    precision = precision_score(pooled_y, pooled_p)
    assert precision >= 0.5
    assert result.constraint_values == pytest.approx([precision])
    assert -result.selection_loss == pytest.approx(f1_score(pooled_y, pooled_p))
    assert -result.selection_loss > -step.loss_before


def test_a_refined_model_that_breaks_a_constraint_is_never_kept() -> None:
    X, y = figure1_data(3000, seed=0)
    clf = MetroClassifier(
        metric="recall", constraints=[{"metric": "false_positive_rate", "at_most": 0.1}],
        random_state=0,
    ).fit(X, y)  # fmt: skip
    step = clf.refinement_
    # Checked on this sample: refined models of both scales reach a better recall on the
    # held-out rows, and every one that does breaks the false-positive-rate ceiling there.
    assert step is not None and len(step.feasible) == len(step.losses)
    better = [loss < step.loss_before for _, loss in step.losses]
    assert sum(better) >= 2
    assert not any(b and f for b, f in zip(better, step.feasible, strict=True))
    assert not step.kept and clf.threshold_ == step.threshold_before
    assert clf.constraint_values_[0] <= 0.1


# -- the schedule (refine_anneal) and the delivered model's check (refine_consistency) ---------


def _figure1_search(**settings):
    X, y = figure1_data(1000, seed=0)
    spec = get_metric("f1").resolve(y)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    fold_solvers, refit = _solvers(X, y, spec, folds)
    config = SearchConfig(n_lambdas=7, **settings)
    result = run_search(fold_solvers[0], config=config, fold_solvers=fold_solvers,
                        refit_solver=refit)  # fmt: skip
    return X, y, folds, fold_solvers, refit, result


def test_an_annealed_refinement_starts_each_temperature_from_the_hotter_one() -> None:
    X, y, folds, fold_solvers, refit, result = _figure1_search(
        refine_anneal=True, refine_temperatures=(0.05, 0.2), refine_scale="free"
    )
    step = result.refinement
    assert step is not None and [t for t, _ in step.losses] == [0.2, 0.05]  # hottest first
    # Oracle: each fold's choice refined by hand along the schedule, pooled and scored.
    for k, (_, loss) in enumerate(step.losses):
        predicted, truth = [], []
        for (_, va), fit, solver in zip(folds, result.fold_fits, fold_solvers, strict=True):
            model, offset = fit.model(), -step.threshold_before
            for t in [0.2, 0.05][: k + 1]:
                model, offset = solver.refine(model, offset=offset, temperature=t), 0.0
            predicted.append(predict_scores(model, X[va])[:, 0] >= 0)
            truth.append(y[va])
        assert -loss == pytest.approx(f1_score(np.concatenate(truth), np.concatenate(predicted)))
    assert step.kept  # checked: kept on this sample
    # The delivered model is the refit refined along the same schedule, down to the kept one.
    model, offset = result.final.model(), -step.threshold_before
    for t in [0.2, 0.05][: [0.2, 0.05].index(step.temperature) + 1]:
        model, offset = refit.refine(model, offset=offset, temperature=t), 0.0
    np.testing.assert_array_equal(predict_scores(result.refined_model, X), predict_scores(model, X))


def _stage_by_hand(X, y, folds, result, solvers, schedule, k, sharpen) -> float:
    """The pooled held-out F1 of every fold's choice refined by hand down to schedule[k]."""
    predicted, truth = [], []
    for (_, va), fit, solver in zip(folds, result.fold_fits, solvers, strict=True):
        model, offset = fit.model(), -result.refinement.threshold_before
        for t in schedule[: k + 1]:
            model = solver.refine(model, offset=offset, temperature=t, sharpen=sharpen)
            offset = 0.0
        predicted.append(predict_scores(model, X[va])[:, 0] >= 0)
        truth.append(y[va])
    return float(f1_score(np.concatenate(truth), np.concatenate(predicted)))


def test_both_scales_run_each_schedule_and_the_held_out_rows_choose() -> None:
    schedule = [0.2, 0.05]
    X, y, folds, fold_solvers, refit, result = _figure1_search(
        refine_temperatures=tuple(schedule), refine_scale="both", refine_consistency=None
    )
    step = result.refinement
    assert step.scales == ("free", "free", "held", "held")
    assert [t for t, _ in step.losses] == schedule + schedule
    for i, ((_, loss), scale) in enumerate(zip(step.losses, step.scales, strict=True)):
        by_hand = _stage_by_hand(
            X, y, folds, result, fold_solvers, schedule, i % 2, sharpen=scale == "free"
        )
        assert -loss == pytest.approx(by_hand)
    # Held is another objective: it moves the folds to other decisions than free does.
    assert {loss for _, loss in step.losses[:2]} != {loss for _, loss in step.losses[2:]}
    best = min(range(4), key=lambda i: step.losses[i][1])
    assert step.kept and (step.scale, step.temperature) == (step.scales[best], step.losses[best][0])
    assert result.selection_loss == step.losses[best][1]
    # The delivered model: the refit refined at the kept stage's scale, down to its temperature.
    model, offset = result.final.model(), -step.threshold_before
    for t in schedule[: schedule.index(step.temperature) + 1]:
        model = refit.refine(model, offset=offset, temperature=t, sharpen=step.scale == "free")
        offset = 0.0
    np.testing.assert_array_equal(predict_scores(result.refined_model, X), predict_scores(model, X))
    # One scale alone runs only its own schedule: the same stages as within "both".
    *_, held = _figure1_search(refine_temperatures=tuple(schedule), refine_scale="held")
    assert held.refinement.scales == ("held", "held")
    assert [loss for _, loss in held.refinement.losses] == [loss for _, loss in step.losses[2:]]
    *_, free = _figure1_search(refine_temperatures=tuple(schedule), refine_scale="free")
    assert [loss for _, loss in free.refinement.losses] == [loss for _, loss in step.losses[:2]]


def test_the_consistency_check_compares_the_delivered_models_rate_with_the_judged_folds() -> None:
    X, y, *_, plain = _figure1_search(refine_consistency=None)
    assert plain.refinement is not None and plain.refinement.kept
    assert plain.refinement.refit_rate_ratio is None  # no check asked for
    # A loose factor keeps what the step kept without the check, and says what it measured.
    _, _, _, _, _, loose = _figure1_search(refine_consistency=100.0)
    step = loose.refinement
    assert step.kept and step.temperature == plain.refinement.temperature
    on_training = predict_scores(loose.refined_model, X)[:, 0] >= 0
    _, held_out = held_out_decisions(loose)
    by_hand = ((on_training.sum() + 0.5) / (y.size + 1)) / ((held_out.sum() + 0.5) / (y.size + 1))
    assert step.refit_rate_ratio == pytest.approx(by_hand)
    np.testing.assert_array_equal(
        predict_scores(loose.refined_model, X), predict_scores(plain.refined_model, X)
    )
    # A factor the measured ratio falls outside of: the step is not kept, the choice stands.
    factor = max(step.refit_rate_ratio, 1.0 / step.refit_rate_ratio) * 0.999
    assert factor >= 1.0  # checked: the refit predicts 1.0% more positives than the folds here
    _, _, _, _, _, strict = _figure1_search(refine_consistency=factor)
    assert not strict.refinement.kept and strict.refined_model is None
    assert strict.refinement.refit_rate_ratio == pytest.approx(step.refit_rate_ratio)
    assert strict.threshold == strict.refinement.threshold_before != 0.0
    assert strict.selection_loss == strict.refinement.loss_before


def test_the_new_refinement_settings_are_validated() -> None:
    for bad in [0.5, float("nan"), float("inf"), "2", 101.0]:
        with pytest.raises(ValueError, match="refine_consistency"):
            SearchConfig(refine_consistency=bad)
    with pytest.raises(ValueError, match="refine_anneal must be true or false"):
        SearchConfig(refine_anneal="yes")
    with pytest.raises(ValueError, match="unknown refine_scale 'sharp'"):
        SearchConfig(refine_scale="sharp")
    with pytest.raises(ValueError, match="refine_consistency"):
        MetroClassifier(refine_consistency=0.0).fit(*_synthetic(200))


# -- evidence of a boundary (refine_signal) ------------------------------------------------------


def _weak_signal(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """400 rows, about 8% positives, one feature barely related to the label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 6)).astype(np.float32)
    y = (0.15 * X[:, 0] + rng.normal(size=400) > 1.4).astype(np.int64)
    return X, y


def test_a_refinement_the_rows_cannot_tell_from_a_constant_classifier_is_not_kept() -> None:
    X, y = _weak_signal(14)
    f2 = {"metric": "f_beta", "metric_params": {"beta": 2.0}, "random_state": 0}
    plain = MetroClassifier(**f2, refine_signal=None).fit(X, y)
    assert plain.refinement_.kept and plain.refinement_.signal_probability is None
    # By hand: the kept stage's pooled held-out decisions against the better constant, which
    # for F2 is every row positive.
    labels, refined = held_out_decisions(plain.search_result_)
    spec = plain.metric_
    assert constant_decisions(spec, labels).all()
    by_hand = win_probability(spec, labels, refined, np.ones_like(refined))
    assert 0.5 < by_hand < 0.9  # checked on this sample: 0.77, a gain inside the noise

    strict = MetroClassifier(**f2).fit(X, y)  # the default: 0.9
    step = strict.refinement_
    assert not step.kept and step.signal_probability == pytest.approx(by_hand)
    assert step.to_dict()["signal_probability"] == step.signal_probability
    assert strict.search_result_.refined_model is None
    assert strict.threshold_ == step.threshold_before != 0.0
    unrefined = MetroClassifier(**f2, refine="off").fit(X, y)
    np.testing.assert_array_equal(strict.decision_function(X), unrefined.decision_function(X))
    # A level below the measured probability keeps the step: the same model as without one.
    loose = MetroClassifier(**f2, refine_signal=0.75).fit(X, y)
    assert loose.refinement_.kept and loose.refinement_.signal_probability == pytest.approx(by_hand)
    np.testing.assert_array_equal(loose.decision_function(X), plain.decision_function(X))


def test_the_signal_check_leaves_a_refinement_on_a_clear_boundary_alone() -> None:
    *_, plain = _figure1_search(refine_signal=None)
    *_, checked = _figure1_search()  # the default: 0.9
    assert plain.refinement.kept and checked.refinement.kept
    assert checked.refinement.signal_probability >= 0.9
    assert (checked.refinement.scale, checked.refinement.temperature) == (
        plain.refinement.scale, plain.refinement.temperature,
    )  # fmt: skip


def test_the_signal_check_is_not_asked_under_constraints() -> None:
    X, y = figure1_data(1000, seed=0)
    clf = MetroClassifier(
        metric="f1", constraints=[{"metric": "precision", "at_least": 0.3}], refine_signal=0.9,
        random_state=0,
    ).fit(X, y)  # fmt: skip
    assert clf.refinement_ is not None and clf.refinement_.signal_probability is None


def test_refine_signal_is_validated() -> None:
    for bad in (0.3, 1.0, float("nan"), "0.9", True, -1):
        with pytest.raises(ValueError, match="refine_signal must be null or a number in"):
            SearchConfig(refine_signal=bad)
    assert SearchConfig(refine_signal=0.5).refine_signal == 0.5
    with pytest.raises(ValueError, match="refine_signal"):
        MetroClassifier(refine_signal=1.5).fit(*_synthetic(200))


@pytest.mark.parametrize("anneal", [True, False])
def test_the_refinement_makes_at_most_the_fits_it_counts(monkeypatch, anneal) -> None:
    """max_refine_fits (what a worker's progress bar counts) against the refine() calls of a
    search: each scale's schedule on each of 5 folds, then the delivered model."""
    from metro.search.refine import max_refine_fits

    calls = []
    original = TrainerSolver.refine

    def counted(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TrainerSolver, "refine", counted)
    *_, refit, result = _figure1_search(refine_anneal=anneal)
    assert result.refinement is not None and result.refinement.kept  # it ran all the way
    config = SearchConfig(n_lambdas=7, refine_anneal=anneal)
    most = max_refine_fits(config, n_folds=5, model_kind="linear")
    temperatures = len(config.refine_temperatures)
    delivered = sum(1 for solver in calls if solver is refit)
    assert len(calls) - delivered == 2 * 5 * temperatures  # both scales, every fold
    # annealed: along the schedule down to the kept temperature; else that one alone
    assert 1 <= delivered <= temperatures if anneal else delivered == 1
    assert len(calls) <= most == 2 * 5 * temperatures + (temperatures if anneal else 1)
    assert max_refine_fits(config, n_folds=5, model_kind="mlp") == 0
    off = SearchConfig(n_lambdas=7, refine="off")
    assert max_refine_fits(off, n_folds=5, model_kind="linear") == 0


# -- the step's rules on stand-in models (what refine_choice decides, and nothing else) --------


class _Stub:
    """A stand-in for a linear model: its scores on the held-out rows and on the training rows."""

    def __init__(self, held, train):
        self.held, self.train = np.asarray(held, float), np.asarray(train, float)
        self.spec = type("Spec", (), {"kind": "linear"})()


class _Source:
    def __init__(self, model):
        self._model = model

    def model(self):
        return self._model


class _StubRefiner:
    """A solver whose refinement always gives ``refined`` (a Refiner, as refine_choice asks)."""

    def __init__(self, refined):
        self.refined = refined

    def refine(self, model, *, offset, temperature, sharpen=True):
        return self.refined

    def held_out_scores(self, model):
        return model.held

    def training_scores(self, model):
        return model.train


def _flags(n_pos, tp, n_neg, fp):
    """Scores +1 on the first ``tp`` of ``n_pos`` positives and the first ``fp`` of ``n_neg``
    negatives (the rows are positives first), -1 elsewhere."""
    return np.r_[
        np.where(np.arange(n_pos) < tp, 1.0, -1.0), np.where(np.arange(n_neg) < fp, 1.0, -1.0)
    ]


def _refine_stub(before, after, *, train=None, constraints=(), **settings):
    """refine_choice on a holdout of 10 positives and 30 negatives, the choice deciding by
    ``before`` >= 0 (its selection loss as the search judges it) and every refinement by
    ``after`` >= 0 (on the delivered model's training rows: ``train``)."""
    from metro.search.base import (
        Candidate,
        SearchResult,
        cells_from_predictions,
        held_out_counts,
        judge,
    )  # fmt: skip
    from metro.search.refine import refine_choice

    y = np.r_[np.ones(10), np.zeros(30)].astype(int)
    spec = get_metric("f1").resolve(y)
    cells = cells_from_predictions(y, (before >= 0)[:, None])[0]
    choice = Candidate(
        lam=0.5, shift="minimal", train_cells=cells, validation_cells=cells,
        handle=_Source(_Stub(before, before)), validation_scores=before, validation_labels=y,
    )  # fmt: skip
    loss, threshold = judge(spec, [choice], tune=False)
    result = SearchResult(
        strategy="grid", best=choice, threshold=threshold, selection_loss=loss,
        selection_counts=held_out_counts([choice], threshold), constraints=tuple(constraints),
        constraints_satisfied=True if constraints else None,
    )  # fmt: skip
    config = SearchConfig(
        refine_temperatures=(0.5,), refine_scale="free", refine_anneal=False,
        **{"refine_signal": None, "refine_consistency": None, **settings},
    )  # fmt: skip
    refined = _Stub(after, after if train is None else train)
    return refine_choice(
        result, solvers=[_StubRefiner(refined)], refit_solver=None, config=config, spec=spec,
        constraints=constraints,
    ), y  # fmt: skip


def test_a_refinement_that_only_ties_the_choice_is_not_kept():
    """F1 by hand from the cells, 2 tp / (2 tp + fp + fn): the choice (tp 5, fp 0, fn 5) and the
    refined decisions (tp 6, fp 2, fn 4) both score 10/15 = 12/18 = 2/3 (the refined loss comes
    out an ulp lower in floating point); and the same decisions as the choice's tie too. A tie
    keeps the unrefined choice: the step moves the model only for a gain."""
    before = _flags(10, 5, 30, 0)
    for after in (_flags(10, 6, 30, 2), before):
        result, _ = _refine_stub(before, after)
        step = result.refinement
        assert [loss for _, loss in step.losses] == [pytest.approx(-2 / 3, abs=1e-15)]
        assert step.loss_before == pytest.approx(-2 / 3, abs=1e-15)
        assert not step.kept and result.refined_model is None
        assert result.threshold == 0.0 and result.selection_counts == (5, 0, 5, 30)
    # A real gain (tp 7, fp 2: 14/19) is kept: the stand-ins do reach the rule.
    result, _ = _refine_stub(before, _flags(10, 7, 30, 2))
    assert result.refinement.kept and result.selection_counts == (7, 2, 3, 28)


def test_the_consistency_check_bounds_the_delivered_rate_from_below_too():
    """The refined models flag 10 of the 40 held-out rows; the delivered one flags 10 of its 81
    training rows: a rate ratio (10.5 / 82) / (10.5 / 41) = 1/2 exactly, on the bound of the
    factor 2 (kept: the bound is inclusive). One flagged row fewer is below it: not kept (a
    delivered model predicting under half the judged rate is as inconsistent as one over
    twice)."""
    before, after = _flags(10, 5, 30, 0), _flags(10, 10, 30, 0)
    on_bound = np.r_[np.ones(10), -np.ones(71)]
    result, _ = _refine_stub(before, after, train=on_bound, refine_consistency=2.0)
    step = result.refinement
    assert step.refit_rate_ratio == 0.5 and step.kept
    below = np.r_[np.ones(9), -np.ones(72)]
    result, _ = _refine_stub(before, after, train=below, refine_consistency=2.0)
    step = result.refinement
    assert step.refit_rate_ratio == pytest.approx((9.5 / 82) / (10.5 / 41)) and not step.kept
    assert result.refined_model is None and result.selection_counts == (5, 0, 5, 30)


def test_under_constraints_the_signal_check_does_not_drop_a_kept_refinement():
    """Refined decisions tp 5, fp 10 (F1 10/25 = 0.4) beat the choice's tp 1, fp 5 (2/16) and
    only tie flagging every row (20/50 = 0.4): without constraints refine_signal drops the step;
    under constraints it is not asked (the constant need not meet them), and the step is kept."""
    before, after = _flags(10, 1, 30, 5), _flags(10, 5, 30, 10)
    free, _ = _refine_stub(before, after, refine_signal=0.9)
    assert not free.refinement.kept and free.refinement.signal_probability < 0.9
    y = np.r_[np.ones(10), np.zeros(30)].astype(int)
    constraints = get_constraints([{"metric": "recall", "at_least": 0.05}], y)
    result, _ = _refine_stub(before, after, constraints=constraints, refine_signal=0.9)
    step = result.refinement
    assert step.feasible == (True,) and step.signal_probability is None
    assert step.kept and result.selection_counts == (5, 10, 5, 20)
