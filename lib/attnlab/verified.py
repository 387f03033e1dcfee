"""Files the project writes and later trusts (cached results, checkpoints, splits, token arrays), written
atomically beside a SHA-256 record and checked on every read, so that nothing corrupt, truncated or
half-written is ever used.

A file ``f`` is written to a temporary sibling, flushed and renamed over ``f``; then its record ``f.sha256``
(``<hex digest> <size>``) is written the same way. A crash between the two leaves ``f`` without a record,
which reads as unverified. Every read hashes the bytes it parses: a flipped byte, a truncation, a missing
record or content that does not parse raises :class:`attnlab.errors.CorruptFile`, naming the file.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
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


def _atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(path: Path, data: bytes) -> str:
    """Write ``data`` to ``path`` atomically, then its record; return the hex SHA-256."""
    path = Path(path)
    digest = hashlib.sha256(data).hexdigest()
    record_path(path).unlink(missing_ok=True)  # never a new file beside an old record
    _atomic(path, data)
    _atomic(record_path(path), f"{digest} {len(data)}\n".encode())
    return digest


def write_with(path: Path, write: Callable[[IO[bytes]], None]) -> str:
    """``write(f)`` into memory, then :func:`write_bytes` (for ``np.save``, ``json.dump`` and the like)."""
    buffer = io.BytesIO()
    write(buffer)
    return write_bytes(path, buffer.getvalue())


def is_recorded(path: Path) -> bool:
    """Whether ``path`` and its record both exist (it may still fail verification)."""
    path = Path(path)
    return path.is_file() and record_path(path).is_file()


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path`` after checking them against its record; :class:`CorruptFile` otherwise."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CorruptFile(path, "missing") from None
    try:
        digest, size = record_path(path).read_text().split()
    except (FileNotFoundError, ValueError):
        raise CorruptFile(
            path, "no valid checksum record (written by an older version, or interrupted)"
        ) from None
    if len(data) != int(size):
        raise CorruptFile(path, f"truncated or extended: {len(data)} bytes, {size} were written")
    if hashlib.sha256(data).hexdigest() != digest:
        raise CorruptFile(path, "its contents changed since it was written (SHA-256 mismatch)")
    return data


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
    data = read_bytes(path)
    kwargs.setdefault("weights_only", True)
    try:
        return torch.load(io.BytesIO(data), **kwargs)
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError) as err:
        raise CorruptFile(path, f"cannot be read by torch.load ({str(err).splitlines()[0]})") from err


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
