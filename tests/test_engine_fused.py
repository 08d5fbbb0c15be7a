"""The fused target forward of the native engine (NativeDecoder(fused=True): concatenated projections, q/k norm +
RoPE + cache write in one launch, SwiGLU, the residual add inside the RMSNorm) against the modules' own forward,
its reference. On a CPU the kernels run in Triton's interpreter: tiny shapes only."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

from ddtree import Session
from ddtree.engine import NativeDecoder
from ddtree.engine.decoder import fused_unsupported, rope_tables
from ddtree.models import load_pair, random_drafter_for, tiny_random_pair
from ddtree.models.pair import ByteTokenizer
from verify_rounds import PROMPT_LENS, round_inputs

TINY = dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False, attn_implementation="sdpa")
ROPE = {  # SmolLM2's RoPE (theta 1e5, no scaling), Llama 3.1's scaling, YaRN (attention scaling != 1)
    "smollm2": dict(rope_theta=100000.0),
    "llama3": dict(rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 32}),
    "yarn": dict(rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                  "original_max_position_embeddings": 32}),
}


def tiny_target(arch: str, seed: int = 0, **extra):
    torch.manual_seed(seed)
    if arch == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(**TINY, head_dim=16, **extra)).eval().requires_grad_(False)
    return LlamaForCausalLM(LlamaConfig(**TINY, **extra)).eval().requires_grad_(False)


@pytest.mark.parametrize("arch, rope", [("llama", "smollm2"), ("llama", "llama3"), ("llama", "yarn"),
                                        ("qwen3", "smollm2")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rope_tables_are_the_models_own_values(arch, rope, dtype):
    model = tiny_target(arch, **ROPE[rope]).to(dtype)
    cos, sin = rope_tables(model.model.rotary_emb, 300, dtype, "cpu")
    positions = torch.randint(0, 300, (3, 11), generator=torch.Generator().manual_seed(1))
    want_cos, want_sin = model.model.rotary_emb(torch.zeros(1, dtype=dtype), positions)  # what HF's forward uses
    assert torch.equal(cos[positions], want_cos) and torch.equal(sin[positions], want_sin)


def _round(model, fused: bool, layer_ids):
    """Prefill three requests, then one padded tree forward (RoPE at seq_len + depth, cache rows at seq_len + i)
    -> (prefill logits, tree logits, features, the cache)."""
    dec = NativeDecoder(model, batch_size=len(PROMPT_LENS), max_len=64, attention="torch", layer_ids=layer_ids,
                        fused=fused)
    assert dec.fused == fused
    prefill = []
    for b, n in enumerate(PROMPT_LENS):
        pos = torch.arange(n)
        prefill.append(dec.forward(torch.arange(3, 3 + n)[None], pos[None], (pos - 1)[None], request=b)[0])
        dec.commit(pos[None], torch.tensor([n]), request=b)
    _, ids, positions, parents = round_inputs(model, seed=1)
    logits, features = dec.forward(ids, positions, parents)
    return torch.cat([x[0] for x in prefill]), logits, features, dec.kv.float()


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_fused_forward_matches_the_modules_forward(arch):
    """float32: equal to the reference up to float32 rounding. bfloat16: as close to the float32 result as the
    reference's own bfloat16 forward is (the fused path adds no error beyond bf16 rounding)."""
    model = tiny_target(arch, seed=3)
    layer_ids = [0, 1]
    oracle = _round(model, False, layer_ids)
    for got, want in zip(_round(model, True, layer_ids), oracle):
        torch.testing.assert_close(got, want, atol=2e-5, rtol=2e-5)
    model = model.to(torch.bfloat16)
    reference, fused = _round(model, False, layer_ids), _round(model, True, layer_ids)
    for name, ref, got, want in zip(("prefill", "logits", "features", "cache"), reference, fused, oracle):
        ref_err, got_err = (ref.float() - want).abs().max(), (got.float() - want).abs().max()
        scale = want.abs().max()
        assert ref_err > 0 and got_err <= 2 * ref_err + 1e-3 * scale, (name, float(got_err), float(ref_err))


def _decode_step(model, decode_rows, layer_ids, rows=1, device="cpu"):
    """Prefill three requests, then one forward of `rows` chain rows each with the decoder's decode_rows set
    (None: the modules' forward) -> (logits, features, cache, whether the decode kernels ran)."""
    dec = NativeDecoder(model, batch_size=len(PROMPT_LENS), max_len=64, layer_ids=layer_ids,
                        attention="torch" if device == "cpu" else "triton", fused=decode_rows is not None)
    for b, n in enumerate(PROMPT_LENS):
        pos = torch.arange(n, device=device)
        dec.forward(torch.arange(3, 3 + n, device=device)[None], pos[None], (pos - 1)[None], request=b)
        dec.commit(pos[None], torch.tensor([n]), request=b)
    if decode_rows is not None:
        dec.decode_rows = decode_rows
    ran, decode = [], dec._forward_decode
    dec._forward_decode = lambda *a: ran.append(1) or decode(*a)
    lens = torch.tensor(PROMPT_LENS, device=device)
    ids = torch.arange(7, 7 + len(lens) * rows, device=device).view(len(lens), rows)
    positions = lens[:, None] + torch.arange(rows, device=device)
    parents = torch.arange(-1, rows - 1, device=device).expand(len(lens), -1)
    logits, features = dec.forward(ids, positions, parents)
    return logits, features, dec.kv.float(), bool(ran)


@pytest.mark.parametrize("arch, device", [("llama", "cpu"), ("qwen3", "cpu"),
                                          pytest.param("llama", "cuda", marks=pytest.mark.gpu),
                                          pytest.param("qwen3", "cuda", marks=pytest.mark.gpu)])
def test_decode_forward_matches_the_fused_and_module_forwards(arch, device):
    """Decode-sized forwards (ddtree.kernels.decode_linear: norms, SwiGLU, RoPE + cache write, residual adds inside
    the projections) give the modules' logits, features and cache: float32 to rounding, bfloat16 as close to the
    float32 result as the modules' own bfloat16 forward. The cuBLAS fused path takes them with decode_rows 0."""
    model = tiny_target(arch, seed=5).to(device)
    layer_ids = [0, 1]  # the last layer's features come after the final norm
    tol = 2e-5 if device == "cpu" else 1e-4  # TF32-free CUDA float32 still sums in another order
    for rows in (1, 2):
        oracle = _decode_step(model, None, layer_ids, rows, device)
        decoded = _decode_step(model, len(PROMPT_LENS) * rows, layer_ids, rows, device)
        assert decoded[3] and not oracle[3] and not _decode_step(model, 0, layer_ids, rows, device)[3]
        for got, want in zip(decoded[:3], oracle[:3]):
            torch.testing.assert_close(got, want, atol=tol, rtol=tol)
    oracle = _decode_step(model.to(torch.bfloat16).float(), None, layer_ids, 1, device)  # f32, bf16 weights
    model = model.to(torch.bfloat16)
    reference, decoded = (_decode_step(model, None, layer_ids, 1, device),
                          _decode_step(model, 3, layer_ids, 1, device))
    for name, ref, got, want in zip(("logits", "features", "cache"), reference, decoded, oracle):
        ref_err, got_err = (ref.float() - want).abs().max(), (got.float() - want).abs().max()
        ulp = 2 ** -7 * want.abs().max()  # bfloat16's spacing at the values' scale
        assert ref_err > 0 and got_err <= max(2 * ref_err, 2 * ulp), (name, float(got_err), float(ref_err))


def test_fused_native_sessions_give_the_reference_tokens():
    """The fused target and drafter on the native engine (interpreter) decode the Hugging Face path's tokens and
    trees, for a Llama and a Qwen3 target."""
    tokenizer = ByteTokenizer(320)
    qwen = tiny_target("qwen3", seed=0, eos_token_id=tokenizer.eos_token_id)
    pairs = [tiny_random_pair(1), load_pair((qwen, tokenizer), random_drafter_for(
        qwen, mask_token_id=tokenizer.mask_token_id, seed=1))]
    prompts = [[5, 60, 7, 80], [9, 10]]  # short: every kernel program runs in the interpreter
    for pair in pairs:
        native = Session(pair, prompts, budget=4, backend="native", fused=True)
        assert native.backend.decoder.fused and native.backend.drafter.fused
        ref = Session(pair, prompts, budget=4, backend="reference")
        for _ in range(2):
            a, b = native.step(), ref.step()
            for x, y in zip(a.requests, b.requests):
                assert torch.equal(x.tree.tokens, y.tree.tokens) and x.target_choice == y.target_choice
                assert x.committed == y.committed


def test_fused_refuses_targets_it_cannot_run():
    gelu = tiny_target("llama", hidden_act="gelu")
    assert "activation" in fused_unsupported(gelu)
    with pytest.raises(ValueError, match="fused=True is not available.*activation"):
        NativeDecoder(gelu, batch_size=1, max_len=16, fused=True)
    dynamic = tiny_target("llama", rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0})
    with pytest.raises(ValueError, match="RoPE type 'dynamic'"):
        NativeDecoder(dynamic, batch_size=1, max_len=16, fused=True)
    assert not NativeDecoder(dynamic, batch_size=1, max_len=16).fused  # the default falls back to the modules
    with pytest.raises(ValueError, match="backend='native' only"):
        Session(tiny_random_pair(1), "x", backend="reference", fused=True)


@pytest.mark.gpu
@pytest.mark.parametrize("arch", ["llama", "qwen3"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_forward_matches_the_modules_on_gpu(arch, dtype):
    """On CUDA with the Triton tree attention: the fused forward against the modules' forward, and the float32
    oracle as in the CPU test."""
    model = tiny_target(arch, seed=3).cuda()
    oracle = _cuda_round(model, False)
    model = model.to(dtype)
    reference, fused = _cuda_round(model, False), _cuda_round(model, True)
    for ref, got, want in zip(reference, fused, oracle):
        if dtype == torch.float32:
            torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)
        else:
            ref_err, got_err = (ref.float() - want).abs().max(), (got.float() - want).abs().max()
            assert got_err <= 2 * ref_err + 1e-3 * want.abs().max()


def _cuda_round(model, fused):
    dec = NativeDecoder(model, batch_size=len(PROMPT_LENS), max_len=64, attention="triton", layer_ids=[0, 1],
                        fused=fused)
    prefill = []
    for b, n in enumerate(PROMPT_LENS):
        pos = torch.arange(n, device="cuda")
        prefill.append(dec.forward(torch.arange(3, 3 + n, device="cuda")[None], pos[None], (pos - 1)[None],
                                   request=b)[0])
        dec.commit(pos[None], torch.tensor([n]), request=b)
    _, ids, positions, parents = round_inputs(model, seed=1)
    logits, features = dec.forward(ids.cuda(), positions.cuda(), parents.cuda())
    return torch.cat([x[0] for x in prefill]), logits, features, dec.kv.float()


@pytest.mark.gpu
def test_fused_engine_with_cuda_graphs_decodes_the_unfused_tokens_on_gpu():
    pair = tiny_random_pair(3, device="cuda")
    prompts = ["first prompt", "a second, longer prompt", "3"]
    # three requests' trees of 20 nodes (63 rows, above DECODE_ROWS = 49) through cuBLAS; one request's tree of 10
    # (11 rows) through the decode kernels' tensor-core tiles, its autoregressive steps (one row) row by row
    for method, batch, budget in (("ddtree", prompts, 20), ("ddtree", prompts[:1], 10), ("ar", prompts[:1], 10)):
        want = Session(pair, batch, method=method, budget=budget, fused=False).run(24, stop_on_eos=False)
        got = Session(pair, batch, method=method, budget=budget, fused=True, cuda_graphs=True,
                      record=False).run(24, stop_on_eos=False)
        assert [g.tokens for g in got] == [g.tokens for g in want], (method, len(batch), budget)
