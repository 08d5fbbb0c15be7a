"""The views on a recorded trace (tests/data/trace_small.json, made by tests/data/make_trace.py) and on synthetic
batches: figures hold the expected nodes, cells and highlights. No model except where a live Session is the point."""
import html
import math
import re
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import ddtree
from ddtree.record import KernelRead
from ddtree.widgets import Explorer, LogWeightView, MaskView, PathView, TreeView
from ddtree.widgets import figures, masks, treegraph
from ddtree.widgets.nodes import ACCEPT_COLOR, node_infos, token_text
from ddtree.widgets.views import DraftView

TRACE = Path(__file__).parent / "data" / "trace_small.json"
ROUND_PADDED = 3  # the trace's round whose tree (27 nodes) is smaller than its 41 verify rows
needs_dot = pytest.mark.skipif(not treegraph.has_dot(), reason="graphviz `dot` not installed")


@pytest.fixture(scope="module")
def trace():
    return ddtree.load_trace(TRACE)


@pytest.fixture(scope="module")
def records(trace):
    return trace[0]


def test_trace_fixture_has_the_cases_the_tests_need(records):
    reqs = [r.requests[0] for r in records]
    assert [r.method for r in records] == ["ddtree"] * 4 + ["dflash", "ddtree"]
    assert all(q.acceptance_length > 2 for q in reqs[:5])  # long accepted paths to highlight
    assert len(reqs[ROUND_PADDED].input_ids) - reqs[ROUND_PADDED].n_nodes == 14
    assert records[5].verify == "sampled"


# ------------------------------------------------------------------------------------------------- node facts
def test_node_infos_match_the_record(records):
    req = records[0].requests[0]
    infos = node_infos(req)
    assert [n.index for n in infos] == list(range(req.n_nodes))
    assert {n.index for n in infos if n.accepted} == set(req.accepted)
    for n in infos[1:]:
        assert math.prod(n.draft_probs) == pytest.approx(math.exp(n.logw))  # per-depth probs multiply to the path's
        top = dict(zip(req.target_top_tokens[n.parent], req.target_top_probs[n.parent]))
        assert n.target_prob == top.get(n.token)
        assert n.path_text.endswith(n.text)


# ------------------------------------------------------------------------------------------------- tree
@needs_dot
def test_tree_svg_has_every_node_the_bonus_and_the_accepted_path(records):
    req = records[0].requests[0]
    svg = treegraph.tree_svg(req)
    assert svg.startswith("<svg")
    titles = re.findall(r"<title>([^<]+)</title>", svg)
    nodes = [t for t in titles if re.fullmatch(r"n\d+", t)]
    assert sorted(nodes, key=lambda t: int(t[1:])) == [f"n{i}" for i in range(req.n_nodes)]
    assert "bonus" in titles and f"n{req.accepted[-1]}&#45;&gt;bonus" in titles
    assert svg.count(f'stroke="{ACCEPT_COLOR}" stroke-width="3"') == len(req.accepted)  # outlined accepted nodes
    assert "path: " in svg and "draft p per depth" in svg  # hover tooltips
    # classes the pane's stages and marks style: accepted nodes and edges, the bonus node and its edge
    assert len(re.findall(r'class="node acc', svg)) == len(req.accepted)
    assert svg.count('class="edge acc"') == len(req.accepted) - 1
    assert svg.count('class="node bonus"') == 1 and svg.count('class="edge bonus"') == 1


def test_tree_dot_greys_padding_rows_and_shows_the_targets_choice(records):
    req = records[ROUND_PADDED].requests[0]
    dot = treegraph.tree_dot(req)
    assert "cluster_pad" in dot and f"pad rows {req.n_nodes}..{len(req.input_ids) - 1}" in dot
    assert "cluster_pad" not in treegraph.tree_dot(records[0].requests[0])
    arrows = [line for line in dot.splitlines() if "→" in line]
    assert len(arrows) == len(req.accepted)  # the target's choice on every visited node
    assert all('class="acc choice"' in line for line in arrows)  # the walk stage reveals these lines


def test_tree_labels_make_whitespace_visible(records):
    req = records[0].requests[0]
    node = req.accepted[1]
    token = int(req.tree.tokens[node])
    odd = replace(req, token_texts={**req.token_texts, token: "\n x"})
    assert "'\\\\n␣x'" in treegraph.tree_dot(odd)  # dot source escapes the backslash: the label reads '\n␣x'
    if treegraph.has_dot():
        assert "&#39;\\n␣x&#39;" in treegraph.tree_svg(odd)


def test_plotly_tree_fallback(records):
    req = records[ROUND_PADDED].requests[0]
    fig = treegraph.tree_figure(req)
    edges, accepted, nodes, bonus, pads, selected = fig.data
    assert len(nodes.x) == req.n_nodes
    assert len(accepted.x) == 3 * (len(req.accepted) - 1)  # one segment per accepted edge
    assert list(nodes.marker.line.color).count(ACCEPT_COLOR) == len(req.accepted)
    assert "bonus" in bonus.text[1] and len(pads.x) == 1 and "pad rows 27..40" in pads.text[0]
    assert len(selected.x) == 0
    xs, ys = treegraph.tree_layout(req)
    assert xs == [float(d) for d in req.tree.depths.tolist()]


def test_tree_view_renderers_selection_and_marks(records, monkeypatch):
    view = TreeView(records[0], renderer="plotly")
    assert "plotly layout" in view.header.value and "round 0" in view.header.value
    view.select(2)
    assert "node 2," in view.details.value and "path:" in view.details.value and "pinned" in view.details.value
    ring, nodes = view.pane.figure.data[5], view.pane.figure.data[2]
    assert list(ring.x) == [nodes.x[2]] and list(ring.y) == [nodes.y[2]]  # the selected node is marked
    with pytest.raises(ValueError, match="node"):
        view.select(99)
    with pytest.raises(ValueError, match="renderer"):
        TreeView(renderer="ascii")
    with pytest.raises(ValueError, match="request"):
        view.show(records[0], request=3)
    if treegraph.has_dot():
        g = TreeView(records[1])
        assert g.renderer == "graphviz" and "graphviz" in g.header.value and g.pane.svg.startswith("<svg")
        assert "log-weight" in g.header.value and "linear-gradient" in g.header.value  # the colour key
        events = []
        g.observe_nodes(lambda kind, node: events.append((kind, node)))
        g.pane.clicked = "n3"  # what the front end sends on a click
        assert "pinned</b>: node 3," in g.details.value and g.pane.marks == {"n3": "ddtree-selected"}
        g.pane.hovered = "n1"
        g.highlight(1)
        assert g.pane.marks == {"n3": "ddtree-selected", "n1": "ddtree-hover"}
        g.pane.hovered = ""
        assert events == [("select", 3), ("hover", 1), ("hover", None)]
        req = records[1].requests[0]
        assert g.pane.walk == [f"n{i}" for i in req.accepted] + ["bonus"]  # what the walk stage lights up
        g.show(records[2])
        assert g.pane.marks == {} and g.selected is None
    monkeypatch.setattr(treegraph.shutil, "which", lambda name: None)
    auto = TreeView(records[0])
    assert auto.renderer == "plotly" and "`dot` not found" in auto.header.value


# ------------------------------------------------------------------------------------------------- log-weights
def test_logweight_view_aligns_target_probabilities_under_their_nodes(records):
    req = records[0].requests[0]
    view = LogWeightView(records[0])
    nodes, path, target, ring, ring_p = view.figure.data
    assert list(nodes.y) == pytest.approx(req.tree.node_logws[1:].tolist())
    assert list(nodes.marker.color) == pytest.approx(req.tree.node_logws[1:].tolist())  # coloured by the key
    assert nodes.marker.colorbar.title.text.startswith("log-")
    assert len(path.x) == len(req.accepted)  # the root plus every accepted node
    assert list(target.x) == list(nodes.x) and target.yaxis == "y2"  # each stem right below its node
    for n, p in zip(node_infos(req)[1:], target.y):
        assert p == pytest.approx(n.target_prob if n.target_prob is not None else n.target_prob_bound)
    events = []
    view.observe_nodes(lambda kind, node: events.append((kind, node)))
    view.highlight(req.accepted[1])
    k = list(nodes.customdata).index(req.accepted[1])
    assert list(view.figure.data[3].x) == [nodes.x[k]] and list(view.figure.data[4].y) == [target.y[k]]
    view.highlight(None)
    assert len(view.figure.data[3].x) == 0
    view.show(records[4])
    assert len(view.figure.data[0].x) == records[4].requests[0].n_nodes - 1


# ------------------------------------------------------------------------------------------------- masks
def test_mask_grid_of_a_record_collapses_the_prefix_and_marks_padding(records):
    rec = records[ROUND_PADDED]
    req = rec.requests[0]
    q, n, ctx = len(req.input_ids), req.n_nodes, req.context_len
    grid = masks.mask_grid(masks.batch_of(rec), 0)
    assert grid.z.shape == (q, 1 + q) and grid.disagree == 0 and grid.prefix_cols == 1 and grid.collapsed
    vis = ddtree.visibility(req.tree).numpy()
    tree_block = grid.z[:n, 1:1 + n]
    assert np.array_equal(tree_block == masks.VISIBLE, vis)
    assert np.array_equal(tree_block == masks.HIDDEN, ~vis)
    assert (grid.z[:n, 0] == masks.VISIBLE).all() and (grid.z[n:, 0] == masks.PAD_VISIBLE).all()
    assert (np.diag(grid.z[n:, 1 + n:]) == masks.PAD_VISIBLE).all() and (grid.z[:n, 1 + n:] == masks.PAD_HIDDEN).all()
    assert (grid.prefix_seen == ctx).all()
    expanded = masks.mask_grid(masks.batch_of(rec), 0, expand_prefix=True)
    assert expanded.z.shape == (q, ctx + q) and expanded.prefix_cols == ctx
    assert list(expanded.col_edges[[0, ctx, -1]]) == [0, ctx, ctx + q]


def lossy(batch, b, lost_rows, lost_cols):
    """Request b's expected mask with prefix columns `lost_cols` hidden from rows `lost_rows` (a corrupted mask)."""
    got = ddtree.expected_mask(batch, b).numpy().copy()
    got[np.ix_(lost_rows, lost_cols)] = False
    return got


def test_the_collapsed_prefix_band_never_looks_complete_when_a_cell_is_missing():
    tree = ddtree.build_tree(torch.randn(5, 40, generator=torch.Generator().manual_seed(3)), 8).with_root_token(1)
    batch = ddtree.pack_verify_batch([tree], [300], 9)
    got = lossy(batch, 0, [2, 5], list(range(100, 117)))  # rows 2 and 5 lost 17 of 300 prefix columns
    plain = masks.mask_grid(batch, 0, applied=got)
    assert plain.z[2, 0] == plain.z[5, 0] == masks.PARTIAL  # not 'visible', although most of the band is
    assert (np.delete(plain.z[:, 0], [2, 5]) == masks.VISIBLE).all()
    assert list(plain.prefix_seen[[2, 5]]) == [283, 283] and plain.missing == 34 and plain.extra == 0
    diff = masks.mask_grid(batch, 0, applied=got, diff=True)
    assert diff.z[2, 0] == diff.z[5, 0] == masks.MISSING
    expanded = masks.mask_grid(batch, 0, applied=got, expand_prefix=True, max_prefix_cols=30)  # 10 columns a group
    assert expanded.pooled[1] == 10 and list(expanded.z[2, 10:12]) == [masks.HIDDEN, masks.PARTIAL]  # lost, partly
    assert expanded.z[2, 9] == masks.VISIBLE and (expanded.z[[0, 1, 3], :30] == masks.VISIBLE).all()
    one = lossy(batch, 0, [4], [0])  # a single lost cell still shows
    assert masks.mask_grid(batch, 0, applied=one).z[4, 0] == masks.PARTIAL
    fig = masks.mask_figure(masks.mask_grid(batch, 0, applied=got), row_labels=masks.batch_labels(batch, 0))
    band = fig.data[0]
    assert band.text[2][0] == "sees 283 of 300 prefix columns (17 hidden)" and band.text[0][0].startswith("sees 300")
    assert "2 rows see part" in fig.layout.xaxis.title.text  # the band is labelled with the loss


def test_applied_masks_are_checked():
    batch = synthetic_batch("padded")
    with pytest.raises(ValueError, match="applied must be a bool array of shape"):
        masks.mask_grid(batch, 1, applied=np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="applied must hold one mask"):
        MaskView(batch, applied=[None])
    probed = [ddtree.expected_mask(batch, b) for b in range(batch.batch_size)]  # torch tensors work too
    assert MaskView(batch, applied=probed, diff=True).counts == [0, 0, 0, 0]
    probed[2] = torch.zeros_like(probed[2])  # a kernel that hid everything from request 2
    view = MaskView(batch, applied=probed, diff=True, request=2)
    assert view.counts[2] == int(ddtree.expected_mask(batch, 2).sum()) and view.grid.extra == 0


def test_a_record_carrying_the_applied_masks_shows_them(records):
    rec = records[0]
    want = ddtree.expected_mask(masks.batch_of(rec), 0).clone()
    want[3, 0] = False  # the kernel hid one prefix cell from row 3
    probed = replace(rec)
    probed.kernel = KernelRead(attention="triton", mask_layout="padded", applied=[want])  # as step(probe=True) records
    view = MaskView(probed, diff=True)
    assert view.counts == [1] and view.grid.z[3, 0] == masks.MISSING


def test_mask_view_highlights_accepted_rows_and_labels_tokens(records):
    rec = records[0]
    req = rec.requests[0]
    view = MaskView(rec)
    outlines = [s for s in view.figure.layout.shapes if s.name == "accepted row"]
    assert [round(s.y0 + 0.5) for s in outlines] == req.accepted and all(s.line.color == ACCEPT_COLOR
                                                                         for s in outlines)
    assert view.selector.disabled and "0</b> cells disagree" in view.count.value
    rows = view.figure.data[1].y
    assert len(rows) == len(req.input_ids) and view.figure.layout.yaxis.type == "category"
    token = html.escape(req.token_texts[int(req.tree.tokens[1])][:4], quote=False)
    assert rows[1].startswith("1 '") and token in rows[1] and rows[1].endswith(f"@{req.positions[1]}")
    assert "hidden" in view.figure.data[1].text[0][-1]  # each cell says what it is
    assert "orange: accepted" in view.figure.layout.yaxis.title.text
    view.highlight(req.accepted[1])
    marks = [s for s in view.figure.layout.shapes if s.name == "highlight"]
    assert [(s.yref, s.y0) for s in marks] == [("y", req.accepted[1] - 0.5), ("paper", 0)]
    assert marks[1].x0 == req.accepted[1] - 0.5  # the node's key column
    view.highlight(None)
    assert not [s for s in view.figure.layout.shapes if s.name == "highlight"]
    view.outline(False)
    assert not [s for s in view.figure.layout.shapes if s.name == "accepted row"]


def synthetic_batch(layout: str) -> ddtree.VerifyBatch:
    g = torch.Generator().manual_seed(0)
    draft = torch.randn(6, 50, generator=g)
    big, small = ddtree.build_tree(draft, 12).with_root_token(3), ddtree.build_tree(draft, 4).with_root_token(5)
    return ddtree.pack_verify_batch([big, small, big, big], [9, 14, 6, 11], 13, layout=layout)


def test_read_block_is_the_backends_effective_mask():
    for layout in ("padded", "unpadded"):
        batch = synthetic_batch(layout)
        for b in range(batch.batch_size):
            assert np.array_equal(masks.read_block(batch, b), ddtree.effective_mask(batch, b).numpy())


def test_diff_mode_colours_missing_and_extra_cells_apart():
    batch = synthetic_batch("unpadded")
    bad = ddtree.check_verify_batch(batch)
    assert any(c.expected for c in bad) and any(not c.expected for c in bad)  # both kinds occur
    view = MaskView(batch, diff=True, expand_prefix=True)
    assert len(view.selector.options) == 4 and not view.selector.disabled
    assert view.counts == [sum(c.request == b for c in bad) for b in range(4)]
    for b in range(4):
        view.selector.value = b
        grid = view.grid
        cells = lambda cat: {tuple(rc) for rc in np.argwhere(grid.z == cat).tolist()}  # noqa: E731
        assert cells(masks.MISSING) == {(c.row, c.col) for c in bad if c.request == b and c.expected}
        assert cells(masks.EXTRA) == {(c.row, c.col) for c in bad if c.request == b and not c.expected}
        want = ddtree.expected_mask(batch, b).numpy()
        right = ~np.isin(grid.z, [masks.MISSING, masks.EXTRA])
        assert np.array_equal((grid.z == masks.VISIBLE)[right] | (grid.z == masks.PAD_VISIBLE)[right],
                              want[right])  # elsewhere the expected pattern shows as it is
        assert f"{grid.missing} missing, {grid.extra} extra" in view.count.value
        assert "missing: should be visible" in view.count.value and "extra: should be hidden" in view.count.value
        assert f"request {b}" in view.figure.layout.title.text and "orange" not in view.figure.layout.yaxis.title.text
    assert "missing</span> (should be visible)" in view.figure.layout.title.text  # both counts in the figure too
    assert masks.CATEGORY_COLORS[masks.MISSING] != masks.CATEGORY_COLORS[masks.EXTRA]
    view.diff.value = False
    assert not np.isin(view.grid.z, [masks.MISSING, masks.EXTRA]).any()
    assert view.diff.icon == "square-o" and view.diff.button_style == ""  # the off state looks off
    view.diff.value = True
    assert view.diff.icon == "check-square" and view.diff.button_style == "info"
    padded = MaskView(synthetic_batch("padded"), diff=True)
    assert padded.counts == [0, 0, 0, 0]


def test_whole_batch_view_stacks_every_block_as_the_kernel_reads_it():
    batch = synthetic_batch("unpadded")
    view = MaskView(batch, whole_batch=True, diff=True)
    band, draft, written, read = view.figure.data
    assert len(draft.y) == sum(batch.rows(b) for b in range(4)) and len(band.z) == len(draft.y)
    assert [y.split(" · ")[0] for y in draft.y] == [f"r{b}" for b in range(4) for _ in range(batch.rows(b))]
    labels = [a.text for a in view.figure.layout.annotations]
    for b in range(4):
        assert f"request {b}: mask_indptr {int(batch.mask_indptr[b])}" in labels[b]
        assert (f"packer wrote at {int(batch.written_indptr[b])}" in labels[b]) == \
            (int(batch.mask_indptr[b]) != int(batch.written_indptr[b]))
    assert list(written.base) == batch.written_indptr[:-1].tolist()
    assert list(read.base) == batch.mask_indptr[:-1].tolist()
    assert list(read.x) == [batch.rows(b) * (int(batch.seq_lens[b]) + batch.rows(b)) for b in range(4)]
    stacked = np.array(draft.z, dtype=float)
    grids = masks.batch_grid(batch, diff=True).grids
    for b, (g, o) in enumerate(zip(grids, masks.batch_grid(batch).offsets)):
        q = batch.rows(b)
        assert np.array_equal(stacked[o:o + q, :q], g.z[:, 1:]) and np.isnan(stacked[o:o + q, q:]).all()
    assert len([s for s in view.figure.layout.shapes if s.name == "request boundary"]) == 3
    padded = MaskView(synthetic_batch("padded"), whole_batch=True)
    assert len([s for s in padded.figure.layout.shapes if s.name == "padding boundary"]) == 1  # the small tree
    assert MaskView(masks.pack_verify_batch([ddtree.root_tree(1)], [3], 1)).whole.layout.display == "none"


def test_large_mask_renders_fast_by_pooling():
    tree = ddtree.build_tree(torch.randn(15, 2000, generator=torch.Generator().manual_seed(1)), 1023)
    batch = ddtree.pack_verify_batch([tree.with_root_token(1)], [32768 - 1024], 1024)  # 1024 rows x 32k columns
    MaskView(batch)  # warm-up
    for expand in (False, True):
        t0 = time.process_time()  # CPU time: this machine's wall clock depends on its other tenants
        view = MaskView(batch, diff=True, expand_prefix=expand)
        elapsed = time.process_time() - t0
        z = view.figure.data[1].z
        assert elapsed < 1.0, f"expand_prefix={expand}: {elapsed:.2f} s"
        assert len(z) == masks.MAX_ROWS and len(z[0]) <= masks.MAX_COLS
        assert view.grid.pooled[0] == 1024 // masks.MAX_ROWS and view.figure.data[1].text is None


def test_pooling_keeps_wrong_cells():
    z = np.zeros((4, 10), dtype=np.uint8)
    z[3, 7] = masks.MISSING
    z[0, 0] = masks.VISIBLE
    pooled = masks._pool(masks._pool(z, 0, 3), 1, 4)
    assert pooled.shape == (2, 3) and pooled[1, 1] == masks.MISSING and pooled[0, 0] == masks.VISIBLE
    assert pooled.sum() == masks.MISSING + masks.VISIBLE


def test_mask_view_rejects_bad_input(records):
    with pytest.raises(ValueError, match="source"):
        MaskView("mask")
    with pytest.raises(ValueError, match="request"):
        MaskView(records[0], request=1)
    with pytest.raises(ValueError, match="b must"):
        masks.mask_grid(masks.batch_of(records[0]), 2)


# ------------------------------------------------------------------------------------------------- draft, path
def test_draft_view_shows_the_candidates_and_marks_the_heaps_choices(records):
    req = records[0].requests[0]
    body = figures.draft_html(req)
    used = {(int(d), int(r)) for d, r in zip(req.tree.depths[1:], req.tree.ranks[1:])}
    cells = re.findall(r"<td class='([^']*)' data-key='d(\d+)r(\d+)'", body)
    assert {(int(d), int(r)) for c, d, r in cells if "ddtree-used" in c} == used
    acc = {(int(req.tree.depths[i]), int(req.tree.ranks[i])) for i in req.accepted[1:]}
    assert {(int(d), int(r)) for c, d, r in cells if "ddtree-acc" in c} == acc
    first = html.escape(req.token_texts[req.draft_top_tokens[0][0]][:6])
    assert first.replace(" ", "␣") in body or html.escape(req.token_texts[req.draft_top_tokens[0][0]])[:3] in body
    view = DraftView(records[0])
    node = req.accepted[-1]
    view.highlight(node)
    assert view.pane.marks == [f"d{int(req.tree.depths[i])}r{int(req.tree.ranks[i])}" for i in req.tree.path(node)[1:]]
    assert "no draft" in figures.draft_html(replace(req, draft_top_tokens=[], draft_top_logprobs=[]))


def test_path_view_underlines_acceptance_without_digits_in_the_text(records):
    prompt = "<|im_start|>system\nYou are helpful<|im_end|>\n<|im_start|>user\nPROMPT<x><|im_end|>\n" \
             "<|im_start|>assistant\n"
    view = PathView(prompt_text=prompt)
    assert "no round yet" in view.pane.html
    view.show(records, current=2)
    value = view.pane.html
    assert value.count("class='ddtree-span") == len(records)
    assert "<details class='ddtree-prompt'>" in value and "<q>PROMPT&lt;x&gt;</q>" in value  # folded, escaped
    assert "<sub" not in value  # no acceptance digits mixed into the text
    for rec in records:
        req = rec.requests[0]
        span = re.search(rf"data-round='{rec.index}' style='border-bottom:3px solid ([^']+)' title='([^']+)'", value)
        assert span.group(1) == figures.accept_color(req.acceptance_length)
        assert f"acceptance length {req.acceptance_length}" in span.group(2)
    assert value.count("ddtree-current") == 1
    # the first generated token came from the prefill forward (round 0's root): shown first, in no round's span
    first = records[0].requests[0]
    assert records[0].index == 0 and value.count("class='ddtree-prefill'") == 1
    prefill = re.search(r"class='ddtree-prefill'[^>]*>([^<]*)</span>", value)
    assert html.unescape(prefill.group(1)) == first.token_texts[int(first.tree.tokens[0])]
    assert prefill.start() < value.index("data-round='0'")
    assert "ddtree-prefill" not in figures.path_html(records[1:])  # round 0 not shown: its root is not either
    req = records[2].requests[0]
    if "".join(req.token_texts[t] for t in req.committed) == req.committed_text:
        assert all(f"data-key='n{i}'" in value for i in req.accepted[1:]) and "data-key='bonus'" in value
        view.highlight(req.accepted[-1])
        assert view.pane.marks == [f"n{i}" for i in req.accepted[1:]]
    pending = PathView(records, prompt_text="")
    pending.show(records[:3], current=2, pending=True)
    after = pending.pane.html.split("ddtree-pending")[1]
    assert req.committed_text not in after  # the current round is not committed yet
    with pytest.raises(ValueError, match="records"):
        view.show(["text"])
    assert figures.prompt_summary(prompt) == "PROMPT<x>"


def test_stage_captions_tell_the_round(records):
    rec = records[0]
    req = rec.requests[0]
    text = {s: figures.stage_caption(rec, s) for s in figures.STAGES}
    assert f"MASK×{len(req.draft_top_tokens)}" in text["draft"]
    assert f"popped {req.n_nodes - 1} nodes" in text["tree"]
    assert f"{len(req.input_ids)} rows" in text["verify"] and f"{req.context_len}-token prefix" in text["verify"]
    assert f"at node {req.accepted[-1]}" in text["walk"] and "argmax" in text["walk"]
    assert f"{req.acceptance_length} tokens" in text["commit"]
    assert "draws from the target" in figures.stage_caption(records[5], "walk")
    assert "budget</small>" in figures.stats_html(rec)
    chain = records[4]  # a DFlash round: a chain, no heap and no budget
    assert chain.method == "dflash" and "DFlash's chain" in figures.stage_caption(chain, "tree")
    assert "heap" not in figures.stage_caption(chain, "tree") and "budget</small>" not in figures.stats_html(chain)
    from ddtree.models import tiny_random_pair
    ar = ddtree.Session(tiny_random_pair(0), "x", method="ar").step()
    assert "autoregressive" in figures.stage_caption(ar, "tree") and "budget</small>" not in figures.stats_html(ar)
    root_choice = repr(token_text(ar.requests[0], ar.requests[0].bonus_token))
    assert f"argmax at the root: {html.escape(root_choice)}" in figures.stage_caption(ar, "walk")
    with pytest.raises(ValueError, match="stage"):
        figures.stage_caption(rec, "sample")


def test_divergence_finds_where_two_walks_part(records):
    a = records[0].requests[0]
    assert figures.divergence(a, a)[0] == len(a.committed)
    b = replace(a, accepted=a.accepted[:2], accepted_tokens=a.accepted_tokens[:1], bonus_token=a.bonus_token + 1)
    common, node_a, node_b, text = figures.divergence(a, b)
    assert common == 1 and node_a == a.accepted[1] == node_b and "agree on 1 token" in text


# ------------------------------------------------------------------------------------------------- explorer
@needs_dot  # the graphviz pane's stages, marks and hover links
def test_explorer_on_a_trace_disables_model_controls_and_tells_the_story(trace):
    records, meta = trace
    ex = Explorer(TRACE)
    assert ex.round.max == len(records) - 1 and ex.round.value == len(records) - 1
    for w in (ex.step_button, ex.reset_button, ex.method, ex.verify, ex.temperature, ex.budget, ex.side_by_side):
        assert w.disabled and "no model" in w.tooltip
    assert ex.request.layout.display == "none"  # one request: no selector
    ex.round.value = 1
    assert "<small>round</small> <b>1</b>" in ex.stats.value
    assert "round 1" in ex.tree.header.value and "round 1" in ex.mask.figure.layout.title.text
    assert ex.path.pane.html.count("class='ddtree-span") == 2  # committed text up to the shown round
    assert html.escape(meta["prompt_text"][-20:]) in ex.path.pane.html
    assert ex.stages.value == "commit" and "5 · commit" in ex.caption.value
    req = records[1].requests[0]
    for stage in figures.STAGES:
        ex.stages.value = stage
        assert ex.tree.pane.stage == stage and ex.caption.value == figures.stage_caption(records[1], stage)
        assert (ex.draft.layout.display == "none") == (stage != "draft")
        assert (ex.mask.layout.display == "none") == (stage == "draft")
        outlined = [s for s in ex.mask.figure.layout.shapes if s.name == "accepted row"]
        assert len(outlined) == (len(req.accepted) if stage in ("walk", "commit") else 0)
        assert ("ddtree-pending" in ex.path.pane.html) == (stage != "commit")
        focus = {"draft": ex.draft, "tree": ex.tree, "verify": ex.mask, "walk": ex.tree, "commit": ex.path}[stage]
        assert "ddtree-focus" in focus._dom_classes
    ex.play.playing = True
    ex.play.value += 1  # a Play tick replays the next recorded round
    assert ex.round.value == 2
    with pytest.raises(ValueError, match="trace"):
        ex.step()
    assert Explorer((records, meta)).round.max == len(records) - 1
    with pytest.raises(ValueError, match="session_or_trace"):
        Explorer([])


def test_explorer_links_a_node_across_every_view(records):
    ex = Explorer(records)
    ex.round.value = 1
    rec = records[1]
    req = rec.requests[0]
    node = req.accepted[-1]
    ex.logw._emit("hover", node)  # as a hover on its log-weight point reports it
    assert [s.y0 for s in ex.mask.figure.layout.shapes if s.name == "highlight"][0] == node - 0.5
    k = list(ex.logw.figure.data[0].customdata).index(node)
    assert list(ex.logw.figure.data[3].x) == [ex.logw.figure.data[0].x[k]]
    assert ex.draft.pane.marks and ex.tree.hovered == node
    if "".join(req.token_texts[t] for t in req.committed) == req.committed_text:
        assert f"n{node}" in ex.path.pane.marks
    ex.logw._emit("hover", None)
    assert not [s for s in ex.mask.figure.layout.shapes if s.name == "highlight"] and ex.tree.hovered is None
    ex.mask._emit("select", 2)  # a click on mask row 2 pins node 2 everywhere
    assert ex.tree.selected == 2 and ex.pinned == 2 and "node 2," in ex.tree.details.value
    ex.logw._emit("hover", None)  # leaving a hover falls back to the pinned node
    assert [s.y0 for s in ex.mask.figure.layout.shapes if s.name == "highlight"][0] == 1.5


@pytest.fixture(scope="module")
def pair():
    from ddtree.models import tiny_random_pair
    return tiny_random_pair(0)


@needs_dot  # the graphviz pane's stages, marks and hover links
def test_explorer_steps_forks_and_resets_a_live_session(pair):
    session = ddtree.Session(pair, "explore", budget=8)
    ex = Explorer(session)
    assert "no round yet" in ex.stats.value
    rec = ex.step()
    assert rec.index == 0 and ex.round.value == 0 and "round 0" in ex.tree.header.value
    assert "round 0:" in ex.status.value and "s in the model" in ex.status.value
    ex.step()
    assert ex.round.max == 1 and "round 1" in ex.mask.figure.layout.title.text
    ex.round.value = 0
    assert "round 0" in ex.tree.header.value  # revisiting history
    ex.budget.value = 16
    assert ex.session.settings.budget == 16 and len(ex.session.records) == 2  # continues as a fork
    assert ex.step().requests[0].n_nodes == 17 and ex.round.value == 2
    ex.method.value = "dflash"
    assert ex.step().method == "dflash"
    ex.method.value = "ddtree"
    ex.side_by_side.value = True
    assert ex.twin_tree.layout.display == "" and ex.main.children == (ex.left, ex.twin_tree, ex.right)
    context = ex.session.records[-1].requests[0].context_len + ex.session.records[-1].requests[0].acceptance_length
    a = ex.step()
    b = ex.twins[a.index]
    assert ex.twin.settings.verify == "sampled" and b.requests[0].context_len == context
    assert a.requests[0].context_len == context and "round 4" in ex.tree.header.value
    assert "A · greedy, budget 16" in ex.tree.header.value
    assert "B · sampled T=1, budget 16" in ex.twin_tree.header.value and "pinned" not in ex.twin_tree.header.value
    common, node_a, node_b, _ = figures.divergence(a.requests[0], b.requests[0])
    if a.requests[0].committed != b.requests[0].committed:
        assert ex.tree.diverge == node_a and ex.twin_tree.diverge == node_b
        assert "ddtree-diverge" in ex.tree.pane.marks[f"n{node_a}"]
    assert "A</b> greedy" in ex.compare_note.value
    ex.compare.value = "two budgets"
    ex.budget_b.value = 4
    ex.step()
    assert ex.twin.records[-1].requests[0].n_nodes == 5 and ex.twin.settings.budget == 4
    assert "budget 4" in ex.twin_tree.header.value
    ex.side_by_side.value = False
    assert ex.twin_tree.layout.display == "none" and ex.compare_note.value == ""
    ex.reset()
    assert ex.records == [] and ex.session.records == []
    assert ex.step().index == 0 and ex.step().requests[0].context_len == rec.requests[0].context_len + \
        rec.requests[0].acceptance_length  # the same prompt again (same seed, same settings as round 0)


def test_explorer_is_busy_while_a_round_runs(pair):
    session = ddtree.Session(pair, "busy", budget=4)
    ex = Explorer(session)
    seen = []
    step = session.step

    def watched_step():
        seen.append((ex.step_button.disabled, ex.step_button.description, ex.budget.disabled, ex.round.disabled,
                     "ddtree-spinner" in ex.status.value, "running round 0" in ex.status.value))
        return step()

    session.step = watched_step
    ex.step()
    assert seen == [(True, "Running…", True, True, True, True)]
    assert not ex.step_button.disabled and ex.step_button.description == "Step" and not ex.budget.disabled
    assert "ddtree-spinner" not in ex.status.value

    def failing_step():
        raise RuntimeError("boom")

    session.step = failing_step
    with pytest.raises(RuntimeError, match="boom"):
        ex.step()
    assert not ex.step_button.disabled and "failed" in ex.status.value  # controls come back after a crash


def test_explorer_refuses_a_session_that_keeps_no_records(pair):
    with pytest.raises(ValueError, match="record=False"):
        Explorer(ddtree.Session(pair, "a", record=False))


def test_explorer_leaves_the_sessions_own_budget_until_the_budget_control_moves(pair):
    ex = Explorer(ddtree.Session(pair, ["a", "bb"], budget=[2, 6]))
    assert ex.budget.value == 6
    ex.verify.value = "sampled"  # another setting: each request keeps its own budget
    assert ex.session.settings.verify == "sampled" and ex.session.settings.budget == (2, 6)
    rec = ex.step()
    assert [r.budget for r in rec.requests] == [2, 6]
    assert "<small>budget</small> <b>2</b>" in ex.stats.value  # request 0's own
    ex.reset()
    assert ex.session.settings.budget == (2, 6)
    ex.budget.value = 8  # the control moved: one budget for every request
    assert ex.session.settings.budget == 8
    ex.reset()
    assert ex.session.settings.budget == 8
    costs = ddtree.BudgetCosts((8, 16, 32, 64, 128, 256), (1.0, 1.1, 1.2, 1.3, 1.4, 1.5))
    ex = Explorer(ddtree.Session(pair, "a", budget="auto", budget_costs=costs))
    ex.method.value = "dflash"  # the chain has no budget: "auto" is dropped, not an error
    assert ex.session.settings.method == "dflash" and "color:#e41a1c" not in ex.status.value
    ex.verify.value = "sampled"
    assert ex.session.settings.verify == "sampled" and ex.session.settings.method == "dflash"
    ex.method.value = "ddtree"  # back to DDTree: the control still says "auto"
    assert ex.session.settings.budget == "auto" and ex.step().method == "ddtree"


@needs_dot  # the graphviz pane's stages, marks and hover links
def test_explorer_reset_keeps_the_sessions_options(pair):
    """Issue 43: reset dropped backend, attention, mask_layout, exact, top_p and max_len (a fresh default session)."""
    from ddtree.widgets.explorer import session_options
    native = ddtree.Session(pair, ["a", "bb"], budget=[2, 6], backend="native", attention="custom_mask",
                            mask_layout="unpadded", verify="sampled", temperature=0.7, top_p=0.8, max_len=300,
                            record_top_k=4)
    ex = Explorer(native)
    ex.step()
    ex.reset()
    s, backend = ex.session, ex.session.backend
    assert ex.records == [] and s is not native and s.records == []
    assert (s.settings.verify, s.settings.temperature, s.settings.top_p, s.settings.budget) == ("sampled", 0.7, 0.8,
                                                                                                (2, 6))
    assert backend.name == "native" and backend.decoder.attention == "custom_mask" and backend.mask_layout == "unpadded"
    assert backend.max_len == 300 and s.record_top_k == 4 and not backend.decoder.exact
    assert session_options(s) == session_options(native)
    rec = ex.step()
    assert rec.kernel.mask_layout == "unpadded" and len(rec.requests[0].draft_top_tokens[0]) == 4
    ex = Explorer(ddtree.Session(pair, "a", budget=4, backend="reference", top_p=0.5, max_len=200))
    ex.reset()
    assert ex.session.backend.name == "reference" and ex.session.settings.top_p == 0.5
    assert ex.session.backend.max_len == 200


def test_explorer_shows_every_request_of_a_batch(pair):
    session = ddtree.Session(pair, ["a", "bb", "ccc"], budget=8)
    ex = Explorer(session)
    assert ex.request.layout.display == "" and [v for _, v in ex.request.options] == [0, 1, 2]
    rec = ex.step()
    assert len(rec.requests) == 3
    for b in range(3):
        ex.request.value = b
        req = rec.requests[b]
        assert f"request {b}," in ex.tree.header.value and ex.mask.selector.value == b
        assert f"<small>context</small> <b>{req.context_len}</b>" in ex.stats.value
        assert list(ex.logw.figure.data[0].y) == pytest.approx(req.tree.node_logws[1:].tolist())
        assert ex.path.pane.html.count(html.escape(req.committed_text[:3])) >= 1
    assert ex.mask.whole.layout.display == ""
    ex.mask.whole.value = True
    rows = ex.mask.figure.data[1].y
    assert len(rows) == 3 * rec.num_draft_tokens and rows[-1].startswith("r2 · ")
    ex.tree.pane.hovered = "n1"  # the linked highlight lands in request 2's block of the stacked figure
    mark = [s for s in ex.mask.figure.layout.shapes if s.name == "highlight"][0]
    assert mark.y0 == 2 * rec.num_draft_tokens + 1 - 0.5
    ex.request.value = 0
    ex.reset()
    assert [r.context_len for r in ex.step().requests] == [r.context_len for r in rec.requests]


def test_explorer_reports_a_full_context(pair):
    from ddtree.models import tiny_random_pair
    small = tiny_random_pair(0, max_position_embeddings=24)
    ex = Explorer(ddtree.Session(small, "0123456789", budget=4))
    results = [ex.step() for _ in range(12)]
    assert results[-1] is None and "context full" in ex.status.value and not ex.step_button.disabled


def test_explorer_probes_the_kernel_of_a_native_batch(pair):
    """A native batch through the serving engine's flat mask, packed the buggy way: with the probe on, every step
    records the mask the kernel applied, and the mask view counts the wrong cells of the requests after the small
    tree (and none in the small tree's own rows)."""
    session = ddtree.Session(pair, ["a", "bb", "ccc"], budget=[2, 8, 8], backend="native", attention="custom_mask",
                             mask_layout="unpadded")
    ex = Explorer(session, probe=True)
    assert ex.probe.layout.display == "" and ex.probe.value
    rec = ex.step()
    assert rec.kernel is not None and rec.kernel.applied is not None and rec.kernel.mask_layout == "unpadded"
    assert ex.mask.counts[0] == 0 and ex.mask.counts[1] > 0 and ex.mask.counts[2] > 0
    assert ex.mask.batch.layout == "unpadded"
    ex.probe.value = False
    assert ex.step().kernel.applied is None
    assert Explorer(ddtree.Session(pair, "x", budget=4, backend="reference")).probe.layout.display == "none"


def test_divergence_table_shows_each_verdict():
    """Identical runs, precision ties and real bugs each get their verdict, the margin in ulps and the tokens."""
    from ddtree.lossless import Divergence
    from ddtree.widgets import DivergenceTable
    rows = [("padded, exact", None),
            ("padded, fast", Divergence(0, "ddtree", 17, 65, 66, 0.0625, 1.0, exact_rerun=-1)),
            ("unpadded, exact", Divergence(1, "ddtree", 3, 65, 90, 4.5, 72.0, exact_rerun=3))]
    text = DivergenceTable(rows, decode=lambda ids: "".join(chr(i) for i in ids)).value
    assert text.count("<tr>") == 4
    assert "identical to autoregressive" in text
    assert "precision tie; exact rerun identical" in text and "1 ulps" in text and "'A' &rarr; 'B'" in text
    assert "far apart: a real bug; exact rerun diverges at 3" in text and "72 ulps" in text
    assert DivergenceTable([("x", Divergence(0, "m", 0, 60, 62, 0.1, 1.0))], decode=lambda ids: "<&>").value.count(
        "&lt;&amp;&gt;") == 2  # token text is escaped


def test_the_stats_line_says_what_auto_chose_and_why(records):
    """A budget="auto" round's stats tell the candidate it ran (AR: not speculating), the reason in words and every
    candidate's expected tokens/s, the chosen one bold and unknown ones '?'; other rounds say nothing of it."""
    from ddtree.budget import Choice
    rec = replace(records[0], choice=Choice(0, (0, 8, 16), (512.4, 285.0, math.nan), (512.4, 300.2, math.nan),
                                            "kept"))
    text = figures.stats_html(rec)
    assert "auto chose</small> <b>AR (not speculating)</b>" in text and "no other candidate expected 2% faster" in text
    assert "<b>AR 512</b> · 8 285 · 16 ?" in text and "over recent rounds DDTree-8 300 against AR 512" in text
    probe = figures.stats_html(replace(records[0], choice=Choice(8, (0, 8), (9.0, 8.0), (9.0, 8.0), "probe")))
    assert "<b>DDTree-8</b>" in probe and "after 8 AR rounds" in probe and "<b>8 8</b>" in probe
    assert "auto chose" not in figures.stats_html(records[0])
