"""The target's decode forward (ddtree.kernels.decode_linear, 5 launches a layer) against the fused forward with cuBLAS
matmuls (9 launches a layer), side by side in one run on the embedded target (CUDA, CUDA-graph replays).

For each (batch, rows) of --shapes: ms per target forward of the cuBLAS path and (batch x rows <= --max-rows) of the
decode path at a context of --context tokens (mean of --replays replays), their ratio, and the largest logit
difference between them over the logits' scale; --pdl also times the decode path with programmatic dependent launch
off (ddtree.kernels.launch).
--sweep also tries the kernels' launch settings at 1, 4, 16, 33 and 129 rows.
Writes <out>/decode_linear.md and .json.
"""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch
from triton.runtime.errors import OutOfResources

import ddtree.kernels.decode_linear as dl
from ddtree.kernels import launch
from ddtree.engine.decoder import NativeDecoder
from ddtree.engine.device_round import seconds_per_call
from ddtree.models import load_default_pair


def graphed_ms(fn, replays: int) -> float:
    return seconds_per_call(fn, True, replays, torch.device("cuda")) * 1e3


def forward(decoder: NativeDecoder, batch: int, rows: int, context: int, decode: bool):
    """A closure running one forward of `rows` chain rows per request after `context` committed tokens."""
    decoder.seq_lens.fill_(context)
    g = torch.Generator(device=decoder.device).manual_seed(batch * 1000 + rows)  # the same ids for both paths
    ids = torch.randint(0, decoder.lm_head.weight.shape[0], (batch, rows), device=decoder.device, generator=g)
    positions = context + torch.arange(rows, device=decoder.device).expand(batch, -1)
    parents = torch.arange(-1, rows - 1, device=decoder.device).expand(batch, -1).contiguous()
    slots = slice(0, batch)
    visible = decoder.visibility(parents, decoder.seq_lens[slots])
    decoder.decode_rows = batch * rows if decode else 0
    return lambda: decoder.forward_visible(ids, positions, visible, slots)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1x1,1x2,2x1,1x4,4x1,1x8,2x4,1x16,1x33,2x33,1x65,4x33,1x129",
                        help="batch x rows per request, comma-separated")
    parser.add_argument("--max-rows", type=int, default=130, help="the decode path only up to batch x rows")
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--replays", type=int, default=200)
    parser.add_argument("--pdl", action="store_true", help="also time the decode path with PDL off (launch.PDL)")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--sweep-rows", default="1,4,16,33,129", help="the row counts --sweep covers")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    shapes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]
    pair = load_default_pair(device="cuda")
    target = pair.target
    decoder = NativeDecoder(target, batch_size=max(b for b, _ in shapes),
                            max_len=args.context + max(r for _, r in shapes), layer_ids=pair.target_layer_ids)
    rows_out = []
    for batch, rows in shapes:
        row = dict(batch=batch, rows=rows)
        logits = {}
        for decode in (False, True) if batch * rows <= args.max_rows else (False,):
            for pdl in (True, False) if args.pdl and decode else (launch.PDL,):  # PDL: decode only
                saved, launch.PDL = launch.PDL, pdl
                fn = forward(decoder, batch, rows, args.context, decode)
                name = ("decode" if decode else "cublas") + ("" if pdl else "_nopdl")
                row[f"{name}_ms"] = round(graphed_ms(fn, args.replays), 4)
                decoder.seq_lens.fill_(args.context)
                logits[decode] = fn()[0]
                launch.PDL = saved
        if True in logits:
            row["speedup"] = round(row["cublas_ms"] / row["decode_ms"], 3)
            want = logits[False]
            row["logit_err"] = float(f"{((logits[True] - want).abs().max() / want.abs().max()).item():.2e}")
        rows_out.append(row)
        print(row, flush=True)
    sweep = []
    if args.sweep:  # 1 row: the float32 sums' settings; 4 rows: sums or tiles; 16 rows: one row tile; 33 and 129
        # rows (DDTree-32, -128): several row tiles, in parallel programs or looped over in one
        grids = [(1, ("BLOCK_N", "BK", "NUM_WARPS"), itertools.product((4, 8), (64, 128), (4, 8))),
                 (4, ("DOT_ROWS",), ((4,), (5,))),
                 (16, ("DOT_STAGES", "DOT_BLOCK_N"), itertools.product((1, 2, 3), (16, 32))),
                 *((rows, ("DOT_ROW_PROGRAMS", "DOT_STAGES", "DOT_BLOCK_N", "DOT_BLOCK_M"),
                    itertools.product((1, 64), (1, 3), (16, 32), (16, 32))) for rows in (33, 129))]
        for rows, names, settings in (g for g in grids if str(g[0]) in args.sweep_rows.split(",")):
            default = [getattr(dl, name) for name in names]
            for setting in settings:
                for name, value in zip(names, setting):
                    setattr(dl, name, value)
                try:
                    ms = round(graphed_ms(forward(decoder, 1, rows, args.context, True), args.replays), 4)
                except OutOfResources:  # e.g. too many stages for the shared memory
                    ms = "out of resources"
                sweep.append(dict(rows=rows, **dict(zip(names, setting)), decode_ms=ms))
                print(sweep[-1], flush=True)
            for name, value in zip(names, default):
                setattr(dl, name, value)
    device = torch.cuda.get_device_name()
    columns = [c for c in ("cublas_ms", "decode_nopdl_ms", "decode_ms", "speedup", "logit_err")
               if any(c in r for r in rows_out)]
    lines = [f"# Decode forward vs the cuBLAS fused forward ({device}, torch {torch.__version__}, {target.dtype}, "
             f"context {args.context}, `python3 -P bench/bench_decode_linear.py"
             f"{' --pdl' if args.pdl else ''}{' --sweep' if args.sweep else ''}`)", "",
             f"ms per target forward, CUDA-graph replays (mean of {args.replays}); decode_nopdl: the same launches "
             f"without programmatic dependent launch (ddtree.kernels.launch); speedup: cuBLAS fused over decode; "
             f"logit_err: max |difference| over the logits' scale; decode kernels' settings BLOCK_N, BK, NUM_WARPS = "
             f"{dl.BLOCK_N}, {dl.BK}, {dl.NUM_WARPS}; DOT_ROWS, DOT_BLOCK_M, DOT_BLOCK_N, DOT_WARPS, DOT_STAGES, "
             f"DOT_ROW_PROGRAMS = {dl.DOT_ROWS}, {dl.DOT_BLOCK_M}, {dl.DOT_BLOCK_N}, {dl.DOT_WARPS}, {dl.DOT_STAGES}, "
             f"{dl.DOT_ROW_PROGRAMS}.", "",
             "| batch | rows | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    lines += [f"| {r['batch']} | {r['rows']} | " + " | ".join(str(r.get(c, "")) for c in columns) + " |"
              for r in rows_out]
    for rows in sorted({r["rows"] for r in sweep}):
        names = [k for k in sweep[[r["rows"] for r in sweep].index(rows)] if k not in ("rows", "decode_ms")]
        lines += ["", f"Launch settings, batch 1 x {rows} rows:", "", "| " + " | ".join(names) + " | decode ms |",
                  "|" + "---|" * (len(names) + 1)]
        lines += ["| " + " | ".join(str(r[k]) for k in names) + f" | {r['decode_ms']} |" for r in sweep
                  if r["rows"] == rows]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "decode_linear.md").write_text("\n".join(lines) + "\n")
    (out / "decode_linear.json").write_text(json.dumps(dict(device=device, rows=rows_out, sweep=sweep), indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
