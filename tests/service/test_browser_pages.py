"""The pages a person opens first, in headless Chromium with no network but the service's own
address: the interactive API docs (Swagger UI at ``/docs``, ReDoc at ``/redoc``) and the
service's root, which a browser follows to the dashboard.

"No network" is Chromium's: every request to anything but the loopback server goes to a proxy
that does not exist, and every host name fails to resolve; a page that needed a CDN would stay
blank. The live server and the browser driver are the dashboard test's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.test_dashboard import Browser, live_server, parse_dom

__all__ = ["live_server"]  # the fixture, imported to be used here

# Loopback stays direct (Chromium never proxies it); everything else goes nowhere.
OFFLINE_FLAGS = (
    "--proxy-server=http://127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)


class OfflineBrowser(Browser):
    def offline_dom(self, url: str) -> tuple[str, Any]:
        out = self._run(
            url, *OFFLINE_FLAGS, "--window-size=1280,1000", "--enable-logging=stderr",
            "--dump-dom",
        )  # fmt: skip
        assert "<html" in out.stdout, "chromium dumped no DOM"
        return out.stdout, parse_dom(out.stdout)


def _operation_ids(live_server: str) -> set[str]:
    document = httpx.get(f"{live_server}/openapi.json", timeout=10).json()
    return {op["operationId"] for item in document["paths"].values() for op in item.values()}


def _external_urls(html: str, origin: str) -> list[str]:
    found = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    return [u for u in found if re.match(r"^(https?:)?//", u) and not u.startswith(origin)]


@pytest.mark.timeout(120)
def test_swagger_ui_renders_every_operation_offline(live_server: str, tmp_path: Path) -> None:
    browser = OfflineBrowser(tmp_path)
    _, dom = browser.offline_dom(f"{live_server}/docs")
    blocks = dom.find_all("div", cls="opblock")
    rendered = {b.attrs["id"].rsplit("-", 1)[-1] for b in blocks if "id" in b.attrs}
    assert rendered == _operation_ids(live_server), "Swagger UI did not render the operations"
    paths = {p.attrs.get("data-path") for p in dom.find_all(cls="opblock-summary-path")}
    assert {"/v1/jobs", "/v1/models/{model_id}/predict"} <= paths
    assert "METRO training service" in dom.find("h1", cls="title").text
    page = httpx.get(f"{live_server}/docs", timeout=10)
    assert _external_urls(page.text, live_server) == [], "the docs page loads assets from afar"


@pytest.mark.timeout(120)
def test_redoc_renders_every_operation_offline(live_server: str, tmp_path: Path) -> None:
    browser = OfflineBrowser(tmp_path)
    html, dom = browser.offline_dom(f"{live_server}/redoc")
    sections = {
        n.attrs["data-section-id"].rsplit("/", 1)[-1]
        for n in dom.find_all()
        if "/operation/" in n.attrs.get("data-section-id", "")
    }
    assert sections == _operation_ids(live_server), "ReDoc did not render the operations"
    assert "METRO training service" in html
    page = httpx.get(f"{live_server}/redoc", timeout=10)
    assert _external_urls(page.text, live_server) == [], "the ReDoc page loads assets from afar"


@pytest.mark.timeout(60)
def test_a_browser_opening_the_root_lands_on_the_dashboard(
    live_server: str, tmp_path: Path
) -> None:
    browser = OfflineBrowser(tmp_path)
    _, dom = browser.dom(f"{live_server}/")
    # The dashboard's shell, asking for a key (none was given).
    assert dom.find(id="login").attrs.get("hidden") is None
    assert dom.find("form") is not None
    # An API client at the same address gets JSON, not a page or a 404.
    r = httpx.get(f"{live_server}/", headers={"Accept": "application/json"}, timeout=10)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    links = json.loads(r.text)["links"]
    assert links["dashboard"] == "/dashboard/" and links["openapi"] == "/openapi.json"
    for path in links.values():
        assert httpx.get(live_server + path, timeout=10).status_code in (200, 401), path
