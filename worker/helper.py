"""Helping with another worker's grid search: fit shards nobody has claimed yet.

A job's own worker asks for help (``help_job`` messages) when its grid has several open shards.
A helper claims shards from the end of the list (the job's worker goes from the start), fits each
exactly as the job's worker would (:meth:`metro.experiment.RepeatSetup.solver`; for an averaged
job, :class:`worker.averaged.AveragedSolvers`), and stores it;
the job's worker gathers them. A helper never changes the job itself: errors are the job
worker's to report, so a helper that fails just stops.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from core import store
from core.db.models import Job
from core.job_spec import JobObjects, metric_average
from core.logs import job_context
from core.states import TERMINAL_STATES, JobState
from metro.experiment import RepeatSetup, prepare_repeat
from metro.trainer import TrainingCancelled
from worker import artifacts
from worker.context import WorkerContext, get_context
from worker.datasets import load_job_dataset, load_job_multi_target
from worker.fits import FitRunner, FittingSolver
from worker.lease import Lease, LeaseLost, WorkerStopping
from worker.runner import SpecError, build_objects

logger = logging.getLogger(__name__)


def help_job(job_id: str, ctx: WorkerContext | None = None) -> str:
    ctx = ctx or get_context()
    try:
        ident = uuid.UUID(str(job_id))
    except ValueError:
        return "skipped"
    with job_context(ident):  # its lines carry the job's id, as its own worker's do
        return _help(ident, ctx)


def _help(ident: uuid.UUID, ctx: WorkerContext) -> str:
    state, cancel = store.job_status(ctx, ident)
    if state != JobState.RUNNING.value or cancel:
        return "skipped"
    rows = store.open_shareable_fits(ctx, ident)
    if not rows:
        return "nothing to do"
    with ctx.session() as session:
        job = session.get(Job, ident)
        if job is None:
            return "skipped"
        spec, tenant_id = dict(job.spec), job.tenant_id
    token = ctx.new_token()
    fitted = 0
    try:
        # Only on the data the job's worker pinned: fits of other data would be mixed into its
        # search (the file, object or URL changed since the job's worker loaded it).
        pinned = store.pinned_job_data(ctx, ident)
        if pinned is None:  # its worker has not loaded the data yet: nothing to compare with
            return "skipped"
        objects = build_objects(spec)
        solver = _solvers(ctx, tenant_id, ident, spec, objects, pinned)
        if solver is None:
            logger.info("job %s: not helping, its data is not the data its worker loaded", ident)
            return "skipped"
        with Lease(ctx, ident, token, holds_job=False) as lease:
            runner = FitRunner(ctx, ident, lease)
            for row in reversed(rows):
                lease.check()
                if not store.claim_fit(ctx, ident, row.key, token):
                    continue
                inner = solver(row.repeat, row.role)
                runner.train(
                    inner, row.key, np.asarray(row.lambdas, dtype=np.float64), shift=row.shift,
                    warm_start=None,
                    multipliers=None if row.multipliers is None
                    else np.asarray(row.multipliers, dtype=np.float64),
                )  # fmt: skip
                fitted += 1
    except (TrainingCancelled, LeaseLost, WorkerStopping):  # the shard's lease then lapses
        return f"stopped after {fitted} shard(s)"
    except (SpecError, ValueError, TypeError, OSError) as exc:
        logger.info("helping job %s stopped: %s", ident, exc)
        return f"stopped after {fitted} shard(s)"
    finally:
        _drop_fits_if_finished(ctx, ident)
    logger.info("helped job %s with %d shard(s)", ident, fitted)
    return f"fitted {fitted} shard(s)"


def _drop_fits_if_finished(ctx: WorkerContext, ident: uuid.UUID) -> None:
    """The job's recorded fits, once it has finished: its worker removes them as it finishes,
    but a helper that noticed a cancel up to a poll later may have written a checkpoint or a
    shard after that, which nothing removed. Asked after this helper's last write."""
    try:
        state, _ = store.job_status(ctx, ident)
    except Exception:  # the database away: the files cost storage only
        logger.warning("job %s: could not tell whether it finished", ident, exc_info=True)
        return
    if state is None or JobState(state) in TERMINAL_STATES:
        artifacts.remove_tree(ctx.settings.artifacts_uri, artifacts.fits_dir(ident))


def _solvers(
    ctx: WorkerContext,
    tenant_id: uuid.UUID,
    ident: uuid.UUID,
    spec: dict[str, Any],
    objects: JobObjects,
    pinned: str,
) -> Callable[[int, str], FittingSolver] | None:
    """How this job's recorded fits are built, ``(repeat, role) -> solver``, from the data its
    worker pinned (None where the data loaded now is other data): a binary job's by
    :meth:`metro.experiment.RepeatSetup.solver`, an averaged job's by
    :class:`worker.averaged.AveragedSolvers`."""
    if metric_average(spec) is not None:
        from worker.averaged import AveragedSolvers

        several = load_job_multi_target(ctx, tenant_id, spec["dataset"], job_id=ident)
        if several.content_sha256 != pinned:
            return None
        return AveragedSolvers(spec, objects, several).solver
    dataset = load_job_dataset(ctx, tenant_id, spec["dataset"], job_id=ident)
    if dataset.content_sha256 != pinned:
        return None
    setups: dict[int, RepeatSetup] = {}

    def solver(repeat: int, role: str) -> FittingSolver:
        if repeat not in setups:
            setups[repeat] = prepare_repeat(
                dataset, metric=objects.metric, surrogate=objects.surrogate,
                model=objects.model, training=objects.training, repeat=repeat,
                seed=objects.training.seed, constraints=objects.constraints,
            )  # fmt: skip
        return setups[repeat].solver(role)

    return solver
