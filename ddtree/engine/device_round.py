"""One decoding round of a whole batch on the device: draft -> tree -> pack -> verify -> walk -> commit.

Each stage is a function of persistent device tensors (the target's and drafter's static caches, seq_lens, the
bonus tokens, the walk's uniforms) with no host synchronisation, so on CUDA each stage is captured once as a CUDA
graph and replayed every round; CUDA events between the stages time them without a sync. The host reads one small
tensor per round (`readback`): accepted lengths, bonus tokens, the accepted tokens and a non-finite-logits flag.

  draft   ddtree.engine.drafter.StaticDrafter: one batched block forward -> dlogits  # [B, depth, V]
  tree    DDTree: ddtree.kernels.tree_build.select_trees (= ddtree.build_tree); DFlash: the argmax chain;
          autoregressive: the root alone. Every tree is padded to Q = num_draft_tokens rows, rooted at the bonus.
  pack    input ids (padding rows carry the root token at the root position), positions = seq_len + depth,
          ancestor bitmask and retrieve encoding (first child / next sibling), ddtree.kernels.tree_pack
  verify  NativeDecoder.forward_visible over the B x Q rows -> logits  # [B, Q, V], features  # [B, Q, F]
  walk    ddtree.kernels.tree_verify: greedy, or exact sampling (rule B) from uniforms drawn before the round
  commit  the accepted nodes' features extend the drafter's context, the target's KV cache is compacted
          (ddtree.kernels.kv_compact) and the new bonus tokens root the next round
"""
from __future__ import annotations

import math
import time
from contextlib import nullcontext

import torch

from ddtree.kernels.tree_build import select_trees
from ddtree.kernels.tree_pack import tree_structure
from ddtree.kernels.tree_verify import (retrieve_from_parents, verify_greedy_tree, verify_greedy_tree_ref,
                                        verify_sampled_tree, verify_sampled_tree_ref)
from ddtree.session import STAGES
from ddtree.verify import sampling_probs


class DeviceRound:
    """`rows` = Q verify rows per request. `run()` -> (readback  # [B, Q + 3] long on the host, stage seconds).
    After a run, `.out` holds the round's device tensors (dlogits, trees, ids, positions, logits, accepted, ...)."""

    def __init__(self, decoder, drafter, settings, bonus, rows: int, generator, *, cuda_graphs: bool):
        self.decoder, self.drafter, self.settings = decoder, drafter, settings
        self.bonus = bonus  # [B] long, updated in place by the commit stage
        self.rows, self.generator = rows, generator
        batch, device = bonus.shape[0], bonus.device
        self.coins = torch.zeros(2, batch, rows, dtype=torch.float64, device=device)  # walk and residual uniforms
        self.cuda_graphs = cuda_graphs
        self.graphs = None  # stage name -> CUDAGraph, captured on the second run
        self.runs = 0
        self.out = {}

    # ------------------------------------------------------------------------------------------------ stages
    def draft(self):
        if self.settings.method != "ar":
            self.out["dlogits"] = self.drafter.logits(self.bonus, self.decoder.seq_lens)  # [B, depth, V]

    def tree(self):
        s, out, batch = self.settings, self.out, self.bonus.shape[0]
        device = self.bonus.device
        if s.method == "ar":
            tokens = torch.full((batch, 1), -1, dtype=torch.long, device=device)
            parents, ranks = tokens.clone(), tokens.clone()
            depths = torch.zeros_like(tokens)
            logws = torch.zeros(batch, 1, dtype=torch.float64, device=device)
            n_nodes = torch.ones(batch, dtype=torch.long, device=device)
        else:
            logq = torch.log_softmax(out["dlogits"], dim=-1)  # [B, depth, V] as ddtree.tree._draft_logprobs
            if s.method == "ddtree":
                tokens, parents, depths, ranks, logws, n_nodes = select_trees(logq, s.budget)
            else:  # the DFlash chain: the best token at every depth (first maximum = lower token id on ties)
                best, chain = logq.max(-1)  # [B, depth]
                depth = chain.shape[1]
                root = torch.full((batch, 1), -1, dtype=torch.long, device=device)
                tokens = torch.cat([root, chain], 1)
                parents = torch.arange(-1, depth, device=device).expand(batch, -1)
                depths = torch.arange(depth + 1, device=device).expand(batch, -1)
                ranks = torch.cat([root, torch.zeros_like(chain)], 1)
                logws = torch.cat([torch.zeros(batch, 1, dtype=torch.float64, device=device),
                                   best.double().cumsum(1)], 1)
                n_nodes = torch.full((batch,), depth + 1, dtype=torch.long, device=device)
        out.update(tokens=tokens, parents=parents, depths=depths, ranks=ranks, node_logws=logws, n_nodes=n_nodes)

    def pack(self):
        out, seq_lens = self.out, self.decoder.seq_lens
        out["ids"] = torch.where(out["tokens"] >= 0, out["tokens"], self.bonus[:, None])  # [B, Q]; root = bonus
        out["positions"] = seq_lens[:, None] + out["depths"].clamp_min(0)  # padding rows at the root's position
        if self.decoder.attention == "triton":  # bitmask and retrieve encoding in one launch
            out["visible"], out["next_token"], out["next_sibling"] = tree_structure(out["parents"])
        else:
            out["visible"] = self.decoder.visibility(out["parents"], seq_lens)
            out["next_token"], out["next_sibling"] = retrieve_from_parents(out["parents"])

    def verify(self):
        out = self.out
        out["logits"], out["features"] = self.decoder.forward_visible(out["ids"], out["positions"], out["visible"])

    def walk(self):
        s, out = self.settings, self.out
        cuda = self.bonus.device.type == "cuda"
        tree = (out["ids"], out["next_token"], out["next_sibling"])
        if s.sampled:
            probs = sampling_probs(out["logits"], s.temperature, s.top_p)  # [B, Q, V] float64
            walk = verify_sampled_tree if cuda else verify_sampled_tree_ref
            result = walk(*tree, probs, self.coins[0], self.coins[1])
        else:
            result = (verify_greedy_tree if cuda else verify_greedy_tree_ref)(*tree, out["logits"])
        accepted, accept_len, new_bonus = (x.to(self.bonus.device) for x in result)
        bad = ~torch.isfinite(out["logits"]).all()
        if "dlogits" in out:  # NaN or +inf (a -inf draft logit is a zero-probability token)
            bad = bad | ~(out["dlogits"] < math.inf).all()
        # non-finite logits: the commit keeps nothing (accept_len 0), so the state stays that before the round
        out.update(accepted=accepted, accept_len=torch.where(bad, 0, accept_len),
                   new_bonus=torch.where(bad, self.bonus, new_bonus), bad_logits=bad)

    def commit(self):
        out, seq_lens = self.out, self.decoder.seq_lens
        accepted, accept_len = out["accepted"], out["accept_len"]  # [B, Q], [B]
        if self.drafter is not None:  # positions seq_len + j: the accepted path's depths; the rest is scratch
            keep = accepted[:, :min(self.rows, self.drafter.block_size)].clamp_min(0)  # [B, R]
            features = out["features"].gather(1, keep[..., None].expand(-1, -1, out["features"].shape[-1]))
            self.drafter.extend(features, seq_lens)
        self.decoder.commit(accepted, accept_len)
        self.bonus.copy_(out["new_bonus"])
        tokens = out["ids"].gather(1, accepted.clamp_min(0))  # [B, Q]
        out["readback"] = torch.cat([accept_len[:, None], self.bonus[:, None], tokens,
                                     out["bad_logits"].long().expand(len(tokens))[:, None]], 1)

    # --------------------------------------------------------------------------------------------- running
    def launch(self):
        """Queue one round on the device without any host synchronisation (on CUDA; the CPU simply runs it).
        -> per-stage timers: CUDA events (len(STAGES) + 1) or seconds per stage on the CPU."""
        if self.settings.sampled:
            torch.rand(self.coins.shape, generator=self.generator, dtype=torch.float64, device=self.coins.device,
                       out=self.coins)
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

    def run(self):
        """One round -> (readback  # [B, Q + 3] long on the host, seconds per stage); the only host
        synchronisation is the copy of the readback."""
        timers = self.launch()
        readback = self.out["readback"].cpu()
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


def record_inputs(out: dict, b: int) -> dict:
    """Host copies of request b's part of a round (for RoundRecords): tree fields trimmed to its nodes, its verify
    rows, its draft logits (None for autoregressive) and target logits at its nodes."""
    n = int(out["n_nodes"][b])
    tree = {k: out[k][b, :n].cpu() for k in ("tokens", "parents", "depths", "ranks", "node_logws")}
    tree["tokens"][0] = -1
    accept_len = int(out["accept_len"][b])
    return {"tree": tree, "ids": out["ids"][b].cpu(), "positions": out["positions"][b].cpu(),
            "dlogits": out["dlogits"][b].cpu() if "dlogits" in out else None, "logits": out["logits"][b, :n].cpu(),
            "accepted": out["accepted"][b, :accept_len].tolist()}
