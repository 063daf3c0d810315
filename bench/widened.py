"""The widened benchmark of issue 21: the main table and the small-data tier read as one.

Nothing is fitted here: the cells are the stored records of ``bench/defaults.py`` (the main
tier: 25 tasks x 4 metrics, 5 seeds, 80/20 splits) and ``bench/small_data.py`` (the small tier:
20 (task, size) settings x 4 metrics, 5 seeds), each a task x metric (x size) cell whose value is
the mean over its seeds of the paired difference. Their task names differ (the small tier's carry
``@<size>``), so the union has every cell of both. The report is the issue's "done when": per
peer, the mean over all cells, the median cell, Wilcoxon's p over the paired seeds, cells won /
tied / lost, the share of cells more than 1 and 3 points behind, and the worst ten cells.

Examples
    python bench/widened.py                             # the default against TTCV and Parambath
    python bench/widened.py --main /tmp/main-now.json   # with a rerun of the main tier
    python bench/widened.py --suite fresh               # the 20 tasks no default was chosen on
    python bench/widened.py --small-more bench/results/small-data-seeds5-9.json   # 10 seeds
    python bench/widened.py --main-more bench/results/defaults-seeds5-9.json ...  # main, too
    python bench/widened.py ... --also bench/results/refine-schedule.json \
        --method metro:anneal-t3-consistent                 # a variant run on ten seeds at once
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from defaults import FRESH_OUT as FRESH_MAIN
from defaults import SUITES
from small_data import FRESH_OUT as FRESH_SMALL
from small_data import summary_table, worst_cells

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "bench/results/defaults.json"
SMALL = ROOT / "bench/results/small-data.json"


def widened(main: dict[str, Any], small: dict[str, Any], methods: list[str]) -> dict[str, Any]:
    """One record set with both tiers' cells of ``methods`` (tags dropped: the default runs)."""
    cells: dict[str, Any] = {}
    for tier in (main, small):
        for name, cell in tier["cells"].items():
            if cell["method"] in methods and not cell.get("tag"):
                cells[name] = cell
    return {"cells": cells}


def with_more_seeds(records: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """``records`` with each cell's seeds followed by the same cell's seeds in ``more`` (a run
    with ``--first-seed``): both methods of a pair get the same seeds in the same order, so the
    pairing per seed holds. A cell missing from either is left out of the result (so only the
    methods run on the further seeds remain)."""
    cells: dict[str, Any] = {}
    for name, cell in records["cells"].items():
        extra = more["cells"].get(name)
        if extra is None:
            continue
        joined = dict(cell)
        for field in ("test", "n_test", "test_predicted_positive", "seconds", "chosen"):
            joined[field] = list(cell.get(field, [])) + list(extra.get(field, []))
        cells[name] = joined
    return {"cells": cells}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--main", type=Path, help="the main tier's records")
    parser.add_argument("--small", type=Path, help="the small tier's records")
    parser.add_argument(
        "--suite",
        choices=SUITES,
        default="main",
        help="whose records are read by default: the main benchmark's tasks, or the fresh ones "
        "no default was chosen on (bench/rdatasets_tasks.py)",
    )
    parser.add_argument(
        "--main-more",
        type=Path,
        action="append",
        default=[],
        help="records of the main tier on further seeds (bench/defaults.py --first-seed)",
    )
    parser.add_argument(
        "--small-more",
        type=Path,
        action="append",
        default=[],
        help="records of the small tier on further seeds (bench/small_data.py --first-seed)",
    )
    parser.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        help="records run on every seed at once (e.g. a variant with --seeds 10), either tier: "
        "added to their tier after the seeds are joined",
    )
    parser.add_argument("--method", default="metro")
    parser.add_argument("--peer", nargs="+", default=["ttcv", "parambath"])
    args = parser.parse_args(argv)
    fresh = args.suite == "fresh"
    args.main = args.main or (FRESH_MAIN if fresh else MAIN)
    args.small = args.small or (FRESH_SMALL if fresh else SMALL)
    main_records = json.loads(args.main.read_text())
    if (
        not fresh and args.main != MAIN
    ):  # a rerun of one method: the peers' records are the stored ones
        stored = json.loads(MAIN.read_text())["cells"]
        main_records["cells"] = {**stored, **main_records["cells"]}
    # Each further run's seeds follow the ones before, in the order given (files holding the
    # same cells on different seeds are joined, not overwritten).
    for path in args.main_more:
        main_records = with_more_seeds(main_records, json.loads(path.read_text()))
    small_records = json.loads(args.small.read_text())
    for path in args.small_more:
        small_records = with_more_seeds(small_records, json.loads(path.read_text()))
    for path in args.also:
        for name, cell in json.loads(path.read_text())["cells"].items():
            tier = small_records if "@" in cell["task"] else main_records
            tier["cells"][name] = cell
    data = widened(main_records, small_records, [args.method, *args.peer])
    for tier, records in (("main", main_records), ("small", small_records), ("widened", None)):
        scope = (
            data if records is None else widened(records, {"cells": {}}, [args.method, *args.peer])
        )
        print(f"## {tier}\n")
        print(summary_table(scope, [(args.method, p) for p in args.peer]))
        print()
    for peer in args.peer:
        print(f"## widened: the worst ten cells against {peer}\n")
        print(worst_cells(data, args.method, peer))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
