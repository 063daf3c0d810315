"""Settings of the lambda search, validated once at the boundary."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = [
    "AUTO_CV_FOLDS",
    "AUTO_CV_MAX_ROWS",
    "REFINES",
    "SELECTIONS",
    "SHIFT_CHOICES",
    "STRATEGIES",
    "THRESHOLDS",
    "SearchConfig",
]

STRATEGIES: tuple[str, ...] = ("grid", "bisection", "dinkelbach")
SHIFT_CHOICES: tuple[str, ...] = ("minimal", "paper", "auto")
SELECTIONS: tuple[str, ...] = ("best", "last")
THRESHOLDS: tuple[str, ...] = ("zero", "tuned")
REFINES: tuple[str, ...] = ("auto", "off")
# cv="auto": the grid chooses by AUTO_CV_FOLDS-fold cross-validation up to AUTO_CV_MAX_ROWS rows
# (where a holdout's selection noise costs points: docs/quality.md; every task of the default
# benchmark is below it), by a holdout above (a 25% holdout then has over 5,000 rows, and five
# folds would make the default fit slower than TunedThresholdClassifierCV(cv=5):
# bench/default_speed.py).
AUTO_CV_FOLDS = 5
AUTO_CV_MAX_ROWS = 20_000


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
    """

    strategy: str = "grid"
    n_lambdas: int = 21
    epsilon: float = 1e-3
    epsilon_m: float = 0.0
    max_steps: int = 30
    # "minimal" by measurement: with folds and a tuned threshold, "auto" (both shifts) scored
    # the same on the default benchmark and took about five times as long (docs/quality.md).
    shift: str = "minimal"
    cv: int | str | None = "auto"
    threshold: str = "tuned"
    refit: bool = True
    selection: str = "best"
    lambda_min: float | None = None
    lambda_max: float | None = None
    # The Lagrange multipliers tried with each lambda when there are constraints
    # (metro.search.constrained); 0 is the unconstrained problem.
    multipliers: tuple[float, ...] = (0.0, 0.25, 1.0, 4.0, 16.0)
    # Both temperatures were fixed before the refinement was first measured; the held-out rows
    # choose between them and no refinement (docs/quality.md).
    refine: str = "auto"
    refine_temperatures: tuple[float, ...] = (0.05, 0.2)

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
        _int_at_least("n_lambdas", self.n_lambdas, 1, 1001)
        _int_at_least("max_steps", self.max_steps, 1, 200)
        mus = self.multipliers
        if (
            not isinstance(mus, tuple | list)
            or not 1 <= len(mus) <= 50
            or not all(_finite(m) and m >= 0 for m in mus)
        ):
            raise ValueError(
                f"multipliers must be 1 to 50 non-negative numbers, got {self.multipliers!r}"
            )
        object.__setattr__(self, "multipliers", tuple(float(m) for m in mus))
        if self.refine not in REFINES:
            raise ValueError(
                f"unknown refine {self.refine!r}; expected one of {', '.join(REFINES)}"
            )
        temps = self.refine_temperatures
        if (
            not isinstance(temps, tuple | list)
            or not 1 <= len(temps) <= 10
            or not all(_finite(t) and 0 < t <= 10 for t in temps)
        ):
            raise ValueError(
                "refine_temperatures must be 1 to 10 numbers in (0, 10], "
                f"got {self.refine_temperatures!r}"
            )
        object.__setattr__(self, "refine_temperatures", tuple(float(t) for t in temps))
        if isinstance(self.cv, str):
            if self.cv != "auto":
                raise ValueError(f"cv must be 'auto', an integer or null, got {self.cv!r}")
        elif self.cv is not None:
            _int_at_least("cv", self.cv, 2, 20)
            if self.strategy != "grid":
                raise ValueError(
                    f"cv={self.cv} is only available with the grid strategy; {self.strategy} "
                    "chooses on a holdout (set cv to null or 'auto')"
                )
        if self.threshold not in THRESHOLDS:
            raise ValueError(
                f"unknown threshold {self.threshold!r}; expected one of {', '.join(THRESHOLDS)}"
            )
        if not _finite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a positive number, got {self.epsilon!r}")
        if not _finite(self.epsilon_m) or self.epsilon_m < 0:
            raise ValueError(f"epsilon_m must be a non-negative number, got {self.epsilon_m!r}")
        for name in ("lambda_min", "lambda_max"):
            value = getattr(self, name)
            if value is not None and not _finite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if (
            self.lambda_min is not None
            and self.lambda_max is not None
            and self.lambda_min >= self.lambda_max
        ):
            raise ValueError("lambda_min must be smaller than lambda_max")
        if not isinstance(self.refit, bool):
            raise ValueError("refit must be true or false")

    def folds_for(self, n_rows: int) -> int | None:
        """How many folds the search chooses by on ``n_rows`` rows (None: one holdout)."""
        if self.cv == "auto":
            if self.strategy == "grid" and n_rows <= AUTO_CV_MAX_ROWS:
                return AUTO_CV_FOLDS
            return None
        return None if self.cv is None else int(self.cv)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown search setting(s) {sorted(unknown)}")
        return cls(**data)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _int_at_least(name: str, value: Any, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer between {low} and {high}, got {value!r}")
