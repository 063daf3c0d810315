"""The data sets that ship with METRO, named by ``builtin://NAME?key=value&...`` uris.

They let a user try METRO without data of their own, and give the tests and benchmarks data that
need no file. The scikit-learn loaders are imported when a set is asked for, not with the library.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import numpy as np

from metro.datasets._base import DataError, Loaded
from metro.datasets._limits import check_rows

#: Names accepted after ``builtin://``.
BUILTIN_DATASETS = ("breast_cancer", "digits", "synthetic")

# Generous caps on what ``builtin://synthetic`` may be asked to allocate, so that a request cannot
# exhaust the worker's memory before ``max_rows`` is even consulted.
_SYNTHETIC_MAX_SAMPLES = 10_000_000
_SYNTHETIC_MAX_FEATURES = 10_000
_SYNTHETIC_MAX_VALUES = 200_000_000


def load_builtin(
    uri: str, max_rows: int | None, *, all_classes: bool = False
) -> tuple[Loaded, Any]:
    """Returns the loaded arrays and the default positive label of a ``builtin://`` uri.
    ``all_classes``: for data with several classes (:func:`load_multi_target`),
    ``builtin://digits`` without ``positive`` is the ten digits as they are."""
    name, params = _builtin_params(uri)
    if all_classes and name == "digits" and "positive" not in params:
        return _all_digits(params, max_rows)
    reader, _ = _BUILTINS[name]
    return reader(params, max_rows)


def builtin_shape(uri: str, *, all_classes: bool = False) -> tuple[int, tuple[int, ...]]:
    """The rows of a ``builtin://`` data set and the shape of one example, without generating
    a synthetic one (its size is in its parameters); DataError as :func:`load_dataset` for a bad
    uri (``all_classes`` as :func:`load_builtin`)."""
    n_rows, shape, _ = builtin_size(uri, all_classes=all_classes)
    return n_rows, shape


def builtin_size(uri: str, *, all_classes: bool = False) -> tuple[int, tuple[int, ...], int]:
    """:func:`builtin_shape` and the number of classes, from one load: an averaged job reads
    ``all_classes`` and searches each class. A synthetic set, never generated, has two."""
    name, params = _builtin_params(uri)
    if name == "synthetic":
        n_samples, n_features, _, _ = _synthetic_params(params, max_rows=None)
        return n_samples, (n_features,), 2
    (X, y, _), _ = load_builtin(uri, None, all_classes=all_classes)  # loads in milliseconds
    # A set, not np.unique: a binary read's labels may mix types, which do not sort.
    classes = len(set(np.asarray(y).ravel().tolist()))
    return int(X.shape[0]), tuple(int(v) for v in X.shape[1:]), classes


def _builtin_params(uri: str) -> tuple[str, dict[str, str]]:
    """The name and parameters of a ``builtin://`` uri, checked against what that set takes."""
    parts = urllib.parse.urlsplit(uri)
    name = parts.netloc
    if parts.path not in ("", "/") or parts.fragment:
        raise DataError(f"malformed builtin uri {uri!r}; expected builtin://NAME?key=value&...")
    if name not in _BUILTINS:
        raise DataError(
            f"unknown builtin dataset '{name}'; expected one of {', '.join(BUILTIN_DATASETS)}"
        )
    params: dict[str, str] = {}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key in params:
            raise DataError(f"builtin://{name}: parameter '{key}' is given twice")
        params[key] = value
    _, allowed = _BUILTINS[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        valid = ", ".join(allowed) if allowed else "none"
        raise DataError(
            f"builtin://{name}: unknown parameter '{unknown[0]}'; valid parameters: {valid}"
        )
    return name, params


def _int_param(
    name: str, params: dict[str, str], key: str, default: int | None, low: int, high: int
) -> int:
    text = params.get(key)
    if text is None:
        if default is None:
            raise DataError(f"builtin://{name} needs the parameter '{key}'")
        return default
    try:
        value = int(text)
    except ValueError:
        raise DataError(f"builtin://{name}: {key} must be an integer, got '{text}'") from None
    if not low <= value <= high:
        raise DataError(f"builtin://{name}: {key} must be between {low} and {high}, got {value}")
    return value


def _bool_param(name: str, params: dict[str, str], key: str) -> bool:
    text = params.get(key, "false").strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise DataError(f"builtin://{name}: {key} must be true or false, got '{params[key]}'")


def _breast_cancer(params: dict[str, str], max_rows: int | None) -> tuple[Loaded, Any]:
    """Malignant is the positive class although scikit-learn codes it 0.

    It is the class a screening metric is about (recall on malignant tumours is what matters),
    and it is the minority (212 of 569), which is where F1-type objectives differ from accuracy.
    Labels are kept as the names, so ``positive_label="benign"`` still works.
    """
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    labels = np.asarray(data.target_names)[data.target]
    names = tuple(str(n) for n in data.feature_names)
    return (data.data, labels, names), "malignant"


def _digits(params: dict[str, str], max_rows: int | None) -> tuple[Loaded, Any]:
    """One digit against the rest, or against one other digit (the other rows dropped)."""
    from sklearn.datasets import load_digits

    if "positive" not in params:
        raise DataError(
            "builtin://digits needs the parameter 'positive', the digit that is the positive "
            "class (builtin://digits?positive=9: nine against the rest; &negative=8: against "
            "eight only); its ten classes as they are take a metric with an average"
        )
    positive = _int_param("digits", params, "positive", None, 0, 9)
    negative = None
    if "negative" in params:
        negative = _int_param("digits", params, "negative", None, 0, 9)
        if negative == positive:
            raise DataError(f"builtin://digits: negative must differ from positive ({positive})")
    as_images = _bool_param("digits", params, "as_images")
    data = load_digits()
    X, target = data.data, data.target
    if negative is None:
        labels = np.full(target.shape, f"not {positive}", dtype=object)
        labels[target == positive] = positive
    else:
        keep = np.isin(target, (positive, negative))
        X, labels = X[keep], target[keep]
    names = None if as_images else tuple(str(n) for n in data.feature_names)
    if as_images:
        X = X.reshape(-1, 1, 8, 8)
    return (X, labels, names), positive


def _all_digits(params: dict[str, str], max_rows: int | None) -> tuple[Loaded, Any]:
    """The ten digits (1,797 rows, labels 0 to 9), for a job averaged over classes."""
    from sklearn.datasets import load_digits

    if "negative" in params:
        raise DataError("builtin://digits: negative needs positive (one digit against another)")
    as_images = _bool_param("digits", params, "as_images")
    data = load_digits()
    X = data.data.reshape(-1, 1, 8, 8) if as_images else data.data
    names = None if as_images else tuple(str(n) for n in data.feature_names)
    return (X, data.target, names), None


def _synthetic(params: dict[str, str], max_rows: int | None) -> tuple[Loaded, Any]:
    """An imbalanced problem of chosen size, for trying METRO without any data of one's own."""
    from sklearn.datasets import make_classification

    n_samples, n_features, seed, fraction = _synthetic_params(params, max_rows=max_rows)
    n_informative = max(2, n_features // 2)
    X, y = make_classification(
        n_samples=n_samples,
        n_features=n_features,
        n_informative=n_informative,
        # scikit-learn's default of 2 redundant features does not fit when n_features is tiny.
        n_redundant=min(2, n_features - n_informative),
        n_repeated=0,
        weights=[1 - fraction, fraction],
        flip_y=0.01,
        class_sep=1.0,
        random_state=seed,
    )
    return (X, y, tuple(f"x{i}" for i in range(n_features))), 1


def _synthetic_params(
    params: dict[str, str], *, max_rows: int | None
) -> tuple[int, int, int, float]:
    """(n_samples, n_features, seed, positive_fraction) of ``builtin://synthetic``, checked."""
    name = "synthetic"
    n_samples = _int_param(name, params, "n_samples", 2000, 1, _SYNTHETIC_MAX_SAMPLES)
    n_features = _int_param(name, params, "n_features", 20, 2, _SYNTHETIC_MAX_FEATURES)
    seed = _int_param(name, params, "seed", 0, 0, 2**32 - 1)
    text = params.get("positive_fraction", "0.05")
    try:
        fraction = float(text)
    except ValueError:
        raise DataError(
            f"builtin://{name}: positive_fraction must be a number, got '{text}'"
        ) from None
    if not 0 < fraction < 1:
        raise DataError(
            f"builtin://{name}: positive_fraction must be strictly between 0 and 1, got {text}"
        )
    if n_samples * n_features > _SYNTHETIC_MAX_VALUES:
        raise DataError(
            f"builtin://{name}: n_samples * n_features must be at most {_SYNTHETIC_MAX_VALUES}"
        )
    check_rows(n_samples, max_rows)  # before generating, not after
    return n_samples, n_features, seed, fraction


_BUILTINS: dict[
    str, tuple[Callable[[dict[str, str], int | None], tuple[Loaded, Any]], tuple[str, ...]]
] = {
    "breast_cancer": (_breast_cancer, ()),
    "digits": (_digits, ("positive", "negative", "as_images")),
    "synthetic": (_synthetic, ("n_samples", "n_features", "positive_fraction", "seed")),
}
