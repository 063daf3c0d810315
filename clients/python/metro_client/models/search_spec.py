from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.cost_shift import CostShift, check_cost_shift
from ..models.decision_threshold import DecisionThreshold, check_decision_threshold
from ..models.multiclass_mode import MulticlassMode, check_multiclass_mode
from ..models.refine_mode import RefineMode, check_refine_mode
from ..models.search_spec_refine_scale import SearchSpecRefineScale, check_search_spec_refine_scale
from ..models.search_strategy import SearchStrategy, check_search_strategy
from ..models.selection_guard import SelectionGuard, check_selection_guard
from ..models.step_selection import StepSelection, check_step_selection
from ..types import UNSET, Unset

T = TypeVar("T", bound="SearchSpec")


@_attrs_define
class SearchSpec:
    """How lambda is searched (metro.search.SearchConfig). Fields left out take the defaults shown."""

    strategy: SearchStrategy | Unset = UNSET
    """ grid (Alg. 3: every lambda at once, chosen on held-out rows), bisection (Alg. 2) or dinkelbach. Server
    default: "grid" """
    n_lambdas: int | Unset = UNSET
    """ The grid's lambdas. Server default: 21 """
    epsilon: float | Unset = UNSET
    """ Bisection and Dinkelbach stop when the bracket is this narrow. Server default: 0.001 """
    epsilon_m: float | Unset = UNSET
    """ Bisection and Dinkelbach also stop when |l^lambda| is at most this. Server default: 0.0 """
    max_steps: int | Unset = UNSET
    """ Bisection and Dinkelbach: at most this many fits. Server default: 30 """
    shift: CostShift | Unset = UNSET
    """ The cost shift (metro.costs): minimal, paper, or auto (both, chosen on held-out rows). Server default:
    "minimal" """
    cv: int | Literal["auto"] | None | Unset = UNSET
    """ Folds the grid chooses lambda by (metric of the pooled held-out counts); 'auto' is 5 folds up to 20,000
    rows, null a holdout. Server default: "auto" """
    threshold: DecisionThreshold | Unset = UNSET
    """ 'tuned' chooses a decision threshold on h with lambda, on the same held-out scores, and folds it into the
    model; 'zero' is the paper's sign(h). Server default: "tuned" """
    refit: bool | Unset = UNSET
    """ Refit the chosen lambda on training + validation; false (deliver the holdout's model) needs cv null, as
    folds deliver the refit. Server default: true """
    selection: StepSelection | Unset = UNSET
    """ Bisection and Dinkelbach deliver the best visited model on held-out rows, or the last. Server default:
    "best" """
    lambda_min: float | None | Unset = UNSET
    """ The lower end of lambda's range (null: the metric's own bound). Server default: null """
    lambda_max: float | None | Unset = UNSET
    """ The upper end of lambda's range (null: the metric's own bound). Server default: null """
    multipliers: list[float] | Unset = UNSET
    """ With constraints: the Lagrange multipliers mu tried with every lambda (0 is the unconstrained problem).
    Server default: [0.0, 0.25, 1.0, 4.0, 16.0] """
    refine: RefineMode | Unset = UNSET
    """ 'auto': after the choice, a linear model is moved to a local minimum of the smoothed metric itself, kept
    only if it scores better on the same held-out rows; 'off': the search's model as it is. Server default: "auto"
    """
    refine_temperatures: list[float] | Unset = UNSET
    """ The temperatures the refinement tries, as fractions of the spread of the chosen model's scores. Server
    default: [0.05, 0.2, 0.5] """
    refine_anneal: bool | Unset = UNSET
    """ Try the refinement's temperatures hottest first, each starting from the one before (graduated smoothing)
    instead of each from the search's choice. Server default: true """
    refine_scale: SearchSpecRefineScale | Unset = UNSET
    """ 'free': the refined weights may grow, sharpening the sigmoid towards the 0-1 loss; 'held': the scores'
    spread is held at the start's, so each temperature stays the smoothing it names; 'both': each schedule is run
    and the held-out rows choose. Server default: "both" """
    refine_consistency: float | None | Unset = UNSET
    """ null: no check; a factor f >= 1 keeps a refinement only if the delivered model, refined on all the training
    rows, predicts positive on them at a rate within f times (either way) the rate of the refined fold models on the
    held-out rows that judged them. Server default: 2.0 """
    guard: SelectionGuard | Unset = UNSET
    """ 'fallback': a choice whose held-out counts cannot support it (fewer than 5 true positives, or predicted
    positives below a tenth of the held-out positives) is compared with the plain-ERM grid point at a supported
    threshold first; 'off': the choice as it is. Server default: "fallback" """
    guard_confidence: float | None | Unset = UNSET
    """ null: a choice the guard finds unsupported gives way to the fallback; a level in [0.5, 1) (0.75, the
    default) keeps it where a paired bootstrap over the held-out rows finds it better than the fallback with at
    least that probability. Server default: 0.75 """
    refine_confidence: float | None | Unset = UNSET
    """ null keeps the refinement on any held-out gain; a level in [0.5, 1) keeps it only when a paired bootstrap
    over the held-out rows finds it better with at least that probability. Server default: null """
    refine_signal: float | None | Unset = UNSET
    """ null: no check; a level in [0.5, 1) keeps a refinement only when a paired bootstrap over the held-out rows
    finds the refined classifier better than the better constant one (every row positive, or every row negative)
    with at least that probability: without evidence of a boundary there is nothing to refine (without constraints
    only). Server default: 0.9 """
    shrink_confidence: float | None | Unset = UNSET
    """ null never shrinks; a level in [0.5, 1) delivers the fallback instead of the choice unless a paired
    bootstrap finds the choice better with at least that probability. Server default: null """
    multiclass: MulticlassMode | Unset = UNSET
    """ Multi-class data (metric.average): 'per_class' runs one METRO search per class (one-vs-rest) and tunes per-
    class offsets on their margins for the average; 'multinomial' fits one multinomial logistic regression (linear
    models only; no lambda) and tunes the offsets on its logits. Multi-label data is always one search per label.
    Server default: "per_class" """

    def to_dict(self) -> dict[str, Any]:
        strategy: str | Unset = UNSET
        if not isinstance(self.strategy, Unset):
            strategy = self.strategy

        n_lambdas = self.n_lambdas

        epsilon = self.epsilon

        epsilon_m = self.epsilon_m

        max_steps = self.max_steps

        shift: str | Unset = UNSET
        if not isinstance(self.shift, Unset):
            shift = self.shift

        cv: int | Literal["auto"] | None | Unset
        if isinstance(self.cv, Unset):
            cv = UNSET
        else:
            cv = self.cv

        threshold: str | Unset = UNSET
        if not isinstance(self.threshold, Unset):
            threshold = self.threshold

        refit = self.refit

        selection: str | Unset = UNSET
        if not isinstance(self.selection, Unset):
            selection = self.selection

        lambda_min: float | None | Unset
        if isinstance(self.lambda_min, Unset):
            lambda_min = UNSET
        else:
            lambda_min = self.lambda_min

        lambda_max: float | None | Unset
        if isinstance(self.lambda_max, Unset):
            lambda_max = UNSET
        else:
            lambda_max = self.lambda_max

        multipliers: list[float] | Unset = UNSET
        if not isinstance(self.multipliers, Unset):
            multipliers = self.multipliers

        refine: str | Unset = UNSET
        if not isinstance(self.refine, Unset):
            refine = self.refine

        refine_temperatures: list[float] | Unset = UNSET
        if not isinstance(self.refine_temperatures, Unset):
            refine_temperatures = self.refine_temperatures

        refine_anneal = self.refine_anneal

        refine_scale: str | Unset = UNSET
        if not isinstance(self.refine_scale, Unset):
            refine_scale = self.refine_scale

        refine_consistency: float | None | Unset
        if isinstance(self.refine_consistency, Unset):
            refine_consistency = UNSET
        else:
            refine_consistency = self.refine_consistency

        guard: str | Unset = UNSET
        if not isinstance(self.guard, Unset):
            guard = self.guard

        guard_confidence: float | None | Unset
        if isinstance(self.guard_confidence, Unset):
            guard_confidence = UNSET
        else:
            guard_confidence = self.guard_confidence

        refine_confidence: float | None | Unset
        if isinstance(self.refine_confidence, Unset):
            refine_confidence = UNSET
        else:
            refine_confidence = self.refine_confidence

        refine_signal: float | None | Unset
        if isinstance(self.refine_signal, Unset):
            refine_signal = UNSET
        else:
            refine_signal = self.refine_signal

        shrink_confidence: float | None | Unset
        if isinstance(self.shrink_confidence, Unset):
            shrink_confidence = UNSET
        else:
            shrink_confidence = self.shrink_confidence

        multiclass: str | Unset = UNSET
        if not isinstance(self.multiclass, Unset):
            multiclass = self.multiclass

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if strategy is not UNSET:
            field_dict["strategy"] = strategy
        if n_lambdas is not UNSET:
            field_dict["n_lambdas"] = n_lambdas
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon
        if epsilon_m is not UNSET:
            field_dict["epsilon_m"] = epsilon_m
        if max_steps is not UNSET:
            field_dict["max_steps"] = max_steps
        if shift is not UNSET:
            field_dict["shift"] = shift
        if cv is not UNSET:
            field_dict["cv"] = cv
        if threshold is not UNSET:
            field_dict["threshold"] = threshold
        if refit is not UNSET:
            field_dict["refit"] = refit
        if selection is not UNSET:
            field_dict["selection"] = selection
        if lambda_min is not UNSET:
            field_dict["lambda_min"] = lambda_min
        if lambda_max is not UNSET:
            field_dict["lambda_max"] = lambda_max
        if multipliers is not UNSET:
            field_dict["multipliers"] = multipliers
        if refine is not UNSET:
            field_dict["refine"] = refine
        if refine_temperatures is not UNSET:
            field_dict["refine_temperatures"] = refine_temperatures
        if refine_anneal is not UNSET:
            field_dict["refine_anneal"] = refine_anneal
        if refine_scale is not UNSET:
            field_dict["refine_scale"] = refine_scale
        if refine_consistency is not UNSET:
            field_dict["refine_consistency"] = refine_consistency
        if guard is not UNSET:
            field_dict["guard"] = guard
        if guard_confidence is not UNSET:
            field_dict["guard_confidence"] = guard_confidence
        if refine_confidence is not UNSET:
            field_dict["refine_confidence"] = refine_confidence
        if refine_signal is not UNSET:
            field_dict["refine_signal"] = refine_signal
        if shrink_confidence is not UNSET:
            field_dict["shrink_confidence"] = shrink_confidence
        if multiclass is not UNSET:
            field_dict["multiclass"] = multiclass

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _strategy = d.pop("strategy", UNSET)
        strategy: SearchStrategy | Unset
        if isinstance(_strategy, Unset):
            strategy = UNSET
        else:
            strategy = check_search_strategy(_strategy)

        n_lambdas = d.pop("n_lambdas", UNSET)

        epsilon = d.pop("epsilon", UNSET)

        epsilon_m = d.pop("epsilon_m", UNSET)

        max_steps = d.pop("max_steps", UNSET)

        _shift = d.pop("shift", UNSET)
        shift: CostShift | Unset
        if isinstance(_shift, Unset):
            shift = UNSET
        else:
            shift = check_cost_shift(_shift)

        def _parse_cv(data: object) -> int | Literal["auto"] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not data == "auto":
                    raise TypeError(f"got {type(data).__name__}")
                cv_type_1 = cast(Literal["auto"], data)
                if cv_type_1 != "auto":
                    raise ValueError(f"cv_type_1 must match const 'auto', got '{cv_type_1}'")
                return cv_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(int | Literal["auto"] | None | Unset, data)

        cv = _parse_cv(d.pop("cv", UNSET))

        _threshold = d.pop("threshold", UNSET)
        threshold: DecisionThreshold | Unset
        if isinstance(_threshold, Unset):
            threshold = UNSET
        else:
            threshold = check_decision_threshold(_threshold)

        refit = d.pop("refit", UNSET)

        _selection = d.pop("selection", UNSET)
        selection: StepSelection | Unset
        if isinstance(_selection, Unset):
            selection = UNSET
        else:
            selection = check_step_selection(_selection)

        def _parse_lambda_min(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lambda_min = _parse_lambda_min(d.pop("lambda_min", UNSET))

        def _parse_lambda_max(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lambda_max = _parse_lambda_max(d.pop("lambda_max", UNSET))

        multipliers = cast(list[float], d.pop("multipliers", UNSET))

        _refine = d.pop("refine", UNSET)
        refine: RefineMode | Unset
        if isinstance(_refine, Unset):
            refine = UNSET
        else:
            refine = check_refine_mode(_refine)

        refine_temperatures = cast(list[float], d.pop("refine_temperatures", UNSET))

        refine_anneal = d.pop("refine_anneal", UNSET)

        _refine_scale = d.pop("refine_scale", UNSET)
        refine_scale: SearchSpecRefineScale | Unset
        if isinstance(_refine_scale, Unset):
            refine_scale = UNSET
        else:
            refine_scale = check_search_spec_refine_scale(_refine_scale)

        def _parse_refine_consistency(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        refine_consistency = _parse_refine_consistency(d.pop("refine_consistency", UNSET))

        _guard = d.pop("guard", UNSET)
        guard: SelectionGuard | Unset
        if isinstance(_guard, Unset):
            guard = UNSET
        else:
            guard = check_selection_guard(_guard)

        def _parse_guard_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        guard_confidence = _parse_guard_confidence(d.pop("guard_confidence", UNSET))

        def _parse_refine_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        refine_confidence = _parse_refine_confidence(d.pop("refine_confidence", UNSET))

        def _parse_refine_signal(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        refine_signal = _parse_refine_signal(d.pop("refine_signal", UNSET))

        def _parse_shrink_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        shrink_confidence = _parse_shrink_confidence(d.pop("shrink_confidence", UNSET))

        _multiclass = d.pop("multiclass", UNSET)
        multiclass: MulticlassMode | Unset
        if isinstance(_multiclass, Unset):
            multiclass = UNSET
        else:
            multiclass = check_multiclass_mode(_multiclass)

        search_spec = cls(
            strategy=strategy,
            n_lambdas=n_lambdas,
            epsilon=epsilon,
            epsilon_m=epsilon_m,
            max_steps=max_steps,
            shift=shift,
            cv=cv,
            threshold=threshold,
            refit=refit,
            selection=selection,
            lambda_min=lambda_min,
            lambda_max=lambda_max,
            multipliers=multipliers,
            refine=refine,
            refine_temperatures=refine_temperatures,
            refine_anneal=refine_anneal,
            refine_scale=refine_scale,
            refine_consistency=refine_consistency,
            guard=guard,
            guard_confidence=guard_confidence,
            refine_confidence=refine_confidence,
            refine_signal=refine_signal,
            shrink_confidence=shrink_confidence,
            multiclass=multiclass,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of SearchSpec: " + ", ".join(sorted(map(str, d))))
        return search_spec
