"""DDTree tree build for a whole batch on the device, no host round trip: Triton kernels beside their torch
references (top_k / top_k_ref, select_from_top_k / select_from_top_k_ref).

Produces exactly `ddtree.build_tree`'s trees (same nodes, order, tie rules and node_logws). Why this works: the
heap pops candidates in increasing order of the key (-score, depth, parent pop index, rank), because every pushed
candidate has a larger key than the one that pushed it (a child scores no more than its parent and is one deeper;
a next sibling scores no more and has a larger rank). So the tree is the first `budget` paths in that order.
Among the nodes of one depth, pop order is their own key order, so depth by depth:
  depth d candidates = (the N best of depth d-1) x (top-K tokens of depth d), generated parent-major, rank-minor;
  a stable sort by descending score orders them by (-score, parent position, rank); keep the N best
(a node among the N best overall is among the N best of its depth). A stable sort of all depths' lists, concatenated
depth-major, by descending score then gives the global pop order; the first N with a finite score are the nodes.

On the device (select_trees on CUDA, budgets up to KERNEL_MAX_BUDGET), about 20 launches for a whole batch at depth
15 (graphed on an H200, log-softmax included: 89 us at budget 32 to 169 us at 256 with RANK_BLOCK 16, 156 us at 256
with the 8 set here; kernel times and launch settings in bench/results/tree_build_profile_h200.md):
  top-K     each depth's K = min(N, vocab) best log-probs: every program keeps the best of a vocabulary chunk
            (tl.topk over keys packing the value and the token id, so ties go to the lower id as in a stable
            sort), then merges of the chunks' winners, MERGE_WIDTH keys a program, until one list is left
  levels    one launch per depth, programs over the candidates: each ranks its candidates against all of them
            (only the ~N ln N with (p+1)(r+1) <= N can be among the N best, see select_from_top_k)
  order     the global pop order: each entry ranked against all depth * N entries
  nodes     every node slot written by the entry that owns it (real node or padding)
Up to SMALL_MAX_BUDGET the selection is instead one program per request (_small_select_kernel), its phases ordered
by barriers: one launch instead of depth + 2 while the lists are short (graphed tree stage on the H200, 2026-12-03:
37 vs 68 us at budget 8, 49 vs 72 at 16, the budgets it is used for; bench/profile_tree_build.py times both
schedules side by side).
"""
from __future__ import annotations

import math
from functools import lru_cache

import torch
import triton
import triton.language as tl

from ddtree._checks import check_int, check_logits, check_temperature
from ddtree.tree import TreeBatch


KERNEL_MAX_BUDGET = 1024  # above it the torch path (the top-K kernel holds N keys per program in registers)
TOP_K_CHUNK = 1024  # vocabulary entries per program of the first top-K pass
MERGE_WIDTH = 1024  # keys per program of a top-K merge
TOP_K_WARPS = 8  # launch settings measured best on the H200 (bench results, profile_round)
RANK_BLOCK, RANK_CHUNK, RANK_WARPS = 8, 512, 8  # selection: entries ranked per program, compared per step
SMALL_MAX_BUDGET = 16  # up to this budget the selection is one program per request (_small_select_kernel)
SMALL_CHUNK, SMALL_WARPS = 16, 8  # its candidates compared per step (all steps unrolled), its warps


def build_trees_device(draft_logits: torch.Tensor, budget: int, *, draft_temperature: float = 1.0) -> TreeBatch:
    """`ddtree.build_trees` for `draft_logits  # [B, depth, V]`, on draft_logits' device, padded to budget + 1."""
    check_logits("draft_logits", draft_logits, shape="[batch, depth, vocab]")
    budget = check_int("budget", budget)
    draft_temperature = check_temperature("draft_temperature", draft_temperature, allow_zero=False)
    return select_trees(torch.log_softmax(draft_logits.float() / draft_temperature, dim=-1), budget)


def select_trees(logq: torch.Tensor, budget: int) -> TreeBatch:
    """The selection of build_trees_device from draft log-probs `logq  # [B, depth, V]` float32, without input
    checks and without host synchronisation (CUDA-graph capturable): the Triton kernels on CUDA for budgets up to
    KERNEL_MAX_BUDGET, the torch references otherwise. NaN log-probs count as -inf."""
    k = min(budget, logq.shape[-1])
    if logq.is_cuda and 1 <= budget <= KERNEL_MAX_BUDGET and logq.shape[1] > 0:
        return select_from_top_k(*top_k(logq, k), budget)
    return select_from_top_k_ref(*top_k_ref(logq, k), budget)


def top_k_ref(logq: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`logq  # [..., V]` -> (values  # [..., k] float64, tokens  # [..., k] long): the k largest, best first, ties
    by lower token id (a stable descending sort's first k)."""
    values, tokens = torch.sort(logq, dim=-1, descending=True, stable=True)
    return values[..., :k].double(), tokens[..., :k]


def top_k(logq: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """top_k_ref in Triton for float32 `logq  # [..., V]` (NaN counted as -inf, -0.0 as 0.0), 1 <= k <= V:
    a pass over vocabulary chunks, then merges of MERGE_WIDTH keys until one list is left."""
    *lead, vocab = logq.shape
    rows = logq.reshape(-1, vocab).float().contiguous()  # [R, V]
    n_rows, device = rows.shape[0], rows.device
    k_pad = max(2, triton.next_power_of_2(k))  # tl.topk needs k >= 2 on older Tritons
    chunk = max(k_pad, min(TOP_K_CHUNK, triton.next_power_of_2(vocab)))
    lists = triton.cdiv(vocab, chunk)
    values = torch.empty(n_rows, k, dtype=torch.float64, device=device)
    tokens = torch.empty(n_rows, k, dtype=torch.long, device=device)
    keys = torch.empty(n_rows, lists, k_pad, dtype=torch.int64, device=device)  # each chunk's best, best first
    _chunk_top_k_kernel[(n_rows, lists)](rows, keys, values, tokens, vocab, k, CHUNK=chunk, K_PAD=k_pad,
                                         FINAL=lists == 1, num_warps=TOP_K_WARPS)
    group = max(2, MERGE_WIDTH // k_pad)
    while lists > 1:
        merged = triton.cdiv(lists, group)
        out = torch.empty(n_rows, merged, k_pad, dtype=torch.int64, device=device)
        _merge_top_k_kernel[(n_rows, merged)](keys, out, values, tokens, lists, vocab, k, GROUP=group, K_PAD=k_pad,
                                              FINAL=merged == 1, num_warps=TOP_K_WARPS)
        keys, lists = out, merged
    return values.view(*lead, k), tokens.view(*lead, k)


def select_from_top_k_ref(top_logq: torch.Tensor, top_tokens: torch.Tensor, budget: int) -> TreeBatch:
    """The torch reference: `top_logq, top_tokens  # [B, depth, K]` each depth's K best, best first (ties by lower
    token id) -> the budget-node trees, depth by depth with stable sorts (see the module docstring)."""
    batch, depth, k = top_logq.shape
    device = top_logq.device
    levels = []  # per depth: (score, parent position in the previous depth's list, rank), each [B, n_d]
    if k > 0 and depth > 0:  # depth 1: the K best tokens themselves, already in key order
        ranks = torch.arange(k, device=device).expand(batch, -1)
        levels.append((top_logq[:, 0], torch.full_like(ranks, -1), ranks))
    for d in range(1, depth if levels else 0):
        parent_score = levels[-1][0]  # [B, F]
        cand = (parent_score[:, :, None] + top_logq[:, d, None, :]).flatten(1)  # [B, F*K], parent-major
        score, order = torch.sort(cand, dim=-1, descending=True, stable=True)
        levels.append((score[:, :budget], order[:, :budget] // k, order[:, :budget] % k))

    n = budget + 1
    tokens = torch.full((batch, n), -1, dtype=torch.long, device=device)
    parents, depths, ranks = tokens.clone(), tokens.clone(), tokens.clone()
    logws = torch.full((batch, n), -math.inf, dtype=torch.float64, device=device)
    depths[:, 0], logws[:, 0] = 0, 0.0
    if not levels:
        return TreeBatch(tokens, parents, depths, ranks, logws, torch.ones(batch, dtype=torch.long, device=device))

    sizes = [lvl[0].shape[1] for lvl in levels]
    offsets = [sum(sizes[:d]) for d in range(len(sizes))]
    all_score = torch.cat([lvl[0] for lvl in levels], dim=1)  # [B, T], depth-major
    all_depth = torch.cat([torch.full((s,), d + 1, device=device) for d, s in enumerate(sizes)])  # [T]
    all_parent = torch.cat([lvl[1] + (offsets[d - 1] if d else 0) for d, lvl in enumerate(levels)], dim=1)
    all_rank = torch.cat([lvl[2] for lvl in levels], dim=1)
    score, order = torch.sort(all_score, dim=-1, descending=True, stable=True)  # global pop order
    take = min(budget, score.shape[1])
    score, order = score[:, :take], order[:, :take]
    finite = score > -math.inf  # [B, take]; a prefix of each row

    node_of = torch.full_like(all_rank, -1)  # [B, T]: node index of each list entry, -1 if not selected
    node_of.scatter_(1, order, torch.arange(1, take + 1, device=device).expand(batch, -1))
    node_depth = all_depth[order]  # [B, take]
    node_rank = all_rank.gather(1, order)
    parent_entry = all_parent.gather(1, order)  # [B, take] list index of the parent, -1 for depth 1
    node_parent = torch.where(node_depth == 1, 0, node_of.gather(1, parent_entry.clamp_min(0)))
    node_token = top_tokens.flatten(1).gather(1, (node_depth - 1) * k + node_rank)  # top_tokens[b, d-1, rank]

    cols = slice(1, take + 1)
    tokens[:, cols] = torch.where(finite, node_token, -1)
    parents[:, cols] = torch.where(finite, node_parent, -1)
    depths[:, cols] = torch.where(finite, node_depth, -1)
    ranks[:, cols] = torch.where(finite, node_rank, -1)
    logws[:, cols] = torch.where(finite, score, -math.inf)
    return TreeBatch(tokens, parents, depths, ranks, logws, 1 + finite.sum(1))


def select_from_top_k(top_logq: torch.Tensor, top_tokens: torch.Tensor, budget: int) -> TreeBatch:
    """select_from_top_k_ref in Triton (depth + 2 launches for the batch), same trees bit for bit; top_logq NaN-free.

    Per depth, candidate (p, r) = (p-th entry of the previous depth's list, r-th best token) can be among the
    budget best only if (p + 1)(r + 1) <= budget: every (p', r') <= (p, r) scores at least as high and comes first
    on ties (lower parent position, then rank). The level kernel ranks just those candidates by (score desc,
    p*K + r asc) with exact float64 comparisons; every depth's list holds `budget` entries (-inf past its
    candidates). The order kernel ranks all depths' entries by (score desc, depth-major position asc), as the
    reference's stable sorts do: ranks are a permutation, so each node slot 1..budget is written by exactly one
    entry, a real node when its score is finite and padding otherwise.
    """
    batch, depth, k = top_logq.shape
    device = top_logq.device
    cand_parent, cand_rank = _candidates(budget, k, str(device))
    top_logq, top_tokens = top_logq.contiguous(), top_tokens.contiguous()
    n, total = budget + 1, depth * budget
    level_score = torch.empty(batch, depth, budget, dtype=torch.float64, device=device)
    level_int = torch.empty(2, batch, depth, budget, dtype=torch.int32, device=device)  # parent position, rank
    node_of = torch.empty(batch, total, dtype=torch.int32, device=device)  # 1 + pop rank, 0 past the budget
    out_long = torch.empty(4, batch, n, dtype=torch.long, device=device)  # tokens, parents, depths, ranks
    logws = torch.empty(batch, n, dtype=torch.float64, device=device)
    n_nodes = torch.empty(batch, dtype=torch.long, device=device)
    if budget <= SMALL_MAX_BUDGET:
        n_pad, c_pad = triton.next_power_of_2(budget), max(SMALL_CHUNK, triton.next_power_of_2(len(cand_parent)))
        cand_score = torch.empty(batch, c_pad, dtype=torch.float64, device=device)  # one depth's candidate scores
        _small_select_kernel[(batch,)](
            top_logq, top_tokens, cand_parent, cand_rank, cand_score, level_score, level_int, node_of, out_long,
            logws, n_nodes, batch, depth, k, budget, len(cand_parent), N_PAD=n_pad, LOG_N=n_pad.bit_length() - 1,
            C_PAD=c_pad, D_PAD=triton.next_power_of_2(depth), T_PAD=triton.next_power_of_2(total),
            CHUNK=SMALL_CHUNK, num_warps=SMALL_WARPS)
        return TreeBatch(*out_long, logws, n_nodes)
    for d in range(depth):
        num_cand = min(k, budget) if d == 0 else len(cand_parent)  # depth 1: the root's children only
        _level_kernel[(batch, triton.cdiv(num_cand, RANK_BLOCK))](
            top_logq, cand_parent, cand_rank, num_cand, level_score, level_int, d, batch, depth, k, budget,
            BLOCK_C=RANK_BLOCK, BLOCK_J=RANK_CHUNK, num_warps=RANK_WARPS)
    grid = (batch, triton.cdiv(total, RANK_BLOCK))
    _order_kernel[grid](level_score, node_of, n_nodes, total, budget, BLOCK_E=RANK_BLOCK, BLOCK_J=RANK_CHUNK,
                        num_warps=RANK_WARPS)
    _nodes_kernel[grid](top_tokens, level_score, level_int, node_of, out_long, logws, n_nodes, batch, depth, k,
                        budget, BLOCK_E=RANK_BLOCK)
    return TreeBatch(*out_long, logws, n_nodes)


@lru_cache(maxsize=64)
def _candidates(budget: int, k: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(parent positions, ranks)  # [C] int32: the (p, r) with p < budget, r < K and (p + 1)(r + 1) <= budget,
    in key order (p-major); the first min(K, budget) are p = 0."""
    pairs = [(p, r) for p in range(budget) for r in range(min(k, budget // (p + 1)))]
    table = torch.tensor(pairs, dtype=torch.int32).T.contiguous().to(device)
    return table[0], table[1]


# ---------------------------------------------------------------------------------------------------- top-K
@triton.jit
def _pack(value, token, vocab):
    """(float32 value, token id) -> int64 keys ordered as (value desc, token asc) when sorted descending."""
    value = tl.where(value != value, float("-inf"), value)  # NaN counts as -inf
    value = tl.where(value == 0.0, 0.0, value)  # -0.0 ties with 0.0, as in a sort
    bits = value.to(tl.int32, bitcast=True)
    ordered = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # signed order = float order
    return (ordered.to(tl.int64) << 32) | (vocab - 1 - token).to(tl.int64)


@triton.jit
def _store_top(keys, offs, keys_out, values_ptr, tokens_ptr, row, vocab, k, FINAL: tl.constexpr):
    """A program's best keys (best first): to keys_out[offs], or, FINAL, the first k unpacked to the outputs."""
    if FINAL:
        hi = (keys >> 32).to(tl.int32)
        value = tl.where(hi < 0, hi ^ 0x7FFFFFFF, hi).to(tl.float32, bitcast=True)
        token = vocab - 1 - (keys & 0xFFFFFFFF)
        at = row.to(tl.int64) * k + offs
        tl.store(values_ptr + at, value.to(tl.float64), mask=offs < k)
        tl.store(tokens_ptr + at, token, mask=offs < k)
    else:
        tl.store(keys_out + offs, keys)


@triton.jit
def _chunk_top_k_kernel(rows_ptr, keys_ptr, values_ptr, tokens_ptr, vocab, k, CHUNK: tl.constexpr,
                        K_PAD: tl.constexpr, FINAL: tl.constexpr):
    row, chunk = tl.program_id(0), tl.program_id(1)
    token = chunk * CHUNK + tl.arange(0, CHUNK)
    ok = token < vocab
    value = tl.load(rows_ptr + row.to(tl.int64) * vocab + token, mask=ok, other=0.0)
    keys = tl.where(ok, _pack(value, token, vocab), -(2 ** 63))
    out = keys_ptr + (row.to(tl.int64) * tl.num_programs(1) + chunk) * K_PAD
    _store_top(tl.topk(keys, K_PAD), tl.arange(0, K_PAD), out, values_ptr, tokens_ptr, row, vocab, k, FINAL)


@triton.jit
def _merge_top_k_kernel(keys_ptr, out_ptr, values_ptr, tokens_ptr, lists, vocab, k, GROUP: tl.constexpr,
                        K_PAD: tl.constexpr, FINAL: tl.constexpr):
    row, group = tl.program_id(0), tl.program_id(1)
    j = tl.arange(0, GROUP * K_PAD)
    ok = group * GROUP + j // K_PAD < lists
    keys = tl.load(keys_ptr + (row.to(tl.int64) * lists + group * GROUP) * K_PAD + j, mask=ok, other=-(2 ** 63))
    out = out_ptr + (row.to(tl.int64) * tl.num_programs(1) + group) * K_PAD
    _store_top(tl.topk(keys, K_PAD), tl.arange(0, K_PAD), out, values_ptr, tokens_ptr, row, vocab, k, FINAL)


# ---------------------------------------------------------------------------------------------------- selection
@triton.jit
def _ahead(score, index, j_score, j, j_ok):
    """For each entry (score, index): how many of the entries (j_score, j) where j_ok come first in the order
    (score desc, index asc), the stable descending sort's order. -> [len(score)] int32"""
    tie = (j_score[None, :] == score[:, None]) & (j[None, :] < index[:, None])
    first = ((j_score[None, :] > score[:, None]) | tie) & j_ok[None, :]
    return tl.sum(first.to(tl.int32), axis=1)


@triton.jit
def _cand_score(prev, q, cand_parent_ptr, cand_rank_ptr, c, ok, d):
    """Candidates c's scores: previous list[parent] (0 for depth 1's root) + this depth's log-prob[rank]."""
    parent = tl.load(cand_parent_ptr + c, mask=ok, other=0)
    rank = tl.load(cand_rank_ptr + c, mask=ok, other=0)
    base = tl.load(prev + parent, mask=ok & (tl.zeros_like(c) + d > 0), other=0.0)
    return base + tl.load(q + rank, mask=ok, other=float("-inf")), parent, rank


@triton.jit
def _level_kernel(top_logq_ptr, cand_parent_ptr, cand_rank_ptr, num_cand, level_score_ptr, level_int_ptr, d,
                  batch, depth, k, budget, BLOCK_C: tl.constexpr, BLOCK_J: tl.constexpr):
    """Depth d's list: the `budget` best candidates in key order, -inf past the candidates."""
    b, pc = tl.program_id(0), tl.program_id(1)
    row = b.to(tl.int64) * depth + d
    q = top_logq_ptr + row * k
    prev = level_score_ptr + (row - 1) * budget  # read only for d > 0
    c = pc * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = c < num_cand
    score, parent, rank = _cand_score(prev, q, cand_parent_ptr, cand_rank_ptr, c, c_ok, d)
    ahead = tl.zeros([BLOCK_C], dtype=tl.int32)
    for j0 in range(0, num_cand, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        j_ok = j < num_cand
        j_score, _, _ = _cand_score(prev, q, cand_parent_ptr, cand_rank_ptr, j, j_ok, d)
        ahead += _ahead(score, c, j_score, j, j_ok)
    keep = c_ok & (ahead < budget)
    out = level_score_ptr + row * budget
    ints = level_int_ptr + row * budget
    int_plane = batch * depth * budget
    tl.store(out + ahead, score, mask=keep)
    tl.store(ints + ahead, parent, mask=keep)
    tl.store(ints + int_plane + ahead, rank, mask=keep)
    if pc == 0:  # entries past the candidates (a vocabulary smaller than the budget)
        for i0 in range(num_cand, budget, BLOCK_C):
            i = i0 + tl.arange(0, BLOCK_C)
            tl.store(out + i, tl.full([BLOCK_C], float("-inf"), tl.float64), mask=i < budget)
            tl.store(ints + i, tl.zeros([BLOCK_C], tl.int32), mask=i < budget)
            tl.store(ints + int_plane + i, tl.zeros([BLOCK_C], tl.int32), mask=i < budget)


@triton.jit
def _order_kernel(level_score_ptr, node_of_ptr, n_nodes_ptr, total, budget, BLOCK_E: tl.constexpr,
                  BLOCK_J: tl.constexpr):
    """node_of[e] = 1 + the global pop rank of entry e (depth-major over the lists) if it is among the budget
    first, else 0; n_nodes starts at 1 (the root) for the nodes kernel to raise."""
    b, pe = tl.program_id(0), tl.program_id(1)
    scores = level_score_ptr + b.to(tl.int64) * total
    e = pe * BLOCK_E + tl.arange(0, BLOCK_E)
    e_ok = e < total
    score = tl.load(scores + e, mask=e_ok, other=float("-inf"))
    ahead = tl.zeros([BLOCK_E], dtype=tl.int32)
    for j0 in range(0, total, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        j_ok = j < total
        ahead += _ahead(score, e, tl.load(scores + j, mask=j_ok, other=float("-inf")), j, j_ok)
    tl.store(node_of_ptr + b.to(tl.int64) * total + e, tl.where(ahead < budget, ahead + 1, 0), mask=e_ok)
    if pe == 0:
        tl.store(n_nodes_ptr + b, 1)


@triton.jit
def _nodes_kernel(top_tokens_ptr, level_score_ptr, level_int_ptr, node_of_ptr, out_ptr, logws_ptr, n_nodes_ptr,
                  batch, depth, k, budget, BLOCK_E: tl.constexpr):
    pe = tl.program_id(1)
    _write_nodes(top_tokens_ptr, level_score_ptr, level_int_ptr, node_of_ptr, out_ptr, logws_ptr, n_nodes_ptr,
                 tl.program_id(0), pe * BLOCK_E + tl.arange(0, BLOCK_E), pe == 0, batch, depth, k, budget)


@triton.jit
def _write_nodes(top_tokens_ptr, level_score_ptr, level_int_ptr, node_of_ptr, out_ptr, logws_ptr, n_nodes_ptr, b,
                 e, write_root, batch, depth, k, budget):
    """Node slot node_of[e] from entries e (depth-major over the lists): its fields if its score is finite,
    padding otherwise; n_nodes raised to past the last real node; the root if write_root."""
    total = depth * budget
    n = budget + 1
    plane = batch * n  # out_ptr planes: tokens, parents, depths, ranks
    base = b.to(tl.int64) * total
    e_ok = e < total
    node = tl.load(node_of_ptr + base + e, mask=e_ok, other=0)
    owner = node > 0
    score = tl.load(level_score_ptr + base + e, mask=owner, other=float("-inf"))
    real = owner & (score > float("-inf"))
    level = e // budget
    parent_pos = tl.load(level_int_ptr + base + e, mask=real, other=0)
    rank = tl.load(level_int_ptr + batch * total + base + e, mask=real, other=0)
    parent = tl.load(node_of_ptr + base + (level - 1) * budget + parent_pos, mask=real & (level > 0), other=0)
    token = tl.load(top_tokens_ptr + (b.to(tl.int64) * depth + level) * k + rank, mask=real, other=-1)
    at = out_ptr + b * n + node
    tl.store(at, tl.where(real, token, -1), mask=owner)
    tl.store(at + plane, tl.where(real, parent, -1).to(tl.int64), mask=owner)
    tl.store(at + 2 * plane, tl.where(real, level + 1, -1).to(tl.int64), mask=owner)
    tl.store(at + 3 * plane, tl.where(real, rank, -1).to(tl.int64), mask=owner)
    tl.store(logws_ptr + b * n + node, tl.where(real, score, float("-inf")), mask=owner)
    tl.atomic_max(n_nodes_ptr + b, tl.max(tl.where(real, node + 1, 1), axis=0).to(tl.int64))
    if write_root:
        root = out_ptr + b * n
        tl.store(root, -1)
        tl.store(root + plane, -1)
        tl.store(root + 2 * plane, 0)
        tl.store(root + 3 * plane, -1)
        tl.store(logws_ptr + b * n, 0.0)


@triton.jit
def _small_select_kernel(top_logq_ptr, top_tokens_ptr, cand_parent_ptr, cand_rank_ptr, cand_score_ptr,
                         level_score_ptr, level_int_ptr, node_of_ptr, out_ptr, logws_ptr, n_nodes_ptr, batch, depth,
                         k, budget, num_cand, N_PAD: tl.constexpr, LOG_N: tl.constexpr, C_PAD: tl.constexpr,
                         D_PAD: tl.constexpr, T_PAD: tl.constexpr, CHUNK: tl.constexpr):
    """The whole selection of request b in one program, its phases ordered by barriers (the program's own stores
    are visible to all its threads after one), as select_from_top_k's launches order them:
      levels  depth 1's list is the K best themselves; each deeper list ranks every candidate against all (their
              scores staged in cand_score, compared CHUNK at a time);
      order   entry (d, i)'s pop rank is i plus, in every other list d', how many entries come before it: those
              scoring at least as high (d' < d) or higher (d' > d), a prefix of d''s list found by binary search;
      nodes   as _nodes_kernel, for all entries at once."""
    b = tl.program_id(0)
    rows = b.to(tl.int64) * depth
    int_plane = batch * depth * budget
    i = tl.arange(0, N_PAD)
    i_ok, real = i < budget, i < k
    tl.store(level_score_ptr + rows * budget + i,
             tl.load(top_logq_ptr + rows * k + i, mask=real, other=float("-inf")), mask=i_ok)
    tl.store(level_int_ptr + rows * budget + i, tl.zeros([N_PAD], tl.int32), mask=i_ok)
    tl.store(level_int_ptr + int_plane + rows * budget + i, tl.where(real, i, 0), mask=i_ok)
    c = tl.arange(0, C_PAD)
    c_ok = c < num_cand  # >= budget: every list position below the budget gets one candidate
    parent = tl.load(cand_parent_ptr + c, mask=c_ok, other=0)
    rank = tl.load(cand_rank_ptr + c, mask=c_ok, other=0)
    staged = cand_score_ptr + b.to(tl.int64) * C_PAD
    for d in range(1, depth):
        tl.debug_barrier()  # depth d - 1's list stored; the previous depth's staged scores read
        row = rows + d
        score = (tl.load(level_score_ptr + (row - 1) * budget + parent, mask=c_ok, other=0.0)
                 + tl.load(top_logq_ptr + row * k + rank, mask=c_ok, other=float("-inf")))
        tl.store(staged + c, score, mask=c_ok)
        tl.debug_barrier()
        ahead = tl.zeros([C_PAD], dtype=tl.int32)
        for chunk in tl.static_range(C_PAD // CHUNK):  # unrolled: every chunk's load in flight at once
            j = chunk * CHUNK + tl.arange(0, CHUNK)
            j_ok = j < num_cand
            ahead += _ahead(score, c, tl.load(staged + j, mask=j_ok, other=float("-inf")), j, j_ok)
        keep = c_ok & (ahead < budget)
        tl.store(level_score_ptr + row * budget + ahead, score, mask=keep)
        tl.store(level_int_ptr + row * budget + ahead, parent, mask=keep)
        tl.store(level_int_ptr + int_plane + row * budget + ahead, rank, mask=keep)
    tl.debug_barrier()

    total = depth * budget
    lists = level_score_ptr + rows * budget  # [depth, budget], each in pop order (-inf last)
    e = tl.arange(0, T_PAD)
    e_ok = e < total
    score = tl.load(lists + e, mask=e_ok, other=float("-inf"))
    own = e // budget
    other = tl.arange(0, D_PAD)[None, :]  # [1, D_PAD]
    earlier = other < own[:, None]  # [T_PAD, D_PAD]: ties in an earlier list come first
    before = tl.zeros([T_PAD, D_PAD], dtype=tl.int32)  # entries of list d' before entry e (a prefix of d')
    for t in tl.static_range(LOG_N + 1):
        step = N_PAD >> t
        probe = before + step - 1
        ok = (probe < budget) & (other < depth) & e_ok[:, None]
        value = tl.load(lists + other * budget + probe, mask=ok, other=float("-inf"))
        first = ok & ((value > score[:, None]) | (earlier & (value == score[:, None])))
        before = tl.where(first, before + step, before)
    pop = tl.sum(tl.where(other == own[:, None], 0, before), axis=1) + e % budget
    tl.store(node_of_ptr + b.to(tl.int64) * total + e, tl.where(pop < budget, pop + 1, 0), mask=e_ok)
    tl.store(n_nodes_ptr + b, 1)
    tl.debug_barrier()
    _write_nodes(top_tokens_ptr, level_score_ptr, level_int_ptr, node_of_ptr, out_ptr, logws_ptr, n_nodes_ptr, b,
                 e, True, batch, depth, k, budget)
