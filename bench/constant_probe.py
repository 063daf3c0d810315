"""Score "deliver the better constant classifier where the held-out rows show no signal" from the
records of ``metro-constant-probe`` (bench/defaults.py), without fitting anything again.

The probe is the default's own fit, plus the paired bootstrap's probability that its pooled
held-out decisions beat the better constant classifier (every row positive, or every row
negative). Below ``--level`` the rule delivers that constant; its test score needs only the
test labels of the fit's split (the main tier's 80/20 split, or the small tier's sample). The
report pairs each fit with the default's record (``--default``; the probe's own predictions must
equal it, which the report checks) and writes the rule's records for ``bench/widened.py --also``.

    python bench/constant_probe.py --level 0.9 --out /tmp/constant90.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import wilcoxon
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

from defaults import TEST_FRACTION, _metric, tasks
from small_data import sample

ROOT = Path(__file__).resolve().parents[1]


def test_labels(task: str, seed: int, loaded: dict[str, Any]) -> np.ndarray:
    """The test labels of ``task``'s split for ``seed`` (``name@size``: the small tier's)."""
    name, _, size = task.partition("@")
    if name not in loaded:
        loaded[name] = tasks()[name].load()
    _, y = loaded[name]
    if size:
        return np.asarray(y[sample(y, int(size), seed)[1]])
    split = train_test_split(y, test_size=TEST_FRACTION, stratify=y, random_state=seed)
    return np.asarray(split[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", type=Path, default=ROOT / "bench/results/constant-probe.json")
    parser.add_argument("--default", type=Path, default=ROOT / "bench/results/refine-signal.json")
    parser.add_argument("--default-method", default="metro:refine-signal")
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    probe = json.loads(args.probe.read_text())["cells"]
    default = json.loads(args.default.read_text())["cells"]
    method = f"metro:constant{round(args.level * 100)}"
    loaded: dict[str, Any] = {}
    records: dict[str, Any] = {}
    diffs: list[float] = []
    cells: dict[str, float] = {}
    mismatched = triggered = 0
    for key, cell in probe.items():
        mine = default[key.replace(cell["method"], args.default_method)]
        metric = _metric(cell["metric"])
        tests = []
        for i, seed in enumerate(cell["seeds"]):
            mismatched += abs(cell["test"][i] - mine["test"][i]) > 1e-9
            chosen = cell["chosen"][i]
            if chosen["constant_p"] >= args.level:
                tests.append(cell["test"][i])
                continue
            triggered += 1
            y = test_labels(cell["task"], seed, loaded)
            constant = np.full(y.shape, 1 if chosen["constant_positive"] else 0)
            tests.append(100.0 * float(metric.score(y, constant)))
        diff = np.asarray(tests) - np.asarray(mine["test"])
        diffs += diff.tolist()
        cells[f"{cell['task']} {cell['metric']}"] = float(diff.mean())
        records[key.replace(cell["method"], method)] = {**cell, "method": method, "test": tests}
    d = np.asarray(diffs)
    changed = d[np.abs(d) > 1e-9]
    v = np.asarray(list(cells.values()))
    print(f"{method} vs the default: {d.size} fits, {triggered} below the level, {changed.size} "
          f"changed on test, probe fits unlike the default's record: {mismatched}")  # fmt: skip
    if changed.size:
        print(f"mean {d.mean():+.3f} points, Wilcoxon p {wilcoxon(changed).pvalue:.3g}, "
              f"changed fits {changed.min():+.1f} to {changed.max():+.1f}")  # fmt: skip
    print(f"cells won / tied / lost: {(v > 1e-9).sum()} / {(abs(v) <= 1e-9).sum()} / "
          f"{(v < -1e-9).sum()}")  # fmt: skip
    for name, value in sorted(cells.items(), key=lambda t: t[1])[:5]:
        print(f"  worst {name} {value:+.2f}")
    if args.out:
        args.out.write_text(json.dumps({"cells": records}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
