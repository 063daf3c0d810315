"""metro/ is a pure library: no web, database, queue or service imports, checked on the source
(so a lazy import inside a function is caught too) and on a fresh interpreter's modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = (
    "fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "psycopg", "celery", "kombu",
    "redis", "pydantic", "pydantic_settings", "httpx", "requests", "service", "worker",
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
