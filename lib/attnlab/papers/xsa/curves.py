"""XSA Fig. 3's curves (arXiv 2603.09078): the loss at every evaluation of every trained run, the final
losses, and the gap of each kind to SA of the same seed over training. Pure tables, shared by the notebook's
experiment (:mod:`attnlab.papers.xsa.experiment`, whose static methods of the same names these are) and the
claims (:mod:`attnlab.papers.xsa.claims`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

import pandas as pd

from attnlab.training.trainer import TrainResult


def loss_curves(runs: Mapping[tuple, TrainResult]) -> pd.DataFrame:
    """Tidy curves for Fig. 3: validation loss at each evaluation, and the mean training loss over the
    steps since the previous evaluation; ``tokens`` = training tokens seen at that step."""
    rows = []
    for (size, kind, seed), run in runs.items():
        h, per_step = run.history, run.timing["tokens_per_step"]
        prev = 0
        for step, val in zip(map(int, h["val_step"]), h["val_loss"], strict=True):  # whole steps
            rows.append((size, kind, seed, step, step * per_step, "validation", val))
            if step > 0:
                train = statistics.fmean(h["train_loss"][prev:step])
                rows.append((size, kind, seed, step, step * per_step, "train", train))
            prev = step
    return pd.DataFrame(rows, columns=["size", "kind", "seed", "step", "tokens", "split", "loss"])


def final_losses(curves: pd.DataFrame) -> pd.DataFrame:
    """Final train and validation loss per (size, seed), a column per (split, kind)."""
    last = curves[curves["step"] == curves.groupby(["size", "kind", "seed"])["step"].transform("max")]
    return last.pivot_table(index=["size", "seed"], columns=["split", "kind"], values="loss")


def gap_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """Gap over training: each kind's validation loss minus SA's of the same size and seed, at every
    evaluation (size, kind, seed, step, tokens where ``curves`` has them, gap)."""
    keys = [c for c in ("size", "seed", "step", "tokens") if c in curves]  # tokens where the curves have them
    val = curves[curves["split"] == "validation"]
    wide = val.pivot_table(index=keys, columns="kind", values="loss")
    gaps = wide.drop(columns="sa").sub(wide["sa"], axis=0)
    tidy = gaps.reset_index().melt(id_vars=keys, var_name="kind", value_name="gap")
    return tidy.dropna(subset=["gap"])
