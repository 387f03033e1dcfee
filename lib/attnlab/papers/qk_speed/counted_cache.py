"""The results cache as the notebook of "Faster query-key learning sharpens attention" (arXiv 2608.06776) uses
it for every figure: ``attnlab.training.cache.cached_result``, with a count of the results loaded and
computed, for the notebook's "n of m results were loaded from the results cache"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from attnlab.training.cache import Roots, cached_result, result_path


@dataclass
class CountedCache:
    """The results the parts of one experiment loaded and computed, shared by all its parts."""

    loaded: int = 0
    computed: int = 0
    # results computed outside ``result`` (worker processes, the batched circuit program): loaded there, but
    # computed by this run
    prefetched: set[Path] = field(default_factory=set)

    def result(
        self, kind: str, config: dict, compute: Callable[[], dict], *, code: Roots, data: str = ""
    ) -> dict:
        """``cached_result``'s result, counted as computed when this run computed it (here, or beforehand
        into ``prefetched``)."""
        result, loaded = cached_result(kind, config, compute, data=data, code=code)
        fresh = not loaded or (
            bool(self.prefetched) and result_path(kind, config, data, code=code) in self.prefetched
        )
        if fresh:
            self.computed += 1
        else:
            self.loaded += 1
        return result

    def summary(self) -> str:
        """How many of the results so far were loaded from the results cache, in a sentence."""
        return f"{self.loaded} of {self.loaded + self.computed} results were loaded from the results cache."
