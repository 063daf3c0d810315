"""The options every command shares: where the server is, and the API key."""

from __future__ import annotations

from typing import Annotated

import typer

DEFAULT_URL = "http://127.0.0.1:8000"

UrlOption = Annotated[
    str,
    typer.Option(
        "--url", envvar="METRO_URL", help="Base URL of the METRO API.", rich_help_panel="Server"
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="METRO_API_KEY",
        help="API key (an operator creates one with `metro admin create-key`).",
        show_default=False,
        rich_help_panel="Server",
    ),
]
MODEL_HELP = (
    "The model id, or a job id for the job's delivered model (the one `metro result` names)."
)
