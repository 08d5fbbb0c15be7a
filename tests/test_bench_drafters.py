"""bench/bench_drafters.py: a configuration measured on the native engine, on a tiny random pair (CPU, Triton's
interpreter). It once called bench_e2e.timed_run with a stale variant tuple and failed on the GPU."""
from bench_scripts import load_bench

from ddtree.models import tiny_random_pair

bench = load_bench("bench_drafters")


def test_a_configuration_is_measured_on_the_native_engine():
    pair = tiny_random_pair(seed=0)
    row = bench.measure(bench.load_bench_e2e(), pair, ["def f(x):"], "ddtree", 4, 1.0, 3, False)
    assert 1 <= row["acceptance"] <= pair.drafter.config.block_size
    assert row["draft_ms"] > 0 and row["round_ms"] > row["draft_ms"] and row["tokens_per_s"] > 0


def fake_measurements(monkeypatch) -> list:
    """bench_drafters on the tiny random pair with a fixed measurement; returns the list each measured prompt list
    is appended to."""
    pair = tiny_random_pair(seed=0)
    seen = []
    monkeypatch.setattr(bench, "load_pair", lambda *args, **kwargs: pair)
    monkeypatch.setattr(bench, "measure", lambda e2e, pair, prompts, method, *rest: seen.append(prompts) or
                        {"acceptance": 2.0, "draft_ms": 0.5, "acceptance_per_draft_ms": 4.0, "round_ms": 1.0})
    return seen


def test_the_report_names_the_split_and_its_prompts_and_an_empty_group_is_refused(monkeypatch, tmp_path, capsys):
    """--split unseen --groups chat: only chat is measured, on the held-out prompts of subjects never trained on, and
    the report says so with the count; a group the split has no prompts for is refused before any model loads."""
    import sys

    import pytest
    seen = fake_measurements(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_drafters.py", "a", "--device", "cpu", "--groups", "chat", "--split",
                                      "unseen", "--prompts", "3", "--budgets", "4", "--out", str(tmp_path)])
    bench.main()
    assert seen and all(prompts == bench.prompts_by_group(["chat"], "unseen", 3)["chat"] for prompts in seen)
    text = (tmp_path / "drafters_cpu.md").read_text()
    assert "held-out prompts of subjects never trained on, 3 chat x 128 new tokens" in text and "| code |" not in text
    monkeypatch.setattr(bench, "load_pair", lambda *args, **kwargs: pytest.fail("a model was loaded"))
    monkeypatch.setattr("ddtree.training.prompts.unseen_heldout", lambda path, group: [])
    monkeypatch.setattr(sys, "argv", ["bench_drafters.py", "a", "--device", "cpu", "--split", "unseen"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "--split unseen: the prompts file has no such code or chat prompts" in capsys.readouterr().err


def test_a_prompts_file_is_measured_and_named_in_the_report(monkeypatch, tmp_path):
    """--prompts-file: the held-out prompts of that file are measured (the benchmark-style set here), and the
    report, written under the --name suffix, names the file."""
    import sys
    styled = bench.HERE / "data" / "styled_prompts.json"
    seen = fake_measurements(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_drafters.py", "a", "--device", "cpu", "--prompts", "2", "--budgets",
                                      "4", "--prompts-file", str(styled), "--name", "styled", "--out", str(tmp_path)])
    bench.main()
    expected = bench.prompts_by_group(["code", "chat"], "heldout", 2, styled)
    assert expected["code"] != bench.prompts_by_group(["code"], "heldout", 2)["code"]
    assert seen and all(prompts in (expected["code"], expected["chat"]) for prompts in seen)
    assert "held-out prompts of styled_prompts.json, 2 code, 2 chat" in (tmp_path / "drafters_cpu_styled.md").read_text()
