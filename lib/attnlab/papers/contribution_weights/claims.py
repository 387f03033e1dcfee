"""The contribution-weights notebook's claims table (arXiv 2606.07604): :func:`claims` reads the numbers each
claim needs off one :class:`Evidence` bundle (the experiment's results and the settings the rows name) and
words the rows; the verdicts are the pure functions of :mod:`attnlab.papers.contribution_weights.rules`.

Every row names its unit of replication (``Claim.unit``): the layers of the one model analysed (Fig. 1, the
decomposition, the sink-norm removal), its windows (faithfulness, anti-alignment), items (downstream) or heads
(the convex minimum). A claim with parts or conditions is ``runner.composite.all_of`` of them (``rules``)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pandas as pd

from attnlab.papers.contribution_weights import rules
from attnlab.papers.contribution_weights.faithfulness import window_areas
from attnlab.papers.contribution_weights.presets import HIERARCHY, MEASURE_LABELS, RANKINGS
from attnlab.papers.contribution_weights.rules import ANTI_ALIGNMENT as ANTI_ALIGNMENT  # the figure's band
from attnlab.runner.claims import Claim, signed
from attnlab.runner.verdicts import Verdict, above_chance, mean_rule, not_testable, paired_rule

_CURVE_COLUMNS = {"text", "layers", "scope", "mode", "measure", "window", "fraction", "delta_ppl"}
_DOWNSTREAM_COLUMNS = {"task", "item", "measure", "mode", "credit", "chance"}
_SINK_RESULTS = {"first_token", "decomposition", "decomposition_bos", "positions", "fits", "spread", "ppl"}


@dataclass(frozen=True, eq=False)
class Evidence:
    """Everything the claims table is judged on, by name: the notebook's results, unchanged, and the settings
    the rows name (``ContributionExperiment.evidence`` fills them)."""

    pretrained_curves: pd.DataFrame  # ContributionExperiment.faithfulness(): per-window delta-PPL curves
    downstream: pd.DataFrame  # ContributionExperiment.downstream(): per-item credits, clean and intervened
    sinks: Mapping[str, Any]  # ContributionExperiment.sinks(): the sink analyses' frames and perplexities
    own_curves: pd.DataFrame | None  # ContributionExperiment.own_model()[1]; None: no own-GPT rows (scale)
    weights: str  # the exact pretrained weights analysed (ContributionExperiment.weights)
    pinned: bool  # a pinned offline model (at most 1.5B parameters), not the paper's 7-8B base models
    own_model: str  # this project's GPT, e.g. "4L-128d"
    window: int  # tokens per text window of the sink analyses (as the model is fed, any BOS of its own in)
    task_fraction: float  # the fraction of value terms zeroed for the downstream accuracies
    scopes: tuple[str, ...]  # the ranking scopes of the faithfulness curves

    def __post_init__(self) -> None:
        frames = [("pretrained_curves", self.pretrained_curves, _CURVE_COLUMNS),
                  ("downstream", self.downstream, _DOWNSTREAM_COLUMNS)]  # fmt: skip
        if self.own_curves is not None:
            frames.append(("own_curves", self.own_curves, _CURVE_COLUMNS))
        for name, frame, columns in frames:
            if not isinstance(frame, pd.DataFrame) or not columns <= set(frame.columns):
                have = sorted(frame.columns) if isinstance(frame, pd.DataFrame) else type(frame).__name__
                raise ValueError(f"Evidence.{name} needs columns {sorted(columns)}; got {have}")
        if not isinstance(self.sinks, Mapping) or not _SINK_RESULTS <= set(self.sinks):
            raise ValueError(f"Evidence.sinks needs {sorted(_SINK_RESULTS)} (ContributionExperiment.sinks())")
        if self.window < 2:
            raise ValueError(f"Evidence.window: windows of at least two tokens; got {self.window}")


def claims(evidence: Evidence) -> list[Claim]:
    """The claims table: the pretrained model's rows (:func:`pretrained_rows`), then this project's GPT's
    faithfulness rows (where ``evidence.own_curves`` is given)."""
    own = (
        [] if evidence.own_curves is None else _claims_faithfulness(evidence, evidence.own_curves, "own GPT")
    )
    return [*pretrained_rows(evidence), *own]


def pretrained_rows(evidence: Evidence) -> list[Claim]:
    """The rows of the pretrained model alone (Fig. 1, faithfulness, downstream, sinks): the claims table's,
    and the scale section's for each pinned model (``contribution_weights.scale``). A downstream table with
    no task (a model given none) gives no downstream row; one whose every task was skipped (its data
    unavailable here, :func:`skipped`) gives a "not testable here" row with the reason."""
    sinks, downstream = evidence.sinks, evidence.downstream
    bos = len(sinks["decomposition_bos"])
    return [
        _claim_fig1(evidence, sinks["decomposition"], sinks["first_token"], evidence.window),
        *(
            [_claim_fig1(evidence, sinks["decomposition_bos"], "BOS prefixed", evidence.window + 1)]
            if bos
            else []
        ),
        *_claims_faithfulness(evidence, evidence.pretrained_curves, "pretrained"),
        *([_claim_downstream(evidence, downstream)] if len(downstream) or skipped(downstream) else []),
        *_claims_sinks(evidence, sinks),
    ]


class Judged(Protocol):
    """An experiment that gathers its results into an :class:`Evidence` (``ContributionExperiment``)."""

    def evidence(
        self,
        sinks: dict,
        curves: pd.DataFrame,
        downstream: pd.DataFrame,
        own_curves: pd.DataFrame | None = None,
    ) -> Evidence: ...


def pretrained_claims(
    exp: Judged, sinks: Mapping[str, Any], curves: pd.DataFrame, downstream: pd.DataFrame
) -> list[Claim]:
    """:func:`pretrained_rows` of one pinned model's results, as the scale section calls it (by the
    experiment that measured them, which gathers them into its :class:`Evidence`)."""
    return pretrained_rows(exp.evidence(dict(sinks), curves, downstream))


def skipped(frame: pd.DataFrame) -> dict[str, str]:
    """The text sets or tasks a result table left out because their data is unavailable here, with the
    reason (``ContributionExperiment.faithfulness`` and ``downstream`` record them in ``attrs``)."""
    return dict(frame.attrs.get("skipped", {}))


def _skipped_parts(frame: pd.DataFrame) -> tuple[dict[str, Verdict], list[str]]:
    """A "not testable here" part per skipped text set or task, and its line for the row's text."""
    reasons = skipped(frame)
    return (
        {name: not_testable(why, n=0) for name, why in reasons.items()},
        [f"{name}: skipped: {why}" for name, why in reasons.items()],
    )


def _ours(evidence: Evidence, who: str, text: str) -> str:
    """A row's measurement, prefixed by the exact weights it comes from and their caveat."""
    if who == "pretrained":
        tag = (
            f"[{evidence.weights}; not the paper's 7-8B base models]"
            if evidence.pinned
            else f"[{evidence.weights}]"
        )
    else:
        tag = f"[this project's GPT {evidence.own_model}, byte-level, trained on Shakespeare]"
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


def _by_layer(frame: pd.DataFrame, column: str) -> dict[Hashable, float]:
    """``{layer: value}`` of one column of a per-layer frame."""
    if frame["layer"].duplicated().any():
        raise ValueError("one row per layer expected")
    return dict(zip(frame["layer"], frame[column].astype(float), strict=True))


# --- Fig. 1 -----------------------------------------------------------------------------------------------


def _claim_fig1(evidence: Evidence, d: pd.DataFrame, variant: str, tokens: int) -> Claim:
    """Fig. 1 over the layers of the model (``tokens``: the window as the model sees it, for the uniform
    attention of :func:`rules.uniform_first_token`)."""
    sink = d[d["group"] == "sink"]
    uniform = rules.uniform_first_token(tokens)
    verdict = rules.first_token(
        _by_layer(sink, "mean_attention"), _by_layer(sink, "mean_contribution"), uniform
    )
    a, c = sink["mean_attention"].mean(), sink["mean_contribution"].mean()
    return Claim(
        "Fig. 1",
        f"the first token gets a large attention mass but contributes little ({variant})",
        "qualitative (two heads of a 7-8B model)",
        _ours(evidence, "pretrained",
              f"all heads, Brown text, {variant}, per layer (units: the model's {len(sink)} layers): first "
              f"token's mean attention {a:.2f} (uniform attention over the {tokens}-token window's causal "
              f"prefix would give {uniform:.3f}), mean contribution {c:.2f}"),
        verdict,
        unit="layer",
    )  # fmt: skip


# --- faithfulness -----------------------------------------------------------------------------------------

#: (mode, the measure that stands for contribution weights, label) of the faithfulness rows.
FAITHFULNESS_ROWS = (
    ("comprehensiveness", "contribution", "comprehensiveness (top zeroed), signed c"),
    ("sufficiency", "contribution", "sufficiency (bottom zeroed), signed c"),
    ("sufficiency", "contribution_abs", "sufficiency (bottom zeroed), |c|"),
)


def faithfulness_condition(sub: pd.DataFrame, log_areas: pd.Series, mode: str, best: str) -> rules.Condition:
    """The numbers of one (text, layers, scope) condition of a faithfulness row: the mean delta-PPL of each
    measure at the smallest and largest fractions (the saturation gate) and the hierarchy raw <
    value-weighted < ``best`` as per-window log-scale areas (``log_areas``, indexed by window and measure),
    each step's pair ordered so that the paper's side is above 0: a larger area (comprehensiveness) or a
    smaller one (sufficiency) for the more faithful measure."""
    order = (*HIERARCHY[:-1], best)
    nonzero = sub[(sub["fraction"] > 0) & (sub["mode"] == mode) & sub["measure"].isin(order)]
    by = nonzero.groupby(["measure", "fraction"])["delta_ppl"].mean()
    f_min, f_max = nonzero["fraction"].min(), nonzero["fraction"].max()
    area = {m: log_areas.xs(m, level="measure").to_dict() for m in order}  # {window: area}
    steps = {}
    for lo, hi in zip(order, order[1:], strict=False):
        pair = (area[hi], area[lo]) if mode == "comprehensiveness" else (area[lo], area[hi])
        steps[f"{MEASURE_LABELS[lo]} < {MEASURE_LABELS[hi]}"] = pair
    return rules.Condition(steps, {m: by[m, f_min] for m in order}, {m: by[m, f_max] for m in order})


def _claims_faithfulness(evidence: Evidence, curves: pd.DataFrame, who: str) -> list[Claim]:
    """The faithfulness rows of one model's curves; a skipped text set (:func:`skipped`) is a "not testable
    here" part of each row, so a row with every text set skipped is not testable, with the reason."""
    log_areas = window_areas(curves, log=True)
    missing, missing_texts = _skipped_parts(curves)
    rows = []
    for scope in dict.fromkeys(curves["scope"]) or (evidence.scopes if missing else ()):
        ranking = {"head": "ranked per head", "joint": "ranked jointly across heads"}[scope]
        for mode, best, label in FAITHFULNESS_ROWS:
            if best not in RANKINGS[mode]:
                continue
            conditions: dict[str, rules.Condition | Verdict] = {}
            texts = []
            for (text, layers), sub in curves[curves["scope"] == scope].groupby(
                ["text", "layers"], sort=False
            ):
                areas = log_areas.xs((text, layers, scope, mode), level=["text", "layers", "scope", "mode"])
                condition = faithfulness_condition(sub, areas, mode, best)
                conditions[f"{text} {layers}"] = condition
                saturated = " (saturated)" if rules.saturation_gate(condition.small, condition.large) else ""
                parts = rules.paired_steps(condition.steps).values()
                texts.append(f"{text} {layers}{saturated}: " + ", ".join(map(_with_detectable, parts)))
            conditions |= missing
            texts += missing_texts
            hierarchy = " < ".join(MEASURE_LABELS[m] for m in (*HIERARCHY[:-1], best))
            rows.append(Claim(
                "faithfulness",
                f"{hierarchy}: {label} ({who}, {ranking})",
                "ordering of the delta-PPL curves on GSM8K and FineWeb-Edu, four 7-8B models",
                _ours(evidence, who, "paired per-window differences of the log(1 + dPPL) areas along the "
                      "order, mean [95% interval], positive on the paper's side, and the smallest difference "
                      "each step's test could have detected (80% power): " + "; ".join(texts)),
                rules.faithfulness(conditions),
                unit="window",
            ))  # fmt: skip
    return rows


# --- downstream -------------------------------------------------------------------------------------------


def downstream_task(sub: pd.DataFrame) -> tuple[rules.Task, dict]:
    """The numbers of one task of the downstream claim, from its per-item credits: the ``above_chance`` gate
    on the clean accuracy (chance: the mean of the ``chance`` column, ``faithfulness.chance_level``; a task
    whose chance is 1, every answer in one position, is not testable), and the comparisons of contribution
    weights against each baseline, top zeroed (hurts most) and bottom zeroed (hurts least), per item (0/1
    credits), ordered so that the paper's side is above 0. Returns the task and the accuracies by (mode,
    measure)."""
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
    return rules.Task(gate, steps), acc


def _claim_downstream(evidence: Evidence, frame: pd.DataFrame) -> Claim:
    tasks: dict[str, rules.Task | Verdict] = {}
    parts = []
    for task, sub in frame.groupby("task", sort=False):
        judged, acc = downstream_task(sub)
        tasks[str(task)] = judged
        comp, suff = (
            ", ".join(f"{m} {acc[mode, m]:.2f}" for m in RANKINGS[mode] if (mode, m) in acc)  # those run
            for mode in ("comprehensiveness", "sufficiency")
        )
        status = "at chance" if judged.gate is not None else "above chance"
        steps = rules.paired_steps(judged.steps)
        diffs = ", ".join(f"{step} {_with_detectable(v, 1, 100)}" for step, v in steps.items())
        parts.append(f"{task} ({len(sub['item'].unique())} items): clean {acc['clean']:.2f}, {status}; "
                     f"top {evidence.task_fraction:g} zeroed {comp}; bottom zeroed {suff}; paired "
                     f"differences in accuracy points, positive on the paper's side: {diffs}")  # fmt: skip
    missing, missing_texts = _skipped_parts(frame)
    tasks |= missing
    parts += missing_texts
    return Claim(
        "downstream",
        "interventions guided by contribution weights hurt accuracy most (top zeroed) and least (bottom)",
        "MMLU, Winogrande, BoolQ with 7-8B models",
        _ours(evidence, "pretrained", "; ".join(parts)),
        rules.downstream(tasks),
        unit="item",
    )


# --- sinks ------------------------------------------------------------------------------------------------


def alignment_words(cosine: float) -> str:
    """A mean cosine in words, as measured, with no margin: its sign and the angle it makes."""
    angle = math.degrees(math.acos(max(-1.0, min(1.0, cosine))))
    sign = "negative" if cosine < 0 else "positive" if cosine > 0 else "zero"
    return f"{sign}, {angle:.1f} degrees"


def anti_alignment_text(
    sink: Mapping[Hashable, float], controls: Mapping[str, Mapping[Hashable, float]]
) -> str:
    """What the anti-alignment row measured: the magnitude of the sink's mean cosine with its 95% interval
    and angle (:func:`alignment_words`), each control's mean, and sink minus control (paired by window) with
    its interval."""
    v = mean_rule(list(sink.values()), "below", 0.0)
    parts = [
        f"mean cos(v~_p, v~_j) per window (mean over layers and heads), {len(sink)} windows: sink (p = 0) "
        f"{_interval(v, 3)} ({alignment_words(v.estimate)})"
    ]
    for name, values in controls.items():
        diff = paired_rule(sink, values, "below")
        mean = sum(values.values()) / len(values)
        parts.append(
            f"{name} {signed(mean, 3)} ({alignment_words(mean)}), sink minus it {_interval(diff, 3)}"
        )
    return "; ".join(parts)


def _claims_sinks(evidence: Evidence, sinks: Mapping[str, Any]) -> list[Claim]:
    decomp = sinks["decomposition"]
    layers = decomp["layer"].nunique()
    sink_rows, tail_rows = decomp[decomp["group"] == "sink"], decomp[decomp["group"] == "tail"]
    d = decomp.groupby("group").mean(numeric_only=True)
    s, t = d.loc["sink"], d.loc["tail"]
    decomposition = rules.decomposition(
        _by_layer(sink_rows, "corr_contribution_attention"),
        _by_layer(sink_rows, "corr_contribution_geometry"),
        _by_layer(tail_rows, "corr_contribution_attention"),
        _by_layer(tail_rows, "corr_contribution_geometry"),
    )
    pos = sinks["positions"].groupby(["position", "window"])["cosine"].mean()  # mean over layers
    sink = pos.xs(0).to_dict()  # {window: cosine}
    controls = {f"position {p}": pos.xs(p).to_dict() for p in pos.index.get_level_values(0).unique() if p}
    fits = sinks["fits"]
    inside = fits["interior"].astype(bool)
    convex = fits["p2"] > 0
    majority = rules.convex_minimum(int(inside.sum()), len(fits))
    spread = sinks["spread"]
    clean, removed = spread[spread["state"] == "clean"], spread[spread["state"] == "sink removed"]
    ppl = sinks["ppl"]
    removal = rules.sink_removal(
        (float(ppl["clean"]), float(ppl["sink removed"])),
        (_by_layer(clean, "cone"), _by_layer(removed, "cone")),
        (_by_layer(clean, "norm_cv"), _by_layer(removed, "norm_cv")),
    )
    return [
        Claim(
            "decomposition",
            "the sink's contribution is driven by value geometry, not attention; the tail's by attention "
            "and alignment jointly",
            "qualitative",
            _ours(evidence, "pretrained",
                  f"correlation of c with attention / with norm ratio x cosine (mean over the model's "
                  f"{layers} layers, the units): sink "
                  f"{signed(s['corr_contribution_attention'], 2)} / "
                  f"{signed(s['corr_contribution_geometry'], 2)}; tail "
                  f"{signed(t['corr_contribution_attention'], 2)} / "
                  f"{signed(t['corr_contribution_geometry'], 2)}; mean factors sink: a "
                  f"{s['mean_attention']:.2f}, norm ratio {s['mean_norm_ratio']:.2f}, cos "
                  f"{signed(s['mean_cosine'], 2)}"),
            decomposition,
            unit="layer",
        ),
        Claim(
            "sinks",
            "the sink's projected values are anti-aligned with the other tokens' (a negative mean cosine, "
            "below ordinary positions')",
            "negative cosine",
            _ours(evidence, "pretrained", anti_alignment_text(sink, controls)),
            rules.anti_aligned(sink, controls),
            unit="window",
        ),
        Claim(
            "sinks",
            "output norm is a convex function of the sink rate with its minimum at a sink rate below 1",
            "convex; minimum inside (0, 1)",
            _ours(evidence, "pretrained",
                  f"||o|| in 10 equal-count bins of the sink rate per head: interior minimum (smallest "
                  f"binned ||o|| in an interior bin, both end bins more than 5% above it) for "
                  f"{int(inside.sum())} of "
                  f"{len(fits)} heads, share {majority.estimate:.3f} (95% Wilson interval {majority.low:.3f}-"
                  f"{majority.high:.3f}); the quadratic fit, shown as a picture only, is convex for "
                  f"{int(convex.sum())}"),
            majority,
            unit="head",
        ),
        Claim(
            "sink-norm removal",
            "removing the sink's value norm collapses head outputs into a cone; PPL and noise rise",
            "outputs collapse into a 'semantic cone', PPL rises",
            _ours(evidence, "pretrained",
                  f"PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f} (pooled over the windows: no "
                  f"per-window values); cone (mean cos to the head's mean direction, per layer, the model's "
                  f"{len(clean)} layers the units) {clean['cone'].mean():.2f} -> "
                  f"{removed['cone'].mean():.2f}; "
                  f"norm CV {clean['norm_cv'].mean():.2f} -> {removed['norm_cv'].mean():.2f}"),
            removal,
            unit="layer",
        ),
    ]  # fmt: skip
