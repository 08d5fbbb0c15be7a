"""Real-browser test: JupyterLab on loopback, 01_explore_trees.ipynb run in headless Chromium, Step clicked; the tree
SVG and the mask heatmap must render and change. Screenshots go to test-artifacts/ (git-ignored)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "01_explore_trees.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "ddtree-browser-test"

pytestmark = pytest.mark.slow


def drafter_shipped() -> bool:
    from ddtree.models.pair import DEFAULT_DRAFTER_DIR
    return (DEFAULT_DRAFTER_DIR / "config.json").is_file()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    notification = tmp_path / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no news pop-up
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    port = free_port()
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
         "--allow-root", "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
         "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2) as r:
                    json.load(r)
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError(f"JupyterLab did not start: {(tmp_path / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and the kernels it started (its own session)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def test_explorer_renders_and_steps_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 2300})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{lab}/lab/tree/{NOTEBOOK.name}?token={TOKEN}")
            page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
            page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                                   " && window.jupyterapp.shell.currentWidget.sessionContext"
                                   " && window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=60_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

            explorer = page.locator(".ddtree-explorer")
            tree_svg = explorer.locator(".ddtree-tree-view .ddtree-svg-pane svg").first
            heatmap = explorer.locator(".ddtree-mask-view .js-plotly-plot .heatmaplayer image").first
            mask_title = explorer.locator(".ddtree-mask-view .js-plotly-plot .gtitle").first
            tree_svg.wait_for(state="visible", timeout=240_000)
            heatmap.wait_for(state="attached", timeout=60_000)
            page.wait_for_function("() => !document.querySelector('.jp-Notebook-ExecutionIndicator[data-status=busy]')"
                                   " && [...document.querySelectorAll('.jp-InputArea-prompt')]"
                                   ".every(e => !e.textContent.includes('*'))", timeout=240_000)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(500)
            page.screenshot(path=str(ARTIFACTS / "browser_explorer_before_step.png"))
            svg_before, title_before = tree_svg.inner_html(), mask_title.text_content()
            image_before = heatmap.get_attribute("href")
            assert svg_before.count('class="node"') > 3  # the root, draft nodes, the bonus
            assert "round" in title_before

            explorer.locator("button", has_text="Step").first.click()
            page.wait_for_function(
                "(before) => { const t = document.querySelector('.ddtree-explorer .ddtree-mask-view .gtitle');"
                " return t && t.textContent !== before; }", arg=title_before, timeout=120_000)
            page.wait_for_timeout(500)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / "browser_explorer_after_step.png"))
            svg_after, title_after = tree_svg.inner_html(), mask_title.text_content()
            assert svg_after != svg_before
            assert title_after != title_before
            assert heatmap.get_attribute("href") != image_before
            assert int(explorer.locator(".widget-readout").first.text_content()) >= 1  # round slider moved on

            explorer.locator(".widget-checkbox input").first.check()  # side by side: greedy vs sampled
            explorer.locator("button", has_text="Step").first.click()
            pair_svgs = explorer.locator(".ddtree-side-by-side .ddtree-svg-pane svg")
            pair_svgs.nth(1).wait_for(state="visible", timeout=120_000)
            page.wait_for_timeout(500)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / "browser_side_by_side.png"))
            assert pair_svgs.count() == 2
            assert not [e for e in errors if "ddtree" in e or "anywidget" in e or "plotly" in e], errors
        finally:
            browser.close()
