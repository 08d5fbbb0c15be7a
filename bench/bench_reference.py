"""The public DDTree reference implementation (liranringel/ddtree, MIT) side by side with this engine, on the same
pair, the same prompts and the same device, greedy (T=0).

The reference is NOT part of this repository: fetch it yourself (`git clone https://github.com/liranringel/ddtree
.reference/ddtree`; /.reference/ is git-ignored) and pass --reference-dir. Its modules are imported from that folder
as they are; this script only adapts our pair to their interfaces:
  - target: our Hugging Face target object itself (SDPA attention, which the reference needs for its tree mask);
  - drafter: the reference's own DFlashDraftModel, built from our drafter's config (a Qwen3 config in the public DFlash
    schema) and loaded with our drafter's state dict (strict), attention "sdpa" (flash-attn is not needed: the
    reference's generate loops never import it, only its benchmark.py insists on it);
  - its DynamicCache.crop(n) calls mean "keep n entries": its modules get a DynamicCache subclass that keeps that
    meaning on transformers releases whose crop only accepts "-n: drop n";
  - its top-level imports of `loguru` and `datasets` (logging and dataset loading, unused here) get stand-ins when
    those packages are missing; its cuda_time() (torch.cuda.synchronize + perf_counter) is kept on CUDA and replaced by
    perf_counter on a CPU; its optional C++ cache-compaction extension stays off unless --cpp-compact.
Methods: autoregressive (its dflash_generate with block_size=1, the baseline of its benchmark), DFlash chain
(dflash_generate) and DDTree per budget (ddtree_generate), against ours (ddtree.Session, native engine with CUDA
graphs on a GPU; the reference backend on a CPU unless --backend native).

Timing (both sides): decode tok/s = tokens produced after the target's prefill / the wall time after the prefill.
"cold" = the first run on a prompt (reference: every verify shape is new to torch's SDPA/cuDNN; ours: a fresh Session,
its first round eager and the second capturing CUDA graphs). "warm" = reference: the identical call repeated (the same
shapes); ours: a fresh Session after two warm-up rounds, as bench_e2e.py times. Before everything each side decodes a
short warm-up prompt once per method (as the reference's benchmark.py does), so process-wide compilation is not timed.
Acceptance = tokens committed per target forward. Agreement: per prompt and pair of runs, the first index where the
generated tokens differ and the target's top-2 logit margin there (one plain forward of our target over the common
prefix, in the run's dtype; "ulps" = the margin in bf16 units at the top logit).
Writes <out>/reference_<tag>.{md,json} (tag: h200 on an H200, else the device type).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import logging
import math
import platform
import sys
import time
import types
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import torch
import transformers
from tqdm.auto import tqdm
from transformers import DynamicCache

from ddtree import Session
from ddtree.models import DFlashDrafter, load_default_pair

HERE = Path(__file__).resolve().parent
REFERENCE_FILES = ("ddtree.py", "dflash.py", "model/__init__.py", "model/dflash.py", "model/utils.py")
REFERENCE_MARKERS = {"ddtree.py": "def ddtree_generate(", "dflash.py": "def dflash_generate(",
                     "model/dflash.py": "class DFlashDraftModel("}
OPTIONAL_IMPORTS = ("loguru", "datasets")  # the reference's top-level imports it does not need here
WARMUP_PROMPT = "Warmup"  # the reference benchmark's own warm-up prompt
WARMUP_TOKENS = 16


def load_prompt_sets() -> dict[str, list[str]]:
    """bench_e2e.py's prompt sets (loaded by path: `python -P` does not put bench/ on sys.path)."""
    spec = importlib.util.spec_from_file_location("bench_e2e", HERE / "bench_e2e.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PROMPT_SETS


# --------------------------------------------------------------------------------------------- the reference
@dataclass
class Reference:
    """The reference's modules: its `model` package, dflash.py and ddtree.py; digest = SHA-256 of its files."""
    model: types.ModuleType
    dflash: types.ModuleType
    ddtree: types.ModuleType
    folder: Path
    digest: str
    stand_ins: tuple[str, ...]


def check_reference_dir(path) -> Path:
    """The reference folder, or a ValueError saying what is wrong and how to get it."""
    how = "clone it with `git clone https://github.com/liranringel/ddtree .reference/ddtree` and pass that folder"
    if path is None or not str(path):
        raise ValueError(f"--reference-dir is required: the public DDTree reference is not shipped here; {how}")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ValueError(f"--reference-dir {str(path)!r} is not a folder; {how}")
    missing = [name for name in REFERENCE_FILES if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"--reference-dir {str(path)!r} is not the DDTree reference (liranringel/ddtree): it lacks "
                         f"{missing}; {how}")
    for name, marker in REFERENCE_MARKERS.items():
        if marker not in (folder / name).read_text(errors="replace"):
            raise ValueError(f"--reference-dir {str(path)!r} is not the DDTree reference (liranringel/ddtree): "
                             f"{name} defines no {marker.rstrip('(')!r}; {how}")
    return folder


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__doc__ = f"stand-in for {name} (absent here), installed by bench_reference.py"
    if name == "loguru":
        module.logger = logging.getLogger("ddtree_reference")
    else:
        def unavailable(*args, **kwargs):
            raise RuntimeError(f"{name} is not installed; bench_reference.py only stands in for the import")
        module.load_dataset = module.Features = module.Sequence = module.Value = unavailable
    return module


def _load_module(name: str, path: Path, package: bool = False) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path,
                                                  submodule_search_locations=[str(path.parent)] if package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def import_reference(path, *, device: torch.device, cpp_compact: bool = False) -> Reference:
    """Import the reference from `path` without touching sys.path: its ddtree.py would shadow our `ddtree` package,
    so it loads as `reference_ddtree`; its `model` package and `dflash` module keep their names (it imports them so)."""
    folder = check_reference_dir(path)
    stand_ins = tuple(name for name in OPTIONAL_IMPORTS
                      if name not in sys.modules and importlib.util.find_spec(name) is None)
    for name in stand_ins:
        sys.modules[name] = _stand_in(name)
    for name in ("model", "dflash"):
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve().parent not in (
                folder.resolve(), (folder / "model").resolve()):
            raise ValueError(f"a module named {name!r} from {loaded.__file__} is already imported; the reference's "
                             f"own {name!r} cannot load in this process")
    model = _load_module("model", folder / "model" / "__init__.py", package=True)
    dflash = _load_module("dflash", folder / "dflash.py")
    ddtree = _load_module("reference_ddtree", folder / "ddtree.py")
    dflash.DynamicCache = ddtree.DynamicCache = KeepCropCache
    if device.type != "cuda":  # its cuda_time() synchronizes CUDA, which a CPU-only torch refuses
        dflash.cuda_time = ddtree.cuda_time = time.perf_counter
    ddtree.maybe_enable_cpp_compact(cpp_compact)
    digest = hashlib.sha256(b"".join((folder / name).read_bytes() for name in REFERENCE_FILES)).hexdigest()
    return Reference(model, dflash, ddtree, folder, digest, stand_ins)


class KeepCropCache(DynamicCache):
    """A DynamicCache whose crop(n) keeps the first n entries (a negative n drops -n), the meaning the reference
    relies on; recent transformers releases accept only the negative form."""

    def crop(self, max_length: int) -> None:
        length = self.get_seq_length()
        keep = length + max_length if max_length < 0 else max_length
        if keep < length:
            super().crop(keep - length)


def reference_drafter(ref: Reference, drafter: DFlashDrafter):
    """The reference's DFlashDraftModel with our drafter's architecture and weights (strict load), SDPA attention,
    on our drafter's device and dtype."""
    from transformers import Qwen3Config

    config = Qwen3Config(**drafter.config.to_dict())
    config._attn_implementation = "sdpa"
    model = ref.model.DFlashDraftModel(config)
    model.load_state_dict(drafter.state_dict(), strict=True)
    model = model.to(drafter.device, drafter.dtype).eval().requires_grad_(False)
    if list(model.target_layer_ids) != list(drafter.config.target_layer_ids) or \
            model.mask_token_id != drafter.config.mask_token_id or model.block_size != drafter.config.block_size:
        raise ValueError("the reference drafter read another target_layer_ids / mask_token_id / block_size than ours")
    return model


# --------------------------------------------------------------------------------------------- runs
@dataclass
class Run:
    """One decode of one prompt: tokens = generated ids (prompt excluded, the prefill's token first);
    decode_s = the wall time after the prefill (ours: after the warm-up rounds too), decode_tokens = max_new - 1 on
    both sides (the tokens after the prefill's); lengths = tokens committed by each target forward of that time."""
    tokens: list[int]
    decode_tokens: int
    decode_s: float
    lengths: list[int]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_reference(ref: Reference, pair, draft, ids: list[int], method: str, budget: int, max_new: int) -> Run:
    """One reference decode, T=0, no stop tokens (every run makes max_new tokens)."""
    input_ids = torch.tensor([ids], device=pair.device)
    common = dict(model=draft, target=pair.target, input_ids=input_ids, mask_token_id=draft.mask_token_id,
                  max_new_tokens=max_new, stop_token_ids=None, temperature=0.0)
    _sync(pair.device)
    t0 = time.perf_counter()
    if method == "ddtree":
        out = ref.ddtree.ddtree_generate(block_size=draft.block_size, tree_budget=budget, **common)
    else:
        out = ref.dflash.dflash_generate(block_size=1 if method == "ar" else draft.block_size, **common)
    _sync(pair.device)
    wall = time.perf_counter() - t0
    tokens = out.output_ids[0, out.num_input_tokens:].tolist()
    if len(tokens) != max_new or out.output_ids[0, :out.num_input_tokens].tolist() != ids:
        raise RuntimeError(f"the reference returned {len(tokens)} tokens, not {max_new}: it drops every "
                           f"mask_token_id ({draft.mask_token_id}) from its output, so the target generated it")
    return Run(tokens, len(tokens) - 1, wall - out.time_to_first_token, list(out.acceptance_lengths))


def run_ours(pair, prompt: str, method: str, budget: int, max_new: int, backend: str, warm: bool) -> Run:
    """One decode on our Session, T=0. warm: two rounds first (the second captures CUDA graphs), then timed."""
    cuda = pair.device.type == "cuda"
    options = dict(cuda_graphs=cuda) if backend == "native" else {}
    s = Session(pair, prompt, method=method, budget=budget, verify="greedy", temperature=1.0, backend=backend,
                record=False, **options)
    if warm:
        s.step()
        s.step()
    start, first = len(s.generated[0]), len(s.acceptance_lengths[0])
    _sync(pair.device)
    t0 = time.perf_counter()
    # start + max_new: the reference's stopping rule (it stops once max_new tokens precede the pending bonus token)
    tokens = s.run(start + max_new, stop_on_eos=False)[0].tokens
    _sync(pair.device)
    wall = time.perf_counter() - t0
    return Run(tokens[:max_new], max_new - 1, wall, s.acceptance_lengths[0][first:])


# --------------------------------------------------------------------------------------------- agreement
def first_divergence(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


@torch.no_grad()
def top2_margin(pair, ids: list[int], prefix: list[int]) -> dict:
    """The target's top-2 logits after prompt + prefix (one plain forward, the pair's dtype)."""
    x = torch.tensor([ids + prefix], device=pair.device)
    logits = pair.target(x, logits_to_keep=1).logits[0, -1].float()  # [vocab]
    top = torch.topk(logits, 2)
    margin = float(top.values[0] - top.values[1])
    ulp = 2.0 ** (math.floor(math.log2(abs(float(top.values[0])) or 1.0)) - 7)  # bf16 spacing at the top logit
    return {"top2": top.indices.tolist(), "margin": round(margin, 5), "ulps": round(margin / ulp, 2)}


def agreement(pair, ids: list[int], a: list[int], b: list[int]) -> dict:
    i = first_divergence(a, b)
    if i is None:
        return {"first_divergence": None}
    return {"first_divergence": i, "tokens": [a[i], b[i]], **top2_margin(pair, ids, a[:i])}


# --------------------------------------------------------------------------------------------- main
def methods(budgets: list[int]) -> list[tuple[str, str, int]]:
    """(label, method, budget) per configuration."""
    return [("ar", "ar", 1), ("dflash", "dflash", 1)] + [(f"ddtree-{b}", "ddtree", b) for b in budgets]


def speed(run: Run) -> float:
    return run.decode_tokens / run.decode_s


def summarize(runs: list[Run]) -> dict:
    tokens, seconds = sum(r.decode_tokens for r in runs), sum(r.decode_s for r in runs)
    rounds = sum(len(r.lengths) for r in runs)
    return {"tokens_per_s": round(tokens / seconds, 1), "ms_per_round": round(1e3 * seconds / rounds, 2),
            "acceptance": round(sum(sum(r.lengths) for r in runs) / rounds, 2)}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference-dir", type=Path, required=True,
                    help="a checkout of github.com/liranringel/ddtree (not shipped here)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=["bfloat16", "float32"], default=None,
                    help="default: load_default_pair's (bfloat16 on CUDA and on a CPU with native bfloat16, "
                         "else float32)")
    ap.add_argument("--backend", choices=["native", "reference"], default=None,
                    help="our backend (default: native on CUDA, our pure-torch reference backend on a CPU)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--prompt-set", choices=["code", "chat", "both"], default="both")
    ap.add_argument("--prompts", type=int, default=4, help="the first N prompts of each set")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--cpp-compact", action="store_true", help="the reference's inline C++ cache compaction")
    ap.add_argument("--max-seconds", type=float, default=300,
                    help="start no further prompt once the run (warm-up included) would pass this")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    try:
        check_reference_dir(args.reference_dir)
    except ValueError as e:
        ap.error(str(e))
    if args.max_new_tokens < 2 or args.prompts < 1 or min(args.budgets) < 1:
        ap.error("--max-new-tokens must be >= 2, --prompts >= 1 and every budget >= 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype) if args.dtype else None
    backend = args.backend or ("native" if device.type == "cuda" else "reference")
    ref = import_reference(args.reference_dir, device=device, cpp_compact=args.cpp_compact)
    pair = load_default_pair(device=device, dtype=dtype)
    draft = reference_drafter(ref, pair.drafter)
    sets = load_prompt_sets()
    names = ["code", "chat"] if args.prompt_set == "both" else [args.prompt_set]
    prompts = [(f"{name}/{i}", text) for name in names for i, text in enumerate(sets[name][:args.prompts])]
    configs = methods(args.budgets)
    n = args.max_new_tokens
    t_start = time.perf_counter()
    warm_ids = pair.encode(WARMUP_PROMPT)
    for _, method, budget in tqdm(configs, desc="warm-up"):
        run_reference(ref, pair, draft, warm_ids, method, budget, WARMUP_TOKENS)
        run_ours(pair, WARMUP_PROMPT, method, budget, WARMUP_TOKENS, backend, warm=False)
    runs: dict[str, dict[str, list[Run]]] = {side: {label: [] for label, _, _ in configs}
                                             for side in ("ours_cold", "ours_warm", "ref_cold", "ref_warm")}
    planned, t_prompts = len(prompts), time.perf_counter()
    for k, (pid, text) in enumerate(tqdm(prompts, desc="prompts")):
        per_prompt = (time.perf_counter() - t_prompts) / max(k, 1)
        if k and time.perf_counter() - t_start + per_prompt > args.max_seconds:
            prompts = prompts[:k]  # the time budget: report the prompts done
            break
        ids = pair.encode(text)
        for label, method, budget in configs:
            runs["ref_cold"][label].append(run_reference(ref, pair, draft, ids, method, budget, n))
            runs["ref_warm"][label].append(run_reference(ref, pair, draft, ids, method, budget, n))
            runs["ours_cold"][label].append(run_ours(pair, text, method, budget, n, backend, warm=False))
            runs["ours_warm"][label].append(run_ours(pair, text, method, budget, n, backend, warm=True))
    rows = []
    for label, _, _ in configs:
        row = {"method": label}
        for side, by_label in runs.items():
            row[side] = summarize(by_label[label])
        for ours, theirs, key in [("warm", "warm", "x_ref_warm"), ("cold", "cold", "x_ref_cold"),
                                  ("warm", "cold", "x_ref_warm_vs_cold")]:  # ours (steady) vs their first-seen shapes
            row[key] = round(row[f"ours_{ours}"]["tokens_per_s"] / row[f"ref_{theirs}"]["tokens_per_s"], 2)
            pairs = zip(runs[f"ours_{ours}"][label], runs[f"ref_{theirs}"][label])
            per_prompt = [speed(o) / speed(r) for o, r in pairs]
            row[f"{key}_range"] = [round(min(per_prompt), 2), round(max(per_prompt), 2)]
        rows.append(row)
    for row in rows:  # speed-up over each side's own autoregressive decoding (warm)
        for side in ("ours_warm", "ref_warm"):
            row[side]["x_ar"] = round(row[side]["tokens_per_s"] / rows[0][side]["tokens_per_s"], 2)
    comparisons = [("ours ar", "ref ar")] + [(f"{s} {label}", f"{s} ar") for label, _, _ in configs[1:]
                                              for s in ("ours", "ref")] + \
        [(f"ours {label}", f"ref {label}") for label, _, _ in configs[1:]]
    agree = []
    for k, (pid, text) in enumerate(prompts):
        ids = pair.encode(text)
        tokens = {f"{side} {label}": runs[f"{side}_cold"][label][k].tokens[:n] for label, _, _ in configs
                  for side in ("ours", "ref")}
        repeat = {side: [label for label, _, _ in configs
                         if runs[f"{side}_warm"][label][k].tokens[:n] != runs[f"{side}_cold"][label][k].tokens[:n]]
                  for side in ("ours", "ref")}
        agree.append({"prompt": pid, "prompt_tokens": len(ids), "repeat_differs": repeat,
                      "pairs": {f"{a} vs {b}": agreement(pair, ids, tokens[a], tokens[b]) for a, b in comparisons},
                      "tokens": tokens})
    elapsed = time.perf_counter() - t_start
    cuda = device.type == "cuda"
    name = torch.cuda.get_device_name(device) if cuda else \
        f"CPU {platform.machine()}, {torch.get_num_threads()} threads"
    meta = {"date": date.today().isoformat(), "device": name, "torch": torch.__version__,
            "transformers": transformers.__version__, "dtype": str(pair.dtype).removeprefix("torch."),
            "our_backend": backend + (" + CUDA graphs" if cuda and backend == "native" else ""),
            "reference_sha256": ref.digest, "reference_stand_ins": list(ref.stand_ins),
            "reference_cpp_compact": args.cpp_compact, "attention": "SDPA for the target and the reference drafter",
            "prompts": [pid for pid, _ in prompts], "prompts_planned": planned, "max_new_tokens": n,
            "seconds": round(elapsed, 1)}
    tag = "h200" if cuda and "H200" in name else device.type
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"meta": meta, "rows": rows, "agreement": agree}
    (args.out / f"reference_{tag}.json").write_text(json.dumps(result, indent=1))
    (args.out / f"reference_{tag}.md").write_text(markdown(meta, rows, agree, comparisons))
    print(markdown(meta, rows, agree, comparisons))
    return result


def markdown(meta: dict, rows: list[dict], agree: list[dict], comparisons) -> str:
    done, planned = len(meta["prompts"]), meta["prompts_planned"]
    cut = f" (time budget: {done} of {planned} prompts)" if done < planned else ""
    lines = [f"# Public DDTree reference vs this engine ({meta['device']})", "",
             f"{meta['date']}, torch {meta['torch']}, transformers {meta['transformers']}, {meta['dtype']}, T=0, "
             f"{done} prompts ({', '.join(meta['prompts'])}) x {meta['max_new_tokens']} new tokens, "
             f"no EOS stop. Ours: {meta['our_backend']}. Reference: liranringel/ddtree (files sha256 "
             f"{meta['reference_sha256'][:12]}), {meta['attention']}, C++ compaction "
             f"{'on' if meta['reference_cpp_compact'] else 'off'}, stand-ins for "
             f"{meta['reference_stand_ins'] or 'none'}. Whole run {meta['seconds']} s{cut}. "
             "Command: `python bench/bench_reference.py --reference-dir DIR`.", "",
             "Decode tok/s (after prefill; cold = the first run on the prompt, warm = the reference repeating the "
             "same shapes, ours after two warm-up rounds with graphs captured); ratios over all prompts' tokens, "
             "per-prompt range in parentheses; acceptance = tokens per target forward (cold runs); x_ar = over the "
             "same side's autoregressive (warm).", "",
             "| method | ours warm | ref warm | ours/ref warm (per prompt) | ours cold | ref cold | ours/ref cold "
             "(per prompt) | ours warm / ref cold (per prompt) | ours ms/round warm | ref ms/round warm | ref ms/round "
             "cold | acceptance ours / ref | x_ar ours / ref |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ow, rw, oc, rc = r["ours_warm"], r["ref_warm"], r["ours_cold"], r["ref_cold"]
        span = {key: f"**{r[key]}x** ({r[key + '_range'][0]}-{r[key + '_range'][1]})"
                for key in ("x_ref_warm", "x_ref_cold", "x_ref_warm_vs_cold")}
        lines.append(f"| {r['method']} | {ow['tokens_per_s']} | {rw['tokens_per_s']} | {span['x_ref_warm']} | "
                     f"{oc['tokens_per_s']} | {rc['tokens_per_s']} | {span['x_ref_cold']} | "
                     f"{span['x_ref_warm_vs_cold']} | {ow['ms_per_round']} | "
                     f"{rw['ms_per_round']} | {rc['ms_per_round']} | {oc['acceptance']} / {rc['acceptance']} | "
                     f"{ow['x_ar']} / {rw['x_ar']} |")
    lines += ["", "T=0 token agreement (cold runs, first max_new_tokens): identical prompts, and each first "
              "divergence as prompt@index (top-2 margin of the target there, in bf16 ulps).", "",
              "| comparison | identical | first divergences |", "|---|---|---|"]
    for a, b in comparisons:
        key = f"{a} vs {b}"
        same = sum(p["pairs"][key]["first_divergence"] is None for p in agree)
        where = "; ".join(f"{p['prompt']}@{d['first_divergence']} ({d['margin']}, {d['ulps']} ulps)"
                          for p in agree for d in [p["pairs"][key]] if d["first_divergence"] is not None)
        lines.append(f"| {key} | {same}/{len(agree)} | {where or '-'} |")
    differs = [f"{p['prompt']} {side}: {', '.join(labels)}" for p in agree
               for side, labels in p["repeat_differs"].items() if labels]
    lines += ["", "Repeat runs (warm vs cold tokens) differ: " + ("; ".join(differs) if differs else "never") + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
