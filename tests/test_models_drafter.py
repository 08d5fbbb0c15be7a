"""DFlash drafter: checkpoint round trips, errors, and the forward against an independent dense implementation."""
import errno
import json
import math
import os

import pytest
import torch
from safetensors.torch import load_file, save_file
from drafters import noisy_drafter
from hostile_files import run_limited, unblocked

from ddtree.files import MAX_JSON_BYTES
from ddtree.models import DFlashConfig, DFlashDrafter

WINDOW = 4
CONFIG = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              intermediate_size=48, vocab_size=300, block_size=4, num_target_layers=3, mask_token_id=299,
              target_layer_ids=(0, 2), rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=128,
              layer_types=("full_attention", "sliding_attention"), sliding_window=WINDOW)
FEATURE_DIM = 2 * 32


def random_drafter(seed=0):
    return noisy_drafter(CONFIG, seed)


@pytest.fixture
def saved(tmp_path):
    drafter = random_drafter()
    drafter.save_pretrained(tmp_path)
    return drafter, tmp_path


def inputs(seed=1, context=11):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(context, FEATURE_DIM, generator=gen), torch.randn(CONFIG["block_size"], 32, generator=gen)


# ---------- independent dense implementation: full recompute, explicit loops and window test ----------

def rms(x, weight):
    return weight * (x / torch.sqrt((x * x).mean(-1, keepdim=True) + CONFIG["rms_norm_eps"]))


def rotate(x, positions):
    """RoPE over x [n, heads, d] with pairs (i, i + d/2), angle = position * theta^(-2i/d)."""
    d = x.shape[-1]
    out = x.clone()
    for i in range(d // 2):
        angle = positions.double() * CONFIG["rope_theta"] ** (-2 * i / d)
        c, s = angle.cos().float()[:, None], angle.sin().float()[:, None]
        out[..., i] = x[..., i] * c - x[..., i + d // 2] * s
        out[..., i + d // 2] = x[..., i + d // 2] * c + x[..., i] * s
    return out


def dense_reference(state, features, block, *, use_window=True):
    """Hidden states [L, hidden] for `block` at positions c..c+L-1 after context features [c, F] at 0..c-1."""
    nh, nkv, d = CONFIG["num_attention_heads"], CONFIG["num_key_value_heads"], CONFIG["head_dim"]
    c, length = len(features), len(block)
    ctx = rms(features @ state["fc.weight"].T, state["hidden_norm.weight"])
    positions = torch.arange(c + length)
    h = block.clone()
    for layer in range(CONFIG["num_hidden_layers"]):
        w = {k.removeprefix(f"layers.{layer}."): v for k, v in state.items() if k.startswith(f"layers.{layer}.")}
        sliding = use_window and CONFIG["layer_types"][layer] == "sliding_attention"
        x = rms(h, w["input_layernorm.weight"])
        both = torch.cat([ctx, x])
        q = rotate(rms((x @ w["self_attn.q_proj.weight"].T).view(length, nh, d), w["self_attn.q_norm.weight"]),
                   positions[c:])
        k = rotate(rms((both @ w["self_attn.k_proj.weight"].T).view(c + length, nkv, d),
                       w["self_attn.k_norm.weight"]), positions)
        v = (both @ w["self_attn.v_proj.weight"].T).view(c + length, nkv, d)
        attn = torch.zeros(length, nh, d)
        for head in range(nh):
            g = head // (nh // nkv)
            for i in range(length):
                p = c + i
                keys = [j for j in range(c + length) if j >= c or not sliding or j > p - WINDOW]
                scores = torch.stack([q[i, head] @ k[j, g] for j in keys]) / math.sqrt(d)
                attn[i, head] = torch.softmax(scores, 0) @ v[keys, g]
        h = h + attn.reshape(length, nh * d) @ w["self_attn.o_proj.weight"].T
        y = rms(h, w["post_attention_layernorm.weight"])
        gate = y @ w["mlp.gate_proj.weight"].T
        h = h + (gate * torch.sigmoid(gate) * (y @ w["mlp.up_proj.weight"].T)) @ w["mlp.down_proj.weight"].T
    return rms(h, state["norm.weight"])


def run(drafter, features, block, chunks):
    cache = drafter.new_cache()
    start = 0
    for size in chunks:
        drafter.extend_context(cache, features[start:start + size], torch.arange(start, start + size))
        start += size
    return drafter(block, torch.arange(start, start + len(block)), cache), cache


# ---------- tests ----------

def test_forward_matches_dense_reference_at_every_context_length(saved):
    original, path = saved
    drafter = DFlashDrafter.from_pretrained(path)
    state = {k: v.float() for k, v in original.state_dict().items()}
    features, block = inputs()
    cache = drafter.new_cache()
    start = 0
    for size in [3, 5, 3]:  # context lengths 3 (< window), 8 and 11 (> window)
        drafter.extend_context(cache, features[start:start + size], torch.arange(start, start + size))
        start += size
        out = drafter(block, torch.arange(start, start + len(block)), cache)
        torch.testing.assert_close(out, dense_reference(state, features[:start], block), atol=1e-5, rtol=0)
    # the test can see a drafter that ignores the window
    assert (out - dense_reference(state, features, block, use_window=False)).abs().max() > 1e-3


def test_incremental_context_equals_one_shot():
    drafter = random_drafter()
    features, block = inputs()
    one_shot, cache_a = run(drafter, features, block, [11])
    chunked, cache_b = run(drafter, features, block, [1, 4, 2, 4])
    torch.testing.assert_close(chunked, one_shot, atol=1e-5, rtol=0)
    for a, b in zip(cache_a.keys + cache_a.values, cache_b.keys + cache_b.values):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_sliding_layer_cache_is_bounded():
    drafter = random_drafter()
    features, block = inputs(context=11)
    _, cache = run(drafter, features, block, [6, 5])
    assert cache.length == 11
    assert len(cache.keys[0]) == 11 and cache.positions[0].tolist() == list(range(11))
    assert len(cache.keys[1]) == WINDOW and cache.positions[1].tolist() == list(range(11 - WINDOW, 11))


def test_clone_is_independent():
    drafter = random_drafter()
    features, block = inputs(context=6)
    _, cache = run(drafter, features[:3], block, [3])
    fork = cache.clone()
    drafter.extend_context(fork, features[3:6], torch.arange(3, 6))
    assert (cache.length, fork.length) == (3, 6)
    assert len(cache.keys[0]) == 3 and cache.positions[0].tolist() == [0, 1, 2]


def test_extend_context_checks_shapes_and_positions():
    drafter = random_drafter()
    cache = drafter.new_cache()
    with pytest.raises(ValueError, match=r"features must be a tensor \[c, len\(target_layer_ids\) \* hidden\]"):
        drafter.extend_context(cache, torch.zeros(2, 32), [0, 1])
    with pytest.raises(ValueError, match="positions must continue the context: 0..1"):
        drafter.extend_context(cache, torch.zeros(2, FEATURE_DIM), [1, 2])
    with pytest.raises(ValueError, match="block_embeds"):
        drafter(torch.zeros(4, 31), [0, 1, 2, 3], cache)


def test_sharded_save_round_trips(tmp_path):
    drafter = random_drafter()
    drafter.save_pretrained(tmp_path, max_shard_mb=0.012)
    shards = sorted(tmp_path.glob("model-*.safetensors"))
    assert len(shards) > 2 and (tmp_path / "model.safetensors.index.json").is_file()
    assert not (tmp_path / "model.safetensors").exists()
    assert all(p.stat().st_size <= 12_000 for p in shards)
    loaded = DFlashDrafter.from_pretrained(tmp_path)
    for name, tensor in drafter.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
    drafter.save_pretrained(tmp_path)  # back to one file: stale shards go
    assert [p.name for p in tmp_path.glob("model*")] == ["model.safetensors"]
    with pytest.raises(ValueError, match="too small for tensor"):
        drafter.save_pretrained(tmp_path / "x", max_shard_mb=0.001)


def test_a_save_stopped_part_way_keeps_the_checkpoint_it_would_replace(tmp_path):
    """Issue 43: save_pretrained removed the old weights first and wrote in place, so a write stopped by the file-size
    limit (as by a full disk) left a folder with no weights. Now every file is written atomically and old weights go
    only once all new files are written."""
    old, new = tmp_path / "old", tmp_path / "new"
    random_drafter(0).save_pretrained(old)
    random_drafter(1).save_pretrained(new)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    out = run_limited(f"""
        from ddtree.models import DFlashDrafter
        drafter = DFlashDrafter.from_pretrained({str(new)!r})
        limit(fsize=4096)
        try:
            drafter.save_pretrained({str(old)!r})
        except OSError as e:
            print(e)
        """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith(f"[Errno {errno.EFBIG}] drafter weights {old / 'model.safetensors'}: not written")
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before  # no temp file either


def test_json_files_are_read_only_when_regular_and_bounded(saved, tmp_path_factory):
    """Issue 43: config.json and the weight index are read only as regular files of at most MAX_JSON_BYTES."""
    drafter, path = saved
    os.truncate(path / "config.json", 4 * MAX_JSON_BYTES)  # sparse: only the size can refuse it in time
    with pytest.raises(ValueError, match=r"^drafter config .*config.json: 64.0 MB is over the 16.0 MB limit"):
        DFlashDrafter.from_pretrained(path)
    (path / "config.json").unlink()
    os.mkfifo(path / "config.json")
    error = unblocked(lambda: DFlashDrafter.from_pretrained(path), path / "config.json")
    assert isinstance(error, ValueError) and "config.json" in str(error)
    sharded = tmp_path_factory.mktemp("sharded")
    drafter.save_pretrained(sharded, max_shard_mb=0.012)
    os.truncate(sharded / "model.safetensors.index.json", 4 * MAX_JSON_BYTES)
    with pytest.raises(ValueError, match=r"^drafter weight index .*index.json: 64.0 MB is over the 16.0 MB limit"):
        DFlashDrafter.from_pretrained(sharded)


def test_public_style_config_with_extra_keys_loads(saved):
    _, path = saved
    raw = json.loads((path / "config.json").read_text())
    for key in ("rope_theta", "block_size"):
        raw.pop(key)
    raw.update(architectures=["DFlashDraftModel"], auto_map={"AutoModel": "dflash.DFlashDraftModel"},
               torch_dtype="bfloat16", transformers_version="4.57.1", rope_scaling=None, max_window_layers=2,
               attention_dropout=0.0, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    raw["dflash_config"]["block_size"] = 4
    (path / "config.json").write_text(json.dumps(raw))
    drafter = DFlashDrafter.from_pretrained(path, dtype=torch.bfloat16)
    assert drafter.config == DFlashConfig(**CONFIG) and drafter.dtype == torch.bfloat16


@pytest.mark.parametrize("edit, message", [
    (lambda c: c.pop("hidden_size"), "missing key 'hidden_size'"),
    (lambda c: c.pop("dflash_config"), "'dflash_config' must be an object"),
    (lambda c: c["dflash_config"].pop("target_layer_ids"), "dflash_config.target_layer_ids"),
    (lambda c: c["dflash_config"].update(target_layer_ids=[0, 3]), r"target_layer_ids must be in \[0, "),
    (lambda c: c["dflash_config"].update(mask_token_id=300), "mask_token_id must be in"),
    (lambda c: c.update(layer_types=["full_attention"]), "layer_types must list 2 entries"),
    (lambda c: c.update(sliding_window=None), "sliding_window must be an int"),
    (lambda c: c.update(num_key_value_heads=3), "multiple of num_key_value_heads"),
    (lambda c: c.update(hidden_size="32"), "hidden_size must be an int"),
    (lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "only default RoPE"),
    (lambda c: c["dflash_config"].update(conv_kernel_size=2), "conv_kernel_size"),
    (lambda c: c.update(attention_bias=True), "attention_bias"),
])
def test_malformed_config_is_refused(saved, edit, message):
    _, path = saved
    raw = json.loads((path / "config.json").read_text())
    edit(raw)
    (path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=message) as info:
        DFlashDrafter.from_pretrained(path)
    assert "config.json" in str(info.value)


def test_bad_checkpoint_files_are_refused(saved, tmp_path_factory):
    _, path = saved
    (path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json: not valid JSON"):
        DFlashDrafter.from_pretrained(path)
    with pytest.raises(ValueError, match="must be a drafter folder holding config.json"):
        DFlashDrafter.from_pretrained(tmp_path_factory.mktemp("empty"))

    def with_state(edit):
        folder = tmp_path_factory.mktemp("ckpt")
        random_drafter().save_pretrained(folder)
        state = load_file(folder / "model.safetensors")
        edit(state)
        save_file(state, folder / "model.safetensors")
        return folder

    with pytest.raises(ValueError, match=r"lacks tensors \['layers.1.mlp.up_proj.weight'\]"):
        DFlashDrafter.from_pretrained(with_state(lambda s: s.pop("layers.1.mlp.up_proj.weight")))
    with pytest.raises(ValueError, match="'fc.weight' has shape"):
        DFlashDrafter.from_pretrained(with_state(lambda s: s.update({"fc.weight": torch.zeros(32, 32)})))
    with pytest.raises(ValueError, match=r"does not define: \['embed_tokens.weight'\]"):
        DFlashDrafter.from_pretrained(with_state(lambda s: s.update({"embed_tokens.weight": torch.zeros(3, 32)})))
    folder = with_state(lambda s: None)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="no weights, expected model.safetensors"):
        DFlashDrafter.from_pretrained(folder)
