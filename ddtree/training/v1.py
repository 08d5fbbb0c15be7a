"""Drafter v1, the default drafter before v2 (issue 15), restored from this repository's git history.

v1's files are not shipped any more (the repository would carry both drafters); git keeps them. `restore_v1(dest)`
reads them from commit V1_COMMIT with `git show`, checks each against the SHA-256 recorded here, and only then
writes them to `dest` (a drafter folder for `load_pair(None, dest)` / `DFlashDrafter.from_pretrained(dest)`).
Needs a git checkout that holds that commit (a shallow clone: `git fetch --unshallow` first).

    python -m ddtree.training.v1 build/drafter-v1      # or: make drafter-v1
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
from pathlib import Path

V1_COMMIT = "4b9be1fcc88aba47867782d6dfc698facbaf7a49"
V1_DIR = "ddtree/assets/smollm2-dflash"
V1_SHA256 = {
    "config.json": "999e7e10d49fad9c515a963894e4eaa904b1bd3c21d6b147a5f75d48b4e80b04",
    "model.safetensors.index.json": "0c5f7b1a0d224dcf0239ab1a99c8fe9f1a5482c3cc2a2921c693bce6a9aa25a0",
    "model-00001-of-00002.safetensors": "aa9a3d90e6d62e0477a4b698a4aa7fedf6ec886159f51c3719a0c2d6760311c1",
    "model-00002-of-00002.safetensors": "a589313cc7a09df0621178763d87edb56bca99f4dc4e75e7909ac864f5dbf302",
    "MODEL_CARD.md": "626585bbde9398afb8a600be43d797a34efc3db47682f3119c910fd44dbd470a",
}
REPO = Path(__file__).resolve().parents[2]


def v1_available(repo: Path = REPO) -> bool:
    """Whether `repo` is a git checkout holding V1_COMMIT."""
    try:
        return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{V1_COMMIT}^{{commit}}"],
                              capture_output=True).returncode == 0
    except FileNotFoundError:  # no git
        return False


def restore_v1(dest: Path | str, repo: Path = REPO) -> Path:
    """Write drafter v1's files (V1_SHA256's names) into `dest` and return it. Every file is read from git and
    checked first; on a missing commit or a hash mismatch nothing is written (RuntimeError / ValueError)."""
    if not v1_available(repo):
        raise RuntimeError(f"{repo} is not a git checkout holding commit {V1_COMMIT[:7]} (drafter v1); "
                           "a shallow clone needs `git fetch --unshallow`")
    files = {}
    for name, digest in V1_SHA256.items():
        data = subprocess.run(["git", "-C", str(repo), "show", f"{V1_COMMIT}:{V1_DIR}/{name}"],
                              capture_output=True, check=True).stdout
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise ValueError(f"{name} at {V1_COMMIT[:7]} has SHA-256 {got}, expected {digest}")
        files[name] = data
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (dest / name).write_bytes(data)
    return dest


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path, nargs="?", default=REPO / "build" / "drafter-v1")
    args = ap.parse_args(argv)
    print(f"drafter v1 restored to {restore_v1(args.dest)} (SHA-256 checked)")


if __name__ == "__main__":
    main()
