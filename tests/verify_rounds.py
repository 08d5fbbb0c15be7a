"""A small batched verify round for whole-model kernel tests: three prefilled requests and trees of 8, 3, 8 nodes
padded to 8 rows (the middle tree is smaller than num_draft_tokens, as in the padding-bug story)."""
import torch

import ddtree
from ddtree.engine import NativeDecoder

PROMPT_LENS = (6, 9, 4)
BUDGETS = (7, 2, 7)
Q = 8


def prefilled_decoder(pair) -> NativeDecoder:
    dec = NativeDecoder(pair.target, batch_size=len(PROMPT_LENS), max_len=64, attention="torch")
    for b, n in enumerate(PROMPT_LENS):
        pos = torch.arange(n)
        dec.forward(torch.arange(3, 3 + n)[None], pos[None], (pos - 1)[None], request=b)
        dec.commit(pos[None], torch.tensor([n]), request=b)
    return dec


def round_inputs(pair, seed: int):
    """(trees, ids, positions, parents  # [B, Q]) for one round on prefilled_decoder's requests."""
    g = torch.Generator().manual_seed(seed)
    trees = [ddtree.build_tree(torch.randn(4, pair.vocab_size, generator=g), b).with_root_token(1) for b in BUDGETS]
    ids, pos, parents = torch.full((3, Q), 1), torch.zeros(3, Q, dtype=torch.long), torch.full((3, Q), -1)
    for b, (t, n) in enumerate(zip(trees, PROMPT_LENS)):
        pos[b] = n
        ids[b, :t.n_nodes], pos[b, :t.n_nodes], parents[b, :t.n_nodes] = t.tokens, n + t.depths, t.parents
    return trees, ids, pos, parents
