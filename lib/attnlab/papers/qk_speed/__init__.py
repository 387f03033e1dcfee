"""Faster query-key learning sharpens attention (arXiv 2608.06776; see docs/papers/qk-speed.md): scale
presets (``presets``), the experiment of its notebook (``experiment``), its claims (``claims``), figures
(``plots``), the circuits, synthetic task and reduced dynamics, and the real-data tasks (``text_tasks``)."""

from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.claims import MIN_GAIN
from attnlab.papers.qk_speed.experiment import PAPER, SQUAD_PROTOCOLS, QKSpeedExperiment, configure
from attnlab.papers.qk_speed.presets import (
    BASELINE,
    KINDS,
    PAPER_FIG3_FINAL,
    PAPER_SEEDS,
    PRESETS,
    SVA_ITEMS,
    CircuitRun,
    CircuitSetup,
    DynamicsSetup,
    FixedSetup,
    Preset,
    SquadSetup,
    SVASetup,
    fast_label,
    fig2_runs,
    preset_table,
    runs_table,
)

__all__ = [
    "authors",
    "PAPER",
    "KINDS",
    "SQUAD_PROTOCOLS",
    "BASELINE",
    "fast_label",
    "PAPER_FIG3_FINAL",
    "CircuitSetup",
    "FixedSetup",
    "DynamicsSetup",
    "SVA_ITEMS",
    "SVASetup",
    "SquadSetup",
    "Preset",
    "PAPER_SEEDS",
    "PRESETS",
    "CircuitRun",
    "fig2_runs",
    "runs_table",
    "MIN_GAIN",
    "QKSpeedExperiment",
    "configure",
    "preset_table",
]
