"""Round records: plain data describing one decoding round (what the widgets and reports consume), and traces.

A RoundRecord holds no model references: tokens, texts, trees, probabilities and times. It is shaped for batches
(`requests`, one RequestRound per request) even where a session runs one request.
Traces are versioned JSON (no pickle); loading validates every field's type and value and fails with a clear
ValueError. Only regular files up to MAX_TRACE_BYTES (64 MiB, adjustable per call) are read.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace

import torch

from ddtree._checks import MAX_BUDGET, TOKEN_LIMIT, check_cells, check_int
from ddtree.budget import AR, REASONS, Choice
from ddtree.files import atomic_write, read_bytes_bounded
from ddtree.settings import METHODS, VERIFY_RULES, Method
from ddtree.tree import DraftTree, finite, tree_attention_mask

TRACE_FORMAT = "ddtree-trace"
TRACE_VERSION = 2  # 2: a budget="auto" round's "choice"; version 1 traces (without it) still load
READABLE_VERSIONS = (1, TRACE_VERSION)
MAX_TRACE_BYTES = 64 * 2**20  # load_trace refuses larger files unless given max_bytes


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
    budget: int | None = None  # the node budget this request's tree was built under (a batch's requests may differ:
    # RoundRecord.budget is their largest); None is the round's budget (RoundRecord fills it in; older traces)

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
        return tree_attention_mask(self.tree, self.context_len, len(self.input_ids))

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
    requests: list[RequestRound | None]  # per request of the batch; None: a request Session.run had finished
    kernel: KernelRead | None = None  # native engine: what the attention kernel read (not saved in traces)
    choice: Choice | None = None  # budget="auto": the budget this round chose among the candidates, and why

    def __post_init__(self):
        for req in self.requests:
            if req is not None and req.budget is None:
                req.budget = self.budget

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("kernel", "choice")}
        d["requests"] = [None if r is None else r.to_dict() for r in self.requests]
        if self.choice is not None:  # NaN (not known) as null: JSON has none
            c = self.choice
            d["choice"] = {"budget": c.budget, "candidates": list(c.candidates), "reason": c.reason,
                           "rates": _nulls(c.rates), "typical": _nulls(c.typical)}
        return d

    @property
    def took_part(self) -> list[int]:
        """The batch indices of the requests that took part in this round (those not finished before it)."""
        return [b for b, r in enumerate(self.requests) if r is not None]

    def request(self, b) -> RequestRound:
        """requests[b], or a ValueError naming `request`: out of range, or a request finished before this round."""
        if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < len(self.requests):
            raise ValueError(f"request must be an int in [0, {len(self.requests)}), got {b!r}")
        if self.requests[b] is None:
            raise ValueError(f"request {b} had finished before round {self.index}: it took no part in it (requests "
                             f"{self.took_part} did)")
        return self.requests[b]

    def only(self, b: int) -> RoundRecord:
        """This record with request b as its only request (self.request(b) checks b)."""
        return replace(self, requests=[self.request(b)])

    def present(self) -> RoundRecord:
        """This record with the requests that took part only (`took_part` maps its indices back to the batch's), and
        their probed masks (kernel.applied); the kernel's flat buffer stays the whole batch's, as it was read."""
        kernel = self.kernel
        if kernel is not None and kernel.applied is not None:
            kernel = replace(kernel, applied=[kernel.applied[b] for b in self.took_part])
        return replace(self, requests=[r for r in self.requests if r is not None], kernel=kernel)


def rounds_of(records: list[RoundRecord], b: int) -> list[RoundRecord]:
    """The records of the rounds request b took part in, each with request b alone (`RoundRecord.only`)."""
    return [r.only(b) for r in records if b < len(r.requests) and r.requests[b] is not None]


def save_trace(records: list[RoundRecord], path, *, meta: dict | None = None, vocab_size: int | None = None) -> None:
    """Write records as versioned JSON (`meta` is free-form JSON-safe information, e.g. the prompt). Pass
    `vocab_size` (e.g. pair.vocab_size) to store it as meta["vocab_size"]: load_trace then bounds every token id by
    it (by 2**31 - 1 without it). Written atomically: a failed write leaves a trace already at `path` as it was."""
    meta = dict(meta or {})
    if vocab_size is not None:
        meta["vocab_size"] = check_int("vocab_size", vocab_size, minimum=1, maximum=TOKEN_LIMIT)
    doc = {"format": TRACE_FORMAT, "version": TRACE_VERSION, "meta": meta,
           "records": [r.to_dict() for r in records]}
    atomic_write(path, json.dumps(doc, allow_nan=False), "trace")


def load_trace(path, *, max_bytes: int = MAX_TRACE_BYTES) -> tuple[list[RoundRecord], dict]:
    """Read a trace written by save_trace: `(records, meta)`. Anything malformed is a ValueError saying where.

    Only regular files of at most `max_bytes` (default MAX_TRACE_BYTES = 64 MiB) are read; pipes, devices and
    directories are refused before reading. Values are checked, not just types: ranges, the tree's structure, token
    ids within meta["vocab_size"] (2**31 - 1 when absent), the verify rows and positions against the tree, the
    accepted path and committed tokens against the tree and the target's choices, probabilities in [0, 1].
    """
    data = read_bytes_bounded(path, check_int("max_bytes", max_bytes, minimum=1), "trace",
                              hint=" (load_trace(..., max_bytes=...) raises it)")
    try:
        doc = json.loads(data)
    except RecursionError:
        raise ValueError(f"trace {path}: JSON nested too deeply") from None
    except ValueError as e:  # bad JSON, bad encoding, an integer literal over Python's digit limit
        raise ValueError(f"trace {path}: not a readable JSON file ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != TRACE_FORMAT:
        raise ValueError(f"trace {path}: not a ddtree trace (expected 'format': {TRACE_FORMAT!r})")
    version = doc.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise ValueError(f"trace {path}: unsupported version {version!r} (this reader: {list(READABLE_VERSIONS)})")
    meta, records = doc.get("meta", {}), doc.get("records")
    if not isinstance(meta, dict) or not isinstance(records, list):
        raise ValueError(f"trace {path}: 'meta' must be an object and 'records' a list")
    vocab = meta.get("vocab_size", TOKEN_LIMIT)
    if isinstance(vocab, bool) or not isinstance(vocab, int) or not 1 <= vocab <= TOKEN_LIMIT:
        raise ValueError(f"trace {path}: meta.vocab_size must be an int in [1, {TOKEN_LIMIT}], got {vocab!r}")
    out = []
    for i, rec in enumerate(records):
        try:
            out.append(_round_from_dict(rec, vocab, version))
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
_PROB_SLACK = 1e-6  # rounding allowed above a probability of 1 or a log-probability of 0
ZERO_LOGPROB = -1e29  # records store probability 0 as -1e30 (JSON has no -inf): at or below this means -inf


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
    elif kind == _FLOAT and not finite(value):
        raise ValueError(f"{where} must be finite, got {value!r}")
    elif kind == _STR and not isinstance(value, str):
        raise ValueError(f"{where} must be a string, got {type(value).__name__}")


def _expect_keys(d, schema_keys: set, where: str, optional: set = frozenset()) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{where} must be an object")
    if not schema_keys <= set(d) <= schema_keys | optional:
        missing, extra = sorted(schema_keys - set(d)), sorted(set(d) - schema_keys - optional)
        raise ValueError(f"{where} keys differ from the schema (missing {missing}, unexpected {extra})")


def _ids(values: list, vocab: int, where: str, *, allow=()) -> None:
    """Every value a token id in [0, vocab) (or one of `allow`)."""
    bad = next((v for v in values if not 0 <= v < vocab and v not in allow), None)
    if bad is not None:
        extra = f" (or {' / '.join(map(str, allow))})" if allow else ""
        raise ValueError(f"{where} must be token ids in [0, vocab_size = {vocab}){extra}, got {bad!r} "
                         "(vocab_size: meta.vocab_size, or 2**31 - 1 when the trace has none)")


def _in_range(values: list, low, high, where: str) -> None:
    """Every value in [low, high]."""
    bad = next((v for v in values if not low <= v <= high), None)
    if bad is not None:
        raise ValueError(f"{where} must hold values in [{low}, {high}], got {bad!r}")


def _table(tokens: list[list[int]], values: list[list[float]], rows: int | None, where: str) -> None:
    """Two row-aligned tables [rows][K] with one K (K >= 1 when rows > 0)."""
    if len(values) != len(tokens) or (rows is not None and len(tokens) != rows):
        raise ValueError(f"{where}: tokens and values must have {'one' if rows is None else rows} row count, got "
                         f"{len(tokens)} and {len(values)}")
    widths = {len(r) for r in tokens} | {len(r) for r in values}
    if len(widths) > 1 or widths == {0}:
        raise ValueError(f"{where}: every row must hold the same number K >= 1 of entries, got widths {sorted(widths)}")


def _request_from_dict(d: dict, where: str, vocab: int, rows: int) -> RequestRound:
    _expect_keys(d, set(_REQUEST_SCHEMA) | {"tree", "token_texts"}, where, optional={"budget"})
    for key, kind in _REQUEST_SCHEMA.items():
        _check(d[key], kind, f"{where}.{key}")
    texts = d["token_texts"]
    if not isinstance(texts, dict) or not all(isinstance(v, str) and k.isascii() and k.isdigit() and len(k) <= 10
                                              and k == str(int(k)) and int(k) < vocab for k, v in texts.items()):
        raise ValueError(f"{where}.token_texts must map token ids in [0, vocab_size = {vocab}) (as decimal strings) "
                         "to strings")
    try:
        tree = DraftTree.from_dict(d["tree"])
    except ValueError as e:
        raise ValueError(f"{where}.{e}") from None
    n, tokens, depths = tree.n_nodes, tree.tokens.tolist(), tree.depths.tolist()
    _ids(tokens, vocab, f"{where}.tree.tokens (the root's too: it is set in a record)")
    logws, parents = tree.node_logws.tolist(), tree.parents.tolist()
    if logws[0] != 0 or any(logws[i] > logws[parents[i]] + _PROB_SLACK for i in range(1, n)):
        raise ValueError(f"{where}.tree.node_logws must be 0 at the root and fall along every path (sums of "
                         "log-probabilities <= 0)")
    ctx = d["context_len"]
    _in_range([ctx], 0, TOKEN_LIMIT - rows, f"{where}.context_len")
    check_cells(rows * (ctx + rows), f"{where}: the verify mask [rows, context_len + rows]")

    ids, positions = d["input_ids"], d["positions"]
    if len(ids) != rows or len(positions) != rows or rows < n:
        raise ValueError(f"{where}: input_ids and positions must have num_draft_tokens = {rows} entries, at least "
                         f"the tree's {n} nodes, got {len(ids)} and {len(positions)}")
    if ids != tokens + [tokens[0]] * (rows - n):
        raise ValueError(f"{where}.input_ids must be the tree's tokens, then the root token on padding rows")
    if positions != [ctx + dep for dep in depths] + [ctx] * (rows - n):
        raise ValueError(f"{where}.positions must be context_len + depth, and context_len on padding rows")

    _table(d["draft_top_tokens"], d["draft_top_logprobs"], None, f"{where}.draft_top_tokens/draft_top_logprobs")
    if d["draft_top_tokens"] and len(d["draft_top_tokens"]) < tree.max_depth:
        raise ValueError(f"{where}.draft_top_tokens must have a row per draft depth (>= the tree's depth "
                         f"{tree.max_depth}), got {len(d['draft_top_tokens'])}")
    _ids([t for row in d["draft_top_tokens"] for t in row], vocab, f"{where}.draft_top_tokens")
    _in_range([v for row in d["draft_top_logprobs"] for v in row], -math.inf, _PROB_SLACK,
              f"{where}.draft_top_logprobs")
    _table(d["target_top_tokens"], d["target_top_probs"], n, f"{where}.target_top_tokens/target_top_probs "
                                                              "(one row per tree node)")
    _ids([t for row in d["target_top_tokens"] for t in row], vocab, f"{where}.target_top_tokens")
    probs = d["target_top_probs"]
    _in_range([p for row in probs for p in row], 0.0, 1.0 + _PROB_SLACK, f"{where}.target_top_probs (probabilities)")
    if any(sum(row) > 1 + 1e-3 for row in probs):
        raise ValueError(f"{where}.target_top_probs: a row sums to more than 1")

    choice, accepted, accepted_tokens = d["target_choice"], d["accepted"], d["accepted_tokens"]
    if len(choice) != n:
        raise ValueError(f"{where}.target_choice must have one entry per tree node ({n}), got {len(choice)}")
    _ids(choice, vocab, f"{where}.target_choice", allow=(-1,))
    _ids([d["bonus_token"]], vocab, f"{where}.bonus_token")
    if not accepted or accepted[0] != 0 or any(not 0 <= a < n for a in accepted) or accepted != tree.path(accepted[-1]):
        raise ValueError(f"{where}.accepted must be a root-to-node path of the tree, got {accepted}")
    if accepted_tokens != [tokens[a] for a in accepted[1:]]:
        raise ValueError(f"{where}.accepted_tokens must be the tree's tokens at the accepted nodes "
                         f"{[tokens[a] for a in accepted[1:]]}, got {accepted_tokens}")
    committed = accepted_tokens + [d["bonus_token"]]
    if [choice[a] for a in accepted] != committed:
        raise ValueError(f"{where}.target_choice at the accepted nodes must be the committed tokens {committed} "
                         "(the walk moves to the child the target chose, and the last choice is the bonus)")
    if d["bonus_token"] in {tokens[c] for c in tree.children(accepted[-1])}:
        raise ValueError(f"{where}.bonus_token is a child's token of the last accepted node: the walk would have "
                         "moved there")
    budget = d.get("budget")  # traces before per-request budgets were recorded have none: the round's
    if budget is not None:
        _check(budget, _INT, f"{where}.budget")
        _in_range([budget], 0, MAX_BUDGET, f"{where}.budget")
    fields_ = {k: d[k] for k in _REQUEST_SCHEMA}
    return RequestRound(tree=tree, token_texts={int(k): v for k, v in texts.items()}, budget=budget, **fields_)


def _nulls(values) -> list:
    return [None if math.isnan(v) else v for v in values]


def _choice_from_dict(d) -> Choice:
    """A budget="auto" round's choice: the budget among increasing candidates, two rates (or null) per candidate
    and one of REASONS."""
    _expect_keys(d, {"budget", "candidates", "rates", "typical", "reason"}, "choice")
    _check(d["budget"], _INT, "choice.budget")
    _check(d["candidates"], [_INT], "choice.candidates")
    candidates = d["candidates"]
    _in_range(candidates, 0, MAX_BUDGET, "choice.candidates")
    if not candidates or candidates != sorted(set(candidates)) or d["budget"] not in candidates:
        raise ValueError(f"choice.candidates must be distinct increasing budgets holding choice.budget "
                         f"{d['budget']!r}, got {candidates!r}")
    for key in ("rates", "typical"):
        if not isinstance(d[key], list) or len(d[key]) != len(candidates):
            raise ValueError(f"choice.{key} must hold one rate (or null) per candidate ({len(candidates)})")
        for j, r in enumerate(d[key]):
            if r is not None:
                _check(r, _FLOAT, f"choice.{key}[{j}]")
    if d["reason"] not in REASONS:
        raise ValueError(f"choice.reason must be one of {REASONS}, got {d['reason']!r}")
    return Choice(d["budget"], tuple(candidates), *(tuple(math.nan if r is None else float(r) for r in d[key])
                                                    for key in ("rates", "typical")), d["reason"])


def _round_from_dict(d: dict, vocab: int, version: int = TRACE_VERSION) -> RoundRecord:
    _expect_keys(d, set(_ROUND_SCHEMA) | {"times", "requests"}, "round", optional={"choice"} if version >= 2 else set())
    for key, kind in _ROUND_SCHEMA.items():
        _check(d[key], kind, key)
    if d["method"] not in METHODS or d["verify"] not in VERIFY_RULES:
        raise ValueError(f"method must be one of {METHODS} and verify one of {VERIFY_RULES}")
    _in_range([d["index"]], 0, TOKEN_LIMIT, "index")
    _in_range([d["budget"]], 0, MAX_BUDGET, "budget")
    _in_range([d["num_draft_tokens"]], 1, MAX_BUDGET + 1, "num_draft_tokens")
    _in_range([d["temperature"]], 0.0, math.inf, "temperature")
    if not 0 < d["top_p"] <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {d['top_p']}")
    times = d["times"]
    if not isinstance(times, dict) or not all(isinstance(k, str) for k in times):
        raise ValueError("times must map stage names to seconds")
    for k, v in times.items():
        _check(v, _FLOAT, f"times.{k}")
        _in_range([v], 0.0, math.inf, f"times.{k} (seconds)")
    if not isinstance(d["requests"], list) or all(r is None for r in d["requests"]):
        raise ValueError("requests must be a list with at least one request (null: a finished request)")
    requests = [None if r is None else _request_from_dict(r, f"requests[{b}]", vocab, d["num_draft_tokens"])
                for b, r in enumerate(d["requests"])]
    check_cells(sum(d["num_draft_tokens"] * (r.context_len + d["num_draft_tokens"]) for r in requests
                    if r is not None), "the round's verify batch mask")
    # checked once made: a request without a budget of its own (an older trace) then has the round's
    choice = None if d.get("choice") is None else _choice_from_dict(d["choice"])
    if choice is not None and (choice.budget != d["budget"] or (d["method"] == "ar") != (choice.budget == AR)):
        raise ValueError(f"choice.budget {choice.budget} must be the round's budget {d['budget']} (0 exactly in an "
                         f"'ar' round), got method {d['method']!r}")
    record = RoundRecord(requests=requests, times=dict(times), choice=choice, **{k: d[k] for k in _ROUND_SCHEMA})
    _check_budgets(record)
    return record


def _check_budgets(record: RoundRecord) -> None:
    """The budgets against the trees and the verify rows, as a session makes them (ddtree.session): the round's
    budget is the largest of its requests' (of every request: a finished one, None, may have had it); a DDTree
    round verifies budget + 1 rows per request; a request's tree has at most its budget's nodes below the root, and
    fewer only where the heap ran out of candidates of probability > 0 (ddtree.tree.build_tree), which the recorded
    draft ranks must not contradict (ddtree.analysis counts such a tree as exact at every budget)."""
    present = [(b, r) for b, r in enumerate(record.requests) if r is not None]
    for b, r in present:
        if r.budget > record.budget:
            raise ValueError(f"requests[{b}].budget must be at most the round's budget {record.budget} (the largest "
                             f"of its requests'), got {r.budget}")
        method_ok = {"ar": r.n_nodes == 1 and not r.draft_top_tokens,
                     "dflash": r.tree.parents.tolist() == list(range(-1, r.n_nodes - 1)),
                     "ddtree": r.n_nodes - 1 <= r.budget}[record.method]
        if not method_ok:
            raise ValueError(f"requests[{b}]: the tree does not fit method {record.method!r} (ar: the root alone and "
                             "no draft rows; dflash: a chain; ddtree: at most its budget's nodes below the root)")
    largest = max(r.budget for _, r in present)
    if len(present) == len(record.requests) and record.budget != largest:
        raise ValueError(f"budget must be the largest of its requests' budgets ({largest}), got {record.budget}")
    if record.method == Method.DDTREE and record.num_draft_tokens != record.budget + 1:
        raise ValueError(f"num_draft_tokens must be budget + 1 = {record.budget + 1} in a 'ddtree' round (the verify "
                         f"rows of its largest tree), got {record.num_draft_tokens}")
    if record.method == Method.DDTREE:
        for b, r in present:
            if r.n_nodes - 1 < r.budget and r.draft_top_logprobs:
                _check_exhausted(r, f"requests[{b}]")


def _check_exhausted(req: RequestRound, where: str) -> None:
    """A DDTree tree with fewer nodes than its budget allows: build_tree stopped because no candidate of probability
    > 0 was left. Its candidates are each node's first child (rank 0 one depth down, while the draft is deeper) and
    each node's next sibling (rank + 1 at its depth); every one the tree lacks must have probability 0 where the
    record's draft top-K tells (ranks past the top-K are unknown)."""
    logq = [sorted(row, reverse=True) for row in req.draft_top_logprobs]  # [depth][K] best first
    tree = req.tree
    parents, depths, ranks = tree.parents.tolist(), tree.depths.tolist(), tree.ranks.tolist()
    held = {(parents[i], ranks[i]) for i in range(1, tree.n_nodes)}
    for i in range(tree.n_nodes):
        candidates = [(i, 0, depths[i] + 1)] + ([(parents[i], ranks[i] + 1, depths[i])] if i else [])
        for parent, rank, depth in candidates:
            if (parent, rank) in held or depth > len(logq) or rank >= len(logq[depth - 1]):
                continue
            if logq[depth - 1][rank] > ZERO_LOGPROB:
                raise ValueError(
                    f"{where}: its tree has {tree.n_nodes} nodes, fewer than its budget {req.budget} + 1, so the heap "
                    f"would have run out of candidates; but draft_top_logprobs gives depth {depth}'s rank {rank} "
                    f"(a child of node {parent}) probability > 0 ({logq[depth - 1][rank]:.3g}), which it would have "
                    "added: the budget contradicts the tree")
