"""A second floating-point realisation of the same training, to see which verdicts sit at the noise floor.

The same seeds, data, model and optimiser, with every step's gradient summed in another order: under
``ATTNLAB_REALISATION=half-batches`` :func:`attnlab.training.trainer.train` computes each step's gradient (and
each validation loss) in two passes of half the rows instead of one (gradient accumulation, the same mean loss
in exact arithmetic). The rounding differs in the last bits, and training amplifies the difference, so the
trained models differ as two machines' would. ``attnlab.runner.stability`` compares the claims tables of the
two realisations row by row (``docs/verdicts.md``, "Stability").

Each realisation keeps its own results cache and figures (:func:`folder`: ``build/realisations/<name>`` and
``figures/realisations/<name>``), so no result of one is ever loaded for the other.
"""

from __future__ import annotations

import os

from attnlab.errors import ParameterError

#: The environment variable that names the realisation; unset (or empty) is the default one.
ENV = "ATTNLAB_REALISATION"

#: Each realisation by name: into how many passes it splits every batch ("" is the default, one pass).
REALISATIONS = {"": 1, "half-batches": 2}


def name() -> str:
    """The realisation this process computes (``ENV``), checked against ``REALISATIONS``."""
    value = os.environ.get(ENV, "").strip()
    if value not in REALISATIONS:
        known = ", ".join(repr(k) for k in REALISATIONS if k)
        raise ParameterError(f"{ENV}={value!r} is no realisation; use one of {known}, or unset it")
    return value


def folder() -> str:
    """The subfolder that keeps this realisation's results and figures apart (empty for the default)."""
    current = name()
    return f"realisations/{current}" if current else ""


def micro_batch(rows: int) -> int | None:
    """The rows per forward pass of a batch of ``rows`` under this realisation (None: all in one pass)."""
    parts = REALISATIONS[name()]
    if parts == 1:
        return None
    if rows % parts or rows < parts:
        raise ParameterError(f"{ENV}={name()!r} splits a batch in {parts}, but a batch has {rows} rows")
    return rows // parts
