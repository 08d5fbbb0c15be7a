"""The losslessness check: DDTree and DFlash greedy decoding must reproduce autoregressive greedy tokens exactly.

At a divergence the check triages: the target's top-1 minus top-2 logit there, in units in the last place (ulps)
of the pair's dtype at the top-1 logit. Within TIE_ULPS it is a precision tie (kernels that reduce in another
order for 129 rows than for 1 flip near-ties in bfloat16); far apart it is a bug. Where the native engine's
bit-exact mode runs (CUDA, or Triton's interpreter on a CPU) the diverging prompt is decoded again in exact mode,
where every verify row has the bits of an autoregressive step: a tie flip disappears there, a real bug (a
corrupted mask, a wrong position) stays.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from ddtree.models import ModelPair, TargetCache, target_forward
from ddtree.session import Session

TIE_ULPS = 4.0  # a top-2 margin within this many ulps of the top-1 logit is a precision tie


@dataclass(frozen=True)
class Divergence:
    prompt: int  # index into the prompts
    method: str  # "ddtree" or "dflash"
    position: int  # index into the generated tokens of the first difference
    expected: int  # autoregressive greedy token there
    got: int
    margin: float  # the target's top-1 minus top-2 logit there
    margin_ulps: float  # the margin in ulps of the pair's dtype at the top-1 logit
    exact_rerun: int | None = None  # the exact-mode rerun's first divergence (-1: identical); None: not run

    @property
    def tie(self) -> bool:
        """Whether the top-2 logits were within TIE_ULPS ulps: a precision tie rather than a bug."""
        return self.margin_ulps <= TIE_ULPS

    def __str__(self) -> str:
        verdict = "a precision tie" if self.tie else "far apart: a real bug"
        text = (f"prompt {self.prompt} {self.method}: token {self.position} got {self.got} expected {self.expected} "
                f"(target top-2 margin {self.margin:.4g} = {self.margin_ulps:.3g} ulps: {verdict})")
        if self.exact_rerun is not None:
            text += ("; exact-mode rerun identical" if self.exact_rerun < 0
                     else f"; exact-mode rerun still diverges at token {self.exact_rerun}")
        return text


@dataclass(frozen=True)
class LosslessReport:
    ok: bool
    divergences: list[Divergence]
    tokens_checked: int

    def __str__(self) -> str:
        if self.ok:
            return f"lossless: {self.tokens_checked} tokens identical to autoregressive greedy"
        return "\n".join([f"NOT lossless: {len(self.divergences)} divergence(s)"]
                         + [f"  {d}" for d in self.divergences])


def exact_available(pair: ModelPair) -> bool:
    """Whether the native engine's bit-exact mode runs here: its Triton kernels need CUDA or the interpreter."""
    from ddtree.engine.decoder import fused_unsupported
    return (pair.device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1") and not fused_unsupported(
        pair.target)


def ulps(margin: float, top: float, dtype: torch.dtype) -> float:
    """`margin` in units in the last place of `dtype` at the value `top`."""
    exponent = math.frexp(abs(top))[1] - 1 if top else torch.finfo(dtype).minexp
    return margin / (torch.finfo(dtype).eps * 2.0 ** exponent)


def check_lossless(pair: ModelPair, prompts, max_new_tokens: int, *, budget: int = 32, chat: bool = True,
                   methods=("ddtree", "dflash"), backend: str = "auto", exact: bool | str = "auto") -> LosslessReport:
    """Greedy-decode every prompt autoregressively and with each of `methods` on `backend` (Session's); report
    each first divergence with the target's top-2 logit margin there (a plain causal forward) in ulps, and, with
    `exact` ("auto": where exact_available), the first divergence of the same prompt decoded in bit-exact mode."""
    if exact not in (True, False, "auto"):
        raise ValueError(f"exact must be True, False or 'auto', got {exact!r}")
    if exact is True and not exact_available(pair):
        raise ValueError("exact=True needs the native engine's Triton kernels: a CUDA pair, or TRITON_INTERPRET=1 "
                         "on a CPU, and a target the fused forward supports")
    rerun = exact is True or (exact == "auto" and exact_available(pair))
    divergences, checked = [], 0
    for i, prompt in enumerate(tqdm(list(prompts), desc="lossless check")):
        ar = Session(pair, prompt, method="ar", verify="greedy", chat=chat, backend=backend)
        reference = ar.run(max_new_tokens, stop_on_eos=False)[0].tokens
        exact_ar = None  # the prompt's exact-mode autoregressive output, decoded once if a method diverges
        for method in methods:
            tokens = _greedy(pair, prompt, method, budget, chat, max_new_tokens, backend=backend)
            checked += len(tokens)
            found = find_divergence(pair, ar.tokens[0][:ar.prompt_lens[0]], reference, tokens, prompt=i,
                                    method=method)
            if found is None:
                continue
            if rerun:
                if exact_ar is None:
                    exact_ar = _greedy(pair, prompt, "ar", budget, chat, max_new_tokens, backend="native", exact=True)
                exact_got = _greedy(pair, prompt, method, budget, chat, max_new_tokens, backend="native", exact=True)
                again = first_difference(exact_ar, exact_got)
                found = dataclasses.replace(found, exact_rerun=-1 if again is None else again)
            divergences.append(found)
    return LosslessReport(ok=not divergences, divergences=divergences, tokens_checked=checked)


def find_divergence(pair: ModelPair, prompt_ids: list[int], expected: list[int], got: list[int], *, prompt: int = 0,
                    method: str = "") -> Divergence | None:
    """The first difference between an expected (autoregressive greedy) and a got continuation of `prompt_ids`, with
    the target's top-2 logit margin there (a plain causal forward over the prompt and the expected tokens before
    it), or None when they agree."""
    pos = first_difference(expected, got)
    if pos is None:
        return None
    context = list(prompt_ids) + list(expected[:pos])
    logits, _ = target_forward(pair.target, context, torch.arange(len(context)), None, TargetCache(), [])
    top1, top2 = logits[-1].topk(2).values.tolist()
    return Divergence(prompt, method, pos, expected[pos] if pos < len(expected) else -1,
                      got[pos] if pos < len(got) else -1, top1 - top2, ulps(top1 - top2, top1, pair.dtype))


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two token lists differ (a length difference counts), None when equal."""
    pos = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
    return min(len(a), len(b)) if pos is None and len(a) != len(b) else pos


def _greedy(pair, prompt, method, budget, chat, max_new_tokens, **backend) -> list[int]:
    session = Session(pair, prompt, method=method, budget=budget, verify="greedy", chat=chat, **backend)
    return session.run(max_new_tokens, stop_on_eos=False)[0].tokens


def committed_logits(session: Session, rows: int) -> list[torch.Tensor]:
    """Step a native session until every request has `rows` verify rows on its committed path -> per request the
    target's logits there  # [rows, vocab]: row j is the verify row (a round's root or accepted node) of generated
    token j, whose logits chose generated token j + 1. What bit-exact mode promises equal, row for row, across
    methods, trees and batches."""
    if session.backend.name != "native":
        raise ValueError("committed_logits reads the native engine's verify logits: use backend='native'")
    out = [[] for _ in range(session.batch_size)]
    while min(sum(len(x) for x in r) for r in out) < rows:
        session.step()
        state = session.backend.last_round
        logits, accepted = state.verified.logits, state.walked.accepted  # [B, Q, V], [B, Q]
        for b, n in enumerate(state.walked.accept_len.tolist()):
            out[b].append(logits[b, accepted[b, :n]].clone())
    return [torch.cat(r)[:rows] for r in out]
