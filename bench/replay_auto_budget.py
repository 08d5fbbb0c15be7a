"""budget="auto" replayed offline against fixed budgets and a per-round oracle, on counterfactual rounds.

Per held-out prompt one DDTree run at the largest candidate budget (256) records every round's tree and accepted
path; a round of it tells exactly what each candidate budget n would have accepted (ddtree.budget.accepted_within:
the accepted nodes in its first n rows) and what the drafter expected of it (ddtree.budget.expected_accepts). The
replay then runs the choices over those rounds, scoring a round at budget n as accepted_within[n] + 1 tokens for
cost(n) + overhead(n) seconds from a cost table (default: the H200's, bench/results/e2e_cuda_quick_auto.md):
  fixed n          every round at n;
  best per prompt  each prompt at its own best fixed budget (hindsight);
  oracle           every round at its own best budget (hindsight: an upper bound no rule reaches);
  auto             ddtree.budget.AutoBudget's rule as the engine runs it: round r chosen from rounds up to r - 2,
                   each round telling the expectations up to the next larger candidate (its build).
The rounds follow the budget-256 run's path (an approximation: at another budget the context after a round is the
same tokens, greedy, but the rounds fall elsewhere). Writes bench/results/replay_auto_<device>.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

import ddtree
from ddtree.budget import AutoBudget, BudgetCosts, accepted_within, expected_accepts, lookahead
from ddtree.models import load_default_pair
from ddtree.settings import AUTO_BUDGETS
from ddtree.training.prompts import load_prompts

H200_VERIFY_MS = (0.769, 0.825, 0.916, 1.014, 1.090, 1.262)  # verify forward per candidate, H200 bf16, batch 1
H200_OVERHEAD_MS = {0: (0.37, 0.368, 0.395, 0.411, 0.448, 0.50), 1: (0.42, 0.431, 0.455, 0.501, 0.61, 0.75)}  # per T:
# round minus verify of fixed rounds (8 and 256 extrapolated)


def record_rounds(pair, prompt: str, temperature: float, tokens: int) -> list[tuple[torch.Tensor, list[int]]]:
    """Per round of a budget-256 run: (its tree's node log-weights  # [n_nodes] float64, accepted draft tokens
    within each candidate)."""
    verify = "greedy" if temperature == 0 else "sampled"
    s = ddtree.Session(pair, prompt, budget=max(AUTO_BUDGETS), verify=verify, temperature=temperature or 1.0,
                       seed=1, chat=True)
    s.run(tokens, stop_on_eos=False)
    candidates = torch.tensor(AUTO_BUDGETS)
    return [(rec.requests[0].tree.node_logws, accepted_within(torch.tensor([rec.requests[0].accepted]),
                                                                candidates)[0].tolist()) for rec in s.records]


def replay_auto(rounds, costs: BudgetCosts, overhead_s) -> list[int]:
    """The budgets AutoBudget chooses over `rounds`, by the engine's lag rule (AutoBudget.choose_next), each round
    telling the expectations up to its build."""
    auto, pending, chosen, candidates = AutoBudget(costs), [], [], torch.tensor(costs.budgets)
    for node_logws, within in rounds:
        budget, pending = auto.choose_next(pending, 1)
        told = expected_accepts(node_logws[None], candidates, lookahead(costs.budgets, budget))[0].tolist()
        pending.append((told, within, overhead_s[costs.budgets.index(budget)], budget))
        chosen.append(budget)
    return chosen


def score(rounds, budgets, seconds) -> tuple[float, float]:
    """(tokens, seconds) of `rounds` run at `budgets` (one per round)."""
    k = [AUTO_BUDGETS.index(b) for b in budgets]
    return sum(r[1][i] + 1 for r, i in zip(rounds, k)), sum(seconds[i] for i in k)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=8, help="held-out prompts per kind (code, chat)")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    pair = load_default_pair()
    lines, report = [], {"device": str(pair.device), "cost_table_ms": list(H200_VERIFY_MS), "sets": []}
    for t in args.temperatures:
        over = H200_OVERHEAD_MS[0 if t == 0 else 1]
        seconds = [(v + o) * 1e-3 for v, o in zip(H200_VERIFY_MS, over)]
        costs = BudgetCosts(AUTO_BUDGETS, tuple(v * 1e-3 for v in H200_VERIFY_MS))
        for kind in ("code", "chat"):
            prompts = load_prompts(group=kind)[1][:args.prompts]
            runs = [record_rounds(pair, p, t, args.max_new_tokens)
                    for p in tqdm(prompts, desc=f"{kind} T={t:g} budget-256 runs")]
            rate = {}
            for n in AUTO_BUDGETS:
                tok, sec = map(sum, zip(*(score(r, [n] * len(r), seconds) for r in runs)))
                rate[f"fixed {n}"] = tok / sec / 1e3
            best = [max(AUTO_BUDGETS, key=lambda n: (lambda ts: ts[0] / ts[1])(score(r, [n] * len(r), seconds)))
                    for r in runs]
            tok, sec = map(sum, zip(*(score(r, [n] * len(r), seconds) for r, n in zip(runs, best))))
            rate["best per prompt"] = tok / sec / 1e3
            oracle = [[max(AUTO_BUDGETS, key=lambda n: (x[1][AUTO_BUDGETS.index(n)] + 1) / seconds[
                AUTO_BUDGETS.index(n)]) for x in r] for r in runs]
            tok, sec = map(sum, zip(*(score(r, o, seconds) for r, o in zip(runs, oracle))))
            rate["oracle"] = tok / sec / 1e3
            chosen = [replay_auto(r, costs, [o * 1e-3 for o in over]) for r in runs]
            tok, sec = map(sum, zip(*(score(r, c, seconds) for r, c in zip(runs, chosen))))
            rate["auto"] = tok / sec / 1e3
            fixed_best = max(v for k, v in rate.items() if k.startswith("fixed"))
            mean_budget = sum(map(sum, chosen)) / sum(map(len, chosen))
            report["sets"].append({"kind": kind, "temperature": t, "rounds": sum(map(len, runs)),
                                   "tokens_per_ms": rate, "auto_mean_budget": mean_budget})
            lines.append(f"| {kind} | {t:g} | {sum(map(len, runs))} | "
                         + " | ".join(f"{rate[f'fixed {n}']:.3f}" for n in AUTO_BUDGETS)
                         + f" | {rate['best per prompt']:.3f} | {rate['oracle']:.3f} | {rate['auto']:.3f} | "
                         f"{mean_budget:.1f} | {rate['auto'] / fixed_best:.3f} |")
    head = ("| set | T | rounds | " + " | ".join(f"fixed {n}" for n in AUTO_BUDGETS)
            + " | best per prompt | oracle | auto | auto mean budget | auto / best fixed |")
    md = [f"# budget=\"auto\" replayed on counterfactual rounds ({time.strftime('%Y-%m-%d')}, "
          f"{pair.device}, {args.prompts} held-out prompts a kind, {args.max_new_tokens} tokens)", "",
          "Tokens per ms under the H200 cost table (verify per candidate "
          + ", ".join(f"{n}: {v} ms" for n, v in zip(AUTO_BUDGETS, H200_VERIFY_MS)) + ", plus the measured overhead).",
          "", head, "|" + "---|" * (head.count("|") - 1), *lines]
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"replay_auto_{pair.device.type}"
    (args.out / f"{name}.md").write_text("\n".join(md) + "\n")
    (args.out / f"{name}.json").write_text(json.dumps(report, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
