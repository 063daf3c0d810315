"""Request sections built from the library's configurations (:mod:`metro.options`).

A job's ``search`` and ``training`` sections are not written here field by field: each field of
:class:`metro.search.SearchConfig` and :class:`metro.trainer.TrainingConfig` becomes a field of
the section, with the library's type, default, description, choices and bounds. So a setting added
to the library appears in the API, its OpenAPI document and the generated client without a copy,
and the two cannot disagree (tests/service/schemas/test_options.py).

The library still validates what it is given (with its own messages); the schema refuses the
same values as they are parsed, and says in the OpenAPI document what it takes.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from metro.options import Option, options_of

__all__ = ["parameter_fields", "request_section", "request_type"]


def request_type(annotation: Any, opt: Option) -> Any:
    """The pydantic type of a config field: a string with choices becomes their Literal, a
    tuple a JSON array (with its length and entries bounded), a number carries its bounds."""
    members = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    out: list[Any] = []
    for member in members:
        if member is type(None):
            out.append(type(None))
        elif member is str and opt.choices and opt.any_case:
            # x-any-case: the document says so, for a client that checks names against the enum
            any_case = Field(json_schema_extra={"x-any-case": True})
            out.append(Annotated[Literal[opt.choices], BeforeValidator(_lower), any_case])
        elif member is str and opt.choices:
            out.append(Literal[opt.choices])
        elif member is str:
            out.append(Annotated[str, Field(pattern=opt.pattern)] if opt.pattern else str)
        elif member is int:
            out.append(Annotated[int, Field(ge=opt.ge, gt=opt.gt, le=opt.le, lt=opt.lt)])
        elif member is float:
            # NaN fails every bound: without allow_inf_nan its message was the bound's
            # ("less than or equal to 1000"), not "a finite number".
            bounds = Field(ge=opt.ge, gt=opt.gt, le=opt.le, lt=opt.lt, allow_inf_nan=False)
            out.append(Annotated[float, bounds])
        elif member is bool:
            out.append(bool)
        elif typing.get_origin(member) is tuple:
            item: Any = typing.get_args(member)[0]
            bounds = Field(ge=opt.item_ge, gt=opt.item_gt, le=opt.item_le)
            if item is float:
                bounds = Field(ge=opt.item_ge, gt=opt.item_gt, le=opt.item_le, allow_inf_nan=False)
            entry: Any = Annotated[item, bounds]
            listed: Any = list[entry]
            out.append(Annotated[listed, Field(min_length=opt.min_items, max_length=opt.max_items)])
        else:  # a new kind of setting: decide here how the API takes it
            raise TypeError(f"no request type for a setting of type {member!r}")
    result = out[0]
    for member in out[1:]:
        result = result | member
    return result


def _lower(value: Any) -> Any:
    """A choice the library takes in any case (:attr:`metro.options.Option.any_case`)."""
    return value.lower() if isinstance(value, str) else value


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _json_default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def request_section(name: str, config: type, description: str) -> type[BaseModel]:
    """A pydantic model named ``name`` with one field per setting of ``config``. Fields left out
    take the library's defaults (the schema shows them); unknown fields are refused."""
    hints = typing.get_type_hints(config)
    fields: dict[str, Any] = {}
    for field_name, (opt, default) in options_of(config).items():
        fields[field_name] = (
            request_type(hints[field_name], opt),
            Field(default=_json_default(default), description=opt.description),
        )
    model: type[BaseModel] = create_model(
        name,
        __config__=ConfigDict(extra="forbid", strict=True),
        __doc__=description,
        __module__=__name__,
        **fields,
    )
    return model


def _without_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def parameter_fields(
    parameters: dict[str, tuple[Option, Any]], *, required_by_service: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``create_model`` fields for a preset's or a surrogate's parameters, as the library
    declares them (:func:`metro.metrics.preset_options`,
    :func:`metro.surrogates.surrogate_options`).

    A parameter left out is not sent on to the library, which applies its default (so the
    normalized spec, and its hash, hold only what the client gave): the field defaults to None,
    which is not a value the client may send, and its description states the library's default.
    ``required_by_service``: parameters whose default the service does not apply (it asks for
    them instead), described without one.
    """
    fields: dict[str, Any] = {}
    for name, (opt, default) in parameters.items():
        described = opt.description
        if name not in required_by_service and default is not inspect.Parameter.empty:
            described += f". Default: {default:g}"
        fields[name] = (
            request_type(float, opt),
            Field(default=None, description=described, json_schema_extra=_without_default),
        )
    return fields
