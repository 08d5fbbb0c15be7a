"""The training forward of a DFlashDrafter: many anchors (blocks) per sequence, a batch of sequences, one pass.

For anchor a of sequence n the block is [tokens[n, a], MASK x (B-1)] at positions a..a+B-1; it sees the drafter
context (projected target features) of positions < a (within the sliding window for sliding layers) and its own
block, non-causally, and no other block. This is exactly what DFlashDrafter.forward computes at inference for a
context of length a, reusing the drafter's own submodules (tests/test_trained_drafter.py checks the equality).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ddtree.models.drafter import DFlashDrafter, rope_cos_sin


def sample_anchors(prompt_lens, lengths, num_anchors: int, generator=None):
    """Random anchors in the responses -> (anchors  # [N, A] long, valid  # [N, A] bool).

    Anchor a of sequence n is drawn uniformly without replacement from prompt_lens[n] <= a <= lengths[n] - 2
    (the first response token can be an anchor, and at least one label must follow); rows with fewer candidates
    than A get invalid (valid False, anchor 0) slots. prompt_lens, lengths  # [N] long."""
    if num_anchors < 1:
        raise ValueError(f"num_anchors must be >= 1, got {num_anchors}")
    width = int(lengths.max())
    positions = torch.arange(width, device=lengths.device)[None, :]  # [1, T]
    allowed = (positions >= prompt_lens[:, None]) & (positions <= lengths[:, None] - 2)  # [N, T]
    scores = torch.rand(allowed.shape, generator=generator, device=lengths.device).masked_fill(~allowed, -1.0)
    top, anchors = scores.topk(min(num_anchors, width), dim=1)  # [N, A]
    valid = top >= 0
    return anchors.masked_fill(~valid, 0), valid


def block_visibility(anchors, context_len: int, block_size: int, windows):
    """Per drafter layer, a bool mask [N, A*B, T + A*B] (True = may attend): block j of a row sees context
    positions < anchors[j] (and > p - window for a block query at position p in a sliding layer) and its own
    block. Layers with equal windows share one tensor."""
    n, a = anchors.shape
    device = anchors.device
    query_pos = (anchors[:, :, None] + torch.arange(block_size, device=device)).reshape(n, a * block_size)  # [N, AB]
    query_anchor = anchors.repeat_interleave(block_size, dim=1)  # [N, AB]
    ctx_pos = torch.arange(context_len, device=device)
    ctx_visible = ctx_pos[None, None, :] < query_anchor[:, :, None]  # [N, AB, T]
    block_id = torch.arange(a, device=device).repeat_interleave(block_size)  # [AB]
    own_block = (block_id[:, None] == block_id[None, :]).expand(n, -1, -1)  # [N, AB, AB]
    masks = {}
    for window in set(windows):
        visible = ctx_visible if window is None else \
            ctx_visible & (ctx_pos[None, None, :] > query_pos[:, :, None] - window)
        masks[window] = torch.cat([visible, own_block], dim=2)
    return [masks[w] for w in windows]


def training_forward(drafter: DFlashDrafter, embed_table, features, tokens, anchors):
    """-> hidden  # [N, A, B, hidden] after the drafter's final norm (apply the target's lm_head for logits).

    embed_table  # [vocab, hidden] (the target's input embeddings); features  # [N, T, len(ids) * hidden] (target
    features of every position); tokens  # [N, T]; anchors  # [N, A] with 1 <= anchor < T."""
    config = drafter.config
    n, t, _ = features.shape
    a, b = anchors.shape[1], config.block_size
    ctx = drafter.hidden_norm(drafter.fc(features))  # [N, T, hidden]
    ctx_cos, ctx_sin = rope_cos_sin(torch.arange(t, device=features.device), config.head_dim, config.rope_theta,
                                    ctx.dtype)  # [T, head_dim], the same for every sequence
    block = torch.full((n, a, b), config.mask_token_id, dtype=torch.long, device=tokens.device)  # [N, A, B]
    block[:, :, 0] = tokens.gather(1, anchors)
    positions = anchors[:, :, None] + torch.arange(b, device=anchors.device)  # [N, A, B]
    hidden = F.embedding(block, embed_table).reshape(n, a * b, -1).to(ctx.dtype)  # [N, AB, hidden]
    cos, sin = rope_cos_sin(positions.reshape(-1), config.head_dim, config.rope_theta, ctx.dtype)  # [N*AB, d]
    cos, sin = cos.view(n, a * b, -1), sin.view(n, a * b, -1)  # [N, AB, d]
    masks = block_visibility(anchors, t, b, [config.window(i) for i in range(config.num_hidden_layers)])
    for layer, visible in zip(drafter.layers, masks):  # the inference layer, batched over the N sequences
        keys, values = layer.self_attn.keys_values(ctx, ctx_cos, ctx_sin)  # [N, T, kv_heads, head_dim]
        hidden = layer(hidden, cos, sin, keys, values, visible)
    return drafter.norm(hidden).view(n, a, b, -1)


def depth_weights(block_size: int, gamma: float, device=None):
    """Loss weight of block positions 1..B-1: exp(-(k - 1) / gamma)  # [B - 1]."""
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0 (inf: equal weights), got {gamma}")
    k = torch.arange(1, block_size, device=device, dtype=torch.float32)
    return torch.exp(-(k - 1) / gamma)


def block_loss(hidden, lm_head, tokens, lengths, anchors, valid, gamma: float, teacher_logits=None,
               soft_weight: float = 0.0):
    """Weighted loss of the B-1 masked positions -> (loss, stats).

    hidden  # [N, A, B, hidden]; labels of block position k are tokens[n, a + k] where a + k < lengths[n].
    Per label: (1 - soft_weight) * cross-entropy of the label + soft_weight * cross-entropy of the target's own
    distribution there, teacher_logits[n, a + k - 1] (teacher_logits  # [N, T, vocab]: the target's logits at every
    position, each predicting the next token; needed when soft_weight > 0). The soft term teaches the target's
    alternatives too (the ranks a tree keeps) and, on sampled sequences, the target's choice rather than the draw.
    stats: the hard cross-entropy alone ("hard_loss", comparable across soft weights), per-depth top-1 accuracy
    # [B-1], the mean accepted chain length 1 + (leading correct positions, counting a label past the sequence end
    as a miss), and the number of supervised tokens."""
    if soft_weight > 0 and teacher_logits is None:
        raise ValueError("soft_weight > 0 needs teacher_logits  # [N, T, vocab]")
    n, a, b, _ = hidden.shape
    label_pos = anchors[:, :, None] + torch.arange(1, b, device=anchors.device)  # [N, A, B-1]
    in_seq = (label_pos < lengths[:, None, None]) & valid[:, :, None]
    labels = tokens.gather(1, label_pos.clamp_max(tokens.shape[1] - 1).reshape(n, -1)).view(n, a, b - 1)
    logits = lm_head(hidden[:, :, 1:][in_seq]).float()  # [M, vocab]
    weights = depth_weights(b, gamma, hidden.device).expand(n, a, b - 1)[in_seq]  # [M]
    log_probs = logits.log_softmax(-1)  # [M, vocab], shared by both terms
    hard = F.nll_loss(log_probs, labels[in_seq], reduction="none")  # [M]
    losses = hard
    if soft_weight > 0:
        rows = torch.arange(n, device=hidden.device)[:, None, None].expand(n, a, b - 1)[in_seq]  # [M]
        teacher = teacher_logits[rows, label_pos[in_seq] - 1].float().softmax(-1)  # [M, vocab]
        soft = -(teacher * log_probs).sum(-1)  # [M]
        losses = (1 - soft_weight) * hard + soft_weight * soft
    loss = (losses * weights).sum() / weights.sum()
    with torch.no_grad():
        hard_loss = (hard * weights).sum() / weights.sum()
        correct = torch.zeros(n, a, b - 1, dtype=torch.bool, device=hidden.device)
        correct[in_seq] = logits.argmax(-1) == labels[in_seq]
        depth_acc = correct.sum((0, 1)).float() / in_seq.sum((0, 1)).clamp_min(1)
        accepted = 1 + correct.int().cumprod(-1).sum(-1).float()  # [N, A]
        chain = accepted[valid].mean()
    return loss, {"hard_loss": hard_loss, "depth_acc": depth_acc, "chain_accept": chain, "tokens": int(in_seq.sum())}
