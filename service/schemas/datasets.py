"""Dataset views. The storage path stays internal; clients see the ``dataset://`` URI."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from service.schemas.jobs import LabelValue


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
    created_at: datetime
