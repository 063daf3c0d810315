from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.method_summary import MethodSummary


T = TypeVar("T", bound="ClassResult")


@_attrs_define
class ClassResult:
    """One class (or label) of an averaged job: what its search chose (repeat 0's, the
    delivered model's) and its own metric per method and split, over the repeats.

    """

    class_index: int
    label: bool | float | int | str
    trained_lambda: float | None
    """ Repeat 0's lambda for this class; null for a multinomial model (no lambda) """
    tuned_threshold: float | None
    """ Repeat 0's tuned threshold on this class's h (folded into the model) """
    offset: float | None
    """ Multi-class: repeat 0's offset added to this class's margin before the argmax; null for multi-label """
    selection_score: float | None
    """ This class's own metric where its search chose (pooled held-out folds) """
    warnings: list[str]
    """ The codes of repeat 0's choice's warnings """
    summary: list[MethodSummary]
    """ This class's metric per method and split, mean and std over the repeats """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        class_index = self.class_index

        label: bool | float | int | str
        label = self.label

        trained_lambda: float | None
        trained_lambda = self.trained_lambda

        tuned_threshold: float | None
        tuned_threshold = self.tuned_threshold

        offset: float | None
        offset = self.offset

        selection_score: float | None
        selection_score = self.selection_score

        warnings = self.warnings

        summary = []
        for summary_item_data in self.summary:
            summary_item = summary_item_data.to_dict()
            summary.append(summary_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "class_index": class_index,
                "label": label,
                "trained_lambda": trained_lambda,
                "tuned_threshold": tuned_threshold,
                "offset": offset,
                "selection_score": selection_score,
                "warnings": warnings,
                "summary": summary,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.method_summary import MethodSummary  # noqa: PLC0415

        d = dict(src_dict)
        class_index = d.pop("class_index")

        def _parse_label(data: object) -> bool | float | int | str:
            return cast(bool | float | int | str, data)

        label = _parse_label(d.pop("label"))

        def _parse_trained_lambda(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        trained_lambda = _parse_trained_lambda(d.pop("trained_lambda"))

        def _parse_tuned_threshold(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        tuned_threshold = _parse_tuned_threshold(d.pop("tuned_threshold"))

        def _parse_offset(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        offset = _parse_offset(d.pop("offset"))

        def _parse_selection_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        selection_score = _parse_selection_score(d.pop("selection_score"))

        warnings = cast(list[str], d.pop("warnings"))

        summary = []
        _summary = d.pop("summary")
        for summary_item_data in _summary:
            summary_item = MethodSummary.from_dict(summary_item_data)

            summary.append(summary_item)

        class_result = cls(
            class_index=class_index,
            label=label,
            trained_lambda=trained_lambda,
            tuned_threshold=tuned_threshold,
            offset=offset,
            selection_score=selection_score,
            warnings=warnings,
            summary=summary,
        )

        class_result.additional_properties = d
        return class_result

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
