"""Per-process caches of the API that spare a request the database.

* :class:`PrincipalCache`: who an API key belongs to, for a few seconds. Entries are keyed by the
  key's SHA-256 (what the database already holds), so the cache never keeps a key itself. A
  revoked key stops working when its entry expires (``METRO_API_KEY_CACHE_SECONDS``, default 5 s)
  in every API process; ``0`` checks every request against the database.
* :class:`ModelRefCache`: the few columns of a model row that prediction needs. A model row
  never changes, but it can be deleted: a model deleted through another API process goes on
  answering there until its entry expires (``METRO_MODEL_REF_CACHE_SECONDS``, default 5 s).

Both are bounded and thread-safe (sync routes read them from the thread pool).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache

from core.db.base import utcnow
from service.crud.tenants import Principal


class PrincipalCache:
    def __init__(
        self, *, maxsize: int, ttl_seconds: float, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self.enabled = ttl_seconds > 0 and maxsize > 0
        self._entries: TTLCache[str, Principal] = TTLCache(
            maxsize=max(1, maxsize), ttl=max(ttl_seconds, 1e-9), timer=timer
        )
        self._lock = threading.Lock()

    def get(self, key_hash: str) -> Principal | None:
        if not self.enabled:
            return None
        with self._lock:
            principal = self._entries.get(key_hash)
        until = None if principal is None else principal.expires_at
        if until is not None and until <= utcnow():
            return None  # its key expired: it is checked again (and refused)
        return principal

    def put(self, key_hash: str, principal: Principal) -> None:
        # Only valid keys are cached: a flood of wrong keys cannot evict the right ones.
        if self.enabled:
            with self._lock:
                self._entries[key_hash] = principal

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


@dataclass(frozen=True)
class ModelRef:
    """What predicting with a model needs from its row."""

    id: uuid.UUID
    sha256: str
    artifact_uri: str
    # The manifest the row recorded (what GET /v1/models/{id} shows): the model file's own
    # manifest.json must be this one, or predictions would follow an edited file's threshold,
    # labels or classes while the model's page shows the recorded ones.
    manifest: Mapping[str, Any]


class ModelRefCache:
    """Model rows a predict trusts without asking the database, for ``ttl_seconds`` at most: a
    model deleted through another API process answers there that long at most (0: no cache)."""

    def __init__(
        self, maxsize: int, *, ttl_seconds: float, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self.enabled = ttl_seconds > 0
        self._entries: TTLCache[tuple[uuid.UUID, uuid.UUID], ModelRef] = TTLCache(
            maxsize=max(1, maxsize), ttl=max(ttl_seconds, 1e-9), timer=timer
        )
        self._lock = threading.Lock()

    def get(self, tenant_id: uuid.UUID, model_id: uuid.UUID) -> ModelRef | None:
        if not self.enabled:
            return None
        with self._lock:
            return self._entries.get((tenant_id, model_id))

    def put(self, tenant_id: uuid.UUID, ref: ModelRef) -> None:
        if self.enabled:
            with self._lock:
                self._entries[(tenant_id, ref.id)] = ref

    def discard(self, tenant_id: uuid.UUID, model_id: uuid.UUID) -> None:
        """This process forgets a deleted model at once."""
        with self._lock:
            self._entries.pop((tenant_id, model_id), None)
