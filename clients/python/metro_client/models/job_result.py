from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.average import Average, check_average
from ..models.multiclass_training import MulticlassTraining, check_multiclass_training
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.class_result import ClassResult
    from ..models.constraint import Constraint
    from ..models.job_result_method_names import JobResultMethodNames
    from ..models.manifest_labels import ManifestLabels
    from ..models.method_summary import MethodSummary
    from ..models.metric_run import MetricRun
    from ..models.repeat_choice import RepeatChoice
    from ..models.result_notice import ResultNotice
    from ..models.selection_summary import SelectionSummary


T = TypeVar("T", bound="JobResult")


@_attrs_define
class JobResult:
    job_id: UUID
    metric: str
    """ The metric's machine name, e.g. f_beta(2) """
    metric_display_name: str
    """ The metric's name as people write it: F2 """
    greater_is_better: bool
    trained_lambda: float | None
    """ The lambda the delivered model (repeat 0's) was trained at """
    shift: None | str
    """ The cost shift the delivered model was trained with """
    lambda_star: float | None
    """ The search's estimate of lambda* (the library's lambda_star_): trained_lambda for the grid, ratio_reached
    for bisection and Dinkelbach """
    selection: None | SelectionSummary
    """ METRO's selection_score, mean and std over the repeats (what `metro watch` shows as best) """
    choices: list[RepeatChoice]
    """ What each repeat's search chose """
    summary: list[MethodSummary]
    """ Per method and split, mean and std over the repeats of the job's metric (an averaged job's: the average over
    its classes) """
    runs: list[MetricRun]
    constraints: list[Constraint] | Unset = UNSET
    """ The job's constraints, in the order of every constraint_values list; empty for an unconstrained job """
    method_names: JobResultMethodNames | Unset = UNSET
    """ Each method of the result as people read it: metro -> METRO, parambath -> Parambath et al. (what metro
    result and the dashboard print) """
    validation_in_sample: bool | Unset = False
    """ Whether the summary's and runs' validation rows are in-sample: true for a binary job with search.refit (the
    default), whose delivered model, and each baseline's, was refit on training + validation, so its validation rows
    were trained on (metro result and the dashboard label them 'validation (in-sample)'); the held-out number METRO
    chose by is selection, and test is never seen by any choice. False with search.refit false (the model fitted on
    the training rows alone), and for an averaged job, whose METRO validation row is the folds' pooled held-out
    average (as selection) """
    labels: ManifestLabels | None | Unset = UNSET
    """ A binary job: the label its metric and constraints count as positive (a run's tp and fn are rows of it) and
    the other, as its delivered model predicts them; null for an averaged job (its classes name themselves), or
    without a model (none yet, or deleted: the labels are read from it) """
    average: Average | None | Unset = UNSET
    """ An averaged job's averaging (metric.average); null: binary """
    classes: list[ClassResult] | None | Unset = UNSET
    """ An averaged job: its classes (or labels), in the order of class_index; null for a binary job """
    multiclass: MulticlassTraining | None | Unset = UNSET
    """ A multi-class job: how its classes were trained (search.multiclass): multinomial, one multinomial logistic
    regression with tuned offsets (no lambda: each class's trained_lambda is null), or per_class, one METRO search
    per class; null for a binary or multi-label job """
    notices: list[ResultNotice] | Unset = UNSET
    """ Facts about how the delivered model decides, a line each (what metro result and the dashboard show beside
    the choices) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.manifest_labels import ManifestLabels  # noqa: PLC0415
        from ..models.selection_summary import SelectionSummary  # noqa: PLC0415

        job_id = str(self.job_id)

        metric = self.metric

        metric_display_name = self.metric_display_name

        greater_is_better = self.greater_is_better

        trained_lambda: float | None
        trained_lambda = self.trained_lambda

        shift: None | str
        shift = self.shift

        lambda_star: float | None
        lambda_star = self.lambda_star

        selection: dict[str, Any] | None
        if isinstance(self.selection, SelectionSummary):
            selection = self.selection.to_dict()
        else:
            selection = self.selection

        choices = []
        for choices_item_data in self.choices:
            choices_item = choices_item_data.to_dict()
            choices.append(choices_item)

        summary = []
        for summary_item_data in self.summary:
            summary_item = summary_item_data.to_dict()
            summary.append(summary_item)

        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        constraints: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.constraints, Unset):
            constraints = []
            for constraints_item_data in self.constraints:
                constraints_item = constraints_item_data.to_dict()
                constraints.append(constraints_item)

        method_names: dict[str, Any] | Unset = UNSET
        if not isinstance(self.method_names, Unset):
            method_names = self.method_names.to_dict()

        validation_in_sample = self.validation_in_sample

        labels: dict[str, Any] | None | Unset
        if isinstance(self.labels, Unset):
            labels = UNSET
        elif isinstance(self.labels, ManifestLabels):
            labels = self.labels.to_dict()
        else:
            labels = self.labels

        average: None | str | Unset
        if isinstance(self.average, Unset):
            average = UNSET
        elif isinstance(self.average, str):
            average = self.average
        else:
            average = self.average

        classes: list[dict[str, Any]] | None | Unset
        if isinstance(self.classes, Unset):
            classes = UNSET
        elif isinstance(self.classes, list):
            classes = []
            for classes_type_0_item_data in self.classes:
                classes_type_0_item = classes_type_0_item_data.to_dict()
                classes.append(classes_type_0_item)

        else:
            classes = self.classes

        multiclass: None | str | Unset
        if isinstance(self.multiclass, Unset):
            multiclass = UNSET
        elif isinstance(self.multiclass, str):
            multiclass = self.multiclass
        else:
            multiclass = self.multiclass

        notices: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.notices, Unset):
            notices = []
            for notices_item_data in self.notices:
                notices_item = notices_item_data.to_dict()
                notices.append(notices_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "metric": metric,
                "metric_display_name": metric_display_name,
                "greater_is_better": greater_is_better,
                "trained_lambda": trained_lambda,
                "shift": shift,
                "lambda_star": lambda_star,
                "selection": selection,
                "choices": choices,
                "summary": summary,
                "runs": runs,
            }
        )
        if constraints is not UNSET:
            field_dict["constraints"] = constraints
        if method_names is not UNSET:
            field_dict["method_names"] = method_names
        if validation_in_sample is not UNSET:
            field_dict["validation_in_sample"] = validation_in_sample
        if labels is not UNSET:
            field_dict["labels"] = labels
        if average is not UNSET:
            field_dict["average"] = average
        if classes is not UNSET:
            field_dict["classes"] = classes
        if multiclass is not UNSET:
            field_dict["multiclass"] = multiclass
        if notices is not UNSET:
            field_dict["notices"] = notices

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.class_result import ClassResult  # noqa: PLC0415
        from ..models.constraint import Constraint  # noqa: PLC0415
        from ..models.job_result_method_names import JobResultMethodNames  # noqa: PLC0415
        from ..models.manifest_labels import ManifestLabels  # noqa: PLC0415
        from ..models.method_summary import MethodSummary  # noqa: PLC0415
        from ..models.metric_run import MetricRun  # noqa: PLC0415
        from ..models.repeat_choice import RepeatChoice  # noqa: PLC0415
        from ..models.result_notice import ResultNotice  # noqa: PLC0415
        from ..models.selection_summary import SelectionSummary  # noqa: PLC0415

        d = dict(src_dict)
        job_id = UUID(d.pop("job_id"))

        metric = d.pop("metric")

        metric_display_name = d.pop("metric_display_name")

        greater_is_better = d.pop("greater_is_better")

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

        def _parse_lambda_star(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        lambda_star = _parse_lambda_star(d.pop("lambda_star"))

        def _parse_selection(data: object) -> None | SelectionSummary:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                selection_type_0 = SelectionSummary.from_dict(data)

                return selection_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SelectionSummary, data)

        selection = _parse_selection(d.pop("selection"))

        choices = []
        _choices = d.pop("choices")
        for choices_item_data in _choices:
            choices_item = RepeatChoice.from_dict(choices_item_data)

            choices.append(choices_item)

        summary = []
        _summary = d.pop("summary")
        for summary_item_data in _summary:
            summary_item = MethodSummary.from_dict(summary_item_data)

            summary.append(summary_item)

        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = MetricRun.from_dict(runs_item_data)

            runs.append(runs_item)

        _constraints = d.pop("constraints", UNSET)
        constraints: list[Constraint] | Unset = UNSET
        if _constraints is not UNSET:
            constraints = []
            for constraints_item_data in _constraints:
                constraints_item = Constraint.from_dict(constraints_item_data)

                constraints.append(constraints_item)

        _method_names = d.pop("method_names", UNSET)
        method_names: JobResultMethodNames | Unset
        if isinstance(_method_names, Unset):
            method_names = UNSET
        else:
            method_names = JobResultMethodNames.from_dict(_method_names)

        validation_in_sample = d.pop("validation_in_sample", UNSET)

        def _parse_labels(data: object) -> ManifestLabels | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                labels_type_0 = ManifestLabels.from_dict(data)

                return labels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestLabels | None | Unset, data)

        labels = _parse_labels(d.pop("labels", UNSET))

        def _parse_average(data: object) -> Average | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                average_type_0 = check_average(data)

                return average_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Average | None | Unset, data)

        average = _parse_average(d.pop("average", UNSET))

        def _parse_classes(data: object) -> list[ClassResult] | None | Unset:
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
                    classes_type_0_item = ClassResult.from_dict(classes_type_0_item_data)

                    classes_type_0.append(classes_type_0_item)

                return classes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ClassResult] | None | Unset, data)

        classes = _parse_classes(d.pop("classes", UNSET))

        def _parse_multiclass(data: object) -> MulticlassTraining | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                multiclass_type_0 = check_multiclass_training(data)

                return multiclass_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MulticlassTraining | None | Unset, data)

        multiclass = _parse_multiclass(d.pop("multiclass", UNSET))

        _notices = d.pop("notices", UNSET)
        notices: list[ResultNotice] | Unset = UNSET
        if _notices is not UNSET:
            notices = []
            for notices_item_data in _notices:
                notices_item = ResultNotice.from_dict(notices_item_data)

                notices.append(notices_item)

        job_result = cls(
            job_id=job_id,
            metric=metric,
            metric_display_name=metric_display_name,
            greater_is_better=greater_is_better,
            trained_lambda=trained_lambda,
            shift=shift,
            lambda_star=lambda_star,
            selection=selection,
            choices=choices,
            summary=summary,
            runs=runs,
            constraints=constraints,
            method_names=method_names,
            validation_in_sample=validation_in_sample,
            labels=labels,
            average=average,
            classes=classes,
            multiclass=multiclass,
            notices=notices,
        )

        job_result.additional_properties = d
        return job_result

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
