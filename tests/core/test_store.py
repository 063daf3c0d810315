"""The job store against the state tables: every allowed transition goes through, every other
raises before anything is written, and the named operations keep their compare-and-set."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from core import store
from core.config import Settings
from core.db.base import Base, utcnow
from core.db.models import Job, JobFit, LambdaStep, MetricResult, Tenant
from core.db.session import make_engine, make_sessionmaker
from core.records import MetricRecord, RepeatChoice, StepRecord
from core.states import (
    FIT_TRANSITIONS,
    JOB_TRANSITIONS,
    FitState,
    IllegalTransitionError,
    JobState,
)


@dataclass
class Context:
    settings: Settings
    sessionmaker: sessionmaker[Session]

    def session(self) -> Session:
        return self.sessionmaker()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    Base.metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def ctx(engine: Engine) -> Context:
    return Context(Settings(lease_seconds=30.0), make_sessionmaker(engine))


def _job(ctx: Context, state: JobState, **fields: object) -> uuid.UUID:
    """A job row in ``state``, written directly as a test stands in for history."""
    with ctx.session() as session:
        tenant = Tenant(name=f"t-{uuid.uuid4().hex[:8]}")
        session.add(tenant)
        session.flush()
        job = Job(
            tenant_id=tenant.id,
            spec={},
            dataset_uri="builtin://iris",
            request_hash="0" * 64,
            state=state.value,
            **fields,
        )
        session.add(job)
        session.commit()
        return job.id


def _job_state(ctx: Context, job_id: uuid.UUID) -> str:
    with ctx.session() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job.state


@pytest.mark.parametrize(("current", "target"), list(itertools.product(JobState, JobState)))
def test_every_job_transition_follows_the_table(
    ctx: Context, current: JobState, target: JobState
) -> None:
    job_id = _job(ctx, current)
    with ctx.session() as session:
        if target in JOB_TRANSITIONS[current]:
            assert store.move_job(session, job_id, sources=(current,), to=target)
        else:
            with pytest.raises(IllegalTransitionError, match=f"from {current} to {target}"):
                store.move_job(session, job_id, sources=(current,), to=target)
        session.commit()
    assert _job_state(ctx, job_id) == (target if target in JOB_TRANSITIONS[current] else current)


@pytest.mark.parametrize(("current", "target"), list(itertools.product(FitState, FitState)))
def test_every_fit_transition_follows_the_table(
    ctx: Context, current: FitState, target: FitState
) -> None:
    job_id = _job(ctx, JobState.RUNNING)
    with ctx.session() as session:
        session.add(
            JobFit(
                job_id=job_id,
                key="r0/grid/c0/s0",
                repeat=0,
                role="grid",
                shift="minimal",
                lambdas=[0.5],
                state=current.value,
            )
        )
        session.commit()
        if target in FIT_TRANSITIONS[current]:
            assert store.move_fit(session, job_id, "r0/grid/c0/s0", sources=(current,), to=target)
        else:
            with pytest.raises(IllegalTransitionError):
                store.move_fit(session, job_id, "r0/grid/c0/s0", sources=(current,), to=target)
        session.commit()
        fit = session.query(JobFit).one()
        assert fit.state == (target if target in FIT_TRANSITIONS[current] else current)


def test_a_transition_from_a_state_the_row_is_not_in_changes_nothing(ctx: Context) -> None:
    job_id = _job(ctx, JobState.QUEUED)
    with ctx.session() as session:
        assert not store.move_job(session, job_id, sources=(JobState.RUNNING,), to=JobState.FAILED)
        session.commit()
    assert _job_state(ctx, job_id) == JobState.QUEUED


def test_a_worker_takes_over_a_running_job_only_once_its_lease_expired(ctx: Context) -> None:
    now = utcnow()
    live = _job(ctx, JobState.RUNNING, lease_owner="a", lease_expires_at=now + timedelta(hours=1))
    lost = _job(ctx, JobState.RUNNING, lease_owner="a", lease_expires_at=now - timedelta(hours=1))
    assert store.claim_job(ctx, live, "b") is None
    claimed = store.claim_job(ctx, lost, "b")
    assert claimed is not None and claimed.attempts == 1
    with ctx.session() as session:
        job = session.get(Job, lost)
        assert job is not None
        assert (job.state, job.lease_owner) == (JobState.RUNNING, "b")


def test_a_released_job_lets_go_of_the_fits_its_attempt_held(ctx: Context) -> None:
    """A job given back (its worker stopping, or a retried error) kept the fit it was training
    leased to the dead attempt: the next attempt waited out the lease (about 50 s) before it
    could claim it. A helper's fit (another token) stays its own."""
    job_id = _held(ctx)
    with ctx.session() as session:
        for key in ("r0/grid/c0/s0", "r0/grid/c0/s1"):
            session.add(
                JobFit(job_id=job_id, key=key, repeat=0, role="grid", shift="minimal",
                       lambdas=[0.5], shareable=True)
            )  # fmt: skip
        session.commit()
    assert store.claim_fit(ctx, job_id, "r0/grid/c0/s0", "w")
    assert store.claim_fit(ctx, job_id, "r0/grid/c0/s1", "helper")
    assert not store.claim_fit(ctx, job_id, "r0/grid/c0/s0", "next")  # leased: not yet
    assert store.release_job(ctx, job_id, "w", refund_attempt=True)
    assert store.claim_fit(ctx, job_id, "r0/grid/c0/s0", "next")  # at once
    assert not store.claim_fit(ctx, job_id, "r0/grid/c0/s1", "next")  # the helper's still


def test_cancel_follows_the_table(ctx: Context) -> None:
    now = utcnow()
    expected = {
        JobState.QUEUED: (True, JobState.CANCELLED),
        JobState.RUNNING: (True, JobState.CANCELLING),
        JobState.CANCELLING: (False, JobState.CANCELLING),
        JobState.CANCELLED: (False, JobState.CANCELLED),
    }
    for state, (changed, after) in expected.items():
        with ctx.session() as session:
            job_id = _job(ctx, state)
            assert store.request_cancel(session, job_id, now) is changed
            session.commit()
            assert session.scalar(select(Job.state).where(Job.id == job_id)) == after
    for state in (JobState.SUCCEEDED, JobState.FAILED):
        with ctx.session() as session:
            job_id = _job(ctx, state)
            with pytest.raises(IllegalTransitionError):
                store.request_cancel(session, job_id, now)
            session.rollback()
            assert session.scalar(select(Job.state).where(Job.id == job_id)) == state


def test_a_cancel_never_overwrites_a_job_its_worker_finished_since_the_cancel_read_it(
    ctx: Context,
) -> None:
    """SQLite takes no row lock: the worker's `succeeded` could land between the cancel's read
    and its write, which set `cancelling` over it, for ever (no lease for the reconciler to
    find; the dataset undeletable, an active-job slot taken). The cancel is a compare-and-set
    against what it read, and decides again on the fresh state."""
    job_id = _job(ctx, JobState.RUNNING)
    with ctx.session() as cancelling, ctx.session() as worker:
        assert cancelling.scalar(select(Job.state).where(Job.id == job_id)) == "running"
        assert store.move_job(worker, job_id, sources=(JobState.RUNNING,), to=JobState.SUCCEEDED)
        worker.commit()  # between the cancel's read above and its write below
        with pytest.raises(IllegalTransitionError) as caught:
            store.request_cancel(cancelling, job_id, utcnow())
        assert caught.value.current is JobState.SUCCEEDED
        cancelling.rollback()
    with ctx.session() as session:
        assert session.scalar(select(Job.state).where(Job.id == job_id)) == "succeeded"


def test_the_reconciler_cannot_requeue_a_job_that_was_cancelled_since_it_looked(
    ctx: Context,
) -> None:
    now = utcnow()
    job_id = _job(
        ctx, JobState.CANCELLING, lease_owner="a", lease_expires_at=now - timedelta(minutes=1)
    )
    with ctx.session() as session:
        # It read the job as running, before the cancel arrived.
        moved = store.recover_expired_job(
            session, job_id, state=JobState.RUNNING, owner="a", attempts=1, max_attempts=3, now=now
        )
        assert moved is None
        moved = store.recover_expired_job(
            session,
            job_id,
            state=JobState.CANCELLING,
            owner="a",
            attempts=1,
            max_attempts=3,
            now=now,
        )
        assert moved is JobState.CANCELLED
        session.commit()
    assert _job_state(ctx, job_id) == JobState.CANCELLED


# -- a job's own non-finite numbers never reach the database --------------------------------------


def _held(ctx: Context) -> uuid.UUID:
    job_id = _job(ctx, JobState.QUEUED)
    assert store.claim_job(ctx, job_id, "w") is not None
    return job_id


def _step(**values: object) -> StepRecord:
    return StepRecord.model_validate({
        "repeat": 0, "step": 0, "fold": None, "method": "metro", "lambda_": -0.5,
        "shift": "minimal", "surrogate_loss": None, "l_lambda": None, "train_metric": 0.5,
        "validation_metric": 0.5, "seconds": 0.1, "mu": None, "constraint_values": None,
        **values,
    })  # fmt: skip


def _metric(**values: object) -> MetricRecord:
    return MetricRecord.model_validate({
        "method": "metro", "repeat": 0, "split": "test", "metric_value": 0.5, "tp": 1, "fp": 1,
        "fn": 1, "tn": 1, "lambda_": -0.5, "constraint_values": None, "constraints_hold": None,
        **values,
    })  # fmt: skip


def _choice(**values: float) -> RepeatChoice:
    fields = {
        "repeat": 0, "trained_lambda": -0.5, "shift": "minimal", "ratio_reached": None,
        "tuned_threshold": 0.0, "selection_score": 0.8, "selection_split": "validation",
        "n_folds": None, "selection_counts": None, "warnings": [],
    }  # fmt: skip
    return RepeatChoice.model_validate({**fields, **values})


@pytest.mark.parametrize(
    ("write", "where"),
    [
        (
            lambda ctx, job: store.record_step(
                ctx, job, "w", _step(lambda_=float("inf")), progress=0.1, best_lambda=None
            ),
            "(inf) as step.lambda_ of trace step 0 of repeat 0",
        ),
        (
            lambda ctx, job: store.record_step(
                ctx, job, "w", _step(constraint_values=[0.5, float("nan")]), progress=0.1,
                best_lambda=None,
            ),
            "(nan) as step.constraint_values[1] of trace step 0 of repeat 0",
        ),
        (
            lambda ctx, job: store.ensure_fits(
                ctx, job,
                [{"key": "r0/main/c0/s0", "repeat": 0, "role": "main", "shift": "minimal",
                  "lambdas": [-0.5, float("inf")], "shareable": True, "multipliers": None}],
            ),
            "(inf) as lambdas[1] of fit r0/main/c0/s0",
        ),
        (
            lambda ctx, job: store.set_choices(
                ctx, job, "w", [_choice(tuned_threshold=float("-inf"))], best_lambda=0.1
            ),
            "(-inf) as choices[0].tuned_threshold of the repeats' choices",
        ),
        (
            lambda ctx, job: store.succeed_job(
                ctx, job, "w", metric_records=[_metric(metric_value=float("nan"))],
                model_row=None, best_lambda=0.1,
            ),
            "(nan) as runs[0].metric_value of the job's results",
        ),
    ],
    ids=["step", "constraint value", "fit lambdas", "choice", "result"],
)  # fmt: skip
def test_a_non_finite_number_is_refused_before_any_write(ctx: Context, write, where) -> None:
    job_id = _held(ctx)
    with pytest.raises(store.NonFiniteValueError) as refused:
        write(ctx, job_id)
    assert where in str(refused.value)
    with ctx.session() as session:
        job = session.get(Job, job_id)
        assert job is not None
        assert (job.state, job.progress, job.choices) == (JobState.RUNNING.value, 0.0, None)
        assert session.query(JobFit).filter_by(job_id=job_id).count() == 0
        assert session.query(LambdaStep).filter_by(job_id=job_id).count() == 0
        assert session.query(MetricResult).filter_by(job_id=job_id).count() == 0


def test_finite_numbers_are_written(ctx: Context) -> None:
    job_id = _held(ctx)
    assert store.record_step(ctx, job_id, "w", _step(), progress=0.1, best_lambda=None)
    with ctx.session() as session:
        assert session.query(LambdaStep).filter_by(job_id=job_id).count() == 1


def test_a_writer_without_the_lease_adds_nothing_to_the_trace(ctx: Context) -> None:
    """The step was inserted before the lease was checked, and committed either way: an
    attempt that lost the job (or any token) added steps to a job that had ended."""
    job_id = _held(ctx)
    assert not store.record_step(ctx, job_id, "stranger", _step(), progress=0.1, best_lambda=None)
    assert store.record_step(ctx, job_id, "w", _step(), progress=0.1, best_lambda=None)
    assert store.fail_job(ctx, job_id, "w", "ended")
    assert not store.record_step(ctx, job_id, "w", _step(step=1), progress=0.2, best_lambda=None)
    with ctx.session() as session:
        steps = session.query(LambdaStep).filter_by(job_id=job_id).all()
        assert [s.step for s in steps] == [0]
        assert session.get(Job, job_id).progress == pytest.approx(0.1)


def test_a_jobs_progress_never_goes_back(ctx: Context) -> None:
    # A second attempt counts its work afresh: the progress it writes may be lower for a while.
    job_id = _held(ctx)
    assert store.set_progress(ctx, job_id, "w", 0.063)
    assert store.set_progress(ctx, job_id, "w", 0.048)
    assert store.record_step(ctx, job_id, "w", _step(), progress=0.05, best_lambda=None)
    with ctx.session() as session:
        assert session.get(Job, job_id).progress == pytest.approx(0.063)
    assert store.set_progress(ctx, job_id, "w", 0.2)
    with ctx.session() as session:
        assert session.get(Job, job_id).progress == pytest.approx(0.2)


def test_a_job_with_no_attempts_left_is_not_claimed(ctx: Context) -> None:
    """max_attempts is the most a job runs: one more claim would run a failing job again."""
    job = _job(ctx, JobState.QUEUED, attempts=3, max_attempts=3)
    assert store.claim_job(ctx, job, "w") is None
    assert _job_state(ctx, job) == JobState.QUEUED.value
    fresh = _job(ctx, JobState.QUEUED, attempts=2, max_attempts=3)
    assert store.claim_job(ctx, fresh, "w") is not None


def test_a_worker_whose_lease_was_taken_over_cannot_fail_or_cancel_the_job(ctx: Context) -> None:
    """A stalled worker comes back after another took its expired lease: its failure or its
    cancel would end the job the new attempt is running."""
    job = _job(
        ctx, JobState.RUNNING, lease_owner="a", lease_expires_at=utcnow() - timedelta(hours=1)
    )
    assert store.claim_job(ctx, job, "b") is not None  # b takes over a's expired lease
    assert store.fail_job(ctx, job, "a", "stale worker") is False
    assert store.cancel_held_job(ctx, job, "a") is False
    assert _job_state(ctx, job) == JobState.RUNNING.value
    assert store.fail_job(ctx, job, "b", "its own failure") is True
