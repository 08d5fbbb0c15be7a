"""Session settings and the checks made once, at the public boundary, for both backends.

Everything here is shared by ddtree.session, the reference backend (ddtree.reference) and the native engine
(ddtree.engine): it imports neither of them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

import torch

from ddtree._checks import MAX_BUDGET, SEED_MAX, check_bool, check_int, check_temperature, check_top_p


class _Name(str, Enum):
    """A member that is its string everywhere (==, hash, str, f-strings, JSON); enum.StrEnum needs Python 3.11."""
    __str__ = str.__str__
    __format__ = str.__format__


class Method(_Name):
    """What a round drafts: a DDTree tree, a DFlash chain, or nothing (autoregressive: the root alone)."""
    DDTREE = "ddtree"
    DFLASH = "dflash"
    AR = "ar"


class Verify(_Name):
    """How a round walks the verified draft: the target's argmax, or exact sampling."""
    GREEDY = "greedy"
    SAMPLED = "sampled"


METHODS = tuple(m.value for m in Method)
VERIFY_RULES = tuple(v.value for v in Verify)
BACKENDS = ("auto", "reference", "native")
STAGES = ("draft", "tree", "pack", "verify", "walk", "commit")
AUTO = "auto"  # budget="auto": each round's budget chosen among AUTO_BUDGETS (ddtree.budget)
AUTO_BUDGETS = (8, 16, 32, 64, 128, 256)
AUTO_CANDIDATES = (0, *AUTO_BUDGETS)  # what budget="auto" chooses among: 0 is an autoregressive round


def budget_order(budget) -> tuple:
    """A sort key for budgets: the ints in order, then "auto"."""
    return (1, 0) if budget == AUTO else (0, budget)


class ContextFull(ValueError):
    """The next round would pass the target's context (or the engine's cache)."""


@dataclass(frozen=True)
class Settings:
    """How rounds run. `budget` is one int for every request, a tuple with one budget per request (DDTree trees of
    several sizes in one padded batch; every tree is padded to max(budget) + 1 rows), or "auto" (DDTree: each
    round's budget chosen among AUTO_BUDGETS from the drafter's confidence and the measured verify cost per budget,
    ddtree.budget)."""
    method: Method = Method.DDTREE
    budget: int | tuple[int, ...] | str = 32
    verify: Verify = Verify.GREEDY
    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.verify not in VERIFY_RULES:
            raise ValueError(f"verify must be one of {VERIFY_RULES}, got {self.verify!r}")
        object.__setattr__(self, "method", Method(self.method))
        object.__setattr__(self, "verify", Verify(self.verify))
        if isinstance(self.budget, str):
            if self.budget != AUTO:
                raise ValueError(f"budget must be an int, a list of ints (one per request) or 'auto', got "
                                 f"{self.budget!r}")
            if self.method != Method.DDTREE:
                raise ValueError(f"budget='auto' chooses DDTree tree sizes: it needs method='ddtree', got "
                                 f"method={self.method!r} (give an int budget)")
        elif isinstance(self.budget, (list, tuple)):
            if not self.budget:
                raise ValueError("budget must be an int or a non-empty list of ints (one per request)")
            budgets = tuple(check_int("budget entry", b, minimum=1 if self.method == Method.DDTREE else 0)
                            for b in self.budget)
            object.__setattr__(self, "budget", budgets)
        else:
            object.__setattr__(self, "budget", check_int("budget", self.budget))
        if self.max_budget > MAX_BUDGET:
            raise ValueError(f"budget must be at most {MAX_BUDGET} nodes, got {self.max_budget}")
        object.__setattr__(self, "temperature", check_temperature("temperature", self.temperature, allow_zero=True))
        object.__setattr__(self, "top_p", check_top_p(self.top_p))

    @property
    def sampled(self) -> bool:
        return self.verify == Verify.SAMPLED and self.temperature > 0

    @property
    def auto(self) -> bool:
        return self.budget == AUTO

    @property
    def max_budget(self) -> int:
        """The largest budget a round may use (for "auto": the largest candidate)."""
        if self.auto:
            return max(AUTO_BUDGETS)
        return max(self.budget) if isinstance(self.budget, tuple) else self.budget

    def budgets(self, batch: int) -> list[int]:
        """One budget per request (for "auto": max_budget, before the round's choice)."""
        return list(self.budget) if isinstance(self.budget, tuple) else [self.max_budget] * batch


@dataclass(frozen=True)
class NativeOptions:
    """The native engine's options, Session's keyword flags of the same names (see Session); None: the fast path
    wherever it can run."""
    attention: str = "auto"
    cuda_graphs: bool | None = None
    mask_layout: str = "padded"
    fused: bool | None = None
    exact: bool = False
    overlap: bool | None = None  # read by the Session (it queues the rounds), not by the backend

    @classmethod
    def from_flags(cls, flags: dict) -> NativeOptions:
        """Session's native keyword flags -> options (an unknown name, or a non-bool switch: ValueError)."""
        names = {f.name for f in dataclasses.fields(cls)}
        if unknown := set(flags) - names:
            raise ValueError(f"unknown Session options {sorted(unknown)}")
        for name in ("cuda_graphs", "fused", "overlap", "exact"):
            if name in flags:
                check_bool(name, flags[name], allow_none=name != "exact")
        return cls(**flags)

    def native_only(self) -> list[str]:
        """The options set to something only the native engine does: neither the default nor a fast path turned
        off (what the reference backend does anyway)."""
        default = NativeOptions()
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) != getattr(default, f.name)
                and not (f.name in ("cuda_graphs", "overlap") and getattr(self, f.name) is False)]


def make_settings(pair, batch: int, **options) -> Settings:
    """Settings checked against the pair (a drafter for drafting methods) and the batch (one budget per request)."""
    settings = Settings(**options)
    if settings.method != Method.AR and pair.drafter is None:
        raise ValueError(f"method {settings.method!r} needs a drafter; this pair has none (use method='ar')")
    if isinstance(settings.budget, tuple) and len(settings.budget) != batch:
        raise ValueError(f"budget must have one entry per request ({batch}), got {len(settings.budget)}")
    return settings


def fork_settings(pair, batch: int, settings: Settings, overrides: dict) -> Settings:
    unknown = set(overrides) - {"method", "budget", "verify", "temperature", "top_p"}
    if unknown:
        raise ValueError(f"fork takes method, budget, verify, temperature, top_p and seed; got {sorted(unknown)}")
    merged = {k: getattr(settings, k) for k in ("method", "budget", "verify", "temperature", "top_p")}
    if settings.auto and overrides.get("method", "ddtree") != "ddtree" and "budget" not in overrides:
        merged["budget"] = Settings.budget  # an inherited "auto" does not apply to the chain or autoregressive
    return make_settings(pair, batch, **(merged | overrides))


def autoregressive(settings: Settings) -> Settings:
    """The settings of a budget="auto" session's autoregressive round (its choice AR: the root alone, no draft)."""
    return dataclasses.replace(settings, method="ar", budget=0)


def num_draft_tokens(settings: Settings, pair) -> int:
    """Verify rows per request: max budget + 1 for DDTree, the block for the DFlash chain, 1 for autoregressive."""
    if settings.method == Method.DDTREE:
        return settings.max_budget + 1
    return pair.block_size if settings.method == Method.DFLASH else 1


def check_room(pair, settings: Settings, ctx: int, limit: int) -> None:
    """ContextFull when a round at context `ctx` would write past `limit` cache entries (drafter block included)."""
    rows = max(num_draft_tokens(settings, pair), 1 if settings.method == Method.AR else pair.block_size)
    if ctx + rows > limit:
        raise ContextFull(f"context full: {ctx} committed tokens + {rows} draft rows exceed the context of {limit}")


def encode_prompts(pair, prompts, chat: bool, settings: Settings, limit: int,
                   special_tokens: str = "text") -> list[list[int]]:
    """Token ids of every prompt (a string, chat template applied when `chat`, special-token text read as
    `special_tokens` says: ModelPair.encode; or token ids), checked against the vocabulary and the context `limit`
    (room for one round included)."""
    out = []
    for b, prompt in enumerate(prompts):
        if isinstance(prompt, str) and prompt:
            try:
                ids = pair.encode(prompt, chat=chat, special_tokens=special_tokens)
            except ValueError as e:
                raise ValueError(f"prompts[{b}]: {e}") from None
        elif isinstance(prompt, (list, tuple)) and prompt and all(
                isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            ids = list(prompt)
        else:
            raise ValueError(f"prompts[{b}] must be a non-empty string or a non-empty list of token ids")
        bad = [t for t in ids if not 0 <= t < pair.vocab_size]
        if bad:
            raise ValueError(f"prompts[{b}] token ids must be in [0, {pair.vocab_size}), got {bad[:5]}")
        rows = max(num_draft_tokens(settings, pair), 1 if settings.method == Method.AR else pair.block_size)
        if len(ids) + rows > limit:
            raise ValueError(f"prompts[{b}] is too long: {len(ids)} tokens + {rows} draft rows exceed the context of "
                             f"{limit} tokens")
        out.append(ids)
    return out


def as_prompt_list(prompt_or_prompts) -> list:
    """A prompt (a string or a list of token ids) is a batch of one; a list of prompts is a batch."""
    p = prompt_or_prompts
    if isinstance(p, (list, tuple)) and p and all(isinstance(x, (str, list, tuple)) for x in p):
        return list(p)
    return [p]


def new_generator(device, seed) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(check_int("seed", seed, maximum=SEED_MAX))


def fork_generator(generator: torch.Generator, device, seed=None) -> torch.Generator:
    """A generator continuing `generator`'s state, or freshly seeded with `seed`."""
    if seed is not None:
        return new_generator(device, seed)
    twin = torch.Generator(device=device)
    twin.set_state(generator.get_state())
    return twin

