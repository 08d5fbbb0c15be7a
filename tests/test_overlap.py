"""Session.run with overlap: each round queued on the device before the previous one is read back, the round queued
past the end undone. Same tokens, budgets and random state as stepping, and the session continues as if it had
stepped (on the CPU the engine runs every launch at once, which checks the bookkeeping; the GPU test checks it with
rounds really in flight)."""
from __future__ import annotations

import pytest
import torch

from ddtree import BudgetCosts, Session
from ddtree.models import tiny_random_pair

PROMPTS = ["first prompt", "a second, longer prompt", "3"]


@pytest.fixture(scope="module")
def pair():
    pair = tiny_random_pair(2)
    with torch.no_grad():
        pair.drafter.norm.weight.mul_(30)  # a confidence that changes from round to round: auto budgets change
    return pair


def sessions(pair, device_pair=None, **options):
    """(overlapped, stepped) sessions of the same options."""
    p = device_pair or pair
    return (Session(p, PROMPTS, backend="native", record=False, overlap=True, **options),
            Session(p, PROMPTS, backend="native", record=False, overlap=False, **options))


@pytest.mark.parametrize("options", [
    dict(method="ar"), dict(method="dflash"), dict(budget=6),
    dict(budget=6, verify="sampled", temperature=0.8, top_p=0.9, seed=4),
    dict(budget="auto", budget_costs=BudgetCosts((2, 4, 8), (1e-3, 1.2e-3, 1.6e-3), overhead=1e-3)),
    dict(budget="auto", budget_costs=BudgetCosts((2, 4, 8), (1e-3, 1.2e-3, 1.6e-3), overhead=1e-3),
         verify="sampled", seed=1),
], ids=["ar", "dflash", "ddtree", "ddtree-sampled", "auto", "auto-sampled"])
def test_overlapped_runs_decode_as_stepped_runs_and_continue_alike(pair, options):
    overlapped, stepped = sessions(pair, **options)
    for n in (9, 21):  # two runs: the round queued past the first run's end was undone
        got, want = overlapped.run(n, stop_on_eos=False), stepped.run(n, stop_on_eos=False)
        assert [g.tokens for g in got] == [g.tokens for g in want]
        assert [r.budget for r in overlapped.records] == [r.budget for r in stepped.records]
        assert overlapped.backend.decoder.seq_lens.tolist() == overlapped.context_lens
        assert torch.equal(overlapped.generator.get_state(), stepped.generator.get_state())
    if options.get("budget") == "auto":
        assert len({r.budget for r in overlapped.records}) > 1
    assert overlapped.step().num_draft_tokens == stepped.step().num_draft_tokens  # stepping on: the same state
    assert overlapped.tokens == stepped.tokens


def test_an_overlapped_run_stops_at_the_context_end_like_a_stepped_one(pair):
    """Near the end of a short context no round is queued ahead (it might not fit): both stop at the same token."""
    overlapped, stepped = sessions(pair, budget=6, max_len=60)
    got, want = overlapped.run(200, stop_on_eos=False), stepped.run(200, stop_on_eos=False)
    assert [g.stopped for g in got] == [g.stopped for g in want] == ["context"] * 3
    assert [g.tokens for g in got] == [g.tokens for g in want]


def test_a_failed_overlapped_run_changes_nothing(pair):
    """NaN target logits mid-run: run raises, the round queued ahead is undone, and afterwards (weights restored)
    the session decodes as one that never failed."""
    pair = tiny_random_pair(6)
    overlapped, stepped = sessions(pair, budget=5, verify="sampled", seed=2)
    overlapped.run(6, stop_on_eos=False), stepped.run(6, stop_on_eos=False)
    tokens, state = [list(t) for t in overlapped.tokens], overlapped.generator.get_state()
    row = pair.target.lm_head.weight[7].clone()
    pair.target.lm_head.weight[7] = float("nan")
    try:
        with pytest.raises(ValueError, match="NaN"):
            overlapped.run(30, stop_on_eos=False)
    finally:
        pair.target.lm_head.weight[7] = row
    assert overlapped.tokens == tokens and torch.equal(overlapped.generator.get_state(), state)
    assert overlapped.backend.decoder.seq_lens.tolist() == overlapped.context_lens
    assert [g.tokens for g in overlapped.run(30, stop_on_eos=False)] == \
        [g.tokens for g in stepped.run(30, stop_on_eos=False)]


def test_overlap_needs_unrecorded_rounds_and_the_device_mask(pair):
    with pytest.raises(ValueError, match="overlap=True needs record=False"):
        Session(pair, PROMPTS, backend="native", overlap=True)
    with pytest.raises(ValueError, match="overlap=True needs"):
        Session(pair, PROMPTS, backend="native", record=False, overlap=True, attention="custom_mask")
    with pytest.raises(ValueError, match="apply to backend='native' only"):
        Session(pair, PROMPTS, backend="reference", overlap=True)
    with pytest.raises(ValueError, match="overlap must be True or False"):
        Session(pair, PROMPTS, backend="native", record=False, overlap="yes")
    assert not Session(pair, PROMPTS, backend="native", record=False).overlap  # the default: on CUDA only


@pytest.mark.gpu
@pytest.mark.parametrize("options", [dict(budget=12), dict(budget=12, verify="sampled", seed=3),
                                     dict(budget="auto", budget_costs=BudgetCosts((4, 8, 16), (1e-3, 1.1e-3, 1.3e-3),
                                                                                  overhead=5e-4))],
                         ids=["ddtree", "sampled", "auto"])
def test_overlapped_graphed_rounds_decode_as_stepped_rounds_on_gpu(pair, options):
    cuda = tiny_random_pair(2, device="cuda")
    with torch.no_grad():
        cuda.drafter.norm.weight.mul_(30)
    overlapped, stepped = sessions(pair, cuda, cuda_graphs=True, **options)
    assert Session(cuda, PROMPTS, backend="native", record=False).overlap  # the default on CUDA
    for n in (20, 48):
        assert [g.tokens for g in overlapped.run(n, stop_on_eos=False)] == \
            [g.tokens for g in stepped.run(n, stop_on_eos=False)]
        assert [r.budget for r in overlapped.records] == [r.budget for r in stepped.records]
        assert overlapped.backend.decoder.seq_lens.tolist() == overlapped.context_lens


def test_an_interrupted_overlapped_run_leaves_the_session_as_stepped(pair, monkeypatch):
    """An interrupt while a round is being read (two in flight): both are undone, nothing half-read stays, and the
    session goes on to decode exactly the stepped tokens."""
    overlapped, stepped = sessions(pair, budget=6, verify="sampled", seed=5)
    finish, calls = overlapped.backend.finish, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return finish(*args, **kwargs)

    monkeypatch.setattr(overlapped.backend, "finish", interrupted)
    with pytest.raises(KeyboardInterrupt):
        overlapped.run(40, stop_on_eos=False)
    monkeypatch.undo()
    assert len(overlapped.records) == 2
    assert overlapped.backend.decoder.seq_lens.tolist() == overlapped.context_lens
    assert [g.tokens for g in overlapped.run(40, stop_on_eos=False)] == \
        [g.tokens for g in stepped.run(40, stop_on_eos=False)]
