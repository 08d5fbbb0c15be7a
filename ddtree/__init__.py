"""DDTree Workbench: explore, teach and debug tree-based speculative decoding (DDTree over a DFlash drafter)."""
import os

import torch

if not torch.cuda.is_available():
    # Without a GPU, Triton kernels (ddtree.kernels, SGLang's) run in Triton's interpreter. The switch must be on
    # before triton is first imported (transformers imports it), so it is set here.
    os.environ.setdefault("TRITON_INTERPRET", "1")

from ddtree.batch import (MaskCell, VerifyBatch, check_verify_batch, effective_mask, expected_mask,
                          pack_verify_batch)
from ddtree.budget import BudgetCosts
from ddtree.kv import compact_kv
from ddtree.record import RequestRound, RoundRecord, load_trace, save_trace
from ddtree.retrieve import parents_from_retrieve, retrieve_encoding
from ddtree.tree import (DraftTree, TreeBatch, build_tree, build_trees, chain_tree, root_tree, tree_attention_mask,
                         visibility)
from ddtree.verify import (VerifyResult, draw_coins, sample_walks, sampling_probs, verify_greedy, verify_greedy_batch,
                           verify_sampled, verify_sampled_batch)

__all__ = [
    "DraftTree", "TreeBatch", "build_tree", "build_trees", "chain_tree", "root_tree", "visibility", "tree_attention_mask",
    "retrieve_encoding", "parents_from_retrieve",
    "VerifyBatch", "MaskCell", "pack_verify_batch", "check_verify_batch", "expected_mask", "effective_mask",
    "VerifyResult", "verify_greedy", "verify_sampled", "verify_greedy_batch", "verify_sampled_batch", "sample_walks",
    "sampling_probs", "draw_coins",
    "compact_kv",
    "RoundRecord", "RequestRound", "save_trace", "load_trace",
    "Settings", "Session", "Generation", "check_lossless", "BudgetCosts",
]

_LAZY = {"Session": "ddtree.session", "Generation": "ddtree.generation", "Settings": "ddtree.settings",
         "check_lossless": "ddtree.lossless"}
_RENAMED = {"request_mask": "tree_attention_mask(tree, seq_len, rows)"}


def __getattr__(name):
    """The model-backed names import transformers, so they load on first use, not with `import ddtree`."""
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _RENAMED:
        raise AttributeError(f"ddtree.{name} is gone: use ddtree.{_RENAMED[name]}, the one mask builder")
    raise AttributeError(f"module 'ddtree' has no attribute {name!r}")
