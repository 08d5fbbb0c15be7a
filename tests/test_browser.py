"""Real-browser test: JupyterLab on loopback, 01_explore_trees.ipynb run in headless Chromium at 1600 x 1000 (the
Explorer's target screen): Step, the tree and the mask all on screen at once, the busy state while a round runs, the
tree and mask changing after Step, a hovered tree node lighting up its mask row and log-weight point, the stage strip
(walk, draft), side by side with labelled trees; then a small notebook with a corrupted batch: the mask diff's two
colours. Screenshots go to test-artifacts/ (git-ignored): explorer_*.png, mask_diff.png."""
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from bench_scripts import load_bench

headless_lab = load_bench("headless_lab")
CHROMIUM, CHROMIUM_ARGS, lab_server = headless_lab.CHROMIUM, headless_lab.CHROMIUM_ARGS, headless_lab.lab_server
open_and_run, wait_idle = headless_lab.open_and_run, headless_lab.wait_idle

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "01_explore_trees.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1600, "height": 1000}
HOVER_RGB = "rgb(106, 61, 154)"  # ddtree.widgets.nodes.HOVER_COLOR
DIFF_NOTEBOOK = "mask_diff.ipynb"
DIFF_CELL = """import torch, ddtree
from ddtree.widgets import MaskView
draft = torch.randn(6, 50, generator=torch.Generator().manual_seed(0))
big, small = ddtree.build_tree(draft, 12).with_root_token(3), ddtree.build_tree(draft, 4).with_root_token(5)
batch = ddtree.pack_verify_batch([big, small, big], [40, 30, 50], 13, layout="unpadded")  # the padding bug
MaskView(batch, request=2, diff=True)"""

pytestmark = pytest.mark.slow


def drafter_shipped() -> bool:
    from ddtree.models.pair import DEFAULT_DRAFTER_DIR
    return (DEFAULT_DRAFTER_DIR / "config.json").is_file()


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1 serving a temp root holding a copy of the notebook; killed at the end."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} not found (make sysdeps installs it)")
    if not drafter_shipped():
        pytest.skip("the trained drafter (ddtree/assets/smollm2-dflash) has not shipped yet")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    diff = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(DIFF_CELL)])
    diff.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(diff, root / DIFF_NOTEBOOK)
    with lab_server(root, tmp_path) as base:
        yield base


def on_screen(locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"] \
        and box["y"] + box["height"] <= VIEWPORT["height"]


def test_explorer_tells_a_round_on_one_screen_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    shot = lambda page, name: page.screenshot(path=str(ARTIFACTS / name))  # noqa: E731
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            open_and_run(page, lab, NOTEBOOK.name)
            explorer = page.locator(".ddtree-explorer")
            step = explorer.locator("button", has_text="Step").first
            tree_svg = explorer.locator(".ddtree-tree-view .ddtree-svg-pane svg").first
            heatmap = explorer.locator(".ddtree-mask-view .js-plotly-plot .heatmaplayer image").last  # the draft block
            mask_title = explorer.locator(".ddtree-mask-view .js-plotly-plot .gtitle").first
            tree_svg.wait_for(state="visible", timeout=300_000)
            heatmap.wait_for(state="attached", timeout=60_000)
            wait_idle(page)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(800)
            shot(page, "explorer_1600x1000.png")
            assert on_screen(step) and on_screen(tree_svg.locator("xpath=..")) and on_screen(heatmap)
            assert explorer.locator(".ddtree-stage-strip button").count() == 5
            svg_before, title_before = tree_svg.inner_html(), mask_title.text_content()
            image_before = heatmap.get_attribute("href")
            assert svg_before.count('class="node') > 3  # the root, draft nodes, the bonus
            assert "round" in title_before

            step.click()  # busy while the round runs: the button says so, the controls are disabled
            busy = explorer.locator("button:has-text('Running')")
            busy.wait_for(state="visible", timeout=10_000)
            explorer.locator(".ddtree-spinner").wait_for(state="visible", timeout=10_000)  # "running round N…"
            assert busy.is_disabled() and explorer.locator("button:has-text('Reset')").is_disabled()
            shot(page, "explorer_busy.png")
            page.wait_for_function(
                "(before) => { const t = document.querySelector('.ddtree-explorer .ddtree-mask-view .gtitle');"
                " return t && t.textContent !== before; }", arg=title_before, timeout=120_000)
            step.wait_for(state="visible", timeout=30_000)
            page.wait_for_timeout(800)
            assert not step.is_disabled() and "s in the model" in explorer.text_content()
            assert tree_svg.inner_html() != svg_before and mask_title.text_content() != title_before
            assert heatmap.get_attribute("href") != image_before
            assert int(explorer.locator(".widget-readout").first.text_content()) >= 1  # round slider moved on

            # linked views: hovering tree node 1 marks its mask row and its log-weight point
            explorer.locator(".ddtree-tree-view g.node").filter(has=page.locator("title", has_text="n1")).first.hover()
            page.wait_for_function(
                "(rgb) => [...document.querySelectorAll('.ddtree-explorer .ddtree-mask-view .shapelayer path')]"
                ".some(p => p.style.stroke === rgb)", arg=HOVER_RGB, timeout=30_000)
            page.wait_for_function(
                "(rgb) => [...document.querySelectorAll('.ddtree-explorer .ddtree-logweight-view path.point')]"
                ".some(p => p.style.stroke === rgb)", arg=HOVER_RGB, timeout=30_000)
            assert explorer.locator(".ddtree-tree-view g.node.ddtree-hover").count() == 1
            shot(page, "explorer_hover_link.png")

            # the stage strip: the walk lights up the accepted path node by node; the draft shows the candidates
            explorer.locator(".ddtree-stage-strip button", has_text="walk").click()
            page.wait_for_function("() => document.querySelectorAll('.ddtree-explorer g.node.walk-on').length >= 2",
                                   timeout=30_000)
            page.wait_for_timeout(1500)
            shot(page, "explorer_walk.png")
            explorer.locator(".ddtree-stage-strip button", has_text="draft").click()
            draft = explorer.locator(".ddtree-draft table")
            draft.wait_for(state="visible", timeout=30_000)
            assert draft.locator("td.ddtree-used").count() > 3
            shot(page, "explorer_draft.png")
            explorer.locator(".ddtree-stage-strip button", has_text="commit").click()

            explorer.locator("button", has_text="side by side").first.click()  # greedy vs sampled
            step.click()
            pair_svgs = explorer.locator(".ddtree-tree-view .ddtree-svg-pane svg")
            pair_svgs.nth(1).wait_for(state="visible", timeout=120_000)
            page.wait_for_function("() => document.querySelectorAll('.ddtree-explorer .ddtree-tree-view')[1]"
                                   ".textContent.includes('B · sampled')", timeout=120_000)
            last = explorer.locator(".widget-readout").first.text_content().strip()
            page.wait_for_function(  # the views moved below have drawn the new round too
                "(r) => [...document.querySelectorAll('.ddtree-explorer .gtitle')].every(t => t.textContent.includes(r))",
                arg=f"round {last}", timeout=60_000)
            page.wait_for_timeout(800)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            shot(page, "explorer_side_by_side.png")
            headers = explorer.locator(".ddtree-tree-view").all_text_contents()
            assert "A · greedy" in headers[0] and "B · sampled" in headers[1]
            assert not [e for e in errors if "ddtree" in e or "anywidget" in e or "plotly" in e], errors

            open_and_run(page, lab, DIFF_NOTEBOOK)  # a corrupted batch: missing and extra cells in two colours
            panel = page.evaluate("() => window.jupyterapp.shell.currentWidget.id")
            view = page.locator(f"[id='{panel}'] .ddtree-mask-view").first
            view.locator(".js-plotly-plot .heatmaplayer image").first.wait_for(state="attached", timeout=120_000)
            wait_idle(page)
            page.wait_for_timeout(800)
            view.screenshot(path=str(ARTIFACTS / "mask_diff.png"))
            cells = view.locator(".js-plotly-plot .heatmaplayer image").nth(1)  # the draft block's cells only
            cells.screenshot(path=str(ARTIFACTS / "mask_diff_cells.png"))
            assert colours_in(ARTIFACTS / "mask_diff_cells.png") >= {"missing", "extra", "visible"}
            assert "missing" in view.text_content() and "extra" in view.text_content()
        finally:
            browser.close()


def colours_in(png) -> set[str]:
    """Which mask categories' colours appear in a screenshot (pixels exactly of a category colour)."""
    import numpy as np
    from PIL import Image

    from ddtree.widgets import masks
    pixels = set(map(tuple, np.unique(np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3), axis=0).tolist()))
    names = {masks.MISSING: "missing", masks.EXTRA: "extra", masks.VISIBLE: "visible"}
    return {name for k, name in names.items()
            if tuple(int(masks.CATEGORY_COLORS[k][i:i + 2], 16) for i in (1, 3, 5)) in pixels}
