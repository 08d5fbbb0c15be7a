"""Walking a verified tree: greedy, and exact sampling.

Greedy: from the root, while the target's argmax at the current node is the token of one of its children, move to
that child; the argmax at the last node is the bonus token.

Sampled, the rule every session walks by (DOMAIN rule B, as the serving kernel ddtree.kernels.verify_sampled_tree):
one uniform coin per node; visit the children in sibling order accumulating their target probabilities (temperature
and top-p applied); move to the first child where the coin < the accumulated mass; if none is accepted, the bonus is
drawn from the target distribution with the rejected children's mass removed (a second, residual coin per node).
Both backends draw the coins of a round the same way (draw_coins), so one seed gives one walk on either backend.
Exact: every committed token has the target's distribution.

`sample_walks` runs many walks of the other exact rule, the target-sampling walk (DOMAIN rule A: draw x from the
target at each node, move if x is a child's token), kept as a teaching comparison: equal in distribution, other
draws for the same uniforms.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ddtree._checks import check_int, check_logits, check_temperature, check_top_p
from ddtree.batch import VerifyBatch
from ddtree.retrieve import retrieve_encoding
from ddtree.tree import DraftTree, check_tree


@dataclass(frozen=True)
class VerifyResult:
    accepted: list[int]  # accepted node indices, root (0) first
    accepted_tokens: list[int]  # tokens of accepted[1:]: the draft tokens committed this round
    bonus_token: int  # the target's own token at the last accepted node

    @property
    def committed(self) -> list[int]:
        """Tokens this round appends to the output: accepted draft tokens then the bonus."""
        return self.accepted_tokens + [self.bonus_token]

    @property
    def acceptance_length(self) -> int:
        """Tokens committed by this target forward (accepted draft tokens + 1)."""
        return len(self.accepted)


def sampling_probs(logits: torch.Tensor, temperature: float, top_p: float = 1.0) -> torch.Tensor:
    """`probs  # [..., vocab]` float64: the target's sampling distribution at temperature > 0 with nucleus top_p."""
    check_logits("logits", logits, shape="[..., vocab]")
    return tempered_probs(logits, check_temperature("temperature", temperature, allow_zero=False),
                          check_top_p(top_p))


def tempered_probs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """sampling_probs without its checks, so without a host synchronisation: the device round's walk, which a CUDA
    graph replays, calls this (its settings were checked when the session was made; NaN logits are flagged by the
    round itself).

    The logits are shifted by their row maximum before the division: logits / temperature can overflow float64 at
    a tiny temperature (5e-324) or on huge logits, and inf - inf is NaN, while (logits - max) / temperature is in
    [-inf, 0] with 0 at the maximum. So a temperature -> 0 gives the argmax limit (ties share the mass), as
    build_tree's draft_temperature does, with no host synchronisation."""
    x = logits.double()
    probs = torch.softmax((x - x.amax(dim=-1, keepdim=True)) / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        drop = sorted_p.cumsum(-1) - sorted_p >= top_p  # keep the smallest prefix whose mass reaches top_p
        probs = probs.scatter(-1, order, sorted_p.masked_fill(drop, 0.0))
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def verify_greedy(tree: DraftTree, target_logits: torch.Tensor) -> VerifyResult:
    """Greedy walk; `target_logits  # [n_nodes, vocab]`, row i = the target's logits at node i."""
    _check_tree_logits(tree, target_logits)
    from ddtree.kernels.tree_verify import verify_greedy_tree_ref  # the rule's one reference, beside its kernel
    _, next_token, next_sibling = retrieve_encoding(tree)
    choice = target_logits.argmax(dim=-1).cpu()  # [n]
    accepted, count, bonus = verify_greedy_tree_ref(tree.tokens[None], next_token[None], next_sibling[None],
                                                    choice[None])
    return _result(tree, accepted[0, :int(count[0])].tolist(), int(bonus[0]))


def draw_coins(generator: torch.Generator | None, batch: int, rows: int, device) -> torch.Tensor:
    """`coins  # [2, batch, rows]` float64 uniforms of one sampled round: each node's acceptance coin, then each
    node's residual coin (rule B). Both session backends draw a round's coins this way."""
    return torch.rand(2, batch, rows, generator=generator, dtype=torch.float64, device=device)


def verify_sampled(tree: DraftTree, target_logits: torch.Tensor, temperature: float, *, top_p: float = 1.0,
                   generator: torch.Generator | None = None, coins: torch.Tensor | None = None) -> VerifyResult:
    """Exact sampled walk (rule B); temperature 0 is the greedy walk. `target_logits  # [n_nodes, vocab]`;
    `coins  # [2, n_nodes]` (acceptance and residual uniform per node) or None to draw them from `generator`."""
    temperature = check_temperature("temperature", temperature, allow_zero=True)
    if temperature == 0:
        return verify_greedy(tree, target_logits)
    _check_tree_logits(tree, target_logits)
    n = tree.n_nodes
    if coins is None:  # drawn where the generator lives (the walk itself runs on the host)
        coins = draw_coins(generator, 1, n, generator.device if generator is not None else "cpu")[:, 0]
    elif not isinstance(coins, torch.Tensor) or tuple(coins.shape) != (2, n) or not coins.is_floating_point():
        raise ValueError(f"coins must be a float tensor [2, n_nodes] = [2, {n}], got "
                         f"{tuple(coins.shape) if isinstance(coins, torch.Tensor) else type(coins).__name__}")
    elif not bool(((coins >= 0) & (coins < 1)).all()):  # NaN fails both comparisons
        bad = coins[~((coins >= 0) & (coins < 1))][0].item()
        raise ValueError(f"coins must be uniforms in [0, 1) (finite), got {bad!r}")
    from ddtree.kernels.tree_verify import verify_sampled_tree_ref  # the rule's one reference, beside its kernel
    _, next_token, next_sibling = retrieve_encoding(tree)
    probs = sampling_probs(target_logits, temperature, top_p).cpu()  # [n, vocab] float64; a short walk: on the host
    coins = coins.cpu()
    accepted, count, bonus = verify_sampled_tree_ref(tree.tokens[None], next_token[None], next_sibling[None],
                                                     probs[None], coins[:1], coins[1:])
    return _result(tree, accepted[0, :int(count[0])].tolist(), int(bonus[0]))


def sample_walks(tree: DraftTree, target_logits: torch.Tensor, temperature: float, num_samples: int, *,
                 top_p: float = 1.0, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """`num_samples` independent walks of rule A (the target-sampling walk) at once: `(last_node [S],
    bonus_token [S])`; the accepted path of walk s is tree.path(last_node[s]). For exactness experiments and as the
    teaching comparison to rule B (verify_sampled): the same distribution, other draws."""
    _check_tree_logits(tree, target_logits)
    temperature = check_temperature("temperature", temperature, allow_zero=False)
    top_p = check_top_p(top_p)
    num_samples = check_int("num_samples", num_samples, minimum=1)
    device, vocab = target_logits.device, target_logits.shape[-1]
    u = torch.rand(num_samples, tree.n_nodes, generator=generator, dtype=torch.float64,
                   device=generator.device if generator is not None else device).to(device)
    keys, child_of_key = _child_keys(tree, vocab, device)

    cur = torch.zeros(num_samples, dtype=torch.long, device=device)
    bonus = torch.full((num_samples,), -1, dtype=torch.long, device=device)
    active = torch.ones(num_samples, dtype=torch.bool, device=device)
    for _ in range(tree.max_depth + 1):
        walkers = active.nonzero().flatten()
        if walkers.numel() == 0:
            break
        nodes = cur[walkers]
        x = torch.empty_like(nodes)
        for node in nodes.unique().tolist():
            here = nodes == node
            cdf = sampling_probs(target_logits[node], temperature, top_p).cumsum(-1)  # [vocab]
            x[here] = torch.searchsorted(cdf, u[walkers[here], node] * cdf[-1], right=True).clamp_max(vocab - 1)
        query = nodes * vocab + x
        slot = torch.searchsorted(keys, query).clamp_max(max(keys.numel() - 1, 0))
        moves = keys[slot] == query if keys.numel() else torch.zeros_like(query, dtype=torch.bool)
        cur[walkers[moves]] = child_of_key[slot[moves]]
        bonus[walkers[~moves]] = x[~moves]
        active[walkers[~moves]] = False
    return cur, bonus


def verify_greedy_batch(batch: VerifyBatch, target_logits: torch.Tensor) -> list[VerifyResult]:
    """verify_greedy per request; `target_logits  # [total_rows, vocab]` in the batch's row order."""
    return [verify_greedy(tree, rows) for tree, rows in zip(batch.trees, _request_rows(batch, target_logits))]


def verify_sampled_batch(batch: VerifyBatch, target_logits: torch.Tensor, temperature: float, *, top_p: float = 1.0,
                         generator: torch.Generator | None = None) -> list[VerifyResult]:
    """verify_sampled per request, in request order from one generator."""
    return [verify_sampled(tree, rows, temperature, top_p=top_p, generator=generator)
            for tree, rows in zip(batch.trees, _request_rows(batch, target_logits))]


def _request_rows(batch: VerifyBatch, target_logits: torch.Tensor) -> list[torch.Tensor]:
    check_logits("target_logits", target_logits, shape="[total_rows, vocab]")
    total = int(batch.qo_indptr[-1])
    if target_logits.shape[0] != total:
        raise ValueError(f"target_logits must have one row per batch row ({total}), got {target_logits.shape[0]}")
    starts = batch.qo_indptr.tolist()
    return [target_logits[s:s + t.n_nodes] for s, t in zip(starts, batch.trees)]


def _check_tree_logits(tree: DraftTree, target_logits: torch.Tensor) -> None:
    check_tree(tree)
    check_logits("target_logits", target_logits, shape="[n_nodes, vocab]")
    if target_logits.shape[0] != tree.n_nodes:
        raise ValueError(f"target_logits must have one row per tree node ({tree.n_nodes}), got {target_logits.shape[0]}")
    if tree.n_nodes > 1 and int(tree.tokens[1:].max()) >= target_logits.shape[-1]:
        raise ValueError(f"tree token id {int(tree.tokens[1:].max())} is outside the target vocab "
                         f"({target_logits.shape[-1]}): drafter and target vocabularies differ")


def _child_keys(tree: DraftTree, vocab: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted keys parent * vocab + token of every non-root node, and the child node of each key."""
    keys = tree.parents[1:] * vocab + tree.tokens[1:]
    keys, order = keys.sort()
    return keys.to(device), (order + 1).to(device)


def _result(tree: DraftTree, accepted: list[int], bonus: int) -> VerifyResult:
    tokens = tree.tokens.tolist()
    return VerifyResult(accepted=accepted, accepted_tokens=[tokens[i] for i in accepted[1:]], bonus_token=bonus)
