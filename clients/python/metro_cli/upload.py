"""Uploading a local data file (``metro upload``, and ``metro submit`` given a local file), and
taking an upload back when the job it was made for is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from metro_cli.api import Api
from metro_cli.errors import CliError, one_line_errors
from metro_cli.job_spec import scalar
from metro_cli.local_files import check_local_dataset, check_readable
from metro_cli.options import DEFAULT_URL, KeyOption, UrlOption
from metro_cli.output import note, optional


def label_text(label: Any) -> str:
    """A positive label as the upload form's text field carries it: ``yes`` for the JSON string
    ``"yes"`` (not the quoted form), ``1`` for 1, ``true`` for true."""
    return label if isinstance(label, str) else json.dumps(label)


def upload_file(
    api: Api,
    path: Path,
    label_column: str | None,
    positive_label: Any,
    ignore_columns: list[str] | None = None,
    label_columns: list[str] | None = None,
) -> Any:
    """``POST /v1/datasets``: the server keeps the file only if it can load it with
    ``label_column`` (and find ``positive_label``), or with the 0/1 ``label_columns`` of a
    multi-label job, its ``ignore_columns`` left out of the features; the new dataset, whose
    check's warnings are noted on stderr."""
    from metro_client.api.datasets import upload_dataset
    from metro_client.models import UploadDatasetBody
    from metro_client.types import UNSET, File

    checked = label_column is not None or bool(label_columns)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        body = UploadDatasetBody(
            file=File(payload=handle, file_name=path.name),
            label_column=label_column if label_column is not None else UNSET,
            positive_label=label_text(positive_label) if positive_label is not None else UNSET,
            ignore_columns=ignore_columns if ignore_columns and checked else UNSET,
            label_columns=label_columns if label_columns else UNSET,
        )
        dataset = api.call(upload_dataset, body=body)
    if label_columns and not optional(dataset.label_columns):
        # An older server takes the upload without reading the field: nothing was checked.
        note(
            f"warning: {path.name}: the server did not check the label columns (it predates "
            "that check); a job on them is checked when a worker loads the file"
        )
    for warning in optional(dataset.warnings) or []:
        note(f"warning: {path.name}: {warning.code}: {warning.message}")
    return dataset


def column_list(text: str | None) -> list[str] | None:
    """Comma-separated column names (``A,B``), read as a CSV line is, so that a name holding a
    comma is given quoted (``'"Amount, EUR",id'``); None when not given."""
    if text is None:
        return None
    import csv

    fields = next(csv.reader([text], skipinitialspace=True), [])
    return [c.strip() for c in fields if c.strip()]


def delete_upload(api: Api, dataset: Any) -> str | None:
    """Delete a dataset this command uploaded (its bytes go only if no other dataset holds
    them); None when done, else why not, in a few words."""
    from metro_client.api.datasets import delete_dataset

    try:
        api.call(delete_dataset, dataset.id)
    except CliError as exc:
        return str(exc)
    return None


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
    ignore_columns: Annotated[
        str | None,
        typer.Option(
            metavar="A,B,...",
            help="Columns that are not features (an id, text), comma-separated (a name holding a "
            "comma quoted): left out of the check with --label-column, as a job's "
            "--ignore-columns leaves them out.",
        ),
    ] = None,
    label_columns: Annotated[
        str | None,
        typer.Option(
            metavar="A,B,...",
            help="Instead of --label-column: check now that a multi-label job can load the file "
            "with these 0/1 label columns, comma-separated.",
        ),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Upload a dataset and print its dataset:// URI (to use in jobs)."""
    labels = column_list(label_columns)
    if labels is not None and label_column is not None:
        raise CliError("give --label-column (one) or --label-columns (several 0/1 ones), not both")
    if positive_label is not None and label_column is None:
        raise CliError("--positive-label is checked against --label-column: give both")
    ignored = column_list(ignore_columns)
    if ignored and label_column is None and not labels:
        raise CliError("--ignore-columns is checked with --label-column: give both")
    api = Api(url, api_key)
    label = None if positive_label is None else scalar(positive_label)
    if labels:
        check_local_dataset(
            path, label_column=None, label_columns=labels, positive_label=None,
            ignore_columns=ignored,
        )  # fmt: skip
    elif label_column is not None:
        check_local_dataset(
            path, label_column=label_column, positive_label=label, ignore_columns=ignored
        )
    else:
        check_readable(path)
    dataset = upload_file(api, path, label_column, label, ignored, labels)
    note(
        f"uploaded {path.name}: {dataset.n_rows} rows, {dataset.n_columns} columns, "
        f"sha256 {dataset.sha256}"
    )
    typer.echo(dataset.uri)
