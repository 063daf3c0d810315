"""metro/ is a pure library: no web, database, queue or service imports, checked on the source
(so a lazy import inside a function is caught too) and on a fresh interpreter's modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = (
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "celery",
    "kombu",
    "redis",
    "pydantic",
    "pydantic_settings",
    "httpx",
    "requests",
    "service",
    "worker",
)


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_metro_sources_import_nothing_from_the_service_stack():
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_roots(path) & set(FORBIDDEN))
        for path in (ROOT / "metro").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_metro_loads_no_service_module():
    code = (
        "import sys, metro, metro.data, metro.baselines, metro.search.solver\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == ""


# -- job state: one writer -------------------------------------------------------------------------
STATE_TABLES = {"Job", "JobFit"}
STATE_WRITER = "core/store.py"  # the job store, the only module that changes a state


def _state_writes(path: Path, root: Path = ROOT) -> list[str]:
    """Places in ``path`` that write a job's or fit's state column: ``x.state = ...``, a
    ``state=`` keyword to a Job/JobFit constructor or to ``.values(...)``, and any UPDATE or
    INSERT statement on the Job/JobFit tables (whose values a ``**splat`` could hide)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "state" for t in targets):
                found.append(f"{where} assigns .state")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in STATE_TABLES | {"values"} and any(k.arg == "state" for k in node.keywords):
                found.append(f"{where} passes state= to {name}")
            if name in {"update", "insert", "insert_ignore"} and any(
                isinstance(a, ast.Name) and a.id in STATE_TABLES for a in node.args
            ):
                found.append(f"{where} runs {name} on a job table")
    return found


def _product_sources() -> list[Path]:
    return [
        path
        for package in ("core", "service", "worker", "cli")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.relative_to(ROOT).as_posix() != STATE_WRITER
    ]


def test_only_the_job_store_writes_a_job_or_fit_state():
    writes = [w for path in _product_sources() for w in _state_writes(path)]
    assert writes == []


def test_the_state_write_scan_sees_each_kind_of_write(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "job.state = 'failed'\n"
        "update(Job).values(progress=1)\n"
        "select(Job).values(state='queued')\n"
        "JobFit(key='k', state='done')\n"
        "insert_ignore(session, JobFit, rows, keys)\n"
    )
    writes = sorted(_state_writes(sample, tmp_path), key=lambda w: int(w.split(":")[1][:1]))
    assert [w.split(" ", 1)[1] for w in writes] == [
        "assigns .state",
        "runs update on a job table",
        "passes state= to values",
        "passes state= to JobFit",
        "runs insert_ignore on a job table",
    ]


# -- dependencies point one way: metro <- core <- service | worker <- cli -------------------------
OUR_PACKAGES = ("metro", "core", "service", "worker", "cli")
MAY_IMPORT = {
    "metro": {"metro"},
    "core": {"core", "metro"},
    "service": {"service", "core", "metro"},  # the HTTP API publishes to workers by task name
    "worker": {"worker", "core", "metro"},
    "cli": set(OUR_PACKAGES),  # the command line wires everything
}


def test_dependencies_point_one_way():
    offenders = {}
    for package, allowed in MAY_IMPORT.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            wrong = (_imported_roots(path) & set(OUR_PACKAGES)) - allowed
            if wrong:
                offenders[str(path.relative_to(ROOT))] = sorted(wrong)
    assert offenders == {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_outside_type_checking(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, at the top or inside a function (a
    lazy import closes a circle as surely), but not under ``if TYPE_CHECKING:``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found.update(name for name in names if name in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found


def test_no_import_circle_between_modules_of_the_service():
    paths = {
        _module_name(p): p
        for package in ("core", "service", "worker", "cli")
        for p in (ROOT / package).rglob("*.py")
    }
    graph = {m: _imports_outside_type_checking(p, set(paths)) - {m} for m, p in paths.items()}
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert circles == []
