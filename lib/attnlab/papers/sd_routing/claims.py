"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the paper's claims
judged on this run's measurements.

Each claim's rule is a ``verdict_*`` function of plain numbers returning a
:class:`~attnlab.runner.verdicts.Verdict` (its word and reason, and the evidence: the estimate it rests on,
the 95% interval over seeds where there is one, how many values and the null or control it is compared
with); :func:`claims` computes those numbers from the notebook's tables and writes each claims row. Every
claim is judged against a control the reader can see: pretrained heads against Gaussian weights of the same
shapes, S-D without LayerNorm against SA without LayerNorm, the cascade beside random antisymmetric matrices,
S-D's ordering of the two truncations against SA's under the same (model-space) truncation. Rows true by
construction say "sanity check". The thresholds are ours: the paper gives none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from attnlab.papers.sd_routing.presets import (
    LABELS,
    MIN_RANK,
    PAPER_FILTER_TRUNCATION_PPL,
    PAPER_HEADS,
    PAPER_LINEAR,
    PAPER_REALLOCATION,
    PROBE_VARIANTS,
    SD_VARIANTS,
)
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS, rank_equivalent, sd_heads
from attnlab.runner.claims import Claim, fixed, signed
from attnlab.runner.stats import binomial_interval, estimate
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    Verdict,
    interval_excludes,
)

if TYPE_CHECKING:
    from attnlab.papers.sd_routing.experiment import Runs, SDExperiment

# Verdict thresholds (ours; the paper gives none).
CHEAP_PCT = 2.0  # an intervention is "cheap" below a 2 % PPL increase (the paper's +0.3 PPL is ~1 %)
CATASTROPHIC_PCT = 20.0  # and "catastrophic" above 20 %
LINEAR_TOLERANCE_PCT = 5.0  # the paper's "< 5 % PPL" for leading linear layers
STABLE_TOLERANCE = 1e-6  # the largest real part of an eigenvalue of L = S - D counted as <= 0 (rounding)
ONE_PLANE = (1.5, MIN_RANK)  # the head-mean ranks (in rank units) counted as one rotation plane
FEW_DIMENSIONS = (1.5, 3.5)  # and as routing "in 2-3 dimensions"
D_MOVED_CV = (
    0.25  # D "moved" from its initialisation (all ones) when its mean coefficient of variation is above
)
SANITY = "sanity check (true by construction): "
SMOKE = "smoke scale judges nothing (tiny models, a few dozen steps, one seed)"


# Verdicts -------------------------------------------------------------------------------------------------


def _word(holds: bool) -> str:
    return HOLDS if holds else DOES_NOT_HOLD


def verdict_beyond_random(
    trained: Mapping[str, tuple[int, int]], random: Mapping[str, float], side: str = "above"
) -> Verdict:
    """Pretrained heads: a share of heads with a property (filtering dominant, routing rank below filtering
    rank, unstable), per model, against the same share for Gaussian weights of the same shapes. ``trained``:
    per model (heads with the property, heads); ``random``: per model the random share (%). A model counts
    when the Wilson interval of its share lies entirely ``side`` its random share and counts against when
    it lies entirely on the other side. Holds when every model counts, does not hold when every model counts
    against, otherwise inconclusive (naming the models). Evidence: the weakest model's share minus its
    random share (percentage points) with that difference's Wilson interval, against 0; n = its heads."""
    sign = 1.0 if side == "above" else -1.0
    per = {}
    for m, (k, n) in trained.items():
        est = binomial_interval(k, n)
        low, high = 100 * est.low - random[m], 100 * est.high - random[m]
        eps = 1e-9  # the Wilson bound of a share of 0 or 1 is 0 or 1 up to rounding
        beyond = (low > eps) if side == "above" else (high < -eps)
        against = (high < -eps) if side == "above" else (low > eps)
        per[m] = (sign * (100 * est.mean - random[m]), low, high, n, beyond, against)
    if not per:
        raise ValueError("verdict_beyond_random() needs at least one model")
    weakest = min(per, key=lambda m: per[m][0])
    margin, low, high, n, _, _ = per[weakest]
    evidence = (sign * margin, low, high, n, 0.0)
    beyond = [m for m, v in per.items() if v[4]]
    against = [m for m, v in per.items() if v[5]]
    if len(beyond) == len(per):
        return Verdict(HOLDS, "beyond the random-weight baseline in every model", *evidence)
    if len(against) == len(per):
        return Verdict(DOES_NOT_HOLD, "", *evidence)
    within = [m for m in per if m not in beyond]
    return Verdict(INCONCLUSIVE, f"not beyond the random-weight baseline in {', '.join(within)}", *evidence)


def verdict_eigenvalues_stable(max_real: Sequence[float]) -> Verdict:
    """Sanity check, S-D by construction: "every eigenvalue of L = S - D has real part <= 0", from each
    trained S-D model's largest real part over its heads: holds when the largest of them is at most
    ``STABLE_TOLERANCE`` (rounding); otherwise, or with no S-D model (NaN), does not hold. Evidence: that
    largest real part, against ``STABLE_TOLERANCE``; n = the models."""
    largest = max(max_real, default=math.nan)
    return Verdict(
        _word(largest <= STABLE_TOLERANCE), "", largest, math.nan, math.nan, len(max_real), STABLE_TOLERANCE
    )


def verdict_no_unstable_heads(unstable: int, heads: int) -> Verdict:
    """Sanity check, S-D with a shared projection by construction: "no head's model-space form W^T L W has an
    eigenvalue with positive real part", from the number of such heads among ``heads``: holds when none;
    does not hold otherwise; not testable without heads. Evidence: the unstable share (%), against 0."""
    if heads == 0:
        return Verdict(NOT_TESTABLE, "no model with a shared projection finished", math.nan, math.nan,
                       math.nan, 0, 0.0)  # fmt: skip
    return Verdict(_word(unstable == 0), "", 100 * unstable / heads, math.nan, math.nan, heads, 0.0)


def verdict_trains_without_layernorm(
    sd_gaps: Sequence[float], sa_gaps: Sequence[float], sd_diverged: int, sa_diverged: int
) -> Verdict:
    """ "S-D trains without LayerNorm (where standard attention suffers)", from the loss increase without vs
    with LayerNorm (%) of S-D and of SA, paired per size and seed, and the number of runs without LayerNorm
    that diverged: does not hold when an S-D run diverged; holds when only SA runs diverged; otherwise the
    paired differences SA's gap minus S-D's must lie above 0 (:func:`interval_excludes`: holds / does not
    hold / inconclusive, "both lose about the same" when the interval contains 0)."""
    diffs = [float(a) - float(b) for a, b in zip(sa_gaps, sd_gaps, strict=True)]
    if sd_diverged:
        est = estimate(diffs) if diffs else None
        return Verdict(DOES_NOT_HOLD, f"{sd_diverged} S-D run(s) without LayerNorm diverged",
                       est.mean if est else math.nan, math.nan, math.nan, len(diffs), 0.0)  # fmt: skip
    if sa_diverged:
        return Verdict(HOLDS, f"{sa_diverged} SA run(s) without LayerNorm diverged, no S-D run did",
                       math.nan, math.nan, math.nan, len(diffs), 0.0)  # fmt: skip
    if not diffs:
        return Verdict(
            NOT_TESTABLE, "no pair of runs without LayerNorm", math.nan, math.nan, math.nan, 0, 0.0
        )
    v = interval_excludes(diffs, "above", 0.0)
    if v.word == INCONCLUSIVE and math.isfinite(v.low):
        return replace(v, why="both lose about the same without LayerNorm (the 95% interval contains 0)")
    return v


def _band(values_by_size: Mapping[str, Sequence[float]], low: float, high: float) -> Verdict:
    """Every size's seed-mean within [low, high]: holds when each size's 95% interval lies inside the band,
    does not hold when some size's lies entirely outside it, otherwise inconclusive. Evidence: the size with
    the largest mean, its interval, against ``high``; n = its seeds."""
    if not values_by_size:
        return Verdict(NOT_TESTABLE, "no size to measure", math.nan, math.nan, math.nan, 0, high)
    ests = {s: estimate(list(v)) for s, v in values_by_size.items()}
    top = max(ests, key=lambda s: ests[s].mean)
    e = ests[top]
    evidence = (e.mean, e.low, e.high, e.n, high)
    if any(x.low > high or x.high < low for x in ests.values()) or any(
        x.n == 1 and not low <= x.mean <= high for x in ests.values()
    ):
        return Verdict(DOES_NOT_HOLD, "", *evidence)
    if all(math.isfinite(x.low) and low <= x.low and x.high <= high for x in ests.values()):
        return Verdict(HOLDS, "", *evidence)
    why = (
        "one seed only, no interval"
        if any(x.n < 2 for x in ests.values())
        else "an interval crosses the band"
    )
    return Verdict(INCONCLUSIVE, why, *evidence)


def verdict_one_plane(values_by_size: Mapping[str, Sequence[float]]) -> Verdict:
    """Spectral cascade: "layer 0's routing converges to one rotation plane", from layer 0's head-mean routing
    measure in rank units per size and seed: every size's seed-mean within ``ONE_PLANE`` (:func:`_band`)."""
    return _band(values_by_size, *ONE_PLANE)


def verdict_few_dimensions(values_by_size: Mapping[str, Sequence[float]]) -> Verdict:
    """Spectral cascade: "middle layers route in 2-3 dimensions", from the middle layers' mean routing measure
    in rank units per size (sizes with middle layers) and seed: every size within ``FEW_DIMENSIONS``
    (:func:`_band`); not testable when no size has middle layers."""
    if not values_by_size:
        return Verdict(NOT_TESTABLE, "no size has middle layers", math.nan, math.nan, math.nan, 0, 3.5)
    return _band(values_by_size, *FEW_DIMENSIONS)


def verdict_last_layers_expand(margins: Sequence[float]) -> Verdict:
    """Spectral cascade: "the last layers expand", from the margin of the last layer's routing measure (rank
    units) over the larger of layer 0's and the middle layers' mean, per size and seed: the 95% interval of
    the margins must lie above 0 (:func:`interval_excludes`)."""
    if not margins:
        return Verdict(NOT_TESTABLE, "no S-D model finished", math.nan, math.nan, math.nan, 0, 0.0)
    return interval_excludes(margins, "above", 0.0)


def verdict_grows_with_size(rises: Sequence[float]) -> Verdict:
    """Scale trend: "the fraction of layers at minimum rank grows with size", from the fraction at the largest
    size minus that at the smallest, per seed: not testable with fewer than two sizes (no rises); otherwise
    the 95% interval must lie above 0 (:func:`interval_excludes`)."""
    if not rises:
        return Verdict(NOT_TESTABLE, "fewer than two sizes", math.nan, math.nan, math.nan, 0, 0.0)
    return interval_excludes(rises, "above", 0.0)


def verdict_cheap(changes: Sequence[float], d_cv: float) -> Verdict:
    """Filtering collapse, S-D head space: "truncating D to one scalar per head is nearly free", from the PPL
    change (%) per size and seed and D's mean coefficient of variation over the same models: the 95% interval
    must lie below ``CHEAP_PCT`` (:func:`interval_excludes`); a "holds" becomes inconclusive when D barely
    left its initialisation (CV <= ``D_MOVED_CV``), where the truncation is close to a no-op by
    construction."""
    v = interval_excludes(changes, "below", CHEAP_PCT)
    if v.word == HOLDS and d_cv <= D_MOVED_CV:
        why = f"D stayed near its initialisation (CV {d_cv:.2f}), so the truncation is close to a no-op"
        return replace(v, word=INCONCLUSIVE, why=why)
    return v


def verdict_catastrophic(changes: Sequence[float]) -> Verdict:
    """Filtering collapse, S-D head space: "removing routing (S = 0) is catastrophic", from the PPL change (%)
    per size and seed: the 95% interval must lie above ``CATASTROPHIC_PCT`` (:func:`interval_excludes`)."""
    return interval_excludes(changes, "above", CATASTROPHIC_PCT)


def verdict_inversion(sd_diffs: Sequence[float], sa_diffs: Sequence[float]) -> Verdict:
    """Filtering collapse, the same model-space truncations on both: "S-D and SA order the two truncations
    oppositely" (S-D: filtering to a scalar costs less than removing routing; SA: more), from the PPL change
    of filtering to a scalar minus that of removing routing (%), per size and seed, for each. Holds when
    S-D's interval lies below 0 and SA's above; does not hold when either lies on its wrong side (or its
    mean does); otherwise inconclusive. Evidence: S-D's differences, against 0."""
    sd = interval_excludes(sd_diffs, "below", 0.0)
    sa = interval_excludes(sa_diffs, "above", 0.0)
    evidence = (sd.estimate, sd.low, sd.high, sd.n, 0.0)
    if sd.word == HOLDS and sa.word == HOLDS:
        return Verdict(HOLDS, "", *evidence)
    if DOES_NOT_HOLD in (sd.word, sa.word):
        who = " and ".join(n for n, v in (("S-D", sd), ("SA", sa)) if v.word == DOES_NOT_HOLD)
        return Verdict(DOES_NOT_HOLD, f"{who} on the wrong side", *evidence)
    return Verdict(INCONCLUSIVE, "an interval contains 0", *evidence)


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


def verdict_more_linear_layers(k_sd: Sequence[int], k_sa: Sequence[int], n_layers: int) -> Verdict:
    """Linearisation, post hoc: "S-D tolerates more leading ELU+1 layers than standard attention", from each
    variant's :func:`tolerated` count per seed (paired): inconclusive when both tolerate every layer in every
    seed; otherwise the differences S-D minus SA must lie above 0 (:func:`interval_excludes`)."""
    diffs = [float(a - b) for a, b in zip(k_sd, k_sa, strict=True)]
    if not diffs:
        return Verdict(NOT_TESTABLE, "no pair of models", math.nan, math.nan, math.nan, 0, 0.0)
    if all(a == b == n_layers for a, b in zip(k_sd, k_sa, strict=True)):
        why = f"both stay within {LINEAR_TOLERANCE_PCT:g} % with every layer replaced"
        return Verdict(INCONCLUSIVE, why, 0.0, math.nan, math.nan, len(diffs), 0.0)
    return interval_excludes(diffs, "above", 0.0)


def verdict_retrained_linear(changes: Sequence[float]) -> Verdict:
    """Linearisation, retrained: "S-D with ELU+1 in the first third of its layers stays close to the
    baseline", from the retrained model's PPL change (%) per seed: the 95% interval must lie below the
    paper's ``PAPER_LINEAR["elu_pct"]`` (:func:`interval_excludes`); not testable without a retrained
    model."""
    bound = PAPER_LINEAR["elu_pct"]
    if not changes:
        return Verdict(NOT_TESTABLE, "no retrained model finished", math.nan, math.nan, math.nan, 0, bound)
    return interval_excludes(changes, "below", bound)


def verdict_reallocation(saved: Sequence[float], cost: Sequence[float]) -> Verdict:
    """Reallocation: "head dims from measured rank save attention parameters at a small PPL cost", from the
    reallocated model's attention parameters saved (%) and PPL change (%) per seed: not testable when the mean
    saving is 0 (every layer keeps the uniform head dim); holds when the mean saving reaches the paper's
    smallest (47 %) and the cost's 95% interval lies within its largest (+8.4 %); inconclusive when only one
    does; otherwise does not hold. Evidence: the PPL cost and its interval over seeds, against +8.4 %."""
    bound = PAPER_REALLOCATION["ppl_pct"][1]
    saved_mean = float(pd.Series([float(s) for s in saved], dtype=float).mean())
    cost_v = interval_excludes(cost, "below", bound)
    evidence = (cost_v.estimate, cost_v.low, cost_v.high, cost_v.n, bound)
    if saved_mean == 0:
        why = "every layer's measured dimensions call for the uniform head dim: nothing to reallocate"
        return Verdict(NOT_TESTABLE, why, *evidence)
    ok = [saved_mean >= PAPER_REALLOCATION["params_saved_pct"][0], cost_v.word == HOLDS]
    if all(ok):
        return Verdict(HOLDS, "", *evidence)
    if any(ok):
        why = "the saving is smaller" if ok[1] else "the perplexity cost is not within the bound"
        return Verdict(INCONCLUSIVE, why, *evidence)
    return Verdict(DOES_NOT_HOLD, "", *evidence)


# Claims rows ----------------------------------------------------------------------------------------------


def claims(
    exp: SDExperiment,
    runs: Runs,
    losses: pd.DataFrame,
    heads: pd.DataFrame,
    cascade: pd.DataFrame,
    baseline: pd.DataFrame,
    trend: pd.DataFrame,
    drift: pd.DataFrame,
    collapse: pd.DataFrame,
    linear: pd.DataFrame,
    realloc: pd.DataFrame,
) -> list[Claim]:
    """Every claim of docs/papers/sd-routing.md, with a verdict computed from this run's measurements; at
    smoke scale every verdict is "not testable here" (the evidence columns are still filled)."""
    rows = [
        *_claims_pretrained(exp, heads),
        *_claims_stability(exp, runs, losses, heads),
        *_claims_cascade(exp, cascade, baseline),
        *_claims_trend(trend),
        *_claims_collapse(collapse, drift),
        *_claims_linear(exp, linear),
        *_claims_realloc(realloc),
    ]
    if exp.scale == "smoke":
        rows = [replace(c, verdict=f"{NOT_TESTABLE}: {SMOKE}") for c in rows]
    return rows


def _claims_pretrained(exp: SDExperiment, heads: pd.DataFrame) -> list[Claim]:
    pre = heads[heads["model"].isin(exp.models)]
    flags = pre.assign(
        dominant=pre["filtering_energy"] > 0.5,
        lower=pre["routing_rank"] < pre["filtering_rank"],
        lower_stable=pre["routing_stable_rank"] < pre["filtering_stable_rank"],
        unstable=pre["n_unstable"] > 0,
    )
    paper = f"{PAPER_HEADS}:"
    rows = []
    for flag, claim, number in (
        ("dominant", "filtering dominates the spectral budget of pretrained heads (energy > 1/2)",
         "filtering dominates"),
        ("lower", "routing runs at lower rank than filtering (entropy rank)", "routing low rank"),
        ("lower_stable", "routing runs at lower rank than filtering (stable rank)", "routing low rank"),
        ("unstable", "every head is dynamically unstable (an eigenvalue of W with positive real part)",
         "all heads"),
    ):  # fmt: skip
        g = flags.groupby(["model", "weights"], sort=False)[flag]
        k, n, share = g.sum(), g.size(), 100 * g.mean()
        models = [m for m in exp.models if (m, "trained") in k.index and (m, "random init") in k.index]
        if not models:
            continue
        ours = "; ".join(f"{m} {share[m, 'trained']:.1f} % (random weights {share[m, 'random init']:.1f} %)"
                         for m in models)  # fmt: skip
        rows.append(
            Claim(
                "pretrained", claim, f"{paper} {number}", f"heads with it: {ours}",
                verdict_beyond_random(
                    {m: (int(k[m, "trained"]), int(n[m, "trained"])) for m in models},
                    {m: float(share[m, "random init"]) for m in models},
                ),
            )
        )  # fmt: skip
    return rows


def _claims_stability(
    exp: SDExperiment, runs: Runs, losses: pd.DataFrame, heads: pd.DataFrame
) -> list[Claim]:
    sd_runs = [r for (_, v, _), r in runs.items() if v in SD_VARIANTS]
    eigen = verdict_eigenvalues_stable([sd_heads(r.model)["max_real"].max() for r in sd_runs])
    rows = [
        Claim(
            "S-D",
            SANITY + "every eigenvalue of L = S - D has real part <= 0",
            "by construction",
            f"largest real part over all heads of the trained S-D models: {eigen.estimate:.2e}",
            eigen,
        )
    ]
    shared = heads[(heads["source"] == "sd-shared") & (heads["weights"] == "trained")]
    unstable = int((shared["n_unstable"] > 0).sum())
    rows.append(
        Claim(
            "S-D",
            SANITY + "with a shared projection no head's model-space form W^T L W is unstable",
            "by construction (our variant)",
            f"unstable heads of the trained shared-projection models: {unstable} of {len(shared)}",
            verdict_no_unstable_heads(unstable, len(shared)),
        )
    )
    wide = losses.pivot_table(index=["size", "seed"], columns="variant", values="loss")
    diverged = exp.diverged(runs)
    sd_failed = [k for k in diverged if k[1] == "sd-noln"]
    sa_failed = [k for k in diverged if k[1] == "sa-noln"]
    if {"sd", "sd-noln", "sa", "sa-noln"} <= set(wide.columns):
        both = wide.dropna(subset=["sd", "sd-noln", "sa", "sa-noln"])
        sd_gaps = 100 * (both["sd-noln"] / both["sd"] - 1)
        sa_gaps = 100 * (both["sa-noln"] / both["sa"] - 1)
        per_size = both.assign(sd=sd_gaps, sa=sa_gaps).groupby(level="size")[["sd", "sa"]].mean()
        ours = "loss without vs with LayerNorm (seed mean): " + ", ".join(
            f"{s} S-D {signed(r['sd'], 1)} %, SA {signed(r['sa'], 1)} %" for s, r in per_size.iterrows()
        )
        sd_list, sa_list = sd_gaps.tolist(), sa_gaps.tolist()
    else:
        ours, sd_list, sa_list = "no pair of models with and without LayerNorm finished", [], []
    if sd_failed or sa_failed:
        ours += f"; diverged: {sd_failed + sa_failed}"
    rows.append(
        Claim(
            "S-D",
            "S-D attention trains without LayerNorm (control: SA without LayerNorm)",
            "trains (no number given)",
            ours,
            verdict_trains_without_layernorm(sd_list, sa_list, len(sd_failed), len(sa_failed)),
        )
    )
    return rows


def _rank_units(column: str, values: pd.Series) -> pd.Series:
    return values.map(lambda v: rank_equivalent(MEASURE_COLUMNS[column], v))


def _claims_cascade(exp: SDExperiment, cascade: pd.DataFrame, baseline: pd.DataFrame) -> list[Claim]:
    claims = []
    for column, measure in MEASURE_COLUMNS.items():
        for variant in SD_VARIANTS:
            sub = cascade[cascade["variant"] == variant]
            if sub.empty:
                continue
            sub = sub.assign(value=_rank_units(column, sub[column]))
            sizes = [s for s in exp.sizes if s in set(sub["size"])]
            first, middle, last, margins = {}, {}, {}, []
            for size in sizes:
                by_seed = sub[sub["size"] == size].pivot_table(index="seed", columns="layer", values="value")
                first[size] = by_seed.iloc[:, 0].tolist()
                last[size] = by_seed.iloc[:, -1].tolist()
                mid = by_seed.iloc[:, 1:-1].mean(axis=1) if by_seed.shape[1] > 2 else None
                if mid is not None:
                    middle[size] = mid.tolist()
                ref = by_seed.iloc[:, 0] if mid is None else pd.concat([by_seed.iloc[:, 0], mid], axis=1)
                ref = ref.max(axis=1) if mid is not None else ref
                margins += (by_seed.iloc[:, -1] - ref).tolist()
            rand = baseline[baseline["variant"] == variant].set_index("size")[column]
            rand_text = ", ".join(
                f"{s} {rank_equivalent(measure, rand[s]):.2f}" for s in sizes if s in rand.index
            )
            label = f"{LABELS[variant]}, {measure}"
            unit = " (as 2 / share)" if measure == "top-plane share" else ""
            claims += [
                Claim(
                    "cascade",
                    f"layer 0's routing converges to one rotation plane ({label})",
                    "layer 0 effective rank 2, 7M-355M",
                    f"layer 0{unit}: {_means(first)}; random S of the same d: {rand_text}",
                    verdict_one_plane(first),
                ),
                Claim(
                    "cascade",
                    f"middle layers route in 2-3 dimensions ({label})",
                    "effective rank 2-3",
                    f"middle layers{unit}: {_means(middle) or 'no size has middle layers'}",
                    verdict_few_dimensions(middle),
                ),
                Claim(
                    "cascade",
                    f"the last layers expand ({label})",
                    "10+ planes, bounded by d_head",
                    f"last layer vs layer 0{unit}: "
                    + ", ".join(f"{s} {_mean(last[s]):.2f} vs {_mean(first[s]):.2f}" for s in sizes),
                    verdict_last_layers_expand(margins),
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
        rises = (fractions.iloc[:, -1] - fractions.iloc[:, 0]).tolist() if len(order) > 1 else []
        ours = ", ".join(f"{s} ({p / 1e6:.2f}M) {100 * fractions[s].mean():.0f} %" for s, p in order.items())
        claims.append(
            Claim(
                "scale trend",
                f"the fraction of layers at minimum rank grows with size ({LABELS[variant]}, {measure})",
                "33 % at 18M -> 92 % at 355M",
                f"layers at rank <= {MIN_RANK}: {ours}",
                verdict_grows_with_size(rises),
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
                verdict_cheap(filt.tolist(), cv),
            ),
            Claim(
                "collapse",
                f"{LABELS[variant]}: removing routing, S = 0 (head space), is catastrophic",
                "catastrophic",
                f"PPL change: {_means(_by_size(rout))}",
                verdict_catastrophic(rout.tolist()),
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
                verdict_inversion(diffs[sd].tolist(), diffs[sa].tolist()),
            )
        )
    return claims


def _claims_linear(exp: SDExperiment, linear: pd.DataFrame) -> list[Claim]:
    if linear.empty:
        return []
    n = exp.preset.sizes[exp.probe].model.n_layer
    post = linear[linear["mode"] == "post hoc"]
    counts = {
        v: post[post["variant"] == v].sort_values("k").groupby("seed")["ppl change %"].apply(
            lambda c: tolerated(c.tolist())
        )
        for v in PROBE_VARIANTS
    }  # fmt: skip
    claims = []
    for variant in ("sd", "sd-shared"):
        seeds = counts[variant].index.intersection(counts["sa"].index)
        k_sd, k_sa = counts[variant][seeds].tolist(), counts["sa"][seeds].tolist()
        claims.append(
            Claim(
                "linearisation",
                f"{LABELS[variant]} tolerates more leading ELU+1 layers than standard attention (post hoc)",
                f"S-D: first {PAPER_LINEAR['layers']} of {PAPER_LINEAR['of']} layers < 5 % PPL; SA collapses "
                "by layer 3",
                f"{exp.probe}, most leading layers within 5 % per seed: {LABELS[variant]} {k_sd}, SA {k_sa} "
                f"(of {n})",
                verdict_more_linear_layers(k_sd, k_sa, n),
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
                    f"{exp.probe}, first {k} of {n} layers, retrained (seed mean): {ours}",
                    verdict_retrained_linear(at_k.loc[at_k["variant"] == variant, "ppl change %"].tolist()),
                )
            )
    return claims


def _claims_realloc(realloc: pd.DataFrame) -> list[Claim]:
    if realloc.empty:
        return []
    claims = []
    for variant, sub in realloc[realloc["model"] == "reallocated"].groupby("variant", sort=False):
        saved, cost = sub["attn params saved %"].mean(), sub["ppl change %"].mean()
        claims.append(
            Claim(
                "reallocation",
                "head dims from the measured routing dimensions save attention parameters at a small PPL "
                f"cost ({LABELS[variant]})",
                "47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL",
                f"head dims {sub['head dims'].iloc[0]}: {saved:.0f} % fewer attention parameters, "
                f"PPL {signed(cost, 1)} % (seed mean)",
                verdict_reallocation(sub["attn params saved %"].tolist(), sub["ppl change %"].tolist()),
            )
        )
    return claims


def _mean(values: Sequence[float]) -> float:
    return float(pd.Series([float(v) for v in values], dtype=float).mean())


def _by_size(series: pd.Series) -> dict[str, list[float]]:
    """The values of a Series indexed by (size, seed), grouped by size."""
    return {size: group.tolist() for size, group in series.groupby(level=0, sort=False)}


def _means(values_by_size: Mapping[str, Sequence[float]]) -> str:
    """``size mean [low, high]`` over seeds for each size."""
    parts = []
    for size, values in values_by_size.items():
        e = estimate(list(values))
        interval = f" [{fixed(e.low, 2)}, {fixed(e.high, 2)}]" if math.isfinite(e.low) else ""
        parts.append(f"{size} {fixed(e.mean, 2)}{interval}")
    return ", ".join(parts)
