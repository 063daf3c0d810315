"""Request dependencies: settings, a database session, and the authenticated tenant."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from service.config import Settings
from service.crud.tenants import Principal, authenticate


def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


# auto_error=False: a missing header is answered by our own 401 problem, not FastAPI's 403.
_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`")


def get_principal(
    session: Annotated[Session, Depends(get_session)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or not credentials.credentials:
        raise HTTPException(401, "an API key is required: Authorization: Bearer <key>", challenge)
    principal = authenticate(session, credentials.credentials)
    if principal is None:
        raise HTTPException(401, "the API key is not valid", challenge)
    return principal


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
