"""/dashboard: the web pages, served by the API itself (no front-end server, no CDN).

The pages are a static shell plus vanilla JS and CSS from :mod:`service.dashboard`. They hold no
data: the browser calls the public ``/v1`` JSON API with the user's API key, exactly as any
client does, so the dashboard can show nothing the key could not read anyway. The routes are
left out of the OpenAPI document (they are not part of the API the generated clients cover).
"""

from __future__ import annotations

import html
from functools import lru_cache

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from core.errors import NotFoundError
from service.api.headers import SECURITY_HEADERS
from service.dashboard import STATIC_DIR, STATIC_FILES

router = APIRouter(prefix="/dashboard", include_in_schema=False)

# Every answer's headers, with a full policy in place of frame-ancestors alone: everything from
# this origin, nothing inline, no framing (the page handles an API key).
_SECURITY_HEADERS = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
}


@lru_cache(maxsize=1)
def _shell_template() -> str:
    return (STATIC_DIR / "index.html").read_text(encoding="utf-8")


def _shell(request: Request) -> HTMLResponse:
    # root_path: behind a gateway that mounts the service under a prefix, the assets and the
    # API calls must carry that prefix too.
    root = html.escape(request.scope.get("root_path", "").rstrip("/"), quote=True)
    body = _shell_template().replace("{{ROOT}}", root)
    headers = {**_SECURITY_HEADERS, "Cache-Control": "no-store"}
    return HTMLResponse(body, headers=headers)


@router.get("")
def dashboard_root(request: Request) -> Response:
    root = request.scope.get("root_path", "").rstrip("/")
    return RedirectResponse(f"{root}/dashboard/", status_code=307)


@router.get("/", response_class=HTMLResponse)
def job_list_page(request: Request) -> HTMLResponse:
    return _shell(request)


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(job_id: str, request: Request) -> HTMLResponse:
    # Any id, not only a UUID: the page says what is wrong with one (a shortened id was a raw
    # problem+json answer in the browser). The page holds no data; the API checks the id.
    return _shell(request)


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    # A fixed list, not a directory: no path from the URL ever reaches the file system.
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise NotFoundError("dashboard file", name)
    return FileResponse(
        STATIC_DIR / name,
        media_type=media_type,
        headers={**_SECURITY_HEADERS, "Cache-Control": "no-cache"},
    )
