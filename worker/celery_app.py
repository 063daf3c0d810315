"""The Celery application of the workers: the deployment's configuration (:mod:`core.broker`)
with the tasks of :mod:`worker.tasks`.

Every worker runs the reconciler when it starts and then every ``METRO_RECONCILE_SECONDS``, one
worker at a time (:mod:`worker.reconcile`), so no special process is needed; ``--beat`` only adds
a schedule of the same lock-protected task, for deployments that still start one.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import signals

from core.broker import make_celery
from core.config import get_settings

if TYPE_CHECKING:
    from worker.reconcile import PeriodicReconciler, RollCall

logger = logging.getLogger(__name__)

app = make_celery(get_settings(), include=["worker.tasks"])


@signals.setup_logging.connect
def _log_as_the_service(loglevel: int | str | None = None, **_kwargs: object) -> None:
    """The service's one logging configuration (core.logs) instead of Celery's own format; a
    receiver of this signal is what keeps Celery from configuring logging itself. The level is
    the worker's ``--loglevel``, which ``metro worker`` takes from METRO_LOG_LEVEL by default."""
    from core.logs import LogLevel, configure_logging

    name = logging.getLevelName(loglevel) if isinstance(loglevel, int) else loglevel
    levels = {level.value for level in LogLevel}
    level = LogLevel(str(name).upper()) if str(name).upper() in levels else LogLevel.INFO
    configure_logging(level=level, log_format=get_settings().log_format)


_periodic: list[PeriodicReconciler] = []  # this process's, stopped at shutdown
_called: list[RollCall] = []  # this process's row in the roll call, removed at shutdown


@signals.worker_init.connect
def _share_the_cores(**_kwargs: object) -> None:
    """PyTorch's CPU threads as the settings ask (Settings.worker_torch_threads), before any job:
    several workers on one machine each with a thread per core slow each other down."""
    import torch

    threads = get_settings().worker_torch_threads
    if threads is not None:
        torch.set_num_threads(threads)


@signals.worker_init.connect
def _keep_compiled_kernels(**_kwargs: object) -> None:
    """Compiled kernels under Settings.compile_cache_dir, set before any job compiles one (the
    pool's processes inherit the environment)."""
    directory = get_settings().compile_cache_dir
    if directory is not None:
        keep_compiled_kernels(directory)


def keep_compiled_kernels(directory: Path) -> None:
    """Point torch.compile's (inductor's) and Triton's caches into ``directory``, unless the
    environment already names theirs."""
    for variable, sub in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        if not os.environ.get(variable):
            path = (directory / sub).resolve()
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                # Celery drops an exception raised in worker_init: the kernels went to /tmp
                # (lost with the container) without a word. Said on stderr, as logging is not
                # set up yet.
                print(
                    f"warning: METRO_COMPILE_CACHE_DIR {directory}: cannot create {path} "
                    f"({exc.strerror or exc}); compiled kernels are not kept",
                    file=sys.stderr,
                )
                return
            os.environ[variable] = str(path)


@signals.worker_ready.connect
def _reconcile_at_start(sender: Any = None, **_kwargs: object) -> None:
    """A worker (re)starting after a crash recovers what the crash left behind at once, then
    keeps reconciling periodically, so that a job whose worker dies is recovered by any worker
    that is left."""
    # Imported now rather than by the first task (torch and the search take seconds to import):
    # a worker claims a job within moments of receiving its message, which the reconciler counts
    # on to tell a delivered message from a lost one.
    import torch

    import worker.helper
    import worker.runner  # noqa: F401
    from worker.context import get_context
    from worker.reconcile import PeriodicReconciler, reconcile_exclusively

    # Said once logging is set up (it is not yet when the threads are set, at worker_init).
    logger.info("PyTorch CPU threads: %d", torch.get_num_threads())

    try:
        counts = reconcile_exclusively()
        logger.info(
            "reconciled at start: %s", counts if counts is not None else "another worker is"
        )
    except Exception:
        logger.exception("reconcile at worker start failed")
    roll_call = _roll_call(sender)
    if roll_call is not None:
        roll_call.announce(get_context())
        _called.append(roll_call)
    _periodic.append(PeriodicReconciler(roll_call=roll_call).start())


def _roll_call(consumer: Any) -> RollCall | None:
    """This worker's name and the kinds of queue (cpu, gpu) it consumes, from its consumer."""
    from core.broker import queue_names
    from core.workers import KINDS
    from worker.reconcile import RollCall

    try:
        consumed = set(consumer.app.amqp.queues.consume_from or ())
        name = str(consumer.hostname)
    except AttributeError:  # not a worker's consumer (a test's sender)
        return None
    names = queue_names(get_settings())
    kinds = tuple(kind for kind in KINDS if names[kind] in consumed)
    return RollCall(name=name, kinds=kinds)


@signals.worker_shutting_down.connect
def _stop_training(**_kwargs: object) -> None:
    """A warm shutdown (SIGTERM): the job being trained goes back to the queue at its next
    check, its attempt not counted (worker.lease.WorkerStopping), instead of holding the
    process until it is killed and its lease expires."""
    from worker.lease import SHUTTING_DOWN

    SHUTTING_DOWN.set()


@signals.worker_shutdown.connect
def _stop_reconciling(**_kwargs: object) -> None:
    for reconciler in _periodic:
        reconciler.stop()
    if _called:
        from worker.context import get_context

        for roll_call in _called:
            roll_call.forget(get_context())
