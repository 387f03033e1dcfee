"""The contribution-weights notebook's claims table (arXiv 2606.07604): each claim's verdict is a pure
function of numbers (``verdict_*``, ``saturation_gate``), and :func:`claims` measures those numbers on the
experiment's results and writes the rows.

The faithfulness, anti-alignment and downstream verdicts rest on intervals over windows (or items): a step
"holds" only when the 95% t-interval of the paired difference excludes 0 on the paper's side
(``attnlab.runner.verdicts.interval_excludes``). The qualitative sink claims have no spread (one model):
their ``estimate`` is the smallest margin by which the thresholds are met, against 0."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from attnlab.papers.contribution_weights.faithfulness import window_areas
from attnlab.papers.contribution_weights.presets import HIERARCHY, MEASURE_LABELS, RANKINGS
from attnlab.runner.claims import Claim, signed
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    Verdict,
    above_chance,
    interval_excludes,
)

if TYPE_CHECKING:
    from attnlab.papers.contribution_weights.experiment import ContributionExperiment

FIRST_TOKEN_ATTENTION = 0.3  # Fig. 1: the first token's mean attention must exceed this
TAIL_CORRELATION = 0.3  # the tail's contribution must correlate above this with attention and geometry
HEAD_MAJORITY = 0.5  # more than this share of heads with an interior binned minimum
SATURATION_SHARE = 0.5  # saturated: the smallest fraction gives more than this share of the largest's effect


def _smallest(*margins: float) -> float:
    """The smallest margin, NaN if any is NaN (``min`` would depend on the order)."""
    return math.nan if any(math.isnan(m) for m in margins) else min(margins)


def verdict_first_token(attention: float, contribution: float, layers: int) -> Verdict:
    """Fig. 1, "the first token gets a large attention mass but contributes little", from the first token's
    mean attention and mean contribution weight over ``layers`` layers: holds when the attention exceeds 0.3
    and the contribution is below half of it, else does not hold. Estimate: the smaller margin,
    min(attention - 0.3, attention / 2 - contribution), against 0."""
    word = HOLDS if attention > FIRST_TOKEN_ATTENTION and contribution < attention / 2 else DOES_NOT_HOLD
    margin = _smallest(attention - FIRST_TOKEN_ATTENTION, attention / 2 - contribution)
    return Verdict(word, estimate=margin, n=layers, null=0.0)


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
        return Verdict(NOT_TESTABLE, why, lowest, n=len(shares), null=SATURATION_SHARE)
    return None


def all_of(parts: Mapping[str, Verdict]) -> Verdict:
    """A conjunction of verdicts: holds when every part holds; not testable when a part is (its reason);
    does not hold when a part does not (naming it); else inconclusive (naming the undecided parts). The
    evidence is the deciding part's (the first failing, else undecided, else the first part)."""
    if not parts:
        raise ValueError("no parts to judge")
    for word in (NOT_TESTABLE, DOES_NOT_HOLD, INCONCLUSIVE):
        named = [name for name, v in parts.items() if v.word == word]
        if named:
            v = parts[named[0]]
            why = (
                v.why
                if word == NOT_TESTABLE
                else ", ".join(named) + (" undecided" if word == INCONCLUSIVE else "")
            )
            return Verdict(word, why, v.estimate, v.low, v.high, v.n, v.null)
    v = next(iter(parts.values()))
    return Verdict(HOLDS, "", v.estimate, v.low, v.high, v.n, v.null)


def verdict_steps(diffs: Mapping[str, Sequence[float]]) -> Verdict:
    """One condition of an ordering claim, e.g. "raw < value-weighted < contribution": ``diffs`` maps each
    step to its paired differences over windows (or items), signed so that the paper's side is above 0.
    Each step goes through ``interval_excludes(..., "above", 0)`` and the steps through :func:`all_of`."""
    return all_of({step: interval_excludes(list(d), "above", 0.0) for step, d in diffs.items()})


def verdict_conditions(verdicts: Mapping[str, Verdict]) -> Verdict:
    """A claim judged under several conditions (text sets x layer sets, or tasks): the testable ones decide.
    Not testable when none is (the first one's reason); holds when every testable one holds, does not hold
    when none does, else inconclusive ("k of n conditions"). Estimate: the share of testable conditions on
    which it holds; n: the testable conditions."""
    if not verdicts:
        raise ValueError("no conditions to judge")
    testable = {k: v for k, v in verdicts.items() if v.word != NOT_TESTABLE}
    if not testable:
        return Verdict(NOT_TESTABLE, next(iter(verdicts.values())).why, n=0)
    held = sum(v.word == HOLDS for v in testable.values())
    share, n = held / len(testable), len(testable)
    skipped = len(verdicts) - n
    note = f"; {skipped} of {len(verdicts)} conditions not testable" if skipped else ""
    if held == n:
        return Verdict(HOLDS, f"in all {n} testable conditions{note}", share, n=n)
    if held == 0:
        return Verdict(DOES_NOT_HOLD, f"in none of {n} testable conditions{note}", share, n=n)
    return Verdict(INCONCLUSIVE, f"holds in {held} of {n} testable conditions{note}", share, n=n)


def verdict_downstream(per_task: Mapping[str, Verdict], gates: Mapping[str, Verdict | None]) -> Verdict:
    """Downstream, "interventions guided by contribution weights hurt accuracy most (top zeroed) and least
    (bottom zeroed)": ``per_task`` verdicts of the paired per-item comparisons and each task's
    ``above_chance`` gate (None: the clean model is above chance). Tasks at chance are set aside; not testable
    when every task is at chance, else :func:`verdict_conditions` over the others."""
    if set(per_task) != set(gates):
        raise ValueError(f"tasks differ: {sorted(per_task)} vs {sorted(gates)}")
    kept = {t: v for t, v in per_task.items() if gates[t] is None}
    if not kept:
        return Verdict(NOT_TESTABLE, "the clean model is not above chance on any task", n=0)
    return verdict_conditions(kept)


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


def verdict_anti_aligned(sink: Sequence[float], controls: Mapping[str, Sequence[float]]) -> Verdict:
    """The claim "the sink's projected values are anti-aligned with the other tokens'", against controls:
    ``sink`` holds one mean cos(v~_0, v~_j) per window, ``controls`` the same statistic per window for
    ordinary positions p (cos(v~_p, v~_j)). Holds when the sink's interval lies below 0 and, paired by window,
    below every control's; through :func:`all_of`, so the evidence is the deciding step's."""
    steps = {"sink cosine < 0": interval_excludes(list(sink), "below", 0.0)}
    for name, values in controls.items():
        diff = np.asarray(sink, dtype=float) - np.asarray(values, dtype=float)
        steps[f"sink < {name}"] = interval_excludes(diff.tolist(), "below", 0.0)
    return all_of(steps)


def verdict_convex_minimum(inside: int, heads: int) -> Verdict:
    """The claim "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
    from the number of heads whose binned ||o|| has an interior minimum (``sinks.binned_minimum``): holds
    when that is more than half of the ``heads``, else does not hold. Estimate: the share, against 0.5."""
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


def _ours(exp: ContributionExperiment, who: str, text: str) -> str:
    """A row's measurement, prefixed by the exact weights it comes from and their caveat."""
    if who == "pretrained":
        tag = f"[{exp.weights}; a 135M instruct model, not the paper's 7-8B base models]"
        if exp.model != "smollm2":
            tag = f"[{exp.weights}]"
    else:
        own = exp.preset.own.model
        tag = f"[this project's GPT {own.n_layer}L-{own.d_model}d, byte-level, trained on Shakespeare]"
    return f"{tag} {text}"


def claims(
    exp: ContributionExperiment,
    sinks: dict,
    curves: pd.DataFrame,
    downstream: pd.DataFrame,
    own_curves: pd.DataFrame,
) -> list[Claim]:
    """The claims table of ``exp``'s results: ``sinks`` (:meth:`ContributionExperiment.sinks`), the
    pretrained model's faithfulness ``curves``, the ``downstream`` per-item credits and this project's GPT's
    ``own_curves`` (both curves as ``with_delta`` returns them)."""
    return [
        _claim_fig1(exp, sinks["decomposition"], "first text token"),
        *(
            [_claim_fig1(exp, sinks["decomposition_bos"], "BOS prefixed")]
            if len(sinks["decomposition_bos"])
            else []
        ),
        *_claims_faithfulness(exp, curves, "pretrained"),
        _claim_downstream(exp, downstream),
        *_claims_sinks(exp, sinks),
        *_claims_faithfulness(exp, own_curves, "own GPT"),
    ]


def _claim_fig1(exp: ContributionExperiment, d: pd.DataFrame, variant: str) -> Claim:
    sink = d[d["group"] == "sink"]
    a, c = sink["mean_attention"].mean(), sink["mean_contribution"].mean()
    high = sink[sink["mean_attention"] > FIRST_TOKEN_ATTENTION]
    return _with_criterion(
        "Fig. 1",
        f"the first token gets a large attention mass but contributes little ({variant})",
        "qualitative (two heads of a 7-8B model)",
        _ours(exp, "pretrained",
              f"all heads, Brown text, {variant}: first token's mean attention {a:.2f}, mean contribution "
              f"{c:.2f}; in the {len(high)} of {len(sink)} layers with mean attention > 0.3 its contribution "
              f"is {high['mean_contribution'].mean():.2f}"),
        verdict_first_token(a, c, len(sink)),
        "mean attention > 0.3 and contribution below half of it",
    )  # fmt: skip


#: (mode, the measure that stands for contribution weights, label) of the faithfulness rows.
FAITHFULNESS_ROWS = (
    ("comprehensiveness", "contribution", "comprehensiveness (top zeroed), signed c"),
    ("sufficiency", "contribution", "sufficiency (bottom zeroed), signed c"),
    ("sufficiency", "contribution_abs", "sufficiency (bottom zeroed), |c|"),
)


def faithfulness_condition(
    sub: pd.DataFrame, log_areas: pd.Series, mode: str, best: str
) -> tuple[Verdict, dict]:
    """One (text, layers, scope) condition of a faithfulness row: the saturation gate on the mean delta-PPL
    at the smallest and largest fractions, then the hierarchy raw < value-weighted < ``best`` as paired
    per-window differences of the log-scale areas (``verdict_steps``). Returns the verdict and the mean
    paired differences."""
    order = (*HIERARCHY[:-1], best)
    nonzero = sub[(sub["fraction"] > 0) & (sub["mode"] == mode) & sub["measure"].isin(order)]
    by = nonzero.groupby(["measure", "fraction"])["delta_ppl"].mean()
    f_min, f_max = nonzero["fraction"].min(), nonzero["fraction"].max()
    gate = saturation_gate({m: by[m, f_min] for m in order}, {m: by[m, f_max] for m in order})
    sign = 1.0 if mode == "comprehensiveness" else -1.0  # the paper's side: more (comp) or less (suff) rise
    diffs = {}
    for lo, hi in zip(order, order[1:], strict=False):
        d = sign * (log_areas.xs(hi, level="measure") - log_areas.xs(lo, level="measure"))
        diffs[f"{MEASURE_LABELS[lo]} < {MEASURE_LABELS[hi]}"] = d.to_numpy()
    means = {k: float(np.mean(v)) for k, v in diffs.items()}
    return (gate or verdict_steps(diffs)), means


def _claims_faithfulness(exp: ContributionExperiment, curves: pd.DataFrame, who: str) -> list[Claim]:
    log_areas = window_areas(curves, log=True)
    rows = []
    for scope in dict.fromkeys(curves["scope"]):
        ranking = {"head": "ranked per head", "joint": "ranked jointly across heads"}[scope]
        for mode, best, label in FAITHFULNESS_ROWS:
            if best not in RANKINGS[mode]:
                continue
            verdicts, parts = {}, []
            for (text, layers), sub in curves[curves["scope"] == scope].groupby(
                ["text", "layers"], sort=False
            ):
                areas = log_areas.xs((text, layers, scope, mode), level=["text", "layers", "scope", "mode"])
                v, means = faithfulness_condition(sub, areas, mode, best)
                verdicts[f"{text}, {layers}"] = v
                steps = ", ".join(f"{signed(m, 2)}" for m in means.values())
                parts.append(
                    f"{text} {layers}: {v.word}{' (saturated)' if 'saturated' in v.why else ''} [{steps}]"
                )
            hierarchy = " < ".join(MEASURE_LABELS[m] for m in (*HIERARCHY[:-1], best))
            rows.append(Claim(
                "faithfulness",
                f"{hierarchy}: {label} ({who}, {ranking})",
                "ordering of the delta-PPL curves on GSM8K and FineWeb-Edu, four 7-8B models",
                _ours(exp, who, "paired per-window differences of the log(1 + dPPL) areas along the "
                      "order, mean, on the paper's side when positive: " + "; ".join(parts)),
                verdict_conditions(verdicts),
            ))  # fmt: skip
    return rows


def downstream_task(sub: pd.DataFrame) -> tuple[Verdict | None, Verdict, dict]:
    """One task of the downstream claim, from its per-item credits: the ``above_chance`` gate on the clean
    accuracy (chance: the mean of 1 / choices), and whether contribution weights hurt most with their top
    zeroed and least with their bottom zeroed, against each baseline, paired over items. Returns the gate,
    the verdict and the accuracies by (mode, measure)."""
    clean = sub[sub["measure"] == "none"].sort_values("item")
    gate = above_chance(round(clean["credit"].sum()), len(clean), float(clean["chance"].mean()))
    credit = sub[sub["measure"] != "none"].pivot_table("credit", "item", ["mode", "measure"])
    steps = {}
    for mode in ("comprehensiveness", "sufficiency"):
        sign = -1.0 if mode == "comprehensiveness" else 1.0
        for base in HIERARCHY[:-1]:
            d = sign * (credit[mode, "contribution"] - credit[mode, base])
            steps[f"{mode} vs {MEASURE_LABELS[base]}"] = d.to_numpy()
    acc = {"clean": float(clean["credit"].mean())} | {k: float(v) for k, v in credit.mean().items()}
    return gate, verdict_steps(steps), acc


def _claim_downstream(exp: ContributionExperiment, frame: pd.DataFrame) -> Claim:
    per_task, gates, parts = {}, {}, []
    for task, sub in frame.groupby("task", sort=False):
        gate, verdict, acc = downstream_task(sub)
        per_task[task], gates[task] = verdict, gate
        comp = ", ".join(f"{m} {acc['comprehensiveness', m]:.2f}" for m in RANKINGS["comprehensiveness"])
        suff = ", ".join(f"{m} {acc['sufficiency', m]:.2f}" for m in RANKINGS["sufficiency"])
        status = "at chance" if gate is not None else "above chance"
        parts.append(f"{task} ({len(sub['item'].unique())} items): clean {acc['clean']:.2f}, {status}; "
                     f"top {exp.preset.task_fraction:g} zeroed {comp}; bottom zeroed {suff}")  # fmt: skip
    return Claim(
        "downstream",
        "interventions guided by contribution weights hurt accuracy most (top zeroed) and least (bottom)",
        "MMLU, Winogrande, BoolQ with 7-8B models",
        _ours(exp, "pretrained", "; ".join(parts)),
        verdict_downstream(per_task, gates),
    )


def _claims_sinks(exp: ContributionExperiment, sinks: dict) -> list[Claim]:
    layers = sinks["decomposition"]["layer"].nunique()
    d = sinks["decomposition"].groupby("group").mean(numeric_only=True)
    s, t = d.loc["sink"], d.loc["tail"]
    pos = sinks["positions"].groupby(["position", "window"])["cosine"].mean()  # mean over layers
    sink = pos.xs(0).to_numpy()
    controls = {f"position {p}": pos.xs(p).to_numpy() for p in pos.index.get_level_values(0).unique() if p}
    fits = sinks["fits"]
    inside = fits["interior"].astype(bool)
    convex = fits["p2"] > 0
    spread = sinks["spread"].groupby("state")[["cone", "norm_cv"]].mean()
    ppl = sinks["ppl"]
    removal = verdict_sink_removal(
        (ppl["clean"], ppl["sink removed"]),
        (spread.loc["clean", "cone"], spread.loc["sink removed", "cone"]),
        (spread.loc["clean", "norm_cv"], spread.loc["sink removed", "norm_cv"]),
    )
    means = ", ".join(f"{name} {signed(v.mean(), 3)}" for name, v in controls.items())
    return [
        _with_criterion(
            "decomposition",
            "the sink's contribution is driven by value geometry, not attention; the tail's by attention "
            "and alignment jointly",
            "qualitative",
            _ours(exp, "pretrained",
                  f"correlation of c with attention / with norm ratio x cosine (mean over layers): sink "
                  f"{signed(s['corr_contribution_attention'], 2)} / "
                  f"{signed(s['corr_contribution_geometry'], 2)}; tail "
                  f"{signed(t['corr_contribution_attention'], 2)} / "
                  f"{signed(t['corr_contribution_geometry'], 2)}; mean factors sink: a "
                  f"{s['mean_attention']:.2f}, norm ratio {s['mean_norm_ratio']:.2f}, cos "
                  f"{signed(s['mean_cosine'], 2)}"),
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
            _ours(exp, "pretrained",
                  f"mean cos(v~_p, v~_j) per window (mean over layers and heads), {len(sink)} windows: sink "
                  f"(p = 0) {signed(sink.mean(), 3)}; controls {means}"),
            verdict_anti_aligned(sink, controls),
        ),
        _with_criterion(
            "sinks",
            "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
            "convex; minimum inside (0, 1)",
            _ours(exp, "pretrained",
                  f"||o|| in 10 equal-count bins of the sink rate per head: interior minimum for "
                  f"{int(inside.sum())} of {len(fits)} heads (quadratic fit, shown as a picture only: convex "
                  f"for {int(convex.sum())})"),
            verdict_convex_minimum(int(inside.sum()), len(fits)),
            "more than half of the heads have their smallest binned ||o|| in an interior bin, both end bins "
            "more than 5% above it",
        ),
        Claim(
            "sink-norm removal",
            "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise",
            "outputs collapse into a 'semantic cone', PPL rises",
            _ours(exp, "pretrained",
                  f"PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f}; cone (mean cos to the head's mean "
                  f"direction) {spread.loc['clean', 'cone']:.2f} -> "
                  f"{spread.loc['sink removed', 'cone']:.2f}; "
                  f"norm CV {spread.loc['clean', 'norm_cv']:.2f} -> "
                  f"{spread.loc['sink removed', 'norm_cv']:.2f}"),
            removal,
        ),
    ]  # fmt: skip
