"""RMSNorm of the Llama / Qwen3 families in one Triton launch, beside its torch reference.

    y = weight * (x.float() * rsqrt(mean(x.float() ** 2, -1) + eps)).to(x.dtype)

One program per row of the last dimension (a hidden vector, or one head of a per-head q/k norm). The engine calls it
on CUDA in place of the ~7 elementwise launches of the modules' own forward (ddtree.engine.decoder.rms_norm).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_same_device, check_tensor


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """`y  # x.shape`, dtype promote(weight, x) as in the reference."""
    check_tensor("weight", weight, ndim=1, shape="[hidden]", floating=True)
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.ndim == 0 or x.shape[-1] != len(weight):
        raise ValueError(f"x must be a floating tensor [..., {len(weight)}], got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    check_same_device(x.device, weight=weight)
    size = x.shape[-1]
    rows = x.reshape(-1, size)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty(rows.shape, dtype=torch.result_type(weight, x), device=x.device)
    _rms_norm_kernel[(rows.shape[0],)](rows, weight, out, size, rows.stride(0), float(eps),
                                       BLOCK=triton.next_power_of_2(size))
    return out.view(x.shape)


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    return weight * normed.to(x.dtype)


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, out_ptr, size, stride_row, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < size
    x = tl.load(x_ptr + row * stride_row + cols, mask=ok, other=0.0)
    xf = x.to(tl.float32)
    scale = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=0) / size + eps)
    normed = (xf * scale).to(x.dtype)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0)
    y = w.to(tl.float32) * normed.to(tl.float32)
    tl.store(out_ptr + row * size + cols, y.to(out_ptr.dtype.element_ty), mask=ok)
