"""Tree-verify attention (Triton) beside its float64 torch reference.

One verify forward scores the padded trees of B requests. Layout (a static-cache engine's):
    q        # [B, Q, Hq, D]       Q = num_draft_tokens query rows per request (tree nodes, then padding rows)
    k_cache  # [B, Hkv, L, D]      per-request contiguous cache, Hq % Hkv == 0 (GQA: q head h reads kv head h // G)
    v_cache  # [B, Hkv, L, D]
    seq_lens # [B]                 committed prefix length per request
Entries [0, seq_lens[b]) of request b's cache are its committed prefix; the verify forward has written the K/V of
its tree row i at seq_lens[b] + i (so seq_lens[b] + Q <= L is the caller's contract). After verify,
ddtree.kernels.kv_compact moves the accepted rows to be contiguous after the prefix.

Row i of request b sees the whole prefix and, among the tree columns, exactly the nodes whose bit is set:
- tree_attention: `tree_bits  # [B, Q, ceil(Q / 32)] int32` from ancestor_bitmask(parents): bit j % 32 of word
  j // 32 of row i is set when node j is an ancestor of node i or i itself. Padding rows carry parent -1, so they
  see the prefix and themselves, as ddtree.batch documents. Built once per forward, shared by every layer.
- tree_attention_custom_mask: the serving engine's flat bool mask (ddtree.batch). Request b has q_lens[b] rows;
  their bits are read at mask_indptr[b] + i * (seq_lens[b] + q_lens[b]) + seq_lens[b] + j (draft columns only:
  prefix columns are not masked, like SGLang's default skip_prefix_custom_mask=True); a read past the end of the
  buffer reads False. Fed a layout="unpadded" batch it applies exactly ddtree.effective_mask's draft columns.

A row that sees no key at all (possible only through a corrupted mask and an empty prefix) gets output 0, as do
rows i >= q_lens[b]. Long contexts are split over `num_splits` programs per row block (flash-decoding) and
combined by a second kernel, so a batch of one still fills the GPU.

Bit-exact mode (tree_attention_exact): a row's output has exactly the bits that an autoregressive step computes
for the same keys. Each row walks its visible keys in position order, in blocks of BLOCK_N anchored at absolute
positions (block j holds positions j * BLOCK_N ..), one online-softmax step per block, so a key always lands at
the same place of the same step: a tree row at depth d (its ancestors stored at scattered cache rows) and the
autoregressive step at that position (the same keys, contiguous) reduce in the same order. The row's visible tree
columns, in node order, take the positions seq_len, seq_len + 1, ...: for an ancestor mask that is each ancestor's
own position (depth order is node order along a path); a corrupted mask stays corrupted. Whole prefix blocks are
shared by a program's rows; each row then takes its last blocks alone (the other rows' state is left untouched).
No splits: one program per row block, the exact mode's measured cost.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_dim, check_same_device, check_tensor
from ddtree.kernels.launch import launch_options, wait_for_inputs
from ddtree.kernels.matmul import exact_dot
from ddtree.tree import ancestor_bits

BLOCK_N = 64  # keys per inner step (bit-exact mode: also the size of the position-anchored key blocks)
EXACT_BLOCK_M = 64  # (row, q head) pairs per program in bit-exact mode: one value for every shape
MAX_SPLITS = 64


def ancestor_bitmask(parents: torch.Tensor) -> torch.Tensor:
    """`bits  # [B, Q, ceil(Q / 32)] int32` from `parents  # [B, Q]` (-1 for roots and padding rows).

    Pointer jumping on the device: ceil(log2 Q) gather/or steps, no host round trip except the input check.
    """
    return ancestor_bits(check_parents(parents))


def check_parents(parents: torch.Tensor) -> torch.Tensor:
    """`parents  # [B, Q]` integer, Q >= 1, each -1 or a smaller node index; else a ValueError (one host read)."""
    check_tensor("parents", parents, ndim=2, shape="[B, Q]", floating=False)
    if parents.shape[1] == 0:
        raise ValueError("parents must have Q >= 1 rows per request")
    idx = torch.arange(parents.shape[1], device=parents.device)
    if ((parents < -1) | (parents >= idx)).any():
        raise ValueError("parents[b, i] must be -1 or a node index < i (parents precede children)")
    return parents


def flat_mask_visible(seq_lens, q_lens, custom_mask, mask_indptr, rows: int) -> torch.Tensor:
    """`visible  # [B, Q, Q]` bool: the tree columns tree_attention_custom_mask reads from a flat mask (the draft
    columns of rows i, j < q_lens[b] at mask_indptr[b] + i * (seq_len + q_len) + seq_len + j; past the buffer: False)."""
    idx = torch.arange(rows, device=custom_mask.device)
    seq_lens, q_lens, indptr = (x.to(custom_mask.device, torch.int64) for x in (seq_lens, q_lens, mask_indptr))
    width = (seq_lens + q_lens)[:, None, None]
    flat = indptr[:len(seq_lens), None, None] + idx[:, None] * width + seq_lens[:, None, None] + idx  # [B, Q, Q]
    live = (idx[:, None] < q_lens[:, None, None]) & (idx < q_lens[:, None, None]) & (flat < custom_mask.numel())
    return live & custom_mask[flat.clamp(0, max(custom_mask.numel() - 1, 0))]


def visible_columns(visible: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(counts  # [B, Q] int32, columns  # [B, Q, Q] int32) for tree_attention_exact from `visible  # [B, Q, Q]`
    bool: how many tree columns row i sees, and which, in node order (-1 past counts). No host synchronisation."""
    batch, rows, _ = visible.shape
    rank = torch.where(visible, visible.cumsum(-1) - 1, rows)  # [B, Q, Q]; unseen columns go to a dropped slot
    col = torch.arange(rows, dtype=torch.int32, device=visible.device).expand(batch, rows, -1)
    columns = torch.full((batch, rows, rows + 1), -1, dtype=torch.int32, device=visible.device)
    columns.scatter_(2, rank, col)
    return visible.sum(-1, dtype=torch.int32), columns[..., :rows].contiguous()


def visible_from_parents(parents: torch.Tensor) -> torch.Tensor:
    """`visible  # [B, Q, Q]` bool, the plain reference of ancestor_bitmask: row i sees node j (ancestor-or-self)."""
    batch, rows = parents.shape
    visible = torch.eye(rows, dtype=torch.bool).repeat(batch, 1, 1)
    for b in range(batch):
        for i in range(rows):
            p = int(parents[b, i])
            if p >= 0:
                visible[b, i] |= visible[b, p]
    return visible


def padded_parents(trees, num_draft_tokens: int) -> torch.Tensor:
    """`parents  # [B, Q]` of ddtree DraftTrees padded to Q rows with -1 (padding rows: prefix + themselves)."""
    out = torch.full((len(trees), num_draft_tokens), -1, dtype=torch.long)
    for b, tree in enumerate(trees):
        if tree.n_nodes > num_draft_tokens:
            raise ValueError(f"trees[{b}] has {tree.n_nodes} nodes > num_draft_tokens = {num_draft_tokens}")
        out[b, :tree.n_nodes] = tree.parents
    return out


def tree_attention(q, k_cache, v_cache, seq_lens, tree_bits, *, sm_scale: float | None = None,
                   num_splits: int | None = None) -> torch.Tensor:
    """`out  # [B, Q, Hq, D]`: every row of every request over its prefix and its ancestors-or-self (bitmask)."""
    batch, rows = _check_qkv(q, k_cache, v_cache)
    check_tensor("tree_bits", tree_bits, ndim=3, shape="[B, Q, ceil(Q / 32)]", floating=False)
    if tuple(tree_bits.shape) != (batch, rows, (rows + 31) // 32) or tree_bits.dtype != torch.int32:
        raise ValueError(f"tree_bits must be int32 [{batch}, {rows}, {(rows + 31) // 32}] (ancestor_bitmask), "
                         f"got {tree_bits.dtype} {tuple(tree_bits.shape)}")
    check_same_device(q.device, tree_bits=tree_bits)
    return _launch(q, k_cache, v_cache, _lens("seq_lens", seq_lens, batch, q.device), None,
                   tree_bits.contiguous(), None, None, sm_scale, num_splits)


def tree_attention_custom_mask(q, k_cache, v_cache, seq_lens, q_lens, custom_mask, mask_indptr, *,
                               sm_scale: float | None = None, num_splits: int | None = None) -> torch.Tensor:
    """`out  # [B, Q, Hq, D]` with the visibility read from the engine's flat mask, as the SGLang backend reads it.

    q_lens  # [B] rows of each request (q_lens[b] <= Q; row i of request b is q[b, i]); custom_mask  # [total] bool;
    mask_indptr  # [B] or [B+1] int64, where the backend reads each request's block.
    """
    batch, rows = _check_qkv(q, k_cache, v_cache)
    check_tensor("custom_mask", custom_mask, ndim=1, shape="[total] bool")
    if custom_mask.dtype != torch.bool:
        raise ValueError(f"custom_mask must be a flat bool tensor, got {custom_mask.dtype}")
    check_tensor("mask_indptr", mask_indptr, ndim=1, shape="[B] or [B+1]", floating=False)
    if mask_indptr.shape[0] not in (batch, batch + 1):
        raise ValueError(f"mask_indptr must have {batch} or {batch + 1} entries, got {mask_indptr.shape[0]}")
    check_same_device(q.device, custom_mask=custom_mask, mask_indptr=mask_indptr)
    q_lens = _lens("q_lens", q_lens, batch, q.device)
    return _launch(q, k_cache, v_cache, _lens("seq_lens", seq_lens, batch, q.device), q_lens, None,
                   custom_mask.contiguous().view(torch.uint8), mask_indptr.to(torch.int64).contiguous(),
                   sm_scale, num_splits)


def tree_attention_exact(q, k_cache, v_cache, seq_lens, counts=None, columns=None, q_lens=None, *,
                         sm_scale: float | None = None) -> torch.Tensor:
    """`out  # [B, Q, Hq, D]` in bit-exact mode (module docstring): each row's bits those of an autoregressive step.

    A chain (counts and columns None: a prefill, a DFlash chain, an autoregressive step): row i sees the prefix and
    tree rows 0..i. Otherwise row i sees the prefix and its `counts  # [B, Q]` tree columns `columns  # [B, Q, T]`
    (node order, see visible_columns). q_lens  # [B]: rows i >= q_lens[b] are 0, as in tree_attention_custom_mask.
    """
    batch, rows = _check_qkv(q, k_cache, v_cache)
    chain = columns is None
    if chain != (counts is None):
        raise ValueError("counts and columns must both be given (a tree) or both be None (a chain)")
    if not chain:
        check_tensor("columns", columns, ndim=3, shape="[B, Q, T] int32", floating=False)
        if tuple(counts.shape) != (batch, rows) or columns.shape[:2] != (batch, rows) \
                or counts.dtype != torch.int32 or columns.dtype != torch.int32:
            raise ValueError(f"counts must be int32 [{batch}, {rows}] and columns int32 [{batch}, {rows}, T] "
                             f"(visible_columns), got {tuple(counts.shape)} {counts.dtype}, "
                             f"{tuple(columns.shape)} {columns.dtype}")
        check_same_device(q.device, counts=counts, columns=columns)
    seq_lens = _lens("seq_lens", seq_lens, batch, q.device)
    ragged = q_lens is not None
    q_lens = _lens("q_lens", q_lens, batch, q.device) if ragged else seq_lens
    batch, rows, q_heads, dim = q.shape
    kv_heads = k_cache.shape[1]
    group = q_heads // kv_heads
    scale = (dim ** -0.5 if sm_scale is None else float(sm_scale)) * 1.4426950408889634
    out = torch.empty_like(q)
    grid = (triton.cdiv(rows * group, EXACT_BLOCK_M), batch * kv_heads)
    _exact_attention_kernel[grid](
        q, k_cache, v_cache, out, seq_lens, q_lens, seq_lens if chain else counts.contiguous(),
        seq_lens if chain else columns.contiguous(), scale, rows, kv_heads, 0 if chain else columns.shape[2],
        *q.stride()[:3], *k_cache.stride()[:3], *v_cache.stride()[:3], *out.stride()[:3],
        GROUP=group, HEAD_DIM=dim, BLOCK_M=EXACT_BLOCK_M, BLOCK_N=BLOCK_N, CHAIN=chain, RAGGED_ROWS=ragged,
        MMA=q.is_cuda, num_warps=4, num_stages=2)
    return out


def tree_attention_ref(q, k_cache, v_cache, seq_lens, q_lens, visible, *, sm_scale: float | None = None):
    """The oracle, float64 plain torch: `out  # [B, Q, Hq, D]`; `visible  # [B, Q, Q]` bool over tree columns.

    Request b's rows i < q_lens[b] attend its prefix and the tree columns j < q_lens[b] with visible[b, i, j];
    other rows, and rows that see nothing, are 0.
    """
    batch, rows, q_heads, dim = q.shape
    group = q_heads // k_cache.shape[1]
    scale = dim ** -0.5 if sm_scale is None else sm_scale
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    for b in range(batch):
        s, n = int(seq_lens[b]), int(q_lens[b])
        k = k_cache[b, :, :s + n].double().repeat_interleave(group, 0)  # [Hq, s+n, D]
        v = v_cache[b, :, :s + n].double().repeat_interleave(group, 0)
        allowed = torch.cat([torch.ones(n, s, dtype=torch.bool, device=q.device),
                             visible[b, :n, :n].to(q.device)], dim=1)  # [n, s+n]
        scores = torch.einsum("nhd,hkd->hnk", q[b, :n].double(), k) * scale
        probs = torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1).nan_to_num(0.0)
        out[b, :n] = torch.einsum("hnk,hkd->nhd", probs, v)
    return out


def launch_config(rows: int, group: int) -> tuple[int, int, int]:
    """`(BLOCK_M, num_warps, num_stages)`: BLOCK_M (row, q head of the group) pairs per program.

    One choice for every shape: in the H200 launch sweep (bench/results/tree_attention_h200.md) (64, 4, 3) was the
    fastest or tied on four of five shapes, and 19-25% faster than (128, 8, 3) on the two large-tree shapes.
    """
    return 64, 4, 3


def default_num_splits(batch: int, rows: int, group: int, kv_heads: int, max_len: int, device) -> int:
    """Enough programs for two waves of the GPU's multiprocessors, each split keeping >= 4 key blocks; 1 off-GPU."""
    if device.type != "cuda":
        return 1
    programs = triton.cdiv(rows * group, launch_config(rows, group)[0]) * batch * kv_heads
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    want = min(triton.cdiv(2 * sms, programs), triton.cdiv(max_len, 4 * BLOCK_N), MAX_SPLITS)
    return triton.next_power_of_2(want) if want > 1 else 1


def _check_qkv(q, k_cache, v_cache) -> tuple[int, int]:
    check_tensor("q", q, ndim=4, shape="[B, Q, Hq, D]", floating=True)
    check_tensor("k_cache", k_cache, ndim=4, shape="[B, Hkv, L, D]", floating=True)
    check_tensor("v_cache", v_cache, ndim=4, shape="[B, Hkv, L, D]", floating=True)
    batch, rows, q_heads, dim = q.shape
    if tuple(v_cache.shape) != tuple(k_cache.shape):
        raise ValueError(f"v_cache must have k_cache's shape {tuple(k_cache.shape)}, got {tuple(v_cache.shape)}")
    check_dim("k_cache", k_cache, 0, batch, "requests like q")
    check_dim("k_cache", k_cache, 3, dim, "head_dim like q")
    if q_heads % k_cache.shape[1]:
        raise ValueError(f"k_cache kv heads ({k_cache.shape[1]}) must divide q heads ({q_heads})")
    if dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"q head_dim must be one of 16, 32, 64, 128, 256, got {dim}")
    if rows == 0 or k_cache.shape[2] < rows:
        raise ValueError(f"q must have Q >= 1 rows and k_cache room for them, got Q = {rows}, L = {k_cache.shape[2]}")
    if not (q.dtype == k_cache.dtype == v_cache.dtype):
        raise ValueError(f"q, k_cache and v_cache must share a dtype, got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    check_same_device(q.device, k_cache=k_cache, v_cache=v_cache)
    for name, x in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if x.stride(-1) != 1:
            raise ValueError(f"{name} must be contiguous in head_dim (stride(-1) == 1)")
    return batch, rows


def _lens(name: str, lens, batch: int, device) -> torch.Tensor:
    lens = torch.as_tensor(lens)
    check_tensor(name, lens, ndim=1, shape="[B]", floating=False)
    check_dim(name, lens, 0, batch, "entries, one per request")
    return lens.to(device=device, dtype=torch.int32).contiguous()


def _launch(q, k_cache, v_cache, seq_lens, q_lens, bits, mask, mask_indptr, sm_scale, num_splits):
    batch, rows, q_heads, dim = q.shape
    kv_heads = k_cache.shape[1]
    group = q_heads // kv_heads
    if num_splits is None:
        num_splits = default_num_splits(batch, rows, group, kv_heads, k_cache.shape[2], q.device)
    if isinstance(num_splits, bool) or not isinstance(num_splits, int) or not 1 <= num_splits <= MAX_SPLITS:
        raise ValueError(f"num_splits must be an int in [1, {MAX_SPLITS}], got {num_splits!r}")
    scale = dim ** -0.5 if sm_scale is None else float(sm_scale)
    out = torch.empty_like(q)
    split = num_splits > 1
    part_acc = torch.empty(batch * rows * q_heads * num_splits * dim if split else 1, dtype=torch.float32,
                           device=q.device)  # [B, Q, Hq, S, D]
    part_ml = torch.empty(2 * batch * rows * q_heads * num_splits if split else 1, dtype=torch.float32,
                          device=q.device)  # [2, B, Q, Hq, S]: running max then running sum
    custom = mask is not None
    block_m, num_warps, num_stages = launch_config(rows, group)
    grid = (triton.cdiv(rows * group, block_m), batch * kv_heads, num_splits)
    _tree_attention_kernel[grid](
        q, k_cache, v_cache, out, part_acc, part_ml, seq_lens, seq_lens if q_lens is None else q_lens,
        seq_lens if custom else bits, mask if custom else seq_lens, mask_indptr if custom else seq_lens,
        mask.numel() if custom else 0,
        scale * 1.4426950408889634, rows, kv_heads, (rows + 31) // 32, num_splits,
        batch * rows * q_heads * num_splits,
        *q.stride()[:3], *k_cache.stride()[:3], *v_cache.stride()[:3], *out.stride()[:3],
        GROUP=group, HEAD_DIM=dim, BLOCK_M=block_m, BLOCK_N=BLOCK_N, RAGGED_ROWS=q_lens is not None,
        CUSTOM_MASK=custom, SPLIT=split, DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=num_warps, num_stages=num_stages, **launch_options(q.device))
    if split:
        _combine_kernel[(batch * rows * q_heads,)](
            part_acc, part_ml, out, rows, q_heads, batch * rows * q_heads * num_splits, *out.stride()[:3],
            NUM_SPLITS=num_splits, BLOCK_S=triton.next_power_of_2(num_splits), HEAD_DIM=dim, num_warps=4,
            **launch_options(q.device))
    return out


@triton.jit
def _attend_block(q, k, v, keep, m_i, l_i, acc, qk_scale, DOT_PRECISION: tl.constexpr):
    """One online-softmax step (log2 domain): `k, v  # [N, D]` tiles, `keep  # [BLOCK_M, N]` the pairs that count."""
    s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
    s = tl.where(keep, s, -float("inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
    p = tl.exp2(s - m_safe[:, None])
    alpha = tl.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
    return m_new, l_i, acc


@triton.jit
def _kv_tile(base, stride_n, start, bound, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr):
    """`[BLOCK, D]` rows start.. of one request's K or V, zero at rows >= bound."""
    n = start + tl.arange(0, BLOCK)
    return tl.load(base + n[:, None] * stride_n + tl.arange(0, HEAD_DIM)[None, :], mask=(n < bound)[:, None],
                   other=0.0)


@triton.jit
def _program_rows(q_ptr, k_ptr, v_ptr, seq_lens_ptr, q_lens_ptr, num_rows, num_kv_heads, stride_qb, stride_qr,
                  stride_qh, stride_kb, stride_kh, stride_vb, stride_vh, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
                  BLOCK_M: tl.constexpr, RAGGED_ROWS: tl.constexpr):
    """What every attention program starts from: its request and kv head (program axis 1), its BLOCK_M (row, q head
    of the group) pairs (axis 0), their queries, the request's K/V bases and an empty online-softmax state."""
    b = tl.program_id(1) // num_kv_heads
    kvh = tl.program_id(1) % num_kv_heads
    seq_len = tl.load(seq_lens_ptr + b)
    if RAGGED_ROWS:
        q_len = tl.minimum(tl.load(q_lens_ptr + b), num_rows)
    else:
        q_len = num_rows
    m_offs = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # [BLOCK_M] = row * GROUP + head in group
    r = m_offs // GROUP
    head = kvh * GROUP + m_offs % GROUP
    row_ok = r < q_len
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + b.to(tl.int64) * stride_qb + r[:, None] * stride_qr + head[:, None] * stride_qh + d[None, :],
                mask=row_ok[:, None], other=0.0)  # [BLOCK_M, D]
    k_base = k_ptr + b.to(tl.int64) * stride_kb + kvh * stride_kh
    v_base = v_ptr + b.to(tl.int64) * stride_vb + kvh * stride_vh
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    return b, seq_len, q_len, m_offs, r, head, row_ok, d, q, k_base, v_base, m_i, l_i, acc


@triton.jit
def _store_rows(out_ptr, acc, l_i, b, r, head, d, keep, stride_ob, stride_or, stride_oh):
    """The finished rows acc / l (0 where a row saw no key) into out[b, r, head], where `keep  # [BLOCK_M]`."""
    o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    o_ptr = out_ptr + b.to(tl.int64) * stride_ob + r[:, None] * stride_or + head[:, None] * stride_oh + d[None, :]
    tl.store(o_ptr, o.to(out_ptr.dtype.element_ty), mask=keep[:, None])


@triton.jit
def _tree_attention_kernel(
        q_ptr, k_ptr, v_ptr, out_ptr, part_acc_ptr, part_ml_ptr, seq_lens_ptr, q_lens_ptr,
        bits_ptr, mask_ptr, mask_indptr_ptr, mask_numel,
        qk_scale, num_rows, num_kv_heads, num_words, num_splits, part_rows,
        stride_qb, stride_qr, stride_qh, stride_kb, stride_kh, stride_kn, stride_vb, stride_vh, stride_vn,
        stride_ob, stride_or, stride_oh,
        GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        RAGGED_ROWS: tl.constexpr, CUSTOM_MASK: tl.constexpr, SPLIT: tl.constexpr, DOT_PRECISION: tl.constexpr,
        PDL: tl.constexpr):
    """Program (row block, request x kv head, split): BLOCK_M (row, q head of the group) pairs.

    Split s takes the s-th contiguous chunk of the prefix and every num_splits-th 32-column tile of the tree.
    """
    wait_for_inputs(PDL)
    split = tl.program_id(2)
    b, seq_len, q_len, m_offs, r, head, row_ok, d, q, k_base, v_base, m_i, l_i, acc = _program_rows(
        q_ptr, k_ptr, v_ptr, seq_lens_ptr, q_lens_ptr, num_rows, num_kv_heads, stride_qb, stride_qr, stride_qh,
        stride_kb, stride_kh, stride_vb, stride_vh, GROUP, HEAD_DIM, BLOCK_M, RAGGED_ROWS)

    chunk = tl.cdiv(tl.cdiv(seq_len, num_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, seq_len)
    for start in range(lo, hi, BLOCK_N):  # committed prefix: visible to every real row
        k = _kv_tile(k_base, stride_kn, start, hi, BLOCK_N, HEAD_DIM)
        v = _kv_tile(v_base, stride_vn, start, hi, BLOCK_N, HEAD_DIM)
        keep = row_ok[:, None] & (start + tl.arange(0, BLOCK_N) < hi)[None, :]
        m_i, l_i, acc = _attend_block(q, k, v, keep, m_i, l_i, acc, qk_scale, DOT_PRECISION)

    col = tl.arange(0, 32)
    for j0 in range(split * 32, q_len, num_splits * 32):  # tree columns j0..j0+31: ancestors-or-self only
        k = _kv_tile(k_base, stride_kn, seq_len + j0, seq_len + q_len, 32, HEAD_DIM)
        v = _kv_tile(v_base, stride_vn, seq_len + j0, seq_len + q_len, 32, HEAD_DIM)
        live = row_ok[:, None] & (j0 + col < q_len)[None, :]
        if CUSTOM_MASK:
            flat = (tl.load(mask_indptr_ptr + b) + r[:, None].to(tl.int64) * (seq_len + q_len) + seq_len + j0
                    + col[None, :])
            keep = tl.load(mask_ptr + flat, mask=live & (flat < mask_numel), other=0) != 0
        else:
            word = tl.load(bits_ptr + (b * num_rows + r).to(tl.int64) * num_words + j0 // 32, mask=row_ok, other=0)
            keep = live & (((word[:, None] >> col[None, :]) & 1) != 0)
        m_i, l_i, acc = _attend_block(q, k, v, keep, m_i, l_i, acc, qk_scale, DOT_PRECISION)

    in_out = m_offs < num_rows * GROUP
    if SPLIT:
        q_heads = num_kv_heads * GROUP
        part = ((b * num_rows + r) * q_heads + head).to(tl.int64) * num_splits + split  # [BLOCK_M]
        tl.store(part_ml_ptr + part, m_i, mask=in_out)
        tl.store(part_ml_ptr + part_rows + part, l_i, mask=in_out)
        tl.store(part_acc_ptr + part[:, None] * HEAD_DIM + d[None, :], acc, mask=in_out[:, None])
    else:
        _store_rows(out_ptr, acc, l_i, b, r, head, d, in_out, stride_ob, stride_or, stride_oh)


@triton.jit
def _combine_kernel(part_acc_ptr, part_ml_ptr, out_ptr, num_rows, num_heads, part_rows,
                    stride_ob, stride_or, stride_oh,
                    NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr, PDL: tl.constexpr):
    """One (request, row, q head): merge the splits' (max, sum, unnormalised output) into the final row."""
    wait_for_inputs(PDL)
    pid = tl.program_id(0)  # (b * num_rows + r) * num_heads + h
    h = pid % num_heads
    r = (pid // num_heads) % num_rows
    b = pid // (num_heads * num_rows)
    s = tl.arange(0, BLOCK_S)
    s_ok = s < NUM_SPLITS
    part = pid.to(tl.int64) * NUM_SPLITS + s  # [BLOCK_S]
    m = tl.load(part_ml_ptr + part, mask=s_ok, other=-float("inf"))
    l_part = tl.load(part_ml_ptr + part_rows + part, mask=s_ok, other=0.0)
    m_max = tl.max(m, 0)
    w = tl.exp2(m - tl.where(m_max == -float("inf"), 0.0, m_max))  # [BLOCK_S], 0 for empty splits
    l_sum = tl.sum(l_part * w, 0)
    d = tl.arange(0, HEAD_DIM)
    acc = tl.load(part_acc_ptr + part[:, None] * HEAD_DIM + d[None, :], mask=s_ok[:, None], other=0.0)
    o = tl.sum(acc * w[:, None], 0) / tl.where(l_sum > 0, l_sum, 1.0)
    tl.store(out_ptr + b.to(tl.int64) * stride_ob + r * stride_or + h * stride_oh + d, o.to(out_ptr.dtype.element_ty))


@triton.jit
def _exact_step(q, k, v, keep, update, m_i, l_i, acc, qk_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                MMA: tl.constexpr):
    """_attend_block with ddtree.kernels.matmul.exact_dot, applied to the rows in `update  # [BLOCK_M]` only."""
    s = exact_dot(q, tl.trans(k), tl.zeros([BLOCK_M, BLOCK_N], tl.float32), MMA) * qk_scale
    s = tl.where(keep, s, -float("inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
    p = tl.exp2(s - m_safe[:, None])
    alpha = tl.exp2(m_i - m_safe)
    l_new = l_i * alpha + tl.sum(p, 1)
    acc_new = exact_dot(p.to(v.dtype), v, acc * alpha[:, None], MMA)
    return tl.where(update, m_new, m_i), tl.where(update, l_new, l_i), tl.where(update[:, None], acc_new, acc)


@triton.jit
def _exact_attention_kernel(
        q_ptr, k_ptr, v_ptr, out_ptr, seq_lens_ptr, q_lens_ptr, counts_ptr, columns_ptr,
        qk_scale, num_rows, num_kv_heads, table_width,
        stride_qb, stride_qr, stride_qh, stride_kb, stride_kh, stride_kn, stride_vb, stride_vh, stride_vn,
        stride_ob, stride_or, stride_oh,
        GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        CHAIN: tl.constexpr, RAGGED_ROWS: tl.constexpr, MMA: tl.constexpr):
    """Program (row block, request x kv head): position-anchored key blocks, shared while they are whole prefix
    blocks for every row of the program, then each row's own last blocks."""
    pid_m = tl.program_id(0)
    b, seq_len, q_len, m_offs, r, head, row_ok, d, q, k_base, v_base, m_i, l_i, acc = _program_rows(
        q_ptr, k_ptr, v_ptr, seq_lens_ptr, q_lens_ptr, num_rows, num_kv_heads, stride_qb, stride_qr, stride_qh,
        stride_kb, stride_kh, stride_vb, stride_vh, GROUP, HEAD_DIM, BLOCK_M, RAGGED_ROWS)
    n = tl.arange(0, BLOCK_N)

    first = pid_m * BLOCK_M // GROUP  # the program's first row
    last = tl.minimum((pid_m * BLOCK_M + BLOCK_M - 1) // GROUP, q_len - 1)
    if CHAIN:  # row i sees positions 0 .. seq_len + i, every key at its own cache row
        shared = (seq_len + first + 1) // BLOCK_N * BLOCK_N
    else:
        shared = seq_len // BLOCK_N * BLOCK_N
    for start in range(0, shared, BLOCK_N):  # blocks every row of the program sees whole
        k = tl.load(k_base + (start + n)[:, None] * stride_kn + d[None, :])
        v = tl.load(v_base + (start + n)[:, None] * stride_vn + d[None, :])
        keep = row_ok[:, None] & (n >= 0)[None, :]
        m_i, l_i, acc = _exact_step(q, k, v, keep, row_ok, m_i, l_i, acc, qk_scale, BLOCK_M, BLOCK_N, MMA)

    for rr in range(first, last + 1):  # each row's remaining blocks, up to its own last key
        if CHAIN:
            count = rr + 1
        else:
            count = tl.load(counts_ptr + b * num_rows + rr)
        for start in range(shared, seq_len + count, BLOCK_N):
            pos = start + n
            t = pos - seq_len  # place among the row's visible tree columns
            in_tree = (t >= 0) & (t < count)
            if CHAIN:
                slot = pos
            else:
                col = tl.load(columns_ptr + (b * num_rows + rr).to(tl.int64) * table_width + t, mask=in_tree,
                              other=0)
                slot = tl.where(in_tree, seq_len + col, pos)
            seen = (pos < seq_len) | in_tree
            k = tl.load(k_base + slot[:, None] * stride_kn + d[None, :], mask=seen[:, None], other=0.0)
            v = tl.load(v_base + slot[:, None] * stride_vn + d[None, :], mask=seen[:, None], other=0.0)
            own = row_ok & (r == rr)
            keep = own[:, None] & seen[None, :]
            m_i, l_i, acc = _exact_step(q, k, v, keep, own, m_i, l_i, acc, qk_scale, BLOCK_M, BLOCK_N, MMA)

    _store_rows(out_ptr, acc, l_i, b, r, head, d, m_offs < num_rows * GROUP, stride_ob, stride_or, stride_oh)
