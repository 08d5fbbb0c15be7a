"""JupyterLab on loopback driven by headless Chromium (Playwright): the browser test (tests/test_browser.py) and the
notebook renderer (bench/render_notebooks.py) both run notebooks this way, as a user's browser would."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "ddtree-headless-lab"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(root: Path, scratch: Path):
    """A JupyterLab server on 127.0.0.1 serving `root` (its settings, runtime files and log under `scratch`) -> its
    base URL; the server and the kernels it started are killed at the end."""
    notification = scratch / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no news pop-up
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(scratch / "runtime"), JUPYTER_CONFIG_DIR=str(scratch / "config"),
               JUPYTER_DATA_DIR=str(scratch / "data"), JUPYTERLAB_SETTINGS_DIR=str(scratch / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"))
    port, log_path = free_port(), scratch / "lab.log"
    log = open(log_path, "w")
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
                    raise RuntimeError(f"JupyterLab did not start: {log_path.read_text()[-2000:]}")
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


def open_and_run(page, lab: str, name: str) -> None:
    """Open notebook `name` with the left sidebar collapsed and run all its cells."""
    page.goto(f"{lab}/lab/tree/{name}?token={TOKEN}")
    page.wait_for_function("(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                           " return w && w.context && w.context.path.endsWith(name) && w.sessionContext"
                           " && w.sessionContext.session && w.sessionContext.session.kernel; }", arg=name,
                           timeout=60_000)
    page.evaluate("() => { const s = window.jupyterapp.shell; if (!s.leftCollapsed) s.collapseLeft(); }")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def wait_idle(page, timeout_ms: int = 300_000) -> None:
    """Until no cell of the open notebook is queued or running."""
    page.wait_for_function("() => [...document.querySelectorAll('.jp-InputArea-prompt')]"
                           ".every(e => !e.textContent.includes('*'))", timeout=timeout_ms)
