"""A minimal decoder forward for Llama- and Qwen3-family targets that reuses a loaded Hugging Face model's weights,
keeps a static KV cache for a batch of requests and verifies ragged padded tree batches.

Cache layout (the one ddtree.kernels.tree_attention reads): per layer `k, v  # [B, Hkv, max_len, D]`, views of one
tensor so that compaction is one launch; request b's committed prefix is [0, seq_lens[b]); a forward over Q rows
writes row i's K/V at seq_lens[b] + i, and `commit` moves the accepted rows to be contiguous after the prefix
(ddtree.kernels.kv_compact on CUDA, torch elsewhere). RMSNorms run as one Triton launch each on CUDA.

Two forwards with the same results (within bf16 rounding): the modules' own path (the reference, the default off
CUDA) and the fused path (`fused`, the default on CUDA; on a CPU its kernels run in Triton's interpreter, which is
how CI tests it). A fused layer is 9 launches: RMSNorm with the previous residual add (ddtree.kernels.rmsnorm),
one q/k/v projection (weights concatenated once, at construction), q/k norms (Qwen3; none for Llama) + RoPE + the
K/V cache write in one launch (ddtree.kernels.rope: RoPE at the row's position seq_len + depth, the write at its
cache row seq_len + i), attention, o_proj, RMSNorm with the residual add, one gate/up projection, SwiGLU
(ddtree.kernels.swiglu), down_proj. RoPE comes from cos/sin tables built once from the model's own rotary
embedding (rope scaling included). A fused forward of at most `decode_rows` rows (batch x rows, e.g. an
autoregressive step, a DFlash chain verify or a tree of up to 48 nodes for one request:
ddtree.kernels.decode_linear.DECODE_ROWS = 49) is 5 launches a layer instead: the norms, SwiGLU, RoPE + cache write
and the residual adds inside the projections' own kernels, launched with PDL (H200 at one row: 0.91 -> 0.58 ms a
forward; 16 rows 0.94 -> 0.81 ms; 33 rows 0.97 -> 0.90-0.92 ms, bench/results/decode_linear_h200.md); the cuBLAS
layer is as fast at 65 rows and faster beyond.

Bit-exact mode (`exact=True`): the fused forward with every matmul through ddtree.kernels.matmul.linear (one tiling
for every row count) and attention through ddtree.kernels.tree_attention_exact (each row's keys in position order,
in position-anchored blocks), the norms per row (one program each), so a row's logits and cache entries have the
bits an autoregressive step computes for the same prefix: DDTree and DFlash greedy output equals autoregressive
greedy output bit for bit, whatever the tree, the batch or the padding. Autoregressive steps use the same kernels.
Its attention reads the ancestor mask ("exact") or the serving engine's flat mask (attention="custom_mask"), so a
corrupted flat mask still corrupts the output.

Every forward is a tree forward: `parents  # [B, Q]` (-1 for roots and padding rows) says which rows each row sees
(its ancestors-or-self, plus the whole prefix). A prompt prefill is the chain tree parents[i] = i - 1.
Attention: the Triton tree kernel on CUDA (attention="triton"), a dense-mask SDPA elsewhere (attention="torch"),
the serving engine's flat custom mask read by ddtree.kernels.tree_attention_custom_mask (attention="custom_mask":
tree verify forwards take a FlatMask, prefills the dense mask), or any callable `attention(q, k_cache, v_cache, seq_lens, parents) -> out  # [b, Q, Hq, D]` (e.g. a serving
kernel under test, see ddtree.sglang.sglang_attention), which reads the cache layout above.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ddtree._checks import check_int
from ddtree.kv import write_kv
from ddtree.models.drafter import apply_rope
from ddtree.tree import ancestor_bits, bits_visible

ATTENTION = ("auto", "triton", "torch", "custom_mask")
PROBE_WIDTH = 64  # key columns recovered per probe forward (the probe's head dimension)


class FusedLayer(NamedTuple):
    """One decoder layer's weights as the fused forward reads them (copies taken at construction)."""
    qkv: torch.Tensor  # [(Hq + 2 Hkv) D, H] q_proj, k_proj, v_proj rows
    qkv_bias: torch.Tensor | None  # [(Hq + 2 Hkv) D] (Qwen2) or None
    gate_up: torch.Tensor  # [2 I, H] gate_proj, up_proj rows
    gate_up_bias: torch.Tensor | None  # [2 I] or None
    q_norm: torch.Tensor | None  # [D] per-head norm weights (Qwen3) or None (Llama)
    k_norm: torch.Tensor | None
    eps: float  # the q/k norms' epsilon


class FlatMask(NamedTuple):
    """The serving engine's verify mask as tree_attention_custom_mask reads it (see ddtree.batch)."""
    q_lens: torch.Tensor  # [B] rows of each request the kernel attends for
    custom_mask: torch.Tensor  # [total] bool, zero-padded so that every read stays inside the buffer
    mask_indptr: torch.Tensor  # [B] int64: where the kernel reads each request's block

    @staticmethod
    def of(batch, rows: int, device) -> FlatMask:
        """The FlatMask of a ddtree.VerifyBatch (either layout) whose requests each own `rows` query rows."""
        read_end = int(batch.mask_indptr[-1])
        flat = torch.zeros(max(read_end, batch.custom_mask.numel()), dtype=torch.bool)
        flat[:batch.custom_mask.numel()] = batch.custom_mask
        q_lens = batch.qo_indptr[1:] - batch.qo_indptr[:-1]
        return FlatMask(q_lens.to(device), flat.to(device), batch.mask_indptr[:-1].to(device))


class ExactVisible(NamedTuple):
    """What bit-exact attention reads (ddtree.kernels.tree_attention_exact): nothing for a chain (a prefill, a DFlash
    chain, an autoregressive step), else each row's visible tree columns in node order."""
    counts: torch.Tensor | None = None  # [B, Q] int32
    columns: torch.Tensor | None = None  # [B, Q, Q] int32
    q_lens: torch.Tensor | None = None  # [B] rows per request (a flat mask's), None: all Q


class NativeDecoder:
    def __init__(self, hf_model, *, batch_size: int, max_len: int, layer_ids=(), attention: str = "auto",
                 fused: bool | None = None, exact: bool = False):
        """fused: the fused forward (default: on CUDA, for targets it applies to; see fused_unsupported).
        exact: bit-exact mode (module docstring); it runs the fused forward and Triton attention."""
        config = hf_model.config.get_text_config()
        if getattr(config, "model_type", "") not in ("llama", "qwen3", "qwen2", "mistral") \
                or "sliding_attention" in (getattr(config, "layer_types", None) or ()):
            raise ValueError(f"the native engine supports Llama/Qwen-family targets without sliding windows, "
                             f"got model_type {getattr(config, 'model_type', '?')!r}")
        if not callable(attention) and attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION} or a callable, got {attention!r}")
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        self.max_len = check_int("max_len", max_len, minimum=1)
        self.model = hf_model.model
        self.lm_head = hf_model.lm_head
        self.layer_ids = [check_int("layer_ids entry", i) for i in layer_ids]
        if any(i >= config.num_hidden_layers for i in self.layer_ids):
            raise ValueError(f"layer_ids must be in [0, {config.num_hidden_layers}), got {self.layer_ids}")
        weight = self.lm_head.weight
        self.device, self.dtype = weight.device, weight.dtype
        self.exact = bool(exact)
        why_not = fused_unsupported(hf_model)
        if self.exact:
            if callable(attention) or attention == "torch":
                raise ValueError(f"exact=True runs Triton attention: attention must be 'auto', 'triton' or "
                                 f"'custom_mask', got {attention!r}")
            if fused is False or why_not:
                raise ValueError(f"exact=True runs the fused forward: {why_not or 'fused must be None or True'}")
            fused, attention = True, "custom_mask" if attention == "custom_mask" else "exact"
        if attention == "auto":
            attention = "triton" if self.device.type == "cuda" else "torch"
        self.attention = attention
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        layers = config.num_hidden_layers
        self.kv = torch.zeros(self.batch_size, 2 * layers, self.kv_heads, self.max_len, self.head_dim,
                              dtype=self.dtype, device=self.device)  # K of every layer, then V: one compaction
        self.k, self.v = self._views()
        self.seq_lens = torch.zeros(self.batch_size, dtype=torch.long, device=self.device)  # committed per request
        self.active = torch.ones(self.batch_size, dtype=torch.bool, device=self.device)  # requests a round commits
        self.offsets = torch.arange(self.max_len, device=self.device)  # row i of a forward writes seq_len + i
        if fused and why_not:
            raise ValueError(f"fused=True is not available for this target: {why_not}")
        self.fused = (self.device.type == "cuda" and not why_not) if fused is None else bool(fused)
        from ddtree.kernels.decode_linear import DECODE_ROWS
        self.decode_rows = DECODE_ROWS if self.fused and not self.exact else 0  # see _forward_decode
        if self.fused:
            with torch.no_grad():
                self.fused_layers = [fused_layer(layer) for layer in self.model.layers]
                self.cos, self.sin = rope_tables(self.model.rotary_emb, self.max_len, self.dtype, self.device)

    @torch.no_grad()
    def forward(self, input_ids, positions, parents, request: int | None = None):
        """One forward over Q rows of every request (or of slot `request` alone, e.g. a prefill); the caller keeps
        seq_lens + Q <= max_len. The K/V of row i are written at seq_lens + i; nothing is committed.

        input_ids, positions, parents  # [b, Q] -> (logits  # [b, Q, vocab] float32,
        features  # [b, Q, len(layer_ids) * hidden], decoder-layer outputs as in ddtree.models.target_forward).
        """
        slots = slice(None) if request is None else slice(request, request + 1)
        from ddtree.kernels.tree_attention import check_parents
        check_parents(parents)
        chain = self.exact and bool((parents == torch.arange(-1, parents.shape[1] - 1, device=parents.device)).all())
        return self.forward_visible(input_ids, positions, self.visibility(parents, self.seq_lens[slots], chain),
                                    slots)

    def visibility(self, parents, seq_lens, chain: bool = False):
        """What the attention backend reads, from `parents  # [b, Q]` (unchecked): the ancestor bitmask (triton,
        no host synchronisation), a dense [b, 1, Q, L] mask (torch), the parents themselves (a callable), or in
        bit-exact mode an ExactVisible (`chain`: the caller knows parents[i] = i - 1, no table needed)."""
        if callable(self.attention):
            return parents
        from ddtree.kernels.tree_attention import visible_columns
        if self.exact:
            return ExactVisible() if chain else ExactVisible(*visible_columns(bits_visible(ancestor_bits(parents),
                                                                                           parents.shape[1])))
        bits = ancestor_bits(parents)  # [b, Q, ceil(Q / 32)] int32
        if self.attention == "triton":
            return bits
        rows = parents.shape[1]
        tree = bits_visible(bits, rows)  # [b, Q, Q] ancestor-or-self
        length = int(seq_lens.max()) + rows
        cols = torch.arange(length, device=self.device)
        mask = (cols[None, None, :] < seq_lens[:, None, None]).expand(-1, rows, -1).clone()  # prefix
        idx = (seq_lens[:, None] + torch.arange(rows, device=self.device))[:, None, :].expand(-1, rows, -1)
        mask.scatter_(2, idx, tree)
        return mask[:, None]  # [b, 1, Q, L]

    def exact_flat_mask(self, flat: FlatMask, seq_lens, rows: int) -> ExactVisible:
        """Bit-exact mode with attention="custom_mask": the tree columns each row reads from the flat mask, as
        tree_attention_custom_mask reads them (a corrupted packing stays corrupted)."""
        from ddtree.kernels.tree_attention import flat_mask_visible, visible_columns
        visible = flat_mask_visible(seq_lens, flat.q_lens, flat.custom_mask, flat.mask_indptr, rows)
        return ExactVisible(*visible_columns(visible), flat.q_lens)

    @torch.no_grad()
    def forward_visible(self, input_ids, positions, visible, slots=slice(None)):
        """forward() with the visibility already built (see visibility); no checks, and with Triton attention no
        host synchronisation, so it can be captured in a CUDA graph."""
        if input_ids.numel() <= self.decode_rows:
            return self._forward_decode(input_ids, positions, visible, slots)
        if self.fused:
            return self._forward_fused(input_ids, positions, visible, slots)
        rows = input_ids.shape[1]
        seq_lens = self.seq_lens[slots]  # [b]
        write_at = seq_lens[:, None] + torch.arange(rows, device=self.device)  # [b, Q]
        hidden = self.model.embed_tokens(input_ids)  # [b, Q, H]
        cos, sin = self.model.rotary_emb(hidden, positions)  # [b, Q, D]
        outputs = {}
        for i, layer in enumerate(self.model.layers):
            hidden = hidden + self._attention(layer, self.k[i][slots], self.v[i][slots],
                                              rms_norm(layer.input_layernorm, hidden), cos, sin, write_at, seq_lens,
                                              visible)
            hidden = hidden + layer.mlp(rms_norm(layer.post_attention_layernorm, hidden))
            outputs[i] = hidden
        out = rms_norm(self.model.norm, hidden)
        outputs[len(self.model.layers) - 1] = out  # the last layer's entry is after the final norm, as in HF
        return self.lm_head(out).float(), self._features(outputs, out)

    def _forward_fused(self, input_ids, positions, visible, slots):
        """forward_visible through the fused kernels (module docstring): same outputs within rounding."""
        from ddtree.kernels.matmul import linear as exact_linear
        from ddtree.kernels.rope import norm_rope_cache
        from ddtree.kernels.swiglu import silu_mul
        linear = exact_linear if self.exact else F.linear
        project = (lambda m, x: exact_linear(x, m.weight, m.bias)) if self.exact else (lambda m, x: m(x))  # noqa: E731
        norm = kernel_rms_norm if self.exact else rms_norm  # exact: one program per row on any device
        batch, rows = input_ids.shape
        seq_lens = self.seq_lens[slots]  # [b]
        write_at = (seq_lens[:, None] + self.offsets[:rows]).flatten()  # [b*Q] cache row of each input row
        lens = seq_lens.to(torch.int32) if self.attention in ("triton", "exact") else seq_lens  # once, not per layer
        hidden = self.model.embed_tokens(input_ids)  # [b, Q, H]
        outputs, delta = {}, None  # delta: the MLP output that the next norm adds to the residual stream
        for i, (layer, w) in enumerate(zip(self.model.layers, self.fused_layers)):
            if delta is None:
                x = norm(layer.input_layernorm, hidden)
            else:
                x, hidden = norm(layer.input_layernorm, delta, residual=hidden)
                outputs[i - 1] = hidden  # layer i - 1's output
            k_cache, v_cache = self.k[i][slots], self.v[i][slots]
            q = norm_rope_cache(linear(x.flatten(0, 1), w.qkv, w.qkv_bias), w.q_norm, w.k_norm, w.eps, self.cos,
                                self.sin, positions.flatten(), k_cache, v_cache, rows, write_at)  # [b*Q, Hq, D]
            out = self.attend(q.view(batch, rows, self.heads, self.head_dim), k_cache, v_cache, lens, visible)
            x, hidden = norm(layer.post_attention_layernorm,
                             project(layer.self_attn.o_proj, out.reshape(batch, rows, -1)), residual=hidden)
            delta = project(layer.mlp.down_proj, silu_mul(linear(x.flatten(0, 1), w.gate_up, w.gate_up_bias)))
            delta = delta.view_as(hidden)
        out = norm(self.model.norm, delta, residual=hidden)[0]
        outputs[len(self.model.layers) - 1] = out  # the last layer's entry is after the final norm, as in HF
        return project(self.lm_head, out).float(), self._features(outputs, out)

    def _forward_decode(self, input_ids, positions, visible, slots):
        """_forward_fused for forwards of at most decode_rows rows (batch x rows): 5 launches a layer, the norms,
        SwiGLU, RoPE + cache write and residual adds inside the projections (ddtree.kernels.decode_linear)."""
        from ddtree.kernels.launch import dependent_launches
        with dependent_launches():  # its Triton kernels may each start as the one before ends (PDL)
            return self._decode_layers(input_ids, positions, visible, slots)

    def _decode_layers(self, input_ids, positions, visible, slots):
        from ddtree.kernels.decode_linear import decode_linear
        batch, rows = input_ids.shape
        seq_lens = self.seq_lens[slots]  # [b]
        write_at = (seq_lens[:, None] + self.offsets[:rows]).flatten()  # [b*Q]
        lens = seq_lens.to(torch.int32) if self.attention == "triton" else seq_lens
        hidden = self.model.embed_tokens(input_ids).flatten(0, 1)  # [b*Q, H] the residual stream
        outputs = {}
        attend = functools.partial(self.attend, seq_lens=lens, visible=visible)
        for i, (layer, w) in enumerate(zip(self.model.layers, self.fused_layers)):
            hidden = decode_layer(layer, w, hidden, self.cos, self.sin, positions.flatten(), write_at,
                                  self.k[i][slots], self.v[i][slots], rows, attend)
            outputs[i] = hidden.view(batch, rows, -1)
        last, norm = len(self.model.layers) - 1, self.model.norm
        if last in self.layer_ids:  # the last layer's entry is after the final norm, as in HF
            outputs[last] = kernel_rms_norm(norm, outputs[last])
        logits = decode_linear(hidden, self.lm_head.weight, bias=self.lm_head.bias, norm_weight=norm.weight,
                               eps=_eps(norm))
        return logits.view(batch, rows, -1).float(), self._features(outputs, outputs[last])

    def _features(self, outputs: dict, like: torch.Tensor) -> torch.Tensor:
        """The layer_ids entries of `outputs` (layer -> [b, Q, H]) side by side  # [b, Q, len(layer_ids) * H]."""
        feats = [outputs[i] for i in self.layer_ids]
        return torch.cat(feats, dim=-1) if feats else like.new_zeros(*like.shape[:2], 0)

    def _attention(self, layer, k_cache, v_cache, x, cos, sin, write_at, seq_lens, visible):
        """k_cache, v_cache  # [b, Hkv, max_len, D] views of this layer's cache for the requests in the forward."""
        attn = layer.self_attn
        b, rows, _ = x.shape
        q = attn.q_proj(x).view(b, rows, self.heads, self.head_dim)
        k = attn.k_proj(x).view(b, rows, self.kv_heads, self.head_dim)
        v = attn.v_proj(x).view(b, rows, self.kv_heads, self.head_dim)
        if hasattr(attn, "q_norm"):  # Qwen3
            q, k = rms_norm(attn.q_norm, q), rms_norm(attn.k_norm, k)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        write_kv(k_cache, write_at, k)
        write_kv(v_cache, write_at, v)
        out = self.attend(q, k_cache, v_cache, seq_lens, visible)  # [b, Q, Hq, D]
        return attn.o_proj(out.reshape(b, rows, self.heads * self.head_dim))

    def attend(self, q, k_cache, v_cache, seq_lens, visible):
        """The attention backend: `q  # [b, Q, Hq, D]` over the cache under `visible` (see visibility)."""
        if callable(self.attention):
            return self.attention(q, k_cache, v_cache, seq_lens, visible)
        if isinstance(visible, ExactVisible):
            from ddtree.kernels.tree_attention import tree_attention_exact
            return tree_attention_exact(q, k_cache, v_cache, seq_lens, *visible)
        if isinstance(visible, FlatMask):
            from ddtree.kernels.tree_attention import tree_attention_custom_mask
            return tree_attention_custom_mask(q, k_cache, v_cache, seq_lens, *visible)
        if self.attention == "triton":
            from ddtree.kernels.tree_attention import tree_attention
            return tree_attention(q, k_cache, v_cache, seq_lens, visible)
        length = visible.shape[-1]
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache[:, :, :length], v_cache[:, :, :length],
                                             attn_mask=visible, enable_gqa=True)
        return out.transpose(1, 2)

    @torch.no_grad()
    def probe(self, visible, seq_lens, rows: int) -> list[torch.Tensor]:
        """The mask the attention backend effectively applies under `visible`, per request `[rows, seq_len_b +
        rows]` bool: with zero queries every visible key gets the same weight, and with one-hot values (the key's
        column within a window of PROBE_WIDTH columns) each output row is uniform over exactly its visible keys."""
        batch, width = seq_lens.shape[0], PROBE_WIDTH
        lens = seq_lens.tolist()
        found = [torch.zeros(rows, n + rows, dtype=torch.bool) for n in lens]
        q = torch.zeros(batch, rows, 1, width, dtype=self.dtype, device=self.device)
        k = torch.zeros(batch, 1, self.max_len, width, dtype=self.dtype, device=self.device)
        cols = torch.arange(self.max_len, device=self.device)
        for start in range(0, max(lens) + rows, width):
            inside = (cols >= start) & (cols < start + width)
            v = torch.zeros_like(k)
            v[:, 0, inside, cols[inside] - start] = 1.0
            out = self.attend(q, k, v, seq_lens, visible)[:, :, 0].float().cpu()  # [B, Q, width]
            for b, n in enumerate(lens):
                stop = min(start + width, n + rows)
                if stop > start:
                    found[b][:, start:stop] = out[b, :, :stop - start] > 0.5 / (n + rows)
        return found

    def prefill(self, prompt: list[int], request: int):
        """`prompt` (token ids) into the empty slot `request` as a chain (parents[i] = i - 1), committed -> (logits
        # [n, vocab] float32, features  # [1, n, len(layer_ids) * hidden])."""
        positions = torch.arange(len(prompt), device=self.device)
        logits, features = self.forward(torch.tensor([prompt], device=self.device), positions[None],
                                        (positions - 1)[None], request=request)
        self.commit(positions[None], torch.tensor([len(prompt)]), request=request, chain=True)
        return logits[0], features

    def commit(self, accepted, accept_len, request: int | None = None, *, chain: bool = False) -> None:
        """Keep only the accepted rows of the last forward: `accepted  # [b, Q]` node indices, root first
        (-1 padding), `accept_len  # [b]`; the committed lengths grow by accept_len. `chain`: the caller knows
        accepted[:, i] = i (a chain's accepted prefix), so the rows are in place already."""
        slots = slice(None) if request is None else slice(request, request + 1)
        accepted, accept_len = accepted.to(self.device), accept_len.to(self.device)
        seq_lens = self.seq_lens[slots]
        if chain:
            seq_lens += accept_len  # a view: self.seq_lens in place
            return
        if self.device.type == "cuda":
            from ddtree.kernels.kv_compact import compact_kv_cache
            caches = self.kv[slots].flatten(1, 2)  # [b, 2 * layers * Hkv, max_len, D], one launch for all layers
            self.seq_lens[slots] = compact_kv_cache(caches, seq_lens, accepted, accept_len)  # in place
            return
        b, rows = accepted.shape
        src = seq_lens[:, None] + accepted.clamp_min(0)  # [b, Q] cache slot of each accepted node
        dst = seq_lens[:, None] + torch.arange(rows, device=self.device)
        keep = torch.arange(rows, device=self.device)[None, :] < accept_len[:, None]
        batch_idx = torch.arange(b, device=self.device)[:, None].expand(-1, rows)
        for cache in self.k + self.v:
            view = cache[slots].permute(0, 2, 1, 3)  # [b, L, Hkv, D]
            moved = view[batch_idx, src]  # gathered (a copy) before any write
            view[batch_idx[keep], dst[keep]] = moved[keep]
        self.seq_lens[slots] = seq_lens + accept_len

    def _views(self):
        """Per-layer `k, v  # [B, Hkv, max_len, D]` views of self.kv."""
        layers = self.kv.shape[1] // 2
        return [self.kv[:, i] for i in range(layers)], [self.kv[:, layers + i] for i in range(layers)]

    def clone(self) -> NativeDecoder:
        """An independent copy of the caches (for forking a session)."""
        twin = object.__new__(NativeDecoder)
        twin.__dict__.update(self.__dict__)
        twin.kv = self.kv.clone()
        twin.k, twin.v = twin._views()
        twin.seq_lens, twin.active = self.seq_lens.clone(), self.active.clone()
        return twin


def rms_norm(module, x, residual=None):
    """An RMSNorm module (HF Llama / Qwen3, or the DFlash drafter's) applied to x: ddtree.kernels.rms_norm, one
    launch, on CUDA; the module itself elsewhere. With `residual`: (norm(x + residual), x + residual), the add in
    the same launch on CUDA."""
    if not x.is_cuda:
        if residual is None:
            return module(x)
        total = x + residual
        return module(total), total
    return kernel_rms_norm(module, x, residual)


def kernel_rms_norm(module, x, residual=None):
    """rms_norm through ddtree.kernels.rms_norm on any device (in Triton's interpreter on a CPU)."""
    from ddtree.kernels.rmsnorm import rms_norm as kernel
    return kernel(x, module.weight, _eps(module), residual)


def decode_layer(layer, w: FusedLayer, hidden, cos, sin, positions, write_at, k_cache, v_cache, rows: int,
                 attend):
    """One decoder layer of a decode-sized forward (ddtree.kernels.decode_linear, 4 launches and `attend`), the
    target's or the static drafter's: `hidden  # [b*Q, H]` the residual stream -> the layer's output  # [b*Q, H];
    keys and values written into `k_cache, v_cache  # [b, Hkv, L, D]` at `write_at  # [b*Q]` (RoPE at `positions`);
    `attend(q  # [b, Q, Hq, D], k_cache, v_cache)` the attention (output shaped as q)."""
    from ddtree.kernels.decode_linear import decode_linear, decode_qkv
    norm1, norm2 = layer.input_layernorm, layer.post_attention_layernorm
    q = decode_qkv(hidden, w.qkv, w.qkv_bias, norm1.weight, _eps(norm1), w.q_norm, w.k_norm, w.eps, cos, sin,
                   positions, k_cache, v_cache, rows, write_at)  # [b*Q, Hq, D]
    out = attend(q.view(len(k_cache), rows, *q.shape[1:]), k_cache, v_cache).reshape(len(hidden), -1)
    o_proj, down = layer.self_attn.o_proj, layer.mlp.down_proj
    hidden = decode_linear(out, o_proj.weight, bias=o_proj.bias, residual=hidden)
    act = decode_linear(hidden, w.gate_up, bias=w.gate_up_bias, norm_weight=norm2.weight, eps=_eps(norm2), gated=True)
    return decode_linear(act, down.weight, bias=down.bias, residual=hidden)


def _eps(norm_module) -> float:
    return norm_module.variance_epsilon if hasattr(norm_module, "variance_epsilon") else norm_module.eps


def fused_unsupported(hf_model) -> str:
    """Why the fused forward cannot run this target ("" when it can): it needs a SwiGLU MLP and RoPE values that
    do not depend on the sequence length (dynamic / longrope scaling recompute them per forward)."""
    config = hf_model.config.get_text_config()
    if getattr(config, "hidden_act", "silu") not in ("silu", "swish"):
        return f"its MLP activation is {config.hidden_act!r}, the fused kernel computes SiLU"
    rope_type = str(getattr(hf_model.model.rotary_emb, "rope_type", "default"))
    if "dynamic" in rope_type or rope_type == "longrope":
        return f"its RoPE type {rope_type!r} changes with the sequence length"
    return ""


def rope_tables(rotary_emb, length: int, dtype, device):
    """cos, sin  # [length, D] in `dtype`: the model's own rotary embedding at positions 0..length-1, so a row at
    position p gets exactly the values HF computes for p (rope scaling and attention scaling included)."""
    positions = torch.arange(length, device=device)[None]
    cos, sin = rotary_emb(torch.zeros(1, dtype=dtype, device=device), positions)  # [1, length, D]
    return cos[0].contiguous(), sin[0].contiguous()


def fused_layer(layer) -> FusedLayer:
    """An HF Llama / Qwen2 / Qwen3 (or DFlash drafter) layer's weights as the fused forwards read them."""
    attn, mlp = layer.self_attn, layer.mlp
    cat = lambda *mods: torch.cat([m.weight for m in mods])  # noqa: E731
    bias = lambda *mods: None if mods[0].bias is None else torch.cat([m.bias for m in mods])  # noqa: E731
    q_norm, k_norm = getattr(attn, "q_norm", None), getattr(attn, "k_norm", None)
    eps = 0.0 if k_norm is None else getattr(k_norm, "variance_epsilon", getattr(k_norm, "eps", None))
    return FusedLayer(cat(attn.q_proj, attn.k_proj, attn.v_proj), bias(attn.q_proj, attn.k_proj, attn.v_proj),
                      cat(mlp.gate_proj, mlp.up_proj), bias(mlp.gate_proj, mlp.up_proj),
                      None if q_norm is None else q_norm.weight, None if k_norm is None else k_norm.weight, eps)


def packed_mask_attention(batch):
    """An attention callable for NativeDecoder that reads `batch`'s flat custom mask and mask_indptr the way the
    serving backend does, through the workbench's Triton kernel (ddtree.kernels.tree_attention_custom_mask), so a
    correct or corrupted packing (ddtree.VerifyBatch, padded or unpadded) drives a whole target forward."""
    from ddtree.kernels.tree_attention import tree_attention_custom_mask

    def attention(q, k_cache, v_cache, seq_lens, parents):
        device = q.device
        rows = (batch.qo_indptr[1:] - batch.qo_indptr[:-1]).to(device)
        return tree_attention_custom_mask(q, k_cache, v_cache, seq_lens, rows, batch.custom_mask.to(device),
                                          batch.mask_indptr[:-1].to(device))

    return attention

