"""Contribution weights: a geometric analysis of self-attention (arXiv 2606.07604): scale presets and the"""

from attnlab.papers.contribution_weights.experiment import (
    DOWNSTREAM,
    FRACTIONS,
    MEASURE_LABELS,
    MEASURES,
    PAPER,
    PRESETS,
    TEXT_SETS,
    ContributionExperiment,
    OwnModel,
    Preset,
    configure,
)

__all__ = [
    "PAPER",
    "MEASURES",
    "MEASURE_LABELS",
    "TEXT_SETS",
    "DOWNSTREAM",
    "OwnModel",
    "Preset",
    "FRACTIONS",
    "PRESETS",
    "ContributionExperiment",
    "configure",
]
