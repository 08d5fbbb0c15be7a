"""Drafter v1 restored from git history (ddtree.training.v1): the recorded files, hash-checked, load as a drafter."""
import hashlib

import pytest

from ddtree.models import DFlashDrafter
from ddtree.training import v1

pytestmark = pytest.mark.skipif(not v1.v1_available(), reason="no git history holding drafter v1's commit")


def test_restore_writes_the_recorded_files_and_they_load(tmp_path):
    dest = v1.restore_v1(tmp_path / "v1")
    assert sorted(p.name for p in dest.iterdir()) == sorted(v1.V1_SHA256)
    for name, digest in v1.V1_SHA256.items():
        assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == digest
    drafter = DFlashDrafter.from_pretrained(dest)
    assert drafter.config.num_hidden_layers == 3 and drafter.config.block_size == 16


def test_cli_restores_into_the_given_folder(tmp_path, capsys):
    v1.main([str(tmp_path / "out")])
    assert (tmp_path / "out" / "config.json").is_file()
    assert "SHA-256 checked" in capsys.readouterr().out


def test_a_hash_mismatch_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(v1.V1_SHA256, "model-00002-of-00002.safetensors", "0" * 64)
    with pytest.raises(ValueError, match="model-00002-of-00002.safetensors"):
        v1.restore_v1(tmp_path / "v1")
    assert not (tmp_path / "v1").exists()


def test_a_checkout_without_the_commit_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="4b9be1f"):
        v1.restore_v1(tmp_path / "v1", repo=tmp_path)
