"""Exclusive Self Attention (XSA, arXiv 2603.09078): the verdict rules of its claims, numbers in, a
:class:`~attnlab.runner.verdicts.Verdict` out (the rows' wording is :mod:`attnlab.papers.xsa.claims`).

Every rule is one of the project's (:mod:`attnlab.runner.verdicts`), keyed by name (seed, layer, evaluation
step, learning rate, sink count, timing repeat): two conditions pair by name, never by position. A claim made
of parts ("in every layer", "at every learning rate", "in every pretrained model", "time and memory") is
:func:`attnlab.runner.composite.all_of` of its parts. A trend over the layers of one fixed pretrained model is
:func:`~attnlab.runner.verdicts.order_rule` on its per-layer values (the layers are the units, never the text
windows behind each value); a trend over the layers of trained models is one slope per seed. Every threshold
comes from :mod:`attnlab.runner.thresholds`; where its registry entry is post hoc the rule says so and gives
the verdict at the plain null beside it (:func:`attnlab.runner.thresholds.posthoc`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from attnlab.papers.xsa.zero_shot import baseline_label, best_baseline
from attnlab.runner import thresholds
from attnlab.runner.claims import interval
from attnlab.runner.composite import all_of
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    GATE,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    Side,
    Verdict,
    above_chance,
    equivalence_rule,
    exact_rule,
    gated,
    mean_rule,
    not_testable,
    order_rule,
    paired,
    paired_rule,
    slope_rule,
    slopes,
)

#: Alg. 1: the largest |z_i . v_i| / (|y_i| |v_i|) that counts as rounding. The identity is exact in real
#: arithmetic; float32 rounding of a normalised dot product is ~1e-7 per term, so 1e-5 leaves two orders of
#: magnitude for accumulation while any real leak of v_i (a cosine of 1e-3 or more) fails.
ORTHOGONAL_TOLERANCE = thresholds.value("xsa.ORTHOGONAL_TOLERANCE")
#: Fig. 2: the XSA/SA time or memory ratio that counts as "minimal overhead" (the paper prints no number).
OVERHEAD_LIMIT = thresholds.value("xsa.OVERHEAD_LIMIT")
#: Fig. 4: the equivalence margin of "nearly constant": the XSA - SA margin may drift by at most this many
#: nats (per byte at the byte scales, per token at paper scale) per doubling of the peak learning rate.
STEADY_SLOPE_MARGIN = thresholds.value("xsa.STEADY_SLOPE_MARGIN")
#: Gap over training: the early gap is read no sooner than this many warm-up lengths into training (and no
#: sooner than a quarter of it): just after warm-up the loss falls fastest, so there a small lead in time
#: shows as a large loss gap.
EARLY_WARMUPS = int(thresholds.value("xsa.EARLY_WARMUPS"))

Seeded = Mapping[Hashable, float]  # {seed: value}


def every(parts: Mapping[str, Verdict]) -> Verdict:
    """A claim about every unit of a set ("in every layer", "at every evaluation", "at every learning rate",
    "in every pretrained model"): :func:`~attnlab.runner.composite.all_of` of the units' verdicts, showing the
    least clear unit (the largest p) unless another decides."""
    if not parts:
        raise ValueError("every(): no units to judge")
    finite = {name: v.p for name, v in parts.items() if math.isfinite(v.p)}
    main = max(finite, key=finite.__getitem__) if finite else None
    return all_of(parts, main=main)


# Fig. 1, Alg. 1 -------------------------------------------------------------------------------------------


def verdict_similarity_bias(cos_yv: Mapping[Hashable, Seeded], cos_vv: Mapping[Hashable, Seeded]) -> Verdict:
    """Fig. 1: "SA output is aligned with the token's own value" in every layer, from ``{layer: {seed:
    value}}`` of cos(y_i, v_i) and of the values' own mean cos(v_i, v_j) (the alignment any value gets): per
    layer the margin cos(y_i, v_i) - max(cos(v_i, v_j), 0) paired by seed, above 0 by
    :func:`~attnlab.runner.verdicts.mean_rule`, every layer by :func:`every`."""
    if set(cos_yv) != set(cos_vv):
        raise ValueError(f"the layers differ: {sorted(cos_yv, key=str)} vs {sorted(cos_vv, key=str)}")
    margins = {
        layer: paired(cos_yv[layer], {s: max(float(v), 0.0) for s, v in cos_vv[layer].items()})
        for layer in cos_yv
    }
    return every({str(layer): mean_rule(m, "above") for layer, m in margins.items()})


def verdict_grows_with_depth(by_seed: Mapping[Hashable, Sequence[float]]) -> Verdict:
    """Fig. 1: "the quantity grows with depth" in the trained models, from ``{seed: [value of layer 0, 1,
    ...]}``: :func:`~attnlab.runner.verdicts.slope_rule` of the least-squares slope against the layer index
    per seed (a trained model is the unit), above 0 (evidence: the mean slope per layer)."""
    layers = {len(v) for v in by_seed.values()}
    if len(layers) != 1:
        raise ValueError(f"the seeds have different numbers of layers: {sorted(layers)}")
    return slope_rule(range(layers.pop()), by_seed, "above")


def verdict_every_layer_above(by_layer: Mapping[Hashable, Sequence[float]], null: float) -> Verdict:
    """Fig. 1: "the quantity is above ``null`` in every layer" (mean cos(v_i, v_j) above 0; a_ii above uniform
    causal attention's), from ``{layer: [value per seed]}``: :func:`every` layer's
    :func:`~attnlab.runner.verdicts.mean_rule` over its seeds."""
    return every({str(layer): mean_rule(values, "above", null) for layer, values in by_layer.items()})


def verdict_orthogonal(residuals: Sequence[float], tolerance: float = ORTHOGONAL_TOLERANCE) -> Verdict:
    """Alg. 1: "XSA's output is orthogonal to the token's own value", an identity, from |z_i . v_i| /
    (|y_i| |v_i|) per layer, sequence, head and seed: :func:`~attnlab.runner.verdicts.exact_rule` of the
    largest (values that are not a number, where |y_i| |v_i| = 0, left out) below ``tolerance``."""
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not 0 <= tolerance < math.inf
    ):
        raise ValueError(f"verdict_orthogonal(): the tolerance is a finite number >= 0; got {tolerance!r}")
    values = np.asarray(residuals, float)
    finite = values[~np.isnan(values)]
    largest = float(finite.max()) if len(finite) else math.nan
    return exact_rule(largest, tolerance, "below", n=len(values), what="the largest residual")


def orthogonal(residuals: Sequence[float]) -> Verdict:
    """:func:`verdict_orthogonal` at ``ORTHOGONAL_TOLERANCE``, with the verdict at the plain bound 0 (exactly
    orthogonal, no rounding allowed) beside it where the registry marks the tolerance post hoc."""
    return thresholds.posthoc(
        "xsa.ORTHOGONAL_TOLERANCE", verdict_orthogonal(residuals), verdict_orthogonal(residuals, 0.0)
    )


# Fig. 1 on pretrained models ------------------------------------------------------------------------------


def verdict_above_baseline(margins_by_window: Sequence[float]) -> Verdict:
    """Fig. 1 on one pretrained model: "the quantity exceeds its null" (cos(y_i, v_i) beyond uniform mixing,
    a far token, the previous token's value or the same weights with the non-sink keys shuffled; a_ii beyond
    uniform attention's or a_(i,i-1); cos(v_i, v_j) above 0; each with and without the sink), from one margin
    per text window (the mean over layers of the quantity minus its null):
    :func:`~attnlab.runner.verdicts.mean_rule` above 0 over the windows, the units of a claim about one fixed
    model reading text (a mean over this model's text, not over models). The shuffled null is drawn afresh
    for every query of every head, layer and window, so each window's margin averages thousands of its draws
    and the windows' spread carries the draws' spread with the text's."""
    return mean_rule(margins_by_window, "above")


def verdict_rises_with_depth(depth: Sequence[float], per_layer: Sequence[float]) -> Verdict:
    """Fig. 1 on one pretrained model: "the quantity grows with depth", from its value per layer (the mean
    over windows) against the layers' relative depth: :func:`~attnlab.runner.verdicts.order_rule` above 0,
    the layers as units (a fixed model's layer profile barely varies between windows, so windows as units
    would make any slope significant)."""
    return order_rule(depth, per_layer, "above")


def verdict_in_every_model(by_model: Mapping[str, Verdict]) -> Verdict:
    """Fig. 1 "in every pretrained model": :func:`every` model's verdict of the same claim."""
    return every(by_model)


# Fig. 2 ---------------------------------------------------------------------------------------------------


def per_repeat_ratios(
    sa_ms: Mapping[Hashable, Seeded], xsa_ms: Mapping[Hashable, Seeded]
) -> dict[Hashable, float]:
    """``{repeat: ratio}``: per timing repeat, the geometric mean over the block configurations of XSA's time
    over SA's in that repeat, from ``{configuration: {repeat: ms}}`` of each kind timed in alternation in one
    process (:func:`attnlab.papers.xsa.diagnostics.alternated_block_costs`), paired by configuration and
    repeat name."""
    if set(sa_ms) != set(xsa_ms):
        raise ValueError(f"the configurations differ: {sorted(map(str, set(sa_ms) ^ set(xsa_ms)))}")
    logs: dict[Hashable, list[float]] = {}
    for config, sa in sa_ms.items():
        xsa = xsa_ms[config]
        if set(sa) != set(xsa):
            raise ValueError(
                f"per_repeat_ratios(): SA and XSA were not timed over the same repeats at {config}"
            )
        for repeat in sa:
            logs.setdefault(repeat, []).append(math.log(xsa[repeat]) - math.log(sa[repeat]))
    if len({len(v) for v in logs.values()}) > 1:
        raise ValueError("per_repeat_ratios(): the configurations were not timed over the same repeats")
    return {r: math.exp(float(np.mean(v))) for r, v in logs.items()}


def verdict_minimal_overhead(
    time_ratios: Seeded, memory_ratios: Sequence[float], limit: float = OVERHEAD_LIMIT
) -> Verdict:
    """Fig. 2: "XSA adds minimal time and memory", from the paired XSA/SA time ratio of every timing repeat
    (``{repeat: ratio}``, :func:`per_repeat_ratios`) and the XSA/SA memory ratio of every block configuration:
    :func:`~attnlab.runner.composite.all_of` of time (:func:`~attnlab.runner.verdicts.mean_rule` over the
    repeats, below ``limit``) and memory (deterministic: :func:`~attnlab.runner.verdicts.exact_rule` of the
    geometric mean over the configurations below ``limit``)."""
    memory = [float(r) for r in memory_ratios]
    if not time_ratios or not memory:
        return not_testable("no block configuration was timed", n=0, null=limit)
    time = mean_rule(list(time_ratios.values()), "below", limit)
    if all(r > 0 and math.isfinite(r) for r in memory):
        mean = math.exp(float(np.mean(np.log(memory))))
    else:
        mean = math.nan
    size = exact_rule(mean, limit, "below", n=len(memory), what="the memory ratio (geometric mean)")
    return all_of({"time": time, "memory": size}, main="time")


def minimal_overhead(time_ratios: Seeded, memory_ratios: Sequence[float]) -> Verdict:
    """:func:`verdict_minimal_overhead` at ``OVERHEAD_LIMIT``; the registry marks it post hoc, so the reason
    gives the verdict at the plain null beside it: no overhead at all (ratio 1)."""
    return thresholds.posthoc(
        "xsa.OVERHEAD_LIMIT",
        verdict_minimal_overhead(time_ratios, memory_ratios, OVERHEAD_LIMIT),
        verdict_minimal_overhead(time_ratios, memory_ratios, 1.0),
    )


# Fig. 3 and the gap over training -------------------------------------------------------------------------


def verdict_gap_below_zero(xsa: Seeded, other: Seeded) -> Verdict:
    """Figs. 3, 6 and the controls: "XSA's loss is below the other's", from each model's loss per seed
    (``{seed: loss}``): :func:`~attnlab.runner.verdicts.paired_rule` of XSA minus the other, paired by seed,
    below 0."""
    return paired_rule(xsa, other, "below")


def verdict_beats_previous_value_pooled(
    xsa: Mapping[str, Seeded], previous_value: Mapping[str, Seeded]
) -> Verdict:
    """The controls, pooled over sizes: "XSA beats projecting out the previous token's value" (XSA's
    specificity to the own value: ``xsa-prev`` removes v_(i-1) instead of v_i, the same rank-1 projection of
    a neighbour). The rule was stated here, with its unit and side, before any table judged with it was
    seen:

    - evidence: each model's final validation loss per size and seed, ``{size: {seed: loss}}``, at every
      size trained with the controls, the same seeds at each;
    - per seed, XSA's loss minus ``xsa-prev``'s of the same seed, averaged over the sizes (one number per
      seed: a seed's runs at different sizes are not independent replications of the claim);
    - :func:`~attnlab.runner.verdicts.paired_rule` of those per-seed means, below 0, the seeds as units (n =
      seeds), no margin and no threshold: holds when the 95% t interval lies below 0.

    One test in place of one per size: the per-size rows stay in the table as description, this row is the
    claim. Not testable without a size, or with sizes whose seeds differ (an error)."""
    if set(xsa) != set(previous_value):
        raise ValueError(f"the sizes differ: {sorted(xsa)} vs {sorted(previous_value)}")
    if not xsa:
        return not_testable("no size was trained with the controls", n=0, null=0.0)
    sizes = list(xsa)
    seeds = set(xsa[sizes[0]])
    if any(set(xsa[s]) != seeds or set(previous_value[s]) != seeds for s in sizes):
        raise ValueError(
            "verdict_beats_previous_value_pooled(): the sizes were not trained with the same seeds"
        )
    mean_xsa = {seed: float(np.mean([xsa[s][seed] for s in sizes])) for seed in seeds}
    mean_prev = {seed: float(np.mean([previous_value[s][seed] for s in sizes])) for seed in seeds}
    return paired_rule(mean_xsa, mean_prev, "below")


def verdict_gain_grows_with_size(
    parameters: Mapping[str, float], gaps_by_seed: Mapping[Hashable, Mapping[str, float]]
) -> Verdict:
    """Table 2's gain rising with model size (0.26, 1.03, 1.36 points at 0.7B, 1.3B, 2.7B), read on the loss:
    "XSA's gain over SA grows with model size", from each size's parameters (without embeddings) and each
    seed's XSA - SA final validation gap per size (``{seed: {size: gap}}``, same seed: same data order): per
    seed the least-squares slope of the gap against log2(parameters), judged by
    :func:`~attnlab.runner.verdicts.slope_rule` below 0 (the gap deepens with size), the seeds as units (n =
    seeds). Not testable with fewer than 3 sizes or one seed. A seed missing a size is an error."""
    sizes = list(parameters)
    for seed, gaps in gaps_by_seed.items():
        if set(gaps) != set(sizes):
            raise ValueError(f"seed {seed!r} has the sizes {sorted(gaps)}, not {sorted(sizes)}")
    x = np.log2(np.asarray([parameters[s] for s in sizes], float))
    return slope_rule(x, {seed: [gaps[s] for s in sizes] for seed, gaps in gaps_by_seed.items()}, "below")


def verdict_below_throughout(gaps_by_evaluation: Mapping[Hashable, Sequence[float]]) -> Verdict:
    """Fig. 3: "XSA's validation loss is below SA's throughout training", from the XSA - SA gap per seed (same
    seed) at every evaluation after warm-up: :func:`every` evaluation's
    :func:`~attnlab.runner.verdicts.mean_rule` below 0; not testable without an evaluation after warm-up."""
    if not gaps_by_evaluation:
        return not_testable("no evaluation after warm-up", n=0, null=0.0)
    return every({str(k): mean_rule(v, "below") for k, v in gaps_by_evaluation.items()})


def early_and_final(
    gaps: pd.DataFrame | Sequence[int], warmup: int, warmups: int = EARLY_WARMUPS
) -> tuple[int, int]:
    """The evaluation steps where the gap over training is read (of ``gaps``' ``step`` column, or of a
    sequence of steps): the early one, the first evaluation at or after both a quarter of training and
    ``warmups`` (:data:`EARLY_WARMUPS`) warm-up lengths of ``warmup`` steps (the last evaluation if none is),
    and the last."""
    column = gaps["step"] if isinstance(gaps, pd.DataFrame) else gaps
    steps = np.array(sorted(set(int(s) for s in column)))
    last = int(steps[-1])
    later = steps[steps >= max(last / 4, warmups * warmup)]
    return int(later[0]) if len(later) else last, last


def verdict_gap_narrows(early: Seeded, final: Seeded) -> Verdict:
    """Gap over training: "XSA's advantage narrows by the end of training", two parts judged together by
    :func:`~attnlab.runner.composite.all_of`: XSA is ahead early in training (the XSA - SA gaps per seed below
    0, :func:`~attnlab.runner.verdicts.mean_rule`: an advantage to narrow) and the gap moves towards zero
    (final minus early, paired by seed, above 0, :func:`~attnlab.runner.verdicts.paired_rule`). No gate:
    an early gap that is not an advantage is evidence against the claim, not a reason to set it aside."""
    return all_of(
        {"ahead early": mean_rule(list(early.values()), "below"),
         "the gap moves towards zero": paired_rule(final, early, "above")},
        main="the gap moves towards zero",
    )  # fmt: skip


def gap_narrows(by_step: Mapping[int, Seeded], warmup: int) -> Verdict:
    """:func:`verdict_gap_narrows` with the early gap read after ``EARLY_WARMUPS`` warm-up lengths
    (:func:`early_and_final`, from ``{step: {seed: gap}}``); the registry marks that number post hoc, so
    the reason gives the verdict read at the plain rule beside it: at a quarter of training, no warm-ups."""

    def at(warmups: int) -> Verdict:
        early, last = early_and_final(list(by_step), warmup, warmups)
        return verdict_gap_narrows(by_step[early], by_step[last])

    return thresholds.posthoc("xsa.EARLY_WARMUPS", at(EARLY_WARMUPS), at(0))


# Figs. 4-6 ------------------------------------------------------------------------------------------------


def verdict_steady_margin(
    lrs: Sequence[float],
    gaps_by_seed: Mapping[Hashable, Sequence[float]],
    margin: float = STEADY_SLOPE_MARGIN,
) -> Verdict:
    """Fig. 4: "XSA's margin over SA is nearly constant across learning rates", from ``{seed: [XSA - SA gap at
    each of lrs]}``: the least-squares slope of the gap against log2(lr) per seed (nats per doubling),
    judged by :func:`~attnlab.runner.verdicts.equivalence_rule` against +- ``margin``. At ``margin`` 0 (the
    plain null: no drift allowed) an equivalence cannot hold: "does not hold" when the slopes' two-sided 95%
    interval excludes 0 (the margin drifts), else "inconclusive". Not testable with fewer than two learning
    rates or one seed (one unit)."""
    x = np.log2(np.asarray(lrs, float))
    if len(np.unique(x)) < 2:
        return not_testable(f"{len(np.unique(x))} learning rate(s); a slope needs 2", n=len(gaps_by_seed),
                            null=0.0, margin=margin)  # fmt: skip
    per_seed = list(slopes(x, gaps_by_seed).values())
    if margin > 0:
        return equivalence_rule(per_seed, margin)
    side: Side = "below" if np.mean(per_seed) < 0 else "above"
    drift = mean_rule(per_seed, side)
    if drift.word == HOLDS:
        return replace(
            drift, word=DOES_NOT_HOLD, why="the slope's 95% interval excludes 0: the margin drifts"
        )
    if drift.word == NOT_TESTABLE:
        return drift
    return replace(drift, word=INCONCLUSIVE, why="with no margin allowed, constancy cannot be confirmed")


def steady_margin(lrs: Sequence[float], gaps_by_seed: Mapping[Hashable, Sequence[float]]) -> Verdict:
    """:func:`verdict_steady_margin` at ``STEADY_SLOPE_MARGIN``; the registry marks it post hoc, so the
    reason gives the verdict at the plain null (margin 0) beside it."""
    return thresholds.posthoc(
        "xsa.STEADY_SLOPE_MARGIN",
        verdict_steady_margin(lrs, gaps_by_seed),
        verdict_steady_margin(lrs, gaps_by_seed, 0.0),
    )


def verdict_below_at_every_setting(gaps_by_setting: Mapping[Hashable, Sequence[float]]) -> Verdict:
    """Figs. 4 and 6: "XSA is below SA at every setting" (learning rate, sink count), from the XSA - SA gap
    per seed at each setting: :func:`every` setting's :func:`~attnlab.runner.verdicts.mean_rule` below 0."""
    return every({str(k): mean_rule(v, "below") for k, v in gaps_by_setting.items()})


def verdict_gain_grows_with_length(
    seq_lens: Sequence[float], gaps_by_seed: Mapping[Hashable, Sequence[float]]
) -> Verdict:
    """Fig. 5: "XSA's gain grows with sequence length", from ``{seed: [XSA - SA gap at each length]}``:
    :func:`~attnlab.runner.verdicts.slope_rule` of the slope against log2(length) per seed, below 0 (the gap
    widens; evidence: the mean slope per doubling; not testable with fewer than 3 lengths)."""
    return slope_rule(np.log2(np.asarray(seq_lens, float)), gaps_by_seed, "below")


def verdict_implicit_sink(xsa_mass: Seeded, sa_mass: Seeded, sa_uniform: Seeded) -> Verdict:
    """Fig. 6, measured: "XSA acts as an implicit sink", read as: XSA puts less attention on the sinks (the
    learned ones and the first real token) than SA, from each model's mass there per seed. Not testable
    unless the baseline, SA, uses a sink (its mass over uniform attention's, paired by seed, above 0 by
    :func:`~attnlab.runner.verdicts.paired_rule`); then ``paired_rule`` of XSA minus SA below 0."""
    uses = paired_rule(sa_mass, sa_uniform, "above")
    if uses.word != HOLDS:
        diff = mean_rule(paired(xsa_mass, sa_mass), "below")
        why = f"SA's sink mass is not above uniform attention's ({interval(uses, 3)}: {uses.why})"
        return not_testable(why, estimate=diff.estimate, low=diff.low, high=diff.high, n=diff.n, null=0.0)
    return paired_rule(xsa_mass, sa_mass, "below")


# Table 2 --------------------------------------------------------------------------------------------------


def above_baseline(correct: int, n: int, baselines: Mapping[str, float]) -> Verdict | None:
    """Table 2's gate: None when the 95% Wilson interval of ``correct / n`` lies above the best of
    ``baselines`` (:func:`~attnlab.papers.xsa.zero_shot.trivial_baselines` and the model's no-prompt one; see
    :func:`~attnlab.papers.xsa.zero_shot.best_baseline`), so the task can be judged; otherwise a "not testable
    here" verdict naming that baseline. The rule is :func:`~attnlab.runner.verdicts.above_chance` with the
    best trivial baseline in place of chance."""
    _, value = best_baseline(baselines)
    label = baseline_label(baselines, value)
    if value >= 1.0:
        return not_testable(f"the trivial baseline ({label}) answers every item", n=n, null=value, rule=GATE)
    gate = above_chance(correct, n, value)
    if gate is None:
        return None
    why = (
        f"accuracy {gate.estimate:.3f} (95% interval {gate.low:.3f}-{gate.high:.3f}) is not above its best "
        f"trivial baseline, {label}: {value:.3f}"
    )
    return Verdict(gate.word, why, gate.estimate, gate.low, gate.high, n, value, rule=GATE)


def verdict_zero_shot_task(xsa_points: Seeded, sa_points: Seeded, sa_gate: Verdict | None) -> Verdict:
    """Table 2, one task: "XSA improves zero-shot accuracy", from each model's accuracy (points) per seed,
    after the baseline's gate (:func:`above_baseline`: SA's accuracy above the task's best trivial baseline;
    None: passed; else not testable here: SA did not learn the task): :func:`~attnlab.runner.verdicts.
    paired_rule` of XSA minus SA, paired by seed, above 0. XSA has no gate: whether it beats the baselines
    is part of what the claim is judged on."""
    return gated(sa_gate, paired_rule(xsa_points, sa_points, "above"), "SA")


def verdict_zero_shot_average(xsa_points: Seeded, sa_points: Seeded, testable: int) -> Verdict:
    """Table 2, the average: each model's accuracy (points) per seed averaged over the ``testable`` tasks (SA
    above their best trivial baseline): not testable when there is none, else
    :func:`~attnlab.runner.verdicts.paired_rule` of XSA minus SA above 0."""
    if isinstance(testable, bool) or not isinstance(testable, int) or testable < 0:
        raise ValueError(f"verdict_zero_shot_average(): testable counts tasks (>= 0); got {testable!r}")
    if testable == 0:
        return not_testable("no task where SA is above its trivial baselines", n=len(xsa_points), null=0.0)
    return paired_rule(xsa_points, sa_points, "above")
