"""Request dependencies: settings, a database session, and the authenticated tenant.

The rule that keeps the API from locking up under load: **a pooled database connection is only
ever held by code that is running, never by a request waiting for a thread.** Sync dependencies
and sync routes each take a slot of one shared thread pool (40 by default) while the connection
pool is smaller (15). When the key check held a connection in one slot and the route then had to
wait for another slot, 64 clients were enough for every thread to wait for a connection held by a
request that waited for a thread: a deadlock until the pool's timeout.

So here:

* the dependencies are ``async`` (no thread): the session is created without connecting (it
  connects on first use, inside the route's thread) and closed on a limiter of its own, which
  never waits for the shared pool;
* the key check does not use the request's session: it asks a short-lived cache, and on a miss
  looks the key up in one thread call that takes a connection and gives it back before it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

import anyio
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from core.config import Settings
from service.crud.tenants import Principal, authenticate_hash
from service.security import hash_api_key

T = TypeVar("T")

# Closing a session returns its connection (a ROLLBACK on the wire). It must not wait for a slot
# of the shared thread pool, whose threads may all be waiting for that very connection; the
# limiter only bounds the closing threads themselves.
_CLOSE_LIMITER = anyio.CapacityLimiter(64)


async def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_session(request: Request) -> AsyncIterator[Session]:
    session: Session = request.app.state.sessionmaker()  # no connection until first used
    try:
        yield session
    finally:
        if session.in_transaction():
            await anyio.to_thread.run_sync(session.close, limiter=_CLOSE_LIMITER)
        else:  # nothing checked out (or already committed): closing is bookkeeping, no I/O
            session.close()


def _in_own_session(factory: sessionmaker[Session], work: Callable[[Session], T]) -> T:
    with factory() as session:
        return work(session)


async def run_in_session(request: HTTPConnection, work: Callable[[Session], T]) -> T:
    """Run ``work`` in the thread pool with a session of its own, opened and closed in that one
    thread call (for async routes that need the database only on a cache miss)."""
    return await run_in_threadpool(_in_own_session, request.app.state.sessionmaker, work)


KEY_REQUIRED = "an API key is required: Authorization: Bearer <key>"
KEY_NOT_VALID = "the API key is not valid"
# Where a request's scope carries the principal its key was checked for (its "state", which
# request.state reads).
PRINCIPAL_STATE = "principal"


def bearer_key(authorization: str) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` value (the scheme in any case), else None."""
    scheme, _, key = authorization.partition(" ")
    key = key.strip()
    return key if scheme.lower() == "bearer" and key else None


class ApiKeyAuth(HTTPBearer):
    """The key check: the bearer key's principal, from the cache or one database lookup.

    An :class:`HTTPBearer` (so the OpenAPI document declares the same ``HTTPBearer`` security
    scheme) that also does the check, rather than a dependency on one: FastAPI resolves each
    level of dependency per request, and every authenticated request pays for it.

    Lookups are single-flight per key: when a key's cache entry expires under load, the requests
    that carry it wait for one lookup instead of each taking a thread and a connection for the
    same row (with 32 clients, 32 lookups every ``api_key_cache_seconds``).
    """

    def __init__(self) -> None:
        # auto_error=False: a missing key is answered by our own 401 problem, not FastAPI's.
        super().__init__(
            auto_error=False,
            scheme_name="HTTPBearer",
            description="An API key: `Authorization: Bearer <key>`",
        )
        # In-flight lookups by (the app's cache, key hash): one instance serves every app.
        self._lookups: dict[tuple[object, str], asyncio.Future[Principal | None]] = {}

    async def __call__(self, request: HTTPConnection) -> Principal:  # type: ignore[override]
        # The middleware in front of the routes checked the key before the body was read
        # (service.api.middleware.RequireKeyMiddleware) and left the principal it found.
        checked = request.scope.get("state", {}).get(PRINCIPAL_STATE)
        if isinstance(checked, Principal):
            return checked
        challenge = {"WWW-Authenticate": "Bearer"}
        key = bearer_key(request.headers.get("authorization", ""))
        if key is None:
            raise HTTPException(401, KEY_REQUIRED, challenge)
        principal = await self.principal_for(request, key)
        if principal is None:
            raise HTTPException(401, KEY_NOT_VALID, challenge)
        return principal

    async def principal_for(self, request: HTTPConnection, key: str) -> Principal | None:
        """The principal of ``key``, from the cache or one lookup; None: no such live key."""
        key_hash = hash_api_key(key)
        cache = request.app.state.principal_cache
        principal = cache.get(key_hash)
        if principal is None:
            principal = await self._lookup(request, (cache, key_hash))
            if principal is None:
                return None
            cache.put(key_hash, principal)
        return principal

    async def _lookup(self, request: HTTPConnection, slot: tuple[object, str]) -> Principal | None:
        lookup = self._lookups.get(slot)
        if lookup is None or lookup.get_loop() is not asyncio.get_running_loop():
            key_hash = slot[1]
            lookup = asyncio.ensure_future(
                run_in_session(request, lambda s: authenticate_hash(s, key_hash))
            )
            self._lookups[slot] = lookup
            lookup.add_done_callback(lambda done: self._forget(slot, done))
        # shield: a waiter that is cancelled (its client went away) does not cancel the lookup
        # the others wait for.
        return await asyncio.shield(lookup)

    def _forget(self, slot: tuple[object, str], done: asyncio.Future[Principal | None]) -> None:
        if self._lookups.get(slot) is done:
            del self._lookups[slot]
        if not done.cancelled():
            done.exception()  # retrieved: no "never retrieved" warning if every waiter left


get_principal = ApiKeyAuth()


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
