"""Where workers put files: under ``METRO_ARTIFACTS_URI`` (a local directory or any fsspec URL,
``s3://bucket/prefix`` for workers on several machines).

``jobs/<job id>/model/<attempt>/``  the trained model (metro.serialization), per attempt
``jobs/<job id>/fits/<key>.<writer>.safetensors``  a fitted stack of the search (resume,
shared grids), one file per writer; the fit's row names the one recorded
``jobs/<job id>/fits/<key>.ckpt.safetensors``  the last trainer checkpoint of a fit in progress
"""

from __future__ import annotations

import logging
import uuid

from core.artifacts import job_dir, resolve_artifact_uri
from core.artifacts import remove_tree as remove_tree  # the API's deletes use it too
from metro.serialization import is_url, local_path, write_atomically

logger = logging.getLogger(__name__)


def models_dir(job_id: uuid.UUID) -> str:
    """The folder of every model a job's attempts saved (:func:`model_path`)."""
    return f"{job_dir(job_id)}/model"


def model_path(job_id: uuid.UUID, attempt: int) -> str:
    """Where an attempt of a job saves its model: its own folder, so that an attempt that lost
    the job (stalled past its lease while another took over) never writes over the files the
    winner's model row names; the row records the path."""
    return f"{models_dir(job_id)}/{attempt}"


def remove_other_attempts(artifacts_root: str, job_id: uuid.UUID, kept: str) -> None:
    """Remove every attempt's model folder of a job but ``kept`` (the one its model row names):
    an attempt killed while it wrote its model cannot remove its own half-written files, and
    they stayed as long as the job did."""
    import fsspec

    root = resolve_artifact_uri(artifacts_root, models_dir(job_id))
    try:
        fs, path = fsspec.core.url_to_fs(root)
        fs.invalidate_cache()
        names = [str(entry).rstrip("/").rsplit("/", 1)[-1] for entry in fs.ls(path, detail=False)]
    except FileNotFoundError:
        return
    except Exception:
        logger.warning("could not list %s", models_dir(job_id), exc_info=True)
        return
    for name in names:
        rel = f"{models_dir(job_id)}/{name}"
        if rel != kept:
            remove_tree(artifacts_root, rel)


def fits_dir(job_id: uuid.UUID | str) -> str:
    """Where a job's recorded fits and checkpoints live (removed once the job has finished)."""
    return f"{job_dir(job_id)}/fits"


def fit_path(job_id: uuid.UUID, key: str, suffix: str) -> str:
    return f"{fits_dir(job_id)}/{key.replace('/', '_')}{suffix}"


def fit_weights_path(job_id: uuid.UUID, key: str) -> str:
    """Where one writer stores a fit's weights: a name of its own, as an attempt's model has
    (:func:`model_path`). Two workers can fit the same shard (one stalled past its lease while
    another took it over); at one shared path the second to finish wrote over the bytes the
    first had recorded, and where the two fits differed in their last bits (another machine, a
    GPU) every later load of the fit failed its digest and the job failed with it."""
    return fit_path(job_id, key, f".{uuid.uuid4().hex[:12]}.safetensors")


def full_uri(root: str, rel: str) -> str:
    return resolve_artifact_uri(root, rel)


def put_bytes(root: str, rel: str, data: bytes) -> None:
    uri = full_uri(root, rel)
    if is_url(uri):
        import fsspec

        fs, path = fsspec.core.url_to_fs(uri)
        fs.pipe_file(path, data)
        return
    write_atomically(local_path(uri), data)


def get_bytes(root: str, rel: str) -> bytes | None:
    """The file's bytes, or None if it does not exist."""
    uri = full_uri(root, rel)
    try:
        if is_url(uri):
            import fsspec

            fs, path = fsspec.core.url_to_fs(uri)
            with fs.open(path, "rb") as fh:
                return bytes(fh.read())
        return local_path(uri).read_bytes()
    except FileNotFoundError:
        return None
