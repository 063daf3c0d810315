"""The paper's Figure 1 made concrete: on the 2-D mixture of ``metro.examples.figure1_data``,
compare three linear classifiers for F0.5:

(i)   logistic regression with its threshold tuned for F0.5 on a validation split (Koyejo et
      al.'s Alg. 1, ``fit_baseline("koyejo1")``, refit on all the training data like METRO);
(ii)  METRO: ``MetroClassifier(metric="f_beta", metric_params={"beta": 0.5})``, defaults otherwise;
(iii) a near-best-in-class linear classifier for F0.5: brute force over directions (every
      ``360 / n_angles`` degrees, then refined) and, per direction, the best threshold on the
      training sample.

Prints held-out F0.5 of each over several seeds and the angles between the boundaries' normals,
writes ``bench/results/figure1.json`` and draws ``docs/figures/figure1.png`` for one seed.

    python bench/figure1.py                       # seeds 0-9, plot seed 0
    python bench/figure1.py --seeds 0 1 2 --plot-seed 1
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from metro import MetroClassifier, ModelSpec, TrainingConfig, f_beta
from metro.baselines import fit_baseline
from metro.examples import FIGURE1_COMPONENTS, figure1_data
from metro.model_selection import split_indices
from metro.thresholds import losses_at_all_thresholds
from metro.trainer import predict_scores

ROOT = Path(__file__).resolve().parents[1]
SPEC = f_beta(0.5)
TEST_SEED_OFFSET = 10_000  # held-out samples use seed + this, independent of the training sample


def linear_form(score: Any) -> tuple[np.ndarray, float]:
    """(w, b) with score(x) = w.x + b, read off an affine scorer at three points."""
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    s = np.asarray(score(pts), dtype=np.float64)
    return np.array([s[1] - s[0], s[2] - s[0]]), float(s[0])


def angle_deg(u: np.ndarray, v: np.ndarray) -> float:
    """Angle between two boundaries' normals (each oriented towards its positive side)."""
    c = float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def brute_force_linear(
    X: np.ndarray, y: np.ndarray, *, n_angles: int = 720, refine: int = 41
) -> tuple[np.ndarray, float, float]:
    """The direction and threshold with the best training F0.5 among lines: every direction of a
    grid of ``n_angles``, then a finer grid around the best. Returns (w, b, training F0.5) with
    the prediction ``w.x + b >= 0``."""
    X64 = X.astype(np.float64)

    def best_at(angles: np.ndarray) -> tuple[float, float, float]:
        best = (math.inf, 0.0, 0.0)
        for a in angles:
            w = np.array([math.cos(a), math.sin(a)])
            thresholds, losses = losses_at_all_thresholds(SPEC, X64 @ w, y)
            j = int(np.argmin(losses))
            if losses[j] < best[0]:
                t = thresholds[j]
                # halfway to the next lower score, as metro.thresholds.best_threshold does
                t = (t + thresholds[j + 1]) / 2.0 if j + 1 < thresholds.size else t
                best = (float(losses[j]), float(a), float(t))
        return best

    step = 2 * math.pi / n_angles
    loss, a, t = best_at(np.arange(n_angles) * step)
    loss, a, t = best_at(a + np.linspace(-step, step, refine))
    return np.array([math.cos(a), math.sin(a)]), -t, -loss


def run_seed(seed: int, *, n_train: int, n_test: int) -> dict[str, Any]:
    X, y = figure1_data(n_train, seed=seed)
    X_test, y_test = figure1_data(n_test, seed=TEST_SEED_OFFSET + seed)
    config = TrainingConfig(device="cpu", seed=seed)
    out: dict[str, Any] = {"seed": seed, "n_train": n_train, "n_test": n_test}

    started = time.perf_counter()
    metro = MetroClassifier(
        metric="f_beta", metric_params={"beta": 0.5}, random_state=seed, training=config
    ).fit(X, y)
    w_m, b_m = linear_form(metro.decision_function)
    out["metro"] = {
        "w": w_m.tolist(), "b": b_m, "lambda": metro.best_lambda_, "shift": metro.best_shift_,
        "test_f05": SPEC.score(y_test, (metro.decision_function(X_test) >= 0).astype(np.int64)),
        "seconds": time.perf_counter() - started,
    }  # fmt: skip

    # Koyejo Alg. 1 on the same train/validation split METRO uses, refit on all the data.
    started = time.perf_counter()
    split = split_indices(y, validation_fraction=0.25, test_fraction=0.0, random_state=seed)
    koyejo = fit_baseline(
        "koyejo1", spec=SPEC, X_train=X[split.train], y_train=y[split.train],
        X_validation=X[split.validation], y_validation=y[split.validation],
        model=ModelSpec("linear"), config=config, X_refit=X, y_refit=y,
    )  # fmt: skip
    w_k, b_k = linear_form(lambda P: predict_scores(koyejo.model, P)[:, 0])
    out["koyejo1"] = {
        "w": w_k.tolist(), "b": b_k - koyejo.threshold, "threshold": koyejo.threshold,
        "test_f05": SPEC.score(y_test, koyejo.predict(X_test)),
        "seconds": time.perf_counter() - started,
    }  # fmt: skip

    started = time.perf_counter()
    w_b, b_b, train_f = brute_force_linear(X, y)
    out["best_linear"] = {
        "w": w_b.tolist(), "b": b_b, "train_f05": train_f,
        "test_f05": SPEC.score(y_test, (X_test @ w_b + b_b >= 0).astype(np.int64)),
        "seconds": time.perf_counter() - started,
    }  # fmt: skip
    out["angle_metro_koyejo1"] = angle_deg(w_m, w_k)
    out["angle_best_koyejo1"] = angle_deg(w_b, w_k)
    out["angle_best_metro"] = angle_deg(w_b, w_m)
    return out


def plot(row: dict[str, Any], path: Path, *, n_train: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = figure1_data(n_train, seed=row["seed"])
    fig, ax = plt.subplots(figsize=(6.0, 9.0), dpi=120)
    neg, pos = y == 0, y == 1
    ax.scatter(X[neg, 0], X[neg, 1], s=5, c="#4c72b0", alpha=0.35, lw=0, label="negative")
    ax.scatter(X[pos, 0], X[pos, 1], s=5, c="#dd8452", alpha=0.55, lw=0, label="positive")
    lo = np.percentile(X, 0.5, axis=0) - 0.6
    hi = np.percentile(X, 99.5, axis=0) + 0.6
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])

    def line(key: str, label: str, color: str, style: str) -> None:
        w, b = np.array(row[key]["w"]), row[key]["b"]
        # points of w.x + b = 0 across the view box, parametrized along the boundary
        p0 = -b * w / (w @ w)
        d = np.array([-w[1], w[0]]) / np.linalg.norm(w)
        span = np.linalg.norm(hi - lo) * 1.5
        c = (lo + hi) / 2
        t0 = (c - p0) @ d
        ts = np.array([t0 - span, t0 + span])
        pts = p0[None, :] + ts[:, None] * d[None, :]
        ax.plot(pts[:, 0], pts[:, 1], style, color=color, lw=2.2, label=label)
        # an arrow from the boundary towards its positive side, at the point nearest the center
        foot = p0 + t0 * d
        n = w / np.linalg.norm(w) * 0.9
        ax.annotate("", xy=foot + n, xytext=foot,
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.8})  # fmt: skip

    k, m, b = row["koyejo1"], row["metro"], row["best_linear"]
    line("koyejo1", f"logistic + F0.5 threshold (Koyejo Alg. 1): F0.5 {k['test_f05']:.3f}",
         "#c44e52", "--")  # fmt: skip
    line("metro", f"METRO (F0.5, linear): F0.5 {m['test_f05']:.3f}", "#2a9d3a", "-")
    line("best_linear", f"best linear by brute force: F0.5 {b['test_f05']:.3f}", "black", ":")
    ax.set_title(
        f"Figure 1 made concrete (seed {row['seed']}, {n_train} training points)\n"
        f"held-out F0.5; angle METRO vs logistic {row['angle_metro_koyejo1']:.0f}°, "
        f"best vs logistic {row['angle_best_koyejo1']:.0f}°",
        fontsize=10,
    )
    ax.annotate("dense negative cluster", xy=(1.05, 0.55), xytext=(0.2, 2.6), fontsize=8,
                arrowprops={"arrowstyle": "->", "lw": 0.8})  # fmt: skip
    ax.text(-2.0, 6.5, "bulk of the negatives", fontsize=8, ha="center")
    ax.text(0.25, -5.5, "positives", fontsize=8, ha="left")
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.set_aspect("equal", adjustable="box")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), fontsize=8, markerscale=3,
              framealpha=0.9, title="arrows point to each line's predicted-positive side",
              title_fontsize=8)  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--n-train", type=int, default=4000)
    p.add_argument("--n-test", type=int, default=50_000)
    p.add_argument("--plot-seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p.add_argument("--figure", type=Path, default=ROOT / "docs" / "figures" / "figure1.png")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "figure1.json")
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    rows = []
    head = (
        f"{'seed':>4} {'Koyejo1 F0.5':>12} {'METRO F0.5':>10} {'best-lin F0.5':>13} "
        f"{'METRO-Koy':>9} {'ang M/K':>7} {'ang B/K':>7} {'ang B/M':>7} {'lambda':>7} {'shift':>8}"
    )
    print(head)
    print("-" * len(head))
    for seed in args.seeds:
        r = run_seed(seed, n_train=args.n_train, n_test=args.n_test)
        rows.append(r)
        k, m, b = (r[key]["test_f05"] for key in ("koyejo1", "metro", "best_linear"))
        print(
            f"{seed:>4} {k:>12.3f} {m:>10.3f} {b:>13.3f} {m - k:>+9.3f} "
            f"{r['angle_metro_koyejo1']:>7.1f} {r['angle_best_koyejo1']:>7.1f} "
            f"{r['angle_best_metro']:>7.1f} {r['metro']['lambda']:>7.2f} {r['metro']['shift']:>8}",
            flush=True,
        )

    def stats(values: list[float]) -> dict[str, float]:
        a = np.asarray(values)
        return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
                "min": float(a.min()), "max": float(a.max())}  # fmt: skip

    summary = {
        "koyejo1_f05": stats([r["koyejo1"]["test_f05"] for r in rows]),
        "metro_f05": stats([r["metro"]["test_f05"] for r in rows]),
        "best_linear_f05": stats([r["best_linear"]["test_f05"] for r in rows]),
        "metro_minus_koyejo1": stats(
            [r["metro"]["test_f05"] - r["koyejo1"]["test_f05"] for r in rows]
        ),
        "angle_metro_koyejo1": stats([r["angle_metro_koyejo1"] for r in rows]),
        "angle_best_koyejo1": stats([r["angle_best_koyejo1"] for r in rows]),
        "angle_best_metro": stats([r["angle_best_metro"] for r in rows]),
    }
    print("-" * len(head))
    for key, s in summary.items():
        print(f"{key:<22} mean {s['mean']:.3f}  sd {s['std']:.3f}  min {s['min']:.3f}  "
              f"max {s['max']:.3f}")  # fmt: skip

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "components": FIGURE1_COMPONENTS, "torch": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "rows": rows, "summary": summary,
    }, indent=1))  # fmt: skip
    print(f"wrote {args.out}")
    if not args.no_plot:
        row = next((r for r in rows if r["seed"] == args.plot_seed), rows[0])
        plot(row, args.figure, n_train=args.n_train)
        print(f"wrote {args.figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
