"""The users' CLI installs on its own: ``pip install ./clients/python`` into a fresh virtual
environment gives a ``metro`` command with the users' commands, and none of the server's
dependencies (no torch, FastAPI, SQLAlchemy, Celery, ...); from there it runs a job against
``metro serve`` on the embedded defaults, started from the project's environment.

pip fetches the client's few dependencies (httpx, attrs, typer, rich, PyYAML) from the package
index, as a user's laptop would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.clients.conftest import ROOT
from tests.test_readme import metro_serve

CLIENT = ROOT / "clients" / "python"
EXAMPLES = ROOT / "docs" / "examples"
# Not in a client-only install: the server's packages and its heavy dependencies.
SERVER_ONLY = ("torch", "numpy", "pandas", "fastapi", "starlette", "uvicorn", "sqlalchemy",
               "alembic", "celery", "kombu", "redis", "metro", "core", "service", "worker",
               "cli")  # fmt: skip


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def _one_line_error(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert all(f in lines[0] for f in fragments), lines[0]
    return lines[0]


@pytest.mark.timeout(300)  # a guard against a hang only: about a minute on an idle machine
def test_the_client_alone_installs_and_runs_a_job(tmp_path: Path) -> None:
    # A clean environment: nothing of this one's (no PYTHONPATH, no METRO_* settings).
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        base_env.pop(name, None)
    base_env.update(PYTHONUNBUFFERED="1", COLUMNS="200", PIP_DISABLE_PIP_VERSION_CHECK="1")

    # A fresh venv, and the client project installed into it from a copy of clients/python
    # (a build writes build/ and *.egg-info beside its sources: not into the working tree).
    venv = tmp_path / "venv"
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env=base_env)
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    source = tmp_path / "client-source"
    shutil.copytree(
        CLIENT, source,
        ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".ruff_cache"),
    )  # fmt: skip
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    done = _run([*pip, "install", "--quiet", str(source)], env=base_env, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = {
        p["name"].lower()
        for p in json.loads(_run([*pip, "list", "--format", "json"], env=base_env).stdout)
    }
    assert {"metro-client", "httpx", "attrs", "typer", "rich", "pyyaml"} <= installed
    assert not installed & {"torch", "fastapi", "sqlalchemy", "celery", "metro-service",
                            "numpy", "pandas"}, installed  # fmt: skip
    probe = (
        "import importlib.util, json\n"
        f"print(json.dumps([m for m in {SERVER_ONLY!r} if importlib.util.find_spec(m)]))"
    )
    done = _run([str(python), "-c", probe], cwd=tmp_path, env=base_env)
    assert done.returncode == 0 and json.loads(done.stdout) == [], done.stdout + done.stderr

    metro = str(venv / "bin" / "metro")
    helped = _run([metro, "--help"], cwd=tmp_path, env=base_env)
    assert helped.returncode == 0, helped.stderr
    for command in ("upload", "submit", "watch", "cancel", "result", "download", "predict"):
        assert re.search(rf"│ {command} ", helped.stdout), helped.stdout
    assert not re.search(r"│ (serve|worker|migrate|admin) ", helped.stdout), helped.stdout
    serve = _run([metro, "serve"], cwd=tmp_path, env=base_env)
    assert serve.returncode == 2, serve.stderr
    assert "'serve' is a command of the METRO server, which is not installed here" in serve.stderr

    workdir = tmp_path / "server"
    workdir.mkdir()
    with metro_serve(workdir, base_env) as (url, log):
        created = _run(
            [str(Path(sys.prefix) / "bin" / "metro"), "admin", "create-key", "--tenant", "laptop"],
            cwd=workdir, env=base_env, timeout=60,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip()
        env = {**base_env, "METRO_URL": url, "METRO_API_KEY": key}

        def client(*args: str) -> subprocess.CompletedProcess[str]:
            return _run([metro, *args], cwd=tmp_path, env=env, timeout=120)

        def datasets() -> list[str]:
            r = httpx.get(f"{url}/v1/datasets", headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, r.text
            return [d["id"] for d in r.json()["items"]]

        churn = str(EXAMPLES / "churn.csv")
        # Checked here before anything is sent, and refused by the server: no upload left.
        _one_line_error(
            client("submit", "--dataset", churn, "--label-column", "target", "--metric", "f1"),
            "label column 'target' not found", "'churned'",
        )  # fmt: skip
        _one_line_error(
            client("submit", "--dataset", churn, "--label-column", "churned", "--metric",
                   "precision", "--set", "metric.beta=2"),
            "Invalid job (422)", "metric.beta", "its upload was deleted",
        )  # fmt: skip
        assert datasets() == []

        submitted = client(
            "submit", "--dataset", churn, "--label-column", "churned", "--positive-label", "1",
            "--metric", "f1", "--n-lambdas", "5",
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        job = submitted.stdout.strip()
        assert str(uuid.UUID(job)) == job
        assert "uploaded churn.csv as dataset://" in submitted.stderr
        assert len(datasets()) == 1

        watched = client("watch", job, "--interval", "0.5", "--timeout", "120")
        assert watched.returncode == 0, watched.stdout + watched.stderr
        final = watched.stdout.strip().splitlines()[-1]
        assert final.startswith(f"job {job} succeeded in ") and "best F1 " in final, final

        model = client("result", job, "--model-id")
        assert model.returncode == 0, model.stderr
        model_id = model.stdout.strip()
        assert str(uuid.UUID(model_id)) == model_id and final.endswith(f"model {model_id}")
        table = client("result", job)
        assert table.returncode == 0, table.stderr
        assert "F1, higher is better" in table.stdout
        assert table.stdout.strip().splitlines()[-1] == f"model {model_id}"

        scored = client("predict", job, "--input", str(EXAMPLES / "customers.csv"))
        assert scored.returncode == 0, scored.stderr
        rows = scored.stdout.strip().splitlines()
        customers = (EXAMPLES / "customers.csv").read_text().strip().splitlines()
        assert rows[0] == "margin,label" and len(rows) == len(customers)
    assert "Traceback" not in log.read_text(errors="replace")
