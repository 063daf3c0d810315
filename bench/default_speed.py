"""Wall time of the library default's whole fit against scikit-learn's
``TunedThresholdClassifierCV(StandardScaler + LogisticRegression(), cv=5)`` and one plain
``LogisticRegression`` fit, on the same synthetic data (n x 50, 10% positives), side by side:
each repeat runs the three in turn, so they see the same machine load. Medians over repeats.

    python bench/default_speed.py                          # 10k, 50k and 1M rows
    python bench/default_speed.py --rows 50000 --repeats 5

Results go to ``bench/results/default-speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, make_scorer
from sklearn.model_selection import TunedThresholdClassifierCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from metro import MetroClassifier

OUT = Path(__file__).resolve().parents[1] / "bench/results/default-speed.json"


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(
        n_samples=n, n_features=50, n_informative=10, weights=[0.9, 0.1], flip_y=0.05,
        random_state=0,
    )  # fmt: skip
    return X.astype(np.float32), y


def _time(fit: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    model = fit()
    return time.perf_counter() - started, model


def run(n: int, repeats: int) -> dict[str, Any]:
    X, y = _data(n)
    cut = int(0.8 * n)
    methods = {
        "metro default": lambda: MetroClassifier(metric="f1", random_state=0).fit(X[:cut], y[:cut]),
        "ttcv cv=5": lambda: TunedThresholdClassifierCV(
            make_pipeline(StandardScaler(), LogisticRegression()),
            scoring=make_scorer(f1_score),
            cv=5,
            random_state=0,
        ).fit(X[:cut], y[:cut]),
        "one logistic fit": lambda: make_pipeline(StandardScaler(), LogisticRegression()).fit(
            X[:cut], y[:cut]
        ),
    }
    times: dict[str, list[float]] = {m: [] for m in methods}
    f1: dict[str, float] = {}
    for _ in range(repeats):
        for name, fit in methods.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seconds, model = _time(fit)
            times[name].append(seconds)
            f1[name] = float(f1_score(y[cut:], model.predict(X[cut:])))
    med = {m: statistics.median(t) for m, t in times.items()}
    return {
        "rows": n,
        "features": 50,
        "repeats": repeats,
        "median_seconds": med,
        "all_seconds": times,
        "test_f1": f1,
        "metro_over_ttcv": med["metro default"] / med["ttcv cv=5"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, action="append")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    records = []
    for n in args.rows or [10_000, 50_000, 1_000_000]:
        rec = run(n, args.repeats if n < 1_000_000 else 1)
        records.append(rec)
        med = rec["median_seconds"]
        print(
            f"{n:>9} rows: metro {med['metro default']:.2f} s, ttcv {med['ttcv cv=5']:.2f} s, "
            f"one LR {med['one logistic fit']:.2f} s; metro / ttcv = {rec['metro_over_ttcv']:.2f}"
            f"; test F1 {rec['test_f1']['metro default']:.4f} vs {rec['test_f1']['ttcv cv=5']:.4f}",
            flush=True,
        )
    OUT.write_text(
        json.dumps(
            {
                "machine": platform.processor() or platform.machine(),
                "cpus": os.cpu_count(),
                "torch_threads": torch.get_num_threads(),
                "records": records,
            },
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
