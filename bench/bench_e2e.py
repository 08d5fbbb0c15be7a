"""End to end on the embedded pair: autoregressive vs DFlash chain vs DDTree budgets, greedy (T=0) and sampled (T=1).

All three run on the same native engine (static cache, Triton tree attention and CUDA graphs on a GPU), so the
ratios are fair; the plain Hugging Face path is timed for reference. Per prompt and configuration two
rounds (the first warms up, the second captures the graphs) precede the timed run. Stage times are CUDA-event
times of the device round (ddtree.engine.device_round): overhead_pct = draft + tree + pack + commit (the issue's
overhead: what speculation adds around the verify forward and its walk) as a share of the round's wall time,
walk_ms = the walk's time a round, host_pct = the wall time no stage covers (launches, the readback, Python).
Writes bench/results/e2e_<device>.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import date
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ddtree import Session
from ddtree.models import load_default_pair

PROMPTS = [
    "Write a Python function that checks whether a string is a palindrome.",
    "Explain what a hash table is and when to use one.",
    "Write a Python class for a stack with push, pop and peek.",
    "What does the zip function do in Python? Give an example.",
]
OVERHEAD = ("draft", "tree", "pack", "commit")


def timed_run(pair, prompt, method, budget, temperature, max_new, native: bool, cuda: bool) -> dict:
    verify = "greedy" if temperature == 0 else "sampled"
    kwargs = dict(method=method, budget=budget, verify=verify, temperature=temperature or 1.0, seed=0)
    if native:
        s = Session(pair, prompt, backend="native", cuda_graphs=cuda, record=False, **kwargs)
        s.step()  # warm-up round; the next one captures the round's graphs
    else:
        s = Session(pair, prompt, backend="reference", **kwargs)
    s.step()
    start, first = len(s.generated[0]), len(s.records)
    t0 = time.perf_counter()
    gen = s.run(start + max_new, stop_on_eos=False)[0]
    wall = time.perf_counter() - t0
    records = s.records[first:]
    stage = {k: sum(r.times[k] for r in records) for k in records[0].times}
    return {"tokens": len(gen.tokens) - start, "wall": wall, "rounds": len(records), "stage": stage,
            "accepted": sum(gen.acceptance_lengths[-len(records):])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--hf-max-new", type=int, default=48)
    ap.add_argument("--prompts", type=int, default=len(PROMPTS))
    ap.add_argument("--skip-hf", action="store_true", help="time the native engine only")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    pair = load_default_pair(device=args.device)
    prompts = PROMPTS[:args.prompts]
    configs = [("ar", 0), ("dflash", 0)] + [("ddtree", b) for b in args.budgets]
    rows = []
    jobs = [(t, m, b, True) for t in args.temperatures for m, b in configs]
    if not args.skip_hf:
        jobs += [(t, m, b, False) for t in args.temperatures for m, b in [("ar", 0), ("ddtree", 32)]]
    for temperature, method, budget, native in tqdm(jobs, desc="configurations"):
        runs = [timed_run(pair, p, method, budget, temperature, args.max_new if native else args.hf_max_new,
                          native, cuda) for p in prompts]
        tokens, wall, rounds = (sum(r[k] for r in runs) for k in ("tokens", "wall", "rounds"))
        stage = {k: sum(r["stage"][k] for r in runs) for k in runs[0]["stage"]}
        rows.append({"path": "native" + ("+graphs" if cuda else "") if native else "hf", "T": temperature,
                     "method": method, "budget": budget if method == "ddtree" else None,
                     "tokens_per_s": round(tokens / wall, 1),
                     "acceptance": round(sum(r["accepted"] for r in runs) / rounds, 2),
                     "round_ms": round(1e3 * wall / rounds, 2),
                     "verify_ms": round(1e3 * stage["verify"] / rounds, 2),
                     "walk_ms": round(1e3 * stage["walk"] / rounds, 3),
                     "overhead_pct": round(100 * sum(stage[k] for k in OVERHEAD) / wall, 1),
                     "host_pct": round(100 * (wall - sum(stage.values())) / wall, 1)})
    for row in rows:
        base = next(r for r in rows if r["path"] == row["path"] and r["T"] == row["T"] and r["method"] == "ar")
        chain = next((r for r in rows if r["path"] == row["path"] and r["T"] == row["T"] and r["method"] == "dflash"),
                     None)
        row["x_ar"] = round(row["tokens_per_s"] / base["tokens_per_s"], 2)
        row["x_dflash"] = round(row["tokens_per_s"] / chain["tokens_per_s"], 2) if chain else None
    device = torch.cuda.get_device_name() if cuda else f"CPU {platform.machine()}, {torch.get_num_threads()} threads"
    meta = {"date": date.today().isoformat(), "device": device, "torch": torch.__version__, "dtype": str(pair.dtype),
            "prompts": len(prompts), "max_new": args.max_new, "hf_max_new": args.hf_max_new}
    args.out.mkdir(parents=True, exist_ok=True)
    name = "e2e_" + args.device.split(":")[0]
    (args.out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    cols = ["path", "T", "method", "budget", "tokens_per_s", "acceptance", "round_ms", "verify_ms", "walk_ms",
            "overhead_pct",
            "host_pct", "x_ar", "x_dflash"]
    md = [f"# End to end ({meta['date']}, {device}, torch {meta['torch']}, {meta['dtype']}, {len(prompts)} prompts x "
          f"{args.max_new} new tokens; hf path {args.hf_max_new})", "",
          "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    best = max((r for r in rows if r["method"] == "ddtree" and r["T"] == 0 and r["path"] != "hf"),
               key=lambda r: r["tokens_per_s"], default=None)
    if best:
        md += ["", f"Best DDTree budget at T=0: {best['budget']} ({best['x_ar']}x autoregressive, "
                   f"{best['x_dflash']}x the DFlash chain, overhead {best['overhead_pct']}% of a round, "
                   f"host gap {best['host_pct']}%)"]
    text = "\n".join(md) + "\n"
    (args.out / f"{name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
