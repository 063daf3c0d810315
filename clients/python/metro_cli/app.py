"""The ``metro`` command: this package's commands, and those of every package that plugs into
the ``metro.cli`` entry-point group (the server's package adds ``serve``, ``worker``,
``migrate``, ``admin`` and ``demo`` so). An entry point of the group names a callable that
takes the :class:`typer.Typer` app and registers its commands on it.

A wrong command line (a missing option, a value that does not parse) is one line on stderr,
``error: ...``, and exit code 2, like every other error of the CLI, rather than click's usage
box.
"""

from __future__ import annotations

import inspect
import sys
from importlib.metadata import EntryPoint
from typing import Any, TypedDict

import typer
from rich.markup import escape

from metro_cli.compare import compare
from metro_cli.download import download
from metro_cli.listing import datasets, delete, jobs, models
from metro_cli.output import err_console, flat
from metro_cli.predict import predict
from metro_cli.result import result
from metro_cli.submit import submit
from metro_cli.upload import upload
from metro_cli.watch import cancel, watch

PLUGINS = "metro.cli"  # the entry-point group of packages that add commands
COMMANDS = (
    upload,
    submit,
    watch,
    cancel,
    result,
    compare,
    download,
    predict,
    jobs,
    datasets,
    models,
    delete,
)


class CommandTexts(TypedDict):
    short_help: str | None
    help: str | None


def texts(command: Any) -> CommandTexts:
    """A command's help texts from its docstring, each paragraph on one line (typer kept the
    docstring's line breaks, which cut sentences: "... or is" / "cancelled."): the first
    paragraph is its line in `metro --help`, the whole its own --help, which the terminal
    wraps."""
    doc = inspect.getdoc(command) or ""
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n") if p.strip()]
    return {
        "short_help": paragraphs[0] if paragraphs else None,
        "help": "\n\n".join(paragraphs) or None,
    }


def create_app(*, plugins: bool = True) -> typer.Typer:
    """The ``metro`` app: the commands that use a server and, with ``plugins``, those of the
    installed packages that add theirs."""
    app = typer.Typer(
        name="metro",
        help="Train classifiers that optimize the metric you report.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.callback(invoke_without_command=True)(_version_option)
    for command in COMMANDS:
        app.command(command.__name__, rich_help_panel="Using a server", **texts(command))(command)
    if plugins:
        load_plugins(app)
    return app


def _print_version(given: bool) -> None:
    if given:
        from importlib.metadata import PackageNotFoundError, version

        from metro_cli.api import client_api_version

        try:
            mine = version("metro-client")
        except PackageNotFoundError:
            mine = "unknown"
        typer.echo(f"metro client {mine}, for the METRO API {client_api_version()}")
        raise typer.Exit()


def _version_option(
    ctx: typer.Context,
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print this client's version and the API version it was made for, and exit.",
    ),
) -> None:
    """Train classifiers that optimize the metric you report."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


def plugin_entry_points() -> list[EntryPoint]:
    """The ``metro.cli`` entry points of every distribution on ``sys.path``, each once.

    Not ``importlib.metadata.entry_points()``, which reads only the first distribution of each
    name: run from a source checkout (the current directory on ``sys.path``), a stale
    ``*.egg-info`` left there by an old build would hide the installed package's entry points.
    """
    from importlib.metadata import distributions

    found: dict[tuple[str, str], EntryPoint] = {}
    for dist in distributions():
        for entry in dist.entry_points:
            if entry.group == PLUGINS:
                found.setdefault((entry.name, entry.value), entry)
    return list(found.values())


def load_plugins(app: typer.Typer) -> None:
    """Let each package of the ``metro.cli`` entry-point group register its commands; one that
    cannot be loaded is named in a warning, and the others still work."""
    for entry in plugin_entry_points():
        try:
            register = entry.load()
            register(app)
        except Exception as exc:
            err_console.print(
                f"warning: the commands of {entry.value} are not available: "
                f"{type(exc).__name__}: {flat(str(exc), 300)}",
                style="yellow", highlight=False, soft_wrap=True, markup=False,
            )  # fmt: skip


# The server package's commands (its metro.cli entry point): named where this package is
# installed alone, rather than called unknown.
SERVER_COMMANDS = ("serve", "worker", "migrate", "admin", "demo")


def _usage_error_line(exc: Exception) -> str:
    """Click's usage error as one line: what is wrong, and where the commands or options are
    listed."""
    message = " ".join(exc.format_message().split()).rstrip(".")  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    unknown = message.removeprefix("No such command ").strip("'\"")
    if message.startswith("No such command") and unknown in SERVER_COMMANDS:
        return (
            f"'{unknown}' is a command of the METRO server, which is not installed here (only "
            "its client is): install the project itself for the server's commands"
        )
    listed = "commands" if message.startswith("No such command") else "options"
    hint = f" (`{ctx.command_path} --help` lists the {listed})" if ctx is not None else ""
    return f"{message[:1].lower()}{message[1:]}{hint}"


def run(app: typer.Typer, args: list[str] | None = None) -> int:
    """Run ``app`` as the ``metro`` command; its exit code."""
    try:
        code = app(args=args, prog_name="metro", standalone_mode=False)
    except typer.Abort:
        err_console.print("[bold red]error:[/] aborted")
        return 1
    except Exception as exc:
        # click's ClickException, duck-typed: typer may ship its own copy of click.
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help already
            err_console.print(
                f"[bold red]error:[/] {escape(_usage_error_line(exc))}",
                highlight=False, soft_wrap=True,
            )  # fmt: skip
        return int(exc.exit_code)
    return code if isinstance(code, int) else 0


def main(args: list[str] | None = None) -> int:
    """The ``metro`` console script."""
    return run(create_app(), args)


if __name__ == "__main__":  # pragma: no cover - `python -m metro_cli.app`
    sys.exit(main())
