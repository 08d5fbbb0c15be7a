"""The top-level kernels/ folder is the package ddtree.kernels; Python started in the repository root (make demo,
python -m pytest, a notebook beside the folders) also sees it as a top-level `kernels`, the name of Hugging Face's
package that transformers imports. It must never stand in for that package."""
import importlib.metadata
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import kernels
from transformers import LlamaConfig  # transformers >= 5.25 imports Hugging Face's kernels when it is installed
import ddtree.kernels.tree_build
print(getattr(kernels, "__file__", None))
print(sorted(n for n in vars(kernels) if not n.startswith("_")))
print(ddtree.kernels.tree_build.__file__)
"""


def hf_kernels_installed() -> bool:
    try:
        importlib.metadata.version("kernels")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def test_top_level_kernels_from_the_repository_root_is_never_this_folder():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    kernels_file, public_names, tree_build_file = out.stdout.strip().splitlines()[-3:]
    assert Path(tree_build_file) == ROOT / "kernels" / "tree_build.py"
    if hf_kernels_installed():
        assert Path(kernels_file).parent != ROOT / "kernels", kernels_file
        assert "get_kernel" in public_names
    else:
        assert public_names == "[]"  # the folder imported under the wrong name exports nothing
