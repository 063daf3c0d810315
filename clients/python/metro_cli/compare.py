"""``metro compare JOB_A JOB_B``: two finished jobs side by side (last month's model and this
month's): their metric, data, positive label, λ, threshold, and the metric per method and split,
with METRO's difference on test where the two measured the same metric. The numbers are the
ones `metro result` prints (its helpers name the splits and methods)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from metro_cli.api import TERMINAL_STATES, Api, parse_uuid
from metro_cli.choices import job_choices, result_constraint_names, spec_of
from metro_cli.errors import ApiError, CliError, one_line_errors
from metro_cli.options import DEFAULT_URL, KeyOption, UrlOption
from metro_cli.output import console, fmt, optional, say
from metro_cli.result import IN_SAMPLE_NOTE, method_name, split_name

SPLITS = ("validation", "test")


def _label(value: Any) -> Any:
    """A label as JSON holds it (a generated model's union field is already a plain value)."""
    return optional(value)


def _dataset_of(api: Api, uri: str) -> Any | None:
    """The upload a ``dataset://<id>`` URI names, for its file name and rows; None for another
    kind of URI, or an upload deleted since (the job's data_sha256 still names its data)."""
    from metro_client.api.datasets import get_dataset

    if not uri.startswith("dataset://"):
        return None
    try:
        return api.call(get_dataset, parse_uuid(uri.removeprefix("dataset://"), "dataset"))
    except ApiError as exc:
        if exc.status != 404:
            raise
        return None


def _finished_result(api: Api, which: str, job_id: str) -> tuple[Any, Any]:
    """The job and its result, or a one-line CliError naming the job (A or B) and its state."""
    from metro_client.api.jobs import get_job_result

    try:
        job = api.job(job_id)
    except ApiError as exc:
        # Another tenant's job is a 404 as a missing one: both are "not found" here.
        raise CliError(f"job {which} ({job_id}): {exc}") from None
    state = str(job.state)
    if state != "succeeded":
        reason = optional(job.failure_reason) if state == "failed" else None
        why = f": {str(reason).splitlines()[0]}" if reason else ""
        follow = f" (`metro watch {job_id}` follows it)" if state not in TERMINAL_STATES else ""
        raise CliError(
            f"job {which} ({job_id}) is {state}, not succeeded{why}{follow}: it has no result"
        )
    try:
        return job, api.call(get_job_result, parse_uuid(job_id, "job"))
    except ApiError as exc:
        raise CliError(f"job {which} ({job_id}) has no result: {exc}") from None


def _test_rows(result: Any) -> int | None:
    """Rows of repeat 0's test split (METRO's confusion counts there); None for an averaged
    job, whose own figure's counts are not rows."""
    if optional(getattr(result, "classes", None)):
        return None
    for run in optional(getattr(result, "runs", None)) or []:
        own = optional(getattr(run, "class_index", None)) is None
        if own and run.method == "metro" and run.split == "test" and run.repeat == 0:
            c = run.confusion
            return int(c.tp + c.fp + c.fn + c.tn)
    return None


def job_fields(job: Any, result: Any, model: Any | None, dataset: Any | None) -> dict[str, Any]:
    """What `metro compare` shows of one job, as its --json gives it (numbers unrounded)."""
    manifest = model.manifest.to_dict() if model is not None else {}
    labels = optional(getattr(result, "labels", None))
    spec_dataset = spec_of(job).get("dataset") or {}
    choices = job_choices(result)
    averaged = bool(optional(getattr(result, "classes", None)))
    threshold = manifest.get("tuned_threshold")
    if threshold is None and choices and not averaged:
        threshold = optional(choices[0].tuned_threshold)
    scores: dict[str, Any] = {}
    for s in result.summary:
        entry = scores.setdefault(s.method, {"name": method_name(result, s.method)})
        entry[s.split] = {"mean": s.mean, "std": optional(s.std), "repeats": s.n}
    return {
        "job_id": str(job.id),
        "state": str(job.state),
        "metric": result.metric,
        "metric_display_name": optional(result.metric_display_name) or result.metric,
        "average": optional(getattr(result, "average", None)),
        "greater_is_better": bool(result.greater_is_better),
        "constraints": result_constraint_names(result),
        "dataset_uri": job.dataset_uri,
        "dataset_filename": None if dataset is None else dataset.filename,
        "data_sha256": optional(job.data_sha256) or manifest.get("data_sha256"),
        "n_rows": None if dataset is None else optional(dataset.n_rows),
        "n_test_rows": _test_rows(result),
        "positive_label": _label(labels.positive)
        if labels is not None
        else spec_dataset.get("positive_label"),
        "negative_label": None if labels is None else _label(labels.negative),
        "lambda_star": optional(result.lambda_star),
        "trained_lambda": optional(result.trained_lambda),
        "tuned_threshold": threshold,
        "validation_in_sample": bool(optional(getattr(result, "validation_in_sample", None))),
        "scores": scores,
        "model_id": None if model is None else str(model.id),
    }


def comparison(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Both jobs' fields, whether they measured the same metric on the same data, and METRO's
    test difference B - A (null where the metrics differ: a difference of two metrics' values
    means nothing)."""
    # The display name too: one machine name scores the same counts differently under another
    # zero_division or a weighted accuracy's other costs, and only the display name says so.
    keys = ("metric", "metric_display_name", "average", "greater_is_better")
    same_metric = all(a[k] == b[k] for k in keys)
    digests = (a["data_sha256"], b["data_sha256"])
    same_data = None if None in digests else digests[0] == digests[1]
    tests = [(x["scores"].get("metro") or {}).get("test") for x in (a, b)]
    difference = (
        tests[1]["mean"] - tests[0]["mean"] if same_metric and None not in tests else None  # type: ignore[index]
    )
    return {
        "a": a,
        "b": b,
        "same_metric": same_metric,
        # a floor changes the problem METRO solved: its objective is not free to rise past it
        "same_constraints": a["constraints"] == b["constraints"],
        "same_data": same_data,
        "same_positive_label": a["positive_label"] == b["positive_label"],
        "metro_test_difference": difference,
    }


def _score_text(cell: dict[str, Any] | None) -> str:
    """A mean ± std as `metro result`'s table prints it."""
    if cell is None:
        return "-"
    text = f"{cell['mean']:.4f}"
    if cell["std"] is not None:
        text += f" ± {cell['std']:.4f}"
    return text


def _dataset_text(fields: dict[str, Any]) -> str:
    name = fields["dataset_filename"]
    return fields["dataset_uri"] + (f" ({name})" if name else "")


def comparison_table(both: dict[str, Any], results: tuple[Any, Any]) -> Table:
    a, b = both["a"], both["b"]
    table = Table(title="Job A and job B")
    table.add_column("")
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")

    def row(name: str, key: Any) -> None:
        table.add_row(name, *(key(x) for x in (a, b)))

    row("job", lambda x: x["job_id"])
    row("metric", lambda x: x["metric_display_name"])
    row("constraints", lambda x: ", ".join(x["constraints"]) or "-")
    row("dataset", _dataset_text)
    # the digest's start tells two apart; --json gives it whole
    row("data_sha256", lambda x: f"{x['data_sha256'][:16]}…" if x["data_sha256"] else "-")
    row("rows", lambda x: fmt(x["n_rows"], "d"))
    row("test rows (repeat 0)", lambda x: fmt(x["n_test_rows"], "d"))
    row(
        "positive label",
        lambda x: "-" if x["positive_label"] is None else repr(x["positive_label"]),
    )
    row("λ* (lambda_star)", lambda x: fmt(x["lambda_star"]))
    row("trained λ", lambda x: fmt(x["trained_lambda"]))
    row("tuned threshold", lambda x: fmt(x["tuned_threshold"]))
    methods = list(dict.fromkeys([*a["scores"], *b["scores"]]))
    for method in methods:
        for split in SPLITS:
            cells = [x["scores"].get(method, {}).get(split) for x in (a, b)]
            if cells == [None, None]:
                continue
            name = next(x["scores"][method]["name"] for x in (a, b) if method in x["scores"])
            # A's and B's split named alike (one may be in-sample, the other not)
            where = {split_name(res, split) for res in results}
            label = " / ".join(sorted(where)) if len(where) > 1 else where.pop()
            table.add_row(f"{name} {label}", *(_score_text(cell) for cell in cells))
    return table


def verdict_lines(both: dict[str, Any]) -> list[str]:
    """Same metric, same data, same positive label, and METRO's difference on test, in words."""
    a, b = both["a"], both["b"]
    lines = []
    if both["same_metric"]:
        lines.append(f"same metric: {a['metric_display_name']}")
    else:
        lines.append(
            f"DIFFERENT metrics: A measured {a['metric_display_name']}, B "
            f"{b['metric_display_name']}: their values are not comparable, no difference shown"
        )
    if both["same_constraints"]:
        if a["constraints"]:
            lines.append(f"same constraints: {', '.join(a['constraints'])}")
    else:
        under = [", ".join(x["constraints"]) or "none" for x in (a, b)]
        lines.append(
            f"DIFFERENT constraints: A has {under[0]}, B {under[1]}: their scores answer two "
            "different problems"
        )
    if both["same_data"] is None:
        missing = " and ".join(w for w, x in (("A", a), ("B", b)) if x["data_sha256"] is None)
        lines.append(f"same data: unknown (no data_sha256 for job {missing})")
    else:
        lines.append("same data: yes (equal data_sha256)" if both["same_data"]
                     else "DIFFERENT data: the data_sha256 differ")  # fmt: skip
    if not both["same_positive_label"]:
        lines.append(
            f"DIFFERENT positive labels: A counts {a['positive_label']!r}, B "
            f"{b['positive_label']!r} as positive"
        )
    difference = both["metro_test_difference"]
    if difference is not None:
        better = difference > 0 if a["greater_is_better"] else difference < 0
        word = "B better" if better else "B worse" if difference != 0 else "equal"
        direction = "higher" if a["greater_is_better"] else "lower"
        lines.append(
            f"METRO on test, B - A: {difference:+.4f} {a['metric_display_name']} "
            f"({word}; {direction} is better)"
        )
    if a["validation_in_sample"] or b["validation_in_sample"]:
        lines.append(IN_SAMPLE_NOTE)
    return lines


@one_line_errors
def compare(
    job_a: Annotated[str, typer.Argument(help="Job A: the earlier job (last month's).")],
    job_b: Annotated[str, typer.Argument(help="Job B: the later job (this month's).")],
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the comparison as JSON, numbers unrounded."),
    ] = False,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Two finished jobs side by side: metric, data (data_sha256), rows, positive label, λ,
    threshold, the metric per method on validation and test, and METRO's test difference B - A
    where both measured the same metric."""
    for which, job in (("A", job_a), ("B", job_b)):
        parse_uuid(job, f"job {which}")
    api = Api(url, api_key)
    fields, results = [], []
    for which, job_id in (("A", job_a.strip()), ("B", job_b.strip())):
        job, res = _finished_result(api, which, job_id)
        model = api.job_model(job_id)
        fields.append(job_fields(job, res, model, _dataset_of(api, str(job.dataset_uri))))
        results.append(res)
    both = comparison(fields[0], fields[1])
    if as_json:
        typer.echo(json.dumps(both, indent=2, default=str))
        return
    console.print(comparison_table(both, (results[0], results[1])))
    for line in verdict_lines(both):
        say(line)
