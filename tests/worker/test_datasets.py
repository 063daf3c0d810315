"""worker.datasets: turning a job's dataset URI into data, and the reasons a job gets when that
fails."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from core.config import Settings
from metro.data import DataError
from worker.datasets import load_job_dataset


def test_s3_dataset_without_credentials_fails_with_a_clear_reason(monkeypatch, tmp_path):
    """Was "internal error (NoCredentialsError)": a reason that names what to set instead."""
    for name in (
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to look for
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # never reached
    ctx = SimpleNamespace(settings=Settings(_env_file=None))  # type: ignore[call-arg]
    uri = f"s3://metro-{uuid.uuid4().hex[:12]}/train.csv"
    with pytest.raises(DataError, match="the workers have no S3 credentials") as info:
        load_job_dataset(ctx, uuid.uuid4(), {"uri": uri, "label_column": "y"})  # type: ignore[arg-type]
    assert uri in str(info.value)
