"""Self-distillation data: the target answers the training prompts itself (greedy and sampled), batched with left
padding; the sequences (chat-templated prompt + response) are stored as flat uint16 token ids with offsets."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ddtree._checks import check_int, check_temperature
from ddtree.files import atomic_write


@dataclass
class SequenceData:
    """Sequences i = tokens[offsets[i]:offsets[i+1]], whose first prompt_lens[i] tokens are the prompt.
    prompt_ids[i] indexes the prompt list; temperatures[i] is the sampling temperature (0 = greedy)."""
    tokens: np.ndarray  # [total] uint16
    offsets: np.ndarray  # [n + 1] int64
    prompt_lens: np.ndarray  # [n] int32
    prompt_ids: np.ndarray  # [n] int32
    temperatures: np.ndarray  # [n] float32

    def __len__(self) -> int:
        return len(self.prompt_lens)

    def sequence(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]

    def save(self, path) -> None:
        """Write the arrays to `path` as an .npz (no suffix added), atomically: a failed save leaves an older file."""
        atomic_write(path, lambda f: np.savez_compressed(f, tokens=self.tokens, offsets=self.offsets,
                                                         prompt_lens=self.prompt_lens, prompt_ids=self.prompt_ids,
                                                         temperatures=self.temperatures), "sequence data")

    @classmethod
    def load(cls, path) -> SequenceData:
        with np.load(Path(path)) as raw:
            return cls(**{name: raw[name] for name in ("tokens", "offsets", "prompt_lens", "prompt_ids",
                                                      "temperatures")})

    @classmethod
    def from_lists(cls, sequences, prompt_lens, prompt_ids, temperatures) -> SequenceData:
        lengths = np.array([len(s) for s in sequences], dtype=np.int64)
        return cls(np.concatenate([np.asarray(s, dtype=np.uint16) for s in sequences]),
                   np.concatenate([[0], np.cumsum(lengths)]), np.asarray(prompt_lens, dtype=np.int32),
                   np.asarray(prompt_ids, dtype=np.int32), np.asarray(temperatures, dtype=np.float32))

    @classmethod
    def concat(cls, parts) -> SequenceData:
        parts = list(parts)
        if not parts:
            raise ValueError("parts must hold at least one SequenceData (give --data or --temperatures)")
        return cls.from_lists([p.sequence(i) for p in parts for i in range(len(p))],
                              *(np.concatenate([getattr(p, name) for p in parts])
                                for name in ("prompt_lens", "prompt_ids", "temperatures")))

    def split(self, val_prompt_ids) -> tuple[SequenceData, SequenceData]:
        """(sequences of other prompts, sequences of `val_prompt_ids`)."""
        is_val = np.isin(self.prompt_ids, np.asarray(list(val_prompt_ids)))
        return self.subset(np.flatnonzero(~is_val)), self.subset(np.flatnonzero(is_val))

    def subset(self, index) -> SequenceData:
        return SequenceData.from_lists([self.sequence(i) for i in index], self.prompt_lens[index],
                                       self.prompt_ids[index], self.temperatures[index])


def chat_ids(tokenizer, prompt: str, max_prompt_tokens: int) -> list[int]:
    """The prompt as one chat user turn + the assistant header (as ModelPair.encode), keeping its last
    `max_prompt_tokens` tokens."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                         tokenize=False)
    return list(tokenizer.encode(text, add_special_tokens=False))[-max_prompt_tokens:]


@torch.no_grad()
def generate_responses(model, tokenizer, prompts, temperatures, *, max_new_tokens: int = 256,
                       batch_size: int = 512, max_prompt_tokens: int = 256, seed: int = 0,
                       engine: bool = False, prompt_ids=None) -> SequenceData:
    """Every prompt answered once at every temperature in `temperatures` (0 = greedy) -> SequenceData, whose
    prompt_ids are `prompt_ids` (one per prompt: their indices in the prompts file) or the prompts' positions.

    Batches of `batch_size` prompts; a response ends at its first EOS (kept) or after `max_new_tokens` tokens.
    Sampling uses the plain temperature-scaled distribution (no top-k/top-p). Hugging Face `generate` on left-padded
    batches (the reference), or with `engine` ddtree's native engine (engine_responses)."""
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    temperatures = [check_temperature("temperatures entry", t, allow_zero=True) for t in temperatures]
    if not temperatures:
        raise ValueError("temperatures must list at least one temperature (0 = greedy)")
    device = model.get_input_embeddings().weight.device
    eos, pad = eos_and_pad(model, tokenizer)
    encoded = [chat_ids(tokenizer, p, max_prompt_tokens) for p in prompts]
    file_ids = list(range(len(prompts)) if prompt_ids is None else prompt_ids)
    if len(file_ids) != len(prompts):
        raise ValueError(f"prompt_ids must give one id per prompt ({len(prompts)}), got {len(file_ids)}")
    jobs = [(i, t) for t in temperatures for i in range(len(encoded))]
    sequences, prompt_lens, ids_out, temps = [], [], [], []
    torch.manual_seed(seed)
    for start in tqdm(range(0, len(jobs), batch_size), desc="generating responses", unit="batch"):
        chunk = jobs[start:start + batch_size]
        for temperature in sorted({t for _, t in chunk}):
            ids = [i for i, t in chunk if t == temperature]
            if engine:
                responses = engine_responses(model, [encoded[i] for i in ids], temperature,
                                             max_new_tokens=max_new_tokens, eos=eos)
            else:
                responses = hf_responses(model, [encoded[i] for i in ids], temperature, max_new_tokens, pad, device)
            for i, generated in zip(ids, responses):
                end = next((k + 1 for k, tok in enumerate(generated) if tok in eos), len(generated))
                sequences.append(encoded[i] + generated[:end])
                prompt_lens.append(len(encoded[i]))
                ids_out.append(file_ids[i])
                temps.append(temperature)
    return SequenceData.from_lists(sequences, prompt_lens, ids_out, temps)


def eos_and_pad(model, tokenizer) -> tuple[set[int], int]:
    """The model's end-of-sequence ids and the id left padding uses (the tokenizer's pad, else the least EOS id)."""
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, (list, tuple)) else [eos])
    return eos, tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos)


def hf_responses(model, prompts_ids, temperature: float, max_new_tokens: int, pad: int, device,
                 top_p: float = 1.0) -> list[list[int]]:
    """Hugging Face `generate` on the prompts (token id lists) left padded into one batch -> the generated ids
    (sampled with nucleus `top_p` at temperature > 0, greedy at 0; ending at the model's EOS ids)."""
    width = max(map(len, prompts_ids))
    ids = torch.full((len(prompts_ids), width), pad, dtype=torch.long)  # [b, width] left padded
    attention = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts_ids):
        ids[row, width - len(prompt):] = torch.tensor(prompt)
        attention[row, width - len(prompt):] = 1
    sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=top_p) if temperature > 0 \
        else dict(do_sample=False)
    out = model.generate(input_ids=ids.to(device), attention_mask=attention.to(device),
                         max_new_tokens=max_new_tokens, pad_token_id=pad, **sampling)
    return out[:, width:].tolist()


@torch.no_grad()
def engine_responses(model, prompts_ids, temperature: float, *, max_new_tokens: int, eos) -> list[list[int]]:
    """The target's answers to the prompts (token id lists) through ddtree's native engine -> the generated ids
    (up to max_new_tokens each; the caller cuts at the first EOS). Each prompt is prefilled alone into a static KV
    cache, then one forward a token steps the whole batch (no padding, no growing cache); greedy is the first
    maximum, sampling the plain temperature-scaled distribution, as generate_responses' reference. The steps read
    nothing back but an EOS check every 16 tokens (stopping once every answer holds one)."""
    from ddtree.engine.decoder import NativeDecoder
    device = model.get_input_embeddings().weight.device
    batch = len(prompts_ids)
    decoder = NativeDecoder(model, batch_size=batch, max_len=max(map(len, prompts_ids)) + max_new_tokens)
    logits = torch.stack([decoder.prefill(prompt, b)[0][-1] for b, prompt in enumerate(prompts_ids)])  # [B, vocab]
    roots = torch.full((batch, 1), -1, device=device)
    eos = torch.tensor(sorted(eos), device=device)
    out = torch.empty(batch, max_new_tokens, dtype=torch.long, device=device)
    ended = torch.zeros(batch, dtype=torch.bool, device=device)
    for step in range(max_new_tokens):
        token = logits.argmax(-1) if temperature == 0 else \
            torch.multinomial(torch.softmax(logits / temperature, -1), 1)[:, 0]  # [B]
        out[:, step] = token
        ended |= torch.isin(token, eos)
        if step + 1 == max_new_tokens or (step % 16 == 15 and bool(ended.all())):
            break
        visible = decoder.visibility(roots, decoder.seq_lens)  # no host read with Triton attention
        logits = decoder.forward_visible(token[:, None], decoder.seq_lens[:, None], visible)[0][:, 0]
        decoder.seq_lens += 1
    return out[:, :step + 1].tolist()
