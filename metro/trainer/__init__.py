"""Fit K cost-sensitive models, one per cost table, in one pass over the data.

For cost table k (``costs[k, pred, true]``, index 0 = negative, 1 = positive) and example i the
surrogate loss is ``C_k(+1, y_i) Phi(-h_k(x_i)) + C_k(-1, y_i) Phi(h_k(x_i))``; the training
objective is its mean over examples summed over the K models, plus ``weight_decay / 2`` times the
squared norm of the weights. The K models share no parameters, so the gradient of the sum with
respect to model k is the gradient of model k's own objective: one forward/backward pass per
batch serves all K fits, and fitting K tables at once gives the K separate fits (up to float
round-off).

Two optimizers:

* ``lbfgs`` (default for linear models): full-batch L-BFGS run *per model* on the stack. Each
  model keeps its own curvature history, step length and stopping test, so the block-diagonal
  structure is used exactly: a hard cost table does not slow down or perturb an easy one, and a
  model that has converged is frozen while the others go on. One pass over the data evaluates all
  K line-search trials at once; for linear models an iteration reads the data twice (the scores'
  change along the search direction, then the gradient) however many trials it takes.
* ``sgd`` (default otherwise): the paper's recipe, minibatch SGD with Nesterov momentum, weight
  decay and a cosine learning-rate decay over all steps. Every epoch uses one permutation shared by
  all K models; on CUDA the data stays resident on the device and the epoch loop never syncs.

Randomness comes from explicit generators seeded per epoch from (seed, epoch), so a run resumed
from a checkpoint repeats the uninterrupted run exactly and the global RNG is never touched.

The package's modules: ``config`` (settings, events, results), ``common`` (input checks and what
both optimizers share), ``lbfgs``, ``sgd``, ``checkpoints`` and ``fit`` (the entry points).
"""

from metro.trainer.config import (
    DIVERGENCE_RULE,
    OPTIMIZERS,
    FitResult,
    TrainingCancelled,
    TrainingConfig,
    TrainingEvent,
)
from metro.trainer.fit import (
    FLOAT32_MAX,
    fit_cost_sensitive,
    predict_scores,
    require_defined_scores,
    undefined_score_rows,
)
from metro.trainer.sgd import augment_images

__all__ = [
    "DIVERGENCE_RULE",
    "FLOAT32_MAX",
    "OPTIMIZERS",
    "FitResult",
    "TrainingCancelled",
    "TrainingConfig",
    "TrainingEvent",
    "augment_images",
    "fit_cost_sensitive",
    "predict_scores",
    "require_defined_scores",
    "undefined_score_rows",
]
