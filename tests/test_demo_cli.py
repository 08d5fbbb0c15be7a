"""Issue 17, finding 6: the demo checks every option before loading anything and answers a bad value with one
line on stderr (no traceback, no usage block); an unwritable report path is caught up front."""
import subprocess
import sys

import pytest

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
