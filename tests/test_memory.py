"""Issue 17, finding 7: long runs keep no tensors alive beyond the KV caches and the records (the RSS growth seen
on the embedded pair is glibc's allocator retaining freed blocks: bench/bench_memory.py, bench/results/memory_cpu.md).
"""
import gc

import pytest
import torch

from ddtree import Session
from ddtree.models import tiny_random_pair


def live_tensor_bytes() -> int:
    seen, total = set(), 0
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor or type(obj) is torch.nn.Parameter:
            storage = obj.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
    return total


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_rounds_keep_no_tensors_alive_beyond_the_caches(backend):
    pair = tiny_random_pair(0)
    s = Session(pair, "memory", budget=12, backend=backend)
    per_token = 2 * pair.target.config.num_hidden_layers * pair.target.config.num_key_value_heads * \
        (pair.target.config.hidden_size // pair.target.config.num_attention_heads) * 4  # target K+V bytes a token
    for _ in range(3):
        s.step()
    s.records.clear()
    gc.collect()
    before = live_tensor_bytes()
    committed = 0
    for _ in range(40):
        committed += s.step().requests[0].acceptance_length
        s.records.clear()
    gc.collect()
    grown = live_tensor_bytes() - before
    # the reference cache grows by the committed tokens (plus the drafter's context features); the native caches
    # are allocated up front and do not grow at all
    assert grown <= 4 * per_token * committed + 64 * 1024, (grown, committed)
