"""Resuming an interrupted fit from its last trainer checkpoint (in the artifact store) gives
the fit an uninterrupted run gives, bit for bit."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest
import torch

from core import store
from core.db.models import JobFit
from metro.data import load_dataset
from metro.experiment import prepare_repeat
from metro.metrics import get_metric
from metro.models import ModelSpec
from metro.surrogates import get_surrogate
from metro.trainer import TrainingConfig
from tests.worker.test_pipeline import _solo_context
from worker.fits import FitRunner
from worker.lease import Lease


class Crash(Exception):  # noqa: N818 - a simulated crash, not an error of the code
    pass


def test_interrupted_sgd_fit_resumes_from_its_checkpoint(make_cluster):
    cluster = make_cluster(checkpoint_seconds=1e-9)  # save at every epoch
    ctx = _solo_context(cluster)
    setup = prepare_repeat(
        load_dataset("builtin://breast_cancer"), metric=get_metric("f1"),
        surrogate=get_surrogate("logistic"), model=ModelSpec("mlp", hidden=(8,)),
        training=TrainingConfig(optimizer="sgd", epochs=12, batch_size=128), repeat=0,
    )  # fmt: skip
    lambdas = np.array([-0.8, -0.4])
    job_id = uuid.uuid4()
    runner = FitRunner(ctx, job_id, Lease(ctx, job_id, "t", holds_job=False))

    def crash_at_epoch_7(event):
        if event.step == 7:
            raise Crash

    with pytest.raises(Crash):
        runner.train(setup.solver("main"), "r0/main/c0/s0", lambdas, shift="minimal",
                     warm_start=None, on_event=crash_at_epoch_7)  # fmt: skip
    seen: list[int] = []
    resumed = runner.train(
        setup.solver("main"), "r0/main/c0/s0", lambdas, shift="minimal", warm_start=None,
        on_event=lambda e: seen.append(e.step),
    )  # fmt: skip
    assert seen[0] == 7  # after the last saved epoch (6), not from the start

    whole = setup.solver("main").fit(lambdas, shift="minimal")
    for name, tensor in whole.model.tensors().items():
        assert torch.equal(resumed.model.tensors()[name], tensor), name
    assert np.array_equal(resumed.surrogate_loss, whole.surrogate_loss)


def test_a_diverged_fit_is_stored_and_loaded_as_diverged(make_cluster):
    # metro reports a blown-up fit's loss as +inf; JSON (and Postgres's json) has no infinity.
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    setup = prepare_repeat(
        load_dataset("builtin://breast_cancer"), metric=get_metric("f1"),
        surrogate=get_surrogate("exponential"), model=ModelSpec("mlp", hidden=(8,)),
        training=TrainingConfig(optimizer="sgd", epochs=2, batch_size=16, lr=1e3), repeat=0,
    )  # fmt: skip
    lambdas = np.array([-0.8, -0.4])
    job_id = uuid.UUID(cluster.submit())  # a job row for the fit to belong to (no worker runs)
    key = "r0/main/c0/s0"
    store.ensure_fits(ctx, job_id, [
        {"key": key, "repeat": 0, "role": "main", "shift": "minimal",
         "lambdas": lambdas.tolist(), "shareable": True},
    ])  # fmt: skip
    runner = FitRunner(ctx, job_id, Lease(ctx, job_id, "t", holds_job=False))
    fit = runner.train(setup.solver("main"), key, lambdas, shift="minimal", warm_start=None)
    assert fit.diverged.all()
    (raw,) = [f for f in cluster.rows(JobFit, str(job_id)) if f.key == key]
    assert raw.state == "done" and raw.surrogate_loss == [None, None]
    row = store.get_fit(ctx, job_id, key)
    assert row is not None and row.surrogate_loss == [math.inf, math.inf]
    solver = setup.solver("main")
    candidates = solver.adopt(
        runner.load(row, solver), lambdas, shift="minimal", surrogate_loss=row.surrogate_loss
    )
    assert all(c.diverged for c in candidates)
