"""A target + DFlash drafter pair: loading with compatibility checks, tokenizer helpers, random drafters for tests,
a tiny random pair with a byte tokenizer, and draft_logits (one drafter pass -> per-depth logits)."""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

from ddtree._checks import SEED_MAX, check_int
from ddtree.models._common import long_vector, native_bfloat16_cpu, resolve_device
from ddtree.models.drafter import DFlashConfig, DFlashDrafter, DraftCache, drafter_folder
from ddtree.models.target import load_target

DEFAULT_DRAFTER_DIR = Path(__file__).resolve().parent.parent / "assets" / "smollm2-dflash"
SPECIAL_TOKENS = ("text", "control")  # how special-token strings in a prompt are read (ModelPair.encode)
PLACEHOLDER = "\x00ddtree-prompt\x00"  # stands for the prompt while the chat template is rendered


@dataclass
class ModelPair:
    """target: a transformers causal LM; tokenizer: its tokenizer; drafter: a DFlashDrafter or None."""
    target: nn.Module
    tokenizer: object
    drafter: DFlashDrafter | None
    device: torch.device
    dtype: torch.dtype
    verify_seconds: dict = field(default_factory=dict, repr=False, compare=False)  # (backend, batch, threads) ->
    # {budget: fastest verify forward seen, s}: what this pair's budget="auto" sessions measured in this process
    texts: dict = field(default_factory=dict, repr=False, compare=False)  # token id -> its text (token_texts)

    def _need_drafter(self) -> DFlashDrafter:
        if self.drafter is None:
            raise ValueError("this ModelPair has no drafter; load one with load_pair(target, drafter=...)")
        return self.drafter

    @property
    def target_layer_ids(self) -> tuple[int, ...]:
        """Target layers whose outputs feed the drafter; () without a drafter."""
        return () if self.drafter is None else self.drafter.config.target_layer_ids

    @property
    def block_size(self) -> int:
        return self._need_drafter().config.block_size

    @property
    def mask_token_id(self) -> int:
        return self._need_drafter().config.mask_token_id

    @property
    def vocab_size(self) -> int:
        """Width of the target's logits."""
        return target_vocab_size(self.target)

    @property
    def max_context(self) -> int:
        return self.target.config.get_text_config().max_position_embeddings

    @property
    def eos_token_ids(self) -> set[int]:
        """End-of-sequence ids of the tokenizer, the model config and its generation config."""
        found = [getattr(self.tokenizer, "eos_token_id", None), getattr(self.target.config, "eos_token_id", None),
                 getattr(getattr(self.target, "generation_config", None), "eos_token_id", None)]
        ids = set()
        for item in found:
            ids.update(item if isinstance(item, (list, tuple, set)) else [item] if item is not None else [])
        return {int(i) for i in ids}

    def encode(self, prompt: str, chat: bool = True, special_tokens: str = "text") -> list[int]:
        """Token ids of `prompt`; chat=True wraps it as one user turn of the chat template + the assistant prompt.

        special_tokens: how special-token strings inside `prompt` ("<|im_end|>", "<|im_start|>system ...") are read.
        "text" (the default): as plain text, so a prompt cannot end its turn or open a system turn; a warning says
        when a prompt held any. "control": as the control tokens they name, for a prompt that is already templated
        (chat=False). The chat template's own tokens are control tokens either way."""
        if not isinstance(prompt, str):
            raise ValueError(f"prompt must be a str, got {type(prompt).__name__}")
        if special_tokens not in SPECIAL_TOKENS:
            raise ValueError(f"special_tokens must be one of {SPECIAL_TOKENS}, got {special_tokens!r}")
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"prompt is not valid Unicode text: {e.reason} at character {e.start} "
                             f"({prompt[e.start:e.end]!r})") from None
        tok = self.tokenizer
        if chat and not getattr(tok, "chat_template", None):
            raise ValueError("chat=True needs a tokenizer with a chat template; this one has none (use chat=False)")
        as_text = special_tokens == "text" and tok.encode(prompt, add_special_tokens=False) != \
            tok.encode(prompt, add_special_tokens=False, split_special_tokens=True)
        if as_text:
            warnings.warn("the prompt holds special-token text (e.g. '<|im_end|>'): encoded as plain text; "
                          "special_tokens='control' reads it as control tokens", stacklevel=3)
        if not chat:
            return list(tok.encode(prompt, split_special_tokens=as_text))
        turn = [{"role": "user", "content": PLACEHOLDER if as_text else prompt}]
        text = tok.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
        if not as_text:
            return list(tok.encode(text, add_special_tokens=False))
        before, after = text.split(PLACEHOLDER)  # the template's control tokens, around the plain-text prompt
        return [*tok.encode(before, add_special_tokens=False),
                *tok.encode(prompt, add_special_tokens=False, split_special_tokens=True),
                *tok.encode(after, add_special_tokens=False)]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return self.tokenizer.decode(long_vector("ids", ids).tolist(), skip_special_tokens=skip_special_tokens)

    def token_texts(self, ids) -> dict[int, str]:
        """{id: the text of that one token} for token ids (ints): each decoded once per pair, since every round's
        record asks for a few hundred of the same few thousand."""
        texts = self.texts
        for t in ids:
            if t not in texts:
                texts[t] = self.tokenizer.decode([t])
        return {t: texts[t] for t in ids}


def target_vocab_size(target) -> int:
    return target.get_output_embeddings().weight.shape[0]


def check_compatible(target, drafter: DFlashDrafter) -> None:
    """ValueError unless `drafter` was built for `target` (hidden size, layers, vocabulary)."""
    text = target.config.get_text_config()
    config, vocab = drafter.config, target_vocab_size(target)
    if config.hidden_size != text.hidden_size:
        raise ValueError(f"drafter hidden_size {config.hidden_size} != target hidden_size {text.hidden_size}")
    if max(config.target_layer_ids) >= text.num_hidden_layers:
        raise ValueError(f"drafter target_layer_ids {list(config.target_layer_ids)} are outside the target's "
                         f"layers [0, {text.num_hidden_layers})")
    if config.num_target_layers != text.num_hidden_layers:
        raise ValueError(f"drafter num_target_layers {config.num_target_layers} != target's "
                         f"{text.num_hidden_layers} layers (drafter trained for another target)")
    if config.mask_token_id >= vocab:
        raise ValueError(f"drafter mask_token_id {config.mask_token_id} is outside the target vocabulary [0, {vocab})")
    if config.vocab_size != vocab:
        raise ValueError(f"drafter vocab_size {config.vocab_size} != target vocabulary size {vocab}")


def load_pair(target=None, drafter=None, *, device="auto", dtype=None) -> ModelPair:
    """target: None (embedded SmolLM2), a path / hub name, or a loaded (model, tokenizer), used as it is;
    drafter: a folder, a DFlashDrafter (moved to the target's device and dtype) or None.
    `device` ("auto": CUDA when there is a GPU) and `dtype` apply to a target loaded here; the drafter follows the
    target. `dtype` defaults to bfloat16 on a GPU, float32 on a CPU, except for the embedded target on a CPU that
    multiplies bfloat16 natively (AVX512-BF16 or AMX): there bfloat16 is ~1.5x faster than float32 and a verify of a
    small tree costs little more than one step, so trees pay (docs/guide.md, "Speed on a CPU")."""
    if target is None and dtype is None and resolve_device(device).type == "cpu" and native_bfloat16_cpu():
        dtype = torch.bfloat16
    # a drafter folder is checked before the target loads
    folder = drafter_folder(drafter, "drafter") if isinstance(drafter, (str, os.PathLike)) else None
    if isinstance(target, tuple):
        if len(target) != 2 or not isinstance(target[0], nn.Module):
            raise ValueError("target must be None, a path / hub name or a (model, tokenizer) tuple")
        model, tokenizer = target
    else:
        model, tokenizer = load_target(target, device=device, dtype=dtype)
    weight = model.get_input_embeddings().weight
    if drafter is None or isinstance(drafter, DFlashDrafter):
        draft = None if drafter is None else drafter.to(weight.device, weight.dtype)
    elif folder is not None:
        draft = DFlashDrafter.from_pretrained(folder, device=weight.device, dtype=weight.dtype)
    else:
        raise ValueError(f"drafter must be None, a drafter folder or a DFlashDrafter, got {type(drafter).__name__}")
    if draft is not None:
        check_compatible(model, draft)
    return ModelPair(model, tokenizer, draft, weight.device, weight.dtype)


def load_default_pair(*, device="auto", dtype=None) -> ModelPair:
    """The embedded SmolLM2 target with the project's trained drafter (ddtree/assets/smollm2-dflash/), in
    load_pair's default dtype for the embedded target."""
    if not (DEFAULT_DRAFTER_DIR / "config.json").is_file():
        raise FileNotFoundError(
            f"the trained DFlash drafter for SmolLM2 has not shipped yet (expected {DEFAULT_DRAFTER_DIR}); "
            "use load_pair(drafter=<folder>) or load_pair() with random_drafter_for(pair.target) meanwhile")
    return load_pair(None, DEFAULT_DRAFTER_DIR, device=device, dtype=dtype)


def spread_layer_ids(num_target_layers: int, count: int) -> tuple[int, ...]:
    """`count` target layer ids spread from layer 1 to layer L - 3 (the middle layer when count is 1)."""
    if count == 1:
        return (num_target_layers // 2,)
    low, high = (1, num_target_layers - 3) if num_target_layers >= 5 else (0, num_target_layers - 1)
    return tuple(sorted({round(low + i * (high - low) / (count - 1)) for i in range(count)}))


def random_drafter_for(target_model, *, num_layers: int = 1, block_size: int = 16, seed: int = 0,
                       target_layer_ids=None, mask_token_id=None) -> DFlashDrafter:
    """A randomly initialised drafter shaped for `target_model` (its hidden size, heads, vocabulary, RoPE), on its
    device and dtype. target_layer_ids default: spread_layer_ids(layers, num_layers); mask_token_id default: the
    last vocabulary id."""
    text = target_model.config.get_text_config()
    num_layers = check_int("num_layers", num_layers, minimum=1)
    vocab = target_vocab_size(target_model)
    rope = getattr(text, "rope_parameters", None) or {}
    config = DFlashConfig(
        hidden_size=text.hidden_size, num_hidden_layers=num_layers, num_attention_heads=text.num_attention_heads,
        num_key_value_heads=getattr(text, "num_key_value_heads", None) or text.num_attention_heads,
        head_dim=getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads,
        intermediate_size=text.intermediate_size, vocab_size=vocab, block_size=block_size,
        num_target_layers=text.num_hidden_layers, mask_token_id=vocab - 1 if mask_token_id is None else mask_token_id,
        target_layer_ids=spread_layer_ids(text.num_hidden_layers, num_layers) if target_layer_ids is None
        else tuple(target_layer_ids),
        rms_norm_eps=text.rms_norm_eps, rope_theta=getattr(text, "rope_theta", None) or rope.get("rope_theta", 1e4),
        max_position_embeddings=text.max_position_embeddings)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(check_int("seed", seed, maximum=SEED_MAX))
        drafter = DFlashDrafter(config)
    weight = target_model.get_input_embeddings().weight
    return drafter.to(weight.device, weight.dtype).eval().requires_grad_(False)


class ByteTokenizer:
    """A deterministic tokenizer for tiny test pairs: ids 0..255 are bytes, then special tokens; other ids decode
    as <|id|>. Chat turns render as <|role|>content<|eos|>, the generation prompt as <|assistant|>."""
    SPECIALS = ("<|eos|>", "<|system|>", "<|user|>", "<|assistant|>", "<|mask|>")

    def __init__(self, vocab_size: int):
        if vocab_size < 256 + len(self.SPECIALS):
            raise ValueError(f"vocab_size must be >= {256 + len(self.SPECIALS)} for the byte tokenizer, "
                             f"got {vocab_size}")
        self.vocab_size = vocab_size
        self.special_ids = {token: 256 + i for i, token in enumerate(self.SPECIALS)}
        self.eos_token_id = self.special_ids["<|eos|>"]
        self.mask_token_id = self.special_ids["<|mask|>"]
        self.chat_template = "<|role|>content<|eos|>"  # descriptive; apply_chat_template implements it
        self._split = re.compile("(" + "|".join(re.escape(token) for token in self.SPECIALS) + ")")

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str, add_special_tokens: bool = True, split_special_tokens: bool = False) -> list[int]:
        """Bytes of `text`, special-token strings as their ids unless split_special_tokens (no BOS is ever added)."""
        if split_special_tokens:
            return list(text.encode())
        return [i for part in self._split.split(text) if part
                for i in ([self.special_ids[part]] if part in self.special_ids else part.encode())]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        names = {i: token for token, i in self.special_ids.items()}
        pieces, run = [], bytearray()
        for i in ids:
            if i < 256:
                run.append(i)
                continue
            pieces.append(run.decode(errors="replace"))
            run = bytearray()
            if not skip_special_tokens:
                pieces.append(names.get(i, f"<|{i}|>"))
        return "".join(pieces) + run.decode(errors="replace")

    def apply_chat_template(self, messages, add_generation_prompt: bool = False, tokenize: bool = False):
        text = "".join(f"<|{m['role']}|>{m['content']}<|eos|>" for m in messages)
        text += "<|assistant|>" if add_generation_prompt else ""
        return self.encode(text) if tokenize else text


def tiny_random_pair(seed: int = 0, *, vocab_size: int = 320, hidden_size: int = 64, num_layers: int = 2,
                     num_heads: int = 4, num_kv_heads: int = 2, drafter_layers: int = 1, block_size: int = 8,
                     max_position_embeddings: int = 2048, device="cpu") -> ModelPair:
    """A tiny random Llama target + random drafter sharing its vocabulary, with a ByteTokenizer (float32, on
    `device`; the same weights on every device)."""
    tokenizer = ByteTokenizer(vocab_size)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
                         max_position_embeddings=max_position_embeddings, rms_norm_eps=1e-6,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id, bos_token_id=None,
                         tie_word_embeddings=False, attn_implementation="sdpa")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(check_int("seed", seed, maximum=SEED_MAX))
        target = LlamaForCausalLM(config).eval().requires_grad_(False)
    drafter = random_drafter_for(target, num_layers=drafter_layers, block_size=block_size, seed=seed,
                                 mask_token_id=tokenizer.mask_token_id)
    return load_pair((target.to(resolve_device(device)), tokenizer), drafter)


@torch.no_grad()
def draft_logits(models, bonus_token: int, cache: DraftCache) -> torch.Tensor:
    """One drafter pass -> logits  # [block_size - 1, vocab] float32 for block positions 1..B-1.

    models: a ModelPair or a (drafter, target) tuple. The block [bonus, MASK x (B-1)] sits at positions
    cache.length .. cache.length + B - 1, is embedded with the target's raw embedding table and the drafter's
    (final-normed) output goes through the target's lm_head. The cache is not changed.
    """
    drafter, target = (models.drafter, models.target) if isinstance(models, ModelPair) else \
        models if isinstance(models, tuple) and len(models) == 2 else (None, None)
    if not isinstance(drafter, DFlashDrafter) or not isinstance(target, nn.Module):
        raise ValueError("models must be a ModelPair with a drafter or a (DFlashDrafter, target model) tuple")
    vocab = target_vocab_size(target)
    bonus = check_int("bonus_token", bonus_token)
    if bonus >= vocab:
        raise ValueError(f"bonus_token must be a token id in [0, {vocab}), got {bonus}")
    if not isinstance(cache, DraftCache):
        raise ValueError(f"cache must be a DraftCache, got {type(cache).__name__}")
    table = target.get_input_embeddings().weight  # [vocab, hidden]
    block = torch.full((drafter.config.block_size,), drafter.config.mask_token_id, device=table.device)
    block[0] = bonus
    positions = torch.arange(cache.length, cache.length + len(block), device=drafter.device)
    hidden = drafter(F.embedding(block, table), positions, cache)  # [B, hidden]
    head = target.get_output_embeddings()
    return head(hidden[1:].to(head.weight.device, head.weight.dtype)).float()  # [B - 1, vocab]
