"""The server's ``metro`` commands: run the service (``serve``, ``worker``, ``migrate``), manage
it (``admin``), and try the library (``demo``).

The ``metro`` command itself is the client package's (``clients/python``, :mod:`metro_cli.app`):
the commands that use a running service (``submit``, ``watch``, ``result``, ...) are there, and
this package adds its own to them through the ``metro.cli`` entry point (:func:`register`), so a
server install offers every command and a client-only install the users' ones.
``python -m cli.main`` runs the same whole command (the embedded worker is started so).

Heavy imports happen inside each command so that ``metro --help`` is instant and a command only
needs the parts of the stack it uses.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Annotated, Any, NoReturn

import typer
from metro_cli.app import create_app, run, texts
from rich.console import Console
from rich.table import Table
from rich.text import Text

admin_app = typer.Typer(
    help="Administration: tenants, API keys and finished jobs.", no_args_is_help=True
)

console = Console()
err_console = Console(stderr=True)


def _fail(message: str, code: int = 1) -> NoReturn:
    # The message is text, never markup: a tenant's name "[/]" in it was a traceback.
    err_console.print(Text.assemble(("error: ", "bold red"), message))
    raise typer.Exit(code)


def _settings() -> Any:
    """The service's settings for a server command: a variable it cannot use is a one-line
    error naming it, a METRO_* variable that names no setting a warning."""
    from core.config import SettingsError, get_settings, unknown_variables

    for name in unknown_variables():
        err_console.print(f"[yellow]warning:[/] {name} is not a setting of the service; ignored")
    try:
        return get_settings()
    except SettingsError as exc:
        _fail(str(exc))


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    migrate: Annotated[bool, typer.Option(help="Upgrade the database schema first.")] = True,
    worker: Annotated[
        bool | None,
        typer.Option(
            "--worker/--no-worker",
            help="Also run a worker (with the reconciler's beat) beside the API. The default is "
            "yes without METRO_BROKER_URL (the embedded broker, which only a local worker can "
            "share), no with it.",
        ),
    ] = None,
) -> None:
    """Run the HTTP API; on the embedded defaults (SQLite and a SQLite-backed broker under
    ./var, no external services), a worker too, in one process group."""
    import uvicorn

    from core.logs import configure_logging
    from service.api.middleware import parser_header_cap

    settings = _settings()
    configure_logging(level=settings.log_level, log_format=settings.log_format)
    if worker is None:  # embedded: the local SQLite broker, which only a local worker can share
        worker = not settings.broker_url
    if migrate:
        _migrate(settings.database_url)
    supervisor = _EmbeddedWorker() if worker else None
    if supervisor is not None:
        supervisor.start()  # after the migration, so that the worker finds the schema
    console.print(
        f"METRO API on http://{host}:{port}  (docs at /docs, dashboard at /dashboard/, "
        f"database {shown_url(settings.database_url)}" + (", with a worker)" if worker else ")"),
        soft_wrap=True,
    )
    # uvicorn shuts down gracefully on SIGTERM, puts back the handler it found and raises the
    # signal again. With the default handler that kills this process before `finally` can stop
    # the worker child, which was left running as an orphan; this one unwinds instead.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        uvicorn.run(
            "service.main:app",
            host=host,
            port=port,
            # Logging is configured above (core.logs): uvicorn's lines in the service's format.
            log_config=None,
            log_level=settings.log_level.lower(),
            # A request that never ends must not keep the server from stopping on SIGTERM.
            timeout_graceful_shutdown=settings.shutdown_timeout_seconds,
            # h11's own limit on a request's head (16 KiB by default) applies only to a head
            # that arrives in pieces, and its refusal is a text/plain 400: raised above the
            # app's METRO_MAX_REQUEST_HEADER_BYTES, the app refuses every oversized head up to
            # this hard cap with its problem+json 400, however the bytes arrived. h11 even
            # when httptools is installed (uvicorn[standard]), which would ignore the cap.
            http="h11",
            h11_max_incomplete_event_size=parser_header_cap(settings),
        )
    finally:
        if supervisor is not None:
            supervisor.stop()


def shown_url(url: str) -> str:
    """A database URL as it may be printed or logged: its password masked (a start-up banner
    lands in container and journal logs)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<a URL SQLAlchemy cannot read>"


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


class _EmbeddedWorker:
    """``metro worker --beat`` as a child process in a process group of its own, restarted if
    it dies, stopped with the API: asked first (SIGTERM: Celery's warm shutdown), then, past the
    wait, its whole group killed. Killing the child alone left its beat and pool processes
    running as orphans."""

    def __init__(self) -> None:
        import threading

        self._stopping = threading.Event()
        self._child: Any = None
        self._thread = threading.Thread(target=self._run, name="embedded-worker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        import subprocess

        while not self._stopping.is_set():
            self._child = subprocess.Popen(
                [sys.executable, "-m", "cli.main", "worker", "--beat", "--no-banner"],
                start_new_session=True,
                env={**os.environ, EMBEDDED_PARENT: str(os.getpid())},
            )
            code = self._child.wait()
            if self._stopping.is_set():
                return
            err_console.print(f"[bold red]the embedded worker exited ({code}); restarting it[/]")
            self._stopping.wait(5)

    def stop(self) -> None:
        import subprocess

        self._stopping.set()
        child = self._child
        if child is not None and child.poll() is None:
            child.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=15)
        if child is not None:
            # Whatever is left of its group (its beat and pool processes), the child included.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
        self._thread.join(timeout=5)


def worker_cmd(
    queues: Annotated[
        str | None,
        typer.Option(help="Comma-separated queues (default: gpu,cpu with a GPU, else cpu)."),
    ] = None,
    beat: Annotated[
        bool,
        typer.Option(
            help="Also schedule the reconciler with Celery beat (not needed: every worker "
            "reconciles periodically, one at a time)."
        ),
    ] = False,
    gpu: Annotated[
        int | None,
        typer.Option(help="Use only this GPU (one worker process per GPU)."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Worker node name.")] = None,
    banner: Annotated[
        bool, typer.Option(help="Print Celery's start-up banner (queues, tasks, transport).")
    ] = True,
    loglevel: Annotated[
        str | None, typer.Option(help="Log level (default: METRO_LOG_LEVEL, else INFO).")
    ] = None,
) -> None:
    """Run a worker: one process, one job at a time (the solo pool never forks, so CUDA is safe)."""
    import os
    import socket

    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # before anything imports torch
    from core.broker import queue_names

    settings = _settings()
    names = queue_names(settings)
    if queues is None:
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # no CUDA init to ask
        import torch

        wanted = ["gpu", "cpu"] if torch.cuda.is_available() else ["cpu"]
    else:
        wanted = [q.strip() for q in queues.split(",") if q.strip()]
    unknown = [q for q in wanted if q not in ("cpu", "gpu")]
    if unknown:
        _fail(f"unknown queue(s) {unknown}; expected cpu and/or gpu")
    from worker.celery_app import app as celery_app

    node = name or f"metro-{os.getpid()}@{socket.gethostname()}"
    argv = [
        "worker", "--pool=solo", "--concurrency=1", f"--hostname={node}",
        f"--loglevel={loglevel or settings.log_level}",
        "--queues=" + ",".join([names["control"]] + [names[q] for q in wanted]),
        "--without-gossip", "--without-mingle",
    ]  # fmt: skip
    if beat:
        argv.append("--beat")
    if not banner:
        argv.insert(0, "--quiet")  # an option of the `celery` command, before its subcommand
    parent = os.environ.pop(EMBEDDED_PARENT, None)
    if parent is not None and parent.isdigit():
        _stop_with_parent(int(parent))
    celery_app.worker_main(argv)


# The pid of the `metro serve` that started this worker (its embedded worker), in the worker's
# environment. Not a METRO_* name: it is no setting.
EMBEDDED_PARENT = "_METRO_EMBEDDED_PARENT"


def _stop_with_parent(parent: int) -> None:
    """Stop this worker as SIGTERM does (its job given back) once ``parent`` is gone: a
    `metro serve` killed with SIGKILL left its worker training as an orphan, and a restart
    started a second one beside it."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(2.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="embedded-parent-watch", daemon=True).start()


def migrate_cmd() -> None:
    """Upgrade the database schema to the latest revision."""
    settings = _settings()
    before, after = _migrate(settings.database_url)
    # Said either way: "is at the latest revision" after five migrations hid that any ran.
    moved = (
        f"upgraded from revision {before or 'none (a new database)'} to {after}"
        if before != after
        else f"already at the latest revision, {after}: nothing to do"
    )
    console.print(f"database {shown_url(settings.database_url)}: {moved}", soft_wrap=True)


@admin_app.command("create-key")
def create_key(
    tenant: Annotated[str, typer.Option(help="Tenant name (created if missing).")],
    expires_in: Annotated[
        float | None,
        typer.Option(
            "--expires-in",
            metavar="DAYS",
            max=36_500.0,
            help="Refuse the key this many days from now (more than 0, at most 36,500), as if "
            "revoked. Default: until revoked.",
        ),
    ] = None,
) -> None:
    """Create an API key for a tenant and print it (it is shown only once). The tenant's id,
    what {tenant} stands for in METRO_DATA_ROOTS and METRO_DATA_URI_PREFIXES, goes to stderr,
    with the key's expiry where it has one."""
    from datetime import timedelta

    from core.db.base import utcnow
    from service.admin import create_api_key, tenant_id

    if expires_in is not None and not (expires_in > 0):  # NaN too: a float range lets it by
        _fail(f"--expires-in is a number of days more than 0, not {expires_in:g}")
    expires_at = None if expires_in is None else utcnow() + timedelta(days=expires_in)
    with _admin_session() as session:
        try:
            key = create_api_key(session, tenant, operator=_operator(), expires_at=expires_at)
        except ValueError as exc:  # a name that is empty, too long or holds control characters
            _fail(str(exc))
        session.commit()
        owner = tenant_id(session, tenant)
    typer.echo(key)  # alone on stdout: KEY=$(metro admin create-key --tenant acme)
    until = "" if expires_at is None else f"; the key expires {expires_at:%Y-%m-%d %H:%M:%S} UTC"
    err_console.print(
        f"tenant {tenant.strip()}: id {owner}{until}", highlight=False, markup=False, soft_wrap=True
    )


@admin_app.command("list-keys")
def list_keys(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's keys.")] = None,
) -> None:
    """List API keys: tenant, tenant id (what {tenant} stands for in METRO_DATA_ROOTS), prefix,
    created, revoked, expires (the keys themselves are not stored)."""
    from service.admin import list_api_keys

    with _admin_session() as session:
        keys = list_api_keys(session, tenant)
    from metro_cli.listing import print_whole

    from core.db.base import utcnow

    now = utcnow()
    table = Table("tenant", "tenant id", "prefix", "created", "revoked", "expires")
    for k in keys:
        revoked = "" if k.revoked_at is None else f"{k.revoked_at:%Y-%m-%d %H:%M:%S}"
        created = f"{k.created_at:%Y-%m-%d %H:%M:%S}"
        expires = "" if k.expires_at is None else f"{k.expires_at:%Y-%m-%d %H:%M:%S}"
        if k.expires_at is not None and k.expires_at <= now:
            # refused as a revoked key is, though its revoked column is empty: said so here
            expires += " (expired)"
        table.add_row(Text(k.tenant), str(k.tenant_id), k.prefix, created, revoked, expires)
    print_whole(table)  # a row on one line: the id and the prefix are copied, never cut


@admin_app.command("revoke-key")
def revoke_key(
    key: Annotated[str, typer.Argument(help="The key, or its prefix as `list-keys` shows it.")],
) -> None:
    """Revoke an API key: refused by every API process within METRO_API_KEY_CACHE_SECONDS
    (5 by default; 0: from the next request on)."""
    from core.db.base import utcnow
    from service.admin import revoke_api_key

    asked = utcnow()
    with _admin_session() as session:
        try:
            info = revoke_api_key(session, key, operator=_operator())
        except ValueError as exc:
            _fail(str(exc))
    # A tenant's name is text, never markup: "[/]" made the command fail after revoking.
    if info.revoked_at is not None and info.revoked_at < asked:  # said as a new revocation
        console.print(
            f"{info.prefix}... of tenant {info.tenant} was already revoked, "
            f"at {info.revoked_at:%Y-%m-%d %H:%M:%S}",
            markup=False, highlight=False,
        )  # fmt: skip
        return
    console.print(
        f"revoked {info.prefix}... of tenant {info.tenant}", markup=False, highlight=False
    )


@admin_app.command("prune-jobs")
def prune_jobs(
    older_than: Annotated[
        float,
        typer.Option(
            "--older-than",
            metavar="DAYS",
            min=0.0,
            max=36_500.0,
            help="Jobs that finished more than this many days ago (0 to 36,500).",
        ),
    ],
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            metavar="STATE",
            help="A state to prune: failed, cancelled (the default: both) or succeeded, whose "
            "models go with it (repeatable).",
        ),
    ] = None,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's jobs.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
) -> None:
    """Delete finished jobs older than --older-than days, as their owners' DELETE would: rows
    (trace, results, models) and files. Nothing else removes a job its tenant leaves; run it
    from cron for a retention period."""
    import math
    from datetime import timedelta

    from core.db.base import db_now
    from core.states import JobState
    from service.admin import PRUNED_BY_DEFAULT
    from service.admin import prune_jobs as prune

    if math.isnan(older_than):  # a float range lets NaN through
        _fail("--older-than is a number of days, not nan")
    try:
        states = [JobState(s.strip().lower()) for s in state] if state else PRUNED_BY_DEFAULT
    except ValueError as exc:
        _fail(f"--state: {exc}; a job's states are {', '.join(s.value for s in JobState)}")
    with _admin_session() as session:
        before = db_now(session) - timedelta(days=older_than)
        try:
            pruned = prune(
                session, finished_before=before, artifacts_uri=_settings().artifacts_uri,
                states=states, tenant_name=tenant, dry_run=dry_run, operator=_operator(),
            )  # fmt: skip
        except ValueError as exc:
            _fail(str(exc))
    for job in pruned:
        typer.echo(f"{job.id}  {job.tenant}  {job.state}  {job.finished_at:%Y-%m-%d %H:%M:%S}")
    models = sum(job.models for job in pruned)
    verb = "would delete" if dry_run else "deleted"
    err_console.print(
        f"{verb} {len(pruned)} job(s) and {models} model(s) finished before "
        f"{before:%Y-%m-%d %H:%M:%S} UTC",
        highlight=False,
    )


@admin_app.command("delete-tenant")
def delete_tenant(
    tenant: Annotated[str, typer.Option(help="The tenant to delete, by name.")],
    yes: Annotated[
        bool, typer.Option("--yes", help="Delete without asking (scripts); nothing is kept.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be deleted; change nothing.")
    ] = False,
) -> None:
    """Off-board a tenant: revoke its keys, cancel its jobs, delete its jobs, models and
    datasets (rows and files), then the tenant. Where a worker is still stopping one of its
    jobs, that job, the datasets it reads and the tenant stay: run it again once the job has
    ended (exit status 1 until then). Files under METRO_DATA_ROOTS stay (they are yours)."""
    from core.datasets.storage import UploadStore
    from service.admin import delete_tenant as delete

    settings = _settings()
    with _admin_session() as session:
        try:
            plan = delete(
                session, tenant, artifacts_uri=settings.artifacts_uri,
                remove_bytes=UploadStore.remove, dry_run=True,
            )  # fmt: skip
        except ValueError as exc:
            _fail(str(exc))
        what = (
            f"tenant {plan.tenant} ({plan.tenant_id}): {plan.keys_revoked} live key(s), "
            f"{plan.jobs_cancelled} unfinished job(s), {plan.jobs_deleted} job(s), "
            f"{plan.models_deleted} model(s), {plan.datasets_deleted} dataset(s)"
        )
        if dry_run:
            console.print(f"would delete {what}", markup=False, highlight=False)
            return
        _stores_reachable(settings)  # before asking: a yes there would have been for nothing
        if not yes and not typer.confirm(f"Delete {what}? This cannot be undone", default=False):
            _fail("nothing deleted")
        done = delete(
            session, tenant, artifacts_uri=settings.artifacts_uri,
            remove_bytes=UploadStore.remove, key_cache_seconds=settings.api_key_cache_seconds,
            operator=_operator(),
        )  # fmt: skip
    console.print(
        f"tenant {done.tenant}: revoked {done.keys_revoked} key(s), cancelled "
        f"{done.jobs_cancelled} job(s), deleted {done.jobs_deleted} job(s), "
        f"{done.models_deleted} model(s), {done.datasets_deleted} dataset(s)",
        markup=False, highlight=False,
    )  # fmt: skip
    if not done.removed:
        why = (
            f"{done.still_running} job(s) still running: the tenant and what they use stay"
            if done.still_running
            # an API process that cached one of its keys took a request meanwhile
            else "the tenant added data while it was deleted: it stays"
        )
        _fail(f"{why}; run this again (once they have ended) to finish")
    console.print(f"deleted tenant {done.tenant}", markup=False, highlight=False)


@admin_app.command("audit-log")
def audit_log(
    tenant: Annotated[
        str | None, typer.Option(help="Only this tenant's records (a deleted one's too).")
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=100_000, help="The newest this many records (1 to 100,000).")
    ] = 50,
) -> None:
    """What operators did with `metro admin`, newest first: keys created and revoked, jobs
    pruned, tenants deleted; when (UTC), by whom (user@host), on which tenant, and what."""
    import json

    from service.admin import audit_log as read_log

    with _admin_session() as session:
        entries = read_log(session, tenant_name=tenant, limit=limit)
    from metro_cli.listing import print_whole

    table = Table("at (UTC)", "action", "operator", "tenant", "tenant id", "detail")
    for e in entries:
        table.add_row(
            f"{e.at:%Y-%m-%d %H:%M:%S}", e.action.value, Text(e.operator or "(not recorded)"),
            Text(e.tenant or "(all tenants)"), "" if e.tenant_id is None else str(e.tenant_id),
            Text(json.dumps(e.detail, separators=(",", ":"))),
        )  # fmt: skip
    print_whole(table)


def _operator() -> str:
    """Who runs this command, for the audit record: the login name and this machine's name,
    and under sudo the user who ran sudo ("root (sudo by alice)@host")."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container's arbitrary user)
        user = f"uid {os.getuid()}"
    by = os.environ.get("SUDO_USER")
    if by and by != user:
        user = f"{user} (sudo by {by})"
    return f"{user}@{socket.gethostname()}"[:255]


def _stores_reachable(settings: Any) -> None:
    """Refuse to delete where the stores' files are not: run on a host without the upload and
    artifact volumes, every removal found nothing to remove, and the command said it had
    deleted the tenant while every byte stayed."""
    from core.datasets.storage import UploadStore
    from metro.serialization import is_url, local_path

    for what, root in (
        ("upload store", UploadStore.from_settings(settings).root),
        ("artifact store", settings.artifacts_uri),
    ):
        if not is_url(root) and not local_path(root).is_dir():
            _fail(
                f"the {what} {root} is not on this machine: run this where the API and the "
                "workers keep their files (nothing deleted)"
            )


def _migrate(url: str) -> tuple[str | None, str | None]:
    """``metro migrate``'s upgrade, its failures as one line (each ended in a traceback of 70
    to 160 lines); the schema's revision before and after."""
    from core.db.migrate import current, upgrade

    before = _schema_revision(url)
    upgrade(url)
    return before, current(url)


def _schema_revision(url: str) -> str | None:
    """The database's schema revision (None: no schema yet), or one line saying why there is
    none to work with: an unreachable database or a URL that does not parse, or a schema a
    newer version of METRO migrated."""
    from sqlalchemy.exc import SQLAlchemyError

    from core.db.migrate import current, known

    try:
        at = current(url)
    except (SQLAlchemyError, ImportError) as exc:
        _fail(f"cannot reach the database ({type(exc).__name__}): check METRO_DATABASE_URL")
    if at is not None and not known(at):
        _fail(
            f"the database's schema is at revision {at}, which this version of METRO does not "
            "know: a newer version migrated it; run that version (or restore the backup taken "
            "before)"
        )
    return at


def _admin_session() -> Any:
    """A session on a database whose schema is this code's: on one not yet migrated the admin
    commands ended in SQLAlchemy's traceback ("no such table: tenants")."""
    from core.db.migrate import head
    from core.db.session import make_engine, make_sessionmaker

    url = _settings().database_url
    at = _schema_revision(url)
    latest = head()
    if at is None:
        _fail("the database has no schema yet: run `metro migrate` (`metro serve` migrates first)")
    if at != latest:
        _fail(f"the database's schema is at revision {at}, not {latest}: run `metro migrate`")
    return make_sessionmaker(make_engine(url))()


def demo(
    dataset: Annotated[str, typer.Option(help="Dataset URI.")] = "builtin://breast_cancer",
    metric: Annotated[str, typer.Option(help="Metric preset.")] = "f1",
    beta: Annotated[
        float | None, typer.Option(help="F-beta's beta (f_beta only: 2 for F2, 0.5 for F0.5).")
    ] = None,
    repeats: Annotated[int, typer.Option(help="Fresh splits to average over.")] = 3,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Fit METRO and the baselines locally (no service) and print test metrics side by side."""
    from metro import SearchConfig, TrainingConfig, get_metric, get_surrogate
    from metro.baselines import BASELINES
    from metro.data import load_dataset
    from metro.experiment import run_experiment
    from metro.metrics import MetricSpec, canonical_preset, display_name
    from metro.models import ModelSpec

    # The library's f_beta() is F1 without a beta: as the API does, ask for it.
    if canonical_preset(metric) == "f_beta" and beta is None:
        _fail("f_beta needs --beta (2 for F2, 0.5 for F0.5); for beta = 1 use --metric f1")
        return
    try:
        chosen = get_metric(metric, **({} if beta is None else {"beta": beta}))
        ds = load_dataset(dataset)
        result = run_experiment(
            ds,
            metric=chosen,
            surrogate=get_surrogate("logistic"),
            model=ModelSpec(),
            search=SearchConfig(),
            training=TrainingConfig(),
            baselines=BASELINES,
            repeats=repeats,
            seed=seed,
        )
    except ValueError as exc:
        _fail(str(exc))
        return
    zero_division = chosen.zero_division if isinstance(chosen, MetricSpec) else 0.0
    shown = display_name(chosen.name, zero_division=zero_division)
    table = Table(title=f"{shown} on {dataset}: test split, {repeats} repeat(s)")
    table.add_column("method")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    for method, (mean, std, _) in result.summary("test").items():
        table.add_row(method, f"{mean:.4f}", "-" if std is None else f"{std:.4f}")
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add the server's commands to the ``metro`` app: the ``metro.cli`` entry point of this
    package (pyproject.toml), which :mod:`metro_cli.app` loads."""
    app.command(**texts(serve))(serve)
    app.command("worker", **texts(worker_cmd))(worker_cmd)
    app.command("migrate", **texts(migrate_cmd))(migrate_cmd)
    app.add_typer(admin_app, name="admin")
    app.command(**texts(demo))(demo)


# Every command, the users' and the server's: what `metro` offers where both are installed.
app = create_app(plugins=False)
register(app)


def main(args: list[str] | None = None) -> int:
    """The whole ``metro`` command (``python -m cli.main``): one-line errors, exit code 2 for a
    wrong command line (:func:`metro_cli.app.run`)."""
    return run(app, args)


if __name__ == "__main__":  # pragma: no cover - `python -m cli.main` (the embedded worker)
    sys.exit(main())
