"""Argument checks shared by the public functions: every failure is a ValueError naming the argument."""
from __future__ import annotations

import math
import numbers

import torch


def check_int(name: str, value, *, minimum: int = 0) -> int:
    """A plain integer >= minimum (bools and floats are refused)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def check_temperature(name: str, value, *, allow_zero: bool) -> float:
    """A finite float > 0 (or >= 0 when allow_zero)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return float(value)


def check_top_p(value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= 1:
        raise ValueError(f"top_p must be a number in (0, 1], got {value!r}")
    return float(value)


def check_logits(name: str, logits, *, shape: str) -> torch.Tensor:
    """Floating logits of rank len(shape.split(',')); NaN or +inf anywhere, or a row with no finite entry, is refused.

    -inf entries are allowed (masked tokens). `shape` is the expected form for the message, e.g. "[depth, vocab]".
    """
    ndim = shape.count(",") + 1
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise ValueError(f"{name} must be a floating torch.Tensor {shape}, got {type(logits).__name__}")
    if logits.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(logits.shape)}")
    if logits.shape[-1] == 0:
        raise ValueError(f"{name} must have shape {shape} with vocab > 0, got {tuple(logits.shape)}")
    if logits.numel() == 0:
        return logits
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise ValueError(f"{name} contains NaN or +inf; expected finite logits (-inf allowed for masked tokens)")
    if torch.isneginf(logits).all(dim=-1).any():
        raise ValueError(f"{name} has a row that is -inf everywhere; each {shape} row needs a finite entry")
    return logits
