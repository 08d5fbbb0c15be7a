"""The native backend: every request of a batch in one static-cache round on the device (ddtree.engine.device_round).

A round drafts, builds and packs every request's tree, runs ONE verify forward over all requests' trees padded to
num_draft_tokens rows, walks them, compacts the caches and extends the drafter's context, reading back only the
accepted lengths and tokens. With cuda_graphs=True each stage is replayed as a CUDA graph from the second round on.
Host copies for records are made only when the session records.

budget="auto" (ddtree.budget): on the first such round the verify forward is timed at every candidate budget
(ddtree.engine.device_round.measure_verify_costs, CUDA graphs when cuda_graphs) unless the session was given
budget_costs. Each candidate budget has its own round (a DeviceRound that builds at the next larger candidate and
reads back the accepted rows and the built trees' weights: the host computes every candidate's expected and
counterfactual acceptance from them); a round's budget is chosen on the host from what the rounds up to two before
it read back, so choosing never waits for the device and rounds queue back to back as with a fixed budget. With cuda_graphs the first auto round captures every candidate's round (each runs once
first on a throwaway copy of the caches), so that no later round runs eagerly or captures: an eager round of the
whole model costs more than a whole graphed generation of a short answer.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import torch

from ddtree.budget import AR, LAG, AutoBudget, BudgetCosts, Choice, Observation, lookahead, observation
from ddtree.engine.decoder import NativeDecoder
from ddtree.engine.device_round import DeviceRound, Flight, measure_verify_costs
from ddtree.engine.drafter import StaticDrafter
from ddtree.record import KernelRead
from ddtree.rounds import RoundOutcome, request_round
from ddtree.settings import AUTO_CANDIDATES, Method, NativeOptions, Settings, autoregressive, num_draft_tokens
from ddtree.verify import VerifyResult

MASK_LAYOUTS = ("padded", "unpadded")


class AutoRounds(NamedTuple):
    """budget="auto" rounds under one Settings: one DeviceRound per candidate budget used so far."""
    settings: Settings
    bonus: torch.Tensor  # [B] the roots of the next trees, shared by every budget's round
    rounds: dict  # budget -> DeviceRound


class InFlight(NamedTuple):
    """A round started on the device (NativeBackend.start), read by finish or undone by cancel."""
    state: DeviceRound
    flight: Flight
    active: tuple  # [B] bool: the requests the round commits (the others are finished)
    choice: Choice | None = None  # budget="auto": the budget chosen and why
    warm: bool = False  # budget="auto": the round ran at full speed (its time is a steady overhead sample)
    undo: tuple = (None, ())  # budget="auto": (AutoBudget, the unobserved rounds) before this one started


class NativeBackend:
    name = "native"
    runs_finished = True  # a round computes the rows of requests the session has finished (static shapes)

    def __init__(self, pair, batch: int, max_len: int, options: NativeOptions = NativeOptions(), *,
                 budget_costs: BudgetCosts | None = None):
        attention, cuda_graphs, mask_layout, fused, exact = (options.attention, options.cuda_graphs,
                                                             options.mask_layout, options.fused, options.exact)
        if mask_layout not in MASK_LAYOUTS:
            raise ValueError(f"mask_layout must be one of {MASK_LAYOUTS}, got {mask_layout!r}")
        self.pair, self.max_len, self.mask_layout = pair, max_len, mask_layout
        self.decoder = NativeDecoder(pair.target, batch_size=batch, max_len=max_len,
                                     layer_ids=pair.target_layer_ids, attention=attention, fused=fused,
                                     exact=exact)
        if mask_layout != "padded" and self.decoder.attention != "custom_mask":
            raise ValueError("mask_layout='unpadded' needs attention='custom_mask' (the flat serving-engine mask)")
        graphable = pair.device.type == "cuda" and self.decoder.attention in ("triton", "exact")
        if cuda_graphs and not graphable:
            raise ValueError("cuda_graphs=True needs a CUDA pair with attention='triton' (or 'auto')")
        self.cuda_graphs = graphable if cuda_graphs is None else cuda_graphs  # None: wherever they can run
        draft_attention = "triton" if self.decoder.attention in ("triton", "exact") and pair.device.type == "cuda" \
            else "torch"
        self.drafter = None if pair.drafter is None else StaticDrafter(pair, batch_size=batch, max_len=max_len,
                                                                       attention=draft_attention, fused=fused)
        self.round_state: DeviceRound | None = None  # built for the current settings on the first round
        self.last_round: DeviceRound | None = None  # the round just run (budget="auto": the chosen budget's)
        self.given_costs = budget_costs
        self.auto: AutoBudget | None = None  # budget="auto": made on the first such round
        self.auto_rounds: AutoRounds | None = None
        self.unobserved: list = []  # budget="auto": the last two rounds started (InFlight or Observation), oldest
        # first; the oldest is observed when the next round is chosen
        self.active = (True,) * batch  # what decoder.active holds (the requests rounds commit)

    @property
    def budget_costs(self) -> BudgetCosts | None:
        """budget="auto": the cost table the rounds choose with (None before the first such round)."""
        return None if self.auto is None else self.auto.costs

    def prefill(self, prompts: list[list[int]]) -> torch.Tensor:
        """Prefill every prompt into its cache slot -> logits  # [B, vocab] at each prompt's last position."""
        last = []
        for b, prompt in enumerate(prompts):
            start = self.decoder.seq_lens[b:b + 1].clone()  # where the prompt's rows go
            logits, features = self.decoder.prefill(prompt, b)
            if self.drafter is not None:
                self.drafter.extend(features, start, slots=slice(b, b + 1))
            last.append(logits[-1])
        return torch.stack(last)

    def start(self, settings: Settings, tokens: list[list[int]], coins, active: list[bool]) -> InFlight:
        """Queue one round of every request; `tokens[b]` its committed tokens (only read when the round's device
        state is built: a round queued ahead of the last one's readback passes that round's tokens), `coins
        # [2, B, Q]` (sampled) or None, `active[b]` False for a request the session has finished (its rows are
        computed, the static shapes stay, but it commits nothing). Never waits for the device (budget="auto"
        included: ddtree.budget). A start that fails (or is interrupted) puts the caches and roots back to `tokens`
        and is raised."""
        auto = self.auto, self.unobserved
        try:
            if tuple(active) != self.active:  # queued before the round: a round already in flight is not changed
                self.decoder.active.copy_(torch.tensor(active, device=self.pair.device))
                self.active = tuple(active)
            if settings.auto:
                return self._start_auto(settings, [t[-1] for t in tokens], coins)
            state = self.round_state
            if state is None or state.settings != settings:
                bonus = torch.tensor([t[-1] for t in tokens], device=self.pair.device)  # [B] roots of the next trees
                state = self.round_state = DeviceRound(self.decoder, self.drafter, settings, bonus,
                                                       num_draft_tokens(settings, self.pair),
                                                       cuda_graphs=self.cuda_graphs, mask_layout=self.mask_layout)
            self.last_round = state
            return InFlight(state, state.launch(coins), self.active)
        except BaseException:
            self.auto, self.unobserved = auto
            self._reset(tokens)
            raise

    def finish(self, flight: InFlight, tokens: list[list[int]], top_k: int | None, probe: bool) -> RoundOutcome:
        """Wait for a started round and read it; `tokens` the committed tokens before it. Records (`top_k`) and the
        probe read the round's device tensors: only for the round started last. A failure here leaves the round
        committed on the device: the session undoes it (`cancel`)."""
        state = flight.state
        readback, times = state.land(flight.flight)
        if bool(readback.bad_logits):
            raise ValueError("the target or the drafter produced NaN or +inf logits; nothing was committed (check "
                             "the model weights and dtype)")
        batch, lengths = len(tokens), readback.accept_len.tolist()
        committed = [row[1:n] + [bonus] if on else [] for row, n, bonus, on in
                     zip(readback.tokens.tolist(), lengths, readback.bonus.tolist(), flight.active)]
        roots, ctx = [t[-1] for t in tokens], [len(t) - 1 for t in tokens]
        requests = []
        if top_k is not None:
            trees = state.trees.split(roots)
            requests = [self._request(state, state.settings, b, ctx[b], trees[b], committed[b], top_k)
                        if flight.active[b] else None for b in range(batch)]
        kernel = None
        if probe or state.packed.layout is not None:
            kernel = self._kernel_read(state, ctx, probe)
        return RoundOutcome(committed=committed, times=times, rows=state.rows, requests=requests, kernel=kernel,
                            choice=flight.choice)

    def cancel(self, flights: list[InFlight], tokens: list[list[int]]) -> None:
        """Undo started rounds (oldest first) that the session does not commit (queued past the end of a run, or
        behind a failure): the caches and roots go back to `tokens` (every request's committed tokens), the budget
        choice to before the oldest; what the rounds wrote past them is scratch."""
        for flight in flights:
            flight.state.land(flight.flight)
        undo = next((f.undo for f in flights if any(f is u for u in self.unobserved)), None)
        if undo is not None:  # budget="auto": choose on as if they had never started
            self.auto, before = undo
            self.unobserved = [self._settled(r) for r in before]  # their timers are recorded again by later rounds
        self._reset(tokens, [f.state for f in flights])

    def park(self, requests: list[int], tokens: list[list[int]]) -> None:
        """Drop what the last round committed for `requests`, which the session had finished (with overlap a round
        is queued before the readback that finishes a request): their lengths and roots back to `tokens`. Queued
        after the rounds already started, which commit nothing for them."""
        self._reset(tokens, requests=requests)

    def _reset(self, tokens: list[list[int]], states=(), requests: list[int] | None = None) -> None:
        """Committed lengths and the roots of the current rounds (and of `states`) back to `tokens`, for
        `requests` (default all)."""
        device = self.pair.device
        rows = list(range(len(tokens))) if requests is None else requests
        at = torch.tensor(rows, device=device)
        self.decoder.seq_lens[at] = torch.tensor([len(tokens[b]) - 1 for b in rows], device=device)
        roots = torch.tensor([tokens[b][-1] for b in rows], device=device)
        rounds = [self.round_state, *(() if self.auto_rounds is None else self.auto_rounds.rounds.values()), *states]
        for bonus in {id(r.bonus): r.bonus for r in rounds if r is not None}.values():
            bonus[at] = roots

    def _start_auto(self, settings: Settings, roots: list[int], coins) -> InFlight:
        """budget="auto": observe the round two before this one, choose, launch the chosen budget's round."""
        if self.auto is None:
            costs = self.given_costs or BudgetCosts.blank(AUTO_CANDIDATES)
            if costs.unmeasured:  # all at once: a measurement between queued rounds would race them
                costs = costs.filled(costs.unmeasured, measure_verify_costs(
                    self.decoder, costs.unmeasured, cuda_graphs=self.cuda_graphs))
            self.auto = AutoBudget(costs)
        rounds = self.auto_rounds
        if rounds is None or rounds.settings != settings:
            rounds = self.auto_rounds = AutoRounds(settings, torch.tensor(roots, device=self.pair.device), {})
            if self.cuda_graphs:
                self._capture_rounds(rounds)
        pending = self.unobserved  # rounds r - 2 (landed) and r - 1 (maybe still running), or fewer
        if len(pending) == LAG:  # the oldest is observed now: read it (no wait)
            pending = [self._settled(pending[0]), *pending[1:]]
        undo = self.auto.copy(), pending
        budget, pending = self.auto.choose_next(pending, len(roots))
        state = rounds.rounds.get(budget)
        if state is None:
            state = rounds.rounds[budget] = self._auto_round(rounds, budget)
        warm = state.warm
        self.last_round = state
        started = InFlight(state, state.launch(None if coins is None else coins[..., :budget + 1]), self.active,
                           self.auto.choice, warm, undo)
        self.unobserved = pending + [started]
        return started

    def _settled(self, round_: InFlight | Observation | None) -> Observation | None:
        """The Observation of a round (waiting for it to land); None for none or one with non-finite logits."""
        if round_ is None or isinstance(round_, Observation):
            return round_
        readback, times = round_.state.land(round_.flight)
        if bool(readback.bad_logits):
            return None
        overhead = sum(times.values()) - times["verify"] if round_.warm else None
        on = torch.tensor(round_.active)  # [B] the requests it committed
        trees = (None, None) if readback.node_logws is None else (readback.node_logws[on], readback.accepted[on])
        return observation(self.auto.costs.budgets, round_.choice.budget, round_.state.build, *trees, overhead,
                           times["draft"] + times["tree"])

    def _auto_round(self, rounds: AutoRounds, budget: int, decoder=None, drafter=None, bonus=None,
                    cuda_graphs=None) -> DeviceRound:
        """The round of candidate `budget`: DDTree built one candidate further, or (AR) the root alone, whose
        commit still extends the drafter's context."""
        settings, build = dataclasses.replace(rounds.settings, budget=budget), None
        if budget == AR:
            settings = autoregressive(rounds.settings)
        else:
            build = lookahead(self.auto.costs.budgets, budget)
        return DeviceRound(decoder or self.decoder, drafter or self.drafter, settings,
                           rounds.bonus if bonus is None else bonus, budget + 1,
                           cuda_graphs=self.cuda_graphs if cuda_graphs is None else cuda_graphs,
                           mask_layout=self.mask_layout, build=build)

    def _capture_rounds(self, rounds: AutoRounds) -> None:
        """Every candidate's round, captured now: first each runs once, eagerly, on copies of the caches and bonus
        tokens (compiling its kernels for its shapes; the copies are dropped), then the real rounds are captured."""
        budgets = self.auto.costs.budgets
        decoder, drafter, bonus = self.decoder.clone(), self.drafter.clone(), rounds.bonus.clone()
        for budget in budgets:
            decoder.seq_lens.copy_(self.decoder.seq_lens)  # each from the real state: room for its rows
            self._auto_round(rounds, budget, decoder, drafter, bonus, cuda_graphs=False).launch(None)
        torch.cuda.synchronize()
        del decoder, drafter, bonus
        for budget in budgets:
            state = rounds.rounds[budget] = self._auto_round(rounds, budget)
            state.capture()

    def _kernel_read(self, state: DeviceRound, ctx: list[int], probe: bool) -> KernelRead:
        """What the attention kernel read in the round just run: the flat mask (custom_mask) and, with `probe`, the
        mask it effectively applied per request (the probe runs the same kernel on the round's mask, not its
        caches)."""
        packed, layout = state.packed, state.packed.layout
        seq_lens = torch.tensor(ctx, device=self.decoder.device)
        applied = self.decoder.probe(packed.visible, seq_lens, state.rows) if probe else None
        if applied is not None and layout is not None:  # in the flat mask's own rows: q_b x (seq_len_b + q_b)
            applied = [m[:layout.rows(b), :ctx[b] + layout.rows(b)] for b, m in enumerate(applied)]
        return KernelRead(attention=self.decoder.attention, mask_layout=self.mask_layout,
                          custom_mask=None if layout is None else layout.custom_mask,
                          mask_indptr=None if layout is None else layout.mask_indptr, applied=applied)

    def _request(self, state: DeviceRound, settings, b: int, ctx: int, tree, committed: list[int], top_k: int):
        """Request b's RequestRound: the top-K of the draft and target logits taken on the device, what the record
        keeps copied to the host."""
        accepted = state.walked.accepted[b, :len(committed)].tolist()
        result = VerifyResult(accepted=accepted, accepted_tokens=committed[:-1], bonus_token=committed[-1])
        dlogits = None if settings.method == Method.AR else state.dlogits[b]
        return request_round(self.pair, settings, ctx, tree, dlogits, state.packed.ids[b].cpu(),
                             state.packed.positions[b].cpu(), state.verified.logits[b, :tree.n_nodes], result,
                             top_k)

    def fork(self) -> NativeBackend:
        """An independent copy (caches cloned; the round and its graphs are built again)."""
        twin = object.__new__(NativeBackend)
        twin.__dict__.update(self.__dict__)
        twin.decoder = self.decoder.clone()
        twin.drafter = self.drafter.clone() if self.drafter is not None else None
        twin.round_state = twin.last_round = None
        twin.auto = None if self.auto is None else self.auto.copy()
        twin.auto_rounds = None
        twin.unobserved = [self._settled(r) for r in self.unobserved]  # the twin's next rounds observe them too
        return twin
