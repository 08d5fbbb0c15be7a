"""A round's tree structure in one Triton launch: ancestor bitmask and retrieve encoding of padded trees.

From `parents  # [B, Q]` (-1 for roots and padding rows; parents precede children) it writes what the verify
forward and the walk read: `bits  # [B, Q, ceil(Q / 32)] int32` (ddtree.tree.ancestor_bits: bit
j of row i when node j is an ancestor-or-self of node i) and `next_token, next_sibling  # [B, Q] long`
(ddtree.kernels.tree_verify.retrieve_from_parents: first child, next sibling in node order, -1 for none). Those two
torch functions are the references; this kernel replaces their ~50 small launches in the device round.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_tensor


def tree_structure(parents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`(bits, next_token, next_sibling)` of `parents  # [B, Q]`; no host synchronisation."""
    check_tensor("parents", parents, ndim=2, shape="[B, Q]", floating=False)
    batch, rows = parents.shape
    words = (rows + 31) // 32
    parents = parents.to(torch.int32).contiguous()
    bits = torch.empty(batch, rows, words, dtype=torch.int32, device=parents.device)
    links = torch.empty(2, batch, rows, dtype=torch.long, device=parents.device)
    block_q = triton.next_power_of_2(rows)
    _structure_kernel[(batch,)](parents, bits, links, batch, rows, words, BLOCK_Q=block_q,
                                BLOCK_W=triton.next_power_of_2(words), BLOCK_J=max(8, 8192 // block_q))
    return bits, links[0], links[1]


@triton.jit
def _structure_kernel(parents_ptr, bits_ptr, links_ptr, batch, rows, words,
                      BLOCK_Q: tl.constexpr, BLOCK_W: tl.constexpr, BLOCK_J: tl.constexpr):
    b = tl.program_id(0)
    row_base = parents_ptr + b * rows
    i = tl.arange(0, BLOCK_Q)
    i_ok = i < rows
    parent = tl.load(row_base + i, mask=i_ok, other=-1)

    # ancestor-or-self bits: walk every row up to its root at once
    word = tl.arange(0, BLOCK_W)
    bits = tl.zeros([BLOCK_Q, BLOCK_W], dtype=tl.int32)
    cur = tl.where(i_ok, i, -1)
    while tl.max(cur, axis=0) >= 0:
        live = cur >= 0
        bit = tl.full([BLOCK_Q], 1, tl.int32) << (tl.where(live, cur, 0) % 32)
        hit = live[:, None] & (word[None, :] == (cur // 32)[:, None])
        bits = bits | tl.where(hit, bit[:, None], 0)
        cur = tl.where(live, tl.load(row_base + tl.where(live, cur, 0), mask=live, other=-1), -1)
    tl.store(bits_ptr + (b * rows + i)[:, None] * words + word[None, :], bits,
             mask=i_ok[:, None] & (word < words)[None, :])

    # first child and next sibling: the smallest matching node index
    first_child = tl.full([BLOCK_Q], BLOCK_Q, tl.int32)
    next_sibling = tl.full([BLOCK_Q], BLOCK_Q, tl.int32)
    for j0 in range(0, rows, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        j_parent = tl.load(row_base + j, mask=j < rows, other=-2)
        child = j_parent[None, :] == i[:, None]
        sibling = (j_parent[None, :] == parent[:, None]) & (parent[:, None] >= 0) & (j[None, :] > i[:, None])
        first_child = tl.minimum(first_child, tl.min(tl.where(child, j[None, :], BLOCK_Q), axis=1))
        next_sibling = tl.minimum(next_sibling, tl.min(tl.where(sibling, j[None, :], BLOCK_Q), axis=1))
    links = links_ptr + b * rows + i
    tl.store(links, tl.where(first_child < BLOCK_Q, first_child, -1).to(tl.int64), mask=i_ok)
    tl.store(links + batch * rows, tl.where(next_sibling < BLOCK_Q, next_sibling, -1).to(tl.int64), mask=i_ok)
