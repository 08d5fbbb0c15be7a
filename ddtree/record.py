"""Round records: plain data describing one decoding round (what the widgets and reports consume), and traces.

A RoundRecord holds no model references: tokens, texts, trees, probabilities and times. It is shaped for batches
(`requests`, one RequestRound per request) even where a session runs one request.
Traces are versioned JSON (no pickle); loading validates every field and fails with a clear ValueError.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import torch

from ddtree.batch import request_mask
from ddtree.tree import DraftTree

from ddtree.settings import METHODS, VERIFY_RULES

TRACE_FORMAT = "ddtree-trace"
TRACE_VERSION = 1


@dataclass
class RequestRound:
    context_len: int  # committed tokens the target had cached before this round (= the root's position)
    tree: DraftTree  # the drafted tree with node log-weights (root = previous bonus token)
    draft_top_tokens: list[list[int]]  # [depth][K] drafter's best tokens per depth (empty for "ar")
    draft_top_logprobs: list[list[float]]  # [depth][K]; probability 0 is stored as -1e30 (JSON has no -inf)
    input_ids: list[int]  # [rows] the verify forward's input (tree nodes, then padding rows)
    positions: list[int]  # [rows] context_len + depth
    target_top_tokens: list[list[int]]  # [n][K] the target's best tokens at every tree node
    target_top_probs: list[list[float]]  # [n][K] their probabilities under the verify rule's distribution
    target_choice: list[int]  # [n] argmax (greedy) or the sample (sampled; -1 at nodes the walk never visited)
    accepted: list[int]  # accepted node indices, root first
    accepted_tokens: list[int]  # tokens of accepted[1:]
    bonus_token: int
    committed_text: str  # decoded accepted_tokens + [bonus_token]
    token_texts: dict[int, str] = field(default_factory=dict)  # decoded text of every token id in this record

    @property
    def committed(self) -> list[int]:
        return self.accepted_tokens + [self.bonus_token]

    @property
    def acceptance_length(self) -> int:
        return len(self.accepted)

    @property
    def n_nodes(self) -> int:
        return self.tree.n_nodes

    def attention_mask(self) -> torch.Tensor:
        """`[rows, context_len + rows]` bool: the dense mask the verify forward used (padding rows see the prefix
        and themselves, as in ddtree.pack_verify_batch)."""
        return request_mask(self.tree, self.context_len, len(self.input_ids))

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["tree"] = self.tree.to_dict()
        d["token_texts"] = {str(k): v for k, v in self.token_texts.items()}
        return d


@dataclass
class KernelRead:
    """What the native engine's attention kernel read in one round: the serving-layout flat mask and its offsets as
    the kernel consumed them (attention="custom_mask"), and the mask every request's rows effectively got, recovered
    by the zero-query / one-hot-value probe on the same kernel and device (step(probe=True))."""
    attention: str  # "triton" (ancestor bitmask), "custom_mask" (flat serving mask + mask_indptr) or "torch"
    mask_layout: str  # "padded" or "unpadded" (the bug): how the flat mask was packed
    custom_mask: torch.Tensor | None = None  # [sum_b Q * (seq_len_b + Q)] bool: the flat buffer the kernel read
    mask_indptr: torch.Tensor | None = None  # [B + 1] long: where the kernel read each request's block
    applied: list[torch.Tensor] | None = None  # per request [Q, seq_len_b + Q] bool: the probed effective mask


@dataclass
class RoundRecord:
    index: int  # round number within the session (0 = first round after the prompt)
    method: str  # "ddtree" | "dflash" | "ar"
    verify: str  # "greedy" | "sampled"
    temperature: float
    top_p: float
    budget: int
    num_draft_tokens: int  # rows per request in the verify forward
    times: dict[str, float]  # seconds per stage: draft, tree, pack, verify, walk, commit (device-synchronised)
    requests: list[RequestRound]
    kernel: KernelRead | None = None  # native engine: what the attention kernel read (not saved in traces)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "kernel"}
        d["requests"] = [r.to_dict() for r in self.requests]
        return d


def save_trace(records: list[RoundRecord], path, *, meta: dict | None = None) -> None:
    """Write records as versioned JSON (`meta` is free-form JSON-safe information, e.g. the prompt)."""
    doc = {"format": TRACE_FORMAT, "version": TRACE_VERSION, "meta": meta or {},
           "records": [r.to_dict() for r in records]}
    Path(path).write_text(json.dumps(doc, allow_nan=False))


def load_trace(path) -> tuple[list[RoundRecord], dict]:
    """Read a trace written by save_trace: `(records, meta)`. Anything malformed is a ValueError saying where."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"trace {path}: not a readable JSON file ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != TRACE_FORMAT:
        raise ValueError(f"trace {path}: not a ddtree trace (expected 'format': {TRACE_FORMAT!r})")
    if doc.get("version") != TRACE_VERSION:
        raise ValueError(f"trace {path}: unsupported version {doc.get('version')!r} (this reader: {TRACE_VERSION})")
    meta, records = doc.get("meta", {}), doc.get("records")
    if not isinstance(meta, dict) or not isinstance(records, list):
        raise ValueError(f"trace {path}: 'meta' must be an object and 'records' a list")
    out = []
    for i, rec in enumerate(records):
        try:
            out.append(_round_from_dict(rec))
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(f"trace {path}: records[{i}]: {e}") from None
    return out, meta


_INT, _FLOAT, _STR = "int", "float", "str"
_REQUEST_SCHEMA = {
    "context_len": _INT, "draft_top_tokens": [[_INT]], "draft_top_logprobs": [[_FLOAT]], "input_ids": [_INT],
    "positions": [_INT], "target_top_tokens": [[_INT]], "target_top_probs": [[_FLOAT]], "target_choice": [_INT],
    "accepted": [_INT], "accepted_tokens": [_INT], "bonus_token": _INT, "committed_text": _STR,
}
_ROUND_SCHEMA = {"index": _INT, "method": _STR, "verify": _STR, "temperature": _FLOAT, "top_p": _FLOAT,
                 "budget": _INT, "num_draft_tokens": _INT}


def _check(value, kind, where: str):
    if isinstance(kind, list):
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list")
        for j, v in enumerate(value):
            _check(v, kind[0], f"{where}[{j}]")
    elif kind == _INT and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{where} must be an int, got {value!r}")
    elif kind == _FLOAT and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{where} must be a number, got {value!r}")
    elif kind == _FLOAT and not math.isfinite(value):
        raise ValueError(f"{where} must be finite, got {value!r}")
    elif kind == _STR and not isinstance(value, str):
        raise ValueError(f"{where} must be a string, got {type(value).__name__}")


def _expect_keys(d, schema_keys: set, where: str) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{where} must be an object")
    if set(d) != schema_keys:
        missing, extra = sorted(schema_keys - set(d)), sorted(set(d) - schema_keys)
        raise ValueError(f"{where} keys differ from the schema (missing {missing}, unexpected {extra})")


def _request_from_dict(d: dict, where: str) -> RequestRound:
    _expect_keys(d, set(_REQUEST_SCHEMA) | {"tree", "token_texts"}, where)
    for key, kind in _REQUEST_SCHEMA.items():
        _check(d[key], kind, f"{where}.{key}")
    texts = d["token_texts"]
    if not isinstance(texts, dict) or not all(isinstance(v, str) and k.lstrip("-").isdigit() for k, v in texts.items()):
        raise ValueError(f"{where}.token_texts must map token ids to strings")
    tree = DraftTree.from_dict(d["tree"])
    n = tree.n_nodes
    for key in ("target_top_tokens", "target_top_probs", "target_choice"):
        if len(d[key]) != n:
            raise ValueError(f"{where}.{key} must have one entry per tree node ({n}), got {len(d[key])}")
    if len(d["input_ids"]) != len(d["positions"]) or len(d["input_ids"]) < n:
        raise ValueError(f"{where}: input_ids and positions must have one length >= the tree's {n} nodes")
    accepted = d["accepted"]
    if not accepted or accepted[0] != 0 or any(not 0 <= a < n for a in accepted) or accepted != tree.path(accepted[-1]):
        raise ValueError(f"{where}.accepted must be a root-to-node path of the tree, got {accepted}")
    fields_ = {k: d[k] for k in _REQUEST_SCHEMA}
    return RequestRound(tree=tree, token_texts={int(k): v for k, v in texts.items()}, **fields_)


def _round_from_dict(d: dict) -> RoundRecord:
    _expect_keys(d, set(_ROUND_SCHEMA) | {"times", "requests"}, "round")
    for key, kind in _ROUND_SCHEMA.items():
        _check(d[key], kind, key)
    if d["method"] not in METHODS or d["verify"] not in VERIFY_RULES:
        raise ValueError(f"method must be one of {METHODS} and verify one of {VERIFY_RULES}")
    times = d["times"]
    if not isinstance(times, dict) or not all(isinstance(k, str) for k in times):
        raise ValueError("times must map stage names to seconds")
    for k, v in times.items():
        _check(v, _FLOAT, f"times.{k}")
    if not isinstance(d["requests"], list) or not d["requests"]:
        raise ValueError("requests must be a non-empty list")
    requests = [_request_from_dict(r, f"requests[{b}]") for b, r in enumerate(d["requests"])]
    return RoundRecord(requests=requests, times=dict(times), **{k: d[k] for k in _ROUND_SCHEMA})

