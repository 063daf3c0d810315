"""Rerun named cells (task x metric) of bench/defaults.py or bench/small_data.py into a file.

The cells are fitted by the scripts' own ``run_cell`` (same splits, seeds and record format) and
written under the same keys, so the file reads as either script's output; a cell not named keeps
its stored record. Used to rerun only the cells a change can reach: the guard's fallback
delivers the ERM-like grid point unrefined, so only a cell with such a stored fit could have
delivered it (docs/quality.md, the guard's fallback against the choice it replaces).

    python bench/rerun_cells.py --tier small --out F --seeds 3 --first-seed 0 \\
        --cell 'r:mlmRev/star@500|f0.5' --cell ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import defaults
import small_data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=("main", "small"), required=True)
    parser.add_argument(
        "--cell", action="append", required=True, help="task|metric (small: task@size|metric)"
    )
    parser.add_argument("--method", default="metro")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    data = defaults.load(args.out)
    started = time.perf_counter()
    for cell in args.cell:
        task, metric = cell.split("|")
        if args.tier == "small":
            name, size = task.rsplit("@", 1)
            rec = small_data.run_cell(
                name, int(size), metric, args.method, args.seeds, args.first_seed
            )
        else:
            rec = defaults.run_cell(task, metric, args.method, args.seeds, args.first_seed)
            rec["tag"] = ""
        data["cells"][defaults.key(rec["task"], rec["metric"], rec["method"], "")] = rec
        print(
            f"{time.perf_counter() - started:7.1f}s {rec['task']:32s} {rec['metric']:8s} "
            f"{rec['method']:12s} {np.mean(rec['test']):6.2f}",
            flush=True,
        )
        args.out.write_text(json.dumps(data, indent=1) + "\n")
    defaults.finish_run(
        data, args.out, sys.argv[1:] if argv is None else argv, started, len(args.cell)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
