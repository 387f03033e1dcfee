"""XSA beyond the paper's setting (attnlab.papers.xsa.variants, .subword): the compact subword corpus, the
variants' runs and their rows in runs.csv, and what the cpu preset promises (three sizes spanning 8x,
lengths to 1,024, five seeds of each variant)."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.data import shards
from attnlab.papers import xsa
from attnlab.papers.xsa import experiment as xsa_experiment
from attnlab.papers.xsa import records, subword, variants
from attnlab.training.cache import corpus_fingerprint, corpus_tokens
from attnlab.training.trainer import TrainResult


def test_compact_renumbers_the_train_vocabulary_and_marks_unseen_validation_tokens():
    out, vocabulary, unseen = subword.compact(
        {"train": np.array([5, 9, 5, 2]), "validation": np.array([9, 7, 2])}
    )
    assert vocabulary.tolist() == [2, 5, 9]  # in the order of the original ids
    assert out["train"].tolist() == [1, 2, 1, 0]
    assert out["validation"].tolist() == [2, 3, 0] and unseen == 1  # 7 never trained on: the extra id 3


class _Tokenizer:
    """A character tokenizer standing in for SmolLM2's: id = code point + 1, "<|endoftext|>" is 0."""

    unk_token, unk_token_id = "<|endoftext|>", 0

    def __init__(self, folder):
        self.name_or_path = str(folder)

    def convert_tokens_to_ids(self, token):
        return 0 if token == "<|endoftext|>" else None

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[ord(c) + 1 for c in t] for t in texts]}


@pytest.fixture
def tiny_corpus(tmp_path, monkeypatch):
    """A two-document corpus "tiny" and the character tokenizer, in place of Shakespeare and SmolLM2's."""
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    files = {}
    for split, docs in {"train": ["abca", "bcd"], "validation": ["abx"]}.items():
        files[split] = tmp_path / f"{split}.jsonl"
        files[split].write_text("\n".join(json.dumps({"text": d}) for d in docs))
    tok_dir = tmp_path / "tok"
    tok_dir.mkdir()
    (tok_dir / "tokenizer.json").write_text("{}")
    corpora = subword.corpora
    monkeypatch.setattr(corpora, "corpus_names", lambda: ["tiny"])
    monkeypatch.setattr(corpora, "prepare_splits", lambda name: files)
    monkeypatch.setattr(
        corpora, "read_split", lambda path: [json.loads(x) for x in path.read_text().splitlines()]
    )
    monkeypatch.setattr(corpora, "fingerprint", lambda name: "f1")
    calls = []

    def tokenizer(name):
        calls.append(name)
        return _Tokenizer(tok_dir)

    monkeypatch.setattr(subword, "_tokenizer", tokenizer)
    return tok_dir


def test_the_subword_corpus_is_a_shard_folder_training_reads(tiny_corpus):
    folder = subword.subword_corpus("tiny", "smollm2")
    meta = shards.read_meta(folder)
    # train ids: the separator 0 and a b c d -> 98 99 100 101; x (121) only in validation
    assert meta["vocabulary"] == [0, 98, 99, 100, 101] and meta["vocab_size"] == 6
    assert meta["unseen_validation_tokens"] == 1 and meta["tokenizer"] == "smollm2-compact"
    tokens = corpus_tokens(folder)
    assert tokens["train"][torch.arange(8)].tolist() == [1, 2, 3, 1, 0, 2, 3, 4]  # "abca", separator, "bcd"
    assert tokens["validation"][torch.arange(3)].tolist() == [1, 2, 5]
    first = corpus_fingerprint(folder)
    assert subword.subword_corpus("tiny", "smollm2") == folder and corpus_fingerprint(folder) == first
    (tiny_corpus / "tokenizer.json").write_text('{"changed": 1}')  # another tokenizer file: written again
    subword.subword_corpus("tiny", "smollm2")
    assert corpus_fingerprint(folder) != first
    assert "5 token types of the train split (+1 for the 1 validation tokens unseen" in subword.describe(
        folder
    )


def test_variant_specs_change_only_what_the_variant_names(tiny_corpus):
    exp = xsa.configure(scale="smoke", device="cpu")
    v = exp.preset.variants
    folder = subword.subword_corpus("tiny", v.tokenizer)
    byte = exp.spec(v.size, "xsa", 1, 3e-3)
    sub = exp.spec(v.size, "xsa", 1, 3e-3, subword=folder)
    assert byte.model.vocab_size == 256 and byte.model.n_kv_head is None and byte.corpus == exp.preset.corpus
    assert sub.model.vocab_size == 6 and sub.corpus == folder
    assert (sub.train.steps, sub.train.batch_size) == (v.subword_steps, v.subword_batch)
    assert sub.train.seq_len == byte.train.seq_len and sub.train.lr == byte.train.lr
    grouped = exp.spec(v.size, "xsa", 1, 3e-3, n_kv_head=v.n_kv_head)
    assert grouped.model.kv_heads == v.n_kv_head < grouped.model.n_head
    assert grouped.train == byte.train and grouped.corpus == byte.corpus
    unbuilt = exp.spec(v.size, "sa", 0, subword=str(tiny_corpus / "nothing"))  # planning: the full vocabulary
    assert unbuilt.model.vocab_size == subword.FULL_VOCABULARY[v.tokenizer]


def _fake_launch(spec, *, device, label, micro_tokens):
    steps, every = spec.train.steps, spec.train.eval_every
    val_steps = list(range(0, steps + 1, every))
    loss = 3.0 + 0.01 * spec.train.seed - 0.05 * (spec.model.attn == "xsa") + 0.001 * spec.model.kv_heads
    loss += 1.0 * (spec.model.vocab_size != 256)  # the subword corpus
    history = {"train_loss": [loss] * steps, "val_step": val_steps, "val_loss": [loss] * len(val_steps)}
    return TrainResult(None, history, {"tokens_per_step": 1}, cached=False)  # type: ignore[arg-type]


def test_variant_runs_train_every_setting_and_enter_runs_csv_once(tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setattr(xsa_experiment, "launch", _fake_launch)
    monkeypatch.setattr(xsa.XSAExperiment, "prefetch", lambda self, specs: None)
    monkeypatch.setattr(subword.corpora, "corpus_names", lambda: ["tiny", "shakespeare"])
    exp = xsa.configure(scale="smoke", device="cpu")
    monkeypatch.setattr(variants, "subword_corpus", lambda corpus, tok: subword.subword_corpus("tiny", tok))
    grids = exp.tune()
    frame = exp.variant_runs(grids)
    v = exp.preset.variants
    assert set(frame.columns) == set(variants.VARIANT_COLUMNS)
    sub, grouped = frame[frame["setting"] == xsa.SUBWORD], frame[frame["setting"] == xsa.GROUPED]
    assert sorted(set(sub["kind"])) == sorted((*xsa.KINDS, *xsa.CONTROLS)) and set(grouped["kind"]) == set(
        xsa.KINDS
    )
    assert set(frame["seed"]) == set(exp.seeds[: v.seeds]) and (frame["lr"] == grids[v.size].best).all()
    assert (grouped["n_kv_head"] == v.n_kv_head).all() and (
        sub["tokenizer"] == f"{v.tokenizer}-compact"
    ).all()
    assert (sub["validation"] > 3.5).all()  # its own run, not the byte run of the same seed
    table = records.run_table(exp, grids, exp.train_all(grids), pd.DataFrame(), pd.DataFrame(), frame)
    assert len(table[table["tokenizer"] == f"{v.tokenizer}-compact"]) == len(sub)
    assert len(table[table["n_kv_head"] == v.n_kv_head]) == len(grouped)
    finals = variants.variant_finals(frame)
    assert ("validation", "xsa-prev") in finals.columns and f"{v.size} {xsa.SUBWORD}" in finals.index.levels[
        0
    ]


def test_cpu_preset_spans_sizes_lengths_and_variants():
    exp = xsa.configure(scale="cpu", device="cpu")
    params = exp.size_parameters()
    assert len(params) >= 3 and max(params.values()) / min(params.values()) >= 8
    sw = exp.preset.sweep
    assert max(sw.seq_lens) >= 1024 and sw.seeds >= 3
    base = exp.spec(sw.size, "sa", 0)
    for n in sw.seq_lens:  # tokens per batch held fixed
        spec = exp.spec(sw.size, "sa", 0, seq_len=n)
        assert spec.train.batch_size * n == base.train.batch_size * base.train.seq_len
        assert spec.model.block_size >= n
    v = exp.preset.variants
    assert (
        v is not None
        and v.size == sw.size
        and v.seeds >= 5
        and v.n_kv_head < exp.preset.sizes[v.size].model.n_head
    )
    runs = exp.planned_runs()
    for seed in exp.seeds[: v.seeds]:
        for kind in (*xsa.KINDS, *xsa.CONTROLS):
            assert f"{v.size} {v.tokenizer} tokens {kind.upper()} s{seed}" in runs
        for kind in xsa.KINDS:
            assert f"{v.size} {v.n_kv_head} KV heads {kind.upper()} s{seed}" in runs
