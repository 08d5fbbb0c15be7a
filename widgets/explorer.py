"""Explorer: step a live Session (or replay a loaded trace) and see every view of the current round.

Live: Step runs one round; Play steps on a timer; Reset starts a fresh Session from the same prompt; changing
method / verify / temperature / budget continues with session.fork(...) of the new settings (history is kept).
Side by side: each Step also runs the same round in a fork with the other verify rule (or a second budget) and
shows both trees. Trace: the round slider and Play replay the recorded rounds; controls that need a model are
disabled, with a tooltip saying why.
"""
from __future__ import annotations

import html
import sys
from pathlib import Path

import ipywidgets as widgets

from ddtree.record import METHODS, RoundRecord, load_trace
from ddtree.widgets.figures import stats_html
from ddtree.widgets.views import EMPTY, LogWeightView, MaskView, PathView, TreeView

BUDGETS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 256)
NO_MODEL = "disabled: this Explorer shows a loaded trace, there is no model to run (pass a live Session instead)"
COMPARE = ("greedy vs sampled", "two budgets")


class Explorer(widgets.VBox):
    """`Explorer(session)` for a live ddtree.Session; `Explorer(records)`, `Explorer((records, meta))` or
    `Explorer("trace.json")` for a recorded trace."""

    def __init__(self, session_or_trace, *, seed: int = 0, play_interval_ms: int = 800):
        self.session, self.seed, self.twin = None, seed, None
        if _is_session(session_or_trace):
            self.session = session_or_trace
            self.records = list(self.session.records)
            s = self.session
            self.prompt_text = s.pair.decode(s.tokens[:s.prompt_len])
        else:
            self.records, meta = _trace(session_or_trace)
            self.prompt_text = str(meta.get("prompt_text", meta.get("prompt", "")))
        live = self.session is not None
        now = self.session.settings if live else self.records[-1]  # both carry method, verify, temperature, budget

        self.step_button = widgets.Button(description="Step", icon="step-forward", button_style="primary",
                                          tooltip="run one round")
        self.play = widgets.Play(interval=play_interval_ms, min=0, max=10**6, show_repeat=False,
                                 tooltip="step on a timer" if live else "replay the recorded rounds")
        self.reset_button = widgets.Button(description="Reset", icon="undo", tooltip="a fresh session, same prompt")
        self.round = widgets.IntSlider(description="round", min=0, max=max(len(self.records) - 1, 0),
                                       continuous_update=False, tooltip="revisit a past round")
        self.method = widgets.Dropdown(options=METHODS, description="method",
                                       value=now.method,
                                       layout=widgets.Layout(width="190px"))
        self.verify = widgets.ToggleButtons(options=("greedy", "sampled"),
                                            value=now.verify,
                                            style=dict(button_width="70px"))
        self.temperature = widgets.FloatSlider(description="temperature", min=0.0, max=2.0, step=0.05,
                                               value=now.temperature,
                                               continuous_update=False)
        self.budget = widgets.Dropdown(options=sorted(set(BUDGETS) | {now.budget}), value=now.budget,
                                       description="budget", layout=widgets.Layout(width="170px"))
        self.side_by_side = widgets.Checkbox(description="side by side", indent=False,
                                             tooltip="run each step also in a fork with other settings")
        self.compare = widgets.ToggleButtons(options=COMPARE, style=dict(button_width="130px"))
        self.budget_b = widgets.Dropdown(options=BUDGETS, value=8, description="budget B",
                                         layout=widgets.Layout(width="170px"))
        self.status = widgets.HTML()
        self.stats = widgets.HTML(EMPTY)
        self.tree = TreeView()
        self.mask = MaskView()
        self.logw = LogWeightView()
        self.path = PathView(prompt_text=self.prompt_text)
        self.left, self.right = TreeView(), TreeView()
        self.left_stats, self.right_stats = widgets.HTML(), widgets.HTML()
        half = widgets.Layout(width="50%", overflow="auto")
        self.pair_box = widgets.HBox([widgets.VBox([self.left_stats, self.left], layout=half),
                                      widgets.VBox([self.right_stats, self.right], layout=half)],
                                     layout=widgets.Layout(display="none"))
        model_controls = (self.step_button, self.reset_button, self.method, self.verify, self.temperature,
                          self.budget, self.side_by_side, self.compare, self.budget_b)
        if not live:
            for w in model_controls:
                w.disabled, w.tooltip = True, NO_MODEL
            self.status.value = f"<span style='color:#636363'>trace: {len(self.records)} recorded rounds</span>"
        super().__init__([
            widgets.HBox([self.step_button, self.play, self.reset_button, self.round]),
            widgets.HBox([self.method, self.verify, self.temperature, self.budget]),
            widgets.HBox([self.side_by_side, self.compare, self.budget_b]),
            self.status, self.stats, self.path, self.pair_box, self.tree,
            widgets.HBox([self.mask, self.logw], layout=widgets.Layout(flex_flow="row wrap")),
        ])
        self.add_class("ddtree-explorer")
        self.pair_box.add_class("ddtree-side-by-side")
        self.step_button.on_click(lambda _: self.step())
        self.reset_button.on_click(lambda _: self.reset())
        self.round.observe(lambda change: self.show_round(change["new"]), "value")
        self.play.observe(lambda change: self._tick(), "value")
        for w in (self.method, self.verify, self.temperature, self.budget):
            w.observe(lambda change: self._settings_changed(), "value")
        self.side_by_side.observe(lambda change: self._layout_compare(), "value")
        self._layout_compare()
        if self.records:
            self._goto_last()

    # ---------------------------------------------------------------------------------------------- actions
    def step(self) -> RoundRecord | None:
        """Run one round (and its side-by-side twin); returns the main session's record, None on a full context."""
        if self.session is None:
            raise ValueError("this Explorer shows a loaded trace; stepping needs a live Session")
        twin = self.session.fork(**self._variant()) if self.side_by_side.value else None
        try:
            record = self.session.step()
            other = twin.step() if twin is not None else None
        except ValueError as e:
            self.play.playing = False
            self.status.value = f"<span style='color:#e41a1c'>{html.escape(str(e))}</span>"
            return None
        self.records.append(record)
        if other is not None:
            self.twin = twin
            self._show_pair(record, other)
        self._goto_last()
        return record

    def reset(self) -> None:
        """A fresh Session from the same prompt with the current settings; history is cleared."""
        if self.session is None:
            raise ValueError("this Explorer shows a loaded trace; reset needs a live Session")
        from ddtree.session import Session
        s = self.session
        self.session = Session(s.pair, s.tokens[:s.prompt_len], seed=self.seed, **self._settings())
        self.records = []
        self.round.max, self.round.value = 0, 0
        for w in (self.stats, self.left_stats, self.right_stats):
            w.value = EMPTY
        self.path.show([])
        self.status.value = "reset: fresh session from the same prompt"

    def show_round(self, k: int) -> None:
        """Show recorded round k in every view."""
        if not self.records:
            return
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.records):
            raise ValueError(f"k must be a round index in [0, {len(self.records)}), got {k!r}")
        rec = self.records[k]
        self.stats.value = stats_html(rec, history=self.records[:k + 1])
        self.tree.show(rec)
        self.mask.show(rec)
        self.logw.show(rec)
        self.path.show(self.records[:k + 1], current=rec.index)

    # ---------------------------------------------------------------------------------------------- helpers
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
            self.step()
        elif self.records:
            nxt = self.round.value + 1
            if nxt >= len(self.records):
                self.play.playing = False
            else:
                self.round.value = nxt

    def _settings(self) -> dict:
        return dict(method=self.method.value, verify=self.verify.value, temperature=self.temperature.value,
                    budget=self.budget.value)

    def _settings_changed(self) -> None:
        if self.session is None:
            return
        try:
            self.session = self.session.fork(**self._settings())
        except ValueError as e:
            self.status.value = f"<span style='color:#e41a1c'>{html.escape(str(e))}</span>"
            return
        s = self.session.settings
        self.status.value = f"next rounds: {s.method}, {s.verify}, T={s.temperature:g}, budget {s.budget}"

    def _variant(self) -> dict:
        s = self.session.settings
        if self.compare.value == "two budgets":
            return dict(budget=self.budget_b.value)
        if s.sampled:
            return dict(verify="greedy")
        return dict(verify="sampled", temperature=s.temperature if s.temperature > 0 else 1.0)

    def _layout_compare(self) -> None:
        on = self.side_by_side.value
        self.pair_box.layout.display = "flex" if on else "none"
        self.compare.layout.display = "flex" if on else "none"
        self.budget_b.layout.display = "flex" if on else "none"

    def _show_pair(self, a: RoundRecord, b: RoundRecord) -> None:
        for view, stats, rec in ((self.left, self.left_stats, a), (self.right, self.right_stats, b)):
            view.show(rec)
            req = rec.requests[0]
            rule = rec.verify + (f" T={rec.temperature:g}" if rec.verify == "sampled" else "")
            stats.value = (f"<b>{html.escape(rule)}, budget {rec.budget}</b>: acceptance length "
                           f"{req.acceptance_length}, committed <code>{html.escape(repr(req.committed_text))}</code>")


def _is_session(obj) -> bool:
    session = sys.modules.get("ddtree.session")  # not imported yet: obj cannot be a Session (and no transformers)
    return session is not None and isinstance(obj, session.Session)


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

