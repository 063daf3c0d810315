"""Dataset views. The storage path stays internal; clients see the ``dataset://`` URI."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.schemas.jobs import LabelValue


class DatasetWarning(BaseModel):
    """Something the upload's check found in the data that a job on it should not miss."""

    code: Literal["id_like_feature"] = Field(
        description="id_like_feature: a feature holds a different integer on every row, "
        "filling a range or named as an id (txn_id, customerId), as an id or a row number "
        "does; a model may read the rows' order from it (a job's dataset.ignore_columns, or "
        "the upload's, leaves it out)"
    )
    message: str


class DatasetOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    uri: str
    filename: str
    format: str
    size_bytes: int
    sha256: str
    n_rows: int | None
    n_columns: int | None
    columns: list[str] | None
    label_column: str | None = Field(
        description="The label column the upload was checked with (its label_column), if any"
    )
    labels: list[LabelValue] | None = Field(
        description="That column's two classes, [negative, positive] as read with the upload's "
        "positive_label (or the default); a job on this column is checked against them. A "
        "column of three classes or more (for a job with metric.average): its classes, in the "
        "order an averaged job's class_index counts them"
    )
    # New fields have defaults, so that a client made from this document reads an older
    # server's answer, which lacks them.
    label_columns: list[str] | None = Field(
        default=None,
        description="Or the several 0/1 label columns the upload was checked with, as a "
        "multi-label job (dataset.label_columns) reads them",
    )
    ignore_columns: list[str] | None = Field(
        default=None,
        description="The columns the upload's check left out of the features (its "
        "ignore_columns); a job leaves out only those its own dataset.ignore_columns names",
    )
    warnings: list[DatasetWarning] = Field(
        default_factory=list,
        description="What the upload's check (with a label column) found in the features; "
        "empty where it found nothing, or checked only the file's shape",
    )
    created_at: datetime

    @field_validator("warnings", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        return [] if value is None else value
