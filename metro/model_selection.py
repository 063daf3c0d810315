"""Splitting a data set into train, validation and test rows, stratified on the positive class.

Like scikit-learn's ``model_selection``, it takes labels and returns row indices;
:func:`metro.datasets.subset` cuts a Dataset by them.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold

from metro.datasets import DataError

__all__ = ["Splits", "split_indices", "split_sizes", "stratified_folds"]


@dataclass(frozen=True, eq=False)
class Splits:
    """Row indices of three disjoint parts that together cover the data set.

    The validation part exists because METRO tunes a decision threshold (and early stopping) on
    data the model was not fitted on; the test part stays untouched until the final report.
    """

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


def _split_size(fraction: float, n: int) -> int:
    # Rounded up like scikit-learn's test_size, so that a non-zero fraction always gets a row; the
    # small tolerance keeps 0.3 * 10 = 3.0000000000000004 from becoming 4.
    return math.ceil(fraction * n - 1e-9) if fraction > 0 else 0


def split_sizes(
    n: int, *, validation_fraction: float = 0.25, test_fraction: float = 0.2
) -> tuple[int, int, int]:
    """The rows of the train, validation and test splits :func:`split_indices` makes of ``n``
    rows (the training split may come out empty or negative: split_indices refuses that)."""
    n_val = _split_size(validation_fraction, n)
    n_test = _split_size(test_fraction, n)
    return n - n_val - n_test, n_val, n_test


def _allocate_positives(sizes: list[int], n_pos: int, minimum: int, names: list[str]) -> list[int]:
    """How many positives each split gets: proportional, within one of each split's exact share.

    Largest-remainder rounding of the exact shares keeps every split's positive fraction as close
    to the overall one as whole rows allow. Only when that would leave a split short of
    ``minimum`` positives or negatives are single positives moved between splits, which
    succeeds exactly when some allocation satisfies the minimum.
    """
    n = sum(sizes)
    nonempty = [k for k, s in enumerate(sizes) if s > 0]
    label = "/".join(names[k] for k in nonempty)
    for k in nonempty:
        if sizes[k] < 2 * minimum:
            fix = (
                "smaller validation and test fractions"
                if names[k] == "train"
                else f"a larger {names[k]}_fraction"
            )
            # The data first (a job's user has no split settings), then the library's knobs.
            raise DataError(
                f"the {names[k]} split would have {sizes[k]} rows, too few for at least "
                f"{minimum} positive and {minimum} negative rows: the data needs more rows "
                f"(calling split_indices: {fix} or a smaller min_positives_per_split)"
            )
    plural = "" if minimum == 1 else "s"
    needed = minimum * len(nonempty)
    if n_pos < needed:
        raise DataError(
            f"too few positives ({n_pos}) for a {label} split with at least {minimum} "
            f"positive{plural} in each split: the data needs at least {needed} positive rows"
        )
    if n - n_pos < needed:
        raise DataError(
            f"too few negatives ({n - n_pos}) for a {label} split with at least {minimum} "
            f"negative{plural} in each split: the data needs at least {needed} negative rows"
        )
    quotas = [s * n_pos / n for s in sizes]
    counts = [math.floor(q) for q in quotas]
    by_remainder = sorted(range(len(sizes)), key=lambda k: counts[k] - quotas[k])
    for k in by_remainder[: n_pos - sum(counts)]:
        counts[k] += 1
    lower = [minimum if s > 0 else 0 for s in sizes]
    upper = [s - lo for s, lo in zip(sizes, lower, strict=True)]
    for k in range(len(sizes)):
        while counts[k] < lower[k]:  # take a positive from the split with most to spare
            donor = max(
                (j for j in range(len(sizes)) if counts[j] > lower[j]),
                key=lambda j: counts[j] - quotas[j],
            )
            counts[donor] -= 1
            counts[k] += 1
        while counts[k] > upper[k]:  # too few negatives left: give a positive away
            taker = min(
                (j for j in range(len(sizes)) if counts[j] < upper[j]),
                key=lambda j: counts[j] - quotas[j],
            )
            counts[taker] += 1
            counts[k] -= 1
    return counts


def split_indices(
    y: np.ndarray,
    *,
    validation_fraction: float = 0.25,
    test_fraction: float = 0.2,
    random_state: int | None = None,
    min_positives_per_split: int = 1,
) -> Splits:
    """Stratified, seeded train/validation/test indices (sorted int64 arrays).

    Stratified because METRO's metrics live on the positive class: with 5% positives an
    unstratified split can leave a validation set with almost none, and the threshold tuned on it
    is noise. Implemented directly rather than with two calls to scikit-learn's
    ``train_test_split`` so that each split's positive count is within one row of its exact
    share (rounding twice can compound the error), and so that an infeasible request is reported
    with the numbers involved instead of scikit-learn's generic message. Fractions are of the
    whole data set; the training split gets the rest. ``min_positives_per_split`` applies to
    negatives as well, since a split with one class cannot score a threshold.
    """
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {labels.shape}")
    if labels.size and not np.isin(labels, (0, 1)).all():
        raise ValueError("y must contain only 0 and 1 (see parse_labels)")
    for name, fraction in (
        ("validation_fraction", validation_fraction),
        ("test_fraction", test_fraction),
    ):
        if not isinstance(fraction, numbers.Real) or not 0 <= fraction < 1:
            raise ValueError(f"{name} must be in [0, 1), got {fraction!r}")
    if validation_fraction + test_fraction >= 1:
        raise ValueError(
            f"validation_fraction + test_fraction must be below 1, got "
            f"{validation_fraction} + {test_fraction}"
        )
    if (
        isinstance(min_positives_per_split, bool)
        or not isinstance(min_positives_per_split, int)
        or min_positives_per_split < 0
    ):
        raise ValueError(
            f"min_positives_per_split must be a non-negative int, got {min_positives_per_split!r}"
        )
    n = int(labels.size)
    n_train, n_val, n_test = split_sizes(
        n, validation_fraction=validation_fraction, test_fraction=test_fraction
    )
    if n_train < 1:
        raise DataError(
            f"dataset has {n} rows, too few for a split with validation_fraction="
            f"{validation_fraction} and test_fraction={test_fraction}"
        )
    sizes = [n_train, n_val, n_test]
    positives = np.flatnonzero(labels == 1)
    negatives = np.flatnonzero(labels == 0)
    pos_counts = _allocate_positives(
        sizes, positives.size, min_positives_per_split, ["train", "validation", "test"]
    )
    neg_counts = [s - p for s, p in zip(sizes, pos_counts, strict=True)]

    rng = np.random.default_rng(random_state)
    positives = rng.permutation(positives)
    negatives = rng.permutation(negatives)
    parts = []
    pos_start = neg_start = 0
    for n_pos, n_neg in zip(pos_counts, neg_counts, strict=True):
        part = np.concatenate(
            [positives[pos_start : pos_start + n_pos], negatives[neg_start : neg_start + n_neg]]
        )
        parts.append(np.sort(part).astype(np.int64))
        pos_start += n_pos
        neg_start += n_neg
    return Splits(train=parts[0], validation=parts[1], test=parts[2])


def stratified_folds(
    strata: np.ndarray, *, n_folds: int, cv: Any, random_state: int | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_folds`` shuffled stratified cross-validation folds (training rows, held-out rows) of
    the rows whose strata (a class, or a multi-label row's rarest label) are ``strata``.

    Refused, naming ``cv`` (the setting that asked for ``n_folds``), where every stratum has
    fewer rows than there are folds: scikit-learn's own message names neither. A stratum
    smaller than the folds, beside a larger one, leaves some folds without it; the searches
    report what that does to a choice, so scikit-learn's warning about it is not repeated.
    """
    largest = int(np.unique(strata, return_counts=True)[1].max())
    if largest < n_folds:
        raise ValueError(
            f"cv={cv!r} means {n_folds} cross-validation folds, but every class has fewer rows "
            f"than that (the largest has {largest}): set cv to at most {max(largest, 2)} or to "
            "None (a holdout chooses), or give more rows"
        )
    split = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return list(split.split(np.zeros(strata.shape[0]), strata))
