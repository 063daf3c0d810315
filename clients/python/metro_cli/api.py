"""Talking to the API: the generated client (:mod:`metro_client`), each answer that is not a
success turned into one line (:class:`~metro_cli.errors.ApiError`), and the few lookups that
several commands share (a job, its trace, its delivered model)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from metro_cli.errors import ApiError, CliError
from metro_cli.output import flat, optional

TERMINAL_STATES = ("succeeded", "failed", "cancelled")


def problem_message(status: int, content: bytes) -> str:
    """One line from an RFC 9457 problem body (title, detail, the fields at fault), or from
    whatever else the server (or a proxy in front of it) answered."""
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        text = content.decode("utf-8", "replace").strip()
        return f"HTTP {status}" + (f": {flat(text, 200)}" if text else "")
    title = str(body.get("title") or f"HTTP {status}")
    parts = []
    for error in body.get("errors") or []:
        loc = [str(p) for p in error.get("loc", [])]
        if loc and loc[0] in ("body", "query", "path"):  # where it was sent, not a field
            loc = loc[1:]
        parts.append(f"{'.'.join(loc) or 'request'}: {error.get('msg', '')}")
    detail = "; ".join(parts) if parts else str(body.get("detail") or "")
    return f"{title} ({status})" + (f": {detail}" if detail else "")


def _refuses_a_field(content: bytes) -> bool:
    """Whether a problem body refuses a field as unknown (pydantic's ``extra_forbidden``)."""
    try:
        body = json.loads(content)
    except ValueError:
        return False
    errors = body.get("errors") if isinstance(body, dict) else None
    return any(isinstance(e, dict) and e.get("type") == "extra_forbidden" for e in errors or [])


def problem_kind(content: bytes) -> str | None:
    """The last segment of an RFC 9457 problem's ``type`` (``not-found``), else None."""
    try:
        body = json.loads(content)
    except ValueError:
        return None
    kind = body.get("type") if isinstance(body, dict) else None
    return kind.rstrip("/").rsplit("/", 1)[-1] if isinstance(kind, str) and kind else None


def client_api_version() -> str:
    """The API version of the document this client was generated from."""
    from importlib import resources

    try:
        document = json.loads(resources.files("metro_client").joinpath("openapi.json").read_text())
        return str(document["info"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def parse_uuid(value: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise CliError(f"{value!r} is not a {what} id (a UUID)") from None


class Api:
    """The generated client, with errors raised as :class:`~metro_cli.errors.CliError`."""

    def __init__(self, url: str, api_key: str | None, timeout: float = 60.0) -> None:
        if not api_key:
            raise CliError(
                "no API key: pass --api-key or set METRO_API_KEY "
                "(an operator creates one with `metro admin create-key --tenant NAME`)"
            )
        import httpx
        from metro_client import AuthenticatedClient

        self.url = url.rstrip("/")
        self.client = AuthenticatedClient(
            base_url=self.url, token=api_key, timeout=httpx.Timeout(timeout)
        )

    def call(self, endpoint: Any, *args: Any, **kwargs: Any) -> Any:
        """``endpoint.sync_detailed(...)``: the parsed body of a 2xx answer (None for a 204), or
        a CliError."""
        import httpx

        try:
            response = endpoint.sync_detailed(*args, client=self.client, **kwargs)
        except httpx.ConnectError as exc:
            raise CliError(f"cannot reach the METRO API at {self.url} ({exc})") from None
        except httpx.TimeoutException:
            raise CliError(f"the METRO API at {self.url} did not answer in time") from None
        except httpx.HTTPError as exc:
            raise CliError(f"request to {self.url} failed: {exc}") from None
        except ValueError as exc:  # a body that is not the documented JSON (a proxy's page)
            raise CliError(
                f"the server at {self.url} answered something unexpected: {exc}"
            ) from None
        except (KeyError, TypeError) as exc:
            # The answer lacks a field this client's models require, or holds one of another
            # kind: a server of another version (was "unexpected KeyError: 'label_column'").
            raise CliError(
                f"the server at {self.url} answered without a field this client reads "
                f"({type(exc).__name__}: {flat(str(exc), 80)}): it runs API "
                f"{self.server_api_version()}, this client was made for API "
                f"{client_api_version()}; use a client of the server's version (pip install "
                "./clients/python from its checkout), or upgrade the server"
            ) from None
        status = int(response.status_code)
        if 200 <= status < 300 and (response.parsed is not None or status == 204):
            return response.parsed
        said = problem_message(status, response.content)
        if status == 422 and _refuses_a_field(response.content):
            # A field this client sends that the server does not know: most often a server of
            # an older release (search.multiclass to a 1.1 server), which the 422 alone hid.
            server = self.server_api_version()
            if server not in (client_api_version(), "unknown"):
                said += (
                    f" (the server runs API {server}, this client was made for API "
                    f"{client_api_version()}: a field of a newer release)"
                )
        raise ApiError(said, status, problem_kind(response.content))

    def server_api_version(self) -> str:
        """The API version the server's OpenAPI document states ("unknown" where it cannot be
        read)."""
        import httpx

        try:
            answer = httpx.get(f"{self.url}/openapi.json", timeout=5.0)
            return str(answer.json()["info"]["version"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return "unknown"

    def job(self, job_id: str) -> Any:
        from metro_client.api.jobs import get_job

        return self.call(get_job, parse_uuid(job_id, "job"))

    def trace_pages(self, job_id: str, cursor: str | None) -> Iterator[tuple[Any, str | None]]:
        """The trace's steps from ``cursor`` on, each with the cursor of the page that held it
        (None on the last page)."""
        from metro_client.api.jobs import get_job_trace
        from metro_client.types import UNSET

        after: Any = UNSET if cursor is None else cursor
        while True:
            page = self.call(get_job_trace, parse_uuid(job_id, "job"), cursor=after, limit=200)
            next_cursor = optional(page.next_cursor)
            for item in page.items:
                yield item, next_cursor
            if not next_cursor:
                return
            after = next_cursor

    def job_model(self, job_id: str) -> Any | None:
        from metro_client.api.models import list_models

        page = self.call(list_models, job_id=parse_uuid(job_id, "job"), limit=1)
        return page.items[0] if page.items else None

    def delivered_model(self, job_id: str) -> Any:
        """The job's delivered model, or a CliError saying why there is none (yet)."""
        model = self.job_model(job_id)
        if model is not None:
            return model
        job = self.job(job_id)  # a 404 for no such job
        if job.state == "succeeded":
            raise CliError(f"job {job_id} registered no model")
        after = f" (`metro watch {job_id}` follows it)" if job.state not in TERMINAL_STATES else ""
        reason = optional(job.failure_reason) if job.state == "failed" else None
        if reason:
            after = f": {reason}"
        raise CliError(f"job {job_id} has no model: it is {job.state}{after}")

    def model(self, model_or_job: str) -> Any:
        """The model with this id or, given a job's id, the job's delivered model (the one
        `metro result` names): what `download` and `predict` act on."""
        from metro_client.api.models import get_model

        ident = parse_uuid(model_or_job, "model id or job")
        try:
            return self.call(get_model, ident)
        except ApiError as exc:
            if exc.status != 404:
                raise
            not_found = exc
        try:
            return self.delivered_model(str(ident))
        except ApiError as exc:
            if exc.status != 404:
                raise
            raise ApiError(f"{not_found}; nor is it a job's id", 404) from None
