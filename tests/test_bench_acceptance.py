"""bench/bench_acceptance.py: per-group, per-drafter rows and their report, on a tiny random pair."""
import json
import sys

import pytest
from bench_scripts import load_bench

from ddtree.models import tiny_random_pair

bench = load_bench("bench_acceptance")


def test_rows_are_reported_per_drafter_and_group():
    pair = tiny_random_pair(seed=0)
    rows = []
    for drafter in ("a", "b"):
        for group, prompts in (("code", ["def f(x):", "import os"]), ("chat", ["Tell me a story."])):
            for config in bench.configs([4, 16], [0.0, 1.0]):
                row = bench.measure(pair, prompts, *config, max_new_tokens=6, seed=0)
                assert row["tokens"] > 0 and 1 <= row["acceptance"] <= pair.drafter.config.block_size
                rows.append({"drafter": drafter, "group": group, **row})
    lines = bench.table(rows)
    assert lines[0].count("acceptance (rounds)") == 2  # a column per temperature
    body = [line.split(" | ") for line in lines[2:]]
    assert len(body) == 2 * 2 * 3  # drafters x groups x (chain + 2 budgets)
    assert [cells[:2] for cells in body[:3]] == [["| a", "code"]] * 3
    assert {cells[1] for cells in body} == {"code", "chat"}
    meta = {"date": "d", "device": "cpu", "torch": "t", "prompts": 2, "max_new_tokens": 6,
            "drafters": {"a": "A", "b": "B"}, "lossless_prompts": 2, "lossless_tokens": 6}
    text = bench.markdown(rows, meta, {"code": "lossless", "chat": "lossless"})
    assert "`a` = A, `b` = B" in text and "- chat: `check_lossless(pair, heldout_chat[:2], 6)` with `a`" in text


def test_drafters_with_the_same_folder_name_are_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_acceptance.py", "--drafters", "x/d", "y/d"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--drafters: folder names must differ" in capsys.readouterr().err


def test_the_split_picks_a_side_of_the_committed_prompts_and_the_report_names_it():
    train, heldout = (bench.prompts_by_group(["chat", "code"], split, 5) for split in ("train", "heldout"))
    for group in ("chat", "code"):
        assert len(train[group]) == len(heldout[group]) == 5 and not set(train[group]) & set(heldout[group])
    assert train["chat"] != train["code"]
    # --lossless-prompts 0 (skip check_lossless) asks for none of groups that have some: not an empty group
    assert bench.prompts_by_group(["chat", "code"], "heldout", 0) == {"chat": [], "code": []}
    meta = {"date": "d", "device": "cpu", "torch": "t", "prompts": 5, "max_new_tokens": 6, "drafters": {"a": "A"},
            "split": "train"}
    assert "the first 5 training prompts" in bench.markdown([], meta, {})
    assert "the first 5 held-out prompts" in bench.markdown([], meta | {"split": "heldout"}, {})
    styled = meta | {"split": "heldout", "prompts_file": "bench/data/styled_prompts.json"}  # --prompts-file
    assert "the first 5 held-out prompts of `bench/data/styled_prompts.json`" in bench.markdown([], styled, {})


def test_the_unseen_side_holds_held_out_prompts_of_subjects_never_trained_on(monkeypatch, capsys):
    """--split unseen: held-out chat prompts whose subject no training prompt shares (the new material's held-out
    subjects, all their phrasings); the report says so and names a group with fewer prompts than asked; a group with
    none is refused with a message naming it."""
    from ddtree.training.prompts import PROMPTS_FILE, subject_of
    data = json.loads(PROMPTS_FILE.read_text())
    trained = {subject_of(p) for p in data["train"]}
    unseen = bench.prompts_by_group(["chat", "code"], "unseen", 40)
    assert len(unseen["chat"]) == 40 and len(unseen["code"]) < 5
    held = {p["prompt"]: p for p in data["heldout"]}
    assert all(p in held and subject_of(held[p]) not in trained for p in unseen["chat"] + unseen["code"])
    assert len({held[p]["kind"] for p in unseen["chat"][:9]}) == 9  # kinds interleaved
    meta = {"date": "d", "device": "cpu", "torch": "t", "prompts": 8, "max_new_tokens": 6, "drafters": {"a": "A"},
            "split": "unseen", "available": {"chat": 8, "code": 1}}
    text = bench.markdown([], meta, {})
    assert "the first 8 held-out prompts whose subject no training prompt shares (code: only 1 exist)" in text
    monkeypatch.setattr("ddtree.training.prompts.unseen_heldout", lambda path, group: [])
    monkeypatch.setattr(sys, "argv", ["bench_acceptance.py", "--split", "unseen", "--groups", "code"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--split unseen: the prompts file has no such code prompts" in capsys.readouterr().err
