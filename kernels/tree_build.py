"""DDTree tree build for a whole batch on the device, plain torch ops (no Triton), no host round trip.

Produces exactly `ddtree.build_tree`'s trees (same nodes, order, tie rules and node_logws). Why this works: the
heap pops candidates in increasing order of the key (-score, depth, parent pop index, rank), because every pushed
candidate has a larger key than the one that pushed it (a child scores no more than its parent and is one deeper;
a next sibling scores no more and has a larger rank). So the tree is the first `budget` paths in that order.
Among the nodes of one depth, pop order is their own key order, so depth by depth:
  depth d candidates = (the N best of depth d-1) x (top-K tokens of depth d), generated parent-major, rank-minor;
  a stable sort by descending score orders them by (-score, parent position, rank); keep the N best
(a node among the N best overall is among the N best of its depth). A stable sort of all depths' lists, concatenated
depth-major, by descending score then gives the global pop order; the first N with a finite score are the nodes.

Cost: depth sorts of N * K candidates per request (K = min(N, vocab)) plus one full-vocabulary sort per depth.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ddtree._checks import check_int, check_logits, check_temperature
from ddtree.tree import DraftTree


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
    """The selection of build_trees_device from draft log-probs `logq  # [B, depth, V]`, without input checks:
    no host synchronisation at all (CUDA-graph capturable)."""
    batch, depth, vocab = logq.shape
    device = logq.device
    k = min(budget, vocab)
    top_logq, top_tokens = torch.sort(logq, dim=-1, descending=True, stable=True)  # ties by lower token id
    top_logq, top_tokens = top_logq[..., :k].double(), top_tokens[..., :k]  # [B, depth, K]

    levels = []  # per depth: (score, parent position in the previous depth's list, rank), each [B, n_d]
    if k > 0 and depth > 0:
        score, order = torch.sort(top_logq[:, 0], dim=-1, descending=True, stable=True)
        levels.append((score[:, :budget], torch.full_like(order[:, :budget], -1), order[:, :budget]))
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
