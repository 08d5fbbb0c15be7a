"""Linear layers with their neighbours fused in (Triton), beside the unfused torch chains they are tested against.

A decoder layer of the native engine's fused target forward is five launches with these and the tree attention:

    norm_qkv_rope_cache   q = rope(qk_norm(rms_norm(x) @ Wqkv.T)); k, v the same way into the KV cache
    attention             ddtree.kernels.tree_attention
    fused_linear          x = x + attn @ Wo.T                       (residual=)
    norm_swiglu           a = silu(g) * u, [g | u] = rms_norm(x) @ Wgate_up.T
    fused_linear          x = x + a @ Wdown.T                       (residual=)

and the head is one more: logits = rms_norm(x) @ Wlm.T (fused_linear with norm=). An RMSNorm rides in the
matmul's single pass over K: the norm's weight multiplies the rows' K steps (rounded to the dtype for the product),
the squares are summed on the way, and the per-row scale multiplies the float32 result, so no launch and no pass
precede the product (one rounding where the chain rounds twice: as close to exact arithmetic, within bf16
rounding of the chain). The other steps round where their reference chain rounds (the matmul's output, the residual
sum, RoPE's and SwiGLU's steps, each to the input dtype; ddtree.kernels.rope / swiglu).

Matmuls run K in BLOCK_K steps into a float32 tile (ddtree.kernels.matmul.exact_dot: tensor cores on a GPU; in
Triton's CPU interpreter, whose tl.dot misreads bfloat16, a float32 multiply-and-sum, in one step over K). Few
rows (a decode step, a small tree) make few row tiles, so the column tiles are narrow: more programs share the
weight reads, which is the whole cost at these sizes.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ddtree.kernels._checks import check_tensor
from ddtree.kernels.matmul import exact_dot
from ddtree.kernels.rmsnorm import rms_norm_ref
from ddtree.kernels.rope import norm_rope_cache_ref
from ddtree.kernels.swiglu import silu_mul_ref

BLOCK_N, BLOCK_K = 32, 64  # column tile (pairs of a rotated head: up to 32) and K step on a GPU
WIDE_BLOCK_N, WIDE = 64, 8192  # the column tile of outputs at least WIDE columns wide (the lm_head)
NUM_WARPS, NUM_STAGES = 4, 3


def fused_linear(x, weight, bias=None, *, norm=None, residual=None, out_dtype=None) -> torch.Tensor:
    """`out  # [n, N]` = (residual +) (rms_norm(x) if norm else x) @ weight.T (+ bias), for `x  # [n, K]`.
    norm: (norm_weight  # [K], eps) of an RMSNorm applied to x's rows first; residual  # [n, N] in x's dtype;
    out_dtype: the output's dtype (default x's), the values rounded to x's dtype first (logits as float32)."""
    n, k = _check_rows("x", x, weight)
    cols = weight.shape[0]
    if residual is not None and (not isinstance(residual, torch.Tensor) or residual.shape != (n, cols)
                                 or residual.dtype != x.dtype or residual.stride(-1) != 1):
        raise ValueError(f"residual must be a tensor [{n}, {cols}] {x.dtype}, contiguous in its last dimension, got "
                         f"{getattr(residual, 'shape', type(residual).__name__)}")
    norm_weight, eps = _check_norm(norm, k, x)
    out = torch.empty(n, cols, dtype=out_dtype or x.dtype, device=x.device)
    if n:
        block_m, block_k, mma = _tiling(n, k, x)
        block_n = WIDE_BLOCK_N if cols >= WIDE else BLOCK_N
        _linear_kernel[(triton.cdiv(n, block_m), triton.cdiv(cols, block_n))](
            x, norm_weight, weight, weight if bias is None else bias, x if residual is None else residual, out,
            n, cols, k, eps, x.stride(0), weight.stride(0), 0 if residual is None else residual.stride(0),
            NORM=norm is not None, HAS_BIAS=bias is not None, RESIDUAL=residual is not None, BLOCK_M=block_m,
            BLOCK_N=block_n, BLOCK_K=block_k, MMA=mma, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return out


def fused_linear_ref(x, weight, bias=None, *, norm=None, residual=None, out_dtype=None) -> torch.Tensor:
    if norm is not None:
        x = rms_norm_ref(x, norm[0], norm[1])
    out = F.linear(x, weight, bias)
    out = out if residual is None else residual + out
    return out.to(out_dtype or out.dtype)


def norm_swiglu(x, norm_weight, eps: float, gate_up, bias=None) -> torch.Tensor:
    """`act  # [n, I]` = silu(g) * u where [g | u] = rms_norm(x) @ gate_up.T (+ bias), `gate_up  # [2 I, K]`."""
    n, k = _check_rows("x", x, gate_up)
    if gate_up.shape[0] % 2:
        raise ValueError(f"gate_up must be [2 * intermediate, {k}] (gate rows, then up rows), got "
                         f"{tuple(gate_up.shape)}")
    norm_weight, eps = _check_norm((norm_weight, eps), k, x)
    inter = gate_up.shape[0] // 2
    out = torch.empty(n, inter, dtype=x.dtype, device=x.device)
    if n:
        block_m, block_k, mma = _tiling(n, k, x)
        _norm_swiglu_kernel[(triton.cdiv(n, block_m), triton.cdiv(inter, BLOCK_N))](
            x, norm_weight, gate_up, gate_up if bias is None else bias, out, n, inter, k, eps, x.stride(0),
            gate_up.stride(0), HAS_BIAS=bias is not None, BLOCK_M=block_m, BLOCK_N=BLOCK_N, BLOCK_K=block_k,
            MMA=mma, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return out


def norm_swiglu_ref(x, norm_weight, eps: float, gate_up, bias=None) -> torch.Tensor:
    return silu_mul_ref(F.linear(rms_norm_ref(x, norm_weight, eps), gate_up, bias))


def norm_qkv_rope_cache(x, norm_weight, eps: float, qkv, bias, q_weight, k_weight, qk_eps: float, cos, sin,
                        positions, k_cache, v_cache, rows_per_slot: int, cache_positions) -> torch.Tensor:
    """ddtree.kernels.rope.norm_rope_cache of `rms_norm(x) @ qkv.T (+ bias)` in one launch: the queries
    `# [n, Hq, D]`; row i's keys and values written at k_cache/v_cache[i // rows_per_slot, :, cache_positions[i]],
    rotated at positions[i]. `qkv  # [(Hq + 2 Hkv) D, K]` (Hq = 0: a context extension, keys and values only);
    q_weight, k_weight  # [D] per-head norms (with Hq = 0 q_weight is not read: pass k_weight) or both None."""
    n, k = _check_rows("x", x, qkv)
    check_tensor("k_cache", k_cache, ndim=4, shape="[slots, Hkv, L, D]", floating=True)
    _, kv_heads, _, dim = k_cache.shape
    heads = qkv.shape[0] // dim - 2 * kv_heads
    if heads < 0 or qkv.shape[0] % dim or dim % 2 or v_cache.shape != k_cache.shape:
        raise ValueError(f"qkv [(Hq + 2 Hkv) * D, K] must match caches [slots, {kv_heads}, L, {dim}], got "
                         f"qkv {tuple(qkv.shape)}, v_cache {tuple(v_cache.shape)}")
    if (q_weight is None) != (k_weight is None):
        raise ValueError("q_weight and k_weight must both be tensors [head_dim] or both None (no norm)")
    norm_weight, eps = _check_norm((norm_weight, eps), k, x)
    half = dim // 2
    pairs = half if k_weight is not None else min(half, BLOCK_N)  # a per-head norm needs the whole head
    q = torch.empty(n, heads, dim, dtype=x.dtype, device=x.device)
    if n:
        block_m, block_k, mma = _tiling(n, k, x)
        norms = (q_weight, k_weight) if k_weight is not None else (qkv, qkv)  # not read without the norm
        _norm_qkv_rope_kernel[(triton.cdiv(n, block_m), heads + 2 * kv_heads, triton.cdiv(half, pairs))](
            x, norm_weight, qkv, qkv if bias is None else bias, *norms, cos, sin, positions, cache_positions,
            k_cache, v_cache, q, n, k, heads, kv_heads, rows_per_slot, eps, float(qk_eps), x.stride(0),
            qkv.stride(0), cos.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3], D=dim, HALF=half,
            PAIRS=pairs, HAS_BIAS=bias is not None, QK_NORM=k_weight is not None, BLOCK_M=block_m,
            BLOCK_K=block_k, MMA=mma, num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    return q


def norm_qkv_rope_cache_ref(x, norm_weight, eps: float, qkv, bias, q_weight, k_weight, qk_eps: float, cos, sin,
                            positions, k_cache, v_cache, rows_per_slot: int, cache_positions) -> torch.Tensor:
    projected = F.linear(rms_norm_ref(x, norm_weight, eps), qkv, bias)
    return norm_rope_cache_ref(projected, q_weight, k_weight, qk_eps, cos, sin, positions, k_cache, v_cache,
                               rows_per_slot, cache_positions)


def _check_rows(name, x, weight) -> tuple[int, int]:
    check_tensor("weight", weight, ndim=2, shape="[N, K]", floating=True)
    k = weight.shape[1]
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != k or x.dtype != weight.dtype:
        raise ValueError(f"{name} must be a tensor [n, {k}] {weight.dtype} (the weight's), got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}"
                         f"{'' if not isinstance(x, torch.Tensor) else ' ' + str(x.dtype)}")
    if x.stride(1) != 1 or weight.stride(1) != 1:
        raise ValueError(f"{name} and the weight must be contiguous in their last dimension")
    if x.device != weight.device:
        raise ValueError(f"{name} is on {x.device}, the weight on {weight.device}")
    return x.shape[0], k


def _check_norm(norm, k: int, x):
    """(norm weight, eps) -> the kernel's arguments (x as a pointer that is not read, and 0, without a norm)."""
    if norm is None:
        return x, 0.0
    weight, eps = norm
    check_tensor("norm weight", weight, ndim=1, shape=f"[{k}]", floating=True)
    if len(weight) != k:
        raise ValueError(f"norm weight must have shape [{k}] (the rows' size), got {tuple(weight.shape)}")
    return weight, float(eps)


def _tiling(n: int, k: int, x: torch.Tensor) -> tuple[int, int, bool]:
    """(BLOCK_M, BLOCK_K, tensor cores): 16-row tiles for a decode step or a small tree, 64 for larger forwards;
    in the interpreter one K step (about ten times faster there) and no tl.dot."""
    block_m = 16 if n <= 32 else 64
    if not x.is_cuda:
        return block_m, triton.next_power_of_2(k), False
    return block_m, BLOCK_K, True


@triton.jit
def _a_tile(x_ptr, nw_ptr, rows, row_ok, stride_x, k0, k, NORM: tl.constexpr, BLOCK_K: tl.constexpr):
    """Rows' K step `# [BLOCK_M, BLOCK_K]` in x's dtype (x, or x * the norm's weight), and its squares' row sums."""
    ks = k0 + tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + rows[:, None] * stride_x + ks[None, :], mask=row_ok[:, None] & (ks < k)[None, :], other=0.0)
    xf = x.to(tl.float32)
    if NORM:
        x = (tl.load(nw_ptr + ks, mask=ks < k, other=0.0).to(tl.float32)[None, :] * xf).to(x.dtype)
    return x, tl.sum(xf * xf, axis=1)


@triton.jit
def _w_tile(w_ptr, cols, col_ok, stride_w, k0, k, BLOCK_K: tl.constexpr):
    """Weight rows `cols`' K step, transposed for the product  # [BLOCK_K, len(cols)]."""
    ks = k0 + tl.arange(0, BLOCK_K)
    w = tl.load(w_ptr + cols[:, None] * stride_w + ks[None, :], mask=col_ok[:, None] & (ks < k)[None, :], other=0.0)
    return tl.trans(w)


@triton.jit
def _norm_scale(total, k, eps):
    """1 / rms per row from the squares' sums  # [BLOCK_M, 1] (ddtree.kernels.rmsnorm's formula)."""
    return (1.0 / tl.sqrt(total / k + eps))[:, None]


@triton.jit
def _product(x_ptr, nw_ptr, w_ptr, rows, row_ok, cols, col_ok, stride_x, stride_w, k, eps, NORM: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, MMA: tl.constexpr):
    """float32 `# [BLOCK_M, len(cols)]` = A @ W[cols].T in one pass over K, A the rows or (NORM) their RMSNorm:
    the norm's weight multiplies the rows' steps, its per-row scale the result (no pass before the product)."""
    acc = tl.zeros([BLOCK_M, cols.shape[0]], tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    for k0 in range(0, k, BLOCK_K):
        a, squares = _a_tile(x_ptr, nw_ptr, rows, row_ok, stride_x, k0, k, NORM, BLOCK_K)
        total += squares
        acc = exact_dot(a, _w_tile(w_ptr, cols, col_ok, stride_w, k0, k, BLOCK_K), acc, MMA)
    if NORM:
        acc = acc * _norm_scale(total, k, eps)
    return acc


@triton.jit
def _products(x_ptr, nw_ptr, w_ptr, rows, row_ok, cols_a, cols_b, col_ok, stride_x, stride_w, k, eps,
              BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, MMA: tl.constexpr):
    """Two column sets of the normed rows' product (gate and up, a head's two halves), each A step loaded once."""
    acc_a = tl.zeros([BLOCK_M, cols_a.shape[0]], tl.float32)
    acc_b = tl.zeros([BLOCK_M, cols_b.shape[0]], tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    for k0 in range(0, k, BLOCK_K):
        a, squares = _a_tile(x_ptr, nw_ptr, rows, row_ok, stride_x, k0, k, True, BLOCK_K)
        total += squares
        acc_a = exact_dot(a, _w_tile(w_ptr, cols_a, col_ok, stride_w, k0, k, BLOCK_K), acc_a, MMA)
        acc_b = exact_dot(a, _w_tile(w_ptr, cols_b, col_ok, stride_w, k0, k, BLOCK_K), acc_b, MMA)
    scale = _norm_scale(total, k, eps)
    return acc_a * scale, acc_b * scale


@triton.jit
def _rounded(acc, b_ptr, cols, col_ok, dtype: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The matmul's output as its reference stores it: + bias, rounded to the dtype, back in float32."""
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    return acc.to(dtype).to(tl.float32)


@triton.jit
def _linear_kernel(x_ptr, nw_ptr, w_ptr, b_ptr, res_ptr, out_ptr, n, cols_n, k, eps, stride_x, stride_w, stride_res,
                   NORM: tl.constexpr, HAS_BIAS: tl.constexpr, RESIDUAL: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, MMA: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    row_ok, col_ok = rows < n, cols < cols_n
    dtype = x_ptr.dtype.element_ty
    y = _rounded(_product(x_ptr, nw_ptr, w_ptr, rows, row_ok, cols, col_ok, stride_x, stride_w, k, eps, NORM,
                          BLOCK_M, BLOCK_K, MMA), b_ptr, cols, col_ok, dtype, HAS_BIAS)
    ok = row_ok[:, None] & col_ok[None, :]
    if RESIDUAL:  # the residual stream's add, rounded as a torch add of two tensors of the dtype
        y = (tl.load(res_ptr + rows[:, None] * stride_res + cols[None, :], mask=ok, other=0.0).to(tl.float32) + y)
    tl.store(out_ptr + rows[:, None] * cols_n + cols[None, :], y.to(dtype).to(out_ptr.dtype.element_ty), mask=ok)


@triton.jit
def _norm_swiglu_kernel(x_ptr, nw_ptr, w_ptr, b_ptr, out_ptr, n, inter, k, eps, stride_x, stride_w,
                        HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        MMA: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    row_ok, col_ok = rows < n, cols < inter
    dtype = x_ptr.dtype.element_ty
    gate, up = _products(x_ptr, nw_ptr, w_ptr, rows, row_ok, cols, cols + inter, col_ok, stride_x, stride_w, k,
                         eps, BLOCK_M, BLOCK_K, MMA)
    gate = _rounded(gate, b_ptr, cols, col_ok, dtype, HAS_BIAS)
    up = _rounded(up, b_ptr, cols + inter, col_ok, dtype, HAS_BIAS)
    act = (gate / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)  # ddtree.kernels.swiglu's rounding
    tl.store(out_ptr + rows[:, None] * inter + cols[None, :], (act * up).to(dtype),
             mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _norm_qkv_rope_kernel(x_ptr, nw_ptr, w_ptr, b_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, pos_ptr, at_ptr, k_ptr,
                          v_ptr, q_ptr, n, k, heads, kv_heads, rows_per_slot, eps, qk_eps, stride_x, stride_w,
                          stride_cos, stride_ks, stride_kh, stride_kl, stride_vs, stride_vh, stride_vl,
                          D: tl.constexpr, HALF: tl.constexpr, PAIRS: tl.constexpr, HAS_BIAS: tl.constexpr,
                          QK_NORM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, MMA: tl.constexpr):
    """Program (row tile, head h: queries, then keys, then values; PAIRS of the head's rotate-half pairs): the two
    halves' columns as two products, then ddtree.kernels.rope's per-head norm and rotation, then the stores."""
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    h = tl.program_id(1)
    p = tl.program_id(2) * PAIRS + tl.arange(0, PAIRS)  # pair index within the head's first half
    row_ok, pair_ok = rows < n, p < HALF
    dtype = x_ptr.dtype.element_ty
    lo = h * D + p
    y1, y2 = _products(x_ptr, nw_ptr, w_ptr, rows, row_ok, lo, lo + HALF, pair_ok, stride_x, stride_w, k, eps,
                       BLOCK_M, BLOCK_K, MMA)
    y1 = _rounded(y1, b_ptr, lo, pair_ok, dtype, HAS_BIAS)  # [BLOCK_M, PAIRS] the head's first half
    y2 = _rounded(y2, b_ptr, lo + HALF, pair_ok, dtype, HAS_BIAS)
    ok = row_ok[:, None] & pair_ok[None, :]
    slot = rows // rows_per_slot
    at = tl.load(at_ptr + rows, mask=row_ok, other=0)
    if h < heads + kv_heads:  # a query or key head: norm (Qwen3), rotate
        if QK_NORM:  # PAIRS == HALF: the whole head is in this program
            w_at = qw_ptr + p
            if h >= heads:
                w_at = kw_ptr + p
            w1 = tl.load(w_at).to(tl.float32)[None, :]
            w2 = tl.load(w_at + HALF).to(tl.float32)[None, :]
            qk_scale = 1.0 / tl.sqrt((tl.sum(y1 * y1, axis=1) + tl.sum(y2 * y2, axis=1)) / D + qk_eps)[:, None]
            y1 = (w1 * (y1 * qk_scale).to(dtype).to(tl.float32)).to(dtype).to(tl.float32)
            y2 = (w2 * (y2 * qk_scale).to(dtype).to(tl.float32)).to(dtype).to(tl.float32)
        table = tl.load(pos_ptr + rows, mask=row_ok, other=0)[:, None] * stride_cos + p[None, :]
        c1 = tl.load(cos_ptr + table, mask=ok, other=0.0).to(tl.float32)
        c2 = tl.load(cos_ptr + table + HALF, mask=ok, other=0.0).to(tl.float32)
        s1 = tl.load(sin_ptr + table, mask=ok, other=0.0).to(tl.float32)
        s2 = tl.load(sin_ptr + table + HALF, mask=ok, other=0.0).to(tl.float32)
        out1 = ((y1 * c1).to(dtype).to(tl.float32) + (-y2 * s1).to(dtype).to(tl.float32)).to(dtype)
        out2 = ((y2 * c2).to(dtype).to(tl.float32) + (y1 * s2).to(dtype).to(tl.float32)).to(dtype)
        if h < heads:
            dst = q_ptr + (rows[:, None] * heads + h) * D + p[None, :]
        else:
            dst = k_ptr + slot[:, None] * stride_ks + (h - heads) * stride_kh + at[:, None] * stride_kl + p[None, :]
    else:  # a value head: stored as projected
        out1, out2 = y1.to(dtype), y2.to(dtype)
        dst = (v_ptr + slot[:, None] * stride_vs + (h - heads - kv_heads) * stride_vh + at[:, None] * stride_vl
               + p[None, :])
    tl.store(dst, out1, mask=ok)
    tl.store(dst + HALF, out2, mask=ok)
