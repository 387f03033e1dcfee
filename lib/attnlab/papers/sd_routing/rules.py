"""The S-D routing paper's verdict rules (arXiv 2605.18826, docs/papers/sd-routing.md): numbers in, a
:class:`~attnlab.runner.verdicts.Verdict` out, each from one of :mod:`attnlab.runner.verdicts`' rules.

A claim made of parts ("in every pretrained model", "S-D and SA order them oppositely", "the saving, the
cost and each control") is :func:`attnlab.runner.composite.all_of` of its parts, each judged by its own rule.
A pretrained model is a fixed set of weights: its statistic (a share of heads, a mean energy) is judged
against many draws of Gaussian weights of the same shapes (:func:`~attnlab.runner.verdicts.rank_rule`; the
draws resampled from a pool of key groups, ``pretrained.resampled_null``), never against one draw. A claim of
trained models pairs them by (size, seed). Every threshold comes from :mod:`attnlab.runner.thresholds` (the
paper's own numbers from ``presets``); a row judged at a threshold fixed after a table of this paper had been
seen carries its verdict at the plain null beside it (:func:`attnlab.runner.thresholds.posthoc`). The
``claims`` module words the rows.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from attnlab.papers.sd_routing.presets import PAPER_REALLOCATION
from attnlab.runner import thresholds
from attnlab.runner.composite import all_of
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    EXACT,
    HOLDS,
    NOT_TESTABLE,
    PAIRED,
    SLOPE,
    Side,
    Verdict,
    check_count,
    check_within,
    equivalence_rule,
    every_unit,
    exact_rule,
    mean_rule,
    not_testable,
    paired_rule,
    rank_rule,
    share_rule,
    slope_rule,
)

# Thresholds and margins: the registry's (attnlab.runner.thresholds), the paper's numbers where it gives them.
MAJORITY = thresholds.value("sd_routing.MAJORITY")  # "dominates", "lower rank": the typical head, > 1/2
CHEAP_PCT = thresholds.value("sd_routing.CHEAP_PCT")  # "nearly free": equivalence margin, % PPL
CATASTROPHIC_PCT = thresholds.value("sd_routing.CATASTROPHIC_PCT")  # "catastrophic": a PPL increase above
LINEAR_TOLERANCE_PCT = thresholds.value("sd_routing.LINEAR_TOLERANCE_PCT")  # the paper's "< 5 % PPL"
STABLE_TOLERANCE = thresholds.value("sd_routing.STABLE_TOLERANCE")  # a real part counted as <= 0 (rounding)
MIN_SIZES = int(thresholds.value("sd_routing.MIN_SIZES"))  # a trend needs three sizes
MIN_SIZE_RATIO = thresholds.value("sd_routing.MIN_SIZE_RATIO")  # spanning this factor in parameters
ALLOCATION_MARGIN_PCT = thresholds.value("sd_routing.ALLOCATION_MARGIN_PCT")  # "as good as a control", % PPL
CLOSE_PCT = thresholds.value("sd_routing.CLOSE_PCT")  # "stays close to the baseline": the paper's 1.4 %
ONE_PLANE = thresholds.band("sd_routing.ONE_PLANE")  # head-mean ranks (rank units) counted as one plane
FEW_DIMENSIONS = thresholds.band("sd_routing.FEW_DIMENSIONS")  # and as routing "in 2-3 dimensions"
K = TypeVar("K", bound=Hashable)  # the name of a unit: a trained model (size, seed), a seed
DIVERGED = "gate: S-D without LayerNorm must not diverge"  # the rule column of the divergence verdicts


def every_model(parts: Mapping[str, Verdict]) -> Verdict:
    """A claim "in every pretrained model" (or every part of a set): :func:`all_of` of each model's verdict,
    showing the least clear model (the largest p) unless another decides; ``n`` counts the models."""
    if not parts:
        raise ValueError("every_model(): no models to judge")
    finite = {name: v.p for name, v in parts.items() if math.isfinite(v.p)}
    main = max(finite, key=finite.__getitem__) if finite else None
    return replace(all_of(parts, main=main), n=len(parts))


# Pretrained heads (the paper's per-head analysis) -----------------------------------------------------------


def verdict_energy_beyond_random(mean: float, random_means: Sequence[float]) -> Verdict:
    """Pretrained heads: "filtering dominates the spectral budget", in one model, from the mean over its heads
    of the filtering energy ||F||_F^2 / ||W||_F^2 and the same mean of many draws of Gaussian weights of the
    same shapes: :func:`rank_rule`, the model's mean beyond all but 2.5 % of the draws' (a fixed model is no
    sample of heads: its heads are a census, the draws its null). Gaussian forms centre on 1/2 (E tr(W^2) = 0
    for independent Wq, Wk), so a mean beyond them lies above 1/2 by more than Gaussian weights reach; the
    effect size (:func:`effect_size`) and the share of heads above 1/2 beside random weights' are shown in
    the row, not judged (Gaussian forms put most heads above 1/2 too)."""
    return rank_rule(mean, random_means, "above", what="the mean filtering energy")


def effect_size(observed: float, draws: Sequence[float]) -> float:
    """A fixed model's statistic in standard deviations of its null draws from their median (NaN without
    spread): the size a rank row shows beside its verdict."""
    xs = np.asarray(draws, float)
    sd = float(xs.std(ddof=1)) if len(xs) > 1 else math.nan
    return (observed - float(np.median(xs))) / sd if sd > 0 else math.nan


def verdict_at_offsets(means: Mapping[str, float], random_means: Mapping[str, Sequence[float]]) -> Verdict:
    """Pretrained heads of RoPE models: "filtering dominates" at every relative offset between query and key
    (the form R(offset) the model applies), from each (model, offset)'s mean filtering energy, named
    ``"<model> at <offset>"``, and each model's null means (``random_means`` by the same names: Gaussian
    weights rotated are Gaussian, so one null serves every offset): :func:`every_model` of a
    :func:`verdict_energy_beyond_random` per name; not testable without a RoPE model."""
    if not means:
        return not_testable("no pretrained model with rotary positions", n=0)
    missing = sorted(set(means) - set(random_means))
    if missing:
        raise ValueError(f"verdict_at_offsets(): no null draws for {missing}")
    return every_model(
        {name: verdict_energy_beyond_random(m, random_means[name]) for name, m in means.items()}
    )


def verdict_share_beyond_random(
    k: int, n: int, random_shares: Sequence[float], threshold: float = MAJORITY
) -> Verdict:
    """Pretrained heads: a share claim ("routing runs at lower rank than filtering") in one model, from its
    ``k`` of ``n`` heads with the property and the share of each of many draws of Gaussian weights of the
    same shapes. Both parts (:func:`all_of`): the share above ``threshold`` (:func:`share_rule`, Wilson
    interval over heads) and beyond the random draws' shares (:func:`rank_rule`)."""
    check_count("verdict_share_beyond_random", "the heads with the property (k)", k, n)
    check_within("verdict_share_beyond_random", "the random weights' shares", random_shares, 0.0, 1.0)
    if n < 1:
        return not_testable("no heads", n=0, null=threshold)
    return all_of({
        f"share above {threshold:g}": share_rule(k, n, threshold),
        "beyond random weights": rank_rule(k / n, random_shares, "above", what="the share"),
    })  # fmt: skip


def verdict_every_head_unstable(unstable: int, heads: int) -> Verdict:
    """Pretrained heads: "every head is dynamically unstable" (an eigenvalue of W with positive real part) in
    one model: a census of its fixed weights, so :func:`exact_rule` on the count of stable heads (holds at
    0: below 0.5; one stable head refutes it). Random weights are unstable in every head too; the claim is
    the paper's census, not a contrast with them (the row shows their share)."""
    check_count("verdict_every_head_unstable", "the unstable heads", unstable, heads)
    if heads < 1:
        return not_testable("no heads", n=0, null=0.5, rule=EXACT)
    return exact_rule(heads - unstable, 0.5, "below", n=heads, what="the count of stable heads")


# Sanity checks and LayerNorm --------------------------------------------------------------------------------


def verdict_eigenvalues_stable(max_real: Sequence[float]) -> Verdict:
    """Sanity check, S-D by construction (the paper's L = S - D, S antisymmetric, D positive diagonal): "every
    eigenvalue of L has real part <= 0", from each trained S-D model's largest real part over its heads:
    :func:`exact_rule`, the largest of them below ``STABLE_TOLERANCE`` (rounding; a convention fixed after a
    table had been seen, so the row also gives the verdict at 0); n = the models."""
    largest = max(max_real, default=math.nan)

    def at(bound: float) -> Verdict:
        return exact_rule(largest, bound, "below", n=len(max_real), what="the largest real part")

    return thresholds.posthoc("sd_routing.STABLE_TOLERANCE", at(STABLE_TOLERANCE), at(0.0))


def verdict_no_unstable_heads(unstable: int, heads: int) -> Verdict:
    """Sanity check, S-D with a shared projection by construction: "no head's model-space form W^T L W has an
    eigenvalue with positive real part", from the count of such heads among ``heads``: :func:`exact_rule`,
    holds when the count is 0 (below 0.5); not testable without heads."""
    check_count("verdict_no_unstable_heads", "the unstable heads", unstable, heads)
    if heads == 0:
        return not_testable("no model with a shared projection finished", n=0, null=0.5, rule=EXACT)
    return exact_rule(unstable, 0.5, "below", n=heads, what="the count of unstable heads")


def verdict_held_in_check(
    sd_gaps: Mapping[Hashable, float],
    sa_gaps: Mapping[Hashable, float],
    sd_diverged: int,
    sa_diverged: int,
) -> Verdict:
    """ "S-D trains without LayerNorm", where standard attention's unstable heads are "held in check by
    LayerNorm" (the paper's words), from each variant's degradation without LayerNorm (validation loss
    without minus with it, nats), by (size, seed), and the number of runs without LayerNorm that diverged:
    :func:`all_of` SA degrades without LayerNorm (:func:`mean_rule` above 0: LayerNorm has something to
    hold in check) and S-D degrades less than SA (:func:`paired_rule`, SA's degradation minus S-D's, paired
    by name, above 0). An S-D run that diverged refutes it; SA runs diverging where no S-D run did confirm
    it."""
    if any(
        isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0
        for c in (sd_diverged, sa_diverged)
    ):
        raise ValueError(
            "verdict_held_in_check(): the runs that diverged are counted by whole numbers >= 0; got "
            f"{sd_diverged!r}, {sa_diverged!r}"
        )
    if sd_diverged:
        return Verdict(DOES_NOT_HOLD, f"{sd_diverged} S-D run(s) without LayerNorm diverged",
                       n=len(sd_gaps), null=0.0, rule=DIVERGED)  # fmt: skip
    if sa_diverged:
        return Verdict(HOLDS, f"{sa_diverged} SA run(s) without LayerNorm diverged, no S-D run did",
                       n=len(sd_gaps), null=0.0, rule=DIVERGED)  # fmt: skip
    if not sd_gaps or not sa_gaps:
        return not_testable("no pair of runs without LayerNorm", n=0, null=0.0)
    return all_of({
        "SA degrades without LayerNorm": mean_rule(list(sa_gaps.values()), "above", 0.0),
        "S-D degrades less than SA": paired_rule(sa_gaps, sd_gaps, "above", 0.0),
    }, main="S-D degrades less than SA")  # fmt: skip


# Spectral cascade (the paper's cascade figure) --------------------------------------------------------------


def _band(values_by_size: Mapping[str, Sequence[float]], low: float, high: float) -> Verdict:
    """Every size's mean within [low, high] (per size, its seeds' values): :func:`all_of` of
    :func:`every_unit` below ``high`` and above ``low`` (the rank measures of an antisymmetric matrix are at
    least 2, so ``low`` rarely binds). Evidence: the upper test's weakest size unless the lower decides."""
    if not values_by_size:
        return not_testable("no size to measure", n=0, null=high)
    upper = every_unit(values_by_size, "below", high)
    lower = every_unit(values_by_size, "above", low)
    return all_of({f"below {high:g}": upper, f"above {low:g}": lower})


def verdict_one_plane(values_by_size: Mapping[str, Sequence[float]]) -> Verdict:
    """Spectral cascade: "layer 0's routing converges to one rotation plane" (the paper: effective rank 2 at
    7M-355M), from layer 0's head-mean routing measure in rank units per size and seed: every size within
    ``ONE_PLANE`` (:func:`_band`)."""
    return _band(values_by_size, *ONE_PLANE)


def verdict_few_dimensions(values_by_size: Mapping[str, Sequence[float]]) -> Verdict:
    """Spectral cascade: "middle layers route in 2-3 dimensions", from the middle layers' mean routing measure
    in rank units per size (sizes with middle layers) and seed: every size within ``FEW_DIMENSIONS``
    (:func:`_band`); not testable when no size has middle layers."""
    if not values_by_size:
        return not_testable("no size has middle layers", n=0, null=FEW_DIMENSIONS[1])
    return _band(values_by_size, *FEW_DIMENSIONS)


def verdict_below_random(
    values_by_size: Mapping[str, Sequence[float]], random_by_size: Mapping[str, float]
) -> Verdict:
    """The band claims at their plain null: every size's routing measure below that of random antisymmetric
    matrices of its head dim (``random_by_size``, rank units; :func:`every_unit` on the differences below
    0): low rank without a chosen band."""
    diffs = {
        s: [v - random_by_size[s] for v in vs] for s, vs in values_by_size.items() if s in random_by_size
    }
    if not diffs:
        return not_testable("no size with a random baseline", n=0, null=0.0)
    return every_unit(diffs, "below", 0.0)


def verdict_band_beyond_sa(
    key: str,
    values_by_size: Mapping[str, Sequence[float]],
    random_by_size: Mapping[str, float],
    sd: Mapping[K, float],
    sa: Mapping[K, float],
    what: str,
) -> Verdict:
    """A cascade band claim (``key``: ``"sd_routing.ONE_PLANE"``, :func:`verdict_one_plane`, or
    ``"sd_routing.FEW_DIMENSIONS"``, :func:`verdict_few_dimensions`) judged against SA's routing part
    (:func:`verdict_beyond_sa`, below it); the band was fixed after a table had been seen, so the row also
    gives the verdict at the plain null (:func:`verdict_below_random` in place of the band)."""
    band = verdict_one_plane if key == "sd_routing.ONE_PLANE" else verdict_few_dimensions
    at_band = verdict_beyond_sa(band(values_by_size), sd, sa, "below", what)
    plain = verdict_beyond_sa(verdict_below_random(values_by_size, random_by_size), sd, sa, "below", what)
    return thresholds.posthoc(key, at_band, plain)


def verdict_last_layers_expand(margins: Sequence[float]) -> Verdict:
    """Spectral cascade: "the last layers expand" (10+ planes), from the margin of the last layer's routing
    measure (rank units) over the larger of layer 0's and the middle layers' mean, one per trained model
    (size, seed): :func:`mean_rule` above 0."""
    if not margins:
        return not_testable("no S-D model finished", n=0, null=0.0)
    return mean_rule(margins, "above", 0.0)


def verdict_beyond_sa(
    sd_verdict: Verdict, sd: Mapping[K, float], sa: Mapping[K, float], side: Side, what: str
) -> Verdict:
    """A cascade claim judged against standard attention's own routing part (the model-space R of the SA
    variant with the same LayerNorm) under the same measure (a reviewer's control: SA's R is low rank too):
    :func:`all_of` the S-D claim itself (``sd_verdict``) and :func:`paired_rule` on S-D's value minus SA's,
    paired by (size, seed), on ``side`` of 0 (``"below"``: S-D's routing is lower rank than SA's;
    ``"above"``: S-D's last layers expand more). Where the S-D part holds and the SA part does not, the reason
    says plainly that ``what`` is not specific to S-D."""
    common = [u for u in sd if u in sa]
    if not common:
        vs_sa = not_testable("no SA model paired with the S-D models", n=0, null=0.0)
    else:
        vs_sa = paired_rule({u: sd[u] for u in common}, {u: sa[u] for u in common}, side, 0.0)
    verdict = all_of({"S-D": sd_verdict, "S-D vs SA's routing part": vs_sa})
    if sd_verdict.word == HOLDS and vs_sa.word != HOLDS:
        sa_mean = float(np.mean([sa[u] for u in common])) if common else math.nan
        why = f"{what} is not specific to S-D: SA's routing part shows it too (SA mean {sa_mean:.2f}); "
        verdict = replace(verdict, why=why + verdict.why)
    return verdict


# Scale trend ------------------------------------------------------------------------------------------------


def verdict_grows_with_size(
    params: Sequence[float], fractions: Mapping[Hashable, Sequence[float]]
) -> Verdict:
    """Scale trend (the paper: 33 % at 18M -> 92 % at 355M): "the fraction of layers at minimum rank grows
    with size", from each seed's fractions at the sizes with ``params`` parameters: :func:`slope_rule`, one
    slope per seed against log10(parameters) (fraction per decade), above 0. Not testable with fewer than
    ``MIN_SIZES`` sizes or a span under ``MIN_SIZE_RATIO`` x (testability conventions fixed after a table
    had been seen: the reason says so, and, for the span, gives the slope rule's verdict without it), or with
    every seed's slope equal (e.g. every size at 0 % or 100 %)."""
    xs = [float(p) for p in params]
    if not all(0 < x < math.inf for x in xs):
        raise ValueError(f"verdict_grows_with_size(): parameter counts must be positive; got {xs}")
    for seed, values in fractions.items():
        check_within("verdict_grows_with_size", f"the fractions of seed {seed!r}", values, 0.0, 1.0)
    n = len(fractions)
    distinct = len(set(xs))
    if distinct < MIN_SIZES:  # a line through two sizes has no test at all: no verdict without the convention
        t = thresholds.REGISTRY["sd_routing.MIN_SIZES"]
        why = (f"{distinct} sizes; a trend needs {MIN_SIZES} (a testability convention, MIN_SIZES, fixed in "
               f"{t.fixed_in} after table {t.seen_before} had been seen)")  # fmt: skip
        return not_testable(why, n=n, null=0.0, rule=SLOPE)
    if not fractions:
        return not_testable("no seed has every size", n=0, null=0.0, rule=SLOPE)
    logs = np.log10(xs)
    plain = slope_rule(logs, fractions, "above", 0.0, min_points=MIN_SIZES)
    if max(xs) / min(xs) < MIN_SIZE_RATIO:
        why = f"the sizes span {max(xs) / min(xs):.3g}x in parameters; a trend needs {MIN_SIZE_RATIO:g}x"
        at_ratio = not_testable(why, n=n, null=0.0, rule=SLOPE)
        return thresholds.posthoc("sd_routing.MIN_SIZE_RATIO", at_ratio, plain)
    return plain


# Filtering collapse -----------------------------------------------------------------------------------------


def verdict_cheap(changes: Sequence[float]) -> Verdict:
    """Filtering collapse, S-D head space: "truncating D to one scalar per head is nearly free" (the paper:
    +0.3 PPL), from the PPL change (%) per trained model (size, seed): :func:`equivalence_rule` inside
    +-``CHEAP_PCT``. How far D moved from its initialisation is shown in the row, not a gate: a small change
    is the claim itself, whatever made it small."""
    if not changes:
        return not_testable("no S-D model finished", n=0, null=0.0, margin=CHEAP_PCT)
    return equivalence_rule(changes, CHEAP_PCT)


def verdict_catastrophic(changes: Sequence[float]) -> Verdict:
    """Filtering collapse, S-D head space: "removing routing (S = 0) is catastrophic", from the PPL change (%)
    per trained model (size, seed): :func:`mean_rule` above ``CATASTROPHIC_PCT`` (and, where the registry
    calls that threshold post hoc, the verdict above 0 beside it)."""
    if not changes:
        return not_testable("no S-D model finished", n=0, null=CATASTROPHIC_PCT)
    return thresholds.posthoc(
        "sd_routing.CATASTROPHIC_PCT",
        mean_rule(changes, "above", CATASTROPHIC_PCT),
        mean_rule(changes, "above", 0.0),
    )


def verdict_inversion(sd_diffs: Sequence[float], sa_diffs: Sequence[float]) -> Verdict:
    """Filtering collapse, the same model-space truncations on both: "S-D and SA order the two truncations
    oppositely" (S-D: filtering to a scalar costs less than removing routing; SA: more), from the PPL change
    of filtering to a scalar minus that of removing routing (%), one per trained model (size, seed), for
    each: :func:`all_of` :func:`mean_rule` below 0 for S-D and above 0 for SA."""
    if not sd_diffs or not sa_diffs:
        return not_testable("no pair of variants finished", n=0, null=0.0)
    return all_of({"S-D": mean_rule(sd_diffs, "below", 0.0), "SA": mean_rule(sa_diffs, "above", 0.0)})


# Linearisation ----------------------------------------------------------------------------------------------


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


def verdict_more_linear_layers(
    k_sd: Mapping[Hashable, int], k_sa: Mapping[Hashable, int], n_layers: int
) -> Verdict:
    """Linearisation, post hoc (the paper: S-D's first 7 of 12 layers within 5 %, SA collapses by layer 3):
    "S-D tolerates more leading ELU+1 layers than standard attention", from each variant's :func:`tolerated`
    count by seed: :func:`paired_rule`, S-D minus SA paired by seed, above 0. Not testable when both tolerate
    every layer in every seed (a ceiling: the counts cannot differ)."""
    for name, counts in (("k_sd", k_sd), ("k_sa", k_sa)):
        for seed, k in counts.items():
            check_count("verdict_more_linear_layers", f"{name}[{seed!r}]", k, n_layers, low=-1)
    if not k_sd and not k_sa:
        return not_testable("no pair of models", n=0, null=0.0)
    if set(k_sd) == set(k_sa) and all(k_sd[s] == k_sa[s] == n_layers for s in k_sd):
        why = f"both stay within {LINEAR_TOLERANCE_PCT:g} % with every layer replaced (a ceiling)"
        return replace(paired_rule(k_sd, k_sa, "above", 0.0), word=NOT_TESTABLE, why=why)
    return paired_rule(k_sd, k_sa, "above", 0.0)


def verdict_retrained_linear(changes: Sequence[float]) -> Verdict:
    """Linearisation, retrained (the paper: ELU+1 on the first 4 of 12 layers within 1.4 % of the baseline):
    "S-D with ELU+1 in the first third of its layers stays close to the baseline", from the retrained model's
    PPL change (%) per seed: :func:`equivalence_rule` inside +-``CLOSE_PCT``; not testable without a
    retrained model."""
    if not changes:
        return not_testable("no retrained model finished", n=0, null=0.0, margin=CLOSE_PCT)
    return equivalence_rule(changes, CLOSE_PCT)


# Reallocation -----------------------------------------------------------------------------------------------


def held_at_bounds(dims: Sequence[int], floor: int, base: int) -> str:
    """Why a measured allocation of head ``dims`` leaves nothing to compare with a control of the same total,
    or "" when it does: when at least half of its layers sit at the smallest head dim ``floor`` or at the
    uniform one ``base`` (the rule's clamp), the allocation is mostly the clamp's, not the measurement's, and
    a control can only move the few planes left (the cpu run's 6 4 4 4 at a floor of 4 moved one plane)."""
    held = sum(1 for d in dims if d <= floor or d >= base)
    if not dims or 2 * held < len(dims):
        return ""
    return (f"{held} of {len(dims)} measured head dims sit at the clamp (floor {floor}, uniform {base}): "
            "the controls can only move the planes left")  # fmt: skip


def verdict_allocation_control(
    measured: Mapping[Hashable, float], control: Mapping[Hashable, float], same_dims: bool, held: str = ""
) -> Verdict:
    """Reallocation's control (a reviewer's): "the measured allocation is at least as good as a control with
    the same total head dims" (spread evenly, or the measured dims shuffled across layers), from the PPL
    change (%) of each retrained model by seed: :func:`paired_rule`, measured minus control paired by seed
    (seeds where both finished), below ``ALLOCATION_MARGIN_PCT`` (non-inferiority; fixed after a table had
    been seen, so the verdict below 0 is given beside it). Not testable when the measured dims sit mostly at
    the clamp (``held``, :func:`held_at_bounds`'s reason), when the control's head dims equal the measured
    ones (no allocation to compare) or no pair finished."""
    if held:
        return not_testable(held, n=len(measured), null=ALLOCATION_MARGIN_PCT, rule=PAIRED)
    if same_dims:
        why = "the control's head dims equal the measured ones: no allocation to compare"
        return not_testable(why, n=len(measured), null=ALLOCATION_MARGIN_PCT, rule=PAIRED)
    seeds = [s for s in measured if s in control]
    if not seeds:
        return not_testable("no control retrained", n=0, null=ALLOCATION_MARGIN_PCT, rule=PAIRED)
    pairs = {s: measured[s] for s in seeds}, {s: control[s] for s in seeds}
    return thresholds.posthoc(
        "sd_routing.ALLOCATION_MARGIN_PCT",
        paired_rule(*pairs, "below", ALLOCATION_MARGIN_PCT),
        paired_rule(*pairs, "below", 0.0),
    )


def verdict_reallocation(
    saved: Sequence[float], cost: Sequence[float], controls: Mapping[str, Verdict] | None = None
) -> Verdict:
    """Reallocation (the paper: 47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL): "head dims from
    measured rank save attention parameters at a small PPL cost", from the reallocated model's attention
    parameters saved (%) and PPL change (%) per seed: :func:`all_of` the cost's :func:`mean_rule` below the
    paper's largest, +8.4 %; the saving (the same head dims in every seed, so exact: :func:`exact_rule`) at
    least the paper's smallest, 47 % (a measured allocation that saves nothing refutes it); and each
    control's verdict in ``controls`` (:func:`verdict_allocation_control`)."""
    bound = PAPER_REALLOCATION["ppl_pct"][1]
    check_within("verdict_reallocation", "the attention parameters saved (%)", saved, -math.inf, 100.0)
    if not cost:
        return not_testable("no reallocated model finished", n=0, null=bound)
    saved_mean = float(np.mean([float(s) for s in saved]))
    saving = exact_rule(saved_mean, PAPER_REALLOCATION["params_saved_pct"][0], "above", n=len(saved),
                        what="the attention parameters saved (%)")  # fmt: skip
    return all_of({"cost": mean_rule(cost, "below", bound), "saving": saving, **(controls or {})})


def verdict_grows_with_depth(margins: Sequence[float]) -> Verdict:
    """Reallocation's pattern (the paper: "e.g. 8 early, 64 late"): "the measured allocation grows with
    depth", from each trained model's (size, seed) routing dimensions (``energy_dims``, head means) of its
    late layers minus its early layers (the last and first halves): :func:`mean_rule` above 0; judged
    against SA's routing part with :func:`verdict_beyond_sa`."""
    if not margins:
        return not_testable("no S-D model with two layers finished", n=0, null=0.0)
    return mean_rule(margins, "above", 0.0)
