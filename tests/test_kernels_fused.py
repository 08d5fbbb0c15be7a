"""The fused layer kernels against their torch references (Triton's interpreter on a CPU): q/k norm + RoPE + cache
write, SwiGLU, RMSNorm with the residual add, and the decode projections with all of these inside."""
import pytest
import torch

from ddtree.kernels import decode_linear as dl
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


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _tolerance(dtype, device):
    if dtype == torch.float32:
        return dict(atol=1e-5, rtol=1e-5) if device == "cpu" else dict(atol=1e-4, rtol=1e-4)  # another sum order
    return dict(atol=0.1, rtol=0.03)  # a bf16 ulp of the output, the product's sum order not cuBLAS's


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m, row_programs", [(1, 64), (2, 64), (3, 64), (20, 64), (70, 64), (70, 2)])
@pytest.mark.parametrize("norm, gated, bias, residual", [(False, False, False, False), (True, True, False, False),
                                                         (False, False, True, True), (True, False, True, False)])
def test_decode_linear_matches_the_reference(device, dtype, m, row_programs, norm, gated, bias, residual,
                                             monkeypatch):
    """Every row count and epilogue (RMSNorm first, SwiGLU, bias, the residual add), with K and N not multiples of
    the tiles: float32 sums row by row, then 16-row tiles (the last partial), a program each or (row_programs 2)
    two programs looping over every other tile."""
    monkeypatch.setattr(dl, "DOT_ROW_PROGRAMS", row_programs)
    g = torch.Generator().manual_seed(m)
    k, n = 200, 2 * 40 if gated else 40
    x = torch.randn(m, k, generator=g).to(device, dtype)
    weight = (torch.randn(n, k, generator=g) / k ** 0.5).to(device, dtype)
    kwargs = dict(bias=(torch.randn(n, generator=g) * 0.1).to(device, dtype) if bias else None,
                  norm_weight=(torch.rand(k, generator=g) + 0.5).to(device, dtype) if norm else None, eps=1e-6,
                  gated=gated, residual=torch.randn(m, 40, generator=g).to(device, dtype) if residual else None)
    torch.testing.assert_close(dl.decode_linear(x, weight, **kwargs), dl.decode_linear_ref(x, weight, **kwargs),
                               **_tolerance(dtype, device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m, row_programs", [(1, 64), (6, 64), (40, 64), (40, 2)])
@pytest.mark.parametrize("dim, qk_norm, heads", [(16, True, 4), (64, False, 4), (64, True, 4), (64, True, 0)])
def test_decode_qkv_matches_the_reference(device, dtype, m, row_programs, dim, qk_norm, heads, monkeypatch):
    """Queries, and keys and values in the cache at their own rows of their request's slot, with and without q/k
    norms (Qwen3 / Llama), or keys and values alone (no query heads: the drafter's context); head halves of 8 (no
    tensor-core tile) and 32 columns; 40 rows: three 16-row tiles, a program each or two programs, one looping over
    two tiles."""
    monkeypatch.setattr(dl, "DOT_ROW_PROGRAMS", row_programs)
    g = torch.Generator().manual_seed(dim + m)
    kv_heads, k, rows_per_slot = 2, 96, 2 if m % 2 == 0 else m
    slots = m // rows_per_slot
    x = torch.randn(m, k, generator=g).to(device, dtype)
    weight = (torch.randn((heads + 2 * kv_heads) * dim, k, generator=g) / k ** 0.5).to(device, dtype)
    norm_weight = (torch.rand(k, generator=g) + 0.5).to(device, dtype)
    q_weight, k_weight = ((torch.rand(dim, generator=g) + 0.5).to(device, dtype) for _ in range(2))
    cos, sin = (t.to(device) for t in rope_cos_sin(torch.arange(64), dim, 10000.0, dtype))
    positions = torch.randint(0, 64, (m,), generator=g).to(device)
    cache_positions = (torch.arange(m) % rows_per_slot + 3).to(device)
    args = (x, weight, None, norm_weight, 1e-6, q_weight if qk_norm else None, k_weight if qk_norm else None, 1e-6,
            cos, sin, positions)
    caches = [[torch.zeros(slots, kv_heads, 8 + rows_per_slot, dim, dtype=dtype, device=device) for _ in "kv"]
              for _ in range(2)]
    q = dl.decode_qkv(*args, *caches[0], rows_per_slot, cache_positions)
    q_ref = dl.decode_qkv_ref(*args, *caches[1], rows_per_slot, cache_positions)
    for got, want in ((q, q_ref), *zip(caches[0], caches[1])):
        torch.testing.assert_close(got, want, **_tolerance(dtype, device))
    assert caches[0][0][:, :, 3:3 + rows_per_slot].abs().sum(-1).gt(0).all()  # every row's keys landed


def test_decode_kernels_refuse_bad_shapes():
    x, weight = torch.zeros(2, 8), torch.zeros(6, 8)
    with pytest.raises(ValueError, match="x must be"):
        dl.decode_linear(torch.zeros(2, 7), weight)
    with pytest.raises(ValueError, match="even number of rows"):
        dl.decode_linear(x, torch.zeros(5, 8), gated=True)
    with pytest.raises(ValueError, match="residual"):
        dl.decode_linear(x, weight, residual=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="norm_weight"):
        dl.decode_linear(x, weight, norm_weight=torch.ones(7))


def test_dependent_launches_only_inside_the_block_on_a_hopper_gpu(monkeypatch):
    """PDL is asked for inside dependent_launches() (the engine's decode forward) on a CUDA device that has it, never
    outside the block, off CUDA, or with the PDL setting off."""
    from ddtree.kernels import launch
    monkeypatch.setattr(launch, "_hopper", lambda index: True)
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    assert launch.launch_options(cuda) == {"PDL": False}
    with launch.dependent_launches():
        assert launch.launch_options(cuda) == {"PDL": True, "launch_pdl": True}
        assert launch.launch_options(cpu) == {"PDL": False}
        with launch.dependent_launches():
            pass
        assert launch.launch_options(cuda)["PDL"]  # a nested block leaves the outer one on
        monkeypatch.setattr(launch, "PDL", False)
        assert launch.launch_options(cuda) == {"PDL": False}
    monkeypatch.setattr(launch, "PDL", True)
    assert launch.launch_options(cuda) == {"PDL": False}
