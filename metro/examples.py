"""A seeded 2-D distribution that makes the paper's Figure 1 concrete.

Section 5 of the paper argues that thresholding a classifier trained for accuracy (the approach
of Koyejo et al., 2014) cannot find the best linear classifier for a ratio metric such as
F0.5, because within a restricted hypothesis set the best classifier for the metric need not be
parallel to the accuracy-trained one; METRO, which trains cost-sensitive surrogates, can rotate.

:func:`figure1_data` draws from a three-component Gaussian mixture built so that this happens:

* positives (29%): a tall, thin vertical strip centered at the origin;
* negatives, the bulk (62%): a cloud up and to the left of the strip's top;
* negatives, a small dense cluster (9%): hugging the right flank of the strip near its middle.

Logistic regression is dominated by the bulk: its boundary crosses the strip facing away from
the bulk, rising to the right. Sliding it (the only freedom a threshold has) far enough to cut
the dense cluster off also cuts off the strip above about the cluster's height. F0.5, which
weighs precision over recall, is served better by a line tilted the other way: under the cluster
on the right, higher across the strip on the left, so that it keeps more positives and still
none of the cluster. A cost-sensitive logistic loss with false positives weighted up (METRO)
turns a good part of the way (about 40 degrees); a brute-force search over lines turns further
(about 75). ``bench/figure1.py`` measures all three and draws them
(``docs/figures/figure1.png``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["FIGURE1_COMPONENTS", "figure1_data"]

# (weight, label, mean (x, y), standard deviations (x, y)) of each axis-aligned Gaussian.
FIGURE1_COMPONENTS: tuple[tuple[float, int, tuple[float, float], tuple[float, float]], ...] = (
    (0.29, 1, (0.0, 0.0), (0.4, 3.0)),  # positives: a tall thin strip
    (0.62, 0, (-2.0, 5.4), (0.7, 0.5)),  # negatives: the bulk, up and to the left
    (0.09, 0, (1.0, 0.45), (0.1, 0.08)),  # negatives: a small dense cluster by the strip
)


def figure1_data(n: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` i.i.d. draws from the Figure 1 mixture: ``X`` (n, 2) float32 and ``y`` (n,) int64
    in {0, 1} (1 = positive). The same ``(n, seed)`` always gives the same sample; different
    seeds give independent samples."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    weights = np.array([c[0] for c in FIGURE1_COMPONENTS])
    counts = rng.multinomial(int(n), weights / weights.sum())
    X = np.empty((int(n), 2))
    y = np.empty(int(n), dtype=np.int64)
    start = 0
    for (_, label, mean, sd), count in zip(FIGURE1_COMPONENTS, counts, strict=True):
        stop = start + int(count)
        X[start:stop] = rng.normal(size=(int(count), 2)) * np.asarray(sd) + np.asarray(mean)
        y[start:stop] = label
        start = stop
    order = rng.permutation(int(n))
    return X[order].astype(np.float32), y[order]
