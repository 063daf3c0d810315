"""The claim's compare-and-set and the reconciler, against the real PostgreSQL (no workers)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import update

from core import store
from core.broker import queue_names
from core.db.base import utcnow
from core.db.models import Job
from core.queue import JobQueue, job_id_of_task
from service.crud.models import register_model
from tests.worker.test_pipeline import _insert_job, _solo_context
from worker import artifacts
from worker.reconcile import reconcile


class FakeQueue:
    def __init__(self, live: set[str] | None = None) -> None:
        self.live = live
        self.sent: list[str] = []
        self.recovered: list[str] = []  # sent ahead of the jobs that are only waiting

    def live_job_ids(self) -> set[str] | None:
        return self.live

    def forget_delivered(self) -> int:
        return 0

    def enqueue(self, job_id, spec, countdown=None, recovered=False) -> None:
        self.sent.append(str(job_id))
        if recovered:
            self.recovered.append(str(job_id))


def _set(cluster, job_id: str, **values) -> None:
    with cluster.app.state.sessionmaker() as session:
        session.execute(update(Job).where(Job.id == uuid.UUID(job_id)).values(**values))
        session.commit()


def test_a_cuda_jobs_grid_is_not_split_into_shards(make_cluster):
    """A GPU trains a whole grid (all its folds) as one stack: a job that asks for CUDA gets
    shards of gpu_grid_shard_size lambdas, more than any grid has."""
    from metro.search.config import MAX_N_LAMBDAS

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    assert ctx.settings.gpu_grid_shard_size >= MAX_N_LAMBDAS
    body = {
        "metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"},
        "model": {"kind": "mlp"}, "training": {"device": "cuda"},
    }  # fmt: skip
    job_id = uuid.UUID(_insert_job(cluster, body))
    claimed = store.claim_job(ctx, job_id, "worker-1")
    assert claimed is not None and claimed.shard_size == ctx.settings.gpu_grid_shard_size


def test_claim_is_a_compare_and_set(make_cluster):
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
    job_id = uuid.UUID(_insert_job(cluster, body))
    first = store.claim_job(ctx, job_id, "worker-1")
    assert first is not None and first.attempts == 1 and first.shard_size == 8
    assert store.claim_job(ctx, job_id, "worker-2") is None  # held: a duplicate exits
    assert store.renew_job_lease(ctx, job_id, "worker-1") == (True, False)
    assert store.renew_job_lease(ctx, job_id, "worker-2") == (False, False)
    # The holder stalls past its lease: another worker may take the job, and the first one's
    # writes are refused from then on.
    _set(cluster, str(job_id), lease_expires_at=utcnow() - timedelta(seconds=1))
    second = store.claim_job(ctx, job_id, "worker-2")
    assert second is not None and second.attempts == 2
    assert not store.fail_job(ctx, job_id, "worker-1", "stale writer")
    assert store.renew_job_lease(ctx, job_id, "worker-1") == (False, False)
    assert store.fail_job(ctx, job_id, "worker-2", "done")
    assert store.claim_job(ctx, job_id, "worker-3") is None  # finished
    assert store.claim_job(ctx, uuid.uuid4(), "worker-3") is None  # unknown


def test_reconciler_requeues_fails_and_resends(make_cluster):
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
    expired = utcnow() - timedelta(seconds=5)
    lost = _insert_job(cluster, body)  # its worker died: lease expired, attempts left
    _set(cluster, lost, state="running", attempts=1, lease_owner="dead", lease_expires_at=expired)
    spent = _insert_job(cluster, body)  # died on its last attempt
    _set(cluster, spent, state="running", attempts=3, lease_owner="dead", lease_expires_at=expired)
    stopping = _insert_job(cluster, body)  # asked to cancel, then its worker died
    _set(
        cluster, stopping, state="cancelling", cancel_requested=True, attempts=1,
        lease_owner="dead", lease_expires_at=expired,
    )  # fmt: skip
    alive = _insert_job(cluster, body)  # a healthy running job is left alone
    _set(cluster, alive, state="running", attempts=1, lease_owner="w",
         lease_expires_at=utcnow() + timedelta(minutes=5))  # fmt: skip
    old = utcnow() - timedelta(minutes=5)
    orphan = _insert_job(cluster, body)  # queued, its message lost
    _set(cluster, orphan, enqueued_at=old)
    waiting = _insert_job(cluster, body)  # queued, its message still in the broker
    _set(cluster, waiting, enqueued_at=old)
    fresh = _insert_job(cluster, body)  # just submitted: its message may be on its way
    _set(cluster, fresh, enqueued_at=utcnow())

    # Each held job has recorded a fit; the ones the reconciler ends can never resume from it.
    held = (lost, spent, stopping, alive)
    fit = {j: artifacts.fit_weights_path(uuid.UUID(j), "r0/search/0/0") for j in held}
    root = ctx.settings.artifacts_uri
    for rel in fit.values():
        artifacts.put_bytes(root, rel, b"fit")
    # And an attempt half wrote its model when it was killed: no model row names it.
    saved = {j: f"{artifacts.model_path(uuid.UUID(j), 1)}/model.safetensors" for j in held}
    for rel in saved.values():
        artifacts.put_bytes(root, rel, b"half")
    # A job that expired after its model row was written (which its success commits with):
    # ended here, its registered model's files stay.
    registered = _insert_job(cluster, body)
    _set(cluster, registered, state="running", attempts=3, lease_owner="dead",
         lease_expires_at=expired)  # fmt: skip
    kept = artifacts.model_path(uuid.UUID(registered), 3)
    artifacts.put_bytes(root, f"{kept}/model.safetensors", b"weights")
    with cluster.app.state.sessionmaker() as session:
        job = session.get(Job, uuid.UUID(registered))
        register_model(
            session, tenant_id=job.tenant_id, job_id=job.id, artifact_uri=kept, sha256="0" * 64,
            manifest={},
        )  # fmt: skip

    queue = FakeQueue(live={waiting})
    counts = reconcile(ctx, queue)  # type: ignore[arg-type]
    assert counts == {"requeued": 1, "failed": 2, "cancelled": 1, "resent": 1}
    assert artifacts.get_bytes(root, f"{kept}/model.safetensors") == b"weights"
    assert {j: artifacts.get_bytes(root, rel) for j, rel in fit.items()} == {
        lost: b"fit", spent: None, stopping: None, alive: b"fit",
    }  # fmt: skip
    # The ended jobs' model files went with them (they stayed until the job was deleted); the
    # requeued job's next attempt and the live one's are theirs to settle.
    assert {j: artifacts.get_bytes(root, rel) for j, rel in saved.items()} == {
        lost: b"half", spent: None, stopping: None, alive: b"half",
    }  # fmt: skip
    assert sorted(queue.sent) == sorted([lost, orphan])
    assert queue.recovered == queue.sent
    states = {j: cluster.job(j) for j in (lost, spent, stopping, alive, orphan, waiting, fresh)}
    assert states[lost]["state"] == "queued"
    assert states[spent]["state"] == "failed"
    assert "stopped responding" in states[spent]["failure_reason"]
    assert states[stopping]["state"] == "cancelled"
    assert [states[j]["state"] for j in (alive, orphan, waiting, fresh)] == [
        "running", "queued", "queued", "queued",
    ]  # fmt: skip

    # A second pass right away changes nothing (the resent job is fresh again).
    again = FakeQueue(live={waiting})
    assert reconcile(ctx, again) == {"requeued": 0, "failed": 0, "cancelled": 0, "resent": 0}  # type: ignore[arg-type]
    assert again.sent == []


def _run_messages_in_worker_order(queue: JobQueue, name: str) -> list[str]:
    """Job ids of the run messages of a queue, in the order a worker takes them (kombu's Redis
    channel pops the priority lists in the order the worker's BRPOP names them)."""
    ids = []
    with queue.app.connection_for_read() as conn:
        channel = conn.default_channel
        while (message := channel.basic_get(name, no_ack=True)) is not None:
            ids.append(job_id_of_task(message.headers["id"]))
    return ids


def test_a_recovered_job_is_taken_before_the_jobs_queued_behind_it(make_cluster):
    """A killed worker's job, and a job whose message was lost, used to go to the back of the
    queue: behind every job submitted after them."""
    cluster = make_cluster()
    ctx = _solo_context(cluster)
    queue = JobQueue(cluster.settings)
    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
    lost = _insert_job(cluster, body)  # claimed first; its worker died
    _set(cluster, lost, state="running", attempts=1, lease_owner="dead",
         lease_expires_at=utcnow() - timedelta(seconds=5))  # fmt: skip
    orphan = _insert_job(cluster, body)  # queued next; its message was lost with Redis
    _set(cluster, orphan, enqueued_at=utcnow() - timedelta(minutes=5))
    behind = [_insert_job(cluster, body) for _ in range(3)]  # submitted later, still waiting
    for job_id in behind:
        queue.enqueue(job_id, body)  # as the API sends them
    _set(cluster, behind[0], enqueued_at=utcnow() - timedelta(minutes=5))  # old, not lost

    counts = reconcile(ctx, queue)
    assert counts["requeued"] == 1 and counts["resent"] == 1
    assert queue.live_job_ids() == {lost, orphan, *behind}
    cpu = queue_names(cluster.settings)["cpu"]
    assert _run_messages_in_worker_order(queue, cpu) == [lost, orphan, *behind]


def test_a_resend_the_broker_refused_is_tried_again_at_the_next_round(make_cluster):
    """The resend was recorded (enqueued_at = now) before it was sent; when the broker was down
    the send failed, and the job waited another METRO_REQUEUE_AFTER_SECONDS after the broker
    came back (30 s where the docs promise about 1.1 reconcile rounds)."""
    from kombu.exceptions import OperationalError as BrokerUnreachable

    class Down(FakeQueue):
        def enqueue(self, job_id, spec, countdown=None, recovered=False) -> None:
            raise BrokerUnreachable("Error 111 connecting to 127.0.0.1:6379")

    cluster = make_cluster()
    ctx = _solo_context(cluster)
    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
    orphan = _insert_job(cluster, body)
    old = utcnow() - timedelta(minutes=5)
    _set(cluster, orphan, enqueued_at=old)
    # and a dead worker's job, put back in the queue in the same round
    lost = _insert_job(cluster, body)
    expired = utcnow() - timedelta(seconds=5)
    _set(cluster, lost, state="running", attempts=1, lease_owner="dead", lease_expires_at=expired)
    counts = reconcile(ctx, Down(live=None))  # type: ignore[arg-type]
    assert (counts["resent"], counts["requeued"]) == (1, 1)
    back = FakeQueue(live=set())
    assert reconcile(ctx, back)["resent"] == 2  # type: ignore[arg-type]
    assert sorted(back.sent) == sorted([orphan, lost])
