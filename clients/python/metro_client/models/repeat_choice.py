from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.search_ran import SearchRan, check_search_ran
from ..models.selection_split import SelectionSplit, check_selection_split
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.choice_warning import ChoiceWarning
    from ..models.confusion_counts import ConfusionCounts
    from ..models.fallback import Fallback
    from ..models.refinement import Refinement
    from ..models.selection_point import SelectionPoint


T = TypeVar("T", bound="RepeatChoice")


@_attrs_define
class RepeatChoice:
    """What one repeat's lambda search chose. See the glossary in docs/api.md."""

    repeat: int
    trained_lambda: float | None
    """ The lambda this repeat's model was trained at (the refit's); null for a class of a multinomial model
    (search.multiclass), which no lambda search trained """
    shift: None | str
    """ The cost shift that model was trained with; null where trained_lambda is """
    ratio_reached: float | None
    """ Bisection and Dinkelbach: the middle of their last bracket, their estimate of the optimal ratio lambda*; no
    model was trained there unless it equals trained_lambda. Null for the grid """
    tuned_threshold: float
    """ The decision threshold on h chosen with the lambda, folded into the model """
    selection_score: float | None
    """ The metric the choice was made by, on selection_split (null if undefined) """
    selection_split: SelectionSplit
    n_folds: int | None
    """ Folds pooled for cross-validation, else null """
    selection_counts: ConfusionCounts | None
    """ The held-out confusion counts selection_score was computed from """
    warnings: list[ChoiceWarning]
    strategy: None | SearchRan | Unset = UNSET
    """ The search that chose: grid, bisection or dinkelbach as search.strategy asked, constrained-grid under
    constraints, or exact where the metric's denominator does not depend on the predictions (accuracy, recall,
    balanced and weighted accuracy): one cost-sensitive fit is exact, no search over lambda ran, and trained_lambda
    is that fit's lambda, which changes nothing (no estimate of lambda*). Null for a class of a multinomial model,
    and in a result written before this field existed """
    refinement: None | Refinement | Unset = UNSET
    """ The refinement step (null: it did not run: refine off, a network, constraints missed where chosen, or no
    held-out rows). When kept, selection_score is the refined models' and tuned_threshold is 0 (the refined model
    decides by its sign) """
    fallback: Fallback | None | Unset = UNSET
    """ The safeguard's fallback replaced the search's choice, and why: trained_lambda, tuned_threshold,
    selection_score and selection_counts are then the fallback's. Null where the search's own choice was delivered
    """
    constraint_values: list[float | None] | None | Unset = UNSET
    """ Under constraints: each constraint's value (in the spec's order) where the choice was made, on
    selection_split at the tuned threshold; null without """
    constraints_satisfied: bool | None | Unset = UNSET
    """ Under constraints: whether every constraint held there (false: none of the fits met them, and the one
    closest was kept); null without """
    mu: float | None | Unset = UNSET
    """ Under constraints: the Lagrange multiplier (one of search.multipliers) the delivered model was trained with,
    beside trained_lambda; null without constraints """
    constraint_reach: list[float | None] | None | Unset = UNSET
    """ Under constraints: each constraint's tightest bound (in the spec's order) that some fit of the grid flagging
    rows met on selection_split while meeting the other constraints' bounds (where there are several), at the
    confidence it was judged at (its own, else 0.55, or 0.5 for a bound at a proportion's best value such as recall
    >= 1), within the metric's range; where constraints_satisfied is false, what to loosen a bound to (at the
    range's end: no bound was certified). Null without constraints, or where no fit flagged a row """
    selection_curve: list[SelectionPoint] | None | Unset = UNSET
    """ Grid searches: every (lambda, shift) with the score the choice was made by (pooled over the folds with
    cross-validation: not the mean of the folds' curves); null for bisection, Dinkelbach and constrained searches
    """
    label: bool | float | int | None | str | Unset = UNSET
    """ An averaged job (metric.average): the class, or the label column, this search was for (one choice per class
    and repeat); absent for a binary job """
    offset: float | None | Unset = UNSET
    """ An averaged multi-class job: the offset added to this class's margin before the argmax (tuned for the
    average on the pooled held-out margins; 0: the one-vs-rest rule). A micro-averaged multi-label job: the offset
    added to this label's margin, tuned with the other labels' for the pooled metric (0: the label's own threshold).
    Absent for a binary job, for a macro- or weighted-averaged multi-label one, and for a micro-averaged one whose
    labels chose on a holdout (their own thresholds) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.confusion_counts import ConfusionCounts  # noqa: PLC0415
        from ..models.fallback import Fallback  # noqa: PLC0415
        from ..models.refinement import Refinement  # noqa: PLC0415

        repeat = self.repeat

        trained_lambda: float | None
        trained_lambda = self.trained_lambda

        shift: None | str
        shift = self.shift

        ratio_reached: float | None
        ratio_reached = self.ratio_reached

        tuned_threshold = self.tuned_threshold

        selection_score: float | None
        selection_score = self.selection_score

        selection_split: str = self.selection_split

        n_folds: int | None
        n_folds = self.n_folds

        selection_counts: dict[str, Any] | None
        if isinstance(self.selection_counts, ConfusionCounts):
            selection_counts = self.selection_counts.to_dict()
        else:
            selection_counts = self.selection_counts

        warnings = []
        for warnings_item_data in self.warnings:
            warnings_item = warnings_item_data.to_dict()
            warnings.append(warnings_item)

        strategy: None | str | Unset
        if isinstance(self.strategy, Unset):
            strategy = UNSET
        elif isinstance(self.strategy, str):
            strategy = self.strategy
        else:
            strategy = self.strategy

        refinement: dict[str, Any] | None | Unset
        if isinstance(self.refinement, Unset):
            refinement = UNSET
        elif isinstance(self.refinement, Refinement):
            refinement = self.refinement.to_dict()
        else:
            refinement = self.refinement

        fallback: dict[str, Any] | None | Unset
        if isinstance(self.fallback, Unset):
            fallback = UNSET
        elif isinstance(self.fallback, Fallback):
            fallback = self.fallback.to_dict()
        else:
            fallback = self.fallback

        constraint_values: list[float | None] | None | Unset
        if isinstance(self.constraint_values, Unset):
            constraint_values = UNSET
        elif isinstance(self.constraint_values, list):
            constraint_values = []
            for constraint_values_type_0_item_data in self.constraint_values:
                constraint_values_type_0_item: float | None
                constraint_values_type_0_item = constraint_values_type_0_item_data
                constraint_values.append(constraint_values_type_0_item)

        else:
            constraint_values = self.constraint_values

        constraints_satisfied: bool | None | Unset
        if isinstance(self.constraints_satisfied, Unset):
            constraints_satisfied = UNSET
        else:
            constraints_satisfied = self.constraints_satisfied

        mu: float | None | Unset
        if isinstance(self.mu, Unset):
            mu = UNSET
        else:
            mu = self.mu

        constraint_reach: list[float | None] | None | Unset
        if isinstance(self.constraint_reach, Unset):
            constraint_reach = UNSET
        elif isinstance(self.constraint_reach, list):
            constraint_reach = []
            for constraint_reach_type_0_item_data in self.constraint_reach:
                constraint_reach_type_0_item: float | None
                constraint_reach_type_0_item = constraint_reach_type_0_item_data
                constraint_reach.append(constraint_reach_type_0_item)

        else:
            constraint_reach = self.constraint_reach

        selection_curve: list[dict[str, Any]] | None | Unset
        if isinstance(self.selection_curve, Unset):
            selection_curve = UNSET
        elif isinstance(self.selection_curve, list):
            selection_curve = []
            for selection_curve_type_0_item_data in self.selection_curve:
                selection_curve_type_0_item = selection_curve_type_0_item_data.to_dict()
                selection_curve.append(selection_curve_type_0_item)

        else:
            selection_curve = self.selection_curve

        label: bool | float | int | None | str | Unset
        if isinstance(self.label, Unset):
            label = UNSET
        else:
            label = self.label

        offset: float | None | Unset
        if isinstance(self.offset, Unset):
            offset = UNSET
        else:
            offset = self.offset

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "repeat": repeat,
                "trained_lambda": trained_lambda,
                "shift": shift,
                "ratio_reached": ratio_reached,
                "tuned_threshold": tuned_threshold,
                "selection_score": selection_score,
                "selection_split": selection_split,
                "n_folds": n_folds,
                "selection_counts": selection_counts,
                "warnings": warnings,
            }
        )
        if strategy is not UNSET:
            field_dict["strategy"] = strategy
        if refinement is not UNSET:
            field_dict["refinement"] = refinement
        if fallback is not UNSET:
            field_dict["fallback"] = fallback
        if constraint_values is not UNSET:
            field_dict["constraint_values"] = constraint_values
        if constraints_satisfied is not UNSET:
            field_dict["constraints_satisfied"] = constraints_satisfied
        if mu is not UNSET:
            field_dict["mu"] = mu
        if constraint_reach is not UNSET:
            field_dict["constraint_reach"] = constraint_reach
        if selection_curve is not UNSET:
            field_dict["selection_curve"] = selection_curve
        if label is not UNSET:
            field_dict["label"] = label
        if offset is not UNSET:
            field_dict["offset"] = offset

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.choice_warning import ChoiceWarning  # noqa: PLC0415
        from ..models.confusion_counts import ConfusionCounts  # noqa: PLC0415
        from ..models.fallback import Fallback  # noqa: PLC0415
        from ..models.refinement import Refinement  # noqa: PLC0415
        from ..models.selection_point import SelectionPoint  # noqa: PLC0415

        d = dict(src_dict)
        repeat = d.pop("repeat")

        def _parse_trained_lambda(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        trained_lambda = _parse_trained_lambda(d.pop("trained_lambda"))

        def _parse_shift(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        shift = _parse_shift(d.pop("shift"))

        def _parse_ratio_reached(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        ratio_reached = _parse_ratio_reached(d.pop("ratio_reached"))

        tuned_threshold = d.pop("tuned_threshold")

        def _parse_selection_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        selection_score = _parse_selection_score(d.pop("selection_score"))

        selection_split = check_selection_split(d.pop("selection_split"))

        def _parse_n_folds(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        n_folds = _parse_n_folds(d.pop("n_folds"))

        def _parse_selection_counts(data: object) -> ConfusionCounts | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                selection_counts_type_0 = ConfusionCounts.from_dict(data)

                return selection_counts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ConfusionCounts | None, data)

        selection_counts = _parse_selection_counts(d.pop("selection_counts"))

        warnings = []
        _warnings = d.pop("warnings")
        for warnings_item_data in _warnings:
            warnings_item = ChoiceWarning.from_dict(warnings_item_data)

            warnings.append(warnings_item)

        def _parse_strategy(data: object) -> None | SearchRan | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                strategy_type_0 = check_search_ran(data)

                return strategy_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SearchRan | Unset, data)

        strategy = _parse_strategy(d.pop("strategy", UNSET))

        def _parse_refinement(data: object) -> None | Refinement | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                refinement_type_0 = Refinement.from_dict(data)

                return refinement_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Refinement | Unset, data)

        refinement = _parse_refinement(d.pop("refinement", UNSET))

        def _parse_fallback(data: object) -> Fallback | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                fallback_type_0 = Fallback.from_dict(data)

                return fallback_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Fallback | None | Unset, data)

        fallback = _parse_fallback(d.pop("fallback", UNSET))

        def _parse_constraint_values(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                constraint_values_type_0 = []
                _constraint_values_type_0 = data
                for constraint_values_type_0_item_data in _constraint_values_type_0:

                    def _parse_constraint_values_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    constraint_values_type_0_item = _parse_constraint_values_type_0_item(
                        constraint_values_type_0_item_data
                    )

                    constraint_values_type_0.append(constraint_values_type_0_item)

                return constraint_values_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        constraint_values = _parse_constraint_values(d.pop("constraint_values", UNSET))

        def _parse_constraints_satisfied(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        constraints_satisfied = _parse_constraints_satisfied(d.pop("constraints_satisfied", UNSET))

        def _parse_mu(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mu = _parse_mu(d.pop("mu", UNSET))

        def _parse_constraint_reach(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                constraint_reach_type_0 = []
                _constraint_reach_type_0 = data
                for constraint_reach_type_0_item_data in _constraint_reach_type_0:

                    def _parse_constraint_reach_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    constraint_reach_type_0_item = _parse_constraint_reach_type_0_item(
                        constraint_reach_type_0_item_data
                    )

                    constraint_reach_type_0.append(constraint_reach_type_0_item)

                return constraint_reach_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        constraint_reach = _parse_constraint_reach(d.pop("constraint_reach", UNSET))

        def _parse_selection_curve(data: object) -> list[SelectionPoint] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                selection_curve_type_0 = []
                _selection_curve_type_0 = data
                for selection_curve_type_0_item_data in _selection_curve_type_0:
                    selection_curve_type_0_item = SelectionPoint.from_dict(selection_curve_type_0_item_data)

                    selection_curve_type_0.append(selection_curve_type_0_item)

                return selection_curve_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[SelectionPoint] | None | Unset, data)

        selection_curve = _parse_selection_curve(d.pop("selection_curve", UNSET))

        def _parse_label(data: object) -> bool | float | int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | float | int | None | str | Unset, data)

        label = _parse_label(d.pop("label", UNSET))

        def _parse_offset(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        offset = _parse_offset(d.pop("offset", UNSET))

        repeat_choice = cls(
            repeat=repeat,
            trained_lambda=trained_lambda,
            shift=shift,
            ratio_reached=ratio_reached,
            tuned_threshold=tuned_threshold,
            selection_score=selection_score,
            selection_split=selection_split,
            n_folds=n_folds,
            selection_counts=selection_counts,
            warnings=warnings,
            strategy=strategy,
            refinement=refinement,
            fallback=fallback,
            constraint_values=constraint_values,
            constraints_satisfied=constraints_satisfied,
            mu=mu,
            constraint_reach=constraint_reach,
            selection_curve=selection_curve,
            label=label,
            offset=offset,
        )

        repeat_choice.additional_properties = d
        return repeat_choice

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
