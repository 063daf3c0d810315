"""The OpenAPI document: stable operation ids and problem+json error bodies.

FastAPI files every ``responses=`` model under ``application/json``; errors are served as
``application/problem+json``, so the document is rewritten once to say so (generated clients
then parse error bodies correctly). Every operation also gets the 400 that the middleware and
the framework give before any route runs (a header section over the limit; a body that cannot
be parsed), a 500, and on the API's routes the 503 a database outage gives and the 429 of a
client address throttled after too many wrong keys. File fields also
get ``format: binary`` beside 3.1's ``contentMediaType``, for generators that only know the
former. The committed client in ``clients/python`` is generated
from this document (``clients/generate.py``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from service.api.problems import PROBLEM_MEDIA_TYPE


def operation_id(route: APIRoute) -> str:
    """The route function's name, e.g. ``submit_job`` or ``get_job_result``: stable across
    releases (no path or method in it), and the method name a generated client gets as it is
    (``metro_client.api.jobs.submit_job``; the tag already groups the operations). The names are
    unique across the API: :func:`install_openapi` refuses a document where two collide."""
    return route.name


def _mark_binary_fields(schema: dict[str, Any]) -> None:
    """Add ``format: binary`` beside OpenAPI 3.1's ``contentMediaType`` on file fields (the
    upload's ``file``). Both say "a file"; generators that only know the 3.0 spelling
    (openapi-python-client among them) would otherwise type the field as a ``str``."""
    for component in schema.get("components", {}).get("schemas", {}).values():
        for prop in component.get("properties", {}).values():
            if prop.get("type") == "string" and "contentMediaType" in prop:
                prop.setdefault("format", "binary")


_HEAD_TOO_LARGE = "the request line and header fields are over the server's limit"
_BODY_UNPARSABLE = (
    "the body cannot be decoded: JSON that is not UTF-8, or broken multipart framing "
    "(UTF-8 text that is not JSON is a 422 of type json_invalid, as are well-formed bodies "
    "with invalid values)"
)


def _add_bad_request(operation: dict[str, Any]) -> None:
    """Declare the 400s no route raises itself: the header size limit answers one to any
    request (``service.api.middleware.HeaderSizeLimitMiddleware``), and FastAPI one to a body
    it cannot decode, before validation (so not a 422)."""
    responses = operation.setdefault("responses", {})
    if "400" in responses:
        return
    causes = [_HEAD_TOO_LARGE]
    if "requestBody" in operation:
        causes.append(_BODY_UNPARSABLE)
    bad_request = {
        "description": "Bad Request: " + "; or ".join(causes),
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }
    # In status order among the errors, after the successes.
    items = list(responses.items())
    at = next((i for i, (status, _) in enumerate(items) if status[0] in "45"), len(items))
    items.insert(at, ("400", bad_request))
    operation["responses"] = dict(items)


_UNAVAILABLE = (
    "Service Unavailable: the database is down, restarting or out of connections for the "
    "moment; the request was fine, retry after the Retry-After seconds"
)
_QUOTA = "the tenant already has as many queued, running or cancelling jobs as it may"
_INTERNAL = "Internal Server Error: an unexpected error, logged on the server"


def _add_server_errors(operation: dict[str, Any], path: str) -> None:
    """Declare the 5xx any route can answer (``service.api.problems``): a 500 for an unexpected
    error, and for the API's routes, which all read the database, a 503 with ``Retry-After``
    while it is unavailable. A route that declares its own 503 (readiness) keeps it."""
    responses = operation.setdefault("responses", {})
    problem_body = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    responses.setdefault("500", {"description": _INTERNAL, "content": problem_body})
    if path.startswith("/v1/") and "503" not in responses:
        responses["503"] = {
            "description": _UNAVAILABLE,
            "headers": {
                "Retry-After": {
                    "description": "Seconds to wait before retrying",
                    "schema": {"type": "integer"},
                }
            },
            "content": problem_body,
        }


_THROTTLED = (
    "Too Many Requests: too many API keys that are not valid came from this client address "
    "(METRO_AUTH_FAILURE_LIMIT within METRO_AUTH_FAILURE_WINDOW_SECONDS); requests with a key "
    "are refused, unchecked, for the Retry-After seconds"
)


def _add_throttled(operation: dict[str, Any], path: str) -> None:
    """Declare the 429 that the key check answers any API operation taking a key
    (``service.api.middleware.RequireKeyMiddleware``) while its client address is throttled;
    beside a route's own 429 (a tenant's job quota) when it has one."""
    responses = operation.get("responses", {})
    if not path.startswith("/v1/") or "401" not in responses:
        return
    problem_body = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    throttled = {
        "description": _THROTTLED,
        "headers": {
            "Retry-After": {
                "description": "Seconds until requests with a key are checked again",
                "schema": {"type": "integer"},
            }
        },
        "content": problem_body,
    }
    own = responses.get("429")
    if own is not None:
        throttled["description"] = f"{own['description']}: {_QUOTA}; or {_THROTTLED}"
        throttled["content"] = own.get("content", problem_body)
    # In status order among the errors.
    items = [(status, body) for status, body in responses.items() if status != "429"]
    at = next((i for i, (status, _) in enumerate(items) if status[0] in "45" and status > "429"),
              len(items))  # fmt: skip
    items.insert(at, ("429", throttled))
    operation["responses"] = dict(items)


def _add_null_defaults(schema: dict[str, Any]) -> None:
    """``"default": null`` on each optional, nullable property: FastAPI writes the document
    with ``exclude_none``, which drops a default of None with the Nones it should drop, so the
    client and the CLI could not say that lambda_min's default is null (the metric's own bound).
    A property that is not required has a default; absent from the document, it was None."""
    for component in schema.get("components", {}).get("schemas", {}).values():
        required = set(component.get("required", ()))
        for name, prop in component.get("properties", {}).items():
            nullable = any(m.get("type") == "null" for m in prop.get("anyOf", ()))
            if nullable and name not in required and "default" not in prop:
                prop["default"] = None


def _add_prediction_limit(schema: dict[str, Any], max_rows: int) -> None:
    """The fewest and the most rows a prediction takes (one; ``METRO_MAX_PREDICT_ROWS``: a 422
    past either), said by the schema of each form's rows: a setting, so the served document
    says this deployment's."""
    fields = schema.get("components", {}).get("schemas", {}).get("PredictRequest", {})
    for name in ("instances", "data"):
        for member in fields.get("properties", {}).get(name, {}).get("anyOf", []):
            if member.get("type") == "array":
                member.update(minItems=1, maxItems=max_rows)


def install_openapi(app: FastAPI) -> None:
    def custom_openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
            tags=app.openapi_tags,
        )
        seen: dict[str, str] = {}
        for path, path_item in schema.get("paths", {}).items():
            for method, operation in path_item.items():
                where = f"{method.upper()} {path}"
                if operation["operationId"] in seen:
                    raise RuntimeError(
                        f"operationId {operation['operationId']!r} of {where} is already used "
                        f"by {seen[operation['operationId']]}: rename one route function"
                    )
                seen[operation["operationId"]] = where
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
                    if status[0] in "45" and ref.endswith("/Problem"):
                        content[PROBLEM_MEDIA_TYPE] = content.pop("application/json")
                _add_bad_request(operation)
                _add_server_errors(operation, path)
                _add_throttled(operation, path)
        _mark_binary_fields(schema)
        _add_null_defaults(schema)
        _add_prediction_limit(schema, app.state.settings.max_predict_rows)
        app.openapi_schema = schema
        return schema

    app.openapi = custom_openapi  # type: ignore[method-assign]
