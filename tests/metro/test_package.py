"""The ``metro`` package's public names, loaded on first use (PEP 562)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import metro


@pytest.mark.parametrize("name", metro.__all__)
def test_each_public_name_is_its_home_modules_object(name):
    home = importlib.import_module(metro._HOMES[name])
    assert getattr(metro, name) is getattr(home, name)


def test_the_public_names_and_their_homes_agree():
    assert sorted(metro.__all__) == sorted(metro._HOMES)
    assert set(metro.__all__) <= set(dir(metro))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'MetroClasifier'"):
        metro.MetroClasifier  # noqa: B018


def test_star_import_gives_every_public_name():
    namespace: dict[str, object] = {}
    exec("from metro import *", namespace)
    assert set(metro.__all__) <= set(namespace)


def test_metric_specs_load_without_torch_or_scikit_learn():
    # The API and the command line validate metrics; they need not pay for PyTorch to do so.
    code = (
        "import sys, metro, metro.metrics\n"
        "metro.f1\n"
        "print(sorted(m for m in ('torch', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
