"""Batched device tree build (the Triton top-K and selection, and their torch references) vs ddtree.build_tree:
same nodes, order, ties and node_logws."""
import math

import pytest
import torch

from ddtree import build_trees
from ddtree.kernels import tree_build
from ddtree.kernels.tree_build import (build_trees_device, select_from_top_k, select_from_top_k_ref, top_k, top_k_ref)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FIELDS = ("tokens", "parents", "depths", "ranks", "node_logws")


@pytest.fixture(params=["one program per request", "a launch per depth"])
def selection_schedule(request, monkeypatch):
    """Both schedules of the selection kernels (select_from_top_k picks one by budget)."""
    monkeypatch.setattr(tree_build, "SMALL_MAX_BUDGET", 128 if request.param == "one program per request" else 0)
    return request.param


def assert_same_trees(draft_logits: torch.Tensor, budget: int):
    got = build_trees_device(draft_logits, budget)
    assert got.tokens.shape == (draft_logits.shape[0], budget + 1)
    for b, (mine, want) in enumerate(zip(got.split(), build_trees(draft_logits, budget))):
        for field in FIELDS:
            assert torch.equal(getattr(mine, field), getattr(want, field)), (b, field)
        assert (got.tokens[b, want.n_nodes:] == -1).all() and (got.node_logws[b, want.n_nodes:] == -math.inf).all()


def random_case(g, kind, *, depths, vocabs, budgets):
    """(draft logits [batch, depth, vocab], budget) with sizes drawn from the [lo, hi) ranges; "ties" rounds the
    logits, "zero-probability" masks half of them to -inf (so a budget above the allowed paths gets capped)."""
    batch, depth, vocab, budget = (int(torch.randint(lo, hi, (1,), generator=g))
                                   for lo, hi in ((1, 4), depths, vocabs, budgets))
    logits = torch.randn(batch, depth, vocab, generator=g) * 2
    if kind == "ties":
        logits = logits.round()
    if kind == "zero-probability":
        logits = logits.masked_fill(torch.rand(logits.shape, generator=g) < 0.5, -math.inf)
        logits[..., 0] = 0.0
    return logits, budget


@pytest.mark.parametrize("kind", ["random", "ties", "zero-probability"])
def test_same_trees_as_build_tree(kind):
    g = torch.Generator().manual_seed(len(kind))
    for _ in range(60):
        logits, budget = random_case(g, kind, depths=(0, 5), vocabs=(1, 9), budgets=(0, 30))
        assert_same_trees(logits.to(DEVICE), budget)


def test_temperature_and_large_budget():
    logits = torch.randn(3, 8, 500, generator=torch.Generator().manual_seed(0)) * 3
    logits[1] = logits[1].round()
    got = build_trees_device(logits.to(DEVICE), 100, draft_temperature=0.7)
    want = build_trees(logits.to(DEVICE), 100, draft_temperature=0.7)
    assert all(torch.equal(getattr(a, f), getattr(b, f)) for a, b in zip(got.split(), want) for f in FIELDS)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="draft_logits"):
        build_trees_device(torch.zeros(4, 5), 3)
    with pytest.raises(ValueError, match="budget"):
        build_trees_device(torch.zeros(1, 4, 5), -1)
    with pytest.raises(ValueError, match="draft_temperature"):
        build_trees_device(torch.zeros(1, 4, 5), 3, draft_temperature=0.0)


@pytest.mark.gpu
@pytest.mark.parametrize("budget", [8, 16, 32, 64, 128, 512, 1024])
def test_same_trees_on_gpu_real_vocab(budget, selection_schedule):
    logits = torch.randn(4, 16, 49152, device=DEVICE) * 4
    logits[2] = logits[2].round()  # many ties
    assert_same_trees(logits, budget)


def _top_k(logits, budget):
    return top_k_ref(torch.log_softmax(logits, dim=-1), min(budget, logits.shape[-1]))


@pytest.mark.parametrize("kind", ["random", "ties", "zero-probability"])
def test_top_k_kernel_matches_a_stable_sort(kind, monkeypatch):
    """Small chunks and merges (Triton's interpreter on a CPU) so that several merge levels run: same values and
    token ids as the first k of a stable descending sort, ties to the lower id."""
    monkeypatch.setattr(tree_build, "TOP_K_CHUNK", 16)
    monkeypatch.setattr(tree_build, "MERGE_WIDTH", 32)
    g = torch.Generator().manual_seed(20 + len(kind))
    for _ in range(6):
        logits, _ = random_case(g, kind, depths=(1, 4), vocabs=(1, 150), budgets=(1, 2))
        logq = torch.log_softmax(logits, dim=-1).to(DEVICE)
        k = int(torch.randint(1, logq.shape[-1] + 1, (1,), generator=g))
        for got, want in zip(top_k(logq, k), top_k_ref(logq, k)):
            assert torch.equal(got, want), (kind, tuple(logq.shape), k)


def test_top_k_kernel_nan_and_signed_zero_and_one_chunk():
    """NaN counts as -inf and -0.0 ties with 0.0 (lower id first); a vocabulary within one chunk needs no merge."""
    logq = torch.tensor([[-1.0, float("nan"), -0.0, 0.0, -float("inf"), -3.0]]).to(DEVICE)
    values, tokens = top_k(logq, 6)
    assert tokens.tolist() == [[2, 3, 0, 5, 1, 4]]
    assert values[0, :4].tolist() == [0.0, 0.0, -1.0, -3.0] and (values[0, 4:] == -math.inf).all()
    logq = torch.log_softmax(torch.randn(3, 5, 200, generator=torch.Generator().manual_seed(3)), -1).to(DEVICE)
    for got, want in zip(top_k(logq, 64), top_k_ref(logq, 64)):
        assert torch.equal(got, want)


def test_kernels_build_the_trees_of_build_tree(monkeypatch, selection_schedule):
    """top_k then select_from_top_k (the device path of select_trees), vocabulary larger than a chunk."""
    monkeypatch.setattr(tree_build, "TOP_K_CHUNK", 64)
    monkeypatch.setattr(tree_build, "MERGE_WIDTH", 256)
    logits = torch.randn(2, 6, 500, generator=torch.Generator().manual_seed(5)) * 3
    logits[1] = logits[1].round()
    got = select_from_top_k(*top_k(torch.log_softmax(logits, -1).to(DEVICE), 40), 40)
    for mine, want in zip(got.split(), build_trees(logits, 40)):
        assert all(torch.equal(getattr(mine, f), getattr(want, f)) for f in FIELDS)


@pytest.mark.parametrize("kind", ["random", "ties", "zero-probability"])
def test_selection_kernel_matches_its_reference(kind, selection_schedule):
    """The Triton selection (Triton's interpreter on a CPU) gives the torch reference's trees bit for bit."""
    g = torch.Generator().manual_seed(10 + len(kind))
    for _ in range(12):
        logits, budget = random_case(g, kind, depths=(1, 6), vocabs=(1, 12), budgets=(1, 30))
        top = _top_k(logits.to(DEVICE), budget)
        got, want = select_from_top_k(*top, budget), select_from_top_k_ref(*top, budget)
        for field, a, b in zip(got._fields, got, want):
            assert torch.equal(a, b), (field, tuple(logits.shape), budget)


def test_selection_kernel_at_a_real_depth_and_budget(selection_schedule):
    logits = torch.randn(2, 15, 300, generator=torch.Generator().manual_seed(7)) * 3
    logits[1] = logits[1].round()  # many exact ties
    top = _top_k(logits.to(DEVICE), 64)
    got, want = select_from_top_k(*top, 64), select_from_top_k_ref(*top, 64)
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and got.n_nodes.tolist() == [65, 65]

