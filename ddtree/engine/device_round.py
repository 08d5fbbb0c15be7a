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

budget="auto" (ddtree.budget, ddtree.engine.backend): one DeviceRound per candidate budget n, each a fixed-budget
round whose tree stage builds at `build` (the next larger candidate) and verifies the first n nodes; its Readback
also carries the accepted rows and the built trees' node log-weights, from which the host computes every
candidate's expected and counterfactual acceptance (ddtree.budget.expected_accepts, accepted_within) off the
device's path.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import NamedTuple

import torch
from tqdm.auto import tqdm

from ddtree.batch import pack_verify_batch
from ddtree.engine.decoder import FlatMask
from ddtree.kernels.tree_build import select_trees
from ddtree.kernels.tree_pack import tree_structure
from ddtree.kernels.tree_verify import (retrieve_from_parents, row_argmax, row_argmax_ref, verify_greedy_tree,
                                        verify_greedy_tree_ref, verify_sampled_tree, verify_sampled_tree_ref)
from ddtree.settings import STAGES, Method, Settings
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
    accept_len: torch.Tensor  # [B] (0 when the logits were not finite or the request is finished: nothing is committed)
    new_bonus: torch.Tensor  # [B]
    bad_logits: torch.Tensor  # [] bool: NaN or +inf in the target's or the drafter's logits


@dataclass
class Readback:
    """The one thing the host reads per round; on the device also as one tensor (wire), copied in one transfer."""
    accept_len: torch.Tensor  # [B] long
    bonus: torch.Tensor  # [B] long: the new bonus tokens
    tokens: torch.Tensor  # [B, Q] long: tokens at the accepted nodes (root first), valid up to accept_len
    bad_logits: torch.Tensor  # [] bool (a host copy: long, 1 for NaN or +inf)
    accepted: torch.Tensor | None = None  # [B, Q] long (budget="auto"): the accepted rows, root first, -1 padded
    node_logws: torch.Tensor | None = None  # [B, build + 1] float64 (budget="auto"): the built trees' node
    # log-weights, before the cut to Q rows

    def wire(self) -> torch.Tensor:
        """`[B, 3 + Q (+ Q + build + 1)]` long: accept_len, bonus, bad_logits, tokens, then (budget="auto") the
        accepted rows and the node log-weights' float64 bits, side by side (unwire reads it back)."""
        flag = self.bad_logits.long().expand(len(self.accept_len), 1)
        auto = [] if self.accepted is None else [self.accepted, self.node_logws.view(torch.long)]
        return torch.cat([self.accept_len[:, None], self.bonus[:, None], flag, self.tokens, *auto], 1)

    @staticmethod
    def unwire(wire: torch.Tensor, built: int = 0) -> Readback:
        """The Readback whose wire() is `wire`, with `built` the node log-weights' width (0 without; views, no
        copy)."""
        if not built:
            return Readback(wire[:, 0], wire[:, 1], wire[:, 3:], wire[0, 2])
        q = (wire.shape[1] - 3 - built) // 2
        return Readback(wire[:, 0], wire[:, 1], wire[:, 3:3 + q], wire[0, 2], wire[:, 3 + q:3 + 2 * q],
                        wire[:, 3 + 2 * q:].view(torch.float64))


class Flight(NamedTuple):
    """A launched round: its stage timers and, for a round that commits, its Readback on the way to the host."""
    timers: object  # CUDA events (len(stages) + 1), or seconds per stage on the CPU
    readback: Readback  # pinned host copies, valid once `done` has completed
    done: torch.cuda.Event | None  # recorded after the copies (None on the CPU: everything has run)


class DeviceRound:
    """Rounds of one batch under fixed settings. `rows` = Q verify rows per request; `budgets  # [B]` DDTree budget
    per request; `mask_layout` how attention="custom_mask" packs the flat mask ("unpadded" reproduces the bug).
    `launch(coins)` -> a Flight, `land(flight)` -> (Readback on the host, stage seconds); the stage values of the last
    launch stay readable.

    budget="auto" (module docstring): `build` the budget the trees are built at before their first `rows` nodes are
    verified; the Readback then also carries the accepted rows and the built trees' node log-weights."""

    def __init__(self, decoder, drafter, settings: Settings, bonus, rows: int, *, cuda_graphs: bool,
                 mask_layout: str = "padded", build: int | None = None):
        self.decoder, self.drafter, self.settings = decoder, drafter, settings
        self.build, self.auto = (settings.max_budget, False) if build is None else (build, True)
        self.built: torch.Tensor | None = None  # [B, build + 1] float64 node log-weights (auto)
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
        if settings.method == Method.AR:  # the root alone, every round: no draft, no tree stage
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
        if s.method == Method.DDTREE:
            trees = select_trees(logq, self.build)
            if self.auto:  # budget="auto": the built trees' weights go to the host, their first rows to the verify
                self.built, trees = trees.node_logws, trees.first(self.rows)
            self.trees = trees if not isinstance(s.budget, tuple) else trees.truncate(self.budgets + 1)
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
        trees, seq_lens = self.trees, self.decoder.seq_lens
        ids = torch.where(trees.tokens >= 0, trees.tokens, self.bonus[:, None])  # [B, Q]; root = bonus
        positions = seq_lens[:, None] + trees.depths.clamp_min(0)  # padding rows at the root's position
        layout = None
        if self.decoder.attention == "triton" and self.structure is not None:  # the same shape as last round
            visible, next_token, next_sibling = self.structure
        elif self.decoder.attention == "triton":  # bitmask and retrieve encoding in one launch
            visible, next_token, next_sibling = tree_structure(trees.parents)
            if self.settings.method != Method.DDTREE:  # a chain or the root alone: the same every round
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
            visible = self.decoder.visibility(trees.parents, seq_lens, chain=self.settings.method != Method.DDTREE)
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
        if self.settings.method != Method.AR:  # a -inf draft logit is a 0-probability token
            bad = bad | ~(self.dlogits < math.inf).all()
        # non-finite logits, or a request the session has finished (decoder.active): the commit keeps nothing
        # (accept_len 0), so its state stays that before the round
        keep = self.decoder.active & ~bad  # [B]
        self.walked = Walked(accepted, torch.where(keep, accept_len, 0), torch.where(keep, new_bonus, self.bonus), bad)

    def commit(self):
        w, seq_lens = self.walked, self.decoder.seq_lens
        if self.drafter is not None:  # positions seq_len + j: the accepted path's depths; the rest is scratch
            features = self.verified.features
            keep = w.accepted[:, :min(self.rows, self.drafter.block_size)].clamp_min(0)  # [B, R]
            self.drafter.extend(features.gather(1, keep[..., None].expand(-1, -1, features.shape[-1])), seq_lens)
        self.decoder.commit(w.accepted, w.accept_len, chain=self.settings.method != Method.DDTREE)  # ar, dflash: chains
        self.bonus.copy_(w.new_bonus)
        self.readback = Readback(w.accept_len, self.bonus, self.packed.ids.gather(1, w.accepted.clamp_min(0)),
                                 w.bad_logits, *((w.accepted, self.built) if self.auto else ()))
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
            for name, stage in zip(STAGES, stages):
                t0 = time.perf_counter()
                if stage is not None:
                    stage()
                times[name] = time.perf_counter() - t0
            return Flight(times, self._host_readback(), None)
        if self.cuda_graphs and self.runs >= 2 and self.graphs is None:
            self.graphs = _capture(STAGES, stages)
        if self.events is None:  # two sets, alternating: a round's timers are read after the next one launched
            self.events = [[torch.cuda.Event(enable_timing=True) for _ in range(len(STAGES) + 1)]
                           for _ in range(2)]
        events = self.events[self.runs % 2]
        with side_stream() if self.cuda_graphs and self.graphs is None else nullcontext():  # warm-up: off the default
            events[0].record()
            for i, (name, stage) in enumerate(zip(STAGES, stages)):
                if stage is not None and self.graphs:
                    self.graphs[name].replay()
                elif stage is not None:
                    with torch.profiler.record_function(name):  # stage names in a profiler trace
                        stage()
                events[i + 1].record()
        readback, done = self._host_readback(), torch.cuda.Event()
        done.record()
        return Flight(events, readback, done)

    def _host_readback(self) -> Readback:
        """The round's wire, queued for a copy into pinned memory without waiting (Flight.done says when it is
        there): one of two buffers by turns, as the timers."""
        cuda = self.wire.is_cuda
        if self.host_wires is None:
            self.host_wires = [torch.empty(self.wire.shape, dtype=self.wire.dtype, pin_memory=cuda) for _ in range(2)]
        host = self.host_wires[self.runs % 2]
        host.copy_(self.wire, non_blocking=cuda)
        return Readback.unwire(host, self.build + 1 if self.auto else 0)

    def _stage_functions(self) -> list:
        """The bound stage methods, None for a stage that does not run (autoregressive rounds draft nothing and
        keep the one tree made at construction)."""
        return [None if name in ("draft", "tree") and self.settings.method == Method.AR else getattr(self, name)
                for name in STAGES]

    def capture(self) -> None:
        """Capture the stages as CUDA graphs now, without running them: their kernels must have run before with
        these shapes (ddtree.engine.backend runs every budget="auto" round once on a throwaway copy of the caches)."""
        self.graphs = _capture(STAGES, self._stage_functions())

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
        return {name: timers[i].elapsed_time(timers[i + 1]) / 1e3 for i, name in enumerate(STAGES)}


@contextmanager
def side_stream():
    """Run the block on a fresh CUDA stream (a warm-up before a graph capture must run off the default stream), after
    what the default stream has queued so far and before what it queues next: without the first wait, a warm-up on a
    busy GPU read buffers the default stream had not written yet (bench/results/warmup_stream_race_h200.md)."""
    side, default = torch.cuda.Stream(), torch.cuda.current_stream()
    side.wait_stream(default)
    with torch.cuda.stream(side):
        yield
    default.wait_stream(side)


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
    with side_stream():  # warm-up off the default stream, as before a capture
        fn()
        fn()
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
