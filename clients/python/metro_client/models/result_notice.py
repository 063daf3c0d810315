from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ResultNotice")


@_attrs_define
class ResultNotice:
    """A fact about how the job's delivered model decides, to read before trusting it (where a
    warning is about one choice, a notice is about the whole model).

    """

    code: Literal["offsets_not_tuned"]
    """ offsets_not_tuned: a multi-class job whose classes chose on a holdout (no cross-validation folds), so its
    model decides by the plain argmax of their margins and no average was scored where they chose; or a micro-
    averaged multi-label job whose labels chose on a holdout, or some of whose labels' out-of-fold margins could not
    be rebuilt from the folds (their choices carry the warning offsets_not_tuned), so each label keeps its own
    threshold """
    message: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        message = self.message

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = cast(Literal["offsets_not_tuned"], d.pop("code"))
        if code != "offsets_not_tuned":
            raise ValueError(f"code must match const 'offsets_not_tuned', got '{code}'")

        message = d.pop("message")

        result_notice = cls(
            code=code,
            message=message,
        )

        result_notice.additional_properties = d
        return result_notice

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
