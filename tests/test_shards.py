"""Token shards: exact round trips, local and hub sources through one streaming call, tokenizers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.data import corpora as data
from attnlab.data import shards, tokenizer
from attnlab.training.trainer import sample_batch, validation_windows


def _jsonl(path: Path, texts: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return path


def test_writer_and_reader_round_trip_tokens_across_files(tmp_path):
    rng = np.random.default_rng(0)
    chunks = [rng.integers(0, 2**16, n, dtype=np.int64) for n in (700, 1, 0, 2300)]
    chunks[0][:2] = (0, 2**16 - 1)  # both ends of the uint16 range
    writer = shards.ShardWriter(tmp_path, "train", np.dtype("<u2"), shard_tokens=1000)
    for chunk in chunks:
        writer.write(chunk)
    writer.close()
    assert [f["tokens"] for f in writer.files] == [1000, 1000, 1000, 1]
    expected = torch.from_numpy(np.concatenate(chunks))
    tokens = shards.TokenShards([tmp_path / f["file"] for f in writer.files], np.dtype("<u2"))
    assert len(tokens) == len(expected)
    assert torch.equal(tokens[torch.arange(len(expected))], expected)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    for got, want in zip(sample_batch(tokens, 64, 100, g1), sample_batch(expected, 64, 100, g2), strict=True):
        assert torch.equal(got, want)  # windows that cross file boundaries included
    assert torch.equal(validation_windows(tokens, 8, 500), validation_windows(expected, 8, 500))
    with pytest.raises(ValueError, match="outside the range"):
        writer.write(np.array([2**16]))
    with pytest.raises(IndexError):
        tokens[torch.tensor([len(expected)])]


def test_a_local_corpus_streams_to_the_byte_tokens_of_load_tokens(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    docs = [("a", "First line.\nSecond line, é.\n\n" * 30), ("b", "Another work.\n" * 50)]
    monkeypatch.setitem(data._CORPORA, "tiny", lambda: docs)
    monkeypatch.setattr(data, "fingerprint", lambda name, val_fraction=0.1: "fixed")
    folder = shards.write_shards(
        shards.local_source("tiny"), tmp_path / "shards", tokenizer="byte", shard_tokens=300
    )
    meta = shards.read_meta(folder)
    assert meta["dtype"] == "<u2" and meta["tokenizer"] == "byte" and meta["vocab_size"] == 256
    assert len(meta["splits"]["train"]) > 1
    opened, expected = shards.open_shards(folder), data.load_tokens("tiny")
    for split in data.SPLITS:
        assert torch.equal(opened[split][torch.arange(len(opened[split]))], expected[split].long())
    # an unchanged request reuses the folder; a different one rewrites it
    mtime = (folder / shards.META).stat().st_mtime_ns
    assert (
        shards.write_shards(shards.local_source("tiny"), folder, tokenizer="byte", shard_tokens=300) == folder
    )
    assert (folder / shards.META).stat().st_mtime_ns == mtime
    shards.write_shards(shards.local_source("tiny"), folder, tokenizer="byte", max_tokens=10)
    assert len(shards.open_shards(folder)["train"]) < len(expected["train"])
    assert len(list(folder.glob("train-*.bin"))) == 1  # the earlier files are gone


def test_local_dataset_folder_and_hub_name_take_the_same_streaming_call(tmp_path, monkeypatch):
    repo = tmp_path / "my-dataset"  # laid out as a hub dataset repository: split names from file names
    _jsonl(repo / "train.jsonl", ["doc one", "doc two", "doc three"])
    _jsonl(repo / "validation.jsonl", ["held out"])
    local = shards.DatasetSource(str(repo), splits={"train": "train", "validation": "validation"})
    assert list(shards.stream_documents(local, "train")) == ["doc one", "doc two", "doc three"]

    import datasets

    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        return iter([{"text": f"web page {i}"} for i in range(5)])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    hub = shards.SOURCES["fineweb"]
    folder = shards.write_shards(
        shards.DatasetSource(hub.path, hub.name, val_documents=2), tmp_path / "web", tokenizer="byte"
    )
    assert calls == [
        ("HuggingFaceFW/fineweb", "sample-10BT", {"split": "train", "data_files": None, "streaming": True})
    ]
    text = {
        split: bytes(t[torch.arange(len(t))].tolist()).decode()
        for split, t in shards.open_shards(folder).items()
    }
    assert text == {
        "validation": "web page 0\n\nweb page 1",
        "train": "web page 2\n\nweb page 3\n\nweb page 4",
    }


def test_gpt2_tokenizer_from_a_local_folder_and_the_byte_fallback(tmp_path, monkeypatch):
    vocab = {"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3}
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "tok" / "merges.txt").write_text("#version: 0.2\na b\n")
    files = {"train": str(_jsonl(tmp_path / "d.jsonl", ["ab", "ba"]))}
    source = shards.DatasetSource("json", data_files=files, val_documents=0)
    folder = shards.write_shards(source, tmp_path / "bpe", tokenizer=str(tmp_path / "tok"))
    train = shards.open_shards(folder)["train"]
    assert train[torch.arange(len(train))].tolist() == [2, 3, 1, 0]  # "ab", <|endoftext|>, "b", "a"
    assert shards.read_meta(folder)["vocab_size"] == 4
    # evaluation text is encoded as the shards were: the same BPE, found again from shards.json
    tok = shards.shard_tokenizer(shards.read_meta(folder))
    assert [t.tolist() for t in tok.encode_batch(["abba", "ab"])] == [[2, 1, 0], [2]]

    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="no GPT-2 tokenizer files"):  # transformers would load an empty BPE
        tokenizer.GPT2Tokenizer(str(tmp_path / "empty"))

    def unavailable(name, local_files_only):
        assert local_files_only  # "auto" never waits on the network
        raise OSError("no files offline")

    monkeypatch.setattr(tokenizer, "GPT2Tokenizer", unavailable)
    assert isinstance(tokenizer.load_tokenizer("auto"), tokenizer.ByteTokenizer)
