"""budget="auto" replayed offline against fixed budgets and a per-round oracle, on counterfactual rounds.

Per held-out prompt one DDTree run at the largest candidate budget (256) records every round's tree and accepted
path; a round of it tells exactly what each candidate budget n would have accepted (ddtree.budget.accepted_within:
the accepted nodes in its first n rows) and what the drafter expected of it (ddtree.budget.expected_accepts). The
replay then runs the choices over those rounds, scoring a round at budget n as accepted_within[n] + 1 tokens for
cost(n) + overhead(n) seconds from the H200's tables (bench/results/e2e_cuda_v4.json); a round that builds its trees
at a larger candidate m than its budget (auto's lookahead) also pays the tree stage's difference tree(m) - tree(n):
  fixed n          every round at n;
  best per prompt  each prompt at its own best fixed budget (hindsight);
  oracle           every round at its own best budget (hindsight: an upper bound no rule reaches);
  auto             ddtree.budget.AutoBudget's rule as the engine runs it: round r chosen from rounds up to r - 2,
                   each round telling the expectations up to the next larger candidate (its build, which it pays);
  same round       a bound on auto's kind of rule (its objective on the drafter's expectations): round r chosen from
                   its own trees' expectations at every candidate (no lag, no larger build), calibrated as AutoBudget
                   learns it;
  same round, hindsight scale   the same with each candidate's calibration known in advance (accepted over
                   expected, over all the set's rounds).
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
from ddtree.budget import (MARGIN, AutoBudget, BudgetCosts, Choice, accepted_within, choose_budget, expected_accepts,
                           lookahead)
from ddtree.models import load_default_pair
from ddtree.settings import AUTO_BUDGETS
from ddtree.training.prompts import load_prompts

H200_VERIFY_MS = (0.768, 0.823, 0.917, 1.015, 1.091, 1.267)  # verify forward per candidate, H200 bf16, batch 1
H200_OVERHEAD_MS = {0: (0.33, 0.345, 0.389, 0.411, 0.449, 0.50), 1: (0.39, 0.41, 0.456, 0.499, 0.611, 0.75)}  # per T:
# round minus verify of fixed rounds, code and chat, two runs (e2e_cuda_v4*.json; 8 and 256 extrapolated)
H200_TREE_MS = (0.037, 0.049, 0.086, 0.095, 0.119, 0.156)  # the graphed tree stage per build, in those overheads
# (one program per request up to 16, bench/profile_tree_build.py; tree_build_profile_h200.md)


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


def replay_auto(rounds, costs: BudgetCosts, overhead_s) -> list[tuple[int, int]]:
    """The (budget, build) AutoBudget chooses for each of `rounds`, by the engine's lag rule
    (AutoBudget.choose_next), each round telling the expectations up to its build."""
    auto, pending, chosen, candidates = AutoBudget(costs), [], [], torch.tensor(costs.budgets)
    for node_logws, within in rounds:
        budget, pending = auto.choose_next(pending, 1)
        build = lookahead(costs.budgets, budget)
        told = expected_accepts(node_logws[None], candidates, build)[0].tolist()
        pending.append((told, within, overhead_s[costs.budgets.index(budget)], budget))
        chosen.append((budget, build))
    return chosen


def replay_same_round(rounds, costs: BudgetCosts, overhead_s, scale=None) -> list[int]:
    """The budget of each of `rounds` chosen from that round's own expectations at every candidate, with AutoBudget's
    objective and hold, its calibration learnt from the rounds before (or `scale  # [K]`, given) and no larger build."""
    auto, chosen, candidates = AutoBudget(costs), [], torch.tensor(costs.budgets)
    for node_logws, within in rounds:
        told = expected_accepts(node_logws[None], candidates)[0].tolist()
        budget = choose_budget(told, 1, costs, auto.overhead(), auto.scale if scale is None else scale, auto.budget,
                               MARGIN)
        auto.choice = Choice(budget, costs.budgets, (), (), "best")
        auto.observe(told, within, overhead_s[costs.budgets.index(budget)], budget)
        chosen.append(budget)
    return chosen


def hindsight_scale(runs, budgets) -> list[float]:
    """[K] accepted over expected draft tokens per candidate, over every round of `runs`."""
    candidates = torch.tensor(budgets)
    expected = sum(expected_accepts(logws[None], candidates)[0] for run in runs for logws, _ in run)
    accepted = [sum(within[k] for run in runs for _, within in run) for k in range(len(budgets))]
    return [a / float(e) for a, e in zip(accepted, expected)]


def score(rounds, chosen, seconds, tree_s) -> tuple[float, float]:
    """(tokens, seconds) of `rounds` run at `chosen`, a budget or a (budget, build) per round: the fixed round's
    `seconds` per candidate, plus the tree stage's `tree_s` difference where the trees are built larger."""
    chosen = [c if isinstance(c, tuple) else (c, c) for c in chosen]
    k = [(AUTO_BUDGETS.index(b), AUTO_BUDGETS.index(m)) for b, m in chosen]
    return (sum(r[1][i] + 1 for r, (i, _) in zip(rounds, k)),
            sum(seconds[i] + tree_s[j] - tree_s[i] for i, j in k))


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
        tree_s = [ms * 1e-3 for ms in H200_TREE_MS]
        costs = BudgetCosts(AUTO_BUDGETS, tuple(v * 1e-3 for v in H200_VERIFY_MS))
        for kind in ("code", "chat"):
            prompts = load_prompts(group=kind)[1][:args.prompts]
            runs = [record_rounds(pair, p, t, args.max_new_tokens)
                    for p in tqdm(prompts, desc=f"{kind} T={t:g} budget-256 runs")]
            rate = {}
            for n in AUTO_BUDGETS:
                tok, sec = map(sum, zip(*(score(r, [n] * len(r), seconds, tree_s) for r in runs)))
                rate[f"fixed {n}"] = tok / sec / 1e3
            best = [max(AUTO_BUDGETS, key=lambda n: (lambda ts: ts[0] / ts[1])(score(r, [n] * len(r), seconds,
                                                                                        tree_s))) for r in runs]
            tok, sec = map(sum, zip(*(score(r, [n] * len(r), seconds, tree_s) for r, n in zip(runs, best))))
            rate["best per prompt"] = tok / sec / 1e3
            oracle = [[max(AUTO_BUDGETS, key=lambda n: (x[1][AUTO_BUDGETS.index(n)] + 1) / seconds[
                AUTO_BUDGETS.index(n)]) for x in r] for r in runs]
            tok, sec = map(sum, zip(*(score(r, o, seconds, tree_s) for r, o in zip(runs, oracle))))
            rate["oracle"] = tok / sec / 1e3
            overhead_s = [o * 1e-3 for o in over]
            chosen = [replay_auto(r, costs, overhead_s) for r in runs]
            tok, sec = map(sum, zip(*(score(r, c, seconds, tree_s) for r, c in zip(runs, chosen))))
            rate["auto"] = tok / sec / 1e3
            scale = hindsight_scale(runs, AUTO_BUDGETS)
            for name, given in (("same round", None), ("same round, hindsight scale", scale)):
                tok, sec = map(sum, zip(*(score(r, replay_same_round(r, costs, overhead_s, given), seconds, tree_s)
                                          for r in runs)))
                rate[name] = tok / sec / 1e3
            fixed_best = max(v for k, v in rate.items() if k.startswith("fixed"))
            mean_budget = sum(b for c in chosen for b, _ in c) / sum(map(len, chosen))
            report["sets"].append({"kind": kind, "temperature": t, "rounds": sum(map(len, runs)),
                                   "tokens_per_ms": rate, "auto_mean_budget": mean_budget})
            lines.append(f"| {kind} | {t:g} | {sum(map(len, runs))} | "
                         + " | ".join(f"{rate[f'fixed {n}']:.3f}" for n in AUTO_BUDGETS)
                         + f" | {rate['best per prompt']:.3f} | {rate['oracle']:.3f} | {rate['auto']:.3f} | "
                         f"{mean_budget:.1f} | {rate['auto'] / fixed_best:.3f} | "
                         f"{rate['same round'] / fixed_best:.3f} | "
                         f"{rate['same round, hindsight scale'] / fixed_best:.3f} |")
    head = ("| set | T | rounds | " + " | ".join(f"fixed {n}" for n in AUTO_BUDGETS)
            + " | best per prompt | oracle | auto | auto mean budget | auto / best fixed | same round / best fixed"
            " | same round, hindsight scale / best fixed |")
    md = [f"# budget=\"auto\" replayed on counterfactual rounds ({time.strftime('%Y-%m-%d')}, "
          f"{pair.device}, {args.prompts} held-out prompts a kind, {args.max_new_tokens} tokens)", "",
          "Tokens per ms under the H200 cost table (verify per candidate "
          + ", ".join(f"{n}: {v} ms" for n, v in zip(AUTO_BUDGETS, H200_VERIFY_MS)) + ", plus the measured overhead; "
          "auto's rounds also pay the tree stage at their build, one candidate above their budget).",
          "", head, "|" + "---|" * (head.count("|") - 1), *lines]
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"replay_auto_{pair.device.type}"
    (args.out / f"{name}.md").write_text("\n".join(md) + "\n")
    (args.out / f"{name}.json").write_text(json.dumps(report, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
