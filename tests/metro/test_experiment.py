from __future__ import annotations

import numpy as np
import pytest

from metro import SearchConfig, TrainingConfig, f1, get_surrogate
from metro.datasets import load_dataset
from metro.experiment import ExperimentResult, run_experiment
from metro.models import ModelSpec
from metro.trainer import TrainingCancelled, predict_scores

DATA = "builtin://synthetic?n_samples=1200&n_features=6&positive_fraction=0.2&seed=1"


def _run(**kw):
    ds = load_dataset(DATA)
    args = dict(
        metric=f1(),
        surrogate=get_surrogate("logistic"),
        model=ModelSpec(),
        search=SearchConfig(n_lambdas=5, shift="minimal", cv=None),
        training=TrainingConfig(max_iter=50),
    )
    args.update(kw)
    return ds, run_experiment(ds, **args)


def test_scores_are_the_metric_of_the_saved_models_on_each_split():
    _, result = _run(baselines=["erm", "koyejo1"], repeats=2)
    assert {(s.method, s.repeat, s.split) for s in result.scores} == {
        (m, r, split)
        for m in ("metro", "erm", "koyejo1")
        for r in (0, 1)
        for split in ("validation", "test")
    }
    for s in result.scores:
        assert s.tp + s.fp + s.fn + s.tn in (240, 300)  # 20% test, 25% validation of 1200
        # exactly the counts' F1: from the cell fractions it was 0.8437499999999999 for 54/64,
        # which four decimals show as 0.8437
        assert s.value == 2 * s.tp / (2 * s.tp + s.fp + s.fn)
    summary = result.summary("test")
    assert set(summary) == {"metro", "erm", "koyejo1"}
    assert summary["metro"][2] == 2 and summary["metro"][1] is not None
    one = ExperimentResult(result.metric, scores=[s for s in result.scores if s.repeat == 0])
    assert one.summary("test")["metro"][1:] == (None, 1)  # one repeat: no spread, not 0
    fitted = result.model_for("metro", 1)
    assert fitted.model.n_models == 1
    with pytest.raises(KeyError):
        result.model_for("parambath", 0)


def test_steps_are_reported_live_and_match_the_trace():
    seen = []
    _, result = _run(on_step=lambda r, step: seen.append((r, step)))
    assert [s for _, s in seen] == result.traces[0]
    assert len(result.traces[0]) == 6  # 5 grid points and the refit


def test_same_seed_same_result_and_different_repeats_differ():
    _, a = _run(repeats=2, seed=4)
    _, b = _run(repeats=2, seed=4)
    assert [s.value for s in a.scores] == [s.value for s in b.scores]
    X = load_dataset(DATA).X
    np.testing.assert_allclose(
        predict_scores(a.model_for("metro", 0).model, X),
        predict_scores(b.model_for("metro", 0).model, X),
    )


def test_cancellation_and_validation():
    def stop(repeat, step):
        raise TrainingCancelled("user asked")

    with pytest.raises(TrainingCancelled):
        _run(on_step=stop)
    with pytest.raises(ValueError, match="unknown baseline"):
        _run(baselines=["nope"])
    with pytest.raises(ValueError, match="repeats"):
        _run(repeats=0)
    with pytest.raises(ValueError, match="cnn3"):
        _run(model=ModelSpec(kind="cnn3"))


def test_the_default_search_chooses_by_folds_of_training_plus_validation():
    ds, result = _run(search=SearchConfig(n_lambdas=3, shift="minimal"))
    trace = result.traces[0]
    assert {s.fold for s in trace[:-1]} == set(range(5)) and trace[-1].fold is None
    search = result.searches[0]
    fitted = result.model_for("metro", 0)
    final = search.final
    raw = predict_scores(final.model(), ds.X)[:, 0]
    np.testing.assert_allclose(
        predict_scores(fitted.model, ds.X)[:, 0], raw - search.threshold, atol=1e-5
    )
    # the folds partition training + validation, never touching the test part
    from metro.experiment import prepare_repeat

    setup = prepare_repeat(
        ds, metric=f1(), surrogate=get_surrogate("logistic"), model=ModelSpec(),
        training=TrainingConfig(max_iter=50), repeat=0,
    )  # fmt: skip
    held_out = np.concatenate([setup.fold(k, 5)[1] for k in range(5)])
    assert np.array_equal(np.sort(held_out), setup.development)
    assert not set(setup.splits.test) & set(held_out)
    with pytest.raises(ValueError, match="unknown solver role"):
        setup.solver("fold5of5")


@pytest.mark.parametrize("strategy", ["dinkelbach", "bisection"])
def test_the_reported_lambda_and_shift_are_the_ones_the_model_was_trained_with(strategy):
    # Two shifts: the search's last bracket belongs to the second one, the chosen fit may not.
    _, result = _run(
        search=SearchConfig(strategy=strategy, shift="auto", cv=None, max_steps=6),
        repeats=2,
    )
    for repeat in (0, 1):
        search = result.searches[repeat]
        fitted = result.model_for("metro", repeat)
        assert search.final is not None
        assert (fitted.lam, fitted.shift) == (search.final.lam, search.final.shift)
        refit = search.trace[-1]  # the refit: the delivered model's own fit
        assert (refit.lam, refit.shift) == (fitted.lam, fitted.shift)
        assert {s.lam for s in result.scores if s.method == "metro" and s.repeat == repeat} == {
            fitted.lam
        }
        a, b = search.bracket
        assert search.ratio_reached == pytest.approx((a + b) / 2)
    # The estimate a sequential search reaches is another number than the trained lambda.
    assert any(result.searches[r].ratio_reached != result.model_for("metro", r).lam for r in (0, 1))


def test_constraints_reach_metro_and_the_baselines_and_every_score_reports_them():
    from metro.metrics import precision

    floor = {"metric": "recall", "at_least": 0.85}
    _, result = _run(
        metric=precision(), constraints=[floor], baselines=["erm", "koyejo1", "parambath"],
        # no refit: the validation scores are then those of the models the choices were made on
        search=SearchConfig(n_lambdas=5, cv=None, multipliers=(0.0, 1.0, 4.0), refit=False),
    )  # fmt: skip
    search = result.searches[0]
    assert search.strategy == "constrained-grid"
    assert search.constraints_satisfied is True
    for s in result.scores:
        recall = s.tp / (s.tp + s.fn)
        assert s.constraint_values == pytest.approx((recall,))
        assert s.constraints_hold == (recall >= 0.85)
    validation = {s.method: s for s in result.scores if s.split == "validation"}
    # the methods that choose on validation meet the floor there; plain ERM does not try to
    assert validation["koyejo1"].constraints_hold and validation["parambath"].constraints_hold
    assert validation["metro"].constraints_hold
    # without constraints nothing is reported
    _, plain = _run(baselines=["koyejo1"])
    assert all(s.constraint_values == () and s.constraints_hold is None for s in plain.scores)
