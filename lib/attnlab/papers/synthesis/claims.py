"""The synthesis notebook's hypotheses (this project's, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), each judged by a named verdict function against its control: paired differences over seeds
(same seed, same data order, same initialisation) whose 95% interval must exclude zero
(``attnlab.runner.verdicts``), after gates that make a claim "not testable here" when the models learned
nothing or there is no sink to move."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from attnlab.runner.claims import Claim
from attnlab.runner.verdicts import HOLDS, INCONCLUSIVE, NOT_TESTABLE, Side, Verdict, interval_excludes

if TYPE_CHECKING:
    from attnlab.papers.synthesis.experiment import SynthesisExperiment

OURS = "none (this project's hypothesis)"


def learned(initial: Sequence[float], final: Sequence[float]) -> str | None:
    """The gate before any claim about what models learned: None when every run's final validation loss is
    below its loss at initialisation, else the reason the claim is not testable."""
    if len(initial) != len(final) or not len(final):
        raise ValueError("initial and final losses must be non-empty and paired")
    stuck = sum(not f < i for i, f in zip(initial, final, strict=True))  # a NaN (diverged) loss is stuck
    return f"{stuck} of {len(final)} runs did not lower their validation loss" if stuck else None


def sink_present(first_attention: Sequence[float], uniform: Sequence[float]) -> str | None:
    """The gate before a claim that a kind moves the first-token sink: None when SA's attention on the first
    token (one value per seed) is above uniform causal attention's, its paired 95% interval excluding zero;
    else the reason (no sink to move)."""
    diffs = [a - u for a, u in zip(first_attention, uniform, strict=True)]
    if interval_excludes(diffs, "above").word == HOLDS:
        return None
    return "SA's attention on the first token is not above uniform attention's: there is no sink to move"


def _gated(verdict: Verdict, gates: Sequence[str | None]) -> Verdict:
    reasons = [g for g in gates if g]
    return replace(verdict, word=NOT_TESTABLE, why="; ".join(reasons)) if reasons else verdict


def shift(diffs: Sequence[float], side: Side, gates: Sequence[str | None] = ()) -> Verdict:
    """The hypothesis "the kind's value lies ``side`` its control's", from paired differences kind minus
    control per seed: ``interval_excludes`` (holds only when the 95% interval lies on that side), or not
    testable when a gate (``learned``, ``sink_present``) gives a reason; the evidence is kept either way."""
    return _gated(interval_excludes(diffs, side), gates)


def differs(diffs: Sequence[float], gates: Sequence[str | None] = ()) -> Verdict:
    """The hypothesis "the kind's value differs from its control's" (no direction), from paired differences
    per seed: holds when the 95% interval excludes zero on either side; inconclusive otherwise (an interval
    around zero cannot show equality); not testable when a gate gives a reason."""
    side: Side = "above" if sum(diffs) / max(len(diffs), 1) > 0 else "below"
    verdict = interval_excludes(diffs, side)
    if verdict.word != HOLDS and verdict.word != INCONCLUSIVE:
        verdict = replace(verdict, word=INCONCLUSIVE, why="the 95% interval contains zero")
    return _gated(verdict, gates)


# --------------------------------------------------------------------------------------------------------
# the notebook's hypotheses


def _seed_values(values: pd.DataFrame, kind: str, column: str, ratio: float = 1.0, state: str = "trained"):
    rows = values[(values["kind"] == kind) & (values["ratio"] == ratio) & (values["state"] == state)]
    return dict(zip(rows["seed"], rows[column], strict=True))


def _paired(a: dict, b: dict) -> list[float]:
    return [float(a[s] - b[s]) for s in sorted(set(a) & set(b))]


def _ours(v: Verdict, what: str) -> str:
    return f"{what}: {v.estimate:+.3f} [{v.low:+.3f}, {v.high:+.3f}], {v.n} seeds"


def _gate(losses: pd.DataFrame, kinds: Sequence[str], ratios: Sequence[float] = (1.0,)) -> str | None:
    rows = losses[losses["kind"].isin(kinds) & losses["ratio"].isin(ratios)]
    return learned(rows["initial"].tolist(), rows["final"].tolist())


def log_slope(by_ratio: dict[float, float]) -> float:
    """The least-squares slope of a value against log2 of the ratio eta_QK / eta_OV, from {ratio: value} (two
    ratios or more): the change per doubling of the query-key learning rate relative to the others'."""
    if len(by_ratio) < 2:
        raise ValueError(f"a slope needs values at two ratios or more, got {by_ratio}")
    x = np.log2(np.array(list(by_ratio), dtype=float))
    y = np.array(list(by_ratio.values()), dtype=float)
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def claims(
    exp: SynthesisExperiment, lens: pd.DataFrame, losses: pd.DataFrame, faithfulness: pd.DataFrame
) -> list[Claim]:
    """Every hypothesis of the notebook whose kinds were trained, judged from ``lens``
    (``SynthesisExperiment.lens_table``), ``losses`` (``SynthesisExperiment.losses``) and ``faithfulness``
    (``SynthesisExperiment.faithfulness_areas``)."""
    values = exp.values(lens, losses)
    first = exp.per_seed(lens, layer=0)
    have = set(exp.kinds)
    out: list[Claim] = []

    def add(fig: str, claim: str, verdict: Verdict, what: str) -> None:
        out.append(Claim(fig, claim, OURS, _ours(verdict, what), verdict))

    def pair(kind: str, control: str, column: str, data: pd.DataFrame = values, **kw) -> list[float]:
        return _paired(_seed_values(data, kind, column, **kw), _seed_values(data, control, column, **kw))

    sa = _seed_values(values, "sa", "first_attention")
    sink = sink_present(list(sa.values()), list(_seed_values(values, "sa", "uniform").values()))
    if "xsa" in have:
        gate = _gate(losses, ["sa", "xsa"])
        verdict = shift(pair("xsa", "sa", "cos_yv"), "below", [gate])
        add("similarity bias", "XSA lowers the similarity bias cos(y_i, v_i) relative to SA", verdict,
            "XSA - SA, layer mean")  # fmt: skip
        if "xsa-prev" in have:
            verdict = shift(pair("xsa", "xsa-prev", "cos_yv"), "below", [_gate(losses, ["xsa", "xsa-prev"])])
            add("similarity bias",
                "XSA lowers cos(y_i, v_i) relative to its control, which removes the previous token's value",
                verdict, "XSA - previous-value control")  # fmt: skip
        verdict = shift(pair("xsa", "sa", "first_attention"), "below", [gate, sink])
        add("sinks", "XSA puts less attention on the first token than SA (XSA as an implicit sink)", verdict,
            "XSA - SA")  # fmt: skip
        verdict = shift(pair("xsa", "sa", "first_contribution"), "below", [gate, sink])
        add("sinks", "The first token contributes less to XSA's attention output than to SA's", verdict,
            "XSA - SA")  # fmt: skip
    for kind in ("sa", "xsa"):
        if kind in have:
            label = "SA" if kind == "sa" else "XSA"
            diffs = _paired(_seed_values(values, kind, "sink_value_cos"),
                            _seed_values(values, kind, "control_value_cos"))  # fmt: skip
            add("sinks",
                f"In {label}, the first token's projected values point along the others' less than an "
                "ordinary token's do (the contribution-weights sink-value claim, against a control token)",
                shift(diffs, "below", [_gate(losses, [kind])]),
                f"{label}: cos with token 0 - cos with the control token")  # fmt: skip
    for kind in ("sd", "sd-shared"):
        if kind in have:
            verdict = differs(pair(kind, "sa", "routing_energy"), [_gate(losses, ["sa", kind])])
            add("routing",
                f"{kind}'s heads split their model-space form into routing and filtering differently from "
                "SA's (routing energy share)", verdict, f"{kind} - SA, routing share")  # fmt: skip
    diffs = _paired(_seed_values(values, "sa", "routing_energy"),
                    _seed_values(values, "sa", "routing_energy", state="init"))  # fmt: skip
    add("routing", "Training moves SA's routing energy share away from its random initialisation",
        differs(diffs, [_gate(losses, ["sa"])]), "SA trained - SA at init")  # fmt: skip
    if "linear" in have:
        verdict = shift(
            pair("linear", "sa", "entropy", data=first), "above", [_gate(losses, ["sa", "linear"])]
        )
        add("sharpness",
            "ELU+1 linear attention in the first layer attends less sharply there than SA's softmax does",
            verdict, "layer 0 normalised entropy, linear - SA")  # fmt: skip
    out += _faithfulness_claims(exp, faithfulness, losses)
    out += _ratio_claims(exp, values, losses)
    return out


def _faithfulness_claims(exp: SynthesisExperiment, areas: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """The contribution-weights paper's ordering on every kind, with the same single-layer intervention for
    all: zeroing each query's top value terms by contribution weight raises the loss more than zeroing the top
    terms by attention (comprehensiveness, log area, paired per seed); and whether XSA changes that gap."""
    comp = areas[areas["mode"] == "comprehensiveness"]

    def gap(kind: str) -> dict:
        rows = comp[comp["kind"] == kind].pivot_table(index="seed", columns="measure", values="area")
        return (rows["contribution"] - rows["raw"]).to_dict()

    out, gaps = [], {}
    for kind in exp.kinds:
        gaps[kind] = gap(kind)
        v = shift(list(gaps[kind].values()), "above", [_gate(losses, [kind])])
        out.append(Claim(
            "faithfulness",
            f"Contribution weights rank {kind}'s value terms more faithfully than attention weights "
            "(comprehensiveness, one layer at a time)",
            "contribution weights: raw attention < contribution weights (delta-PPL curves, four 7-8B LMs)",
            _ours(v, "log area, contribution - attention"), v,
        ))  # fmt: skip
    if "xsa" in gaps:
        v = differs(_paired(gaps["xsa"], gaps["sa"]), [_gate(losses, ["sa", "xsa"])])
        out.append(Claim("faithfulness", "XSA changes how much more faithful contribution weights are than "
                         "attention weights", OURS, _ours(v, "XSA's gap - SA's"), v))  # fmt: skip
    return out


def _ratio_claims(exp: SynthesisExperiment, values: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """Faster query-key learning in multi-layer LMs, over the ratios eta_QK / eta_OV trained: per kind, the
    slope per doubling of the ratio (``log_slope``, one per seed) of the attention entropy (QK-speed: faster
    query-key learning sharpens attention) and of the final loss; and whether XSA changes the sharpening."""
    ratios = sorted(exp.preset.qk_ratios)
    if len(ratios) < 2:
        return []
    span = ", ".join(f"{r:g}" for r in ratios)
    out, slopes = [], {}
    for kind in [k for k in exp.preset.ratio_kinds if k in exp.kinds]:
        gate = _gate(losses, [kind], ratios)
        for column, what in (("entropy", "sharpens {}'s attention (entropy falls)"),
                             ("val_loss", "lowers {}'s final validation loss")):  # fmt: skip
            by_seed = {r: _seed_values(values, kind, column, ratio=r) for r in ratios}
            seeds = sorted(set.intersection(*(set(d) for d in by_seed.values())))
            per_seed = [log_slope({r: by_seed[r][s] for r in ratios}) for s in seeds]
            if column == "entropy":
                slopes[kind] = dict(zip(seeds, per_seed, strict=True))
            v = shift(per_seed, "below", [gate])
            paper = "QK-speed: sharper attention in single-layer circuits" if column == "entropy" else OURS
            unit = "per doubling" if column == "entropy" else "nats/byte per doubling"
            claim = f"Faster query-key learning (eta_QK / eta_OV from {span}) " + what.format(kind)
            out.append(Claim("QK ratio", claim, paper, _ours(v, f"slope on log2 ratio, {unit}"), v))
    if "sa" in slopes and "xsa" in slopes:
        v = differs(_paired(slopes["xsa"], slopes["sa"]), [_gate(losses, ["sa", "xsa"], ratios)])
        claim = "XSA changes how much faster query-key learning sharpens attention"
        out.append(Claim("QK ratio", claim, OURS, _ours(v, "XSA's entropy slope - SA's"), v))
    return out
