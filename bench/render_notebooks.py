"""Commit the notebooks with their outputs, as a user's JupyterLab drew them: each notebook runs top to bottom in
JupyterLab in headless Chromium (bench/headless_lab.py), every widget and plotly output is screenshotted where it
was drawn and keeps its live form beside a static PNG of it (what GitHub and nbviewer show), and the README's
notebook thumbnails are cut from those PNGs. Widget state is not saved (a fresh kernel rebuilds the views).

    make notebooks        # every notebook, on this machine's CPU (or GPU), a few minutes each
    python bench/render_notebooks.py 01_explore_trees.ipynb
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import tempfile
from pathlib import Path

import nbformat
from PIL import Image
from tqdm.auto import tqdm

from headless_lab import CHROMIUM, CHROMIUM_ARGS, lab_server, open_and_run

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
THUMBNAILS = ROOT / "docs" / "img" / "notebooks"
STATIC = ("application/vnd.jupyter.widget-view+json", "application/vnd.plotly.v1+json")  # need a browser to draw
VIEWPORT = {"width": 1400, "height": 1800}  # tall enough for the Explorer in one piece
THUMB_WIDTH = 320
ALL_RAN = ("() => { const p = window.jupyterapp.shell.currentWidget; return p && p.content.widgets.every("
           "c => c.model.type !== 'code' || (c.model.executionCount !== null && !c.promptNode.textContent"
           ".includes('*'))); }")
SAVED = "() => !window.jupyterapp.shell.currentWidget.context.model.dirty"


def small_png(png: bytes, width: int | None = None) -> bytes:
    """A screenshot as a 256-colour PNG (views are flat colours and text), optionally scaled to `width`."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    if width is not None and image.width > width:
        image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


def drawn(output) -> bool:
    return bool(set(STATIC) & set(output.get("data", {})))


def with_images(page, nb) -> tuple[object, bytes | None]:
    """The saved notebook `nb` of the open page with a screenshot beside each output only a browser draws, widget
    state dropped -> (notebook, the tallest screenshot, for the thumbnail)."""
    nb.metadata.pop("widgets", None)
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell")
    if cells.count() != len(nb.cells):
        raise RuntimeError(f"the page shows {cells.count()} cells, the saved notebook has {len(nb.cells)}")
    best = (0, None)  # (height, PNG) of the tallest screenshot
    for i, cell in enumerate(nb.cells):
        outputs = cells.nth(i).locator(".jp-OutputArea-child")
        if cell.cell_type != "code" or not any(map(drawn, cell.outputs)):
            continue
        if outputs.count() != len(cell.outputs):
            raise RuntimeError(f"cell {i}: the page shows {outputs.count()} outputs, the saved notebook has "
                               f"{len(cell.outputs)}")
        for j, output in enumerate(cell.outputs):
            if drawn(output):
                view = outputs.nth(j)
                view.scroll_into_view_if_needed()
                page.wait_for_timeout(500)  # plotly redraws on scroll into view
                png = small_png(view.screenshot())
                output.data["image/png"] = base64.b64encode(png).decode()
                best = max(best, (Image.open(io.BytesIO(png)).height, png), key=lambda b: b[0])
    return nb, best[1]


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="*", help="names (default: every notebook in notebooks/)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds for one notebook to run")
    args = ap.parse_args()
    paths = [NOTEBOOKS / n for n in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    THUMBNAILS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root, scratch = Path(tmp) / "root", Path(tmp) / "scratch"
        root.mkdir()
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:  # run from a clean slate
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            nbformat.write(nb, root / path.name)
        tracker = scratch / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
        tracker.parent.mkdir(parents=True)
        tracker.write_text(json.dumps({"windowingMode": "none"}))  # every cell in the page, drawn
        with lab_server(root, scratch) as lab, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for path in tqdm(paths, desc="notebooks"):
                page = browser.new_page(viewport=VIEWPORT)
                open_and_run(page, lab, path.name)
                page.wait_for_function(ALL_RAN, timeout=args.timeout * 1000, polling=1000)
                page.wait_for_timeout(3000)  # the views' last messages
                page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
                page.wait_for_function(SAVED, timeout=60_000)
                nb, best = with_images(page, nbformat.read(root / path.name, as_version=4))
                page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
                page.evaluate("() => window.jupyterapp.shell.currentWidget.dispose()")  # the next page opens alone
                page.close()
                failed = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
                if failed:
                    raise RuntimeError(f"{path.name}: {failed[0].ename}: {failed[0].evalue}")
                nbformat.write(nb, path)
                if best is not None:
                    (THUMBNAILS / f"{path.stem[:2]}.png").write_bytes(small_png(best, THUMB_WIDTH))
                views = sum(map(drawn, (o for c in nb.cells if c.cell_type == "code" for o in c.outputs)))
                print(f"{path.name}: {views} views drawn, {path.stat().st_size / 1e6:.2f} MB")
            browser.close()


if __name__ == "__main__":
    main()
