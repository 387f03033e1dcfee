"""The decision rules of the contribution-weights claims (arXiv 2606.07604): pure functions, numbers in and a
:class:`~attnlab.runner.verdicts.Verdict` out, each by the project's shared rules
(:mod:`attnlab.runner.verdicts`); a claim made of parts, or judged under several conditions (text sets x
layer sets, tasks), is :func:`attnlab.runner.composite.all_of` of them. ``claims`` words the rows.

Units, as each claim lives: the layers of the one model analysed (Fig. 1, the decomposition, the sink-norm
removal's cone and noise, the negative contributions: a statement about that model's layers, not about models
in general), its windows of text (the faithfulness curves, the anti-alignment, the sink-norm removal's
perplexity), its items (downstream), its heads (the convex minimum), the timing repeats of one process (the
cost in time) and none for a deterministic quantity (the row sums of c, the cost in memory). Every comparison
pairs by name (window, item, layer, repeat). The thresholds come from the registry
(:mod:`attnlab.runner.thresholds`); a row judged with one fixed after a table had been seen is wrapped by
:func:`~attnlab.runner.thresholds.posthoc` with the same claim judged at its plain null."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace

from attnlab.runner import thresholds
from attnlab.runner.composite import all_of
from attnlab.runner.verdicts import (
    Verdict,
    check_within,
    exact_rule,
    mean_rule,
    not_testable,
    paired_rule,
    share_rule,
)

_FIRST_TOKEN = "contribution_weights.FIRST_TOKEN_ATTENTION"
_TAIL = "contribution_weights.TAIL_CORRELATION"
_SATURATION = "contribution_weights.SATURATION_SHARE"

#: Fig. 1, "a large attention mass": the first token's mean attention above this (post hoc: the row also
#: gives the verdict against uniform attention, :func:`uniform_first_token`).
FIRST_TOKEN_ATTENTION = thresholds.value(_FIRST_TOKEN)
#: "driven by attention and alignment jointly": the tail's correlation with each above this (post hoc: the
#: row also gives the verdict against 0).
TAIL_CORRELATION = thresholds.value(_TAIL)
#: "the majority of heads": a share above one half (the claim's words).
HEAD_MAJORITY = thresholds.value("contribution_weights.HEAD_MAJORITY")
#: The saturation gate: the smallest fraction already gives more than this share of the largest fraction's
#: effect for every measure (post hoc: the row also gives the verdict without the gate).
SATURATION_SHARE = thresholds.value(_SATURATION)

SATURATION = "gate: the curves must not saturate at the smallest fraction"

Pairs = Mapping[str, tuple[Mapping[Hashable, float], Mapping[Hashable, float]]]  # step -> (a, b) by unit


def paired_steps(steps: Pairs) -> dict[str, Verdict]:
    """Each step of an ordering ``{step: (a, b)}``, a - b above 0 paired by name (window, item):
    :func:`~attnlab.runner.verdicts.paired_rule`."""
    return {step: paired_rule(a, b, "above") for step, (a, b) in steps.items()}


# --- Fig. 1 -----------------------------------------------------------------------------------------------


def uniform_first_token(tokens: int) -> float:
    """The first token's mean attention if every query attended uniformly to its causal prefix, in a window of
    ``tokens`` tokens: query i gives 1 / (i + 1) to token 0, averaged over the queries i = 1 .. T - 1 that the
    decomposition averages (``sinks.decomposition``). Fig. 1's plain null: attention without a sink."""
    if tokens < 2:
        raise ValueError(f"a window of {tokens} tokens has no query after the first")
    return sum(1 / (i + 1) for i in range(1, tokens)) / (tokens - 1)


def first_token(
    attention: Mapping[Hashable, float], contribution: Mapping[Hashable, float], uniform: float
) -> Verdict:
    """Fig. 1, "the first token gets a large attention mass but contributes little", over the layers of one
    model (``{layer: value}``, the first token's mean attention and mean contribution weight; the layers are
    the units): all_of the mean attention above ``FIRST_TOKEN_ATTENTION`` (:func:`mean_rule`) and the
    contribution below half the attention, paired by layer (:func:`paired_rule` of attention / 2 -
    contribution above 0). ``FIRST_TOKEN_ATTENTION`` is post hoc: the row also gives the verdict with the
    attention against ``uniform`` (:func:`uniform_first_token`, no sink) instead."""
    half = {layer: a / 2 for layer, a in attention.items()}
    little = paired_rule(half, contribution, "above")  # raises on a layer on one side only
    values = list(attention.values())

    def judged(bar: float, name: str) -> Verdict:
        return all_of(
            {
                f"mean attention > {name}": mean_rule(values, "above", bar),
                "contribution < attention / 2": little,
            }
        )

    at_plain_null = judged(uniform, f"uniform {uniform:.3g}")
    return thresholds.posthoc(
        _FIRST_TOKEN,
        judged(FIRST_TOKEN_ATTENTION, f"{FIRST_TOKEN_ATTENTION:g}"),
        replace(at_plain_null, null=uniform),
    )


# --- faithfulness -----------------------------------------------------------------------------------------


def saturation_gate(small: Mapping[str, float], large: Mapping[str, float]) -> Verdict | None:
    """The gate before a faithfulness condition: the mean delta-PPL each measure gives at the smallest
    (``small``) and the largest (``large``) fraction. "Not testable here: saturated" when for every measure
    the largest fraction raises the perplexity and the smallest already gives more than ``SATURATION_SHARE``
    of that: the curves are then flat and cannot order the measures (a property of every measure alike, never
    of which one wins). Otherwise None. Estimate: the smallest share small / large over the measures."""
    if not small or set(small) != set(large):
        raise ValueError(f"need the same measures at both fractions, got {sorted(small)} and {sorted(large)}")
    shares = {m: small[m] / large[m] if large[m] > 0 else -math.inf for m in small}
    lowest = min(shares.values())
    if lowest > SATURATION_SHARE:
        why = f"saturated (the smallest fraction gives >= {lowest:.0%} of the largest's effect everywhere)"
        return not_testable(why, estimate=lowest, n=len(shares), null=SATURATION_SHARE, rule=SATURATION)
    return None


@dataclass(frozen=True)
class Condition:
    """One (text set, layer set) condition of a faithfulness claim: ``steps`` ``{step: (a, b)}`` of per-window
    log-area values whose a - b the paper puts above 0 (``claims.faithfulness_condition``), and each measure's
    mean delta-PPL at the smallest and largest fraction (``small``, ``large``: the saturation gate)."""

    steps: Pairs
    small: Mapping[str, float]
    large: Mapping[str, float]


def faithfulness(conditions: Mapping[str, Condition | Verdict]) -> Verdict:
    """The faithfulness ordering "raw attention < value-weighted < contribution weights" under every
    condition (``{name: Condition}``; a :class:`Verdict` for a condition not testable here, e.g. a text set
    whose data is unavailable): all_of every condition's steps, each paired by window (the windows are the
    units), a saturated condition (:func:`saturation_gate`) one part not testable here.
    ``SATURATION_SHARE`` is post hoc: where a gate was evaluated, the row also gives the verdict without
    it."""
    if not conditions:
        raise ValueError("no conditions to judge")
    gated_parts: dict[str, Verdict] = {}
    plain_parts: dict[str, Verdict] = {}
    evaluated = False
    for name, condition in conditions.items():
        if isinstance(condition, Verdict):
            gated_parts[name] = plain_parts[name] = condition
            continue
        steps = {f"{name}: {step}": v for step, v in paired_steps(condition.steps).items()}
        plain_parts |= steps
        gate = saturation_gate(condition.small, condition.large)
        evaluated = True
        gated_parts |= {name: gate} if gate is not None else steps
    verdict = all_of(gated_parts)
    return thresholds.posthoc(_SATURATION, verdict, all_of(plain_parts)) if evaluated else verdict


# --- downstream -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One downstream task: the gate on the clean model's accuracy (None: above chance,
    :func:`~attnlab.runner.verdicts.above_chance`; a gate on the baseline only) and the ``steps``
    ``{step: (a, b)}`` of per-item credits whose a - b the paper puts above 0."""

    gate: Verdict | None
    steps: Pairs


def downstream(tasks: Mapping[str, Task | Verdict]) -> Verdict:
    """Downstream, "interventions guided by contribution weights hurt accuracy most (top zeroed) and least
    (bottom zeroed)", in every task (``{task: Task}``; a :class:`Verdict` for a task not testable here):
    all_of every task's comparisons, each paired by item (the items are the units). A task whose clean model
    is at chance is one part not testable here (its gate): the row is then not testable unless another part
    refutes it."""
    if not tasks:
        raise ValueError("no tasks to judge")
    parts: dict[str, Verdict] = {}
    for name, task in tasks.items():
        if isinstance(task, Verdict):
            parts[name] = task
        elif task.gate is not None:
            parts[name] = task.gate
        else:
            parts |= {f"{name}: {step}": v for step, v in paired_steps(task.steps).items()}
    return all_of(parts)


# --- sinks ------------------------------------------------------------------------------------------------


def decomposition(
    sink_attention: Mapping[Hashable, float],
    sink_geometry: Mapping[Hashable, float],
    tail_attention: Mapping[Hashable, float],
    tail_geometry: Mapping[Hashable, float],
) -> Verdict:
    """The decomposition claim, "the sink's contribution is driven by value geometry, not attention; the
    tail's by attention and alignment jointly", over the layers of one model (the per-layer correlations
    ``{layer: r}`` of the contribution weight with attention and with geometry, norm ratio x cosine): all_of
    the sink's correlation with geometry above its correlation with attention (paired by layer) and the
    tail's mean correlation with each above ``TAIL_CORRELATION`` (:func:`mean_rule`). ``TAIL_CORRELATION``
    is post hoc: the row also gives the verdict with the tail's correlations against 0."""
    layers = set(sink_attention)
    if not all(set(m) == layers for m in (sink_geometry, tail_attention, tail_geometry)):
        raise ValueError("the four correlations must cover the same layers")
    sink = paired_rule(sink_geometry, sink_attention, "above")

    def judged(bar: float) -> Verdict:
        return all_of({
            "sink: r(c, geometry) > r(c, attention)": sink,
            f"tail: r(c, attention) > {bar:g}": mean_rule(list(tail_attention.values()), "above", bar),
            f"tail: r(c, geometry) > {bar:g}": mean_rule(list(tail_geometry.values()), "above", bar),
        })  # fmt: skip

    return thresholds.posthoc(_TAIL, judged(TAIL_CORRELATION), judged(0.0))


def anti_aligned(sink: Mapping[Hashable, float], controls: Mapping[str, Mapping[Hashable, float]]) -> Verdict:
    """The claim "the sink's projected values are anti-aligned with the other tokens'" (the paper's sink
    analysis: a negative cosine), from one mean cos(v~_0, v~_j) per window (``{window: cosine}``; the windows
    are the units) and the same statistic per window at ordinary positions p (``controls``, cos(v~_p, v~_j)):
    all_of the sink's mean below 0 (:func:`mean_rule`, by sign) and, paired by window, below each control's
    (:func:`paired_rule`). No margin: how far below 0 is reported, not judged."""
    parts = {"sink cosine < 0": mean_rule(list(sink.values()), "below", 0.0)}
    for name, values in controls.items():
        parts[f"sink < {name}"] = paired_rule(sink, values, "below")
    return all_of(parts)


def convex_minimum(inside: int, heads: int) -> Verdict:
    """The claim "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
    read as "the majority of heads" (the heads are the units): the share of ``heads`` whose binned ||o|| has
    an interior minimum (``sinks.binned_minimum``), by :func:`share_rule` (Wilson interval) against
    ``HEAD_MAJORITY``."""
    return share_rule(inside, heads, HEAD_MAJORITY, "above")


def sink_removal(
    cone: tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
    noise: tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
) -> Verdict:
    """The claim "removing the sink's value norm collapses head outputs into a cone; noise rises" (the paper's
    sink-norm removal), from (clean, sink removed) pairs of per-layer values of one model (``{layer: value}``;
    the layers are the units): the cone concentration and the output-norm spread (noise), each rising, paired
    by layer (:func:`paired_rule`); all_of the two."""
    return all_of({
        "cone rises": paired_rule(cone[1], cone[0], "above"),
        "noise rises": paired_rule(noise[1], noise[0], "above"),
    })  # fmt: skip


def perplexity_rises(clean: Mapping[Hashable, float], removed: Mapping[Hashable, float]) -> Verdict:
    """The sink-norm removal's "PPL rises", from each window's mean next-token NLL (its log perplexity,
    ``{window: nll}``) clean and with the sink's value terms zeroed: the rise paired by window
    (:func:`paired_rule`; the windows are the units; the pooled perplexity is the number shown)."""
    return paired_rule(removed, clean, "above")


# --- the definition's properties --------------------------------------------------------------------------


def rows_sum_to_one(scaled: Mapping[str, float], bound: float, rows: int) -> Verdict:
    """The definition's identity sum_j c_ij = 1 ("Definitions": exact whenever o_i = sum_j a_ij v~_j), a
    deterministic quantity: for each form (``{form: value}``, intra- and inter-head), the largest deviation
    |sum_j c_ij - 1| over every row of every window and layer, divided by the row's condition number, below
    ``bound``, what float rounding can reach (``sinks.rounding_bound``) by :func:`exact_rule`; all_of the
    forms. ``rows``: how many rows the largest is taken over."""
    if not scaled:
        raise ValueError("no form to judge")
    return all_of({
        f"{form}: sum_j c_ij = 1": exact_rule(
            value, bound, "below", n=rows, what="the largest |sum_j c_ij - 1| / kappa_i"
        )
        for form, value in scaled.items()
    })  # fmt: skip


def negative_contributions(shares: Mapping[Hashable, float]) -> Verdict:
    """The definition's "c can be negative (destructive interference)", from the share of negative c among
    each layer's causal terms (``{layer: share}``; the layers of the one model are the units): their mean
    above 0 (:func:`mean_rule`). A model with no negative c in any layer does not hold, exactly (a count of
    zero has no spread to test)."""
    check_within("negative_contributions", "the shares of negative c", shares, 0.0, 1.0)
    values = list(shares.values())
    if values and all(v == 0 for v in values):
        return exact_rule(0.0, 0.0, "above", n=len(values), what="the share of negative c in every layer")
    return mean_rule(values, "above", 0.0)


# --- cost -------------------------------------------------------------------------------------------------


def memory(peak: Mapping[int, float], tensor: Mapping[int, float]) -> Verdict:
    """The paper's cost, "every measure is O(T^2) memory per head: the T x T x d tensor of weighted terms is
    never formed", from the peak memory of ``contribution_weights`` above its inputs at each length T
    (``{T: GB}``, each in a fresh process: a deterministic quantity up to the allocator's pages) against the
    size of that (H, T, T, D) tensor (``tensor``, the naive form's, which the naive measurement confirms): at
    every length, peak / tensor below 1 (:func:`exact_rule`); all_of the lengths."""
    if not peak or set(peak) != set(tensor):
        raise ValueError(f"need the same lengths for both; got {sorted(peak)} and {sorted(tensor)}")
    check_within("memory", "the (H, T, T, D) tensor's size", tensor, 0.0, math.inf, positive=True)
    return all_of({
        f"T = {T}": exact_rule(
            peak[T] / tensor[T], 1.0, "below", n=1, what="peak memory / the (H, T, T, D) tensor's size"
        )
        for T in sorted(peak)
    })  # fmt: skip


def speed(pairs: Mapping[int, tuple[Mapping[Hashable, float], Mapping[Hashable, float]]]) -> Verdict:
    """Its consequence in time (the paper gives no time): at each length T, ``{T: (naive, efficient)}`` the
    seconds of each form per repeat of one process, alternated (``cost.paired_times``); the log ratio
    naive / efficient above 0 paired by repeat (:func:`paired_rule`; the repeats are the units), all_of the
    lengths. Not testable here with no length measured."""
    if not pairs:
        return not_testable("no length where the naive terms tensor fits the preset's cap", n=0, null=0.0)
    for T, (naive, efficient) in pairs.items():
        for name, times in (("naive", naive), ("efficient", efficient)):
            check_within("speed", f"the {name} seconds at T = {T}", times, 0.0, math.inf, positive=True)
    logs = {
        T: ({k: math.log(s) for k, s in naive.items()}, {k: math.log(s) for k, s in efficient.items()})
        for T, (naive, efficient) in pairs.items()
    }
    return all_of({f"T = {T}": paired_rule(*logs[T], "above") for T in sorted(logs)})
