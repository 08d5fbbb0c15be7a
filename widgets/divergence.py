"""Tie or bug: a table of runs compared with autoregressive greedy output, each with its first divergence, the
target's top-2 margin there in ulps, and the verdict (ddtree.lossless.Divergence). Consumes plain Divergence records,
so it needs no model; `decode` (e.g. pair.decode) shows the two tokens as text."""
from __future__ import annotations

import html
from typing import Callable

import ipywidgets as widgets

from ddtree.lossless import TIE_ULPS, Divergence

COLORS = {"identical": "#2e7d32", "tie": "#b26a00", "bug": "#c62828"}


def divergence_html(rows: list[tuple[str, Divergence | None]], decode: Callable[[list[int]], str] | None = None) -> str:
    """An HTML table: one row per (label, first divergence or None for identical output)."""
    def token(t: int) -> str:
        return html.escape(repr(decode([t])) if decode is not None and t >= 0 else str(t), quote=False)

    cells = []
    for label, d in rows:
        if d is None:
            verdict, where, tokens, margin = "identical", "-", "-", "-"
        else:
            verdict = "tie" if d.tie else "bug"
            where, tokens = str(d.position), f"{token(d.expected)} &rarr; {token(d.got)}"
            margin = f"{d.margin:.4g} ({d.margin_ulps:.3g} ulps)"
        text = {"identical": "identical to autoregressive", "tie": "precision tie",
                "bug": "far apart: a real bug"}[verdict]
        if d is not None and d.exact_rerun is not None:
            text += "; exact rerun " + ("identical" if d.exact_rerun < 0 else f"diverges at {d.exact_rerun}")
        cells.append(f"<tr><td>{html.escape(label, quote=False)}</td><td>{where}</td><td>{tokens}</td><td>{margin}</td>"
                     f"<td style='color:{COLORS[verdict]};font-weight:bold'>{html.escape(text, quote=False)}</td></tr>")
    head = ("<tr><th>run</th><th>first divergence</th><th>expected &rarr; got</th><th>target top-2 margin</th>"
            "<th>verdict</th></tr>")
    return (f"<table class='ddtree-divergences'>{head}{''.join(cells)}</table>"
            f"<p class='ddtree-note'>A margin within {TIE_ULPS:g} ulps of the top-1 logit is a precision tie.</p>")


class DivergenceTable(widgets.HTML):
    """divergence_html as a notebook widget."""

    def __init__(self, rows: list[tuple[str, Divergence | None]], decode=None):
        super().__init__(divergence_html(rows, decode))
