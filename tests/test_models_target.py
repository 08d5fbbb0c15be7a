"""Target forward with tree masks, cache compaction / clone / crop, and the embedded SmolLM2 loader."""
import time

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from ddtree.models import TargetCache, load_target, target_forward

PARENTS = [-1, 0, 0, 1, 1, 2, 4, 6]  # node 0 = root; parents precede children
LAYER_IDS = [0, 2]


def tiny_llama(attn="sdpa", seed=0):
    config = LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         tie_word_embeddings=False, attn_implementation=attn)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # larger weights than the default init, so that masking mistakes show in the logits
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0, 0.3)
    return model


def path_to(node):
    path = []
    while node != -1:
        path.append(node)
        node = PARENTS[node]
    return path[::-1]


def tree_mask(past):
    n = len(PARENTS)
    mask = torch.zeros(n, past + n, dtype=torch.bool)
    mask[:, :past] = True
    for i in range(n):
        for j in path_to(i):
            mask[i, past + j] = True
    return mask


def depths():
    return [len(path_to(i)) - 1 for i in range(len(PARENTS))]


def scratch(model, tokens):
    """Plain causal forward from an empty cache -> (logits, features, cache)."""
    cache = TargetCache()
    logits, feats = target_forward(model, tokens, list(range(len(tokens))), None, cache, LAYER_IDS)
    return logits, feats, cache


def prefill_and_tree(model, prefix, tokens):
    cache = TargetCache()
    target_forward(model, prefix, list(range(len(prefix))), None, cache, LAYER_IDS)
    past = len(prefix)
    positions = [past + d for d in depths()]
    logits, feats = target_forward(model, tokens, positions, tree_mask(past), cache, LAYER_IDS)
    return logits, feats, cache


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_tree_forward_matches_causal_path(attn):
    model = tiny_llama(attn)
    gen = torch.Generator().manual_seed(1)
    prefix = torch.randint(0, 300, (6,), generator=gen)
    tokens = torch.randint(0, 300, (len(PARENTS),), generator=gen)
    logits, feats, cache = prefill_and_tree(model, prefix, tokens)
    assert logits.shape == (len(PARENTS), 300) and logits.dtype == torch.float32
    assert feats.shape == (len(PARENTS), len(LAYER_IDS) * 32)
    assert cache.length == len(prefix) + len(PARENTS)
    for node in range(len(PARENTS)):
        ref_logits, ref_feats, _ = scratch(model, torch.cat([prefix, tokens[path_to(node)]]))
        torch.testing.assert_close(logits[node], ref_logits[-1], atol=1e-4, rtol=0)
        torch.testing.assert_close(feats[node], ref_feats[-1], atol=1e-4, rtol=0)
    # the mask matters: plain causal over the flattened nodes differs at a node whose ancestors are not 0..i-1
    causal = TargetCache()
    target_forward(model, prefix, list(range(6)), None, causal, LAYER_IDS)
    flat, _ = target_forward(model, tokens, [6 + d for d in depths()], None, causal, LAYER_IDS)
    assert (flat[5] - logits[5]).abs().max() > 1e-2


def test_features_are_decoder_layer_outputs():
    model = tiny_llama()
    tokens = torch.tensor([5, 6, 7])
    _, feats, _ = scratch(model, tokens)
    hidden = model(tokens[None], output_hidden_states=True).hidden_states
    torch.testing.assert_close(feats, torch.cat([hidden[1][0], hidden[3][0]], dim=-1))


def test_compact_keeps_accepted_entries():
    model = tiny_llama()
    gen = torch.Generator().manual_seed(2)
    prefix = torch.randint(0, 300, (5,), generator=gen)
    tokens = torch.randint(0, 300, (len(PARENTS),), generator=gen)
    _, _, cache = prefill_and_tree(model, prefix, tokens)
    accepted = path_to(7)  # [0, 2, 5, ...] root to node 7
    cache.compact(len(prefix), accepted)
    sequence = torch.cat([prefix, tokens[accepted]])
    assert cache.length == len(sequence)
    _, _, ref_cache = scratch(model, sequence)
    for layer, ref in zip(cache.hf.layers, ref_cache.hf.layers):
        torch.testing.assert_close(layer.keys, ref.keys, atol=1e-5, rtol=0)
        torch.testing.assert_close(layer.values, ref.values, atol=1e-5, rtol=0)
    nxt = torch.tensor([17])
    logits, feats = target_forward(model, nxt, [len(sequence)], None, cache, LAYER_IDS)
    ref_logits, ref_feats, _ = scratch(model, torch.cat([sequence, nxt]))
    torch.testing.assert_close(logits[0], ref_logits[-1], atol=1e-4, rtol=0)
    torch.testing.assert_close(feats[0], ref_feats[-1], atol=1e-4, rtol=0)


def test_clone_is_independent_and_crop_truncates():
    model = tiny_llama()
    _, _, cache = scratch(model, torch.tensor([1, 2, 3, 4]))
    keys_before = cache.hf.layers[0].keys.clone()
    fork = cache.clone()
    target_forward(model, [9, 9], [4, 5], None, fork, LAYER_IDS)
    assert (cache.length, fork.length) == (4, 6)
    assert torch.equal(cache.hf.layers[0].keys, keys_before)
    fork.crop(3)
    assert fork.length == 3 and cache.length == 4
    torch.testing.assert_close(fork.hf.layers[0].keys, keys_before[..., :3, :])
    with pytest.raises(ValueError, match="accepted path"):  # a path always holds the root; crop keeps the prefix
        cache.compact(4, [])
    assert cache.length == 4


def test_bad_arguments():
    model = tiny_llama()
    cache = TargetCache()
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        target_forward(model, [1, 2], [0, 1], torch.ones(2, 3, dtype=torch.bool), cache, LAYER_IDS)
    with pytest.raises(ValueError, match="positions must have 2 entries"):
        target_forward(model, [1, 2], [0], None, cache, LAYER_IDS)
    with pytest.raises(ValueError, match="layer_ids"):
        target_forward(model, [1, 2], [0, 1], None, cache, [3])
    with pytest.raises(ValueError, match="input_ids must hold integers"):
        target_forward(model, torch.tensor([1.0]), [0], None, cache, LAYER_IDS)
    with pytest.raises(ValueError, match="cache must be a TargetCache"):
        target_forward(model, [1], [0], None, None, LAYER_IDS)
    with pytest.raises(ValueError, match="past_len"):
        cache.compact(1, [0])
    with pytest.raises(ValueError, match="name_or_path"):
        load_target(42)
    for path in ("/no/such/model", "./no-such-model", "~/no/such", "a/b/c"):  # paths, not hub names: nothing online
        with pytest.raises(ValueError, match="there is no model folder at"):
            load_target(path)


@pytest.mark.slow
def test_embedded_target_loads_converts_once_and_chats(tmp_path, monkeypatch):
    monkeypatch.setenv("DDTREE_CACHE", str(tmp_path))
    start = time.perf_counter()
    model, tokenizer = load_target()
    fresh_s = time.perf_counter() - start
    assert (tmp_path / "smollm2-135m-instruct" / "model.safetensors").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folders left behind
    start = time.perf_counter()
    cached, _ = load_target()
    cached_s = time.perf_counter() - start
    print(f"embedded target: first load (conversion) {fresh_s:.1f} s, cached load {cached_s:.1f} s")
    assert cached_s < fresh_s
    text = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                         add_generation_prompt=True, tokenize=False)
    ids = tokenizer.encode(text, add_special_tokens=False)
    caches = TargetCache(), TargetCache()
    logits, _ = target_forward(model, ids, list(range(len(ids))), None, caches[0], [])
    again, _ = target_forward(cached, ids, list(range(len(ids))), None, caches[1], [])
    assert torch.equal(logits, again)
    out = []
    for _ in range(12):
        out.append(int(logits[-1].argmax()))
        if out[-1] == tokenizer.eos_token_id:
            break
        position = caches[0].length
        logits, _ = target_forward(model, out[-1:], [position], None, caches[0], [])
    assert "Paris" in tokenizer.decode(out)
