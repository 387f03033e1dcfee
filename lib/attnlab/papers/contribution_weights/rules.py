"""The decision rules of the contribution-weights claims (arXiv 2606.07604): pure functions, numbers in and a
:class:`~attnlab.runner.verdicts.Verdict` out, each by the project's shared rules
(:mod:`attnlab.runner.verdicts`); a claim made of parts, or judged under several conditions (text sets x
layer sets, tasks), is :func:`attnlab.runner.composite.all_of` of them. ``claims`` words the rows.

Units, as each claim lives: the layers of the one model analysed (Fig. 1, the decomposition, the sink-norm
removal: a statement about that model's layers, not about models in general), its windows of text (the
faithfulness curves, the anti-alignment), its items (downstream) and its heads (the convex minimum).
Every comparison pairs by name (window, item, layer). The thresholds come from the registry
(:mod:`attnlab.runner.thresholds`); a row judged with one fixed after a table had been seen is wrapped by
:func:`~attnlab.runner.thresholds.posthoc` with the same claim judged at its plain null."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace

from attnlab.runner import thresholds
from attnlab.runner.composite import all_of
from attnlab.runner.verdicts import Verdict, mean_rule, not_testable, paired_rule, share_rule

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
#: The near-orthogonal band +-0.1 that the sink-cosine figure draws. No verdict uses it: it was fixed after
#: the cpu run's -0.041 had been seen, so anti-alignment is judged by sign and against ordinary positions.
ANTI_ALIGNMENT = thresholds.value("contribution_weights.ANTI_ALIGNMENT")
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
    ppl: tuple[float, float] | tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
    cone: tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
    noise: tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
) -> Verdict:
    """The claim "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise",
    from (clean, sink removed) pairs: the cone concentration and the output-norm spread (noise) per layer of
    one model (``{layer: value}``), each rising, paired by layer (:func:`paired_rule`), and the perplexity:
    per window (``{window: ppl}``), rising paired by window; or one number per state pooled over every window,
    which has no interval, so that part is not testable here. all_of the three."""
    clean, removed = ppl
    if isinstance(clean, Mapping) and isinstance(removed, Mapping):
        rises = paired_rule(removed, clean, "above")
    elif isinstance(clean, Mapping) or isinstance(removed, Mapping):
        raise ValueError("the perplexity: both states per window, or both pooled")
    else:
        rises = not_testable(
            f"one perplexity per state, pooled over the windows ({clean:.4g} -> {removed:.4g}): no "
            "per-window values, no interval",
            estimate=removed - clean, n=1, null=0.0,
        )  # fmt: skip
    return all_of({
        "cone rises": paired_rule(cone[1], cone[0], "above"),
        "PPL rises": rises,
        "noise rises": paired_rule(noise[1], noise[0], "above"),
    })  # fmt: skip
