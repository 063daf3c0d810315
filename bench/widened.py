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
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--main", type=Path, default=MAIN, help="the main tier's records")
    parser.add_argument("--small", type=Path, default=SMALL, help="the small tier's records")
    parser.add_argument("--method", default="metro")
    parser.add_argument("--peer", nargs="+", default=["ttcv", "parambath"])
    args = parser.parse_args(argv)
    main_records = json.loads(args.main.read_text())
    if args.main != MAIN:  # a rerun of one method: the peers' records are the stored ones
        stored = json.loads(MAIN.read_text())["cells"]
        main_records["cells"] = {**stored, **main_records["cells"]}
    small_records = json.loads(args.small.read_text())
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
