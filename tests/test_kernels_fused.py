"""The fused drafter-layer kernels against their torch references (Triton's interpreter on a CPU): q/k norm + RoPE +
cache write, SwiGLU, and RMSNorm with the residual add."""
import pytest
import torch

from ddtree.kernels.rmsnorm import rms_norm, rms_norm_ref
from ddtree.kernels.rope import norm_rope_cache, norm_rope_cache_ref
from ddtree.kernels.swiglu import silu_mul, silu_mul_ref
from ddtree.models.drafter import rope_cos_sin

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BF16_ULP = dict(atol=0.07, rtol=0.02)  # one bf16 ulp at the values used: the norms' reduction order may differ,
# and Triton's interpreter truncates float32 -> bfloat16 casts where the GPU rounds to nearest-even


@pytest.mark.parametrize("heads, kv_heads, dim, rows_per_slot", [(4, 2, 16, 3), (0, 3, 8, 5), (3, 1, 64, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("norm, slots_apart", [(True, False), (False, True), (True, True)])
def test_norm_rope_cache_matches_the_reference(heads, kv_heads, dim, rows_per_slot, dtype, norm, slots_apart):
    """With q/k norms (Qwen3, DFlash) or without (Llama); cache rows at the positions (drafter) or at their own
    cache positions (a tree verify: RoPE at seq_len + depth, the write at seq_len + row)."""
    g = torch.Generator().manual_seed(heads * 7 + dim)
    slots, length = 2, 20
    n = slots * rows_per_slot
    qkv = (torch.randn(n, (heads + 2 * kv_heads) * dim, generator=g) * 2).to(DEVICE, dtype)
    q_weight, k_weight = ((torch.rand(dim, generator=g) + 0.5).to(DEVICE, dtype) if norm else None
                          for _ in range(2))
    cos, sin = rope_cos_sin(torch.arange(length, device=DEVICE), dim, 10000.0, dtype)
    positions = torch.cat([torch.randperm(length - 2, generator=g)[:rows_per_slot] + 2 for _ in range(slots)])
    at = torch.cat([torch.randperm(length, generator=g)[:rows_per_slot] for _ in range(slots)])
    positions, at = positions.to(DEVICE), at.to(DEVICE) if slots_apart else None
    caches = {}
    for name, fn in (("kernel", norm_rope_cache), ("reference", norm_rope_cache_ref)):
        k_cache = torch.full((slots, kv_heads, length, dim), 9.0, dtype=dtype, device=DEVICE)
        v_cache = k_cache.clone()
        q = fn(qkv, q_weight, k_weight, 1e-6, cos, sin, positions, k_cache, v_cache, rows_per_slot, at)
        caches[name] = (q, k_cache, v_cache)
    written = (caches["reference"][2] != 9.0).any(-1)  # [slots, Hkv, L] cache rows the reference wrote
    want_rows = (positions if at is None else at).view(slots, rows_per_slot)
    for s in range(slots):
        assert written[s].any(0).nonzero().flatten().tolist() == sorted(want_rows[s].tolist())
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else BF16_ULP
    for got, want in zip(caches["kernel"], caches["reference"]):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, **tol)
    assert (caches["kernel"][1] == 9.0).sum() == (caches["reference"][1] == 9.0).sum() > 0  # only the rows written
    assert torch.equal(caches["kernel"][2], caches["reference"][2])  # values are copied as they are


def test_norm_rope_cache_bad_shapes():
    k_cache = torch.zeros(1, 2, 8, 16)
    with pytest.raises(ValueError, match="qkv"):
        norm_rope_cache(torch.zeros(3, 40), None, None, 1e-6, None, None, None, k_cache, k_cache, 3)
    with pytest.raises(ValueError, match="k_weight"):
        norm_rope_cache(torch.zeros(3, 64), torch.ones(16), torch.ones(8), 1e-6, None, None, None, k_cache, k_cache, 3)
    with pytest.raises(ValueError, match="both None"):
        norm_rope_cache(torch.zeros(3, 64), torch.ones(16), None, 1e-6, None, None, None, k_cache, k_cache, 3)
    table = torch.ones(8, 16)
    with pytest.raises(ValueError, match="cache_positions"):
        norm_rope_cache(torch.zeros(3, 64), None, None, 1e-6, table, table, torch.zeros(3, dtype=torch.long), k_cache,
                        k_cache, 3, torch.zeros(2, dtype=torch.long))


@pytest.mark.parametrize("n, inter", [(1, 8), (5, 1536), (3, 100)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_silu_mul_matches_the_reference(n, inter, dtype):
    x = (torch.randn(n, 2 * inter, generator=torch.Generator().manual_seed(inter)) * 3).to(DEVICE, dtype)
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else BF16_ULP
    torch.testing.assert_close(silu_mul(x), silu_mul_ref(x), **tol)
    with pytest.raises(ValueError, match="gate_up"):
        silu_mul(x[:, :-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_with_the_residual_add(dtype):
    g = torch.Generator().manual_seed(5)
    x, res = ((torch.randn(3, 4, 96, generator=g) * 2).to(DEVICE, dtype) for _ in range(2))
    weight = (torch.rand(96, generator=g) + 0.5).to(DEVICE, dtype)
    (y, total), (y_ref, total_ref) = rms_norm(x, weight, 1e-5, residual=res), rms_norm_ref(x, weight, 1e-5, res)
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else BF16_ULP
    if DEVICE == "cuda":  # one rounding to nearest-even, as torch's add (the interpreter truncates bf16 casts)
        assert torch.equal(total, total_ref)
    torch.testing.assert_close(total, total_ref, **tol)
    torch.testing.assert_close(y, y_ref, **tol)
    with pytest.raises(ValueError, match="residual"):
        rms_norm(x, weight, 1e-5, residual=res[:, :2])
