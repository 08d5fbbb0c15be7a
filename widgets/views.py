"""The single-purpose views: TreeView, LogWeightView, MaskView, PathView. Each is an ipywidgets box with
`.show(...)` taking plain records (or a VerifyBatch); the figures come from the pure modules beside this one."""
from __future__ import annotations

import copy
import html

import ipywidgets as widgets
import plotly.graph_objects as go

from ddtree.batch import VerifyBatch
from ddtree.record import RoundRecord
from ddtree.widgets.figures import logweight_figure, path_html
from ddtree.widgets.masks import batch_of, count_disagreeing, mask_figure, mask_grid, row_labels
from ddtree.widgets.nodes import describe, node_infos, pick_request
from ddtree.widgets.svgpane import SvgPane
from ddtree.widgets.treegraph import has_dot, tree_figure, tree_svg

RENDERERS = ("graphviz", "plotly")
EMPTY = "<i style='color:#999'>no round yet</i>"


class FigureSlot(widgets.VBox):
    """Holds one plotly FigureWidget and updates it in place: show(fig) replaces its traces and layout.

    (A FigureWidget's own in-place restyle with overwrite, made before the widget is first displayed inside a box,
    leaves the front-end copy of its data inconsistent in plotly 6+/anywidget; replacing the traces and re-syncing
    the widget's data/layout traits keeps it right, and a new widget per update would resend plotly's ~5 MB
    front-end module every time.)"""

    def __init__(self):
        self.figure = go.FigureWidget()
        super().__init__([self.figure])

    def show(self, fig: go.Figure) -> go.FigureWidget:
        w = self.figure
        with w.batch_update():
            w.data = ()
            w.add_traces(fig.data)
            w.layout = fig.layout
        w._widget_data = copy.deepcopy(w._data)  # the state a view rendered later starts from
        w._widget_layout = copy.deepcopy(w._layout_obj._props)
        return w


class TreeView(widgets.VBox):
    """The drafted tree of one request: graphviz SVG when `dot` exists, else a plotly layout (the header says
    which). Hover a node for its path and probabilities; click one to pin its details below the tree."""

    def __init__(self, record: RoundRecord | None = None, *, request: int = 0, renderer: str | None = None):
        renderer = renderer or ("graphviz" if has_dot() else "plotly")
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS} or None, got {renderer!r}")
        if renderer == "graphviz" and not has_dot():
            raise ValueError("renderer='graphviz' needs the graphviz `dot` binary on PATH (apt-get install graphviz)")
        self.renderer = renderer
        self.header = widgets.HTML()
        self.details = widgets.HTML(EMPTY)
        if renderer == "graphviz":
            self.pane = SvgPane()
            self.pane.observe(lambda change: self._clicked(change["new"]), "clicked")
        else:
            self.pane = FigureSlot()
        self.record, self.request, self.infos = None, request, []
        super().__init__([self.header, self.pane, self.details])
        self.add_class("ddtree-tree-view")
        if record is not None:
            self.show(record, request)

    def show(self, record: RoundRecord, request: int | None = None) -> None:
        req = pick_request(record, self.request if request is None else request)
        self.record, self.request = record, self.request if request is None else request
        self.infos = node_infos(req)
        how = "graphviz SVG" if self.renderer == "graphviz" else "plotly layout" + \
            ("" if has_dot() else " (graphviz `dot` not found)")
        pad = len(req.input_ids) - req.n_nodes
        self.header.value = (f"<b>tree, round {record.index}</b> ({record.method}, {req.n_nodes} nodes"
                             f"{f', {pad} padding rows' if pad else ''}; {how}). Colour = node log-weight "
                             "(yellow high), orange = accepted path, dashed green = bonus, grey = padding; "
                             "hover a node for details, click to pin them.")
        if self.renderer == "graphviz":
            self.pane.svg = tree_svg(req)
        else:
            nodes = self.pane.show(tree_figure(req)).data[2]
            nodes.on_click(lambda trace, points, state: points.point_inds and self.select(points.point_inds[0]))
        self.select(req.accepted[-1])

    def select(self, node: int) -> None:
        """Show node `node`'s details (its path text, draft probability per depth, target probability)."""
        if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < len(self.infos):
            raise ValueError(f"node must be a node index in [0, {len(self.infos)}), got {node!r}")
        self.details.value = f"<pre style='font-size:11px;margin:0'>{html.escape(describe(self.infos[node]))}</pre>"

    def _clicked(self, name: str) -> None:
        if name.startswith("n") and name[1:].isdigit() and int(name[1:]) < len(self.infos):
            self.select(int(name[1:]))


class LogWeightView(widgets.VBox):
    """Node log-weights by depth and rank with the target's probability of each node overlaid."""

    def __init__(self, record: RoundRecord | None = None, *, request: int = 0):
        self.slot = FigureSlot()
        super().__init__([self.slot])
        self.add_class("ddtree-logweight-view")
        if record is not None:
            self.show(record, request)

    def show(self, record: RoundRecord, request: int = 0) -> None:
        req = pick_request(record, request)
        self.slot.show(logweight_figure(req, title=f"node log-weights, round {record.index} "
                                                   f"({req.n_nodes - 1} draft nodes)"))

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure


class MaskView(widgets.VBox):
    """The verify attention mask as a heatmap. Source: a RoundRecord (its padded batch, accepted rows outlined)
    or a VerifyBatch (request selector). Toggles: diff against the expected ancestor mask (disagreeing cells
    red, counted), and expanding the collapsed prefix band."""

    def __init__(self, source: RoundRecord | VerifyBatch | None = None, *, request: int = 0, diff: bool = False,
                 expand_prefix: bool = False):
        self.selector = widgets.Dropdown(description="request", layout=widgets.Layout(width="480px"))
        self.diff = widgets.ToggleButton(value=diff, description="diff vs expected",
                                         tooltip="mark every cell where the backend's mask differs from the expected")
        self.expand = widgets.ToggleButton(value=expand_prefix, description="expand prefix",
                                           tooltip="show the committed-prefix columns instead of one band")
        self.count = widgets.HTML()
        self.slot = FigureSlot()
        self.record, self.batch, self.counts, self._quiet = None, None, [], False
        super().__init__([widgets.HBox([self.selector, self.diff, self.expand]), self.count, self.slot])
        self.add_class("ddtree-mask-view")
        for w in (self.selector, self.diff, self.expand):
            w.observe(lambda change: self._quiet or self._draw(), "value")
        if source is not None:
            self.show(source, request)

    def show(self, source: RoundRecord | VerifyBatch, request: int = 0) -> None:
        if isinstance(source, RoundRecord):
            self.record, self.batch = source, batch_of(source)
        elif isinstance(source, VerifyBatch):
            self.record, self.batch = None, source
        else:
            raise ValueError(f"source must be a RoundRecord or a VerifyBatch, got {type(source).__name__}")
        if isinstance(request, bool) or not isinstance(request, int) or not 0 <= request < self.batch.batch_size:
            raise ValueError(f"request must be in [0, {self.batch.batch_size}), got {request!r}")
        b = self.batch
        self.counts = [count_disagreeing(b, k) for k in range(b.batch_size)] if b.batch_size > 1 else []
        options = [(f"request {k}: {int(b.n_nodes[k])} nodes, {b.rows(k)} rows, prefix {int(b.seq_lens[k])}"
                    + (f", {self.counts[k]} bad cells" if self.counts else ""), k) for k in range(b.batch_size)]
        self._quiet = True
        try:
            self.selector.options, self.selector.value = options, request
        finally:
            self._quiet = False
        self.selector.disabled = b.batch_size == 1
        self._draw()

    @property
    def grid(self):
        return mask_grid(self.batch, self.selector.value, diff=self.diff.value, expand_prefix=self.expand.value)

    def _draw(self) -> None:
        if self.batch is None:
            return
        b, grid = self.selector.value, self.grid
        where = f"round {self.record.index}" if self.record is not None else f"{self.batch.layout} batch, request {b}"
        accepted = self.record.requests[b].accepted if self.record is not None else []
        labels = row_labels(self.record, b) if self.record is not None else None
        title = f"verify mask the kernel applies, {where}"
        total = f"; whole batch: {sum(self.counts)}" if self.counts else ""
        color = "#e41a1c" if grid.disagree else "#31a354"
        self.count.value = (f"<span style='color:{color}'><b>{grid.disagree}</b> cells disagree with the expected "
                            f"ancestor mask{total}</span> (layout {self.batch.layout}; mask_indptr "
                            f"{self.batch.mask_indptr[b].item()}, written at {self.batch.written_indptr[b].item()})")
        self.slot.show(mask_figure(grid, title=title, accepted=accepted, row_labels=labels, diff=self.diff.value))

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure


class PathView(widgets.VBox):
    """The committed text so far, each round's span coloured with its acceptance length."""

    def __init__(self, records: list[RoundRecord] = (), *, prompt_text: str = ""):
        self.html = widgets.HTML(EMPTY)
        self.prompt_text = prompt_text
        super().__init__([self.html])
        self.add_class("ddtree-path-view")
        if records:
            self.show(records)

    def show(self, records: list[RoundRecord], *, current: int | None = None, request: int = 0) -> None:
        records = list(records)
        if not all(isinstance(r, RoundRecord) for r in records):
            raise ValueError("records must be a list of RoundRecord")
        self.html.value = path_html(records, prompt_text=self.prompt_text, request=request, current=current) \
            if records else EMPTY
