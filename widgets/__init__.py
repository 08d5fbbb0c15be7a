"""Notebook views (ipywidgets, plotly, graphviz) that consume plain round records."""
