"""A job spec from the command line: a JSON or YAML job file, the flags and ``--set`` paths on
top of it, checked against the generated client's models (the API's shape) before anything is
sent. What the shape cannot tell (a known metric, a bound in its metric's range) the server
checks when the job is submitted."""

from __future__ import annotations

import difflib
import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import typer

from metro_cli.errors import CliError


def scalar(text: str) -> Any:
    """A command-line value as JSON when it parses (numbers, true, null, lists), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@cache
def _yaml_loader() -> type[Any]:
    """PyYAML's safe loader, also reading ``1e-5`` as a number, as YAML 1.2 and JSON do (YAML
    1.1, which PyYAML follows, wants ``1.0e-5``: ``tol: 1e-5`` was the string "1e-5")."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."),
    )
    return Loader


def read_job_file(path: str) -> dict[str, Any]:
    """The job file's object (``-``: standard input); JSON for a ``.json`` name, else YAML."""
    import yaml

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read the job file {path}: {exc.strerror or exc}") from None
    try:
        spec = json.loads(text) if path.endswith(".json") else yaml.load(text, _yaml_loader())
    except (ValueError, yaml.YAMLError) as exc:
        raise CliError(f"the job file {path} is not valid JSON/YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise CliError(f"the job file {path} must hold an object (a mapping of fields)")
    return spec


def set_path(spec: dict[str, Any], dotted: str, value: Any) -> None:
    """``spec[a][b][c] = value`` for ``a.b.c``, making the objects on the way."""
    keys = dotted.split(".")
    node = spec
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise CliError(f"--set {dotted}: {key!r} is not an object in the job")
        node = child
    node[keys[-1]] = value


def constraint_flag(item: str, sense: str) -> dict[str, Any]:
    """The job's constraint for ``--at-least`` / ``--at-most METRIC[(PARAM=VALUE,...)]=BOUND
    [@CONFIDENCE]`` (e.g. ``precision=0.7@0.9``: the floor must hold with 90% confidence on new
    data; ``precision(zero_division=1)=0.7``: flagging nothing meets it, written as the
    constraint's name is shown); a value that is not of that form is a usage error naming the
    option. Whether the metric and its parameters are known, the bound in its range and the
    confidence in [0.5, 1), the server says when the job is submitted."""
    option = "--at-least" if sense == "at_least" else "--at-most"
    match = _CONSTRAINT_FLAG.fullmatch(item)
    if (
        match is None
        or not match["bound"].strip()
        or (match["confidence"] is not None and not match["confidence"].strip())
    ):
        raise typer.BadParameter(
            f"{item!r} is not METRIC=BOUND, METRIC=BOUND@CONFIDENCE or METRIC(PARAM=VALUE)=BOUND "
            f"(e.g. {option} recall=0.9, recall=0.9@0.95 or precision(zero_division=1)=0.7)"
        )
    out: dict[str, Any] = {"metric": match["metric"]}
    if match["params"] is not None:
        out["params"] = _constraint_params(item, match["params"])
    out[sense] = _finite(item, "bound", match["bound"])
    if match["confidence"] is not None:
        out["confidence"] = _finite(item, "confidence", match["confidence"])
    return out


# METRIC[(PARAM=VALUE,...)]=BOUND[@CONFIDENCE], the form a constraint's name is shown in.
_CONSTRAINT_FLAG = re.compile(
    r"\s*(?P<metric>[^=()@\s]+)\s*(?:\((?P<params>[^()]*)\))?\s*="
    r"(?P<bound>[^@]*)(?:@(?P<confidence>.*))?"
)


def _constraint_params(item: str, text: str) -> dict[str, float]:
    """``zero_division=1, beta=2`` as {name: number}; anything else is a usage error."""
    params: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise typer.BadParameter(
                f"{item!r}: the parameter {part.strip()!r} is not NAME=NUMBER "
                "(e.g. precision(zero_division=1)=0.7)"
            )
        params[name.strip()] = _finite(item, f"parameter {name.strip()!r}", value)
    return params


def _finite(item: str, what: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{item!r}: the {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{item!r}: the {what} {text!r} is not a finite number")
    return value


def check_constraint_flags(sense: str) -> Callable[[list[str] | None], list[str] | None]:
    """The option callback that checks each ``--at-least`` / ``--at-most`` as it is parsed."""

    def check(values: list[str] | None) -> list[str] | None:
        for item in values or []:
            constraint_flag(item, sense)
        return values

    return check


def spec_from_command_line(
    spec: dict[str, Any],
    flags: Mapping[str, Any],
    sets: list[str],
    at_least: list[str],
    at_most: list[str],
) -> dict[str, Any]:
    """``spec`` (a job file's, or empty) with the command line on top, in this order:
    ``metric.preset`` (a preset's name, replacing the file's metric), the flags given, by dotted
    path (a None among them is an explicit null: ``--cv null``), each ``--set FIELD=VALUE``,
    then the flags' constraints after the file's."""
    preset = flags.get("metric.preset")
    if preset is not None:
        spec["metric"] = {"preset": str(preset).lower()}  # the server ignores case
    for dotted, value in flags.items():
        if dotted != "metric.preset":
            set_path(spec, dotted, value)
    given_sets: dict[str, Any] = {}
    for item in sets:
        field, sep, value = item.partition("=")
        if not sep or not field:
            raise CliError(f"--set {item!r}: expected FIELD=VALUE")
        path, parsed = field.strip(), scalar(value)
        # One field given twice on the command line, two ways or twice, with two values: the
        # last one won without a word (--set metric.w_fn=20 --w-fn 5 trained with 20).
        for name, earlier in (("its flag", flags), ("--set", given_sets)):
            if path in earlier and path != "metric.preset" and earlier[path] != parsed:
                raise CliError(
                    f"--set {item!r} and {name} give {path} two values "
                    f"({earlier[path]!r} and {parsed!r}): give it once"
                )
        given_sets[path] = parsed
        set_path(spec, path, parsed)
    flagged = [constraint_flag(v, "at_least") for v in at_least]
    flagged += [constraint_flag(v, "at_most") for v in at_most]
    if flagged:
        given = spec.setdefault("constraints", [])
        if not isinstance(given, list):
            raise CliError(f"job field 'constraints' must be a list, not {given!r}")
        given.extend(flagged)
    return spec


def unknown_fields(spec: Any) -> list[str]:
    """The fields of a job spec the API's document does not have, each by its path
    (``constraints[1].confidenc``), in lists and unions too: the generated models refuse them
    naming only their class, and once dropped them without a word."""
    from metro_cli.spec_flags import _document

    schemas = _document()["components"]["schemas"]
    return _unknown(spec, schemas["JobCreate"], schemas, "")


def _resolved(schema: Any, schemas: Mapping[str, Any]) -> dict[str, Any]:
    """``schema``, or the named schema it refers to."""
    ref = str(schema.get("$ref", "")) if isinstance(schema, Mapping) else ""
    named = schemas.get(ref.rsplit("/", 1)[-1]) if ref.startswith("#/components/") else schema
    return dict(named) if isinstance(named, Mapping) else {}


def _members(schema: Any, schemas: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The forms a value of ``schema`` takes (a union's members, else the schema itself)."""
    whole = _resolved(schema, schemas)
    # An object's own oneOf only says which of its fields go together (a constraint's at_least
    # or at_most): its members are the object's alternatives, not other types.
    forms = None if "properties" in whole else whole.get("anyOf") or whole.get("oneOf")
    return [_resolved(m, schemas) for m in forms or [whole]]


def _object_member(value: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The union's member whose required fields are all given (as the server's discriminator
    picks a metric's form by them), then the one that knows the most of the fields given."""
    objects = [m for m in members if "properties" in m]
    if not objects:
        return None
    return max(
        objects,
        key=lambda m: (
            all(key in value for key in m.get("required", [])),
            sum(key in m["properties"] for key in value),
        ),
    )


def _unknown(value: Any, schema: Any, schemas: Mapping[str, Any], path: str) -> list[str]:
    members = _members(schema, schemas)
    if isinstance(value, list):
        items = next((m["items"] for m in members if m.get("type") == "array"), None)
        return [
            lost
            for index, item in enumerate(value)
            for lost in _unknown(item, items, schemas, f"{path.removesuffix('.')}[{index}].")
        ] if items is not None else []  # fmt: skip
    member = _object_member(value, members) if isinstance(value, dict) else None
    if member is None:
        return []
    known = member["properties"]
    lost = []
    for key, item in value.items():
        if key in known:
            lost += _unknown(item, known[key], schemas, f"{path}{key}.")
        elif member.get("additionalProperties") is False:
            lost.append(f"{path}{key}{_did_you_mean(key, known)}")
    return lost


def _did_you_mean(key: str, known: Mapping[str, Any]) -> str:
    """The field a misspelt one most likely meant, among those of its object (``serach``:
    search), as the server says a misnamed column."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def server_spelling(spec: Any) -> Any:
    """``spec`` with each name the server reads in other spellings (the document's x-any-case
    and x-aliases: a preset "F1", a surrogate "Rho-Margin", a model "MLP", a constraint's
    "Specificity") written as the server stores it, so that the flags' choices check them as
    the server does. The document says which: no field is named here."""
    from metro_cli.spec_flags import _document

    schemas = _document()["components"]["schemas"]
    return _spelled(spec, schemas["JobCreate"], schemas)


def _spelled(value: Any, schema: Any, schemas: Mapping[str, Any]) -> Any:
    members = _members(schema, schemas)
    if isinstance(value, list):
        items = next((m["items"] for m in members if m.get("type") == "array"), None)
        return value if items is None else [_spelled(v, items, schemas) for v in value]
    if isinstance(value, dict):
        member = _object_member(value, members)
        if member is None:
            return value
        known = member["properties"]
        return {k: _spelled(v, known[k], schemas) if k in known else v for k, v in value.items()}
    if not isinstance(value, str):
        return value
    for member in members:
        choices = member.get("enum") or ()
        if value in choices or not ("x-any-case" in member or "x-aliases" in member):
            continue
        name = value.lower() if member.get("x-any-case") else value
        name = dict(member.get("x-aliases") or {}).get(name, name)
        if name in choices:
            return name
    return value


def _check_constraints(constraints: Any) -> None:
    """Each constraint in the API's shape, or an error naming it (the generated model's own,
    raised from inside a union, names neither the constraint nor what is wrong)."""
    from metro_client import models
    from metro_client.models.constraint_preset import CONSTRAINT_PRESET_VALUES

    if constraints is None:
        return
    if not isinstance(constraints, list):
        raise CliError(f"job field 'constraints' must be a list, not {constraints!r}")
    for index, constraint in enumerate(constraints):
        where = f"job field 'constraints[{index}]'"
        if not isinstance(constraint, dict):
            raise CliError(f"{where} must be an object, not {constraint!r}")
        metric = constraint.get("metric")
        if isinstance(metric, str) and metric not in CONSTRAINT_PRESET_VALUES:
            raise CliError(
                f"{where}: unknown metric {metric!r}; a constraint's metric is one of "
                f"{', '.join(sorted(CONSTRAINT_PRESET_VALUES))}, or an object with alpha and beta"
            )
        try:
            models.ConstraintSpec.from_dict(constraint)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CliError(f"{where}: {str(exc) or type(exc).__name__}") from None


def _check_choices(spec: dict[str, Any]) -> None:
    """Each field with choices (a flag's, from the API's document) against them, naming the
    field and its choices in the document's order: the generated models' checks name only the
    section (or nothing, for a list such as baselines), their choices in set order."""
    from metro_cli.spec_flags import spec_flags

    for flag in spec_flags():
        if not flag.choices:
            continue
        node: Any = spec
        for key in flag.path.split("."):
            node = node.get(key, _MISSING) if isinstance(node, dict) else _MISSING
        values = node if flag.kind == "choices" and isinstance(node, list) else [node]
        for value in values:
            if isinstance(value, str) and value not in flag.choices:
                raise CliError(
                    f"job field '{flag.path}': {value!r} is not one of {', '.join(flag.choices)}"
                )


_MISSING = object()


def build_job(spec: dict[str, Any]) -> Any:
    """The generated ``JobCreate`` for a job spec, refusing fields the API does not know (the
    generated models would silently drop them)."""
    from metro_client import models

    for required in ("metric", "dataset"):
        if required not in spec:
            raise CliError(f"the job has no {required}: give --{required} or a job file with one")
    sections: dict[str, Any] = {
        "dataset": models.DatasetRef, "surrogate": models.SurrogateSpec,
        "model": models.ModelSpec, "search": models.SearchSpec, "training": models.TrainingSpec,
    }  # fmt: skip
    failures = (KeyError, TypeError, ValueError, AttributeError)
    for key in ("metric", *sections):
        if key in spec and not isinstance(spec[key], dict):
            raise CliError(f"job field {key!r} must be an object, not {spec[key]!r}")
    keys = spec["metric"].keys()
    if "preset" in keys:  # the form the API's discriminator picks (service.schemas.jobs)
        sections["metric"] = models.PresetMetric
    elif {"alpha", "beta"} <= keys:
        sections["metric"] = models.CoefficientMetric
    elif {"numerator", "denominator"} <= keys:
        sections["metric"] = models.ConfusionMetric
    else:
        raise CliError(
            "job field 'metric' needs 'preset', or 'alpha' and 'beta', or 'numerator' and "
            "'denominator'"
        )
    lost = unknown_fields(spec)
    if lost:
        raise CliError(f"unknown field(s) in the job: {', '.join(lost)}")
    spec.update(server_spelling(spec))
    _check_choices(spec)
    for key, section in sections.items():  # first section by section, to name the culprit
        try:
            if key in spec:
                section.from_dict(spec[key])
        except failures as exc:
            raise CliError(f"job field {key!r}: {str(exc) or type(exc).__name__}") from None
    _check_constraints(spec.get("constraints"))
    try:
        return models.JobCreate.from_dict(spec)
    except failures as exc:
        raise CliError(
            f"the job does not have the API's shape: {str(exc) or type(exc).__name__}"
        ) from None
