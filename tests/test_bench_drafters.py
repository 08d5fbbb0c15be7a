"""bench/bench_drafters.py: a configuration measured on the native engine, on a tiny random pair (CPU, Triton's
interpreter). It once called bench_e2e.timed_run with a stale variant tuple and failed on the GPU."""
from bench_scripts import load_bench

from ddtree.models import tiny_random_pair

bench = load_bench("bench_drafters")


def test_a_configuration_is_measured_on_the_native_engine():
    pair = tiny_random_pair(seed=0)
    row = bench.measure(bench.load_bench_e2e(), pair, ["def f(x):"], "ddtree", 4, 1.0, 3, False)
    assert 1 <= row["acceptance"] <= pair.drafter.config.block_size
    assert row["draft_ms"] > 0 and row["round_ms"] > row["draft_ms"] and row["tokens_per_s"] > 0
