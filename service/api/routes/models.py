"""/v1/models: read trained models, download them, predict with them."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse
from sqlalchemy import Row
from starlette.concurrency import run_in_threadpool

from core import artifacts
from core.config import Settings
from core.db.models import Model
from core.errors import NotFoundError
from metro.ranges import RangeReport
from service import inference
from service.api.caches import ModelRef
from service.api.deps import PrincipalDep, SessionDep, SettingsDep, run_in_session
from service.api.problems import problem_responses
from service.api.routes._paging import CursorQuery, LimitQuery, page_size
from service.api.routing import SessionScopedRoute
from service.crud import models as crud
from service.crud import reads
from service.schemas.common import Page
from service.schemas.models import (
    ModelOut,
    OutOfRangeColumn,
    OutOfRangeNotice,
    PredictRequest,
    PredictResponse,
)

router = APIRouter(prefix="/v1/models", tags=["models"], route_class=SessionScopedRoute)

_DOWNLOADS = {
    "safetensors": (artifacts.WEIGHTS_FILE, "application/octet-stream"),
    "onnx": (artifacts.ONNX_FILE, "application/onnx"),
}


def _model_out(model: Model | Row[Any]) -> dict[str, Any]:
    """A ModelOut as a plain dict, validated once by the route's response model: the
    manifest's fields that the stored manifest lacks stay unset and are left out of the answer
    (response_model_exclude_unset)."""
    formats: list[Literal["safetensors", "onnx"]] = ["safetensors"]
    if model.has_onnx:
        formats.append("onnx")
    return {
        "id": model.id,
        "job_id": model.job_id,
        "formats": formats,
        "sha256": model.sha256,
        "manifest": model.manifest,
        "created_at": model.created_at,
    }


@router.get(
    "",
    response_model=Page[ModelOut],
    # A manifest is served as the model file has it: a field it lacks is left out, not null.
    response_model_exclude_unset=True,
    summary="List models, newest first",
    responses=problem_responses(401, 422),
)
def list_models(
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    job_id: Annotated[
        uuid.UUID | None, Query(description="Only the model(s) trained by this job")
    ] = None,
    cursor: CursorQuery = None,
    limit: LimitQuery = None,
) -> dict[str, Any]:
    rows, next_cursor = crud.list_models(
        session,
        principal.tenant_id,
        cursor=cursor,
        limit=page_size(limit, settings),
        job_id=job_id,
    )
    return {"items": [_model_out(r) for r in rows], "next_cursor": next_cursor}


@router.get(
    "/{model_id}",
    response_model=ModelOut,
    response_model_exclude_unset=True,
    summary="Get a model and its manifest",
    responses=problem_responses(401, 404, 422),
)
async def get_model(
    model_id: uuid.UUID, request: Request, principal: PrincipalDep
) -> dict[str, Any]:
    # One Core SELECT on an autocommit connection (no session: see service.crud.reads).
    row = await run_in_threadpool(
        reads.read_model, request.app.state.read_engine, principal.tenant_id, model_id,
        _MODEL_COLUMNS,
    )  # fmt: skip
    return _model_out(row)


_MODEL_COLUMNS = ("id", "job_id", "has_onnx", "sha256", "manifest", "created_at")


@router.delete(
    "/{model_id}",
    status_code=204,
    summary="Delete a model",
    responses=problem_responses(401, 404, 422),
)
def delete_model(
    model_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
) -> Response:
    """Delete the model's row and its files. Its job stays (it then has no model; deleting the
    job removes everything it produced). A download already streaming finishes; a prediction
    through another API process that holds the model in its cache answers for
    METRO_MODEL_REF_CACHE_SECONDS (5) at most."""
    where = crud.delete_model(session, principal.tenant_id, model_id)
    request.app.state.model_refs.discard(principal.tenant_id, model_id)
    artifacts.remove_tree(settings.artifacts_uri, where)
    return Response(status_code=204)


@router.get(
    "/{model_id}/download",
    summary="Download the model file",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The model file",
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                "application/onnx": {"schema": {"type": "string", "format": "binary"}},
            },
        },
        304: {
            "description": "Not modified: If-None-Match named the file's ETag (its SHA-256), "
            "which the client's copy then is"
        },
        **problem_responses(401, 404, 422),
    },
)
def download_model(
    model_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    format: Annotated[Literal["safetensors", "onnx"], Query()] = "safetensors",
) -> Response:
    model = crud.get_model(session, principal.tenant_id, model_id)
    name, media_type = _DOWNLOADS[format]
    uri = artifacts.resolve_artifact_uri(settings.artifacts_uri, model.artifact_uri)
    if format == "onnx" and not model.has_onnx:
        raise NotFoundError(f"{format} file of model", model_id)
    # The file is checked against its recorded digest before a byte is sent, and the bytes
    # sent are that same open file's: a file lost or damaged in the store is the server's fault
    # (a 500, logged, as predict answers it), never a 200 whose ETag names other bytes, nor a
    # 404 that blames the client.
    manifest = model.manifest or {}
    recorded = model.sha256 if format == "safetensors" else manifest.get("onnx_sha256")
    headers = {
        "Content-Disposition": f'attachment; filename="model-{model_id}{name[name.index(".") :]}"'
    }
    if recorded:
        headers["ETag"] = f'"{recorded}"'
        if _matches(request.headers.get("if-none-match"), headers["ETag"]):
            # The client holds these bytes (its cache revalidates: the answer is private,
            # no-cache): nothing to send, as RFC 9110 13.1.2 answers a GET.
            return Response(status_code=304, headers=headers)
    # HEAD: the GET's headers, the file neither read nor hashed (so not checked against its
    # digest either: the ETag is the recorded one; a GET of damaged bytes is still the 500).
    head = getattr(request.state, "head", False)
    try:
        if head:
            artifacts.require_file(uri, name)
            answer = Response(media_type=media_type, headers=headers)
            del answer.headers["content-length"]  # the GET streams: it states no length
            return answer
        chunks = artifacts.open_checked(uri, name, recorded)
    except artifacts.ArtifactError as exc:
        # A delete commits its row, then removes the files: a download that read the row
        # before and opens the files after asked for a model that is gone (404), not one the
        # store lost (500, logged as an operator's alarm).
        session.rollback()
        crud.get_model(session, principal.tenant_id, model_id)
        raise artifacts.ArtifactError(f"model {model_id}: {exc}") from None
    return StreamingResponse(chunks, media_type=media_type, headers=headers)


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match field names ``etag`` (weakly compared, as a GET's is) or is
    ``*``."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


@router.post(
    "/{model_id}/predict",
    response_model=PredictResponse,
    summary="Score rows",
    responses=problem_responses(401, 404, 413, 415, 422),
)
async def predict(
    model_id: uuid.UUID,
    body: PredictRequest,
    request: Request,
    principal: PrincipalDep,
) -> PredictResponse:
    """Rows are checked (count, width, names, finite values) before scoring. Loaded models are
    cached per process, keyed by model id and weights digest."""
    # async, and no session of the request: a warm model is served without the database (its
    # row never changes); small requests are scored on the event loop, the others in one thread
    # call that holds no connection.
    state = request.app.state
    settings = state.settings  # not a dependency: each one costs every request a resolution
    ref = state.model_refs.get(principal.tenant_id, model_id)
    if ref is None:
        ref = await run_in_session(
            request,
            lambda session: _model_ref(crud.get_model(session, principal.tenant_id, model_id)),
        )
        state.model_refs.put(principal.tenant_id, ref)
    rows = body.instances if body.instances is not None else body.data
    loaded = state.model_cache.peek((ref.id, ref.sha256))
    if loaded is not None and rows is not None and len(rows) * loaded.n_features <= _INLINE_VALUES:
        return _score_loaded(state, settings, ref, loaded, body)
    try:
        return await run_in_threadpool(_score, state, settings, ref, body)
    except artifacts.ArtifactError:
        # A delete commits its row, then removes the files: a model whose row was read (or
        # cached) before and whose files were opened after is gone (404), not lost (500).
        state.model_refs.discard(principal.tenant_id, model_id)
        await run_in_session(
            request, lambda session: crud.get_model(session, principal.tenant_id, model_id)
        )
        raise


# A warm model scores this many values in tens of microseconds, less than the hop to a thread
# costs; such requests are scored on the event loop, larger ones (or a model to load) in a thread.
_INLINE_VALUES = 1024


def _model_ref(model: Model) -> ModelRef:
    return ModelRef(
        id=model.id, sha256=model.sha256, artifact_uri=model.artifact_uri, manifest=model.manifest
    )


def _score(state: Any, settings: Settings, ref: ModelRef, body: PredictRequest) -> PredictResponse:
    def load() -> inference.LoadedModel:
        state.metrics.model_loads.inc()
        uri = artifacts.resolve_artifact_uri(settings.artifacts_uri, ref.artifact_uri)
        return inference.load_model(uri, ref.sha256, recorded_manifest=ref.manifest)

    loaded = state.model_cache.get((ref.id, ref.sha256), load)
    return _score_loaded(state, settings, ref, loaded, body)


def _score_loaded(
    state: Any,
    settings: Settings,
    ref: ModelRef,
    loaded: inference.LoadedModel,
    body: PredictRequest,
) -> PredictResponse:
    matrix = inference.rows_to_matrix(
        loaded,
        instances=body.instances,
        columns=body.columns,
        data=body.data,
        max_rows=settings.max_predict_rows,
    )
    field = "instances" if body.instances is not None else "data"
    prediction = inference.predict(loaded, matrix, field=field)
    state.metrics.predictions.inc(len(prediction.margins))
    return PredictResponse(
        model_id=ref.id,
        margins=prediction.margins,
        labels=prediction.labels,
        classes=None if loaded.classes is None else list(loaded.classes),
        class_margins=prediction.class_margins,
        positive_label=loaded.positive_label if loaded.classes is None else None,
        out_of_range=_notice(prediction.out_of_range),
    )


def _notice(report: RangeReport | None) -> OutOfRangeNotice | None:
    if report is None:
        return None
    return OutOfRangeNotice(
        message=report.message(),
        columns=[
            OutOfRangeColumn(
                column=c.name,
                index=c.column,
                rows_outside=c.rows,
                training_min=c.min,
                training_max=c.max,
            )
            for c in report.columns
        ],
        n_columns=report.n_columns,
        n_rows=report.n_rows,
    )
