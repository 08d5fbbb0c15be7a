"""Walking a verified tree: greedy, and exact sampling (the target-sampling walk, DOMAIN rule A).

Greedy: from the root, while the target's argmax at the current node is the token of one of its children, move to
that child; the argmax at the last node is the bonus token.

Sampled: at the current node draw x ~ p_target(. | path) at the given temperature (and top-p); if x is a child's
token move there, else x is the bonus and the walk stops. Every committed token is a genuine target sample, so the
output has exactly the target's distribution. The draw uses one uniform per node and the inverse CDF, so a walk is
a deterministic function of the uniforms (temperature 0 means greedy).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ddtree._checks import check_int, check_logits, check_temperature, check_top_p
from ddtree.batch import VerifyBatch
from ddtree.tree import DraftTree


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
    temperature = check_temperature("temperature", temperature, allow_zero=False)
    top_p = check_top_p(top_p)
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        drop = sorted_p.cumsum(-1) - sorted_p >= top_p  # keep the smallest prefix whose mass reaches top_p
        probs = probs.scatter(-1, order, sorted_p.masked_fill(drop, 0.0))
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def verify_greedy(tree: DraftTree, target_logits: torch.Tensor) -> VerifyResult:
    """Greedy walk; `target_logits  # [n_nodes, vocab]`, row i = the target's logits at node i."""
    _check_tree_logits(tree, target_logits)
    choice = target_logits.argmax(dim=-1).tolist()  # [n]
    child = _child_lookup(tree)
    node, accepted = 0, [0]
    while (node, choice[node]) in child:
        node = child[(node, choice[node])]
        accepted.append(node)
    return _result(tree, accepted, choice[node])


def verify_sampled(tree: DraftTree, target_logits: torch.Tensor, temperature: float, *, top_p: float = 1.0,
                   generator: torch.Generator | None = None) -> VerifyResult:
    """Exact sampled walk (rule A); temperature 0 is the greedy walk. `target_logits  # [n_nodes, vocab]`."""
    temperature = check_temperature("temperature", temperature, allow_zero=True)
    if temperature == 0:
        return verify_greedy(tree, target_logits)
    last, bonus = sample_walks(tree, target_logits, temperature, 1, top_p=top_p, generator=generator)
    accepted = tree.path(int(last[0]))
    return _result(tree, accepted, int(bonus[0]))


def sample_walks(tree: DraftTree, target_logits: torch.Tensor, temperature: float, num_samples: int, *,
                 top_p: float = 1.0, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """`num_samples` independent sampled walks at once: `(last_node [S], bonus_token [S])`.

    The accepted path of walk s is tree.path(last_node[s]). This is the sampler behind verify_sampled; use it
    directly for exactness experiments (histograms of committed sequences).
    """
    _check_tree_logits(tree, target_logits)
    temperature = check_temperature("temperature", temperature, allow_zero=False)
    top_p = check_top_p(top_p)
    num_samples = check_int("num_samples", num_samples, minimum=1)
    device, vocab = target_logits.device, target_logits.shape[-1]
    u = torch.rand(num_samples, tree.n_nodes, generator=generator, dtype=torch.float64, device=device)
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
    check_logits("target_logits", target_logits, shape="[n_nodes, vocab]")
    if target_logits.shape[0] != tree.n_nodes:
        raise ValueError(f"target_logits must have one row per tree node ({tree.n_nodes}), got {target_logits.shape[0]}")
    if tree.n_nodes > 1 and int(tree.tokens[1:].max()) >= target_logits.shape[-1]:
        raise ValueError(f"tree token id {int(tree.tokens[1:].max())} is outside the target vocab "
                         f"({target_logits.shape[-1]}): drafter and target vocabularies differ")


def _child_lookup(tree: DraftTree) -> dict[tuple[int, int], int]:
    """(parent node, token) -> child node."""
    tokens, parents = tree.tokens.tolist(), tree.parents.tolist()
    return {(parents[i], tokens[i]): i for i in range(1, tree.n_nodes)}


def _child_keys(tree: DraftTree, vocab: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted keys parent * vocab + token of every non-root node, and the child node of each key."""
    keys = tree.parents[1:] * vocab + tree.tokens[1:]
    keys, order = keys.sort()
    return keys.to(device), (order + 1).to(device)


def _result(tree: DraftTree, accepted: list[int], bonus: int) -> VerifyResult:
    tokens = tree.tokens.tolist()
    return VerifyResult(accepted=accepted, accepted_tokens=[tokens[i] for i in accepted[1:]], bonus_token=bonus)
