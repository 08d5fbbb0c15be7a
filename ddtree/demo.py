"""`make demo`: DDTree on the embedded pair (SmolLM2-135M-Instruct + the project's DFlash drafter).

Decodes a built-in prompt round by round, prints a per-round table (round, context, tree nodes, accepted, acceptance
length, committed text, ms per stage) and writes a self-contained HTML report of every round.

`python -m ddtree.demo --synthetic` instead runs one round on a synthetic example needing no model: a bigram target
over a tiny corpus (its next-token distribution depends on the path) and a drafter that knows only, per depth, the
marginal distribution of the token there (as a DFlash drafter predicts a block without seeing its own choices).
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import torch

import ddtree
from ddtree._checks import MAX_BUDGET
from ddtree.files import check_regular_or_absent
from ddtree.settings import Method
from ddtree.text import format_rounds, format_tree

PROMPT = "Write a Python function that checks whether a string is a palindrome."
REPORT = "ddtree-report.html"
SYNTHETIC_BUDGET = 12  # --synthetic's default budget

CORPUS = ("the cat sat on the mat . the dog sat on the log . a cat ran to the mat . "
          "the dog ran to a log . the cat sat on a mat .")


def bigram_logits(words: list[str], vocab: list[str]) -> torch.Tensor:
    """`logits  # [vocab, vocab]` log of smoothed bigram counts: row = previous token."""
    index = {w: i for i, w in enumerate(vocab)}
    counts = torch.full((len(vocab), len(vocab)), 0.05)
    for a, b in zip(words, words[1:]):
        counts[index[a], index[b]] += 1
    return counts.log()


def synthetic_demo(budget: int = SYNTHETIC_BUDGET, depth: int = 5) -> None:
    """One round on a bigram target over a tiny corpus, with a drafter knowing only per-depth marginals."""
    words = CORPUS.split()
    vocab = sorted(set(words))
    decode = vocab.__getitem__
    target_table = bigram_logits(words, vocab)  # [vocab, vocab]
    root = vocab.index("the")

    # drafter: marginal of the token at each depth after the root, under the bigram chain
    step = torch.softmax(target_table, -1)
    dist = torch.nn.functional.one_hot(torch.tensor(root), len(vocab)).float()
    draft = []
    for _ in range(depth):
        dist = dist @ step
        draft.append(dist.log())
    draft_logits = torch.stack(draft)  # [depth, vocab]

    tree = ddtree.build_tree(draft_logits, budget).with_root_token(root)
    target_logits = target_table[tree.tokens]  # [n, vocab]: the target's logits at every node, given its path
    greedy = ddtree.verify_greedy(tree, target_logits)
    choice = target_logits.argmax(-1).tolist()
    print(f"DDTree round on a synthetic bigram example: budget {budget} (tree: {tree.n_nodes} "
          f"nodes, root included), draft depth {depth}, vocab {len(vocab)}")
    print("(* = accepted by the greedy walk; logw = node log-weight, the sum of draft log-probs on its path)\n")
    print(format_tree(tree, decode, accepted=greedy.accepted, target_choice=choice))
    print(f"\ngreedy: accepted {' '.join(map(decode, greedy.accepted_tokens))!r} + bonus {decode(greedy.bonus_token)!r}"
          f" -> {greedy.acceptance_length} tokens from one target forward")
    for seed in range(3):
        sampled = ddtree.verify_sampled(tree, target_logits, 1.0, generator=torch.Generator().manual_seed(seed))
        print(f"sampled (T=1, seed {seed}): committed {' '.join(map(decode, sampled.committed))!r}")

    trees = [tree, ddtree.build_tree(draft_logits, min(3, budget)).with_root_token(root), tree]
    print(f"\nverify batch of 3 requests (tree sizes {[t.n_nodes for t in trees]}, num_draft_tokens {budget + 1}):")
    for layout in ("padded", "unpadded"):
        batch = ddtree.pack_verify_batch(trees, [6, 9, 4], budget + 1, layout=layout)
        bad = ddtree.check_verify_batch(batch)
        per_request = [sum(c.request == b for c in bad) for b in range(3)]
        print(f"  {layout:9s} mask_indptr {batch.mask_indptr.tolist()} written at {batch.written_indptr.tolist()}"
              f" -> wrong mask cells per request {per_request}")


def run_demo(pair, prompt: str = PROMPT, *, method: str = "ddtree", budget: int | str = 32, max_new_tokens: int = 64,
             report=REPORT, temperature: float = 0.0, seed: int = 0) -> Path:
    """Decode `prompt` with `pair` (the greedy walk at temperature 0, else the exact sampled walk), print the
    per-round table and a summary, write the HTML report; returns its path."""
    from ddtree.report import write_html
    from ddtree.session import Session

    t0 = time.perf_counter()
    session = Session(pair, prompt, method=method, budget=budget, verify="sampled" if temperature else "greedy",
                      temperature=temperature or 1.0, seed=seed)
    gen = session.run(max_new_tokens)[0]
    wall = time.perf_counter() - t0
    if budget == "auto":  # timed when a choice first read them (in the run's time); the rest never
        costs = session.budget_costs
        print("verify ms per candidate budget:", ", ".join(
            f"{n or 'AR'}: {'not needed' if math.isnan(t) else f'{1e3 * t:.1f}'}"
            for n, t in zip(costs.budgets, costs.seconds)))
    walk = f"sampled walk, T={temperature:g}, seed {seed}" if temperature else "greedy walk"
    setting = f"budget {budget}" if method == Method.DDTREE else "one token a forward" if method == Method.AR else \
        f"a chain of {pair.block_size - 1} draft tokens"
    print(f"{method} ({walk}, {setting}) on: {prompt!r}\n")
    print(format_rounds(gen.records))
    ar = sum(r.budget == 0 for r in gen.records)
    chosen = f", budgets chosen: mean {sum(r.budget for r in gen.records) / len(gen.records):.1f} ({ar} AR rounds)" \
        if budget == "auto" and gen.records else ""
    print(f"\n{len(gen.tokens)} tokens in {len(gen.records)} target forwards: mean acceptance length "
          f"{gen.mean_acceptance_length:.2f}{chosen}, {gen.tokens_per_second:.1f} tokens/s (prefill excluded; "
          f"stopped: {gen.stopped}; {wall:.1f} s in all)\n")
    print(gen.text)
    path = write_html(gen.records, report, title=f"DDTree demo: {method}, {walk}, {setting}",
                      prompt_text=pair.decode(session.tokens[0][:session.prompt_lens[0]]))
    print(f"\nreport: {path.resolve()}")
    return path


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        """One line on stderr (no usage block, no traceback), exit status 2."""
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def main(argv=None) -> None:
    """The CLI: every option is checked before anything loads, and a bad value (or a failure later) is one line on
    stderr, no traceback."""
    parser = OneLineParser(prog="python -m ddtree.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--method", choices=("ddtree", "dflash", "ar"), default="ddtree")
    parser.add_argument("--budget", type=budget_option, default=None,
                        help=f"draft tree nodes per round, 1..{MAX_BUDGET}, or auto: each round's own (default 32; "
                             f"{SYNTHETIC_BUDGET} with --synthetic)")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0: the greedy walk (default); > 0: the exact sampled walk at this temperature")
    parser.add_argument("--seed", type=int, default=0, help="the sampled walk's seed (default 0)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--report", default=REPORT, help=f"HTML report path (default ./{REPORT})")
    parser.add_argument("--synthetic", action="store_true", help="one round on a synthetic example, no model")
    args = parser.parse_args(argv)
    if args.synthetic:
        try:
            budget = check_synthetic(parser, args)
        except ValueError as e:
            parser.error(str(e))
        synthetic_demo(budget)
        return
    args.budget = 32 if args.budget is None else args.budget
    try:
        check_options(args)
    except ValueError as e:
        parser.error(str(e))
    from ddtree.models import load_default_pair
    try:
        pair = load_default_pair()
        run_demo(pair, args.prompt, method=args.method, budget=args.budget, max_new_tokens=args.max_new_tokens,
                 report=args.report, temperature=args.temperature, seed=args.seed)
    except FileNotFoundError as e:
        raise SystemExit(f"{parser.prog}: error: {e} (--synthetic runs without a model)") from None
    except (ValueError, OSError) as e:
        raise SystemExit(f"{parser.prog}: error: {e}") from None


def budget_option(text: str) -> int | str:
    """--budget's value: an int, or "auto" (its range is checked with the other options)."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an int in [1, {MAX_BUDGET}] or auto, got {text!r}") from None


def check_synthetic(parser, args) -> int:
    """The budget of --synthetic; ValueError for "auto" (it chooses from measured verify costs: a model's), a budget
    out of range, or another model option (--prompt, --method, ...), which it would ignore."""
    ignored = [f"--{name.replace('_', '-')}" for name in ("prompt", "method", "temperature", "seed", "max_new_tokens")
               if getattr(args, name) != parser.get_default(name)]
    if ignored:
        raise ValueError(f"--synthetic runs one round with no model: {', '.join(ignored)} would be ignored (of the "
                         "model options it takes --budget)")
    budget = SYNTHETIC_BUDGET if args.budget is None else args.budget
    if budget == "auto":
        raise ValueError("--budget auto needs a model (it chooses from measured verify costs); --synthetic takes an "
                         f"int budget in [1, {MAX_BUDGET}]")
    if not 1 <= budget <= MAX_BUDGET:
        raise ValueError(f"--budget must be in [1, {MAX_BUDGET}], got {budget}")
    return budget


def check_options(args) -> None:
    """ValueError naming the first bad option of a parsed command line (the report path must be writable now)."""
    if not args.prompt.strip():
        raise ValueError("--prompt must be a non-empty text")
    if args.budget != "auto" and not 1 <= args.budget <= MAX_BUDGET:
        raise ValueError(f"--budget must be in [1, {MAX_BUDGET}] or auto, got {args.budget}")
    if args.budget == "auto" and args.method != Method.DDTREE:
        raise ValueError(f"--budget auto chooses DDTree tree sizes: it needs --method ddtree, got {args.method}")
    if not 0 <= args.temperature < float("inf"):
        raise ValueError(f"--temperature must be a finite number >= 0, got {args.temperature}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.max_new_tokens < 1:
        raise ValueError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    check_writable(args.report)


def check_writable(path) -> None:
    """ValueError unless write_html can write a file at `path`: nothing or a regular file there (a named pipe would
    block), and a folder a new file can be made in (write_html writes a temp file beside it, then renames it; tried
    with a temp file that is removed again)."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise ValueError(f"--report {path} is a directory; give a file path")
    if not target.parent.is_dir():
        raise ValueError(f"--report {path}: the folder {target.parent} does not exist")
    check_regular_or_absent(target, "--report")
    try:
        tempfile.TemporaryFile(dir=target.parent).close()
    except OSError as e:
        raise ValueError(f"--report {path} cannot be written ({e.strerror or e})") from None


if __name__ == "__main__":
    main()
