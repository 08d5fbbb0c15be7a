"""ModelPair: loading checks, tokenizer helpers, the tiny random pair and draft_logits."""
import time

import pytest
import torch

import ddtree.models.pair as pair_module
from ddtree.models import (DFlashConfig, DFlashDrafter, TargetCache, draft_logits, load_default_pair, load_pair,
                           random_drafter_for, target_forward, tiny_random_pair)


def prefill(pair, ids):
    """Target prefill of `ids` and a drafter cache conditioned on it -> (last target logits, draft cache)."""
    logits, features = target_forward(pair.target, ids, list(range(len(ids))), None, TargetCache(),
                                      pair.target_layer_ids)
    cache = pair.drafter.new_cache()
    pair.drafter.extend_context(cache, features, list(range(len(ids))))
    return logits[-1], cache


def test_tiny_pair_is_fast_and_round_trips_text():
    start = time.perf_counter()
    pair = tiny_random_pair()
    assert time.perf_counter() - start < 1.0
    text = "héllo, wörld! <|user|>"
    assert pair.decode(pair.encode(text, chat=False, special_tokens="control")) == text
    chat = pair.encode("hi", chat=True)
    assert pair.decode(chat) == "<|user|>hi<|eos|><|assistant|>"
    assert pair.decode(chat, skip_special_tokens=True) == "hi"
    assert pair.decode([104, 300, 105]) == "h<|300|>i"
    assert (pair.vocab_size, pair.block_size, pair.max_context) == (320, 8, 2048)
    assert pair.mask_token_id == pair.tokenizer.mask_token_id and pair.eos_token_ids == {pair.tokenizer.eos_token_id}
    assert pair.target_layer_ids == (1,) and pair.dtype == torch.float32 and pair.device == torch.device("cpu")


def test_tiny_pair_is_deterministic_by_seed_and_drafts():
    a, b, c = tiny_random_pair(0), tiny_random_pair(0), tiny_random_pair(1)
    ids = a.encode("The cat", chat=False)
    logits_a, cache_a = prefill(a, ids)
    logits_b, cache_b = prefill(b, ids)
    logits_c, _ = prefill(c, ids)
    assert torch.equal(logits_a, logits_b) and not torch.equal(logits_a, logits_c)
    bonus = int(logits_a.argmax())
    drafted = draft_logits(a, bonus, cache_a)
    assert drafted.shape == (7, 320) and drafted.dtype == torch.float32 and torch.isfinite(drafted).all()
    assert torch.equal(drafted, draft_logits((b.drafter, b.target), bonus, cache_b))
    assert cache_a.length == len(ids)  # drafting does not change the cache
    block = torch.tensor([bonus] + [a.mask_token_id] * 7)
    hidden = a.drafter(a.target.get_input_embeddings()(block), torch.arange(len(ids), len(ids) + 8), cache_a)
    torch.testing.assert_close(drafted, a.target.lm_head(hidden[1:]))


def test_drafter_folder_loads_through_load_pair(tmp_path):
    pair = tiny_random_pair()
    pair.drafter.save_pretrained(tmp_path)
    again = load_pair((pair.target, pair.tokenizer), tmp_path)
    for name, tensor in pair.drafter.state_dict().items():
        assert torch.equal(again.drafter.state_dict()[name], tensor)


def drafter_config(**changes):
    base = dict(hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                intermediate_size=128, vocab_size=320, block_size=8, num_target_layers=2, mask_token_id=260,
                target_layer_ids=(1,))
    return DFlashDrafter(DFlashConfig(**(base | changes)))


@pytest.mark.parametrize("drafter, message", [
    (lambda: drafter_config(hidden_size=48, intermediate_size=96), "drafter hidden_size 48 != target hidden_size 64"),
    (lambda: drafter_config(vocab_size=330), "drafter vocab_size 330 != target vocabulary size 320"),
    (lambda: drafter_config(num_target_layers=8, target_layer_ids=(5,)), r"outside the target's layers \[0, 2\)"),
    (lambda: drafter_config(num_target_layers=8), "num_target_layers 8 != target's 2 layers"),
    (lambda: drafter_config(vocab_size=330, mask_token_id=325), "mask_token_id 325 is outside the target vocab"),
    (lambda: 42, "drafter must be None, a drafter folder or a DFlashDrafter"),
])
def test_mismatched_pairs_fail_at_load(drafter, message):
    pair = tiny_random_pair()
    with pytest.raises(ValueError, match=message):
        load_pair((pair.target, pair.tokenizer), drafter())


def test_bad_target_and_missing_drafter():
    pair = tiny_random_pair()
    with pytest.raises(ValueError, match="target must be None, a path / hub name or a"):
        load_pair((1, 2))
    bare = load_pair((pair.target, pair.tokenizer))
    assert bare.drafter is None and bare.target_layer_ids == ()
    with pytest.raises(ValueError, match="has no drafter"):
        bare.block_size
    with pytest.raises(ValueError, match="models must be a ModelPair with a drafter"):
        draft_logits(bare, 1, pair.drafter.new_cache())
    with pytest.raises(ValueError, match="bonus_token must be a token id"):
        draft_logits(pair, 320, pair.drafter.new_cache())
    with pytest.raises(ValueError, match="prompt must be a str"):
        pair.encode(123)


def test_a_missing_drafter_folder_is_refused_before_the_target_loads(tmp_path, monkeypatch):
    def no_target(*args, **kwargs):
        raise AssertionError("the target was loaded before the drafter path was checked")

    monkeypatch.setattr(pair_module, "load_target", no_target)
    for bad in (tmp_path / "missing", tmp_path):  # no folder; a folder without config.json
        with pytest.raises(ValueError, match="drafter must be a drafter folder holding config.json"):
            load_pair(None, bad)


def test_load_default_pair_says_the_drafter_has_not_shipped(tmp_path, monkeypatch):
    monkeypatch.setattr(pair_module, "DEFAULT_DRAFTER_DIR", tmp_path / "smollm2-dflash")
    with pytest.raises(FileNotFoundError, match="drafter for SmolLM2 has not shipped yet"):
        load_default_pair()


def test_random_drafter_for_matches_its_target():
    target = tiny_random_pair().target
    drafter = random_drafter_for(target, num_layers=2, block_size=5, seed=3)
    config = drafter.config
    assert (config.hidden_size, config.vocab_size, config.num_target_layers) == (64, 320, 2)
    assert config.target_layer_ids == (0, 1) and config.mask_token_id == 319 and config.block_size == 5
    same = random_drafter_for(target, num_layers=2, block_size=5, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(drafter.parameters(), same.parameters()))


@pytest.mark.slow
def test_real_target_with_random_drafter_drafts():
    base = load_pair()
    pair = load_pair((base.target, base.tokenizer), random_drafter_for(base.target))
    assert pair.vocab_size == 49152 and pair.block_size == 16 and 2 in pair.eos_token_ids
    ids = pair.encode("Write a Python function that adds two numbers.", chat=True)
    last, cache = prefill(pair, ids)
    logits = draft_logits(pair, int(last.argmax()), cache)
    assert logits.shape == (15, 49152) and torch.isfinite(logits).all()


@pytest.mark.slow
@pytest.mark.parametrize("native_bf16", [True, False])
def test_the_embedded_pair_defaults_to_bfloat16_on_a_cpu_that_has_it(monkeypatch, native_bf16):
    monkeypatch.setattr(pair_module, "native_bfloat16_cpu", lambda: native_bf16)
    pair = load_default_pair(device="cpu")
    assert pair.dtype == (torch.bfloat16 if native_bf16 else torch.float32) == pair.drafter.dtype
    assert load_default_pair(device="cpu", dtype=torch.float32).dtype == torch.float32  # a dtype named wins
    assert load_pair((pair.target, pair.tokenizer)).dtype == pair.dtype  # a loaded target is used as it is


def test_the_tiny_tokenizer_reads_special_token_text_both_ways():
    from ddtree.models import tiny_random_pair
    pair = tiny_random_pair(0)
    eos = pair.tokenizer.eos_token_id
    with pytest.warns(UserWarning, match="special-token text"):
        plain = pair.encode("a<|eos|>b")
    assert plain.count(eos) == 1  # the template's end of turn only
    assert pair.encode("a<|eos|>b", special_tokens="control").count(eos) == 2
    assert pair.encode("ab") == pair.tokenizer.apply_chat_template([{"role": "user", "content": "ab"}], True, True)
