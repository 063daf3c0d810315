"""Security headers on every answer (service.api.middleware.SecurityHeadersMiddleware), not only
the dashboard's: JSON, problem+json, downloads, the OpenAPI document and its docs pages."""

from __future__ import annotations

import re
import uuid

import pytest

FRAME_ONLY = "frame-ancestors 'none'"


def assert_hardened(response, csp: str = FRAME_ONLY) -> None:
    headers = response.headers
    assert headers.get_list("x-content-type-options") == ["nosniff"], response.request.url
    assert headers.get_list("content-security-policy") == [csp], response.request.url
    assert headers.get_list("x-frame-options") == ["DENY"], response.request.url
    assert headers.get_list("referrer-policy") == ["no-referrer"], response.request.url


def test_a_json_read_carries_the_headers_and_keeps_its_caching(client, tenant):
    r = client.get("/v1/jobs", headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    assert_hardened(r)
    # An answer to a key was already private and revalidated: that stands, nothing added.
    assert r.headers.get_list("cache-control") == ["private, no-cache"]
    assert "Authorization" in r.headers["vary"]


def test_a_problem_404_carries_the_headers(client, tenant):
    r = client.get(f"/v1/jobs/{uuid.uuid4()}", headers=tenant.headers)
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/problem+json"
    assert_hardened(r)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer metro_not-a-key"}])
def test_a_401_from_the_key_check_carries_the_headers(client, headers):
    r = client.get("/v1/jobs", headers=headers)
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert_hardened(r)


def test_a_400_from_the_header_limit_carries_the_headers(client, settings):
    r = client.get("/healthz", headers={"X-Padding": "x" * settings.max_request_header_bytes})
    assert r.status_code == 400
    assert_hardened(r)


def test_a_download_and_its_304_carry_the_headers(client, tenant, add_model):
    model = add_model(tenant)
    r = client.get(f"/v1/models/{model['id']}/download", headers=tenant.headers)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/octet-stream"
    assert_hardened(r)
    # The conditional request still works: the ETag is served and a match is a 304.
    etag = r.headers["etag"]
    again = client.get(
        f"/v1/models/{model['id']}/download",
        headers={**tenant.headers, "If-None-Match": etag},
    )
    assert again.status_code == 304
    assert again.content == b""
    assert_hardened(again)


def test_the_openapi_document_carries_the_headers(client):
    r = client.get("/openapi.json")
    assert r.status_code == 200
    assert_hardened(r)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_and_their_assets_carry_the_headers_and_still_load(client, page):
    """The docs pages carry inline code (Swagger UI is started by an inline script, ReDoc's
    page has an inline style): their policy is frame-ancestors alone, which restricts neither.
    Their assets are self-hosted (fastapi-offline), each served with a type nosniff lets a
    browser run or apply."""
    r = client.get(page)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert_hardened(r)
    assert "<script>" in r.text or "<style>" in r.text
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', r.text)
    styles = re.findall(r'<link[^>]*\brel="stylesheet"[^>]*\bhref="([^"]+)"', r.text)
    styles += re.findall(r'<link[^>]*\bhref="([^"]+\.css)"', r.text)
    assert scripts, r.text
    for url in scripts:
        assert url.startswith("/"), f"{page} loads {url} from elsewhere"
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].split(";")[0] in (
            "text/javascript",
            "application/javascript",
        ), (url, asset.headers["content-type"])
        assert_hardened(asset)
    for url in set(styles):
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].split(";")[0] == "text/css", url


def test_the_dashboard_keeps_its_own_fuller_policy(client):
    r = client.get("/dashboard/")
    assert r.status_code == 200
    (csp,) = r.headers.get_list("content-security-policy")  # its own, not a second one added
    assert csp.startswith("default-src 'none'") and "frame-ancestors 'none'" in csp
    assert r.headers.get_list("x-content-type-options") == ["nosniff"]
    assert r.headers.get_list("cache-control") == ["no-store"]


def test_an_unexpected_500_carries_the_headers(settings):
    """Starlette answers an unhandled exception outside every middleware: its handler adds the
    headers itself."""
    from fastapi.testclient import TestClient

    from service.main import create_app

    app = create_app(settings)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("an unexpected fault")

    try:
        r = TestClient(app, raise_server_exceptions=False).get("/boom")
    finally:
        app.state.engine.dispose()
    assert r.status_code == 500
    assert r.headers["content-type"] == "application/problem+json"
    assert_hardened(r)
