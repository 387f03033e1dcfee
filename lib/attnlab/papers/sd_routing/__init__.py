"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826; see
docs/papers/sd-routing.md): scale presets (``presets``), the experiment of its notebook (``experiment``), its
claims (``claims``), figures (``plots``) and the S-D analyses (``routing``)."""

from attnlab.papers.sd_routing.claims import CATASTROPHIC_PCT, CHEAP_PCT, LINEAR_TOLERANCE_PCT
from attnlab.papers.sd_routing.experiment import INTERACTION_LR_SCALE, PAPER, Runs, SDExperiment, configure
from attnlab.papers.sd_routing.presets import (
    GPT2_VOCAB,
    GPU,
    LABELS,
    MIN_RANK,
    PAPER_FILTER_TRUNCATION_PPL,
    PAPER_HEADS,
    PAPER_LINEAR,
    PAPER_REALLOCATION,
    PAPER_SCALE_TREND,
    PAPER_SIZES,
    PRESETS,
    VARIANTS,
    Bench,
    Preset,
    Size,
)

__all__ = [
    "PAPER",
    "VARIANTS",
    "LABELS",
    "MIN_RANK",
    "INTERACTION_LR_SCALE",
    "GPT2_VOCAB",
    "PAPER_HEADS",
    "PAPER_SCALE_TREND",
    "PAPER_FILTER_TRUNCATION_PPL",
    "PAPER_LINEAR",
    "PAPER_REALLOCATION",
    "CHEAP_PCT",
    "CATASTROPHIC_PCT",
    "LINEAR_TOLERANCE_PCT",
    "Size",
    "Bench",
    "Preset",
    "GPU",
    "PAPER_SIZES",
    "PRESETS",
    "Runs",
    "SDExperiment",
    "configure",
]
