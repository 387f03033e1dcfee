"""Files the project writes and later trusts (cached results, checkpoints, splits, token arrays), written
atomically beside a SHA-256 record and checked on every read, so that nothing corrupt, truncated or
half-written is ever used.

A file ``f`` is written to a temporary sibling, flushed and renamed over ``f``; then its record ``f.sha256``
(``<hex digest> <size>``) is written the same way. A crash between the two leaves ``f`` without a record,
which reads as unverified. Every read hashes the bytes it parses: a flipped byte, a truncation, a missing
record or content that does not parse raises :class:`attnlab.errors.CorruptFile`, naming the file.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from attnlab.errors import CorruptFile

SUFFIX = ".sha256"


def record_path(path: Path) -> Path:
    """Where the checksum record of ``path`` lives: ``<path>.sha256``."""
    return path.with_name(path.name + SUFFIX)


class WriteFailed(OSError):
    """A file could not be written (most often a full disk): names the file and the space left."""


def make_parent(path: Path) -> None:
    """Create the folder of ``path``; a file where it (or a folder above it) should be, or a folder that
    cannot be made, raises `WriteFailed` naming ``path`` and what stands in the way."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), path.parent)
        raise WriteFailed(
            f"could not write {path}: {blocking} is a file, not a folder; move it away or choose another "
            "folder"
        ) from None
    except OSError as err:  # a read-only folder above it, a full disk
        reason = err.strerror or str(err)
        raise WriteFailed(f"could not write {path}: its folder cannot be made ({reason})") from err


def atomic(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """``write(f)`` into a temporary sibling of ``path``, flushed to disk, then renamed over ``path``. A
    failed write (``torch.save`` reports a full disk as "inline_container ... unexpected pos") raises
    `WriteFailed` naming ``path`` and the free space on its disk; nothing is left behind. A file where its
    folder (or a folder above it) should be is named the same way (`make_parent`)."""
    path = Path(path)
    make_parent(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:
        if isinstance(err, WriteFailed):
            raise
        free = shutil.disk_usage(path.parent).free
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise WriteFailed(
            f"could not write {path} ({reason}); {free / 2**20:,.0f} MiB free on its disk"
        ) from err
    finally:
        tmp.unlink(missing_ok=True)


def _digest(path: Path) -> tuple[str, int]:
    """Hex SHA-256 and size of a file, read in 1 MiB blocks (a large checkpoint is never held twice)."""
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


@functools.cache
def _digest_of_version(path: str, _version: tuple[int, ...]) -> str:
    return _digest(Path(path))[0]


def digest_once(path: Path) -> str:
    """The hex SHA-256 of ``path``, computed once per version of the file in this process: large files that
    are opened often (a checkpoint, token shards, a converted model) are hashed once. A version is the file's
    device, inode, size, modification and change times: a file replaced by a rename (a new inode), or written
    in place with its modification time set back (the change time, which no user call can set back, moves)
    is hashed again. Only a change that bypasses the filesystem (bit rot on the disk) goes unseen until the
    next process."""
    st = Path(path).stat()
    version = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return _digest_of_version(str(Path(path).resolve()), version)


def write_with(path: Path, write: Callable[[IO[bytes]], object]) -> str:
    """``write(f)`` (``torch.save``, ``np.save``, ...) into ``path`` atomically, then its record; return the
    hex SHA-256."""
    path = Path(path)
    make_parent(path)
    record_path(path).unlink(missing_ok=True)  # never a new file beside an old record
    atomic(path, write)
    digest, size = _digest(path)
    atomic(record_path(path), lambda f: f.write(f"{digest} {size}\n".encode()))
    return digest


def write_bytes(path: Path, data: bytes) -> str:
    """:func:`write_with` of ``data``."""
    return write_with(path, lambda f: f.write(data))


def verify(path: Path) -> None:
    """Check ``path`` against its record without keeping its bytes; :class:`CorruptFile` when it is missing,
    has no valid record, or its size or SHA-256 differs from what was written."""
    path = Path(path)
    if not path.is_file():
        raise CorruptFile(path, "missing")
    try:
        digest, size = record_path(path).read_text().split()
    except (FileNotFoundError, ValueError):
        raise CorruptFile(
            path, "no valid checksum record (written by an older version, or interrupted)"
        ) from None
    got, got_size = _digest(path)
    if got_size != int(size):
        raise CorruptFile(path, f"truncated or extended: {got_size} bytes, {size} were written")
    if got != digest:
        raise CorruptFile(path, "its contents changed since it was written (SHA-256 mismatch)")


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path`` after :func:`verify`."""
    verify(path)
    return Path(path).read_bytes()


def discard(path: Path) -> None:
    """Remove ``path`` and its record (before rebuilding it)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    record_path(path).unlink(missing_ok=True)


def save(obj: Any, path: Path) -> str:
    """``torch.save(obj)`` to ``path`` through :func:`write_bytes`."""
    return write_with(path, lambda f: torch.save(obj, f))


def load(path: Path, **kwargs: Any) -> Any:
    """``torch.load`` of a file written by :func:`save`, verified first (``kwargs`` go to ``torch.load``;
    ``weights_only=True`` unless given). Unparseable content raises :class:`CorruptFile` too."""
    verify(path)
    kwargs.setdefault("weights_only", True)
    try:
        return torch.load(path, **kwargs)
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError) as err:
        raise CorruptFile(path, f"cannot be read by torch.load ({str(err).splitlines()[0]})") from err


def load_or_discard(path: Path, unused: str, then: str, **kwargs: Any) -> Any | None:
    """:func:`load` of ``path``, or None when there is none. One that fails its check is discarded with a
    message on stderr (``"<unused>: <what is wrong>; <then>"``) and None is returned, so that the caller
    rebuilds it: a corrupt cached result or checkpoint is never used."""
    if not Path(path).exists():
        return None
    try:
        return load(path, **kwargs)
    except CorruptFile as err:
        print(f"{unused}: {err}; {then}", file=sys.stderr)
        discard(path)
        return None


def save_array(array: np.ndarray, path: Path) -> str:
    """``np.save(array)`` to ``path`` through :func:`write_bytes`."""
    return write_with(path, lambda f: np.save(f, array))


def load_array(path: Path) -> np.ndarray:
    """An array written by :func:`save_array`, verified first."""
    data = read_bytes(path)
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise CorruptFile(path, f"is not a readable .npy array ({err})") from err


def write_text(path: Path, text: str) -> str:
    """UTF-8 ``text`` to ``path`` through :func:`write_bytes`."""
    return write_bytes(path, text.encode("utf-8"))


def read_text(path: Path) -> str:
    """The verified UTF-8 text of ``path``."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptFile(path, f"is not UTF-8 text ({err})") from err
