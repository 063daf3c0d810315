"""The state machines of jobs and of their fits: the states, and the one table of the
transitions allowed between them. The job store (:mod:`core.store`) is the only writer of a state
and checks every change against these tables; a change they do not allow raises
:class:`IllegalTransitionError`.

Jobs::

    queued ──claim──▶ running ──▶ succeeded | failed | cancelled
       │               │  ▲  │
       │               └──┘  └─cancel─▶ cancelling ──▶ cancelled | succeeded | failed
       └─cancel─▶ cancelled

A queued job is cancelled at once (no worker holds it); a running one only asks its worker to
stop (``cancelling``, ``cancel_requested``), and the worker records the final ``cancelled``. A
running job whose lease expired is taken over by another worker (running -> running) or, by the
reconciler, goes back to ``queued`` while attempts remain.

Fits (one shard or step of a job's lambda search)::

    pending ──claim──▶ running ──▶ done
       └──────────────────────────▲

A fit is done whoever finished it (the result of one fit is the same everywhere); a running fit
whose lease expired is claimed again (running -> running).
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class FitState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"


TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
# The states in which a worker holds a job under a lease.
HELD_STATES = frozenset({JobState.RUNNING, JobState.CANCELLING})

JOB_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED}),
    JobState.RUNNING: frozenset(
        {
            # Another worker takes over a job whose lease expired.
            JobState.RUNNING,
            JobState.SUCCEEDED,
            JobState.FAILED,
            # A worker that finds a cancel request stops from either held state.
            JobState.CANCELLED,
            JobState.CANCELLING,
            # A lost worker's job goes back to the queue (the reconciler), or a worker gives it
            # back after a transient failure.
            JobState.QUEUED,
        }
    ),
    JobState.CANCELLING: frozenset({JobState.CANCELLED, JobState.SUCCEEDED, JobState.FAILED}),
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}

FIT_TRANSITIONS: dict[FitState, frozenset[FitState]] = {
    FitState.PENDING: frozenset({FitState.RUNNING, FitState.DONE}),
    # running -> running: a fit whose lease expired is claimed again.
    FitState.RUNNING: frozenset({FitState.RUNNING, FitState.DONE}),
    # done -> pending: a fit whose stored weights are gone or damaged is fitted again rather
    # than failing the job (the same fit bit for bit on the same kind of machine; elsewhere it
    # may differ in its last bits, and a later step that depends on it then says the job's
    # search changed, as before).
    FitState.DONE: frozenset({FitState.PENDING}),
}


class IllegalTransitionError(ValueError):
    """A state change that the table does not allow (a bug in the caller, not bad input)."""

    def __init__(self, kind: str, current: StrEnum, target: StrEnum) -> None:
        super().__init__(f"a {kind} cannot go from {current.value} to {target.value}")
        self.kind = kind
        self.current = current
        self.target = target


def check_job_transition(current: JobState | str, target: JobState | str) -> JobState:
    """``target`` as a JobState if the table allows ``current -> target``; else raises."""
    current, target = JobState(current), JobState(target)
    if target not in JOB_TRANSITIONS[current]:
        raise IllegalTransitionError("job", current, target)
    return target


def check_fit_transition(current: FitState | str, target: FitState | str) -> FitState:
    current, target = FitState(current), FitState(target)
    if target not in FIT_TRANSITIONS[current]:
        raise IllegalTransitionError("fit", current, target)
    return target
