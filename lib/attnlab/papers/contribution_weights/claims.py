"""The contribution-weights notebook's claims table (arXiv 2606.07604): each claim's verdict is a pure
function of numbers (``verdict_*``, ``saturation_gate``), judged by the project's one decision rule
(:mod:`attnlab.runner.verdicts`), and :func:`claims` measures those numbers on the experiment's results
(one :class:`Evidence` bundle) and writes the rows.

Every comparison pairs by name: windows (faithfulness, anti-alignment), items (downstream), layers (the
per-layer sink statistics of one model). A claim with several parts ("raw < value-weighted < contribution",
"large attention but little contribution") is their conjunction (:func:`all_of`); a claim judged under
several conditions (text sets x layer sets, or tasks) counts the conditions' verdicts
(:func:`verdict_conditions`). The paper states no thresholds; the few this table uses are the module's
constants below, fixed before the run."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from attnlab.hf import PRETRAINED
from attnlab.papers.contribution_weights.faithfulness import window_areas
from attnlab.papers.contribution_weights.presets import HIERARCHY, MEASURE_LABELS, RANKINGS
from attnlab.runner.claims import Claim, signed
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    Side,
    Verdict,
    VerdictEvidence,
    above_chance,
    gated,
    mean_rule,
    not_testable,
    paired_rule,
    share_rule,
)

if TYPE_CHECKING:
    from attnlab.papers.contribution_weights.experiment import ContributionExperiment

#: Fig. 1, "a large attention mass": the first token's mean attention must exceed this (this project's
#: convention, fixed before the first run: the paper shows two heads and states no number).
FIRST_TOKEN_ATTENTION = 0.3
#: "driven by attention and alignment jointly": the tail's contribution must correlate above this with each
#: (a conventional "moderate" correlation, fixed before the first run; the paper states no number).
TAIL_CORRELATION = 0.3
#: "the majority of heads": the share of heads with an interior binned minimum, against this threshold; by the
#: share rule, so a share whose Wilson interval contains 0.5 (the cpu run's 134 of 270) is inconclusive.
HEAD_MAJORITY = 0.5
#: "anti-aligned": the sink's mean cosine must lie below -ANTI_ALIGNMENT (a smallest effect of interest);
#: a mean whose 95% interval lies inside +-ANTI_ALIGNMENT is near-orthogonal, which refutes the claim.
#: Why 0.1: an angle within 84-96 degrees (|cos| < 0.1) is what "near-orthogonal" means in the usual
#: reading, and 0.1 is below 1 / sqrt(64) = 0.125, the spread of the cosine between two random directions in
#: a 64-dimensional head subspace (SmolLM2's head width), so a cosine below -0.1 is more than a random pair's
#: typical tilt. Stated openly: it was set after the cpu run's -0.041 was seen (review of 2026-12), which is
#: why it rests on the geometry above and on no run's numbers.
ANTI_ALIGNMENT = 0.1
#: Saturated: the smallest fraction already gives more than this share of the largest fraction's effect for
#: every measure, so the curves are flat and cannot order the measures (this project's gate).
SATURATION_SHARE = 0.5

ALL_OF = "all of the parts, each by its rule; one part refuted refutes the claim"
CONDITIONS = (
    "conditions, each by its rule: holds when every testable one holds; does not hold when none holds and "
    "most refute; inconclusive otherwise (also when most are inconclusive)"
)
SATURATION = "gate: the curves must not saturate at the smallest fraction"

_ORDER = (DOES_NOT_HOLD, NOT_TESTABLE, INCONCLUSIVE)  # what decides a conjunction, first to last


def _toward(v: Verdict, side: Side) -> float:
    """How far ``v``'s interval reaches towards ``side`` of its null at its near end (-inf without one)."""
    ends = [(x - v.null) if side == "above" else (v.null - x) for x in (v.low, v.high)]
    return -math.inf if any(math.isnan(e) for e in ends) else min(ends)


def _weakest(verdicts: Mapping[str, Verdict], side: Side) -> str:
    """The name of the verdict whose interval reaches least far towards ``side`` (the first one on a tie or
    where none has an interval)."""
    return min(verdicts, key=lambda k: _toward(verdicts[k], side))


def all_of(parts: Mapping[str, Verdict], side: Side = "above") -> Verdict:
    """A conjunction of verdicts ("a and b"): does not hold when a part does not (naming it: one refuted part
    refutes the conjunction); else not testable when a part is (its reason); else inconclusive when a part
    is (naming the undecided parts); else holds. The evidence is the deciding part's: the first refuted,
    untestable or undecided one; when every part holds, the weakest (its interval reaches least far towards
    ``side``, the parts' claimed side)."""
    if not parts:
        raise ValueError("no parts to judge")
    for word in _ORDER:
        named = [name for name, v in parts.items() if v.word == word]
        if named:
            v = parts[named[0]]
            if word == INCONCLUSIVE:
                why = f"{', '.join(named)} undecided ({named[0]}: {v.why})"
            else:
                why = "; ".join(f"{name}: {parts[name].why}" for name in named)
            return Verdict(word, why, v.estimate, v.low, v.high, v.n, v.null, v.margin, v.detectable,
                           f"{ALL_OF}; shown: {named[0]} ({v.rule})")  # fmt: skip
    name = _weakest(parts, side)
    v = parts[name]
    return Verdict(HOLDS, f"every part holds (weakest: {name}: {v.why})", v.estimate, v.low, v.high, v.n,
                   v.null, v.margin, v.detectable, f"{ALL_OF}; shown: {name} ({v.rule})")  # fmt: skip


def verdict_first_token(
    attention: Mapping[Hashable, float], contribution: Mapping[Hashable, float]
) -> Verdict:
    """Fig. 1, "the first token gets a large attention mass but contributes little", from the first token's
    mean attention and mean contribution weight per layer (``{layer: value}``; the layers of one model are
    the units): the mean attention lies above ``FIRST_TOKEN_ATTENTION`` (:func:`mean_rule`) and the
    contribution below half the attention, paired by layer (:func:`paired_rule` of attention / 2 -
    contribution above 0); :func:`all_of` the two."""
    half = {layer: a / 2 for layer, a in attention.items()}
    return all_of({
        f"mean attention > {FIRST_TOKEN_ATTENTION:g}": mean_rule(list(attention.values()), "above",
                                                                 FIRST_TOKEN_ATTENTION),
        "contribution < attention / 2": paired_rule(half, contribution, "above"),
    })  # fmt: skip


def saturation_gate(small: Mapping[str, float], large: Mapping[str, float]) -> Verdict | None:
    """The gate before a faithfulness verdict: the mean delta-PPL each measure gives at the smallest
    (``small``) and the largest (``large``) fraction. "Not testable here: saturated" when for every measure
    the largest fraction raises the perplexity and the smallest already gives more than half of that
    (``SATURATION_SHARE``): the curves are then flat and cannot order the measures. Otherwise None. Estimate:
    the smallest share small / large over the measures, against 0.5."""
    if not small or set(small) != set(large):
        raise ValueError(f"need the same measures at both fractions, got {sorted(small)} and {sorted(large)}")
    shares = {m: small[m] / large[m] if large[m] > 0 else -math.inf for m in small}
    lowest = min(shares.values())
    if lowest > SATURATION_SHARE:
        why = f"saturated (the smallest fraction gives >= {lowest:.0%} of the largest's effect everywhere)"
        return not_testable(why, estimate=lowest, n=len(shares), null=SATURATION_SHARE, rule=SATURATION)
    return None


def verdict_steps(steps: Mapping[str, tuple[Mapping[Hashable, float], Mapping[Hashable, float]]]) -> Verdict:
    """One condition of an ordering claim, e.g. "raw < value-weighted < contribution": ``steps`` maps each
    step to the two conditions ``(a, b)`` (``{window or item: value}``) whose difference a - b the paper puts
    above 0. Each step by :func:`paired_rule` (paired by name), the steps through :func:`all_of`."""
    return all_of({step: paired_rule(a, b, "above") for step, (a, b) in steps.items()})


def verdict_conditions(verdicts: Mapping[str, Verdict], side: Side = "above") -> Verdict:
    """A claim judged under several conditions (text sets x layer sets, or tasks), from each condition's
    verdict. The testable ones decide: not testable when none is (the first one's reason); holds when every
    testable one holds; inconclusive when most testable ones are inconclusive; does not hold when none holds
    and (so) most refute; inconclusive otherwise (the conditions disagree). A condition whose interval
    contains the null is inconclusive and never counts as refuting. The reason gives the counts; the
    evidence is the weakest testable condition's (its interval reaches least far towards ``side``), with n
    the number of testable conditions."""
    if not verdicts:
        raise ValueError("no conditions to judge")
    testable = {k: v for k, v in verdicts.items() if v.word != NOT_TESTABLE}
    if not testable:
        first = next(iter(verdicts.values()))
        return Verdict(NOT_TESTABLE, first.why, n=0, rule=CONDITIONS)
    n = len(testable)
    by_word = {
        w: [k for k, v in testable.items() if v.word == w] for w in (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE)
    }
    held, refuted, open_ = (len(by_word[w]) for w in (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE))
    counts = (
        f"holds in {held}, does not hold in {refuted}, inconclusive in {open_} of {n} testable conditions"
    )
    skipped = len(verdicts) - n
    if skipped:
        counts += f"; {skipped} of {len(verdicts)} not testable"
    for word, label in ((HOLDS, "holds"), (DOES_NOT_HOLD, "does not hold")):
        if 0 < len(by_word[word]) < n:
            counts += f"; {label} at {', '.join(map(str, by_word[word]))}"
    weakest = _weakest(testable, side)
    w = testable[weakest]
    evidence: VerdictEvidence = {"estimate": w.estimate, "low": w.low, "high": w.high, "n": n,
                                 "null": w.null, "detectable": w.detectable, "rule": CONDITIONS}  # fmt: skip
    if held == n:
        return Verdict(HOLDS, f"{counts} (weakest: {weakest})", **evidence)
    if open_ > n / 2:
        return Verdict(INCONCLUSIVE, f"most conditions inconclusive: {counts}", **evidence)
    if held == 0:
        return Verdict(DOES_NOT_HOLD, counts, **evidence)
    return Verdict(INCONCLUSIVE, f"the conditions disagree: {counts}", **evidence)


def verdict_downstream(per_task: Mapping[str, Verdict], gates: Mapping[str, Verdict | None]) -> Verdict:
    """Downstream, "interventions guided by contribution weights hurt accuracy most (top zeroed) and least
    (bottom zeroed)": ``per_task`` verdicts of the paired per-item comparisons and each task's
    ``above_chance`` gate (None: the clean model is above chance). A task at chance is not testable (its
    gate, :func:`gated`); not testable when every task is at chance, else :func:`verdict_conditions`."""
    if set(per_task) != set(gates):
        raise ValueError(f"tasks differ: {sorted(per_task)} vs {sorted(gates)}")
    if all(g is not None for g in gates.values()):
        return not_testable("the clean model is not above chance on any task", n=0, rule=CONDITIONS)
    return verdict_conditions({t: gated(gates[t], v, t) for t, v in per_task.items()})


def verdict_decomposition(
    sink_attention: Mapping[Hashable, float],
    sink_geometry: Mapping[Hashable, float],
    tail_attention: Mapping[Hashable, float],
    tail_geometry: Mapping[Hashable, float],
) -> Verdict:
    """The claim "the sink's contribution is driven by value geometry, not attention; the tail's by attention
    and alignment jointly", from the per-layer correlations (``{layer: r}``) of the contribution weight with
    attention and with geometry (norm ratio x cosine), for the sink and for the tail: the sink's correlation
    with geometry exceeds its correlation with attention (paired by layer), and the tail's mean correlation
    with each lies above ``TAIL_CORRELATION`` (:func:`mean_rule`); :func:`all_of` the three."""
    layers = set(sink_attention)
    if not all(set(m) == layers for m in (sink_geometry, tail_attention, tail_geometry)):
        raise ValueError("the four correlations must cover the same layers")
    return all_of({
        "sink: r(c, geometry) > r(c, attention)": paired_rule(sink_geometry, sink_attention, "above"),
        f"tail: r(c, attention) > {TAIL_CORRELATION:g}": mean_rule(list(tail_attention.values()), "above",
                                                                  TAIL_CORRELATION),
        f"tail: r(c, geometry) > {TAIL_CORRELATION:g}": mean_rule(list(tail_geometry.values()), "above",
                                                                 TAIL_CORRELATION),
    })  # fmt: skip


def verdict_anti_aligned(
    sink: Mapping[Hashable, float], controls: Mapping[str, Mapping[Hashable, float]]
) -> Verdict:
    """The claim "the sink's projected values are anti-aligned with the other tokens'" (the paper's sink
    analysis: a negative cosine), against controls: ``sink`` holds one mean cos(v~_0, v~_j) per window
    (``{window: cosine}``), ``controls`` the same statistic per window for ordinary positions p
    (cos(v~_p, v~_j)). The sink's mean lies below -``ANTI_ALIGNMENT`` (:func:`mean_rule` with that smallest
    effect of interest; an interval inside +-``ANTI_ALIGNMENT``, near-orthogonal, refutes it) and, paired by
    window, below every control's (:func:`paired_rule`); :func:`all_of` the parts."""
    steps = {
        f"sink cosine < -{ANTI_ALIGNMENT:g}": mean_rule(
            list(sink.values()), "below", 0.0, smallest=ANTI_ALIGNMENT, margin=ANTI_ALIGNMENT
        )
    }
    for name, values in controls.items():
        steps[f"sink < {name}"] = paired_rule(sink, values, "below")
    return all_of(steps, side="below")


def alignment_words(cosine: float) -> str:
    """A mean cosine in words, as measured: "anti-aligned" at or below -``ANTI_ALIGNMENT``, "aligned" at or
    above +``ANTI_ALIGNMENT``, otherwise "near-orthogonal", slightly negative or positive (with the angle)."""
    angle = math.degrees(math.acos(max(-1.0, min(1.0, cosine))))
    if cosine <= -ANTI_ALIGNMENT:
        return f"anti-aligned ({angle:.1f} degrees)"
    if cosine >= ANTI_ALIGNMENT:
        return f"aligned ({angle:.1f} degrees)"
    tilt = "slightly negative" if cosine < 0 else "slightly positive" if cosine > 0 else "zero"
    return f"{tilt}, near-orthogonal ({angle:.1f} degrees; |cos| < {ANTI_ALIGNMENT:g})"


def verdict_convex_minimum(inside: int, heads: int) -> Verdict:
    """The claim "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
    read as "the majority of heads": the share of ``heads`` whose binned ||o|| has an interior minimum
    (``sinks.binned_minimum``), by :func:`share_rule` (Wilson interval) against ``HEAD_MAJORITY``."""
    return share_rule(inside, heads, HEAD_MAJORITY, "above")


def verdict_sink_removal(
    ppl: tuple[float, float],
    cone: tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
    noise: tuple[Mapping[Hashable, float], Mapping[Hashable, float]],
) -> Verdict:
    """The claim "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise", from
    (clean, sink removed) pairs: the perplexity (one number per state, pooled over every window: no interval,
    so that part is not testable here), and the cone concentration and output-norm spread (noise) per layer
    (``{layer: value}``), each rising, paired by layer (:func:`paired_rule`); :func:`all_of` the three."""
    rise = ppl[1] - ppl[0]
    return all_of({
        "cone rises": paired_rule(cone[1], cone[0], "above"),
        "PPL rises": not_testable(
            f"one perplexity per state, pooled over the windows ({ppl[0]:.4g} -> {ppl[1]:.4g}): no interval",
            estimate=rise, n=1, null=0.0),
        "noise rises": paired_rule(noise[1], noise[0], "above"),
    })  # fmt: skip


# --- the evidence and the table ---------------------------------------------------------------------------

_CURVE_COLUMNS = {"text", "layers", "scope", "mode", "measure", "window", "fraction", "delta_ppl"}
_DOWNSTREAM_COLUMNS = {"task", "item", "measure", "mode", "credit", "chance"}
_SINK_RESULTS = {"first_token", "decomposition", "decomposition_bos", "positions", "fits", "spread", "ppl"}


@dataclass(frozen=True, eq=False)
class Evidence:
    """Everything the claims table is judged on, by name (the notebook's results, unchanged)."""

    pretrained_curves: pd.DataFrame  # ContributionExperiment.faithfulness(): per-window delta-PPL curves
    downstream: pd.DataFrame  # ContributionExperiment.downstream(): per-item credits, clean and intervened
    sinks: Mapping[str, Any]  # ContributionExperiment.sinks(): the sink analyses' frames and perplexities
    own_curves: pd.DataFrame  # ContributionExperiment.own_model()[1]: this project's GPT's curves

    def __post_init__(self) -> None:
        for name, frame, columns in (
            ("pretrained_curves", self.pretrained_curves, _CURVE_COLUMNS),
            ("own_curves", self.own_curves, _CURVE_COLUMNS),
            ("downstream", self.downstream, _DOWNSTREAM_COLUMNS),
        ):
            if not isinstance(frame, pd.DataFrame) or not columns <= set(frame.columns):
                have = sorted(frame.columns) if isinstance(frame, pd.DataFrame) else type(frame).__name__
                raise ValueError(f"Evidence.{name} needs columns {sorted(columns)}; got {have}")
        if not isinstance(self.sinks, Mapping) or not _SINK_RESULTS <= set(self.sinks):
            raise ValueError(f"Evidence.sinks needs {sorted(_SINK_RESULTS)} (ContributionExperiment.sinks())")


def _ours(exp: ContributionExperiment, who: str, text: str) -> str:
    """A row's measurement, prefixed by the exact weights it comes from and their caveat."""
    if who == "pretrained":
        tag = f"[{exp.weights}]"
        if exp.model in PRETRAINED:  # a pinned model: at most 1.5B parameters
            tag = f"[{exp.weights}; not the paper's 7-8B base models]"
    else:
        own = exp.preset.own.model
        tag = f"[this project's GPT {own.n_layer}L-{own.d_model}d, byte-level, trained on Shakespeare]"
    return f"{tag} {text}"


def _interval(v: Verdict, decimals: int = 2) -> str:
    """``v``'s estimate with its 95% interval ("+0.12 [+0.05, +0.19]"), or the estimate alone without one."""
    if math.isnan(v.low) or math.isnan(v.high):
        return f"{signed(v.estimate, decimals)} (no interval)"
    return f"{signed(v.estimate, decimals)} [{signed(v.low, decimals)}, {signed(v.high, decimals)}]"


def _with_detectable(v: Verdict, decimals: int = 2, scale: float = 1.0) -> str:
    """``v``'s estimate and interval (:func:`_interval`) with the smallest effect its test could have detected
    (``detectable``, 80% power at its n and spread), all multiplied by ``scale`` (100: accuracy points)."""
    shown = replace(v, estimate=v.estimate * scale, low=v.low * scale, high=v.high * scale)
    if math.isnan(v.detectable):
        return _interval(shown, decimals)
    return f"{_interval(shown, decimals)}, detectable {v.detectable * scale:.{decimals}f}"


def claims(
    exp: ContributionExperiment,
    sinks: Mapping[str, Any],
    curves: pd.DataFrame,
    downstream: pd.DataFrame,
    own_curves: pd.DataFrame,
) -> list[Claim]:
    """The claims table of ``exp``'s results, gathered by name into an :class:`Evidence` bundle (which checks
    that each table is the one its name says). The notebook passes them by keyword through
    ``ContributionExperiment.claims``, whose signature is part of the results cache's code key and so is kept
    as it was."""
    evidence = Evidence(pretrained_curves=curves, downstream=downstream, sinks=sinks, own_curves=own_curves)
    return [
        *pretrained_claims(exp, evidence.sinks, evidence.pretrained_curves, evidence.downstream),
        *_claims_faithfulness(exp, evidence.own_curves, "own GPT"),
    ]


def pretrained_claims(
    exp: ContributionExperiment, sinks: Mapping[str, Any], curves: pd.DataFrame, downstream: pd.DataFrame
) -> list[Claim]:
    """The rows of the pretrained model ``exp.model`` alone (Fig. 1, faithfulness, downstream, sinks): the
    claims table's, and the scale section's for each pinned model (``contribution_weights.scale``). A
    downstream table with no task (a model given none) gives no downstream row; one whose every task was
    skipped (its data unavailable here, ``skipped``) gives a "not testable here" row with the reason."""
    return [
        _claim_fig1(exp, sinks["decomposition"], sinks["first_token"]),
        *(
            [_claim_fig1(exp, sinks["decomposition_bos"], "BOS prefixed")]
            if len(sinks["decomposition_bos"])
            else []
        ),
        *_claims_faithfulness(exp, curves, "pretrained"),
        *([_claim_downstream(exp, downstream)] if len(downstream) or skipped(downstream) else []),
        *_claims_sinks(exp, sinks),
    ]


def skipped(frame: pd.DataFrame) -> dict[str, str]:
    """The text sets or tasks a result table left out because their data is unavailable here, with the
    reason (``ContributionExperiment.faithfulness`` and ``downstream`` record them in ``attrs``)."""
    return dict(frame.attrs.get("skipped", {}))


def _skipped_conditions(frame: pd.DataFrame) -> tuple[dict[str, Verdict], list[str]]:
    """A "not testable here" condition per skipped text set or task, and its line for the row's text."""
    reasons = skipped(frame)
    return (
        {name: not_testable(why, n=0) for name, why in reasons.items()},
        [f"{name}: skipped: {why}" for name, why in reasons.items()],
    )


def _by_layer(frame: pd.DataFrame, column: str) -> dict[Hashable, float]:
    """``{layer: value}`` of one column of a per-layer frame."""
    if frame["layer"].duplicated().any():
        raise ValueError("one row per layer expected")
    return dict(zip(frame["layer"], frame[column].astype(float), strict=True))


def _claim_fig1(exp: ContributionExperiment, d: pd.DataFrame, variant: str) -> Claim:
    sink = d[d["group"] == "sink"]
    verdict = verdict_first_token(_by_layer(sink, "mean_attention"), _by_layer(sink, "mean_contribution"))
    a, c = sink["mean_attention"].mean(), sink["mean_contribution"].mean()
    high = sink[sink["mean_attention"] > FIRST_TOKEN_ATTENTION]
    return Claim(
        "Fig. 1",
        f"the first token gets a large attention mass but contributes little ({variant})",
        "qualitative (two heads of a 7-8B model)",
        _ours(exp, "pretrained",
              f"all heads, Brown text, {variant}, {len(sink)} layers: first token's mean attention {a:.2f}, "
              f"mean contribution {c:.2f}; in the {len(high)} layers with mean attention > "
              f"{FIRST_TOKEN_ATTENTION:g} its contribution is {high['mean_contribution'].mean():.2f}"),
        verdict,
    )  # fmt: skip


#: (mode, the measure that stands for contribution weights, label) of the faithfulness rows.
FAITHFULNESS_ROWS = (
    ("comprehensiveness", "contribution", "comprehensiveness (top zeroed), signed c"),
    ("sufficiency", "contribution", "sufficiency (bottom zeroed), signed c"),
    ("sufficiency", "contribution_abs", "sufficiency (bottom zeroed), |c|"),
)


def faithfulness_condition(
    sub: pd.DataFrame, log_areas: pd.Series, mode: str, best: str
) -> tuple[Verdict, dict[str, Verdict]]:
    """One (text, layers, scope) condition of a faithfulness row: the saturation gate on the mean delta-PPL
    at the smallest and largest fractions, then the hierarchy raw < value-weighted < ``best`` as paired
    per-window differences of the log-scale areas (``log_areas``, indexed by window and measure), each on
    the paper's side above 0: a larger area (comprehensiveness) or a smaller one (sufficiency) for the more
    faithful measure (:func:`verdict_steps`). Returns the verdict and each step's paired verdict."""
    order = (*HIERARCHY[:-1], best)
    nonzero = sub[(sub["fraction"] > 0) & (sub["mode"] == mode) & sub["measure"].isin(order)]
    by = nonzero.groupby(["measure", "fraction"])["delta_ppl"].mean()
    f_min, f_max = nonzero["fraction"].min(), nonzero["fraction"].max()
    gate = saturation_gate({m: by[m, f_min] for m in order}, {m: by[m, f_max] for m in order})
    area = {m: log_areas.xs(m, level="measure").to_dict() for m in order}  # {window: area}
    steps = {}
    for lo, hi in zip(order, order[1:], strict=False):
        pair = (area[hi], area[lo]) if mode == "comprehensiveness" else (area[lo], area[hi])
        steps[f"{MEASURE_LABELS[lo]} < {MEASURE_LABELS[hi]}"] = pair
    parts = {step: paired_rule(a, b, "above") for step, (a, b) in steps.items()}
    return (gate or verdict_steps(steps)), parts


def _claims_faithfulness(exp: ContributionExperiment, curves: pd.DataFrame, who: str) -> list[Claim]:
    """The faithfulness rows of one model's curves; a skipped text set (``skipped``) is a "not testable
    here" condition of each row, so a row with every text set skipped is not testable, with the reason."""
    log_areas = window_areas(curves, log=True)
    missing, missing_texts = _skipped_conditions(curves)
    rows = []
    for scope in dict.fromkeys(curves["scope"]) or (exp.preset.scopes if missing else ()):
        ranking = {"head": "ranked per head", "joint": "ranked jointly across heads"}[scope]
        for mode, best, label in FAITHFULNESS_ROWS:
            if best not in RANKINGS[mode]:
                continue
            verdicts, texts = {}, []
            for (text, layers), sub in curves[curves["scope"] == scope].groupby(
                ["text", "layers"], sort=False
            ):
                areas = log_areas.xs((text, layers, scope, mode), level=["text", "layers", "scope", "mode"])
                v, parts = faithfulness_condition(sub, areas, mode, best)
                verdicts[f"{text} {layers}"] = v
                saturated = " (saturated)" if v.word == NOT_TESTABLE and "saturated" in v.why else ""
                texts.append(
                    f"{text} {layers}{saturated}: " + ", ".join(map(_with_detectable, parts.values()))
                )
            verdicts |= missing
            texts += missing_texts
            hierarchy = " < ".join(MEASURE_LABELS[m] for m in (*HIERARCHY[:-1], best))
            rows.append(Claim(
                "faithfulness",
                f"{hierarchy}: {label} ({who}, {ranking})",
                "ordering of the delta-PPL curves on GSM8K and FineWeb-Edu, four 7-8B models",
                _ours(exp, who, "paired per-window differences of the log(1 + dPPL) areas along the order, "
                      "mean [95% interval], positive on the paper's side, and the smallest difference each "
                      "step's test could have detected (80% power): " + "; ".join(texts)),
                verdict_conditions(verdicts),
            ))  # fmt: skip
    return rows


def downstream_task(sub: pd.DataFrame) -> tuple[Verdict | None, Verdict, dict, dict[str, Verdict]]:
    """One task of the downstream claim, from its per-item credits: the ``above_chance`` gate on the clean
    accuracy (chance: the mean of the ``chance`` column, ``faithfulness.chance_level``; a task whose chance
    is 1, every answer in one position, is not testable), and whether contribution weights hurt most with
    their top zeroed and least with their bottom zeroed, against each baseline, paired by item (0/1
    credits; the paper's side above 0). Returns the gate, the verdict, the accuracies by (mode, measure) and
    each comparison's paired verdict (its difference, interval and detectable effect, in accuracy)."""
    clean = sub[sub["measure"] == "none"]
    if clean["item"].duplicated().any():
        raise ValueError("one clean row per item expected")
    chance = float(clean["chance"].mean())
    if chance < 1.0:
        gate = above_chance(round(clean["credit"].sum()), len(clean), chance)
    else:  # every item's answer in one position (a sample of a few items): nothing to be above
        why = f"a constant answer is right on all {len(clean)} items (chance 1)"
        gate = not_testable(why, estimate=float(clean["credit"].mean()), n=len(clean), null=1.0)
    credit = sub[sub["measure"] != "none"].pivot_table("credit", "item", ["mode", "measure"])
    steps = {}
    for mode in ("comprehensiveness", "sufficiency"):
        c = credit[mode, "contribution"].to_dict()
        for base in HIERARCHY[:-1]:
            b = credit[mode, base].to_dict()
            steps[f"{mode} vs {MEASURE_LABELS[base]}"] = (b, c) if mode == "comprehensiveness" else (c, b)
    acc = {"clean": float(clean["credit"].mean())} | {k: float(v) for k, v in credit.mean().items()}
    parts = {step: paired_rule(a, b, "above") for step, (a, b) in steps.items()}
    return gate, verdict_steps(steps), acc, parts


def _claim_downstream(exp: ContributionExperiment, frame: pd.DataFrame) -> Claim:
    per_task, gates, parts = {}, {}, []
    for task, sub in frame.groupby("task", sort=False):
        gate, verdict, acc, steps = downstream_task(sub)
        per_task[task], gates[task] = verdict, gate
        comp, suff = (
            ", ".join(f"{m} {acc[mode, m]:.2f}" for m in RANKINGS[mode] if (mode, m) in acc)  # those run
            for mode in ("comprehensiveness", "sufficiency")
        )
        status = "at chance" if gate is not None else "above chance"
        diffs = ", ".join(f"{step} {_with_detectable(v, 1, 100)}" for step, v in steps.items())
        parts.append(f"{task} ({len(sub['item'].unique())} items): clean {acc['clean']:.2f}, {status}; "
                     f"top {exp.preset.task_fraction:g} zeroed {comp}; bottom zeroed {suff}; paired "
                     f"differences in accuracy points, positive on the paper's side: {diffs}")  # fmt: skip
    missing, missing_texts = _skipped_conditions(frame)
    per_task |= missing
    gates |= dict.fromkeys(missing)
    parts += missing_texts
    return Claim(
        "downstream",
        "interventions guided by contribution weights hurt accuracy most (top zeroed) and least (bottom)",
        "MMLU, Winogrande, BoolQ with 7-8B models",
        _ours(exp, "pretrained", "; ".join(parts)),
        verdict_downstream(per_task, gates),
    )


def anti_alignment_text(
    sink: Mapping[Hashable, float], controls: Mapping[str, Mapping[Hashable, float]]
) -> str:
    """What the anti-alignment row measured, as measured: the sink's mean cosine with its 95% interval, the
    angle and its reading (:func:`alignment_words`), each control's mean, and the effect size of sink minus
    control (paired by window) with its interval."""
    v = mean_rule(list(sink.values()), "below", 0.0)
    parts = [
        f"mean cos(v~_p, v~_j) per window (mean over layers and heads), {len(sink)} windows: sink (p = 0) "
        f"{_interval(v, 3)}, {alignment_words(v.estimate)}"
    ]
    for name, values in controls.items():
        diff = paired_rule(sink, values, "below")
        mean = sum(values.values()) / len(values)
        parts.append(
            f"{name} {signed(mean, 3)} ({alignment_words(mean)}), sink minus it {_interval(diff, 3)}"
        )
    return "; ".join(parts)


def _claims_sinks(exp: ContributionExperiment, sinks: Mapping[str, Any]) -> list[Claim]:
    decomp = sinks["decomposition"]
    layers = decomp["layer"].nunique()
    sink_rows, tail_rows = decomp[decomp["group"] == "sink"], decomp[decomp["group"] == "tail"]
    d = decomp.groupby("group").mean(numeric_only=True)
    s, t = d.loc["sink"], d.loc["tail"]
    decomposition = verdict_decomposition(
        _by_layer(sink_rows, "corr_contribution_attention"),
        _by_layer(sink_rows, "corr_contribution_geometry"),
        _by_layer(tail_rows, "corr_contribution_attention"),
        _by_layer(tail_rows, "corr_contribution_geometry"),
    )
    pos = sinks["positions"].groupby(["position", "window"])["cosine"].mean()  # mean over layers
    sink = pos.xs(0).to_dict()  # {window: cosine}
    controls = {f"position {p}": pos.xs(p).to_dict() for p in pos.index.get_level_values(0).unique() if p}
    anti = verdict_anti_aligned(sink, controls)
    fits = sinks["fits"]
    inside = fits["interior"].astype(bool)
    convex = fits["p2"] > 0
    majority = verdict_convex_minimum(int(inside.sum()), len(fits))
    spread = sinks["spread"]
    clean, removed = spread[spread["state"] == "clean"], spread[spread["state"] == "sink removed"]
    ppl = sinks["ppl"]
    removal = verdict_sink_removal(
        (ppl["clean"], ppl["sink removed"]),
        (_by_layer(clean, "cone"), _by_layer(removed, "cone")),
        (_by_layer(clean, "norm_cv"), _by_layer(removed, "norm_cv")),
    )
    alignment = anti_alignment_text(sink, controls)
    return [
        Claim(
            "decomposition",
            "the sink's contribution is driven by value geometry, not attention; the tail's by attention "
            "and alignment jointly",
            "qualitative",
            _ours(exp, "pretrained",
                  f"correlation of c with attention / with norm ratio x cosine (mean over {layers} layers): "
                  f"sink "
                  f"{signed(s['corr_contribution_attention'], 2)} / "
                  f"{signed(s['corr_contribution_geometry'], 2)}; tail "
                  f"{signed(t['corr_contribution_attention'], 2)} / "
                  f"{signed(t['corr_contribution_geometry'], 2)}; mean factors sink: a "
                  f"{s['mean_attention']:.2f}, norm ratio {s['mean_norm_ratio']:.2f}, cos "
                  f"{signed(s['mean_cosine'], 2)}"),
            decomposition,
        ),
        Claim(
            "sinks",
            f"the sink's projected values are anti-aligned with the other tokens' (mean cosine below "
            f"-{ANTI_ALIGNMENT:g}, and below ordinary positions')",
            "negative cosine",
            _ours(exp, "pretrained", alignment),
            anti,
        ),
        Claim(
            "sinks",
            "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
            "convex; minimum inside (0, 1)",
            _ours(exp, "pretrained",
                  f"||o|| in 10 equal-count bins of the sink rate per head: interior minimum (smallest "
                  f"binned ||o|| in an interior bin, both end bins more than 5% above it) for "
                  f"{int(inside.sum())} of "
                  f"{len(fits)} heads, share {majority.estimate:.3f} (95% Wilson interval {majority.low:.3f}-"
                  f"{majority.high:.3f}); the quadratic fit, shown as a picture only, is convex for "
                  f"{int(convex.sum())}"),
            majority,
        ),
        Claim(
            "sink-norm removal",
            "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise",
            "outputs collapse into a 'semantic cone', PPL rises",
            _ours(exp, "pretrained",
                  f"PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f} (pooled over the windows); cone "
                  f"(mean cos to the head's mean direction, mean over {len(clean)} layers) "
                  f"{clean['cone'].mean():.2f} -> {removed['cone'].mean():.2f}; "
                  f"norm CV {clean['norm_cv'].mean():.2f} -> {removed['norm_cv'].mean():.2f}"),
            removal,
        ),
    ]  # fmt: skip
