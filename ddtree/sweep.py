"""Budget (and temperature) sweeps: decode prompts at every setting and return plain rows, one per run.

Temperature 0 runs the greedy walk, temperature > 0 the exact sampled walk. With baseline=True every prompt is
also decoded autoregressively (method "ar", budget 0) at each temperature, so summaries can report speedups.
A budget may be "auto" (DDTree's per-round choice, ddtree.budget) beside the fixed ones: is it as fast as the best
of them on this machine? Its rows also say the mean budget its rounds chose.
Rows are dicts of plain numbers and strings: easy to tabulate, plot (ddtree.widgets.SweepView) or save as JSON.
"""
from __future__ import annotations

from tqdm.auto import tqdm

from ddtree._checks import check_int, check_temperature
from ddtree.budget import BudgetCosts
from ddtree.models import ModelPair
from ddtree.settings import AUTO, METHODS, Method, budget_order
from ddtree.session import Session

KEYS = ("method", "budget", "temperature")


def sweep(pair: ModelPair, prompts, budgets, *, temperatures=(0.0,), method: str = "ddtree",
          max_new_tokens: int = 64, baseline: bool = True, seed: int = 0, chat: bool = True,
          progress: bool = True, backend: str = "auto", budget_costs: BudgetCosts | None = None) -> list[dict]:
    """One row per (prompt, budget, temperature) run, plus autoregressive baseline rows. Row keys: prompt (index),
    method, budget, temperature, tokens, rounds, acceptance_length (mean per target forward), tokens_per_second,
    seconds, and ms_<stage> (milliseconds per round of each stage); "auto" rows also mean_budget. The "auto" runs
    share one verify-cost table: `budget_costs`, or the one the warm-up round measures."""
    prompts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not prompts:
        raise ValueError("prompts must be a prompt or a non-empty list of prompts")
    budgets = [b if b == AUTO and method == Method.DDTREE else check_int(
        "budgets entry (an int, or 'auto' with method 'ddtree')", b, minimum=1) for b in budgets]
    temperatures = [check_temperature("temperatures entry", t, allow_zero=True) for t in temperatures]
    if not budgets or not temperatures:
        raise ValueError("budgets and temperatures must be non-empty")
    if method not in METHODS or method == Method.AR:
        raise ValueError(f"method must be 'ddtree' or 'dflash', got {method!r}")
    if budget_costs is not None and not isinstance(budget_costs, BudgetCosts):
        raise ValueError(f"budget_costs must be a ddtree.BudgetCosts, got {type(budget_costs).__name__}")
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
    runs = [(i, "ar", 0, t) for i in range(len(prompts)) for t in temperatures] if baseline else []
    runs += [(i, method, b, t) for i in range(len(prompts)) for b in budgets for t in temperatures]
    # one untimed round first: the first forward of a process pays one-time costs (and "auto" measures its table)
    auto = AUTO in budgets
    warm = Session(pair, prompts[0], method=method, budget=AUTO if auto else budgets[0], chat=chat, backend=backend,
                   budget_costs=budget_costs if auto else None)
    warm.step()
    costs = warm.budget_costs
    rows = []
    for i, run_method, budget, temperature in tqdm(runs, desc="sweep", disable=not progress):
        session = Session(pair, prompts[i], method=run_method, budget=max(budget, 1) if budget != AUTO else AUTO,
                          chat=chat, seed=seed, verify="sampled" if temperature > 0 else "greedy",
                          temperature=temperature or 1.0, backend=backend,
                          budget_costs=costs if budget == AUTO else None)
        gen = session.run(max_new_tokens, stop_on_eos=False)[0]
        rounds = max(len(gen.records), 1)
        row = {"prompt": i, "method": run_method, "budget": budget, "temperature": temperature,
               "tokens": len(gen.tokens), "rounds": len(gen.records),
               "acceptance_length": gen.mean_acceptance_length, "tokens_per_second": gen.tokens_per_second,
               "seconds": sum(v for k, v in gen.stage_times.items() if k != "prefill")}
        row.update({f"ms_{k}": 1e3 * v / rounds for k, v in gen.stage_times.items() if k != "prefill"})
        if budget == AUTO:
            row["mean_budget"] = sum(r.budget for r in gen.records) / rounds
        rows.append(row)
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Mean over prompts per (method, budget, temperature); `speedup` = tokens/s over the autoregressive rows of the
    same temperature (absent without baseline rows). Sorted by method, temperature, budget."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in KEYS), []).append(row)
    out = []
    for key, group in groups.items():
        mean = {k: sum(r[k] for r in group) / len(group) for k in group[0] if k not in KEYS and k != "prompt"}
        out.append(dict(zip(KEYS, key)) | mean | {"prompts": len(group)})
    ar = {r["temperature"]: r["tokens_per_second"] for r in out if r["method"] == "ar"}
    for r in out:
        if r["temperature"] in ar:
            r["speedup"] = r["tokens_per_second"] / ar[r["temperature"]]
    return sorted(out, key=lambda r: (r["method"], r["temperature"], budget_order(r["budget"])))


def best_budget(rows: list[dict], *, temperature: float = 0.0, by: str = "tokens_per_second") -> int | str:
    """The budget with the highest mean `by` at `temperature` (rows from sweep or summarize; baselines ignored)."""
    summary = [r for r in summarize(rows) if r["method"] != "ar" and r["temperature"] == temperature]
    if not summary:
        raise ValueError(f"rows hold no non-baseline run at temperature {temperature}")
    if by not in summary[0]:
        raise ValueError(f"by must be a numeric row key such as 'tokens_per_second', got {by!r}")
    return max(summary, key=lambda r: r[by])["budget"]
