"""DDTree tree build for a whole batch on the device, no host round trip: a Triton selection kernel beside its torch
reference (select_from_top_k / select_from_top_k_ref).

Produces exactly `ddtree.build_tree`'s trees (same nodes, order, tie rules and node_logws). Why this works: the
heap pops candidates in increasing order of the key (-score, depth, parent pop index, rank), because every pushed
candidate has a larger key than the one that pushed it (a child scores no more than its parent and is one deeper;
a next sibling scores no more and has a larger rank). So the tree is the first `budget` paths in that order.
Among the nodes of one depth, pop order is their own key order, so depth by depth:
  depth d candidates = (the N best of depth d-1) x (top-K tokens of depth d), generated parent-major, rank-minor;
  a stable sort by descending score orders them by (-score, parent position, rank); keep the N best
(a node among the N best overall is among the N best of its depth). A stable sort of all depths' lists, concatenated
depth-major, by descending score then gives the global pop order; the first N with a finite score are the nodes.

Cost: one full-vocabulary sort per depth, then the reference sorts N * K candidates per depth (K = min(N, vocab)),
while the kernel ranks only the ~N ln N candidates that can be among the N best (one launch for the batch).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ddtree._checks import check_int, check_logits, check_temperature
from ddtree.tree import DraftTree


KERNEL_MAX_BUDGET = 128  # the kernel's work grows as (budget * ln budget)^2 per depth; the torch path beyond


class BatchTrees(NamedTuple):
    tokens: torch.Tensor  # [B, N+1] long; root -1, padding -1
    parents: torch.Tensor  # [B, N+1] long; root -1, padding -1
    depths: torch.Tensor  # [B, N+1] long; padding -1
    ranks: torch.Tensor  # [B, N+1] long; root -1, padding -1
    node_logws: torch.Tensor  # [B, N+1] float64; root 0, padding -inf
    n_nodes: torch.Tensor  # [B] long; real nodes (root included), the rest of each row is padding


def build_trees_device(draft_logits: torch.Tensor, budget: int, *, draft_temperature: float = 1.0) -> BatchTrees:
    """`ddtree.build_trees` for `draft_logits  # [B, depth, V]`, on draft_logits' device, padded to budget + 1."""
    check_logits("draft_logits", draft_logits, shape="[batch, depth, vocab]")
    budget = check_int("budget", budget)
    draft_temperature = check_temperature("draft_temperature", draft_temperature, allow_zero=False)
    return select_trees(torch.log_softmax(draft_logits.float() / draft_temperature, dim=-1), budget)


def select_trees(logq: torch.Tensor, budget: int) -> BatchTrees:
    """The selection of build_trees_device from draft log-probs `logq  # [B, depth, V]`, without input checks and
    without host synchronisation (CUDA-graph capturable): the Triton kernel on CUDA for budgets up to
    KERNEL_MAX_BUDGET, the torch reference otherwise."""
    k = min(budget, logq.shape[-1])
    top_logq, top_tokens = torch.sort(logq, dim=-1, descending=True, stable=True)  # ties by lower token id
    top_logq, top_tokens = top_logq[..., :k].double(), top_tokens[..., :k]  # [B, depth, K]
    if logq.is_cuda and 1 <= budget <= KERNEL_MAX_BUDGET and logq.shape[1] > 0:
        return select_from_top_k(top_logq, top_tokens, budget)
    return select_from_top_k_ref(top_logq, top_tokens, budget)


def select_from_top_k_ref(top_logq: torch.Tensor, top_tokens: torch.Tensor, budget: int) -> BatchTrees:
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
        return BatchTrees(tokens, parents, depths, ranks, logws, torch.ones(batch, dtype=torch.long, device=device))

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
    return BatchTrees(tokens, parents, depths, ranks, logws, 1 + finite.sum(1))


def to_draft_trees(trees: BatchTrees) -> list[DraftTree]:
    """The per-request ddtree DraftTrees (on the CPU) of a BatchTrees."""
    out = []
    for b, n in enumerate(trees.n_nodes.tolist()):
        fields = [x[b, :n].cpu() for x in trees[:5]]
        out.append(DraftTree(*fields))
    return out


def select_from_top_k(top_logq: torch.Tensor, top_tokens: torch.Tensor, budget: int) -> BatchTrees:
    """select_from_top_k_ref in one Triton launch (one program per request), same trees bit for bit.

    Per depth, candidate (p, r) = (p-th entry of the previous depth's list, r-th best token) can be among the
    budget best only if (p + 1)(r + 1) <= budget: every (p', r') <= (p, r) scores at least as high and comes first
    on ties (lower parent position, then rank). The kernel ranks just those candidates by (score desc, p*K + r asc)
    with exact float64 comparisons, and the global pop order ranks all depths' entries by (score desc, depth-major
    position asc), as the reference's stable sorts do.
    """
    batch, depth, k = top_logq.shape
    device = top_logq.device
    cand_parent, cand_rank = _candidates(budget, k, str(device))
    n = budget + 1
    out_long = torch.empty(4, batch, n, dtype=torch.long, device=device)  # tokens, parents, depths, ranks
    logws = torch.empty(batch, n, dtype=torch.float64, device=device)
    n_nodes = torch.empty(batch, dtype=torch.long, device=device)
    level_score = torch.empty(batch, depth, budget, dtype=torch.float64, device=device)
    level_int = torch.empty(3, batch, depth, budget, dtype=torch.int32, device=device)  # parent pos, rank, node
    block_c = triton.next_power_of_2(len(cand_parent))
    block_e = min(1024, triton.next_power_of_2(depth * budget))
    scratch = torch.empty(batch, block_c, dtype=torch.float64, device=device)  # one depth's candidate scores
    _select_kernel[(batch,)](
        top_logq.contiguous(), top_tokens.contiguous(), cand_parent, cand_rank, len(cand_parent),
        level_score, level_int, scratch, out_long, logws, n_nodes, batch, depth, k, budget,
        BLOCK_C=block_c, BLOCK_J=max(8, 16384 // block_c), BLOCK_N=triton.next_power_of_2(budget),
        BLOCK_E=block_e, BLOCK_J2=max(8, 16384 // block_e), num_warps=8)
    return BatchTrees(*out_long, logws, n_nodes)


@lru_cache(maxsize=64)
def _candidates(budget: int, k: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(parent positions, ranks)  # [C] int32: the (p, r) with p < budget, r < K and (p + 1)(r + 1) <= budget."""
    pairs = [(p, r) for p in range(budget) for r in range(min(k, budget // (p + 1)))]
    table = torch.tensor(pairs, dtype=torch.int32).T.contiguous().to(device)
    return table[0], table[1]


@triton.jit
def _count_ahead(score, index, scores_ptr, count, BLOCK_J: tl.constexpr):
    """For each entry (score, index): how many of the `count` entries at scores_ptr come first in the order
    (score desc, index asc), the stable descending sort's order. -> [len(score)] int32"""
    ahead = tl.zeros(score.shape, dtype=tl.int32)
    for j0 in range(0, count, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        j_ok = j < count
        j_score = tl.load(scores_ptr + j, mask=j_ok, other=float("-inf"))
        tie = (j_score[None, :] == score[:, None]) & (j[None, :] < index[:, None])
        first = (j_score[None, :] > score[:, None]) | tie
        ahead += tl.sum((first & j_ok[None, :]).to(tl.int32), axis=1)
    return ahead


@triton.jit
def _select_kernel(top_logq_ptr, top_tokens_ptr, cand_parent_ptr, cand_rank_ptr, num_cand,
                   level_score_ptr, level_int_ptr, scratch_ptr, out_ptr, logws_ptr, n_nodes_ptr,
                   batch, depth, k, budget, BLOCK_C: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_E: tl.constexpr, BLOCK_J2: tl.constexpr):
    b = tl.program_id(0)
    n = budget + 1
    plane = batch * n  # out_ptr planes: tokens, parents, depths, ranks
    int_plane = batch * depth * budget  # level_int planes: parent position, rank, node index
    q_row = top_logq_ptr + b.to(tl.int64) * depth * k
    levels = level_score_ptr + b.to(tl.int64) * depth * budget
    ints = level_int_ptr + b.to(tl.int64) * depth * budget
    slot = tl.arange(0, BLOCK_N)
    in_list = slot < budget

    # padding everywhere, then the root in slot 0
    out = out_ptr + b * n + 1 + slot
    for plane_id in range(4):
        tl.store(out + plane_id * plane, tl.full([BLOCK_N], -1, tl.int64), mask=in_list)
    tl.store(logws_ptr + b * n + 1 + slot, tl.full([BLOCK_N], float("-inf"), tl.float64), mask=in_list)
    root = out_ptr + b * n
    tl.store(root, -1)
    tl.store(root + plane, -1)
    tl.store(root + 2 * plane, 0)
    tl.store(root + 3 * plane, -1)
    tl.store(logws_ptr + b * n, 0.0)

    # depth 1: the K best tokens (slots past K hold -inf and are never selected)
    first = tl.load(q_row + slot, mask=slot < k, other=float("-inf"))
    tl.store(levels + slot, first, mask=in_list)
    tl.store(ints + slot, tl.full([BLOCK_N], -1, tl.int32), mask=in_list)
    tl.store(ints + int_plane + slot, slot, mask=in_list)
    tl.debug_barrier()

    # deeper lists: rank the pruned candidates (enumerated in key order p * K + r), keep the budget best in order
    c = tl.arange(0, BLOCK_C)
    c_ok = c < num_cand
    c_parent = tl.load(cand_parent_ptr + c, mask=c_ok, other=0)
    c_rank = tl.load(cand_rank_ptr + c, mask=c_ok, other=0)
    scratch = scratch_ptr + b.to(tl.int64) * BLOCK_C
    for d in range(1, depth):
        score = tl.load(levels + (d - 1) * budget + c_parent, mask=c_ok, other=0.0) + \
            tl.load(q_row + d * k + c_rank, mask=c_ok, other=0.0)
        tl.store(scratch + c, score)
        tl.debug_barrier()
        before = _count_ahead(score, c, scratch, num_cand, BLOCK_J)
        keep = c_ok & (before < budget)
        tl.store(levels + d * budget + before, score, mask=keep)
        tl.store(ints + d * budget + before, c_parent, mask=keep)
        tl.store(ints + int_plane + d * budget + before, c_rank, mask=keep)
        tl.debug_barrier()

    # global pop order over the depth-major entries e = d * budget + i: (score desc, e asc); the first `budget`
    # finite ones are nodes 1..budget
    total = depth * budget
    node_of = ints + 2 * int_plane
    count = 0
    for e0 in range(0, total, BLOCK_E):
        e = e0 + tl.arange(0, BLOCK_E)
        e_ok = e < total
        score = tl.load(levels + e, mask=e_ok, other=float("-inf"))
        before = _count_ahead(score, e, levels, total, BLOCK_J2)
        chosen = e_ok & (before < budget) & (score > float("-inf"))
        tl.store(node_of + e, tl.where(chosen, before + 1, -1), mask=e_ok)
        count += tl.sum(chosen.to(tl.int32), axis=0)
    tl.debug_barrier()
    for e0 in range(0, total, BLOCK_E):
        e = e0 + tl.arange(0, BLOCK_E)
        e_ok = e < total
        node = tl.load(node_of + e, mask=e_ok, other=-1)
        chosen = node > 0
        level = e // budget
        parent_pos = tl.load(ints + e, mask=chosen, other=0)
        parent_node = tl.load(node_of + (level - 1) * budget + parent_pos, mask=chosen & (level > 0), other=0)
        token_rank = tl.load(ints + int_plane + e, mask=chosen, other=0)
        token = tl.load(top_tokens_ptr + b.to(tl.int64) * depth * k + level * k + token_rank, mask=chosen, other=-1)
        at = out_ptr + b * n + node
        tl.store(at, token, mask=chosen)
        tl.store(at + plane, parent_node.to(tl.int64), mask=chosen)
        tl.store(at + 2 * plane, (level + 1).to(tl.int64), mask=chosen)
        tl.store(at + 3 * plane, token_rank.to(tl.int64), mask=chosen)
        tl.store(logws_ptr + b * n + node, tl.load(levels + e, mask=chosen, other=0.0), mask=chosen)
    tl.store(n_nodes_ptr + b, count + 1)
