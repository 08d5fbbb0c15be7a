"""Issue 17, finding 3: load_trace checks values, not just types; reads only regular files under a size limit;
never recurses without bound; and random mutations of a valid trace load to valid records or raise ValueError."""
import copy
import errno
import json
import os
import re
import threading
from pathlib import Path

import pytest
import torch
from hostile_files import run_limited
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddtree
from ddtree import Session, load_trace, save_trace
from ddtree.models import tiny_random_pair

TRACE = Path(__file__).parent / "data" / "trace_small.json"
DOC = json.loads(TRACE.read_text())  # saved before vocab_size existed: it must keep loading
VOCAB = 320  # tests/data/make_trace.py's tiny pair


def load_doc(doc, tmp_path, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return load_trace(path)


def req(doc, k=0):
    return doc["records"][k]["requests"][0]


def test_the_committed_trace_still_loads():
    records, meta = load_trace(TRACE)
    assert len(records) == 6 and "vocab_size" not in meta


MUTATIONS = [
    ("context_len", lambda d: req(d).__setitem__("context_len", -5)),
    ("context_len", lambda d: req(d).__setitem__("context_len", 10**12)),
    ("budget", lambda d: d["records"][0].__setitem__("budget", -3)),
    ("num_draft_tokens", lambda d: d["records"][0].__setitem__("num_draft_tokens", 10**9)),
    ("input_ids and positions must have num_draft_tokens", lambda d: d["records"][0].__setitem__("num_draft_tokens", 14)),
    ("temperature", lambda d: d["records"][0].__setitem__("temperature", -5.0)),
    ("top_p", lambda d: d["records"][0].__setitem__("top_p", 7)),
    ("index", lambda d: d["records"][0].__setitem__("index", -1)),
    ("times.draft", lambda d: d["records"][0]["times"].__setitem__("draft", -1.0)),
    ("temperature must be finite", lambda d: d["records"][0].__setitem__("temperature", 10**400)),
    ("tree dict field 'tokens'", lambda d: req(d)["tree"]["tokens"].__setitem__(1, 10**30)),
    ("tree.tokens", lambda d: req(d)["tree"]["tokens"].__setitem__(0, -1)),
    ("input_ids must be the tree's tokens", lambda d: req(d)["input_ids"].__setitem__(1, 10**30)),
    ("input_ids must be the tree's tokens", lambda d: req(d, 3)["input_ids"].__setitem__(-1, 0)),  # a padding row
    ("positions", lambda d: req(d)["positions"].__setitem__(2, 0)),
    ("draft_top_tokens", lambda d: req(d)["draft_top_tokens"][0].__setitem__(0, 10**30)),
    ("target_top_tokens", lambda d: req(d)["target_top_tokens"][0].__setitem__(0, -3)),
    ("target_choice", lambda d: req(d)["target_choice"].__setitem__(0, 10**30)),
    ("bonus_token", lambda d: req(d).__setitem__("bonus_token", 10**30)),
    ("accepted_tokens", lambda d: req(d).__setitem__("accepted_tokens", [t + 1 for t in req(d)["accepted_tokens"]])),
    ("target_choice at the accepted nodes",
     lambda d: (req(d)["accepted"].pop(), req(d)["accepted_tokens"].pop())),  # stops before the child it chose
    ("target_choice at the accepted nodes", lambda d: req(d)["target_choice"].__setitem__(0, 1)),
    ("bonus_token is a child's token", lambda d: (req(d, 5).__setitem__("bonus_token", req(d, 5)["tree"]["tokens"][1]),
                                                  req(d, 5)["target_choice"].__setitem__(0, req(d, 5)["tree"]["tokens"][1]))),
    ("accepted must be a root-to-node path", lambda d: req(d)["accepted"].pop(1)),
    ("target_top_probs", lambda d: req(d)["target_top_probs"][0].__setitem__(0, 1.5)),
    ("target_top_probs", lambda d: req(d)["target_top_probs"][0].__setitem__(1, -0.5)),
    ("sums to more than 1", lambda d: req(d)["target_top_probs"][0].__setitem__(1, 0.999)),
    ("same number K", lambda d: req(d)["target_top_probs"][0].pop()),
    ("draft_top_logprobs", lambda d: req(d)["draft_top_logprobs"][0].__setitem__(0, 3.0)),
    ("a row per draft depth", lambda d: [req(d).__setitem__(k, req(d)[k][:3])
                                         for k in ("draft_top_tokens", "draft_top_logprobs")]),
    ("node_logws", lambda d: req(d)["tree"]["node_logws"].__setitem__(1, 5.0)),
    ("siblings must differ", lambda d: req(d)["tree"]["tokens"].__setitem__(8, req(d)["tree"]["tokens"][2])),
    ("parents", lambda d: req(d)["tree"]["parents"].__setitem__(1, 3)),
    ("token_texts", lambda d: req(d)["token_texts"].__setitem__(str(10**30), "x")),
    ("token_texts", lambda d: req(d)["token_texts"].__setitem__("+5", "x")),
    ("vocab_size = 100", lambda d: d["meta"].__setitem__("vocab_size", 100)),
    ("meta.vocab_size", lambda d: d["meta"].__setitem__("vocab_size", True)),
    ("does not fit method 'ar'", lambda d: d["records"][0].__setitem__("method", "ar")),
    ("does not fit method 'dflash'", lambda d: d["records"][0].__setitem__("method", "dflash")),
    ("at most its budget's nodes", lambda d: d["records"][3].__setitem__("budget", 20)),
    ("at most its budget's nodes", lambda d: req(d, 3).__setitem__("budget", 20)),
    ("at most the round's budget 40", lambda d: req(d, 3).__setitem__("budget", 41)),
    ("budget must be an int, got '40'", lambda d: req(d, 3).__setitem__("budget", "40")),
    ("budget must hold values in", lambda d: req(d, 3).__setitem__("budget", -1)),
    # issue 43: the budgets against the trees and the verify rows
    ("num_draft_tokens must be budget + 1 = 1025", lambda d: d["records"][0].__setitem__("budget", 1024)),
    ("num_draft_tokens must be budget + 1 = 13", lambda d: pad_rows(d, 0, 12, rows=20)),  # consistent padding
    ("budget must be the largest of its requests' budgets (30), got 40",
     lambda d: req(d, 3).__setitem__("budget", 30)),
    ("the budget contradicts the tree", lambda d: pad_rows(d, 0, 1024)),  # 13 nodes, budget 1024, 1025 rows
    ("depth 1's rank 1 (a child of node 0)", lambda d: pad_rows(d, 0, 12, drop_node=True)),
]


def pad_rows(doc, k: int, budget: int, *, rows: int | None = None, drop_node: bool = False) -> None:
    """Round k at `budget` with its input_ids and positions padded to `rows` (default budget + 1) as a verify batch
    pads them; `drop_node` also removes the round's last tree node (a leaf the heap popped last), so that the tree
    is smaller than its budget."""
    rec, r = doc["records"][k], req(doc, k)
    if drop_node:
        last = len(r["tree"]["parents"]) - 1
        assert last not in r["tree"]["parents"] and last not in r["accepted"]  # a leaf off the accepted path
        for key in r["tree"]:
            r["tree"][key].pop()
        for key in ("target_top_tokens", "target_top_probs", "target_choice"):
            r[key].pop()
    n, rows = len(r["tree"]["tokens"]), budget + 1 if rows is None else rows
    rec["budget"], rec["num_draft_tokens"] = budget, rows
    r["input_ids"] = r["input_ids"][:n] + [r["tree"]["tokens"][0]] * (rows - n)
    r["positions"] = r["positions"][:n] + [r["context_len"]] * (rows - n)


@pytest.mark.parametrize("match, mutate", MUTATIONS, ids=[f"{i}-{m}" for i, (m, _) in enumerate(MUTATIONS)])
def test_values_are_checked_not_just_types(tmp_path, match, mutate):
    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(ValueError, match=re.escape(match)):
        load_doc(doc, tmp_path)


def test_vocab_size_is_recorded_and_bounds_every_id(tmp_path):
    records, _ = load_trace(TRACE)
    save_trace(records, tmp_path / "v.json", meta={"prompt": "x"}, vocab_size=VOCAB)
    again, meta = load_trace(tmp_path / "v.json")
    assert meta == {"prompt": "x", "vocab_size": VOCAB} and len(again) == len(records)
    top = max(max(r.requests[0].tree.tokens.tolist()) for r in records)
    save_trace(records, tmp_path / "small.json", vocab_size=top)  # the largest id falls outside
    with pytest.raises(ValueError, match=f"vocab_size = {top}"):
        load_trace(tmp_path / "small.json")
    with pytest.raises(ValueError, match="vocab_size"):
        save_trace(records, tmp_path / "bad.json", vocab_size=0)


def test_non_regular_files_are_refused_before_reading(tmp_path):
    for path in ("/dev/zero", "/dev/null", tmp_path):
        with pytest.raises(ValueError, match="not a regular file"):
            load_trace(path)
    with pytest.raises(ValueError, match="trace path must be a str"):
        load_trace(5)


def test_a_named_pipe_cannot_block(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_raised(load_trace, fifo)), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # blocked in open(): release it with a writer, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
    assert outcome and "not a regular file" in outcome[0]


def _raised(fn, *args) -> str:
    try:
        fn(*args)
    except ValueError as e:
        return str(e)
    return "no error"


def test_files_over_the_size_limit_are_refused_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(ddtree.record.MAX_TRACE_BYTES + 1)  # sparse: nothing to read, only the size says no
    with pytest.raises(ValueError, match="64.0 MB limit"):
        load_trace(big)
    with pytest.raises(ValueError, match="limit"):
        load_trace(TRACE, max_bytes=TRACE.stat().st_size - 1)
    assert len(load_trace(TRACE, max_bytes=TRACE.stat().st_size)[0]) == 6


def test_deep_nesting_is_a_value_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"format": "ddtree-trace", "version": 1, "meta": ' + "[" * 100000 + "]" * 100000 +
                    ', "records": []}')
    with pytest.raises(ValueError, match="nested too deeply"):
        load_trace(path)


def test_explorer_says_an_empty_trace_has_nothing_to_show(tmp_path):
    from ddtree.widgets import Explorer
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({**DOC, "records": []}))
    assert load_trace(path) == ([], DOC["meta"])  # an empty record set is a valid trace
    with pytest.raises(ValueError, match="no recorded rounds"):
        Explorer(str(path))


@pytest.mark.parametrize("options", [dict(method="ddtree", budget=6), dict(method="dflash"), dict(method="ar"),
                                     dict(method="ddtree", budget=6, verify="sampled", temperature=0.9, top_p=0.8),
                                     dict(method="ddtree", budget=5, backend="native"),
                                     dict(method="ddtree", budget=5, backend="native", verify="sampled")])
def test_sessions_save_traces_that_load(tmp_path, options):
    pair = tiny_random_pair(0)
    s = Session(pair, "round trip", **options)
    for _ in range(3):
        s.step()
    save_trace(s.records, tmp_path / "t.json", vocab_size=pair.vocab_size)
    records, meta = load_trace(tmp_path / "t.json")
    assert meta["vocab_size"] == pair.vocab_size and len(records) == 3
    assert [r.to_dict() for r in records] == json.loads(json.dumps([r.to_dict() for r in s.records]))


def test_the_committed_trace_keeps_its_budgets_consistent():
    """Round 3 (budget 40, 27 nodes: its heap ran out of candidates of probability > 0) loads: the smaller tree
    is allowed where the recorded draft ranks show no candidate left."""
    records, _ = load_trace(TRACE)
    r = records[3].requests[0]
    assert records[3].budget == 40 and records[3].num_draft_tokens == 41 and r.n_nodes == 27


def test_a_budget_contradicting_the_trees_is_refused_before_the_analysis(tmp_path):
    """The hostile trace of issue 43: budget 1024 on 13-node trees was reported exact at every budget."""
    from ddtree.analysis import main
    doc = copy.deepcopy(DOC)
    for rec in doc["records"]:
        rec["budget"] = 1024
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    assert main([str(path)]) == 2
    pad_rows(doc, 0, 1024)
    with pytest.raises(ValueError, match=r"records\[0\]: requests\[0\]: its tree has 13 nodes, fewer than its budget"):
        load_doc(doc, tmp_path)


COSTS = ddtree.BudgetCosts((8, 16, 32, 64, 128, 256), (1.0, 1.1, 1.2, 1.3, 1.4, 1.5))


@pytest.mark.parametrize("options", [dict(budget="auto", budget_costs=COSTS),
                                     dict(budget="auto", budget_costs=COSTS, backend="native"),
                                     dict(budget=[2, 5], prompts=["a", "bb"]),
                                     dict(budget=[2, 5], prompts=["a", "bb"], backend="native")])
def test_sessions_with_auto_and_per_request_budgets_save_traces_that_load(tmp_path, options):
    options = dict(options)
    s = Session(tiny_random_pair(0), options.pop("prompts", "round trip"), **options)
    for _ in range(2):
        s.step()
    save_trace(s.records, tmp_path / "t.json")
    assert len(load_trace(tmp_path / "t.json")[0]) == 2


def test_each_request_keeps_its_own_budget_and_older_traces_take_the_rounds(tmp_path):
    pair = tiny_random_pair(0)
    s = Session(pair, ["round trip", "another"], budget=[3, 7])
    s.step()
    save_trace(s.records, tmp_path / "t.json")
    records, _ = load_trace(tmp_path / "t.json")
    assert [r.budget for r in records[0].requests] == [3, 7] and records[0].budget == 7
    assert all("budget" not in r for rec in DOC["records"] for r in rec["requests"])  # saved before they existed
    assert [rec.requests[0].budget for rec in load_trace(TRACE)[0]] == [rec["budget"] for rec in DOC["records"]]


# ------------------------------------------------------------------------------------------------ property
def valid(records, vocab: int) -> None:
    """What a caller of load_trace may rely on, checked independently of the loader's code."""
    for rec in records:
        assert rec.method in ("ddtree", "dflash", "ar") and rec.verify in ("greedy", "sampled")
        assert rec.temperature >= 0 and 0 < rec.top_p <= 1 and 0 <= rec.budget <= 4096 and rec.index >= 0
        assert all(t >= 0 for t in rec.times.values())
        for r in rec.requests:
            n, tokens, parents = r.n_nodes, r.tree.tokens.tolist(), r.tree.parents.tolist()
            assert all(0 <= parents[i] < i for i in range(1, n)) and parents[0] == -1
            assert all(0 <= t < vocab for t in tokens + r.accepted_tokens + [r.bonus_token])
            assert len(r.input_ids) == rec.num_draft_tokens >= n and r.context_len >= 0
            assert 0 <= r.budget <= rec.budget and (rec.method != "ddtree" or n - 1 <= r.budget)
            assert rec.method != "ddtree" or rec.num_draft_tokens == rec.budget + 1
            assert r.accepted[0] == 0 and all(parents[b] == a for a, b in zip(r.accepted, r.accepted[1:]))
            assert r.accepted_tokens == [tokens[a] for a in r.accepted[1:]]
            assert all(0 <= p <= 1 + 1e-6 for row in r.target_top_probs for p in row)
            assert all(0 <= t < vocab for row in r.target_top_tokens + r.draft_top_tokens for t in row)
            assert all(lp <= 1e-6 for row in r.draft_top_logprobs for lp in row)
            assert all(-1 <= c < vocab for c in r.target_choice) and len(r.target_choice) == n
            assert all(0 <= k < vocab for k in r.token_texts)
            assert tuple(r.attention_mask().shape) == (len(r.input_ids), r.context_len + len(r.input_ids))


SMALL = {**DOC, "records": [DOC["records"][k] for k in (0, 3, 4, 5)]}  # greedy, padded, dflash, sampled
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**66, 2**66), st.integers(-3, 400),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                           max_size=3), max_leaves=5)


def paths(node, prefix=()):
    """Every (path, value) in a JSON document, containers included."""
    yield prefix, node
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from paths(child, prefix + (key,))


@st.composite
def mutated(draw):
    doc = copy.deepcopy(SMALL)
    for _ in range(draw(st.integers(1, 3))):
        where, value = draw(st.sampled_from(list(paths(doc))[1:]))
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        key = where[-1]
        op = draw(st.sampled_from(["replace", "nudge", "delete", "insert", "swap"]))
        if op == "nudge" and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = value + draw(st.sampled_from([-1, 1, -2, 7, 0.5, -10**9, 10**9]))
        elif op == "delete":
            del parent[key]
        elif op == "insert" and isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(values)
        elif op == "insert":
            parent.insert(key, draw(values))
        elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
            other = draw(st.integers(0, len(parent) - 1))
            parent[key], parent[other] = parent[other], parent[key]
        else:
            parent[key] = draw(values)
    text = json.dumps(doc)
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:  # sometimes damage the bytes instead
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(max_size=3)) + text[cut + draw(st.integers(0, 3)):]
    return text


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mutated())
def test_mutated_traces_load_valid_records_or_raise_value_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("mut") / "t.json"
    path.write_text(text)
    try:
        records, meta = load_trace(path)
    except ValueError:
        return
    valid(records, meta.get("vocab_size", 2**31 - 1))


def test_a_failed_save_keeps_the_old_trace(tmp_path):
    """Issue 43: save_trace wrote in place, so a write stopped part-way (file-size limit, full disk) left a truncated
    trace. Now the old trace stays whole and no temp file is left."""
    path = tmp_path / "t.json"
    path.write_bytes(TRACE.read_bytes())
    out = run_limited(f"""
        import ddtree
        records, meta = ddtree.load_trace({str(TRACE)!r})
        limit(fsize=4096)
        try:
            ddtree.save_trace(records, {str(path)!r}, meta={{"note": "new"}})
        except OSError as e:
            print(e)
        """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith(f"[Errno {errno.EFBIG}] trace {path}: not written (File too large)")
    assert path.read_bytes() == TRACE.read_bytes() and os.listdir(tmp_path) == ["t.json"]


def test_an_auto_rounds_choice_is_saved_checked_and_absent_from_version_1(tmp_path):
    """Version 2 saves each budget="auto" round's choice (an AR round's too: method "ar", budget 0); a malformed one
    is a ValueError naming the field; a version-1 trace (the committed one) loads, and has no choice to carry."""
    costs = ddtree.BudgetCosts((0, 2, 4), (1e-4, 1.0, 1.0), overhead=0.0)  # AR from round 3 on
    s = Session(tiny_random_pair(0), "round trip", budget="auto", budget_costs=costs)
    for _ in range(3):
        s.step()
    save_trace(s.records, tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["version"] == 2 and doc["records"][2]["method"] == "ar" and doc["records"][2]["choice"]["budget"] == 0
    assert repr(load_trace(tmp_path / "t.json")[0][2].choice) == repr(s.records[2].choice)
    bad = [("choice.reason", lambda c: c.__setitem__("reason", "guess")),
           ("choice.rates", lambda c: c.__setitem__("rates", [1.0])),
           ("choice.candidates", lambda c: c.__setitem__("candidates", [4, 2, 0])),
           ("choice.budget 2 must be the round's budget", lambda c: c.__setitem__("budget", 2))]
    for match, mutate in bad:
        d = copy.deepcopy(doc)
        mutate(d["records"][2]["choice"])
        with pytest.raises(ValueError, match=re.escape(match)):
            load_doc(d, tmp_path)
    old = copy.deepcopy(doc)
    old["version"] = 1
    with pytest.raises(ValueError, match="unexpected \\['choice'\\]"):
        load_doc(old, tmp_path)
    assert all(r.choice is None for r in load_trace(TRACE)[0])
