"""XSA's verdict rules (attnlab.papers.xsa.claims) on numbers whose answer is known, and its claims table on
small hand-built measurements."""

import math

import pandas as pd
import pytest

from attnlab.papers import xsa
from attnlab.papers.xsa import claims as xc
from attnlab.runner.stats import mean_interval


def verdict_below_zero(gaps):
    """The rule as this project first wrote it, kept here as the oracle the verdict function must match."""
    if all(g < 0 for g in gaps):
        return "holds" if len(gaps) > 1 else "holds: one seed only, no spread"
    if sum(gaps) / len(gaps) >= 0:
        return "does not hold"
    return "inconclusive: the sign differs between seeds"


@pytest.mark.parametrize("gaps", [[-0.1, -0.2], [-0.1], [0.1, -0.05], [-0.1, 0.05], [0.0, 0.0, 0.0]])
def test_gap_below_zero_says_what_verdict_below_zero_says(gaps):
    assert str(xc.verdict_gap_below_zero(gaps)) == verdict_below_zero(gaps)


def test_gap_below_zero_words_and_evidence():
    v = xc.verdict_gap_below_zero([-0.1, -0.2])
    est = mean_interval([-0.1, -0.2])
    assert (v.word, v.why, v.n, v.null) == ("holds", "", 2, 0.0)
    assert (v.estimate, v.low, v.high) == pytest.approx((-0.15, est.low, est.high))
    one = xc.verdict_gap_below_zero([-0.1])
    assert (one.word, one.why, one.n) == ("holds", "one seed only, no spread", 1)
    assert one.estimate == -0.1 and math.isnan(one.low) and math.isnan(one.high)
    assert xc.verdict_gap_below_zero([0.1, -0.05]).word == "does not hold"
    mixed = xc.verdict_gap_below_zero([-0.1, 0.05])
    assert (mixed.word, mixed.why) == ("inconclusive", "the sign differs between seeds")
    with pytest.raises(ValueError):
        xc.verdict_gap_below_zero([])


def test_gap_of_a_diverged_run_is_judged_without_an_interval():
    v = xc.verdict_gap_below_zero([-0.1, math.nan])
    assert v.word == "inconclusive" and v.n == 2 and math.isnan(v.estimate) and math.isnan(v.low)


def test_gain_above_zero_judges_the_gains_and_reports_them_unnegated():
    v = xc.verdict_gain_above_zero([1.0, 2.0])
    assert (v.word, v.estimate, v.n, v.null) == ("holds", 1.5, 2, 0.0)
    assert v.low < 1.5 < v.high
    assert xc.verdict_gain_above_zero([-1.0, -2.0]).word == "does not hold"
    assert xc.verdict_gain_above_zero([1.0, -0.5]).word == "inconclusive"
    assert str(xc.verdict_gain_above_zero([0.5])) == "holds: one seed only, no spread"


def test_similarity_bias_needs_every_layer_above_its_values_and_zero():
    v = xc.verdict_similarity_bias([0.3, 0.5], [0.1, 0.2])
    assert (v.word, v.n, v.null) == ("holds", 2, 0.0)
    assert v.estimate == pytest.approx(0.2)  # layer 0: 0.3 over 0.1
    below_values = xc.verdict_similarity_bias([0.3, 0.15], [0.1, 0.2])
    assert below_values.word == "does not hold" and below_values.estimate == pytest.approx(-0.05)
    negative = xc.verdict_similarity_bias([-0.05, 0.3], [-0.2, 0.1])  # above its values, not above zero
    assert negative.word == "does not hold" and negative.estimate == pytest.approx(-0.05)


def test_grows_with_depth_compares_last_layer_with_first():
    v = xc.verdict_grows_with_depth([0.2, 0.1, 0.6])
    assert (v.word, v.n, v.null) == ("holds", 3, 0.0) and v.estimate == pytest.approx(0.4)
    assert xc.verdict_grows_with_depth([0.5, 0.9, 0.4]).word == "does not hold"
    assert xc.verdict_grows_with_depth([0.5, 0.5]).word == "does not hold"


def test_every_layer_above_is_strict_and_reports_the_lowest_layer():
    v = xc.verdict_every_layer_above([0.1, 0.2], 0.07)
    assert (v.word, v.estimate, v.n, v.null) == ("holds", 0.1, 2, 0.07)
    tie = xc.verdict_every_layer_above([0.1, 0.0], 0.0)
    assert (tie.word, tie.estimate) == ("does not hold", 0.0)


def test_orthogonal_below_tolerance_ignoring_values_that_are_not_a_number():
    v = xc.verdict_orthogonal([1e-7, 3e-6])
    assert (v.word, v.estimate, v.n, v.null) == ("holds", 3e-6, 2, 1e-5)
    assert xc.verdict_orthogonal([1e-7, 2e-5]).word == "does not hold"
    assert xc.verdict_orthogonal([math.nan, 1e-7]).estimate == 1e-7
    assert xc.verdict_orthogonal([math.nan]).word == "does not hold"


def test_minimal_overhead_holds_up_to_the_limit_on_both_ratios():
    v = xc.verdict_minimal_overhead(1.05, 1.10, 4)
    assert (v.word, v.estimate, v.n, v.null) == ("holds", 1.10, 4, 1.10)
    slow = xc.verdict_minimal_overhead(1.0, 1.2, 4)
    assert (slow.word, slow.estimate) == ("does not hold", 1.2)
    assert xc.verdict_minimal_overhead(math.nan, 1.0, 4).word == "does not hold"


def test_below_throughout_needs_every_evaluation():
    v = xc.verdict_below_throughout([2.9, 2.5, 2.0], [3.0, 2.6, 2.2])
    assert (v.word, v.n, v.null) == ("holds", 3, 0.0) and v.estimate == pytest.approx(-0.1)
    once = xc.verdict_below_throughout([2.9, 2.7, 2.0], [3.0, 2.6, 2.2])
    assert once.word == "does not hold" and once.estimate == pytest.approx(0.1)
    assert xc.verdict_below_throughout([], []).word == "holds"  # no evaluation after warm-up: nothing fails


def test_steady_margin_compares_the_range_with_the_mean_margin():
    v = xc.verdict_steady_margin([-0.05, -0.06, -0.04])
    assert (v.word, v.n) == ("holds", 3)
    assert (v.estimate, v.null) == pytest.approx((0.02, 0.05))
    wide = xc.verdict_steady_margin([-0.01, -0.2])
    assert wide.word == "does not hold" and wide.estimate == pytest.approx(0.19)
    assert xc.verdict_steady_margin([-0.05, 0.01]).word == "does not hold"  # XSA above SA at one LR
    assert xc.verdict_steady_margin([-0.05, math.nan]).word == "does not hold"


def test_gain_grows_with_length_needs_a_negative_slope_and_negative_gaps():
    v = xc.verdict_gain_grows_with_length([16, 32, 64], [-0.01, -0.02, -0.03])
    assert (v.word, v.n, v.null) == ("holds", 3, 0.0) and v.estimate == pytest.approx(-0.01)
    shrinks = xc.verdict_gain_grows_with_length([16, 32, 64], [-0.03, -0.02, -0.01])
    assert shrinks.word == "does not hold" and shrinks.estimate == pytest.approx(0.01)
    assert xc.verdict_gain_grows_with_length([16, 32, 64], [0.03, 0.02, 0.01]).word == "does not hold"


def test_at_chance_is_two_standard_errors_of_one_half():
    assert xc.at_chance([0.5, 0.54], [400, 400])  # 2 SE = 0.05 at 400 items
    assert not xc.at_chance([0.5, 0.56], [400, 400])
    assert xc.at_chance([0.56], [100])  # 2 SE = 0.1 at 100 items


def test_zero_shot_gain_is_not_testable_at_chance():
    v = xc.verdict_zero_shot_gain([1.0, 2.0], [0.5, 0.51], [400, 400])
    assert str(v) == "not testable here: every task's accuracy is within two standard errors of chance"
    assert (v.estimate, v.n, v.null) == (1.5, 2, 0.0)
    learned = [0.5, 0.7]
    assert xc.verdict_zero_shot_gain([1.0, 2.0], learned, [400, 400]).word == "holds"
    assert xc.verdict_zero_shot_gain([-1.0, -2.0], learned, [400, 400]).word == "does not hold"
    assert xc.verdict_zero_shot_gain([2.0, -1.0], learned, [400, 400]).word == "inconclusive"


def _measurements(exp: xsa.XSAExperiment) -> tuple[pd.DataFrame, ...]:
    """Two seeds where XSA's loss is 0.05 below SA's everywhere, similarity bias in both SA layers, XSA 20 %
    heavier in memory, a gain growing with length, sinks on which seeds disagree, and every task at chance."""
    curves = pd.DataFrame(
        [
            (size, kind, seed, step, split, 3 - step / 30 + 0.01 * seed - 0.05 * (kind == "xsa"))
            for size in exp.sizes for kind in xsa.KINDS for seed in exp.seeds for step in range(0, 61, 10)
            for split in ("validation", "train") if step or split == "validation"
        ],
        columns=["size", "kind", "seed", "step", "split", "loss"],
    )  # fmt: skip
    diag = pd.DataFrame([
        {"layer": layer, "kind": kind, "seed": seed, "size": exp.sizes[-1], "cos_vv": 0.1 + 0.1 * layer,
         "a_ii": 0.1 + 0.1 * layer, "a_ii_uniform": 0.07, "cos_yv": 0.3 + 0.2 * layer, "zv_residual": 1e-7,
         "cos_zv": 0.0}
        for kind in xsa.KINDS for seed in exp.seeds for layer in (0, 1)
    ])  # fmt: skip
    costs = pd.DataFrame([
        {"kind": kind, "d_model": 32, "seq_len": seq, "time_ms": 1.0,
         "memory_mib": 12.0 if kind == "xsa" else 10.0}
        for seq in (32, 64) for kind in xsa.KINDS
    ])  # fmt: skip

    def sweep(axis: str, gaps: dict) -> pd.DataFrame:
        return pd.DataFrame([
            {"kind": kind, "seed": seed, axis: value, "train": 2.1,
             "validation": 2 + (kind == "xsa") * gap[seed]}
            for value, gap in gaps.items() for seed in exp.seeds for kind in xsa.KINDS
        ])  # fmt: skip

    lr = sweep("lr", {1e-3: (-0.05, -0.05), 2e-3: (-0.05, -0.05)})
    seq = sweep("seq_len", {16: (-0.01, -0.01), 32: (-0.02, -0.02), 64: (-0.03, -0.03)})
    sinks = sweep("n_sink", {0: (-0.02, 0.01), 1: (-0.02, 0.01)})
    zero_shot = pd.DataFrame([
        {"task": task, "n": 400, "kind": kind, "seed": seed, "accuracy": 0.5 + 0.01 * (kind == "xsa")}
        for task in ("a", "b") for kind in xsa.KINDS for seed in exp.seeds
    ])  # fmt: skip
    return curves, diag, costs, lr, seq, sinks, zero_shot


def test_claims_table_on_hand_built_measurements():
    exp = xsa.configure(scale="smoke", device="cpu", seeds=[0, 1])
    rows = exp.claims(*_measurements(exp))
    words = [(r.figure, r.verdict.split(":")[0]) for r in rows]
    assert words == [
        *[("Fig. 1", "holds")] * 5, ("Alg. 1", "holds"),
        ("Fig. 2", "does not hold"),
        *[("Fig. 3", "holds")] * 3 * len(exp.sizes),
        ("Fig. 4", "holds"), ("Fig. 4", "holds"),
        ("Fig. 5", "holds"),
        ("Fig. 6", "inconclusive"),
        ("Table 2", "not testable here"),
    ]  # fmt: skip
    final = next(r for r in rows if r.claim.startswith("XSA reaches a lower final validation"))
    assert (final.n, final.null) == (2, 0.0) and final.estimate == pytest.approx(-0.05)
    assert "XSA - SA = -0.0500 ± 0.0000 nats/byte over 2 seed(s)" == final.ours
    fig2 = next(r for r in rows if r.figure == "Fig. 2")
    assert (fig2.estimate, fig2.n, fig2.null) == (pytest.approx(1.2), 2, 1.10)
