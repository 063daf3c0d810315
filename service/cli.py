"""The ``metro`` command: run the service, manage it, and try the library.

Heavy imports happen inside each command so that ``metro --help`` is instant and a command only
needs the parts of the stack it uses.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    name="metro",
    help="Train binary classifiers that optimize the metric you report.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
admin_app = typer.Typer(help="Administration: tenants and API keys.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")

console = Console()
err_console = Console(stderr=True)


def _fail(message: str, code: int = 1) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    migrate: Annotated[bool, typer.Option(help="Upgrade the database schema first.")] = True,
) -> None:
    """Run the HTTP API (embedded defaults: SQLite under ./var, no external services)."""
    import uvicorn

    from service.config import get_settings
    from service.db.migrate import upgrade

    settings = get_settings()
    if migrate:
        upgrade(settings.database_url)
    console.print(
        f"METRO API on http://{host}:{port}  (docs at /docs, database {settings.database_url})"
    )
    uvicorn.run("service.main:app", host=host, port=port, log_level="info")


@app.command("migrate")
def migrate_cmd() -> None:
    """Upgrade the database schema to the latest revision."""
    from service.config import get_settings
    from service.db.migrate import upgrade

    settings = get_settings()
    upgrade(settings.database_url)
    console.print("database is at the latest revision")


@admin_app.command("create-key")
def create_key(
    tenant: Annotated[str, typer.Option(help="Tenant name (created if missing).")],
) -> None:
    """Create an API key for a tenant and print it (it is shown only once)."""
    from service.admin import create_api_key
    from service.config import get_settings
    from service.db.session import make_engine, make_sessionmaker

    settings = get_settings()
    factory = make_sessionmaker(make_engine(settings.database_url))
    with factory() as session:
        key = create_api_key(session, tenant)
        session.commit()
    typer.echo(key)


@app.command()
def demo(
    dataset: Annotated[str, typer.Option(help="Dataset URI.")] = "builtin://breast_cancer",
    metric: Annotated[str, typer.Option(help="Metric preset.")] = "f1",
    repeats: Annotated[int, typer.Option(help="Fresh splits to average over.")] = 3,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Fit METRO and the baselines locally (no service) and print test metrics side by side."""
    from metro import SearchConfig, TrainingConfig, get_metric, get_surrogate
    from metro.baselines import BASELINES
    from metro.data import load_dataset
    from metro.experiment import run_experiment
    from metro.models import ModelSpec

    try:
        ds = load_dataset(dataset)
        result = run_experiment(
            ds, metric=get_metric(metric), surrogate=get_surrogate("logistic"),
            model=ModelSpec(), search=SearchConfig(), training=TrainingConfig(),
            baselines=BASELINES, repeats=repeats, seed=seed,
        )
    except ValueError as exc:
        _fail(str(exc))
        return
    table = Table(title=f"{metric} on {dataset}: test split, {repeats} repeat(s)")
    table.add_column("method")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    for method, (mean, std, _) in result.summary("test").items():
        table.add_row(method, f"{mean:.4f}", f"{std:.4f}")
    console.print(table)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())
