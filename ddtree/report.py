"""A self-contained HTML report of recorded rounds (no ipywidgets): summary table, committed text, and per round
the story, the tree (graphviz SVG, or a plotly layout without `dot`), node log-weights and the verify mask.

Small and quick to open: plotly.js is embedded once, gzip-compressed (unpacked by the browser's
DecompressionStream; figures made before it is ready are queued), and every round's content lives in one shared,
compressed JSON payload that is rendered only when its section is opened (the first `open_rounds` at load). Trees
scale to the width of their frame."""
from __future__ import annotations

import base64
import gzip
import html
import json
import re
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from ddtree.files import atomic_write
from ddtree.record import RoundRecord, rounds_of
from ddtree.text import format_rounds
from ddtree.widgets.analysis_figures import acceptance_section, calibration_section, rank_depth_section
from ddtree.widgets.figures import (STAGES, VIEW_CSS, draft_html, logweight_figure, path_html, stage_caption,
                                    stats_html, sweep_figure)
from ddtree.widgets.masks import batch_of, legend_html, mask_figure, mask_grid, row_labels
from ddtree.widgets.treegraph import has_dot, tree_figure, tree_svg

STYLE = """body{font-family:Helvetica,Arial,sans-serif;margin:20px;max-width:1400px}
h1{font-size:20px} h2{font-size:16px;margin-top:24px} details{margin:8px 0;border-top:1px solid #ddd;padding-top:6px}
summary{cursor:pointer;font-weight:bold} .row{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.tree{overflow:auto;max-width:100%;max-height:640px;border:1px solid #eee}
.tree svg{max-width:100%;height:auto}
.story{font-size:12px;margin:4px 0 8px 18px;padding:0} .story li{margin:2px 0}
pre{font-size:11px;background:#f7f7f7;padding:8px;overflow:auto}
.note{color:#636363;font-size:12px} .ddtree-path .ddtree-text{max-height:300px;overflow:auto}"""

# Runs first: a stand-in Plotly queues newPlot calls until the real plotly.js is unpacked, then replays them; round
# sections fill in when opened.
LOADER = """
(function () {
  const queued = [];
  window.Plotly = { newPlot: (...args) => { queued.push(args); return Promise.resolve(); } };
  const unpack = async (b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  };
  const plotIn = (root) => {
    for (const div of root.querySelectorAll("div.ddtree-plot:not([data-done])")) {
      div.dataset.done = "1";
      const fig = JSON.parse(div.querySelector("script").textContent);
      Plotly.newPlot(div, fig.data, fig.layout, { displaylogo: false, responsive: true });
    }
  };
  let rounds = null;
  const fill = (details) => {
    const body = details.querySelector(".round-body");
    if (!rounds || !body || body.dataset.done) return;
    body.dataset.done = "1";
    body.innerHTML = rounds[+details.dataset.round];
    plotIn(body);
  };
  window.addEventListener("DOMContentLoaded", async () => {
    if (typeof DecompressionStream === "undefined") {
      document.body.insertAdjacentHTML("afterbegin", "<p style='color:#e41a1c'>This browser cannot unpack the " +
        "report's figures (it needs DecompressionStream: Chrome 80+, Firefox 113+, Safari 16.4+).</p>");
      return;
    }
    const code = await unpack(document.getElementById("ddtree-plotly").textContent);
    const script = document.createElement("script");
    script.textContent = code;
    document.head.append(script);
    for (const args of queued.splice(0)) Plotly.newPlot(...args);
    rounds = JSON.parse(await unpack(document.getElementById("ddtree-rounds").textContent));
    plotIn(document);
    for (const d of document.querySelectorAll("details[data-round]")) {
      if (d.open) fill(d);
      d.addEventListener("toggle", () => d.open && fill(d));
    }
    document.body.dataset.ready = "1";
  });
})();
"""


def render_html(records: list[RoundRecord], *, title: str = "DDTree report", prompt_text: str = "",
                sweep_rows: list[dict] | None = None, request: int = 0, open_rounds: int = 1) -> str:
    """The report as one HTML string; `sweep_rows` (ddtree.sweep.summarize rows) adds a budget sweep figure."""
    records = list(records)
    if not records or not all(isinstance(r, RoundRecord) for r in records):
        raise ValueError("records must be a non-empty list of RoundRecord")
    if isinstance(request, bool) or not isinstance(request, int) or \
            not all(0 <= request < len(r.requests) for r in records):
        raise ValueError(f"request must be a request index present in every record, got {request!r}")
    alone = rounds_of(records, request)  # the rounds it took part in (Session.run stops a finished request)
    if not alone:
        raise ValueError(f"request {request} took part in none of the {len(records)} rounds")
    records = [r for r in records if r.requests[request] is not None]
    lengths = [r.requests[0].acceptance_length for r in alone]
    tokens = sum(lengths)
    renderer = "graphviz SVG" if has_dot() else "plotly layout (graphviz `dot` not found)"
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>{len(records)} rounds, {tokens} tokens committed, mean acceptance length "
            f"{tokens / len(records):.2f} tokens per target forward. Trees drawn as {renderer}: colour = node "
            "log-weight (yellow high), orange outline = accepted path, dashed green = bonus token, grey = padding "
            "rows. Hover a node for its path, draft probability per depth and target probability. A round's "
            "section draws when you open it.</p>",
            "<h2>Committed text</h2>", path_html(records, prompt_text=prompt_text, request=request),
            "<h2>Rounds</h2>", f"<pre>{html.escape(format_rounds(alone))}</pre>"]
    if sweep_rows:
        body += ["<h2>Budget sweep</h2>", _plot(sweep_figure(sweep_rows))]
    body += acceptance_section(alone, request=0)
    body += rank_depth_section(alone, request=0)
    body += calibration_section(alone, request=0)
    rounds = []
    for k, rec in enumerate(records):
        req = rec.requests[request]
        body.append(f"<details data-round='{k}'{' open' if k < open_rounds else ''}><summary>round {rec.index}: "
                    f"{rec.method}, {req.n_nodes} nodes, acceptance length {req.acceptance_length}, committed "
                    f"{html.escape(repr(req.committed_text))}</summary><div class='round-body'></div></details>")
        rounds.append(_round_html(rec, request))
    plotly_js = get_plotlyjs()
    banner = re.search(r"plotly\.js v[\w.-]+", plotly_js[:400])
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}{VIEW_CSS}</style><script>{LOADER}</script>"
            f"<!-- * {banner.group(0) if banner else 'plotly.js'}, embedded gzip + base64 -->"
            f"<script type='application/gzip;base64' id='ddtree-plotly'>{_pack(plotly_js)}</script>"
            f"<script type='application/gzip;base64' id='ddtree-rounds'>{_pack(json.dumps(rounds))}</script>"
            "</head><body>" + "\n".join(body) + "</body></html>")


def _round_html(rec: RoundRecord, request: int) -> str:
    """One round's section content (rendered in the browser when its section opens)."""
    req = rec.requests[request]
    story = "".join(f"<li>{stage_caption(rec, s, request=request)}</li>" for s in STAGES)
    tree = f"<div class='tree'>{tree_svg(req)}</div>" if has_dot() else _plot(tree_figure(req))
    grid = mask_grid(batch_of(rec), rec.took_part.index(request))  # the batch of the requests that took part
    mask = mask_figure(grid, title=f"verify mask, round {rec.index}", accepted=req.accepted,
                       row_labels=row_labels(rec, request), width=560, height=520)
    return (f"{stats_html(rec, request=request)}<ol class='story'>{story}</ol><details><summary style='font-weight:"
            f"normal'>the drafter's candidates per depth</summary>{draft_html(req)}</details>{tree}<div class='row'>"
            f"{_plot(logweight_figure(req, title=f'node log-weights, round {rec.index}'))}"
            f"<div>{_plot(mask)}{legend_html([grid])}</div></div>")


def write_html(records: list[RoundRecord], path, **options) -> Path:
    """Write render_html(records, **options) to `path`, atomically (a failed write leaves a report already there as
    it was); returns the path."""
    path = Path(path)
    atomic_write(path, render_html(records, **options), "report")
    return path


def _plot(fig: go.Figure) -> str:
    """A figure drawn once plotly.js is unpacked (its JSON inline; the JSON's '</' escaped for the script tag)."""
    spec = pio.to_json(fig, validate=False).replace("</", "<\\/")
    return f"<div class='ddtree-plot'><script type='application/json'>{spec}</script></div>"


def _pack(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


