"""A round is transactional: a failure injected at every stage of a round (before and after the backend's commit,
in each request of a batch, an Exception or a KeyboardInterrupt) raises and leaves tokens, caches, records and the
random state as they were, so the session goes on token by token and RNG state by RNG state as one that never
failed; on both backends, stepped and in overlapped runs. And a batch finishes per request: a request that is done
takes no part in later rounds, so each request of a greedy batch gets exactly what it gets alone."""
import pytest
import torch

import ddtree.engine.backend
import ddtree.reference
import ddtree.rounds
from ddtree import Session
from ddtree.engine.device_round import DeviceRound
from ddtree.models import TargetCache, tiny_random_pair
from ddtree.settings import STAGES

PROMPTS = ["first prompt", "a second, longer prompt here"]
OPTIONS = dict(budget=5, verify="sampled", temperature=1.0, seed=3)


class Injected(RuntimeError):
    pass


@pytest.fixture(scope="module")
def pair():
    return tiny_random_pair(4)


def fail_on_call(monkeypatch, owner, name, nth, exc):
    """Make owner.name raise `exc` on its nth call (1-based); the other calls run it."""
    real, calls = getattr(owner, name), [0]

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            raise exc("injected")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)
    return calls


def cache_lengths(session) -> list[int]:
    backend = session.backend
    if backend.name == "reference":
        return [c.length for c in backend.target_caches]
    return backend.decoder.seq_lens.tolist()


def assert_same_state(s, clean):
    assert s.tokens == clean.tokens
    assert s.acceptance_lengths == clean.acceptance_lengths
    assert len(s.records) == len(clean.records)
    assert torch.equal(s.generator.get_state(), clean.generator.get_state())
    assert cache_lengths(s) == cache_lengths(clean) == s.context_lens


def check_failed_step_changes_nothing(pair, monkeypatch, backend, inject, exc):
    """inject(monkeypatch) arms one failure; the second step must raise it and change nothing."""
    s, clean = (Session(pair, PROMPTS, backend=backend, **OPTIONS) for _ in range(2))
    s.step(), clean.step()
    with monkeypatch.context() as m:
        calls = inject(m)
        with pytest.raises(exc):
            s.step()
    assert calls[0] >= 1
    assert_same_state(s, clean)
    for _ in range(3):  # and it goes on as the session that never failed
        assert s.step().requests[1].committed == clean.step().requests[1].committed
        assert_same_state(s, clean)


REFERENCE_STAGES = [  # (owner, name, calls per round): per-request stages run once per request
    (ddtree.reference, "draft_logits", 2), (ddtree.reference, "draft_tree", 2),
    (ddtree.reference, "pack_verify_batch", 2), (ddtree.reference, "target_forward", 2),
    (ddtree.reference, "walk", 2), (TargetCache, "compact", 2), ("drafter", "extend_context", 2),
    (ddtree.rounds, "sampling_probs", 2), ("pair", "decode", 1),
]


@pytest.mark.parametrize("exc", [Injected, KeyboardInterrupt])
@pytest.mark.parametrize("owner, name, per_round", REFERENCE_STAGES,
                         ids=[f"{n}" for _, n, _ in REFERENCE_STAGES])
@pytest.mark.parametrize("nth", [1, 2])
def test_reference_round_fails_anywhere_and_changes_nothing(pair, monkeypatch, owner, name, per_round, nth, exc):
    """Every stage, in request 0 and request 1 (after request 0 committed, for the commit stages), and the
    record's text (after both committed)."""
    if nth > per_round:
        pytest.skip("a stage run once per round")
    target = {"drafter": pair.drafter, "pair": type(pair)}.get(owner, owner)
    check_failed_step_changes_nothing(pair, monkeypatch, "reference",
                                      lambda m: fail_on_call(m, target, name, nth, exc), exc)


NATIVE_STAGES = [(DeviceRound, stage) for stage in STAGES] + [
    (DeviceRound, "land"), (ddtree.engine.backend.NativeBackend, "_request"),
    (ddtree.engine.backend.NativeBackend, "_kernel_read"), ("pair", "decode")]


@pytest.mark.parametrize("exc", [Injected, KeyboardInterrupt])
@pytest.mark.parametrize("owner, name", NATIVE_STAGES, ids=[n for _, n in NATIVE_STAGES])
def test_native_round_fails_anywhere_and_changes_nothing(pair, monkeypatch, owner, name, exc):
    """Every device stage (the commit's included), the readback, request 1's record (after request 0's: nth 2)
    and the record's text, all after the device commit but the first five."""
    nth = 2 if name == "_request" else 1
    target = type(pair) if owner == "pair" else owner
    if name == "_kernel_read":  # runs only for a probed round: probe it
        s, clean = (Session(pair, PROMPTS, backend="native", **OPTIONS) for _ in range(2))
        s.step(), clean.step()
        with monkeypatch.context() as m:
            fail_on_call(m, target, name, nth, exc)
            with pytest.raises(exc):
                s.step(probe=True)
        assert_same_state(s, clean)
        s.step(), clean.step()
        assert_same_state(s, clean)
        return
    check_failed_step_changes_nothing(pair, monkeypatch, "native", lambda m: fail_on_call(m, target, name, nth, exc),
                                      exc)


@pytest.mark.parametrize("exc", [Injected, KeyboardInterrupt])
@pytest.mark.parametrize("budget", [5, "auto"])
def test_a_run_interrupted_mid_round_continues_as_one_never_interrupted(pair, monkeypatch, exc, budget):
    """Overlapped native runs (two rounds in flight) and stepped reference runs, budget fixed and "auto": the
    third round's commit fails; the session is as after the rounds before and decodes on as a clean one."""
    from ddtree.budget import BudgetCosts
    costs = BudgetCosts((2, 4, 8), (1e-3, 1.2e-3, 1.6e-3), overhead=1e-3) if budget == "auto" else None
    for backend, extra in (("native", dict(record=False, overlap=True)), ("reference", {})):
        options = OPTIONS | extra | dict(budget=budget, budget_costs=costs)
        s, clean = (Session(pair, PROMPTS, backend=backend, **options) for _ in range(2))
        with monkeypatch.context() as m:
            owner = DeviceRound if backend == "native" else TargetCache
            fail_on_call(m, owner, "commit" if backend == "native" else "compact", 5, exc)
            with pytest.raises(exc):
                s.run(40, stop_on_eos=False)
        rounds = len(s.records)
        for _ in range(rounds):
            clean.step()
        assert_same_state(s, clean)
        got, want = s.run(12, stop_on_eos=False), clean.run(12, stop_on_eos=False)
        assert [g.tokens for g in got] == [g.tokens for g in want]
        assert_same_state(s, clean)


def alone_and_batched(pair, backend, prompts, n, **options):
    batch = Session(pair, prompts, backend=backend, **options).run(n)
    alone = [Session(pair, p, backend=backend, **options).run(n)[0] for p in prompts]
    return batch, alone


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_each_request_of_a_greedy_batch_gets_what_it_gets_alone(pair, backend, monkeypatch):
    """Request 0 commits an "EOS" early (a token of its own greedy answer made EOS): it stops there, with one
    acceptance length per round it took part in, while request 1 decodes on to max_new_tokens."""
    first = Session(pair, PROMPTS, backend=backend, budget=5).run(30, stop_on_eos=False)
    eos = next(t for t in first[0].tokens[2:] if t not in first[1].tokens)
    monkeypatch.setattr(type(pair), "eos_token_ids", property(lambda self: {eos}))
    batch, alone = alone_and_batched(pair, backend, PROMPTS, 30, budget=5)
    assert batch[0].stopped == "eos" and batch[1].stopped == "max_new_tokens"
    for got, want in zip(batch, alone):
        assert got.tokens == want.tokens and got.stopped == want.stopped
        assert got.acceptance_lengths == want.acceptance_lengths
        assert sum(got.acceptance_lengths) >= len(got.tokens) - 1  # its rounds, and only those
    late = [r for r in batch[0].records if r.requests[0] is None]
    assert late and all(r.requests[1] is not None for r in late)  # request 0 sat the last rounds out


def test_a_full_context_stops_its_request_only_on_the_reference(pair):
    """The longer prompt fills a short context first: it stops with 'context', the other decodes on as it does
    alone. The native engine computes every request's rows each round, so there a full context stops the batch."""
    prompts = ["a much longer prompt than the other one, it fills the context first", "short"]
    batch, alone = alone_and_batched(pair, "reference", prompts, 60, budget=4, max_len=90)
    assert [g.stopped for g in batch] == [g.stopped for g in alone] == ["context", "max_new_tokens"]
    assert [g.tokens for g in batch] == [g.tokens for g in alone]
    native = Session(pair, prompts, backend="native", budget=4, max_len=90).run(60)
    assert [g.stopped for g in native] == ["context", "context"]
    assert native[0].tokens == batch[0].tokens


def test_records_of_a_finished_request_read_everywhere(pair, monkeypatch, tmp_path):
    """The records a batch run leaves (None for a finished request) save, load, analyse, report and draw per
    request; asking for a finished request's round is a clear error naming it."""
    import ddtree
    from ddtree.report import render_html
    from ddtree.widgets.figures import stats_html
    from ddtree.widgets.views import MaskView

    first = Session(pair, PROMPTS, budget=5).run(30, stop_on_eos=False)
    eos = next(t for t in first[0].tokens[2:] if t not in first[1].tokens)
    monkeypatch.setattr(type(pair), "eos_token_ids", property(lambda self: {eos}))
    s = Session(pair, PROMPTS, budget=5)
    s.run(30)
    late = next(r for r in s.records if r.requests[0] is None)
    ddtree.save_trace(s.records, tmp_path / "t.json", vocab_size=pair.vocab_size)
    loaded, _ = ddtree.load_trace(tmp_path / "t.json")
    assert [r.took_part for r in loaded] == [r.took_part for r in s.records]
    for b in (0, 1):
        rounds = [r.index for r in s.records if r.requests[b] is not None]
        assert sorted({c.round for c in ddtree.analysis.counterfactuals(loaded, request=b)}) == rounds
        assert f"{len(rounds)} rounds" in render_html(loaded, request=b)
    view = MaskView(late, request=1)
    assert view.ids == [1] and view.batch.batch_size == 1
    assert "mean over" in stats_html(late, request=1, history=s.records)
    with pytest.raises(ValueError, match=f"request 0 had finished before round {late.index}"):
        MaskView(late, request=0)
    with pytest.raises(ValueError, match="request 0 had finished"):
        stats_html(late, request=0)
