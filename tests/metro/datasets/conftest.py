"""A small table that the reader, path and loader tests write in each format."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def table() -> pd.DataFrame:
    """Six rows whose first feature is the row number, so alignment with y can be checked."""
    return pd.DataFrame(
        {
            "x1": np.arange(6, dtype=np.int64),
            "x2": [0.5, 1.5, 2.5, 3.5, 4.5, 5.5],
            "flag": [True, False, True, False, True, False],
            "y": [0, 1, 1, 0, 1, 0],
        }
    )
