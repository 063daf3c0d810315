"""/v1/datasets: upload and read datasets."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, Response, UploadFile

from service.api.deps import PrincipalDep, SessionDep, SettingsDep
from service.api.problems import problem_responses
from service.api.routes._paging import CursorQuery, LimitQuery, page_size
from service.crud import datasets as crud
from service.datasets.uploads import DatasetLimits, inspect_upload, store_upload
from service.db.models import Dataset
from service.errors import FieldError, InvalidInputError
from service.job_spec import fields_with_nul
from service.schemas.common import Page
from service.schemas.datasets import DatasetOut

router = APIRouter(prefix="/v1/datasets", tags=["datasets"])


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
        **problem_responses(401, 413, 415, 422),
    },
)
def upload_dataset(
    request: Request,
    response: Response,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="The data file")],
    label_column: Annotated[
        str | None,
        Form(
            max_length=255,
            description="When given, the file is loaded as a job will load it "
            "and refused now if that would fail",
        ),
    ] = None,
    positive_label: Annotated[str | None, Form(max_length=255)] = None,
) -> DatasetOut:
    """Returns the ``dataset://<id>`` URI to use in jobs; the SHA-256 of the bytes is recorded."""
    nul_errors = fields_with_nul(
        {"label_column": label_column, "positive_label": positive_label}, ("body",)
    )
    if file.filename and "\x00" in file.filename:
        nul_errors.append(FieldError(("body", "file"), "the file name must not contain a NUL"))
    if nul_errors:
        raise InvalidInputError("Invalid dataset", nul_errors)
    dataset_id = uuid.uuid4()
    stored = store_upload(
        file.file,
        filename=file.filename or "",
        upload_dir=settings.upload_dir,
        tenant_id=principal.tenant_id,
        dataset_id=dataset_id,
        max_bytes=settings.max_upload_bytes,
    )
    try:
        info = inspect_upload(
            stored,
            label_column=label_column,
            positive_label=positive_label,
            upload_dir=settings.upload_dir,
            limits=DatasetLimits.from_settings(settings),
        )
        dataset = crud.add_dataset(
            session,
            Dataset(
                id=dataset_id,
                tenant_id=principal.tenant_id,
                filename=(file.filename or "")[-255:],
                format=stored.format,
                size_bytes=stored.size_bytes,
                sha256=stored.sha256,
                storage_path=str(stored.path),
                n_rows=info.n_rows,
                n_columns=info.n_columns,
                columns=info.columns,
            ),
        )
    except BaseException:
        stored.path.unlink(missing_ok=True)  # no row, no file
        raise
    response.headers["Location"] = str(request.url_for("get_dataset", dataset_id=str(dataset.id)))
    return DatasetOut.model_validate(dataset)


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
) -> Page[DatasetOut]:
    rows, next_cursor = crud.list_datasets(
        session, principal.tenant_id, cursor=cursor, limit=page_size(limit, settings)
    )
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
