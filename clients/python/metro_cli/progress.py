"""A running job's progress, polled until it ends: a live bar on a terminal; elsewhere (a pipe,
a file, CI's log) plain, complete lines, one whenever the state or the best score changes or the
progress passes a tenth (not at every lambda: a grid moves through them all the time)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from metro_cli.api import TERMINAL_STATES, Api
from metro_cli.choices import job_choices, metric_info, selection_text, spec_of, target_word
from metro_cli.errors import CliError
from metro_cli.output import console, fmt, note, optional, say

# The folds of search.cv="auto" (on a grid, up to 20,000 rows), as the API documents the field;
# the library's AUTO_CV_FOLDS (tests/clients/test_cli.py keeps the two equal).
AUTO_CV_FOLDS = 5


def elapsed(job: Any) -> float:
    """Seconds the job has run (by the server's clock for a finished job)."""

    def aware(moment: datetime) -> datetime:
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

    if job.started_at is None:
        return 0.0
    end = aware(job.finished_at) if job.finished_at is not None else datetime.now(UTC)
    return max(0.0, (end - aware(job.started_at)).total_seconds())


def folds_searched(job: Any) -> int | None:
    """The number of folds of the job's cross-validated grid (None: not a cross-validation)."""
    cv = (spec_of(job).get("search") or {}).get("cv", "auto")
    if cv == "auto":
        return AUTO_CV_FOLDS
    return int(cv) if isinstance(cv, int) and cv > 1 else None


def best_so_far_text(job: Any, steps: list[Any], name: str, greater_is_better: bool) -> str | None:
    """Before a search has chosen: the best held-out score among the trace's steps so far, named
    for what it is (one fold's held-out rows, or the validation split; not the pooled score the
    search chooses by): "best so far F1 0.9612 (fold 2 of 5, held-out)"."""
    scored = [s for s in steps if optional(s.validation_metric) is not None]
    if not scored:
        return None
    bounds = _constraint_bounds(job)
    if bounds:
        # Under constraints the best score of a fit that breaks them is no candidate: a
        # precision of 1.0 from a fit far under its recall floor was shown for most of a run.
        scored = [s for s in scored if _meets(s, bounds)]
        if not scored:
            return "best so far: no fit meets the constraints yet"
        name = f"{name} meeting the constraints"
    pick = max if greater_is_better else min
    best = pick(scored, key=lambda s: float(s.validation_metric))
    fold = optional(best.fold)
    if fold is None:
        where = "validation split"
    else:
        folds = folds_searched(job)
        where = f"fold {fold + 1} of {folds}, held-out" if folds else f"fold {fold + 1}, held-out"
    return f"best so far {name} {float(best.validation_metric):.4f} ({where})"


def _constraint_bounds(job: Any) -> list[tuple[str, float]]:
    """Each constraint of the job's spec as (sense, bound), in the spec's order."""
    out = []
    for c in spec_of(job).get("constraints") or []:
        sense = "at_least" if c.get("at_least") is not None else "at_most"
        out.append((sense, float(c[sense])))
    return out


def _meets(step: Any, bounds: list[tuple[str, float]]) -> bool:
    """Whether a trace step's constraint values (estimates on its held-out rows) meet them."""
    values = optional(getattr(step, "constraint_values", None)) or []
    if len(values) != len(bounds):
        return False
    return all(
        v is not None and (v >= b if sense == "at_least" else v <= b)
        for v, (sense, b) in zip(values, bounds, strict=True)
    )


def averaged(job: Any) -> bool:
    """Whether the job averages its metric over classes (metric.average): one search per class."""
    return (spec_of(job).get("metric") or {}).get("average") is not None


def multinomial(job: Any) -> bool:
    """Whether an averaged job trains one multinomial model (search.multiclass): no λ, no
    search per class."""
    return averaged(job) and (spec_of(job).get("search") or {}).get("multiclass") == "multinomial"


def lambda_text(job: Any) -> str:
    """The bar's lambda: the one being fitted while the job runs; once it has succeeded, the
    delivered model's trained lambda (the last step fitted may be another repeat's)."""
    if multinomial(job):
        return "one multinomial model, no λ"
    if job.state == "succeeded" and averaged(job):
        return f"one trained λ per {target_word(job)}"
    if job.state == "succeeded":
        return f"trained λ {fmt(optional(job.best_lambda))}"
    return f"λ {fmt(optional(job.current_lambda))}"


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


class JobPoller:
    """The job, polled every ``interval`` seconds until it ends or ``timeout`` passes, with what
    its progress line shows."""

    def __init__(self, api: Api, job_id: str, *, interval: float, timeout: float | None) -> None:
        self.api, self.job_id = api, job_id
        self.interval, self.timeout = interval, timeout
        self.job = api.job(job_id)
        self.name, self.greater_is_better = metric_info(self.job)
        self.trace = TraceFollower(api, job_id)
        self.started = time.monotonic()
        self._said_waiting: str | None = None

    def waiting_note(self) -> None:
        """Say on stderr, once while it holds, why the queued job waits (no worker serves its
        queue): a cuda job with no GPU worker sat at "queued 0%" without a word."""
        text = waiting_text(self.job)
        if text is not None and text != self._said_waiting:
            note(f"waiting: {text}", style="yellow")
        self._said_waiting = text

    def next(self) -> Any:
        if self.timeout is not None and time.monotonic() - self.started > self.timeout:
            raise CliError(f"job {self.job_id} is still {self.job.state} after {self.timeout:g}s")
        time.sleep(self.interval)
        self.job = self.api.job(self.job_id)
        return self.job

    def progress(self) -> float:
        return 1.0 if self.job.state == "succeeded" else float(self.job.progress)

    def best_text(self) -> str:
        """The bar's "best": what the searches chose by (the result's selection score), known
        per repeat once its search has chosen. Before that, the best held-out score of a single
        step so far, named apart: it is another quantity (one fold, not pooled)."""
        if averaged(self.job):
            return self._class_text()
        chosen = selection_text(job_choices(self.job), self.name)
        if chosen is not None:
            return f"best {chosen}"
        steps = self.trace.poll() if self.job.state != "queued" else []
        return best_so_far_text(self.job, steps, self.name, self.greater_is_better) or "best -"

    def _class_text(self) -> str:
        """An averaged job searches class after class: the class being searched and its best
        held-out score so far (its own metric, not the average: `metro result` has that)."""
        word = target_word(self.job)
        if multinomial(self.job):  # no search per class: nothing to follow class by class
            return "· offsets tuned per class" if self.job.state == "succeeded" else ""
        if self.job.state in TERMINAL_STATES and self.job.state != "succeeded":
            return ""  # failed or cancelled: not every class was searched
        if self.job.state in TERMINAL_STATES:
            # Not the last class's best fold score as the job's "best": the average the classes
            # were chosen by follows, on the summary line.
            # After "one trained λ per class" on the bar: "... per class · every class searched".
            return f"· every {word} searched"
        steps = self.trace.poll() if self.job.state != "queued" else []
        if not steps:
            return "best -"
        label = optional(steps[-1].label)
        mine = [s for s in steps if optional(s.label) == label and s.repeat == steps[-1].repeat]
        name = self.name.split(" (")[0]  # the class's own metric: "F1", not "F1 (macro)"
        text = best_so_far_text(self.job, mine, name, self.greater_is_better) or "best -"
        return f"{word} {label!r}: {text}"


def waiting_text(job: Any) -> str | None:
    """Why a queued job waits (the API's ``waiting``: no worker serves its queue), or None."""
    if job.state != "queued":
        return None
    text = optional(getattr(job, "waiting", None))
    return str(text) if text else None


def follow(api: Api, job_id: str, *, interval: float, timeout: float | None) -> Any:
    """Poll the job until it ends, showing its progress; its last state."""
    poller = JobPoller(api, job_id, interval=interval, timeout=timeout)
    if console.is_terminal:
        return _follow_live(poller)
    return _follow_in_lines(poller)


def _follow_in_lines(poller: JobPoller) -> Any:
    last: tuple[str, str, int] | None = None
    while True:
        job = poller.job
        poller.waiting_note()
        best = poller.best_text()
        tenth = int(poller.progress() * 10 + 1e-9)
        key = (job.state, best, tenth)
        if key != last:
            say(
                f"{poller.job_id[:8]} {job.state} {poller.progress():.0%} {lambda_text(job)} "
                f"{best} {elapsed(job):.1f}s"
            )
            last = key
        if job.state in TERMINAL_STATES:
            return job
        poller.next()


def _follow_live(poller: JobPoller) -> Any:
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
            return Text(f"{elapsed(task.fields['job']):.1f}s")

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
        job = poller.job
        task = progress.add_task("", total=1.0, lam="λ -", best="best -", job=job, mark="")
        while True:
            job = poller.job
            poller.waiting_note()
            progress.update(
                task,
                completed=poller.progress(),
                description=f"{poller.job_id[:8]} {job.state}",
                lam=lambda_text(job),
                best=poller.best_text(),
                job=job,
                mark="" if job.state not in TERMINAL_STATES
                else "✓" if job.state == "succeeded" else "✗",
            )  # fmt: skip
            if job.state in TERMINAL_STATES:
                return job
            try:
                poller.next()
            except CliError:
                progress.stop()
                raise
