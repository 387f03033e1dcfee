"""The qk_speed paper's verdict rules (``attnlab.papers.qk_speed.claims``): each rule's answer on synthetic
numbers whose answer is known, its evidence, pairing by name, and the claims table built from small hand-made
tables."""

import math
import statistics

import numpy as np
import pandas as pd
import pytest

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
    assert qk.verdict_learns_agreement({"baseline": {0: 0.95}, "fast QK": {0: 0.96}}).word == (
        "not testable here"
    )


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


def test_ratio_claim_reads_the_sweep_by_seed():
    rows = [
        {"init": "QK at 1e-6 I", "ratio": r, "seed": s, "mass": 0.3 + 0.2 * i + 0.01 * s * i, "accuracy": 1.0}
        for i, r in enumerate((1, 5, 20))
        for s in (0, 1)
    ]
    (claim,) = qk._ratio(_exp(), pd.DataFrame(rows))
    assert claim.verdict.word == "holds" and claim.verdict.n == 2
    assert "2 seeds" in claim.ours
    flat = [dict(r, mass=0.3 + 0.001 * r["seed"]) for r in rows]
    assert qk._ratio(_exp(), pd.DataFrame(flat))[0].verdict.word != "holds"


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
    v = qk.verdict_learns_agreement({"baseline": seeds(0.95, 0.96, 0.97), "fast QK": seeds(0.93, 0.94, 0.95)})
    assert v.word == "holds" and v.n == 2 and v.null == qk.LEARNS_AGREEMENT
    low = qk.verdict_learns_agreement(
        {"baseline": seeds(0.95, 0.96, 0.97), "fast QK": seeds(0.6, 0.61, 0.62)}
    )
    assert low.word == "does not hold" and "fast QK" in low.why


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


def _real_rows(masses=(("baseline", 0.2), ("fast QK", 0.5)), seeds=(0, 1, 2)):
    rows = []
    for variant, mass in masses:
        fast = variant == "fast QK"
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
    sharp, same = qk._real_data(_exp(), _real_rows(), "SVA", "", "", "f1", "F1")
    assert sharp.verdict.word == "holds" and same.verdict.word == "holds"
    assert sharp.verdict.n == 3 and sharp.verdict.null == 0.0 and sharp.verdict.rule == PAIRED
    assert "margin +-2)" in same.ours and "paired difference" in same.ours
    assert same.verdict.margin == qk.SIMILAR_POINTS
    frame = _real_rows()
    frame.loc[frame["variant"] == "fast QK", "f1"] -= 0.2
    assert qk._real_data(_exp(), frame, "SVA", "", "", "f1", "F1")[1].verdict.word == "does not hold"


def test_real_data_pairs_runs_by_seed_name():
    frame = _real_rows()
    fast = frame["variant"] == "fast QK"
    frame.loc[fast, "seed"] = frame.loc[fast, "seed"].map({0: 0, 1: 1, 2: 3})  # a seed the baseline lacks
    with pytest.raises(ValueError):
        qk._real_data(_exp(), frame, "SVA", "", "", "f1", "F1")
    swapped = _real_rows()
    swapped["variant"] = swapped["variant"].map({"baseline": "fast QK", "fast QK": "baseline"})
    sharp, _ = qk._real_data(_exp(), swapped, "SVA", "", "", "f1", "F1")
    assert sharp.verdict.word == "does not hold"


def test_supported_law_and_fig4_claims_on_real_simulations():
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    law = qk_speed.QKSpeedExperiment.supported_law(fits)
    assert list(law.index) == [0.1, 10.0]
    better = law["r2 exp(mu_QK) ~ log^2 t"] > law["r2 mu_QK ~ log^2 t"]
    assert (law["better"] == np.where(better, "exp(mu_QK) ~ log^2 t", "mu_QK ~ log^2 t")).all()
    claims = qk._fig4(_exp(), sims, fits)
    assert claims[0].verdict.word == "holds" and claims[0].verdict.n == 2  # alpha rises with r
    per_r = [c.verdict for c in claims if "per regime" in c.claim]
    assert repr(claims[2].verdict) == repr(
        qk.verdict_log2_every_r(dict(zip(sorted(sims), per_r, strict=True)))
    )


def _fig2_frame(exp, mass: dict[str, float], accuracy: dict[str, float]) -> pd.DataFrame:
    rows = []
    for i, run in enumerate(qk_speed.fig2_runs(exp.preset.circuits)):
        for seed in exp.seeds:
            for k in range(100):
                rows.append(
                    {
                        "run": run.label,
                        "seed": seed,
                        "mass": mass[run.label] + 0.01 * (seed % 2) + 0.002 * i * (seed % 3),
                        "true_prob": 0.9,
                        "correct": k < 100 * accuracy.get(run.label, 1.0),
                    }
                )
    return pd.DataFrame(rows)


def _evidence(exp, **changes):
    labels = [r.label for r in qk_speed.fig2_runs(exp.preset.circuits)]
    # FAFO weak, the collapsed-OV models sharp; every faster-QK run sharper than its base, one at a lower
    # accuracy
    mass = dict(zip(labels, (0.3, 0.9, 0.3, 0.9, 0.5, 0.5, 0.5, 0.8, 0.8), strict=True))
    ratio = pd.DataFrame(
        [
            {
                "init": "QK at 1e-6 I",
                "ratio": r,
                "seed": s,
                "mass": 0.3 + 0.2 * i + 0.01 * s * i,
                "accuracy": 1.0,
            }
            for i, r in enumerate((1, 5, 20))
            for s in (0, 1)
        ]
    )
    fig3 = pd.DataFrame(
        [
            {"protocol": "ours", "ov": ov, "alpha": a, "epoch": 0, "loss": 1.0 - a, "fd": 0.1}
            for ov in ("factorised", "collapsed")
            for a in (0.2, 0.6, 1.0)
        ]
    )
    sims = {r: simulate(r, loss_stop=1e-2, record_every=20) for r in (0.1, 10.0)}
    base = dict(
        fig2_runs=_fig2_frame(exp, mass, {labels[5]: 0.5}),
        ratio_sweep=ratio,
        fig3_losses=fig3,
        simulations=sims,
        growth_fits=exp.growth_fits(sims),
        sva_authors=_real_rows(),
        squad_shared=_real_rows((("baseline", 0.2), ("fast QK", 0.21))),
        hatexplain="not run: offline",
    )
    return qk.Evidence(**(base | changes))


def test_claims_table_from_hand_made_results():
    exp = _exp()
    evidence = _evidence(exp)
    rows = qk.claims(exp, evidence)
    assert repr(rows) == repr(exp.claims(evidence))  # repr: NaN evidence compares unequal
    assert all(isinstance(c, Claim) for c in rows)
    words = [(c.figure, c.verdict.word) for c in rows]
    assert words[:7] == [
        ("Fig. 2", "holds"),
        ("Fig. 2", "holds"),
        ("Fig. 2", "holds"),
        ("Fig. 2", "does not hold"),  # accuracy 100 % -> 50 %
        ("Fig. 2", "holds"),
        ("Fig. 2", "holds"),
        ("ratio sweep", "holds"),
    ]
    assert rows[3].verdict.why.startswith("accuracy:")
    assert rows[2].verdict.why.endswith("inside the margin +-2")  # the pooled predictions at 100 %
    assert words[7:9] == [("Fig. 3", "not testable here")] * 2  # one seed
    assert words[9] == ("Fig. 4", "holds")
    assert [w[0] for w in words[12:14]] == ["Fig. 4", "Fig. 4"]  # the growth regime at each r
    assert words[14:] == [
        ("SVA", "holds"),
        ("SVA", "holds"),
        ("SVA", "does not hold"),  # accuracy 0.80-0.81, below 0.9 (fast QK's interval)
        ("SQuAD", "inconclusive"),  # a rise of 0.01, not the smallest gain of interest
        ("SQuAD", "holds"),
        ("HateXplain", "not testable here"),
    ]
    assert rows[0].verdict.estimate == pytest.approx(0.6, abs=0.01) and rows[0].verdict.n == len(exp.seeds)
    assert rows[-1].ours == "not run: offline"
    # the authors' printed final F1 (means of their five seeds) stands beside the paper's "similar F1"
    assert "final F1 0.575 -> 0.570" in rows[18].paper
    # the authors' rate pairing adds its own two rows, judged on its own runs
    lower = evidence.squad_shared.copy()
    lower.loc[lower["variant"] == "fast QK", "f1"] = 0.1 + 0.01 * lower["seed"]
    more = qk.claims(exp, _evidence(exp, squad_authors=lower))
    assert [(c.figure, c.verdict.word) for c in more[19:21]] == [
        ("SQuAD, authors' rates", "inconclusive"),
        ("SQuAD, authors' rates", "does not hold"),
    ]
    assert repr(more[:19]) == repr(rows[:19]) and repr(more[21:]) == repr(rows[19:])


def test_swapped_fig2_runs_change_the_verdict():
    exp = _exp()
    evidence = _evidence(exp)
    fast, base = qk.fig2_pairs(exp.preset.circuits)[0][1], "FAFO"
    frame = evidence.fig2_runs.copy()
    frame["run"] = frame["run"].replace({fast: base, base: fast})
    swapped = qk._fig2(exp, frame)
    assert qk._fig2(exp, evidence.fig2_runs)[2].verdict.word == "holds"
    assert swapped[2].verdict.word == "does not hold"
    misaligned = evidence.fig2_runs.copy()
    misaligned.loc[misaligned["run"] == fast, "seed"] += 100  # seeds the baseline does not have
    with pytest.raises(ValueError):
        qk._fig2(exp, misaligned)


def test_fig2_pairs_name_runs_of_the_preset():
    c = _exp().preset.circuits
    labels = {r.label for r in qk_speed.fig2_runs(c)}
    assert all(base in labels and fast in labels for base, fast, _ in qk.fig2_pairs(c))


def test_squad_attention_row_needs_faster_qk_to_have_learned():
    squad = _real_rows()
    squad.loc[squad["variant"] == "fast QK", ["em", "f1"]] = [False, 0.0]  # faster QK learned nothing
    squad.loc[squad["variant"] == "fast QK", "f1"] = 0.001 * squad["seed"]
    sharp, same = qk._squad(_exp(), squad)
    assert str(sharp.verdict).startswith(
        "not testable here: fast QK has not learned the task: exact match 0.000"
    )
    assert same.verdict.word == "does not hold"  # F1 0.5 -> 0: a real loss of F1
    assert qk._squad(_exp(), _real_rows())[0].verdict.word == "holds"  # both learned: judged on attention


def test_a_diverged_squad_run_is_not_counted_as_a_result():
    squad = _real_rows()
    diverged = (squad["variant"] == "fast QK") & (squad["seed"] == 1)
    squad.loc[diverged, ["mass", "f1", "true_prob"]] = float("nan")
    squad["em"] = squad["em"].astype(float)
    squad.loc[diverged, "em"] = float("nan")
    sharp, same = qk._squad(_exp(), squad)
    why = "not testable here: training diverged (fast QK seed 1): no scores to compare"
    assert str(sharp.verdict) == why and str(same.verdict) == why


def test_growth_regime_claims_follow_the_first_integral():
    from attnlab.papers.qk_speed.dynamics import regime_fit, simulate_adaptive

    slow, middle, fast = simulate_adaptive(0.01), simulate_adaptive(1.0), simulate_adaptive(100.0)
    assert regime_fit(slow)["q_end"] == pytest.approx(slow.alpha / (1 - slow.alpha))
    assert [regime_fit(s)["regime"] for s in (slow, middle, fast)] == ["n mu_QK", "mixed", "m e^mu_QK"]
    sims = {0.01: slow, 1.0: middle, 100.0: fast}
    fits = qk_speed.QKSpeedExperiment.growth_fits(sims)
    claims = qk._fig4(_exp(), sims, fits)
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
    frame.loc[frame["variant"] == "fast QK", "correct"] = frame["seed"] == 0  # fast QK near chance
    rows = qk._sva(_exp(), frame)
    assert [c.verdict.word for c in rows] == ["not testable here"] * 3
    squad = _real_rows()
    squad["em"] = False  # the baseline answers nothing exactly: the task is not learned
    gate = qk.squad_gate(squad)
    assert gate.word == "not testable here" and "has not learned the task" in gate.why
    assert qk.squad_gate(_real_rows()) is None  # exact match 0.8
    rows = qk._real_data(_exp(), squad, "SQuAD", "", "", "f1", "F1", gate)
    assert all(c.verdict.word == "not testable here" for c in rows)


def test_acmc_is_computed_per_variant_and_seed():
    acmc = qk.acmc_by_seed(_real_rows())
    assert len(acmc) == 6 and (acmc["ACMC"] == 100.0).all()  # every correct example is attention-confident
    frame = _real_rows()
    frame["correct"] = False
    assert acmc_nan(frame)


def acmc_nan(frame) -> bool:
    return bool(qk.acmc_by_seed(frame)["ACMC"].isna().all())
