"""Plain-text views of a round, for terminals and logs (the notebook views live in ddtree.widgets)."""
from __future__ import annotations

from typing import Callable

from ddtree.tree import DraftTree


def format_tree(tree: DraftTree, decode: Callable[[int], str], *, accepted: list[int] = (),
                target_choice: list[int] | None = None) -> str:
    """One line per node, indented by depth: index, token text, depth, rank, node log-weight; accepted nodes are
    starred and, when `target_choice  # [n]` is given, the target's token at each node is shown."""
    accepted = set(accepted)
    kids = [[] for _ in range(tree.n_nodes)]
    for i, p in enumerate(tree.parents.tolist()[1:], start=1):
        kids[p].append(i)
    tokens, logws = tree.tokens.tolist(), tree.node_logws.tolist()
    lines = []

    def visit(i: int, prefix: str, last: bool) -> None:
        branch = "" if i == 0 else ("└─ " if last else "├─ ")
        text = "<root>" if tokens[i] < 0 else repr(decode(tokens[i]))
        mark = "*" if i in accepted else " "
        info = f"d{int(tree.depths[i])} r{int(tree.ranks[i])} logw {logws[i]:7.3f}" if i else "logw   0.000"
        choice = f"  target -> {decode(target_choice[i])!r}" if target_choice is not None else ""
        lines.append(f"{mark} {prefix}{branch}[{i}] {text}  ({info}){choice}")
        child_prefix = prefix + ("" if i == 0 else ("   " if last else "│  "))
        for k, c in enumerate(kids[i]):
            visit(c, child_prefix, k == len(kids[i]) - 1)

    visit(0, "", True)
    return "\n".join(lines)


_VISIBLE = {" ": "␣", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def visible_whitespace(text: str) -> str:
    """`text` with whitespace made visible: space -> '␣', newline -> '\\n', tab -> '\\t', other control
    characters -> '\\xNN' (a literal backslash is doubled so the escapes stay unambiguous)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return "".join(_VISIBLE.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c) for c in text)


def shorten(text: str, width: int) -> str:
    """`text` cut to at most `width` characters, with '…' marking a cut."""
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def format_rounds(records, *, text_width: int = 40) -> str:
    """A per-round summary table of RoundRecords (first request of each): round, context length, tree nodes,
    accepted draft tokens, acceptance length, committed text (whitespace made visible) and ms per stage (the
    stages of the first record's `times`)."""
    records = list(records)
    stages = list(records[0].times) if records else []
    head = f"{'round':>5} {'ctx':>5} {'nodes':>5} {'acc':>4} {'len':>4}  {'committed':<{text_width}} " + \
        " ".join(f"{s:>7}" for s in stages)
    lines = [head + "   (ms per stage)", "-" * (len(head) + 16)]
    for rec in records:
        req = rec.requests[0]
        text = shorten(visible_whitespace(req.committed_text), text_width)
        ms = " ".join(f"{1e3 * rec.times.get(s, 0.0):7.1f}" for s in stages)
        lines.append(f"{rec.index:>5} {req.context_len:>5} {req.n_nodes:>5} {len(req.accepted_tokens):>4} "
                     f"{req.acceptance_length:>4}  {text:<{text_width}} {ms}")
    return "\n".join(lines)
