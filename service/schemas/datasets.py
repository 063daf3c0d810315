"""Dataset views. The storage path stays internal; clients see the ``dataset://`` URI."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict


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
    created_at: datetime
