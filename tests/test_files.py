"""Issue 43: ddtree.files reads only regular files, bounded (a named pipe cannot block a read, a link to /dev/zero
cannot flood one), and writes atomically (a failed write leaves the old file; no temp file stays behind)."""
import errno
import os
import stat

import pytest
from hostile_files import run_limited, unblocked

from ddtree.files import atomic_write, check_regular_or_absent, read_bytes_bounded


def test_a_regular_file_within_the_limit_is_read(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 100)
    assert read_bytes_bounded(path, 100, "thing") == b"x" * 100
    assert read_bytes_bounded(str(path), 100, "thing") == b"x" * 100


def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    error = unblocked(lambda: read_bytes_bounded(fifo, 100, "thing"), fifo)
    assert isinstance(error, ValueError) and str(error) == f"thing {fifo}: not a regular file (a directory, pipe or " \
                                                            "device)"


def test_devices_folders_and_links_to_devices_are_refused_before_reading(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")
    for path in ("/dev/zero", tmp_path / "zero", tmp_path):
        with pytest.raises(ValueError, match=f"^thing {path}: not a regular file"):
            read_bytes_bounded(path, 100, "thing")


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(2**40)  # sparse: 1 TB that only the size can refuse in time
    with pytest.raises(ValueError, match=r"thing .*big: 1048576.0 MB is over the 1.0 MB limit \(raise it\)$"):
        read_bytes_bounded(big, 2**20, "thing", hint=" (raise it)")


def test_a_missing_file_or_a_path_of_another_type_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="^thing .*missing: cannot open it"):
        read_bytes_bounded(tmp_path / "missing", 100, "thing")
    for call in (lambda: read_bytes_bounded(3, 100, "thing"), lambda: atomic_write(3, b"x", "thing")):
        with pytest.raises(ValueError, match="^thing path must be a str or os.PathLike, got int"):
            call()


def test_atomic_write_replaces_the_file_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "r.html"
    atomic_write(path, "é")
    assert path.read_bytes() == "é".encode()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as open() would make it, not mkstemp's 0600
    path.chmod(0o640)
    atomic_write(path, b"new")
    atomic_write(path, lambda f: f.write(b"by a writer"))
    assert path.read_bytes() == b"by a writer" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["r.html"]


def test_a_symlink_stays_and_its_target_gets_the_new_content(tmp_path):
    (tmp_path / "real").write_text("old")
    (tmp_path / "link").symlink_to("real")
    atomic_write(tmp_path / "link", "new")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]


def test_a_write_over_the_file_size_limit_keeps_the_old_file(tmp_path):
    """RLIMIT_FSIZE (or a full disk) stops the write part-way: the old file stays whole and the temp file goes."""
    path = tmp_path / "report.html"
    path.write_bytes(b"old" * 700_000)  # 2.1 MB, as in the issue
    out = run_limited(f"""
        from ddtree.files import atomic_write
        limit(fsize=4096)
        try:
            atomic_write({str(path)!r}, b"n" * 100_000, "report")
        except OSError as e:
            print(e.errno, e)
        """)
    assert out.returncode == 0, out.stderr[-2000:]
    code, message = out.stdout.strip().split(" ", 1)
    assert int(code) == errno.EFBIG and message.startswith(f"[Errno {errno.EFBIG}] report {path}: not written (")
    assert path.read_bytes() == b"old" * 700_000 and os.listdir(tmp_path) == ["report.html"]


def test_a_failing_writer_keeps_the_old_file(tmp_path):
    path = tmp_path / "data.npz"
    path.write_bytes(b"old")

    def writer(f):
        f.write(b"half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        atomic_write(path, writer)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["data.npz"]


def test_a_pipe_or_device_at_the_path_is_refused_not_opened_or_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/null", tmp_path):
        with pytest.raises(ValueError, match=f"^report {path}: not a regular file"):
            atomic_write(path, b"x", "report")
        with pytest.raises(ValueError, match="not a regular file"):
            check_regular_or_absent(path, "report")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    check_regular_or_absent(tmp_path / "absent", "report")
