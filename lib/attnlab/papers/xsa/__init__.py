"""Exclusive Self Attention (XSA, arXiv 2603.09078): scale presets and the experiments of its notebook."""

from attnlab.papers.xsa.experiment import KINDS, PAPER, Runs, XSAExperiment, configure
from attnlab.papers.xsa.presets import (
    GPU,
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
