"""The contribution-weights notebook's claims table (arXiv 2606.07604): each claim's verdict is a pure
function of numbers (``verdict_*``), and :func:`claims` measures those numbers on the experiment's results and
writes the rows.

A verdict rests on one model (no seeds), so no verdict here has an interval: ``low`` and ``high`` stay NaN.
Where a rule is a conjunction of thresholds, its ``estimate`` is the smallest margin by which they are met
(positive exactly when the claim holds) and its ``null`` is 0; where it counts text sets or tasks, the
estimate is the share on which the claim holds; each function's docstring names its estimate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from attnlab.data.tasks import load_task
from attnlab.papers.contribution_weights.faithfulness import hierarchy_holds
from attnlab.papers.contribution_weights.presets import DOWNSTREAM, MEASURES
from attnlab.runner.claims import Claim, signed
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE, Verdict

if TYPE_CHECKING:
    from attnlab.papers.contribution_weights.experiment import ContributionExperiment

FIRST_TOKEN_ATTENTION = 0.3  # Fig. 1: the first token's mean attention must exceed this
TAIL_CORRELATION = 0.3  # the tail's contribution must correlate above this with attention and geometry
NEGATIVE_SHARE = 0.5  # more than this share of (head, token) cosines negative
HEAD_MAJORITY = 0.5  # more than this share of heads with a convex fit and a vertex inside (0, 1)


def _smallest(*margins: float) -> float:
    """The smallest margin, NaN if any is NaN (``min`` would depend on the order)."""
    return math.nan if any(math.isnan(m) for m in margins) else min(margins)


def _share(flags: Sequence[bool], what: str) -> float:
    if not flags:
        raise ValueError(f"no {what} to judge")
    return sum(map(bool, flags)) / len(flags)


def verdict_first_token(attention: float, contribution: float, layers: int) -> Verdict:
    """Fig. 1, "the first token gets a large attention mass but contributes little", from the first token's
    mean attention and mean contribution weight over ``layers`` layers: holds when the attention exceeds 0.3
    and the contribution is below half of it, else does not hold. Estimate: the smaller margin,
    min(attention - 0.3, attention / 2 - contribution), against 0."""
    word = HOLDS if attention > FIRST_TOKEN_ATTENTION and contribution < attention / 2 else DOES_NOT_HOLD
    margin = _smallest(attention - FIRST_TOKEN_ATTENTION, attention / 2 - contribution)
    return Verdict(word, estimate=margin, n=layers, null=0.0)


def most_faithful(areas: pd.DataFrame) -> tuple[list[bool], list[bool]]:
    """Per text set of ``areas`` (rows (text, measure), columns comprehensiveness and sufficiency): is
    contribution the most comprehensive (largest area), and the most sufficient (smallest)?"""
    comp, suff = [], []
    for _, sub in areas.groupby(level="text", sort=False):
        comp.append(sub.droplevel("text")["comprehensiveness"].idxmax() == "contribution")
        suff.append(sub.droplevel("text")["sufficiency"].idxmin() == "contribution")
    return comp, suff


def verdict_every_text_set(flags: Sequence[bool]) -> Verdict:
    """A faithfulness claim judged on each text set (``flags``: whether it holds there): holds when it holds
    on every set, does not hold when on none, else inconclusive ("k of n text sets"). Estimate: the share of
    sets on which it holds; n: the sets."""
    share = _share(flags, "text sets")
    if all(flags):
        return Verdict(HOLDS, estimate=share, n=len(flags))
    if not any(flags):
        return Verdict(DOES_NOT_HOLD, estimate=share, n=len(flags))
    return Verdict(INCONCLUSIVE, f"{sum(flags)} of {len(flags)} text sets", estimate=share, n=len(flags))


def chance_bar(n_choices: int, items: int) -> float:
    """The accuracy a clean model must exceed to be judged above chance: chance (1 / ``n_choices``) plus two
    standard errors of an accuracy at chance over ``items`` items."""
    return 1 / n_choices + 2 * math.sqrt((1 / n_choices) * (1 - 1 / n_choices) / items)


def verdict_downstream(
    flags: Sequence[bool], clean: Sequence[float], n_choices: Sequence[int], items: int
) -> Verdict:
    """Downstream, "interventions guided by contribution weights hurt accuracy most (top zeroed) and least
    (bottom zeroed)", per task: ``flags`` (contribution gives the lowest accuracy with its top terms zeroed
    and the highest with its bottom terms zeroed), the clean accuracy, the number of choices, and ``items``
    items per task. Not testable here when the clean model is not above :func:`chance_bar` on any task;
    otherwise holds when every task agrees, does not hold when none does, else inconclusive. Estimate: the
    share of tasks that agree; n: the tasks."""
    if not len(flags) == len(clean) == len(n_choices):
        raise ValueError(f"{len(flags)} flags, {len(clean)} clean accuracies, {len(n_choices)} choice counts")
    share = _share(flags, "tasks")
    if not any(c > chance_bar(k, items) for c, k in zip(clean, n_choices, strict=True)):
        return Verdict(NOT_TESTABLE, "the clean model is at chance on every task", share, n=len(flags))
    if all(flags):
        return Verdict(HOLDS, estimate=share, n=len(flags))
    if not any(flags):
        return Verdict(DOES_NOT_HOLD, estimate=share, n=len(flags))
    return Verdict(INCONCLUSIVE, "differs between tasks", share, n=len(flags))


def verdict_decomposition(
    sink_attention: float, sink_geometry: float, tail_attention: float, tail_geometry: float, layers: int
) -> Verdict:
    """The claim "the sink's contribution is driven by value geometry, not attention; the tail's by attention
    and alignment jointly", from the correlations (mean over ``layers`` layers) of the contribution weight
    with attention and with geometry (norm ratio x cosine) for the sink and for the tail: holds when the
    sink's correlation with geometry exceeds its correlation with attention and both of the tail's exceed 0.3,
    else does not hold. Estimate: the smallest margin, against 0."""
    sink_geo = sink_geometry > sink_attention
    tail_joint = tail_attention > TAIL_CORRELATION and tail_geometry > TAIL_CORRELATION
    margin = _smallest(
        sink_geometry - sink_attention, tail_attention - TAIL_CORRELATION, tail_geometry - TAIL_CORRELATION
    )
    return Verdict(HOLDS if sink_geo and tail_joint else DOES_NOT_HOLD, estimate=margin, n=layers, null=0.0)


def verdict_anti_aligned(mean_cosine: float, negative: float, pairs: int) -> Verdict:
    """The claim "the sink's projected values are anti-aligned with the other tokens'", from the mean cosine
    and the share of negative cosines over ``pairs`` (head, token) pairs: holds when the mean is below 0 and
    more than half are negative, else does not hold. Estimate: the smaller margin, min(-mean, share - 0.5),
    against 0."""
    word = HOLDS if mean_cosine < 0 and negative > NEGATIVE_SHARE else DOES_NOT_HOLD
    return Verdict(word, estimate=_smallest(-mean_cosine, negative - NEGATIVE_SHARE), n=pairs, null=0.0)


def verdict_convex_minimum(inside: int, heads: int) -> Verdict:
    """The claim "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
    from the number of heads whose quadratic fit is convex with its vertex inside (0, 1): holds when that is
    more than half of the ``heads``, else does not hold. Estimate: the share of heads, against 0.5."""
    if heads < 1:
        raise ValueError("no heads to judge")
    word = HOLDS if inside > heads / 2 else DOES_NOT_HOLD
    return Verdict(word, estimate=inside / heads, n=heads, null=HEAD_MAJORITY)


def verdict_sink_removal(
    ppl: tuple[float, float], cone: tuple[float, float], noise: tuple[float, float]
) -> Verdict:
    """The claim "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise", from
    (clean, sink removed) pairs of the perplexity, the cone concentration and the output-norm spread (noise):
    holds when all three rise; does not hold when neither the cone nor the perplexity (the paper's two main
    effects) rises; else inconclusive, naming what rises. Estimate: the perplexity's rise, against 0."""
    rises = {"cone": cone[1] > cone[0], "PPL": ppl[1] > ppl[0], "noise": noise[1] > noise[0]}
    rise = ppl[1] - ppl[0]
    if all(rises.values()):
        return Verdict(HOLDS, estimate=rise, n=1, null=0.0)
    if not (rises["cone"] or rises["PPL"]):
        return Verdict(DOES_NOT_HOLD, estimate=rise, n=1, null=0.0)
    why = ", ".join(f"{what} {'rises' if up else 'does not rise'}" for what, up in rises.items())
    return Verdict(INCONCLUSIVE, why, estimate=rise, n=1, null=0.0)


def _with_criterion(
    figure: str, claim: str, paper: str, ours: str, verdict: Verdict, criterion: str
) -> Claim:
    """A row whose verdict text names its criterion, "word (criterion: ...)", with the verdict's evidence."""
    return Claim(
        figure,
        claim,
        paper,
        ours,
        f"{verdict} (criterion: {criterion})",
        verdict.estimate,
        verdict.low,
        verdict.high,
        verdict.n or None,
        verdict.null,
    )


def claims(
    exp: ContributionExperiment,
    sinks: dict,
    curves: pd.DataFrame,
    downstream: pd.DataFrame,
    own_curves: pd.DataFrame,
) -> list[Claim]:
    """The claims table of ``exp``'s results: ``sinks`` (:meth:`ContributionExperiment.sinks`), the
    pretrained model's faithfulness ``curves``, the ``downstream`` accuracies and this project's GPT's
    ``own_curves``."""
    return [
        _claim_fig1(exp, sinks),
        *_claims_faithfulness(exp, curves, "pretrained"),
        _claim_downstream(exp, downstream),
        *_claims_sinks(sinks),
        *_claims_faithfulness(exp, own_curves, "own GPT"),
    ]


def _claim_fig1(exp: ContributionExperiment, sinks: dict) -> Claim:
    d = sinks["decomposition"]
    sink = d[d["group"] == "sink"]
    a, c = sink["mean_attention"].mean(), sink["mean_contribution"].mean()
    high = sink[sink["mean_attention"] > FIRST_TOKEN_ATTENTION]
    return _with_criterion(
        "Fig. 1",
        "the first token gets a large attention mass but contributes little",
        "qualitative (two heads of a 7-8B model)",
        f"{exp.model}, all heads, Brown text: first token's mean attention {a:.2f}, mean "
        f"contribution {c:.2f}; in the {len(high)} of {len(sink)} layers with mean attention > 0.3 its "
        f"contribution is {high['mean_contribution'].mean():.2f}",
        verdict_first_token(a, c, len(sink)),
        "mean attention > 0.3 and contribution below half of it",
    )


def _claims_faithfulness(exp: ContributionExperiment, curves: pd.DataFrame, who: str) -> list[Claim]:
    areas, log_areas = exp.areas(curves), exp.areas(curves, log=True)
    rows = []
    for scope in dict.fromkeys(areas.index.get_level_values("scope")):
        rows += _claims_faithfulness_scope(
            exp, areas.xs(scope, level="scope"), log_areas.xs(scope, level="scope"), who, scope
        )
    return rows


def _claims_faithfulness_scope(
    exp: ContributionExperiment, areas: pd.DataFrame, log_areas: pd.DataFrame, who: str, scope: str
) -> list[Claim]:
    # Ranked per head, the two value-weighted baselines order every row alike: only three levels remain.
    order = MEASURES if scope == "joint" else ("raw", "value_weighted", "contribution")
    best_comp, best_suff = most_faithful(areas)
    log_comp, log_suff = most_faithful(log_areas)
    order_ok, orders = [], []
    for text, sub in areas.groupby(level="text", sort=False):
        sub = sub.droplevel("text")
        ok = hierarchy_holds(sub, order)
        order_ok.append(ok["comprehensiveness"] and ok["sufficiency"])
        comp = " < ".join(sub.loc[list(order), "comprehensiveness"].sort_values().index)
        suff = " > ".join(sub.loc[list(order), "sufficiency"].sort_values(ascending=False).index)
        orders.append(f"{text}: comp {comp}; suff {suff}")
    sets = len(best_comp)
    model = exp.model if who == "pretrained" else "this project's GPT (Shakespeare, byte-level)"
    where = "on GSM8K and FineWeb-Edu, four 7-8B models"
    ranking = {"head": "ranked per head", "joint": "ranked jointly across heads"}[scope]
    hierarchy = "raw < value-weighted < output-normalised < contribution"
    if scope == "head":
        hierarchy = "raw < value-weighted (= output-normalised per row) < contribution"
    return [
        Claim(
            "faithfulness",
            f"contribution weights are the most faithful measure ({who}, {ranking})",
            f"largest comprehensiveness and smallest sufficiency delta-PPL {where}",
            f"{model}: most comprehensive on {sum(best_comp)} of {sets} sets, most sufficient on "
            f"{sum(best_suff)} of {sets} (area of log(1 + delta PPL), which weighs the small fractions: "
            f"{sum(log_comp)} and {sum(log_suff)} of {sets})",
            verdict_every_text_set([c and s for c, s in zip(best_comp, best_suff, strict=True)]),
        ),
        Claim(
            "faithfulness",
            f"hierarchy {hierarchy} ({who}, {ranking})",
            f"strict ordering of the area under the delta-PPL curves {where}",
            f"{model}: " + "; ".join(orders),
            verdict_every_text_set(order_ok),
        ),
    ]


def _claim_downstream(exp: ContributionExperiment, frame: pd.DataFrame) -> Claim:
    parts, flags, cleans, choices = [], [], [], []
    for task, sub in frame.groupby("task", sort=False):
        clean = sub.loc[sub["measure"] == "none", "accuracy"].iloc[0]
        cleans.append(clean)
        choices.append(len(load_task(task, limit=1)[0].choices))
        comp = sub[sub["mode"] == "comprehensiveness"].set_index("measure")["accuracy"]
        suff = sub[sub["mode"] == "sufficiency"].set_index("measure")["accuracy"]
        flags.append(comp.idxmin() == "contribution" and suff.idxmax() == "contribution")
        parts.append(
            f"{task} (for {DOWNSTREAM[task]}): clean {clean:.2f}; "
            f"top {exp.preset.task_fraction:g} zeroed "
            + ", ".join(f"{m} {comp[m]:.2f}" for m in MEASURES)
            + "; bottom zeroed "
            + ", ".join(f"{m} {suff[m]:.2f}" for m in MEASURES)
        )
    return Claim(
        "downstream",
        "interventions guided by contribution weights hurt accuracy most (top zeroed) and least (bottom)",
        "MMLU, Winogrande, BoolQ with 7-8B models",
        "; ".join(parts),
        verdict_downstream(flags, cleans, choices, exp.preset.task_limit),
    )


def _claims_sinks(sinks: dict) -> list[Claim]:
    layers = sinks["decomposition"]["layer"].nunique()
    d = sinks["decomposition"].groupby("group").mean(numeric_only=True)
    s, t = d.loc["sink"], d.loc["tail"]
    cos = sinks["cosines"]
    cos_mean = float((cos["mean"] * cos["n"]).sum() / cos["n"].sum())
    neg = float((cos["negative"] * cos["n"]).sum() / cos["n"].sum())
    fits = sinks["fits"]
    convex = fits["p2"] > 0
    inside = convex & (fits["vertex"] > 0) & (fits["vertex"] < 1)
    spread = sinks["spread"].groupby("state")[["cone", "norm_cv"]].mean()
    ppl = sinks["ppl"]
    removal = verdict_sink_removal(
        (ppl["clean"], ppl["sink removed"]),
        (spread.loc["clean", "cone"], spread.loc["sink removed", "cone"]),
        (spread.loc["clean", "norm_cv"], spread.loc["sink removed", "norm_cv"]),
    )
    return [
        _with_criterion(
            "decomposition",
            "the sink's contribution is driven by value geometry, not attention; the tail's by attention "
            "and alignment jointly",
            "qualitative",
            f"correlation of c with attention / with norm ratio x cosine (mean over layers): sink "
            f"{signed(s['corr_contribution_attention'], 2)} / "
            f"{signed(s['corr_contribution_geometry'], 2)}; tail "
            f"{signed(t['corr_contribution_attention'], 2)} / "
            f"{signed(t['corr_contribution_geometry'], 2)}; mean "
            f"factors sink: a {s['mean_attention']:.2f}, norm ratio {s['mean_norm_ratio']:.2f}, cos "
            f"{signed(s['mean_cosine'], 2)}",
            verdict_decomposition(
                s["corr_contribution_attention"], s["corr_contribution_geometry"],
                t["corr_contribution_attention"], t["corr_contribution_geometry"], layers,
            ),
            "sink correlates more with geometry than attention; tail > 0.3 with both",
        ),
        Claim(
            "sinks",
            "the sink's projected values are anti-aligned with the other tokens'",
            "negative cosine",
            f"cos(v~_sink, v~_j): mean {signed(cos_mean, 3)}, negative for {100 * neg:.0f}% of "
            "(head, token) pairs",
            verdict_anti_aligned(cos_mean, neg, int(cos["n"].sum())),
        ),
        Claim(
            "sinks",
            "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
            "convex; minimum inside (0, 1)",
            f"quadratic fit of ||o||^2 per head: convex for {int(convex.sum())} of {len(fits)} heads, "
            f"vertex inside (0, 1) for {int(inside.sum())} (median vertex of the convex ones "
            f"{fits.loc[convex, 'vertex'].median():.2f})",
            verdict_convex_minimum(int(inside.sum()), len(fits)),
        ),
        Claim(
            "sink-norm removal",
            "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise",
            "outputs collapse into a 'semantic cone', PPL rises",
            f"PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f}; cone (mean cos to the head's mean "
            f"direction) {spread.loc['clean', 'cone']:.2f} -> {spread.loc['sink removed', 'cone']:.2f}; "
            f"norm CV {spread.loc['clean', 'norm_cv']:.2f} -> "
            f"{spread.loc['sink removed', 'norm_cv']:.2f}",
            removal,
        ),
    ]  # fmt: skip
