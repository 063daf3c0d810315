"""Resuming an interrupted fit from its last trainer checkpoint (in the artifact store) gives
the fit an uninterrupted run gives, bit for bit."""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from core import store
from core.db.models import JobFit
from metro.datasets import load_dataset
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


def _mlp_setup(*, surrogate: str = "logistic", **training):
    """A repeat of builtin breast_cancer with a small MLP, trained as ``training`` says."""
    return prepare_repeat(
        load_dataset("builtin://breast_cancer"), metric=get_metric("f1"),
        surrogate=get_surrogate(surrogate), model=ModelSpec("mlp", hidden=(8,)),
        training=TrainingConfig(**training), repeat=0,
    )  # fmt: skip


def _runner(ctx, job_id: uuid.UUID, token: str) -> FitRunner:
    """A fit runner under a lease of its own (a worker fitting shards, not holding the job)."""
    return FitRunner(ctx, job_id, Lease(ctx, job_id, token, holds_job=False))


def _ledger(ctx, job_id: uuid.UUID, token: str, *, shard_size: int):
    """An attempt's ledger that asks no one for help."""
    from worker.fits import FitLedger

    return FitLedger(
        ctx, job_id, token, Lease(ctx, job_id, token, holds_job=False), shard_size=shard_size,
        request_help=lambda n: None,
    )  # fmt: skip


def _record_shard(ctx, job_id: uuid.UUID, key: str, lambdas: np.ndarray) -> None:
    """The row of one shareable grid shard of ``lambdas`` (as the job's worker records it)."""
    store.ensure_fits(ctx, job_id, [
        {"key": key, "repeat": 0, "role": "main", "shift": "minimal",
         "lambdas": lambdas.tolist(), "shareable": True},
    ])  # fmt: skip


def test_interrupted_sgd_fit_resumes_from_its_checkpoint(make_cluster):
    cluster = make_cluster(checkpoint_seconds=1e-9)  # save at every epoch
    ctx = _solo_context(cluster)
    setup = _mlp_setup(optimizer="sgd", epochs=12, batch_size=128)
    lambdas = np.array([-0.8, -0.4])
    job_id = uuid.uuid4()
    runner = _runner(ctx, job_id, "t")

    def crash_at_epoch_7(event):
        if event.step == 7:
            raise Crash

    with pytest.raises(Crash):
        runner.train(setup.solver("main"), "r0/main/c0/s0", lambdas, shift="minimal",
                     warm_start=None, on_event=crash_at_epoch_7)  # fmt: skip
    seen: list[int] = []
    resumed, _ = runner.train(
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
    setup = _mlp_setup(surrogate="exponential", optimizer="sgd", epochs=2, batch_size=16, lr=1e3)
    lambdas = np.array([-0.8, -0.4])
    job_id = uuid.UUID(cluster.submit())  # a job row for the fit to belong to (no worker runs)
    key = "r0/main/c0/s0"
    _record_shard(ctx, job_id, key, lambdas)
    runner = _runner(ctx, job_id, "t")
    fit, _ = runner.train(setup.solver("main"), key, lambdas, shift="minimal", warm_start=None)
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


def test_constrained_fits_are_recorded_shared_and_replayed_with_their_multipliers(make_cluster):
    """A constrained grid's shards carry their multipliers: a helper fits them as the job's
    worker would, a replay loads them, and a search that asks the same fits for other
    multipliers (or for none) is refused instead of mixing two searches."""
    from core.db.models import Job
    from core.job_spec import build_job_objects
    from metro.search.constrained import multiplier_rows
    from tests.worker.test_pipeline import CONSTRAINED_JOB
    from worker.fits import FitLedger, FitStoreError
    from worker.helper import help_job

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    job_id = uuid.UUID(cluster.submit(CONSTRAINED_JOB))  # no worker runs it
    with cluster.app.state.sessionmaker() as session:
        job = session.get(Job, job_id)
        assert job is not None
        job.state, spec = "running", dict(job.spec)  # a helper helps running jobs only
        # and only on the data the job's worker pinned when it loaded it
        job.data_sha256 = load_dataset(spec["dataset"]["uri"]).content_sha256
        session.commit()
    objects = build_job_objects(spec)
    setup = prepare_repeat(
        load_dataset(spec["dataset"]["uri"]), metric=objects.metric,
        surrogate=objects.surrogate, model=objects.model, training=objects.training, repeat=0,
        seed=objects.training.seed, constraints=objects.constraints,
    )  # fmt: skip
    lambdas = np.array([-0.9, -0.6, -0.3])
    rows = multiplier_rows(setup.constraints, 4.0, lambdas.size)

    def ledger(help_with: bool = False) -> FitLedger:
        lease = Lease(ctx, job_id, "t", holds_job=False)
        return FitLedger(
            ctx, job_id, f"attempt-{uuid.uuid4().hex[:6]}", lease, shard_size=2,
            # the job's worker asks for help; here the helper answers at once, taking every shard
            request_help=lambda n: help_job(str(job_id), ctx) if help_with else None,
        )  # fmt: skip

    def solve(led: FitLedger, multipliers: np.ndarray | None) -> list:
        solver = led.wrap(setup, "main", setup.solver("main"))
        extra = {} if multipliers is None else {"multipliers": multipliers}
        return solver.solve(lambdas, shift="minimal", **extra)

    first = ledger(help_with=True)
    helped = solve(first, rows)
    assert (first.trained, first.loaded) == (0, 2)  # both shards fitted by the helper
    recorded = {f.key: f.multipliers for f in cluster.rows(JobFit, str(job_id))}
    assert recorded == {"r0/main/c0/s0": rows[:2].tolist(), "r0/main/c0/s1": rows[2:].tolist()}
    direct = setup.solver("main").solve(lambdas, shift="minimal", multipliers=rows)
    for got, want in zip(helped, direct, strict=True):
        assert got.multipliers == want.multipliers == (float(rows[0, 0]),)
        assert np.array_equal(got.validation_cells, want.validation_cells)

    replay = ledger()
    again = solve(replay, rows)
    assert (replay.trained, replay.loaded) == (0, 2)
    assert [c.validation_cells.tolist() for c in again] == [
        c.validation_cells.tolist() for c in helped
    ]
    for other in (multiplier_rows(setup.constraints, 1.0, lambdas.size), None):
        with pytest.raises(FitStoreError, match="other multipliers"):
            solve(ledger(), other)


def test_a_stacked_fold_grid_is_recorded_as_one_fit_per_shard_and_replayed(
    make_cluster, monkeypatch
):
    """With the folds stacked (as on a GPU; forced here on the CPU), a cross-validated grid is
    recorded under the role ``folds3``: one fit per shard holding every fold's models. The job
    reports a trace step per (fold, lambda), and another attempt replays the recorded fits to
    the same candidates, training nothing."""
    import metro.experiment
    from tests.worker.test_pipeline import _insert_job
    from worker.runner import run_job

    monkeypatch.setattr(metro.experiment, "stacks_folds", lambda model, config: True)
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    body = {
        "metric": {"preset": "f1"},
        "dataset": {"uri": "builtin://breast_cancer"},
        "model": {"kind": "mlp", "hidden": [8]},
        "search": {"strategy": "grid", "n_lambdas": 10, "shift": "minimal", "cv": 3},
        "training": {"optimizer": "sgd", "epochs": 4, "batch_size": 64},
    }
    job = _insert_job(cluster, body)
    assert run_job(job, ctx) == "succeeded"
    keys = sorted(f.key for f in cluster.fits(job))
    # shards of 8 lambdas (the cpu default): 8 + 2, each with the 3 folds' models
    assert [k for k in keys if "/folds3/" in k] == ["r0/folds3/c0/s0", "r0/folds3/c0/s1"]
    assert not [k for k in keys if "/fold0of3/" in k]  # no fold fitted on its own
    stacked = [f for f in cluster.fits(job) if "/folds3/" in f.key]
    assert sorted(len(f.surrogate_loss) for f in stacked) == [6, 24]  # 3 folds x 2 and x 8
    from core.db.models import LambdaStep

    folded = [s for s in cluster.rows(LambdaStep, job) if s.fold is not None]  # less the refit
    assert sorted({s.fold for s in folded}) == [0, 1, 2] and len(folded) == 30

    # Another job's grid solved through a ledger, then again through another (a second
    # attempt, before the job finished and its fits were cleared): every shard is loaded.
    from core.db.models import Job
    from core.job_spec import build_job_objects
    from worker.fits import FitLedger

    second = uuid.UUID(_insert_job(cluster, body))
    with cluster.app.state.sessionmaker() as session:
        row = session.get(Job, second)
        assert row is not None
        spec = dict(row.spec)  # normalized
    objects = build_job_objects(spec)
    setup = prepare_repeat(
        load_dataset(spec["dataset"]["uri"]), metric=objects.metric,
        surrogate=objects.surrogate, model=objects.model, training=objects.training, repeat=0,
        seed=objects.training.seed,
    )  # fmt: skip
    lambdas = np.array(sorted(s.lambda_ for s in folded if s.fold == 0))

    def attempt(token: str) -> tuple[FitLedger, list]:
        ledger = _ledger(ctx, second, token, shard_size=8)
        solver = ledger.wrap(setup, "folds3", setup.solver("folds3"))
        return ledger, solver.solve(lambdas, shift="minimal")

    first, _ = attempt("first")
    ledger, replayed = attempt("second")
    assert (first.trained, first.loaded) == (2, 0) and (ledger.trained, ledger.loaded) == (0, 2)
    fresh = setup.solver("folds3").solve(lambdas, shift="minimal")
    # shard by shard, each shard fold-major; the grid regroups them by fold
    assert [(c.fold, c.lam) for c in replayed[:8]] == [(0, lam) for lam in lambdas[:8]]
    assert sorted((c.fold, c.lam) for c in replayed) == [(c.fold, c.lam) for c in fresh]
    for got, want in zip(sorted(replayed, key=lambda c: (c.fold, c.lam)), fresh, strict=True):
        np.testing.assert_array_equal(got.validation_cells, want.validation_cells)


def test_a_helper_removes_the_fits_of_a_job_that_finished_while_it_wrote(make_cluster):
    """A helper notices a cancel up to a poll after the job's worker, which removes the job's
    fits as it finishes: a checkpoint or shard the helper wrote in between stayed for good.
    After its last write a helper asks whether the job finished, and removes them if so."""
    from tests.worker.test_pipeline import _insert_job
    from tests.worker.test_reconcile import _set
    from worker import artifacts
    from worker.helper import _drop_fits_if_finished

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    job_id = _insert_job(cluster, {"metric": {"preset": "f1"},
                                   "dataset": {"uri": "builtin://breast_cancer"}})  # fmt: skip
    root = ctx.settings.artifacts_uri
    late = artifacts.fit_path(uuid.UUID(job_id), "r0/main/c0/s3", ".ckpt.safetensors")
    _set(cluster, job_id, state="running")
    artifacts.put_bytes(root, late, b"{}")
    _drop_fits_if_finished(ctx, uuid.UUID(job_id))
    assert artifacts.get_bytes(root, late) == b"{}"  # running: its worker still needs them
    _set(cluster, job_id, state="cancelled")
    _drop_fits_if_finished(ctx, uuid.UUID(job_id))
    assert artifacts.get_bytes(root, late) is None


def test_a_shard_fitted_twice_keeps_the_recorded_bytes_and_the_second_uses_them(make_cluster):
    """Two workers can fit one shard (one stalled past its lease, another took it over). The
    second to finish wrote its bytes over the file the first had recorded: where the two fits
    differed in a bit (another machine, a GPU), every later load failed its digest and the job
    failed. Each writer now has a file of its own; the second's is removed and it uses the
    recorded fit, as a replay does."""
    from worker import artifacts

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    setup = _mlp_setup(optimizer="sgd", epochs=3, batch_size=128)
    lambdas = np.array([-0.8, -0.4])
    job_id = uuid.UUID(cluster.submit())  # a job row for the fit to belong to (no worker runs)
    key = "r0/main/c0/s0"
    _record_shard(ctx, job_id, key, lambdas)
    first = _runner(ctx, job_id, "a")
    recorded, is_recorded = first.train(
        setup.solver("main"), key, lambdas, shift="minimal", warm_start=None
    )
    assert is_recorded
    row = store.get_fit(ctx, job_id, key)
    assert row is not None and row.artifact is not None
    kept = artifacts.get_bytes(ctx.settings.artifacts_uri, row.artifact)

    # The late one fits the same shard to other bits (here: another seed).
    other = _mlp_setup(optimizer="sgd", epochs=3, batch_size=128, seed=7)
    late = _runner(ctx, job_id, "b")
    mine, is_recorded = late.train(
        other.solver("main"), key, lambdas, shift="minimal", warm_start=None
    )
    assert not is_recorded
    assert any(
        not torch.equal(tensor, recorded.model.tensors()[name])
        for name, tensor in mine.model.tensors().items()
    )
    assert artifacts.get_bytes(ctx.settings.artifacts_uri, row.artifact) == kept
    loaded = late.load(store.get_fit(ctx, job_id, key), setup.solver("main"))  # no digest error
    for name, tensor in recorded.model.tensors().items():
        assert torch.equal(loaded.tensors()[name], tensor), name
    fits = cluster.app.state.settings.artifacts_uri
    names = sorted(p.name for p in (Path(fits) / artifacts.fits_dir(job_id)).iterdir())
    assert names == [Path(row.artifact).name]  # the late writer's file is gone

    # Through a ledger: a worker whose claim was taken over and whose fit lost the race
    # continues with the recorded fit, the one a replay of the search loads.
    job_id = uuid.UUID(cluster.submit())
    ledger = _ledger(ctx, job_id, "c", shard_size=8)
    real_train = ledger.runner.train

    def train_while_another_records(inner, key, chunk, **kwargs):
        # the other worker finishes first, with the first setup's fit
        _runner(ctx, job_id, "d").train(
            setup.solver("main"), key, chunk, shift="minimal", warm_start=None
        )
        return real_train(other.solver("main"), key, chunk, **kwargs)

    ledger.runner.train = train_while_another_records  # type: ignore[method-assign]
    (a, b) = ledger.wrap(setup, "main", setup.solver("main")).solve(lambdas, shift="minimal")
    direct = setup.solver("main").solve(lambdas, shift="minimal")
    assert np.array_equal(a.validation_cells, direct[0].validation_cells)
    assert np.array_equal(b.validation_cells, direct[1].validation_cells)
    assert (ledger.trained, ledger.loaded) == (1, 1)

    # And where the store then loses the recorded file, the next pass puts the fit back and
    # fits it itself (the job failed here: the loser loaded the recorded fit directly).
    job_id = uuid.UUID(cluster.submit())
    ledger = _ledger(ctx, job_id, "e", shard_size=8)
    real_train = ledger.runner.train
    calls = []

    def lose_the_race_then_the_file(inner, key, chunk, **kwargs):
        calls.append(key)
        if len(calls) > 1:  # fitting it again, after the fit was put back
            return real_train(inner, key, chunk, **kwargs)
        _runner(ctx, job_id, "f").train(
            setup.solver("main"), key, chunk, shift="minimal", warm_start=None
        )
        recorded_file = store.get_fit(ctx, job_id, key).artifact
        artifacts.remove_tree(ctx.settings.artifacts_uri, recorded_file)
        return real_train(other.solver("main"), key, chunk, **kwargs)

    ledger.runner.train = lose_the_race_then_the_file  # type: ignore[method-assign]
    (a, b) = ledger.wrap(setup, "main", setup.solver("main")).solve(lambdas, shift="minimal")
    assert calls == ["r0/main/c0/s0", "r0/main/c0/s0"]
    assert (ledger.trained, ledger.loaded) == (2, 0)
    assert np.array_equal(a.validation_cells, direct[0].validation_cells)
    assert np.array_equal(b.validation_cells, direct[1].validation_cells)

    # A fit put back is one whose file and digest are still those the row names: a worker
    # holding an older reading of the row (the same digest, another writer's file) leaves it.
    row = store.get_fit(ctx, job_id, "r0/main/c0/s0")
    assert row is not None and row.state == "done"
    assert not store.reopen_fit(ctx, job_id, row.key, artifact="elsewhere", sha256=row.sha256)
    assert store.reopen_fit(ctx, job_id, row.key, artifact=row.artifact, sha256=row.sha256)
    assert store.get_fit(ctx, job_id, row.key).state == "pending"


def test_a_checkpoint_is_one_object_with_its_step(make_cluster):
    """Tensors and scalars in one write: as two files, a worker killed between the writes left
    one step's tensors beside the step before's scalars, and the resume trained an extra
    epoch."""
    from worker import artifacts

    cluster = make_cluster(checkpoint_seconds=1e-9)
    ctx = _solo_context(cluster)
    setup = _mlp_setup(optimizer="sgd", epochs=12, batch_size=128)
    job_id = uuid.uuid4()
    runner = _runner(ctx, job_id, "t")

    def crash_at_epoch_5(event):
        if event.step == 5:
            raise Crash

    with pytest.raises(Crash):
        runner.train(setup.solver("main"), "r0/main/c0/s0", np.array([-0.5]), shift="minimal",
                     warm_start=None, on_event=crash_at_epoch_5)  # fmt: skip
    folder = Path(ctx.settings.artifacts_uri) / artifacts.fits_dir(job_id)
    assert sorted(p.name for p in folder.iterdir()) == ["r0_main_c0_s0.ckpt.safetensors"]
    checkpoint = runner._load_checkpoint("r0/main/c0/s0")
    assert checkpoint is not None and checkpoint["scalars"]["step"] == 4
    assert "__checkpoint_scalars__" not in checkpoint["tensors"]


def test_a_fit_whose_stored_weights_are_lost_is_fitted_again(make_cluster, monkeypatch):
    """A replay that finds a recorded fit's file gone, or its bytes not those recorded, fits it
    again (the job failed before: "missing or corrupt"), to the same candidates."""
    from worker import artifacts
    from worker.fits import FitStoreError

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    setup = _mlp_setup(optimizer="sgd", epochs=3, batch_size=128)
    lambdas = np.array([-0.9, -0.6, -0.3, -0.1])
    job_id = uuid.UUID(cluster.submit())
    root = ctx.settings.artifacts_uri

    def attempt(token: str):
        ledger = _ledger(ctx, job_id, token, shard_size=2)
        return ledger, ledger.wrap(setup, "main", setup.solver("main")).solve(
            lambdas, shift="minimal"
        )

    first, fitted = attempt("first")
    assert (first.trained, first.loaded) == (2, 0)
    s0, s1 = (store.get_fit(ctx, job_id, f"r0/main/c0/s{i}") for i in (0, 1))
    assert s0 is not None and s1 is not None and s0.artifact and s1.artifact
    artifacts.remove_tree(root, s0.artifact)  # gone
    artifacts.put_bytes(root, s1.artifact, b"not the recorded bytes")  # damaged
    second, replayed = attempt("second")
    assert (second.trained, second.loaded) == (2, 0)
    for got, want in zip(replayed, fitted, strict=True):
        assert np.array_equal(got.validation_cells, want.validation_cells)
    third, _ = attempt("third")
    assert (third.trained, third.loaded) == (0, 2)  # recorded again, and loaded

    # A fit found lost again after it was put back (another worker recorded it anew, and the
    # store lost that too) fails the search with the error instead of going round.
    monkeypatch.setattr(artifacts, "get_bytes", lambda root, rel: None)
    monkeypatch.setattr(store, "reopen_fit", lambda *args, **kwargs: True)  # stays done
    with pytest.raises(FitStoreError, match="missing or corrupt"):
        attempt("fourth")
