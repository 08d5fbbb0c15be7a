"""Bit-exact mode on the embedded pair: DDTree and DFlash greedy output against autoregressive greedy output, bit for
bit, on the code and chat prompts of bench_e2e.py, at batch 1 and in batches of 4, in exact mode and (the contrast)
in the fast mode.

Per prompt and method: whether the generated tokens equal the autoregressive ones, the first divergence, and whether
the target's logits at every committed position (the verify rows of the root and the accepted nodes,
ddtree.lossless.committed_logits) equal the autoregressive step's logits bitwise. Every session runs on the native
engine (CUDA graphs on a GPU). Writes bench/results/exact_<device>.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
from datetime import date
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ddtree import Session
from ddtree.lossless import committed_logits, first_difference
from ddtree.models import load_default_pair

sys.path.insert(0, str(Path(__file__).parent))
from bench_e2e import PROMPT_SETS  # noqa: E402


def decode(pair, prompts, method, budget, exact, max_new, cuda):
    """-> per prompt (tokens  # max_new, logits  # [max_new - 1, V]: the rows that chose tokens 1..) of one batched
    greedy session."""
    session = Session(pair, prompts, method=method, budget=budget, verify="greedy", backend="native", exact=exact,
                      cuda_graphs=cuda, record=False)
    logits = committed_logits(session, max_new - 1)
    return [(g[:max_new], x) for g, x in zip(session.generated, logits)]


def compare(ar, got) -> dict:
    (ar_tokens, ar_logits), (tokens, logits) = ar, got
    pos = first_difference(ar_tokens, tokens)
    rows = len(ar_logits) if pos is None else pos  # rows up to the one that chose the first different token
    same = [bool(torch.equal(a, b)) for a, b in zip(ar_logits[:rows], logits[:rows])]
    return {"tokens_equal": pos is None, "first_divergence": pos, "logit_rows": rows,
            "logit_rows_bitwise_equal": sum(same),
            "first_logit_difference": next((j for j, ok in enumerate(same) if not ok), None)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--prompts", type=int, default=8, help="the first N prompts of each set (code and chat)")
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--budget", type=int, default=128)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--modes", nargs="+", choices=["exact", "fast"], default=["exact", "fast"])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    pair = load_default_pair(device=args.device)
    prompts = [(kind, p) for kind in ("code", "chat") for p in PROMPT_SETS[kind][:args.prompts]]
    rows = []
    jobs = [(mode, batch) for batch in args.batches for mode in args.modes]  # in the order given
    meta = {"date": str(date.today()), "device": torch.cuda.get_device_name() if cuda else platform.processor(),
            "dtype": str(pair.dtype), "torch": torch.__version__, "max_new": args.max_new, "budget": args.budget,
            "prompts": len(prompts)}
    for mode, batch in tqdm(jobs, desc="exact check"):
        for start in range(0, len(prompts), batch):
            group = prompts[start:start + batch]
            texts = [p for _, p in group]
            ar = decode(pair, texts, "ar", 1, mode == "exact", args.max_new, cuda)
            for method in ("ddtree", "dflash"):
                got = decode(pair, texts, method, args.budget, mode == "exact", args.max_new, cuda)
                for k, ((kind, _), a, g) in enumerate(zip(group, ar, got)):
                    rows.append({"mode": mode, "batch": batch, "prompt": start + k, "set": kind, "method": method}
                                | compare(a, g))
        write(args.out, meta, rows, cuda)  # after every (mode, batch): a run cut short keeps what it measured


def write(out: Path, meta: dict, rows: list[dict], cuda: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    name = f"exact_{'h200' if cuda and 'H200' in meta['device'] else 'cuda' if cuda else 'cpu'}"
    (out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = [f"# Bit-exact mode vs fast mode ({meta['date']}, {meta['device']}, {meta['dtype']}, torch {meta['torch']})",
             "", f"`python bench/check_exact.py` : {meta['prompts']} prompts (code + chat) x {meta['max_new']} greedy "
             f"tokens, DDTree budget {meta['budget']}; 'tokens equal' = prompts whose output equals autoregressive "
             "greedy output in the same mode and batch; 'logit rows' = committed positions whose target logits equal "
             "the autoregressive step's bitwise (up to the row that chose the first different token).", "",
             "| mode | batch | method | tokens equal | logit rows bitwise equal | first divergences |",
             "|---|---|---|---|---|---|"]
    for key in dict.fromkeys((r["mode"], r["batch"], r["method"]) for r in rows):
        sel = [r for r in rows if (r["mode"], r["batch"], r["method"]) == key]
        firsts = [r["first_divergence"] for r in sel if r["first_divergence"] is not None]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {sum(r['tokens_equal'] for r in sel)}/{len(sel)} | "
                     f"{sum(r['logit_rows_bitwise_equal'] for r in sel)}/{sum(r['logit_rows'] for r in sel)} | "
                     f"{firsts or '-'} |")
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(lines) + 6:]))


if __name__ == "__main__":
    main()
