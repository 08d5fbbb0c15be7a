"""Tree-verify attention kernel vs its float64 torch reference (CPU: Triton interpreter; GPU: marked gpu)."""
import pytest
import torch

from ddtree import build_tree, check_verify_batch, effective_mask, expected_mask, pack_verify_batch
from ddtree.kernels.tree_attention import (ancestor_bitmask, padded_parents, tree_attention,
                                           tree_attention_custom_mask, tree_attention_ref, visible_from_parents)
from ddtree.tree import visibility

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def random_trees(g: torch.Generator, sizes, vocab: int = 20, depth: int = 5):
    """ddtree trees with (at most) the given node counts; size 1 is the root alone."""
    return [build_tree(torch.randn(depth, vocab, generator=g) * 2, n - 1).with_root_token(1) for n in sizes]


def decode_bits(bits: torch.Tensor, rows: int) -> torch.Tensor:
    cols = torch.arange(rows, device=bits.device)
    return ((bits[:, :, cols // 32] >> (cols % 32)) & 1).bool()  # [B, Q, Q]


def random_qkv(g: torch.Generator, batch, rows, q_heads, kv_heads, dim, max_len, dtype=torch.float32):
    q = torch.randn(batch, rows, q_heads, dim, generator=g)
    k = torch.randn(batch, kv_heads, max_len, dim, generator=g)
    v = torch.randn(batch, kv_heads, max_len, dim, generator=g)
    return (x.to(DEVICE, dtype) for x in (q, k, v))


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref).norm() / ref.norm())


@pytest.mark.parametrize("sizes, rows", [([7, 1, 12, 40], 40), ([1], 1), ([33, 5], 64)])
def test_ancestor_bitmask_is_the_visibility_of_padded_trees(sizes, rows):
    trees = random_trees(torch.Generator().manual_seed(rows), sizes)
    parents = padded_parents(trees, rows)
    bits = ancestor_bitmask(parents.to(DEVICE))
    assert bits.shape == (len(sizes), rows, (rows + 31) // 32) and bits.dtype == torch.int32
    visible = decode_bits(bits, rows).cpu()
    assert torch.equal(visible, visible_from_parents(parents))
    for b, tree in enumerate(trees):
        n = tree.n_nodes
        assert torch.equal(visible[b, :n, :n], visibility(tree))
        assert torch.equal(visible[b, n:], torch.eye(rows, dtype=torch.bool)[n:])  # padding: itself only


CASES = [  # (seq_lens, tree sizes, Q, q heads, kv heads, head_dim, num_splits)
    ([5, 0, 70], [8, 1, 3], 8, 9, 3, 64, 1),  # empty prefix, root-only tree, padding rows
    ([130, 3], [20, 11], 20, 9, 3, 64, 3),  # split over the keys; a split may hold no key of a request
    ([1], [1], 1, 9, 3, 64, 1),  # one root row
    ([40, 17, 0], [37, 2, 34], 40, 4, 4, 32, 2),  # two mask words per row, no GQA
]


@pytest.mark.parametrize("seq_lens, sizes, rows, q_heads, kv_heads, dim, splits", CASES)
def test_tree_attention_matches_reference(seq_lens, sizes, rows, q_heads, kv_heads, dim, splits):
    g = torch.Generator().manual_seed(sum(seq_lens) + rows)
    parents = padded_parents(random_trees(g, sizes), rows)
    q, k, v = random_qkv(g, len(sizes), rows, q_heads, kv_heads, dim, max(seq_lens) + rows + 3)
    seq = torch.tensor(seq_lens)
    out = tree_attention(q, k, v, seq.to(DEVICE), ancestor_bitmask(parents.to(DEVICE)), num_splits=splits)
    ref = tree_attention_ref(q, k, v, seq, torch.full((len(sizes),), rows), visible_from_parents(parents))
    assert out.shape == q.shape and out.dtype == q.dtype and torch.isfinite(out).all()
    assert rel_err(out, ref) < 1e-5


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float16, 2e-3)])
def test_splits_and_scale_do_not_change_the_function(dtype, tol):
    """(bf16 is covered on the GPU only: the Triton interpreter's bf16 dot is wrong.)"""
    g = torch.Generator().manual_seed(3)
    parents = padded_parents(random_trees(g, [6, 9]), 9)
    q, k, v = random_qkv(g, 2, 9, 9, 3, 64, 200, dtype)
    seq, bits = torch.tensor([150, 180]), ancestor_bitmask(parents.to(DEVICE))
    ref = tree_attention_ref(q, k, v, seq, torch.tensor([9, 9]), visible_from_parents(parents), sm_scale=0.05)
    for splits in (1, 4):
        out = tree_attention(q, k, v, seq.to(DEVICE), bits, sm_scale=0.05, num_splits=splits)
        assert out.dtype == dtype and rel_err(out, ref) < tol


def custom_mask_inputs(batch, g, q_heads=9, kv_heads=3, dim=64):
    """q / caches for a VerifyBatch: request b's row i at q[b, i] and its KV at cache[b, :, seq_len_b + i]."""
    rows = batch.num_draft_tokens
    q, k, v = random_qkv(g, batch.batch_size, rows, q_heads, kv_heads, dim, int(batch.seq_lens.max()) + rows)
    q_lens = batch.qo_indptr.diff()
    return q, k, v, q_lens


@pytest.mark.parametrize("layout", ["padded", "unpadded"])
def test_custom_mask_reads_what_the_backend_reads(layout):
    g = torch.Generator().manual_seed(11)
    rows = 10
    trees = random_trees(g, [4, 10, 1, 7, 10])
    seq_lens = [6, 3, 9, 0, 5]
    batch = pack_verify_batch(trees, seq_lens, rows, layout=layout)
    q, k, v, q_lens = custom_mask_inputs(batch, g)
    out = tree_attention_custom_mask(q, k, v, batch.seq_lens.to(DEVICE), q_lens.to(DEVICE),
                                     batch.custom_mask.to(DEVICE), batch.mask_indptr.to(DEVICE))

    def visible(mask_of):
        vis = torch.zeros(batch.batch_size, rows, rows, dtype=torch.bool)
        for b in range(batch.batch_size):
            n, s = batch.rows(b), seq_lens[b]
            vis[b, :n, :n] = mask_of(batch, b)[:, s:]  # draft columns; the kernel does not mask the prefix
        return vis

    applied = tree_attention_ref(q, k, v, batch.seq_lens, q_lens, visible(effective_mask))
    wanted = tree_attention_ref(q, k, v, batch.seq_lens, q_lens, visible(expected_mask))
    assert rel_err(out, applied) < 1e-5  # the kernel applies exactly the effective mask
    per_request = [float((out[b].double() - wanted[b]).abs().max()) for b in range(batch.batch_size)]
    differs = {b for b, e in enumerate(per_request) if e > 1e-3}
    flagged = {cell.request for cell in check_verify_batch(batch)}
    flagged_draft = {cell.request for cell in check_verify_batch(batch) if cell.col >= seq_lens[cell.request]}
    assert flagged == flagged_draft  # in this batch every flagged request has a wrong draft-column bit
    assert differs == flagged
    if layout == "padded":
        assert not flagged and max(per_request) < 1e-5
    else:
        assert flagged == {1, 2, 3, 4}  # every request after the first tree smaller than Q (request 0)


def test_bad_input_names_the_argument():
    g = torch.Generator().manual_seed(0)
    q, k, v = random_qkv(g, 2, 4, 9, 3, 64, 16)
    seq = torch.tensor([3, 5], device=DEVICE)
    bits = ancestor_bitmask(torch.tensor([[-1, 0, 0, 1], [-1, -1, -1, -1]], device=DEVICE))
    with pytest.raises(ValueError, match="parents"):
        ancestor_bitmask(torch.tensor([[-1, 2, 0, 1]]))
    with pytest.raises(ValueError, match="kv heads"):
        tree_attention(q, k[:, :2], v[:, :2], seq, bits)
    with pytest.raises(ValueError, match="tree_bits"):
        tree_attention(q, k, v, seq, bits[:1])
    with pytest.raises(ValueError, match="seq_lens"):
        tree_attention(q, k, v, seq[:1], bits)
    with pytest.raises(ValueError, match="dtype"):
        tree_attention(q.double(), k, v, seq, bits)
    with pytest.raises(ValueError, match="num_splits"):
        tree_attention(q, k, v, seq, bits, num_splits=0)
    with pytest.raises(ValueError, match="custom_mask"):
        tree_attention_custom_mask(q, k, v, seq, seq, torch.zeros(8, device=DEVICE), seq)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("seq_lens, sizes, rows", [
    ([1000, 37, 4096, 0], [16, 1, 9, 16], 16),
    ([2500, 700], [200, 64], 256),
    ([8192], [512], 512),
])
def test_tree_attention_gpu(dtype, seq_lens, sizes, rows):
    g = torch.Generator().manual_seed(rows)
    parents = padded_parents(random_trees(g, sizes, vocab=200, depth=12), rows)
    q, k, v = random_qkv(g, len(sizes), rows, 9, 3, 64, max(seq_lens) + rows + 64, dtype)
    seq = torch.tensor(seq_lens)
    ref = tree_attention_ref(q, k, v, seq, torch.full((len(sizes),), rows), visible_from_parents(parents))
    out = tree_attention(q, k, v, seq.to(DEVICE), ancestor_bitmask(parents.to(DEVICE)))
    assert rel_err(out, ref) < 1e-2
    out1 = tree_attention(q, k, v, seq.to(DEVICE), ancestor_bitmask(parents.to(DEVICE)), num_splits=1)
    assert rel_err(out1, ref) < 1e-2


@pytest.mark.gpu
def test_custom_mask_gpu_padded_and_unpadded():
    g = torch.Generator().manual_seed(5)
    rows = 64
    trees = random_trees(g, [64, 20, 64, 1, 50], vocab=100, depth=10)
    seq_lens = [300, 1200, 77, 5, 2048]
    for layout in ("padded", "unpadded"):
        batch = pack_verify_batch(trees, seq_lens, rows, layout=layout)
        q, k, v, q_lens = custom_mask_inputs(batch, g)
        out = tree_attention_custom_mask(q.bfloat16(), k.bfloat16(), v.bfloat16(), batch.seq_lens.to(DEVICE),
                                         q_lens.to(DEVICE), batch.custom_mask.to(DEVICE),
                                         batch.mask_indptr.to(DEVICE))
        vis = torch.zeros(batch.batch_size, rows, rows, dtype=torch.bool)
        for b in range(batch.batch_size):
            vis[b, :batch.rows(b), :batch.rows(b)] = effective_mask(batch, b)[:, seq_lens[b]:]
        ref = tree_attention_ref(q.bfloat16(), k.bfloat16(), v.bfloat16(), batch.seq_lens, q_lens, vis)
        assert rel_err(out, ref) < 1e-2
