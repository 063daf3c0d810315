from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.dataset_page import DatasetPage
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    cursor: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    sha256: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    json_limit: int | None | Unset
    if isinstance(limit, Unset):
        json_limit = UNSET
    else:
        json_limit = limit
    params["limit"] = json_limit

    json_sha256: None | str | Unset
    if isinstance(sha256, Unset):
        json_sha256 = UNSET
    else:
        json_sha256 = sha256
    params["sha256"] = json_sha256

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/datasets",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> DatasetPage | Problem | None:
    if response.status_code == 200:
        response_200 = DatasetPage.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[DatasetPage | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    cursor: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    sha256: None | str | Unset = UNSET,
) -> Response[DatasetPage | Problem]:
    """List datasets, newest first

    Args:
        cursor (None | str | Unset): The next_cursor of the previous page
        limit (int | None | Unset): Page size; values above the server's maximum are lowered to it
        sha256 (None | str | Unset): Only uploads of these bytes (their SHA-256, hex): what `metro
            submit --idempotency-key` looks for before uploading a file again

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DatasetPage | Problem]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        limit=limit,
        sha256=sha256,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    cursor: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    sha256: None | str | Unset = UNSET,
) -> DatasetPage | Problem | None:
    """List datasets, newest first

    Args:
        cursor (None | str | Unset): The next_cursor of the previous page
        limit (int | None | Unset): Page size; values above the server's maximum are lowered to it
        sha256 (None | str | Unset): Only uploads of these bytes (their SHA-256, hex): what `metro
            submit --idempotency-key` looks for before uploading a file again

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DatasetPage | Problem
    """

    return sync_detailed(
        client=client,
        cursor=cursor,
        limit=limit,
        sha256=sha256,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    cursor: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    sha256: None | str | Unset = UNSET,
) -> Response[DatasetPage | Problem]:
    """List datasets, newest first

    Args:
        cursor (None | str | Unset): The next_cursor of the previous page
        limit (int | None | Unset): Page size; values above the server's maximum are lowered to it
        sha256 (None | str | Unset): Only uploads of these bytes (their SHA-256, hex): what `metro
            submit --idempotency-key` looks for before uploading a file again

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DatasetPage | Problem]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        limit=limit,
        sha256=sha256,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    cursor: None | str | Unset = UNSET,
    limit: int | None | Unset = UNSET,
    sha256: None | str | Unset = UNSET,
) -> DatasetPage | Problem | None:
    """List datasets, newest first

    Args:
        cursor (None | str | Unset): The next_cursor of the previous page
        limit (int | None | Unset): Page size; values above the server's maximum are lowered to it
        sha256 (None | str | Unset): Only uploads of these bytes (their SHA-256, hex): what `metro
            submit --idempotency-key` looks for before uploading a file again

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DatasetPage | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            cursor=cursor,
            limit=limit,
            sha256=sha256,
        )
    ).parsed
