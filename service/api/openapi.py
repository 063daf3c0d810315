"""The OpenAPI document: stable operation ids and problem+json error bodies.

FastAPI files every ``responses=`` model under ``application/json``; errors are served as
``application/problem+json``, so the document is rewritten once to say so (generated clients
then parse error bodies correctly).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from service.api.problems import PROBLEM_MEDIA_TYPE


def operation_id(route: APIRoute) -> str:
    """``<tag>-<function name>``, e.g. ``jobs-submit_job``: stable across releases (no path or
    method in it), and clean method names in generated clients."""
    tag = route.tags[0] if route.tags else "default"
    return f"{tag}-{route.name}"


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
        for path_item in schema.get("paths", {}).values():
            for operation in path_item.values():
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
                    if status[0] in "45" and ref.endswith("/Problem"):
                        content[PROBLEM_MEDIA_TYPE] = content.pop("application/json")
        app.openapi_schema = schema
        return schema

    app.openapi = custom_openapi  # type: ignore[method-assign]
