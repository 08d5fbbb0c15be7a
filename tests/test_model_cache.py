"""Issue 17, finding 2: the converted model cache carries a manifest (per-file sizes and SHA-256) and is checked on
every load; a corrupted, truncated or incomplete cache is reported and rebuilt from the GGUF, never loaded.

The fast tests replace the GGUF conversion with a writer of a tiny Llama (the manifest, the checks and the atomic
rebuild are the real code); the slow test corrupts the real embedded SmolLM2 cache as the issue did."""
import json
import os

import pytest
import torch
from hostile_files import run_limited, unblocked
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from ddtree.models import target as tm

PROMPT_IDS = torch.tensor([[5, 17, 3, 42, 8]])


def write_tiny(gguf, out):
    """Stand-in for the GGUF conversion: the same tiny Llama and tokenizer every time."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2))
    model.save_pretrained(out, safe_serialization=True)
    words = Tokenizer(WordLevel({f"w{i}": i for i in range(64)} | {"[UNK]": 0}, unk_token="[UNK]"))
    words.pre_tokenizer = Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]").save_pretrained(out)
    write_tiny.calls += 1


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache root, a fake GGUF and the tiny writer; yields the cache folder."""
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF" + bytes(100))
    monkeypatch.setenv("DDTREE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tm, "embedded_gguf", lambda: gguf)
    monkeypatch.setattr(tm, "_write_converted", write_tiny)
    write_tiny.calls = 0
    return tmp_path / "cache" / tm.EMBEDDED_CACHE_NAME


def logits():
    model, _ = tm.load_target()
    return model(PROMPT_IDS).logits


def test_the_cache_is_built_once_with_a_manifest_and_then_reused(cache, recwarn):
    first = logits()
    manifest = json.loads((cache / tm.MANIFEST_FILE).read_text())
    assert set(manifest["files"]) == {p.name for p in cache.iterdir()} - {tm.MANIFEST_FILE}
    assert manifest["files"]["model.safetensors"]["size"] == (cache / "model.safetensors").stat().st_size
    assert len(manifest["files"]["model.safetensors"]["sha256"]) == 64
    assert torch.equal(logits(), first) and write_tiny.calls == 1 and not recwarn.list
    assert tm.cache_problem(cache) is None


def overwrite_middle(folder):
    path = folder / "model.safetensors"
    with open(path, "r+b") as f:  # same size, other bytes: only the content hash can tell
        f.seek(path.stat().st_size // 2)
        f.write(b"\x7f" * 4096)


CORRUPTIONS = [
    ("other content than its manifest's SHA-256", overwrite_middle),
    ("truncated or overwritten", lambda d: os.truncate(d / "model.safetensors", 1000)),
    ("missing \\['tokenizer.json'\\]", lambda d: (d / "tokenizer.json").unlink()),
    ("other content", lambda d: (d / "config.json").write_text("{" + " " * (len((d / "config.json").read_text()) - 1))),
    ("unexpected \\['extra.bin'\\]", lambda d: (d / "extra.bin").write_bytes(b"x")),
    ("has no manifest", lambda d: (d / tm.MANIFEST_FILE).unlink()),  # a cache written before manifests
    ("unreadable manifest", lambda d: (d / tm.MANIFEST_FILE).write_text("[")),
]


@pytest.mark.parametrize("problem, corrupt", CORRUPTIONS, ids=[p for p, _ in CORRUPTIONS])
def test_a_damaged_cache_is_reported_and_rebuilt_never_loaded(cache, problem, corrupt):
    good = logits()
    corrupt(cache)
    with pytest.warns(UserWarning, match=f"model cache .*{problem}.*rebuilding it from .*fake.gguf"):
        again = logits()
    assert torch.equal(again, good) and write_tiny.calls == 2
    assert tm.cache_problem(cache) is None


def test_embedded_cache_dir_checks_the_content_too(cache):
    tm.embedded_cache_dir()
    overwrite_middle(cache)
    assert "SHA-256" in tm.cache_problem(cache, check_content=True)
    assert tm.cache_problem(cache, check_content=False) is None  # sizes alone cannot see it
    with pytest.warns(UserWarning, match="SHA-256"):
        tm.embedded_cache_dir()
    assert tm.cache_problem(cache) is None and write_tiny.calls == 2


def test_a_failed_rebuild_leaves_no_half_written_folder(cache, monkeypatch):
    tm.embedded_cache_dir()
    os.truncate(cache / "model.safetensors", 1000)

    def broken(gguf, out):
        (out / "model.safetensors").write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(tm, "_write_converted", broken)
    with pytest.warns(UserWarning, match="truncated"), pytest.raises(OSError, match="disk full"):
        tm.load_target()
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]  # no temporary folders left
    assert (cache / "model.safetensors").stat().st_size == 1000  # the old folder, not a half-written one


def test_a_manifest_that_is_a_named_pipe_is_rebuilt_not_waited_on(cache):
    """Issue 43: reading a FIFO manifest hung the loader."""
    tm.embedded_cache_dir()
    manifest = cache / tm.MANIFEST_FILE
    manifest.unlink()
    os.mkfifo(manifest)
    assert unblocked(lambda: tm.cache_problem(cache), manifest) == "has an unreadable manifest"
    with pytest.warns(UserWarning, match="unreadable manifest"):
        tm.embedded_cache_dir()
    assert tm.cache_problem(cache) is None and write_tiny.calls == 2


def test_a_manifest_linked_to_dev_zero_is_refused_not_read(cache):
    """Issue 43: a manifest symlinked to /dev/zero was read until the process was killed (22 GB); checked in a
    fresh Python capped at 1 GB more memory, so that a flood fails there."""
    tm.embedded_cache_dir()
    (cache / tm.MANIFEST_FILE).unlink()
    (cache / tm.MANIFEST_FILE).symlink_to("/dev/zero")
    out = run_limited(f"""
        from pathlib import Path
        from ddtree.models import target as tm
        limit(memory=2**30)
        print(tm.cache_problem(Path({str(cache)!r})))
        """)
    assert out.returncode == 0 and out.stdout.strip() == "has an unreadable manifest", out.stderr[-2000:]
    with pytest.warns(UserWarning, match="unreadable manifest"):
        tm.embedded_cache_dir()
    assert tm.cache_problem(cache) is None and not (cache / tm.MANIFEST_FILE).is_symlink()


def test_a_ddtree_cache_that_is_a_file_is_a_value_error_naming_it(tmp_path, monkeypatch):
    """Issue 43: it was a bare FileExistsError from deep in the conversion."""
    (tmp_path / "file").write_text("not a folder")
    for root in (tmp_path / "file", tmp_path / "file" / "below"):
        monkeypatch.setenv("DDTREE_CACHE", str(root))
        with pytest.raises(ValueError, match=f"^DDTREE_CACHE must be a folder .*got '{root}': {tmp_path / 'file'} "
                                             "is a file$"):
            tm.load_target()


@pytest.mark.slow
def test_the_real_cache_overwritten_or_truncated_is_rebuilt(tmp_path, monkeypatch):
    """The issue's case: 4 MB overwritten in the middle of the cached SmolLM2 weights (same size) changed the next
    token; a truncated file raised a raw SafetensorError."""
    monkeypatch.setenv("DDTREE_CACHE", str(tmp_path))
    model, tokenizer = tm.load_target()
    ids = torch.tensor([tokenizer.encode("def is_palindrome(s):")])
    want = model(ids).logits[0, -1]
    folder = tmp_path / tm.EMBEDDED_CACHE_NAME
    weights = folder / "model.safetensors"
    for damage in ("overwrite", "truncate"):
        if damage == "overwrite":
            with open(weights, "r+b") as f:
                f.seek(weights.stat().st_size // 2)
                f.write(b"\0" * 4 * 2**20)
        else:
            os.truncate(weights, weights.stat().st_size // 3)
        with pytest.warns(UserWarning, match="rebuilding"):
            model, _ = tm.load_target()
        assert torch.equal(model(ids).logits[0, -1], want)
