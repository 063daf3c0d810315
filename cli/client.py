"""The ``metro`` commands that talk to a running service: ``upload``, ``submit``, ``watch``,
``cancel``, ``result``, ``download`` and ``predict``.

They go through the generated client (``clients/python``, package ``metro_client``) like any
program using the API would, so the CLI exercises the same contract. The server address and the
API key come from ``--url`` / ``--api-key`` or ``METRO_URL`` / ``METRO_API_KEY``. Every failure
(an HTTP problem, an unreachable server, a bad file) ends the command with one line on stderr
and exit code 1, never a traceback; ``watch`` also exits 1 when the job fails or is cancelled.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)

DEFAULT_URL = "http://127.0.0.1:8000"
TERMINAL_STATES = ("succeeded", "failed", "cancelled")

UrlOption = Annotated[
    str,
    typer.Option(
        "--url", envvar="METRO_URL", help="Base URL of the METRO API.", rich_help_panel="Server"
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="METRO_API_KEY",
        help="API key (see `metro admin create-key`).",
        show_default=False,
        rich_help_panel="Server",
    ),
]


class CliError(Exception):
    """A failure to report as one line (``error: ...``) and exit code 1."""


class ApiError(CliError):
    """An answer of the API that is not a success, with its HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(func: F) -> F:
    """Turn every failure of a command into one line on stderr and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import os

        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            exit_on_broken_pipe()
        except CliError as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted", code=130)
        except Exception as exc:  # a bug, or something unforeseen: still no traceback
            if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("metro_client"):
                _fail("the metro_client package is not installed: pip install -e clients/python")
            if os.environ.get("METRO_DEBUG"):
                raise
            _fail(f"unexpected {type(exc).__name__}: {_flat(str(exc))} (METRO_DEBUG=1 shows more)")

    return wrapper  # type: ignore[return-value]


# The exit status of a process that SIGPIPE ended, as a shell reports it (128 + 13).
BROKEN_PIPE_EXIT = 141


def exit_on_broken_pipe() -> NoReturn:
    """What Unix tools do when the reader of their output has gone (``metro predict ... | head
    -2``): stop quietly, with the status SIGPIPE gives them. Standard output now leads nowhere,
    so that Python's final flush of it cannot fail again (the Python documentation's recipe,
    under "Note on SIGPIPE"); the default SIGPIPE action is not restored, since it would also
    end the process when an HTTP connection breaks."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file behind stdout (a test's capture)
        pass
    finally:
        os.close(devnull)
    raise typer.Exit(BROKEN_PIPE_EXIT)


def _flat(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fail(message: str, code: int = 1) -> NoReturn:
    err_console.print(
        f"[bold red]error:[/] {_flat(message, 2000)}", highlight=False, soft_wrap=True
    )
    raise typer.Exit(code)


# -- talking to the API ---------------------------------------------------------------------------
def problem_message(status: int, content: bytes) -> str:
    """One line from an RFC 9457 problem body (title, detail, the fields at fault), or from
    whatever else the server (or a proxy in front of it) answered."""
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        text = content.decode("utf-8", "replace").strip()
        return f"HTTP {status}" + (f": {_flat(text, 200)}" if text else "")
    title = str(body.get("title") or f"HTTP {status}")
    parts = []
    for error in body.get("errors") or []:
        loc = [str(p) for p in error.get("loc", []) if p not in ("body", "query", "path")]
        parts.append(f"{'.'.join(loc) or 'request'}: {error.get('msg', '')}")
    detail = "; ".join(parts) if parts else str(body.get("detail") or "")
    return f"{title} ({status})" + (f": {detail}" if detail else "")


class Api:
    """The generated client, with errors raised as :class:`CliError`."""

    def __init__(self, url: str, api_key: str | None, timeout: float = 60.0) -> None:
        if not api_key:
            raise CliError(
                "no API key: pass --api-key or set METRO_API_KEY "
                "(an operator creates one with `metro admin create-key --tenant NAME`)"
            )
        try:
            import httpx
            from metro_client import AuthenticatedClient
        except ImportError:
            raise CliError(
                "the metro_client package is not installed: pip install -e clients/python"
            ) from None
        self.url = url.rstrip("/")
        self.client = AuthenticatedClient(
            base_url=self.url, token=api_key, timeout=httpx.Timeout(timeout)
        )

    def call(self, endpoint: Any, *args: Any, **kwargs: Any) -> Any:
        """``endpoint.sync_detailed(...)``; the parsed body of a 2xx answer, or a CliError."""
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
        status = int(response.status_code)
        if 200 <= status < 300 and response.parsed is not None:
            return response.parsed
        raise ApiError(problem_message(status, response.content), status)

    def job(self, job_id: str) -> Any:
        from metro_client.api.jobs import get_job

        return self.call(get_job, _uuid(job_id, "job"))

    def trace(self, job_id: str) -> list[Any]:
        from metro_client.api.jobs import get_job_trace

        return list(self._pages(get_job_trace, _uuid(job_id, "job")))

    def trace_pages(self, job_id: str, cursor: str | None) -> Iterator[tuple[Any, str | None]]:
        """The trace's steps from ``cursor`` on, each with the cursor of the page that held it
        (None on the last page)."""
        from metro_client.api.jobs import get_job_trace
        from metro_client.types import UNSET

        after: Any = UNSET if cursor is None else cursor
        while True:
            page = self.call(get_job_trace, _uuid(job_id, "job"), cursor=after, limit=200)
            next_cursor = _optional(page.next_cursor)
            for item in page.items:
                yield item, next_cursor
            if not next_cursor:
                return
            after = next_cursor

    def job_model(self, job_id: str) -> Any | None:
        from metro_client.api.models import list_models

        page = self.call(list_models, job_id=_uuid(job_id, "job"), limit=1)
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
        raise CliError(f"job {job_id} has no model: it is {job.state}{after}")

    def model(self, model_or_job: str) -> Any:
        """The model with this id or, given a job's id, the job's delivered model (the one
        `metro result` names): what `download` and `predict` act on."""
        from metro_client.api.models import get_model

        ident = _uuid(model_or_job, "model id or job")
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

    def _pages(self, endpoint: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        from metro_client.types import UNSET

        cursor: Any = UNSET
        while True:
            page = self.call(endpoint, *args, cursor=cursor, limit=200, **kwargs)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor


def _uuid(value: str, what: str) -> Any:
    import uuid

    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise CliError(f"{value!r} is not a {what} id (a UUID)") from None


def _is_unset(value: Any) -> bool:
    from metro_client.types import Unset

    return isinstance(value, Unset)


# -- upload ---------------------------------------------------------------------------------------
def _label_text(label: Any) -> str:
    """A positive label as the upload form's text field carries it: ``yes`` for the JSON string
    ``"yes"`` (not the quoted form), ``1`` for 1, ``true`` for true."""
    return label if isinstance(label, str) else json.dumps(label)


def _upload(api: Api, path: Path, label_column: str | None, positive_label: Any) -> Any:
    from metro_client.api.datasets import upload_dataset
    from metro_client.models import UploadDatasetBody
    from metro_client.types import UNSET, File

    with path.open("rb") as handle:
        body = UploadDatasetBody(
            file=File(payload=handle, file_name=path.name),
            label_column=label_column if label_column is not None else UNSET,
            positive_label=_label_text(positive_label) if positive_label is not None else UNSET,
        )
        return api.call(upload_dataset, body=body)


def check_local_dataset(
    path: Path, *, label_column: str | None, positive_label: Any, option: str = "--label-column"
) -> None:
    """Refuse, before anything is uploaded, a local file that a job could not train on: one that
    is missing or unreadable, or lacks the label column (the error lists the file's columns) or
    the positive label. The file is read with ``metro.data.load_dataset``, exactly as the
    server and its workers read it."""
    from metro.data import DataError, load_dataset

    if not path.exists():
        raise CliError(f"no such file: {path}")
    if not path.is_file():
        raise CliError(f"{path} is not a file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    label = "y" if label_column is None else label_column
    try:
        load_dataset(str(path), label_column=label, positive_label=positive_label)
    except DataError as exc:
        hint = ""
        if label_column is None and f"label column '{label}' not found" in str(exc):
            hint = f" (the default label column: name yours with {option})"
        raise CliError(f"{path}: {exc}{hint}") from None


@one_line_errors
def upload(
    path: Annotated[Path, typer.Argument(help="CSV, CSV.gz, Parquet or NPZ file.")],
    label_column: Annotated[
        str | None,
        typer.Option(help="Check now that a job can load the file with this label column."),
    ] = None,
    positive_label: Annotated[
        str | None, typer.Option(help="The positive class's label (checked with --label-column).")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Upload a dataset and print its dataset:// URI (to use in jobs)."""
    api = Api(url, api_key)
    label = None if positive_label is None else _scalar(positive_label)
    if label_column is not None:
        check_local_dataset(path, label_column=label_column, positive_label=label)
    elif not path.is_file():
        raise CliError(f"no such file: {path}")
    dataset = _upload(api, path, label_column, label)
    err_console.print(
        f"uploaded {path.name}: {dataset.n_rows} rows, {dataset.n_columns} columns, "
        f"sha256 {dataset.sha256}",
        highlight=False,
        soft_wrap=True,
    )
    typer.echo(dataset.uri)


# -- submit ---------------------------------------------------------------------------------------
def _scalar(text: str) -> Any:
    """A command-line value as JSON when it parses (numbers, true, null, lists), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read_job_file(path: str) -> dict[str, Any]:
    import sys

    import yaml

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read the job file {path}: {exc.strerror or exc}") from None
    try:
        spec = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CliError(f"the job file {path} is not valid JSON/YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise CliError(f"the job file {path} must hold an object (a mapping of fields)")
    return spec


def _set_path(spec: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = spec
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise CliError(f"--set {dotted}: {key!r} is not an object in the job")
        node = child
    node[keys[-1]] = value


def _lost_keys(sent: Any, kept: Any, path: str = "") -> list[str]:
    """Keys of ``sent`` that the generated model dropped (fields the API does not have)."""
    if not isinstance(sent, dict) or not isinstance(kept, dict):
        return []
    lost = []
    for key, value in sent.items():
        where = f"{path}{key}"
        if key not in kept:
            lost.append(where)
        else:
            lost += _lost_keys(value, kept[key], where + ".")
    return lost


def build_job(spec: dict[str, Any]) -> Any:
    """The generated ``JobCreate`` for a job spec, refusing fields the API does not know (the
    generated models would silently drop them)."""
    from metro_client import models

    for required in ("metric", "dataset"):
        if required not in spec:
            raise CliError(f"the job has no {required}: give --{required} or a job file with one")
    sections = {
        "dataset": models.DatasetRef, "surrogate": models.SurrogateSpec,
        "model": models.ModelSpec, "search": models.SearchSpec, "training": models.TrainingSpec,
    }  # fmt: skip
    failures = (KeyError, TypeError, ValueError, AttributeError)
    for key in ("metric", *sections):
        if key in spec and not isinstance(spec[key], dict):
            raise CliError(f"job field {key!r} must be an object, not {spec[key]!r}")
    if not ({"preset"} <= spec["metric"].keys() or {"alpha", "beta"} <= spec["metric"].keys()
            or {"numerator", "denominator"} <= spec["metric"].keys()):  # fmt: skip
        raise CliError(
            "job field 'metric' needs 'preset', or 'alpha' and 'beta', or 'numerator' and "
            "'denominator'"
        )
    for key, section in sections.items():  # first section by section, to name the culprit
        try:
            if key in spec:
                section.from_dict(spec[key])
        except failures as exc:
            raise CliError(f"job field {key!r}: {str(exc) or type(exc).__name__}") from None
    try:
        job = models.JobCreate.from_dict(spec)
        kept = job.to_dict()
    except failures as exc:
        raise CliError(
            f"the job does not have the API's shape: {str(exc) or type(exc).__name__}"
        ) from None
    lost = _lost_keys(spec, kept)
    if lost:
        raise CliError(f"unknown field(s) in the job: {', '.join(lost)}")
    return job


def constraint_flag(item: str, sense: str) -> dict[str, Any]:
    """The job's constraint for ``--at-least`` / ``--at-most METRIC=BOUND``, checked here by the
    library as the server will check it (a known preset, a number in the metric's range); a
    wrong one is a usage error naming the option."""
    option = "--at-least" if sense == "at_least" else "--at-most"
    metric, sep, text = item.partition("=")
    metric = metric.strip()
    if not sep or not metric or not text.strip():
        raise typer.BadParameter(f"{item!r} is not METRIC=BOUND (e.g. {option} recall=0.9)")
    try:
        bound = float(text)
    except ValueError:
        raise typer.BadParameter(f"{item!r}: the bound {text!r} is not a number") from None
    constraint = {"metric": metric, sense: bound}
    from core.job_spec import build_constraints

    try:
        build_constraints([constraint])
    except ValueError as exc:
        raise typer.BadParameter(f"{item!r}: {exc}") from None
    return constraint


def _check_constraint_flags(sense: str) -> Callable[[list[str] | None], list[str] | None]:
    def check(values: list[str] | None) -> list[str] | None:
        for item in values or []:
            constraint_flag(item, sense)
        return values

    return check


def check_job_locally(spec: dict[str, Any]) -> None:
    """The server's own validation of the job (:func:`service.job_spec.normalize_job_spec`), run
    before a local file is uploaded, so that a job the server would refuse leaves no upload
    behind. The message is the one the server would answer with."""
    import pydantic

    from core.errors import InvalidInputError
    from service.job_spec import INVALID_JOB, normalize_job_spec
    from service.schemas.jobs import JobCreate

    try:
        normalize_job_spec(JobCreate.model_validate(spec))
    except pydantic.ValidationError as exc:
        details = [
            f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}" for e in exc.errors()
        ]
        raise CliError(f"{INVALID_JOB}: {'; '.join(details)} (nothing was uploaded)") from None
    except InvalidInputError as exc:
        details = [
            f"{'.'.join(str(p) for p in e.loc if p != 'body') or 'request'}: {e.msg}"
            for e in exc.errors
        ]
        raise CliError(f"{exc.title}: {'; '.join(details)} (nothing was uploaded)") from None


@one_line_errors
def submit(
    job_file: Annotated[
        str | None,
        typer.Option(
            "--file", "-f", help="A JSON or YAML job spec ('-' reads stdin); flags override it."
        ),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            "-d",
            help="Dataset URI (dataset://, builtin://, file://, s3://, https://) or a local "
            "file, which is uploaded first.",
        ),
    ] = None,
    label_column: Annotated[str | None, typer.Option(help="The label column.")] = None,
    positive_label: Annotated[
        str | None, typer.Option(help='The positive class\'s label (JSON: 1, true, "yes").')
    ] = None,
    metric: Annotated[
        str | None, typer.Option("--metric", "-m", help="Metric preset: f1, f_beta, jaccard, ...")
    ] = None,
    beta: Annotated[float | None, typer.Option(help="beta of the f_beta metric.")] = None,
    surrogate: Annotated[str | None, typer.Option(help="Surrogate loss, e.g. logistic.")] = None,
    model: Annotated[str | None, typer.Option(help="Model kind: linear, mlp or cnn3.")] = None,
    strategy: Annotated[
        str | None, typer.Option(help="Lambda search: grid, bisection or dinkelbach.")
    ] = None,
    n_lambdas: Annotated[int | None, typer.Option(help="Grid size.")] = None,
    max_iter: Annotated[int | None, typer.Option(help="Training iterations per fit.")] = None,
    repeats: Annotated[int | None, typer.Option(help="Fresh splits to average over.")] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(help="A baseline to run too (repeatable): erm, koyejo1, koyejo2, parambath."),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    at_least: Annotated[
        list[str] | None,
        typer.Option(
            "--at-least",
            metavar="METRIC=BOUND",
            callback=_check_constraint_flags("at_least"),
            help="A floor on another metric the search must meet, e.g. recall=0.9 (repeatable; "
            "grid search only).",
        ),
    ] = None,
    at_most: Annotated[
        list[str] | None,
        typer.Option(
            "--at-most",
            metavar="METRIC=BOUND",
            callback=_check_constraint_flags("at_most"),
            help="A ceiling on another metric, e.g. false_positive_rate=0.1 (repeatable).",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="FIELD=VALUE",
            help="Any field by its dotted path, the value as JSON or text "
            "(e.g. --set search.shift=minimal). Repeatable.",
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="Retries with the same key return the same job.")
    ] = None,
    watch_: Annotated[
        bool, typer.Option("--watch", help="Then follow the job, as `metro watch` does.")
    ] = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Submit a training job and print its id."""
    from metro_client.api.jobs import submit_job
    from metro_client.types import UNSET

    spec = _read_job_file(job_file) if job_file else {}
    api = Api(url, api_key)
    flags: dict[str, Any] = {
        "dataset.label_column": label_column,
        "dataset.positive_label": None if positive_label is None else _scalar(positive_label),
        "surrogate.name": surrogate,
        "model.kind": model,
        "search.strategy": strategy,
        "search.n_lambdas": n_lambdas,
        "training.max_iter": max_iter,
        "training.seed": seed,
        "repeats": repeats,
        "baselines": baseline or None,
    }
    if metric is not None:
        spec["metric"] = {"preset": metric}
    if beta is not None:
        _set_path(spec, "metric.beta", beta)
    # A dataset without a scheme is a local file, uploaded once everything else has been checked.
    local = Path(dataset) if dataset is not None and "://" not in dataset else None
    if dataset is not None:
        _set_path(spec, "dataset.uri", "dataset://local-file" if local else dataset)
    for dotted, value in flags.items():
        if value is not None:
            _set_path(spec, dotted, value)
    for item in set_ or []:
        field, sep, value = item.partition("=")
        if not sep or not field:
            raise CliError(f"--set {item!r}: expected FIELD=VALUE")
        _set_path(spec, field.strip(), _scalar(value))
    # The flags' constraints (checked by their callbacks already) after the file's.
    flagged = [constraint_flag(v, "at_least") for v in at_least or []] + [
        constraint_flag(v, "at_most") for v in at_most or []
    ]
    if flagged:
        given = spec.setdefault("constraints", [])
        if not isinstance(given, list):
            raise CliError(f"job field 'constraints' must be a list, not {given!r}")
        given.extend(flagged)
    body = build_job(spec)
    if local is not None:
        ds = spec["dataset"]
        check_local_dataset(
            local, label_column=ds.get("label_column"), positive_label=ds.get("positive_label")
        )
        check_job_locally(spec)
        uploaded = _upload(api, local, ds.get("label_column") or "y", ds.get("positive_label"))
        err_console.print(
            f"uploaded {local.name} as {uploaded.uri}", highlight=False, soft_wrap=True
        )
        ds["uri"] = uploaded.uri
        body = build_job(spec)
    job = api.call(
        submit_job,
        body=body,
        idempotency_key=idempotency_key if idempotency_key else UNSET,
    )
    typer.echo(str(job.id))
    if watch_:
        _watch(api, str(job.id), interval=1.0, timeout=None)


# -- watch ----------------------------------------------------------------------------------------
def _choices(job_or_result: Any) -> list[Any]:
    """The repeats' choices of a job or result (none yet, or an older server: [])."""
    value = getattr(job_or_result, "choices", None)
    return [] if value is None or _is_unset(value) else list(value)


def _optional(value: Any) -> Any:
    return None if value is None or _is_unset(value) else value


def selection_label(split: str, n_folds: Any) -> str:
    """Which split a selection score was measured on, in words."""
    if split == "cross-validation":
        folds = _optional(n_folds)
        return f"{folds}-fold CV" if folds else "CV"
    return split


def selection_text(choices: list[Any], name: str) -> str | None:
    """The score the searches chose by, as `metro watch` and `metro result` both print it:
    "F2 0.9023 ± 0.0260 (5-fold CV, 3 repeats)"."""
    values = [c.selection_score for c in choices if _optional(c.selection_score) is not None]
    if not values:
        return None
    mean = math.fsum(values) / len(values)
    text = f"{name} {mean:.4f}"
    if len(values) > 1:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
        text += f" ± {std:.4f}"
    where = selection_label(str(choices[0].selection_split), choices[0].n_folds)
    repeats = f", {len(values)} repeats" if len(values) > 1 else ""
    return f"{text} ({where}{repeats})"


def choices_text(choices: list[Any]) -> str | None:
    """The delivered model's lambda and shift, each repeat's choice (labelled with its repeat)
    when there are several, and a bisection or Dinkelbach search's ratio reached, named apart:
    "trained λ -0.8333 (shift minimal) in repeat 0, the model delivered; each repeat chose:
    repeat 0 -0.8333 (minimal), repeat 1 -0.5833 (minimal)". No line starts with "model ", the
    start of the last line of `metro result`."""
    if not choices:
        return None
    first = choices[0]
    text = f"trained λ {_fmt(first.trained_lambda)} (shift {first.shift})"
    if len(choices) > 1:
        text += " in repeat 0, the model delivered; each repeat chose: " + ", ".join(
            f"repeat {c.repeat} {_fmt(c.trained_lambda)} ({c.shift})" for c in choices
        )
    reached = [_optional(c.ratio_reached) for c in choices]
    if any(r is not None for r in reached):
        labelled = len(choices) > 1
        text += "; ratio reached " + ", ".join(
            f"repeat {c.repeat} {_fmt(r)}" if labelled else _fmt(r)
            for c, r in zip(choices, reached, strict=True)
        )
    return text


def chosen_constraints_text(choices: list[Any], names: list[str]) -> str | None:
    """Under constraints, their values where each repeat's search chose and whether they held
    there: "constraints met where chosen: Recall ≥ 0.9 0.9123 (5-fold CV)"."""
    chosen = [c for c in choices if _optional(getattr(c, "constraint_values", None)) is not None]
    if not chosen or not names:
        return None
    parts = []
    for i, name in enumerate(names):
        values = ", ".join(_fmt(_optional(c.constraint_values[i]), ".4f") for c in chosen)
        parts.append(f"{name} {values}")
    met = all(_optional(c.constraints_satisfied) for c in chosen)
    where = selection_label(str(chosen[0].selection_split), chosen[0].n_folds)
    repeats = f", {len(chosen)} repeats" if len(chosen) > 1 else ""
    return (
        f"constraints {'met' if met else 'NOT met'} where chosen: "
        + "; ".join(parts)
        + f" ({where}{repeats})"
    )


def refinement_text(choices: list[Any], name: str) -> str | None:
    """The refinement step of each repeat's search, every number labelled with its repeat:
    "refinement kept (T = 0.2): F1 0.8500 -> 0.9000 (5-fold CV)" for one repeat; with several,
    "refinement kept in 1 of 3 repeats (5-fold CV): repeat 0 (the model delivered) not kept, no
    refined model beat F2 0.8883; repeat 1 kept (T = 0.2), F2 0.8500 -> 0.9000; ..."."""
    steps = [_optional(getattr(c, "refinement", None)) for c in choices]
    if not steps or steps[0] is None:
        return None
    first = choices[0]
    where = selection_label(str(first.selection_split), first.n_folds)

    def outcome(step: Any, choice: Any, sep: str) -> str:
        if step is None:
            return "did not run"
        before = _fmt(_optional(step.score_before), ".4f")
        if step.kept:
            after = _fmt(_optional(choice.selection_score), ".4f")
            return f"kept (T = {_fmt(step.temperature)}){sep} {name} {before} -> {after}"
        return f"not kept{sep} no refined model beat {name} {before}"

    if len(choices) == 1:
        return f"refinement {outcome(steps[0], first, ':')} ({where})"
    kept = sum(1 for step in steps if step is not None and step.kept)
    parts = [
        f"repeat {c.repeat}{' (the model delivered)' if i == 0 else ''} {outcome(step, c, ',')}"
        for i, (step, c) in enumerate(zip(steps, choices, strict=True))
    ]
    return f"refinement kept in {kept} of {len(choices)} repeats ({where}): " + "; ".join(parts)


def spec_constraint_names(job: Any) -> list[str]:
    """The job's constraints as people write them (Recall ≥ 0.9), from its spec."""
    spec = job.spec.to_dict() if hasattr(job.spec, "to_dict") else dict(job.spec)
    given = spec.get("constraints") or []
    return [
        constraint_label(
            str(c.get("display_name") or c.get("name")),
            given[i].get("confidence") if i < len(given) and isinstance(given[i], dict) else None,
        )
        for i, c in enumerate(spec.get("constraint_info") or [])
    ]


def warning_lines(choices: list[Any]) -> list[str]:
    """One line per warning, naming the repeat when there are several."""
    lines = []
    for c in choices:
        for w in _optional(c.warnings) or []:
            where = f"repeat {c.repeat}: " if len(choices) > 1 else ""
            lines.append(f"warning: {where}{w.message}")
    return lines


def _elapsed(job: Any) -> float:
    """Seconds the job has run (by the server's clock for a finished job)."""

    def aware(moment: datetime) -> datetime:
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

    if job.started_at is None:
        return 0.0
    end = aware(job.finished_at) if job.finished_at is not None else datetime.now(UTC)
    return max(0.0, (end - aware(job.started_at)).total_seconds())


def _folds_searched(job: Any) -> int | None:
    """The number of folds of the job's cross-validated grid (None: not a cross-validation)."""
    from metro.search.config import AUTO_CV_FOLDS

    spec = job.spec.to_dict() if hasattr(job.spec, "to_dict") else dict(job.spec)
    cv = (spec.get("search") or {}).get("cv", "auto")
    if cv == "auto":
        return AUTO_CV_FOLDS
    return int(cv) if isinstance(cv, int) and cv > 1 else None


def best_so_far_text(job: Any, steps: list[Any], name: str, greater_is_better: bool) -> str | None:
    """Before a search has chosen: the best held-out score among the trace's steps so far, named
    for what it is (one fold's held-out rows, or the validation split; not the pooled score the
    search chooses by): "best so far F1 0.9612 (fold 2 of 5, held-out)"."""
    scored = [s for s in steps if _optional(s.validation_metric) is not None]
    if not scored:
        return None
    pick = max if greater_is_better else min
    best = pick(scored, key=lambda s: float(s.validation_metric))
    fold = _optional(best.fold)
    if fold is None:
        where = "validation split"
    else:
        folds = _folds_searched(job)
        where = f"fold {fold + 1} of {folds}, held-out" if folds else f"fold {fold + 1}, held-out"
    return f"best so far {name} {float(best.validation_metric):.4f} ({where})"


class TraceFollower:
    """The job's trace, read page by page as it grows: each poll asks again from the last
    cursor it was given, so a long search is not read in full at every poll."""

    def __init__(self, api: Api, job_id: str) -> None:
        self.api = api
        self.job_id = job_id
        self.cursor: str | None = None
        self.steps: dict[tuple[int, int], Any] = {}

    def poll(self) -> list[Any]:
        for step, cursor in self.api.trace_pages(self.job_id, self.cursor):
            self.steps[(step.repeat, step.step)] = step
            self.cursor = cursor or self.cursor
        return [self.steps[k] for k in sorted(self.steps)]


def _lambda_text(job: Any) -> str:
    """The bar's lambda: the one being fitted while the job runs; once it has succeeded, the
    delivered model's trained lambda (the last step fitted may be another repeat's)."""
    if job.state == "succeeded":
        return f"trained λ {_fmt(_optional(job.best_lambda))}"
    return f"λ {_fmt(_optional(job.current_lambda))}"


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def _metric_info(job: Any) -> tuple[str, bool]:
    """The metric's display name (F2, not f_beta(2)) and its direction."""
    from metro.metrics import display_name

    spec = job.spec.to_dict() if hasattr(job.spec, "to_dict") else dict(job.spec)
    info = spec.get("metric_info") or {}
    name = info.get("display_name") or display_name(str(info.get("name", "metric")))
    return str(name), bool(info.get("greater_is_better", True))


def _watch(api: Api, job_id: str, *, interval: float, timeout: float | None) -> None:
    try:
        job = _follow(api, job_id, interval=interval, timeout=timeout)
    except KeyboardInterrupt:
        _fail(f"stopped watching; job {job_id} goes on (`metro watch {job_id}` follows it)", 130)
    if job.state == "failed":
        _fail(f"job {job_id} failed: {job.failure_reason or 'no reason recorded'}")
    if job.state == "cancelled":
        _fail(f"job {job_id} was cancelled")
    model = api.job_model(job_id)
    name, _ = _metric_info(job)
    choices = _choices(job)
    parts = [choices_text(choices) or f"trained λ {_fmt(job.best_lambda)}"]
    best = selection_text(choices, name)
    if best is not None:
        parts.append(f"best {best}")
    console.print(
        f"job {job_id} succeeded in {_elapsed(job):.1f}s: " + "; ".join(parts)
        + (f"; model {model.id}" if model is not None else ""),
        highlight=False,
        soft_wrap=True,
    )  # fmt: skip
    constrained = chosen_constraints_text(choices, spec_constraint_names(job))
    if constrained is not None:
        console.print(constrained, highlight=False, soft_wrap=True)
    for line in warning_lines(choices):
        err_console.print(line, style="yellow", highlight=False, soft_wrap=True)


def _follow(api: Api, job_id: str, *, interval: float, timeout: float | None) -> Any:
    """Poll the job until it ends and return its last state: under a live progress bar on a
    terminal; elsewhere (a pipe, a file, CI's log) as plain, complete lines, one whenever the
    state or the best score changes or the progress passes a tenth (not at every lambda: a grid
    moves through them all the time)."""
    job = api.job(job_id)
    name, greater_is_better = _metric_info(job)
    trace = TraceFollower(api, job_id)

    def best_text(job: Any) -> str:
        # "best" is what the searches chose by (the result's selection score), known per repeat
        # once its search has chosen. Before that, the best held-out score of a single step so
        # far, named apart: it is another quantity (one fold, not pooled).
        chosen = selection_text(_choices(job), name)
        if chosen is not None:
            return f"best {chosen}"
        steps = trace.poll() if job.state != "queued" else []
        return best_so_far_text(job, steps, name, greater_is_better) or "best -"

    def progress_of(job: Any) -> float:
        return 1.0 if job.state == "succeeded" else float(job.progress)

    started = time.monotonic()

    def next_poll(job: Any) -> Any:
        if timeout is not None and time.monotonic() - started > timeout:
            raise CliError(f"job {job_id} is still {job.state} after {timeout:g}s")
        time.sleep(interval)
        return api.job(job_id)

    if not console.is_terminal:
        last: tuple[str, str, int] | None = None
        while True:
            best = best_text(job)
            tenth = int(progress_of(job) * 10 + 1e-9)
            key = (job.state, best, tenth)
            if key != last:
                console.print(
                    f"{job_id[:8]} {job.state} {progress_of(job):.0%} {_lambda_text(job)} {best} "
                    f"{_elapsed(job):.1f}s",
                    highlight=False, soft_wrap=True,
                )  # fmt: skip
                last = key
            if job.state in TERMINAL_STATES:
                return job
            job = next_poll(job)

    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
    )
    from rich.text import Text

    class StateColumn(SpinnerColumn):  # a spinner while the job runs, then ✓ or ✗
        def render(self, task: Any) -> Any:
            mark = task.fields.get("mark")
            return (
                Text(mark, style="green" if mark == "✓" else "red")
                if mark
                else super().render(task)
            )

    class ElapsedColumn(ProgressColumn):  # ticks at every refresh, not only when polled
        def render(self, task: Any) -> Any:
            return Text(f"{_elapsed(task.fields['job']):.1f}s")

    columns = (
        StateColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[lam]}"),
        TextColumn("{task.fields[best]}"),
        ElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("", total=1.0, lam="λ -", best="best -", job=job, mark="")
        while True:
            progress.update(
                task,
                completed=progress_of(job),
                description=f"{job_id[:8]} {job.state}",
                lam=_lambda_text(job),
                best=best_text(job),
                job=job,
                mark="" if job.state not in TERMINAL_STATES
                else "✓" if job.state == "succeeded" else "✗",
            )  # fmt: skip
            if job.state in TERMINAL_STATES:
                return job
            try:
                job = next_poll(job)
            except CliError:
                progress.stop()
                raise


@one_line_errors
def watch(
    job: Annotated[str, typer.Argument(help="The job id.")],
    interval: Annotated[float, typer.Option(help="Seconds between polls.", min=0.1)] = 1.0,
    timeout: Annotated[
        float | None, typer.Option(help="Give up (exit 1) after this many seconds.")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Follow a job live: progress, current lambda, best metric so far, elapsed time.

    Exits 0 when the job succeeds, 1 when it fails (printing its failure reason) or is
    cancelled."""
    _watch(Api(url, api_key), job, interval=interval, timeout=timeout)


@one_line_errors
def cancel(
    job: Annotated[str, typer.Argument(help="The job id.")],
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Cancel a job: a queued one at once, a running one after its current lambda step."""
    from metro_client.api.jobs import cancel_job

    state = Api(url, api_key).call(cancel_job, _uuid(job, "job")).state
    console.print(f"job {job} is {state}", highlight=False, soft_wrap=True)


# -- result ---------------------------------------------------------------------------------------
def result_table(result: Any) -> Table:
    """Methods side by side (one column each), one row per split: mean ± std over repeats,
    the best method of each split in bold."""
    summary = list(result.summary)
    methods = list(dict.fromkeys(s.method for s in summary))
    splits = [s for s in ("validation", "test") if any(x.split == s for x in summary)]
    n = max((s.n for s in summary), default=0)
    name = _optional(getattr(result, "metric_display_name", None)) or result.metric
    title = f"{name} ({'higher' if result.greater_is_better else 'lower'} is better)"
    names = _constraint_labels(result)
    if names:
        title += f" under {', '.join(names)}"
    table = Table(
        title=title, caption=f"mean ± std over {n} repeat(s)" if n > 1 else None,
        min_width=len(title) + 4 if names else None,  # the title on one line
    )  # fmt: skip
    table.add_column("split")
    for method in methods:
        table.add_column(method, justify="right")
    for split in splits:
        cells = {s.method: s for s in summary if s.split == split}
        means = [c.mean for c in cells.values()]
        best = (max if result.greater_is_better else min)(means) if means else None
        row = [split]
        for method in methods:
            cell = cells.get(method)
            if cell is None:
                row.append("-")
                continue
            text = f"{cell.mean:.4f}"
            if cell.std is not None and not _is_unset(cell.std):
                text += f" ± {cell.std:.4f}"
            row.append(f"[bold]{text}[/]" if cell.mean == best and len(methods) > 1 else text)
        table.add_row(*row)
    return table


def _result_constraints(result: Any) -> list[Any]:
    return list(_optional(getattr(result, "constraints", None)) or [])


def constraint_label(display_name: str, confidence: Any) -> str:
    """A constraint as people write it, with the confidence it must hold at when it has one:
    "Recall ≥ 0.8 (90% confidence)"."""
    confidence = _optional(confidence)
    return (
        display_name if confidence is None else f"{display_name} ({confidence * 100:g}% confidence)"
    )


def _constraint_labels(result: Any) -> list[str]:
    return [
        constraint_label(c.display_name, getattr(c, "confidence", None))
        for c in _result_constraints(result)
    ]


def constraints_table(result: Any) -> Table | None:
    """Under constraints: each one's value per method and split (the mean over the repeats),
    and whether they all hold (in how many repeats, when there are several)."""
    constraints = _result_constraints(result)
    if not constraints:
        return None
    summary = list(result.summary)
    methods = list(dict.fromkeys(s.method for s in summary))
    splits = [s for s in ("validation", "test") if any(x.split == s for x in summary)]
    n = max((s.n for s in summary), default=0)
    table = Table(title="Constraints", caption=f"mean over {n} repeat(s)" if n > 1 else None)
    for column in ("constraint", "split"):
        table.add_column(column)
    for method in methods:
        table.add_column(method, justify="right")
    cells = {(s.method, s.split): s for s in summary}
    for i, label in enumerate(_constraint_labels(result)):
        for split in splits:
            row = [label, split]
            for method in methods:
                means = _optional(getattr(cells.get((method, split)), "constraint_means", None))
                row.append(_fmt(None if not means else _optional(means[i]), ".4f"))
            table.add_row(*row)
    for split in splits:
        row = ["all hold", split]
        for method in methods:
            cell = cells.get((method, split))
            held = None if cell is None else _optional(cell.constraints_held)
            if cell is None or held is None:
                row.append("-")
            elif cell.n == 1:
                row.append("[green]yes[/]" if held else "[red]no[/]")
            else:
                row.append(f"{held} of {cell.n}")
        table.add_row(*row)
    return table


@one_line_errors
def result(
    job: Annotated[str, typer.Argument(help="The job id.")],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the result as the API answers it (GET /v1/jobs/{id}/result), as JSON.",
        ),
    ] = False,
    model_id: Annotated[
        bool,
        typer.Option(
            "--model-id",
            help="Print only the id of the job's delivered model, for "
            "MODEL=$(metro result JOB --model-id).",
        ),
    ] = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Final metrics of a job: METRO and its baselines side by side, mean ± std per split, each
    repeat's choice, and the delivered model's id (the last line, "model <id>")."""
    from metro_client.api.jobs import get_job_result

    if as_json and model_id:
        raise CliError("--json and --model-id print different things: give one of them")
    api = Api(url, api_key)
    if model_id:
        typer.echo(str(api.delivered_model(str(_uuid(job, "job"))).id))
        return
    res = api.call(get_job_result, _uuid(job, "job"))
    if as_json:
        typer.echo(json.dumps(res.to_dict(), indent=2))
        return
    console.print(result_table(res))
    constrained = constraints_table(res)
    if constrained is not None:
        console.print(constrained)
    name = _optional(getattr(res, "metric_display_name", None)) or res.metric
    choices = _choices(res)
    chosen_by = selection_text(choices, name)
    names = _constraint_labels(res)
    for line in (
        choices_text(choices) or f"trained λ {_fmt(_optional(res.lambda_star))}",
        None if chosen_by is None else f"METRO chose by {chosen_by}",
        refinement_text(choices, name),
        chosen_constraints_text(choices, names),
    ):
        if line:
            console.print(line, highlight=False, soft_wrap=True)
    for line in warning_lines(choices):
        console.print(line, style="yellow", highlight=False, soft_wrap=True)
    model = api.job_model(job)
    if model is not None:
        console.print(f"model {model.id}", highlight=False, soft_wrap=True)


# -- download -------------------------------------------------------------------------------------
MODEL_HELP = (
    "The model id, or a job id for the job's delivered model (the one `metro result` names)."
)


@one_line_errors
def download(
    model: Annotated[str, typer.Argument(help=MODEL_HELP, metavar="MODEL_OR_JOB")],
    format_: Annotated[
        str, typer.Option("--format", help="safetensors (weights) or onnx.")
    ] = "safetensors",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write it (default: model-<id>.<format>)."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Download a model file (its SHA-256 checked against the manifest)."""
    from metro_client.api.models import download_model

    if format_ not in ("safetensors", "onnx"):
        raise CliError(f"--format must be safetensors or onnx, not {format_!r}")
    api = Api(url, api_key)
    info = api.model(model)
    model_id = info.id
    manifest = info.manifest.to_dict()
    expected = manifest.get("weights_sha256" if format_ == "safetensors" else "onnx_sha256")
    file = api.call(download_model, model_id, format_=format_)
    data = file.payload.read()
    digest = hashlib.sha256(data).hexdigest()
    if expected and digest != expected:
        raise CliError(f"the downloaded {format_} file's sha256 {digest} is not the manifest's")
    target = output or Path(f"model-{model_id}.{format_}")
    if target.is_dir():
        target = target / f"model-{model_id}.{format_}"
    try:
        target.write_bytes(data)
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from None
    console.print(
        f"wrote {target} ({len(data)} bytes, sha256 {digest})", highlight=False, soft_wrap=True
    )


# -- predict --------------------------------------------------------------------------------------
@one_line_errors
def predict(
    model: Annotated[str, typer.Argument(help=MODEL_HELP, metavar="MODEL_OR_JOB")],
    input_: Annotated[
        Path,
        typer.Option(
            "--input",
            "-i",
            help="CSV with a header row; with the model's feature names, those columns are "
            "used (others, like a label, are ignored); without, every column in order.",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help=(
                "CSV to write: margin,label per input row (margin: the model's raw h(x)); "
                "default: standard output."
            ),
            show_default=False,
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option(help="Rows per request (at most the server's limit).", min=1)
    ] = 1000,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Score the rows of a CSV file: the model's margin h(x) (unbounded, not a probability)
    and the label it gives, per row."""
    import csv

    import pandas as pd
    from metro_client.api.models import predict as predict_endpoint
    from metro_client.models import PredictRequest

    api = Api(url, api_key)
    info = api.model(model)
    model_id = info.id
    manifest = info.manifest.to_dict()
    try:
        frame = pd.read_csv(input_)
    except FileNotFoundError:
        raise CliError(f"no such file: {input_}") from None
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {input_} as CSV: {exc}") from None
    names = manifest.get("feature_names")
    if names:
        missing = [n for n in names if n not in frame.columns]
        if missing:
            raise CliError(f"{input_} lacks the model's feature column(s) {missing[:10]}")
        frame = frame[list(names)]
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):
            raise CliError(f"column {column!r} of {input_} is not numeric")
    rows = frame.to_numpy(dtype=float).tolist()
    margins: list[float] = []
    labels: list[Any] = []
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        if names:
            body = PredictRequest(columns=list(names), data=batch)
        else:
            body = PredictRequest(instances=batch)
        try:
            answer = api.call(predict_endpoint, model_id, body=body)
        except CliError as exc:
            raise CliError(f"rows {start}-{start + len(batch) - 1}: {exc}") from None
        margins += answer.margins
        labels += answer.labels

    def write(handle: Any) -> None:
        writer = csv.writer(handle)
        writer.writerow(["margin", "label"])
        writer.writerows(zip(margins, labels, strict=True))

    if output is None:  # the CSV alone on stdout, for a pipe or a redirection
        import sys

        write(sys.stdout)
        sys.stdout.flush()
        err_console.print(f"scored {len(margins)} rows", highlight=False, soft_wrap=True)
        return
    try:
        with output.open("w", newline="", encoding="utf-8") as handle:
            write(handle)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None
    err_console.print(f"scored {len(margins)} rows into {output}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    for command in (upload, submit, watch, cancel, result, download, predict):
        app.command(command.__name__, rich_help_panel="Using a server")(command)
