"""Celery tasks: each takes a job id and calls one function."""

from __future__ import annotations

from core.broker import HELP_JOB, RECONCILE, RUN_JOB
from worker.celery_app import app


@app.task(name=RUN_JOB, ignore_result=True)
def run_job(job_id: str) -> str:
    from worker.runner import run_job as run

    return run(job_id)


@app.task(name=HELP_JOB, ignore_result=True)
def help_job(job_id: str) -> str:
    from worker.helper import help_job as help_with

    return help_with(job_id)


@app.task(name=RECONCILE, ignore_result=True)
def reconcile() -> dict[str, int] | None:
    from worker.reconcile import reconcile_exclusively

    return reconcile_exclusively()
