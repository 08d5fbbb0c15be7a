"""The DFlash block-diffusion drafter (z-lab DFlash, Qwen3-style layers), written from its published semantics.

Per layer (Qwen3 decoder layer, pre-norm residuals, SwiGLU MLP), with ctx = hidden_norm(fc(context features)):
  q = RoPE(q_norm(q_proj(input_layernorm(block))))                              # block positions only
  k = RoPE(k_norm(k_proj([ctx ; input_layernorm(block)]))), v = v_proj([ctx ; input_layernorm(block)])
  attention of the block over [context ; block], NOT causal inside the block, GQA.
The context is not passed through the layer's input_layernorm (as in the reference). A sliding-window layer lets a
block query at position p see context keys at positions > p - sliding_window (and the whole block); its cache keeps
only the last `sliding_window` context positions. The drafter's output goes through its own final `norm`; the
caller applies the TARGET's lm_head (and embeds the block with the TARGET's embedding table): see draft_logits.

Checkpoint: an HF-style folder with config.json (Qwen3 config + block_size, num_target_layers,
dflash_config {mask_token_id, target_layer_ids}) and model.safetensors or sharded model-0000k-of-0000n.safetensors
+ model.safetensors.index.json. Loading never runs checkpoint code and never unpickles.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save
from torch import nn

from ddtree._checks import check_int
from ddtree.files import MAX_JSON_BYTES, atomic_write, read_bytes_bounded
from ddtree.models._common import long_vector, resolve_device, resolve_dtype

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
LAYER_TYPES = ("full_attention", "sliding_attention")
# dflash_config extensions of later drafter families (DFlash2 convolutions / candidate selector, output scaling)
# that this module does not implement: refusing them beats drafting from a different model than was trained.
UNSUPPORTED_DFLASH_KEYS = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k",
                           "output_multiplier", "final_logit_softcapping", "input_embedding_scale")
HEADER_ALLOWANCE = 256  # bytes of safetensors header budgeted per tensor when sizing shards


@dataclass
class DFlashConfig:
    """The drafter's architecture. `layer_types` defaults to all "full_attention"; `sliding_window` is needed as
    soon as one layer is "sliding_attention". Only the default (unscaled) RoPE is supported."""
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    block_size: int
    num_target_layers: int
    mask_token_id: int
    target_layer_ids: tuple[int, ...]
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    max_position_embeddings: int = 40960
    layer_types: tuple[str, ...] = field(default=())
    sliding_window: int | None = None

    def __post_init__(self):
        for name in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                     "intermediate_size", "vocab_size", "num_target_layers", "max_position_embeddings"):
            setattr(self, name, check_int(name, getattr(self, name), minimum=1))
        self.block_size = check_int("block_size", self.block_size, minimum=2)
        self.mask_token_id = check_int("mask_token_id", self.mask_token_id)
        if self.mask_token_id >= self.vocab_size:
            raise ValueError(f"mask_token_id must be in [0, vocab_size={self.vocab_size}), got {self.mask_token_id}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                             f"num_key_value_heads ({self.num_key_value_heads})")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {self.head_dim}")
        if not isinstance(self.target_layer_ids, (list, tuple)) or not self.target_layer_ids:
            raise ValueError(f"target_layer_ids must be a non-empty list of target layer ids, "
                             f"got {self.target_layer_ids!r}")
        self.target_layer_ids = tuple(check_int("target_layer_ids entry", i) for i in self.target_layer_ids)
        if max(self.target_layer_ids) >= self.num_target_layers:
            raise ValueError(f"target_layer_ids must be in [0, num_target_layers={self.num_target_layers}), "
                             f"got {list(self.target_layer_ids)}")
        for name in ("rms_norm_eps", "rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
            setattr(self, name, float(value))
        self.layer_types = tuple(self.layer_types) or ("full_attention",) * self.num_hidden_layers
        if len(self.layer_types) != self.num_hidden_layers or not set(self.layer_types) <= set(LAYER_TYPES):
            raise ValueError(f"layer_types must list {self.num_hidden_layers} entries from {LAYER_TYPES}, "
                             f"got {list(self.layer_types)}")
        if "sliding_attention" in self.layer_types:
            self.sliding_window = check_int("sliding_window", self.sliding_window, minimum=1)

    def window(self, layer: int) -> int | None:
        """The sliding window of `layer`, or None for a full-attention layer."""
        return self.sliding_window if self.layer_types[layer] == "sliding_attention" else None

    @classmethod
    def from_dict(cls, raw: dict, *, source: str = CONFIG_FILE) -> DFlashConfig:
        """Parse an HF-style drafter config (unknown keys are ignored); errors name `source` and the key."""
        if not isinstance(raw, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(raw).__name__}")
        dflash = raw.get("dflash_config")
        if not isinstance(dflash, dict):
            raise ValueError(f"{source}: key 'dflash_config' must be an object with mask_token_id and "
                             f"target_layer_ids, got {dflash!r}")
        for key in UNSUPPORTED_DFLASH_KEYS:
            if key in dflash or key in raw:
                raise ValueError(f"{source}: key {key!r} belongs to a drafter variant this module does not implement")
        if raw.get("attention_bias"):
            raise ValueError(f"{source}: key 'attention_bias' must be false (bias-free projections)")
        if raw.get("hidden_act", "silu") != "silu":
            raise ValueError(f"{source}: key 'hidden_act' must be 'silu', got {raw['hidden_act']!r}")
        if raw.get("is_causal"):
            raise ValueError(f"{source}: key 'is_causal' must be false (the block attends to itself non-causally)")
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        if not isinstance(rope, dict) or rope.get("rope_type", rope.get("type", "default")) != "default":
            raise ValueError(f"{source}: only default RoPE is supported, got rope settings {rope!r}")

        def get(key, *fallbacks):
            """dflash_config[key] (block_size, mask_token_id only), else raw[key], else the fallback; else an error."""
            for where in (dflash, raw) if key in ("block_size", "mask_token_id") else (raw,):
                if where.get(key) is not None:
                    return where[key]
            if not fallbacks:
                raise ValueError(f"{source}: missing key {key!r}")
            return fallbacks[0]

        if "target_layer_ids" not in dflash:
            raise ValueError(f"{source}: missing key 'dflash_config.target_layer_ids'")
        hidden, heads = get("hidden_size"), get("num_attention_heads")
        try:
            return cls(
                hidden_size=hidden, num_hidden_layers=get("num_hidden_layers"), num_attention_heads=heads,
                num_key_value_heads=get("num_key_value_heads", heads),
                head_dim=get("head_dim", None) or (hidden // heads if isinstance(hidden, int)
                                                   and isinstance(heads, int) and heads > 0 else None),
                intermediate_size=get("intermediate_size"), vocab_size=get("vocab_size"),
                block_size=get("block_size"), num_target_layers=get("num_target_layers"),
                mask_token_id=get("mask_token_id"), target_layer_ids=dflash["target_layer_ids"],
                rms_norm_eps=get("rms_norm_eps", 1e-6), rope_theta=get("rope_theta", rope.get("rope_theta", 1e6)),
                max_position_embeddings=get("max_position_embeddings", 40960),
                layer_types=get("layer_types", ()), sliding_window=get("sliding_window", None))
        except (TypeError, ValueError) as error:
            raise ValueError(f"{source}: {error}") from None

    def to_dict(self) -> dict:
        """The HF-style config.json content (readable by from_dict and by the reference implementation)."""
        return {
            "architectures": ["DFlashDraftModel"], "model_type": "qwen3",
            "hidden_size": self.hidden_size, "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads, "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim, "intermediate_size": self.intermediate_size, "vocab_size": self.vocab_size,
            "rms_norm_eps": self.rms_norm_eps, "rope_theta": self.rope_theta,
            "max_position_embeddings": self.max_position_embeddings, "hidden_act": "silu", "attention_bias": False,
            "layer_types": list(self.layer_types), "sliding_window": self.sliding_window,
            "use_sliding_window": "sliding_attention" in self.layer_types,
            "block_size": self.block_size, "num_target_layers": self.num_target_layers,
            "dflash_config": {"mask_token_id": self.mask_token_id, "target_layer_ids": list(self.target_layer_ids)},
        }


class RMSNorm(nn.Module):
    """Qwen3 RMSNorm: normalise in float32, scale in the input dtype."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rope_cos_sin(positions, head_dim: int, theta: float, dtype):
    """cos, sin  # [n, head_dim] for absolute `positions` [n] (HF rotate-half layout), computed in float32."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim)
    angles = positions.float()[:, None] * inv_freq[None, :]  # [n, head_dim / 2]
    angles = torch.cat([angles, angles], dim=-1)  # [n, head_dim]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x, cos, sin):
    """HF's rotate-half RoPE, the one reference: `x  # [..., heads, head_dim]` rotated by `cos, sin  # [...,
    head_dim]` (one row per token: [n] for the drafter, [b, Q] for a padded target batch), in x's dtype."""
    cos, sin = cos.unsqueeze(-2).to(x.dtype), sin.unsqueeze(-2).to(x.dtype)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, config: DFlashConfig):
        super().__init__()
        hidden, heads, kv_heads, dim = (config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
                                        config.head_dim)
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim
        self.q_proj = nn.Linear(hidden, heads * dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * dim, bias=False)
        self.o_proj = nn.Linear(heads * dim, hidden, bias=False)
        self.q_norm = RMSNorm(dim, config.rms_norm_eps)
        self.k_norm = RMSNorm(dim, config.rms_norm_eps)

    def keys_values(self, x, cos, sin):
        """x  # [..., n, hidden], cos/sin  # [..., n, head_dim] -> keys, values  # [..., n, kv_heads, head_dim]
        (keys normed and rotated)."""
        shape = (*x.shape[:-1], self.kv_heads, self.head_dim)
        return apply_rope(self.k_norm(self.k_proj(x).view(shape)), cos, sin), self.v_proj(x).view(shape)

    def forward(self, x, cos, sin, ctx_keys, ctx_values, visible):
        """The block attention, the one reference (inference and training): x  # [..., L, hidden] (normed block),
        cos/sin  # [..., L, head_dim]; ctx_keys/values  # [..., c, kv_heads, head_dim]; visible  # [..., L, c + L]
        bool or None (all visible) -> [..., L, hidden]. Leading dims: none for one block, [N] for a batch."""
        queries = apply_rope(self.q_norm(self.q_proj(x).view(*x.shape[:-1], self.heads, self.head_dim)), cos, sin)
        block_keys, block_values = self.keys_values(x, cos, sin)
        dtype = block_values.dtype  # under autocast: the projections' (the norms may return float32)
        keys = torch.cat([ctx_keys, block_keys], dim=-3).transpose(-3, -2).to(dtype)  # [..., kv, c + L, d]
        values = torch.cat([ctx_values, block_values], dim=-3).transpose(-3, -2)
        group = self.heads // self.kv_heads
        out = F.scaled_dot_product_attention(  # [..., heads, L, head_dim]
            queries.transpose(-3, -2).to(dtype), keys.repeat_interleave(group, dim=-3),
            values.repeat_interleave(group, dim=-3), attn_mask=None if visible is None else visible.unsqueeze(-3),
            scale=self.head_dim ** -0.5)
        return self.o_proj(out.transpose(-3, -2).reshape(*x.shape[:-1], self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, config: DFlashConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: DFlashConfig):
        super().__init__()
        self.self_attn = Attention(config)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, hidden, cos, sin, ctx_keys, ctx_values, visible):
        hidden = hidden + self.self_attn(self.input_layernorm(hidden), cos, sin, ctx_keys, ctx_values, visible)
        return hidden + self.mlp(self.post_attention_layernorm(hidden))


@dataclass
class DraftCache:
    """Projected context K/V per drafter layer (post k_norm, post RoPE) with their absolute positions.

    keys[i], values[i]  # [n_i, kv_heads, head_dim]; positions[i]  # [n_i]; n_i = length for full layers and
    min(length, sliding_window) for sliding layers. `length` = context positions consumed so far (they are
    positions 0..length-1)."""
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    positions: list[torch.Tensor]
    windows: list[int | None]
    length: int = 0

    def clone(self) -> DraftCache:
        return DraftCache([k.clone() for k in self.keys], [v.clone() for v in self.values],
                          [p.clone() for p in self.positions], list(self.windows), self.length)


def drafter_folder(path, name: str = "path") -> Path:
    """`path` as a drafter folder (one holding config.json), or a ValueError naming the argument `name`."""
    folder = Path(path).expanduser() if isinstance(path, (str, os.PathLike)) else None
    if folder is None or not (folder / CONFIG_FILE).is_file():
        raise ValueError(f"{name} must be a drafter folder holding {CONFIG_FILE}, got {path!r}")
    return folder


class DFlashDrafter(nn.Module):
    """DFlash drafter: new_cache(), extend_context(cache, features, positions), forward(block_embeds,
    block_positions, cache) -> hidden after the final norm (apply the target's lm_head for logits)."""

    def __init__(self, config: DFlashConfig):
        super().__init__()
        if not isinstance(config, DFlashConfig):
            raise ValueError(f"config must be a DFlashConfig, got {type(config).__name__}")
        self.config = config
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.fc = nn.Linear(len(config.target_layer_ids) * config.hidden_size, config.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    @property
    def device(self) -> torch.device:
        return self.fc.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.fc.weight.dtype

    def new_cache(self) -> DraftCache:
        config = self.config
        empty = torch.empty(0, config.num_key_value_heads, config.head_dim, dtype=self.dtype, device=self.device)
        n = config.num_hidden_layers
        return DraftCache([empty] * n, [empty] * n, [torch.empty(0, dtype=torch.long, device=self.device)] * n,
                          [config.window(i) for i in range(n)])

    def _rope(self, positions):
        return rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta, self.dtype)

    def extend_context(self, cache: DraftCache, features, positions) -> None:
        """Append committed context: features  # [c, len(target_layer_ids) * hidden] (target hidden states),
        positions  # [c], which must be cache.length .. cache.length + c - 1."""
        if not isinstance(cache, DraftCache) or len(cache.keys) != self.config.num_hidden_layers:
            raise ValueError("cache must be a DraftCache from this drafter's new_cache()")
        width = len(self.config.target_layer_ids) * self.config.hidden_size
        if not isinstance(features, torch.Tensor) or features.ndim != 2 or features.shape[1] != width:
            shape = tuple(features.shape) if isinstance(features, torch.Tensor) else type(features).__name__
            raise ValueError(f"features must be a tensor [c, len(target_layer_ids) * hidden] = [c, {width}], "
                             f"got {shape}")
        positions = long_vector("positions", positions, length=len(features), device=self.device)
        expected = torch.arange(cache.length, cache.length + len(features), device=self.device)
        if not torch.equal(positions, expected):
            raise ValueError(f"positions must continue the context: {cache.length}..{cache.length + len(features) - 1}"
                             f", got {positions.tolist()}")
        ctx = self.hidden_norm(self.fc(features.to(self.device, self.dtype)))  # [c, hidden]
        cos, sin = self._rope(positions)
        for i, layer in enumerate(self.layers):
            keys, values = layer.self_attn.keys_values(ctx, cos, sin)
            keep = cache.windows[i] or len(cache.keys[i]) + len(ctx)
            cache.keys[i] = torch.cat([cache.keys[i], keys])[-keep:]
            cache.values[i] = torch.cat([cache.values[i], values])[-keep:]
            cache.positions[i] = torch.cat([cache.positions[i], positions])[-keep:]
        cache.length += len(ctx)

    def forward(self, block_embeds, block_positions, cache: DraftCache):
        """block_embeds  # [L, hidden] (the block embedded with the target's table), block_positions  # [L]
        -> hidden  # [L, hidden] after the drafter's final norm. The cache is read, not changed."""
        if not isinstance(cache, DraftCache) or len(cache.keys) != self.config.num_hidden_layers:
            raise ValueError("cache must be a DraftCache from this drafter's new_cache()")
        hidden_size = self.config.hidden_size
        if not isinstance(block_embeds, torch.Tensor) or block_embeds.ndim != 2 or \
                block_embeds.shape[1] != hidden_size or not len(block_embeds):
            shape = tuple(block_embeds.shape) if isinstance(block_embeds, torch.Tensor) else type(block_embeds)
            raise ValueError(f"block_embeds must be a tensor [L, hidden] = [L, {hidden_size}] with L >= 1, got {shape}")
        block_positions = long_vector("block_positions", block_positions, length=len(block_embeds),
                                      device=self.device)
        hidden = block_embeds.to(self.device, self.dtype)  # [L, hidden]
        cos, sin = self._rope(block_positions)
        for i, layer in enumerate(self.layers):
            visible = None
            if cache.windows[i] is not None:  # [L, c + L]: context keys inside the window, the whole block
                ctx_visible = cache.positions[i][None, :] > block_positions[:, None] - cache.windows[i]
                visible = torch.cat([ctx_visible, ctx_visible.new_ones(len(hidden), len(hidden))], dim=1)
            hidden = layer(hidden, cos, sin, cache.keys[i], cache.values[i], visible)
        return self.norm(hidden)

    @classmethod
    def from_pretrained(cls, path, *, device="cpu", dtype=None) -> DFlashDrafter:
        """Load a drafter folder (config.json + safetensors, single file or sharded with an index)."""
        device = resolve_device(device)
        dtype = resolve_dtype(dtype, device)
        folder = drafter_folder(path)
        config_path = folder / CONFIG_FILE
        data = read_bytes_bounded(config_path, MAX_JSON_BYTES, "drafter config")
        try:
            raw = json.loads(data)
        except ValueError as error:
            raise ValueError(f"{config_path}: not valid JSON ({error})") from None
        model = cls(DFlashConfig.from_dict(raw, source=str(config_path)))
        state = _read_weights(folder)
        _check_state(model.state_dict(), state, folder)
        model.load_state_dict(state)
        return model.to(device=device, dtype=dtype).eval().requires_grad_(False)

    def save_pretrained(self, path, max_shard_mb: float = 15) -> None:
        """Write config.json and safetensors weights, in shards of at most `max_shard_mb` MB (10**6 bytes) each,
        headers included; a single shard is named model.safetensors. Each file is written atomically (a failed write
        leaves the file it would replace as it was); earlier weight files in `path` are removed once all are
        written."""
        if isinstance(max_shard_mb, bool) or not isinstance(max_shard_mb, (int, float)) or not max_shard_mb > 0:
            raise ValueError(f"max_shard_mb must be a positive number, got {max_shard_mb!r}")
        folder = Path(path).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        state = {name: tensor.detach().contiguous().cpu() for name, tensor in self.state_dict().items()}
        shards = _plan_shards(state, int(max_shard_mb * 10**6))
        names = [WEIGHTS_FILE] if len(shards) == 1 else \
            [f"model-{k:05d}-of-{len(shards):05d}.safetensors" for k in range(1, len(shards) + 1)]
        for name, shard in zip(names, shards):
            atomic_write(folder / name, save(shard, metadata={"format": "pt"}), "drafter weights")
        if len(shards) > 1:
            weight_map = {tensor: name for name, shard in zip(names, shards) for tensor in shard}
            total = sum(t.numel() * t.element_size() for t in state.values())
            index = {"metadata": {"total_size": total}, "weight_map": weight_map}
            atomic_write(folder / INDEX_FILE, json.dumps(index, indent=2) + "\n", "drafter index")
            names.append(INDEX_FILE)
        config = self.config.to_dict() | {"torch_dtype": str(self.dtype).removeprefix("torch.")}
        atomic_write(folder / CONFIG_FILE, json.dumps(config, indent=2) + "\n", "drafter config")
        for old in [*folder.glob("model*.safetensors"), folder / INDEX_FILE]:
            if old.name not in names:
                old.unlink(missing_ok=True)


def _plan_shards(state: dict, max_bytes: int) -> list[dict]:
    """Greedy packing in state-dict order; every shard's tensors plus header allowance fit in max_bytes."""
    shards, current, used = [], {}, HEADER_ALLOWANCE
    for name, tensor in state.items():
        size = tensor.numel() * tensor.element_size() + HEADER_ALLOWANCE
        if size + HEADER_ALLOWANCE > max_bytes:
            raise ValueError(f"max_shard_mb = {max_bytes / 10**6} is too small for tensor {name!r} "
                             f"({size / 10**6:.3f} MB); raise it")
        if current and used + size > max_bytes:
            shards.append(current)
            current, used = {}, HEADER_ALLOWANCE
        current[name] = tensor
        used += size
    return shards + [current]


def _read_weights(folder: Path) -> dict:
    if (folder / WEIGHTS_FILE).is_file():
        return load_file(str(folder / WEIGHTS_FILE))
    index_path = folder / INDEX_FILE
    if not index_path.is_file():
        raise ValueError(f"{folder}: no weights, expected {WEIGHTS_FILE} or {INDEX_FILE} with its shards")
    data = read_bytes_bounded(index_path, MAX_JSON_BYTES, "drafter weight index")
    try:
        weight_map = json.loads(data)["weight_map"]
        shard_names = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ValueError(f"{index_path}: expected a JSON object with a 'weight_map' {{tensor name: shard file}}") \
            from None
    state = {}
    for shard in shard_names:
        if not isinstance(shard, str) or not (folder / shard).is_file():
            raise ValueError(f"{index_path}: shard {shard!r} named in weight_map is missing from {folder}")
        tensors = load_file(str(folder / shard))
        state.update({name: tensor for name, tensor in tensors.items() if weight_map.get(name) == shard})
    missing = [name for name in weight_map if name not in state]
    if missing:
        raise ValueError(f"{index_path}: tensors {missing} are not in the shards the weight_map names")
    return state


def _check_state(expected: dict, state: dict, folder: Path) -> None:
    missing = [name for name in expected if name not in state]
    unexpected = [name for name in state if name not in expected]
    if missing:
        raise ValueError(f"{folder}: checkpoint lacks tensors {missing}")
    if unexpected:
        raise ValueError(f"{folder}: checkpoint has tensors this drafter does not define: {unexpected}")
    for name, tensor in expected.items():
        if tuple(state[name].shape) != tuple(tensor.shape):
            raise ValueError(f"{folder}: tensor {name!r} has shape {tuple(state[name].shape)}, "
                             f"config.json implies {tuple(tensor.shape)}")
        if not state[name].is_floating_point():
            raise ValueError(f"{folder}: tensor {name!r} must be floating point, got {state[name].dtype}")
