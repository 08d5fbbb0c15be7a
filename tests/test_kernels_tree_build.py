"""Batched device tree build (the Triton selection and its torch reference) vs ddtree.build_tree: same nodes, order,
ties and node_logws."""
import math

import pytest
import torch

from ddtree import build_trees
from ddtree.kernels.tree_build import (build_trees_device, select_from_top_k, select_from_top_k_ref,
                                      to_draft_trees)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FIELDS = ("tokens", "parents", "depths", "ranks", "node_logws")


def assert_same_trees(draft_logits: torch.Tensor, budget: int):
    got = build_trees_device(draft_logits, budget)
    assert got.tokens.shape == (draft_logits.shape[0], budget + 1)
    for b, (mine, want) in enumerate(zip(to_draft_trees(got), build_trees(draft_logits, budget))):
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
    assert all(torch.equal(getattr(a, f), getattr(b, f)) for a, b in zip(to_draft_trees(got), want) for f in FIELDS)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="draft_logits"):
        build_trees_device(torch.zeros(4, 5), 3)
    with pytest.raises(ValueError, match="budget"):
        build_trees_device(torch.zeros(1, 4, 5), -1)
    with pytest.raises(ValueError, match="draft_temperature"):
        build_trees_device(torch.zeros(1, 4, 5), 3, draft_temperature=0.0)


@pytest.mark.gpu
@pytest.mark.parametrize("budget", [16, 128, 512])
def test_same_trees_on_gpu_real_vocab(budget):
    logits = torch.randn(4, 16, 49152, device=DEVICE) * 4
    logits[2] = logits[2].round()  # many ties
    assert_same_trees(logits, budget)


def _top_k(logits, budget):
    logq = torch.log_softmax(logits, dim=-1)
    k = min(budget, logits.shape[-1])
    values, tokens = torch.sort(logq, dim=-1, descending=True, stable=True)
    return values[..., :k].double(), tokens[..., :k]


@pytest.mark.parametrize("kind", ["random", "ties", "zero-probability"])
def test_selection_kernel_matches_its_reference(kind):
    """The Triton selection (Triton's interpreter on a CPU) gives the torch reference's trees bit for bit."""
    g = torch.Generator().manual_seed(10 + len(kind))
    for _ in range(12):
        logits, budget = random_case(g, kind, depths=(1, 6), vocabs=(1, 12), budgets=(1, 30))
        top = _top_k(logits.to(DEVICE), budget)
        got, want = select_from_top_k(*top, budget), select_from_top_k_ref(*top, budget)
        for field, a, b in zip(got._fields, got, want):
            assert torch.equal(a, b), (field, tuple(logits.shape), budget)


def test_selection_kernel_at_a_real_depth_and_budget():
    logits = torch.randn(2, 15, 300, generator=torch.Generator().manual_seed(7)) * 3
    logits[1] = logits[1].round()  # many exact ties
    top = _top_k(logits.to(DEVICE), 64)
    got, want = select_from_top_k(*top, 64), select_from_top_k_ref(*top, 64)
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and got.n_nodes.tolist() == [65, 65]

