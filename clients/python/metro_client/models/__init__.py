"""Contains all the data models used in inputs/outputs"""

from .average import Average
from .baseline import Baseline
from .choice_warning import ChoiceWarning
from .choice_warning_code import ChoiceWarningCode
from .class_result import ClassResult
from .coefficient_metric import CoefficientMetric
from .confusion_counts import ConfusionCounts
from .confusion_metric import ConfusionMetric
from .confusion_metric_denominator import ConfusionMetricDenominator
from .confusion_metric_numerator import ConfusionMetricNumerator
from .constraint import Constraint
from .constraint_info import ConstraintInfo
from .constraint_metric import ConstraintMetric
from .constraint_preset import ConstraintPreset
from .constraint_sense import ConstraintSense
from .constraint_spec import ConstraintSpec
from .cost_shift import CostShift
from .dataset import Dataset
from .dataset_page import DatasetPage
from .dataset_ref import DatasetRef
from .dataset_warning import DatasetWarning
from .decision import Decision
from .decision_threshold import DecisionThreshold
from .download_format import DownloadFormat
from .fallback import Fallback
from .fallback_reason import FallbackReason
from .health import Health
from .job import Job
from .job_create import JobCreate
from .job_page import JobPage
from .job_result import JobResult
from .job_result_method_names import JobResultMethodNames
from .job_spec import JobSpec
from .job_state import JobState
from .lambda_step import LambdaStep
from .lambda_step_page import LambdaStepPage
from .manifest_architecture import ManifestArchitecture
from .manifest_class_constraint import ManifestClassConstraint
from .manifest_constraint import ManifestConstraint
from .manifest_constraints_hold import ManifestConstraintsHold
from .manifest_feature_ranges import ManifestFeatureRanges
from .manifest_job_spec import ManifestJobSpec
from .manifest_labels import ManifestLabels
from .manifest_metric import ManifestMetric
from .manifest_scores import ManifestScores
from .manifest_selection import ManifestSelection
from .manifest_surrogate import ManifestSurrogate
from .method_summary import MethodSummary
from .metric_info import MetricInfo
from .metric_preset import MetricPreset
from .metric_run import MetricRun
from .model import Model
from .model_format import ModelFormat
from .model_kind import ModelKind
from .model_manifest import ModelManifest
from .model_page import ModelPage
from .model_spec import ModelSpec
from .multiclass_mode import MulticlassMode
from .multiclass_training import MulticlassTraining
from .optimizer import Optimizer
from .out_of_range_column import OutOfRangeColumn
from .out_of_range_notice import OutOfRangeNotice
from .predict_request import PredictRequest
from .predict_response import PredictResponse
from .preset_metric import PresetMetric
from .preset_params import PresetParams
from .problem import Problem
from .problem_field_error import ProblemFieldError
from .readiness import Readiness
from .readiness_checks import ReadinessChecks
from .readiness_status import ReadinessStatus
from .refine_mode import RefineMode
from .refinement import Refinement
from .refinement_score import RefinementScore
from .repeat_choice import RepeatChoice
from .result_notice import ResultNotice
from .search_ran import SearchRan
from .search_spec import SearchSpec
from .search_spec_refine_scale import SearchSpecRefineScale
from .search_strategy import SearchStrategy
from .selection_guard import SelectionGuard
from .selection_point import SelectionPoint
from .selection_split import SelectionSplit
from .selection_summary import SelectionSummary
from .split import Split
from .step_selection import StepSelection
from .surrogate_name import SurrogateName
from .surrogate_spec import SurrogateSpec
from .training_spec import TrainingSpec
from .upload_dataset_body import UploadDatasetBody

__all__ = (
    "Average",
    "Baseline",
    "ChoiceWarning",
    "ChoiceWarningCode",
    "ClassResult",
    "CoefficientMetric",
    "ConfusionCounts",
    "ConfusionMetric",
    "ConfusionMetricDenominator",
    "ConfusionMetricNumerator",
    "Constraint",
    "ConstraintInfo",
    "ConstraintMetric",
    "ConstraintPreset",
    "ConstraintSense",
    "ConstraintSpec",
    "CostShift",
    "Dataset",
    "DatasetPage",
    "DatasetRef",
    "DatasetWarning",
    "Decision",
    "DecisionThreshold",
    "DownloadFormat",
    "Fallback",
    "FallbackReason",
    "Health",
    "Job",
    "JobCreate",
    "JobPage",
    "JobResult",
    "JobResultMethodNames",
    "JobSpec",
    "JobState",
    "LambdaStep",
    "LambdaStepPage",
    "ManifestArchitecture",
    "ManifestClassConstraint",
    "ManifestConstraint",
    "ManifestConstraintsHold",
    "ManifestFeatureRanges",
    "ManifestJobSpec",
    "ManifestLabels",
    "ManifestMetric",
    "ManifestScores",
    "ManifestSelection",
    "ManifestSurrogate",
    "MethodSummary",
    "MetricInfo",
    "MetricPreset",
    "MetricRun",
    "Model",
    "ModelFormat",
    "ModelKind",
    "ModelManifest",
    "ModelPage",
    "ModelSpec",
    "MulticlassMode",
    "MulticlassTraining",
    "Optimizer",
    "OutOfRangeColumn",
    "OutOfRangeNotice",
    "PredictRequest",
    "PredictResponse",
    "PresetMetric",
    "PresetParams",
    "Problem",
    "ProblemFieldError",
    "Readiness",
    "ReadinessChecks",
    "ReadinessStatus",
    "Refinement",
    "RefinementScore",
    "RefineMode",
    "RepeatChoice",
    "ResultNotice",
    "SearchRan",
    "SearchSpec",
    "SearchSpecRefineScale",
    "SearchStrategy",
    "SelectionGuard",
    "SelectionPoint",
    "SelectionSplit",
    "SelectionSummary",
    "Split",
    "StepSelection",
    "SurrogateName",
    "SurrogateSpec",
    "TrainingSpec",
    "UploadDatasetBody",
)
