"""The README's tour, run as a reader runs it: its shell and Python blocks, exactly as written,
in order, in one bash process (``set -euo pipefail``), against ``metro serve`` on the embedded
defaults (what ``make run`` starts: SQLite and the SQLite broker under ./var, a worker beside the
API), in a temporary directory; then the shell examples of docs/api.md the same way.

Which blocks belong to the tour is said in the documents themselves: an HTML comment on the line
before a fence, ``<!-- tour ... -->`` (``<!-- run ... -->`` in docs/api.md), or ``<!-- not in the
tour ... -->``. Every ``bash`` or ``python`` block must carry one, so a new block cannot escape
the test unnoticed. The test's own lines go between the blocks, never into them: a marker, and
afterwards the values the block assigned, which are then checked (job and model ids are UUIDs,
the dataset a ``dataset://`` URI, the downloads' digests the manifest's, ...).

The tour's directory holds ``.venv`` (a link to the environment the tests run in) and ``docs``
(a link to the repository's), so its relative paths work; its ``mktemp -d`` lands under the
test's temporary directory.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.conftest import free_port, wait_until

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
API_DOC = ROOT / "docs" / "api.md"

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*(tour|run|not in the tour)\b.*-->\s*$")
ASSIGNED = re.compile(r"^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=", re.MULTILINE)
PY_END = "METRO_README_PYTHON_BLOCK"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
RUNNABLE = ("bash", "python")


@dataclass
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based
    marker: str | None  # "tour", "run", "not in the tour", or None

    @property
    def assigned(self) -> list[str]:
        """Shell variables the block assigns, in order of first assignment."""
        if self.lang != "bash":
            return []
        return list(dict.fromkeys(ASSIGNED.findall(self.text)))


def fenced_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        before = lines[i - 1] if i else ""
        marked = MARKER.match(before)
        blocks.append(
            Block(opening.group(1), "\n".join(lines[i + 1 : end]), i + 1,
                  marked.group(1) if marked else None)
        )  # fmt: skip
        i = end + 1
    return blocks


def runnable(path: Path, run_marker: str) -> list[Block]:
    """The blocks to run, after checking that every shell or Python block says whether it is."""
    blocks = [b for b in fenced_blocks(path) if b.lang in RUNNABLE]
    unmarked = [f"{path.name}:{b.line}" for b in blocks if b.marker is None]
    assert not unmarked, (
        f"{unmarked}: a bash or python block with no <!-- {run_marker} --> or "
        "<!-- not in the tour ... --> comment on the line before it"
    )
    return [b for b in blocks if b.marker == run_marker]


def script(blocks: list[Block], logs: Path) -> str:
    """One bash script: each block verbatim, its output in logs/<n>.out and .err, then the
    values it assigned as JSON lines in logs/<n>.vars. A Python block is fed to ``python``
    (the tour's, once it has activated .venv) as it stands."""
    parts = [
        "set -euo pipefail",
        "trap 'echo \"readme-tour: exit status $? at: $BASH_COMMAND\" >&2' ERR",
    ]
    for n, block in enumerate(blocks):
        assert PY_END not in block.text
        body = (
            block.text if block.lang == "bash" else f"python - <<'{PY_END}'\n{block.text}\n{PY_END}"
        )
        parts.append(f'echo "readme-tour: block {n} (line {block.line}) at $SECONDS s" >&2')
        out, err, values = (
            shlex.quote(str(logs / f"{n}.{kind}")) for kind in ("out", "err", "vars")
        )
        parts.append(f"{{\n{body}\n}} > {out} 2> {err}")
        for name in block.assigned:
            parts.append(
                f"python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "
                f'{name} "${{{name}}}" >> {values}'
            )
    parts.append('echo "readme-tour: done at $SECONDS s" >&2')
    return "\n".join(parts) + "\n"


def run_blocks(blocks: list[Block], logs: Path, cwd: Path, env: dict[str, str]) -> list[Ran]:
    logs.mkdir(parents=True)
    path = logs / "script.sh"
    path.write_text(script(blocks, logs))
    done = subprocess.run(
        ["bash", str(path)], cwd=cwd, env=env, capture_output=True, text=True, timeout=360
    )
    (logs / "script.err").write_text(done.stderr)
    ran = [Ran.read(b, logs, n) for n, b in enumerate(blocks) if (logs / f"{n}.out").exists()]
    if done.returncode != 0:
        last = ran[-1] if ran else None
        raise AssertionError(
            f"the tour stopped (exit status {done.returncode}):\n{done.stderr[-3000:]}"
            + (f"\n--- its last block's stdout:\n{last.out[-3000:]}\n--- stderr:\n"
               f"{last.err[-3000:]}" if last else "")
        )  # fmt: skip
    assert len(ran) == len(blocks)
    for r in ran:
        assert "Traceback" not in r.err and "Traceback" not in r.out, (r.block.line, r.err)
        assert not re.search(r"^error: ", r.err, re.MULTILINE), (r.block.line, r.err)
    return ran


@dataclass
class Ran:
    block: Block
    out: str
    err: str
    vars: dict[str, str]

    @classmethod
    def read(cls, block: Block, logs: Path, n: int) -> Ran:
        values = {}
        if (logs / f"{n}.vars").exists():
            for line in (logs / f"{n}.vars").read_text().splitlines():
                name, value = json.loads(line)
                values[name] = value
        return cls(block, (logs / f"{n}.out").read_text(), (logs / f"{n}.err").read_text(),
                   values)  # fmt: skip


def json_values(text: str) -> list[Any]:
    """The JSON answers curl printed one after the other (curl adds no newline after them)."""
    decoder, i = json.JSONDecoder(), 0
    values: list[Any] = []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return values
        value, i = decoder.raw_decode(text, i)
        values.append(value)


def is_uuid(value: str) -> bool:
    return bool(UUID_RE.match(value)) and str(uuid.UUID(value)) == value


# -- the server ----------------------------------------------------------------------------------


def _venv() -> Path:
    """The environment the tests run in, with ``bin/activate`` and ``bin/metro`` (what ``make``
    installs into .venv): the tour's ``. .venv/bin/activate`` activates it."""
    prefix = Path(sys.prefix)
    for needed in ("bin/activate", "bin/metro"):
        if not (prefix / needed).exists():
            pytest.fail(
                f"{prefix / needed} is missing: the README tour runs in a virtual environment "
                "with the project installed (`make test` makes .venv so)",
                pytrace=False,
            )
    return prefix


def _tools() -> None:
    missing = [tool for tool in ("bash", "curl", "jq") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"{missing} not installed: the README tour uses them (`apt-get install -y curl jq`)",
            pytrace=False,
        )


@contextlib.contextmanager
def metro_serve(workdir: Path, env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """``metro serve`` on a free port with no METRO_* settings: the embedded defaults, its
    state under workdir/var, as ``make run`` starts it at the repository root."""
    port = free_port()
    log_path = workdir / "serve.log"
    with log_path.open("wb") as log:
        serve = subprocess.Popen(
            [str(Path(sys.prefix) / "bin" / "metro"), "serve", "--port", str(port)],
            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            assert serve.poll() is None, log_path.read_text()[-5000:]
            try:
                return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, 90, "metro serve to be ready", 0.2)
        yield url, log_path
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serve.pid, signal.SIGINT)  # Ctrl-C, as a reader ends `make run`
        with contextlib.suppress(subprocess.TimeoutExpired):
            serve.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serve.pid, signal.SIGKILL)  # a worker still busy with a job
        serve.wait(timeout=10)


# -- the test ------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_predictions(text: str, rows: int) -> None:
    found = list(csv.DictReader(io.StringIO(text)))
    assert len(found) == rows, text
    for row in found:
        assert list(row) == ["margin", "label"], row
        assert row["label"] in ("0", "1") and (float(row["margin"]) >= 0) == (row["label"] == "1")


@pytest.mark.timeout(480)  # a guard against a hang only: about 80 s on an idle machine
def test_the_readme_tour_and_the_api_guide_run_as_written(tmp_path: Path) -> None:
    _tools()
    venv = _venv()
    tour = runnable(README, "tour")
    api_guide = runnable(API_DOC, "run")
    workdir = tmp_path / "checkout"  # the tour's "repository root"
    workdir.mkdir()
    (workdir / ".venv").symlink_to(venv, target_is_directory=True)
    (workdir / "docs").symlink_to(ROOT / "docs", target_is_directory=True)
    (tmp_path / "tmp").mkdir()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    base_env.pop("VIRTUAL_ENV", None)
    base_env.update(PYTHONUNBUFFERED="1", TMPDIR=str(tmp_path / "tmp"))

    with metro_serve(workdir, base_env) as (url, log):
        ran = run_blocks(tour, tmp_path / "tour", workdir, {**base_env, "METRO_URL": url})
        setup, cli, curl, client, library = ran
        key, out = setup.vars["METRO_API_KEY"], Path(setup.vars["OUT"])
        headers = {"Authorization": f"Bearer {key}"}
        assert re.fullmatch(r"metro_[A-Za-z0-9_-]{20,}", key), key
        assert setup.vars["METRO_URL"] == url
        assert out.is_dir() and out.is_relative_to(tmp_path / "tmp")

        def get(path: str) -> dict:
            r = httpx.get(f"{url}{path}", headers=headers, timeout=10)
            assert r.status_code == 200, r.text
            return r.json()

        # The CLI: a job id, its delivered model, the ONNX file and both predictions.
        job, model = cli.vars["JOB"], cli.vars["MODEL"]
        assert is_uuid(job) and is_uuid(model), cli.vars
        assert get(f"/v1/jobs/{job}")["state"] == "succeeded"
        assert get(f"/v1/models?job_id={job}")["items"][0]["id"] == model
        assert cli.out.splitlines().count(f"model {model}") == 1  # `metro result`'s last line
        manifest = get(f"/v1/models/{model}")["manifest"]
        assert _sha256(out / f"model-{model}.onnx") == manifest["onnx_sha256"]
        customers = len((ROOT / "docs/examples/customers.csv").read_text().splitlines()) - 1
        stdout_csv = cli.out[cli.out.index("margin,label") :]
        _check_predictions("\n".join(stdout_csv.splitlines()[: customers + 1]), customers)
        scores = (out / "scores.csv").read_text()
        _check_predictions(scores, customers)
        assert scores.splitlines()[1:] == stdout_csv.splitlines()[1 : customers + 1]
        assert "where chosen: Recall ≥ 0.8 " in cli.out  # the constrained job, watched

        # curl: the uploaded dataset, the job and its model, the weights and a prediction.
        dataset, job, model = curl.vars["DATASET"], curl.vars["JOB"], curl.vars["MODEL"]
        assert dataset.startswith("dataset://") and is_uuid(dataset.removeprefix("dataset://"))
        assert is_uuid(job) and is_uuid(model), curl.vars
        assert get(f"/v1/jobs/{job}")["dataset_uri"] == dataset
        weights = get(f"/v1/models/{model}")["manifest"]["weights_sha256"]
        assert _sha256(out / "model.safetensors") == weights
        answers = json_values(curl.out)
        assert [a.get("id") for a in answers[:1]] == [job]
        assert [a["job_id"] for a in answers[2:4]] == [job, job]  # result, then the model
        answer = answers[-1]
        assert answer["model_id"] == model and len(answer["margins"]) == 2
        assert all(label in (0, 1) for label in answer["labels"])

        # The generated client's snippet and the library's.
        first, *rows, last = client.out.strip().splitlines()
        assert re.fullmatch(r"succeeded trained lambda = -?\d+(\.\d+)?(e-?\d+)?", first), first
        assert len(rows) == 4 and all(re.fullmatch(r"\w+ +\w+ +F1 = \d\.\d{3}", r) for r in rows)
        assert {r.split()[0] for r in rows} == {"metro", "erm"}
        assert re.fullmatch(r"\[[^\]]+\] \[[01], [01]\]", last), last
        lam, score, train = (float(v) for v in library.out.split())
        assert -1 <= lam <= 1 and 0 < score <= 1 and 0 < train <= 1

        every = get("/v1/jobs?limit=50")["items"]
        assert len(every) == 4 and {j["state"] for j in every} == {"succeeded"}, every

        # docs/api.md's examples, with the tour's address and key.
        env = {**base_env, "METRO_URL": url, "METRO_API_KEY": key,
               "PATH": f"{venv / 'bin'}{os.pathsep}{base_env.get('PATH', '')}"}  # fmt: skip
        header, create_key, upload, pages, idempotent = run_blocks(
            api_guide, tmp_path / "api", workdir, env
        )
        assert header.vars["METRO_URL"] == url
        assert re.fullmatch(r"metro_[A-Za-z0-9_-]{20,}", create_key.out.strip())
        uploaded = json.loads(upload.out)
        assert uploaded["uri"] == f"dataset://{uploaded['id']}" and uploaded["n_rows"] == 400
        first_page, second_page = json_values(pages.out)
        assert pages.vars["NEXT"] == first_page["next_cursor"] != "null"
        ids = [j["id"] for j in first_page["items"] + second_page["items"]]
        assert len(ids) == len(set(ids)) == 4
        assert is_uuid(json.loads(idempotent.out)["id"])
    assert "Traceback" not in log.read_text(errors="replace")


def test_every_runnable_block_is_marked_and_the_address_is_make_runs() -> None:
    """The documents' own rules: the tour's blocks in reading order, the set-up block (`make
    run`, `make test`) left as it is and not run, and the default address the one `make run`
    listens on."""
    blocks = [b for b in fenced_blocks(README) if b.lang in RUNNABLE]
    assert [b.marker for b in blocks] == ["not in the tour"] + ["tour"] * 5
    assert blocks[0].text.splitlines()[0].startswith("make run ")
    assert blocks[0].text.splitlines()[1].startswith("make test ")
    makefile = (ROOT / "Makefile").read_text()
    host = re.search(r"^HOST \?= (\S+)$", makefile, re.MULTILINE)
    port = re.search(r"^PORT \?= (\d+)$", makefile, re.MULTILINE)
    assert host and port
    default = f"http://{host.group(1)}:{port.group(1)}"
    assert f"METRO_URL=${{METRO_URL:-{default}}}" in blocks[1].text
    assert f"METRO_URL=${{METRO_URL:-{default}}}" in runnable(API_DOC, "run")[0].text


def test_an_unmarked_block_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- tour -->\n```bash\necho a\n```\n\ntext\n\n```python\nprint(1)\n```\n")
    with pytest.raises(AssertionError, match=r"doc.md:8"):
        runnable(doc, "tour")
    doc.write_text(
        "<!-- tour -->\n```bash\nX=1\nexport Y=2\n```\n<!-- not in the tour -->\n```sh\n"
    )
    doc.write_text(doc.read_text() + "ls\n```\n")
    [block] = runnable(doc, "tour")
    assert block.assigned == ["X", "Y"] and block.text == "X=1\nexport Y=2"
