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

from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

import anyio
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

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


async def run_in_session(request: Request, work: Callable[[Session], T]) -> T:
    """Run ``work`` in the thread pool with a session of its own, opened and closed in that one
    thread call (for async routes that need the database only on a cache miss)."""
    return await run_in_threadpool(_in_own_session, request.app.state.sessionmaker, work)


# auto_error=False: a missing header is answered by our own 401 problem, not FastAPI's 403.
_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`")


async def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or not credentials.credentials:
        raise HTTPException(401, "an API key is required: Authorization: Bearer <key>", challenge)
    key_hash = hash_api_key(credentials.credentials)
    cache = request.app.state.principal_cache
    principal = cache.get(key_hash)
    if principal is None:
        principal = await run_in_session(request, lambda s: authenticate_hash(s, key_hash))
        if principal is None:
            raise HTTPException(401, "the API key is not valid", challenge)
        cache.put(key_hash, principal)
    return principal


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
