"""ASGI middleware: security headers on every answer, request header and body size limits,
anonymous requests refused unread, repeated wrong keys throttled, HEAD answered as GET without
its body, and Prometheus request metrics.

All are plain ASGI (not BaseHTTPMiddleware) so that streamed request and response bodies pass
through without being buffered.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from fastapi import HTTPException
from python_multipart.multipart import parse_options_header
from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.config import Settings
from core.db.errors import DATABASE_UNAVAILABLE
from core.errors import StorageQuotaExceededError, storage_quota_message
from service.api.deps import (
    KEY_NOT_VALID,
    KEY_REQUIRED,
    PRINCIPAL_STATE,
    bearer_key,
    get_principal,
    run_in_session,
)
from service.api.headers import SECURITY_HEADERS
from service.api.problems import database_unavailable, documented_methods, documented_template
from service.api.throttle import SLUG as THROTTLED_SLUG
from service.api.throttle import TITLE as THROTTLED_TITLE
from service.api.throttle import AuthFailureThrottle, client_address
from service.crud.datasets import stored_bytes
from service.crud.tenants import Principal
from service.observability import Metrics

logger = logging.getLogger(__name__)

# Multipart framing (boundaries, part headers, form fields) around an uploaded file.
_MULTIPART_OVERHEAD = 64 * 1024


def route_path(scope: Scope) -> str:
    """The path the router matches: ``path`` less ``root_path`` where it begins with it. Run
    under ``uvicorn --root-path /api`` every path is "/api/v1/...", which the router routes as
    "/v1/..." (Starlette strips the root path): read raw, the key check saw no API path and
    let a wrong key through uncounted to the route's own check, after the body was read."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :] or "/"
    return path


def _is_upload(scope: Scope) -> bool:
    """The request is an upload (POST /v1/datasets): its own body limit, and the tenant's
    storage quota checked before its body is read."""
    return scope["method"] == "POST" and route_path(scope).rstrip("/") == "/v1/datasets"


# What uvicorn's h11 parser may buffer of a request's head before it gives up with its own
# text/plain 400 (the app never sees that request), as a multiple of the app's limit: above it,
# so that the app, with a problem+json 400, is what refuses a header section between the two (h11
# checks its cap only while the head is incomplete, so a head that arrives in one read reaches
# the app whatever its size), and no further: uvicorn gives a head no deadline, so every
# connection trickling one in held up to this cap (1 MiB each, 300 of them 256 MB, without a key).
HEADER_CAP_FACTOR = 4


def parser_header_cap(settings: Settings) -> int:
    """``h11_max_incomplete_event_size`` for uvicorn: 4 times the app's limit, so that the
    parser's own refusal only ever meets a head far past it, and a head still arriving holds
    no more than that (64 KiB at the default limit)."""
    return HEADER_CAP_FACTOR * settings.max_request_header_bytes


def request_head_bytes(scope: Scope) -> int:
    """The size of the request line and header fields as sent (less any optional whitespace
    around the values, which the parser has dropped)."""
    target = len(scope.get("raw_path") or scope["path"].encode())
    if scope.get("query_string"):
        target += 1 + len(scope["query_string"])
    line = len(scope["method"]) + 1 + target + len(" HTTP/") + len(scope["http_version"]) + 2
    fields = sum(len(name) + 2 + len(value) + 2 for name, value in scope.get("headers", []))
    return line + fields + 2


class _BodyTooLargeError(Exception):
    pass


async def send_problem(
    send: Send,
    settings: Settings,
    scope: Scope,
    *,
    status: int,
    slug: str,
    title: str,
    detail: str,
    headers: list[tuple[bytes, bytes]] | None = None,
    echo_path: bool = True,
) -> None:
    """A problem+json response sent from middleware, shaped as ``service.api.problems`` shapes
    the app's own, for answers given before the app (and its handlers) runs. ``instance`` is
    the request path unless ``echo_path`` is false."""
    problem: dict[str, object] = {
        "type": settings.problem_type_base + slug,
        "title": title,
        "status": status,
        "detail": detail,
    }
    if echo_path:
        problem["instance"] = scope["path"]
    body = json.dumps(problem, separators=(",", ":")).encode()  # as JSONResponse writes it
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SecurityHeadersMiddleware:
    """Add :data:`service.api.headers.SECURITY_HEADERS` to every HTTP answer, the middleware's
    own 400s, 401s, 413s and 429s included, unless the answer already has its own value for
    one. Starlette answers an unhandled exception's 500 outside all middleware: that handler
    (service.api.problems) adds them itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)


class HeaderSizeLimitMiddleware:
    """Refuse a request whose request line and header fields pass ``max_request_header_bytes``
    with a 400 problem, before anything else looks at it (the connection is then closed: its
    body, if any, is not read). HTTP's own status for this, 431, is not used: uvicorn's parser
    answers a head past its hard cap with a 400, and one limit should have one status."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.settings.max_request_header_bytes
        if scope["type"] != "http" or request_head_bytes(scope) <= limit:
            await self.app(scope, receive, send)
            return
        await send_problem(
            send, self.settings, scope,
            status=400, slug="header-too-large", title="Request header too large",
            detail=f"the request line and header fields exceed the limit of {limit} bytes",
            headers=[(b"connection", b"close")],
            echo_path=len(scope["path"]) <= 2048,  # not a path that is itself the excess
        )  # fmt: skip


def _close_unread(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``Connection: close`` for an answer given before a request's body is read: the unread
    body ends the connection."""
    names = {k for k, _ in headers}
    if b"content-length" in names or b"transfer-encoding" in names:
        return [(b"connection", b"close")]
    return []


def private_answer(send: Send) -> Send:
    """``send`` for an answer to a tenant's key: one no shared cache may keep or give to another
    request (``Cache-Control: private``; ``Vary: Authorization`` for a cache that ignores that),
    and that the tenant's own cache revalidates each time (``no-cache``, by the ETag where the
    answer has one). A proxy keying its cache on the URL alone gave one tenant's model file or
    manifest to whoever asked next. A route's own Cache-Control stands."""

    async def with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            if "cache-control" not in headers:
                headers["Cache-Control"] = "private, no-cache"
            headers.add_vary_header("Authorization")
        await send(message)

    return with_headers


class RequireKeyMiddleware:
    """Answer 401 to a request to the API (``/v1/``) whose bearer key is missing or not valid,
    before anything reads its body: FastAPI reads and parses the body before it runs a route's
    dependencies, so any client, with a made-up key, could otherwise make the server take in a
    whole upload, or parse a 16 MB prediction request on the event loop, before its 401. The
    principal found is left in the request's state for the route's key check
    (:class:`service.api.deps.ApiKeyAuth`), which then does not look it up again."""

    def __init__(
        self, app: ASGIApp, settings: Settings, throttle: AuthFailureThrottle | None = None
    ) -> None:
        self.app = app
        self.settings = settings
        # Wrong keys counted per client address (service.api.throttle); None: not counted.
        self.throttle = throttle

    @staticmethod
    def _needs_key(scope: Scope) -> bool:
        """An API operation exists for this path and method (else the app's 404 or 405 stands)."""
        return scope["method"] in documented_methods(scope["app"], route_path(scope))

    async def _quota_spent(self, scope: Scope, principal: Principal) -> str | None:
        """Why an upload (POST /v1/datasets) of a tenant whose stored datasets already fill its
        quota is refused, before its body is read (FastAPI takes in the whole multipart body,
        spooled to disk, before the route runs: 33 MB were received for a 413); None for any
        other request. The route counts again, under the tenant's lock, with the upload's size."""
        quota = self.settings.max_storage_bytes_per_tenant
        if not quota or not _is_upload(scope):
            return None
        used = await run_in_session(
            HTTPConnection(scope), lambda session: stored_bytes(session, principal.tenant_id)
        )
        return storage_quota_message(used, quota, before_upload=True) if used >= quota else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not route_path(scope).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        # The first Authorization field, as the route's check (Starlette's headers) reads it.
        headers = scope.get("headers", [])
        given = next((v for k, v in headers if k == b"authorization"), b"").decode("latin-1")
        key = bearer_key(given)
        if key is None and not self._needs_key(scope):
            await self.app(scope, receive, send)  # the app's 404 or 405
            return
        detail = KEY_REQUIRED
        address = client_address(scope)
        if key is not None and self.throttle is not None:
            wait = self.throttle.retry_after(address)
            if wait is not None:  # the key is not looked up: guessing learns nothing more
                await send_problem(
                    send, self.settings, scope,
                    status=429, slug=THROTTLED_SLUG, title=THROTTLED_TITLE,
                    detail=f"too many requests with an API key that is not valid came from this "
                    f"address; try again in {wait} s",
                    headers=[(b"retry-after", str(wait).encode()), *_close_unread(headers)],
                )  # fmt: skip
                return
        if key is not None:
            try:
                principal = await get_principal.principal_for(HTTPConnection(scope), key)
                spent = None if principal is None else await self._quota_spent(scope, principal)
            except DATABASE_UNAVAILABLE as exc:  # before the app's handlers: answered here
                said = database_unavailable(scope["method"], scope["path"], exc)
                retry_after = str(self.settings.database_retry_after_seconds).encode()
                await send_problem(
                    send, self.settings, scope,
                    status=503, slug="unavailable", title="Service unavailable", detail=said,
                    headers=[(b"retry-after", retry_after), *_close_unread(headers)],
                )  # fmt: skip
                return
            if spent is not None:
                await send_problem(
                    send, self.settings, scope,
                    status=413, slug=StorageQuotaExceededError.slug,
                    title=StorageQuotaExceededError.title, detail=spent,
                    headers=_close_unread(headers),
                )  # fmt: skip
                return
            if principal is not None:
                scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
                await self.app(scope, receive, private_answer(send))
                return
            # Counted on every path: a wrong key's 404 or 405 lacks the private headers a right
            # key's has, so uncounted, a path with no operation was an unlimited oracle.
            if self.throttle is not None and self.throttle.failed(address, key):
                logger.warning(
                    "%d API keys that are not valid from %s within %g s: its requests with a "
                    "key are refused until that window ends",
                    self.throttle.limit, address or "an unknown address",
                    self.throttle.window_seconds,
                )  # fmt: skip
            if not self._needs_key(scope):  # no such operation: its 404 or 405 as for anyone
                await self.app(scope, receive, send)
                return
            detail = KEY_NOT_VALID
        challenge = [(b"www-authenticate", b"Bearer"), *_close_unread(headers)]
        await send_problem(
            send, self.settings, scope,
            status=401, slug="unauthorized", title="Unauthorized", detail=detail,
            headers=challenge,
        )  # fmt: skip


class BodySizeLimitMiddleware:
    """Refuse bodies over the limit with 413, before they are read when Content-Length says so,
    else as soon as the streamed bytes pass it (chunked uploads have no Content-Length)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    def _limit(self, scope: Scope) -> int:
        if _is_upload(scope):
            return self.settings.max_upload_bytes + _MULTIPART_OVERHEAD
        return self.settings.max_request_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await self._reject(scope, send, limit)
                    return
        received = 0
        started = False
        exceeded = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise _BodyTooLargeError
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                # The app may have turned our exception into its own error response (FastAPI
                # answers a failed body read with 400); answer 413 instead, once.
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await self._reject(scope, send, limit)
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except _BodyTooLargeError:
            if not started:
                await self._reject(scope, send, limit)

    async def _reject(self, scope: Scope, send: Send, limit: int) -> None:
        await send_problem(
            send, self.settings, scope,
            status=413, slug="too-large", title="Content too large",
            detail=f"the request body exceeds the limit of {limit} bytes",
            headers=[(b"connection", b"close")],
        )  # fmt: skip


class MultipartEndMiddleware:
    """Refuse, with a 400, a multipart body that ends before its closing delimiter: the form
    parser ends quietly at whatever part it had finished, so a body cut inside its
    ``label_column`` part was stored, 201, without the label check the client asked for."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        boundary = _multipart_boundary(scope) if scope["type"] == "http" else None
        if boundary is None:
            await self.app(scope, receive, send)
            return
        # RFC 2046: the close delimiter is CRLF "--" boundary "--", which the boundary keeps out
        # of every part's content; only the bytes around each chunk's start can hold it split.
        close = b"\r\n--" + boundary + b"--"
        tail = b""
        closed = False

        async def checked_receive() -> Message:
            nonlocal tail, closed
            message = await receive()
            if message["type"] == "http.request" and not closed:
                seen = tail + message.get("body", b"")
                closed = close in seen
                tail = seen[-(len(close) - 1) :]
                if not closed and not message.get("more_body", False):
                    # Raised through the form parser; FastAPI passes an HTTPException on.
                    raise HTTPException(
                        400,
                        "the multipart body ended before its closing boundary: the request "
                        "was cut short; send it again",
                    )
            return message

        await self.app(scope, checked_receive, send)


def _multipart_boundary(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            kind, options = parse_options_header(value)
            if kind == b"multipart/form-data" and options.get(b"boundary"):
                return bytes(options[b"boundary"])
    return None


class HeadAsGetMiddleware:
    """HEAD answered as GET is, headers and all, without the body (RFC 9110 9.3.2: every
    general-purpose server supports it). FastAPI's routes serve only the methods they declare,
    so a HEAD was a 405 whose ``Allow`` listed HEAD."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        # request.state.head tells a route that streams a file that no byte of it is wanted
        # (a model's download then neither hashes nor reads it).
        state = {**scope.get("state", {}), "head": True}
        await self.app({**scope, "method": "GET", "state": state}, receive, headers_only)


class MetricsMiddleware:
    """Count requests and time them, labelled by route *template* (``/v1/jobs/{job_id}``), never
    the raw path, so ids do not explode the number of series."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {"code": 500}
        start = time.perf_counter()

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            route: Any = scope.get("route")
            template = getattr(route, "path", None)
            if template is None and "app" in scope:  # answered before routing: a 401, say
                template = documented_template(scope["app"], scope.get("path", ""))
            template = template or "<unmatched>"
            self.metrics.observe_request(
                scope["method"], template, status["code"], time.perf_counter() - start
            )
