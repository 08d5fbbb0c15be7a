"""The target's projections for decode-sized forwards (1-49 rows), with the elementwise work around them fused in,
beside their torch references (decode_linear / decode_linear_ref, decode_qkv / decode_qkv_ref). The static drafter's
block forward of as few rows runs them too (ddtree.engine.drafter).

    decode_linear: out = [residual +] act(norm(x) @ W.T + bias)   x  # [M, K], W  # [N, K] (gated: [2 I, K])
        norm: the layer's RMSNorm of x (ddtree.kernels.rmsnorm's rounding); act: SwiGLU of the gate and up halves
        (ddtree.kernels.swiglu's rounding); residual: the residual stream's add, rounded as a torch add.
    decode_qkv: q = rope(q_norm(norm(x) @ Wqkv.T)), keys (k_norm, rope) and values written into the KV cache, as
        ddtree.kernels.rope.norm_rope_cache does after the q/k/v projection (the same rope_halves arithmetic).

With a few rows a matmul is bound by launch latency, not by arithmetic: cuBLAS plus the separate RMSNorm, SwiGLU
and RoPE launches make a decoder layer 9 launches, these kernels 5 (norm + q/k/v + RoPE + cache write, attention,
o_proj + residual, norm + gate/up + SwiGLU, down_proj + residual), launched with PDL by the engine
(ddtree.kernels.launch). Every program owns a few output columns (pairs of columns for SwiGLU, matching halves of a
head for RoPE) of its rows and walks K in BK-wide chunks: one row at a time in float32 multiply-and-sums (1-2
rows, one program for every row), or 16-row tiles through tensor cores (3 rows on; the row tiles spread over up to
DOT_ROW_PROGRAMS programs); for RMSNorm first the rows' sums of squares, then the product with the normalised rows.
The sums' order is not cuBLAS's: outputs agree with the cuBLAS path within bf16 rounding, not bit for bit
(bit-exact mode has its own kernels). H200, context 200 (bench/results/decode_linear_h200.md): 1.59x the cuBLAS
forward at one row, 1.14-1.20x from 3 to 17 rows, 1.06x at 49, even at 65, 0.73x at 129, hence DECODE_ROWS.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_same_device, check_tensor
from ddtree.kernels.launch import launch_options, wait_for_inputs
from ddtree.kernels.matmul import exact_dot
from ddtree.kernels.rmsnorm import rms_norm_ref
from ddtree.kernels.rope import norm_rope_cache_ref, rope_halves

DECODE_ROWS = 49  # forwards of at most this many rows (batch x rows) take these kernels; above, cuBLAS (up to
# DDTree-48's 49 rows)
# Tiling (H200 sweeps, bench_decode_linear.py): below DOT_ROWS rows, one row of BLOCK_N columns at a time in float32
# multiply-and-sums over BK-wide chunks of K; from DOT_ROWS rows on, DOT_BLOCK_M x DOT_BLOCK_N tiles through tensor
# cores (tl.dot; in Triton's interpreter float32 sums).
BLOCK_N, BK, NUM_WARPS, STAGES = 4, 128, 8, 3
DOT_ROWS, DOT_BLOCK_M, DOT_BLOCK_N, DOT_WARPS, DOT_STAGES = 3, 16, 32, 4, 2
DOT_ROW_PROGRAMS = 64  # at most this many programs along the rows, each looping over every n-th row tile
ROPE_BLOCK = 4  # columns of each head half per decode_qkv program without q/k norms (with them: the whole head)


class Tiling(NamedTuple):
    block_m: int  # rows of a tile (1: one row at a time)
    block_n: int  # output columns of a program
    dot: bool  # tensor-core tiles
    warps: int
    stages: int  # software-pipelining stages of the K loop (num_stages)
    row_programs: int  # programs along the rows, program r taking row tiles r, r + row_programs, ... (not dot: 1)


def _tiling(m: int, columns: int = DOT_BLOCK_N) -> Tiling:
    """The launch settings for m rows; `columns`: the most output columns a program can own (a head half for
    decode_qkv), at least 16 for a tensor-core tile."""
    if m >= DOT_ROWS and columns >= 16:
        block_m = min(DOT_BLOCK_M, max(16, triton.next_power_of_2(m)))
        return Tiling(block_m, DOT_BLOCK_N, True, DOT_WARPS, DOT_STAGES, min(DOT_ROW_PROGRAMS, triton.cdiv(m, block_m)))
    return Tiling(1, BLOCK_N, False, NUM_WARPS, STAGES, 1)


def decode_linear(x: torch.Tensor, weight: torch.Tensor, *, bias: torch.Tensor | None = None,
                  norm_weight: torch.Tensor | None = None, eps: float = 0.0, gated: bool = False,
                  residual: torch.Tensor | None = None) -> torch.Tensor:
    """`out  # [M, N]` (gated: [M, N / 2]) in x's dtype for `x  # [M, K]`; residual  # the out shape."""
    m, k, n = _check(x, weight, bias, norm_weight)
    width = n // 2 if gated else n
    if gated and n % 2:
        raise ValueError(f"weight must have an even number of rows [2 * intermediate, K] with gated=True, got {n}")
    if residual is not None and (not isinstance(residual, torch.Tensor) or tuple(residual.shape) != (m, width)
                                 or residual.dtype != x.dtype):
        raise ValueError(f"residual must be a {x.dtype} tensor [{m}, {width}], got "
                         f"{getattr(residual, 'shape', type(residual).__name__)}")
    x, weight = x.contiguous(), weight.contiguous()
    out = torch.empty(m, width, dtype=x.dtype, device=x.device)
    if m:
        t = _tiling(m)
        _decode_linear_kernel[(triton.cdiv(width, t.block_n), t.row_programs)](
            x, weight, weight if norm_weight is None else norm_weight, weight if bias is None else bias,
            out if residual is None else residual.contiguous(), out, m, width, float(eps), K=k, BK=BK,
            BLOCK_M=t.block_m, BLOCK_N=t.block_n, NORM=norm_weight is not None, GATED=gated,
            HAS_BIAS=bias is not None, RESIDUAL=residual is not None, DOT=t.dot, MMA=x.is_cuda, num_warps=t.warps,
            num_stages=t.stages, **launch_options(x.device))
    return out


def decode_linear_ref(x, weight, *, bias=None, norm_weight=None, eps: float = 0.0, gated: bool = False,
                      residual=None):
    """The torch composition the kernel fuses (RMSNorm, F.linear, SwiGLU, the residual add)."""
    from ddtree.kernels.swiglu import silu_mul_ref
    if norm_weight is not None:
        x = rms_norm_ref(x, norm_weight, eps)
    out = torch.nn.functional.linear(x, weight, bias)
    if gated:
        out = silu_mul_ref(out)
    return out if residual is None else out + residual


def decode_qkv(x, weight, bias, norm_weight, eps: float, q_weight, k_weight, qk_eps: float, cos, sin, positions,
               k_cache, v_cache, rows_per_slot: int, cache_positions=None) -> torch.Tensor:
    """norm_rope_cache(linear(rms_norm(x), weight, bias), ...) in one launch: `x  # [M, K]`, `weight  # [(Hq + 2
    Hkv) D, K]` -> the queries  # [M, Hq, D]; keys and values written into `k_cache, v_cache  # [slots, Hkv, L, D]`
    at cache_positions (default: positions); q_weight, k_weight  # [D] per-head norms or both None (with Hq = 0,
    only the cache writes, q_weight is not read: pass k_weight)."""
    m, k, n = _check(x, weight, bias, norm_weight)
    check_tensor("k_cache", k_cache, ndim=4, shape="[slots, Hkv, L, D]", floating=True)
    _, kv_heads, _, dim = k_cache.shape
    heads = n // dim - 2 * kv_heads
    if heads < 0 or n % dim or dim % 2 or v_cache.shape != k_cache.shape or k_cache.stride(-1) != 1 \
            or v_cache.stride(-1) != 1:
        raise ValueError(f"weight [(Hq + 2 Hkv) * D, K] must match caches [slots, {kv_heads}, L, {dim}] "
                         f"(contiguous last dimension), got weight {tuple(weight.shape)}, v_cache "
                         f"{tuple(v_cache.shape)}")
    if (q_weight is None) != (k_weight is None):
        raise ValueError("q_weight and k_weight must both be tensors [head_dim] or both None (no norm)")
    cache_positions = positions if cache_positions is None else cache_positions
    x, weight = x.contiguous(), weight.contiguous()
    q = torch.empty(m, heads, dim, dtype=x.dtype, device=x.device)
    half = dim // 2
    t = _tiling(m, half)
    block = half if k_weight is not None else min(t.block_n if t.dot else ROPE_BLOCK, half)  # q/k norm: whole head
    qk = (q_weight, k_weight) if k_weight is not None else (weight, weight)  # not read without the norm
    if m:
        _decode_qkv_kernel[(heads + 2 * kv_heads, triton.cdiv(half, block), t.row_programs)](
            x, weight, weight if norm_weight is None else norm_weight, weight if bias is None else bias, *qk, cos,
            sin, positions, cache_positions, k_cache, v_cache, q, m, heads, kv_heads, rows_per_slot, float(eps),
            float(qk_eps), cos.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3], K=k, BK=BK, D=dim,
            HALF=half, BLOCK_M=t.block_m, BLOCK_J=block, NORM=norm_weight is not None, QK_NORM=k_weight is not None,
            HAS_BIAS=bias is not None, DOT=t.dot, MMA=x.is_cuda, num_warps=t.warps, num_stages=t.stages,
            **launch_options(x.device))
    return q


def decode_qkv_ref(x, weight, bias, norm_weight, eps, q_weight, k_weight, qk_eps, cos, sin, positions, k_cache,
                   v_cache, rows_per_slot, cache_positions=None):
    qkv = decode_linear_ref(x, weight, bias=bias, norm_weight=norm_weight, eps=eps)
    return norm_rope_cache_ref(qkv, q_weight, k_weight, qk_eps, cos, sin, positions, k_cache, v_cache,
                               rows_per_slot, cache_positions)


def _check(x, weight, bias, norm_weight) -> tuple[int, int, int]:
    check_tensor("weight", weight, ndim=2, shape="[N, K]", floating=True)
    n, k = weight.shape
    check_tensor("x", x, ndim=2, shape=f"[M, {k}]", floating=True)
    if x.shape[1] != k or x.dtype != weight.dtype:
        raise ValueError(f"x must be a {weight.dtype} tensor [M, {k}] like weight, got {tuple(x.shape)} {x.dtype}")
    for name, t, size in (("bias", bias, n), ("norm_weight", norm_weight, k)):
        if t is not None:
            check_tensor(name, t, ndim=1, shape=f"[{size}]", floating=True)
            if len(t) != size:
                raise ValueError(f"{name} must have shape [{size}], got {tuple(t.shape)}")
            check_same_device(x.device, **{name: t})
    check_same_device(x.device, weight=weight)
    return x.shape[0], k, n


@triton.jit
def _row_scale(x_row, eps, K: tl.constexpr, BK: tl.constexpr):
    """RMSNorm's 1 / rms of one row (float32, over K in BK chunks)."""
    ks = tl.arange(0, BK)
    total = tl.zeros([BK], tl.float32)
    for k0 in tl.static_range(0, K, BK):
        xk = tl.load(x_row + k0 + ks, mask=k0 + ks < K, other=0.0).to(tl.float32)
        total += xk * xk
    return 1.0 / tl.sqrt(tl.sum(total, axis=0) / K + eps)


@triton.jit
def _normed_row_chunk(x_row, nw_ptr, scale, k0, K: tl.constexpr, BK: tl.constexpr, NORM: tl.constexpr):
    """Columns k0..k0+BK of the (normalised, as ddtree.kernels.rmsnorm rounds it) row, float32  # [BK]."""
    ks = k0 + tl.arange(0, BK)
    xk = tl.load(x_row + ks, mask=ks < K, other=0.0)
    if NORM:
        normed = (xk.to(tl.float32) * scale).to(xk.dtype)
        wk = tl.load(nw_ptr + ks, mask=ks < K, other=0.0)
        xk = (wk.to(tl.float32) * normed.to(tl.float32)).to(xk.dtype)
    return xk.to(tl.float32)


@triton.jit
def _dot_rows(x_row, nw_ptr, w_ptr, rows, row_ok, scale, K: tl.constexpr, BK: tl.constexpr, NORM: tl.constexpr):
    """sum_k W[rows, k] * normed_x[k] in float32  # [len(rows)]."""
    ks = tl.arange(0, BK)
    acc = tl.zeros([rows.shape[0], BK], tl.float32)
    for k0 in tl.static_range(0, K, BK):
        xk = _normed_row_chunk(x_row, nw_ptr, scale, k0, K, BK, NORM)
        w = tl.load(w_ptr + rows[:, None].to(tl.int64) * K + (k0 + ks)[None, :],
                    mask=row_ok[:, None] & (k0 + ks < K)[None, :], other=0.0)
        acc += w.to(tl.float32) * xk[None, :]
    return tl.sum(acc, axis=1)


@triton.jit
def _projected_row(x_row, nw_ptr, w_ptr, b_ptr, rows, row_ok, scale, dtype, K: tl.constexpr, BK: tl.constexpr,
                   NORM: tl.constexpr, HAS_BIAS: tl.constexpr):
    """F.linear's output at columns `rows` of one row, rounded to the dtype, back in float32."""
    y = _dot_rows(x_row, nw_ptr, w_ptr, rows, row_ok, scale, K, BK, NORM)
    if HAS_BIAS:
        y += tl.load(b_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
    return y.to(dtype).to(tl.float32)


@triton.jit
def _row_scales(x_ptr, rows, row_ok, eps, K: tl.constexpr, BK: tl.constexpr):
    """_row_scale of BLOCK_M rows at once  # [BLOCK_M]."""
    ks = tl.arange(0, BK)
    total = tl.zeros([rows.shape[0], BK], tl.float32)
    for k0 in tl.static_range(0, K, BK):
        xk = tl.load(x_ptr + rows[:, None] * K + (k0 + ks)[None, :], mask=row_ok[:, None] & (k0 + ks < K)[None, :],
                     other=0.0).to(tl.float32)
        total += xk * xk
    return 1.0 / tl.sqrt(tl.sum(total, axis=1) / K + eps)


@triton.jit
def _normed_chunk(x_ptr, rows, row_ok, nw_ptr, scale, k0, K: tl.constexpr, BK: tl.constexpr, NORM: tl.constexpr):
    """_normed_row_chunk of BLOCK_M rows, in x's dtype  # [BLOCK_M, BK]."""
    ks = k0 + tl.arange(0, BK)
    xk = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=row_ok[:, None] & (ks < K)[None, :], other=0.0)
    if NORM:
        normed = (xk.to(tl.float32) * scale[:, None]).to(xk.dtype)
        wk = tl.load(nw_ptr + ks, mask=ks < K, other=0.0)
        xk = (wk.to(tl.float32)[None, :] * normed.to(tl.float32)).to(xk.dtype)
    return xk


@triton.jit
def _projected(x_ptr, rows, row_ok, nw_ptr, w_ptr, b_ptr, cols, col_ok, scale, dtype, K: tl.constexpr,
               BK: tl.constexpr, NORM: tl.constexpr, HAS_BIAS: tl.constexpr, MMA: tl.constexpr):
    """_projected_row of BLOCK_M rows as one tile product (ddtree.kernels.matmul.exact_dot)  # [BLOCK_M, BLOCK_N]."""
    ks = tl.arange(0, BK)
    acc = tl.zeros([rows.shape[0], cols.shape[0]], tl.float32)
    for k0 in tl.static_range(0, K, BK):
        xk = _normed_chunk(x_ptr, rows, row_ok, nw_ptr, scale, k0, K, BK, NORM)
        w = tl.load(w_ptr + cols[:, None].to(tl.int64) * K + (k0 + ks)[None, :],
                    mask=col_ok[:, None] & (k0 + ks < K)[None, :], other=0.0)  # [BLOCK_N, BK]
        acc = exact_dot(xk, tl.trans(w), acc, MMA)
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    return acc.to(dtype).to(tl.float32)


@triton.jit
def _row_block(x_ptr, r0, m, eps, K: tl.constexpr, BK: tl.constexpr, BLOCK_M: tl.constexpr, NORM: tl.constexpr):
    """Rows r0..r0+BLOCK_M-1, which of them exist, and their RMSNorm scales (1 without NORM)."""
    rows = r0 + tl.arange(0, BLOCK_M)
    row_ok = rows < m
    scale = tl.full([BLOCK_M], 1.0, tl.float32)
    if NORM:
        scale = _row_scales(x_ptr, rows, row_ok, eps, K, BK)
    return rows, row_ok, scale


@triton.jit
def _one_row(x_ptr, i, eps, K: tl.constexpr, BK: tl.constexpr, NORM: tl.constexpr):
    """Row i's pointer and its RMSNorm scale (1 without NORM)."""
    x_row = x_ptr + i * K
    scale = 1.0
    if NORM:
        scale = _row_scale(x_row, eps, K, BK)
    return x_row, scale


@triton.jit
def _swiglu_residual(y, up, res_ptr, at, ok, dtype, GATED: tl.constexpr, RESIDUAL: tl.constexpr):
    """The epilogue of decode_linear: SwiGLU of the gate y and up (as ddtree.kernels.swiglu rounds it), then the
    residual add at offsets `at`, in float32."""
    if GATED:
        y = (y / (1.0 + tl.exp(-y))).to(dtype).to(tl.float32) * up
    if RESIDUAL:
        y = y.to(dtype).to(tl.float32) + tl.load(res_ptr + at, mask=ok, other=0.0).to(tl.float32)
    return y


@triton.jit(do_not_specialize=["m"])
def _decode_linear_kernel(x_ptr, w_ptr, nw_ptr, b_ptr, res_ptr, out_ptr, m, width, eps, K: tl.constexpr,
                          BK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NORM: tl.constexpr,
                          GATED: tl.constexpr, HAS_BIAS: tl.constexpr, RESIDUAL: tl.constexpr, DOT: tl.constexpr,
                          MMA: tl.constexpr, PDL: tl.constexpr):
    """Program: BLOCK_N output columns (gated: gate columns and the matching up columns) of every row, one row at a
    time, or (DOT) BLOCK_M rows at a time: row tiles program_id(1), + num_programs(1), ..."""
    wait_for_inputs(PDL)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < width
    dtype = out_ptr.dtype.element_ty
    if DOT:
        for r0 in range(tl.program_id(1) * BLOCK_M, m, tl.num_programs(1) * BLOCK_M):
            rows, row_ok, scale = _row_block(x_ptr, r0, m, eps, K, BK, BLOCK_M, NORM)
            y = _projected(x_ptr, rows, row_ok, nw_ptr, w_ptr, b_ptr, cols, col_ok, scale, dtype, K, BK, NORM,
                           HAS_BIAS, MMA)
            up = y  # not read unless GATED
            if GATED:
                up = _projected(x_ptr, rows, row_ok, nw_ptr, w_ptr, b_ptr, cols + width, col_ok, scale, dtype, K,
                                BK, NORM, HAS_BIAS, MMA)
            at = rows[:, None] * width + cols[None, :]
            ok = row_ok[:, None] & col_ok[None, :]
            y = _swiglu_residual(y, up, res_ptr, at, ok, dtype, GATED, RESIDUAL)
            tl.store(out_ptr + at, y.to(dtype), mask=ok)
    else:
        for i in range(m):
            x_row, scale = _one_row(x_ptr, i, eps, K, BK, NORM)
            y = _projected_row(x_row, nw_ptr, w_ptr, b_ptr, cols, col_ok, scale, dtype, K, BK, NORM, HAS_BIAS)
            up = y  # not read unless GATED
            if GATED:
                up = _projected_row(x_row, nw_ptr, w_ptr, b_ptr, cols + width, col_ok, scale, dtype, K, BK, NORM,
                                    HAS_BIAS)
            at = i * width + cols
            y = _swiglu_residual(y, up, res_ptr, at, col_ok, dtype, GATED, RESIDUAL)
            tl.store(out_ptr + at, y.to(dtype), mask=col_ok)


@triton.jit
def _rope_store(y1, y2, rows, row_ok, h, j, jj, col_ok, qw_ptr, kw_ptr, cos_ptr, sin_ptr, pos_ptr, at_ptr, k_ptr,
                v_ptr, q_ptr, heads, kv_heads, rows_per_slot, qk_eps, stride_cos, stride_ks, stride_kh, stride_kl,
                stride_vs, stride_vh, stride_vl, dtype, D: tl.constexpr, HALF: tl.constexpr, QK_NORM: tl.constexpr):
    """Head h's column halves `y1, y2  # [rows, cols]` of the q/k/v projection: queries (q/k norm, RoPE) into q,
    keys (the same) and values into the cache rows at_ptr[rows] of slots rows // rows_per_slot."""
    slot = (rows // rows_per_slot)[:, None]
    at = tl.load(at_ptr + rows, mask=row_ok, other=0)[:, None]
    ok = row_ok[:, None] & col_ok[None, :]
    if h < heads + kv_heads:
        w1, w2 = y1, y2  # not read without QK_NORM
        if QK_NORM:
            norm_w = qw_ptr if h < heads else kw_ptr
            w1 = tl.load(norm_w + jj).to(tl.float32)
            w2 = tl.load(norm_w + HALF + jj).to(tl.float32)
        table = tl.load(pos_ptr + rows, mask=row_ok, other=0)[:, None] * stride_cos + jj
        out1, out2 = rope_halves(y1, y2, w1, w2, cos_ptr + table, sin_ptr + table, qk_eps, dtype, D, HALF, QK_NORM)
        if h < heads:
            dst = q_ptr + (rows[:, None] * heads + h) * D + j[None, :]
        else:
            dst = k_ptr + slot * stride_ks + (h - heads) * stride_kh + at * stride_kl + j[None, :]
    else:
        out1, out2 = y1.to(dtype), y2.to(dtype)
        dst = v_ptr + slot * stride_vs + (h - heads - kv_heads) * stride_vh + at * stride_vl + j[None, :]
    tl.store(dst, out1, mask=ok)
    tl.store(dst + HALF, out2, mask=ok)


# rows_per_slot not specialised either: a round at a budget not seen yet (budget="auto") compiles nothing new
@triton.jit(do_not_specialize=["m", "rows_per_slot"])
def _decode_qkv_kernel(x_ptr, w_ptr, nw_ptr, b_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, pos_ptr, at_ptr, k_ptr, v_ptr,
                       q_ptr, m, heads, kv_heads, rows_per_slot, eps, qk_eps, stride_cos, stride_ks, stride_kh,
                       stride_kl, stride_vs, stride_vh, stride_vl, K: tl.constexpr, BK: tl.constexpr,
                       D: tl.constexpr, HALF: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_J: tl.constexpr,
                       NORM: tl.constexpr, QK_NORM: tl.constexpr, HAS_BIAS: tl.constexpr, DOT: tl.constexpr,
                       MMA: tl.constexpr, PDL: tl.constexpr):
    """Program (head, column block[, row tile]): columns j of the head's first half and j + HALF of its second, of
    every row one row at a time, or (DOT) BLOCK_M rows at a time: row tiles program_id(2), + num_programs(2), ..."""
    wait_for_inputs(PDL)
    h = tl.program_id(0)  # queries, then keys, then values
    j = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    col_ok = j < HALF
    lo = h * D + j
    jj = tl.where(col_ok, j, 0)[None, :]  # table columns, in range for masked lanes too
    dtype = q_ptr.dtype.element_ty
    if DOT:
        for r0 in range(tl.program_id(2) * BLOCK_M, m, tl.num_programs(2) * BLOCK_M):
            rows, row_ok, scale = _row_block(x_ptr, r0, m, eps, K, BK, BLOCK_M, NORM)
            y1 = _projected(x_ptr, rows, row_ok, nw_ptr, w_ptr, b_ptr, lo, col_ok, scale, dtype, K, BK, NORM,
                            HAS_BIAS, MMA)  # [BLOCK_M, BLOCK_J]
            y2 = _projected(x_ptr, rows, row_ok, nw_ptr, w_ptr, b_ptr, lo + HALF, col_ok, scale, dtype, K, BK, NORM,
                            HAS_BIAS, MMA)
            _rope_store(y1, y2, rows, row_ok, h, j, jj, col_ok, qw_ptr, kw_ptr, cos_ptr, sin_ptr, pos_ptr, at_ptr,
                        k_ptr, v_ptr, q_ptr, heads, kv_heads, rows_per_slot, qk_eps, stride_cos, stride_ks, stride_kh,
                        stride_kl, stride_vs, stride_vh, stride_vl, dtype, D, HALF, QK_NORM)
    else:
        for i in range(m):
            x_row, scale = _one_row(x_ptr, i, eps, K, BK, NORM)
            y1 = _projected_row(x_row, nw_ptr, w_ptr, b_ptr, lo, col_ok, scale, dtype, K, BK, NORM, HAS_BIAS)
            y2 = _projected_row(x_row, nw_ptr, w_ptr, b_ptr, lo + HALF, col_ok, scale, dtype, K, BK, NORM, HAS_BIAS)
            row = tl.full([1], i, tl.int32)
            _rope_store(y1[None, :], y2[None, :], row, row < m, h, j, jj, col_ok, qw_ptr, kw_ptr, cos_ptr, sin_ptr,
                        pos_ptr, at_ptr, k_ptr, v_ptr, q_ptr, heads, kv_heads, rows_per_slot, qk_eps, stride_cos,
                        stride_ks, stride_kh, stride_kl, stride_vs, stride_vh, stride_vl, dtype, D, HALF, QK_NORM)
