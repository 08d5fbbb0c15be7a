"""SvgPane: an anywidget that shows an SVG string and reports clicks on graphviz nodes (their <title>, e.g. 'n3')."""
from __future__ import annotations

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  el.classList.add("ddtree-svg-pane");
  el.style.overflow = "auto";
  el.style.maxHeight = "560px";
  const draw = () => { el.innerHTML = model.get("svg"); };
  draw();
  model.on("change:svg", draw);
  el.addEventListener("click", (event) => {
    const node = event.target.closest("g.node");
    const title = node && node.querySelector("title");
    if (title) {
      model.set("clicked", title.textContent);
      model.save_changes();
    }
  });
}
export default { render };
"""


class SvgPane(anywidget.AnyWidget):
    _esm = _ESM
    _css = ".ddtree-svg-pane g.node { cursor: pointer; }"
    svg = traitlets.Unicode("").tag(sync=True)
    clicked = traitlets.Unicode("").tag(sync=True)  # graphviz name of the last clicked node
