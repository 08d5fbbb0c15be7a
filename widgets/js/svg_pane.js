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
    b.textContent = label; b.title = title; b.className = "ddtree-zoom-" + label.replace(/\W+/g, "");
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
