"""After the search has chosen: the refinement step, kept only where held-out rows say it helps.

The chosen fit of every fold (or the holdout's one fit) is refined on its own training part for
each temperature of ``SearchConfig.refine_temperatures`` (:func:`metro.trainer.refine
.refine_linear`, from the fit with its tuned threshold; with ``refine_anneal``, hottest first,
each temperature from the one before's refined model; at each scale of
``SearchConfig.refine_scale``, free weights or the scores' spread held, each scale's schedule from
the same start), and the refined models are judged on the
same held-out rows as the search's choice: the metric of the confusion counts pooled over the
folds, each refined model deciding by its own sign. The best stage is kept only when it
beats the unrefined choice's selection loss; then the delivered model is the refit refined the
same way on all the training data, and the result's selection loss, counts and threshold are the
refined ones (the threshold is then 0: the refined model decides by its sign). With
``refine_consistency`` the delivered model must also predict positive on its rows at a rate
within that factor of the refined fold models' held-out rate, or the step is not kept. With
``refine_signal`` (without constraints) the kept stage must also beat the better constant
classifier (every row positive, or every row negative) on a paired bootstrap of the held-out
rows with that probability: where the rows cannot tell a boundary from none, there is nothing to
refine.

The comparison reuses the rows that chose lambda, which favours the unrefined choice (its
threshold was tuned on them, the refined models' offsets were not), so a kept step has cleared a
bar biased against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from metro.constraints import Constraint
from metro.metrics import MetricSpec
from metro.models import StackedModel
from metro.search.base import SearchResult, cells_from_predictions, diagnose
from metro.search.config import SearchConfig
from metro.search.constrained import judge_at_zero, judged_constraints
from metro.search.safeguard import constant_decisions, win_probability
from metro.thresholds import ConstrainedThreshold

__all__ = ["Refinement", "Refiner", "max_refine_fits", "refine_choice"]


@runtime_checkable
class Refiner(Protocol):
    """A solver that can refine a model on its training part and score its held-out part."""

    def refine(
        self, model: StackedModel, *, offset: float, temperature: float, sharpen: bool = True
    ) -> StackedModel:
        """``model`` (a stack of one) refined on this solver's training rows, with ``offset``
        added to its scores first; ``sharpen=False`` holds the scores' spread at the start's."""
        ...

    def held_out_scores(self, model: StackedModel) -> np.ndarray | None:
        """h on this solver's held-out rows ([n]), None without any."""
        ...

    def training_scores(self, model: StackedModel) -> np.ndarray:
        """h on this solver's training rows ([n])."""
        ...


@dataclass(frozen=True)
class Refinement:
    """What the refinement step found: the held-out loss of the unrefined choice and of each
    temperature tried, and the temperature kept (None: no step beat the unrefined choice)."""

    loss_before: float
    threshold_before: float  # the tuned threshold the step started from (folded into its bias)
    losses: tuple[tuple[float, float], ...]  # (temperature, pooled held-out loss)
    temperature: float | None
    # The scale of each stage tried, parallel to ``losses`` ("free" or "held"; see
    # SearchConfig.refine_scale), and the kept one's (None: no step kept).
    scales: tuple[str, ...]
    scale: str | None
    # Under constraints: whether they held on the pooled held-out rows, per temperature tried
    # (a refined model that breaks one is never kept); empty without constraints.
    feasible: tuple[bool, ...] = ()
    # With SearchConfig.refine_confidence: the paired bootstrap's probability that the best
    # temperature beats the unrefined choice on the held-out rows (None: not computed).
    win_probability: float | None = None
    # With SearchConfig.refine_consistency: the delivered model's predicted-positive rate on its
    # training rows over the refined fold models' on the pooled held-out rows (None: not
    # computed); outside the allowed factor the step is not kept.
    refit_rate_ratio: float | None = None
    # With SearchConfig.refine_signal: the paired bootstrap's probability that the best stage
    # beats the better constant classifier on the held-out rows (None: not computed).
    signal_probability: float | None = None
    # The safeguard's fallback replaced the choice this step started from (and so whatever the
    # step did): the delivered model is the fallback's, unrefined.
    replaced_by_fallback: bool = False

    @property
    def kept(self) -> bool:
        return self.temperature is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kept": self.kept,
            "temperature": self.temperature,
            "loss_before": self.loss_before,
            "threshold_before": self.threshold_before,
            "losses": [
                {"temperature": t, "loss": loss, "scale": scale}
                for (t, loss), scale in zip(self.losses, self.scales, strict=True)
            ],
            "scale": self.scale,
            "feasible": list(self.feasible),
            "win_probability": self.win_probability,
            "refit_rate_ratio": self.refit_rate_ratio,
            "signal_probability": self.signal_probability,
            "replaced_by_fallback": self.replaced_by_fallback,
        }


def refine_choice(
    result: SearchResult,
    *,
    solvers: Sequence[object],
    refit_solver: object | None,
    config: SearchConfig,
    spec: MetricSpec,
    constraints: Sequence[Constraint] = (),
) -> SearchResult:
    """``result`` with the refinement step applied where it helps (see the module docstring).

    ``solvers`` are the ones the choice was judged with: one per fold (in fold order) or the
    holdout's one. The result is returned unchanged when refinement is off, the model is not
    linear, the choice had no held-out rows, or a solver cannot refine. Under ``constraints``
    (the solvers refine with the same ones) the step runs only from a choice that met them, and a
    refined model is kept only if it meets them on the pooled held-out rows too, at the same
    confidence bounds as the search's choice (:func:`metro.search.constrained
    .judged_constraints`).
    """
    if config.refine == "off" or result.selection_counts is None:
        return result
    if constraints and not result.constraints_satisfied:
        return result
    fits = result.fold_fits or [result.best]
    if any(fit.handle is None or isinstance(fit.handle, int) for fit in fits):
        return result
    if fits[0].model().spec.kind != "linear":
        return result
    if len(solvers) != len(fits) or not all(isinstance(s, Refiner) for s in solvers):
        return result
    if any(fit.validation_labels is None for fit in fits):
        return result
    refiners = [s for s in solvers if isinstance(s, Refiner)]
    offset = -float(result.threshold)
    y = np.concatenate([np.asarray(fit.validation_labels) for fit in fits])
    # Judged as the search judged the choice: for a new sample of one fold's held-out size.
    judged, fraction = judged_constraints(constraints), 1.0 / len(fits)

    # One stage per (scale, temperature): the refined folds judged at their sign on the pooled
    # held-out rows, and their pooled confusion fractions; without constraints every one is
    # feasible. The free schedule runs first, so a tie keeps it.
    tried: list[tuple[Stage, ConstrainedThreshold, np.ndarray]] = []
    held_scores: dict[Stage, np.ndarray] = {}  # each stage's pooled held-out scores
    temperatures = _schedule(config)
    for scale in _scales(config):
        starts, shift = [fit.model() for fit in fits], offset
        for temperature in temperatures:
            stage = Stage(scale, temperature)
            scores, refined_folds = [], []
            for start, solver in zip(starts, refiners, strict=True):
                refined = solver.refine(
                    start, offset=shift, temperature=temperature, sharpen=stage.sharpen
                )
                held_out = solver.held_out_scores(refined)
                if held_out is None:
                    return result
                scores.append(held_out)
                refined_folds.append(refined)
            if config.refine_anneal:
                # The next temperature starts from these (their offset is already folded in).
                starts, shift = refined_folds, 0.0
            held_scores[stage] = np.concatenate(scores)
            fractions = cells_from_predictions(y, (held_scores[stage] >= 0)[:, None])[0]
            judged_here = judge_at_zero(spec, judged, fractions, y.size, new_fraction=fraction)
            tried.append((stage, judged_here, fractions))

    allowed = [row for row in tried if row[1].feasible]
    best_stage, best, best_cells = min(allowed or tried, key=lambda row: row[1].loss)
    keep = bool(allowed) and best.loss < result.selection_loss - 1e-12
    chosen = held_scores[best_stage] >= 0  # the refined models decide by their sign
    probability: float | None = None
    if keep and config.refine_confidence is not None:
        # Significant, not just positive: a paired bootstrap over the held-out rows.
        unrefined = np.concatenate([np.asarray(fit.validation_scores) for fit in fits])
        before = unrefined >= float(result.threshold)
        probability = win_probability(spec, y, chosen, before)
        keep = probability >= config.refine_confidence
    signal: float | None = None
    if keep and config.refine_signal is not None and not constraints:
        # Evidence of a boundary at all: where the held-out rows cannot tell the refined model
        # from predicting one class everywhere, its gain over the choice is noise to fit.
        constant = constant_decisions(spec, y)
        signal = win_probability(spec, y, chosen, constant)
        keep = signal >= config.refine_signal
    refined_model: StackedModel | None = None
    rate_ratio: float | None = None
    if keep:
        refined_model, on = _refine_delivered(
            result, refit_solver, refiners, offset, temperatures, best_stage, config
        )
        if config.refine_consistency is not None:
            # The delivered model is refined on its own rows, along its own (non-convex) path;
            # the held-out rows judged the fold models. Kept only if it predicts like them.
            rate_ratio = _rate_ratio(on.training_scores(refined_model), chosen)
            keep = 1.0 / config.refine_consistency <= rate_ratio <= config.refine_consistency
    result.refinement = Refinement(
        loss_before=float(result.selection_loss),
        threshold_before=float(result.threshold),
        losses=tuple((stage.temperature, judged.loss) for stage, judged, _ in tried),
        temperature=best_stage.temperature if keep else None,
        scales=tuple(stage.scale for stage, _, _ in tried),
        scale=best_stage.scale if keep else None,
        feasible=tuple(judged.feasible for _, judged, _ in tried) if constraints else (),
        win_probability=probability,
        refit_rate_ratio=rate_ratio,
        signal_probability=signal,
    )
    if not keep:
        return result
    result.refined_model = refined_model
    result.selection_loss = best.loss
    tp, fp, fn, tn = (round(float(v) * y.size) for v in best_cells)
    result.selection_counts = (tp, fp, fn, tn)
    if constraints:
        result.constraint_values = [float(c.value(best_cells)) for c in constraints]
    result.threshold = 0.0
    result.held_out_scores = held_scores[best_stage]
    result.warnings = diagnose(result, spec)
    return result


@dataclass(frozen=True)
class Stage:
    """One refinement tried: a temperature of the schedule at one scale ("free": the weights
    may grow and sharpen the sigmoid; "held": the scores keep the start's spread)."""

    scale: str
    temperature: float

    @property
    def sharpen(self) -> bool:
        return self.scale == "free"


def max_refine_fits(config: SearchConfig, *, n_folds: int, model_kind: str | None) -> int:
    """The most fits :func:`refine_choice` makes: each scale's schedule on every fold (``n_folds``
    1 for a holdout), then the delivered model along the schedule when annealed, else at its
    one temperature; 0 where it does not run (off, or a model other than linear). Fewer where
    it stops early (a choice without held-out rows, or one that broke its constraints)."""
    if config.refine == "off" or model_kind != "linear":
        return 0
    temperatures = len(_schedule(config))
    delivered = temperatures if config.refine_anneal else 1
    return len(_scales(config)) * n_folds * temperatures + delivered


def _scales(config: SearchConfig) -> tuple[str, ...]:
    """The scales whose schedules are run, free first (a tie keeps it)."""
    return ("free", "held") if config.refine_scale == "both" else (config.refine_scale,)


def _schedule(config: SearchConfig) -> tuple[float, ...]:
    """The temperatures in the order they are tried: as configured, or hottest first when
    annealed (each then starts from the one before)."""
    temperatures = tuple(dict.fromkeys(config.refine_temperatures))
    return tuple(sorted(temperatures, reverse=True)) if config.refine_anneal else temperatures


def _refine_delivered(
    result: SearchResult,
    refit_solver: object | None,
    refiners: Sequence[Refiner],
    offset: float,
    temperatures: tuple[float, ...],
    stage: Stage,
    config: SearchConfig,
) -> tuple[StackedModel, Refiner]:
    """The model to deliver, refined as the kept stage's fold models were (at its scale, along
    the same schedule when annealed): the refit on all the training rows, or the holdout's fit;
    and the solver whose rows it was refined on."""
    if result.final is not None and isinstance(refit_solver, Refiner):
        start, on = result.final.model(), refit_solver
    else:
        start, on = result.best.model(), refiners[0]
    shift = offset
    path = temperatures[: temperatures.index(stage.temperature)] if config.refine_anneal else ()
    for temperature in (*path, stage.temperature):
        start = on.refine(start, offset=shift, temperature=temperature, sharpen=stage.sharpen)
        shift = 0.0
    return start, on


def _rate_ratio(training_scores: np.ndarray, held_out_decisions: np.ndarray) -> float:
    """Predicted-positive rate on the training rows over that of the held-out decisions (each
    with half a row added, so that none and none is 1 and a rate of zero stays finite)."""
    mine = (float(np.count_nonzero(training_scores >= 0)) + 0.5) / (training_scores.size + 1)
    theirs = (float(np.count_nonzero(held_out_decisions)) + 0.5) / (held_out_decisions.size + 1)
    return mine / theirs
