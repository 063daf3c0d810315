"""The OpenAPI document, and the problem+json contract of errors."""

from __future__ import annotations

import json
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


def test_every_enum_is_declared_once(client):
    """A set of choices used in several places (how a job averages its metric: in the job, its
    result and its model's manifest; the split a metric was scored on) is one named schema they
    all reference, so that a client generated from the document has one type for it. Metric
    preset names are the exception: the service takes them in any case, so they are strings
    whose documented values are listed where they are taken (a metric and a constraint)."""
    from metro.averaging import AVERAGES
    from metro.metrics import PRESET_NAMES

    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert schemas["Average"] == {"type": "string", "enum": list(AVERAGES)}
    assert schemas["Split"]["enum"] == ["validation", "test"]
    declared: list[tuple[str, ...]] = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("enum"), list):
                declared.append(tuple(node["enum"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schemas)
    repeated = {e for e in declared if declared.count(e) > 1}
    assert repeated <= {tuple(PRESET_NAMES)}, repeated
    for name in ("PresetMetric", "JobResult", "ModelManifest"):
        refs = schemas[name]["properties"]["average"]["anyOf"]
        assert {"$ref": "#/components/schemas/Average"} in refs, name


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


def test_a_bad_value_of_a_union_setting_is_one_error_at_the_field(client, tenant):
    """search.cv takes a number of folds or "auto" (or null): a bad value was one error per
    union member, under pydantic's member names (search.cv.constrained-int, search.cv.
    literal['auto'])."""
    body = {
        "metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"},
        "search": {"cv": 1, "strategy": "random"}, "training": {"weight_decay": -1},
    }  # fmt: skip
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    errors = {tuple(e["loc"]): e["msg"] for e in r.json()["errors"]}
    assert errors[("body", "search", "cv")] == (
        "Input should be an integer greater than or equal to 2, or 'auto'"
    )
    assert errors[("body", "training", "weight_decay")] == (
        "Input should be a number greater than or equal to 0, or 'auto'"
    )
    assert ("body", "search", "strategy") in errors  # a plain field keeps its own error
    assert len(errors) == 3
    # The detail names them too, where each is (it said "the request is not valid").
    detail = r.json()["detail"]
    for loc, msg in errors.items():
        assert f"{'.'.join(loc[1:])}: {msg}" in detail


def test_a_422s_detail_names_its_first_fields_and_counts_the_rest(client, tenant):
    body = {
        "metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"},
        "search": {"n_lambdas": 0, "epsilon": -1, "max_steps": 0, "cv": 1},
    }  # fmt: skip
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    errors = r.json()["errors"]
    assert len(errors) == 4
    said = [f"{'.'.join(e['loc'][1:])}: {e['msg']}" for e in errors[:3]]
    assert r.json()["detail"] == "; ".join(said) + " (and 1 more)"
    # A query parameter by its name, as the metro command shows it.
    r = client.get("/v1/jobs?limit=0", headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("limit: ")
    # A field the user named "path" keeps its name (only the first step says where it was sent).
    misplaced = {"metric": {"preset": "f1"}, "dataset": {"path": "churn.csv"}}
    r = client.post("/v1/jobs", json=misplaced, headers=tenant.headers)
    assert "dataset.path: Extra inputs are not permitted" in r.json()["detail"], r.text
    # A body that is not JSON has no field: said so, with where reading stopped.
    r = client.post(
        "/v1/jobs", content=b"[1", headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert (
        r.status_code == 422 and r.json()["detail"] == "the body is not valid JSON (at character 2)"
    )


def test_a_422_the_library_finds_names_its_fields_as_the_schemas_do(client, tenant):
    """Errors found past the schema (a preset's parameters, the missing beta) joined their
    messages without a field; they are said as the schema's are."""
    body = {"metric": {"preset": "f_beta", "bta": 2}, "dataset": {"uri": "builtin://breast_cancer"}}
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail.startswith("metric.bta: metric 'f_beta' has no parameter 'bta'"), detail
    assert "; metric.beta: f_beta needs a beta" in detail


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
        "title": "Internal server error",
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


def test_head_is_answered_as_get_without_the_body(client, tenant):
    """Allow listed HEAD for every GET path, and every HEAD was a 405."""
    for path in ("/v1/jobs", "/healthz", "/metrics", "/dashboard/", "/openapi.json"):
        got = client.get(path, headers=tenant.headers)
        head = client.head(path, headers=tenant.headers)
        assert head.status_code == got.status_code == 200, (path, head.status_code)
        assert head.content == b""
        assert head.headers["content-type"] == got.headers["content-type"], path
        if "content-length" in got.headers and path != "/metrics":  # /metrics counts the GET
            assert head.headers["content-length"] == got.headers["content-length"], path
    missing = client.head(f"/v1/jobs/{uuid.uuid4()}", headers=tenant.headers)
    assert missing.status_code == 404 and missing.content == b""
    assert client.head("/v1/jobs").status_code == 401  # the key check as for GET


def test_405_outside_the_document_allows_get_and_head(client):
    """The dashboard's pages are not in the OpenAPI document: Allow was empty there."""
    for method, path in (("POST", "/dashboard/"), ("DELETE", "/")):
        r = client.request(method, path)
        assert r.status_code == 405, (method, path)
        assert r.headers["allow"] == "GET, HEAD"
        assert r.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(
    ("authorization", "detail"),
    [
        ([], "an API key is required"),
        ([b"Bearer metro_made-up"], "the API key is not valid"),
        # Two fields: the first is the one read, by this check as by the route's.
        ([b"Bearer metro_made-up", b"Bearer also-made-up"], "the API key is not valid"),
    ],
)
def test_a_request_without_a_valid_key_is_refused_before_its_body_is_read(
    app, authorization, detail
):
    """FastAPI reads and parses a body before the key check runs; without a valid key, not a
    byte of it should be taken in (a made-up key had the server read a whole upload, and parse
    a 16 MB prediction request on its event loop, before the 401)."""
    from tests.service.conftest import post_unread_upload

    start, body, received = post_unread_upload(
        app, [(b"authorization", value) for value in authorization], 1_000_000
    )
    headers = dict(start["headers"])
    assert start["status"] == 401
    assert detail in body.decode()
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


def test_well_formed_json_python_cannot_read_is_a_422_saying_why(client, tenant):
    """A seed of 5,000 digits, or arrays nested 100,000 deep: well-formed JSON, answered 400
    "There was an error parsing the body" (of bytes that were fine), where a 38-digit seed is a
    422 naming its field."""
    huge = b'{"metric": {"preset": "f1"}, "training": {"seed": 1' + b"0" * 5000 + b"}}"
    deep = b"[" * 100_000 + b"]" * 100_000
    for path, body, said in [
        ("/v1/jobs", huge, "a number of more than 4,300 digits"),
        ("/v1/jobs", deep, "nested too deeply"),
        (f"/v1/models/{uuid.uuid4()}/predict", deep, "nested too deeply"),
    ]:
        r = client.post(
            path, content=body, headers={**tenant.headers, "Content-Type": "application/json"}
        )
        assert r.status_code == 422, r.text
        assert r.json()["type"].endswith("/validation")
        [error] = r.json()["errors"]
        assert error["loc"] == ["body"] and said in error["msg"], error


def test_a_job_nested_past_the_serializers_depth_is_a_422(client, tenant):
    """255 levels of a free-form parameter pass the JSON reader (about 1,000) and validation,
    then stopped pydantic's serializer ("Circular reference detected"): a 500 and a traceback."""
    for depth in (255, 600):
        nested = '{"a":' * depth + "1" + "}" * depth
        body = (
            '{"metric": {"preset": "f1", "params": ' + nested + "}, "
            '"dataset": {"uri": "builtin://breast_cancer"}}'
        )
        r = client.post(
            "/v1/jobs", content=body.encode(),
            headers={**tenant.headers, "Content-Type": "application/json"},
        )  # fmt: skip
        assert r.status_code == 422, (depth, r.text[:300])
        [error] = r.json()["errors"]
        assert error["loc"] == ["body"] and "nested too deeply" in error["msg"], error


# -- what the document declares matches what is answered -------------------------------------


def test_every_operation_declares_the_400s_it_can_give(client):
    """A header section over the limit is a 400 on any route; a body that cannot be decoded
    (JSON that is not UTF-8, broken multipart) is a 400 on the routes that take one."""
    spec = client.get("/openapi.json").json()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            response = op["responses"].get("400")
            assert response is not None, (method, path)
            assert list(response["content"]) == ["application/problem+json"], (method, path)
            assert "header" in response["description"], (method, path)
            assert ("body" in response["description"]) == ("requestBody" in op), (method, path)


def test_every_operation_declares_the_5xx_it_can_give(client):
    """Any route can answer an unexpected error (500); every /v1 route reads the database and
    answers 503 with Retry-After while it is unavailable (tests/service/test_health.py)."""
    spec = client.get("/openapi.json").json()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            assert list(op["responses"]["500"]["content"]) == ["application/problem+json"]
            if path.startswith("/v1/"):
                unavailable = op["responses"]["503"]
                assert list(unavailable["content"]) == ["application/problem+json"], path
                assert "Retry-After" in unavailable["headers"], (method, path)
    readiness = spec["paths"]["/readyz"]["get"]["responses"]["503"]
    assert readiness["content"]["application/json"]["schema"]["$ref"].endswith("/Readiness")


@pytest.mark.parametrize(
    ("template", "content_type", "body"),
    [
        ("/v1/jobs", "application/json", b'{"metric": {"preset": "f\xff1"}}'),
        ("/v1/models/{model_id}/predict", "application/json", b'{"instances": [[1\xfe]]}'),
        (  # a part that has no name
            "/v1/datasets",
            "multipart/form-data; boundary=xyz",
            b"--xyz\r\nContent-Type: text/csv\r\n\r\na,y\r\n--xyz--\r\n",
        ),
    ],
)
def test_an_undecodable_body_is_a_400_the_document_declares(
    client, tenant, template, content_type, body
):
    path = template.format(model_id=uuid.uuid4())
    r = client.post(path, content=body, headers={**tenant.headers, "Content-Type": content_type})
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"].endswith("/bad-request")
    declared = client.get("/openapi.json").json()["paths"][template]["post"]["responses"]
    assert "400" in declared


def _head_scope(path: str, *, pad: int, authorization: bytes | None = None) -> dict:
    headers = [(b"host", b"testserver"), (b"x-pad", b"p" * pad)]
    if authorization is not None:
        headers.append((b"authorization", authorization))
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": headers,
    }  # fmt: skip


def _asgi_get(app, scope: dict) -> tuple[int, dict[bytes, bytes], bytes]:
    import asyncio

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), body


def test_a_header_section_over_the_limit_is_a_400_problem(app, settings):
    from service.api.middleware import request_head_bytes

    limit = settings.max_request_header_bytes
    at_limit = _head_scope("/healthz", pad=0)
    at_limit = _head_scope("/healthz", pad=limit - request_head_bytes(at_limit))
    assert request_head_bytes(at_limit) == limit
    status, _, _ = _asgi_get(app, at_limit)
    assert status == 200

    over = _head_scope(
        "/healthz", pad=limit + 1 - request_head_bytes(_head_scope("/healthz", pad=0))
    )
    status, headers, body = _asgi_get(app, over)
    assert status == 400
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"connection"] == b"close"
    problem = json.loads(body)
    assert problem["type"] == settings.problem_type_base + "header-too-large"
    assert problem["status"] == 400 and problem["instance"] == "/healthz"
    assert str(limit) in problem["detail"]

    # Before the key check: an oversized anonymous request is the 400, not a 401.
    status, _, _ = _asgi_get(app, _head_scope("/v1/jobs", pad=2 * limit))
    assert status == 400
    # A path that is itself the excess is not echoed back.
    status, _, body = _asgi_get(app, _head_scope("/v1/" + "x" * 2 * limit, pad=0))
    assert status == 400 and "instance" not in json.loads(body)


def test_the_parser_cap_stays_above_the_app_limit_and_near_it():
    """Above: the app's problem+json 400 answers every head between the two. Near: a head that
    trickles in is held until the cap (uvicorn gives it no deadline), so a cap of 1 MiB at a
    16 KiB limit let each slow anonymous connection hold a megabyte."""
    from core.config import Settings
    from service.api.middleware import parser_header_cap

    for limit in (1024, 16 * 1024, 1024 * 1024, 8 * 1024 * 1024):
        settings = Settings(max_request_header_bytes=limit, _env_file=None)  # type: ignore[call-arg]
        assert 4 * limit <= parser_header_cap(settings) <= 8 * limit


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``metro serve`` on the embedded defaults in a fresh directory, no worker: the real
    uvicorn in front of the app, as an operator runs it."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys

    import httpx

    from tests.worker.conftest import ROOT, free_port, wait_until

    tmp = tmp_path_factory.mktemp("served")
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    env["PYTHONPATH"] = str(ROOT)
    port = free_port()
    with open(tmp / "serve.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--no-worker"],
            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:

        def healthy() -> bool:
            assert proc.poll() is None, (tmp / "serve.log").read_text()
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(healthy, 60, "metro serve to answer")
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _raw_get(port: int, head_bytes: int) -> tuple[str, dict[str, str], bytes]:
    """A GET of /healthz whose request line and header fields are exactly ``head_bytes`` long
    on the wire, sent in 64 KiB writes; the status line, headers and body of the answer."""
    import socket

    start = b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Pad: "
    end = b"\r\n\r\n"
    request = start + b"p" * (head_bytes - len(start) - len(end)) + end
    assert len(request) == head_bytes
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for at in range(0, len(request), 65536):
            sock.sendall(request[at : at + 65536])
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *fields = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    return status, headers, body


def test_metro_serve_holds_the_documented_header_limit(served):
    """The limit is 16 KiB of request line and headers however the bytes arrive: h11's own
    check let a head that came in one read through (64 KiB was a 200), and refused one that
    came in pieces with a text/plain 400; the app now refuses both with its problem+json 400,
    up to the parser's hard cap (4 times the limit); past it the parser refuses the head as it
    arrives (its own 400, or a reset), having held no more than the cap."""

    limit = 16 * 1024
    status, _, _ = _raw_get(served, limit)
    assert status == "HTTP/1.1 200 OK"
    for size in (limit + 1, 4 * limit - 1024):
        status, headers, body = _raw_get(served, size)
        assert status == "HTTP/1.1 400 Bad Request", size
        assert headers["content-type"] == "application/problem+json", (size, body[:200])
        assert headers["connection"] == "close"
        assert json.loads(body)["type"].endswith("/header-too-large")
    try:
        status, _, _ = _raw_get(served, 512 * 1024)
    except (TimeoutError, ConnectionResetError, BrokenPipeError):
        status = "reset"
    assert status in ("HTTP/1.1 400 Bad Request", "reset")


# -- cursors: the schema says which strings are accepted ---------------------------------------


def test_cursor_parameters_declare_their_exact_form(client):
    from service.crud.pagination import NEWEST_FIRST_CURSOR, STEP_CURSOR

    spec = client.get("/openapi.json").json()
    expected = {
        "/v1/jobs": NEWEST_FIRST_CURSOR,
        "/v1/datasets": NEWEST_FIRST_CURSOR,
        "/v1/models": NEWEST_FIRST_CURSOR,
        "/v1/jobs/{job_id}/trace": STEP_CURSOR,
    }
    for path, pattern in expected.items():
        (param,) = [p for p in spec["paths"][path]["get"]["parameters"] if p["name"] == "cursor"]
        (string,) = [s for s in param["schema"]["anyOf"] if s.get("type") == "string"]
        assert string["pattern"] == pattern and string["maxLength"] <= 64, path


def test_every_cursor_of_the_documented_form_is_answered_with_a_page(client, tenant, submit):
    """The operator's probe sent ``?cursor=000...`` (valid under the schema of the time, a
    string up to 512 characters) and got a 422; now any string of the declared pattern is a
    page (perhaps empty), any other a 422 from the schema."""
    import hypothesis
    from hypothesis import strategies as st

    job = submit(tenant)
    lists = ("/v1/jobs", "/v1/datasets", "/v1/models")
    trace = f"/v1/jobs/{job['id']}/trace"
    for path in lists:
        r = client.get(path, params={"cursor": "0" * 17 + "." + "0" * 32}, headers=tenant.headers)
        assert r.status_code == 200 and r.json()["items"] == [], (path, r.text)
        assert client.get(path, params={"cursor": "000"}, headers=tenant.headers).status_code == 422
    assert client.get(trace, params={"cursor": "0.0"}, headers=tenant.headers).status_code == 200

    from service.crud.pagination import NEWEST_FIRST_CURSOR, STEP_CURSOR

    @hypothesis.settings(max_examples=25, deadline=None, derandomize=True)
    @hypothesis.given(
        newest_first=st.from_regex(NEWEST_FIRST_CURSOR, fullmatch=True),
        step=st.from_regex(STEP_CURSOR, fullmatch=True),
    )
    def accepted(newest_first: str, step: str) -> None:
        for path in lists:
            params = {"cursor": newest_first}
            assert client.get(path, params=params, headers=tenant.headers).status_code == 200
        r = client.get(trace, params={"cursor": step}, headers=tenant.headers)
        assert r.status_code == 200, r.text

    accepted()


def test_a_page_cursor_leads_to_the_next_page(client, tenant, submit):
    ids = [submit(tenant)["id"] for _ in range(3)]
    first = client.get("/v1/jobs", params={"limit": 2}, headers=tenant.headers).json()
    second = client.get(
        "/v1/jobs", params={"limit": 2, "cursor": first["next_cursor"]}, headers=tenant.headers
    ).json()
    assert [j["id"] for j in first["items"] + second["items"]] == ids[::-1]
    assert second["next_cursor"] is None


# -- uploads: the accepted file types are documented, and so is the 415 -----------------------


def test_the_upload_documents_its_file_types_and_its_415(client, tenant):
    from core.datasets.uploads import FORMATS

    spec = client.get("/openapi.json").json()
    upload = spec["paths"]["/v1/datasets"]["post"]
    assert list(upload["responses"]["415"]["content"]) == ["application/problem+json"]
    ref = upload["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    file_field = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]["file"]
    for suffix in FORMATS:
        assert suffix in file_field["description"], suffix
    assert "415" in file_field["description"]

    r = client.post(
        "/v1/datasets",
        files={"file": ("picture.png", b"\x89PNG\r\n", "image/png")},
        headers=tenant.headers,
    )
    assert r.status_code == 415 and r.headers["content-type"] == "application/problem+json"


def test_a_null_default_is_in_the_document(client):
    """FastAPI writes the document without Nones, defaults of None among them: the client and
    the CLI could not say that lambda_min's default is null (the metric's own bound)."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    search = schemas["SearchIn"]["properties"]
    for name in ("lambda_min", "lambda_max", "refine_confidence", "shrink_confidence"):
        assert search[name]["default"] is None, name
    assert search["cv"]["default"] == "auto"  # a default that is not null is as it was
    assert "default" not in schemas["JobCreate"]["properties"]["metric"]  # required: none


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_json_body_sent_as_something_else_is_415_saying_so(client, tenant, content_type):
    """`curl -d '{...}'` sends form-urlencoded: the valid job was a 422 at body, 'Input should be
    a valid dictionary or object to extract fields from'."""
    headers = dict(tenant.headers)
    if content_type:
        headers["Content-Type"] = content_type
    body = json.dumps({"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}})
    r = client.post("/v1/jobs", content=body, headers=headers)
    assert r.status_code == 415, r.text
    assert r.json()["type"].endswith("/unsupported-media-type")
    said = content_type or "no Content-Type"
    assert r.json()["detail"] == (
        "the body must be JSON, sent with Content-Type: application/json (it came with "
        + (f"Content-Type {said})" if content_type else f"{said})")
    )
    assert client.get("/v1/jobs", headers=tenant.headers).json()["items"] == []
    # The right type, a body that is not an object: still the 422 at body it was.
    r = client.post(
        "/v1/jobs", content="[]", headers={**tenant.headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body"]


@pytest.mark.parametrize(
    "senses",
    [
        {"at_least": 0.5},
        {"at_most": 0.5},
        {"at_least": 0.5, "at_most": None},
        {},
        {"at_least": None},
        {"at_least": 0.5, "at_most": 0.9},
    ],
)
def test_the_documented_constraint_takes_one_bound_as_the_server_does(client, tenant, senses):
    """The document says a constraint takes exactly one of at_least and at_most (a null one
    is not given), as the server checks; it said both were optional."""
    import jsonschema

    document = client.get("/openapi.json").json()
    schema = {**document, "$ref": "#/components/schemas/ConstraintIn"}  # its refs resolved
    constraint = {"metric": "recall", **senses}
    body = {
        "metric": {"preset": "precision"}, "dataset": {"uri": "builtin://breast_cancer"},
        "constraints": [constraint], "search": {"strategy": "grid"},
    }  # fmt: skip
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    valid = jsonschema.Draft202012Validator(schema).is_valid(constraint)
    assert valid == (r.status_code == 201), (senses, r.status_code, r.text)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (("baselines",), ["erm", "erm"]),
        (("baselines",), ["erm", "koyejo1"]),
        (("dataset", "label_columns"), ["a", "a"]),
        (("dataset", "label_columns"), ["a", "b"]),
    ],
)
def test_the_document_says_which_lists_take_an_entry_once(client, tenant, field, value):
    """A repeated baseline or label column is a 422; the document said nothing of it."""
    import jsonschema

    document = client.get("/openapi.json").json()
    body = {
        "metric": {"preset": "f1", "average": "macro"} if field[0] == "dataset" else
        {"preset": "f1"},
        "dataset": {"uri": "builtin://breast_cancer"},
    }  # fmt: skip
    target = body
    for step in field[:-1]:
        target = target[step]
    target[field[-1]] = value
    schema = {**document, "$ref": "#/components/schemas/JobCreate"}
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    assert valid == (len(set(value)) == len(value))
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    said = [e["msg"] for e in r.json().get("errors") or [] if e["loc"] == ["body", *field]]
    repeated = [m for m in said if "repeat" in m or "more than once" in m]
    # (a builtin dataset has no columns a and b: that check may refuse the valid list too)
    assert bool(repeated) == (not valid), r.text
