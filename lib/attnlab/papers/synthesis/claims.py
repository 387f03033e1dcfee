"""The synthesis notebook's hypotheses (this project's, not a paper's; docs/papers/synthesis.md,
"Hypotheses"), each judged against its control by one rule of :mod:`attnlab.papers.synthesis.rules`: a kind
and its control measured on the same seeds are paired by seed, a trend over the eta_QK / eta_OV sweep is one
slope per seed. Every row on this project's models rests on trained models (its seeds: unit "trained model").
The same lenses on pretrained causal LMs (:func:`pretrained_rows`) count the layers of one fixed model (unit
"layer"), each layer paired with its null on the same layer, and "in every pretrained model" the models (unit
"pretrained model").

The evidence arrives by name in one :class:`Evidence` bundle, with the run's settings (its kinds and the
QK/OV sweep) that ``SynthesisExperiment.claims`` fills in; :func:`claims` reads nothing else. Every pairing
is by seed or layer name, never by the position of a row."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from attnlab.papers.synthesis.rules import (
    MIN_RATIOS,
    beyond_nulls,
    beyond_random_weights,
    differences,
    differs,
    in_every_model,
    interval_text,
    judged,
    learned,
    null_margins,
    random_weight_parts,
    shift,
    sink_present,
    trend,
    trends_differ,
)
from attnlab.runner.claims import Claim
from attnlab.runner.verdicts import Side, Verdict

__all__ = ["MIN_RATIOS", "Evidence", "claims"]

OURS = "none (this project's hypothesis)"
#: What every row rests on: trained models, one per seed.
UNIT = "trained model"
#: The columns of the lens table that identify a row; every other column is a measure.
LENS_KEYS = ("kind", "seed", "ratio", "state", "layer")


@dataclass(frozen=True, eq=False)
class Evidence:
    """Everything the synthesis claims are judged from, by name: the three tables the notebook builds, and
    the run's settings (filled in by ``SynthesisExperiment.claims``), and the lenses on pretrained models.

    ``lens``: ``SynthesisExperiment.lens_table``, one row per (kind, seed, ratio, state, layer) with every
    lens; ``losses``: ``SynthesisExperiment.losses``, one row per run (kind, seed, ratio, initial, final
    validation loss); ``faithfulness_areas``: ``SynthesisExperiment.faithfulness_areas``, one row per (kind,
    seed, mode, measure) with its log ``area``; ``kinds``: the kinds trained; ``qk_ratios``: the eta_QK /
    eta_OV ratios of the sweep; ``ratio_kinds``: the kinds trained at each of them; ``pretrained``:
    ``attnlab.papers.synthesis.pretrained.measure``'s results, {model: {"description", "windows", "layers"
    (one row per layer, :data:`PRETRAINED_COLUMNS`), "null" (one row per draw of a layer of Gaussian weights
    of the model's layer shape, :data:`NULL_COLUMNS`)}}, empty when no pretrained model was measured."""

    lens: pd.DataFrame
    losses: pd.DataFrame
    faithfulness_areas: pd.DataFrame
    kinds: tuple[str, ...] = ()
    qk_ratios: tuple[float, ...] = ()
    ratio_kinds: tuple[str, ...] = ()
    pretrained: Mapping[str, Mapping] = field(default_factory=dict)

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
        for model, result in self.pretrained.items():
            for name, keys, columns in (("layers", ["layer"], PRETRAINED_COLUMNS),
                                        ("null", ["draw"], NULL_COLUMNS)):  # fmt: skip
                frame = result[name]
                missing = [c for c in [*keys, *columns] if c not in frame.columns]
                if missing:
                    raise ValueError(f"Evidence.pretrained[{model!r}][{name!r}] lacks the columns {missing}")
                if frame.duplicated(keys).any():
                    raise ValueError(f"Evidence.pretrained[{model!r}][{name!r}] has more than one row per "
                                     f"{tuple(keys)}")  # fmt: skip


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
    out += pretrained_rows(evidence.pretrained)
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


# --------------------------------------------------------------------------------------------------------
# pretrained causal LMs (attnlab.papers.synthesis.pretrained)

#: The per-layer columns of a pretrained model's ``layers`` frame that the rows read
#: (``attnlab.papers.synthesis.pretrained.COLUMNS`` says what each is).
PRETRAINED_COLUMNS = (
    "cos_yv", "cos_uniform", "cos_shuffled", "cos_yv_nosink", "cos_uniform_nosink", "cos_shuffled_nosink",
    "a_sink", "a_uniform", "first_attention", "first_contribution", "routing_energy", "effective_rank",
)  # fmt: skip
#: How the rows' "ours" names each column.
PRETRAINED_LABELS = {
    "cos_yv": "cos(y_i, v_i)", "cos_yv_nosink": "cos(y_i - a_i0 v_0, v_i)", "a_sink": "attention on token 0",
    "first_contribution": "contribution weight of token 0", "routing_energy": "routing energy share",
    "effective_rank": "entropy effective rank",
}  # fmt: skip
#: The per-draw columns of its ``null`` frame: the weight statistics of one layer of Gaussian weights.
NULL_COLUMNS = ("routing_energy", "effective_rank")

XSA_FIG1 = "XSA Fig. 1: cos(y_i, v_i) ~0.2-0.6 across layers (their 1.3B model)"
#: Each pretrained claim: its id -> (figure, claim with ``{where}``, the paper's claim).
PRETRAINED_CLAIMS = {
    "bias": (
        "similarity bias (pretrained)",
        "{where}, SA's head output y_i is aligned with the token's own value v_i beyond uniform causal "
        "mixing and beyond the same attention weights with the non-sink keys shuffled (cos(y_i, v_i), "
        "the first token's term included)",
        XSA_FIG1,
    ),
    "bias_nosink": (
        "similarity bias (pretrained)",
        "{where}, SA's head output y_i is aligned with the token's own value v_i beyond uniform mixing and "
        "beyond shuffled non-sink keys once the first token's term a_i0 v_0 is removed from y_i and from "
        "both nulls",
        XSA_FIG1,
    ),
    "sink": (
        "sinks (pretrained)",
        "{where}, SA puts more attention on the first token than uniform causal attention does (a "
        "first-token sink)",
        "contribution weights Fig. 1: the first token draws a large attention mass",
    ),
    "contribution": (
        "sinks (pretrained)",
        "{where}, the first token contributes less to the head output than its attention says "
        "(contribution weight c_i0 below attention a_i0)",
        "contribution weights Fig. 1: the first token contributes little to the output",
    ),
    "routing": (
        "routing (pretrained)",
        "{where}, the heads' query-key forms W_Q^T W_K put less of their energy in routing (the "
        "antisymmetric part) than Gaussian weights of the same shapes",
        "S-D: in pretrained models filtering holds most of the energy",
    ),
    "rank": (
        "effective rank (pretrained)",
        "{where}, the heads' query-key forms W_Q^T W_K have a lower entropy effective rank than Gaussian "
        "weights of the same shapes",
        OURS,
    ),
}
#: The nulls each forward claim is judged against, paired by layer: id -> (column, side, {null: column}).
PRETRAINED_NULLS: dict[str, tuple[str, Side, dict[str, str]]] = {
    "bias": ("cos_yv", "above", {"uniform mixing": "cos_uniform", "shuffled keys": "cos_shuffled"}),
    "bias_nosink": ("cos_yv_nosink", "above",
                    {"uniform mixing": "cos_uniform_nosink", "shuffled keys": "cos_shuffled_nosink"}),
    "sink": ("a_sink", "above", {"uniform attention": "a_uniform"}),
    "contribution": ("first_contribution", "below", {"its attention": "first_attention"}),
}  # fmt: skip
#: The weight claims, judged against the draws of Gaussian weights: id -> (column, side).
PRETRAINED_WEIGHTS: dict[str, tuple[str, Side]] = {
    "routing": ("routing_energy", "below"),
    "rank": ("effective_rank", "below"),
}


def _by_layer(frame: pd.DataFrame, column: str) -> dict[Hashable, float]:
    return {int(layer): float(v) for layer, v in zip(frame["layer"], frame[column], strict=True)}


def _draws(null: pd.DataFrame, column: str) -> list[float]:
    return [float(v) for v in null[column]]


def pretrained_parts(result: Mapping, which: str) -> dict[str, Verdict]:
    """The parts of pretrained claim ``which`` on one model's ``result`` (its per-layer ``layers`` and its
    ``null`` draws), each judged with the layers as units (:func:`rules.null_margins`,
    :func:`rules.random_weight_parts`)."""
    layers = result["layers"]
    if which in PRETRAINED_WEIGHTS:
        column, side = PRETRAINED_WEIGHTS[which]
        return random_weight_parts(_by_layer(layers, column), _draws(result["null"], column), side)
    column, side, nulls = PRETRAINED_NULLS[which]
    return null_margins(_by_layer(layers, column), {n: _by_layer(layers, c) for n, c in nulls.items()}, side)


def pretrained_verdict(result: Mapping, which: str) -> Verdict:
    """Pretrained claim ``which`` on one model: :func:`rules.beyond_nulls` or
    :func:`rules.beyond_random_weights` (``all_of`` its :func:`pretrained_parts`)."""
    layers = result["layers"]
    if which in PRETRAINED_WEIGHTS:
        column, side = PRETRAINED_WEIGHTS[which]
        return beyond_random_weights(_by_layer(layers, column), _draws(result["null"], column), side)
    column, side, nulls = PRETRAINED_NULLS[which]
    return beyond_nulls(_by_layer(layers, column), {n: _by_layer(layers, c) for n, c in nulls.items()}, side)


def _pretrained_ours(result: Mapping, which: str) -> str:
    """What was measured on one model, with each part's estimate and 95% interval over the layers."""
    layers = result["layers"]
    where = f"[{result.get('description', '')}; {len(layers)} layers, {result.get('windows', '?')} windows]"
    parts = pretrained_parts(result, which)
    if which in PRETRAINED_WEIGHTS:
        column, _ = PRETRAINED_WEIGHTS[which]
        draws = result["null"][column]
        layered, ranked = parts["the layers"], parts["the median layer among the draws"]
        label = PRETRAINED_LABELS[column]
        return (
            f"{where} {label}: layer mean {layers[column].mean():.3f}, median layer {ranked.estimate:.3f}; "
            f"{len(draws)} draws of a layer of Gaussian weights of the same shape: mean {draws.mean():.3f}, "
            f"central 95% [{ranked.low:.3f}, {ranked.high:.3f}]; each layer - the mean of its own block of "
            f"draws: {interval_text(layered, 'layers')}"
        )
    column, _, nulls = PRETRAINED_NULLS[which]
    values = "; ".join(f"{name} {layers[c].mean():.3f}" for name, c in nulls.items())
    margins = "; ".join(f"over {name} {interval_text(v, 'layers')}" for name, v in parts.items())
    label = PRETRAINED_LABELS[column]
    return f"{where} {label} layer mean {layers[column].mean():.3f}; {values}; paired by layer: {margins}"


def pretrained_rows(results: Mapping[str, Mapping]) -> list[Claim]:
    """The synthesis lenses on each pretrained model (unit "layer": a fixed model's layers, each paired with
    its null on the same layer), then, with two models or more, each claim in every pretrained model
    (:func:`rules.in_every_model`, unit "pretrained model")."""
    rows = []
    for model, result in results.items():
        for which, (figure, claim, paper) in PRETRAINED_CLAIMS.items():
            ours = _pretrained_ours(result, which)
            rows.append(Claim(figure, claim.format(where=f"In {model}"), paper, ours,
                              pretrained_verdict(result, which), unit="layer"))  # fmt: skip
    if len(results) < 2:
        return rows
    for which, (figure, claim, paper) in PRETRAINED_CLAIMS.items():
        by_model = {model: pretrained_verdict(result, which) for model, result in results.items()}
        each = "; ".join(f"{model} {interval_text(v, 'layers')}" for model, v in by_model.items())
        rows.append(Claim(figure, claim.format(where="In every pretrained model"), paper,
                          f"the shown part per model: {each}", in_every_model(by_model),
                          unit="pretrained model"))  # fmt: skip
    return rows
