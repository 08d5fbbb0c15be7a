"""Shape, dtype and device checks shared by the kernel entry points; every failure is a ValueError naming the argument.

They look at metadata only (no device-to-host copy), so they are cheap enough for a per-layer call.
"""
from __future__ import annotations

import torch


def check_tensor(name: str, x, *, ndim: int, shape: str, floating: bool | None = None) -> torch.Tensor:
    """A torch.Tensor of rank `ndim`; `floating` True/False also pins the dtype kind. `shape` is for the message."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor {shape}, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if floating is True and not x.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor {shape}, got {x.dtype}")
    if floating is False and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        raise ValueError(f"{name} must be an integer tensor {shape}, got {x.dtype}")
    return x


def check_dim(name: str, x: torch.Tensor, dim: int, size: int, what: str) -> None:
    if x.shape[dim] != size:
        raise ValueError(f"{name} must have {size} {what} (dim {dim}), got shape {tuple(x.shape)}")


def check_same_device(device: torch.device, **tensors: torch.Tensor) -> None:
    for name, x in tensors.items():
        if x.device != device:
            raise ValueError(f"{name} is on {x.device}, expected {device} like the other inputs")
