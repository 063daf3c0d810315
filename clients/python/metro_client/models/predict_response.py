from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PredictResponse")


@_attrs_define
class PredictResponse:
    model_id: UUID
    margins: list[float]
    """ The model's raw margin h(x) per row (its decision function: unbounded, not a probability). The label is
    positive where the margin is at least the manifest's threshold (0: the tuned threshold is already folded into
    the model) """
    labels: list[bool | float | int | str]
    """ Predicted labels, in the training data's terms """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        model_id = str(self.model_id)

        margins = self.margins

        labels = []
        for labels_item_data in self.labels:
            labels_item: bool | float | int | str
            labels_item = labels_item_data
            labels.append(labels_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "model_id": model_id,
                "margins": margins,
                "labels": labels,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        model_id = UUID(d.pop("model_id"))

        margins = cast(list[float], d.pop("margins"))

        labels = []
        _labels = d.pop("labels")
        for labels_item_data in _labels:

            def _parse_labels_item(data: object) -> bool | float | int | str:
                return cast(bool | float | int | str, data)

            labels_item = _parse_labels_item(labels_item_data)

            labels.append(labels_item)

        predict_response = cls(
            model_id=model_id,
            margins=margins,
            labels=labels,
        )

        predict_response.additional_properties = d
        return predict_response

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
