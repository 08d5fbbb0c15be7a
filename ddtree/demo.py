"""`make demo`: one DDTree round end to end on a built-in synthetic example, printed for a person to read.

The target is a bigram model of a tiny corpus (its next-token distribution depends on the path); the drafter only
knows, per depth, the marginal distribution of the token at that depth, as a DFlash drafter predicts a block
without seeing its own choices. (The real embedded pair takes over once the trained drafter ships.)
"""
from __future__ import annotations

import torch

import ddtree
from ddtree.text import format_tree

CORPUS = ("the cat sat on the mat . the dog sat on the log . a cat ran to the mat . "
          "the dog ran to a log . the cat sat on a mat .")


def bigram_logits(words: list[str], vocab: list[str]) -> torch.Tensor:
    """`logits  # [vocab, vocab]` log of smoothed bigram counts: row = previous token."""
    index = {w: i for i, w in enumerate(vocab)}
    counts = torch.full((len(vocab), len(vocab)), 0.05)
    for a, b in zip(words, words[1:]):
        counts[index[a], index[b]] += 1
    return counts.log()


def main(budget: int = 12, depth: int = 5) -> None:
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
    print(f"DDTree round on a synthetic bigram example: budget {budget}, draft depth {depth}, vocab {len(vocab)}")
    print("(* = accepted by the greedy walk; logw = node log-weight, the sum of draft log-probs on its path)\n")
    print(format_tree(tree, decode, accepted=greedy.accepted, target_choice=choice))
    print(f"\ngreedy: accepted {' '.join(map(decode, greedy.accepted_tokens))!r} + bonus {decode(greedy.bonus_token)!r}"
          f" -> {greedy.acceptance_length} tokens from one target forward")
    for seed in range(3):
        sampled = ddtree.verify_sampled(tree, target_logits, 1.0, generator=torch.Generator().manual_seed(seed))
        print(f"sampled (T=1, seed {seed}): committed {' '.join(map(decode, sampled.committed))!r}")

    trees = [tree, ddtree.build_tree(draft_logits, 3).with_root_token(root), tree]
    print(f"\nverify batch of 3 requests (tree sizes {[t.n_nodes for t in trees]}, num_draft_tokens {budget + 1}):")
    for layout in ("padded", "unpadded"):
        batch = ddtree.pack_verify_batch(trees, [6, 9, 4], budget + 1, layout=layout)
        bad = ddtree.check_verify_batch(batch)
        per_request = [sum(c.request == b for c in bad) for b in range(3)]
        print(f"  {layout:9s} mask_indptr {batch.mask_indptr.tolist()} written at {batch.written_indptr.tolist()}"
              f" -> wrong mask cells per request {per_request}")


if __name__ == "__main__":
    main()
