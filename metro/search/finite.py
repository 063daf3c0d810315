"""An exact solver over a finite hypothesis set given by its predictions.

With finitely many hypotheses the minimum of the empirical l^lambda is computed exactly, which is
the oracle of Theorem 5.1: it lets the searches be checked against the theory, and it serves any
finite family a user can enumerate (for instance every threshold of a score).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metro.constraints import Constraint
from metro.costs import empirical_l_lambda, penalty_cells
from metro.metrics import MetricSpec
from metro.search.base import Candidate, cells_from_predictions

__all__ = ["FiniteHypothesisSolver", "threshold_predictions"]


def threshold_predictions(x: np.ndarray) -> np.ndarray:
    """Every classifier 1[x >= t] and 1[x < t] of a 1-D feature (thresholds at each value and
    beyond both ends): a boolean matrix [n, 2 (n + 1)], one column per hypothesis."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("x must be one-dimensional")
    cuts = np.concatenate([np.unique(x), [np.inf]])
    above = x[:, None] >= cuts[None, :]
    return np.concatenate([above, ~above], axis=1)


class FiniteHypothesisSolver:
    """Returns, for each lambda, the hypothesis (column of ``predictions``) that minimizes the
    empirical l^lambda on the training labels; ties go to the lowest ratio loss, then the lowest
    index.

    Hypotheses whose denominator is zero on the sample (precision's "predict nothing positive")
    are left out: the theory assumes a positive denominator over the hypothesis set, and for them
    l^lambda is 0 at every lambda, which would mask the sign of lambda* - lambda.
    """

    def __init__(
        self,
        spec: MetricSpec,
        y: np.ndarray,
        predictions: np.ndarray,
        *,
        y_validation: np.ndarray | None = None,
        predictions_validation: np.ndarray | None = None,
        constraints: Sequence[Constraint] = (),
    ) -> None:
        self.spec = spec
        self.constraints = tuple(constraints)
        self.cells = cells_from_predictions(y, predictions)
        self.validation_cells = (
            None
            if y_validation is None or predictions_validation is None
            else cells_from_predictions(y_validation, predictions_validation)
        )
        keep = self.cells @ spec.denominator_cells > 1e-12
        if not np.any(keep):
            raise ValueError("every hypothesis has a zero denominator on this sample")
        self.cells = self.cells[keep]
        if self.validation_cells is not None:
            self.validation_cells = self.validation_cells[keep]
        self.columns = np.flatnonzero(keep)
        self.ratios = np.array([spec.loss_from_fractions(c) for c in self.cells])
        self.calls = 0

    @property
    def lambda_star(self) -> float:
        """min over the set of the empirical ratio loss, by enumeration."""
        return float(self.ratios.min())

    def min_l_lambda(self, lam: float) -> float:
        return float(empirical_l_lambda(self.spec, lam, self.cells).min())

    def solve(
        self,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None = None,
        multipliers: np.ndarray | None = None,
    ) -> list[Candidate]:
        out = []
        lambdas = np.atleast_1d(lambdas)
        rows: list[tuple[float, ...]] = [()] * lambdas.size
        penalties: list[np.ndarray | None] = [None] * lambdas.size
        if multipliers is not None:
            if not self.constraints:
                raise ValueError("multipliers were given to a solver without constraints")
            mu = np.atleast_2d(np.asarray(multipliers, dtype=np.float64))
            g = np.stack([c.cells for c in self.constraints])
            penalties = list(penalty_cells(g, mu))
            rows = [tuple(float(m) for m in r) for r in mu]
        for lam, pen, row in zip(lambdas, penalties, rows, strict=True):
            self.calls += 1
            values = empirical_l_lambda(self.spec, float(lam), self.cells, pen)
            best = np.flatnonzero(values == values.min())
            j = int(best[np.argmin(self.ratios[best])])
            out.append(
                Candidate(
                    lam=float(lam),
                    shift=shift,
                    train_cells=self.cells[j],
                    validation_cells=None
                    if self.validation_cells is None
                    else self.validation_cells[j],
                    surrogate_loss=float(values[j]),
                    handle=int(self.columns[j]),
                    multipliers=row,
                )
            )
        return out
