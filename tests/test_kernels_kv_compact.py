"""In-place KV compaction kernel vs ddtree.compact_kv (CPU: Triton interpreter; GPU: marked gpu)."""
import pytest
import torch

from ddtree import build_tree, pack_verify_batch
from ddtree.kernels.kv_compact import compact_kv_cache, compact_kv_cache_ref
from ddtree.kernels.tree_verify import verify_greedy_tree_ref

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def accepted_paths(seed: int, budgets, rows: int, seq_lens, vocab: int = 4):
    """Greedy walks of random trees against random targets: accepted [B, Q], accept_len [B]."""
    g = torch.Generator().manual_seed(seed)
    trees = [build_tree(torch.randn(6, vocab, generator=g) * 3, b).with_root_token(0) for b in budgets]
    batch = pack_verify_batch(trees, seq_lens, rows)
    target = torch.randint(0, vocab, (len(trees), rows), generator=g)
    target[:, 0] = batch.candidates[:, 1].clamp_min(0)  # let some walks go deep
    accepted, accept_len, _ = verify_greedy_tree_ref(batch.candidates, batch.retrive_next_token,
                                                     batch.retrive_next_sibling, target)
    return accepted, accept_len


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_compaction_matches_ddtree_compact_kv(dtype):
    rows, seq_lens = 12, [5, 0, 9, 3]
    accepted, accept_len = accepted_paths(0, [11, 0, 7, 11], rows, seq_lens)
    accepted[3], accept_len[3] = torch.tensor([0, 4, 9] + [-1] * (rows - 3)), 3  # a path that skips slots
    g = torch.Generator().manual_seed(1)
    k, v = (torch.randn(4, 3, max(seq_lens) + rows + 2, 64, generator=g).to(DEVICE, dtype) for _ in range(2))
    want_k = compact_kv_cache_ref(k, seq_lens, accepted, accept_len)
    want_v = compact_kv_cache_ref(v, seq_lens, accepted, accept_len)
    new_lens = compact_kv_cache([k, v], torch.tensor(seq_lens, device=DEVICE), accepted.to(DEVICE),
                                accept_len.to(DEVICE))
    assert torch.equal(k, want_k) and torch.equal(v, want_v)
    assert new_lens.tolist() == [s + n for s, n in zip(seq_lens, accept_len.tolist())]


def test_compaction_of_a_strided_cache_view():
    """One static buffer [layers, 2, B, H, L, D]: each K or V is a non-contiguous [B, H, L, D] view."""
    rows, seq_lens = 6, [4, 8]
    accepted, accept_len = accepted_paths(3, [5, 5], rows, seq_lens)
    buffer = torch.randn(2, 2, 2, 3, 20, 32, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    views = [buffer[layer, kv] for layer in range(2) for kv in range(2)]
    wants = [compact_kv_cache_ref(x, seq_lens, accepted, accept_len) for x in views]
    compact_kv_cache(views, torch.tensor(seq_lens, device=DEVICE), accepted.to(DEVICE), accept_len.to(DEVICE))
    assert all(torch.equal(x, want) for x, want in zip(views, wants))


def test_bad_input_names_the_argument():
    cache = torch.zeros(2, 3, 10, 16, device=DEVICE)
    seq, acc, n = (torch.zeros(2, dtype=torch.long, device=DEVICE), torch.zeros(2, 4, dtype=torch.long, device=DEVICE),
                   torch.ones(2, dtype=torch.long, device=DEVICE))
    with pytest.raises(ValueError, match="accept_len"):
        compact_kv_cache(cache, seq, acc, n[:1])
    with pytest.raises(ValueError, match=r"caches\[0\]"):
        compact_kv_cache(cache[:1], seq, acc, n)
    with pytest.raises(ValueError, match="caches"):
        compact_kv_cache([], seq, acc, n)


@pytest.mark.gpu
def test_compaction_gpu_bf16():
    rows, seq_lens = 64, [1000, 3, 4000, 77]
    accepted, accept_len = accepted_paths(5, [63, 63, 10, 0], rows, seq_lens, vocab=3)
    k = torch.randn(4, 8, 4096 + rows, 128, device=DEVICE, dtype=torch.bfloat16)
    want = compact_kv_cache_ref(k, seq_lens, accepted, accept_len)
    compact_kv_cache(k, torch.tensor(seq_lens, device=DEVICE), accepted.to(DEVICE), accept_len.to(DEVICE))
    assert torch.equal(k, want)
