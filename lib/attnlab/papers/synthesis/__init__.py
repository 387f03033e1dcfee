"""Every paper's lens on every attention kind (this project's synthesis, docs/papers/synthesis.md): scale
presets, lenses and the experiments of its notebook, and the same lenses on pretrained causal LMs
(:mod:`attnlab.papers.synthesis.pretrained`).

It needs the ``hf`` extra: the sink lens reuses ``attnlab.papers.contribution_weights.sinks``, whose package
imports ``attnlab.hf`` (transformers), and the pretrained lenses load Hugging Face models."""

from attnlab.papers.synthesis.experiment import PAPER, Runs, SynthesisExperiment, configure
from attnlab.papers.synthesis.presets import KINDS, LABELS, PRESETS, Preset

__all__ = ["PAPER", "KINDS", "LABELS", "PRESETS", "Preset", "Runs", "SynthesisExperiment", "configure"]
