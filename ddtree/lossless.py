"""The losslessness check: DDTree and DFlash greedy decoding must reproduce autoregressive greedy tokens exactly."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from ddtree.models import ModelPair, TargetCache, target_forward
from ddtree.session import Session


@dataclass(frozen=True)
class Divergence:
    prompt: int  # index into the prompts
    method: str  # "ddtree" or "dflash"
    position: int  # index into the generated tokens of the first difference
    expected: int  # autoregressive greedy token there
    got: int
    margin: float  # the target's top-1 minus top-2 logit there: near 0 = a precision tie, large = a real bug


@dataclass(frozen=True)
class LosslessReport:
    ok: bool
    divergences: list[Divergence]
    tokens_checked: int

    def __str__(self) -> str:
        if self.ok:
            return f"lossless: {self.tokens_checked} tokens identical to autoregressive greedy"
        lines = [f"NOT lossless: {len(self.divergences)} divergence(s)"]
        lines += [f"  prompt {d.prompt} {d.method}: token {d.position} got {d.got} expected {d.expected} "
                  f"(target top-2 logit margin {d.margin:.4g}: {'near tie' if d.margin < 1e-2 else 'a real bug'})"
                  for d in self.divergences]
        return "\n".join(lines)


def check_lossless(pair: ModelPair, prompts, max_new_tokens: int, *, budget: int = 32, chat: bool = True,
                   methods=("ddtree", "dflash"), backend: str = "auto") -> LosslessReport:
    """Greedy-decode every prompt autoregressively and with each of `methods` on `backend` (Session's); report
    each first divergence with the target's top-2 logit margin at that position (computed by a plain causal
    forward)."""
    divergences, checked = [], 0
    for i, prompt in enumerate(tqdm(list(prompts), desc="lossless check")):
        ar = Session(pair, prompt, method="ar", verify="greedy", chat=chat, backend=backend)
        reference = ar.run(max_new_tokens, stop_on_eos=False)[0].tokens
        for method in methods:
            got = Session(pair, prompt, method=method, budget=budget, verify="greedy", chat=chat, backend=backend)
            tokens = got.run(max_new_tokens, stop_on_eos=False)[0].tokens
            checked += len(tokens)
            pos = next((j for j, (a, b) in enumerate(zip(reference, tokens)) if a != b), None)
            if pos is None and len(tokens) != len(reference):
                pos = min(len(tokens), len(reference))
            if pos is not None:
                context = ar.tokens[0][:ar.prompt_lens[0] + pos]
                logits, _ = target_forward(pair.target, context, torch.arange(len(context)), None, TargetCache(), [])
                top2 = logits[-1].topk(2).values
                divergences.append(Divergence(i, method, pos, reference[pos] if pos < len(reference) else -1,
                                              tokens[pos] if pos < len(tokens) else -1, float(top2[0] - top2[1])))
    return LosslessReport(ok=not divergences, divergences=divergences, tokens_checked=checked)
