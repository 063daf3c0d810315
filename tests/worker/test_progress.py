"""A running job's progress, as every write to the database recorded it: monotone, ending at 1,
moving within each fit (a stacked fit trains a whole fold of the grid at once), throttled."""

from __future__ import annotations

import itertools
from typing import Any

from sqlalchemy import text

from tests.worker.conftest import Cluster
from tests.worker.test_pipeline import _insert_job, _solo_context

# Two repeats of a 3-lambda grid on 5 folds (cv "auto"), each fit 8 SGD epochs: 12 fits,
# 32 lambda steps.
JOB: dict[str, Any] = {
    "metric": {"preset": "f1"},
    "dataset": {"uri": "builtin://breast_cancer"},
    "model": {"kind": "linear"},
    "search": {"strategy": "grid", "n_lambdas": 3, "shift": "minimal"},
    "training": {"optimizer": "sgd", "epochs": 8, "batch_size": 128},
    "repeats": 2,
}

# Every change of a job's progress, in commit order (a trigger, so that no poll can miss one).
_RECORD_PROGRESS = [
    "CREATE TABLE progress_log (seq bigserial PRIMARY KEY, job_id uuid, progress float8)",
    """CREATE FUNCTION log_progress() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO progress_log (job_id, progress) VALUES (NEW.id, NEW.progress);
       RETURN NEW; END $$""",
    """CREATE TRIGGER log_progress AFTER UPDATE OF progress ON jobs FOR EACH ROW
       WHEN (OLD.progress IS DISTINCT FROM NEW.progress) EXECUTE FUNCTION log_progress()""",
]


def _recording(cluster: Cluster) -> Cluster:
    with cluster.app.state.engine.begin() as conn:
        for statement in _RECORD_PROGRESS:
            conn.execute(text(statement))
    return cluster


def _progress_values(cluster: Cluster, job_id: str) -> list[float]:
    with cluster.app.state.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT progress FROM progress_log WHERE job_id = :id ORDER BY seq"),
            {"id": job_id},
        )
        return [float(v) for (v,) in rows]


def _run(cluster: Cluster, progress_seconds: float) -> tuple[list[float], int]:
    """Run JOB in this process (the worker's own code) with that throttle; return its progress
    values and its number of lambda steps."""
    from worker.runner import run_job

    job_id = _insert_job(cluster, JOB)
    ctx = _solo_context(cluster)
    ctx.settings = ctx.settings.model_copy(update={"progress_seconds": progress_seconds})
    assert run_job(job_id, ctx) == "succeeded"
    assert cluster.job(job_id)["progress"] == 1.0
    return _progress_values(cluster, job_id), len(cluster.trace(job_id))


def test_progress_moves_within_each_fit_and_never_back(make_cluster):
    from worker.runner import Progress

    cluster = _recording(make_cluster())
    values, n_steps = _run(cluster, progress_seconds=0.0)
    assert n_steps == 2 * (3 * 5 + 1)
    assert values == sorted(values), "the progress moved back"
    assert values[-1] == 1.0 and values[0] < 0.05
    # A value per optimizer step of each fit, not only per lambda step: the progress moves
    # while a fold's stacked fit trains, not in one burst when its lambdas come in.
    assert len(set(values)) > 2 * n_steps, values
    # Across folds and repeats: no jump longer than one fold's share of the job.
    assert max(b - a for a, b in itertools.pairwise(values)) < 1 / (2 * 5 + 1)
    # The refinement step's fits move it too, after the search's: every fold's fit at each
    # temperature of both scales, before the second repeat's search begins.
    bar = Progress(JOB)
    search_done = bar.at(0, bar.metro_units)
    refined = [
        v for v in values if search_done < v <= bar.at(0, bar.metro_units + bar.refine_units)
    ]
    assert len(refined) >= 2 * 5 * 3, (search_done, values)


def test_progress_writes_from_fits_are_throttled(make_cluster):
    cluster = _recording(make_cluster())
    # A throttle longer than the job: the fits' steps write the progress once at most; the
    # lambda steps write their own (one each) and the end writes 1.0.
    values, n_steps = _run(cluster, progress_seconds=3600.0)
    assert values == sorted(values) and values[-1] == 1.0
    assert len(values) <= n_steps + 2, values
