"""Metric specifications: a metric is a ratio of two linear functions of TP, FP, FN, TN.

Following the paper, a metric is stated as a *loss* to minimize,

    L(h) = E[a1 h y + a2 y + a3 h + a4] / E[b1 h y + b2 y + b3 h + b4],   h, y in {-1, +1},

with coefficient vectors ``alpha`` and ``beta`` on the basis (h*y, y, h, 1). Everything here is
derived from the four confusion cells (the paper swaps TN and FN in Section 3.1 and gives Jaccard's
beta with wrong signs, see ERRATA), and every preset is tested against ``sklearn.metrics``.

The cells, as fractions of the sample, in that basis (h_bar = (h+1)/2, y_bar = (y+1)/2):

    TP = h_bar y_bar             = ( 1,  1,  1, 1) / 4
    FP = h_bar (1 - y_bar)       = (-1, -1,  1, 1) / 4
    FN = (1 - h_bar) y_bar       = (-1,  1, -1, 1) / 4
    TN = (1 - h_bar)(1 - y_bar)  = ( 1, -1, -1, 1) / 4
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from metro.options import Option, UnknownChoiceError, option, parameter_options, shown

__all__ = [
    "CELLS",
    "CELL_BASIS",
    "F_BETA_RANGE",
    "MAX_ABS_COEFFICIENT",
    "MAX_ABS_LAMBDA",
    "MetricSpec",
    "PriorDependentMetric",
    "UnknownMetricParameterError",
    "accuracy",
    "balanced_accuracy",
    "confusion_fractions",
    "display_name",
    "f1",
    "f_beta",
    "false_positive_rate",
    "get_metric",
    "jaccard",
    "precision",
    "preset_parameters",
    "recall",
    "true_negative_rate",
    "weighted_accuracy",
]

CELLS = ("tp", "fp", "fn", "tn")

# Rows: tp, fp, fn, tn, const; columns: the paper's basis (h*y, y, h, 1).
CELL_BASIS: dict[str, np.ndarray] = {
    "tp": np.array([1.0, 1.0, 1.0, 1.0]) / 4,
    "fp": np.array([-1.0, -1.0, 1.0, 1.0]) / 4,
    "fn": np.array([-1.0, 1.0, -1.0, 1.0]) / 4,
    "tn": np.array([1.0, -1.0, -1.0, 1.0]) / 4,
    "const": np.array([0.0, 0.0, 0.0, 1.0]),
}
# The inverse map: a basis vector (h*y, y, h, 1) expressed on the cells. The four cells of one
# example sum to one (the constant term is tp + fp + fn + tn), so a vector in the basis has a
# unique expression as a linear function of the cell fractions.
_BASIS_TO_CELLS = np.linalg.inv(np.stack([CELL_BASIS[c] for c in CELLS]))  # [4 basis, 4 cells]

_ZERO_TOL = 1e-12

# The largest |lambda| a search may be given (SearchConfig.lambda_min / lambda_max) and the
# largest |zero_division|. A lambda is a value of the loss (lambda* is the optimal one) and every
# preset's loss lies in [-1, 1], so this leaves custom ratios six orders of magnitude while
# keeping a grid over [lambda_min, lambda_max] finite (the span of -1e308..1e308 overflows to
# inf). A custom metric's own range (lambda_range) is finite by MAX_ABS_COEFFICIENT.
MAX_ABS_LAMBDA = 1e6
# The largest |coefficient| of a metric (alpha, beta, or a weight on a confusion cell). With
# |lambda| <= MAX_ABS_LAMBDA the cost coefficients alpha - lambda * beta stay below 1e19, far
# inside float64 and, once the cost tables are normalized, float32.
MAX_ABS_COEFFICIENT = 1e12
# F-beta's beta: beyond 1000 it is recall and below 0.001 precision in all but name, and
# (1 + beta^2) stays within MAX_ABS_COEFFICIENT.
F_BETA_RANGE = (1e-3, 1e3)


def _as_binary(y: Any, name: str) -> np.ndarray:
    """Labels as booleans, positive = True. Accepts {0,1}, {-1,+1} and booleans."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype == bool:
        return arr
    if not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be numeric labels in {{0, 1}} or {{-1, +1}}")
    values = set(np.unique(arr).tolist())
    if not values <= {0, 1} and not values <= {-1, 1}:
        raise ValueError(
            f"{name} must hold labels in {{0, 1}} or {{-1, +1}}, got {sorted(values)[:5]}"
        )
    return arr > 0


def confusion_fractions(y_true: Any, y_pred: Any) -> np.ndarray:
    """The confusion cells (tp, fp, fn, tn) as fractions of the sample."""
    t = _as_binary(y_true, "y_true")
    p = _as_binary(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.shape[0]} labels but y_pred has {p.shape[0]}")
    if t.size == 0:
        raise ValueError("cannot score an empty sample")
    n = t.size
    tp = np.count_nonzero(t & p)
    fp = np.count_nonzero(~t & p)
    fn = np.count_nonzero(t & ~p)
    return np.array([tp, fp, fn, n - tp - fp - fn], dtype=np.float64) / n


def _as_float(value: Any) -> float:
    """``float(value)``, where an integer past float64's range counts as infinite (``float``
    raises OverflowError for it): the range checks below then refuse it with their message."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _coeffs_from_mapping(cells: Mapping[str, float], what: str) -> np.ndarray:
    unknown = set(cells) - set(CELL_BASIS)
    if unknown:
        raise ValueError(
            f"{what} has unknown term(s) {sorted(unknown)}; use tp, fp, fn, tn and const"
        )
    vec = np.zeros(4)
    for key, weight in cells.items():
        w = _as_float(weight)
        if not math.isfinite(w) or abs(w) > MAX_ABS_COEFFICIENT:
            raise ValueError(
                f"{what}[{key!r}] must be a finite number of at most {MAX_ABS_COEFFICIENT:g} in "
                f"absolute value, got {weight!r}"
            )
        vec += w * CELL_BASIS[key]
    return vec


def _check_vector(v: Any, name: str) -> np.ndarray:
    bounded = f"{name} must be finite numbers of at most {MAX_ABS_COEFFICIENT:g} in absolute value"
    try:
        arr = np.asarray(v, dtype=np.float64)
    except OverflowError:  # an integer past float64's range
        raise ValueError(bounded) from None
    if arr.shape != (4,):
        raise ValueError(f"{name} must have exactly 4 coefficients, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > MAX_ABS_COEFFICIENT):
        raise ValueError(f"{bounded}, got {arr.tolist()}")
    return arr


@dataclass(frozen=True, eq=False)
class MetricSpec:
    """A ratio metric as the paper's loss L = <alpha, phi> / <beta, phi>, minimized.

    ``greater_is_better`` says how :meth:`score` reports it: presets are stated so that the loss is
    minus the metric (``loss = -F1``), and ``score`` returns the metric itself (F1). A raw spec is a
    loss and scores as its loss.

    ``zero_division`` is the *score* reported when numerator and denominator are both zero (for
    instance precision when nothing is predicted positive), as in ``sklearn.metrics``.

    The constructor normalizes signs so that the denominator is non-negative on every prediction,
    and rejects specs whose denominator changes sign, is identically zero, or is zero where the
    numerator is not (an infinite loss).
    """

    alpha: np.ndarray
    beta: np.ndarray
    name: str = option("custom", "The metric's name in results and manifests")
    greater_is_better: bool = option(
        False,
        "How the ratio reads: true for a score (F1, recall: larger is better, minimized as its "
        "negative), false for a loss",
    )
    zero_division: float = option(
        0.0,
        "The score when the ratio is 0/0 (precision with nothing predicted positive), as in "
        "sklearn.metrics",
        ge=-MAX_ABS_LAMBDA,
        le=MAX_ABS_LAMBDA,
    )
    params: dict[str, Any] = field(default_factory=dict)
    _tol: float = field(default=0.0, init=False, repr=False, compare=False)
    # A prior-dependent metric's builder (PriorDependentMetric.resolve sets it): this spec's
    # coefficients are those of the prior it was resolved on, and cells of other rows are scored
    # with the coefficients of their own prior (see losses_of_cells).
    _by_prior: Callable[[float], MetricSpec] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        alpha = _check_vector(self.alpha, "alpha")
        beta = _check_vector(self.beta, "beta")
        if not np.any(alpha != 0):
            raise ValueError("alpha is all zeros: the metric would be constant")
        if not np.any(beta != 0):
            raise ValueError("beta is all zeros: the denominator would be identically zero")
        # Zero is judged relative to the coefficients' size, so scaling alpha and beta together
        # (which leaves the metric unchanged) never changes a decision below.
        tol = _ZERO_TOL * max(float(np.abs(alpha).max()), float(np.abs(beta).max()))
        den_cells = beta @ _BASIS_TO_CELLS
        # The denominator is linear in the cell fractions, which live on the simplex; its sign on
        # every possible prediction is decided at the four vertices (all-TP, all-FP, ...).
        if np.all(den_cells <= tol):
            alpha, beta, den_cells = -alpha, -beta, -den_cells
        if np.any(den_cells < -tol):
            raise ValueError(
                "the denominator changes sign across predictions "
                f"(on tp, fp, fn, tn it weighs {np.round(den_cells, 6).tolist()}); "
                "a ratio metric needs a denominator of one sign"
            )
        num_cells = alpha @ _BASIS_TO_CELLS
        bad = [
            c
            for c, d, a in zip(CELLS, den_cells, num_cells, strict=True)
            if abs(d) <= tol and abs(a) > tol
        ]
        if bad:
            raise ValueError(
                "the denominator can be zero where the numerator is not "
                f"(when every example is {'/'.join(b.upper() for b in bad)}), "
                "which makes the loss infinite"
            )
        # zero_division is a value of the loss (a lambda the grid may span): bounded as lambdas are.
        if not -MAX_ABS_LAMBDA <= _as_float(self.zero_division) <= MAX_ABS_LAMBDA:
            raise ValueError(
                f"zero_division must be a finite number between {-MAX_ABS_LAMBDA:g} and "
                f"{MAX_ABS_LAMBDA:g}, got {self.zero_division!r}"
            )
        if np.ptp([n / d for n, d in zip(num_cells, den_cells, strict=True) if d > tol]) <= tol:
            raise ValueError("the metric is constant on every prediction: nothing to optimize")
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "_tol", tol)
        object.__setattr__(self, "zero_division", float(self.zero_division))

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_confusion(
        cls,
        *,
        numerator: Mapping[str, float],
        denominator: Mapping[str, float],
        greater_is_better: bool = True,
        name: str = "custom",
        zero_division: float = 0.0,
        params: Mapping[str, Any] | None = None,
    ) -> MetricSpec:
        """A metric numerator/denominator over the cells, e.g. F1 is
        ``numerator={"tp": 2}, denominator={"tp": 2, "fp": 1, "fn": 1}``.

        With ``greater_is_better`` (the default) the ratio is a score to maximize and the loss is
        its negative; otherwise the ratio itself is the loss.
        """
        num = _coeffs_from_mapping(numerator, "numerator")
        den = _coeffs_from_mapping(denominator, "denominator")
        # Named as given: alpha and beta are not this form's words.
        if not np.any(num != 0):
            raise ValueError("numerator has no nonzero weight: the metric would be constant")
        if not np.any(den != 0):
            raise ValueError("denominator has no nonzero weight: it would be identically zero")
        sign = -1.0 if greater_is_better else 1.0
        return cls(
            alpha=sign * num,
            beta=den,
            name=name,
            greater_is_better=greater_is_better,
            zero_division=zero_division,
            params=dict(params or {}),
        )

    def resolve(self, y: Any = None) -> MetricSpec:
        """This spec (a concrete spec needs no class prior)."""
        return self

    # -- views ----------------------------------------------------------------------------------
    @property
    def numerator_cells(self) -> np.ndarray:
        """Numerator of the loss as weights on (tp, fp, fn, tn)."""
        return np.asarray(self.alpha @ _BASIS_TO_CELLS)

    @property
    def denominator_cells(self) -> np.ndarray:
        """Denominator as weights on (tp, fp, fn, tn); non-negative by construction."""
        return np.asarray(self.beta @ _BASIS_TO_CELLS)

    @property
    def denominator_depends_on_predictions(self) -> bool:
        """False when beta1 = beta3 = 0: the denominator is fixed by the labels, so lambda* is
        not needed and a single cost-sensitive fit optimizes the metric exactly."""
        return bool(abs(self.beta[0]) > self._tol or abs(self.beta[2]) > self._tol)

    @property
    def lambda_range(self) -> tuple[float, float]:
        """[lambda_min, lambda_max]: the loss is linear-fractional on the simplex of cell
        fractions, so its extremes are ratios at the vertices with a positive denominator."""
        den = self.denominator_cells
        num = self.numerator_cells
        ratios = [n / d for n, d in zip(num, den, strict=True) if d > self._tol]
        if np.any(den <= self._tol):
            # 0/0 on a face of the simplex scores zero_division: that loss is reachable too
            ratios.append(-self.zero_division if self.greater_is_better else self.zero_division)
        return float(min(ratios)), float(max(ratios))

    # -- evaluation -----------------------------------------------------------------------------
    def loss_from_fractions(self, cells: np.ndarray) -> float:
        """The loss of one prediction's confusion ``cells`` (tp, fp, fn, tn: fractions or
        counts), as :meth:`losses_of_cells`."""
        return float(self.losses_of_cells(np.asarray(cells, dtype=np.float64).reshape(4)))

    def losses_of_cells(self, cells: Any) -> np.ndarray:
        """The loss of every row of ``cells`` ([..., 4]: tp, fp, fn, tn, as fractions or
        counts: a ratio does not mind the scale). 0/0 is the loss of ``zero_division``.

        A denominator is zero where it is zero relative to the terms it sums (never relative
        to the coefficients' size: a metric weighing tn by 1e12 scored a denominator of 0.1 on
        tp and fp as 0/0, and one scaled down to 1e-9 did so elsewhere). A prior-dependent
        metric (balanced accuracy) is the metric of each row's own labels: its coefficients are
        those of the row's positive fraction (tp + fn), not of the rows it was resolved on (a
        holdout's balanced accuracy came out at 1.5 on the training rows' prior)."""
        return self._losses_and_zeros(cells)[0]

    def scores_of_cells(self, cells: Any) -> np.ndarray:
        """:meth:`losses_of_cells` in the metric's natural orientation (F1 itself)."""
        return self.scores_and_zeros(cells)[0]

    def zero_denominators(self, cells: Any) -> np.ndarray:
        """Where the denominator of each row of ``cells`` is zero (the ratio is 0/0)."""
        return self._losses_and_zeros(cells)[1]

    def scores_and_zeros(self, cells: Any) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores_of_cells` and :meth:`zero_denominators` from one pass over ``cells``
        (a constraint's bounds need both)."""
        loss, zero = self._losses_and_zeros(cells)
        return np.asarray((-loss if self.greater_is_better else loss) + 0.0), zero

    def _losses_and_zeros(self, cells: Any) -> tuple[np.ndarray, np.ndarray]:
        num, den, zero = self._ratio_parts(np.asarray(cells, dtype=np.float64))
        fallback = -self.zero_division if self.greater_is_better else self.zero_division
        return np.asarray(np.where(zero, fallback, num / np.where(zero, 1.0, den))), zero

    def _ratio_parts(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        num_w, den_w = self._cell_weights(cells)
        terms = cells * den_w
        den = np.sum(terms, axis=-1)
        zero = np.abs(den) <= _ZERO_TOL * np.sum(np.abs(terms), axis=-1)
        return np.sum(cells * num_w, axis=-1), den, zero

    def _cell_weights(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numerator and denominator weights on the cells of every row of ``cells``."""
        num_w, den_w = self.numerator_cells, self.denominator_cells
        if self._by_prior is None:
            return num_w, den_w
        total = cells.sum(axis=-1)
        prior = np.divide(
            cells[..., 0] + cells[..., 2], total, out=np.zeros_like(total), where=total > 0
        )
        num_rows = np.broadcast_to(num_w, cells.shape).copy()
        den_rows = np.broadcast_to(den_w, cells.shape).copy()
        for p in np.unique(prior[total > 0]):
            own = self._by_prior(float(p))
            rows = (prior == p) & (total > 0)
            num_rows[rows], den_rows[rows] = own.numerator_cells, own.denominator_cells
        return num_rows, den_rows

    def loss(self, y_true: Any, y_pred: Any) -> float:
        """The paper's L on a sample (a loss: smaller is better)."""
        return self.loss_from_fractions(confusion_fractions(y_true, y_pred))

    def score(self, y_true: Any, y_pred: Any) -> float:
        """The metric in its natural orientation (F1 itself for the F1 preset)."""
        return self.score_from_loss(self.loss(y_true, y_pred))

    def score_from_loss(self, loss: float) -> float:
        # + 0.0: a loss of 0 is a score of 0, never -0.0 (an F1 of "-0.0" in a result).
        return (-loss if self.greater_is_better else loss) + 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "alpha": self.alpha.tolist(),
            "beta": self.beta.tolist(),
            "greater_is_better": self.greater_is_better,
            "zero_division": self.zero_division,
            "params": dict(self.params),
        }

    def __repr__(self) -> str:
        return (
            f"MetricSpec(name={self.name!r}, alpha={np.round(self.alpha, 6).tolist()}, "
            f"beta={np.round(self.beta, 6).tolist()}, greater_is_better={self.greater_is_better})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricSpec):
            return NotImplemented
        return (
            np.allclose(self.alpha, other.alpha)
            and np.allclose(self.beta, other.beta)
            and self.greater_is_better == other.greater_is_better
            and self.zero_division == other.zero_division
        )

    def __hash__(self) -> int:
        return hash((self.name, tuple(np.round(self.alpha, 12)), tuple(np.round(self.beta, 12))))


@dataclass(frozen=True)
class PriorDependentMetric:
    """A metric whose coefficients depend on the class prior p = P(y = +1), such as balanced
    accuracy. It resolves against labels: the training labels when fitting, the evaluated labels
    when scoring (which is what ``sklearn.metrics.balanced_accuracy_score`` does)."""

    name: str
    build: Callable[[float], MetricSpec]
    greater_is_better: bool = True
    params: dict[str, Any] = field(default_factory=dict)

    def resolve(self, y: Any) -> MetricSpec:
        if y is None:
            raise ValueError(f"metric {self.name!r} depends on the class prior: pass labels")
        t = _as_binary(y, "y")
        if t.size == 0:
            raise ValueError("cannot resolve a prior-dependent metric on an empty sample")
        prior = float(np.mean(t))
        if prior <= 0.0 or prior >= 1.0:
            raise ValueError(
                f"metric {self.name!r} needs both classes in the labels (positive fraction {prior})"
            )
        spec = self.build(prior)
        object.__setattr__(spec, "_by_prior", self.build)
        return spec

    def loss(self, y_true: Any, y_pred: Any) -> float:
        return self.resolve(y_true).loss(y_true, y_pred)

    def score(self, y_true: Any, y_pred: Any) -> float:
        return self.resolve(y_true).score(y_true, y_pred)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "prior_dependent": True, "params": dict(self.params)}


Metric = MetricSpec | PriorDependentMetric


# -- names people read ---------------------------------------------------------------------------
_DISPLAY_NAMES = {
    "f1": "F1",
    "jaccard": "Jaccard",
    "precision": "Precision",
    "recall": "Recall",
    "accuracy": "Accuracy",
    "weighted_accuracy": "Weighted accuracy",
    "balanced_accuracy": "Balanced accuracy",
    "false_positive_rate": "False positive rate",
    "true_negative_rate": "True negative rate",
}
_F_BETA_NAME = re.compile(r"f_beta\((?P<beta>[^)]+)\)")


def display_name(
    name: str,
    *,
    zero_division: float = 0.0,
    average: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """A metric's name as people write it: ``f_beta(2)`` is "F2", ``f_beta(0.5)`` "F0.5",
    ``f1`` "F1", ``jaccard`` "Jaccard"; a custom metric keeps the name it was given. An average,
    a ``zero_division`` other than scikit-learn's default 0 and a weighted accuracy's weights
    other than 1 (``params``) follow in parentheses ("F1 (macro)", "Precision (zero_division
    1)", "Weighted accuracy (w_fn 20)"): the same counts score differently under them, and jobs
    with different costs read alike. The machine name (``MetricSpec.name``) stays what specs and
    code match on."""
    f_beta_name = _F_BETA_NAME.fullmatch(name)
    shown = f"F{f_beta_name['beta']}" if f_beta_name is not None else _DISPLAY_NAMES.get(name, name)
    notes = [average] if average else []
    if zero_division != 0:
        notes.append(f"zero_division {zero_division:g}")
    if name == "weighted_accuracy":
        notes += [
            f"{key} {float(value):g}"
            for key, value in (params or {}).items()
            if key.startswith("w_") and float(value) != 1.0
        ]
    return f"{shown} ({', '.join(notes)})" if notes else shown


def spec_display_name(spec: Any, *, average: str | None = None) -> str:
    """:func:`display_name` of a metric object: its name, ``zero_division`` and parameters."""
    return display_name(
        str(spec.name),
        zero_division=float(getattr(spec, "zero_division", 0.0) or 0.0),
        average=average,
        params=getattr(spec, "params", None),
    )


# -- presets -----------------------------------------------------------------------------------
_BETA = Option(
    "How many times recall counts as much as precision: 2 for F2, 0.5 for F0.5 (f_beta only)",
    ge=F_BETA_RANGE[0],
    le=F_BETA_RANGE[1],
)


# One declaration for every preset that can divide 0 by 0 (those whose scikit-learn function
# takes ``zero_division``): the service's schema merges preset parameters by name.
_ZERO_DIVISION = Option(
    "The score when the ratio is 0/0, as sklearn.metrics' zero_division: precision when nothing "
    "is predicted positive, recall when no row is positive. 1 makes a precision floor one that "
    "flagging nothing meets (the false-discovery-rate convention; see docs/quality.md)",
    ge=0.0,
    le=1.0,
)


def _checked_zero_division(value: Any) -> float:
    """A preset's ``zero_division``, refused outside [0, 1] (a score of 0/0, as scikit-learn's)."""
    try:
        number = None if isinstance(value, bool | str) else _as_float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not 0.0 <= number <= 1.0:  # NaN fails too
        raise ValueError(f"zero_division must be a number between 0 and 1, got {value!r}")
    return number


def _weight(cell: str) -> Option:
    return Option(
        f"The weight of the {cell} (weighted_accuracy only)", ge=0.0, le=MAX_ABS_COEFFICIENT
    )


def f_beta(
    beta: Annotated[float, _BETA] = 1.0,
    zero_division: Annotated[float, _ZERO_DIVISION] = 0.0,
) -> MetricSpec:
    """F-beta = (1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP); 0/0 (no positive row and none
    predicted) scores ``zero_division``."""
    b = _as_float(beta)
    low, high = F_BETA_RANGE
    if not low <= b <= high:  # NaN fails too
        raise ValueError(
            f"beta must be a positive number between {low:g} and {high:g}, got {beta!r}"
        )
    b2 = b * b
    return MetricSpec.from_confusion(
        numerator={"tp": 1 + b2},
        denominator={"tp": 1 + b2, "fn": b2, "fp": 1.0},
        name="f1" if b == 1.0 else f"f_beta({b:g})",
        zero_division=_checked_zero_division(zero_division),
        params={"beta": b},
    )


def f1(zero_division: Annotated[float, _ZERO_DIVISION] = 0.0) -> MetricSpec:
    return f_beta(1.0, zero_division=zero_division)


def jaccard(zero_division: Annotated[float, _ZERO_DIVISION] = 0.0) -> MetricSpec:
    """Jaccard (IoU of the positive class) = TP / (TP + FP + FN)."""
    return MetricSpec.from_confusion(
        numerator={"tp": 1.0},
        denominator={"tp": 1.0, "fp": 1.0, "fn": 1.0},
        name="jaccard",
        zero_division=_checked_zero_division(zero_division),
    )


def precision(zero_division: Annotated[float, _ZERO_DIVISION] = 0.0) -> MetricSpec:
    """Precision = TP / (TP + FP); 0/0 (nothing predicted positive) scores ``zero_division``."""
    return MetricSpec.from_confusion(
        numerator={"tp": 1.0},
        denominator={"tp": 1.0, "fp": 1.0},
        name="precision",
        zero_division=_checked_zero_division(zero_division),
    )


def recall(zero_division: Annotated[float, _ZERO_DIVISION] = 0.0) -> MetricSpec:
    """Recall = TP / (TP + FN); its denominator does not depend on the predictions (0/0, no
    positive row, scores ``zero_division``)."""
    return MetricSpec.from_confusion(
        numerator={"tp": 1.0},
        denominator={"tp": 1.0, "fn": 1.0},
        name="recall",
        zero_division=_checked_zero_division(zero_division),
    )


def false_positive_rate() -> MetricSpec:
    """False-positive rate = FP / (FP + TN), a rate to keep low (the loss is the rate itself);
    its denominator does not depend on the predictions."""
    return MetricSpec.from_confusion(
        numerator={"fp": 1.0},
        denominator={"fp": 1.0, "tn": 1.0},
        greater_is_better=False,
        name="false_positive_rate",
    )


def true_negative_rate() -> MetricSpec:
    """True-negative rate (specificity) = TN / (TN + FP)."""
    return MetricSpec.from_confusion(
        numerator={"tn": 1.0}, denominator={"tn": 1.0, "fp": 1.0}, name="true_negative_rate"
    )


def accuracy() -> MetricSpec:
    return MetricSpec.from_confusion(
        numerator={"tp": 1.0, "tn": 1.0}, denominator={"const": 1.0}, name="accuracy"
    )


def weighted_accuracy(
    w_tp: Annotated[float, _weight("true positives")] = 1.0,
    w_tn: Annotated[float, _weight("true negatives")] = 1.0,
    w_fp: Annotated[float, _weight("false positives")] = 1.0,
    w_fn: Annotated[float, _weight("false negatives")] = 1.0,
) -> MetricSpec:
    """WA = (w_tp TP + w_tn TN) / (w_tp TP + w_tn TN + w_fp FP + w_fn FN), weights >= 0."""
    weights = {"w_tp": w_tp, "w_tn": w_tn, "w_fp": w_fp, "w_fn": w_fn}
    for key, w in weights.items():
        if not 0 <= _as_float(w) <= MAX_ABS_COEFFICIENT:  # NaN fails too
            raise ValueError(
                f"{key} must be a non-negative number of at most {MAX_ABS_COEFFICIENT:g}, got {w!r}"
            )
    if float(w_tp) == 0 and float(w_tn) == 0:
        raise ValueError("w_tp and w_tn cannot both be zero: the metric would be constant")
    if float(w_fp) == 0 and float(w_fn) == 0:
        raise ValueError("w_fp and w_fn cannot both be zero: the metric would be constant (1)")
    return MetricSpec.from_confusion(
        numerator={"tp": w_tp, "tn": w_tn},
        denominator={"tp": w_tp, "tn": w_tn, "fp": w_fp, "fn": w_fn},
        name="weighted_accuracy",
        params={k: float(v) for k, v in weights.items()},
    )


def _balanced_accuracy_at(prior: float) -> MetricSpec:
    """Balanced accuracy at the positive fraction ``prior``. At 0 or 1 (rows of one class) it is
    the recall of the class there, as ``sklearn.metrics.balanced_accuracy_score`` averages over
    the classes present. A module-level function, so that a spec holding it pickles."""
    if prior >= 1.0:
        numerator = {"tp": 1.0}
    elif prior <= 0.0:
        numerator = {"tn": 1.0}
    else:
        numerator = {"tp": 0.5 / prior, "tn": 0.5 / (1.0 - prior)}
    return MetricSpec.from_confusion(
        numerator=numerator,
        denominator={"const": 1.0},
        name="balanced_accuracy",
        params={"prior": prior},
    )


def balanced_accuracy() -> PriorDependentMetric:
    """Balanced accuracy (the AM measure) = TP / (2p) + TN / (2(1 - p)), p the positive
    fraction: linear in the cells once p is known, so its denominator is constant."""
    return PriorDependentMetric(name="balanced_accuracy", build=_balanced_accuracy_at)


_PRESETS: dict[str, Callable[..., Metric]] = {
    "f1": f1,
    "f_beta": f_beta,
    "fbeta": f_beta,
    "jaccard": jaccard,
    "precision": precision,
    "recall": recall,
    "false_positive_rate": false_positive_rate,
    "true_negative_rate": true_negative_rate,
    "specificity": true_negative_rate,
    "accuracy": accuracy,
    "weighted_accuracy": weighted_accuracy,
    "balanced_accuracy": balanced_accuracy,
}
# Other names of presets, read as the preset they name (a stored spec says the canonical one).
PRESET_ALIASES: dict[str, str] = {"fbeta": "f_beta", "specificity": "true_negative_rate"}
PRESET_NAMES = tuple(sorted(set(_PRESETS) - set(PRESET_ALIASES)))


def canonical_preset(name: str) -> str:
    """A preset's name as stored and shown: lower case, an alias read as its preset."""
    lowered = name.lower()
    return PRESET_ALIASES.get(lowered, lowered)


# The f_beta() factory's beta defaults to 1 (f1 is f_beta(1)), so the preset named without its
# beta would silently be F1 where an F-beta was asked for: every layer refuses it in these words.
F_BETA_NEEDS_BETA = "f_beta needs a beta (2 for F2, 0.5 for F0.5); for beta = 1 use the f1 preset"


def lacks_beta(metric: object, params: Mapping[str, Any]) -> bool:
    """Whether ``metric`` names the F-beta preset (or its alias) and ``params`` give no beta."""
    return isinstance(metric, str) and canonical_preset(metric) == "f_beta" and "beta" not in params


class UnknownMetricParameterError(ValueError):
    """Parameters a preset does not take; ``unknown`` names them, ``accepted`` lists the ones it
    does (empty for a preset without parameters), so that a caller can point at the field."""

    def __init__(self, metric: str, unknown: Sequence[str], accepted: Sequence[str]) -> None:
        self.metric = metric
        self.unknown = tuple(unknown)
        self.accepted = tuple(accepted)
        names = ", ".join(repr(n) for n in self.unknown)
        takes = (
            f"it takes {', '.join(repr(n) for n in self.accepted)}"
            if self.accepted
            else "it takes no parameters"
        )
        plural = "s" if len(self.unknown) > 1 else ""
        super().__init__(f"metric {metric!r} has no parameter{plural} {names}; {takes}")


def preset_parameters(metric: str) -> tuple[str, ...]:
    """The parameters a preset takes, e.g. ``("beta",)`` for ``f_beta``, ``()`` for ``f1``."""
    factory = _preset_factory(metric)
    return tuple(inspect.signature(factory).parameters)


def preset_options(metric: str) -> dict[str, tuple[Option, Any]]:
    """Each parameter of a preset with its :class:`~metro.options.Option` (description and
    bounds) and its default: what the service's request schema declares for it."""
    return parameter_options(_preset_factory(metric))


def _preset_factory(metric: str) -> Callable[..., Metric]:
    try:
        return _PRESETS[metric.lower()]
    except KeyError:
        raise UnknownChoiceError(
            f"unknown metric {shown(metric, 100)}; presets are {', '.join(PRESET_NAMES)}",
            field="preset",
        ) from None


def get_metric(metric: str | Metric, **params: Any) -> Metric:
    """A metric from a preset name (with its parameters) or a spec passed through."""
    if isinstance(metric, MetricSpec | PriorDependentMetric):
        if params:
            raise ValueError("parameters can only be given with a preset name")
        return metric
    if not isinstance(metric, str):
        raise ValueError(
            f"metric must be a preset name or a MetricSpec, got {type(metric).__name__}"
        )
    factory = _preset_factory(metric)
    accepted = preset_parameters(metric)
    # Checked against the signature rather than by calling: a TypeError from the call would
    # surface Python's own wording ("precision() got an unexpected keyword argument ...").
    unknown = [name for name in params if name not in accepted]
    if unknown:
        raise UnknownMetricParameterError(metric, unknown, accepted)
    if lacks_beta(metric, params):
        raise ValueError(F_BETA_NEEDS_BETA)
    try:
        return factory(**params)
    except TypeError as exc:  # a value of the wrong type (beta=None)
        raise ValueError(f"bad parameters for metric {metric!r}: {exc}") from None
