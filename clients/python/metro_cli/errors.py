"""Every failure of a command is one line on stderr (``error: ...``) and exit code 1, never a
traceback; a reader of the output that has gone away (``metro predict ... | head``) ends the
command quietly, as it ends Unix tools."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer

from metro_cli.output import err_console, flat


class CliError(Exception):
    """A failure to report as one line (``error: ...``) and exit code 1."""


class ApiError(CliError):
    """An answer of the API that is not a success, with its HTTP status and, for a problem
    answer, its type's last segment (``idempotency-key-reused``)."""

    def __init__(self, message: str, status: int, problem: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem


def fail(message: str, code: int = 1) -> NoReturn:
    """End the command: ``error: <message>`` on one line of stderr, and ``code``."""
    err_console.print(f"[bold red]error:[/] {flat(message, 2000)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(func: F) -> F:
    """Turn every failure of a command into one line on stderr and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            exit_on_broken_pipe()
        except CliError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted", code=130)
        except Exception as exc:  # a bug, or something unforeseen: still no traceback
            if os.environ.get("METRO_DEBUG"):
                raise
            fail(f"unexpected {type(exc).__name__}: {flat(str(exc))} (METRO_DEBUG=1 shows more)")

    return wrapper  # type: ignore[return-value]


# The exit status of a process that SIGPIPE ended, as a shell reports it (128 + 13).
BROKEN_PIPE_EXIT = 141


def exit_on_broken_pipe() -> NoReturn:
    """What Unix tools do when the reader of their output has gone (``metro predict ... | head
    -2``): stop quietly, with the status SIGPIPE gives them. Standard output now leads nowhere,
    so that Python's final flush of it cannot fail again (the Python documentation's recipe,
    under "Note on SIGPIPE"); the default SIGPIPE action is not restored, since it would also
    end the process when an HTTP connection breaks."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file behind stdout (a test's capture)
        pass
    finally:
        os.close(devnull)
    raise typer.Exit(BROKEN_PIPE_EXIT)
