"""The fused linear kernels of the target forward (ddtree.kernels.fused_linear) against their unfused torch chains
(Triton's interpreter on a CPU): norm prologue, residual epilogue, SwiGLU epilogue, and the q/k/v projection with
q/k norm + RoPE + KV-cache write."""
import pytest
import torch

from ddtree.kernels.fused_linear import (fused_linear, fused_linear_ref, norm_qkv_rope_cache, norm_qkv_rope_cache_ref,
                                         norm_swiglu, norm_swiglu_ref)
from ddtree.models.drafter import rope_cos_sin

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
UNWRITTEN = -512.0  # cache poison: far outside the values written


def _x(n, k, dtype, g, scale=1.0):
    return (torch.randn(n, k, generator=g) * scale).to(DEVICE, dtype)


def _double(args):
    return [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def assert_like_the_chain(got, chain, oracle):
    """float32: the chain's values up to the reduction order. bfloat16: about as far from the float64 oracle as the
    chain's own bf16 result (both round at the same steps), give or take two bf16 ulps of the largest value: Triton's
    interpreter truncates float32 -> bfloat16 casts where the GPU rounds to nearest: an ulp per step, all toward
    zero, so a chain of four roundings (norm, matmul, SiLU, product) may drift by several ulps there; the float32
    cases check the arithmetic tightly."""
    assert got.shape == chain.shape and got.dtype == chain.dtype
    if got.dtype == torch.float32:
        torch.testing.assert_close(got, chain, atol=1e-4, rtol=1e-4)
        return
    got_err, chain_err = (got.double() - oracle).abs().max(), (chain.double() - oracle).abs().max()
    ulp = 2.0 ** (torch.floor(torch.log2(oracle.abs().max())) - 7)
    slack = 2 if got.is_cuda else 6
    assert got_err <= 2 * chain_err + slack * ulp, (float(got_err), float(chain_err), float(ulp))


@pytest.mark.parametrize("n", [1, 5, 40])  # one row tile of 16 rows, or of 64
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("norm, residual, bias", [(True, False, False), (False, True, False), (False, True, True),
                                                  (True, False, True), (False, False, False)])
def test_fused_linear_matches_the_chain(n, dtype, norm, residual, bias):
    g = torch.Generator().manual_seed(n * 11 + norm * 3 + residual)
    k, cols = 80, 70  # K and N not multiples of the tiles: masked edges
    x, weight = _x(n, k, dtype, g, 2.0), _x(cols, k, dtype, g, 0.2)
    options = dict(norm=((torch.rand(k, generator=g) + 0.5).to(DEVICE, dtype), 1e-5) if norm else None,
                   residual=_x(n, cols, dtype, g) if residual else None)
    b = _x(cols, 1, dtype, g)[:, 0].contiguous() if bias else None
    got, want = fused_linear(x, weight, b, **options), fused_linear_ref(x, weight, b, **options)
    assert got.shape == (n, cols)
    oracle = fused_linear_ref(*_double([x, weight, b]), norm=options["norm"] and tuple(_double(options["norm"])),
                              residual=None if not residual else options["residual"].double())
    assert_like_the_chain(got, want, oracle)


def test_fused_linear_float32_logits_are_the_rounded_values():
    """out_dtype=float32 (the head's logits): the values of the dtype's result, as `.float()` of it gives."""
    g = torch.Generator().manual_seed(5)
    x, weight = _x(3, 48, torch.bfloat16, g), _x(40, 48, torch.bfloat16, g)
    norm = (torch.ones(48, dtype=torch.bfloat16, device=DEVICE), 1e-6)
    logits = fused_linear(x, weight, norm=norm, out_dtype=torch.float32)
    assert logits.dtype == torch.float32
    assert torch.equal(logits, logits.to(torch.bfloat16).float())  # no bits below bf16's
    assert torch.equal(logits, fused_linear(x, weight, norm=norm).float())


@pytest.mark.parametrize("n", [1, 40])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [False, True])
def test_norm_swiglu_matches_the_chain(n, dtype, bias):
    g = torch.Generator().manual_seed(n + bias)
    k, inter = 48, 40
    x, gate_up = _x(n, k, dtype, g, 2.0), _x(2 * inter, k, dtype, g, 0.3)
    norm_weight = (torch.rand(k, generator=g) + 0.5).to(DEVICE, dtype)
    b = _x(2 * inter, 1, dtype, g)[:, 0].contiguous() if bias else None
    got, want = norm_swiglu(x, norm_weight, 1e-6, gate_up, b), norm_swiglu_ref(x, norm_weight, 1e-6, gate_up, b)
    assert got.shape == (n, inter)
    assert_like_the_chain(got, want, norm_swiglu_ref(*_double([x, norm_weight, 1e-6, gate_up, b])))


@pytest.mark.parametrize("heads, kv_heads, dim, rows_per_slot", [(4, 2, 16, 3), (3, 1, 64, 1), (2, 2, 128, 20)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("qk_norm, bias", [(True, False), (False, False), (False, True)])
def test_norm_qkv_rope_cache_matches_the_chain(heads, kv_heads, dim, rows_per_slot, dtype, qk_norm, bias):
    """Llama (no q/k norm: a head's pairs over several programs when the head has more than 32 pairs), Qwen3 (q/k
    norms: the whole head in one program), Qwen2 (bias); RoPE at the positions, the cache writes at their own rows
    (a tree verify: RoPE at seq_len + depth, the write at seq_len + row)."""
    g = torch.Generator().manual_seed(heads * 7 + dim + qk_norm)
    slots, length, k = 2, 48, 40
    n = slots * rows_per_slot
    width = (heads + 2 * kv_heads) * dim
    x, qkv = _x(n, k, dtype, g, 2.0), _x(width, k, dtype, g, 0.4)
    norm_weight = (torch.rand(k, generator=g) + 0.5).to(DEVICE, dtype)
    b = _x(width, 1, dtype, g)[:, 0].contiguous() if bias else None
    q_weight, k_weight = ((torch.rand(dim, generator=g) + 0.5).to(DEVICE, dtype) if qk_norm else None
                          for _ in range(2))
    cos, sin = rope_cos_sin(torch.arange(length, device=DEVICE), dim, 10000.0, dtype)
    positions = torch.cat([torch.randperm(length - 2, generator=g)[:rows_per_slot] + 2 for _ in range(slots)])
    at = torch.cat([torch.randperm(length, generator=g)[:rows_per_slot] for _ in range(slots)])
    out = {}
    args = [x, norm_weight, 1e-5, qkv, b, q_weight, k_weight, 1e-6, cos, sin, positions.to(DEVICE)]
    for name, fn, args in (("kernel", norm_qkv_rope_cache, args), ("reference", norm_qkv_rope_cache_ref, args),
                           ("oracle", norm_qkv_rope_cache_ref, _double(args))):
        k_cache = torch.full((slots, kv_heads, length, dim), UNWRITTEN, dtype=args[0].dtype, device=DEVICE)
        v_cache = k_cache.clone()
        q = fn(*args, k_cache, v_cache, rows_per_slot, at.to(DEVICE))
        out[name] = (q, k_cache, v_cache)
    written = (out["reference"][1] != UNWRITTEN).any(-1)  # [slots, Hkv, L] cache rows the reference wrote
    for s in range(slots):
        assert written[s].any(0).nonzero().flatten().tolist() == sorted(at.view(slots, -1)[s].tolist())
    for got, want, oracle in zip(out["kernel"], out["reference"], out["oracle"]):
        assert_like_the_chain(got, want, oracle)
    for cache in (1, 2):  # nothing but the rows written
        assert torch.equal(out["kernel"][cache] == UNWRITTEN, out["reference"][cache] == UNWRITTEN)


def test_fused_linear_bad_inputs():
    w = torch.zeros(8, 16)
    with pytest.raises(ValueError, match=r"x must be a tensor \[n, 16\]"):
        fused_linear(torch.zeros(3, 12), w)
    with pytest.raises(ValueError, match="x must be a tensor"):
        fused_linear(torch.zeros(3, 16, dtype=torch.float64), w)
    with pytest.raises(ValueError, match="residual"):
        fused_linear(torch.zeros(3, 16), w, residual=torch.zeros(3, 16))
    with pytest.raises(ValueError, match="norm weight"):
        fused_linear(torch.zeros(3, 16), w, norm=(torch.ones(8), 1e-6))
    with pytest.raises(ValueError, match="gate_up"):
        norm_swiglu(torch.zeros(3, 16), torch.ones(16), 1e-6, torch.zeros(7, 16))
    cache = torch.zeros(1, 2, 8, 4)
    with pytest.raises(ValueError, match="qkv"):
        norm_qkv_rope_cache(torch.zeros(3, 16), torch.ones(16), 1e-6, torch.zeros(10, 16), None, None, None, 1e-6,
                            None, None, None, cache, cache, 3, None)
    with pytest.raises(ValueError, match="both None"):
        norm_qkv_rope_cache(torch.zeros(3, 16), torch.ones(16), 1e-6, torch.zeros(24, 16), None, torch.ones(4),
                            None, 1e-6, None, None, None, cache, cache, 3, None)
