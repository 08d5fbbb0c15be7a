"""RMSNorm of the Llama / Qwen3 families in one Triton launch, beside its torch reference.

    y = weight * (x.float() * rsqrt(mean(x.float() ** 2, -1) + eps)).to(x.dtype)

One program per row of the last dimension (a hidden vector, or one head of a per-head q/k norm). The engine calls it
on CUDA in place of the ~7 elementwise launches of the modules' own forward (ddtree.engine.decoder.rms_norm).
With `residual`, the residual stream's add comes first in the same launch: s = x + residual (rounded to the
dtype, as a torch add), and the call returns (norm(s), s).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_same_device, check_tensor
from ddtree.kernels.launch import launch_options, wait_for_inputs


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None):
    """`y  # x.shape`, dtype promote(weight, x) as in the reference; with residual  # x.shape, (y, x + residual)."""
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
    if residual is None:
        _rms_norm_kernel[(rows.shape[0],)](rows, rows, rows, weight, out, size, rows.stride(0), 0, float(eps),
                                           BLOCK=triton.next_power_of_2(size), RESIDUAL=False,
                                           **launch_options(x.device))
        return out.view(x.shape)
    if not isinstance(residual, torch.Tensor) or residual.shape != x.shape or residual.dtype != x.dtype:
        raise ValueError(f"residual must be a tensor like x {tuple(x.shape)} {x.dtype}, got "
                         f"{getattr(residual, 'shape', type(residual).__name__)}")
    res = residual.reshape(-1, size)
    if res.stride(-1) != 1:
        res = res.contiguous()
    total = torch.empty(rows.shape, dtype=x.dtype, device=x.device)
    _rms_norm_kernel[(rows.shape[0],)](rows, res, total, weight, out, size, rows.stride(0), res.stride(0), float(eps),
                                       BLOCK=triton.next_power_of_2(size), RESIDUAL=True,
                                       **launch_options(x.device))
    return out.view(x.shape), total.view(x.shape)


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None):
    if residual is not None:
        total = x + residual
        return rms_norm_ref(total, weight, eps), total
    normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    return weight * normed.to(x.dtype)


@triton.jit
def _rms_norm_kernel(x_ptr, res_ptr, total_ptr, w_ptr, out_ptr, size, stride_row, stride_res, eps,
                     BLOCK: tl.constexpr, RESIDUAL: tl.constexpr, PDL: tl.constexpr):
    wait_for_inputs(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < size
    x = tl.load(x_ptr + row * stride_row + cols, mask=ok, other=0.0)
    if RESIDUAL:
        res = tl.load(res_ptr + row * stride_res + cols, mask=ok, other=0.0)
        x = (x.to(tl.float32) + res.to(tl.float32)).to(x.dtype)
        tl.store(total_ptr + row * size + cols, x, mask=ok)
    xf = x.to(tl.float32)
    scale = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=0) / size + eps)
    normed = (xf * scale).to(x.dtype)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0)
    y = w.to(tl.float32) * normed.to(tl.float32)
    tl.store(out_ptr + row * size + cols, y.to(out_ptr.dtype.element_ty), mask=ok)
