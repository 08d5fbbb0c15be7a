"""Where the device tree build's time goes, and how its launch settings move it (CUDA, graphed as in a round).

The tree stage of a round (ddtree.engine.device_round) is log_softmax over the draft logits then
ddtree.kernels.tree_build.select_trees. This times that stage replayed from a CUDA graph (mean of --replays) per
budget (the selection's two schedules side by side: one program per request, a launch per depth), lists its kernels
with their GPU times (torch.profiler, one eager call at the largest budget), times the
top-K stage against torch.topk on the same packed keys, and with --sweep tries the module's launch settings at the
largest budget (every setting's trees checked equal to the default's).
Writes <out>/tree_build_profile.md.
"""
from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import torch

import ddtree.kernels.tree_build as tb
from ddtree.engine.device_round import side_stream

SMALL_LIMIT = 128  # the largest budget the one-program selection is timed at
SETTINGS = ("TOP_K_CHUNK", "MERGE_WIDTH", "TOP_K_WARPS", "RANK_BLOCK", "RANK_CHUNK", "RANK_WARPS")


def stage(dlogits, budget):
    return tb.select_trees(torch.log_softmax(dlogits, dim=-1), budget)


def packed_keys(logq):
    """The top-K kernels' int64 keys (value desc, token asc; all distinct) in torch ops: for timing torch.topk."""
    bits = logq.contiguous().view(torch.int32).long()
    ordered = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    tokens = torch.arange(logq.shape[-1], device=logq.device)
    return (ordered << 32) | (logq.shape[-1] - 1 - tokens)


def graphed_ms(dlogits, budget: int, replays: int, fn=stage) -> float:
    with side_stream():
        fn(dlogits, budget)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(dlogits, budget)
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / replays


def kernel_table(dlogits, budget: int) -> list[str]:
    stage(dlogits, budget)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        stage(dlogits, budget)
        torch.cuda.synchronize()
    rows = [(e.key, e.count, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0]
    rows.sort(key=lambda r: -r[2])
    return ["| kernel | launches | GPU us |", "|---|---|---|"] + [
        f"| {k[:70]} | {n} | {t:.1f} |" for k, n, t in rows] + [
        f"| total | {sum(r[1] for r in rows)} | {sum(r[2] for r in rows):.1f} |"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--depth", type=int, default=15)
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256])
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--sweep", action="store_true", help="sweep the launch settings at the largest budget")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    torch.manual_seed(0)
    dlogits = torch.randn(args.batch, args.depth, args.vocab, device="cuda") * 3  # [B, depth, V] float32
    top = max(args.budgets)
    md = [f"# Device tree build, {torch.cuda.get_device_name()} (B={args.batch}, depth {args.depth}, vocab "
          f"{args.vocab}; `python bench/profile_tree_build.py {' '.join(map(str, ['--budgets', *args.budgets]))}`)",
          "", "Graphed tree stage (log_softmax + select_trees), mean of "
          f"{args.replays} replays, with the selection as select_from_top_k schedules it (one program per request up "
          f"to SMALL_MAX_BUDGET = {tb.SMALL_MAX_BUDGET}) and with each schedule forced (one program per request only up "
          f"to budget {SMALL_LIMIT}):", "",
          "| budget | graphed us | one program per request | a launch per depth | same trees |", "|---|---|---|---|---|"]
    chosen = tb.SMALL_MAX_BUDGET
    for budget in args.budgets:
        row, trees = [f"{1e3 * graphed_ms(dlogits, budget, args.replays):.1f}"], []
        for forced in (SMALL_LIMIT, 0):
            tb.SMALL_MAX_BUDGET = forced
            if budget <= forced or forced == 0:
                trees.append(stage(dlogits, budget))
                row.append(f"{1e3 * graphed_ms(dlogits, budget, args.replays):.1f}")
            else:
                row.append("")
        tb.SMALL_MAX_BUDGET = chosen
        same = all(torch.equal(a, b) for a, b in zip(*trees)) if len(trees) == 2 else ""
        md.append(f"| {budget} | " + " | ".join(row) + f" | {same} |")
    md += ["", f"Kernels of one eager call at budget {top}:", "", *kernel_table(dlogits, top)]
    logq = torch.log_softmax(dlogits, dim=-1)
    keys = packed_keys(logq)
    md += ["", "The top-K stage alone, graphed us: the kernels (ddtree.kernels.tree_build.top_k) vs torch.topk on "
           "the same packed int64 keys (packing not timed):", "", "| k | top_k kernels | torch.topk | same |",
           "|---|---|---|---|"]
    for b in args.budgets:
        tokens = tb.top_k(logq, b)[1]
        torch_tokens = logq.shape[-1] - 1 - (torch.topk(keys, b).values & 0xFFFFFFFF)
        md.append(f"| {b} | {1e3 * graphed_ms(logq, b, args.replays, tb.top_k):.1f} | "
                  f"{1e3 * graphed_ms(keys, b, args.replays, lambda x, k: torch.topk(x, k)):.1f} | "
                  f"{torch.equal(tokens, torch_tokens)} |")
    if args.sweep:
        default = {name: getattr(tb, name) for name in SETTINGS}
        want = stage(dlogits, top)
        md += ["", f"Launch settings at budget {top} (graphed us; trees equal to the default's):", "",
               "| " + " | ".join(SETTINGS) + " | graphed us | same |", "|" + "---|" * (len(SETTINGS) + 2)]
        top_k_grid = [dict(zip(SETTINGS[:3], v)) for v in itertools.product((1024, 2048, 4096), (1024, 4096), (4, 8))]
        rank_grid = [dict(zip(SETTINGS[3:], v)) for v in itertools.product((4, 8, 16), (512, 1024), (4, 8))]
        for change in top_k_grid + rank_grid:
            values = default | change
            for name, value in values.items():
                setattr(tb, name, value)
            try:
                got = stage(dlogits, top)
                same = all(torch.equal(a, b) for a, b in zip(got, want))
                ms = graphed_ms(dlogits, top, args.replays // 4)
                md.append("| " + " | ".join(str(values[n]) for n in SETTINGS) + f" | {1e3 * ms:.1f} | {same} |")
            except Exception as e:  # a setting the kernels cannot take (registers, shared memory)
                md.append("| " + " | ".join(str(values[n]) for n in SETTINGS) + f" | {type(e).__name__} | |")
        for name, value in default.items():
            setattr(tb, name, value)
    text = "\n".join(md) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tree_build_profile.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
