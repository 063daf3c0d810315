"""How often the floor held on test where METRO's fit warned `constraint_uncertain`, and where it
did not: the measurement the warning is kept by (docs/quality.md, "A floor met on a handful of
rows"). Only fits delivered as meeting their floor on the folds count (the warning is given
only there). Reads results of ``bench/constrained.py`` run with the code that records each
fit's warning codes.

    python bench/constraint_uncertain.py bench/results/constrained-uncertain-main.json \\
        bench/results/constrained-uncertain-fresh.json \\
        bench/results/constrained-uncertain-unseen.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from constrained import PROBLEMS, _label

CODE = "constraint_uncertain"


def counts(cells: dict) -> dict[str, list[int]]:
    """Per problem: [held where it fired, fired, held where it did not, did not]."""
    out: dict[str, list[int]] = {}
    for rec in cells.values():
        if rec["method"] != "metro":
            continue
        for chosen, held in zip(rec["chosen"], rec["holds"], strict=True):
            if not chosen["feasible_cv"]:
                continue
            if "warnings" not in chosen:
                raise SystemExit(f"{rec['task']}: no warning codes recorded (older code)")
            row = out.setdefault(rec["problem"], [0, 0, 0, 0])
            i = 0 if CODE in chosen["warnings"] else 2
            row[i] += int(held)
            row[i + 1] += 1
    return out


def _share(held: int, n: int) -> str:
    return f"{held} / {n} ({held / n:.0%})" if n else "0 / 0"


def main() -> None:
    from scipy.stats import fisher_exact

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    lines = [
        "| suite | problem | met on the folds | warned | held on test: warned | not warned |",
        "|---|---|---|---|---|---|",
    ]
    total = [0, 0, 0, 0]
    for path in args.results:
        per = counts(json.loads(path.read_text())["cells"])
        for problem in PROBLEMS:
            if problem not in per:
                continue
            a, b, c, d = per[problem]
            total = [t + v for t, v in zip(total, per[problem], strict=True)]
            lines.append(
                f"| {path.stem} | {_label(problem)} | {b + d} | {b} | {_share(a, b)} | "
                f"{_share(c, d)} |"
            )
    a, b, c, d = total
    p = fisher_exact([[a, b - a], [c, d - c]], alternative="less").pvalue if b and d else 1.0
    lines.append(
        f"| all | all | {b + d} | {b} | {_share(a, b)} | {_share(c, d)} |\n\n"
        f"Held on test where warned minus where not: {(a / b if b else 0) - c / d:+.1%} "
        f"(one-sided Fisher exact p = {p:.2g})"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
