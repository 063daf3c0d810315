"""Helpers for the project's own tests and benchmarks (as ``sklearn.utils._testing``): small
model artifacts written exactly the way the workers write them, through
:mod:`metro.serialization`. Not part of the library's API."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_linear_artifact(
    directory: Path,
    weight: list[float],
    bias: float,
    *,
    feature_names: list[str] | None = None,
    mean: list[float] | None = None,
    std: list[float] | None = None,
    onnx: bool = False,
    threshold: float = 0.0,
    feature_ranges: dict[str, list[float | None]] | None = None,
) -> tuple[Path, str, dict[str, Any]]:
    """A tiny linear model written the way workers write them (metro.serialization);
    ``feature_ranges`` as a manifest holds them (none: a manifest written before they were
    kept)."""
    import torch

    from metro.models import ModelSpec, StackedModel
    from metro.serialization import save_model

    d = len(weight)
    model = StackedModel(ModelSpec("linear"), input_shape=(d,), n_models=1)
    with torch.no_grad():
        model.get_parameter("weight").copy_(torch.tensor(weight).reshape(d, 1))
        model.get_parameter("bias").fill_(bias)
        model.get_buffer("mean").copy_(torch.tensor(mean or [0.0] * d))
        model.get_buffer("std").copy_(torch.tensor(std or [1.0] * d))
    manifest = save_model(
        directory,
        model.eval(),
        manifest={
            "feature_names": feature_names,
            "metric": {"preset": "f1", "name": "f1", "greater_is_better": True},
            "lambda_star": -0.42,
            "threshold": threshold,
            "labels": {"positive": "yes", "negative": "no"},
            "feature_ranges": feature_ranges,
        },
        onnx=onnx,
    )
    return directory, manifest["weights_sha256"], manifest


def write_mlp_artifact(
    directory: Path, d: int, hidden: int, seed: int = 0
) -> tuple[Path, str, dict[str, Any], Any]:
    import torch

    from metro.models import ModelSpec, build_model
    from metro.serialization import save_model

    gen = torch.Generator().manual_seed(seed)
    model = build_model(ModelSpec("mlp", hidden=(hidden,)), input_shape=(d,), n_models=1, seed=seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    manifest = save_model(
        directory, model.eval(), manifest={"metric": {"preset": "jaccard"}, "lambda_star": 0.1},
        onnx=False,
    )  # fmt: skip
    return directory, manifest["weights_sha256"], manifest, model
