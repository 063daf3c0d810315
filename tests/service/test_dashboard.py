"""The dashboard in a real browser: a live server (uvicorn in a subprocess, on the test
database) and headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it when missing).

A finished job with a lambda trace, metric results and a model is written through the CRUD layer,
as a worker writes it; Chromium loads the pages with the API key in the URL fragment (the page
moves it to sessionStorage), and the test reads the DOM Chromium dumps after the page's scripts
have run: one plot point per trace step, the chosen lambda marked, the confusion matrix, the
methods table and the download links. Screenshots go to ``test-output/dashboard/``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.config import Settings
from core.db.base import utcnow
from core.db.models import Dataset, Job
from core.states import JobState
from metro._testing import write_linear_artifact
from service.crud.datasets import add_dataset
from service.crud.jobs import record_lambda_step, record_metric_result, submit_job
from service.crud.models import register_model
from service.job_spec import normalize_job_spec
from service.schemas.jobs import JobCreate
from tests.service.conftest import TenantCtx

ROOT = Path(__file__).resolve().parents[2]
OUTPUT_DIR = ROOT / "test-output" / "dashboard"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
]

LAMBDAS = [-1.0 + 0.25 * i for i in range(9)]
CHOSEN = -0.25  # repeat 0's trained lambda: the delivered model's
CHOSEN_1 = -0.5  # repeat 1's
REPEATS = 2
SHIFTS = ("minimal", "paper")  # both shifts fitted in each repeat: one series per (repeat, shift)
FEW_TP = "the chosen classifier's F2 on the held-out rows rests on 3 true positive(s)"


def _choice(repeat: int, lam: float, shift: str, score: float, warnings: list) -> dict:
    return {
        "repeat": repeat, "trained_lambda": lam, "shift": shift, "ratio_reached": None,
        "tuned_threshold": 0.1, "selection_score": score, "selection_split": "cross-validation",
        "n_folds": 5, "selection_counts": {"tp": 40, "fp": 2, "fn": 2, "tn": 70},
        "warnings": warnings,
    }  # fmt: skip


REFINED = {
    "kept": True, "temperature": 0.2, "scale": "held", "score_before": 0.85,
    "threshold_before": 0.3,
    "scores": [
        {"temperature": 0.05, "scale": "free", "score": 0.88},
        {"temperature": 0.2, "scale": "held", "score": 0.9},
    ],
}  # fmt: skip
# Its stages beat the choice on the held-out rows, but not a constant classifier (refine_signal).
NOT_REFINED = {
    **REFINED, "kept": False, "temperature": None, "scale": None, "signal_probability": 0.71,
}  # fmt: skip
CHOICES = [
    {
        **_choice(0, CHOSEN, "minimal", 0.9, [{"code": "few_true_positives", "message": FEW_TP}]),
        "refinement": REFINED,
    },
    {
        **_choice(1, CHOSEN_1, "paper", 0.8, []),
        "refinement": NOT_REFINED,
        # The safeguard's fallback delivered in place of the search's own choice (-0.75).
        "fallback": {
            "reason": "within_noise",
            "choice_lambda": -0.75,
            "choice_score": 0.82,
            "win_probability": 0.6,
        },
    },
]
# (method, repeat, split) -> (value, tp, fp, fn, tn)
RESULTS = {
    ("metro", 0, "validation"): (0.9512, 40, 2, 2, 70),
    ("metro", 0, "test"): (0.9437, 67, 5, 3, 39),
    ("metro", 1, "validation"): (0.9610, 41, 1, 2, 70),
    ("metro", 1, "test"): (0.9301, 65, 4, 6, 39),
    ("erm", 0, "validation"): (0.9302, 40, 4, 2, 68),
    ("erm", 0, "test"): (0.9155, 65, 7, 5, 37),
    ("erm", 1, "validation"): (0.9250, 39, 4, 3, 68),
    ("erm", 1, "test"): (0.9020, 64, 8, 6, 36),
    ("koyejo1", 0, "validation"): (0.9400, 40, 3, 2, 69),
    ("koyejo1", 0, "test"): (0.9200, 66, 6, 5, 37),
    ("koyejo1", 1, "validation"): (0.9371, 40, 3, 3, 68),
    ("koyejo1", 1, "test"): (0.9105, 64, 7, 6, 37),
}


def _chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(
            "Chromium is not installed; the dashboard test needs it. Install Debian's package "
            "(`apt-get install -y chromium`); `.ci/run` does this when /usr/bin/chromium is "
            "missing.",
            pytrace=False,
        )
    return path


# -- a minimal DOM of Chromium's --dump-dom output ------------------------------------------

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}  # fmt: skip


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag)
            and (cls is None or cls in n.classes)
            and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag or '*'} class={cls} {attrs}> in the page"
        return found[0]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_dom(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


# -- the live server and the browser --------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live_server(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``uvicorn service.main:app`` on a free loopback port, configured by METRO_* variables
    as a deployment is, on the same database and artifact store as the test's own app."""
    workdir = tmp_path_factory.mktemp("dashboard-server")
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    env.update(
        METRO_DATABASE_URL=settings.database_url,
        METRO_BROKER_URL=str(settings.broker_url),
        METRO_ARTIFACTS_URI=settings.artifacts_uri,
        METRO_UPLOAD_DIR=str(settings.upload_dir),
        PYTHONPATH=str(ROOT),
    )
    log_path = workdir / "uvicorn.log"
    port = _free_port()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "service.main:app", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning"],
            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a loaded CI machine imports torch slowly
        while True:
            if proc.poll() is not None:
                pytest.fail(f"uvicorn exited ({proc.returncode}):\n{log_path.read_text()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start in 120 s:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Browser:
    def __init__(self, tmp_path: Path) -> None:
        self.executable = _chromium_path()
        self.tmp_path = tmp_path
        self.runs = 0

    def _run(self, url: str, *args: str) -> subprocess.CompletedProcess[str]:
        self.runs += 1
        profile = self.tmp_path / f"chromium-profile-{self.runs}"
        cmd = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=45, check=False)
        except subprocess.TimeoutExpired:
            pytest.fail(f"chromium did not finish in 45 s: {' '.join(cmd)}")
        assert out.returncode == 0, f"chromium failed ({out.returncode}):\n{out.stderr[-3000:]}"
        return out

    def dom(self, url: str, width: int = 1280) -> tuple[str, Node]:
        out = self._run(url, f"--window-size={width},1000", "--enable-logging=stderr", "--dump-dom")
        errors = [line for line in out.stderr.splitlines() if "Uncaught" in line]
        assert not errors, "the page's script failed:\n" + "\n".join(errors)
        assert "<html" in out.stdout, "chromium dumped no DOM"
        dom = parse_dom(out.stdout)
        body = dom.find("body").attrs
        assert "data-csp-violations" not in body, f"CSP blocked {body.get('data-csp-last')}"
        return out.stdout, dom

    def screenshot(self, url: str, path: Path, height: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        self._run(url, f"--window-size=1280,{height}", f"--screenshot={path}")
        assert path.is_file(), f"chromium wrote no screenshot at {path}"


def cells_of(row: Node) -> list[str]:
    return [c.text for c in row.find_all("td")]


def _assert_real_png(path: Path, width: int, height: int) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert int.from_bytes(data[16:20], "big") == width
    assert int.from_bytes(data[20:24], "big") == height
    assert len(data) > 40_000, f"a {len(data)}-byte screenshot is suspiciously plain"
    from PIL import Image

    with Image.open(path) as image:
        colors = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colors is None or len(colors) > 200, "the screenshot is nearly one color"


# -- the data a worker would have written ---------------------------------------------------


def _metric_at(lam: float, repeat: int, shift: str = "minimal") -> float:
    return 0.95 - 0.6 * (lam - CHOSEN) ** 2 - 0.01 * repeat - 0.03 * SHIFTS.index(shift)


def _seed(app: Any, tenant: TenantCtx, artifacts: Path) -> dict[str, Any]:
    spec = normalize_job_spec(
        JobCreate.model_validate(
            {
                "metric": {"preset": "f_beta", "beta": 2},
                "dataset": {"uri": "builtin://breast_cancer"},
                "search": {"strategy": "grid", "n_lambdas": len(LAMBDAS)},
                "repeats": REPEATS,
                "baselines": ["erm", "koyejo1"],
            }
        )
    )
    now = utcnow()
    rel = f"models/{uuid.uuid4().hex}"
    _, digest, manifest = write_linear_artifact(
        artifacts / rel, [0.8, -1.2, 0.3], 0.1, feature_names=["a", "b", "c"], onnx=True
    )
    manifest["lambda_star"] = manifest["trained_lambda"] = CHOSEN  # (the helper writes its own)
    manifest["shift"] = "minimal"
    with app.state.sessionmaker() as session:
        upload = add_dataset(session, Dataset(
            tenant_id=tenant.id, filename="churn.csv", format="csv", size_bytes=10, sha256="0" * 64,
            storage_path="unused", n_rows=400, n_columns=5,
        ))  # fmt: skip
        running, _ = submit_job(
            session, tenant_id=tenant.id, spec=spec, dataset_uri="builtin://breast_cancer",
            dataset_id=None, idempotency_key=None,
        )  # fmt: skip
        job, _ = submit_job(
            session, tenant_id=tenant.id, spec=spec, dataset_uri=upload.uri,
            dataset_id=upload.id, idempotency_key=None,
        )  # fmt: skip
        for repeat in range(REPEATS):
            # The search's order: all lambdas with one shift, then all with the other.
            for step, (shift, lam) in enumerate((sh, lam) for sh in SHIFTS for lam in LAMBDAS):
                assert record_lambda_step(
                    session, job.id, repeat=repeat, step=step, lambda_=lam, shift=shift,
                    surrogate_loss=0.35 + 0.2 * abs(lam) + 0.02 * repeat,
                    l_lambda=0.1 * lam, train_metric=_metric_at(lam, repeat, shift) + 0.01,
                    validation_metric=_metric_at(lam, repeat, shift), seconds=0.05,
                )  # fmt: skip
        failed, _ = submit_job(
            session, tenant_id=tenant.id, spec=spec, dataset_uri="builtin://breast_cancer",
            dataset_id=None, idempotency_key=None,
        )  # fmt: skip
        for step, lam in enumerate(LAMBDAS[:3]):
            assert record_lambda_step(
                session, running.id, repeat=0, step=step, lambda_=lam, shift="minimal",
                surrogate_loss=0.4, l_lambda=0.0, train_metric=0.5, validation_metric=0.5,
                seconds=0.05,
            )  # fmt: skip
        for (method, repeat, split), (value, tp, fp, fn, tn) in RESULTS.items():
            assert record_metric_result(
                session, job.id, method=method, repeat=repeat, split=split, metric_value=value,
                tp=tp, fp=fp, fn=fn, tn=tn,
                lambda_=(CHOSEN, CHOSEN_1)[repeat] if method == "metro" else None,
            )  # fmt: skip
        job_row = session.get(Job, job.id)
        assert job_row is not None
        job_row.state = JobState.SUCCEEDED.value
        job_row.progress = 1.0
        job_row.best_lambda = CHOSEN
        job_row.choices = CHOICES
        job_row.current_lambda = LAMBDAS[-1]
        job_row.attempts = 1
        job_row.created_at = now - timedelta(seconds=120)
        job_row.started_at = now - timedelta(seconds=95)
        job_row.finished_at = now
        running_row = session.get(Job, running.id)
        assert running_row is not None
        running_row.state = JobState.RUNNING.value
        running_row.progress = 0.4
        running_row.current_lambda = 0.5
        running_row.best_lambda = 0.25
        running_row.attempts = 1
        running_row.created_at = now - timedelta(seconds=60)
        running_row.started_at = now - timedelta(seconds=20)
        failed_row = session.get(Job, failed.id)
        assert failed_row is not None
        failed_row.state = JobState.FAILED.value
        failed_row.attempts = 3
        failed_row.failure_reason = "the dataset has no column 'y'"
        failed_row.started_at = now - timedelta(seconds=5)
        failed_row.finished_at = now
        session.commit()
        model = register_model(
            session, tenant_id=tenant.id, job_id=job.id, artifact_uri=rel, sha256=digest,
            manifest=manifest, has_onnx=True,
        )  # fmt: skip
        return {"job": str(job.id), "running": str(running.id), "failed": str(failed.id),
                "model": str(model.id), "dataset_uri": upload.uri,
                "sha256": digest, "onnx_sha256": manifest["onnx_sha256"]}  # fmt: skip


MUS = (0.0, 4.0)
RECALL_BOUND = 0.9
CONFIDENCE = 0.9
RECALL = "Recall ≥ 0.9 (90% confidence)"  # the constraint, with the confidence it must hold at
NOT_MET = "no fit met every constraint on the held-out rows"
# (method, split) -> (precision, recall): METRO misses the floor on test, the baseline meets it
CONSTRAINED_RESULTS = {
    ("metro", "validation"): (0.81, 0.91), ("metro", "test"): (0.79, 0.88),
    ("koyejo1", "validation"): (0.74, 0.93), ("koyejo1", "test"): (0.72, 0.92),
}  # fmt: skip


def _recall_at(lam: float, mu: float) -> float:
    return 0.7 + 0.05 * mu - 0.1 * lam


def _seed_constrained(app: Any, tenant: TenantCtx) -> str:
    """A finished job for "the best precision with recall >= 0.9": the grid at two
    multipliers, then the refit, each step with the recall where its metric was measured."""
    spec = normalize_job_spec(
        JobCreate.model_validate(
            {
                "metric": {"preset": "precision"},
                "dataset": {"uri": "builtin://breast_cancer"},
                "search": {"n_lambdas": len(LAMBDAS), "cv": None, "multipliers": list(MUS)},
                "baselines": ["koyejo1"],
                "constraints": [
                    {"metric": "recall", "at_least": RECALL_BOUND, "confidence": CONFIDENCE}
                ],
            }
        )
    )
    warning = {"code": "constraints_not_met", "message": NOT_MET}
    choice = {
        **_choice(0, CHOSEN, "minimal", 0.82, [warning]),
        "selection_split": "validation", "n_folds": None, "constraint_values": [0.89],
        "constraints_satisfied": False, "constraint_reach": [0.8612], "mu": MUS[1],
    }  # fmt: skip
    with app.state.sessionmaker() as session:
        job, _ = submit_job(
            session, tenant_id=tenant.id, spec=spec, dataset_uri="builtin://breast_cancer",
            dataset_id=None, idempotency_key=None,
        )  # fmt: skip
        grid = [(mu, lam) for mu in MUS for lam in LAMBDAS] + [(MUS[1], CHOSEN)]
        for step, (mu, lam) in enumerate(grid):
            assert record_lambda_step(
                session, job.id, repeat=0, step=step, lambda_=lam, shift="minimal", mu=mu,
                surrogate_loss=0.4 + 0.1 * mu, l_lambda=0.0, train_metric=0.8,
                validation_metric=_metric_at(lam, 0) - 0.01 * mu,
                constraint_values=[_recall_at(lam, mu)], seconds=0.05,
            )  # fmt: skip
        for (method, split), (value, recall) in CONSTRAINED_RESULTS.items():
            assert record_metric_result(
                session, job.id, method=method, repeat=0, split=split, metric_value=value,
                tp=40, fp=9, fn=5, tn=60, lambda_=CHOSEN if method == "metro" else None,
                constraint_values=[recall], constraints_hold=recall >= RECALL_BOUND,
            )  # fmt: skip
        row = session.get(Job, job.id)
        assert row is not None
        row.state, row.progress, row.best_lambda = JobState.SUCCEEDED.value, 1.0, CHOSEN
        row.choices, row.attempts = [choice], 1
        row.started_at, row.finished_at = utcnow() - timedelta(seconds=30), utcnow()
        session.commit()
        return str(job.id)


def matrix_host(dom: Node) -> Node:
    """The element the confusion matrix is drawn into (its table, its caption and, under
    constraints, their values)."""
    return next(
        n for n in dom.iter()
        if any(isinstance(c, Node) and c.attrs.get("id") == "confusion-matrix" for c in n.children)
    )  # fmt: skip


def assert_no_clipped_tables(dom: Node) -> None:
    """The page marks a table wider than its card (data-clipped, the pixels it overflows by)."""
    clipped = [
        (w.find("table").attrs.get("id"), w.attrs["data-clipped"])
        for w in dom.find_all(cls="table-wrap") if "data-clipped" in w.attrs
    ]  # fmt: skip
    assert not clipped, f"tables cut off at their card's edge (id, pixels): {clipped}"
    # ... and a job page's Progress card's per-repeat table fits in its half of the page,
    # beside the specification (the card takes the whole width only for a table that cannot).
    for overview in dom.find_all("section", aria_labelledby="overview-title"):
        assert overview.attrs.get("data-wide") == "false" and "span-2" not in overview.classes


def _assert_constrained_job_page(dom: Node) -> None:
    """The constraint beside the metric everywhere the metric is: the spec, the choice (with the
    warning that it was not met), the trace (a series per multiplier, the recall of every step
    against its bound), and each method's recall per split."""
    assert dom.find(id="spec-constraints").text == RECALL
    chosen = dom.find(id="chosen-constraints")
    assert chosen.find(cls="holds").attrs["data-holds"] == "false"
    # ... and the tightest bound some fit met, what the user would loosen it to
    assert f"not met where chosen: {RECALL} 0.8900 (tightest met: 0.8612) (validation)" in (
        chosen.text
    )
    [row] = dom.find("table", id="choices-table").find("tbody").find_all("tr")
    assert cells_of(row)[-2:] == ["0.8900", "not met"]
    [warning] = dom.find(id="search-warnings").find_all("li")
    assert warning.attrs["data-code"] == "constraints_not_met" and NOT_MET in warning.text

    plot = dom.find("svg", id="trace-plot")
    n_steps = len(LAMBDAS) * len(MUS) + 1
    recall_points = plot.find_all("circle", cls="pt-constraint")
    assert len(recall_points) == n_steps
    assert sorted(float(p.attrs["data-value"]) for p in recall_points) == sorted(
        [_recall_at(lam, mu) for mu in MUS for lam in LAMBDAS] + [_recall_at(CHOSEN, MUS[1])]
    )
    assert float(plot.find("line", cls="constraint-bound").attrs["data-bound"]) == RECALL_BOUND
    # Only the delivered (lambda, mu)'s points are ringed: every multiplier's were at that lambda.
    chosen_points = plot.find_all("circle", cls="pt-metric", data_chosen="true")
    assert chosen_points and {float(p.attrs["data-mu"]) for p in chosen_points} == {MUS[1]}
    # lambda per mu: one line per multiplier in each of the three panels, never one through both
    lines = plot.find_all("path", cls="series-line")
    assert Counter((p.attrs["data-mu"], p.attrs["data-panel"]) for p in lines) == {
        (str(mu).rstrip("0").rstrip(".") if mu else "0", panel): 1
        for mu in MUS for panel in ("metric", "loss", "constraint")
    }  # fmt: skip
    assert len({p.attrs["stroke"] for p in lines}) == len(MUS)
    legend = [li.text for li in dom.find("ul", cls="legend").find_all("li", cls="series")]
    assert legend == ["μ = 0", "μ = 4"]
    header = [th.text for th in dom.find("table", id="trace-table").find("thead").find_all("th")]
    assert "μ" in header and RECALL in header

    table = dom.find("table", id="constraints-table")
    for (method, split), (_, recall) in CONSTRAINED_RESULTS.items():
        row = table.find("tr", data_constraint="0", data_split=split)
        assert row.find("td", data_method=method).text == f"{recall:.4f}"
    held = table.find("tr", cls="all-hold", data_split="test")
    assert [held.find("td", data_method=m).text for m in ("metro", "koyejo1")] == ["no", "yes"]
    summary = dom.find(id="results-summary").text
    assert summary.startswith(f"Precision under {RECALL}, higher is better · trained λ"), summary
    # The confusion matrix's method on its split: its recall, and whether the floor holds.
    assert dom.find(id="cm-constraints").text == f"{RECALL}: 0.8800 · missed on these rows"
    assert table.find("th", scope="row").text == RECALL
    # "best" under a floor: METRO's higher test precision broke the recall floor on test, so the
    # tag goes to the best method whose floor held.
    body = dom.find("table", id="methods-table").find("tbody")
    rows = body.find_all("tr")
    tagged = [tr.attrs["data-method"] for tr in rows if tr.find_all("span", cls="tag")]
    assert tagged == ["koyejo1"]
    assert_no_clipped_tables(dom)


# -- the test -------------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_dashboard_job_page_and_list_in_headless_chromium(
    app: Any, tenant: TenantCtx, service_dirs: dict[str, Path], live_server: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    browser = Browser(tmp_path)  # fails at once, with the fix, when chromium is missing
    ids = _seed(app, tenant, service_dirs["artifacts"])
    constrained = _seed_constrained(app, tenant)
    job_url = f"{live_server}/dashboard/jobs/{ids['job']}#key={tenant.key}"

    html, dom = browser.dom(job_url)
    body = dom.find("body")
    assert body.attrs.get("data-ready") == "true", "the job page did not finish loading"
    assert body.attrs.get("data-job-state") == "succeeded"
    assert body.attrs.get("data-refreshes") == "1", "a finished job's page must not poll"
    assert tenant.key not in html, "the API key must not be written into the page"
    assert dom.find(id="login").attrs.get("hidden") is not None, "the page asked for a key again"
    # A finished job can be deleted from its page (there was no way but the API); a running
    # one only cancelled (below).
    assert [b.text for b in dom.find_all("button", cls="danger")] == ["Delete job"]

    # The plot: one point per trace step in each panel, at the steps' lambdas.
    n_steps = len(LAMBDAS) * REPEATS * len(SHIFTS)
    plot = dom.find("svg", id="trace-plot")
    assert plot.attrs["data-steps"] == str(n_steps)
    metric_points = plot.find_all("circle", cls="pt-metric")
    loss_points = plot.find_all("circle", cls="pt-loss")
    assert len(metric_points) == n_steps and len(loss_points) == n_steps
    expected = Counter(lam for lam in LAMBDAS for _ in range(REPEATS * len(SHIFTS)))
    assert Counter(float(p.attrs["data-lambda"]) for p in metric_points) == expected
    assert Counter(float(p.attrs["data-lambda"]) for p in loss_points) == expected
    # ... each with its position in the plot, and the two repeats in two colors.
    assert len({(p.attrs["cx"], p.attrs["cy"]) for p in metric_points}) == n_steps
    assert len({p.attrs["fill"] for p in metric_points}) == REPEATS
    # One line per (repeat, shift) in each panel, never one zig-zag through both shifts: the
    # shifts drawn apart (dashes), each series named in the legend.
    lines = plot.find_all("path", cls="series-line")
    series = Counter((p.attrs["data-repeat"], p.attrs["data-shift"]) for p in lines)
    assert series == {(str(r), sh): 2 for r in range(REPEATS) for sh in SHIFTS}
    for p in lines:
        points = p.attrs["d"].replace("M", " ").replace("L", " ").split()
        xs = [float(v.split(",")[0]) for v in points]
        assert xs == sorted(xs) and len(xs) == len(LAMBDAS), "a line must not double back"
    dashes = {p.attrs["data-shift"]: p.attrs.get("stroke-dasharray", "") for p in lines}
    assert dashes["minimal"] != dashes["paper"]
    legend = [li.text for li in dom.find("ul", cls="legend").find_all("li", cls="series")]
    assert legend == [f"repeat {r}, shift {sh}" for r in range(REPEATS) for sh in SHIFTS]

    # The trained lambda (the delivered model's): a marker line, and the points at it singled
    # out (one per repeat and shift).
    chosen = plot.find("g", id="chosen-lambda")
    assert float(chosen.attrs["data-lambda"]) == CHOSEN
    assert "trained λ = -0.25" in chosen.text
    marked = [p for p in metric_points if p.attrs.get("data-chosen") == "true"]
    assert [float(p.attrs["data-lambda"]) for p in marked] == [CHOSEN] * REPEATS * len(SHIFTS)
    # Every repeat's own choice marked too, though these choices carry no pooled curve (a job
    # from before selection_curve, or not a grid): at its lambda and the score the search chose
    # it by, which for repeat 0 is the score before its refinement (0.85; the refined model's 0.9
    # is not a point of the lambda search); in the repeat's color, named in the text alternative.
    assert not plot.find_all("path", cls="pooled-curve")
    choice_marks = plot.find("g", cls="repeat-choices").find_all("circle", cls="repeat-choice")
    assert [
        (m.attrs["data-repeat"], float(m.attrs["data-lambda"]), float(m.attrs["data-score"]),
         m.attrs["data-on"]) for m in choice_marks
    ] == [("0", CHOSEN, 0.85, "selection"), ("1", CHOSEN_1, 0.8, "selection")]  # fmt: skip
    assert len({m.attrs["fill"] for m in choice_marks}) == REPEATS
    desc = plot.find("desc").text
    refined = "F2 0.8500 (5-fold CV), refined model 0.9000"
    assert f"repeat 0 chose λ = -0.25 (shift minimal): {refined}" in desc
    assert "repeat 1 chose λ = -0.5 (shift paper): F2 0.8000 (5-fold CV)" in desc
    assert "pooled" not in desc  # no curve is claimed where none is drawn
    assert dom.find(id="best-lambda").text == "-0.25"
    assert "shift minimal (repeat 0, the model delivered)" in dom.find(id="trained-shift").text
    # Each repeat's own choice, the score it was chosen by (and on which split), its warnings.
    choice_rows = dom.find("table", id="choices-table").find("tbody").find_all("tr")
    assert [cells_of(r)[:3] for r in choice_rows] == [
        ["0", "-0.25", "minimal"],
        ["1", "-0.5", "paper"],
    ]
    assert cells_of(choice_rows[0])[-2] == "0.9000 (5-fold CV)"
    # Repeat 0 kept a refined model (chosen by its score, 0.9, up from the search's 0.85).
    # Its stage was one of the held-spread schedule (search.refine_scale), and the cell says so.
    assert [cells_of(r)[-1] for r in choice_rows] == ["T = 0.2 (spread held), from 0.8500", "no"]
    tried = choice_rows[0].find_all("td")[-1].attrs["title"]
    assert tried.endswith("refined T = 0.05: 0.8800, T = 0.2 (spread held): 0.9000")
    # Repeat 1's stages beat its choice there too, and the cell says why none was kept.
    why = choice_rows[1].find_all("td")[-1].attrs["title"]
    assert why.endswith(
        "not kept: a refined model beat the choice's 0.8500 with 0.9000 but the held-out rows "
        "could not tell it from a constant classifier (p = 0.71)"
    )
    assert dom.find(id="selection-score").text == "F2 0.8500 ± 0.0707 (5-fold CV, 2 repeats)"
    [warning] = dom.find(id="search-warnings").find_all("li")
    assert warning.attrs["data-code"] == "few_true_positives" and FEW_TP in warning.text
    # Repeat 1 delivered the fallback: the server's words for why, as `metro result` says them.
    [fallback] = dom.find(id="search-fallback").find_all("li")
    assert (fallback.attrs["data-repeat"], fallback.attrs["data-reason"]) == ("1", "within_noise")
    assert fallback.text.startswith(
        "Repeat 1: the held-out rows could not tell the search's choice (λ -0.75, 0.8200 "
        "held-out) from plain ERM's (p = 0.60): the fallback"
    )

    # The metric by the name people use, the uploaded dataset by its file name.
    assert "F2 on churn.csv" in dom.find(cls="page-head").text
    assert "f_beta(2)" not in dom.find(id="view").text.replace(
        dom.find("details", cls="raw").text, ""
    )

    # The confusion matrix: METRO on the test split of the first repeat, by default.
    matrix = dom.find("table", id="confusion-matrix")
    assert (matrix.attrs["data-method"], matrix.attrs["data-split"]) == ("metro", "test")
    _, tp, fp, fn, tn = RESULTS[("metro", 0, "test")]
    for cell, count in {"tp": tp, "fp": fp, "fn": fn, "tn": tn}.items():
        assert matrix.find("td", data_cell=cell).find(cls="cm-count").text == str(count)
    # ... its rows and columns named by the classes its model predicts (the result's labels):
    # "positive" alone did not say which class F1 counted.
    heads = [" ".join(th.text.split()) for th in matrix.find_all("th")]
    assert heads == [
        "Predicted positive (yes)", "Predicted negative (no)",
        "Actual positive (yes)", "Actual negative (no)",
    ]  # fmt: skip

    # The methods table: mean and sample standard deviation over the repeats, METRO first.
    table = dom.find("table", id="methods-table")
    rows = table.find("tbody").find_all("tr")
    assert [r.attrs["data-method"] for r in rows] == ["metro", "erm", "koyejo1"]
    for row in rows:
        method = row.attrs["data-method"]
        cells = cells_of(row)
        want = []
        for split in ("validation", "test"):
            values = [RESULTS[(method, r, split)][0] for r in range(REPEATS)]
            want += [f"{statistics.fmean(values):.4f}", f"{statistics.stdev(values):.4f}"]
        assert cells[:4] == want, (method, cells)
        assert cells[5] == str(REPEATS)
    # METRO has the best test mean here, said as a test figure ("Best" is the selection's)
    assert rows[0].find("th").find(cls="tag").text == "best on test"
    # Under the refit (the job's default) every model was trained on its validation rows: that
    # column says it is in-sample, as the result's validation_in_sample and `metro result` do.
    header = table.find("th", id="methods-validation")
    assert header.find(id="methods-in-sample").text == "(in-sample)"
    assert header.attrs["title"].startswith("In-sample: the refit trained each model on these")
    options = [o.text for o in dom.find("select", id="cm-split").find_all("option")]
    assert options == ["test", "validation (in-sample)"], options
    # Each row named as the result names its method (method_names; metro result prints these).
    names = [" ".join(r.find("th").text.split()) for r in rows]
    assert [n.removesuffix("best on test").strip() for n in names] == [
        "METRO",
        "ERM",
        "Koyejo et al. (1)",
    ], names
    # METRO's lambda: each repeat's (a model was trained at each), not their mean, -0.375, at
    # which no model was trained; the baselines have none.
    assert table.find("th", id="methods-lambda").text == "λ per repeat"
    assert [cells_of(r)[4] for r in rows] == ["-0.25, -0.5", "—", "—"]
    assert (
        "repeat 0 (the model delivered): λ = -0.25"
        in rows[0].find("td", cls="lambdas").attrs["title"]
    )
    # Under the confusion matrix of an unconstrained job: its caption, and nothing else (no
    # literal "null" where the constraints' line would be).
    below = [c for c in matrix_host(dom).children if not (isinstance(c, str) and not c.strip())]
    assert [n.tag for n in below] == ["table", "p"], below
    assert "null" not in dom.find(id="results").text
    # Every table fits its card at 1280 px: the per-repeat choices in the half-wide Progress card
    # too (none scrolls, cut off at the card's edge).
    assert_no_clipped_tables(dom)
    summary = dom.find(id="results-summary").text
    assert summary.startswith("F2, higher is better · trained λ = -0.25 (shift minimal)"), summary
    assert "METRO chose by F2 0.8500 ± 0.0707 (5-fold CV, 2 repeats)" in summary

    # The model: its id, both files' digests (labelled, as `metro download` prints them) and a
    # download link per format, which serves the model's bytes.
    assert dom.find(id="model-id").text == ids["model"]
    assert dom.find(id="sha256-safetensors").text == ids["sha256"]
    assert dom.find(id="sha256-onnx").text == ids["onnx_sha256"] != ids["sha256"]
    facts = [dt.text for dt in dom.find(id="model").find_all("dt")]
    assert "SHA-256 (safetensors)" in facts and "SHA-256 (ONNX)" in facts
    # Its positive label (the manifest's labels), in `metro result`'s and `metro watch`'s words.
    assert "Positive label" in facts
    positive = "'yes' (negative 'no'): F2 counts 'yes' as positive"
    assert dom.find(id="model-positive").text == positive
    links = {a.attrs["data-format"]: a.attrs["href"] for a in dom.find_all("a", cls="download")}
    assert links == {
        fmt: f"/v1/models/{ids['model']}/download?format={fmt}" for fmt in ("safetensors", "onnx")
    }
    r = httpx.get(live_server + links["safetensors"], headers=tenant.headers, timeout=10)
    assert r.status_code == 200 and hashlib.sha256(r.content).hexdigest() == ids["sha256"]

    # A screenshot of the page, for a person to look at.
    shot = OUTPUT_DIR / "job.png"
    browser.screenshot(job_url, shot, height=2300)
    _assert_real_png(shot, 1280, 2300)

    # The job list: both jobs with their states and progress.
    list_url = f"{live_server}/dashboard/#key={tenant.key}"
    _, dom = browser.dom(list_url)
    rows = {
        r.attrs["data-job-id"]: r for r in dom.find("table", id="jobs-table").find_all("tr")
        if "data-job-id" in r.attrs
    }  # fmt: skip
    assert set(rows) == {ids["job"], ids["running"], ids["failed"], constrained}
    assert rows[constrained].find("td", cls="metric-cell").text == f"Precision under {RECALL}"
    assert rows[ids["job"]].find("td", cls="metric-cell").text == "F2"
    assert rows[ids["failed"]].attrs["data-state"] == "failed"
    assert rows[ids["job"]].attrs["data-state"] == "succeeded"
    assert rows[ids["running"]].attrs["data-state"] == "running"
    progress = rows[ids["running"]].find("div", cls="progress")
    assert progress.attrs["role"] == "progressbar" and progress.attrs["aria-valuenow"] == "40"
    assert rows[ids["job"]].find("a").attrs["href"] == f"/dashboard/jobs/{ids['job']}"
    dataset_cell = rows[ids["job"]].find("td", data_uri=ids["dataset_uri"])
    assert dataset_cell.text == "churn.csv"
    assert "refreshing while 1 job is active" in dom.find(id="list-updated").text
    browser.screenshot(list_url, OUTPUT_DIR / "list.png", height=700)
    _assert_real_png(OUTPUT_DIR / "list.png", 1280, 700)
    assert_no_clipped_tables(dom)
    # In an 800-px window too: Attempts, Created and Run time ran off the screen.
    _, narrow = browser.dom(list_url, width=800)
    assert_no_clipped_tables(narrow)

    # A running job's page keeps refreshing, and shows the trace so far.
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{ids['running']}#key={tenant.key}")
    body = dom.find("body")
    assert body.attrs["data-job-state"] == "running"
    assert int(body.attrs["data-refreshes"]) >= 2, "the running job's page did not refresh"
    assert len(dom.find_all("circle", cls="pt-metric")) == 3
    assert "trained λ = 0.25" in dom.find("g", id="chosen-lambda").text
    assert dom.find_all(cls="live"), "no live indicator"
    assert [b.text for b in dom.find_all("button", cls="danger")] == ["Cancel job"]
    assert "once the job has succeeded" in dom.find(id="model").text
    browser.screenshot(
        f"{live_server}/dashboard/jobs/{ids['running']}#key={tenant.key}",
        OUTPUT_DIR / "running.png", height=1400,
    )  # fmt: skip
    _assert_real_png(OUTPUT_DIR / "running.png", 1280, 1400)

    # A failed job: the reason, no trace, no results, and no polling.
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{ids['failed']}#key={tenant.key}")
    assert dom.find("body").attrs["data-refreshes"] == "1"
    assert "the dataset has no column 'y'" in dom.find(cls="notice-error").text
    assert "recorded no lambda steps" in dom.find(id="trace").text
    assert "The job failed" in dom.find(id="results").text
    # Its model card says why there is none (it said "once the job has succeeded").
    assert "The job failed: it delivered no model." in dom.find(id="model").text

    # A constrained job: its constraint wherever its metric is shown.
    constrained_url = f"{live_server}/dashboard/jobs/{constrained}#key={tenant.key}"
    browser.screenshot(constrained_url, OUTPUT_DIR / "constrained.png", height=2300)
    html, dom = browser.dom(constrained_url)
    assert dom.find("body").attrs.get("data-ready") == "true"
    _assert_constrained_job_page(dom)
    # A shortened id (the list shows 8 characters) is a page that says so, not raw JSON.
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{ids['job'][:8]}#key={tenant.key}")
    assert "is not a job id: a job's id is its full UUID" in dom.find(cls="notice-error").text

    # The default cv, "auto", was shown as "auto-fold CV".
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{ids['job']}#key={tenant.key}")
    spec_text = " ".join(dom.find("section", aria_labelledby="spec-title").text.split())
    shown = spec_text.split("Normalized spec")[0]
    assert "auto-fold" not in shown and "CV (auto)" in shown, shown
    assert "optimizer auto" in shown, shown

    # Without a key, the page asks for one and shows nothing else.
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{ids['job']}")
    assert dom.find(id="login").attrs.get("hidden") is None
    assert not dom.find_all("svg", id="trace-plot")
    browser.screenshot(f"{live_server}/dashboard/", OUTPUT_DIR / "sign-in.png", height=700)


FOLDS = 3
CV_CHOSEN = (-0.25, -0.5)  # each repeat's trained lambda
CV_REFINED = 0.95  # repeat 1's refined model's held-out score


def _pooled_at(lam: float, repeat: int) -> float:
    """The pooled held-out score the choice ran over: its peak at the repeat's chosen lambda,
    which the folds' own curves (at threshold 0, below) do not share."""
    return 0.9 - 0.5 * (lam - CV_CHOSEN[repeat]) ** 2


def _seed_cross_validated(app: Any, tenant: TenantCtx, *, fallback: bool = False) -> str:
    """A finished grid job with 3-fold CV and 2 repeats: every fold's steps, and each repeat's
    choice with the pooled curve it was made on (with ``fallback``, repeat 0's replaced by the
    safeguard's fallback, at a threshold of its own)."""
    spec = normalize_job_spec(
        JobCreate.model_validate(
            {
                "metric": {"preset": "f1"},
                "dataset": {"uri": "builtin://breast_cancer"},
                "search": {"n_lambdas": len(LAMBDAS), "cv": FOLDS},
                "repeats": 2,
            }
        )
    )
    choices = [
        {
            **_choice(r, CV_CHOSEN[r], "minimal", _pooled_at(CV_CHOSEN[r], r), []),
            "n_folds": FOLDS,
            "selection_curve": [
                {"lambda": lam, "shift": "minimal", "score": _pooled_at(lam, r)} for lam in LAMBDAS
            ],
        }
        for r in range(2)
    ]
    # Repeat 1 kept a refined model: its selection score (what "Best" shows) is the refined
    # one, above the curve's point at its lambda.
    choices[1]["refinement"] = {**REFINED, "score_before": _pooled_at(CV_CHOSEN[1], 1)}
    choices[1]["selection_score"] = CV_REFINED
    if fallback:
        choices[0]["fallback"] = {
            "reason": "unsupported", "choice_lambda": LAMBDAS[0], "choice_score": 0.3,
        }  # fmt: skip
        choices[0]["selection_score"] = FALLBACK_SCORE
    with app.state.sessionmaker() as session:
        job, _ = submit_job(
            session, tenant_id=tenant.id, spec=spec, dataset_uri="builtin://breast_cancer",
            dataset_id=None, idempotency_key=None,
        )  # fmt: skip
        for repeat in range(2):
            for step, (fold, lam) in enumerate((f, lam) for f in range(FOLDS) for lam in LAMBDAS):
                assert record_lambda_step(
                    session, job.id, repeat=repeat, step=step, fold=fold, lambda_=lam,
                    shift="minimal", surrogate_loss=0.4, l_lambda=0.0, train_metric=0.8,
                    validation_metric=0.6 - 0.1 * lam * (fold + 1), seconds=0.05,
                )  # fmt: skip
        for repeat in range(2) if fallback else ():  # METRO alone: no other method to beat
            for split, value in (("validation", 0.7), ("test", 0.6)):
                assert record_metric_result(
                    session, job.id, method="metro", repeat=repeat, split=split,
                    metric_value=value, tp=7, fp=3, fn=3, tn=87, lambda_=CV_CHOSEN[repeat],
                )  # fmt: skip
        row = session.get(Job, job.id)
        assert row is not None
        row.state, row.progress, row.best_lambda = JobState.SUCCEEDED.value, 1.0, CV_CHOSEN[0]
        row.choices, row.attempts = choices, 1
        row.started_at, row.finished_at = utcnow() - timedelta(seconds=30), utcnow()
        session.commit()
        return str(job.id)


@pytest.mark.timeout(180)
def test_a_cross_validated_chart_draws_each_repeats_pooled_curve_over_faint_folds(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    """The chart drew 15 fold lines coloured by repeat, but not the curve that drove the
    choice: now each repeat's pooled curve in front, its chosen lambda marked on it, and the
    folds' lines in the background."""
    browser = Browser(tmp_path)
    job = _seed_cross_validated(app, tenant)
    url = f"{live_server}/dashboard/jobs/{job}#key={tenant.key}"
    browser.screenshot(url, OUTPUT_DIR / "cross-validated.png", height=1400)
    _, dom = browser.dom(url)
    assert dom.find("body").attrs.get("data-ready") == "true"
    plot = dom.find("svg", id="trace-plot")

    # The top panel's axis says what it holds now: held-out scores, pooled or per fold.
    assert "held-out F1" in [t.text for t in plot.find_all("text", cls="axis-label")]
    # One pooled curve per repeat, through every grid lambda at the pooled scores.
    curves = plot.find("g", cls="pooled-curves").find_all("path", cls="pooled-curve")
    assert sorted(c.attrs["data-repeat"] for c in curves) == ["0", "1"]
    assert all(c.attrs["data-points"] == str(len(LAMBDAS)) for c in curves)
    colors = {c.attrs["data-repeat"]: c.attrs["stroke"] for c in curves}
    assert colors["0"] != colors["1"]

    # Every repeat's chosen lambda marked, on its own curve, at the score it was chosen by.
    marks = plot.find("g", cls="repeat-choices").find_all("circle", cls="repeat-choice")
    assert {m.attrs["data-repeat"]: float(m.attrs["data-lambda"]) for m in marks} == {
        "0": CV_CHOSEN[0], "1": CV_CHOSEN[1]
    }  # fmt: skip
    for m in marks:
        r = int(m.attrs["data-repeat"])
        assert float(m.attrs["data-score"]) == pytest.approx(_pooled_at(CV_CHOSEN[r], r))
        assert m.attrs["fill"] == colors[m.attrs["data-repeat"]]

    # The folds' lines: all there, marked as background, and drawn before (under) the curves.
    folds = plot.find_all("path", cls="fold-line")
    metric_folds = [f for f in folds if f.attrs["data-panel"] == "metric"]
    assert len(metric_folds) == 2 * FOLDS
    order = [n for n in plot.iter() if n.tag in ("path", "circle")]
    last_fold = max(i for i, n in enumerate(order) if "fold-line" in n.classes)
    first_curve = min(i for i, n in enumerate(order) if "pooled-curve" in n.classes)
    first_mark = min(i for i, n in enumerate(order) if "repeat-choice" in n.classes)
    assert last_fold < first_curve < first_mark
    # ... and faint: the stylesheet draws them thinner and lighter than the pooled curves.
    css = (ROOT / "service" / "dashboard" / "static" / "app.css").read_text()
    assert ".trace-plot .series-line.fold-line { stroke-width: 1; stroke-opacity: 0.22; }" in css
    assert ".trace-plot .pooled-curve { fill: none; stroke-width: 3.2;" in css
    fold_points = plot.find_all("circle", cls="is-fold")
    assert len(fold_points) == 2 * FOLDS * len(LAMBDAS) and ".trace-plot .pt.is-fold {" in css

    # The text alternative says what the plot draws: the pooled curves, the faint folds behind
    # them, and each repeat's choice with its lambda and score; the legend says the same.
    chose = [
        f"repeat {r}: pooled F1 ({FOLDS}-fold CV), chose λ = {CV_CHOSEN[r]:g} (shift minimal) at "
        f"{_pooled_at(CV_CHOSEN[r], r):.4f}"
        + (f", refined model {CV_REFINED:.4f}" if r == 1 else "")  # as "Best" says
        for r in range(2)
    ]
    desc = plot.find("desc").text
    assert "thick lines: each repeat's pooled F1" in desc
    background = f"thin, faint lines in the background: each of the {FOLDS} folds' own held-out F1"
    assert background in desc
    assert all(text in desc for text in chose), desc
    legend = dom.find("ul", cls="legend")
    keys = legend.find_all("li", cls="choice-key")
    assert [
        (k.attrs["data-repeat"], float(k.attrs["data-lambda"]), k.attrs["data-curve"]) for k in keys
    ] == [("0", CV_CHOSEN[0], "true"), ("1", CV_CHOSEN[1], "true")]
    assert [k.text for k in keys] == chose
    assert "one fold's own held-out F1" in legend.find("li", cls="fold-key").text
    # ... and as numbers: every lambda's pooled score per repeat, each repeat's choice marked.
    table = dom.find("table", id="pooled-table")
    rows = table.find("tbody").find_all("tr")
    assert [float(row.attrs["data-lambda"]) for row in rows] == LAMBDAS
    for row, lam in zip(rows, LAMBDAS, strict=True):
        for r in range(2):
            cell = row.find("td", data_repeat=str(r)).text
            assert cell.startswith(f"{_pooled_at(lam, r):.4f}"), (lam, r, cell)
    chosen_cells = table.find_all("td", data_chosen="true")  # in row order: -0.5 comes first
    assert [(c.attrs["data-repeat"], float(c.attrs["data-lambda"])) for c in chosen_cells] == [
        ("1", CV_CHOSEN[1]), ("0", CV_CHOSEN[0])
    ]  # fmt: skip
    assert all(c.text.endswith(" chosen") for c in chosen_cells)


FALLBACK_SCORE = 0.0613


@pytest.mark.timeout(180)
def test_a_fallback_is_marked_at_its_own_score_never_the_curves(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    """The fallback decides at a threshold the held-out rows back: its lambda was marked
    "chosen" at the curve's score there (0.0909, the replaced choice's), beside a Best of
    0.0613 on the same page."""
    job = _seed_cross_validated(app, tenant, fallback=True)
    _, dom = Browser(tmp_path).dom(f"{live_server}/dashboard/jobs/{job}#key={tenant.key}")
    marks = dom.find("svg", id="trace-plot").find_all("circle", cls="repeat-choice")
    [mark] = [m for m in marks if m.attrs["data-repeat"] == "0"]
    assert float(mark.attrs["data-score"]) == pytest.approx(FALLBACK_SCORE)
    table = dom.find("table", id="pooled-table")
    [cell] = table.find_all("td", data_chosen="true", data_repeat="0")
    assert cell.text.endswith(f" chosen, {FALLBACK_SCORE:.4f} at the fallback's threshold")
    # METRO alone in the methods table: no "best" tag (it read as the page's Best).
    methods = dom.find("table", id="methods-table").find("tbody").find_all("tr")
    assert [r.attrs["data-method"] for r in methods] == ["metro"]
    assert not methods[0].find_all(cls="tag")


def test_the_dashboard_never_hands_null_to_replace_children() -> None:
    """`el.replaceChildren(a, null)` writes the text "null" into the page (the confusion
    matrix of every unconstrained job showed one); the dashboard fills elements through its
    `fill`, which skips null, undefined and false as `h` does."""
    script = (ROOT / "service" / "dashboard" / "static" / "app.js").read_text()
    assert ".replaceChildren(" not in script
    assert "function fill(el, ...children)" in script


CLASSES = ("cat", "dog", "eel")


def _seed_averaged(
    app: Any,
    tenant: TenantCtx,
    *,
    labels: bool = False,
    holdout: bool = False,
    constrained: bool = False,
    multinomial: bool = False,
) -> str:
    """A finished macro-F1 job over three classes (or, with ``labels``, three 0/1 label
    columns): a choice per class (its lambda and offset), the average and each class's own row
    per method on test. ``constrained``: under recall >= 0.8, which the second class missed
    (recall 0.7 on test, 0.75 where chosen) while the average (0.8333) clears it."""
    dataset: dict[str, Any] = {"uri": "file:///data/pets.csv", "label_column": "kind"}
    if labels:
        dataset = {"uri": "file:///data/pets.csv", "label_columns": list(CLASSES)}
    request: dict[str, Any] = {"metric": {"preset": "f1", "average": "macro"}, "dataset": dataset}
    if constrained:
        request["constraints"] = [{"metric": "recall", "at_least": 0.8}]
        dataset["ignore_columns"] = ["pet_id", "name"]
    if multinomial:
        request["search"] = {"multiclass": "multinomial"}
    spec = normalize_job_spec(JobCreate.model_validate(request))
    recalls = [0.9, 0.7, 0.9]  # each class's own on test; their mean clears the bound
    thin = [{"code": "few_true_positives", "message": "rests on 3 true positives"}]
    choices = [
        {**_choice(0, -0.25 * (c + 1), "minimal", 0.7 + 0.1 * c, thin if c == 1 else []),
         "label": label, "offset": 0.5 * c}
        for c, label in enumerate(CLASSES)
    ]  # fmt: skip
    if multinomial:  # one multinomial model: no λ, shift or threshold for any class
        choices = [{**c, "trained_lambda": None, "shift": None, "tuned_threshold": 0.0}
                   for c in choices]  # fmt: skip
    if holdout:  # chosen on a validation split: no folds, no offsets tuned
        choices = [{**c, "selection_split": "validation", "n_folds": None, "offset": 0.0}
                   for c in choices]  # fmt: skip
    if constrained:
        choices = [{**c, "constraint_values": [recalls[i] + 0.05],
                    "constraints_satisfied": i != 1, "constraint_reach": [0.78]}
                   for i, c in enumerate(choices)]  # fmt: skip
    with app.state.sessionmaker() as session:
        job, _ = submit_job(
            session, tenant_id=tenant.id, spec=spec, dataset_uri="file:///data/pets.csv",
            dataset_id=None, idempotency_key=None,
        )  # fmt: skip
        for c, label in enumerate(CLASSES):  # each class's own search, on 2 folds
            for fold in range(2):
                assert record_lambda_step(
                    session, job.id, repeat=0, step=2 * c + fold, fold=fold, lambda_=-0.25,
                    shift="minimal", surrogate_loss=0.4, l_lambda=0.0, train_metric=0.8,
                    validation_metric=0.6 + 0.01 * c, seconds=0.05, class_index=c, label=label,
                )  # fmt: skip
        # every method an averaged job runs: one column each in the per-class table
        methods = (("metro", 0.8), ("ovr-threshold", 0.7), ("logistic", 0.6),
                   ("logistic-tuned", 0.65))  # fmt: skip
        for method, base in methods:
            per_class = [base + 0.05 * c for c in range(3)]
            held: dict[str, Any] = {}
            if constrained:
                held = {"constraint_values": [sum(recalls) / 3], "constraints_hold": False}
            assert record_metric_result(
                session, job.id, method=method, repeat=0, split="test",
                metric_value=sum(per_class) / 3, tp=30, fp=9, fn=9, tn=102, lambda_=None,
                **held,
            )  # fmt: skip
            for c, value in enumerate(per_class):
                if constrained:
                    held = {"constraint_values": [recalls[c]], "constraints_hold": c != 1}
                assert record_metric_result(
                    session, job.id, method=method, repeat=0, split="test", metric_value=value,
                    tp=10 + c, fp=3, fn=3 - c, tn=34, class_index=c, label=CLASSES[c],
                    lambda_=-0.25 * (c + 1) if method == "metro" else None, **held,
                )  # fmt: skip
        row = session.get(Job, job.id)
        assert row is not None
        row.state, row.progress, row.choices, row.attempts = (
            JobState.SUCCEEDED.value,
            1.0,
            choices,
            1,
        )
        row.started_at, row.finished_at = utcnow() - timedelta(seconds=30), utcnow()
        session.commit()
        return str(job.id)


def test_a_multinomial_job_claims_no_lambda_anywhere(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    """search.multiclass multinomial: its page said "Trained λ one per class (below)", a spec
    of "grid, 21 lambdas" with a logistic surrogate, and a choices table of λ, shift and
    threshold columns of dashes and zeros."""
    browser = Browser(tmp_path)
    job_id = _seed_averaged(app, tenant, multinomial=True)
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{job_id}#key={tenant.key}")
    assert dom.find("body").attrs.get("data-ready") == "true"
    assert dom.find(id="best-lambda").text.startswith("none (a multinomial logistic regression")
    table = dom.find("table", id="choices-table")
    header = [" ".join(th.text.split()) for th in table.find("thead").find_all("th")]
    assert "Trained λ" not in header and "Shift" not in header and "Threshold" not in header
    assert "Offset" in header, header
    offsets = [cells_of(r)[header.index("Offset")] for r in table.find("tbody").find_all("tr")]
    assert offsets[1:] == ["0.5000", "1.0000"], offsets
    spec = " ".join(dom.find("section", aria_labelledby="spec-title").text.split())
    assert "none: one multinomial logistic regression, offsets tuned on 5 folds" in spec, spec
    assert "— (a multinomial logistic regression)" in spec


def test_a_multilabel_job_names_its_labels_everywhere(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    """Its rows are label columns: the trace said "Label", everything else said "class"."""
    browser = Browser(tmp_path)
    job_id = _seed_averaged(app, tenant, labels=True)
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{job_id}#key={tenant.key}")
    assert dom.find("body").attrs.get("data-ready") == "true"
    assert "3 labels, one λ each" in dom.find(id="results-summary").text
    assert dom.find(id="best-lambda").text == "one per label (below)"
    for table in ("classes-table", "choices-table", "trace-table"):
        header = [th.text for th in dom.find("table", id=table).find("thead").find_all("th")]
        assert "Label" in header and "Class" not in header, (table, header)
    total = " ".join(dom.find(id="cm-total").text.split())
    assert "summed over 3 labels" in total and "once per label" in total, total
    headings = [h3.text for h3 in dom.find_all("h3")]
    assert "Per label" in headings and "Per class" not in headings, headings
    # a label's warning names the label, not "Repeat 0" (one repeat: a choice per label)
    [warning] = dom.find(id="search-warnings").find_all("li")
    assert warning.text == "Label dog: rests on 3 true positives", warning.text
    page = dom.find("body").text
    assert "class" not in page.lower().replace("classif", ""), page  # nowhere on the page


def test_a_constrained_multilabel_job_shows_each_labels_own_values(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    """The average's recall (0.8333) clears a floor the label dog missed: the page says the
    Constraints table holds means, shows each label's own recall and whether it held, and the
    line of the choices names the label that missed (it counted the 3 labels as 3 repeats)."""
    browser = Browser(tmp_path)
    job_id = _seed_averaged(app, tenant, labels=True, constrained=True)
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{job_id}#key={tenant.key}")
    assert dom.find("body").attrs.get("data-ready") == "true"
    assert "mean of the per-label values" in dom.find(id="constraints-averaged").text
    assert dom.find(id="spec-ignored").text == "pet_id, name"  # the columns left out
    rows = dom.find("table", id="classes-table").find("tbody").find_all("tr")
    own = [r.find("td", data_constraint="0").text for r in rows]
    assert own == ["0.9000", "0.7000", "0.9000"], own
    held = [r.find("td", data_held="").find(cls="holds").attrs["data-holds"] for r in rows]
    assert held == ["true", "false", "true"], held
    chosen = " ".join(dom.find(id="chosen-constraints").text.split())
    assert chosen == (
        "not met (by dog) where chosen: Recall ≥ 0.8 cat 0.9500, dog 0.7500, eel 0.9500 "
        "(tightest met: dog 0.7800) (5-fold CV)"
    ), chosen
    # Four methods' constraint columns fit (in half the page they ran 339 px past the card);
    # the Progress card may take the page's width for its wider per-label choices table.
    clipped = [w.attrs["data-clipped"] for w in dom.find_all(cls="table-wrap")
               if "data-clipped" in w.attrs]  # fmt: skip
    assert not clipped, clipped


def test_a_multiclass_job_chosen_on_a_holdout_says_its_offsets_were_not_tuned(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    browser = Browser(tmp_path)
    _, folded = browser.dom(
        f"{live_server}/dashboard/jobs/{_seed_averaged(app, tenant)}#key={tenant.key}"
    )
    assert not folded.find_all(data_code="offsets_not_tuned")
    job_id = _seed_averaged(app, tenant, holdout=True)
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{job_id}#key={tenant.key}")
    notice = " ".join(dom.find(data_code="offsets_not_tuned").text.split())
    assert notice.startswith("Offsets not tuned: the classes chose on a holdout"), notice


def test_an_averaged_job_shows_each_class(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path
) -> None:
    browser = Browser(tmp_path)
    job_id = _seed_averaged(app, tenant)
    _, dom = browser.dom(f"{live_server}/dashboard/jobs/{job_id}#key={tenant.key}")
    assert dom.find("body").attrs.get("data-ready") == "true"
    summary = dom.find(id="results-summary").text
    assert "F1 (macro)" in summary and "3 classes, one λ each" in summary
    rows = dom.find("table", id="classes-table").find("tbody").find_all("tr")
    assert [r.attrs["data-class"] for r in rows] == list(CLASSES)
    for c, r in enumerate(rows):
        cells = cells_of(r)  # the data cells, after the class's header cell
        assert cells[0] == str(-0.25 * (c + 1)).rstrip("0")  # its own lambda
        assert cells[1] == f"{0.5 * c:.3f}"  # its offset
        assert cells[2] == f"{0.7 + 0.1 * c:.4f}"  # its own score where it chose
        assert cells[3] == f"{0.8 + 0.05 * c:.4f}" and cells[4] == f"{0.7 + 0.05 * c:.4f}"
        assert cells[5:7] == [f"{0.6 + 0.05 * c:.4f}", f"{0.65 + 0.05 * c:.4f}"]
        assert cells[7] == f"{10 + c} · 3 · {3 - c}"
    # Four methods' columns and long class names still fit the card (they ran 349 px past it)
    assert_no_clipped_tables(dom)
    # the confusion matrix and the methods table show the average, not a class
    matrix = dom.find("table", id="confusion-matrix")
    assert matrix.find("td", data_cell="tp").find(cls="cm-count").text == "30"
    # Each class's one-vs-rest counts, summed: not as many "examples" (it said 3x the rows).
    total = " ".join(dom.find(id="cm-total").text.split())
    assert "one-vs-rest counts summed over 3 classes" in total and "examples" not in total, total
    metro_row = dom.find("table", id="methods-table").find("tr", data_method="metro")
    assert f"{(0.8 + 0.85 + 0.9) / 3:.4f}" in metro_row.text
    assert cells_of(metro_row)[-2] == "—"  # no single lambda for the job
    # the choices: one per class, named, chosen by the class's own F1; one λ per class
    choice_rows = dom.find("table", id="choices-table").find("tbody").find_all("tr")
    assert [r.attrs["data-class"] for r in choice_rows] == list(CLASSES)
    assert [cells_of(r)[1] for r in choice_rows] == list(CLASSES)
    assert "F1 chosen by" in dom.find("table", id="choices-table").text
    assert dom.find(id="best-lambda").text == "one per class (below)"
    assert not dom.find_all(id="selection-score")  # it chose by the average: the results card
    # The trace's rows are each a class's own search, scored by its own F1: named per row, and
    # the columns say F1 (they said "Train F1 (macro)", with no class to tell rows apart).
    trace = dom.find("table", id="trace-table")
    header = [th.text for th in trace.find("thead").find_all("th")]
    assert header[2] == "Class" and "Train F1" in header and "Held-out F1" in header, header
    assert not any("(macro)" in t for t in header)
    # The plot likewise: each class's lines in a colour of its own, named in the legend, under
    # an axis of the class's F1 (it drew every class in one colour under "held-out F1 (macro)").
    legend = dom.find("ul", cls="legend")
    keys = [li for li in legend.find_all("li") if "data-class" in li.attrs]
    assert [li.attrs["data-class"] for li in keys] == list(CLASSES)
    strokes = [li.find("line").attrs["stroke"] for li in keys]
    assert len(set(strokes)) == 3, strokes
    plot_text = " ".join(t.text for t in dom.find_all("text"))
    assert "F1 (macro)" not in plot_text and "F1" in plot_text, plot_text
    rows = trace.find("tbody").find_all("tr")
    labels = [td.text for r in rows for td in r.find_all("td") if "data-label" in td.attrs]
    assert labels == [label for label in CLASSES for _ in range(2)]
    # Its baselines are not the spec's (none): the results name the ones every such job runs.
    spec_panel = " ".join(dom.find("section", aria_labelledby="spec-title").text.split())
    assert "Baselinesthose every averaged job runs (listed under Results)" in spec_panel


def test_a_queued_job_no_worker_takes_says_why_it_waits(
    app: Any, tenant: TenantCtx, live_server: str, tmp_path: Path, submit: Any
) -> None:
    """A cuda job with no GPU worker sat at 0% on its page without a word."""
    from sqlalchemy import delete

    from core.db.models import WorkerBeat

    with app.state.sessionmaker() as session:
        session.execute(delete(WorkerBeat))  # no worker reports
        session.commit()
    job = submit(tenant, training={"device": "cuda"})
    _, dom = Browser(tmp_path).dom(f"{live_server}/dashboard/jobs/{job['id']}#key={tenant.key}")
    notice = " ".join(dom.find(id="job-waiting").text.split())
    assert notice == f"Waiting: {job['waiting']}", notice
    assert "no worker serving the gpu queue" in notice
    # The job list says it too, the server's words in the note's title.
    _, listed = Browser(tmp_path).dom(f"{live_server}/dashboard/#key={tenant.key}", width=1280)
    row = listed.find("tr", data_job_id=job["id"])
    note = row.find(cls="waiting-note")
    assert note.text.strip() == "no worker" and note.attrs["title"] == job["waiting"]
    assert_no_clipped_tables(listed)
