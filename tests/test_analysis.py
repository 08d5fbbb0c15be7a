"""ddtree.analysis: counterfactual budgets against build_tree and the greedy walk (random logits, ties included) and
against real rounds and real re-runs (tiny pair; the embedded pair, slow), the statistics, the command line, the
views and the report sections."""
import json
import random
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
import torch

import ddtree
import ddtree.report
from ddtree.analysis import (DraftRanks, budget_acceptance, budget_curve, calibration, calibration_points,
                             counterfactuals, depth_reach, main, rank_depth, ranks_from_logits, ranks_from_record,
                             reliability, replay_heap)
from ddtree.widgets import AcceptanceView, CalibrationView, RankDepthView

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "data" / "trace_small.json"
TREE_FIELDS = ("tokens", "parents", "depths", "ranks", "node_logws")


@pytest.fixture(scope="module")
def records():
    return ddtree.load_trace(TRACE)[0]


def decode(session, tokens: int):
    """Step until `tokens` tokens are committed (uses only .step() and .records)."""
    while sum(len(r.requests[0].committed) for r in session.records) < tokens:
        session.step()
    return session.records


def random_cases(n: int, seed: int = 0):
    """Draft logits [depth, vocab]: every other case integer-valued (ties within a depth), every third with zero
    probabilities, and one in four of the integer ones with a certain depth (one token of probability 1: a child
    then ties with its parent's equal siblings, one depth apart)."""
    g = torch.Generator().manual_seed(seed)
    for case in range(n):
        depth, vocab = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(2, 40, (1,), generator=g))
        logits = torch.randint(-2, 2, (depth, vocab), generator=g).float() if case % 2 else \
            torch.randn(depth, vocab, generator=g)
        if case % 3 == 0:
            logits[torch.rand(depth, vocab, generator=g) < 0.4] = -torch.inf
            logits[:, 0] = 0.0
        if case % 8 == 1 and depth > 1:
            certain = int(torch.randint(1, depth, (1,), generator=g))
            logits[certain] = -torch.inf
            logits[certain, int(torch.randint(0, vocab, (1,), generator=g))] = 0.0
        yield logits


def same_tree(a, b, n: int) -> bool:
    return all(torch.equal(getattr(a, f)[:n], getattr(b, f)[:n]) for f in TREE_FIELDS)


# ------------------------------------------------------------------------------------------------- the heap
def test_replayed_heap_is_build_trees_pop_order_at_every_budget():
    budgets = [1, 2, 3, 5, 8, 13, 40, 100, 400]
    for logits in random_cases(120):
        tree, exact = replay_heap(ranks_from_logits(logits), 400)
        assert exact == 400  # every rank known
        for b in budgets:
            real = ddtree.build_tree(logits, b)
            assert tree.n_nodes >= real.n_nodes and same_tree(tree, real, real.n_nodes)
            if real.n_nodes - 1 < b:  # capped: the drafter allows no more paths, and the replay agrees
                assert tree.n_nodes == real.n_nodes


def test_the_tie_rule_matters_on_these_cases():
    """Negative control: ranking equal log-probs by the higher token id gives other trees, so the test above
    exercises the tie rule."""
    differ = 0
    for logits in random_cases(120):
        logq = torch.log_softmax(logits, -1)
        flipped = logq.flip(-1)
        values, order = torch.sort(flipped, dim=-1, descending=True, stable=True)
        tokens = logits.shape[-1] - 1 - order  # equal log-probs: higher id first
        wrong = DraftRanks(tokens.tolist(), values.double().tolist(), [True] * logits.shape[0])
        tree, _ = replay_heap(wrong, 40)
        real = ddtree.build_tree(logits, 40)
        differ += not (tree.n_nodes == real.n_nodes and same_tree(tree, real, real.n_nodes))
    assert differ >= 10


def test_budget_acceptance_is_the_greedy_walk_on_build_tree():
    rng = random.Random(0)
    for logits in random_cases(80, seed=1):
        depth, vocab = logits.shape
        ranked = torch.sort(torch.log_softmax(logits, -1), dim=-1, descending=True, stable=True).indices
        # the target's continuation: mostly a top-3 draft token, sometimes any token
        continuation = [int(ranked[d, min(rng.randrange(4), vocab - 1)]) if rng.random() < 0.85 else
                        rng.randrange(vocab) for d in range(depth)]
        curve = budget_acceptance(logits, continuation, max_budget=64)
        assert curve.shape == (64,) and bool((curve[1:] >= curve[:-1]).all())
        for b in (1, 2, 3, 4, 6, 9, 16, 30, 64):
            tree = ddtree.build_tree(logits, b).with_root_token(0)
            target = torch.zeros(tree.n_nodes, vocab)
            target[torch.arange(tree.n_nodes), torch.tensor(continuation + [0])[tree.depths]] = 1.0
            assert ddtree.verify_greedy(tree, target).acceptance_length == int(curve[b - 1])


def test_kept_ranks_are_exact_up_to_the_horizon():
    """With only the top 3 ranks per depth known, the replay equals the full one for its first `exact` pops; the
    horizon is needed (the two differ right after it in some cases)."""
    needed = 0
    for logits in random_cases(120, seed=2):
        full, _ = replay_heap(ranks_from_logits(logits), 200)
        ranks = ranks_from_logits(logits, keep=3)
        cut, exact = replay_heap(ranks, 200)
        assert same_tree(cut, full, exact + 1)
        differ = cut.n_nodes != full.n_nodes or not same_tree(cut, full, cut.n_nodes)
        assert exact < 200 or not differ
        needed += differ
    assert needed >= 10


def test_ranks_from_a_record_drop_a_tie_at_the_cut(records):
    req = records[0].requests[0]
    full = ranks_from_record(req, use_tree=False)
    assert [len(t) for t in full.tokens] == [len(req.draft_top_tokens[0]) - 1] * len(full.tokens)  # cut unknown
    tied = [row[:-2] + [row[-3]] * 2 for row in req.draft_top_logprobs]  # the last three equal
    ranks = ranks_from_record(replace(req, draft_top_logprobs=tied), use_tree=False)
    assert [len(t) for t in ranks.tokens] == [len(req.draft_top_tokens[0]) - 3] * len(full.tokens)
    whole = ranks_from_record(req, vocab_size=len(req.draft_top_tokens[0]), use_tree=False)
    assert all(whole.complete) and len(whole.tokens[0]) == len(req.draft_top_tokens[0])


# ------------------------------------------------------------------------------------------------- on a trace
def test_counterfactual_at_the_runs_own_budget_is_the_real_acceptance(records):
    for use_tree in (True, False):
        cfs = counterfactuals(records, use_tree=use_tree)
        assert [cf.round for cf in cfs] == [r.index for r in records]
        for cf, rec in zip(cfs, records):
            req = rec.requests[0]
            assert cf.continuation[:len(req.committed)] == req.committed[:cf.depth]
            if rec.method == "ddtree":
                assert cf.at(rec.budget) == req.acceptance_length and cf.min_budget <= rec.budget
                assert bool(cf.exact[rec.budget - 1])
            else:
                assert cf.chain_acceptance == req.acceptance_length
    last = cfs[-1]
    assert last.truncated and len(last.continuation) == len(records[-1].requests[0].committed)


def test_budget_curve_and_depth_reach(records):
    cfs = counterfactuals(records)
    curve = budget_curve(cfs, [1, 12, 1024])
    assert curve.rounds == len(records) and curve.real_budgets == [12, 40]
    assert curve.mean[0] == pytest.approx(sum(cf.at(1) for cf in cfs) / len(cfs))
    assert all(lo <= m for lo, m in zip(curve.lower, curve.mean))
    assert curve.real == pytest.approx(sum(r.requests[0].acceptance_length for r in records) / len(records))
    reach = depth_reach(cfs)
    for d, share in enumerate(reach, start=1):
        assert share == pytest.approx(sum(r.requests[0].acceptance_length - 1 >= d for r in records) / len(records))
    assert depth_reach(cfs[:3], budget=12) == depth_reach(cfs[:3])  # rounds 0-2 ran at budget 12


def test_calibration_points_and_reliability(records):
    probs, agreed = calibration_points(records)
    reqs = [r.requests[0] for r in records]
    assert probs.numel() == sum(len(q.tree.children(a)) for q in reqs for a in q.accepted)
    assert int(agreed.sum()) == sum(q.acceptance_length - 1 for q in reqs)  # every accepted node, once
    assert bool(((probs > 0) & (probs <= 1)).all())
    cal = calibration(records, bins=5)
    assert sum(cal.counts) == cal.n == probs.numel() and len(cal.edges) == 6


def test_reliability_detects_miscalibration():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(20000, generator=g, dtype=torch.float64)
    calibrated = reliability(p, torch.rand(20000, generator=g, dtype=torch.float64) < p)
    overconfident = reliability(p, torch.rand(20000, generator=g, dtype=torch.float64) < p ** 2)  # negative control
    assert calibrated.ece < 0.02 < 0.1 < overconfident.ece
    assert all(abs(f - m) < 0.05 for f, m in zip(calibrated.frequency, calibrated.mean_prob))


def test_rank_depth_counts_every_continuation_token(records):
    cfs = counterfactuals(records)
    rd = rank_depth(cfs, max_rank=4)
    assert rd.counts.shape == (7, 6) and rd.labels[-2:] == [">=4", "not kept"]
    assert int(rd.counts.sum()) == sum(len(cf.continuation) for cf in cfs)
    assert int(rd.counts[0, -1]) == 1  # the sampled last round's bonus token is not among its kept ranks
    for cf in cfs:  # the rank is the token's place in the record's draft top-K (ties by lower id)
        req = records[cf.round].requests[0]
        for d, (tok, r) in enumerate(zip(cf.continuation, cf.ranks)):
            order = sorted(zip(req.draft_top_logprobs[d], req.draft_top_tokens[d]), key=lambda x: (-x[0], x[1]))
            assert r == next((k for k, (_, t) in enumerate(order[:cf.kept[d]]) if t == tok), None)


# ------------------------------------------------------------------------------------------------- bad input
def test_bad_input_names_what_is_missing(records):
    with pytest.raises(ValueError, match="non-empty list of RoundRecord"):
        counterfactuals([])
    ar = [replace(r, method="ar", requests=[replace(q, draft_top_tokens=[], draft_top_logprobs=[])
                                            for q in r.requests]) for r in records]
    with pytest.raises(ValueError, match="every round is 'ar'"):
        counterfactuals(ar)
    old = [replace(records[0], requests=[replace(records[0].requests[0], draft_top_tokens=[],
                                                 draft_top_logprobs=[])])] + records[1:]
    with pytest.raises(ValueError, match="round 0 .*draft_top_tokens is empty"):
        counterfactuals(old)
    with pytest.raises(ValueError, match="does not continue round 0"):
        counterfactuals([records[0]] + records[2:])
    for bad in (0, 1025, 2.0):
        with pytest.raises(ValueError, match=r"max_budget must be an int in \[1, 1024\]"):
            counterfactuals(records, max_budget=bad)
    cfs = counterfactuals(records, max_budget=64)
    with pytest.raises(ValueError, match=r"budgets entry must be an int in \[1, 64\]"):
        budget_curve(cfs, [8, 128])
    with pytest.raises(ValueError, match=r"budget must be an int in \[1, 64\]"):
        cfs[0].at(65)
    with pytest.raises(ValueError, match="request must be"):
        counterfactuals(records, request=1)
    with pytest.raises(ValueError, match="round 4 is an 'ar' round"):
        counterfactuals(records[:4] + [replace(records[4], method="ar")] + records[5:], rounds=[4])


# ------------------------------------------------------------------------------------------------- command line
def test_command_line_prints_the_per_budget_table(records, capsys):
    assert main([str(TRACE)]) == 0
    out = capsys.readouterr().out
    curve = budget_curve(counterfactuals(records))
    rows = {int(line.split()[0]): line.split() for line in out.splitlines()
            if re.match(r"\s+\d+\s+\d+\.\d\d\s+\d+/\d+", line)}
    assert sorted(rows) == [1, 2, 4, 8, 12, 16, 32, 40, 64, 128, 256, 512, 1024]
    for b, cells in rows.items():
        assert float(cells[1]) == pytest.approx(curve.mean[b - 1], abs=0.005)
        assert cells[2] == f"{curve.exact_rounds[b - 1]}/{curve.rounds}"
    assert out.count("<- a run's budget") == 2


def test_command_line_errors(records, tmp_path, capsys):
    doc = json.loads(TRACE.read_text())
    for rec in doc["records"]:
        for req in rec["requests"]:
            del req["draft_top_logprobs"]  # an older record without the field
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert main([str(old)]) == 2
    assert "draft_top_logprobs" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    ddtree.save_trace([], empty)
    assert main([str(empty)]) == 2
    assert "non-empty list of RoundRecord" in capsys.readouterr().err
    run = subprocess.run([sys.executable, "-m", "ddtree.analysis", str(TRACE), "--budgets", "3", "5000"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2 and "budgets entry must be an int in [1, 1024], got 5000" in run.stderr


# ------------------------------------------------------------------------------------------------- views, report
def test_acceptance_view(records):
    view = AcceptanceView(records)
    cfs = counterfactuals(records)
    names = [t.name for t in view.figure.data]
    assert names.count("round") == len(records)
    mean = next(t for t in view.figure.data if t.name == "mean")
    curve = budget_curve(cfs)
    assert list(mean.y) == pytest.approx(curve.mean[:len(mean.y)])
    real = next(t for t in view.figure.data if t.name == "real")
    assert list(real.x) == [12, 40]
    view.selector.value = 2
    assert view.figure.data[-1].name == "round 2"
    assert "budget-table" in view.table.value and view.table.value.count("<tr") == 1 + 11
    with pytest.raises(ValueError, match="RoundRecord"):
        view.show([])


def test_rank_depth_and_calibration_views(records):
    view = RankDepthView(records, max_rank=4)
    heat = view.figure.data[0]
    assert all(sum(row) == pytest.approx(1.0) for row in heat.z)
    view.normalize.value = False
    assert sum(map(sum, view.figure.data[0].z)) == sum(len(cf.continuation) for cf in counterfactuals(records))
    cal = CalibrationView(records, bins=4)
    assert len(cal.figure.data[0].x) == 4 and "ECE" in cal.figure.layout.title.text
    cal.bins.value = 8
    assert len(cal.figure.data[0].x) == 8


def test_report_gains_the_analysis_sections(records):
    text = ddtree.report.render_html(records)
    for title in ("Counterfactual budgets", "Where the drafter loses the target", "Draft calibration"):
        assert f"<h2>{title}</h2>" in text
    ar = [replace(r, method="ar") for r in records[:1]]
    assert "Counterfactual budgets" not in ddtree.report.render_html(ar)


def test_notebook_06_uses_the_analysis_views_on_the_embedded_pair():  # committed as tests/test_notebooks.py says
    nb = nbformat.read(ROOT / "notebooks" / "06_why_trees_win.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert any("load_default_pair(" in c.source for c in code)
    assert all(any(view in c.source for c in code) for view in ("AcceptanceView", "RankDepthView", "CalibrationView"))


# ------------------------------------------------------------------------------------------------- real sessions
@pytest.fixture(scope="module")
def tiny():
    from ddtree.models import tiny_random_pair
    return tiny_random_pair(0)


def boundary_budgets(cf, fixed, limit: int) -> list[int]:
    """`fixed` plus, for every prefix reachable within `limit`, the budgets just below and at its pop."""
    return sorted({b for b in fixed if b <= limit} | {b for n in cf.needed if n <= limit for b in (n - 1, n) if b})


def check_against_reruns(base, cf, budgets) -> None:
    """The first round re-run from `base` (the same state) at each budget accepts what the counterfactual says."""
    for b in budgets:
        assert bool(cf.exact[b - 1]), f"budget {b} is past the exact budget {cf.exact_budget}"
        real = base.fork(budget=b).step().requests[0].acceptance_length
        assert real == cf.at(b), f"budget {b}: real {real}, counterfactual {cf.at(b)}"


def test_counterfactual_equals_real_rounds_and_reruns_tiny_pair(tiny):
    kept = tiny.vocab_size  # every rank kept
    for prompt in ("a tree\n walk", "hello there"):
        base = ddtree.Session(tiny, prompt, budget=300, record_top_k=kept)
        session = base.fork()
        records = decode(session, 24)
        cfs = counterfactuals(records, vocab_size=tiny.vocab_size, use_tree=False)
        assert all(cf.exact_budget == 1024 for cf in cfs)
        assert [cf.at(300) for cf in cfs] == [r.requests[0].acceptance_length for r in records]
        assert max(cf.real_acceptance for cf in cfs) > 1  # not all trivial
        check_against_reruns(base, cfs[0], boundary_budgets(cfs[0], [1, 2, 8, 64, 1024], 1024))
    chain = ddtree.Session(tiny, "a tree\n walk", method="dflash", record_top_k=kept)
    cfs = counterfactuals(decode(chain, 16), vocab_size=tiny.vocab_size)
    assert [cf.chain_acceptance for cf in cfs] == [cf.real_acceptance for cf in cfs]


def test_batch_records_are_analysed_per_request_tiny_pair(tiny):
    kept = tiny.vocab_size
    session = ddtree.Session(tiny, ["a tree\n walk", "hello there"], budget=64, backend="native", record_top_k=kept)
    for _ in range(4):
        session.step()
    records = session.records
    cfs = counterfactuals(records, vocab_size=tiny.vocab_size, use_tree=False)  # replayed without the trees
    assert sorted((cf.request, cf.round) for cf in cfs) == [(b, k) for b in (0, 1) for k in range(4)]
    for cf in cfs:
        assert cf.at(64) == records[cf.round].requests[cf.request].acceptance_length
        assert cf.continuation[0] == records[cf.round].requests[cf.request].committed[0]
    assert [cf.request for cf in counterfactuals(records, request=1)] == [1] * 4


def test_a_batch_request_is_exact_only_to_its_own_budget_tiny_pair(tiny):
    prompts = ["hello there", "a tree\n walk"]
    batch = ddtree.Session(tiny, prompts, budget=[2, 64], backend="native", record_top_k=4)
    records = decode(batch, 16)
    assert [req.budget for req in records[0].requests] == [2, 64] and records[0].budget == 64
    cf = counterfactuals(records, request=0)[0]  # its 3-node tree proves 2 pops, not that the drafter had no more
    assert cf.budget == 2 and cf.exact_budget < 64
    check_against_reruns(ddtree.Session(tiny, prompts[0], budget=2, record_top_k=4), cf,
                         range(1, cf.exact_budget + 1))


def test_few_kept_ranks_stay_exact_up_to_the_exact_budget_tiny_pair(tiny):
    kept = 4
    base = ddtree.Session(tiny, "hello there", budget=64, record_top_k=kept)
    records = decode(base.fork(), 16)
    cf = counterfactuals(records, use_tree=False)[0]
    assert cf.exact_budget < 64  # four ranks per depth: the horizon is short without the tree
    check_against_reruns(base, cf, range(1, cf.exact_budget + 1))
    with_tree = counterfactuals(records)[0]
    assert with_tree.exact_budget >= 64
    check_against_reruns(base, with_tree, boundary_budgets(with_tree, [1, 16, 64], with_tree.exact_budget))


@pytest.mark.slow
def test_counterfactual_equals_real_rounds_and_reruns_embedded_pair():
    from ddtree.models import load_default_pair
    from ddtree.training.prompts import load_prompts
    pair = load_default_pair()
    kept = 128
    base = ddtree.Session(pair, load_prompts()[1][1], budget=32, record_top_k=kept)
    records = decode(base.fork(), 40)
    for use_tree in (True, False):
        cfs = counterfactuals(records, use_tree=use_tree)
        assert [cf.at(32) for cf in cfs] == [r.requests[0].acceptance_length for r in records]
        assert all(cf.exact_budget >= 32 for cf in cfs)
    cf = counterfactuals(records)[0]
    assert cf.real_acceptance > 2
    check_against_reruns(base, cf, boundary_budgets(cf, [1, 8, 64, 128], min(cf.exact_budget, 128)))
