import itertools
import json
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ddtree import DraftTree, TreeBatch, build_tree, build_trees


def brute_force_best(logq: torch.Tensor, budget: int) -> dict[tuple[int, ...], float]:
    """The `budget` best paths by score among ALL paths up to full depth (scores strictly fall along a path, so
    the best set is prefix-closed on its own)."""
    depth, vocab = logq.shape
    scores = {}
    for d in range(1, depth + 1):
        for path in itertools.product(range(vocab), repeat=d):
            scores[path] = sum(float(logq[i, t]) for i, t in enumerate(path))
    best = sorted(scores, key=scores.get, reverse=True)[:budget]
    return {p: scores[p] for p in best}


def tree_paths(tree: DraftTree) -> dict[tuple[int, ...], float]:
    tokens = tree.tokens.tolist()
    return {tuple(tokens[j] for j in tree.path(i)[1:]): float(tree.node_logws[i]) for i in range(1, tree.n_nodes)}


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 3), vocab=st.integers(2, 5),
       budget=st.integers(0, 40), scale=st.floats(0.1, 4.0))
def test_heap_selects_best_prefix_closed_paths(seed, depth, vocab, budget, scale):
    logits = torch.randn(depth, vocab, generator=torch.Generator().manual_seed(seed)) * scale
    tree = build_tree(logits, budget)
    logq = torch.log_softmax(logits, -1).double()
    want = brute_force_best(logq, budget)
    got = tree_paths(tree)
    assert set(got) == set(want)
    for path, score in got.items():
        assert score == pytest.approx(want[path], abs=1e-5)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 6), vocab=st.integers(2, 50), budget=st.integers(0, 64))
def test_tree_structure_and_logweights(seed, depth, vocab, budget):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(depth, vocab, generator=g) * 3
    temp = 0.7
    tree = build_tree(logits, budget, draft_temperature=temp)
    logq = torch.log_softmax(logits / temp, -1)
    order = torch.sort(logq, dim=-1, descending=True, stable=True).indices
    n = tree.n_nodes
    assert n == 1 + min(budget, sum(vocab ** d for d in range(1, depth + 1)))
    for name in ("tokens", "parents", "depths", "ranks", "node_logws"):
        assert getattr(tree, name).shape == (n,)
    assert tree.parents[0] == -1 and tree.depths[0] == 0 and tree.ranks[0] == -1 and tree.tokens[0] == -1
    assert tree.node_logws[0] == 0.0
    for i in range(1, n):
        p, d, r, t = (int(x[i]) for x in (tree.parents, tree.depths, tree.ranks, tree.tokens))
        assert 0 <= p < i and d == tree.depths[p] + 1
        assert order[d - 1, r] == t  # rank is the token's top-K rank at its depth
        path = tree.path(i)
        expect = sum(float(logq[int(tree.depths[j]) - 1, int(tree.tokens[j])]) for j in path[1:])
        assert float(tree.node_logws[i]) == pytest.approx(expect, abs=1e-5)
        assert tree.node_logws[i] <= tree.node_logws[p]
    # siblings have distinct tokens, in rank order
    for i in range(n):
        kids = tree.children(i)
        assert kids == sorted(kids)
        assert len({int(tree.tokens[k]) for k in kids}) == len(kids)
        assert [int(tree.ranks[k]) for k in kids] == sorted(int(tree.ranks[k]) for k in kids)


def test_pop_order_is_score_order():
    tree = build_tree(torch.randn(5, 30, generator=torch.Generator().manual_seed(3)), 40)
    logws = tree.node_logws[1:]
    assert torch.all(logws[:-1] >= logws[1:])


def test_budget_zero_and_cap():
    logits = torch.randn(2, 3)
    root = build_tree(logits, 0)
    assert root.n_nodes == 1 and root.max_depth == 0
    full = build_tree(logits, 10_000)  # only 3 + 9 paths exist
    assert full.n_nodes == 1 + 12


def test_zero_probability_tokens_are_never_selected():
    logits = torch.tensor([[0.0, -math.inf, 1.0], [2.0, 0.5, -math.inf]])
    tree = build_tree(logits, 100)
    assert tree.n_nodes == 1 + 2 + 4
    assert -math.inf not in tree.node_logws.tolist()
    assert 1 not in tree.tokens[tree.depths == 1].tolist()
    assert 2 not in tree.tokens[tree.depths == 2].tolist()


def test_ties_are_broken_deterministically():
    tree = build_tree(torch.zeros(2, 3), 6)
    # equal log-probs: lower token id first; equal scores: lower depth first, then parent, then rank
    assert tree.tokens.tolist() == [-1, 0, 1, 2, 0, 1, 2]
    assert tree.depths.tolist() == [0, 1, 1, 1, 2, 2, 2]
    assert tree.parents.tolist() == [-1, 0, 0, 0, 1, 1, 1]
    again = build_tree(torch.zeros(2, 3), 6)
    assert again.to_dict() == tree.to_dict()


def test_build_trees_matches_build_tree():
    logits = torch.randn(3, 4, 20, generator=torch.Generator().manual_seed(1))
    trees = build_trees(logits, 12, draft_temperature=1.3)
    for row, tree in zip(logits, trees):
        assert tree.to_dict() == build_tree(row, 12, draft_temperature=1.3).to_dict()


def test_children_path_and_root_token():
    tree = build_tree(torch.randn(3, 8, generator=torch.Generator().manual_seed(2)), 10)
    for i in range(tree.n_nodes):
        for c in tree.children(i):
            assert tree.path(c) == tree.path(i) + [c]
    rooted = tree.with_root_token(42)
    assert rooted.tokens[0] == 42 and tree.tokens[0] == -1
    with pytest.raises(ValueError, match="node index"):
        tree.path(tree.n_nodes)


def test_dict_round_trip_is_json_safe():
    tree = build_tree(torch.randn(4, 16), 20).with_root_token(7)
    d = json.loads(json.dumps(tree.to_dict()))
    back = DraftTree.from_dict(d)
    for name in ("tokens", "parents", "depths", "ranks", "node_logws"):
        assert torch.equal(getattr(back, name), getattr(tree, name))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("ranks"), "exactly the keys"),
    (lambda d: d.__setitem__("parents", [-1, 5, 0]), r"parents\[1\]"),
    (lambda d: d.__setitem__("depths", [0, 1, 1]), r"depths\[2\]"),
    (lambda d: d.__setitem__("tokens", [0, 1]), "one length"),
    (lambda d: d.__setitem__("tokens", [0, "a", 1]), "'tokens' must be a list of ints"),
    (lambda d: d.__setitem__("node_logws", [0.0, float("nan"), -1.0]), "finite"),
])
def test_from_dict_rejects_malformed(mutate, message):
    d = {"tokens": [-1, 3, 4], "parents": [-1, 0, 1], "depths": [0, 1, 2], "ranks": [-1, 0, 0],
         "node_logws": [0.0, -0.5, -1.0]}
    DraftTree.from_dict(dict(d))
    mutate(d)
    with pytest.raises(ValueError, match=message):
        DraftTree.from_dict(d)


@pytest.mark.parametrize("budget", [-1, 2.5, True, "4", None])
def test_bad_budget(budget):
    with pytest.raises(ValueError, match="budget"):
        build_tree(torch.randn(2, 5), budget)


@pytest.mark.parametrize("logits, message", [
    (torch.randn(5), r"\[depth, vocab\]"),
    (torch.randn(2, 3, 5), r"\[depth, vocab\]"),
    (torch.tensor([[0.0, float("nan")]]), "NaN"),
    (torch.tensor([[0.0, float("inf")]]), r"\+inf"),
    (torch.tensor([[-math.inf, -math.inf]]), "-inf everywhere"),
    (torch.zeros(2, 3, dtype=torch.long), "floating"),
    ([[0.0, 1.0]], "floating"),
])
def test_bad_draft_logits(logits, message):
    with pytest.raises(ValueError, match=message):
        build_tree(logits, 4)


@pytest.mark.parametrize("temp", [0.0, -1.0, float("nan")])
def test_bad_draft_temperature(temp):
    with pytest.raises(ValueError, match="draft_temperature"):
        build_tree(torch.randn(2, 5), 4, draft_temperature=temp)


def test_build_trees_needs_a_batch():
    with pytest.raises(ValueError, match=r"\[batch, depth, vocab\]"):
        build_trees(torch.randn(2, 5), 4)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10**6), vocab=st.integers(1, 30), k=st.integers(1, 30), levels=st.integers(1, 6))
def test_top_k_ranking_equals_stable_sort_even_with_ties(seed, vocab, k, levels):
    from ddtree.tree import ranked_top_k
    k = min(k, vocab)
    logits = torch.randint(0, levels, (3, vocab), generator=torch.Generator().manual_seed(seed)).float()
    logq = torch.log_softmax(logits, -1)
    logq[:, ::3] = -torch.inf  # masked tokens tie too, also across the cut once k passes the finite ones
    values, tokens = ranked_top_k(logq, k)
    want_values, want_tokens = torch.sort(logq, dim=-1, descending=True, stable=True)
    assert torch.equal(tokens, want_tokens[:, :k]) and torch.equal(values, want_values[:, :k])


def test_ties_inside_the_selection_rank_lower_ids_first():
    tree = build_tree(torch.tensor([[0.0, 5.0, 1.0, 5.0]]), 2)
    assert tree.tokens.tolist() == [-1, 1, 3]


def test_chain_tree_is_the_argmax_path():
    from ddtree import chain_tree
    logits = torch.randn(5, 9, generator=torch.Generator().manual_seed(4))
    chain = chain_tree(logits)
    logq = torch.log_softmax(logits, -1)
    assert chain.tokens[1:].tolist() == logits.argmax(-1).tolist()
    assert chain.parents.tolist() == [-1, 0, 1, 2, 3, 4] and chain.depths.tolist() == list(range(6))
    assert chain.node_logws[1:].tolist() == pytest.approx(logq.max(-1).values.double().cumsum(0).tolist())
    assert build_tree(logits, 5).n_nodes == chain.n_nodes  # same size, usually a different shape


def test_tree_batch_round_trips_and_truncates_to_smaller_budgets():
    """TreeBatch.from_trees pads, .split() gives the trees back, and .truncate(n) is the tree of budget n - 1
    (DDTree's nodes come in pop order)."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(3, 5, 40, generator=g)
    trees = [build_tree(x, 12).with_root_token(b) for b, x in enumerate(logits)]
    batch = TreeBatch.from_trees(trees, 16)
    assert batch.tokens.shape == (3, 16) and batch.n_nodes.tolist() == [13, 13, 13]
    assert (batch.tokens[:, 0] == -1).all() and (batch.parents[:, 13:] == -1).all()
    for mine, want in zip(batch.split(roots=[0, 1, 2]), trees):
        for f in ("tokens", "parents", "depths", "ranks", "node_logws"):
            assert torch.equal(getattr(mine, f), getattr(want, f)), f
    cut = batch.truncate(torch.tensor([2, 13, 7]))
    assert cut.n_nodes.tolist() == [2, 13, 7]
    for mine, x, budget in zip(cut.split(), logits, [1, 12, 6]):
        want = build_tree(x, budget)
        assert torch.equal(mine.tokens[1:], want.tokens[1:]) and torch.equal(mine.parents, want.parents)
    with pytest.raises(ValueError, match="rows must be >="):
        TreeBatch.from_trees(trees, 5)
