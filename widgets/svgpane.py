"""Two small anywidgets the views are built from.

SvgPane shows a graphviz SVG with a toolbar (fit width, fit all, zoom, 1:1, scroll to the accepted path), drag to
pan and ctrl+wheel to zoom. It reports the node under the mouse (`hovered`) and the last clicked one (`clicked`) by
their graphviz <title> ('n3', 'bonus'), adds the classes in `marks` to nodes (selected, linked hover, divergence),
sets `stage` as a data attribute the stylesheet reads, and in the 'walk' stage lights up the nodes of `walk` one
after the other.
HtmlPane shows an HTML fragment, adds class 'ddtree-hl' to elements whose data-key is in `marks`, reports the
data-key under the mouse and clicked, and scrolls its '.ddtree-current' element into view.
Their front ends are js/svg_pane.js and js/html_pane.js; both inject the views' stylesheet
(ddtree.widgets.figures.VIEW_CSS plus the pane rules below).
"""
from __future__ import annotations

import pathlib

import anywidget
import traitlets

from ddtree.widgets.figures import VIEW_CSS
from ddtree.widgets.nodes import ACCEPT_COLOR, DIVERGE_COLOR, HOVER_COLOR, SELECT_COLOR

_BEFORE_COMMIT = ":is([data-stage=draft],[data-stage=tree],[data-stage=verify],[data-stage=walk])"
_BEFORE_WALK = ":is([data-stage=draft],[data-stage=tree],[data-stage=verify])"
PANE_CSS = f"""
.ddtree-svg-pane {{ position: relative; border: 1px solid #e0e0e0; background: #fff; }}
.ddtree-svg-view {{ overflow: auto; cursor: grab; padding-top: 24px; box-sizing: border-box; }}
.ddtree-svg-view.ddtree-dragging {{ cursor: grabbing; user-select: none; }}
.ddtree-svg-bar {{ position: absolute; top: 3px; right: 14px; z-index: 3; display: flex; gap: 2px; align-items: center;
  background: rgba(255,255,255,.9); padding: 2px; border-radius: 4px; font: 11px sans-serif; }}
.ddtree-svg-bar button {{ font-size: 11px; padding: 0 6px; height: 20px; border: 1px solid #bbb; background: #fafafa;
  border-radius: 3px; cursor: pointer; }}
.ddtree-svg-bar button:hover {{ background: #e8eef7; }}
.ddtree-svg-pane g.node {{ cursor: pointer; }}
.ddtree-svg-pane g path, .ddtree-svg-pane g polygon {{ transition: stroke .25s, stroke-width .25s, opacity .25s; }}
.ddtree-svg-pane{_BEFORE_COMMIT} g.acc path, .ddtree-svg-pane{_BEFORE_COMMIT} g.node.acc polygon
  {{ stroke: #555; stroke-width: 1px; }}
.ddtree-svg-pane{_BEFORE_COMMIT} g.edge.acc polygon {{ fill: #888; stroke: #888; stroke-width: 1px; }}
.ddtree-svg-pane{_BEFORE_COMMIT} g.edge.acc path {{ stroke: #888; stroke-width: 1px; }}
.ddtree-svg-pane{_BEFORE_COMMIT} g.bonus {{ opacity: .08; }}
.ddtree-svg-pane{_BEFORE_WALK} g.choice text:last-of-type {{ visibility: hidden; }}
.ddtree-svg-pane[data-stage=walk] g.choice:not(.walk-on) text:last-of-type {{ visibility: hidden; }}
.ddtree-svg-pane[data-stage=walk] g.node.walk-on path, .ddtree-svg-pane[data-stage=walk] g.node.walk-on polygon,
.ddtree-svg-pane[data-stage=walk] g.edge.walk-on path {{ stroke: {ACCEPT_COLOR}; stroke-width: 3px; }}
.ddtree-svg-pane[data-stage=walk] g.edge.walk-on polygon {{ stroke: {ACCEPT_COLOR}; fill: {ACCEPT_COLOR}; }}
.ddtree-svg-pane[data-stage=walk] g.walk-on {{ opacity: 1; }}
.ddtree-svg-pane g.node.ddtree-diverge path, .ddtree-svg-pane g.node.ddtree-diverge polygon
  {{ stroke: {DIVERGE_COLOR}; stroke-width: 5px; stroke-dasharray: 6 2; }}
.ddtree-svg-pane g.node.ddtree-selected path, .ddtree-svg-pane g.node.ddtree-selected polygon
  {{ stroke: {SELECT_COLOR}; stroke-width: 5px; stroke-dasharray: none; }}
.ddtree-svg-pane g.node.ddtree-hover path, .ddtree-svg-pane g.node.ddtree-hover polygon
  {{ stroke: {HOVER_COLOR}; stroke-width: 5px; }}
.ddtree-html-pane {{ position: relative; overflow: auto; }}
"""

_JS = pathlib.Path(__file__).parent / "js"


class SvgPane(anywidget.AnyWidget):
    _esm = _JS / "svg_pane.js"
    _css = VIEW_CSS + PANE_CSS
    svg = traitlets.Unicode("").tag(sync=True)
    clicked = traitlets.Unicode("").tag(sync=True)  # graphviz name of the last clicked node
    hovered = traitlets.Unicode("").tag(sync=True)  # graphviz name of the node under the mouse ("" for none)
    marks = traitlets.Dict().tag(sync=True)  # graphviz name -> space-separated classes to add
    stage = traitlets.Unicode("").tag(sync=True)  # "" or one of ddtree.widgets.figures.STAGES
    walk = traitlets.List(traitlets.Unicode()).tag(sync=True)  # node names the walk stage lights up in order
    height = traitlets.Int(0).tag(sync=True)  # px of the scrolling view (0: as tall as the SVG)
    zoom = traitlets.Unicode("width").tag(sync=True)  # "width", "all" or a scale ("1")


class HtmlPane(anywidget.AnyWidget):
    _esm = _JS / "html_pane.js"
    _css = VIEW_CSS + PANE_CSS
    html = traitlets.Unicode("").tag(sync=True)
    marks = traitlets.List(traitlets.Unicode()).tag(sync=True)  # data-keys to mark with class 'ddtree-hl'
    hovered = traitlets.Unicode("").tag(sync=True)  # data-key under the mouse ("" for none)
    clicked = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(0).tag(sync=True)  # max height in px before it scrolls (0: none)
