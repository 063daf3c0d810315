"""One attempt at one job: claim, train, record, finish.

1. **Claim** the job with a lease (compare-and-set on its state and lease expiry): a duplicate
   or stale message finds the job held or finished and returns at once.
2. A **heartbeat** thread renews the lease and notices cancellation (:mod:`worker.lease`).
3. Load the dataset, rebuild the spec's ``metro`` objects, and run
   :func:`metro.experiment.run_experiment` (METRO's search, the baselines, the repeats). Each
   lambda step is upserted as it completes, with the progress, which also moves with every
   optimizer step of a fit (throttled); cancellation is checked between steps and between
   epochs. The search's fits go through :mod:`worker.fits`, which makes them resumable after a
   crash and lets other workers share a grid.
4. Save the METRO model (repeat 0) with :mod:`metro.serialization` to the artifact store, then in
   one transaction record the metric results, the model row and ``succeeded``.

Errors in the data or the spec end the job ``failed`` with the library's own message (never a
traceback), and so does a job past the operator's parameter or work budget once its data is
loaded (the API could not know the size of a file, an object or a URL) or a non-finite number of
the job's own on its way to the database (:class:`core.store.NonFiniteValueError`); a transient
error (database, network, storage) gives the job back to the queue while attempts remain;
anything else fails it with a generic reason and logs the traceback.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import math
import os
import time
import uuid
from typing import Any

import torch
from sqlalchemy.exc import DataError as RefusedValueError
from sqlalchemy.exc import DBAPIError, OperationalError

from core import store
from core.db.errors import DATABASE_UNAVAILABLE, is_database_outage, is_lock_conflict
from core.job_spec import (
    DataSize,
    JobObjects,
    budget_errors,
    build_job_objects,
    estimate_work,
    metric_average,
)
from core.logs import job_context
from core.queue import JobQueue
from core.records import (
    ChoiceWarning,
    MetricInfo,
    MetricRecord,
    RepeatChoice,
    choices_json,
)
from core.states import JobState
from metro.datasets import DataError
from metro.experiment import TEST_FRACTION, ExperimentResult, run_experiment
from metro.metrics import MetricSpec
from metro.model_selection import split_sizes
from metro.models import StackedModel
from metro.search import SearchResult, TraceStep
from metro.search.bisection import max_bisection_steps
from metro.search.config import AUTO_CV_FOLDS, SearchConfig
from metro.search.refine import max_refine_fits
from metro.serialization import save_model
from metro.trainer import TrainingCancelled, TrainingEvent
from worker import artifacts
from worker.context import WorkerContext, get_context
from worker.datasets import load_job_dataset
from worker.fits import FitLedger, FitStoreError
from worker.lease import Lease, LeaseLost, WorkerStopping
from worker.results import (
    MODEL_NAMESPACE,
    check_manifest,
    data_warnings,
    finite_or_none,
    repeat_choice,
    step_row,
)

logger = logging.getLogger(__name__)

# Errors worth another attempt: the database or the network went away for a while.
TRANSIENT: tuple[type[Exception], ...] = (
    OperationalError,
    ConnectionError,
    TimeoutError,
    *DATABASE_UNAVAILABLE,
)
_RETRY_COUNTDOWN_SECONDS = 5.0


class SpecError(ValueError):
    """The stored spec cannot be rebuilt (it was valid at submission: the library changed)."""


def build_objects(spec: dict[str, Any]) -> JobObjects:
    """The spec's ``metro`` objects (the same builders that validated it at submission)."""
    try:
        return build_job_objects(spec)
    except (KeyError, ValueError, TypeError) as exc:
        raise SpecError(f"invalid job spec: {_message(exc)}") from None


def data_changed(uri: str) -> str:
    """The failure reason of a job whose data changed while it ran."""
    return (
        f"the data at {uri} changed while the job ran: it no longer matches the rows the job "
        "started on, so its fits cannot be combined; submit the job again to train on the data "
        "as it is now"
    )


def check_budgets(
    spec: dict[str, Any],
    objects: JobObjects,
    data: DataSize,
    ctx: WorkerContext,
    *,
    targets: int = 1,
) -> None:
    """SpecError unless the job is within this deployment's max_model_parameters and
    max_job_work on its data as loaded. The API checked them with what it knew of the data; a
    file, an object or a URL it could not size, and a limit may have been lowered since. An
    averaged job trains one search per class (label): ``targets`` of them."""
    settings = ctx.settings
    errors = budget_errors(
        dataclasses.replace(estimate_work(spec, objects, data), targets=targets),
        max_model_parameters=settings.max_model_parameters,
        max_job_work=settings.max_job_work,
    )
    if errors:
        named = [".".join(str(p) for p in e.path) + ": " + str(e) if e.path else str(e)
                 for e in errors]  # fmt: skip
        raise SpecError(f"over this server's limits on its data: {'; '.join(named)}")


# A claim Postgres aborts to break a cycle of lock waits is taken again this many times in all.
_CLAIM_ATTEMPTS = 3


def _claim(ctx: WorkerContext, ident: uuid.UUID, token: str) -> store.ClaimedJob | None:
    """store.claim_job, run again when the database aborted it for another transaction: a
    claim racing submissions that share an Idempotency-Key closed a cycle of lock waits (the
    API's side is retried in service.crud.jobs), and the job then waited for the reconciler."""
    for attempt in range(_CLAIM_ATTEMPTS):
        try:
            return store.claim_job(ctx, ident, token)
        except OperationalError as exc:
            if not is_lock_conflict(exc) or attempt == _CLAIM_ATTEMPTS - 1:
                raise
            logger.info("job %s: the claim met a concurrent transaction; claiming again", ident)
            time.sleep(0.05 * (attempt + 1))
    return None


def run_job(job_id: str, ctx: WorkerContext | None = None) -> str:
    """Run one job; returns what happened ("succeeded", "failed", "cancelled", "retry",
    "lost", or "skipped" for a job that was not claimable)."""
    ctx = ctx or get_context()
    try:
        ident = uuid.UUID(str(job_id))
    except ValueError:
        logger.warning("ignoring a message for an invalid job id %r", job_id)
        return "skipped"
    token = ctx.new_token()
    job = _claim(ctx, ident, token)
    if job is None:
        logger.info("job %s is not claimable (held elsewhere, finished or unknown)", ident)
        return "skipped"
    with job_context(ident):
        logger.info("job %s: attempt %d of %d as %s", ident, job.attempts, job.max_attempts, token)
        with Lease(ctx, ident, token, holds_job=True) as lease:
            outcome = JobRun(ctx, job, token, lease).execute()
        logger.info("job %s: %s", ident, outcome)
    return outcome


class Progress:
    """Progress in [0, 1): lambda steps of METRO's search (a lambda in training counts for the
    fraction of its fit's optimizer steps done), then one unit per fit of the refinement step,
    then one unit per baseline, over the repeats. The number of steps of bisection and
    Dinkelbach is estimated from epsilon; the refinement's fits are its most (a step that is not
    run, or stops early, moves the bar on at once). Never moves back."""

    def __init__(self, spec: dict[str, Any]) -> None:
        # The stored spec is normalized (every search setting filled in); a spec the library
        # refuses fails the job when it is built, so here its defaults only size the bar.
        try:
            self.search = SearchConfig.from_dict(dict(spec.get("search") or {}))
        except (ValueError, TypeError):
            self.search = SearchConfig()
        self.spec = spec
        # cv "auto" is 5 folds unless the data is large (then one holdout): until the data is
        # loaded (see for_rows), an estimate.
        self._size(AUTO_CV_FOLDS if self.search.cv == "auto" else int(self.search.cv or 1))
        self.value = 0.0

    def for_rows(self, n_rows: int) -> None:
        """Size the bar for the data's rows: cv "auto" on more than AUTO_CV_MAX_ROWS rows is one
        holdout, not 5 folds (a 200,000-row job sat at 0.10 and jumped to 1.0). ``n_rows`` are
        the rows the search chooses on, the experiment's test split set aside."""
        folds = self.search.folds_for(n_rows)
        self._size(1 if folds is None else folds)

    def _size(self, folds: int) -> None:
        search, spec = self.search, self.spec
        shifts = 2 if search.shift == "auto" else 1
        refit = 1 if search.refit else 0
        if search.strategy == "grid":
            steps = shifts * search.n_lambdas * folds
            if spec.get("constraints"):  # the constrained grid: every lambda at each multiplier
                steps *= len(search.multipliers)
        else:
            bisection = max_bisection_steps(0, 2, search.epsilon)
            steps = shifts * min(search.max_steps, bisection)
        self.metro_units = steps + refit
        # The refinement step's fits: it took tens of seconds at a still 99%.
        kind = (spec.get("model") or {}).get("kind")
        self.refine_units = max_refine_fits(search, n_folds=folds, model_kind=kind)
        self.baselines = len(spec.get("baselines") or [])
        self.repeats = int(spec.get("repeats", 1))

    def at(self, repeat: int, units_done: float) -> float:
        per_repeat = self.metro_units + self.refine_units + self.baselines
        value = (repeat * per_repeat + units_done) / (self.repeats * per_repeat)
        self.value = max(self.value, min(value, 0.99))
        return self.value


class JobRun:
    def __init__(self, ctx: WorkerContext, job: store.ClaimedJob, token: str, lease: Lease) -> None:
        self.ctx = ctx
        self.job = job
        self.token = token
        self.lease = lease
        self.queue = JobQueue(ctx.settings)
        self.progress = Progress(job.spec)
        self.greater_is_better = MetricInfo.stored(job.spec).greater_is_better
        self.choices: dict[int, RepeatChoice] = {}  # repeat -> what its search chose
        # What the data says beside the search (an id-like feature), on the delivered choice.
        self.data_warnings: list[ChoiceWarning] = []
        self.steps_in_repeat: dict[int, int] = {}
        self.lambdas_fitted: dict[int, int] = {}  # repeat -> lambdas of its fits in so far
        self.refine_fits: dict[int, int] = {}  # repeat -> fits of its refinement step done
        self.progress_written = -math.inf  # time.monotonic() of the last throttled write

    # -- outcome handling -------------------------------------------------------------------------
    def execute(self) -> str:
        try:
            return self._run()
        except TrainingCancelled:
            if store.cancel_held_job(self.ctx, self.job.id, self.token):
                self._drop_fits()
            return JobState.CANCELLED.value
        except LeaseLost:
            return "lost"
        except WorkerStopping:
            return self._give_back()
        except (DataError, SpecError, FitStoreError) as exc:
            return self._fail(_message(exc))
        except torch.cuda.OutOfMemoryError:
            return self._fail(
                "out of GPU memory: use a smaller batch_size or model, or fewer lambdas at once"
            )
        except MemoryError:
            return self._fail("out of memory: the dataset or model is too large for this worker")
        except TRANSIENT as exc:
            return self._retry(exc)
        except RefusedValueError as exc:
            # SQLSTATE class 22 (a value the database cannot store): another attempt would
            # write the same value and fail the same way, three attempts of training later.
            logger.exception("job %s: the database refused a value", self.job.id)
            said = str(exc.orig).splitlines()[0] if exc.orig is not None else type(exc).__name__
            return self._fail(f"the database refused a value this job produced: {said}")
        except DBAPIError as exc:
            logger.exception("job %s: database error", self.job.id)
            return self._retry(exc)
        except (ValueError, TypeError) as exc:
            # The library's validation: a parameter that does not fit this data (a cnn3 on
            # tabular data, a split too small for the classes...), said in its own words.
            return self._fail(_message(exc))
        except OSError as exc:
            logger.warning("job %s: I/O error", self.job.id, exc_info=True)
            return self._retry(exc)
        except Exception as exc:
            logger.exception("job %s failed with an unexpected error", self.job.id)
            return self._fail(f"internal error ({type(exc).__name__}); see the worker's log")

    def pin_data(self, digest: str) -> None:
        """The job trains on one version of its data: the first load pins its digest, and an
        attempt that loads other data (the file, object or URL changed since) fails the job
        rather than mix fits of two versions in one search."""
        pinned = store.pin_job_data(self.ctx, self.job.id, self.token, digest)
        if pinned is None:
            raise LeaseLost(str(self.job.id))
        if pinned != digest:
            raise SpecError(data_changed(self.job.spec["dataset"]["uri"]))

    def _fail(self, reason: str) -> str:
        logger.info("job %s failed: %s", self.job.id, reason)
        if store.fail_job(self.ctx, self.job.id, self.token, reason):
            self._drop_fits()
            # A failed job has no model row: a model an attempt saved before it failed (its
            # registration refused, say) is a leftover that only DELETE would have removed.
            artifacts.remove_tree(
                self.ctx.settings.artifacts_uri, artifacts.models_dir(self.job.id)
            )
        return JobState.FAILED.value

    def _drop_fits(self) -> None:
        """A finished job's recorded fits and checkpoints (they serve resuming and helpers
        only, worker.fits): removed once this worker has written how it finished, whether it
        succeeded, failed or was cancelled; left where the lease was lost."""
        artifacts.remove_tree(self.ctx.settings.artifacts_uri, artifacts.fits_dir(self.job.id))

    def _retry(self, exc: BaseException) -> str:
        if is_database_outage(exc):
            return self._retry_after_outage(exc)
        if self.job.attempts >= self.job.max_attempts:
            return self._fail(
                f"gave up after {self.job.attempts} attempts; the last one failed with "
                f"{_transient_words(exc)}"
            )
        return self._release(refund_attempt=False, countdown=_RETRY_COUNTDOWN_SECONDS)

    def _give_back(self) -> str:
        """This worker is shutting down: the job goes back to the queue without counting this
        attempt, and the next worker resumes it from its recorded fits."""
        logger.info("job %s: this worker is shutting down; giving the job back", self.job.id)
        # Ahead of the jobs that merely wait, as a job recovered from a dead worker is: it went
        # behind every job queued since, and finished a minute after them.
        return self._release(refund_attempt=True, countdown=None, recovered=True)

    def _release(
        self, *, refund_attempt: bool, countdown: float | None, recovered: bool = False
    ) -> str:
        """Give the job back to the queue (its attempt refunded or not) with a new message; where
        that fails, the lease expires and the reconciler re-queues the job (counted)."""
        try:
            if store.release_job(self.ctx, self.job.id, self.token, refund_attempt=refund_attempt):
                self.queue.enqueue(
                    self.job.id, self.job.spec, countdown=countdown, recovered=recovered
                )
        except Exception:
            logger.warning("job %s: could not give it back to the queue", self.job.id)
        return "retry"

    def _retry_after_outage(self, exc: BaseException) -> str:
        """The database went away: give the job back without counting this attempt. The
        database may still be down, so the release is retried (the heartbeat keeps the lease
        alive meanwhile) for up to a lease; past that the lease expires and the reconciler
        re-queues the job, which does count the attempt."""
        logger.warning("job %s: database unavailable (%s)", self.job.id, type(exc).__name__)
        deadline = time.monotonic() + self.ctx.settings.lease_seconds
        delay = 0.5
        while True:
            try:
                released = store.release_job(self.ctx, self.job.id, self.token, refund_attempt=True)
                break
            except Exception as again:
                if not is_database_outage(again) or time.monotonic() + delay > deadline:
                    logger.warning("job %s: could not give it back to the queue", self.job.id)
                    return "retry"
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
        if released:
            try:
                self.queue.enqueue(self.job.id, self.job.spec, countdown=_RETRY_COUNTDOWN_SECONDS)
            except Exception:  # queued in the database: the reconciler sends its message
                logger.warning("job %s: could not send it to the broker", self.job.id)
            return "retry"
        # Not running: a cancel arrived meanwhile (the release moves running jobs only). The
        # job is still held here, so finish the cancel now rather than leave it "cancelling"
        # until the lease expires and the reconciler ends it.
        try:
            _, cancel_requested = store.job_status(self.ctx, self.job.id)
            if cancel_requested and store.cancel_held_job(self.ctx, self.job.id, self.token):
                self._drop_fits()
                return JobState.CANCELLED.value
        except Exception:
            logger.warning("job %s: could not finish its cancel", self.job.id)
        return "retry"

    # -- the work -----------------------------------------------------------------------------
    def _run(self) -> str:
        spec = self.job.spec
        objects = build_objects(spec)
        if metric_average(spec) is not None:  # several classes or labels: worker.averaged
            from worker.averaged import AveragedRun

            def budgets(data: DataSize, targets: int) -> None:
                check_budgets(spec, objects, data, self.ctx, targets=targets)

            return AveragedRun(self, objects, budgets).execute()
        training = objects.training
        dataset = load_job_dataset(
            self.ctx, self.job.tenant_id, spec["dataset"], job_id=self.job.id
        )
        self.pin_data(dataset.content_sha256)
        check_budgets(
            spec, objects, DataSize.of_examples(dataset.n_samples, dataset.X.shape[1:]), self.ctx
        )
        # The search chooses on the rows the experiment's test split leaves.
        n_test = split_sizes(dataset.n_samples, test_fraction=TEST_FRACTION)[2]
        self.progress.for_rows(dataset.n_samples - n_test)
        self.data_warnings = data_warnings(dataset.X, dataset.feature_names)
        self.lease.check()
        ledger = FitLedger(
            self.ctx, self.job.id, self.token, self.lease, shard_size=self.job.shard_size,
            request_help=lambda n: self.queue.request_help(self.job.id, spec, n),
            on_fit_done=self._on_fit_done, on_fit_step=self._on_fit_step,
            on_refine_fit=self._on_refine_fit,
        )  # fmt: skip
        result = run_experiment(
            dataset,
            metric=objects.metric,
            surrogate=objects.surrogate,
            model=objects.model,
            search=objects.search,
            training=training,
            baselines=tuple(spec.get("baselines") or ()),
            repeats=int(spec.get("repeats", 1)),
            seed=training.seed,
            on_step=self._on_step,
            on_method=self._on_method,
            on_search=self._on_search,
            wrap_solver=ledger.wrap,
            constraints=objects.constraints,
        )
        logger.info(
            "job %s: %d fits trained, %d reused from earlier attempts or other workers",
            self.job.id, ledger.trained, ledger.loaded,
        )  # fmt: skip
        self.lease.check()
        return self._finish(result, dataset)

    def _on_fit_done(self, repeat: int, n_lambdas: int) -> None:
        """A fit is in (trained here, by a helper, or by an earlier attempt): its lambdas count
        in full (a grid's steps are reported only when all its shards are in)."""
        self.lambdas_fitted[repeat] = self.lambdas_fitted.get(repeat, 0) + n_lambdas
        self._move_progress(repeat, min(self.lambdas_fitted[repeat], self.progress.metro_units))

    def _on_fit_step(self, repeat: int, n_lambdas: int, event: TrainingEvent) -> None:
        """One trainer step of a fit trained here: a stacked fit trains all its lambdas (a
        whole fold of a grid) at once, so the fit's own steps are what moves the progress
        between two fits; each of its lambdas counts for the fraction of steps done."""
        fraction = min(max(event.step / max(event.total_steps, 1), 0.0), 1.0)
        units = self.lambdas_fitted.get(repeat, 0) + n_lambdas * fraction
        self._move_progress(repeat, min(units, self.progress.metro_units))

    def _on_refine_fit(self, repeat: int) -> None:
        """A fit of the refinement step is done: after the search's units, one each."""
        self.refine_fits[repeat] = self.refine_fits.get(repeat, 0) + 1
        done = min(self.refine_fits[repeat], self.progress.refine_units)
        self._move_progress(repeat, self.progress.metro_units + done)

    def _move_progress(self, repeat: int, units: float) -> None:
        """Write the progress at ``units`` of ``repeat``, at most once per ``progress_seconds``
        (a fit reports every optimizer step, far more often than anybody polls)."""
        now = time.monotonic()
        if now - self.progress_written < self.ctx.settings.progress_seconds:
            return
        before = self.progress.value
        value = self.progress.at(repeat, units)
        if value <= before:
            return  # nothing new to say (never a write that moves it back)
        self.progress_written = now
        if not store.set_progress(self.ctx, self.job.id, self.token, value):
            raise LeaseLost(str(self.job.id))

    def _on_method(self, repeat: int, method: str) -> None:
        self.lease.check()
        if method != "metro":
            index = (self.job.spec.get("baselines") or []).index(method)
            done = self.progress.metro_units + self.progress.refine_units + index
            if not store.set_progress(
                self.ctx, self.job.id, self.token, self.progress.at(repeat, done)
            ):
                raise LeaseLost(str(self.job.id))

    def noted(self, choice: RepeatChoice) -> RepeatChoice:
        """Repeat 0's choice (the delivered model's) with the data's warnings."""
        if choice.repeat != 0 or not self.data_warnings:
            return choice
        return choice.model_copy(update={"warnings": [*choice.warnings, *self.data_warnings]})

    @property
    def delivered_lambda(self) -> float | None:
        """The job's best_lambda: the trained lambda of the delivered model (repeat 0's choice),
        once that search has chosen; a step's own metric is never a stand-in for it."""
        choice = self.choices.get(0)
        return None if choice is None else choice.trained_lambda

    def _on_search(self, repeat: int, spec: MetricSpec, search: SearchResult) -> None:
        self.lease.check()
        self.choices[repeat] = self.noted(repeat_choice(repeat, spec, search))
        if not store.set_choices(
            self.ctx, self.job.id, self.token, [self.choices[r] for r in sorted(self.choices)],
            best_lambda=self.delivered_lambda,
        ):  # fmt: skip
            raise LeaseLost(str(self.job.id))

    def _on_step(self, repeat: int, step: TraceStep) -> None:
        self.lease.check()
        self.steps_in_repeat[repeat] = max(self.steps_in_repeat.get(repeat, 0), step.step + 1)
        row = step_row(repeat, step)
        units = min(self.steps_in_repeat[repeat], self.progress.metro_units)
        if not store.record_step(
            self.ctx, self.job.id, self.token, row,
            progress=self.progress.at(repeat, units),
            best_lambda=self.delivered_lambda,
        ):  # fmt: skip
            raise LeaseLost(str(self.job.id))

    def save_delivered(self, model: StackedModel, manifest: dict[str, Any]) -> dict[str, Any]:
        """Save the delivered model (safetensors, and ONNX where it exports) with its manifest
        to the artifact store, check the manifest as the API will serve it, and return its
        ``models`` row."""
        rel = artifacts.model_path(self.job.id, self.job.attempts)
        target = artifacts.full_uri(self.ctx.settings.artifacts_uri, rel)
        try:
            full = save_model(target, model, manifest=manifest)
        except (RuntimeError, ValueError, ImportError) as exc:
            # An exporter failure must not cost the trained model: keep it without ONNX.
            logger.warning("job %s: ONNX export failed (%s); saving without it", self.job.id, exc)
            full = save_model(target, model, manifest=manifest, onnx=False)
        check_manifest(full)
        return {
            "id": uuid.uuid5(MODEL_NAMESPACE, f"{self.job.id}/metro/0"),
            "tenant_id": self.job.tenant_id,
            "job_id": self.job.id,
            "artifact_uri": rel,
            "format": "safetensors",
            "has_onnx": full["onnx_sha256"] is not None,
            "sha256": full["weights_sha256"],
            "manifest": full,
        }

    def _finish(self, result: ExperimentResult, dataset: Any) -> str:
        spec = self.job.spec
        metric_records = [
            MetricRecord.model_validate(
                {
                    "method": s.method,
                    "repeat": s.repeat,
                    "split": s.split,
                    "metric_value": s.value,
                    "tp": s.tp,
                    "fp": s.fp,
                    "fn": s.fn,
                    "tn": s.tn,
                    "lambda_": finite_or_none(s.lam),
                    "constraint_values": [finite_or_none(v) for v in s.constraint_values]
                    if s.constraint_values
                    else None,
                    "constraints_hold": s.constraints_hold,
                }
            )
            for s in result.scores
        ]
        fitted = result.model_for("metro", 0)
        search = result.searches[0]
        scores = {s.split: s.value for s in result.scores if s.method == "metro" and s.repeat == 0}
        info = spec.get("metric_info") or {}
        choices = [
            self.choices.get(r) or self.noted(repeat_choice(r, result.metric, result.searches[r]))
            for r in sorted(result.searches)
        ]
        delivered = choices_json(choices[:1])[0]  # repeat 0's: the model's own
        manifest = {
            "metric": {**spec["metric"], **info},
            # The lambda and shift this model was trained with. "lambda_star" is the search's
            # estimate of lambda*, as the library's lambda_star_: the trained lambda for the
            # grid, the ratio a bisection or Dinkelbach search reached ("ratio_reached", null
            # for the grid) for those.
            "trained_lambda": fitted.lam,
            "lambda_star": choices[0].lambda_star,
            "ratio_reached": search.ratio_reached,
            "threshold": fitted.threshold,
            # The threshold the search tuned on h, already folded into the model's last bias
            # (so "threshold" above, applied to the model's own score, stays 0).
            "tuned_threshold": search.threshold,
            "selection": {
                k: delivered[k]
                for k in ("selection_score", "selection_split", "n_folds", "selection_counts")
            },
            "warnings": delivered["warnings"],
            "refinement": delivered["refinement"],
            "fallback": delivered["fallback"],
            "labels": {"positive": dataset.positive_label, "negative": dataset.negative_label},
            "feature_names": list(dataset.feature_names)
            if dataset.feature_names is not None and dataset.X.ndim == 2
            else None,
            # Each feature's min and max over the rows the model was trained on: the endpoint
            # names the columns of a request outside them (absent for images).
            **(
                {"feature_ranges": fitted.feature_ranges.to_dict()}
                if fitted.feature_ranges is not None
                else {}
            ),
            "job_id": str(self.job.id),
            "shift": fitted.shift,
            "surrogate": spec.get("surrogate"),
            # The search that ran: "exact" where the metric needed none, whatever was asked.
            "search": choices[0].strategy or (spec.get("search") or {}).get("strategy"),
            "scores": scores,
            "dataset": spec["dataset"]["uri"],
            # Which data it saw, after the upload is deleted too: the job's data_sha256,
            # metro.datasets.load_dataset(...).content_sha256 of a local copy.
            "data_sha256": dataset.content_sha256,
            # The job's spec as stored (defaults filled in): POSTed again it trains the same
            # model, so a downloaded model says how to remake it after its job is deleted.
            "job_spec": spec,
            **constrained_manifest(spec, result, choices[0]),
        }
        model_row = self.save_delivered(fitted.model, manifest)
        lam = fitted.lam if fitted.lam is not None and math.isfinite(fitted.lam) else None
        return self.succeed(metric_records, model_row, best_lambda=lam, choices=choices)

    def succeed(
        self,
        metric_records: list[MetricRecord],
        model_row: dict[str, Any],
        *,
        best_lambda: float | None,
        choices: list[RepeatChoice],
    ) -> str:
        """Write the job's success (store.succeed_job) and, unless the lease was lost, remove
        its recorded fits: they serve resuming and helpers only (worker.fits)."""
        outcome = store.succeed_job(
            self.ctx, self.job.id, self.token, metric_records=metric_records, model_row=model_row,
            best_lambda=best_lambda, choices=choices,
        )  # fmt: skip
        if outcome != JobState.SUCCEEDED.value:  # cancelled first, or lost: no row names it
            artifacts.remove_tree(self.ctx.settings.artifacts_uri, model_row["artifact_uri"])
        if outcome == "lost":
            return "lost"
        if outcome == JobState.SUCCEEDED.value:  # an earlier attempt's leftovers, if any
            artifacts.remove_other_attempts(
                self.ctx.settings.artifacts_uri, self.job.id, model_row["artifact_uri"]
            )
        self._drop_fits()
        return outcome


def constrained_manifest(
    spec: dict[str, Any], result: ExperimentResult, choice: RepeatChoice
) -> dict[str, Any]:
    """The manifest's account of the constraints of the delivered model (METRO, repeat 0),
    nothing for an unconstrained job: each constraint as specified and named, its value where
    the search chose (``selection_value``), the tightest bound some fit met there (``reach``,
    the choice's ``constraint_reach``) and on each split (``scores``, like the metric's),
    and whether all of them hold on each split."""
    constraints = spec.get("constraints") or []
    if not constraints:
        return {}
    runs = {s.split: s for s in result.scores if s.method == "metro" and s.repeat == 0}
    chosen = choice.constraint_values or [None] * len(constraints)
    reach = choice.constraint_reach or [None] * len(constraints)
    info = spec.get("constraint_info") or [{} for _ in constraints]
    return {
        "constraints": [
            {
                **given,
                **named,
                "selection_value": chosen[i],
                "reach": reach[i],
                "scores": {
                    split: finite_or_none(s.constraint_values[i]) for split, s in runs.items()
                },
            }
            for i, (given, named) in enumerate(zip(constraints, info, strict=True))
        ],
        "constraints_hold": {split: s.constraints_hold for split, s in runs.items()},
        "constraints_satisfied": choice.constraints_satisfied,
        "mu": choice.mu,  # the multiplier trained_lambda was trained with
    }


def _transient_words(exc: BaseException) -> str:
    """What a failure another attempt might not have met was, for the job's failure_reason:
    an operating system error by its errno and words ("OSError: ENOSPC, No space left on
    device": a full artifact store said only "OSError"), never the path it names (the
    server's); anything else by its type."""
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        words = exc.strerror or os.strerror(exc.errno)
        return f"{type(exc).__name__}: {name}, {words} (a storage or network error)"
    return f"{type(exc).__name__} (a database, network or storage error)"


def _message(exc: BaseException) -> str:
    """The exception's own message, one line, bounded (the library's messages are written for
    users; tracebacks and reprs are not)."""
    text = str(exc).strip()
    if isinstance(exc, KeyError) and text.startswith("'"):
        text = f"missing field {text}"
    line = text.splitlines()[0] if text else type(exc).__name__
    return line[:1000]
