"""XSA's measurements on its trained models and blocks (arXiv 2603.09078; the notebook's experiment is
:mod:`attnlab.papers.xsa.experiment`, whose methods of the same names these are): Fig. 1's similarity bias by
layer, Fig. 2's alternated block timing, the sequence-length and sink sweeps of Figs. 5-6 and the attention
mass on the sinks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import torch

from attnlab.model import GPTConfig
from attnlab.papers.xsa.diagnostics import (
    alternated_block_costs,
    attention_to_sinks_by_layer,
    similarity_bias_by_layer,
)
from attnlab.papers.xsa.presets import KINDS
from attnlab.training.cache import RunSpec, corpus_tokens
from attnlab.training.trainer import validation_windows

if TYPE_CHECKING:
    from attnlab.papers.xsa.experiment import Runs, XSAExperiment
    from attnlab.papers.xsa.runs import Grid


def windows(exp: XSAExperiment, seq_len: int) -> torch.Tensor:
    """The fixed validation sequences of Figs. 1 and 6, (N, T)."""
    tokens = corpus_tokens(exp.preset.corpus)["validation"]
    return validation_windows(tokens, exp.preset.diag_sequences, seq_len)[:, :-1]


def layer_diagnostics(exp: XSAExperiment, runs: Runs) -> pd.DataFrame:
    """Fig. 1 diagnostics of the deepest (last) size, for SA and XSA, over validation sequences and all
    seeds."""
    size = exp.sizes[-1]
    text = windows(exp, exp.preset.sizes[size].train.seq_len)
    frames = []
    for kind in KINDS:
        for seed in exp.seeds:
            frame = similarity_bias_by_layer(runs[size, kind, seed].model, text)
            frames.append(frame.assign(kind=kind, seed=seed, size=size))
    return pd.concat(frames, ignore_index=True)


def block_costs(exp: XSAExperiment) -> pd.DataFrame:
    """Fig. 2: forward+backward time and memory of one block, SA vs XSA, on this experiment's device
    (bf16 on CUDA as in the paper, float32 elsewhere), the kinds alternated within each repeat
    (:func:`~attnlab.papers.xsa.diagnostics.alternated_block_costs`): one row per (kind, width, length,
    repeat)."""
    b = exp.preset.bench
    device = exp.torch_device
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    frames = []
    for d_model in b.d_models:
        n_head = max(1, d_model // b.head_dim)
        for seq_len in b.seq_lens:
            cfg = GPTConfig(d_model=d_model, n_head=n_head, head_dim=b.head_dim, block_size=seq_len)
            costs = alternated_block_costs(cfg, KINDS, b.batch_size, seq_len, device, repeats=b.repeats,
                                           dtype=dtype)  # fmt: skip
            if costs is not None:
                frames.append(costs.assign(d_model=d_model, seq_len=seq_len))
    columns = ["kind", "d_model", "seq_len", "repeat", "time_ms", "memory_mib"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def sweep_specs(exp: XSAExperiment, grids: dict[str, Grid], axis: str) -> dict[tuple[str, int, int], RunSpec]:
    sw = exp.preset.sweep
    lr = grids[sw.size].best
    values = sw.seq_lens if axis == "seq_len" else sw.sinks
    return {
        (kind, seed, x): exp.spec(sw.size, kind, seed, lr, seq_len=x if axis == "seq_len" else None,
                                  n_sink=x if axis == "n_sink" else 0)
        for x in values for seed in exp.seeds[: sw.seeds] for kind in KINDS
    }  # fmt: skip


def _sweep(exp: XSAExperiment, grids: dict[str, Grid], axis: str) -> pd.DataFrame:
    runs = {
        (kind, seed, value): (
            spec,
            f"{exp.preset.sweep.size} {axis}={value:g} {kind.upper()} seed {seed}",
        )
        for (kind, seed, value), spec in sweep_specs(exp, grids, axis).items()
    }
    exp.prefetch(runs.values())
    rows = [
        {"kind": kind, "seed": seed, axis: value, **exp._final(*run)}
        for (kind, seed, value), run in runs.items()
    ]
    return pd.DataFrame(rows)


def seq_len_sweep(exp: XSAExperiment, grids: dict[str, Grid]) -> pd.DataFrame:
    """Fig. 5: final losses over sequence lengths, tokens per batch held constant."""
    return _sweep(exp, grids, "seq_len")


def sink_sweep(exp: XSAExperiment, grids: dict[str, Grid]) -> pd.DataFrame:
    """Fig. 6: final losses with 0, 1, 4 learned attention-sink tokens."""
    return _sweep(exp, grids, "n_sink")


def sink_attention(exp: XSAExperiment, grids: dict[str, Grid]) -> pd.DataFrame:
    """Fig. 6, measured: the attention mass every layer of every sink-sweep model puts on its learned
    sinks and on the first real token (:func:`attention_to_sinks_by_layer`), with the masses uniform
    causal attention would give."""
    specs = sweep_specs(exp, grids, "n_sink")
    text = windows(exp, exp.preset.sizes[exp.preset.sweep.size].train.seq_len)
    frames = []
    for (kind, seed, n_sink), spec in specs.items():
        run = exp._train(spec, f"n_sink={n_sink} {kind.upper()} seed {seed}")
        frame = attention_to_sinks_by_layer(run.model, text)
        frames.append(frame.assign(kind=kind, seed=seed, n_sink=n_sink))
    return pd.concat(frames, ignore_index=True)
