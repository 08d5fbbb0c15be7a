"""Triton kernels (issue 5): each kernel lives beside the torch reference it is tested against.

Import them as `ddtree.kernels`. Python run from the repository root also finds this folder as a top-level
`kernels`, a name that belongs to Hugging Face's `kernels` package (which transformers >= 5.25 imports). Imported
under that name, this module hands the name to that package when it is installed, and is otherwise empty.
"""


def _yield_the_name():
    """Replace this module, imported as `kernels`, by the package of that name found elsewhere on sys.path."""
    import os
    import sys
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = PathFinder.find_spec("kernels", [p for p in sys.path if os.path.abspath(p or os.curdir) != root])
    if spec is not None and spec.loader is not None:
        module = module_from_spec(spec)
        sys.modules["kernels"] = module  # the import statement returns what sys.modules holds once this runs
        spec.loader.exec_module(module)


if __name__ == "kernels":
    _yield_the_name()
