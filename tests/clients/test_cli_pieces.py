"""The parts of the users' CLI (metro_cli) that need no server: the checks of a local file
before it is uploaded, the job spec from the command line, and how the one `metro` command
gathers the server's commands where the server's package is installed."""

from __future__ import annotations

import gzip
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
import typer.main
from metro_cli import local_files
from metro_cli.app import create_app
from metro_cli.errors import CliError
from metro_cli.job_spec import spec_from_command_line
from metro_cli.local_files import check_local_dataset

CHURN = "tenure,charges,churned\n" + "".join(f"{i},{i * 1.5},{i % 3 == 0:d}\n" for i in range(60))


def _refusal(path: Path, label_column: str | None, positive_label: Any) -> str:
    with pytest.raises(CliError) as caught:
        check_local_dataset(path, label_column=label_column, positive_label=positive_label)
    return str(caught.value)


def test_a_csv_and_a_csv_gz_are_read_for_their_label_column_and_positive_label(tmp_path):
    plain = tmp_path / "churn.csv"
    plain.write_text(CHURN)
    packed = tmp_path / "CHURN.CSV.GZ"  # the format by the name's end, in any case
    packed.write_bytes(gzip.compress(CHURN.encode()))
    for path in (plain, packed):
        check_local_dataset(path, label_column="churned", positive_label=1)
        # Matched as the server matches labels: the number, its other spellings, true for 1.
        for same in (1, 1.0, "1", True):
            check_local_dataset(path, label_column="churned", positive_label=same)
        message = _refusal(path, None, None)
        assert message == (
            f"{path}: label column 'y' not found; columns are ['tenure', 'charges', 'churned'] "
            "(the default label column: name yours with --label-column)"
        )
        assert _refusal(path, "churned", 2) == (
            f"{path}: positive_label 2 is not one of the labels [0, 1]"
        )
        assert "positive_label 'yes' is not one of the labels" in _refusal(path, "churned", "yes")


def test_a_csv_separated_by_semicolons_is_named_as_such_before_it_goes_up(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("tenure;charges;churned\n1;2,5;0\n")
    assert _refusal(path, "churned", None).startswith(
        f"{path}: the header reads as one column 'tenure;charges;churned': the file seems "
        "separated by semicolons"
    )


def test_a_positive_label_1_matches_true_labels_as_the_server_matches_it(tmp_path):
    path = tmp_path / "flags.csv"
    path.write_text("a,y\n1,TRUE\n2,FALSE\n")
    for given in (1, True, "true", "1"):
        check_local_dataset(path, label_column="y", positive_label=given)  # it refused 1
    assert "not one of the labels" in _refusal(path, "y", 2)
    path.write_text("a,y\n1,True\n2,no\n")  # text: 'True' is not the number 1 there
    assert "not one of the labels" in _refusal(path, "y", 1)


def test_predict_names_a_file_separated_by_semicolons(tmp_path):
    from metro_cli.predict import read_rows

    path = tmp_path / "rows.csv"
    path.write_text("x1;x2\n1,5;2\n")
    with pytest.raises(CliError, match=r"the file seems separated by semicolons"):
        read_rows(path, ["x1", "x2"])  # it said the file lacked the model's features


def test_predict_reads_a_one_feature_model_whose_name_holds_a_bar(tmp_path):
    from metro_cli.predict import read_rows

    path = tmp_path / "rows.csv"
    path.write_text("ratio|pct\n0.5\n")
    assert read_rows(path, ["ratio|pct"]) == [[0.5]]


def test_a_byte_order_mark_is_not_part_of_the_first_columns_name(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark, which the server does not count as
    part of the first column's name: the command line refused the file ("label column 'target'
    not found; columns are ['\\ufefftarget', ...]") that an upload with curl took."""
    for name, write in (("bom.csv", Path.write_bytes), ("bom.csv.gz", None)):
        path = tmp_path / name
        content = b"\xef\xbb\xbf" + CHURN.replace("churned", "target").encode()
        if write is None:
            path.write_bytes(gzip.compress(content))
        else:
            write(path, content)
        check_local_dataset(path, label_column="target", positive_label=1)


def test_upload_options_the_server_would_drop_or_misplace_are_refused_first(tmp_path):
    """--positive-label without --label-column was dropped without a word; `-o models/` for an
    absent directory wrote a file named models."""
    from typer.testing import CliRunner

    path = tmp_path / "churn.csv"
    path.write_text(CHURN)
    app = create_app(plugins=False)
    absent = "http://127.0.0.1:9"
    run = CliRunner().invoke(app, ["upload", str(path), "--positive-label", "1", "--url", absent])
    assert run.exit_code == 1 and "give both" in run.output, run.output
    target = f"{tmp_path / 'models'}/"
    run = CliRunner().invoke(app, ["download", str(uuid.uuid4()), "-o", target, "--url", absent])
    assert run.exit_code == 1 and "no such directory" in run.output, run.output
    assert not (tmp_path / "models").exists()


def test_download_takes_its_format_from_the_output_files_suffix(tmp_path):
    """`-o m.onnx` wrote the safetensors bytes into a .onnx file without a word."""
    from metro_cli.download import _format

    assert _format(None, "m.onnx") == "onnx"
    assert _format(None, "m.SAFETENSORS") == "safetensors"
    assert _format(None, None) == _format(None, "weights.bin") == "safetensors"
    assert _format("onnx", str(tmp_path)) == "onnx"  # a directory: its name says nothing
    with pytest.raises(CliError, match=r"^--output m.onnx names a .onnx file, but --format is "):
        _format("safetensors", "m.onnx")


def test_a_file_is_refused_for_what_the_standard_library_can_tell(tmp_path):
    assert _refusal(tmp_path / "none.csv", "y", None) == f"no such file: {tmp_path / 'none.csv'}"
    assert _refusal(tmp_path, "y", None) == f"{tmp_path} is not a file"
    odd = tmp_path / "data.xlsx"
    odd.write_text("a,y\n1,0\n")
    assert "the server reads files named *.csv" in _refusal(odd, "y", None)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert "the file is empty" in _refusal(empty, "y", None)
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(b"not gzip at all")
    assert _refusal(broken, "y", None).startswith(f"could not read {broken} as CSV: ")
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{i}" for i in range(12)) + "\n")
    assert "['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9', ...] (12 in total)" in (
        _refusal(wide, "y", None)
    )
    # Parquet and NPZ need libraries the client does without: only their presence is checked
    # here, the server loads them on upload.
    table = tmp_path / "table.parquet"
    table.write_bytes(b"PAR1 whatever")
    check_local_dataset(table, label_column="nowhere", positive_label="nothing")


def test_the_scan_for_the_positive_label_is_bounded(tmp_path, monkeypatch):
    """Past MAX_ROWS_SCANNED rows without the positive label, there is no verdict here (the
    server, which reads the whole file, has it); within them, a missing one is refused."""
    path = tmp_path / "long.csv"
    path.write_text("a,y\n" + "1,0\n" * 50 + "1,1\n")
    monkeypatch.setattr(local_files, "MAX_ROWS_SCANNED", 20)
    check_local_dataset(path, label_column="y", positive_label=2)
    monkeypatch.setattr(local_files, "MAX_ROWS_SCANNED", 100)
    assert "positive_label 2 is not one of the labels [0, 1]" in _refusal(path, "y", 2)


def test_the_command_line_goes_on_top_of_the_job_file():
    spec = {"metric": {"preset": "f1"}, "search": {"n_lambdas": 3}, "constraints": [{"x": 1}]}
    # Only the flags given: a None among them is an explicit null (`--refine null`).
    flags = {"metric.preset": "F_beta", "metric.beta": 2.0, "search.refine": None,
             "repeats": 2}  # fmt: skip
    built = spec_from_command_line(
        spec, flags, ["search.cv=null", "model.hidden=[8, 4]"], ["recall=0.8"], ["fpr=0.1"]
    )
    assert built == {
        "metric": {"preset": "f_beta", "beta": 2.0},
        "search": {"n_lambdas": 3, "refine": None, "cv": None},
        "model": {"hidden": [8, 4]},
        "repeats": 2,
        "constraints": [{"x": 1}, {"metric": "recall", "at_least": 0.8},
                        {"metric": "fpr", "at_most": 0.1}],
    }  # fmt: skip
    with pytest.raises(CliError, match="expected FIELD=VALUE"):
        spec_from_command_line({}, {}, ["search.cv"], [], [])


def test_one_field_given_two_values_on_the_command_line_is_refused():
    """`--set metric.w_fn=20 --w-fn 5` trained with 20 without a word; the same value twice,
    or a job file's value under a flag, is fine."""
    with pytest.raises(CliError, match=r"give metric.w_fn two values \(5.0 and 20\)"):
        spec_from_command_line({}, {"metric.w_fn": 5.0}, ["metric.w_fn=20"], [], [])
    said = "--set 'search.cv=3' and --set give search.cv two values"
    with pytest.raises(CliError, match=re.escape(said)):
        spec_from_command_line({}, {}, ["search.cv=5", "search.cv=3"], [], [])
    same = spec_from_command_line({}, {"metric.w_fn": 20.0}, ["metric.w_fn=20"], [], [])
    assert same == {"metric": {"w_fn": 20}}
    over_file = spec_from_command_line({"metric": {"w_fn": 3}}, {}, ["metric.w_fn=20"], [], [])
    assert over_file == {"metric": {"w_fn": 20}}


def test_a_constraint_flag_may_ask_for_a_confidence():
    built = spec_from_command_line({}, {}, [], ["precision=0.7@0.9", "recall=0.5"], ["fpr=0.1@.95"])
    assert built["constraints"] == [
        {"metric": "precision", "at_least": 0.7, "confidence": 0.9},
        {"metric": "recall", "at_least": 0.5},
        {"metric": "fpr", "at_most": 0.1, "confidence": 0.95},
    ]
    for item, message in [
        ("precision=0.7@", "is not METRIC=BOUND, METRIC=BOUND@CONFIDENCE"),
        ("precision=0.7@high", "the confidence 'high' is not a number"),
        ("precision=0.7@nan", "the confidence 'nan' is not a finite number"),
        ("precision=@0.9", "is not METRIC=BOUND"),
    ]:
        with pytest.raises(typer.BadParameter, match=message):
            spec_from_command_line({}, {}, [], [item], [])


def test_a_constraint_flag_may_give_its_metric_parameters():
    """Written as a constraint's name is shown (``precision(zero_division=1) >= 0.7``): the
    parameters become the constraint's ``params``, numbers as numbers; a parameter that is not
    NAME=NUMBER is a usage error naming it."""
    built = spec_from_command_line(
        {}, {}, [], ["precision(zero_division=1)=0.7@0.9", "f_beta(beta=2, zero_division=1)=0.5"],
        ["precision(zero_division=0)=0.2"],
    )  # fmt: skip
    assert built["constraints"] == [
        {"metric": "precision", "params": {"zero_division": 1.0}, "at_least": 0.7,
         "confidence": 0.9},
        {"metric": "f_beta", "params": {"beta": 2.0, "zero_division": 1.0}, "at_least": 0.5},
        {"metric": "precision", "params": {"zero_division": 0.0}, "at_most": 0.2},
    ]  # fmt: skip
    for item, message in [
        ("precision(zero_division=1)", "is not METRIC=BOUND"),
        ("precision(zero_division)=0.7", "the parameter 'zero_division' is not NAME=NUMBER"),
        ("precision()=0.7", "the parameter '' is not NAME=NUMBER"),
        ("precision(zero_division=x)=0.7", "the parameter 'zero_division' 'x' is not a number"),
        ("precision(zero_division=1=0.7", "is not METRIC=BOUND"),
    ]:
        with pytest.raises(typer.BadParameter, match=re.escape(message)):
            spec_from_command_line({}, {}, [], [item], [])


def test_the_folds_of_cv_auto_are_the_librarys():
    import metro_cli.progress

    from metro.search.config import AUTO_CV_FOLDS

    assert metro_cli.progress.AUTO_CV_FOLDS == AUTO_CV_FOLDS


def _commands(app: typer.Typer) -> set[str]:
    return set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


USERS = {
    "upload",
    "submit",
    "watch",
    "cancel",
    "result",
    "compare",
    "download",
    "predict",
    "jobs",
    "datasets",
    "models",
    "delete",
}
SERVERS = {"serve", "worker", "migrate", "admin", "demo"}


def test_one_metro_command_has_the_users_and_the_servers_commands():
    """The server's package plugs its commands in through the metro.cli entry point (this
    install has it); without plugins the app holds the users' commands alone."""
    assert _commands(create_app(plugins=False)) == USERS
    assert _commands(create_app()) == USERS | SERVERS
    from cli.main import app

    assert _commands(app) == USERS | SERVERS


def test_a_plugin_that_fails_to_load_leaves_the_other_commands(monkeypatch, capsys):
    import importlib.metadata

    broken = importlib.metadata.EntryPoint("broken", "nowhere.module:register", "metro.cli")
    other = importlib.metadata.EntryPoint("other", "cli.main:register", "another.group")

    class Dist:
        entry_points = (broken, other)

    monkeypatch.setattr(importlib.metadata, "distributions", lambda: [Dist(), Dist()])
    assert _commands(create_app()) == USERS
    err = capsys.readouterr().err
    assert "warning: the commands of nowhere.module:register are not available" in err
    assert "ModuleNotFoundError" in err and err.count("warning:") == 1  # each entry point once


def _rendered(table) -> str:  # type: ignore[no-untyped-def]
    from rich.console import Console

    console = Console(width=200, record=True, force_terminal=True, color_system="standard")
    console.print(table)
    return console.export_text(styles=True)


def test_result_shows_each_labels_own_constraint_values():
    """A multi-label job under recall >= 0.8: the average (0.8333) clears the floor the label
    dog missed (0.7). The Constraints table says its values are means over the labels, and the
    per-label table shows each label's own recall and whether it held (it showed neither)."""
    from types import SimpleNamespace as Ns

    from metro_cli.result import classes_table, constraints_table

    def cell(method: str, mean: float, recall: float, held: int) -> Ns:
        return Ns(method=method, split="test", mean=mean, std=None, n=1,
                  constraint_means=[recall], constraints_held=held)  # fmt: skip

    labels = [("cat", 0.9, 1), ("dog", 0.7, 0), ("eel", 0.9, 1)]
    classes = [
        Ns(label=name, trained_lambda=-0.5, offset=None, selection_score=0.8,
           summary=[cell("metro", 0.7, recall, held), cell("ovr-threshold", 0.6, 0.5, 0)])
        for name, recall, held in labels
    ]  # fmt: skip
    result = Ns(
        summary=[cell("metro", 0.7, 0.8333, 0)], metric="f1", metric_display_name="F1 (macro)",
        greater_is_better=True, classes=classes, method_names=None,
        constraints=[Ns(display_name="Recall ≥ 0.8", confidence=None)],
    )  # fmt: skip
    plain = re.sub(r"\x1b\[[0-9;]*m", "", _rendered(constraints_table(result, "label")))
    words = " ".join(plain.split())
    assert "each value the mean of the per-label values; all hold: every label's held" in words
    rows = re.sub(r"\x1b\[[0-9;]*m", "", _rendered(classes_table(result, "label"))).splitlines()
    assert any("Recall ≥ 0.8 (test)" in r for r in rows) and any("held (test)" in r for r in rows)
    for name, recall, held in labels:
        [row] = [r for r in rows if f" {name} " in r]
        cells = [c.strip() for c in row.strip("│ ").split("│")]
        assert cells[-2:] == [f"{recall:.4f}", "yes" if held else "no"], row


def test_result_bolds_the_best_method_that_kept_its_constraints():
    # The dashboard's "best" under constraints: the best test mean among the methods whose
    # constraints held in every repeat. The table bolded the best mean, floor broken or not.
    from types import SimpleNamespace as Ns

    from metro_cli.result import result_table

    summary = [
        Ns(method="metro", split="test", mean=0.91, std=0.01, n=3, constraints_held=1),
        Ns(method="erm", split="test", mean=0.85, std=0.02, n=3, constraints_held=3),
    ]
    result = Ns(
        summary=summary, metric="f1", metric_display_name="F1", greater_is_better=True,
        constraints=[Ns(display_name="Recall ≥ 0.8", confidence=None)],
    )  # fmt: skip
    text = _rendered(result_table(result))
    bold = "\x1b[1m"
    assert f"{bold}0.8500 ± 0.0200" in text and f"{bold}0.9100" not in text, text
    words = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())
    assert "bold: the best where the constraints held in every repeat" in words
    plain = Ns(**{**vars(result), "constraints": None})
    assert f"{bold}0.9100 ± 0.0100" in _rendered(result_table(plain))  # no floor: the best


def test_a_fallback_is_named_with_the_servers_words_per_repeat():
    from types import SimpleNamespace as Ns

    from metro_cli.choices import fallback_lines

    said = "the search's choice (λ -0.5) rested on too few held-out positives: ..."
    choices = [
        Ns(repeat=0, fallback=None),
        Ns(repeat=1, fallback=Ns(message=said)),
    ]
    assert fallback_lines(choices) == [f"fallback: repeat 1: {said}"]
    assert fallback_lines(choices[1:]) == [f"fallback: {said}"]  # one repeat: no label
    assert fallback_lines([Ns(repeat=0)]) == []  # an older server's choice has no field


def test_predict_reads_a_csv_that_starts_with_a_byte_order_mark(tmp_path):
    # Excel's "CSV UTF-8" writes one; training reads past it, `metro predict` refused the file
    # ("lacks the model's feature column(s) ['a']": the first name was "\ufeffa").
    from metro_cli.predict import read_rows

    path = tmp_path / "rows.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b,y\n1,2,0\n3,4,1\n")
    assert read_rows(path, ["a", "b"]) == [[1.0, 2.0], [3.0, 4.0]]


def test_predict_refuses_a_csv_it_would_read_wrong(tmp_path):
    """A feature named twice was read from its first column, and a file without a header (for
    a model without feature names) lost its first row: exit 0 both times, the scores of other
    values or shifted against their rows."""
    from metro_cli.predict import read_rows

    twice = tmp_path / "twice.csv"
    twice.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(CliError, match=re.escape("names the feature column(s) ['a'] more than")):
        read_rows(twice, ["a", "b"])
    bare = tmp_path / "bare.csv"
    bare.write_text("0.5,1,2\n3,4,5\n6,7,8\n")
    with pytest.raises(CliError, match="is numbers, not a header"):
        read_rows(bare, None)
    bare.write_text("p0,p1,p2\n0.5,1,2\n3,4,5\n")  # any names: read in order
    assert read_rows(bare, None) == [[0.5, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_predict_names_a_value_float32_cannot_hold_by_its_line(tmp_path):
    """The server's 422 named it by its row within a batch ("rows 2-3: ... row 1, value 2"), a
    row number the file does not have."""
    from metro_cli.predict import read_rows

    path = tmp_path / "rows.csv"
    path.write_text("a,b\n1,2\n3,4\n5,1e39\n")
    with pytest.raises(CliError, match=r"column 'b' of .* holds a value too large for the "
                       r"model's float32 features \(line 4: '1e39'\)"):  # fmt: skip
        read_rows(path, None)
    path.write_text("a,b\n1,nan\n")
    with pytest.raises(CliError, match=r"column 'b' of .* is not a finite number \(line 2"):
        read_rows(path, ["a", "b"])
    # Judged as float32 rounds it, as the server judges: 3.4028235e38 (float32's largest, as
    # printed) is just past it in float64 and was refused; 3.4028236e38 rounds to infinity.
    path.write_text("a,b\n3.4028235e38,-3.4028235e38\n")
    assert read_rows(path, None) == [[3.4028235e38, -3.4028235e38]]
    path.write_text("a,b\n1,-3.4028236e38\n")
    with pytest.raises(CliError, match=r"column 'b' .* too large .* \(line 2: '-3.4028236e38'"):
        read_rows(path, None)


def test_a_batch_the_server_refuses_is_named_by_its_rows_in_the_file():
    from types import SimpleNamespace as Ns

    from metro_cli.errors import ApiError
    from metro_cli.predict import score

    class Api:
        def call(self, endpoint, model_id, *, body):  # type: ignore[no-untyped-def]
            if body.instances[0][0] >= 2:
                raise ApiError("Invalid prediction request (422): row 1 is wrong", 422)
            return Ns(margins=[0.0] * 2, labels=[0] * 2, classes=None)

    rows = [[float(i)] for i in range(6)]
    with pytest.raises(CliError, match=r"^data rows 3-4 \(the server counts from 0 in them\): "):
        score(Api(), "m", None, rows, 2)  # type: ignore[arg-type]


def test_predict_sends_a_batch_over_the_servers_row_limit_again_at_the_limit():
    """`--batch-size 20000` against the default limit of 10,000 rows was a 422 for the first
    batch, and the command ended there."""
    from types import SimpleNamespace as Ns

    from metro_cli.errors import ApiError
    from metro_cli.predict import score

    sizes = []

    class Api:
        def call(self, endpoint, model_id, *, body):  # type: ignore[no-untyped-def]
            rows = body.instances
            sizes.append(len(rows))
            if len(rows) > 4:
                raise ApiError(
                    "Invalid prediction request (422): instances: "
                    f"{len(rows)} rows is more than the limit of 4 per request", 422
                )  # fmt: skip
            return Ns(margins=[r[0] for r in rows], labels=[r[0] > 0 for r in rows], classes=None)

    rows = [[float(i)] for i in range(10)]
    assert score(Api(), "m", None, rows, 9).margins == [float(i) for i in range(10)]  # type: ignore[arg-type]
    assert sizes == [9, 4, 4, 2]


def test_predict_sends_a_batch_too_large_for_the_server_again_in_halves():
    from types import SimpleNamespace as Ns

    from metro_cli.errors import ApiError
    from metro_cli.predict import score

    sizes = []

    class Api:  # a server whose body limit takes at most 3 rows
        def call(self, endpoint, model_id, *, body):  # type: ignore[no-untyped-def]
            rows = body.instances
            sizes.append(len(rows))
            if len(rows) > 3:
                raise ApiError("Payload too large (413): the request body exceeds the limit", 413)
            return Ns(margins=[r[0] for r in rows], labels=[r[0] > 0 for r in rows], classes=None)

    rows = [[float(i)] for i in range(10)]
    scores = score(Api(), "m", None, rows, 8)  # type: ignore[arg-type]
    assert scores.margins == [float(i) for i in range(10)]  # every row, once, in order
    assert sizes == [8, 4, 2, 2, 2, 2, 2]


def test_a_yaml_job_file_reads_numbers_as_json_does(tmp_path):
    """YAML 1.1 (PyYAML) wants a dot in a float: `tol: 1e-5` was the string "1e-5" and the job
    a 422; JSON, `--set` and YAML 1.2 read it as a number."""
    from metro_cli.job_spec import read_job_file

    path = tmp_path / "job.yaml"
    path.write_text(
        "training: {tol: 1e-5, lr: 2.5E+1, weight_decay: -.5e-3, epochs: 10}\n"
        "search: {cv: null, refine: 'off', n_lambdas: 0x10}\n"
        "dataset: {uri: data.csv, positive_label: 1e3x}\n"
    )
    spec = read_job_file(str(path))
    assert spec["training"] == {"tol": 1e-5, "lr": 25.0, "weight_decay": -5e-4, "epochs": 10}
    assert spec["search"] == {"cv": None, "refine": "off", "n_lambdas": 16}
    assert spec["dataset"]["positive_label"] == "1e3x"  # not a number: text, as before


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"search": {"strategy": "random"}},
         "job field 'search.strategy': 'random' is not one of grid, bisection, dinkelbach"),
        ({"baselines": ["erm", "svm"]}, "job field 'baselines': 'svm' is not one of erm, "),
        ({"training": {"optimizer": "lion"}}, "job field 'training.optimizer': 'lion'"),
    ],
)  # fmt: skip
def test_a_bad_choice_in_a_job_file_names_its_field_and_the_choices_in_order(spec, message):
    """The generated model's check named the section only ("job field 'search': Unexpected
    value 'random'"), its choices in a set's order, different on every run; for baselines, no
    field at all."""
    from metro_cli.job_spec import build_job

    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"}, **spec}
    with pytest.raises(CliError) as caught:
        build_job(body)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("constraint", "lost"),
    [
        ({"metric": "recall", "at_least": 0.8, "confidenc": 0.9},
         "constraints[1].confidenc (did you mean 'confidence'?)"),
        ({"metric": "precision", "at_least": 0.7, "params": {"zero_divison": 1}},
         "constraints[1].params.zero_divison (did you mean 'zero_division'?)"),
    ],
)  # fmt: skip
def test_a_misspelt_field_of_a_constraint_is_an_error_not_dropped(constraint, lost):
    """The generated models drop keys they do not know, and the check for dropped keys did not
    look inside lists: a constraint's misspelt confidence or parameter was sent without it, and
    the job ran with no confidence or zero_division 0, exit 0."""
    from metro_cli.job_spec import build_job

    body = {"metric": {"preset": "f1"}, "dataset": {"uri": "builtin://breast_cancer"},
            "constraints": [{"metric": "recall", "at_least": 0.5}, constraint]}  # fmt: skip
    with pytest.raises(CliError, match=re.escape(f"unknown field(s) in the job: {lost}")):
        build_job(body)
    constraint.pop("params" if "params" in lost else "confidenc")
    build_job(body)  # without it, the same job is accepted


def test_a_presets_alias_is_read_as_the_server_reads_it():
    """The server and the library read fbeta as f_beta and specificity as true_negative_rate;
    the command line refused both ("'fbeta' is not one of accuracy, ..."), as a job file's
    metric, a constraint's, and --metric. The document now publishes them (x-aliases)."""
    from metro_cli.job_spec import build_job
    from metro_cli.spec_flags import preset_aliases, spec_flags

    from metro.metrics import PRESET_ALIASES

    assert preset_aliases() == PRESET_ALIASES
    job = build_job({"metric": {"preset": "FBeta", "beta": 2},
                     "dataset": {"uri": "builtin://breast_cancer"},
                     "constraints": [{"metric": "specificity", "at_least": 0.5}]})  # fmt: skip
    assert (job.metric.preset, job.constraints[0].metric) == ("f_beta", "true_negative_rate")
    [flag] = [f for f in spec_flags() if f.path == "metric.preset"]
    assert flag.value("fbeta") == "f_beta" and "fbeta for f_beta" in flag._help_text()
    # --metric takes it: the command gets as far as the (absent) server, not a usage error.
    from typer.testing import CliRunner

    run = CliRunner().invoke(
        create_app(plugins=False),
        ["submit", "-d", "builtin://breast_cancer", "--metric", "fbeta", "--beta", "2",
         "--url", "http://127.0.0.1:9", "--api-key", "k"],
    )  # fmt: skip
    assert run.exit_code == 1 and "cannot reach the METRO API" in run.output, run.output


def test_the_best_score_so_far_under_constraints_is_among_the_fits_that_meet_them():
    """`metro watch` showed "best so far Precision 1.0000" for most of a run under a recall
    floor, from a fit far under it."""
    from types import SimpleNamespace

    from metro_cli.progress import best_so_far_text

    job = SimpleNamespace(spec={"constraints": [{"metric": "recall", "at_least": 0.8}],
                                "search": {"cv": None}})  # fmt: skip

    def step(score, recall):
        return SimpleNamespace(validation_metric=score, constraint_values=[recall], fold=None)

    steps = [step(1.0, 0.1), step(0.7, 0.85), step(0.75, 0.79)]
    text = best_so_far_text(job, steps, "Precision", True)
    assert text == "best so far Precision meeting the constraints 0.7000 (validation split)"
    assert best_so_far_text(job, steps[:1], "Precision", True) == (
        "best so far: no fit meets the constraints yet"
    )
    free = SimpleNamespace(spec={"search": {"cv": None}})
    assert best_so_far_text(free, steps, "Precision", True) == (
        "best so far Precision 1.0000 (validation split)"
    )


def test_listings_never_cut_an_id_short_in_a_narrow_terminal():
    """In 80 columns `metro jobs` printed "aa497af1-17…" and `metro datasets` "dataset://…":
    ids no command takes."""
    import datetime
    import uuid
    from types import SimpleNamespace

    from metro_cli.listing import datasets_table, jobs_table
    from rich.console import Console

    now = datetime.datetime.now(datetime.UTC)
    job = SimpleNamespace(
        id=uuid.uuid4(), state="succeeded", failure_reason=None, progress=1.0, best_lambda=-0.5,
        dataset_uri=f"dataset://{uuid.uuid4()}", created_at=now,
        spec={"metric_info": {"display_name": "F2", "greater_is_better": True}},
    )  # fmt: skip
    ds = SimpleNamespace(
        uri=f"dataset://{uuid.uuid4()}", filename="churn.csv", n_rows=400, n_columns=5,
        size_bytes=6007, label_column="churned", created_at=now,
    )  # fmt: skip
    for table, ident in ((jobs_table([job]), str(job.id)), (datasets_table([ds]), ds.uri)):
        console = Console(width=80, record=True)
        console.print(table)
        assert ident in console.export_text()


def test_a_commands_help_keeps_no_line_break_of_its_docstring():
    """`metro watch --help` said "... 1 when it fails (printing its failure reason) or is" /
    "cancelled.": typer kept the docstring's line breaks inside each paragraph."""
    from typer.testing import CliRunner

    from cli.main import app

    for command in ("watch", "serve"):
        rendered = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "250"})
        assert rendered.exit_code == 0, rendered.output
        text = rendered.output
        if command == "watch":
            assert "1 when it fails (printing its failure reason) or is cancelled." in text, text
        else:
            assert "(SQLite and a SQLite-backed broker under ./var, no external" in text, text


def test_metro_help_gives_each_command_its_summary_on_one_line():
    """typer kept the docstrings' line breaks: "result ... each" / "repeat's choice ..."."""
    from typer.testing import CliRunner

    from cli.main import app

    rendered = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "250"})
    assert rendered.exit_code == 0, rendered.output
    line = next(row for row in rendered.output.splitlines() if "│ result " in row)
    assert "each repeat's choice, and the delivered model's id" in line, line


@pytest.mark.parametrize(
    ("dataset", "word"), [({"label_column": "species"}, "class"),
                          ({"label_columns": ["a", "b"]}, "label")],
)  # fmt: skip
def test_a_finished_averaged_jobs_bar_claims_no_single_class_best(dataset, word):
    """The final bar of `metro watch` on a macro-F1 job said "class 'virginica': best so far F1
    0.8696 (fold 4 of 5, held-out)": one class's fold score as the job's best, beside the
    summary line's average; a multi-label job's labels were called classes."""
    from types import SimpleNamespace

    from metro_cli.progress import JobPoller, lambda_text

    spec = {"metric": {"preset": "f1", "average": "macro"}, "dataset": dataset}
    job = SimpleNamespace(state="succeeded", spec=spec, progress=1.0)
    poller = JobPoller.__new__(JobPoller)
    poller.job, poller.name, poller.greater_is_better = job, "F1 (macro)", True
    poller.trace = SimpleNamespace(poll=lambda: pytest.fail("a finished job's trace is not read"))
    assert poller.best_text() == f"· every {word} searched"
    assert lambda_text(job) == f"one trained λ per {word}"
    # as the bar puts them side by side (it read "one trained λ per class every class searched")
    assert f"{lambda_text(job)} {poller.best_text()}" == (
        f"one trained λ per {word} · every {word} searched"
    )
    job.state = "failed"  # at 0%: it said "every class searched" of a job that searched none
    assert "searched" not in poller.best_text()


def test_an_averaged_jobs_constraints_and_fallbacks_are_named_by_label():
    """A multi-label job's per-label choices were counted as repeats ("(2-fold CV, 3 repeats)"
    for one repeat of three labels), and its fallbacks named neither label nor class."""
    from types import SimpleNamespace

    from metro_cli.choices import chosen_constraints_text, fallback_lines, warning_lines

    def choice(repeat: int, label: str | None, value: float, fallback: str | None = None):
        return SimpleNamespace(
            repeat=repeat, label=label, constraint_values=[value], constraints_satisfied=True,
            constraint_reach=None, selection_split="cross-validation", n_folds=2,
            fallback=SimpleNamespace(message=fallback) if fallback else None,
            warnings=[SimpleNamespace(message="thin")] if fallback else [],
        )  # fmt: skip

    names = ["Precision ≥ 0.6"]
    one = [choice(0, "red", 0.6179), choice(0, "green", 0.6186, "too few"), choice(0, "blue", 0.6)]
    assert chosen_constraints_text(one, names) == (
        "constraints met where chosen: Precision ≥ 0.6 red 0.6179, green 0.6186, blue 0.6000 "
        "(2-fold CV)"
    )
    assert fallback_lines(one, "label") == ["fallback: label 'green': too few"]
    assert warning_lines(one, "label") == ["warning: label 'green': thin"]
    two = [*one, choice(1, "red", 0.7), choice(1, "green", 0.7), choice(1, "blue", 0.7, "few")]
    text = chosen_constraints_text(two, names)
    assert text is not None and text.endswith("(2-fold CV, 2 repeats)"), text
    assert "repeat 0 red 0.6179" in text and "repeat 1 blue 0.7000" in text
    assert fallback_lines(two, "label")[-1] == "fallback: repeat 1: label 'blue': few"
    # a binary job's repeats, as before
    binary = [choice(0, None, 0.61), choice(1, None, 0.62, "too few")]
    assert chosen_constraints_text(binary, names) == (
        "constraints met where chosen: Precision ≥ 0.6 0.6100, 0.6200 (2-fold CV, 2 repeats)"
    )
    assert fallback_lines(binary) == ["fallback: repeat 1: too few"]


def test_an_averaged_job_prints_the_results_notices_in_the_servers_words():
    """A multi-class job chosen without folds decides by an untuned argmax: the server says so
    in the result's notices (the CLI had its own copy of the words, the dashboard another)."""
    from types import SimpleNamespace

    from metro_cli.result import choice_lines

    def result(notices: list[SimpleNamespace]) -> SimpleNamespace:
        choices = [
            SimpleNamespace(repeat=0, label=label, n_folds=None, constraint_values=None,
                            fallback=None, warnings=[])
            for label in ("cat", "dog", "eel")
        ]  # fmt: skip
        return SimpleNamespace(
            metric="f1", metric_display_name="F1 (macro)", classes=[object()] * 3,
            selection=None, choices=choices, constraints=[], notices=notices,
        )  # fmt: skip

    said = SimpleNamespace(code="offsets_not_tuned", message="Offsets not tuned: as said.")
    assert choice_lines(result([said])) == ["Offsets not tuned: as said."]
    assert choice_lines(result([])) == []


def test_deleting_a_running_job_says_the_command_that_cancels_it(monkeypatch, capsys):
    """The API's 409 names its route (POST /v1/jobs/<id>/cancel): a CLI user needs the
    command."""
    import uuid

    import typer
    from metro_cli import listing
    from metro_cli.errors import ApiError

    class Api:
        def __init__(self, *args):  # type: ignore[no-untyped-def]
            pass

        def call(self, endpoint, ident):  # type: ignore[no-untyped-def]
            raise ApiError("Conflict (409): cancel it first (POST /v1/jobs/x/cancel)", 409)

    monkeypatch.setattr(listing, "Api", Api)
    job = str(uuid.uuid4())
    with pytest.raises(typer.Exit):
        listing.delete(job, url="http://x", api_key="k")
    said = " ".join(capsys.readouterr().err.split())
    assert f"cancel it first (`metro cancel {job}`), then delete it" in said, said


def test_an_unknown_field_of_a_metric_is_named_against_the_form_its_required_fields_pick():
    """A preset with a coefficient metric's fields was read as the coefficient form (the one
    knowing most of the fields), and 'preset' named as the unknown field."""
    from metro_cli.job_spec import unknown_fields

    mixed = {"preset": "f1", "zero_division": 1, "name": "x", "greater_is_better": True}
    spec = {"metric": mixed, "dataset": {"uri": "builtin://breast_cancer"}}
    assert unknown_fields(spec) == ["metric.name", "metric.greater_is_better"]
    # A misspelt field is named with the one it most likely meant; one like none, alone.
    misspelt = {**spec, "metric": {"preset": "f1"}, "serach": {}, "search": {"n_lambda": 5}}
    assert unknown_fields(misspelt) == [
        "serach (did you mean 'search'?)",
        "search.n_lambda (did you mean 'n_lambdas'?)",
    ]
    coefficients = {"alpha": [1, 0, 0, 0], "beta": [1, 1, 0, 0], "name": "x", "bogus": 1}
    assert unknown_fields({**spec, "metric": coefficients}) == ["metric.bogus"]


def test_the_row_limit_the_cli_reads_is_the_servers_own_words():
    """metro predict reads the server's limit from its 422: the two stay in one wording."""
    from types import SimpleNamespace as Ns

    from metro_cli.predict import _ROW_LIMIT

    from core.errors import InvalidInputError
    from service.inference import rows_to_matrix

    with pytest.raises(InvalidInputError) as caught:
        rows_to_matrix(Ns(n_features=1), instances=[[0.0]] * 6, columns=None, data=None,  # type: ignore[arg-type]
                       max_rows=5)  # fmt: skip
    [error] = caught.value.errors
    match = _ROW_LIMIT.search(error.msg)
    assert match is not None and match[1] == "5", error.msg


def test_a_column_list_reads_a_name_holding_a_comma_when_quoted():
    """--ignore-columns 'Amount, EUR' was split into 'Amount' and 'EUR', and refused."""
    from metro_cli.upload import column_list

    assert column_list('"Amount, EUR",id') == ["Amount, EUR", "id"]
    assert column_list(" a , b ,") == ["a", "b"] and column_list(None) is None


def test_a_utf16_file_is_told_to_be_saved_as_csv_utf8_in_the_servers_words(tmp_path):
    """Excel's "Unicode text": the command line printed the codec's own words ("'utf-8' codec
    can't decode byte 0xff in position 0"), the server "the file is not UTF-8 text"."""
    from metro_cli.local_files import NOT_UTF8, OTHER_SEPARATORS
    from metro_cli.predict import read_rows

    from metro.datasets import _base as server
    from metro.datasets import _csv as server_csv

    assert server.NOT_UTF8 == NOT_UTF8
    assert server_csv._OTHER_SEPARATORS == OTHER_SEPARATORS  # the separators named alike
    path = tmp_path / "export.csv"
    path.write_bytes("a,y\n1,0\n".encode("utf-16"))
    assert _refusal(path, "y", None) == f"could not read {path} as CSV: {NOT_UTF8}"
    with pytest.raises(CliError, match=r"save it as CSV UTF-8"):
        read_rows(path, ["a"])


def test_predict_reads_numbers_as_training_reads_them():
    """'1_000' and Arabic-Indic digits were read as 1000 and 12 by Python's float(), which
    training refuses as text."""
    from metro_cli.predict import _number

    assert [_number(t) for t in ("1_000", "\u0661\u0662", "nan", "x")] == [None] * 4
    assert [_number(t) for t in ("1000", " 1.5e3 ", "TRUE", "-0")] == [1000.0, 1500.0, 1.0, 0.0]


def test_an_answer_of_another_servers_version_is_one_line_saying_so(tmp_path):
    """Against an older server, whose upload answer lacked `label_column`, `metro upload` and
    `metro submit` ended in "unexpected KeyError: 'label_column'"."""
    import httpx
    from metro_cli.api import Api, client_api_version
    from metro_client.api.datasets import get_dataset

    old = {"id": str(uuid.uuid4()), "uri": "dataset://x", "filename": "a.csv", "format": ".csv",
           "size_bytes": 1, "sha256": "0" * 64, "n_rows": 1, "n_columns": 1, "columns": ["y"],
           "created_at": "2026-11-26T00:00:00Z"}  # fmt: skip
    api = Api("http://metro.test", "key")
    api.client.set_httpx_client(
        httpx.Client(
            base_url="http://metro.test",
            transport=httpx.MockTransport(lambda request: httpx.Response(200, json=old)),
        )
    )
    with pytest.raises(CliError) as caught:
        api.call(get_dataset, uuid.UUID(old["id"]))
    said = str(caught.value)
    assert said.startswith("the server at http://metro.test answered without a field this")
    assert "KeyError: 'label_column'" in said and f"made for API {client_api_version()}" in said
    assert "it runs API unknown" in said  # the fake answers its document with the same row
    assert client_api_version() != "unknown"


def test_a_field_an_older_server_refuses_says_the_versions(monkeypatch):
    """A 1.1 server refused a 1.2 job's search.multiclass with "Extra inputs are not
    permitted", and nothing said the server was of another release."""
    import httpx
    from metro_cli.api import Api, client_api_version
    from metro_client.api.jobs import submit_job
    from metro_client.models import JobCreate

    refused = {"type": "https://metro.example/problems/validation", "title": "Invalid job",
               "status": 422, "detail": "search.multiclass: Extra inputs are not permitted",
               "errors": [{"loc": ["body", "search", "multiclass"], "type": "extra_forbidden",
                           "msg": "Extra inputs are not permitted"}]}  # fmt: skip
    api = Api("http://metro.test", "key")
    api.client.set_httpx_client(
        httpx.Client(
            base_url="http://metro.test",
            transport=httpx.MockTransport(lambda request: httpx.Response(422, json=refused)),
        )
    )
    body = JobCreate.from_dict({"metric": {"preset": "f1", "average": "macro"},
                                "dataset": {"uri": "builtin://digits"},
                                "search": {"multiclass": "multinomial"}})  # fmt: skip
    for server, named in (("1.1.0", True), (client_api_version(), False)):
        monkeypatch.setattr(Api, "server_api_version", lambda self, v=server: v)
        with pytest.raises(CliError) as caught:
            api.call(submit_job, body=body)
        said = str(caught.value)
        assert said.startswith("Invalid job (422): search.multiclass: Extra inputs"), said
        assert (f"the server runs API {server}, this client was made for API" in said) is named


def test_metro_version_says_the_client_and_the_api_it_was_made_for():
    from metro_cli.api import client_api_version
    from typer.testing import CliRunner

    run = CliRunner().invoke(create_app(plugins=False), ["--version"])
    assert run.exit_code == 0, run.output
    assert run.output.startswith("metro client ") and run.output.rstrip().endswith(
        f"for the METRO API {client_api_version()}"
    )


def test_a_multilabel_rerun_takes_an_upload_made_before_uploads_were_checked_so(tmp_path):
    """`metro submit --label-columns ... --idempotency-key K` run again took only an earlier
    upload checked with the same label columns: one made by an older client (no label fields)
    was uploaded anew, and the key then refused the job as another submission."""
    import hashlib

    import httpx
    from metro_cli.api import Api
    from metro_cli.submit import same_uploads

    path = tmp_path / "tags.csv"
    path.write_bytes(b"a,red,blue\n1,0,1\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def row(label_column=None, label_columns=None):
        return {"id": str(uuid.uuid4()), "uri": f"dataset://{uuid.uuid4()}", "filename": "t.csv",
                "format": ".csv", "size_bytes": 17, "sha256": digest, "n_rows": 1,
                "n_columns": 3, "columns": ["a", "red", "blue"], "label_column": label_column,
                "labels": None, "label_columns": label_columns, "ignore_columns": None,
                "warnings": [], "created_at": "2026-11-29T00:00:00Z"}  # fmt: skip

    rows = [row(), row(label_columns=["red", "blue"]), row(label_columns=["red", "a"]),
            row(label_column="red")]  # fmt: skip
    api = Api("http://metro.test", "key")
    api.client.set_httpx_client(
        httpx.Client(
            base_url="http://metro.test",
            transport=httpx.MockTransport(
                lambda request: httpx.Response(200, json={"items": rows, "next_cursor": None})
            ),
        )
    )
    found = [d.uri for d in same_uploads(api, path, None, ["red", "blue"])]
    assert found == [rows[0]["uri"], rows[1]["uri"]]
    assert [d.uri for d in same_uploads(api, path, "red")] == [rows[3]["uri"]]


def test_a_multilabel_files_label_columns_are_checked_in_one_read(tmp_path):
    path = tmp_path / "tags.csv"
    path.write_text("a,red,blue\n1,0,1\n")
    check_local_dataset(path, label_column=None, label_columns=["red", "blue"], positive_label=None)
    with pytest.raises(CliError, match=r"label column 'green' not found; columns are") as caught:
        check_local_dataset(
            path, label_column=None, label_columns=["red", "green"], positive_label=None
        )
    assert "default label column" not in str(caught.value)


def test_a_multinomial_jobs_lines_claim_no_lambda():
    """search.multiclass multinomial: `metro watch` said "one trained λ per class · every class
    searched" and "trained λ per class: cat -, dog -"; `metro result` had a trained λ column of
    dashes and "METRO chose by ...", where no λ was trained and no search chose."""
    from types import SimpleNamespace as Ns

    from metro_cli.progress import JobPoller, lambda_text
    from metro_cli.result import choice_lines, classes_table
    from metro_cli.watch import averaged_text

    spec = {"metric": {"preset": "f1", "average": "macro"}, "dataset": {"label_column": "kind"},
            "search": {"multiclass": "multinomial"}}  # fmt: skip
    job = Ns(state="succeeded", spec=spec, progress=1.0)
    poller = JobPoller.__new__(JobPoller)
    poller.job, poller.name, poller.greater_is_better = job, "F1 (macro)", True
    poller.trace = Ns(poll=lambda: [])
    assert lambda_text(job) == "one multinomial model, no λ"
    assert poller.best_text() == "· offsets tuned per class"
    choices = [Ns(repeat=0, label=name, trained_lambda=None, offset=0.25 * i)
               for i, name in enumerate(("cat", "dog"))]  # fmt: skip
    text = averaged_text(job, choices, "F1 (macro)", Ns(selection=None))
    assert text == "one multinomial model (no λ), offset per class: cat 0.000, dog 0.250"

    classes = [Ns(label=c.label, trained_lambda=None, offset=c.offset, selection_score=0.8,
                  summary=[Ns(method="metro", split="test", mean=0.7, std=None, n=1,
                              constraint_means=None, constraints_held=None)])
               for c in choices]  # fmt: skip
    result = Ns(
        summary=[], metric="f1", metric_display_name="F1 (macro)", greater_is_better=True,
        classes=classes, method_names=None, constraints=[], multiclass="multinomial",
        selection=Ns(mean=0.8, std=None, n=1, split="cross-validation", n_folds=5),
        choices=[Ns(repeat=0, label=c.label, n_folds=5, constraint_values=None, fallback=None,
                    warnings=[]) for c in choices], notices=[],
    )  # fmt: skip
    table = re.sub(r"\x1b\[[0-9;]*m", "", _rendered(classes_table(result)))
    assert "trained λ" not in table and "offset" in table, table
    lines = choice_lines(result)
    assert lines[0].startswith("trained as one multinomial logistic regression"), lines
    assert not any(line.startswith("METRO chose") for line in lines), lines
    assert any(line.startswith("offsets tuned by F1 (macro)") for line in lines), lines


def test_the_upload_hint_is_given_only_where_the_refusal_is_the_uris(tmp_path):
    """A job file naming a local file by its path: the hint to give it with --dataset went on
    every 422, a bound out of range among them, where the server had taken the path."""
    from metro_cli.errors import ApiError
    from metro_cli.submit import _with_upload_hint

    here = tmp_path / "d.csv"
    here.write_text("a,y\n1,0\n")
    spec = {"dataset": {"uri": str(here)}}
    about_uri = ApiError("Invalid job (422): dataset.uri: local files are not enabled", 422)
    about_bound = ApiError("Invalid job (422): constraints.0.at_least: 2 is not a rate", 422)
    assert "give it with --dataset" in str(_with_upload_hint(about_uri, spec))
    assert _with_upload_hint(about_bound, spec) is about_bound
    assert _with_upload_hint(about_uri, {"dataset": {"uri": str(tmp_path / "x.csv")}}) is about_uri


def test_result_names_the_positive_label():
    """F1 of "fraud" and F1 of "ok" are different numbers: `metro result` says which class
    the metric (and a constraint) counted as positive; a job of several classes, or a server
    that does not say (before 1.4), has no such line."""
    from metro_cli.result import positive_label_line
    from metro_client.models import JobResult
    from metro_client.types import UNSET

    body = {
        "job_id": str(uuid.uuid4()), "metric": "f1", "metric_display_name": "F1",
        "greater_is_better": True, "trained_lambda": -0.5, "shift": "minimal",
        "lambda_star": -0.5, "selection": None, "choices": [], "constraints": [],
        "summary": [], "method_names": {}, "runs": [],
        "labels": {"positive": "fraud", "negative": "ok"},
    }  # fmt: skip
    res = JobResult.from_dict(body)
    assert positive_label_line(res) == (
        "positive label 'fraud' (negative 'ok'): F1 counts 'fraud' as positive"
    )
    res = JobResult.from_dict({**body, "constraints": [{"name": "recall >= 0.8",
        "display_name": "Recall ≥ 0.8", "metric_display_name": "Recall", "sense": "at_least",
        "bound": 0.8, "confidence": None}]})  # fmt: skip
    assert "F1 and the constraints count 'fraud'" in positive_label_line(res)
    older = JobResult.from_dict({k: v for k, v in body.items() if k != "labels"})
    assert older.labels is UNSET and positive_label_line(older) is None
    assert positive_label_line(JobResult.from_dict({**body, "labels": None})) is None
