"""Figures and HTML fragments built from plain records, shared by the widgets and ddtree.report (no widget
imports): node log-weights, the committed path, a round's stats, and budget sweeps."""
from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ddtree.record import RequestRound, RoundRecord
from ddtree.widgets.nodes import ACCEPT_COLOR, describe, escape, logw_colors, node_infos

PATH_COLORS = ("#fdd0a2", "#c6dbef", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9")


def logweight_figure(req: RequestRound, *, title: str = "", width: int = 560, height: int = 420) -> go.Figure:
    """Node log-weight by depth (nodes of one depth spread by draft rank), coloured like the tree, accepted path
    joined in orange, and the target's probability of each node (p_target(token | parent's path)) on the right
    axis. Traces, in order: nodes, accepted path, target probability."""
    infos = node_infos(req)[1:]
    max_rank = max((n.rank for n in infos), default=0)
    x = [n.depth + 0.7 * (n.rank / (max_rank + 1) - 0.35) for n in infos]
    acc = [(xi, n) for xi, n in zip(x, infos) if n.accepted]
    known = [(xi, n) for xi, n in zip(x, infos) if n.target_prob is not None]
    traces = [
        dict(type="scatter", x=x, y=[n.logw for n in infos], mode="markers", name="node log-weight",
                   marker=dict(size=9, color=logw_colors([n.logw for n in infos]) if infos else [],
                               line=dict(color=[ACCEPT_COLOR if n.accepted else "#555555" for n in infos],
                                         width=[2.5 if n.accepted else 0.5 for n in infos])),
                   hovertext=[escape(describe(n)) for n in infos], hoverinfo="text"),
        dict(type="scatter", x=[0.0] + [a for a, _ in acc], y=[0.0] + [n.logw for _, n in acc], mode="lines",
                   line=dict(color=ACCEPT_COLOR, width=2), name="accepted path", hoverinfo="skip"),
        dict(type="scatter", x=[a for a, _ in known], y=[n.target_prob for _, n in known], mode="markers", yaxis="y2",
                   name="target p(node)", marker=dict(symbol="diamond-open", size=8, color="#d62728"),
                   hovertext=[f"node {n.index}: target p {n.target_prob:.3f}" for _, n in known], hoverinfo="text"),
    ]
    layout = dict(
        title=dict(text=title or f"{len(infos)} draft nodes", font=dict(size=12)), width=width, height=height,
        template="none", plot_bgcolor="white", margin=dict(l=50, r=50, t=50, b=40),
        legend=dict(orientation="h", y=-0.18, font=dict(size=9)),
        xaxis=dict(title="depth (nodes of a depth spread by draft rank)", dtick=1, showgrid=False),
        yaxis=dict(title="node log-weight", gridcolor="#eeeeee"),
        yaxis2=dict(title="target probability", range=[0, 1.02], tickmode="linear", tick0=0, dtick=0.25,
                    overlaying="y", side="right", showgrid=False))
    return go.Figure(traces, layout)


def path_html(records: list[RoundRecord], *, prompt_text: str = "", request: int = 0,
              current: int | None = None) -> str:
    """The committed text so far: the prompt in grey, then each round's committed span on its own colour with the
    round's acceptance length as a small number after it (hover a span for details). `current` is outlined."""
    parts = [f'<span style="color:#999">{html.escape(prompt_text)}</span>'] if prompt_text else []
    for k, rec in enumerate(records):
        req = rec.requests[request]
        color = PATH_COLORS[k % len(PATH_COLORS)]
        outline = f"outline:2px solid {ACCEPT_COLOR};" if rec.index == current else ""
        tip = (f"round {rec.index} ({rec.method}, {rec.verify}): {len(req.accepted_tokens)} draft tokens accepted "
               f"+ bonus = acceptance length {req.acceptance_length}")
        parts.append(f'<span class="ddtree-span" style="background:{color};{outline}" title="{html.escape(tip)}">'
                     f'{html.escape(req.committed_text)}</span><sub style="color:#636363;font-size:70%">'
                     f'{req.acceptance_length}</sub>')
    return ('<div class="ddtree-path" style="white-space:pre-wrap;font-family:monospace;font-size:12px;'
            'line-height:1.7;max-height:260px;overflow:auto;border:1px solid #ddd;padding:6px">'
            + "".join(parts) + "</div>")


def stats_html(record: RoundRecord, *, request: int = 0, history: list[RoundRecord] = ()) -> str:
    """One round at a glance: settings, context, tree nodes, accepted, acceptance length, ms per stage, and the
    mean acceptance length over `history`."""
    req = record.requests[request]
    cells = [("round", record.index), ("method", record.method),
             ("verify", record.verify + (f" T={record.temperature:g}" if record.verify == "sampled" else "")),
             ("budget", record.budget), ("context", req.context_len), ("tree nodes", req.n_nodes),
             ("rows", record.num_draft_tokens), ("accepted", len(req.accepted_tokens)),
             ("acceptance length", req.acceptance_length)]
    if history:
        mean = sum(r.requests[request].acceptance_length for r in history) / len(history)
        cells.append((f"mean over {len(history)}", f"{mean:.2f}"))
    ms = " ".join(f"{s} {1e3 * t:.1f}" for s, t in record.times.items())
    head = "".join(f"<th style='padding:0 6px'>{html.escape(k)}</th>" for k, _ in cells)
    row = "".join(f"<td style='padding:0 6px;text-align:center'>{html.escape(str(v))}</td>" for _, v in cells)
    return (f"<table class='ddtree-stats' style='font-size:12px'><tr>{head}</tr><tr>{row}</tr></table>"
            f"<div style='font-size:11px;color:#636363'>ms per stage: {html.escape(ms)}</div>")


def sweep_figure(rows: list[dict], *, title: str = "", width: int = 900, height: int = 380) -> go.Figure:
    """Acceptance length and tokens/s versus budget, one line per (method, temperature), from ddtree.sweep.summarize
    rows; autoregressive rows (method 'ar') are drawn as dotted horizontal baselines."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("acceptance length (tokens per target forward)",
                                                        "tokens per second"))
    budgets = sorted({r["budget"] for r in rows if r["method"] != "ar"})
    groups = sorted({(r["method"], r["temperature"]) for r in rows})
    for g, (method, temperature) in enumerate(groups):
        pts = sorted((r for r in rows if (r["method"], r["temperature"]) == (method, temperature)),
                     key=lambda r: r["budget"])
        name = f"{method} T={temperature:g}"
        color = f"hsl({(g * 67) % 360},60%,45%)"
        line = dict(color=color, dash="dot") if method == "ar" else dict(color=color)
        xs = [min(budgets), max(budgets)] if method == "ar" and budgets else [r["budget"] for r in pts]
        for col, key in ((1, "acceptance_length"), (2, "tokens_per_second")):
            ys = [pts[0][key]] * len(xs) if method == "ar" else [r[key] for r in pts]
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines" if method == "ar" else "lines+markers", name=name,
                                     line=line, legendgroup=name, showlegend=col == 1), row=1, col=col)
    fig.update_xaxes(title="budget (draft nodes)", type="log", tickvals=budgets, ticktext=[str(b) for b in budgets])
    fig.update_layout(title=title, width=width, height=height, template="none", plot_bgcolor="white",
                      margin=dict(l=50, r=20, t=60, b=50))
    return fig
