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
