"""budget="auto" (ddtree.budget): the expected acceptance of DDTree's best n-node tree, the per-round choice against a
cost table, both backends choosing alike, the measured cost table, and bad input."""
import math
import time

import pytest
import torch

import ddtree
from ddtree import BudgetCosts, Session
from ddtree import budget as auto_budget
from ddtree.budget import (AR, AutoBudget, accepted_within, choose_budget, expected_accepts, lookahead,
                           objective, start_budget)
from ddtree.engine import NativeDecoder
from ddtree.engine.device_round import measure_verify_costs
from ddtree.models import tiny_random_pair
from ddtree.reference import ReferenceBackend
from ddtree.settings import AUTO_BUDGETS, AUTO_CANDIDATES

PROMPTS = ["first prompt", "a second, longer prompt here"]
SMALL = (2, 4, 8)  # candidates for sessions on the CPU (the engine's default set goes to 256 nodes)


@pytest.fixture(scope="module")
def pair():
    return tiny_random_pair(1)


@pytest.fixture(scope="module")
def confident_pair():
    """A drafter whose confidence changes from round to round (a random drafter's logits scaled up), so that the
    auto choice changes too."""
    pair = tiny_random_pair(1)
    with torch.no_grad():
        pair.drafter.norm.weight.mul_(30)
    return pair


def test_expected_accepts_is_the_path_probability_mass_of_the_first_nodes():
    g = torch.Generator().manual_seed(0)
    dlogits = torch.randn(4, 6, generator=g) * 2  # [depth, vocab]
    tree = ddtree.build_tree(dlogits, 40)
    q = torch.softmax(dlogits.double(), -1)
    path_prob = [math.prod(float(q[tree.depths[j] - 1, tree.tokens[j]]) for j in tree.path(i)[1:])
                 for i in range(tree.n_nodes)]  # product of draft probabilities along each node's path
    budgets = [1, 5, 17, 40, 90]  # 90 > the tree: its whole mass
    got = expected_accepts(torch.cat([tree.node_logws, torch.full((60,), -math.inf, dtype=torch.float64)])[None],
                           torch.tensor(budgets))[0]
    want = [sum(path_prob[1:n + 1]) for n in budgets]
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64))
    assert got.diff().ge(0).all()


def test_expected_accepts_is_the_mean_acceptance_when_the_target_samples_the_draft():
    """Under the draft model (each depth's token drawn from q_d), the tree of budget n accepts E[n] draft tokens on
    average: a Monte-Carlo check, with a negative control (a tree with other nodes has another mean)."""
    g = torch.Generator().manual_seed(1)
    dlogits = torch.randn(3, 5, generator=g) * 1.5
    tree = ddtree.build_tree(dlogits, 8)
    q = torch.softmax(dlogits.double(), -1)
    draws = torch.stack([torch.multinomial(q[d], 20000, replacement=True, generator=g) for d in range(3)], 1)
    paths = {}
    for i in range(1, tree.n_nodes):
        paths[tuple(int(tree.tokens[j]) for j in tree.path(i)[1:])] = i

    def mean_accepted(nodes: set) -> tuple[float, float]:
        lengths = []
        for row in draws.tolist():
            k = 0
            while k < 3 and paths.get(tuple(row[:k + 1])) in nodes:
                k += 1
            lengths.append(k)
        x = torch.tensor(lengths, dtype=torch.float64)
        return float(x.mean()), float(x.std() / math.sqrt(len(x)))

    expected = float(expected_accepts(tree.node_logws[None], torch.tensor([8]))[0, 0])
    mean, se = mean_accepted(set(range(1, 9)))
    assert abs(mean - expected) < 4 * se
    mean, se = mean_accepted(set(range(1, 6)))  # the budget-5 tree: a lower mean, far outside the band
    assert abs(mean - expected) > 10 * se


def test_choose_budget_maximises_tokens_per_second():
    g = torch.Generator().manual_seed(2)
    for _ in range(200):
        k = int(torch.randint(1, 7, (1,), generator=g))
        budgets = tuple(sorted(set((torch.randperm(300, generator=g)[:k] + 1).tolist())))
        seconds = tuple((torch.rand(len(budgets), generator=g) + 0.01).tolist())
        costs = BudgetCosts(budgets, seconds)
        expected = (torch.rand(len(budgets), generator=g) * 8).tolist()
        requests, overhead, scale = int(torch.randint(1, 5, (1,), generator=g)), float(torch.rand(1, generator=g)), \
            float(torch.rand(1, generator=g) * 2)
        rate = [(scale * e + requests) / (c + overhead) for e, c in zip(expected, seconds)]
        got = choose_budget(expected, requests, costs, overhead, scale)
        assert rate[budgets.index(got)] == max(rate)
        assert objective(expected, requests, costs, overhead, scale) == rate
    # the bonus token and the overhead count: accepted-per-verify-second alone would pick the other budget
    costs = BudgetCosts((8, 64), (1.0, 3.0))
    assert choose_budget([1.0, 2.5], 1, costs, 0.0) == 8  # 2/1 vs 3.5/3
    assert choose_budget([1.0, 2.5], 1, costs, 5.0) == 64  # 2/6 vs 3.5/8
    assert choose_budget([1.0, 2.5], 1, costs, [5.0, 9.0]) == 8  # 2/6 vs 3.5/12: the larger tree's overhead counts
    assert choose_budget([2.0, 2.0], 1, BudgetCosts((8, 64), (1.0, 1.0)), 0.0) == 8  # ties: the smaller


def test_auto_budget_learns_the_overhead_and_calibrates_the_drafter_per_candidate():
    auto = AutoBudget(BudgetCosts((8, 64), (1e-3, 2e-3)))
    assert auto.scale == [1.0, 1.0] and auto.overhead() == [1e-3, 1e-3]  # no round seen: the smallest verify time
    for overhead in (5e-4, 9e-4, None, 7e-4):
        auto.observe(predicted=[4.0, 9.0], accepted=[2, 2], overhead=overhead, budget=8)
    assert auto.overhead() == [7e-4, 7e-4]  # one budget seen: the median of the steady rounds
    low = auto.scale[0]
    assert low < 1.0 and auto.scale == [low, low]  # the drafter promised more; 64, not seen, takes 8's scale
    auto.observe(predicted=[4.0, 9.0], accepted=[2, 3], overhead=None, budget=64)  # a round at 64 tells both
    assert auto.scale[0] == pytest.approx((2 * (1 + 0.9 + 0.9 ** 2 + 0.9 ** 3 + 0.9 ** 4) + 4)
                                          / (4 * (1 + 0.9 + 0.9 ** 2 + 0.9 ** 3 + 0.9 ** 4) + 4))
    assert auto.scale[1] == pytest.approx((3 + 4) / (9 + 4)) and auto.scale[1] < auto.scale[0]
    twin = auto.copy()
    twin.observe(predicted=[0.0, 0.0], accepted=[30, 30], overhead=1.0, budget=64)
    assert min(twin.scale) > 1.0 and auto.scale[1] < 1.0 and auto.overhead() == [7e-4, 7e-4]  # copies: independent
    assert AutoBudget(BudgetCosts((8,), (1.0,), overhead=0.25)).overhead() == [0.25]


def test_per_candidate_scales_choose_the_budget_the_target_rewards():
    """A drafter overconfident at depth: the deep nodes of the large tree promise tokens the target never
    accepts. One scale for all budgets (the old rule) keeps the large tree; per-candidate scales learn that its
    extra nodes add nothing and choose the small one."""
    costs = BudgetCosts((8, 64), (1.0, 1.2), overhead=0.0)
    expected = [2.0, 6.0]  # the draft model's expectation per round
    auto = AutoBudget(costs)
    assert auto.choose(1) == 8  # no round observed: the start budget
    for _ in range(40):
        budget = auto.choose(1)
        auto.observe(expected, [1.5, 1.5] if budget == 64 else [1.5, 0], None, budget)  # 64 adds no accepted token
    assert auto.choose(1) == 8
    one_scale = 1.5 / 6.0  # the old rule's calibration at the large budget: accepted over expected there
    assert choose_budget(expected, 1, costs, 0.0, one_scale) == 64


def test_accepted_within_counts_the_accepted_rows_of_each_smaller_tree():
    accepted = torch.tensor([[0, 2, 5, 9, -1], [0, -1, -1, -1, -1], [0, 1, 3, 4, 40]])  # [B, Q] root first
    got = accepted_within(accepted, torch.tensor([1, 4, 8, 64]))
    assert got.tolist() == [[0, 1, 2, 3], [0, 0, 0, 0], [1, 3, 3, 4]]


@pytest.mark.parametrize("verify", ["greedy", "sampled"])
def test_a_smaller_tree_accepts_the_accepted_path_cut_at_its_budget(verify):
    """What accepted_within counts is exact: the walk of the tree's first n + 1 rows, with the same target logits
    and coins on those rows, accepts the accepted path's nodes in rows 1..n, for every n (greedy and sampled)."""
    g = torch.Generator().manual_seed(4)
    for trial in range(30):
        dlogits = torch.randn(5, 12, generator=g) * 3  # [depth, vocab]
        tree = ddtree.build_tree(dlogits, 24)
        depth = tree.depths.clamp_max(dlogits.shape[0] - 1)  # a target close to the draft: long accepted paths
        logits = dlogits[depth] + torch.randn(tree.n_nodes, 12, generator=g)
        coins = torch.rand(2, tree.n_nodes, generator=g, dtype=torch.float64)
        walk = (lambda t, x, c: ddtree.verify_greedy(t, x)) if verify == "greedy" else \
            (lambda t, x, c: ddtree.verify_sampled(t, x, 0.8, coins=c))
        full = walk(tree, logits, coins).accepted
        for n in range(tree.n_nodes):
            cut = walk(tree.first(n + 1), logits[:n + 1], coins[:, :n + 1]).accepted
            assert cut == [i for i in full if i <= n], (trial, n)
            assert len(cut) - 1 == int(accepted_within(torch.tensor([full]), torch.tensor([n]))[0, 0])


def test_auto_budget_fits_an_overhead_that_grows_with_the_budget():
    """Rounds at two budgets: a least-squares line through their overheads, extrapolated to every candidate (a
    falling line is clamped flat, noise cannot make larger trees look cheaper)."""
    auto = AutoBudget(BudgetCosts((8, 16, 32, 64), (1e-3,) * 4))
    for budget, seconds in ((16, 1.1e-4), (16, 0.9e-4), (32, 2.1e-4), (32, 1.9e-4)):
        auto.observe(predicted=[1.0] * 4, accepted=[1] * 4, overhead=seconds, budget=budget)
    assert auto.overhead() == pytest.approx([0.5e-4, 1e-4, 2e-4, 4e-4])
    falling = AutoBudget(BudgetCosts((8, 64), (1e-3, 1e-3)))
    for budget, seconds in ((8, 3e-4), (64, 1e-4)):
        falling.observe(predicted=[1.0] * 2, accepted=[1] * 2, overhead=seconds, budget=budget)
    assert falling.overhead() == pytest.approx([2e-4, 2e-4])
    # the choice follows: with the same verify cost the larger trees pay their overhead (2/1.05, 2.5/1.1, 2.6/1.2,
    # 2.7/1.4 tokens a ms); one flat overhead (the median) would pick the largest
    expected = [1.0, 1.5, 1.6, 1.7]
    assert choose_budget(expected, 1, auto.costs, auto.overhead(), auto.scale) == 16
    assert choose_budget(expected, 1, auto.costs, 1.5e-4, auto.scale) == 64


@pytest.mark.parametrize("verify", ["greedy", "sampled"])
def test_auto_sessions_choose_alike_on_both_backends(confident_pair, verify):
    """With a given cost table both backends choose the same budget every round (and so decode the same tokens);
    greedy auto decoding gives the autoregressive tokens."""
    pair = confident_pair
    costs = BudgetCosts(SMALL, (1e-3, 1.2e-3, 1.6e-3), overhead=1e-3)
    kwargs = dict(budget="auto", budget_costs=costs, verify=verify, temperature=0.9, seed=3)
    native = Session(pair, PROMPTS, backend="native", **kwargs)
    ref = Session(pair, PROMPTS, backend="reference", **kwargs)
    got = [g.tokens for g in native.run(16, stop_on_eos=False)]
    assert got == [g.tokens for g in ref.run(16, stop_on_eos=False)]
    assert [r.budget for r in native.records] == [r.budget for r in ref.records]
    assert len({r.budget for r in native.records}) > 1  # the choice changes with the drafter's confidence
    for rec in native.records:
        assert rec.budget in SMALL and rec.num_draft_tokens == rec.budget + 1
        assert all(req.tree.n_nodes <= rec.budget + 1 for req in rec.requests)
    assert native.budget_costs == ref.budget_costs == costs
    budgets = [r.budget for r in native.records]  # chosen from the round two before, one candidate past its budget
    assert budgets[:2] == [start_budget(costs)] * 2
    assert all(b <= lookahead(SMALL, before) for b, before in zip(budgets[2:], budgets))
    if verify == "greedy":
        assert got == [g.tokens for g in Session(pair, PROMPTS, method="ar").run(16, stop_on_eos=False)]


def test_auto_follows_the_costs(pair, monkeypatch):
    """Flat costs: the largest candidate once the first round has told its expectation; costs growing faster than
    any tree's expectation: the smallest. The first two rounds run at the smallest candidate, then a round may climb
    one candidate above the round two before. (Without the margin: the random
    drafter's larger trees promise only a little more.)"""
    monkeypatch.setattr(auto_budget, "MARGIN", 0.0)
    flat = Session(pair, PROMPTS, budget="auto", budget_costs=BudgetCosts(SMALL, (1.0, 1.0, 1.0)), backend="native")
    steep = Session(pair, PROMPTS, budget="auto", budget_costs=BudgetCosts(SMALL, (1.0, 1e3, 1e6)),
                    backend="native")
    assert [flat.step().budget for _ in range(5)] == [2, 2, 4, 4, 8]
    assert [steep.step().budget for _ in range(5)] == [2, 2, 2, 2, 2]
    noisy = Session(pair, PROMPTS, budget="auto", budget_costs=BudgetCosts(SMALL, (1.0, 0.9, 1.0)),
                    backend="native")
    assert [noisy.step().budget for _ in range(2)] == [2, 2]  # the smallest, whatever noise says of flat costs


def test_the_budget_changes_only_for_a_margin():
    """The budget in use is kept unless another candidate's expected rate beats it by more than the margin; a
    current budget whose expectation is not known does not hold."""
    costs = BudgetCosts((8, 64), (1.0, 1.05), overhead=0.0)  # rates: (E[8] + 1) / 1, (E[64] + 1) / 1.05
    assert choose_budget([1.0, 1.1], 1, costs, 0.0, current=8, margin=0.02) == 8  # 2.0 vs 2.0 (+0%)
    assert choose_budget([1.0, 1.12], 1, costs, 0.0, current=8, margin=0.02) == 8  # 64 is 1.0% faster
    assert choose_budget([1.0, 1.3], 1, costs, 0.0, current=8, margin=0.02) == 64  # 9.5%
    assert choose_budget([1.0, 1.12], 1, costs, 0.0, current=8, margin=0.0) == 64
    assert choose_budget([1.0, 1.08], 1, costs, 0.0, current=64, margin=0.02) == 64  # 8 is 1.0% faster
    assert choose_budget([1.0, 1.05], 1, costs, 0.0, current=64, margin=0.02) == 8  # 8 is 2.4% faster
    assert choose_budget([1.0, math.nan], 1, costs, 0.0, current=64, margin=0.5) == 8  # 64 not known: no hold
    assert choose_budget([1.0, 1.2], 1, costs, 0.0, current=None, margin=0.5) == 64


def test_the_margin_steadies_a_wavering_choice(monkeypatch):
    """Expectations that waver around the break-even point switch the budget every round without the margin, and
    never with it; a clear change still switches."""
    costs = BudgetCosts((8, 64), (1.0, 1.05), overhead=0.0)
    wavering = [[1.0, 1.12], [1.0, 1.08]] * 5 + [[1.0, 1.0]] * 2  # 64 1% faster, 8 1% faster, ..., then 8 by 5%

    def run(margin):
        monkeypatch.setattr(auto_budget, "MARGIN", margin)
        auto = AutoBudget(costs)
        chosen = []
        for expected in wavering:
            auto.observe(expected, expected, None, 64)  # the drafter's expectation met: scale 1
            chosen.append(auto.choose(1))
        return chosen

    assert run(0.0) == [64, 8] * 5 + [8, 8]
    assert run(0.02) == [64] * 10 + [8, 8]
    auto = AutoBudget(costs)
    auto.observe([1.0, 1.2], [1.0, 1.2], None, 64)
    assert auto.choose(1) == 64 and auto.copy().budget == 64  # a copy keeps the budget in use


def test_the_choice_knows_the_candidates_up_to_the_build():
    """A round tells the expectation of the candidates up to the budget its trees were built at (NaN above), and
    the next choice is made among those: a larger candidate is reached one candidate a round."""
    node_logws = torch.log(torch.tensor([[1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]], dtype=torch.float64))
    got = expected_accepts(node_logws, torch.tensor([2, 4, 8]), built=4)[0]
    assert got[:2].tolist() == pytest.approx([1.7, 3.0]) and math.isnan(got[2])
    costs = BudgetCosts(SMALL, (1.0, 1.0, 1.0), overhead=0.0)
    assert choose_budget(got.tolist(), 1, costs, 0.0) == 4  # 8 would be better, but is not known
    assert [lookahead(SMALL, b) for b in SMALL] == [4, 8, 8]
    assert start_budget(BudgetCosts(SMALL, (1.0, 1.0, 1.0))) == 2 and start_budget(BudgetCosts((8,), (1.0,))) == 8
    assert start_budget(BudgetCosts(SMALL, (1.0, 0.9, 1.1))) == 2  # more rows never cost less: that is noise


def test_measured_cost_tables(pair):
    """The native engine times its verify forward per candidate without committing anything; the reference
    backend times its target forwards; a session measures on its first auto round."""
    dec = NativeDecoder(pair.target, batch_size=2, max_len=64)
    for b, n in enumerate((5, 9)):
        pos = torch.arange(n)
        dec.forward(torch.arange(3, 3 + n)[None], pos[None], (pos - 1)[None], request=b)
        dec.commit(pos[None], torch.tensor([n]), request=b)
    before = dec.kv.clone()
    seconds = measure_verify_costs(dec, (2, 9), cuda_graphs=False, repeats=2)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)
    assert dec.seq_lens.tolist() == [5, 9]
    for b, n in enumerate((5, 9)):
        assert torch.equal(dec.kv[b, :, :, :n], before[b, :, :, :n])  # committed prefixes untouched
    s = Session(pair, PROMPTS, budget="auto", backend="native")
    assert s.budget_costs is None
    s.step()  # the engine measures every candidate at once (between queued rounds a measurement would race them)
    assert s.budget_costs.budgets == AUTO_CANDIDATES and all(x > 0 for x in s.budget_costs.seconds)
    assert s.records[0].budget in AUTO_BUDGETS
    partial = BudgetCosts(SMALL, (1.0, math.nan, 1.0))
    s = Session(pair, PROMPTS, budget="auto", backend="native", budget_costs=partial)
    s.step()
    assert s.budget_costs.seconds[::2] == (1.0, 1.0) and s.budget_costs.seconds[1] > 0


def test_the_reference_measures_the_cost_table_lazily():
    """The reference backend times a candidate's verify when a choice first reads it: AR's at the first round,
    then each candidate once a round has told its expectation; one the rounds never reach is never timed, and the
    time spent measuring is not counted as a round's overhead."""
    pair = tiny_random_pair(1)  # its own: a pair remembers what its sessions measured (test below)
    s = Session(pair, PROMPTS, budget="auto", backend="reference")
    s.step()
    assert s.budget_costs.seconds[0] > 0 and s.budget_costs.unmeasured == AUTO_BUDGETS
    steep = [1e-6, 1e-5] + [1e3] * (len(AUTO_BUDGETS) - 1)  # the smallest tree alone could ever pay
    s.backend.auto.measure = lambda budgets: tuple(steep[AUTO_CANDIDATES.index(n)] for n in budgets)
    for _ in range(8):
        s.step()
    first, built = AUTO_BUDGETS[0], lookahead(AUTO_CANDIDATES, AUTO_BUDGETS[0])
    assert {r.budget for r in s.records} <= {0, first}  # the choice reads 8 and 16 (its build), climbs no further
    assert s.budget_costs.unmeasured == tuple(n for n in AUTO_BUDGETS if n > built)
    assert s.budget_costs.seconds[1:3] == (1e-5, 1e3)  # no round verifies faster than the fake 10 us
    s = Session(tiny_random_pair(1), PROMPTS, budget="auto", backend="reference")
    s.step()
    s.backend.auto.measure = lambda budgets: (time.sleep(1.0), (1e-3,) * len(budgets))[1]
    for _ in range(4):
        s.step()
    assert s.backend.auto.measuring >= 1.0  # it measured...
    assert all(t < 1.0 for _, t in s.backend.auto.overheads)  # ...and that second is no round's overhead


def test_later_sessions_of_a_pair_start_from_what_earlier_ones_measured(monkeypatch):
    """A pair's reference sessions share their measured verify times (per batch size and thread count): a second
    budget="auto" session measures only what the first never did, and keeps the fastest time seen."""
    pair = tiny_random_pair(1)
    calls = []
    measure = ReferenceBackend.measure_costs
    monkeypatch.setattr(ReferenceBackend, "measure_costs",
                        lambda self, budgets: (calls.append(budgets), measure(self, budgets))[1])
    first = Session(pair, PROMPTS, budget="auto", backend="reference")
    for _ in range(4):
        first.step()
    measured = {n: t for n, t in zip(AUTO_CANDIDATES, first.budget_costs.seconds) if not math.isnan(t)}
    assert calls and set(measured) == {n for c in calls for n in c}
    calls.clear()
    second = Session(pair, PROMPTS[:1] * len(PROMPTS), budget="auto", backend="reference")
    second.step()
    assert calls == [] and all(second.budget_costs.seconds[AUTO_CANDIDATES.index(n)] <= t for n, t in measured.items())
    other = Session(pair, PROMPTS[:1], budget="auto", backend="reference")  # another batch size: its own times
    other.step()
    assert calls == [(AR,)]
    shared = {k: dict(v) for k, v in pair.verify_seconds.items()}
    given = Session(pair, PROMPTS, budget="auto", backend="reference", budget_costs=BudgetCosts((0, 2), (1.0, 2.0)))
    given.step()
    assert given.budget_costs.seconds == (1.0, 2.0)  # a given table is neither filled from them nor added to them
    assert pair.verify_seconds == shared


def test_a_lazy_table_measures_what_a_choice_reads():
    calls = []

    def measure(budgets):
        calls.append(budgets)
        return tuple(1e-3 * (n + 1) for n in budgets)

    auto = AutoBudget(BudgetCosts((0, 2, 4, 8), (math.nan,) * 4), measure=measure)
    assert auto.choose(1) == 2 and calls == [(0,)]  # the start: AR's (the overhead's fallback) alone
    auto.observe([0.0, 1.0, 1.5, math.nan], [0, 1, 1, 0], overhead=None, budget=2)  # built at 4
    auto.choose(1)
    assert calls == [(0,), (2, 4)] and auto.costs.unmeasured == (8,)
    auto.copy().choose(1)
    assert len(calls) == 2  # measured once, copies included
    auto.observe([0.0, 1.0, 1.5, math.nan], [0, 1, 1, 0], overhead=None, budget=2, verify=1e-4)
    assert auto.costs.seconds[1] == 1e-4  # a round's faster verify replaces a measured entry
    auto.observe([0.0, 1.0, 1.5, math.nan], [0, 1, 1, 0], overhead=None, budget=2, verify=1.0)
    assert auto.costs.seconds[1] == 1e-4  # a slower one does not
    given = AutoBudget(BudgetCosts((0, 2), (1.0, 2.0)))
    given.observe([0.0, 1.0], [0, 1], overhead=None, budget=2, verify=1e-4)
    assert given.costs.seconds == (1.0, 2.0)  # a given table stays as given
    with pytest.raises(ValueError, match=r"no verify time for budgets \[0\]"):
        AutoBudget(BudgetCosts((0, 2), (math.nan, 1.0))).choose(1)
    assert BudgetCosts((0, 2), (math.nan, 1.0)).to_dict()["seconds"] == [None, 1.0]


def test_auto_fork_and_bad_input(pair, monkeypatch):
    monkeypatch.setattr(auto_budget, "MARGIN", 0.0)  # flat costs choose the largest candidate (test above)
    s = Session(pair, PROMPTS, budget="auto", budget_costs=BudgetCosts(SMALL, (1.0, 1.0, 1.0)), backend="native")
    s.step()
    chain = s.fork(method="dflash")  # an inherited "auto" does not apply to the chain
    assert chain.settings.method == "dflash" and chain.step().method == "dflash"
    s.step()
    assert s.fork().step().budget == 4 and s.step().budget == 4  # both climb from the start (2), as one
    with pytest.raises(ValueError, match="needs method='ddtree'"):
        s.fork(method="ar", budget="auto")
    with pytest.raises(ValueError, match="needs method='ddtree'"):
        Session(pair, "x", method="dflash", budget="auto")
    with pytest.raises(ValueError, match="or 'auto', got 'best'"):
        Session(pair, "x", budget="best")
    with pytest.raises(ValueError, match="budget_costs applies to budget='auto'"):
        Session(pair, "x", budget=8, budget_costs=BudgetCosts(SMALL, (1.0, 1.0, 1.0)))
    with pytest.raises(ValueError, match="budget_costs must be a ddtree.BudgetCosts"):
        Session(pair, "x", budget="auto", budget_costs={8: 1.0})
    with pytest.raises(ValueError, match="at most 256"):
        Session(pair, "x", budget="auto", budget_costs=BudgetCosts((8, 512), (1.0, 2.0)))
    with pytest.raises(ValueError, match="distinct increasing"):
        BudgetCosts((16, 8), (1.0, 1.0))
    with pytest.raises(ValueError, match="one positive time"):
        BudgetCosts((8, 16), (1.0,))
    with pytest.raises(ValueError, match="one positive time"):
        BudgetCosts((8, 16), (1.0, 0.0))
    with pytest.raises(ValueError, match="overhead"):
        BudgetCosts((8,), (1.0,), overhead=-1.0)
    with pytest.raises(ValueError, match="one value per candidate"):
        choose_budget([1.0], 1, BudgetCosts(SMALL, (1.0, 1.0, 1.0)), 0.0)
    with pytest.raises(ValueError, match="not all NaN"):
        choose_budget([math.nan] * 3, 1, BudgetCosts(SMALL, (1.0, 1.0, 1.0)), 0.0)


@pytest.mark.gpu
def test_auto_with_cuda_graphs_matches_eager_on_gpu():
    """Every candidate's round graphs (captured on the first auto round) replay the eager rounds: same budgets, same
    tokens; and the cost table measured from graph replays."""
    pair = tiny_random_pair(3, device="cuda")
    with torch.no_grad():
        pair.drafter.norm.weight.mul_(30)  # a confidence that changes from round to round (see confident_pair)
    costs = BudgetCosts((4, 8, 16, 32), (1e-3, 1.1e-3, 1.3e-3, 1.8e-3), overhead=5e-4)
    eager = Session(pair, PROMPTS, budget="auto", budget_costs=costs, cuda_graphs=False)
    graphed = Session(pair, PROMPTS, budget="auto", budget_costs=costs, cuda_graphs=True, record=False)
    want = [g.tokens for g in eager.run(48, stop_on_eos=False)]
    assert [g.tokens for g in graphed.run(48, stop_on_eos=False)] == want
    assert [r.budget for r in graphed.records] == [r.budget for r in eager.records]
    assert len({r.budget for r in eager.records}) > 1
    assert want == [g.tokens for g in Session(pair, PROMPTS, method="ar").run(48, stop_on_eos=False)]
    measured = Session(pair, PROMPTS, budget="auto", cuda_graphs=True, record=False)
    measured.run(16, stop_on_eos=False)
    assert measured.budget_costs.budgets == AUTO_CANDIDATES and measured.backend.auto.overheads


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_an_auto_fork_chooses_as_its_original(confident_pair, backend):
    """A fork carries the calibration and the round it has yet to observe: both go on choosing alike."""
    costs = BudgetCosts(SMALL, (1e-3, 1.2e-3, 1.6e-3), overhead=1e-3)
    s = Session(confident_pair, PROMPTS, budget="auto", budget_costs=costs, backend=backend)
    for _ in range(3):
        s.step()
    twin = s.fork()
    assert [twin.step().budget for _ in range(6)] == [s.step().budget for _ in range(6)]
    assert twin.tokens == s.tokens


def test_not_speculating_is_a_candidate_known_without_drafting():
    """Budget 0 (AR) expects no draft token; it wins where a verify of more rows costs more than the draft tokens
    it buys; its overhead is the speculative rounds' less their draft and tree stages until AR rounds tell it; after
    PROBE_EVERY AR rounds in a row one round speculates again, then AR resumes while speculation does not pay."""
    node_logws = torch.tensor([[0.0, -0.1, -0.5, -1.0]], dtype=torch.float64)
    assert expected_accepts(node_logws, torch.tensor([0, 1, 3]))[0].tolist() == pytest.approx(
        [0.0, math.exp(-0.1), math.exp(-0.1) + math.exp(-0.5) + math.exp(-1.0)])
    assert accepted_within(torch.tensor([[0, 1, 2, -1]]), torch.tensor([0, 3]))[0].tolist() == [0, 2]
    costs = BudgetCosts((0, 8), (1e-3, 4e-3))
    assert start_budget(costs) == 8  # an AR round tells nothing of the drafter
    auto = AutoBudget(costs)
    assert auto.choose(1) == 8 and auto.choice.reason == "start" and all(math.isnan(r) for r in auto.choice.rates)
    auto.observe([0.0, 1.0], [0, 1], overhead=3e-3, budget=8, drafting=2e-3)
    assert auto.overhead() == pytest.approx([1e-3, 3e-3])  # AR: 3 ms less 2 ms of drafting
    # AR: 1 token in 2 ms; 8: (1 + 1) tokens in 7 ms
    assert auto.choose(1) == 0 and auto.choice.reason == "best"
    assert auto.choice.rates == pytest.approx((1 / 2e-3, 2 / 7e-3)) and auto.choice.candidates == (0, 8)
    auto.observe([0.0, math.nan], [0, 0], overhead=5e-4, budget=0)
    assert auto.overhead()[0] == pytest.approx(5e-4) and auto.latest == (0.0, 1.0)  # an AR round keeps latest
    picks = [(auto.choose(1), auto.choice.reason) for _ in range(auto_budget.PROBE_EVERY)]
    assert picks == [(0, "kept")] * (auto_budget.PROBE_EVERY - 1) + [(8, "probe")]  # AR rounds 2..8, then a probe
    assert auto.choose(1) == 0  # the probe told nothing new: back to AR
    gaps = []  # AR rounds between probes: doubling after each probe AR follows, up to PROBE_MAX
    for _ in range(5):
        gap = 1  # the AR round just chosen
        while auto.choose(1) == 0:
            gap += 1
        gaps.append(gap)
        auto.observe([0.0, 1.0], [0, 1], overhead=3e-3, budget=8, drafting=2e-3)  # the probe: still not paying
        assert auto.choose(1) == 0
    every, most = auto_budget.PROBE_EVERY, auto_budget.PROBE_MAX
    assert gaps == [2 * every, 4 * every, most, most, most] and 4 * every < most
    for _ in range(8):  # speculation pays again (sustained: the decayed mean of accepted tokens)
        auto.observe([0.0, 9.0], [0, 9], overhead=3e-3, budget=8, drafting=2e-3)
    assert auto.choose(1) == 8 and auto.probe_after == auto_budget.PROBE_EVERY  # the gap starts over
    with pytest.raises(ValueError, match="at least one of them > 0"):
        BudgetCosts((0,), (1e-3,))


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_auto_stops_speculating_where_it_does_not_pay(pair, backend, tmp_path):
    """With a verify of more rows far dearer than one row, auto runs AR rounds (records say method 'ar', budget 0,
    one row, and why), probes every PROBE_EVERY AR rounds, still decodes the autoregressive tokens, and both
    backends choose alike; the choice survives a trace round trip."""
    costs = BudgetCosts((0, 2, 4), (1e-4, 1.0, 1.0), overhead=0.0)
    s = Session(pair, PROMPTS, budget="auto", budget_costs=costs, backend=backend)
    got = [g.tokens for g in s.run(40, stop_on_eos=False)]
    assert got == [g.tokens for g in Session(pair, PROMPTS, method="ar").run(40, stop_on_eos=False)]
    budgets = [r.budget for r in s.records]
    assert budgets[:2] == [2, 2] and budgets[2:2 + auto_budget.PROBE_EVERY] == [0] * auto_budget.PROBE_EVERY
    assert budgets[2 + auto_budget.PROBE_EVERY] in (2, 4) and budgets.count(0) >= len(budgets) - 6
    for r in s.records:
        assert (r.method == "ar") == (r.budget == 0) and r.choice.budget == r.budget
        assert r.num_draft_tokens == (1 if r.budget == 0 else r.budget + 1)
    assert [r.choice.reason for r in s.records][:3] == ["start", "start", "best"]
    assert s.records[2 + auto_budget.PROBE_EVERY].choice.reason == "probe"
    ddtree.save_trace(s.records, tmp_path / "t.json")
    loaded, _ = ddtree.load_trace(tmp_path / "t.json")
    assert [repr(r.choice) for r in loaded] == [repr(r.choice) for r in s.records]  # NaN != NaN
    other = "reference" if backend == "native" else "native"
    twin = Session(pair, PROMPTS, budget="auto", budget_costs=costs, backend=other)
    twin.run(40, stop_on_eos=False)
    assert [r.budget for r in twin.records] == budgets
