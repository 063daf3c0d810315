"""The OpenAPI document, and the problem+json contract of errors."""

from __future__ import annotations

import uuid

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from service.main import create_app


def test_openapi_document_is_valid(client):
    r = client.get("/openapi.json")
    assert r.status_code == 200
    validate(r.json())


def test_operation_ids_are_stable_and_unique(client):
    spec = client.get("/openapi.json").json()
    ids = [op["operationId"] for item in spec["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    assert {
        "submit_job",
        "list_jobs",
        "get_job",
        "cancel_job",
        "get_job_trace",
        "get_job_result",
        "upload_dataset",
        "list_datasets",
        "get_dataset",
        "list_models",
        "get_model",
        "download_model",
        "predict",
        "healthz",
        "readyz",
        "metrics",
    } <= set(ids)


def test_errors_are_declared_as_problem_json(client):
    spec = client.get("/openapi.json").json()
    for path, item in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, op in item.items():
            responses = op["responses"]
            assert "401" in responses and "422" in responses, (method, path)
            for status, response in responses.items():
                if status[0] in "45":
                    assert list(response["content"]) == ["application/problem+json"], (path, status)
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, item in spec["paths"].items():
        for op in item.values():
            assert bool(op.get("security")) == path.startswith("/v1/"), path
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_unknown_route_and_method_are_problem_json(client):
    r = client.get("/v1/nothing-here")
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")
    r = client.delete("/v1/jobs")
    assert r.status_code == 405 and r.json()["status"] == 405


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize(
    "accept", [BROWSER_ACCEPT, "text/html", "application/json;q=0.5, text/html"]
)
def test_root_sends_a_browser_to_the_dashboard(client, accept):
    r = client.get("/", headers={"Accept": accept}, follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "/dashboard/"
    assert r.headers["vary"] == "Accept"


@pytest.mark.parametrize(
    "accept", [None, "*/*", "application/json", "application/json, text/html;q=0.5"]
)
def test_root_gives_an_api_client_an_index_of_links(client, accept):
    headers = {"Accept": accept} if accept else {}
    r = client.get("/", headers=headers, follow_redirects=False)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    links = r.json()["links"]
    assert links["dashboard"] == "/dashboard/" and links["jobs"] == "/v1/jobs"
    assert links["docs"] == "/docs" and links["openapi"] == "/openapi.json"
    for path in links.values():  # each one leads somewhere (the /v1 ones want a key)
        assert client.get(path).status_code in (200, 401), path
    assert "/" not in client.get("/openapi.json").json()["paths"]  # not an API operation


def test_root_links_carry_the_gateway_prefix(app):
    with TestClient(app, root_path="/metro") as prefixed:
        r = prefixed.get("/", headers={"Accept": BROWSER_ACCEPT}, follow_redirects=False)
        assert r.headers["location"] == "/metro/dashboard/"
        assert prefixed.get("/").json()["links"]["docs"] == "/metro/docs"


def test_request_body_limit(client, tenant, settings):
    big = b'{"metric": {"preset": "f1"}, "pad": "' + b"x" * settings.max_request_body_bytes + b'"}'
    r = client.post(
        "/v1/jobs", content=big, headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 413
    assert r.headers["content-type"].startswith("application/problem+json")

    def chunks():  # no Content-Length: the streamed bytes are counted instead
        yield b'{"pad": "'
        for _ in range(settings.max_request_body_bytes // 65536 + 2):
            yield b"x" * 65536
        yield b'"}'

    r = client.post(
        "/v1/jobs", content=chunks(), headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 413


def test_malformed_json_is_422_problem(client, tenant):
    r = client.post(
        "/v1/jobs",
        content=b"{not json",
        headers={**tenant.headers, "Content-Type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["type"].endswith("/validation")


def test_unexpected_errors_leak_nothing(settings):
    app = create_app(settings)
    boom = APIRouter()

    @boom.get("/boom")
    def explode() -> None:
        raise RuntimeError(f"secret at {__file__} password=hunter2")

    app.include_router(boom)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/boom")
    assert r.status_code == 500
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.text
    for leak in ("Traceback", "hunter2", "RuntimeError", __file__, "/work", ".py"):
        assert leak not in body
    assert r.json() == {
        "type": settings.problem_type_base + "internal",
        "title": "Internal Server Error",
        "status": 500,
        "detail": "an unexpected error occurred",
        "instance": "/boom",
    }


@pytest.mark.parametrize("path", ["/v1/jobs/{id}", "/v1/models/{id}", "/v1/datasets/{id}"])
def test_problem_bodies_have_the_rfc9457_members(client, tenant, path):
    r = client.get(path.format(id=uuid.uuid4()), headers=tenant.headers)
    body = r.json()
    assert set(body) >= {"type", "title", "status", "detail", "instance"}
    assert body["status"] == r.status_code == 404


def test_405_allow_lists_every_method_of_the_path(client, tenant):
    r = client.delete("/v1/datasets", headers=tenant.headers)
    assert r.status_code == 405
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "POST"}
    r = client.put("/v1/jobs", headers=tenant.headers)
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "POST"}


def test_a_request_without_a_key_is_refused_before_its_body_is_read(app):
    """FastAPI reads and parses a body before the key check runs; without a key, not a byte of
    it should be taken in."""
    import asyncio

    received: list[dict] = []
    sent: list[dict] = []

    async def receive() -> dict:
        message = {"type": "http.request", "body": b"x" * 65536, "more_body": True}
        received.append(message)
        return message

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/datasets", "raw_path": b"/v1/datasets", "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": [(b"content-type", b"multipart/form-data; boundary=x"),
                    (b"content-length", b"1000000")],
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = dict(start["headers"])
    assert start["status"] == 401
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"www-authenticate"] == b"Bearer"
    assert headers[b"connection"] == b"close"
    assert received == []


def test_a_non_utf8_json_body_is_a_documented_400_problem(client, tenant):
    r = client.post(
        "/v1/jobs",
        content=b'{"metric": {"preset": "f\xff1"}}',
        headers={**tenant.headers, "Content-Type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["type"].endswith("/bad-request")
