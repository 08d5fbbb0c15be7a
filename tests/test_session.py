import json

import pytest
import torch

import ddtree
import ddtree.reference
import ddtree.settings
from ddtree import Session, check_lossless, load_trace, save_trace
from ddtree.models import TargetCache, target_forward, tiny_random_pair


@pytest.fixture(scope="module")
def pair():
    return tiny_random_pair(0)


PROMPTS = ["hello tree", "abc", "speculative decoding"]


def ar_tokens(pair, prompt, n):
    return Session(pair, prompt, method="ar", verify="greedy").run(n, stop_on_eos=False)[0].tokens


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("budget", [1, 4, 24])
def test_ddtree_and_dflash_greedy_are_lossless(seed, budget):
    pair = tiny_random_pair(seed)
    report = check_lossless(pair, PROMPTS[:2], 24, budget=budget)
    assert report.ok, str(report)
    assert report.tokens_checked == 2 * 2 * 24


def oracle_drafter(reference: list[int], vocab: int, seed: int):
    """A stand-in for a well-trained drafter: at depth d it ranks the true next token (from the autoregressive
    reference) at rank 0, 1 or 2 at random, so trees accept long paths only if DDTree keeps the right branches."""
    g = torch.Generator().manual_seed(seed)

    def draft(pair, bonus, cache):
        ctx = cache.length  # committed tokens the drafter has seen; the bonus sits at position ctx
        depth = pair.block_size - 1
        logits = torch.randn(depth, vocab, generator=g)
        for d in range(depth):
            j = ctx + 1 + d  # absolute position of this draft token
            if j < len(reference):
                rank = int(torch.randint(0, 3, (1,), generator=g))
                logits[d, reference[j]] = 12.0 - rank
                for r in range(rank):
                    wrong = (reference[j] + 1 + r) % vocab
                    logits[d, wrong] = 12.0 - r
        return logits

    return draft


@pytest.mark.parametrize("method, budget", [("ddtree", 12), ("ddtree", 40), ("dflash", 0)])
def test_long_acceptances_stay_lossless_and_compact_the_cache(pair, monkeypatch, method, budget):
    prompt = "a long walk"
    ar = Session(pair, prompt, method="ar", verify="greedy")
    reference_gen = ar.run(40, stop_on_eos=False)[0].tokens
    reference = ar.tokens[0]
    monkeypatch.setattr(ddtree.reference, "draft_logits", oracle_drafter(reference, pair.vocab_size, 1))
    s = Session(pair, prompt, method=method, budget=budget, verify="greedy")
    gen = s.run(40, stop_on_eos=False)[0]
    assert gen.tokens == reference_gen
    assert max(gen.acceptance_lengths) >= 4  # the oracle really drives deep acceptances
    if method == "ddtree" and budget == 40:
        assert gen.mean_acceptance_length > 3
    # the compacted cache holds exactly the committed tokens but the last, as a fresh causal prefill would
    cache = s.backend.target_caches[0]
    assert cache.length == s.context_lens[0] == len(s.tokens[0]) - 1
    fresh = TargetCache()
    target_forward(pair.target, s.tokens[0][:-1], torch.arange(s.context_lens[0]), None, fresh, [])
    for mine, ref in zip(cache.hf.layers, fresh.hf.layers):
        torch.testing.assert_close(mine.keys, ref.keys, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(mine.values, ref.values, atol=1e-5, rtol=1e-4)
    assert s.backend.draft_caches[0].length == s.context_lens[0]


def test_round_record_contents(pair):
    s = Session(pair, "record me", method="ddtree", budget=10)
    rec = s.step()
    req = rec.requests[0]
    assert rec.index == 0 and rec.method == "ddtree" and rec.num_draft_tokens == 11
    assert req.context_len == s.prompt_lens[0]
    assert req.tree.tokens[0] == s.tokens[0][s.prompt_lens[0]]  # rooted at the first bonus token
    assert len(req.draft_top_tokens) == pair.block_size - 1 and len(req.draft_top_tokens[0]) == 16
    assert req.positions == (req.tree.depths + req.context_len).tolist() + [req.context_len] * (11 - req.n_nodes)
    assert req.input_ids[:req.n_nodes] == req.tree.tokens.tolist()
    mask = req.attention_mask()
    assert mask.shape == (11, req.context_len + 11)
    assert torch.equal(mask[:req.n_nodes, :req.context_len + req.n_nodes],
                       ddtree.tree_attention_mask(req.tree, req.context_len))
    assert len(req.target_top_tokens) == req.n_nodes and len(req.target_choice) == req.n_nodes
    assert req.target_choice[req.accepted[-1]] == req.bonus_token
    assert s.tokens[0][-len(req.committed):] == req.committed
    assert req.committed_text == pair.decode(req.committed)
    assert all(t in req.token_texts for t in req.tree.tokens.tolist())
    assert set(rec.times) == set(ddtree.settings.STAGES) and all(v >= 0 for v in rec.times.values())


def test_fork_replays_identically_and_switches_rules(pair):
    s = Session(pair, "fork here", method="ddtree", budget=8, verify="sampled", temperature=1.0, seed=5)
    s.step()
    twin = s.fork()
    a, b = s.step(), twin.step()
    assert a.requests[0].committed == b.requests[0].committed and a.requests[0].accepted == b.requests[0].accepted
    assert s.tokens == twin.tokens
    greedy = s.fork(verify="greedy")
    g1, g2 = greedy.fork(), greedy.fork(method="dflash")
    assert g1.step().requests[0].tree.n_nodes == 9 and g2.step().requests[0].tree.n_nodes == pair.block_size
    assert len(s.records) == 2 and len(greedy.records) == 2 and len(g1.records) == 3  # independent histories
    with pytest.raises(ValueError, match="verify"):
        s.fork(verify="lucky")


def test_sampled_sessions_are_reproducible(pair):
    runs = [Session(pair, "sample", verify="sampled", temperature=1.0, seed=s).run(20, stop_on_eos=False)[0].tokens
            for s in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_run_stops_at_eos_and_max_tokens(pair):
    s = Session(pair, "stop", method="ddtree", budget=6)
    gen = s.run(7, stop_on_eos=False)[0]
    assert len(gen.tokens) == 7 and gen.stopped == "max_new_tokens"
    assert gen.text == pair.decode(gen.tokens)
    assert gen.stage_times["verify"] > 0 and gen.tokens_per_second > 0
    eos = next(iter(pair.eos_token_ids))
    forced = Session(pair, "stop", method="ar")
    forced.tokens[0][-1] = eos  # the first bonus happens to be EOS
    assert forced.run(5)[0].tokens == [eos] and forced.run(5)[0].stopped == "eos"


def test_trace_round_trip(pair, tmp_path):
    s = Session(pair, "trace", method="ddtree", budget=6, verify="sampled", seed=1)
    gen = s.run(12, stop_on_eos=False)[0]
    path = tmp_path / "t.json"
    save_trace(gen.records, path, meta={"prompt": "trace"})
    records, meta = load_trace(path)
    assert meta == {"prompt": "trace"}
    assert [r.to_dict() for r in records] == json.loads(json.dumps([r.to_dict() for r in gen.records]))


@pytest.mark.parametrize("corrupt, message", [
    (lambda doc: "not json at all {", "not a readable JSON"),
    (lambda doc: json.dumps({**doc, "format": "other"}), "not a ddtree trace"),
    (lambda doc: json.dumps({**doc, "version": 99}), "unsupported version"),
    (lambda doc: json.dumps({**doc, "records": {}}), "'records' a list"),
    (lambda doc: _edit(doc, lambda r: r.pop("method")), r"records\[0\].*missing \['method'\]"),
    (lambda doc: _edit(doc, lambda r: r.__setitem__("method", "magic")), "method must be one of"),
    (lambda doc: _edit(doc, lambda r: r["requests"][0].__setitem__("accepted", [0, 99])), "root-to-node path"),
    (lambda doc: _edit(doc, lambda r: r["requests"][0].__setitem__("bonus_token", "x")), "bonus_token must be an int"),
    (lambda doc: _edit(doc, lambda r: r["requests"][0]["tree"].__setitem__("parents", [5])), "tree dict"),
    (lambda doc: _edit(doc, lambda r: r["requests"][0].__setitem__("target_choice", [1])), "one entry per tree node"),
])
def test_malformed_traces_are_refused(pair, tmp_path, corrupt, message):
    s = Session(pair, "trace", method="ddtree", budget=4)
    s.step()
    path = tmp_path / "t.json"
    save_trace(s.records, path)
    doc = json.loads(path.read_text())
    path.write_text(corrupt(doc))
    with pytest.raises(ValueError, match=message):
        load_trace(path)


def _edit(doc, fn):
    fn(doc["records"][0])
    return json.dumps(doc)


def test_pickle_files_are_not_loaded(tmp_path):
    import pickle
    path = tmp_path / "t.pkl"
    path.write_bytes(pickle.dumps({"format": "ddtree-trace"}))
    with pytest.raises(ValueError, match="not a readable JSON"):
        load_trace(path)


def test_bad_session_input(pair):
    with pytest.raises(ValueError, match="is too long"):
        Session(pair, [1] * pair.max_context)
    with pytest.raises(ValueError, match="non-empty"):
        Session(pair, "")
    with pytest.raises(ValueError, match=r"token ids must be in \[0"):
        Session(pair, [pair.vocab_size + 3])
    with pytest.raises(ValueError, match="method"):
        Session(pair, "x", method="beam")
    with pytest.raises(ValueError, match="budget"):
        Session(pair, "x", budget=-1)
    with pytest.raises(ValueError, match="temperature"):
        Session(pair, "x", temperature=-1.0)
    for seed in (-1, 2**64):  # the generator takes [0, 2**64 - 1]
        with pytest.raises(ValueError, match=r"seed must be an int in \[0, 18446744073709551615\]"):
            Session(pair, "x", seed=seed)
    assert Session(pair, "x", seed=2**64 - 1).step().index == 0
    with pytest.raises(ValueError, match="needs a drafter"):
        Session(ddtree.models.ModelPair(pair.target, pair.tokenizer, None, pair.device, pair.dtype), "x")


def test_context_full_stops_the_run(pair):
    prompt = [1] * (pair.max_context - pair.block_size - 2)
    s = Session(pair, prompt, method="ddtree", budget=4)
    gen = s.run(1000, stop_on_eos=False)[0]
    assert gen.stopped == "context"
    assert s.context_lens[0] + pair.block_size > pair.max_context
