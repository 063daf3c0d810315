# The two set-up commands of the README: `make run` and `make test`. Each creates .venv and
# installs the project (torch 2.13.0 pinned: a CPU build that pip takes from this machine's disk).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Where `make run` listens: `make run PORT=8080`, or HOST=0.0.0.0 to accept other machines.
HOST ?= 127.0.0.1
PORT ?= 8000
# Test processes (pytest-xdist), a file each at a time: most of the suite's longest tests wait on
# servers and workers they start (the suite's ~960 s of CPU filled 60% of two cores' time with
# two processes), so four keep the CI machine's two cores busier: 2,340 tests in 767 s with
# four, 792 s with three, 816-941 s with two (2026-11-29/30, on it). TEST_WORKERS=0 runs in one
# process.
TEST_WORKERS ?= 4

.PHONY: run test lint typecheck clean

$(STAMP): pyproject.toml clients/python/setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch on its own first: asked for directly, pip takes the CPU build this machine keeps on
	# disk (2.13.0+cpu); resolved as a dependency of the project it took PyPI's CUDA build
	# (several GB). Elsewhere this is PyPI's 2.13.0. The project's pin is then already met.
	$(BIN)/pip install --quiet torch==2.13.0
	# The client last, on its own: its package owns the `metro` script (the project adds its
	# commands through the metro.cli entry point), which reinstalling an older project, one that
	# had a `metro` script of its own, would otherwise remove.
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet -e clients/python
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/metro serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check metro core service worker cli clients/python/metro_cli tests bench
	$(BIN)/ruff format --check metro core service worker cli clients/python/metro_cli tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .hypothesis
