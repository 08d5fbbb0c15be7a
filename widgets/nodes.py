"""Per-node facts of one request's round, as plain data for every view (no widget imports).

A node's draft probability at depth d is exp(logw[node] - logw[parent]) (the node log-weight is the sum of draft
log-probs on its path), so it is exact for every node, whatever rank it has. The target's probability of a node is
p_target(token | parent's path), read from the parent's stored top-K; outside that top-K only an upper bound (the
parent's smallest stored probability) is known.
"""
from __future__ import annotations

import html

import math
from dataclasses import dataclass

from ddtree.record import RequestRound, RoundRecord
from ddtree.text import visible_whitespace

# viridis, 9 stops: low log-weight -> dark purple, high -> yellow
_VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
VIRIDIS_SCALE = [[k / (len(_VIRIDIS) - 1), c] for k, c in enumerate(_VIRIDIS)]  # plotly colorscale, same stops
ACCEPT_COLOR = "#e6550d"  # accepted path outline
BONUS_COLOR = "#c7e9c0"
PAD_COLOR = "#d9d9d9"
SELECT_COLOR = "#1f78b4"  # the selected (clicked) node
HOVER_COLOR = "#6a3d9a"  # linked-view highlight of the hovered node
DIVERGE_COLOR = "#e7298a"  # where two walks part (side by side)


@dataclass(frozen=True)
class NodeInfo:
    index: int
    parent: int  # -1 for the root
    token: int
    text: str  # decoded token, whitespace made visible
    depth: int
    rank: int  # draft rank at its depth, -1 for the root
    logw: float  # node log-weight (root 0)
    accepted: bool
    choice: int  # the target's token at this node (-1 where the record has none)
    choice_text: str
    target_prob: float | None  # p_target(token | parent's path) when in the parent's stored top-K
    target_prob_bound: float  # the parent's smallest stored probability: target_prob <= this when it is None
    draft_probs: tuple[float, ...]  # draft probability of each token on the path, depth 1..depth
    path_text: str  # decoded path tokens after the root, whitespace made visible


def token_text(req: RequestRound, token: int) -> str:
    """Visible-whitespace text of `token` (its id in angle brackets when the record does not hold it)."""
    return visible_whitespace(req.token_texts[token]) if token in req.token_texts else f"<{token}>"


def pick_request(record: RoundRecord, request: int) -> RequestRound:
    """record.requests[request], or a ValueError naming `request` (out of range, or finished before the round)."""
    if not isinstance(record, RoundRecord):
        raise ValueError(f"record must be a RoundRecord, got {type(record).__name__}")
    return record.request(request)


def node_infos(req: RequestRound) -> list[NodeInfo]:
    """One NodeInfo per tree node, in node order."""
    tree = req.tree
    tokens, parents = tree.tokens.tolist(), tree.parents.tolist()
    depths, ranks, logws = tree.depths.tolist(), tree.ranks.tolist(), tree.node_logws.tolist()
    accepted = set(req.accepted)
    top = [dict(zip(toks, probs)) for toks, probs in zip(req.target_top_tokens, req.target_top_probs)]
    raw = [req.token_texts.get(t, f"<{t}>") for t in tokens]
    out = []
    for i in range(tree.n_nodes):
        path = tree.path(i)
        p = parents[i]
        prob = top[p].get(tokens[i]) if p >= 0 else None
        bound = min(req.target_top_probs[p]) if p >= 0 and req.target_top_probs[p] else 1.0
        choice = req.target_choice[i]
        out.append(NodeInfo(
            index=i, parent=p, token=tokens[i], text=token_text(req, tokens[i]), depth=depths[i], rank=ranks[i],
            logw=logws[i], accepted=i in accepted, choice=choice,
            choice_text=token_text(req, choice) if choice >= 0 else "",
            target_prob=prob, target_prob_bound=bound,
            draft_probs=tuple(math.exp(logws[b] - logws[a]) for a, b in zip(path, path[1:])),
            path_text=visible_whitespace("".join(raw[j] for j in path[1:]))))
    return out


def describe(node: NodeInfo) -> str:
    """Multi-line plain text about one node: its path, draft probability per depth and the target's probability."""
    head = "root (previous bonus token)" if node.index == 0 else f"node {node.index}, depth {node.depth}, " \
        f"rank {node.rank}"
    lines = [f"{head}: '{node.text}'", f"path: '{node.path_text}'", f"log-weight {node.logw:.3f}"]
    if node.draft_probs:
        lines.append("draft p per depth: " + ", ".join(f"d{d + 1} {p:.3f}" for d, p in enumerate(node.draft_probs)))
    if node.index:
        lines.append(f"target p of this token: {target_prob_text(node)}")
    if node.choice >= 0:
        lines.append(f"target's choice here: '{node.choice_text}'")
    return "\n".join(lines)


def describe_line(node: NodeInfo) -> str:
    """describe() on one line (the pinned-node line under a tree)."""
    return " · ".join(describe(node).split("\n"))


def target_prob_text(node: NodeInfo) -> str:
    return "-" if node.index == 0 else f"{node.target_prob:.3f}" if node.target_prob is not None \
        else f"< {node.target_prob_bound:.3g}"


def logw_colors(logws: list[float]) -> list[str]:
    """Hex colour per log-weight on viridis, scaled from the smallest value (dark) to 0 (yellow)."""
    low = min(min(logws), -1e-9)
    out = []
    for w in logws:
        t = min(max(1 - w / low, 0.0), 1.0) * (len(_VIRIDIS) - 1)
        k = min(int(t), len(_VIRIDIS) - 2)
        a, b = _hex(_VIRIDIS[k]), _hex(_VIRIDIS[k + 1])
        out.append("#" + "".join(f"{round(x + (t - k) * (y - x)):02x}" for x, y in zip(a, b)))
    return out


def ink(color: str) -> str:
    """Black or white text for a fill colour."""
    r, g, b = _hex(color)
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#ffffff"


def _hex(color: str) -> tuple[int, int, int]:
    return tuple(int(color[k:k + 2], 16) for k in (1, 3, 5))


def escape(text: str) -> str:
    """`text` made safe for plotly hover, label and tick text (a subset of HTML): &, < and > escaped, newlines as
    <br>. Token text passes through it before it reaches a figure."""
    return html.escape(text, quote=False).replace("\n", "<br>")
