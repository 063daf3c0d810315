"""``metro jobs``, ``metro datasets`` and ``metro models`` (what this tenant has, newest first,
one line each) and ``metro delete`` (an upload it no longer needs)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import typer
from rich.table import Table

from metro_cli.api import Api, parse_uuid
from metro_cli.choices import metric_info
from metro_cli.errors import ApiError, CliError, one_line_errors
from metro_cli.options import DEFAULT_URL, KeyOption, UrlOption
from metro_cli.output import console, fmt, note, optional, say

# The job states, as the API names them (GET /v1/jobs?state=...).
JOB_STATES = ("queued", "running", "cancelling", "succeeded", "failed", "cancelled")

LimitOption = Annotated[
    int, typer.Option("--limit", "-n", min=1, max=10_000, help="Show at most this many.")
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print the items as the API answers them, as JSON lines.")
]


def pages(api: Api, endpoint: Any, limit: int, **query: Any) -> Iterator[Any]:
    """The items of a list endpoint, newest first, following its cursors up to ``limit``."""
    from metro_client.types import UNSET

    cursor: Any = UNSET
    given = 0
    while given < limit:
        page = api.call(endpoint, cursor=cursor, limit=min(limit - given, 200), **query)
        for item in page.items[: limit - given]:
            given += 1
            yield item
        cursor = optional(page.next_cursor)
        if not cursor:
            return


def _when(stamp: Any) -> str:
    return stamp.strftime("%Y-%m-%d %H:%M") if stamp is not None else "-"


def _size(n_bytes: int) -> str:
    if n_bytes < 1024:
        return f"{n_bytes} B"
    size = n_bytes / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _show(items: list[Any], as_json: bool, table: Callable[[list[Any]], Table], noun: str) -> None:
    if as_json:
        for item in items:
            say(json.dumps(item.to_dict()))
        return
    if not items:
        note(f"no {noun}")
        return
    print_whole(table(items))


def print_whole(table: Table) -> None:
    """A table at its natural width, each row on one line even where the terminal is narrower
    (the terminal wraps it; a pipe gets it whole): fitted to 80 columns, rich cut numbers and
    states short ("succ…", "-0.8…") and folded URIs over many lines."""
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    width = console.width
    console.width = max(width, natural)  # print's own width argument cannot exceed it
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


# An id or URI column is never cut short (rich shrank it to "aa497af1-17…" in 80 columns, which
# no command takes): the other columns wrap instead.
_UUID = 36
_ID_WIDTHS = {"job": _UUID, "model": _UUID, "dataset": len("dataset://") + _UUID}


def _add_columns(table: Table, columns: tuple[str, ...], numbers: tuple[str, ...]) -> None:
    for i, column in enumerate(columns):
        width = _ID_WIDTHS.get(column) if i == 0 else None
        table.add_column(
            column,
            justify="right" if column in numbers else "left",
            no_wrap=width is not None,
            min_width=width,
        )


def jobs_table(items: list[Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    _add_columns(
        table,
        ("job", "state", "progress", "metric", "trained λ", "dataset", "created"),
        ("progress", "trained λ"),
    )
    for job in items:
        name, _ = metric_info(job)
        state = str(job.state)
        if state == "failed" and optional(job.failure_reason):
            state += f": {str(job.failure_reason).splitlines()[0][:60]}"
        table.add_row(
            str(job.id), state, f"{100 * job.progress:.0f}%", name, fmt(job.best_lambda),
            job.dataset_uri, _when(job.created_at),
        )  # fmt: skip
    return table


def datasets_table(items: list[Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    _add_columns(
        table,
        ("dataset", "file", "rows", "columns", "size", "label column", "created"),
        ("rows", "columns", "size"),
    )
    for ds in items:
        table.add_row(
            ds.uri, ds.filename, fmt(optional(ds.n_rows), "d"), fmt(optional(ds.n_columns), "d"),
            _size(ds.size_bytes), optional(ds.label_column) or "-", _when(ds.created_at),
        )  # fmt: skip
    return table


def models_table(items: list[Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    numbers = ("trained λ", "tuned threshold")
    _add_columns(table, ("model", "job", "metric", *numbers, "formats", "created"), numbers)
    for model in items:
        manifest = model.manifest.to_dict()
        metric = manifest.get("metric") or {}
        table.add_row(
            str(model.id), str(optional(model.job_id) or "-"),
            str(metric.get("display_name") or metric.get("name") or "-"),
            # The threshold chosen with λ (folded into the model, whose own is 0), as the
            # dashboard's "Threshold" shows it.
            fmt(manifest.get("trained_lambda")), fmt(manifest.get("tuned_threshold")),
            ", ".join(str(f) for f in model.formats), _when(model.created_at),
        )  # fmt: skip
    return table


@one_line_errors
def jobs(
    state: Annotated[
        str | None,
        typer.Option(help=f"Only jobs in this state: {', '.join(JOB_STATES)}."),
    ] = None,
    limit: LimitOption = 20,
    as_json: JsonOption = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """This tenant's jobs, newest first: state, progress, metric, trained λ and dataset."""
    from metro_client.api.jobs import list_jobs
    from metro_client.types import UNSET

    if state is not None and state.lower() not in JOB_STATES:
        raise CliError(f"--state {state!r}: one of {', '.join(JOB_STATES)}")
    api = Api(url, api_key)
    found = list(pages(api, list_jobs, limit, state=state.lower() if state else UNSET))
    _show(found, as_json, jobs_table, "jobs" + (f" in state {state.lower()}" if state else ""))


@one_line_errors
def datasets(
    limit: LimitOption = 20,
    as_json: JsonOption = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """This tenant's uploaded datasets, newest first: URI, file, shape and size."""
    from metro_client.api.datasets import list_datasets

    api = Api(url, api_key)
    _show(list(pages(api, list_datasets, limit)), as_json, datasets_table, "datasets")


@one_line_errors
def models(
    job: Annotated[str | None, typer.Option(help="Only the model of this job.")] = None,
    limit: LimitOption = 20,
    as_json: JsonOption = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """This tenant's trained models, newest first: job, metric, trained λ, tuned threshold and
    formats."""
    from metro_client.api.models import list_models
    from metro_client.types import UNSET

    api = Api(url, api_key)
    job_id = parse_uuid(job, "job") if job is not None else UNSET
    _show(list(pages(api, list_models, limit, job_id=job_id)), as_json, models_table, "models")


@one_line_errors
def delete(
    target: Annotated[
        str,
        typer.Argument(
            help="A dataset's dataset:// URI, or the id of a job, a model or a dataset.",
            metavar="TARGET",
        ),
    ],
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Delete an uploaded dataset (its bytes go with the last dataset that holds them; refused
    while a queued or running job will read it), a finished job with all it produced (its
    trace, results and models; a queued or running one is refused: cancel it first), or a
    model. An id is looked up as a job's, then a model's, then a dataset's."""
    from metro_client.api.datasets import delete_dataset
    from metro_client.api.jobs import delete_job
    from metro_client.api.models import delete_model

    api = Api(url, api_key)
    given = target.strip()
    if given.startswith("dataset://"):
        ident = parse_uuid(given.removeprefix("dataset://"), "dataset")
        api.call(delete_dataset, ident)
        note(f"deleted dataset://{ident}")
        return
    ident = parse_uuid(given, "job, model or dataset")
    for what, endpoint in (("job", delete_job), ("model", delete_model)):
        try:
            api.call(endpoint, ident)
        except ApiError as exc:
            if exc.status == 409 and what == "job":  # the API's words name its cancel route
                raise ApiError(
                    f"job {ident} is not finished: cancel it first (`metro cancel {ident}`), "
                    "then delete it",
                    409,
                    exc.problem,
                ) from None
            if exc.status != 404:
                raise
            continue
        note(f"deleted {what} {ident}")
        return
    try:
        api.call(delete_dataset, ident)
    except ApiError as exc:
        if exc.status != 404:
            raise
        raise ApiError(f"no job, model or dataset {ident}", 404) from None
    note(f"deleted dataset://{ident}")
