"""SwiGLU's activation of a fused gate/up projection in one Triton launch, beside its torch reference.

    gate_up  # [n, 2 I] (gate columns, then up columns) -> silu(gate) * up  # [n, I]

Rounded as the torch reference (silu, then the product, each to the input dtype), so a Llama / Qwen3 / DFlash MLP
runs as gate_up matmul, this kernel, down matmul: three launches instead of five.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ddtree.kernels._checks import check_tensor


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    check_tensor("gate_up", gate_up, ndim=2, shape="[n, 2 * intermediate]", floating=True)
    n, width = gate_up.shape
    if width % 2:
        raise ValueError(f"gate_up must have an even number of columns [n, 2 * intermediate], got {width}")
    gate_up = gate_up.contiguous()
    out = torch.empty(n, width // 2, dtype=gate_up.dtype, device=gate_up.device)
    block = min(1024, triton.next_power_of_2(width // 2))
    _silu_mul_kernel[(n, triton.cdiv(width // 2, block))](gate_up, out, width // 2, BLOCK=block)
    return out


def silu_mul_ref(gate_up: torch.Tensor) -> torch.Tensor:
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


@triton.jit
def _silu_mul_kernel(gate_up_ptr, out_ptr, inter, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < inter
    gate = tl.load(gate_up_ptr + row * 2 * inter + cols, mask=ok, other=0.0)
    up = tl.load(gate_up_ptr + row * 2 * inter + inter + cols, mask=ok, other=0.0)
    g = gate.to(tl.float32)
    act = (g / (1.0 + tl.exp(-g))).to(gate.dtype)
    tl.store(out_ptr + row * inter + cols, (act.to(tl.float32) * up.to(tl.float32)).to(gate.dtype), mask=ok)
