"""SGLang's own Triton extend-attention kernel (target-verify form) on workbench batches, in Triton's interpreter."""
import pytest
import torch

import ddtree
from ddtree import check_verify_batch, effective_mask, expected_mask, pack_verify_batch
from ddtree.sglang import (dense_verify_attention, probe_effective_masks, random_inputs, sglang_verify_attention,
                           to_eagle, trees_from_eagle)

pytest.importorskip("sglang", reason="SGLang's kernel is an optional extra: `make sglang` installs it")


def trees(budgets, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [ddtree.build_tree(torch.randn(4, 10, generator=g) * 2, b).with_root_token(b + 1) for b in budgets]


def kernel_view(batch, b):
    """effective_mask with the prefix columns visible, as skip_prefix_custom_mask=True reads it."""
    m = effective_mask(batch, b)
    m[:, :int(batch.seq_lens[b])] = True
    return m


BUDGETS, SEQ_LENS, Q = [7, 2, 7, 5], [5, 9, 3, 6], 8


def test_padded_batch_matches_the_dense_ancestor_reference():
    batch = pack_verify_batch(trees(BUDGETS), SEQ_LENS, Q)
    inputs = random_inputs(batch, heads=9, kv_heads=3, dim=64, generator=torch.Generator().manual_seed(1))
    got = sglang_verify_attention(batch, inputs)
    want = dense_verify_attention(batch, inputs, [expected_mask(batch, b) for b in range(batch.batch_size)])
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_unpadded_packing_corrupts_exactly_the_flagged_requests():
    batch = pack_verify_batch(trees(BUDGETS), SEQ_LENS, Q, layout="unpadded")
    flagged = {c.request for c in check_verify_batch(batch)}
    assert flagged == {2, 3}
    inputs = random_inputs(batch, heads=9, kv_heads=3, dim=64, generator=torch.Generator().manual_seed(2))
    got = sglang_verify_attention(batch, inputs)
    # the kernel computes exactly what the mask it reads says ...
    effective = dense_verify_attention(batch, inputs, [kernel_view(batch, b) for b in range(batch.batch_size)])
    torch.testing.assert_close(got, effective, atol=1e-4, rtol=1e-4)
    # ... which is the ancestor attention only for the requests check_verify_batch did not flag
    want = dense_verify_attention(batch, inputs, [expected_mask(batch, b) for b in range(batch.batch_size)])
    for b in range(batch.batch_size):
        rows = slice(int(batch.qo_indptr[b]), int(batch.qo_indptr[b + 1]))
        same = torch.allclose(got[rows], want[rows], atol=1e-4, rtol=1e-4)
        assert same == (b not in flagged)


@pytest.mark.parametrize("layout", ["padded", "unpadded"])
def test_probe_recovers_the_mask_the_kernel_applied(layout):
    batch = pack_verify_batch(trees(BUDGETS, seed=3), SEQ_LENS, Q, layout=layout)
    probed = probe_effective_masks(batch, sglang_verify_attention, chunk=16)
    flagged = {c.request for c in check_verify_batch(batch)}
    for b in range(batch.batch_size):
        assert torch.equal(probed[b], kernel_view(batch, b))
        assert torch.equal(probed[b], expected_mask(batch, b)) == (b not in flagged)
    # the probe is not tied to SGLang: the dense reference under the expected masks probes as the expected masks
    dense = probe_effective_masks(batch, lambda bt, x: dense_verify_attention(
        bt, x, [expected_mask(bt, b) for b in range(bt.batch_size)]), chunk=16)
    assert all(torch.equal(dense[b], expected_mask(batch, b)) for b in range(batch.batch_size))


def test_eagle_structures_round_trip():
    ts = trees([7, 2, 0, 5], seed=4)
    batch = pack_verify_batch(ts, SEQ_LENS, Q)
    eagle = to_eagle(batch)
    back = trees_from_eagle(eagle["draft_token"], eagle["positions"], eagle["retrive_next_token"],
                            eagle["retrive_next_sibling"], eagle["seq_lens"], eagle["draft_token_num"],
                            node_logws=[t.node_logws for t in ts])
    for a, b in zip(ts, back):
        assert a.to_dict() == b.to_dict()
    again = pack_verify_batch(back, SEQ_LENS, Q)
    assert torch.equal(again.custom_mask, batch.custom_mask) and torch.equal(again.input_ids, batch.input_ids)
    with pytest.raises(ValueError, match="padded"):
        to_eagle(pack_verify_batch(ts, SEQ_LENS, Q, layout="unpadded"))
    cyclic = eagle["retrive_next_sibling"].clone()
    cyclic[0, 1] = 1
    with pytest.raises(ValueError, match="tree"):
        trees_from_eagle(eagle["draft_token"], eagle["positions"], eagle["retrive_next_token"], cyclic,
                         eagle["seq_lens"], Q)


def test_full_model_verify_through_sglangs_kernel():
    """A whole target forward with SGLang's kernel as attention: the padded packing gives the reference logits;
    the unpadded packing changes exactly the requests after the small tree."""
    from verify_rounds import PROMPT_LENS, Q, prefilled_decoder, round_inputs

    from ddtree.models import tiny_random_pair
    from ddtree.sglang import probed_batch, sglang_attention

    pair = tiny_random_pair(5)
    dec = prefilled_decoder(pair)
    trees, ids, pos, parents = round_inputs(pair, seed=0)
    want = dec.clone().forward(ids, pos, parents)[0]
    for layout in ("padded", "unpadded"):
        batch = pack_verify_batch(trees, list(PROMPT_LENS), Q, layout=layout)
        twin = dec.clone()
        twin.attention = sglang_attention(batch)
        got = twin.forward(ids, pos, parents)[0]
        for b, t in enumerate(trees):
            same = torch.allclose(got[b, :t.n_nodes], want[b, :t.n_nodes], atol=1e-4, rtol=1e-4)
            assert same == (layout == "padded" or b < 2), (layout, b)
    probed = probed_batch(batch, probe_effective_masks(batch, sglang_verify_attention, chunk=16))
    assert {c.request for c in check_verify_batch(probed)} == {2}
