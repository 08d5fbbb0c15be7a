"""The HTML report, the text helpers and the demo."""
import base64
import errno
import gzip
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_files import run_limited
from plotly.offline import get_plotlyjs

import ddtree
import ddtree.report
from ddtree.demo import main as demo_main
from ddtree.demo import run_demo
from ddtree.text import format_rounds, shorten, visible_whitespace
from ddtree.widgets import treegraph

TRACE = Path(__file__).parent / "data" / "trace_small.json"


@pytest.fixture(scope="module")
def trace():
    return ddtree.load_trace(TRACE)


def unpack(text: str, name: str) -> str:
    """The gzip + base64 payload the report embeds under id `name`."""
    packed = re.search(rf"id='{name}'>([^<]+)</script>", text).group(1)
    return gzip.decompress(base64.b64decode(packed)).decode()


def test_report_is_self_contained_small_and_shows_every_round(trace, tmp_path):
    records, meta = trace
    path = ddtree.report.write_html(records, tmp_path / "r.html", prompt_text=meta["prompt_text"])
    text = path.read_text()
    assert text.count("* plotly.js v") == 1  # the library is embedded exactly once
    assert unpack(text, "ddtree-plotly") == get_plotlyjs()
    assert len(text) < 0.5 * len(get_plotlyjs())  # compressed: the whole report is under half of plotly.js alone
    assert not re.search(r"<script[^>]* src=", text)  # no script fetched from elsewhere
    assert text.count("<details data-round=") == len(records)
    for rec in records:
        req = rec.requests[0]
        assert f"acceptance length {req.acceptance_length}, committed {html.escape(repr(req.committed_text))}" in text
    assert text.count("class='ddtree-span") == len(records)
    rounds = json.loads(unpack(text, "ddtree-rounds"))  # one section per round, drawn when opened
    assert len(rounds) == len(records)
    if treegraph.has_dot():
        assert all(r.count("<svg width=") == 1 for r in rounds)  # one graphviz tree per round
        assert f"<title>n{records[3].requests[0].n_nodes - 1}</title>" in rounds[3]
    assert "verify mask, round 5" in rounds[5] and "node log-weights, round 5" in rounds[5]
    assert all("5 · commit" in r for r in rounds)  # the round's story


def test_a_failed_report_write_keeps_the_old_report(tmp_path):
    """Issue 43: a write stopped by the file-size limit (as by a full disk) replaced a 2.1 MB report by its first
    4 KB. Now the old report stays whole, no temp file is left, and the error names the report."""
    path = tmp_path / "r.html"
    old = b"<p>the old report</p>" * 100_000
    path.write_bytes(old)
    out = run_limited(f"""
        import ddtree, ddtree.report
        records, _ = ddtree.load_trace({str(TRACE)!r})
        limit(fsize=4096)
        try:
            ddtree.report.write_html(records[:2], {str(path)!r})
        except OSError as e:
            print(e)
        """)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith(f"[Errno {errno.EFBIG}] report {path}: not written (File too large)")
    assert path.read_bytes() == old and os.listdir(tmp_path) == ["r.html"]


def test_report_without_dot_uses_the_plotly_tree(trace, monkeypatch):
    monkeypatch.setattr(ddtree.report, "has_dot", lambda: False)
    text = ddtree.report.render_html(trace[0][:2])
    rounds = json.loads(unpack(text, "ddtree-rounds"))
    assert not any("<svg width=" in r for r in rounds) and "graphviz `dot` not found" in text
    assert sum(r.count('"name":"accepted path"') for r in rounds) == 4  # tree + log-weight figure per round


def test_report_with_a_sweep_and_bad_input(trace):
    rows = [{"method": "ddtree", "budget": b, "temperature": 0.0, "acceptance_length": 1.0 + b / 8,
             "tokens_per_second": 10.0 + b} for b in (4, 8)]
    assert "Budget sweep" in ddtree.report.render_html(trace[0][:1], sweep_rows=rows)
    with pytest.raises(ValueError, match="records"):
        ddtree.report.render_html([])
    with pytest.raises(ValueError, match="request"):
        ddtree.report.render_html(trace[0], request=1)


def test_report_module_imports_no_widget_library():
    code = ("import sys, ddtree.report; bad = [m for m in ('ipywidgets', 'anywidget') if m in sys.modules]; "
            "sys.exit(str(bad) if bad else 0)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_visible_whitespace():
    assert visible_whitespace(" a\n\tb\\\x01") == "␣a\\n\\tb\\\\\\x01"
    assert visible_whitespace("plain") == "plain"
    with pytest.raises(ValueError, match="text"):
        visible_whitespace(3)
    assert shorten("abcdef", 4) == "abc…" and shorten("abc", 4) == "abc"


def test_format_rounds(trace):
    records = trace[0]
    lines = format_rounds(records).splitlines()
    assert len(lines) == 2 + len(records)
    assert lines[0].split()[:6] == ["round", "ctx", "nodes", "acc", "len", "committed"]
    for line, rec in zip(lines[2:], records):
        req = rec.requests[0]
        fields = line.split()
        assert [int(f) for f in fields[:5]] == [rec.index, req.context_len, req.n_nodes, len(req.accepted_tokens),
                                                req.acceptance_length]
        assert float(fields[-3]) == pytest.approx(1e3 * rec.times["verify"], abs=0.06)


def test_demo_prints_the_table_and_writes_the_report(tmp_path, capsys):
    from ddtree.models import tiny_random_pair
    path = run_demo(tiny_random_pair(0), "demo prompt", budget=6, max_new_tokens=10, report=tmp_path / "d.html")
    out = capsys.readouterr().out
    assert path.is_file() and f"report: {path.resolve()}" in out
    assert out.startswith("ddtree (greedy walk, budget 6) on: 'demo prompt'")
    assert "round   ctx nodes" in out and "mean acceptance length" in out
    text = path.read_text()
    assert text.count("<details data-round=") == out.count("\n    ")  # one section per table row
    # the committed text reads as the generation: the prefill's first token, then every round's span
    shown = re.search(r"</details><div class='ddtree-text'>(.*?)</div></div>", text, re.S).group(1)
    session_text = ddtree.Session(tiny_random_pair(0), "demo prompt", budget=6).run(10, stop_on_eos=False)[0].text
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)).startswith(session_text)
    pair = tiny_random_pair(0)
    for method, setting in [("dflash", f"a chain of {pair.block_size - 1} draft tokens"),
                            ("ar", "one token a forward")]:  # the budget applies to DDTree only
        run_demo(pair, "demo prompt", method=method, max_new_tokens=2, report=tmp_path / "m.html")
        assert capsys.readouterr().out.startswith(f"{method} (greedy walk, {setting}) on:")
        assert f"<title>DDTree demo: {method}, greedy walk, {setting}</title>" in (tmp_path / "m.html").read_text()
    run_demo(pair, "demo prompt", budget="auto", temperature=0.8, seed=3, max_new_tokens=12, report=tmp_path / "a.html")
    out = capsys.readouterr().out
    assert out.startswith("verify ms per candidate budget: AR: ") and "budgets chosen: mean" in out
    assert "\nddtree (sampled walk, T=0.8, seed 3, budget auto) on:" in out


def test_demo_synthetic_shows_the_padding_bug(capsys):
    demo_main(["--synthetic"])
    out = capsys.readouterr().out
    padded = next(line for line in out.splitlines() if line.strip().startswith("padded"))
    unpadded = next(line for line in out.splitlines() if line.strip().startswith("unpadded"))
    assert padded.endswith("[0, 0, 0]") and not unpadded.endswith("[0, 0, 0]")
