"""Settings for every test process."""

from __future__ import annotations

import os

import pytest

# One PyTorch (OpenMP) thread per test process, and per process a test starts (servers, workers,
# the CLI inherit the variable). The suite runs two processes on a two-core machine
# (`make test`); with a thread per core each, their threads spun waiting for each other: the
# estimator's tests took 267 s beside another busy process and 151 s with one thread, for the
# same results. A variable already set (a developer's choice) is kept.
THREADS_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config: pytest.Config) -> None:
    for name in THREADS_VARIABLES:
        os.environ.setdefault(name, "1")
    import torch

    given = os.environ["OMP_NUM_THREADS"].split(",")[0].strip()  # OpenMP allows "4,2"
    torch.set_num_threads(int(given) if given.isdigit() and int(given) > 0 else 1)


# The longest files first (each takes 20 s to 5 min: measured with --durations), the rest in
# their order: `make test` hands whole files to its two processes in collection order, and the
# longest ones, collected last (tests/worker, the README tour), ran alone at the end while the
# other process had nothing left. Longest first shortens that tail; no test depends on order.
LONGEST_FIRST = (
    "tests/test_readme.py", "tests/clients/test_cli.py", "tests/worker/test_recovery.py",
    "tests/metro/test_estimator.py", "tests/worker/test_pipeline.py",
    "tests/worker/test_averaged.py", "tests/worker/test_embedded.py",
    "tests/metro/search/test_safeguard.py", "tests/metro/search/test_refine.py",
    "tests/metro/test_multiclass.py", "tests/test_deployment.py",
    "tests/clients/test_client_install.py", "tests/worker/test_data_digest.py",
    "tests/service/test_dashboard.py", "tests/worker/test_s3.py", "tests/worker/test_progress.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's tests keep their order
