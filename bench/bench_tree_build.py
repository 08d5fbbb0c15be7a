"""Tree build time on CPU: `ddtree.build_tree` for budgets 16..1024, depth 16, vocab 49152.

Reports the median of several runs, split into the log-softmax + sort part and the heap part, and writes
bench/results/tree_build_cpu.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import date
from pathlib import Path

import torch
from tqdm.auto import tqdm

import ddtree
from ddtree.tree import _draft_logprobs, _select


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--budgets", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512, 1024])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()

    torch.manual_seed(0)
    logits = torch.randn(args.depth, args.vocab) * 3  # [depth, vocab]
    logq = _draft_logprobs(logits, 1.0)
    rows = []
    for budget in tqdm(args.budgets, desc="budgets"):
        total = median_ms(lambda: ddtree.build_tree(logits, budget), args.repeats)
        heap = median_ms(lambda: _select(logq, budget), args.repeats)
        rows.append({"budget": budget, "total_ms": round(total, 3), "heap_and_sort_ms": round(heap, 3),
                     "nodes": ddtree.build_tree(logits, budget).n_nodes})
    meta = {"date": date.today().isoformat(), "device": f"CPU: {platform.processor() or platform.machine()}, "
            f"{torch.get_num_threads()} torch threads", "torch": torch.__version__, "depth": args.depth,
            "vocab": args.vocab, "repeats": args.repeats}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tree_build_cpu.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    table = ["| budget | nodes | build_tree ms (median) | of which top-K sort + heap ms |", "|---|---|---|---|"]
    table += [f"| {r['budget']} | {r['nodes']} | {r['total_ms']:.2f} | {r['heap_and_sort_ms']:.2f} |" for r in rows]
    md = f"# build_tree on CPU ({meta['date']}, {meta['device']}, torch {meta['torch']})\n\n" \
         f"depth {args.depth}, vocab {args.vocab}\n\n" + "\n".join(table) + "\n"
    (args.out / "tree_build_cpu.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
