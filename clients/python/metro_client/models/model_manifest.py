from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.average import Average, check_average
from ..models.decision import Decision, check_decision
from ..models.multiclass_training import MulticlassTraining, check_multiclass_training
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.choice_warning import ChoiceWarning
    from ..models.fallback import Fallback
    from ..models.manifest_architecture import ManifestArchitecture
    from ..models.manifest_class_constraint import ManifestClassConstraint
    from ..models.manifest_constraint import ManifestConstraint
    from ..models.manifest_constraints_hold import ManifestConstraintsHold
    from ..models.manifest_feature_ranges import ManifestFeatureRanges
    from ..models.manifest_job_spec import ManifestJobSpec
    from ..models.manifest_labels import ManifestLabels
    from ..models.manifest_metric import ManifestMetric
    from ..models.manifest_scores import ManifestScores
    from ..models.manifest_selection import ManifestSelection
    from ..models.manifest_surrogate import ManifestSurrogate
    from ..models.refinement import Refinement


T = TypeVar("T", bound="ModelManifest")


@_attrs_define
class ModelManifest:
    """What a model file says of itself (``manifest.json`` beside the weights), as served.

    The structural fields are computed from the weights when the model is saved; the others
    describe the job that trained it. Fields this version does not know (a newer worker's) are
    kept, and a field a manifest does not have is left out of the answer, not shown as null (the
    model routes answer with ``response_model_exclude_unset``): the API serves the manifest
    exactly as the model file has it.

    """

    format_version: int | None | Unset = UNSET
    architecture: ManifestArchitecture | None | Unset = UNSET
    """ The model spec: kind and sizes """
    input_shape: list[int] | None | Unset = UNSET
    n_features: int | None | Unset = UNSET
    feature_names: list[str] | None | Unset = UNSET
    feature_ranges: ManifestFeatureRanges | None | Unset = UNSET
    """ A tabular model's per-feature min and max over the rows it was trained on; a prediction names the columns of
    its rows outside them (out_of_range). Absent for image models and in a manifest written before ranges were kept
    """
    weights_sha256: None | str | Unset = UNSET
    """ SHA-256 of model.safetensors """
    onnx_sha256: None | str | Unset = UNSET
    """ SHA-256 of model.onnx (null: none) """
    labels: ManifestLabels | None | Unset = UNSET
    threshold: float | Unset = 0.0
    """ The margin at or above which the label is positive (0: the tuned threshold is folded into the model) """
    metric: ManifestMetric | None | Unset = UNSET
    """ The metric as specified, with its name and orientation """
    trained_lambda: float | None | Unset = UNSET
    """ The lambda this model was trained at """
    lambda_star: float | None | Unset = UNSET
    """ The search's estimate of lambda* (the library's lambda_star_): trained_lambda for the grid, ratio_reached
    for bisection and Dinkelbach """
    ratio_reached: float | None | Unset = UNSET
    tuned_threshold: float | None | Unset = UNSET
    """ The threshold the search tuned on h (already folded in) """
    shift: None | str | Unset = UNSET
    selection: ManifestSelection | None | Unset = UNSET
    warnings: list[ChoiceWarning] | None | Unset = UNSET
    refinement: None | Refinement | Unset = UNSET
    fallback: Fallback | None | Unset = UNSET
    scores: ManifestScores | None | Unset = UNSET
    """ The metric of this model per split (validation, test) """
    job_id: None | str | Unset = UNSET
    dataset: None | str | Unset = UNSET
    data_sha256: None | str | Unset = UNSET
    """ The job's data_sha256: a digest of the features and labels it was trained and tested on
    (metro.datasets.load_dataset(...).content_sha256 of a local copy), which names the data after its upload is
    deleted; absent in a manifest written before it """
    job_spec: ManifestJobSpec | None | Unset = UNSET
    """ The job's spec as the service stored it, defaults filled in: POST it to /v1/jobs to train the same model
    again (its training.seed seeds every split and fit); absent in a manifest written before it """
    surrogate: ManifestSurrogate | None | Unset = UNSET
    search: None | str | Unset = UNSET
    """ The search that chose the delivered model (its choice's strategy: exact where the metric needed no search
    over lambda); search.strategy as asked in a manifest written before the choices said it """
    constraints: list[ManifestConstraint] | None | Unset = UNSET
    """ Under constraints: each as specified and named, with its value per split (scores; an averaged job's: the
    mean over its classes) and, binary, where the search chose (selection_value) and the tightest bound some fit met
    (reach) """
    constraints_hold: ManifestConstraintsHold | None | Unset = UNSET
    """ Under constraints: whether all held, per split (an averaged job: for every class) """
    constraints_satisfied: bool | None | Unset = UNSET
    """ Under constraints: whether they held where the search chose (an averaged job: for every class) """
    class_constraints: list[ManifestClassConstraint] | None | Unset = UNSET
    """ An averaged job under constraints: each class's (label's) own, in the order of classes: label,
    selection_values, reach, satisfied and mu where its search chose, and scores and hold per split (the mean over
    the classes can clear a bound one of them missed) """
    mu: float | None | Unset = UNSET
    """ Under constraints: the Lagrange multiplier the model was trained with, beside trained_lambda """
    average: Average | None | Unset = UNSET
    """ How the per-class metric is averaged (null: binary) """
    classes: list[bool | float | int | str] | None | Unset = UNSET
    """ The classes (multi-class) or label columns (multi-label), one per score of the model, in order """
    decision: Decision | None | Unset = UNSET
    """ argmax: the predicted class is the one with the largest score; per_label: label k is on where score k >= 0
    (null: binary, see threshold) """
    decision_rule: None | str | Unset = UNSET
    """ Multi-class: tuned (per-class offsets tuned for the average) or ovr. Multi-label: per_label (each label's
    own threshold), or tuned (micro average: the labels' offsets tuned together for the pooled metric) """
    multiclass: MulticlassTraining | None | Unset = UNSET
    """ Multi-class: how it was trained (search.multiclass): multinomial (one multinomial logistic regression; its
    scores are its logits, no lambda) or per_class (one METRO search per class); absent before this field existed
    (per_class) """
    class_lambdas: list[float | None] | None | Unset = UNSET
    """ The lambda each class's model was trained at; null for a multinomial model, which has none """
    class_thresholds: list[float | None] | None | Unset = UNSET
    """ Each class's tuned threshold on h (folded into the model) """
    offsets: list[float | None] | None | Unset = UNSET
    """ Each class's offset before the argmax, or each label's under a micro average (folded in) """
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.fallback import Fallback  # noqa: PLC0415
        from ..models.manifest_architecture import ManifestArchitecture  # noqa: PLC0415
        from ..models.manifest_constraints_hold import ManifestConstraintsHold  # noqa: PLC0415
        from ..models.manifest_feature_ranges import ManifestFeatureRanges  # noqa: PLC0415
        from ..models.manifest_job_spec import ManifestJobSpec  # noqa: PLC0415
        from ..models.manifest_labels import ManifestLabels  # noqa: PLC0415
        from ..models.manifest_metric import ManifestMetric  # noqa: PLC0415
        from ..models.manifest_scores import ManifestScores  # noqa: PLC0415
        from ..models.manifest_selection import ManifestSelection  # noqa: PLC0415
        from ..models.manifest_surrogate import ManifestSurrogate  # noqa: PLC0415
        from ..models.refinement import Refinement  # noqa: PLC0415

        format_version: int | None | Unset
        if isinstance(self.format_version, Unset):
            format_version = UNSET
        else:
            format_version = self.format_version

        architecture: dict[str, Any] | None | Unset
        if isinstance(self.architecture, Unset):
            architecture = UNSET
        elif isinstance(self.architecture, ManifestArchitecture):
            architecture = self.architecture.to_dict()
        else:
            architecture = self.architecture

        input_shape: list[int] | None | Unset
        if isinstance(self.input_shape, Unset):
            input_shape = UNSET
        elif isinstance(self.input_shape, list):
            input_shape = self.input_shape

        else:
            input_shape = self.input_shape

        n_features: int | None | Unset
        if isinstance(self.n_features, Unset):
            n_features = UNSET
        else:
            n_features = self.n_features

        feature_names: list[str] | None | Unset
        if isinstance(self.feature_names, Unset):
            feature_names = UNSET
        elif isinstance(self.feature_names, list):
            feature_names = self.feature_names

        else:
            feature_names = self.feature_names

        feature_ranges: dict[str, Any] | None | Unset
        if isinstance(self.feature_ranges, Unset):
            feature_ranges = UNSET
        elif isinstance(self.feature_ranges, ManifestFeatureRanges):
            feature_ranges = self.feature_ranges.to_dict()
        else:
            feature_ranges = self.feature_ranges

        weights_sha256: None | str | Unset
        if isinstance(self.weights_sha256, Unset):
            weights_sha256 = UNSET
        else:
            weights_sha256 = self.weights_sha256

        onnx_sha256: None | str | Unset
        if isinstance(self.onnx_sha256, Unset):
            onnx_sha256 = UNSET
        else:
            onnx_sha256 = self.onnx_sha256

        labels: dict[str, Any] | None | Unset
        if isinstance(self.labels, Unset):
            labels = UNSET
        elif isinstance(self.labels, ManifestLabels):
            labels = self.labels.to_dict()
        else:
            labels = self.labels

        threshold = self.threshold

        metric: dict[str, Any] | None | Unset
        if isinstance(self.metric, Unset):
            metric = UNSET
        elif isinstance(self.metric, ManifestMetric):
            metric = self.metric.to_dict()
        else:
            metric = self.metric

        trained_lambda: float | None | Unset
        if isinstance(self.trained_lambda, Unset):
            trained_lambda = UNSET
        else:
            trained_lambda = self.trained_lambda

        lambda_star: float | None | Unset
        if isinstance(self.lambda_star, Unset):
            lambda_star = UNSET
        else:
            lambda_star = self.lambda_star

        ratio_reached: float | None | Unset
        if isinstance(self.ratio_reached, Unset):
            ratio_reached = UNSET
        else:
            ratio_reached = self.ratio_reached

        tuned_threshold: float | None | Unset
        if isinstance(self.tuned_threshold, Unset):
            tuned_threshold = UNSET
        else:
            tuned_threshold = self.tuned_threshold

        shift: None | str | Unset
        if isinstance(self.shift, Unset):
            shift = UNSET
        else:
            shift = self.shift

        selection: dict[str, Any] | None | Unset
        if isinstance(self.selection, Unset):
            selection = UNSET
        elif isinstance(self.selection, ManifestSelection):
            selection = self.selection.to_dict()
        else:
            selection = self.selection

        warnings: list[dict[str, Any]] | None | Unset
        if isinstance(self.warnings, Unset):
            warnings = UNSET
        elif isinstance(self.warnings, list):
            warnings = []
            for warnings_type_0_item_data in self.warnings:
                warnings_type_0_item = warnings_type_0_item_data.to_dict()
                warnings.append(warnings_type_0_item)

        else:
            warnings = self.warnings

        refinement: dict[str, Any] | None | Unset
        if isinstance(self.refinement, Unset):
            refinement = UNSET
        elif isinstance(self.refinement, Refinement):
            refinement = self.refinement.to_dict()
        else:
            refinement = self.refinement

        fallback: dict[str, Any] | None | Unset
        if isinstance(self.fallback, Unset):
            fallback = UNSET
        elif isinstance(self.fallback, Fallback):
            fallback = self.fallback.to_dict()
        else:
            fallback = self.fallback

        scores: dict[str, Any] | None | Unset
        if isinstance(self.scores, Unset):
            scores = UNSET
        elif isinstance(self.scores, ManifestScores):
            scores = self.scores.to_dict()
        else:
            scores = self.scores

        job_id: None | str | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        dataset: None | str | Unset
        if isinstance(self.dataset, Unset):
            dataset = UNSET
        else:
            dataset = self.dataset

        data_sha256: None | str | Unset
        if isinstance(self.data_sha256, Unset):
            data_sha256 = UNSET
        else:
            data_sha256 = self.data_sha256

        job_spec: dict[str, Any] | None | Unset
        if isinstance(self.job_spec, Unset):
            job_spec = UNSET
        elif isinstance(self.job_spec, ManifestJobSpec):
            job_spec = self.job_spec.to_dict()
        else:
            job_spec = self.job_spec

        surrogate: dict[str, Any] | None | Unset
        if isinstance(self.surrogate, Unset):
            surrogate = UNSET
        elif isinstance(self.surrogate, ManifestSurrogate):
            surrogate = self.surrogate.to_dict()
        else:
            surrogate = self.surrogate

        search: None | str | Unset
        if isinstance(self.search, Unset):
            search = UNSET
        else:
            search = self.search

        constraints: list[dict[str, Any]] | None | Unset
        if isinstance(self.constraints, Unset):
            constraints = UNSET
        elif isinstance(self.constraints, list):
            constraints = []
            for constraints_type_0_item_data in self.constraints:
                constraints_type_0_item = constraints_type_0_item_data.to_dict()
                constraints.append(constraints_type_0_item)

        else:
            constraints = self.constraints

        constraints_hold: dict[str, Any] | None | Unset
        if isinstance(self.constraints_hold, Unset):
            constraints_hold = UNSET
        elif isinstance(self.constraints_hold, ManifestConstraintsHold):
            constraints_hold = self.constraints_hold.to_dict()
        else:
            constraints_hold = self.constraints_hold

        constraints_satisfied: bool | None | Unset
        if isinstance(self.constraints_satisfied, Unset):
            constraints_satisfied = UNSET
        else:
            constraints_satisfied = self.constraints_satisfied

        class_constraints: list[dict[str, Any]] | None | Unset
        if isinstance(self.class_constraints, Unset):
            class_constraints = UNSET
        elif isinstance(self.class_constraints, list):
            class_constraints = []
            for class_constraints_type_0_item_data in self.class_constraints:
                class_constraints_type_0_item = class_constraints_type_0_item_data.to_dict()
                class_constraints.append(class_constraints_type_0_item)

        else:
            class_constraints = self.class_constraints

        mu: float | None | Unset
        if isinstance(self.mu, Unset):
            mu = UNSET
        else:
            mu = self.mu

        average: None | str | Unset
        if isinstance(self.average, Unset):
            average = UNSET
        elif isinstance(self.average, str):
            average = self.average
        else:
            average = self.average

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

        decision: None | str | Unset
        if isinstance(self.decision, Unset):
            decision = UNSET
        elif isinstance(self.decision, str):
            decision = self.decision
        else:
            decision = self.decision

        decision_rule: None | str | Unset
        if isinstance(self.decision_rule, Unset):
            decision_rule = UNSET
        else:
            decision_rule = self.decision_rule

        multiclass: None | str | Unset
        if isinstance(self.multiclass, Unset):
            multiclass = UNSET
        elif isinstance(self.multiclass, str):
            multiclass = self.multiclass
        else:
            multiclass = self.multiclass

        class_lambdas: list[float | None] | None | Unset
        if isinstance(self.class_lambdas, Unset):
            class_lambdas = UNSET
        elif isinstance(self.class_lambdas, list):
            class_lambdas = []
            for class_lambdas_type_0_item_data in self.class_lambdas:
                class_lambdas_type_0_item: float | None
                class_lambdas_type_0_item = class_lambdas_type_0_item_data
                class_lambdas.append(class_lambdas_type_0_item)

        else:
            class_lambdas = self.class_lambdas

        class_thresholds: list[float | None] | None | Unset
        if isinstance(self.class_thresholds, Unset):
            class_thresholds = UNSET
        elif isinstance(self.class_thresholds, list):
            class_thresholds = []
            for class_thresholds_type_0_item_data in self.class_thresholds:
                class_thresholds_type_0_item: float | None
                class_thresholds_type_0_item = class_thresholds_type_0_item_data
                class_thresholds.append(class_thresholds_type_0_item)

        else:
            class_thresholds = self.class_thresholds

        offsets: list[float | None] | None | Unset
        if isinstance(self.offsets, Unset):
            offsets = UNSET
        elif isinstance(self.offsets, list):
            offsets = []
            for offsets_type_0_item_data in self.offsets:
                offsets_type_0_item: float | None
                offsets_type_0_item = offsets_type_0_item_data
                offsets.append(offsets_type_0_item)

        else:
            offsets = self.offsets

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if format_version is not UNSET:
            field_dict["format_version"] = format_version
        if architecture is not UNSET:
            field_dict["architecture"] = architecture
        if input_shape is not UNSET:
            field_dict["input_shape"] = input_shape
        if n_features is not UNSET:
            field_dict["n_features"] = n_features
        if feature_names is not UNSET:
            field_dict["feature_names"] = feature_names
        if feature_ranges is not UNSET:
            field_dict["feature_ranges"] = feature_ranges
        if weights_sha256 is not UNSET:
            field_dict["weights_sha256"] = weights_sha256
        if onnx_sha256 is not UNSET:
            field_dict["onnx_sha256"] = onnx_sha256
        if labels is not UNSET:
            field_dict["labels"] = labels
        if threshold is not UNSET:
            field_dict["threshold"] = threshold
        if metric is not UNSET:
            field_dict["metric"] = metric
        if trained_lambda is not UNSET:
            field_dict["trained_lambda"] = trained_lambda
        if lambda_star is not UNSET:
            field_dict["lambda_star"] = lambda_star
        if ratio_reached is not UNSET:
            field_dict["ratio_reached"] = ratio_reached
        if tuned_threshold is not UNSET:
            field_dict["tuned_threshold"] = tuned_threshold
        if shift is not UNSET:
            field_dict["shift"] = shift
        if selection is not UNSET:
            field_dict["selection"] = selection
        if warnings is not UNSET:
            field_dict["warnings"] = warnings
        if refinement is not UNSET:
            field_dict["refinement"] = refinement
        if fallback is not UNSET:
            field_dict["fallback"] = fallback
        if scores is not UNSET:
            field_dict["scores"] = scores
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if dataset is not UNSET:
            field_dict["dataset"] = dataset
        if data_sha256 is not UNSET:
            field_dict["data_sha256"] = data_sha256
        if job_spec is not UNSET:
            field_dict["job_spec"] = job_spec
        if surrogate is not UNSET:
            field_dict["surrogate"] = surrogate
        if search is not UNSET:
            field_dict["search"] = search
        if constraints is not UNSET:
            field_dict["constraints"] = constraints
        if constraints_hold is not UNSET:
            field_dict["constraints_hold"] = constraints_hold
        if constraints_satisfied is not UNSET:
            field_dict["constraints_satisfied"] = constraints_satisfied
        if class_constraints is not UNSET:
            field_dict["class_constraints"] = class_constraints
        if mu is not UNSET:
            field_dict["mu"] = mu
        if average is not UNSET:
            field_dict["average"] = average
        if classes is not UNSET:
            field_dict["classes"] = classes
        if decision is not UNSET:
            field_dict["decision"] = decision
        if decision_rule is not UNSET:
            field_dict["decision_rule"] = decision_rule
        if multiclass is not UNSET:
            field_dict["multiclass"] = multiclass
        if class_lambdas is not UNSET:
            field_dict["class_lambdas"] = class_lambdas
        if class_thresholds is not UNSET:
            field_dict["class_thresholds"] = class_thresholds
        if offsets is not UNSET:
            field_dict["offsets"] = offsets

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.choice_warning import ChoiceWarning  # noqa: PLC0415
        from ..models.fallback import Fallback  # noqa: PLC0415
        from ..models.manifest_architecture import ManifestArchitecture  # noqa: PLC0415
        from ..models.manifest_class_constraint import ManifestClassConstraint  # noqa: PLC0415
        from ..models.manifest_constraint import ManifestConstraint  # noqa: PLC0415
        from ..models.manifest_constraints_hold import ManifestConstraintsHold  # noqa: PLC0415
        from ..models.manifest_feature_ranges import ManifestFeatureRanges  # noqa: PLC0415
        from ..models.manifest_job_spec import ManifestJobSpec  # noqa: PLC0415
        from ..models.manifest_labels import ManifestLabels  # noqa: PLC0415
        from ..models.manifest_metric import ManifestMetric  # noqa: PLC0415
        from ..models.manifest_scores import ManifestScores  # noqa: PLC0415
        from ..models.manifest_selection import ManifestSelection  # noqa: PLC0415
        from ..models.manifest_surrogate import ManifestSurrogate  # noqa: PLC0415
        from ..models.refinement import Refinement  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_format_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        format_version = _parse_format_version(d.pop("format_version", UNSET))

        def _parse_architecture(data: object) -> ManifestArchitecture | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                architecture_type_0 = ManifestArchitecture.from_dict(data)

                return architecture_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestArchitecture | None | Unset, data)

        architecture = _parse_architecture(d.pop("architecture", UNSET))

        def _parse_input_shape(data: object) -> list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                input_shape_type_0 = cast(list[int], data)

                return input_shape_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None | Unset, data)

        input_shape = _parse_input_shape(d.pop("input_shape", UNSET))

        def _parse_n_features(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        n_features = _parse_n_features(d.pop("n_features", UNSET))

        def _parse_feature_names(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                feature_names_type_0 = cast(list[str], data)

                return feature_names_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        feature_names = _parse_feature_names(d.pop("feature_names", UNSET))

        def _parse_feature_ranges(data: object) -> ManifestFeatureRanges | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                feature_ranges_type_0 = ManifestFeatureRanges.from_dict(data)

                return feature_ranges_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestFeatureRanges | None | Unset, data)

        feature_ranges = _parse_feature_ranges(d.pop("feature_ranges", UNSET))

        def _parse_weights_sha256(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        weights_sha256 = _parse_weights_sha256(d.pop("weights_sha256", UNSET))

        def _parse_onnx_sha256(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        onnx_sha256 = _parse_onnx_sha256(d.pop("onnx_sha256", UNSET))

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

        threshold = d.pop("threshold", UNSET)

        def _parse_metric(data: object) -> ManifestMetric | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                metric_type_0 = ManifestMetric.from_dict(data)

                return metric_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestMetric | None | Unset, data)

        metric = _parse_metric(d.pop("metric", UNSET))

        def _parse_trained_lambda(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        trained_lambda = _parse_trained_lambda(d.pop("trained_lambda", UNSET))

        def _parse_lambda_star(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lambda_star = _parse_lambda_star(d.pop("lambda_star", UNSET))

        def _parse_ratio_reached(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        ratio_reached = _parse_ratio_reached(d.pop("ratio_reached", UNSET))

        def _parse_tuned_threshold(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tuned_threshold = _parse_tuned_threshold(d.pop("tuned_threshold", UNSET))

        def _parse_shift(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        shift = _parse_shift(d.pop("shift", UNSET))

        def _parse_selection(data: object) -> ManifestSelection | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                selection_type_0 = ManifestSelection.from_dict(data)

                return selection_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestSelection | None | Unset, data)

        selection = _parse_selection(d.pop("selection", UNSET))

        def _parse_warnings(data: object) -> list[ChoiceWarning] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                warnings_type_0 = []
                _warnings_type_0 = data
                for warnings_type_0_item_data in _warnings_type_0:
                    warnings_type_0_item = ChoiceWarning.from_dict(warnings_type_0_item_data)

                    warnings_type_0.append(warnings_type_0_item)

                return warnings_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ChoiceWarning] | None | Unset, data)

        warnings = _parse_warnings(d.pop("warnings", UNSET))

        def _parse_refinement(data: object) -> None | Refinement | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                refinement_type_0 = Refinement.from_dict(data)

                return refinement_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Refinement | Unset, data)

        refinement = _parse_refinement(d.pop("refinement", UNSET))

        def _parse_fallback(data: object) -> Fallback | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                fallback_type_0 = Fallback.from_dict(data)

                return fallback_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Fallback | None | Unset, data)

        fallback = _parse_fallback(d.pop("fallback", UNSET))

        def _parse_scores(data: object) -> ManifestScores | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                scores_type_0 = ManifestScores.from_dict(data)

                return scores_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestScores | None | Unset, data)

        scores = _parse_scores(d.pop("scores", UNSET))

        def _parse_job_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        def _parse_dataset(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dataset = _parse_dataset(d.pop("dataset", UNSET))

        def _parse_data_sha256(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        data_sha256 = _parse_data_sha256(d.pop("data_sha256", UNSET))

        def _parse_job_spec(data: object) -> ManifestJobSpec | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                job_spec_type_0 = ManifestJobSpec.from_dict(data)

                return job_spec_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestJobSpec | None | Unset, data)

        job_spec = _parse_job_spec(d.pop("job_spec", UNSET))

        def _parse_surrogate(data: object) -> ManifestSurrogate | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                surrogate_type_0 = ManifestSurrogate.from_dict(data)

                return surrogate_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestSurrogate | None | Unset, data)

        surrogate = _parse_surrogate(d.pop("surrogate", UNSET))

        def _parse_search(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        search = _parse_search(d.pop("search", UNSET))

        def _parse_constraints(data: object) -> list[ManifestConstraint] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                constraints_type_0 = []
                _constraints_type_0 = data
                for constraints_type_0_item_data in _constraints_type_0:
                    constraints_type_0_item = ManifestConstraint.from_dict(constraints_type_0_item_data)

                    constraints_type_0.append(constraints_type_0_item)

                return constraints_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ManifestConstraint] | None | Unset, data)

        constraints = _parse_constraints(d.pop("constraints", UNSET))

        def _parse_constraints_hold(data: object) -> ManifestConstraintsHold | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"got {type(data).__name__}")
                constraints_hold_type_0 = ManifestConstraintsHold.from_dict(data)

                return constraints_hold_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ManifestConstraintsHold | None | Unset, data)

        constraints_hold = _parse_constraints_hold(d.pop("constraints_hold", UNSET))

        def _parse_constraints_satisfied(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        constraints_satisfied = _parse_constraints_satisfied(d.pop("constraints_satisfied", UNSET))

        def _parse_class_constraints(data: object) -> list[ManifestClassConstraint] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                class_constraints_type_0 = []
                _class_constraints_type_0 = data
                for class_constraints_type_0_item_data in _class_constraints_type_0:
                    class_constraints_type_0_item = ManifestClassConstraint.from_dict(
                        class_constraints_type_0_item_data
                    )

                    class_constraints_type_0.append(class_constraints_type_0_item)

                return class_constraints_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ManifestClassConstraint] | None | Unset, data)

        class_constraints = _parse_class_constraints(d.pop("class_constraints", UNSET))

        def _parse_mu(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mu = _parse_mu(d.pop("mu", UNSET))

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

        def _parse_decision(data: object) -> Decision | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError(f"got {type(data).__name__}")
                decision_type_0 = check_decision(data)

                return decision_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Decision | None | Unset, data)

        decision = _parse_decision(d.pop("decision", UNSET))

        def _parse_decision_rule(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        decision_rule = _parse_decision_rule(d.pop("decision_rule", UNSET))

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

        def _parse_class_lambdas(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                class_lambdas_type_0 = []
                _class_lambdas_type_0 = data
                for class_lambdas_type_0_item_data in _class_lambdas_type_0:

                    def _parse_class_lambdas_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    class_lambdas_type_0_item = _parse_class_lambdas_type_0_item(class_lambdas_type_0_item_data)

                    class_lambdas_type_0.append(class_lambdas_type_0_item)

                return class_lambdas_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        class_lambdas = _parse_class_lambdas(d.pop("class_lambdas", UNSET))

        def _parse_class_thresholds(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                class_thresholds_type_0 = []
                _class_thresholds_type_0 = data
                for class_thresholds_type_0_item_data in _class_thresholds_type_0:

                    def _parse_class_thresholds_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    class_thresholds_type_0_item = _parse_class_thresholds_type_0_item(
                        class_thresholds_type_0_item_data
                    )

                    class_thresholds_type_0.append(class_thresholds_type_0_item)

                return class_thresholds_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        class_thresholds = _parse_class_thresholds(d.pop("class_thresholds", UNSET))

        def _parse_offsets(data: object) -> list[float | None] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError(f"got {type(data).__name__}")
                offsets_type_0 = []
                _offsets_type_0 = data
                for offsets_type_0_item_data in _offsets_type_0:

                    def _parse_offsets_type_0_item(data: object) -> float | None:
                        if data is None:
                            return data
                        return cast(float | None, data)

                    offsets_type_0_item = _parse_offsets_type_0_item(offsets_type_0_item_data)

                    offsets_type_0.append(offsets_type_0_item)

                return offsets_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float | None] | None | Unset, data)

        offsets = _parse_offsets(d.pop("offsets", UNSET))

        model_manifest = cls(
            format_version=format_version,
            architecture=architecture,
            input_shape=input_shape,
            n_features=n_features,
            feature_names=feature_names,
            feature_ranges=feature_ranges,
            weights_sha256=weights_sha256,
            onnx_sha256=onnx_sha256,
            labels=labels,
            threshold=threshold,
            metric=metric,
            trained_lambda=trained_lambda,
            lambda_star=lambda_star,
            ratio_reached=ratio_reached,
            tuned_threshold=tuned_threshold,
            shift=shift,
            selection=selection,
            warnings=warnings,
            refinement=refinement,
            fallback=fallback,
            scores=scores,
            job_id=job_id,
            dataset=dataset,
            data_sha256=data_sha256,
            job_spec=job_spec,
            surrogate=surrogate,
            search=search,
            constraints=constraints,
            constraints_hold=constraints_hold,
            constraints_satisfied=constraints_satisfied,
            class_constraints=class_constraints,
            mu=mu,
            average=average,
            classes=classes,
            decision=decision,
            decision_rule=decision_rule,
            multiclass=multiclass,
            class_lambdas=class_lambdas,
            class_thresholds=class_thresholds,
            offsets=offsets,
        )

        model_manifest.additional_properties = d
        return model_manifest

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
