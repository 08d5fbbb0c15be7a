"""Issue 17, finding 6: the demo checks every option before loading anything and answers a bad value with one
line on stderr (no traceback, no usage block); an unwritable report path is caught up front."""
import os
import subprocess
import sys

import pytest
from hostile_files import unblocked

import ddtree.demo
import ddtree.models


@pytest.fixture
def no_model(monkeypatch):
    """The model loader fails the test if the CLI reaches it."""
    def loader(**_):
        raise AssertionError("the model was loaded before the options were checked")

    monkeypatch.setattr(ddtree.models, "load_default_pair", loader)


BAD = [
    (["--budget", "-3"], "--budget must be in"),
    (["--budget", str(10**9)], "--budget must be in"),
    (["--budget", "abc"], "argument --budget: an int in [1, 4096] or auto, got 'abc'"),
    (["--budget", "auto", "--method", "dflash"], "--budget auto chooses DDTree tree sizes"),
    (["--temperature", "-1"], "--temperature must be a finite number >= 0"),
    (["--temperature", "nan"], "--temperature must be a finite number >= 0"),
    (["--temperature", "hot"], "argument --temperature: invalid float value"),
    (["--seed", "-2"], "--seed must be >= 0"),
    (["--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
    (["--prompt", "  "], "--prompt must be a non-empty"),
    (["--method", "beam"], "argument --method: invalid choice"),
    (["--report", "/nonexistent/dir/r.html"], "folder /nonexistent/dir does not exist"),
    (["--report", "/proc/1/r.html"], "cannot be written"),
    (["--report", "."], "is a directory"),
]


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_options_are_one_line_before_loading(no_model, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        ddtree.demo.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.count("\n") == 1 and message in err and err.startswith("python -m ddtree.demo: error:")


def test_a_writable_report_path_is_checked_without_leaving_a_file(tmp_path):
    report = tmp_path / "r.html"
    ddtree.demo.check_writable(report)
    assert not report.exists()
    report.write_text("old")
    ddtree.demo.check_writable(report)
    assert report.read_text() == "old"
    assert os.listdir(tmp_path) == ["r.html"]


def test_a_report_path_that_is_a_named_pipe_is_one_line_not_a_hang(no_model, capsys, tmp_path):
    """Issue 43: opening a named pipe given as --report, to check that it could be written, hung the demo."""
    fifo = tmp_path / "r.html"
    os.mkfifo(fifo)
    exit_ = unblocked(lambda: ddtree.demo.main(["--report", str(fifo)]), fifo)
    err = capsys.readouterr().err
    assert isinstance(exit_, SystemExit) and exit_.code == 2 and err.count("\n") == 1
    assert f"error: --report {fifo}: not a regular file (a directory, pipe or device); give a file path" in err


def test_runtime_failures_are_one_line_too(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(ddtree.models, "load_default_pair", lambda **_: object())

    def run_demo(*args, **kwargs):
        raise ValueError("prompt is too long: 9000 tokens + 33 draft rows exceed the context of 8192 tokens")

    monkeypatch.setattr(ddtree.demo, "run_demo", run_demo)
    with pytest.raises(SystemExit) as exit_:
        ddtree.demo.main(["--report", str(tmp_path / "r.html")])
    assert str(exit_.value.code) == ("python -m ddtree.demo: error: prompt is too long: 9000 tokens + 33 draft rows "
                                     "exceed the context of 8192 tokens")


def test_the_command_line_prints_no_traceback():
    out = subprocess.run([sys.executable, "-m", "ddtree.demo", "--budget", "-3"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.parametrize("budget", ["5", "1"])
def test_synthetic_uses_the_budget_it_prints(capsys, budget):
    """Issue 43: `--synthetic --budget 5` printed (and used) budget 12."""
    ddtree.demo.main(["--synthetic", "--budget", budget])
    out = capsys.readouterr().out
    n = int(budget) + 1
    assert f"budget {budget} (tree: {n} nodes, root included)" in out and f"num_draft_tokens {n})" in out


@pytest.mark.parametrize("argv, message", [
    (["--synthetic", "--budget", "auto"], "--budget auto needs a model"),
    (["--synthetic", "--budget", "0"], "--budget must be in [1, 4096], got 0"),
    (["--synthetic", "--method", "ar"], "--synthetic runs one round with no model: --method would be ignored"),
    (["--synthetic", "--temperature", "0.5", "--seed", "3"], "--temperature, --seed would be ignored"),
])
def test_synthetic_refuses_what_it_would_not_use(no_model, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        ddtree.demo.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and message in err
