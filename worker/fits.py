"""The fits of a job's lambda search, recorded so that no finished fit is ever computed twice.

Every ``solve`` call of a METRO search becomes one or more *fits*, each a row of ``job_fits``
keyed by its place in the search (``r<repeat>/<role>/c<call>/s<shard>``) with its fitted stack
in the artifact store:

* a grid (many lambdas, no warm start) is split into shards of ``shard_size`` lambdas, fixed per
  job at its first claim. Any worker may fit a shard (helpers are asked for with ``help_job``
  messages), each claiming it with a lease; the job's own worker fits what nobody else has taken
  and waits for the rest, taking over any shard whose lease expires. The shards are the same
  whoever fits them, so the gathered grid (one trace, one best model) equals a one-worker run;
* a sequential step (bisection, Dinkelbach, the final refit) is one fit of one lambda, made by
  the job's own worker.

A fit records what it was trained for: its lambdas, cost shift and, under constraints, the
Lagrange multipliers of each lambda (the constrained grid trains every lambda at each of its
multipliers). A search that asks a recorded key for anything else raises
:class:`FitStoreError` instead of mixing two searches.

After a crash the search is replayed from the start: fits already done are loaded instead of
trained (so every decision of the search, which depends only on them, repeats exactly), and a
fit that was in progress resumes from its last trainer checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from kombu.exceptions import OperationalError as BrokerUnreachable

from core import store
from core.states import FitState
from metro.experiment import RepeatSetup
from metro.models import StackedModel
from metro.search.base import Candidate
from metro.search.fold_stack import FoldStackSolver
from metro.search.solver import TrainerSolver
from metro.trainer import FitResult, TrainingEvent
from worker import artifacts
from worker.context import WorkerContext
from worker.lease import Lease

logger = logging.getLogger(__name__)

# What sending a message raises when the broker cannot be reached.
BROKER_ERRORS: tuple[type[Exception], ...] = (BrokerUnreachable, ConnectionError, TimeoutError)

# What a recorded fit trains: one fold's (or a holdout's) lambdas, or every fold's at once.
FittingSolver = TrainerSolver | FoldStackSolver

_POLL_SECONDS = 0.2
# A trainer checkpoint: one object (FitRunner._save_checkpoint), its scalars as JSON bytes in a
# uint8 tensor of this name beside the trainer's tensors.
_CHECKPOINT = ".ckpt.safetensors"
_SCALARS = "__checkpoint_scalars__"
# Trainer checkpoints are taken every this many optimizer steps (and saved at most every
# METRO_CHECKPOINT_SECONDS). Only SGD fits are checkpointed: resuming one repeats the
# uninterrupted fit bit for bit (checked on CPU and CUDA), which L-BFGS's resume does not do at
# present (its curvature state comes back slightly different), and an interrupted L-BFGS fit is
# short enough to redo from the start.
_CHECKPOINT_EVERY = {"sgd": 1}


class FitStoreError(RuntimeError):
    """A recorded fit does not match what the search asks for now (the job's spec or the code
    changed under it): resuming would mix two different searches."""


def fit_key(repeat: int, role: str, call: int, shard: int) -> str:
    return f"r{repeat}/{role}/c{call}/s{shard}"


class FitRunner:
    """Trains one recorded fit (claim held by the caller) and stores its stack, with trainer
    checkpoints on the way; shared by the job's worker and the helpers."""

    def __init__(self, ctx: WorkerContext, job_id: uuid.UUID, lease: Lease) -> None:
        self.ctx = ctx
        self.job_id = job_id
        self.lease = lease
        self.root = ctx.settings.artifacts_uri

    def train(
        self,
        inner: FittingSolver,
        key: str,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None,
        on_event: Callable[[TrainingEvent], None] | None = None,
        multipliers: np.ndarray | None = None,
    ) -> tuple[FitResult, bool]:
        """Fit ``key`` (from its last checkpoint where there is one) and record it. Returns the
        fit and whether it is the one recorded (False: another worker's fit of the same shard,
        taken over while this one trained, was recorded first, and is the one to use)."""
        started = time.perf_counter()
        optimizer = inner.config.resolve_optimizer(inner.model_spec)
        every = (
            _CHECKPOINT_EVERY.get(optimizer) if self.ctx.settings.checkpoint_seconds > 0 else None
        )
        resume = self._load_checkpoint(key) if every is not None else None
        if resume is not None:
            logger.info(
                "fit %s of job %s resumes from its checkpoint at step %s",
                key, self.job_id, resume["scalars"].get("step"),
            )  # fmt: skip
        last_saved = time.monotonic()

        def callback(event: TrainingEvent) -> None:
            nonlocal last_saved
            self.lease.check()
            if on_event is not None:
                on_event(event)
            if (
                event.checkpoint is not None
                and time.monotonic() - last_saved >= self.ctx.settings.checkpoint_seconds
            ):
                self._save_checkpoint(key, event.checkpoint)
                last_saved = time.monotonic()

        self.lease.hold_fit(key)
        try:
            try:
                fit = inner.fit(
                    lambdas, shift=shift, warm_start=warm_start, resume_from=resume,
                    checkpoint_every=every, on_event=callback, multipliers=multipliers,
                )  # fmt: skip
            except ValueError:
                if resume is None:
                    raise
                # A checkpoint of another fit (the trainer refuses it): start this one afresh.
                logger.warning("checkpoint of fit %s does not match; refitting", key)
                fit = inner.fit(
                    lambdas, shift=shift, warm_start=warm_start, checkpoint_every=every,
                    on_event=callback, multipliers=multipliers,
                )  # fmt: skip
        finally:
            self.lease.hold_fit(None)
        from safetensors.torch import save as save_safetensors

        data = save_safetensors(fit.model.tensors())
        rel = artifacts.fit_weights_path(self.job_id, key)
        artifacts.put_bytes(self.root, rel, data)
        recorded = store.complete_fit(
            self.ctx, self.job_id, key, artifact=rel, sha256=hashlib.sha256(data).hexdigest(),
            surrogate_loss=[float(v) for v in fit.surrogate_loss],
            seconds=time.perf_counter() - started,
        )  # fmt: skip
        if not recorded:
            # Another worker's fit of this shard was recorded first: its file is the fit now.
            logger.info("fit %s of job %s was recorded by another worker first", key, self.job_id)
            artifacts.remove_tree(self.root, rel)
        return fit, recorded

    def load(self, row: store.FitRow, inner: FittingSolver) -> StackedModel:
        from safetensors.torch import load as load_safetensors

        data = artifacts.get_bytes(self.root, row.artifact or "")
        if data is None or hashlib.sha256(data).hexdigest() != row.sha256:
            raise FitStoreError(f"the stored weights of fit {row.key} are missing or corrupt")
        return StackedModel.from_tensors(
            inner.model_spec, tuple(inner.X.shape[1:]), load_safetensors(data)
        )

    # -- trainer checkpoints: one safetensors object, its scalars as JSON bytes inside ---------
    def _save_checkpoint(self, key: str, checkpoint: dict[str, Any]) -> None:
        """One object: the tensors with the scalars (the step, the optimizer's counters) as
        JSON bytes in one more tensor (``_SCALARS``). As two files (tensors, then scalars) a
        worker killed between the two writes left the tensors of one step beside the scalars
        of the one before, and the next attempt resumed from that pair: an extra epoch
        trained, a fit unlike the uninterrupted one."""
        from safetensors.torch import save as save_safetensors

        try:
            tensors = {k: v.detach().cpu().contiguous() for k, v in checkpoint["tensors"].items()}
            scalars = json.dumps(checkpoint["scalars"]).encode()
            tensors[_SCALARS] = torch.frombuffer(bytearray(scalars), dtype=torch.uint8)
            data = save_safetensors(tensors)
            artifacts.put_bytes(self.root, artifacts.fit_path(self.job_id, key, _CHECKPOINT), data)
        except Exception:
            logger.warning("could not save a checkpoint of fit %s", key, exc_info=True)

    def _load_checkpoint(self, key: str) -> dict[str, Any] | None:
        from safetensors.torch import load as load_safetensors

        try:
            data = artifacts.get_bytes(self.root, artifacts.fit_path(self.job_id, key, _CHECKPOINT))
            if data is None:
                return None
            loaded: dict[str, torch.Tensor] = load_safetensors(data)
            scalars = loaded.pop(_SCALARS, None)
            if scalars is None:
                return None
            return {"tensors": loaded, "scalars": json.loads(scalars.numpy().tobytes())}
        except Exception:
            logger.warning("could not read the checkpoint of fit %s", key, exc_info=True)
            return None


class FitLedger:
    """Hands :func:`metro.experiment.run_experiment` solvers that go through the recorded fits."""

    def __init__(
        self,
        ctx: WorkerContext,
        job_id: uuid.UUID,
        token: str,
        lease: Lease,
        *,
        shard_size: int,
        request_help: Callable[[int], None],
        on_fit_done: Callable[[int, int], None] | None = None,
        on_fit_step: Callable[[int, int, TrainingEvent], None] | None = None,
        on_refine_fit: Callable[[int], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.job_id = job_id
        self.token = token
        self.lease = lease
        self.shard_size = max(1, int(shard_size))
        self.request_help = request_help
        # on_fit_done(repeat, n_lambdas) when a fit is in (trained or loaded);
        # on_fit_step(repeat, n_lambdas, event) after each trainer step of a fit trained here.
        # on_refine_fit(repeat) after each fit of a repeat's refinement step.
        self.on_fit_done = on_fit_done
        self.on_fit_step = on_fit_step
        self.on_refine_fit = on_refine_fit
        self.runner = FitRunner(ctx, job_id, lease)
        self._calls: dict[tuple[int, str], int] = defaultdict(int)
        self.trained = 0  # fits this attempt trained
        self.loaded = 0  # fits this attempt found done
        # Help messages sent and not known to have been taken. A helper works through every
        # open shard of the job, not only those of the grid that asked, so a message still in
        # the queue serves later grids too: asking again at each grid only piled up messages
        # on a system where nobody was free (one worker: all of them ran, "skipped", after the
        # job). The count drops to zero when a grid sees another worker's fits, the sign that
        # helpers took the messages.
        self.help_outstanding = 0

    def ask_for_help(self, wanted: int) -> None:
        """Make sure ``wanted`` helpers are asked for, counting those asked for already."""
        missing = wanted - self.help_outstanding
        if missing > 0:
            try:
                self.request_help(missing)
            except BROKER_ERRORS as exc:
                # Help is optional: with the broker away this worker fits the shards alone (a
                # Redis outage failed the job, on its first attempt, as an internal error).
                logger.warning("job %s: could not ask for help (%s); fitting alone", self.job_id,
                               type(exc).__name__)  # fmt: skip
                return
            self.help_outstanding += missing

    def wrap(self, setup: RepeatSetup, role: str, inner: FittingSolver) -> RecordedSolver:
        """The hook of :func:`metro.experiment.run_experiment`."""
        return RecordedSolver(self, setup.repeat, role, inner)

    def solver(self, repeat: int, role: str, inner: FittingSolver) -> RecordedSolver:
        """``inner`` recorded under ``r<repeat>/<role>/...`` (an averaged job names each class's
        roles, ``class<c>.fold<k>``)."""
        return RecordedSolver(self, repeat, role, inner)

    def next_call(self, repeat: int, role: str) -> int:
        call = self._calls[(repeat, role)]
        self._calls[(repeat, role)] += 1
        return call


class RecordedSolver:
    """A LambdaSolver whose every fit is recorded, resumable and (for grids) shareable."""

    def __init__(self, ledger: FitLedger, repeat: int, role: str, inner: FittingSolver) -> None:
        self.ledger = ledger
        self.repeat = repeat
        self.role = role
        self.inner = inner
        self.spec = inner.spec
        # Progress counts (fold, lambda) pairs: a fold stack's lambda is one per fold.
        self.per_lambda = inner.n_folds if isinstance(inner, FoldStackSolver) else 1

    # The refinement step after the choice (metro.search.refine) is not recorded: it is
    # deterministic, takes seconds, and is redone from the recorded fits on a replay.
    # (A fold stack only fits; the grid refines and scores with the per-fold solvers.)
    def refine(
        self, model: StackedModel, *, offset: float, temperature: float, sharpen: bool = True
    ) -> StackedModel:
        if isinstance(self.inner, FoldStackSolver):
            raise TypeError("a fold stack fits the grid; refine with a fold's solver")
        # Between two of the step's fits (folds x scales x temperatures): a cancel waited for
        # the whole step, tens of seconds on a loaded machine.
        self.ledger.lease.check()
        refined = self.inner.refine(model, offset=offset, temperature=temperature, sharpen=sharpen)
        if self.ledger.on_refine_fit is not None:
            self.ledger.on_refine_fit(self.repeat)
        return refined

    def held_out_scores(self, model: StackedModel) -> np.ndarray | None:
        if isinstance(self.inner, FoldStackSolver):
            raise TypeError("a fold stack fits the grid; score with a fold's solver")
        return self.inner.held_out_scores(model)

    def training_scores(self, model: StackedModel) -> np.ndarray:
        if isinstance(self.inner, FoldStackSolver):
            raise TypeError("a fold stack fits the grid; score with a fold's solver")
        return self.inner.training_scores(model)

    def solve(
        self,
        lambdas: np.ndarray,
        *,
        shift: str,
        warm_start: Candidate | None = None,
        multipliers: np.ndarray | None = None,
    ) -> list[Candidate]:
        ledger, ctx = self.ledger, self.ledger.ctx
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
        mus = None if multipliers is None else _multiplier_rows(multipliers, lambdas.size)
        call = ledger.next_call(self.repeat, self.role)
        shareable = warm_start is None and lambdas.size > 1
        size = ledger.shard_size if shareable else lambdas.size
        starts = range(0, lambdas.size, size)
        chunks = [lambdas[i : i + size] for i in starts]
        # A shard's multipliers are the rows of its lambdas (None: an unconstrained search).
        chunk_mus = [None if mus is None else mus[i : i + size] for i in starts]
        keys = [fit_key(self.repeat, self.role, call, i) for i in range(len(chunks))]
        rows = store.ensure_fits(
            ctx, ledger.job_id,
            [
                {"key": k, "repeat": self.repeat, "role": self.role, "shift": shift,
                 "lambdas": [float(v) for v in c], "shareable": shareable,
                 "multipliers": None if m is None else m.tolist()}
                for k, c, m in zip(keys, chunks, chunk_mus, strict=True)
            ],
        )  # fmt: skip
        for key, chunk, mu in zip(keys, chunks, chunk_mus, strict=True):
            row = rows[key]
            if row.shift != shift or not np.array_equal(np.asarray(row.lambdas), chunk):
                raise FitStoreError(
                    f"fit {key} was recorded for other lambdas; the job's search changed"
                )
            if not _same_multipliers(row.multipliers, mu):
                raise FitStoreError(
                    f"fit {key} was recorded for other multipliers of the constraints; the "
                    "job's search changed"
                )
        open_shards = sum(1 for k in keys if rows[k].state != FitState.DONE)
        if shareable and open_shards > 1:
            ledger.ask_for_help(open_shards - 1)
        helped = False  # a shard of this grid fitted by another worker

        done: dict[str, list[Candidate]] = {}
        reopened: set[str] = set()  # fits whose stored weights were lost, put back to fit again
        while len(done) < len(keys):
            progressed = False
            for key, chunk, mu in zip(keys, chunks, chunk_mus, strict=True):
                if key in done:
                    continue
                ledger.lease.check()
                latest = store.get_fit(ctx, ledger.job_id, key)
                assert latest is not None
                if latest.state == FitState.DONE:
                    try:
                        model = ledger.runner.load(latest, self.inner)
                    except FitStoreError as exc:
                        # The store lost or damaged its bytes: fit it again rather than fail
                        # the job (it comes back pending, and this loop claims it). Once: a
                        # store that loses what was just written fails the job with the error.
                        if key in reopened:
                            raise
                        logger.warning("job %s: %s; fitting it again", ledger.job_id, exc)
                        store.reopen_fit(
                            ctx, ledger.job_id, key, artifact=latest.artifact, sha256=latest.sha256
                        )
                        reopened.add(key)
                        continue
                    helped = helped or rows[key].state != FitState.DONE  # done since it began
                    assert latest.surrogate_loss is not None
                    done[key] = self.inner.adopt(
                        model, chunk, shift=shift, surrogate_loss=latest.surrogate_loss,
                        multipliers=mu,
                    )  # fmt: skip
                    ledger.loaded += 1
                elif store.claim_fit(ctx, ledger.job_id, key, ledger.token):
                    fit, recorded = ledger.runner.train(
                        self.inner, key, chunk, shift=shift, warm_start=warm_start,
                        on_event=self._step_reporter(chunk.size * self.per_lambda), multipliers=mu,
                    )  # fmt: skip
                    ledger.trained += 1
                    if not recorded:
                        # Taken over while it trained, and the other worker's fit recorded
                        # first: the next pass takes that one (loads it, or puts it back if
                        # its file is lost), as every later replay of the search will.
                        progressed = True
                        continue
                    done[key] = self.inner.adopt(
                        fit.model, chunk, shift=shift, surrogate_loss=fit.surrogate_loss,
                        multipliers=mu,
                    )  # fmt: skip
                else:
                    helped = True
                    continue  # another worker holds it: come back to it
                progressed = True
                if ledger.on_fit_done is not None:
                    ledger.on_fit_done(self.repeat, chunk.size * self.per_lambda)
            if not progressed:
                time.sleep(_POLL_SECONDS)
        if helped:
            ledger.help_outstanding = 0
        return [cand for key in keys for cand in done[key]]

    def _step_reporter(self, n_lambdas: int) -> Callable[[TrainingEvent], None] | None:
        report = self.ledger.on_fit_step
        if report is None:
            return None
        repeat = self.repeat
        return lambda event: report(repeat, n_lambdas, event)


def _multiplier_rows(multipliers: np.ndarray, k: int) -> np.ndarray:
    rows = np.atleast_2d(np.asarray(multipliers, dtype=np.float64))
    if rows.shape[0] != k:
        raise ValueError(f"{k} lambdas but {rows.shape[0]} rows of multipliers")
    return rows


def _same_multipliers(recorded: list[list[float]] | None, wanted: np.ndarray | None) -> bool:
    """Whether a recorded fit was trained with the multipliers asked for now (both none, or
    the same rows exactly: JSON keeps a float's shortest repr, which reads back bit for bit)."""
    if recorded is None or wanted is None:
        return recorded is None and wanted is None
    return np.array_equal(np.asarray(recorded, dtype=np.float64), wanted)
