"""Data-parallel training on the CPU (gloo): two processes sharing one global batch compute what one process
does, with DDP and with FSDP; an interrupted two-process run resumes exactly; ``launch`` runs torchrun."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from attnlab.data import shards
from attnlab.errors import TrainingDiverged
from attnlab.model import GPTConfig
from attnlab.training import cache, distributed
from attnlab.training.cache import RunSpec, corpus_tokens
from attnlab.training.launch import DIVERGED, launch, main, micro_rows
from attnlab.training.trainer import TrainConfig, train

MODEL = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=32, attn="xsa")
CFG = TrainConfig(
    steps=8, batch_size=4, seq_len=32, lr=3e-3, warmup_steps=2, eval_every=4, eval_batches=2,
    checkpoint_every=3,
)  # fmt: skip
INTERRUPT_AT = 5  # after the checkpoint at step 3


def _data() -> dict[str, torch.Tensor]:
    text = torch.randint(0, 40, (4000,), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    return {"train": text[:3500], "validation": text[3500:]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_at(step: int) -> None:
    if step == INTERRUPT_AT:
        raise KeyboardInterrupt


def _worker(rank: int, world: int, port: int, folder: Path) -> None:
    """One rank, as torchrun would start it: a full run, then an interrupted and a resumed one, with DDP and
    with FSDP; rank 0 saves what the test compares."""
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )  # fmt: skip
    torch.set_num_threads(1)
    try:
        for mode in ("ddp", "fsdp"):
            fsdp = mode == "fsdp"
            full = train(MODEL, CFG, _data(), device="cpu", progress=False, fsdp=fsdp)
            run = folder / mode
            with contextlib.suppress(KeyboardInterrupt):
                train(
                    MODEL,
                    CFG,
                    _data(),
                    device="cpu",
                    run_dir=run,
                    progress=False,
                    on_step=_stop_at,
                    fsdp=fsdp,
                )
            checkpoint_step = torch.load(run / "checkpoint.pt", weights_only=True)["step"]
            resumed = train(MODEL, CFG, _data(), device="cpu", run_dir=run, progress=False, fsdp=fsdp)
            micro = train(MODEL, CFG, _data(), device="cpu", progress=False, fsdp=fsdp, micro_batch=1)
            if rank == 0:
                torch.save(
                    {
                        "full": (full.history, full.model.state_dict()),
                        "micro": (micro.history, micro.model.state_dict()),
                        "resumed": (resumed.history, resumed.model.state_dict()),
                        "checkpoint_step": checkpoint_step,
                    },
                    folder / f"{mode}.pt",
                )
    finally:
        distributed.destroy()


def _assert_close_runs(history: dict, weights: dict, ref_history: dict, ref_weights: dict) -> None:
    for key in ("step", "lr", "val_step"):
        assert history[key] == ref_history[key]
    for key in ("train_loss", "val_loss"):
        torch.testing.assert_close(
            torch.tensor(history[key]), torch.tensor(ref_history[key]), rtol=1e-5, atol=0
        )
    for name, value in ref_weights.items():
        torch.testing.assert_close(weights[name], value, rtol=1e-4, atol=1e-5, msg=name)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ranks")
    mp.spawn(_worker, args=(2, _free_port(), folder), nprocs=2)
    return folder


@pytest.fixture(scope="module")
def reference():
    torch.set_num_threads(1)
    return train(MODEL, CFG, _data(), device="cpu", progress=False)


@pytest.mark.slow  # two processes
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_processes_match_one_with_the_same_global_batch(two_ranks, reference, mode):
    saved = torch.load(two_ranks / f"{mode}.pt", weights_only=True)
    for run in ("full", "micro"):  # micro: each rank's 2 rows in 2 passes
        history, weights = saved[run]
        _assert_close_runs(history, weights, reference.history, reference.model.state_dict())


@pytest.mark.slow  # two processes
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_interrupted_two_process_run_resumes_exactly(two_ranks, mode):
    saved = torch.load(two_ranks / f"{mode}.pt", weights_only=True)
    assert saved["checkpoint_step"] == 3
    (full_history, full_weights), (history, weights) = saved["full"], saved["resumed"]
    assert history == full_history
    for name, value in full_weights.items():
        assert torch.equal(weights[name], value), name
    # one writer, no temporaries: the checkpoint and its checksum record
    assert sorted(p.name for p in (two_ranks / mode).iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256"]


def test_a_batch_that_does_not_split_evenly_is_refused():
    assert distributed.Context(rank=1, world_size=2).shard(4) == slice(2, 4)
    with pytest.raises(ValueError, match="cannot be split evenly over 3 processes"):
        distributed.Context(rank=0, world_size=3).shard(4)
    with pytest.raises(ValueError, match="micro_batch=3 does not divide the 4 rows"):
        train(MODEL, CFG, _data(), device="cpu", progress=False, micro_batch=3)


def test_a_micro_batch_above_the_rows_is_one_pass_and_token_budgets_become_rows():
    whole = train(MODEL, CFG, _data(), device="cpu", progress=False)
    capped = train(MODEL, CFG, _data(), device="cpu", progress=False, micro_batch=64)
    assert capped.history == whole.history
    # a preset's tokens per pass: the same memory at every context length, never less than one row
    assert [micro_rows(T, 8 * 2048) for T in (512, 2048, 16384, 32768)] == [32, 8, 1, 1]
    assert micro_rows(512, None) is None
    with pytest.raises(ValueError, match="micro_tokens"):
        micro_rows(512, 0)


@pytest.fixture(scope="module")
def shard_corpus(tmp_path_factory) -> str:
    """A folder of byte-token shards written from two local JSON-lines files."""
    folder = tmp_path_factory.mktemp("corpus")
    docs = {"train": ["the cat sat on the mat. " * 40] * 20, "validation": ["a dog ran. " * 40] * 4}
    files = {}
    for split, texts in docs.items():
        files[split] = folder / f"{split}.jsonl"
        files[split].write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    splits = {"train": "train", "validation": "validation"}
    source = shards.DatasetSource("json", data_files={k: str(v) for k, v in files.items()}, splits=splits)
    return str(shards.write_shards(source, folder / "shards", tokenizer="byte"))


@pytest.mark.slow  # torchrun, two processes
def test_launch_runs_torchrun_and_stores_the_result_in_the_cache(shard_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    spec = RunSpec(MODEL, CFG, shard_corpus)
    result = launch(spec, nproc=2, device="cpu", progress=False)
    assert not result.cached
    reference = train(MODEL, CFG, corpus_tokens(shard_corpus), device="cpu", progress=False)
    _assert_close_runs(
        result.history, result.model.state_dict(), reference.history, reference.model.state_dict()
    )
    again = launch(spec, nproc=2, device="cpu", progress=False)  # no torchrun: the cached result is loaded
    assert again.cached and again.history == result.history


def test_command_line_keeps_a_run_in_out_and_resumes_only_when_asked(shard_corpus, tmp_path, capsys):
    (tmp_path / "model.json").write_text(
        json.dumps({"n_layer": 1, "d_model": 16, "n_head": 2, "head_dim": 8})
    )
    train_args = ["steps=3", "batch_size=2", "seq_len=16", "warmup_steps=1", "eval_every=2", "eval_batches=1"]
    argv = [
        "--model-config", str(tmp_path / "model.json"), "block_size=16", "--train-config", *train_args,
        "betas=[0.9, 0.99]", "--corpus", shard_corpus, "--device", "cpu", "--quiet",
        "--out", str(tmp_path / "run"),
    ]  # fmt: skip
    assert main(argv) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"]["n_layer"] == 1 and config["train"]["betas"] == [0.9, 0.99]
    summary = json.loads((tmp_path / "run" / "history.json").read_text())
    assert summary["final_val_loss"] == summary["history"]["val_loss"][-1]
    assert main(argv) == 2 and "pass --resume" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0 and "loaded from cache" in capsys.readouterr().out
    assert main([*argv, "--resume", "--train-config", "steps=4"]) == 2
    assert "another configuration" in capsys.readouterr().err
    assert main([*argv, "--model-config", "n_layers=2"]) == 2
    assert "has no field(s) ['n_layers']" in capsys.readouterr().err
    assert main([*argv, "--model-config", "vocab_size=100"]) == 2
    assert "vocab_size=256" in capsys.readouterr().err


def test_a_diverged_command_line_run_leaves_its_message_for_launch(
    shard_corpus, tmp_path, monkeypatch, capsys
):
    def diverge(*args, **kwargs):
        raise TrainingDiverged("run: loss became nan at step 2")

    monkeypatch.setattr(cache, "train", diverge)
    argv = ["--model-config", "n_layer=1", "--corpus", shard_corpus, "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 3
    assert (tmp_path / DIVERGED).read_text() == "run: loss became nan at step 2"
    assert "loss became nan" in capsys.readouterr().err
