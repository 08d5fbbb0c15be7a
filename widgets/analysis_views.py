"""Why a tree wins or loses, as views over plain records (ddtree.analysis): AcceptanceView (acceptance against
budget, per round and averaged), RankDepthView (the target token's draft rank per depth, and how often the walk
reaches each depth), CalibrationView (the drafter's reliability curve). Each is an ipywidgets box with `.show(records)`;
the figures come from analysis_figures."""
from __future__ import annotations

import html

import ipywidgets as widgets
import plotly.graph_objects as go

from ddtree.analysis import (MAX_BUDGET, RoundCounterfactual, budget_curve, calibration, counterfactuals, depth_reach,
                             rank_depth)
from ddtree.record import RoundRecord
from ddtree.widgets.analysis_figures import (acceptance_figure, calibration_figure, curve_table_html,
                                             rank_depth_figure)
from ddtree.widgets.views import FigureSlot


class AcceptanceView(widgets.VBox):
    """The acceptance DDTree would have reached at every budget 1..max_budget in each recorded round (grey), their
    mean (dashed where some rounds are estimates), the run's budget and real mean, the DFlash chain's point; pick a
    round to highlight it. A table of the mean per budget sits below."""

    def __init__(self, records: list[RoundRecord] | None = None, *, request: int | None = None, rounds=None,
                 max_budget: int = MAX_BUDGET):
        self.selector = widgets.Dropdown(description="highlight", options=[("no round", None)], value=None,
                                         layout=widgets.Layout(width="420px"))
        self.selector.observe(lambda change: self._draw(), "value")
        self.slot = FigureSlot()
        self.table = widgets.HTML()
        self.max_budget = max_budget
        self.cfs: list[RoundCounterfactual] = []
        super().__init__([self.selector, self.slot, self.table])
        self.add_class("ddtree-acceptance-view")
        if records is not None:
            self.show(records, request=request, rounds=rounds)

    def show(self, records: list[RoundRecord], *, request: int | None = None, rounds=None) -> None:
        """`rounds`: RoundRecord indices to draw (default every drafted round); every record feeds continuations."""
        self.cfs = counterfactuals(records, request=request, rounds=rounds, max_budget=self.max_budget)
        options = [("no round", None)] + [
            (f"round {cf.round}" + (f", request {cf.request}" if cf.request else "") +
             f": real {cf.real_acceptance} at {cf.method} {cf.budget}, exact to {cf.exact_budget}", k)
            for k, cf in enumerate(self.cfs)]
        with self.selector.hold_trait_notifications():
            self.selector.options, self.selector.value = options, None
        self.table.value = curve_table_html(budget_curve(self.cfs))
        self._draw()

    def _draw(self) -> None:
        if self.cfs:
            self.slot.show(acceptance_figure(self.cfs, highlight=self.selector.value))

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure


class RankDepthView(widgets.VBox):
    """Depth x rank heat map of the target token's draft rank (share per depth, or counts) beside how often the walk
    reached each depth: width helps where the target's token is often the 2nd..Kth choice."""

    def __init__(self, records: list[RoundRecord] | None = None, *, request: int | None = None, rounds=None,
                 max_rank: int = 16, normalize: bool = True):
        self.normalize = widgets.ToggleButton(value=normalize, description="share per depth",
                                              tooltip="colour by the share of the depth's rounds, or by counts")
        self.normalize.observe(lambda change: self._draw(), "value")
        self.slot = FigureSlot()
        self.note = widgets.HTML()
        self.max_rank = max_rank
        self.stats = None
        super().__init__([self.normalize, self.slot, self.note])
        self.add_class("ddtree-rank-depth-view")
        if records is not None:
            self.show(records, request=request, rounds=rounds)

    def show(self, records: list[RoundRecord], *, request: int | None = None, rounds=None) -> None:
        cfs = counterfactuals(records, request=request, rounds=rounds)
        self.stats = (rank_depth(cfs, max_rank=self.max_rank), depth_reach(cfs))
        counts = self.stats[0].counts
        top = counts[:, 0].sum().item() / max(counts.sum().item(), 1)
        width = counts[:, 1:self.max_rank + 1].sum().item() / max(counts.sum().item(), 1)
        self.note.value = (f"<span style='font-size:12px'>over {counts.sum().item()} continuation tokens: the "
                           f"drafter's first choice {top:.0%}, another kept rank {width:.0%} (what width can "
                           f"catch), not kept {counts[:, -1].sum().item() / max(counts.sum().item(), 1):.0%}"
                           "</span>")
        self._draw()

    def _draw(self) -> None:
        if self.stats is not None:
            self.slot.show(rank_depth_figure(*self.stats, normalize=self.normalize.value))

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure


class CalibrationView(widgets.VBox):
    """Reliability curve of the drafter's per-depth probabilities on the nodes whose parent the walk reached, with
    the expected calibration error; a slider sets the number of bins."""

    def __init__(self, records: list[RoundRecord] | None = None, *, request: int | None = None, bins: int = 10):
        self.bins = widgets.IntSlider(value=bins, min=2, max=40, description="bins", continuous_update=False)
        self.bins.observe(lambda change: self._draw(), "value")
        self.slot = FigureSlot()
        self.note = widgets.HTML()
        self.records, self.request = None, request
        super().__init__([self.bins, self.slot, self.note])
        self.add_class("ddtree-calibration-view")
        if records is not None:
            self.show(records, request=request)

    def show(self, records: list[RoundRecord], *, request: int | None = None) -> None:
        calibration(records, request=request)  # validates before the view changes
        self.records, self.request = list(records), request
        self._draw()

    @property
    def calibration(self):
        return calibration(self.records, request=self.request, bins=self.bins.value)

    def _draw(self) -> None:
        if self.records is None:
            return
        cal = self.calibration
        self.slot.show(calibration_figure(cal))
        over = sum(n * (p - f) for n, p, f in zip(cal.counts, cal.mean_prob, cal.frequency) if n) / cal.n
        self.note.value = html.escape(f"ECE {cal.ece:.3f} over {cal.n} nodes; the drafter is "
                                      f"{'over' if over > 0 else 'under'}confident on average by {abs(over):.3f}")

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure
