"""The one decision rule (attnlab.runner.verdicts): each rule against hand-computed cases, and the pairing,
degenerate-evidence and margin behaviour a claims row depends on."""

import math

import pytest
from scipy import stats as scipy_stats

from attnlab.runner import verdicts as v
from attnlab.runner.stats import binomial_interval, mean_interval, t_quantile


def test_t_interval_matches_scipy():
    xs = [0.3, 0.1, 0.4, 0.2, 0.25]
    est = mean_interval(xs)
    low, high = scipy_stats.t.interval(0.95, len(xs) - 1, loc=est.mean, scale=scipy_stats.sem(xs))
    assert est.low == pytest.approx(low) and est.high == pytest.approx(high)
    assert t_quantile(0.975, 4) == pytest.approx(2.776, abs=1e-3)


def test_mean_rule_words():
    assert v.mean_rule([0.10, 0.12, 0.11, 0.13, 0.09], "above").word == v.HOLDS
    assert v.mean_rule([-0.1, -0.12, -0.11], "above").word == v.DOES_NOT_HOLD
    assert v.mean_rule([-0.1, -0.12, -0.11], "below").word == v.HOLDS
    assert v.mean_rule([1.1, 1.2, 1.15], "above", null=1.0).word == v.HOLDS


def test_an_interval_containing_the_null_is_never_does_not_hold():
    # XSA's depth row before this rule: mean below zero, interval across it -> was "does not hold"
    values = [-0.05, 0.02, -0.04, 0.03, 0.01, -0.03]
    verdict = v.mean_rule(values, "above")
    assert verdict.low < 0 < verdict.high and verdict.estimate < 0
    assert verdict.word == v.INCONCLUSIVE and "other side" in verdict.why
    assert verdict.detectable > 0 and "detectable" in verdict.why


def test_smallest_effect_and_margin():
    values = [0.10, 0.12, 0.11, 0.13, 0.09]  # interval about [0.09, 0.13]
    assert v.mean_rule(values, "above", smallest=0.05).word == v.HOLDS
    inc = v.mean_rule(values, "above", smallest=0.1)
    assert inc.word == v.INCONCLUSIVE and "smallest effect" in inc.why
    assert inc.detectable > 0.1  # the smallest effect is part of what the test must clear
    tiny = [0.001, -0.002, 0.0005, 0.0015, -0.001]
    assert v.mean_rule(tiny, "above").word == v.INCONCLUSIVE
    assert v.mean_rule(tiny, "above", margin=0.01).word == v.DOES_NOT_HOLD  # inside the margin: no effect


def test_degenerate_evidence_is_not_testable():
    assert v.mean_rule([0.5], "above").word == v.NOT_TESTABLE  # one seed, no interval
    assert v.mean_rule([0.0, 0.0, 0.0], "above").word == v.NOT_TESTABLE  # a floor: zero spread
    diverged = v.mean_rule([0.5, math.nan, 0.4], "above")
    assert diverged.word == v.NOT_TESTABLE and "diverged" in diverged.why
    with pytest.raises(ValueError):
        v.mean_rule([], "above")


def test_paired_rule_pairs_by_name_not_position():
    a = {"s0": 1.0, "s1": 5.0, "s2": 9.0}
    b = {"s2": 8.5, "s0": 0.4, "s1": 4.6}  # another order: pairing by position would mismatch seeds
    verdict = v.paired_rule(a, b, "above")
    assert verdict.word == v.HOLDS and verdict.estimate == pytest.approx(0.5)
    assert v.paired(a, b) == pytest.approx([0.6, 0.4, 0.5])
    by_position = v.mean_rule([x - y for x, y in zip(a.values(), b.values(), strict=True)], "above")
    assert by_position.word != v.HOLDS  # what a positional pairing would have said
    with pytest.raises(ValueError, match="only in one"):
        v.paired_rule(a, {"s0": 0.4, "s1": 4.6, "s3": 8.5}, "above")


def test_equivalence_uses_the_stated_margin_not_the_spread():
    inside = [0.01, -0.02, 0.0, 0.01, 0.005]
    assert v.equivalence_rule(inside, margin=0.05).word == v.HOLDS
    assert v.equivalence_rule(inside, margin=0.005).word == v.INCONCLUSIVE
    far = [1.0, 1.1, 0.9, 1.05]
    assert v.equivalence_rule(far, margin=0.2).word == v.DOES_NOT_HOLD
    # a noisier variant cannot loosen its own test: more spread, same margin -> not "holds"
    noisy = [0.2, -0.25, 0.15, -0.1, 0.05]
    verdict = v.equivalence_rule(noisy, margin=0.05)
    assert verdict.word == v.INCONCLUSIVE and verdict.margin == 0.05
    with pytest.raises(ValueError):
        v.equivalence_rule(inside, margin=0.0)


def test_slope_rule_fits_one_slope_per_unit():
    x = [0, 1, 2, 3]
    ys = {0: [0.0, 1.0, 2.1, 2.9], 1: [0.1, 1.2, 1.9, 3.0], 2: [0.0, 0.9, 2.0, 3.1]}
    assert v.slopes(x, ys)[0] == pytest.approx(0.98)
    verdict = v.slope_rule(x, ys, "above")
    assert verdict.word == v.HOLDS and verdict.estimate == pytest.approx(1.0, abs=0.05) and verdict.n == 3
    assert v.slope_rule(x, ys, "below").word == v.DOES_NOT_HOLD
    two_sizes = v.slope_rule([1, 2.3], {0: [0, 1], 1: [0, 1]}, "above")
    assert two_sizes.word == v.NOT_TESTABLE and "distinct" in two_sizes.why
    narrow = v.slope_rule([1, 2, 3], {0: [0, 1, 2], 1: [0, 1.1, 2]}, "above", min_ratio=8)
    assert narrow.word == v.NOT_TESTABLE and "spans" in narrow.why
    assert v.slopes([0.1, 0.7, 1.3], {0: [0.3] * 3}) == {0: 0.0}  # exactly, not a rounding residue
    flat = v.slope_rule(x, {0: [0.3] * 4, 1: [0.7] * 4}, "above")  # 0 % or 100 % at every size
    assert flat.word == v.NOT_TESTABLE


def test_share_rule_uses_the_wilson_interval():
    convex = v.share_rule(134, 270, 0.5)  # contribution weights' convex heads
    assert convex.word == v.INCONCLUSIVE and convex.low < 0.5 < convex.high
    assert v.share_rule(200, 270, 0.5).word == v.HOLDS
    assert v.share_rule(70, 270, 0.5).word == v.DOES_NOT_HOLD
    assert v.share_rule(70, 270, 0.5, "below").word == v.HOLDS
    bounded = v.share_rule(20, 20, 0.5)
    assert bounded.high == 1.0 and bounded.low == pytest.approx(binomial_interval(20, 20).low)
    assert v.share_rule(0, 0, 0.5).word == v.NOT_TESTABLE


def test_every_unit_is_an_intersection_union_test():
    strong = {f"layer {i}": [1.0 + 0.1 * j for j in range(5)] for i in range(4)}
    assert v.every_unit(strong, "above").word == v.HOLDS
    one_open = dict(strong, **{"layer 9": [0.1, -0.2, 0.3, 0.0, 0.05]})
    verdict = v.every_unit(one_open, "above")
    assert verdict.word == v.INCONCLUSIVE and "layer 9" in verdict.why and verdict.n == 5
    refuted = dict(one_open, **{"layer 10": [-1.0, -1.1, -0.9, -1.05, -0.95]})
    verdict = v.every_unit(refuted, "above")
    assert verdict.word == v.DOES_NOT_HOLD and "layer 10" in verdict.why
    assert verdict.high < 0  # the refuting unit's interval is shown, not the open unit's
    one_seed = {f"layer {i}": [1.0] for i in range(3)}
    assert v.every_unit(one_seed, "above").word == v.NOT_TESTABLE


def test_exact_rule_and_gates():
    assert v.exact_rule(3e-7, 1e-5, "below", n=16).word == v.HOLDS
    assert v.exact_rule(3e-3, 1e-5, "below", n=16).word == v.DOES_NOT_HOLD
    assert v.exact_rule(math.nan, 1e-5, "below", n=16).word == v.NOT_TESTABLE
    assert v.above_chance(90, 100, 0.5) is None
    gate = v.above_chance(55, 100, 0.5)  # 0.55, interval 0.45-0.64 contains 0.5
    assert gate is not None and gate.word == v.NOT_TESTABLE and gate.null == 0.5
    assert v.above_chance(25, 100, 0.2) is not None and v.above_chance(40, 100, 0.2) is None
    verdict = v.mean_rule([0.1, 0.2, 0.3], "above")
    assert v.gated(None, verdict) is verdict
    assert v.gated(gate, verdict, "SA").why.startswith("SA: accuracy")
    with pytest.raises(ValueError):
        v.gated(verdict, verdict)
    with pytest.raises(ValueError):
        v.above_chance(1, 2, 1.0)


def test_wilson_interval_matches_known_values():
    est = binomial_interval(8, 10)  # Wilson 95% for 8/10: 0.490-0.943
    assert est.mean == 0.8
    assert est.low == pytest.approx(0.4902, abs=1e-3) and est.high == pytest.approx(0.9433, abs=1e-3)
    assert binomial_interval(0, 20).low == 0.0 and binomial_interval(20, 20).high == 1.0
    with pytest.raises(ValueError):
        binomial_interval(3, 2)


@pytest.mark.parametrize("side", ["Above", "up", "", None])
def test_a_side_other_than_above_or_below_is_refused(side) -> None:
    # any other word was read as "below": a claim of "Above" was judged the other way round
    with pytest.raises(ValueError, match="side must be"):
        v.mean_rule([0.3, 0.5, 0.4, 0.6], side)
    with pytest.raises(ValueError, match="side must be"):
        v.rank_rule(5.0, [float(i) for i in range(100)], side)
    with pytest.raises(ValueError, match="side must be"):
        v.exact_rule(1.0, 2.0, side, n=1)


def test_rank_and_order_rules_refuse_odd_shapes_and_too_few_permutations() -> None:
    import numpy as np

    with pytest.raises(ValueError, match="1-D"):  # 40 x 40 draws were counted as 40
        v.rank_rule(1e9, np.ones((40, 40)), "above")
    with pytest.raises(ValueError, match="1-D"):
        v.order_rule(np.ones((6, 2)), np.ones((6, 2)), "above")
    for permutations in (0, -5, 10, 2.5):  # 0 gave a "not testable" row blaming the draws
        with pytest.raises(ValueError, match="permutations"):
            v.order_rule(range(6), [1, 2, 3, 5, 4, 6], "above", permutations=permutations)
    assert v.order_rule([1] * 6, [1, 2, 3, 5, 4, 6], "above").word == v.NOT_TESTABLE
