"""The synthesis notebook's hypotheses (this project's, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), each judged against its control by one rule of :mod:`attnlab.runner.verdicts`: a kind and its
control measured on the same seeds (same data order, same initialisation) are paired by seed
(``paired_rule``), a trend over the eta_QK / eta_OV sweep by one slope per seed (``slope_rule``). Gates make a
claim "not testable here" when a model involved learned nothing (``learned``: a diverged run counts) or, for
every claim about the first-token sink, when there is no sink (``sink_present``: SA's for the claims that XSA
moves it, the kind's own for its sink-value geometry).

The evidence arrives by name in one :class:`Evidence` bundle; every pairing is by seed name, never by the
position of a row."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from attnlab.runner.claims import Claim
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

if TYPE_CHECKING:
    from attnlab.papers.synthesis.experiment import SynthesisExperiment

OURS = "none (this project's hypothesis)"
#: The rule name of the undirected claims ("X changes Y"): the paired rule, on whichever side the mean lies.
EITHER_SIDE = f"{PAIRED}, either side (two-sided)"
#: The fewest distinct eta_QK / eta_OV ratios a trend over the sweep needs (``slope_rule``'s default).
MIN_RATIOS = 3

Seeded = Mapping[Hashable, float]  # {seed: value}


@dataclass(frozen=True, eq=False)
class Evidence:
    """Everything the synthesis claims are judged from, by name: the three tables the notebook builds.

    ``lens``: ``SynthesisExperiment.lens_table``, one row per (kind, seed, ratio, state, layer) with every
    lens; ``losses``: ``SynthesisExperiment.losses``, one row per run (kind, seed, ratio, initial, final
    validation loss); ``faithfulness_areas``: ``SynthesisExperiment.faithfulness_areas``, one row per (kind,
    seed, mode, measure) with its log ``area``."""

    lens: pd.DataFrame
    losses: pd.DataFrame
    faithfulness_areas: pd.DataFrame

    def __post_init__(self) -> None:
        for name, keys, extra in (
            ("lens", ["kind", "seed", "ratio", "state", "layer"], ["uniform", "control_value_cos"]),
            ("losses", ["kind", "seed", "ratio"], ["initial", "final"]),
            ("faithfulness_areas", ["kind", "seed", "mode", "measure"], ["area"]),
        ):
            frame = getattr(self, name)
            missing = [c for c in keys + extra if c not in frame.columns]
            if missing:
                raise ValueError(f"Evidence.{name} lacks the columns {missing}")
            if frame.duplicated(keys).any():
                raise ValueError(f"Evidence.{name} has more than one row per {tuple(keys)}")


# --------------------------------------------------------------------------------------------------------
# gates


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
        f"({_interval(v)}): there is no sink to move"
    )
    return replace(v, word=NOT_TESTABLE, why=why, rule=GATE)


def judged(verdict: Verdict, *gates: Verdict | None) -> Verdict:
    """``verdict``, unless a gate failed: then "not testable here" with every failed gate's reason (the
    first failed gate's evidence)."""
    failed = [g for g in gates if g is not None]
    if not failed:
        return verdict
    return gated(replace(failed[0], why="; ".join(g.why for g in failed)), verdict)


# --------------------------------------------------------------------------------------------------------
# verdict functions


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


def sweep_trend(ratios: Sequence[float], by_seed: Mapping[Hashable, Sequence[float]], side: Side) -> Verdict:
    """The hypothesis "the value moves ``side`` as eta_QK / eta_OV doubles": ``slope_rule`` with x = log2 of
    each ratio, one slope per seed (not testable with fewer than ``MIN_RATIOS`` ratios, nor when no seed's
    value changes over the ratios: a floor or ceiling gives slopes of exactly 0, no spread)."""
    return slope_rule([math.log2(r) for r in ratios], by_seed, side, min_points=MIN_RATIOS)


# --------------------------------------------------------------------------------------------------------
# evidence by name


def _by_seed(frame: pd.DataFrame, column: str, **where: object) -> dict[Hashable, float]:
    """{seed: ``column``} of the rows of ``frame`` matching ``where`` (column == value); one row per seed."""
    rows = frame
    for key, value in where.items():
        rows = rows[rows[key] == value]
    if rows["seed"].duplicated().any():
        raise ValueError(f"more than one row per seed for {where}")
    return {int(s): float(v) for s, v in zip(rows["seed"], rows[column], strict=True)}


def _values(values: pd.DataFrame, kind: str, column: str, ratio: float = 1.0, state: str = "trained"):
    return _by_seed(values, column, kind=kind, ratio=ratio, state=state)


def _interval(v: Verdict) -> str:
    if not math.isfinite(v.estimate):
        return f"no estimate ({v.why}), {v.n} seeds"
    if not (math.isfinite(v.low) and math.isfinite(v.high)):
        return f"{v.estimate:+.3f}, no interval ({v.why}), {v.n} seeds"
    return f"{v.estimate:+.3f} [{v.low:+.3f}, {v.high:+.3f}], {v.n} seeds"


def _ours(v: Verdict, what: str) -> str:
    """The "ours" column: what was measured, the mean and 95% interval over seeds (no verdict words)."""
    return f"{what}: {_interval(v)}"


def _learned_gate(losses: pd.DataFrame, kinds: Sequence[str], ratios: Sequence[float] = (1.0,)):
    rows = losses[losses["kind"].isin(kinds) & losses["ratio"].isin(ratios)]
    runs = list(zip(rows["kind"], rows["seed"], rows["ratio"], strict=True))
    return learned(dict(zip(runs, rows["initial"], strict=True)), dict(zip(runs, rows["final"], strict=True)))


def claims(exp: SynthesisExperiment, evidence: Evidence) -> list[Claim]:
    """Every hypothesis of the notebook whose kinds were trained, judged from ``evidence``."""
    losses = evidence.losses
    values = exp.values(evidence.lens, losses)
    first = exp.per_seed(evidence.lens, layer=0)
    have = set(exp.kinds)
    out: list[Claim] = []

    def add(fig: str, claim: str, verdict: Verdict, what: str, *gates: Verdict | None) -> None:
        out.append(Claim(fig, claim, OURS, _ours(verdict, what), judged(verdict, *gates)))

    def seeds(kind: str, column: str, data: pd.DataFrame = values, **kw) -> dict[Hashable, float]:
        return _values(data, kind, column, **kw)

    def pair(kind: str, control: str, column: str, **kw) -> tuple[dict, dict]:
        return seeds(kind, column, **kw), seeds(control, column, **kw)

    sink = sink_present(seeds("sa", "first_attention"), seeds("sa", "uniform"))
    if "xsa" in have:
        gate = _learned_gate(losses, ["sa", "xsa"])
        add("similarity bias", "XSA lowers the similarity bias cos(y_i, v_i) relative to SA",
            shift(*pair("xsa", "sa", "cos_yv"), "below"), "XSA - SA, layer mean", gate)  # fmt: skip
        if "xsa-prev" in have:
            add("similarity bias",
                "XSA lowers cos(y_i, v_i) relative to its control, which removes the previous token's value",
                shift(*pair("xsa", "xsa-prev", "cos_yv"), "below"), "XSA - previous-value control",
                _learned_gate(losses, ["xsa", "xsa-prev"]))  # fmt: skip
        add("sinks", "XSA puts less attention on the first token than SA (XSA as an implicit sink)",
            shift(*pair("xsa", "sa", "first_attention"), "below"), "XSA - SA", gate, sink)  # fmt: skip
        add("sinks", "The first token contributes less to XSA's attention output than to SA's",
            shift(*pair("xsa", "sa", "first_contribution"), "below"), "XSA - SA", gate, sink)  # fmt: skip
    for kind in ("sa", "xsa"):
        if kind in have:
            label = "SA" if kind == "sa" else "XSA"
            verdict = shift(seeds(kind, "sink_value_cos"), seeds(kind, "control_value_cos"), "below")
            # a sink's value geometry needs a sink: the kind's own first-token attention above uniform's
            own_sink = sink if kind == "sa" else sink_present(
                seeds(kind, "first_attention"), seeds(kind, "uniform"), label
            )  # fmt: skip
            add("sinks",
                f"In {label}, the first token's projected values point along the others' less than an "
                "ordinary token's do (the contribution-weights sink-value claim, against a control token)",
                verdict, f"{label}: cos with token 0 - cos with the control token",
                _learned_gate(losses, [kind]), own_sink)  # fmt: skip
    for kind in ("sd", "sd-shared"):
        if kind in have:
            add("routing",
                f"{kind}'s heads split their model-space form into routing and filtering differently from "
                "SA's (routing energy share)", differs(*pair(kind, "sa", "routing_energy")),
                f"{kind} - SA, routing share", _learned_gate(losses, ["sa", kind]))  # fmt: skip
    add("routing", "Training moves SA's routing energy share away from its random initialisation",
        differs(seeds("sa", "routing_energy"), seeds("sa", "routing_energy", state="init")),
        "SA trained - SA at init", _learned_gate(losses, ["sa"]))  # fmt: skip
    if "linear" in have:
        add("sharpness",
            "ELU+1 linear attention in the first layer attends less sharply there than SA's softmax does",
            shift(*pair("linear", "sa", "entropy", data=first), "above"),
            "layer 0 normalised entropy, linear - SA", _learned_gate(losses, ["sa", "linear"]))  # fmt: skip
    out += _faithfulness_claims(exp, evidence.faithfulness_areas, losses)
    out += _ratio_claims(exp, values, losses)
    return out


def _faithfulness_claims(exp: SynthesisExperiment, areas: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """The contribution-weights paper's ordering on every kind, with the same single-layer intervention for
    all: zeroing each query's top value terms by contribution weight raises the loss more than zeroing the top
    terms by attention (comprehensiveness, log area, paired by seed); and whether XSA changes that gap (the
    difference of the two kinds' gaps, paired by seed)."""

    def area(kind: str, measure: str) -> dict[Hashable, float]:
        return _by_seed(areas, "area", kind=kind, mode="comprehensiveness", measure=measure)

    out, gaps = [], {}
    for kind in exp.kinds:
        contribution, raw = area(kind, "contribution"), area(kind, "raw")
        gaps[kind] = differences(contribution, raw)
        v = shift(contribution, raw, "above")
        out.append(Claim(
            "faithfulness",
            f"Contribution weights rank {kind}'s value terms more faithfully than attention weights "
            "(comprehensiveness, one layer at a time)",
            "contribution weights: raw attention < contribution weights (delta-PPL curves, four 7-8B LMs)",
            _ours(v, "log area, contribution - attention"), judged(v, _learned_gate(losses, [kind])),
        ))  # fmt: skip
    if "xsa" in gaps:
        v = differs(gaps["xsa"], gaps["sa"])
        out.append(Claim("faithfulness", "XSA changes how much more faithful contribution weights are than "
                         "attention weights", OURS, _ours(v, "XSA's gap - SA's"),
                         judged(v, _learned_gate(losses, ["sa", "xsa"]))))  # fmt: skip
    return out


def _sweep(
    values: pd.DataFrame, kind: str, column: str, ratios: Sequence[float]
) -> dict[Hashable, list[float]]:
    """{seed: [value at each of ``ratios``]}: every seed must have a run at every ratio (paired by name)."""
    by_ratio = {r: _values(values, kind, column, ratio=r) for r in ratios}
    seeds = list(by_ratio[ratios[0]])
    for r, row in by_ratio.items():
        if set(row) != set(seeds):
            raise ValueError(f"{kind} at eta_QK / eta_OV {r:g} has seeds {sorted(row)}, not {sorted(seeds)}")
    return {s: [by_ratio[r][s] for r in ratios] for s in seeds}


def _ratio_claims(exp: SynthesisExperiment, values: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """Faster query-key learning in multi-layer LMs, over the ratios eta_QK / eta_OV trained with their
    geometric mean held at the base rate (``SynthesisExperiment.spec``: QK x sqrt(r), OV / sqrt(r), so a ratio
    does not also leave the tuned rate; QK-speed Fig. 4's ratio r): per kind, the
    trend per doubling of the ratio (``sweep_trend``: one slope on log2 ratio per seed) of the attention
    entropy (QK-speed: faster query-key learning sharpens attention) and of the final loss; and whether XSA
    changes the sharpening (the two kinds' entropy slopes, paired by seed)."""
    ratios = sorted(exp.preset.qk_ratios)
    if len(ratios) < 2:
        return []
    span = ", ".join(f"{r:g}" for r in ratios)
    out, entropy = [], {}
    for kind in [k for k in exp.preset.ratio_kinds if k in exp.kinds]:
        gate = _learned_gate(losses, [kind], ratios)
        for column, what in (("entropy", "sharpens {}'s attention (entropy falls)"),
                             ("val_loss", "lowers {}'s final validation loss")):  # fmt: skip
            by_seed = _sweep(values, kind, column, ratios)
            if column == "entropy":
                entropy[kind] = by_seed
            v = sweep_trend(ratios, by_seed, "below")
            paper = "QK-speed: sharper attention in single-layer circuits" if column == "entropy" else OURS
            unit = "per doubling" if column == "entropy" else "nats/byte per doubling"
            claim = (
                f"Faster query-key learning (eta_QK / eta_OV from {span}, their geometric mean fixed) "
                + (what.format(kind))
            )
            out.append(
                Claim("QK ratio", claim, paper, _ours(v, f"slope on log2 ratio, {unit}"), judged(v, gate))
            )
    if "sa" in entropy and "xsa" in entropy:
        if len(ratios) < MIN_RATIOS:
            why = f"{len(ratios)} distinct ratios; a trend needs {MIN_RATIOS}"
            v = not_testable(why, n=len(entropy["sa"]), null=0.0, rule=SLOPE)
        else:
            v = differs(per_doubling(ratios, entropy["xsa"]), per_doubling(ratios, entropy["sa"]))
        claim = "XSA changes how much faster query-key learning sharpens attention"
        gate = _learned_gate(losses, ["sa", "xsa"], ratios)
        out.append(Claim("QK ratio", claim, OURS, _ours(v, "XSA's entropy slope - SA's"), judged(v, gate)))
    return out
