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
from ddtree.widgets import Explorer, LogWeightView, MaskView, PathView, TreeView
from ddtree.widgets import masks, treegraph
from ddtree.widgets.nodes import ACCEPT_COLOR, node_infos

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


def test_tree_dot_greys_padding_rows_and_shows_the_targets_choice(records):
    req = records[ROUND_PADDED].requests[0]
    dot = treegraph.tree_dot(req)
    assert "cluster_pad" in dot and f"pad rows {req.n_nodes}..{len(req.input_ids) - 1}" in dot
    assert "cluster_pad" not in treegraph.tree_dot(records[0].requests[0])
    arrows = [line for line in dot.splitlines() if "→" in line]
    assert len(arrows) == len(req.accepted)  # the target's choice on every visited node


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
    edges, accepted, nodes, bonus, pads = fig.data
    assert len(nodes.x) == req.n_nodes
    assert len(accepted.x) == 3 * (len(req.accepted) - 1)  # one segment per accepted edge
    assert list(nodes.marker.line.color).count(ACCEPT_COLOR) == len(req.accepted)
    assert "bonus" in bonus.text[1] and len(pads.x) == 1 and "pad rows 27..40" in pads.text[0]
    xs, ys = treegraph.tree_layout(req)
    assert xs == [float(d) for d in req.tree.depths.tolist()]


def test_tree_view_renderers_and_selection(records, monkeypatch):
    view = TreeView(records[0], renderer="plotly")
    assert "plotly layout" in view.header.value and "round 0" in view.header.value
    view.select(2)
    assert "node 2" in view.details.value and "path:" in view.details.value
    with pytest.raises(ValueError, match="node"):
        view.select(99)
    with pytest.raises(ValueError, match="renderer"):
        TreeView(renderer="ascii")
    with pytest.raises(ValueError, match="request"):
        view.show(records[0], request=3)
    if treegraph.has_dot():
        g = TreeView(records[1])
        assert g.renderer == "graphviz" and "graphviz SVG" in g.header.value and g.pane.svg.startswith("<svg")
        g.pane.clicked = "n3"  # what the front end sends on a click
        assert g.details.value.count("node 3,") == 1
    monkeypatch.setattr(treegraph.shutil, "which", lambda name: None)
    auto = TreeView(records[0])
    assert auto.renderer == "plotly" and "`dot` not found" in auto.header.value


# ------------------------------------------------------------------------------------------------- log-weights
def test_logweight_view(records):
    req = records[0].requests[0]
    view = LogWeightView(records[0])
    nodes, path, target = view.figure.data
    assert list(nodes.y) == pytest.approx(req.tree.node_logws[1:].tolist())
    assert len(path.x) == len(req.accepted)  # the root plus every accepted node
    known = [n for n in node_infos(req)[1:] if n.target_prob is not None]
    assert list(target.y) == pytest.approx([n.target_prob for n in known]) and target.yaxis == "y2"
    view.show(records[4])
    assert len(view.figure.data[0].x) == records[4].requests[0].n_nodes - 1


# ------------------------------------------------------------------------------------------------- masks
def test_mask_grid_of_a_record_collapses_the_prefix_and_marks_padding(records):
    rec = records[ROUND_PADDED]
    req = rec.requests[0]
    q, n, ctx = len(req.input_ids), req.n_nodes, req.context_len
    grid = masks.mask_grid(masks.batch_of(rec), 0)
    assert grid.z.shape == (q, 1 + q) and grid.disagree == 0
    vis = ddtree.visibility(req.tree).numpy()
    tree_block = grid.z[:n, 1:1 + n]
    assert np.array_equal(tree_block == masks.VISIBLE, vis)
    assert np.array_equal(tree_block == masks.HIDDEN, ~vis)
    assert (grid.z[:n, 0] == masks.VISIBLE).all() and (grid.z[n:, 0] == masks.PAD_VISIBLE).all()
    assert (np.diag(grid.z[n:, 1 + n:]) == masks.PAD_VISIBLE).all() and (grid.z[:n, 1 + n:] == masks.PAD_HIDDEN).all()
    expanded = masks.mask_grid(masks.batch_of(rec), 0, expand_prefix=True)
    assert expanded.z.shape == (q, ctx + q) and list(expanded.x_edges[[0, ctx, -1]]) == [-ctx, 0, q]


def test_mask_view_highlights_accepted_rows(records):
    rec = records[0]
    view = MaskView(rec)
    outline = next(t for t in view.figure.data if t.name == "accepted rows")
    accepted = rec.requests[0].accepted
    assert len(outline.y) == 12 * len(accepted)  # four sides per row, None-separated
    assert list(outline.y[0::12]) == accepted and list(outline.y[3::12]) == [r + 1 for r in accepted]
    assert outline.line.color == ACCEPT_COLOR
    assert view.selector.disabled and "0</b> cells disagree" in view.count.value
    ticks = view.figure.layout.yaxis.ticktext
    assert len(ticks) == len(rec.requests[0].input_ids)


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


def test_diff_mode_marks_exactly_the_cells_check_verify_batch_reports():
    batch = synthetic_batch("unpadded")
    bad = ddtree.check_verify_batch(batch)
    assert bad
    view = MaskView(batch, diff=True, expand_prefix=True)
    assert len(view.selector.options) == 4 and not view.selector.disabled
    assert view.counts == [sum(c.request == b for c in bad) for b in range(4)]
    for b in range(4):
        view.selector.value = b
        grid = view.grid
        red = {tuple(rc) for rc in np.argwhere(grid.z == masks.DISAGREE).tolist()}
        assert red == {(c.row, c.col) for c in bad if c.request == b}
        assert grid.missing == sum(c.expected and not c.got for c in bad if c.request == b)
        assert f"<b>{len(red)}</b> cells disagree" in view.count.value
        assert f"request {b}" in view.figure.layout.title.text
    assert "cells disagree" in view.figure.layout.title.text  # the count is in the figure too
    view.diff.value = False
    assert not (view.grid.z == masks.DISAGREE).any()
    padded = MaskView(synthetic_batch("padded"), diff=True)
    assert padded.counts == [0, 0, 0, 0]


def test_large_mask_renders_fast_by_pooling():
    tree = ddtree.build_tree(torch.randn(15, 2000, generator=torch.Generator().manual_seed(1)), 1023)
    batch = ddtree.pack_verify_batch([tree.with_root_token(1)], [32768 - 1024], 1024)  # 1024 rows x 32k columns
    MaskView(batch)  # warm-up
    for expand in (False, True):
        t0 = time.process_time()  # CPU time: this machine's wall clock depends on its other tenants
        view = MaskView(batch, diff=True, expand_prefix=expand)
        elapsed = time.process_time() - t0
        z = view.figure.data[0].z
        assert elapsed < 1.0, f"expand_prefix={expand}: {elapsed:.2f} s"
        assert z.shape[0] == masks.MAX_ROWS and z.shape[1] <= 1 + masks.MAX_COLS + masks.MAX_PREFIX_COLS
        assert view.grid.pooled[0] == 1024 // masks.MAX_ROWS


def test_pooling_keeps_red_cells():
    z = np.zeros((4, 10), dtype=np.uint8)
    z[3, 7] = masks.DISAGREE
    pooled = masks._pool(masks._pool(z, 0, 3), 1, 4)
    assert pooled.shape == (2, 3) and pooled[1, 1] == masks.DISAGREE and pooled.sum() == masks.DISAGREE


def test_mask_view_rejects_bad_input(records):
    with pytest.raises(ValueError, match="source"):
        MaskView("mask")
    with pytest.raises(ValueError, match="request"):
        MaskView(records[0], request=1)
    with pytest.raises(ValueError, match="b must"):
        masks.mask_grid(masks.batch_of(records[0]), 2)


# ------------------------------------------------------------------------------------------------- path
def test_path_view_colours_each_round(records):
    view = PathView(prompt_text="PROMPT<x>")
    assert "no round yet" in view.html.value
    view.show(records, current=2)
    value = view.html.value
    assert value.count('class="ddtree-span"') == len(records)
    assert "PROMPT&lt;x&gt;" in value  # escaped
    for rec in records:
        req = rec.requests[0]
        assert f"acceptance length {req.acceptance_length}" in value
    assert value.count("outline:2px") == 1
    with pytest.raises(ValueError, match="records"):
        view.show(["text"])


# ------------------------------------------------------------------------------------------------- explorer
def test_explorer_on_a_trace_disables_model_controls(trace):
    records, meta = trace
    ex = Explorer(TRACE)
    assert ex.round.max == len(records) - 1 and ex.round.value == len(records) - 1
    for w in (ex.step_button, ex.reset_button, ex.method, ex.verify, ex.temperature, ex.budget, ex.side_by_side):
        assert w.disabled and "no model" in w.tooltip
    ex.round.value = 1
    assert "<td style='padding:0 6px;text-align:center'>1</td>" in ex.stats.value
    assert "round 1" in ex.tree.header.value and "round 1" in ex.mask.figure.layout.title.text
    assert ex.path.html.value.count('class="ddtree-span"') == 2  # committed text up to the shown round
    assert html.escape(meta["prompt_text"]) in ex.path.html.value
    ex.play.playing = True
    ex.play.value += 1  # a Play tick replays the next recorded round
    assert ex.round.value == 2
    with pytest.raises(ValueError, match="trace"):
        ex.step()
    assert Explorer((records, meta)).round.max == len(records) - 1
    with pytest.raises(ValueError, match="session_or_trace"):
        Explorer([])


@pytest.fixture(scope="module")
def pair():
    from ddtree.models import tiny_random_pair
    return tiny_random_pair(0)


def test_explorer_steps_forks_and_resets_a_live_session(pair):
    session = ddtree.Session(pair, "explore", budget=8)
    ex = Explorer(session)
    assert "no round yet" in ex.stats.value
    rec = ex.step()
    assert rec.index == 0 and ex.round.value == 0 and "round 0" in ex.tree.header.value
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
    assert ex.pair_box.layout.display == "flex"
    context = ex.session.context_len
    a = ex.step()
    assert ex.twin.settings.verify == "sampled" and ex.twin.records[-1].requests[0].context_len == context
    assert a.requests[0].context_len == context and "round 4" in ex.left.header.value
    ex.compare.value = "two budgets"
    ex.budget_b.value = 4
    ex.step()
    assert ex.twin.records[-1].requests[0].n_nodes == 5 and ex.twin.settings.budget == 4
    prompt = ex.session.tokens[0][:ex.session.prompt_lens[0]]
    ex.reset()
    assert ex.records == [] and ex.session.tokens[0][:ex.session.prompt_lens[0]] == prompt and ex.session.records == []
    assert ex.step().index == 0


def test_explorer_reports_a_full_context(pair):
    from ddtree.models import tiny_random_pair
    small = tiny_random_pair(0, max_position_embeddings=24)
    ex = Explorer(ddtree.Session(small, "0123456789", budget=4))
    results = [ex.step() for _ in range(12)]
    assert results[-1] is None and "context full" in ex.status.value
