"""Large corpora as token shards: documents streamed from a Hugging Face ``datasets`` source, tokenised once
into memory-mapped files that training reads in place.

    python -m attnlab.data.shards fineweb --out data/shards/fineweb --tokenizer gpt2 --max-tokens 2e9

A source is a hub dataset by name (:data:`SOURCES`: FineWeb, OpenWebText; network needed) or local files
(:func:`local_source` turns an :mod:`attnlab.data.corpora` corpus into one); both are read by the same call,
``datasets.load_dataset(path, name, split=..., data_files=..., streaming=True)``.

Layout of a shard folder: ``<split>-<i>.bin`` hold raw tokens (little-endian ``uint16``, or ``uint32`` for a
vocabulary over 65,536), at most ``shard_tokens`` each, documents separated by the tokenizer's separator;
``shards.json``, written last, gives the dtype, tokenizer, vocabulary size, each file's token count and a
fingerprint of the tokens (part of the results cache key). A folder without ``shards.json`` is incomplete.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

from attnlab import verified
from attnlab.data import corpora as data
from attnlab.data.tokenizer import ByteTokenizer, GPT2Tokenizer, Tokenizer, load_tokenizer
from attnlab.errors import CorruptFile

META = "shards.json"
FORMAT = 2  # 2: each file's SHA-256 recorded in shards.json and checked when the folder is opened


# ----------------------------------------------------------------------------------------------
# sources


@dataclass(frozen=True)
class DatasetSource:
    """Arguments of ``datasets.load_dataset`` for one corpus. ``splits`` maps "train" (and "validation", if
    the source has one) to the source's split names; without a validation split, the first
    ``val_documents`` documents of the train stream are held out as validation."""

    path: str
    name: str | None = None
    data_files: dict[str, str] | None = None
    text_field: str = "text"
    splits: dict[str, str] = field(default_factory=lambda: {"train": "train"})
    val_documents: int = 2000


SOURCES: dict[str, DatasetSource] = {
    "fineweb": DatasetSource("HuggingFaceFW/fineweb", name="sample-10BT"),
    "fineweb-edu": DatasetSource("HuggingFaceFW/fineweb-edu", name="sample-10BT"),
    "openwebtext": DatasetSource("Skylion007/openwebtext"),
}


def local_source(corpus: str) -> DatasetSource:
    """An :mod:`attnlab.data.corpora` corpus as a source: its prepared train and validation JSON-lines
    files."""
    paths = data.prepare_splits(corpus)
    return DatasetSource(
        "json",
        data_files={split: str(path) for split, path in paths.items()},
        splits={split: split for split in paths},
    )


def stream_documents(source: DatasetSource, split: str) -> Iterator[str]:
    """The texts of one split of ``source``, streamed (nothing is downloaded or converted up front)."""
    import datasets

    datasets.disable_progress_bars()
    stream = datasets.load_dataset(
        source.path, source.name, split=split, data_files=source.data_files, streaming=True
    )
    for row in stream:
        yield row[source.text_field]


# ----------------------------------------------------------------------------------------------
# writing


def _dtype(vocab_size: int) -> np.dtype:
    return np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<u4")


class ShardWriter:
    """Appends tokens to ``<split>-<i>.bin`` files of at most ``shard_tokens`` tokens each."""

    def __init__(self, folder: Path, split: str, dtype: np.dtype, shard_tokens: int) -> None:
        self.folder, self.split, self.dtype, self.shard_tokens = folder, split, np.dtype(dtype), shard_tokens
        self.files: list[dict] = []  # {"file": name, "tokens": count, "sha256": hex digest}
        self.digest = hashlib.sha256()
        self._file_digest = hashlib.sha256()
        self._file: BinaryIO | None = None

    def write(self, tokens: np.ndarray) -> None:
        tokens = np.asarray(tokens)
        if tokens.size and (tokens.min() < 0 or tokens.max() > np.iinfo(self.dtype).max):
            raise ValueError(f"token ids outside the range of {self.dtype}")
        tokens = tokens.astype(self.dtype, copy=False)
        while tokens.size:
            if self._file is None or self.files[-1]["tokens"] == self.shard_tokens:
                self._open_next()
            assert self._file is not None  # opened above
            room = self.shard_tokens - self.files[-1]["tokens"]
            chunk, tokens = tokens[:room], tokens[room:]
            self._file.write(chunk.tobytes())
            self.digest.update(chunk.tobytes())
            self._file_digest.update(chunk.tobytes())
            self.files[-1]["tokens"] += len(chunk)

    @property
    def tokens(self) -> int:
        return sum(f["tokens"] for f in self.files)

    def _open_next(self) -> None:
        self.close()
        name = f"{self.split}-{len(self.files):05d}.bin"
        self._file = open(self.folder / name, "wb")  # closed by close() or the next _open_next()
        self._file_digest = hashlib.sha256()
        self.files.append({"file": name, "tokens": 0})

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self.files[-1]["sha256"] = self._file_digest.hexdigest()


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        yield batch


def _write_documents(
    documents: Iterable[str], writer: ShardWriter, tokenizer: Tokenizer, max_tokens: int | None
) -> None:
    """Tokenise ``documents`` in batches and write them, separated, stopping at ``max_tokens``."""
    first = True
    for batch in _batches(documents, 256):
        for tokens in tokenizer.encode_batch(batch):
            if not first:
                writer.write(tokenizer.separator)
            first = False
            writer.write(tokens)
            if max_tokens is not None and writer.tokens >= max_tokens:
                return


def write_shards(
    source: DatasetSource,
    folder: Path,
    *,
    tokenizer: str = "auto",
    shard_tokens: int = 100_000_000,
    max_tokens: int | None = None,
) -> Path:
    """Stream ``source``, tokenise it and write its train and validation shards into ``folder``; reuse a
    complete folder written from the same source, tokenizer and limits. ``max_tokens`` caps the train
    split (roughly: the document that crosses it is kept whole). Returns ``folder``."""
    folder = Path(folder)
    tok = load_tokenizer(tokenizer)
    request = {"source": asdict(source), "tokenizer": tok.name, "max_tokens": max_tokens}
    meta_path = folder / META
    if meta_path.is_file() and json.loads(meta_path.read_text()).get("request") == request:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    meta_path.unlink(missing_ok=True)
    for split in data.SPLITS:  # files of an earlier, different request
        for stale in folder.glob(f"{split}-*.bin"):
            stale.unlink()
    dtype = _dtype(tok.vocab_size)
    writers = {split: ShardWriter(folder, split, dtype, shard_tokens) for split in data.SPLITS}
    train_docs = stream_documents(source, source.splits["train"])
    if "validation" in source.splits:
        val_docs = stream_documents(source, source.splits["validation"])
    else:  # held out from the head of the train stream, which then continues after them
        val_docs = itertools.islice(train_docs, source.val_documents)
    _write_documents(val_docs, writers["validation"], tok, None)
    _write_documents(train_docs, writers["train"], tok, max_tokens)
    for writer in writers.values():
        writer.close()
    fingerprint = hashlib.sha256(tok.name.encode())
    for split in data.SPLITS:
        fingerprint.update(writers[split].digest.digest())
    meta = {
        "format": FORMAT,
        "dtype": dtype.str,
        "tokenizer": tok.name,
        "vocab_size": tok.vocab_size,
        "splits": {split: writers[split].files for split in data.SPLITS},
        "fingerprint": fingerprint.hexdigest()[:16],
        "request": request,
    }
    tmp = meta_path.with_name(f".{META}.tmp")
    tmp.write_text(json.dumps(meta, indent=1))
    os.replace(tmp, meta_path)  # last, and atomically: its presence marks the folder complete
    return folder


# ----------------------------------------------------------------------------------------------
# reading


class TokenShards:
    """The tokens of one split, memory-mapped: ``len()`` and integer-array indexing (``tokens[index]``,
    any shape, positions counted across files), which returns an int64 tensor of that shape. This is what
    :func:`attnlab.training.trainer.sample_batch` and :func:`attnlab.training.trainer.validation_windows`
    need."""

    def __init__(self, paths: list[Path], dtype: np.dtype) -> None:
        self.arrays = [np.memmap(p, dtype=dtype, mode="r") for p in paths if p.stat().st_size]
        self.offsets = np.cumsum([0] + [len(a) for a in self.arrays])

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, index: torch.Tensor | np.ndarray) -> torch.Tensor:
        index = np.asarray(index, dtype=np.int64)
        if index.size and (index.min() < 0 or index.max() >= len(self)):
            raise IndexError(f"token positions must lie in [0, {len(self)})")
        which = np.searchsorted(self.offsets, index, side="right") - 1
        out = np.empty(index.shape, dtype=np.int64)
        for i in np.unique(which):
            hit = which == i
            out[hit] = self.arrays[i][index[hit] - self.offsets[i]]
        return torch.from_numpy(out)


def read_meta(folder: Path) -> dict:
    """The ``shards.json`` of a complete shard folder."""
    path = Path(folder) / META
    if not path.is_file():
        raise FileNotFoundError(f"{folder} holds no complete token shards ({META} is missing)")
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(
            f"{path}: shard format {meta.get('format')!r}, this code reads {FORMAT}; write the folder again "
            "with python -m attnlab.data.shards (format 2 records each file's SHA-256)"
        )
    return meta


def shard_tokenizer(meta: dict) -> Tokenizer:
    """The tokenizer a shard folder was written with (its ``shards.json``), to encode new text the same way;
    GPT-2's from the local cache, where writing the shards put it."""
    name = meta["tokenizer"]
    if name == ByteTokenizer.name:
        return ByteTokenizer()
    if name.startswith("gpt2:"):
        return GPT2Tokenizer(name.removeprefix("gpt2:"), local_files_only=True)
    raise ValueError(f"unknown tokenizer {name!r} in {META}")


def open_shards(folder: Path) -> dict[str, TokenShards]:
    """Each split of a shard folder, memory-mapped; each file's size and SHA-256 are checked against
    ``shards.json`` (hashed once per version of the file in a process, :func:`attnlab.verified.digest_once`):
    a shard overwritten in place, even with its size unchanged, is refused."""
    folder = Path(folder)
    meta = read_meta(folder)
    dtype = np.dtype(meta["dtype"])
    out = {}
    for split, files in meta["splits"].items():
        for f in files:
            size = (folder / f["file"]).stat().st_size
            if size != f["tokens"] * dtype.itemsize:
                raise ValueError(f"{folder / f['file']}: {size} bytes, {META} says {f['tokens']} tokens")
            if verified.digest_once(folder / f["file"]) != f["sha256"]:
                raise CorruptFile(folder / f["file"], f"its SHA-256 differs from the one {META} recorded",
                                  "write the shard folder again (python -m attnlab.data.shards)")  # fmt: skip
        out[split] = TokenShards([folder / f["file"] for f in files], dtype)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.data.shards", description=__doc__.split("\n")[0])
    parser.add_argument(
        "source", help=f"a hub source ({', '.join(SOURCES)}) or an attnlab.data.corpora corpus"
    )
    parser.add_argument("--out", required=True, type=Path, help="the shard folder")
    parser.add_argument(
        "--tokenizer", default="auto", help="auto (GPT-2 if available), byte, gpt2 or a folder"
    )
    parser.add_argument("--max-tokens", type=float, help="cap on the train split's tokens, e.g. 1e9")
    parser.add_argument("--shard-tokens", type=float, default=1e8, help="tokens per file (default 1e8)")
    args = parser.parse_args(argv)
    if args.source in SOURCES:
        source = SOURCES[args.source]
    elif args.source in data.corpus_names():
        source = local_source(args.source)
    else:
        parser.error(f"unknown source {args.source!r}; choose from {[*SOURCES, *data.corpus_names()]}")
    max_tokens = None if args.max_tokens is None else int(args.max_tokens)
    folder = write_shards(
        source, args.out, tokenizer=args.tokenizer, shard_tokens=int(args.shard_tokens), max_tokens=max_tokens
    )
    for split, tokens in open_shards(folder).items():
        print(f"{split}: {len(tokens):,} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
