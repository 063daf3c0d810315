"""The security headers of every answer (service.api.middleware.SecurityHeadersMiddleware adds
them; the handler of an unexpected error's 500, which Starlette runs outside all middleware,
adds them itself)."""

from __future__ import annotations

# Every answer that is not a dashboard page (which sets a full policy of its own): no page may
# frame it (clickjacking of /docs, where a key is typed), and no browser may guess a type other
# than the one sent (a downloaded model or a JSON detail that echoes input, sniffed as HTML).
# Only frame-ancestors: a fuller policy (script-src, style-src ...) would block the inline
# script that starts Swagger UI on /docs and the inline style of /redoc. Caching is left to
# middleware.private_answer and the routes: answers to a key are already "private, no-cache",
# revalidated by ETag where they have one (no-store would end the model download's 304s).
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
