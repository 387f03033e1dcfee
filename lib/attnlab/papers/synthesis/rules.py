"""The synthesis notebook's verdict rules (this project's hypotheses, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), numbers in, a :class:`~attnlab.runner.verdicts.Verdict` out; the rows' wording is
:mod:`attnlab.papers.synthesis.claims`.

A kind and its control measured on the same seeds (same data order, same initialisation) are paired by seed
(``paired_rule``); a trend over the eta_QK / eta_OV sweep is one slope per seed (``slope_rule``). Gates make a
claim "not testable here" when a model it is about learned nothing (``learned``: a diverged run counts) or,
for every claim about the first-token sink, when there is no sink (``sink_present``): they check that a
measure is defined or that the baseline condition learned, never that the claim's outcome came out.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from attnlab.runner import thresholds
from attnlab.runner.verdicts import (
    GATE,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PAIRED,
    SLOPE,
    Side,
    Verdict,
    gated,
    mean_rule,
    not_testable,
    paired,
    paired_rule,
    slope_rule,
    slopes,
)

#: The rule name of the undirected claims ("X changes Y"): the paired rule, on whichever side the mean lies.
EITHER_SIDE = f"{PAIRED}, either side (two-sided)"
#: The fewest distinct eta_QK / eta_OV ratios a trend over the sweep needs (``slope_rule``'s default).
MIN_RATIOS = int(thresholds.value("synthesis.MIN_RATIOS"))

Seeded = Mapping[Hashable, float]  # {seed: value}


# gates ----------------------------------------------------------------------------------------------------


def learned(initial: Mapping[Hashable, float], final: Mapping[Hashable, float]) -> Verdict | None:
    """The gate before any claim about what models learned, from {run: loss} at initialisation (the trivial
    baseline: the run's own random weights) and at the end, paired by run name: None when every run's final
    validation loss is below its initial one, else "not testable here" saying how many did not (a NaN loss,
    a diverged run, learned nothing)."""
    if not final:
        raise ValueError("learned(): no runs")
    if set(initial) != set(final):
        raise ValueError("learned(): the initial and final losses are not of the same runs")
    stuck = sum(not float(final[run]) < float(initial[run]) for run in final)  # NaN is never below
    if not stuck:
        return None
    return not_testable(f"{stuck} of {len(final)} runs did not lower their validation loss", n=len(final),
                        rule=GATE)  # fmt: skip


def interval_text(v: Verdict) -> str:
    """A verdict's mean and 95% interval over seeds, as the rows print it (its reason where it has none)."""
    if not math.isfinite(v.estimate):
        return f"no estimate ({v.why}), {v.n} seeds"
    if not (math.isfinite(v.low) and math.isfinite(v.high)):
        return f"{v.estimate:+.3f}, no interval ({v.why}), {v.n} seeds"
    return f"{v.estimate:+.3f} [{v.low:+.3f}, {v.high:+.3f}], {v.n} seeds"


def sink_present(first_attention: Seeded, uniform: Seeded, who: str = "SA") -> Verdict | None:
    """The gate before every claim about the first-token sink (contribution weights' sink; docs/papers/
    synthesis.md, question 2): None when ``who``'s attention on the first token is above uniform causal
    attention's on it (``paired_rule`` by seed: "holds"); else "not testable here" (there is no sink to move
    or to describe), with that paired difference as the evidence."""
    v = paired_rule(first_attention, uniform, "above")
    if v.word == HOLDS:
        return None
    why = (
        f"{who}'s attention on the first token is not shown above uniform attention's "
        f"({interval_text(v)}): there is no sink to move"
    )
    return replace(v, word=NOT_TESTABLE, why=why, rule=GATE)


def judged(verdict: Verdict, *gates: Verdict | None) -> Verdict:
    """``verdict``, unless a gate failed: then "not testable here" with every failed gate's reason (the
    first failed gate's evidence)."""
    failed = [g for g in gates if g is not None]
    if not failed:
        return verdict
    return gated(replace(failed[0], why="; ".join(g.why for g in failed)), verdict)


# verdicts -------------------------------------------------------------------------------------------------


def shift(kind: Seeded, control: Seeded, side: Side) -> Verdict:
    """The hypothesis "the kind's value lies ``side`` its control's", from {seed: value} of each, paired by
    seed (``paired_rule``; null 0, no smallest effect: this project stated none)."""
    return paired_rule(kind, control, side)


def differs(kind: Seeded, control: Seeded) -> Verdict:
    """The undirected hypothesis "the kind's value differs from its control's", from {seed: value} of each,
    paired by seed: ``paired_rule`` on the side the mean lies, so "holds" exactly when the two-sided 95%
    interval excludes zero. No equivalence margin was stated with these hypotheses, so an interval around zero
    is "inconclusive", never "does not hold"."""
    diffs = paired(kind, control)
    side: Side = "below" if sum(diffs) < 0 else "above"
    v = replace(mean_rule(diffs, side), rule=EITHER_SIDE)
    if v.word == INCONCLUSIVE:  # the interval contains zero (the mean is never on "the other side" here)
        v = replace(v, why=f"the 95% interval contains the null; detectable effect {v.detectable:.3g}")
    return v


def differences(a: Seeded, b: Seeded) -> dict[Hashable, float]:
    """{seed: a[seed] - b[seed]}, paired by name (``verdicts.paired``: seeds in one only are an error)."""
    return dict(zip(a, paired(a, b), strict=True))


def per_doubling(
    ratios: Sequence[float], by_seed: Mapping[Hashable, Sequence[float]]
) -> dict[Hashable, float]:
    """Each seed's least-squares slope of its values (one per ratio, in the order of ``ratios``) against
    log2 of eta_QK / eta_OV: the change per doubling of the query-key learning rate relative to the others'
    (``verdicts.slopes``: NaN for a seed with a non-finite value, exactly 0 for constant values)."""
    x = np.log2(np.asarray(ratios, float))
    if len(np.unique(x)) < 2:
        raise ValueError(f"a slope needs two distinct ratios or more, got {list(ratios)}")
    return slopes(x, by_seed)


def sweep_trend(
    ratios: Sequence[float],
    by_seed: Mapping[Hashable, Sequence[float]],
    side: Side,
    min_ratios: int = MIN_RATIOS,
) -> Verdict:
    """The hypothesis "the value moves ``side`` as eta_QK / eta_OV doubles" (QK-speed's Fig. 4 ratio, in
    multi-layer LMs): ``slope_rule`` with x = log2 of each ratio, one slope per seed (not testable with fewer
    than ``min_ratios`` ratios, nor when no seed's value changes over the ratios: a floor or ceiling gives
    slopes of exactly 0, no spread)."""
    return slope_rule([math.log2(r) for r in ratios], by_seed, side, min_points=min_ratios)


def trend(ratios: Sequence[float], by_seed: Mapping[Hashable, Sequence[float]], side: Side) -> Verdict:
    """:func:`sweep_trend` at ``MIN_RATIOS``; the registry marks that number post hoc, so the reason gives
    the verdict with no minimum beyond a slope's two ratios beside it."""
    return thresholds.posthoc(
        "synthesis.MIN_RATIOS", sweep_trend(ratios, by_seed, side), sweep_trend(ratios, by_seed, side, 2)
    )


def slopes_differ(
    ratios: Sequence[float],
    kind: Mapping[Hashable, Sequence[float]],
    control: Mapping[Hashable, Sequence[float]],
    min_ratios: int = MIN_RATIOS,
) -> Verdict:
    """The hypothesis "the kind's trend over the sweep differs from its control's": each seed's slope per
    doubling (:func:`per_doubling`) of the kind and of the control, paired by seed, by :func:`differs`; not
    testable with fewer than ``min_ratios`` distinct ratios."""
    if len(set(ratios)) < min_ratios:
        why = f"{len(set(ratios))} distinct ratios; a trend needs {min_ratios}"
        return not_testable(why, n=len(control), null=0.0, rule=SLOPE)
    return differs(per_doubling(ratios, kind), per_doubling(ratios, control))


def trends_differ(
    ratios: Sequence[float],
    kind: Mapping[Hashable, Sequence[float]],
    control: Mapping[Hashable, Sequence[float]],
) -> Verdict:
    """:func:`slopes_differ` at ``MIN_RATIOS``, post hoc as :func:`trend`."""
    return thresholds.posthoc(
        "synthesis.MIN_RATIOS",
        slopes_differ(ratios, kind, control),
        slopes_differ(ratios, kind, control, 2),
    )
