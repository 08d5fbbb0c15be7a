"""The target's decode forward (ddtree.kernels.decode_linear, 5 launches a layer) against the fused forward with cuBLAS
matmuls (9 launches a layer), side by side in one run on the embedded target (CUDA, CUDA-graph replays).

For each (batch, rows) with batch x rows <= --max-rows: ms per target forward of both paths at a context of --context
tokens (mean of --replays replays), their ratio, and the largest logit difference between them over the logits'
scale. --sweep also tries the kernels' launch settings (BLOCK_N, BK, NUM_WARPS) at one row.
Writes <out>/decode_linear.md and .json.
"""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch

import ddtree.kernels.decode_linear as dl
from ddtree.engine.decoder import NativeDecoder
from ddtree.engine.device_round import seconds_per_call
from ddtree.models import load_default_pair


def graphed_ms(fn, replays: int) -> float:
    return seconds_per_call(fn, True, replays, torch.device("cuda")) * 1e3


def forward(decoder: NativeDecoder, batch: int, rows: int, context: int, decode: bool):
    """A closure running one forward of `rows` chain rows per request after `context` committed tokens."""
    decoder.seq_lens.fill_(context)
    ids = torch.randint(0, decoder.lm_head.weight.shape[0], (batch, rows), device=decoder.device)
    positions = context + torch.arange(rows, device=decoder.device).expand(batch, -1)
    parents = torch.arange(-1, rows - 1, device=decoder.device).expand(batch, -1).contiguous()
    slots = slice(0, batch)
    visible = decoder.visibility(parents, decoder.seq_lens[slots])
    decoder.decode_rows = batch * rows if decode else 0
    return lambda: decoder.forward_visible(ids, positions, visible, slots)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-rows", type=int, default=8)
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--replays", type=int, default=200)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    pair = load_default_pair(device="cuda")
    target = pair.target
    decoder = NativeDecoder(target, batch_size=4, max_len=args.context + 64, layer_ids=pair.target_layer_ids)
    rows_out = []
    for batch, rows in itertools.product((1, 2, 4), (1, 2, 4, 8)):
        if batch * rows > args.max_rows:
            continue
        results = {}
        for decode in (False, True):
            fn = forward(decoder, batch, rows, args.context, decode)
            ms = graphed_ms(fn, args.replays)
            decoder.seq_lens.fill_(args.context)
            results[decode] = (ms, fn()[0])
        (ms_old, want), (ms_new, got) = results[False], results[True]
        err = ((got - want).abs().max() / want.abs().max()).item()
        rows_out.append(dict(batch=batch, rows=rows, cublas_ms=round(ms_old, 4), decode_ms=round(ms_new, 4),
                             speedup=round(ms_old / ms_new, 3), logit_err=float(f"{err:.2e}")))
        print(rows_out[-1], flush=True)
    sweep = []
    if args.sweep:
        default = (dl.BLOCK_N, dl.BK, dl.NUM_WARPS)
        for setting in itertools.product((4, 8, 16, 32), (64, 128, 256), (2, 4, 8)):
            dl.BLOCK_N, dl.BK, dl.NUM_WARPS = setting
            ms = graphed_ms(forward(decoder, 1, 1, args.context, True), args.replays)
            sweep.append(dict(BLOCK_N=setting[0], BK=setting[1], NUM_WARPS=setting[2], decode_ms=round(ms, 4)))
            print(sweep[-1], flush=True)
        dl.BLOCK_N, dl.BK, dl.NUM_WARPS = default
    device = torch.cuda.get_device_name()
    lines = [f"# Decode forward vs the cuBLAS fused forward ({device}, torch {torch.__version__}, {target.dtype}, "
             f"context {args.context}, `python3 -P bench/bench_decode_linear.py"
             f"{' --sweep' if args.sweep else ''}`)", "",
             f"ms per target forward, CUDA-graph replays (mean of {args.replays}); logit_err: max |difference| over "
             "the logits' scale; decode kernels' settings BLOCK_N, BK, NUM_WARPS = "
             f"{dl.BLOCK_N}, {dl.BK}, {dl.NUM_WARPS}.", "",
             "| batch | rows | cuBLAS fused ms | decode ms | speed-up | logit_err |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['batch']} | {r['rows']} | {r['cublas_ms']} | {r['decode_ms']} | {r['speedup']}x | "
              f"{r['logit_err']} |" for r in rows_out]
    if sweep:
        lines += ["", "Launch settings, batch 1 x 1 row:", "", "| BLOCK_N | BK | NUM_WARPS | decode ms |",
                  "|---|---|---|---|"]
        lines += [f"| {s['BLOCK_N']} | {s['BK']} | {s['NUM_WARPS']} | {s['decode_ms']} |" for s in sweep]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "decode_linear.md").write_text("\n".join(lines) + "\n")
    (out / "decode_linear.json").write_text(json.dumps(dict(device=device, rows=rows_out, sweep=sweep), indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
