"""Draft trees: DDTree's best-first choice of the `budget` best prefix-closed paths from one drafter pass.

From per-depth draft distributions q_1..q_D the score of a path (t_1..t_d) is sum_i log q_i(t_i). The best
`budget` prefix-closed paths are found with a heap over the top-K tokens of each depth (K = min(budget, vocab)):
pop the best candidate, make it a node, push its next sibling (same parent, rank + 1) and its first child
(depth + 1, rank 0). Nodes come out in pop order, so parents precede children.

Tie-breaking (deterministic):
- within a depth, tokens are ranked by draft log-prob, highest first, equal log-probs by lower token id;
- between heap candidates of equal score: lower depth first, then lower parent node index, then lower rank.
Candidates whose score is -inf (zero draft probability) are never selected, so a budget larger than the number of
paths the drafter allows is capped, not an error; a budget that still exceeds MAX_BUDGET (4096) nodes is refused.

Tree tensors always live on the CPU: they are small and mostly walked by Python code. A DraftTree checks its
structure once, when it is made (parents precede children, depths follow parents, distinct sibling tokens).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ddtree._checks import MAX_BUDGET, TOKEN_LIMIT, check_cells, check_int, check_logits, check_temperature, \
    check_token

_FIELDS = ("tokens", "parents", "depths", "ranks", "node_logws")


@dataclass(frozen=True, eq=False)
class DraftTree:
    tokens: torch.Tensor  # [n] long; tokens[0] is the root (the previous bonus token), -1 until set
    parents: torch.Tensor  # [n] long; parents[0] = -1, parents[i] < i
    depths: torch.Tensor  # [n] long; root 0
    ranks: torch.Tensor  # [n] long; top-K rank of the token at its depth, root -1
    node_logws: torch.Tensor  # [n] float64; sum of draft log-probs along the path, root 0.0

    def __post_init__(self):
        _check_structure(self)

    @property
    def n_nodes(self) -> int:
        return self.tokens.shape[0]

    @property
    def max_depth(self) -> int:
        return int(self.depths.max())

    def children(self, i: int) -> list[int]:
        """Children of node i in sibling order (= node index order = draft rank order)."""
        return (self.parents == i).nonzero().flatten().tolist()

    def path(self, i: int) -> list[int]:
        """Node indices from the root to node i, both included."""
        if not 0 <= i < self.n_nodes:
            raise ValueError(f"node index must be in [0, {self.n_nodes}), got {i}")
        parents = self.parents.tolist()
        out = [i]
        while parents[out[-1]] >= 0:
            out.append(parents[out[-1]])
        return out[::-1]

    def with_root_token(self, token: int) -> DraftTree:
        """A copy whose root carries `token` (the bonus token committed by the previous round)."""
        tokens = self.tokens.clone()
        tokens[0] = check_token("token", token)
        return DraftTree(tokens, self.parents, self.depths, self.ranks, self.node_logws)

    def first(self, n_nodes: int) -> DraftTree:
        """The first `n_nodes` nodes (root included): DDTree's nodes come in pop order, so for a DDTree tree this is
        the tree of budget n_nodes - 1."""
        n = check_int("n_nodes", n_nodes, minimum=1)
        return DraftTree(*(getattr(self, name)[:n] for name in _FIELDS))

    def to_dict(self) -> dict:
        """JSON-safe dict of plain lists."""
        return {name: getattr(self, name).tolist() for name in _FIELDS}

    @staticmethod
    def from_dict(d: dict) -> DraftTree:
        """Inverse of to_dict; checks that the lists describe a valid tree."""
        if not isinstance(d, dict) or set(d) != set(_FIELDS):
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"tree dict must have exactly the keys {list(_FIELDS)}, got {got}")
        for name in _FIELDS:
            v = d[name]
            ok_item = (lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)) if name == "node_logws" else (
                lambda x: isinstance(x, int) and not isinstance(x, bool) and -1 <= x < TOKEN_LIMIT)
            if not isinstance(v, list) or not all(ok_item(x) for x in v):
                raise ValueError(f"tree dict field {name!r} must be a list of "
                                 f"{'numbers' if name == 'node_logws' else f'ints in [-1, {TOKEN_LIMIT})'}")
        n = len(d["tokens"])
        if n == 0 or any(len(d[name]) != n for name in _FIELDS):
            raise ValueError(f"tree dict fields must be non-empty lists of one length, got lengths "
                             f"{ {name: len(d[name]) for name in _FIELDS} }")
        if not all(finite(x) for x in d["node_logws"]):
            raise ValueError("tree dict field 'node_logws' must be finite")
        try:
            return DraftTree(*(torch.tensor(d[name], dtype=torch.float64 if name == "node_logws" else torch.long)
                               for name in _FIELDS))
        except ValueError as e:
            raise ValueError(f"tree dict: {e}") from None


def finite(x: int | float) -> bool:
    """math.isfinite, False for an int too large for a float."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def check_tree(tree, name: str = "tree") -> DraftTree:
    """`tree` if it is a DraftTree (its structure was checked when it was made), else a ValueError naming `name`."""
    if not isinstance(tree, DraftTree):
        raise ValueError(f"{name} must be a DraftTree, got {type(tree).__name__}")
    return tree


def _check_structure(t: DraftTree) -> None:
    """ValueError unless the fields describe a tree: 1-D CPU tensors of one length n >= 1 (long, node_logws
    floating), node 0 the root (parent -1, depth 0, rank -1, token -1 or an id), parents[i] in [0, i) (parents
    precede children, so no cycles), depth = parent's depth + 1, ranks >= 0, token ids in [0, 2**31 - 1), no two
    siblings with one token (the walk would be ambiguous), finite log-weights. Vectorised: a few small tensor ops."""
    for name in _FIELDS:
        v = getattr(t, name)
        want = "floating" if name == "node_logws" else "torch.long"
        if not isinstance(v, torch.Tensor) or v.ndim != 1 or v.device.type != "cpu" or \
                not (v.is_floating_point() if name == "node_logws" else v.dtype == torch.long):
            got = f"{v.dtype} {tuple(v.shape)} on {v.device}" if isinstance(v, torch.Tensor) else type(v).__name__
            raise ValueError(f"DraftTree.{name} must be a 1-D {want} CPU tensor [n], got {got}")
    n = t.tokens.shape[0]
    lengths = [getattr(t, name).shape[0] for name in _FIELDS]
    if n == 0 or any(length != n for length in lengths):
        raise ValueError(f"DraftTree fields must have one length n >= 1, got lengths {dict(zip(_FIELDS, lengths))}")
    tokens, parents, depths, ranks = t.tokens, t.parents, t.depths, t.ranks
    if int(parents[0]) != -1 or int(depths[0]) != 0 or int(ranks[0]) != -1 or not -1 <= int(tokens[0]) < TOKEN_LIMIT:
        raise ValueError("DraftTree node 0 must be the root: parents[0] = -1, depths[0] = 0, ranks[0] = -1, "
                         f"tokens[0] = -1 or a token id, got {int(parents[0])}, {int(depths[0])}, {int(ranks[0])}, "
                         f"{int(tokens[0])}")
    p = parents[1:]
    checks = (("parents", (p < 0) | (p >= torch.arange(1, n)), "must be in [0, i): parents precede children"),
              ("depths", depths[1:] != depths[p.clamp(0, n - 1)] + 1, "must be its parent's depth + 1"),
              ("ranks", ranks[1:] < 0, "must be >= 0"),
              ("tokens", (tokens[1:] < 0) | (tokens[1:] >= TOKEN_LIMIT), f"must be a token id in [0, {TOKEN_LIMIT})"))
    for name, bad, rule in checks:
        if bad.any():
            i = int(bad.nonzero()[0]) + 1
            raise ValueError(f"DraftTree.{name}[{i}] = {int(getattr(t, name)[i])} {rule}")
    if n > 1 and torch.unique(p * TOKEN_LIMIT + tokens[1:]).numel() != n - 1:
        raise ValueError("DraftTree.tokens: two children of one parent carry the same token (siblings must differ)")
    if not torch.isfinite(t.node_logws).all():
        raise ValueError("DraftTree.node_logws must be finite")


def build_tree(draft_logits: torch.Tensor, budget: int, *, draft_temperature: float = 1.0) -> DraftTree:
    """Select up to `budget` non-root nodes from `draft_logits  # [depth, vocab]` (positions 1..depth after the root)."""
    check_logits("draft_logits", draft_logits, shape="[depth, vocab]")
    return _select(_draft_logprobs(draft_logits, draft_temperature), check_budget(budget, *draft_logits.shape))


def build_trees(draft_logits: torch.Tensor, budget: int, *, draft_temperature: float = 1.0) -> list[DraftTree]:
    """build_tree for every request of `draft_logits  # [batch, depth, vocab]`."""
    check_logits("draft_logits", draft_logits, shape="[batch, depth, vocab]")
    budget = check_budget(budget, *draft_logits.shape[1:])
    return [_select(logq, budget) for logq in _draft_logprobs(draft_logits, draft_temperature)]


def check_budget(budget, depth: int, vocab: int) -> int:
    """`budget` capped at the number of paths `depth` positions over `vocab` tokens allow (sum of vocab**d); a
    capped budget above MAX_BUDGET is a ValueError (the heap would run for ever and the masks not fit)."""
    budget = check_int("budget", budget)
    paths, level = 0, 1
    for _ in range(depth):
        level *= vocab
        paths += level
        if paths >= budget:
            break
    capped = min(budget, paths)
    if capped > MAX_BUDGET:
        raise ValueError(f"budget must be <= {MAX_BUDGET} draft-tree nodes (ddtree._checks.MAX_BUDGET), got {budget}")
    return capped


def root_tree(token: int) -> DraftTree:
    """The tree of an autoregressive step: the root alone."""
    return DraftTree(tokens=torch.tensor([check_token("token", token)]), parents=torch.tensor([-1]),
                     depths=torch.tensor([0]), ranks=torch.tensor([-1]),
                     node_logws=torch.zeros(1, dtype=torch.float64))


def chain_tree(draft_logits: torch.Tensor, *, draft_temperature: float = 1.0) -> DraftTree:
    """Vanilla DFlash's single path: the best token at every depth (ties by lower token id), as a chain tree."""
    check_logits("draft_logits", draft_logits, shape="[depth, vocab]")
    top_logq, top_tokens = ranked_top_k(_draft_logprobs(draft_logits, draft_temperature), 1)
    depth = top_tokens.shape[0]
    return DraftTree(
        tokens=torch.cat([torch.tensor([-1]), top_tokens[:, 0].cpu()]),
        parents=torch.arange(-1, depth),
        depths=torch.arange(depth + 1),
        ranks=torch.cat([torch.tensor([-1]), torch.zeros(depth, dtype=torch.long)]),
        node_logws=torch.cat([torch.zeros(1, dtype=torch.float64), top_logq[:, 0].double().cpu().cumsum(0)]),
    )


def _draft_logprobs(draft_logits: torch.Tensor, draft_temperature: float) -> torch.Tensor:
    draft_temperature = check_temperature("draft_temperature", draft_temperature, allow_zero=False)
    logq = torch.log_softmax(draft_logits.float() / draft_temperature, dim=-1)
    if torch.isnan(logq).any():  # logits / T overflowed (a tiny T or huge logits): shift by the max, in float64
        x = draft_logits.double()
        logq = torch.log_softmax((x - x.amax(-1, keepdim=True)) / draft_temperature, dim=-1).float()
    return logq


def _select(logq: torch.Tensor, budget: int) -> DraftTree:
    """Best-first over the top-K tokens of each depth; `logq  # [depth, vocab]` draft log-probs."""
    depth, vocab = logq.shape
    k = min(budget, vocab)
    if k == 0 or depth == 0:
        return best_first([], [], budget)[0]
    top_logq, top_tokens = ranked_top_k(logq, k)
    return best_first(top_logq.double().cpu().tolist(), top_tokens.cpu().tolist(), budget)[0]


def best_first(logq: list[list[float]], tokens: list[list[int]], max_pops: int,
               complete: list[bool] | None = None) -> tuple[DraftTree, int]:
    """DDTree's selection, the reference: pop the highest-scoring prefix (score = sum of its draft log-probs; equal
    scores by lower depth, parent, rank) until `max_pops` nodes, pushing each pop's next sibling and first child.
    `logq[d]`, `tokens[d]`: the candidates known at depth d + 1, best first (equal log-probs by lower token id), -inf
    for probability 0 (never popped). `complete[d]` False where ranks beyond those known exist (a score at most the
    last known's): then a pop is certain only while no unknown rank could outscore it. -> (the tree, root token -1,
    node i the i-th pop; `exact`: how many of its pops are certainly the selection's, max_pops when all are)."""
    complete = [True] * len(logq) if complete is None else complete
    out_tokens, parents, depths, ranks, logws = [-1], [-1], [0], [-1], [0.0]
    known: list[tuple] = []  # (-score, depth, parent node, rank, parent score); the first four are unique
    unknown: list[tuple] = []  # (-upper bound of the score, depth, parent node, rank) of a first unknown rank

    def push(d: int, parent: int, r: int, parent_score: float) -> None:
        lq = logq[d - 1]
        if r < len(lq):
            if lq[r] > -math.inf:
                heapq.heappush(known, (-(parent_score + lq[r]), d, parent, r, parent_score))
        elif not complete[d - 1]:
            heapq.heappush(unknown, (-(parent_score + (lq[-1] if lq else 0.0)), d, parent, r))

    if logq:
        push(1, 0, 0, 0.0)
    exact = None
    while known and len(out_tokens) <= max_pops:
        if exact is None and unknown and unknown[0] < known[0][:4]:
            exact = len(out_tokens) - 1
        neg_score, d, parent, r, parent_score = heapq.heappop(known)
        node = len(out_tokens)
        out_tokens.append(tokens[d - 1][r])
        parents.append(parent)
        depths.append(d)
        ranks.append(r)
        logws.append(-neg_score)
        push(d, parent, r + 1, parent_score)
        if d < len(logq):
            push(d + 1, node, 0, -neg_score)
    if exact is None:
        exact = len(out_tokens) - 1 if unknown and len(out_tokens) <= max_pops else max_pops
    long = lambda x: torch.tensor(x, dtype=torch.long)  # noqa: E731
    tree = DraftTree(tokens=long(out_tokens), parents=long(parents), depths=long(depths), ranks=long(ranks),
                     node_logws=torch.tensor(logws, dtype=torch.float64))
    return tree, exact


def ranked_top_k(logq: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k best tokens per depth, best first, equal log-probs by lower token id: `([depth, k], [depth, k])`."""
    values, tokens = torch.topk(logq, k, dim=-1)
    kth = values[:, -1:]
    tied = logq == kth  # [depth, vocab]
    counts = tied.sum(-1)  # [depth] ids at the cut's value
    if (counts > (values == kth).sum(-1)).any():
        # a tie straddles the cut and topk may have kept any of the tied ids: keep everything above the cut and
        # the lowest ids of the tie (coarse logits, e.g. bfloat16, tie often; a full sort would cost the round)
        keep = logq > kth  # [depth, vocab]
        rows, ids = tied.nonzero(as_tuple=True)  # by depth, then id
        rank = torch.arange(len(rows), device=rows.device) - (counts.cumsum(0) - counts)[rows]  # within its depth
        first = rank < (k - keep.sum(-1))[rows]  # the lowest tied ids fill the selection up to k
        keep[rows[first], ids[first]] = True
        tokens = keep.nonzero()[:, 1].view(logq.shape[0], k)  # by id
    else:
        tokens = tokens.sort(dim=-1).values  # the selected set is unique; order it by id, then stably by value
    values, order = logq.gather(-1, tokens).sort(dim=-1, descending=True, stable=True)
    return values, tokens.gather(-1, order)


def visibility(tree: DraftTree) -> torch.Tensor:
    """`vis  # [n, n]` bool: vis[i, j] is True when node j is an ancestor of node i or i itself."""
    n = check_tree(tree).n_nodes
    check_cells(n * n, f"visibility of a {n}-node tree")
    return bits_visible(ancestor_bits(tree.parents[None]), n)[0]


def ancestor_bits(parents: torch.Tensor) -> torch.Tensor:
    """The ancestor relation, the one reference (the host's trees and the device's kernels read it): `parents  # [B, Q]`
    (-1 for roots and padding rows, unchecked) -> `bits  # [B, Q, ceil(Q / 32)] int32`, bit j of row i set when node
    j is an ancestor of i or i itself. Pointer jumping, ceil(log2 Q) gather/or steps, no host synchronisation
    (CUDA-graph capturable); ddtree.kernels.tree_attention.ancestor_bitmask checks its input first."""
    batch, rows = parents.shape
    idx = torch.arange(rows, device=parents.device)
    words = (rows + 31) // 32
    one = torch.ones((), dtype=torch.int32, device=parents.device)
    bits = torch.zeros(batch, rows, words, dtype=torch.int32, device=parents.device)
    bits[:, idx, idx // 32] = torch.bitwise_left_shift(one, (idx % 32).to(torch.int32))  # self bits
    jump = parents.long()  # ancestor 2^k steps up, -1 past the root
    for _ in range(max(rows - 1, 1).bit_length()):
        has = jump >= 0
        src = jump.clamp_min(0)
        up = bits.gather(1, src[..., None].expand(-1, -1, words))
        bits = bits | torch.where(has[..., None], up, 0)
        jump = torch.where(has, jump.gather(1, src), -1)
    return bits


def bits_visible(bits: torch.Tensor, rows: int) -> torch.Tensor:
    """`visible  # [B, Q, Q]` bool unpacked from `bits  # [B, Q, ceil(Q / 32)]` (ancestor_bits)."""
    col = torch.arange(rows, device=bits.device)
    return (bits[..., col // 32] >> (col % 32).to(torch.int32)) & 1 == 1


def tree_attention_mask(tree: DraftTree, prefix_len: int, rows: int | None = None) -> torch.Tensor:
    """`mask  # [rows, prefix_len + rows]` bool: every node sees the whole committed prefix and its
    ancestors-or-self. rows (default: the tree's n nodes) > n pads the tree as a padded verify batch does: a
    padding row sees the prefix and itself."""
    n = check_tree(tree).n_nodes
    prefix_len = check_int("prefix_len", prefix_len)
    rows = n if rows is None else check_int("rows", rows, minimum=n)
    check_cells(rows * (prefix_len + rows),
                f"tree_attention_mask [rows, prefix_len + rows], rows = {rows}, prefix_len = {prefix_len}")
    mask = torch.zeros(rows, prefix_len + rows, dtype=torch.bool)
    mask[:, :prefix_len] = True
    mask[:n, prefix_len:prefix_len + n] = visibility(tree)
    pad = torch.arange(n, rows)
    mask[pad, prefix_len + pad] = True
    return mask


class TreeBatch(NamedTuple):
    """The trees of a batch, each padded to the same Q rows (the layout of a padded verify batch and of the native
    engine's round). Padding rows: token, parent and rank -1, depth -1, log-weight -inf. The root's token is -1
    (the bonus token is put in at packing)."""
    tokens: torch.Tensor  # [B, Q] long
    parents: torch.Tensor  # [B, Q] long
    depths: torch.Tensor  # [B, Q] long
    ranks: torch.Tensor  # [B, Q] long
    node_logws: torch.Tensor  # [B, Q] float64
    n_nodes: torch.Tensor  # [B] long: real nodes per request (root included); the rest of each row is padding

    @staticmethod
    def from_trees(trees: list[DraftTree], rows: int) -> TreeBatch:
        """Pad DraftTrees to `rows` rows each (root tokens are dropped to -1)."""
        rows = check_int("rows", rows, minimum=1)
        if not trees or not all(isinstance(t, DraftTree) for t in trees):
            raise ValueError("trees must be a non-empty list of DraftTree")
        if max(t.n_nodes for t in trees) > rows:
            raise ValueError(f"rows must be >= every tree's node count, got {rows} < {max(t.n_nodes for t in trees)}")
        pad = {"tokens": -1, "parents": -1, "depths": -1, "ranks": -1, "node_logws": -math.inf}
        out = {}
        for name, value in pad.items():
            x = torch.full((len(trees), rows), value, dtype=torch.float64 if name == "node_logws" else torch.long)
            for b, t in enumerate(trees):
                x[b, :t.n_nodes] = getattr(t, name)
            out[name] = x
        out["tokens"][:, 0] = -1
        return TreeBatch(**out, n_nodes=torch.tensor([t.n_nodes for t in trees]))

    def split(self, roots: list[int] | None = None) -> list[DraftTree]:
        """The per-request DraftTrees (on the CPU), rooted at `roots` (the bonus tokens) when given."""
        out = []
        for b, n in enumerate(self.n_nodes.tolist()):
            tree = DraftTree(*(x[b, :n].cpu() for x in self[:5]))
            out.append(tree if roots is None else tree.with_root_token(roots[b]))
        return out

    def first(self, rows: int) -> TreeBatch:
        """The first `rows` rows of every tree (contiguous copies): DDTree's nodes come in pop order, so a tree's
        first rows are the tree of budget rows - 1. `rows`: an int in [1, Q] (the root's row is always kept). No
        host synchronisation."""
        rows = check_int("rows", rows, minimum=1, maximum=self.tokens.shape[1])
        return TreeBatch(*(x[:, :rows].contiguous() for x in self[:5]), self.n_nodes.clamp_max(rows))

    def truncate(self, n_nodes: torch.Tensor) -> TreeBatch:
        """Keep the first `n_nodes  # [B]` nodes of each tree (at most its own): DDTree's nodes come in pop order, so
        a tree's first n nodes are the tree of budget n - 1. No host synchronisation."""
        n = torch.minimum(self.n_nodes, n_nodes)
        pad = torch.arange(self.tokens.shape[1], device=n.device)[None, :] >= n[:, None]  # [B, Q]
        fill = lambda x, v: x.masked_fill(pad, v)  # noqa: E731
        return TreeBatch(fill(self.tokens, -1), fill(self.parents, -1), fill(self.depths, -1), fill(self.ranks, -1),
                         fill(self.node_logws, -math.inf), n)
