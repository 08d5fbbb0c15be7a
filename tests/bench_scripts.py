"""Load a bench/ script as a module for its tests (bench/ is not a package)."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_bench(name: str):
    """bench/<name>.py as the module `name`, registered in sys.modules (dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
