from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.constraint_preset import ConstraintPreset, check_constraint_preset
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.constraint_metric import ConstraintMetric
    from ..models.preset_params import PresetParams


T = TypeVar("T", bound="ConstraintSpec")


@_attrs_define
class ConstraintSpec:
    """A floor or a ceiling on a second ratio metric, e.g. ``{"metric": "recall",
    "at_least": 0.9}``: the search keeps the best metric among the fits that meet it on the
    held-out rows (see docs/api.md, "Constraints").

    """

    metric: ConstraintMetric | ConstraintPreset
    """ A preset (case is ignored) or {alpha, beta} """
    params: None | PresetParams | Unset = UNSET
    """ The preset's parameters, e.g. {"beta": 2} for f_beta. Server default: null """
    at_least: float | None | Unset = UNSET
    """ The floor (give this or at_most). Server default: null """
    at_most: float | None | Unset = UNSET
    """ The ceiling (give this or at_least). Server default: null """
    confidence: float | None | Unset = UNSET
    """ In [0.5, 1): the bound must hold with this one-sided confidence on a new sample the size of one fold's held-
    out rows, not just on average; null: judged at 0.55. Server default: null """

    def to_dict(self) -> dict[str, Any]:
        from ..models.preset_params import PresetParams  # noqa: PLC0415

        metric: dict[str, Any] | str
        if isinstance(self.metric, str):
            metric = self.metric
        else:
            metric = self.metric.to_dict()

        params: dict[str, Any] | None | Unset
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, PresetParams):
            params = self.params.to_dict()
        else:
            params = self.params

        at_least: float | None | Unset
        if isinstance(self.at_least, Unset):
            at_least = UNSET
        else:
            at_least = self.at_least

        at_most: float | None | Unset
        if isinstance(self.at_most, Unset):
            at_most = UNSET
        else:
            at_most = self.at_most

        confidence: float | None | Unset
        if isinstance(self.confidence, Unset):
            confidence = UNSET
        else:
            confidence = self.confidence

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "metric": metric,
            }
        )
        if params is not UNSET:
            field_dict["params"] = params
        if at_least is not UNSET:
            field_dict["at_least"] = at_least
        if at_most is not UNSET:
            field_dict["at_most"] = at_most
        if confidence is not UNSET:
            field_dict["confidence"] = confidence

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.constraint_metric import ConstraintMetric  # noqa: PLC0415
        from ..models.preset_params import PresetParams  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_metric(data: object) -> ConstraintMetric | ConstraintPreset:
            refused: list[str] = []
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                metric_type_0 = check_constraint_preset(data)

                return metric_type_0
            except KeyError as error:
                refused.append(f"as ConstraintPreset: missing {error}")
            except (TypeError, ValueError, AttributeError) as error:
                refused.append(f"as ConstraintPreset: {error}")
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                metric_type_1 = ConstraintMetric.from_dict(data)

                return metric_type_1
            except KeyError as error:
                refused.append(f"as ConstraintMetric: missing {error}")
            except (TypeError, ValueError, AttributeError) as error:
                refused.append(f"as ConstraintMetric: {error}")
            raise ValueError("metric: " + "; ".join(refused))

        metric = _parse_metric(d.pop("metric"))

        def _parse_params(data: object) -> None | PresetParams | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                params_type_0 = PresetParams.from_dict(data)

                return params_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PresetParams | Unset, data)

        params = _parse_params(d.pop("params", UNSET))

        def _parse_at_least(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        at_least = _parse_at_least(d.pop("at_least", UNSET))

        def _parse_at_most(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        at_most = _parse_at_most(d.pop("at_most", UNSET))

        def _parse_confidence(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        confidence = _parse_confidence(d.pop("confidence", UNSET))

        constraint_spec = cls(
            metric=metric,
            params=params,
            at_least=at_least,
            at_most=at_most,
            confidence=confidence,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of ConstraintSpec: " + ", ".join(sorted(map(str, d))))
        return constraint_spec
