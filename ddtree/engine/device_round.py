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
"""
from __future__ import annotations

import math
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from ddtree.batch import pack_verify_batch
from ddtree.engine.decoder import FlatMask
from ddtree.kernels.tree_build import select_trees
from ddtree.kernels.tree_pack import tree_structure
from ddtree.kernels.tree_verify import (retrieve_from_parents, verify_greedy_tree, verify_greedy_tree_ref,
                                        verify_sampled_tree, verify_sampled_tree_ref)
from ddtree.settings import STAGES, Settings
from ddtree.tree import TreeBatch
from ddtree.verify import sampling_probs


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
    """The one thing the host reads per round."""
    accept_len: torch.Tensor  # [B] long
    bonus: torch.Tensor  # [B] long: the new bonus tokens
    tokens: torch.Tensor  # [B, Q] long: tokens at the accepted nodes (root first), valid up to accept_len
    bad_logits: torch.Tensor  # [] bool

    def to_host(self) -> Readback:
        """Copies in pinned memory, then one synchronisation."""
        cuda = self.tokens.is_cuda
        host = Readback(*(torch.empty(x.shape, dtype=x.dtype, pin_memory=cuda) for x in
                          (self.accept_len, self.bonus, self.tokens, self.bad_logits)))
        for src, dst in zip((self.accept_len, self.bonus, self.tokens, self.bad_logits),
                            (host.accept_len, host.bonus, host.tokens, host.bad_logits)):
            dst.copy_(src, non_blocking=cuda)
        if cuda:
            torch.cuda.current_stream().synchronize()
        return host


class DeviceRound:
    """Rounds of one batch under fixed settings. `rows` = Q verify rows per request; `budgets  # [B]` DDTree budget
    per request; `mask_layout` how attention="custom_mask" packs the flat mask ("unpadded" reproduces the bug).
    `run(coins)` -> (Readback on the host, stage seconds); the stage values of the last run stay readable."""

    def __init__(self, decoder, drafter, settings: Settings, bonus, rows: int, *, cuda_graphs: bool,
                 mask_layout: str = "padded"):
        self.decoder, self.drafter, self.settings = decoder, drafter, settings
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

    # ------------------------------------------------------------------------------------------------ stages
    def draft(self):
        self.dlogits = self.drafter.logits(self.bonus, self.decoder.seq_lens)  # [B, depth, V]

    def tree(self):
        s, batch, device = self.settings, self.bonus.shape[0], self.bonus.device
        if s.method == "ar":
            tokens = torch.full((batch, 1), -1, dtype=torch.long, device=device)
            self.trees = TreeBatch(tokens, tokens.clone(), torch.zeros_like(tokens), tokens.clone(),
                                   torch.zeros(batch, 1, dtype=torch.float64, device=device),
                                   torch.ones(batch, dtype=torch.long, device=device))
            return
        logq = torch.log_softmax(self.dlogits, dim=-1)  # [B, depth, V] as ddtree.tree._draft_logprobs
        if s.method == "ddtree":
            trees = select_trees(logq, s.max_budget)
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
        if self.decoder.attention == "triton":  # bitmask and retrieve encoding in one launch
            visible, next_token, next_sibling = tree_structure(trees.parents)
        elif self.decoder.attention == "custom_mask":  # the serving engine's flat mask, packed on the host
            next_token, next_sibling = retrieve_from_parents(trees.parents)
            layout = pack_verify_batch(trees.split(self.bonus.tolist()), seq_lens.tolist(), self.rows,
                                       layout=self.mask_layout)
            visible = FlatMask.of(layout, self.rows, ids.device)
        else:
            next_token, next_sibling = retrieve_from_parents(trees.parents)
            visible = self.decoder.visibility(trees.parents, seq_lens)
        self.packed = Packed(ids, positions, visible, next_token, next_sibling, layout)

    def verify(self):
        p = self.packed
        self.verified = Verified(*self.decoder.forward_visible(p.ids, p.positions, p.visible))

    def walk(self):
        s, p, logits = self.settings, self.packed, self.verified.logits
        cuda = self.bonus.device.type == "cuda"
        tree = (p.ids, p.next_token, p.next_sibling)
        if s.sampled:
            probs = sampling_probs(logits, s.temperature, s.top_p)  # [B, Q, V] float64
            walk = verify_sampled_tree if cuda else verify_sampled_tree_ref
            result = walk(*tree, probs, self.coins[0], self.coins[1])
        else:
            result = (verify_greedy_tree if cuda else verify_greedy_tree_ref)(*tree, logits)
        accepted, accept_len, new_bonus = (x.to(self.bonus.device) for x in result)
        bad = ~torch.isfinite(logits).all()
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
        self.decoder.commit(w.accepted, w.accept_len)
        self.bonus.copy_(w.new_bonus)
        self.readback = Readback(w.accept_len, self.bonus, self.packed.ids.gather(1, w.accepted.clamp_min(0)),
                                 w.bad_logits)

    # --------------------------------------------------------------------------------------------- running
    def launch(self, coins: torch.Tensor | None):
        """Queue one round on the device without any host synchronisation (on CUDA; the CPU simply runs it);
        `coins  # [2, B, Q]` for sampled rounds. -> per-stage timers: CUDA events (len(STAGES) + 1) or seconds per
        stage on the CPU."""
        if coins is not None:
            self.coins.copy_(coins)
        stages = [None if name == "draft" and self.settings.method == "ar" else getattr(self, name)
                  for name in STAGES]  # autoregressive rounds draft nothing
        if self.bonus.device.type != "cuda":
            times = {}
            for name, stage in zip(STAGES, stages):
                t0 = time.perf_counter()
                if stage is not None:
                    stage()
                times[name] = time.perf_counter() - t0
            return times
        if self.cuda_graphs and self.runs >= 1 and self.graphs is None:
            self.graphs = _capture(stages)
        self.runs += 1
        events = [torch.cuda.Event(enable_timing=True) for _ in range(len(STAGES) + 1)]
        side = torch.cuda.Stream() if self.cuda_graphs and self.graphs is None else None  # warm-up off the default
        with torch.cuda.stream(side) if side is not None else nullcontext():
            events[0].record()
            for i, (name, stage) in enumerate(zip(STAGES, stages)):
                if stage is not None and self.graphs:
                    self.graphs[name].replay()
                elif stage is not None:
                    with torch.profiler.record_function(name):  # stage names in a profiler trace
                        stage()
                events[i + 1].record()
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
        return events

    def run(self, coins: torch.Tensor | None = None) -> tuple[Readback, dict[str, float]]:
        """One round -> (Readback on the host, seconds per stage); the only host synchronisation is the readback's."""
        timers = self.launch(coins)
        readback = self.readback.to_host()
        if isinstance(timers, dict):
            return readback, timers
        return readback, {name: timers[i].elapsed_time(timers[i + 1]) / 1e3 for i, name in enumerate(STAGES)}


def _capture(stages) -> dict:
    """One CUDA graph per stage, sharing a memory pool, captured in round order (nothing runs during capture)."""
    graphs, pool = {}, None
    for name, stage in zip(STAGES, stages):
        if stage is None:
            continue
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            stage()
        graphs[name], pool = graph, graph.pool()
    return graphs
