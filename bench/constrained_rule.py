"""A change to the constrained search judged by a rule written before it ran: METRO before and
after, each paired with threshold tuning's stored records, per suite and problem.

For every problem of ``bench/constrained.py``: how many fits' floors held on test before and after
(and threshold tuning's), METRO's mean paired difference to threshold tuning before and after,
the change per fit (mean, Wilcoxon p), how many fits and cells changed, the cells that fell or
rose most, and how many fits were delivered as meeting the floor. A results file may hold only
some seeds of a cell (``--before`` may be given twice: seeds 0-1 and 2-4 of one suite are joined
in the order given); ``--rerun`` files hold cells rerun with the code before, which replace
those of ``--before`` (a stored record older than the code before the change); fits are paired
by seed.

    python bench/constrained_rule.py --after new.json --before old.json [--rerun rerun.json] \\
        --threshold bench/results/constrained-fresh.json [--cells]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from constrained import PROBLEMS, _label

SEEDED = ("objective", "constraint", "holds", "seconds", "chosen")


def joined(paths: list[Path]) -> dict[str, Any]:
    """The cells of ``paths``, a cell's seeds joined in the order of the files."""
    out: dict[str, Any] = {}
    for path in paths:
        for key, rec in json.loads(path.read_text())["cells"].items():
            old = out.get(key)
            out[key] = rec if old is None else {**old, **{f: old[f] + rec[f] for f in SEEDED}}
    return out


def report(after: dict, before: dict, threshold: dict, cells: bool = False) -> str:
    from scipy.stats import wilcoxon

    out = [
        "| problem | fits | floor held on test: before / after (threshold) | METRO - threshold: "
        "before / after | change per fit (Wilcoxon p) | fits changed | cells changed | cells "
        "that moved most | delivered as met: before / after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for problem in PROBLEMS:
        rows = []
        for key, rec in after.items():
            task, prob, method = key.split("|")
            old, thr = before.get(key), threshold.get(f"{task}|{prob}|threshold")
            if prob != problem or method != "metro" or old is None or thr is None:
                continue
            n = min(len(rec["objective"]), len(old["objective"]), len(thr["objective"]))
            if n == 0:
                continue
            met = [sum(bool(c["feasible_cv"]) for c in r["chosen"][:n]) for r in (old, rec)]
            rows.append((task, *(np.asarray(r["objective"][:n]) for r in (old, rec, thr)),
                         *(np.asarray(r["holds"][:n]) for r in (old, rec, thr)), *met))  # fmt: skip
        if not rows:
            continue
        o0, o1, ot, h0, h1, ht = (np.concatenate([r[i] for r in rows]) for i in range(1, 7))
        d = o1 - o0
        moved = (np.abs(d) > 1e-9) | (h0 != h1)
        p = f"{wilcoxon(d).pvalue:.2g}" if np.any(np.abs(d) > 1e-9) else "-"
        per_cell = sorted((float(np.mean(r[2] - r[1])), r[0]) for r in rows)
        changed = [c for c in per_cell if abs(c[0]) > 1e-9]
        extremes = changed[:2] + [c for c in changed[-2:] if c not in changed[:2]]
        out.append(
            f"| {_label(problem)} | {d.size} | {int(h0.sum())} / {int(h1.sum())} "
            f"({int(ht.sum())}) | {np.mean(o0 - ot):+.2f} / {np.mean(o1 - ot):+.2f} | "
            f"{d.mean():+.2f} ({p}) | {int(moved.sum())} | {len(changed)} | "
            + (", ".join(f"{t} {v:+.2f}" for v, t in extremes) or "-")
            + f" | {sum(r[7] for r in rows)} / {sum(r[8] for r in rows)} |"
        )
        for r in rows if cells else ():
            if np.any(np.abs(r[2] - r[1]) > 1e-9) or np.any(r[4] != r[5]):
                notes.append(
                    f"* {_label(problem)}, {r[0]}: objective {np.round(r[1], 2).tolist()} "
                    f"-> {np.round(r[2], 2).tolist()} (threshold {np.round(r[3], 2).tolist()}); "
                    f"held {r[4].astype(int).tolist()} -> {r[5].astype(int).tolist()}"
                )
    return "\n".join(out + (["", *notes] if notes else []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", type=Path, action="append", required=True)
    parser.add_argument("--before", type=Path, action="append", required=True)
    parser.add_argument("--rerun", type=Path, action="append", default=[])
    parser.add_argument("--threshold", type=Path, action="append", required=True)
    parser.add_argument("--cells", action="store_true", help="every fit that changed, by cell")
    args = parser.parse_args(argv)
    before = joined(args.before)
    for path in args.rerun:
        before.update(json.loads(path.read_text())["cells"])
    print(report(joined(args.after), before, joined(args.threshold), args.cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
