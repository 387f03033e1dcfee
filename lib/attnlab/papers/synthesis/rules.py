"""The synthesis notebook's verdict rules (this project's hypotheses, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), numbers in, a :class:`~attnlab.runner.verdicts.Verdict` out; the rows' wording is
:mod:`attnlab.papers.synthesis.claims`.

A kind and its control measured on the same seeds (same data order, same initialisation) are paired by seed
(``paired_rule``); a trend over the eta_QK / eta_OV sweep is one slope per seed (``slope_rule``). Gates make a
claim "not testable here" when a model it is about learned nothing (``learned``: a diverged run counts) or,
for every claim about the first-token sink, when there is no sink (``sink_present``): they check that a
measure is defined or that the baseline condition learned, never that the claim's outcome came out.

A pretrained model is one fixed set of weights: a claim about it counts its layers (one value per layer, the
mean over text windows, heads and queries), paired by layer with the null measured on the same layer
(``beyond_nulls``); the weight lenses' null is many draws of a layer of Gaussian weights of the model's layer
shape, each layer paired with the mean of its own block of draws, the median layer ranked among them all
(``beyond_random_weights``); "in every pretrained model" is ``all_of`` the models' verdicts
(``in_every_model``), the models its units.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from attnlab.runner import thresholds
from attnlab.runner.composite import all_of
from attnlab.runner.verdicts import (
    GATE,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PAIRED,
    SLOPE,
    Side,
    Verdict,
    check_within,
    gated,
    mean_rule,
    not_testable,
    paired,
    paired_rule,
    rank_rule,
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


def interval_text(v: Verdict, units: str = "seeds") -> str:
    """A verdict's mean and 95% interval over its ``units`` (seeds, layers, models), as the rows print it (its
    reason where it has none)."""
    if not math.isfinite(v.estimate):
        return f"no estimate ({v.why}), {v.n} {units}"
    if not (math.isfinite(v.low) and math.isfinite(v.high)):
        return f"{v.estimate:+.3f}, no interval ({v.why}), {v.n} {units}"
    return f"{v.estimate:+.3f} [{v.low:+.3f}, {v.high:+.3f}], {v.n} {units}"


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
    check_within("sweep_trend", "the ratios eta_QK / eta_OV", ratios, 0.0, math.inf, positive=True)
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


# pretrained models: one fixed model, its layers the units --------------------------------------------------

Layered = Mapping[Hashable, float]  # {layer: value}


def null_margins(observed: Layered, nulls: Mapping[str, Layered], side: Side) -> dict[str, Verdict]:
    """Per null (name -> {layer: the null's value on that layer}): "the fixed model's per-layer measure lies
    ``side`` the null", :func:`~attnlab.runner.verdicts.paired_rule` by layer name (the layers are the units;
    a layer missing from one side is an error)."""
    if not nulls:
        raise ValueError("null_margins(): no null to judge against")
    return {name: paired_rule(observed, null, side) for name, null in nulls.items()}


def beyond_nulls(observed: Layered, nulls: Mapping[str, Layered], side: Side) -> Verdict:
    """A fixed model's per-layer measure lies ``side`` each of its ``nulls`` (XSA Fig. 1's cos(y_i, v_i)
    against uniform mixing and shuffled keys; the first token's attention against uniform attention's, its
    contribution weight against its attention: contribution weights' Fig. 1): :func:`null_margins`, and
    :func:`~attnlab.runner.composite.all_of` them, the first shown unless another decides (one null: its
    verdict as it is)."""
    parts = null_margins(observed, nulls, side)
    return next(iter(parts.values())) if len(parts) == 1 else all_of(parts)


def random_weight_parts(observed: Layered, draws: Sequence[float], side: Side) -> dict[str, Verdict]:
    """The two parts of :func:`beyond_random_weights`, from {layer: value} of the model (a head mean per
    layer) and the same statistic of many draws of one layer of Gaussian weights of the model's layer shape,
    in the order drawn:

    - "the layers": each layer paired with the mean of its own block of draws (the i-th layer in layer
      order with draws i, i + L, i + 2L, ...: disjoint blocks, so the L differences are independent and the
      t interval is exact for the layers as units) by :func:`~attnlab.runner.verdicts.paired_rule`;
    - "the median layer among the draws": the model's median layer ranked among all the draws
      (:func:`~attnlab.runner.verdicts.rank_rule`, not testable under 79 draws). Conservative: under the
      null the median of L layers lies in a tail of the single-layer draws less often than one layer does.

    A ValueError when there are fewer draws than layers."""
    xs = [float(d) for d in draws]
    layers = sorted(observed, key=str)
    if not layers:
        raise ValueError("random_weight_parts(): no layers")
    if len(xs) < len(layers):
        raise ValueError(
            f"random_weight_parts(): {len(xs)} draws for {len(layers)} layers; every layer needs one"
        )
    null = {layer: float(np.mean(xs[i :: len(layers)])) for i, layer in enumerate(layers)}
    median = float(np.median([float(v) for v in observed.values()]))
    return {
        "the layers": paired_rule(observed, null, side),
        "the median layer among the draws": rank_rule(median, xs, side, what="the median layer"),
    }


def beyond_random_weights(observed: Layered, draws: Sequence[float], side: Side) -> Verdict:
    """A fixed model's weight statistic (S-D's routing energy share of the heads' forms W_Q^T W_K, their
    effective rank; head means per layer) lies ``side`` Gaussian weights of the same shapes': both of
    :func:`random_weight_parts` (:func:`~attnlab.runner.composite.all_of`, "the layers" shown unless the
    other decides)."""
    return all_of(random_weight_parts(observed, draws, side))


def in_every_model(by_model: Mapping[str, Verdict]) -> Verdict:
    """A claim "in every pretrained model": :func:`~attnlab.runner.composite.all_of` the models' verdicts,
    showing the least clear model (the largest p) unless another decides; ``n`` counts the models."""
    if not by_model:
        raise ValueError("in_every_model(): no models")
    finite = {name: v.p for name, v in by_model.items() if math.isfinite(v.p)}
    main = max(finite, key=finite.__getitem__) if finite else None
    return replace(all_of(by_model, main=main), n=len(by_model))
