"""Settings of the lambda search, validated once at the boundary."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from metro.metrics import MAX_ABS_LAMBDA
from metro.options import option, shown

__all__ = [
    "AUTO_CV_FOLDS",
    "AUTO_CV_MAX_ROWS",
    "MAX_ABS_LAMBDA",
    "MAX_CV_FOLDS",
    "MAX_MULTIPLIER",
    "MAX_MULTIPLIERS",
    "MAX_N_LAMBDAS",
    "MAX_REFINE_TEMPERATURE",
    "MAX_REFINE_TEMPERATURES",
    "MAX_STEPS",
    "MULTICLASS",
    "NO_SIGNAL_LEVEL",
    "REFINES",
    "REFINE_SCALES",
    "SELECTIONS",
    "SHIFT_CHOICES",
    "SIGNAL_LEVEL",
    "STRATEGIES",
    "THRESHOLDS",
    "SearchConfig",
]

STRATEGIES: tuple[str, ...] = ("grid", "bisection", "dinkelbach")
SHIFT_CHOICES: tuple[str, ...] = ("minimal", "paper", "auto")
SELECTIONS: tuple[str, ...] = ("best", "last")
THRESHOLDS: tuple[str, ...] = ("zero", "tuned")
REFINES: tuple[str, ...] = ("auto", "off")
REFINE_SCALES: tuple[str, ...] = ("free", "held", "both")
GUARDS: tuple[str, ...] = ("fallback", "off")
# How a multi-class y (average=) is trained: "per_class" (one METRO search per class,
# one-vs-rest, offsets tuned for the average), "multinomial" (one multinomial logistic
# regression, offsets tuned the same way; linear models). per_class stays the default by the
# rule written before the measurement (docs/quality.md, "The multinomial model, measured on 10
# fresh tasks"): ahead on average there (+1.10 points), as on the benchmark's 7 tasks and an
# audit's 12, but one cell 3.99 points behind, past the rule's -2.
MULTICLASS: tuple[str, ...] = ("per_class", "multinomial")
# cv="auto": the grid chooses by AUTO_CV_FOLDS-fold cross-validation up to AUTO_CV_MAX_ROWS rows
# (where a holdout's selection noise costs points: docs/quality.md; every task of the default
# benchmark is below it), by a holdout above (a 25% holdout then has over 5,000 rows, and five
# folds would make the default fit slower than TunedThresholdClassifierCV(cv=5):
# bench/default_speed.py).
AUTO_CV_FOLDS = 5
AUTO_CV_MAX_ROWS = 20_000
# The bounds of a search, so that every accepted config is one a search can finish: lambdas of a
# grid, steps of bisection or Dinkelbach, folds, the constrained grid's multipliers (each at most
# MAX_MULTIPLIER: the constraint's weight against a metric whose loss is bounded by 1 for presets)
# and the refinement's temperatures (fractions of the spread of the scores). lambda_min and
# lambda_max lie in [-MAX_ABS_LAMBDA, MAX_ABS_LAMBDA] (metro.metrics).
MAX_N_LAMBDAS = 1001
MAX_STEPS = 200
MAX_CV_FOLDS = 20
MAX_MULTIPLIERS = 50
MAX_MULTIPLIER = 1e6
MAX_REFINE_TEMPERATURES = 10
MAX_REFINE_TEMPERATURE = 10.0
# The probability of beating the better constant classifier that a kept refinement needs by
# default (refine_signal).
SIGNAL_LEVEL = 0.9
# And below which a delivered choice carries the no_signal warning (metro.search.safeguard): its
# own level, higher, since the held-out rows that judge the choice also chose it. Measured on
# 210 fits (the small-data tier's 20 settings and wide data, F1 and F2, 5 seeds), 25 of them
# below the better constant on test: at 0.9 the warning caught 9 of the 25 (0 of 3 on wide
# data) and 3 of its 21 warnings were false alarms (the fit >2 points above the constant on
# test); at 0.95, 14 of 25 (2 of 3) and 8 of 34 (docs/quality.md, "How often no_signal ...").
NO_SIGNAL_LEVEL = 0.95
# The probability of beating the guard's fallback with which an unsupported choice is kept by
# default (guard_confidence).
GUARD_LEVEL = 0.75


@dataclass(frozen=True)
class SearchConfig:
    """How lambda is searched.

    * ``grid`` (Alg. 3): ``n_lambdas`` evenly spaced values over [lambda_min, lambda_max], trained
      at once, chosen by the metric on a validation split (or ``cv`` folds); optional ``refit`` at
      the chosen lambda on all training data.
    * ``bisection`` (Alg. 2): halve [a, b] by the sign of the empirical l^lambda of the fitted
      model, stop when b - a <= ``epsilon`` or when |l^lambda| <= ``epsilon_m``.
    * ``dinkelbach``: lambda_{k+1} = L_S(h_k), kept inside the bisection bracket.

    ``cv`` is the grid's selection: ``k`` folds (stratified; each lambda and shift is judged by the
    metric of the confusion counts pooled over the k held-out folds), ``None`` for one holdout,
    or ``"auto"`` (the default): :data:`AUTO_CV_FOLDS` folds when the data has at most
    :data:`AUTO_CV_MAX_ROWS` rows and the strategy is the grid, a holdout otherwise. Bisection and
    Dinkelbach follow Theorem 5.1's sign test on one training sample, so they take no folds.

    ``threshold``: ``"zero"`` predicts sign(h) as the paper does; ``"tuned"`` also chooses a
    decision threshold on h for each lambda and shift, on the same held-out scores (pooled over
    the folds), and ranks the pairs by the metric they reach; the delivered model carries the
    threshold in its last bias, so h >= 0 still means positive.

    ``shift`` picks the cost shift (see :mod:`metro.costs`); ``"auto"`` tries both and lets the
    validation metric choose. ``selection`` says which fitted model bisection and Dinkelbach
    return: ``"best"`` on the validation metric among all visited lambdas, or ``"last"`` (the
    paper's choice).

    ``refine``: ``"auto"`` (the default) moves the chosen linear model to a local minimum of the
    metric itself, smoothed at each of ``refine_temperatures`` (:mod:`metro.trainer.refine`), and
    keeps the step only where it scores better on the same held-out rows (pooled over the folds)
    than the unrefined choice (and, under constraints, meets them there too); ``"off"`` never
    refines. Other model kinds, choices that missed their constraints and searches without held-out
    rows are never refined.

    Selection under thin evidence (:mod:`metro.search.safeguard`; the grid without constraints):

    * ``guard``: ``"fallback"`` (the default) never delivers a choice whose held-out counts cannot
      support it (fewer than 5 true positives, or a predicted-positive count below a tenth of
      the held-out positives) without trying the fallback first: the grid point whose cost
      table is closest to unweighted (plain ERM) with its threshold tuned among the supported
      ones. ``"off"``: the choice as it is.
    * ``guard_confidence``: a level in [0.5, 1) (0.75, the default) keeps an unsupported choice
      where a paired bootstrap over the held-out rows finds it better than the fallback with at
      least that probability; None replaces it by the fallback always.
    * ``refine_confidence``: None keeps the refinement on any held-out gain; a level in
      [0.5, 1) keeps it only when a paired bootstrap over the held-out rows finds it better with
      at least that probability.
    * ``refine_signal``: a level in [0.5, 1) (0.9, the default) keeps the refinement only when
      the same bootstrap finds the refined classifier better than the better of predicting every
      row positive and every row negative (without constraints); None: no such check.
    * ``shrink_confidence``: None never shrinks; a level in [0.5, 1) delivers the fallback
      instead of the choice unless a paired bootstrap over the held-out rows finds the choice
      better with at least that probability.
    """

    strategy: str = option(
        "grid",
        "grid (Alg. 3: every lambda at once, chosen on held-out rows), bisection (Alg. 2) or "
        "dinkelbach",
        choices=STRATEGIES,
    )
    n_lambdas: int = option(21, "The grid's lambdas", ge=1, le=MAX_N_LAMBDAS)
    epsilon: float = option(
        1e-3, "Bisection and Dinkelbach stop when the bracket is this narrow", gt=0
    )
    epsilon_m: float = option(
        0.0, "Bisection and Dinkelbach also stop when |l^lambda| is at most this", ge=0
    )
    max_steps: int = option(
        30, "Bisection and Dinkelbach: at most this many fits", ge=1, le=MAX_STEPS
    )
    # "minimal" by measurement: with folds and a tuned threshold, "auto" (both shifts) scored
    # the same on the default benchmark and took about five times as long (docs/quality.md).
    shift: str = option(
        "minimal",
        "The cost shift (metro.costs): minimal, paper, or auto (both, chosen on held-out rows)",
        choices=SHIFT_CHOICES,
    )
    cv: int | str | None = option(
        "auto",
        "Folds the grid chooses lambda by (metric of the pooled held-out counts); 'auto' is "
        f"{AUTO_CV_FOLDS} folds up to {AUTO_CV_MAX_ROWS:,} rows, null a holdout",
        choices=("auto",),
        ge=2,
        le=MAX_CV_FOLDS,
    )
    threshold: str = option(
        "tuned",
        "'tuned' chooses a decision threshold on h with lambda, on the same held-out scores, "
        "and folds it into the model; 'zero' is the paper's sign(h)",
        choices=THRESHOLDS,
    )
    refit: bool = option(
        True,
        "Refit the chosen lambda on training + validation; false (deliver the holdout's model) "
        "needs cv null, as folds deliver the refit",
    )
    selection: str = option(
        "best",
        "Bisection and Dinkelbach deliver the best visited model on held-out rows, or the last",
        choices=SELECTIONS,
    )
    lambda_min: float | None = option(
        None,
        "The lower end of lambda's range (null: the metric's own bound)",
        ge=-MAX_ABS_LAMBDA,
        le=MAX_ABS_LAMBDA,
    )
    lambda_max: float | None = option(
        None,
        "The upper end of lambda's range (null: the metric's own bound)",
        ge=-MAX_ABS_LAMBDA,
        le=MAX_ABS_LAMBDA,
    )
    # The Lagrange multipliers tried with each lambda when there are constraints
    # (metro.search.constrained); 0 is the unconstrained problem.
    multipliers: tuple[float, ...] = option(
        (0.0, 0.25, 1.0, 4.0, 16.0),
        "With constraints: the Lagrange multipliers mu tried with every lambda (0 is the "
        "unconstrained problem)",
        min_items=1,
        max_items=MAX_MULTIPLIERS,
        item_ge=0,
        item_le=MAX_MULTIPLIER,
    )
    # The held-out rows choose among the temperatures' refined models and no refinement. Three
    # temperatures, annealed (0.5, then 0.2 from it, then 0.05), with the delivered model's
    # consistency check: +0.15 points over the two independent temperatures before it (p = 0.006,
    # 180 cells x 10 seeds; docs/quality.md, "The refinement's schedule").
    refine: str = option(
        "auto",
        "'auto': after the choice, a linear model is moved to a local minimum of the smoothed "
        "metric itself, kept only if it scores better on the same held-out rows; 'off': the "
        "search's model as it is",
        choices=REFINES,
    )
    refine_temperatures: tuple[float, ...] = option(
        (0.05, 0.2, 0.5),
        "The temperatures the refinement tries, as fractions of the spread of the chosen "
        "model's scores",
        min_items=1,
        max_items=MAX_REFINE_TEMPERATURES,
        item_gt=0,
        item_le=MAX_REFINE_TEMPERATURE,
    )
    refine_anneal: bool = option(
        True,
        "Try the refinement's temperatures hottest first, each starting from the one before "
        "(graduated smoothing) instead of each from the search's choice",
    )
    # "both" by measurement: +0.18 points over "free" alone (the default before; p = 0.005),
    # both tiers, 180 cells x 10 seeds, paired with the default rerun on the same machine
    # (docs/quality.md, "The refinement's scale"); "held" alone loses a task where sharpening
    # isolates a few rows (TeachingRatings F0.5, -13 points).
    refine_scale: str = option(
        "both",
        "'free': the refined weights may grow, sharpening the sigmoid towards the 0-1 loss; "
        "'held': the scores' spread is held at the start's, so each temperature stays the "
        "smoothing it names; 'both': each schedule is run and the held-out rows choose",
        choices=REFINE_SCALES,
    )
    refine_consistency: float | None = option(
        2.0,
        "null: no check; a factor f >= 1 keeps a refinement only if the delivered model, refined "
        "on all the training rows, predicts positive on them at a rate within f times (either "
        "way) the rate of the refined fold models on the held-out rows that judged them",
        ge=1.0,
        le=100.0,
    )
    # "fallback" by measurement: +0.21 points on the small-data tier (p = 0.02), no change on the
    # main tier's small tasks (docs/quality.md, "Selection under thin evidence").
    guard: str = option(
        "fallback",
        "'fallback': a choice whose held-out counts cannot support it (fewer than 5 true "
        "positives, or predicted positives below a tenth of the held-out positives) is compared "
        "with the plain-ERM grid point at a supported threshold first; 'off': the choice as it is",
        choices=GUARDS,
    )
    # 0.75 by measurement (docs/quality.md, "The guard's fallback against the choice it
    # replaces"): the outside check's worst cell against shuffled threshold tuning -12.34 ->
    # -5.49, +0.21 a fit over null; the small tier unchanged (-0.00, worst cell -4.02).
    guard_confidence: float | None = option(
        GUARD_LEVEL,
        "null: a choice the guard finds unsupported gives way to the fallback; a level in "
        "[0.5, 1) (0.75, the default) keeps it where a paired bootstrap over the held-out rows "
        "finds it better than the fallback with at least that probability",
        ge=0.5,
        lt=1.0,
    )
    refine_confidence: float | None = option(
        None,
        "null keeps the refinement on any held-out gain; a level in [0.5, 1) keeps it only when "
        "a paired bootstrap over the held-out rows finds it better with at least that probability",
        ge=0.5,
        lt=1.0,
    )
    # 0.9 by measurement (docs/quality.md, "A refinement needs a boundary"): both tiers, 180
    # cells x 10 seeds, 32 of 571 kept steps dropped, +0.013 points over the default before
    # (p = 0.05), and the one cell more than 3 points behind TTCV (Chile@500 F2) is no longer.
    refine_signal: float | None = option(
        SIGNAL_LEVEL,
        "null: no check; a level in [0.5, 1) keeps a refinement only when a paired bootstrap over "
        "the held-out rows finds the refined classifier better than the better constant one "
        "(every row positive, or every row negative) with at least that probability: without "
        "evidence of a boundary there is nothing to refine (without constraints only)",
        ge=0.5,
        lt=1.0,
    )
    shrink_confidence: float | None = option(
        None,
        "null never shrinks; a level in [0.5, 1) delivers the fallback instead of the choice "
        "unless a paired bootstrap finds the choice better with at least that probability",
        ge=0.5,
        lt=1.0,
    )

    multiclass: str = option(
        "per_class",
        "Multi-class data (metric.average): 'per_class' runs one METRO search per class "
        "(one-vs-rest) and tunes per-class offsets on their margins for the average; "
        "'multinomial' fits one multinomial logistic regression (linear models only; no lambda) "
        "and tunes the offsets on its logits. Multi-label data is always one search per label",
        choices=MULTICLASS,
    )

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"unknown search strategy {self.strategy!r}; "
                f"expected one of {', '.join(STRATEGIES)}"
            )
        if self.shift not in SHIFT_CHOICES:
            raise ValueError(
                f"unknown shift {self.shift!r}; expected one of {', '.join(SHIFT_CHOICES)}"
            )
        if self.selection not in SELECTIONS:
            raise ValueError(
                f"unknown selection {self.selection!r}; expected one of {', '.join(SELECTIONS)}"
            )
        _int_at_least("n_lambdas", self.n_lambdas, 1, MAX_N_LAMBDAS)
        _int_at_least("max_steps", self.max_steps, 1, MAX_STEPS)
        mus = self.multipliers
        if (
            not isinstance(mus, tuple | list)
            or not 1 <= len(mus) <= MAX_MULTIPLIERS
            or not all(_is_finite_number(m) and 0 <= m <= MAX_MULTIPLIER for m in mus)
        ):
            raise ValueError(
                f"multipliers must be 1 to {MAX_MULTIPLIERS} numbers in [0, {MAX_MULTIPLIER:g}], "
                f"got {shown(self.multipliers)}"
            )
        object.__setattr__(self, "multipliers", tuple(float(m) for m in mus))
        if self.refine not in REFINES:
            raise ValueError(
                f"unknown refine {self.refine!r}; expected one of {', '.join(REFINES)}"
            )
        temps = self.refine_temperatures
        if (
            not isinstance(temps, tuple | list)
            or not 1 <= len(temps) <= MAX_REFINE_TEMPERATURES
            or not all(_is_finite_number(t) and 0 < t <= MAX_REFINE_TEMPERATURE for t in temps)
        ):
            raise ValueError(
                f"refine_temperatures must be 1 to {MAX_REFINE_TEMPERATURES} numbers in "
                f"(0, {MAX_REFINE_TEMPERATURE:g}], got {shown(self.refine_temperatures)}"
            )
        object.__setattr__(self, "refine_temperatures", tuple(float(t) for t in temps))
        if not isinstance(self.refine_anneal, bool):
            raise ValueError("refine_anneal must be true or false")
        if self.refine_scale not in REFINE_SCALES:
            raise ValueError(
                f"unknown refine_scale {self.refine_scale!r}; "
                f"expected one of {', '.join(REFINE_SCALES)}"
            )
        level = self.refine_consistency
        if level is not None and not (_is_finite_number(level) and 1.0 <= level <= 100.0):
            raise ValueError(
                f"refine_consistency must be null or a number in [1, 100], got {level!r}"
            )
        if self.multiclass not in MULTICLASS:
            raise ValueError(
                f"unknown multiclass {shown(self.multiclass)}; "
                f"expected one of {', '.join(MULTICLASS)}"
            )
        if self.guard not in GUARDS:
            raise ValueError(f"unknown guard {self.guard!r}; expected one of {', '.join(GUARDS)}")
        if self.guard_confidence not in (None, GUARD_LEVEL) and self.guard == "off":
            raise ValueError(
                "guard_confidence weighs a choice the guard finds unsupported against the "
                "fallback: it needs guard 'fallback', not 'off'"
            )
        for name in ("guard_confidence", "refine_confidence", "refine_signal", "shrink_confidence"):
            level = getattr(self, name)
            if level is not None and not (_is_finite_number(level) and 0.5 <= level < 1.0):
                raise ValueError(f"{name} must be null or a number in [0.5, 1), got {level!r}")
        if isinstance(self.cv, str):
            if self.cv != "auto":
                raise ValueError(f"cv must be 'auto', an integer or null, got {self.cv!r}")
        elif self.cv is not None:
            _int_at_least("cv", self.cv, 2, MAX_CV_FOLDS)
            if self.strategy != "grid":
                raise ValueError(
                    f"cv={self.cv} is only available with the grid strategy; {self.strategy} "
                    "chooses on a holdout (set cv to null or 'auto')"
                )
        if self.threshold not in THRESHOLDS:
            raise ValueError(
                f"unknown threshold {self.threshold!r}; expected one of {', '.join(THRESHOLDS)}"
            )
        if not _is_finite_number(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a positive number, got {self.epsilon!r}")
        if not _is_finite_number(self.epsilon_m) or self.epsilon_m < 0:
            raise ValueError(f"epsilon_m must be a non-negative number, got {self.epsilon_m!r}")
        for name in ("lambda_min", "lambda_max"):
            value = getattr(self, name)
            if value is not None and not (
                _is_finite_number(value) and abs(value) <= MAX_ABS_LAMBDA
            ):
                raise ValueError(
                    f"{name} must be a finite number between {-MAX_ABS_LAMBDA:g} and "
                    f"{MAX_ABS_LAMBDA:g}, got {shown(value)}"
                )
        if (
            self.lambda_min is not None
            and self.lambda_max is not None
            and self.lambda_min >= self.lambda_max
        ):
            raise ValueError("lambda_min must be smaller than lambda_max")
        if not isinstance(self.refit, bool):
            raise ValueError("refit must be true or false")
        if not self.refit and self.strategy == "grid" and self.cv is not None:
            # Folds leave no model trained on every row but the refit: without it there would
            # be five fold models and nothing to deliver, so refit=false used to be ignored.
            raise ValueError(
                "refit=false needs cv=null (a holdout, whose model is then delivered): with "
                f"cross-validation folds (cv={self.cv!r}) the delivered model is always the "
                "refit on every row"
            )

    def folds_for(self, n_rows: int) -> int | None:
        """How many folds the search chooses by on ``n_rows`` rows (None: one holdout)."""
        if self.cv == "auto":
            if self.strategy == "grid" and n_rows <= AUTO_CV_MAX_ROWS:
                return AUTO_CV_FOLDS
            return None
        return None if self.cv is None else int(self.cv)

    def models_trained(self, n_rows: int, *, constrained: bool = False) -> int:
        """At most how many models one search trains on ``n_rows`` rows of training +
        validation: the grid's lambdas on each fold (and each multiplier under constraints),
        bisection's or Dinkelbach's ``max_steps``, for each shift tried, plus the refit. Exact
        for the grid; the refinement step after the choice retrains nothing."""
        shifts = 2 if self.shift == "auto" else 1
        if self.strategy == "grid":
            per_shift = self.n_lambdas * (self.folds_for(n_rows) or 1)
            if constrained:
                per_shift *= len(self.multipliers)
        else:
            per_shift = self.max_steps
        return shifts * per_shift + (1 if self.refit else 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown search setting(s) {sorted(unknown)}")
        return cls(**data)


def _is_finite_number(value: Any) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past float64's range
        return False


def _int_at_least(name: str, value: Any, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer between {low} and {high}, got {value!r}")
