"""budget="auto": each round's DDTree budget chosen from the drafter's confidence and the verify cost per budget.

One round builds the tree at the largest candidate budget; DDTree's nodes come in pop order (decreasing path
score), so the tree of budget n is its first n nodes. Under the draft model the expected number of accepted draft
tokens of that tree is E[n] = sum of exp(node log-weight) over its first n nodes (each node is accepted exactly when
its whole path is). A round at budget n commits E[n] + 1 tokens per request in expectation (the bonus token) and
costs cost(n) + overhead(n) seconds, so the round's budget is

    argmax over candidates n of  (scale * sum_b E_b[n] + B) / (cost(n) + overhead(n))

one budget for the whole batch (every tree is padded to the same rows anyway). cost(n) is measured on the device at
the start (BudgetCosts: the verify forward of the batch at n + 1 rows per request); overhead(n) (draft, tree, pack,
walk, commit: pack and walk grow with the rows) is given (one number for every budget) or learnt from recent rounds'
time outside the verify forward: a least-squares line in the budget once rounds of two budgets were seen (slope at
least 0), their median before.

scale[n] calibrates the draft model's expectation against the target, per candidate: (decayed sum of accepted draft
tokens + PRIOR) / (decayed sum of E[n] + PRIOR), starting at 1. A round at budget m also says exactly what every
smaller candidate n <= m would have accepted: the tree of budget n is the first n nodes of the same tree, a node's
target logits depend on its ancestors alone, and the walk (greedy, or sampled with the same per-row coins; a node's
earlier siblings come before it in pop order) in the smaller tree is the same walk cut at its first node past row n,
so it accepts the accepted nodes in rows 1..n (up to the rounding of a forward of another size). So each round
updates every candidate up to its budget with what it would have accepted; a larger candidate, not yet seen, takes
the scale of the largest one seen. Where the draft model is more overconfident at depth than near the root, one
scale for all budgets would favour large trees.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

import torch

from ddtree._checks import check_int

DECAY = 0.9  # per round, for the calibration sums (about the last ten rounds count)
PRIOR = 4.0  # pseudo-tokens on both sides of the calibration, so that it starts at 1 and moves smoothly
OVERHEAD_SAMPLES = 32  # recent rounds whose overhead enters the fit


@dataclass(frozen=True)
class BudgetCosts:
    """The verify cost per candidate budget: `seconds[i]` for one round's verify forward of the whole batch at
    budgets[i] + 1 rows per request; `overhead` the seconds of a round that do not depend on the budget, or None to
    learn them from the rounds."""
    budgets: tuple[int, ...]
    seconds: tuple[float, ...]
    overhead: float | None = None

    def __post_init__(self):
        budgets = tuple(check_int("budget_costs.budgets entry", b, minimum=1) for b in self.budgets)
        if not budgets or list(budgets) != sorted(set(budgets)):
            raise ValueError(f"budget_costs.budgets must be distinct increasing budgets, got {self.budgets!r}")
        seconds = tuple(_seconds("budget_costs.seconds entry", s) for s in self.seconds)
        if len(seconds) != len(budgets) or not all(s > 0 for s in seconds):
            raise ValueError(f"budget_costs.seconds must hold one positive time per budget ({len(budgets)}), got "
                             f"{self.seconds!r}")
        object.__setattr__(self, "budgets", budgets)
        object.__setattr__(self, "seconds", seconds)
        if self.overhead is not None:
            object.__setattr__(self, "overhead", _seconds("budget_costs.overhead", self.overhead))

    def to_dict(self) -> dict:
        return {"budgets": list(self.budgets), "seconds": list(self.seconds), "overhead": self.overhead}


def _seconds(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


def expected_accepts(node_logws: torch.Tensor, budgets: torch.Tensor) -> torch.Tensor:
    """`node_logws  # [B, Q]` float64 trees in pop order (root first, padding -inf), `budgets  # [K]` long on their
    device -> E  # [B, K]: the expected accepted draft tokens of each tree's first budgets[k] nodes under the draft
    model. No host synchronisation (CUDA-graph capturable)."""
    mass = torch.exp(node_logws[:, 1:]).cumsum(1)  # [B, Q - 1]: E of the first 1, 2, ... nodes
    return mass[:, budgets.clamp_max(mass.shape[1]) - 1]


def objective(expected, requests: int, costs: BudgetCosts, overheads, scale=1.0) -> list[float]:
    """Expected committed tokens per second at each candidate budget; `expected  # [K]` summed over requests,
    `overheads  # [K]` seconds per round outside the verify forward and `scale  # [K]` the calibration (either
    also one number for every candidate)."""
    k = len(costs.budgets)
    overheads = [overheads] * k if isinstance(overheads, (int, float)) else overheads
    scale = [scale] * k if isinstance(scale, (int, float)) else scale
    return [(a * float(e) + requests) / (c + o) for e, a, c, o in zip(expected, scale, costs.seconds, overheads)]


def choose_budget(expected, requests: int, costs: BudgetCosts, overheads, scale=1.0) -> int:
    """The candidate budget maximising the objective (the smallest among equals)."""
    if len(expected) != len(costs.budgets):
        raise ValueError(f"expected must hold one value per candidate budget ({len(costs.budgets)}), got "
                         f"{len(expected)}")
    rate = objective(expected, requests, costs, overheads, scale)
    return costs.budgets[max(range(len(rate)), key=lambda k: (rate[k], -k))]


@dataclass
class AutoBudget:
    """The per-round choice of one session: the cost table, the calibration per candidate and the learnt overhead."""
    costs: BudgetCosts
    accepted: list[float] | None = None  # [K] decayed sums of the draft tokens each candidate's tree accepted
    predicted: list[float] | None = None  # [K] decayed sums of their expectation under the draft model
    seen: list[bool] | None = None  # [K] whether a round has told the candidate's acceptance
    overheads: list[tuple[int, float]] = field(default_factory=list)  # recent rounds: (budget, seconds outside
    # the verify forward)
    fitted: list[float] = field(init=False, repr=False)  # overhead(), refitted when a round is observed

    def __post_init__(self):
        k = len(self.costs.budgets)
        self.accepted = [0.0] * k if self.accepted is None else list(self.accepted)
        self.predicted = [0.0] * k if self.predicted is None else list(self.predicted)
        self.seen = [False] * k if self.seen is None else list(self.seen)
        self.fitted = self._fit()

    @property
    def scale(self) -> list[float]:
        """[K] accepted over expected per candidate; one not seen yet takes the largest seen candidate's (1 before
        any round)."""
        out, last = [], 1.0
        for a, p, seen in zip(self.accepted, self.predicted, self.seen):
            last = (a + PRIOR) / (p + PRIOR) if seen else last
            out.append(last)
        return out

    def overhead(self) -> list[float]:
        """Seconds outside the verify forward at each candidate budget: given; else a line through recent rounds
        (once two budgets were seen), their median (one budget), or (no round seen) the smallest budget's verify
        time."""
        return self.fitted

    def _fit(self) -> list[float]:
        k = len(self.costs.budgets)
        if self.costs.overhead is not None:
            return [self.costs.overhead] * k
        if not self.overheads:
            return [self.costs.seconds[0]] * k
        budgets, seconds = zip(*self.overheads)
        if len(set(budgets)) < 2:
            return [statistics.median(seconds)] * k
        mean_n, mean_s = statistics.fmean(budgets), statistics.fmean(seconds)
        slope = max(0.0, sum((n - mean_n) * (t - mean_s) for n, t in self.overheads)
                    / sum((n - mean_n) ** 2 for n in budgets))
        return [max(0.0, mean_s + slope * (n - mean_n)) for n in self.costs.budgets]

    def choose(self, expected, requests: int) -> int:
        return choose_budget(expected, requests, self.costs, self.overhead(), self.scale)

    def observe(self, predicted, accepted, overhead: float | None, budget: int) -> None:
        """After a round at `budget`: per candidate, its tree's expected (`predicted  # [K]`) and accepted
        (`accepted  # [K]`, the accepted draft tokens in its first n rows) draft tokens over all requests, read for
        the candidates up to `budget` (module docstring); and the round's seconds outside the verify forward (None
        when the round was not a steady one, e.g. a warm-up or graph-capture round)."""
        for k, n in enumerate(self.costs.budgets):
            if n <= budget:
                self.predicted[k] = DECAY * self.predicted[k] + float(predicted[k])
                self.accepted[k] = DECAY * self.accepted[k] + float(accepted[k])
                self.seen[k] = True
        if overhead is not None and self.costs.overhead is None:
            self.overheads = (self.overheads + [(budget, overhead)])[-OVERHEAD_SAMPLES:]
            self.fitted = self._fit()

    def copy(self) -> AutoBudget:
        return AutoBudget(self.costs, self.accepted, self.predicted, self.seen, list(self.overheads))


def accepted_within(accepted: torch.Tensor, budgets: torch.Tensor) -> torch.Tensor:
    """`accepted  # [B, Q]` accepted rows of each tree in pop order (root first, -1 padded), `budgets  # [K]` ->
    `[B, K]` long: the accepted draft tokens in rows 1..budgets[k], what the tree of that budget accepted (module
    docstring). No host synchronisation (CUDA-graph capturable)."""
    rows = accepted[:, 1:, None]  # [B, Q - 1, 1]
    return ((rows >= 1) & (rows <= budgets)).sum(1)
