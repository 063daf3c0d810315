"""Which torch device a setting names."""

from __future__ import annotations

import torch

__all__ = ["resolve_device"]


def resolve_device(name: str = "auto") -> torch.device:
    """``"auto"`` is the first CUDA device when there is one, else the CPU; anything else is
    checked so that a request for a missing GPU fails clearly instead of deep inside torch."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {name!r}") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r} requested but CUDA is not available")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"device {name!r} requested but only {torch.cuda.device_count()} GPU(s) exist"
            )
    elif device.type != "cpu":
        raise ValueError(f"device {name!r} is not supported; use auto, cpu or cuda[:N]")
    return device
