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
