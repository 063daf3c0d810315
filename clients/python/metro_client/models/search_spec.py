from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.decision_threshold import DecisionThreshold, check_decision_threshold
from ..models.refine_mode import RefineMode, check_refine_mode
from ..models.search_strategy import SearchStrategy, check_search_strategy
from ..models.selection_guard import SelectionGuard, check_selection_guard
from ..types import UNSET, Unset

T = TypeVar("T", bound="SearchSpec")


@_attrs_define
class SearchSpec:
    strategy: None | SearchStrategy | Unset = UNSET
    n_lambdas: int | None | Unset = UNSET
    epsilon: float | None | Unset = UNSET
    epsilon_m: float | None | Unset = UNSET
    max_steps: int | None | Unset = UNSET
    shift: None | str | Unset = UNSET
    cv: int | Literal["auto"] | None | Unset = UNSET
    """ Folds the grid chooses lambda by (metric of the pooled held-out counts); 'auto' (the default) is 5 folds up
    to 20,000 rows, null a holdout """
    threshold: DecisionThreshold | None | Unset = UNSET
    """ 'tuned' (the default) chooses a decision threshold on h with lambda, on the same held-out scores, and folds
    it into the model; 'zero' is the paper's sign(h) """
    refit: bool | None | Unset = UNSET
    selection: None | str | Unset = UNSET
    lambda_min: float | None | Unset = UNSET
    lambda_max: float | None | Unset = UNSET
    refine: None | RefineMode | Unset = UNSET
    """ 'auto' (the default): after the choice, a linear model is moved to a local minimum of the smoothed metric
    itself, kept only if it scores better on the same held-out rows; 'off': the search's model as it is """
    refine_temperatures: list[float] | None | Unset = UNSET
    """ The temperatures the refinement tries, as fractions of the spread of the chosen model's scores (default
    [0.05, 0.2]) """
    multipliers: list[float] | None | Unset = UNSET
    """ With constraints: the Lagrange multipliers mu tried with every lambda (0 is the unconstrained problem);
    default [0, 0.25, 1, 4, 16] """
    guard: None | SelectionGuard | Unset = UNSET
    """ 'fallback' (the default): a choice whose held-out counts cannot support it (fewer than 5 true positives, or
    predicted positives below a tenth of the held-out positives) is compared with the plain-ERM grid point at a
    supported threshold first; 'off': the choice as it is """
    refine_confidence: float | None | Unset = UNSET
    """ null (the default) keeps the refinement on any held-out gain; a level in [0.5, 1) keeps it only when a
    paired bootstrap over the held-out rows finds it better with at least that probability """
    shrink_confidence: float | None | Unset = UNSET
    """ null (the default) never shrinks; a level in [0.5, 1) delivers the fallback instead of the choice unless a
    paired bootstrap finds the choice better with at least that probability """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        strategy: None | str | Unset
        if isinstance(self.strategy, Unset):
            strategy = UNSET
        elif isinstance(self.strategy, str):
            strategy = self.strategy
        else:
            strategy = self.strategy

        n_lambdas: int | None | Unset
        if isinstance(self.n_lambdas, Unset):
            n_lambdas = UNSET
        else:
            n_lambdas = self.n_lambdas

        epsilon: float | None | Unset
        if isinstance(self.epsilon, Unset):
            epsilon = UNSET
        else:
            epsilon = self.epsilon

        epsilon_m: float | None | Unset
        if isinstance(self.epsilon_m, Unset):
            epsilon_m = UNSET
        else:
            epsilon_m = self.epsilon_m

        max_steps: int | None | Unset
        if isinstance(self.max_steps, Unset):
            max_steps = UNSET
        else:
            max_steps = self.max_steps

        shift: None | str | Unset
        if isinstance(self.shift, Unset):
            shift = UNSET
        else:
            shift = self.shift

        cv: int | Literal["auto"] | None | Unset
        if isinstance(self.cv, Unset):
            cv = UNSET
        else:
            cv = self.cv

        threshold: None | str | Unset
        if isinstance(self.threshold, Unset):
            threshold = UNSET
        elif isinstance(self.threshold, str):
            threshold = self.threshold
        else:
            threshold = self.threshold

        refit: bool | None | Unset
        if isinstance(self.refit, Unset):
            refit = UNSET
        else:
            refit = self.refit

        selection: None | str | Unset
        if isinstance(self.selection, Unset):
            selection = UNSET
        else:
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

        refine: None | str | Unset
        if isinstance(self.refine, Unset):
            refine = UNSET
        elif isinstance(self.refine, str):
            refine = self.refine
        else:
            refine = self.refine

        refine_temperatures: list[float] | None | Unset
        if isinstance(self.refine_temperatures, Unset):
            refine_temperatures = UNSET
        elif isinstance(self.refine_temperatures, list):
            refine_temperatures = self.refine_temperatures

        else:
            refine_temperatures = self.refine_temperatures

        multipliers: list[float] | None | Unset
        if isinstance(self.multipliers, Unset):
            multipliers = UNSET
        elif isinstance(self.multipliers, list):
            multipliers = self.multipliers

        else:
            multipliers = self.multipliers

        guard: None | str | Unset
        if isinstance(self.guard, Unset):
            guard = UNSET
        elif isinstance(self.guard, str):
            guard = self.guard
        else:
            guard = self.guard

        refine_confidence: float | None | Unset
        if isinstance(self.refine_confidence, Unset):
            refine_confidence = UNSET
        else:
            refine_confidence = self.refine_confidence

        shrink_confidence: float | None | Unset
        if isinstance(self.shrink_confidence, Unset):
            shrink_confidence = UNSET
        else:
            shrink_confidence = self.shrink_confidence

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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
        if refine is not UNSET:
            field_dict["refine"] = refine
        if refine_temperatures is not UNSET:
            field_dict["refine_temperatures"] = refine_temperatures
        if multipliers is not UNSET:
            field_dict["multipliers"] = multipliers
        if guard is not UNSET:
            field_dict["guard"] = guard
        if refine_confidence is not UNSET:
            field_dict["refine_confidence"] = refine_confidence
        if shrink_confidence is not UNSET:
            field_dict["shrink_confidence"] = shrink_confidence

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_strategy(data: object) -> None | SearchStrategy | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                strategy_type_0 = check_search_strategy(data)

                return strategy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SearchStrategy | Unset, data)

        strategy = _parse_strategy(d.pop("strategy", UNSET))

        def _parse_n_lambdas(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        n_lambdas = _parse_n_lambdas(d.pop("n_lambdas", UNSET))

        def _parse_epsilon(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon = _parse_epsilon(d.pop("epsilon", UNSET))

        def _parse_epsilon_m(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon_m = _parse_epsilon_m(d.pop("epsilon_m", UNSET))

        def _parse_max_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_steps = _parse_max_steps(d.pop("max_steps", UNSET))

        def _parse_shift(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        shift = _parse_shift(d.pop("shift", UNSET))

        def _parse_cv(data: object) -> int | Literal["auto"] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            cv_type_1 = cast(Literal["auto"], data)
            if cv_type_1 != "auto":
                raise ValueError(f"cv_type_1 must match const 'auto', got '{cv_type_1}'")
            return cv_type_1
            return cast(int | Literal["auto"] | None | Unset, data)

        cv = _parse_cv(d.pop("cv", UNSET))

        def _parse_threshold(data: object) -> DecisionThreshold | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                threshold_type_0 = check_decision_threshold(data)

                return threshold_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DecisionThreshold | None | Unset, data)

        threshold = _parse_threshold(d.pop("threshold", UNSET))

        def _parse_refit(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        refit = _parse_refit(d.pop("refit", UNSET))

        def _parse_selection(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        selection = _parse_selection(d.pop("selection", UNSET))

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

        def _parse_refine(data: object) -> None | RefineMode | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                refine_type_0 = check_refine_mode(data)

                return refine_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RefineMode | Unset, data)

        refine = _parse_refine(d.pop("refine", UNSET))

        def _parse_refine_temperatures(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                refine_temperatures_type_0 = cast(list[float], data)

                return refine_temperatures_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        refine_temperatures = _parse_refine_temperatures(d.pop("refine_temperatures", UNSET))

        def _parse_multipliers(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                multipliers_type_0 = cast(list[float], data)

                return multipliers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        multipliers = _parse_multipliers(d.pop("multipliers", UNSET))

        def _parse_guard(data: object) -> None | SelectionGuard | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                guard_type_0 = check_selection_guard(data)

                return guard_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SelectionGuard | Unset, data)

        guard = _parse_guard(d.pop("guard", UNSET))

        def _parse_refine_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        refine_confidence = _parse_refine_confidence(d.pop("refine_confidence", UNSET))

        def _parse_shrink_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        shrink_confidence = _parse_shrink_confidence(d.pop("shrink_confidence", UNSET))

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
            refine=refine,
            refine_temperatures=refine_temperatures,
            multipliers=multipliers,
            guard=guard,
            refine_confidence=refine_confidence,
            shrink_confidence=shrink_confidence,
        )

        search_spec.additional_properties = d
        return search_spec

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
