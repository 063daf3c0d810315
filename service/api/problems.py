"""RFC 9457 problem details: the one error format of the API.

Every error response is ``application/problem+json`` with ``type``, ``title``, ``status`` and a
``detail`` written for the client; validation errors add ``errors: [{loc, msg, type}]``. Domain
exceptions from the lower layers carry their own status, slug and title, and one handler renders
them all; anything unexpected becomes a bare 500: the exception is logged server-side, and
neither its text, a traceback nor a path reaches the client.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from core.db.errors import DATABASE_UNAVAILABLE, is_disk_full, is_lock_conflict
from core.errors import InvalidInputError, ServiceError, no_room
from service.api.headers import SECURITY_HEADERS
from service.schemas.common import UNION_TAGS

logger = logging.getLogger("service.api")

PROBLEM_MEDIA_TYPE = "application/problem+json"

# Titles of request-schema errors, by route name, so a bad job says "Invalid job" whether the
# library or the schema caught it.
_VALIDATION_TITLES = {
    "submit_job": "Invalid job",
    "upload_dataset": "Invalid dataset",
    "predict": "Invalid prediction request",
}


class ProblemFieldError(BaseModel):
    loc: list[str | int] = Field(description='Where the error is, e.g. ["body", "metric"]')
    msg: str
    type: str


class Problem(BaseModel):
    type: str = Field(description="A URI identifying the kind of problem")
    title: str
    status: int
    detail: str | None = None
    instance: str | None = Field(default=None, description="The request path")
    errors: list[ProblemFieldError] | None = None


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry of a route declaring its problem statuses; the OpenAPI
    post-processing in :mod:`service.api.openapi` files them under application/problem+json."""
    return {
        status: {"model": Problem, "description": HTTPStatus(status).phrase} for status in statuses
    }


# What of a message or a field's name an error answer shows: messages quote what was sent (an
# unknown metric's name, an unknown key), and a 16 MiB body of one name came back three times.
_MAX_SHOWN_TEXT = 2000
_MAX_SHOWN_STEP = 200


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


# Errors one answer lists: 100,000 bad cells of a prediction came back as a 9.5 MB answer.
_MAX_SHOWN_ERRORS = 50


def _capped_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shown = [_capped_error(e) for e in errors[:_MAX_SHOWN_ERRORS]]
    if len(errors) > _MAX_SHOWN_ERRORS:
        more = len(errors) - _MAX_SHOWN_ERRORS
        shown.append(
            {
                "loc": ["body"],
                "msg": f"and {more:,} more errors not listed",
                "type": "too_many_errors",
            }
        )
    return shown


def _capped_error(error: dict[str, Any]) -> dict[str, Any]:
    loc = [
        _capped(step, _MAX_SHOWN_STEP) if isinstance(step, str) else step for step in error["loc"]
    ]
    return {**error, "loc": loc, "msg": _capped(error["msg"], _MAX_SHOWN_TEXT)}


def problem(
    request: Request,
    status: int,
    slug: str,
    title: str,
    detail: str | None = None,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    base = request.app.state.settings.problem_type_base
    body = Problem(
        type=base + slug,
        title=title,
        status=status,
        detail=_capped(detail, _MAX_SHOWN_TEXT) if detail is not None else None,
        instance=request.url.path,
        errors=[ProblemFieldError(**e) for e in _capped_errors(errors)]
        if errors is not None
        else None,
    )
    return JSONResponse(
        body.model_dump(exclude_none=True),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def _route_name(request: Request) -> str | None:
    route = request.scope.get("route")
    return getattr(route, "name", None)


def _documented_routes(app: Any) -> list[tuple[Any, set[str], str]]:
    """(the path's regex, its methods, its template) for every path of the OpenAPI document,
    compiled once per app: the middleware asks on every request."""
    routes = getattr(app.state, "documented_routes", None)
    if routes is None:
        routes = app.state.documented_routes = [
            (
                compile_path(template)[0],
                {name.upper() for name in ops if name != "parameters"},
                template,
            )
            for template, ops in app.openapi().get("paths", {}).items()
        ]
    return routes


def documented_template(app: Any, path: str) -> str | None:
    """The route template (``/v1/jobs/{job_id}``) of a path the document declares, or None: for
    a request answered before routing (a 401), which has no route of its own."""
    for regex, _, template in _documented_routes(app):
        if regex.match(path):
            return str(template)
    return None


def documented_methods(app: Any, path: str) -> set[str]:
    """The methods the OpenAPI document declares for ``path`` (a concrete path, ids filled in).

    Read from the document rather than the router, whose included routers are private
    structures of FastAPI; every API route is in it (only the dashboard's pages are not).
    """
    methods: set[str] = set()
    for regex, declared, _ in _documented_routes(app):
        if regex.match(path):
            methods |= declared
    if "GET" in methods:
        methods.add("HEAD")
    return methods


# The steps pydantic adds to an error's location for each member of a plain union (search.cv:
# an integer or "auto"): ["body", "search", "cv", "constrained-int"], [..., "literal['auto']"].
_MEMBER_STEP = re.compile(r"^(constrained-)?(int|float|str|bool|bytes)$|^(literal|list|tuple)\[")
_MEMBER_NOUN = {"int": "an integer", "float": "a number", "str": "a string", "bool": "a boolean"}


def _merged_union_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One error per field of a plain union, at the field's own location, saying every form the
    field takes ("Input should be an integer greater than or equal to 2, or 'auto'"), in place
    of one error per member under pydantic's member names."""
    out: list[dict[str, Any]] = []
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for error in errors:
        loc, last = error["loc"][:-1], error["loc"][-1] if error["loc"] else None
        if not (isinstance(last, str) and _MEMBER_STEP.match(last)):
            out.append(error)
            continue
        what = error["msg"].removeprefix("Input should be ")
        if what.startswith("String should have "):  # a string member's length bound
            what = "a string of " + what.removeprefix("String should have ")
        kind = last.removeprefix("constrained-")
        noun = _MEMBER_NOUN.get(kind)
        if noun and not what.startswith(("a ", "an ")):
            what = f"{noun} {what}"
        key = tuple(loc)
        if key in merged:
            merged[key]["msg"] += f", or {what}"
        else:
            merged[key] = {"loc": list(loc), "msg": f"Input should be {what}", "type": "union"}
            out.append(merged[key])
    return out


# What Starlette reads as a form's text field where an upload was expected: a part sent without
# a file name (the generated client's File with no file_name, or curl -F 'file=<data.csv').
_NOT_A_FILE = re.compile(r"Expected UploadFile, received: ")


def _file_part_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pydantic's "Expected UploadFile, received: <class 'str'>" for a part sent
    without a file name, said so."""
    return [
        {**e, "msg": "expected a file: send the data as a multipart file part with a file name "
         "(curl -F file=@data.csv; the Python client: File(payload=..., file_name='data.csv')); "
         "a part without one is read as text"}
        if _NOT_A_FILE.search(e["msg"]) else e
        for e in errors
    ]  # fmt: skip


def _not_sent_as_json(request: Request, errors: list[dict[str, Any]]) -> str | None:
    """Why a JSON body was not read, when its Content-Type said something else: FastAPI then
    validates the raw bytes, and `curl -d '{...}'` (form-urlencoded) was told "Input should be a
    valid dictionary or object to extract fields from", at ``body``."""
    body_is_not_an_object = any(
        e["loc"] == ["body"] and e["type"] in ("model_attributes_type", "dict_type") for e in errors
    )
    if not body_is_not_an_object:
        return None
    sent = request.headers.get("content-type", "")
    media = sent.split(";", 1)[0].strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return None
    said = f"Content-Type {media}" if media else "no Content-Type"
    return f"the body must be JSON, sent with Content-Type: application/json (it came with {said})"


def database_unavailable(method: str, path: str, exc: Exception) -> str:
    """Log a request the database could not serve and say why, for its 503: the database is
    down, restarting, or every connection is busy past the pool's timeout, or it aborted the
    request for a concurrent one. The request was fine and may succeed shortly (not a 500)."""
    logger.warning("database unavailable on %s %s: %s", method, path, type(exc).__name__)
    if is_lock_conflict(exc):
        return (
            "the database aborted this request for a concurrent one (a conflict of locks); retry it"
        )
    if is_disk_full(exc):  # it said "unavailable" while readiness said the database was fine
        return "the database has no room left to write (its disk is full); retry once it has"
    return "the database is unavailable for the moment; retry later"


def _json_python_cannot_read(exc: StarletteHTTPException) -> str | None:
    """What FastAPI's "There was an error parsing the body" (a 400, said of the bytes) hides,
    where the body is well-formed JSON that Python's reader refuses: a number of more than 4,300
    digits, or arrays nested past its recursion limit. None for anything else (bytes that are
    no Unicode text stay a 400)."""
    cause = exc.__cause__
    if exc.status_code != 400 or cause is None:
        return None
    if isinstance(cause, RecursionError):
        return "the JSON body is nested too deeply to read (at most about 1,000 levels)"
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return "the JSON body holds a number of more than 4,300 digits"
    return None


# How many of a request's field errors its detail names (all of them are in ``errors``).
_SUMMARIZED = 3


def _where(loc: list[Any] | tuple[Any, ...]) -> str:
    """A field's place as a user writes it, as the ``metro`` command shows it:
    ``search.n_lambdas`` for a body's field, ``limit`` for a query parameter (only the first
    step says where it was sent: a field the user named ``path`` keeps its name)."""
    steps = [str(step) for step in loc]
    if steps and steps[0] in ("body", "query", "path"):
        steps = steps[1:]
    return ".".join(steps) or "request"


def _said(error: dict[str, Any]) -> str:
    """One field error in a detail: where, then what. A body that is not JSON has no field; its
    location's last step is the character where reading stopped."""
    if error.get("type") == "json_invalid":
        at = error["loc"][-1] if len(error["loc"]) > 1 else None
        return "the body is not valid JSON" + (f" (at character {at})" if at is not None else "")
    return f"{_where(error['loc'])}: {error['msg']}"


def _summary(errors: list[dict[str, Any]]) -> str:
    """A 422's detail: its first field errors, each with where it is (``search.n_lambdas:
    Input should be ...``). It said "the request is not valid" whatever was wrong, so a client
    that shows the detail (the client README's example does) showed nothing to fix."""
    if not errors:
        return "the request is not valid"
    said = "; ".join(dict.fromkeys(_said(e) for e in errors[:_SUMMARIZED]))
    more = len(errors) - _SUMMARIZED
    return f"{said} (and {more} more)" if more > 0 else said


def _named_cells(errors: list[dict[str, Any]], body: Any) -> list[dict[str, Any]]:
    """A prediction's cell that is not a number, by its column's name where the body gave the
    columns (``data.1.0: Input should be a valid number, column 'amount'``): its place alone
    sent the user counting columns, where the CLI names the column."""
    columns = body.get("columns") if isinstance(body, dict) else None
    if not isinstance(columns, list):
        return errors
    out = []
    for error in errors:
        loc = error["loc"]
        if (
            len(loc) == 4 and loc[:2] == ["body", "data"]
            and isinstance(loc[3], int) and 0 <= loc[3] < len(columns)
            and isinstance(columns[loc[3]], str)
        ):  # fmt: skip
            error = {**error, "msg": f"{error['msg']}, column {_capped(columns[loc[3]], 80)!r}"}
        out.append(error)
    return out


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _request_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Only loc/msg/type: pydantic's "input" and "ctx" would echo the request back.
        errors = _file_part_errors(
            _merged_union_errors(
                [
                    {
                        "loc": [step for step in e.get("loc", ()) if step not in UNION_TAGS],
                        # pydantic prefixes a validator's own message with its error type
                        # ("Value error, give 'instances', or ..."): the message is ours.
                        "msg": str(e.get("msg", "")).removeprefix("Value error, "),
                        "type": str(e.get("type", "")),
                    }
                    for e in exc.errors()
                ]
            )
        )
        errors = _named_cells(errors, getattr(exc, "body", None))
        unsupported = _not_sent_as_json(request, errors)
        if unsupported is not None:
            return problem(
                request, 415, "unsupported-media-type", "Unsupported media type", unsupported
            )
        title = _VALIDATION_TITLES.get(_route_name(request) or "", "Invalid request")
        return problem(request, 422, "validation", title, _summary(errors), errors=errors)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        # Every domain error says its own status, slug and title (core.errors).
        if exc.public_detail is not None:  # a server-side fault: logged, its text kept here
            logger.error("%s on %s: %s", type(exc).__name__, request.url.path, exc)
            return problem(request, exc.status, exc.slug, exc.title, exc.public_detail)
        if isinstance(exc, InvalidInputError) and exc.errors:
            # Found past the schema (the library's checks, the upload's): said as the schema's
            # are, each where it is.
            errors = [{"loc": list(e.loc), "msg": e.msg, "type": e.type} for e in exc.errors]
            return problem(
                request, exc.status, exc.slug, exc.title, _summary(errors), errors=errors
            )
        return problem(request, exc.status, exc.slug, exc.title, str(exc))

    async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
        said = database_unavailable(request.method, request.url.path, exc)
        retry_after = request.app.state.settings.database_retry_after_seconds
        return problem(
            request, 503, "unavailable", "Service unavailable", said,
            headers={"Retry-After": str(retry_after)},
        )  # fmt: skip

    for unavailable in DATABASE_UNAVAILABLE:
        app.add_exception_handler(unavailable, _database_unavailable)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        full = no_room(exc.__cause__, "this request's body") if exc.status_code == 400 else None
        if full is not None:
            # The body spooled to a full temporary directory (TMPDIR) as it was read: FastAPI's
            # 400 "error parsing the body" blamed the client, and nothing was logged.
            logger.warning("no room to read the body of %s %s", request.method, request.url.path)
            return problem(request, full.status, full.slug, full.title, str(full))
        unreadable = _json_python_cannot_read(exc)
        if unreadable is not None:  # well-formed JSON: a 422 naming what, as other bad JSON
            title = _VALIDATION_TITLES.get(_route_name(request) or "", "Invalid request")
            errors = [{"loc": ["body"], "msg": unreadable, "type": "json_invalid"}]
            return problem(request, 422, "validation", title, unreadable, errors=errors)
        phrase = HTTPStatus(exc.status_code).phrase
        # One title per type, in the domain errors' case: a 404 from the router said "Not Found"
        # and one from a lookup "Not found".
        title = phrase[:1] + phrase[1:].lower()
        detail = exc.detail if isinstance(exc.detail, str) and exc.detail != phrase else None
        slug = phrase.lower().replace(" ", "-").replace("'", "")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names only the methods of the first route whose path matched, and GET
            # and POST of one path are two routes here.
            # Outside the document (the dashboard's pages, the docs) a path serves GET and HEAD.
            methods = documented_methods(request.app, request.url.path) or {"GET", "HEAD"}
            headers["Allow"] = ", ".join(sorted(methods))
        return problem(request, exc.status_code, slug, title, detail, headers=headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        # Answered outside the middleware, so without SecurityHeadersMiddleware's headers.
        return problem(
            request, 500, "internal", "Internal server error", "an unexpected error occurred",
            headers=dict(SECURITY_HEADERS),
        )  # fmt: skip
