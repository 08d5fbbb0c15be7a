"""The one-launch tree structure kernel against its torch references (ancestor_bits, retrieve_from_parents)."""
import pytest
import torch

import ddtree
from ddtree.kernels.tree_attention import padded_parents
from ddtree.kernels.tree_pack import tree_structure
from ddtree.kernels.tree_verify import retrieve_from_parents
from ddtree.tree import ancestor_bits

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("budget, extra", [(0, 0), (1, 2), (6, 0), (31, 1), (40, 3), (70, 0)])
def test_tree_structure_matches_the_references(budget, extra):
    g = torch.Generator().manual_seed(budget + extra)
    trees = ddtree.build_trees(torch.randn(3, 6, 20, generator=g).round(), budget)
    parents = padded_parents(trees, budget + 1 + extra).to(DEVICE)  # padding rows when extra > 0
    bits, next_token, next_sibling = tree_structure(parents)
    assert torch.equal(bits, ancestor_bits(parents))
    want_token, want_sibling = retrieve_from_parents(parents)
    assert torch.equal(next_token, want_token) and torch.equal(next_sibling, want_sibling)


def test_tree_structure_bad_input():
    with pytest.raises(ValueError, match="parents"):
        tree_structure(torch.zeros(4))
