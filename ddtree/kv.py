"""KV-cache compaction after verify: keep the accepted tree entries, contiguous after the committed prefix."""
from __future__ import annotations

import torch

from ddtree._checks import check_int


def compact_kv(tensor: torch.Tensor, past_len: int, keep_indices, seq_dim: int = -2) -> torch.Tensor:
    """Return `tensor` cut to past_len + len(keep_indices) along `seq_dim`.

    Entries [0, past_len) are the committed prefix and stay; the tree entries follow at past_len + node index,
    and only nodes `keep_indices` (e.g. VerifyResult.accepted) are kept, in that order, right after the prefix.
    """
    past_len = check_int("past_len", past_len)
    if not isinstance(tensor, torch.Tensor) or tensor.ndim == 0:
        raise ValueError("tensor must be a torch.Tensor with a sequence dimension")
    seq_len = tensor.shape[seq_dim]
    keep = torch.as_tensor(keep_indices, dtype=torch.long).flatten()
    if keep.numel() and (int(keep.min()) < 0 or past_len + int(keep.max()) >= seq_len):
        raise ValueError(f"keep_indices must be tree node indices in [0, {seq_len - past_len}) "
                         f"(tensor has {seq_len} entries along seq_dim, past_len {past_len}), got {keep.tolist()}")
    if past_len > seq_len:
        raise ValueError(f"past_len = {past_len} exceeds the tensor's {seq_len} entries along seq_dim")
    kept = tensor.index_select(seq_dim, keep.to(tensor.device) + past_len)
    return torch.cat([tensor.narrow(seq_dim, 0, past_len), kept], dim=seq_dim)
