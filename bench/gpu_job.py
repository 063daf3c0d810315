"""One real cnn3 job through the service, end to end: ``metro serve`` on the embedded defaults.

Starts ``python -m cli.main serve`` (SQLite database, SQLite-backed Celery broker and the
embedded worker, all under a fresh temporary directory), creates an API key with ``metro admin
create-key``, uploads a CIFAR-shaped synthetic image set (``make_data`` of bench/gpu.py) as NPZ,
submits a 21-lambda grid job for F1 with a cnn3 network, polls it to a terminal state, downloads
the model (safetensors, ONNX when exported), checks the digests against the manifest, scores
held-out images locally with the library and through ``POST /v1/models/{id}/predict``, checks
the two agree, and writes the timings and the manifest's numbers as JSON.

A ``device: cuda`` job goes to the ``gpu`` queue (core.queue.queue_for); the embedded worker
(``metro worker`` with no ``--queues``) serves ``gpu`` and ``cpu`` whenever torch sees a GPU.

The job is the cheapest honest one: selection on the validation split (``cv: null``; the default
``"auto"`` is 5 folds below 20,000 rows, five times the training), one repeat, no baselines,
the default refit at the chosen lambda on training + validation (``--no-refit`` skips it).

    python bench/gpu_job.py --out /tmp/gpu-job.json                    # on a GPU
    python bench/gpu_job.py --device cpu --epochs 2 --n 1500 --out /tmp/gpu-job-cpu.json

Needs: httpx, numpy, torch and the service's dependencies (the server runs as a subprocess with
this interpreter, the repository on PYTHONPATH). Exits non-zero when anything fails; the JSON is
written in every case, with the server's log tail on failure.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
TERMINAL = ("succeeded", "failed", "cancelled")


class BenchError(RuntimeError):
    """A step that did not work; the message goes into the JSON and onto stderr."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 80) -> str:
    """The log's last lines, less the access lines of this script's polling and health checks."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    noise = ('"GET /v1/jobs/', '"GET /healthz')
    kept = [ln for ln in text.splitlines() if not (any(n in ln for n in noise) and "200" in ln)]
    return "\n".join(kept[-lines:])


def _check(response: httpx.Response, what: str, *ok: int) -> Any:
    if response.status_code not in (ok or (200,)):
        raise BenchError(f"{what}: HTTP {response.status_code}: {response.text[:2000]}")
    return response.json()


class Server:
    """``metro serve`` in its own process group (the embedded worker is its child, in the same
    group), with state in ``workdir/var`` and its output in ``workdir/server.log``."""

    def __init__(self, workdir: Path, port: int, settings: dict[str, str]) -> None:
        self.workdir = workdir
        self.port = port
        self.log_path = workdir / "server.log"
        self.url = f"http://127.0.0.1:{port}"
        self.env = dict(os.environ)
        paths = [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(ROOT) not in paths:
            paths.append(str(ROOT))  # last: packages already on PYTHONPATH win
        self.env["PYTHONPATH"] = os.pathsep.join(paths)
        self.env["PYTHONUNBUFFERED"] = "1"
        for name in [k for k in self.env if k.startswith("METRO_")]:
            del self.env[name]  # the embedded defaults, under workdir/var
        self.env.update(settings)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self) -> None:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", str(self.port)],
            cwd=self.workdir,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() signals API and worker
        )

    def wait_healthy(self, deadline: float) -> None:
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"metro serve exited with {self.proc.returncode} before /healthz")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise BenchError("metro serve did not answer /healthz in time")

    def worker_ready(self) -> bool:
        """Celery's banner line ``celery@<node> ready.`` is in the log."""
        try:
            return b" ready." in self.log_path.read_bytes()
        except OSError:
            return False

    def worker_queues(self) -> list[str]:
        """The queues of Celery's banner (``.> gpu  exchange=gpu(direct) key=gpu``)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [ln.split()[1] for ln in lines if ln.strip().startswith(".>") and "exchange=" in ln]

    def create_key(self) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "cli.main", "admin", "create-key", "--tenant", "gpu-bench"],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if out.returncode != 0:
            raise BenchError(
                f"metro admin create-key failed ({out.returncode}): {out.stderr[-2000:]}"
            )
        return out.stdout.strip().splitlines()[-1].strip()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # SIGTERM to the API alone: it stops the worker it started (cli.main._EmbeddedWorker),
            # which a signal to the whole group would have it restart.
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        if self.proc is not None:
            # Whatever is left of the group (the worker, if the API died first).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None


def job_spec(args: argparse.Namespace, dataset_uri: str) -> dict[str, Any]:
    if args.defaults:
        # What a user gets who names only the metric, the data, the network and the device:
        # cv "auto" (5 folds below 20,000 rows, trained as one stack on a GPU), the refit, and
        # every other setting at its default.
        return {
            "metric": {"preset": "f1"},
            "dataset": {"uri": dataset_uri, "label_column": "y", "positive_label": 1},
            "model": {"kind": "cnn3"},
            "training": {
                "device": args.device,
                **({} if args.epochs == 100 else {"epochs": args.epochs}),
            },
        }
    return {
        "metric": {"preset": "f1"},
        "dataset": {"uri": dataset_uri, "label_column": "y", "positive_label": 1},
        "model": {"kind": "cnn3", "channels": [32, 64, 128]},
        "search": {
            "strategy": "grid",
            "n_lambdas": args.n_lambdas,
            "cv": None,  # the validation split; "auto" would be 5 folds, 5x the training
            "refit": args.refit,
        },
        "training": {
            "optimizer": "sgd",
            "device": args.device,
            "epochs": args.epochs,
            "batch_size": 1024,
            "lr": 0.02,
            "momentum": 0.9,
            "weight_decay": 1e-4,
            "augment": True,
            "mixed_precision": True,
            "seed": 0,
        },
        "repeats": 1,
        "baselines": [],
    }


def run(args: argparse.Namespace, report: dict[str, Any], workdir: Path) -> None:
    t0 = time.monotonic()
    timings: dict[str, float] = report["timings"]

    def mark(name: str, since: float | None = None) -> float:
        now = time.monotonic()
        timings[name] = round(now - (t0 if since is None else since), 3)
        return now

    # -- data -------------------------------------------------------------------------------
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import torch
    from gpu import make_data  # bench/gpu.py: imports torch and metro, nothing heavier

    mark("import_s")
    report["torch"] = torch.__version__
    report["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        report["device_name"] = torch.cuda.get_device_name(0)
    X, y = make_data(args.n, 32, seed=0)
    X_test, y_test = make_data(args.n_test, 32, seed=12345)
    data_path = workdir / "train.npz"
    np.savez(data_path, X=X, y=y)
    report["data"] = {
        "n": args.n,
        "n_test": args.n_test,
        "positive_fraction": round(float(y.mean()), 4),
        "npz_bytes": data_path.stat().st_size,
    }
    t = mark("data_s")

    # -- service ----------------------------------------------------------------------------
    settings = {}
    if data_path.stat().st_size > 200 * 2**20:  # past the default upload limit (256 MiB)
        settings["METRO_MAX_UPLOAD_BYTES"] = str(2 * data_path.stat().st_size)
    if args.grid_shard_size:
        settings["METRO_GRID_SHARD_SIZE"] = str(args.grid_shard_size)
    server = Server(workdir, args.port or _free_port(), settings)
    report["url"] = server.url
    report["server_settings"] = settings
    server.start()
    try:
        _serve(args, report, server, t0, t, mark, data_path, X_test, y_test)
    except BaseException:
        report["server_log_tail"] = _tail(server.log_path, 120)
        raise
    finally:
        t_stop = time.monotonic()
        server.stop()
        mark("server_stop_s", t_stop)
        if args.server_log is not None and server.log_path.exists():
            args.server_log.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(server.log_path, args.server_log)
        report["server_log_bytes"] = (
            server.log_path.stat().st_size if server.log_path.exists() else 0
        )


def _serve(
    args: argparse.Namespace,
    report: dict[str, Any],
    server: Server,
    t0: float,
    t: float,
    mark: Any,
    data_path: Path,
    X_test: np.ndarray,
    y_test: np.ndarray,
) -> None:
    from gpu import f1_of  # bench/gpu.py, on sys.path since run()

    timings = report["timings"]
    deadline = t0 + args.timeout_s
    server.wait_healthy(min(deadline, time.monotonic() + 120))
    t = mark("server_healthy_s", t)
    key = server.create_key()
    t = mark("create_key_s", t)
    client = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=300
    )

    with open(data_path, "rb") as fh:
        up = _check(
            client.post(
                "/v1/datasets",
                files={"file": ("train.npz", fh, "application/octet-stream")},
                data={"label_column": "y"},
            ),
            "upload",
            201,
            200,
        )
    report["dataset"] = {k: up.get(k) for k in ("id", "uri", "size_bytes", "n_rows", "n_columns")}
    t = mark("upload_s", t)

    # The worker starts beside the API (torch and Celery to import); give it until here, then
    # wait for its banner (bounded), so that time-to-running is queue latency, not its start-up.
    ready_deadline = time.monotonic() + args.worker_wait_s
    while not server.worker_ready() and time.monotonic() < ready_deadline:
        time.sleep(0.1)
    report["worker_ready_seen"] = server.worker_ready()
    t = mark("worker_ready_wait_s", t)
    queues = server.worker_queues()
    report["worker_queues"] = queues
    if args.device.startswith("cuda") and queues and "gpu" not in queues:
        raise BenchError(
            f"the embedded worker serves {queues}, not the gpu queue that a device "
            f"{args.device!r} job goes to: its torch does not see a GPU"
        )

    spec = job_spec(args, up["uri"])
    report["submitted_at"] = datetime.now(UTC).isoformat()
    t_submit = time.monotonic()
    job = _check(client.post("/v1/jobs", json=spec), "submit", 201)
    mark("submit_request_s", t_submit)
    job_id = job["id"]
    report["job_id"] = job_id
    report["normalized_search"] = job["spec"].get("search")
    report["normalized_training"] = job["spec"].get("training")

    progress: list[list[float]] = []
    last_progress = -1.0
    t_running = None
    while True:
        now = time.monotonic()
        job = _check(client.get(f"/v1/jobs/{job_id}"), "poll")
        if job["state"] in ("running", "cancelling") and t_running is None:
            t_running = now
            timings["submit_to_running_s"] = round(now - t_submit, 3)
        if job["progress"] != last_progress:
            last_progress = job["progress"]
            progress.append([round(now - t_submit, 2), round(float(last_progress), 4)])
        if job["state"] in TERMINAL:
            break
        if now > deadline:
            report["job"] = job
            report["progress"] = progress
            with contextlib.suppress(httpx.HTTPError):
                client.post(f"/v1/jobs/{job_id}/cancel")
            raise BenchError(
                f"timeout: job still {job['state']} (progress {job['progress']:.3f}) after "
                f"{args.timeout_s} s"
            )
        time.sleep(args.poll_s)
    t_done = time.monotonic()
    timings["submit_to_terminal_s"] = round(t_done - t_submit, 3)
    if t_running is not None:
        timings["running_to_terminal_s"] = round(t_done - t_running, 3)
    report["progress"] = progress
    report["job"] = {
        k: job.get(k)
        for k in (
            "state",
            "progress",
            "attempts",
            "failure_reason",
            "best_lambda",
            "created_at",
            "started_at",
            "finished_at",
            "choices",
        )
    }
    report["job_server_timings"] = _server_timings(job)
    if job["state"] != "succeeded":
        raise BenchError(f"job {job['state']}: {job.get('failure_reason')}")

    trace = _check(client.get(f"/v1/jobs/{job_id}/trace", params={"limit": 200}), "trace")
    steps = trace["items"]
    report["trace"] = [
        {
            "lambda": s.get("lambda"),
            "fold": s.get("fold"),
            "method": s.get("method"),
            "validation_metric": s.get("validation_metric"),
            "train_metric": s.get("train_metric"),
            "seconds": s.get("seconds"),
        }
        for s in steps
    ]
    report["trace_seconds_sum"] = round(sum(s.get("seconds") or 0.0 for s in steps), 3)
    result = _check(client.get(f"/v1/jobs/{job_id}/result"), "result")
    report["result"] = {
        k: result.get(k) for k in ("trained_lambda", "shift", "selection", "summary", "runs")
    }
    t = mark("trace_result_s", t_done)

    # -- the model ------------------------------------------------------------------------------
    models = _check(client.get("/v1/models", params={"job_id": job_id}), "models")["items"]
    if len(models) != 1:
        raise BenchError(f"expected one model for job {job_id}, got {len(models)}")
    model = models[0]
    manifest = model["manifest"]
    report["model"] = {
        "id": model["id"],
        "formats": model["formats"],
        "sha256": model["sha256"],
        "architecture": manifest.get("architecture"),
        "input_shape": manifest.get("input_shape"),
        "trained_lambda": manifest.get("trained_lambda"),
        "lambda_star": manifest.get("lambda_star"),
        "shift": manifest.get("shift"),
        "threshold": manifest.get("threshold"),
        "tuned_threshold": manifest.get("tuned_threshold"),
        "selection": manifest.get("selection"),
        "scores": manifest.get("scores"),
        "metric": manifest.get("metric"),
        "warnings": manifest.get("warnings"),
        "labels": manifest.get("labels"),
    }
    model_dir = server.workdir / "model"
    model_dir.mkdir()
    downloads: dict[str, Any] = {}
    for fmt, name, digest_key in (
        ("safetensors", "model.safetensors", "weights_sha256"),
        ("onnx", "model.onnx", "onnx_sha256"),
    ):
        if fmt not in model["formats"]:
            continue
        td = time.monotonic()
        r = client.get(f"/v1/models/{model['id']}/download", params={"format": fmt})
        if r.status_code != 200:
            raise BenchError(f"download {fmt}: HTTP {r.status_code}: {r.text[:500]}")
        (model_dir / name).write_bytes(r.content)
        digest = hashlib.sha256(r.content).hexdigest()
        if digest != manifest.get(digest_key):
            raise BenchError(
                f"{name}: sha256 {digest} != manifest {digest_key} {manifest.get(digest_key)}"
            )
        downloads[fmt] = {
            "bytes": len(r.content),
            "sha256_ok": True,
            "seconds": round(time.monotonic() - td, 3),
        }
    if "safetensors" not in downloads:
        raise BenchError(f"the model has no safetensors file (formats {model['formats']})")
    report["downloads"] = downloads
    (model_dir / "manifest.json").write_text(json.dumps(manifest))
    t = mark("download_s", t)

    # -- local scores and the prediction endpoint -----------------------------------------------
    import torch

    from metro.serialization import load_model, predict_labels

    net, _ = load_model(model_dir, expected_sha256=model["sha256"])
    net = net.cpu().eval()
    with torch.inference_mode():
        local = np.concatenate(
            [
                net(torch.from_numpy(X_test[i : i + 1024]))[:, 0].float().numpy()
                for i in range(0, len(X_test), 1024)
            ]
        )
    threshold = float(manifest.get("threshold") or 0.0)
    local_labels = predict_labels(local, threshold)
    positive = manifest.get("labels", {}).get("positive", 1)
    report["local"] = {
        "n": len(X_test),
        "test_f1": round(float(f1_of(np.asarray(local_labels, bool)[:, None], y_test)[0]), 4),
        "predicted_positive_fraction": round(float(local_labels.mean()), 4),
    }
    t = mark("local_score_s", t)

    m = min(args.predict_rows, len(X_test))
    body = _instances_json(X_test[:m].reshape(m, -1))
    headers = {"Content-Type": "application/json"}
    url = f"/v1/models/{model['id']}/predict"
    tp = time.monotonic()
    pred = _check(client.post(url, content=body, headers=headers), "predict")
    predict_s = time.monotonic() - tp
    tp = time.monotonic()
    _check(client.post(url, content=body, headers=headers), "predict (model cached)")
    predict_again_s = time.monotonic() - tp
    margins = np.asarray(pred["margins"], dtype=np.float64)
    diff = np.abs(margins - local[:m].astype(np.float64))
    tol = 1e-4 + 1e-4 * np.abs(local[:m])
    endpoint_positive = np.array([label == positive for label in pred["labels"]])
    report["predict"] = {
        "rows": m,
        "body_bytes": len(body),
        "request_s": round(predict_s, 3),
        "request_cached_s": round(predict_again_s, 3),
        "max_abs_diff": float(diff.max()),
        "margins_match": bool((diff <= tol).all()),
        "labels_match": bool((endpoint_positive == local_labels[:m]).all()),
        "test_f1": round(
            float(f1_of(np.asarray(endpoint_positive, bool)[:, None], y_test[:m])[0]), 4
        ),
    }
    mark("predict_s", t)
    if not report["predict"]["margins_match"]:
        raise BenchError(f"endpoint margins differ from local ones by up to {diff.max():.3g}")
    if not report["predict"]["labels_match"]:
        raise BenchError("endpoint labels differ from the local decision rule")


def _instances_json(rows: np.ndarray) -> bytes:
    """``{"instances": rows}`` with each float32 in its shortest exact form: half the bytes of
    ``json.dumps(rows.tolist())`` (whose float64 reprs put 256 CIFAR images at 15.5 MiB, next
    to the 16 MiB request limit), and the server parses back the very same float32 values."""
    fmt = np.format_float_positional
    text = ",".join(
        "[" + ",".join(fmt(v, unique=True, trim="-") for v in row) + "]"
        for row in rows.astype(np.float32)
    )
    return ('{"instances":[' + text + "]}").encode()


def _server_timings(job: dict[str, Any]) -> dict[str, float | None]:
    def ts(name: str) -> datetime | None:
        value = job.get(name)
        return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))

    created, started, finished = ts("created_at"), ts("started_at"), ts("finished_at")
    out: dict[str, float | None] = {"queued_s": None, "running_s": None, "total_s": None}
    if created and started:
        out["queued_s"] = round((started - created).total_seconds(), 3)
    if started and finished:
        out["running_s"] = round((finished - started).total_seconds(), 3)
    if created and finished:
        out["total_s"] = round((finished - created).total_seconds(), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    try:
        import torch

        default_device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        default_device = "cpu"
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--device", default=default_device, help="training.device (default: %(default)s)"
    )
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--n", type=int, default=10_000, help="training images (train+val+test split)")
    p.add_argument("--n-test", type=int, default=2000, help="held-out images scored locally")
    p.add_argument("--n-lambdas", type=int, default=21)
    p.add_argument("--refit", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--defaults",
        action="store_true",
        help="submit the default job (metric, data, cnn3, device; epochs only if not 100) "
        "instead of the protocol's cv: null job",
    )
    p.add_argument(
        "--grid-shard-size",
        type=int,
        default=0,
        help="METRO_GRID_SHARD_SIZE for the server: lambdas per stacked fit (0: the service's "
        "default, 8, so 21 lambdas train as fits of 8, 8 and 5; 21: one fit of all 21)",
    )
    p.add_argument("--predict-rows", type=int, default=256, help="images sent to /predict")
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--out", type=Path, default=None, help="JSON report path")
    p.add_argument("--server-log", type=Path, default=None, help="copy the server's log here")
    p.add_argument("--timeout-s", type=float, default=300.0, help="whole run, from the start")
    p.add_argument("--worker-wait-s", type=float, default=90.0)
    p.add_argument("--poll-s", type=float, default=0.25)
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = p.parse_args(argv)
    # A SIGTERM (`timeout`, a stage's limit) unwinds like an exception, so that the server and
    # its worker are stopped and the report written: killed outright, they kept training.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    report: dict[str, Any] = {
        "ok": False,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "python": platform.python_version(),
        "host": platform.node(),
        "timings": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="metro-gpu-job-"))
    report["workdir"] = str(workdir)
    t0 = time.monotonic()
    code = 1
    try:
        run(args, report, workdir)
        report["ok"] = True
        code = 0
    except BenchError as exc:
        report["error"] = str(exc)
    except BaseException as exc:  # everything goes into the report
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
    finally:
        report["timings"]["total_s"] = round(time.monotonic() - t0, 3)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=2, default=str))
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    _summary(report)
    return code


def _summary(report: dict[str, Any]) -> None:
    t = report["timings"]
    print(f"gpu_job: {'OK' if report['ok'] else 'FAILED'} on {report.get('device_name', 'cpu')}")
    print("timings (s): " + ", ".join(f"{k}={v}" for k, v in t.items()))
    if "job_server_timings" in report:
        print(f"job (server clock): {report['job_server_timings']}")
    model = report.get("model")
    if model:
        print(
            f"model {model['id']}: trained_lambda={model['trained_lambda']} "
            f"selection={model['selection']} scores={model['scores']}"
        )
    if "local" in report:
        print(f"local test F1 {report['local']['test_f1']} on {report['local']['n']} images")
    if "predict" in report:
        print(f"predict: {report['predict']}")
    if not report["ok"]:
        print(f"error: {report.get('error')}", file=sys.stderr)
        if report.get("traceback"):
            print(report["traceback"], file=sys.stderr)
        if report.get("server_log_tail"):
            print("--- server log (tail) ---", file=sys.stderr)
            print(report["server_log_tail"], file=sys.stderr)
            print(f"--- error: {report.get('error')}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
