"""Drafter shapes side by side on the native engine: acceptance per unit of draft time, on held-out prompts.

For each drafter folder (same target, loaded once) and each group (code, chat: the first --prompts of
ddtree.training.prompts' held-out split, kinds interleaved; `--split unseen`: of its prompts whose subject no training
prompt shares), times the DFlash chain and DDTree at --budgets, greedy (T=0) and, for the first budget, sampled
(T=1), with bench_e2e's timed_run (static cache, CUDA graphs on a GPU).
Reports acceptance (tokens per target forward), draft_ms (the drafter's time a round), acceptance per draft ms,
round_ms and tokens/s; the pick is the drafter with the highest DDTree acceptance per draft ms at the first budget
and T=0, summed over the groups (what a drafter shape trades: tokens per target forward for draft time).
Writes bench/results/drafters_<device>.{md,json}.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
from datetime import date
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ddtree.models import load_pair
from ddtree.training.prompts import GROUPS, PROMPTS_FILE, SPLITS, prompts_by_group

HERE = Path(__file__).resolve().parent
VARIANT = (True, False, False)  # bench_e2e.timed_run's (fused, exact, overlap): fused, not exact, stepped rounds


def load_bench_e2e():
    """bench_e2e.py as a module (loaded by path: `python -P` does not put bench/ on sys.path)."""
    spec = importlib.util.spec_from_file_location("bench_e2e", HERE / "bench_e2e.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(e2e, pair, prompts, method: str, budget: int, temperature: float, max_new: int, cuda: bool) -> dict:
    """One configuration on the native engine over `prompts` (bench_e2e's timed_run each): acceptance (tokens per
    target forward), the drafter's ms a round, their ratio, ms a round and tokens/s."""
    runs = [e2e.timed_run(pair, p, method, budget, temperature, max_new, True, cuda, VARIANT, {}) for p in prompts]
    rounds, wall = sum(r["rounds"] for r in runs), sum(r["wall"] for r in runs)
    acceptance = sum(r["accepted"] for r in runs) / rounds
    draft_ms = 1e3 * sum(r["stage"]["draft"] for r in runs) / rounds
    return {"acceptance": round(acceptance, 2), "draft_ms": round(draft_ms, 3),
            "acceptance_per_draft_ms": round(acceptance / draft_ms, 3), "round_ms": round(1e3 * wall / rounds, 3),
            "tokens_per_s": round(sum(r["tokens"] for r in runs) / wall, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("drafters", type=Path, nargs="+", help="drafter folders (config.json + safetensors shards)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budgets", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--prompts", type=int, default=8, help="first N held-out prompts of each group")
    ap.add_argument("--groups", nargs="+", default=list(GROUPS), choices=GROUPS)
    ap.add_argument("--split", choices=SPLITS[1:], default="heldout",
                    help="unseen: the held-out prompts whose subject no training prompt shares")
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--prompts-file", type=Path, default=PROMPTS_FILE,
                    help="a prompts file of ddtree.training.prompts' schema (bench/data/styled_prompts.json: "
                         "benchmark-style prompts; a synth run's prompts.json: its held-out prompts)")
    ap.add_argument("--name", default="", help="suffix of the results files' name")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()
    try:
        prompts = prompts_by_group(args.groups, args.split, args.prompts, args.prompts_file)
    except ValueError as e:
        ap.error(f"--split {args.split}: {e}")
    e2e = load_bench_e2e()
    cuda = args.device.startswith("cuda")
    base = load_pair(None, args.drafters[0], device=args.device)
    configs = [("dflash", 0, 0.0)] + [("ddtree", b, 0.0) for b in args.budgets] + [("ddtree", args.budgets[0], 1.0)]
    jobs = [(folder, group, config) for folder in args.drafters for group in args.groups for config in configs]
    rows, pairs = [], {}
    for folder, group, (method, budget, temperature) in tqdm(jobs, desc="configurations"):
        if folder not in pairs:
            pairs[folder] = load_pair((base.target, base.tokenizer), folder)
        pair = pairs[folder]
        rows.append({"drafter": folder.name, "layers": pair.drafter.config.num_hidden_layers, "group": group,
                     "method": method, "budget": budget or None, "T": temperature}
                    | measure(e2e, pair, prompts[group], method, budget, temperature, args.max_new, cuda))
    score = {folder.name: sum(r["acceptance_per_draft_ms"] for r in rows if r["drafter"] == folder.name and
                              r["method"] == "ddtree" and r["budget"] == args.budgets[0] and r["T"] == 0)
             for folder in args.drafters}
    pick = max(score, key=score.get)
    device = torch.cuda.get_device_name() if cuda else f"CPU {platform.machine()}, {torch.get_num_threads()} threads"
    meta = {"date": date.today().isoformat(), "device": device, "torch": torch.__version__, "dtype": str(base.dtype),
            "prompts": {group: len(found) for group, found in prompts.items()}, "split": args.split,
            "max_new": args.max_new, "pick": pick, "prompts_file": args.prompts_file.name}
    name = "_".join(["drafters", args.device.split(":")[0]] + [args.name] * bool(args.name))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    cols = list(rows[0])
    side = "held-out prompts" if args.split == "heldout" else "held-out prompts of subjects never trained on"
    if args.prompts_file != PROMPTS_FILE:
        side += f" of {args.prompts_file.name}"
    counts = ", ".join(f"{n} {group}" for group, n in meta["prompts"].items())
    md = [f"# Drafter shapes ({meta['date']}, {device}, torch {meta['torch']}, {meta['dtype']}; {side}, {counts} x "
          f"{args.max_new} new tokens)", "", "| " + " | ".join(cols) + " |",
          "|" + "---|" * len(cols)]
    md += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    md += ["", f"Pick (highest DDTree-{args.budgets[0]} T=0 acceptance per draft ms, summed over the groups): "
           f"**{pick}** " + ", ".join(f"{k}: {v:.1f}" for k, v in score.items())]
    text = "\n".join(md) + "\n"
    (args.out / f"{name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
