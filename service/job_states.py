"""The job state machine, shared by the API (cancel) and the workers (claim, finish).

    queued ──claim──▶ running ──▶ succeeded | failed
       │                 │
       └─cancel─▶ cancelled ◀── cancelling ◀─cancel─┘

A queued job is cancelled at once (no worker holds it); a running one only asks its worker to
stop (``cancelling``, ``cancel_requested``), and the worker records the final ``cancelled``. A
failed attempt whose lease expires goes back to ``queued`` while attempts remain.
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


TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

ALLOWED_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED}),
    # running -> queued: a lease expired and the job is retried.
    JobState.RUNNING: frozenset(
        {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLING, JobState.QUEUED}
    ),
    JobState.CANCELLING: frozenset({JobState.CANCELLED, JobState.SUCCEEDED, JobState.FAILED}),
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


def can_transition(current: JobState | str, target: JobState | str) -> bool:
    return JobState(target) in ALLOWED_TRANSITIONS[JobState(current)]
