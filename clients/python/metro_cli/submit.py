"""``metro submit``: a job from flags and/or a job file; a local data file is checked, uploaded,
and taken back if the server refuses the job, so a refused submission leaves no upload behind."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from metro_cli.api import Api
from metro_cli.errors import ApiError, one_line_errors
from metro_cli.job_spec import (
    build_job,
    check_constraint_flags,
    read_job_file,
    scalar,
    spec_from_command_line,
)
from metro_cli.local_files import DEFAULT_LABEL_COLUMN, check_local_dataset
from metro_cli.options import DEFAULT_URL, KeyOption, UrlOption
from metro_cli.output import note, optional
from metro_cli.progress import waiting_text
from metro_cli.spec_flags import spec_values, with_spec_flags
from metro_cli.upload import column_list, delete_upload, upload_file
from metro_cli.watch import watch_job

# The dataset URI of a job whose data is a local file, until the file is uploaded.
_LOCAL_FILE = "dataset://local-file"


def local_file(dataset: str | None) -> Path | None:
    """The local file a --dataset names (one without a scheme), else None."""
    return Path(dataset) if dataset is not None and "://" not in dataset else None


def _with_upload_hint(exc: ApiError, spec: dict[str, Any]) -> ApiError:
    """A job file's dataset URI without a scheme is a path on the server (read only under its
    data roots); where it names a file here, the refusal says how to upload it instead."""
    uri = str((spec.get("dataset") or {}).get("uri") or "")
    about_the_uri = "dataset.uri" in str(exc)  # the 422's summary names its fields
    if exc.status != 422 or not about_the_uri or "://" in uri or not uri or not Path(uri).is_file():
        return exc
    return ApiError(
        f"{exc} ({uri} is a file on this machine: give it with --dataset {uri}, which uploads "
        "it; a job's dataset.uri without a scheme is a path on the server)",
        exc.status,
        exc.problem,
    )


def submit_job(api: Api, body: Any, idempotency_key: str | None) -> Any:
    from metro_client.api.jobs import submit_job as endpoint
    from metro_client.types import UNSET

    return api.call(endpoint, body=body, idempotency_key=idempotency_key or UNSET)


def submit_with_upload(
    api: Api, spec: dict[str, Any], path: Path, idempotency_key: str | None
) -> Any:
    """Check ``path`` here, upload it, and submit the job on it; when the server refuses the job
    (a 4xx: no job was made), delete the upload again. With an ``idempotency_key``, an upload
    of the same bytes already on the server is tried first, so that running the command again
    submits the same job (a new upload is a new dataset:// URI: another job's spec, which the
    key then refused as "a different job submission")."""
    ds = spec["dataset"]
    label_column, positive_label = ds.get("label_column"), ds.get("positive_label")
    label_columns = ds.get("label_columns")
    ignored = ds.get("ignore_columns")
    if label_columns:  # multi-label: each 0/1 column must be there; the upload reads them
        check_local_dataset(
            path, label_column=None, label_columns=label_columns, positive_label=None,
            ignore_columns=ignored,
        )  # fmt: skip
        checked_with, positive = None, None
    elif (spec.get("metric") or {}).get("average") is not None:
        # Averaged over the column's classes: the upload's check, which reads a two-class
        # column as binary and asks which class is positive, does not apply.
        check_local_dataset(
            path, label_column=label_column, positive_label=None, ignore_columns=ignored
        )
        checked_with, positive = None, None
    else:
        check_local_dataset(
            path, label_column=label_column, positive_label=positive_label, ignore_columns=ignored
        )
        checked_with, positive = label_column or DEFAULT_LABEL_COLUMN, positive_label
    if idempotency_key:
        for earlier in same_uploads(api, path, checked_with, label_columns or None):
            ds["uri"] = earlier.uri
            try:
                job = submit_job(api, build_job(spec), idempotency_key)
            except ApiError as exc:
                if exc.problem == "idempotency-key-reused":  # the key went with another one
                    continue
                raise
            note(f"took {path.name} as {earlier.uri}, an upload of the same bytes")
            return job
    dataset = upload_file(api, path, checked_with, positive, ignored, label_columns or None)
    ds["uri"] = dataset.uri
    try:
        job = submit_job(api, build_job(spec), idempotency_key)
    except ApiError as exc:
        if not 400 <= exc.status < 500:
            raise
        failed = delete_upload(api, dataset)
        after = (
            "its upload was deleted, nothing is left on the server"
            if failed is None
            else f"deleting its upload {dataset.uri} failed: {failed}"
        )
        raise ApiError(f"{exc} ({after})", exc.status, exc.problem) from None
    note(f"uploaded {path.name} as {dataset.uri}")
    return job


# At most this many earlier uploads of the same bytes are tried, newest first.
_SAME_UPLOADS = 20


def same_uploads(
    api: Api, path: Path, label_column: str | None, label_columns: list[str] | None = None
) -> list[Any]:
    """The uploads of ``path``'s bytes already on the server, checked with the same label
    column (or label columns), newest first."""
    import hashlib

    from metro_client.api.datasets import list_datasets

    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return []  # the upload says why
    page = api.call(list_datasets, sha256=digest.hexdigest(), limit=_SAME_UPLOADS)
    return [
        d
        for d in page.items
        if optional(d.label_column) == label_column
        # a multi-label upload checked with these columns, or made before uploads were
        # checked so (by an older client, or on an older server): the same bytes either way
        and (optional(d.label_columns) or None) in (None, label_columns)
    ]


@with_spec_flags
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
    label_column: Annotated[
        str | None,
        typer.Option(help="The label column: two classes, or several with --average."),
    ] = None,
    label_columns: Annotated[
        str | None,
        typer.Option(
            metavar="A,B,...",
            help="Multi-label data: the 0/1 label columns, comma-separated (with --average).",
        ),
    ] = None,
    positive_label: Annotated[
        str | None, typer.Option(help='The positive class\'s label (JSON: 1, true, "yes").')
    ] = None,
    ignore_columns: Annotated[
        str | None,
        typer.Option(
            metavar="A,B,...",
            help="Columns that are not features (an id, a note, text), comma-separated (a name "
            "holding a comma quoted: '\"Amount, EUR\",id'): left out of training. Without it "
            "every column but the label is a feature.",
        ),
    ] = None,
    at_least: Annotated[
        list[str] | None,
        typer.Option(
            "--at-least",
            metavar="METRIC[(PARAM=VALUE)]=BOUND[@CONFIDENCE]",
            callback=check_constraint_flags("at_least"),
            help="A floor on another metric the search must meet, e.g. recall=0.9; "
            "recall=0.9@0.95 asks it to hold with 95% confidence on new data; "
            "precision(zero_division=1)=0.7 counts flagging nothing as meeting it (repeatable; "
            "grid search only).",
        ),
    ] = None,
    at_most: Annotated[
        list[str] | None,
        typer.Option(
            "--at-most",
            metavar="METRIC[(PARAM=VALUE)]=BOUND[@CONFIDENCE]",
            callback=check_constraint_flags("at_most"),
            help="A ceiling on another metric, e.g. false_positive_rate=0.1, or "
            "false_positive_rate=0.1@0.9 with 90% confidence (repeatable).",
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
        str | None,
        typer.Option(
            help="Retries with the same key return the same job (a local --dataset file is "
            "then not uploaded again where the server holds its bytes)."
        ),
    ] = None,
    watch_: Annotated[
        bool, typer.Option("--watch", help="Then follow the job, as `metro watch` does.")
    ] = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
    **spec_flags: Any,
) -> None:
    """Submit a training job and print its id.

    The job is the job file (--file) with the flags on top. Each setting of the job has a flag
    (the panels below, from the API's document); --set reaches any field by its path.
    """
    spec = read_job_file(job_file) if job_file else {}
    api = Api(url, api_key)
    local = local_file(dataset)
    dataset_flags: dict[str, Any] = {  # None: not given
        "dataset.uri": _LOCAL_FILE if local is not None else dataset,
        "dataset.label_column": label_column,
        "dataset.label_columns": column_list(label_columns),
        "dataset.positive_label": None if positive_label is None else scalar(positive_label),
        "dataset.ignore_columns": column_list(ignore_columns),
    }
    flags = {
        **{path: value for path, value in dataset_flags.items() if value is not None},
        **spec_values(spec_flags),  # the flags given, an explicit null (`--cv null`) among them
    }
    spec = spec_from_command_line(spec, flags, set_ or [], at_least or [], at_most or [])
    body = build_job(spec)  # the API's shape, checked before a file goes up
    if local is None:
        try:
            job = submit_job(api, body, idempotency_key)
        except ApiError as exc:
            raise _with_upload_hint(exc, spec) from None
    else:
        job = submit_with_upload(api, spec, local, idempotency_key)
    typer.echo(str(job.id))
    if watch_:
        watch_job(api, str(job.id), interval=1.0, timeout=None)  # says it, as it waits
    elif (waiting := waiting_text(job)) is not None:
        note(f"waiting: {waiting}", style="yellow")
