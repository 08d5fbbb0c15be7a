"""The target's verify forward on the native engine, per (batch, rows): the matmul-fused layer
(ddtree.kernels.fused_linear, 5 launches, per tiling) against the elementwise-fused layer (9 launches: cuBLAS
matmuls) and the modules' own forward, side by side in one run. CUDA-graph replays timed with CUDA events
(ddtree.engine.device_round's timer), medians of --repeats. Every path's logits are compared with the modules'
forward of a float32 copy of the target: err = max |difference| over the float32 logits' scale.

Writes bench/results/fused_target_<device>.{md,json}, and to --out also fused_choice.txt: FUSED_MATMUL_ROWS (the
largest batch x rows up to which the matmul-fused layer won at every point measured) and the tiling fastest there
(BLOCK_N, WIDE_BLOCK_N, NUM_WARPS, NUM_STAGES), which bench_e2e.py --fused-choice reads.

    python bench/bench_fused_target.py --batches 1 4 --rows 1 33 129 --block-n 16 32 --wide-block-n 64 128
"""
from __future__ import annotations

import argparse
import copy
import itertools
import json
import statistics
from datetime import date
from pathlib import Path

import torch

import ddtree.kernels.fused_linear as fl
from ddtree.engine import NativeDecoder
from ddtree.engine import decoder as decoder_module
from ddtree.engine.device_round import _seconds_per_call
from ddtree.models import load_default_pair, tiny_random_pair

HERE = Path(__file__).resolve().parent
CONTEXT = 200  # committed tokens per request before the timed forward
ALWAYS, NEVER = 10**9, 0  # FUSED_MATMUL_ROWS: the matmul-fused layer for every forward, or for none


def forward_fn(decoder, batch: int, rows: int):
    """A verify forward over a chain of `rows` rows per request after CONTEXT committed tokens."""
    decoder.seq_lens.fill_(CONTEXT)
    g = torch.Generator(device="cpu").manual_seed(rows)
    ids = torch.randint(0, decoder.lm_head.weight.shape[0], (batch, rows), generator=g).to(decoder.device)
    offsets = decoder.offsets[:rows]
    positions = decoder.seq_lens[:, None] + offsets
    visible = decoder.visibility((offsets - 1).expand(batch, -1), decoder.seq_lens)
    return lambda: decoder.forward_visible(ids, positions, visible)


def tiling_key(tiling) -> str:
    return "n{}_h{}_w{}_s{}".format(*tiling)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 33, 129])
    ap.add_argument("--block-n", type=int, nargs="+", default=[fl.BLOCK_N])
    ap.add_argument("--wide-block-n", type=int, nargs="+", default=[fl.WIDE_BLOCK_N], help="the lm_head's tile")
    ap.add_argument("--warps", type=int, nargs="+", default=[fl.NUM_WARPS])
    ap.add_argument("--stages", type=int, nargs="+", default=[fl.NUM_STAGES])
    ap.add_argument("--repeats", type=int, default=5, help="timings (of 20 replays each) per point")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--tiny", action="store_true", help="a tiny random pair on this device (a smoke run)")
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    pair = tiny_random_pair(1, device=device) if args.tiny else load_default_pair(device=device)
    target = pair.target
    oracle_target = copy.deepcopy(target).float()
    tilings = list(itertools.product(args.block_n, args.wide_block_n, args.warps, args.stages))
    points = []
    for batch in args.batches:
        max_len = CONTEXT + max(args.rows) + 1
        fused = NativeDecoder(target, batch_size=batch, max_len=max_len, fused=True)
        decoders = {"modules": NativeDecoder(target, batch_size=batch, max_len=max_len, fused=False),
                    "oracle": NativeDecoder(oracle_target, batch_size=batch, max_len=max_len, fused=False)}
        for rows in args.rows:
            oracle = forward_fn(decoders["oracle"], batch, rows)()[0]
            point = {"batch": batch, "rows": rows}

            def measure(name, fn):
                point[name + "_err"] = float((fn()[0] - oracle).abs().max() / oracle.abs().max())
                point[name + "_ms"] = 1e3 * statistics.median(
                    _seconds_per_call(fn, device == "cuda", 20, fused.device) for _ in range(args.repeats))

            measure("modules", forward_fn(decoders["modules"], batch, rows))
            decoder_module.FUSED_MATMUL_ROWS = NEVER
            measure("elementwise", forward_fn(fused, batch, rows))
            decoder_module.FUSED_MATMUL_ROWS = ALWAYS
            for tiling in tilings:
                fl.BLOCK_N, fl.WIDE_BLOCK_N, fl.NUM_WARPS, fl.NUM_STAGES = tiling
                measure(tiling_key(tiling), forward_fn(fused, batch, rows))
            points.append(point)
            print(point, flush=True)
    write(args.out, points, tilings)


def choice(points: list[dict], tilings) -> tuple[int, tuple]:
    """(FUSED_MATMUL_ROWS, tiling): the largest batch x rows up to which the matmul-fused layer (its fastest tiling
    at each point) beat the elementwise-fused one at every point, and the tiling fastest over those points."""
    keys = [tiling_key(t) for t in tilings]
    limit, won = 0, []
    for p in sorted(points, key=lambda p: p["batch"] * p["rows"]):
        if min(p[k + "_ms"] for k in keys) >= p["elementwise_ms"]:
            break
        limit = p["batch"] * p["rows"]
        won.append(p)
    best = min(tilings, key=lambda t: sum(p[tiling_key(t) + "_ms"] for p in won or points))
    return limit, best


def write(out: Path, points: list[dict], tilings) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if cuda else "CPU (Triton interpreter)"
    name = device.split()[-1].lower() if cuda else "cpu"
    keys = ["modules", "elementwise"] + [tiling_key(t) for t in tilings]
    limit, best = choice(points, tilings)
    lines = [f"# Target verify forward: matmul-fused vs elementwise-fused vs the modules ({date.today()}, {device}, "
             f"torch {torch.__version__}, the pair's dtype, CUDA-graph replays on a GPU, context {CONTEXT})", "",
             "ms per forward (err: max |logit difference| to the float32 modules' forward over its scale); "
             "matmul-fused tilings n<BLOCK_N>_h<WIDE_BLOCK_N (lm_head)>_w<num_warps>_s<num_stages>", "",
             "| batch | rows | " + " | ".join(keys) + " | best matmul-fused x elementwise |",
             "|---|---|" + "---|" * len(keys) + "---|"]
    for p in points:
        fastest = min(p[k + "_ms"] for k in keys[2:])
        cells = [f"{p[k + '_ms']:.3f} ({p[k + '_err']:.1e})" for k in keys]
        lines.append(f"| {p['batch']} | {p['rows']} | " + " | ".join(cells)
                     + f" | {p['elementwise_ms'] / fastest:.2f}x |")
    lines.append(f"\nChoice: FUSED_MATMUL_ROWS = {limit}, tiling (BLOCK_N, WIDE_BLOCK_N, NUM_WARPS, NUM_STAGES) = "
                 f"{best}")
    name_md = out / f"fused_target_{name}.md"
    name_md.write_text("\n".join(lines) + "\n")
    (out / f"fused_target_{name}.json").write_text(json.dumps(points, indent=1))
    (out / "fused_choice.txt").write_text(" ".join(map(str, (limit, *best))) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
