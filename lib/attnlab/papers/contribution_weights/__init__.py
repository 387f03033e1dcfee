"""Contribution weights: a geometric analysis of self-attention (arXiv 2606.07604): scale presets and the
paper's constants (``presets``), the experiment (``experiment``), the claims table (``claims``) and the
figures (``plots``)."""

from attnlab.papers.contribution_weights.experiment import ContributionExperiment, configure
from attnlab.papers.contribution_weights.presets import (
    DOWNSTREAM,
    FRACTIONS,
    HIERARCHY,
    MEASURE_LABELS,
    MEASURES,
    PAPER,
    PRESETS,
    RANKINGS,
    SCALE_MODELS,
    TEXT_SETS,
    OwnModel,
    Preset,
)

__all__ = [
    "PAPER",
    "MEASURES",
    "RANKINGS",
    "HIERARCHY",
    "MEASURE_LABELS",
    "TEXT_SETS",
    "DOWNSTREAM",
    "OwnModel",
    "Preset",
    "FRACTIONS",
    "PRESETS",
    "SCALE_MODELS",
    "ContributionExperiment",
    "configure",
]
