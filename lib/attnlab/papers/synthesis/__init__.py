"""Every paper's lens on every attention kind (this project's synthesis, docs/papers/synthesis.md): scale
presets, lenses and the experiments of its notebook.

It needs the ``hf`` extra: the sink lens reuses ``attnlab.papers.contribution_weights.sinks``, and importing
that package imports ``attnlab.hf`` (transformers), although no pretrained model is loaded here."""

from attnlab.papers.synthesis.experiment import PAPER, Runs, SynthesisExperiment, configure
from attnlab.papers.synthesis.presets import KINDS, LABELS, PRESETS, Preset

__all__ = ["PAPER", "KINDS", "LABELS", "PRESETS", "Preset", "Runs", "SynthesisExperiment", "configure"]
