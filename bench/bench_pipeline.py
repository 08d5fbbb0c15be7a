"""Per-stage time of one DDTree round on the embedded SmolLM2 pair, budgets 8..128, on CPU (or --device cuda).

Uses the shipped drafter when it exists (load_default_pair), else a random drafter (stage times do not depend on
the drafter's quality, acceptance does). Writes bench/results/pipeline_<device>.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
from datetime import date
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ddtree import Session
from ddtree.models import load_default_pair, load_pair, load_target, random_drafter_for
from ddtree.settings import STAGES

PROMPT = "Write a Python function that returns the n-th Fibonacci number, with a docstring."


def load(device: str):
    try:
        return load_default_pair(device=device), "trained (ddtree/assets/smollm2-dflash)"
    except FileNotFoundError:
        model, tokenizer = load_target(device=device)
        return load_pair((model, tokenizer), random_drafter_for(model)), "random (trained drafter not shipped)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    ap.add_argument("--rounds", type=int, default=8, help="rounds per budget (after one warm-up round)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    pair, drafter = load(args.device)
    rows = []
    base = Session(pair, PROMPT, method="ddtree", budget=args.budgets[0])
    for budget in tqdm(args.budgets, desc="budgets"):
        s = base.fork(budget=budget)
        s.step()  # warm-up
        records = [s.step() for _ in range(args.rounds)]
        row = {"budget": budget, "nodes": statistics.median(r.requests[0].n_nodes for r in records)}
        for stage in STAGES:
            row[f"{stage}_ms"] = round(statistics.median(r.times[stage] for r in records) * 1e3, 2)
        row["round_ms"] = round(statistics.median(sum(r.times.values()) for r in records) * 1e3, 2)
        row["acceptance"] = round(statistics.mean(r.requests[0].acceptance_length for r in records), 2)
        rows.append(row)
    device = (torch.cuda.get_device_name() if args.device.startswith("cuda")
              else f"CPU {platform.machine()}, {torch.get_num_threads()} torch threads")
    meta = {"date": date.today().isoformat(), "device": device, "torch": torch.__version__, "drafter": drafter,
            "dtype": str(pair.dtype), "rounds": args.rounds, "prompt": PROMPT}
    args.out.mkdir(parents=True, exist_ok=True)
    name = "pipeline_" + args.device.split(":")[0]
    (args.out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    cols = ["budget", "nodes"] + [f"{s}_ms" for s in STAGES] + ["round_ms", "acceptance"]
    md = [f"# One DDTree round, per stage (median of {args.rounds}; {meta['date']}, {device}, torch {meta['torch']}, "
          f"{meta['dtype']}, drafter: {drafter})", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    text = "\n".join(md) + "\n"
    (args.out / f"{name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
