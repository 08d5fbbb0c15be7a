"""Explorer: a round's story on one screen, for a live Session (any batch size) or a recorded trace.

Layout (fits 1600 x 1000): controls and the stage strip (draft -> tree -> verify -> walk -> commit) on top, the tree
and the mask side by side, the log-weights and the committed text below. The strip steps through the round's
phases: the drafter's candidates per depth, the heap's chosen nodes, the verify mask, the walk lighting up the
accepted path node by node, the commit; its play button tells the story on a timer.
Live: Step runs one round (the controls are disabled and the status line says what runs until it is done); Play
steps on a timer; Reset starts a fresh session from the same prompts; changing method / verify / temperature /
budget continues with session.fork(...) of the new settings (history is kept; a batch's per-request budgets stay
until the budget control moves, and the chain and AR leave the budget alone). Side by side: each Step also runs
the same round in a fork with the other verify rule (or a second budget); both trees are labelled and the node
where the walks part is marked. Batches: a request selector drives every view (hidden for one request), and the
mask view can show the whole padded batch as the kernel reads it. Linked views: hovering or clicking a node in the
tree, a mask row, a log-weight point or a committed token marks the same node everywhere.
Trace: the round slider and Play replay the recorded rounds; controls that need a model are disabled, with a
tooltip saying why.
"""
from __future__ import annotations

import html
import time
from pathlib import Path

import ipywidgets as widgets

from ddtree.record import METHODS, RoundRecord, load_trace
from ddtree.settings import Verify
from ddtree.widgets.figures import STAGES, divergence, stage_caption, stats_html
from ddtree.widgets.views import EMPTY, DraftView, LogWeightView, MaskView, PathView, TreeView, toggle

BUDGETS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 256)
NO_MODEL = "disabled: this Explorer shows a loaded trace, there is no model to run (pass a live Session instead)"
COMPARE = ("greedy vs sampled", "two budgets")
STAGE_LABELS = ("1 draft", "2 tree", "3 verify", "4 walk", "5 commit")
FOCUS = {"draft": "draft", "tree": "tree", "verify": "mask", "walk": "tree", "commit": "path"}  # the stage's pane
SPINNER = "<span class='ddtree-spinner'></span>"
EXPLORER_CSS = """<style>
.ddtree-explorer { font-size: 12px; }
.ddtree-explorer .ddtree-busy i.fa { animation: ddtree-spin 1s linear infinite; }
.ddtree-spinner { display: inline-block; width: 10px; height: 10px; margin-right: 5px; vertical-align: -1px;
  border: 2px solid #1f78b4; border-right-color: transparent; border-radius: 50%;
  animation: ddtree-spin .8s linear infinite; }
@keyframes ddtree-spin { to { transform: rotate(360deg); } }
.ddtree-explorer .ddtree-focus { box-shadow: 0 0 0 3px #fdae6b; border-radius: 3px; }
.ddtree-explorer .ddtree-stage-strip .widget-toggle-button { font-weight: bold; margin-right: 16px; overflow: visible;
  position: relative; }
.ddtree-explorer .ddtree-stage-strip .widget-toggle-button:not(:last-child)::after { content: "→"; position: absolute;
  right: -14px; color: #636363; font-weight: bold; }
.ddtree-explorer .ddtree-stage-strip .mod-active { background: #fdae6b; color: #000; }
.ddtree-explorer .ddtree-caption { font-size: 12px; line-height: 1.35; padding: 2px 6px; background: #f7f7f7;
  border-left: 3px solid #fdae6b; min-height: 32px; }
</style>"""


class Explorer(widgets.VBox):
    """`Explorer(session)` for a live ddtree.Session (one prompt or a batch); `Explorer(records)`,
    `Explorer((records, meta))` or `Explorer("trace.json")` for a recorded trace."""

    def __init__(self, session_or_trace, *, seed: int = 0, play_interval_ms: int = 800,
                 story_interval_ms: int = 1800, probe: bool = False):
        self.session, self.seed, self.twin, self.twins = None, seed, None, {}
        self.pinned, self._linking, self._running, self._last_step = None, False, False, 0.0
        self.play_interval_s = play_interval_ms / 1e3
        if _is_session(session_or_trace):
            if not getattr(session_or_trace, "record", True):
                raise ValueError("session_or_trace: the Explorer draws the rounds' records, and this session keeps "
                                 "none (record=False); make it with record=True, the default")
            self.session = session_or_trace
            self.records = list(self.session.records)
            self.prompts = prompt_ids(self.session)
            self.prompt_texts = [self.session.pair.decode(ids) for ids in self.prompts]
        else:
            self.records, meta = _trace(session_or_trace)
            texts = meta.get("prompt_texts") or [meta.get("prompt_text", meta.get("prompt", ""))]
            self.prompt_texts = [str(t) for t in texts]
        live = self.session is not None
        now = self.session.settings if live else self.records[-1]  # both carry method, verify, temperature, budget
        batch = len(self.records[-1].requests) if self.records else len(self.prompts)

        # controls
        self.step_button = widgets.Button(description="Step", icon="step-forward", button_style="primary",
                                          tooltip="run one round", layout=widgets.Layout(width="110px"))
        self.play = widgets.Play(interval=play_interval_ms, min=0, max=10**6, show_repeat=False,
                                 tooltip="step on a timer" if live else "replay the recorded rounds")
        self.reset_button = widgets.Button(description="Reset", icon="undo", tooltip="a fresh session, same prompt",
                                           layout=widgets.Layout(width="90px"))
        self.round = widgets.IntSlider(description="round", min=0, max=max(len(self.records) - 1, 0),
                                       continuous_update=False, tooltip="revisit a past round",
                                       layout=widgets.Layout(width="320px"))
        self.request = widgets.Dropdown(options=[(f"request {b}", b) for b in range(batch)], value=0,
                                        description="request", layout=widgets.Layout(width="200px"),
                                        tooltip="the request every view shows")
        self.request.layout.display = "none" if batch == 1 else ""
        self.method = widgets.Dropdown(options=METHODS, description="method", value=now.method,
                                       layout=widgets.Layout(width="170px"))
        self.verify = widgets.ToggleButtons(options=("greedy", "sampled"), value=now.verify,
                                            style=dict(button_width="74px"))
        self.temperature = widgets.FloatSlider(description="temperature", min=0.0, max=2.0, step=0.05,
                                               value=now.temperature, continuous_update=False,
                                               style=dict(description_width="initial"),
                                               layout=widgets.Layout(width="280px"))
        budget = _budget(now)
        self.budget = widgets.Dropdown(options=sorted(set(BUDGETS) | ({budget} - {"auto"})) + ["auto"], value=budget,
                                       description="budget",
                                       layout=widgets.Layout(width="150px"))
        self.side_by_side = toggle("side by side", False, "run each step also in a fork with other settings")
        native = live and getattr(getattr(self.session, "backend", None), "name", None) == "native"
        self.probe = toggle("probe kernel", bool(probe) and native, "each step also recovers the mask the attention "
                            "kernel really applied (zero queries, one-hot values; native backend)")
        self.probe.layout.display = "" if native else "none"
        self.compare = widgets.ToggleButtons(options=COMPARE, style=dict(button_width="124px"))
        self.budget_b = widgets.Dropdown(options=BUDGETS, value=8, description="budget B",
                                         layout=widgets.Layout(width="160px"))
        self.status = widgets.HTML()
        self.stages = widgets.ToggleButtons(options=list(zip(STAGE_LABELS, STAGES)), value="commit",
                                            style=dict(button_width="78px"),
                                            tooltips=["the drafter's candidates per depth", "the heap's chosen nodes",
                                                      "one target forward under the tree mask",
                                                      "the walk along the accepted path", "the committed tokens"])
        self.stages.add_class("ddtree-stage-strip")
        self.stages.layout.flex, self.stages.layout.width = "0 0 auto", "auto"
        self.story = widgets.Play(value=STAGES.index("commit"), min=0, max=len(STAGES) - 1,
                                  interval=story_interval_ms, show_repeat=False,
                                  tooltip="tell the round's story: step through its stages",
                                  layout=widgets.Layout(width="120px"))
        widgets.jslink((self.story, "value"), (self.stages, "index"))
        self.caption = widgets.HTML(EMPTY, layout=widgets.Layout(flex="1 1 0", min_width="300px"))
        self.caption.add_class("ddtree-caption")
        self.stats = widgets.HTML(EMPTY)

        # views
        self.tree = TreeView(height=420)
        self.twin_tree = TreeView(height=420, label="B · ", legend=False)  # the key is in A's header
        self.mask = MaskView(width=640, height=430)
        self.mask.selector.layout.display = "none"  # the Explorer's request selector drives it
        self.draft = DraftView(height=470)
        self.logw = LogWeightView(width=720, height=300)
        self.path = PathView(prompt_text=self.prompt_texts[0], height=270)
        self.compare_note = widgets.HTML()
        # fixed parents: a plotly FigureWidget moved to another box stops receiving updates, so side by side only
        # shows the twin's column and narrows the others
        self.right = widgets.VBox([self.mask, self.draft], layout=widgets.Layout(width="43%", overflow="auto"))
        self.left = widgets.VBox([self.tree], layout=widgets.Layout(width="57%"))
        self.main = widgets.HBox([self.left, self.twin_tree, self.right], layout=widgets.Layout(width="100%"))
        self.bottom = widgets.HBox([self.logw, self.path], layout=widgets.Layout(width="100%"))
        for view in (self.left, self.logw, self.twin_tree):
            view.layout.margin = "0 8px 0 0"
        self.logw.layout.width, self.path.layout.width = "49%", "49%"
        model_controls = (self.step_button, self.reset_button, self.method, self.verify, self.temperature,
                          self.budget, self.side_by_side, self.compare, self.budget_b, self.probe)
        self._model_controls = model_controls if live else ()
        if not live:
            for w in model_controls:
                w.disabled, w.tooltip = True, NO_MODEL
            self.status.value = f"<span style='color:#636363'>trace: {len(self.records)} recorded rounds</span>"
        super().__init__([
            widgets.HTML(EXPLORER_CSS),
            widgets.HBox([self.step_button, self.play, self.reset_button, self.round, self.request, self.status],
                         layout=widgets.Layout(align_items="center", flex_flow="row wrap")),
            widgets.HBox([self.method, self.verify, self.temperature, self.budget, self.side_by_side, self.compare,
                          self.budget_b, self.probe], layout=widgets.Layout(align_items="center", flex_flow="row wrap")),
            widgets.HBox([self.stages, self.story, self.caption], layout=widgets.Layout(align_items="center",
                                                                                        width="100%")),
            self.stats, self.compare_note, self.main, self.bottom,
        ])
        self.add_class("ddtree-explorer")
        self.step_button.on_click(lambda _: self.step())
        self.reset_button.on_click(lambda _: self.reset())
        self.round.observe(lambda change: self.show_round(change["new"]), "value")
        self.request.observe(lambda change: self.records and self.show_round(self.round.value), "value")
        self.play.observe(lambda change: self._tick(), "value")
        self.stages.observe(lambda change: self._stage(), "value")
        for w in (self.method, self.verify, self.temperature, self.budget):
            w.observe(lambda change: self._settings_changed(), "value")
        for view in (self.tree, self.twin_tree, self.mask, self.logw, self.path):
            view.observe_nodes(self._linked)
        self.side_by_side.observe(lambda change: self._layout_compare(), "value")
        self._layout_compare()
        if self.records:
            self._goto_last()
        else:
            self._stage()

    # ---------------------------------------------------------------------------------------------- actions
    def step(self) -> RoundRecord | None:
        """Run one round (and its side-by-side twin); returns the main session's record, None on a full context
        (or while a step is already running)."""
        if self.session is None:
            raise ValueError("this Explorer shows a loaded trace; stepping needs a live Session")
        if self._running:
            return None
        n, twin_on = len(self.records), self.side_by_side.value
        self._busy(True, f"running round {n}" + (" and its side-by-side twin" if twin_on else "") + "…")
        t0 = time.perf_counter()
        try:
            twin = self.session.fork(**self._variant()) if twin_on else None
            record = self.session.step(probe=True) if self.probe.value else self.session.step()
            other = twin.step() if twin is not None else None
        except ValueError as e:
            self.play.playing = False
            self._busy(False, f"<span style='color:#e41a1c'>{html.escape(str(e))}</span>")
            return None
        except BaseException:
            self._busy(False, "<span style='color:#e41a1c'>the round failed (see the traceback)</span>")
            raise
        model_s = time.perf_counter() - t0
        self.records.append(record)
        if other is not None:
            self.twin, self.twins[record.index] = twin, other
        try:
            self._goto_last()
        finally:
            views_ms = 1e3 * (time.perf_counter() - t0 - model_s)
            self._busy(False, f"round {record.index}: {model_s:.1f} s in the model, {views_ms:.0f} ms drawing")
        return record

    def reset(self) -> None:
        """A fresh Session from the same prompts with the current settings (top_p included) and the session's own
        options (backend, max_len, record_top_k, the native engine's attention, mask_layout, exact, fused,
        cuda_graphs); history is cleared."""
        if self.session is None:
            raise ValueError("this Explorer shows a loaded trace; reset needs a live Session")
        from ddtree.session import Session
        prompts = self.prompts if len(self.prompts) > 1 else self.prompts[0]
        s = self.session.settings
        settings = {"budget": s.budget, "top_p": s.top_p, **self._settings()}
        costs = self.session.budget_costs if settings["budget"] == "auto" else None  # measured once is enough
        self.session = Session(self.session.pair, prompts, seed=self.seed, budget_costs=costs, **settings,
                               **session_options(self.session))
        self.records, self.twins, self.twin = [], {}, None
        self.round.max, self.round.value = 0, 0
        for w in (self.stats, self.caption):
            w.value = EMPTY
        self.compare_note.value = ""
        self.path.show([])
        self.status.value = "reset: fresh session from the same prompt"

    def show_round(self, k: int) -> None:
        """Show recorded round k in every view."""
        if not self.records:
            return
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.records):
            raise ValueError(f"k must be a round index in [0, {len(self.records)}), got {k!r}")
        rec, b = self.records[k], self.request.value
        if b >= len(rec.requests) or rec.requests[b] is None:
            raise ValueError(f"round {k} holds requests {rec.took_part} of {len(rec.requests)} (a request run() had "
                             f"finished takes no part); the selector asks for request {b}")
        self.pinned = None
        self.stats.value = stats_html(rec, request=b, history=self.records[:k + 1])
        self.tree.show(rec, b, label=self._label(rec, "A") if self.side_by_side.value else "")
        self.mask.show(rec, b)
        self.draft.show(rec, b)
        self.logw.show(rec, b)
        self.path.prompt_text = self.prompt_texts[min(b, len(self.prompt_texts) - 1)]
        self._show_pair(rec, self.twins.get(rec.index), b)
        self._stage()

    # ---------------------------------------------------------------------------------------------- story
    def _stage(self) -> None:
        """Apply the strip's stage to every view: the tree's styling, the right pane (draft candidates or mask),
        the accepted rows, the committed text, the caption and the focused pane."""
        stage = self.stages.value
        for view in (self.tree, self.twin_tree):
            view.stage = stage
        self.mask.layout.display = "none" if stage == "draft" else ""
        self.draft.layout.display = "" if stage == "draft" else "none"
        if not self.records:
            return
        rec, b = self.records[self.round.value], self.request.value
        self.mask.outline(stage in ("walk", "commit"))
        self.path.show(self.records[:self.round.value + 1], current=rec.index, request=b, pending=stage != "commit")
        self.caption.value = stage_caption(rec, stage, request=b)
        focus = FOCUS[stage]
        for name in ("draft", "tree", "mask", "path"):
            view = getattr(self, name)
            (view.add_class if name == focus else view.remove_class)("ddtree-focus")

    # ---------------------------------------------------------------------------------------------- links
    def _linked(self, kind: str, node: int | None) -> None:
        """A view reported a node: pin it (select) or mark it while hovered, in every view."""
        if self._linking:
            return
        self._linking = True
        try:
            if kind == "select":
                self.pinned = node
                if self.tree.selected != node:
                    self.tree.select(node)
            target = node if node is not None else self.pinned
            for view in (self.tree, self.mask, self.logw, self.path, self.draft):
                view.highlight(target)
            if self.side_by_side.value:
                self.twin_tree.highlight(target)
        finally:
            self._linking = False

    # ---------------------------------------------------------------------------------------------- helpers
    def _busy(self, on: bool, message: str = "") -> None:
        """Disable the controls and say what runs (on), or re-enable them and say how it went."""
        self._running = on
        for w in self._model_controls + (self.round, self.request):
            w.disabled = on
        self.step_button.description, self.step_button.icon = ("Running…", "spinner") if on else \
            ("Step", "step-forward")
        (self.step_button.add_class if on else self.step_button.remove_class)("ddtree-busy")
        self.status.value = (SPINNER if on else "") + message
        if not on:
            self._last_step = time.perf_counter()

    def _goto_last(self) -> None:
        last = len(self.records) - 1
        self.round.max = last
        if self.round.value == last:
            self.show_round(last)
        else:
            self.round.value = last  # the slider's observer shows it

    def _tick(self) -> None:
        if not self.play.playing:
            return
        if self.session is not None:
            if time.perf_counter() - self._last_step > 0.5 * self.play_interval_s:  # ticks queued during a step
                self.step()
        elif self.records:
            nxt = self.round.value + 1
            if nxt >= len(self.records):
                self.play.playing = False
            else:
                self.round.value = nxt

    def _settings(self) -> dict:
        """The controls' settings as fork overrides. The budget is DDTree's alone: it is left to the session (which
        drops "auto" for the chain and AR, Session.fork) unless DDTree runs next and the budget control moved off the
        session's own (a batch's per-request budgets show their largest)."""
        out = dict(method=self.method.value, verify=self.verify.value, temperature=self.temperature.value)
        if self.method.value == "ddtree" and self.budget.value != _budget(self.session.settings):
            out["budget"] = self.budget.value
        return out

    def _settings_changed(self) -> None:
        if self.session is None:
            return
        try:
            self.session = self.session.fork(**self._settings())
        except ValueError as e:
            self.status.value = f"<span style='color:#e41a1c'>{html.escape(str(e))}</span>"
            return
        s = self.session.settings
        self.status.value = f"next rounds: {s.method}, {s.verify}, T={s.temperature:g}, budget {_budget(s)}"

    def _variant(self) -> dict:
        s = self.session.settings
        if self.compare.value == "two budgets":
            return dict(budget=self.budget_b.value)
        if s.verify == Verify.SAMPLED and s.temperature > 0:
            return dict(verify="greedy")
        return dict(verify="sampled", temperature=s.temperature if s.temperature > 0 else 1.0)

    def _layout_compare(self) -> None:
        on = self.side_by_side.value
        self.compare.layout.display = "" if on else "none"
        self.budget_b.layout.display = "" if on else "none"
        self.twin_tree.layout.display = "" if on else "none"
        self.left.layout.width, self.twin_tree.layout.width, self.right.layout.width = \
            ("34%", "34%", "32%") if on else ("57%", "34%", "43%")
        self.mask.size = (470, 430) if on else (640, 430)
        if self.records:
            self.show_round(self.round.value)

    def _show_pair(self, a: RoundRecord, other: RoundRecord | None, b: int) -> None:
        if not self.side_by_side.value:
            self.tree.mark_divergence(None)
            self.compare_note.value = ""
            return
        if other is None:
            self.twin_tree.header.value = "<i style='color:#999'>B: no side-by-side run for this round (turn side by " \
                                          "side on before stepping)</i>"
            self.compare_note.value = ""
            return
        self.twin_tree.show(other, b, label=self._label(other, "B"))
        common, node_a, node_b, text = divergence(a.requests[b], other.requests[b])
        self.tree.mark_divergence(node_a if a.requests[b].committed != other.requests[b].committed else None)
        self.twin_tree.mark_divergence(node_b if a.requests[b].committed != other.requests[b].committed else None)
        self.compare_note.value = (f"<div style='font-size:12px'><b>A</b> {html.escape(self._rule(a, b))} vs <b>B</b> "
                                   f"{html.escape(self._rule(other, b))}: {text} (pink dashed outline).</div>")

    @staticmethod
    def _rule(rec: RoundRecord, b: int) -> str:
        rule = rec.verify + (f" T={rec.temperature:g}" if rec.verify == Verify.SAMPLED else "")
        return f"{rule}, budget {rec.requests[b].budget}"

    def _label(self, rec: RoundRecord, side: str) -> str:
        b = self.request.value
        return (f"<b style='background:#fde0ef;padding:0 4px'>{side} · {html.escape(self._rule(rec, b))}</b> "
                f"acceptance length {rec.requests[b].acceptance_length} · ")


def prompt_ids(session) -> list[list[int]]:
    """Each request's prompt token ids: the one place the Explorer reads session.tokens and the prompt lengths
    (`prompt_lens` on batch sessions, `prompt_len` on a one-prompt session)."""
    if hasattr(session, "prompt_lens"):
        return [list(t[:n]) for t, n in zip(session.tokens, session.prompt_lens)]
    return [list(session.tokens[:session.prompt_len])]


def session_options(session) -> dict:
    """The options a Session was made with besides its settings, read back from it: a fresh Session made with them
    (and the settings) runs as this one does. Prompts are passed as token ids, so `chat` does not apply; the
    Explorer draws records, so record is True (and overlap, which needs record=False, off)."""
    backend = session.backend
    out = {"backend": backend.name, "max_len": backend.max_len, "record_top_k": session.record_top_k}
    if backend.name == "native":
        decoder = backend.decoder
        attention = decoder.attention  # resolved: "auto" became "triton" or "torch", and exact mode's "exact"
        drafter = getattr(backend, "drafter", None)
        # fused resolved per model: where the target's and the drafter's differ, the session was given None
        fused = decoder.fused if drafter is None or drafter.fused == decoder.fused else None
        out.update(attention="triton" if attention == "exact" else attention, mask_layout=backend.mask_layout,
                   exact=decoder.exact, fused=fused, cuda_graphs=backend.cuda_graphs)
    return out


def _budget(settings) -> int | str:
    """The budget the dropdown shows: the largest of per-request budgets, or "auto"."""
    budget = settings.budget
    return max(budget) if isinstance(budget, (list, tuple)) else budget


def _is_session(obj) -> bool:
    """A live session: anything with the members the Explorer uses (step, fork, records, settings, pair)."""
    return all(hasattr(obj, name) for name in ("step", "fork", "records", "settings", "pair"))


def _trace(obj) -> tuple[list[RoundRecord], dict]:
    if isinstance(obj, (str, Path)):
        records, meta = load_trace(obj)
        if not records:
            raise ValueError(f"trace {obj} holds no recorded rounds: nothing to show")
        return records, meta
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], dict):
        obj, meta = obj
    else:
        meta = {}
    records = list(obj) if isinstance(obj, (list, tuple)) else None
    if not records or not all(isinstance(r, RoundRecord) for r in records):
        raise ValueError("session_or_trace must be a Session, a non-empty list of RoundRecord, (records, meta) or a "
                         f"trace path, got {type(obj).__name__}")
    return records, meta
