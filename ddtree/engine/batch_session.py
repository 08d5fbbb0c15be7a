"""Batched sessions on the native engine: several prompts decoded together, every round on the device.

A round (ddtree.engine.device_round) drafts, builds and packs every request's tree, runs ONE static-cache verify
forward over all requests' trees padded to num_draft_tokens rows, walks them, compacts the caches and extends the
drafter's context, reading back only the accepted lengths and tokens. With cuda_graphs=True each stage is replayed
as a CUDA graph from the second round on. Records carry one RequestRound per request (host copies are made only
when record=True).
"""
from __future__ import annotations

import time

import torch
from tqdm.auto import tqdm

from ddtree._checks import check_int
from ddtree.engine.decoder import NativeDecoder
from ddtree.engine.device_round import DeviceRound, record_inputs
from ddtree.engine.drafter import StaticDrafter
from ddtree.models import ModelPair
from ddtree.record import RoundRecord
from ddtree.session import (ContextFull, Generation, check_room, encode_prompt, eos_index, fork_settings,
                            make_generation, make_settings, num_draft_tokens, request_round, timed, walk)
from ddtree.tree import DraftTree, root_tree
from ddtree.verify import VerifyResult


class BatchSession:
    """`BatchSession(pair, prompts, ...)`: Session's options plus `max_len` (cache entries per request; default
    the longest prompt + 1024, capped at the target's context), `attention` ("auto", "triton", "torch"),
    `cuda_graphs` (replay every stage of a round as a CUDA graph; CUDA with Triton attention) and `record`
    (False keeps only tokens and acceptance lengths: rounds return RoundRecords without requests, for benchmarks).

    Sampled verification walks the tree by DOMAIN rule B (ddtree.kernels.verify_sampled_tree), exact like the
    reference path's rule A but with different draws for the same seed."""

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
        self.cuda_graphs, self.record = bool(cuda_graphs), bool(record)
        if self.cuda_graphs and (pair.device.type != "cuda" or self.decoder.attention != "triton"):
            raise ValueError("cuda_graphs=True needs a CUDA pair with attention='triton' (or 'auto')")
        attention = "triton" if self.decoder.attention == "triton" else "torch"
        self.drafter = None if pair.drafter is None else StaticDrafter(pair, batch_size=len(ids),
                                                                       max_len=self.max_len, attention=attention)
        self.prompt_lens = [len(x) for x in ids]
        self.acceptance_lengths: list[list[int]] = [[] for _ in ids]  # per request, one entry per round
        self.records: list[RoundRecord] = []
        self.times = {"prefill": 0.0}
        self.tokens = []
        with timed(self.times, "prefill", pair.device):
            for b, prompt in enumerate(ids):
                n = len(prompt)
                positions = torch.arange(n, device=pair.device)
                logits, features = self.decoder.forward(torch.tensor([prompt], device=pair.device), positions[None],
                                                        (positions - 1)[None], request=b)
                if self.drafter is not None:
                    self.drafter.extend(features, self.decoder.seq_lens[b:b + 1], slots=slice(b, b + 1))
                self.decoder.commit(positions[None], torch.tensor([n]), request=b)
                first = walk(self.settings, root_tree(prompt[-1]), logits[0, -1:], self.generator)
                self.tokens.append(prompt + [first.bonus_token])
        self.bonus = torch.tensor([t[-1] for t in self.tokens], device=pair.device)  # [B] roots of the next trees
        self.round = self._new_round()

    def _new_round(self) -> DeviceRound:
        return DeviceRound(self.decoder, self.drafter, self.settings, self.bonus,
                           num_draft_tokens(self.settings, self.pair), self.generator, cuda_graphs=self.cuda_graphs)

    @property
    def batch_size(self) -> int:
        return len(self.tokens)

    def generated(self, b: int) -> list[int]:
        return self.tokens[b][self.prompt_lens[b]:]

    def fork(self, **overrides) -> BatchSession:
        """An independent copy (caches cloned, graphs captured again); overrides as in Session.fork."""
        twin = object.__new__(BatchSession)
        twin.__dict__.update(self.__dict__)
        twin.settings, twin.generator = fork_settings(self.pair, self.settings, self.generator, overrides)
        twin.tokens = [list(t) for t in self.tokens]
        twin.records = list(self.records)
        twin.acceptance_lengths = [list(a) for a in self.acceptance_lengths]
        twin.times = dict(self.times)
        twin.decoder = self.decoder.clone()
        twin.drafter = self.drafter.clone() if self.drafter is not None else None
        twin.bonus = self.bonus.clone()
        twin.round = twin._new_round()
        return twin

    def step(self) -> RoundRecord:
        """One round for every request."""
        s, pair = self.settings, self.pair
        ctx = [len(t) - 1 for t in self.tokens]
        for c in ctx:
            check_room(pair, s, c, self.max_len)
        roots = [t[-1] for t in self.tokens]
        readback, times = self.round.run()  # [B, Q + 3]: accept_len, bonus, tokens at the accepted nodes, flag
        if readback[0, -1]:
            raise ValueError(f"round {len(self.records)}: the target or the drafter produced NaN or +inf logits; "
                             "nothing was committed (check the model weights and dtype)")
        committed = []  # per request: (accepted draft tokens, bonus token)
        for b, row in enumerate(readback.tolist()):
            n = row[0]
            committed.append((row[3:2 + n], row[1]))
            self.tokens[b] += row[3:2 + n] + [row[1]]
            self.acceptance_lengths[b].append(n)
        requests = [self._request(b, ctx[b], roots[b], *committed[b]) for b in range(self.batch_size)] \
            if self.record else []
        record = RoundRecord(index=len(self.records), method=s.method, verify=s.verify, temperature=s.temperature,
                             top_p=s.top_p, budget=s.budget, num_draft_tokens=self.round.rows, times=times,
                             requests=requests)
        self.records.append(record)
        return record

    def _request(self, b: int, ctx: int, root: int, accepted_tokens: list[int], bonus: int):
        """Request b's RequestRound, from host copies of the round's device tensors."""
        got = record_inputs(self.round.out, b)
        tree = DraftTree(**got["tree"]).with_root_token(root)
        result = VerifyResult(accepted=got["accepted"], accepted_tokens=accepted_tokens, bonus_token=bonus)
        return request_round(self.pair, self.settings, ctx, tree, got["dlogits"], got["ids"], got["positions"],
                             got["logits"], result)

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
