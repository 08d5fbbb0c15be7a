"""The drafted tree of one request as a graphviz SVG (when the `dot` binary exists) or a plotly tree layout.

Both show one node per token (visible-whitespace text, depth and log-weight), fill colour by log-weight, the
accepted path outlined, the bonus token hanging off the last accepted node, the target's choice at every visited
node, and padding rows greyed out. Hover a node for its path text, draft probability per depth and target
probability. No widget imports.
"""
from __future__ import annotations

import shutil

import graphviz
import plotly.graph_objects as go

from ddtree.record import RequestRound
from ddtree.text import shorten
from ddtree.widgets.nodes import (ACCEPT_COLOR, BONUS_COLOR, PAD_COLOR, SELECT_COLOR, describe, escape, ink,
                                  logw_colors, node_infos, token_text)

MAX_PAD_NODES = 8  # padding rows drawn one by one; more are drawn as one summary node
LABEL_WIDTH = 16


def has_dot() -> bool:
    return shutil.which("dot") is not None


def tree_dot(req: RequestRound) -> str:
    """Graphviz source of the tree (left to right by depth). Node names: n<i>, bonus, pad<row>, pads. SVG classes
    (what the pane's stages and marks style): 'acc' on accepted nodes and edges, 'choice' on nodes labelled with the
    target's choice, 'bonus' on the bonus node and its edge, 'pad' on padding nodes."""
    infos = node_infos(req)
    colors = logw_colors([n.logw for n in infos])
    last = req.accepted[-1]
    lines = ["digraph tree {", 'rankdir=LR; nodesep=0.08; ranksep=0.25; bgcolor="transparent";',
             'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, margin="0.06,0.03"];',
             'edge [arrowsize=0.5, color="#888888"];']
    for n, color in zip(infos, colors):
        head = f"root '{shorten(n.text, LABEL_WIDTH)}'" if n.index == 0 else f"'{shorten(n.text, LABEL_WIDTH)}'"
        label = [head, f"#{n.index} d{n.depth} logw {n.logw:.2f}"]
        if n.accepted and n.choice >= 0:
            label.append(f"→ '{shorten(n.choice_text, LABEL_WIDTH)}'")
        border = f'color="{ACCEPT_COLOR}", penwidth=3' if n.accepted else 'color="#555555", penwidth=1'
        classes = " ".join(c for c, on in (("acc", n.accepted), ("choice", len(label) > 2)) if on)
        lines.append(f'n{n.index} [label={_label(label)}, fillcolor="{color}", fontcolor="{ink(color)}", '
                     f'{border}, class="{classes}", tooltip={_quote(describe(n))}];')
        if n.parent >= 0:
            style = f'color="{ACCEPT_COLOR}", penwidth=2.5, class="acc"' if n.accepted else ""
            lines.append(f"n{n.parent} -> n{n.index} [{style}];")
    bonus = token_text(req, req.bonus_token)
    lines.append(f'bonus [label={_label(["bonus", repr_text(bonus)])}, style="dashed,filled", class="bonus", '
                 f'fillcolor="{BONUS_COLOR}", tooltip={_quote(f"bonus token: the target chose it at node {last}")}];')
    lines.append(f'n{last} -> bonus [style=dashed, color="#31a354", penwidth=2, class="bonus"];')
    rows, n_nodes = len(req.input_ids), req.n_nodes
    if rows > n_nodes:
        lines.append('subgraph cluster_pad { label="padding rows (not tree nodes)"; fontsize=9; color="#bbbbbb"; '
                     f'node [fillcolor="{PAD_COLOR}", fontcolor="#777777", style="dashed,filled", class="pad"];')
        if rows - n_nodes <= MAX_PAD_NODES:
            for r in range(n_nodes, rows):
                lines.append(f'pad{r} [label="pad row {r}", tooltip="padding row {r}: root token at the root\'s '
                             f'position; sees the prefix and itself only"];')
        else:
            lines.append(f'pads [label="pad rows {n_nodes}..{rows - 1}\\n({rows - n_nodes} rows)", '
                         'tooltip="padding rows: root token at the root\'s position; see the prefix and themselves"];')
        lines.append("}")
    lines.append("}")
    return "\n".join(lines)


def tree_svg(req: RequestRound) -> str:
    """The tree as an inline SVG string (no XML prolog), laid out by graphviz `dot`."""
    svg = graphviz.Source(tree_dot(req)).pipe(format="svg", engine="dot").decode()
    return svg[svg.index("<svg"):]


def repr_text(text: str) -> str:
    return f"'{shorten(text, LABEL_WIDTH)}'"


def tree_layout(req: RequestRound) -> tuple[list[float], list[float]]:
    """Node coordinates for a left-to-right tree: x = depth, y = leaf order (parents centred over children)."""
    tree = req.tree
    kids = [[] for _ in range(tree.n_nodes)]
    for i, p in enumerate(tree.parents.tolist()[1:], start=1):
        kids[p].append(i)
    y = [0.0] * tree.n_nodes
    leaf = 0
    for i in _postorder(kids):
        if kids[i]:
            y[i] = (y[kids[i][0]] + y[kids[i][-1]]) / 2
        else:
            y[i], leaf = float(leaf), leaf + 1
    return [float(d) for d in tree.depths.tolist()], y


def tree_figure(req: RequestRound, *, title: str = "") -> go.Figure:
    """The tree as a plotly figure (the layout used when graphviz `dot` is missing). Traces, in order: edges,
    accepted edges, nodes, bonus, padding, and the (empty) ring marking a selected node."""
    infos = node_infos(req)
    xs, ys = tree_layout(req)
    colors = logw_colors([n.logw for n in infos])
    edge_x, edge_y, acc_x, acc_y = [], [], [], []
    for n in infos[1:]:
        ex, ey = (acc_x, acc_y) if n.accepted else (edge_x, edge_y)
        ex += [xs[n.parent], xs[n.index], None]
        ey += [ys[n.parent], ys[n.index], None]
    last = req.accepted[-1]
    bx, by = xs[last] + 0.6, ys[last] + 0.35
    rows, n_nodes = len(req.input_ids), req.n_nodes
    pad_rows = list(range(n_nodes, rows))
    pad_y = [max(ys) + 1.5 + k for k in range(min(len(pad_rows), MAX_PAD_NODES))]
    pad_text = [f"pad row {r}" for r in pad_rows[:MAX_PAD_NODES]]
    if len(pad_rows) > MAX_PAD_NODES:
        pad_y, pad_text = pad_y[:1], [f"pad rows {n_nodes}..{rows - 1} ({len(pad_rows)})"]
    labels = [f"'{escape(shorten(n.text, LABEL_WIDTH))}'<br>d{n.depth} {n.logw:.2f}" +
              (f"<br>→ '{escape(shorten(n.choice_text, LABEL_WIDTH))}'" if n.accepted and n.choice >= 0 else "")
              for n in infos]
    fig = go.Figure([
        go.Scatter(x=edge_x, y=edge_y, mode="lines", line=dict(color="#999999", width=1), hoverinfo="skip",
                   name="edges"),
        go.Scatter(x=acc_x, y=acc_y, mode="lines", line=dict(color=ACCEPT_COLOR, width=3), hoverinfo="skip",
                   name="accepted path"),
        go.Scatter(x=xs, y=ys, mode="markers+text", text=labels, textposition="middle right",
                   textfont=dict(size=9), customdata=list(range(len(infos))), name="nodes",
                   marker=dict(size=14, color=colors,
                               line=dict(color=[ACCEPT_COLOR if n.accepted else "#555555" for n in infos],
                                         width=[3 if n.accepted else 1 for n in infos])),
                   hovertext=[escape(describe(n)) for n in infos], hoverinfo="text"),
        go.Scatter(x=[xs[last], bx], y=[ys[last], by], mode="lines+markers+text", name="bonus",
                   text=["", f"bonus '{escape(shorten(token_text(req, req.bonus_token), LABEL_WIDTH))}'"],
                   textposition="middle right", line=dict(color="#31a354", dash="dash"),
                   marker=dict(size=[0, 12], color=BONUS_COLOR, symbol="square"), hoverinfo="text",
                   hovertext=["", f"bonus token: the target chose it at node {last}"]),
        go.Scatter(x=[0.0] * len(pad_y), y=pad_y, mode="markers+text", text=pad_text, textposition="middle right",
                   marker=dict(size=12, color=PAD_COLOR, symbol="square"), name="padding rows", hoverinfo="text",
                   hovertext=["padding: root token at the root's position; sees the prefix and itself"] * len(pad_y)),
        go.Scatter(x=[], y=[], mode="markers", name="selected", hoverinfo="skip",
                   marker=dict(size=24, color="rgba(0,0,0,0)", line=dict(color=SELECT_COLOR, width=3))),
    ])
    fig.update_layout(title=title, showlegend=False, template="none", plot_bgcolor="white",
                      margin=dict(l=10, r=10, t=40, b=10),
                      height=max(300, 22 * (max(ys) + 2 + len(pad_y))), width=900,
                      xaxis=dict(title="depth", dtick=1, range=[-0.3, max(xs) + 1.8], showgrid=False),
                      yaxis=dict(visible=False, autorange="reversed"))
    return fig


def _postorder(kids: list[list[int]]) -> list[int]:
    order, stack = [], [(0, False)]
    while stack:
        i, done = stack.pop()
        if done:
            order.append(i)
            continue
        stack.append((i, True))
        stack.extend((k, False) for k in reversed(kids[i]))
    return order


def _quote(text: str) -> str:
    """A quoted dot string; '&' escaped too, since graphviz decodes HTML entities in it (the text stays literal)."""
    return '"' + text.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(lines: list[str]) -> str:
    return _quote("\n".join(lines))
