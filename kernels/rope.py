"""Per-head RMSNorm, RoPE and the KV-cache write of a fused q/k/v projection in one Triton launch, beside its torch
reference (norm_rope_cache / norm_rope_cache_ref).

    qkv  # [n, (Hq + 2 Hkv) * D]: per row Hq query heads (Hq = 0 for a context extension), Hkv key heads, Hkv
    value heads. Query and key heads are RMS-normed with their weight (Qwen3 / DFlash q_norm, k_norm; no norm when
    the weights are None, as in Llama) and rotated (HF rotate-half) by the cos/sin table rows at the row's position;
    row i writes its keys and values at k_cache[i // rows_per_slot, :, cache_positions[i]] (and v_cache;
    cache_positions default to the positions, as in the drafter; a tree verify rotates by seq_len + depth but
    writes row i at seq_len + i); the queries come back as [n, Hq, D].

The kernel repeats every rounding step of the reference (the norm in float32 then the input dtype, x * cos,
rotated * sin and their sum each rounded to the input dtype), so results agree to the norm's reduction order.
It replaces ~16 launches per drafter layer (two norms, two rotations, two scattered cache writes).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_tensor
from ddtree.kernels.rmsnorm import rms_norm_ref


def norm_rope_cache(qkv, q_weight, k_weight, eps: float, cos, sin, positions, k_cache, v_cache,
                    rows_per_slot: int, cache_positions=None) -> torch.Tensor:
    """The queries  # [n, Hq, D]; keys and values written into `k_cache, v_cache  # [slots, Hkv, L, D]` (views
    allowed). `cos, sin  # [P, D]` tables; `positions, cache_positions  # [n]`; q_weight, k_weight  # [D] (with
    Hq = 0 q_weight is not read: pass k_weight), or both None for no norm; no host synchronisation."""
    check_tensor("qkv", qkv, ndim=2, shape="[n, (Hq + 2 Hkv) * D]", floating=True)
    check_tensor("k_cache", k_cache, ndim=4, shape="[slots, Hkv, L, D]", floating=True)
    n, width = qkv.shape
    _, kv_heads, _, dim = k_cache.shape
    heads = width // dim - 2 * kv_heads
    if heads < 0 or width % dim or dim % 2 or v_cache.shape != k_cache.shape:
        raise ValueError(f"qkv [n, (Hq + 2 Hkv) * D] must match caches [slots, {kv_heads}, L, {dim}], got "
                         f"qkv {tuple(qkv.shape)}, v_cache {tuple(v_cache.shape)}")
    norm = k_weight is not None
    if (q_weight is None) != (k_weight is None):
        raise ValueError("q_weight and k_weight must both be tensors [head_dim] or both None (no norm)")
    for name, weight in (("q_weight", q_weight), ("k_weight", k_weight)) if norm else ():
        check_tensor(name, weight, ndim=1, shape=f"[{dim}]", floating=True)
        if len(weight) != dim:
            raise ValueError(f"{name} must have shape [{dim}] (head_dim), got {tuple(weight.shape)}")
    cache_positions = positions if cache_positions is None else cache_positions
    for name, index in (("positions", positions), ("cache_positions", cache_positions)):
        check_tensor(name, index, ndim=1, shape=f"[{n}]", floating=False)
        if len(index) != n:
            raise ValueError(f"{name} must have shape [{n}] (one per qkv row), got {tuple(index.shape)}")
    if k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1 or cos.stride(-1) != 1 or sin.stride(-1) != 1:
        raise ValueError("k_cache, v_cache, cos and sin must be contiguous in their last dimension")
    qkv = qkv.contiguous()
    q = torch.empty(n, heads, dim, dtype=qkv.dtype, device=qkv.device)
    weights = (q_weight, k_weight) if norm else (qkv, qkv)  # not read without the norm
    _norm_rope_cache_kernel[(n,)](
        qkv, *weights, cos, sin, positions, cache_positions, k_cache, v_cache, q, heads, kv_heads, rows_per_slot,
        float(eps), cos.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3], D=dim, HALF=dim // 2,
        HEADS=triton.next_power_of_2(heads + kv_heads), KV_HEADS=triton.next_power_of_2(kv_heads), NORM=norm)
    return q


def norm_rope_cache_ref(qkv, q_weight, k_weight, eps: float, cos, sin, positions, k_cache, v_cache,
                        rows_per_slot: int, cache_positions=None) -> torch.Tensor:
    from ddtree.kv import write_kv
    from ddtree.models.drafter import apply_rope
    n = qkv.shape[0]
    _, kv_heads, _, dim = k_cache.shape
    heads = qkv.shape[1] // dim - 2 * kv_heads
    x = qkv.view(n, heads + 2 * kv_heads, dim)
    c, s = cos[positions], sin[positions]  # [n, D]
    q, k = x[:, :heads], x[:, heads:heads + kv_heads]
    if k_weight is not None:
        q, k = rms_norm_ref(q, q_weight, eps), rms_norm_ref(k, k_weight, eps)
    q, k = apply_rope(q, c, s), apply_rope(k, c, s)
    at = (positions if cache_positions is None else cache_positions).view(-1, rows_per_slot)  # [slots, rows]
    write_kv(k_cache, at, k.view(len(at), rows_per_slot, kv_heads, dim))
    write_kv(v_cache, at, x[:, heads + kv_heads:].view(len(at), rows_per_slot, kv_heads, dim))
    return q


@triton.jit
def _norm_rope_cache_kernel(qkv_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, pos_ptr, at_ptr, k_ptr, v_ptr, q_ptr, heads,
                            kv_heads, rows_per_slot, eps, stride_cos, stride_ks, stride_kh, stride_kl, stride_vs,
                            stride_vh, stride_vl, D: tl.constexpr, HALF: tl.constexpr, HEADS: tl.constexpr,
                            KV_HEADS: tl.constexpr, NORM: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)  # one row: all its query and key heads as a [HEADS, HALF] tile per half
    width = (heads + 2 * kv_heads) * D
    h = tl.arange(0, HEADS)[:, None]  # head: queries first, then keys
    half = tl.arange(0, HALF)[None, :]
    live = h < heads + kv_heads
    src = qkv_ptr + i * width + h * D + half
    x1, x2 = tl.load(src, mask=live, other=0.0), tl.load(src + HALF, mask=live, other=0.0)  # the head's halves
    y1, y2 = x1.to(tl.float32), x2.to(tl.float32)
    w1, w2 = y1, y2  # not read without NORM
    if NORM:
        query = h < heads
        w1 = tl.where(query, tl.load(qw_ptr + half), tl.load(kw_ptr + half)).to(tl.float32)
        w2 = tl.where(query, tl.load(qw_ptr + HALF + half), tl.load(kw_ptr + HALF + half)).to(tl.float32)
    table = tl.load(pos_ptr + i) * stride_cos + half
    out1, out2 = rope_halves(y1, y2, w1, w2, cos_ptr + table, sin_ptr + table, eps, x1.dtype, D, HALF, NORM)
    dst = q_ptr + (i * heads + h) * D + half
    tl.store(dst, out1, mask=h < heads)
    tl.store(dst + HALF, out2, mask=h < heads)
    slot = i // rows_per_slot
    at = tl.load(at_ptr + i)
    keys = (h >= heads) & live
    dst = k_ptr + slot * stride_ks + (h - heads) * stride_kh + at * stride_kl + half
    tl.store(dst, out1, mask=keys)
    tl.store(dst + HALF, out2, mask=keys)
    kh = tl.arange(0, KV_HEADS)[:, None]
    values = kh < kv_heads
    v_src = qkv_ptr + i * width + (heads + kv_heads + kh) * D + half
    v_dst = v_ptr + slot * stride_vs + kh * stride_vh + at * stride_vl + half
    tl.store(v_dst, tl.load(v_src, mask=values), mask=values)
    tl.store(v_dst + HALF, tl.load(v_src + HALF, mask=values), mask=values)


@triton.jit
def rope_halves(y1, y2, w1, w2, cos_row, sin_row, eps, dtype, D: tl.constexpr, HALF: tl.constexpr,
                NORM: tl.constexpr):
    """The per-head norm (NORM, weights w1, w2 float32) and rotate-half RoPE of heads given as their two halves
    `y1, y2  # [heads, cols]` float32 holding dtype values; cos_row / sin_row point at the table row plus the
    columns (the second half at + HALF). -> (out1, out2) in dtype, every rounding step of norm_rope_cache_ref."""
    if NORM:
        scale = 1.0 / tl.sqrt((tl.sum(y1 * y1, axis=1) + tl.sum(y2 * y2, axis=1)) / D + eps)[:, None]
        y1 = (w1 * (y1 * scale).to(dtype).to(tl.float32)).to(dtype).to(tl.float32)
        y2 = (w2 * (y2 * scale).to(dtype).to(tl.float32)).to(dtype).to(tl.float32)
    c1, c2 = tl.load(cos_row).to(tl.float32), tl.load(cos_row + HALF).to(tl.float32)
    s1, s2 = tl.load(sin_row).to(tl.float32), tl.load(sin_row + HALF).to(tl.float32)
    out1 = ((y1 * c1).to(dtype).to(tl.float32) + (-y2 * s1).to(dtype).to(tl.float32)).to(dtype)
    out2 = ((y2 * c2).to(dtype).to(tl.float32) + (y1 * s2).to(dtype).to(tl.float32)).to(dtype)
    return out1, out2
