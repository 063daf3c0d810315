from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.baseline import Baseline, check_baseline
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.coefficient_metric import CoefficientMetric
    from ..models.confusion_metric import ConfusionMetric
    from ..models.constraint_info import ConstraintInfo
    from ..models.constraint_spec import ConstraintSpec
    from ..models.dataset_ref import DatasetRef
    from ..models.metric_info import MetricInfo
    from ..models.model_spec import ModelSpec
    from ..models.preset_metric import PresetMetric
    from ..models.search_spec import SearchSpec
    from ..models.surrogate_spec import SurrogateSpec
    from ..models.training_spec import TrainingSpec


T = TypeVar("T", bound="JobCreate")


@_attrs_define
class JobCreate:
    metric: CoefficientMetric | ConfusionMetric | PresetMetric
    dataset: DatasetRef
    surrogate: SurrogateSpec | Unset = UNSET
    """ The surrogate loss Phi the cost-sensitive models are trained with, and its parameter (metro.surrogates). """
    model: ModelSpec | Unset = UNSET
    """ The hypothesis set (metro.models.ModelSpec): its kind and the sizes that kind uses. Fields left out take the
    defaults shown. """
    search: SearchSpec | Unset = UNSET
    """ How lambda is searched (metro.search.SearchConfig). Fields left out take the defaults shown. """
    training: TrainingSpec | Unset = UNSET
    """ How each model is fitted (metro.trainer.TrainingConfig). Fields left out take the defaults shown. """
    repeats: int | Unset = UNSET
    """ Fresh train/test splits the job is run on; the result reports the mean and the spread over them. Server
    default: 1 """
    baselines: list[Baseline] | Unset = UNSET
    """ Methods run beside METRO on the same splits and folds: erm (logistic regression, threshold 0), koyejo1 (the
    same, its threshold tuned for the metric), koyejo2 and parambath (cost-weighted logistic regressions over a
    grid; parambath tunes a threshold per grid point) """
    constraints: list[ConstraintSpec] | Unset = UNSET
    """ Floors and ceilings on other ratio metrics that METRO and every baseline choose under (grid search only);
    none: the unconstrained problem """
    metric_info: MetricInfo | None | Unset = UNSET
    """ Read-only: what the server resolved the metric to, as a job's spec returns it. Accepted so that a returned
    spec can be submitted again, and ignored: the server derives it anew. Server default: null """
    constraint_info: list[ConstraintInfo] | None | Unset = UNSET
    """ Read-only: what the server resolved each constraint to, as a job's spec returns it. Accepted so that a
    returned spec can be submitted again, and ignored: the server derives it anew. Server default: null """

    def to_dict(self) -> dict[str, Any]:
        from ..models.coefficient_metric import CoefficientMetric  # noqa: PLC0415
        from ..models.metric_info import MetricInfo  # noqa: PLC0415
        from ..models.preset_metric import PresetMetric  # noqa: PLC0415

        metric: dict[str, Any]
        if isinstance(self.metric, PresetMetric):
            metric = self.metric.to_dict()
        elif isinstance(self.metric, CoefficientMetric):
            metric = self.metric.to_dict()
        else:
            metric = self.metric.to_dict()

        dataset = self.dataset.to_dict()

        surrogate: dict[str, Any] | Unset = UNSET
        if not isinstance(self.surrogate, Unset):
            surrogate = self.surrogate.to_dict()

        model: dict[str, Any] | Unset = UNSET
        if not isinstance(self.model, Unset):
            model = self.model.to_dict()

        search: dict[str, Any] | Unset = UNSET
        if not isinstance(self.search, Unset):
            search = self.search.to_dict()

        training: dict[str, Any] | Unset = UNSET
        if not isinstance(self.training, Unset):
            training = self.training.to_dict()

        repeats = self.repeats

        baselines: list[str] | Unset = UNSET
        if not isinstance(self.baselines, Unset):
            baselines = []
            for baselines_item_data in self.baselines:
                baselines_item: str = baselines_item_data
                baselines.append(baselines_item)

        constraints: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.constraints, Unset):
            constraints = []
            for constraints_item_data in self.constraints:
                constraints_item = constraints_item_data.to_dict()
                constraints.append(constraints_item)

        metric_info: dict[str, Any] | None | Unset
        if isinstance(self.metric_info, Unset):
            metric_info = UNSET
        elif isinstance(self.metric_info, MetricInfo):
            metric_info = self.metric_info.to_dict()
        else:
            metric_info = self.metric_info

        constraint_info: list[dict[str, Any]] | None | Unset
        if isinstance(self.constraint_info, Unset):
            constraint_info = UNSET
        elif isinstance(self.constraint_info, list):
            constraint_info = []
            for constraint_info_type_0_item_data in self.constraint_info:
                constraint_info_type_0_item = constraint_info_type_0_item_data.to_dict()
                constraint_info.append(constraint_info_type_0_item)

        else:
            constraint_info = self.constraint_info

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "metric": metric,
                "dataset": dataset,
            }
        )
        if surrogate is not UNSET:
            field_dict["surrogate"] = surrogate
        if model is not UNSET:
            field_dict["model"] = model
        if search is not UNSET:
            field_dict["search"] = search
        if training is not UNSET:
            field_dict["training"] = training
        if repeats is not UNSET:
            field_dict["repeats"] = repeats
        if baselines is not UNSET:
            field_dict["baselines"] = baselines
        if constraints is not UNSET:
            field_dict["constraints"] = constraints
        if metric_info is not UNSET:
            field_dict["metric_info"] = metric_info
        if constraint_info is not UNSET:
            field_dict["constraint_info"] = constraint_info

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.coefficient_metric import CoefficientMetric  # noqa: PLC0415
        from ..models.confusion_metric import ConfusionMetric  # noqa: PLC0415
        from ..models.constraint_info import ConstraintInfo  # noqa: PLC0415
        from ..models.constraint_spec import ConstraintSpec  # noqa: PLC0415
        from ..models.dataset_ref import DatasetRef  # noqa: PLC0415
        from ..models.metric_info import MetricInfo  # noqa: PLC0415
        from ..models.model_spec import ModelSpec  # noqa: PLC0415
        from ..models.preset_metric import PresetMetric  # noqa: PLC0415
        from ..models.search_spec import SearchSpec  # noqa: PLC0415
        from ..models.surrogate_spec import SurrogateSpec  # noqa: PLC0415
        from ..models.training_spec import TrainingSpec  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_metric(data: object) -> CoefficientMetric | ConfusionMetric | PresetMetric:
            refused: list[str] = []
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                metric_type_0 = PresetMetric.from_dict(data)

                return metric_type_0
            except KeyError as error:
                refused.append(f"as PresetMetric: missing {error}")
            except (TypeError, ValueError, AttributeError) as error:
                refused.append(f"as PresetMetric: {error}")
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                metric_type_1 = CoefficientMetric.from_dict(data)

                return metric_type_1
            except KeyError as error:
                refused.append(f"as CoefficientMetric: missing {error}")
            except (TypeError, ValueError, AttributeError) as error:
                refused.append(f"as CoefficientMetric: {error}")
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                metric_type_2 = ConfusionMetric.from_dict(data)

                return metric_type_2
            except KeyError as error:
                refused.append(f"as ConfusionMetric: missing {error}")
            except (TypeError, ValueError, AttributeError) as error:
                refused.append(f"as ConfusionMetric: {error}")
            raise ValueError("metric: " + "; ".join(refused))

        metric = _parse_metric(d.pop("metric"))

        dataset = DatasetRef.from_dict(d.pop("dataset"))

        _surrogate = d.pop("surrogate", UNSET)
        surrogate: SurrogateSpec | Unset
        if isinstance(_surrogate, Unset):
            surrogate = UNSET
        else:
            surrogate = SurrogateSpec.from_dict(_surrogate)

        _model = d.pop("model", UNSET)
        model: ModelSpec | Unset
        if isinstance(_model, Unset):
            model = UNSET
        else:
            model = ModelSpec.from_dict(_model)

        _search = d.pop("search", UNSET)
        search: SearchSpec | Unset
        if isinstance(_search, Unset):
            search = UNSET
        else:
            search = SearchSpec.from_dict(_search)

        _training = d.pop("training", UNSET)
        training: TrainingSpec | Unset
        if isinstance(_training, Unset):
            training = UNSET
        else:
            training = TrainingSpec.from_dict(_training)

        repeats = d.pop("repeats", UNSET)

        _baselines = d.pop("baselines", UNSET)
        baselines: list[Baseline] | Unset = UNSET
        if _baselines is not UNSET:
            baselines = []
            for baselines_item_data in _baselines:
                baselines_item = check_baseline(baselines_item_data)

                baselines.append(baselines_item)

        _constraints = d.pop("constraints", UNSET)
        constraints: list[ConstraintSpec] | Unset = UNSET
        if _constraints is not UNSET:
            constraints = []
            for constraints_item_data in _constraints:
                constraints_item = ConstraintSpec.from_dict(constraints_item_data)

                constraints.append(constraints_item)

        def _parse_metric_info(data: object) -> MetricInfo | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                metric_info_type_0 = MetricInfo.from_dict(data)

                return metric_info_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MetricInfo | None | Unset, data)

        metric_info = _parse_metric_info(d.pop("metric_info", UNSET))

        def _parse_constraint_info(data: object) -> list[ConstraintInfo] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                constraint_info_type_0 = []
                _constraint_info_type_0 = data
                for constraint_info_type_0_item_data in _constraint_info_type_0:
                    constraint_info_type_0_item = ConstraintInfo.from_dict(constraint_info_type_0_item_data)

                    constraint_info_type_0.append(constraint_info_type_0_item)

                return constraint_info_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ConstraintInfo] | None | Unset, data)

        constraint_info = _parse_constraint_info(d.pop("constraint_info", UNSET))

        job_create = cls(
            metric=metric,
            dataset=dataset,
            surrogate=surrogate,
            model=model,
            search=search,
            training=training,
            repeats=repeats,
            baselines=baselines,
            constraints=constraints,
            metric_info=metric_info,
            constraint_info=constraint_info,
        )

        if d:  # the schema forbids other fields (the server's 422 extra_forbidden)
            raise ValueError("unknown field(s) of JobCreate: " + ", ".join(sorted(map(str, d))))
        return job_create
