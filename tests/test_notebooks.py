"""Every notebook runs top to bottom, headless (nbclient), on CPU with the embedded pair; any error fails."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIMEOUT_S = 600  # per cell (a guard against hangs); each notebook takes well under two minutes on an idle 2-core CPU


def drafter_shipped() -> bool:
    from ddtree.models.pair import DEFAULT_DRAFTER_DIR
    return (DEFAULT_DRAFTER_DIR / "config.json").is_file()


DRAWN = ("application/vnd.jupyter.widget-view+json", "application/vnd.plotly.v1+json")  # a browser draws them
MAX_MB = 2.0  # per notebook, its pictures included


def test_notebooks_are_committed_with_their_outputs():
    """As `make notebooks` writes them: run top to bottom (execution counts 1, 2, ... in order), no error, every
    view beside a static PNG of it (what the repository page shows), no widget state, small, and a README
    thumbnail each."""
    names = [p.name for p in NOTEBOOKS]
    assert {"01_explore_trees.ipynb", "02_greedy_vs_sampled.ipynb", "03_debug_padding_masks.ipynb",
            "04_budget_sweep.ipynb"} <= set(names)
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), f"{path.name}: not run in order"
        outputs = [o for c in code for o in c.outputs]
        assert not [o for o in outputs if o.output_type == "error"], f"{path.name} has an error output"
        views = [o for o in outputs if set(DRAWN) & set(o.get("data", {}))]
        assert views and all("image/png" in o.data for o in views), f"{path.name}: a view without its picture"
        assert "widgets" not in nb.metadata, f"{path.name} carries widget state"
        assert path.stat().st_size < MAX_MB * 1e6, f"{path.name} is {path.stat().st_size / 1e6:.1f} MB"
        thumbnail = f"docs/img/notebooks/{path.stem[:2]}.png"
        assert (ROOT / thumbnail).is_file() and thumbnail in readme, f"{path.name}: no README thumbnail"
        if path.name[:2] in ("01", "02", "03", "04"):
            assert any("load_default_pair(" in c.source for c in code), f"{path.name} must use the embedded pair"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    if not drafter_shipped():
        pytest.skip("the trained drafter (ddtree/assets/smollm2-dflash) has not shipped yet")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
