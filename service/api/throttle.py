"""Failed key checks counted per client address, to slow down guessing API keys.

A client address that sent ``limit`` different unknown, revoked or expired keys within
``window_seconds`` (counted from the first of them) is refused, for what is left of that window,
on every request that carries a key: the key is not even looked up, so guessing costs the server
nothing more and learns nothing. A valid key resets nothing, neither its own address's count (a
client holding one valid key could otherwise interleave it to guess on) nor anyone else's.
Requests without a key are not counted and never refused here: they are a 401 as before, and
/healthz, /readyz and /metrics are outside /v1 and never pass through the check.

The same wrong key sent again counts once: guessing needs a new key each time, while a client
left with a revoked or expired key retries that one key, and behind a shared address (a NAT, a
proxy) counting its retries locked every other client there out, every window, for as long as
it ran. Only the first 8 bytes of each key's SHA-256 are kept, and at most ``limit`` of them.

The counts are this process's memory: with several API processes each counts on its own, so a
client may send ``limit`` wrong keys to each before all refuse it. At most ``max_addresses`` are
remembered; past that the address whose window began first is forgotten. Only the event loop
touches the counts (the key check runs in ASGI middleware), so there is no lock.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from core.config import Settings
from service.security import hash_api_key

SLUG = "too-many-failed-keys"
TITLE = "Too many failed authentications"


class AuthFailureThrottle:
    def __init__(
        self,
        *,
        limit: int,
        window_seconds: float,
        max_addresses: int,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 0:
            raise ValueError(f"limit must be at least 0 (0: no limit), not {limit}")
        if not window_seconds > 0:
            raise ValueError(f"window_seconds must be positive, not {window_seconds}")
        if max_addresses < 1:
            raise ValueError(f"max_addresses must be at least 1, not {max_addresses}")
        self.limit = limit
        self.window_seconds = window_seconds
        self.max_addresses = max_addresses
        self.timer = timer  # tests replace it with a clock of their own
        # address -> (start of its window, the different wrong keys in it, as digests); ordered
        # by window start, oldest first (a new window moves its address to the end), so expired
        # ones are at the front.
        self._failures: OrderedDict[str, tuple[float, set[str]]] = OrderedDict()

    @classmethod
    def from_settings(cls, settings: Settings) -> AuthFailureThrottle:
        return cls(
            limit=settings.auth_failure_limit,
            window_seconds=settings.auth_failure_window_seconds,
            max_addresses=settings.auth_failure_max_addresses,
        )

    def __len__(self) -> int:
        return len(self._failures)

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until ``address`` may send a key again (at least 1), or None when it
        may now."""
        if not self.limit:
            return None
        entry = self._failures.get(address)
        if entry is None:
            return None
        start, keys = entry
        left = start + self.window_seconds - self.timer()
        if len(keys) < self.limit or left <= 0:
            return None
        return max(1, math.ceil(left))

    def failed(self, address: str, key: str) -> bool:
        """Count ``key``, unknown, revoked or expired, from ``address`` (a key already counted
        in the window counts no more); True when this one reached the limit (the address is
        refused from now on until its window ends)."""
        if not self.limit:
            return False
        digest = hash_api_key(key)[:16]  # its first 8 bytes, as the key table's hash has them
        now = self.timer()
        self._forget_expired(now)
        entry = self._failures.get(address)
        if entry is None or now - entry[0] >= self.window_seconds:
            self._failures.pop(address, None)
            while len(self._failures) >= self.max_addresses:
                self._failures.popitem(last=False)
            self._failures[address] = (now, {digest})
            return self.limit == 1
        keys = entry[1]
        if digest in keys or len(keys) >= self.limit:
            return False
        keys.add(digest)
        return len(keys) == self.limit

    def _forget_expired(self, now: float) -> None:
        while self._failures:
            address, (start, _) = next(iter(self._failures.items()))
            if now - start < self.window_seconds:
                return
            del self._failures[address]


def client_address(scope: Mapping[str, Any]) -> str:
    """The address the counts are kept for: the ASGI server's ``client``. Behind a reverse
    proxy that is the proxy's, unless the server was told to trust the proxy's
    ``X-Forwarded-For`` (uvicorn does for 127.0.0.1 and ::1 by default; its
    ``FORWARDED_ALLOW_IPS`` names others); the app itself never reads forwarded headers. No
    client (a Unix socket): one shared entry."""
    client = scope.get("client")
    if isinstance(client, tuple | list) and client:
        return str(client[0])
    return ""
