"""Two small anywidgets the views are built from.

SvgPane shows a graphviz SVG with a toolbar (fit width, fit all, zoom, 1:1, scroll to the accepted path), drag to
pan and ctrl+wheel to zoom. It reports the node under the mouse (`hovered`) and the last clicked one (`clicked`) by
their graphviz <title> ('n3', 'bonus'), adds the classes in `marks` to nodes (selected, linked hover, divergence),
sets `stage` as a data attribute the stylesheet reads, and in the 'walk' stage lights up the nodes of `walk` one
after the other.
HtmlPane shows an HTML fragment, adds class 'ddtree-hl' to elements whose data-key is in `marks`, reports the
data-key under the mouse and clicked, and scrolls its '.ddtree-current' element into view.
Both inject the views' stylesheet (ddtree.widgets.figures.VIEW_CSS plus the pane rules below).
"""
from __future__ import annotations

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

_SVG_ESM = """
const SCALE_LIMITS = [0.05, 4];
function render({ model, el }) {
  el.classList.add("ddtree-svg-pane");
  const bar = document.createElement("div");
  bar.className = "ddtree-svg-bar";
  const view = document.createElement("div");
  view.className = "ddtree-svg-view";
  el.append(bar, view);
  let mode = model.get("zoom"), scale = 1, natural = null, svg = null, pendingPath = false;
  let nodes = new Map(), edges = new Map(), marked = [], timers = [];
  const button = (label, title, action) => {
    const b = document.createElement("button");
    b.textContent = label; b.title = title; b.className = "ddtree-zoom-" + label.replace(/\\W+/g, "");
    b.addEventListener("click", (e) => { e.stopPropagation(); action(); });
    bar.append(b);
  };
  const readout = document.createElement("span");
  button("fit width", "scale the tree to the pane's width", () => { mode = "width"; apply(); });
  button("fit all", "scale the whole tree into the pane", () => { mode = "all"; apply(); });
  button("−", "zoom out (or ctrl + wheel)", () => { mode = String(scale / 1.25); apply(); });
  button("+", "zoom in (or ctrl + wheel)", () => { mode = String(scale * 1.25); apply(); });
  button("1:1", "natural size", () => { mode = "1"; apply(); });
  button("path", "scroll to the accepted path", () => toPath());
  bar.append(readout);
  const setHeight = () => { const h = model.get("height"); view.style.height = h > 0 ? h + "px" : ""; };

  function apply() {
    if (!svg || !natural) return;
    const w = view.clientWidth - 6, h = view.clientHeight - 6;
    if (mode === "width") scale = w > 0 ? Math.min(1.25, w / natural.w) : 1;
    else if (mode === "all") scale = w > 0 && h > 0 ? Math.min(1.25, w / natural.w, h / natural.h) : 1;
    else scale = parseFloat(mode) || 1;
    scale = Math.min(SCALE_LIMITS[1], Math.max(SCALE_LIMITS[0], scale));
    svg.setAttribute("width", (natural.w * scale).toFixed(1));
    svg.setAttribute("height", (natural.h * scale).toFixed(1));
    readout.textContent = Math.round(scale * 100) + "%";
    el.dataset.scale = scale.toFixed(3);
  }
  function toPath() {
    const path = [...nodes.values()].filter((g) => g.classList.contains("acc"));
    if (nodes.has("bonus")) path.push(nodes.get("bonus"));
    if (!path.length || view.clientWidth === 0) { pendingPath = true; return; }
    pendingPath = false;
    const box = view.getBoundingClientRect();
    let top = Infinity, bottom = -Infinity, left = Infinity;
    for (const g of path) {
      const r = g.getBoundingClientRect();
      top = Math.min(top, r.top); bottom = Math.max(bottom, r.bottom); left = Math.min(left, r.left);
    }
    view.scrollTop += (top + bottom) / 2 - (box.top + box.bottom) / 2;
    view.scrollLeft += left - box.left - 12;
  }
  function marks() {
    for (const [g, c] of marked) g.classList.remove(c);
    marked = [];
    for (const [title, classes] of Object.entries(model.get("marks") || {})) {
      const g = nodes.get(title);
      if (!g) continue;
      for (const c of classes.split(" ").filter(Boolean)) { g.classList.add(c); marked.push([g, c]); }
    }
  }
  function stage() {
    const s = model.get("stage") || "";
    el.dataset.stage = s;
    timers.forEach(clearTimeout);
    timers = [];
    for (const g of view.querySelectorAll(".walk-on")) g.classList.remove("walk-on");
    if (s !== "walk") return;
    const walk = model.get("walk") || [];
    walk.forEach((title, k) => timers.push(setTimeout(() => {
      const g = nodes.get(title);
      if (g) g.classList.add("walk-on");
      const e = k > 0 && edges.get(walk[k - 1] + "->" + title);
      if (e) e.classList.add("walk-on");
    }, 250 + 600 * k)));
  }
  function draw() {
    view.innerHTML = model.get("svg");
    svg = view.querySelector("svg");
    nodes = new Map(); edges = new Map(); marked = [];
    if (!svg) return;
    const vb = svg.viewBox.baseVal;
    natural = { w: vb.width * 4 / 3, h: vb.height * 4 / 3 };  // graphviz sizes are points
    for (const g of svg.querySelectorAll("g.node, g.edge")) {
      const t = g.querySelector("title");
      if (t) (g.classList.contains("node") ? nodes : edges).set(t.textContent, g);
    }
    apply(); marks(); stage(); toPath();
  }
  // hover, click, pan
  let hovered = "", drag = null;
  const titleOf = (target) => {
    const g = target.closest && target.closest("g.node");
    const t = g && g.querySelector("title");
    return t ? t.textContent : "";
  };
  const report = (name, value) => { model.set(name, value); model.save_changes(); };
  view.addEventListener("mouseover", (e) => {
    const t = titleOf(e.target);
    if (t !== hovered && !drag) { hovered = t; report("hovered", t); }
  });
  view.addEventListener("mouseleave", () => { if (hovered) { hovered = ""; report("hovered", ""); } });
  view.addEventListener("mousedown", (e) => {
    drag = { x: e.clientX, y: e.clientY, left: view.scrollLeft, top: view.scrollTop, moved: false };
  });
  const onMove = (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) { drag.moved = true; view.classList.add("ddtree-dragging"); }
    if (drag.moved) { view.scrollLeft = drag.left - dx; view.scrollTop = drag.top - dy; }
  };
  const onUp = () => { if (drag) setTimeout(() => { drag = null; view.classList.remove("ddtree-dragging"); }, 0); };
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  view.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    const t = titleOf(e.target);
    if (t) report("clicked", t);
  });
  view.addEventListener("wheel", (e) => {
    if (!(e.ctrlKey || e.metaKey)) return;
    e.preventDefault();
    mode = String(scale * (e.deltaY < 0 ? 1.1 : 1 / 1.1));
    apply();
  }, { passive: false });
  const resize = new ResizeObserver(() => {
    if (mode === "width" || mode === "all") apply();
    if (pendingPath) toPath();
  });
  resize.observe(view);
  setHeight();
  draw();
  model.on("change:svg", draw);
  model.on("change:marks", marks);
  model.on("change:stage", stage);
  model.on("change:height", () => { setHeight(); apply(); });
  model.on("change:zoom", () => { mode = model.get("zoom"); apply(); });
  return () => {
    resize.disconnect(); timers.forEach(clearTimeout);
    window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp);
  };
}
export default { render };
"""

_HTML_ESM = """
function render({ model, el }) {
  el.classList.add("ddtree-html-pane");
  let marked = [], hovered = "";
  const setHeight = () => { const h = model.get("height"); el.style.maxHeight = h > 0 ? h + "px" : ""; };
  function marks() {
    for (const e of marked) e.classList.remove("ddtree-hl");
    marked = [];
    for (const key of model.get("marks") || []) {
      for (const e of el.querySelectorAll(`[data-key="${CSS.escape(key)}"]`)) {
        e.classList.add("ddtree-hl");
        marked.push(e);
      }
    }
  }
  function scroll() {
    const cur = el.querySelector(".ddtree-current");
    if (cur && el.clientHeight) el.scrollTop = Math.max(0, cur.offsetTop - el.clientHeight / 3);
  }
  function draw() { el.innerHTML = model.get("html"); marks(); scroll(); }
  const keyOf = (target) => {
    const e = target.closest && target.closest("[data-key]");
    return e ? e.dataset.key : "";
  };
  const report = (name, value) => { model.set(name, value); model.save_changes(); };
  el.addEventListener("mouseover", (e) => {
    const k = keyOf(e.target);
    if (k !== hovered) { hovered = k; report("hovered", k); }
  });
  el.addEventListener("mouseleave", () => { if (hovered) { hovered = ""; report("hovered", ""); } });
  el.addEventListener("click", (e) => { const k = keyOf(e.target); if (k) report("clicked", k); });
  const resize = new ResizeObserver(scroll);
  resize.observe(el);
  setHeight();
  draw();
  model.on("change:html", draw);
  model.on("change:marks", marks);
  model.on("change:height", setHeight);
  return () => resize.disconnect();
}
export default { render };
"""


class SvgPane(anywidget.AnyWidget):
    _esm = _SVG_ESM
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
    _esm = _HTML_ESM
    _css = VIEW_CSS + PANE_CSS
    html = traitlets.Unicode("").tag(sync=True)
    marks = traitlets.List(traitlets.Unicode()).tag(sync=True)  # data-keys to mark with class 'ddtree-hl'
    hovered = traitlets.Unicode("").tag(sync=True)  # data-key under the mouse ("" for none)
    clicked = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(0).tag(sync=True)  # max height in px before it scrolls (0: none)
