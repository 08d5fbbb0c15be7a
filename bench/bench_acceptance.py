"""Acceptance length of SmolLM2 DFlash drafters on held-out prompts, code and chat reported apart (CPU, float32).

Mean acceptance length = committed tokens per target forward (verify round), pooled over a group's prompts, for the
DFlash chain and for DDTree at several node budgets, with greedy verification (T = 0) and exact sampled
verification (T = 1). Several drafters (the shipped one by default; e.g. a new checkpoint beside it) are measured side
by side on the same prompts; `--split train` measures training prompts instead (what the drafter learnt, beside how
it generalises), `--split unseen` the held-out prompts whose subject no training prompt shares (material a drafter
trained on the file never saw in any phrasing). Optionally runs ddtree.check_lossless on each group's first
held-out prompts with the first drafter. Writes bench/results/acceptance.{md,json} and
bench/results/acceptance_vs_budget.png.
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
from ddtree.models import load_pair
from ddtree.models.pair import DEFAULT_DRAFTER_DIR
from ddtree.training.prompts import GROUPS, PROMPTS_FILE, SPLITS, prompts_by_group


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


def table(rows) -> list[str]:
    """One markdown table: a row per (drafter, group, method, budget), a column per temperature."""
    temps = sorted({r["temperature"] for r in rows})
    keys = list(dict.fromkeys((r["drafter"], r["group"], r["method"] != "dflash", r["budget"] or 0) for r in rows))
    cell = {(r["drafter"], r["group"], r["method"] != "dflash", r["budget"] or 0, r["temperature"]): r for r in rows}
    lines = ["| drafter | group | method | budget | " + " | ".join(f"T={t:g} acceptance (rounds)" for t in temps) + " |",
             "|---|---|---|---|" + "---|" * len(temps)]
    for drafter, group, is_tree, budget in keys:
        values = " | ".join(f"{c['acceptance']:.2f} ({c['rounds']})" if (c := cell.get((drafter, group, is_tree,
                            budget, t))) else "" for t in temps)
        lines.append(f"| {drafter} | {group} | {'DDTree' if is_tree else 'DFlash chain'} | "
                     f"{budget if is_tree else '-'} | {values} |")
    return lines


def side_name(split: str) -> str:
    return {"train": "training prompts", "unseen": "held-out prompts whose subject no training prompt shares"}.get(
        split, "held-out prompts")


def markdown(rows, meta, lossless) -> str:
    fewer = {g: n for g, n in meta.get("available", {}).items() if n < meta["prompts"]}
    text = (f"# Acceptance length of the SmolLM2 DFlash drafters ({meta['date']})\n\n"
            f"{meta['device']}, torch {meta['torch']}, float32; per group the first {meta['prompts']} "
            f"{side_name(meta.get('split'))}"
            + (f" of `{meta['prompts_file']}`" if meta.get("prompts_file") else "")
            + "".join(f" ({group}: only {n} exist)" for group, n in fewer.items())
            + f" (kinds interleaved) x up to {meta['max_new_tokens']} new tokens (stop at EOS); acceptance = "
            f"committed tokens per target forward, pooled over a group's prompts. T=0: greedy verification; T>0: "
            f"exact sampled verification at that temperature. Drafters: "
            + ", ".join(f"`{name}` = {path}" for name, path in meta["drafters"].items()) + ".\n\n"
            + "\n".join(table(rows)) + "\n")
    if lossless:
        text += "\n## Lossless check\n\n" + "\n".join(
            f"- {group}: `check_lossless(pair, heldout_{group}[:{meta['lossless_prompts']}], "
            f"{meta['lossless_tokens']})` with `{next(iter(meta['drafters']))}`: {result}"
            for group, result in lossless.items()) + "\n"
    return text


def plot(rows, path: Path, split: str) -> None:
    """Acceptance against budget, one panel per group; a colour per drafter, solid T=0, dotted T>0."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = list(dict.fromkeys(r["group"] for r in rows))
    drafters = list(dict.fromkeys(r["drafter"] for r in rows))
    fig, axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4), squeeze=False, sharey=True)
    for ax, group in zip(axes[0], groups):
        for color, drafter in zip(("tab:blue", "tab:orange", "tab:green", "tab:red"), drafters):
            for t in sorted({r["temperature"] for r in rows}):
                mine = [r for r in rows if (r["group"], r["drafter"], r["temperature"]) == (group, drafter, t)]
                tree = sorted((r["budget"], r["acceptance"]) for r in mine if r["budget"])
                style = "-" if t == 0 else ":"
                if tree:
                    ax.plot(*zip(*tree), "o" + style, color=color, label=f"{drafter} DDTree, T={t:g}")
                for r in mine:
                    if r["method"] == "dflash":
                        ax.axhline(r["acceptance"], color=color, linestyle="--" if t == 0 else "-.", alpha=0.6,
                                   label=f"{drafter} chain, T={t:g}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("DDTree node budget")
        ax.set_title(f"{group}: {side_name(split)}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tokens per target forward")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle("SmolLM2-135M-Instruct + DFlash drafters (CPU float32)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drafters", type=Path, nargs="+", default=[DEFAULT_DRAFTER_DIR],
                    help="drafter folders, measured side by side (default: the shipped one)")
    ap.add_argument("--groups", nargs="+", default=list(GROUPS), choices=GROUPS)
    ap.add_argument("--prompts", type=int, default=8, help="first N prompts of each group")
    ap.add_argument("--split", choices=SPLITS, default="heldout",
                    help="which side of the committed prompts file (the lossless check always reads held-out ones)")
    ap.add_argument("--prompts-file", type=Path, default=PROMPTS_FILE,
                    help="a prompts file of ddtree.training.prompts' schema (bench/data/styled_prompts.json: "
                         "benchmark-style prompts)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--lossless-prompts", type=int, default=4, help="per group; 0 skips check_lossless")
    ap.add_argument("--lossless-tokens", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    names = [path.name for path in args.drafters]
    if len(set(names)) != len(names):
        ap.error(f"--drafters: folder names must differ, got {names}")
    heldout = prompts_by_group(args.groups, "heldout", args.lossless_prompts)
    try:
        prompts = prompts_by_group(args.groups, args.split, args.prompts, args.prompts_file)
    except ValueError as e:
        ap.error(f"--split {args.split}: {e}; leave the group out with --groups")
    rows, lossless = [], {}
    target = None
    for name, folder in zip(names, args.drafters):
        # float32 (not the bfloat16 the embedded pair takes on some CPUs), as every acceptance result here; the
        # target is loaded once, then shared by every drafter
        pair = load_pair(target, folder, dtype=torch.float32)
        target = (pair.target, pair.tokenizer)
        for group in args.groups:
            for config in tqdm(configs(args.budgets, args.temperatures), desc=f"{name}, {group}"):
                row = measure(pair, prompts[group], *config, args.max_new_tokens, args.seed)
                rows.append({"drafter": name, "group": group, **row})
            if args.lossless_prompts and name == names[0]:
                lossless[group] = str(check_lossless(pair, heldout[group], args.lossless_tokens))
    meta = {"date": date.today().isoformat(), "device": f"CPU: {platform.machine()}, {torch.get_num_threads()} "
            f"torch threads", "torch": torch.__version__, "prompts": args.prompts, "split": args.split,
            "prompts_file": None if args.prompts_file == PROMPTS_FILE else str(args.prompts_file),
            "available": {group: len(found) for group, found in prompts.items()},
            "max_new_tokens": args.max_new_tokens, "drafters": {n: str(p) for n, p in zip(names, args.drafters)},
            "lossless_prompts": args.lossless_prompts, "lossless_tokens": args.lossless_tokens, "seed": args.seed}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "acceptance.json").write_text(json.dumps({"meta": meta, "rows": rows, "lossless": lossless,
                                                          "prompts": prompts}, indent=1) + "\n")
    text = markdown(rows, meta, lossless)
    (args.out / "acceptance.md").write_text(text)
    plot(rows, args.out / "acceptance_vs_budget.png", args.split)
    print(text)


if __name__ == "__main__":
    main()
