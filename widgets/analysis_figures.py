"""Figures of ddtree.analysis results, shared by the analysis views and ddtree.report (no widget imports):
acceptance against budget, the depth x rank heat map beside how often the walk reaches each depth, and the draft
reliability curve; plus the report's HTML sections built from them."""
from __future__ import annotations

import html
import math

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from ddtree.analysis import (DRAFTED, BudgetCurve, Calibration, RankDepth, RoundCounterfactual, budget_curve,
                             calibration, counterfactuals, depth_reach, rank_depth)
from ddtree.record import RoundRecord
from ddtree.settings import Method
from ddtree.widgets.nodes import ACCEPT_COLOR

MEAN_COLOR = "#08519c"
ROUND_COLOR = "rgba(120,120,120,0.25)"
CHAIN_COLOR = "#31a354"
TABLE_BUDGETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def acceptance_figure(cfs: list[RoundCounterfactual], *, highlight: int | None = None, title: str = "",
                      width: int = 760, height: int = 440) -> go.Figure:
    """Acceptance length against budget: every round's step curve (grey; `highlight` = a position in `cfs` drawn in
    orange), the mean over rounds (solid where every round is exact, dashed where some are estimates) with its
    certain lower bound, the run's real budget(s) marked with the real mean there, and the DFlash chain's point (its
    depth nodes, on the same drafts). Traces named: round, mean, mean (estimate), lower bound, real, DFlash chain,
    and highlighted round."""
    curve = budget_curve(cfs)
    budgets = curve.budgets
    traces = [_round_trace(cf, ROUND_COLOR, 1, showlegend=k == 0, name="round") for k, cf in enumerate(cfs)]
    sure = [b for b, n in zip(budgets, curve.exact_rounds) if n == curve.rounds]
    last_sure = max(sure) if sure else 0
    hover = [f"budget {b}: mean {m:.2f} ({n}/{curve.rounds} rounds exact)"
             for b, m, n in zip(budgets, curve.mean, curve.exact_rounds)]
    traces.append(go.Scatter(x=budgets[:last_sure], y=curve.mean[:last_sure], mode="lines", name="mean",
                             line=dict(color=MEAN_COLOR, width=3), hovertext=hover[:last_sure], hoverinfo="text"))
    if last_sure < len(budgets):
        start = max(last_sure - 1, 0)
        traces.append(go.Scatter(x=budgets[start:], y=curve.mean[start:], mode="lines", name="mean (estimate)",
                                 line=dict(color=MEAN_COLOR, width=3, dash="dash"), hovertext=hover[start:],
                                 hoverinfo="text"))
        traces.append(go.Scatter(x=budgets[start:], y=curve.lower[start:], mode="lines", name="lower bound",
                                 line=dict(color=MEAN_COLOR, width=1.5, dash="dot"), hoverinfo="skip"))
    real = [(b, sum(cf.real_acceptance for cf in cfs if cf.method == Method.DDTREE and cf.budget == b) /
             sum(cf.method == Method.DDTREE and cf.budget == b for cf in cfs)) for b in curve.real_budgets]
    if real:
        traces.append(go.Scatter(x=[b for b, _ in real], y=[a for _, a in real], mode="markers", name="real",
                                 marker=dict(symbol="star", size=15, color=ACCEPT_COLOR, line=dict(width=1)),
                                 hovertext=[f"the run: budget {b}, mean acceptance {a:.2f}" for b, a in real],
                                 hoverinfo="text"))
    depth = max(cf.depth for cf in cfs)
    traces.append(go.Scatter(x=[depth], y=[curve.chain], mode="markers", name="DFlash chain",
                             marker=dict(symbol="diamond", size=12, color=CHAIN_COLOR),
                             hovertext=[f"DFlash chain ({depth} nodes, same drafts): {curve.chain:.2f}"],
                             hoverinfo="text"))
    if highlight is not None:
        cf = cfs[highlight]
        traces.append(_round_trace(cf, ACCEPT_COLOR, 3, showlegend=True,
                                   name=f"round {cf.round}" + (f", request {cf.request}" if cf.request else "")))
    layout = dict(
        title=dict(text=title or f"acceptance against budget, {curve.rounds} rounds", font=dict(size=13)),
        width=width, height=height, template="none", plot_bgcolor="white", margin=dict(l=55, r=20, t=50, b=50),
        legend=dict(font=dict(size=10)),
        shapes=[dict(type="line", x0=b, x1=b, y0=0, y1=1, yref="paper", line=dict(color=ACCEPT_COLOR, dash="dot"))
                for b in curve.real_budgets],
        xaxis=dict(title="budget (draft nodes)", type="log", tickvals=list(TABLE_BUDGETS),
                   ticktext=[str(b) for b in TABLE_BUDGETS], range=[0, math.log10(max(budgets)) + 0.02]),
        yaxis=dict(title="acceptance length (tokens per target forward)", gridcolor="#eeeeee", rangemode="tozero"))
    return go.Figure(traces, layout)


def _round_trace(cf: RoundCounterfactual, color: str, width: float, *, showlegend: bool, name: str) -> go.Scatter:
    """One round's acceptance as a step curve through its change points (the budgets in cf.needed)."""
    max_budget = cf.acceptance.numel()
    steps = [n for n in cf.needed if n <= max_budget]
    xs = [1] + steps + [max_budget]
    ys = [cf.at(x) for x in xs]
    tip = (f"round {cf.round}" + (f", request {cf.request}" if cf.request else "") + f": {cf.method} budget "
           f"{cf.budget}, real {cf.real_acceptance}; needed budgets {steps}" + (" (truncated)" if cf.truncated else ""))
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width, shape="hv"), name=name,
                      legendgroup=name, showlegend=showlegend, hovertext=tip, hoverinfo="text")


def rank_depth_figure(rd: RankDepth, reach: list[float], *, normalize: bool = True, title: str = "",
                      width: int = 860, height: int = 440) -> go.Figure:
    """Left: the target token's draft rank per depth (rows: depth 1 at the top; share of the depth's rounds, or
    counts). Right: how often the walk reached each depth (`reach`, e.g. depth_reach(cfs))."""
    counts = rd.counts.double()
    z = (counts / counts.sum(1, keepdim=True).clamp_min(1)) if normalize else counts
    depths = [f"depth {d + 1}" for d in range(counts.shape[0])]
    text = [[f"{depths[d]}, rank {rd.labels[r]}: {int(counts[d, r])} of {int(counts[d].sum())}"
             for r in range(counts.shape[1])] for d in range(counts.shape[0])]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.76, 0.24], horizontal_spacing=0.03,
                        subplot_titles=("target token's draft rank", "walk reaches depth"))
    fig.add_trace(go.Heatmap(z=z.tolist(), x=rd.labels, y=depths, colorscale="Blues", name="rank share",
                             hovertext=text, hoverinfo="text",
                             colorbar=dict(title="share" if normalize else "count", x=1.02, len=0.9)), row=1, col=1)
    fig.add_trace(go.Bar(x=reach, y=depths[:len(reach)], orientation="h", marker_color=ACCEPT_COLOR, name="reach",
                         hovertext=[f"{d}: reached in {r:.0%} of rounds" for d, r in zip(depths, reach)],
                         hoverinfo="text"), row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(title="draft rank at that depth (0 = the drafter's first choice)", type="category", row=1, col=1)
    fig.update_xaxes(title="share of rounds", range=[0, 1], row=1, col=2)
    fig.update_layout(title=dict(text=title or f"where the drafter loses the target ({rd.rounds} rounds)",
                                 font=dict(size=13)),
                      width=width, height=height, template="none", plot_bgcolor="white", showlegend=False,
                      margin=dict(l=70, r=80, t=70, b=50))
    return fig


def calibration_figure(cal: Calibration, *, title: str = "", width: int = 560, height: int = 440) -> go.Figure:
    """Reliability curve: per draft-probability bin, the fraction of nodes the target agreed with against their
    mean draft probability (the diagonal = calibrated), node counts as bars on the right axis."""
    centers = [(a + b) / 2 for a, b in zip(cal.edges, cal.edges[1:])]
    full = [i for i, n in enumerate(cal.counts) if n]
    traces = [
        go.Bar(x=centers, y=cal.counts, width=[b - a for a, b in zip(cal.edges, cal.edges[1:])], yaxis="y2",
               name="nodes", marker_color="rgba(160,160,160,0.35)", hoverinfo="y"),
        go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="calibrated", line=dict(color="#999999", dash="dash"),
                   hoverinfo="skip"),
        go.Scatter(x=[cal.mean_prob[i] for i in full], y=[cal.frequency[i] for i in full], mode="lines+markers",
                   name="drafter", line=dict(color=MEAN_COLOR), marker=dict(size=8),
                   hovertext=[f"{cal.edges[i]:.2f}-{cal.edges[i + 1]:.2f}: mean draft p {cal.mean_prob[i]:.3f}, "
                              f"target agreed {cal.frequency[i]:.3f} ({cal.counts[i]} nodes)" for i in full],
                   hoverinfo="text"),
    ]
    layout = dict(
        title=dict(text=title or f"draft calibration: ECE {cal.ece:.3f} over {cal.n} nodes", font=dict(size=13)),
        width=width, height=height, template="none", plot_bgcolor="white", margin=dict(l=55, r=55, t=50, b=50),
        legend=dict(orientation="h", y=-0.2, font=dict(size=10)),
        xaxis=dict(title="draft probability of the node (its parent reached)", range=[0, 1]),
        yaxis=dict(title="how often the target agreed", range=[0, 1.02], gridcolor="#eeeeee"),
        yaxis2=dict(title="nodes", overlaying="y", side="right", showgrid=False, rangemode="tozero"))
    return go.Figure(traces, layout)


def curve_table_html(curve: BudgetCurve, budgets=TABLE_BUDGETS) -> str:
    """The per-budget table as HTML: mean acceptance, rounds exact, lower bound where some are estimates."""
    at = {b: i for i, b in enumerate(curve.budgets)}
    rows = []
    for b in (b for b in budgets if b in at):
        i = at[b]
        exact = curve.exact_rounds[i] == curve.rounds
        style = "font-weight:bold;background:#fff3e0" if b in curve.real_budgets else ""
        rows.append(f"<tr style='{style}'><td>{b}</td><td>{curve.mean[i]:.2f}{'' if exact else ' (estimate)'}</td>"
                    f"<td>{curve.exact_rounds[i]}/{curve.rounds}</td>"
                    f"<td>{'' if exact else f'{curve.lower[i]:.2f}'}</td></tr>")
    head = "".join(f"<th style='padding:0 8px'>{h}</th>" for h in ("budget", "mean acceptance", "exact rounds",
                                                                   "lower bound"))
    note = (f"real mean {curve.real:.2f} (run's budget {', '.join(map(str, curve.real_budgets)) or '-'}); DFlash "
            f"chain on the same drafts {curve.chain:.2f}" +
            (f"; {curve.truncated} rounds at the trace's end are truncated (lower bounds)" if curve.truncated else ""))
    return (f"<table class='ddtree-budget-table' style='font-size:12px;text-align:right'><tr>{head}</tr>"
            f"{''.join(rows)}</table><div style='font-size:11px;color:#636363'>{html.escape(note)}</div>")


# ----------------------------------------------------------------------------------------------- report sections
def acceptance_section(records: list[RoundRecord], *, request: int = 0) -> list[str]:
    """The report's "Counterfactual budgets" section (empty when no round drafted)."""
    return _section(records, "Counterfactual budgets", lambda: _acceptance_body(counterfactuals(records,
                                                                                              request=request)))


def rank_depth_section(records: list[RoundRecord], *, request: int = 0) -> list[str]:
    """The report's "Where the drafter loses the target" section (empty when no round drafted)."""
    def body():
        cfs = counterfactuals(records, request=request)
        return [_plot(rank_depth_figure(rank_depth(cfs), depth_reach(cfs)))]
    return _section(records, "Where the drafter loses the target", body)


def calibration_section(records: list[RoundRecord], *, request: int = 0) -> list[str]:
    """The report's "Draft calibration" section (empty when no round drafted)."""
    return _section(records, "Draft calibration",
                    lambda: [_plot(calibration_figure(calibration(records, request=request)))])


def _acceptance_body(cfs: list[RoundCounterfactual]) -> list[str]:
    return ["<p class='note'>The acceptance DDTree would have reached in each recorded round at every budget, from "
            "the round's draft ranks and the tokens the target committed afterwards (exact up to each round's "
            "exact budget, estimates beyond; see ddtree.analysis).</p>",
            _plot(acceptance_figure(cfs)), curve_table_html(budget_curve(cfs))]


def _section(records, title: str, body) -> list[str]:
    if not any(r.method in DRAFTED for r in records):
        return []
    try:
        content = body()
    except ValueError as e:
        content = [f"<p class='note'>not available: {html.escape(str(e))}</p>"]
    return [f"<h2>{html.escape(title)}</h2>", *content]


def _plot(fig: go.Figure) -> str:
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, config={"displaylogo": False})
