"""The qk_speed paper's verdict rules (``attnlab.papers.qk_speed.claims``): each rule's answer on synthetic
numbers whose answer is known, its evidence, and the claims table built from small hand-made tables."""

import math
import statistics

import numpy as np
import pandas as pd
import pytest

from attnlab.papers import qk_speed
from attnlab.papers.qk_speed import claims as qk
from attnlab.papers.qk_speed.dynamics import simulate
from attnlab.runner.claims import Claim
from attnlab.runner.stats import mean_interval

# The sign and sharpness rules -------------------------------------------------------------------------------


def test_positive_holds_when_every_seed_is_above_zero():
    v = qk.verdict_positive([0.1, 0.2])
    assert str(v) == "holds"
    est = mean_interval([0.1, 0.2])
    assert (v.estimate, v.low, v.high, v.n, v.null) == (est.mean, est.low, est.high, 2, 0.0)
    assert str(qk.verdict_positive([0.1])) == "holds: one seed only, no spread"
    assert math.isnan(qk.verdict_positive([0.1]).low)


def test_positive_does_not_hold_when_the_mean_is_not_above_zero():
    assert str(qk.verdict_positive([-0.1, -0.2])) == "does not hold"
    assert str(qk.verdict_positive([0.1, -0.1])) == "does not hold"  # mean exactly 0
    assert str(qk.verdict_positive([0.0])) == "does not hold"


def test_positive_is_inconclusive_when_the_sign_differs_between_seeds():
    v = qk.verdict_positive([0.3, -0.1])
    assert str(v) == "inconclusive: the sign differs between seeds"
    assert v.estimate == pytest.approx(0.1) and v.n == 2


def test_positive_needs_a_value():
    with pytest.raises(ValueError):
        qk.verdict_positive([])


def test_sharper_needs_a_rise_in_every_seed_and_a_minimum_mean_gain():
    assert str(qk.verdict_sharper([0.1, 0.2])) == "holds"
    assert str(qk.verdict_sharper([0.01, 0.02])) == (
        "inconclusive: higher in every seed, but by less than 0.05 on average"
    )
    assert str(qk.verdict_sharper([0.01])).startswith("inconclusive: higher in every seed")
    assert str(qk.verdict_sharper([0.3, -0.01])) == "inconclusive: the sign differs between seeds"
    assert str(qk.verdict_sharper([-0.3, 0.01])) == "does not hold"
    assert str(qk.verdict_sharper([0.05, 0.05])) == "holds"  # exactly MIN_GAIN counts


def test_sharper_evidence_is_the_mean_gain_against_min_gain():
    v = qk.verdict_sharper([0.01, 0.02, 0.03])
    est = mean_interval([0.01, 0.02, 0.03])
    assert (v.estimate, v.low, v.high, v.n, v.null) == (est.mean, est.low, est.high, 3, qk.MIN_GAIN)


def test_sharper_at_the_same_accuracy():
    assert str(qk.verdict_sharper_same_accuracy([0.1, 0.2], [1.0, -2.0])) == "holds"
    v = qk.verdict_sharper_same_accuracy([0.1, 0.2], [0.0, 2.5])
    assert str(v) == "does not hold: attention sharpens but accuracy changes by more than 2 points"
    assert v.estimate == pytest.approx(0.15) and v.null == qk.MIN_GAIN
    # a moving accuracy does not turn an unsharpened attention into a "does not hold: ... sharpens"
    assert str(qk.verdict_sharper_same_accuracy([0.01, 0.02], [10.0, 10.0])).startswith("inconclusive")
    assert str(qk.verdict_sharper_same_accuracy([-0.1, -0.2], [10.0, 10.0])) == "does not hold"


def test_correct_with_weak_attention():
    v = qk.verdict_correct_with_weak_attention([0.96, 1.0], [0.3, 0.4])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (pytest.approx(0.35), 2, qk.WEAK_MASS)
    assert v.low < 0.35 < v.high
    assert str(qk.verdict_correct_with_weak_attention([0.94, 1.0], [0.3, 0.4])) == "does not hold"
    assert str(qk.verdict_correct_with_weak_attention([1.0, 1.0], [0.3, 0.5])) == "does not hold"


# The ratio sweep, Fig. 3 and Fig. 4 ------------------------------------------------------------------------


def test_ratio_sweep():
    v = qk.verdict_ratio_sweep([0.3, 0.4, 0.5], 1.0)
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (pytest.approx(0.2), 3, qk.MIN_GAIN)
    assert math.isnan(v.low)
    assert str(qk.verdict_ratio_sweep([0.3, 0.395, 0.5], 0.0)) == "holds"  # a dip within 0.01
    assert str(qk.verdict_ratio_sweep([0.3, 0.4, 0.5], 3.0)) == (
        "does not hold: attention sharpens but accuracy changes by more than 2 points"
    )
    assert str(qk.verdict_ratio_sweep([0.3, 0.2, 0.5], 0.0)) == "does not hold"  # falls by 0.1
    assert str(qk.verdict_ratio_sweep([0.3, 0.31, 0.32], 0.0)) == "does not hold"  # rises by < MIN_GAIN
    assert str(qk.verdict_ratio_sweep([0.3, 0.4], math.nan)).startswith("does not hold: attention sharpens")


def test_loss_falls():
    v = qk.verdict_loss_falls([1.0, 0.5, 0.1], [0.1, 0.2, 0.3])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (pytest.approx(-0.9), 3, 0.0)
    assert str(qk.verdict_loss_falls([1.0, 0.5, 0.6], [0.1, 0.2, 0.3])) == "does not hold"
    assert str(qk.verdict_loss_falls([1.0, 0.5, 0.1], [0.1, -0.2, 0.3])) == "does not hold"
    assert str(qk.verdict_loss_falls([1.0, 1.0], [0.1, 0.1])) == "does not hold"  # flat is not lower


def test_alpha_rises():
    v = qk.verdict_alpha_rises([0.1, 0.5, 0.9])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (pytest.approx(0.8), 3, 0.0)
    assert str(qk.verdict_alpha_rises([0.1, 0.5, 0.5])) == "does not hold"


def test_log_fit():
    v = qk.verdict_log_fit([0.99, 0.95, 0.97])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (0.95, 3, qk.GOOD_FIT)
    v = qk.verdict_log_fit([0.99, 0.78])
    assert str(v) == "inconclusive: the linear fit in log t is poor for some r"
    assert v.estimate == 0.78
    v = qk.verdict_log_fit([0.99, math.nan])
    assert v.word == "inconclusive" and math.isnan(v.estimate)
    with pytest.raises(ValueError):
        qk.verdict_log_fit([])


def test_log2_law():
    v = qk.verdict_log2_law([True, True, False])
    assert str(v) == "does not hold: exp(mu_QK) ~ log^2 t fits better"
    assert (v.estimate, v.n, v.null) == (pytest.approx(2 / 3), 3, 0.5)
    assert str(qk.verdict_log2_law([False, False])) == "holds"
    assert str(qk.verdict_log2_law([True, False])) == "inconclusive: the better law depends on r"
    with pytest.raises(ValueError):
        qk.verdict_log2_law([])


# Real data ----------------------------------------------------------------------------------------------


def test_similar_score_within_two_points():
    v = qk.verdict_similar_score([0.80, 0.80], [0.81, 0.81])
    assert str(v) == "holds"
    assert v.estimate == pytest.approx(1.0) and v.null == 2.0 and v.n == 2
    assert str(qk.verdict_similar_score([0.80, 0.80], [0.85, 0.85])) == "does not hold"


def test_similar_score_tolerance_widens_with_the_spread_over_seeds():
    base, fast = [0.70, 0.80], [0.76, 0.84]  # difference 5 points; sd of the baseline ~7.1 points
    v = qk.verdict_similar_score(base, fast)
    assert str(v) == "holds"
    assert v.null == pytest.approx(2 * 100 * statistics.stdev(base))
    est = mean_interval([6.0, 4.0])  # per-seed differences (points)
    assert (v.low, v.high) == (pytest.approx(est.low), pytest.approx(est.high))
    one = qk.verdict_similar_score([0.5], [0.6])  # one seed: no spread, the 2-point tolerance
    assert str(one) == "does not hold" and one.null == 2.0 and math.isnan(one.low)


def test_similar_score_pairs_by_seed():
    with pytest.raises(ValueError):
        qk.verdict_similar_score([0.5, 0.6], [0.5])


def test_learns_agreement():
    v = qk.verdict_learns_agreement([0.6, 0.92])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (0.92, 2, qk.LEARNS_AGREEMENT)
    assert (
        str(qk.verdict_learns_agreement([0.6, 0.61]))
        == "does not hold: far less training data than the paper's"
    )
    assert qk.verdict_learns_agreement([math.nan, 0.95]).estimate == 0.95  # NaN skipped, as pandas does


def test_hatexplain_is_not_testable_here():
    assert str(qk.HATEXPLAIN) == "not testable here: HateXplain is not available offline"


def test_mean_sd_text():
    values = [0.3, 0.34, 0.35]
    assert qk._mean_sd(values) == f"{statistics.fmean(values):.3f} ± {statistics.stdev(values):.3f}"
    assert qk._mean_sd([0.25], 1) == "0.2"
    assert qk._mean_sd([math.nan, 0.5]) == "nan ± nan"  # a diverged run still prints


# The claims table from hand-made results --------------------------------------------------------------------


def _exp():
    return qk_speed.configure(scale="smoke")


def test_ratio_claim_reads_the_sweep():
    rows = [
        {"init": "QK at 1e-6 I", "ratio": r, "seed": s, "mass": 0.3 + 0.1 * i, "accuracy": 1.0}
        for i, r in enumerate((1, 5, 20))
        for s in (0, 1)
    ]
    (claim,) = qk._ratio(pd.DataFrame(rows))
    assert claim.verdict == "holds"
    assert claim.estimate == pytest.approx(0.2) and claim.n == 3
    rows[-1]["accuracy"] = rows[-2]["accuracy"] = 0.5
    (claim,) = qk._ratio(pd.DataFrame(rows))
    assert claim.verdict.startswith("does not hold: attention sharpens but accuracy")
    flat = [dict(r, mass=0.3, accuracy=1.0) for r in rows]
    assert qk._ratio(pd.DataFrame(flat))[0].verdict == "does not hold"


def test_fig3_claim_needs_falling_loss_and_positive_difference():
    frame = pd.DataFrame(
        [
            {"protocol": p, "ov": ov, "alpha": a, "epoch": 3, "loss": 1.0 - a, "fd": 0.1}
            for p in ("ours", "authors")
            for ov in ("factorised", "collapsed")
            for a in (0.2, 0.6, 1.0)
        ]
    )
    claims = qk._fig3(frame)
    assert [c.verdict for c in claims] == ["holds"] * 4
    assert "authors protocol" in claims[2].claim and "4.9e-04 (authors' notebook)" in claims[0].paper
    frame.loc[(frame["alpha"] == 1.0) & (frame["protocol"] == "authors"), "loss"] = 2.0
    assert [c.verdict for c in qk._fig3(frame)] == ["holds", "holds", "does not hold", "does not hold"]


def _real_rows(masses=(("baseline", 0.2), ("fast QK", 0.5))):
    rows = []
    for variant, mass in masses:
        for seed in (0, 1):
            for k in range(10):
                rows.append(
                    {
                        "variant": variant,
                        "seed": seed,
                        "mass": mass + 0.01 * seed,
                        "true_prob": 0.9,
                        "correct": k < 8,
                        "em": k < 8,
                        "f1": 0.5,
                    }
                )
    return pd.DataFrame(rows)


def test_real_data_claims_from_hand_made_runs():
    sharp, same = qk._real_data(_exp(), _real_rows(), "SVA", "", "", "correct", "accuracy")
    assert sharp.verdict == "holds" and same.verdict == "holds"
    assert sharp.estimate == pytest.approx(0.3) and sharp.n == 2 and sharp.null == qk.MIN_GAIN
    assert "(difference 0.0 points; tolerance 2.0)" in same.ours
    frame = _real_rows()
    frame.loc[frame["variant"] == "fast QK", "correct"] = False
    assert qk._real_data(_exp(), frame, "SVA", "", "", "correct", "accuracy")[1].verdict == "does not hold"


def test_supported_law_and_fig4_claims_on_real_simulations():
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    law = qk_speed.QKSpeedExperiment.supported_law(fits)
    assert list(law.index) == [0.1, 10.0]
    better = law["r2 exp(mu_QK) ~ log^2 t"] > law["r2 mu_QK ~ log^2 t"]
    assert (law["better"] == np.where(better, "exp(mu_QK) ~ log^2 t", "mu_QK ~ log^2 t")).all()
    claims = qk._fig4(_exp(), sims, fits)
    assert claims[0].verdict == "holds"  # alpha rises with r
    assert claims[0].n == 2


def _fig2_frame(exp, mass: dict[str, float], accuracy: dict[str, float]) -> pd.DataFrame:
    rows = []
    for run in qk_speed.fig2_runs(exp.preset.circuits):
        for seed in exp.seeds:
            for k in range(10):
                rows.append(
                    {
                        "run": run.label,
                        "seed": seed,
                        "mass": mass[run.label] + 0.01 * (seed % 2),
                        "true_prob": 0.9,
                        "correct": k < 10 * accuracy.get(run.label, 1.0),
                    }
                )
    return pd.DataFrame(rows)


def test_claims_table_from_hand_made_results():
    exp = _exp()
    labels = [r.label for r in qk_speed.fig2_runs(exp.preset.circuits)]
    # FAFO weak, the collapsed-OV models sharp; every faster-QK run sharper than its base, one at a lower
    # accuracy
    mass = dict(zip(labels, (0.3, 0.9, 0.3, 0.9, 0.5, 0.5, 0.5, 0.8, 0.8), strict=True))
    fig2 = _fig2_frame(exp, mass, {labels[5]: 0.5})
    ratio = pd.DataFrame(
        [
            {"init": "QK at 1e-6 I", "ratio": r, "seed": s, "mass": 0.3 + 0.1 * i, "accuracy": 1.0}
            for i, r in enumerate((1, 20))
            for s in (0, 1)
        ]
    )
    fig3 = pd.DataFrame(
        [
            {
                "protocol": "ours",
                "ov": ov,
                "alpha": a,
                "epoch": 0,
                "loss": 1.0 - a + (0.5 if ov == "collapsed" and a == 1.0 else 0),
                "fd": 0.1,
            }
            for ov in ("factorised", "collapsed")
            for a in (0.2, 0.6, 1.0)
        ]
    )
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    fits = exp.growth_fits(sims)
    sva = _real_rows()
    squad = _real_rows((("baseline", 0.2), ("fast QK", 0.21)))
    rows = qk.claims(exp, fig2, ratio, fig3, sims, fits, sva, squad, "not run: offline")
    assert all(isinstance(c, Claim) for c in rows)
    words = [(c.figure, c.verdict) for c in rows]
    assert words[:7] == [
        ("Fig. 2", "holds"),
        ("Fig. 2", "holds"),
        ("Fig. 2", "holds"),
        ("Fig. 2", "does not hold: attention sharpens but accuracy changes by more than 2 points"),
        ("Fig. 2", "holds"),
        ("Fig. 2", "holds"),
        ("ratio sweep", "holds"),
    ]
    assert words[7:9] == [("Fig. 3", "holds"), ("Fig. 3", "does not hold")]
    assert words[9] == ("Fig. 4", "holds")
    assert [w[0] for w in words[12:14]] == ["Fig. 4", "Fig. 4"]  # the growth regime at each r
    assert words[14:17] == [
        ("SVA", "holds"),
        ("SVA", "holds"),
        ("SVA", "does not hold: far less training data than the paper's"),  # accuracy 0.8
    ]
    assert words[17:] == [
        ("SQuAD", "inconclusive: higher in every seed, but by less than 0.05 on average"),
        ("SQuAD", "holds"),
        ("HateXplain", "not testable here: HateXplain is not available offline"),
    ]
    assert rows[0].estimate == pytest.approx(0.6) and rows[0].n == len(exp.seeds)
    assert rows[-1].ours == "not run: offline"
    # the authors' printed final F1 (means of their five seeds) stands beside the paper's "similar F1"
    assert "final F1 0.575 -> 0.570" in rows[18].paper
    # the authors' rate pairing adds its own two rows, judged on its own runs
    lower = squad.copy()
    lower.loc[lower["variant"] == "fast QK", "f1"] = 0.1
    more = qk.claims(exp, fig2, ratio, fig3, sims, fits, sva, squad, "not run: offline", None, lower)
    assert [(c.figure, c.verdict) for c in more[19:21]] == [
        ("SQuAD, authors' rates", "inconclusive: higher in every seed, but by less than 0.05 on average"),
        ("SQuAD, authors' rates", "does not hold"),
    ]
    assert more[:19] == rows[:19] and more[21:] == rows[19:]


def test_squad_attention_row_needs_faster_qk_to_have_learned():
    squad = _real_rows()
    squad.loc[squad["variant"] == "fast QK", ["em", "f1"]] = [False, 0.0]  # faster QK learned nothing
    sharp, same = qk._squad(_exp(), squad)
    assert sharp.verdict.startswith("not testable here: fast QK has not learned the task: exact match 0.000")
    assert same.verdict == "does not hold"  # F1 0.5 -> 0: a real loss of F1
    assert qk._squad(_exp(), _real_rows())[0].verdict == "holds"  # both learned: judged on attention


def test_a_diverged_squad_run_is_not_counted_as_a_result():
    squad = _real_rows()
    diverged = (squad["variant"] == "fast QK") & (squad["seed"] == 1)
    squad.loc[diverged, ["mass", "f1", "true_prob"]] = float("nan")
    squad["em"] = squad["em"].astype(float)
    squad.loc[diverged, "em"] = float("nan")
    sharp, same = qk._squad(_exp(), squad)
    why = "not testable here: training diverged (fast QK seed 1): no scores to compare"
    assert sharp.verdict == why and same.verdict == why


def test_growth_regime_verdict_gives_each_answer():
    assert qk.verdict_growth_regime("n mu_QK", 0.99, 0.95).word == "holds"
    assert qk.verdict_growth_regime("n mu_QK", 0.95, 0.99).word == "inconclusive"
    dominated = qk.verdict_growth_regime("m e^mu_QK", 0.7, 0.99)
    assert dominated.word == "does not hold" and dominated.estimate == 0.99 and dominated.null == 0.7
    assert qk.verdict_growth_regime("m e^mu_QK", 0.99, 0.7).word == "inconclusive"
    assert "neither term" in qk.verdict_growth_regime("mixed", math.nan, math.nan).why
    assert "too few points" in qk.verdict_growth_regime("n mu_QK", math.nan, math.nan).why


def test_growth_regime_claims_follow_the_first_integral():
    from attnlab.papers.qk_speed.dynamics import regime_fit, simulate_adaptive

    slow, middle, fast = simulate_adaptive(0.01), simulate_adaptive(1.0), simulate_adaptive(100.0)
    assert regime_fit(slow)["q_end"] == pytest.approx(slow.alpha / (1 - slow.alpha))
    assert [regime_fit(s)["regime"] for s in (slow, middle, fast)] == ["n mu_QK", "mixed", "m e^mu_QK"]
    sims = {0.01: slow, 1.0: middle, 100.0: fast}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    rows = [c for c in qk._fig4(_exp(), sims, fits) if "per regime" in c.claim]
    assert "n mu_QK dominates" in rows[0].verdict  # holds, or inconclusive if the fit disagrees
    assert rows[1].verdict.startswith("inconclusive: neither term")
    assert rows[2].verdict == "does not hold: m e^mu_QK dominates: e^mu_QK ~ log^2 t"


def test_the_above_chance_gate_makes_real_data_claims_not_testable():
    assert qk.gate_scores([16, 18], [20, 20], qk.SVA_CHANCE) is None
    gate = qk.gate_scores([16, 11], [20, 20], qk.SVA_CHANCE)
    assert gate.word == "not testable here" and gate.null == 0.5
    frame = _real_rows()
    frame.loc[frame["variant"] == "fast QK", "correct"] = frame["seed"] == 0  # fast QK at 50 %: chance
    rows = qk._sva(_exp(), frame)
    assert [c.verdict.split(":")[0] for c in rows[:2]] == ["not testable here"] * 2
    squad = _real_rows()
    squad["em"] = False  # the baseline answers nothing exactly: the task is not learned
    gate = qk.squad_gate(squad)
    assert gate.word == "not testable here" and "has not learned the task" in gate.why
    assert qk.squad_gate(_real_rows()) is None  # exact match 0.8
    rows = qk._real_data(_exp(), squad, "SQuAD", "", "", "f1", "F1", gate)
    assert all(c.verdict.startswith("not testable here") for c in rows)


def test_acmc_is_computed_per_variant_and_seed():
    acmc = qk.acmc_by_seed(_real_rows())
    assert len(acmc) == 4 and (acmc["ACMC"] == 100.0).all()  # every correct example is attention-confident
    frame = _real_rows()
    frame["correct"] = False
    assert acmc_nan(frame)


def acmc_nan(frame) -> bool:
    return bool(qk.acmc_by_seed(frame)["ACMC"].isna().all())
