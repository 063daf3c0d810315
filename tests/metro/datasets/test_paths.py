"""Paths, file:// uris and data roots: what a request may read."""

from __future__ import annotations

import os
import re

import pytest

from metro.datasets import DataError, load_dataset


def test_nul_in_a_path_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="contains a NUL character"):
        load_dataset("file:///data/a%00.csv")
    with pytest.raises(DataError, match="contains a NUL character"):
        load_dataset(str(tmp_path / "a\x00.csv"))


def test_unknown_format_and_missing_file(tmp_path):
    odd = tmp_path / "data.xyz"
    odd.write_text("x")
    with pytest.raises(
        DataError,
        match=re.escape("unknown format '.xyz'; expected one of .csv, .csv.gz, .parquet, .npz"),
    ):
        load_dataset(str(odd))
    with pytest.raises(DataError, match=re.escape("file not found: nowhere/data.csv")):
        load_dataset("nowhere/data.csv")
    with pytest.raises(DataError, match=re.escape("not a regular file")):
        load_dataset(str(tmp_path))
    with pytest.raises(DataError, match="unsupported URI scheme 'https://'"):
        load_dataset("https://example.com/data.csv")
    with pytest.raises(DataError, match="file URIs must be absolute"):
        load_dataset("file://data.csv")
    with pytest.raises(DataError, match="uri is empty"):
        load_dataset("  ")


@pytest.fixture
def roots(tmp_path, table):
    """An allowed root holding a.csv, and a file next to it that must stay out of reach."""
    root = tmp_path / "root"
    root.mkdir()
    table.to_csv(root / "a.csv", index=False)
    table.to_csv(tmp_path / "secret.csv", index=False)
    return root


def test_data_roots_allow_files_inside(roots):
    assert load_dataset(str(roots / "a.csv"), data_roots=[roots]).n_samples == 6
    assert load_dataset((roots / "a.csv").as_uri(), data_roots=[str(roots)]).n_samples == 6
    (roots / "link.csv").symlink_to(roots / "a.csv")  # a link that stays inside is fine
    assert load_dataset(str(roots / "link.csv"), data_roots=[roots]).n_samples == 6


def test_data_roots_block_dotdot_escape(roots):
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(str(roots / ".." / "secret.csv"), data_roots=[roots])
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(f"file://{roots}/../secret.csv", data_roots=[roots])


def test_data_roots_block_symlink_escape(roots, tmp_path):
    (roots / "sneaky.csv").symlink_to(tmp_path / "secret.csv")
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(str(roots / "sneaky.csv"), data_roots=[roots])
    (roots / "dir").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(DataError, match="path is outside the allowed data roots"):
        load_dataset(str(roots / "dir" / "secret.csv"), data_roots=[roots])


def test_data_roots_checked_before_existence(roots, tmp_path):
    # A missing file outside the roots must not be distinguishable from an existing one.
    with pytest.raises(DataError, match="outside the allowed data roots"):
        load_dataset(str(tmp_path / "missing.csv"), data_roots=[roots])
    with pytest.raises(DataError, match="outside the allowed data roots"):
        load_dataset(str(roots / "a.csv"), data_roots=[])
    # A sibling directory whose name merely starts with the root's is not inside it.
    sibling = tmp_path / "root2"
    sibling.mkdir()
    (sibling / "b.csv").write_text("x,y\n1,0\n2,1\n")
    with pytest.raises(DataError, match="outside the allowed data roots"):
        load_dataset(str(sibling / "b.csv"), data_roots=[roots])


def test_data_roots_do_not_apply_to_builtins(roots):
    assert load_dataset("builtin://breast_cancer", data_roots=[roots]).n_samples == 569


def test_relative_path_and_relative_root(tmp_path, monkeypatch, table):
    # Relative paths resolve against the working directory, like any command-line tool.
    monkeypatch.chdir(tmp_path)
    table.to_csv("rel.csv", index=False)
    assert load_dataset("rel.csv", data_roots=[os.curdir]).n_samples == 6
