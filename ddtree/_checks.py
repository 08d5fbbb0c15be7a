"""Argument checks shared by the public functions: every failure is a ValueError naming the argument."""
from __future__ import annotations

import math
import numbers

import torch

# Sizes a caller can pass reach the allocator; these bounds turn impossible requests into clear errors.
MAX_BUDGET = 4096  # draft-tree nodes below the root (trees up to MAX_BUDGET + 1 nodes)
MAX_CELLS = 2**31  # elements of one tensor sized by caller-given lengths (e.g. a verify mask: 2 GiB of bools)
TOKEN_LIMIT = 2**31 - 1  # token ids are < this (int32 range) wherever no vocabulary size is known
SEED_MAX = 2**64 - 1  # the largest seed torch.Generator.manual_seed takes


def check_int(name: str, value, *, minimum: int = 0, maximum: int | None = None) -> int:
    """A plain integer in [minimum, maximum] (bools and floats are refused)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point() and \
            value.dtype != torch.bool:
        value = value.item()
    bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an int {bounds}, got {value!r} ({type(value).__name__})")
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an int {bounds}, got {value}")
    return int(value)


def check_bool(name: str, value, *, allow_none: bool = False) -> bool | None:
    """A real bool (or None when allow_none): a string such as "no", or 0 / 1, is refused rather than read by its
    truth value (bool("no") is True)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False{' (or None)' if allow_none else ''}, got {value!r} "
                         f"({type(value).__name__})")
    return value


def check_token(name: str, value, vocab: int = TOKEN_LIMIT) -> int:
    """A token id in [0, vocab)."""
    return check_int(name, value, maximum=vocab - 1)


def check_cells(cells: int, what: str) -> None:
    """Refuse a tensor of `cells` elements above MAX_CELLS before it is allocated; `what` names the sizes."""
    if cells > MAX_CELLS:
        raise ValueError(f"{what} would need {cells:,} elements, more than the limit of {MAX_CELLS:,} "
                         "(ddtree._checks.MAX_CELLS); pass smaller sizes")


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
    """Floating logits of rank len(shape.split(',')) (any rank >= 1 when `shape` starts with "[..."); NaN or +inf
    anywhere, or a row with no finite entry, is refused.

    -inf entries are allowed (masked tokens). `shape` is the expected form for the message, e.g. "[depth, vocab]".
    """
    ndim = None if shape.startswith("[...") else shape.count(",") + 1
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        kind = f"{logits.dtype} tensor" if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"{name} must be a floating torch.Tensor {shape}, got {kind}")
    if logits.ndim == 0 or (ndim is not None and logits.ndim != ndim):
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
