"""SweepView: acceptance length and tokens/s versus budget (one line per temperature) from ddtree.sweep rows."""
from __future__ import annotations

import html

import ipywidgets as widgets

from ddtree.widgets.figures import sweep_figure
from ddtree.widgets.views import FigureSlot


class SweepView(widgets.VBox):
    """`SweepView(rows)` with rows from ddtree.sweep.sweep, or `SweepView.run(pair, prompts, budgets, ...)`."""

    def __init__(self, rows: list[dict] = (), *, title: str = "budget sweep"):
        self.title = title
        self.slot = FigureSlot()
        self.table = widgets.HTML()
        self.rows: list[dict] = []
        super().__init__([self.slot, self.table])
        self.add_class("ddtree-sweep-view")
        if rows:
            self.show(rows)

    @classmethod
    def run(cls, pair, prompts, budgets, **sweep_options) -> SweepView:
        """Run ddtree.sweep.sweep (progress bars on) and show it."""
        from ddtree.sweep import sweep
        return cls(sweep(pair, prompts, budgets, **sweep_options))

    def show(self, rows: list[dict]) -> None:
        from ddtree.sweep import best_budget, summarize
        rows = list(rows)
        if not rows or not all(isinstance(r, dict) for r in rows):
            raise ValueError("rows must be a non-empty list of ddtree.sweep row dicts")
        self.rows = rows
        summary = summarize(rows)
        self.slot.show(sweep_figure(summary, title=self.title))
        best = {t: best_budget(rows, temperature=t) for t in sorted({r["temperature"] for r in summary
                                                                      if r["method"] != "ar"})}
        cols = ["method", "temperature", "budget"] + (["mean_budget"] if any("mean_budget" in r for r in summary)
                                                     else []) + ["acceptance_length", "tokens_per_second"] + \
            (["speedup"] if any("speedup" in r for r in summary) else [])
        head = "".join(f"<th style='padding:0 8px'>{c.replace('_', ' ')}</th>" for c in cols)
        body = []
        for r in summary:
            bold = r["method"] != "ar" and best.get(r["temperature"]) == r["budget"]
            cells = "".join(f"<td style='padding:0 8px;text-align:right'>{_fmt(r.get(c, ''))}</td>" for c in cols)
            body.append(f"<tr style='{'font-weight:bold;background:#fff3e0' if bold else ''}'>{cells}</tr>")
        picks = ", ".join(f"T={t:g}: budget {b}" for t, b in best.items())
        table = f"<table class='ddtree-sweep' style='font-size:12px'><tr>{head}</tr>{''.join(body)}</table>"
        self.table.value = f"<div>best budget by tokens/s (bold): {html.escape(picks)}</div>{table}"


def _fmt(v) -> str:
    return f"{v:.2f}" if isinstance(v, float) else html.escape(str(v))
