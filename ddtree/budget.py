"""budget="auto": each round's DDTree budget chosen from the drafter's confidence and the verify cost per budget.

DDTree's nodes come in pop order (decreasing path score), so the tree of budget n is the first n nodes of any
larger tree. Under the draft model the expected number of accepted draft tokens of that tree is E[n] = sum of
exp(node log-weight) over its first n nodes (each node is accepted exactly when its whole path is). A round at
budget n commits E[n] + 1 tokens per request in expectation (the bonus token) and costs cost(n) + overhead(n)
seconds, so the round's budget is

    argmax over candidates n of  (scale[n] * sum_b E_b[n] + B) / (cost(n) + overhead(n))

one budget for the whole batch (every tree is padded to the same rows anyway), kept while no candidate promises
MARGIN more: the choice holds still where two budgets are about even (changing budget replays another CUDA graph,
whose launches start cold). cost(n) is measured on the device at
the start (BudgetCosts: the verify forward of the batch at n + 1 rows per request), or lazily (a table with NaN
entries and a `measure` function: an entry is measured when a choice first reads it, so a session that never
climbs past budget 16 never times the verify of 256 rows, and the reference backend starts a session from what the
pair's earlier sessions measured); overhead(n) (draft, tree, pack,
walk, commit: they grow with the rows) is given (one number for every budget) or learnt from recent rounds' time
outside the verify forward: a least-squares line in the budget once rounds of two budgets were seen (slope at least
0), their median before.

The choice never makes the device wait. Round r's budget is chosen before round r is queued, from E of round r - 2's
trees: the engine queues round r behind round r - 1, so r - 2 is the latest round surely read back (a session that
steps uses the same lag, so stepping and running choose alike). The first two rounds run at the smallest candidate
(start_budget: with no expectation known, the objective at E = 0 is largest where a round costs least). A round
at budget n builds its trees at the next larger candidate (lookahead), verifies their first n nodes and tells E for
the candidates up to that build (NaN above): a round's budget is at most one candidate above that of the round two
before (a steady climb: one candidate every two rounds), and can fall to any candidate.

scale[n] calibrates the draft model's expectation against the target, per candidate: (decayed sum of accepted draft
tokens + PRIOR) / (decayed sum of E[n] + PRIOR), starting at 1. A round at budget m also says exactly what every
smaller candidate n <= m would have accepted: the tree of budget n is the first n nodes of the same tree, a node's
target logits depend on its ancestors alone, and the walk (greedy, or sampled with the same per-row coins; a node's
earlier siblings come before it in pop order) in the smaller tree is the same walk cut at its first node past row n,
so it accepts the accepted nodes in rows 1..n (up to the rounding of a forward of another size). So each round
updates every candidate up to its budget with what it would have accepted; a larger candidate, not yet seen, takes
the scale of the largest one seen. Where the draft model is more overconfident at depth than near the root, one
scale for all budgets would favour large trees.

Not speculating is a candidate too: budget 0 (AR) is an autoregressive round (no draft, no tree: the root alone, one
verify row, one committed token a request), whose expectation is known without drafting (0 draft tokens). Where a
verify of many rows costs more than the draft tokens it buys (small models on a CPU), the rule runs AR rounds, and
the drafter's context is still extended with every committed token so that speculation can resume at any round.
AR's overhead is learnt from AR rounds; before any, it is the speculative rounds' overhead less their draft and tree
stages. An AR round tells nothing about the drafter, so after PROBE_EVERY AR rounds in a row one round speculates
at the best speculative candidate (a probe) and refreshes the expectations and the calibration; each probe after
which AR is chosen again doubles the AR rounds before the next one (up to PROBE_MAX), and a speculative choice on
evidence resets it, so where speculation never pays the probes cost a vanishing share of the rounds.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import torch

from ddtree._checks import check_int

LAG = 2  # round r's budget is chosen from what the rounds up to r - LAG told (module docstring)
DECAY = 0.9  # per round, for the calibration sums (about the last ten rounds count)
PRIOR = 4.0  # pseudo-tokens on both sides of the calibration, so that it starts at 1 and moves smoothly
OVERHEAD_SAMPLES = 32  # recent rounds whose overhead enters the fit
MARGIN = 0.02  # the budget changes only for a candidate expected this much faster (a fraction of the current rate)
AR = 0  # the candidate budget of an autoregressive round (module docstring)
PROBE_EVERY = 8  # AR rounds in a row before one speculative round refreshes what the drafter would give
PROBE_MAX = 64  # the most AR rounds in a row between probes (the gap doubles after each probe AR follows)
REASONS = ("start", "best", "kept", "probe")  # why a round's budget was chosen (Choice.reason)


@dataclass(frozen=True)
class BudgetCosts:
    """The verify cost per candidate budget: `seconds[i]` for one round's verify forward of the whole batch at
    budgets[i] + 1 rows per request (NaN: not measured yet; the session measures it before a choice reads it);
    `overhead` the seconds of a round that do not depend on the budget, or None to learn them from the rounds."""
    budgets: tuple[int, ...]  # 0 (AR): an autoregressive round, one verify row
    seconds: tuple[float, ...]
    overhead: float | None = None

    def __post_init__(self):
        budgets = tuple(check_int("budget_costs.budgets entry", b) for b in self.budgets)
        if not budgets or list(budgets) != sorted(set(budgets)) or budgets[-1] == AR:
            raise ValueError(f"budget_costs.budgets must be distinct increasing budgets (0: autoregressive rounds), "
                             f"at least one of them > 0, got {self.budgets!r}")
        seconds = tuple(s if _is_nan(s) else _seconds("budget_costs.seconds entry", s) for s in self.seconds)
        if len(seconds) != len(budgets) or not all(s > 0 or math.isnan(s) for s in seconds):
            raise ValueError(f"budget_costs.seconds must hold one positive time (or NaN: not measured) per budget "
                             f"({len(budgets)}), got {self.seconds!r}")
        object.__setattr__(self, "budgets", budgets)
        object.__setattr__(self, "seconds", seconds)
        if self.overhead is not None:
            object.__setattr__(self, "overhead", _seconds("budget_costs.overhead", self.overhead))

    @classmethod
    def blank(cls, budgets) -> BudgetCosts:
        """A table of `budgets` with nothing measured yet (every entry NaN)."""
        return cls(tuple(budgets), (math.nan,) * len(budgets))

    @property
    def unmeasured(self) -> tuple[int, ...]:
        """The budgets whose verify cost is not measured yet."""
        return tuple(n for n, s in zip(self.budgets, self.seconds) if math.isnan(s))

    def filled(self, budgets, seconds) -> BudgetCosts:
        """This table with the measured `seconds` of `budgets` in place."""
        new = dict(zip(budgets, seconds))
        return dataclasses.replace(self, seconds=tuple(new.get(n, s) for n, s in zip(self.budgets, self.seconds)))

    def to_dict(self) -> dict:
        return {"budgets": list(self.budgets), "seconds": [None if math.isnan(s) else s for s in self.seconds],
                "overhead": self.overhead}


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _seconds(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


def expected_accepts(node_logws: torch.Tensor, budgets: torch.Tensor, built: int | None = None) -> torch.Tensor:
    """`node_logws  # [B, Q]` float64 trees in pop order (root first, padding -inf), `budgets  # [K]` long on their
    device -> E  # [B, K]: the expected accepted draft tokens of each tree's first budgets[k] nodes under the draft
    model (0 at budget 0); NaN for a budget above `built`, the budget the trees were built at (their first nodes are
    not that tree). No host synchronisation (CUDA-graph capturable)."""
    draft = torch.exp(node_logws[:, 1:]).cumsum(1)  # [B, Q - 1]: E of the first 1, 2, ... nodes
    mass = torch.cat([torch.zeros_like(draft[:, :1]), draft], 1)  # [B, Q]: of the first 0, 1, 2, ... nodes
    expected = mass[:, budgets.clamp_max(mass.shape[1] - 1)]
    return expected if built is None else expected.masked_fill(budgets > built, math.nan)


def start_budget(costs: BudgetCosts) -> int:
    """The budget of the rounds before any expectation is known: the objective with E = 0 (no draft token counted
    on) takes the cheapest round, and a verify forward of more rows never costs less than one of fewer (a measured
    table that says otherwise, where it is flat, shows noise): the smallest speculative candidate (an AR round would
    tell nothing). The rule climbs from there as the rounds tell it more (bench/results/auto_start_budget_cpu.md:
    this start against the middle candidate)."""
    return next(b for b in costs.budgets if b != AR)


def lookahead(budgets: tuple[int, ...], budget: int) -> int:
    """The budget a round at `budget` builds its trees at: the next larger candidate (itself at the top), so that it
    tells the expectation one candidate further."""
    return next((b for b in budgets if b > budget), budget)


def objective(expected, requests: int, costs: BudgetCosts, overheads, scale=1.0) -> list[float]:
    """Expected committed tokens per second at each candidate budget (NaN where the expectation is); `expected  # [K]`
    summed over requests (NaN: not known), `overheads  # [K]` seconds per round outside the verify forward and
    `scale  # [K]` the calibration (either also one number for every candidate)."""
    k = len(costs.budgets)
    overheads = [overheads] * k if isinstance(overheads, (int, float)) else overheads
    scale = [scale] * k if isinstance(scale, (int, float)) else scale
    return [(a * float(e) + requests) / (c + o) for e, a, c, o in zip(expected, scale, costs.seconds, overheads)]


def choose_budget(expected, requests: int, costs: BudgetCosts, overheads, scale=1.0, current: int | None = None,
                  margin: float = 0.0) -> int:
    """The candidate budget maximising the objective among those whose expectation is known (the smallest among
    equals); `current` (the budget in use, if its expectation is known) unless that best one beats it by more than
    `margin` of its rate."""
    if len(expected) != len(costs.budgets) or all(math.isnan(e) for e in expected):
        raise ValueError(f"expected must hold one value per candidate budget ({len(costs.budgets)}), not all NaN, "
                         f"got {list(expected)!r}")
    rate = objective(expected, requests, costs, overheads, scale)
    known = [k for k in range(len(rate)) if not math.isnan(rate[k])]
    best = max(known, key=lambda k: (rate[k], -k))
    if current in costs.budgets and (held := costs.budgets.index(current)) in known:
        return current if rate[best] <= (1 + margin) * rate[held] else costs.budgets[best]
    return costs.budgets[best]


class Choice(NamedTuple):
    """One round's choice and why: `rates  # [K]` the objective (expected committed tokens per second) of every
    candidate budget when it was made (NaN: not known; all NaN at the start)."""
    budget: int  # 0 (AR): an autoregressive round
    candidates: tuple  # [K] the candidate budgets
    rates: tuple
    typical: tuple  # [K] the rates the candidates gave over recent rounds (their mean accepted draft tokens), which
    # AR's is compared with (NaN: none seen)
    reason: str  # "start" (nothing known yet), "best" (the highest rate), "kept" (none beat it by MARGIN) or
    # "probe" (a speculative round after PROBE_EVERY AR rounds)


@dataclass
class AutoBudget:
    """The per-round choice of one session: the cost table, the calibration per candidate, the learnt overhead and
    the latest expectations (module docstring: what round r's choice knows is what rounds up to r - 2 told)."""
    costs: BudgetCosts
    accepted: list[float] | None = None  # [K] decayed sums of the draft tokens each candidate's tree accepted
    predicted: list[float] | None = None  # [K] decayed sums of their expectation under the draft model
    seen: list[bool] | None = None  # [K] whether a round has told the candidate's acceptance
    counts: list[float] | None = None  # [K] decayed counts of the rounds that told it
    overheads: list[tuple[int, float]] = field(default_factory=list)  # recent speculative rounds: (budget, seconds
    # outside the verify forward)
    drafting: list[float] = field(default_factory=list)  # their seconds in the draft and tree stages
    ar_overheads: list[float] = field(default_factory=list)  # recent AR rounds' seconds outside the verify forward
    latest: tuple | None = None  # [K] the last observed speculative round's expectations, all requests (NaN: above
    # its build)
    choice: Choice | None = None  # the last choice (None before the first)
    ar_run: int = 0  # AR rounds chosen in a row
    probe_after: int = PROBE_EVERY  # AR rounds in a row before the next probe
    measure: Callable | None = None  # budgets -> their verify seconds: fills the table's NaN entries a choice reads
    measuring: float = 0.0  # seconds spent in measure (a backend leaves them out of the round's overhead)
    fitted: list[float] = field(init=False, repr=False)  # overhead(), refitted when a round is observed

    def __post_init__(self):
        k = len(self.costs.budgets)
        self.accepted = [0.0] * k if self.accepted is None else list(self.accepted)
        self.predicted = [0.0] * k if self.predicted is None else list(self.predicted)
        self.seen = [False] * k if self.seen is None else list(self.seen)
        self.counts = [0.0] * k if self.counts is None else list(self.counts)
        self.fitted = self._fit()

    @property
    def budget(self) -> int | None:
        """The last budget chosen (None before the first choice)."""
        return None if self.choice is None else self.choice.budget

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
        """Seconds outside the verify forward at each candidate budget: given; else a line through recent
        speculative rounds (once two budgets were seen), their median (one budget), or (no round seen) the smallest
        budget's verify time; for AR the median of recent AR rounds, or before any the speculative value less the
        median draft and tree stages."""
        return self.fitted

    def _fit(self) -> list[float]:
        costs = self.costs
        if costs.overhead is not None:
            return [costs.overhead] * len(costs.budgets)
        if not self.overheads:
            line = [costs.seconds[0]] * len(costs.budgets)
        elif len({n for n, _ in self.overheads}) < 2:
            line = [statistics.median(t for _, t in self.overheads)] * len(costs.budgets)
        else:
            budgets, seconds = zip(*self.overheads)
            mean_n, mean_s = statistics.fmean(budgets), statistics.fmean(seconds)
            slope = max(0.0, sum((n - mean_n) * (t - mean_s) for n, t in self.overheads)
                        / sum((n - mean_n) ** 2 for n in budgets))
            line = [max(0.0, mean_s + slope * (n - mean_n)) for n in costs.budgets]
        if costs.budgets[0] == AR:
            line[0] = statistics.median(self.ar_overheads) if self.ar_overheads else \
                max(0.0, line[1] - (statistics.median(self.drafting) if self.drafting else 0.0))
        return line

    def typical(self, requests: int) -> list[float]:
        """[K] expected committed tokens per second of each candidate over recent rounds: its mean accepted draft
        tokens a round (decayed, the counterfactual ones included) for speculative candidates (NaN: none seen), no
        draft token for AR."""
        mean = [a / c if c else math.nan for a, c in zip(self.accepted, self.counts)]
        mean = [0.0 if n == AR else m for n, m in zip(self.costs.budgets, mean)]
        return objective(mean, requests, self.costs, self.overhead())

    def choose(self, requests: int) -> int:
        """The next round's budget (start_budget before any round is observed): among the speculative candidates,
        from the latest observed speculative round's expectations, the budget chosen last kept unless another
        promises MARGIN more. AR instead where its rate beats by MARGIN what the best speculative candidate gave
        over recent rounds (sustained evidence, not one round's expectation), and kept unless they beat it by MARGIN;
        after probe_after AR rounds in a row, the best speculative candidate (a probe). Measures first the cost
        table's entries it reads that are not measured yet (a lazy table)."""
        budgets, k = self.costs.budgets, len(self.costs.budgets)
        self._measure_read()
        rates, typical = (math.nan,) * k, (math.nan,) * k
        if self.latest is None:
            budget, reason = start_budget(self.costs), "start"
        else:
            rates = tuple(objective(self.latest, requests, self.costs, self.overhead(), self.scale))
            typical = tuple(self.typical(requests))
            speculative = [math.nan if n == AR else e for n, e in zip(budgets, self.latest)]
            held = None if self.budget == AR else self.budget
            budget = choose_budget(speculative, requests, self.costs, self.overhead(), self.scale, held, MARGIN)
            probing = self.budget == AR and self.ar_run >= self.probe_after
            if budgets[0] == AR and not probing:
                best = max((t for n, t in zip(budgets, typical) if n != AR and not math.isnan(t)), default=math.nan)
                ar_wins = typical[0] > (1 + MARGIN) * best if self.budget != AR else not best > (1 + MARGIN) * typical[0]
                budget = AR if ar_wins else budget
            reason = "probe" if probing else "kept" if budget == self.budget else "best"
            if probing:
                self.probe_after = min(2 * self.probe_after, PROBE_MAX)
            elif budget != AR:
                self.probe_after = PROBE_EVERY
        self.ar_run = self.ar_run + 1 if budget == AR else 0
        self.choice = Choice(budget, budgets, rates, typical, reason)
        return budget

    def _measure_read(self) -> None:
        """Measure the table's NaN entries the next choice reads: AR's (the overhead's fallback) and those of the
        candidates whose expectation is known."""
        known = (math.nan,) * len(self.costs.budgets) if self.latest is None else self.latest
        needed = [n for n, s, e in zip(self.costs.budgets, self.costs.seconds, known)
                  if math.isnan(s) and (n == AR or not math.isnan(e))]
        if needed:
            if self.measure is None:
                raise ValueError(f"budget_costs has no verify time for budgets {needed} and nothing to measure them")
            t0 = time.perf_counter()
            self.costs = self.costs.filled(needed, self.measure(tuple(needed)))
            self.measuring += time.perf_counter() - t0
            self.fitted = self._fit()

    def choose_next(self, pending: list, requests: int) -> tuple[int, list]:
        """The next round's budget by the lag rule: `pending` the rounds started and not yet observed, oldest first,
        as observe's arguments (None for a round that teaches nothing); once LAG are pending the oldest is observed
        first (in place) -> (budget, the rounds still pending)."""
        if len(pending) == LAG:
            if pending[0] is not None:
                self.observe(*pending[0])
            pending = pending[1:]
        return self.choose(requests), list(pending)

    def observe(self, predicted, accepted, overhead: float | None, budget: int, drafting: float | None = None,
                verify: float | None = None) -> None:
        """After a round at `budget`: per candidate, its tree's expected (`predicted  # [K]`) and accepted
        (`accepted  # [K]`, the accepted draft tokens in its first n rows) draft tokens over all requests, read for
        the candidates up to `budget` (module docstring); the round's seconds outside the verify forward (None
        when the round was not a steady one, e.g. a warm-up or graph-capture round), of them in the draft and
        tree stages (`drafting`), and in its verify forward (`verify`: a table this session measures keeps the
        fastest seen per budget, so one slow measurement does not stand). A speculative round's expectations (NaN
        above the budget its trees were built at) choose the next budget; an AR round teaches only its overhead."""
        if verify is not None and self.measure is not None:
            k = self.costs.budgets.index(budget)
            if not self.costs.seconds[k] <= verify:  # NaN (not measured) included
                self.costs = self.costs.filled((budget,), (verify,))
                self.fitted = self._fit()
        if budget != AR:
            self.latest = tuple(float(e) for e in predicted)
            for k, n in enumerate(self.costs.budgets):
                if n <= budget:
                    self.predicted[k] = DECAY * self.predicted[k] + float(predicted[k])
                    self.accepted[k] = DECAY * self.accepted[k] + float(accepted[k])
                    self.counts[k] = DECAY * self.counts[k] + 1
                    self.seen[k] = True
        if overhead is not None and self.costs.overhead is None:
            if budget == AR:
                self.ar_overheads = (self.ar_overheads + [overhead])[-OVERHEAD_SAMPLES:]
            else:
                self.overheads = (self.overheads + [(budget, overhead)])[-OVERHEAD_SAMPLES:]
                if drafting is not None:
                    self.drafting = (self.drafting + [drafting])[-OVERHEAD_SAMPLES:]
            self.fitted = self._fit()

    def copy(self) -> AutoBudget:
        return AutoBudget(self.costs, self.accepted, self.predicted, self.seen, self.counts, list(self.overheads),
                          list(self.drafting), list(self.ar_overheads), self.latest, self.choice, self.ar_run,
                          self.probe_after, self.measure, self.measuring)


class Observation(NamedTuple):
    """What a landed round teaches the choice: AutoBudget.observe's arguments (`choose_next` pending entries)."""
    expected: tuple  # [K] per candidate budget: expected accepted draft tokens, all requests (NaN above the build)
    accepted: tuple  # [K] the draft tokens its tree accepted (read for candidates up to `budget`), all requests
    overhead: float | None  # stage seconds outside the verify (None: not a steady sample)
    budget: int
    drafting: float  # stage seconds of the draft and tree stages
    verify: float | None = None  # seconds of its verify forward for the whole batch (None: not a table sample)


def observation(budgets: tuple[int, ...], budget: int, built: int, node_logws: torch.Tensor | None,
                accepted: torch.Tensor | None, overhead: float | None, drafting: float,
                verify: float | None = None) -> Observation:
    """The one rule for what a round at `budget` teaches, on either backend: its requests' trees as built (at
    `built`, `node_logws  # [B, Q]`) and their accepted rows (`accepted  # [B, Q]`, -1 padded) -> the expected and
    accepted draft tokens per candidate, summed over the requests. An AR round tells nothing of the drafter."""
    if budget == AR:
        return Observation(tuple(0.0 if n == AR else math.nan for n in budgets), (0,) * len(budgets), overhead, AR,
                           drafting, verify)
    candidates = torch.tensor(budgets, device=node_logws.device)
    expected = expected_accepts(node_logws, candidates, built).sum(0)  # [K]
    within = accepted_within(accepted.to(node_logws.device), candidates).sum(0)  # [K]
    return Observation(tuple(expected.tolist()), tuple(within.tolist()), overhead, budget, drafting, verify)


def accepted_within(accepted: torch.Tensor, budgets: torch.Tensor) -> torch.Tensor:
    """`accepted  # [B, Q]` accepted rows of each tree in pop order (root first, -1 padded), `budgets  # [K]` ->
    `[B, K]` long: the accepted draft tokens in rows 1..budgets[k], what the tree of that budget accepted (module
    docstring). No host synchronisation (CUDA-graph capturable)."""
    rows = accepted[:, 1:, None]  # [B, Q - 1, 1]
    return ((rows >= 1) & (rows <= budgets)).sum(1)
