"""Write tests/data/trace_small.json: a short recorded session for the view tests (no model needed to read it).

A tiny random pair decodes one prompt with an oracle drafter that ranks the true next token (from an autoregressive
reference) first, so the greedy walk accepts long paths. Rounds: 3 x DDTree budget 12 greedy; DDTree budget 40
with a drafter allowing few paths (the tree is capped below the budget: padding rows); DFlash; DDTree sampled.
Run: .venv/bin/python tests/data/make_trace.py
"""
from pathlib import Path

import torch

import ddtree
import ddtree.reference
from ddtree.models import tiny_random_pair

PROMPT = "a tree\n walk"
OUT = Path(__file__).with_name("trace_small.json")


def oracle(reference: list[int], vocab: int, *, narrow: bool):
    """Draft logits putting the reference token first; narrow=True leaves only 2 tokens at depths 1-2 and 1 after."""
    g = torch.Generator().manual_seed(0)

    def draft(pair, bonus, cache):
        depth = pair.block_size - 1
        logits = torch.randn(depth, vocab, generator=g)
        for d in range(depth):
            j = cache.length + 1 + d
            truth = reference[j] if j < len(reference) else 32
            logits[d, truth] = 10.0
            if narrow:
                keep = {truth, (truth + 1) % vocab} if d < 2 else {truth}
                drop = torch.ones(vocab, dtype=torch.bool)
                drop[list(keep)] = False
                logits[d, drop] = -torch.inf
        return logits

    return draft


def main() -> None:
    pair = tiny_random_pair(0)
    ar = ddtree.Session(pair, PROMPT, method="ar")
    ar.run(60, stop_on_eos=False)
    s = ddtree.Session(pair, PROMPT, method="ddtree", budget=12)
    ddtree.reference.draft_logits = oracle(ar.tokens[0], pair.vocab_size, narrow=False)
    for _ in range(3):
        s.step()
    ddtree.reference.draft_logits = oracle(ar.tokens[0], pair.vocab_size, narrow=True)
    s = s.fork(budget=40)
    s.step()
    ddtree.reference.draft_logits = oracle(ar.tokens[0], pair.vocab_size, narrow=False)
    s = s.fork(method="dflash")
    s.step()
    s = s.fork(method="ddtree", budget=12, verify="sampled", temperature=0.8, seed=1)
    s.step()
    prompt_text = pair.decode(s.tokens[0][:s.prompt_lens[0]])
    ddtree.save_trace(s.records, OUT, meta={"prompt": PROMPT, "prompt_text": prompt_text})
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): acceptance lengths "
          f"{[r.requests[0].acceptance_length for r in s.records]}, tree nodes "
          f"{[r.requests[0].n_nodes for r in s.records]}, rows {[r.num_draft_tokens for r in s.records]}")


if __name__ == "__main__":
    main()
