"""Train a DFlash drafter for the embedded SmolLM2 target by self-distillation, in one command:

  generate responses to the training prompts with the target (or load them with --data), then train the drafter
  with random anchors per response (ddtree.training.forward) until --steps or --seconds, writing to --out:
  data.npz (the sequences), log.jsonl (train/val metrics), train.log is the caller's, ckpt/ (bf16 drafter
  folder, shards <= 15 MB). See ddtree/training/README.md for the commands used for the shipped drafter.

  Several shapes (--layers 3 5) and losses (--soft-weight 0 0.5: the share of the target's own distribution in the
  labels) train side by side on the same batches and anchors, sharing one target forward per step; each writes
  ckpt-<name>/ (name 3L, or 3L-soft0.5 when several soft weights run). With --init-from, every shape starts from
  that drafter (extra layers appended so that they start as the identity: see grown).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import itertools
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ddtree.models import DFlashDrafter, load_target, random_drafter_for
from ddtree.models.pair import spread_layer_ids
from ddtree.training.data import SequenceData, generate_responses
from ddtree.training.forward import block_loss, sample_anchors, training_forward
from ddtree.training.prompts import PROMPTS_FILE, load_prompts

# <empty_output> (id 16): a Jupyter-notebook marker of SmolLM2's pretraining vocabulary that chat text never
# contains (the chat template uses <|im_start|>/<|im_end|> only); the drafter only needs a fixed, distinct embedding.
MASK_TOKEN_ID = 16


def spread(length: int, count: int) -> np.ndarray:
    """`count` indices spread evenly over range(length): a subset of the prompts file that keeps its mix of kinds
    and groups (the file lists earlier drafters' prompts first, so a prefix would hold only those)."""
    return np.unique(np.linspace(0, length - 1, count).round().astype(int))


def target_features(target, tokens, layer_ids, logits: bool = False):
    """Target features of every position of right-padded `tokens`  # [N, T] -> (features  # [N, T, len(ids) *
    hidden], the target's logits  # [N, T, vocab] when `logits`, else None) (layer id l = hidden_states[l + 1], as
    ddtree.models.target_forward; padding only follows real tokens)."""
    with torch.no_grad():
        out = target(input_ids=tokens, output_hidden_states=True, logits_to_keep=0 if logits else 1)
        features = torch.cat([out.hidden_states[layer + 1] for layer in layer_ids], dim=-1)
        return features, out.logits if logits else None


def make_batch(data: SequenceData, index, device):
    """Right-padded tokens  # [N, T] long, lengths  # [N], prompt_lens  # [N] for sequences `index`."""
    sequences = [data.sequence(i) for i in index]
    lengths = torch.tensor([len(s) for s in sequences])
    tokens = torch.zeros(len(sequences), int(lengths.max()), dtype=torch.long)
    for row, seq in enumerate(sequences):
        tokens[row, :len(seq)] = torch.from_numpy(seq.astype(np.int64))
    prompt_lens = torch.from_numpy(data.prompt_lens[index].astype(np.int64))
    return tokens.to(device), lengths.to(device), prompt_lens.to(device)


@dataclasses.dataclass
class Run:
    """One drafter being trained: its loss's soft weight, optimizer, checkpoint folder and best validation loss."""
    name: str
    drafter: DFlashDrafter
    soft_weight: float
    optimizer: torch.optim.Optimizer
    folder: Path
    best_val: float = math.inf


def grown(drafter: DFlashDrafter, num_layers: int) -> DFlashDrafter:
    """`drafter` deepened to `num_layers` full-attention layers: its weights, plus new layers whose output
    projections (o_proj, down_proj) are zero, so the grown drafter starts computing exactly what `drafter` does."""
    config = drafter.config
    extra = num_layers - config.num_hidden_layers
    if extra < 0:
        raise ValueError(f"--layers {num_layers} is fewer than the --init-from drafter's {config.num_hidden_layers}")
    bigger = DFlashDrafter(dataclasses.replace(config, num_hidden_layers=num_layers,
                                               layer_types=config.layer_types + ("full_attention",) * extra))
    bigger.to(drafter.device, drafter.dtype)
    bigger.load_state_dict(drafter.state_dict(), strict=False)
    with torch.no_grad():
        for layer in bigger.layers[config.num_hidden_layers:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
    return bigger


def step_metrics(runs, target, batch, num_anchors, gamma, generator, autocast):
    """[(loss, stats)] of one batch for each run: the same random anchors (from `generator`) and one target
    forward for all (the drafters share their target_layer_ids; its logits are kept when a run's loss needs them)."""
    tokens, lengths, prompt_lens = batch
    anchors, valid = sample_anchors(prompt_lens, lengths, num_anchors, generator)
    features, teacher = target_features(target, tokens, runs[0].drafter.config.target_layer_ids,
                                        logits=any(run.soft_weight > 0 for run in runs))
    results = []
    for run in runs:
        with autocast():
            hidden = training_forward(run.drafter, target.get_input_embeddings().weight, features, tokens, anchors)
            results.append(block_loss(hidden, target.get_output_embeddings(), tokens, lengths, anchors, valid,
                                      gamma, teacher, run.soft_weight))
    return results


def learning_rate(step: int, progress: float, peak: float, warmup: int, floor: float = 0.1) -> float:
    """Linear warmup over the first `warmup` steps, then cosine decay to floor * peak as `progress` (the fraction
    of the step or time budget used) goes from 0 to 1."""
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


@torch.no_grad()
def evaluate(runs, target, data: SequenceData, args, autocast) -> list[dict]:
    """Per run: validation loss (its own), hard cross-entropy and chain-acceptance proxy on the greedy sequences
    of `data`, fixed anchors."""
    greedy = np.flatnonzero(data.temperatures == 0)[:args.val_sequences]
    generator = torch.Generator(device=args.device).manual_seed(1234)
    totals = [{"loss": 0.0, "hard_loss": 0.0, "chain_accept": 0.0, "depth_acc": 0.0} for _ in runs]
    batches = range(0, len(greedy), args.batch_size)
    for run in runs:
        run.drafter.eval()
    for start in batches:
        batch = make_batch(data, greedy[start:start + args.batch_size], args.device)
        for total, (loss, stats) in zip(totals, step_metrics(runs, target, batch, args.anchors, args.gamma,
                                                             generator, autocast)):
            total["loss"] += float(loss) / len(batches)
            total["hard_loss"] += float(stats["hard_loss"]) / len(batches)
            total["chain_accept"] += float(stats["chain_accept"]) / len(batches)
            total["depth_acc"] += stats["depth_acc"].cpu() / len(batches)
    for run in runs:
        run.drafter.train()
    return [{"val_loss": t["loss"], "val_hard_loss": t["hard_loss"], "val_chain_accept": t["chain_accept"],
             "val_depth_acc": [round(x, 4) for x in t["depth_acc"].tolist()]} for t in totals]


def save_checkpoint(drafter: DFlashDrafter, folder: Path) -> None:
    """The drafter in bfloat16 (the loader casts to the target's dtype), shards <= 15 MB."""
    copy.deepcopy(drafter).to(torch.bfloat16).save_pretrained(folder, max_shard_mb=15)


def train(runs: list[Run], target, train_data: SequenceData, val_data: SequenceData, args) -> None:
    """AdamW on each run's drafter (target frozen) until args.steps or args.seconds; logs to args.out/log.jsonl.
    Checkpoints every args.save_every seconds and at the end, or with args.keep_best only when the validation
    loss improves (checked before the first step when the drafters start from --init-from, every args.val_every
    steps and at the end)."""
    cuda = args.device.startswith("cuda")
    device_type = "cuda" if cuda else "cpu"
    autocast = lambda: torch.autocast(device_type, dtype=torch.bfloat16, enabled=cuda)  # noqa: E731
    generator = torch.Generator(device=args.device).manual_seed(args.seed)
    order_rng = np.random.default_rng(args.seed)
    log = (args.out / "log.jsonl").open("a")
    order, cursor, step = order_rng.permutation(len(train_data)), 0, 0
    t0 = last_save = time.perf_counter()

    def validate(record: dict) -> None:
        for run, metrics in zip(runs, evaluate(runs, target, val_data, args, autocast)):
            record[run.name] |= metrics
            if args.keep_best and metrics["val_loss"] < run.best_val:
                run.best_val = metrics["val_loss"]
                save_checkpoint(run.drafter, run.folder)
                record[run.name]["saved"] = True

    if args.init_from:  # the starting drafters on this run's validation sequences: the baseline to beat
        record = {"step": 0, "elapsed": 0.0} | {run.name: {} for run in runs}
        validate(record)
        log.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)
    bar = tqdm(total=args.steps, desc="training", unit="step")
    for run in runs:
        run.drafter.train()
    while True:
        elapsed = time.perf_counter() - t0
        progress = max(step / args.steps if args.steps else 0.0, elapsed / args.seconds if args.seconds else 0.0)
        if progress >= 1:
            break
        if cursor + args.batch_size > len(order):
            order, cursor = order_rng.permutation(len(train_data)), 0
        batch = make_batch(train_data, order[cursor:cursor + args.batch_size], args.device)
        cursor += args.batch_size
        lr = learning_rate(step, progress, args.lr, args.warmup)
        results = step_metrics(runs, target, batch, args.anchors, args.gamma, generator, autocast)
        record = {"step": step + 1, "elapsed": round(time.perf_counter() - t0, 1), "lr": float(f"{lr:.4g}")}
        for run, (loss, stats) in zip(runs, results):
            for group in run.optimizer.param_groups:
                group["lr"] = lr
            run.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(run.drafter.parameters(), 1.0)
            run.optimizer.step()
            record[run.name] = {"loss": round(loss.item(), 4), "hard_loss": round(float(stats["hard_loss"]), 4),
                                "chain_accept": round(float(stats["chain_accept"]), 3),
                                "depth_acc_1_4": [round(x, 3) for x in stats["depth_acc"][:4].tolist()],
                                "grad_norm": round(float(grad_norm), 3), "tokens": stats["tokens"]}
        step += 1
        bar.update()
        if step % args.log_every == 0:
            if step % args.val_every == 0:
                validate(record)
            log.write(json.dumps(record) + "\n")
            log.flush()
            bar.write(json.dumps(record))
        if not args.keep_best and time.perf_counter() - last_save > args.save_every:
            for run in runs:
                save_checkpoint(run.drafter, run.folder)
            last_save = time.perf_counter()
    bar.close()
    final = {"step": step, "elapsed": round(time.perf_counter() - t0, 1), "final": True} | {run.name: {} for run in runs}
    validate(final)
    if not args.keep_best:
        for run in runs:
            save_checkpoint(run.drafter, run.folder)
    for run in runs:
        final[run.name]["best_val_loss"] = run.best_val if args.keep_best else None
    log.write(json.dumps(final) + "\n")
    log.close()
    print(json.dumps(final))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for data.npz, log.jsonl and ckpt/")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    data = parser.add_argument_group("data")
    data.add_argument("--data", type=Path, nargs="+", help="data.npz files of earlier runs, trained on too")
    data.add_argument("--prompts", type=Path, default=PROMPTS_FILE)
    data.add_argument("--max-prompts", type=int,
                      help="use N training prompts spread evenly over the file (every kind, in proportion)")
    data.add_argument("--temperatures", type=float, nargs="*", default=[0.0, 0.7],
                      help="generate a response per prompt at each (0 = greedy); none: no generation")
    data.add_argument("--unanswered-only", action="store_true",
                      help="answer only the prompts no --data file answers (those added to the prompts file since)")
    data.add_argument("--max-new-tokens", type=int, default=256)
    data.add_argument("--gen-batch", type=int, default=1024)
    data.add_argument("--generator", choices=["hf", "engine"], default="hf",
                      help="who answers: Hugging Face generate (the reference) or ddtree's native engine (a static "
                           "cache, one forward a token for the whole batch; same greedy answers)")
    data.add_argument("--val-prompts", type=int, default=64, help="training prompts kept out for validation")
    data.add_argument("--val-sequences", type=int, default=64)
    model = parser.add_argument_group("drafter")
    model.add_argument("--init-from", type=Path, nargs="+",
                       help="continue from a drafter folder (deepened to each --layers), or one folder per --layers")
    model.add_argument("--layers", type=int, nargs="+", default=[3],
                       help="drafter depth; several values train that many drafters side by side")
    model.add_argument("--layer-ids", type=int, nargs="+", help="target layer ids (default: 5 spread ids)")
    model.add_argument("--block-size", type=int, default=16)
    model.add_argument("--mask-token-id", type=int, default=MASK_TOKEN_ID)
    opt = parser.add_argument_group("optimisation")
    opt.add_argument("--steps", type=int, help="number of steps (with --seconds too: whichever ends first)")
    opt.add_argument("--seconds", type=float, help="wall-clock training budget")
    opt.add_argument("--stop-at", type=float, help="end training this many seconds after the command started "
                                                   "(sets --seconds after data generation; 15 s kept for the end)")
    opt.add_argument("--batch-size", type=int, default=64)
    opt.add_argument("--anchors", type=int, default=32, help="anchors (blocks) per sequence")
    opt.add_argument("--lr", type=float, default=6e-4)
    opt.add_argument("--warmup", type=int, default=100)
    opt.add_argument("--gamma", type=float, default=7.0, help="loss weight exp(-(k-1)/gamma) at block position k")
    opt.add_argument("--soft-weight", type=float, nargs="+", default=[0.0],
                     help="share of the target's own distribution in each label (0: the sequence's token alone, 1: "
                          "the distribution alone); several values train that many drafters side by side")
    opt.add_argument("--log-every", type=int, default=25)
    opt.add_argument("--val-every", type=int, default=250)
    opt.add_argument("--save-every", type=float, default=120.0, help="seconds between checkpoints")
    opt.add_argument("--keep-best", action="store_true",
                     help="checkpoint only when the validation loss improves (instead of every --save-every s)")
    args = parser.parse_args(argv)
    if not (args.steps or args.seconds or args.stop_at):
        parser.error("give --steps, --seconds or --stop-at")
    for name in ("steps", "seconds", "stop_at"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if len(set(args.layers)) != len(args.layers) or min(args.layers) < 1:
        parser.error(f"--layers must list distinct positive depths, got {args.layers}")
    if len(set(args.soft_weight)) != len(args.soft_weight) or not all(0 <= w <= 1 for w in args.soft_weight):
        parser.error(f"--soft-weight must list distinct weights in [0, 1], got {args.soft_weight}")
    if args.init_from and len(args.init_from) not in (1, len(args.layers)):
        parser.error(f"--init-from takes one folder or one per --layers ({len(args.layers)}), got {len(args.init_from)}")
    return args


def main(argv=None) -> None:
    started = time.perf_counter()
    args = parse_args(argv)
    parts = [SequenceData.load(path) for path in args.data or ()]
    if args.unanswered_only and not parts:
        raise SystemExit("--unanswered-only answers the prompts that no --data file answers: give --data")
    if 0 not in args.temperatures and not any((part.temperatures == 0).any() for part in parts):
        raise SystemExit(f"--temperatures {' '.join(f'{t:g}' for t in args.temperatures)}: the validation reads greedy "
                         "answers; include 0, or give --data files that hold some")
    prompts, _ = load_prompts(args.prompts)  # the held-out prompts are never used here
    for path, part in zip(args.data or (), parts):
        if len(part) and int(part.prompt_ids.max()) >= len(prompts):
            raise SystemExit(f"--data {path}: answers prompt id {int(part.prompt_ids.max())}, but {args.prompts} has "
                             f"{len(prompts)} training prompts: the data was made from another prompts file")
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    t0 = time.perf_counter()
    target, tokenizer = load_target(device=args.device)
    print(f"target loaded on {args.device} in {time.perf_counter() - t0:.1f} s", flush=True)
    chosen = np.arange(len(prompts))  # indices into the file's training prompts, which every data part's ids are
    if args.max_prompts is not None and args.max_prompts < len(prompts):
        chosen = spread(len(prompts), args.max_prompts)
    val_ids = chosen[spread(len(chosen), args.val_prompts)]
    answer = chosen
    if args.unanswered_only:
        answer = chosen[~np.isin(chosen, np.concatenate([part.prompt_ids for part in parts]))]
        print(f"{len(answer)} of {len(chosen)} prompts have no answer in --data", flush=True)
    if args.temperatures and len(answer):
        t0 = time.perf_counter()
        parts.append(generate_responses(target, tokenizer, [prompts[i] for i in answer], args.temperatures,
                                        batch_size=args.gen_batch, max_new_tokens=args.max_new_tokens,
                                        seed=args.seed, engine=args.generator == "engine", prompt_ids=answer))
        parts[-1].save(args.out / "data.npz")
        print(f"generated {len(parts[-1])} sequences, {len(parts[-1].tokens)} tokens in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    data = SequenceData.concat(parts)
    if (data.tokens == args.mask_token_id).any():
        print(f"warning: mask token id {args.mask_token_id} occurs in the data", flush=True)
    train_data, val_data = data.split(val_ids)
    runs = []
    for (i, num_layers), soft_weight in itertools.product(enumerate(args.layers), args.soft_weight):
        if args.init_from:
            folder = args.init_from[i % len(args.init_from)]
            start = DFlashDrafter.from_pretrained(folder, device=args.device, dtype=torch.float32)
            drafter = grown(start, num_layers)
        else:
            drafter = random_drafter_for(target, num_layers=num_layers, block_size=args.block_size, seed=args.seed,
                                         target_layer_ids=args.layer_ids or
                                         spread_layer_ids(target.config.num_hidden_layers, 5),
                                         mask_token_id=args.mask_token_id)
        drafter = drafter.float().requires_grad_(True)
        optimizer = torch.optim.AdamW(drafter.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01,
                                      **({"fused": True} if args.device.startswith("cuda") else {}))
        name = f"{num_layers}L" + (f"-soft{soft_weight:g}" if len(args.soft_weight) > 1 else "")
        single = len(args.layers) == len(args.soft_weight) == 1
        runs.append(Run(name, drafter, soft_weight, optimizer, args.out / ("ckpt" if single else f"ckpt-{name}")))
        config = drafter.config
        print(f"drafter {name}: target_layer_ids {list(config.target_layer_ids)}, mask {config.mask_token_id}, "
              f"{sum(p.numel() for p in drafter.parameters()) / 1e6:.1f} M parameters", flush=True)
    print(f"{len(train_data)} train / {len(val_data)} val sequences", flush=True)
    with (args.out / "log.jsonl").open("a") as log:
        log.write(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "train_sequences": len(train_data),
                              "train_tokens": int(train_data.offsets[-1])}) + "\n")
    if args.stop_at:
        args.seconds = args.stop_at - 15 - (time.perf_counter() - started)
        if args.seconds <= 0:
            raise SystemExit(f"--stop-at {args.stop_at:g}: no time is left to train after loading and generating "
                             f"({time.perf_counter() - started:.0f} s); data generated here is in "
                             f"{args.out / 'data.npz'}: rerun with --data and no --temperatures")
        print(f"training for {args.seconds:.0f} s", flush=True)
    train(runs, target, train_data, val_data, args)


if __name__ == "__main__":
    main()
