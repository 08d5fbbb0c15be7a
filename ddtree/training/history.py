"""Earlier default drafters (v1 to v4), restored from this repository's git history.

Their files are not shipped any more (the repository would carry every drafter); git keeps them. `restore(version,
dest)` reads a version's files from its commit with `git show`, checks each against the SHA-256 recorded here, and
only then writes them to `dest` (a drafter folder for `load_pair(None, dest)` / `DFlashDrafter.from_pretrained(dest)`).
Needs a git checkout that holds the commit (a shallow clone: `git fetch --unshallow` first).

    python -m ddtree.training.history v4 build/drafter-v4      # or: make drafter-v4 (drafter-v1 to -v3)
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
from pathlib import Path
from typing import NamedTuple

from ddtree.files import atomic_write

FOLDER = "ddtree/assets/smollm2-dflash"
REPO = Path(__file__).resolve().parents[2]


class Snapshot(NamedTuple):
    """A drafter as a commit shipped it in FOLDER: the commit and each file's SHA-256."""
    commit: str
    sha256: dict[str, str]


DRAFTERS = {
    "v1": Snapshot("4b9be1fcc88aba47867782d6dfc698facbaf7a49", {  # the default until 2026-12-02
        "config.json": "999e7e10d49fad9c515a963894e4eaa904b1bd3c21d6b147a5f75d48b4e80b04",
        "model.safetensors.index.json": "0c5f7b1a0d224dcf0239ab1a99c8fe9f1a5482c3cc2a2921c693bce6a9aa25a0",
        "model-00001-of-00002.safetensors": "aa9a3d90e6d62e0477a4b698a4aa7fedf6ec886159f51c3719a0c2d6760311c1",
        "model-00002-of-00002.safetensors": "a589313cc7a09df0621178763d87edb56bca99f4dc4e75e7909ac864f5dbf302",
        "MODEL_CARD.md": "626585bbde9398afb8a600be43d797a34efc3db47682f3119c910fd44dbd470a",
    }),
    "v2": Snapshot("ff6231dcfc039bb6c3bc712bec64995d90f6700a", {  # the default until 2026-12-04
        "config.json": "999e7e10d49fad9c515a963894e4eaa904b1bd3c21d6b147a5f75d48b4e80b04",
        "model.safetensors.index.json": "0c5f7b1a0d224dcf0239ab1a99c8fe9f1a5482c3cc2a2921c693bce6a9aa25a0",
        "model-00001-of-00002.safetensors": "4483880276088b9d75446da43468c13969131c46410168331848431385dc4a82",
        "model-00002-of-00002.safetensors": "097aa5ca065183cbb52411d2a148037b8fba1724f0a204e19468ee85aa677957",
        "MODEL_CARD.md": "badd28cb000d940bbc07acba5bb18abf284f0fd5f5f09ed187f4cec145449439",
    }),
    "v3": Snapshot("bae6ad4f735c71f836a5dc5e3cde3f930d72f25d", {  # the default until 2026-12-04 (afternoon)
        "config.json": "999e7e10d49fad9c515a963894e4eaa904b1bd3c21d6b147a5f75d48b4e80b04",
        "model.safetensors.index.json": "0c5f7b1a0d224dcf0239ab1a99c8fe9f1a5482c3cc2a2921c693bce6a9aa25a0",
        "model-00001-of-00002.safetensors": "ea6976e3a5b2c96a2f5d4fd22efa185deeae39b4d8c8e5b224731efdd035712b",
        "model-00002-of-00002.safetensors": "0bfd21e90b65ff132982794dc54ea1a3b846d27b264962ec224c97f8010789b7",
        "MODEL_CARD.md": "6c4c9fce06ce11cece29e2dbe40cbb03882058c5277e718c24c8c45202702364",
    }),
    "v4": Snapshot("93e7b14408af52dbf31c2f34750265dec010ffd5", {  # the default until 2026-12-05
        "config.json": "999e7e10d49fad9c515a963894e4eaa904b1bd3c21d6b147a5f75d48b4e80b04",
        "model.safetensors.index.json": "0c5f7b1a0d224dcf0239ab1a99c8fe9f1a5482c3cc2a2921c693bce6a9aa25a0",
        "model-00001-of-00002.safetensors": "8ec80377895932271ca1601024bd22dfab83ee5347d9b773205a1c14664dface",
        "model-00002-of-00002.safetensors": "9cd33613ce50c41b396040bfed335998445ce86c28c92dbcba09beb8f3dd11be",
        "MODEL_CARD.md": "b48d2efeb2731fb17fb58d2cfaf58dcfdd62e15434b8abf60862546b85fd2067",
    }),
}


def snapshot(version: str) -> Snapshot:
    if version not in DRAFTERS:
        raise ValueError(f"version must be one of {sorted(DRAFTERS)}, got {version!r}")
    return DRAFTERS[version]


def available(version: str, repo: Path = REPO) -> bool:
    """Whether `repo` is a git checkout holding `version`'s commit."""
    try:
        return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{snapshot(version).commit}^{{commit}}"],
                              capture_output=True).returncode == 0
    except FileNotFoundError:  # no git
        return False


def restore(version: str, dest: Path | str, repo: Path = REPO) -> Path:
    """Write drafter `version`'s files into `dest` and return it. Every file is read from git and checked first;
    on a missing commit or a hash mismatch nothing is written (RuntimeError / ValueError)."""
    commit, sha256 = snapshot(version)
    if not available(version, repo):
        raise RuntimeError(f"{repo} is not a git checkout holding commit {commit[:7]} (drafter {version}); "
                           "a shallow clone needs `git fetch --unshallow`")
    files = {}
    for name, digest in sha256.items():
        data = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{FOLDER}/{name}"],
                              capture_output=True, check=True).stdout
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise ValueError(f"{name} at {commit[:7]} has SHA-256 {got}, expected {digest}")
        files[name] = data
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        atomic_write(dest / name, data, "drafter file")
    return dest


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version", choices=sorted(DRAFTERS))
    ap.add_argument("dest", type=Path, nargs="?", help="default: build/drafter-VERSION")
    args = ap.parse_args(argv)
    dest = restore(args.version, args.dest or REPO / "build" / f"drafter-{args.version}")
    print(f"drafter {args.version} restored to {dest} (SHA-256 checked)")


if __name__ == "__main__":
    main()
