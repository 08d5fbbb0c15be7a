"""The DFlash drafter on the native engine: a static context cache for a batch and one batched block forward.

Cache layout as the target's (ddtree.engine.decoder): per drafter layer `k, v  # [B, Hkv, max_len, D]` holding the
projected context (target features through fc + hidden_norm, then k_proj, k_norm, RoPE; v_proj), request b's
context at [0, lens[b]). The drafter's context is always the target's committed prefix, so `lens` is the target's
seq_lens. A block forward writes the block's own K/V at lens[b] + j (scratch that the next extension overwrites)
and attends over [0, lens[b] + block_size): non-causal inside the block, context keys inside the sliding window
of a sliding layer. Same semantics as ddtree.models.DFlashDrafter with its DraftCache, for many requests at once
and with no host synchronisation (CUDA-graph capturable).

On CUDA (`fused`) a layer is 9 launches: the residual add fused into each RMSNorm (ddtree.kernels.rmsnorm), one q/k/v
projection (weights concatenated once, at construction), q/k norms + RoPE + cache write in one launch
(ddtree.kernels.rope), attention, o_proj, one gate/up projection, SwiGLU (ddtree.kernels.swiglu), down_proj. A block
forward of at most `decode_rows` rows (batch x block: one to three requests of a 16-token block) takes the
target's decode kernels instead (ddtree.kernels.decode_linear), 5 launches a layer with PDL, as the target's decode
forward (ddtree.engine.decoder): the norms, SwiGLU, q/k norms + RoPE + cache write and the residual adds inside the
projections, the final norm inside the LM head. Elsewhere the drafter's own modules run, as in the reference.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ddtree.engine.decoder import decode_layer, fused_layer, rms_norm
from ddtree.kv import write_kv
from ddtree.models.drafter import apply_rope, rope_cos_sin


class StaticDrafter:
    def __init__(self, pair, *, batch_size: int, max_len: int, attention: str, fused: bool | None = None):
        """attention: "triton" (ddtree.kernels.tree_attention, full-attention layers) or "torch" (masked SDPA).
        fused: concatenated projections and the fused kernels (default: on CUDA; elsewhere they run in Triton's
        interpreter, slowly, which is how CI tests this path)."""
        self.drafter = pair.drafter
        config = self.drafter.config
        self.embed, self.head = pair.target.get_input_embeddings(), pair.target.get_output_embeddings()
        self.block_size, self.mask_token_id = config.block_size, config.mask_token_id
        self.heads, self.kv_heads, self.head_dim = (config.num_attention_heads, config.num_key_value_heads,
                                                    config.head_dim)
        self.windows = [config.window(i) for i in range(config.num_hidden_layers)]
        self.attention = attention
        device, dtype = self.drafter.device, self.drafter.dtype
        shape = (batch_size, self.kv_heads, max_len, self.head_dim)
        self.cos, self.sin = rope_cos_sin(torch.arange(max_len, device=device), self.head_dim, config.rope_theta,
                                          dtype)  # [max_len, D] tables, gathered by position
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in self.windows]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in self.windows]
        self.block = torch.full((batch_size, self.block_size), self.mask_token_id, dtype=torch.long, device=device)
        self.offsets = torch.arange(max(max_len, self.block_size), device=device)  # positions lens + j
        self.fused = device.type == "cuda" if fused is None else bool(fused)
        if self.fused:  # copies of the weights, taken here: after changing the drafter, build a new session
            self.fused_layers = [fused_layer(layer) for layer in self.drafter.layers]
        from ddtree.kernels.decode_linear import DECODE_ROWS
        self.decode_rows = DECODE_ROWS if self.fused and self.head.weight.dtype == dtype else 0  # see _logits_decode
        words = (self.block_size + 31) // 32  # every block row sees every block column (ancestor_bitmask layout)
        full = [sum(1 << c for c in range(32 * w, min(32 * w + 32, self.block_size))) for w in range(words)]
        self.block_bits = torch.tensor([x - (1 << 32) if x >= 1 << 31 else x for x in full], dtype=torch.int32,
                                       device=device).expand(batch_size, self.block_size, words).contiguous()

    @torch.no_grad()
    def extend(self, features, lens, slots=slice(None)) -> None:
        """Write context rows: `features  # [b, R, F]` (target features) at positions lens[b] + 0..R-1 of the
        requests in `slots`; rows past what a request keeps are scratch past its new length."""
        b, rows, _ = features.shape
        positions = lens[:, None] + self.offsets[:rows]  # [b, R]
        ctx = rms_norm(self.drafter.hidden_norm, self.drafter.fc(features.to(self.drafter.dtype))).flatten(0, 1)
        if self.fused:
            from ddtree.kernels.decode_linear import decode_qkv
            from ddtree.kernels.rope import norm_rope_cache
            kv_rows = self.heads * self.head_dim  # the k and v rows of the concatenated projection
            for w, k_cache, v_cache in zip(self.fused_layers, self.k, self.v):
                args = (w.k_norm, w.k_norm, w.eps, self.cos, self.sin, positions.flatten(), k_cache[slots],
                        v_cache[slots], rows)
                if len(ctx) <= self.decode_rows:  # projection, k norm, RoPE and cache write in one launch
                    decode_qkv(ctx, w.qkv[kv_rows:], None, None, 0.0, *args)
                else:
                    norm_rope_cache(F.linear(ctx, w.qkv[kv_rows:]), *args)
            return
        cos, sin = self.cos[positions.flatten()], self.sin[positions.flatten()]  # [b*R, D]
        for layer, k_cache, v_cache in zip(self.drafter.layers, self.k, self.v):
            keys, values = self._keys_values(layer.self_attn, ctx, cos, sin)  # [b*R, Hkv, D]
            write_kv(k_cache[slots], positions, keys.view(b, rows, self.kv_heads, self.head_dim))
            write_kv(v_cache[slots], positions, values.view(b, rows, self.kv_heads, self.head_dim))

    @torch.no_grad()
    def logits(self, bonus, lens):
        """One pass over the block [bonus, MASK x (block - 1)] of every request at positions lens[b] + j
        -> draft logits  # [B, block - 1, vocab] float32 (ddtree.models.draft_logits, batched)."""
        batch, size = bonus.shape[0], self.block_size
        self.block[:, 0] = bonus
        positions = lens[:, None] + self.offsets[:size]  # [B, L]
        hidden = F.embedding(self.block, self.embed.weight).to(self.drafter.dtype)  # [B, L, H]
        if batch * size <= self.decode_rows:
            return self._logits_decode(hidden, positions, lens)
        if self.fused:
            return self._logits_fused(hidden, positions, lens)
        cos, sin = self.cos[positions.flatten()], self.sin[positions.flatten()]  # [B*L, D]
        for layer, window, k_cache, v_cache in zip(self.drafter.layers, self.windows, self.k, self.v):
            attn = layer.self_attn
            x = rms_norm(layer.input_layernorm, hidden).flatten(0, 1)  # [B*L, H]
            q = apply_rope(rms_norm(attn.q_norm, attn.q_proj(x).view(-1, self.heads, self.head_dim)), cos, sin)
            keys, values = self._keys_values(attn, x, cos, sin)
            write_kv(k_cache, positions, keys.view(batch, size, self.kv_heads, self.head_dim))
            write_kv(v_cache, positions, values.view(batch, size, self.kv_heads, self.head_dim))
            out = self._attend(q.view(batch, size, self.heads, self.head_dim), k_cache, v_cache, lens, window)
            hidden = hidden + attn.o_proj(out.reshape(batch, size, self.heads * self.head_dim))
            hidden = hidden + layer.mlp(rms_norm(layer.post_attention_layernorm, hidden))
        hidden = rms_norm(self.drafter.norm, hidden)[:, 1:]
        return self.head(hidden.to(self.head.weight.dtype)).float()

    def _logits_fused(self, hidden, positions, lens):
        """logits() with the fused kernels; hidden  # [B, L, H] block embeddings."""
        from ddtree.kernels.rope import norm_rope_cache
        from ddtree.kernels.swiglu import silu_mul
        batch, size = positions.shape
        delta = None  # the MLP output that the next norm adds to the residual stream
        for i, (layer, window) in enumerate(zip(self.drafter.layers, self.windows)):
            attn = layer.self_attn
            if delta is None:
                x = rms_norm(layer.input_layernorm, hidden)
            else:
                x, hidden = rms_norm(layer.input_layernorm, delta, residual=hidden)
            w = self.fused_layers[i]
            q = norm_rope_cache(F.linear(x.flatten(0, 1), w.qkv), w.q_norm, w.k_norm, w.eps, self.cos, self.sin,
                                positions.flatten(), self.k[i], self.v[i], size)
            out = self._attend(q.view(batch, size, self.heads, self.head_dim), self.k[i], self.v[i], lens, window)
            x, hidden = rms_norm(layer.post_attention_layernorm, attn.o_proj(out.reshape(batch, size, -1)),
                                 residual=hidden)
            delta = layer.mlp.down_proj(silu_mul(F.linear(x.flatten(0, 1), w.gate_up))).view_as(hidden)
        final = self.drafter.norm
        hidden = rms_norm(final, hidden) if delta is None else rms_norm(final, delta, residual=hidden)[0]
        return self.head(hidden[:, 1:].to(self.head.weight.dtype)).float()

    def _logits_decode(self, hidden, positions, lens):
        """_logits_fused through the decode kernels (at most decode_rows rows); hidden  # [B, L, H]."""
        from ddtree.kernels.decode_linear import decode_linear
        from ddtree.kernels.launch import dependent_launches
        batch, size = positions.shape
        hidden, at = hidden.flatten(0, 1), positions.flatten()  # [B*L, H] the residual stream; [B*L]
        with dependent_launches():  # each Triton kernel may start as the one before ends (PDL)
            for layer, w, window, k, v in zip(self.drafter.layers, self.fused_layers, self.windows, self.k, self.v):
                attend = functools.partial(self._attend, lens=lens, window=window)
                hidden = decode_layer(layer, w, hidden, self.cos, self.sin, at, at, k, v, size, attend)
            final = self.drafter.norm
            logits = decode_linear(hidden, self.head.weight, bias=self.head.bias, norm_weight=final.weight,
                                   eps=final.eps)
        return logits.view(batch, size, -1)[:, 1:].float()  # [B, L - 1, vocab]

    def _keys_values(self, attn, x, cos, sin):
        """DFlash Attention.keys_values with the engine's norm: x  # [n, hidden] -> keys, values  # [n, Hkv, D]."""
        keys = rms_norm(attn.k_norm, attn.k_proj(x).view(len(x), self.kv_heads, self.head_dim))
        return apply_rope(keys, cos, sin), attn.v_proj(x).view(len(x), self.kv_heads, self.head_dim)

    def _attend(self, q, k_cache, v_cache, lens, window):
        """q  # [B, L, Hq, D] -> [B, L, Hq, D] over the context [0, lens) and the whole block."""
        if self.attention == "triton" and window is None:
            from ddtree.kernels.tree_attention import tree_attention
            return tree_attention(q, k_cache, v_cache, lens, self.block_bits)
        size = q.shape[1]
        cols = torch.arange(k_cache.shape[2], device=q.device)  # [max_len]
        rows = lens[:, None] + torch.arange(size, device=q.device)  # [B, L] block positions
        context = cols[None, None, :] < lens[:, None, None]  # [B, 1, max_len]
        if window is not None:
            context = context & (cols[None, None, :] > rows[:, :, None] - window)
        visible = context | ((cols[None, None, :] >= lens[:, None, None])
                             & (cols[None, None, :] < lens[:, None, None] + size))  # [B, L, max_len]
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache, v_cache, attn_mask=visible[:, None],
                                             enable_gqa=True)
        return out.transpose(1, 2)

    def clone(self) -> StaticDrafter:
        twin = object.__new__(StaticDrafter)
        twin.__dict__.update(self.__dict__)
        twin.k, twin.v = [k.clone() for k in self.k], [v.clone() for v in self.v]
        return twin

