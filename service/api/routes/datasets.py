"""/v1/datasets: upload and read datasets."""

from __future__ import annotations

import logging
import uuid
from typing import Annotated

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from sqlalchemy.orm import Session

from core.datasets.storage import Kept, UploadStore
from core.datasets.uploads import (
    DatasetLimits,
    StoredUpload,
    inspect_upload,
    stage_upload,
    staging_dir,
)
from core.db.models import Dataset
from core.errors import (
    FieldError,
    InvalidInputError,
    StorageQuotaExceededError,
    no_room,
    storage_quota_message,
)
from service.api.deps import PrincipalDep, SessionDep, SettingsDep
from service.api.problems import problem_responses
from service.api.routes._paging import CursorQuery, LimitQuery, page_size
from service.api.routing import SessionScopedRoute
from service.crud import datasets as crud
from service.crud.tenants import lock_tenant
from service.job_spec import fields_with_nul
from service.schemas.common import Page
from service.schemas.datasets import DatasetOut

router = APIRouter(prefix="/v1/datasets", tags=["datasets"], route_class=SessionScopedRoute)

logger = logging.getLogger(__name__)


@router.post(
    "",
    status_code=201,
    response_model=DatasetOut,
    summary="Upload a dataset (CSV, CSV.gz, Parquet or NPZ)",
    responses={
        201: {
            "headers": {
                "Location": {"description": "URL of the dataset", "schema": {"type": "string"}}
            }
        },
        **problem_responses(401, 413, 415, 422, 507),
    },
)
def upload_dataset(
    request: Request,
    response: Response,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    file: Annotated[
        UploadFile,
        File(
            description="The data file, its format told by its name's suffix: .csv, .csv.gz, "
            ".parquet (or .pq) or .npz; any other suffix is refused with a 415"
        ),
    ],
    label_column: Annotated[
        str | None,
        Form(
            max_length=255,
            description="When given, the file is loaded as a job will load it "
            "and refused now if that would fail",
        ),
    ] = None,
    positive_label: Annotated[str | None, Form(max_length=255)] = None,
    ignore_columns: Annotated[
        list[str] | None,
        Form(
            description="Columns that are not features (an id, a note, text), left out of the "
            "check with label_column as a job's dataset.ignore_columns leaves them out of "
            "training; one field per column",
        ),
    ] = None,
    label_columns: Annotated[
        list[str] | None,
        Form(
            # Checked by the route with its own words ("names one column"); the document says
            # it in the schema's.
            json_schema_extra={"minItems": 2, "uniqueItems": True},
            description="Instead of label_column: the several 0/1 label columns of a multi-label "
            "job (dataset.label_columns), one field per column; the file is loaded as such a "
            "job loads it and refused now if that would fail",
        ),
    ] = None,
) -> DatasetOut:
    """Returns the ``dataset://<id>`` URI to use in jobs; the SHA-256 of the bytes is recorded,
    and identical bytes are stored once per tenant."""
    nul_errors = fields_with_nul(
        {"label_column": label_column, "positive_label": positive_label,
         "ignore_columns": ignore_columns, "label_columns": label_columns},
        ("body",),
    )  # fmt: skip
    nul_errors += [
        FieldError(("body", field, i), "a column name is 1 to 255 characters")
        for field, names in (("ignore_columns", ignore_columns), ("label_columns", label_columns))
        for i, name in enumerate(names or [])
        if not 1 <= len(name) <= 255
    ]
    if label_columns is not None and not nul_errors:
        nul_errors += _label_columns_errors(label_columns, label_column, positive_label)
    checked_by = label_column if label_columns is None else label_columns
    if file.filename and "\x00" in file.filename:
        nul_errors.append(FieldError(("body", "file"), "the file name must not contain a NUL"))
    if positive_label is not None and checked_by is None and not nul_errors:
        # Checked against the label column only: without one it was dropped without a word.
        nul_errors.append(
            FieldError(
                ("body", "positive_label"),
                "positive_label is checked against label_column: give label_column too",
            )
        )
    if ignore_columns and checked_by is None and not nul_errors:
        nul_errors.append(
            FieldError(
                ("body", "ignore_columns"),
                "ignore_columns leaves columns out of the check with label_column (or "
                "label_columns): give it too (a job names its own dataset.ignore_columns)",
            )
        )
    if nul_errors:
        raise InvalidInputError("Invalid dataset", nul_errors)
    store = UploadStore.from_settings(settings)
    # A tenant whose datasets already fill its quota was refused before the body was read
    # (service.api.middleware.RequireKeyMiddleware); the upload's own size is counted below.
    quota = settings.max_storage_bytes_per_tenant
    staged = stage_upload(
        file.file,
        filename=file.filename or "",
        staging_dir=staging_dir(settings),
        max_bytes=settings.max_upload_bytes,
    )
    try:
        info = inspect_upload(
            staged,
            label_column=label_column,
            positive_label=positive_label,
            upload_dir=settings.upload_dir,
            limits=DatasetLimits.from_settings(settings),
            ignore_columns=ignore_columns or (),
            label_columns=label_columns,
        )
        location = store.location(principal.tenant_id, staged.sha256, staged.format)
        if quota:
            # Counted again under the tenant's lock, held until the row is committed: uploads
            # of different bytes at once are counted one after another, not all against the
            # room that was left before any of them.
            lock_tenant(session, principal.tenant_id)
            used = crud.stored_bytes(session, principal.tenant_id)
            stored_before = crud.location_in_use(session, principal.tenant_id, location)
            if not stored_before and used + staged.size_bytes > quota:
                session.rollback()  # release the lock now
                raise StorageQuotaExceededError(
                    storage_quota_message(used + staged.size_bytes, quota)
                )
        # From here until the dataset row is committed, the stored object's row is locked: a
        # concurrent delete of the last dataset holding these bytes either finished before
        # (and the bytes are stored again below) or waits and then sees this dataset.
        crud.lock_stored_object(
            session, tenant_id=principal.tenant_id, location=location, sha256=staged.sha256,
            size_bytes=staged.size_bytes,
        )  # fmt: skip
        created = False
        try:
            created = store.keep(staged, location) is Kept.STORED
            dataset = crud.add_dataset(
                session,
                Dataset(
                    tenant_id=principal.tenant_id,
                    filename=(file.filename or "")[-255:],
                    format=staged.format,
                    size_bytes=staged.size_bytes,
                    sha256=staged.sha256,
                    storage_path=location,
                    n_rows=info.n_rows,
                    n_columns=info.n_columns,
                    columns=info.columns,
                    label_column=label_column if info.labels is not None else None,
                    labels=info.labels,
                    label_columns=label_columns,
                    ignore_columns=ignore_columns or None,
                    warnings=[w.to_dict() for w in info.warnings] or None,
                ),
            )
        except BaseException as exc:
            session.rollback()
            if created:
                _remove_if_unused(session, principal.tenant_id, location, staged, store)
            full = no_room(exc, "this upload")  # the store's disk is full
            if full is not None:
                raise full from None
            raise
    finally:
        staged.path.unlink(missing_ok=True)
    response.headers["Location"] = str(request.url_for("get_dataset", dataset_id=str(dataset.id)))
    return DatasetOut.model_validate(dataset)


def _label_columns_errors(
    label_columns: list[str], label_column: str | None, positive_label: str | None
) -> list[FieldError]:
    """What is wrong with an upload's ``label_columns`` before the file is read: given with
    label_column or positive_label (a multi-label job names neither), or refused as a job's
    dataset.label_columns is (repeated, one, or past the limit of classes)."""
    from metro.datasets import DataError, check_label_columns

    if label_column is not None:
        return [
            FieldError(
                ("body", "label_columns"),
                "give label_column (one label column) or label_columns (several 0/1 ones), "
                "not both",
            )
        ]
    if positive_label is not None:
        return [
            FieldError(
                ("body", "positive_label"),
                "positive_label is for one label column; each of label_columns is a 0/1 column",
            )
        ]
    try:
        check_label_columns(label_columns)
    except DataError as exc:
        return [FieldError(("body", "label_columns"), str(exc))]
    return []


def _remove_if_unused(
    session: Session, tenant_id: uuid.UUID, location: str, staged: StoredUpload, store: UploadStore
) -> None:
    """The bytes this upload stored, after its dataset row failed: removed only if no dataset
    holds them, decided again under the object's lock. A commit whose answer was lost (a
    connection dropped after COMMIT) may have stored the row; the bytes were removed anyway, and
    that dataset listed, counted and accepted jobs with nothing behind it. Where the database
    cannot tell, the bytes stay: bytes no dataset names are never served, and the next upload of
    them reuses them."""
    try:
        crud.remove_unused_bytes(
            session, tenant_id, location, sha256=staged.sha256, size_bytes=staged.size_bytes,
            remove_bytes=store.remove,
        )  # fmt: skip
    except Exception:
        session.rollback()
        logger.warning("upload to %s failed; its bytes were left in place", location, exc_info=True)


@router.get(
    "",
    response_model=Page[DatasetOut],
    summary="List datasets, newest first",
    responses=problem_responses(401, 422),
)
def list_datasets(
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    cursor: CursorQuery = None,
    limit: LimitQuery = None,
    sha256: Annotated[
        str | None,
        Query(
            description="Only uploads of these bytes (their SHA-256, hex): what `metro submit "
            "--idempotency-key` looks for before uploading a file again",
            pattern="^[0-9a-f]{64}$",
        ),
    ] = None,
) -> Page[DatasetOut]:
    rows, next_cursor = crud.list_datasets(
        session, principal.tenant_id, cursor=cursor, limit=page_size(limit, settings),
        sha256=sha256,
    )  # fmt: skip
    return Page[DatasetOut](
        items=[DatasetOut.model_validate(r) for r in rows], next_cursor=next_cursor
    )


@router.get(
    "/{dataset_id}",
    response_model=DatasetOut,
    summary="Get a dataset",
    responses=problem_responses(401, 404, 422),
)
def get_dataset(dataset_id: uuid.UUID, session: SessionDep, principal: PrincipalDep) -> DatasetOut:
    return DatasetOut.model_validate(crud.get_dataset(session, principal.tenant_id, dataset_id))


@router.delete(
    "/{dataset_id}",
    status_code=204,
    summary="Delete a dataset",
    responses=problem_responses(401, 404, 409, 422),
)
def delete_dataset(dataset_id: uuid.UUID, session: SessionDep, principal: PrincipalDep) -> Response:
    """Refused (409) while a queued or running job uses it. Finished jobs keep its URI for the
    record. The stored bytes go with the last dataset of the tenant that holds them."""
    crud.delete_dataset(session, principal.tenant_id, dataset_id, remove_bytes=UploadStore.remove)
    return Response(status_code=204)
