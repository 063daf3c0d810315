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
    values += [c.upper() for c in opt.choices] + [c.title() for c in opt.choices]  # any_case
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


# -- the metric presets' and surrogates' parameters, and a constraint's confidence -------------


def _preset_params() -> list[tuple[str, str, Option, Any]]:
    from metro.metrics import PRESET_NAMES, preset_options

    return [
        (preset, name, opt, default)
        for preset in PRESET_NAMES
        for name, (opt, default) in preset_options(preset).items()
    ]


def _surrogate_params() -> list[tuple[str, str, Option, Any]]:
    from metro.surrogates import SURROGATES, surrogate_options

    return [
        (surrogate, name, opt, default)
        for surrogate in SURROGATES
        for name, (opt, default) in surrogate_options(surrogate).items()
    ]


def test_the_metric_and_surrogate_sections_are_the_librarys_names_and_parameters():
    from metro.metrics import PRESET_NAMES
    from metro.surrogates import SURROGATES
    from service.schemas.jobs import PresetMetric, PresetParams, SurrogateIn

    preset = PresetMetric.model_json_schema()
    assert preset["properties"]["preset"]["enum"] == list(PRESET_NAMES)
    # the preset, how it is averaged over classes (metro.multiclass), and its parameters
    assert set(preset["properties"]) == {"preset", "average"} | {p[1] for p in _preset_params()}
    assert PresetParams.model_json_schema()["properties"] == {
        k: v for k, v in preset["properties"].items() if k not in ("preset", "average")
    }
    surrogate = SurrogateIn.model_json_schema()
    assert surrogate["properties"]["name"]["enum"] == list(SURROGATES)
    assert set(surrogate["properties"]) == {"name"} | {p[1] for p in _surrogate_params()}
    for schema, params in ((preset, _preset_params()), (surrogate, _surrogate_params())):
        assert schema["additionalProperties"] is False  # unknown keys: the library's 422
        for _, name, opt, default in params:
            prop = schema["properties"][name]
            assert prop["description"].startswith(opt.description), name
            assert "default" not in prop, name  # left out: the library's default applies
            if name != "beta":  # f_beta's beta must be given (service.job_spec)
                assert prop["description"].endswith(f"Default: {default:g}"), name


@pytest.mark.parametrize(
    ("owner", "name", "opt", "default"),
    [*_preset_params(), *_surrogate_params()],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_parameter_takes_exactly_the_values_the_library_takes(owner, name, opt, default):
    from metro.metrics import get_metric
    from metro.surrogates import SURROGATES, get_surrogate
    from service.schemas.jobs import PresetMetric, SurrogateIn

    given: dict[str, float] = {}
    if owner in SURROGATES:
        schema, key = SurrogateIn, "name"

        def build(value: Any) -> Any:
            return get_surrogate(owner, **{name: value})
    else:
        schema, key = PresetMetric, "preset"

        # f_beta's other parameters beside its beta, which both refuse without (its own check)
        given = {"beta": 2.0} if owner == "f_beta" and name != "beta" else {}

        def build(value: Any) -> Any:
            return get_metric(owner, **given, **{name: value})

    probes = [*_probes(opt, default), default, -math.inf, math.nan]
    assert len(probes) > 4
    for value in probes:
        try:
            build(value)
            library = True
        except ValueError:
            library = False
        try:
            schema.model_validate({key: owner, **given, name: value})
            accepted = math.isfinite(value)  # the API refuses NaN and infinities up front
        except ValidationError:
            accepted = False
        assert accepted == library, (owner, name, value)


def test_a_constraints_confidence_is_the_librarys():
    from metro.constraints import Constraint
    from metro.metrics import recall
    from metro.options import option_of
    from service.schemas.jobs import ConstraintIn

    opt = option_of(Constraint, "confidence")
    prop = ConstraintIn.model_json_schema()["properties"]["confidence"]
    assert prop["description"] == opt.description
    for value in (0.5, 0.49999, 0.9, 0.999999, 1.0, 1.2, None):
        try:
            Constraint(recall(), "at_least", 0.8, confidence=value)
            library = True
        except ValueError:
            library = False
        try:
            ConstraintIn.model_validate({"metric": "recall", "at_least": 0.8, "confidence": value})
            schema = True
        except ValidationError:
            schema = False
        assert schema == library, value


def test_the_coefficient_forms_are_the_librarys_metric_spec_fields():
    import dataclasses

    from metro.metrics import MetricSpec
    from metro.options import option_of
    from service.schemas.jobs import CoefficientMetric, ConfusionMetric, ConstraintMetricIn

    defaults = {f.name: f.default for f in dataclasses.fields(MetricSpec)}
    for form in (CoefficientMetric, ConfusionMetric, ConstraintMetricIn):
        props = form.model_json_schema()["properties"]
        for name in ("name", "greater_is_better", "zero_division"):
            assert props[name]["description"] == option_of(MetricSpec, name).description
        assert props["zero_division"]["default"] == defaults["zero_division"]
    # cells read as a score by default, as MetricSpec.from_confusion does
    assert ConfusionMetric.model_json_schema()["properties"]["greater_is_better"]["default"]
    from metro.metrics import precision

    valid = precision()  # a well-formed ratio, so that only zero_division decides
    alpha, beta = valid.alpha.tolist(), valid.beta.tolist()
    opt = option_of(MetricSpec, "zero_division")
    for value in _probes(opt, 0.0):
        try:
            MetricSpec(alpha=alpha, beta=beta, zero_division=value)
            library = True
        except ValueError:
            library = False
        try:
            CoefficientMetric.model_validate({"alpha": alpha, "beta": beta, "zero_division": value})
            schema = True
        except ValidationError:
            schema = False
        assert schema == library, value
