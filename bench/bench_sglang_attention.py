"""SGLang's Triton extend-attention kernel (target-verify form) beside the workbench's tree-attention kernel and a
dense reference, on the same padded verify batches; plus the effective-mask probe of SGLang's kernel on a correct
and a corrupted (unpadded) packing. Times: medians over CUDA-graph replays with the L2 flushed (graph_ms of
bench_tree_attention), so neither kernel's Python wrapper is timed. Writes
bench/results/sglang_attention_<device>.{md,json}.

Needs `make sglang` (here) or the sglang wheel + its kernel-import packages (on the GPU machine).
"""
from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

import torch

import ddtree  # first: without a GPU it switches Triton to its interpreter before triton is imported
from bench_tree_attention import graph_ms  # (run from the repository root: bench/ is on the path)
from ddtree.kernels.tree_attention import ancestor_bitmask, padded_parents, tree_attention
from ddtree.sglang import (dense_verify_attention, probe_effective_masks, random_inputs, sglang_call,
                           sglang_verify_attention)

HEADS, KV_HEADS, DIM = 9, 3, 64  # SmolLM2's attention shape


def trees_for(batch: int, q: int, g: torch.Generator, small: int | None = None):
    sizes = [q - 1] * batch
    if small is not None:
        sizes[0] = small
    return [ddtree.build_tree(torch.randn(5, 1000, generator=g), n).with_root_token(1) for n in sizes]


def workbench_inputs(batch_, inputs, q: int):
    """The same attention problem in the workbench kernel's static-cache layout."""
    b_size = batch_.batch_size
    seq = batch_.seq_lens.tolist()
    length = max(seq) + q
    dev, dt = inputs.q.device, inputs.q.dtype
    k_cache = torch.zeros(b_size, KV_HEADS, length, DIM, device=dev, dtype=dt)
    v_cache = torch.zeros_like(k_cache)
    qq = inputs.q.view(b_size, q, HEADS, DIM)
    for b, s in enumerate(seq):
        rows = slice(b * q, (b + 1) * q)
        k_cache[b, :, :s] = inputs.prefix_k[b].transpose(0, 1)
        v_cache[b, :, :s] = inputs.prefix_v[b].transpose(0, 1)
        k_cache[b, :, s:s + q] = inputs.k[rows].transpose(0, 1)
        v_cache[b, :, s:s + q] = inputs.v[rows].transpose(0, 1)
    bits = ancestor_bitmask(padded_parents(batch_.trees, q).to(dev))
    return qq, k_cache, v_cache, batch_.seq_lens.to(dev), bits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--contexts", type=int, nargs="+", default=[1024, 4096, 16384, 32768])
    ap.add_argument("--trees", type=int, nargs="+", default=[17, 65, 257, 513])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    g = torch.Generator().manual_seed(0)
    rows = []
    for bsz in args.batches:
        for ctx in args.contexts:
            for q in args.trees:
                batch = ddtree.pack_verify_batch(trees_for(bsz, q, g), [ctx] * bsz, q)
                inputs = random_inputs(batch, HEADS, KV_HEADS, DIM, generator=g, dtype=dtype, device=args.device)
                kernel, kargs, kwargs = sglang_call(batch, inputs)
                wb = workbench_inputs(batch, inputs, q)
                kernel(*kargs, **kwargs)
                ours = tree_attention(*wb).reshape(-1, HEADS, DIM)
                row = {"B": bsz, "context": ctx, "tree": q,
                       "max_abs_diff": float((kargs[3].float() - ours.float()).abs().max())}
                if bsz * ctx <= 8 * 4096:
                    want = dense_verify_attention(batch, inputs, [ddtree.expected_mask(batch, b)
                                                                  for b in range(bsz)])
                    row["sglang_vs_dense"] = float((kargs[3].float() - want.float()).abs().max())
                if cuda:  # each call replayed from a CUDA graph, L2 flushed: no Python wrapper time in either
                    row["sglang_us"] = round(1e3 * graph_ms(lambda: kernel(*kargs, **kwargs), 40), 2)
                    row["workbench_us"] = round(1e3 * graph_ms(lambda: tree_attention(*wb), 40), 2)
                    row["x_sglang"] = round(row["sglang_us"] / row["workbench_us"], 2)
                rows.append(row)
                print(row, flush=True)
    # the probe, on the device: correct vs corrupted packing
    probe = {}
    ts = trees_for(3, 17, g, small=4)
    for layout in ("padded", "unpadded"):
        batch = ddtree.pack_verify_batch(ts, [40, 33, 51], 17, layout=layout)
        masks = probe_effective_masks(batch, lambda bt, x: sglang_verify_attention(bt, random_to(x, args.device)))
        flagged = sorted({c.request for c in ddtree.check_verify_batch(batch)})
        wrong = [int((m != ddtree.expected_mask(batch, b)).sum()) for b, m in enumerate(masks)]
        probe[layout] = {"flagged_by_check_verify_batch": flagged, "probed_wrong_cells_per_request": wrong}
        print(layout, probe[layout], flush=True)
    device = torch.cuda.get_device_name() if cuda else "CPU (Triton interpreter)"
    meta = {"date": date.today().isoformat(), "device": device, "torch": torch.__version__, "dtype": str(dtype),
            "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": DIM}
    args.out.mkdir(parents=True, exist_ok=True)
    name = "sglang_attention_" + args.device.split(":")[0]
    (args.out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows, "probe": probe}, indent=1))
    cols = [c for c in ("B", "context", "tree", "sglang_us", "workbench_us", "x_sglang", "max_abs_diff",
                        "sglang_vs_dense") if any(c in r for r in rows)]
    md = [f"# SGLang extend-attention vs the workbench tree kernel ({meta['date']}, {device}, {meta['dtype']}, "
          f"{HEADS}/{KV_HEADS} heads, head_dim {DIM}; padded batches, all trees full)", "",
          "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    md += ["", "x_sglang = SGLang time / workbench time (>1: the workbench kernel is faster). max_abs_diff: SGLang "
           "output vs workbench output. Probe of SGLang's kernel (3 requests, trees 5/17/17, num_draft_tokens 17):",
           ""] + [f"- {k}: {v}" for k, v in probe.items()]
    (args.out / f"{name}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def random_to(inputs, device):
    """Probe inputs are built on the CPU; move them to the benchmark's device."""
    return type(inputs)(**{k: (v.to(device) if isinstance(v, torch.Tensor) else [x.to(device) for x in v])
                           for k, v in vars(inputs).items()})


if __name__ == "__main__":
    main()
