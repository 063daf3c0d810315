"""`metro submit`'s job flags are built from the API's OpenAPI document that the client package
carries: every setting of the job's sections is a flag with its type, choices and bounds, with no
flag written by hand, and a setting the document gains is a flag with no code."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import metro_cli.submit
import pytest
import typer
import typer.main
from metro_cli import spec_flags as module
from metro_cli.app import create_app
from metro_cli.spec_flags import FLAG_NAMES, SECTIONS, spec_flags, spec_values

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_flags() -> Iterator[None]:
    spec_flags.cache_clear()
    yield
    spec_flags.cache_clear()


def _submit() -> Any:
    group = typer.main.get_command(create_app())
    return group.commands["submit"]  # type: ignore[attr-defined]


def _parse(*args: str) -> dict[str, Any]:
    """What the command line sets in the job, by dotted path (flags only, nothing sent)."""
    command = _submit()
    with command.make_context("submit", list(args)) as ctx:
        return spec_values(ctx.params)


def test_the_client_carries_the_apis_current_document():
    from clients.generate import openapi_document

    carried = json.loads((ROOT / "clients/python/metro_client/openapi.json").read_text())
    assert carried == openapi_document()


def test_every_setting_of_the_job_sections_is_a_flag():
    schemas = module._document()["components"]["schemas"]
    paths = {flag.path for flag in spec_flags()}
    for section, name, _ in SECTIONS[:-1]:
        for field in schemas[name]["properties"]:
            assert f"{section}.{field}" in paths, (section, field)
    assert {"repeats", "baselines"} <= paths
    names = [decl for flag in spec_flags() for decl in flag.decls]
    assert len(names) == len(set(names)), "two flags share a name"
    given = {p.opts[0] for p in _submit().params}
    for flag in spec_flags():
        assert flag.decls[0] in given, flag
    assert set(FLAG_NAMES) <= paths  # a rename names a field the document has


def test_a_flag_sets_its_field_with_the_documents_type():
    assert _parse(
        "-m", "F_Beta", "--beta", "2", "--surrogate", "sigmoid", "--k", "3",
        "--model", "mlp", "--hidden", "64,32", "--n-lambdas", "9", "--no-refit",
        "--cv", "auto", "--refine", "off", "--refine-confidence", "0.9",
        "--multipliers", "[0, 1]", "--epochs", "5", "--compile", "--baseline", "erm",
        "--baseline", "parambath", "--repeats", "2",
    ) == {
        "metric.preset": "f_beta", "metric.beta": 2.0, "surrogate.name": "sigmoid",
        "surrogate.k": 3.0, "model.kind": "mlp", "model.hidden": [64, 32],
        "search.n_lambdas": 9, "search.refit": False, "search.cv": "auto", "search.refine": "off",
        "search.refine_confidence": 0.9, "search.multipliers": [0, 1], "training.epochs": 5,
        "training.compile": True, "baselines": ["erm", "parambath"], "repeats": 2,
    }  # fmt: skip
    assert _parse("--cv", "3") == {"search.cv": 3}
    assert _parse("--cv", "null") == {"search.cv": None}
    # A number that may be null takes `null` (its help offered it; the flag refused it).
    assert _parse("--refine-signal", "null", "--lambda-min", "-0.5", "--refine-consistency",
                  "NULL") == {"search.refine_signal": None, "search.lambda_min": -0.5,
                              "search.refine_consistency": None}  # fmt: skip
    from metro_cli.job_spec import spec_from_command_line

    # An explicit null reaches the job (it was dropped as "not given": cv stayed "auto").
    built = spec_from_command_line({}, _parse("--cv", "null"), [], [], [])
    assert built == {"search": {"cv": None}}
    assert _parse() == {}  # nothing given, nothing set: the server's defaults apply


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--n-lambdas", "0"], "--n-lambdas"),  # below its bound
        (["--n-lambdas", "2.5"], "--n-lambdas"),  # not an integer
        (["--beta", "5000"], "--beta"),
        (["--refine", "sometimes"], "--refine"),  # not a choice
        (["--baseline", "svm"], "--baseline"),
        (["-m", "nope"], "--metric"),
        (["--lr", "0"], "is not above 0"),  # an exclusive bound's edge: the server's 422 before
        (["--refine-signal", "1"], "is not at least 0.5 and below 1"),
        (["--refine-signal", "0.4"], "is not at least 0.5 and below 1"),
        (["--refine-signal", "often"], "'often' is not a number or null"),
        (["--epsilon", "0"], "is not above 0"),
        # A union's members: was sent, and refused by the server (a 422 after a round trip).
        (["--cv", "1"], "'1' is not one of: an integer from 2 to 20, 'auto', null"),
        (["--cv", "five"], "'five' is not one of"),
        (["--cv", "2.5"], "'2.5' is not one of"),
        (["--cv", "2.0"], "'2.0' is not one of"),  # the server's strict types: not an integer
        # past a round bound by a little: was shown as the bound itself (-1e+06)
        (["--lambda-min", "-1000001"], "-1000001 is not at least -1e+06 and at most 1e+06"),
        (["--weight-decay", "-1"], "'-1' is not one of: a number from 0 to 1e+06, 'auto'"),
    ],
)
def test_a_value_the_document_refuses_is_a_usage_error_naming_the_flag(args, words):
    with pytest.raises(typer.TyperException) as caught:  # typer's own click: a usage error
        _parse(*args)
    assert words in caught.value.format_message()


def test_a_list_that_does_not_parse_names_its_flag():
    from metro_cli.errors import CliError

    with pytest.raises(CliError, match="--hidden"):
        _parse("--hidden", "64;32")


def test_a_setting_the_document_gains_is_a_flag_with_no_code(monkeypatch):
    document = copy.deepcopy(module._document())
    search = document["components"]["schemas"]["SearchIn"]["properties"]
    search["patience"] = {
        "type": "integer", "minimum": 1, "maximum": 50, "default": 5,
        "description": "Steps without a gain before the search stops",
    }  # fmt: skip
    document["components"]["schemas"]["TrainingIn"]["properties"]["patience"] = {
        "type": "number", "description": "A second setting of the same name",
    }  # fmt: skip
    monkeypatch.setattr(module, "_document", lambda: document)
    command = metro_cli.submit.submit  # its flags are read from the document when it is made
    monkeypatch.setattr(command, "__signature__", command.__signature__)  # restored after
    module.with_spec_flags(command)
    (flag,) = [f for f in spec_flags() if f.path == "search.patience"]
    # Two sections share the name, so each flag says its section.
    assert flag.decls == ("--search-patience",) and flag.panel == "Search"
    assert "Steps without a gain" in flag.help and flag.default_text == "5"
    assert _parse("--search-patience", "7", "--training-patience", "0.5") == {
        "search.patience": 7, "training.patience": 0.5,
    }  # fmt: skip
    with pytest.raises(typer.TyperException):
        _parse("--search-patience", "51")


def test_a_name_the_document_says_is_read_in_any_case_is_written_as_stored(monkeypatch):
    """Which names the server reads in other spellings is the document's (x-any-case,
    x-aliases): the CLI wrote four fields in lower case by a list of its own, so a setting the
    server came to read in any case was refused by the flags' choices."""
    from metro_cli.job_spec import server_spelling

    document = copy.deepcopy(module._document())
    strategy = document["components"]["schemas"]["SearchIn"]["properties"]["strategy"]
    spec = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://digits"},
            "search": {"strategy": "Grid"}}  # fmt: skip
    assert server_spelling(spec)["search"]["strategy"] == "Grid"  # exact, as the server reads it
    for member in strategy.get("anyOf", [strategy]):
        if member.get("enum"):
            member.update({"x-any-case": True, "x-aliases": {"full-grid": "grid"}})
    monkeypatch.setattr(module, "_document", lambda: document)
    assert server_spelling(spec)["search"]["strategy"] == "grid"
    spec["search"]["strategy"] = "FULL-GRID"
    assert server_spelling(spec)["search"]["strategy"] == "grid"


def _members_with_a_const() -> list[tuple[str, str, dict[str, Any]]]:
    """(section, field, the member that is not the const nor null) of every setting whose
    schema is a union with a const ("an integer or 'auto'")."""
    schemas = json.loads((ROOT / "clients" / "openapi.json").read_text())["components"]["schemas"]
    found = []
    for section, schema in (("search", "SearchIn"), ("training", "TrainingIn")):
        for field, prop in schemas[schema]["properties"].items():
            members = prop.get("anyOf", [])
            if any("const" in m for m in members):
                other = [m for m in members if "const" not in m and m.get("type") != "null"]
                found += [(section, field, m) for m in other]
    return found


@pytest.mark.parametrize(("section", "field", "member"), _members_with_a_const())
def test_a_setting_that_is_a_number_or_a_word_builds_a_job_with_either(section, field, member):
    # The generated model checked the const outside the union's try: every number was refused
    # ("cv_type_1 must match const 'auto', got '3'"), so `metro submit --cv 3` never worked.
    from metro_cli.job_spec import build_job

    number = member.get("minimum", 0) + 1
    number = int(number) if member["type"] == "integer" else float(number)
    for value in (number, "auto"):
        spec = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
        spec[section] = {field: value}
        assert build_job(spec).to_dict()[section][field] == value


def test_cv_and_weight_decay_are_among_them():
    assert {(s, f) for s, f, _ in _members_with_a_const()} == {
        ("search", "cv"),
        ("training", "weight_decay"),
    }


def test_names_the_server_reads_in_any_case_are_taken_in_any_case_from_a_job_file():
    from metro_cli.job_spec import build_job

    spec = {
        "metric": {"preset": "F1"},
        "dataset": {"uri": "builtin://breast_cancer"},
        "surrogate": {"name": "Logistic"},
        "constraints": [{"metric": "Recall", "at_least": 0.8}],
        "model": {"kind": "MLP"},  # was refused: "'MLP' is not one of linear, mlp, cnn3"
    }
    sent = build_job(spec).to_dict()
    assert sent["metric"]["preset"] == "f1" and sent["surrogate"]["name"] == "logistic"
    assert sent["constraints"][0]["metric"] == "recall"
    assert sent["model"]["kind"] == "mlp"
    spec["surrogate"] = {"name": "Rho-Margin", "rho": 2.0}  # as the library reads it
    assert build_job(spec).to_dict()["surrogate"]["name"] == "rho_margin"


@pytest.mark.parametrize(
    ("constraint", "words"),
    [
        ({"metric": "recal", "at_least": 0.8}, "constraints[0]': unknown metric 'recal'"),
        ({"at_least": 0.8}, "constraints[0]'"),
        ("recall>=0.8", "constraints[0]' must be an object"),
    ],
)
def test_a_bad_constraint_is_named_with_what_is_wrong(constraint, words):
    # Before: "the job does not have the API's shape: TypeError", for each of them.
    from metro_cli.errors import CliError
    from metro_cli.job_spec import build_job

    spec = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}}
    spec["constraints"] = [constraint]
    with pytest.raises(CliError, match=r"[\s\S]*") as caught:
        build_job(spec)
    assert words in str(caught.value)
    if isinstance(constraint, dict) and "metric" in constraint:
        assert "recall" in str(caught.value)  # what it could be


def test_an_exclusive_bound_is_shown_as_one():
    from typer.testing import CliRunner

    # As the user reads it: rendered by rich, which once took "[above 0]" for markup and
    # dropped it, and with integer bounds as integers ("1.0<=x<=1001.0" under newer typers).
    rendered = CliRunner().invoke(create_app(), ["submit", "--help"], env={"COLUMNS": "400"})
    assert rendered.exit_code == 0, rendered.output
    text = " ".join(rendered.output.replace("│", " ").split())
    assert "(above 0)." in text and "(at least 0.5 and below 1, or null)." in text
    # A flag named as its field leaves the path to its panel's title ("Search (job fields
    # search.*)"): at 80 columns rich cut "search.refine_temperatures" short. A flag named
    # otherwise still says it.
    assert "─ Search (job fields search.*) ─" in rendered.output
    assert "job field search.n_lambdas" not in text and "(job field metric.preset)" in text
    # At 80 columns no job field's path and no default is cut short (35 tokens were).
    narrow = CliRunner().invoke(create_app(), ["submit", "--help"], env={"COLUMNS": "80"})
    assert not re.search(r"(search|training|model|surrogate)\.\w*…", narrow.output)
    assert not re.search(r"\(\d[\d.,]*…", narrow.output), narrow.output  # (0.0,0.25,1.0,4.…
    assert "[1<=x<=1001]" in text and "1001.0" not in text
    by_path = {flag.path: flag for flag in spec_flags()}
    assert (by_path["search.n_lambdas"].low, by_path["search.n_lambdas"].high) == (1, 1001)
    assert isinstance(by_path["search.n_lambdas"].low, int)
    assert _parse("--refine-signal", "0.5", "--lr", "1e-9") == {
        "search.refine_signal": 0.5,
        "training.lr": 1e-9,
    }
