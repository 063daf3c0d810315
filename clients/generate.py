"""Regenerate the Python client from the service's OpenAPI document.

    python clients/generate.py                  # writes clients/openapi.json and clients/python/
                                                # (its metro_client/openapi.json a copy)
    python clients/generate.py --output-dir D   # writes D/openapi.json and D/python/ instead

The document is built in-process from ``service.main:create_app()`` (no server, no database
connection), written as ``openapi.json``, and handed to openapi-python-client with the settings
in ``openapi-python-client.yaml`` beside this file and the templates in ``templates/`` (setup.py
and README.md: the package also installs the users' ``metro`` command; model.py: the
generator's own, whose ``from_dict`` also refuses the fields a schema forbids, which it dropped;
literal_enum.py: the generator's own, reading the other spellings the server reads, from the
``enum_spellings.jinja`` this script writes beside a copy of them; union_property.py: the
generator's own, raising one error naming the field where no member reads a value).
``python/metro_cli``, that command, is written by hand: regeneration keeps it. The output depends
only on the code, those settings and templates, and the generator's version (pinned in the dev
extras), so ``tests/clients/test_generated_client.py`` can regenerate it and demand the committed
copy be identical.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIG = HERE / "openapi-python-client.yaml"
# The generator's templates that this project replaces (setup.py: the CLI's dependencies and its
# `metro` command; README.md: how to install and use them; model.py: its own, with a from_dict
# that refuses a field the schema forbids: `JobCreate.from_dict({"serch": ...})` dropped it, and
# the job ran on the defaults; literal_enum.py and property_templates/union_property.py: its own,
# reading a preset "F1" as the server does, and naming the field a union refuses).
TEMPLATES = HERE / "templates"
# Hand-written parts of clients/python that regeneration keeps as they are: the user CLI.
HAND_WRITTEN = ("metro_cli",)
PACKAGE = "metro_client"


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document exactly as ``GET /openapi.json`` serves it."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from core.config import Settings
    from service.main import create_app

    # Explicit settings: nothing in the document depends on them, and neither the environment
    # nor a .env file should be read to produce it. The engine is created but never connected.
    app = create_app(Settings(database_url="sqlite://", _env_file=None))  # type: ignore[call-arg]
    return app.openapi()


def write_document(path: Path) -> None:
    text = json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8", newline="\n")


def _refs(node: Any) -> set[str]:
    """The component schemas ``node`` refers to."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def client_input(document: dict[str, Any]) -> dict[str, Any]:
    """The document the client is generated from: the served one, except that a job's optional
    fields have no ``default`` (their descriptions say it instead). The generator would make each
    default the attribute's value and send it, so a client built today would pin today's
    defaults in every job it submits; left unset, a field takes the server's default.

    And an object whose ``oneOf`` only says which of its fields go together (a prediction's
    ``instances`` or ``columns`` + ``data``: ``service.schemas.common.one_form_of``) keeps its
    fields without it: the generator reads
    such a ``oneOf`` as a union of nothing and types the body ``Any``, dropping the model. The
    served document keeps the rule; the fields' descriptions say it to the client's users."""
    out = copy.deepcopy(document)
    schemas = out["components"]["schemas"]
    for schema in schemas.values():
        forms = schema.get("oneOf")
        if (
            "properties" in schema
            and forms
            and all(set(form) <= {"allOf", "not"} for form in forms)
        ):
            del schema["oneOf"]
    seen: set[str] = set()
    todo = ["JobCreate"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += sorted(_refs(schemas[name]) - seen)
        required = set(schemas[name].get("required", ()))
        for field, prop in schemas[name].get("properties", {}).items():
            if field in required or "default" not in prop:
                continue
            default = prop.pop("default")
            shown = json.dumps(default, ensure_ascii=False)
            described = str(prop.get("description", "")).rstrip(". ")
            prop["description"] = (
                f"{described}. Server default: {shown}"
                if described
                else (f"Server default: {shown}")
            )
    return out


def _enum_spellings(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The other spellings the server reads as an enum's values, keyed by its sorted values
    joined with ``|`` (how the literal-enum template finds them): ``any_case`` where the schema
    says ``x-any-case``, ``aliases`` its ``x-aliases``."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("enum") and ("x-any-case" in node or "x-aliases" in node):
                key = "|".join(sorted(str(v) for v in node["enum"]))
                spelling = {
                    "any_case": bool(node.get("x-any-case")),
                    "aliases": dict(node.get("x-aliases") or {}),
                }
                if found.setdefault(key, spelling) != spelling:
                    raise ValueError(f"two enums of values {key} read other spellings differently")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    return found


def _stage_templates(document: dict[str, Any], into: Path) -> Path:
    """This project's templates, with ``enum_spellings.jinja``: the document's other spellings
    of its enums as a Jinja dict (the generator gives a template only the enum's values)."""
    shutil.copytree(TEMPLATES, into)
    table = json.dumps(_enum_spellings(document), sort_keys=True)
    (into / "enum_spellings.jinja").write_text(
        "{#- Written by clients/generate.py from the OpenAPI document. -#}\n"
        f"{{% set SPELLINGS = {table} %}}\n",
        encoding="utf-8",
    )
    return into


def generate(output_dir: Path) -> None:
    """Write ``output_dir/openapi.json`` and the client project ``output_dir/python``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    document = output_dir / "openapi.json"
    write_document(document)
    target = output_dir / "python"
    # The generator's post-hooks run ``ruff`` from PATH: use the one beside this interpreter
    # (the pinned dev tool), whether or not the virtual environment is activated.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory() as scratch:
        # Generate outside any other project, so that ruff sees only the generated
        # pyproject.toml's settings, wherever output_dir is.
        staged = Path(scratch) / "python"
        generator_input = Path(scratch) / "openapi.json"
        given = client_input(json.loads(document.read_text(encoding="utf-8")))
        generator_input.write_text(json.dumps(given), encoding="utf-8")
        templates = _stage_templates(given, Path(scratch) / "templates")
        command = [
            sys.executable, "-m", "openapi_python_client", "generate",
            "--path", str(generator_input), "--config", str(CONFIG), "--meta", "setup",
            "--output-path", str(staged), "--overwrite", "--fail-on-warning",
            "--custom-template-path", str(templates),
        ]  # fmt: skip
        done = subprocess.run(command, env=env, cwd=scratch, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"openapi-python-client failed ({done.returncode})")
        _remove_generated(target)
        shutil.copytree(
            staged, target, ignore=shutil.ignore_patterns(".ruff_cache", "__pycache__"),
            dirs_exist_ok=True,
        )  # fmt: skip
    # The document travels in the package too: the `metro` command builds its job flags (names,
    # types, bounds, defaults, help) from it (metro_cli/spec_flags.py), with no copy by hand.
    shutil.copyfile(document, target / PACKAGE / "openapi.json")


# The job's settings as docs/api.md lists them: (section, its schema in the document).
SETTINGS_SECTIONS = (
    ("metric", "PresetMetric"), ("dataset", "DatasetRef"), ("surrogate", "SurrogateIn"),
    ("model", "ModelIn"), ("search", "SearchIn"), ("training", "TrainingIn"), ("", "JobCreate"),
)  # fmt: skip
SETTINGS_BEGIN = "<!-- settings: written by clients/generate.py from the OpenAPI document -->"
SETTINGS_END = "<!-- /settings -->"
API_DOC = ROOT / "docs" / "api.md"


def _number(value: float, kind: str) -> str:
    return str(int(value)) if kind == "integer" else f"{value:g}"


def _kind_text(prop: dict[str, Any], schemas: dict[str, Any]) -> str:
    """A property's type and what it takes, in a few words: ``integer in [1, 1001]``."""
    parts = []
    for member in prop.get("anyOf", [prop]):
        ref = member.get("$ref")
        if ref:
            named = schemas[ref.rsplit("/", 1)[-1]]
            member = named if named.get("enum") else {"type": "object"}
        kind = member.get("type", "any")
        if "const" in member:
            parts.append(json.dumps(member["const"]))
        elif member.get("enum"):
            parts.append(" / ".join(f"`{v}`" for v in member["enum"]))
        elif kind == "null":
            parts.append("null")
        elif kind == "array":
            items = member.get("items", {})
            if items.get("enum"):
                inner = " / ".join(f"`{v}`" for v in items["enum"])
            elif "$ref" in items:
                inner = "objects"
            else:
                inner = str(items.get("type", "any"))
            size = ""
            if "minItems" in member or "maxItems" in member:
                size = f", {member.get('minItems', 0)} to {member.get('maxItems', '...')} items"
            parts.append(f"list of {inner}{size}")
        elif kind in ("integer", "number"):
            low = member.get("minimum", member.get("exclusiveMinimum"))
            high = member.get("maximum", member.get("exclusiveMaximum"))
            if low is None and high is None:
                parts.append(kind)
            else:
                # An unbounded side is open: infinity is not a number the API takes.
                left = "(" if "exclusiveMinimum" in member or low is None else "["
                right = ")" if "exclusiveMaximum" in member or high is None else "]"
                shown = [("-inf" if low is None else _number(low, kind)),
                         ("inf" if high is None else _number(high, kind))]  # fmt: skip
                parts.append(f"{kind} in {left}{shown[0]}, {shown[1]}{right}")
        else:
            parts.append(str(kind))
    return " or ".join(parts)


def settings_table(document: dict[str, Any]) -> str:
    """Every setting of a job (its path, what it takes, its default and its description) as a
    markdown table: docs/api.md's reference, so that the docs say what the API does."""
    schemas = document["components"]["schemas"]
    lines = [
        SETTINGS_BEGIN,
        "| setting | takes | default | meaning |",
        "|---|---|---|---|",
    ]
    for section, name in SETTINGS_SECTIONS:
        schema = schemas[name]
        required = set(schema.get("required", ()))
        for field, prop in schema["properties"].items():
            path = f"{section}.{field}" if section else field
            if not section and field in {s for s, _ in SETTINGS_SECTIONS}:
                continue  # the sections themselves: their rows are above
            if "default" in prop:
                default = f"`{json.dumps(prop['default'], ensure_ascii=False)}`"
            else:
                default = "required" if field in required else ""
            meaning = " ".join(str(prop.get("description", "")).split()).replace("|", "\\|")
            kind = _kind_text(prop, schemas).replace("|", "\\|")
            lines.append(f"| `{path}` | {kind} | {default} | {meaning} |")
    lines.append(SETTINGS_END)
    return "\n".join(lines)


def write_settings_table(document: dict[str, Any], doc: Path = API_DOC) -> None:
    text = doc.read_text(encoding="utf-8")
    start, end = text.index(SETTINGS_BEGIN), text.index(SETTINGS_END) + len(SETTINGS_END)
    doc.write_text(text[:start] + settings_table(document) + text[end:], encoding="utf-8")


def _remove_generated(target: Path) -> None:
    """Empty ``target`` of what an earlier generation wrote, keeping :data:`HAND_WRITTEN`."""
    if not target.exists():
        return
    for child in target.iterdir():
        if child.name in HAND_WRITTEN:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output-dir", type=Path, default=HERE, help="where openapi.json and python/ go"
    )
    args = parser.parse_args()
    generate(args.output_dir.resolve())
    print(f"wrote {args.output_dir / 'openapi.json'} and {args.output_dir / 'python'}")
    if args.output_dir.resolve() == HERE:
        write_settings_table(openapi_document())
        print(f"wrote the settings table of {API_DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
