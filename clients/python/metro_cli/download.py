"""``metro download``: a model's file, its SHA-256 checked against the model's manifest."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Annotated

import typer

from metro_cli.api import Api
from metro_cli.errors import CliError, one_line_errors
from metro_cli.options import DEFAULT_URL, MODEL_HELP, KeyOption, UrlOption
from metro_cli.output import say

FORMATS = ("safetensors", "onnx")


def _format(given: str | None, output: str | None) -> str:
    """The format asked for, or the one the output file's suffix names (``-o m.onnx`` was
    written with the safetensors bytes)."""
    if given is not None and given not in FORMATS:
        raise CliError(f"--format must be safetensors or onnx, not {given!r}")
    named = Path(output).suffix.lstrip(".").lower() if output else ""
    if named not in FORMATS or (output is not None and Path(output).is_dir()):
        return given or "safetensors"
    if given is not None and given != named:
        raise CliError(f"--output {output} names a .{named} file, but --format is {given}")
    return named


@one_line_errors
def download(
    model: Annotated[str, typer.Argument(help=MODEL_HELP, metavar="MODEL_OR_JOB")],
    format_: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="safetensors (weights) or onnx; default: the --output file's suffix says "
            "which, else safetensors.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write it: a file, or a directory (default: model-<id>.<format>).",
        ),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Download a model file (its SHA-256 checked against the manifest)."""
    from metro_client.api.models import download_model

    format_ = _format(format_, output)
    # Path("models/") drops the slash that says a directory is meant: an absent one was
    # written as a file of that name.
    if output is not None and output.endswith(("/", os.sep)) and not Path(output).is_dir():
        raise CliError(f"cannot write into {output}: no such directory")
    api = Api(url, api_key)
    info = api.model(model)
    model_id = info.id
    manifest = info.manifest.to_dict()
    expected = manifest.get("weights_sha256" if format_ == "safetensors" else "onnx_sha256")
    file = api.call(download_model, model_id, format_=format_)
    data = file.payload.read()
    digest = hashlib.sha256(data).hexdigest()
    if expected and digest != expected:
        raise CliError(f"the downloaded {format_} file's sha256 {digest} is not the manifest's")
    target = Path(output) if output else Path(f"model-{model_id}.{format_}")
    if target.is_dir():
        target = target / f"model-{model_id}.{format_}"
    try:
        target.write_bytes(data)
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from None
    say(f"wrote {target} ({len(data)} bytes, sha256 {digest})")
