"""Training prompts at scale, written by the target itself and taken from documented code, then answered by it:

- Magpie prompts: the target is given its chat template up to the start of a user turn (optionally with the first
  words of a request of one category: OPENERS) and samples the rest of the user turn; what it writes is a prompt
  from its own distribution of requests.
- Completion prompts: the signature and docstring of a documented Python function (the standard library and
  installed packages, COMPLETION_PACKAGES), framed as a request to complete it (COMPLETION_FRAMES), the body left out.

Prompts are cleaned, deduplicated (normalised text, and at most MAX_SHARED_START prompts a shared opening) and
split by subject: a completion prompt's subject is its module, so a held-out module's functions are never trained
on; a Magpie prompt's subject is its normalised text. `python -m ddtree.training.synth --out DIR` writes
DIR/prompts.json (load_prompts' schema), DIR/data.npz (the target's answers to the training side, greedy and
sampled: ddtree.training.data), DIR/manifest.json (counts, SHA-256 of each file, the settings) and DIR/samples.jsonl
(a few prompts of each kind, for the data card). A device call runs at most 10 minutes, about 25 k answers on an
H100, so larger runs answer one prompts file in parts: `--shard 0 --shards N` writes the prompts and
data-0.npz, each later call `--shard k --shards N` (same --out, same machine) data-k.npz; train.py reads them all
(`--data DIR/data-*.npz --prompts DIR/prompts.json --temperatures`). ddtree/training/README.md has the command
behind drafter v7.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import random
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ddtree.files import atomic_write
from ddtree.training.data import SequenceData, eos_and_pad, generate_responses, hf_responses
from ddtree.training.prompts import GROUPS, STDLIB_MODULES, clean_doc, group_of, interleave_kinds

# The first words of a request, per category of what users ask a chat assistant; "" is plain Magpie (the target
# starts the request itself). A Magpie prompt's kind is "magpie-<category>"; "magpie-code" is in the code group.
OPENERS = {
    "open": ("",),
    "writing": ("Write", "Compose", "Draft", "Write a short story about", "Write a poem about", "Write an email to",
                "Write a blog post about", "Write a speech", "Rewrite the following", "Write a letter"),
    "roleplay": ("Pretend you are", "Imagine you are", "Act as", "You are a", "Role-play as", "Play the role of"),
    "reasoning": ("If", "Suppose", "Which of the following", "Why", "A riddle:", "Is it true that",
                  "What would happen if", "Explain the logic"),
    "math": ("Solve", "Calculate", "What is the value of", "Find", "Prove that", "How many", "A train",
             "Simplify"),
    "code": ("Write a Python function", "Write a program that", "How do I", "Implement", "Fix this code:",
             "Explain this code:", "Write a SQL query", "Write a function in JavaScript", "What does this Python"),
    "extraction": ("Extract", "Summarize the following", "From the text below,", "Identify the", "List the",
                   "Given the following", "Classify", "Read the passage"),
    "stem": ("Explain", "How does", "What is the difference between", "Describe how", "What causes",
             "What is"),
    "humanities": ("Discuss", "What were the causes of", "Analyze", "Compare", "What is the significance of",
                   "Who was"),
}
COMPLETION_FRAMES = (
    "Complete the following Python function.\n\n```python\n{code}```",
    "{code}",
    "Implement this function:\n\n```python\n{code}```",
    "```python\n{code}```\nFinish the implementation.",
    "Write the body of this Python function.\n\n{code}",
    "Fill in the missing code:\n\n```python\n{code}```",
)
# Installed packages whose documented pure-Python functions become completion prompts beside the standard library
# (each one used only where it imports).
COMPLETION_PACKAGES = ("numpy", "numpy.linalg", "numpy.random", "json", "packaging.version", "tqdm", "yaml",
                       "requests.utils", "jinja2.utils", "pygments.util", "safetensors.torch", "tokenizers")
MAX_SHARED_START = 3  # prompts kept per normalised first SHARED_START_WORDS words
SHARED_START_WORDS = 8
MIN_WORDS, MAX_WORDS = 3, 200


def user_turn_prefix(tokenizer) -> str:
    """The chat template's text before a user turn's content (the system turn, if the template adds one, and the
    user header): what Magpie gives the target to make it write a request."""
    marker = "\x00PROMPT\x00"
    text = tokenizer.apply_chat_template([{"role": "user", "content": marker}], add_generation_prompt=True,
                                         tokenize=False)
    return text[:text.index(marker)]


def normalised(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def clean_request(text: str) -> str | None:
    """`text` stripped, or None when it is no usable request: too short or long, special-token text in it, or one
    word or line repeated over and over (a degenerate sample)."""
    text = text.strip()
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or "<|" in text or "|>" in text:
        return None
    if len(words) >= 12 and len(set(words)) < 0.35 * len(words):
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 4 and len(set(lines)) < 0.5 * len(lines):
        return None
    return text


def dedupe(prompts: list[dict]) -> list[dict]:
    """The prompts in order without repeats: one per normalised text, and at most MAX_SHARED_START per normalised
    opening of SHARED_START_WORDS words."""
    seen, starts, out = set(), {}, []
    for prompt in prompts:
        key = normalised(prompt["prompt"])
        start = " ".join(key.split()[:SHARED_START_WORDS])
        if key in seen or starts.get(start, 0) >= MAX_SHARED_START:
            continue
        seen.add(key)
        starts[start] = starts.get(start, 0) + 1
        out.append(prompt)
    return out


@torch.no_grad()
def magpie_prompts(model, tokenizer, count: int, *, batch_size: int = 1024, max_new_tokens: int = 128,
                   temperature: float = 1.0, top_p: float = 0.95, seed: int = 0) -> list[dict]:
    """`count` sampled user requests (before cleaning) as {"kind", "group", "source", "prompt"} dicts: the target
    continues its own user-turn prefix, after an opener drawn per request (a category uniformly, then one of its
    openers); a request ends at the end of turn (EOS), one cut off at max_new_tokens is dropped."""
    rng = random.Random(seed)
    prefix = user_turn_prefix(tokenizer)
    eos, pad = eos_and_pad(model, tokenizer)
    device = model.get_input_embeddings().weight.device
    categories = sorted(OPENERS)
    drawn = [(category, rng.choice(OPENERS[category])) for category in rng.choices(categories, k=count)]
    torch.manual_seed(seed)
    out = []
    for start in tqdm(range(0, count, batch_size), desc="writing prompts", unit="batch"):
        chunk = drawn[start:start + batch_size]
        encoded = [list(tokenizer.encode(prefix + opener, add_special_tokens=False)) for _, opener in chunk]
        generated = hf_responses(model, encoded, temperature, max_new_tokens, pad, device, top_p=top_p)
        for (category, opener), new in zip(chunk, generated):
            end = next((k for k, token in enumerate(new) if token in eos), None)
            if end is None:
                continue
            text = clean_request(opener + (" " if opener else "") + tokenizer.decode(new[:end]).lstrip())
            if text is not None:
                out.append({"kind": f"magpie-{category}", "group": group_of(f"magpie-{category}"),
                            "source": f"magpie:{category}:{opener!r}", "prompt": text})
    return out


def function_stub(name: str, function) -> str | None:
    """`def name(signature):` + its docstring (cleaned, indented), no body; None without both."""
    doc = clean_doc(inspect.getdoc(function) or "")
    try:
        signature = str(inspect.signature(function))
    except (TypeError, ValueError):
        return None
    if len(doc) < 20 or '"""' in doc or len(signature) > 200:
        return None
    body = "\n".join(("    " + line).rstrip() for line in doc.splitlines())
    return f'def {name}{signature}:\n    """{body.lstrip()}\n    """\n'


def completion_prompts(modules=STDLIB_MODULES + COMPLETION_PACKAGES, frames: int = 2, seed: int = 0) -> list[dict]:
    """`frames` completion prompts for every public documented pure-Python function defined in `modules` (those
    that import), each in another of COMPLETION_FRAMES (a seeded draw); kind "completion", source
    "completion:<module>.<name>"."""
    rng = random.Random(seed)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in modules:
            try:
                module = importlib.import_module(module_name)
            except Exception:  # noqa: BLE001 - an optional package that is absent or broken here is skipped
                continue
            for name, function in sorted(vars(module).items()):
                if name.startswith("_") or not inspect.isfunction(function):
                    continue
                if not (function.__module__ or "").startswith(module_name.split(".")[0]):
                    continue
                stub = function_stub(name, function)
                if stub is not None:
                    out += [{"kind": "completion", "group": "code", "source": f"completion:{module_name}.{name}",
                             "prompt": frame.format(code=stub)} for frame in rng.sample(COMPLETION_FRAMES, frames)]
    return out


def subject(prompt: dict) -> str:
    """What a held-out prompt must not share with a training one: a completion prompt's module, else its text."""
    if prompt["kind"] == "completion":
        return prompt["source"].removeprefix("completion:").rsplit(".", 1)[0]
    return normalised(prompt["prompt"])


def split_by_subject(prompts: list[dict], heldout_fraction: float) -> tuple[list[dict], list[dict]]:
    """(train, heldout): a subject is held out when its SHA-256 falls in the first `heldout_fraction` of the range
    (stable: a prompt's side depends on its subject alone, not on the other prompts)."""
    def held(p):
        return int(hashlib.sha256(subject(p).encode()).hexdigest()[:8], 16) < heldout_fraction * 16 ** 8
    return [p for p in prompts if not held(p)], interleave_kinds([p for p in prompts if held(p)])


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def shard_suffix(shard: int, shards: int) -> str:
    """What a shard's data and manifest file names carry: nothing for an unsharded run, else "-<shard>"."""
    return "" if shards == 1 else f"-{shard}"


def make(model, tokenizer, out: Path, *, magpie: int, earlier=(), heldout_fraction: float = 0.03,
         temperatures=(0.0, 1.0), gen_batch: int = 1024, max_new_tokens: int = 256, seed: int = 0,
         prompt_batch: int | None = None, settings: dict | None = None, shard: int = 0,
         shards: int = 1) -> SequenceData:
    """The whole pipeline into `out` (module docstring). `earlier`: prompt dicts of another file to answer too (its
    training side: they stay training prompts). Each training prompt is answered once, at
    temperatures[i % len(temperatures)] (prompts in a seeded random order), so greedy and sampled answers cover
    every kind. With `shards` > 1 only the training prompts of part `shard` (of `shards` contiguous parts) are
    answered, into data-<shard>.npz and manifest-<shard>.json, so that one prompts file is answered over several
    calls of a few minutes each: shard 0 writes prompts.json, a later shard reads it (the same run's) and writes no
    prompts."""
    out.mkdir(parents=True, exist_ok=True)
    suffix = shard_suffix(shard, shards)
    timings = {}
    if shard == 0:
        t0 = time.perf_counter()
        written = magpie_prompts(model, tokenizer, magpie, batch_size=prompt_batch or gen_batch, seed=seed)
        timings["magpie_s"] = round(time.perf_counter() - t0, 1)
        made = dedupe(written + completion_prompts(seed=seed))
        train, heldout = split_by_subject(made, heldout_fraction)
        known = {normalised(p["prompt"]) for p in made}
        train += [p for p in earlier if normalised(p["prompt"]) not in known]
        random.Random(seed).shuffle(train)
        count = lambda side: {g: sum(p["group"] == g for p in side) for g in GROUPS}  # noqa: E731
        kinds = lambda side: {k: sum(p["kind"] == k for p in side)  # noqa: E731
                              for k in sorted({p["kind"] for p in side})}
        meta = {"python": sys.version.split()[0], "seed": seed, "magpie_drawn": magpie, "magpie_kept": len(written),
                "train_count": len(train), "heldout_count": len(heldout), "train_groups": count(train),
                "heldout_groups": count(heldout), "train_kinds": kinds(train), "heldout_kinds": kinds(heldout)}
        atomic_write(out / "prompts.json",
                     json.dumps({"meta": meta, "train": train, "heldout": heldout}, indent=0) + "\n")
    else:
        made = json.loads((out / "prompts.json").read_text())
        meta, train = made["meta"], made["train"]
    part = np.array_split(np.arange(len(train)), shards)[shard]  # the training prompts this call answers
    t0 = time.perf_counter()
    parts = []
    for k, temperature in enumerate(temperatures):
        ids = part[part % len(temperatures) == k]
        ids = ids[np.argsort([len(train[i]["prompt"]) for i in ids], kind="stable")]  # similar lengths batch together
        parts.append(generate_responses(model, tokenizer, [train[i]["prompt"] for i in ids], [temperature],
                                        batch_size=gen_batch, max_new_tokens=max_new_tokens, seed=seed + k,
                                        prompt_ids=ids))
    data = SequenceData.concat(parts)
    data.save(out / f"data{suffix}.npz")
    timings["answers_s"] = round(time.perf_counter() - t0, 1)
    files = ["prompts.json", f"data{suffix}.npz"]
    if shard == 0:
        rng = random.Random(seed)
        samples = [p for kind in sorted({p["kind"] for p in train}) for p in
                   rng.sample([q for q in train if q["kind"] == kind], min(3, sum(q["kind"] == kind for q in train)))]
        atomic_write(out / "samples.jsonl", "".join(json.dumps(p) + "\n" for p in samples))
        files.append("samples.jsonl")
    manifest = meta | timings | {
        "settings": settings or {}, "shard": shard, "shards": shards, "sequences": len(data),
        "tokens": int(data.offsets[-1]), "response_tokens": int(data.offsets[-1] - data.prompt_lens.sum()),
        "sequences_by_temperature": {f"{t:g}": int((data.temperatures == t).sum()) for t in temperatures},
        "files": {name: sha256_of(out / name) for name in files}}
    atomic_write(out / f"manifest{suffix}.json", json.dumps(manifest, indent=1) + "\n")
    return data


def main(argv=None) -> None:
    from ddtree.models import load_target
    from ddtree.training.prompts import PROMPTS_FILE
    from ddtree.training.train import spread
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--magpie", type=int, default=24576, help="requests the target writes (before cleaning)")
    parser.add_argument("--earlier", type=int, default=0,
                        help="also answer this many training prompts of the committed prompts file, spread over it")
    parser.add_argument("--heldout-fraction", type=float, default=0.03)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--gen-batch", type=int, default=1024)
    parser.add_argument("--prompt-batch", type=int, help="batch for writing prompts (default: --gen-batch)")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shard", type=int, default=0,
                        help="answer this part of the training prompts (0 writes the prompts; a later part reads "
                             "--out/prompts.json): one prompts file answered over several device calls")
    parser.add_argument("--shards", type=int, default=1, help="how many parts the training prompts are answered in")
    args = parser.parse_args(argv)
    if not 0 <= args.shard < args.shards:
        parser.error(f"--shard must be in [0, --shards) = [0, {args.shards}), got {args.shard}")
    if args.shard and not (args.out / "prompts.json").is_file():
        parser.error(f"--shard {args.shard} answers the prompts shard 0 wrote, but {args.out / 'prompts.json'} "
                     "does not exist: run --shard 0 into the same --out first")
    if not 0 < args.heldout_fraction < 1:
        parser.error(f"--heldout-fraction must be in (0, 1), got {args.heldout_fraction}")
    if args.magpie < 0 or args.earlier < 0:
        parser.error("--magpie and --earlier must be >= 0")
    torch.backends.cuda.matmul.allow_tf32 = True
    model, tokenizer = load_target(device=args.device)
    committed = json.loads(PROMPTS_FILE.read_text())["train"]
    earlier = [committed[i] for i in spread(len(committed), args.earlier)] if args.earlier else []
    make(model, tokenizer, args.out, magpie=args.magpie, earlier=earlier, heldout_fraction=args.heldout_fraction,
         temperatures=args.temperatures, gen_batch=args.gen_batch, max_new_tokens=args.max_new_tokens, seed=args.seed,
         prompt_batch=args.prompt_batch, settings={k: str(v) for k, v in vars(args).items()}, shard=args.shard,
         shards=args.shards)
    manifest = json.loads((args.out / f"manifest{shard_suffix(args.shard, args.shards)}.json").read_text())
    print(json.dumps({k: manifest.get(k) for k in ("magpie_kept", "train_groups", "heldout_groups", "sequences",
                                                   "tokens", "magpie_s", "answers_s")}), flush=True)


if __name__ == "__main__":
    main()
