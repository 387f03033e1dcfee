"""The synthesis (``docs/papers/synthesis.md``): no claims row has a paper number. Its claims are this
project's hypotheses, every paper's measurement applied to every attention variant; where a row names another
paper's claim ("raw attention < contribution weights", "sharper attention in single-layer circuits"), that
paper states it in words, so the summary figure (``attnlab.runner.paper_figure``) draws no row and says so."""

from __future__ import annotations

from attnlab.runner.paper_figure import PaperNumbers

PAPER_NUMBERS: PaperNumbers = {}
