"""One handler renders every domain error from the status, slug and title its class carries."""

from __future__ import annotations

import uuid
import warnings

import pytest
from fastapi import FastAPI

from core.artifacts import ArtifactError
from core.config import Settings
from core.errors import (
    ConflictError,
    FetchError,
    FieldError,
    IdempotencyKeyReusedError,
    InvalidInputError,
    NotFoundError,
    NotReadyError,
    PayloadTooLargeError,
    QuotaExceededError,
    ServiceError,
    StorageQuotaExceededError,
    UnsafeURLError,
    UnsupportedFormatError,
)
from service.api.problems import install_problem_handlers

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient  # noqa: E402

BASE = "https://metro.example/problems/"


def _client_raising(exc: Exception) -> TestClient:
    app = FastAPI()
    app.state.settings = Settings(problem_type_base=BASE)
    install_problem_handlers(app)

    @app.get("/boom")
    def boom() -> None:
        raise exc

    return TestClient(app, raise_server_exceptions=False)


# What each error answered before they carried their own status (one handler each, then).
ANSWERS = [
    (NotFoundError("job", "x"), 404, "not-found", "Not found", "job x not found"),
    (NotReadyError("later"), 409, "not-ready", "Not ready", "later"),
    (ConflictError("no"), 409, "conflict", "Conflict", "no"),
    (IdempotencyKeyReusedError("k"), 422, "idempotency-key-reused", "Idempotency-Key reused", "k"),
    (QuotaExceededError("q"), 429, "quota-exceeded", "Too many active jobs", "q"),
    (PayloadTooLargeError("big"), 413, "too-large", "Content too large", "big"),
    (StorageQuotaExceededError("s"), 413, "storage-quota-exceeded", "Storage quota exceeded", "s"),
    (UnsupportedFormatError("f"), 415, "unsupported-format", "Unsupported format", "f"),
    (UnsafeURLError("u"), 422, "unsafe-url", "URL refused", "u"),
    (FetchError("d"), 502, "fetch-failed", "Download failed", "d"),
    (
        ArtifactError("/secret/path/model.safetensors is gone"),
        500,
        "artifact-unavailable",
        "Model unavailable",
        "the model's stored files could not be used; the operators have been notified",
    ),
    (
        ServiceError("internal detail"),
        500,
        "internal",
        "Internal server error",
        "an unexpected error occurred",
    ),
]


@pytest.mark.parametrize(("exc", "status", "slug", "title", "detail"), ANSWERS)
def test_each_domain_error_renders_its_problem(exc, status, slug, title, detail):
    response = _client_raising(exc).get("/boom")
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json() == {
        "type": BASE + slug,
        "title": title,
        "status": status,
        "detail": detail,
        "instance": "/boom",
    }


def test_invalid_input_names_its_fields_and_its_own_title():
    exc = InvalidInputError("Invalid job", [FieldError(("body", "metric"), "unknown metric")])
    body = _client_raising(exc).get("/boom").json()
    assert (body["status"], body["title"], body["type"]) == (
        422,
        "Invalid job",
        BASE + "validation",
    )
    assert body["errors"] == [
        {"loc": ["body", "metric"], "msg": "unknown metric", "type": "value_error"}
    ]


def test_a_new_domain_error_needs_no_handler_of_its_own():
    class TeapotError(ServiceError):
        status = 418
        slug = "teapot"
        title = "I'm a teapot"
        public_detail = None

    response = _client_raising(TeapotError("short and stout")).get("/boom")
    assert response.status_code == 418
    assert response.json()["type"] == BASE + "teapot"
    assert response.json()["detail"] == "short and stout"


def test_one_title_per_problem_type_whoever_answers(client, tenant):
    """A 404 from the router said "Not Found", one from a lookup "Not found"."""
    routed = client.get("/v1/nothing-here", headers=tenant.headers).json()
    looked_up = client.get(f"/v1/jobs/{uuid.UUID(int=1)}", headers=tenant.headers).json()
    assert routed["type"] == looked_up["type"] and routed["title"] == looked_up["title"]
    assert looked_up["title"] == "Not found"
    assert client.delete("/v1/jobs", headers=tenant.headers).json()["title"] == "Method not allowed"
