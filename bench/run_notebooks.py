"""Run every notebook top to bottom, headless (nbclient), and record per-notebook wall time, backend and device.

    python bench/run_notebooks.py --out bench/results/notebooks_h200.md     # on the lent H200 (native engine)
    python bench/run_notebooks.py --out bench/results/notebooks_cpu.md      # on a CPU (reference backend)

With no edits to the notebooks, `load_default_pair()` picks the GPU when there is one and `Session(...)` then the
native engine (backend="auto"). A failing notebook is recorded with its error and the script exits non-zero.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient
from tqdm.auto import tqdm

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True, help="markdown table to write")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    ap.add_argument("notebooks", nargs="*", help="names (default: every notebook in notebooks/)")
    args = ap.parse_args()
    paths = [NOTEBOOKS / n for n in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})"
    rows, failed = [], False
    for path in tqdm(paths, desc="notebooks"):
        nb = nbformat.read(path, as_version=4)
        t0 = time.perf_counter()
        try:
            NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
            status = "ok"
        except Exception as e:  # noqa: BLE001  (recorded, then the script fails)
            status, failed = f"FAILED: {type(e).__name__}: {str(e).splitlines()[-1][:160] if str(e) else ''}", True
        rows.append((path.name, time.perf_counter() - t0, status))
        print(f"{path.name}: {rows[-1][1]:.1f} s {status}", flush=True)
    backend = "native (backend='auto' on CUDA)" if cuda else "reference (backend='auto' on CPU)"
    lines = [f"# Notebooks run headless with nbclient ({time.strftime('%Y-%m-%d')}, {device}, torch "
             f"{torch.__version__}, Python {platform.python_version()})", "",
             f"Default backend: {backend}. Command: `python bench/run_notebooks.py --out {args.out}`.", "",
             "| notebook | wall s | backend | device | status |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {wall:.1f} | {backend.split()[0]} | {device} | {status} |" for name, wall, status in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
