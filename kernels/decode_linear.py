"""The target's projections for decode-sized forwards (a few rows), with the elementwise work around them fused in,
beside their torch references (decode_linear / decode_linear_ref, decode_qkv / decode_qkv_ref).

    decode_linear: out = [residual +] act(norm(x) @ W.T + bias)   x  # [M, K], W  # [N, K] (gated: [2 I, K])
        norm: the layer's RMSNorm of x (ddtree.kernels.rmsnorm's rounding); act: SwiGLU of the gate and up halves
        (ddtree.kernels.swiglu's rounding); residual: the residual stream's add, rounded as a torch add.
    decode_qkv: q = rope(q_norm(norm(x) @ Wqkv.T)), keys (k_norm, rope) and values written into the KV cache, as
        ddtree.kernels.rope.norm_rope_cache does after the q/k/v projection (the same rope_halves arithmetic).

With one to a few rows a matmul is a matrix-vector product bound by launch latency, not by arithmetic: cuBLAS
plus the separate RMSNorm, SwiGLU and RoPE launches make a decoder layer 9 launches, these kernels 5 (norm + q/k/v
+ RoPE + cache write, attention, o_proj + residual, norm + gate/up + SwiGLU, down_proj + residual). Every program
owns BLOCK_N output columns (pairs of columns for SwiGLU, matching halves of a head for RoPE) for every row and walks
K in BK-wide chunks in float32: for RMSNorm first the row's sum of squares, then the product with the normalised
row. Row results do not depend on the row count, but the sums' order is not cuBLAS's: outputs agree with the
cuBLAS path within bf16 rounding, not bit for bit (bit-exact mode has its own kernels).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_same_device, check_tensor
from ddtree.kernels.rmsnorm import rms_norm_ref
from ddtree.kernels.rope import norm_rope_cache_ref, rope_halves

DECODE_ROWS = 1  # forwards of this many rows (batch x rows) take these kernels; above, cuBLAS is faster
BLOCK_N, BK, NUM_WARPS = 4, 128, 8  # output columns and K chunk per program (H200 sweep, bench_decode_linear.py)
ROPE_BLOCK = 4  # columns of each head half per decode_qkv program without q/k norms (with them: the whole head)


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
        _decode_linear_kernel[(triton.cdiv(width, BLOCK_N),)](
            x, weight, weight if norm_weight is None else norm_weight, weight if bias is None else bias,
            out if residual is None else residual.contiguous(), out, m, width, float(eps), K=k, BK=BK,
            BLOCK_N=BLOCK_N, NORM=norm_weight is not None, GATED=gated, HAS_BIAS=bias is not None,
            RESIDUAL=residual is not None, num_warps=NUM_WARPS)
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
    at cache_positions (default: positions); q_weight, k_weight  # [D] per-head norms or both None."""
    m, k, n = _check(x, weight, bias, norm_weight)
    check_tensor("k_cache", k_cache, ndim=4, shape="[slots, Hkv, L, D]", floating=True)
    _, kv_heads, _, dim = k_cache.shape
    heads = n // dim - 2 * kv_heads
    if heads < 1 or n % dim or dim % 2 or v_cache.shape != k_cache.shape or k_cache.stride(-1) != 1 \
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
    block = half if k_weight is not None else min(ROPE_BLOCK, half)  # a q/k norm needs the whole head
    qk = (q_weight, k_weight) if k_weight is not None else (weight, weight)  # not read without the norm
    if m:
        _decode_qkv_kernel[(heads + 2 * kv_heads, triton.cdiv(half, block))](
            x, weight, weight if norm_weight is None else norm_weight, weight if bias is None else bias, *qk, cos,
            sin, positions, cache_positions, k_cache, v_cache, q, m, heads, kv_heads, rows_per_slot, float(eps),
            float(qk_eps), cos.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3], K=k, BK=BK, D=dim,
            HALF=half, BLOCK_J=block, NORM=norm_weight is not None, QK_NORM=k_weight is not None,
            HAS_BIAS=bias is not None, num_warps=NUM_WARPS)
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
def _normed_chunk(x_row, nw_ptr, scale, k0, K: tl.constexpr, BK: tl.constexpr, NORM: tl.constexpr):
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
        xk = _normed_chunk(x_row, nw_ptr, scale, k0, K, BK, NORM)
        w = tl.load(w_ptr + rows[:, None].to(tl.int64) * K + (k0 + ks)[None, :],
                    mask=row_ok[:, None] & (k0 + ks < K)[None, :], other=0.0)
        acc += w.to(tl.float32) * xk[None, :]
    return tl.sum(acc, axis=1)


@triton.jit
def _projected(x_row, nw_ptr, w_ptr, b_ptr, rows, row_ok, scale, dtype, K: tl.constexpr, BK: tl.constexpr,
               NORM: tl.constexpr, HAS_BIAS: tl.constexpr):
    """F.linear's output at `rows`, rounded to the dtype, back in float32."""
    y = _dot_rows(x_row, nw_ptr, w_ptr, rows, row_ok, scale, K, BK, NORM)
    if HAS_BIAS:
        y += tl.load(b_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
    return y.to(dtype).to(tl.float32)


@triton.jit(do_not_specialize=["m"])
def _decode_linear_kernel(x_ptr, w_ptr, nw_ptr, b_ptr, res_ptr, out_ptr, m, width, eps, K: tl.constexpr,
                          BK: tl.constexpr, BLOCK_N: tl.constexpr, NORM: tl.constexpr, GATED: tl.constexpr,
                          HAS_BIAS: tl.constexpr, RESIDUAL: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    ok = cols < width
    dtype = out_ptr.dtype.element_ty
    for i in range(m):
        x_row = x_ptr + i * K
        scale = 1.0
        if NORM:
            scale = _row_scale(x_row, eps, K, BK)
        y = _projected(x_row, nw_ptr, w_ptr, b_ptr, cols, ok, scale, dtype, K, BK, NORM, HAS_BIAS)
        if GATED:  # y is the gate; SwiGLU as ddtree.kernels.swiglu rounds it
            up = _projected(x_row, nw_ptr, w_ptr, b_ptr, cols + width, ok, scale, dtype, K, BK, NORM, HAS_BIAS)
            y = (y / (1.0 + tl.exp(-y))).to(dtype).to(tl.float32) * up
        at = i * width + cols
        if RESIDUAL:
            y = y.to(dtype).to(tl.float32) + tl.load(res_ptr + at, mask=ok, other=0.0).to(tl.float32)
        tl.store(out_ptr + at, y.to(dtype), mask=ok)


@triton.jit(do_not_specialize=["m"])
def _decode_qkv_kernel(x_ptr, w_ptr, nw_ptr, b_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, pos_ptr, at_ptr, k_ptr, v_ptr,
                       q_ptr, m, heads, kv_heads, rows_per_slot, eps, qk_eps, stride_cos, stride_ks, stride_kh,
                       stride_kl, stride_vs, stride_vh, stride_vl, K: tl.constexpr, BK: tl.constexpr,
                       D: tl.constexpr, HALF: tl.constexpr, BLOCK_J: tl.constexpr, NORM: tl.constexpr,
                       QK_NORM: tl.constexpr, HAS_BIAS: tl.constexpr):
    """Program (head, column block): columns j of the head's first half and j + HALF of its second, every row."""
    h = tl.program_id(0)  # queries, then keys, then values
    j = tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)
    ok = j < HALF
    lo = h * D + j
    dtype = q_ptr.dtype.element_ty
    for i in range(m):
        x_row = x_ptr + i * K
        scale = 1.0
        if NORM:
            scale = _row_scale(x_row, eps, K, BK)
        y1 = _projected(x_row, nw_ptr, w_ptr, b_ptr, lo, ok, scale, dtype, K, BK, NORM, HAS_BIAS)
        y2 = _projected(x_row, nw_ptr, w_ptr, b_ptr, lo + HALF, ok, scale, dtype, K, BK, NORM, HAS_BIAS)
        slot = i // rows_per_slot
        at = tl.load(at_ptr + i)
        if h < heads + kv_heads:
            jj = tl.where(ok, j, 0)[None, :]  # table columns, in range for masked lanes too
            w1, w2 = y1[None, :], y2[None, :]  # not read without QK_NORM
            if QK_NORM:
                norm_w = qw_ptr if h < heads else kw_ptr
                w1 = tl.load(norm_w + jj).to(tl.float32)
                w2 = tl.load(norm_w + HALF + jj).to(tl.float32)
            table = tl.load(pos_ptr + i) * stride_cos + jj
            out1, out2 = rope_halves(y1[None, :], y2[None, :], w1, w2, cos_ptr + table, sin_ptr + table, qk_eps,
                                     dtype, D, HALF, QK_NORM)
            out1, out2 = tl.reshape(out1, [BLOCK_J]), tl.reshape(out2, [BLOCK_J])
            if h < heads:
                dst = q_ptr + (i * heads + h) * D + j
            else:
                dst = k_ptr + slot * stride_ks + (h - heads) * stride_kh + at * stride_kl + j
        else:
            out1, out2 = y1.to(dtype), y2.to(dtype)
            dst = v_ptr + slot * stride_vs + (h - heads - kv_heads) * stride_vh + at * stride_vl + j
        tl.store(dst, out1, mask=ok)
        tl.store(dst + HALF, out2, mask=ok)
