from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="RefinementScore")


@_attrs_define
class RefinementScore:
    temperature: float
    score: float | None
    """ The refined models' metric on selection_split """
    scale: str | Unset = "free"
    """ The schedule this stage belongs to: free (the weights may grow, sharpening the sigmoid) or held (the scores
    keep the start's spread); see search.refine_scale """
    constraints_hold: bool | None | Unset = UNSET
    """ Under constraints: whether they all held there (null without) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        temperature = self.temperature

        score: float | None
        score = self.score

        scale = self.scale

        constraints_hold: bool | None | Unset
        if isinstance(self.constraints_hold, Unset):
            constraints_hold = UNSET
        else:
            constraints_hold = self.constraints_hold

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "temperature": temperature,
                "score": score,
            }
        )
        if scale is not UNSET:
            field_dict["scale"] = scale
        if constraints_hold is not UNSET:
            field_dict["constraints_hold"] = constraints_hold

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        temperature = d.pop("temperature")

        def _parse_score(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        score = _parse_score(d.pop("score"))

        scale = d.pop("scale", UNSET)

        def _parse_constraints_hold(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        constraints_hold = _parse_constraints_hold(d.pop("constraints_hold", UNSET))

        refinement_score = cls(
            temperature=temperature,
            score=score,
            scale=scale,
            constraints_hold=constraints_hold,
        )

        refinement_score.additional_properties = d
        return refinement_score

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
