"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the paper's claims
judged on this run's measurements.

Each claim's rule is a ``verdict_*`` function of plain numbers returning a
:class:`~attnlab.runner.verdicts.Verdict` from one of :mod:`attnlab.runner.verdicts`' rules (its word and
reason, and the evidence: the estimate it rests on, its 95% interval, how many independent units, the null,
margin or threshold it is judged against, the detectable effect and the rule's name); :func:`claims` takes the
notebook's tables by name (:class:`Evidence`) and writes each claims row. Every claim is judged against a
control the reader can see: pretrained heads against Gaussian weights of the same shapes, S-D without
LayerNorm against SA without LayerNorm (paired by size and seed), the cascade beside random antisymmetric
matrices (shown in the row, not part of the rule), S-D's ordering of the two truncations against SA's under
the same (model-space) truncation. Rows true by construction say "sanity check". The thresholds and margins
are named constants below, each with its source (the paper's numbers where it gives them; ours otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    PROBE_VARIANTS,
    REALLOC_CONTROLS,
    SD_VARIANTS,
)
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS, describe, rank_equivalent, sd_heads
from attnlab.runner.claims import Claim, fixed, signed
from attnlab.runner.stats import LEVEL, binomial_interval, estimate
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    EXACT,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PAIRED,
    SHARE,
    SLOPE,
    Side,
    Verdict,
    equivalence_rule,
    every_unit,
    exact_rule,
    mean_rule,
    not_testable,
    paired_rule,
    share_rule,
    slope_rule,
)

if TYPE_CHECKING:
    from attnlab.papers.sd_routing.experiment import Runs, SDExperiment

# Thresholds, margins and smallest effects (the paper gives none unless said).
MAJORITY = 0.5  # "filtering dominates", "routing runs at lower rank": claims about the typical head, > 1/2
CHEAP_PCT = 2.0  # equivalence margin of "nearly free" (+-2 % PPL; ours: the paper's +0.3 PPL is ~1 %)
CATASTROPHIC_PCT = 20.0  # "catastrophic": a PPL increase above 20 % (ours)
LINEAR_TOLERANCE_PCT = 5.0  # the paper's "< 5 % PPL" for leading linear layers (post hoc count)
CLOSE_PCT = PAPER_LINEAR["elu_pct"]  # equivalence margin of "stays close to the baseline": the paper's 1.4 %
STABLE_TOLERANCE = 1e-6  # the largest real part of an eigenvalue of L = S - D counted as <= 0 (rounding)
ONE_PLANE = (1.5, MIN_RANK)  # the head-mean ranks (in rank units) counted as one rotation plane (ours)
FEW_DIMENSIONS = (1.5, 3.5)  # and as routing "in 2-3 dimensions" (ours: 2-3 dimensions with half a plane)
D_MOVED_CV = 0.25  # gate (ours): D "moved" from its initialisation (all ones) when its mean CV is above this
MIN_SIZES = 3  # a trend needs three sizes: two points always fit a line (the project's convention)
MIN_SIZE_RATIO = 8.0  # and sizes spanning at least 8x in parameters (the project's convention; the paper's
# trend runs 18M -> 355M, 20x; our cpu sizes are 2.3x apart)
ALLOCATION_MARGIN_PCT = 1.0  # "at least as good as a control of the same total head dims": the measured
# allocation's PPL change minus the control's, by seed, below +1 % PPL (ours, fixed before the run)
DIVERGED = "gate: S-D without LayerNorm must not diverge"  # the rule column of the divergence gate
SANITY = "sanity check (true by construction): "
SMOKE = "smoke scale judges nothing (tiny models, a few dozen steps, one seed)"


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """The notebook's results, by name (keyword arguments only; :meth:`SDExperiment.claims` judges them).

    ``runs``: the trained models by (size, variant, seed), diverged runs left out; ``losses``: final
    validation loss per (size, variant, seed) (``final_losses``); ``heads``: every head's routing/filtering
    statistics beside its random baseline (``head_analysis``); ``cascade`` / ``baseline``: per-layer routing
    measures and their random antisymmetric baseline (``cascade``, ``cascade_baseline``); ``trend``: the
    fraction of layers at minimum rank per (measure, size, variant, seed) (``scale_trend``); ``drift``: how
    far D moved (``drift``); ``collapse``: PPL change of the truncations (``collapse``); ``linear``: ELU+1
    linearisation (``linearisation``); ``realloc``: the head-dim reallocation (``reallocation``)."""

    runs: Runs
    losses: pd.DataFrame
    heads: pd.DataFrame
    cascade: pd.DataFrame
    baseline: pd.DataFrame
    trend: pd.DataFrame
    drift: pd.DataFrame
    collapse: pd.DataFrame
    linear: pd.DataFrame
    realloc: pd.DataFrame


# Verdicts -------------------------------------------------------------------------------------------------


def _combine(parts: Mapping[str, Verdict]) -> Verdict:
    """A conjunction of claims (every part must hold), naming the parts in the reason: does not hold when a
    part does not, not testable when a part is not, holds when every part holds, inconclusive otherwise. The
    evidence columns are those of the part that decides (the first such part; the first part when all hold),
    so a row's interval always agrees with its word."""
    for word in (DOES_NOT_HOLD, NOT_TESTABLE, INCONCLUSIVE):
        which = [name for name, v in parts.items() if v.word == word]
        if which:
            why = "; ".join(f"{name}: {parts[name].why}" for name in which)
            return replace(parts[which[0]], why=why)
    first = next(iter(parts.values()))
    return replace(first, why="; ".join(f"{name}: {v.why}" for name, v in parts.items()))


def verdict_share_beyond_random(
    trained: Mapping[str, tuple[int, int]], random: Mapping[str, float], threshold: float = MAJORITY
) -> Verdict:
    """Pretrained heads (the paper's per-head analysis): a share claim ("filtering dominates", "routing runs
    at lower rank than filtering") in every pretrained model, beyond the same share for Gaussian weights of
    the same shapes. ``trained``: per model (heads with the property, heads); ``random``: per model
    the random-weight share (0-1, one seeded draw, taken as fixed). Each model's share is judged by
    :func:`share_rule` against the larger of ``threshold`` (the claim's, e.g. a majority) and its random
    share; across models an intersection-union test, as :func:`every_unit`: holds when every model's 95%
    Wilson interval clears its null; does not hold when one model's interval at 1 - 0.05/k (k models) lies
    below it; not testable when a model's null is the ceiling 1 and its share is 1 too (nothing can be
    beyond); otherwise inconclusive, naming the open models. Evidence: the model whose interval reaches
    least far above its null (its share, interval, heads and null)."""
    if not trained:
        raise ValueError("verdict_share_beyond_random() needs at least one model")
    if set(trained) != set(random):
        raise ValueError(
            f"trained and random shares name different models: {sorted(trained)}, {sorted(random)}"
        )
    level = 1 - (1 - LEVEL) / len(trained)
    nulls = {m: max(threshold, float(random[m])) for m in trained}
    per = {m: share_rule(k, n, nulls[m]) for m, (k, n) in trained.items()}
    ceiling = [m for m, (k, n) in trained.items() if nulls[m] >= 1.0 and k == n]
    eps = 1e-9  # the Wilson bound of a share of 0 or 1 is 0 or 1 up to rounding
    refuted = [
        m for m, (k, n) in trained.items() if n and binomial_interval(k, n, level).high < nulls[m] - eps
    ]
    weakest = min(per, key=lambda m: per[m].low - nulls[m] if math.isfinite(per[m].low) else -math.inf)
    rule = f"{SHARE}, in every model (null: the larger of {threshold:g} and the random-weight share)"
    evidence = replace(per[weakest], rule=rule)

    def named(models: list[str]) -> str:
        return ", ".join(
            f"{m} (vs its random-weight share {nulls[m]:.3g})" if nulls[m] > threshold else
            f"{m} (vs the threshold {threshold:g})" for m in models
        )  # fmt: skip

    if refuted:  # the evidence: the first refuted model (its 95% interval lies below its null too)
        why = f"the 95% interval lies below the null in {named(refuted)}"
        return replace(per[refuted[0]], word=DOES_NOT_HOLD, why=why, rule=rule)
    if ceiling:
        why = (
            "random weights of the same shapes have it in every head too (a ceiling) in "
            f"{', '.join(ceiling)}: trained heads cannot be beyond them"
        )
        return replace(evidence, word=NOT_TESTABLE, why=why)
    untestable = [m for m, v in per.items() if v.word == NOT_TESTABLE]
    if untestable:
        return replace(evidence, word=NOT_TESTABLE, why=f"no heads in {', '.join(untestable)}")
    open_models = [m for m, v in per.items() if v.word != HOLDS]
    if not open_models:
        return replace(
            evidence, word=HOLDS, why="beyond the threshold and the random-weight share in every model"
        )
    why = f"the 95% interval contains the null in {named(open_models)}; detectable {evidence.detectable:.3g}"
    return replace(evidence, word=INCONCLUSIVE, why=why)


def verdict_energy_beyond_random(
    trained: Mapping[str, Mapping[Hashable, float]],
    random: Mapping[str, Mapping[Hashable, float]],
    threshold: float = MAJORITY,
) -> Verdict:
    """Pretrained heads (the paper's per-head analysis): "filtering dominates the spectral budget", from each
    model's filtering energy ||F||_F^2 / ||W||_F^2 per head, keyed by (layer, head), beside Gaussian weights
    of the same shapes (the same keys). The share of heads above 1/2 sits at the centre of the random null
    (Gaussian forms give energies around 1/2), so the verdict compares the distributions' means: in every
    model both parts must hold (:func:`_combine`), the trained heads' mean energy above ``threshold``
    (:func:`mean_rule` over heads) and above the random heads' mean (:func:`paired_rule`, trained minus random
    by (layer, head): the random heads are independent draws of the same shapes, so the pairing is arbitrary
    and the paired t interval is a two-sample interval of the difference of the means). Heads are the units,
    as in the share rule. Evidence: the deciding part's."""
    if not trained:
        raise ValueError("verdict_energy_beyond_random() needs at least one model")
    if set(trained) != set(random):
        raise ValueError(
            f"trained and random heads name different models: {sorted(trained)}, {sorted(random)}"
        )
    parts: dict[str, Verdict] = {}
    for model, energies in trained.items():
        parts[f"{model}, mean energy above {threshold:g}"] = mean_rule(
            list(energies.values()), "above", threshold
        )
        parts[f"{model}, above random weights"] = paired_rule(energies, random[model], "above", 0.0)
    return _combine(parts)


def verdict_every_head_unstable(
    trained: Mapping[str, tuple[int, int]], random: Mapping[str, float]
) -> Verdict:
    """Pretrained heads: "every head is dynamically unstable" (an eigenvalue of W with positive real part),
    per model (unstable heads, heads), beside the random-weight share (0-1). Every head is a census of the
    model's fixed weights, so a model with a stable head refutes it exactly (:func:`exact_rule` on the count
    of stable heads); otherwise the share must be beyond the random-weight share
    (:func:`verdict_share_beyond_random` with threshold 0): not testable when random weights are unstable in
    every head too (a ceiling)."""
    if not trained:
        raise ValueError("verdict_every_head_unstable() needs at least one model")
    for m, (k, n) in trained.items():
        if k < n:
            return exact_rule(n - k, 0.5, "below", n=n, what=f"{m}: the count of stable heads")
    return verdict_share_beyond_random(trained, random, threshold=0.0)


def verdict_eigenvalues_stable(max_real: Sequence[float]) -> Verdict:
    """Sanity check, S-D by construction: "every eigenvalue of L = S - D has real part <= 0", from each
    trained S-D model's largest real part over its heads: :func:`exact_rule`, holds when the largest of them
    lies below ``STABLE_TOLERANCE`` (rounding); not testable with no S-D model. n = the models."""
    largest = max(max_real, default=math.nan)
    return exact_rule(largest, STABLE_TOLERANCE, "below", n=len(max_real), what="the largest real part")


def verdict_no_unstable_heads(unstable: int, heads: int) -> Verdict:
    """Sanity check, S-D with a shared projection by construction: "no head's model-space form W^T L W has an
    eigenvalue with positive real part", from the count of such heads among ``heads``: :func:`exact_rule`,
    holds when the count is 0 (below 0.5); not testable without heads."""
    if heads == 0:
        return not_testable("no model with a shared projection finished", n=0, null=0.5, rule=EXACT)
    return exact_rule(unstable, 0.5, "below", n=heads, what="the count of unstable heads")


def verdict_trains_without_layernorm(
    sd_gaps: Mapping[Hashable, float],
    sa_gaps: Mapping[Hashable, float],
    sd_diverged: int,
    sa_diverged: int,
) -> Verdict:
    """ "S-D trains without LayerNorm (where standard attention suffers)", from the loss increase without vs
    with LayerNorm (%) of S-D and of SA, by (size, seed), and the number of runs without LayerNorm that
    diverged. Gates (kept): an S-D run without LayerNorm diverged: does not hold; only SA runs diverged:
    holds. Otherwise :func:`paired_rule`: SA's gap minus S-D's, paired by name, must lie above 0."""
    if sd_diverged:
        return Verdict(DOES_NOT_HOLD, f"{sd_diverged} S-D run(s) without LayerNorm diverged",
                       n=len(sd_gaps), null=0.0, rule=DIVERGED)  # fmt: skip
    if sa_diverged:
        return Verdict(HOLDS, f"{sa_diverged} SA run(s) without LayerNorm diverged, no S-D run did",
                       n=len(sd_gaps), null=0.0, rule=DIVERGED)  # fmt: skip
    if not sd_gaps and not sa_gaps:
        return not_testable("no pair of runs without LayerNorm", n=0, null=0.0)
    return paired_rule(sa_gaps, sd_gaps, "above", 0.0)


def _band(values_by_size: Mapping[str, Sequence[float]], low: float, high: float) -> Verdict:
    """Every size's mean within [low, high] (per size, its seeds' values): :func:`every_unit` below ``high``
    and above ``low``, both must hold (:func:`_combine`; the rank measures of an antisymmetric matrix are at
    least 2, so ``low`` rarely binds). Evidence: the deciding test's weakest size (the upper test's when
    both hold)."""
    if not values_by_size:
        return not_testable("no size to measure", n=0, null=high)
    upper = every_unit(values_by_size, "below", high)
    lower = every_unit(values_by_size, "above", low)
    v = _combine({f"below {high:g}": upper, f"above {low:g}": lower})
    if v.word == HOLDS:
        return replace(v, why=f"every size's 95% interval lies inside [{low:g}, {high:g}]")
    return v


def verdict_one_plane(values_by_size: Mapping[str, Sequence[float]]) -> Verdict:
    """Spectral cascade (the paper's cascade figure): "layer 0's routing converges to one rotation plane",
    from layer 0's head-mean routing measure in rank units per size and seed: every size within
    ``ONE_PLANE`` (:func:`_band`)."""
    return _band(values_by_size, *ONE_PLANE)


def verdict_few_dimensions(values_by_size: Mapping[str, Sequence[float]]) -> Verdict:
    """Spectral cascade: "middle layers route in 2-3 dimensions", from the middle layers' mean routing measure
    in rank units per size (sizes with middle layers) and seed: every size within ``FEW_DIMENSIONS``
    (:func:`_band`); not testable when no size has middle layers."""
    if not values_by_size:
        return not_testable("no size has middle layers", n=0, null=FEW_DIMENSIONS[1])
    return _band(values_by_size, *FEW_DIMENSIONS)


def verdict_last_layers_expand(margins: Sequence[float]) -> Verdict:
    """Spectral cascade: "the last layers expand", from the margin of the last layer's routing measure (rank
    units) over the larger of layer 0's and the middle layers' mean, one per trained model (size, seed):
    :func:`mean_rule` above 0."""
    if not margins:
        return not_testable("no S-D model finished", n=0, null=0.0)
    return mean_rule(margins, "above", 0.0)


def verdict_grows_with_size(
    params: Sequence[float], fractions: Mapping[Hashable, Sequence[float]]
) -> Verdict:
    """Scale trend (the paper: 33 % at 18M -> 92 % at 355M): "the fraction of layers at minimum rank grows
    with size", from each seed's fractions at the sizes with ``params`` parameters: :func:`slope_rule`, one
    slope per seed against log10(parameters) (fraction per decade), above 0. Not testable with fewer than
    ``MIN_SIZES`` sizes or a span under ``MIN_SIZE_RATIO`` x, or with every seed's slope equal (e.g. every
    size at 0 % or 100 %)."""
    xs = [float(p) for p in params]
    n = len(fractions)
    if len(set(xs)) < MIN_SIZES:
        return not_testable(f"{len(set(xs))} sizes; a trend needs {MIN_SIZES}", n=n, null=0.0, rule=SLOPE)
    if max(xs) / min(xs) < MIN_SIZE_RATIO:
        why = f"the sizes span {max(xs) / min(xs):.3g}x in parameters; a trend needs {MIN_SIZE_RATIO:g}x"
        return not_testable(why, n=n, null=0.0, rule=SLOPE)
    if not fractions:
        return not_testable("no seed has every size", n=0, null=0.0, rule=SLOPE)
    return slope_rule(np.log10(xs), fractions, "above", 0.0, min_points=MIN_SIZES)


def verdict_cheap(changes: Sequence[float], d_cv: float) -> Verdict:
    """Filtering collapse, S-D head space: "truncating D to one scalar per head is nearly free" (the paper:
    +0.3 PPL), from the PPL change (%) per (size, seed): :func:`equivalence_rule` inside +-``CHEAP_PCT``.
    Gate (kept): not testable when D barely left its initialisation (mean CV <= ``D_MOVED_CV``), where the
    truncation is close to a no-op by construction (the evidence columns keep the equivalence test's)."""
    if not changes:
        return not_testable("no S-D model finished", n=0, null=0.0, margin=CHEAP_PCT)
    v = equivalence_rule(changes, CHEAP_PCT)
    if not d_cv > D_MOVED_CV:
        why = f"D stayed near its initialisation (CV {d_cv:.2f} <= {D_MOVED_CV:g}): "
        why += "truncating it is nearly a no-op"
        return replace(v, word=NOT_TESTABLE, why=why)
    return v


def verdict_catastrophic(changes: Sequence[float]) -> Verdict:
    """Filtering collapse, S-D head space: "removing routing (S = 0) is catastrophic", from the PPL change (%)
    per (size, seed): :func:`mean_rule` above ``CATASTROPHIC_PCT``."""
    if not changes:
        return not_testable("no S-D model finished", n=0, null=CATASTROPHIC_PCT)
    return mean_rule(changes, "above", CATASTROPHIC_PCT)


def verdict_inversion(sd_diffs: Sequence[float], sa_diffs: Sequence[float]) -> Verdict:
    """Filtering collapse, the same model-space truncations on both: "S-D and SA order the two truncations
    oppositely" (S-D: filtering to a scalar costs less than removing routing; SA: more), from the PPL change
    of filtering to a scalar minus that of removing routing (%), one per trained model (size, seed), for each.
    Both parts must hold (:func:`_combine`): :func:`mean_rule` below 0 for S-D and above 0 for SA. Evidence:
    the deciding part's (S-D's differences when both hold)."""
    if not sd_diffs or not sa_diffs:
        return not_testable("no pair of variants finished", n=0, null=0.0)
    sd = mean_rule(sd_diffs, "below", 0.0)
    sa = mean_rule(sa_diffs, "above", 0.0)
    return _combine({"S-D": sd, "SA": sa})


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
    every layer in every seed (a ceiling)."""
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


def verdict_allocation_control(
    measured: Mapping[Hashable, float], control: Mapping[Hashable, float], same_dims: bool
) -> Verdict:
    """Reallocation's control (a reviewer's): "the measured allocation is at least as good as a control with
    the same total head dims" (spread evenly, or the measured dims shuffled across layers), from the PPL
    change (%) of each retrained model by seed: :func:`paired_rule`, measured minus control paired by seed
    (seeds where both finished), below ``ALLOCATION_MARGIN_PCT`` (non-inferiority). Not testable when the
    control's head dims equal the measured ones (no allocation to compare) or no pair finished."""
    if same_dims:
        why = "the control's head dims equal the measured ones: no allocation to compare"
        return not_testable(why, n=len(measured), null=ALLOCATION_MARGIN_PCT, rule=PAIRED)
    seeds = [s for s in measured if s in control]
    if not seeds:
        return not_testable("no control retrained", n=0, null=ALLOCATION_MARGIN_PCT, rule=PAIRED)
    pairs = {s: measured[s] for s in seeds}, {s: control[s] for s in seeds}
    return paired_rule(*pairs, "below", ALLOCATION_MARGIN_PCT)


def verdict_reallocation(
    saved: Sequence[float], cost: Sequence[float], controls: Mapping[str, Verdict] | None = None
) -> Verdict:
    """Reallocation (the paper: 47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL): "head dims from
    measured rank save attention parameters at a small PPL cost", from the reallocated model's attention
    parameters saved (%) and PPL change (%) per seed. Every part must hold (:func:`_combine`): the saving
    (the same head dims in every seed, so exact: :func:`exact_rule`) at least the paper's smallest, 47 %; the
    cost's :func:`mean_rule` below the paper's largest, +8.4 %; and each control's verdict in ``controls``
    (:func:`verdict_allocation_control`: the measured allocation at least as good as the same total spread
    evenly or shuffled). Gate (kept): not testable when the mean saving is 0 (every layer keeps the uniform
    head dim). Evidence: the deciding part's (the PPL cost when all hold)."""
    bound = PAPER_REALLOCATION["ppl_pct"][1]
    if not cost:
        return not_testable("no reallocated model finished", n=0, null=bound)
    saved_mean = float(np.mean([float(s) for s in saved]))
    cost_v = mean_rule(cost, "below", bound)
    if saved_mean == 0:
        why = "every layer's measured dimensions call for the uniform head dim: nothing to reallocate"
        return replace(cost_v, word=NOT_TESTABLE, why=why)
    smallest = PAPER_REALLOCATION["params_saved_pct"][0]
    saving = exact_rule(saved_mean, smallest, "above", n=len(saved),
                        what="the attention parameters saved (%)")  # fmt: skip
    return _combine({"cost": cost_v, "saving": saving, **(controls or {})})


# Claims rows ----------------------------------------------------------------------------------------------


def claims(exp: SDExperiment, evidence: Evidence) -> list[Claim]:
    """Every claim of docs/papers/sd-routing.md, with a verdict computed from this run's measurements; at
    smoke scale every verdict is "not testable here" (the evidence columns are still filled)."""
    e = evidence
    rows = [
        *_claims_pretrained(exp, e.heads),
        *_claims_stability(exp, e.runs, e.losses, e.heads),
        *_claims_cascade(exp, e.cascade, e.baseline),
        *_claims_trend(e.trend),
        *_claims_collapse(e.collapse, e.drift),
        *_claims_linear(exp, e.linear),
        *_claims_realloc(e.realloc),
    ]
    if exp.scale == "smoke":
        rows = [replace(c, verdict=replace(c.verdict, word=NOT_TESTABLE, why=SMOKE)) for c in rows]
    return rows


def _claims_pretrained(exp: SDExperiment, heads: pd.DataFrame) -> list[Claim]:
    """The pooled pretrained rows (every model must have it), then, with more than one model, each model's
    own rows (figure "scale: pretrained", :func:`pretrained_by_model`)."""
    pre, models = _pretrained_flags(exp, heads)
    rows = _pretrained_rows(pre, models, "pretrained")
    if len(models) > 1:
        rows += [row for model_rows in pretrained_by_model(exp, heads).values() for row in model_rows]
    return rows


def _pretrained_flags(exp: SDExperiment, heads: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The pretrained heads of ``exp.models`` with one boolean column per claim, and the models that have
    both trained and random-weight heads."""
    pre = heads[heads["model"].isin(exp.models)]
    flags = pre.assign(
        dominant=pre["filtering_energy"] > 0.5,
        lower=pre["routing_rank"] < pre["filtering_rank"],
        lower_stable=pre["routing_stable_rank"] < pre["filtering_stable_rank"],
        unstable=pre["n_unstable"] > 0,
    )
    present = set(zip(pre["model"], pre["weights"], strict=True))
    models = [m for m in exp.models if (m, "trained") in present and (m, "random init") in present]
    return flags, models


def _pretrained_rows(pre: pd.DataFrame, models: list[str], figure: str) -> list[Claim]:
    """The four pretrained claims over ``models`` (each named by its description: package, precision, base
    or instruct), each judged in every model against random weights of the same shapes."""
    if not models:
        return []
    paper = f"{PAPER_HEADS}:"
    rows = []
    for flag, claim, number in (
        ("dominant", "filtering dominates the spectral budget of pretrained heads (mean energy above 1/2 and "
         "above random weights)",
         "filtering dominates"),
        ("lower", "routing runs at lower rank than filtering (entropy rank)", "routing low rank"),
        ("lower_stable", "routing runs at lower rank than filtering (stable rank)", "routing low rank"),
        ("unstable", "every head is dynamically unstable (an eigenvalue of W with positive real part)",
         "all heads"),
    ):  # fmt: skip
        g = pre[pre["model"].isin(models)].groupby(["model", "weights"], sort=False)[flag]
        k, n, share = g.sum(), g.size(), 100 * g.mean()
        ours = "; ".join(
            f"{describe(m)}: {share[m, 'trained']:.1f} % of {n[m, 'trained']} heads (random weights "
            f"{share[m, 'random init']:.1f} %)"
            for m in models
        )
        counts = {m: (int(k[m, "trained"]), int(n[m, "trained"])) for m in models}
        random = {m: float(share[m, "random init"]) / 100 for m in models}
        if flag == "unstable":
            verdict = verdict_every_head_unstable(counts, random)
        elif flag == "dominant":
            verdict = _energy_verdict(pre, models)
            ours += "; mean filtering energy: " + _energy_means(pre, models)
        else:
            verdict = verdict_share_beyond_random(counts, random, MAJORITY)
        rows.append(Claim(figure, claim, f"{paper} {number}", f"heads with it: {ours}", verdict))
    return rows


def pretrained_by_model(exp: SDExperiment, heads: pd.DataFrame) -> dict[str, list[Claim]]:
    """Each pretrained model's own rows of the four pretrained claims (figure "scale: pretrained"), judged by
    the same rules on that model alone, by model; at smoke scale every verdict is "not testable here"."""
    pre, models = _pretrained_flags(exp, heads)
    out = {m: _pretrained_rows(pre, [m], "scale: pretrained") for m in models}
    if exp.scale == "smoke":
        out = {
            m: [replace(c, verdict=replace(c.verdict, word=NOT_TESTABLE, why=SMOKE)) for c in rows]
            for m, rows in out.items()
        }
    return out


def pretrained_scale_table(exp: SDExperiment, heads: pd.DataFrame) -> pd.DataFrame:
    """The scale view of :func:`pretrained_by_model`: one row per (claim, model), smallest model first, with
    the model's parameter count (the ``parameters`` column of its heads) and description, and its verdict's
    word, estimate, 95% interval, null and n (``attnlab.runner.scale_figure`` draws it)."""
    sizes = heads.dropna(subset=["parameters"]).groupby("model")["parameters"].first()
    records = [
        {"claim": row.claim, "model": model, "description": describe(model),
         "parameters": int(sizes[model]), "verdict": row.verdict.word, "estimate": row.verdict.estimate,
         "low": row.verdict.low, "high": row.verdict.high, "null": row.verdict.null, "n": row.verdict.n}
        for model, rows in pretrained_by_model(exp, heads).items()
        for row in rows
    ]  # fmt: skip
    return pd.DataFrame(records).sort_values(["claim", "parameters"], kind="stable", ignore_index=True)


def _energies(pre: pd.DataFrame, model: str, weights: str) -> dict[Hashable, float]:
    """One model's filtering energy per head, keyed by (layer, head)."""
    sub = pre[(pre["model"] == model) & (pre["weights"] == weights)]
    return {(int(r.layer), int(r.head)): float(r.filtering_energy) for r in sub.itertuples()}


def _energy_verdict(pre: pd.DataFrame, models: Sequence[str]) -> Verdict:
    return verdict_energy_beyond_random(
        {m: _energies(pre, m, "trained") for m in models},
        {m: _energies(pre, m, "random init") for m in models},
    )


def _energy_means(pre: pd.DataFrame, models: Sequence[str]) -> str:
    means = pre.groupby(["model", "weights"])["filtering_energy"].mean()
    return "; ".join(
        f"{describe(m)}: {means[m, 'trained']:.3f} (random weights {means[m, 'random init']:.3f})"
        for m in models
    )


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
        sd_by, sa_by = sd_gaps.to_dict(), sa_gaps.to_dict()  # keyed by (size, seed)
    else:
        ours, sd_by, sa_by = "no pair of models with and without LayerNorm finished", {}, {}
    if sd_failed or sa_failed:
        ours += f"; diverged: {sd_failed + sa_failed}"
    rows.append(
        Claim(
            "S-D",
            "S-D attention trains without LayerNorm (control: SA without LayerNorm)",
            "trains (no number given)",
            ours,
            verdict_trains_without_layernorm(sd_by, sa_by, len(sd_failed), len(sa_failed)),
        )
    )
    return rows


def _rank_units(column: str, values: pd.Series) -> pd.Series:
    return values.map(lambda v: rank_equivalent(MEASURE_COLUMNS[column], v))


#: The SA variant whose model-space routing part R is the control of each S-D variant's cascade claims.
CASCADE_CONTROL = {"sd": "sa", "sd-noln": "sa-noln", "sd-shared": "sa"}

Unit = tuple[str, int]  # a trained model: (size, seed)


@dataclass(frozen=True)
class CascadeParts:
    """One variant's cascade in rank units, one value per trained model (size, seed): layer 0, the middle
    layers' mean (sizes with middle layers), the last layer, and the last layer's margin over the larger of
    layer 0 and the middle layers."""

    first: dict[Unit, float]
    middle: dict[Unit, float]
    last: dict[Unit, float]
    margin: dict[Unit, float]


def cascade_parts(sub: pd.DataFrame, sizes: Sequence[str]) -> CascadeParts:
    """:class:`CascadeParts` of one variant's cascade rows (``size``, ``seed``, ``layer``, ``value`` in rank
    units), sizes in the order given."""
    first: dict[Unit, float] = {}
    middle: dict[Unit, float] = {}
    last: dict[Unit, float] = {}
    margin: dict[Unit, float] = {}
    for size in sizes:
        by_seed = sub[sub["size"] == size].pivot_table(index="seed", columns="layer", values="value")
        for seed, row in by_seed.iterrows():
            unit = (size, int(seed))
            values = row.tolist()
            first[unit], last[unit] = values[0], values[-1]
            ref = values[0]
            if len(values) > 2:
                middle[unit] = float(np.mean(values[1:-1]))
                ref = max(ref, middle[unit])
            margin[unit] = values[-1] - ref
    return CascadeParts(first, middle, last, margin)


def _grouped(values: Mapping[Unit, float]) -> dict[str, list[float]]:
    """Values by (size, seed) grouped by size (the seeds' values of each size), in the mapping's order."""
    out: dict[str, list[float]] = {}
    for (size, _), value in values.items():
        out.setdefault(size, []).append(value)
    return out


def verdict_beyond_sa(
    sd_verdict: Verdict, sd: Mapping[Unit, float], sa: Mapping[Unit, float], side: Side, what: str
) -> Verdict:
    """A cascade claim judged against standard attention's own routing part (the model-space R of the SA
    variant with the same LayerNorm) under the same measure (a reviewer's control: SA's R is low rank too).
    Both parts must hold (:func:`_combine`): the S-D claim itself (``sd_verdict``) and :func:`paired_rule`
    on S-D's value minus SA's, paired by (size, seed), on ``side`` of 0 (``"below"``: S-D's routing is lower
    rank than SA's; ``"above"``: S-D's last layers expand more). Where the S-D part holds and the SA part does
    not, the reason says plainly that ``what`` is not specific to S-D."""
    common = [u for u in sd if u in sa]
    if not common:
        vs_sa = not_testable("no SA model paired with the S-D models", n=0, null=0.0)
    else:
        vs_sa = paired_rule({u: sd[u] for u in common}, {u: sa[u] for u in common}, side, 0.0)
    verdict = _combine({"S-D": sd_verdict, "S-D vs SA's routing part": vs_sa})
    if sd_verdict.word == HOLDS and vs_sa.word != HOLDS:
        sa_mean = _mean([sa[u] for u in common]) if common else math.nan
        verdict = replace(
            verdict,
            why=f"{what} is not specific to S-D: SA's routing part shows it too (SA mean {sa_mean:.2f}); "
            + verdict.why,
        )
    return verdict


def _claims_cascade(exp: SDExperiment, cascade: pd.DataFrame, baseline: pd.DataFrame) -> list[Claim]:
    claims = []
    for column, measure in MEASURE_COLUMNS.items():
        for variant in SD_VARIANTS:
            sub = cascade[cascade["variant"] == variant]
            if sub.empty:
                continue
            control = CASCADE_CONTROL[variant]
            sizes = [s for s in exp.sizes if s in set(sub["size"])]
            sd = cascade_parts(sub.assign(value=_rank_units(column, sub[column])), sizes)
            ctl = cascade[cascade["variant"] == control]
            sa = cascade_parts(ctl.assign(value=_rank_units(column, ctl[column])), sizes)
            rand = baseline[baseline["variant"] == variant].set_index("size")[column]
            rand_text = ", ".join(
                f"{s} {rank_equivalent(measure, rand[s]):.2f}" for s in sizes if s in rand.index
            )
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
                    verdict_beyond_sa(verdict_one_plane(first), sd.first, sa.first, "below", "one plane"),
                ),
                Claim(
                    "cascade",
                    f"middle layers route in 2-3 dimensions, fewer than SA's ({label})",
                    "effective rank 2-3",
                    f"middle layers{unit}: {_means(middle) or 'no size has middle layers'}; {vs}: "
                    f"{_means(_grouped(sa.middle)) or '-'}",
                    verdict_beyond_sa(
                        verdict_few_dimensions(middle),
                        sd.middle,
                        sa.middle,
                        "below",
                        "routing in 2-3 dimensions",
                    ),
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
                    verdict_beyond_sa(
                        verdict_last_layers_expand(list(sd.margin.values())),
                        sd.margin,
                        sa.margin,
                        "above",
                        "the expansion",
                    ),  # fmt: skip
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
                verdict_grows_with_size(order.tolist(), by_seed),
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
        seeds = counts[variant].index.intersection(counts["sa"].index)  # pairs by seed: both models finished
        k_sd, k_sa = counts[variant][seeds].to_dict(), counts["sa"][seeds].to_dict()
        claims.append(
            Claim(
                "linearisation",
                f"{LABELS[variant]} tolerates more leading ELU+1 layers than standard attention (post hoc)",
                f"S-D: first {PAPER_LINEAR['layers']} of {PAPER_LINEAR['of']} layers < 5 % PPL; SA collapses "
                "by layer 3",
                f"{exp.probe}, most leading layers within 5 % per seed: {LABELS[variant]} "
                f"{list(k_sd.values())}, SA {list(k_sa.values())} (of {n})",
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
    for variant in [v for v in SD_VARIANTS if v in set(realloc["variant"])]:  # a fixed order of rows
        rows = realloc[realloc["variant"] == variant]
        sub = rows[rows["model"] == "reallocated"]
        if sub.empty:
            continue
        saved, cost = sub["attn params saved %"].mean(), sub["ppl change %"].mean()
        measured = sub.set_index("seed")["ppl change %"].to_dict()
        controls, text = {}, []
        for name in REALLOC_CONTROLS:
            ctl = rows[rows["model"] == name]
            dims = ctl["head dims"].iloc[0] if len(ctl) else "-"
            same = len(ctl) > 0 and dims == sub["head dims"].iloc[0]
            by_seed = ctl.set_index("seed")["ppl change %"].to_dict()
            controls[f"vs {name}"] = verdict_allocation_control(measured, by_seed, same)
            text.append(f"{name} ({dims}) PPL {signed(ctl['ppl change %'].mean(), 1) if len(ctl) else '-'} %")
        claims.append(
            Claim(
                "reallocation",
                "head dims from the measured routing dimensions save attention parameters at a small PPL "
                f"cost, at least as good (within {ALLOCATION_MARGIN_PCT:g} % PPL) as the same total head "
                f"dims spread evenly or shuffled across layers ({LABELS[variant]})",
                "47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL",
                f"head dims {sub['head dims'].iloc[0]}: {saved:.0f} % fewer attention parameters, "
                f"PPL {signed(cost, 1)} % (seed mean); controls: {'; '.join(text)}",
                verdict_reallocation(
                    sub["attn params saved %"].tolist(), sub["ppl change %"].tolist(), controls
                ),
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
