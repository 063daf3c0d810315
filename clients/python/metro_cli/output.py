"""Where the commands write, and how they show values: answers on stdout (``$(metro submit
...)`` captures just the id), notes on stderr, numbers and absent values as the tables print
them."""

from __future__ import annotations

from typing import Any

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def say(text: str) -> None:
    """A line on stdout, as it is (no markup, no highlighting, no wrapping)."""
    console.print(text, highlight=False, soft_wrap=True, markup=False)


def note(text: str, style: str | None = None) -> None:
    """A line on stderr: what happened besides the answer (an upload, a warning)."""
    err_console.print(text, style=style, highlight=False, soft_wrap=True, markup=False)


def flat(text: str, limit: int = 500) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_unset(value: Any) -> bool:
    """Whether a field of a generated model was absent from the answer."""
    from metro_client.types import Unset

    return isinstance(value, Unset)


def optional(value: Any) -> Any:
    """A field of an answer, None when it is null or absent (an older server's answer)."""
    return None if value is None or is_unset(value) else value


def fmt(value: float | None, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)
