"""Exact distribution of a tree walk's committed sequence and the chi-square test used by the exactness tests."""
from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from ddtree import DraftTree


def exact_outcome_probs(tree: DraftTree, probs: torch.Tensor) -> dict[tuple[int, int], float]:
    """P(walk ends at node c with bonus b) under the target's own sampling: the committed sequence is
    path(c) + [b] with b not a child token of c."""
    reach = [1.0] * tree.n_nodes
    for i in range(1, tree.n_nodes):
        p = int(tree.parents[i])
        reach[i] = reach[p] * float(probs[p, tree.tokens[i]])
    out = {}
    for c in range(tree.n_nodes):
        kids = {int(tree.tokens[k]) for k in tree.children(c)}
        for b in range(probs.shape[1]):
            if b not in kids:
                out[(c, b)] = reach[c] * float(probs[c, b])
    return out


def chi_square_pvalue(outcomes: Counter, exact: dict, draws: int) -> float:
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-9)
    assert set(outcomes) <= set(exact), "a walk produced an impossible committed sequence"
    big = [k for k, p in exact.items() if p * draws >= 5]
    small = [k for k in exact if k not in big]
    f_exp = [exact[k] * draws for k in big] + ([sum(exact[k] for k in small) * draws] if small else [])
    f_obs = [outcomes[k] for k in big] + ([sum(outcomes[k] for k in small)] if small else [])
    if small and f_exp[-1] < 5:  # fold a tiny pooled bin into the largest one
        f_exp[0] += f_exp.pop()
        f_obs[0] += f_obs.pop()
    return chisquare(f_obs, f_exp).pvalue
