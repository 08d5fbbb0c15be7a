"""bench/bench_acceptance.py: per-group, per-drafter rows and their report, on a tiny random pair."""
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
    train, heldout = (bench.group_prompts(["chat", "code"], split, 5) for split in ("train", "heldout"))
    for group in ("chat", "code"):
        assert len(train[group]) == len(heldout[group]) == 5 and not set(train[group]) & set(heldout[group])
    assert train["chat"] != train["code"]
    meta = {"date": "d", "device": "cpu", "torch": "t", "prompts": 5, "max_new_tokens": 6, "drafters": {"a": "A"},
            "split": "train"}
    assert "the first 5 training prompts" in bench.markdown([], meta, {})
    assert "the first 5 held-out prompts" in bench.markdown([], meta | {"split": "heldout"}, {})
