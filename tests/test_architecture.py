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
        "import sys, metro, metro.data, metro.datasets, metro.model_selection, metro.baselines,"
        " metro.search.solver\n"
        # The package's names load on first use: touch each, so their modules are checked too.
        "[getattr(metro, name) for name in metro.__all__]\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == ""


# -- metro.datasets: one concept a module, each importing only the modules below it --------------
DATASETS = ROOT / "metro" / "datasets"
# What each module of metro.datasets may import of metro. The readers (_csv, _parquet, _npz) and
# the built-in sets know nothing of each other, the path check knows no reader, and only the
# loader, the entry points, brings them together; a new module must be placed here.
DATASETS_MAY_IMPORT: dict[str, set[str]] = {
    "_base": set(),
    "_labels": {"_base"},
    "_limits": {"_base"},
    "_paths": {"_base"},
    "_table": {"_base", "_limits"},
    "_csv": {"_base", "_limits", "_table"},
    "_parquet": {"_base", "_limits", "_table"},
    "_npz": {"_base", "_limits"},
    "_builtin": {"_base", "_limits"},
    "_loader": {
        "_base",
        "_builtin",
        "_csv",
        "_labels",
        "_limits",
        "_npz",
        "_parquet",
        "_paths",
        "_table",
    },
    "_multi": {
        "_base",
        "_builtin",
        "_csv",
        "_labels",
        "_limits",
        "_loader",
        "_npz",
        "_parquet",
        "_paths",
        "_table",
    },
    "__init__": {"_base", "_builtin", "_labels", "_loader", "_multi", "_paths", "_table"},
}


def _metro_imports(path: Path) -> set[str]:
    """The metro modules ``path`` imports, at the top or inside a function; a relative import
    is listed as written (``.x``), so that it cannot slip past the checks below."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "metro")
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("metro"):
            found.add(node.module)
    return found


def test_each_datasets_module_imports_only_the_modules_below_it():
    assert {p.stem for p in DATASETS.glob("*.py")} == set(DATASETS_MAY_IMPORT)
    offenders = {}
    for path in sorted(DATASETS.glob("*.py")):
        allowed = {f"metro.datasets.{name}" for name in DATASETS_MAY_IMPORT[path.stem]}
        wrong = _metro_imports(path) - allowed
        if wrong:
            offenders[path.name] = sorted(wrong)
    assert offenders == {}


def test_splits_know_only_the_public_datasets_api():
    assert _metro_imports(ROOT / "metro" / "model_selection.py") <= {"metro.datasets"}


def test_metro_data_only_re_exports():
    """metro/data.py, the data API's old home, holds imports and ``__all__``: no code of its
    own that could drift from the modules it re-exports."""
    path = ROOT / "metro" / "data.py"
    assert _metro_imports(path) == {"metro.datasets", "metro.model_selection"}
    body = ast.parse(path.read_text()).body
    kinds = [type(node).__name__ for node in body[1:]]  # after the docstring
    assert set(kinds) <= {"ImportFrom", "Assign"}, kinds
    assigned = [ast.unparse(t) for n in body if isinstance(n, ast.Assign) for t in n.targets]
    assert assigned == ["__all__"]


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


# -- the client CLI installs on its own ------------------------------------------------------------
CLIENT_CLI = ROOT / "clients" / "python" / "metro_cli"
# What a client-only install (`pip install ./clients/python`) does not have: this project's
# server packages and the server's heavy dependencies.
NOT_IN_THE_CLIENT = (*OUR_PACKAGES, "torch", "numpy", "pandas", "pyarrow", "sklearn", "scipy",
                     "fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "psycopg",
                     "celery", "kombu", "redis", "pydantic_settings")  # fmt: skip


def test_the_client_cli_imports_nothing_of_the_server():
    """metro_cli (the users' `metro` command, shipped with the generated client) imports none
    of metro, core, service, worker or cli, nor the server's dependencies: at the top or
    inside a function."""
    sources = sorted(CLIENT_CLI.rglob("*.py"))
    assert len(sources) > 5, sources
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_roots(path) & set(NOT_IN_THE_CLIENT))
        for path in sources
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_the_client_cli_loads_no_server_module():
    modules = ", ".join(f"metro_cli.{p.stem}" for p in sorted(CLIENT_CLI.glob("[!_]*.py")))
    code = (
        f"import sys, metro_client, metro_client.models, {modules}\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {NOT_IN_THE_CLIENT!r}]\n"
        "print(','.join(sorted(bad)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=CLIENT_CLI.parent,
    )  # fmt: skip
    assert out.stdout.strip() == ""


def test_only_the_server_command_line_builds_on_the_client():
    """cli adds the server's commands to metro_cli's `metro`; nothing else of the server
    imports the client's packages (the service is not a client of itself)."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_roots(path) & {"metro_cli", "metro_client"})
        for package in ("metro", "core", "service", "worker")
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert "metro_cli" in _imported_roots(ROOT / "cli" / "main.py")
