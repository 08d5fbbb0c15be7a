import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ddtree
from ddtree import (build_tree, check_verify_batch, effective_mask, expected_mask, pack_verify_batch,
                    parents_from_retrieve, retrieve_encoding, tree_attention_mask, visibility)


def random_tree(seed: int, budget: int, depth: int = 4, vocab: int = 12, root: int = 1):
    logits = torch.randn(depth, vocab, generator=torch.Generator().manual_seed(seed)) * 2
    return build_tree(logits, budget).with_root_token(root)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(0, 40))
def test_retrieve_round_trip_and_convention(seed, budget):
    tree = random_tree(seed, budget)
    index, next_token, next_sibling = retrieve_encoding(tree, offset=5)
    assert index.tolist() == list(range(5, 5 + tree.n_nodes))
    assert torch.equal(parents_from_retrieve(next_token, next_sibling), tree.parents)
    for i in range(tree.n_nodes):
        kids = tree.children(i)
        assert next_token[i] == (kids[0] if kids else -1)
        for a, b in zip(kids, kids[1:] + [-1]):
            assert next_sibling[a] == b


@pytest.mark.parametrize("next_token, next_sibling, message", [
    ([1, -1], [-1], "one length"),
    ([1, -1, -1], [-1, -1, -1], "not reachable"),
    ([1, 2, -1], [-1, 2, -1], "reached twice"),
    ([1, 0], [-1, -1], "must be -1 or a node index"),
    ([1, 7], [-1, -1], "must be -1 or a node index"),
    ([1, -1], [1, -1], "root has no siblings"),
    ([1.0, -1.0], [-1, -1], "integer"),
])
def test_parents_from_retrieve_rejects_non_trees(next_token, next_sibling, message):
    if message == "integer":
        next_token = torch.tensor(next_token)
    with pytest.raises(ValueError, match=message):
        parents_from_retrieve(next_token, next_sibling)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(0, 30), prefix=st.integers(0, 6))
def test_visibility_is_the_ancestor_relation(seed, budget, prefix):
    tree = random_tree(seed, budget)
    vis = visibility(tree)
    for i in range(tree.n_nodes):
        ancestors = set(tree.path(i))
        assert vis[i].nonzero().flatten().tolist() == sorted(ancestors)
    mask = tree_attention_mask(tree, prefix)
    assert mask.shape == (tree.n_nodes, prefix + tree.n_nodes)
    assert mask[:, :prefix].all() and torch.equal(mask[:, prefix:], vis)


def batch_of(budgets, seq_lens, q, layout):
    trees = [random_tree(10 + b, budget, root=b + 1) for b, budget in enumerate(budgets)]
    return trees, pack_verify_batch(trees, seq_lens, q, layout=layout)


def test_padded_batch_layout():
    trees, batch = batch_of([7, 3, 0, 7], [5, 0, 3, 9], 8, "padded")
    q = 8
    assert batch.qo_indptr.tolist() == [0, 8, 16, 24, 32]
    assert batch.n_nodes.tolist() == [t.n_nodes for t in trees]
    assert batch.mask_indptr.tolist() == batch.written_indptr.tolist()
    assert batch.custom_mask.numel() == sum(q * (s + q) for s in [5, 0, 3, 9])
    for b, (tree, seq_len) in enumerate(zip(trees, [5, 0, 3, 9])):
        rows = slice(b * q, (b + 1) * q)
        n = tree.n_nodes
        assert batch.input_ids[rows][:n].tolist() == tree.tokens.tolist()
        assert (batch.input_ids[rows][n:] == tree.tokens[0]).all()  # padding rows repeat the root token
        assert batch.positions[rows][:n].tolist() == (tree.depths + seq_len).tolist()
        assert (batch.positions[rows][n:] == seq_len).all()
        assert batch.is_padding[rows].tolist() == [False] * n + [True] * (q - n)
        # the packed block is the dense ancestor mask, padding rows seeing the prefix and themselves only
        start = int(batch.mask_indptr[b])
        block = batch.custom_mask[start:start + q * (seq_len + q)].view(q, seq_len + q)
        assert torch.equal(block[:n, :seq_len + n], tree_attention_mask(tree, seq_len))
        assert not block[:n, seq_len + n:].any()
        assert not block[n:, seq_len:seq_len + n].any()
        assert torch.equal(block[n:, seq_len + n:], torch.eye(q - n, dtype=torch.bool))
        assert block[:, :seq_len].all()
        assert torch.equal(effective_mask(batch, b), block) and torch.equal(expected_mask(batch, b), block)
        index, next_token, next_sibling = retrieve_encoding(tree, offset=b * q)
        assert batch.retrive_index[b].tolist() == index.tolist() + [-1] * (q - n)
        assert batch.retrive_next_token[b].tolist() == next_token.tolist() + [-1] * (q - n)
        assert batch.retrive_next_sibling[b].tolist() == next_sibling.tolist() + [-1] * (q - n)
        assert batch.candidates[b].tolist() == tree.tokens.tolist() + [-1] * (q - n)
    assert check_verify_batch(batch) == []


def test_unpadded_layout_reads_other_requests_bits():
    # request 1's tree is smaller than num_draft_tokens: requests 2 and 3 read shifted bits
    trees, batch = batch_of([7, 2, 7, 7], [4, 6, 3, 5], 8, "unpadded")
    assert batch.qo_indptr.tolist() == [0, 8, 11, 19, 27]
    assert batch.mask_indptr.tolist() != batch.written_indptr.tolist()
    bad = check_verify_batch(batch)
    assert {c.request for c in bad} == {2, 3}
    assert all(c.expected != c.got for c in bad)
    for c in bad[:50]:
        assert expected_mask(batch, c.request)[c.row, c.col] == c.expected
        assert effective_mask(batch, c.request)[c.row, c.col] == c.got
    # the packer itself wrote correct blocks, just at other offsets
    for b, tree in enumerate(trees):
        start, s = int(batch.written_indptr[b]), int(batch.seq_lens[b])
        n = tree.n_nodes
        block = batch.custom_mask[start:start + n * (s + n)].view(n, s + n)
        assert torch.equal(block, tree_attention_mask(tree, s))


def test_unpadded_layout_is_harmless_when_every_tree_is_full():
    _, batch = batch_of([7, 7, 7], [4, 6, 3], 8, "unpadded")
    assert check_verify_batch(batch) == []
    _, batch = batch_of([7, 7, 3], [4, 6, 3], 8, "unpadded")  # only the last one small: nobody reads after it
    assert check_verify_batch(batch) == []


def test_padded_and_unpadded_agree_on_tokens_and_positions():
    _, padded = batch_of([5, 2, 6], [3, 1, 2], 8, "padded")
    _, unpadded = batch_of([5, 2, 6], [3, 1, 2], 8, "unpadded")
    real = ~padded.is_padding
    assert torch.equal(padded.input_ids[real], unpadded.input_ids)
    assert torch.equal(padded.positions[real], unpadded.positions)
    assert not unpadded.is_padding.any()


def test_pack_rejects_bad_input():
    tree = random_tree(0, 6)
    with pytest.raises(ValueError, match="num_draft_tokens"):
        pack_verify_batch([tree], [3], 4)
    with pytest.raises(ValueError, match="num_draft_tokens"):
        pack_verify_batch([tree], [3], 0)
    with pytest.raises(ValueError, match="root token"):
        pack_verify_batch([build_tree(torch.randn(2, 4), 3)], [3], 8)
    with pytest.raises(ValueError, match="one entry per tree"):
        pack_verify_batch([tree, tree], [3], 8)
    with pytest.raises(ValueError, match=r"seq_lens\[0\]"):
        pack_verify_batch([tree], [-2], 8)
    with pytest.raises(ValueError, match="layout"):
        pack_verify_batch([tree], [3], 8, layout="ragged")
    with pytest.raises(ValueError, match="trees"):
        pack_verify_batch([], [], 8)


def test_the_padded_mask_has_one_builder_and_the_old_name_says_where_it_went():
    tree = ddtree.chain_tree(torch.randn(3, 10))  # root + 3 nodes
    padded = ddtree.tree_attention_mask(tree, 2, rows=6)  # [6, 2 + 6]
    assert torch.equal(padded[:4, :6], ddtree.tree_attention_mask(tree, 2))
    assert padded[4:, :2].all() and padded[4:, 2:].sum().item() == 2 and padded[4, 6] and padded[5, 7]
    assert not padded[:4, 6:].any()  # no real node sees a padding row
    with pytest.raises(AttributeError, match=r"tree_attention_mask\(tree, seq_len, rows\)"):
        ddtree.request_mask
