"""End to end on the embedded pair: autoregressive vs DFlash chain vs DDTree budgets (fixed, and "auto"), greedy (T=0)
and sampled (T=1), on two prompt sets: code prompts (the drafter's home ground) and general chat prompts
(explanations, recipes, summaries, advice).

All methods run on the same native engine (static cache, Triton tree attention and CUDA graphs on a GPU; the fused
target and drafter forwards unless --no-fused, both with --compare-unfused), so the ratios are fair; the plain
Hugging Face path is timed for reference. Per prompt and configuration two rounds (the first warms up, the second
captures the graphs; budget="auto" measures its cost table, then captures every candidate budget's round in the
first) precede the timed run. The auto cost table is measured once per engine variant and given to the later
sessions (budget_costs). Stage times are CUDA-event times of the device round (ddtree.engine.device_round):
overhead_pct = draft + tree + pack + commit as a share of the round's wall time, spec_pct = the same plus the walk
(everything speculation adds around the verify forward), walk_ms = the walk's time a round, host_pct = the wall
time no stage covers (the device waiting for launches, readbacks, Python: with overlapped rounds only the gaps
between stage graphs), mean_budget = the budget the rounds used (auto:
chosen), setup_s = the seconds before the timed run (the session made, its prefill, the warm-up rounds, the auto
cost table: what a user waits before the first timed token), x_ar_cold = the speed over autoregressive with setup_s
counted, switch_pct = the share of auto rounds whose budget differs from the round before (--auto-margin sets
ddtree.budget.MARGIN, how much faster another candidate must look to change budget).
Autoregressive rows run the target alone (a pair without the drafter: no drafter context to extend). Ratios
x_ar / x_dflash compare rows of the same prompt set, path and temperature; with --exact every native row
is timed again in bit-exact mode (Session(exact=True)) and x_fast is its speed over the same row's fast mode. Native
GPU runs overlap rounds (Session(overlap=True): each round queued before the previous one is read back); with
--compare-overlap every native row is timed again stepped (path "... stepped") and x_stepped is the overlapped
row's speed over it. With --compare-default every configuration is timed again as a user who names no flag runs
it (path "default": Session(pair, prompt, method=..., budget=..., verify=...), records kept, the backend and fast
paths the defaults pick), and its x_fast is its speed over the fast native row (issue 42: at least 0.9).
Writes bench/results/e2e_<device>.{md,json}.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from datetime import date
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ddtree import Session
from ddtree import budget as auto_budget
from ddtree.demo import budget_option
from ddtree.kernels import decode_linear
from ddtree.models import load_default_pair, load_pair

PROMPT_SETS = {
    "code": [
        "Write a Python function that checks whether a string is a palindrome.",
        "Explain what a hash table is and when to use one.",
        "Write a Python class for a stack with push, pop and peek.",
        "What does the zip function do in Python? Give an example.",
        "Write a Python function that returns the n-th Fibonacci number iteratively.",
        "How do I read a CSV file in Python and sum one of its columns?",
        "Write a Python function that merges two sorted lists into one sorted list.",
        "Explain the difference between a list and a tuple in Python.",
    ],
    "chat": [
        "Explain why the sky is blue in simple terms.",
        "Give me a simple recipe for a vegetable soup, with the ingredients first.",
        "Summarize the story of Romeo and Juliet in a few sentences.",
        "What are some tips for sleeping better at night?",
        "How can I prepare for a job interview?",
        "Explain how vaccines help the body fight disease.",
        "Write a short recipe for pancakes.",
        "I feel stressed before exams. What can I do to stay calm?",
    ],
}
OVERHEAD = ("draft", "tree", "pack", "commit")
SPECULATION = OVERHEAD + ("walk",)


def generated_count(session) -> int:
    """Tokens generated so far by the session's (single) request (isolated: Session.generated may change)."""
    return len(session.generated[0])


def timed_run(pair, prompt, method, budget, temperature, max_new, native: bool, cuda: bool, variant,
              costs: dict) -> dict:
    """variant: (fused, exact, overlap) of a native run, or "default": the Session a user names no flag for."""
    verify = "greedy" if temperature == 0 else "sampled"
    kwargs = dict(method=method, budget=budget, verify=verify, temperature=temperature or 1.0, seed=0)
    t_setup = time.perf_counter()
    if variant == "default":
        s = Session(pair, prompt, **kwargs)
        s.step()
    elif native:
        fused, exact, overlap = variant
        if budget == "auto" and (fused, exact) in costs:
            kwargs["budget_costs"] = costs[fused, exact]
        s = Session(pair, prompt, backend="native", cuda_graphs=cuda, record=False, fused=fused, exact=exact,
                    overlap=overlap and cuda, **kwargs)
        s.step()  # warm-up round; the next one captures the round's graphs
        if budget == "auto":
            costs.setdefault((fused, exact), s.budget_costs)
    else:
        s = Session(pair, prompt, backend="reference", **kwargs)
    s.step()
    start, first = generated_count(s), len(s.records)
    t0 = time.perf_counter()
    setup = t0 - t_setup
    gen = s.run(start + max_new, stop_on_eos=False)[0]
    wall = time.perf_counter() - t0
    records = s.records[first:]
    stage = {k: sum(r.times[k] for r in records) for k in records[0].times}
    return {"tokens": len(gen.tokens) - start, "wall": wall, "setup": setup, "rounds": len(records), "stage": stage,
            "accepted": sum(gen.acceptance_lengths[-len(records):]), "budgets": sum(r.budget for r in records),
            "switches": sum(a.budget != b.budget for a, b in zip(records, records[1:]))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budgets", type=budget_option, nargs="+", default=[8, 16, 32, 64, 128, 256, "auto"])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--prompt-set", choices=["code", "chat", "both"], default="both")
    ap.add_argument("--fused", action=argparse.BooleanOptionalAction, default=None,
                    help="the fused target and drafter forwards (--no-fused: the modules' own forwards; default: on "
                         "CUDA, where their kernels compile, not on a CPU, where they would run in Triton's "
                         "interpreter)")
    ap.add_argument("--compare-unfused", action="store_true", help="also time every native row unfused")
    ap.add_argument("--exact", action="store_true", help="also time every native row in bit-exact mode (exact=True)")
    ap.add_argument("--compare-overlap", action="store_true",
                    help="also time every native row stepped (overlap=False: each round read back before the next)")
    ap.add_argument("--compare-default", action="store_true",
                    help="also time every configuration as Session(pair, prompt) with no flags (path 'default')")
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--hf-max-new", type=int, default=48)
    ap.add_argument("--prompts", type=int, default=None, help="the first N prompts of each set")
    ap.add_argument("--skip-hf", action="store_true", help="time the native engine only")
    ap.add_argument("--drafter", type=Path, help="a drafter folder instead of the shipped drafter")
    ap.add_argument("--decode-rows", type=int, default=None,
                    help="forwards of at most this many rows take the decode kernels (default: "
                         "ddtree.kernels.decode_linear.DECODE_ROWS)")
    ap.add_argument("--auto-margin", type=float, default=None,
                    help="budget='auto' changes budget only for a candidate expected this much faster (default: "
                         "ddtree.budget.MARGIN)")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default=None,
                    help="the pair's dtype (default: load_pair's: bfloat16 on a GPU and on a CPU with native bfloat16, "
                         "else float32)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    if args.decode_rows is not None:
        decode_linear.DECODE_ROWS = args.decode_rows  # read by every NativeDecoder made from here on
    if args.auto_margin is not None:
        auto_budget.MARGIN = args.auto_margin  # read by every choice from here on
    cuda = args.device.startswith("cuda")
    args.fused = cuda if args.fused is None else args.fused
    dtype = None if args.dtype is None else getattr(torch, args.dtype)
    pair = load_pair(None, args.drafter, device=args.device, dtype=dtype) if args.drafter else \
        load_default_pair(device=args.device, dtype=dtype)
    sets = ["code", "chat"] if args.prompt_set == "both" else [args.prompt_set]
    prompts = {name: PROMPT_SETS[name][:args.prompts] for name in sets}
    variants = ([(args.fused, False, True)] + [(not args.fused, False, True)] * args.compare_unfused
                + [(True, True, True)] * args.exact + [(args.fused, False, False)] * args.compare_overlap)
    configs = [("ar", 0), ("dflash", 0)] + [("ddtree", b) for b in args.budgets]
    jobs = [(p, t, m, b, True, f) for p in sets for f in variants for t in args.temperatures for m, b in configs]
    if args.compare_default:
        jobs += [(p, t, m, b, True, "default") for p in sets for t in args.temperatures for m, b in configs]
    if not args.skip_hf:
        jobs += [(p, t, m, b, False, None) for p in sets for t in args.temperatures
                 for m, b in [("ar", 0), ("ddtree", 32)]]
    rows, costs = [], {}  # costs: (fused, exact) -> the auto cost table measured by the first auto session
    alone = dataclasses.replace(pair, drafter=None)  # autoregressive decoding needs no drafter (its context)
    for prompt_set, temperature, method, budget, native, variant in tqdm(jobs, desc="configurations"):
        runs = [timed_run(alone if method == "ar" else pair, p, method, budget, temperature,
                          args.max_new if native else args.hf_max_new, native, cuda, variant, costs)
                for p in prompts[prompt_set]]
        tokens, wall, setup, rounds = (sum(r[k] for r in runs) for k in ("tokens", "wall", "setup", "rounds"))
        stage = {k: sum(r["stage"][k] for r in runs) for k in runs[0]["stage"]}
        path = "default" if variant == "default" else ("native" + ("+graphs" if cuda else "")
                                                       + ("" if variant[0] else " unfused")
                                                       + (" exact" if variant[1] else "")
                                                       + ("" if variant[2] else " stepped")) if native else "hf"
        rows.append({"prompts": prompt_set, "path": path, "T": temperature, "method": method,
                     "budget": budget if method == "ddtree" else None,
                     "tokens_per_s": round(tokens / wall, 1),
                     "setup_s": round(setup / len(runs), 3), "cold_tokens_per_s": round(tokens / (wall + setup), 1),
                     "acceptance": round(sum(r["accepted"] for r in runs) / rounds, 2),
                     "mean_budget": round(sum(r["budgets"] for r in runs) / rounds, 1) if method == "ddtree" else None,
                     "switch_pct": (round(100 * sum(r["switches"] for r in runs) / rounds, 1) if budget == "auto"
                                    else None),
                     "round_ms": round(1e3 * wall / rounds, 3),
                     "verify_ms": round(1e3 * stage["verify"] / rounds, 3),
                     "walk_ms": round(1e3 * stage["walk"] / rounds, 3),
                     "overhead_pct": round(100 * sum(stage[k] for k in OVERHEAD) / wall, 1),
                     "spec_pct": round(100 * sum(stage[k] for k in SPECULATION) / wall, 1),
                     "host_pct": round(100 * (wall - sum(stage.values())) / wall, 1)})
    same = lambda a, b: all(a[k] == b[k] for k in ("prompts", "path", "T"))  # noqa: E731
    for row in rows:
        base = next(r for r in rows if same(r, row) and r["method"] == "ar")
        chain = next((r for r in rows if same(r, row) and r["method"] == "dflash"), None)
        row["x_ar"] = round(row["tokens_per_s"] / base["tokens_per_s"], 2)
        row["x_ar_cold"] = round(row["cold_tokens_per_s"] / base["cold_tokens_per_s"], 2)
        row["x_dflash"] = round(row["tokens_per_s"] / chain["tokens_per_s"], 2) if chain else None
        fast = ("native" + "+graphs" * cuda) if row["path"] == "default" else row["path"].removesuffix(" exact")
        row["x_fast"] = speed_over(rows, row, fast) if fast != row["path"] else None
        row["x_stepped"] = speed_over(rows, row, row["path"] + " stepped")
    device = torch.cuda.get_device_name() if cuda else f"CPU {platform.machine()}, {torch.get_num_threads()} threads"
    meta = {"date": date.today().isoformat(), "device": device, "torch": torch.__version__, "dtype": str(pair.dtype),
            "prompt_sets": {name: len(p) for name, p in prompts.items()}, "max_new": args.max_new,
            "hf_max_new": args.hf_max_new, "drafter": str(args.drafter or "shipped"),
            "decode_rows": decode_linear.DECODE_ROWS, "auto_margin": auto_budget.MARGIN,
            "auto_costs": {("fused" if f else "unfused") + (" exact" if e else ""): c.to_dict()
                           for (f, e), c in costs.items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    name = "e2e_" + args.device.split(":")[0]
    (args.out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    cols = ["prompts", "path", "T", "method", "budget", "tokens_per_s", "setup_s", "x_ar_cold", "acceptance",
            "mean_budget", "switch_pct", "round_ms", "verify_ms", "walk_ms", "overhead_pct", "spec_pct", "host_pct",
            "x_ar", "x_dflash", "x_fast",
            "x_stepped"]
    md = [f"# End to end ({meta['date']}, {device}, torch {meta['torch']}, {meta['dtype']}, prompts "
          + ", ".join(f"{k} x {v}" for k, v in meta["prompt_sets"].items())
          + f", {args.max_new} new tokens each; hf path {args.hf_max_new}; decode kernels up to "
          f"{meta['decode_rows']} rows; auto margin {meta['auto_margin']})", "",
          "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    md += ["", *summary(rows)]
    for variant, table in meta["auto_costs"].items():
        md.append(f"Auto cost table ({variant}): " + ", ".join(
            f"{b}: {1e3 * s:.3f} ms" for b, s in zip(table["budgets"], table["seconds"])))
    text = "\n".join(md) + "\n"
    (args.out / f"{name}.md").write_text(text)
    print(text)


def speed_over(rows: list[dict], row: dict, path: str) -> float | None:
    """row's speed over the same configuration (prompt set, T, method, budget) on `path`; None without that row."""
    other = next((r for r in rows if r["path"] == path
                  and all(r[k] == row[k] for k in ("prompts", "T", "method", "budget"))), None)
    return round(row["tokens_per_s"] / other["tokens_per_s"], 2) if other else None


def summary(rows: list[dict]) -> list[str]:
    """Per prompt set and native path: autoregressive speed, the best fixed budget and auto at each temperature."""
    out = []
    for key in sorted({(r["prompts"], r["path"]) for r in rows if r["path"] != "hf"}):
        group = [r for r in rows if (r["prompts"], r["path"]) == key]
        for t in sorted({r["T"] for r in group}):
            at = [r for r in group if r["T"] == t]
            ar = next(r for r in at if r["method"] == "ar")
            fixed = [r for r in at if r["method"] == "ddtree" and r["budget"] != "auto"]
            auto = next((r for r in at if r["budget"] == "auto"), None)
            line = f"{key[0]} prompts, {key[1]}, T={t:g}: autoregressive {ar['tokens_per_s']} tok/s"
            if fixed:
                best = max(fixed, key=lambda r: r["tokens_per_s"])
                line += (f"; best fixed DDTree budget {best['budget']}: {best['tokens_per_s']} tok/s "
                         f"({best['x_ar']}x autoregressive, {best['x_dflash']}x the chain, speculation "
                         f"{best['spec_pct']}% of a round)")
            if auto:
                line += (f"; auto: {auto['tokens_per_s']} tok/s ({auto['x_ar']}x autoregressive, {auto['x_dflash']}x "
                         f"the chain, mean budget {auto['mean_budget']}"
                         + (f", {auto['tokens_per_s'] / best['tokens_per_s']:.2f}x the best fixed" if fixed else "")
                         + ")")
            out.append(line)
    return out


if __name__ == "__main__":
    main()
