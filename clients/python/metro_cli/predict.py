"""``metro predict``: score the rows of a CSV file with a model, in batches, and write each
row's margin and label as CSV. The file is read with the standard library's CSV reader."""

from __future__ import annotations

import csv
import math
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from metro_cli.api import Api
from metro_cli.errors import ApiError, CliError, one_line_errors
from metro_cli.local_files import NOT_UTF8, refuse_other_separators
from metro_cli.options import DEFAULT_URL, MODEL_HELP, KeyOption, UrlOption
from metro_cli.output import note, optional

# The largest magnitude a model's float32 features hold: the server refuses a row beyond it.


def _past_float32(value: float | None) -> bool:
    """Whether the model's float32 features cannot hold ``value``: judged by rounding it to
    float32, as the server does (3.4028235e38, float32's largest as printed, is just past it in
    float64 but rounds to it)."""
    if value is None:
        return False
    try:
        return math.isinf(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return True


def _number(text: str) -> float | None:
    """A cell as a feature's value: a number, or true/false as 1/0; None for anything else."""
    word = text.strip().lower()
    if word in ("true", "false"):
        return 1.0 if word == "true" else 0.0
    # As a table for training is read: Python's float() also takes '1_000' and digits of other
    # scripts ('١٢'), which training refuses as text.
    if "_" in word or not word.isascii():
        return None
    try:
        value = float(word)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_rows(path: Path, feature_names: list[str] | None) -> list[list[float]]:
    """The rows of a CSV file with a header, as numbers: the columns named ``feature_names``
    in that order (others, like a label, are left out), or without names every column."""
    try:
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the first column's
        # name, as training reads the file (metro.datasets).
        handle = path.open(encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise CliError(f"no such file: {path}") from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        with handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise CliError(f"cannot read {path} as CSV: the file is empty")
            if feature_names:
                missing = [n for n in feature_names if n not in header]
                if missing:
                    # a name holding ';' is the model's own where the header has it
                    refuse_other_separators(path, header)
                    raise CliError(f"{path} lacks the model's feature column(s) {missing[:10]}")
                # A name given twice was read from its first column, without a word.
                twice = sorted({n for n in feature_names if header.count(n) > 1})
                if twice:
                    raise CliError(f"{path} names the feature column(s) {twice} more than once")
                indices = [header.index(n) for n in feature_names]
            else:
                # Without names the first line is still a header: a file without one lost its
                # first row, every output row then shifted against the input.
                if header and all(_number(cell) is not None for cell in header):
                    raise CliError(
                        f"the first line of {path} is numbers, not a header: the file needs a "
                        "header row (any names; the model reads its columns in order)"
                    )
                indices = list(range(len(header)))
            rows = []
            for line, record in enumerate(reader, start=2):
                if not record:
                    continue  # a blank line
                if len(record) != len(header):
                    raise CliError(
                        f"cannot read {path} as CSV: line {line} has {len(record)} fields, "
                        f"the header {len(header)}"
                    )
                values = [_number(record[i]) for i in indices]
                bad = next((i for i, v in zip(indices, values, strict=True) if v is None), None)
                if bad is not None:
                    raise CliError(
                        f"column {header[bad]!r} of {path} is not a finite number "
                        f"(line {line}: {record[bad]!r})"
                    )
                # Else the server's 422 named the row by its place in its batch.
                big = next(
                    (i for i, v in zip(indices, values, strict=True) if _past_float32(v)),
                    None,
                )
                if big is not None:
                    raise CliError(
                        f"column {header[big]!r} of {path} holds a value too large for the "
                        f"model's float32 features (line {line}: {record[big]!r})"
                    )
                rows.append([v for v in values if v is not None])
    except UnicodeDecodeError:
        raise CliError(f"cannot read {path} as CSV: {NOT_UTF8}") from None
    except csv.Error as exc:
        raise CliError(f"cannot read {path} as CSV: {exc}") from None
    return rows


@dataclass
class Scores:
    """What the model said of the rows: each row's margin and label, and for a model of
    several classes its classes and every class's margin per row (None for a binary one)."""

    margins: list[float] = field(default_factory=list)
    labels: list[Any] = field(default_factory=list)
    classes: list[Any] | None = None
    class_margins: list[list[float]] | None = None
    # The server's out_of_range notices, summed over the batches: rows outside per column
    # (by position: name, rows, training min and max), rows with any value outside, and
    # whether a batch had more such columns than its notice listed.
    outside: dict[int, list[Any]] = field(default_factory=dict)
    rows_outside: int = 0
    more_columns: bool = False

    def add_notice(self, notice: Any) -> None:
        listed = list(notice.columns)
        self.rows_outside += int(notice.n_rows)
        self.more_columns |= int(notice.n_columns) > len(listed)
        for c in listed:
            entry = self.outside.setdefault(
                int(c.index), [optional(c.column), 0, c.training_min, c.training_max]
            )
            entry[1] += int(c.rows_outside)

    def range_note(self) -> str | None:
        """One line naming the columns outside the training ranges (None: none was)."""
        if not self.outside:
            return None
        ranked = sorted(self.outside.items(), key=lambda kv: (-kv[1][1], kv[0]))
        shown = ", ".join(
            f"{name if name is not None else f'column {index}'!s} ({rows} rows; trained on "
            f"[{low:.6g}, {high:.6g}])"
            for index, (name, rows, low, high) in ranked[:_NOTED_COLUMNS]
        )
        more = len(ranked) > _NOTED_COLUMNS or self.more_columns
        return (
            f"warning: {self.rows_outside} of {len(self.margins)} rows hold values outside the "
            f"range the model was trained on: {shown}{', and more columns' if more else ''}; "
            "the model extrapolates there (a range check, not a drift test)"
        )


_NOTED_COLUMNS = 5


def score(api: Api, model_id: Any, names: list[str] | None, rows: list[list[float]],
          batch_size: int) -> Scores:  # fmt: skip
    """The model's margins and labels for ``rows``, ``batch_size`` rows per request; a batch
    the server finds too large a body (413: wide rows, images) is sent again in halves."""
    from metro_client.api.models import predict as predict_endpoint
    from metro_client.models import PredictRequest

    out = Scores()
    start, size = 0, batch_size
    while start < len(rows):
        batch = rows[start : start + size]
        if names:
            body = PredictRequest(columns=list(names), data=batch)
        else:
            body = PredictRequest(instances=batch)
        try:
            answer = api.call(predict_endpoint, model_id, body=body)
        except ApiError as exc:
            if exc.status == 413 and len(batch) > 1:
                size = len(batch) // 2
                continue
            limit = _ROW_LIMIT.search(str(exc)) if exc.status == 422 else None
            if limit is not None and 0 < int(limit[1]) < len(batch):  # the server's own limit
                size = int(limit[1])
                continue
            raise CliError(f"{_batch(start, batch)}: {exc}") from None
        except CliError as exc:
            raise CliError(f"{_batch(start, batch)}: {exc}") from None
        start += len(batch)
        out.margins += answer.margins
        out.labels += answer.labels
        classes = optional(getattr(answer, "classes", None))
        if classes is not None:
            out.classes = list(classes)
            out.class_margins = (out.class_margins or []) + list(answer.class_margins)
        notice = optional(getattr(answer, "out_of_range", None))
        if notice is not None:
            out.add_notice(notice)
    return out


# The server's words for a request of more rows than it takes (service.inference): a
# --batch-size above the limit is sent again in batches of the limit.
_ROW_LIMIT = re.compile(r"\d+ rows is more than the limit of (\d+) per request")


def _batch(start: int, batch: list[list[float]]) -> str:
    """Which rows a request held, as a reader of the file counts them (from 1, the header
    left out); the server's own row numbers count from the first of them, from 0."""
    return f"data rows {start + 1}-{start + len(batch)} (the server counts from 0 in them)"


def write_scores(handle: TextIO, scores: Scores) -> None:
    """``margin,label`` per row; a model of several classes adds a ``margin:<class>`` column
    per class, and a multi-label row's labels are joined with ``;``."""
    writer = csv.writer(handle)
    classes = scores.classes or []
    writer.writerow(["margin", "label", *(f"margin:{c}" for c in classes)])
    for i, (margin, label) in enumerate(zip(scores.margins, scores.labels, strict=True)):
        shown = ";".join(str(v) for v in label) if isinstance(label, list) else label
        per_class = scores.class_margins[i] if scores.class_margins is not None else []
        writer.writerow([margin, shown, *per_class])


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
                "CSV to write: margin,label per input row (margin: the model's raw h(x)), and "
                "margin:<class> per class for a model of several classes; default: standard "
                "output."
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
    if output is not None and not output.parent.is_dir():  # found after every batch was scored
        raise CliError(f"cannot write {output}: no such directory {output.parent}")
    api = Api(url, api_key)
    info = api.model(model)
    names = info.manifest.to_dict().get("feature_names") or None
    rows = read_rows(input_, names)
    scores = score(api, info.id, names, rows, batch_size)
    # Which label a margin >= the threshold is: the class the model's metric counted.
    labels = info.manifest.to_dict().get("labels")
    positive = (
        f"; positive label {labels['positive']!r}"
        if isinstance(labels, dict) and "positive" in labels
        else ""
    )
    outside = scores.range_note()
    if output is None:  # the CSV alone on stdout, for a pipe or a redirection
        write_scores(sys.stdout, scores)
        sys.stdout.flush()
        note(f"scored {len(scores.margins)} rows{positive}")
        if outside is not None:
            note(outside)
        return
    try:
        with output.open("w", newline="", encoding="utf-8") as handle:
            write_scores(handle, scores)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None
    note(f"scored {len(scores.margins)} rows into {output}{positive}")
    if outside is not None:
        note(outside)
