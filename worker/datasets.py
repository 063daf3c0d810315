"""Turning a job's dataset URI into a :class:`metro.datasets.Dataset`.

``builtin://`` goes straight to ``metro.datasets``; ``file://`` and ``s3://`` are first checked
again against the tenant's allowed locations (:mod:`core.datasets.locations`, with this worker's
settings: a spec stored under other settings does not widen them); ``dataset://<id>`` is the
tenant's upload, read from the disk or copied from the object store it was kept in
(:mod:`core.datasets.storage`); ``s3://`` is copied through fsspec and ``https://`` downloaded
under the SSRF policy of :mod:`core.datasets.fetch`, both into a temporary file with a size cap.
A failure names the job's URI, never a server path (the upload store's, or a temporary copy's).
Loaded datasets are kept (two per process), so a worker helping with a grid or resuming a job
does not parse the same file again; a dataset whose bytes can change behind its URI (file, s3,
https) is kept for the job that loaded it only, so a new job on an edited file reads the edit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import threading
import urllib.parse
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from core.datasets.locations import LocationPolicy, UnreadableLocationError, local_path_of
from core.datasets.storage import fetch_stored, holds
from core.datasets.uploads import file_format, nul_label
from core.db.models import Dataset as DatasetRow
from core.errors import ServiceError
from metro.datasets import (
    DataError,
    Dataset,
    MultiTargetDataset,
    load_dataset,
    load_multi_target,
    uri_scheme,
)
from worker.context import WorkerContext

_CACHE_SIZE = 2
_cache: OrderedDict[tuple[str, ...], Dataset | MultiTargetDataset] = OrderedDict()
Loaded = TypeVar("Loaded", Dataset, MultiTargetDataset)
# How one file is read once it is local: (path or uri, data_roots or None) -> the data.
Reader = Callable[[str, "list[str] | None"], Loaded]
_lock = threading.Lock()


# Schemes whose bytes cannot change behind their URI: an upload is never rewritten, a built-in
# is made by the library. A cached load of any other URI serves only the job that loaded it.
_IMMUTABLE_SCHEMES = ("dataset", "builtin")


def load_job_dataset(
    ctx: WorkerContext,
    tenant_id: uuid.UUID,
    dataset: dict[str, Any],
    *,
    job_id: uuid.UUID | None = None,
) -> Dataset:
    """The job's dataset, from this process's cache where it may be reused: an upload or a
    built-in for any job of the tenant; a ``file://``, ``s3://`` or ``https://`` dataset only for
    the job (``job_id``) that loaded it (its attempts and helpers), since the bytes behind such a
    URI may have changed since (a new job reads them again)."""
    label_column = str(dataset.get("label_column") or "y")
    positive = dataset.get("positive_label")
    ignored = list(dataset.get("ignore_columns") or [])
    limits = _limits(ctx)

    def read(path: str, roots: list[str] | None) -> Dataset:
        return load_dataset(
            path, label_column=label_column, positive_label=positive, data_roots=roots,
            ignore_columns=ignored, **limits,
        )  # fmt: skip

    key = ("binary", label_column, repr(positive), repr(ignored))
    return _cached(ctx, tenant_id, str(dataset["uri"]), key, job_id, read)


def load_job_multi_target(
    ctx: WorkerContext,
    tenant_id: uuid.UUID,
    dataset: dict[str, Any],
    *,
    job_id: uuid.UUID | None = None,
) -> MultiTargetDataset:
    """An averaged job's data (metric.average): the classes of ``label_column``, or the 0/1
    columns of ``label_columns``, as :func:`metro.datasets.load_multi_target` reads them, from
    the same places and cache as :func:`load_job_dataset`."""
    label_column = str(dataset.get("label_column") or "y")
    columns = dataset.get("label_columns")
    ignored = list(dataset.get("ignore_columns") or [])
    limits = _limits(ctx)

    def read(path: str, roots: list[str] | None) -> MultiTargetDataset:
        return load_multi_target(
            path, label_column=label_column, label_columns=columns, data_roots=roots,
            ignore_columns=ignored, **limits,
        )  # fmt: skip

    key = ("multi", label_column, repr(columns), repr(ignored))
    return _cached(ctx, tenant_id, str(dataset["uri"]), key, job_id, read)


def _limits(ctx: WorkerContext) -> dict[str, Any]:
    settings = ctx.settings
    return {
        "max_rows": settings.max_dataset_rows,
        "max_columns": settings.max_dataset_columns,
        "max_decompressed_bytes": settings.max_decompressed_bytes,
    }


def _cached(
    ctx: WorkerContext,
    tenant_id: uuid.UUID,
    uri: str,
    how: tuple[str, ...],
    job_id: uuid.UUID | None,
    read: Reader[Loaded],
) -> Loaded:
    scheme = uri_scheme(uri)
    owner = "" if scheme in _IMMUTABLE_SCHEMES else str(job_id)
    key = (str(tenant_id), uri, *how, owner)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]  # type: ignore[return-value]
    loaded = _load(ctx, tenant_id, uri, scheme, read)
    said = nul_label(_label_values(loaded))
    if said is not None:  # the trace, choices and manifest store them: refused before training
        raise DataError(said)
    with _lock:
        _cache[key] = loaded
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return loaded


def _label_values(loaded: Dataset | MultiTargetDataset) -> tuple[Any, ...]:
    if isinstance(loaded, MultiTargetDataset):
        return tuple(loaded.classes)
    return (loaded.positive_label, loaded.negative_label)


def _load(
    ctx: WorkerContext, tenant_id: uuid.UUID, uri: str, scheme: str, read: Reader[Loaded]
) -> Loaded:
    settings = ctx.settings
    if scheme == "builtin":
        return read(uri, None)
    locations = LocationPolicy.from_settings(settings)
    if scheme in ("file", ""):
        path = local_path_of(uri)
        try:
            real, root = locations.local_file(tenant_id, uri, path or "")
        except UnreadableLocationError as exc:
            raise DataError(str(exc)) from None
        with _named_in_errors(real, uri):
            return _named(read(real, [root]), uri)
    if scheme == "dataset":
        with ctx.session() as session:
            try:
                ident = uuid.UUID(urllib.parse.urlsplit(uri).netloc)
            except ValueError:
                raise DataError(f"no dataset {uri}") from None
            row = session.get(DatasetRow, ident)
            if row is None or row.tenant_id != tenant_id:
                raise DataError(f"the uploaded dataset {uri} no longer exists")
            location, recorded = row.storage_path, (row.size_bytes, row.sha256)
        if "://" not in location:  # kept on a disk this worker shares with the API
            path_ = Path(location)
            with _named_in_errors(location, uri):
                _check_upload(path_, recorded, uri)
                return _named(read(location, [str(path_.parent)]), uri)
        with tempfile.TemporaryDirectory(prefix="metro-data-") as tmp:
            local = Path(tmp) / Path(urllib.parse.urlsplit(location).path).name
            try:
                fetch_stored(location, local, max_bytes=settings.max_upload_bytes)
            except FileNotFoundError:
                raise DataError(f"the stored file of {uri} is missing") from None
            except ServiceError as exc:
                raise DataError(str(exc).replace(location, uri)) from None
            _check_upload(local, recorded, uri)
            with _named_in_errors(str(local), uri):
                return _named(read(str(local), [tmp]), uri)
    if scheme in ("s3", "https"):
        if scheme == "s3":
            try:
                uri = locations.object_uri(tenant_id, uri)
            except UnreadableLocationError as exc:
                raise DataError(str(exc)) from None
        with tempfile.TemporaryDirectory(prefix="metro-data-") as tmp:
            name = Path(urllib.parse.urlsplit(uri).path).name or "data"
            try:
                file_format(name)
            except ServiceError as exc:
                raise DataError(str(exc)) from None
            local = Path(tmp) / name
            if scheme == "s3":
                _copy_s3(uri, local, settings.max_fetch_bytes)
            else:
                from core.datasets.fetch import fetch_https

                try:
                    fetch_https(
                        uri, local, max_bytes=settings.max_fetch_bytes,
                        timeout=settings.fetch_timeout_seconds,
                        max_redirects=settings.max_fetch_redirects,
                    )  # fmt: skip
                except ServiceError as exc:
                    raise DataError(f"could not download the dataset: {exc}") from None
            with _named_in_errors(str(local), uri):
                return _named(read(str(local), [tmp]), uri)
    raise DataError(f"unsupported dataset URI scheme in {uri!r}")


def _check_upload(path: Path, recorded: tuple[int, str], uri: str) -> None:
    """The stored upload's bytes are the ones its dataset recorded (size, then SHA-256) before a
    job trains on them: a damaged or truncated store was read as it was, and a job succeeded on
    rows its dataset never held. (The API serves model files under the same rule.)"""
    size, sha256 = recorded
    try:
        if holds(str(path), size_bytes=size, sha256=sha256):
            return
    except FileNotFoundError:
        raise DataError(f"the stored file of {uri} is missing") from None
    raise DataError(
        f"the stored bytes of {uri} are not the ones uploaded (size or SHA-256 differs from the "
        "dataset's record): the store was damaged; upload the file again, which repairs it"
    )


@contextlib.contextmanager
def _named_in_errors(path: str, uri: str) -> Iterator[None]:
    """A DataError about ``path`` (a stored upload, a temporary copy) names ``uri`` instead: a
    job's failure_reason never shows a server path, a tenant id or a temporary folder."""
    try:
        yield
    except DataError as exc:
        message = str(exc).replace(path, uri)
        folder = str(Path(path).parent)
        if folder not in ("", "/", "."):
            message = message.replace(folder, "")
        raise exc.reworded(message) from None  # DataLimitError stays one


def _named(loaded: Loaded, uri: str) -> Loaded:
    """The data named by the job's URI, not the file it was read from, in messages and
    manifests (a temporary copy, or the store's internal path)."""
    return dataclasses.replace(loaded, source=uri)


def _copy_s3(uri: str, destination: Path, max_bytes: int) -> None:
    import fsspec
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError

    try:
        fs, path = fsspec.core.url_to_fs(uri)
        size = fs.size(path)
        if size is not None and size > max_bytes:
            raise DataError(f"the dataset is {size} bytes, more than the limit of {max_bytes}")
        fs.get_file(path, str(destination))
    except FileNotFoundError:
        raise DataError(f"dataset not found: {uri}") from None
    except PermissionError:
        raise DataError(f"access to {uri} was denied") from None
    except (NoCredentialsError, PartialCredentialsError):
        # The deployment's fault, not the data's, but nothing a retry mends: say what to set.
        raise DataError(
            f"cannot read {uri}: the workers have no S3 credentials; set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or a role) on every worker"
        ) from None
