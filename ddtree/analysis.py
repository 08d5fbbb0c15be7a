"""Why a tree wins or loses, from one trace and no model: counterfactual budgets, depth x rank statistics and draft
calibration.

Greedy verification accepts the longest prefix of the target's own continuation that is a path of the tree; the
exact sampled walk does the same with the target's sampled continuation. The continuation from round r's root is
the tokens committed by rounds r, r+1, ... . DDTree's heap pops nodes in decreasing path score (ties as in
ddtree.tree.build_tree), so the budget needed to accept k tokens is the number of pops up to and including the node
of the continuation's k-token prefix. Replaying the heap from a round's recorded draft ranks gives that number for
every k, hence the acceptance DDTree would have reached at every budget 1..1024 in that very round.

What is exact, and what is not:
- a DDTree round's own tree is the heap's first pops, so every budget up to the round's budget is exact;
- beyond, the heap is replayed from the ranks the record keeps (its top-K per depth, extended by the ranks its tree
  holds). It stays exact while no rank beyond those kept could pop first (`exact_budget`: a token beyond the kept
  ranks has a log-prob at most the last kept one's). Past that budget the value is DDTree's acceptance on the kept
  ranks alone: an estimate (an unkept token could pop before the target's node, or be the target's token);
  `BudgetCurve.lower` stays a true lower bound. Record more ranks per depth, or run at a larger budget, to push
  `exact_budget` up;
- the last rounds of a trace may have fewer continuation tokens after them than the tree is deep (`truncated`):
  where the tree accepts all of them, the acceptance is a lower bound;
- the equality is per round, at that round's state: a real run at another budget commits other spans per round, so
  its later rounds start from other contexts (bench/bench_counterfactual.py measures the difference);
- with sampled verification the counterfactual has the real acceptance's distribution (the committed tokens are
  target samples), while a real re-run draws other uniforms.

`python -m ddtree.analysis TRACE.json` prints the per-budget table of a trace saved by ddtree.save_trace.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass

import torch

from ddtree._checks import check_int, check_logits
from ddtree.budget import accepted_within
from ddtree.record import ZERO_LOGPROB, RequestRound, RoundRecord, load_trace
from ddtree.settings import Method
from ddtree.tree import DraftTree, best_first

MAX_BUDGET = 1024
DRAFTED = ("ddtree", "dflash")


# ----------------------------------------------------------------------------------------------- draft ranks
@dataclass(frozen=True)
class DraftRanks:
    """A round's draft tokens by rank as far as they are known, best first per depth (build_tree's order: log-prob,
    then lower token id)."""
    tokens: list[list[int]]  # [depth][R_d]
    logq: list[list[float]]  # [depth][R_d] draft log-probs, -inf for probability 0
    complete: list[bool]  # [depth] True when no token beyond the R_d listed has positive probability

    @property
    def depth(self) -> int:
        return len(self.tokens)


def ranks_from_logits(draft_logits: torch.Tensor, *, keep: int = MAX_BUDGET) -> DraftRanks:
    """The best `keep` ranks per depth of `draft_logits  # [depth, vocab]` (ranks past `keep` cannot pop within
    `keep` pops, so a budget up to `keep` is exact)."""
    check_logits("draft_logits", draft_logits, shape="[depth, vocab]")
    keep = check_int("keep", keep, minimum=1)
    logq = torch.log_softmax(draft_logits.float(), dim=-1)
    values, tokens = torch.sort(logq, dim=-1, descending=True, stable=True)  # equal log-probs: lower id first
    k = min(keep, logq.shape[-1])
    values = values[:, :k].double()
    complete = [k == logq.shape[-1] or v == -math.inf for v in values[:, -1].tolist()]
    return DraftRanks(tokens[:, :k].tolist(), values.tolist(), complete)


def ranks_from_record(req: RequestRound, *, vocab_size: int | None = None, use_tree: bool = True) -> DraftRanks:
    """The ranks a record keeps: its draft top-K per depth (reordered by build_tree's tie rule; a group of equal
    log-probs at the cut is dropped, since the cut may have kept other ids of the group than the lowest), extended
    by the ranks its tree holds (`use_tree`; log-probs from the node log-weights). `vocab_size` tells when the
    top-K holds the whole vocabulary."""
    tree_tokens, tree_logq = _tree_ranks(req.tree, len(req.draft_top_tokens)) if use_tree else ({}, {})
    tokens, logq, complete = [], [], []
    for d, (row_t, row_l) in enumerate(zip(req.draft_top_tokens, req.draft_top_logprobs)):
        pairs = sorted(zip(row_l, row_t), key=lambda x: (-x[0], x[1]))
        lq = [-math.inf if v <= ZERO_LOGPROB else float(v) for v, _ in pairs]
        tk = [t for _, t in pairs]
        done = (vocab_size is not None and len(tk) >= vocab_size) or lq[-1] == -math.inf
        if not done:
            cut = lq[-1]
            while lq and lq[-1] == cut:
                lq.pop()
                tk.pop()
        t_tk, t_lq = tree_tokens.get(d, []), tree_logq.get(d, [])
        if t_tk and tk[:len(t_tk)] != t_tk[:len(tk)]:
            tk, lq, done = t_tk, t_lq, False  # the top-K disagrees with the tree on ties: trust the tree alone
        elif len(t_tk) > len(tk):
            tk, lq = t_tk, lq + t_lq[len(lq):]
        tokens.append(tk)
        logq.append(lq)
        complete.append(done)
    return DraftRanks(tokens, logq, complete)


def _tree_ranks(tree: DraftTree, depth: int) -> tuple[dict[int, list[int]], dict[int, list[float]]]:
    """Per depth index (0 = depth 1): the tokens of ranks 0..m the tree holds and their draft log-probs (node
    log-weight minus the parent's, rounded to float32 as the drafter's log-probs are)."""
    if tree.max_depth > depth:
        raise ValueError(f"the tree is {tree.max_depth} deep but draft_top_tokens has {depth} depths")
    logw = tree.node_logws
    lq = (logw[1:] - logw[tree.parents[1:].clamp_min(0)]).float().double().tolist()
    seen: dict[tuple[int, int], tuple[int, float]] = {}
    for i, (d, r, t) in enumerate(zip(tree.depths.tolist()[1:], tree.ranks.tolist()[1:], tree.tokens.tolist()[1:])):
        if seen.setdefault((d - 1, r), (t, lq[i]))[0] != t:
            raise ValueError(f"the tree holds two tokens at depth {d}, rank {r} (node {i + 1} and another)")
    tokens: dict[int, list[int]] = {}
    logq: dict[int, list[float]] = {}
    for (d, r), (t, v) in sorted(seen.items()):
        if r != len(tokens.setdefault(d, [])):
            raise ValueError(f"the tree skips rank {len(tokens[d])} at depth {d + 1}")
        tokens[d].append(t)
        logq.setdefault(d, []).append(v)
    return tokens, logq


# ----------------------------------------------------------------------------------------------- the heap
def replay_heap(ranks: DraftRanks, max_pops: int) -> tuple[DraftTree, int]:
    """DDTree's selection (ddtree.tree.best_first, build_tree's) replayed on the known ranks: `(tree of the first
    up-to-max_pops pops, exact)`; node i is the i-th pop, the root token is -1. The first `exact` pops are certainly
    DDTree's; after that a rank beyond those known could pop first."""
    return best_first(ranks.logq, ranks.tokens, max_pops, ranks.complete)


def prefix_nodes(tree: DraftTree, continuation: list[int]) -> list[int]:
    """Node index of each prefix of `continuation` that is a path of `tree` (the longest such prefix): for a
    replayed heap, node i is the i-th pop, so entry k is the budget needed to accept k + 1 tokens."""
    child = {(p, t): i for i, (p, t) in enumerate(zip(tree.parents.tolist(), tree.tokens.tolist())) if i}
    nodes, node = [], 0
    for token in continuation:
        node = child.get((node, token))
        if node is None:
            break
        nodes.append(node)
    return nodes


def acceptance_by_budget(nodes: list[int], max_budget: int) -> torch.Tensor:
    """`acceptance  # [max_budget]` long: 1 + the prefix nodes within each budget 1..max_budget (the smaller trees'
    walks are the walk cut there: ddtree.budget.accepted_within)."""
    path = torch.tensor([[0, *nodes]], dtype=torch.long)  # [1, 1 + len(nodes)] root first
    return 1 + accepted_within(path, torch.arange(1, max_budget + 1))[0]


def budget_acceptance(draft_logits: torch.Tensor, continuation: list[int], *,
                      max_budget: int = MAX_BUDGET) -> torch.Tensor:
    """`acceptance  # [max_budget]`: DDTree's acceptance length at budgets 1..max_budget for `draft_logits  #
    [depth, vocab]` when the target continues with `continuation` (greedy walk; exact, no ranks unknown)."""
    max_budget = check_budget("max_budget", max_budget)
    tree, _ = replay_heap(ranks_from_logits(draft_logits, keep=max_budget), max_budget)
    return acceptance_by_budget(prefix_nodes(tree, list(continuation)), max_budget)


# ----------------------------------------------------------------------------------------------- per round
@dataclass(frozen=True)
class RoundCounterfactual:
    round: int  # RoundRecord.index
    request: int
    method: str  # "ddtree" | "dflash"
    budget: int  # the budget the request's tree was built under (RequestRound.budget)
    context_len: int
    real_acceptance: int  # acceptance length the round reached
    continuation: list[int]  # the target's tokens after the root (up to the draft depth)
    truncated: bool  # the trace ends before `depth` tokens followed this root
    depth: int  # draft depth
    kept: list[int]  # [depth] draft ranks known per depth
    ranks: list[int | None]  # [len(continuation)] draft rank of the target's token per depth; None: not kept
    needed: list[int]  # budget needed to accept k + 1 tokens (entry k), as far as reachable within max_budget
    acceptance: torch.Tensor  # [max_budget] long: acceptance length at budget b is acceptance[b - 1]
    exact: torch.Tensor  # [max_budget] bool: the value is exact (not an estimate, not a truncated lower bound)
    exact_budget: int  # budgets up to this are replayed exactly
    chain_acceptance: int  # the DFlash chain (rank 0 at every depth) on the same drafts
    min_budget: int | None  # smallest budget accepting what the round accepted (None: beyond max_budget; an
    # estimate when past exact_budget, which only a 'dflash' round can be)

    def at(self, budget: int) -> int:
        """Acceptance length at `budget` (1..max_budget)."""
        return int(self.acceptance[check_budget("budget", budget, self.acceptance.numel()) - 1])


def counterfactuals(records: list[RoundRecord], *, request: int | None = None, rounds=None,
                    max_budget: int = MAX_BUDGET, vocab_size: int | None = None,
                    use_tree: bool = True) -> list[RoundCounterfactual]:
    """One RoundCounterfactual per drafted round (method "ddtree" or "dflash") and request. `records`: consecutive
    rounds of one session (the continuations come from them). `request`: one request, or None for all; `rounds`:
    RoundRecord indices to analyse (default: every drafted round); `use_tree=False` ignores the recorded trees and
    replays from the draft top-K alone."""
    records = check_records(records)
    max_budget = check_budget("max_budget", max_budget)
    if vocab_size is not None:
        vocab_size = check_int("vocab_size", vocab_size, minimum=1)
    picked = _pick_rounds(records, rounds)
    out = []
    for b in _requests(records, request):
        stream, offsets = continuation_stream(records, b)
        for i in picked:
            rec = records[i]
            req = rec.requests[b]
            if req is None:  # request b had finished before this round
                continue
            try:
                out.append(_round(rec, req, b, stream[offsets[i]:], max_budget, vocab_size, use_tree))
            except ValueError as e:
                raise ValueError(f"round {rec.index}, request {b}: {e}") from None
    return out


def _round(rec: RoundRecord, req: RequestRound, b: int, stream: list[int], max_budget: int, vocab_size,
           use_tree: bool) -> RoundCounterfactual:
    ranks = ranks_from_record(req, vocab_size=vocab_size, use_tree=use_tree)
    depth = ranks.depth
    continuation = stream[:depth]
    tree, exact_budget = replay_heap(ranks, max_budget)
    if use_tree and rec.method == Method.DDTREE:
        n = req.tree.n_nodes
        shown = min(n, tree.n_nodes)
        if not (torch.equal(tree.tokens[1:shown], req.tree.tokens[1:shown]) and
                torch.equal(tree.parents[:shown], req.tree.parents[:shown])):
            raise ValueError("replaying DDTree's heap from the record's draft ranks does not give the recorded tree")
        # the recorded tree proves its pops; a tree smaller than its own budget (a batch's requests may have their
        # own) means no more paths have probability > 0
        exact_budget = max(exact_budget, max_budget if n - 1 < req.budget else min(n - 1, max_budget))
    nodes = prefix_nodes(tree, continuation)
    acceptance = acceptance_by_budget(nodes, max_budget)
    truncated = len(continuation) < depth
    exact = torch.arange(1, max_budget + 1) <= exact_budget
    if truncated:
        exact &= acceptance != len(continuation) + 1
    index = [{t: r for r, t in enumerate(row)} for row in ranks.tokens]
    token_ranks = [index[d].get(t) for d, t in enumerate(continuation)]
    chain = next((k for k, r in enumerate(token_ranks) if r != 0), len(token_ranks)) + 1
    accepted = req.acceptance_length - 1
    return RoundCounterfactual(
        round=rec.index, request=b, method=rec.method, budget=req.budget, context_len=req.context_len,
        real_acceptance=req.acceptance_length, continuation=continuation, truncated=truncated, depth=depth,
        kept=[len(row) for row in ranks.tokens], ranks=token_ranks, needed=nodes, acceptance=acceptance,
        exact=exact, exact_budget=exact_budget, chain_acceptance=chain,
        min_budget=1 if accepted == 0 else (nodes[accepted - 1] if accepted <= len(nodes) else None))


# ----------------------------------------------------------------------------------------------- over a trace
@dataclass(frozen=True)
class BudgetCurve:
    budgets: list[int]
    mean: list[float]  # mean acceptance length over the rounds at each budget (estimates included)
    lower: list[float]  # mean of a lower bound per round (the exact part of its curve)
    exact_rounds: list[int]  # rounds whose value is exact at each budget
    rounds: int
    chain: float  # mean acceptance of the DFlash chain on the same drafts
    real: float  # mean acceptance the rounds really reached
    real_budgets: list[int]  # budgets the DDTree rounds ran at
    truncated: int  # rounds with fewer continuation tokens than the draft depth


def budget_curve(cfs: list[RoundCounterfactual], budgets=None) -> BudgetCurve:
    """Means over rounds at `budgets` (default: every budget 1..max_budget of the counterfactuals)."""
    cfs = _check_cfs(cfs)
    max_budget = min(cf.acceptance.numel() for cf in cfs)
    budgets = list(range(1, max_budget + 1)) if budgets is None else [
        check_budget("budgets entry", x, max_budget) for x in budgets]
    if not budgets:
        raise ValueError("budgets must be non-empty")
    at = torch.tensor(budgets) - 1
    acc = torch.stack([cf.acceptance[:max_budget] for cf in cfs]).double()  # [rounds, max_budget]
    exact = torch.stack([cf.exact[:max_budget] for cf in cfs])
    certain = torch.tensor([cf.exact_budget for cf in cfs])[:, None].clamp(max=max_budget)
    lower_at = torch.minimum(at[None, :], certain - 1)  # [rounds, budgets]; -1 where nothing is certain
    lower = torch.where(lower_at >= 0, acc.gather(1, lower_at.clamp_min(0)), torch.ones_like(lower_at).double())
    return BudgetCurve(
        budgets=budgets, mean=acc[:, at].mean(0).tolist(), lower=lower.mean(0).tolist(),
        exact_rounds=exact[:, at].sum(0).tolist(), rounds=len(cfs),
        chain=sum(cf.chain_acceptance for cf in cfs) / len(cfs), real=sum(cf.real_acceptance for cf in cfs) / len(cfs),
        real_budgets=sorted({cf.budget for cf in cfs if cf.method == Method.DDTREE}),
        truncated=sum(cf.truncated for cf in cfs))


def depth_reach(cfs: list[RoundCounterfactual], budget: int | None = None) -> list[float]:
    """[depth] fraction of rounds whose walk accepted at least d tokens (d = 1..depth): in the real run
    (budget None) or, counterfactually, at `budget`."""
    cfs = _check_cfs(cfs)
    depth = max(cf.depth for cf in cfs)
    if budget is None:
        accepted = torch.tensor([cf.real_acceptance - 1 for cf in cfs])
    else:
        accepted = torch.tensor([cf.at(budget) - 1 for cf in cfs])
    return (accepted[:, None] >= torch.arange(1, depth + 1)[None, :]).double().mean(0).tolist()


@dataclass(frozen=True)
class RankDepth:
    counts: torch.Tensor  # [depth, max_rank + 2] long: target token's draft rank 0..max_rank-1, >= max_rank, not kept
    max_rank: int
    rounds: int

    @property
    def labels(self) -> list[str]:
        return [str(r) for r in range(self.max_rank)] + [f">={self.max_rank}", "not kept"]


def rank_depth(cfs: list[RoundCounterfactual], *, max_rank: int = 16) -> RankDepth:
    """Histogram of the target token's draft rank per depth over every continuation token of every round."""
    cfs = _check_cfs(cfs)
    max_rank = check_int("max_rank", max_rank, minimum=1)
    counts = torch.zeros(max(cf.depth for cf in cfs), max_rank + 2, dtype=torch.long)
    for cf in cfs:
        for d, r in enumerate(cf.ranks):
            counts[d, max_rank + 1 if r is None else min(r, max_rank)] += 1
    return RankDepth(counts, max_rank, len(cfs))


@dataclass(frozen=True)
class Calibration:
    edges: list[float]  # [bins + 1] draft-probability bin edges
    mean_prob: list[float]  # [bins] mean draft probability of the nodes in each bin (nan when empty)
    frequency: list[float]  # [bins] fraction of them the target agreed with (nan when empty)
    counts: list[int]  # [bins]
    ece: float  # expected calibration error: sum over bins of counts/n * |frequency - mean_prob|
    n: int


def calibration_points(records: list[RoundRecord], *, request: int | None = None,
                       rounds=None) -> tuple[torch.Tensor, torch.Tensor]:
    """`(probs  # [n] float64, agreed  # [n] bool)`: every tree node whose parent the walk reached, with its draft
    probability q_depth(token) and whether the target's token there was this node's (it was accepted)."""
    records = check_records(records, consecutive=False)
    probs, agreed = [], []
    for i in _pick_rounds(records, rounds):
        for b in _requests(records, request):
            req = records[i].requests[b]
            if req is None:
                continue
            tree, accepted = req.tree, set(req.accepted)
            for node in req.accepted:
                children = torch.tensor(tree.children(node), dtype=torch.long)
                probs.append((tree.node_logws[children] - tree.node_logws[node]).exp())
                agreed.append(torch.tensor([c in accepted for c in children.tolist()], dtype=torch.bool))
    return torch.cat(probs), torch.cat(agreed)


def reliability(probs: torch.Tensor, agreed: torch.Tensor, *, bins: int = 10) -> Calibration:
    """Reliability curve and expected calibration error of `probs  # [n]` against outcomes `agreed  # [n]`, in
    `bins` equal-width probability bins."""
    bins = check_int("bins", bins, minimum=1)
    if probs.ndim != 1 or probs.shape != agreed.shape or probs.numel() == 0:
        raise ValueError(f"probs and agreed must be non-empty 1-d tensors of one length, got {tuple(probs.shape)} "
                         f"and {tuple(agreed.shape)}")
    probs, agreed = probs.double(), agreed.double()
    which = (probs * bins).long().clamp(0, bins - 1)
    counts = torch.bincount(which, minlength=bins)
    sum_p = torch.bincount(which, probs, minlength=bins)
    sum_a = torch.bincount(which, agreed, minlength=bins)
    mean_p, freq = sum_p / counts, sum_a / counts  # nan where empty
    ece = float(((sum_a - sum_p).abs()).sum() / probs.numel())
    return Calibration(edges=torch.linspace(0, 1, bins + 1).tolist(), mean_prob=mean_p.tolist(),
                       frequency=freq.tolist(), counts=counts.tolist(), ece=ece, n=probs.numel())


def calibration(records: list[RoundRecord], *, request: int | None = None, rounds=None,
                bins: int = 10) -> Calibration:
    """reliability(*calibration_points(records)): are the drafter's per-depth probabilities calibrated?"""
    return reliability(*calibration_points(records, request=request, rounds=rounds), bins=bins)


# ----------------------------------------------------------------------------------------------- checks
def check_budget(name: str, value, max_budget: int = MAX_BUDGET) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= max_budget:
        raise ValueError(f"{name} must be an int in [1, {max_budget}], got {value!r}")
    return value


def check_records(records, *, consecutive: bool = True) -> list[RoundRecord]:
    """A non-empty list of RoundRecords holding at least one drafted round with draft distributions; with
    `consecutive`, each round continues the previous one (its context = the previous context + its commit)."""
    records = list(records) if isinstance(records, (list, tuple)) else records
    if not isinstance(records, list) or not records or not all(isinstance(r, RoundRecord) for r in records):
        raise ValueError("records must be a non-empty list of RoundRecord (Session.records or ddtree.load_trace)")
    if any(not r.requests for r in records):
        raise ValueError("records must hold their requests (a session run with record=False keeps none)")
    for r in records:
        if len(r.requests) != len(records[0].requests):
            raise ValueError(f"round {r.index} has {len(r.requests)} requests, round {records[0].index} "
                             f"{len(records[0].requests)}: records must come from one session")
        if r.method not in DRAFTED:
            continue
        for b, req in enumerate(r.requests):
            if req is None:
                continue
            where = f"round {r.index} ({r.method}), request {b}"
            rows_t, rows_l = req.draft_top_tokens, req.draft_top_logprobs
            if not rows_t or not rows_t[0]:
                raise ValueError(f"{where}: draft_top_tokens is empty; counterfactuals need the drafter's top-K per "
                                 "depth (RequestRound.draft_top_tokens / draft_top_logprobs)")
            if len(rows_l) != len(rows_t) or any(len(t) != len(rows_t[0]) or len(v) != len(t)
                                                 for t, v in zip(rows_t, rows_l)):
                raise ValueError(f"{where}: draft_top_tokens and draft_top_logprobs must both be [depth][K]")
    if not any(r.method in DRAFTED for r in records):
        raise ValueError("no round has draft distributions: every round is 'ar' (autoregressive rounds draft "
                         "nothing); counterfactuals need 'ddtree' or 'dflash' rounds with draft_top_tokens")
    if consecutive:  # per request, over the rounds it took part in (None: finished before the round)
        for b in range(len(records[0].requests)):
            mine = [(r.index, r.requests[b]) for r in records if r.requests[b] is not None]
            for (i, p), (j, c) in zip(mine, mine[1:]):
                if c.context_len != p.context_len + len(p.committed):
                    raise ValueError(
                        f"round {j} (context {c.context_len}) does not continue round {i} (context "
                        f"{p.context_len} + {len(p.committed)} committed), request {b}: the continuation needs "
                        "consecutive rounds of one session")
    return records


def continuation_stream(records: list[RoundRecord], request: int) -> tuple[list[int], list[int]]:
    """(every token committed by `records` for `request`, in order; offset of each round's first token)."""
    stream, offsets = [], []
    for r in records:
        offsets.append(len(stream))
        stream += r.requests[request].committed if r.requests[request] is not None else []
    return stream, offsets


def _requests(records: list[RoundRecord], request) -> list[int]:
    n = len(records[0].requests)
    if request is None:
        return list(range(n))
    if isinstance(request, bool) or not isinstance(request, int) or not 0 <= request < n:
        raise ValueError(f"request must be None or an int in [0, {n}), got {request!r}")
    return [request]


def _pick_rounds(records: list[RoundRecord], rounds) -> list[int]:
    """Positions in `records` of the drafted rounds to analyse (`rounds`: RoundRecord indices, default all)."""
    if rounds is None:
        return [i for i, r in enumerate(records) if r.method in DRAFTED]
    where = {r.index: i for i, r in enumerate(records)}
    picked = []
    for k in rounds:
        if k not in where:
            raise ValueError(f"rounds entry {k!r} is not a round index of these records ({sorted(where)[:3]}...)")
        if records[where[k]].method not in DRAFTED:
            raise ValueError(f"round {k} is an {records[where[k]].method!r} round: it has no draft distributions")
        picked.append(where[k])
    if not picked:
        raise ValueError("rounds must name at least one round")
    return picked


def _check_cfs(cfs) -> list[RoundCounterfactual]:
    cfs = list(cfs)
    if not cfs or not all(isinstance(c, RoundCounterfactual) for c in cfs):
        raise ValueError("cfs must be a non-empty list of RoundCounterfactual (from ddtree.analysis.counterfactuals)")
    return cfs


# ----------------------------------------------------------------------------------------------- command line
def format_table(cfs: list[RoundCounterfactual], budgets=None) -> str:
    """The per-budget table (and a few summary lines) that `python -m ddtree.analysis` prints."""
    cfs = _check_cfs(cfs)
    max_budget = min(cf.acceptance.numel() for cf in cfs)
    if budgets is None:
        budgets = sorted({2 ** k for k in range(11) if 2 ** k <= max_budget} | {cf.budget for cf in cfs
                                                                              if cf.method == Method.DDTREE})
    curve = budget_curve(cfs, budgets)
    methods = {}
    for cf in cfs:
        key = f"{cf.method} at budget {cf.budget}" if cf.method == Method.DDTREE else cf.method
        methods[key] = methods.get(key, 0) + 1
    kept = [k for cf in cfs for k in cf.kept]
    lines = [f"{len(cfs)} rounds ({', '.join(f'{k}: {v}' for k, v in methods.items())}), draft depth "
             f"{max(cf.depth for cf in cfs)}, draft ranks kept per depth {min(kept)}-{max(kept)}",
             "acceptance length (tokens per target forward) DDTree would have reached in these rounds:",
             f"{'budget':>7} {'acceptance':>11} {'exact rounds':>13} {'lower bound':>12}"]
    real = set(curve.real_budgets)
    for b, mean, low, n_exact in zip(curve.budgets, curve.mean, curve.lower, curve.exact_rounds):
        bound = "" if n_exact == curve.rounds else f"{low:12.2f}"
        mark = ("  <- the run's budget" if len(real) == 1 else "  <- a run's budget") if b in real else ""
        lines.append(f"{b:7d} {mean:11.2f} {f'{n_exact}/{curve.rounds}':>13} {bound:>12}{mark}")
    lines.append(f"real: {curve.real:.2f}; DFlash chain on the same drafts: {curve.chain:.2f}")
    mins = [cf.min_budget for cf in cfs if cf.min_budget is not None]
    if mins:
        lines.append(f"smallest budget that accepted what each round accepted: median {statistics.median(mins):g}, "
                     f"max {max(mins)}")
    if curve.truncated:
        lines.append(f"{curve.truncated} rounds at the end have fewer continuation tokens than the draft depth "
                     "(their full-acceptance values are lower bounds)")
    if min(curve.exact_rounds) < curve.rounds:
        lines.append("where fewer rounds are exact, 'acceptance' counts only the kept draft ranks (an estimate) and "
                     "'lower bound' is certain; record more ranks per depth or run at a larger budget")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddtree.analysis",
                                 description="Counterfactual budgets of a saved trace (ddtree.save_trace): the "
                                             "acceptance DDTree would have reached at each budget, from one run.")
    ap.add_argument("trace", help="a trace JSON written by ddtree.save_trace")
    ap.add_argument("--budgets", type=int, nargs="+", help="budgets to list (default: powers of two up to 1024 and "
                                                           "the run's budget)")
    ap.add_argument("--request", type=int, help="one request of a batch trace (default: all)")
    ap.add_argument("--vocab-size", type=int, help="the vocabulary size, if records keep every rank")
    args = ap.parse_args(argv)
    try:
        records, _ = load_trace(args.trace)
        cfs = counterfactuals(records, request=args.request, vocab_size=args.vocab_size)
        print(f"{args.trace}:")
        print(format_table(cfs, args.budgets))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
