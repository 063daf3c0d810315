from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_state import JobState, check_job_state
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_spec import JobSpec
    from ..models.repeat_choice import RepeatChoice


T = TypeVar("T", bound="Job")


@_attrs_define
class Job:
    id: UUID
    state: JobState
    spec: JobSpec
    """ The normalized spec, every default filled in """
    dataset_uri: str
    progress: float
    current_lambda: float | None
    """ The lambda of the latest trace step """
    best_lambda: float | None
    """ The trained_lambda of the delivered model (repeat 0's choice) once its search has chosen; null before """
    attempts: int
    failure_reason: None | str
    cancel_requested: bool
    created_at: datetime.datetime
    updated_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    choices: list[RepeatChoice] | None | Unset = UNSET
    """ What each repeat's search chose, as the repeats finish (null before) """
    data_sha256: None | str | Unset = UNSET
    """ The SHA-256 of the data the job trains on (its features and labels as loaded), pinned by the first load: a
    later attempt whose data differs (the file, object or URL changed) fails the job. Null until a worker has loaded
    it """
    waiting: None | str | Unset = UNSET
    """ A queued job that no worker can take now: why it waits (no worker serving its queue has reported recently; a
    training.device cuda job needs a GPU worker). Null once a worker serves its queue, and for jobs that are not
    queued """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        state: str = self.state

        spec = self.spec.to_dict()

        dataset_uri = self.dataset_uri

        progress = self.progress

        current_lambda: float | None
        current_lambda = self.current_lambda

        best_lambda: float | None
        best_lambda = self.best_lambda

        attempts = self.attempts

        failure_reason: None | str
        failure_reason = self.failure_reason

        cancel_requested = self.cancel_requested

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        choices: list[dict[str, Any]] | None | Unset
        if isinstance(self.choices, Unset):
            choices = UNSET
        elif isinstance(self.choices, list):
            choices = []
            for choices_type_0_item_data in self.choices:
                choices_type_0_item = choices_type_0_item_data.to_dict()
                choices.append(choices_type_0_item)

        else:
            choices = self.choices

        data_sha256: None | str | Unset
        if isinstance(self.data_sha256, Unset):
            data_sha256 = UNSET
        else:
            data_sha256 = self.data_sha256

        waiting: None | str | Unset
        if isinstance(self.waiting, Unset):
            waiting = UNSET
        else:
            waiting = self.waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "state": state,
                "spec": spec,
                "dataset_uri": dataset_uri,
                "progress": progress,
                "current_lambda": current_lambda,
                "best_lambda": best_lambda,
                "attempts": attempts,
                "failure_reason": failure_reason,
                "cancel_requested": cancel_requested,
                "created_at": created_at,
                "updated_at": updated_at,
                "started_at": started_at,
                "finished_at": finished_at,
            }
        )
        if choices is not UNSET:
            field_dict["choices"] = choices
        if data_sha256 is not UNSET:
            field_dict["data_sha256"] = data_sha256
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_spec import JobSpec  # noqa: PLC0415
        from ..models.repeat_choice import RepeatChoice  # noqa: PLC0415

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        state = check_job_state(d.pop("state"))

        spec = JobSpec.from_dict(d.pop("spec"))

        dataset_uri = d.pop("dataset_uri")

        progress = d.pop("progress")

        def _parse_current_lambda(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        current_lambda = _parse_current_lambda(d.pop("current_lambda"))

        def _parse_best_lambda(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        best_lambda = _parse_best_lambda(d.pop("best_lambda"))

        attempts = d.pop("attempts")

        def _parse_failure_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        failure_reason = _parse_failure_reason(d.pop("failure_reason"))

        cancel_requested = d.pop("cancel_requested")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        def _parse_choices(data: object) -> list[RepeatChoice] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                choices_type_0 = []
                _choices_type_0 = data
                for choices_type_0_item_data in _choices_type_0:
                    choices_type_0_item = RepeatChoice.from_dict(choices_type_0_item_data)

                    choices_type_0.append(choices_type_0_item)

                return choices_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[RepeatChoice] | None | Unset, data)

        choices = _parse_choices(d.pop("choices", UNSET))

        def _parse_data_sha256(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        data_sha256 = _parse_data_sha256(d.pop("data_sha256", UNSET))

        def _parse_waiting(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        waiting = _parse_waiting(d.pop("waiting", UNSET))

        job = cls(
            id=id,
            state=state,
            spec=spec,
            dataset_uri=dataset_uri,
            progress=progress,
            current_lambda=current_lambda,
            best_lambda=best_lambda,
            attempts=attempts,
            failure_reason=failure_reason,
            cancel_requested=cancel_requested,
            created_at=created_at,
            updated_at=updated_at,
            started_at=started_at,
            finished_at=finished_at,
            choices=choices,
            data_sha256=data_sha256,
            waiting=waiting,
        )

        job.additional_properties = d
        return job

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
