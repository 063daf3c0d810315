"""What every lambda search shares: the solver interface, fitted candidates, the trace."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from metro.costs import empirical_l_lambda
from metro.metrics import MetricSpec, spec_display_name
from metro.search.config import SearchConfig
from metro.trainer import DIVERGENCE_RULE

if TYPE_CHECKING:
    from metro.constraints import Constraint
    from metro.models import StackedModel
    from metro.search.refine import Refinement
    from metro.search.safeguard import Fallback, Safeguard

__all__ = [
    "Candidate",
    "DivergedError",
    "LambdaSolver",
    "ModelSource",
    "SearchResult",
    "SearchWarning",
    "StepCallback",
    "TraceStep",
    "WarningCode",
    "cells_from_predictions",
    "held_out_counts",
    "lambda_bounds",
    "shifts_for",
]


def cells_from_predictions(y: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Confusion fractions for K prediction vectors at once.

    ``y`` is [n] in {0, 1}; ``predictions`` is [n, K] boolean (True = positive); returns [K, 4]
    rows (tp, fp, fn, tn).
    """
    t = np.asarray(y).astype(bool)[:, None]
    p = np.asarray(predictions).astype(bool)
    n = t.shape[0]
    tp = np.count_nonzero(p & t, axis=0)
    fp = np.count_nonzero(p & ~t, axis=0)
    fn = np.count_nonzero(~p & t, axis=0)
    tn = n - tp - fp - fn
    return np.stack([tp, fp, fn, tn], axis=1).astype(np.float64) / n


class ModelSource(Protocol):
    """Where a trained candidate's model is kept (its solver's fitted stack)."""

    def model(self) -> StackedModel: ...


@dataclass
class Candidate:
    """One fitted hypothesis h_lambda with what the searches need to judge it.

    ``handle`` says where the hypothesis is: a :class:`ModelSource` for trained models (take it
    out with :meth:`model`), the column of a finite hypothesis set for
    :class:`metro.search.finite.FiniteHypothesisSolver`.
    """

    lam: float
    shift: str
    train_cells: np.ndarray
    validation_cells: np.ndarray | None = None
    surrogate_loss: float = math.nan
    handle: ModelSource | int | None = None
    fold: int | None = None
    # The fit blew up (see metro.trainer.fit_cost_sensitive): its model is never chosen.
    diverged: bool = False
    # h on the validation part and its labels, for choosing a threshold (None: not kept).
    validation_scores: np.ndarray | None = None
    validation_labels: np.ndarray | None = None
    # The Lagrange multipliers of the constraints this fit was trained with (empty: none), and
    # the constrained grid's multiplier they were scaled from (None: no constraints).
    multipliers: tuple[float, ...] = ()
    mu: float | None = None

    def train_loss(self, spec: MetricSpec) -> float:
        return spec.loss_from_fractions(self.train_cells)

    def model(self) -> StackedModel:
        """The trained model of this candidate (a stack of one)."""
        if self.handle is None or isinstance(self.handle, int):
            raise ValueError(
                "this candidate holds no trained model (it was not fitted by a TrainerSolver)"
            )
        return self.handle.model()

    def validation_loss(self, spec: MetricSpec) -> float | None:
        if self.validation_cells is None:
            return None
        return spec.loss_from_fractions(self.validation_cells)

    def selection_loss(self, spec: MetricSpec) -> float:
        """The loss used to choose among candidates: validation when there is one, else the
        training sample's (Alg. 3 on S)."""
        val = self.validation_loss(spec)
        return self.train_loss(spec) if val is None else val

    def l_lambda(self, spec: MetricSpec) -> float:
        return float(empirical_l_lambda(spec, self.lam, self.train_cells)[0])


class LambdaSolver(Protocol):
    """Fits h_lambda for given lambdas (several at once where it can) and judges them."""

    spec: MetricSpec

    def solve(
        self,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None = None,
        multipliers: np.ndarray | None = None,
    ) -> list[Candidate]:
        """Fit (or pick) h for each lambda; with ``multipliers`` ([K, J], one row per lambda)
        the target also carries the Lagrangian term of the solver's constraints."""
        ...


@dataclass
class TraceStep:
    """One point of the search: a lambda and how the hypothesis fitted for it did.

    Metric values are in the metric's natural orientation (F1, not -F1). ``seconds`` is the wall
    time of the fit that produced the step divided by the number of lambdas fitted together.
    Under constraints, ``mu`` is the constrained grid's multiplier of the fit (``multipliers``
    are the per-constraint weights it became) and ``constraint_values`` each constraint's value
    where ``validation_metric`` is measured (the training rows when there is no held-out part),
    at threshold 0 like the metric.
    """

    step: int
    lam: float
    shift: str
    surrogate_loss: float
    l_lambda: float
    train_metric: float
    validation_metric: float | None
    seconds: float
    fold: int | None = None
    bracket: tuple[float, float] | None = None
    multipliers: tuple[float, ...] = ()
    mu: float | None = None
    constraint_values: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bracket"] = list(self.bracket) if self.bracket is not None else None
        d["multipliers"] = list(self.multipliers)
        d["constraint_values"] = [_finite_or_none(v) for v in self.constraint_values]
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()
        }


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


StepCallback = Callable[[TraceStep], None]


# Below this many true positives on the held-out rows the chosen classifier's metric rests on a
# handful of examples (precision 1.0 from TP = 1): reported, not refused.
FEW_TRUE_POSITIVES = 5


class WarningCode(StrEnum):
    """What a :class:`SearchWarning` is about (stable names for programs to match on)."""

    LAMBDA_AT_GRID_EDGE = "lambda_at_grid_edge"
    PREDICTS_ONE_CLASS = "predicts_one_class"
    FEW_TRUE_POSITIVES = "few_true_positives"
    CONSTRAINTS_NOT_MET = "constraints_not_met"
    NO_SUPPORTED_CHOICE = "no_supported_choice"
    NO_SIGNAL = "no_signal"
    ID_LIKE_FEATURE = "id_like_feature"
    OFFSETS_NOT_TUNED = "offsets_not_tuned"
    CONSTRAINT_UNCERTAIN = "constraint_uncertain"


@dataclass(frozen=True)
class SearchWarning:
    """Something about a search's choice that a user should look at before trusting it."""

    code: WarningCode
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message}


class MetroFitWarning(UserWarning):
    """A :class:`SearchWarning` as :meth:`metro.MetroClassifier.fit` issues it through Python's
    :mod:`warnings` (one per search warning; ``code`` names it), so that a fit whose choice
    deserves a look does not pass unnoticed. ``warnings_`` keeps them all."""

    def __init__(self, code: WarningCode, message: str) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code


def held_out_counts(
    folds: Sequence[Candidate], threshold: float
) -> tuple[int, int, int, int] | None:
    """(tp, fp, fn, tn) of one (lambda, shift) on the held-out rows of ``folds`` pooled, deciding
    h >= ``threshold``: the counts its selection loss was computed from. None without a held-out
    part."""
    if not folds or any(c.validation_cells is None for c in folds):
        return None
    if all(c.validation_scores is not None and c.validation_labels is not None for c in folds):
        scores = np.concatenate([np.asarray(c.validation_scores) for c in folds])
        labels = np.concatenate([np.asarray(c.validation_labels) for c in folds])
        cells = cells_from_predictions(labels, (scores >= threshold)[:, None])[0] * labels.size
    elif all(c.validation_labels is not None for c in folds):  # cells and sizes, no scores
        cells = sum(
            np.asarray(c.validation_cells) * len(np.asarray(c.validation_labels)) for c in folds
        )
    else:  # a solver that keeps only fractions (the finite one): no counts to report
        return None
    tp, fp, fn, tn = (round(float(v)) for v in cells)
    return tp, fp, fn, tn


def diagnose(result: SearchResult, spec: MetricSpec) -> list[SearchWarning]:
    """The warnings a search's choice deserves: its lambda at an end of the grid searched where
    that end is a bound the user set (the best value may lie beyond it), or a chosen classifier
    that predicts one class on the held-out rows, or whose metric rests on fewer than
    :data:`FEW_TRUE_POSITIVES` true positives, or a choice the safeguard replaced by a fallback
    that the held-out rows do not support either."""
    out: list[SearchWarning] = []
    metric = spec_display_name(spec)  # F1, "Weighted accuracy (w_fn 20)": as the user names it
    lam = result.trained_lambda
    grid = result.grid
    if (
        grid is not None
        and len(grid) > 1
        and lam in (grid[0], grid[-1])
        and not _at_own_bound(grid, lam, spec)
    ):
        side = "lowest" if lam == grid[0] else "highest"
        bound = "lambda_min" if lam == grid[0] else "lambda_max"
        out.append(
            SearchWarning(
                WarningCode.LAMBDA_AT_GRID_EDGE,
                f"the chosen lambda {lam:.4g} is the {side} of the {len(grid)} grid points "
                f"searched ({grid[0]:.4g} to {grid[-1]:.4g}): the best lambda may lie beyond "
                f"it; search again with more lambdas or another {bound}",
            )
        )
    counts = result.selection_counts
    if counts is not None:
        tp, fp, fn, tn = counts
        where = "the held-out rows" + (
            f" of the {result.n_folds} folds" if result.n_folds and result.n_folds > 1 else ""
        )
        if tp + fp == 0 or fn + tn == 0:
            label = "negative" if tp + fp == 0 else "positive"
            out.append(
                SearchWarning(
                    WarningCode.PREDICTS_ONE_CLASS,
                    f"the chosen classifier predicts every one of {where} {label} "
                    f"(TP {tp}, FP {fp}, FN {fn}, TN {tn}): its {metric} says little about "
                    "new data" + _met_by_flagging_nothing(result, counts),
                )
            )
        elif tp < FEW_TRUE_POSITIVES:
            out.append(
                SearchWarning(
                    WarningCode.FEW_TRUE_POSITIVES,
                    f"the chosen classifier's {metric} on {where} rests on {tp} true "
                    f"positive(s) (TP {tp}, FP {fp}, FN {fn}, TN {tn}): too few to trust; "
                    "more data, or more positives, would make the choice meaningful",
                )
            )
    guard = result.safeguard
    if guard is not None and guard.used and not guard.fallback_supported:
        tp, fp, fn, tn = guard.fallback_counts
        out.append(
            SearchWarning(
                WarningCode.NO_SUPPORTED_CHOICE,
                "the held-out rows cannot support any choice: the search's choice rested on "
                f"too few true positives or predicted too few positives, and so does the "
                f"fallback delivered instead (plain ERM with a tuned threshold: TP {tp}, FP {fp}, "
                f"FN {fn}, TN {tn}); its {metric} on new data is a guess: more data, or more "
                "positives, are needed",
            )
        )
    if result.constraints_satisfied is False:
        out.append(
            SearchWarning(
                WarningCode.CONSTRAINTS_NOT_MET,
                "no fit met every constraint on the held-out rows at its confidence; the one "
                + (
                    "most likely to meet them on new data"
                    if any(c.confidence is not None for c in result.constraints)
                    else "that missed them by the least"
                )
                + " was kept (constraint values "
                + ", ".join(f"{v:.4g}" for v in result.constraint_values)
                + "): loosen a bound, or give more data"
                + _reach_hint(result)
                + _flag_nothing_hint(result.constraints),
            )
        )
    if result.constraints_satisfied and counts is not None:
        out.extend(_uncertain_constraints(result, counts))
    return out


def _uncertain_constraints(
    result: SearchResult, counts: tuple[int, int, int, int]
) -> list[SearchWarning]:
    """A constraint the choice met whose exact chance of holding on a new sample of one fold's
    size is below the confidence it was judged at. Feasibility is judged by a normal
    approximation (:meth:`metro.constraints.Constraint.prediction_bounds`), which on a handful
    of trials is generous: precision 1 of 1 clears 0.7 at 0.55, though a new sample meets 0.7
    with probability 0.13 (:meth:`~metro.constraints.Constraint.log_certainties` computes it
    exactly below 50 expected trials). Refusing such choices cost held floors on the benchmark
    (docs/quality.md, "The few-trial feasibility fix"), so the choice stands and this says what
    it rests on."""
    from metro.search.constrained import judged_constraints

    cells = np.asarray(counts, dtype=np.float64)
    n = int(cells.sum())
    if n <= 0:
        return []
    fraction = 1.0 / result.n_folds if result.n_folds else 1.0
    out: list[SearchWarning] = []
    for constraint in judged_constraints(result.constraints):
        if not constraint.is_proportion or constraint.at_range_end:
            continue  # the normal bound is the whole judgement there (or the estimate is)
        level = constraint.confidence  # judged_constraints gives every one its level
        if level is None or level <= 0.5:
            continue  # judged on the estimate alone, as asked (confidence 0.5): no margin
        log_chance = constraint.log_certainties(cells / n, n, new_fraction=fraction)[0]
        chance = math.exp(float(log_chance))
        if chance >= level - 1e-9:
            continue
        k = round(float(cells @ constraint.score_numerator_cells))
        m = round(float(cells @ constraint.metric.denominator_cells))
        name = f"{spec_display_name(constraint.metric)} {constraint.symbol} {constraint.bound:g}"
        sample = "one fold's held-out rows" if result.n_folds else "the validation rows"
        out.append(
            SearchWarning(
                WarningCode.CONSTRAINT_UNCERTAIN,
                f"{name} was met on the held-out rows ({k} of the {m} rows it counts), but a "
                f"new sample the size of {sample}, which would hold about {m * fraction:.3g} "
                f"rows it counts, meets it with probability {chance:.2f}, below the {level:g} "
                "it was judged at: it rests on too few rows, and new data will miss it more "
                "often than that confidence says (more data, or a looser bound, would make it "
                "hold)",
            )
        )
    return out


def _at_own_bound(grid: tuple[float, ...], lam: float, spec: MetricSpec) -> bool:
    """Whether the grid's end at ``lam`` is next to the metric's own bound on lambda (the grid
    stops one step short of it: metro.search.grid.grid_lambdas). Nothing lies beyond that bound,
    and the step between is the grid's spacing, which the refinement moves within; a warning
    there fired on half of the small-data fits and under most constraints, and said to move a
    bound that cannot move."""
    step = (grid[-1] - grid[0]) / (len(grid) - 1)
    end = grid[0] - step if lam == grid[0] else grid[-1] + step
    own = spec.lambda_range[0] if lam == grid[0] else spec.lambda_range[1]
    return abs(end - own) <= 1e-9 * max(1.0, abs(own))


def _reach_hint(result: SearchResult) -> str:
    """The tightest bound each unmet constraint could have had, met by some fit (with the
    other constraints met too, where there are several) at the confidence it was judged at:
    what a user would loosen it to."""
    from metro.constraints import judged_confidence
    from metro.metrics import spec_display_name

    parts, uncertified, unreached = [], [], []
    for constraint, reached in zip(result.constraints, result.constraint_reach, strict=False):
        # Its display name, as the result's constraints and the dashboard name it: a weighted
        # accuracy's costs are part of what the bound is on ("Weighted accuracy (w_fn 5)").
        name = spec_display_name(constraint.metric)
        if not math.isfinite(reached):
            unreached.append(name)
            continue
        level = judged_confidence(constraint)
        confidence = f"{level:g}" + ("" if constraint.confidence is not None else " (the default)")
        low, high = constraint.score_range
        if reached == (low if constraint.sense == "at_least" else high):
            # The bound of every fit's value is past the range's end: nothing to loosen to.
            uncertified.append(f"{name} at confidence {confidence}")
            continue
        parts.append(f"{name} {constraint.symbol} {reached:.3g} at confidence {confidence}")
    several = len(result.constraints) > 1
    hint = ""
    if parts:
        hint += (
            "; the tightest bound some fit met"
            + (" with the other constraints met: " if several else ": ")
            + ", ".join(parts)
        )
    if uncertified:
        hint += (
            "; no fit that flags rows certifies any bound on "
            + " or ".join(uncertified)
            + (" with the other constraints met" if several else "")
            + ": the held-out rows are too few for that confidence (more data, or a lower one)"
        )
    if several and unreached and len(unreached) < len(result.constraints):
        hint += "; no fit met the others with any bound on " + " or ".join(unreached)
    elif several and unreached:
        hint += "; no fit met all but one of the constraints at once: loosen more than one"
    return hint


def _met_by_flagging_nothing(result: SearchResult, counts: tuple[int, int, int, int]) -> str:
    """What to add where the choice met its constraints by flagging no held-out row, some of them
    only by their convention for 0/0 (a precision floor with ``zero_division`` 1): no classifier
    that flags rows met them."""
    if not result.constraints_satisfied:
        return ""
    cells = np.asarray(counts, dtype=np.float64)
    names = " and ".join(
        c.name for c in result.constraints if abs(float(cells @ c.metric.denominator_cells)) < 0.5
    )
    if not names:
        return ""
    return (
        f"; it meets {names} only because flagging nothing counts as meeting it: no classifier "
        "that flags rows met it on the held-out rows (loosen the bound, or give more data)"
        + _reach_hint(result)
    )


def _flag_nothing_hint(constraints: Sequence[Constraint]) -> str:
    """What to say of constraints with a confidence that a classifier flagging nothing would
    meet if 0/0 counted as meeting them (a precision floor): ``zero_division`` 1 says it does."""
    names = [
        c.name for c in constraints if c.confidence is not None and c.missed_by_flagging_nothing
    ]
    if not names:
        return ""
    return (
        f"; if flagging no row should count as meeting {' and '.join(names)} (no alerts, no false "
        "alerts), give its metric zero_division 1: the search then flags nothing where it "
        "cannot certify the floor otherwise"
    )


@dataclass(frozen=True)
class SelectionPoint:
    """One (lambda, shift) of a grid as the choice judged it: its held-out loss, pooled over the
    folds at its own tuned threshold (what the argmin ran over, not the folds' mean)."""

    lam: float
    shift: str
    loss: float


@dataclass
class SearchResult:
    strategy: str
    best: Candidate
    trace: list[TraceStep] = field(default_factory=list)
    n_fits: int = 0
    # The model to use: the refit at the chosen lambda when there was one, else ``best``.
    final: Candidate | None = None
    # The last bracket [a, b] known to hold lambda* (bisection and Dinkelbach).
    bracket: tuple[float, float] | None = None
    # The decision threshold on h chosen with ``best`` (0 unless SearchConfig.threshold="tuned").
    threshold: float = 0.0
    # The loss the choice was made by: held-out (pooled over the folds when there were folds),
    # at ``threshold``; the training loss when there was no held-out part.
    selection_loss: float = math.nan
    # With folds: the chosen (lambda, shift)'s fit in every fold (``best`` is the first).
    fold_fits: list[Candidate] = field(default_factory=list)
    # With constraints: each one's value where the choice was made (held-out, pooled over the
    # folds, at ``threshold``) and whether all of them held there.
    constraint_values: list[float] = field(default_factory=list)
    constraints_satisfied: bool | None = None
    # The constraints the choice was made under (empty: none).
    constraints: tuple[Constraint, ...] = ()
    # Each constraint's tightest bound that some grid fit flagging rows met with the others
    # met, at the confidence it was judged at (metro.constraints.judged_confidence); nan where
    # no such fit. Where the constraints were not met: how far to loosen them.
    constraint_reach: tuple[float, ...] = ()
    # The held-out confusion counts (tp, fp, fn, tn) behind ``selection_loss`` (None: judged on
    # the training sample), and the number of folds pooled (None: a holdout or none).
    selection_counts: tuple[int, int, int, int] | None = None
    n_folds: int | None = None
    # The grid: every (lambda, shift) the choice ran over, with the loss it was judged by (the
    # curve a user should see beside the folds' own; empty for the other strategies).
    selection_curve: tuple[SelectionPoint, ...] = ()
    # The grid's lambdas in increasing order (None for bisection and Dinkelbach).
    grid: tuple[float, ...] | None = None
    # What the user should look at before trusting the choice (see :func:`diagnose`).
    warnings: list[SearchWarning] = field(default_factory=list)
    # The refinement step after the choice (metro.search.refine; None: not run) and, when it was
    # kept, the delivered model it made (threshold folded in: it decides by its sign).
    refinement: Refinement | None = None
    refined_model: StackedModel | None = None
    # The refined models' scores on the pooled held-out rows when the refinement was kept, in
    # fold order (they decide by the sign): their decisions there
    # (metro.search.safeguard.held_out_decisions), and what a multi-class fit tunes its offsets
    # on, since the delivered margins are the refined model's.
    held_out_scores: np.ndarray | None = None
    # The grid's fallback (the ERM-like lambda at a supported threshold; None: not available)
    # and what the safeguard did with it (None: it did not run; metro.search.safeguard).
    fallback: Fallback | None = None
    safeguard: Safeguard | None = None

    @property
    def best_lambda(self) -> float:
        """The lambda at which the chosen hypothesis was fitted."""
        return self.best.lam

    @property
    def trained_lambda(self) -> float:
        """The lambda the delivered model was trained at (the refit's, which is the chosen
        fit's): the one number to report as "the model's lambda"."""
        return (self.final if self.final is not None else self.best).lam

    @property
    def trained_shift(self) -> str:
        """The cost shift the delivered model was trained with."""
        return (self.final if self.final is not None else self.best).shift

    @property
    def ratio_reached(self) -> float | None:
        """Bisection and Dinkelbach only: the middle of the last bracket, their estimate of the
        optimal ratio lambda*; it need not be a lambda any model was trained at (None for the
        grid)."""
        if self.bracket is None:
            return None
        return (self.bracket[0] + self.bracket[1]) / 2.0

    @property
    def selection_split(self) -> str:
        """What ``selection_loss`` was measured on: "cross-validation" (held-out rows of the
        folds, pooled), "validation" (one held-out part) or "train" (no held-out part)."""
        if self.selection_counts is None:
            return "train"
        return "cross-validation" if self.n_folds and self.n_folds > 1 else "validation"

    @property
    def lambda_star(self) -> float:
        """The search's estimate of lambda*: the middle of the final bracket for bisection and
        Dinkelbach (within epsilon / 2 of lambda* when the signs were right), the chosen grid
        point otherwise."""
        if self.bracket is not None:
            return (self.bracket[0] + self.bracket[1]) / 2.0
        return self.best.lam

    @property
    def best_shift(self) -> str:
        return self.best.shift


def lambda_bounds(spec: MetricSpec, config: SearchConfig) -> tuple[float, float]:
    """The interval the search looks for lambda* in: the metric's own range, or the config's
    bounds. A metric whose denominator does not depend on the predictions fits once, at any
    lambda alike, so an interval emptied by one bound given past its range is not an error
    there (the metric's range stands in)."""
    lo, hi = spec.lambda_range
    if config.lambda_min is not None:
        lo = config.lambda_min
    if config.lambda_max is not None:
        hi = config.lambda_max
    if not lo < hi:
        if not spec.denominator_depends_on_predictions:
            return spec.lambda_range
        raise ValueError(f"empty lambda interval [{lo}, {hi}]")
    return float(lo), float(hi)


def shifts_for(config: SearchConfig) -> tuple[str, ...]:
    return ("minimal", "paper") if config.shift == "auto" else (config.shift,)


class TraceRecorder:
    """Numbers the steps, turns candidates into trace points and reports them as they come."""

    def __init__(
        self,
        spec: MetricSpec,
        on_step: StepCallback | None,
        constraints: Sequence[Constraint] = (),
    ) -> None:
        self.spec = spec
        self.on_step = on_step
        self.constraints = tuple(constraints)
        self.steps: list[TraceStep] = []
        self.n_fits = 0

    def record(
        self,
        candidates: Sequence[Candidate],
        seconds: float,
        *,
        bracket: tuple[float, float] | None = None,
    ) -> None:
        self.n_fits += 1
        per = seconds / max(len(candidates), 1)
        for cand in candidates:
            val = cand.validation_loss(self.spec)
            cells = cand.train_cells if cand.validation_cells is None else cand.validation_cells
            step = TraceStep(
                step=len(self.steps),
                lam=float(cand.lam),
                shift=cand.shift,
                surrogate_loss=float(cand.surrogate_loss),
                l_lambda=cand.l_lambda(self.spec),
                train_metric=self.spec.score_from_loss(cand.train_loss(self.spec)),
                validation_metric=None if val is None else self.spec.score_from_loss(val),
                seconds=per,
                fold=cand.fold,
                bracket=bracket,
                multipliers=cand.multipliers,
                mu=cand.mu,
                constraint_values=tuple(c.value(cells) for c in self.constraints),
            )
            self.steps.append(step)
            if self.on_step is not None:
                self.on_step(step)


class DivergedError(ValueError):
    """Every fit a search could choose from diverged, or a step it depends on did."""


def diverged_error(candidates: Sequence[Candidate], what: str) -> DivergedError:
    lams = ", ".join(f"{c.lam:.4g} ({c.shift})" for c in candidates[:5])
    more = f" and {len(candidates) - 5} more" if len(candidates) > 5 else ""
    return DivergedError(
        f"{what} diverged at lambda {lams}{more}: {DIVERGENCE_RULE}. Lower training.lr, set "
        "training.warm_start to false (a warm-started SGD fit restarts its schedule at the "
        "peak), or use a surrogate with bounded gradients (logistic, hinge)"
    )


def check_converged(candidates: Sequence[Candidate], what: str) -> None:
    """Raise :class:`DivergedError` when a fit the search cannot do without diverged."""
    bad = [c for c in candidates if c.diverged]
    if bad:
        raise diverged_error(bad, what)


def judge(spec: MetricSpec, folds: Sequence[Candidate], *, tune: bool) -> tuple[float, float]:
    """(selection loss, threshold) of one (lambda, shift) fitted on each of ``folds``.

    The held-out confusion counts of the folds are pooled (one metric of the summed counts, not a
    mean of per-fold metrics: a ratio of small counts is noisy, and the pooled one is what a
    single model scored on all the held-out rows would get). With ``tune``, the threshold on h
    that minimizes the pooled loss is chosen on the pooled held-out scores
    (:func:`metro.thresholds.best_threshold`). Without a held-out part, the training loss at
    threshold 0.
    """
    from metro.thresholds import best_threshold

    if any(c.validation_cells is None for c in folds):
        return float(np.mean([c.train_loss(spec) for c in folds])), 0.0
    scored = [c for c in folds if c.validation_scores is not None]
    if tune and len(scored) == len(folds):
        scores = np.concatenate([np.asarray(c.validation_scores) for c in scored])
        labels = np.concatenate([np.asarray(c.validation_labels) for c in scored])
        threshold, loss = best_threshold(spec, scores, labels)
        return float(loss), float(threshold)
    sizes = np.array(
        [1.0 if c.validation_labels is None else float(len(c.validation_labels)) for c in folds]
    )
    cells = np.stack([np.asarray(c.validation_cells) for c in folds])
    pooled = (cells * sizes[:, None]).sum(axis=0) / sizes.sum()
    return float(spec.loss_from_fractions(pooled)), 0.0


def best_of(
    spec: MetricSpec, candidates: Sequence[Candidate], *, tune: bool = False
) -> tuple[Candidate, float, float]:
    """The candidate with the lowest selection loss among the fits that did not diverge, with
    that loss and its threshold (see :func:`judge`); ties go to the lower training loss, then the
    earlier candidate."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    usable = [c for c in candidates if not c.diverged]
    if not usable:
        raise diverged_error(candidates, "every fit")
    ranked = []
    for i, cand in enumerate(usable):
        loss, threshold = judge(spec, [cand], tune=tune)
        ranked.append((loss, cand.train_loss(spec), i, threshold, cand))
    loss, _, _, threshold, best = min(ranked, key=lambda row: row[:3])
    return best, loss, threshold


def update_bracket(
    spec: MetricSpec, cand: Candidate, a: float, b: float, epsilon_m: float
) -> tuple[float, float, bool]:
    """The bracket [a, b] around lambda* after fitting ``cand`` at ``cand.lam``, and whether
    |l^lambda| <= epsilon_m stopped the search (then lambda is taken as lambda*).

    Theorem 5.1: a positive l^lambda moves ``a`` up, a negative one moves ``b`` down. Any fitted h
    also gives lambda* <= L_S(h), which can only tighten ``b`` (it never excludes lambda*).
    """
    # The sign of l^lambda says where lambda* is only for a model that actually minimized.
    check_converged([cand], "the fit that decides the next lambda")
    lam = cand.lam
    value = cand.l_lambda(spec)
    ratio = cand.train_loss(spec)
    if a <= ratio < b:
        b = ratio
    if value > epsilon_m:
        return max(a, lam), b, False
    if value < -epsilon_m:
        return a, min(b, lam), False
    return lam, lam, True


def refit_chosen(
    result: SearchResult, refit_solver: LambdaSolver | None, recorder: TraceRecorder
) -> SearchResult:
    """Refit the chosen lambda on all the data (offered the chosen fit as a warm start, which the
    solver may decline), record it, and close the result (with its warnings)."""
    if refit_solver is not None:
        started = time.perf_counter()
        best = result.best
        # Multipliers only where there were constraints: a solver without them need not know.
        extra = {"multipliers": np.array([best.multipliers])} if best.multipliers else {}
        final = refit_solver.solve(
            np.array([best.lam]), shift=best.shift, warm_start=best, **extra
        )[0]
        final.mu = best.mu
        recorder.record([final], time.perf_counter() - started)
        check_converged([final], "the refit on all the data")
        result.final = final
    result.n_fits = recorder.n_fits
    result.warnings = diagnose(result, recorder.spec)
    return result


def close_bracketing(
    strategy: str,
    spec: MetricSpec,
    visited: Sequence[Candidate],
    bracket: tuple[float, float],
    *,
    config: SearchConfig,
    recorder: TraceRecorder,
    refit_solver: LambdaSolver | None,
) -> SearchResult:
    """The end of bisection and Dinkelbach: choose among the visited fits (the last one with
    ``selection="last"``), at a tuned threshold when the config says so, then refit."""
    best, loss, threshold = best_of(
        spec,
        visited[-1:] if config.selection == "last" else visited,
        tune=config.threshold == "tuned",
    )
    result = SearchResult(
        strategy=strategy,
        best=best,
        trace=recorder.steps,
        bracket=bracket,
        threshold=threshold,
        selection_loss=loss,
        selection_counts=held_out_counts([best], threshold),
    )
    return refit_chosen(result, refit_solver, recorder)
