from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.model_format import ModelFormat, check_model_format

if TYPE_CHECKING:
    from ..models.model_manifest import ModelManifest


T = TypeVar("T", bound="Model")


@_attrs_define
class Model:
    id: UUID
    job_id: None | UUID
    formats: list[ModelFormat]
    sha256: str
    """ SHA-256 of model.safetensors """
    manifest: ModelManifest
    """ What a model file says of itself (``manifest.json`` beside the weights), as served.

    The structural fields are computed from the weights when the model is saved; the others
    describe the job that trained it. Fields this version does not know (a newer worker's) are
    kept, and a field a manifest does not have is left out of the answer, not shown as null (the
    model routes answer with ``response_model_exclude_unset``): the API serves the manifest
    exactly as the model file has it. """
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        job_id: None | str
        if isinstance(self.job_id, UUID):
            job_id = str(self.job_id)
        else:
            job_id = self.job_id

        formats = []
        for formats_item_data in self.formats:
            formats_item: str = formats_item_data
            formats.append(formats_item)

        sha256 = self.sha256

        manifest = self.manifest.to_dict()

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "job_id": job_id,
                "formats": formats,
                "sha256": sha256,
                "manifest": manifest,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.model_manifest import ModelManifest  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        def _parse_job_id(data: object) -> None | UUID:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                job_id_type_0 = UUID(data)

                return job_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | UUID, data)

        job_id = _parse_job_id(d.pop("job_id"))

        formats = []
        _formats = d.pop("formats")
        for formats_item_data in _formats:
            formats_item = check_model_format(formats_item_data)

            formats.append(formats_item)

        sha256 = d.pop("sha256")

        manifest = ModelManifest.from_dict(d.pop("manifest"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        model = cls(
            id=id,
            job_id=job_id,
            formats=formats,
            sha256=sha256,
            manifest=manifest,
            created_at=created_at,
        )

        model.additional_properties = d
        return model

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
