"""Trained-model views and the prediction contract."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, model_validator

from core.records import ModelManifest
from service.schemas.common import one_form_of

LabelValue = bool | int | float | str


class ModelOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    job_id: uuid.UUID | None
    formats: list[Literal["safetensors", "onnx"]]
    sha256: str = Field(description="SHA-256 of model.safetensors")
    manifest: ModelManifest = Field(
        description="What the model file says of itself: architecture, shapes, digests, the "
        "metric, the trained lambda and how it was chosen (core.records.ModelManifest)"
    )
    created_at: datetime


class PredictRequest(BaseModel):
    """Either ``instances`` (rows in the model's feature order) or ``columns`` + ``data`` (rows
    whose values are reordered by name to the model's features)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"instances": [[0.1, 2.0, 3.5]]},
                {"columns": ["age", "income"], "data": [[41.0, 52000.0]]},
            ],
            # The two forms, in the document's terms: exactly one is given.
            **one_form_of(("instances",), ("columns", "data")),
        },
    )
    # Strict: a value is a JSON number ("17.99" and true were read as 17.99 and 1.0, where a
    # job's numbers are strict: one rule for every number the API takes).
    instances: list[list[StrictFloat]] | None = Field(
        default=None,
        description="Rows of numbers in the model's feature order (the manifest's "
        "feature_names); not with columns and data",
    )
    columns: list[str] | None = Field(
        default=None,
        description="The feature names of data's values, in any order (every feature of the "
        "model, each once); with data, not with instances",
        json_schema_extra={"uniqueItems": True},
    )
    data: list[list[StrictFloat]] | None = Field(
        default=None,
        description="Rows of numbers in the order of columns; with columns, not with instances",
    )

    @model_validator(mode="after")
    def _one_form(self) -> PredictRequest:
        if self.instances is not None and (self.columns is not None or self.data is not None):
            raise ValueError("give either 'instances' or 'columns' and 'data', not both")
        if self.instances is None and (self.columns is None or self.data is None):
            raise ValueError("give 'instances', or both 'columns' and 'data'")
        return self


class OutOfRangeColumn(BaseModel):
    """A feature with values outside the range the model was trained on."""

    column: str | None = Field(
        description="The feature's name (null where the model was trained without names)"
    )
    index: int = Field(description="The feature's position in the model's feature order")
    rows_outside: int = Field(description="How many of the request's rows are outside")
    training_min: float = Field(description="The least value of the rows it was trained on")
    training_max: float = Field(description="The greatest value of the rows it was trained on")


class OutOfRangeNotice(BaseModel):
    """The request's values outside the model's training ranges: a per-feature range check,
    not a test of distribution shift (rows inside every range can still be unlike the
    training data)."""

    message: str = Field(description="What was found, in words")
    columns: list[OutOfRangeColumn] = Field(
        description="Up to 5 columns with values outside, those with the most rows first"
    )
    n_columns: int = Field(description="Every column with a value outside (columns lists 5)")
    n_rows: int = Field(description="Rows with at least one value outside")


class PredictResponse(BaseModel):
    model_id: uuid.UUID
    margins: list[float] = Field(
        description="The model's raw margin h(x) per row (its decision function: unbounded, "
        "not a probability). The label is positive where the margin is at least the manifest's "
        "threshold (0: the tuned threshold is already folded into the model). A model of "
        "several classes: the largest of the row's class margins"
    )
    labels: list[LabelValue | list[LabelValue]] = Field(
        description="Predicted labels, in the training data's terms. Multi-class: the class of "
        "the largest margin; multi-label: the list of labels whose margin is >= 0"
    )
    classes: list[LabelValue] | None = Field(
        default=None,
        description="A model of several classes: its classes (or label columns), the order of "
        "each row of class_margins; null for a binary model",
    )
    positive_label: LabelValue | None = Field(
        default=None,
        description="A binary model: the label a margin at or above the threshold predicts, the "
        "class its metric counted as positive (the manifest's labels.positive); null for a "
        "model of several classes",
    )
    class_margins: list[list[float]] | None = Field(
        default=None,
        description="A model of several classes: every class's margin per row (the model's "
        "ONNX output 'score', offsets and thresholds folded in); null for a binary model",
    )
    out_of_range: OutOfRangeNotice | None = Field(
        default=None,
        description="Where rows hold values outside the range of the rows the model was "
        "trained on (the manifest's feature_ranges): the columns, how many rows, and the "
        "training min and max; the scores are given all the same. Null where every value is "
        "inside, or the model has no ranges (an image model, or one trained before 1.5.0)",
    )
