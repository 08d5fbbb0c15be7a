"""File reads and writes a hostile path cannot hang, flood or half-write (issue 43): every read is of a regular file
and bounded, every write goes to a temp file in the same folder and then os.replace onto the path."""
from __future__ import annotations

import os
import secrets
import stat

MAX_JSON_BYTES = 16 * 2**20  # a config, index or manifest JSON file: far above any real one


def read_bytes_bounded(path, limit: int, what: str, *, hint: str = "") -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes, else a ValueError naming `what` (e.g.
    "trace") and the path; `hint` is appended to the over-the-limit error. The file type and size are checked on the
    open descriptor before reading, and it is opened non-blocking, so a named pipe cannot block and a device (a
    symlink to /dev/zero) cannot flood."""
    _check_path(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except (OSError, ValueError) as e:
        raise ValueError(f"{what} {path}: cannot open it ({e})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{what} {path}: not a regular file (a directory, pipe or device)")
        if info.st_size > limit:
            raise ValueError(f"{what} {path}: {info.st_size / 2**20:.1f} MB is over the {limit / 2**20:.1f} MB "
                             f"limit{hint}")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise ValueError(f"{what} {path}: cannot read it ({e})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{what} {path}: grew past the {limit / 2**20:.1f} MB limit while being read")
    return data


def _check_path(path, what: str) -> None:
    """A str or os.PathLike (an int would be taken for an open file descriptor)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{what} path must be a str or os.PathLike, got {type(path).__name__}")


def check_regular_or_absent(path, what: str) -> None:
    """ValueError naming `what` unless nothing is at `path` or a regular file is (a symlink to one counts): a pipe
    there would block an open, and a device or directory must not be replaced by a write."""
    _check_path(path, what)
    if os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{what} {path}: not a regular file (a directory, pipe or device); give a file path")


def atomic_write(path, data, what: str = "file") -> None:
    """Write `data` (bytes, str as UTF-8, or a function writing into the open binary file) to `path` so that a
    reader sees the old file or the new one, never a part: a failed write (disk full, a file-size limit) is an
    OSError naming `what` and the path, and leaves the old file as it was. A symlink at `path` stays (its target is
    replaced); an existing file keeps its permissions, a new one gets the umask's; a pipe or device at `path` is a
    ValueError naming `what`."""
    check_regular_or_absent(path, what)
    try:
        _replace_with(os.path.realpath(path), data)
    except OSError as e:
        raise OSError(e.errno, f"{what} {path}: not written ({e.strerror or e}); a file already there is kept") \
            from None


def _replace_with(target: str, data) -> None:
    """Write `data` into a new temp file beside `target` (same folder: same file system), then os.replace it onto
    `target`; the temp is removed on failure."""
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if os.path.exists(target):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
            if callable(data):
                data(f)
            else:
                f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
