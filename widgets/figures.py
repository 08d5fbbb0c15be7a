"""Figures and HTML fragments built from plain records, shared by the widgets and ddtree.report (no widget
imports): node log-weights, the drafter's candidates, the committed path, a round's stats and its story (one
caption per stage), where two walks part, and budget sweeps."""
from __future__ import annotations

import html
import math
import re

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ddtree import budget as auto_budget
from ddtree.record import RequestRound, RoundRecord
from ddtree.settings import AUTO, Method, Verify, budget_order
from ddtree.text import shorten, visible_whitespace
from ddtree.widgets.nodes import (_VIRIDIS, ACCEPT_COLOR, HOVER_COLOR, VIRIDIS_SCALE, describe, escape,
                                  node_infos, token_text)

STAGES = ("draft", "tree", "verify", "walk", "commit")
VIEW_CSS = f"""
.ddtree-note {{ font-size: 11px; color: #636363; margin: 2px 0; }}
.ddtree-draft table {{ border-collapse: collapse; font: 10px/1.15 monospace; }}
.ddtree-draft th {{ font-weight: normal; color: #636363; padding: 1px 3px; }}
.ddtree-draft td {{ border: 1px solid #eee; padding: 1px 3px; text-align: center; white-space: pre; min-width: 40px; }}
.ddtree-draft td.ddtree-used {{ outline: 2px solid #333; outline-offset: -2px; }}
.ddtree-draft td.ddtree-acc {{ outline-color: {ACCEPT_COLOR}; }}
.ddtree-draft td.ddtree-hl {{ outline: 3px solid {HOVER_COLOR}; outline-offset: -3px; }}
.ddtree-path .ddtree-text {{ white-space: pre-wrap; font-family: monospace; font-size: 12px; line-height: 1.9; }}
.ddtree-path .ddtree-span {{ padding-bottom: 1px; }}
.ddtree-path .ddtree-current {{ background: #fff3e0; }}
.ddtree-path .ddtree-pending {{ color: #999; }}
.ddtree-path [data-key].ddtree-hl {{ background: rgba(106,61,154,.25); outline: 1px solid {HOVER_COLOR}; }}
.ddtree-prompt summary {{ cursor: pointer; font-size: 11px; color: #636363; }}
"""
# underline colour of a round's committed span by its acceptance length 1, 2, ..., 8+ (grey: no draft token taken)
ACCEPT_SCALE = ("#bdbdbd", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")


def accept_color(length: int) -> str:
    return ACCEPT_SCALE[min(max(length, 1), len(ACCEPT_SCALE)) - 1]


# ------------------------------------------------------------------------------------------------- log-weights
def logweight_figure(req: RequestRound, *, title: str = "", width: int = 700, height: int = 330) -> go.Figure:
    """Node log-weight by depth (nodes of one depth spread by draft rank; colour = log-weight, the tree's colour
    key as a colour bar), the accepted path joined in orange, and directly below on the same x, the target's
    probability of each node (p_target(token | parent's path)) as a stem. Traces, in order: nodes, accepted path,
    target probability, then the two (empty) highlight rings a linked view moves (top, bottom)."""
    infos = node_infos(req)[1:]
    max_rank = max((n.rank for n in infos), default=0)
    x = [n.depth + 0.7 * (n.rank / (max_rank + 1) - 0.35) for n in infos]
    logws = [n.logw for n in infos]
    low = min(min(logws, default=-1.0), -1e-9)
    acc = [(xi, n) for xi, n in zip(x, infos) if n.accepted]
    hover = [escape(describe(n)) for n in infos]
    probs = [n.target_prob if n.target_prob is not None else n.target_prob_bound for n in infos]
    stem = [ACCEPT_COLOR if n.accepted else "#bdbdbd" if n.target_prob is None else "#525252" for n in infos]
    ring = dict(type="scatter", x=[], y=[], mode="markers", hoverinfo="skip", showlegend=False,
                marker=dict(size=17, color="rgba(0,0,0,0)", line=dict(color=HOVER_COLOR, width=3)))
    traces = [
        dict(type="scatter", x=x, y=logws, mode="markers", name="node log-weight", showlegend=False,
             customdata=[n.index for n in infos], hovertext=hover, hoverinfo="text",
             marker=dict(size=9, color=logws, colorscale=VIRIDIS_SCALE, cmin=low, cmax=0,
                         colorbar=dict(title=dict(text="log-<br>weight", font=dict(size=10)), thickness=10, len=0.62,
                                       y=1, yanchor="top", tickfont=dict(size=9)),
                         line=dict(color=[ACCEPT_COLOR if n.accepted else "#555555" for n in infos],
                                   width=[2.5 if n.accepted else 0.5 for n in infos]))),
        dict(type="scatter", x=[0.0] + [a for a, _ in acc], y=[0.0] + [n.logw for _, n in acc], mode="lines",
             line=dict(color=ACCEPT_COLOR, width=2), name="accepted path", hoverinfo="skip"),
        dict(type="bar", x=x, y=probs, width=0.05, yaxis="y2", name="target p(node)", marker=dict(color=stem),
             showlegend=False,
             customdata=[n.index for n in infos], hoverinfo="text",
             hovertext=[f"node {n.index}: target p {html.escape(_prob(n), quote=False)}" for n in infos]),
        dict(ring, name="highlight"), dict(ring, yaxis="y2", name="highlight p"),
    ]
    layout = dict(
        title=dict(text=title or f"{len(infos)} draft nodes", font=dict(size=12), x=0.01, xanchor="left"),
        width=width, height=height, template="none", plot_bgcolor="white", hovermode="closest", bargap=0,
        margin=dict(l=55, r=10, t=34, b=36),
        legend=dict(orientation="h", x=1, xanchor="right", y=1.08, font=dict(size=9)),
        xaxis=dict(title=dict(text="depth (nodes of a depth spread by draft rank)", font=dict(size=10)), dtick=1,
                   showgrid=False, anchor="y2"),
        yaxis=dict(title=dict(text="log-weight", font=dict(size=10)), gridcolor="#eeeeee", domain=[0.38, 1]),
        yaxis2=dict(title=dict(text="target p", font=dict(size=10)), range=[0, 1.02], tickvals=[0, 0.5, 1],
                    domain=[0, 0.3], gridcolor="#eeeeee"))
    return go.Figure(traces, layout)


def _prob(node) -> str:
    return f"{node.target_prob:.3f}" if node.target_prob is not None else \
        f"< {node.target_prob_bound:.3g} (not in the parent's stored top-K)"


def colour_key_html(req: RequestRound) -> str:
    """The log-weight colour key of a tree: a viridis bar from the lowest node log-weight to 0."""
    low = min(min(req.tree.node_logws.tolist()), -1e-9)
    bar = ",".join(_VIRIDIS)
    return ("<span class='ddtree-key' style='display:inline-flex;align-items:center;gap:4px;font-size:11px'>"
            f"log-weight {low:.1f}<span style='display:inline-block;width:90px;height:10px;"
            f"background:linear-gradient(to right,{bar});border:1px solid #999'></span>0</span>")


# ------------------------------------------------------------------------------------------------- draft
def draft_html(req: RequestRound) -> str:
    """The drafter's candidates before the heap chose: one column per depth, its top tokens by rank (draft
    probability shading the cell). Boxed cells hold a tree node's token (×k: k nodes share it, under different
    parents); orange boxes are on the accepted path. Cells carry data-key 'd<depth>r<rank>' for linked marks."""
    if not req.draft_top_tokens:
        return "<div class='ddtree-draft'><i>no draft: autoregressive rounds verify the root alone</i></div>"
    used, acc = {}, set()
    for n in node_infos(req)[1:]:
        used[(n.depth, n.rank)] = used.get((n.depth, n.rank), 0) + 1
        if n.accepted:
            acc.add((n.depth, n.rank))
    depth, k = len(req.draft_top_tokens), len(req.draft_top_tokens[0])
    deepest = max((d for d, _ in used), default=0)
    shown = min(k, max((r for _, r in used), default=0) + 3)
    beyond = sum(c for (_, r), c in used.items() if r >= k)
    head = "".join(f"<th>d{d + 1}</th>" for d in range(depth))
    body = []
    for r in range(shown):
        cells = []
        for d in range(depth):
            tok, lp = req.draft_top_tokens[d][r], req.draft_top_logprobs[d][r]
            p = 2.718281828459045 ** lp if lp > -1e29 else 0.0
            key, count = (d + 1, r), used.get((d + 1, r), 0)
            cls = "ddtree-used" + (" ddtree-acc" if key in acc else "") if count else ""
            text = html.escape(shorten(token_text(req, tok), 7))
            tip = html.escape(f"depth {d + 1}, rank {r}: {token_text(req, tok)!r} p={p:.3f}"
                              + (f"; {count} tree node(s)" if count else "; not in the tree"))
            badge = f"<sup>×{count}</sup>" if count > 1 else ""
            cells.append(f"<td class='{cls}' data-key='d{d + 1}r{r}' title='{tip}' "
                         f"style='background:rgba(49,130,189,{min(p, 1.0) ** 0.5 * 0.85:.2f});"
                         f"color:{'#fff' if p > 0.3 else '#000'}'>{text}{badge}<br><small>{p:.2f}</small></td>")
        body.append(f"<tr><th>r{r}</th>{''.join(cells)}</tr>")
    note = f"; {beyond} tree node(s) at ranks ≥ {k} (beyond the stored top-{k})" if beyond else ""
    return ("<div class='ddtree-draft'><div class='ddtree-note'>the drafter's top tokens per depth (one forward over "
            f"[bonus, MASK×{depth}]); boxed = chosen by the heap ({sum(used.values())} nodes, depth ≤ {deepest}), "
            f"orange = accepted{note}</div><table><tr><th></th>{head}</tr>{''.join(body)}</table></div>")


# ------------------------------------------------------------------------------------------------- path text
def path_html(records: list[RoundRecord], *, prompt_text: str = "", request: int = 0,
              current: int | None = None, pending: bool = False) -> str:
    """The committed text so far: the prompt folded (chat template and all) above, then the token the prompt's
    prefill forward committed (round 0's root, when round 0 is among the records) and each round's committed span,
    underlined in the colour of its acceptance length (hover for details). The `current` round is tinted and its
    tokens carry data-key 'n<node>' / 'bonus' for linked marks; `pending` leaves the current round's span out (not
    committed yet: the story's earlier stages)."""
    records = [r for r in records if r.requests[request] is not None]  # the rounds it took part in
    parts = [_prefill_html(records[0].requests[request])] if records and records[0].index == 0 else []
    for k, rec in enumerate(records):
        req = rec.requests[request]
        now = rec.index == current
        if now and pending:
            parts.append("<span class='ddtree-span ddtree-current ddtree-pending'>…</span>")
            continue
        tip = html.escape(f"round {rec.index} ({rec.method}, {rec.verify}): {len(req.accepted_tokens)} draft tokens "
                          f"accepted + bonus = acceptance length {req.acceptance_length}")
        parts.append(f"<span class='ddtree-span{' ddtree-current' if now else ''}' data-round='{rec.index}' "
                     f"style='border-bottom:3px solid {accept_color(req.acceptance_length)}' title='{tip}'>"
                     f"{_tokens_html(req) if now else html.escape(req.committed_text)}</span>")
    key = "".join(f"<span style='border-bottom:3px solid {c};padding:0 3px'>{k + 1}{'+' if k == 7 else ''}</span>"
                  for k, c in enumerate(ACCEPT_SCALE))
    return (f"<div class='ddtree-path'><div class='ddtree-note'>underline = tokens that round's target forward "
            f"committed: {key}</div>{_prompt_html(prompt_text)}<div class='ddtree-text'>"
            + ("".join(parts) or "<i style='color:#999'>no round yet</i>") + "</div></div>")


def _prefill_html(req: RequestRound) -> str:
    """Round 0's root: the first generated token, committed by the prefill forward (one token, grey underline)."""
    root = int(req.tree.tokens[0])
    if root < 0:
        return ""
    text = req.token_texts.get(root, f"<{root}>")
    tip = "the prompt's prefill forward committed this token (the root of round 0's tree)"
    return (f"<span class='ddtree-prefill' data-round='prefill' style='border-bottom:3px solid {accept_color(1)}' "
            f"title='{tip}'>{html.escape(text)}</span>")


def _tokens_html(req: RequestRound) -> str:
    """The round's committed text as one span per token (keyed by node), when the per-token texts add up."""
    keys = [f"n{i}" for i in req.accepted[1:]] + ["bonus"]
    texts = [req.token_texts.get(t, "") for t in req.committed]
    if "".join(texts) != req.committed_text:
        return html.escape(req.committed_text)
    return "".join(f"<span data-key='{k}'>{html.escape(t)}</span>" for k, t in zip(keys, texts))


_SPECIAL = re.compile(r"<\|[^|<>]*\|>|<s>|</s>")


def prompt_summary(prompt_text: str, width: int = 90) -> str:
    """The prompt's last message without chat-template markers, on one line (the folded prompt's summary)."""
    segments = [s.strip() for s in _SPECIAL.split(prompt_text)]
    segments = [s for s in segments if s and s.lower() not in ("assistant", "user", "system")]
    text = segments[-1] if segments else prompt_text.strip()
    first, _, rest = text.partition("\n")
    if rest and first.strip().lower() in ("user", "human", "system"):
        text = rest
    text = " ".join(text.split())
    return text if len(text) <= width else "…" + text[-(width - 1):]


def _prompt_html(prompt_text: str) -> str:
    if not prompt_text:
        return ""
    return (f"<details class='ddtree-prompt'><summary>prompt ({len(prompt_text)} characters, chat template folded): "
            f"<q>{html.escape(prompt_summary(prompt_text))}</q></summary><div class='ddtree-text' "
            f"style='color:#888'>{html.escape(prompt_text)}</div></details>")


# ------------------------------------------------------------------------------------------------- stats, story
def stats_html(record: RoundRecord, *, request: int = 0, history: list[RoundRecord] = ()) -> str:
    """One round at a glance, on one line: settings, context, tree nodes, accepted, acceptance length, the mean
    over `history`, and ms per stage."""
    req = record.request(request)
    rule = record.verify + (f" T={record.temperature:g}" if record.verify == Verify.SAMPLED else "")
    budget = [("budget", req.budget)] if record.method == Method.DDTREE else []  # the chain and AR have none
    cells = [("round", record.index), ("method", record.method), ("verify", rule), *budget,
             ("context", req.context_len), ("tree nodes", req.n_nodes), ("rows", record.num_draft_tokens),
             ("accepted", len(req.accepted_tokens)), ("acceptance length", req.acceptance_length)]
    if len(record.requests) > 1:
        cells.insert(1, ("request", f"{request} of {len(record.requests)}"))
    mine = [r.requests[request] for r in history if r.requests[request] is not None]
    if mine:
        mean = sum(r.acceptance_length for r in mine) / len(mine)
        cells.append((f"mean over {len(mine)}", f"{mean:.2f}"))
    ms = " ".join(f"{s} {1e3 * t:.1f}" for s, t in record.times.items())
    items = "".join(f"<span class='ddtree-stat'><small>{html.escape(k)}</small> <b>{html.escape(str(v))}</b></span>"
                    for k, v in cells)
    return (f"<div class='ddtree-stats' style='font-size:12px;display:flex;flex-wrap:wrap;gap:2px 12px'>{items}"
            f"<span class='ddtree-stat' style='color:#636363'><small>ms per stage</small> {html.escape(ms)}</span>"
            f"{choice_html(record.choice)}</div>")


CHOICE_REASONS = {"start": "nothing known yet: the smallest tree", "best": "the highest expected rate",
                  "kept": "no other candidate expected MARGIN faster",
                  "probe": "a speculative round after PROBE_EVERY AR rounds"}


def choice_html(choice) -> str:
    """budget="auto"'s choice in a round (a ddtree.budget.Choice, or None): the candidate it ran, why, and every
    candidate's expected committed tokens per second (the chosen one bold; 0 nodes is AR, not speculating)."""
    if choice is None:
        return ""
    rates = " · ".join(("<b>{}</b>" if n == choice.budget else "{}").format(
        f"{'AR' if n == 0 else n} {'?' if math.isnan(r) else f'{r:.0f}'}") for n, r in zip(choice.candidates,
                                                                                      choice.rates))
    ran = "AR (not speculating)" if choice.budget == 0 else f"DDTree-{choice.budget}"
    seen = [(t, n) for n, t in zip(choice.candidates, choice.typical) if n != 0 and not math.isnan(t)]
    recent = f"; over recent rounds DDTree-{max(seen)[1]} {max(seen)[0]:.0f} against AR {choice.typical[0]:.0f}" \
        if seen and choice.candidates[0] == 0 else ""
    return (f"<span class='ddtree-stat ddtree-choice'><small>auto chose</small> <b>{ran}</b> "
            f"<small>({html.escape(_reason(choice.reason))}; expected tokens/s this round {rates}{recent})</small>"
            "</span>")


def _reason(reason: str) -> str:
    return CHOICE_REASONS[reason].replace("MARGIN", f"{auto_budget.MARGIN:.0%}").replace(
        "PROBE_EVERY", str(auto_budget.PROBE_EVERY))


def stage_caption(record: RoundRecord, stage: str, *, request: int = 0) -> str:
    """One sentence telling what happens at `stage` of the round (one of STAGES), with the round's numbers."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    req = record.request(request)
    t = lambda tok: html.escape(repr(token_text(req, tok)))  # noqa: E731
    depth = len(req.draft_top_tokens)
    root, nodes, rows = int(req.tree.tokens[0]), req.n_nodes - 1, len(req.input_ids)
    deepest = int(req.tree.depths.max()) if req.n_nodes > 1 else 0
    path = " → ".join(["root"] + [t(int(req.tree.tokens[i])) for i in req.accepted[1:]])
    sampled = record.verify == Verify.SAMPLED and record.temperature > 0
    how = f"draws from the target's distribution (T={record.temperature:g})" if sampled else "takes the target's argmax"
    text = {
        "draft": f"one drafter forward over [bonus {t(root)}, MASK×{depth}] gives {depth} per-depth distributions "
                 "(the candidates grid: its best tokens per depth, boxed where the heap kept a node)." if depth else
                 "autoregressive: no draft; the tree is the root alone.",
        "tree": f"the best-first heap popped {nodes} nodes in decreasing path score (#i = pop order, colour = "
                f"log-weight = sum of draft log-probs on the path); {len(req.tree.children(0))} at depth 1, "
                f"deepest {deepest}." if record.method == Method.DDTREE else
                f"DFlash's chain: the drafter's best token at each of {nodes} depths, one path, no branches."
                if record.method == Method.DFLASH else "autoregressive: no tree; the root alone is verified.",
        "verify": f"one target forward over {rows} rows ({req.n_nodes} nodes"
                  + (f", {rows - req.n_nodes} padding" if rows > req.n_nodes else "")
                  + f") at positions {req.context_len}..{req.context_len + deepest}; each row sees the "
                  f"{req.context_len}-token prefix and exactly its ancestors (the mask).",
        "walk": f"the walk {how} at each node and moves to the child holding it: {path}; at node {req.accepted[-1]} "
                f"the target chose {t(req.bonus_token)}, no child's token: stop." if nodes else
                f"the target {how.split(' ', 1)[1]} at the root: {t(req.bonus_token)}, the round's one token.",
        "commit": f"{len(req.accepted_tokens)} draft tokens + the bonus = {req.acceptance_length} tokens "
                  f"<q>{html.escape(visible_whitespace(req.committed_text))}</q> committed by one target forward; "
                  f"the context grows to {req.context_len + req.acceptance_length} and the bonus {t(req.bonus_token)} "
                  "roots the next tree.",
    }[stage]
    return f"<b>{STAGES.index(stage) + 1} · {stage}</b>: {text}"


def divergence(a: RequestRound, b: RequestRound) -> tuple[int, int, int, str]:
    """Where two walks of one state part: (tokens both committed first, A's node there, B's node there, a
    sentence). The nodes are where each walk's next choice differs (its last node when it ran out of nodes)."""
    common = 0
    for x, y in zip(a.committed, b.committed):
        if x != y:
            break
        common += 1
    node_a, node_b = (r.accepted[min(common, len(r.accepted) - 1)] for r in (a, b))
    if a.committed == b.committed:
        return common, node_a, node_b, "both walks commit the same tokens"
    agree = html.escape(visible_whitespace("".join(a.token_texts.get(tok, "?") for tok in a.committed[:common])))
    nxt = lambda r: html.escape(repr(token_text(r, r.committed[common]))) if common < len(r.committed) \
        else "nothing more"  # noqa: E731
    where = f"the walks agree on {common} token(s) <q>{agree}</q>, then part at node {node_a} / {node_b}" if common \
        else "the walks part at the root"
    return common, node_a, node_b, f"{where}: A commits {nxt(a)}, B commits {nxt(b)}"


# ------------------------------------------------------------------------------------------------- sweeps
def median_rows(rows: list[dict]) -> list[dict]:
    """Rows repeated over runs (ddtree.sweep.summarize rows, each with a 'repeat' key) -> one row per (method, budget,
    temperature): the median of every numeric key, and its smallest and largest value as '<key>_lo' / '<key>_hi'."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["method"], row["budget"], row["temperature"]), []).append(row)
    out = []
    for (method, budget, temperature), group in groups.items():
        row = {"method": method, "budget": budget, "temperature": temperature, "repeats": len(group)}
        for key in group[0]:
            values = sorted(r[key] for r in group
                            if isinstance(r.get(key), (int, float)) and not isinstance(r[key], bool))
            if key in row or key == "repeat" or len(values) != len(group):
                continue
            mid = len(values) // 2
            row[key] = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
            row[f"{key}_lo"], row[f"{key}_hi"] = values[0], values[-1]
        out.append(row)
    return sorted(out, key=lambda r: (r["method"], r["temperature"], budget_order(r["budget"])))


def sweep_figure(rows: list[dict], *, title: str = "", width: int = 900, height: int = 380,
                 best: dict[float, int] | None = None) -> go.Figure:
    """Acceptance length and tokens/s versus budget, one line per (method, temperature), from ddtree.sweep.summarize
    (or median_rows) rows; autoregressive rows (method 'ar') are drawn as dotted horizontal baselines, budget "auto"
    rows as a dashed level with a diamond at the mean budget its rounds chose. Rows with '<key>_lo' / '<key>_hi' get
    error bars (the spread over repeats); `best` (temperature -> budget) is starred."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("acceptance length (tokens per target forward)",
                                                        "tokens per second"))
    budgets = sorted({r["budget"] for r in rows if r["method"] != "ar" and r["budget"] != AUTO})
    chosen = [r["mean_budget"] for r in rows if r["budget"] == AUTO]  # where only auto ran, its levels span these
    span = [min(budgets), max(budgets)] if budgets else [min(chosen), max(chosen)] if chosen else [1, 1]
    groups = sorted({(r["method"], r["temperature"], r["budget"] == AUTO) for r in rows})
    for g, (method, temperature, auto) in enumerate(groups):
        pts = sorted((r for r in rows if (r["method"], r["temperature"], r["budget"] == AUTO) ==
                      (method, temperature, auto)), key=lambda r: budget_order(r["budget"]))
        name = f"{method} {'auto ' if auto else ''}T={temperature:g}"
        color = f"hsl({(g * 67) % 360},60%,45%)"
        level = method == Method.AR or auto  # one value, drawn across the fixed budgets
        line = dict(color=color, dash="dot" if method == Method.AR else "dash" if auto else None)
        xs = span if level else [r["budget"] for r in pts]
        for col, key in ((1, "acceptance_length"), (2, "tokens_per_second")):
            ys = [pts[0][key]] * len(xs) if level else [r[key] for r in pts]
            bars = None
            if method != Method.AR and all(f"{key}_lo" in r for r in pts):
                bars = dict(type="data", symmetric=False, array=[r[f"{key}_hi"] - r[key] for r in pts],
                            arrayminus=[r[key] - r[f"{key}_lo"] for r in pts], color=color, thickness=1.2)
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines" if level else "lines+markers", name=name, line=line,
                                     legendgroup=name, showlegend=col == 1, error_y=None if auto else bars),
                          row=1, col=col)
            if auto:
                fig.add_trace(go.Scatter(x=[pts[0]["mean_budget"]], y=ys[:1], mode="markers", error_y=bars,
                                         marker=dict(symbol="diamond", size=10, color=color), name=name,
                                         hovertext=[f"auto: mean budget {pts[0]['mean_budget']:.1f}"],
                                         legendgroup=name, showlegend=False), row=1, col=col)
        pick = (best or {}).get(temperature)
        top = [r for r in pts if r["budget"] == pick and method != Method.AR]
        if top:
            x = top[0]["mean_budget"] if auto else pick
            fig.add_trace(go.Scatter(x=[x], y=[top[0]["tokens_per_second"]], mode="markers+text",
                                     marker=dict(symbol="star", size=16, color=color, line=dict(color="#000", width=1)),
                                     text=[f"best: {pick}"], textposition="top center", name=f"best budget ({name})",
                                     legendgroup=name, showlegend=False), row=1, col=2)
    fig.update_xaxes(title="budget (draft nodes)", type="log", tickvals=budgets, ticktext=[str(b) for b in budgets])
    fig.update_layout(title=title, width=width, height=height, template="none", plot_bgcolor="white",
                      margin=dict(l=50, r=20, t=60, b=50))
    return fig
