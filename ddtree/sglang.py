"""SGLang side by side: run SGLang's own Triton extend-attention kernel (target-verify form) on workbench verify
batches, recover the mask it effectively applied, and convert between workbench trees and SGLang's EAGLE tree
structures.

Install with `make sglang`: the `sglang==0.5.23` wheel with --no-deps, plus only what importing its kernel module
needs (KERNEL_IMPORT_NEEDS). On a machine without CUDA the kernel runs in Triton's interpreter (TRITON_INTERPRET=1,
set by `import ddtree` before triton is imported), which is slow: keep shapes small.

Target-verify call convention, as SGLang's Triton backend makes it: q/k/v of the draft rows `[rows, heads, dim]`,
the committed prefix K/V in a token pool addressed by kv_indptr/kv_indices, qo_indptr (rows per request), the flat
custom mask with mask_indptr, is_causal=True, max_len_extend, k/v scales 1.0 and skip_prefix_custom_mask=True
(prefix columns are not masked; the mask is read for the draft columns only, at row width seq_len_b + q_b).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import torch

from ddtree.batch import VerifyBatch
from ddtree.retrieve import parents_from_retrieve
from ddtree.tree import DraftTree

SGLANG_VERSION = "0.5.23"
KERNEL_IMPORT_NEEDS = ("orjson", "psutil", "pybase64", "requests", "packaging", "pillow", "starlette", "msgspec",
                       "pydantic", "pyzmq", "tqdm", "ipython", "aiohttp")


def extend_attention_kernel():
    """SGLang's `extend_attention_fwd`, importable only after `make sglang`."""
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("without a GPU SGLang's kernel runs in Triton's interpreter: set TRITON_INTERPRET=1 "
                           "before triton is imported (importing ddtree first does it)")
    try:
        from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
    except ImportError as e:
        raise ImportError(f"SGLang's Triton kernel is not installed ({e}); run `make sglang` (sglang=={SGLANG_VERSION} "
                          f"with --no-deps plus {', '.join(KERNEL_IMPORT_NEEDS)})") from None
    return extend_attention_fwd


@dataclass
class AttentionInputs:
    """Attention inputs of one verify forward (one layer), in the batch's row order."""
    q: torch.Tensor  # [rows, heads, dim] queries of the draft rows
    k: torch.Tensor  # [rows, kv_heads, dim] keys of the draft rows
    v: torch.Tensor  # [rows, kv_heads, dim_v]
    prefix_k: list[torch.Tensor]  # per request [seq_len_b, kv_heads, dim] committed keys
    prefix_v: list[torch.Tensor]  # per request [seq_len_b, kv_heads, dim_v]


def random_inputs(batch: VerifyBatch, heads: int, kv_heads: int, dim: int, *, generator=None,
                  dtype=torch.float32, device="cpu") -> AttentionInputs:
    """Random attention inputs shaped for `batch` (heads must be a multiple of kv_heads, as in GQA)."""
    if heads % kv_heads:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    rows = int(batch.qo_indptr[-1])
    rand = lambda *shape: torch.randn(*shape, generator=generator).to(device=device, dtype=dtype)  # noqa: E731
    return AttentionInputs(
        q=rand(rows, heads, dim), k=rand(rows, kv_heads, dim), v=rand(rows, kv_heads, dim),
        prefix_k=[rand(int(s), kv_heads, dim) for s in batch.seq_lens],
        prefix_v=[rand(int(s), kv_heads, dim) for s in batch.seq_lens])


def sglang_verify_attention(batch: VerifyBatch, inputs: AttentionInputs, *,
                            skip_prefix_custom_mask: bool = True) -> torch.Tensor:
    """`out  # [rows, heads, dim_v]`: SGLang's kernel over the batch's custom mask and mask_indptr, as its
    Triton backend calls it in target-verify mode.

    The flat mask buffer is zero-extended to the size the backend computes from num_draft_tokens, so reads past
    what the packer wrote see False (as ddtree.effective_mask assumes) instead of foreign memory.
    """
    kernel, args, kwargs = sglang_call(batch, inputs, skip_prefix_custom_mask=skip_prefix_custom_mask)
    kernel(*args, **kwargs)
    return args[3]


def sglang_call(batch: VerifyBatch, inputs: AttentionInputs, *, skip_prefix_custom_mask: bool = True):
    """`(kernel, args, kwargs)` of one SGLang target-verify attention call (args[3] is the output buffer), built
    once so a benchmark can time the kernel alone."""
    kernel = extend_attention_kernel()
    device = inputs.q.device
    k_pool = torch.cat(inputs.prefix_k).contiguous()  # [total_prefix, kv_heads, dim]: the committed-token pool
    v_pool = torch.cat(inputs.prefix_v).contiguous()
    kv_indptr = torch.nn.functional.pad(batch.seq_lens.cumsum(0), (1, 0)).to(device)
    kv_indices = torch.arange(k_pool.shape[0], dtype=torch.int64, device=device)
    size = int(batch.mask_indptr[-1])
    mask = torch.zeros(max(size, batch.custom_mask.numel()), dtype=torch.bool)
    mask[:batch.custom_mask.numel()] = batch.custom_mask
    out = torch.empty(*inputs.q.shape[:2], inputs.v.shape[-1], dtype=inputs.q.dtype, device=device)
    rows = batch.qo_indptr[1:] - batch.qo_indptr[:-1]
    args = (inputs.q.contiguous(), inputs.k.contiguous(), inputs.v.contiguous(), out, k_pool, v_pool,
            batch.qo_indptr.to(device), kv_indptr, kv_indices, mask.to(device), True, batch.mask_indptr.to(device),
            int(rows.max()), 1.0, 1.0)
    return kernel, args, {"skip_prefix_custom_mask": skip_prefix_custom_mask}


def dense_verify_attention(batch: VerifyBatch, inputs: AttentionInputs, masks: list[torch.Tensor]) -> torch.Tensor:
    """`out  # [rows, heads, dim_v]`: plain softmax attention per request under `masks[b]  # [q_b, seq_len_b + q_b]`
    (e.g. ddtree.expected_mask or ddtree.effective_mask): the reference."""
    out = []
    heads, kv_heads, dim = inputs.q.shape[1], inputs.k.shape[1], inputs.q.shape[-1]
    for b in range(batch.batch_size):
        r0, r1 = int(batch.qo_indptr[b]), int(batch.qo_indptr[b + 1])
        q = inputs.q[r0:r1].float().transpose(0, 1)  # [heads, q_b, dim]
        k = torch.cat([inputs.prefix_k[b], inputs.k[r0:r1]]).float().transpose(0, 1)  # [kv_heads, keys, dim]
        v = torch.cat([inputs.prefix_v[b], inputs.v[r0:r1]]).float().transpose(0, 1)
        k, v = k.repeat_interleave(heads // kv_heads, 0), v.repeat_interleave(heads // kv_heads, 0)
        scores = (q @ k.transpose(1, 2)) / dim ** 0.5  # [heads, q_b, keys]
        scores = scores.masked_fill(~masks[b].to(scores.device), float("-inf"))
        out.append((scores.softmax(-1) @ v).transpose(0, 1).to(inputs.q.dtype))
    return torch.cat(out)


def probe_effective_masks(batch: VerifyBatch, attention, *, chunk: int = 64) -> list[torch.Tensor]:
    """The mask an attention implementation actually applied, per request `[q_b, seq_len_b + q_b]` bool.

    With zero queries every visible key gets the same weight, and with value = one-hot of the key's column the
    output row is uniform over exactly the visible columns. `attention(batch, inputs) -> out` is e.g.
    sglang_verify_attention; `chunk` columns are probed per call (the value width).
    """
    widths = [int(s) + batch.rows(b) for b, s in enumerate(batch.seq_lens)]
    found = [torch.zeros(batch.rows(b), w, dtype=torch.bool) for b, w in enumerate(widths)]
    rows = int(batch.qo_indptr[-1])
    for start in range(0, max(widths), chunk):
        def one_hot(cols: torch.Tensor) -> torch.Tensor:  # [n] column ids -> [n, 1, chunk]
            inside = (cols >= start) & (cols < start + chunk)
            v = torch.zeros(cols.numel(), 1, chunk)
            v[inside.nonzero().flatten(), 0, cols[inside] - start] = 1.0
            return v
        tree_cols = torch.cat([int(batch.seq_lens[b]) + torch.arange(batch.rows(b)) for b in range(batch.batch_size)])
        inputs = AttentionInputs(
            q=torch.zeros(rows, 1, chunk), k=torch.zeros(rows, 1, chunk), v=one_hot(tree_cols),
            prefix_k=[torch.zeros(int(s), 1, chunk) for s in batch.seq_lens],
            prefix_v=[one_hot(torch.arange(int(s))) for s in batch.seq_lens])
        out = attention(batch, inputs)[:, 0].float()  # [rows, chunk]
        for b, w in enumerate(widths):
            r0 = int(batch.qo_indptr[b])
            seen = out[r0:r0 + batch.rows(b), :max(0, min(chunk, w - start))] > 0.5 / w
            found[b][:, start:start + seen.shape[1]] = seen
    return found


def sglang_attention(batch: VerifyBatch):
    """An attention callable for ddtree.engine.NativeDecoder that runs SGLang's kernel with `batch`'s flat custom
    mask and mask_indptr instead of the tree: `(q  # [B, Q, Hq, D], k_cache, v_cache  # [B, Hkv, L, D], seq_lens,
    parents) -> out  # [B, Q, Hq, D]`. Each request's first q_b rows (from the batch's qo_indptr) go to the kernel,
    with its committed prefix as the token pool; other rows get 0. The decoder must run this batch's rows."""
    def attention(q, k_cache, v_cache, seq_lens, parents):
        rows = [batch.rows(b) for b in range(batch.batch_size)]
        lens = seq_lens.tolist()
        if lens != batch.seq_lens.tolist():
            raise ValueError(f"the decoder's committed lengths {lens} differ from the batch's {batch.seq_lens.tolist()}")
        inputs = AttentionInputs(
            q=torch.cat([q[b, :n] for b, n in enumerate(rows)]),
            k=torch.cat([k_cache[b, :, s:s + n].transpose(0, 1) for b, (s, n) in enumerate(zip(lens, rows))]),
            v=torch.cat([v_cache[b, :, s:s + n].transpose(0, 1) for b, (s, n) in enumerate(zip(lens, rows))]),
            prefix_k=[k_cache[b, :, :s].transpose(0, 1) for b, s in enumerate(lens)],
            prefix_v=[v_cache[b, :, :s].transpose(0, 1) for b, s in enumerate(lens)])
        flat = sglang_verify_attention(batch, inputs)  # [rows, Hq, D]
        out = torch.zeros_like(q)
        for b, n in enumerate(rows):
            start = int(batch.qo_indptr[b])
            out[b, :n] = flat[start:start + n]
        return out

    return attention


def probed_batch(batch: VerifyBatch, masks: list[torch.Tensor]) -> VerifyBatch:
    """A copy of `batch` whose flat mask holds `masks` (e.g. from probe_effective_masks) where the backend reads,
    so ddtree.effective_mask, check_verify_batch and MaskView's diff mode show what the kernel really applied."""
    if len(masks) != batch.batch_size:
        raise ValueError(f"masks must hold one [q_b, seq_len_b + q_b] mask per request ({batch.batch_size})")
    sizes = [m.numel() for m in masks]
    indptr = torch.tensor([0] + sizes).cumsum(0)
    return replace(batch, custom_mask=torch.cat([m.flatten().cpu() for m in masks]), mask_indptr=indptr,
                   written_indptr=indptr)


def to_eagle(batch: VerifyBatch) -> dict[str, torch.Tensor | int]:
    """The batch in SGLang's EAGLE verify structures: draft_token / positions flat `[B * Q]` (padding rows as
    packed), retrive_index / retrive_next_token / retrive_next_sibling `[B, Q]`, custom_mask, seq_lens and
    draft_token_num. Only the padded layout maps onto these fixed-width structures."""
    if batch.layout != "padded":
        raise ValueError(f"batch.layout must be 'padded' to convert to EAGLE structures, got {batch.layout!r}")
    return {"draft_token": batch.input_ids, "positions": batch.positions, "retrive_index": batch.retrive_index,
            "retrive_next_token": batch.retrive_next_token, "retrive_next_sibling": batch.retrive_next_sibling,
            "custom_mask": batch.custom_mask, "seq_lens": batch.seq_lens, "draft_token_num": batch.num_draft_tokens}


def trees_from_eagle(draft_token, positions, retrive_next_token, retrive_next_sibling, seq_lens,
                     draft_token_num: int, node_logws=None) -> list[DraftTree]:
    """Workbench trees from SGLang's EAGLE structures. Nodes reachable from each root must be the leading
    entries (0..n_b-1); later entries are padding. SGLang carries no draft scores: node_logws are 0 unless given
    (a list of per-request sequences); ranks are sibling order, which equals the top-K rank for DDTree trees."""
    q = draft_token_num
    batch_size = len(seq_lens)
    if retrive_next_token.shape != (batch_size, q) or retrive_next_sibling.shape != (batch_size, q):
        raise ValueError(f"retrive_next_token and retrive_next_sibling must be [batch, draft_token_num] = "
                         f"[{batch_size}, {q}], got {tuple(retrive_next_token.shape)}")
    if draft_token.numel() != batch_size * q or positions.numel() != batch_size * q:
        raise ValueError(f"draft_token and positions must hold batch * draft_token_num = {batch_size * q} entries")
    trees = []
    for b in range(batch_size):
        n = _reachable(retrive_next_token[b].tolist(), retrive_next_sibling[b].tolist())
        parents = parents_from_retrieve(retrive_next_token[b, :n], retrive_next_sibling[b, :n])
        ranks = [-1] * n
        for i in range(n):
            child, r = int(retrive_next_token[b, i]), 0
            while child != -1:
                ranks[child], child, r = r, int(retrive_next_sibling[b, child]), r + 1
        logws = torch.zeros(n, dtype=torch.float64) if node_logws is None else torch.as_tensor(
            node_logws[b], dtype=torch.float64)
        trees.append(DraftTree(tokens=draft_token[b * q:b * q + n].long().cpu(), parents=parents,
                               depths=(positions[b * q:b * q + n] - seq_lens[b]).long().cpu(),
                               ranks=torch.tensor(ranks), node_logws=logws))
    return trees


def _reachable(next_token: list[int], next_sibling: list[int]) -> int:
    """Count of nodes reachable from node 0; they must be exactly 0..count-1."""
    seen, stack, steps = {0}, [0], 0
    while stack:
        child = next_token[stack.pop()]
        while child != -1:
            steps += 1
            if steps > len(next_token) or not 0 < child < len(next_token):
                raise ValueError("retrive_next_token / retrive_next_sibling do not describe a tree (cycle or bad index)")
            if child not in seen:
                seen.add(child)
                stack.append(child)
            child = next_sibling[child]
    if seen != set(range(len(seen))):
        raise ValueError(f"the nodes reachable from the root must be the leading entries, got {sorted(seen)[:10]}")
    return len(seen)
