import math
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ddtree

from exactness import chi_square_pvalue, exact_outcome_probs

from ddtree import (DraftTree, build_tree, pack_verify_batch, sample_walks, sampling_probs, verify_greedy,
                    verify_greedy_batch, verify_sampled, verify_sampled_batch)


def make_case(seed: int, depth: int, vocab: int, budget: int, sharp: float = 2.0):
    """A draft tree and target logits per node that often agree with the draft (so walks go deep)."""
    g = torch.Generator().manual_seed(seed)
    draft = torch.randn(depth, vocab, generator=g) * sharp
    tree = build_tree(draft, budget).with_root_token(0)
    target = torch.randn(tree.n_nodes, vocab, generator=g) * sharp
    for i in range(tree.n_nodes):  # make the target like the draft's next-depth choice, imperfectly
        d = int(tree.depths[i])
        if d < depth:
            target[i] += draft[d]
    return draft, tree, target


def brute_force_greedy(tree: DraftTree, logits: torch.Tensor) -> tuple[list[int], int]:
    choice = logits.argmax(-1)
    agree = [i for i in range(tree.n_nodes)
             if all(choice[tree.parents[j]] == tree.tokens[j] for j in tree.path(i)[1:])]
    last = max(agree, key=lambda i: int(tree.depths[i]))
    return tree.path(last), int(choice[last])


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), depth=st.integers(1, 5), vocab=st.integers(2, 8), budget=st.integers(0, 30))
def test_greedy_walk_matches_brute_force(seed, depth, vocab, budget):
    _, tree, target = make_case(seed, depth, vocab, budget)
    result = verify_greedy(tree, target)
    accepted, bonus = brute_force_greedy(tree, target)
    assert result.accepted == accepted and result.bonus_token == bonus
    assert result.accepted_tokens == [int(tree.tokens[i]) for i in accepted[1:]]
    assert result.committed == result.accepted_tokens + [bonus]
    assert result.acceptance_length == len(accepted)


def test_greedy_accepts_the_whole_path_when_target_agrees():
    tree = build_tree(torch.tensor([[3.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 3.0]]), 3)  # a chain 0,1,2
    assert tree.tokens.tolist() == [-1, 0, 1, 2]
    target = torch.full((4, 3), -5.0)
    for node, nxt in enumerate([0, 1, 2, 1]):
        target[node, nxt] = 5.0
    result = verify_greedy(tree, target)
    assert result.accepted == [0, 1, 2, 3] and result.bonus_token == 1 and result.committed == [0, 1, 2, 1]


def leviathan_walks(tree, draft_logits, probs, draws, generator):
    """The BIASED rule (negative control): at each node try children in sibling order, accept child t with
    probability min(1, p(t) / q(t)), on rejection p <- norm(max(p - q, 0)); bonus from the final residual.
    q is the drafter's distribution at the child's depth. DDTree's children are a top-K selection, not samples
    from q, so this rule does not reproduce the target's distribution."""
    q_all = torch.softmax(draft_logits.double(), -1).numpy()
    probs = probs.numpy()
    tokens, depths = tree.tokens.tolist(), tree.depths.tolist()
    kids = [tree.children(i) for i in range(tree.n_nodes)]
    uniform = torch.rand(draws, tree.n_nodes + 1, generator=generator, dtype=torch.float64).numpy()
    out = Counter()
    for s in range(draws):
        node, k = 0, 0
        while True:
            p = probs[node]
            moved = False
            for child in kids[node]:
                t, q = tokens[child], q_all[depths[child] - 1]
                k += 1
                if uniform[s, k - 1] < min(1.0, p[t] / q[t]):
                    node, moved = child, True
                    break
                p = np.clip(p - q, 0, None)
                p = p / p.sum()
            if not moved:
                cdf = np.cumsum(p)
                bonus = min(int(np.searchsorted(cdf, uniform[s, -1] * cdf[-1], side="right")), p.size - 1)
                out[(node, bonus)] += 1
                break
    return out


CASES = [  # (seed, depth, vocab, budget, temperature, top_p)
    (1, 3, 5, 6, 1.0, 1.0),
    (2, 2, 4, 3, 0.5, 1.0),
    (3, 4, 6, 10, 1.5, 1.0),
    (4, 3, 5, 8, 1.0, 0.8),
]


@pytest.mark.parametrize("seed, depth, vocab, budget, temperature, top_p", CASES)
def test_sampled_walk_is_distribution_exact(seed, depth, vocab, budget, temperature, top_p):
    _, tree, target = make_case(seed, depth, vocab, budget)
    draws = 120_000
    last, bonus = sample_walks(tree, target, temperature, draws, top_p=top_p,
                               generator=torch.Generator().manual_seed(seed))
    outcomes = Counter(zip(last.tolist(), bonus.tolist()))
    exact = exact_outcome_probs(tree, sampling_probs(target, temperature, top_p))
    assert chi_square_pvalue(outcomes, exact, draws) > 1e-3
    # walks do go past the root, so the test sees acceptances, not only bonus draws
    assert (last > 0).float().mean() > 0.3


@pytest.mark.parametrize("case", [CASES[0], CASES[2]])
def test_chi_square_rejects_the_biased_min_p_over_q_rule(case):
    seed, depth, vocab, budget, temperature, _ = case
    draft, tree, target = make_case(seed, depth, vocab, budget)
    probs = sampling_probs(target, temperature)
    draws = 100_000
    biased = leviathan_walks(tree, draft, probs, draws, torch.Generator().manual_seed(0))
    exact = exact_outcome_probs(tree, probs)
    assert chi_square_pvalue(biased, exact, draws) < 1e-6
    # and it is biased the way the story says: it over-accepts
    accepted = sum(n for (c, _), n in biased.items() if c > 0) / draws
    true_accept = sum(p for (c, _), p in exact.items() if c > 0)
    assert accepted > true_accept + 0.01


def test_sampled_reduces_to_greedy_as_temperature_goes_to_zero():
    for seed in range(20):
        _, tree, target = make_case(seed, 4, 7, 12)
        greedy = verify_greedy(tree, target)
        assert verify_sampled(tree, target, 0.0) == greedy
        assert verify_sampled(tree, target, 1e-4, generator=torch.Generator().manual_seed(seed)) == greedy


def test_sampled_is_reproducible_with_a_generator():
    _, tree, target = make_case(5, 4, 7, 12)
    a = [verify_sampled(tree, target, 1.0, generator=torch.Generator().manual_seed(9)) for _ in range(2)]
    assert a[0] == a[1]
    coins = ddtree.draw_coins(torch.Generator().manual_seed(9), 1, tree.n_nodes, "cpu")[:, 0]
    assert verify_sampled(tree, target, 1.0, coins=coins) == a[0]  # the generator draws the coins as draw_coins


def test_sampled_walk_is_rule_b_over_the_retrieve_encoding():
    """verify_sampled is the serving kernel's rule B (its torch reference) on one tree: same coins, same walk."""
    from ddtree.kernels.tree_verify import verify_sampled_tree_ref
    for seed in range(10):
        _, tree, target = make_case(seed, 4, 7, 12)
        coins = torch.rand(2, tree.n_nodes, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        got = verify_sampled(tree, target, 0.7, top_p=0.9, coins=coins)
        _, nxt, sib = ddtree.retrieve_encoding(tree)
        acc, n, bonus = verify_sampled_tree_ref(tree.tokens[None], nxt[None], sib[None],
                                                sampling_probs(target, 0.7, 0.9)[None], coins[:1], coins[1:])
        assert got.accepted == acc[0, :int(n[0])].tolist() and got.bonus_token == int(bonus[0])
    with pytest.raises(ValueError, match="coins must be"):
        verify_sampled(tree, target, 1.0, coins=coins[:, :2])


def test_sampling_probs_top_p_keeps_the_smallest_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert sampling_probs(logits, 1.0, 0.8).tolist()[0] == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0, 0])
    assert sampling_probs(logits, 1.0, 0.81).tolist()[0] == pytest.approx([0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0])
    assert sampling_probs(logits, 1.0).sum().item() == pytest.approx(1.0)


def test_batched_forms_match_per_tree():
    cases = [make_case(s, 3, 6, b) for s, b in [(1, 7), (2, 2), (3, 0)]]
    trees = [t for _, t, _ in cases]
    batch = pack_verify_batch(trees, [4, 2, 6], 8)
    rows = torch.randn(int(batch.qo_indptr[-1]), 6)
    for b, (_, tree, target) in enumerate(cases):
        rows[8 * b:8 * b + tree.n_nodes] = target
    assert verify_greedy_batch(batch, rows) == [verify_greedy(t, x) for _, t, x in cases]
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert verify_sampled_batch(batch, rows, 1.0, generator=g1) == [
        verify_sampled(t, x, 1.0, generator=g2) for _, t, x in cases]
    with pytest.raises(ValueError, match="one row per batch row"):
        verify_greedy_batch(batch, rows[:-1])


def test_bad_verify_input():
    _, tree, target = make_case(0, 3, 6, 5)
    with pytest.raises(ValueError, match="one row per tree node"):
        verify_greedy(tree, target[:-1])
    with pytest.raises(ValueError, match="NaN"):
        verify_greedy(tree, target.masked_fill(torch.rand_like(target) < 0.2, math.nan))
    with pytest.raises(ValueError, match=r"\[n_nodes, vocab\]"):
        verify_greedy(tree, target[0])
    with pytest.raises(ValueError, match="temperature"):
        verify_sampled(tree, target, -0.5)
    with pytest.raises(ValueError, match="top_p"):
        verify_sampled(tree, target, 1.0, top_p=0.0)
    with pytest.raises(ValueError, match="vocab"):
        verify_greedy(tree, target[:, :int(tree.tokens[1:].max())])
    for walk in (lambda t: verify_greedy(t, target), lambda t: verify_sampled(t, target, 1.0),
                 lambda t: sample_walks(t, target, 1.0, 4)):
        with pytest.raises(ValueError, match="tree must be a DraftTree"):
            walk(tree.to_dict())
