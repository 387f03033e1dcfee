"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the paper's claims
judged on this run's measurements.

Each claim's rule is a ``verdict_*`` function of plain numbers returning a
:class:`~attnlab.runner.verdicts.Verdict` (its word and reason, and the evidence: the estimate it rests on,
the 95% interval over seeds where there is one, how many values and the threshold it is compared with);
:func:`claims` computes those numbers from the notebook's tables and writes each claims row. The thresholds
are ours: the paper gives none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from attnlab.papers.sd_routing.presets import (
    LABELS,
    MIN_RANK,
    PAPER_FILTER_TRUNCATION_PPL,
    PAPER_HEADS,
    PAPER_LINEAR,
    PAPER_REALLOCATION,
)
from attnlab.papers.sd_routing.routing import sd_heads
from attnlab.runner.claims import Claim, signed
from attnlab.runner.stats import mean_interval
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE, Verdict

if TYPE_CHECKING:
    from attnlab.papers.sd_routing.experiment import Runs, SDExperiment

# Verdict thresholds (ours; the paper gives none).
CHEAP_PCT = 2.0  # an intervention is "cheap" below a 2 % PPL increase (the paper's +0.3 PPL is ~1 %)
CATASTROPHIC_PCT = 20.0  # and "catastrophic" above 20 %
LINEAR_TOLERANCE_PCT = 5.0  # the paper's "< 5 % PPL" for leading linear layers
MAJORITY_PCT = 50.0  # a property "dominates" a model's heads when more than half of them have it
STABLE_TOLERANCE = 1e-6  # the largest real part of an eigenvalue of L = S - D counted as <= 0 (rounding)
LAYERNORM_GAP_PCT = 10.0  # S-D without LayerNorm "trains" when its loss is within 10 % of S-D with it
ONE_PLANE = (1.5, MIN_RANK)  # the head-mean effective ranks counted as one rotation plane
FEW_DIMENSIONS = (1.5, 3.5)  # and as routing "in 2-3 dimensions"


# Verdicts -------------------------------------------------------------------------------------------------


def _word(holds: bool) -> str:
    return HOLDS if holds else DOES_NOT_HOLD


def _seed_mean(values: Sequence[float]) -> tuple[float, float, float, int]:
    """The mean of ``values`` as pandas takes it (NaN skipped), its 95% interval
    (:func:`~attnlab.runner.stats.mean_interval`) when there are two or more and all are finite, and n."""
    xs = [float(v) for v in values]
    mean = float(pd.Series(xs, dtype=float).mean())
    if len(xs) >= 2 and all(math.isfinite(x) for x in xs):
        est = mean_interval(xs)
        return mean, est.low, est.high, len(xs)
    return mean, math.nan, math.nan, len(xs)


def _every_model(ok: Mapping[str, bool], shares: Mapping[str, float], null: float) -> Verdict:
    """``holds`` when ``ok`` for every pretrained model, ``does not hold`` when for none, otherwise
    inconclusive, naming the models on each side. Evidence: the lowest share, against ``null``."""
    lowest = min(shares.values(), default=math.nan)
    yes = [m for m, v in ok.items() if v]
    no = [m for m, v in ok.items() if not v]
    if not no:
        word, why = HOLDS, ""
    elif not yes:
        word, why = DOES_NOT_HOLD, ""
    else:
        word, why = INCONCLUSIVE, f"holds for {', '.join(yes)}, not for {', '.join(no)}"
    return Verdict(word, why, lowest, math.nan, math.nan, len(ok), null)


def verdict_majority_every_model(shares: Mapping[str, float], threshold: float = MAJORITY_PCT) -> Verdict:
    """Pretrained heads: "filtering dominates" / "routing runs at low rank", from each pretrained model's
    share of heads (%) with the property: holds when every model's share is above ``threshold`` (half its
    heads), does not hold when none is, otherwise inconclusive, naming the models on each side. Evidence: the
    lowest model's share, against ``threshold``; n = the models."""
    return _every_model({m: s > threshold for m, s in shares.items()}, shares, threshold)


def verdict_all_heads_every_model(shares: Mapping[str, float]) -> Verdict:
    """Pretrained heads: "every head is dynamically unstable", from each pretrained model's share of unstable
    heads (%): holds when it is 100 % in every model, does not hold when in none, otherwise inconclusive,
    naming the models on each side. Evidence: the lowest model's share, against 100; n = the models."""
    return _every_model({m: s == 100 for m, s in shares.items()}, shares, 100.0)


def verdict_eigenvalues_stable(max_real: Sequence[float]) -> Verdict:
    """S-D by construction: "every eigenvalue of L = S - D has real part <= 0", from each trained S-D model's
    largest real part over its heads: holds when the largest of them is at most ``STABLE_TOLERANCE``
    (rounding); otherwise, or with no S-D model (NaN), does not hold. Evidence: that largest real part,
    against ``STABLE_TOLERANCE``; n = the models."""
    largest = max(max_real, default=math.nan)
    return Verdict(
        _word(largest <= STABLE_TOLERANCE), "", largest, math.nan, math.nan, len(max_real), STABLE_TOLERANCE
    )


def verdict_trains_without_layernorm(gaps: Sequence[float], diverged: int) -> Verdict:
    """ "S-D attention trains without LayerNorm", from the loss of S-D without vs with LayerNorm (%) per size
    and seed, and the number of S-D models without LayerNorm that diverged: does not hold when any diverged;
    holds when every gap is within ``LAYERNORM_GAP_PCT``; otherwise (a larger gap, or no gap to compare)
    inconclusive. Evidence: the largest absolute gap, against ``LAYERNORM_GAP_PCT``; n = the gaps."""
    sizes = [abs(float(g)) for g in gaps]
    largest = float(np.nanmax(sizes)) if sizes and not all(math.isnan(g) for g in sizes) else math.nan
    evidence = (largest, math.nan, math.nan, len(sizes), LAYERNORM_GAP_PCT)
    if diverged:
        return Verdict(DOES_NOT_HOLD, "", *evidence)
    if sizes and all(g <= LAYERNORM_GAP_PCT for g in sizes):
        return Verdict(HOLDS, "", *evidence)
    why = f"trains stably, but more than {LAYERNORM_GAP_PCT:g} % above the loss with LayerNorm"
    return Verdict(INCONCLUSIVE, why, *evidence)


def verdict_one_plane(ranks: Sequence[float]) -> Verdict:
    """Spectral cascade: "layer 0's routing converges to one rotation plane", from layer 0's head-mean
    effective routing rank per size: holds when every one lies in ``ONE_PLANE`` (1.5 to ``MIN_RANK``);
    otherwise does not hold. Evidence: the largest rank, against ``MIN_RANK``; n = the sizes."""
    low, high = ONE_PLANE
    largest = max(ranks, default=math.nan)
    holds = all(low <= v <= high for v in ranks)
    return Verdict(_word(holds), "", largest, math.nan, math.nan, len(ranks), high)


def verdict_few_dimensions(ranks: Sequence[float]) -> Verdict:
    """Spectral cascade: "middle layers route in 2-3 dimensions", from the middle layers' mean effective
    routing rank per size (sizes with middle layers): holds when there is one and every one lies in
    ``FEW_DIMENSIONS`` (1.5 to 3.5); otherwise does not hold. Evidence: the largest rank, against 3.5; n = the
    sizes."""
    low, high = FEW_DIMENSIONS
    largest = max(ranks, default=math.nan)
    holds = bool(ranks) and all(low <= v <= high for v in ranks)
    return Verdict(_word(holds), "", largest, math.nan, math.nan, len(ranks), high)


def verdict_last_layers_expand(
    first: Mapping[str, float], middle: Mapping[str, float], last: Mapping[str, float]
) -> Verdict:
    """Spectral cascade: "the last layers expand", from the effective routing rank per size of layer 0, of the
    middle layers (mean; sizes without middle layers left out) and of the last layer: holds when at every size
    the last layer's is above both others; otherwise does not hold. Evidence: the smallest margin of the last
    layer over the larger of the two, against 0; n = the sizes."""
    margins = [last[s] - max(first[s], middle.get(s, first[s])) for s in first]
    return Verdict(
        _word(all(m > 0 for m in margins)), "", min(margins, default=math.nan), math.nan, math.nan,
        len(margins), 0.0,
    )  # fmt: skip


def verdict_grows_with_size(fractions: Sequence[float]) -> Verdict:
    """Scale trend: "the fraction of layers at minimum rank grows with size", from that fraction per size in
    order of parameter count: holds when it never falls and the largest size's is above the smallest's;
    inconclusive ("not monotone") when it ends higher but falls on the way; otherwise does not hold.
    Evidence: the largest size's fraction minus the smallest's, against 0; n = the sizes."""
    if len(fractions) == 0:
        raise ValueError("verdict_grows_with_size() needs at least one size")
    frac = np.asarray(fractions, float)
    rise = float(frac[-1] - frac[0])
    evidence = (rise, math.nan, math.nan, len(frac), 0.0)
    if (np.diff(frac) >= 0).all() and frac[-1] > frac[0]:
        return Verdict(HOLDS, "", *evidence)
    if frac[-1] > frac[0]:
        return Verdict(INCONCLUSIVE, "not monotone", *evidence)
    return Verdict(DOES_NOT_HOLD, "", *evidence)


def verdict_cheap(changes: Sequence[float]) -> Verdict:
    """Filtering collapse, S-D: "truncating D to one scalar per head is nearly free", from the PPL change (%)
    per size and seed: holds when every change is below ``CHEAP_PCT``; otherwise does not hold. Evidence: the
    largest change, against ``CHEAP_PCT``; n = the changes."""
    largest = max(changes, default=math.nan)
    holds = all(c < CHEAP_PCT for c in changes)
    return Verdict(_word(holds), "", largest, math.nan, math.nan, len(changes), CHEAP_PCT)


def verdict_catastrophic(changes: Sequence[float]) -> Verdict:
    """Filtering collapse, S-D: "removing routing (S = 0) is catastrophic", from the PPL change (%) per size
    and seed: holds when every change is above ``CATASTROPHIC_PCT``; otherwise does not hold. Evidence: the
    smallest change, against ``CATASTROPHIC_PCT``; n = the changes."""
    smallest = min(changes, default=math.nan)
    holds = all(c > CATASTROPHIC_PCT for c in changes)
    return Verdict(_word(holds), "", smallest, math.nan, math.nan, len(changes), CATASTROPHIC_PCT)


def verdict_inverse(filtering: Sequence[float], routing: Sequence[float]) -> Verdict:
    """Filtering collapse, SA: "truncating filtering hurts more than removing routing", from the PPL change
    (%) of each per size and seed (paired): holds when filtering's is the larger in every pair, does not hold
    when in none, otherwise inconclusive. Evidence: the smallest difference filtering minus routing, against
    0; n = the pairs."""
    diffs = [float(f) - float(r) for f, r in zip(filtering, routing, strict=True)]
    inverse = [f > r for f, r in zip(filtering, routing, strict=True)]
    word = HOLDS if all(inverse) else (DOES_NOT_HOLD if not any(inverse) else INCONCLUSIVE)
    return Verdict(word, "", min(diffs, default=math.nan), math.nan, math.nan, len(diffs), 0.0)


def tolerated(changes: Sequence[float], tolerance: float = LINEAR_TOLERANCE_PCT) -> int:
    """Linearisation: the most leading layers whose replacement (and every smaller k's) stays within
    ``tolerance``, from the PPL change (%) with the first k = 0, 1, ... layers linear (k = 0 is the model
    itself, so the answer is -1 only when even that is out of tolerance)."""
    within = 0
    for change in changes:
        if not change < tolerance:
            break
        within += 1
    return within - 1


def verdict_more_linear_layers(k_sd: int, k_sa: int, n_layers: int) -> Verdict:
    """Linearisation, post hoc: "S-D tolerates more leading ELU+1 layers than standard attention", from each
    variant's :func:`tolerated` count of ``n_layers``: holds when S-D's is larger; inconclusive when both
    tolerate every layer; otherwise does not hold. Evidence: S-D's count minus SA's, against 0; n = the
    layers."""
    evidence = (float(k_sd - k_sa), math.nan, math.nan, n_layers, 0.0)
    if k_sd > k_sa:
        return Verdict(HOLDS, "", *evidence)
    if k_sd == k_sa == n_layers:
        why = f"both stay within {LINEAR_TOLERANCE_PCT:g} % with every layer replaced"
        return Verdict(INCONCLUSIVE, why, *evidence)
    return Verdict(DOES_NOT_HOLD, "", *evidence)


def verdict_retrained_linear(sd_changes: Sequence[float]) -> Verdict:
    """Linearisation, retrained: "S-D with ELU+1 in the first third of its layers stays close to the
    baseline", from the retrained S-D model's PPL change (%) per seed: holds when their mean is at most the
    paper's ``PAPER_LINEAR["elu_pct"]``; otherwise, or with no retrained S-D model, does not hold. Evidence:
    the mean change and its 95% interval over seeds, against that bound."""
    bound = PAPER_LINEAR["elu_pct"]
    if not sd_changes:
        return Verdict(DOES_NOT_HOLD, "", math.nan, math.nan, math.nan, 0, bound)
    mean, low, high, n = _seed_mean(sd_changes)
    return Verdict(_word(mean <= bound), "", mean, low, high, n, bound)


def verdict_reallocation(saved: Sequence[float], cost: Sequence[float]) -> Verdict:
    """Reallocation: "head dims from measured rank save attention parameters at a small PPL cost", from the
    reallocated model's attention parameters saved (%) and PPL change (%) per seed: not testable here when
    the mean saving is 0 (every layer keeps the uniform head dim); holds when the mean saving reaches the
    paper's smallest (47 %) and the mean cost stays within its largest (+8.4 %); inconclusive when only one
    does; otherwise does not hold. Evidence: the mean PPL cost and its 95% interval over seeds, against
    +8.4 %."""
    saved_mean = float(pd.Series([float(s) for s in saved], dtype=float).mean())
    mean, low, high, n = _seed_mean(cost)
    bound = PAPER_REALLOCATION["ppl_pct"][1]
    evidence = (mean, low, high, n, bound)
    ok = [saved_mean >= PAPER_REALLOCATION["params_saved_pct"][0], mean <= bound]
    if saved_mean == 0:
        why = "every layer's measured rank calls for the uniform head dim, so there is nothing to reallocate"
        return Verdict(NOT_TESTABLE, why, *evidence)
    if all(ok):
        return Verdict(HOLDS, "", *evidence)
    if any(ok):
        why = "the saving is smaller" if ok[1] else "the perplexity cost is larger"
        return Verdict(INCONCLUSIVE, why, *evidence)
    return Verdict(DOES_NOT_HOLD, "", *evidence)


# Claims rows ----------------------------------------------------------------------------------------------


def claims(
    exp: SDExperiment,
    runs: Runs,
    losses: pd.DataFrame,
    heads: pd.DataFrame,
    cascade: pd.DataFrame,
    trend: pd.DataFrame,
    collapse: pd.DataFrame,
    linear: pd.DataFrame,
    realloc: pd.DataFrame,
) -> list[Claim]:
    """Every claim of docs/papers/sd-routing.md, with a verdict computed from this run's measurements."""
    return [
        *_claims_pretrained(exp, heads),
        *_claims_stability(exp, runs, losses),
        *_claims_cascade(exp, cascade),
        *_claims_trend(trend),
        *_claims_collapse(collapse),
        *_claims_linear(exp, linear),
        *_claims_realloc(realloc),
    ]


def _claims_pretrained(exp: SDExperiment, heads: pd.DataFrame) -> list[Claim]:
    summary = exp.head_summary(heads)
    pre = summary.loc[[m for m in exp.models if m in summary.index]]
    paper = f"{PAPER_HEADS}:"

    def per_model(column: str, digits: int = 1) -> str:
        return "; ".join(f"{m} {v:.{digits}f}" for m, v in pre[column].items())

    ranks = "; ".join(
        f"{m} {r:.1f} vs {f:.1f}"
        for m, r, f in zip(pre.index, pre["routing rank"], pre["filtering rank"], strict=True)
    )
    return [
        Claim(
            "pretrained",
            "filtering dominates the spectral budget of pretrained heads",
            f"{paper} filtering dominates",
            f"heads with filtering energy > 1/2 (%): {per_model('filtering dominant %')}; "
            f"mean filtering energy: {per_model('filtering energy', 2)}",
            verdict_majority_every_model(pre["filtering dominant %"].to_dict()),
        ),
        Claim(
            "pretrained",
            "routing runs at low rank",
            f"{paper} routing low rank",
            f"mean effective rank of R vs F: {ranks}",
            verdict_majority_every_model(pre["routing rank < filtering rank %"].to_dict()),
        ),
        Claim(
            "pretrained",
            "every head is dynamically unstable (an eigenvalue of W with positive real part)",
            f"{paper} all heads",
            f"unstable heads (%): {per_model('unstable %')}",
            verdict_all_heads_every_model(pre["unstable %"].to_dict()),
        ),
    ]


def _claims_stability(exp: SDExperiment, runs: Runs, losses: pd.DataFrame) -> list[Claim]:
    sd_runs = [r for (_, v, _), r in runs.items() if v != "sa"]
    eigen = verdict_eigenvalues_stable([sd_heads(r.model)["max_real"].max() for r in sd_runs])
    stable = Claim(
        "S-D",
        "every eigenvalue of L = S - D has real part <= 0",
        "by construction",
        f"largest real part over all heads of the trained S-D models: {eigen.estimate:.2e}",
        eigen,
    )
    wide = losses.pivot_table(index=["size", "seed"], columns="variant", values="loss")
    failed = [k for k in exp.diverged(runs) if k[1] == "sd-noln"]
    if {"sd", "sd-noln"} <= set(wide.columns):
        gaps = 100 * (wide["sd-noln"] / wide["sd"] - 1)
        ours = "loss without vs with LayerNorm: " + ", ".join(
            f"{s} {signed(g, 1)} %" for (s, _), g in gaps.items()
        )
        gap_values = gaps.tolist()
    else:
        ours, gap_values = "no S-D model without LayerNorm finished", []
    if failed:
        ours += f"; diverged: {failed}"
    trains = Claim(
        "S-D",
        "S-D attention trains without LayerNorm",
        "trains (no number given)",
        ours,
        verdict_trains_without_layernorm(gap_values, len(failed)),
    )
    return [stable, trains]


def _claims_cascade(exp: SDExperiment, cascade: pd.DataFrame) -> list[Claim]:
    claims = []
    for variant in ("sd", "sd-noln"):
        by = cascade[cascade["variant"] == variant].groupby(["size", "layer"])["routing_rank"].mean()
        sizes = [s for s in exp.sizes if s in by.index.get_level_values(0)]
        if not sizes:
            continue
        first = {s: by[s].iloc[0] for s in sizes}
        last = {s: by[s].iloc[-1] for s in sizes}
        middle = {s: by[s].iloc[1:-1].mean() for s in sizes if len(by[s]) > 2}
        label = LABELS[variant]
        claims += [
            Claim(
                "cascade",
                f"layer 0's routing converges to one rotation plane ({label})",
                "layer 0 effective rank 2, 7M-355M",
                "layer 0: " + _by_size(first),
                verdict_one_plane(list(first.values())),
            ),
            Claim(
                "cascade",
                f"middle layers route in 2-3 dimensions ({label})",
                "effective rank 2-3",
                "middle layers (mean): " + (_by_size(middle) or "no size has middle layers"),
                verdict_few_dimensions(list(middle.values())),
            ),
            Claim(
                "cascade",
                f"the last layers expand ({label})",
                "10+ planes, bounded by d_head",
                "last layer vs layer 0: " + ", ".join(f"{s} {last[s]:.2f} vs {first[s]:.2f}" for s in sizes),
                verdict_last_layers_expand(first, middle, last),
            ),
        ]
    return claims


def _claims_trend(trend: pd.DataFrame) -> list[Claim]:
    claims = []
    for variant in ("sd", "sd-noln"):
        sub = trend[trend["variant"] == variant].sort_values("params")
        if len(sub) < 2:
            continue
        frac = sub["fraction at min rank"].to_numpy()
        ours = ", ".join(
            f"{s} ({p / 1e6:.2f}M) {100 * f:.0f} %"
            for s, p, f in zip(sub["size"], sub["params"], frac, strict=True)
        )
        claims.append(
            Claim(
                "scale trend",
                f"the fraction of layers at minimum rank grows with size ({LABELS[variant]})",
                "33 % at 18M -> 92 % at 355M",
                f"layers with routing rank <= {MIN_RANK}: {ours}",
                verdict_grows_with_size(frac),
            )
        )
    return claims


def _claims_collapse(collapse: pd.DataFrame) -> list[Claim]:
    wide = collapse.pivot_table(
        index=["variant", "size", "seed"], columns="intervention", values="ppl change %"
    )
    claims = []
    if "sd" in wide.index:
        filt, rout = wide.loc["sd", "filtering -> scalar"], wide.loc["sd", "routing removed"]
        claims += [
            Claim(
                "collapse",
                "S-D: truncating D to one scalar per head is nearly free",
                f"+{PAPER_FILTER_TRUNCATION_PPL} PPL",
                "PPL change: " + _by_size(filt, "+.2f", " %"),
                verdict_cheap(filt.tolist()),
            ),
            Claim(
                "collapse",
                "S-D: removing routing (S = 0) is catastrophic",
                "catastrophic",
                "PPL change: " + _by_size(rout, "+.1f", " %"),
                verdict_catastrophic(rout.tolist()),
            ),
        ]
    if "sa" in wide.index:
        filt, rout = wide.loc["sa", "filtering -> scalar"], wide.loc["sa", "routing removed"]
        pairs = ", ".join(
            f"{s} {signed(a, 1)} % vs {signed(b, 1)} %"
            for (s, _), a, b in zip(filt.index, filt, rout, strict=True)
        )
        claims.append(
            Claim(
                "collapse",
                "standard attention shows the inverse: truncating filtering hurts more than removing routing",
                "truncating filtering is forbidden, routing is cheap",
                f"SA PPL change, filtering -> scalar vs routing removed: {pairs}",
                verdict_inverse(filt.tolist(), rout.tolist()),
            )
        )
    return claims


def _claims_linear(exp: SDExperiment, linear: pd.DataFrame) -> list[Claim]:
    if linear.empty:
        return []
    n = exp.preset.sizes[exp.probe].model.n_layer
    post = linear[linear["mode"] == "post hoc"].groupby(["variant", "k"])["ppl change %"].mean()
    k_sd, k_sa = tolerated(post["sd"].tolist()), tolerated(post["sa"].tolist())
    claims = [
        Claim(
            "linearisation",
            "S-D tolerates more leading ELU+1 layers than standard attention (post hoc)",
            f"S-D: first {PAPER_LINEAR['layers']} of {PAPER_LINEAR['of']} layers < 5 % PPL; SA collapses "
            "by layer 3",
            f"{exp.probe}, most leading layers within 5 %: S-D {k_sd}, SA {k_sa} (of {n})",
            verdict_more_linear_layers(k_sd, k_sa, n),
        )
    ]
    retrained = linear[(linear["mode"] == "retrained") & (linear["k"] > 0)]
    if not retrained.empty:
        k = min(retrained["k"].unique(), key=lambda x: abs(x - n / 3))
        at_k = retrained[retrained["k"] == k]
        change = at_k.groupby("variant")["ppl change %"].mean()
        ours = ", ".join(f"{LABELS[v]} {signed(c, 1)} %" for v, c in change.items())
        claims.append(
            Claim(
                "linearisation",
                "S-D with ELU+1 in the first third of its layers stays close to the baseline (retrained)",
                f"first {PAPER_LINEAR['elu_layers']} of {PAPER_LINEAR['of']} layers within "
                f"{PAPER_LINEAR['elu_pct']} %",
                f"{exp.probe}, first {k} of {n} layers, retrained: {ours}",
                verdict_retrained_linear(at_k.loc[at_k["variant"] == "sd", "ppl change %"].tolist()),
            )
        )
    return claims


def _claims_realloc(realloc: pd.DataFrame) -> list[Claim]:
    sub = realloc[realloc["model"] == "reallocated"]
    if sub.empty:
        return []
    saved, cost = sub["attn params saved %"].mean(), sub["ppl change %"].mean()
    return [
        Claim(
            "reallocation",
            "head dims from measured rank save attention parameters at a small PPL cost",
            "47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL",
            f"head dims {sub['head dims'].iloc[0]}: {saved:.0f} % fewer attention parameters, "
            f"PPL {signed(cost, 1)} %",
            verdict_reallocation(sub["attn params saved %"].tolist(), sub["ppl change %"].tolist()),
        )
    ]


def _by_size(values, spec: str = ".2f", unit: str = "") -> str:
    """``size value`` pairs of a dict or of a Series indexed by size (or by (size, seed))."""

    def fmt(v: float) -> str:
        return signed(v, int(spec[-2])) if spec.startswith("+") else format(v, spec)

    return ", ".join(f"{k[0] if isinstance(k, tuple) else k} {fmt(v)}{unit}" for k, v in values.items())
