"""Exclusive Self Attention (XSA, arXiv 2603.09078): scale presets and the experiments of its notebook."""

from attnlab.papers.xsa.experiment import (
    CONTROLS,
    KINDS,
    PAPER,
    Grid,
    Runs,
    XSAExperiment,
    best_lr,
    configure,
    next_lr,
)
from attnlab.papers.xsa.presets import (
    GPU,
    GPU_CORPUS,
    GPU_CORPUS_COMMAND,
    PAPER_TABLE1,
    PAPER_TABLE2_AVG,
    PRESETS,
    Bench,
    Preset,
    Size,
    Sweep,
)

__all__ = [
    "PAPER",
    "KINDS",
    "CONTROLS",
    "Grid",
    "best_lr",
    "next_lr",
    "GPU_CORPUS",
    "GPU_CORPUS_COMMAND",
    "Size",
    "Sweep",
    "Bench",
    "Preset",
    "GPU",
    "PAPER_TABLE1",
    "PAPER_TABLE2_AVG",
    "PRESETS",
    "Runs",
    "XSAExperiment",
    "configure",
]
