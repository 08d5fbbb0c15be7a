"""Padded verify batches in the serving-engine layout, and the check that finds corrupted mask cells.

Layout (SGLang Triton backend, target-verify mode). Request b contributes q_b query rows (its tree nodes) and owns a
row-major block of q_b x (seq_len_b + q_b) mask entries in one flat bool buffer: rows are its draft tokens, columns
are its committed prefix then its draft tokens. The backend reads block b at
    mask_indptr[b] = sum over b' < b of Q * (seq_len_b' + Q),   Q = num_draft_tokens for EVERY request,
with row width seq_len_b + q_b (q_b from qo_indptr).

layout="padded" (correct): every tree is padded to Q rows, so the packer writes exactly where the backend reads.
A padding row carries the request's root token at the root's position (seq_len_b); it sees the whole committed
prefix and itself, nothing else, and no row other than itself sees it. Its output is never read.

layout="unpadded" (the bug, for reproducing it): every tree is packed with its real size n_b, blocks written
back to back at offsets computed from the real sizes, while the backend still reads at Q-based offsets. From the
request after the first tree smaller than Q on, every request reads bits of another block.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from ddtree._checks import MAX_BUDGET, check_cells, check_int
from ddtree.retrieve import retrieve_encoding
from ddtree.tree import DraftTree, tree_attention_mask

LAYOUTS = ("padded", "unpadded")


@dataclass(frozen=True, eq=False)
class VerifyBatch:
    layout: str  # "padded" or "unpadded"
    num_draft_tokens: int  # Q: rows per request the backend assumes (budget + 1)
    trees: list[DraftTree]
    seq_lens: torch.Tensor  # [B] committed prefix length per request
    n_nodes: torch.Tensor  # [B] real tree nodes per request
    qo_indptr: torch.Tensor  # [B+1] first query row of each request
    input_ids: torch.Tensor  # [rows]
    positions: torch.Tensor  # [rows] seq_len + depth
    is_padding: torch.Tensor  # [rows] bool
    custom_mask: torch.Tensor  # [sum_b q_b * (seq_len_b + q_b)] bool, as the packer wrote it
    written_indptr: torch.Tensor  # [B+1] where the packer wrote each request's block
    mask_indptr: torch.Tensor  # [B+1] where the backend reads each block (Q-based)
    retrive_index: torch.Tensor  # [B, Q] flat row of each node, -1 for padding
    retrive_next_token: torch.Tensor  # [B, Q] first child or -1
    retrive_next_sibling: torch.Tensor  # [B, Q] next sibling or -1
    candidates: torch.Tensor  # [B, Q] token of each node, -1 for padding

    @property
    def batch_size(self) -> int:
        return len(self.trees)

    def rows(self, b: int) -> int:
        """Query rows of request b (q_b)."""
        return int(self.qo_indptr[b + 1] - self.qo_indptr[b])


class MaskCell(NamedTuple):
    request: int
    row: int  # query row within the request
    col: int  # column within the request: prefix columns first, then draft columns
    expected: bool
    got: bool


def pack_verify_batch(trees, seq_lens, num_draft_tokens: int, *, layout: str = "padded") -> VerifyBatch:
    """Pack one verify forward for several requests; see the module docstring for the layouts. The whole mask
    (sum over requests of num_draft_tokens x (seq_len + num_draft_tokens)) must fit ddtree._checks.MAX_CELLS."""
    q_all = check_int("num_draft_tokens", num_draft_tokens, minimum=1, maximum=MAX_BUDGET + 1)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    trees = list(trees)
    if not trees or not all(isinstance(t, DraftTree) for t in trees):
        raise ValueError("trees must be a non-empty list of DraftTree")
    seq_lens = [check_int(f"seq_lens[{b}]", s) for b, s in enumerate(_as_list("seq_lens", seq_lens))]
    if len(seq_lens) != len(trees):
        raise ValueError(f"seq_lens must have one entry per tree: {len(trees)} trees, {len(seq_lens)} seq_lens")
    check_cells(sum(q_all * (s + q_all) for s in seq_lens),
                f"the batch's mask (sum of num_draft_tokens x (seq_lens + num_draft_tokens), {len(trees)} requests)")
    for b, tree in enumerate(trees):
        if tree.n_nodes > q_all:
            raise ValueError(f"trees[{b}] has {tree.n_nodes} nodes > num_draft_tokens = {q_all}")
        if tree.tokens[0] < 0:
            raise ValueError(f"trees[{b}] has no root token; pass tree.with_root_token(bonus_token)")

    ids, pos, pad, masks, written, read, qo = [], [], [], [], [0], [0], [0]
    r_index, r_next, r_sib, cands = [], [], [], []
    for b, (tree, seq_len) in enumerate(zip(trees, seq_lens)):
        n = tree.n_nodes
        q = q_all if layout == "padded" else n
        root = tree.tokens[:1]
        ids.append(torch.cat([tree.tokens, root.expand(q - n)]))
        pos.append(torch.cat([tree.depths, torch.zeros(q - n, dtype=torch.long)]) + seq_len)
        pad.append(torch.arange(q) >= n)
        masks.append(tree_attention_mask(tree, seq_len, q).flatten())
        written.append(written[-1] + q * (seq_len + q))
        read.append(read[-1] + q_all * (seq_len + q_all))
        index, next_token, next_sibling = retrieve_encoding(tree, offset=qo[-1])
        qo.append(qo[-1] + q)
        r_index.append(_pad(index, q_all))
        r_next.append(_pad(next_token, q_all))
        r_sib.append(_pad(next_sibling, q_all))
        cands.append(_pad(tree.tokens, q_all))

    long = lambda xs: torch.tensor(xs, dtype=torch.long)  # noqa: E731
    return VerifyBatch(
        layout=layout, num_draft_tokens=q_all, trees=trees,
        seq_lens=long(seq_lens), n_nodes=long([t.n_nodes for t in trees]), qo_indptr=long(qo),
        input_ids=torch.cat(ids), positions=torch.cat(pos), is_padding=torch.cat(pad),
        custom_mask=torch.cat(masks), written_indptr=long(written), mask_indptr=long(read),
        retrive_index=torch.stack(r_index), retrive_next_token=torch.stack(r_next),
        retrive_next_sibling=torch.stack(r_sib), candidates=torch.stack(cands),
    )


def expected_mask(batch: VerifyBatch, b: int) -> torch.Tensor:
    """`[q_b, seq_len_b + q_b]` bool: the ancestor mask request b's rows should get (padding as documented)."""
    b = _check_request(batch, b)
    return tree_attention_mask(batch.trees[b], int(batch.seq_lens[b]), batch.rows(b))


def effective_mask(batch: VerifyBatch, b: int) -> torch.Tensor:
    """`[q_b, seq_len_b + q_b]` bool: the mask the backend actually applies to request b.

    It reads the flat buffer at mask_indptr[b] with row width seq_len_b + q_b; cells past the end of the buffer
    (an out-of-bounds read in a real kernel) read as False.
    """
    b = _check_request(batch, b)
    q, width = batch.rows(b), int(batch.seq_lens[b]) + batch.rows(b)
    start = int(batch.mask_indptr[b])
    inside = batch.custom_mask[start:start + q * width]
    cells = torch.zeros(q * width, dtype=torch.bool)
    cells[:inside.numel()] = inside
    return cells.view(q, width)


def check_verify_batch(batch: VerifyBatch) -> list[MaskCell]:
    """Every mask cell where what the backend reads differs from the request's ancestor mask; empty when all is well."""
    if not isinstance(batch, VerifyBatch):
        raise ValueError(f"batch must be a VerifyBatch, got {type(batch).__name__}")
    bad = []
    for b in range(batch.batch_size):
        want, got = expected_mask(batch, b), effective_mask(batch, b)
        for row, col in (want != got).nonzero().tolist():
            bad.append(MaskCell(b, row, col, bool(want[row, col]), bool(got[row, col])))
    return bad


def _check_request(batch: VerifyBatch, b) -> int:
    if not isinstance(batch, VerifyBatch):
        raise ValueError(f"batch must be a VerifyBatch, got {type(batch).__name__}")
    return check_int("b (request index)", b, maximum=batch.batch_size - 1)


def _pad(x: torch.Tensor, length: int) -> torch.Tensor:
    return torch.cat([x, torch.full((length - x.shape[0],), -1, dtype=torch.long)])


def _as_list(name: str, xs) -> list:
    if isinstance(xs, torch.Tensor):
        if xs.ndim != 1:
            raise ValueError(f"{name} must be 1-D [batch], got shape {tuple(xs.shape)}")
        return xs.tolist()
    if not isinstance(xs, (list, tuple)):
        raise ValueError(f"{name} must be a list of ints or a 1-D tensor [batch], got {type(xs).__name__}")
    return list(xs)
