"""The single-purpose views: TreeView, LogWeightView, MaskView, DraftView, PathView. Each is an ipywidgets box with
`.show(...)` taking plain records (or a VerifyBatch); the figures come from the pure modules beside this one.

Linked views: every view reports the node under the mouse and the node clicked (`observe_nodes(callback)`, called
with ("hover" | "select", node or None)) and marks a node another view reports (`highlight(node)`); the Explorer
wires them together.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import plotly.graph_objects as go

from ddtree.batch import VerifyBatch
from ddtree.record import RoundRecord
from ddtree.widgets.figures import colour_key_html, draft_html, logweight_figure, path_html
from ddtree.widgets.masks import (batch_figure, batch_grid, batch_labels, batch_of, count_disagreeing,
                                  highlight_shapes, legend_html, mask_figure, mask_grid, row_labels)
from ddtree.widgets.nodes import (ACCEPT_COLOR, BONUS_COLOR, DIVERGE_COLOR, HOVER_COLOR, PAD_COLOR, SELECT_COLOR,
                                  describe_line, node_infos, pick_request)
from ddtree.widgets.svgpane import HtmlPane, SvgPane
from ddtree.widgets.treegraph import has_dot, tree_figure, tree_svg

RENDERERS = ("graphviz", "plotly")
EMPTY = "<i style='color:#999'>no round yet</i>"


class FigureSlot(widgets.VBox):
    """Holds one plotly FigureWidget and updates it in place: show(fig) replaces its traces and layout.

    (A FigureWidget's own in-place restyle with overwrite, made before the widget is first displayed inside a box,
    leaves the front-end copy of its data inconsistent in plotly 6+/anywidget; replacing the traces and re-syncing
    the widget's data/layout traits keeps it right, and a new widget per update would resend plotly's ~5 MB
    front-end module every time. Small linked-view marks (`mark`) are sent as plain restyle/relayout messages.)"""

    def __init__(self):
        self.figure = go.FigureWidget()
        super().__init__([self.figure])

    def show(self, fig: go.Figure) -> go.FigureWidget:
        w = self.figure
        with w.batch_update():
            w.data = ()
            w.add_traces(fig.data)
            w.layout = fig.layout
        w._widget_data = _copy(w._data)  # the state a view rendered later starts from
        w._widget_layout = _copy(w._layout_obj._props)
        return w


def _copy(x):
    """A copy of nested dicts and lists sharing their arrays (plotly replaces arrays, it never edits them in place;
    a deep copy of a hover-text array would copy every string)."""
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_copy(v) for v in x]
    return x


class Linked:
    """Node events for linked views: observe_nodes(callback) -> callback(kind, node) on "hover" / "select"."""

    def observe_nodes(self, callback) -> None:
        self.__dict__.setdefault("_node_callbacks", []).append(callback)

    def _emit(self, kind: str, node: int | None) -> None:
        for callback in self.__dict__.get("_node_callbacks", []):
            callback(kind, node)


def toggle(description: str, value: bool = False, tooltip: str = "") -> widgets.ToggleButton:
    """A ToggleButton whose on state is unmistakable: a checked box icon and a filled colour."""
    w = widgets.ToggleButton(value=value, description=description, tooltip=tooltip,
                             layout=widgets.Layout(width="auto"))
    w.add_class("ddtree-toggle")

    def restyle(_=None):
        w.icon, w.button_style = ("check-square", "info") if w.value else ("square-o", "")
    w.observe(restyle, "value")
    restyle()
    return w


def _node_of(name: str) -> int | None:
    return int(name[1:]) if name.startswith("n") and name[1:].isdigit() else None


class TreeView(Linked, widgets.VBox):
    """The drafted tree of one request: graphviz SVG when `dot` exists (fit to width, zoom, pan, scroll to the
    accepted path), else a plotly layout (the header says which). Hover a node for its path and probabilities;
    click one to pin (and mark) it; the line below the tree describes the pinned node."""

    def __init__(self, record: RoundRecord | None = None, *, request: int = 0, renderer: str | None = None,
                 height: int = 440, label: str = "", legend: bool = True):
        renderer = renderer or ("graphviz" if has_dot() else "plotly")
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS} or None, got {renderer!r}")
        if renderer == "graphviz" and not has_dot():
            raise ValueError("renderer='graphviz' needs the graphviz `dot` binary on PATH (apt-get install graphviz)")
        self.renderer, self.label, self.legend = renderer, label, legend
        self.header = widgets.HTML()
        self.details = widgets.HTML(EMPTY)
        self.details.add_class("ddtree-details")
        if renderer == "graphviz":
            self.pane = SvgPane(height=height)
            self.pane.observe(lambda change: self._clicked(change["new"]), "clicked")
            self.pane.observe(lambda change: self._emit("hover", self._node(change["new"])), "hovered")
        else:
            self.pane = FigureSlot()
        self.record, self.request, self.infos = None, request, []
        self.selected = self.hovered = self.diverge = None
        super().__init__([self.header, self.pane, self.details])
        self.add_class("ddtree-tree-view")
        if record is not None:
            self.show(record, request)

    def show(self, record: RoundRecord, request: int | None = None, *, label: str | None = None) -> None:
        req = pick_request(record, self.request if request is None else request)
        self.record, self.request = record, self.request if request is None else request
        self.label = self.label if label is None else label
        self.infos = node_infos(req)
        self.selected = self.hovered = self.diverge = None
        how = "graphviz" if self.renderer == "graphviz" else "plotly layout" + \
            ("" if has_dot() else " (graphviz `dot` not found)")
        pad = len(req.input_ids) - req.n_nodes
        who = f"request {self.request}, " if len(record.requests) > 1 else ""
        swatch = "<span style='display:inline-block;width:11px;height:9px;border:{};background:{}'></span>".format
        key = (f"{swatch(f'2px solid {ACCEPT_COLOR}', '#fff')} accepted "
               f"{swatch('2px dashed #31a354', BONUS_COLOR)} bonus {swatch('1px solid #999', PAD_COLOR)} padding "
               f"{swatch(f'3px solid {SELECT_COLOR}', '#fff')} pinned {swatch(f'3px solid {HOVER_COLOR}', '#fff')} "
               f"linked {swatch(f'3px dashed {DIVERGE_COLOR}', '#fff') + ' walks part' if self.label else ''} "
               "<span style='color:#636363'>· "
               "hover for details, click to pin, drag to pan, ctrl+wheel to zoom</span>") if self.legend else ""
        self.header.value = (
            f"<div style='font-size:12px;line-height:1.5'>{self.label}<b>tree</b>, {who}round {record.index} "
            f"({html.escape(record.method)}, {req.n_nodes} nodes{f', {pad} padding rows' if pad else ''}; {how}) "
            f"{colour_key_html(req)} {key}</div>")
        if self.renderer == "graphviz":
            self.pane.marks = {}
            self.pane.svg = tree_svg(req)
            self.pane.walk = [f"n{i}" for i in req.accepted] + ["bonus"]
        else:
            w = self.pane.show(tree_figure(req))
            w.data[2].on_click(lambda trace, points, state: points.point_inds and self.select(points.point_inds[0]))
            w.data[2].on_hover(lambda trace, points, state: points.point_inds and
                               self._emit("hover", points.point_inds[0]))
        last = self.infos[req.accepted[-1]]
        self.details.value = self._line(last, "last accepted node; click a node to pin it")

    def select(self, node: int | None) -> None:
        """Pin node `node` (marked, described below the tree, reported to linked views); None unpins."""
        if node is not None and (isinstance(node, bool) or not isinstance(node, int) or
                                 not 0 <= node < len(self.infos)):
            raise ValueError(f"node must be a node index in [0, {len(self.infos)}) or None, got {node!r}")
        self.selected = node
        if node is not None:
            self.details.value = self._line(self.infos[node], "pinned")
        self._marks()
        self._emit("select", node)

    def highlight(self, node: int | None) -> None:
        """Mark `node` as the linked (hovered elsewhere) node; None clears it."""
        self.hovered = node if node is not None and 0 <= node < len(self.infos) else None
        self._marks()

    def mark_divergence(self, node: int | None) -> None:
        """Mark where this tree's walk parts from another's (side by side)."""
        self.diverge = node
        self._marks()

    @property
    def stage(self) -> str:
        return self.pane.stage if self.renderer == "graphviz" else ""

    @stage.setter
    def stage(self, value: str) -> None:
        if self.renderer == "graphviz":
            self.pane.stage = value

    def _marks(self) -> None:
        marks = {}
        for node, cls in ((self.diverge, "ddtree-diverge"), (self.selected, "ddtree-selected"),
                          (self.hovered, "ddtree-hover")):
            if node is not None:
                marks[f"n{node}"] = (marks.get(f"n{node}", "") + " " + cls).strip()
        if self.renderer == "graphviz":
            self.pane.marks = marks
        elif self.pane.figure.data:
            ring = self.pane.figure.data[5]
            nodes = self.pane.figure.data[2]
            pick = [n for n in (self.selected, self.hovered) if n is not None]
            ring.x, ring.y = [nodes.x[n] for n in pick], [nodes.y[n] for n in pick]

    def _node(self, name: str) -> int | None:
        node = _node_of(name)
        return node if node is not None and node < len(self.infos) else None

    def _clicked(self, name: str) -> None:
        node = self._node(name)
        if node is not None:
            self.select(node)

    @staticmethod
    def _line(node, why: str) -> str:
        return (f"<div style='font:11px monospace;white-space:nowrap;overflow:hidden;text-overflow:ellipsis' "
                f"title='{html.escape(describe_line(node))}'><b>{why}</b>: {html.escape(describe_line(node))}</div>")


class LogWeightView(Linked, widgets.VBox):
    """Node log-weights by depth and rank (colour bar = the tree's colour key) with the target's probability of
    each node as a stem directly below it; hover or click a point to link it."""

    def __init__(self, record: RoundRecord | None = None, *, request: int = 0, width: int = 700, height: int = 330):
        self.slot = FigureSlot()
        self.size, self.points = (width, height), {}
        super().__init__([self.slot])
        self.add_class("ddtree-logweight-view")
        if record is not None:
            self.show(record, request)

    def show(self, record: RoundRecord, request: int = 0) -> None:
        req = pick_request(record, request)
        fig = logweight_figure(req, title=f"node log-weights and target probabilities, round {record.index} "
                                          f"({req.n_nodes - 1} draft nodes)", width=self.size[0], height=self.size[1])
        w = self.slot.show(fig)
        nodes, _, target = w.data[:3]
        self.points = {i: (x, y, p) for i, x, y, p in zip(nodes.customdata, nodes.x, nodes.y, target.y)}
        for trace in (w.data[0], w.data[2]):
            trace.on_click(lambda tr, points, state: self._point("select", tr, points))
            trace.on_hover(lambda tr, points, state: self._point("hover", tr, points))
            trace.on_unhover(lambda tr, points, state: self._emit("hover", None))

    def highlight(self, node: int | None) -> None:
        """Ring node `node`'s log-weight point and its target-probability stem; None clears them."""
        w = self.figure
        if len(w.data) < 5:
            return
        x, y, p = self.points.get(node, (None, None, None))
        with w.batch_update():
            w.data[3].x, w.data[3].y = ([x], [y]) if x is not None else ([], [])
            w.data[4].x, w.data[4].y = ([x], [p]) if x is not None else ([], [])

    def _point(self, kind: str, trace, points) -> None:
        if points.point_inds:
            self._emit(kind, int(trace.customdata[points.point_inds[0]]))

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure


class MaskView(Linked, widgets.VBox):
    """The verify attention mask as a heatmap. Source: a RoundRecord (its padded batch, accepted rows outlined)
    or a VerifyBatch. Toggles: diff against the expected ancestor mask (missing cells dark red, extra cells amber,
    both counted), expanding the collapsed prefix band, and (batches) the whole padded batch as the kernel reads it:
    every request block, padding rows, mask_indptr offsets and the flat buffer. `applied` (one `[q, seq_len + q]`
    bool mask per request, e.g. probed from a kernel; for a record, its `kernel.applied` when it has one) replaces the
    masks read from the flat buffer."""

    def __init__(self, source: RoundRecord | VerifyBatch | None = None, *, request: int = 0, diff: bool = False,
                 expand_prefix: bool = False, whole_batch: bool = False, applied=None, width: int = 560,
                 height: int = 520):
        self.selector = widgets.Dropdown(description="request", layout=widgets.Layout(width="440px"))
        self.whole = toggle("whole batch", whole_batch, "every request block of the padded batch as the kernel "
                            "reads it, with mask_indptr offsets and the flat buffer")
        self.diff = toggle("diff vs expected", diff, "colour every cell where the applied mask differs from the "
                           "expected ancestor mask: missing (dark red) and extra (amber)")
        self.expand = toggle("expand prefix", expand_prefix, "show the committed-prefix columns instead of one band")
        self.count = widgets.HTML()
        self.slot = FigureSlot()
        self.size, self.applied, self.outline_accepted = (width, height), None, True
        self.record, self.batch, self.counts, self.highlighted, self._quiet = None, None, [], None, False
        self.ids: list[int] = []  # batch row -> the request's index in the session's batch
        self.controls = widgets.HBox([self.selector, self.whole, self.diff, self.expand],
                                     layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__([self.controls, self.count, self.slot])
        self.add_class("ddtree-mask-view")
        for w in (self.selector, self.diff, self.expand, self.whole):
            w.observe(lambda change: self._quiet or self._draw(), "value")
        if source is not None:
            self.show(source, request, applied=applied)

    def show(self, source: RoundRecord | VerifyBatch, request: int = 0, *, applied=None) -> None:
        if isinstance(source, RoundRecord):  # the requests that took part (Session.run leaves finished ones out)
            source.request(request)
            ids, record = source.took_part, source.present()
            request, batch = ids.index(request), batch_of(record)
            if applied is None:  # a record may carry the masks its kernel applied (probed on the native engine)
                applied = getattr(getattr(record, "kernel", None), "applied", None)
        elif isinstance(source, VerifyBatch):
            record, batch = None, source
            ids = list(range(batch.batch_size))
        else:
            raise ValueError(f"source must be a RoundRecord or a VerifyBatch, got {type(source).__name__}")
        if isinstance(request, bool) or not isinstance(request, int) or not 0 <= request < batch.batch_size:
            raise ValueError(f"request must be in [0, {batch.batch_size}), got {request!r}")
        if applied is not None and len(applied) != batch.batch_size:
            raise ValueError(f"applied must hold one mask per request ({batch.batch_size}), got {len(applied)}")
        self.record, self.batch, self.applied, self.ids = record, batch, applied, ids
        b = batch
        self.counts = [count_disagreeing(b, k, None if applied is None else applied[k]) for k in range(b.batch_size)]
        options = [(f"request {ids[k]}: {int(b.n_nodes[k])} nodes, {b.rows(k)} rows, prefix {int(b.seq_lens[k])}"
                    + (f", {self.counts[k]} bad cells" if b.batch_size > 1 else ""), k) for k in range(b.batch_size)]
        self._quiet = True
        try:
            self.selector.options, self.selector.value = options, request
        finally:
            self._quiet = False
        self.selector.disabled = b.batch_size == 1
        self.whole.layout.display = "none" if b.batch_size == 1 else ""
        self._draw()

    @property
    def grid(self):
        b = self.selector.value
        return mask_grid(self.batch, b, diff=self.diff.value, expand_prefix=self.expand.value,
                         applied=None if self.applied is None else self.applied[b])

    def outline(self, accepted: bool) -> None:
        """Outline the accepted rows or not (the Explorer's story outlines them from the walk on)."""
        if accepted != self.outline_accepted:
            self.outline_accepted = accepted
            self._draw()

    def highlight(self, node: int | None) -> None:
        """Mark query row `node` and its key column (the linked node); None clears the mark."""
        self.highlighted = node
        if self.batch is None or not self.figure.data:
            return
        base = [s for s in self.figure.layout.shapes if s.name != "highlight"]
        self.figure.layout.shapes = base + highlight_shapes(self._grid, node, offset=self._offset)

    def _draw(self) -> None:
        if self.batch is None:
            return
        batch, b, diff = self.batch, self.selector.value, self.diff.value
        whole = self.whole.value and batch.batch_size > 1
        self.expand.disabled = whole
        rec = self.record
        where = f"round {rec.index}" if rec is not None else f"{batch.layout} batch"
        total = f"; whole batch: {sum(self.counts)}" if batch.batch_size > 1 else ""
        if whole:
            bgrid = batch_grid(batch, diff=diff, applied=self.applied)
            labels = [row_labels(rec, k) if rec is not None else batch_labels(batch, k)
                      for k in range(batch.batch_size)]
            accepted = [r.accepted for r in rec.requests] if rec is not None and self.outline_accepted else None
            fig = batch_figure(bgrid, batch, labels=labels, diff=diff, accepted=accepted,
                               title=f"the whole padded batch as the kernel reads it, {where}",
                               width=self.size[0], height=self.size[1])
            self._grid, self._offset, grids = bgrid.grids[b], bgrid.offsets[b], bgrid.grids
        else:
            grid = self.grid
            accepted = rec.requests[b].accepted if rec is not None and self.outline_accepted else []
            labels = row_labels(rec, b) if rec is not None else batch_labels(batch, b)
            who = f", request {self.ids[b]}" if batch.batch_size > 1 or rec is None else ""
            fig = mask_figure(grid, title=f"verify mask the kernel applies, {where}{who}", accepted=accepted,
                              row_labels=labels, diff=diff, width=self.size[0], height=self.size[1])
            self._grid, self._offset, grids = grid, 0, [grid]
        missing, extra = sum(g.missing for g in grids), sum(g.extra for g in grids)
        bad = missing + extra
        color = "#b2182b" if bad else "#31a354"
        self.count.value = (f"<span style='font-size:12px'><span style='color:{color}'><b>{bad}</b> cells disagree "
                            f"with the expected ancestor mask</span> ({missing} missing, {extra} extra){total}; layout "
                            f"{batch.layout}, mask_indptr {batch.mask_indptr[b].item()}, written at "
                            f"{batch.written_indptr[b].item()}</span>{legend_html(grids, diff=diff)}")
        w = self.slot.show(fig)
        for trace in w.data[:2]:
            if trace.type == "heatmap":
                trace.on_click(lambda tr, points, state: self._cell("select", points))
                trace.on_hover(lambda tr, points, state: self._cell("hover", points))
        if self.highlighted is not None:
            self.highlight(self.highlighted)

    def _cell(self, kind: str, points) -> None:
        if not points.point_inds or self._grid.pooled[0] != 1:
            return
        ind = points.point_inds[0]
        row = (ind[0] if isinstance(ind, (list, tuple)) else ind) - self._offset
        if 0 <= row < self._grid.n_tree:
            self._emit(kind, row)

    @property
    def figure(self) -> go.FigureWidget:
        return self.slot.figure


class DraftView(Linked, widgets.VBox):
    """The drafter's candidates per depth before the heap chose (draft_html), with the linked node's path marked."""

    def __init__(self, record: RoundRecord | None = None, *, request: int = 0, height: int = 0):
        self.pane = HtmlPane(height=height)
        self.req = None
        super().__init__([self.pane])
        self.add_class("ddtree-draft-view")
        if record is not None:
            self.show(record, request)

    def show(self, record: RoundRecord, request: int = 0) -> None:
        self.req = pick_request(record, request)
        self.pane.marks = []
        self.pane.html = draft_html(self.req)

    def highlight(self, node: int | None) -> None:
        """Mark the (depth, rank) cell of every node on `node`'s path; None clears them."""
        if self.req is None or node is None or not 0 <= node < self.req.n_nodes:
            self.pane.marks = []
            return
        tree = self.req.tree
        self.pane.marks = [f"d{int(tree.depths[i])}r{int(tree.ranks[i])}" for i in tree.path(node)[1:]]


class PathView(Linked, widgets.VBox):
    """The committed text so far: each round's span underlined in the colour of its acceptance length (hover for
    details), the prompt folded, the view scrolled to the current round, whose tokens link to their tree nodes."""

    def __init__(self, records: list[RoundRecord] = (), *, prompt_text: str = "", height: int = 300):
        self.pane = HtmlPane(html=EMPTY, height=height)
        self.pane.observe(lambda change: self._emit("hover", _node_of(change["new"])), "hovered")
        self.pane.observe(lambda change: _node_of(change["new"]) is not None and
                          self._emit("select", _node_of(change["new"])), "clicked")
        self.prompt_text, self.req = prompt_text, None
        super().__init__([self.pane])
        self.add_class("ddtree-path-view")
        if records:
            self.show(records)

    def show(self, records: list[RoundRecord], *, current: int | None = None, request: int = 0,
             pending: bool = False) -> None:
        records = list(records)
        if not all(isinstance(r, RoundRecord) for r in records):
            raise ValueError("records must be a list of RoundRecord")
        now = [r for r in records if r.index == current]
        self.req = now[-1].requests[request] if now else None
        self.pane.marks = []
        self.pane.html = path_html(records, prompt_text=self.prompt_text, request=request, current=current,
                                   pending=pending) if records else EMPTY

    def highlight(self, node: int | None) -> None:
        """Mark the current round's committed tokens on `node`'s path; None clears them."""
        if self.req is None or node is None or not 0 <= node < self.req.n_nodes:
            self.pane.marks = []
            return
        accepted = set(self.req.accepted[1:])
        self.pane.marks = [f"n{i}" for i in self.req.tree.path(node) if i in accepted]
