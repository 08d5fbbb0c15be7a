"""The RMSNorm kernel against its torch reference (and the HF / DFlash modules it stands in for)."""
import pytest
import torch

from ddtree.kernels.rmsnorm import rms_norm, rms_norm_ref
from ddtree.models.drafter import RMSNorm

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("shape", [(1, 576), (3, 5, 64), (2, 7, 3, 96), (4, 100)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_matches_the_reference(shape, dtype):
    g = torch.Generator().manual_seed(sum(shape))
    x = (torch.randn(shape, generator=g) * 3).to(DEVICE, dtype)
    weight = (torch.rand(shape[-1], generator=g) + 0.5).to(DEVICE, dtype)
    got, want = rms_norm(x, weight, 1e-5), rms_norm_ref(x, weight, 1e-5)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=0.07, rtol=0.02)  # 1 bf16 ulp
    torch.testing.assert_close(got, want, **tol)


def test_rms_norm_reads_strided_rows_and_matches_the_drafter_module():
    norm = RMSNorm(64, 1e-6)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(5, 128, device=DEVICE)[:, ::2]  # rows with a stride
    norm = norm.to(DEVICE)
    torch.testing.assert_close(rms_norm(x, norm.weight, norm.eps), norm(x), atol=1e-5, rtol=1e-5)


def test_rms_norm_bad_input():
    with pytest.raises(ValueError, match="x must be"):
        rms_norm(torch.randn(3, 5), torch.ones(4), 1e-6)
    with pytest.raises(ValueError, match="weight"):
        rms_norm(torch.randn(3, 4), torch.ones(2, 2), 1e-6)
