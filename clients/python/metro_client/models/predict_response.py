from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.out_of_range_notice import OutOfRangeNotice


T = TypeVar("T", bound="PredictResponse")


@_attrs_define
class PredictResponse:
    model_id: UUID
    margins: list[float]
    """ The model's raw margin h(x) per row (its decision function: unbounded, not a probability). The label is
    positive where the margin is at least the manifest's threshold (0: the tuned threshold is already folded into
    the model). A model of several classes: the largest of the row's class margins """
    labels: list[bool | float | int | list[bool | float | int | str] | str]
    """ Predicted labels, in the training data's terms. Multi-class: the class of the largest margin; multi-label:
    the list of labels whose margin is >= 0 """
    classes: list[bool | float | int | str] | None | Unset = UNSET
    """ A model of several classes: its classes (or label columns), the order of each row of class_margins; null for
    a binary model """
    positive_label: bool | float | int | None | str | Unset = UNSET
    """ A binary model: the label a margin at or above the threshold predicts, the class its metric counted as
    positive (the manifest's labels.positive); null for a model of several classes """
    class_margins: list[list[float]] | None | Unset = UNSET
    """ A model of several classes: every class's margin per row (the model's ONNX output 'score', offsets and
    thresholds folded in); null for a binary model """
    out_of_range: None | OutOfRangeNotice | Unset = UNSET
    """ Where rows hold values outside the range of the rows the model was trained on (the manifest's
    feature_ranges): the columns, how many rows, and the training min and max; the scores are given all the same.
    Null where every value is inside, or the model has no ranges (an image model, or one trained before 1.5.0) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.out_of_range_notice import OutOfRangeNotice  # noqa: PLC0415

        model_id = str(self.model_id)

        margins = self.margins

        labels = []
        for labels_item_data in self.labels:
            labels_item: bool | float | int | list[bool | float | int | str] | str
            if isinstance(labels_item_data, list):
                labels_item = []
                for labels_item_type_4_item_data in labels_item_data:
                    labels_item_type_4_item: bool | float | int | str
                    labels_item_type_4_item = labels_item_type_4_item_data
                    labels_item.append(labels_item_type_4_item)

            else:
                labels_item = labels_item_data
            labels.append(labels_item)

        classes: list[bool | float | int | str] | None | Unset
        if isinstance(self.classes, Unset):
            classes = UNSET
        elif isinstance(self.classes, list):
            classes = []
            for classes_type_0_item_data in self.classes:
                classes_type_0_item: bool | float | int | str
                classes_type_0_item = classes_type_0_item_data
                classes.append(classes_type_0_item)

        else:
            classes = self.classes

        positive_label: bool | float | int | None | str | Unset
        if isinstance(self.positive_label, Unset):
            positive_label = UNSET
        else:
            positive_label = self.positive_label

        class_margins: list[list[float]] | None | Unset
        if isinstance(self.class_margins, Unset):
            class_margins = UNSET
        elif isinstance(self.class_margins, list):
            class_margins = []
            for class_margins_type_0_item_data in self.class_margins:
                class_margins_type_0_item = class_margins_type_0_item_data

                class_margins.append(class_margins_type_0_item)

        else:
            class_margins = self.class_margins

        out_of_range: dict[str, Any] | None | Unset
        if isinstance(self.out_of_range, Unset):
            out_of_range = UNSET
        elif isinstance(self.out_of_range, OutOfRangeNotice):
            out_of_range = self.out_of_range.to_dict()
        else:
            out_of_range = self.out_of_range

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "model_id": model_id,
                "margins": margins,
                "labels": labels,
            }
        )
        if classes is not UNSET:
            field_dict["classes"] = classes
        if positive_label is not UNSET:
            field_dict["positive_label"] = positive_label
        if class_margins is not UNSET:
            field_dict["class_margins"] = class_margins
        if out_of_range is not UNSET:
            field_dict["out_of_range"] = out_of_range

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.out_of_range_notice import OutOfRangeNotice  # noqa: PLC0415

        d = dict(src_dict)
        model_id = UUID(d.pop("model_id"))

        margins = cast(list[float], d.pop("margins"))

        labels = []
        _labels = d.pop("labels")
        for labels_item_data in _labels:

            def _parse_labels_item(data: object) -> bool | float | int | list[bool | float | int | str] | str:
                try:
                    if not isinstance(data, list):
                        raise TypeError(f"got {type(data).__name__}")
                    labels_item_type_4 = []
                    _labels_item_type_4 = data
                    for labels_item_type_4_item_data in _labels_item_type_4:

                        def _parse_labels_item_type_4_item(data: object) -> bool | float | int | str:
                            return cast(bool | float | int | str, data)

                        labels_item_type_4_item = _parse_labels_item_type_4_item(labels_item_type_4_item_data)

                        labels_item_type_4.append(labels_item_type_4_item)

                    return labels_item_type_4
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(bool | float | int | list[bool | float | int | str] | str, data)

            labels_item = _parse_labels_item(labels_item_data)

            labels.append(labels_item)

        def _parse_classes(data: object) -> list[bool | float | int | str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                classes_type_0 = []
                _classes_type_0 = data
                for classes_type_0_item_data in _classes_type_0:

                    def _parse_classes_type_0_item(data: object) -> bool | float | int | str:
                        return cast(bool | float | int | str, data)

                    classes_type_0_item = _parse_classes_type_0_item(classes_type_0_item_data)

                    classes_type_0.append(classes_type_0_item)

                return classes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[bool | float | int | str] | None | Unset, data)

        classes = _parse_classes(d.pop("classes", UNSET))

        def _parse_positive_label(data: object) -> bool | float | int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | float | int | None | str | Unset, data)

        positive_label = _parse_positive_label(d.pop("positive_label", UNSET))

        def _parse_class_margins(data: object) -> list[list[float]] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                class_margins_type_0 = []
                _class_margins_type_0 = data
                for class_margins_type_0_item_data in _class_margins_type_0:
                    class_margins_type_0_item = cast(list[float], class_margins_type_0_item_data)

                    class_margins_type_0.append(class_margins_type_0_item)

                return class_margins_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[list[float]] | None | Unset, data)

        class_margins = _parse_class_margins(d.pop("class_margins", UNSET))

        def _parse_out_of_range(data: object) -> None | OutOfRangeNotice | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                out_of_range_type_0 = OutOfRangeNotice.from_dict(data)

                return out_of_range_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OutOfRangeNotice | Unset, data)

        out_of_range = _parse_out_of_range(d.pop("out_of_range", UNSET))

        predict_response = cls(
            model_id=model_id,
            margins=margins,
            labels=labels,
            classes=classes,
            positive_label=positive_label,
            class_margins=class_margins,
            out_of_range=out_of_range,
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
