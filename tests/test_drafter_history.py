"""Earlier drafters restored from git history (ddtree.training.history): the recorded files, hash-checked, load as
drafters."""
import hashlib

import pytest

from ddtree.models import DFlashDrafter
from ddtree.training import history

VERSIONS = [pytest.param(v, marks=pytest.mark.skipif(not history.available(v), reason=f"no git history of {v}"))
            for v in sorted(history.DRAFTERS)]


@pytest.mark.parametrize("version", VERSIONS)
def test_restore_writes_the_recorded_files_and_they_load(tmp_path, version):
    dest = history.restore(version, tmp_path / version)
    recorded = history.DRAFTERS[version].sha256
    assert sorted(p.name for p in dest.iterdir()) == sorted(recorded)
    for name, digest in recorded.items():
        assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == digest
    drafter = DFlashDrafter.from_pretrained(dest)
    assert drafter.config.num_hidden_layers == 3 and drafter.config.block_size == 16


def test_versions_differ_in_their_weights():
    shards = [{k: v for k, v in s.sha256.items() if k.endswith(".safetensors")} for s in history.DRAFTERS.values()]
    assert all(a[k] != b[k] for a, b in zip(shards, shards[1:]) for k in a)


@pytest.mark.parametrize("version", VERSIONS[-1:])
def test_cli_restores_into_the_given_folder(tmp_path, capsys, version):
    history.main([version, str(tmp_path / "out")])
    assert (tmp_path / "out" / "config.json").is_file()
    assert "SHA-256 checked" in capsys.readouterr().out


@pytest.mark.parametrize("version", VERSIONS[:1])
def test_a_hash_mismatch_writes_nothing(tmp_path, monkeypatch, version):
    monkeypatch.setitem(history.DRAFTERS[version].sha256, "model-00002-of-00002.safetensors", "0" * 64)
    with pytest.raises(ValueError, match="model-00002-of-00002.safetensors"):
        history.restore(version, tmp_path / version)
    assert not (tmp_path / version).exists()


def test_a_checkout_without_the_commit_and_an_unknown_version_are_refused(tmp_path):
    with pytest.raises(RuntimeError, match="4b9be1f"):
        history.restore("v1", tmp_path / "v1", repo=tmp_path)
    with pytest.raises(ValueError, match="version must be one of"):
        history.restore("v0", tmp_path / "v0")
