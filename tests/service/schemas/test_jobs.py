"""The request sections of a job and the library's configurations they build: the same settings,
the same choices. A setting added to SearchConfig or TrainingConfig without its request field
(or the other way round) fails here, instead of passing through unvalidated."""

from __future__ import annotations

import typing
from dataclasses import fields

import pytest

from metro.search.config import (
    GUARDS,
    REFINES,
    STRATEGIES,
    THRESHOLDS,
    SearchConfig,
)
from metro.trainer import TrainingConfig
from service.schemas.jobs import SearchIn, TrainingIn


@pytest.mark.parametrize(
    ("schema", "config"), [(SearchIn, SearchConfig), (TrainingIn, TrainingConfig)]
)
def test_a_request_section_names_every_setting_of_its_library_config(schema, config) -> None:
    assert set(schema.model_fields) == {f.name for f in fields(config)}


def _choices(schema: type, name: str) -> set[str]:
    annotation = schema.model_fields[name].annotation
    literals = [a for a in typing.get_args(annotation) if typing.get_origin(a) is typing.Literal]
    return {v for lit in literals for v in typing.get_args(lit)}


@pytest.mark.parametrize(
    ("name", "choices"),
    [("strategy", STRATEGIES), ("threshold", THRESHOLDS), ("refine", REFINES), ("guard", GUARDS)],
)
def test_a_fields_choices_are_the_librarys(name: str, choices: tuple[str, ...]) -> None:
    assert _choices(SearchIn, name) == set(choices)
