"""One computation at a time per result: an exclusive lock beside each cached result, so that two identical
runs started together train once (the second waits, then loads what the first stored).

The lock is ``fcntl.flock`` on a file in ``build/locks/`` named by a digest of the result's absolute path (so
the cache folders hold results only): the operating system releases it when its holder exits or is killed,
so a crashed run never leaves a lock behind that blocks the next one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnlab import paths


def lock_path(path: Path) -> Path:
    """The lock file of a result at ``path`` (a file or a folder): ``build/locks/<path digest>.lock``."""
    digest = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:24]
    return paths.build_dir() / "locks" / f"{digest}.lock"


@contextmanager
def exclusive(path: Path, label: str = "") -> Iterator[bool]:
    """Hold the lock of ``path`` for the block; wait (saying so) while another process holds it. Yields
    whether it had to wait, i.e. whether another process may have stored the result meanwhile."""
    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        waited = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"{label or path.name}: another process is computing this result; waiting for it", flush=True
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
            waited = True
        yield waited
    finally:
        os.close(fd)  # closing releases the lock


def alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (this one's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_locked(path: Path) -> bool:
    """Whether a live process holds the lock of ``path`` now."""
    lock = lock_path(path)
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
