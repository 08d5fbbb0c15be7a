"""What both backends share about one round: its tree, its walk, its record and its stage timing.

A backend runs rounds (ddtree.reference on the Hugging Face target, ddtree.engine on the static-cache engine) and
returns a RoundOutcome; ddtree.session turns outcomes into tokens and RoundRecords.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch

from ddtree.budget import BudgetCosts, Choice
from ddtree.record import KernelRead, RequestRound
from ddtree.settings import Method, Settings
from ddtree.tree import DraftTree, build_tree, chain_tree, ranked_top_k, root_tree
from ddtree.verify import VerifyResult, sampling_probs, verify_greedy, verify_sampled

TOP_K = 16  # default top-K entries per depth / node kept in records


class Backend(Protocol):
    """What a Session drives, implemented completely by the reference backend (ddtree.reference) and the native
    engine (ddtree.engine.backend); `flight` is whatever start returns, handed back to finish or cancel."""
    name: str  # "reference" | "native"
    runs_finished: bool  # whether a round computes the rows of requests the session has finished
    max_len: int  # cache entries per request

    @property
    def budget_costs(self) -> BudgetCosts | None: ...  # budget="auto": the cost table (None before it is made)

    def prefill(self, prompts: list[list[int]]) -> torch.Tensor: ...  # -> logits  # [B, vocab] at the last positions

    def start(self, settings: Settings, tokens: list[list[int]], coins, active: list[bool]): ...

    def finish(self, flight, tokens: list[list[int]], top_k: int | None, probe: bool) -> RoundOutcome: ...

    def cancel(self, flights: list, tokens: list[list[int]]) -> None: ...  # undo started rounds, oldest first

    def park(self, requests: list[int], tokens: list[list[int]]) -> None: ...  # drop the last commit of requests

    def fork(self) -> Backend: ...  # an independent copy


@dataclass
class RoundOutcome:
    """A backend's answer to one round of every request."""
    committed: list[list[int]]  # per request: accepted draft tokens, then the bonus token
    times: dict[str, float]  # seconds per stage (ddtree.settings.STAGES)
    rows: int  # verify rows per request (num_draft_tokens)
    requests: list[RequestRound]  # one per request; empty when the session does not record
    kernel: KernelRead | None = None  # what the attention kernel read (native engine), and its probe
    choice: Choice | None = None  # budget="auto": the budget this round chose and why (0: autoregressive)


def draft_tree(settings: Settings, dlogits, bonus: int, budget: int) -> DraftTree:
    """The round's tree, rooted at the bonus token: DDTree's best-first tree, the DFlash chain, or the root alone."""
    if settings.method == Method.DDTREE:
        return build_tree(dlogits, budget).with_root_token(bonus)
    if settings.method == Method.DFLASH:
        return chain_tree(dlogits).with_root_token(bonus)
    return root_tree(bonus)


def walk(settings: Settings, tree: DraftTree, logits: torch.Tensor, coins: torch.Tensor | None) -> VerifyResult:
    """Greedy, or the exact rule-B walk with the request's `coins  # [2, >= n_nodes]` (ddtree.verify.draw_coins)."""
    if settings.sampled:
        return verify_sampled(tree, logits, settings.temperature, top_p=settings.top_p,
                              coins=coins[:, :tree.n_nodes])
    return verify_greedy(tree, logits)


def request_round(pair, settings: Settings, ctx: int, tree: DraftTree, dlogits, input_ids, positions, logits,
                  result: VerifyResult, top_k: int) -> RequestRound:
    """One request's part of a round record; `logits  # [n_nodes, vocab]` the target's logits at the tree nodes,
    `dlogits  # [depth, vocab]` the drafter's (None for autoregressive), on the device the tree was built on so that
    the recorded draft ranks are the ones the tree build saw."""
    k = min(top_k, logits.shape[-1])
    if dlogits is None:
        draft_tokens, draft_logprobs = [], []
    else:
        lp, tok = ranked_top_k(torch.log_softmax(dlogits.float(), -1), k)  # ties by lower id, as build_tree ranks
        draft_tokens, draft_logprobs = tok.tolist(), lp.clamp_min(-1e30).tolist()
    if settings.sampled:  # the walk's own target distribution (tempered, top-p); its choices on the accepted path
        top_p_, top_t = sampling_probs(logits, settings.temperature, settings.top_p).topk(k, dim=-1)
        choice = [-1] * tree.n_nodes
        for node, tok in zip(result.accepted, result.committed):
            choice[node] = tok
    else:  # softmax's top-K without the whole softmax: the top-K logits over their logsumexp
        top_l, top_t = logits.topk(k, dim=-1)
        top_p_ = (top_l.float() - torch.logsumexp(logits.float(), -1, keepdim=True)).exp()
        choice = logits.argmax(-1).tolist()
    ids = set(tree.tokens.tolist()) | set(top_t.flatten().tolist()) | set(result.committed)
    ids |= {t for row in draft_tokens for t in row}
    return RequestRound(
        context_len=ctx, tree=tree, draft_top_tokens=draft_tokens, draft_top_logprobs=draft_logprobs,
        input_ids=input_ids.tolist(), positions=positions.tolist(),
        target_top_tokens=top_t.tolist(), target_top_probs=top_p_.float().tolist(), target_choice=choice,
        accepted=result.accepted, accepted_tokens=result.accepted_tokens, bonus_token=result.bonus_token,
        committed_text=pair.decode(result.committed),
        token_texts=pair.token_texts(sorted(t for t in ids if t >= 0)))


def first_tokens(settings: Settings, last_logits: torch.Tensor, last_prompt_tokens: list[int],
                 coins: torch.Tensor | None) -> list[int]:
    """The token each prompt's prefill commits: `last_logits  # [B, vocab]` at each prompt's last position, walked
    as an autoregressive round (greedy, or rule B with `coins  # [2, B, 1]`)."""
    return [walk(settings, root_tree(t), last_logits[b:b + 1], None if coins is None else coins[:, b]).bonus_token
            for b, t in enumerate(last_prompt_tokens)]


@contextmanager
def timed(times: dict, stage: str, device: torch.device):
    """Add the wall time of the block to times[stage], synchronising the GPU before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times[stage] = times.get(stage, 0.0) + time.perf_counter() - t0
