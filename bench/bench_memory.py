"""Long-run memory: process RSS (and CUDA memory on a GPU) every 64 generated tokens over 1024 tokens, for the
reference and the native backend, DDTree budget 16, greedy, on the embedded pair.

Per backend it also records the live tensor bytes (tensors reachable by the garbage collector), and at the end the
RSS after clearing the records + gc and after glibc's malloc_trim(0): if trimming returns the growth while the live
tensors stay flat, the growth is allocator retention, not a leak. `--trim` calls malloc_trim(0) after every round.

Run: .venv/bin/python bench/bench_memory.py [--tokens 1024] [--every 64] [--backends reference native] [--trim]
     [--out bench/results/memory_cpu]   (writes .json and .md)
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import os
import platform
import time
import warnings
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ddtree import Session

PROMPT = "Write a Python module with a function that checks whether a string is a palindrome, with tests and docs."
LIBC = ctypes.CDLL(ctypes.util.find_library("c")) if platform.system() == "Linux" else None


def start(pair, prompt: str, backend: str, budget: int, tokens: int):
    """A DDTree session on `backend` (the one place that knows how sessions are built)."""
    return Session(pair, prompt, backend=backend, budget=budget, verify="greedy",
                   max_len=len(pair.encode(prompt)) + tokens + 2 * max(budget + 1, pair.block_size))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def tensor_mb() -> float:
    """Bytes of the distinct storages of every tensor the garbage collector can reach."""
    seen, total = set(), 0
    with warnings.catch_warnings():  # isinstance on some lazily imported modules' objects warns
        warnings.simplefilter("ignore")
        objects = [obj for obj in gc.get_objects() if isinstance(obj, torch.Tensor)]
    for obj in objects:
        if not obj.is_meta:
            storage = obj.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
    return total / 2**20


def trim() -> None:
    if LIBC is not None:
        LIBC.malloc_trim(0)


def measure(pair, backend: str, *, tokens: int, every: int, budget: int, trim_each_round: bool) -> dict:
    gc.collect()
    cuda = pair.device.type == "cuda"
    base_rss = rss_mb()
    session = start(pair, PROMPT, backend, budget, tokens)
    points, done, mark, rounds, trim_s = [], 0, 0, 0, 0.0
    t0 = time.perf_counter()
    with tqdm(total=tokens, desc=f"{backend}{' +trim' if trim_each_round else ''}", unit="tok") as bar:
        while done < tokens:
            if done >= mark:
                points.append(dict(tokens=done, rounds=rounds, rss_mb=round(rss_mb(), 1),
                                   tensor_mb=round(tensor_mb(), 1), seconds=round(time.perf_counter() - t0, 1),
                                   cuda_mb=round(torch.cuda.memory_allocated(pair.device) / 2**20, 1) if cuda else None,
                                   cuda_reserved_mb=round(torch.cuda.memory_reserved(pair.device) / 2**20, 1)
                                   if cuda else None))
                mark += every
            record = session.step()
            rounds += 1
            step = record.requests[0].acceptance_length
            done += step
            bar.update(step)
            if trim_each_round:
                t = time.perf_counter()
                trim()
                trim_s += time.perf_counter() - t
    rss_end, tensor_end = rss_mb(), tensor_mb()
    session.records.clear()
    gc.collect()
    rss_cleared = rss_mb()
    trim()
    rss_trimmed = rss_mb()
    growth = rss_end - points[0]["rss_mb"]
    return dict(backend=backend, trim_each_round=trim_each_round, budget=budget, tokens=done, rounds=rounds,
                rss_before_session_mb=round(base_rss, 1), points=points, rss_end_mb=round(rss_end, 1),
                rss_after_clear_gc_mb=round(rss_cleared, 1), rss_after_malloc_trim_mb=round(rss_trimmed, 1),
                rss_growth_mb=round(growth, 1), rss_growth_per_token_kb=round(1024 * growth / done, 1),
                tensor_growth_mb=round(tensor_end - points[0]["tensor_mb"], 1),
                tokens_per_second=round(done / (time.perf_counter() - t0), 1),
                trim_ms_per_round=round(1e3 * trim_s / rounds, 2) if trim_each_round else None,
                ms_per_round=round(1e3 * (time.perf_counter() - t0) / rounds, 1))


def markdown(results: list[dict], args, device: str) -> str:
    lines = [f"# Long-run memory ({device})", "",
             f"`python bench/bench_memory.py --tokens {args.tokens} --every {args.every} --budget {args.budget} "
             f"--backends {' '.join(args.backends)}{' --trim' if args.trim else ''}{' --tiny' if args.tiny else ''}`: "
             f"{'a tiny random pair' if args.tiny else 'the embedded pair'}, DDTree "
             f"budget {args.budget}, greedy, records kept (as a session keeps them). torch {torch.__version__}, "
             f"{torch.get_num_threads()} threads, MALLOC env: "
             f"{ {k: v for k, v in os.environ.items() if k.startswith('MALLOC_')} or 'none'}.", "",
             "| backend | trim each round | tokens | RSS start MB | RSS end MB | growth MB | KB / token | live tensors "
             "growth MB | after clear+gc MB | after malloc_trim MB | tok/s | ms / round (trim) |", "|---" * 12 + "|"]
    for r in results:
        trim_ms = "" if r["trim_ms_per_round"] is None else f" ({r['trim_ms_per_round']})"
        lines.append(f"| {r['backend']} | {'yes' if r['trim_each_round'] else 'no'} | {r['tokens']} | "
                     f"{r['points'][0]['rss_mb']} | {r['rss_end_mb']} | {r['rss_growth_mb']} | "
                     f"{r['rss_growth_per_token_kb']} | {r['tensor_growth_mb']} | {r['rss_after_clear_gc_mb']} | "
                     f"{r['rss_after_malloc_trim_mb']} | {r['tokens_per_second']} | {r['ms_per_round']}{trim_ms} |")
    lines += ["", "RSS (MB) every 64 generated tokens:", "",
              "| tokens | " + " | ".join(f"{r['backend']}{' +trim' if r['trim_each_round'] else ''}" for r in results)
              + " |", "|---" * (len(results) + 1) + "|"]
    for k in range(max(len(r["points"]) for r in results)):
        cells = [str(r["points"][k]["rss_mb"]) if k < len(r["points"]) else "" for r in results]
        lines.append(f"| {k * args.every} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--every", type=int, default=64)
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--backends", nargs="+", default=["reference", "native"], choices=["reference", "native"])
    parser.add_argument("--trim", action="store_true", help="also run each backend with malloc_trim(0) every round")
    parser.add_argument("--tiny", action="store_true", help="a tiny random pair (a quick check of this script)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", help="write OUT.json and OUT.md")
    args = parser.parse_args()
    from ddtree.models import load_default_pair, tiny_random_pair
    pair = tiny_random_pair(0, device=args.device) if args.tiny else load_default_pair(device=args.device)
    results = []
    for backend in args.backends:
        for trim_each_round in (False, True) if args.trim else (False,):
            results.append(measure(pair, backend, tokens=args.tokens, every=args.every, budget=args.budget,
                                   trim_each_round=trim_each_round))
            r = results[-1]
            print(f"{backend}{' +trim' if trim_each_round else ''}: RSS {r['points'][0]['rss_mb']} -> {r['rss_end_mb']} MB "
                  f"({r['rss_growth_per_token_kb']} KB/token), live tensors +{r['tensor_growth_mb']} MB, after "
                  f"clear+gc {r['rss_after_clear_gc_mb']}, after malloc_trim {r['rss_after_malloc_trim_mb']}")
            gc.collect()
            trim()
    device = torch.cuda.get_device_name(pair.device) if pair.device.type == "cuda" else f"CPU, {os.cpu_count()} cores"
    if args.out:
        Path(args.out + ".json").write_text(json.dumps(dict(device=device, args=vars(args), results=results), indent=1))
        Path(args.out + ".md").write_text(markdown(results, args, device))


if __name__ == "__main__":
    main()
