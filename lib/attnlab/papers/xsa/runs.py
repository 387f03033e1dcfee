"""XSA's training runs as records (arXiv 2603.09078; the notebook's experiment is
:mod:`attnlab.papers.xsa.experiment`): the torch thread count each run trained with, its final losses, the
learning-rate search's grid (Fig. 4) and its extension past a winning edge, and a model's parameter count."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from attnlab import paths, verified
from attnlab.errors import TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.training.cache import RunSpec
from attnlab.training.launch import launch, nproc_default
from attnlab.training.trainer import TrainResult, resolve_device

# Where the torch thread count of each run trained by this notebook is kept, beside the results cache: a
# CPU run's losses depend on it (the order of its float reductions), so a retrained seed is checked against
# runs.csv only with the same count.
THREADS_KIND = "xsa_run_threads"
# The columns of the table of every run (runs.csv): what identifies a run (its size, kind, seed, rate,
# length, sinks, value heads and tokenizer), its steps, its final losses, its threads.
RUN_COLUMNS = (
    "size", "kind", "seed", "lr", "seq_len", "n_sink", "n_kv_head", "tokenizer", "steps", "train",
    "validation", "threads",
)  # fmt: skip
#: What tells two runs of runs.csv apart.
RUN_IDENTITY = ["size", "kind", "seed", "lr", "seq_len", "n_sink", "n_kv_head", "tokenizer"]


def threads_file(spec: RunSpec, device: torch.device) -> Path:
    """Where the thread count of the run ``spec`` is recorded."""
    return paths.build_dir() / "results" / THREADS_KIND / f"{spec.key(device)}.json"


def record_threads(spec: RunSpec, device: torch.device) -> None:
    """Keep the torch thread count the run ``spec`` was just trained with (None when torchrun trained it in
    several processes, whose threads this process does not see)."""
    processes = nproc_default()
    record = {"threads": torch.get_num_threads() if processes == 1 else None, "processes": processes}
    path = threads_file(spec, device)
    path.parent.mkdir(parents=True, exist_ok=True)
    verified.write_text(path, json.dumps(record))  # atomically, with its checksum


def train_in_worker(job: tuple[RunSpec, str, str, int | None]) -> None:
    """One worker of ``XSAExperiment.prefetch`` (``attnlab.training.workers``): train a run into the results
    cache. A run that diverges is left to the notebook's own call, which raises where it is read."""
    spec, device, label, micro_tokens = job
    try:
        run = launch(spec, device=device, label=label, micro_tokens=micro_tokens, progress=False)
    except TrainingDiverged:
        return
    if not run.cached:
        record_threads(spec, resolve_device(device))


def final_losses(run: TrainResult) -> dict[str, float]:
    """Final validation loss, and the mean training loss over the last evaluation interval."""
    h = run.history
    last_interval = int(h["val_step"][-1] - h["val_step"][-2])  # steps: whole numbers
    return {"train": statistics.fmean(h["train_loss"][-last_interval:]), "validation": h["val_loss"][-1]}


def best_lr(grid: pd.DataFrame) -> float:
    """The grid's best learning rate for SA (final validation loss, mean over seeds): XSA reuses it."""
    sa = grid[grid["kind"] == "sa"].groupby("lr")["validation"].mean()
    return float(sa.idxmin())


def next_lr(lrs: Sequence[float], best: float) -> float | None:
    """The learning rate that extends grid ``lrs`` past the edge where ``best`` lies, one geometric step
    beyond it (the step between the edge and its neighbour); None when ``best`` is interior or the grid has
    fewer than two points."""
    grid = sorted(lrs)
    if len(grid) < 2 or grid[0] < best < grid[-1]:
        return None
    if best == grid[0]:
        return grid[0] * grid[0] / grid[1]
    return grid[-1] * grid[-1] / grid[-2]


@dataclass(frozen=True)
class Grid:
    """A size's learning-rate search (Fig. 4): final losses of SA and XSA (``frame``: kind, seed, lr, train,
    validation), the best SA rate, and the rates added beyond the preset's grid."""

    size: str
    frame: pd.DataFrame
    best: float
    added: tuple[float, ...]
    exhausted: bool  # the best rate is still at an edge after every allowed extension

    @property
    def note(self) -> str:
        lrs = ", ".join(f"{x:g}" for x in sorted(self.frame["lr"].unique()))
        text = f"{self.size}: best SA learning rate of the grid [{lrs}]: {self.best:g}"
        if self.added:
            text += f" (grid extended by {', '.join(f'{x:g}' for x in self.added)})"
        if self.exhausted:
            text += " (an edge of the grid: the optimum may lie beyond it)"
        return text


def count_params(model: GPTConfig) -> int:
    """Parameters of a GPT of ``model``'s shape, without the embeddings (built on the meta device)."""
    with torch.device("meta"):
        return GPT(model).num_params()
