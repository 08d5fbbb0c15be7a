"""Batched sessions on the native engine: several prompts decoded together, one padded verify forward a round.

Each round: per request, the drafter pass and the tree (as in ddtree.session); then ONE static-cache forward over
all requests' trees padded to num_draft_tokens rows; per-request walks; compaction of every request's accepted
rows; the drafters' contexts extended. Records carry one RequestRound per request.
"""
from __future__ import annotations

import time

import torch
from tqdm.auto import tqdm

from ddtree._checks import check_int
from ddtree.batch import pack_verify_batch
from ddtree.engine.decoder import NativeDecoder
from ddtree.kernels.tree_attention import padded_parents
from ddtree.models import ModelPair, draft_logits
from ddtree.record import RoundRecord
from ddtree.session import (STAGES, ContextFull, Generation, check_room, draft_tree, encode_prompt, eos_index,
                            extend_drafter, fork_settings, make_generation, make_settings, num_draft_tokens,
                            request_round, timed, walk)
from ddtree.tree import root_tree


class BatchSession:
    """`BatchSession(pair, prompts, ...)`: Session's options plus `max_len` (cache entries per request; default
    the longest prompt + 1024, capped at the target's context), `attention` ("auto", "triton", "torch"),
    `cuda_graphs` (replay the verify forward as a CUDA graph, captured on first use of each row count) and
    `record` (False keeps only tokens and acceptance lengths: rounds return RoundRecords without requests, for
    benchmarks)."""

    def __init__(self, pair: ModelPair, prompts, *, method: str = "ddtree", budget: int = 32, verify: str = "greedy",
                 temperature: float = 1.0, top_p: float = 1.0, seed: int = 0, chat: bool = True,
                 max_len: int | None = None, attention: str = "auto", cuda_graphs: bool = False,
                 record: bool = True):
        if not isinstance(prompts, (list, tuple)) or not prompts:
            raise ValueError("prompts must be a non-empty list of prompts (strings or token-id lists)")
        self.pair = pair
        self.settings = make_settings(pair, method, budget, verify, temperature, top_p)
        self.generator = torch.Generator(device=pair.device).manual_seed(check_int("seed", seed))
        ids = [encode_prompt(pair, p, chat, self.settings) for p in prompts]
        longest = max(len(x) for x in ids)
        self.max_len = check_int("max_len", max_len, minimum=1) if max_len is not None else min(
            pair.max_context, longest + 1024)
        ids = [encode_prompt(pair, p, chat, self.settings, self.max_len) for p in ids]
        self.decoder = NativeDecoder(pair.target, batch_size=len(ids), max_len=self.max_len,
                                     layer_ids=pair.target_layer_ids, attention=attention)
        self.prompt_lens = [len(x) for x in ids]
        self.cuda_graphs, self.record = bool(cuda_graphs), bool(record)
        self.acceptance_lengths: list[list[int]] = [[] for _ in ids]  # per request, one entry per round
        self.draft_caches = [pair.drafter.new_cache() if pair.drafter is not None else None for _ in ids]
        self.records: list[RoundRecord] = []
        self.times = {"prefill": 0.0}
        self.tokens = []
        with timed(self.times, "prefill", pair.device):
            for b, prompt in enumerate(ids):
                n = len(prompt)
                positions = torch.arange(n, device=pair.device)
                logits, features = self.decoder.forward(torch.tensor([prompt], device=pair.device), positions[None],
                                                        (positions - 1)[None], request=b)
                self.decoder.commit(positions[None], torch.tensor([n]), request=b)
                extend_drafter(pair, self.draft_caches[b], features[0], positions.cpu())
                first = walk(self.settings, root_tree(prompt[-1]), logits[0, -1:], self.generator)
                self.tokens.append(prompt + [first.bonus_token])

    @property
    def batch_size(self) -> int:
        return len(self.tokens)

    def generated(self, b: int) -> list[int]:
        return self.tokens[b][self.prompt_lens[b]:]

    def fork(self, **overrides) -> BatchSession:
        """An independent copy (caches cloned); overrides as in Session.fork."""
        twin = object.__new__(BatchSession)
        twin.__dict__.update(self.__dict__)
        twin.settings, twin.generator = fork_settings(self.pair, self.settings, self.generator, overrides)
        twin.tokens = [list(t) for t in self.tokens]
        twin.records = list(self.records)
        twin.acceptance_lengths = [list(a) for a in self.acceptance_lengths]
        twin.times = dict(self.times)
        twin.draft_caches = [c.clone() if c is not None else None for c in self.draft_caches]
        twin.decoder = self.decoder.clone()
        return twin

    def step(self) -> RoundRecord:
        """One round for every request."""
        s, pair, device = self.settings, self.pair, self.pair.device
        ctx = [len(t) - 1 for t in self.tokens]
        for c in ctx:
            check_room(pair, s, c, self.max_len)
        times = dict.fromkeys(STAGES, 0.0)
        bonus = [t[-1] for t in self.tokens]
        with timed(times, "draft", device):
            dlogits = [None if s.method == "ar" else draft_logits(pair, x, c) for x, c in zip(bonus, self.draft_caches)]
        with timed(times, "tree", device):
            trees = [draft_tree(s, d, x) for d, x in zip(dlogits, bonus)]
        with timed(times, "pack", device):
            q = num_draft_tokens(s, pair)
            batch = pack_verify_batch(trees, ctx, q)
            shape = (self.batch_size, q)
            parents = padded_parents(trees, q)  # [B, Q], -1 for padding rows
        if self.cuda_graphs:
            self.decoder.capture(q)
        with timed(times, "verify", device):
            logits, features = self.decoder.forward(batch.input_ids.view(shape).to(device),
                                                    batch.positions.view(shape).to(device), parents.to(device))
        with timed(times, "walk", device):
            results = [walk(s, tree, logits[b, :tree.n_nodes], self.generator) for b, tree in enumerate(trees)]
        with timed(times, "commit", device):
            accepted = torch.full(shape, -1, dtype=torch.long)
            for b, r in enumerate(results):
                accepted[b, :len(r.accepted)] = torch.tensor(r.accepted)
            self.decoder.commit(accepted, torch.tensor([len(r.accepted) for r in results]))
            for b, (tree, r) in enumerate(zip(trees, results)):
                keep = torch.tensor(r.accepted)
                extend_drafter(pair, self.draft_caches[b], features[b, keep.to(device)], ctx[b] + tree.depths[keep])
                self.tokens[b] += r.committed
                self.acceptance_lengths[b].append(r.acceptance_length)
        requests = [] if not self.record else [request_round(pair, s, ctx[b], trees[b], dlogits[b], batch.input_ids[b * q:(b + 1) * q],
                                  batch.positions[b * q:(b + 1) * q], logits[b, :trees[b].n_nodes], results[b])
                    for b in range(self.batch_size)]
        record = RoundRecord(index=len(self.records), method=s.method, verify=s.verify, temperature=s.temperature,
                             top_p=s.top_p, budget=s.budget, num_draft_tokens=q, times=times, requests=requests)
        self.records.append(record)
        return record

    def run(self, max_new_tokens: int, *, stop_on_eos: bool = True, progress: bool = False) -> list[Generation]:
        """Step every request until each has `max_new_tokens` tokens (or EOS when stop_on_eos), or a context is
        full -> one Generation per request."""
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        first_record = len(self.records)
        eos = self.pair.eos_token_ids

        def done(b: int) -> bool:
            gen = self.generated(b)
            return len(gen) >= max_new_tokens or (stop_on_eos and eos_index(gen, eos) is not None)

        stopped = "max_new_tokens"
        bar = tqdm(total=self.batch_size, desc=f"{self.settings.method} batch", unit="req", disable=not progress)
        t0 = time.perf_counter()
        while not all(done(b) for b in range(self.batch_size)):
            try:
                self.step()
            except ContextFull:
                stopped = "context"
                break
            bar.update(sum(done(b) for b in range(self.batch_size)) - bar.n)
        bar.close()
        wall = time.perf_counter() - t0
        rounds = len(self.records) - first_record
        return [make_generation(self.pair, self.generated(b), self.records[first_record:],
                                self.acceptance_lengths[b][len(self.acceptance_lengths[b]) - rounds:],
                                self.times["prefill"], wall, max_new_tokens, stop_on_eos, stopped)
                for b in range(self.batch_size)]
