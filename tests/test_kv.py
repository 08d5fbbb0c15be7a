import pytest
import torch

from ddtree import compact_kv


def test_compact_keeps_exactly_the_accepted_entries():
    past, n = 5, 7
    kv = torch.randn(2, 3, past + n, 4)  # [batch, heads, seq, dim]
    out = compact_kv(kv, past, [0, 2, 5])
    assert out.shape == (2, 3, past + 3, 4)
    assert torch.equal(out[:, :, :past], kv[:, :, :past])
    assert torch.equal(out[:, :, past:], kv[:, :, [past + 0, past + 2, past + 5]])


def test_compact_other_seq_dim_and_root_only():
    kv = torch.arange(24.0).view(6, 4)  # [seq, dim]
    out = compact_kv(kv, 3, [0], seq_dim=0)
    assert torch.equal(out, kv[[0, 1, 2, 3]])


@pytest.mark.parametrize("past, keep, message", [
    (5, [0, 7], "keep_indices"),
    (5, [-1], "keep_indices"),
    (-1, [0], "past_len"),
    (13, [], "past_len"),
])
def test_compact_rejects_bad_indices(past, keep, message):
    with pytest.raises(ValueError, match=message):
        compact_kv(torch.randn(1, 12, 4), past, keep)
