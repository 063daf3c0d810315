from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.refinement_score import RefinementScore


T = TypeVar("T", bound="Refinement")


@_attrs_define
class Refinement:
    """The refinement step after the choice (docs/algorithms.md, "Refinement")."""

    kept: bool
    """ Whether a refined model beat the search's choice """
    temperature: float | None
    """ The temperature kept, null if none was """
    score_before: float | None
    """ The search's choice's metric on selection_split, before the step """
    threshold_before: float
    """ The threshold the search tuned, where the step started from """
    scores: list[RefinementScore]
    not_kept_reason: None | str
    """ Why the step was not kept, in the words the CLI and the dashboard show: no stage (that met the constraints)
    beat the choice, or the best one did and a check turned it down (search.refine_consistency, refine_signal, else
    refine_confidence); null when it was kept """
    scale: None | str | Unset = UNSET
    """ The kept stage's scale (free or held), null if none was """
    refit_rate_ratio: float | None | Unset = UNSET
    """ The delivered model's predicted-positive rate on its training rows over the refined fold models' on the
    held-out rows that judged them; a step whose ratio is outside the job's search.refine_consistency is not kept
    (null: not checked) """
    signal_probability: float | None | Unset = UNSET
    """ The paired bootstrap's probability, over the held-out rows, that the best stage beats the better constant
    classifier (every row positive, or every row negative); a step below the job's search.refine_signal is not kept
    (null: not checked) """
    replaced_by_fallback: bool | Unset = False
    """ The safeguard's fallback replaced the choice the step started from: the delivered model is the fallback's,
    unrefined, whatever the step found """
    greater_is_better: bool | Unset = True
    """ The metric's direction, which the scores are compared in """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kept = self.kept

        temperature: float | None
        temperature = self.temperature

        score_before: float | None
        score_before = self.score_before

        threshold_before = self.threshold_before

        scores = []
        for scores_item_data in self.scores:
            scores_item = scores_item_data.to_dict()
            scores.append(scores_item)

        not_kept_reason: None | str
        not_kept_reason = self.not_kept_reason

        scale: None | str | Unset
        if isinstance(self.scale, Unset):
            scale = UNSET
        else:
            scale = self.scale

        refit_rate_ratio: float | None | Unset
        if isinstance(self.refit_rate_ratio, Unset):
            refit_rate_ratio = UNSET
        else:
            refit_rate_ratio = self.refit_rate_ratio

        signal_probability: float | None | Unset
        if isinstance(self.signal_probability, Unset):
            signal_probability = UNSET
        else:
            signal_probability = self.signal_probability

        replaced_by_fallback = self.replaced_by_fallback

        greater_is_better = self.greater_is_better

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kept": kept,
                "temperature": temperature,
                "score_before": score_before,
                "threshold_before": threshold_before,
                "scores": scores,
                "not_kept_reason": not_kept_reason,
            }
        )
        if scale is not UNSET:
            field_dict["scale"] = scale
        if refit_rate_ratio is not UNSET:
            field_dict["refit_rate_ratio"] = refit_rate_ratio
        if signal_probability is not UNSET:
            field_dict["signal_probability"] = signal_probability
        if replaced_by_fallback is not UNSET:
            field_dict["replaced_by_fallback"] = replaced_by_fallback
        if greater_is_better is not UNSET:
            field_dict["greater_is_better"] = greater_is_better

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.refinement_score import RefinementScore  # noqa: PLC0415

        d = dict(src_dict)
        kept = d.pop("kept")

        def _parse_temperature(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        temperature = _parse_temperature(d.pop("temperature"))

        def _parse_score_before(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        score_before = _parse_score_before(d.pop("score_before"))

        threshold_before = d.pop("threshold_before")

        scores = []
        _scores = d.pop("scores")
        for scores_item_data in _scores:
            scores_item = RefinementScore.from_dict(scores_item_data)

            scores.append(scores_item)

        def _parse_not_kept_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        not_kept_reason = _parse_not_kept_reason(d.pop("not_kept_reason"))

        def _parse_scale(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        scale = _parse_scale(d.pop("scale", UNSET))

        def _parse_refit_rate_ratio(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        refit_rate_ratio = _parse_refit_rate_ratio(d.pop("refit_rate_ratio", UNSET))

        def _parse_signal_probability(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        signal_probability = _parse_signal_probability(d.pop("signal_probability", UNSET))

        replaced_by_fallback = d.pop("replaced_by_fallback", UNSET)

        greater_is_better = d.pop("greater_is_better", UNSET)

        refinement = cls(
            kept=kept,
            temperature=temperature,
            score_before=score_before,
            threshold_before=threshold_before,
            scores=scores,
            not_kept_reason=not_kept_reason,
            scale=scale,
            refit_rate_ratio=refit_rate_ratio,
            signal_probability=signal_probability,
            replaced_by_fallback=replaced_by_fallback,
            greater_is_better=greater_is_better,
        )

        refinement.additional_properties = d
        return refinement

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
