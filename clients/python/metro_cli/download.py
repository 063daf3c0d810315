"""``metro download``: a model's file, its SHA-256 checked against the model's manifest."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from metro_cli.api import Api
from metro_cli.errors import CliError, one_line_errors
from metro_cli.options import DEFAULT_URL, MODEL_HELP, KeyOption, UrlOption
from metro_cli.output import say

FORMATS = ("safetensors", "onnx")
# A folder as the library saves a model (metro.serialization's WEIGHTS_FILE and MANIFEST_FILE),
# which ``metro.load_classifier(folder)`` reads: the weights alone were no model for it.
FOLDER = "folder"
FOLDER_FILES = ("model.safetensors", "manifest.json")


def _format(given: str | None, output: str | None) -> str:
    """The format asked for, or the one the output file's suffix names (``-o m.onnx`` was
    written with the safetensors bytes)."""
    named = Path(output).suffix.lstrip(".").lower() if output else ""
    if given == FOLDER:
        if named in FORMATS:
            raise CliError(f"--output {output} names a .{named} file, but --format is folder")
        return FOLDER
    if given is not None and given not in FORMATS:
        raise CliError(f"--format must be safetensors, onnx or folder, not {given!r}")
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
            help="safetensors (weights), onnx, or folder: model.safetensors and manifest.json "
            "in a folder, as metro.load_classifier(folder) reads a model; default: the --output "
            "file's suffix says which, else safetensors.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write it: a file, or a directory to write model-<id>.<format> into "
            "(the default: the current one); with --format folder, the folder to create (or an "
            "empty one), or a directory with files to create model-<id>/ in.",
        ),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    api_key: KeyOption = None,
) -> None:
    """Download a model file (its SHA-256 checked against the manifest)."""
    from metro_client.api.models import download_model

    format_ = _format(format_, output)
    # Path("models/") drops the slash that says a directory is meant: an absent one was
    # written as a file of that name (a folder is a directory either way).
    folder_path = output is not None and output.endswith(("/", os.sep))
    if format_ != FOLDER and folder_path and not Path(str(output)).is_dir():
        raise CliError(f"cannot write into {output}: no such directory")
    api = Api(url, api_key)
    info = api.model(model)
    model_id = info.id
    manifest = info.manifest.to_dict()
    if format_ == FOLDER:
        _download_folder(api, model_id, manifest, output)
        return
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


def _download_folder(api: Api, model_id: Any, manifest: dict[str, Any], output: str | None) -> None:
    """The weights (checked against the manifest's digest) and the manifest, as one folder:
    ``--output`` (created, or an empty one; in a directory holding files, ``model-<id>`` in it;
    default ``model-<id>``), written only once both are in hand."""
    from metro_client.api.models import download_model

    data = api.call(download_model, model_id, format_="safetensors").payload.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest.get("weights_sha256"):
        raise CliError(f"the downloaded weights' sha256 {digest} is not the manifest's")
    folder = Path(output) if output else Path(f"model-{model_id}")
    if folder.is_dir() and any(folder.iterdir()):  # a directory of files: the model goes in it
        folder = folder / f"model-{model_id}"
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise CliError(
            f"cannot write the model into {folder}: it exists and is not an empty folder"
        )
    weights_name, manifest_name = FOLDER_FILES
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / weights_name).write_bytes(data)
        (folder / manifest_name).write_text(json.dumps(manifest, indent=2) + "\n")
    except OSError as exc:
        raise CliError(f"cannot write {folder}: {exc.strerror or exc}") from None
    say(
        f"wrote {folder}/ ({weights_name}, {len(data)} bytes, sha256 {digest}; {manifest_name}): "
        "metro.load_classifier reads it"
    )
