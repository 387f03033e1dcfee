"""The synthesis notebook's hypotheses (this project's, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), each judged against its control by one rule of :mod:`attnlab.papers.synthesis.rules`: a kind
and its control measured on the same seeds are paired by seed, a trend over the eta_QK / eta_OV sweep is one
slope per seed. Every row rests on trained models (its seeds: unit "trained model").

The evidence arrives by name in one :class:`Evidence` bundle, with the run's settings (its kinds and the
QK/OV sweep) that ``SynthesisExperiment.claims`` fills in; :func:`claims` reads nothing else. Every pairing
is by seed name, never by the position of a row."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import pandas as pd

from attnlab.papers.synthesis.rules import (
    MIN_RATIOS,
    differences,
    differs,
    interval_text,
    judged,
    learned,
    shift,
    sink_present,
    trend,
    trends_differ,
)
from attnlab.runner.claims import Claim
from attnlab.runner.verdicts import Verdict

__all__ = ["MIN_RATIOS", "Evidence", "claims"]

OURS = "none (this project's hypothesis)"
#: What every row rests on: trained models, one per seed.
UNIT = "trained model"
#: The columns of the lens table that identify a row; every other column is a measure.
LENS_KEYS = ("kind", "seed", "ratio", "state", "layer")


@dataclass(frozen=True, eq=False)
class Evidence:
    """Everything the synthesis claims are judged from, by name: the three tables the notebook builds, and
    the run's settings (filled in by ``SynthesisExperiment.claims``).

    ``lens``: ``SynthesisExperiment.lens_table``, one row per (kind, seed, ratio, state, layer) with every
    lens; ``losses``: ``SynthesisExperiment.losses``, one row per run (kind, seed, ratio, initial, final
    validation loss); ``faithfulness_areas``: ``SynthesisExperiment.faithfulness_areas``, one row per (kind,
    seed, mode, measure) with its log ``area``; ``kinds``: the kinds trained; ``qk_ratios``: the eta_QK /
    eta_OV ratios of the sweep; ``ratio_kinds``: the kinds trained at each of them."""

    lens: pd.DataFrame
    losses: pd.DataFrame
    faithfulness_areas: pd.DataFrame
    kinds: tuple[str, ...] = ()
    qk_ratios: tuple[float, ...] = ()
    ratio_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, keys, extra in (
            ("lens", list(LENS_KEYS), ["uniform", "control_value_cos"]),
            ("losses", ["kind", "seed", "ratio"], ["initial", "final"]),
            ("faithfulness_areas", ["kind", "seed", "mode", "measure"], ["area"]),
        ):
            frame = getattr(self, name)
            missing = [c for c in keys + extra if c not in frame.columns]
            if missing:
                raise ValueError(f"Evidence.{name} lacks the columns {missing}")
            if frame.duplicated(keys).any():
                raise ValueError(f"Evidence.{name} has more than one row per {tuple(keys)}")


def per_seed(lens: pd.DataFrame, layer: int | None = None) -> pd.DataFrame:
    """One value per (kind, seed, ratio, state) and measure: the mean over layers (layers without the
    measure, e.g. linear layers' forms, left out), or one ``layer`` (as ``SynthesisExperiment.per_seed``)."""
    data = lens if layer is None else lens[lens["layer"] == layer]
    measures = [c for c in lens.columns if c not in LENS_KEYS]
    return data.groupby(list(LENS_KEYS[:-1]))[measures].mean().reset_index()


def seed_values(lens: pd.DataFrame, losses: pd.DataFrame) -> pd.DataFrame:
    """:func:`per_seed` (layer means) with each run's final validation loss as ``val_loss`` (NaN for the
    initialisations; as ``SynthesisExperiment.values``)."""
    final = losses.rename(columns={"final": "val_loss"})[["kind", "seed", "ratio", "val_loss"]]
    out = per_seed(lens).merge(final, on=["kind", "seed", "ratio"], how="left")
    out.loc[out["state"] == "init", "val_loss"] = float("nan")
    return out


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


def _ours(v: Verdict, what: str) -> str:
    """The "ours" column: what was measured, the mean and 95% interval over seeds (no verdict words)."""
    return f"{what}: {interval_text(v)}"


def _learned_gate(losses: pd.DataFrame, kinds: Sequence[str], ratios: Sequence[float] = (1.0,)):
    rows = losses[losses["kind"].isin(kinds) & losses["ratio"].isin(ratios)]
    runs = list(zip(rows["kind"], rows["seed"], rows["ratio"], strict=True))
    return learned(dict(zip(runs, rows["initial"], strict=True)), dict(zip(runs, rows["final"], strict=True)))


def claims(evidence: Evidence) -> list[Claim]:
    """Every hypothesis of the notebook whose kinds were trained, judged from ``evidence`` alone."""
    losses = evidence.losses
    values = seed_values(evidence.lens, losses)
    first = per_seed(evidence.lens, layer=0)
    have = set(evidence.kinds)
    out: list[Claim] = []

    def add(fig: str, claim: str, verdict: Verdict, what: str, *gates: Verdict | None) -> None:
        out.append(Claim(fig, claim, OURS, _ours(verdict, what), judged(verdict, *gates), unit=UNIT))

    def seeds(kind: str, column: str, data: pd.DataFrame = values, **kw) -> dict[Hashable, float]:
        return _values(data, kind, column, **kw)

    def pair(kind: str, control: str, column: str, **kw) -> tuple[dict, dict]:
        return seeds(kind, column, **kw), seeds(control, column, **kw)

    sink = sink_present(seeds("sa", "first_attention"), seeds("sa", "uniform"))
    if "xsa" in have:
        gate = _learned_gate(losses, ["sa", "xsa"])
        # cos(y_i, v_i) of the attention mixture y_i = sum_j a_ij v_j, before XSA's projection removes v_i
        # (after it, XSA's output is orthogonal to v_i by construction: the XSA table's Alg. 1 row)
        add("similarity bias", MIXTURE_VS_SA, shift(*pair("xsa", "sa", "cos_yv"), "below"),
            "XSA - SA, cos(y_i, v_i) of the mixture before the projection, layer mean", gate)  # fmt: skip
        if "xsa-prev" in have:
            add("similarity bias", MIXTURE_VS_CONTROL, shift(*pair("xsa", "xsa-prev", "cos_yv"), "below"),
                "XSA - previous-value control, cos(y_i, v_i) of the mixtures before the projections",
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
    out += _faithfulness_claims(evidence.kinds, evidence.faithfulness_areas, losses)
    out += _ratio_claims(evidence, values, losses)
    return out


#: The similarity-bias rows judge cos(y_i, v_i) of the attention mixture y_i = sum_j a_ij v_j, which for XSA
#: is the vector before its projection removes v_i; after the projection XSA's output is orthogonal to v_i by
#: construction (the XSA table's Alg. 1 row), so these rows ask whether XSA also changes what attention mixes.
MIXTURE_VS_SA = (
    "Before XSA's projection, its attention mixture y_i = sum_j a_ij v_j is less aligned with the token's "
    "own value than SA's (cos(y_i, v_i); after the projection XSA's output is orthogonal to v_i by "
    "construction)"
)
MIXTURE_VS_CONTROL = (
    "Before their projections, XSA's attention mixture y_i is less aligned with the token's own value than "
    "that of its control, which removes the previous token's value (cos(y_i, v_i) of the mixtures)"
)


def _faithfulness_claims(kinds: Sequence[str], areas: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """The contribution-weights paper's ordering on every kind, with the same single-layer intervention for
    all: zeroing each query's top value terms by contribution weight raises the loss more than zeroing the top
    terms by attention (comprehensiveness, log area, paired by seed); and whether XSA changes that gap (the
    difference of the two kinds' gaps, paired by seed)."""

    def area(kind: str, measure: str) -> dict[Hashable, float]:
        return _by_seed(areas, "area", kind=kind, mode="comprehensiveness", measure=measure)

    out, gaps = [], {}
    for kind in kinds:
        contribution, raw = area(kind, "contribution"), area(kind, "raw")
        gaps[kind] = differences(contribution, raw)
        v = shift(contribution, raw, "above")
        out.append(Claim(
            "faithfulness",
            f"Contribution weights rank {kind}'s value terms more faithfully than attention weights "
            "(comprehensiveness, one layer at a time)",
            "contribution weights: raw attention < contribution weights (delta-PPL curves, four 7-8B LMs)",
            _ours(v, "log area, contribution - attention"), judged(v, _learned_gate(losses, [kind])),
            unit=UNIT,
        ))  # fmt: skip
    if "xsa" in gaps:
        v = differs(gaps["xsa"], gaps["sa"])
        out.append(Claim("faithfulness", "XSA changes how much more faithful contribution weights are than "
                         "attention weights", OURS, _ours(v, "XSA's gap - SA's"),
                         judged(v, _learned_gate(losses, ["sa", "xsa"])), unit=UNIT))  # fmt: skip
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


def _ratio_claims(evidence: Evidence, values: pd.DataFrame, losses: pd.DataFrame) -> list[Claim]:
    """Faster query-key learning in multi-layer LMs, over the ratios eta_QK / eta_OV trained with their
    geometric mean held at the base rate (``SynthesisExperiment.spec``: QK x sqrt(r), OV / sqrt(r), so a ratio
    does not also leave the tuned rate; QK-speed Fig. 4's ratio r): per kind, the trend per doubling of the
    ratio (``rules.trend``: one slope on log2 ratio per seed) of the attention entropy (QK-speed: faster
    query-key learning sharpens attention) and of the final loss; and whether XSA changes the sharpening (the
    two kinds' entropy slopes, paired by seed). The gate asks that the kind learned at ratio 1, its tuned
    base condition; the runs at the other ratios are the claim's evidence, so a run there that learned
    nothing counts against it (a diverged one leaves its trend not testable), never sets the row aside."""
    ratios = sorted(evidence.qk_ratios)
    if len(ratios) < 2:
        return []
    span = ", ".join(f"{r:g}" for r in ratios)
    out, entropy = [], {}
    for kind in [k for k in evidence.ratio_kinds if k in evidence.kinds]:
        gate = _learned_gate(losses, [kind])
        for column, what in (("entropy", "sharpens {}'s attention (entropy falls)"),
                             ("val_loss", "lowers {}'s final validation loss")):  # fmt: skip
            by_seed = _sweep(values, kind, column, ratios)
            if column == "entropy":
                entropy[kind] = by_seed
            v = trend(ratios, by_seed, "below")
            paper = "QK-speed: sharper attention in single-layer circuits" if column == "entropy" else OURS
            unit = "per doubling" if column == "entropy" else "nats/byte per doubling"
            claim = (
                f"Faster query-key learning (eta_QK / eta_OV from {span}, their geometric mean fixed) "
                + (what.format(kind))
            )
            out.append(Claim("QK ratio", claim, paper, _ours(v, f"slope on log2 ratio, {unit}"),
                             judged(v, gate), unit=UNIT))  # fmt: skip
    if "sa" in entropy and "xsa" in entropy:
        v = trends_differ(ratios, entropy["xsa"], entropy["sa"])
        claim = "XSA changes how much faster query-key learning sharpens attention"
        gate = _learned_gate(losses, ["sa", "xsa"])
        out.append(Claim("QK ratio", claim, OURS, _ours(v, "XSA's entropy slope - SA's"), judged(v, gate),
                         unit=UNIT))  # fmt: skip
    return out
