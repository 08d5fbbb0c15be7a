"""KV-cache compaction after verify (Triton, in place), beside its reference `ddtree.compact_kv`.

Static layout of ddtree.kernels.tree_attention: `cache  # [B, H, L, D]`; request b's committed prefix is
[0, seq_lens[b]) and its tree row i sits at seq_lens[b] + i. Compaction moves the accepted nodes' entries
accepted[b, 0..accept_len[b]) to seq_lens[b] + 0..accept_len[b], so the cache holds prefix + accepted path
contiguously; entries after that are stale and get overwritten by the next verify.

In place and race-free because an accepted path is a root-to-node path: accepted[b, 0] = 0 and the node indices
strictly increase (parents precede children), so the entry copied to slot j comes from slot accepted[b, j] >= j,
and the copies run in j order within each (request, head) program.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kv import compact_kv
from ddtree.kernels._checks import check_dim, check_same_device, check_tensor


def compact_kv_cache(caches, seq_lens, accepted, accept_len) -> torch.Tensor:
    """Compact every `[B, H, L, D]` tensor of `caches` (one tensor or a list: K and V of every layer) in place.

    accepted  # [B, Q] accepted node indices, root first (-1 padding is ignored); accept_len  # [B].
    Returns the new committed lengths seq_lens + accept_len  # [B] long.
    """
    caches = [caches] if isinstance(caches, torch.Tensor) else list(caches)
    if not caches:
        raise ValueError("caches must be a [B, H, L, D] tensor or a non-empty list of them")
    check_tensor("accepted", accepted, ndim=2, shape="[B, Q]", floating=False)
    batch, rows = accepted.shape
    device = accepted.device
    lens = {}
    for name, x in (("seq_lens", seq_lens), ("accept_len", accept_len)):
        check_tensor(name, x, ndim=1, shape="[B]", floating=False)
        check_dim(name, x, 0, batch, "entries, one per request")
        check_same_device(device, **{name: x})
        lens[name] = x.to(torch.int32).contiguous()
    for i, cache in enumerate(caches):
        check_tensor(f"caches[{i}]", cache, ndim=4, shape="[B, H, L, D]")
        check_dim(f"caches[{i}]", cache, 0, batch, "requests like accepted")
        check_same_device(device, **{f"caches[{i}]": cache})
        if cache.stride(-1) != 1:
            raise ValueError(f"caches[{i}] must be contiguous in head_dim (stride(-1) == 1)")
        if cache.shape[2] < rows:
            raise ValueError(f"caches[{i}] has L = {cache.shape[2]} < Q = {rows} entries")
    accepted32 = accepted.to(torch.int32).contiguous()
    for cache in caches:
        dim = cache.shape[3]
        _compact_kernel[(batch, cache.shape[1])](
            cache, lens["seq_lens"], accepted32, lens["accept_len"], rows, *cache.stride()[:3], dim,
            BLOCK_D=triton.next_power_of_2(dim))
    return seq_lens.long() + accept_len.long()


def compact_kv_cache_ref(cache, seq_lens, accepted, accept_len) -> torch.Tensor:
    """The oracle: a compacted copy of `cache  # [B, H, L, D]`, request by request through ddtree.compact_kv.

    Slots past seq_lens[b] + accept_len[b] keep their old contents, as in the in-place kernel.
    """
    out = cache.clone()
    for b in range(cache.shape[0]):
        s, n = int(seq_lens[b]), int(accept_len[b])
        kept = compact_kv(cache[b], s, accepted[b, :n].tolist(), seq_dim=-2)  # [H, s + n, D]
        out[b, :, :s + n] = kept
    return out


@triton.jit
def _compact_kernel(cache_ptr, seq_lens_ptr, accepted_ptr, accept_len_ptr, num_rows,
                    stride_b, stride_h, stride_n, head_dim, BLOCK_D: tl.constexpr):
    """One (request, head) per program: copy slot seq + accepted[j] to slot seq + j for j = 1.. in order."""
    b = tl.program_id(0)
    base = cache_ptr + b.to(tl.int64) * stride_b + tl.program_id(1).to(tl.int64) * stride_h
    seq_len = tl.load(seq_lens_ptr + b)
    d = tl.arange(0, BLOCK_D)
    d_ok = d < head_dim
    for j in range(1, tl.load(accept_len_ptr + b)):  # the root (j = 0) is already in place
        src = tl.load(accepted_ptr + b * num_rows + j)
        row = tl.load(base + (seq_len + src).to(tl.int64) * stride_n + d, mask=d_ok)
        tl.store(base + (seq_len + j).to(tl.int64) * stride_n + d, row, mask=d_ok)
