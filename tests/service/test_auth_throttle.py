"""Repeated wrong API keys from one client address are refused with a 429 for the rest of a
window (service.api.throttle, checked in service.api.middleware.RequireKeyMiddleware)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.deps import get_principal
from service.api.throttle import AuthFailureThrottle
from service.main import create_app

LIMIT = 3
WINDOW = 30.0
WRONG = {"Authorization": "Bearer metro_this-key-was-never-issued"}


def wrong(i: int) -> dict[str, str]:
    """Another key that was never issued for each ``i`` (a key sent again counts once)."""
    return {"Authorization": f"Bearer metro_guess-{i}"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def throttled_app(settings: Any) -> Iterator[Any]:
    app = create_app(
        settings.model_copy(
            update={"auth_failure_limit": LIMIT, "auth_failure_window_seconds": WINDOW}
        )
    )
    yield app
    app.state.engine.dispose()


@pytest.fixture
def clock(throttled_app: Any) -> Clock:
    """A fresh count and a clock of the test's own (no test waits for the window to pass)."""
    clock = Clock()
    throttled_app.state.auth_failures.timer = clock
    throttled_app.state.auth_failures._failures.clear()
    return clock


def client_from(app: Any, host: str) -> TestClient:
    return TestClient(app, raise_server_exceptions=False, client=(host, 40000))


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys the key check looked up (cache or database)."""
    seen: list[str] = []
    original = get_principal.principal_for

    async def counted(request: Any, key: str) -> Any:
        seen.append(key)
        return await original(request, key)

    monkeypatch.setattr(get_principal, "principal_for", counted)
    return seen


def test_wrong_keys_lock_out_even_a_right_key_until_the_window_passes(
    throttled_app, clock, tenant, lookups
):
    a = client_from(throttled_app, "198.51.100.7")
    b = client_from(throttled_app, "198.51.100.8")
    for i in range(LIMIT):
        assert a.get("/v1/jobs", headers=wrong(i)).status_code == 401
    assert len(lookups) == LIMIT

    clock.now += 10
    refused = a.get("/v1/jobs", headers=tenant.headers)
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["retry-after"] == "20"  # what is left of the window
    problem = refused.json()
    assert problem["type"].endswith("/too-many-failed-keys")
    assert problem["status"] == 429
    assert problem["title"] == "Too many failed authentications"
    assert "try again in 20 s" in problem["detail"]
    assert problem["instance"] == "/v1/jobs"
    assert len(lookups) == LIMIT  # the right key was not even looked up
    # A write too, and a wrong key: refused alike, and not counted into a longer lockout.
    assert a.post("/v1/jobs", json={}, headers=tenant.headers).status_code == 429
    assert a.get("/v1/jobs", headers=WRONG).status_code == 429
    assert len(lookups) == LIMIT

    # Without a key: the 401 as before; the endpoints outside /v1 answer as before.
    assert a.get("/v1/jobs").status_code == 401
    assert a.get("/healthz").status_code == 200

    # Another address is not affected, by the lockout or by its count.
    assert b.get("/v1/jobs", headers=tenant.headers).status_code == 200
    assert b.get("/v1/jobs", headers=WRONG).status_code == 401

    clock.now += 19.5
    assert a.get("/v1/jobs", headers=tenant.headers).headers["retry-after"] == "1"
    clock.now += 0.5  # the window has passed
    assert a.get("/v1/jobs", headers=tenant.headers).status_code == 200
    assert a.get("/v1/jobs", headers=WRONG).status_code == 401  # a new window's first


def test_a_right_key_resets_no_count(throttled_app, clock, tenant):
    """A client holding one valid key cannot interleave it to guess on, and one tenant's
    success does not clear another address's count."""
    a = client_from(throttled_app, "198.51.100.9")
    b = client_from(throttled_app, "198.51.100.10")
    for i in range(LIMIT - 1):
        assert a.get("/v1/jobs", headers=wrong(i)).status_code == 401
        assert b.get("/v1/jobs", headers=wrong(i)).status_code == 401
    assert a.get("/v1/jobs", headers=tenant.headers).status_code == 200
    assert b.get("/v1/jobs", headers=tenant.headers).status_code == 200
    assert a.get("/v1/jobs", headers=wrong(LIMIT)).status_code == 401  # the LIMIT-th
    assert a.get("/v1/jobs", headers=tenant.headers).status_code == 429
    assert b.get("/v1/jobs", headers=wrong(LIMIT)).status_code == 401
    assert b.get("/v1/jobs", headers=tenant.headers).status_code == 429


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/no-such-thing"), ("PUT", "/v1/jobs")])
def test_a_wrong_key_counts_where_no_operation_is(throttled_app, clock, tenant, method, path):
    """A path or method with no operation answers a right key's 404 or 405 with the private
    headers and a wrong key's without them, so the key is told apart there too: its wrong keys
    count as anywhere else."""
    a = client_from(throttled_app, "198.51.100.20")
    right = a.request(method, path, headers=tenant.headers)
    wrong_answer = a.request(method, path, headers=wrong(0))
    assert right.status_code == wrong_answer.status_code != 401
    assert right.headers.get("cache-control") != wrong_answer.headers.get("cache-control")
    for i in range(1, LIMIT):
        assert a.request(method, path, headers=wrong(i)).status_code == wrong_answer.status_code
    assert a.request(method, path, headers=WRONG).status_code == 429
    assert a.get("/v1/jobs", headers=tenant.headers).status_code == 429


def test_a_root_path_does_not_take_requests_past_the_count(throttled_app, clock, tenant):
    """Under ``uvicorn --root-path /api`` each path arrives as "/api/v1/..." (the router strips
    the root path): the key check still sees an API path, answers before the route, counts."""
    a = TestClient(
        throttled_app, raise_server_exceptions=False, client=("198.51.100.21", 40000),
        root_path="/api",
    )  # fmt: skip
    assert a.get("/api/v1/jobs", headers=tenant.headers).status_code == 200
    for i in range(LIMIT):
        assert a.get("/api/v1/jobs", headers=wrong(i)).status_code == 401
    refused = a.get("/api/v1/jobs", headers=tenant.headers)
    assert refused.status_code == 429, refused.text
    assert refused.json()["instance"] == "/api/v1/jobs"


def test_an_upload_under_a_root_path_has_the_upload_limit(settings, tenant):
    """The body limit knows an upload by its route path: under a root path "/api/v1/datasets"
    got the 16 MiB limit of every other request, not the upload's 256 MiB."""
    app = create_app(
        settings.model_copy(update={"max_request_body_bytes": 4096, "max_upload_bytes": 65536})
    )
    try:
        client = TestClient(app, raise_server_exceptions=False, root_path="/api")
        csv = b"a,b,y\n" + b"".join(b"%d,%d,%d\n" % (i, i % 7, i % 2) for i in range(2000))
        assert 4096 < len(csv) < 65536
        r = client.post("/api/v1/datasets", files={"file": ("d.csv", csv)}, headers=tenant.headers)
        assert r.status_code == 201, r.text
    finally:
        app.state.engine.dispose()


def test_the_document_declares_the_429_on_each_operation_taking_a_key(throttled_app):
    schema = client_from(throttled_app, "198.51.100.11").get("/openapi.json").json()
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            if not path.startswith("/v1/"):
                assert "429" not in responses, (method, path)
                continue
            assert "401" in responses, (method, path)
            throttled = responses["429"]
            assert "Retry-After" in throttled["headers"], (method, path)
            assert "application/problem+json" in throttled["content"], (method, path)
            codes = [code for code in responses if code[0] == "4"]
            assert codes == sorted(codes), (method, path, codes)
            classes = [code[0] for code in responses if code[0] in "45"]
            assert classes == sorted(classes), (method, path)  # the 429 before any 5xx
    submit = schema["paths"]["/v1/jobs"]["post"]["responses"]["429"]["description"]
    assert "queued, running or cancelling jobs" in submit and "client address" in submit


def test_a_limit_of_zero_counts_nothing():
    clock = Clock()
    throttle = AuthFailureThrottle(limit=0, window_seconds=60, max_addresses=10, timer=clock)
    for i in range(1000):
        assert throttle.failed("192.0.2.1", f"k{i}") is False
    assert throttle.retry_after("192.0.2.1") is None
    assert len(throttle) == 0


def test_the_window_counts_from_its_first_failure():
    clock = Clock()
    throttle = AuthFailureThrottle(limit=3, window_seconds=60, max_addresses=10, timer=clock)
    assert throttle.failed("192.0.2.1", "k1") is False
    clock.now += 40
    assert throttle.failed("192.0.2.1", "k2") is False
    clock.now += 20  # the first failure's window is over: this one starts a new window
    assert throttle.failed("192.0.2.1", "k3") is False
    assert throttle.failed("192.0.2.1", "k4") is False
    assert throttle.retry_after("192.0.2.1") is None
    assert throttle.failed("192.0.2.1", "k5") is True  # the third of the new window
    assert throttle.retry_after("192.0.2.1") == 60
    clock.now += 59.2
    assert throttle.retry_after("192.0.2.1") == 1
    clock.now += 0.8
    assert throttle.retry_after("192.0.2.1") is None


def test_memory_is_bounded_the_oldest_address_forgotten_first():
    clock = Clock()
    throttle = AuthFailureThrottle(limit=2, window_seconds=60, max_addresses=3, timer=clock)
    for address in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):
        throttle.failed(address, "k1")
        throttle.failed(address, "k2")
        clock.now += 1
    assert all(throttle.retry_after(f"192.0.2.{i}") for i in (1, 2, 3))
    throttle.failed("192.0.2.4", "k1")
    assert len(throttle) == 3
    assert throttle.retry_after("192.0.2.1") is None  # forgotten: the oldest window
    assert throttle.retry_after("192.0.2.2") is not None
    # Expired windows go first, whatever the cap.
    clock.now += 59.5
    throttle.failed("192.0.2.5", "k1")
    assert len(throttle) == 2  # .4 (started 3 s after .1) is still inside its window


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"limit": -1}, "limit must be at least 0"),
        ({"window_seconds": 0}, "window_seconds must be positive"),
        ({"max_addresses": 0}, "max_addresses must be at least 1"),
    ],
)
def test_bad_arguments_are_refused(kwargs, said):
    args = {"limit": 5, "window_seconds": 60.0, "max_addresses": 10, **kwargs}
    with pytest.raises(ValueError, match=said):
        AuthFailureThrottle(**args)


def test_a_key_sent_again_counts_once(throttled_app, clock, tenant, lookups):
    """A client left with a revoked or expired key retries that one key: behind an address
    other clients share (a NAT, a proxy), counting each retry locked them all out, window
    after window. Guessing needs a new key each time, and every new one still counts."""
    a = client_from(throttled_app, "198.51.100.30")
    stale = {"Authorization": "Bearer metro_revoked-long-ago"}
    for _ in range(5 * LIMIT):
        assert a.get("/v1/jobs", headers=stale).status_code == 401
    assert a.get("/v1/jobs", headers=tenant.headers).status_code == 200  # its neighbours work
    for i in range(LIMIT - 1):  # with the stale key, LIMIT different wrong keys
        assert a.get("/v1/jobs", headers=wrong(100 + i)).status_code == 401
    assert a.get("/v1/jobs", headers=tenant.headers).status_code == 429


def test_the_same_key_is_one_failure():
    throttle = AuthFailureThrottle(limit=2, window_seconds=60, max_addresses=10, timer=Clock())
    for _ in range(50):
        assert throttle.failed("192.0.2.9", "metro_same") is False
    assert throttle.retry_after("192.0.2.9") is None
    assert throttle.failed("192.0.2.9", "metro_other") is True
    assert throttle.retry_after("192.0.2.9") == 60
