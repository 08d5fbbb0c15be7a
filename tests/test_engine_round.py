"""The device-resident round of the native engine (ddtree.engine.device_round) and its parts against the
reference path: the batched static drafter, the device retrieve encoding, records, non-finite logits, and (GPU)
a round that never synchronises with the host."""
import dataclasses

import pytest
import torch

import ddtree
from ddtree import Session
from ddtree.engine.drafter import StaticDrafter
from ddtree.kernels.tree_attention import padded_parents
from ddtree.kernels.tree_verify import retrieve_from_parents
from ddtree.models import DFlashDrafter, ModelPair, draft_logits, tiny_random_pair


@pytest.fixture(scope="module")
def pair():
    return tiny_random_pair(1)


def test_retrieve_from_parents_is_the_retrieve_encoding():
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        batch, depth, budget = (int(torch.randint(lo, hi, (1,), generator=g)) for lo, hi in ((1, 4), (1, 6), (0, 20)))
        trees = ddtree.build_trees(torch.randn(batch, depth, 12, generator=g).round(), budget)
        q = budget + 1 + int(torch.randint(0, 3, (1,), generator=g))  # padding rows too
        next_token, next_sibling = retrieve_from_parents(padded_parents(trees, q))
        for b, tree in enumerate(trees):
            _, want_next, want_sibling = ddtree.retrieve_encoding(tree)
            n = tree.n_nodes
            assert next_token[b, :n].tolist() == want_next.tolist()
            assert next_sibling[b, :n].tolist() == want_sibling.tolist()
            assert (next_token[b, n:] == -1).all() and (next_sibling[b, n:] == -1).all()


@pytest.mark.parametrize("device, fused, decode", [("cpu", False, False), ("cpu", True, False), ("cpu", True, True),
                                                   pytest.param("cuda", True, False, marks=pytest.mark.gpu),
                                                   pytest.param("cuda", True, True, marks=pytest.mark.gpu)])
@pytest.mark.parametrize("sliding", [False, True])
def test_static_drafter_matches_draft_logits_per_request(device, fused, decode, sliding):
    """The fused path (ddtree.kernels.rope / swiglu / rmsnorm with the residual; Triton's interpreter on a CPU),
    the decode kernels' path (ddtree.kernels.decode_linear) and the modules' path; on CUDA with Triton attention."""
    pair = tiny_random_pair(1, device=device)
    config = pair.drafter.config
    if sliding:
        config = dataclasses.replace(config, num_hidden_layers=2, layer_types=("sliding_attention", "full_attention"),
                                     sliding_window=4)
    torch.manual_seed(3)
    drafter = DFlashDrafter(config).eval().requires_grad_(False).to(device)
    twin = ModelPair(pair.target, pair.tokenizer, drafter, pair.device, pair.dtype)
    lens, bonus = [5, 11, 2], torch.tensor([7, 300, 65], device=device)
    width = len(config.target_layer_ids) * config.hidden_size
    features = [torch.randn(n, width).to(device) for n in lens]
    static = StaticDrafter(twin, batch_size=3, max_len=40, attention="triton" if device == "cuda" else "torch",
                           fused=fused)
    assert static.fused == fused
    if not decode:
        static.decode_rows = 0
    assert (3 * config.block_size <= static.decode_rows) == decode  # three requests' blocks: the decode kernels
    at = torch.zeros(3, dtype=torch.long, device=device)
    for b, feats in enumerate(features):  # request 1 in two pieces: extensions continue the context
        for piece in (feats[:4], feats[4:]) if b == 1 else (feats,):
            static.extend(piece[None], at[b:b + 1], slots=slice(b, b + 1))
            at[b] += len(piece)
    got = static.logits(bonus, at)  # [3, block - 1, V]
    for b, feats in enumerate(features):
        cache = drafter.new_cache()
        drafter.extend_context(cache, feats, torch.arange(len(feats), device=device))
        want = draft_logits((drafter, pair.target), int(bonus[b]), cache)
        torch.testing.assert_close(got[b], want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("method, budget", [("ddtree", 6), ("dflash", 0), ("ar", 0)])
def test_native_records_match_the_reference_records(pair, method, budget):
    native = Session(pair, ["hello there"], method=method, budget=budget, backend="native")
    ref = Session(pair, "hello there", method=method, budget=budget, backend="reference")
    for _ in range(3):
        a, b = native.step().requests[0], ref.step().requests[0]
        for field in ("tokens", "parents", "depths", "ranks"):
            assert torch.equal(getattr(a.tree, field), getattr(b.tree, field)), field
        torch.testing.assert_close(a.tree.node_logws, b.tree.node_logws, atol=1e-5, rtol=1e-5)
        for field in ("context_len", "input_ids", "positions", "draft_top_tokens", "target_top_tokens",
                      "target_choice", "accepted", "accepted_tokens", "bonus_token"):
            assert getattr(a, field) == getattr(b, field), field


def test_non_finite_logits_raise_and_commit_nothing():
    pair = tiny_random_pair(6)
    prompts = ["abc", "a longer one"]
    s = Session(pair, prompts, budget=4, backend="native")
    s.step()
    tokens, lens = [list(t) for t in s.tokens], s.backend.decoder.seq_lens.clone()
    row = pair.target.lm_head.weight[7].clone()
    pair.target.lm_head.weight[7] = float("nan")
    with pytest.raises(ValueError, match="NaN or \\+inf logits"):
        s.step()
    assert s.tokens == tokens and torch.equal(s.backend.decoder.seq_lens, lens) and len(s.records) == 1
    pair.target.lm_head.weight[7] = row
    got = [g.tokens for g in s.run(16, stop_on_eos=False)]
    assert got == [g.tokens for g in Session(pair, prompts, budget=4, backend="native").run(16, stop_on_eos=False)]


def test_sampled_native_rounds_are_seeded_and_exact_per_round(pair):
    """Same seed, same draws; the committed tokens are always the accepted path's tokens then the bonus."""
    runs = [Session(pair, ["sample", "me too"], verify="sampled", temperature=0.8, top_p=0.9, seed=s, budget=5,
                    backend="native") for s in (1, 1, 2)]
    gens = [[g.tokens for g in r.run(20, stop_on_eos=False)] for r in runs]
    assert gens[0] == gens[1] != gens[2]
    for rec in runs[0].records:
        for req in rec.requests:
            assert req.accepted_tokens == [int(req.tree.tokens[i]) for i in req.accepted[1:]]
            assert req.tree.path(req.accepted[-1]) == req.accepted


@pytest.mark.gpu
@pytest.mark.parametrize("graphs", [False, True])
@pytest.mark.parametrize("verify", ["greedy", "sampled"])
def test_a_round_never_synchronises_with_the_host_on_gpu(graphs, verify):
    s = Session(tiny_random_pair(4, device="cuda"), ["first prompt", "a second, longer prompt"], budget=12,
                verify=verify, cuda_graphs=graphs, record=False)
    s.step()
    s.step()  # with graphs: the capture round
    state = s.backend.round_state
    coins = ddtree.verify.draw_coins(s.generator, 2, state.rows, "cuda") if verify == "sampled" else None
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        state.launch(coins)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert state.readback.accept_len.min().item() >= 1


def test_qwen3_target_on_the_native_engine_matches_the_reference():
    """The Qwen3 family (per-head q/k norms) through the native engine: same tokens, trees and target choices as the
    Hugging Face reference path."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from ddtree.models import load_pair, random_drafter_for
    from ddtree.models.pair import ByteTokenizer

    tokenizer = ByteTokenizer(320)
    config = Qwen3Config(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
                         eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    target = Qwen3ForCausalLM(config).eval().requires_grad_(False)
    pair = load_pair((target, tokenizer), random_drafter_for(target, mask_token_id=tokenizer.mask_token_id, seed=1))
    native = Session(pair, ["qwen prompt"], budget=6, backend="native")
    ref = Session(pair, "qwen prompt", budget=6, backend="reference")
    for _ in range(4):
        a, b = native.step().requests[0], ref.step().requests[0]
        assert torch.equal(a.tree.tokens, b.tree.tokens) and a.target_choice == b.target_choice
        assert a.committed == b.committed
