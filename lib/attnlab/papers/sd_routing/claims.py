"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the paper's claims
judged on this run's measurements, one row each.

:func:`claims` takes the notebook's tables and the run's settings by name (:class:`Evidence`, completed by
``SDExperiment.claims``) and words each row; the verdicts come from the paper's rules (``rules``: numbers in,
a :class:`~attnlab.runner.verdicts.Verdict` out). Every claim is judged against a control the reader can see:
pretrained heads against many draws of Gaussian weights of the same shapes, S-D without LayerNorm against SA
without LayerNorm (paired by size and seed), the cascade against SA's own routing part (random antisymmetric
matrices shown beside), S-D's ordering of the two truncations against SA's under the same (model-space)
truncation. Rows true by construction say "sanity check". Each row names its unit of replication.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from attnlab.papers.sd_routing import rules
from attnlab.papers.sd_routing.presets import (
    LABELS,
    MIN_RANK,
    PAPER_FILTER_TRUNCATION_PPL,
    PAPER_HEADS,
    PAPER_LINEAR,
    PROBE_VARIANTS,
    REALLOC_CONTROLS,
    REALLOCATED,
    SD_VARIANTS,
)
from attnlab.papers.sd_routing.pretrained import FLAGS, NULL_COLUMNS, head_flags
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS, describe, rank_equivalent
from attnlab.papers.sd_routing.rules import ALLOCATION_MARGIN_PCT, tolerated
from attnlab.papers.sd_routing.rules import CATASTROPHIC_PCT as CATASTROPHIC_PCT
from attnlab.papers.sd_routing.rules import CHEAP_PCT as CHEAP_PCT
from attnlab.papers.sd_routing.rules import LINEAR_TOLERANCE_PCT as LINEAR_TOLERANCE_PCT
from attnlab.papers.sd_routing.tables import by_size as _by_size
from attnlab.papers.sd_routing.tables import cascade_parts, depth_margins, in_order
from attnlab.papers.sd_routing.tables import grouped_by_size as _grouped
from attnlab.papers.sd_routing.tables import mean as _mean
from attnlab.papers.sd_routing.wording import means as _means
from attnlab.runner.claims import Claim, signed
from attnlab.runner.verdicts import NOT_TESTABLE, Verdict

SANITY = "sanity check (true by construction): "
SMOKE = "smoke scale judges nothing (tiny models, a few dozen steps, one seed)"
TRAINED = "trained model"  # the unit of every row about this run's models: (size, seed) or seed


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """The notebook's results and the run's settings, by name (keyword arguments only).

    Tables: ``losses``: final validation loss per (size, variant, seed) (``final_losses``); ``heads``: every
    head's routing/filtering statistics beside its random baseline (``head_analysis``); ``cascade`` /
    ``baseline``: per-layer routing measures and their random antisymmetric baseline (``cascade``,
    ``cascade_baseline``); ``trend``: the fraction of layers at minimum rank per (measure, size, variant,
    seed) (``scale_trend``); ``drift``: how far D moved (``drift``); ``collapse``: PPL change of the
    truncations (``collapse``); ``linear``: ELU+1 linearisation (``linearisation``); ``realloc``: the
    head-dim reallocation (``reallocation``); ``draws``: the pretrained claims' null, model-level statistics
    of many models of Gaussian weights of each pretrained model's shapes (``random_draws``: ``model``,
    ``draw`` and ``pretrained.NULL_COLUMNS``); ``offsets``: the RoPE models' heads at the relative offsets
    other than 0 (``pretrained_offsets``: ``model``, ``offset``, ``layer``, ``head`` and the statistics).

    Settings (``SDExperiment.claims`` fills them from the run): ``scale``, ``sizes`` (in order), ``models``
    (pretrained), ``probe`` and ``probe_layers`` (the linearisation size and its layer count),
    ``min_head_dim`` and ``head_dim`` (the reallocation's clamp at the probe size: its smallest and its
    uniform head dim), ``sd_max_real`` (each trained S-D model's largest real part of an eigenvalue of L),
    ``diverged`` (the (size, variant, seed) runs that diverged). ``runs``: the trained models, which only
    ``SDExperiment.claims`` reads, to fill ``sd_max_real`` and ``diverged``."""

    losses: pd.DataFrame
    heads: pd.DataFrame
    cascade: pd.DataFrame
    baseline: pd.DataFrame
    trend: pd.DataFrame
    drift: pd.DataFrame
    collapse: pd.DataFrame
    linear: pd.DataFrame
    realloc: pd.DataFrame
    draws: pd.DataFrame | None = None
    offsets: pd.DataFrame | None = None
    runs: Mapping[tuple[str, str, int], Any] = field(default_factory=dict)
    scale: str = ""
    sizes: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    probe: str = ""
    probe_layers: int = 0
    min_head_dim: int = 0
    head_dim: int = 0
    sd_max_real: tuple[float, ...] = ()
    diverged: tuple[tuple[str, str, int], ...] = ()


def _not_judged(rows: list[Claim]) -> list[Claim]:
    """``rows`` with every verdict "not testable here" at smoke scale (the evidence columns kept)."""
    return [replace(c, verdict=replace(c.verdict, word=NOT_TESTABLE, why=SMOKE)) for c in rows]


def claims(evidence: Evidence) -> list[Claim]:
    """Every claim of docs/papers/sd-routing.md, with a verdict computed from this run's measurements; at
    smoke scale every verdict is "not testable here" (the evidence columns are still filled)."""
    e = evidence
    if not e.scale or e.draws is None:
        raise ValueError(
            "the Evidence lacks the run's settings or random draws: judge it with SDExperiment.claims"
        )
    rows = [
        *_claims_pretrained(e.heads, e.draws, e.models),
        *_claims_offsets(e.offsets, e.draws, e.models),
        *_claims_stability(e),
        *_claims_cascade(e.cascade, e.baseline, e.sizes),
        *_claims_trend(e.trend),
        *_claims_collapse(e.collapse, e.drift),
        *_claims_linear(e.linear, e.probe, e.probe_layers),
        *_claims_realloc(e.realloc, e.min_head_dim, e.head_dim),
        *_claims_allocation_shape(e.cascade, e.sizes),
    ]
    return _not_judged(rows) if e.scale == "smoke" else rows


# Pretrained heads -------------------------------------------------------------------------------------------

#: The four pretrained claims: the head property (``pretrained.head_flags``), the claim, the paper's words.
PRETRAINED_CLAIMS = (
    ("dominant", "filtering dominates the spectral budget of pretrained heads (mean filtering energy beyond "
     "random weights')", "filtering dominates"),
    ("lower", "routing runs at lower rank than filtering (entropy rank)", "routing low rank"),
    ("lower_stable", "routing runs at lower rank than filtering (stable rank)", "routing low rank"),
    ("unstable", "every head is dynamically unstable (an eigenvalue of W with positive real part)",
     "all heads"),
)  # fmt: skip
assert tuple(flag for flag, _, _ in PRETRAINED_CLAIMS) == FLAGS
#: What the pretrained rows read: the heads' forms as each model computes them.
FORMS = "forms as computed (norm and q/k-norm gains folded in; RoPE models at offset 0)"


def _null_of(draws: pd.DataFrame, model: str) -> pd.DataFrame:
    """``model``'s null draws (model-level statistics, ``NULL_COLUMNS``; none: an empty frame)."""
    return (draws[draws["model"] == model] if "model" in draws else draws.iloc[0:0]).reindex(
        columns=list(NULL_COLUMNS)
    )


def _energy_text(mean: float, means: pd.Series) -> str:
    """A model's mean filtering energy beside its null's median, with the effect size."""
    if not len(means):
        return f"mean filtering energy {mean:.3f}"
    z = rules.effect_size(mean, means.tolist())
    return f"mean filtering energy {mean:.3f} (random weights: median {means.median():.3f}; {z:+.1f} SD)"


def _model_rows(heads: pd.DataFrame, draws: pd.DataFrame, model: str) -> dict[str, tuple[Verdict, str]]:
    """One model's verdict and text for each pretrained claim (by property): its trained heads against the
    model-level statistics of many draws of Gaussian weights of the same shapes."""
    trained = head_flags(heads[(heads["model"] == model) & (heads["weights"] == "trained")])
    trained = trained.sort_values(["layer", "head"], kind="stable")  # sums in one order, whatever the table's
    null = _null_of(draws, model)
    n, who = len(trained), describe(model)
    out = {}
    for flag, _, _ in PRETRAINED_CLAIMS:
        k, random = int(trained[flag].sum()), null[flag].astype(float)
        median = f"{100 * random.median():.1f} %" if len(random) else "-"
        text = (f"{who}: {100 * k / max(n, 1):.1f} % of {n} heads (random weights: median {median} of "
                f"{len(random)} draws)")  # fmt: skip
        if flag == "dominant":
            mean = _mean(trained["filtering_energy"].tolist())
            means = null["filtering_energy"].astype(float)
            verdict = rules.verdict_energy_beyond_random(mean, means.tolist())
            text = f"{who}: {_energy_text(mean, means)}; filtering above 1/2 in " + text.split(": ", 1)[1]
        elif flag == "unstable":
            verdict = rules.verdict_every_head_unstable(k, n)
        else:
            verdict = rules.verdict_share_beyond_random(k, n, random.tolist())
        out[flag] = (verdict, text)
    return out


def _present(heads: pd.DataFrame, models: Sequence[str]) -> list[str]:
    """The pretrained ``models`` with trained heads in ``heads``."""
    have = set(heads.loc[heads["weights"] == "trained", "model"])
    return [m for m in models if m in have]


#: Each pretrained claim's unit in one model: the model against its null draws, or its heads counted.
MODEL_UNITS = {"dominant": "pretrained model", "lower": "head", "lower_stable": "head", "unstable": "head"}


def _claims_pretrained(heads: pd.DataFrame, draws: pd.DataFrame, models: Sequence[str]) -> list[Claim]:
    """The four pretrained claims in every model (:func:`rules.every_model`, unit: pretrained model), then,
    with more than one model, each model's own rows (figure "scale: pretrained", unit: ``MODEL_UNITS``)."""
    present = _present(heads, models)
    if not present:
        return []
    each = {m: _model_rows(heads, draws, m) for m in present}
    rows = [
        Claim("pretrained", claim, f"{PAPER_HEADS}: {number}",
              f"{FORMS}; heads with it: " + "; ".join(each[m][flag][1] for m in present),
              rules.every_model({m: each[m][flag][0] for m in present}), unit="pretrained model")
        for flag, claim, number in PRETRAINED_CLAIMS
    ]  # fmt: skip
    if len(present) > 1:
        rows += [row for model_rows in _by_model(each).values() for row in model_rows]
    return rows


def _by_model(each: Mapping[str, Mapping[str, tuple[Verdict, str]]]) -> dict[str, list[Claim]]:
    return {
        m: [Claim("scale: pretrained", claim, f"{PAPER_HEADS}: {number}",
                  f"heads with it: {verdicts[flag][1]}", verdicts[flag][0], unit=MODEL_UNITS[flag])
            for flag, claim, number in PRETRAINED_CLAIMS]
        for m, verdicts in each.items()
    }  # fmt: skip


def pretrained_by_model(
    heads: pd.DataFrame, draws: pd.DataFrame, models: Sequence[str], scale: str
) -> dict[str, list[Claim]]:
    """Each pretrained model's own rows of the four pretrained claims (figure "scale: pretrained", unit:
    ``MODEL_UNITS``), judged by the same rules on that model alone, by model; at smoke scale every verdict is
    "not testable here"."""
    present = _present(heads, models)
    out = _by_model({m: _model_rows(heads, draws, m) for m in present})
    return {m: _not_judged(rows) for m, rows in out.items()} if scale == "smoke" else out


def pretrained_scale_table(
    heads: pd.DataFrame, draws: pd.DataFrame, models: Sequence[str], scale: str
) -> pd.DataFrame:
    """The scale view of :func:`pretrained_by_model`: one row per (claim, model), smallest model first, with
    the model's parameter count (the ``parameters`` column of its heads) and description, and its verdict's
    word, estimate, 95% interval, null and n (``attnlab.runner.scale_figure`` draws it)."""
    sizes = heads.dropna(subset=["parameters"]).groupby("model")["parameters"].first()
    records = [
        {"claim": row.claim, "model": model, "description": describe(model),
         "parameters": int(sizes[model]), "verdict": row.verdict.word, "estimate": row.verdict.estimate,
         "low": row.verdict.low, "high": row.verdict.high, "null": row.verdict.null, "n": row.verdict.n}
        for model, rows in pretrained_by_model(heads, draws, models, scale).items()
        for row in rows
    ]  # fmt: skip
    return pd.DataFrame(records).sort_values(["claim", "parameters"], kind="stable", ignore_index=True)


def _claims_offsets(offsets: pd.DataFrame | None, draws: pd.DataFrame, models: Sequence[str]) -> list[Claim]:
    """ "Filtering dominates" at every relative offset of the RoPE models (figure "pretrained", unit:
    pretrained model): each (model, offset)'s mean filtering energy against the model's null
    (:func:`rules.verdict_at_offsets`). No row without any RoPE model's offsets."""
    if offsets is None or offsets.empty:
        return []
    flagged = head_flags(offsets.sort_values(["model", "offset", "layer", "head"], kind="stable"))
    per = flagged.groupby(["model", "offset"], sort=True)[["filtering_energy", "dominant"]].mean()
    present = [m for m in models if m in per.index.get_level_values("model")]
    means, nulls, text = {}, {}, []
    for model in present:
        null = _null_of(draws, model)
        at = per.loc[model]
        for offset, row in at.iterrows():
            name = f"{model} at {offset}"
            means[name] = float(row["filtering_energy"])
            nulls[name] = null["filtering_energy"].astype(float).tolist()
        shares = ", ".join(f"{o}: {100 * r['dominant']:.0f} %" for o, r in at.iterrows())
        energies = ", ".join(f"{o}: {r['filtering_energy']:.3f}" for o, r in at.iterrows())
        median = f"{null['filtering_energy'].median():.3f}" if len(null) else "-"
        text.append(f"{describe(model)}: mean filtering energy by offset {energies} (random weights: median "
                    f"{median}, the same at every offset); heads above 1/2 {shares}")  # fmt: skip
    offsets_used = sorted(set(per.index.get_level_values("offset")))
    return [
        Claim("pretrained", "filtering dominates at every relative offset of the RoPE models as well (the "
              f"form R(offset) the model applies, offsets {', '.join(map(str, offsets_used))})",
              f"{PAPER_HEADS}: filtering dominates (weight space, no positions)", "; ".join(text),
              rules.verdict_at_offsets(means, nulls), unit="pretrained model")
    ]  # fmt: skip


# Sanity checks and LayerNorm --------------------------------------------------------------------------------


def _claims_stability(e: Evidence) -> list[Claim]:
    eigen = rules.verdict_eigenvalues_stable(list(e.sd_max_real))
    rows = [
        Claim("S-D", SANITY + "every eigenvalue of L = S - D has real part <= 0", "by construction",
              f"largest real part over all heads of the trained S-D models: {eigen.estimate:.2e}", eigen,
              unit=TRAINED),
    ]  # fmt: skip
    shared = e.heads[(e.heads["source"] == "sd-shared") & (e.heads["weights"] == "trained")]
    unstable = int((shared["n_unstable"] > 0).sum())
    rows.append(
        Claim("S-D", SANITY + "with a shared projection no head's model-space form W^T L W is unstable",
              "by construction (our variant)",
              f"unstable heads of the trained shared-projection models: {unstable} of {len(shared)}",
              rules.verdict_no_unstable_heads(unstable, len(shared)), unit="head")
    )  # fmt: skip
    wide = e.losses.pivot_table(index=["size", "seed"], columns="variant", values="loss")
    sd_failed = [k for k in e.diverged if k[1] == "sd-noln"]
    sa_failed = [k for k in e.diverged if k[1] == "sa-noln"]
    if {"sd", "sd-noln", "sa", "sa-noln"} <= set(wide.columns):
        both = wide.dropna(subset=["sd", "sd-noln", "sa", "sa-noln"])
        sd_gaps, sa_gaps = both["sd-noln"] - both["sd"], both["sa-noln"] - both["sa"]
        per_size = both.assign(sd=sd_gaps, sa=sa_gaps).groupby(level="size")[["sd", "sa"]].mean()
        ours = "loss without minus with LayerNorm (nats, seed mean): " + ", ".join(
            f"{s} S-D {signed(r['sd'], 3)}, SA {signed(r['sa'], 3)}" for s, r in per_size.iterrows()
        )
        sd_by, sa_by = sd_gaps.to_dict(), sa_gaps.to_dict()  # keyed by (size, seed)
    else:
        ours, sd_by, sa_by = "no pair of models with and without LayerNorm finished", {}, {}
    if sd_failed or sa_failed:
        ours += f"; diverged: {sd_failed + sa_failed}"
    verdict = rules.verdict_held_in_check(sd_by, sa_by, len(sd_failed), len(sa_failed))
    claim = (
        "S-D attention trains without LayerNorm, which holds standard attention's unstable heads in "
        "check: without it SA degrades, S-D less (control: SA without LayerNorm, paired by size and seed)"
    )
    paper = "trains without LayerNorm; SA's heads held in check by LayerNorm (no number given)"
    rows.append(Claim("S-D", claim, paper, ours, verdict, unit=TRAINED))
    return rows


# Spectral cascade -------------------------------------------------------------------------------------------


def _rank_units(column: str, values: pd.Series) -> pd.Series:
    return values.map(lambda v: rank_equivalent(MEASURE_COLUMNS[column], v))


#: The SA variant whose model-space routing part R is the control of each S-D variant's cascade claims.
CASCADE_CONTROL = {"sd": "sa", "sd-noln": "sa-noln", "sd-shared": "sa"}


def _claims_cascade(cascade: pd.DataFrame, baseline: pd.DataFrame, order: Sequence[str]) -> list[Claim]:
    claims = []
    for column, measure in MEASURE_COLUMNS.items():
        for variant in SD_VARIANTS:
            sub = cascade[cascade["variant"] == variant]
            if sub.empty:
                continue
            control = CASCADE_CONTROL[variant]
            sizes = [s for s in order if s in set(sub["size"])]
            sd = cascade_parts(sub.assign(value=_rank_units(column, sub[column])), sizes)
            ctl = cascade[cascade["variant"] == control]
            sa = cascade_parts(ctl.assign(value=_rank_units(column, ctl[column])), sizes)
            rand = baseline[baseline["variant"] == variant].set_index("size")[column]
            random_units = {s: rank_equivalent(measure, rand[s]) for s in sizes if s in rand.index}
            rand_text = ", ".join(f"{s} {v:.2f}" for s, v in random_units.items())
            label = f"{LABELS[variant]}, {measure}"
            unit = " (as 2 / share)" if measure == "top-plane share" else ""
            vs = f"{LABELS[control]}'s routing part R"
            first, middle = _grouped(sd.first), _grouped(sd.middle)
            claims += [
                Claim(
                    "cascade",
                    f"layer 0's routing converges to one rotation plane, lower than SA's ({label})",
                    "layer 0 effective rank 2, 7M-355M",
                    f"layer 0{unit}: {_means(first)}; {vs}: {_means(_grouped(sa.first))}; random S of the "
                    f"same d: {rand_text}",
                    rules.verdict_band_beyond_sa(
                        "sd_routing.ONE_PLANE", first, random_units, sd.first, sa.first, "one plane"
                    ),
                    unit=TRAINED,
                ),
                Claim(
                    "cascade",
                    f"middle layers route in 2-3 dimensions, fewer than SA's ({label})",
                    "effective rank 2-3",
                    f"middle layers{unit}: {_means(middle) or 'no size has middle layers'}; {vs}: "
                    f"{_means(_grouped(sa.middle)) or '-'}",
                    rules.verdict_band_beyond_sa(
                        "sd_routing.FEW_DIMENSIONS",
                        middle,
                        random_units,
                        sd.middle,
                        sa.middle,
                        "routing in 2-3 dimensions",
                    ),
                    unit=TRAINED,
                ),
                Claim(
                    "cascade",
                    f"the last layers expand, more than SA's ({label})",
                    "10+ planes, bounded by d_head",
                    f"last layer vs layer 0{unit}: "
                    + ", ".join(
                        f"{s} {_mean(_grouped(sd.last)[s]):.2f} vs {_mean(first[s]):.2f}" for s in first
                    )
                    + f"; {vs}: "
                    + ", ".join(
                        f"{s} {_mean(v):.2f} vs {_mean(_grouped(sa.first)[s]):.2f}"
                        for s, v in _grouped(sa.last).items()
                    ),
                    rules.verdict_beyond_sa(
                        rules.verdict_last_layers_expand(list(sd.margin.values())),
                        sd.margin,
                        sa.margin,
                        "above",
                        "the expansion",
                    ),  # fmt: skip
                    unit=TRAINED,
                ),
            ]
    return claims


def _claims_trend(trend: pd.DataFrame) -> list[Claim]:
    claims = []
    for (measure, variant), sub in trend.groupby(["measure", "variant"], sort=False):
        if variant not in SD_VARIANTS:
            continue
        order = sub.groupby("size")["params"].first().sort_values()
        fractions = sub.pivot_table(index="seed", columns="size", values="fraction at min rank")[order.index]
        ours = ", ".join(f"{s} ({p / 1e6:.2f}M) {100 * fractions[s].mean():.0f} %" for s, p in order.items())
        complete = fractions.dropna()  # a seed with a diverged size has no slope
        by_seed = {seed: row.tolist() for seed, row in complete.iterrows()}
        claims.append(
            Claim(
                "scale trend",
                f"the fraction of layers at minimum rank grows with size ({LABELS[variant]}, {measure})",
                "33 % at 18M -> 92 % at 355M",
                f"layers at rank <= {MIN_RANK}: {ours}",
                rules.verdict_grows_with_size(order.tolist(), by_seed),
                unit=TRAINED,
            )
        )
    return claims


def _claims_collapse(collapse: pd.DataFrame, drift: pd.DataFrame) -> list[Claim]:
    claims = []
    wide = collapse.pivot_table(
        index=["space", "variant", "size", "seed"], columns="intervention", values="ppl change %"
    )
    for variant in SD_VARIANTS:
        if ("head", variant) not in wide.index.droplevel([2, 3]):
            continue
        head = wide.loc["head", variant]
        filt, rout = head["filtering to a scalar"], head["routing removed"]
        cv = float(drift.loc[drift["variant"] == variant, "d_cv"].mean())
        claims += [
            Claim(
                "collapse",
                f"{LABELS[variant]}: truncating D to its mean (head space) is nearly free",
                f"+{PAPER_FILTER_TRUNCATION_PPL} PPL",
                f"PPL change: {_means(_by_size(filt))}; D's coefficient of variation {cv:.2f}",
                rules.verdict_cheap(filt.tolist()),
                unit=TRAINED,
            ),
            Claim(
                "collapse",
                f"{LABELS[variant]}: removing routing, S = 0 (head space), is catastrophic",
                "catastrophic",
                f"PPL change: {_means(_by_size(rout))}",
                rules.verdict_catastrophic(rout.tolist()),
                unit=TRAINED,
            ),
        ]
    present = set(wide.index.droplevel([2, 3]))
    for sd, sa in (("sd", "sa"), ("sd-shared", "sa"), ("sd-noln", "sa-noln")):
        if ("model", sd) not in present or ("model", sa) not in present:
            continue
        model = {v: wide.loc["model", v] for v in (sd, sa)}
        diffs = {v: m["filtering to a scalar"] - m["routing removed"] for v, m in model.items()}
        text = "; ".join(
            f"{LABELS[v]}: filtering to a scalar {_means(_by_size(m['filtering to a scalar']))}, routing "
            f"removed {_means(_by_size(m['routing removed']))}"
            for v, m in model.items()
        )
        claims.append(
            Claim(
                "collapse",
                f"the same model-space truncations order oppositely: {LABELS[sd]} loses less to filtering to "
                f"a scalar than to removing routing, {LABELS[sa]} more",
                "S-D: filtering truncation nearly free, routing removal catastrophic; SA: the inverse",
                f"PPL change (%), model space: {text}",
                rules.verdict_inversion(diffs[sd].tolist(), diffs[sa].tolist()),
                unit=TRAINED,
            )
        )
    return claims


def _claims_linear(linear: pd.DataFrame, probe: str, n: int) -> list[Claim]:
    if linear.empty:
        return []
    post = linear[linear["mode"] == "post hoc"]
    counts = {
        v: post[post["variant"] == v].sort_values("k").groupby("seed")["ppl change %"].apply(
            lambda c: tolerated(c.tolist())
        )
        for v in PROBE_VARIANTS
    }  # fmt: skip
    claims = []
    for variant in ("sd", "sd-shared"):
        seeds = counts[variant].index.intersection(counts["sa"].index)  # pairs by seed: both models finished
        k_sd, k_sa = counts[variant][seeds].to_dict(), counts["sa"][seeds].to_dict()
        claims.append(
            Claim(
                "linearisation",
                f"{LABELS[variant]} tolerates more leading ELU+1 layers than standard attention (post hoc)",
                f"S-D: first {PAPER_LINEAR['layers']} of {PAPER_LINEAR['of']} layers < 5 % PPL; SA collapses "
                "by layer 3",
                f"{probe}, most leading layers within 5 % per seed: {LABELS[variant]} "
                f"{list(k_sd.values())}, SA {list(k_sa.values())} (of {n})",
                rules.verdict_more_linear_layers(k_sd, k_sa, n),
                unit=TRAINED,
            )
        )
    retrained = linear[(linear["mode"] == "retrained") & (linear["k"] > 0)]
    if not retrained.empty:
        k = min(retrained["k"].unique(), key=lambda x: abs(x - n / 3))
        at_k = retrained[retrained["k"] == k]
        change = at_k.groupby("variant")["ppl change %"].mean()
        ours = ", ".join(f"{LABELS[v]} {signed(c, 1)} %" for v, c in change.items())
        for variant in ("sd", "sd-shared"):
            claims.append(
                Claim(
                    "linearisation",
                    f"{LABELS[variant]} with ELU+1 in the first third of its layers stays close to the "
                    "baseline (retrained)",
                    f"first {PAPER_LINEAR['elu_layers']} of {PAPER_LINEAR['of']} layers within "
                    f"{PAPER_LINEAR['elu_pct']} %",
                    f"{probe}, first {k} of {n} layers, retrained (seed mean): {ours}",
                    rules.verdict_retrained_linear(
                        at_k.loc[at_k["variant"] == variant, "ppl change %"].tolist()
                    ),
                    unit=TRAINED,
                )
            )
    return claims


def _claims_realloc(realloc: pd.DataFrame, floor: int, base: int) -> list[Claim]:
    """The reallocation per variant: the saving and cost, and the measured allocation against each control of
    the same total head dims; the controls are not testable where the measured dims sit mostly at the clamp
    [``floor``, ``base``] (:func:`rules.held_at_bounds`: nothing is left to reallocate)."""
    if realloc.empty:
        return []
    claims = []
    for variant in [v for v in SD_VARIANTS if v in set(realloc["variant"])]:  # a fixed order of rows
        rows = realloc[realloc["variant"] == variant]
        sub = rows[rows["model"] == "reallocated"]
        if sub.empty:
            continue
        saved, cost = sub["attn params saved %"].mean(), sub["ppl change %"].mean()
        measured = sub.set_index("seed")["ppl change %"].to_dict()
        dims = sub["head dims"].iloc[0]
        held = rules.held_at_bounds([int(d) for d in dims.split()], floor, base) if floor and base else ""
        controls, text = {}, []
        for name in REALLOC_CONTROLS:
            ctl = rows[rows["model"] == name]
            ctl_dims = ctl["head dims"].iloc[0] if len(ctl) else "-"
            same = len(ctl) > 0 and ctl_dims == dims
            by_seed = ctl.set_index("seed")["ppl change %"].to_dict()
            controls[f"vs {name}"] = rules.verdict_allocation_control(measured, by_seed, same, held)
            change = signed(ctl["ppl change %"].mean(), 1) if len(ctl) else "-"
            text.append(f"{name} ({ctl_dims}) PPL {change} %")
        claims.append(
            Claim(
                "reallocation",
                "head dims from the measured routing dimensions save attention parameters at a small PPL "
                f"cost, at least as good (within {ALLOCATION_MARGIN_PCT:g} % PPL) as the same total head "
                f"dims spread evenly or shuffled across layers ({LABELS[variant]})",
                "47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL",
                f"head dims {dims} (clamped to {floor}-{base}): {saved:.0f} % fewer attention parameters, "
                f"PPL {signed(cost, 1)} % (seed mean); controls: {'; '.join(text)}",
                rules.verdict_reallocation(
                    sub["attn params saved %"].tolist(), sub["ppl change %"].tolist(), controls
                ),
                unit=TRAINED,
            )
        )
    return claims


def _claims_allocation_shape(cascade: pd.DataFrame, order: Sequence[str]) -> list[Claim]:
    """The measured allocation's shape over depth (the paper's "e.g. 8 early, 64 late"), per reallocated
    variant, from the routing dimensions of every trained model's layers (all sizes; the probe size's are
    the allocation), against SA's routing part under the same measure (:func:`rules.verdict_beyond_sa`,
    paired by size and seed; unit: trained model)."""
    if "routing_dims" not in cascade:
        return []
    claims, kept = [], cascade[cascade["routing_dims"].notna()]
    for variant in [v for v in REALLOCATED if v in set(cascade["variant"])]:
        control = CASCADE_CONTROL[variant]
        sd, sa = (in_order(depth_margins(kept[kept["variant"] == v]), order) for v in (variant, control))
        ours = (
            f"routing dimensions (90 % of the energy), late half minus early half: "
            f"{_means(_grouped(sd))}; {LABELS[control]}'s routing part R: {_means(_grouped(sa)) or '-'}"
        )
        grows = rules.verdict_grows_with_depth(list(sd.values()))
        claims.append(Claim(
            "reallocation", "the measured allocation grows with depth: late layers' routing holds its energy "
            f"in more dimensions than early layers', more so than SA's routing part ({LABELS[variant]})",
            "e.g. 8 early, 64 late", ours,
            rules.verdict_beyond_sa(grows, sd, sa, "above", "the growth with depth"), unit=TRAINED,
        ))  # fmt: skip
    return claims
