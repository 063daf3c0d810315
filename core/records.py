"""The records a worker writes and the API reads back: one set of types for both sides.

A repeat's choice is built by the worker as a :class:`RepeatChoice` (validated as it is
written, so a wrong value fails the job's worker, not a later GET), stored as its JSON in the
job's row (``core.store.set_choices``), and read back by the API into the same type. A model's
manifest (what ``metro.serialization.save_model`` wrote beside the weights) is checked as a
:class:`ModelManifest` before its row is written, and the API serves it as one. These are the
API's schemas too (service.schemas re-exports them), so what a client reads is what the worker
wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field
from typing_extensions import TypeAliasType

from metro.averaging import AVERAGES
from metro.constraints import DEFAULT_CONFIDENCE
from metro.search.base import FEW_TRUE_POSITIVES, SearchWarning, WarningCode
from metro.search.config import NO_SIGNAL_LEVEL

if TYPE_CHECKING:
    from metro.constraints import Constraint
    from metro.metrics import Metric

# How an averaged job averages its per-class metric: one named schema ("Average") that the
# OpenAPI document references wherever a job, a result or a manifest carries it.
Average = TypeAliasType("Average", Literal[AVERAGES])  # type: ignore[valid-type]
# How a multi-class job trained its classes (search.multiclass):
# one named schema that its result and its model's manifest both reference.
MulticlassTraining = TypeAliasType("MulticlassTraining", Literal["multinomial", "per_class"])

__all__ = [
    "Average",
    "ChoiceWarning",
    "ConfusionCounts",
    "ConstraintInfo",
    "ManifestLabels",
    "ManifestSelection",
    "MetricInfo",
    "MetricRecord",
    "ModelManifest",
    "Refinement",
    "RefinementScore",
    "RepeatChoice",
    "SelectionPoint",
    "SelectionSplit",
    "Split",
    "StepRecord",
    "choices_json",
]


# Where a choice was made (see RepeatChoice.selection_split), and which split a metric was
# scored on: each one named schema that every field carrying it references.
SelectionSplit = TypeAliasType("SelectionSplit", Literal["cross-validation", "validation", "train"])
Split = TypeAliasType("Split", Literal["validation", "test"])


class MetricInfo(BaseModel):
    """How the server shows a job's metric, resolved from its ``metric``."""

    # Recorded in the spec at submission, read back by the results and the workers, and
    # accepted (read-only, ignored) in a returned spec submitted again.

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str
    greater_is_better: bool

    @classmethod
    def of(cls, metric: Metric, *, average: str | None = None) -> MetricInfo:
        from metro.metrics import spec_display_name

        return cls(
            name=metric.name,
            display_name=spec_display_name(metric, average=average),
            greater_is_better=bool(metric.greater_is_better),
        )

    @classmethod
    def stored(cls, spec: Mapping[str, Any]) -> MetricInfo:
        """A stored spec's record; a job stored before the display name was recorded gets it
        from the machine name."""
        from metro.metrics import display_name

        info = spec.get("metric_info") or {}
        name = str(info.get("name", "custom"))
        return cls(
            name=name,
            display_name=str(info.get("display_name") or display_name(name)),
            greater_is_better=bool(info.get("greater_is_better", True)),
        )


class ConstraintInfo(BaseModel):
    """How the server shows a constraint, resolved from it."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="The machine name, e.g. recall >= 0.9")
    display_name: str = Field(description="As people write it: Recall ≥ 0.9")
    metric_display_name: str = Field(description="The constrained metric's name: Recall")

    @classmethod
    def of(cls, constraint: Constraint) -> ConstraintInfo:
        from metro.metrics import spec_display_name

        word = "≥" if constraint.sense == "at_least" else "≤"
        # The metric object, not its name: a weighted accuracy's costs are part of what it is
        metric = spec_display_name(constraint.metric)
        return cls(
            name=constraint.name,
            display_name=f"{metric} {word} {constraint.bound:g}",
            metric_display_name=metric,
        )


class ConfusionCounts(BaseModel):
    tp: int
    fp: int
    fn: int
    tn: int


class ChoiceWarning(BaseModel):
    """Something about a repeat's choice to look at before trusting it."""

    code: Literal[tuple(code.value for code in WarningCode)] = Field(  # type: ignore[valid-type]
        description="lambda_at_grid_edge: the trained lambda is the first or last grid point "
        "where that end is search.lambda_min or lambda_max (the best may lie beyond); "
        "predicts_one_class: the chosen classifier predicts one "
        "class on the held-out rows, or the delivered model one class on the rows it was refit "
        "on (a multi-class model: never this class, which the held-out argmax predicted); "
        f"few_true_positives: its score rests on fewer than {FEW_TRUE_POSITIVES} "
        "true positives; constraints_not_met: no fit met every constraint on the held-out "
        "rows, and the one that missed them by the least (with a confidence asked for: the "
        "one most likely to meet them on new data) was kept; no_supported_choice: "
        "no choice rests on enough held-out evidence (5 true positives, a tenth of the "
        "positives predicted positive), not even the plain-ERM fallback delivered instead: "
        "the data cannot support a choice; no_signal: a paired bootstrap over the held-out "
        "rows does not find the chosen classifier better than predicting every row one class "
        f"with probability {NO_SIGNAL_LEVEL:g}: its lead may be chance; id_like_feature (on "
        "the delivered model's choice): a feature holds a different integer on every row, "
        "filling a range or named as an id (txn_id, customerId), as an id or a row number "
        "does, and the model may read the rows' order from it (dataset.ignore_columns leaves "
        "it out); offsets_not_tuned (a micro-averaged multi-label job's label): its "
        "out-of-fold margins could not be rebuilt from the folds, so the labels' offsets were "
        "not tuned together and each keeps its own threshold; constraint_uncertain: a "
        "constraint the choice met (a proportion: precision, recall, false-positive rate) "
        "rests on so few held-out rows that a new sample of one fold's size meets it with a "
        "probability below the confidence it was judged at (computed exactly; the message "
        "gives it)"
    )
    message: str

    @classmethod
    def of(cls, warning: SearchWarning) -> ChoiceWarning:
        """The library's warning as a choice carries it."""
        return cls(code=warning.code.value, message=warning.message)


class RefinementScore(BaseModel):
    temperature: float
    scale: str = Field(
        default="free",
        description="The schedule this stage belongs to: free (the weights may grow, sharpening "
        "the sigmoid) or held (the scores keep the start's spread); see search.refine_scale",
    )
    score: float | None = Field(description="The refined models' metric on selection_split")
    constraints_hold: bool | None = Field(
        default=None,
        description="Under constraints: whether they all held there (null without)",
    )


class Refinement(BaseModel):
    """The refinement step after the choice (docs/algorithms.md, "Refinement")."""

    kept: bool = Field(description="Whether a refined model beat the search's choice")
    temperature: float | None = Field(description="The temperature kept, null if none was")
    scale: str | None = Field(
        default=None, description="The kept stage's scale (free or held), null if none was"
    )
    score_before: float | None = Field(
        description="The search's choice's metric on selection_split, before the step"
    )
    threshold_before: float = Field(
        description="The threshold the search tuned, where the step started from"
    )
    scores: list[RefinementScore]
    refit_rate_ratio: float | None = Field(
        default=None,
        description="The delivered model's predicted-positive rate on its training rows over "
        "the refined fold models' on the held-out rows that judged them; a step whose ratio is "
        "outside the job's search.refine_consistency is not kept (null: not checked)",
    )
    signal_probability: float | None = Field(
        default=None,
        description="The paired bootstrap's probability, over the held-out rows, that the best "
        "stage beats the better constant classifier (every row positive, or every row "
        "negative); a step below the job's search.refine_signal is not kept (null: not checked)",
    )
    replaced_by_fallback: bool = Field(
        default=False,
        description="The safeguard's fallback replaced the choice the step started from: the "
        "delivered model is the fallback's, unrefined, whatever the step found",
    )
    greater_is_better: bool = Field(
        default=True, description="The metric's direction, which the scores are compared in"
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="Why the step was not kept, in the words the CLI and the dashboard show: no "
        "stage (that met the constraints) beat the choice, or the best one did and a check "
        "turned it down (search.refine_consistency, refine_signal, else refine_confidence); "
        "null when it was kept"
    )
    @property
    def not_kept_reason(self) -> str | None:
        if self.kept:
            return None
        if self.replaced_by_fallback:
            return "the fallback replaced the choice it started from"
        before = self.score_before
        met = [s.score for s in self.scores if s.constraints_hold is not False]
        pick = max if self.greater_is_better else min
        best = pick((v for v in met if v is not None), default=None)
        if best is None or before is None or pick(best, before) == before:
            shown = "" if before is None else f"'s {before:.4f}"
            return f"no refined model beat the choice{shown}"
        beat = f"a refined model beat the choice's {before:.4f} with {best:.4f} but"
        if self.refit_rate_ratio is not None:
            ratio = self.refit_rate_ratio
            return f"{beat} its refit predicted {ratio:.2f}x the judged folds' positive rate"
        if self.signal_probability is not None:
            return (
                f"{beat} the held-out rows could not tell it from a constant classifier "
                f"(p = {self.signal_probability:.2f})"
            )
        return f"{beat} not by a significant margin"


class Fallback(BaseModel):
    """The safeguard's fallback delivered in place of the search's choice (docs/algorithms.md,
    "Selection under thin evidence"): plain ERM's lambda, its threshold tuned among the
    thresholds the held-out rows back."""

    reason: Literal["unsupported", "within_noise"] = Field(
        description="unsupported: the choice rested on too few held-out true positives or "
        "predicted positives; within_noise: the held-out rows could not tell it from the "
        "fallback with the job's search.shrink_confidence"
    )
    choice_lambda: float | None = Field(description="The lambda the search had chosen")
    choice_score: float | None = Field(
        description="The search's choice's metric on selection_split (refined, where the "
        "refinement was kept), before the fallback replaced it"
    )
    win_probability: float | None = Field(
        default=None,
        description="within_noise: the paired bootstrap's probability, over the held-out rows, "
        "that the choice beats the fallback (null: not computed)",
    )

    @computed_field(  # type: ignore[prop-decorator]
        description="Why the fallback was delivered, in the words the CLI and the dashboard show"
    )
    @property
    def message(self) -> str:
        chosen = "the search's choice" + (
            f" (λ {self.choice_lambda:.4g}" + (
                f", {self.choice_score:.4f} held-out)" if self.choice_score is not None else ")"
            )
            if self.choice_lambda is not None
            else ""
        )  # fmt: skip
        if self.reason == "unsupported":
            why = f"{chosen} rested on too few held-out positives"
        else:
            odds = f" (p = {self.win_probability:.2f})" if self.win_probability is not None else ""
            why = f"the held-out rows could not tell {chosen} from plain ERM's{odds}"
        return f"{why}: the fallback, plain ERM's λ with a threshold they back, was delivered"


class SelectionPoint(BaseModel):
    lambda_: float = Field(alias="lambda")
    shift: str
    score: float | None = Field(
        description="The metric on selection_split's rows at this lambda's own tuned threshold"
    )

    model_config = ConfigDict(populate_by_name=True)


# The search that chose (metro.search's SearchResult.strategy).
SearchRan = TypeAliasType(
    "SearchRan", Literal["grid", "bisection", "dinkelbach", "constrained-grid", "exact"]
)


class RepeatChoice(BaseModel):
    """What one repeat's lambda search chose. See the glossary in docs/api.md."""

    repeat: int
    strategy: SearchRan | None = Field(
        default=None,
        description="The search that chose: grid, bisection or dinkelbach as search.strategy "
        "asked, constrained-grid under constraints, or exact where the metric's denominator "
        "does not depend on the predictions (accuracy, recall, balanced and weighted accuracy): "
        "one cost-sensitive fit is exact, no search over lambda ran, and trained_lambda is that "
        "fit's lambda, which changes nothing (no estimate of lambda*). Null for a class of a "
        "multinomial model, and in a result written before this field existed",
    )
    trained_lambda: float | None = Field(
        description="The lambda this repeat's model was trained at (the refit's); null for a "
        "class of a multinomial model (search.multiclass), which no lambda search trained"
    )
    shift: str | None = Field(
        description="The cost shift that model was trained with; null where trained_lambda is"
    )
    ratio_reached: float | None = Field(
        description="Bisection and Dinkelbach: the middle of their last bracket, their estimate "
        "of the optimal ratio lambda*; no model was trained there unless it equals "
        "trained_lambda. Null for the grid"
    )
    tuned_threshold: float = Field(
        description="The decision threshold on h chosen with the lambda, folded into the model"
    )
    selection_score: float | None = Field(
        description="The metric the choice was made by, on selection_split (null if undefined)"
    )
    selection_split: SelectionSplit = Field(
        description="cross-validation: the held-out rows of every fold, pooled; validation: "
        "the validation split; train: the training rows (no held-out part)"
    )
    n_folds: int | None = Field(description="Folds pooled for cross-validation, else null")
    selection_counts: ConfusionCounts | None = Field(
        description="The held-out confusion counts selection_score was computed from"
    )
    warnings: list[ChoiceWarning]
    refinement: Refinement | None = Field(
        default=None,
        description="The refinement step (null: it did not run: refine off, a network, "
        "constraints missed where chosen, or no held-out rows). When kept, selection_score is "
        "the refined models' and tuned_threshold is 0 (the refined model decides by its sign)",
    )
    fallback: Fallback | None = Field(
        default=None,
        description="The safeguard's fallback replaced the search's choice, and why: "
        "trained_lambda, tuned_threshold, selection_score and selection_counts are then the "
        "fallback's. Null where the search's own choice was delivered",
    )
    constraint_values: list[float | None] | None = Field(
        default=None,
        description="Under constraints: each constraint's value (in the spec's order) where "
        "the choice was made, on selection_split at the tuned threshold; null without",
    )
    constraints_satisfied: bool | None = Field(
        default=None,
        description="Under constraints: whether every constraint held there (false: none of "
        "the fits met them, and the one closest was kept); null without",
    )
    mu: float | None = Field(
        default=None,
        description="Under constraints: the Lagrange multiplier (one of search.multipliers) the "
        "delivered model was trained with, beside trained_lambda; null without constraints",
    )
    constraint_reach: list[float | None] | None = Field(
        default=None,
        description="Under constraints: each constraint's tightest bound (in the spec's order) "
        "that some fit of the grid flagging rows met on selection_split while meeting the other "
        "constraints' bounds (where there are several), at the "
        f"confidence it was judged at (its own, else {DEFAULT_CONFIDENCE:g}, or 0.5 for a "
        "bound at a proportion's best value such as recall >= 1), within the metric's range; "
        "where constraints_satisfied is false, what to loosen a bound to (at the range's end: "
        "no bound was certified). Null without constraints, or where no fit flagged a row",
    )
    selection_curve: list[SelectionPoint] | None = Field(
        default=None,
        description="Grid searches: every (lambda, shift) with the score the choice was made by "
        "(pooled over the folds with cross-validation: not the mean of the folds' curves); "
        "null for bisection, Dinkelbach and constrained searches",
    )
    label: bool | int | float | str | None = Field(
        default=None,
        description="An averaged job (metric.average): the class, or the label column, this "
        "search was for (one choice per class and repeat); absent for a binary job",
    )
    offset: float | None = Field(
        default=None,
        description="An averaged multi-class job: the offset added to this class's margin "
        "before the argmax (tuned for the average on the pooled held-out margins; 0: the "
        "one-vs-rest rule). A micro-averaged multi-label job: the offset added to this label's "
        "margin, tuned with the other labels' for the pooled metric (0: the label's own "
        "threshold). Absent for a binary job, for a macro- or weighted-averaged multi-label one, "
        "and for a micro-averaged one whose labels chose on a holdout (their own thresholds)",
    )

    @property
    def lambda_star(self) -> float | None:
        """The search's estimate of lambda*, as the library's ``lambda_star_``: the ratio a
        bisection or Dinkelbach search reached, the trained lambda for the grid (its choice).
        (A plain property: the schema keeps ``ratio_reached`` and ``trained_lambda`` apart.)"""
        return self.ratio_reached if self.ratio_reached is not None else self.trained_lambda


class ManifestLabels(BaseModel):
    positive: bool | int | float | str = Field(description="The label h(x) >= 0 predicts")
    negative: bool | int | float | str


class ManifestFeatureRanges(BaseModel):
    """A tabular model's training ranges: each feature's least and greatest finite value over
    the rows the model was trained on, in the order of feature_names (null: no finite value)."""

    min: list[float | None]
    max: list[float | None]


class ManifestSelection(BaseModel):
    """How the delivered model was chosen: repeat 0's choice (see RepeatChoice)."""

    selection_score: float | None
    selection_split: SelectionSplit
    n_folds: int | None
    selection_counts: ConfusionCounts | None


class ModelManifest(BaseModel):
    """What a model file says of itself (``manifest.json`` beside the weights), as served.

    The structural fields are computed from the weights when the model is saved; the others
    describe the job that trained it. Fields this version does not know (a newer worker's) are
    kept, and a field a manifest does not have is left out of the answer, not shown as null (the
    model routes answer with ``response_model_exclude_unset``): the API serves the manifest
    exactly as the model file has it.
    """

    model_config = ConfigDict(extra="allow")

    # Every field may be absent from what is read back (a stored manifest is served as it is);
    # the worker checks a new one before its row is written (worker.runner).
    format_version: int | None = None
    architecture: dict[str, Any] | None = Field(
        default=None, description="The model spec: kind and sizes"
    )
    input_shape: list[int] | None = None
    n_features: int | None = None
    feature_names: list[str] | None = None
    feature_ranges: ManifestFeatureRanges | None = Field(
        default=None,
        description="A tabular model's per-feature min and max over the rows it was trained "
        "on; a prediction names the columns of its rows outside them (out_of_range). Absent "
        "for image models and in a manifest written before ranges were kept",
    )
    weights_sha256: str | None = Field(default=None, description="SHA-256 of model.safetensors")
    onnx_sha256: str | None = Field(default=None, description="SHA-256 of model.onnx (null: none)")
    labels: ManifestLabels | None = None
    threshold: float = Field(
        default=0.0,
        description="The margin at or above which the label is positive (0: the tuned "
        "threshold is folded into the model)",
    )
    metric: dict[str, Any] | None = Field(
        default=None, description="The metric as specified, with its name and orientation"
    )
    trained_lambda: float | None = Field(
        default=None, description="The lambda this model was trained at"
    )
    lambda_star: float | None = Field(
        default=None,
        description="The search's estimate of lambda* (the library's lambda_star_): "
        "trained_lambda for the grid, ratio_reached for bisection and Dinkelbach",
    )
    ratio_reached: float | None = None
    tuned_threshold: float | None = Field(
        default=None, description="The threshold the search tuned on h (already folded in)"
    )
    shift: str | None = None
    selection: ManifestSelection | None = None
    warnings: list[ChoiceWarning] | None = None
    refinement: Refinement | None = None
    fallback: Fallback | None = None
    scores: dict[str, float | None] | None = Field(
        default=None, description="The metric of this model per split (validation, test)"
    )
    job_id: str | None = None
    dataset: str | None = None
    data_sha256: str | None = Field(
        default=None,
        description="The job's data_sha256: a digest of the features and labels it was trained "
        "and tested on (metro.datasets.load_dataset(...).content_sha256 of a local copy), which "
        "names the data after its upload is deleted; absent in a manifest written before it",
    )
    job_spec: dict[str, Any] | None = Field(
        default=None,
        description="The job's spec as the service stored it, defaults filled in: POST it to "
        "/v1/jobs to train the same model again (its training.seed seeds every split and fit); "
        "absent in a manifest written before it",
    )
    surrogate: dict[str, Any] | None = None
    search: str | None = Field(
        default=None,
        description="The search that chose the delivered model (its choice's strategy: exact "
        "where the metric needed no search over lambda); search.strategy as asked in a manifest "
        "written before the choices said it",
    )
    constraints: list[dict[str, Any]] | None = Field(
        default=None,
        description="Under constraints: each as specified and named, with its value per split "
        "(scores; an averaged job's: the mean over its classes) and, binary, where the search "
        "chose (selection_value) and the tightest bound some fit met (reach)",
    )
    constraints_hold: dict[str, bool | None] | None = Field(
        default=None,
        description="Under constraints: whether all held, per split (an averaged job: for "
        "every class)",
    )
    constraints_satisfied: bool | None = Field(
        default=None,
        description="Under constraints: whether they held where the search chose (an averaged "
        "job: for every class)",
    )
    class_constraints: list[dict[str, Any]] | None = Field(
        default=None,
        description="An averaged job under constraints: each class's (label's) own, in the "
        "order of classes: label, selection_values, reach, satisfied and mu where its search "
        "chose, and scores and hold per split (the mean over the classes can clear a bound one "
        "of them missed)",
    )
    mu: float | None = Field(
        default=None,
        description="Under constraints: the Lagrange multiplier the model was trained with, "
        "beside trained_lambda",
    )
    # A model of several classes (an averaged job, metro.multiclass).
    average: Average | None = Field(
        default=None, description="How the per-class metric is averaged (null: binary)"
    )
    classes: list[bool | int | float | str] | None = Field(
        default=None,
        description="The classes (multi-class) or label columns (multi-label), one per score "
        "of the model, in order",
    )
    decision: Literal["argmax", "per_label"] | None = Field(
        default=None,
        description="argmax: the predicted class is the one with the largest score; "
        "per_label: label k is on where score k >= 0 (null: binary, see threshold)",
    )
    decision_rule: str | None = Field(
        default=None,
        description="Multi-class: tuned (per-class offsets tuned for the average) or ovr. "
        "Multi-label: per_label (each label's own threshold), or tuned (micro average: the "
        "labels' offsets tuned together for the pooled metric)",
    )
    multiclass: MulticlassTraining | None = Field(
        default=None,
        description="Multi-class: how it was trained (search.multiclass): multinomial "
        "(one multinomial logistic regression; its scores are its logits, no lambda) or "
        "per_class (one METRO search per class); absent before this field existed (per_class)",
    )
    class_lambdas: list[float | None] | None = Field(
        default=None,
        description="The lambda each class's model was trained at; null for a multinomial "
        "model, which has none",
    )
    class_thresholds: list[float | None] | None = Field(
        default=None, description="Each class's tuned threshold on h (folded into the model)"
    )
    offsets: list[float | None] | None = Field(
        default=None,
        description="Each class's offset before the argmax, or each label's under a micro "
        "average (folded in)",
    )


class StepRecord(BaseModel):
    """One step of a job's lambda trace as the worker writes it (a ``lambda_steps`` row, which
    the API serves as LambdaStepOut). Numbers the search could not compute (a diverged fit's
    loss) are null; the store refuses any other non-finite value."""

    model_config = ConfigDict(frozen=True, strict=True)

    repeat: int
    step: int
    fold: int | None
    method: str
    lambda_: float
    shift: str | None
    surrogate_loss: float | None
    l_lambda: float | None
    train_metric: float | None
    validation_metric: float | None
    seconds: float | None
    mu: float | None
    constraint_values: list[float | None] | None
    # An averaged job: the class (label) this step's search is for; None for a binary job.
    class_index: int | None = None
    label: bool | int | float | str | None = None


class MetricRecord(BaseModel):
    """One method's score on one split of one repeat as the worker writes it (a
    ``metric_results`` row, served in the job's results)."""

    model_config = ConfigDict(frozen=True, strict=True)

    method: str
    repeat: int
    split: Split
    metric_value: float
    tp: int
    fp: int
    fn: int
    tn: int
    lambda_: float | None
    constraint_values: list[float | None] | None
    constraints_hold: bool | None
    # An averaged job's per-class rows; -1 (and no label): the job's own figure.
    class_index: int = -1
    label: bool | int | float | str | None = None


def choices_json(choices: list[RepeatChoice]) -> list[dict[str, object]]:
    """The choices as the job row stores them (JSON, ``lambda`` under its wire name)."""
    out = []
    for choice in choices:
        # A binary job's choices are stored as before averaged jobs existed: no class fields.
        unset = {k for k in _CLASS_FIELDS if getattr(choice, k) is None}
        out.append(choice.model_dump(mode="json", by_alias=True, exclude=unset))
    return out


_CLASS_FIELDS = ("label", "offset")
