"""A self-contained HTML report of recorded rounds (no ipywidgets): summary table, committed text, and per round
the tree (graphviz SVG, or a plotly layout without `dot`), node log-weights and the verify mask. plotly.js is
embedded once, so the file opens offline."""
from __future__ import annotations

import html
from dataclasses import replace
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from ddtree.record import RoundRecord
from ddtree.text import format_rounds
from ddtree.widgets.analysis_figures import acceptance_section, calibration_section, rank_depth_section
from ddtree.widgets.figures import logweight_figure, path_html, stats_html, sweep_figure
from ddtree.widgets.masks import batch_of, mask_figure, mask_grid, row_labels
from ddtree.widgets.treegraph import has_dot, tree_figure, tree_svg

STYLE = """body{font-family:Helvetica,Arial,sans-serif;margin:20px;max-width:1400px}
h1{font-size:20px} h2{font-size:16px;margin-top:24px} details{margin:8px 0;border-top:1px solid #ddd;padding-top:6px}
summary{cursor:pointer;font-weight:bold} .row{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.tree{overflow:auto;max-width:100%;border:1px solid #eee}
pre{font-size:11px;background:#f7f7f7;padding:8px;overflow:auto}
.note{color:#636363;font-size:12px}"""


def render_html(records: list[RoundRecord], *, title: str = "DDTree report", prompt_text: str = "",
                sweep_rows: list[dict] | None = None, request: int = 0, open_rounds: int = 1) -> str:
    """The report as one HTML string; `sweep_rows` (ddtree.sweep.summarize rows) adds a budget sweep figure."""
    records = list(records)
    if not records or not all(isinstance(r, RoundRecord) for r in records):
        raise ValueError("records must be a non-empty list of RoundRecord")
    if isinstance(request, bool) or not isinstance(request, int) or \
            not all(0 <= request < len(r.requests) for r in records):
        raise ValueError(f"request must be a request index present in every record, got {request!r}")
    lengths = [r.requests[request].acceptance_length for r in records]
    tokens = sum(lengths)
    renderer = "graphviz SVG" if has_dot() else "plotly layout (graphviz `dot` not found)"
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>{len(records)} rounds, {tokens} tokens committed, mean acceptance length "
            f"{tokens / len(records):.2f} tokens per target forward. Trees drawn as {renderer}: colour = node "
            "log-weight (yellow high), orange outline = accepted path, dashed green = bonus token, grey = padding "
            "rows. Hover a node for its path, draft probability per depth and target probability.</p>",
            "<h2>Committed text</h2>", path_html(records, prompt_text=prompt_text, request=request),
            "<h2>Rounds</h2>", f"<pre>{html.escape(format_rounds([_only(r, request) for r in records]))}</pre>"]
    if sweep_rows:
        body += ["<h2>Budget sweep</h2>", _plot(sweep_figure(sweep_rows))]
    body += acceptance_section(records, request=request)
    body += rank_depth_section(records, request=request)
    body += calibration_section(records, request=request)
    for k, rec in enumerate(records):
        req = rec.requests[request]
        tree = f"<div class='tree'>{tree_svg(req)}</div>" if has_dot() else _plot(tree_figure(req))
        grid = mask_grid(batch_of(rec), request)
        mask = mask_figure(grid, title=f"verify mask, round {rec.index}", accepted=req.accepted,
                           row_labels=row_labels(rec, request), width=520, height=520)
        body += [f"<details{' open' if k < open_rounds else ''}><summary>round {rec.index}: {rec.method}, "
                 f"{req.n_nodes} nodes, acceptance length {req.acceptance_length}, committed "
                 f"{html.escape(repr(req.committed_text))}</summary>",
                 stats_html(rec, request=request), tree,
                 f"<div class='row'>{_plot(logweight_figure(req, title=f'node log-weights, round {rec.index}'))}"
                 f"{_plot(mask)}</div></details>"]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style><script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
            + "\n".join(body) + "</body></html>")


def write_html(records: list[RoundRecord], path, **options) -> Path:
    """Write render_html(records, **options) to `path`; returns the path."""
    path = Path(path)
    path.write_text(render_html(records, **options), encoding="utf-8")
    return path


def _plot(fig: go.Figure) -> str:
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, config={"displaylogo": False})


def _only(record: RoundRecord, request: int) -> RoundRecord:
    """The record with `request` as its only request (format_rounds reads the first)."""
    return replace(record, requests=[record.requests[request]])
