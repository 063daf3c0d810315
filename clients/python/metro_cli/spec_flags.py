"""The job flags of ``metro submit``, built from the API's OpenAPI document.

Every setting of a job is declared once, in the ``metro`` library; the server publishes it in its
OpenAPI document, and the generated client carries that document (``metro_client/openapi.json``).
Each field of the metric preset, the surrogate, the model, the search and the training sections,
and the job's repeats and baselines, becomes a flag here with the document's type, choices,
bounds, default and description: ``--n-lambdas``, ``--refine``, ``--epochs``, ``--hidden``... A
setting the library gains is a flag of the next client with no line written for it.

A flag's name is its field's, dashed (``n_lambdas``: ``--n-lambdas``), or ``--section-field``
where two sections share a field name; :data:`FLAG_NAMES` renames the few that name their section
(``--metric``, ``--model``, ``--surrogate``). Values are checked as they are parsed (a choice, a
number in its bounds); what the document cannot say, the server checks at submission.
"""

from __future__ import annotations

import enum
import inspect
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal

import typer

from metro_cli.errors import CliError

__all__ = ["FLAG_NAMES", "FlagKind", "SpecFlag", "spec_flags", "spec_values", "with_spec_flags"]

# (the job's section, its schema in the document, the help panel its flags are listed under);
# "" is the job itself, whose own settings (repeats, baselines) are taken where a flag can hold
# them (not the sections, the dataset, whose flags upload a local file, or the constraints).
SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("metric", "PresetMetric", "Metric"),
    ("surrogate", "SurrogateIn", "Surrogate"),
    ("model", "ModelIn", "Model"),
    ("search", "SearchIn", "Search"),
    ("training", "TrainingIn", "Training"),
    ("", "JobCreate", "Job"),
)
# Flags named for their section rather than their field; a repeatable list in the singular.
FLAG_NAMES: dict[str, tuple[str, ...]] = {
    "metric.preset": ("--metric", "-m"),
    "surrogate.name": ("--surrogate",),
    "model.kind": ("--model",),
    "baselines": ("--baseline",),
}
# How a flag's text becomes the job's value: a number, a boolean pair, free text, one of the
# document's choices, JSON (a union such as cv's folds, "auto" or null), a list of numbers, or a
# repeatable choice.
FlagKind = Literal["int", "float", "bool", "text", "choice", "json", "list", "choices"]
# The python name of a flag's parameter: never one of the command's own.
_PARAM_PREFIX = "spec__"


@dataclass(frozen=True)
class UnionMember:
    """One type a union field takes: ``kind`` a JSON type, with a number's inclusive bounds or
    a string's constant."""

    kind: str
    low: float | None = None
    high: float | None = None
    const: str | None = None

    def admits(self, value: Any) -> bool:
        if self.kind == "null":
            return value is None
        if self.kind == "string":
            return isinstance(value, str) and (self.const is None or value == self.const)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "integer" and not isinstance(value, int):
            return False  # 2.0 is not an integer to the server (strict types)
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def text(self) -> str:
        if self.kind == "null":
            return "null"
        if self.kind == "string":
            return repr(self.const) if self.const is not None else "a text"
        what = "an integer" if self.kind == "integer" else "a number"
        if self.low is not None and self.high is not None:
            return f"{what} from {self.low:g} to {self.high:g}"
        return what


def _shown(number: float) -> str:
    """A number as given, short where that is exact: -1000001 past a bound of -1e+06 was
    shown as -1e+06 (six significant digits), the bound itself."""
    short = format(number, "g")
    if float(short) == number:
        return short
    return str(int(number)) if float(number).is_integer() else repr(number)


def _union(schema: Mapping[str, Any]) -> tuple[UnionMember, ...]:
    """A union property's members, or () where a member is one no flag can check."""
    out = []
    for member in schema.get("anyOf", ()):
        kind = member.get("type")
        # An exclusive bound is the open-bounds check's (an exclusiveMinimum of 0 is falsy).
        exclusive = "exclusiveMinimum" in member or "exclusiveMaximum" in member
        if kind not in ("integer", "number", "string", "null") or exclusive:
            return ()
        const = member.get("const", (member.get("enum") or [None])[0])
        out.append(UnionMember(kind, member.get("minimum"), member.get("maximum"), const))
    return tuple(out)


@dataclass(frozen=True)
class SpecFlag:
    """One job field as a flag: ``path`` its dotted place in the job, ``decls`` its names,
    ``kind`` how its text becomes a value (int, float, bool, text, choice, json, list,
    choices)."""

    path: str
    decls: tuple[str, ...]
    kind: FlagKind
    help: str
    panel: str
    choices: tuple[str, ...] = ()
    default_text: str | None = None
    # A number's bounds, each inclusive or not as the document says (the server refuses an
    # exclusive bound's very edge); None: unbounded on that side.
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    # A number that may also be null (refine_signal: null, no check): given as `null`.
    nullable: bool = False
    # Other names the server reads as one of the choices: (alias, choice) pairs.
    aliases: tuple[tuple[str, str], ...] = ()
    # A union's members (cv: folds from 2 to 20, "auto" or null), each value checked against
    # them before anything is sent.
    union: tuple[UnionMember, ...] = ()

    @property
    def panel_title(self) -> str:
        """The panel's title, naming the job fields its flags set: "Search (job fields
        search.*)", so that a flag's help need not repeat its path (at 80 columns rich cut
        "search.refine_temperatures" to "search.refine_te…")."""
        section = self.path.rpartition(".")[0]
        return f"{self.panel} (job fields {section}.*)" if section else f"{self.panel} (job fields)"

    @property
    def _named_by_flag(self) -> bool:
        """Whether the flag's name says the field: --n-lambdas for search.n_lambdas (or
        --search-patience for search.patience), not --metric for metric.preset."""
        section, _, field = self.path.rpartition(".")
        name = self.decls[0].removeprefix("--")
        dashed = field.replace("_", "-")
        return name in (dashed, f"{section}-{dashed}")

    @property
    def param(self) -> str:
        return _PARAM_PREFIX + self.path.replace(".", "__")

    def annotation(self) -> Any:
        python: Any = {"int": int, "float": float, "bool": bool}.get(self.kind, str)
        if self.nullable:  # parsed, and its bounds checked, by the callback
            python = str
        if self.kind in ("choice", "choices"):  # typer takes its choices from an Enum
            names: Any = enum.Enum(  # type: ignore[misc]
                self.param,
                [(v, v) for v in self.choices] + [(a, a) for a, _ in self.aliases],
                type=str,
            )
            python = list[names] if self.kind == "choices" else names
        decls = self.decls
        if self.kind == "bool":
            positive = self.decls[0]
            decls = (f"{positive}/--no-{positive.removeprefix('--')}",)
        info = typer.Option(
            *decls,
            help=self._help_text(),
            show_default=self.default_text or False,
            rich_help_panel=self.panel_title,
            case_sensitive=False,
            metavar=self._metavar(),
            # typer shows and checks inclusive bounds ([x>=0]); an exclusive one is checked by
            # the callback and said in the help, as the server holds it.
            min=None if self.low_open or self.nullable else self.low,
            max=None if self.high_open or self.nullable else self.high,
            callback=self._check_nullable
            if self.nullable
            else self._check_open_bounds
            if self.low_open or self.high_open
            else self._check_union
            if self.union
            else None,
        )
        return Annotated[python | None, info]

    def _open_bounds_text(self) -> str:
        """The bounds typer does not show: the exclusive ones, or all of a nullable number's."""
        shown = self.nullable
        above = f"above {self.low:g}" if self.low_open and self.low is not None else ""
        below = f"below {self.high:g}" if self.high_open and self.high is not None else ""
        if shown and not self.low_open and self.low is not None:
            above = f"at least {self.low:g}"
        if shown and not self.high_open and self.high is not None:
            below = f"at most {self.high:g}"
        return " and ".join(part for part in (above, below) if part)

    def _check_nullable(self, given: Any) -> Any:
        """A nullable number's text: `null`, or a number within its bounds."""
        if given is None or str(given).strip().lower() == "null":
            return given
        try:
            number = int(given) if self.kind == "int" else float(given)
        except ValueError:
            kind = "an integer" if self.kind == "int" else "a number"
            raise typer.BadParameter(f"{given!r} is not {kind} or null") from None
        if self._outside(number, inclusive_too=True):
            raise typer.BadParameter(f"{_shown(number)} is not {self._open_bounds_text()}")
        return given

    def _check_union(self, given: Any) -> Any:
        """A union's text (JSON where it parses) is one of its members' values."""
        if given is not None and not any(m.admits(self.value(given)) for m in self.union):
            wanted = ", ".join(m.text() for m in self.union)
            raise typer.BadParameter(f"{given!r} is not one of: {wanted}")
        return given

    def _check_open_bounds(self, given: Any) -> Any:
        if given is not None and self._outside(given, inclusive_too=False):
            raise typer.BadParameter(f"{_shown(given)} is not {self._open_bounds_text()}")
        return given

    def _outside(self, number: float, *, inclusive_too: bool) -> bool:
        """Whether ``number`` breaks an exclusive bound, or with ``inclusive_too`` an inclusive
        one as well (typer checks those itself, except for a nullable number's text)."""
        low, high = self.low, self.high
        low_fails = low is not None and (
            number <= low if self.low_open else inclusive_too and number < low
        )
        high_fails = high is not None and (
            number >= high if self.high_open else inclusive_too and number > high
        )
        return bool(low_fails or high_fails)

    def _help_text(self) -> str:
        """The description, the choices and the job field it sets."""
        choices = f". One of: {', '.join(self.choices)}" if self.choices else ""
        if self.aliases:
            choices += " (" + ", ".join(f"{a} for {c}" for a, c in self.aliases) + ")"
        # Not in square brackets: rich reads "[above 0]" as markup and drops it.
        bounds = f", {self._open_bounds_text()}" if self.low_open or self.high_open else ""
        if self.nullable:
            shown = self._open_bounds_text()
            bounds = f", {shown}, or null" if shown else ", or null"
        if self._named_by_flag:  # the panel's title says the section
            return f"{self.help}{choices}" + (f" ({bounds.removeprefix(', ')})." if bounds else ".")
        return f"{self.help}{choices} (job field {self.path}{bounds})."

    def _metavar(self) -> str | None:
        if self.kind == "list":
            return "N,N,..."
        if self.kind == "json":
            return "VALUE"
        if self.kind in ("choice", "choices"):  # the choices are listed in the help instead
            return "NAME"
        if self.nullable:
            return "INTEGER|null" if self.kind == "int" else "NUMBER|null"
        return None

    def value(self, given: Any) -> Any:
        """The job's value for what the command line gave."""
        if self.kind == "json":  # a number, a word ("auto"), null: as JSON where it parses
            try:
                return json.loads(given)
            except ValueError:
                return given
        if self.kind == "list":
            text = str(given).strip()
            try:
                parsed = json.loads(text if text.startswith("[") else f"[{text}]")
            except ValueError:
                raise CliError(
                    f"{self.decls[0]} {given!r}: expected numbers separated by commas"
                ) from None
            return parsed
        if self.kind == "choices":
            return [self.canonical(getattr(v, "value", v)) for v in given]
        if self.nullable:
            text = str(given).strip()
            if text.lower() == "null":
                return None
            return int(text) if self.kind == "int" else float(text)
        return self.canonical(getattr(given, "value", given))  # a choice: its member's value

    def canonical(self, value: Any) -> Any:
        """A choice's name for one of its aliases (fbeta: f_beta); anything else as it is."""
        return dict(self.aliases).get(value, value) if isinstance(value, str) else value


def _document() -> dict[str, Any]:
    text = resources.files("metro_client").joinpath("openapi.json").read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def _members(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The types a property takes besides null (several for a union such as cv's)."""
    return [m for m in schema.get("anyOf", [schema]) if m.get("type") != "null"]


def _inlined(schema: Mapping[str, Any], schemas: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with each reference to a named set of choices (``Average``: one schema that
    several fields share) replaced by the choices; references to objects stay, and no flag is
    made for them."""

    def resolve(member: Mapping[str, Any]) -> dict[str, Any]:
        ref = str(member.get("$ref", ""))
        named = schemas.get(ref.rsplit("/", 1)[-1]) if ref.startswith("#/components/") else None
        if isinstance(named, Mapping) and named.get("enum") and named.get("type") == "string":
            return {**named, **{k: v for k, v in member.items() if k != "$ref"}}
        return dict(member)

    out = resolve(schema)
    if "anyOf" in out:
        out["anyOf"] = [resolve(m) for m in out["anyOf"]]
    return out


def _kind(schema: Mapping[str, Any]) -> tuple[FlagKind, tuple[str, ...]] | None:
    """How a property's text is read, and its choices; None for what a flag cannot hold."""
    members = _members(schema)
    if len(members) > 1:  # e.g. cv: a number of folds, "auto" or null
        return ("json", ())
    (member,) = members
    if "$ref" in member:
        return None
    kind = str(member.get("type"))
    if kind == "string":
        choices = tuple(member.get("enum", ()))
        return ("choice", choices) if choices else ("text", ())
    if kind == "array":
        items = member.get("items", {})
        if items.get("type") == "string" and items.get("enum"):
            return ("choices", tuple(items["enum"]))
        if items.get("type") in ("integer", "number"):
            return ("list", ())
        return None
    scalars: dict[str, FlagKind] = {"integer": "int", "number": "float", "boolean": "bool"}
    scalar = scalars.get(kind)
    return (scalar, ()) if scalar else None


@dataclass(frozen=True)
class _Bounds:
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False


def _bounds(schema: Mapping[str, Any]) -> _Bounds:
    """A number's lower and upper bound, and whether each is exclusive (None: none; a union:
    none)."""
    members = _members(schema)
    if len(members) != 1:
        return _Bounds()
    (m,) = members
    return _Bounds(
        low=m.get("minimum", m.get("exclusiveMinimum")),
        high=m.get("maximum", m.get("exclusiveMaximum")),
        low_open="minimum" not in m and "exclusiveMinimum" in m,
        high_open="maximum" not in m and "exclusiveMaximum" in m,
    )


def _aliases(schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The document's x-aliases of a property with choices: other names the server reads as
    one of them."""
    for member in _members(schema):
        found = member.get("x-aliases")
        if isinstance(found, Mapping):
            return tuple((str(a), str(c)) for a, c in found.items())
    return ()


def preset_aliases() -> dict[str, str]:
    """The metric presets' aliases (fbeta: f_beta), as the document publishes them."""
    preset = _document()["components"]["schemas"]["PresetMetric"]["properties"]["preset"]
    return dict(_aliases(preset))


def _default_text(schema: Mapping[str, Any]) -> str | None:
    if "default" not in schema:
        return None
    default = schema["default"]
    if isinstance(default, list):
        # ", ": a long list wraps in a narrow help column instead of being cut short
        return ", ".join(str(v) for v in default) if default else "none"
    return json.dumps(default) if not isinstance(default, str) else default


def _help(schema: Mapping[str, Any], path: str) -> str:
    return str(schema.get("description") or schema.get("title") or path).strip().rstrip(".")


@cache
def spec_flags() -> tuple[SpecFlag, ...]:
    """The job's flags, in the document's order, section by section."""
    schemas = _document()["components"]["schemas"]
    fields: list[tuple[str, str, str, dict[str, Any]]] = []
    for section, name, panel in SECTIONS:
        for field, schema in schemas[name]["properties"].items():
            fields.append((section, field, panel, schema))
    shared = Counter(field for _, field, _, _ in fields)
    flags: list[SpecFlag] = []
    for section, field, panel, given in fields:
        path = f"{section}.{field}" if section else field
        schema = _inlined(given, schemas)
        found = _kind(schema)
        if found is None:
            continue
        kind, choices = found
        aliases = _aliases(schema)
        bounds = _bounds(schema)
        if kind == "int":  # the document writes every bound as a number: 1.0 <= x <= 1001.0
            bounds = _Bounds(
                low=None if bounds.low is None else int(bounds.low),
                high=None if bounds.high is None else int(bounds.high),
                low_open=bounds.low_open,
                high_open=bounds.high_open,
            )
        dashed = field.replace("_", "-")
        decls = FLAG_NAMES.get(
            path,
            (f"--{section}-{dashed}",) if shared[field] > 1 and section else (f"--{dashed}",),
        )
        flags.append(
            SpecFlag(
                path=path,
                decls=decls,
                kind=kind,
                help=_help(schema, path),
                panel=panel,
                choices=choices,
                default_text=_default_text(schema),
                low=bounds.low,
                high=bounds.high,
                low_open=bounds.low_open,
                high_open=bounds.high_open,
                nullable=kind in ("int", "float")
                and any(m.get("type") == "null" for m in schema.get("anyOf", ())),
                aliases=aliases,
                union=_union(schema) if kind == "json" else (),
            )
        )
    return tuple(flags)


def with_spec_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` (which takes ``**spec_flags``) with a keyword parameter per job flag, as
    typer reads a command's parameters: from its signature."""
    signature = inspect.signature(command, eval_str=True)
    own = [  # (a second call replaces the flags of the first)
        p
        for p in signature.parameters.values()
        if p.kind is not p.VAR_KEYWORD and not p.name.startswith(_PARAM_PREFIX)
    ]
    added = [
        inspect.Parameter(
            flag.param, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=flag.annotation()
        )
        for flag in spec_flags()
    ]
    command.__signature__ = signature.replace(parameters=own + added)  # type: ignore[attr-defined]
    return command


def spec_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """``{dotted path: value}`` for the job flags the command line gave (``given``: the
    command's ``**spec_flags``)."""
    out: dict[str, Any] = {}
    for flag in spec_flags():
        value = given.get(flag.param)
        if value is None or (flag.kind == "choices" and not value):
            continue
        out[flag.path] = flag.value(value)
    return out
