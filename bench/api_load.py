"""Throughput of the API, side by side in one run on one server: a trivial endpoint (``/healthz``:
no authentication, no database), an authenticated database read (``GET /v1/jobs/{id}``), an
authenticated model read (``GET /v1/models/{id}``) and a prediction (``POST .../predict``, two
rows on a linear model). ``wrk`` (Debian package ``wrk``) generates the load; the server is
``metro serve`` (one uvicorn process) on a fresh Postgres database.

    python bench/api_load.py                       # 32 connections, 10 s per endpoint, 3 rounds
    python bench/api_load.py --connections 64 --seconds 5 --rounds 1

The endpoints take turns within each round, so they see the same machine load; the report is
the median over rounds of requests/s and of wrk's p50 and p99 latency, and of the server's CPU
time per request (user + system time of the server process, threads included, over the run,
divided by the requests answered). On a shared machine requests/s moves with the other
processes' load; CPU time per request moves much less, and its ratio to the trivial endpoint's
is the cost of a request in units of the trivial one. Results go to
``bench/results/api-load.json``.

    PYTHONPATH=/path/to/other/export python bench/api_load.py   # the same against other code
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench/results/api-load.json"
PG_ADMIN_DSN = os.environ.get("METRO_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


def _prepare(root: Path) -> tuple[str, str, str, str, str]:
    """A migrated database with a key, a job and a linear model: (db name, url, key, job, model)."""
    sys.path.insert(0, str(ROOT))
    from core.db.migrate import upgrade
    from core.db.session import make_engine, make_sessionmaker
    from metro._testing import write_linear_artifact
    from service.admin import create_api_key
    from service.crud.jobs import submit_job
    from service.crud.models import register_model

    name = f"metro_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = PG_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    url = f"{url}/{name}"
    upgrade(url)
    _, digest, manifest = write_linear_artifact(
        root / "models/bench", [1.0, -1.0, 0.5], 0.1, feature_names=["a", "b", "c"]
    )
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        key = create_api_key(session, "bench")
        from sqlalchemy import select

        from core.db.models import Tenant

        tenant_id = session.scalars(select(Tenant.id)).one()
        job, _ = submit_job(
            session, tenant_id=tenant_id,
            spec={"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}},
            dataset_uri="builtin://breast_cancer",
            dataset_id=None, idempotency_key=None, max_active_jobs=0,
        )  # fmt: skip
        model = register_model(
            session, tenant_id=tenant_id, job_id=None, artifact_uri="models/bench",
            sha256=digest, manifest=manifest, has_onnx=False,
        )  # fmt: skip
        job_id, model_id = str(job.id), str(model.id)
    engine.dispose()
    return name, url, key, job_id, model_id


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, its threads included (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wrk(
    url: str, *, key: str | None, body: str | None, seconds: int, connections: int, pid: int
) -> dict:
    script = ""
    if key:
        script += f'wrk.headers["Authorization"] = "Bearer {key}"\n'
    if body:
        script += 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        script += f"wrk.body = {json.dumps(body)}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    cpu_before = _cpu_seconds(pid)
    try:
        out = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", f.name, url],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    finally:
        os.unlink(f.name)
    cpu = _cpu_seconds(pid) - cpu_before

    def ms(label: str) -> float:
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        assert m, out
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": ms("50"),
        "p99_ms": ms("99"),
        "cpu_ms_per_request": 1e3 * cpu / max(requests, 1),
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(1) if errors else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed (Debian: apt-get install wrk)")

    root = Path(tempfile.mkdtemp(prefix="metro-bench-"))
    name, url, key, job_id, model_id = _prepare(root)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "METRO_DATABASE_URL": url,
        "METRO_BROKER_URL": "redis://127.0.0.1:6379/0",
        "METRO_QUEUE_PREFIX": f"bench-{port}-",
        "METRO_ARTIFACTS_URI": str(root),
        "METRO_UPLOAD_DIR": str(root / "uploads"),
    }
    log = (root / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port), "--no-worker",
         "--no-migrate"],
        env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    predict = json.dumps({"instances": [[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]]})
    endpoints: dict[str, dict[str, Any]] = {
        "trivial: GET /healthz": {"url": base + "/healthz", "key": None, "body": None},
        "authenticated read: GET /v1/jobs/{id}": {
            "url": f"{base}/v1/jobs/{job_id}", "key": key, "body": None,
        },
        "authenticated read: GET /v1/models/{id}": {
            "url": f"{base}/v1/models/{model_id}", "key": key, "body": None,
        },
        "predict: POST /v1/models/{id}/predict (2 rows)": {
            "url": f"{base}/v1/models/{model_id}/predict", "key": key, "body": predict,
        },
    }  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                sys.exit("the server did not start; see " + str(root / "server.log"))
            time.sleep(0.3)
        for spec in endpoints.values():  # warm up: caches, connections, the model load
            _wrk(
                spec["url"], key=spec["key"], body=spec["body"], seconds=1, connections=4,
                pid=server.pid,
            )  # fmt: skip
        runs: dict[str, list[dict]] = {label: [] for label in endpoints}
        for r in range(args.rounds):
            for label, spec in endpoints.items():
                result = _wrk(
                    spec["url"], key=spec["key"], body=spec["body"], seconds=args.seconds,
                    connections=args.connections, pid=server.pid,
                )  # fmt: skip
                runs[label].append(result)
                print(f"round {r + 1} {label}: {result}", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(root, ignore_errors=True)

    trivial = statistics.median(r["rps"] for r in runs["trivial: GET /healthz"])
    trivial_cpu = statistics.median(r["cpu_ms_per_request"] for r in runs["trivial: GET /healthz"])
    summary = {}
    print(
        f"\n{'endpoint':50} {'req/s':>8} {'of trivial':>10} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'CPU ms/req':>10} {'trivial/it':>10}"
    )
    for label, results in runs.items():
        rps = statistics.median(r["rps"] for r in results)
        cpu = statistics.median(r["cpu_ms_per_request"] for r in results)
        row = {
            "rps": rps,
            "ratio_to_trivial": rps / trivial,
            "cpu_ms_per_request": cpu,
            # The trivial endpoint's CPU per request over this one's: the throughput ratio a
            # CPU-bound server would show on an otherwise idle machine.
            "cpu_ratio_to_trivial": trivial_cpu / cpu,
            "p50_ms": statistics.median(r["p50_ms"] for r in results),
            "p99_ms": statistics.median(r["p99_ms"] for r in results),
            "non_2xx": sum(r["non_2xx"] for r in results),
            "runs": results,
        }
        summary[label] = row
        print(
            f"{label:50} {rps:8.0f} {rps / trivial:10.0%} {row['p50_ms']:8.2f} {row['p99_ms']:8.2f}"
            f" {cpu:10.3f} {trivial_cpu / cpu:10.0%}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "connections": args.connections,
                "seconds": args.seconds,
                "rounds": args.rounds,
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average": os.getloadavg(),
                "endpoints": summary,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
