"""Helpers for tests of hostile paths (issue 43): a call that could block on a named pipe, and a fresh Python run
under a file-size or memory limit (a write that fails part-way; a read that would flood)."""
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LIMITS = '''
import os, resource

def limit(*, fsize=None, memory=None):
    """From here on: writes past `fsize` bytes of a file fail (EFBIG); `memory` bytes more address space at most."""
    if fsize is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    if memory is not None:
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (vm + memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
'''


def unblocked(fn, fifo, seconds: float = 10):
    """fn()'s return value, or the exception it raised (returned, not raised). Fails the test if fn is still running
    after `seconds`, blocked on `fifo`: the pipe is first opened for reading and writing, which releases it."""
    outcome = []

    def run():
        try:
            outcome.append(fn())
        except BaseException as e:  # noqa: BLE001 - SystemExit too: the caller checks what came back
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        os.close(reader)
        thread.join(5)
        raise AssertionError(f"blocked on the named pipe {fifo} for {seconds} s")
    return outcome[0]


def run_limited(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python in the repository root; it may call limit(fsize=..., memory=...) (LIMITS)."""
    return subprocess.run([sys.executable, "-c", LIMITS + textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
