"""The margin-based functions Phi of the paper's Table 1 and the cost-sensitive surrogate

    L_Phi(h, x, y) = C(+1, y) Phi(-h(x)) + C(-1, y) Phi(h(x)).

Each Phi is non-increasing and upper-bounds 1[t <= 0]; each is written to stay finite and keep a
useful gradient for large |h| in float32 (softplus for the logistic, a linear tail for the
exponential). The logistic is taken in base 2, log2(1 + e^-t): Table 1 writes the natural log,
whose value at 0 is log 2 < 1, so it would not bound the 0-1 loss; the constant factor 1/log 2
changes nothing but the loss's scale relative to weight decay.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from metro.options import Option, UnknownChoiceError, shown

__all__ = [
    "PARAMETER_RANGE",
    "SURROGATES",
    "Surrogate",
    "cost_sensitive_loss",
    "get_surrogate",
    "surrogate_options",
]

# The range of a surrogate's parameter (sigmoid's slope k, rho-margin's rho): the margin t is
# multiplied by k or divided by rho in float32, so outside it Phi is a step (k * 0 is NaN once k
# overflows float32) or flat, without a useful gradient either way.
PARAMETER_RANGE = (1e-6, 1e6)

# Beyond this margin the exponential continues along its tangent: exp(30) ~ 1e13 is far past any
# useful loss value, and the tangent keeps the function convex, non-increasing and finite.
_EXP_CAP = 30.0


def _exponential(t: torch.Tensor) -> torch.Tensor:
    z = -t
    capped = torch.clamp(z, max=_EXP_CAP)
    return torch.exp(capped) * (1.0 + torch.clamp(z - _EXP_CAP, min=0.0))


_LN2 = math.log(2.0)


def _logistic(t: torch.Tensor) -> torch.Tensor:
    return F.softplus(-t) / _LN2


def _quadratic(t: torch.Tensor) -> torch.Tensor:
    return torch.clamp(1.0 - t, min=0.0) ** 2


def _hinge(t: torch.Tensor) -> torch.Tensor:
    return torch.clamp(1.0 - t, min=0.0)


@dataclass(frozen=True)
class Surrogate:
    """A named Phi with its parameters (``k`` for sigmoid, ``rho`` for rho-margin)."""

    name: str
    params: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in SURROGATES:
            raise UnknownChoiceError(
                f"unknown surrogate {shown(self.name, 100)}; expected one of "
                f"{', '.join(SURROGATES)}",
                field="name",
            )
        allowed = _PARAMS[self.name]
        unknown = set(self.params) - set(allowed)
        if unknown:
            raise ValueError(
                f"surrogate {self.name!r} takes no parameter(s) {sorted(unknown)}"
                + (f"; it takes {', '.join(allowed)}" if allowed else "")
            )
        low, high = PARAMETER_RANGE
        for key, value in self.params.items():
            try:
                v = float(value)
            except OverflowError:  # an integer past float64's range
                v = math.inf
            if not low <= v <= high:  # NaN fails too
                raise ValueError(
                    f"surrogate parameter {key} must be a positive number between {low:g} and "
                    f"{high:g}, got {value!r}"
                )

    @property
    def convex(self) -> bool:
        return self.name in ("exponential", "logistic", "quadratic", "hinge")

    def phi(self, t: torch.Tensor) -> torch.Tensor:
        if self.name == "sigmoid":
            k = float(self.params.get("k", _PARAMETER_DEFAULT))
            return 1.0 - torch.tanh(k * t)
        if self.name == "rho_margin":
            rho = float(self.params.get("rho", _PARAMETER_DEFAULT))
            return torch.clamp(1.0 - t / rho, min=0.0, max=1.0)
        return _PHI[self.name](t)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **{k: float(v) for k, v in self.params.items()}}


_PHI: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exponential": _exponential,
    "logistic": _logistic,
    "quadratic": _quadratic,
    "hinge": _hinge,
}
# Each surrogate's parameters, declared once: the service's request schema reads them here.
_PARAMETER_DEFAULT = 1.0
_PARAMETER_OPTIONS: dict[str, dict[str, Option]] = {
    "exponential": {},
    "logistic": {},
    "quadratic": {},
    "hinge": {},
    "sigmoid": {
        "k": Option(
            "The sigmoid's slope k in Phi(t) = 1 - tanh(k t) (sigmoid only)",
            ge=PARAMETER_RANGE[0],
            le=PARAMETER_RANGE[1],
        )
    },
    "rho_margin": {
        "rho": Option(
            "The margin's width rho in Phi(t) = clip(1 - t / rho, 0, 1) (rho_margin only)",
            ge=PARAMETER_RANGE[0],
            le=PARAMETER_RANGE[1],
        )
    },
}
_PARAMS: dict[str, tuple[str, ...]] = {n: tuple(p) for n, p in _PARAMETER_OPTIONS.items()}
SURROGATES: tuple[str, ...] = tuple(_PARAMS)


def surrogate_options(name: str) -> dict[str, tuple[Option, float]]:
    """Each parameter of the surrogate ``name``: its :class:`~metro.options.Option` and default."""
    if name not in _PARAMETER_OPTIONS:
        raise UnknownChoiceError(
            f"unknown surrogate {shown(name, 100)}; expected one of {', '.join(SURROGATES)}",
            field="name",
        )
    return {key: (opt, _PARAMETER_DEFAULT) for key, opt in _PARAMETER_OPTIONS[name].items()}


def get_surrogate(surrogate: str | Surrogate, **params: float) -> Surrogate:
    if isinstance(surrogate, Surrogate):
        if params:
            raise ValueError("parameters can only be given with a surrogate name")
        return surrogate
    if not isinstance(surrogate, str):
        raise ValueError(f"surrogate must be a name or a Surrogate, got {type(surrogate).__name__}")
    return Surrogate(surrogate.lower().replace("-", "_"), dict(params))


def cost_sensitive_loss(
    surrogate: Surrogate,
    scores: torch.Tensor,
    cost_pos: torch.Tensor,
    cost_neg: torch.Tensor,
) -> torch.Tensor:
    """Elementwise C(+1, y) Phi(-h) + C(-1, y) Phi(h).

    ``scores`` are h(x) for K models, [n, K]; ``cost_pos``/``cost_neg`` are the costs of predicting
    +1 / -1 for each example and model, broadcastable to [n, K].
    """
    return cost_pos * surrogate.phi(-scores) + cost_neg * surrogate.phi(scores)
