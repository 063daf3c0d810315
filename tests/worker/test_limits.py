"""On the worker: the operator's budgets are checked again on the data as loaded, a spec queued
before the library's bounds existed fails with the bound it breaks, and a job's own non-finite
number fails the job by name instead of reaching the database (once read as a database error)."""

from __future__ import annotations

import numpy as np

import metro.search.grid as grid_module
from core.db.models import JobFit, LambdaStep
from tests.worker.conftest import SMALL_JOB
from tests.worker.test_pipeline import _insert_job, _solo_context
from tests.worker.test_reconcile import FakeQueue, _set
from worker import runner

# SMALL_JOB: breast cancer (569 rows, 30 features), a linear model (31 parameters), L-BFGS for
# at most 30 iterations, 5 lambdas on 5 folds and the refit, one repeat.
SMALL_JOB_WORK = 31 * 569 * 30 * (5 * 5 + 1)


class Queue(FakeQueue):
    def request_help(self, job_id, spec, n) -> None:
        pass


def test_the_work_budget_is_checked_again_on_the_loaded_data(make_cluster, monkeypatch):
    # The API could not size a file, an object or a URL (or the limit was lowered since the job
    # was queued): the worker checks with the rows it loaded, before training anything.
    cluster = make_cluster()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    ctx = _solo_context(cluster)
    over = _insert_job(cluster, SMALL_JOB)
    ctx.settings = ctx.settings.model_copy(update={"max_job_work": SMALL_JOB_WORK - 1})
    assert runner.run_job(over, ctx) == "failed"
    job = cluster.job(over)
    assert job["attempts"] == 1
    assert job["failure_reason"].startswith("over this server's limits on its data: ")
    assert "31 parameters x 569 rows x 30 max_iter x 26 models per repeat" in job["failure_reason"]
    assert "(max_job_work)" in job["failure_reason"]
    assert cluster.rows(JobFit, over) == [] and cluster.trace(over) == []

    within = _insert_job(cluster, SMALL_JOB)
    ctx.settings = ctx.settings.model_copy(update={"max_job_work": SMALL_JOB_WORK})
    assert runner.run_job(within, ctx) == "succeeded"


def test_the_parameter_budget_is_checked_again_on_the_loaded_data(make_cluster, monkeypatch):
    cluster = make_cluster()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    ctx = _solo_context(cluster)
    ctx.settings = ctx.settings.model_copy(update={"max_model_parameters": 30})
    job_id = _insert_job(cluster, SMALL_JOB)
    assert runner.run_job(job_id, ctx) == "failed"
    reason = cluster.job(job_id)["failure_reason"]
    assert "model: the model has 31 parameters" in reason and "(max_model_parameters)" in reason


def test_a_spec_queued_before_the_bounds_fails_naming_the_bound(make_cluster, monkeypatch):
    # The probe's lambdas, in a job accepted before SearchConfig bounded them: its grid was inf,
    # which the database refused three times ("DataError (a database ... error)").
    cluster = make_cluster()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    job_id = _insert_job(cluster, SMALL_JOB)
    spec = cluster.job(job_id)["spec"]
    spec["search"].update(lambda_min=-1e308, lambda_max=1e308)
    _set(cluster, job_id, spec=spec)
    assert runner.run_job(job_id, _solo_context(cluster)) == "failed"
    job = cluster.job(job_id)
    assert job["attempts"] == 1
    assert job["failure_reason"] == (
        "invalid job spec: lambda_min must be a finite number between -1e+06 and 1e+06, got -1e+308"
    )


def test_a_non_finite_lambda_fails_the_job_by_name_and_reaches_no_table(make_cluster, monkeypatch):
    cluster = make_cluster()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    # Whatever made it (the search's own arithmetic), a grid with an infinite lambda.
    monkeypatch.setattr(
        grid_module, "grid_lambdas", lambda lo, hi, n: np.array([-0.75, -0.5, np.inf])
    )
    job_id = _insert_job(cluster, SMALL_JOB)
    assert runner.run_job(job_id, _solo_context(cluster)) == "failed"
    job = cluster.job(job_id)
    assert job["attempts"] == 1  # the job's own failure: not retried as a database error
    reason = job["failure_reason"]
    assert reason.startswith("the job produced a non-finite number (inf) as lambdas[2] of fit r0/")
    assert "DataError" not in reason and "database" not in reason
    assert cluster.rows(JobFit, job_id) == [] and cluster.rows(LambdaStep, job_id) == []


def test_a_value_the_database_refuses_fails_the_job_at_once(make_cluster, monkeypatch):
    """SQLSTATE class 22 (here a NUL in text) is no outage: each of three attempts trained the
    whole job again to write the same value, and the reason blamed "a database, network or
    storage error"."""
    import psycopg
    from sqlalchemy.exc import DataError as RefusedValueError

    cluster = make_cluster()
    monkeypatch.setattr(runner, "JobQueue", lambda settings: Queue())
    refused = psycopg.errors.UntranslatableCharacter("unsupported Unicode escape sequence")

    def record_step(*args, **kwargs):
        raise RefusedValueError("INSERT INTO lambda_steps ...", {}, refused)

    monkeypatch.setattr(runner.store, "record_step", record_step)
    job_id = _insert_job(cluster, SMALL_JOB)
    assert runner.run_job(job_id, _solo_context(cluster)) == "failed"
    job = cluster.job(job_id)
    assert job["attempts"] == 1
    assert job["failure_reason"] == (
        "the database refused a value this job produced: unsupported Unicode escape sequence"
    )
