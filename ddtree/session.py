"""Sessions: step DDTree, DFlash (chain) or autoregressive decoding round by round on a target/drafter pair.

One round, for every method:
  drafter forward on [bonus, MASK...] conditioned on the committed context  (skipped for "ar")
  -> a tree (build_tree for "ddtree", chain_tree for "dflash", the root alone for "ar"), rooted at the bonus token
  -> a padded verify batch -> ONE target forward over the tree with the ancestor mask at positions context + depth
  -> greedy or exact sampled walk -> keep only the accepted path in the target KV cache
  -> the target features of the accepted nodes extend the drafter's context.
Invariant between rounds: the target cache holds every committed token but the last (the bonus, which roots the
next tree), and so does the drafter's context.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch
from tqdm.auto import tqdm

from ddtree._checks import check_int, check_temperature, check_top_p
from ddtree.batch import expected_mask, pack_verify_batch
from ddtree.models import ModelPair, TargetCache, draft_logits, target_forward
from ddtree.record import METHODS, VERIFY_RULES, RequestRound, RoundRecord
from ddtree.tree import DraftTree, build_tree, chain_tree, root_tree
from ddtree.verify import VerifyResult, sampling_probs, verify_greedy, verify_sampled

TOP_K = 16  # top-K entries per depth / node kept in records
STAGES = ("draft", "tree", "pack", "verify", "walk", "commit")
BACKENDS = ("reference", "native")


@dataclass(frozen=True)
class Settings:
    method: str = "ddtree"
    budget: int = 32
    verify: str = "greedy"
    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.verify not in VERIFY_RULES:
            raise ValueError(f"verify must be one of {VERIFY_RULES}, got {self.verify!r}")
        check_int("budget", self.budget)
        check_temperature("temperature", self.temperature, allow_zero=True)
        check_top_p(self.top_p)

    @property
    def sampled(self) -> bool:
        return self.verify == "sampled" and self.temperature > 0


@dataclass
class Generation:
    text: str  # decoded generated tokens
    tokens: list[int]  # generated tokens (prompt excluded)
    records: list[RoundRecord]
    acceptance_lengths: list[int]  # tokens committed per target forward, one per round
    stage_times: dict[str, float]  # seconds per stage, summed over rounds (prefill included under "prefill")
    tokens_per_second: float  # generated tokens / decoding wall time (prefill excluded)
    stopped: str = "max_new_tokens"  # why it stopped: "max_new_tokens", "eos" or "context"

    @property
    def mean_acceptance_length(self) -> float:
        return sum(self.acceptance_lengths) / max(len(self.acceptance_lengths), 1)


class Session:
    """Decode one prompt round by round. `.step()` -> RoundRecord, `.run(n)` -> Generation, `.fork()` -> copy.

    backend="reference" runs the Hugging Face target (one request); backend="native", or a list of prompts, runs
    the static-cache engine (ddtree.engine.BatchSession) with one RoundRecord entry per request.
    """

    def __new__(cls, pair=None, prompt=None, *, backend: str = "reference", **kwargs):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        batch = isinstance(prompt, (list, tuple)) and bool(prompt) and all(
            isinstance(p, (str, list, tuple)) for p in prompt)
        if cls is Session and (backend == "native" or batch):
            from ddtree.engine import BatchSession
            return BatchSession(pair, list(prompt) if batch else [prompt], **kwargs)
        return super().__new__(cls)

    def __init__(self, pair: ModelPair, prompt, *, method: str = "ddtree", budget: int = 32, verify: str = "greedy",
                 temperature: float = 1.0, top_p: float = 1.0, seed: int = 0, chat: bool = True,
                 backend: str = "reference"):
        self.pair = pair
        self.settings = make_settings(pair, method, budget, verify, temperature, top_p)
        self.generator = torch.Generator(device=pair.device).manual_seed(check_int("seed", seed))
        prompt_ids = encode_prompt(pair, prompt, chat, self.settings)
        self.prompt_len = len(prompt_ids)
        self.times = {"prefill": 0.0}
        self.records: list[RoundRecord] = []
        self.target_cache = TargetCache()
        self.draft_cache = pair.drafter.new_cache() if pair.drafter is not None else None
        with timed(self.times, "prefill", pair.device):
            positions = torch.arange(self.prompt_len)
            logits, features = target_forward(pair.target, prompt_ids, positions, None, self.target_cache,
                                              pair.target_layer_ids)
            extend_drafter(pair, self.draft_cache, features, positions)
            first = walk(self.settings, root_tree(prompt_ids[-1]), logits[-1:], self.generator)
        self.tokens = prompt_ids + [first.bonus_token]

    # ----------------------------------------------------------------------------------------------- public
    @property
    def generated(self) -> list[int]:
        return self.tokens[self.prompt_len:]

    @property
    def context_len(self) -> int:
        """Committed tokens in the target's cache (all but the last committed token)."""
        return len(self.tokens) - 1

    def fork(self, **overrides) -> Session:
        """An independent copy of this session's state; `overrides` (method, budget, verify, temperature, top_p,
        seed) change how the next rounds run. Without `seed` the sampler continues from the same RNG state."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.settings, twin.generator = fork_settings(self.pair, self.settings, self.generator, overrides)
        twin.tokens = list(self.tokens)
        twin.records = list(self.records)
        twin.times = dict(self.times)
        twin.target_cache = self.target_cache.clone()
        twin.draft_cache = self.draft_cache.clone() if self.draft_cache is not None else None
        return twin

    def step(self) -> RoundRecord:
        """Run one round and return its record."""
        s, pair = self.settings, self.pair
        ctx = self.context_len
        check_room(pair, s, ctx, pair.max_context)
        times = dict.fromkeys(STAGES, 0.0)
        with timed(times, "draft", pair.device):
            dlogits = None if s.method == "ar" else draft_logits(pair, self.tokens[-1], self.draft_cache)  # [B-1, V]
        with timed(times, "tree", pair.device):
            tree = draft_tree(s, dlogits, self.tokens[-1])
        with timed(times, "pack", pair.device):
            q = num_draft_tokens(s, pair)
            batch = pack_verify_batch([tree], [ctx], q)
            mask = expected_mask(batch, 0)  # [q, ctx + q]
        with timed(times, "verify", pair.device):
            logits, features = target_forward(pair.target, batch.input_ids, batch.positions, mask.to(pair.device),
                                              self.target_cache, pair.target_layer_ids)
        with timed(times, "walk", pair.device):
            result = walk(s, tree, logits[:tree.n_nodes], self.generator)
        with timed(times, "commit", pair.device):
            self.target_cache.compact(ctx, result.accepted)
            accepted = torch.tensor(result.accepted)
            extend_drafter(pair, self.draft_cache, features[accepted.to(features.device)], ctx + tree.depths[accepted])
            self.tokens += result.committed
        record = RoundRecord(
            index=len(self.records), method=s.method, verify=s.verify, temperature=s.temperature, top_p=s.top_p,
            budget=s.budget, num_draft_tokens=q, times=times,
            requests=[request_round(pair, s, ctx, tree, dlogits, batch.input_ids, batch.positions,
                                    logits[:tree.n_nodes], result)])
        self.records.append(record)
        return record

    def run(self, max_new_tokens: int, *, stop_on_eos: bool = True, progress: bool = False) -> Generation:
        """Step until `max_new_tokens` tokens are generated (counting those already generated), an EOS token is
        committed (when stop_on_eos) or the context is full. Extra tokens of the last round are cut off."""
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        first_record = len(self.records)
        eos = self.pair.eos_token_ids
        stopped = "max_new_tokens"
        bar = tqdm(total=max_new_tokens, desc=f"{self.settings.method} decoding", unit="tok", disable=not progress)
        t0 = time.perf_counter()
        while len(self.generated) < max_new_tokens:
            if stop_on_eos and eos_index(self.generated, eos) is not None:
                stopped = "eos"
                break
            try:
                self.step()
            except ContextFull:
                stopped = "context"
                break
            bar.update(min(len(self.generated), max_new_tokens) - bar.n)
        bar.close()
        records = self.records[first_record:]
        return make_generation(self.pair, self.generated, records, [r.requests[0].acceptance_length for r in records],
                               self.times["prefill"], time.perf_counter() - t0, max_new_tokens, stop_on_eos, stopped)


# --------------------------------------------------------------------------------- shared by both backends
class ContextFull(ValueError):
    """The next round would pass the target's context (or the engine's cache)."""


def make_settings(pair, method, budget, verify, temperature, top_p) -> Settings:
    settings = Settings(method, budget, verify, temperature, top_p)
    if method != "ar" and pair.drafter is None:
        raise ValueError(f"method {method!r} needs a drafter; this pair has none (use method='ar')")
    return settings


def fork_settings(pair, settings: Settings, generator: torch.Generator, overrides: dict):
    """(new settings, new generator) for a fork: the generator continues the same RNG state unless `seed` is given."""
    overrides = dict(overrides)
    seed = overrides.pop("seed", None)
    new = replace(settings, **overrides)
    if new.method != "ar" and pair.drafter is None:
        raise ValueError(f"method {new.method!r} needs a drafter; this pair has none")
    twin = torch.Generator(device=pair.device)
    if seed is None:
        twin.set_state(generator.get_state())
    else:
        twin.manual_seed(check_int("seed", seed))
    return new, twin


def encode_prompt(pair, prompt, chat: bool, settings: Settings, max_len: int | None = None) -> list[int]:
    """Token ids of a prompt (a string, chat template applied when `chat`, or token ids), checked against the
    vocabulary and the context (`max_len`, default the target's)."""
    if isinstance(prompt, str):
        if not prompt:
            raise ValueError("prompt must be a non-empty string or a non-empty list of token ids")
        ids = pair.encode(prompt, chat=chat)
    elif isinstance(prompt, (list, tuple)) and prompt and all(isinstance(t, int) and not isinstance(t, bool)
                                                               for t in prompt):
        ids = list(prompt)
    else:
        raise ValueError("prompt must be a non-empty string or a non-empty list of token ids")
    bad = [t for t in ids if not 0 <= t < pair.vocab_size]
    if bad:
        raise ValueError(f"prompt token ids must be in [0, {pair.vocab_size}), got {bad[:5]}")
    limit = pair.max_context if max_len is None else max_len
    rows = num_draft_tokens(settings, pair)
    if len(ids) + rows > limit:
        raise ValueError(f"prompt is too long: {len(ids)} tokens + {rows} draft rows exceed the context of "
                         f"{limit} tokens")
    return ids


def num_draft_tokens(settings: Settings, pair) -> int:
    """Verify rows per request: budget + 1 for DDTree, the block for the DFlash chain, 1 for autoregressive."""
    return {"ddtree": settings.budget + 1, "dflash": pair.block_size if pair.drafter else 1, "ar": 1}[settings.method]


def check_room(pair, settings: Settings, ctx: int, limit: int) -> None:
    rows = max(num_draft_tokens(settings, pair), 1 if settings.method == "ar" else pair.block_size)
    if ctx + rows > limit:
        raise ContextFull(f"context full: {ctx} committed tokens + {rows} draft rows exceed the context of {limit}")


def draft_tree(settings: Settings, dlogits, bonus: int) -> DraftTree:
    """The round's tree, rooted at the bonus token: DDTree's best-first tree, the DFlash chain, or the root alone."""
    if settings.method == "ddtree":
        return build_tree(dlogits, settings.budget).with_root_token(bonus)
    if settings.method == "dflash":
        return chain_tree(dlogits).with_root_token(bonus)
    return root_tree(bonus)


def extend_drafter(pair, draft_cache, features: torch.Tensor, positions: torch.Tensor) -> None:
    if draft_cache is not None:
        pair.drafter.extend_context(draft_cache, features, positions)


def walk(settings: Settings, tree: DraftTree, logits: torch.Tensor, generator) -> VerifyResult:
    if settings.sampled:
        return verify_sampled(tree, logits, settings.temperature, top_p=settings.top_p, generator=generator)
    return verify_greedy(tree, logits)


def eos_index(tokens: list[int], eos: set[int]) -> int | None:
    return next((i for i, t in enumerate(tokens) if t in eos), None)


def make_generation(pair, generated, records, acceptance_lengths, prefill_s, wall, max_new_tokens, stop_on_eos,
                    stopped) -> Generation:
    """A request's Generation: its tokens cut at max_new_tokens (and after EOS when stop_on_eos)."""
    tokens = generated[:max_new_tokens]
    eos = eos_index(tokens, pair.eos_token_ids)
    if stop_on_eos and eos is not None:
        tokens, stopped = tokens[:eos + 1], "eos"
    totals = {"prefill": prefill_s}
    for stage in STAGES:
        totals[stage] = sum(r.times[stage] for r in records)
    return Generation(
        text=pair.decode(tokens), tokens=tokens, records=records,
        acceptance_lengths=acceptance_lengths, stage_times=totals,
        tokens_per_second=len(tokens) / wall if wall > 0 else float("inf"), stopped=stopped)


def request_round(pair, settings: Settings, ctx, tree, dlogits, input_ids, positions, logits,
                  result: VerifyResult) -> RequestRound:
    """One request's part of a round record; `logits  # [n_nodes, vocab]` the target's logits at the tree nodes."""
    k = min(TOP_K, logits.shape[-1])
    if dlogits is None:
        draft_tokens, draft_logprobs = [], []
    else:
        lp, tok = torch.log_softmax(dlogits.float(), -1).topk(k, dim=-1)
        draft_tokens, draft_logprobs = tok.tolist(), lp.clamp_min(-1e30).tolist()
    sampled = settings.sampled
    probs = sampling_probs(logits, settings.temperature, settings.top_p) if sampled else torch.softmax(
        logits.double(), -1)
    top_p_, top_t = probs.topk(k, dim=-1)
    if sampled:
        choice = [-1] * tree.n_nodes
        for node, tok in zip(result.accepted, result.committed):
            choice[node] = tok
    else:
        choice = logits.argmax(-1).tolist()
    ids = set(tree.tokens.tolist()) | set(top_t.flatten().tolist()) | set(result.committed)
    ids |= {t for row in draft_tokens for t in row}
    return RequestRound(
        context_len=ctx, tree=tree, draft_top_tokens=draft_tokens, draft_top_logprobs=draft_logprobs,
        input_ids=input_ids.tolist(), positions=positions.tolist(),
        target_top_tokens=top_t.tolist(), target_top_probs=top_p_.float().tolist(), target_choice=choice,
        accepted=result.accepted, accepted_tokens=result.accepted_tokens, bonus_token=result.bonus_token,
        committed_text=pair.decode(result.committed),
        token_texts={t: pair.decode([t]) for t in ids if t >= 0})


@contextmanager
def timed(times: dict, stage: str, device: torch.device):
    """Add the wall time of the block to times[stage], synchronising the GPU before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times[stage] = times.get(stage, 0.0) + time.perf_counter() - t0
