"""``MetroClassifier``: METRO as a scikit-learn estimator."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from metro.constraints import Constraint, get_constraints
from metro.datasets import default_positive, float32_features, id_like_features
from metro.device import resolve_device
from metro.metrics import Metric, MetricSpec, get_metric
from metro.model_selection import split_indices, stratified_folds
from metro.models import ModelSpec, StackedModel, get_model_spec
from metro.options import options_of
from metro.ranges import FeatureRanges
from metro.search import (
    LambdaSolver,
    MetroFitWarning,
    SearchConfig,
    SearchResult,
    SearchWarning,
    TraceStep,
    WarningCode,
    run_search,
)
from metro.search.solver import TrainerSolver, delivered_model
from metro.surrogates import Surrogate, get_surrogate
from metro.trainer import TrainingConfig, predict_scores, require_defined_scores

__all__ = ["MetroClassifier"]

# The estimator's search defaults are SearchConfig's, which the service's job spec uses too.
_DEFAULT_SEARCH = SearchConfig()


def id_like_warning(X: Any, feature_names: Any = None) -> SearchWarning | None:
    """The ``id_like_feature`` warning where features of ``X`` look like an id or a row number
    (:func:`metro.datasets.id_like_features`); None where none does or X is not a table of
    numbers. The library's fit and the service's jobs say it in these words."""
    try:
        table = np.asarray(X)  # numbers as they are: a float64 copy of a large X costs its size
        if table.dtype.kind not in "biuf":
            table = table.astype(np.float64)
    except (TypeError, ValueError):
        return None
    names = id_like_features(table, None if feature_names is None else list(feature_names))
    if not names:
        return None
    shown = ", ".join(repr(n) for n in names[:5])
    return SearchWarning(
        WarningCode.ID_LIKE_FEATURE,
        f"the feature(s) {shown} hold a different integer on every row, filling a range or "
        "named as an id: an id or a row number? The model can read the rows' order from it, "
        "which in a file sorted by date or by label is the answer itself; leave it out of the "
        "features (a job's dataset.ignore_columns, or drop the column) unless it is a "
        "measurement",
    )


class MetroClassifier(ClassifierMixin, BaseEstimator):
    """A binary classifier trained to optimize a ratio metric (F-beta, Jaccard, ...) with METRO.

    The lambda search trains cost-sensitive surrogate models for a sequence of lambdas and keeps
    the one whose hypothesis does best on the metric (see :mod:`metro.search`).

    Parameters
    ----------
    metric : str or MetricSpec, default="f1"
        A preset name (one of :data:`metro.metrics.PRESET_NAMES`: ``"f1"``, ``"f_beta"``,
        ``"jaccard"``, ``"precision"``, ``"recall"``, ``"accuracy"``, ``"weighted_accuracy"``,
        ``"balanced_accuracy"``, ``"true_negative_rate"``, ``"false_positive_rate"``, in any
        case) or a spec.
    metric_params : dict, optional
        Parameters of the preset, e.g. ``{"beta": 0.5}`` for ``"f_beta"``, which needs its
        beta (without one it is refused, not trained as F1).
    surrogate : str, default="logistic"
        One of the six surrogates of the paper's Table 1.
    surrogate_params : dict, optional
        ``{"k": ...}`` for ``"sigmoid"``, ``{"rho": ...}`` for ``"rho_margin"``.
    model : str or ModelSpec, default="linear"
        ``"linear"``, ``"mlp"`` or ``"cnn3"`` (for ``(n, C, H, W)`` inputs).
    model_params : dict, optional
        E.g. ``{"hidden": (64, 64)}`` for ``"mlp"``.
    search : {"grid", "bisection", "dinkelbach"} or SearchConfig, default="grid"
        A strategy name, with the search parameters below; or a whole
        :class:`~metro.search.SearchConfig` (what a job's spec builds), which then stands for
        every search parameter (``n_lambdas`` to ``shrink_confidence`` are not read).
    n_lambdas : int, default=21
        Grid size.
    epsilon, epsilon_m : float
        Bisection/Dinkelbach bracket width and early-stop band on |l^lambda|.
    max_steps : int, default=30
    shift : {"minimal", "paper", "auto"}, default="minimal"
        How cost tables are made non-negative (see :mod:`metro.costs`); ``"auto"`` tries both.
    cv : "auto", int or None, default="auto"
        How the grid chooses lambda and the shift: stratified k-fold cross-validation with the
        metric of the counts pooled over the held-out folds; ``"auto"`` is 5 folds up to 20,000
        rows and a holdout above (and for bisection and Dinkelbach); None is a holdout.
    threshold : {"tuned", "zero"}, default="tuned"
        ``"tuned"`` chooses a decision threshold on h together with lambda, on the same held-out
        scores; the fitted model carries it (``decision_function`` >= 0 is positive either way).
        ``"zero"`` is the paper's sign(h).
    refine : {"auto", "off"}, default="auto"
        ``"auto"``: after the choice, a linear model is moved to a local minimum of the metric
        itself, smoothed (:mod:`metro.trainer.refine`), at each of ``refine_temperatures``; the
        step is kept only when it scores better on the held-out rows the choice was made on, and
        under ``constraints`` only when they hold there too (see :mod:`metro.search.refine`).
        ``"off"``: the search's model as it is.
    refine_temperatures : sequence of float, default=(0.05, 0.2, 0.5)
        The temperatures tried, as fractions of the spread of the chosen model's scores.
    refine_anneal : bool, default=True
        Try the temperatures hottest first, each from the one before's refined model (False:
        each from the search's choice).
    refine_consistency : float >= 1 or None, default=2.0
        Keep a refinement only if the delivered model predicts positive on its training rows
        at a rate within this factor of the refined fold models' rate on the held-out rows
        (None: no check).
    refine_scale : {"free", "held", "both"}, default="both"
        ``"free"``: the refined weights may grow, sharpening the sigmoid towards the 0-1 loss;
        ``"held"``: the scores' spread is held at the start's, so each temperature stays the
        smoothing it names; ``"both"``: each schedule is run and the held-out rows choose.
    guard : {"fallback", "off"}
        ``"fallback"``: a choice whose held-out counts cannot back it (fewer than 5 true
        positives, or fewer predicted positives than a tenth of the held-out positives) is
        replaced by the fallback, the grid's plain-ERM-like fit with its threshold tuned among
        the supported ones; where that is unsupported too, ``warnings_`` says so
        (``no_supported_choice``). ``"off"``: the choice as it is. Unconstrained grid only
        (:mod:`metro.search.safeguard`).
    refine_confidence : float in [0.5, 1), optional
        Keep the refinement only when a paired bootstrap over the held-out rows finds it better
        with at least this probability (None: on any held-out gain).
    refine_signal : float in [0.5, 1) or None, default=0.9
        Keep the refinement only when a paired bootstrap over the held-out rows finds the
        refined classifier better than the better constant one (every row positive, or every
        row negative) with at least this probability (None: no such check). Without
        constraints only.
    guard_confidence : float in [0.5, 1) or None, default=0.75
        Keep a choice the guard finds unsupported where a paired bootstrap over the held-out
        rows finds it better than the fallback with at least this probability (None: the
        fallback replaces it always).
    shrink_confidence : float in [0.5, 1), optional
        Deliver the fallback instead of the choice unless a paired bootstrap over the held-out
        rows finds the choice better with at least this probability (None: never).
    selection, lambda_min, lambda_max, multipliers
        As :class:`~metro.search.SearchConfig` has them (each keyword of the search's settings
        is one of its fields, with its default): which visited model bisection and Dinkelbach
        deliver ("best" or "last"), lambda's range (None: the metric's own bounds), and the
        Lagrange multipliers tried with every lambda under constraints.
    constraints : list of dict, optional
        Floors and ceilings on other ratio metrics, trained for: e.g.
        ``[{"metric": "recall", "at_least": 0.9}]`` or ``{"metric": "false_positive_rate",
        "at_most": 0.05}`` (a preset name, or ``{"alpha", "beta"}``; preset parameters under
        ``"params"``; ``"confidence": 0.9`` asks for the bound to hold with that one-sided
        confidence on the held-out rows, a margin). The grid then runs over lambda and a Lagrange
        multiplier and keeps the best metric among the fits whose constraints hold on the
        held-out data (see :mod:`metro.search.constrained`); grid strategy only.
    validation_fraction : float, default=0.25
        Holdout used to choose lambda when there are no folds; 0 chooses on the training data
        (Alg. 3 on S).
    refit : bool, default=True
        Refit at the chosen lambda on all the data given to ``fit``. False delivers the
        holdout's model and needs ``cv=None`` (or a strategy other than the grid): with folds
        the delivered model is always the refit, and ``refit=False`` is a ``ValueError``.
    training : dict or TrainingConfig, optional
        Trainer settings (optimizer, epochs, learning rate, weight decay, device, ...).
    average : {"macro", "weighted", "micro"} or None, default=None
        None: binary y, as always. Set: the ``average`` of ``sklearn.metrics.f1_score`` over the
        classes of a multi-class y (one label per row; a binary y counts as two classes, as in
        scikit-learn) or over the labels of a multi-label indicator matrix Y, trained for by one
        binary METRO fit per class or label, or for a multi-class y, on request, by one
        multinomial logistic regression (``multiclass``; see :mod:`metro.multiclass`; per-class
        attributes ``estimators_``, ``lambdas_``, ``thresholds_``, ``best_scores_``,
        ``offsets_``, ``selection_cells_``, and ``multiclass_``, the strategy used;
        :func:`metro.multiclass.stacked_model` gives the fit as one model). ``"micro"`` is the
        metric of the cells summed over the classes: for multi-label Y the labels' offsets are
        then tuned together for it on the pooled held-out margins (:mod:`metro.label_offsets`);
        for a multi-class y it is the accuracy, which the argmax's offsets are tuned for.
    multiclass : {"per_class", "multinomial"}, default="per_class"
        How a multi-class y is trained with ``average`` set: "per_class", one METRO search per
        class (one-vs-rest) with per-class offsets on their margins tuned for the average on
        cross-validation folds; "multinomial", one multinomial logistic regression
        (scikit-learn's ``LogisticRegression``, C=1, on the model's own standardization; linear
        models only) with offsets on its logits tuned the same way. The multinomial fit has no
        lambda: ``lambdas_`` is None, ``thresholds_`` zeros, ``estimators_`` empty. Multi-label
        data is always one search per label.
    pos_label : label, optional
        The positive class. By default, the class the labels name where they do (1 of 0/1 or
        -1/1, True, and the same spelled as text: "+1", "TRUE"), as a job infers it; otherwise
        the greater of the two labels (``classes_[1]``), with a warning naming the other.
    random_state : int, optional
        Seeds the split and the trainer. None: the seed ``training`` gives, if it gives one
        (``training={"seed": 3}`` or a TrainingConfig seeds both, as a job's ``training.seed``
        does; an averaged fit's classes too); else the split is drawn anew. Given, it is the
        seed of both, whatever ``training`` says (as a job's repeat seeds its fits).
    callback : callable, optional
        Called with each :class:`~metro.search.TraceStep` as the search proceeds; raising
        ``metro.trainer.TrainingCancelled`` from it stops the fit.

    Attributes
    ----------
    classes_, pos_label_, n_features_in_, metric_ (resolved on the training labels), device_
    (where it was fitted; scored there, or on the CPU where that device is missing), model_ (the
    fitted network, a stack of one, with ``threshold_`` folded into its last bias), best_lambda_
    and best_shift_ (the lambda and shift ``model_`` was trained with), lambda_star_ (the
    search's estimate of lambda*: best_lambda_ for the grid, the last bracket's middle for
    bisection and Dinkelbach, also as ratio_reached_, None for the grid), warnings_ (the
    choice's :class:`~metro.search.SearchWarning` list: a lambda at an end of the grid, a
    classifier that predicts one class or rests on few true positives, constraints not met;
    ``fit`` also issues each as a :class:`~metro.search.MetroFitWarning`),
    threshold_ (the decision threshold chosen on the raw h of the search's fits), n_splits_
    (folds the choice was made on; 0 for a holdout), best_score_ (the held-out metric the choice
    was made by, pooled over the folds, natural orientation), trace_ (list of TraceStep),
    n_fits_, search_result_; with constraints, constraints_ (resolved), constraint_values_ (each
    one's held-out value where the choice was made; with ``average``, a row per label) and
    constraints_satisfied_ (False when no fit met them there: the one closest is kept; with
    ``average``, whether every label's held, each label's in class_constraints_satisfied_);
    refinement_ (the
    :class:`~metro.search.Refinement` step's held-out losses and the temperature kept, None when
    it did not run; when kept, ``threshold_`` is 0 and best_score_ is the refined models'
    held-out metric); safeguard_ (the :class:`~metro.search.Safeguard`: whether and why the
    fallback replaced the choice, None where there was no fallback; when it did, the delivered
    model, ``threshold_``, ``best_lambda_`` and ``best_score_`` are the fallback's);
    feature_ranges_ (a :class:`~metro.ranges.FeatureRanges`: each feature's least and greatest
    finite value over the rows the delivered model was trained on, saved in the manifest and
    checked by :func:`metro.ranges.out_of_range`; None for image inputs).
    """

    def __init__(
        self,
        *,
        metric: str | Metric = "f1",
        metric_params: Mapping[str, Any] | None = None,
        surrogate: str | Surrogate = "logistic",
        surrogate_params: Mapping[str, float] | None = None,
        model: str | ModelSpec = "linear",
        model_params: Mapping[str, Any] | None = None,
        search: str | SearchConfig = _DEFAULT_SEARCH.strategy,
        n_lambdas: int = _DEFAULT_SEARCH.n_lambdas,
        epsilon: float = _DEFAULT_SEARCH.epsilon,
        epsilon_m: float = _DEFAULT_SEARCH.epsilon_m,
        max_steps: int = _DEFAULT_SEARCH.max_steps,
        shift: str = _DEFAULT_SEARCH.shift,
        cv: int | str | None = _DEFAULT_SEARCH.cv,
        threshold: str = _DEFAULT_SEARCH.threshold,
        refine: str = _DEFAULT_SEARCH.refine,
        refine_temperatures: Sequence[float] = _DEFAULT_SEARCH.refine_temperatures,
        refine_anneal: bool = _DEFAULT_SEARCH.refine_anneal,
        refine_consistency: float | None = _DEFAULT_SEARCH.refine_consistency,
        refine_scale: str = _DEFAULT_SEARCH.refine_scale,
        guard: str = _DEFAULT_SEARCH.guard,
        guard_confidence: float | None = _DEFAULT_SEARCH.guard_confidence,
        refine_confidence: float | None = _DEFAULT_SEARCH.refine_confidence,
        refine_signal: float | None = _DEFAULT_SEARCH.refine_signal,
        shrink_confidence: float | None = _DEFAULT_SEARCH.shrink_confidence,
        multiclass: str = _DEFAULT_SEARCH.multiclass,
        selection: str = _DEFAULT_SEARCH.selection,
        lambda_min: float | None = _DEFAULT_SEARCH.lambda_min,
        lambda_max: float | None = _DEFAULT_SEARCH.lambda_max,
        multipliers: Sequence[float] = _DEFAULT_SEARCH.multipliers,
        constraints: Sequence[Mapping[str, Any] | Constraint] | None = None,
        validation_fraction: float = 0.25,
        refit: bool = _DEFAULT_SEARCH.refit,
        training: Mapping[str, Any] | TrainingConfig | None = None,
        pos_label: Any = None,
        random_state: int | None = None,
        callback: Callable[[TraceStep], None] | None = None,
        average: str | None = None,
    ) -> None:
        self.metric = metric
        self.metric_params = metric_params
        self.surrogate = surrogate
        self.surrogate_params = surrogate_params
        self.model = model
        self.model_params = model_params
        self.search = search
        self.n_lambdas = n_lambdas
        self.epsilon = epsilon
        self.epsilon_m = epsilon_m
        self.max_steps = max_steps
        self.shift = shift
        self.cv = cv
        self.threshold = threshold
        self.refine = refine
        self.refine_temperatures = refine_temperatures
        self.refine_anneal = refine_anneal
        self.refine_consistency = refine_consistency
        self.refine_scale = refine_scale
        self.guard = guard
        self.refine_confidence = refine_confidence
        self.refine_signal = refine_signal
        self.guard_confidence = guard_confidence
        self.shrink_confidence = shrink_confidence
        self.multiclass = multiclass
        self.selection = selection
        self.lambda_min = lambda_min
        self.lambda_max = lambda_max
        self.multipliers = multipliers
        self.constraints = constraints
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.training = training
        self.pos_label = pos_label
        self.random_state = random_state
        self.callback = callback
        self.average = average

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = self.average is not None
        tags.input_tags.allow_nan = False
        return tags

    # -- configuration, validated at the boundary ----------------------------------------------
    def _metric(self) -> Metric:
        return get_metric(self.metric, **dict(self.metric_params or {}))

    def _surrogate(self) -> Surrogate:
        return get_surrogate(self.surrogate, **dict(self.surrogate_params or {}))

    def _model_spec(self) -> ModelSpec:
        return get_model_spec(self.model, **dict(self.model_params or {}))

    def _search_config(self) -> SearchConfig:
        if isinstance(self.search, SearchConfig):
            return self.search
        # Every setting of the search is a keyword of the same name (the strategy's is
        # ``search``): tests/metro/test_estimator.py holds the two lists equal.
        given = {
            name: getattr(self, name) for name in options_of(SearchConfig) if name != "strategy"
        }
        for name in ("refine_temperatures", "multipliers"):
            given[name] = tuple(given[name])
        return SearchConfig(strategy=self.search, **given)

    def _training_config(self) -> TrainingConfig:
        if isinstance(self.training, TrainingConfig):
            config = self.training
        elif self.training is None:
            config = TrainingConfig()
        elif isinstance(self.training, Mapping):
            config = TrainingConfig.from_dict(dict(self.training))
        else:
            raise ValueError("training must be a dict or a TrainingConfig")
        seed = self._drawn_seed()
        if seed is not None:
            config = TrainingConfig.from_dict({**config.to_dict(), "seed": seed})
        return config

    def _drawn_seed(self) -> int | None:
        """This fit's seed, drawn once (:meth:`_seed`) and then the same for its split and its
        trainer, however the fit was entered (:meth:`fit`, or :mod:`metro.multiclass` building
        one class's solvers)."""
        if "_fit_seed" not in self.__dict__:
            self._fit_seed = self._seed()
        return self._fit_seed

    def _training_seed(self) -> int | None:
        """The seed ``training`` gives, where it gives one: a dict's ``"seed"``, or a
        TrainingConfig's seed (which always has one)."""
        if isinstance(self.training, Mapping) and "seed" in self.training:
            seed = self.training["seed"]
        elif isinstance(self.training, TrainingConfig):
            seed = self.training.seed
        else:
            return None
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            return None  # TrainingConfig refuses it, in its own words
        return int(seed)

    def _seed(self) -> int | None:
        """``random_state`` as the one integer a fit draws its split and its trainer from: an
        integer as it is (in ``0 .. 2**32 - 1``), a ``RandomState`` or ``Generator`` drawn from
        once per fit, None left unseeded."""
        state = self.random_state
        given = self._training_seed()
        if state is None:
            return given  # training={"seed": 3} seeds the split too, as it does in a job
        if isinstance(state, np.random.RandomState | np.random.Generator):
            return int(state.integers(2**32) if isinstance(state, np.random.Generator)
                       else state.randint(2**32, dtype=np.int64))  # fmt: skip
        if isinstance(state, bool) or not isinstance(state, int | np.integer):
            raise ValueError(
                f"random_state must be None, an integer or a numpy RandomState/Generator, "
                f"got {state!r}"
            )
        if not 0 <= int(state) < 2**32:
            raise ValueError(f"random_state must be between 0 and 2**32 - 1, got {int(state)}")
        return int(state)

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any) -> MetroClassifier:
        # A refit starts clean: nothing fitted before (in the other mode, say: a binary fit's
        # model_ beside an averaged fit's estimators_) is left to be read as this fit's.
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, name)
        self.__dict__.pop("_fit_seed", None)  # drawn again (a RandomState gives a new one)
        if self.average is not None:
            from metro.multiclass import fit_averaged

            fit_averaged(self, X, y)
        elif self._search_config().multiclass == "multinomial":
            raise ValueError(
                "multiclass='multinomial' trains a multi-class y for an averaged metric: pass "
                "average='macro', 'weighted' or 'micro' (without average, y is binary and "
                "trained by one METRO search)"
            )
        else:
            self._fit_binary(X, y)
        found = id_like_warning(X, getattr(self, "feature_names_in_", None))
        if found is not None:
            self.warnings_.append(found)
        self._issue_warnings()
        return self

    def _issue_warnings(self) -> None:
        """Each of ``warnings_`` as a :class:`~metro.search.MetroFitWarning` (per class, named,
        for an averaged fit): a fit that delivers a classifier predicting one class, or resting
        on a handful of positives, says so where the user looks, not only in an attribute."""
        if self.average_ is None:
            found = [("", w) for w in self.warnings_]
        else:
            kind = "label" if self.target_type_ == "multilabel-indicator" else "class"
            found = [
                (f"{kind} {(c.item() if isinstance(c, np.generic) else c)!r}: ", w)
                for c, ws in zip(self.classes_, self.class_warnings_, strict=True)
                for w in ws
            ] + [("", w) for w in self.warnings_ if w.code == WarningCode.ID_LIKE_FEATURE]
        for where, w in found:
            warnings.warn(MetroFitWarning(w.code, where + w.message), stacklevel=3)

    def _fit_binary(
        self,
        X: Any,
        y: Any,
        *,
        folds: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
        wrap_solver: Callable[[str, TrainerSolver], LambdaSolver] | None = None,
    ) -> MetroClassifier:
        """:meth:`fit` for a binary ``y``. :mod:`metro.multiclass` fits its classes with
        ``folds`` (the cross-validation folds every class shares, instead of folds stratified on
        this class) and ``wrap_solver(role, solver)`` (``role``: ``"fold<k>"``, ``"main"`` or
        ``"refit"``), which may put a solver of its own around each of the search's solvers
        (:mod:`metro.search.class_stack`: every class's fold trained in one fit)."""
        self.average_: str | None = None
        shape = getattr(y, "shape", None)
        if shape is not None and len(shape) == 2 and shape[1] > 1:
            raise ValueError(
                f"y is a 2-D target of shape {tuple(shape)} (multi-label); only binary "
                "classification is supported without average. Pass average='macro' for "
                "multi-class or multi-label targets."
            )
        # float64 until the precision check: a cast first would hide what it lost.
        X, y = validate_data(
            self, X, y, allow_nd=True, dtype=[np.float64, np.float32], ensure_min_samples=2
        )
        X = float32_features(X, getattr(self, "feature_names_in_", None))
        target_type = type_of_target(y, input_name="y", raise_unknown=True)
        if target_type != "binary":
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {target_type}."
                " Pass average='macro' for multi-class or multi-label targets."
            )
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(
                "MetroClassifier needs exactly two classes in y; "
                f"got {self.classes_.size} class(es): {self.classes_[:5].tolist()}"
            )
        said = default_positive(self.classes_.tolist())
        # Unless given: the class the labels themselves name ("+1" of "+1"/"-1", "TRUE" of
        # "TRUE"/"false"), as the service infers it (the same CSV trained through a job and
        # through fit optimised F1 for opposite classes), else the greater label, as
        # scikit-learn takes it.
        default = self.classes_[1] if said is None else said
        pos = default if self.pos_label is None else self.pos_label
        if pos not in self.classes_:
            raise ValueError(
                f"pos_label={pos!r} is not one of the classes {self.classes_.tolist()}"
            )
        # The class itself, as y spells it: pos_label=1 for classes [False, True] (or 1.0 for
        # [0, 1]) made predict return 1/0 (1.0/0.0) instead of the classes, and the saved
        # manifest's labels (false and 1) read back as other classes than the fit's.
        pos = self.classes_[int(np.flatnonzero(self.classes_ == pos)[0])]
        self.pos_label_ = pos
        self._negative_label = self.classes_[0] if pos == self.classes_[1] else self.classes_[1]
        if self.pos_label is None and said is None:
            # The greater label, as scikit-learn takes it: for 'Yes' and 'no' that is 'no'
            # ('Y' sorts first), and F1 was optimised for the other class without a word.
            chosen, other = (
                v.item() if isinstance(v, np.generic) else v for v in (pos, self._negative_label)
            )
            warnings.warn(
                f"pos_label was not given: the metric is optimised for {chosen!r}, the greater "
                f"of the labels {self.classes_.tolist()} (scikit-learn's convention); if the "
                f"class you report is {other!r}, pass pos_label={other!r}",
                UserWarning,
                stacklevel=3,
            )
        y01 = (y == pos).astype(np.int64)

        fraction = self.validation_fraction
        if (
            isinstance(fraction, bool)
            or not isinstance(fraction, int | float | np.integer | np.floating)
            or not 0.0 <= float(fraction) < 1.0
        ):
            raise ValueError(f"validation_fraction must be a number in [0, 1), got {fraction!r}")
        if self.callback is not None and not callable(self.callback):
            # Else a TypeError from inside the search, once the first fold had trained.
            raise ValueError(
                "callback must be a callable taking a TraceStep, got "
                f"{type(self.callback).__name__}"
            )
        metric = self._metric()
        spec = metric.resolve(y01)
        self._surrogate()  # a bad surrogate is refused here, before any solver is built
        model_spec = self._model_spec()
        model_spec.check_input(tuple(X.shape[1:]))
        search = self._search_config()
        training = self._training_config()
        constraints = get_constraints(self.constraints, y01)

        make_solver = self._solver_factory(X, y01)

        def solver(role: str) -> LambdaSolver:
            inner = make_solver(*rows[role])
            return inner if wrap_solver is None else wrap_solver(role, inner)

        rows, n_folds = self._search_rows(y01, folds)
        fold_solvers: list[LambdaSolver] | None = None
        if n_folds is not None:
            fold_solvers = [solver(f"fold{k}") for k in range(n_folds)]
            main = fold_solvers[0]
        else:
            main = solver("main")
        refit_solver = solver("refit") if "refit" in rows else None

        result = run_search(
            main,
            config=search,
            fold_solvers=fold_solvers,
            refit_solver=refit_solver,
            on_step=self.callback,
            constraints=constraints,
        )
        self.threshold_ = float(result.threshold)
        self.model_: StackedModel = delivered_model(result)
        self.n_splits_ = n_folds or 0
        self.metric_: MetricSpec = spec
        self.search_result_: SearchResult = result
        self.trace_: list[TraceStep] = result.trace
        self.best_lambda_ = float(result.trained_lambda)
        self.lambda_star_ = float(result.lambda_star)
        self.ratio_reached_ = result.ratio_reached
        self.best_shift_ = result.trained_shift
        self.warnings_ = list(result.warnings)
        self.refinement_ = result.refinement
        self.safeguard_ = result.safeguard
        self.lambda_range_ = spec.lambda_range
        self.n_fits_ = result.n_fits
        self.best_score_ = spec.score_from_loss(result.selection_loss)
        self.constraints_ = constraints
        # A list for a binary fit; an averaged fit's is an array with a row per label.
        self.constraint_values_: list[float] | np.ndarray = list(result.constraint_values)
        self.constraints_satisfied_ = result.constraints_satisfied
        self.device_ = str(resolve_device(training.device))
        # The rows the delivered model was trained on: every row where the chosen lambda was
        # refit (or the refit refined), else the holdout's training rows.
        role = "refit" if result.final is not None else "main"
        trained_on = rows[role][0] if role in rows else np.arange(X.shape[0])
        self.feature_ranges_: FeatureRanges | None = FeatureRanges.of(
            X if trained_on.size == X.shape[0] else X[trained_on]
        )
        return self

    def _search_rows(
        self, y01: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]] | None
    ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray | None]], int | None]:
        """The rows of each solver a binary search uses, by role (``"fold<k>"``: training and
        held-out rows of fold k; ``"main"``: a holdout's, or every row; ``"refit"``: every row),
        and the number of folds (None: no cross-validation). ``folds`` are the shared folds of
        an averaged fit (else stratified on ``y01`` with ``random_state``)."""
        everything = np.arange(y01.size)
        n_folds = self._search_config().folds_for(int(y01.size))
        rows: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        if n_folds is not None:
            if folds is None:
                folds = stratified_folds(
                    y01, n_folds=n_folds, cv=self.cv, random_state=self._drawn_seed()
                )
            elif len(folds) != n_folds:
                raise ValueError(f"{len(folds)} folds given for a search of {n_folds}")
            rows.update((f"fold{k}", (tr, va)) for k, (tr, va) in enumerate(folds))
            rows["refit"] = (everything, None)
        elif float(self.validation_fraction) > 0:
            splits = split_indices(
                y01,
                validation_fraction=float(self.validation_fraction),
                test_fraction=0.0,
                random_state=self._drawn_seed(),
            )
            rows["main"] = (splits.train, splits.validation)
            if self.refit:
                rows["refit"] = (everything, None)
        else:
            rows["main"] = (everything, None)
        return rows, n_folds

    def _solver_factory(
        self, X: np.ndarray, y01: np.ndarray
    ) -> Callable[[np.ndarray, np.ndarray | None], TrainerSolver]:
        """``make(train, val)``: the solver of one role of a binary search on (``X``, ``y01``),
        trained on the rows ``train`` and judged on ``val`` (None: no held-out part); the
        metric, surrogate, model, training and constraints are built once for every role. One
        place builds them, so that a worker fitting part of a search elsewhere builds what the
        search itself would."""
        y01 = np.asarray(y01)
        spec = self._metric().resolve(y01)
        surrogate = self._surrogate()
        model = self._model_spec()
        config = self._training_config()
        constraints = get_constraints(self.constraints, y01)

        def make(train: np.ndarray, val: np.ndarray | None) -> TrainerSolver:
            return TrainerSolver(
                spec,
                X[train],
                y01[train],
                surrogate=surrogate,
                model=model,
                config=config,
                X_validation=None if val is None else X[val],
                y_validation=None if val is None else y01[val],
                constraints=constraints,
            )

        return make

    # -- prediction ------------------------------------------------------------------------------
    def margin(self, X: Any) -> np.ndarray:
        """h(x), the fitted model's score: ``>= 0`` predicts the positive class (``pos_label_``),
        whichever of ``classes_`` that is; the score a saved model (its ONNX ``score``) and the
        service give."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, allow_nd=True, dtype=np.float32)
        # A row whose values overflow the model has no margin: refused, as the service and a
        # saved model refuse it (a NaN margin was predicted as the negative class).
        scores = predict_scores(self.model_, X, device=self._scoring_device())
        return require_defined_scores(scores)[:, 0]

    def decision_function(self, X: Any) -> np.ndarray:
        """scikit-learn's convention: positive means ``classes_[1]``. That is h(x)
        (:meth:`margin`) when ``pos_label_`` is ``classes_[1]`` (the default) and -h(x) when it is
        ``classes_[0]``, so that ``roc_auc_score``, the scorers and ``CalibratedClassifierCV``
        rank the rows the right way round whichever class is positive. With ``average`` set,
        :func:`metro.multiclass.decision_function`: n x C (or n x L) margins, one column for a
        binary y."""
        if getattr(self, "average_", None) is not None:
            from metro import multiclass

            return multiclass.decision_function(self, X)
        h = self.margin(X)
        return h if self.pos_label_ == self.classes_[1] else -h

    def predict(self, X: Any) -> np.ndarray:
        if getattr(self, "average_", None) is not None:
            from metro import multiclass

            return multiclass.predict(self, X)
        positive = self.margin(X) >= 0
        return np.where(positive, self.pos_label_, self._negative_label)

    def save(self, target: str | os.PathLike[str], *, onnx: bool = True) -> dict[str, Any]:
        """Write the fitted classifier as the service saves a job's model (``model.safetensors``,
        ``model.onnx``, ``manifest.json``; never a pickle) to ``target``, a directory or an fsspec
        URL, and return the manifest. :func:`metro.load_classifier` reads it back to predict."""
        from metro.saved import save_classifier

        return save_classifier(self, target, onnx=onnx)

    def _scoring_device(self) -> str:
        """Where to score: the device fitted on, or the CPU where that is not here (a model
        fitted on a GPU machine and read on one without, say)."""
        try:
            return str(resolve_device(self.device_))
        except ValueError:
            return "cpu"

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """The metric (natural orientation: F1 itself) of the predictions on (X, y)."""
        if sample_weight is not None:
            raise ValueError("MetroClassifier.score does not support sample_weight")
        if getattr(self, "average_", None) is not None:
            from metro import multiclass

            return multiclass.score(self, X, y)
        check_is_fitted(self, "model_")
        y = column_or_1d(y, warn=True)
        unseen = set(np.unique(y).tolist()) - set(self.classes_.tolist())
        if unseen:
            raise ValueError(
                f"y holds classes the model was not fitted on: {sorted(map(str, unseen))[:5]}; "
                f"its classes are {self.classes_.tolist()}"
            )
        truth = (y == self.pos_label_).astype(np.int64)
        predicted = (self.predict(X) == self.pos_label_).astype(np.int64)
        return float(self._metric().score(truth, predicted))
