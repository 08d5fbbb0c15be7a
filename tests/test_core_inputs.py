"""Issue 17, finding 4: the core refuses malformed trees, indices and sizes with a ValueError naming the argument,
before anything is allocated, and tiny draft temperatures give the argmax limit instead of NaN."""
import math

import pytest
import torch

import ddtree
from ddtree import DraftTree
from ddtree._checks import MAX_BUDGET


def tree(budget=6, depth=4, vocab=50, seed=0):
    g = torch.Generator().manual_seed(seed)
    return ddtree.build_tree(torch.randn(depth, vocab, generator=g), budget).with_root_token(3)


def fields(tokens, parents, depths, ranks, logws=None):
    n = len(tokens)
    return [torch.tensor(x) for x in (tokens, parents, depths, ranks)] + [
        torch.zeros(n, dtype=torch.float64) if logws is None else torch.tensor(logws, dtype=torch.float64)]


# ------------------------------------------------------------------------------------------------ compact_kv
@pytest.mark.parametrize("keep", [[0, 1.7], [True, False], [0, 1, 1], [0, 3, 2], [1, 2], [],
                                  torch.tensor([0.0, 1.0]), torch.tensor([True, False]), [[0, 1]], "01"])
def test_compact_kv_accepts_only_an_integer_path(keep):
    with pytest.raises(ValueError, match="keep_indices must be an accepted path"):
        ddtree.compact_kv(torch.randn(1, 10, 2), 5, keep)


def test_compact_kv_keeps_a_path_given_as_an_int_tensor():
    kv = torch.arange(10.0).view(10, 1)  # [seq, dim]
    out = ddtree.compact_kv(kv, 5, torch.tensor([0, 2, 4], dtype=torch.int32), seq_dim=0)
    assert out.flatten().tolist() == [0, 1, 2, 3, 4, 5, 7, 9]


# ------------------------------------------------------------------------------------------------ build_tree
@pytest.mark.parametrize("temperature", [1e-300, 1e-45])
def test_tiny_draft_temperature_gives_the_argmax_chain(temperature):
    logits = torch.randn(4, 30, generator=torch.Generator().manual_seed(1))
    t = ddtree.build_tree(logits, 8, draft_temperature=temperature)
    # logits / T overflows float32: every depth is one-hot on its argmax, so the argmax chain is the only tree
    assert torch.isfinite(t.node_logws).all() and t.node_logws.abs().max() == 0
    assert t.tokens[1:].tolist() == logits.argmax(-1).tolist() and t.parents.tolist() == [-1, 0, 1, 2, 3]
    chain = ddtree.chain_tree(logits, draft_temperature=temperature)
    assert chain.tokens[1:].tolist() == logits.argmax(-1).tolist() and torch.isfinite(chain.node_logws).all()


def test_a_small_temperature_that_fits_float32_keeps_finite_tiny_weights():
    logits = torch.randn(4, 30, generator=torch.Generator().manual_seed(1))
    t = ddtree.build_tree(logits, 8, draft_temperature=1e-30)
    assert torch.isfinite(t.node_logws).all() and t.node_logws[:5].abs().max() == 0 and t.node_logws[5] < -1e28
    assert t.tokens[1:5].tolist() == logits.argmax(-1).tolist()


def test_huge_logits_at_a_small_temperature_stay_finite():
    logits = torch.randn(3, 20, generator=torch.Generator().manual_seed(2)) * 1e30
    t = ddtree.build_tree(logits, 4, draft_temperature=1e-10)
    assert torch.isfinite(t.node_logws).all() and t.tokens[1] == logits[0].argmax()


def test_ordinary_temperatures_keep_the_float32_log_softmax():
    logits = torch.randn(5, 40, generator=torch.Generator().manual_seed(3))
    t = ddtree.build_tree(logits, 10, draft_temperature=0.7)
    logq = torch.log_softmax(logits / 0.7, -1).double()
    for i in range(1, t.n_nodes):
        parent = int(t.parents[i])
        assert t.node_logws[i] == t.node_logws[parent] + logq[int(t.depths[i]) - 1, int(t.tokens[i])]


def test_budget_is_capped_by_the_paths_then_bounded():
    assert ddtree.build_tree(torch.randn(3, 3), 10**9).n_nodes == 1 + 3 + 9 + 27  # every path: capped, no error
    assert ddtree.build_tree(torch.randn(2, 100), MAX_BUDGET).n_nodes == MAX_BUDGET + 1
    for bad in (MAX_BUDGET + 1, 10**9):
        with pytest.raises(ValueError, match=f"budget must be <= {MAX_BUDGET}"):
            ddtree.build_tree(torch.randn(15, 49152), bad)
        with pytest.raises(ValueError, match=f"budget must be <= {MAX_BUDGET}"):
            ddtree.build_trees(torch.randn(2, 2, 100), bad)


# ------------------------------------------------------------------------------------------------ DraftTree
@pytest.mark.parametrize("args, match", [
    (fields([3, 4, 5], [-1, 2, 1], [0, 1, 1], [-1, 0, 0]), r"parents\[1\] = 2 must be in \[0, i\)"),  # a cycle
    (fields([3, 4], [-1, 1], [0, 1], [-1, 0]), r"parents\[1\] = 1"),  # its own parent
    (fields([3, 4], [-1, 0], [0, 5], [-1, 0]), r"depths\[1\] = 5"),
    (fields([3, 4, 4], [-1, 0, 0], [0, 1, 1], [-1, 0, 1]), "siblings must differ"),
    (fields([3, -2], [-1, 0], [0, 1], [-1, 0]), r"tokens\[1\] = -2"),
    (fields([3, 4], [-1, 0], [0, 1], [-1, -3]), r"ranks\[1\] = -3"),
    (fields([3, 4], [0, 0], [0, 1], [-1, 0]), "node 0 must be the root"),
    (fields([3, 4], [-1, 0], [0, 1], [-1, 0], [0.0, math.nan]), "node_logws must be finite"),
    (fields([3, 4, 5], [-1, 0], [0, 1], [-1, 0]), "one length"),
    ([torch.zeros(0, dtype=torch.long)] * 4 + [torch.zeros(0, dtype=torch.float64)], "one length n >= 1"),
    ([[3, 4], [-1, 0], [0, 1], [-1, 0], [0.0, -1.0]], "tokens must be a 1-D torch.long CPU tensor"),
    ([torch.tensor([3, 4]), torch.tensor([-1.0, 0.0])] + fields([3, 4], [-1, 0], [0, 1], [-1, 0])[2:],
     "parents must be a 1-D torch.long"),
])
def test_a_draft_tree_checks_its_structure_when_made(args, match):
    with pytest.raises(ValueError, match=match):
        DraftTree(*args)


def test_trees_from_every_builder_pass_the_structure_check():
    logits = torch.randn(6, 64, generator=torch.Generator().manual_seed(4))
    for t in (ddtree.build_tree(logits, 40), ddtree.chain_tree(logits), ddtree.root_tree(5),
              *ddtree.build_trees(logits[None].expand(2, -1, -1), 9)):
        again = DraftTree(t.tokens, t.parents, t.depths, t.ranks, t.node_logws)
        assert torch.equal(again.parents, t.parents) and DraftTree.from_dict(t.to_dict()).n_nodes == t.n_nodes


@pytest.mark.parametrize("call", [
    lambda x: ddtree.visibility(x), lambda x: ddtree.tree_attention_mask(x, 3), lambda x: ddtree.retrieve_encoding(x),
    lambda x: ddtree.tree_attention_mask(x, 3, 5), lambda x: ddtree.pack_verify_batch([x], [3], 5)])
def test_non_trees_are_named(call):
    with pytest.raises(ValueError, match="DraftTree"):
        call({"parents": [-1]})


@pytest.mark.parametrize("token", [10**30, -1, 2**31 - 1, True, 1.0])
def test_root_tokens_are_token_ids(token):
    with pytest.raises(ValueError, match="token"):
        ddtree.root_tree(token)
    with pytest.raises(ValueError, match="token"):
        tree().with_root_token(token)


# ------------------------------------------------------------------------------------------------ encodings, masks
@pytest.mark.parametrize("offset", [-3, 1.5, True, 10**30])
def test_retrieve_encoding_offset_must_be_a_small_int(offset):
    with pytest.raises(ValueError, match="offset"):
        ddtree.retrieve_encoding(tree(), offset)
    assert ddtree.retrieve_encoding(tree(), 7)[0].tolist() == list(range(7, 14))


@pytest.mark.parametrize("logits", [torch.tensor([0.0, math.nan]), torch.tensor([[0.0, math.inf]]),
                                    torch.tensor([-math.inf, -math.inf]), torch.tensor([1, 2]), [0.0, 1.0],
                                    torch.tensor(1.0)])
def test_sampling_probs_refuses_what_is_not_finite_logits(logits):
    with pytest.raises(ValueError, match="logits"):
        ddtree.sampling_probs(logits, 1.0)


def test_sampling_probs_keeps_masked_tokens_at_zero():
    p = ddtree.sampling_probs(torch.tensor([[0.0, -math.inf, 1.0]]), 0.5, 0.9)
    assert p[0, 1] == 0 and p.sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("call, match", [
    (lambda t: ddtree.tree_attention_mask(t, 10**12), "prefix_len = 1000000000000"),
    (lambda t: ddtree.tree_attention_mask(t, 10**12, 8), "prefix_len = 1000000000000"),
    (lambda t: ddtree.tree_attention_mask(t, 4, 10**7), "rows = 10000000"),
    (lambda t: ddtree.tree_attention_mask(t, 4, 2), "rows must be an int >= 7"),
    (lambda t: ddtree.pack_verify_batch([t], [10**12], 8), "seq_lens"),
    (lambda t: ddtree.pack_verify_batch([t], [4], 10**9), "num_draft_tokens must be an int in"),
    (lambda t: ddtree.pack_verify_batch([t] * 10**5, [10**5] * 10**5, 8), "batch's mask"),
])
def test_sizes_that_cannot_fit_are_refused_before_allocating(call, match):
    with pytest.raises(ValueError, match=match):
        call(tree())


@pytest.mark.parametrize("b", [1, -1, 0.0, True])
def test_batch_masks_name_a_bad_request_index(b):
    batch = ddtree.pack_verify_batch([tree()], [4], 8)
    for fn in (ddtree.expected_mask, ddtree.effective_mask):
        with pytest.raises(ValueError, match="request index"):
            fn(batch, b)


# ------------------------------------------------------------------------------------------------ issue 43
@pytest.mark.parametrize("value", [-1.0, math.nan, 2.0, 1.0, math.inf, -math.inf])
def test_verify_sampled_coins_must_be_uniforms_in_0_1(value):
    t = tree()
    coins = torch.full((2, t.n_nodes), 0.5, dtype=torch.float64)
    coins[1, 2] = value
    with pytest.raises(ValueError, match=r"coins must be uniforms in \[0, 1\)"):
        ddtree.verify_sampled(t, torch.randn(t.n_nodes, 50), 1.0, coins=coins)
    coins[1, 2] = 0.0  # 0 is a uniform
    assert ddtree.verify_sampled(t, torch.randn(t.n_nodes, 50), 1.0, coins=coins).accepted[0] == 0


@pytest.mark.parametrize("rows", [0, -1, 1.5, True, 8])
def test_tree_batch_first_keeps_the_root_and_at_most_its_rows(rows):
    batch = ddtree.TreeBatch.from_trees([tree()], 7)
    with pytest.raises(ValueError, match=r"rows must be an int in \[1, 7\]"):
        batch.first(rows)
    assert batch.first(1).n_nodes.tolist() == [1] and batch.first(7).tokens.shape == (1, 7)


@pytest.mark.parametrize("value", ["no", "False", 0, 1, 1.0, None])
def test_check_bool_refuses_what_is_not_a_bool(value):
    from ddtree._checks import check_bool
    with pytest.raises(ValueError, match="exact must be True or False"):
        check_bool("exact", value)
    assert check_bool("exact", True) is True and check_bool("fused", None, allow_none=True) is None


def test_a_session_refuses_exact_no():
    from ddtree.models import tiny_random_pair
    with pytest.raises(ValueError, match="exact must be True or False"):
        ddtree.Session(tiny_random_pair(0), "x", backend="native", exact="no")


@pytest.mark.parametrize("temperature", [5e-324, 1e-320, 1e-300])
def test_a_subnormal_sampling_temperature_is_the_argmax_limit(temperature):
    logits = torch.randn(6, 40, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    p = ddtree.sampling_probs(logits, temperature, 0.9)
    assert torch.equal(p, torch.nn.functional.one_hot(logits.argmax(-1), 40).double())
    tie = ddtree.sampling_probs(torch.tensor([1.0, 3.0, 3.0, -math.inf]), temperature)
    assert tie.tolist() == [0.0, 0.5, 0.5, 0.0]  # the limit shares the mass among equal maxima
    huge = ddtree.sampling_probs(torch.tensor([0.0, 1e308], dtype=torch.float64), 0.5)  # 1e308 / 0.5 overflows
    assert huge.tolist() == [0.0, 1.0]


def test_a_subnormal_sampling_temperature_decodes_as_greedy():
    """Temperature 5e-324 overflowed 1/T: the walk got NaN probabilities and the round failed with "bonus_token
    must be an int >= 0, got -1". The sampled walk at T -> 0 is the greedy walk (as draft_temperature is)."""
    from ddtree.models import tiny_random_pair
    pair = tiny_random_pair(0)
    for backend in ("reference", "native"):
        cold = ddtree.Session(pair, "x", budget=4, verify="sampled", temperature=5e-324, backend=backend)
        greedy = ddtree.Session(pair, "x", budget=4, backend=backend)
        for _ in range(2):
            assert cold.step().requests[0].committed == greedy.step().requests[0].committed
