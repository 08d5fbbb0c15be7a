"""The verify attention mask of one request as a category grid and a plotly heatmap (no widget imports).

Columns: the committed prefix (collapsed into one band, or expanded), then the draft block at full resolution.
Rows: the request's query rows. Padding rows/columns are grey, and in diff mode every cell where the mask the
backend applies (ddtree.effective_mask, read here by slicing) differs from the expected ancestor mask
(ddtree.expected_mask) is red.
Grids larger than max_rows x max_cols are max-pooled (a red cell survives pooling), so a 1024 x 32k mask draws fast.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ddtree.batch import VerifyBatch, expected_mask, pack_verify_batch
from ddtree.record import RoundRecord
from ddtree.widgets.nodes import ACCEPT_COLOR, escape, token_text

HIDDEN, PAD_HIDDEN, PAD_VISIBLE, VISIBLE, DISAGREE = range(5)  # max-pooling keeps the highest
CATEGORY_NAMES = ("hidden", "padding, hidden", "padding, visible", "visible", "disagrees with expected")
CATEGORY_COLORS = ("#ffffff", "#eeeeee", "#969696", "#3182bd", "#e41a1c")
MAX_ROWS, MAX_COLS, MAX_PREFIX_COLS = 512, 512, 256


@dataclass(frozen=True)
class MaskGrid:
    z: np.ndarray  # [R, C] uint8 categories (pooled)
    x_edges: np.ndarray  # [C + 1] column edges: prefix at negative x (band or real columns - seq_len), draft 0..q
    y_edges: np.ndarray  # [R + 1] row edges in real rows
    seq_len: int
    rows: int  # q: the request's query rows
    n_tree: int  # real tree nodes (rows/cols >= n_tree are padding)
    disagree: int  # cells where effective != expected (exact, before pooling)
    missing: int  # expected visible, backend hides
    extra: int  # expected hidden, backend shows
    pooled: tuple[int, int, int]  # pooling factors: rows, prefix columns, draft columns


def batch_of(record: RoundRecord) -> VerifyBatch:
    """The padded verify batch a round's requests were packed into (rebuilt from the record)."""
    return pack_verify_batch([r.tree for r in record.requests], [r.context_len for r in record.requests],
                             record.num_draft_tokens)


def mask_grid(batch: VerifyBatch, b: int, *, diff: bool = False, expand_prefix: bool = False,
              max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS, max_prefix_cols: int = MAX_PREFIX_COLS) -> MaskGrid:
    """Categories of request b's mask as the backend applies it; diff=True marks disagreeing cells red."""
    if not isinstance(batch, VerifyBatch):
        raise ValueError(f"batch must be a VerifyBatch, got {type(batch).__name__}")
    if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < batch.batch_size:
        raise ValueError(f"b must be a request index in [0, {batch.batch_size}), got {b!r}")
    seq_len, q, n = int(batch.seq_lens[b]), batch.rows(b), int(batch.n_nodes[b])
    want, got = expected_mask(batch, b).numpy(), read_block(batch, b)  # [q, seq_len + q] bool each
    wrong = want != got
    disagree = int(np.count_nonzero(wrong))
    missing = int(np.count_nonzero(wrong & want)) if disagree else 0
    cat = got.astype(np.uint8) * np.uint8(VISIBLE)  # [q, seq_len + q]
    for part, seen in ((cat[n:], got[n:]), (cat[:n, seq_len + n:], got[:n, seq_len + n:])):  # padding rows, cols
        part[...] = np.where(seen, PAD_VISIBLE, PAD_HIDDEN)
    if diff and disagree:
        cat[wrong] = DISAGREE
    fr, fd = -(-q // max_rows), -(-q // max_cols)
    prefix, draft = cat[:, :seq_len], cat[:, seq_len:]  # [q, seq_len], [q, q]
    if expand_prefix and seq_len:
        fp = -(-seq_len // max_prefix_cols)
        prefix = _pool(prefix, 1, fp)
        prefix_edges = np.minimum(np.arange(0, seq_len + fp, fp), seq_len)[:prefix.shape[1] + 1] - seq_len
    else:
        fp = seq_len
        prefix = prefix.max(1, keepdims=True) if seq_len else prefix
        prefix_edges = np.array([-max(2.0, q / 8), 0.0]) if seq_len else np.zeros(1)
    draft = _pool(draft, 1, fd)
    z = _pool(np.concatenate([prefix, draft], 1), 0, fr)
    draft_edges = np.minimum(np.arange(0, q + fd, fd), q)[:draft.shape[1] + 1]
    return MaskGrid(z=z, x_edges=np.concatenate([prefix_edges[:-1], draft_edges]).astype(float),
                    y_edges=np.minimum(np.arange(0, q + fr, fr), q)[:z.shape[0] + 1].astype(float),
                    seq_len=seq_len, rows=q, n_tree=n, disagree=disagree, missing=missing, extra=disagree - missing,
                    pooled=(fr, fp, fd))


def count_disagreeing(batch: VerifyBatch, b: int) -> int:
    """Cells of request b where the backend's mask differs from the expected one (as ddtree.check_verify_batch)."""
    return int(np.count_nonzero(expected_mask(batch, b).numpy() != read_block(batch, b)))


def read_block(batch: VerifyBatch, b: int) -> np.ndarray:
    """`[q_b, seq_len_b + q_b]` bool: request b's mask as the backend reads it (as ddtree.effective_mask: from
    mask_indptr[b] at row width seq_len_b + q_b, False past the buffer's end), by slicing instead of gathering."""
    q, width = batch.rows(b), int(batch.seq_lens[b]) + batch.rows(b)
    start, flat = int(batch.mask_indptr[b]), batch.custom_mask.numpy()
    cells = np.zeros(q * width, dtype=bool)
    inside = flat[start:start + q * width]
    cells[:inside.size] = inside
    return cells.reshape(q, width)


def mask_figure(grid: MaskGrid, *, title: str = "", accepted: list[int] = (), row_labels: list[str] | None = None,
                diff: bool = False, width: int = 560, height: int = 560) -> go.Figure:
    """Heatmap of a MaskGrid. Traces, in order: the heatmap, the prefix|draft separator, the padding boundary
    (dashed), the accepted rows (orange outlines), then one legend swatch per cell category."""
    q, n = grid.rows, grid.n_tree
    x0, x1 = float(grid.x_edges[0]), float(grid.x_edges[-1])
    scale = []
    for k, color in enumerate(CATEGORY_COLORS):
        scale += [[k / len(CATEGORY_COLORS), color], [(k + 1) / len(CATEGORY_COLORS), color]]
    traces = [
        dict(type="heatmap", z=grid.z, x=grid.x_edges, y=grid.y_edges, zmin=-0.5, zmax=len(CATEGORY_COLORS) - 0.5,
                   colorscale=scale, showscale=False, name="mask",
                   hovertemplate="row %{y}<br>column %{x} (negative = prefix)<extra></extra>"),
        _lines("prefix | draft", [(0, 0, 0, q)], dict(color="#000000", width=2)),
        _lines("padding boundary", [(x0, x1, n, n), (n, n, 0, q)] if n < q else [],
               dict(color="#636363", width=1.5, dash="dash")),
        _lines("accepted rows", [seg for r in accepted for seg in ((x0, x1, r, r), (x0, x1, r + 1, r + 1),
                                                                   (x0, x0, r, r + 1), (x1, x1, r, r + 1))],
               dict(color=ACCEPT_COLOR, width=2)),
    ] + [dict(type="scatter", x=[None], y=[None], mode="markers", name=name, showlegend=True,
                    marker=dict(symbol="square", size=11, color=color, line=dict(color="#999", width=1)))
         for name, color in zip(CATEGORY_NAMES, CATEGORY_COLORS)]
    if diff:
        title += f"<br>diff: {grid.disagree} cells disagree ({grid.missing} should be visible, " \
                 f"{grid.extra} should be hidden)"
    band = "prefix (collapsed)" if grid.pooled[1] == grid.seq_len else "prefix"
    xaxis = dict(title=f"{band}: {grid.seq_len} columns  |  draft block: {q} columns", range=[x0, x1],
                 showgrid=False, zeroline=False)
    yaxis = dict(title="query row (orange = accepted path)", range=[q, 0], showgrid=False, zeroline=False,
                 automargin=True)
    labelled = row_labels is not None and q <= 80 and grid.pooled[0] == 1
    if labelled:
        yaxis.update(tickmode="array", tickvals=[r + 0.5 for r in range(q)], ticktext=row_labels,
                     tickfont=dict(size=8))
    return go.Figure(traces, dict(title=dict(text=title, font=dict(size=12), x=0.02, xanchor="left"),
                                  xaxis=xaxis, yaxis=yaxis,
                                  width=width, height=height, template="none", plot_bgcolor="white",
                                  margin=dict(l=110 if labelled else 60, r=10, t=60, b=80),
                                  legend=dict(orientation="h", y=-0.16, font=dict(size=9))))


def _lines(name: str, segments: list[tuple], line: dict) -> dict:
    """One scatter trace drawing `segments` [(x0, x1, y0, y1), ...] (None-separated)."""
    xs, ys = [], []
    for a, b, c, d in segments:
        xs += [a, b, None]
        ys += [c, d, None]
    return dict(type="scatter", x=xs, y=ys, mode="lines", line=line, name=name, showlegend=False, hoverinfo="skip")


def row_labels(record: RoundRecord, b: int) -> list[str]:
    """Query-row tick labels of a recorded request: node index and token text, 'pad' for padding rows."""
    req = record.requests[b]
    return [f"{i} '{escape(token_text(req, t)[:8])}'" if i < req.n_nodes else f"{i} pad"
            for i, t in enumerate(req.input_ids)]


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
