"""How much a METRO lambda search costs compared with one plain (ERM) fit, and how much the
K-at-once trainer saves over fitting the K models one after another.

Two measurements per (dataset, model):

(a) ``search / ERM``: the wall time of a whole 21-lambda grid search (``MetroClassifier``: holdout
    split, the K=21 fit, scoring, and the refit on all the data) divided by the wall time of ONE
    ERM fit (``fit_cost_sensitive`` with K=1 and the cost table [[0, .5], [.5, 0]] =
    ``theta_cost_tables([0.5])``, i.e. the plain logistic loss) with the same model, trainer
    settings and data.
(b) ``sequential / at-once``: the 21 cost tables of that search fitted together (one
    ``fit_cost_sensitive`` call with K=21) versus one K=1 call per table, on the same data.

Each repeat runs every measurement once, interleaved, so that the two sides of a ratio see the
same machine load; the table shows medians over repeats (and the ratio of the medians). Wall
time and process CPU time are both recorded, with the load average before and after, because a
shared machine's load moves these numbers a lot.

    python bench/speed.py                      # everything, torch's default thread count
    python bench/speed.py --threads 1          # pin torch to one thread
    python bench/speed.py --datasets digits --models linear --repeats 5

Results go to ``bench/results/speed-<label>.json`` (``--out`` to choose the path).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from metro import MetroClassifier, ModelSpec, TrainingConfig
from metro.baselines import theta_cost_tables
from metro.costs import cost_tables
from metro.datasets import load_dataset
from metro.metrics import get_metric
from metro.search import grid_lambdas
from metro.trainer import fit_cost_sensitive

DATASETS = {
    "synthetic": "builtin://synthetic?n_samples=50000&n_features=50&positive_fraction=0.1&seed=0",
    "digits": "builtin://digits?positive=9",
    "breast_cancer": "builtin://breast_cancer",
}
MODELS = ("linear", "mlp")
RESULTS = Path(__file__).resolve().parent / "results"
# The project's targets (see docs/benchmarks.md).
TARGET_SEARCH_OVER_ERM_LINEAR = 4.0
TARGET_AT_ONCE_SPEEDUP_MLP = 5.0


class Timer:
    """Wall and process-CPU seconds of one call."""

    def __init__(self) -> None:
        self.wall = math.nan
        self.cpu = math.nan

    def __enter__(self) -> Timer:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return []


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def machine_info(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "torch_num_interop_threads": torch.get_num_interop_threads(),
        "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
        "device": device,
        "loadavg_start": _load(),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        if names:
            info["cpu_model"] = names[0]
    except OSError:
        pass
    if device.startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def bench_one(
    name: str,
    uri: str,
    kind: str,
    *,
    repeats: int,
    seq_repeats: int,
    n_lambdas: int,
    epochs: int,
    hidden: int,
    metric_name: str,
    shifts: list[str],
    device: str,
    skip_sequential: bool,
    log: Callable[[str], None],
) -> dict[str, Any]:
    ds = load_dataset(uri)
    X, y = ds.X, ds.y
    if X.ndim > 2:
        X = X.reshape(X.shape[0], -1)
    model = ModelSpec(kind, hidden=(hidden,))
    config = TrainingConfig(device=device, epochs=epochs, seed=0)
    metric = get_metric(metric_name).resolve(y)
    lambdas = grid_lambdas(*metric.lambda_range, n_lambdas)
    tables = cost_tables(metric, lambdas, shift="minimal")  # what the search trains
    erm_table = theta_cost_tables(np.array([0.5]))

    def erm() -> Any:
        return fit_cost_sensitive(X, y, erm_table, model=model, surrogate="logistic", config=config)

    def search(shift: str) -> MetroClassifier:
        clf = MetroClassifier(
            metric=metric_name, model=model, n_lambdas=n_lambdas, training=config,
            random_state=0, **({} if shift == "default" else {"shift": shift}),
        )  # fmt: skip
        return clf.fit(X, y)

    # Warm-up (allocator, kernels, lazy imports), not timed.
    erm()
    fit_cost_sensitive(X, y, tables[:2], model=model, surrogate="logistic", config=config)

    rec: dict[str, Any] = {
        "dataset": name, "uri": uri, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "positive_fraction": float(y.mean()), "model": model.to_dict(),
        "training": config.to_dict(), "optimizer": config.resolve_optimizer(model),
        "metric": metric_name, "n_lambdas": n_lambdas, "loadavg_start": _load(),
        "shifts": shifts, "default_shift": MetroClassifier().shift,
        "erm": [], **{f"search_{sh}": [] for sh in shifts}, "at_once": [], "sequential": [],
    }  # fmt: skip
    for r in range(repeats):
        with Timer() as t:
            fit = erm()
        rec["erm"].append({"wall": t.wall, "cpu": t.cpu, "steps": fit.n_steps})
        for sh in shifts:
            with Timer() as t:
                clf = search(sh)
            trace = clf.trace_
            n_grid = len(trace) - (1 if len(trace) % n_lambdas else 0)  # the refit is one more
            rec[f"search_{sh}"].append({
                "wall": t.wall, "cpu": t.cpu,
                # TraceStep.seconds is the solve's wall time divided by the lambdas fitted together.
                "grid_fit": sum(st.seconds for st in trace[:n_grid]),
                "refit": sum(st.seconds for st in trace[n_grid:]),
                "n_fits": clf.n_fits_, "n_trace": len(trace), "best_lambda": clf.best_lambda_,
                "best_shift": clf.best_shift_,
            })  # fmt: skip
        with Timer() as t:
            fit = fit_cost_sensitive(X, y, tables, model=model, surrogate="logistic", config=config)
        rec["at_once"].append({"wall": t.wall, "cpu": t.cpu, "steps": fit.n_steps})
        if not skip_sequential and r < seq_repeats:
            walls, cpus, steps = [], [], []
            for k in range(len(tables)):
                with Timer() as t:
                    fit = fit_cost_sensitive(
                        X, y, tables[k : k + 1], model=model, surrogate="logistic", config=config
                    )
                walls.append(t.wall)
                cpus.append(t.cpu)
                steps.append(fit.n_steps)
            rec["sequential"].append({
                "wall": sum(walls), "cpu": sum(cpus), "per_fit_wall": walls, "steps": steps,
            })  # fmt: skip
        parts = [f"erm {rec['erm'][-1]['wall']:.3f}s"]
        for sh in shifts:
            row = rec[f"search_{sh}"][-1]
            parts.append(
                f"search[{sh}] {row['wall']:.3f}s (grids {row['grid_fit']:.3f} "
                f"refit {row['refit']:.3f})"
            )
        parts.append(f"at-once {rec['at_once'][-1]['wall']:.3f}s")
        if len(rec["sequential"]) == r + 1:
            parts.append(f"sequential {rec['sequential'][-1]['wall']:.3f}s")
        log(f"  {name}/{kind} repeat {r}: " + " ".join(parts))
    rec["loadavg_end"] = _load()
    rec["summary"] = summarize(rec)
    return rec


def summarize(rec: dict[str, Any]) -> dict[str, Any]:
    """Medians and minima over the repeats of one record, and the ratios the targets use."""
    shifts = rec["shifts"]

    def med(key: str, field: str = "wall") -> float:
        return _median([row[field] for row in rec[key]])

    def least(key: str, field: str = "wall") -> float:
        # The least-disturbed repeat: on a shared machine the minimum is the better estimate of
        # the uncontended time; the table shows ratios of medians and of minima.
        return min(row[field] for row in rec[key])

    summary: dict[str, Any] = {
        "erm_s": med("erm"), "erm_cpu_s": med("erm", "cpu"), "at_once_s": med("at_once"),
        "sequential_s": med("sequential") if rec["sequential"] else math.nan,
        "erm_steps": _median([row["steps"] for row in rec["erm"]]),
        "at_once_steps": _median([row["steps"] for row in rec["at_once"]]),
        "erm_min_s": least("erm"), "at_once_min_s": least("at_once"),
    }  # fmt: skip
    for sh in shifts:
        key = f"search_{sh}"
        summary[f"{key}_s"] = med(key)
        summary[f"{key}_grid_s"] = med(key, "grid_fit")
        summary[f"{key}_refit_s"] = med(key, "refit")
        summary[f"{key}_over_erm"] = summary[f"{key}_s"] / summary["erm_s"]
        summary[f"{key}_over_erm_per_repeat"] = [
            s["wall"] / e["wall"] for s, e in zip(rec[key], rec["erm"], strict=True)
        ]
        summary[f"{key}_over_erm_cpu"] = med(key, "cpu") / summary["erm_cpu_s"]
        summary[f"{key}_n_trace"] = rec[key][0]["n_trace"]
        summary[f"{key}_min_s"] = least(key)
        summary[f"{key}_over_erm_min"] = least(key) / summary["erm_min_s"]
    if rec["sequential"]:
        summary["sequential_over_at_once"] = summary["sequential_s"] / summary["at_once_s"]
        summary["sequential_over_at_once_per_repeat"] = [
            s["wall"] / a["wall"] for s, a in zip(rec["sequential"], rec["at_once"], strict=False)
        ]
        summary["sequential_steps_total"] = sum(rec["sequential"][0]["steps"])
        summary["sequential_steps"] = rec["sequential"][0]["steps"]
        summary["at_once_cpu_s"] = med("at_once", "cpu")
        summary["sequential_cpu_s"] = med("sequential", "cpu")
        # per table, the fastest of its repeats, summed over the K tables
        per_fit = np.array([row["per_fit_wall"] for row in rec["sequential"]])
        summary["sequential_min_s"] = float(per_fit.min(axis=0).sum())
        summary["sequential_over_at_once_min"] = (
            summary["sequential_min_s"] / summary["at_once_min_s"]
        )
    return summary


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def table(records: list[dict[str, Any]]) -> str:
    shifts = records[0]["shifts"] if records else []
    head = f"{'dataset':<10} {'model':<7} {'opt':<6} {'ERM s':>8} "
    for sh in shifts:
        head += f"{'search[' + sh + '] s':>20} {'/ERM (min)':>12} "
    head += f"{'K=21 s':>8} {'seq s':>8} {'seq/K21 (min)':>14} {'steps ERM/K21/seq':>18}"
    lines = [head, "-" * len(head)]
    for rec in records:
        s = rec["summary"]
        steps = f"{_fmt(s['erm_steps'], 0)}/{_fmt(s['at_once_steps'], 0)}/" + (
            str(s.get("sequential_steps_total", "-"))
        )
        line = f"{rec['dataset']:<10} {rec['model']['kind']:<7} {rec['optimizer']:<6} "
        line += f"{_fmt(s['erm_s'], 3):>8} "
        seq_ratio = (
            f"{_fmt(s['sequential_over_at_once'])} ({_fmt(s['sequential_over_at_once_min'])})"
            if "sequential_over_at_once" in s
            else "-"
        )
        for sh in shifts:
            ratio = f"{_fmt(s[f'search_{sh}_over_erm'])} ({_fmt(s[f'search_{sh}_over_erm_min'])})"
            line += f"{_fmt(s[f'search_{sh}_s'], 3):>20} {ratio:>12} "
        line += (
            f"{_fmt(s['at_once_s'], 3):>8} {_fmt(s['sequential_s'], 3):>8} "
            f"{seq_ratio:>14} {steps:>18}"
        )
        lines.append(line)
    return "\n".join(lines)


def verdicts(records: list[dict[str, Any]]) -> list[str]:
    out = []
    for rec in records:
        s, kind = rec["summary"], rec["model"]["kind"]
        if kind == "linear":
            for sh in rec["shifts"]:
                ratio = s[f"search_{sh}_over_erm"]
                ok = ratio < TARGET_SEARCH_OVER_ERM_LINEAR
                out.append(
                    f"{rec['dataset']}/linear: search[shift={sh}]/ERM = {ratio:.2f} "
                    f"(ratio of minima {s[f'search_{sh}_over_erm_min']:.2f}) "
                    f"(target < {TARGET_SEARCH_OVER_ERM_LINEAR:g}): {'MET' if ok else 'MISSED'}"
                )
        if kind == "mlp" and "sequential_over_at_once" in s:
            ok = s["sequential_over_at_once"] >= TARGET_AT_ONCE_SPEEDUP_MLP
            out.append(
                f"{rec['dataset']}/mlp: sequential/at-once = {s['sequential_over_at_once']:.2f} "
                f"(ratio of minima {s['sequential_over_at_once_min']:.2f}) "
                f"(target >= {TARGET_AT_ONCE_SPEEDUP_MLP:g}): {'MET' if ok else 'MISSED'}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="synthetic,digits",
                   help=f"comma-separated, from {', '.join(DATASETS)}")  # fmt: skip
    p.add_argument("--models", default="linear,mlp")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seq-repeats", type=int, default=None,
                   help="repeats of the (slow) sequential run; default: --repeats")  # fmt: skip
    p.add_argument("--skip-sequential", action="store_true")
    p.add_argument("--n-lambdas", type=int, default=21)
    p.add_argument("--epochs", type=int, default=10, help="SGD epochs (mlp)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--metric", default="f1")
    p.add_argument(
        "--shifts",
        default="minimal,default",
        help="MetroClassifier shift settings to time the search with; 'default' leaves the "
        "estimator's default (one 21-lambda grid per shift tried)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--patch",
        action="append",
        default=[],
        help="apply a prototype library change from bench/profile_fit.py (e.g. mlp-fused)",
    )
    p.add_argument("--label", default=None, help="name of the results file")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--report",
        type=Path,
        nargs="+",
        default=None,
        help="print the tables of saved results files (recomputing their summaries) and exit",
    )
    args = p.parse_args(argv)
    if args.report:
        for path in args.report:
            payload = json.loads(path.read_text())
            records = payload["records"]
            for rec in records:
                rec["summary"] = summarize(rec)
            m = payload["machine"]
            print(
                f"== {path.name}: torch {m['torch']}, threads {m['torch_num_threads']}, "
                f"cpus {m['cpu_count']}, {m.get('cpu_model', '?')}, device {m['device']}"
                f"{', ' + m['gpu'] if 'gpu' in m else ''}, load {m['loadavg_start']} -> "
                f"{m.get('loadavg_end')}, patches {payload['args'].get('patch') or 'none'}"
            )
            print(table(records))
            for line in verdicts(records):
                print(line)
            print()
        return 0

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.patch:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from profile_fit import PATCHES

        for name in args.patch:
            PATCHES[name]()
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for d in datasets:
        if d not in DATASETS:
            p.error(f"unknown dataset {d!r}")
    for m in models:
        if m not in MODELS:
            p.error(f"unknown model {m!r}")
    seq_repeats = args.repeats if args.seq_repeats is None else args.seq_repeats

    info = machine_info(args.device)
    print(
        f"torch {info['torch']}, threads {info['torch_num_threads']} "
        f"(interop {info['torch_num_interop_threads']}), cpus {info['cpu_count']}, "
        f"device {args.device}, load {info['loadavg_start']}, patches {args.patch or 'none'}",
        flush=True,
    )
    records = []
    for d in datasets:
        for m in models:
            records.append(
                bench_one(
                    d,
                    DATASETS[d],
                    m,
                    repeats=args.repeats,
                    seq_repeats=seq_repeats,
                    n_lambdas=args.n_lambdas,
                    epochs=args.epochs,
                    hidden=args.hidden,
                    metric_name=args.metric,
                    shifts=[sh.strip() for sh in args.shifts.split(",") if sh.strip()],
                    device=args.device,
                    skip_sequential=args.skip_sequential,
                    log=lambda line: print(line, flush=True),
                )
            )
    info["loadavg_end"] = _load()
    print()
    print(table(records))
    print()
    for line in verdicts(records):
        print(line)

    label = args.label or (
        f"{args.device.replace(':', '')}-t{info['torch_num_threads']}-"
        f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    )
    out = args.out or RESULTS / f"speed-{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "machine": info,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "records": records,
        "verdicts": verdicts(records),
    }
    out.write_text(json.dumps(payload, indent=1))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
