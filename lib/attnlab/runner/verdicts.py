"""Verdicts as values: a :class:`Verdict` is the plain word (``holds``, ``does not hold``, ``inconclusive``,
``not testable here``) with its reason and the evidence a claims row shows beside it (estimate, 95% interval,
n, the null it was judged against). Each paper's ``claims`` module computes its verdicts with named functions
of numbers that return one; :func:`every_seed` is the sign rule several papers share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from attnlab.runner.stats import estimate

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
VERDICTS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE)

Side = Literal["above", "below"]


@dataclass(frozen=True)
class Verdict:
    """A verdict word, why, and the evidence: the estimate, its 95% interval, how many values it rests on and
    the null or control it was judged against."""

    word: str
    why: str = ""
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    null: float = math.nan

    def __post_init__(self) -> None:
        if self.word not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.word!r}")

    def __str__(self) -> str:
        return f"{self.word}: {self.why}" if self.why else self.word


def every_seed(values: Sequence[float], side: Side, null: float = 0.0) -> Verdict:
    """The claim "the quantity lies ``side`` ``null``", from one value per seed (e.g. a paired difference):
    holds when every value does (with one value: "holds: one seed only, no spread"), does not hold when their
    mean does not, otherwise inconclusive ("the sign differs between seeds"). A non-finite value (a diverged
    run) never lies on either side. Evidence: the mean and its 95% interval (:func:`stats.estimate`), n and
    ``null``."""
    if len(values) == 0:
        raise ValueError("no values to judge")
    est = estimate(values)
    evidence = (est.mean, est.low, est.high, est.n, null)
    if all((v > null) if side == "above" else (v < null) for v in values):
        return Verdict(HOLDS, "" if len(values) > 1 else "one seed only, no spread", *evidence)
    mean = sum(values) / len(values)
    if (mean <= null) if side == "above" else (mean >= null):
        return Verdict(DOES_NOT_HOLD, "", *evidence)
    return Verdict(INCONCLUSIVE, "the sign differs between seeds", *evidence)
