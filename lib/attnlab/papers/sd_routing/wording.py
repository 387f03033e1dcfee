"""The S-D routing claims' row text (``claims``): a measurement summarised by size with its interval over
seeds. Kept apart from ``tables``, which the experiment imports, so that no claims code enters the results
cache's code keys."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from attnlab.runner.claims import fixed
from attnlab.runner.stats import estimate


def means(values_by_size: Mapping[str, Sequence[float]]) -> str:
    """``size mean [low, high]`` over seeds for each size."""
    parts = []
    for size, values in values_by_size.items():
        e = estimate(list(values))
        interval = f" [{fixed(e.low, 2)}, {fixed(e.high, 2)}]" if math.isfinite(e.low) else ""
        parts.append(f"{size} {fixed(e.mean, 2)}{interval}")
    return ", ".join(parts)
