"""A queued job that no worker can take says why it waits (core.workers): a training.device
cuda job with only CPU workers sat in queued for good, with nothing said to its owner."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, select

from core.db.base import utcnow
from core.db.models import WorkerBeat
from core.workers import announce, live_kinds, seen_window
from tests.service.conftest import job_body


def _roll(app, rows: dict[str, tuple[str, float]]) -> None:
    """The workers' rows: name -> (queues, seconds since seen)."""
    with app.state.sessionmaker() as session:
        session.execute(delete(WorkerBeat))
        for name, (queues, ago) in rows.items():
            session.add(
                WorkerBeat(name=name, queues=queues, seen_at=utcnow() - timedelta(seconds=ago))
            )
        session.commit()


def test_a_cuda_job_without_a_gpu_worker_says_it_waits_for_one(app, client, tenant):
    _roll(app, {"cpu-1": ("cpu", 5)})
    body = job_body(training={"device": "cuda"})
    submitted = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert submitted.status_code == 201
    waiting = submitted.json()["waiting"]
    assert waiting.startswith("no worker serving the gpu queue has reported in the last")
    assert "training.device asks for CUDA" in waiting
    url = f"/v1/jobs/{submitted.json()['id']}"
    assert client.get(url, headers=tenant.headers).json()["waiting"] == waiting
    listed = client.get("/v1/jobs", headers=tenant.headers).json()["items"]
    assert [j["waiting"] for j in listed if j["id"] == submitted.json()["id"]] == [waiting]
    # A CPU job is served: nothing to say.
    cpu = client.post("/v1/jobs", json=job_body(), headers=tenant.headers).json()
    assert cpu["waiting"] is None
    # A GPU worker reports: said no more; it stops reporting: said again.
    _roll(app, {"cpu-1": ("cpu", 5), "gpu-1": ("cpu,gpu", 5)})
    assert client.get(url, headers=tenant.headers).json()["waiting"] is None
    stale = seen_window(app.state.settings) + 1
    _roll(app, {"cpu-1": ("cpu", 5), "gpu-1": ("cpu,gpu", stale)})
    assert client.get(url, headers=tenant.headers).json()["waiting"] == waiting
    # Not queued any more: nothing to say.
    client.post(f"{url}/cancel", headers=tenant.headers)
    assert client.get(url, headers=tenant.headers).json()["waiting"] is None
    _roll(app, {})


def test_no_worker_at_all_is_said_for_a_cpu_job(app, client, tenant):
    _roll(app, {})
    job = client.post("/v1/jobs", json=job_body(), headers=tenant.headers).json()
    assert job["waiting"].startswith("no worker serving the cpu queue has reported")
    assert job["waiting"].endswith("(`metro worker` starts one)")


def test_announce_renews_one_row_per_worker(app):
    with app.state.sessionmaker() as session:
        session.execute(delete(WorkerBeat))
        announce(session, "w1", ["gpu", "cpu"])
        session.commit()
        announce(session, "w1", ["cpu"])
        session.commit()
        assert live_kinds(session, since=utcnow() - timedelta(seconds=60)) == {"cpu"}
        assert live_kinds(session, since=utcnow() + timedelta(seconds=60)) == set()
        # A worker killed without removing its row: dropped a day after its last word.
        session.add(WorkerBeat(name="gone", queues="gpu", seen_at=utcnow() - timedelta(days=2)))
        session.add(WorkerBeat(name="late", queues="gpu", seen_at=utcnow() - timedelta(hours=2)))
        session.commit()
        announce(session, "w1", ["cpu"])
        session.commit()
        assert sorted(session.scalars(select(WorkerBeat.name))) == ["late", "w1"]
        session.execute(delete(WorkerBeat))
        session.commit()
