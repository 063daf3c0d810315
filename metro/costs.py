"""Cost tables of the cost-sensitive problems behind a ratio metric.

For a given lambda, minimizing the ratio loss reduces to the cost-sensitive target
l^lambda = l_alpha - lambda * l_beta, whose coefficients gamma = alpha - lambda * beta give the cost
of predicting y' when the truth is y (paper, Section 4.1):

    L(y', y) = g1 y' y + g2 y + g3 y' + g4.

Surrogates need non-negative costs, so a shift is added. The target's minimizer does not depend on
the shift (for each true label, only L(+1, y) - L(-1, y) matters), but the surrogate's minimizer
does, so the shift is a modelling choice:

* ``"paper"``: tau = sum |g_i| added to every cell, as in the paper. Both surrogate terms stay
  active for every example.
* ``"minimal"``: per true label, subtract the smaller of the two costs, so one term vanishes and
  the problem is a weighted binary problem with weights |L(+1, y) - L(-1, y)|.

Tables are divided by their largest entry so that a fixed weight decay means the same thing for
every lambda (scaling a cost table does not change its target minimizer).

Arrays are indexed ``[k, pred, true]`` with index 0 for -1 (negative) and 1 for +1 (positive).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from metro.metrics import CELL_BASIS, CELLS, MetricSpec

__all__ = ["SHIFTS", "Shift", "cost_tables", "empirical_l_lambda", "gammas", "penalty_cells"]

Shift = Literal["paper", "minimal"]
SHIFTS: tuple[str, ...] = ("paper", "minimal")
_SIGNS = np.array([-1.0, 1.0])  # index -> label value
_CELLS_TO_BASIS = np.stack([CELL_BASIS[c] for c in CELLS])  # [4 cells, 4 basis]


def gammas(
    spec: MetricSpec, lambdas: np.ndarray | float, penalties: np.ndarray | None = None
) -> np.ndarray:
    """gamma = alpha - lambda * beta for each lambda: shape [K, 4]. ``penalties`` ([K, 4] weights
    on the cells (tp, fp, fn, tn), e.g. a constraint's Lagrangian term) are added to the target."""
    lam = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    if lam.ndim != 1 or not np.all(np.isfinite(lam)):
        raise ValueError("lambdas must be a finite scalar or 1-D array")
    g = spec.alpha[None, :] - lam[:, None] * spec.beta[None, :]
    if penalties is None:
        return g
    pen = np.asarray(penalties, dtype=np.float64)
    if pen.shape != (lam.size, 4) or not np.all(np.isfinite(pen)):
        raise ValueError(f"penalties must be finite, of shape [{lam.size}, 4], got {pen.shape}")
    return g + pen @ _CELLS_TO_BASIS


def penalty_cells(constraint_cells: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
    """The Lagrangian term -sum_j mu_j g_j on the cells for each row of ``multipliers`` ([K, J],
    mu >= 0) and constraints g_j (``constraint_cells`` [J, 4]): shape [K, 4]."""
    mu = np.atleast_2d(np.asarray(multipliers, dtype=np.float64))
    g = np.atleast_2d(np.asarray(constraint_cells, dtype=np.float64))
    if mu.shape[1] != g.shape[0] or g.shape[1] != 4:
        raise ValueError(f"{mu.shape[1]} multipliers per row for {g.shape[0]} constraints")
    if np.any(mu < 0) or not np.all(np.isfinite(mu)):
        raise ValueError("multipliers must be finite and non-negative")
    return -(mu @ g)


def cost_tables(
    spec: MetricSpec,
    lambdas: np.ndarray | float,
    *,
    shift: str = "minimal",
    normalize: bool = True,
    penalties: np.ndarray | None = None,
) -> np.ndarray:
    """Non-negative cost tables C[k, pred, true] for each lambda, shape [K, 2, 2] (with
    ``penalties`` added to each target, see :func:`gammas`)."""
    if shift not in SHIFTS:
        raise ValueError(f"unknown shift {shift!r}; expected one of {', '.join(SHIFTS)}")
    g = gammas(spec, lambdas, penalties)
    yp = _SIGNS[None, :, None]
    yt = _SIGNS[None, None, :]
    g1, g2, g3, g4 = (g[:, i, None, None] for i in range(4))
    table = g1 * yp * yt + g2 * yt + g3 * yp + g4
    if shift == "paper":
        table = table + np.abs(g).sum(axis=1)[:, None, None]
    else:
        table = table - table.min(axis=1, keepdims=True)
    # Guard against round-off: costs are non-negative by construction.
    table = np.maximum(table, 0.0)
    if normalize:
        scale = table.reshape(table.shape[0], -1).max(axis=1)
        scale = np.where(scale > 0, scale, 1.0)
        table = table / scale[:, None, None]
    return table


def empirical_l_lambda(
    spec: MetricSpec,
    lambdas: np.ndarray | float,
    cells: np.ndarray,
    penalties: np.ndarray | None = None,
) -> np.ndarray:
    """The empirical target E_S[l^lambda] = num(cells) - lambda * den(cells), for confusion
    fractions ``cells`` of shape [4] or [K, 4] (one row per lambda). Theorem 5.1: its minimum
    over the hypothesis set has the sign of lambda* - lambda. ``penalties`` ([K, 4] or [4]) add
    their weights on the cells (a Lagrangian's constraint term)."""
    lam = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    c = np.atleast_2d(np.asarray(cells, dtype=np.float64))
    num = c @ spec.numerator_cells
    den = c @ spec.denominator_cells
    out = num - lam * den
    if penalties is not None:
        pen = np.asarray(penalties, dtype=np.float64)
        out = out + (c * pen).sum(axis=-1) if pen.ndim == 2 else out + c @ pen
    return out
