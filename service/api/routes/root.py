"""``GET /``: where a person who opens the service's address lands.

A browser (it asks for ``text/html``) is sent to the dashboard; any other client gets a small
JSON index of where things are. Left out of the OpenAPI document, like the dashboard: it is a
signpost, not an operation of the API.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

router = APIRouter(include_in_schema=False)

# Relative to the service's root (and to the gateway prefix in front of it, if any).
_LINKS = {
    "dashboard": "/dashboard/",
    "docs": "/docs",
    "redoc": "/redoc",
    "openapi": "/openapi.json",
    "jobs": "/v1/jobs",
    "datasets": "/v1/datasets",
    "models": "/v1/models",
    "health": "/healthz",
    "readiness": "/readyz",
}


def _quality(accept: str, media_type: str) -> float:
    """The q-value ``accept`` gives ``media_type`` by an explicit entry (wildcards give none:
    ``*/*`` is what curl and HTTP libraries send, and they want data, not a page)."""
    best = 0.0
    for entry in accept.split(","):
        name, *params = (part.strip() for part in entry.split(";"))
        if name.lower() != media_type:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best = max(best, q)
    return best


def wants_html(accept: str) -> bool:
    """Whether a client asked for an HTML page at least as much as for JSON (browsers do)."""
    html = _quality(accept, "text/html")
    return html > 0 and html >= _quality(accept, "application/json")


@router.get("/")
def service_root(request: Request) -> Response:
    root = request.scope.get("root_path", "").rstrip("/")
    headers = {"Vary": "Accept"}
    if wants_html(request.headers.get("accept", "")):
        return RedirectResponse(f"{root}/dashboard/", status_code=307, headers=headers)
    app = request.app
    return JSONResponse(
        {
            "name": app.title,
            "version": app.version,
            "links": {name: root + path for name, path in _LINKS.items()},
        },
        headers=headers,
    )
