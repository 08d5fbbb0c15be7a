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

from ddtree._checks import check_int, check_temperature, check_top_p
from ddtree.batch import expected_mask, pack_verify_batch
from ddtree.models import ModelPair, TargetCache, draft_logits, target_forward
from ddtree.record import METHODS, VERIFY_RULES, RequestRound, RoundRecord
from ddtree.tree import DraftTree, build_tree, chain_tree, root_tree
from ddtree.verify import VerifyResult, sampling_probs, verify_greedy, verify_sampled

TOP_K = 16  # top-K entries per depth / node kept in records
STAGES = ("draft", "tree", "pack", "verify", "walk", "commit")


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
    """Decode one prompt round by round. `.step()` -> RoundRecord, `.run(n)` -> Generation, `.fork()` -> copy."""

    def __init__(self, pair: ModelPair, prompt, *, method: str = "ddtree", budget: int = 32, verify: str = "greedy",
                 temperature: float = 1.0, top_p: float = 1.0, seed: int = 0, chat: bool = True):
        self.pair = pair
        self.settings = Settings(method, budget, verify, temperature, top_p)
        if method != "ar" and pair.drafter is None:
            raise ValueError(f"method {method!r} needs a drafter; this pair has none (use method='ar')")
        self.generator = torch.Generator(device=pair.device).manual_seed(check_int("seed", seed))
        prompt_ids = self._prompt_ids(prompt, chat)
        self.prompt_len = len(prompt_ids)
        self.times = {"prefill": 0.0}
        self.records: list[RoundRecord] = []
        self.target_cache = TargetCache()
        self.draft_cache = pair.drafter.new_cache() if pair.drafter is not None else None
        with self._timed(self.times, "prefill"):
            positions = torch.arange(self.prompt_len)
            logits, features = target_forward(pair.target, prompt_ids, positions, None, self.target_cache,
                                              self._layer_ids())
            self._extend_drafter(features, positions)
            first = self._walk(root_tree(prompt_ids[-1]), logits[-1:])
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
        seed = overrides.pop("seed", None)
        settings = replace(self.settings, **overrides)
        if settings.method != "ar" and self.pair.drafter is None:
            raise ValueError(f"method {settings.method!r} needs a drafter; this pair has none")
        twin = object.__new__(Session)
        twin.__dict__.update(self.__dict__)
        twin.settings = settings
        twin.tokens = list(self.tokens)
        twin.records = list(self.records)
        twin.times = dict(self.times)
        twin.target_cache = self.target_cache.clone()
        twin.draft_cache = self.draft_cache.clone() if self.draft_cache is not None else None
        twin.generator = torch.Generator(device=self.pair.device)
        if seed is None:
            twin.generator.set_state(self.generator.get_state())
        else:
            twin.generator.manual_seed(check_int("seed", seed))
        return twin

    def step(self) -> RoundRecord:
        """Run one round and return its record."""
        s, pair = self.settings, self.pair
        ctx = self.context_len
        rows_needed = 1 if s.method == "ar" else pair.block_size
        if ctx + rows_needed > pair.max_context:
            raise ValueError(f"context full: {ctx} committed tokens + {rows_needed} draft rows exceed the target's "
                             f"context of {pair.max_context}")
        times = dict.fromkeys(STAGES, 0.0)
        bonus = self.tokens[-1]
        with self._timed(times, "draft"):
            dlogits = None if s.method == "ar" else draft_logits(pair, bonus, self.draft_cache)  # [B-1, V]
        with self._timed(times, "tree"):
            if s.method == "ddtree":
                tree = build_tree(dlogits, s.budget)
            elif s.method == "dflash":
                tree = chain_tree(dlogits)
            else:
                tree = root_tree(bonus)
            tree = tree.with_root_token(bonus)
        with self._timed(times, "pack"):
            q = {"ddtree": s.budget + 1, "dflash": tree.n_nodes, "ar": 1}[s.method]
            batch = pack_verify_batch([tree], [ctx], q)
            mask = expected_mask(batch, 0)  # [q, ctx + q]
        with self._timed(times, "verify"):
            logits, features = target_forward(pair.target, batch.input_ids, batch.positions, mask.to(pair.device),
                                              self.target_cache, self._layer_ids())
        with self._timed(times, "walk"):
            result = self._walk(tree, logits[:tree.n_nodes])
        with self._timed(times, "commit"):
            self.target_cache.compact(ctx, result.accepted)
            accepted = torch.tensor(result.accepted)
            self._extend_drafter(features[accepted.to(features.device)], ctx + tree.depths[accepted])
            self.tokens += result.committed
        record = RoundRecord(
            index=len(self.records), method=s.method, verify=s.verify, temperature=s.temperature, top_p=s.top_p,
            budget=s.budget, num_draft_tokens=q, times=times,
            requests=[self._request_round(ctx, tree, dlogits, batch, logits[:tree.n_nodes], result)])
        self.records.append(record)
        return record

    def run(self, max_new_tokens: int, *, stop_on_eos: bool = True, progress: bool = False) -> Generation:
        """Step until `max_new_tokens` tokens are generated (counting those already generated), an EOS token is
        committed (when stop_on_eos) or the context is full. Extra tokens of the last round are cut off."""
        max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
        first_record = len(self.records)
        stopped = "max_new_tokens"
        bar = None
        if progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=max_new_tokens, desc=f"{self.settings.method} decoding", unit="tok")
        t0 = time.perf_counter()
        while len(self.generated) < max_new_tokens:
            if stop_on_eos and self._eos_index() is not None:
                stopped = "eos"
                break
            try:
                self.step()
            except ValueError as e:
                if not str(e).startswith("context full"):
                    raise
                stopped = "context"
                break
            if bar is not None:
                bar.update(min(len(self.generated), max_new_tokens) - bar.n)
        wall = time.perf_counter() - t0
        if bar is not None:
            bar.close()
        tokens = self.generated[:max_new_tokens]
        eos = self._eos_index()
        if stop_on_eos and eos is not None and eos < len(tokens):
            tokens, stopped = tokens[:eos + 1], "eos"
        records = self.records[first_record:]
        totals = {"prefill": self.times["prefill"]}
        for stage in STAGES:
            totals[stage] = sum(r.times[stage] for r in records)
        return Generation(
            text=self.pair.decode(tokens), tokens=tokens, records=records,
            acceptance_lengths=[r.requests[0].acceptance_length for r in records], stage_times=totals,
            tokens_per_second=len(tokens) / wall if wall > 0 else float("inf"), stopped=stopped)

    # ---------------------------------------------------------------------------------------------- helpers
    def _prompt_ids(self, prompt, chat: bool) -> list[int]:
        if isinstance(prompt, str):
            if not prompt:
                raise ValueError("prompt must be a non-empty string or a non-empty list of token ids")
            ids = self.pair.encode(prompt, chat=chat)
        elif isinstance(prompt, (list, tuple)) and prompt and all(isinstance(t, int) and not isinstance(t, bool)
                                                                   for t in prompt):
            ids = list(prompt)
        else:
            raise ValueError("prompt must be a non-empty string or a non-empty list of token ids")
        bad = [t for t in ids if not 0 <= t < self.pair.vocab_size]
        if bad:
            raise ValueError(f"prompt token ids must be in [0, {self.pair.vocab_size}), got {bad[:5]}")
        block = 1 if self.settings.method == "ar" else self.pair.block_size
        if len(ids) + block > self.pair.max_context:
            raise ValueError(f"prompt is too long: {len(ids)} tokens + {block} draft rows exceed the target's "
                             f"context of {self.pair.max_context} tokens")
        return ids

    def _layer_ids(self) -> list[int]:
        return self.pair.target_layer_ids if self.pair.drafter is not None else []

    def _extend_drafter(self, features: torch.Tensor, positions: torch.Tensor) -> None:
        if self.draft_cache is not None:
            self.pair.drafter.extend_context(self.draft_cache, features, positions)

    def _walk(self, tree: DraftTree, logits: torch.Tensor) -> VerifyResult:
        s = self.settings
        if s.sampled:
            return verify_sampled(tree, logits, s.temperature, top_p=s.top_p, generator=self.generator)
        return verify_greedy(tree, logits)

    def _eos_index(self) -> int | None:
        eos = self.pair.eos_token_ids
        return next((i for i, t in enumerate(self.generated) if t in eos), None)

    def _request_round(self, ctx, tree, dlogits, batch, logits, result: VerifyResult) -> RequestRound:
        s = self.settings
        k = min(TOP_K, logits.shape[-1])
        if dlogits is None:
            draft_tokens, draft_logprobs = [], []
        else:
            lp, tok = torch.log_softmax(dlogits.float(), -1).topk(k, dim=-1)
            draft_tokens, draft_logprobs = tok.tolist(), lp.clamp_min(-1e30).tolist()
        probs = sampling_probs(logits, s.temperature, s.top_p) if s.sampled else torch.softmax(logits.double(), -1)
        top_p_, top_t = probs.topk(k, dim=-1)
        if s.sampled:
            choice = [-1] * tree.n_nodes
            for node, tok in zip(result.accepted, result.committed):
                choice[node] = tok
        else:
            choice = logits.argmax(-1).tolist()
        ids = set(tree.tokens.tolist()) | set(top_t.flatten().tolist()) | set(result.committed)
        ids |= {t for row in draft_tokens for t in row}
        return RequestRound(
            context_len=ctx, tree=tree, draft_top_tokens=draft_tokens, draft_top_logprobs=draft_logprobs,
            input_ids=batch.input_ids.tolist(), positions=batch.positions.tolist(),
            target_top_tokens=top_t.tolist(), target_top_probs=top_p_.float().tolist(), target_choice=choice,
            accepted=result.accepted, accepted_tokens=result.accepted_tokens, bonus_token=result.bonus_token,
            committed_text=self.pair.decode(result.committed),
            token_texts={t: self.pair.decode([t]) for t in ids if t >= 0})

    @contextmanager
    def _timed(self, times: dict, stage: str):
        device = self.pair.device
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times[stage] = times.get(stage, 0.0) + time.perf_counter() - t0
