"""The range of each feature a tabular model was trained on, and the rows to score outside it.

A fitted classifier keeps, per feature, the least and the greatest finite value of the rows the
model it delivers was trained on (``feature_ranges_``; the manifest's ``feature_ranges``). A value
outside ``[min, max]`` is extrapolation: the model is scored where it never saw data, and a value
1000 times the training range is scored as confidently as any other. :func:`out_of_range` says
which columns of ``X`` hold such values and in how many rows.

It is a per-feature range check, not a test of distribution shift: rows whose every value lies
inside the ranges can still be unlike the training data (a combination never seen, a shifted
mean, another class balance), and one value past a range by a hair is counted like one far past
it. Image inputs (more than one axis per row) have no ranges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ColumnOutOfRange",
    "FeatureRangeWarning",
    "FeatureRanges",
    "RangeReport",
    "out_of_range",
]

#: How many columns a report names (those with the most rows outside first).
MAX_COLUMNS = 5


class FeatureRangeWarning(UserWarning):
    """Rows given to a saved classifier hold values outside the ranges it was trained on (issued
    only where asked: :func:`metro.load_classifier`'s ``warn_out_of_range``)."""


@dataclass(frozen=True)
class FeatureRanges:
    """Per feature, the least (``low``) and greatest (``high``) finite training value, as
    float64 arrays of one value per feature; NaN at both where a feature had no finite value
    (such a feature is not checked)."""

    low: np.ndarray
    high: np.ndarray

    def __post_init__(self) -> None:
        low = np.asarray(self.low, dtype=np.float64)
        high = np.asarray(self.high, dtype=np.float64)
        if low.ndim != 1 or low.shape != high.shape:
            raise ValueError(
                f"feature ranges need one min and one max per feature, got {low.shape} and "
                f"{high.shape}"
            )
        if np.any(low > high):
            raise ValueError("a feature's min is above its max")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @property
    def n_features(self) -> int:
        return int(self.low.size)

    @classmethod
    def of(cls, X: Any) -> FeatureRanges | None:
        """The ranges of the rows of a 2-D ``X`` (finite values only); None for inputs of more
        axes (images: a pixel's range says little) or without rows."""
        table = np.asarray(X)
        if table.ndim != 2 or table.shape[0] == 0:
            return None
        finite = np.isfinite(table)
        if finite.all():
            return cls(table.min(axis=0), table.max(axis=0))
        # Finite values only (an infinity is no range); NaN where a column has none.
        low = np.where(finite, table, np.inf).min(axis=0).astype(np.float64)
        high = np.where(finite, table, -np.inf).max(axis=0).astype(np.float64)
        empty = ~finite.any(axis=0)
        low[empty] = np.nan
        high[empty] = np.nan
        return cls(low, high)

    def union(self, other: FeatureRanges) -> FeatureRanges:
        """The ranges of both sets of rows together."""
        if other.n_features != self.n_features:
            raise ValueError("feature ranges of different widths")
        return FeatureRanges(np.fmin(self.low, other.low), np.fmax(self.high, other.high))

    def to_dict(self) -> dict[str, list[float | None]]:
        """``{"min": [...], "max": [...]}``, null where a feature had no finite value."""

        def listed(values: np.ndarray) -> list[float | None]:
            return [float(v) if np.isfinite(v) else None for v in values]

        return {"min": listed(self.low), "max": listed(self.high)}

    @classmethod
    def of_manifest(cls, manifest: Mapping[str, Any]) -> FeatureRanges | None:
        """A saved model's ranges: None where its manifest has none (an image model, or a file
        written before they were kept); a ``ValueError`` where they are not readable as its
        ``n_features`` columns' (each reader decides what a damaged record costs)."""
        given = manifest.get("feature_ranges")
        if given is None:
            return None
        return cls.from_dict(given, n_features=int(manifest["n_features"]))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, n_features: int | None = None) -> FeatureRanges:
        """Read :meth:`to_dict`'s form back (a ``ValueError`` where it is not that form)."""
        if not isinstance(data, Mapping) or set(data) != {"min", "max"}:
            raise ValueError("feature_ranges must be an object with 'min' and 'max'")

        def numbers(values: Any, key: str) -> np.ndarray:
            if not isinstance(values, list) or any(
                v is not None and (isinstance(v, bool) or not isinstance(v, int | float))
                for v in values
            ):
                raise ValueError(f"feature_ranges.{key} must be a list of numbers or nulls")
            return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)

        ranges = cls(numbers(data["min"], "min"), numbers(data["max"], "max"))
        if n_features is not None and ranges.n_features != n_features:
            raise ValueError(
                f"feature_ranges has {ranges.n_features} features; the model takes {n_features}"
            )
        if not np.array_equal(np.isnan(ranges.low), np.isnan(ranges.high)):
            raise ValueError("feature_ranges has a min without its max, or a max without its min")
        return ranges


@dataclass(frozen=True)
class ColumnOutOfRange:
    """One column with values outside its training range: its position, its name (None
    where the model has none), how many rows are outside, and the training range."""

    column: int
    name: str | None
    rows: int
    min: float
    max: float

    def describe(self) -> str:
        what = repr(self.name) if self.name is not None else f"column {self.column}"
        return f"{what}: {self.rows} row(s) outside [{self.min:.6g}, {self.max:.6g}]"


@dataclass(frozen=True)
class RangeReport:
    """What :func:`out_of_range` found: ``columns``, at most ``max_columns`` of them, those with
    the most rows outside first (ties in column order); ``n_columns``, every column with a
    value outside; ``n_rows``, the rows with at least one value outside, of ``n_checked``."""

    columns: tuple[ColumnOutOfRange, ...]
    n_columns: int
    n_rows: int
    n_checked: int

    def __bool__(self) -> bool:
        return self.n_columns > 0

    def message(self) -> str:
        if not self:
            return "every value lies within the ranges the model was trained on"
        shown = "; ".join(c.describe() for c in self.columns)
        more = self.n_columns - len(self.columns)
        tail = f"; and {more} more column(s)" if more > 0 else ""
        return (
            f"{self.n_rows} of {self.n_checked} row(s) hold values outside the range the model "
            f"was trained on, in {self.n_columns} column(s) ({shown}{tail}): the model "
            "extrapolates there, and its scores are not backed by training data"
        )


def out_of_range(
    X: Any,
    ranges: FeatureRanges,
    *,
    feature_names: Sequence[str] | None = None,
    max_columns: int = MAX_COLUMNS,
) -> RangeReport:
    """Which columns of the 2-D ``X`` hold values below their training min or above their
    max, and in how many rows (vectorised: two comparisons of ``X`` against the ranges).

    NaN is neither inside nor outside (a comparison with NaN is false): it is not counted here
    (the classifiers refuse it when scoring); infinities are outside. Features without a range
    (no finite training value) are not checked.
    """
    if isinstance(max_columns, bool) or not isinstance(max_columns, int) or max_columns < 0:
        raise ValueError(f"max_columns must be a non-negative integer, got {max_columns!r}")
    table = np.asarray(X)
    if table.ndim != 2 or table.shape[1] != ranges.n_features:
        raise ValueError(
            f"X has shape {table.shape}; the ranges are of {ranges.n_features} features"
        )
    if feature_names is not None and len(feature_names) != ranges.n_features:
        raise ValueError(
            f"{len(feature_names)} feature names for ranges of {ranges.n_features} features"
        )
    # NaN ranges compare false both ways: an unranged feature never counts.
    with np.errstate(invalid="ignore"):
        outside = (table < ranges.low) | (table > ranges.high)
    per_column = outside.sum(axis=0)
    flagged = np.flatnonzero(per_column)
    # The most rows first; a stable sort keeps column order among ties.
    order = flagged[np.argsort(-per_column[flagged], kind="stable")][:max_columns]
    columns = tuple(
        ColumnOutOfRange(
            column=int(j),
            name=None if feature_names is None else str(feature_names[j]),
            rows=int(per_column[j]),
            min=float(ranges.low[j]),
            max=float(ranges.high[j]),
        )
        for j in order
    )
    return RangeReport(
        columns=columns,
        n_columns=int(flagged.size),
        n_rows=int(outside.any(axis=1).sum()) if flagged.size else 0,
        n_checked=int(table.shape[0]),
    )
