"""XSA's table of every run (runs.csv): each training run of the notebook once, with its final losses and the
torch thread count it was trained with, so that one retrained seed can be checked against it."""

import math

import pandas as pd
import pytest
import torch

from attnlab.papers import xsa
from attnlab.papers.xsa import experiment as xsa_experiment
from attnlab.papers.xsa import runs as xsa_runs
from attnlab.training.trainer import TrainResult


@pytest.fixture
def folders(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path / "figures"))
    return tmp_path


def _loss(spec) -> float:
    """A loss that identifies its run: every field that tells runs apart moves it."""
    return (
        2.0 + spec.train.lr + 0.01 * spec.train.seed + 1e-4 * spec.train.seq_len + 0.001 * spec.model.n_sink
        - 0.05 * (spec.model.attn == "xsa") + 0.1 * spec.model.n_layer
    )  # fmt: skip


def _fake_launch(trained: list, cached: bool):
    """``launch`` without training: a result whose losses identify the run; records the specs it saw."""

    def launch(spec, *, device, label, micro_tokens):
        trained.append(spec)
        steps = spec.train.steps
        every = spec.train.eval_every
        val_steps = list(range(0, steps + 1, every))
        history = {
            "train_loss": [_loss(spec) + 0.1] * steps,
            "val_step": val_steps,
            "val_loss": [_loss(spec) + 1.0] * (len(val_steps) - 1) + [_loss(spec)],
        }
        return TrainResult(None, history, {"tokens_per_step": 1}, cached=cached)  # type: ignore[arg-type]

    return launch


def _everything(exp: xsa.XSAExperiment):
    grids = exp.tune()
    runs = exp.train_all(grids)
    return grids, runs, exp.seq_len_sweep(grids), exp.sink_sweep(grids)


def test_run_table_lists_every_run_once_with_its_losses_and_threads(folders, monkeypatch):
    exp = xsa.configure(scale="smoke", device="cpu")
    trained: list = []
    monkeypatch.setattr(xsa_experiment, "launch", _fake_launch(trained, cached=False))
    table = exp.run_table(*_everything(exp))
    assert list(table.columns) == list(xsa_experiment.RUN_COLUMNS)
    identity = ["size", "kind", "seed", "lr", "seq_len", "n_sink"]
    assert not table.duplicated(identity).any()
    distinct = {spec.key(exp.torch_device) for spec in trained}
    assert len(table) == len(distinct)  # every run trained, once: shared runs are not listed twice
    # Fig. 3's controls, the grid, both sweeps
    assert {"xsa-random", "xsa-prev"} <= set(table["kind"]) and table["lr"].nunique() >= 2
    assert set(exp.preset.sweep.seq_lens) <= set(table["seq_len"]) and set(table["n_sink"]) == {0, 1}
    for spec in trained:
        same = {"kind": spec.model.attn, "seed": spec.train.seed, "lr": spec.train.lr,
                "seq_len": spec.train.seq_len, "n_sink": spec.model.n_sink}  # fmt: skip
        mask = table["size"].str.startswith(f"{spec.model.n_layer}L")
        row = table[mask & (table[list(same)] == pd.Series(same)).all(axis=1)]
        assert len(row) == 1 and row["validation"].iloc[0] == pytest.approx(_loss(spec))
        assert row["train"].iloc[0] == pytest.approx(_loss(spec) + 0.1)
    assert (table["threads"] == torch.get_num_threads()).all()


def test_threads_come_from_the_run_not_from_the_process_that_loads_it(folders, monkeypatch):
    """Trained with one thread count and loaded under another: the table keeps the training count; a run
    loaded from the cache with no record has none (empty in runs.csv), never the loading process's."""
    exp = xsa.configure(scale="smoke", device="cpu", sizes=["2L-32d"])
    before = torch.get_num_threads()
    monkeypatch.setattr(xsa_experiment, "launch", _fake_launch([], cached=False))
    try:
        torch.set_num_threads(1)
        _everything(exp)
        torch.set_num_threads(2)
        monkeypatch.setattr(xsa_experiment, "launch", _fake_launch([], cached=True))
        table = exp.run_table(*_everything(exp))
    finally:
        torch.set_num_threads(before)
    assert (table["threads"] == 1).all()
    other = xsa.configure(scale="smoke", device="cpu", sizes=["2L-32d"], steps=20)  # other runs: no record
    table = other.run_table(*_everything(other))
    assert table["threads"].isna().all()


def test_save_run_table_writes_runs_csv_into_the_figures_folder(folders, monkeypatch):
    exp = xsa.configure(scale="smoke", device="cpu", sizes=["2L-32d"])
    monkeypatch.setattr(xsa_experiment, "launch", _fake_launch([], cached=False))
    table = exp.run_table(*_everything(exp))
    path = exp.save_run_table(table)
    assert path == folders / "figures" / "smoke" / exp.run_name / "runs.csv"  # sizes=[...]: a run of its own
    back = pd.read_csv(path)
    assert list(back.columns) == list(xsa_experiment.RUN_COLUMNS) and len(back) == len(table)
    assert back["validation"].tolist() == table["validation"].tolist()  # full precision, not rounded
    assert not any(math.isnan(x) for x in back["threads"])


def test_prefetch_trains_the_missing_runs_in_workers_exactly_as_this_process_would(folders, monkeypatch):
    """Runs trained by ``prefetch`` in two worker processes of one thread each are loaded from the cache and
    equal, weights and histories bit for bit, the same runs trained one by one here on one thread."""
    from attnlab.training import workers

    monkeypatch.setattr(xsa_experiment, "available_cores", lambda: 2)
    monkeypatch.setattr(workers, "available_cores", lambda: 2)  # two workers of one thread each
    exp = xsa.configure(scale="smoke", device="cpu", sizes=["2L-32d"], steps=6, workers=2)
    assert exp.workers == 2
    runs = [(exp.spec("2L-32d", kind, 0), f"{kind} s0") for kind in ("sa", "xsa")]
    exp.prefetch(runs)
    parallel = [exp._train(*run) for run in runs]
    assert all(r.cached for r in parallel)  # trained by the workers, loaded here
    assert [exp.training_threads(spec) for spec, _ in runs] == [1, 1]
    record = xsa_runs.threads_file(runs[0][0], exp.torch_device)
    record.write_text(record.read_text()[:5])  # truncated: named, and the count taken as unknown
    assert exp.training_threads(runs[0][0]) is None

    monkeypatch.setenv("ATTNLAB_BUILD", str(folders / "serial"))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial = [exp._train(*run) for run in runs]
    finally:
        torch.set_num_threads(before)
    assert not any(r.cached for r in serial)
    for a, b in zip(parallel, serial, strict=True):
        assert a.history == b.history
        for (name, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items(), strict=True):
            assert torch.equal(x, y), name


def test_workers_default_to_the_cores_on_a_cpu_and_refuse_nonsense(monkeypatch):
    monkeypatch.setattr(xsa_experiment, "available_cores", lambda: 4)
    assert xsa.configure(scale="smoke", device="cpu").workers == 4
    assert xsa.configure(scale="smoke", device="cpu", workers=1).workers == 1
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(xsa_experiment.ParameterError, match="workers"):
            xsa.configure(scale="smoke", device="cpu", workers=bad)
