"""The native backend: every request of a batch in one static-cache round on the device (ddtree.engine.device_round).

A round drafts, builds and packs every request's tree, runs ONE verify forward over all requests' trees padded to
num_draft_tokens rows, walks them, compacts the caches and extends the drafter's context, reading back only the
accepted lengths and tokens. With cuda_graphs=True each stage is replayed as a CUDA graph from the second round on.
Host copies for records are made only when the session records.
"""
from __future__ import annotations

import torch

from ddtree.engine.decoder import NativeDecoder
from ddtree.engine.device_round import DeviceRound
from ddtree.engine.drafter import StaticDrafter
from ddtree.record import KernelRead
from ddtree.rounds import RoundOutcome, request_round
from ddtree.settings import Settings, num_draft_tokens
from ddtree.verify import VerifyResult

MASK_LAYOUTS = ("padded", "unpadded")


class NativeBackend:
    name = "native"

    def __init__(self, pair, batch: int, max_len: int, *, attention: str = "auto", cuda_graphs: bool = False,
                 mask_layout: str = "padded", fused: bool | None = None):
        if mask_layout not in MASK_LAYOUTS:
            raise ValueError(f"mask_layout must be one of {MASK_LAYOUTS}, got {mask_layout!r}")
        self.pair, self.max_len, self.mask_layout = pair, max_len, mask_layout
        self.decoder = NativeDecoder(pair.target, batch_size=batch, max_len=max_len,
                                     layer_ids=pair.target_layer_ids, attention=attention, fused=fused)
        if mask_layout != "padded" and self.decoder.attention != "custom_mask":
            raise ValueError("mask_layout='unpadded' needs attention='custom_mask' (the flat serving-engine mask)")
        self.cuda_graphs = bool(cuda_graphs)
        if self.cuda_graphs and (pair.device.type != "cuda" or self.decoder.attention != "triton"):
            raise ValueError("cuda_graphs=True needs a CUDA pair with attention='triton' (or 'auto')")
        draft_attention = "triton" if self.decoder.attention == "triton" else "torch"
        self.drafter = None if pair.drafter is None else StaticDrafter(pair, batch_size=batch, max_len=max_len,
                                                                       attention=draft_attention, fused=fused)
        self.round_state: DeviceRound | None = None  # built for the current settings on the first round

    def prefill(self, prompts: list[list[int]]) -> torch.Tensor:
        """Prefill every prompt into its cache slot -> logits  # [B, vocab] at each prompt's last position."""
        device, last = self.pair.device, []
        for b, prompt in enumerate(prompts):
            n = len(prompt)
            positions = torch.arange(n, device=device)
            logits, features = self.decoder.forward(torch.tensor([prompt], device=device), positions[None],
                                                    (positions - 1)[None], request=b)
            if self.drafter is not None:
                self.drafter.extend(features, self.decoder.seq_lens[b:b + 1], slots=slice(b, b + 1))
            self.decoder.commit(positions[None], torch.tensor([n]), request=b)
            last.append(logits[0, -1])
        return torch.stack(last)

    def round(self, settings: Settings, tokens: list[list[int]], coins, top_k: int | None,
              probe: bool) -> RoundOutcome:
        """One round of every request; `tokens[b]` its committed tokens, `coins  # [2, B, Q]` (sampled) or None."""
        state = self.round_state
        if state is None or state.settings != settings:
            bonus = torch.tensor([t[-1] for t in tokens], device=self.pair.device)  # [B] roots of the next trees
            state = self.round_state = DeviceRound(self.decoder, self.drafter, settings, bonus,
                                                   num_draft_tokens(settings, self.pair), cuda_graphs=self.cuda_graphs,
                                                   mask_layout=self.mask_layout)
        roots, ctx = [t[-1] for t in tokens], [len(t) - 1 for t in tokens]
        readback, times = state.run(coins)
        if bool(readback.bad_logits):
            raise ValueError("the target or the drafter produced NaN or +inf logits; nothing was committed (check "
                             "the model weights and dtype)")
        lengths = readback.accept_len.tolist()
        committed = [row[1:n] + [bonus] for row, n, bonus in zip(readback.tokens.tolist(), lengths,
                                                                   readback.bonus.tolist())]
        requests = []
        if top_k is not None:
            trees = state.trees.split(roots)
            requests = [self._request(state, settings, b, ctx[b], trees[b], committed[b], top_k)
                        for b in range(len(tokens))]
        kernel = None
        if probe or state.packed.layout is not None:
            kernel = self._kernel_read(state, ctx, probe)
        return RoundOutcome(committed=committed, times=times, rows=state.rows, requests=requests, kernel=kernel)

    def _kernel_read(self, state: DeviceRound, ctx: list[int], probe: bool) -> KernelRead:
        """What the attention kernel read in the round just run: the flat mask (custom_mask) and, with `probe`, the
        mask it effectively applied per request (the probe runs the same kernel on the round's mask, not its
        caches)."""
        packed, layout = state.packed, state.packed.layout
        seq_lens = torch.tensor(ctx, device=self.decoder.device)
        applied = self.decoder.probe(packed.visible, seq_lens, state.rows) if probe else None
        return KernelRead(attention=self.decoder.attention, mask_layout=self.mask_layout,
                          custom_mask=None if layout is None else layout.custom_mask,
                          mask_indptr=None if layout is None else layout.mask_indptr, applied=applied)

    def _request(self, state: DeviceRound, settings, b: int, ctx: int, tree, committed: list[int], top_k: int):
        """Request b's RequestRound, from host copies of the round's device tensors."""
        accepted = state.walked.accepted[b, :len(committed)].tolist()
        result = VerifyResult(accepted=accepted, accepted_tokens=committed[:-1], bonus_token=committed[-1])
        dlogits = None if settings.method == "ar" else state.dlogits[b].cpu()
        return request_round(self.pair, settings, ctx, tree, dlogits, state.packed.ids[b].cpu(),
                             state.packed.positions[b].cpu(), state.verified.logits[b, :tree.n_nodes].cpu(), result,
                             top_k)

    def fork(self) -> NativeBackend:
        """An independent copy (caches cloned; the round and its graphs are built again)."""
        twin = object.__new__(NativeBackend)
        twin.__dict__.update(self.__dict__)
        twin.decoder = self.decoder.clone()
        twin.drafter = self.drafter.clone() if self.drafter is not None else None
        twin.round_state = None
        return twin
