"""Serving-engine tree encoding (SGLang EAGLE/DFlash convention): first child / next sibling / flat position."""
from __future__ import annotations

import torch

from ddtree._checks import MAX_CELLS, check_int
from ddtree.tree import DraftTree, check_tree


def retrieve_encoding(tree: DraftTree, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`(retrive_index, retrive_next_token, retrive_next_sibling)`, each `[n]` long.

    retrive_index[i] = offset + i, the flat row of node i in a verify input that places this tree at `offset`;
    retrive_next_token[i] = first child of node i or -1; retrive_next_sibling[i] = next sibling or -1.
    Sibling order is node index order, which is draft rank order. `offset` is an int in [0, 2**31].
    """
    n = check_tree(tree).n_nodes
    offset = check_int("offset", offset, maximum=MAX_CELLS)
    from ddtree.kernels.tree_verify import retrieve_from_parents  # the encoding's one reference, batched
    next_token, next_sibling = retrieve_from_parents(tree.parents[None].cpu())
    return torch.arange(n, dtype=torch.long) + offset, next_token[0], next_sibling[0]


def parents_from_retrieve(next_token, next_sibling) -> torch.Tensor:
    """Inverse of the first-child / next-sibling encoding: `parents  # [n]` with parents[0] = -1.

    Every node must be reached exactly once from the root (node 0); anything else is a ValueError.
    """
    next_token = _as_index_list("next_token", next_token)
    next_sibling = _as_index_list("next_sibling", next_sibling)
    n = len(next_token)
    if len(next_sibling) != n or n == 0:
        raise ValueError(f"next_token and next_sibling must be non-empty and of one length, got {n} and {len(next_sibling)}")
    for name, arr in (("next_token", next_token), ("next_sibling", next_sibling)):
        bad = [i for i, v in enumerate(arr) if not -1 <= v < n or v == 0]
        if bad:
            raise ValueError(f"{name}[{bad[0]}] = {arr[bad[0]]} must be -1 or a node index in [1, {n})")
    if next_sibling[0] != -1:
        raise ValueError("next_sibling[0] must be -1: the root has no siblings")
    parents = [-2] * n
    parents[0] = -1
    stack = [0]
    while stack:
        node = stack.pop()
        child = next_token[node]
        while child != -1:
            if parents[child] != -2:
                raise ValueError(f"node {child} is reached twice: the arrays do not describe a tree")
            parents[child] = node
            stack.append(child)
            child = next_sibling[child]
    missing = [i for i, p in enumerate(parents) if p == -2]
    if missing:
        raise ValueError(f"nodes {missing[:8]} are not reachable from the root (node 0)")
    return torch.tensor(parents, dtype=torch.long)


def _as_index_list(name: str, arr) -> list[int]:
    if isinstance(arr, torch.Tensor):
        if arr.ndim != 1 or arr.is_floating_point():
            raise ValueError(f"{name} must be a 1-D integer tensor [n], got {arr.dtype} {tuple(arr.shape)}")
        return arr.tolist()
    if not isinstance(arr, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in arr):
        raise ValueError(f"{name} must be a 1-D integer tensor or list of ints [n]")
    return list(arr)
