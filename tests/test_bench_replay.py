"""bench/replay_auto_budget.py: the counterfactual rounds it records and its replay of the engine's auto rule."""
import math

import pytest
import torch
from bench_scripts import load_bench

from ddtree.budget import BudgetCosts, expected_accepts, lookahead, start_budget
from ddtree.models import tiny_random_pair
from ddtree.settings import AUTO_BUDGETS

bench = load_bench("replay_auto_budget")


def test_recorded_rounds_grow_with_the_budget():
    pair = tiny_random_pair(seed=0)
    depth = pair.drafter.config.block_size - 1
    for temperature in (0.0, 1.0):
        rounds = bench.record_rounds(pair, "a prompt", temperature, 12)
        assert rounds
        for node_logws, within in rounds:
            assert node_logws[0] == 0 and node_logws.diff().le(0).all()  # the root, then nodes in pop order
            assert len(node_logws) <= max(AUTO_BUDGETS) + 1
            assert all(a <= b for a, b in zip(within, within[1:]))  # a larger tree accepts what a smaller did
            assert all(0 <= w <= min(n, depth) for w, n in zip(within, AUTO_BUDGETS))


def test_the_replay_chooses_as_the_engine_rule_and_scores_the_rounds():
    """Rounds whose expectation and acceptance grow with the budget: under flat costs the replay starts at the
    smallest candidate and climbs one candidate every two rounds from the third (a round
    may go one candidate above the round two before it, whose expectations it knows);
    under steep costs it falls to the smallest. Each round builds one candidate above its budget. The score adds
    accepted + 1 tokens and each budget's seconds, plus the tree stage's difference where a round builds larger."""
    node_logws = torch.tensor([0.0] + [math.log(0.9) * (1 + i / 64) for i in range(256)], dtype=torch.float64)
    expected = expected_accepts(node_logws[None], torch.tensor(AUTO_BUDGETS))[0]
    assert expected.diff().gt(0).all()  # every larger candidate promises more
    rounds = [(node_logws, [1, 1, 2, 2, 3, 3])] * 8
    flat = BudgetCosts(AUTO_BUDGETS, (1e-3,) * 6)
    chosen = bench.replay_auto(rounds, flat, [0.0] * 6)
    budgets = [b for b, _ in chosen]
    assert budgets[:2] == [start_budget(flat)] * 2 == [8, 8] and budgets[2:] == [16, 16, 32, 32, 64, 64]
    assert [m for _, m in chosen] == [lookahead(AUTO_BUDGETS, b) for b in budgets]
    steep = BudgetCosts(AUTO_BUDGETS, tuple(1e-3 * 10 ** k for k in range(6)))
    assert [b for b, _ in bench.replay_auto(rounds, steep, [0.0] * 6)[2:]] == [8] * 6
    seconds, tree = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.2, 0.4, 0.8, 1.6, 3.2]
    tokens, total = bench.score(rounds[:2], [8, 256], seconds, tree)
    assert tokens == (1 + 1) + (3 + 1) and total == pytest.approx(1.0 + 6.0)
    tokens, total = bench.score(rounds[:2], [(8, 16), (256, 256)], seconds, tree)  # the first built one larger
    assert tokens == (1 + 1) + (3 + 1) and total == pytest.approx(1.0 + (0.2 - 0.1) + 6.0)


def test_the_same_round_bound_follows_each_rounds_own_expectations():
    """A confident round (every node likely) and an unconfident one (nothing past the first node), alternating, under
    costs that grow with the budget: choosing from each round's own expectations takes the largest tree for the
    confident rounds and the smallest for the others from the first round on, where the engine's rule (two rounds
    behind) cannot. A calibration that makes every candidate above the smallest worthless keeps it at the smallest.
    hindsight_scale is accepted over expected per candidate, over all rounds."""
    confident = torch.tensor([0.0] + [math.log(0.99)] * 256, dtype=torch.float64)
    unsure = torch.tensor([0.0, math.log(0.5)] + [math.log(1e-6)] * 255, dtype=torch.float64)
    rounds = [(confident, [8, 15, 15, 15, 15, 15]), (unsure, [0, 0, 0, 0, 0, 0])] * 2
    costs = BudgetCosts(AUTO_BUDGETS, tuple(1e-3 * (1 + n / 256) for n in AUTO_BUDGETS))
    assert bench.replay_same_round(rounds, costs, [0.0] * 6, [1.0] * 6) == [256, 8, 256, 8]
    assert [b for b, _ in bench.replay_auto(rounds, costs, [0.0] * 6)] != [256, 8, 256, 8]
    assert bench.replay_same_round(rounds, costs, [0.0] * 6, [1.0] + [0.0] * 5) == [8] * 4
    scale = bench.hindsight_scale([rounds[:2], rounds[2:]], AUTO_BUDGETS)
    expected = [2 * (0.99 * n + 0.5 + 1e-6 * (n - 1)) for n in AUTO_BUDGETS]
    assert scale == pytest.approx([2 * w / e for w, e in zip(rounds[0][1], expected)])
