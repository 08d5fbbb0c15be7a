"""The KV-cache operations: the static cache's row write (the one reference every path and kernel mirrors) and the
compaction after verify (keep the accepted tree entries, contiguous after the committed prefix)."""
from __future__ import annotations

import torch

from ddtree._checks import check_int


def write_kv(cache: torch.Tensor, at: torch.Tensor, x: torch.Tensor) -> None:
    """cache  # [b, H, max_len, D]; cache[i, :, at[i, j]] = x[i, j] for x  # [b, R, H, D], at  # [b, R] long.
    Hot path: trusts its inputs (CUDA-graph capturable, no host synchronisation)."""
    rows = torch.arange(x.shape[0], device=x.device)[:, None].expand(-1, x.shape[1])  # [b, R]
    cache.permute(0, 2, 1, 3)[rows, at] = x


def compact_kv(tensor: torch.Tensor, past_len: int, keep_indices, seq_dim: int = -2) -> torch.Tensor:
    """Return `tensor` cut to past_len + len(keep_indices) along `seq_dim`.

    Entries [0, past_len) are the committed prefix and stay; the tree entries follow at past_len + node index,
    and only nodes `keep_indices` (an accepted path, e.g. VerifyResult.accepted) are kept, in that order, right
    after the prefix. keep_indices: ints or a 1-D integer tensor, the root 0 first, strictly increasing (parents
    precede children), each < the tree entries the tensor holds.
    """
    past_len = check_int("past_len", past_len)
    if not isinstance(tensor, torch.Tensor) or tensor.ndim == 0:
        raise ValueError("tensor must be a torch.Tensor with a sequence dimension")
    if not isinstance(seq_dim, int) or isinstance(seq_dim, bool) or not -tensor.ndim <= seq_dim < tensor.ndim:
        raise ValueError(f"seq_dim must be a dimension of the {tensor.ndim}-D tensor, got {seq_dim!r}")
    seq_len = tensor.shape[seq_dim]
    if past_len > seq_len:
        raise ValueError(f"past_len = {past_len} exceeds the tensor's {seq_len} entries along seq_dim")
    keep = _path_indices(keep_indices)
    if past_len + keep[-1] >= seq_len:
        raise ValueError(f"keep_indices must be tree node indices in [0, {seq_len - past_len}) "
                         f"(tensor has {seq_len} entries along seq_dim, past_len {past_len}), got {keep}")
    keep = torch.tensor(keep)
    kept = tensor.index_select(seq_dim, keep.to(tensor.device) + past_len)
    return torch.cat([tensor.narrow(seq_dim, 0, past_len), kept], dim=seq_dim)


def _path_indices(keep_indices) -> list[int]:
    """keep_indices as a list of ints, or a ValueError unless it is an accepted path (0 first, strictly increasing)."""
    if isinstance(keep_indices, torch.Tensor):
        ok = keep_indices.ndim == 1 and not keep_indices.is_floating_point() and not keep_indices.is_complex() \
            and keep_indices.dtype != torch.bool
        keep = keep_indices.tolist() if ok else None
    else:
        keep = list(keep_indices) if isinstance(keep_indices, (list, tuple)) else None
        ok = keep is not None and all(isinstance(i, int) and not isinstance(i, bool) for i in keep)
    if not ok or not keep or keep[0] != 0 or any(b <= a for a, b in zip(keep, keep[1:])):
        shown = keep_indices.tolist() if isinstance(keep_indices, torch.Tensor) else keep_indices
        raise ValueError("keep_indices must be an accepted path: ints (or a 1-D integer tensor), the root 0 first, "
                         f"strictly increasing, got {shown!r}")
    return keep
