"""Reading a user's two classes as {0, 1}, and deciding which one is positive.

The positive class is the one whose metric (F1, Jaccard, ...) is optimised, so it is chosen only
when the labels themselves say which it is; otherwise the user must name it, and a name sent as
text over HTTP (``"1"``) matches the label ``1``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from metro.datasets._base import ClassCountError, DataError, python_scalar, show_values


def sort_key(value: Any) -> tuple[int, Any]:
    """Orders classes of mixed types (e.g. ``9`` and ``"not 9"``) without a TypeError."""
    if isinstance(value, bool | int | float):
        return (0, float(value))
    if isinstance(value, str):
        return (1, value)
    return (2, repr(value))


def _as_number(value: Any) -> float | None:
    """The numeric reading of a label, so that ``"1"`` from an HTTP form matches a label ``1``."""
    if isinstance(value, bool | int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def default_positive(classes: list[Any]) -> Any | None:
    """The positive class when the labels themselves say which one it is, else None.

    Only encodings with an unambiguous "yes" qualify: {0, 1}, {-1, +1} and {False, True}, also
    spelled as strings as a CSV may hold them. For anything else ("cat"/"dog", 2/4) choosing
    silently would optimise the metric for the wrong class, so the user must say.
    """
    booleans = [_as_bool(c) for c in classes]
    if None not in booleans and set(booleans) == {False, True}:
        return classes[booleans.index(True)]
    numbers = [_as_number(c) for c in classes]
    if None not in numbers and set(numbers) in ({0.0, 1.0}, {-1.0, 1.0}):
        return classes[numbers.index(1.0)]
    return None


def _match_positive(positive_label: Any, classes: list[Any]) -> Any:
    if not isinstance(positive_label, str | bool | int | float | np.generic):
        kind = type(positive_label).__name__
        raise DataError(f"positive_label must be a string, number or boolean, got {kind}")
    wanted = python_scalar(positive_label)
    exact = [c for c in classes if c == wanted and isinstance(c, bool) == isinstance(wanted, bool)]
    if exact:
        return exact[0]
    # Values typed differently from the labels: "1" for 1, 1 for "1", "true" for True.
    number, flag = _as_number(wanted), _as_bool(wanted)
    loose = [
        c
        for c in classes
        if (number is not None and _as_number(c) == number)
        or (flag is not None and _as_bool(c) is flag)
    ]
    if len(loose) == 1:
        return loose[0]
    if len(loose) > 1:
        raise DataError(
            f"positive_label {wanted!r} matches more than one label: {show_values(loose)}"
        )
    raise DataError(f"positive_label {wanted!r} is not one of the labels {show_values(classes)}")


# Labels that say a label is missing rather than name a class ('NA', 'null' and the like are
# read as missing already, by pandas and by the label parser).
_MISSING_MARKERS = frozenset({"?", "-"})


def check_label_spellings(classes: Sequence[Any]) -> None:
    """Refuse labels that are one class written two ways (' yes' and 'yes', 'Yes' and 'yes', 1
    and 1.0) or that mark a missing label ('?', '-'): each was a class of its own, and the
    refusal's advice ("a metric over several classes takes an average") then trained a model
    with a class ' yes' beside 'yes'."""
    groups: dict[Any, list[Any]] = {}
    for label in classes:
        if isinstance(label, str):
            key: Any = ("text", label.strip().casefold())
            text = label.strip()
            # '1' and '1.0' (a CSV's label column keeps them as text where they differ), but
            # not a code with leading zeros: '007' and '7' may be two codes.
            coded = len(text) > 1 and text[0] == "0" and text[1] != "."
            with contextlib.suppress(ValueError):
                key = key if coded else ("number", float(text))
        elif isinstance(label, bool):
            key = ("bool", label)
        elif isinstance(label, int | float):
            key = ("number", float(label))
        else:
            key = ("other", repr(label))
        groups.setdefault(key, []).append(label)
    alike = [labels for labels in groups.values() if len(labels) > 1]
    if alike:
        shown = "; ".join(" and ".join(repr(v) for v in labels) for labels in alike[:3])
        raise DataError(
            f"labels {shown} differ only in spaces, letter case or how a number is written: "
            "one class written two ways? Write each class one way in the label column"
        )
    markers = [
        label for label in classes if isinstance(label, str) and label.strip() in _MISSING_MARKERS
    ]
    if markers:
        raise DataError(
            f"label {markers[0]!r} marks a missing label, not a class: drop those rows or give "
            "them their class (a row without a label cannot be trained on)"
        )


def parse_labels(
    raw: np.ndarray | Sequence[Any], *, positive_label: Any = None
) -> tuple[np.ndarray, Any, Any]:
    """Map arbitrary binary labels to {0, 1}; returns ``(y, positive_label, negative_label)``.

    The returned labels are the values as they occur in ``raw`` (as python scalars), not as the
    caller spelled them, so that a user who sent ``"1"`` sees ``1`` reported back consistently.
    Missing labels are refused rather than dropped: dropping rows would silently change the data
    the user thinks they trained on.
    """
    arr = raw.to_numpy() if isinstance(raw, pd.Series) else np.asarray(raw)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise DataError(f"labels must be one-dimensional, got shape {arr.shape}")
    missing = ~np.isfinite(arr) if arr.dtype.kind == "f" else np.asarray(pd.isna(arr), dtype=bool)
    if missing.any():
        raise DataError(
            f"labels contain {int(missing.sum())} missing or non-finite values "
            f"(first at row {int(np.argmax(missing))})"
        )
    codes, uniques = pd.factorize(arr)
    classes = [python_scalar(u) for u in uniques]
    check_label_spellings(classes)
    if len(classes) != 2:
        shown = sorted(classes, key=sort_key)
        noun = "class" if len(classes) == 1 else "classes"
        several = (
            "; a metric over several classes takes an average (macro or weighted)"
            if len(classes) > 2
            else ""
        )
        raise ClassCountError(
            f"labels must have exactly two classes; found {len(classes)} {noun}: "
            f"{show_values(shown)}{several}",
            n_classes=len(classes),
        )
    if positive_label is None:
        positive = default_positive(classes)
        if positive is None:
            raise DataError(
                "positive_label is required: the labels are "
                f"{show_values(sorted(classes, key=sort_key))}"
            )
    else:
        positive = _match_positive(positive_label, classes)
    pos_code = classes.index(positive)
    y = (np.asarray(codes) == pos_code).astype(np.int64)
    return y, positive, classes[1 - pos_code]
