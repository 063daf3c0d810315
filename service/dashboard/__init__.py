"""The dashboard's static files: one HTML shell, its script and its style sheet.

Served by :mod:`service.api.routes.dashboard` under ``/dashboard``. No build step, no framework,
no chart library and nothing from a CDN: ``app.js`` draws the lambda trace as inline SVG and gets
every value from the public ``/v1`` API with the user's key.
"""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"

# The only files the dashboard serves, with their media types.
STATIC_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
