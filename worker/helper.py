"""Helping with another worker's grid search: fit shards nobody has claimed yet.

A job's own worker asks for help (``help_job`` messages) when its grid has several open shards.
A helper claims shards from the end of the list (the job's worker goes from the start), fits each
exactly as the job's worker would (:meth:`metro.experiment.RepeatSetup.solver`), and stores it;
the job's worker gathers them. A helper never changes the job itself: errors are the job
worker's to report, so a helper that fails just stops.
"""

from __future__ import annotations

import logging
import uuid

import numpy as np

from core import store
from core.db.models import Job
from core.states import JobState
from metro.experiment import RepeatSetup, prepare_repeat
from metro.trainer import TrainingCancelled
from worker.context import WorkerContext, get_context
from worker.datasets import load_job_dataset
from worker.fits import FitRunner
from worker.lease import Lease, LeaseLost
from worker.runner import SpecError, build_objects

logger = logging.getLogger(__name__)


def help_job(job_id: str, ctx: WorkerContext | None = None) -> str:
    ctx = ctx or get_context()
    try:
        ident = uuid.UUID(str(job_id))
    except ValueError:
        return "skipped"
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
        dataset = load_job_dataset(ctx, tenant_id, spec["dataset"], job_id=ident)
        if dataset.content_sha256 != pinned:
            logger.info("job %s: not helping, its data is not the data its worker loaded", ident)
            return "skipped"
        setups: dict[int, RepeatSetup] = {}
        with Lease(ctx, ident, token, holds_job=False) as lease:
            runner = FitRunner(ctx, ident, lease)
            for row in reversed(rows):
                lease.check()
                if not store.claim_fit(ctx, ident, row.key, token):
                    continue
                if row.repeat not in setups:
                    setups[row.repeat] = prepare_repeat(
                        dataset, metric=objects.metric, surrogate=objects.surrogate,
                        model=objects.model, training=objects.training,
                        repeat=row.repeat, seed=objects.training.seed,
                        constraints=objects.constraints,
                    )  # fmt: skip
                inner = setups[row.repeat].solver(row.role)
                runner.train(
                    inner, row.key, np.asarray(row.lambdas, dtype=np.float64), shift=row.shift,
                    warm_start=None,
                    multipliers=None if row.multipliers is None
                    else np.asarray(row.multipliers, dtype=np.float64),
                )  # fmt: skip
                fitted += 1
    except (TrainingCancelled, LeaseLost):
        return f"stopped after {fitted} shard(s)"
    except (SpecError, ValueError, TypeError, OSError) as exc:
        logger.info("helping job %s stopped: %s", ident, exc)
        return f"stopped after {fitted} shard(s)"
    logger.info("helped job %s with %d shard(s)", ident, fitted)
    return f"fitted {fitted} shard(s)"
