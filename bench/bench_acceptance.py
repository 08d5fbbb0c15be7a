"""Acceptance length of the shipped SmolLM2 DFlash drafter on held-out prompts (CPU, float32).

Mean acceptance length = committed tokens per target forward (verify round), pooled over the prompts, for the
DFlash chain and for DDTree at several node budgets, with greedy verification (T = 0) and exact sampled
verification (T = 1). Optionally runs ddtree.check_lossless on the first prompts. Writes
bench/results/acceptance.{md,json} and bench/results/acceptance_vs_budget.png.
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

from ddtree import Session, check_lossless
from ddtree.models import load_default_pair, load_pair
from ddtree.training.prompts import load_prompts


def configs(budgets, temperatures):
    """(method, budget, temperature) for the chain and each DDTree budget, per temperature."""
    return [(method, budget, t) for t in temperatures
            for method, budget in [("dflash", 0)] + [("ddtree", b) for b in budgets]]


def measure(pair, prompts, method: str, budget: int, temperature: float, max_new_tokens: int, seed: int) -> dict:
    """Pooled acceptance over `prompts` for one configuration; generation stops at EOS."""
    accepted, rounds, tokens, t0 = 0, 0, 0, time.perf_counter()
    verify = "sampled" if temperature > 0 else "greedy"
    for i, prompt in enumerate(prompts):
        session = Session(pair, prompt, method=method, budget=max(budget, 1), verify=verify,
                          temperature=temperature or 1.0, seed=seed + i)
        gen = session.run(max_new_tokens)[0]
        accepted += sum(gen.acceptance_lengths)
        rounds += len(gen.acceptance_lengths)
        tokens += len(gen.tokens)
    return {"method": method, "budget": budget or None, "temperature": temperature, "rounds": rounds,
            "tokens": tokens, "acceptance": round(accepted / max(rounds, 1), 3),
            "seconds": round(time.perf_counter() - t0, 1)}


def markdown(rows, meta, lossless) -> str:
    temps = sorted({r["temperature"] for r in rows})
    keys = sorted({(r["method"] != "dflash", r["budget"] or 0) for r in rows})
    cell = {(r["method"] != "dflash", r["budget"] or 0, r["temperature"]): r for r in rows}
    head = "| method | budget | " + " | ".join(f"T={t:g} acceptance (rounds)" for t in temps) + " |"
    lines = [head, "|---|---|" + "---|" * len(temps)]
    for is_tree, budget in keys:
        values = " | ".join(f"{cell[is_tree, budget, t]['acceptance']:.2f} ({cell[is_tree, budget, t]['rounds']})"
                            for t in temps)
        lines.append(f"| {'DDTree' if is_tree else 'DFlash chain'} | {budget if is_tree else '-'} | {values} |")
    text = (f"# Acceptance length of the SmolLM2 DFlash drafter ({meta['date']})\n\n"
            f"{meta['device']}, torch {meta['torch']}, float32; {meta['prompts']} held-out prompts x up to "
            f"{meta['max_new_tokens']} new tokens (stop at EOS); acceptance = committed tokens per target forward, "
            f"pooled over prompts. T=0: greedy verification; T>0: exact sampled verification at that "
            f"temperature. Drafter: {meta['drafter']}.\n\n" + "\n".join(lines) + "\n")
    if lossless is not None:
        text += f"\n## Lossless check\n\n`check_lossless(pair, heldout[:{meta['lossless_prompts']}], " \
                f"{meta['lossless_tokens']})`: {lossless}\n"
    return text


def plot(rows, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for color, t in zip(("tab:blue", "tab:orange", "tab:green"), sorted({r["temperature"] for r in rows})):
        tree = sorted((r["budget"], r["acceptance"]) for r in rows if r["temperature"] == t and r["budget"])
        chain = next(r["acceptance"] for r in rows if r["temperature"] == t and r["method"] == "dflash")
        ax.plot(*zip(*tree), "o-", color=color, label=f"DDTree, T={t:g}")
        ax.axhline(chain, color=color, linestyle="--", label=f"DFlash chain, T={t:g}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("DDTree node budget")
    ax.set_ylabel("tokens per target forward")
    ax.set_title("SmolLM2-135M-Instruct + trained DFlash drafter\n(held-out prompts, CPU float32)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drafter", type=Path, help="a drafter folder (default: the shipped one)")
    ap.add_argument("--prompts", type=int, default=8, help="first N held-out prompts")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--lossless-prompts", type=int, default=4, help="0 skips check_lossless")
    ap.add_argument("--lossless-tokens", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    pair = load_pair(drafter=args.drafter) if args.drafter else load_default_pair()
    _, heldout = load_prompts()
    prompts = heldout[:args.prompts]
    rows = [measure(pair, prompts, *config, args.max_new_tokens, args.seed)
            for config in tqdm(configs(args.budgets, args.temperatures), desc="configurations")]
    lossless = None
    if args.lossless_prompts:
        lossless = str(check_lossless(pair, heldout[:args.lossless_prompts], args.lossless_tokens))
    meta = {"date": date.today().isoformat(), "device": f"CPU: {platform.machine()}, {torch.get_num_threads()} "
            f"torch threads", "torch": torch.__version__, "prompts": len(prompts),
            "max_new_tokens": args.max_new_tokens, "drafter": str(args.drafter or "ddtree/assets/smollm2-dflash"),
            "lossless_prompts": args.lossless_prompts, "lossless_tokens": args.lossless_tokens, "seed": args.seed}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "acceptance.json").write_text(json.dumps({"meta": meta, "rows": rows, "lossless": lossless,
                                                          "prompts": prompts}, indent=1) + "\n")
    text = markdown(rows, meta, lossless)
    (args.out / "acceptance.md").write_text(text)
    plot(rows, args.out / "acceptance_vs_budget.png")
    print(text)


if __name__ == "__main__":
    main()
