"""One decoding round of a whole batch on the device: draft -> tree -> pack -> verify -> walk -> commit.

Each stage is a function of persistent device tensors (the target's and drafter's static caches, seq_lens, the
bonus tokens, the walk's coins) with no host synchronisation, so on CUDA each stage is captured once as a CUDA
graph and replayed every round; CUDA events between the stages time them without a sync. Each stage leaves its
outputs in one typed value (dlogits, TreeBatch, Packed, Verified, Walked, Readback); the host copies only the
Readback (accepted lengths, bonus tokens, accepted tokens, a non-finite-logits flag).

  draft   ddtree.engine.drafter.StaticDrafter: one batched block forward -> dlogits  # [B, depth, V]
  tree    DDTree: ddtree.kernels.tree_build.select_trees (= ddtree.build_tree), cut to each request's budget;
          DFlash: the argmax chain; autoregressive: the root alone. A TreeBatch padded to Q = num_draft_tokens rows.
  pack    input ids (padding rows carry the root token at the root position), positions = seq_len + depth,
          ancestor bitmask and retrieve encoding (first child / next sibling), ddtree.kernels.tree_pack; with
          attention="custom_mask" also the serving engine's flat mask (ddtree.pack_verify_batch, on the host)
  verify  NativeDecoder.forward_visible over the B x Q rows -> logits  # [B, Q, V], features  # [B, Q, F]
  walk    ddtree.kernels.tree_verify: greedy, or exact sampling (rule B) with the coins the session drew
  commit  the accepted nodes' features extend the drafter's context, the target's KV cache is compacted
          (ddtree.kernels.kv_compact) and the new bonus tokens root the next round

budget="auto" splits a round in two (ddtree.engine.backend): a head DeviceRound runs draft and tree at the largest
candidate budget and the expected acceptance per candidate (ddtree.budget.expected_accepts, summed over the
requests); the host reads that (K floats: the round's one wait before its tail) and picks the budget; the tail
DeviceRound of that budget (one per budget, each with its own graphs) cuts the head's trees to its rows and runs
pack, verify, walk, commit, its Readback also holding what each candidate's tree would have accepted
(ddtree.budget.accepted_within).
"""
from __future__ import annotations

import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import NamedTuple

import torch
from tqdm.auto import tqdm

from ddtree.batch import pack_verify_batch
from ddtree.budget import accepted_within, expected_accepts
from ddtree.engine.decoder import FlatMask
from ddtree.kernels.tree_build import select_trees
from ddtree.kernels.tree_pack import tree_structure
from ddtree.kernels.tree_verify import (retrieve_from_parents, row_argmax, row_argmax_ref, verify_greedy_tree,
                                        verify_greedy_tree_ref, verify_sampled_tree, verify_sampled_tree_ref)
from ddtree.settings import STAGES, Settings
from ddtree.tree import TreeBatch
from ddtree.verify import tempered_probs


@dataclass
class Packed:
    ids: torch.Tensor  # [B, Q] verify input; padding rows carry the root token
    positions: torch.Tensor  # [B, Q] seq_len + depth (padding rows at the root's position)
    visible: object  # what the attention reads: bitmask [B, Q, W] int32, dense [B, 1, Q, L] bool or a FlatMask
    next_token: torch.Tensor  # [B, Q] first child or -1
    next_sibling: torch.Tensor  # [B, Q] next sibling or -1
    layout: object = None  # attention="custom_mask": the ddtree.VerifyBatch whose flat mask the kernel read


@dataclass
class Verified:
    logits: torch.Tensor  # [B, Q, V] float32
    features: torch.Tensor  # [B, Q, F] target features for the drafter


@dataclass
class Walked:
    accepted: torch.Tensor  # [B, Q] accepted node indices, root first, -1 padded
    accept_len: torch.Tensor  # [B] (0 when the logits were not finite: nothing is committed)
    new_bonus: torch.Tensor  # [B]
    bad_logits: torch.Tensor  # [] bool: NaN or +inf in the target's or the drafter's logits


@dataclass
class Readback:
    """The one thing the host reads per round; on the device also as one tensor (wire), copied in one transfer."""
    accept_len: torch.Tensor  # [B] long
    bonus: torch.Tensor  # [B] long: the new bonus tokens
    tokens: torch.Tensor  # [B, Q] long: tokens at the accepted nodes (root first), valid up to accept_len
    bad_logits: torch.Tensor  # [] bool (a host copy: long, 1 for NaN or +inf)
    within: torch.Tensor | None = None  # [B, K] long (a budget="auto" tail): accepted draft tokens in the first
    # n rows for each candidate budget n (ddtree.budget.accepted_within)

    def wire(self) -> torch.Tensor:
        """`[B, 3 + K + Q]` long: accept_len, bonus, bad_logits, within (K = 0 without), tokens side by side
        (unwire reads it back)."""
        flag = self.bad_logits.long().expand(len(self.accept_len), 1)
        within = [] if self.within is None else [self.within]
        return torch.cat([self.accept_len[:, None], self.bonus[:, None], flag, *within, self.tokens], 1)

    @staticmethod
    def unwire(wire: torch.Tensor, candidates: int = 0) -> Readback:
        """The Readback whose wire() is `wire`, with `candidates` = K (views, no copy)."""
        within = wire[:, 3:3 + candidates] if candidates else None
        return Readback(wire[:, 0], wire[:, 1], wire[:, 3 + candidates:], wire[0, 2], within)


class Flight(NamedTuple):
    """A launched round: its stage timers and, for a round that commits, its Readback on the way to the host."""
    timers: object  # CUDA events (len(stages) + 1), or seconds per stage on the CPU
    readback: Readback | None  # pinned host copies, valid once `done` has completed (None: a budget="auto" head)
    done: torch.cuda.Event | None  # recorded after the copies (None on the CPU: everything has run)


HEAD_STAGES, TAIL_STAGES = STAGES[:2], STAGES[2:]  # budget="auto": (draft, tree) then (pack, verify, walk, commit)


class DeviceRound:
    """Rounds of one batch under fixed settings. `rows` = Q verify rows per request; `budgets  # [B]` DDTree budget
    per request; `mask_layout` how attention="custom_mask" packs the flat mask ("unpadded" reproduces the bug).
    `launch(coins)` -> a Flight, `land(flight)` -> (Readback on the host, stage seconds); the stage values of the last
    launch stay readable.

    budget="auto" (module docstring): a head has stages=HEAD_STAGES and `candidates` (the budgets whose expected
    acceptance its tree stage computes, `expected  # [K]` summed over the requests); a tail has stages=TAIL_STAGES
    and `head` (the round whose dlogits and trees, cut to its rows, it packs and verifies)."""

    def __init__(self, decoder, drafter, settings: Settings, bonus, rows: int, *, cuda_graphs: bool,
                 mask_layout: str = "padded", stages=STAGES, head: DeviceRound | None = None, candidates=None):
        self.decoder, self.drafter, self.settings = decoder, drafter, settings
        self.stages, self.head = tuple(stages), head
        self.candidates = None if candidates is None else torch.tensor(candidates, device=bonus.device)  # [K]
        self.expected: torch.Tensor | None = None  # [K] float64, summed over the requests (a head)
        self.bonus = bonus  # [B] long, updated in place by the commit stage
        self.rows, self.mask_layout = rows, mask_layout
        batch, device = bonus.shape[0], bonus.device
        self.budgets = torch.tensor(settings.budgets(batch), device=device)  # [B]
        self.coins = torch.zeros(2, batch, rows, dtype=torch.float64, device=device)  # walk and residual uniforms
        self.cuda_graphs = cuda_graphs
        self.graphs = None  # stage name -> CUDAGraph, captured on the second run
        self.runs = 0
        self.dlogits: torch.Tensor | None = None  # [B, depth, V]
        self.trees: TreeBatch | None = None
        self.packed: Packed | None = None
        self.verified: Verified | None = None
        self.walked: Walked | None = None
        self.readback: Readback | None = None
        self.wire: torch.Tensor | None = None  # [B, 3 + K + Q] the readback in one tensor (Readback.wire)
        self.host_wires: list | None = None  # two pinned host buffers for it, used by turns
        self.structure = None  # (visible, next_token, next_sibling) of a tree shape that never changes (ar, dflash)
        self.events = None  # two sets of CUDA events between the stages, made once, recorded by turns
        if settings.method == "ar":  # the root alone, every round: no draft, no tree stage
            tokens = torch.full((batch, 1), -1, dtype=torch.long, device=device)
            self.trees = TreeBatch(tokens, tokens.clone(), torch.zeros_like(tokens), tokens.clone(),
                                   torch.zeros(batch, 1, dtype=torch.float64, device=device),
                                   torch.ones(batch, dtype=torch.long, device=device))

    # ------------------------------------------------------------------------------------------------ stages
    def draft(self):
        self.dlogits = self.drafter.logits(self.bonus, self.decoder.seq_lens)  # [B, depth, V]

    def tree(self):
        s, batch, device = self.settings, self.bonus.shape[0], self.bonus.device
        logq = torch.log_softmax(self.dlogits, dim=-1)  # [B, depth, V] as ddtree.tree._draft_logprobs
        if s.method == "ddtree":
            trees = select_trees(logq, s.max_budget)
            self.trees = trees if not isinstance(s.budget, tuple) else trees.truncate(self.budgets + 1)
            if self.candidates is not None:
                self.expected = expected_accepts(self.trees.node_logws, self.candidates).sum(0)
            return
        best, chain = logq.max(-1)  # the DFlash chain: the best token at every depth (first maximum on ties)
        depth = chain.shape[1]
        root = torch.full((batch, 1), -1, dtype=torch.long, device=device)
        self.trees = TreeBatch(
            torch.cat([root, chain], 1), torch.arange(-1, depth, device=device).expand(batch, -1),
            torch.arange(depth + 1, device=device).expand(batch, -1), torch.cat([root, torch.zeros_like(chain)], 1),
            torch.cat([torch.zeros(batch, 1, dtype=torch.float64, device=device), best.double().cumsum(1)], 1),
            torch.full((batch,), depth + 1, dtype=torch.long, device=device))

    def pack(self):
        if self.head is not None:  # a tail: the head's round, its trees cut to this round's rows (in the graph)
            self.dlogits, self.trees = self.head.dlogits, self.head.trees.first(self.rows)
        trees, seq_lens = self.trees, self.decoder.seq_lens
        ids = torch.where(trees.tokens >= 0, trees.tokens, self.bonus[:, None])  # [B, Q]; root = bonus
        positions = seq_lens[:, None] + trees.depths.clamp_min(0)  # padding rows at the root's position
        layout = None
        if self.decoder.attention == "triton" and self.structure is not None:  # the same shape as last round
            visible, next_token, next_sibling = self.structure
        elif self.decoder.attention == "triton":  # bitmask and retrieve encoding in one launch
            visible, next_token, next_sibling = tree_structure(trees.parents)
            if self.settings.method != "ddtree":  # a chain or the root alone: the same every round
                self.structure = visible, next_token, next_sibling
        elif self.decoder.attention == "custom_mask":  # the serving engine's flat mask, packed on the host
            next_token, next_sibling = retrieve_from_parents(trees.parents)
            layout = pack_verify_batch(trees.split(self.bonus.tolist()), seq_lens.tolist(), self.rows,
                                       layout=self.mask_layout)
            visible = FlatMask.of(layout, self.rows, ids.device)
            if self.decoder.exact:  # bit-exact attention over the tree columns that flat mask gives each row
                visible = self.decoder.exact_flat_mask(visible, seq_lens, self.rows)
        else:  # a chain (autoregressive, DFlash) needs no table in bit-exact mode
            next_token, next_sibling = retrieve_from_parents(trees.parents)
            visible = self.decoder.visibility(trees.parents, seq_lens, chain=self.settings.method != "ddtree")
        self.packed = Packed(ids, positions, visible, next_token, next_sibling, layout)

    def verify(self):
        p = self.packed
        self.verified = Verified(*self.decoder.forward_visible(p.ids, p.positions, p.visible))

    def walk(self):
        s, p, logits = self.settings, self.packed, self.verified.logits
        cuda = self.bonus.device.type == "cuda"
        tree = (p.ids, p.next_token, p.next_sibling)
        if s.sampled:
            probs = tempered_probs(logits, s.temperature, s.top_p)  # [B, Q, V] float64
            walk = verify_sampled_tree if cuda else verify_sampled_tree_ref
            result = walk(*tree, probs, self.coins[0], self.coins[1])
            bad = ~torch.isfinite(logits).all()
        else:
            argmax, bad = (row_argmax if cuda else row_argmax_ref)(logits)  # [B, Q], any NaN or infinity
            result = (verify_greedy_tree if cuda else verify_greedy_tree_ref)(*tree, argmax)
        accepted, accept_len, new_bonus = (x.to(self.bonus.device) for x in result)
        if self.settings.method != "ar":  # a -inf draft logit is a 0-probability token
            bad = bad | ~(self.dlogits < math.inf).all()
        # non-finite logits: the commit keeps nothing (accept_len 0), so the state stays that before the round
        self.walked = Walked(accepted, torch.where(bad, 0, accept_len), torch.where(bad, self.bonus, new_bonus), bad)

    def commit(self):
        w, seq_lens = self.walked, self.decoder.seq_lens
        if self.drafter is not None:  # positions seq_len + j: the accepted path's depths; the rest is scratch
            features = self.verified.features
            keep = w.accepted[:, :min(self.rows, self.drafter.block_size)].clamp_min(0)  # [B, R]
            self.drafter.extend(features.gather(1, keep[..., None].expand(-1, -1, features.shape[-1])), seq_lens)
        self.decoder.commit(w.accepted, w.accept_len, chain=self.settings.method != "ddtree")  # ar, dflash: chains
        self.bonus.copy_(w.new_bonus)
        within = None if self.head is None else accepted_within(w.accepted, self.head.candidates)  # [B, K]
        self.readback = Readback(w.accept_len, self.bonus, self.packed.ids.gather(1, w.accepted.clamp_min(0)),
                                 w.bad_logits, within)
        self.wire = self.readback.wire()

    # --------------------------------------------------------------------------------------------- running
    def launch(self, coins: torch.Tensor | None) -> Flight:
        """Queue one round on the device without any host synchronisation (on CUDA; the CPU simply runs it), its
        Readback's copy to the host included; `coins  # [2, B, Q]` for sampled rounds. Two launched rounds may be
        in flight at once (land the older before launching a third: each keeps two sets of stage timers)."""
        if coins is not None:
            self.coins.copy_(coins)
        self.runs += 1
        stages = self._stage_functions()
        if self.bonus.device.type != "cuda":
            times = {}
            for name, stage in zip(self.stages, stages):
                t0 = time.perf_counter()
                if stage is not None:
                    stage()
                times[name] = time.perf_counter() - t0
            return Flight(times, self._host_readback(), None)
        if self.cuda_graphs and self.runs >= 2 and self.graphs is None:
            self.graphs = _capture(self.stages, stages)
        if self.events is None:  # two sets, alternating: a round's timers are read after the next one launched
            self.events = [[torch.cuda.Event(enable_timing=True) for _ in range(len(self.stages) + 1)]
                           for _ in range(2)]
        events = self.events[self.runs % 2]
        side = torch.cuda.Stream() if self.cuda_graphs and self.graphs is None else None  # warm-up off the default
        with torch.cuda.stream(side) if side is not None else nullcontext():
            events[0].record()
            for i, (name, stage) in enumerate(zip(self.stages, stages)):
                if stage is not None and self.graphs:
                    self.graphs[name].replay()
                elif stage is not None:
                    with torch.profiler.record_function(name):  # stage names in a profiler trace
                        stage()
                events[i + 1].record()
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
        readback, done = self._host_readback(), torch.cuda.Event()
        done.record()
        return Flight(events, readback, done)

    def _host_readback(self) -> Readback | None:
        """The round's wire, queued for a copy into pinned memory without waiting (Flight.done says when it is
        there): one of two buffers by turns, as the timers."""
        if "commit" not in self.stages:
            return None
        cuda = self.wire.is_cuda
        if self.host_wires is None:
            self.host_wires = [torch.empty(self.wire.shape, dtype=self.wire.dtype, pin_memory=cuda) for _ in range(2)]
        host = self.host_wires[self.runs % 2]
        host.copy_(self.wire, non_blocking=cuda)
        return Readback.unwire(host, 0 if self.head is None else len(self.head.candidates))

    def _stage_functions(self) -> list:
        """The bound stage methods, None for a stage that does not run (autoregressive rounds draft nothing and
        keep the one tree made at construction)."""
        return [None if name in ("draft", "tree") and self.settings.method == "ar" else getattr(self, name)
                for name in self.stages]

    def capture(self) -> None:
        """Capture the stages as CUDA graphs now, without running them: their kernels must have run before with
        these shapes (ddtree.engine.backend runs every budget="auto" tail once on a throwaway copy of the caches)."""
        self.graphs = _capture(self.stages, self._stage_functions())

    @property
    def warm(self) -> bool:
        """Whether the next launch runs at full speed: graphs captured (cuda_graphs), else one run done."""
        return self.graphs is not None if self.cuda_graphs else self.runs >= 1

    def land(self, flight: Flight) -> tuple[Readback | None, dict[str, float]]:
        """Wait for a launched round -> (its Readback on the host, seconds per stage)."""
        if flight.done is not None:
            flight.done.synchronize()
        return flight.readback, self.seconds(flight.timers)

    def seconds(self, timers) -> dict[str, float]:
        """Seconds per stage from a Flight's timers (CUDA events: once they have completed)."""
        if isinstance(timers, dict):
            return timers
        return {name: timers[i].elapsed_time(timers[i + 1]) / 1e3 for i, name in enumerate(self.stages)}


def _capture(names, stages) -> dict:
    """One CUDA graph per stage, sharing a memory pool, captured in round order (nothing runs during capture)."""
    graphs, pool = {}, None
    for name, stage in zip(names, stages):
        if stage is None:
            continue
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            stage()
        graphs[name], pool = graph, graph.pool()
    return graphs


def measure_verify_costs(decoder, budgets, *, cuda_graphs: bool, repeats: int = 10) -> tuple[float, ...]:
    """Seconds of one verify forward of the whole batch at budget + 1 rows per request, for each budget: replays of a
    CUDA graph (cuda_graphs), else eager forwards; CUDA events on a GPU, the wall clock elsewhere. The forwards
    write scratch K/V past every request's committed prefix, as a round's verify does, and commit nothing."""
    out = []
    for budget in tqdm(budgets, desc="verify cost per budget", leave=False):
        rows = budget + 1
        seq_lens, offsets = decoder.seq_lens, decoder.offsets[:rows]
        ids = torch.zeros(len(seq_lens), rows, dtype=torch.long, device=decoder.device)  # [B, Q] a chain
        positions = seq_lens[:, None] + offsets
        visible = decoder.visibility((offsets - 1).expand(len(seq_lens), -1), seq_lens)
        out.append(seconds_per_call(lambda: decoder.forward_visible(ids, positions, visible), cuda_graphs, repeats,
                                     decoder.device))
    return tuple(out)


def seconds_per_call(fn, cuda_graphs: bool, repeats: int, device) -> float:
    """Mean seconds of `fn` over `repeats` calls after a warm-up: replays of its CUDA graph (cuda_graphs) timed by
    CUDA events on a GPU, the wall clock elsewhere."""
    if device.type != "cuda":
        fn()  # warm-up
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn()
        return (time.perf_counter() - t0) / repeats
    side = torch.cuda.Stream()  # warm-up off the default stream, as before a capture
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    call = fn
    if cuda_graphs:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        call = graph.replay
    call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / repeats
