"""The job's search and training sections are the library's configurations: the same settings,
defaults, descriptions, choices and bounds, read from one declaration (metro.options). Each test
would fail if the request schema and the library came to disagree."""

from __future__ import annotations

import math
import re
from dataclasses import fields
from typing import Any

import pytest
from pydantic import ValidationError

from metro.models import ModelSpec
from metro.options import Option, option, options_of
from metro.search.config import SearchConfig
from metro.trainer import TrainingConfig
from service.schemas.jobs import ModelIn, SearchIn, TrainingIn

SECTIONS = [(SearchIn, SearchConfig), (TrainingIn, TrainingConfig), (ModelIn, ModelSpec)]


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize(("schema", "config"), SECTIONS)
def test_the_openapi_section_shows_every_setting_with_the_librarys_default(schema, config):
    document = schema.model_json_schema()
    assert list(document["properties"]) == [f.name for f in fields(config)]
    assert document["additionalProperties"] is False
    defaults = config()
    for name, (opt, _) in options_of(config).items():
        prop = document["properties"][name]
        assert prop["default"] == _json(getattr(defaults, name)), name
        assert prop["description"] == opt.description, name


def _library_accepts(config: type, name: str, value: Any) -> bool:
    try:
        config(**{name: value})
    except ValueError:
        return False
    return True


def _schema_accepts(schema: type, name: str, value: Any) -> bool:
    try:
        schema.model_validate({name: value})
    except ValidationError:
        return False
    return True


def _probes(opt: Option, default: Any) -> list[Any]:
    """Values at and just past each declared limit, each choice, and a string no choice is."""
    values: list[Any] = []
    number = default if isinstance(default, int | float) and not isinstance(default, bool) else 0.5
    integer = isinstance(number, int)
    for bound in (opt.ge, opt.gt, opt.le, opt.lt):
        if bound is None:
            continue
        if integer:
            values += [int(bound), int(bound) - 1, int(bound) + 1]
        else:
            values += [float(bound), math.nextafter(float(bound), -math.inf) if bound else -1e-9]
            values += [math.nextafter(float(bound), math.inf) if bound else 1e-9]
    values += list(opt.choices) + (["no-such-choice"] if opt.choices else [])
    if isinstance(default, tuple):
        item = default[0]
        values += [(), default * 50]
        for bound in (opt.item_ge, opt.item_gt, opt.item_le):
            if bound is not None:
                values += [(float(bound),), (float(bound) - 1e-9,), (float(bound) + 1e-9,)]
        values += [(item,) * (opt.max_items or 1), (item,) * ((opt.max_items or 1) + 1)]
    if opt.pattern:
        values += ["cpu", "cuda:1", "gpu", "cuda:x"]
    return values


@pytest.mark.parametrize(("schema", "config"), SECTIONS)
def test_the_schema_takes_exactly_the_values_the_library_takes(schema, config):
    checked = 0
    for name, (opt, default) in options_of(config).items():
        for value in _probes(opt, default):
            library = _library_accepts(config, name, value)
            api = _schema_accepts(schema, name, list(value) if isinstance(value, tuple) else value)
            assert library == api, (name, value, library, api)
            checked += 1
    assert checked > 2 * len(options_of(config))  # every setting probed, most several times


def test_strings_for_numbers_and_floats_for_integers_are_refused_with_the_field_named():
    with pytest.raises(ValidationError) as caught:
        SearchIn.model_validate({"n_lambdas": "7", "max_steps": 7.0})
    assert {e["loc"][0] for e in caught.value.errors()} == {"n_lambdas", "max_steps"}
    with pytest.raises(ValidationError, match=r"extra_forbidden|Extra inputs"):
        TrainingIn.model_validate({"learning_rate": 0.1})


def test_a_config_field_without_its_option_is_refused():
    from dataclasses import dataclass, field

    @dataclass(frozen=True)
    class Partial:
        declared: int = option(1, "declared once")
        bare: int = field(default=2)

    with pytest.raises(ValueError, match=re.escape("Partial.bare is not declared")):
        options_of(Partial)
