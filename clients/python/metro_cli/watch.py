"""``metro watch`` (follow a job to its end and say what it delivered) and ``metro cancel``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metro_cli.api import Api, parse_uuid
from metro_cli.choices import (
    averaged_selection_text,
    choices_text,
    chosen_constraints_text,
    fallback_lines,
    job_choices,
    metric_info,
    notice_lines,
    selection_text,
    spec_constraint_names,
    target_word,
    warning_lines,
)
from metro_cli.errors import fail, one_line_errors
from metro_cli.options import DEFAULT_URL, KeyOption, UrlOption
from metro_cli.output import fmt, note, optional, say
from metro_cli.progress import averaged, elapsed, follow, multinomial
from metro_cli.result import labels_line


def watch_job(api: Api, job_id: str, *, interval: float, timeout: float | None) -> None:
    """Follow the job to its end; exit 1 if it fails or is cancelled, else say what it
    delivered: "job <id> succeeded in 12.3s: trained λ ...; best F1 ...; model <id>"."""
    try:
        job = follow(api, job_id, interval=interval, timeout=timeout)
    except KeyboardInterrupt:
        fail(f"stopped watching; job {job_id} goes on (`metro watch {job_id}` follows it)", 130)
    if job.state == "failed":
        fail(f"job {job_id} failed: {job.failure_reason or 'no reason recorded'}")
    if job.state == "cancelled":
        fail(f"job {job_id} was cancelled")
    model = api.job_model(job_id)
    name, _ = metric_info(job)
    choices = job_choices(job)
    notices: list[str] = []
    if averaged(job):  # a choice per class; the average it chose by is the result's
        from metro_client.api.jobs import get_job_result

        result = api.call(get_job_result, parse_uuid(str(job.id), "job"))
        parts = [averaged_text(job, choices, name, result)]
        notices = notice_lines(result)
    else:
        parts = [choices_text(choices) or f"trained λ {fmt(job.best_lambda)}"]
        best = selection_text(choices, name)
        if best is not None:
            parts.append(f"best {best}")
    # In the one line, before the model's id, which stays last for scripts that read it.
    positive = model_labels_line(model, name, constrained=bool(spec_constraint_names(job)))
    if positive is not None:
        parts.append(positive)
    say(
        f"job {job_id} succeeded in {elapsed(job):.1f}s: " + "; ".join(parts)
        + (f"; model {model.id}" if model is not None else "")
    )  # fmt: skip
    for line in notices:
        say(line)
    constrained = chosen_constraints_text(choices, spec_constraint_names(job))
    if constrained is not None:
        say(constrained)
    word = target_word(job)
    for line in fallback_lines(choices, word):
        say(line)
    for line in warning_lines(choices, word):
        note(line, style="yellow")


def model_labels_line(model: Any, name: str, *, constrained: bool) -> str | None:
    """The delivered binary model's positive label, as `metro result` prints it (from the
    model's manifest, where the result reads it too); None for an averaged model (its classes
    name themselves) or no model."""
    manifest = optional(getattr(model, "manifest", None)) if model is not None else None
    labels = optional(getattr(manifest, "labels", None)) if manifest is not None else None
    if labels is None or optional(getattr(labels, "positive", None)) is None:
        return None
    return labels_line(labels, name, constrained=constrained)


def averaged_text(job: Any, choices: list[Any], name: str, result: Any) -> str:
    """An averaged job's choices: each class's trained λ (repeat 0's, the model delivered) and
    the held-out average the classes were chosen by (``result``: the job's result)."""
    if multinomial(job):  # no λ: each class's offset on the multinomial model's logits
        offsets = ", ".join(
            f"{optional(c.label)} {fmt(optional(c.offset), '.3f')}"
            for c in choices
            if c.repeat == 0
        )
        text = f"one multinomial model (no λ), offset per {target_word(job)}: {offsets}"
    else:
        lambdas = ", ".join(
            f"{optional(c.label)} {fmt(c.trained_lambda)}" for c in choices if c.repeat == 0
        )
        text = f"trained λ per {target_word(job)}: {lambdas}"
    selection = optional(result.selection)
    if selection is not None:
        text += f"; best {averaged_selection_text(selection, name)}"
    return text


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
    watch_job(Api(url, api_key), job, interval=interval, timeout=timeout)


@one_line_errors
def cancel(
    job: Annotated[str, typer.Argument(help="The job id.")],
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Cancel a job: a queued one at once, a running one after its current lambda step."""
    from metro_client.api.jobs import cancel_job

    state = Api(url, api_key).call(cancel_job, parse_uuid(job, "job")).state
    say(f"job {job} is {state}")
