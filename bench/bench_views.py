"""View cost of one Explorer step on CPU: Step + re-render of every view, excluding the model.

An Explorer on a live SmolLM2 session (the trained drafter when it has shipped, else a random drafter: the views'
cost depends on the tree's shape, not on the drafter's quality) steps `--rounds` rounds at `--budget`. For each
step it times the whole Explorer.step, the Session.step inside it (drafter + target forwards + walk + record), and
the difference (building every figure and widget), both as wall time and as CPU time (this process plus the
graphviz `dot` children): on a shared machine the CPU time is the stable number. It also times serializing the
changed widget states to JSON (plotly's front-end module, sent once per widget, excluded), a proxy for what goes to
the front end, which no kernel-less run sends. Writes bench/results/views_cpu.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import date
from pathlib import Path

import torch

import ddtree
from ddtree.widgets import Explorer


def pair_for_bench():
    from ddtree.models import load_default_pair, load_pair, load_target, random_drafter_for
    try:
        return load_default_pair(), "trained drafter"
    except FileNotFoundError:
        target = load_target()
        return load_pair(target, random_drafter_for(target[0])), "random drafter (trained one not shipped yet)"


def descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def cpu_s() -> float:
    """CPU seconds of this process and its waited-for children (the `dot` runs)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def state_bytes(explorer) -> int:
    """JSON size of every widget state (each view's figure is re-sent whole); plotly's module (_esm) excluded."""
    return sum(len(json.dumps({k: v for k, v in w.get_state().items() if k != "_esm"}, default=str))
               for w in descendants(explorer))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()

    pair, drafter = pair_for_bench()
    session = ddtree.Session(pair, "Write a Python function that merges two sorted lists.", budget=args.budget)
    explorer = Explorer(session)
    model_s, model_cpu = [], []
    step = session.step

    def timed_step():
        t0, c0 = time.perf_counter(), cpu_s()
        record = step()
        model_s.append(time.perf_counter() - t0)
        model_cpu.append(cpu_s() - c0)
        return record

    session.step = timed_step
    explorer.step()  # warm-up: first figure builds pay one-time plotly/graphviz costs
    model_s.clear()
    model_cpu.clear()
    total_s, total_cpu, serialize_s, sizes = [], [], [], []
    for _ in range(args.rounds):
        t0, c0 = time.perf_counter(), cpu_s()
        explorer.step()
        total_s.append(time.perf_counter() - t0)
        total_cpu.append(cpu_s() - c0)
        t0 = time.perf_counter()
        sizes.append(state_bytes(explorer))
        serialize_s.append(time.perf_counter() - t0)
    views_ms = [1e3 * (t - m) for t, m in zip(total_s, model_s)]
    views_cpu_ms = [1e3 * (t - m) for t, m in zip(total_cpu, model_cpu)]
    nodes = session.records[-1].requests[0].n_nodes
    result = {
        "budget": args.budget, "rounds": args.rounds, "tree_nodes": nodes, "drafter": drafter,
        "views_ms_median": round(statistics.median(views_ms), 1), "views_ms_max": round(max(views_ms), 1),
        "views_cpu_ms_median": round(statistics.median(views_cpu_ms), 1),
        "load_average": round(os.getloadavg()[0], 1),
        "serialize_ms_median": round(1e3 * statistics.median(serialize_s), 1),
        "state_kb_median": round(statistics.median(sizes) / 1e3, 1),
        "model_step_ms_median": round(1e3 * statistics.median(model_s), 1),
        "date": date.today().isoformat(),
        "device": f"CPU: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
                  f"torch {torch.__version__}",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "views_cpu.json").write_text(json.dumps(result, indent=2))
    md = [f"# Explorer step: view cost on CPU ({result['date']}, {result['device']})", "",
          f"SmolLM2-135M target, {drafter}; budget {args.budget} ({nodes} tree nodes), {args.rounds} steps after one "
          f"warm-up step; 1-minute load average {result['load_average']} on this shared machine.", "",
          "| what | ms (median) |", "|---|---|",
          f"| Step + re-render of all views, model excluded: CPU time | {result['views_cpu_ms_median']} |",
          f"| the same, wall time | {result['views_ms_median']} (max {result['views_ms_max']}) |",
          f"| serializing every widget state to JSON (front-end proxy; {result['state_kb_median']} kB) | "
          f"{result['serialize_ms_median']} |",
          f"| the Session.step itself (drafter + target forwards, walk, record) | {result['model_step_ms_median']} |"]
    (args.out / "views_cpu.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
