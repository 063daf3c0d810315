"""Settings for every test process."""

from __future__ import annotations

import os

import pytest

# One PyTorch (OpenMP) thread per test process, and per process a test starts (servers, workers,
# the CLI inherit the variable). The suite runs four processes on a two-core machine
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
