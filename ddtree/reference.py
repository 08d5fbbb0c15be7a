"""The reference backend: the Hugging Face target and the DFlash drafter module, one request at a time.

Each request keeps its own target cache (ddtree.models.TargetCache) and drafter context. A round drafts, builds,
packs (padded to num_draft_tokens rows, as a serving engine would), verifies with ONE target forward per request
under the ancestor mask at positions context + depth, and walks every request before anything is committed. Then
the accepted entries are kept in the target cache (compaction) and their target features extend the drafter's
context. A round that fails at any stage (or a session that cannot commit it: `cancel`) is undone: the target caches
are cropped to the committed tokens and the drafter's contexts and the budget choice put back. Requests a session
has finished (`active` False) take no part in a round: no tree, no rows, no context.
Invariant between rounds: a request's caches hold every committed token but the last (the bonus, which roots the
next tree).

budget="auto" (ddtree.budget) is chosen here too, on the host, by the engine's rule: from what the round two before
told, every request's tree is built one candidate past the chosen budget (each candidate's expectation up to there)
and cut to the chosen budget before the verify forwards. The cost table is measured on the first such round (one
target forward of the first request per candidate, times the batch: this backend verifies the requests one after the
other) unless the session was given one.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple

import torch
from torch.nn.utils.rnn import pad_sequence

from ddtree.batch import expected_mask, pack_verify_batch
from ddtree.budget import AR, AutoBudget, BudgetCosts, Choice, lookahead, observation
from ddtree.models import TargetCache, draft_logits, target_forward
from ddtree.rounds import RoundOutcome, draft_tree, request_round, timed, walk
from ddtree.settings import AUTO_CANDIDATES, STAGES, Method, Settings, autoregressive, num_draft_tokens
from ddtree.verify import VerifyResult


class RequestVerified(NamedTuple):
    """One request's verified round."""
    ctx: int  # committed tokens in its cache before the round
    tree: object  # ddtree.DraftTree
    dlogits: torch.Tensor | None  # [depth, V] draft logits (None for autoregressive)
    packed: object  # ddtree.VerifyBatch of the request
    logits: torch.Tensor  # [n_nodes, V] the target's logits at the tree nodes
    features: torch.Tensor  # [Q, F] target features for the drafter
    result: VerifyResult


class Before(NamedTuple):
    """What a round changes in the reference backend, as it was before the round."""
    draft_caches: list  # shallow copies (extend_context replaces tensors, never writes into them)
    auto: AutoBudget | None
    unobserved: list
    warm: bool


class Ran(NamedTuple):
    """A round the reference ran (ReferenceBackend.start), read by finish or undone by cancel."""
    settings: Settings
    verified: list[RequestVerified | None]  # per request (None: not active this round)
    times: dict[str, float]
    rows: int
    choice: Choice | None  # budget="auto": the budget chosen and why
    before: Before  # the backend's state before the round


class ReferenceBackend:
    name = "reference"
    runs_finished = False  # a round skips requests the session has finished

    def __init__(self, pair, batch: int, max_len: int, *, budget_costs: BudgetCosts | None = None):
        self.pair, self.max_len = pair, max_len
        self.target_caches = [TargetCache() for _ in range(batch)]
        self.draft_caches = [pair.drafter.new_cache() if pair.drafter is not None else None for _ in range(batch)]
        self.given_costs = budget_costs
        self.auto: AutoBudget | None = None  # budget="auto": made on the first such round
        self.warm = False  # a round has run (the next one's time counts for the learnt overhead)
        self.unobserved = []  # budget="auto": the last two rounds' AutoBudget.observe arguments, oldest first; the
        # oldest is observed when the next round is chosen
        self.finished: Before | None = None  # the state before the round finished last (park reads it)

    @property
    def budget_costs(self) -> BudgetCosts | None:
        """budget="auto": the cost table the rounds choose with (None before the first such round; NaN entries: not
        measured yet, no choice has read them)."""
        return None if self.auto is None else self.auto.costs

    def measure_costs(self, budgets, repeats: int = 1) -> tuple[float, ...]:
        """Seconds of one round's verify forwards at each budget: the first request's target forward over budget + 1
        rows (a chain, cropped from its cache afterwards; the fastest of `repeats`), times the batch. One forward by
        default: the rounds' own verify times refine the table (AutoBudget.observe)."""
        cache = self.target_caches[0]
        ctx, device, out = cache.length, self.pair.device, []
        for budget in budgets:
            ids = torch.zeros(budget + 1, dtype=torch.long)
            positions = ctx + torch.arange(budget + 1)
            seconds = {}
            for _ in range(repeats):
                with timed(seconds, len(seconds), device):
                    target_forward(self.pair.target, ids, positions, None, cache, self.pair.target_layer_ids)
                cache.crop(ctx)
            out.append(min(seconds.values()) * len(self.target_caches))
        return tuple(out)

    def _measured(self) -> dict:
        """{budget: seconds} of this pair's verify forwards measured by its reference sessions of this batch size
        and thread count in this process (ModelPair.verify_seconds): a later session starts from them."""
        key = (self.name, len(self.target_caches), torch.get_num_threads())
        return self.pair.verify_seconds.setdefault(key, {})

    def prefill(self, prompts: list[list[int]]) -> torch.Tensor:
        """Run every prompt through the target and the drafter's context -> logits  # [B, vocab] at each prompt's
        last position."""
        last = []
        for ids, cache, draft_cache in zip(prompts, self.target_caches, self.draft_caches):
            positions = torch.arange(len(ids))
            logits, features = target_forward(self.pair.target, ids, positions, None, cache,
                                              self.pair.target_layer_ids)
            if draft_cache is not None:
                self.pair.drafter.extend_context(draft_cache, features, positions)
            last.append(logits[-1])
        return torch.stack(last)

    def start(self, settings: Settings, tokens: list[list[int]], coins, active: list[bool]) -> Ran:
        """One round of every active request, run to the end (the reference waits for every stage); `tokens[b]` its
        committed tokens, `coins  # [2, B, Q]` (sampled) or None. Any failure (or interrupt) puts the caches back
        as they were and is raised."""
        before = Before([None if c is None else dataclasses.replace(c, keys=list(c.keys), values=list(c.values),
                                                                    positions=list(c.positions))
                         for c in self.draft_caches], self.auto, self.unobserved, self.warm)
        try:
            return self._run(settings, tokens, coins, active, before)
        except BaseException:
            self._restore(before, tokens)
            raise

    def _run(self, settings: Settings, tokens: list[list[int]], coins, active: list[bool], before: Before) -> Ran:
        pair, batch = self.pair, len(tokens)
        t0, times = time.perf_counter(), dict.fromkeys(STAGES, 0.0)
        budgets, chosen, rule = settings.budgets(batch), None, settings
        running = [b for b in range(batch) if active[b]]
        if settings.auto:  # observe the round two before (as the engine does), choose, build one candidate further
            if self.auto is None:  # a lazy table: each entry measured when a choice first reads it
                if self.given_costs is None:  # from what this pair's earlier sessions measured, refined as they are
                    known = self._measured()
                    self.auto = AutoBudget(BudgetCosts.blank(AUTO_CANDIDATES).filled(known, known.values()),
                                           measure=self.measure_costs)
                else:
                    self.auto = AutoBudget(self.given_costs,
                                           measure=self.measure_costs if self.given_costs.unmeasured else None)
            auto = self.auto.copy()  # kept only if the round succeeds
            measuring = auto.measuring
            chosen, pending = auto.choose_next(self.unobserved, len(running))
            measuring = auto.measuring - measuring  # seconds of this round that are not the round's
            build = lookahead(auto.costs.budgets, chosen)
            budgets = [build] * batch
            rule = autoregressive(settings) if chosen == AR else settings
        drafted = {}  # per active request: (draft logits, tree)
        for b in running:
            root = tokens[b][-1]
            with timed(times, "draft", pair.device):
                dlogits = None if rule.method == Method.AR else draft_logits(pair, root, self.draft_caches[b])
            with timed(times, "tree", pair.device):
                drafted[b] = (dlogits, draft_tree(rule, dlogits, root, budgets[b]))  # [depth, V] -> tree
        q = num_draft_tokens(settings, pair)
        if settings.auto:
            with timed(times, "tree", pair.device):
                built = pad_sequence([t.node_logws for _, t in drafted.values()], batch_first=True,
                                     padding_value=-math.inf)  # [B, build + 1] the trees as built, before the cut
                drafted = {b: (d, t.first(chosen + 1)) for b, (d, t) in drafted.items()}
            q = chosen + 1
        verified: list[RequestVerified | None] = [None] * batch
        for b, (dlogits, tree) in drafted.items():
            ctx = len(tokens[b]) - 1
            with timed(times, "pack", pair.device):
                packed = pack_verify_batch([tree], [ctx], q)
                mask = expected_mask(packed, 0)  # [q, ctx + q]
            with timed(times, "verify", pair.device):
                logits, features = target_forward(pair.target, packed.input_ids, packed.positions,
                                                  mask.to(pair.device), self.target_caches[b], pair.target_layer_ids)
            with timed(times, "walk", pair.device):
                result = walk(settings, tree, logits[:tree.n_nodes], None if coins is None else coins[:, b])
            verified[b] = RequestVerified(ctx, tree, dlogits, packed, logits[:tree.n_nodes], features, result)
        for b in running:  # every request walked: commit
            ctx, tree, dlogits, packed, logits, features, result = verified[b]
            with timed(times, "commit", pair.device):
                self.target_caches[b].compact(ctx, result.accepted)
                if self.draft_caches[b] is not None:
                    kept = torch.tensor(result.accepted)
                    pair.drafter.extend_context(self.draft_caches[b], features[kept.to(features.device)],
                                                ctx + tree.depths[kept])
        if settings.auto:  # what each candidate's tree accepted: the accepted nodes in its rows (ddtree.budget)
            accepted = pad_sequence([torch.tensor(verified[b].result.accepted) for b in running], batch_first=True,
                                    padding_value=-1)  # [B, Q]
            overhead = time.perf_counter() - t0 - measuring - times["verify"] if self.warm else None
            verify = times["verify"] if self.warm and len(running) == batch else None  # the table's: whole batch
            self.auto = auto
            self.unobserved = pending + [observation(auto.costs.budgets, chosen, build, built, accepted, overhead,
                                                     times["draft"] + times["tree"], verify)]
            if self.given_costs is None:
                known = self._measured()
                known.update((n, t) for n, t in zip(auto.costs.budgets, auto.costs.seconds)
                             if t < known.get(n, math.inf))  # NaN (not measured) never enters
        self.warm = True
        return Ran(settings, verified, times, q, None if chosen is None else auto.choice, before)

    def finish(self, flight: Ran, tokens: list[list[int]], top_k: int | None, probe: bool) -> RoundOutcome:
        """The outcome of a round start() ran; records (`top_k`) from its host copies."""
        self.finished = flight.before
        requests = [] if top_k is None else [
            None if v is None else request_round(self.pair, flight.settings, v.ctx, v.tree, v.dlogits,
                                                 v.packed.input_ids, v.packed.positions, v.logits, v.result, top_k)
            for v in flight.verified]
        return RoundOutcome(committed=[[] if v is None else v.result.committed for v in flight.verified],
                            times=flight.times, rows=flight.rows, requests=requests, choice=flight.choice)

    def cancel(self, flights: list[Ran], tokens: list[list[int]]) -> None:
        """Undo rounds that ran (oldest first) and were not committed by the session: the caches and the budget
        choice go back to `tokens` (every request's committed tokens), as before the oldest."""
        self._restore(flights[0].before, tokens)

    def park(self, requests: list[int], tokens: list[list[int]]) -> None:
        """Drop what the round just finished committed for `requests` (ones the session had finished): their caches
        back to `tokens`, their drafter contexts to before that round."""
        for b in requests:
            self.target_caches[b].crop(len(tokens[b]) - 1)
            self.draft_caches[b] = self.finished.draft_caches[b]

    def _restore(self, before: Before, tokens: list[list[int]]) -> None:
        for cache, toks in zip(self.target_caches, tokens):  # the rows a round verified or kept
            if cache.length > len(toks) - 1:
                cache.crop(len(toks) - 1)
        self.draft_caches = list(before.draft_caches)
        self.auto, self.unobserved, self.warm = before.auto, before.unobserved, before.warm

    def fork(self) -> ReferenceBackend:
        twin = object.__new__(ReferenceBackend)
        twin.pair, twin.max_len = self.pair, self.max_len
        twin.target_caches = [c.clone() for c in self.target_caches]
        twin.draft_caches = [c.clone() if c is not None else None for c in self.draft_caches]
        twin.given_costs, twin.warm, twin.unobserved = self.given_costs, self.warm, list(self.unobserved)
        twin.auto = None if self.auto is None else self.auto.copy()
        if twin.auto is not None and twin.auto.measure is not None:
            twin.auto.measure = twin.measure_costs  # the twin's caches, not this backend's
        twin.finished = None
        return twin
