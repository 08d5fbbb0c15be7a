"""Issue 17, finding 5: token text is data, never markup, wherever it reaches HTML, SVG or plotly text."""
import re
from dataclasses import replace
from pathlib import Path

import pytest

import ddtree
from ddtree.report import render_html
from ddtree.widgets import Explorer, LogWeightView
from ddtree.widgets import treegraph
from ddtree.widgets.figures import logweight_figure
from ddtree.widgets.masks import mask_figure, mask_grid, batch_of, row_labels
from ddtree.widgets.nodes import escape

TRACE = Path(__file__).parent / "data" / "trace_small.json"
MARKUP = "<b>bold</b><a href='javascript:alert(1)'>x</a><img src=x onerror=alert(1)>&lt;i&gt;"
RAW = re.compile(r"<b>bold|<a href|<img|<i>")  # what the markup would become if it were interpreted


@pytest.fixture(scope="module")
def record():
    rec = ddtree.load_trace(TRACE)[0][0]
    req = rec.requests[0]
    return replace(rec, requests=[replace(req, token_texts={t: MARKUP for t in req.token_texts},
                                          committed_text=MARKUP)])


def plotly_strings(fig):
    """Every hover, label and tick string of a figure (cell texts of a heatmap included)."""
    def flat(value):
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        return [s for item in value for s in flat(item)] if hasattr(value, "__iter__") else []
    out = [s for trace in fig.data for name in ("hovertext", "text") for s in flat(getattr(trace, name, None))]
    return [s for s in out + flat(fig.layout.yaxis.ticktext) if s]


def test_escape_keeps_text_literal():
    assert escape("a<b>&c\nd") == "a&lt;b&gt;&amp;c<br>d"


def test_log_weight_view_hover_text_is_escaped(record):
    for fig in (logweight_figure(record.requests[0]), LogWeightView(record).figure):
        strings = plotly_strings(fig)
        assert strings and not any(RAW.search(s) for s in strings)
        assert any("&lt;b&gt;bold&lt;/b&gt;" in s for s in strings)  # shown literally, not dropped


def test_tree_figure_and_mask_labels_are_escaped(record):
    req = record.requests[0]
    strings = plotly_strings(treegraph.tree_figure(req))
    labels = row_labels(record, 0)
    strings += plotly_strings(mask_figure(mask_grid(batch_of(record), 0), row_labels=labels))
    assert any("&lt;" in s for s in strings) and not any(RAW.search(s) for s in strings)


@pytest.mark.skipif(not treegraph.has_dot(), reason="graphviz `dot` not installed")
def test_tree_svg_shows_token_text_literally(record):
    svg = treegraph.tree_svg(record.requests[0])
    assert not RAW.search(svg)
    assert "&amp;lt;i&amp;gt;" in svg  # the text's own "&lt;" survives as text, not as an entity graphviz decodes


def test_report_and_explorer_escape_token_text(record):
    page = re.sub(r"<script.*?</script>", "", render_html([record], title=MARKUP, prompt_text=MARKUP), flags=re.S)
    assert not RAW.search(page)
    ex = Explorer([record])
    assert not RAW.search(ex.path.pane.html + ex.stats.value + ex.tree.details.value)
    assert not any(RAW.search(s) for s in plotly_strings(ex.logw.figure))
