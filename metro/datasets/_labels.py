"""Reading a user's two classes as {0, 1}, and deciding which one is positive.

The positive class is the one whose metric (F1, Jaccard, ...) is optimised, so it is chosen only
when the labels themselves say which it is; otherwise the user must name it, and a name sent as
text over HTTP (``"1"``) matches the label ``1``.
"""

from __future__ import annotations

import math
import re
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


def label_array(labels: Sequence[Any]) -> np.ndarray:
    """Labels (classes, label columns) as a 1-D array: as numpy reads labels of one kind (text,
    or numbers of any types), else an object array of the labels themselves: text beside numbers
    (9 and "not 9", a built-in set's) made the numbers text, and a DataFrame's MultiIndex names
    (tuples) a 2-D array."""
    labels = list(labels)
    if len({isinstance(label, str) for label in labels}) <= 1:
        plain = np.asarray(labels)
        if plain.ndim == 1:
            return plain
    out = np.empty(len(labels), dtype=object)
    for i, label in enumerate(labels):
        out[i] = label
    return out


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


# A label that says a label is missing rather than name a class ('NA', 'null' and the like are
# read as missing already, by pandas and by the label parser; '-' is a class beside '+').
_MISSING_MARKERS = frozenset({"?"})
# Above this many classes the spellings are not compared: the column is refused for its count.
_MAX_COMPARED = 1000
_INTEGER_TEXT = re.compile(r"^[+-]?[1-9][0-9]*(\.0+)?$|^0(\.0+)?$")


def _spelling_key(label: Any) -> Any:
    """What two spellings of one class share: text without its surrounding spaces, and an
    integer however it is written as text ('1', '1.0', '+1'); codes ('007', '1.10', 'A1') keep
    their spelling."""
    if isinstance(label, str):
        text = label.strip()
        if _INTEGER_TEXT.match(text):
            return ("integer", int(float(text)))
        return ("text", text)
    if isinstance(label, bool) or not isinstance(label, int | float):
        return ("other", repr(label))
    if float(label).is_integer():
        return ("integer", int(label))
    return ("number", float(label))


def look_alike_labels(classes: Sequence[Any], *, case: bool = False) -> list[list[Any]]:
    """Groups of labels that are one class written several ways: ' yes' and 'yes', '1' and
    '1.0' (and, with ``case``, 'Yes' and 'yes')."""
    if len(classes) > _MAX_COMPARED:
        return []
    groups: dict[Any, list[Any]] = {}
    for label in classes:
        key = _spelling_key(label)
        if case and key[0] == "text":
            key = ("text", key[1].casefold())
        groups.setdefault(key, []).append(label)
    return [labels for labels in groups.values() if len(labels) > 1]


def _shown_alike(alike: list[list[Any]]) -> str:
    return "; ".join(" and ".join(repr(v) for v in labels) for labels in alike[:3])


def check_label_spellings(classes: Sequence[Any]) -> None:
    """Refuse labels that are one class written two ways (' yes' and 'yes', '1' and '1.0') or
    that mark a missing label ('?'): each was a class of its own, and a model trained with a
    class ' yes' beside 'yes'. Letter case may carry meaning ('C' and 'c', two keys), and is
    only named where a binary column has more than two classes (:func:`parse_labels`)."""
    alike = look_alike_labels(classes)
    # Words in two cases ('Yes' and 'yes') are one class; single letters and codes ('C' and
    # 'c', two keys; 'A1' and 'a1') may be two.
    alike += [
        labels
        for labels in look_alike_labels(classes, case=True)
        if all(isinstance(v, str) and len(v.strip()) > 1 and v.strip().isalpha() for v in labels)
        and len({v.strip() for v in labels}) > 1
    ]
    if alike:
        raise DataError(
            f"labels {_shown_alike(alike)} differ only in surrounding spaces, letter case or how "
            "a number is written: one class written two ways? Write each class one way in the "
            "label column"
        )
    markers = [c for c in classes if isinstance(c, str) and c.strip() in _MISSING_MARKERS]
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
            "; a metric over several classes takes an average (macro, weighted or micro)"
            if len(classes) > 2
            else ""
        )
        cased = look_alike_labels(classes, case=True) if len(classes) > 2 else []
        if cased:  # 'Yes' beside 'yes': one class written two ways, more likely than 3 classes
            several = (
                f"; {_shown_alike(cased)} differ only in letter case: one class written two "
                "ways? Write each class one way in the label column"
            )
        # One class is too few for any job (binary, or averaged over classes): "exactly two"
        # told a user with a multi-class column the wrong rule.
        wanted = "at least two classes" if len(classes) < 2 else "exactly two classes"
        raise ClassCountError(
            f"labels must have {wanted}; found {len(classes)} {noun}: "
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
