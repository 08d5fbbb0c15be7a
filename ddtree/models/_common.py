"""Small helpers shared by the model modules: device/dtype defaults and index-vector checks."""
from __future__ import annotations

import torch


def resolve_device(device) -> torch.device:
    """A torch.device from a string or device ("auto": CUDA when there is a GPU, else the CPU); anything else is a
    ValueError."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"device must be a str or torch.device such as 'cpu' or 'cuda:0', got {device!r}")
    try:
        return torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda:0', got {device!r}") from error


def native_bfloat16_cpu() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), where a bfloat16 forward is faster than
    float32 and costs about the same for one row as for a small tree's (docs/guide.md, "Speed on a CPU")."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def resolve_dtype(dtype, device: torch.device) -> torch.dtype:
    """`dtype` as given, else float32 on CPU and bfloat16 on accelerators."""
    if dtype is None:
        return torch.float32 if device.type == "cpu" else torch.bfloat16
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating torch.dtype (e.g. torch.float32) or None, got {dtype!r}")
    return dtype


def long_vector(name: str, value, *, length: int | None = None, device=None) -> torch.Tensor:
    """`value` (a 1-D integer tensor or a list of ints) as a long tensor [n] on `device`."""
    try:
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError(f"{name} must be a 1-D integer tensor or a list of ints, got {value!r}") from error
    integer = not (tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool)
    if not integer and tensor.numel():
        raise ValueError(f"{name} must hold integers, got dtype {tensor.dtype}")
    if tensor.ndim != 1:
        raise ValueError(f"{name} must be 1-D [n], got shape {tuple(tensor.shape)}")
    if length is not None and tensor.numel() != length:
        raise ValueError(f"{name} must have {length} entries, got {tensor.numel()}")
    return tensor.to(device=device, dtype=torch.long)
