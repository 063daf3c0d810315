"""The one settings object of the service, read from ``METRO_*`` environment variables.

Every component receives a :class:`Settings` instance (the app keeps it on ``app.state``) rather
than reading the environment itself, so tests build the app with explicit settings and nothing
depends on the process environment after start-up.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from core.logs import LogFormat, LogLevel

# The embedded default keeps all state under ./var, so a plain `metro serve` works without any
# external service; production sets METRO_DATABASE_URL / METRO_BROKER_URL.
_VAR_DIR = Path("var")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="METRO_", env_file=".env", extra="ignore")

    database_url: str = f"sqlite:///{_VAR_DIR / 'metro.db'}"
    # None means "embedded": a SQLAlchemy-backed kombu transport on a SQLite file next to the
    # database (see ``effective_broker_url``), so that no broker process is needed.
    broker_url: str | None = None
    artifacts_uri: str = str(_VAR_DIR / "artifacts")
    # Local directory of uploads: where they are received (staged) and, unless the store below
    # is elsewhere, kept.
    upload_dir: Path = _VAR_DIR / "uploads"
    # Where uploaded datasets are kept: a directory or an fsspec URL. Unset: under the artifact
    # store (<artifacts_uri>/uploads) when that is an object store, so that the API and the
    # workers share no disk; else upload_dir. See core.datasets.storage.
    uploads_uri: str | None = None
    # Directories whose files a job may name with file:// URIs. Empty means file:// is refused.
    # NoDecode: the environment variable is a comma-separated list, not JSON. "{tenant}" in a
    # root stands for the submitting tenant's id: /data/tenants/{tenant} is one folder each.
    # The service's own upload and artifact stores are never readable this way, even inside a
    # root (core.datasets.locations).
    data_roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    # Object-store prefixes (s3://bucket/prefix/) whose objects a job may name as its dataset,
    # read with the workers' own credentials; "{tenant}" as above. Empty means s3:// dataset
    # URIs are refused: a tenant reads only what an operator allowed.
    data_uri_prefixes: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Limits. Each bounds the work or memory one request can cause.
    max_upload_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    max_request_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    # Request line and header fields together; past it a 400 problem (service.api.middleware).
    max_request_header_bytes: int = Field(default=16 * 1024, ge=1024)
    max_predict_rows: int = Field(default=10_000, ge=1)
    default_page_size: int = Field(default=50, ge=1)
    max_page_size: int = Field(default=200, ge=1)
    max_fetch_bytes: int = Field(default=256 * 1024 * 1024, ge=1)  # https:// datasets, fetched
    fetch_timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    max_fetch_redirects: int = Field(default=5, ge=0)
    model_cache_size: int = Field(default=16, ge=1)  # loaded models kept in memory per process
    # How long a model's row is trusted for predictions without asking the database again: a
    # model deleted through another API process keeps answering there this long at most (0:
    # every prediction asks the database).
    model_ref_cache_seconds: float = Field(default=5.0, ge=0, allow_inf_nan=False)
    readiness_timeout_seconds: float = Field(default=2.0, gt=0, allow_inf_nan=False)
    # A bearer token /metrics then asks for (Prometheus: `authorization: {credentials: ...}`);
    # unset, /metrics answers anyone, whose counts are every tenant's together.
    metrics_token: SecretStr | None = None

    # Concurrency of one API process (see docs/operations.md, "Concurrency"). Sync routes run in
    # a pool of ``api_threads``; each holds at most one database connection, and only while it
    # runs, so any pool size works (no deadlock), the pool merely bounds database parallelism.
    api_threads: int = Field(default=40, ge=1)
    # 15 kept, none beyond: an overflow connection is closed whenever it is given back while the
    # pool is full, so under steady load a pool of 5 + 10 opened and closed connections (a
    # Postgres backend each) all the time. Connections are opened only as they are first needed.
    database_pool_size: int = Field(default=15, ge=1)
    database_max_overflow: int = Field(default=0, ge=0)
    database_pool_timeout_seconds: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # How long a verified API key is trusted without asking the database again: a revoked key
    # keeps working this long at most (0: every request asks the database).
    api_key_cache_seconds: float = Field(default=5.0, ge=0, allow_inf_nan=False)
    api_key_cache_size: int = Field(default=10_000, ge=0)
    # Guessing keys: after this many unknown or revoked keys from one client address within
    # auth_failure_window_seconds, that address's requests with a key are refused (429) until
    # the window ends, without checking the key (0: no limit). Counted per API process, for at
    # most auth_failure_max_addresses addresses (the oldest forgotten first).
    auth_failure_limit: int = Field(default=20, ge=0)
    auth_failure_window_seconds: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    auth_failure_max_addresses: int = Field(default=10_000, ge=1)
    # SIGTERM: requests in flight get this long to finish, then the server stops regardless.
    shutdown_timeout_seconds: int = Field(default=10, ge=0)  # whole seconds: uvicorn takes an int
    # The Retry-After of the 503 answered while the database is unreachable.
    database_retry_after_seconds: int = Field(default=5, ge=1)

    # Workers (see worker/). A job's lease is renewed every heartbeat; a job whose lease has
    # expired (its worker died) is re-queued by the reconciler, up to the job's max_attempts.
    lease_seconds: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    heartbeat_seconds: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # How often each worker runs the reconciler (worker.reconcile.PeriodicReconciler).
    reconcile_seconds: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    # A queued job with no message in the broker for this long gets a new one.
    requeue_after_seconds: float = Field(default=60.0, ge=0, allow_inf_nan=False)
    # Redelivery of an unacknowledged message (a worker that vanished) after this long: longer
    # than the longest job, since the reconciler, not the broker, recovers lost jobs.
    visibility_timeout_seconds: float = Field(default=7 * 24 * 3600.0, gt=0, allow_inf_nan=False)
    # Lambdas per grid shard: the unit of resume and of sharing a grid between workers. Fixed
    # per job at its first claim, so every worker splits the grid the same way.
    grid_shard_size: int = Field(default=8, ge=1)
    # The same for jobs that ask for CUDA: a GPU trains a whole grid (all its folds, too) as one
    # stack faster than it trains shards in turn, and a second GPU worker to share with is rare,
    # so by default such a grid is never split (1,024 is past metro's MAX_N_LAMBDAS, 1,001; a
    # test keeps it so without this module importing the library).
    gpu_grid_shard_size: int = Field(default=1024, ge=1)
    # PyTorch's CPU threads in one worker process (intra-op). Unset: PyTorch's default, one per
    # core, right for one worker per machine. Workers that share a machine must share its cores
    # (cores / workers each): two workers of 2 threads on 2 cores each ran a small job 7 times
    # slower than with 1 thread each (docs/operations.md, "Scaling workers").
    worker_torch_threads: int | None = Field(default=None, ge=1)
    # Where a worker keeps what torch.compile and Triton build (kernels, and Triton's autotuning
    # results for metro.grouped_conv), so that a restarted worker loads them instead of building
    # them again: tens of seconds at a cnn3 job's first step. None leaves PyTorch's and Triton's
    # own places (/tmp/torchinductor_<user>, ~/.triton), which a container loses at restart. An
    # operator's TORCHINDUCTOR_CACHE_DIR or TRITON_CACHE_DIR wins over it.
    compile_cache_dir: Path | None = _VAR_DIR / "compile-cache"
    # Minimum seconds between two saved trainer checkpoints of one fit (0 disables them).
    checkpoint_seconds: float = Field(default=60.0, ge=0, allow_inf_nan=False)
    # Minimum seconds between two writes of a running job's progress from its fits' optimizer
    # steps (0: every step). The progress moves within each fit, not only between fits.
    progress_seconds: float = Field(default=0.5, ge=0, allow_inf_nan=False)
    # Prefix of queue names and broker keys, to share one Redis between deployments (or tests).
    queue_prefix: str = ""
    # What one dataset may hold, checked at upload and again when a worker loads it: rows,
    # columns, and bytes once decompressed (a gzip CSV, a compressed Parquet or NPZ), so that a
    # small file that expands to gigabytes is refused after reading at most this much.
    max_dataset_rows: int = Field(default=5_000_000, ge=1)
    max_dataset_columns: int = Field(default=10_000, ge=1)
    max_decompressed_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    # Bytes of uploads one tenant may keep (identical uploads count once; 0: no limit).
    max_storage_bytes_per_tenant: int = Field(default=10 * 1024**3, ge=0)
    # Jobs a tenant may have queued, running or cancelling at once (0: no limit). One tenant
    # cannot fill the queue for everybody; a submission past it is a 429.
    max_active_jobs_per_tenant: int = Field(default=100, ge=0)
    # What one job may ask for, beyond each parameter's own bounds, which the metro library sets
    # (docs/operations.md, "Limits on a job"). A job past one is a 422 at submission, or ends
    # failed once a worker has loaded data whose size was not known then (s3://, https://,
    # file://). The normalized spec's size in bytes, as stored and listed; the parameters of one
    # model; and the job's work, parameters x rows x passes (epochs or max_iter) x models trained
    # over all repeats (core.job_spec.JobWork). The defaults take the paper's cnn3 (93k
    # parameters) on 10,000 images, 21 lambdas by 5-fold CV, 100 epochs, 4 baselines and 10
    # repeats (1.4e14), and a 40M-parameter model, with room to spare; 1e15 is about five hours
    # of one H100 for a cnn3 (docs/operations.md).
    max_job_spec_bytes: int = Field(default=64 * 1024, ge=1024)
    max_model_parameters: int = Field(default=50_000_000, ge=1)
    max_job_work: float = Field(default=1e15, gt=0, allow_inf_nan=False)

    # Every process's log lines (core.logs): the lowest level written, and text for a terminal
    # or json (one object a line) for a log collector.
    log_level: LogLevel = LogLevel.INFO
    log_format: LogFormat = LogFormat.TEXT

    # RFC 9457 "type" URIs are this base plus a short slug (validation, not-found, ...).
    problem_type_base: str = "https://metro.example/problems/"

    @field_validator("data_roots", "data_uri_prefixes", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("compile_cache_dir", "uploads_uri", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        """``METRO_COMPILE_CACHE_DIR=`` (empty) means none, not the current directory; an
        empty ``METRO_UPLOADS_URI`` is unset (the default place)."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator(
        "database_url", "artifacts_uri", "upload_dir", "problem_type_base", mode="before"
    )
    @classmethod
    def _not_empty(cls, value: object) -> object:
        """``METRO_ARTIFACTS_URI=`` (a compose file's ``${VAR:-}``) put models under /jobs at
        the file system's root, ``METRO_UPLOAD_DIR=`` uploads in the current directory: a
        setting given empty is refused, not read as a path; unset it for its default."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty; unset the variable for its default")
        return value

    @field_validator("artifacts_uri", "uploads_uri")
    @classmethod
    def _known_protocol(cls, value: str | None) -> str | None:
        """A store's URL names a protocol fsspec knows (``nosuch://bucket`` started, and every
        download and upload then answered 500)."""
        if value is None or "://" not in value:
            return value
        import fsspec

        protocol = value.split("://", 1)[0]
        try:
            fsspec.get_filesystem_class(protocol)
        except (ValueError, ImportError) as exc:
            raise ValueError(
                f"{value!r}: its protocol {protocol!r} cannot be used ({exc})"
            ) from None
        return value

    @field_validator("upload_dir", "compile_cache_dir")
    @classmethod
    def _under_a_directory(cls, value: Path | None) -> Path | None:
        """A directory to create must not lie under a file (uploads then answered 500, and a
        worker's cache was silently not kept)."""
        if value is None:
            return value
        for parent in (value, *value.parents):
            if parent.exists():
                if not parent.is_dir():
                    raise ValueError(f"{str(value)!r} lies under {str(parent)!r}, which is a file")
                break
        return value

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _any_case(cls, value: object, info: ValidationInfo) -> object:
        """``METRO_LOG_LEVEL=info`` as ``INFO``, ``METRO_LOG_FORMAT=JSON`` as ``json``."""
        if not isinstance(value, str):
            return value
        value = value.strip()
        return value.upper() if info.field_name == "log_level" else value.lower()

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.heartbeat_seconds >= self.lease_seconds:
            raise ValueError(
                f"METRO_HEARTBEAT_SECONDS ({self.heartbeat_seconds:g}) must be below "
                f"METRO_LEASE_SECONDS ({self.lease_seconds:g}): a lease renewed less often than "
                "it expires is lost by every worker"
            )
        if self.default_page_size > self.max_page_size:
            raise ValueError(
                f"METRO_DEFAULT_PAGE_SIZE ({self.default_page_size}) must be at most "
                f"METRO_MAX_PAGE_SIZE ({self.max_page_size})"
            )
        return self

    @property
    def effective_broker_url(self) -> str:
        """``broker_url``, or the embedded default: kombu's SQLAlchemy transport on a SQLite
        file beside the SQLite database (``var/broker.db``), which needs no broker process."""
        if self.broker_url:
            return self.broker_url
        directory = _VAR_DIR
        if self.database_url.startswith("sqlite"):
            from sqlalchemy import make_url

            database = make_url(self.database_url).database
            if database and database != ":memory:" and not database.startswith("file:"):
                directory = Path(database).parent
        return f"sqla+sqlite:///{directory / 'broker.db'}"


# METRO_* variables that are not settings of the service: the `metro` client's.
CLIENT_VARIABLES = frozenset({"METRO_URL", "METRO_API_KEY", "METRO_DEBUG"})


class SettingsError(ValueError):
    """A METRO_* variable the service cannot run with, named with what is wrong, in one line."""


def unknown_variables(environ: dict[str, str] | None = None) -> list[str]:
    """METRO_* variables of the environment, and of the ``.env`` file the settings read, that
    name no setting: a misspelt one (METRO_DATABSE_URL) would otherwise leave its setting at the
    default without a word (in ``.env`` it did: `metro migrate` then migrated ./var/metro.db)."""
    known = {f"METRO_{name.upper()}" for name in Settings.model_fields} | CLIENT_VARIABLES
    names = set(os.environ if environ is None else environ)
    if environ is None:
        env_file = Settings.model_config.get("env_file")
        if isinstance(env_file, str) and os.path.isfile(env_file):
            from dotenv import dotenv_values

            names |= set(dotenv_values(env_file))
    return sorted(k for k in names if k.upper().startswith("METRO_") and k.upper() not in known)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process, read once from the environment. A value it cannot use is
    a :class:`SettingsError` naming the variable."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(step) for step in error.get("loc", ()))
            name = f"METRO_{field.upper()}" if field else "the settings"
            message = str(error.get("msg", "")).removeprefix("Value error, ")
            problems.append(f"{name}: {message}" if field else message)
        raise SettingsError("; ".join(problems)) from None
