"""Batched tree verification over the serving-engine retrieve encoding (Triton), beside its torch reference.

Inputs per request b (Q = num_draft_tokens; padding nodes are never reached):
    candidates    # [B, Q] token of each node (node 0 = root)
    next_token    # [B, Q] first child or -1   (retrive_next_token)
    next_sibling  # [B, Q] next sibling or -1  (retrive_next_sibling)
Outputs: accepted  # [B, Q] accepted node indices, root first, padded with -1;
         accept_len  # [B] accepted nodes including the root (= tokens committed this round);
         bonus  # [B] the target's token at the last accepted node.

Greedy: from the root, move to the child whose token equals the target's argmax at the current node.

Sampled, exact (DOMAIN rule B): at the current node take its coin u; visit the children in sibling order adding
their target probabilities; move to the first child where u < cumulative mass. If none is accepted, the bonus is
drawn from the target distribution with the visited (rejected) children's tokens removed, by the inverse CDF at
residual_coin * residual mass: the first token whose cumulative residual mass exceeds it. Walk arithmetic is
float64 whatever the probs dtype, so kernel and reference take the same decisions given the same uniforms. If
rounding leaves no token past that point, the bonus is the last token with residual mass, and if every token was a
rejected child (probability zero in exact arithmetic), the last token with positive probability.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ddtree.kernels._checks import check_dim, check_same_device, check_tensor

BLOCK_V = 1024
ARGMAX_BLOCK = 4096  # vocabulary entries per row_argmax program


def verify_greedy_tree(candidates, next_token, next_sibling, target):
    """Greedy walk of every request: `(accepted [B, Q], accept_len [B], bonus [B])`, long tensors.

    target: `[B, Q]` integer argmax per node, or `[B, Q, V]` float logits (argmax taken here by row_argmax, first
    max wins).
    """
    candidates, next_token, next_sibling = _check_tree(candidates, next_token, next_sibling)
    target = _target_argmax(target, candidates.shape, lambda logits: row_argmax(logits)[0])
    batch, rows = candidates.shape
    accepted, accept_len, bonus = _outputs(batch, rows, candidates.device)
    _greedy_kernel[(batch,)](candidates, next_token, next_sibling, target, accepted, accept_len, bonus, rows)
    return accepted, accept_len, bonus


def row_argmax(logits):
    """`(argmax [B, Q] long, nonfinite [] bool)` of `logits  # [B, Q, V]`: each row's first maximum and whether any
    entry is NaN or infinite: two launches (each vocabulary chunk's maximum, then each row's) and a reduction."""
    check_tensor("logits", logits, ndim=3, shape="[B, Q, V]", floating=True)
    vocab = logits.shape[-1]
    flat = logits.reshape(-1, vocab).contiguous()  # [N, V]
    n, chunks = flat.shape[0], triton.cdiv(vocab, ARGMAX_BLOCK)
    best = torch.empty(n, chunks, dtype=torch.float32, device=flat.device)  # each chunk's maximum
    where = torch.empty(n, chunks, dtype=torch.int32, device=flat.device)  # its first index
    odd = torch.empty(n, chunks, dtype=torch.int32, device=flat.device)  # 1: a NaN or an infinity in the chunk
    argmax = torch.empty(n, dtype=torch.long, device=flat.device)
    bad = torch.empty(n, dtype=torch.int32, device=flat.device)
    if n:
        _chunk_argmax_kernel[(n, chunks)](flat, best, where, odd, vocab, chunks, BLOCK=ARGMAX_BLOCK, num_warps=8)
        _row_argmax_kernel[(n,)](best, where, odd, argmax, bad, chunks, vocab, CHUNKS=triton.next_power_of_2(chunks))
    return argmax.view(logits.shape[:-1]), bad.any()


def row_argmax_ref(logits):
    """Plain torch reference of row_argmax."""
    return logits.argmax(-1), ~torch.isfinite(logits).all()


def verify_sampled_tree(candidates, next_token, next_sibling, probs, coins, residual_coins):
    """Exact rule-B walk of every request: `(accepted [B, Q], accept_len [B], bonus [B])`, long tensors.

    probs  # [B, Q, V] target sampling distribution per node (temperature / top-p applied, rows sum to 1);
    coins, residual_coins  # [B, Q] uniforms in [0, 1), one of each per node.
    """
    candidates, next_token, next_sibling = _check_tree(candidates, next_token, next_sibling)
    batch, rows = candidates.shape
    probs, coins, residual_coins = _check_sampling(probs, coins, residual_coins, batch, rows, candidates.device)
    accepted, accept_len, bonus = _outputs(batch, rows, candidates.device)
    vocab = probs.shape[-1]
    chunks = triton.cdiv(vocab, BLOCK_V)
    last = torch.empty(batch, dtype=torch.int32, device=candidates.device)  # the last accepted node
    totals = torch.empty(batch, chunks, dtype=torch.float64, device=candidates.device)  # residual mass per chunk
    tails = torch.empty(2, batch, chunks, dtype=torch.int32, device=candidates.device)  # last residual, positive
    _sampled_walk_kernel[(batch,)](candidates, next_token, next_sibling, probs, coins, accepted, accept_len, last,
                                   rows, vocab)
    _residual_chunk_kernel[(batch, chunks)](candidates, next_token, next_sibling, probs, last, totals, tails, rows,
                                            vocab, BLOCK_V=BLOCK_V)
    _residual_draw_kernel[(batch,)](candidates, next_token, next_sibling, probs, residual_coins, last, totals, tails,
                                    bonus, rows, vocab, chunks, BLOCK_V=BLOCK_V,
                                    CHUNKS=triton.next_power_of_2(chunks))
    return accepted.long(), accept_len.long(), bonus.long()


def retrieve_from_parents(parents):
    """`(next_token, next_sibling)  # [B, Q] long` of padded trees `parents  # [B, Q]` (-1 for the root and padding
    rows, which no node reaches): ddtree.retrieve_encoding on the device, batched, with no host synchronisation.
    Sibling order is node index order."""
    check_tensor("parents", parents, ndim=2, shape="[B, Q]", floating=False)
    batch, rows = parents.shape
    parents = parents.long()
    nodes = torch.arange(rows, device=parents.device)
    dump = torch.where(parents >= 0, parents, rows)  # the root's and padding's "parent" is a spare column
    first = torch.full((batch, rows + 1), rows, dtype=torch.long, device=parents.device)
    first.scatter_reduce_(1, dump, nodes.expand(batch, -1), reduce="amin")
    next_token = torch.where(first[:, :rows] < rows, first[:, :rows], -1)
    later_sibling = (parents[:, None, :] == parents[:, :, None]) & (nodes[None, :] > nodes[:, None]) \
        & (parents[:, None, :] >= 0)  # [B, Q, Q]: node j is a later sibling of node i
    nearest = torch.where(later_sibling, nodes, rows).amin(-1)
    return next_token, torch.where(nearest < rows, nearest, -1)


def verify_greedy_tree_ref(candidates, next_token, next_sibling, target):
    """Plain torch reference of verify_greedy_tree: one Python walk per request."""
    candidates, next_token, next_sibling = (x.long().cpu() for x in _check_tree(candidates, next_token, next_sibling))
    target = _target_argmax(target, candidates.shape).long().cpu()
    batch, rows = candidates.shape
    accepted = torch.full((batch, rows), -1, dtype=torch.long)
    accept_len = torch.ones(batch, dtype=torch.long)
    bonus = torch.empty(batch, dtype=torch.long)
    for b in range(batch):
        cand, nxt, sib, want = (x[b].tolist() for x in (candidates, next_token, next_sibling, target))
        path = [0]
        child = nxt[0]
        while child != -1:
            if cand[child] == want[path[-1]]:
                path.append(child)
                child = nxt[child]
            else:
                child = sib[child]
        accepted[b, :len(path)] = torch.tensor(path)
        accept_len[b] = len(path)
        bonus[b] = target[b, path[-1]]
    return accepted, accept_len, bonus


def verify_sampled_tree_ref(candidates, next_token, next_sibling, probs, coins, residual_coins):
    """Plain torch reference of verify_sampled_tree, vectorised over requests (one walk step per loop turn)."""
    candidates, next_token, next_sibling = _check_tree(candidates, next_token, next_sibling)
    batch, rows = candidates.shape
    probs, coins, residual_coins = _check_sampling(probs, coins, residual_coins, batch, rows, candidates.device)
    cand, nxt, sib = candidates.long(), next_token.long(), next_sibling.long()
    p64, u64, r64 = probs.double(), coins.double(), residual_coins.double()
    req = torch.arange(batch, device=cand.device)
    accepted = torch.full((batch, rows), -1, dtype=torch.long, device=cand.device)
    accepted[:, 0] = 0
    count = torch.ones(batch, dtype=torch.long, device=cand.device)
    cur = torch.zeros(batch, dtype=torch.long, device=cand.device)
    u = u64[:, 0]
    cum = torch.zeros(batch, dtype=torch.float64, device=cand.device)
    child = nxt[:, 0]
    for _ in range(rows):  # each turn looks at one child per request; a walk looks at < Q children in all
        live = child >= 0
        c = child.clamp_min(0)
        cum = torch.where(live, cum + p64[req, cur, cand[req, c]], cum)
        take = live & (u < cum)
        accepted[req[take], count[take]] = child[take]
        count = count + take
        cur = torch.where(take, child, cur)
        u = torch.where(take, u64[req, cur], u)
        cum = torch.where(take, 0.0, cum)
        child = torch.where(take, nxt[req, cur], torch.where(live, sib[req, c], child))

    raw = p64[req, cur]  # [B, V]
    residual = raw.clone()
    kid = nxt[req, cur]
    for _ in range(rows):  # remove every child of the last node: all of them were rejected
        has = kid >= 0
        residual[req[has], cand[req[has], kid[has]]] = 0.0
        kid = torch.where(has, sib[req, kid.clamp_min(0)], kid)
    point = r64[req, cur] * residual.sum(-1)  # [B]
    past = residual.cumsum(-1) > point[:, None]
    tokens = torch.arange(probs.shape[-1], device=cand.device)
    last_residual = torch.where(residual > 0, tokens, -1).amax(-1)
    last_positive = torch.where(raw > 0, tokens, -1).amax(-1)
    fallback = torch.where(last_residual >= 0, last_residual, last_positive)
    bonus = torch.where(past.any(-1), past.long().argmax(-1), fallback)
    return accepted, count, bonus


def _check_tree(candidates, next_token, next_sibling):
    for name, x in (("candidates", candidates), ("next_token", next_token), ("next_sibling", next_sibling)):
        check_tensor(name, x, ndim=2, shape="[B, Q]", floating=False)
        if tuple(x.shape) != tuple(candidates.shape):
            raise ValueError(f"{name} must have candidates' shape {tuple(candidates.shape)}, got {tuple(x.shape)}")
    if candidates.shape[1] == 0:
        raise ValueError("candidates must have Q >= 1 nodes per request (the root)")
    check_same_device(candidates.device, next_token=next_token, next_sibling=next_sibling)
    link = next_token.dtype if next_token.dtype == next_sibling.dtype in (torch.int32, torch.long) else torch.long
    return candidates.contiguous(), next_token.to(link).contiguous(), next_sibling.to(link).contiguous()  # the walks
    # move along both links: one dtype (int32 or long, as given, so no copy)


def _target_argmax(target, shape, argmax=lambda x: x.argmax(-1)) -> torch.Tensor:
    if not isinstance(target, torch.Tensor) or target.ndim not in (2, 3):
        raise ValueError("target must be a [B, Q] argmax tensor or [B, Q, V] logits")
    if target.ndim == 3:
        check_tensor("target", target, ndim=3, shape="[B, Q, V]", floating=True)
        target = argmax(target)
    check_tensor("target", target, ndim=2, shape="[B, Q]", floating=False)
    if tuple(target.shape) != tuple(shape):
        raise ValueError(f"target must have one entry per node {tuple(shape)}, got {tuple(target.shape)}")
    return target.contiguous()


def _check_sampling(probs, coins, residual_coins, batch: int, rows: int, device):
    check_tensor("probs", probs, ndim=3, shape="[B, Q, V]", floating=True)
    check_dim("probs", probs, 0, batch, "requests")
    check_dim("probs", probs, 1, rows, "nodes per request")
    for name, x in (("coins", coins), ("residual_coins", residual_coins)):
        check_tensor(name, x, ndim=2, shape="[B, Q]", floating=True)
        if tuple(x.shape) != (batch, rows):
            raise ValueError(f"{name} must have shape {(batch, rows)}, got {tuple(x.shape)}")
    check_same_device(device, probs=probs, coins=coins, residual_coins=residual_coins)
    return probs.contiguous(), coins.contiguous(), residual_coins.contiguous()


def _outputs(batch: int, rows: int, device):
    accepted = torch.full((batch, rows), -1, dtype=torch.long, device=device)
    return accepted, torch.empty(batch, dtype=torch.long, device=device), torch.empty(batch, dtype=torch.long,
                                                                                      device=device)


@triton.jit
def _chunk_argmax_kernel(x_ptr, best_ptr, where_ptr, odd_ptr, vocab, chunks, BLOCK: tl.constexpr):
    """Program (row, chunk): the chunk's maximum, its first index, and whether the chunk holds a NaN or an infinity."""
    row, chunk = tl.program_id(0), tl.program_id(1)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    ok = offs < vocab
    x = tl.load(x_ptr + row.to(tl.int64) * vocab + offs, mask=ok, other=float("-inf")).to(tl.float32)
    top = tl.max(x, 0)
    at = row * chunks + chunk
    tl.store(best_ptr + at, top)
    tl.store(where_ptr + at, tl.min(tl.where(ok & (x == top), offs, vocab), 0))
    tl.store(odd_ptr + at, tl.max((ok & ((x != x) | (tl.abs(x) == float("inf")))).to(tl.int32), 0))


@triton.jit
def _row_argmax_kernel(best_ptr, where_ptr, odd_ptr, argmax_ptr, bad_ptr, chunks, vocab, CHUNKS: tl.constexpr):
    """One row per program: the first chunk holding the row's maximum gives the argmax; the row's flag."""
    row = tl.program_id(0)
    c = tl.arange(0, CHUNKS)
    ok = c < chunks
    best = tl.load(best_ptr + row * chunks + c, mask=ok, other=float("-inf"))
    where = tl.load(where_ptr + row * chunks + c, mask=ok, other=vocab)
    top = tl.max(best, 0)
    tl.store(argmax_ptr + row, tl.min(tl.where(ok & (best == top), where, vocab), 0))
    tl.store(bad_ptr + row, tl.max(tl.load(odd_ptr + row * chunks + c, mask=ok, other=0), 0))


@triton.jit
def _greedy_kernel(cand_ptr, next_ptr, sib_ptr, target_ptr, accepted_ptr, accept_len_ptr, bonus_ptr, num_rows):
    """One request per program: a scalar walk."""
    base = tl.program_id(0) * num_rows
    tl.store(accepted_ptr + base, 0)
    count = 1
    want = tl.load(target_ptr + base)
    child = tl.load(next_ptr + base)
    while child != -1:
        if tl.load(cand_ptr + base + child) == want:
            tl.store(accepted_ptr + base + count, child)
            count += 1
            want = tl.load(target_ptr + base + child)
            child = tl.load(next_ptr + base + child)
        else:
            child = tl.load(sib_ptr + base + child)
    tl.store(accept_len_ptr + tl.program_id(0), count)
    tl.store(bonus_ptr + tl.program_id(0), want)


@triton.jit
def _residual_block(p_row, offs, vocab, cand_ptr, sib_ptr, base, first_child):
    """`(residual, raw)  # [BLOCK_V]` float64 probabilities of tokens `offs`, residual with the children's tokens 0."""
    raw = tl.load(p_row + offs, mask=offs < vocab, other=0.0).to(tl.float64)
    residual = raw
    kid = first_child
    while kid != -1:
        residual = tl.where(offs == tl.load(cand_ptr + base + kid), 0.0, residual)
        kid = tl.load(sib_ptr + base + kid)
    return residual, raw


@triton.jit
def _sampled_walk_kernel(cand_ptr, next_ptr, sib_ptr, probs_ptr, coins_ptr, accepted_ptr, accept_len_ptr, last_ptr,
                         num_rows, vocab):
    """One request per program: the rule-B walk down the tree (the bonus draw follows, over the vocabulary)."""
    base = tl.program_id(0) * num_rows
    tl.store(accepted_ptr + base, 0)
    count = 1
    u = tl.load(coins_ptr + base).to(tl.float64)
    cum = u * 0.0
    child = tl.load(next_ptr + base)
    cur = child * 0  # the links' dtype
    while child != -1:
        token = tl.load(cand_ptr + base + child)
        cum += tl.load(probs_ptr + (base + cur).to(tl.int64) * vocab + token).to(tl.float64)
        if u < cum:
            tl.store(accepted_ptr + base + count, child)
            count += 1
            cur = child
            u = tl.load(coins_ptr + base + cur).to(tl.float64)
            cum = u * 0.0
            child = tl.load(next_ptr + base + cur)
        else:
            child = tl.load(sib_ptr + base + child)
    tl.store(accept_len_ptr + tl.program_id(0), count)
    tl.store(last_ptr + tl.program_id(0), cur)


@triton.jit
def _residual_chunk_kernel(cand_ptr, next_ptr, sib_ptr, probs_ptr, last_ptr, totals_ptr, tails_ptr, num_rows, vocab,
                           BLOCK_V: tl.constexpr):
    """Per request and vocabulary chunk: the residual mass at the last accepted node (its cumulative sum's last
    entry, as the draw kernel sums it), the last token with residual mass and the last with positive probability."""
    b, chunk = tl.program_id(0), tl.program_id(1)
    base = b * num_rows
    cur = tl.load(last_ptr + b)
    offs = chunk * BLOCK_V + tl.arange(0, BLOCK_V)
    residual, raw = _residual_block(probs_ptr + (base + cur).to(tl.int64) * vocab, offs, vocab, cand_ptr, sib_ptr,
                                    base, tl.load(next_ptr + base + cur))
    at = b * tl.num_programs(1) + chunk
    tl.store(totals_ptr + at, tl.max(tl.cumsum(residual, 0), 0))
    tl.store(tails_ptr + at, tl.max(tl.where(residual > 0, offs, -1), 0))
    tl.store(tails_ptr + tl.num_programs(0) * tl.num_programs(1) + at, tl.max(tl.where(raw > 0, offs, -1), 0))


@triton.jit
def _residual_draw_kernel(cand_ptr, next_ptr, sib_ptr, probs_ptr, residual_coins_ptr, last_ptr, totals_ptr,
                          tails_ptr, bonus_ptr, num_rows, vocab, chunks, BLOCK_V: tl.constexpr, CHUNKS: tl.constexpr):
    """One request per program: the inverse-CDF draw of the bonus token at residual_coin * residual mass. The
    cumulative mass of token v is (the chunks before v's, a scan) + (v's chunk up to v): the first chunk whose end
    passes the point holds the token."""
    b = tl.program_id(0)
    base = b * num_rows
    cur = tl.load(last_ptr + b)
    c = tl.arange(0, CHUNKS)
    ok = c < chunks
    totals = tl.load(totals_ptr + b * chunks + c, mask=ok, other=0.0)
    before = tl.cumsum(tl.load(totals_ptr + b * chunks + c - 1, mask=ok & (c > 0), other=0.0), 0)  # [CHUNKS]
    point = tl.load(residual_coins_ptr + base + cur).to(tl.float64) * tl.sum(totals, 0)
    hit = tl.min(tl.where(ok & (before + totals > point), c, chunks), 0)
    last_residual = tl.max(tl.load(tails_ptr + b * chunks + c, mask=ok, other=-1), 0)
    last_positive = tl.max(tl.load(tails_ptr + tl.num_programs(0) * chunks + b * chunks + c, mask=ok, other=-1), 0)
    found = vocab
    if hit < chunks:
        offs = hit * BLOCK_V + tl.arange(0, BLOCK_V)
        residual, _ = _residual_block(probs_ptr + (base + cur).to(tl.int64) * vocab, offs, vocab, cand_ptr, sib_ptr,
                                      base, tl.load(next_ptr + base + cur))
        start = tl.sum(tl.where(c == hit, before, 0.0), 0)  # exact: one nonzero term
        found = tl.min(tl.where(start + tl.cumsum(residual, 0) > point, offs, vocab), 0)
    # rounding leaves no token past the point: the last with residual mass, else the last with probability
    fallback = tl.where(last_residual >= 0, last_residual, last_positive)
    tl.store(bonus_ptr + b, tl.where(found < vocab, found, fallback))
