"""Sessions: step DDTree, DFlash (chain) or autoregressive decoding round by round, on either backend.

`Session(pair, prompt_or_prompts, backend=...)` decodes a batch of prompts (one prompt is a batch of one). One round,
for every method and every request:
  drafter forward on [bonus, MASK...] conditioned on the committed context  (skipped for "ar")
  -> a tree (build_tree for "ddtree", chain_tree for "dflash", the root alone for "ar"), rooted at the bonus token
  -> a verify batch padded to num_draft_tokens rows -> ONE target forward over the tree with the ancestor mask at
     positions context + depth -> greedy or exact sampled walk (rule B, ddtree.verify)
  -> keep only the accepted path in the target KV cache -> the accepted nodes' target features extend the drafter.

Backends (implementations behind this one interface):
  "reference"  the Hugging Face target and drafter modules, one target forward per request (ddtree.reference)
  "native"     the static-cache engine, one forward for the whole batch, the round on the device (ddtree.engine)
  "auto"       native on CUDA, reference elsewhere.
The session draws every random number (the walk's coins) and keeps the committed tokens, so one seed gives the
same tokens and records on both backends.
"""
from __future__ import annotations

import dataclasses
import time
from typing import NamedTuple

import torch
from tqdm.auto import tqdm

from ddtree._checks import check_bool, check_int
from ddtree.budget import AR, BudgetCosts
from ddtree.engine.backend import NativeBackend
from ddtree.generation import Generation, eos_index, make_generation
from ddtree.models._common import native_bfloat16_cpu
from ddtree.record import RoundRecord
from ddtree.reference import ReferenceBackend
from ddtree.rounds import TOP_K, Backend, first_tokens, timed
from ddtree.settings import (BACKENDS, ContextFull, Method, NativeOptions, as_prompt_list, check_room, encode_prompts,
                             fork_generator, fork_settings, make_settings, new_generator, num_draft_tokens)
from ddtree.verify import draw_coins


class Started(NamedTuple):
    """A round a backend started: its handle, the random state before its coins were drawn, the requests in it."""
    flight: object  # the backend's handle (NativeBackend.start / ReferenceBackend.start)
    generator_state: torch.Tensor
    active: list[bool]  # [B] False: a request run() has finished (it takes no part: no commit, no record)


class Session:
    """Decode prompts round by round: `.step()` -> RoundRecord (one RequestRound per request), `.run(n)` -> one
    Generation per request, `.fork(**overrides)` -> an independent copy.

    Options: method ("ddtree", "dflash", "ar"), budget (an int, one per request, or "auto": each round's DDTree budget
    chosen from the drafter's confidence and the verify cost per budget, see ddtree.budget; budget_costs gives that
    cost table, a BudgetCosts for this batch size, instead of measuring it on the first round), verify ("greedy",
    "sampled"), temperature, top_p, seed, chat (apply the chat template to string prompts), backend ("auto", "reference",
    "native"), special_tokens ("text": special-token strings in string prompts, such as "<|im_end|>", are plain text,
    the default; "control": they are the control tokens they name, e.g. for prompts templated by hand with
    chat=False; see ModelPair.encode), max_len (cache entries per request; default the target's context, on the native engine the longest
    prompt + 1024 capped at it), record (False keeps only tokens: records without requests, for benchmarks),
    record_top_k (draft and target top-K kept per depth / node in records). Native engine only: attention ("auto",
    "triton", "torch", "custom_mask": the serving engine's flat mask + mask_indptr), cuda_graphs (replay each round
    stage as a CUDA graph; default: wherever they can run, a CUDA pair with Triton attention), mask_layout ("padded", or "unpadded" to reproduce the
    padding bug with attention="custom_mask"), fused (the fused target and drafter forwards; default on CUDA, True on
    a CPU runs their kernels in Triton's interpreter), exact (bit-exact mode: every verify row computes the bits an
    autoregressive step computes, so greedy DDTree and DFlash output equals greedy autoregressive output bit for bit;
    see ddtree.engine.decoder; on a CPU its kernels run in Triton's interpreter), overlap (`run` queues each round
    on the device before reading the previous one back, so the GPU never waits for Python between rounds; the round
    queued past the end is undone. Needs record=False: a record reads the round's device tensors, which the next
    round overwrites. Default: on CUDA when record=False and attention is not "custom_mask", whose flat mask is
    packed on the host).
    """

    def __init__(self, pair, prompt_or_prompts, *, method: str = "ddtree", budget=32, verify: str = "greedy",
                 temperature: float = 1.0, top_p: float = 1.0, seed: int = 0, chat: bool = True,
                 backend: str = "auto", max_len: int | None = None, record: bool = True, record_top_k: int = TOP_K,
                 budget_costs: BudgetCosts | None = None, special_tokens: str = "text", **native_options):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        options = NativeOptions.from_flags(native_options)
        if backend == "auto":
            backend = "native" if pair.device.type == "cuda" else "reference"
        chat, record = check_bool("chat", chat), check_bool("record", record)
        if backend == "reference" and options.native_only():
            raise ValueError(f"{sorted(native_options)} apply to backend='native' only")
        prompts = as_prompt_list(prompt_or_prompts)
        self.pair = pair
        self.settings = make_settings(pair, len(prompts), method=method, budget=budget, verify=verify,
                                      temperature=temperature, top_p=top_p)
        if budget_costs is not None:
            if not isinstance(budget_costs, BudgetCosts):
                raise ValueError(f"budget_costs must be a ddtree.BudgetCosts, got {type(budget_costs).__name__}")
            if not self.settings.auto:
                raise ValueError("budget_costs applies to budget='auto' only")
            if max(budget_costs.budgets) > self.settings.max_budget:
                raise ValueError(f"budget_costs.budgets must be at most {self.settings.max_budget}, got "
                                 f"{max(budget_costs.budgets)}")
        self.generator = new_generator(pair.device, seed)
        self.record = record
        self.record_top_k = check_int("record_top_k", record_top_k, minimum=1)
        limit = pair.max_context if max_len is None else min(check_int("max_len", max_len, minimum=1),
                                                             pair.max_context)
        ids = encode_prompts(pair, prompts, chat, self.settings, limit, special_tokens)
        if max_len is None and backend == "native":  # a static cache: room for 1024 tokens and a round past the
            rows = max(num_draft_tokens(self.settings, pair), pair.block_size if pair.drafter is not None else 1)
            limit = min(limit, max(len(x) for x in ids) + 1024 + rows)  # longest prompt
        max_len = limit
        self.backend: Backend
        if backend == "native":
            overlap = options.overlap
            self.backend = NativeBackend(pair, len(ids), max_len, options, budget_costs=budget_costs)
            hosted = self.backend.decoder.attention == "custom_mask"
            if overlap and (self.record or hosted):
                raise ValueError("overlap=True needs record=False (records read each round's device tensors) and an "
                                 "attention other than 'custom_mask' (its flat mask is packed on the host)")
            self.overlap = (pair.device.type == "cuda" and not self.record and not hosted) if overlap is None \
                else overlap
        else:
            self.backend = ReferenceBackend(pair, len(ids), max_len, budget_costs=budget_costs)
            self.overlap = False
        self.prompt_lens = [len(x) for x in ids]
        self.records: list[RoundRecord] = []
        self.acceptance_lengths: list[list[int]] = [[] for _ in ids]  # per request, one entry per round
        self.times = {"prefill": 0.0}
        with timed(self.times, "prefill", pair.device):
            last = self.backend.prefill(ids)  # [B, vocab]
            coins = draw_coins(self.generator, len(ids), 1, pair.device) if self.settings.sampled else None
            first = first_tokens(self.settings, last, [x[-1] for x in ids], coins)
        self.tokens = [x + [t] for x, t in zip(ids, first)]  # per request: prompt + generated

    # ----------------------------------------------------------------------------------------------- state
    @property
    def batch_size(self) -> int:
        return len(self.tokens)

    @property
    def budget_costs(self) -> BudgetCosts | None:
        """budget="auto": the verify cost per candidate budget the rounds choose with (measured on the first such
        round, or given); None before."""
        return self.backend.budget_costs

    @property
    def fast_path(self) -> str:
        """What of the fast path this session runs, and why any part of it is off (shown by repr)."""
        b, cuda = self.backend, self.pair.device.type == "cuda"
        if b.name == "reference":
            cpu = "" if cuda or self.settings.method != Method.DDTREE or self.settings.auto else (
                "; on a CPU a verify of many rows costs more than an autoregressive step: budget='auto' stops "
                "speculating where that does not pay")
            if not cuda and self.pair.dtype == torch.float32 and native_bfloat16_cpu():
                cpu += ("; this CPU multiplies bfloat16 natively: a bfloat16 pair (load_default_pair() picks it) "
                        "runs faster and makes trees cheaper (docs/guide.md, 'Speed on a CPU')")
            return ("reference backend: one Hugging Face forward per request" +
                    (" (backend='native' is the fast path on CUDA)" if cuda else "") + cpu)
        attention = b.decoder.attention
        graphs = "on" if b.cuda_graphs else ("off: needs a CUDA pair" if not cuda else
                                             f"off: attention={attention!r} (they need Triton attention)"
                                             if attention not in ("triton", "exact") else "off: cuda_graphs=False")
        overlap = "on" if self.overlap else "off: " + (
            "on CUDA only" if not cuda else "records read each round (record=False overlaps)" if self.record else
            "attention='custom_mask' packs its mask on the host" if attention == "custom_mask" else "overlap=False")
        records = "; each round's record is built on the host (record=False runs at the benchmark's speed)" \
            if cuda and self.record else ""
        return f"native engine, attention {attention}, CUDA graphs {graphs}, overlap {overlap}{records}"

    def __repr__(self) -> str:
        s = self.settings
        return (f"Session({self.batch_size} request{'s' if self.batch_size > 1 else ''}, {s.method}, budget "
                f"{s.budget}, {s.verify}{f' T={s.temperature:g}' if s.sampled else ''}, {len(self.records)} rounds; "
                f"{self.fast_path})")

    @property
    def generated(self) -> list[list[int]]:
        """Generated tokens of every request (prompts excluded)."""
        return [t[n:] for t, n in zip(self.tokens, self.prompt_lens)]

    @property
    def context_lens(self) -> list[int]:
        """Committed tokens in each request's target cache (all but its last committed token)."""
        return [len(t) - 1 for t in self.tokens]

    # ----------------------------------------------------------------------------------------------- rounds
    def step(self, *, probe: bool = False) -> RoundRecord:
        """Run one round of every request and return its record. `probe=True` (native backend) also recovers the
        mask the attention kernel effectively applied to every request (record.kernel.applied). If the round
        fails at any stage, before or after the backend's commit, or is interrupted (KeyboardInterrupt included),
        tokens, caches, records and the random state are put back as they were and the error is raised."""
        if probe and self.backend.name != "native":
            raise ValueError("probe=True needs backend='native' (it probes the engine's attention kernel)")
        started = self._start()
        try:
            return self._finish(started, bool(probe))
        except BaseException:
            self._undo([started])
            raise

    def _start(self, in_flight: int = 0, active: list[bool] | None = None) -> Started:
        """Start a round of the `active` requests (default all); `in_flight` tokens the round before it may still
        commit (its rows: room is kept for them, in every request whose rows the backend computes). A backend's
        start that fails leaves its state as it was; the random state is put back here."""
        s, pair = self.settings, self.pair
        active = [True] * self.batch_size if active is None else active
        for ctx, on in zip(self.context_lens, active):
            if on or self.backend.runs_finished:
                check_room(pair, s, ctx + in_flight, self.backend.max_len)
        state = self.generator.get_state()
        try:
            coins = draw_coins(self.generator, self.batch_size, num_draft_tokens(s, pair), pair.device) \
                if s.sampled else None
            return Started(self.backend.start(s, self.tokens, coins, active), state, active)
        except BaseException as e:
            self.generator.set_state(state)
            numbered = self._numbered(e)
            if numbered is e:
                raise
            raise numbered from e

    def _full(self) -> list[bool]:
        """Per request: whether its context has no room for another round."""
        full = []
        for ctx in self.context_lens:
            try:
                check_room(self.pair, self.settings, ctx, self.backend.max_len)
                full.append(False)
            except ContextFull:
                full.append(True)
        return full

    def _finish(self, started: Started, probe: bool, finished: list[bool] | None = None) -> RoundRecord:
        """Read a started round and commit it. Everything that can fail (the backend's readback, the records, their
        text) runs before the session's own state changes, in one assignment; on failure the caller undoes the
        round (`_undo`), whose device commit has happened. `finished[b]`: request b was done before this round
        (with overlap it was queued before the readback that finished it): its commit is dropped (`park`)."""
        s = self.settings
        drop = [b for b, (on, done) in enumerate(zip(started.active, finished or [False] * self.batch_size))
                if on and done]
        active = [on and b not in drop for b, on in enumerate(started.active)]
        try:
            outcome = self.backend.finish(started.flight, self.tokens, self.record_top_k if self.record else None,
                                          probe)
            choice = outcome.choice
            budgets = s.budgets(self.batch_size) if choice is None else [choice.budget] * self.batch_size
            requests = [None if r is None or not on else dataclasses.replace(r, budget=n)
                        for r, n, on in zip(outcome.requests, budgets, active)]
            method = "ar" if choice is not None and choice.budget == AR else s.method
            record = RoundRecord(index=len(self.records), method=method, verify=s.verify,
                                 temperature=s.temperature, top_p=s.top_p, budget=max(budgets),
                                 num_draft_tokens=outcome.rows, times=outcome.times, requests=requests,
                                 kernel=outcome.kernel, choice=choice)
            tokens = [t + c if on else t for t, c, on in zip(self.tokens, outcome.committed, active)]
            lengths = [a + [len(c)] if on else a for a, c, on in zip(self.acceptance_lengths, outcome.committed,
                                                                         active)]
            if drop:
                self.backend.park(drop, self.tokens)
        except ValueError as e:
            numbered = self._numbered(e)
            if numbered is e:
                raise
            raise numbered from e
        self.tokens, self.acceptance_lengths = tokens, lengths
        self.records.append(record)
        return record

    def _numbered(self, e: BaseException) -> BaseException:
        """A round's ValueError with the round's index in front; any other error as it is."""
        if isinstance(e, ValueError) and not isinstance(e, ContextFull):
            return ValueError(f"round {len(self.records)}: {e}")
        return e

    def run(self, max_new_tokens: int, *, stop_on_eos: bool = True, progress: bool = False) -> list[Generation]:
        """Step until every request has `max_new_tokens` generated tokens (counting those already generated) or,
        when stop_on_eos, has committed an EOS token, or its context is full -> one Generation per request (its
        tokens cut at max_new_tokens and after EOS). A request that is done takes no part in later rounds (no
        commit, no context, no record: its entry in their records is None; on the reference backend no tree and no
        rows either), so each request of a greedy batch gets what it gets alone. With overlap (native engine) each
        round is queued before the previous one is read back (a request may run one round already queued when it
        finished; its tokens are cut); the one queued past the end is undone, so the session continues as if it
        had stepped."""
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        first_record = len(self.records)
        eos = self.pair.eos_token_ids

        def done(gen: list[int]) -> bool:
            return len(gen) >= max_new_tokens or (stop_on_eos and eos_index(gen, eos) is not None)

        stopped = ["max_new_tokens"] * self.batch_size  # per request; "context" once its context is full
        first_round = [len(a) for a in self.acceptance_lengths]
        unit, total = ("tok", max_new_tokens) if self.batch_size == 1 else ("req", self.batch_size)
        bar = tqdm(total=total, desc=f"{self.settings.method} decoding", unit=unit, disable=not progress)
        flying: list[Started] = []  # rounds started and not yet read back, oldest first (two with overlap)
        t0 = time.perf_counter()
        try:
            while True:  # finished requests take no part in later rounds
                active = [why != "context" and not done(g) for why, g in zip(stopped, self.generated)]
                if not flying:  # a full context stops its request (every request where the backend computes the
                    full = self._full()  # rows of every request, finished or not)
                    blocked = self.backend.runs_finished and any(full)
                    for b in range(self.batch_size):
                        if active[b] and (full[b] or blocked):
                            active[b], stopped[b] = False, "context"
                    if not any(active):
                        break
                    flying.append(self._start(active=active))
                elif not any(active):
                    break
                if self.overlap:
                    try:
                        flying.append(self._start(num_draft_tokens(self.settings, self.pair), active))
                    except ContextFull:  # near the end of the context: this round is read first
                        pass
                started = flying.pop(0)
                try:
                    self._finish(started, False, [done(g) for g in self.generated])
                except BaseException:
                    flying.insert(0, started)
                    raise
                now = min(len(self.generated[0]), max_new_tokens) if self.batch_size == 1 else \
                    sum(done(g) for g in self.generated)
                bar.update(now - bar.n)
        finally:  # rounds queued past the end, or behind a failure or an interrupt
            self._undo(flying)
        bar.close()
        wall = time.perf_counter() - t0
        records = self.records[first_record:]
        return [make_generation(self.pair, gen, records, lengths[start:], self.times["prefill"], wall,
                                max_new_tokens, stop_on_eos, why)
                for gen, lengths, start, why in zip(self.generated, self.acceptance_lengths, first_round, stopped)]

    def _undo(self, flying: list[Started]) -> None:
        """Undo rounds started and not committed (oldest first; a round whose commit failed included): caches,
        roots and the random state go back to the committed tokens, as before the oldest of them."""
        if flying:
            self.backend.cancel([started.flight for started in flying], self.tokens)
            self.generator.set_state(flying[0].generator_state)

    def fork(self, **overrides) -> Session:
        """An independent copy of this session's state; `overrides` (method, budget, verify, temperature, top_p,
        seed) change how the next rounds run. Without `seed` the sampler continues from the same random state; a
        budget="auto" left out of the overrides is dropped for method "dflash" / "ar" (it applies to DDTree only)."""
        seed = overrides.pop("seed", None)
        twin = object.__new__(Session)
        twin.__dict__.update(self.__dict__)
        twin.settings = fork_settings(self.pair, self.batch_size, self.settings, overrides)
        twin.generator = fork_generator(self.generator, self.pair.device, seed)
        twin.backend = self.backend.fork()
        twin.tokens = [list(t) for t in self.tokens]
        twin.records = list(self.records)
        twin.acceptance_lengths = [list(a) for a in self.acceptance_lengths]
        twin.times = dict(self.times)
        return twin
