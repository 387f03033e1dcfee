"""The contribution-weights notebook's claims table (arXiv 2606.07604): :func:`claims` reads the numbers each
claim needs off one :class:`Evidence` bundle (the experiment's results and the settings the rows name) and
words the rows; the verdicts are the pure functions of :mod:`attnlab.papers.contribution_weights.rules`.

Every row names its unit of replication (``Claim.unit``): the layers of the one model analysed (Fig. 1, the
decomposition, the sink-norm removal's cone and noise, the negative c), its windows (faithfulness,
anti-alignment, the sink-norm removal's perplexity), items (downstream), heads (the convex minimum), timing
repeats (the cost in time) or none (the row sums of c and the cost in memory, deterministic). A claim with
parts or conditions is ``runner.composite.all_of`` of them (``rules``)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from attnlab.papers.contribution_weights import rules
from attnlab.papers.contribution_weights.faithfulness import window_areas
from attnlab.papers.contribution_weights.presets import HIERARCHY, MEASURE_LABELS, RANKINGS
from attnlab.runner.claims import Claim, signed
from attnlab.runner.verdicts import Verdict, above_chance, mean_rule, not_testable, paired_rule

_CURVE_COLUMNS = {"text", "layers", "scope", "mode", "measure", "window", "fraction", "delta_ppl"}
_DOWNSTREAM_COLUMNS = {"task", "item", "measure", "mode", "credit", "chance"}
_SINK_RESULTS = {"first_token", "decomposition", "decomposition_bos", "positions", "fits", "spread", "ppl",
                 "nll", "identity", "negative"}  # fmt: skip
_COST_COLUMNS = {"impl", "T", "peak_gb", "terms_gb", "D"}
_PAIR_COLUMNS = {"T", "repeat", "contribution_weights", "naive"}


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
    cost: pd.DataFrame | None = None  # ContributionExperiment.cost(); None: no cost rows (scale section)
    cost_pairs: pd.DataFrame | None = None  # ContributionExperiment.cost_pairs(); None: no timing row

    def __post_init__(self) -> None:
        frames = [("pretrained_curves", self.pretrained_curves, _CURVE_COLUMNS),
                  ("downstream", self.downstream, _DOWNSTREAM_COLUMNS)]  # fmt: skip
        optional = (("own_curves", self.own_curves, _CURVE_COLUMNS), ("cost", self.cost, _COST_COLUMNS),
                    ("cost_pairs", self.cost_pairs, _PAIR_COLUMNS))  # fmt: skip
        frames += [(name, frame, columns) for name, frame, columns in optional if frame is not None]
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
    faithfulness rows (where ``evidence.own_curves`` is given), then the cost rows (where ``evidence.cost``
    and ``evidence.cost_pairs`` are)."""
    own = (
        [] if evidence.own_curves is None else _claims_faithfulness(evidence, evidence.own_curves, "own GPT")
    )
    cost = [] if evidence.cost is None else [_claim_memory(evidence.cost)]
    timing = [] if evidence.cost_pairs is None else [_claim_speed(evidence.cost_pairs)]
    return [*pretrained_rows(evidence), *own, *cost, *timing]


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
        *_claims_definitions(evidence, sinks),
    ]


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
    ("comprehensiveness", "contribution_abs", "comprehensiveness (top zeroed), |c|"),
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
    removal = rules.sink_removal(
        (_by_layer(clean, "cone"), _by_layer(removed, "cone")),
        (_by_layer(clean, "norm_cv"), _by_layer(removed, "norm_cv")),
    )
    ppl, nll = sinks["ppl"], sinks["nll"]
    per_token = {state: dict(zip(nll["window"], nll[state] / nll["tokens"], strict=True))
                 for state in ("clean", "sink removed")}  # fmt: skip
    rises = rules.perplexity_rises(per_token["clean"], per_token["sink removed"])
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
            "removing the sink's value norm collapses head outputs into a cone; noise rises",
            "outputs collapse into a 'semantic cone', noise rises",
            _ours(evidence, "pretrained",
                  f"per layer (the model's {len(clean)} layers the units), clean -> sink removed: cone (mean "
                  f"cos to the head's mean direction) {clean['cone'].mean():.2f} -> "
                  f"{removed['cone'].mean():.2f}; noise (norm CV) {clean['norm_cv'].mean():.2f} -> "
                  f"{removed['norm_cv'].mean():.2f}"),
            removal,
            unit="layer",
        ),
        Claim(
            "sink-norm removal",
            "removing the sink's value norm raises the perplexity",
            "PPL rises",
            _ours(evidence, "pretrained",
                  f"PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f} (pooled over the {len(nll)} "
                  f"windows); per window (the units), the rise in mean NLL, log PPL, {_interval(rises, 3)}"),
            rises,
            unit="window",
        ),
    ]  # fmt: skip


# --- the definition's properties (sum_j c_ij = 1; c can be negative) -------------------------------------


def _claims_definitions(evidence: Evidence, sinks: Mapping[str, Any]) -> list[Claim]:
    """The two properties the paper states with its definition ("c can be negative (destructive
    interference) and sum_j c_ij = 1 exactly"), on the sink analyses' windows and every layer."""
    identity, negative = sinks["identity"], sinks["negative"]
    rows = int(identity["rows"].sum() + identity["inter_rows"].sum())
    forms = {"intra-head": "max_scaled", "inter-head": "inter_max_scaled"}
    scaled = {form: float(identity[column].max()) for form, column in forms.items()}
    bound = float(identity["bound"].max())
    share = identity["bias_share"].max()
    bias = (
        "this model's W_O has none"
        if share == 0
        else f"this model's W_O has one, {share:.2g} of the mean output norm"
    )
    shares = _by_layer(negative, "share")
    sums = Claim(
        "definitions",
        "each row of contribution weights sums to 1 exactly (o_i = sum_j a_ij v~_j)",
        "sum_j c_ij = 1 exactly",
        _ours(evidence, "pretrained",
              f"largest |sum_j c_ij - 1| over every query row of the Brown windows in every layer (float32): "
              f"intra-head {identity['max_deviation'].max():.2g}, inter-head "
              f"{identity['inter_max_deviation'].max():.2g}; divided by the row's condition number "
              f"kappa_i = sum_j ||a_ij v~_j|| / ||o_i||: {scaled['intra-head']:.2g} and "
              f"{scaled['inter-head']:.2g}, against the rounding bound 2 (T + H + D) u = {bound:.2g}; rows "
              f"with o_i = 0 (c = 0, left out): {int(identity['zero_rows'].sum())}. Biases: W_V's is inside "
              f"every v~_j and breaks nothing; W_O's is no token's term and would ({bias}); the layer's own "
              f"output differs from the sum of its terms (+ b_O) by at most "
              f"{identity['max_residual'].max():.2g} of its norm (the model's rounding)"),
        rules.rows_sum_to_one(scaled, bound, rows),
        unit="none",
    )  # fmt: skip
    values = list(shares.values())
    signs = Claim(
        "definitions",
        "contribution weights can be negative (destructive interference)",
        "c can be negative",
        _ours(evidence, "pretrained",
              f"share of negative c among the causal terms j <= i of queries i >= 1 (intra-head), per layer "
              f"(the model's {len(values)} layers the units): mean {sum(values) / len(values):.3f}, range "
              f"{min(values):.3f}-{max(values):.3f}; what they cancel, sum_j max(-c_ij, 0) per row, mean "
              f"{negative['mass'].mean():.3f} of the output; most negative c {negative['min'].min():.3g}"),
        rules.negative_contributions(shares),
        unit="layer",
    )  # fmt: skip
    return [sums, signs]


# --- cost -------------------------------------------------------------------------------------------------


def _claim_memory(cost: pd.DataFrame) -> Claim:
    """The paper's cost ("Cost": O(T^2) memory per head, no T x T x d tensor) from ``cost()``'s peak memory
    of each form, each in a fresh process."""
    own = cost[cost["impl"] == "contribution_weights"].set_index("T")
    naive = cost[cost["impl"] == "naive"].set_index("T")["peak_gb"].dropna()
    D = int(own["D"].iloc[0])
    parts = [
        f"T = {T}: {r['peak_gb']:.3g} GB, {r['peak_gb'] / (r['terms_gb'] / D):.1f} (H, T, T) matrices, "
        f"against the tensor's {r['terms_gb']:.3g} GB"
        + (f" (the naive form's measured peak {naive[T]:.3g} GB)" if T in naive.index else "")
        for T, r in own.iterrows()
    ]
    return Claim(
        "cost",
        "contribution weights need O(T^2) memory per head: the T x T x d tensor of weighted terms is never "
        "formed",
        "O(T^2) memory per head",
        f"[batch 1, the model's heads and width D = {D}; each in a fresh process] peak memory of "
        f"contribution_weights above its inputs: " + "; ".join(parts),
        rules.memory(own["peak_gb"].to_dict(), own["terms_gb"].to_dict()),
        unit="none",
    )


def _claim_speed(pairs: pd.DataFrame) -> Claim:
    """The cost in time, from ``cost_pairs()``: both forms alternated in one process, a ratio per repeat."""
    by_length = {
        int(T): (dict(zip(sub["repeat"], sub["naive"], strict=True)),
                 dict(zip(sub["repeat"], sub["contribution_weights"], strict=True)))
        for T, sub in pairs.groupby("T")
    }  # fmt: skip
    verdict = rules.speed(by_length)
    parts = []
    for T, (naive, efficient) in by_length.items():
        logs = rules.speed({T: (naive, efficient)})
        ratio = f"{math.exp(logs.estimate):.1f}x [{math.exp(logs.low):.1f}, {math.exp(logs.high):.1f}]"
        medians = f"{pd.Series(naive).median():.3g} s and {pd.Series(efficient).median():.3g} s"
        parts.append(f"T = {T}: {ratio} over {len(naive)} repeats (medians {medians})")
    return Claim(
        "cost",
        "computing contribution weights without the T x T x d tensor takes less time than forming it",
        "(no time given; the cost argument)",
        "[batch 1, the model's heads and width; both forms alternated in one process] time of the naive form "
        "over contribution_weights, geometric mean of the per-repeat ratios [95% interval]: "
        + ("; ".join(parts) or "no length measured"),
        verdict,
        unit="repeat",
    )
