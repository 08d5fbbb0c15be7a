"""Batched greedy / exact-sampled (rule B) verification kernels vs their torch references (CPU: interpreter)."""
from collections import Counter

import pytest
import torch

from exactness import chi_square_pvalue, exact_outcome_probs

from ddtree import build_tree, pack_verify_batch, sampling_probs, verify_greedy_batch
from ddtree.kernels import tree_verify
from ddtree.kernels.tree_verify import (row_argmax, row_argmax_ref, verify_greedy_tree, verify_greedy_tree_ref,
                                        verify_sampled_tree, verify_sampled_tree_ref)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_batch(seed: int, budgets, vocab: int, depth: int = 4, rows: int | None = None, sharp: float = 2.0):
    """A padded VerifyBatch of DDTree trees and per-row target logits that often agree with the draft."""
    g = torch.Generator().manual_seed(seed)
    trees, targets = [], []
    for budget in budgets:
        draft = torch.randn(depth, vocab, generator=g) * sharp
        tree = build_tree(draft, budget).with_root_token(0)
        target = torch.randn(tree.n_nodes, vocab, generator=g) * sharp
        for i in range(tree.n_nodes):  # the target likes the draft's next-depth choice, imperfectly
            if int(tree.depths[i]) < depth:
                target[i] += draft[int(tree.depths[i])]
        trees.append(tree)
        targets.append(target)
    rows = rows or max(t.n_nodes for t in trees)
    batch = pack_verify_batch(trees, [3] * len(trees), rows)
    logits = torch.randn(len(trees), rows, vocab, generator=g)  # padding rows: never read
    for b, target in enumerate(targets):
        logits[b, :target.shape[0]] = target
    return batch, logits


def tree_args(batch):
    return (x.to(DEVICE) for x in (batch.candidates, batch.retrive_next_token, batch.retrive_next_sibling))


@pytest.mark.parametrize("seed, budgets, vocab", [(0, [6, 0, 11, 3], 7), (1, [15], 5), (2, [0], 4), (3, [9, 9], 30)])
def test_greedy_kernel_matches_reference_and_ddtree(seed, budgets, vocab):
    batch, logits = make_batch(seed, budgets, vocab)
    got = verify_greedy_tree(*tree_args(batch), logits.to(DEVICE))
    ref = verify_greedy_tree_ref(*tree_args(batch), logits)
    assert all(torch.equal(a.cpu(), r) for a, r in zip(got, ref))
    accepted, accept_len, bonus = ref
    for b, want in enumerate(verify_greedy_batch(batch, logits.flatten(0, 1))):
        n = int(accept_len[b])
        assert accepted[b, :n].tolist() == want.accepted and int(bonus[b]) == want.bonus_token
        assert (accepted[b, n:] == -1).all()
    argmax = verify_greedy_tree(*tree_args(batch), logits.argmax(-1).to(DEVICE))
    assert all(torch.equal(a, b) for a, b in zip(argmax, got))


@pytest.mark.parametrize("vocab, dtype", [(7, torch.float32), (tree_verify.ARGMAX_BLOCK * 2 + 5, torch.float32),
                                          (tree_verify.ARGMAX_BLOCK + 1, torch.bfloat16)])
def test_row_argmax_matches_torch_first_maximum_and_flags_non_finite_logits(vocab, dtype):
    g = torch.Generator().manual_seed(vocab)
    logits = torch.randn(2, 5, vocab, generator=g).to(dtype)  # [B, Q, V]
    logits[0, 1, [1, vocab - 1]] = 9.0  # a tie across the chunks: the first index wins
    logits[1, 0] = float("-inf")  # a row of -inf: index 0, as torch
    logits[1, 2, vocab // 2] = logits[1, 2, -1] = 20.0
    argmax, bad = row_argmax(logits.to(DEVICE))
    want, want_bad = row_argmax_ref(logits)
    assert torch.equal(argmax.cpu(), want) and argmax.dtype == torch.long
    assert argmax[0, 1] == 1 and argmax[1, 2] == vocab // 2
    assert bool(bad) == bool(want_bad) is True  # the -inf row
    logits[1, 0] = 0.0
    assert not bool(row_argmax(logits.to(DEVICE))[1]) and not bool(row_argmax_ref(logits)[1])
    for odd in (float("nan"), float("inf"), float("-inf")):
        poisoned = logits.clone()
        poisoned[1, 4, vocab - 1] = odd  # in the last chunk of the last row
        assert bool(row_argmax(poisoned.to(DEVICE))[1]) and bool(row_argmax_ref(poisoned)[1])
    inf = logits.clone()
    inf[0, 3, 2] = float("inf")
    assert row_argmax(inf.to(DEVICE))[0][0, 3] == 2  # +inf is the maximum, as torch takes it
    with pytest.raises(ValueError, match="logits"):
        row_argmax(logits[0].to(DEVICE))


@pytest.mark.parametrize("seed, budgets, vocab, temperature, top_p", [
    (0, [6, 0, 11, 3], 40, 1.0, 1.0),
    (1, [15, 4], 23, 0.7, 0.8),  # top-p zeros: children can cover the whole nucleus
    (2, [9], 50, 1.5, 1.0),
])
def test_sampled_kernel_is_the_reference_given_the_same_uniforms(monkeypatch, seed, budgets, vocab, temperature,
                                                                 top_p):
    monkeypatch.setattr(tree_verify, "BLOCK_V", 16)  # several vocabulary blocks
    batch, logits = make_batch(seed, budgets, vocab)
    probs = sampling_probs(logits, temperature, top_p).float()
    g = torch.Generator().manual_seed(seed)
    deep = 0
    for _ in range(6):
        coins, residual = torch.rand(2, *batch.candidates.shape, generator=g)
        got = verify_sampled_tree(*tree_args(batch), probs.to(DEVICE), coins.to(DEVICE), residual.to(DEVICE))
        ref = verify_sampled_tree_ref(batch.candidates, batch.retrive_next_token, batch.retrive_next_sibling, probs,
                                      coins, residual)
        assert all(torch.equal(a.cpu(), r) for a, r in zip(got, ref))
        deep += int((ref[1] > 1).sum())
    assert deep > 0  # some walks accepted draft nodes


def test_sampled_at_low_temperature_is_greedy():
    batch, logits = make_batch(4, [12, 5], 9)
    probs = sampling_probs(logits, 1e-4)
    coins, residual = torch.rand(2, *batch.candidates.shape, generator=torch.Generator().manual_seed(0))
    got = verify_sampled_tree(*tree_args(batch), probs.to(DEVICE), coins.to(DEVICE), residual.to(DEVICE))
    want = verify_greedy_tree_ref(*tree_args(batch), logits)
    assert all(torch.equal(a.cpu(), w) for a, w in zip(got, want))


def replicated_walks(batch, probs, draws: int, seed: int, same_uniform: bool = False) -> Counter:
    """(last accepted node, bonus) of `draws` reference walks of request 0, each with fresh uniforms."""
    cand, nxt, sib = (x[:1].expand(draws, -1) for x in (batch.candidates, batch.retrive_next_token,
                                                        batch.retrive_next_sibling))
    coins, residual = torch.rand(2, draws, batch.num_draft_tokens, generator=torch.Generator().manual_seed(seed),
                                 dtype=torch.float64)
    accepted, accept_len, bonus = verify_sampled_tree_ref(cand, nxt, sib, probs[:1].expand(draws, -1, -1), coins,
                                                          coins if same_uniform else residual)
    last = accepted.gather(1, (accept_len - 1)[:, None]).squeeze(1)
    return Counter(zip(last.tolist(), bonus.tolist()))


@pytest.mark.parametrize("seed, budget, vocab, temperature, top_p", [
    (1, 6, 5, 1.0, 1.0),
    (3, 10, 6, 1.5, 1.0),
    (6, 8, 6, 1.5, 0.9),  # top-p: some tokens have probability 0
])
def test_rule_b_reference_is_distribution_exact(seed, budget, vocab, temperature, top_p):
    batch, logits = make_batch(seed, [budget], vocab, depth=3)
    probs = sampling_probs(logits, temperature, top_p)
    draws = 120_000
    outcomes = replicated_walks(batch, probs, draws, seed)
    exact = exact_outcome_probs(batch.trees[0], probs[0])
    assert chi_square_pvalue(outcomes, exact, draws) > 1e-3
    assert sum(n for (c, _), n in outcomes.items() if c > 0) / draws > 0.3  # walks do accept draft nodes


def test_chi_square_catches_a_reused_uniform():
    """Negative control: drawing the bonus with the node's acceptance coin (u >= rejected mass) is biased."""
    batch, logits = make_batch(1, [6], 5, depth=3)
    probs = sampling_probs(logits, 1.0)
    draws = 100_000
    outcomes = replicated_walks(batch, probs, draws, 0, same_uniform=True)
    assert chi_square_pvalue(outcomes, exact_outcome_probs(batch.trees[0], probs[0]), draws) < 1e-6


def test_bad_input_names_the_argument():
    batch, logits = make_batch(0, [5, 2], 6)
    cand, nxt, sib = tree_args(batch)
    coins = torch.rand(cand.shape, device=DEVICE)
    probs = torch.softmax(logits, -1).to(DEVICE)
    with pytest.raises(ValueError, match="next_sibling"):
        verify_greedy_tree(cand, nxt, sib[:, :-1], logits.to(DEVICE))
    with pytest.raises(ValueError, match="target"):
        verify_greedy_tree(cand, nxt, sib, logits[:, :-1].to(DEVICE))
    with pytest.raises(ValueError, match="probs"):
        verify_sampled_tree(cand, nxt, sib, probs[:1], coins, coins)
    with pytest.raises(ValueError, match="residual_coins"):
        verify_sampled_tree(cand, nxt, sib, probs, coins, coins[:, :2])
    with pytest.raises(ValueError, match="candidates"):
        verify_greedy_tree(cand.float(), nxt, sib, logits.to(DEVICE))


@pytest.mark.gpu
def test_verify_kernels_gpu_large_vocab():
    batch, logits = make_batch(7, [63, 20, 0, 63, 40, 5, 63, 1], 49152, depth=6, rows=64, sharp=3.0)
    got = verify_greedy_tree(*tree_args(batch), logits.to(DEVICE))
    ref = verify_greedy_tree_ref(*tree_args(batch), logits)
    assert all(torch.equal(a.cpu(), r) for a, r in zip(got, ref))
    probs = sampling_probs(logits.to(DEVICE), 0.8).float()
    g = torch.Generator(device=DEVICE).manual_seed(0)
    for _ in range(20):
        coins, residual = torch.rand(2, *batch.candidates.shape, generator=g, device=DEVICE)
        got = verify_sampled_tree(*tree_args(batch), probs, coins, residual)
        ref = verify_sampled_tree_ref(*tree_args(batch), probs, coins, residual)
        assert all(torch.equal(a, r) for a, r in zip(got, ref))
