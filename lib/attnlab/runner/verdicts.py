"""Verdicts as values: a :class:`Verdict` is the plain word (``holds``, ``does not hold``, ``inconclusive``,
``not testable here``) with its reason and the evidence a claims row shows beside it (estimate, 95% interval,
n, the null it was judged against). Each paper's ``claims`` module computes its verdicts with named functions
of numbers that return one. Shared rules: :func:`every_seed` (the sign of every seed),
:func:`interval_excludes` (a 95% interval over seeds or windows that must exclude the null) and
:func:`above_chance` (the gate a model must pass before its accuracy can support or refute anything).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from attnlab.runner.stats import binomial_interval, estimate

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


def interval_excludes(values: Sequence[float], side: Side, null: float = 0.0) -> Verdict:
    """The claim "the quantity lies ``side`` ``null``", from one value per seed or window (e.g. paired
    differences XSA minus SA): holds only when the 95% interval of the mean (Student's t) lies entirely on
    that side; does not hold when it lies entirely on the other side or the mean is on the other side; else
    inconclusive. Fewer than two values, or a non-finite one, give no interval: inconclusive, said so."""
    if len(values) == 0:
        raise ValueError("no values to judge")
    est = estimate(values)
    evidence = (est.mean, est.low, est.high, est.n, null)
    if not (math.isfinite(est.low) and math.isfinite(est.high)):
        why = "one value only, no interval" if len(values) < 2 else "a run diverged, no interval"
        return Verdict(INCONCLUSIVE, why, *evidence)
    above, below = est.low > null, est.high < null
    if (above and side == "above") or (below and side == "below"):
        return Verdict(HOLDS, "the 95% interval excludes the null", *evidence)
    if above or below or ((est.mean <= null) if side == "above" else (est.mean >= null)):
        return Verdict(DOES_NOT_HOLD, "", *evidence)
    return Verdict(INCONCLUSIVE, "the 95% interval contains the null", *evidence)


def above_chance(correct: int, n: int, chance: float) -> Verdict | None:
    """The gate before an accuracy claim: None when the 95% Wilson interval of ``correct / n`` lies above
    ``chance`` (the claim can be judged); otherwise a "not testable here" verdict saying the model is not
    above chance, with the accuracy, its interval and the chance level as evidence. A model that learned
    nothing supports no claim about what it learned."""
    if not 0.0 <= chance < 1.0:
        raise ValueError(f"chance must lie in [0, 1); got {chance}")
    est = binomial_interval(correct, n)
    if est.low > chance:
        return None
    interval = f"95% interval {est.low:.3f}-{est.high:.3f}"
    why = f"accuracy {est.mean:.3f} ({interval}) is not above chance {chance:.3f}"
    return Verdict(NOT_TESTABLE, why, est.mean, est.low, est.high, n, chance)
