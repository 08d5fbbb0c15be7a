"""The verify attention mask of one request, or of a whole padded batch, as category grids and plotly heatmaps (no
widget imports).

Columns: the committed prefix (collapsed into one band, or expanded), then the draft block. Rows: the request's query
rows. The applied mask (`got`) comes from one place: the `applied` argument when given (e.g. a mask probed from a
kernel), else the flat buffer read as the backend reads it (read_block). In diff mode every cell where it differs
from the expected ancestor mask (ddtree.expected_mask) takes one of two colours, so the expected pattern stays
readable under the diff: missing (expected visible, applied hidden: dark red) and extra (expected hidden, applied
visible: light amber).
Pooling never hides a fault: a collapsed prefix band (or a pooled group of prefix columns) is 'visible' only when
every cell in it is visible; a mixed one is 'partial', and the band's hover says how many columns each row sees.
Grids larger than max_rows x max_cols are max-pooled by category priority (missing > extra > partial > visible >
padding > hidden), so a 1024 x 32k mask draws fast and a wrong cell survives pooling.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ddtree.batch import VerifyBatch, expected_mask, pack_verify_batch
from ddtree.record import RoundRecord
from ddtree.text import shorten, visible_whitespace
from ddtree.widgets.nodes import ACCEPT_COLOR, HOVER_COLOR

HIDDEN, PAD_HIDDEN, PAD_VISIBLE, VISIBLE, PARTIAL, EXTRA, MISSING = range(7)  # pooling keeps the highest
CATEGORY_NAMES = ("hidden", "padding, hidden", "padding, visible", "visible", "prefix: some columns hidden",
                  "extra: should be hidden", "missing: should be visible")
CATEGORY_COLORS = ("#ffffff", "#eeeeee", "#969696", "#3182bd", "#b2abd2", "#fec44f", "#b2182b")
MAX_ROWS, MAX_COLS, MAX_PREFIX_COLS = 512, 512, 256
HOVER_CELLS = 20_000  # per-cell hover words up to this many draft cells (the JSON grows with every cell)
LABEL_WIDTH = 8


@dataclass(frozen=True)
class MaskGrid:
    z: np.ndarray  # [R, C] uint8 categories (pooled)
    prefix_cols: int  # the first prefix_cols columns of z are the prefix (1 when collapsed, 0 without a prefix)
    col_edges: np.ndarray  # [C + 1] request column where each z column starts: prefix 0..seq_len, then the draft
    row_edges: np.ndarray  # [R + 1] query row where each z row starts
    prefix_seen: np.ndarray  # [R] prefix columns the (least seeing pooled) row may attend to
    seq_len: int
    rows: int  # q: the request's query rows
    n_tree: int  # real tree nodes (rows/cols >= n_tree are padding)
    disagree: int  # cells where applied != expected (exact, before pooling)
    missing: int  # expected visible, applied hidden
    extra: int  # expected hidden, applied visible
    pooled: tuple[int, int, int]  # pooling factors: rows, prefix columns, draft columns

    @property
    def collapsed(self) -> bool:
        return self.prefix_cols == 1 and self.pooled[1] == self.seq_len


def batch_of(record: RoundRecord) -> VerifyBatch:
    """The verify batch a round's requests were packed into, rebuilt from the record: in the layout the kernel read
    (a native-engine round with attention="custom_mask" carries it in record.kernel), else padded. Requests that had
    finished (None) are left out: batch row k is request record.took_part[k]."""
    kernel = record.kernel
    layout = kernel.mask_layout if kernel is not None and kernel.custom_mask is not None else "padded"
    requests = [r for r in record.requests if r is not None]
    return pack_verify_batch([r.tree for r in requests], [r.context_len for r in requests],
                             record.num_draft_tokens, layout=layout)


def read_block(batch: VerifyBatch, b: int) -> np.ndarray:
    """`[q_b, seq_len_b + q_b]` bool: request b's mask as the backend reads it (as ddtree.effective_mask: from
    mask_indptr[b] at row width seq_len_b + q_b, False past the buffer's end), by slicing instead of gathering."""
    q, width = batch.rows(b), int(batch.seq_lens[b]) + batch.rows(b)
    start, flat = int(batch.mask_indptr[b]), batch.custom_mask.numpy()
    cells = np.zeros(q * width, dtype=bool)
    inside = flat[start:start + q * width]
    cells[:inside.size] = inside
    return cells.reshape(q, width)


def applied_mask(batch: VerifyBatch, b: int, applied=None) -> np.ndarray:
    """`[q_b, seq_len_b + q_b]` bool: the mask request b's rows got: `applied` when given (checked), else read_block."""
    if applied is None:
        return read_block(batch, b)
    shape = (batch.rows(b), int(batch.seq_lens[b]) + batch.rows(b))
    got = applied.cpu().numpy() if hasattr(applied, "cpu") else np.asarray(applied)
    if got.shape != shape or got.dtype != bool:
        raise ValueError(f"applied must be a bool array of shape [q, seq_len + q] = {list(shape)} for request {b}, "
                         f"got {got.dtype} {list(got.shape)}")
    return got


def count_disagreeing(batch: VerifyBatch, b: int, applied=None) -> int:
    """Cells of request b where the applied mask differs from the expected one (as ddtree.check_verify_batch)."""
    return int(np.count_nonzero(expected_mask(batch, b).numpy() != applied_mask(batch, b, applied)))


def mask_grid(batch: VerifyBatch, b: int, *, diff: bool = False, expand_prefix: bool = False, applied=None,
              max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS, max_prefix_cols: int = MAX_PREFIX_COLS) -> MaskGrid:
    """Categories of request b's applied mask (`applied  # [q, seq_len + q]` bool, default read_block); diff=True
    colours every cell that differs from the expected ancestor mask as missing or extra."""
    if not isinstance(batch, VerifyBatch):
        raise ValueError(f"batch must be a VerifyBatch, got {type(batch).__name__}")
    if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < batch.batch_size:
        raise ValueError(f"b must be a request index in [0, {batch.batch_size}), got {b!r}")
    seq_len, q, n = int(batch.seq_lens[b]), batch.rows(b), int(batch.n_nodes[b])
    want, got = expected_mask(batch, b).numpy(), applied_mask(batch, b, applied)  # [q, seq_len + q] bool each
    wrong = want != got
    disagree = int(np.count_nonzero(wrong))
    missing = int(np.count_nonzero(wrong & want)) if disagree else 0
    cat = got.astype(np.uint8) * np.uint8(VISIBLE)  # [q, seq_len + q]
    for part, seen in ((cat[n:], got[n:]), (cat[:n, seq_len + n:], got[:n, seq_len + n:])):  # padding rows, cols
        part[...] = np.where(seen, PAD_VISIBLE, PAD_HIDDEN)
    if diff and disagree:
        cat[wrong & want] = MISSING
        cat[wrong & ~want] = EXTRA
    fr, fd = -(-q // max_rows), -(-q // max_cols)
    fp = (-(-seq_len // max_prefix_cols) if expand_prefix else seq_len) if seq_len else 1
    prefix = _band_pool(cat[:, :seq_len], got[:, :seq_len], fp)  # [q, prefix_cols]
    draft = _pool(cat[:, seq_len:], 1, fd)  # [q, ceil(q / fd)]
    z = _pool(np.concatenate([prefix, draft], 1), 0, fr)
    seen = got[:, :seq_len].sum(1)  # [q]
    prefix_seen = -_pool(-seen[:, None].astype(np.int64), 0, fr)[:, 0] if fr > 1 else seen
    return MaskGrid(z=z, prefix_cols=prefix.shape[1],
                    col_edges=np.concatenate([_edges(seq_len, fp)[:-1] if seq_len else [], seq_len + _edges(q, fd)]),
                    row_edges=_edges(q, fr), prefix_seen=prefix_seen, seq_len=seq_len, rows=q, n_tree=n,
                    disagree=disagree, missing=missing, extra=disagree - missing, pooled=(fr, fp, fd))


def _edges(size: int, factor: int) -> np.ndarray:
    return np.minimum(np.arange(0, size + factor, factor), size)[:-(-size // factor) + 1]


def _band_pool(cat: np.ndarray, seen: np.ndarray, factor: int) -> np.ndarray:
    """Pool prefix columns by `factor`: the highest category, but 'partial' where a group mixes seen and unseen
    cells (the prefix is fully visible in the expected mask, so a mixed group is always a fault)."""
    if cat.shape[1] == 0:
        return cat
    pooled = _pool(cat, 1, factor)
    mixed = _pool(seen, 1, factor) & _pool(~seen, 1, factor)
    pooled[mixed & (pooled < PARTIAL)] = PARTIAL
    return pooled


def _pool(x: np.ndarray, axis: int, factor: int) -> np.ndarray:
    """Max-pool `x  # [R, C]` along `axis` by `factor` (the last bin may be short)."""
    if factor <= 1:
        return x
    size = x.shape[axis]
    bins = -(-size // factor)
    pad = [(0, 0), (0, 0)]
    pad[axis] = (0, bins * factor - size)
    x = np.pad(x, pad)
    return x.reshape(bins, factor, x.shape[1]).max(1) if axis == 0 else x.reshape(x.shape[0], bins, factor).max(2)


# ------------------------------------------------------------------------------------------------- labels
def node_labels(ids, positions, n_tree: int, texts: dict[int, str] | None = None) -> list[str]:
    """One label per query row: `index 'token' @position` ('pad' for padding rows; the token id without texts),
    html-escaped without quotes (plotly reads labels as HTML and decodes only &amp; &lt; &gt; and numeric entities)."""
    out = []
    for i, (t, p) in enumerate(zip(ids, positions)):
        if i >= n_tree:
            out.append(f"{i} pad @{p}")
        elif texts is not None and t in texts:
            out.append(f"{i} '{html.escape(shorten(visible_whitespace(texts[t]), LABEL_WIDTH), quote=False)}' @{p}")
        else:
            out.append(f"{i} id {t} @{p}")
    return out


def row_labels(record: RoundRecord, b: int) -> list[str]:
    """Query-row labels of a recorded request (token text and position)."""
    req = record.request(b)
    return node_labels(req.input_ids, req.positions, req.n_nodes, req.token_texts)


def batch_labels(batch: VerifyBatch, b: int) -> list[str]:
    """Query-row labels of request b of a batch (token ids and positions)."""
    rows = slice(int(batch.qo_indptr[b]), int(batch.qo_indptr[b + 1]))
    return node_labels(batch.input_ids[rows].tolist(), batch.positions[rows].tolist(), int(batch.n_nodes[b]))


def _bin_labels(edges: np.ndarray, labels: list[str] | None, what: str) -> list[str]:
    """Category labels of pooled bins: the row's own label when a bin holds one row."""
    out = []
    for a, z in zip(edges[:-1].tolist(), edges[1:].tolist()):
        out.append(labels[a] if labels is not None and z - a == 1 else f"{what} {a}" if z - a == 1
                   else f"{what} {a}–{z - 1}")
    return out


# ------------------------------------------------------------------------------------------------- figures
def mask_figure(grid: MaskGrid, *, title: str = "", accepted: list[int] = (), row_labels: list[str] | None = None,
                diff: bool = False, width: int = 560, height: int = 520) -> go.Figure:
    """Heatmap of a MaskGrid: the prefix (one band, or its columns) on the left axis, the draft block on the right
    (x2), both sharing the query rows (categories named by `row_labels`, one per row: token text and position). Traces,
    in order: prefix heatmap (absent without a prefix), draft heatmap (legend_html draws the colour key). Layout
    shapes: the padding boundary (dashed) and the accepted rows (orange outlines)."""
    z, p, q, n = grid.z, grid.prefix_cols, grid.rows, grid.n_tree
    rows = _bin_labels(grid.row_edges, row_labels, "row")
    cols = _bin_labels(grid.col_edges[p:] - grid.seq_len, row_labels, "col")
    short = {c: c.rsplit(" @", 1)[0] for c in cols if " @" in c}  # column ticks without the position
    scale = [[k / (len(CATEGORY_COLORS) - 1), c] for k, c in enumerate(CATEGORY_COLORS)]
    common = dict(zmin=0, zmax=len(CATEGORY_COLORS) - 1, colorscale=scale, showscale=False, xgap=0, ygap=0)
    traces = []
    if p:
        if grid.collapsed:
            seen = grid.prefix_seen.tolist()
            band = [[f"sees {s} of {grid.seq_len} prefix columns" + (f" ({grid.seq_len - s} hidden)"
                                                                     if s < grid.seq_len else "")] for s in seen]
            traces.append(dict(type="heatmap", z=z[:, :1], x=["prefix"], y=rows, text=band, name="prefix",
                               hovertemplate=f"query %{{y}}<br>prefix: positions 0–{grid.seq_len - 1}<br>"
                                             "%{text}<extra></extra>", **common))
        else:
            centers = ((grid.col_edges[:p] + grid.col_edges[1:p + 1] - 1) / 2).tolist()
            traces.append(dict(type="heatmap", z=z[:, :p], x=centers, y=rows, name="prefix",
                               hovertemplate="query %{y}<br>prefix position %{x}<extra></extra>", **common))
    draft = z[:, p:]
    words = np.array(CATEGORY_NAMES, dtype=object)[draft] if draft.size <= HOVER_CELLS else None  # numpy: quick
    traces.append(dict(type="heatmap", z=draft, x=cols, y=rows, xaxis="x2", text=words, name="draft",
                       hovertemplate="query %{y}<br>key %{x}" + ("" if words is None else "<br>%{text}") +
                       "<extra></extra>",
                       **common))
    fr, fd = grid.pooled[0], grid.pooled[2]
    dash = dict(color="#636363", width=1.5, dash="dash")
    shapes = [dict(type="line", name="padding boundary", xref="x2", x0=(n - 0.5) / fd, x1=(n - 0.5) / fd,
                   yref="paper", y0=0, y1=1, line=dash),
              dict(type="line", name="padding boundary", xref="paper", x0=0, x1=1, yref="y", y0=(n - 0.5) / fr,
                   y1=(n - 0.5) / fr, line=dash)] if n < q else []
    shapes += [dict(type="rect", name="accepted row", xref="paper", x0=0, x1=1, yref="y", y0=r // fr - 0.5,
                    y1=r // fr + 0.5, line=dict(color=ACCEPT_COLOR, width=2)) for r in accepted]
    if diff:
        title += (f"<br><span style='color:{CATEGORY_COLORS[MISSING]}'>{grid.missing} missing</span> (should be "
                  f"visible), <span style='color:#b8860b'>{grid.extra} extra</span> (should be hidden)")
    title += "" if row_labels is None else "<br><span style='font-size:10px;color:#636363'>drag to zoom in for " \
        "every token label; double-click to zoom out</span>"
    partial = int(np.count_nonzero(grid.prefix_seen[:n] < grid.seq_len)) if p else 0
    band = (f"prefix<br>{grid.seq_len} cols" if grid.collapsed else f"prefix: {grid.seq_len} columns") + \
        (f"<br>⚠ {partial} rows see part" if partial else "")
    frac = 0.1 if grid.collapsed else 0.4 if p else 0.0
    ticks = dict(tickfont=dict(size=10), automargin=True, showgrid=False, zeroline=False)
    layout = dict(
        title=dict(text=title, font=dict(size=12), x=0.01, xanchor="left"), width=width, height=height,
        template="none", plot_bgcolor="white", hovermode="closest",
        margin=dict(l=10, r=10, t=44 + 14 * diff + 14 * (row_labels is not None), b=10),
        xaxis=dict(domain=[0, frac], title=dict(text=band, font=dict(size=10)), showticklabels=not grid.collapsed,
                   visible=bool(p), **ticks),
        xaxis2=dict(domain=[frac + 0.015 if p else 0, 1], type="category", side="bottom", labelalias=short,
                    title=dict(text=f"draft block: key column (token @position){'' if fd == 1 else ', pooled'}",
                               font=dict(size=10)), **ticks),
        yaxis=dict(type="category", autorange="reversed",
                   title=dict(text="query row" + (" (orange: accepted path)" if accepted else ""),
                              font=dict(size=10)), **ticks),
        showlegend=False, shapes=shapes)
    return go.Figure(traces, layout)


def highlight_shapes(grid: MaskGrid, node: int | None, *, offset: int = 0) -> list[dict]:
    """Layout shapes marking query row `node` and its key column (a linked-view highlight); `offset` shifts the
    row (the request's first row in a whole-batch figure)."""
    if node is None or not 0 <= node < grid.rows:
        return []
    r, c = (offset + node) // grid.pooled[0], node // grid.pooled[2]
    style = dict(line=dict(color=HOVER_COLOR, width=2), fillcolor="rgba(106,61,154,0.12)", name="highlight")
    return [dict(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=r - 0.5, y1=r + 0.5, **style),
            dict(type="rect", xref="x2", x0=c - 0.5, x1=c + 0.5, yref="paper", y0=0, y1=1, **style)]


def legend_html(grids: list[MaskGrid], *, diff: bool = False) -> str:
    """The colour key of mask figures: one swatch per category the grids show (missing and extra with their counts,
    always in diff mode)."""
    shown = set().union(*(np.unique(g.z).tolist() for g in grids)) | ({MISSING, EXTRA} if diff else set())
    counts = {MISSING: sum(g.missing for g in grids), EXTRA: sum(g.extra for g in grids)}
    items = [f"<span style='white-space:nowrap'><span style='display:inline-block;width:11px;height:11px;"
             f"vertical-align:-2px;background:{color};border:1px solid #999'></span> {name}"
             + (f" <b>{counts[k]}</b>" if k in counts and diff else "") + "</span>"
             for k, (name, color) in enumerate(zip(CATEGORY_NAMES, CATEGORY_COLORS)) if k in shown]
    return "<div class='ddtree-mask-key' style='font-size:11px;display:flex;flex-wrap:wrap;gap:2px 10px'>" + \
        "".join(items) + "</div>"


@dataclass(frozen=True)
class BatchGrid:
    grids: list[MaskGrid]  # one per request, prefix collapsed
    offsets: list[int]  # first z row of each request in the stacked figure

    @property
    def disagree(self) -> int:
        return sum(g.disagree for g in self.grids)


def batch_grid(batch: VerifyBatch, *, diff: bool = False, applied=None, max_rows: int = MAX_ROWS) -> BatchGrid:
    """Every request's grid (prefix collapsed), for the whole-batch figure; `applied` is None or one mask (or None)
    per request."""
    if applied is not None and len(applied) != batch.batch_size:
        raise ValueError(f"applied must hold one mask (or None) per request ({batch.batch_size}), got {len(applied)}")
    per = max(1, max_rows // batch.batch_size)
    grids = [mask_grid(batch, b, diff=diff, applied=None if applied is None else applied[b], max_rows=per)
             for b in range(batch.batch_size)]
    offsets = np.cumsum([0] + [g.z.shape[0] for g in grids]).tolist()
    return BatchGrid(grids=grids, offsets=offsets[:-1])


def batch_figure(bgrid: BatchGrid, batch: VerifyBatch, *, labels: list[list[str]] | None = None, diff: bool = False,
                 title: str = "", accepted: list[list[int]] | None = None, width: int = 560,
                 height: int = 560) -> go.Figure:
    """The whole padded batch as the kernel reads it: every request's block stacked (prefix band, draft block),
    padding rows grey, each block labelled with its mask_indptr (and where the packer wrote it), and below, the flat
    mask buffer: where the packer wrote each block and where the kernel read it. Traces: prefix heatmap, draft
    heatmap, the buffer's written and read bars."""
    grids, offs = bgrid.grids, bgrid.offsets
    width_q = max(g.z.shape[1] - 1 for g in grids)
    rows, band, draft, words = [], [], [], []
    for b, g in enumerate(grids):
        rows += [f"r{b} · {s}" for s in _bin_labels(g.row_edges, None if labels is None else labels[b], "row")]
        band.append(g.z[:, :1])
        d = np.full((g.z.shape[0], width_q), np.nan)
        d[:, :g.z.shape[1] - 1] = g.z[:, 1:]
        draft.append(d)
        words += [[f"request {b}: sees {s} of {g.seq_len} prefix columns"] for s in g.prefix_seen.tolist()]
    draft, band = np.concatenate(draft, 0), np.concatenate(band, 0)
    scale = [[k / (len(CATEGORY_COLORS) - 1), c] for k, c in enumerate(CATEGORY_COLORS)]
    common = dict(zmin=0, zmax=len(CATEGORY_COLORS) - 1, colorscale=scale, showscale=False, y=rows)
    traces = [dict(type="heatmap", z=band, x=["prefix"], text=words, name="prefix",
                   hovertemplate="%{y}<br>%{text}<extra></extra>", **common),
              dict(type="heatmap", z=draft, x=[str(c) for c in range(width_q)], xaxis="x2", name="draft",
                   hovertemplate="%{y}<br>key column %{x}<extra></extra>", **common)]
    read_len = [batch.rows(b) * (int(batch.seq_lens[b]) + batch.rows(b)) for b in range(batch.batch_size)]
    names = [f"r{b}" for b in range(batch.batch_size)]
    for lane, starts, lengths in (("written", batch.written_indptr[:-1].tolist(), batch.written_indptr.diff().tolist()),
                                  ("read", batch.mask_indptr[:-1].tolist(), read_len)):
        traces.append(dict(type="bar", orientation="h", y=[lane] * len(starts), x=lengths, base=starts, name=lane,
                           xaxis="x3", yaxis="y3", text=names, textposition="inside", textangle=0,
                           insidetextanchor="middle", showlegend=False,
                           marker=dict(color=[_REQUEST_COLORS[b % len(_REQUEST_COLORS)] for b in range(len(starts))],
                                       line=dict(color="#333", width=1)),
                           hovertemplate=f"{lane}: %{{text}} at %{{base}}, %{{x}} cells<extra></extra>"))
    shapes, notes = [], []
    for b, (g, o) in enumerate(zip(grids, offs)):
        if b:
            shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=o - 0.5, y1=o - 0.5,
                               line=dict(color="#000", width=2), name="request boundary"))
        read, wrote = int(batch.mask_indptr[b]), int(batch.written_indptr[b])
        moved = "" if read == wrote else f"<br><b>packer wrote at {wrote}</b>"
        bad = f"<br><span style='color:{CATEGORY_COLORS[MISSING]}'>{g.disagree} wrong</span>" if g.disagree else ""
        notes.append(dict(xref="paper", x=1.01, xanchor="left", yref="y", y=o - 0.5, yanchor="top", showarrow=False,
                          align="left", font=dict(size=10), name="request label",
                          text=f"request {b}: mask_indptr {read}{moved}<br>{g.n_tree} nodes, {g.rows} rows, "
                               f"prefix {g.seq_len}{bad}"))
        if g.n_tree < g.rows:
            r = (g.n_tree - 0.5) / g.pooled[0] + o
            shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=r, y1=r, name="padding boundary",
                               line=dict(color="#636363", width=1.5, dash="dash")))
        for a in (accepted[b] if accepted else []):
            r = o + a // g.pooled[0]
            shapes.append(dict(type="rect", name="accepted row", xref="paper", x0=0, x1=1, yref="y", y0=r - 0.5,
                               y1=r + 0.5, line=dict(color=ACCEPT_COLOR, width=1.5)))
    ticks = dict(tickfont=dict(size=9), automargin=True, showgrid=False, zeroline=False)
    layout = dict(
        title=dict(text=title, font=dict(size=12), x=0.01, xanchor="left"), width=width, height=height,
        template="none", plot_bgcolor="white", hovermode="closest", margin=dict(l=10, r=175, t=44, b=10),
        xaxis=dict(domain=[0, 0.08], showticklabels=False, title=dict(text="prefix", font=dict(size=10)), **ticks),
        xaxis2=dict(domain=[0.095, 1], type="category", title=dict(text="draft key column", font=dict(size=10)),
                    **ticks),
        yaxis=dict(domain=[0.2, 1], type="category", autorange="reversed", **ticks),
        xaxis3=dict(anchor="y3", title=dict(text="flat custom-mask buffer (cells)", font=dict(size=10)), **ticks),
        yaxis3=dict(domain=[0, 0.1], anchor="x3", **ticks),
        barmode="overlay", showlegend=False,
        shapes=shapes, annotations=notes)
    return go.Figure(traces, layout)


_REQUEST_COLORS = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")

