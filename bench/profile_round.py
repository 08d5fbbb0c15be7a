"""Where a device round's time goes, on the embedded pair: per-stage CUDA-event times with graphs, and the kernels
each stage launches (torch.profiler over one eager round). Prints a table per configuration and, with --kernels,
each stage's kernels by name (launches, eager GPU us).

    python bench/profile_round.py --methods ar dflash ddtree --budget 64 [--no-fused] [--kernels]
"""
from __future__ import annotations

import argparse
from collections import defaultdict

import torch

from ddtree import Session
from ddtree.models import load_default_pair
from ddtree.settings import STAGES

PROMPT = "Write a Python function that checks whether a string is a palindrome."


def stage_kernels(session) -> tuple[dict, dict]:
    """({stage: [kernel launches, GPU ms]}, {stage: {kernel name: [launches, GPU us]}}) over one eager round."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                            torch.profiler.ProfilerActivity.CPU]) as prof:
        session.step()
    torch.cuda.synchronize()
    out, names = defaultdict(lambda: [0, 0.0]), defaultdict(lambda: defaultdict(lambda: [0, 0.0]))
    spans = [(e.name, e.time_range.start, e.time_range.end) for e in prof.events() if e.name in STAGES]
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        launch = e.cpu_parent.time_range.start if e.cpu_parent is not None else e.time_range.start
        stage = next((n for n, a, b in spans if a <= launch <= b), "other")
        out[stage][0] += 1
        out[stage][1] += e.device_time / 1e3
        names[stage][e.name][0] += 1
        names[stage][e.name][1] += e.device_time
    return dict(out), names


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", nargs="+", default=["ar", "dflash", "ddtree"])
    ap.add_argument("--budget", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--fused", action=argparse.BooleanOptionalAction, default=True,
                    help="the fused target and drafter forwards (--no-fused: the modules' own forwards)")
    ap.add_argument("--kernels", action="store_true", help="list each stage's kernels by name")
    args = ap.parse_args()
    pair = load_default_pair(device="cuda")
    for method in args.methods:
        graphed = Session(pair, [PROMPT], method=method, budget=args.budget, cuda_graphs=True, record=False,
                          fused=args.fused)
        for _ in range(2):
            graphed.step()
        records = [graphed.step() for _ in range(args.rounds)]
        eager = Session(pair, [PROMPT], method=method, budget=args.budget, record=False, fused=args.fused)
        eager.step()
        kernels, names = stage_kernels(eager)
        print(f"\n{method} (budget {args.budget if method == 'ddtree' else '-'}): per round")
        print("| stage | graphed ms | eager kernels | eager GPU ms |\n|---|---|---|---|")
        for stage in STAGES:
            ms = 1e3 * sum(r.times[stage] for r in records) / len(records)
            n, gpu = kernels.get(stage, (0, 0.0))
            print(f"| {stage} | {ms:.3f} | {n} | {gpu:.3f} |")
        for stage in STAGES if args.kernels else ():
            rows = sorted(names[stage].items(), key=lambda kv: -kv[1][0])
            print(f"  {stage}: " + "; ".join(f"{n} x{c} {us:.0f}us" for n, (c, us) in rows))


if __name__ == "__main__":
    main()
