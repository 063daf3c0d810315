"""Checking the dataset URI of a job at submission, per scheme.

``dataset://<id>``  an upload of the same tenant (another tenant's id is "not found");
``builtin://name``  a data set shipped with metro (``metro.datasets.BUILTIN_DATASETS``);
``file:///path``    only under METRO_DATA_ROOTS, never in the service's own stores
                    (:mod:`core.datasets.locations`);
``s3://bucket/key`` only under METRO_DATA_URI_PREFIXES, never in the service's own stores;
                    the worker reads it through fsspec (needs ``s3fs``);
``https://...``     host checked against private addresses now, and again at download time
                    (:mod:`core.datasets.fetch`).
Anything else is refused. All failures are InvalidInputError at ``body.dataset.uri``.
"""

from __future__ import annotations

import re
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from core.datasets.fetch import Resolver, check_https_url
from core.datasets.locations import LocationPolicy, UnreadableLocationError
from core.datasets.uploads import file_format
from core.errors import (
    FieldError,
    InvalidInputError,
    NotFoundError,
    UnsafeURLError,
    UnsupportedFormatError,
)
from metro.datasets import DataError, local_path_of, show_values, uri_scheme
from service.crud.datasets import get_dataset, unknown_dataset
from service.schemas.jobs import DatasetRef

_URI_LOC = ("body", "dataset", "uri")


@dataclass(frozen=True)
class CheckedDataset:
    uri: str
    dataset_id: uuid.UUID | None


def _invalid(msg: str, loc: tuple[str | int, ...] = _URI_LOC) -> InvalidInputError:
    return InvalidInputError("Invalid job", [FieldError(loc, msg)])


# Built-ins are checked by loading them, with a row cap so that a large synthetic set is judged by
# its parameters (the cap is checked before any data is generated) instead of being built here.
_BUILTIN_CHECK_ROWS = 5_000


def _check_builtin(uri: str, positive_label: object) -> None:
    """The URI's name and parameters at ``body.dataset.uri``, then its ``positive_label`` against
    the set's two classes at ``body.dataset.positive_label`` (every built-in has a default
    positive class, so it loads without one whenever its URI is good)."""
    from metro.datasets import DataError, DataLimitError, load_dataset

    try:
        ds = load_dataset(uri, max_rows=_BUILTIN_CHECK_ROWS)
    except DataLimitError:
        # Only builtin://synthetic grows past the cap: its classes are 0 and 1 whatever its
        # parameters, so those of its default (small) set stand in for them.
        if _builtin_name(uri) != "synthetic":
            return
        ds = load_dataset("builtin://synthetic", max_rows=_BUILTIN_CHECK_ROWS)
    except DataError as exc:
        raise _invalid(str(exc)) from None
    if positive_label is not None:
        _check_positive_label([ds.negative_label, ds.positive_label], positive_label, uri)


def _check_builtin_classes(uri: str, dataset: DatasetRef) -> None:
    """A built-in set for a job averaged over its classes: its name and parameters as
    :func:`metro.datasets.load_multi_target` reads them (``builtin://digits``: the ten digits)."""
    from metro.datasets import DataError, builtin_shape

    if dataset.label_columns is not None:
        raise _invalid(
            "a built-in data set has one label column; label_columns needs a table",
            ("body", "dataset", "label_columns"),
        )
    try:
        builtin_shape(uri, all_classes=True)
    except DataError as exc:
        raise _invalid(str(exc)) from None


def _no_columns_to_ignore(dataset: DatasetRef, what: str) -> None:
    """ignore_columns name columns of a table; ``what`` has none (the worker's own refusal,
    in its words)."""
    from metro.datasets import DataError, refuse_ignore_columns

    try:
        refuse_ignore_columns(dataset.ignore_columns or (), what)
    except DataError as exc:
        raise _invalid(str(exc), ("body", "dataset", "ignore_columns")) from None


def _builtin_name(uri: str) -> str:
    return urllib.parse.urlsplit(uri).netloc


def check_dataset(
    session: Session,
    tenant_id: uuid.UUID,
    dataset: DatasetRef,
    *,
    locations: LocationPolicy,
    resolver: Resolver,
    averaged: bool = False,
) -> CheckedDataset:
    """``averaged``: the job averages its metric over several classes (metric.average), so its
    label column holds classes rather than a positive and a negative label, or its
    ``label_columns`` are several 0/1 columns."""
    uri = dataset.uri.strip()
    scheme = uri_scheme(uri)
    lacking = _SCHEME_WITHOUT_SLASHES.match(uri) if not scheme else None
    if lacking:  # read as a relative local path, it was "local files are not enabled"
        name = lacking.group(1).lower()
        article = "an" if name in ("s3", "http", "https") else "a"
        raise _invalid(f"{article} {name} URI is written {name}://...; this one lacks the '//'")
    if scheme == "dataset":
        return _check_upload(session, tenant_id, uri, dataset, averaged)
    if scheme == "builtin":
        _no_columns_to_ignore(dataset, "a built-in data set")
        if averaged:
            _check_builtin_classes(uri, dataset)
            return CheckedDataset(uri=uri, dataset_id=None)
        _check_builtin(uri, dataset.positive_label)
        return CheckedDataset(uri=uri, dataset_id=None)
    if scheme in ("file", ""):
        return CheckedDataset(uri=_check_local(tenant_id, uri, locations), dataset_id=None)
    if scheme == "s3":
        parts = urllib.parse.urlsplit(uri)
        if not parts.netloc or parts.path in ("", "/"):
            raise _invalid("s3 URIs must name a bucket and a key, as in s3://bucket/data.csv")
        try:
            canonical = locations.object_uri(tenant_id, uri)
        except UnreadableLocationError as exc:
            raise _invalid(str(exc)) from None
        _check_format(parts.path)
        return CheckedDataset(uri=canonical, dataset_id=None)
    if scheme == "https":
        try:
            check_https_url(uri, resolver)
        except UnsafeURLError as exc:
            raise _invalid(str(exc)) from None
        _check_format(urllib.parse.urlsplit(uri).path)
        return CheckedDataset(uri=uri, dataset_id=None)
    raise _invalid(
        f"unsupported URI scheme {scheme + '://'!r}; use dataset://, builtin://, file://, s3:// "
        "or https://"
    )


def _check_upload(
    session: Session, tenant_id: uuid.UUID, uri: str, dataset: DatasetRef, averaged: bool
) -> CheckedDataset:
    parts = urllib.parse.urlsplit(uri)
    ident = parts.netloc
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        # dataset://<id>/x, ?x=1 and #f were read as dataset://<id>, the rest dropped unsaid
        raise _invalid(
            "a dataset URI is dataset://<id>, as the upload answered it, with nothing after the id"
        )
    try:
        dataset_id = uuid.UUID(ident)
        # Held until the job is committed: a concurrent delete waits, then sees the job.
        row = get_dataset(session, tenant_id, dataset_id, lock="share")
    except (ValueError, NotFoundError):
        raise unknown_dataset(ident) from None
    label_column = dataset.label_column
    if row.format == ".npz":
        _no_columns_to_ignore(dataset, "an NPZ upload")
    if row.columns is not None and row.format != ".npz":
        its_columns = f"; its columns are {show_values(row.columns)}"
        if dataset.label_columns is not None:
            for index, name in enumerate(dataset.label_columns):
                if name not in row.columns:
                    raise _invalid(
                        f"label column {name!r} is not a column of dataset {ident}{its_columns}",
                        ("body", "dataset", "label_columns", index),
                    )
        elif label_column not in row.columns:
            default = (
                ""
                if "label_column" in dataset.model_fields_set
                else f" (dataset.label_column was not given: {label_column!r} is its default)"
            )
            raise _invalid(
                f"label column {label_column!r} is not a column of dataset {ident}"
                f"{_did_you_mean(label_column, row.columns)}{its_columns}{default}",
                ("body", "dataset", "label_column"),
            )
        for index, name in enumerate(dataset.ignore_columns or []):
            if name not in row.columns:
                raise _invalid(
                    f"ignore_columns names {name!r}, not a column of dataset {ident}{its_columns}",
                    ("body", "dataset", "ignore_columns", index),
                )
    if row.labels is not None and row.label_column == label_column and not averaged:
        # Three classes or more recorded: the job's metric wants an average, not another label.
        where = ("body", "metric", "average") if len(row.labels) > 2 else None
        _check_positive_label(row.labels, dataset.positive_label, "the upload", where)
    return CheckedDataset(uri=f"dataset://{dataset_id}", dataset_id=dataset_id)


def _check_positive_label(
    labels: list[Any],
    positive_label: object,
    where: str,
    loc: tuple[str | int, ...] | None = None,
) -> None:
    """``labels`` are the label column's two classes (an upload recorded them, or a built-in was
    loaded): match ``positive_label`` against them with the worker's own rule
    (metro.datasets.parse_labels), so a job that would fail on loading its data is refused now,
    naming the labels found."""
    import numpy as np

    from metro.datasets import DataError, parse_labels

    try:
        parse_labels(np.asarray(labels, dtype=object), positive_label=positive_label)
    except DataError as exc:
        raise _invalid(
            f"{exc} (in {where})", loc or ("body", "dataset", "positive_label")
        ) from None


# A scheme the service reads, written without its '//' (dataset:<id>, file:/data/a.csv).
_SCHEME_WITHOUT_SLASHES = re.compile(r"^(dataset|builtin|file|s3|https?):(?!//)", re.IGNORECASE)


def _check_local(tenant_id: uuid.UUID, uri: str, locations: LocationPolicy) -> str:
    if not locations.data_roots:
        raise _invalid("local files are not enabled on this server (no data roots configured)")
    try:
        path = local_path_of(uri)  # a host, a query or a fragment, each said as such
    except DataError as exc:
        raise _invalid(str(exc)) from None
    if "\x00" in path:
        raise _invalid("the path must not contain a NUL character")
    if not path.startswith("/"):
        raise _invalid("local paths must be absolute")
    try:
        locations.local_file(tenant_id, uri, path)
    except UnreadableLocationError as exc:
        raise _invalid(str(exc)) from None
    _check_format(path)
    return f"file://{urllib.parse.quote(path)}"


def _check_format(path: str) -> None:
    try:
        file_format(path)
    except UnsupportedFormatError as exc:
        raise _invalid(str(exc)) from None


def _did_you_mean(name: str, columns: list[str]) -> str:
    """The column a misspelt or other-case name most likely meant (the columns shown after it
    are the first few only: 'Plan' for the seventh column 'plan' showed five others)."""
    import difflib

    folded = [c for c in columns if c.lower() == name.lower()]
    close = folded or difflib.get_close_matches(name, columns, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
