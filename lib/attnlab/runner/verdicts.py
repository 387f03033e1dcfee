"""Verdicts as functions of numbers: every claims table judges a claim by one of these, from per-seed
estimates, a null or control value and, where a model could have learned nothing, a chance level. Each
returns a :class:`Verdict`: the plain word (``holds``, ``does not hold``, ``inconclusive``, ``not testable
here``) with its reason, and the evidence a claims row shows beside it.

The rule throughout: a claim holds only when the 95% interval over seeds excludes the null on the claimed
side; an interval that contains the null is inconclusive; one seed gives no interval, and a model at chance
makes the claim not testable here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from attnlab.runner.stats import Estimate, mean_interval

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


def _with(est: Estimate, null: float, word: str, why: str = "") -> Verdict:
    return Verdict(word, why, est.mean, est.low, est.high, est.n, null)


def against_null(values: Sequence[float], null: float = 0.0, side: Side = "above") -> Verdict:
    """The claim "the quantity is ``side`` ``null``", from one value per seed (e.g. paired differences XSA
    minus SA): holds when the 95% interval lies entirely on that side, does not hold when it lies entirely on
    the other side, inconclusive when it contains the null; with one seed, inconclusive (no interval)."""
    est = mean_interval(values)
    if est.n < 2:
        return _with(est, null, INCONCLUSIVE, "one seed, no interval")
    on_side = est.low > null if side == "above" else est.high < null
    other_side = est.high < null if side == "above" else est.low > null
    if on_side:
        return _with(est, null, HOLDS)
    if other_side:
        return _with(
            est, null, DOES_NOT_HOLD, f"the interval lies {'below' if side == 'above' else 'above'} {null:g}"
        )
    return _with(est, null, INCONCLUSIVE, f"the 95% interval contains {null:g}")


def against_control(values: Sequence[float], control: Sequence[float], side: Side = "above") -> Verdict:
    """The claim "the trained model's statistic is ``side`` the control's" (a random-init model, another
    variant under the same intervention), paired by seed: :func:`against_null` on the differences."""
    if len(values) != len(control):
        raise ValueError(f"against_control(): {len(values)} values against {len(control)} controls")
    diffs = [float(v) - float(c) for v, c in zip(values, control, strict=True)]
    verdict = against_null(diffs, 0.0, side)
    return Verdict(
        verdict.word,
        verdict.why,
        verdict.estimate,
        verdict.low,
        verdict.high,
        verdict.n,
        sum(map(float, control)) / len(control),
    )


def above_chance(scores: Sequence[float], chance: float) -> bool:
    """Whether a model learned anything: the mean score's 95% interval lies above chance (with one value,
    the value itself must exceed it)."""
    est = mean_interval(scores)
    return est.mean > chance if est.n < 2 else est.low > chance


def gated(verdict: Verdict, scores: Sequence[float], chance: float, what: str = "the model") -> Verdict:
    """``verdict``, unless ``scores`` are not above ``chance``: then "not testable here" (a model that learned
    nothing can neither confirm nor refute a claim about what it learned)."""
    if above_chance(scores, chance):
        return verdict
    mean = sum(map(float, scores)) / len(scores)
    return Verdict(
        NOT_TESTABLE,
        f"{what} is at chance ({mean:.3g} vs {chance:.3g})",
        verdict.estimate,
        verdict.low,
        verdict.high,
        verdict.n,
        verdict.null,
    )


def share_above(share: float, threshold: float, control: float | None = None) -> Verdict:
    """A single measured share (e.g. the fraction of pretrained heads with a property) against a threshold,
    and, when given, against the same share for a control (random weights of the same shapes): holds only if
    it exceeds both; does not hold if it is at or below the threshold; inconclusive if it exceeds the
    threshold but not the control (the property would appear without training)."""
    null = threshold if control is None else max(threshold, control)
    if share > null:
        return Verdict(HOLDS, "", share, math.nan, math.nan, 1, null)
    if share <= threshold:
        return Verdict(DOES_NOT_HOLD, f"{share:.3g} <= {threshold:g}", share, math.nan, math.nan, 1, null)
    return Verdict(
        INCONCLUSIVE,
        f"{share:.3g} is not above the control's {control:.3g}",
        share,
        math.nan,
        math.nan,
        1,
        null,
    )
