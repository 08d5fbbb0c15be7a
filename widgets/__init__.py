"""Notebook views (ipywidgets, plotly, graphviz) that consume plain round records.

The view classes load ipywidgets on first use; the figure modules (figures, analysis_figures, masks, treegraph,
nodes) import no widget library, so ddtree.report can use them without ipywidgets.
"""

__all__ = ["TreeView", "LogWeightView", "MaskView", "PathView", "Explorer", "SweepView", "AcceptanceView",
           "RankDepthView", "CalibrationView", "DivergenceTable"]

_LAZY = {"TreeView": "views", "LogWeightView": "views", "MaskView": "views", "PathView": "views",
         "Explorer": "explorer", "SweepView": "sweepview", "AcceptanceView": "analysis_views",
         "RankDepthView": "analysis_views", "CalibrationView": "analysis_views", "DivergenceTable": "divergence"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f"ddtree.widgets.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'ddtree.widgets' has no attribute {name!r}")
