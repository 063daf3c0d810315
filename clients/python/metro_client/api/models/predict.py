from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.predict_request import PredictRequest
from ...models.predict_response import PredictResponse
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    model_id: UUID,
    *,
    body: PredictRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/models/{model_id}/predict".format(
            model_id=quote(str(model_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PredictResponse | Problem | None:
    if response.status_code == 200:
        response_200 = PredictResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

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
) -> Response[PredictResponse | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    model_id: UUID,
    *,
    client: AuthenticatedClient,
    body: PredictRequest,
) -> Response[PredictResponse | Problem]:
    """Score rows

     Rows are checked (count, width, names, finite values) before scoring. Loaded models are
    cached per process, keyed by model id and weights digest.

    Args:
        model_id (UUID):
        body (PredictRequest): Either ``instances`` (rows in the model's feature order) or
            ``columns`` + ``data`` (rows
            whose values are reordered by name to the model's features).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PredictResponse | Problem]
    """

    kwargs = _get_kwargs(
        model_id=model_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    model_id: UUID,
    *,
    client: AuthenticatedClient,
    body: PredictRequest,
) -> PredictResponse | Problem | None:
    """Score rows

     Rows are checked (count, width, names, finite values) before scoring. Loaded models are
    cached per process, keyed by model id and weights digest.

    Args:
        model_id (UUID):
        body (PredictRequest): Either ``instances`` (rows in the model's feature order) or
            ``columns`` + ``data`` (rows
            whose values are reordered by name to the model's features).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PredictResponse | Problem
    """

    return sync_detailed(
        model_id=model_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    model_id: UUID,
    *,
    client: AuthenticatedClient,
    body: PredictRequest,
) -> Response[PredictResponse | Problem]:
    """Score rows

     Rows are checked (count, width, names, finite values) before scoring. Loaded models are
    cached per process, keyed by model id and weights digest.

    Args:
        model_id (UUID):
        body (PredictRequest): Either ``instances`` (rows in the model's feature order) or
            ``columns`` + ``data`` (rows
            whose values are reordered by name to the model's features).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PredictResponse | Problem]
    """

    kwargs = _get_kwargs(
        model_id=model_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    model_id: UUID,
    *,
    client: AuthenticatedClient,
    body: PredictRequest,
) -> PredictResponse | Problem | None:
    """Score rows

     Rows are checked (count, width, names, finite values) before scoring. Loaded models are
    cached per process, keyed by model id and weights digest.

    Args:
        model_id (UUID):
        body (PredictRequest): Either ``instances`` (rows in the model's feature order) or
            ``columns`` + ``data`` (rows
            whose values are reordered by name to the model's features).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PredictResponse | Problem
    """

    return (
        await asyncio_detailed(
            model_id=model_id,
            client=client,
            body=body,
        )
    ).parsed
