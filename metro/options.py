"""A configuration setting declared once, on the dataclass field that holds it.

Each field of :class:`metro.search.SearchConfig`, :class:`metro.trainer.TrainingConfig` and
:class:`metro.models.ModelSpec` is an :func:`option`: its default with a description, its
choices and its bounds. The library's own validation (each config's ``__post_init__``) enforces
them with its messages, and every layer above reads them from here rather than copying them: the
service builds its request schema (and so its OpenAPI document and the generated client) from
:func:`options_of`. A test checks that what a field declares is what ``__post_init__`` accepts.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Option",
    "UnknownChoiceError",
    "option",
    "option_of",
    "options_of",
    "parameter_options",
    "shown",
]

_KEY = "metro.option"


@dataclass(frozen=True)
class Option:
    """What a setting is and which values it takes, for whoever documents or checks it.

    ``choices``: the strings it takes (all of its values, or beside a number: ``"auto"``);
    ``ge``/``gt``/``le``/``lt``: bounds of its number; ``min_items``/``max_items`` and
    ``item_ge``/``item_gt``/``item_le``: a list's length and each entry's bounds; ``pattern``:
    the regular expression a free string matches; ``any_case``: a choice is taken in any case
    (a name, as a model's kind: ``"MLP"`` is ``"mlp"``), where other choices are exact.
    """

    description: str
    choices: tuple[str, ...] = ()
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_items: int | None = None
    max_items: int | None = None
    item_ge: float | None = None
    item_gt: float | None = None
    item_le: float | None = None
    pattern: str | None = None
    any_case: bool = False


def option(default: Any, description: str, **limits: Any) -> Any:
    """A dataclass field with ``default`` and its :class:`Option` (``limits``: its other
    fields)."""
    return field(default=default, metadata={_KEY: Option(description=description, **limits)})


def option_of(config: type, name: str) -> Option:
    """The :class:`Option` of one field of a dataclass (ValueError when it declares none), for a
    class whose other fields are not settings (a constraint's metric)."""
    for f in dataclasses.fields(config):
        if f.name == name and isinstance(f.metadata.get(_KEY), Option):
            opt: Option = f.metadata[_KEY]
            return opt
    raise ValueError(f"{config.__name__}.{name} is not declared with metro.options.option")


def parameter_options(function: Callable[..., Any]) -> dict[str, tuple[Option, Any]]:
    """Each keyword parameter of ``function`` (a metric preset's factory): its :class:`Option`,
    declared as ``Annotated[float, Option(...)]``, and its default. ValueError for a parameter
    declared without one."""
    hints = typing.get_type_hints(function, include_extras=True)
    out: dict[str, tuple[Option, Any]] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        declared = [
            m for m in getattr(hints.get(name), "__metadata__", ()) if isinstance(m, Option)
        ]
        if not declared:
            raise ValueError(f"{function.__name__}({name}) is not declared with an Option")
        out[name] = (declared[0], parameter.default)
    return out


def options_of(config: type) -> dict[str, tuple[Option, Any]]:
    """Each field of a config dataclass: its :class:`Option` and default, in field order.
    ValueError for a field declared without :func:`option`."""
    out: dict[str, tuple[Option, Any]] = {}
    for f in dataclasses.fields(config):
        opt = f.metadata.get(_KEY)
        if not isinstance(opt, Option):
            raise ValueError(
                f"{config.__name__}.{f.name} is not declared with metro.options.option"
            )
        out[f.name] = (opt, f.default)
    return out


def shown(value: Any, limit: int = 200) -> str:
    """A value for an error message, cut short: a refused name or list may be a million
    characters long (and is sent back to whoever sent it), and a JSON number such as 1e308 may
    come back from a database as a 309-digit integer."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**16:
        try:
            return f"{value:g}"
        except OverflowError:  # past float64's range
            return f"{'-' if value < 0 else ''}2**{abs(value).bit_length() - 1} or more"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class UnknownChoiceError(ValueError):
    """A name that is none of a setting's choices (a metric preset, a surrogate); ``field`` is
    the setting it was given as, so that a caller can point at it (``metric.preset``)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field
