"""A batch-invariant linear layer (Triton) beside its float64 torch reference: the matmul of bit-exact mode.

    out = x @ weight.T (+ bias)     x  # [M, K], weight  # [N, K], bias  # [N] -> out  # [M, N] in x's dtype

cuBLAS picks its tiling and split-K factor from the shapes, so a row's result changes with how many rows share the
launch: the row of a token verified among 129 tree rows is not bitwise the row of the same token decoded alone.
Here every launch uses one tiling (BLOCK_M x BLOCK_N output tiles, the K dimension walked in BLOCK_K steps in
order — in Triton's interpreter one step over all of K — float32 accumulation, no split-K) whatever M is, and M is not specialised on, so row i of the output
depends only on row i of x: the same bits for M = 1 and M = 1000, at any place in the tile.

`exact_dot` is the tile product both bit-exact kernels use: tensor-core `tl.dot` on a GPU (an output element's
bits do not depend on its place in the tile); in Triton's CPU interpreter, where `tl.dot` is a BLAS call whose
rounding does depend on the row's place (and which misreads bfloat16), a float32 multiply-and-sum over K instead.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_same_device, check_tensor

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 64  # one tiling for every shape: that is the invariance
NUM_WARPS, NUM_STAGES = 4, 3


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`out  # [..., N]` = x @ weight.T + bias for `x  # [..., K]`, each row's bits independent of the row count."""
    check_tensor("weight", weight, ndim=2, shape="[N, K]", floating=True)
    n, k = weight.shape
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.ndim == 0 or x.shape[-1] != k:
        raise ValueError(f"x must be a floating tensor [..., {k}], got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != weight.dtype):
        raise ValueError(f"x, weight and bias must share a dtype, got {x.dtype}, {weight.dtype}, "
                         f"{None if bias is None else bias.dtype}")
    if bias is not None and tuple(bias.shape) != (n,):
        raise ValueError(f"bias must be [{n}], got {tuple(bias.shape)}")
    check_same_device(x.device, weight=weight, **({} if bias is None else {"bias": bias}))
    rows = x.reshape(-1, k)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    w = weight if weight.stride(-1) == 1 else weight.contiguous()
    m = rows.shape[0]
    out = torch.empty(m, n, dtype=x.dtype, device=x.device)
    if m:
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
        block_k = BLOCK_K if x.is_cuda else triton.next_power_of_2(k)  # the interpreter: one step, ~10x faster
        _linear_kernel[grid](rows, w, w if bias is None else bias, out, m, n, k, rows.stride(0), w.stride(0),
                             out.stride(0), HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                             BLOCK_K=block_k, MMA=x.is_cuda, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return out.view(*x.shape[:-1], n)


def linear_ref(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The oracle: the same product in float64 (no rounding until the result)."""
    out = x.double() @ weight.double().T
    return out if bias is None else out + bias.double()


@triton.jit(do_not_specialize=["m"])
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, m, n, k, stride_x, stride_w, stride_o,
                   HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   MMA: tl.constexpr):
    """Program (row tile, column tile): the K dimension in BLOCK_K steps, in order, into one float32 tile."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok, col_ok = rows < m, cols < n
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = k0 + ks < k
        x = tl.load(x_ptr + rows[:, None].to(tl.int64) * stride_x + (k0 + ks)[None, :],
                    mask=row_ok[:, None] & k_ok[None, :], other=0.0)  # [BLOCK_M, BLOCK_K]
        w = tl.load(w_ptr + cols[None, :].to(tl.int64) * stride_w + (k0 + ks)[:, None],
                    mask=k_ok[:, None] & col_ok[None, :], other=0.0)  # [BLOCK_K, BLOCK_N]
        acc = exact_dot(x, w, acc, MMA)
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + rows[:, None].to(tl.int64) * stride_o + cols[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def exact_dot(a, b, acc, MMA: tl.constexpr):
    """acc + a @ b for tiles `a  # [M, K]`, `b  # [K, N]` into float32 `acc`, each element's bits independent of its
    place in the tile: tensor cores (MMA, float32 inputs in IEEE precision), or a float32 multiply-and-sum over K."""
    if MMA:
        if a.dtype == tl.float32:
            return tl.dot(a, b, acc, input_precision="ieee")
        return tl.dot(a, b, acc)
    return acc + tl.sum(a.to(tl.float32)[:, :, None] * b.to(tl.float32)[None, :, :], axis=1)
