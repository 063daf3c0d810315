"""End to end through real workers: submit, train, trace, result, model, prediction; duplicate
deliveries; cancellation; failures with their reason; two workers sharing one grid."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.worker.conftest import SMALL_JOB, Cluster, shards_helped, wait_until


def test_end_to_end(pair: Cluster):
    started = time.monotonic()
    job_id = pair.submit()
    first = wait_until(lambda: pair.trace(job_id), 60, "the first lambda step", 0.02)
    to_first_step = time.monotonic() - started
    job = pair.wait_state(job_id)
    assert job["state"] == "succeeded", job
    assert job["progress"] == 1.0 and job["attempts"] == 1 and job["failure_reason"] is None
    assert first[0]["step"] == 0

    trace = pair.trace(job_id)
    # The default search: 5 grid points on each of 5 folds (cv "auto"), then the refit at the
    # chosen lambda, each once, in order.
    assert [s["step"] for s in trace] == list(range(26))
    assert {s["shift"] for s in trace} == {"minimal"}
    assert [s["fold"] for s in trace[:25]] == [k for k in range(5) for _ in range(5)]
    assert trace[25]["fold"] is None
    assert all(s["validation_metric"] is not None for s in trace[:25])

    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert result["lambda_star"] == job["best_lambda"]
    # One number for the model's lambda: the refit's, in the job, the result and its choice.
    [choice] = job["choices"]
    assert choice["trained_lambda"] == trace[25]["lambda"] == job["best_lambda"]
    assert choice["shift"] == trace[25]["shift"] == result["shift"]
    assert result["trained_lambda"] == choice["trained_lambda"] and result["choices"] == [choice]
    assert (choice["selection_split"], choice["n_folds"]) == ("cross-validation", 5)
    assert choice["ratio_reached"] is None  # a grid reaches no ratio
    assert choice["strategy"] == "grid"
    assert sum(choice["selection_counts"].values()) == 455  # every development row held out once
    assert result["selection"]["mean"] == choice["selection_score"]
    assert (result["metric"], result["metric_display_name"]) == ("f1", "F1")
    splits = {(r["method"], r["split"]) for r in result["runs"]}
    assert splits == {("metro", "validation"), ("metro", "test")}
    test_run = next(r for r in result["runs"] if r["split"] == "test")
    assert test_run["value"] > 0.9
    assert sum(test_run["confusion"].values()) == 114

    # The same numbers as the library's own run_experiment with the job's settings (the grid
    # was fitted in shards of 3 lambdas: equal up to float round-off).
    from core.job_spec import (
        build_metric,
        build_model_spec,
        build_search,
        build_surrogate,
        build_training_config,
    )  # fmt: skip
    from metro.datasets import load_dataset
    from metro.experiment import run_experiment

    spec = job["spec"]
    training = build_training_config(spec["training"])
    direct = run_experiment(
        load_dataset("builtin://breast_cancer"), metric=build_metric(spec["metric"]),
        surrogate=build_surrogate(spec["surrogate"]), model=build_model_spec(spec["model"]),
        search=build_search(spec["search"]), training=training, seed=training.seed,
    )  # fmt: skip
    assert direct.searches[0].lambda_star == pytest.approx(result["lambda_star"])
    assert -direct.searches[0].selection_loss == pytest.approx(choice["selection_score"])
    assert [s.lam for s in direct.traces[0]] == pytest.approx([s["lambda"] for s in trace])
    assert [s.validation_metric for s in direct.traces[0][:5]] == pytest.approx(
        [s["validation_metric"] for s in trace[:5]]
    )

    # The model: registered once, loadable, predicts like the manifest says, exports ONNX.
    models = pair.client.get("/v1/models", headers=pair.headers).json()["items"]
    mine = [m for m in models if m["job_id"] == job_id]
    assert len(mine) == 1 and mine[0]["formats"] == ["safetensors", "onnx"]
    manifest = mine[0]["manifest"]
    # Only what a linear model has: it carried mlp's hidden and cnn3's channels too.
    assert manifest["architecture"] == {"kind": "linear"} == spec["model"]
    assert manifest["n_features"] == 30
    assert manifest["lambda_star"] == result["lambda_star"] and manifest["threshold"] == 0.0
    assert (manifest["trained_lambda"], manifest["shift"]) == (
        choice["trained_lambda"],
        choice["shift"],
    )
    assert manifest["metric"]["display_name"] == "F1"
    assert manifest["selection"]["selection_score"] == choice["selection_score"]
    assert manifest["tuned_threshold"] == pytest.approx(direct.searches[0].threshold, abs=1e-5)
    # The refinement step ran in the worker as in the library, and is reported once.
    step = choice["refinement"]
    assert step is not None and manifest["refinement"] == step
    assert {s["temperature"] for s in step["scores"]} == {0.05, 0.2, 0.5}
    assert direct.searches[0].refinement is not None
    assert step["kept"] == direct.searches[0].refinement.kept
    # The delivered model's check (refine_consistency) is reported when a step won held out.
    ratio = direct.searches[0].refinement.refit_rate_ratio
    assert step["refit_rate_ratio"] == (None if ratio is None else pytest.approx(ratio))
    if step["kept"]:
        assert 0.5 <= step["refit_rate_ratio"] <= 2.0
    # And so is the evidence of a boundary (refine_signal), where it was asked for.
    signal = direct.searches[0].refinement.signal_probability
    assert step["signal_probability"] == (None if signal is None else pytest.approx(signal))
    # The curve the choice ran over: every grid lambda, pooled over the 5 folds at its own
    # threshold; its best point is the chosen lambda, at the score the search chose by.
    curve = choice["selection_curve"]
    assert [p["lambda"] for p in curve] == pytest.approx([s["lambda"] for s in trace[:5]])
    best = max(curve, key=lambda p: p["score"])
    assert best["lambda"] == pytest.approx(choice["trained_lambda"])
    assert best["score"] == pytest.approx(step["score_before"])
    assert [p.lam for p in direct.searches[0].selection_curve] == pytest.approx(
        [p["lambda"] for p in curve]
    )
    assert manifest["labels"] == {"positive": "malignant", "negative": "benign"} or set(
        manifest["labels"]
    ) == {"positive", "negative"}
    # Which class F1 counted, said where the numbers are: the result and every prediction
    # (the spec left positive_label to be inferred); which data, by the job's digest.
    assert result["labels"] == manifest["labels"]
    assert manifest["data_sha256"] == job["data_sha256"] is not None
    # How to train it again, after the job is deleted too: the spec as stored, defaults filled.
    assert manifest["job_spec"] == job["spec"] and manifest["job_spec"]["training"]["seed"] == 0
    data = load_dataset("builtin://breast_cancer")
    r = pair.client.post(
        f"/v1/models/{mine[0]['id']}/predict",
        json={"instances": data.X[:50].tolist()},
        headers=pair.headers,
    )
    assert r.status_code == 200, r.text
    labels = r.json()["labels"]
    assert r.json()["positive_label"] == manifest["labels"]["positive"]
    truth = [data.positive_label if v else data.negative_label for v in data.y[:50]]
    assert np.mean([a == b for a, b in zip(labels, truth, strict=True)]) > 0.9
    onnx = pair.client.get(
        f"/v1/models/{mine[0]['id']}/download", params={"format": "onnx"}, headers=pair.headers
    )
    assert onnx.status_code == 200 and len(onnx.content) > 100
    import onnxruntime

    meta = onnxruntime.InferenceSession(onnx.content).get_modelmeta().custom_metadata_map
    assert json.loads(meta["labels"]) == manifest["labels"]
    assert json.loads(meta["feature_names"]) == manifest["feature_names"]
    print(f"\nsubmit -> first lambda step: {to_first_step:.2f}s")


def test_duplicate_delivery_runs_once(pair: Cluster):
    """The same message three times (a redelivery, a reconciler resend): one attempt, one trace,
    one model; the other copies find the job held or finished and are acknowledged."""
    from core.broker import RUN_JOB
    from core.queue import JobQueue, queue_for, run_task_id

    job_id = pair.submit()
    queue = JobQueue(pair.settings)
    task_id = run_task_id(job_id)
    for _ in range(3):
        queue.app.send_task(
            RUN_JOB, args=[job_id], task_id=task_id, queue=queue_for(SMALL_JOB, pair.settings)
        )
    job = pair.wait_state(job_id)
    assert job["state"] == "succeeded" and job["attempts"] == 1
    wait_until(
        lambda: sum(w.log().count(task_id) for w in pair.workers) >= 6, 30,
        "the duplicates to be acknowledged",
    )  # fmt: skip
    assert sum(w.log().count(f"job {job_id} is not claimable") for w in pair.workers) >= 3
    assert [s[1] for s in pair.steps(job_id)] == list(range(26))
    assert len(pair.models(job_id)) == 1 and len(pair.results(job_id)) == 2


def test_each_worker_uses_the_cpu_threads_the_settings_give_it(pair: Cluster):
    # Two workers on this machine, one PyTorch thread each (Settings.worker_torch_threads): with
    # a thread per core each, two jobs at once took 7 times as long as one alone.
    assert len(pair.workers) == 2
    for worker in pair.workers:
        assert "PyTorch CPU threads: 1" in worker.log(), worker.log()[-2000:]


def test_cancel_a_running_job(pair: Cluster):
    """Cancellation is noticed between epochs of a long fit, well before it would end."""
    long_job = {
        **SMALL_JOB,
        "model": {"kind": "mlp", "hidden": [16]},
        "search": {"strategy": "grid", "n_lambdas": 2, "shift": "minimal"},
        # The most epochs a spec may ask for (metro.trainer.config.MAX_EPOCHS), of small
        # batches: minutes per fit, so the cancel always lands inside the first one.
        "training": {"optimizer": "sgd", "epochs": 10_000, "batch_size": 16},
    }
    job_id = pair.submit(long_job)
    pair.wait_state(job_id, ("running",))
    # What a cancelled job had recorded (fits, checkpoints) goes with it (it was left behind).
    recorded = Path(pair.settings.artifacts_uri) / "jobs" / job_id / "fits"
    recorded.mkdir(parents=True, exist_ok=True)
    (recorded / "r0_main_c0_s0.safetensors").write_bytes(b"a fit recorded before the cancel")
    time.sleep(0.5)  # well inside the first fit
    r = pair.client.post(f"/v1/jobs/{job_id}/cancel", headers=pair.headers)
    assert r.status_code == 200 and r.json()["state"] in ("cancelling", "cancelled")
    started = time.monotonic()
    job = pair.wait_state(job_id, timeout=20)
    assert job["state"] == "cancelled", job
    assert time.monotonic() - started < 10
    assert pair.models(job_id) == [] and pair.results(job_id) == []
    wait_until(lambda: not recorded.exists(), 10, "the cancelled job's fits to be removed")
    # Both workers are free again.
    ids = [pair.submit(), pair.submit()]
    assert [pair.wait_state(j)["state"] for j in ids] == ["succeeded", "succeeded"]


@pytest.mark.parametrize(
    ("csv", "label_column", "reason"),
    [
        ("a,b,label\n1,2,0\n3,4,1\n", "y", "label column 'y' not found"),
        ("a,y\n" + "".join(f"{i},0\n" for i in range(40)), "y", "at least two classes"),
        ("a,y\n" + "x,1\n" * 20 + "2,0\n" * 20, "y", "is not numeric"),
    ],
    ids=["no-label-column", "one-class", "text-feature"],
)
def test_broken_dataset_fails_with_its_reason_and_next_job_succeeds(
    pair: Cluster, csv: str, label_column: str, reason: str
):
    path = pair.data_dir / f"broken-{uuid.uuid4().hex[:8]}.csv"
    path.write_text(csv)
    bad = pair.submit(
        {**SMALL_JOB, "dataset": {"uri": f"file://{path}", "label_column": label_column}}
    )
    good = pair.submit()
    failed = pair.wait_state(bad)
    assert failed["state"] == "failed"
    assert reason in failed["failure_reason"], failed["failure_reason"]
    assert "Traceback" not in failed["failure_reason"] and 'File "' not in failed["failure_reason"]
    assert failed["attempts"] == 1  # a data error is final: no retry
    assert pair.wait_state(good)["state"] == "succeeded"


def test_two_workers_share_a_grid_and_match_one_worker(pair: Cluster):
    """A grid of 12 lambdas in shards of 3: the idle worker helps; the gathered trace, metrics
    and model are exactly those of the same job run by a single worker."""
    body = {
        **SMALL_JOB,
        "model": {"kind": "mlp", "hidden": [16]},
        "search": {"strategy": "grid", "n_lambdas": 12, "shift": "minimal", "cv": None},
        "training": {"optimizer": "sgd", "epochs": 15, "batch_size": 128},
    }
    shared = pair.submit(body)
    assert pair.wait_state(shared, timeout=120)["state"] == "succeeded"
    fits = pair.fits(shared)
    assert sorted(f.key for f in fits if f.shareable) == [f"r0/main/c0/s{i}" for i in range(4)]
    assert shards_helped(pair, shared) >= 1, "the second worker took no shard"

    # The same job again, run by one worker alone (in this process, help requests unheard):
    # bit-identical weights.
    _assert_same_as_one_run_alone(pair, body, shared)


def _numbers(rows):
    return [tuple(v for v in row) for row in rows]


def _assert_same_as_one_run_alone(cluster: Cluster, body: dict, job_id: str) -> None:
    """An uninterrupted run of the same job with the same seed gives the same steps, results
    and model bytes as ``job_id`` did."""
    alone = _insert_job(cluster, body)
    from worker.runner import run_job

    # At the workers' PyTorch threads: a float sum split over another number of threads is
    # added in another order, so bit-for-bit equality holds only at the same count.
    threads = torch.get_num_threads()
    torch.set_num_threads(cluster.settings.worker_torch_threads or threads)
    try:
        # A lease of a minute, not the cluster's 2 s: a test process starved for 2 s on a loaded
        # machine lost the job to the cluster's reconciler mid-run ("lost"), which is not what
        # this compares.
        assert run_job(alone, _solo_context(cluster, lease_seconds=60.0)) == "succeeded"
    finally:
        torch.set_num_threads(threads)
    assert _numbers(cluster.steps(alone)) == _numbers(cluster.steps(job_id))
    assert _numbers(cluster.results(alone)) == _numbers(cluster.results(job_id))
    (delivered,), (again,) = cluster.models(job_id), cluster.models(alone)
    assert again.sha256 == delivered.sha256  # bit-identical weights


def _insert_job(cluster: Cluster, body: dict) -> str:
    """A queued job written straight to the database (no message is sent for it)."""
    from sqlalchemy import select

    from service.crud.jobs import submit_job
    from service.job_spec import normalize_job_spec
    from service.schemas.jobs import JobCreate

    spec = normalize_job_spec(JobCreate.model_validate(body))
    with cluster.app.state.sessionmaker() as session:
        key = cluster.headers["Authorization"].split()[1]
        from core.db.models import ApiKey
        from service.security import hash_api_key

        tenant_id = session.scalar(
            select(ApiKey.tenant_id).where(ApiKey.key_hash == hash_api_key(key))
        )
        job, _ = submit_job(
            session, tenant_id=tenant_id, spec=spec, dataset_uri=spec["dataset"]["uri"],
            dataset_id=None, idempotency_key=None,
        )  # fmt: skip
        return str(job.id)


def _solo_context(cluster: Cluster, **overrides: object):
    from worker.context import WorkerContext

    update = {"queue_prefix": cluster.prefix + "solo.", **overrides}
    settings = cluster.settings.model_copy(update=update)
    return WorkerContext(settings, cluster.app.state.engine, cluster.app.state.sessionmaker)


def test_a_search_whose_fits_all_diverge_fails_with_the_reason(pair: Cluster):
    body = {
        **SMALL_JOB,
        "model": {"kind": "mlp", "hidden": [8]},
        "surrogate": {"name": "exponential"},
        "search": {"strategy": "grid", "n_lambdas": 3, "shift": "minimal", "cv": None},
        "training": {"optimizer": "sgd", "epochs": 2, "batch_size": 16, "lr": 1000.0},
    }
    job_id = pair.submit(body)
    failed = pair.wait_state(job_id, timeout=120)
    assert failed["state"] == "failed" and failed["attempts"] == 1
    assert "every fit of the grid diverged" in failed["failure_reason"]
    assert "training.lr" in failed["failure_reason"]
    # Its recorded fits served resuming only: removed with the failure (they were left).
    recorded = Path(pair.settings.artifacts_uri) / "jobs" / job_id / "fits"
    wait_until(lambda: not recorded.exists(), 10, "the failed job's fits to be removed")
    # What was tried stays visible: every grid point, its loss null (diverged).
    trace = pair.trace(job_id)
    assert len(trace) == 3 and all(step["surrogate_loss"] is None for step in trace)


def test_a_sequential_multi_repeat_job_reports_what_each_repeat_trained(pair: Cluster):
    """Dinkelbach on both shifts: the ratio it reaches (the middle of the second shift's last
    bracket) is not a lambda any model was trained at; the job, the result, the runs and the
    manifest report each repeat's trained lambda and shift, and the ratio apart."""
    body = {
        **SMALL_JOB,
        "search": {"strategy": "dinkelbach", "shift": "auto", "max_steps": 4},
        "repeats": 2,
    }
    job_id = pair.submit(body)
    job = pair.wait_state(job_id)
    assert job["state"] == "succeeded", job
    trace = pair.trace(job_id)
    choices = job["choices"]
    assert [c["repeat"] for c in choices] == [0, 1]
    for c in choices:
        refit = [s for s in trace if s["repeat"] == c["repeat"]][-1]  # the delivered model's fit
        assert (c["trained_lambda"], c["shift"]) == (refit["lambda"], refit["shift"])
        assert c["ratio_reached"] is not None and c["selection_split"] == "validation"
    assert job["best_lambda"] == choices[0]["trained_lambda"]

    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert result["choices"] == choices
    assert (result["trained_lambda"], result["shift"]) == (
        choices[0]["trained_lambda"],
        choices[0]["shift"],
    )
    for run in result["runs"]:
        assert run["lambda"] == choices[run["repeat"]]["trained_lambda"]
    model = pair.client.get(f"/v1/models?job_id={job_id}", headers=pair.headers).json()["items"][0]
    manifest = model["manifest"]
    assert (manifest["trained_lambda"], manifest["shift"]) == (
        choices[0]["trained_lambda"],
        choices[0]["shift"],
    )
    assert manifest["ratio_reached"] == choices[0]["ratio_reached"]
    # lambda* is the search's estimate of it, as the library's lambda_star_, everywhere: here the
    # ratio reached, which no model was trained at (it used to be the trained lambda here).
    assert manifest["lambda_star"] == result["lambda_star"] == choices[0]["ratio_reached"]
    assert result["lambda_star"] != result["trained_lambda"]


CONSTRAINED_JOB = {
    **SMALL_JOB,
    "metric": {"preset": "precision"},
    "dataset": {"uri": "builtin://synthetic?n_samples=600&n_features=6&positive_fraction=0.3"},
    "search": {"strategy": "grid", "n_lambdas": 4, "shift": "minimal", "cv": None,
               "multipliers": [0.0, 4.0]},
    "baselines": ["koyejo1"],
    "constraints": [{"metric": "recall", "at_least": 0.8}],
}  # fmt: skip


def test_a_metric_that_needs_no_search_says_so_everywhere(pair: Cluster):
    """Recall's denominator does not depend on the predictions: one fit is exact and no search
    over lambda runs. The service said "grid, 21 lambdas" and showed that fit's lambda (the
    middle of the range) as the trained lambda, where the library said "exact"."""
    job_id = pair.submit(
        {"metric": {"preset": "balanced_accuracy"},
         "dataset": {"uri": "builtin://synthetic?n_samples=400&n_features=5&positive_fraction=0.2"},
         "search": {"n_lambdas": 5, "refine": "off"}, "training": {"max_iter": 40}}
    )  # fmt: skip
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    [choice] = job["choices"]
    assert choice["strategy"] == "exact"
    [model] = [
        m
        for m in pair.client.get("/v1/models", headers=pair.headers).json()["items"]
        if m["job_id"] == job_id
    ]
    assert model["manifest"]["search"] == "exact"
    from metro_cli.choices import choices_text
    from metro_client.models import RepeatChoice

    said = choices_text([RepeatChoice.from_dict(choice)])
    assert said is not None and said.startswith("exact: one cost-sensitive fit"), said


def test_a_constrained_job_reports_what_its_model_does_under_the_constraint(pair: Cluster):
    """The best precision with recall >= 0.8: a grid over lambda and the multiplier, shared by
    the two workers (4 lambdas in shards of 3, at each multiplier), the multipliers recorded
    with every fit, mu and recall in the trace, and recall on each split of METRO and the
    baseline in the result and the manifest: for METRO, the recall of the stored model's own
    predictions."""
    job_id = pair.submit(CONSTRAINED_JOB)
    job = pair.wait_state(job_id, timeout=120)
    assert job["state"] == "succeeded", job
    [choice] = job["choices"]
    assert choice["strategy"] == "constrained-grid"
    assert choice["constraints_satisfied"] is True and choice["constraint_values"][0] >= 0.8
    # The tightest recall floor some fit met: met here, so at least the one asked for.
    assert 0.8 <= choice["constraint_reach"][0] <= 1.0

    # The trace: every lambda at each multiplier, then the refit at the chosen one.
    trace = pair.trace(job_id)
    assert [s["mu"] for s in trace[:8]] == [0.0] * 4 + [4.0] * 4
    assert trace[8]["lambda"] == choice["trained_lambda"] and trace[8]["mu"] in (0.0, 4.0)
    # The choice says which multiplier it delivered (the trace's series are keyed by it): the
    # refit's, which was not recorded anywhere.
    assert choice["mu"] == trace[8]["mu"]
    assert all(0.0 <= s["constraint_values"][0] <= 1.0 for s in trace)

    # The fits: the multipliers are part of each, one row per lambda, the shards shared.
    fits = {f.key: f for f in pair.fits(job_id)}
    assert sorted(fits) == [
        "r0/main/c0/s0", "r0/main/c0/s1", "r0/main/c1/s0", "r0/main/c1/s1", "r0/refit/c0/s0"
    ]  # fmt: skip
    assert fits["r0/main/c0/s0"].multipliers == [[0.0]] * 3
    assert fits["r0/main/c0/s1"].multipliers == [[0.0]]
    scaled = fits["r0/main/c1/s0"].multipliers[0][0]
    assert scaled > 0 and fits["r0/main/c1/s1"].multipliers == [[scaled]]
    assert fits["r0/refit/c0/s0"].multipliers in ([[0.0]], [[scaled]])

    # The same search as the library's own run_experiment with the job's settings.
    from core.job_spec import build_job_objects
    from metro.datasets import load_dataset
    from metro.experiment import prepare_repeat, run_experiment

    spec = job["spec"]
    objects = build_job_objects(spec)
    data = load_dataset(CONSTRAINED_JOB["dataset"]["uri"])
    direct = run_experiment(
        data, metric=objects.metric, surrogate=objects.surrogate, model=objects.model,
        search=objects.search, training=objects.training, seed=objects.training.seed,
        baselines=("koyejo1",), constraints=objects.constraints,
    )  # fmt: skip
    assert direct.searches[0].trained_lambda == pytest.approx(choice["trained_lambda"])
    assert direct.searches[0].constraint_values == pytest.approx(choice["constraint_values"])
    assert [s.mu for s in direct.traces[0]] == [s["mu"] for s in trace]

    # Recall on each split, for METRO and the baseline, as the library scored them ...
    result = pair.client.get(f"/v1/jobs/{job_id}/result", headers=pair.headers).json()
    assert [c["display_name"] for c in result["constraints"]] == ["Recall ≥ 0.8"]
    runs = {(r["method"], r["split"]): r for r in result["runs"]}
    assert set(runs) == {(m, s) for m in ("metro", "koyejo1") for s in ("validation", "test")}
    for score in direct.scores:
        run = runs[(score.method, score.split)]
        assert run["constraint_values"] == pytest.approx(list(score.constraint_values))
        assert run["constraints_hold"] is (run["constraint_values"][0] >= 0.8)
    # ... and, for METRO, as its stored model's own predictions give it.
    setup = prepare_repeat(
        data, metric=objects.metric, surrogate=objects.surrogate, model=objects.model,
        training=objects.training, repeat=0, seed=objects.training.seed,
        constraints=objects.constraints,
    )  # fmt: skip
    model = pair.client.get(f"/v1/models?job_id={job_id}", headers=pair.headers).json()["items"][0]
    for split in ("validation", "test"):
        rows = getattr(setup.splits, split)
        r = pair.client.post(
            f"/v1/models/{model['id']}/predict", json={"instances": data.X[rows].tolist()},
            headers=pair.headers,
        )  # fmt: skip
        assert r.status_code == 200, r.text
        predicted = np.array([label == data.positive_label for label in r.json()["labels"]])
        truth = data.y[rows] == 1
        recall = (predicted & truth).sum() / truth.sum()
        assert runs[("metro", split)]["constraint_values"] == [pytest.approx(recall)]
        assert model["manifest"]["constraints"][0]["scores"][split] == pytest.approx(recall)
        assert model["manifest"]["constraints_hold"][split] is bool(recall >= 0.8)
    manifest = model["manifest"]
    assert manifest["constraints"][0]["name"] == "recall >= 0.8"
    assert manifest["constraints"][0]["selection_value"] == choice["constraint_values"][0]
    assert manifest["constraints"][0]["reach"] == choice["constraint_reach"][0]
    assert manifest["constraints_satisfied"] is True
    assert manifest["mu"] == choice["mu"]


def test_each_attempt_saves_its_own_model_and_one_a_cancel_beat_removes_it(
    make_cluster, monkeypatch
):
    """An attempt's model goes to jobs/<id>/model/<attempt>: one that stalled past its lease
    cannot write over the files the winner's row names. And where a cancel arrives between the
    save and the success, the saved files (no row names them) are removed, as the fits are."""
    from pathlib import Path

    from core import store
    from core.db.base import utcnow
    from worker.runner import run_job

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    root = Path(ctx.settings.artifacts_uri.removeprefix("file://"))
    body = {**SMALL_JOB, "search": {"n_lambdas": 3, "cv": None}, "repeats": 1}
    done = cluster.submit(body)
    # What an attempt killed as it wrote its model leaves: a temporary file in its own folder,
    # which stayed as long as the job did once a later attempt succeeded.
    killed = root / f"jobs/{done}/model/7"
    killed.mkdir(parents=True)
    (killed / ".model.safetensors.2n0p2zuu").write_bytes(b"half")
    assert run_job(done, ctx) == "succeeded"
    (model,) = cluster.models(done)
    assert model.artifact_uri == f"jobs/{done}/model/1"
    assert (root / model.artifact_uri / "model.safetensors").is_file()
    assert sorted(p.name for p in (root / f"jobs/{done}/model").iterdir()) == ["1"]

    real = store.succeed_job

    def cancelled_first(ctx_, job_id, token, **kwargs):  # the cancel lands just before
        with ctx_.session() as session:
            assert store.request_cancel(session, job_id, utcnow())
            session.commit()
        return real(ctx_, job_id, token, **kwargs)

    monkeypatch.setattr(store, "succeed_job", cancelled_first)
    beaten = cluster.submit(body)
    assert run_job(beaten, ctx) == "cancelled"
    assert cluster.models(beaten) == []
    left = [p for p in (root / f"jobs/{beaten}").rglob("*") if p.is_file()]
    assert left == []  # neither its model nor its fits

    # A model saved by an attempt whose registration the database refused: the job fails (no
    # row names the model), and its files go with it. They stayed until a DELETE.
    import psycopg
    from sqlalchemy.exc import DataError as RefusedValueError

    def refused(*args, **kwargs):
        raise RefusedValueError("INSERT INTO models ...", {}, psycopg.errors.DataException("no"))

    monkeypatch.setattr(store, "succeed_job", refused)
    failed = cluster.submit(body)
    assert run_job(failed, ctx) == "failed"
    assert [p for p in (root / f"jobs/{failed}").rglob("*") if p.is_file()] == []


def test_a_worker_shutting_down_gives_its_job_back_without_counting_the_attempt(
    make_cluster, monkeypatch
):
    """SIGTERM (a deploy, a scale-down) left the job holding its lease until the process was
    killed; the reconciler then re-queued it as a new attempt, so a long job failed after three
    restarts. At the next check the job goes back to the queue, its attempt refunded, and ahead
    of the jobs that merely wait (it went behind them and finished a minute later)."""
    from core.queue import JobQueue
    from worker.lease import SHUTTING_DOWN
    from worker.runner import run_job

    sent: list[bool] = []
    real_enqueue = JobQueue.enqueue

    def enqueue(self, job_id, spec, *, countdown=None, recovered=False):  # type: ignore[no-untyped-def]
        sent.append(recovered)
        return real_enqueue(self, job_id, spec, countdown=countdown, recovered=recovered)

    monkeypatch.setattr(JobQueue, "enqueue", enqueue)
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    job_id = cluster.submit({**SMALL_JOB, "search": {"n_lambdas": 3, "cv": None}})
    SHUTTING_DOWN.set()  # what the worker's warm shutdown sets (worker.celery_app)
    try:
        assert run_job(job_id, ctx) == "retry"
    finally:
        SHUTTING_DOWN.clear()
    job = cluster.job(job_id)
    assert (job["state"], job["attempts"]) == ("queued", 0), job
    assert sent[-1:] == [True]  # sent with the recovered jobs' priority
    assert run_job(job_id, ctx) == "succeeded"
    assert cluster.job(job_id)["attempts"] == 1


def test_a_claim_postgres_aborts_for_a_lock_cycle_is_taken_again(make_cluster, monkeypatch):
    """A worker's claim was the third party of the deadlock concurrent submissions with one
    Idempotency-Key closed; aborted, the task failed and the job waited for the reconciler."""
    import psycopg
    from sqlalchemy.exc import OperationalError

    from core import store
    from worker.runner import run_job

    real_claim = store.claim_job
    aborted: list[int] = []

    def claim_once_aborted(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not aborted:
            aborted.append(1)
            raise OperationalError("UPDATE jobs ...", {}, psycopg.errors.DeadlockDetected("x"))
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(store, "claim_job", claim_once_aborted)
    cluster = make_cluster()
    job_id = cluster.submit({**SMALL_JOB, "search": {"n_lambdas": 3, "cv": None}})
    assert run_job(job_id, _solo_context(cluster)) == "succeeded" and aborted == [1]
