"""XSA with subword tokens (not in the paper, which trains on GPT-2's BPE; docs/papers/xsa.md "Variants"): a
corpus of this project (:mod:`attnlab.data.corpora`, Shakespeare at the byte scales) in the subword tokens of
a pinned pretrained model's tokenizer (SmolLM2-135M's byte-level BPE of 49,152 types, offline from its
registry artifact through :func:`attnlab.hf.checkpoint`), written once as token shards in
:mod:`attnlab.data.shards`' layout, which training reads like any other shard folder.

The vocabulary is compacted: the token ids that occur in the train split (and the document separator) are
renumbered 0..V-1 in the order of their original ids, and every validation token that never occurs in the
train split becomes one further id, ``V`` (no model could predict it from training; it is counted in
``shards.json``). The text is cut into tokens exactly as the tokenizer cuts it; only the output layer is
spared the ~30,000 types Shakespeare never uses (18,737 of 49,152 occur in its train split), which would cost
two thirds of every step and carry no gradient but the push down of their logits.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from attnlab import paths
from attnlab.data import corpora, shards
from attnlab.data.artifacts import sha256_file
from attnlab.locks import exclusive

#: The full vocabulary of each tokenizer a variant may use: a bound on the compact one, for planning a run
#: before its corpus is built (``XSAExperiment.planned_runs``).
FULL_VOCABULARY = {"smollm2": 49152}
#: The token that separates documents, as the tokenizer's pretraining separated them.
SEPARATOR = "<|endoftext|>"
#: The version of this construction, part of every folder's request: a change writes the folder again.
VERSION = 1


def folder(corpus: str, tokenizer: str) -> Path:
    """Where the subword shards of ``corpus`` in ``tokenizer``'s tokens live (inside the data folder)."""
    return paths.data_dir() / "shards" / f"{corpus}-{tokenizer}"


def built(corpus: str, tokenizer: str) -> bool:
    """Whether the shards of ``corpus`` in ``tokenizer``'s tokens are complete."""
    return (folder(corpus, tokenizer) / shards.META).is_file()


def _tokenizer(name: str):  # -> a transformers tokenizer (the import stays inside: an optional dependency)
    from transformers import AutoTokenizer

    from attnlab.hf import checkpoint

    return AutoTokenizer.from_pretrained(checkpoint(name), local_files_only=True)


def subword_corpus(corpus: str, tokenizer: str) -> str:
    """The shard folder of ``corpus`` (an :mod:`attnlab.data.corpora` name) in the compact subword tokens of
    the pinned model ``tokenizer`` (see the module's docstring), written once and reused while its request
    (corpus fingerprint, tokenizer file, construction version) is unchanged. Returns its absolute path, a
    corpus for :class:`attnlab.training.cache.RunSpec` (its cache key is the folder's fingerprint, not its
    path)."""
    if corpus not in corpora.corpus_names():
        names = corpora.corpus_names()
        raise ValueError(f"subword tokens are built from a named corpus ({names}); got {corpus!r}")
    out = folder(corpus, tokenizer)
    meta_path = out / shards.META
    with exclusive(out, f"subword corpus {out.name}"):
        tok = _tokenizer(tokenizer)
        source = Path(tok.name_or_path) / "tokenizer.json"
        request = {
            "corpus": corpus, "corpus_fingerprint": corpora.fingerprint(corpus), "tokenizer": tokenizer,
            "tokenizer_sha256": sha256_file(source), "version": VERSION,
        }  # fmt: skip
        if meta_path.is_file() and json.loads(meta_path.read_text()).get("request") == request:
            return str(out)
        _write(out, corpus, tok, request)
    return str(out)


def _encode(tok, corpus: str) -> dict[str, np.ndarray]:
    """Each split of ``corpus`` in ``tok``'s original ids, documents joined by :data:`SEPARATOR`."""
    separator = tok.convert_tokens_to_ids(SEPARATOR)
    if separator is None or (separator == tok.unk_token_id and tok.unk_token != SEPARATOR):
        raise ValueError(f"the tokenizer has no {SEPARATOR} token to separate documents")
    out = {}
    for split, path in corpora.prepare_splits(corpus).items():
        texts = [row["text"] for row in corpora.read_split(path)]
        ids = tok(texts, add_special_tokens=False)["input_ids"]
        pieces: list[np.ndarray] = []
        for i, doc in enumerate(ids):
            if i:
                pieces.append(np.array([separator]))
            pieces.append(np.asarray(doc, dtype=np.int64))
        out[split] = np.concatenate(pieces)
    return out


def compact(original: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    """Renumber the train split's ids 0..V-1 in the order of their original ids; a validation id the train
    split lacks becomes ``V``. Returns the compact splits, the original id of each compact one (V of them)
    and how many validation tokens were unseen."""
    vocabulary = np.unique(original["train"])
    out = {}
    for split, ids in original.items():
        index = np.searchsorted(vocabulary, ids).clip(max=len(vocabulary) - 1)
        known = vocabulary[index] == ids
        if split == "train" and not known.all():
            raise AssertionError("a train token outside the train vocabulary")
        out[split] = np.where(known, index, len(vocabulary))
    unseen = int((out["validation"] == len(vocabulary)).sum()) if "validation" in out else 0
    return out, vocabulary, unseen


def _write(out: Path, corpus: str, tok, request: dict) -> None:
    """Tokenise, compact and write the shards of ``corpus`` into ``out`` (``shards.json`` last)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / shards.META).unlink(missing_ok=True)
    for stale in out.glob("*.bin"):
        stale.unlink()
    splits, vocabulary, unseen = compact(_encode(tok, corpus))
    vocab_size = len(vocabulary) + 1  # the unseen-in-training id
    dtype = np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<u4")
    fingerprint = hashlib.sha256(json.dumps(request, sort_keys=True).encode())
    fingerprint.update(vocabulary.astype("<i8").tobytes())
    files = {}
    for split, ids in splits.items():
        writer = shards.ShardWriter(out, split, dtype, shard_tokens=100_000_000)
        writer.write(ids)
        writer.close()
        fingerprint.update(writer.digest.digest())
        files[split] = writer.files
    meta = {
        "format": shards.FORMAT, "dtype": dtype.str, "tokenizer": f"{request['tokenizer']}-compact",
        "vocab_size": vocab_size, "splits": files, "fingerprint": fingerprint.hexdigest()[:16],
        "request": request, "vocabulary": vocabulary.tolist(), "unseen_validation_tokens": unseen,
    }  # fmt: skip
    tmp = out / f".{shards.META}.tmp"
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, out / shards.META)  # last, and atomically: its presence marks the folder complete


def describe(path: str) -> str:
    """What a subword shard folder holds, in words: tokens per split, the compact vocabulary, the unseen
    validation tokens."""
    meta = shards.read_meta(Path(path))
    counts = {split: sum(f["tokens"] for f in files) for split, files in meta["splits"].items()}
    return (
        f"{meta['request']['corpus']} in {meta['request']['tokenizer']}'s subword tokens: "
        f"{counts.get('train', 0):,} train and {counts.get('validation', 0):,} validation tokens, "
        f"{meta['vocab_size'] - 1:,} token types of the train split (+1 for the "
        f"{meta['unseen_validation_tokens']:,} validation tokens unseen in training)"
    )
