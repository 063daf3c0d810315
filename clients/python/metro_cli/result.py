"""``metro result``: a finished job's metrics, METRO and its baselines side by side, what its
searches chose, and the delivered model's id."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from metro_cli.api import Api, parse_uuid
from metro_cli.choices import (
    averaged_selection_text,
    choices_text,
    chosen_constraints_text,
    fallback_lines,
    job_choices,
    notice_lines,
    refinement_text,
    result_constraint_names,
    selection_text,
    target_word,
    warning_lines,
)
from metro_cli.errors import CliError, one_line_errors
from metro_cli.options import DEFAULT_URL, KeyOption, UrlOption
from metro_cli.output import console, fmt, note, optional, say


def method_name(result: Any, method: str) -> str:
    """The method as the result names it for people (its method_names: METRO, Parambath et
    al.), as the dashboard does; the code where the server gives none."""
    names = optional(getattr(result, "method_names", None))
    given = getattr(names, "additional_properties", names) or {}
    return str(given.get(method, method))


def _methods_and_splits(result: Any) -> tuple[list[Any], list[str], list[str], int]:
    summary = list(result.summary)
    methods = list(dict.fromkeys(s.method for s in summary))
    splits = [s for s in ("validation", "test") if any(x.split == s for x in summary)]
    n = max((s.n for s in summary), default=0)
    return summary, methods, splits, n


#: What an in-sample validation row is, where `metro result` names it so.
IN_SAMPLE_NOTE = (
    "validation (in-sample): the refit trained each model on these rows too; the held-out "
    "score METRO chose by is the selection, and test was never seen"
)


def split_name(result: Any, split: str) -> str:
    """A split as the tables name it: "validation (in-sample)" where the result says its
    validation rows were trained on (validation_in_sample: a binary job's refit), as the
    dashboard names it."""
    if split == "validation" and optional(getattr(result, "validation_in_sample", None)):
        return "validation (in-sample)"
    return split


def result_table(result: Any) -> Table:
    """Methods side by side (one column each), one row per split: mean ± std over repeats,
    the best method of each split in bold: under constraints, the best among the methods whose
    constraints held on that split in every repeat (a better objective that breaks the floor is
    not the better model), as the dashboard's "best"."""
    summary, methods, splits, n = _methods_and_splits(result)
    name = optional(getattr(result, "metric_display_name", None)) or result.metric
    names = result_constraint_names(result)
    # The dashboard's words: "F1 (macro), higher is better", never two parentheses in a row.
    under = f" under {', '.join(names)}" if names else ""
    title = f"{name}{under}, {'higher' if result.greater_is_better else 'lower'} is better"
    captions = [f"mean ± std over {n} repeat(s)"] if n > 1 else []
    if names:
        captions.append("bold: the best where the constraints held in every repeat")
    if "validation" in splits and split_name(result, "validation") != "validation":
        captions.append(IN_SAMPLE_NOTE)
    table = Table(
        title=title, caption="; ".join(captions) or None,
        min_width=len(title) + 4 if names else None,  # the title on one line
    )  # fmt: skip
    table.add_column("split")
    for method in methods:
        table.add_column(method_name(result, method), justify="right")
    for split in splits:
        cells = {s.method: s for s in summary if s.split == split}
        means = [c.mean for c in cells.values() if not names or _held_throughout(c)]
        best = (max if result.greater_is_better else min)(means) if means else None
        row = [split_name(result, split)]
        for method in methods:
            cell = cells.get(method)
            if cell is None:
                row.append("-")
                continue
            text = f"{cell.mean:.4f}"
            if optional(cell.std) is not None:
                text += f" ± {cell.std:.4f}"
            bold = cell.mean == best and len(methods) > 1 and (not names or _held_throughout(cell))
            row.append(f"[bold]{text}[/]" if bold else text)
        table.add_row(*row)
    return table


def _held_throughout(cell: Any) -> bool:
    """Whether a method's constraints held on this split in every repeat."""
    return optional(getattr(cell, "constraints_held", None)) == cell.n


def constraints_table(result: Any, word: str = "class") -> Table | None:
    """Under constraints: each one's value per method and split (the mean over the repeats),
    and whether they all hold (in how many repeats, when there are several)."""
    names = result_constraint_names(result)
    if not names:
        return None
    summary, methods, splits, n = _methods_and_splits(result)
    notes = [f"mean over {n} repeat(s)"] if n > 1 else []
    if optional(getattr(result, "classes", None)):
        # An averaged job's value is the mean over its classes (labels): it can clear a bound
        # that one of them missed, so the table says so, and each one's own value is in its table.
        notes.append(f"each value the mean of the per-{word} values; all hold: every {word}'s held")
    table = Table(title="Constraints", caption="; ".join(notes) or None)
    for column in ("constraint", "split"):
        table.add_column(column)
    for method in methods:
        table.add_column(method_name(result, method), justify="right")
    cells = {(s.method, s.split): s for s in summary}
    for i, label in enumerate(names):
        for split in splits:
            row = [label, split_name(result, split)]
            for method in methods:
                means = optional(getattr(cells.get((method, split)), "constraint_means", None))
                row.append(fmt(None if not means else optional(means[i]), ".4f"))
            table.add_row(*row)
    for split in splits:
        row = ["all hold", split_name(result, split)]
        row += [held_text(cells.get((method, split))) for method in methods]
        table.add_row(*row)
    return table


def held_text(cell: Any) -> str:
    """Whether a summary cell's constraints all held: yes / no for one repeat, "k of n" for
    several, "-" where it says nothing."""
    held = None if cell is None else optional(getattr(cell, "constraints_held", None))
    if cell is None or held is None:
        return "-"
    if cell.n == 1:
        return "[green]yes[/]" if held else "[red]no[/]"
    return f"{held} of {cell.n}"


def trained_multinomial(result: Any) -> bool:
    """Whether a job's result is of one multinomial model (its ``multiclass``): no λ, no
    search per class."""
    return optional(getattr(result, "multiclass", None)) == "multinomial"


def classes_table(result: Any, word: str = "class") -> Table | None:
    """An averaged job: a row per class (or label, ``word``): what its search chose (repeat 0's
    λ, the offset before the argmax, its own metric where it chose) and its test metric per
    method."""
    classes = optional(getattr(result, "classes", None))
    if not classes:
        return None
    name = optional(getattr(result, "metric_display_name", None)) or result.metric
    methods = list(dict.fromkeys(s.method for c in classes for s in c.summary if s.split == "test"))
    metric = name.split(" (")[0]
    multinomial = trained_multinomial(result)
    table = Table(
        title=f"Per {word}: {metric} of each {word}",
        caption=f"chosen by: the {word}'s {metric} on the held-out folds under the tuned argmax "
        "of the multinomial model (no λ: no search per class)"
        if multinomial
        else f"chosen by: the {word}'s {metric} on the held-out rows as its own one-vs-rest "
        "search decided them",
    )
    # A multinomial model was trained at no λ: no column of dashes claiming one per class.
    chose = (
        (word, "offset", "chosen by") if multinomial else (word, "trained λ", "offset", "chosen by")
    )
    for column in chose:
        table.add_column(column, justify="left" if column == word else "right")
    for method in methods:
        table.add_column(f"{method_name(result, method)} (test)", justify="right")
    # Under constraints, each class's own values on test (METRO's, the mean over the repeats)
    # and whether they held: the average's values above can clear a bound a class missed.
    constraint_names = result_constraint_names(result)
    for constraint in constraint_names:
        table.add_column(f"{constraint} (test)", justify="right")
    if constraint_names:
        table.add_column("held (test)", justify="right")
    for c in classes:
        tests = {s.method: s.mean for s in c.summary if s.split == "test"}
        metro_test = next((s for s in c.summary if s.split == "test" and s.method == "metro"), None)
        means = None if metro_test is None else optional(metro_test.constraint_means)
        constraint_cells = [
            fmt(None if not means else optional(means[i]), ".4f")
            for i in range(len(constraint_names))
        ]
        if constraint_names:
            constraint_cells.append(held_text(metro_test))
        table.add_row(
            str(c.label),
            *(() if multinomial else (fmt(optional(c.trained_lambda)),)),
            fmt(optional(c.offset), ".3f"),
            fmt(optional(c.selection_score), ".4f"),
            *(fmt(tests.get(m), ".4f") for m in methods),
            *constraint_cells,
        )
    return table


def choice_lines(result: Any, word: str = "class") -> list[str]:
    """What the searches chose, a line each: the trained λ, the score chosen by, the
    refinement step, the constraints where chosen and where a fallback replaced a choice."""
    name = optional(getattr(result, "metric_display_name", None)) or result.metric
    choices = job_choices(result)
    if optional(getattr(result, "classes", None)):  # averaged: each class chose (its table)
        selection = optional(result.selection)
        multinomial = trained_multinomial(result)
        averaged = (
            "trained as one multinomial logistic regression with per-class offsets tuned for "
            "the average (search.multiclass): no λ, no search per class"
            if multinomial
            else None,
            None
            if selection is None
            else f"{'offsets tuned' if multinomial else 'METRO chose'} by "
            f"{averaged_selection_text(selection, name)}",
            *notice_lines(result),
            chosen_constraints_text(choices, result_constraint_names(result)),
            *fallback_lines(choices, word),
        )
        return [line for line in averaged if line]
    chosen_by = selection_text(choices, name)
    lines = (
        choices_text(choices) or f"trained λ {fmt(optional(result.trained_lambda))}",
        None if chosen_by is None else f"METRO chose by {chosen_by}",
        refinement_text(choices, name),
        chosen_constraints_text(choices, result_constraint_names(result)),
        *fallback_lines(choices),
    )
    return [line for line in lines if line]


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
        typer.echo(str(api.delivered_model(str(parse_uuid(job, "job"))).id))
        return
    res = api.call(get_job_result, parse_uuid(job, "job"))
    if as_json:
        typer.echo(json.dumps(res.to_dict(), indent=2))
        return
    console.print(result_table(res))
    # a multi-label job's rows are its labels (its spec says so, not its result)
    word = target_word(api.job(str(res.job_id))) if optional(res.classes) else "class"
    for extra in (constraints_table(res, word), classes_table(res, word)):
        if extra is not None:
            console.print(extra)
    for line in choice_lines(res, word):
        say(line)
    for line in warning_lines(job_choices(res), word):
        note(line, style="yellow")  # on stderr, as `watch` writes them
    positive = positive_label_line(res)
    if positive:
        say(positive)
    model = api.job_model(job)
    if model is not None:
        say(f"model {model.id}")


def positive_label_line(res: Any) -> str | None:
    """Which class the metric (and any constraint) counts as positive (the result's
    ``labels``, from its delivered model): F1 of "fraud" and F1 of "ok" are different numbers,
    and nothing said which one the table held. None for a job of several classes (each is
    named) or a server before 1.4."""
    labels = optional(getattr(res, "labels", None))
    if labels is None:
        return None
    name = optional(res.metric_display_name) or res.metric
    return labels_line(labels, name, constrained=bool(optional(res.constraints)))


def labels_line(labels: Any, name: str, *, constrained: bool) -> str:
    """The positive-label line (positive label 'fraud' (negative 'ok'): F1 counts 'fraud' as
    positive); ``labels`` the result's or the model manifest's (positive, negative), as
    `metro result` and `metro watch` print it and the dashboard's model panel shows it."""
    bounds = " and the constraints" if constrained else ""
    return (
        f"positive label {labels.positive!r} (negative {labels.negative!r}): "
        f"{name}{bounds} count{'' if bounds else 's'} {labels.positive!r} as positive"
    )
