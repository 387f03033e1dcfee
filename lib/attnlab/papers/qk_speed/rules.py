"""Faster query-key learning sharpens attention (arXiv 2608.06776): the paper's decision rules, numbers in
and a :class:`~attnlab.runner.verdicts.Verdict` out (the rows' wording is in ``claims``).

Every rule reads one value per independent unit: per seed (``{seed: value}``, paired by name) for the trained
models, where a seed is one trained model, the unit of every training claim; never the test predictions
pooled over seeds, which would count one model's thousands of answers as independent replications. Where
the seeds agree exactly (every seed at 100 %), the rules say what the shared rules say of zero spread: not
testable here. Fig. 4's values come from the deterministic reduced dynamics (``dynamics.simulate``), and
only they are judged exactly (:func:`~attnlab.runner.verdicts.exact_rule`). A claim made of parts ("sharper
*at the same accuracy*", "in every variant", "at every r") is :func:`attnlab.runner.composite.all_of` of its
parts.

Thresholds and margins come from :mod:`attnlab.runner.thresholds` (``qk_speed.<NAME>``). Where the registry
marks one as fixed after a table of this paper had been seen (``posthoc``), the rule judges the row at the
plain null as well (:func:`attnlab.runner.thresholds.posthoc`): an accuracy threshold at chance, an
equivalence margin at zero (:func:`equivalence_at_zero`), an R^2 threshold at 0, a dominance factor at 1, the
QA floor at 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from attnlab.runner import thresholds
from attnlab.runner.composite import all_of
from attnlab.runner.stats import as_values, binomial_interval
from attnlab.runner.verdicts import (
    AT_REFERENCE,
    DOES_NOT_HOLD,
    GATE,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    Side,
    Verdict,
    above_chance,
    check_within,
    equivalence_rule,
    exact_rule,
    mean_rule,
    not_testable,
    paired,
    paired_rule,
    slope_rule,
    slopes,
)

MIN_GAIN_KEY = "qk_speed.MIN_GAIN"
MIN_ACCURACY_KEY = "qk_speed.MIN_ACCURACY"
SAME_ACCURACY_KEY = "qk_speed.SAME_ACCURACY_POINTS"
SIMILAR_KEY = "qk_speed.SIMILAR_POINTS"
GOOD_FIT_KEY = "qk_speed.GOOD_FIT"
QA_FLOOR_KEY = "qk_speed.QA_FLOOR"
DOMINANCE_KEY = "qk_speed.DOMINANCE"

MIN_GAIN = thresholds.value(MIN_GAIN_KEY)  # "sharper": the smallest rise in attention mass of interest
MIN_ACCURACY = thresholds.value(MIN_ACCURACY_KEY)  # Fig. 2, FAFO "predicts correctly"
WEAK_MASS = thresholds.value("qk_speed.WEAK_MASS")  # Fig. 2, "with weak attention"
SAME_ACCURACY_POINTS = thresholds.value(SAME_ACCURACY_KEY)  # "at the same accuracy" (synthetic), points
# "At a similar accuracy / F1" (real data), points. The authors' own mean differences, which they call
# similar, lie inside it: SVA test accuracy +1.0 points, SQuAD final F1 -0.5 points (``authors``).
SIMILAR_POINTS = thresholds.value(SIMILAR_KEY)
GOOD_FIT = thresholds.value(GOOD_FIT_KEY)  # Fig. 4, R^2 of mu_OV ~ log t for "grows like log t"
LEARNS_AGREEMENT = thresholds.value("qk_speed.LEARNS_AGREEMENT")  # SVA "learns agreement" (the paper's)
SVA_CHANCE = thresholds.value("qk_speed.SVA_CHANCE")  # a balanced two-class task
QA_FLOOR = thresholds.value(QA_FLOOR_KEY)  # SQuAD's gate: exact-match rate of a model that learned the task
DOMINANCE = thresholds.value(DOMINANCE_KEY)  # Fig. 4, a term of the first integral dominates at this factor

#: The rule name of an equivalence claim judged at the plain null, a margin of zero.
AT_ZERO = "equivalence at margin 0: does not hold when the 95% t interval excludes 0"

Seeds = Mapping[Hashable, float]

if TYPE_CHECKING:
    from attnlab.papers.qk_speed.presets import CircuitRun


def _at_margin_zero(values: Sequence[float], null: float, rule: str, what: str) -> Verdict:
    """An equivalence claim at a margin of zero around ``null`` (``what``: how the reasons name it): the
    limit of the two one-sided tests as the margin shrinks. It can never hold; does not hold when the 95% t
    interval of ``values`` (one per unit) excludes ``null`` on either side; inconclusive otherwise; not
    testable as :func:`~attnlab.runner.verdicts.mean_rule` is."""
    v = mean_rule(values, "above", null)
    if v.word == NOT_TESTABLE:
        return replace(v, margin=0.0, rule=rule)
    p_refute = min(v.p, v.p_refute)  # the interval off the null on either side, one side at 2.5%
    if v.low > null or v.high < null:
        side = "above" if v.low > null else "below"
        return replace(v, word=DOES_NOT_HOLD, why=f"the 95% interval lies {side} {what}", margin=0.0,
                       rule=rule, p=math.nan, p_refute=p_refute)  # fmt: skip
    return replace(v, word=INCONCLUSIVE, why=f"the 95% interval contains {what}", margin=0.0, rule=rule,
                   p=math.nan, p_refute=p_refute)  # fmt: skip


def equivalence_at_zero(values: Sequence[float]) -> Verdict:
    """An equivalence claim ("the same accuracy") at the plain null, a margin of zero
    (:func:`_at_margin_zero` around 0): it never holds; does not hold when the 95% t interval of ``values``
    excludes 0."""
    v = _at_margin_zero(values, 0.0, AT_ZERO, "0")
    return replace(v, why=v.why.replace("lies above 0", "excludes 0").replace("lies below 0", "excludes 0"))


def equivalence_points(fast: Seeds, base: Seeds, margin: float) -> Verdict:
    """``fast`` - ``base`` (fractions, paired by seed name) in points (x100) within +-``margin``; a score
    beyond [-1, 2], which only a percentage given for a fraction gives, is refused:
    :func:`~attnlab.runner.verdicts.equivalence_rule`; at a margin of 0, :func:`equivalence_at_zero`."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < math.inf:
        raise ValueError(
            f"equivalence_points(): the margin is a finite number of points >= 0; got {margin!r}"
        )
    for name, scores in (
        ("fast", fast),
        ("base", base),
    ):  # a score beyond [-1, 2] is no fraction, noisy or not
        check_within("equivalence_points", f"{name} (fractions: 0.95, not 95)", scores, -1.0, 2.0)
    diffs = [100 * d for d in paired(fast, base)]
    return equivalence_rule(diffs, margin) if margin > 0 else equivalence_at_zero(diffs)


# The pairing of Fig. 2 -----------------------------------------------------------------------------------


class Fig2Pair(NamedTuple):
    """A faster-QK run of Fig. 2 and its baseline, by run label (``presets.fig2_runs``), both starting their
    QK circuit at ``init``: the unit of a Fig. 2 comparison (:func:`check_pairs`)."""

    base: str
    fast: str
    how: str  # how the QK rate is raised
    init: str  # the QK initialisation both start from ("identity": 1e-6 I, "default": nn.Linear's)


def check_pairs(pairs: Sequence[Fig2Pair], runs: Sequence[CircuitRun]) -> list[Fig2Pair]:
    """``pairs``, after checking that each names runs of ``runs`` that start their QK circuit where the pair
    says (``CircuitRun.qk_start``): a faster-QK run judged against a baseline from another initialisation
    compares two initialisations, not two QK speeds. ValueError otherwise."""
    by_label = {r.label: r for r in runs}
    unknown = {label for p in pairs for label in (p.base, p.fast)} - set(by_label)
    if unknown:
        raise ValueError(f"fig2_pairs(): not runs of the preset: {sorted(unknown)}")
    for p in pairs:
        starts = {label: by_label[label].qk_start for label in (p.base, p.fast)}
        if set(starts.values()) != {p.init}:
            raise ValueError(f"fig2_pairs(): {p.fast} vs {p.base} do not both start at {p.init!r}: {starts}")
    return list(pairs)


# Attention ----------------------------------------------------------------------------------------------


def verdict_sharper(fast: Seeds, base: Seeds) -> Verdict:
    """ "Faster QK puts more attention on the relevant tokens" (Fig. 2; SVA, SQuAD), from the attention mass
    per seed of the faster-QK run and of its baseline: :func:`~attnlab.runner.verdicts.paired_rule` (paired
    by seed name) above 0 by more than ``MIN_GAIN``."""
    return paired_rule(fast, base, "above", smallest=MIN_GAIN)


def verdict_shortcut(fast: Seeds, base: Seeds) -> Verdict:
    """ "Faster QK moves attention onto the query token" (a shortcut: the query token alone identifies the
    class; an outside review's finding, not the paper's claim), from the mass on the query token per seed:
    :func:`~attnlab.runner.verdicts.paired_rule` above 0 by more than ``MIN_GAIN``."""
    return paired_rule(fast, base, "above", smallest=MIN_GAIN)


def verdict_collapsed_sharper(mass: Mapping[str, Seeds]) -> Verdict:
    """Fig. 2, "the collapsed-OV models (FACO, CACO) concentrate attention more than the factorised-OV ones
    (FAFO, CAFO)", from the distinct-token mass per seed of each (``mass[kind][seed]``): per seed, the smaller
    collapsed-OV mass minus the larger factorised-OV one, then :func:`~attnlab.runner.verdicts.mean_rule`
    above 0 by more than ``MIN_GAIN``. The four runs share their seeds (by name; otherwise ValueError)."""
    missing = [k for k in ("FAFO", "FACO", "CAFO", "CACO") if k not in mass]
    if missing:
        raise ValueError(f"verdict_collapsed_sharper(): no masses for {missing}")
    fafo, faco, cafo, caco = (mass[k] for k in ("FAFO", "FACO", "CAFO", "CACO"))
    if not set(fafo) == set(faco) == set(cafo) == set(caco):
        raise ValueError("verdict_collapsed_sharper(): the four runs do not share their seeds")
    gaps = [min(faco[s], caco[s]) - max(fafo[s], cafo[s]) for s in faco]
    return mean_rule(gaps, "above", smallest=MIN_GAIN)


def verdict_real_sharper(mass: tuple[Seeds, Seeds], ac: tuple[Seeds, Seeds]) -> Verdict:
    """Real data (SVA; SQuAD, whose claim the paper states in AC: "~12 % -> ~43 %"), "faster QK puts more
    attention on the relevant tokens", from (fast, base) per seed: :func:`~attnlab.runner.composite.all_of`
    "attention mass" (:func:`verdict_sharper`) and "AC" (the paper's attention confidence, % of test items
    with mass and true-answer probability above 0.1: :func:`~attnlab.runner.verdicts.paired_rule` above 0).
    The paper states the claim in AC; the mass alone could rise while fewer items are attended confidently
    (SVA under Adam: AC 87.7 % -> 63.5 % at x5), so both must rise. Evidence: the mass part's, unless AC
    decides."""
    parts = {"attention mass": verdict_sharper(*mass), "AC": paired_rule(*ac, "above")}
    return all_of(parts, main="attention mass")


def verdict_ac_rises(fast: Seeds, base: Seeds) -> Verdict:
    """Real data, "faster QK raises AC", the authors' attention confidence (% of test items with
    relevant-token mass > 0.1 and true-answer probability > 0.1; SQuAD: "AC rises from about 12 % to 43 %",
    the paper's summary: AC improves on every dataset), judged on AC itself, from AC per seed of faster QK
    and of its baseline: :func:`~attnlab.runner.verdicts.paired_rule` above 0 points, paired by seed name.
    No smallest rise of interest: none is registered for AC (the paper's SQuAD rise is 31 points)."""
    return paired_rule(fast, base, "above")


def verdict_low_mass_falls(fast: Seeds, base: Seeds) -> Verdict:
    """SVA, the authors' own attention statistic: "faster QK lowers the share of test sentences with attention
    mass <= 0.1 on the relevant tokens" (their notebooks print it per seed: 58 % -> 22 % at x100,
    ``authors.SVA_TEST_LOW_MASS``), from that share (%) per seed: :func:`~attnlab.runner.verdicts.paired_rule`
    below 0 points, paired by seed name. The 0.1 is the authors' (their printed bins)."""
    return paired_rule(fast, base, "below")


#: The side on which faster QK improves each faithfulness measure (``metrics.faithfulness``):
#: comprehensiveness f(x) - f(x without the top-k tokens) rises when the attended tokens were needed;
#: sufficiency f(x) - f(top-k only) falls when they suffice.
FAITHFUL_SIDE: dict[str, Side] = {"comprehensiveness": "above", "sufficiency": "below"}


def verdict_faithfulness(measure: str, fast: Seeds, base: Seeds) -> Verdict:
    """Real data, "faster QK improves ``measure``" ("comprehensiveness" or "sufficiency" at the authors'
    top 5 % of tokens by attention; the paper's summary: raising eta_QK / eta_OV improves sufficiency among
    the interpretability metrics), from the per-seed mean over the test items of faster QK and of its
    baseline: :func:`~attnlab.runner.verdicts.paired_rule`, paired by seed name, on the side of
    :data:`FAITHFUL_SIDE` (comprehensiveness above 0, sufficiency below 0)."""
    if measure not in FAITHFUL_SIDE:
        raise ValueError(f"measure must be one of {list(FAITHFUL_SIDE)}; got {measure!r}")
    return paired_rule(fast, base, FAITHFUL_SIDE[measure])


#: The rule name of a run judged against the authors' printed value at a margin of zero.
AT_AUTHORS = AT_REFERENCE


def verdict_authors_share(ours: Seeds, theirs: float) -> Verdict:
    """Fig. 2's DTAP heatmaps against the authors' saved images (``authors.DTAP_SHARES``), one run at a time:
    "our run puts as many held-out sequences in the sharp-and-correct cell as the authors' run". The
    statistic, fixed before any of ours was compared with theirs: the % of held-out sequences in the
    top-right cell of the paper's own DTAP grid (distinct-token mass in [0.8, 1] and true-label probability
    in [0.8, 1]; ``metrics.DTAP_EDGES``, so no threshold of ours), one value per seed (``ours``, a trained
    model each); the authors' annotation of that cell (``theirs``, %) is the null, a fixed reference (their
    seeds' spread was not saved). Judged at a margin of zero around it (:func:`_at_margin_zero`): does not
    hold when the 95% t interval over our seeds lies above or below their value (the reason says which);
    inconclusive when it contains it (consistent with theirs; no margin of agreement is registered, so the
    row never holds); not testable when our seeds have no spread (every seed at 0 % or 100 %)."""
    check_within("verdict_authors_share", "the authors' share (%)", theirs, 0.0, 100.0)
    check_within("verdict_authors_share", "our shares (%)", ours, 0.0, 100.0)
    values = list(ours.values())
    return _at_margin_zero(values, float(theirs), AT_AUTHORS, f"the authors' {theirs:g} %")


# Accuracy -------------------------------------------------------------------------------------------------


def verdict_same_accuracy(fast: Seeds, base: Seeds, key: str = SAME_ACCURACY_KEY) -> Verdict:
    """ "At the same (a similar) accuracy / F1", from the score per seed (a fraction) of the faster-QK run and
    of its baseline: :func:`equivalence_points` within the registered margin ``key`` (``SAME_ACCURACY_POINTS``
    on the synthetic task, ``SIMILAR_POINTS`` on real data), and, the margin being post hoc, at a margin of
    zero beside it. Where every seed's difference is the same (both at 100 %), not testable here."""
    at = lambda margin: equivalence_points(fast, base, margin)  # noqa: E731
    return thresholds.posthoc(key, at(thresholds.value(key)), at(0.0))


def verdict_similar_score(base: Seeds, fast: Seeds) -> Verdict:
    """Real data, "at a similar accuracy / F1" (SVA, SQuAD), from the score per seed (a fraction) of the
    baseline and of faster QK: :func:`verdict_same_accuracy` within +-``SIMILAR_POINTS`` (paired by seed
    name; never a tolerance taken from the runs' own spread)."""
    return verdict_same_accuracy(fast, base, SIMILAR_KEY)


def verdict_sharper_same_accuracy(mass: tuple[Seeds, Seeds], accuracy: tuple[Seeds, Seeds]) -> Verdict:
    """Fig. 2, "faster QK sharpens attention at the same accuracy", from (fast, base) per-seed masses and
    accuracies: :func:`~attnlab.runner.composite.all_of` "attention" (:func:`verdict_sharper`) and
    "accuracy" (:func:`equivalence_points` within ``SAME_ACCURACY_POINTS``; post hoc, so judged at a margin
    of zero beside it). Evidence: the attention part's unless the accuracy part decides."""
    attention = verdict_sharper(*mass)

    def at(margin: float) -> Verdict:
        return all_of(
            {"attention": attention, "accuracy": equivalence_points(*accuracy, margin)}, "attention"
        )

    return thresholds.posthoc(SAME_ACCURACY_KEY, at(SAME_ACCURACY_POINTS), at(0.0))


def verdict_correct_with_weak_attention(accuracy: Seeds, mass: Seeds, chance: float) -> Verdict:
    """Fig. 2, "FAFO predicts correctly with weak attention", from FAFO's accuracy and distinct-token mass per
    seed: :func:`~attnlab.runner.composite.all_of` "accuracy" (:func:`~attnlab.runner.verdicts.mean_rule`
    above ``MIN_ACCURACY``; post hoc, so also above ``chance``, the task's 1 / classes) and "weak attention"
    (the mass below ``WEAK_MASS``). Whether FAFO's QK circuit left its init is no gate: a QK circuit at its
    saddle while the OV circuit solves the task is the paper's mechanism. Evidence: the mass, unless the
    accuracy part decides."""
    if set(accuracy) != set(mass):
        raise ValueError("verdict_correct_with_weak_attention(): accuracy and mass have different seeds")
    if isinstance(chance, bool) or not isinstance(chance, (int, float)) or not 0 <= chance < 1:
        raise ValueError(f"verdict_correct_with_weak_attention(): chance lies in [0, 1); got {chance!r}")
    weak = mean_rule(list(mass.values()), "below", WEAK_MASS)

    def at(threshold: float) -> Verdict:
        correct = mean_rule(list(accuracy.values()), "above", threshold)
        return all_of({"accuracy": correct, "weak attention": weak}, main="weak attention")

    return thresholds.posthoc(MIN_ACCURACY_KEY, at(MIN_ACCURACY), replace(at(chance), null=chance))


def verdict_learns_agreement(accuracy: Mapping[str, Seeds]) -> Verdict:
    """SVA, "the 1-layer attention-only model learns agreement", from each variant's accuracy per seed
    (``accuracy[variant][seed]``; the authors report both variants at 0.92-0.93):
    :func:`~attnlab.runner.composite.all_of` over the variants of
    :func:`~attnlab.runner.verdicts.mean_rule` above ``LEARNS_AGREEMENT``, n = seeds (the trained models),
    never the test sentences pooled over seeds. Not gated on chance: whether the model learns is the claim."""
    if not accuracy:
        raise ValueError("verdict_learns_agreement(): no variants")
    parts = {v: mean_rule(list(acc.values()), "above", LEARNS_AGREEMENT) for v, acc in accuracy.items()}
    return all_of(parts)


def baseline_gate(counts: Mapping[Hashable, tuple[int, int]], floor: float, what: str) -> Verdict | None:
    """The gate before a real-data claim: the baseline learned the task in every seed (``counts[seed]``: its
    correct answers, of how many), each seed's 95% Wilson interval above ``floor`` (chance, or SQuAD's
    exact-match floor) by :func:`~attnlab.runner.verdicts.above_chance`. None when it did; otherwise "not
    testable here", naming the seed. Only the baseline is gated: a faster-QK model that learned less is a
    result, not a failed run."""
    for seed, (correct, total) in counts.items():
        gate = above_chance(int(correct), int(total), floor)
        if gate is None and correct <= floor * total:  # none correct: Wilson's lower end rounds above 0
            est = binomial_interval(int(correct), int(total))
            gate = not_testable("", estimate=est.mean, low=0.0, high=est.high, n=total, null=floor, rule=GATE)
        if gate is not None:
            why = (
                f"the baseline has not learned the task (seed {seed}): {what} {gate.estimate:.3f} (95% "
                f"interval {gate.low:.3f}-{gate.high:.3f}) is not above {floor:.3g}"
            )
            return replace(gate, why=why)
    return None


# The ratio sweep and Fig. 3 -------------------------------------------------------------------------------


def sweep_position(ratios: Sequence[float]) -> list[float]:
    """Each ratio's place on the sweep, log(ratio / lowest) / log(highest / lowest), from 0 to 1: a slope
    against it is the rise of the fitted line across the whole sweep."""
    r = np.asarray(ratios, dtype=float)
    if r.ndim != 1 or not len(r) or not (np.isfinite(r) & (r > 0)).all():
        raise ValueError(f"sweep_position(): the ratios are positive numbers; got {list(ratios)}")
    span = math.log(r.max() / r.min())
    return (np.log(r / r.min()) / span).tolist() if span > 0 else [0.0] * len(r)


def verdict_ratio_sweep(
    ratios: Sequence[float],
    mass: Mapping[Hashable, Sequence[float]],
    accuracy: Mapping[Hashable, Sequence[float]],
) -> Verdict:
    """The ratio sweep (Fig. 2's eta_QK / eta_OV, the authors' Net_p1 and Net_p3), "raising eta_QK / eta_OV
    sharpens attention without changing accuracy", from the distinct-token mass and the accuracy per seed
    at each ratio (``mass[seed][i]`` at ``ratios[i]``, every ratio run): all_of "attention",
    :func:`~attnlab.runner.verdicts.slope_rule` of the mass against :func:`sweep_position` (one fitted rise
    across the sweep per seed, at least 3 ratios) above 0 by more than ``MIN_GAIN``, and "accuracy",
    :func:`~attnlab.runner.verdicts.equivalence_rule` of each seed's fitted accuracy change across the sweep
    (points) within +-``SAME_ACCURACY_POINTS`` (post hoc: judged at a margin of zero beside it). Every ratio
    is judged, a ratio whose QK circuit stayed at its init included: slow QK leaving attention unsharpened
    is what the claim is about."""
    if set(mass) != set(accuracy):
        raise ValueError("verdict_ratio_sweep(): mass and accuracy have different seeds")
    x = sweep_position(ratios)
    sharper = slope_rule(x, mass, "above", smallest=MIN_GAIN)
    changes = [100 * s for s in slopes(x, accuracy).values()] if len(set(x)) >= 3 else []

    def at(margin: float) -> Verdict:
        if not changes:
            same = not_testable(f"{len(set(x))} ratios; a trend needs 3", n=len(mass))
        else:
            same = equivalence_rule(changes, margin) if margin > 0 else equivalence_at_zero(changes)
        return all_of({"attention": sharper, "accuracy": same}, main="attention")

    return thresholds.posthoc(SAME_ACCURACY_KEY, at(SAME_ACCURACY_POINTS), at(0.0))


def verdict_every_init(per_init: Mapping[str, Verdict]) -> Verdict:
    """The ratio sweep "from every QK initialisation the authors use": all_of the rows per init."""
    return all_of(per_init)


def verdict_loss_falls(alphas: Sequence[float], loss: Mapping[Hashable, Sequence[float]]) -> Verdict:
    """Fig. 3, "with attention fixed, more mass on the distinct tokens gives a lower loss", from the final
    held-out loss at each alpha per seed (``loss[seed][i]`` at ``alphas[i]``):
    :func:`~attnlab.runner.verdicts.slope_rule` of the loss against alpha, below 0: one least-squares slope
    per seed (a trained model per alpha, all from that seed), the seeds the units (the notebook trains Fig. 3
    for every synthetic seed of the preset; one seed alone is not testable here)."""
    return slope_rule(alphas, loss, "below")


# Fig. 4: the deterministic reduced dynamics -----------------------------------------------------------------


def verdict_alpha_rises(alphas: Sequence[float]) -> Verdict:
    """Fig. 4, "a faster QK circuit (larger r) ends with sharper attention", from the final alpha at each r
    (ascending) of the deterministic reduced dynamics: :func:`~attnlab.runner.verdicts.exact_rule` of the
    smallest rise of alpha from one r to the next, above 0."""
    a = np.asarray(as_values(alphas, "verdict_alpha_rises"), dtype=float)
    if len(a) < 2:
        return not_testable("one r only: no rise to measure", n=len(a), null=0.0)
    what = "the smallest rise of alpha from one r to the next"
    return exact_rule(float(np.diff(a).min()), 0.0, "above", n=len(a), what=what)


def verdict_log_fit(r2: Sequence[float]) -> Verdict:
    """Fig. 4, "mu_OV grows like log t", from R^2 of the fit mu_OV ~ log t at each r of the deterministic
    reduced dynamics: :func:`~attnlab.runner.verdicts.exact_rule` of the lowest R^2 above ``GOOD_FIT`` (post
    hoc: above 0 beside it); not testable when a fit is NaN."""
    if len(r2) == 0:
        raise ValueError("no fits to judge")
    values = as_values(r2, "verdict_log_fit")
    check_within("verdict_log_fit", "R^2", values, -math.inf, 1.0)
    lowest = math.nan if any(math.isnan(v) for v in values) else min(values)
    what = "the lowest R^2 of mu_OV ~ log t"
    at = lambda bound: exact_rule(lowest, bound, "above", n=len(values), what=what)  # noqa: E731
    return thresholds.posthoc(GOOD_FIT_KEY, at(GOOD_FIT), at(0.0))


FIRST_INTEGRAL = "exact: the regime of the first integral and the better of two deterministic fits"


def verdict_growth_regime(regime: str, r2_mu: float, r2_exp: float) -> Verdict:
    """Fig. 4, "mu_QK grows like log^2 t", at one r of the deterministic reduced dynamics, per regime of the
    first integral (``dynamics.regime_fit``: m e^{mu_QK} + n mu_QK grows like mu_OV^2 ~ log^2 t, and the term
    that grows faster at the end of the run decides the law), from R^2 of mu_QK ~ log^2 t and of
    exp(mu_QK) ~ log^2 t fitted where that regime holds. Deterministic, so judged exactly: regime "n mu_QK"
    predicts mu_QK ~ log^2 t, holds when that fit is the better one; regime "m e^mu_QK" predicts
    e^{mu_QK} ~ log^2 t, does not hold when that fit is the better one; inconclusive when the better fit
    disagrees with the regime or no term dominates ("mixed"); not testable when the regime holds over too
    few points to fit (NaN)."""
    if regime == "mixed":
        why = "neither term of the first integral dominates at the end of the run"
        return Verdict(INCONCLUSIVE, why, n=1, rule=FIRST_INTEGRAL)
    if regime not in ("n mu_QK", "m e^mu_QK"):
        raise ValueError(f"unknown regime {regime!r}")
    check_within("verdict_growth_regime", "R^2", [r2_mu, r2_exp], -math.inf, 1.0)
    if math.isnan(r2_mu) or math.isnan(r2_exp):
        return not_testable(f"too few points in the {regime} regime to fit", n=1, rule=FIRST_INTEGRAL)
    if regime == "n mu_QK":
        exact = exact_rule(r2_mu - r2_exp, 0.0, "above", n=1, what="R^2(mu_QK) - R^2(exp mu_QK)")
        if exact.word == HOLDS:
            why = "n mu_QK dominates the first integral and mu_QK ~ log^2 t fits better"
            return replace(exact, why=why, rule=FIRST_INTEGRAL)
        why = "n mu_QK dominates, but exp(mu_QK) ~ log^2 t fits better"
        return replace(exact, word=INCONCLUSIVE, why=why, rule=FIRST_INTEGRAL)
    exact = exact_rule(r2_exp - r2_mu, 0.0, "above", n=1, what="R^2(exp mu_QK) - R^2(mu_QK)")
    if exact.word == HOLDS:
        why = "m e^mu_QK dominates the first integral and e^mu_QK ~ log^2 t fits better"
        return replace(exact, word=DOES_NOT_HOLD, why=why, rule=FIRST_INTEGRAL)
    why = "m e^mu_QK dominates, but mu_QK ~ log^2 t fits better"
    return replace(exact, word=INCONCLUSIVE, why=why, rule=FIRST_INTEGRAL)


Fit = tuple[str, float, float]  # a regime of the first integral, R^2 of mu_QK ~ log^2 t, of exp(mu_QK) ~ ...


def verdict_growth(at_dominance: Fit, at_one: Fit) -> Verdict:
    """Fig. 4, "mu_QK grows like log^2 t" at one r: :func:`verdict_growth_regime` of the regime fitted at
    ``DOMINANCE`` (post hoc), beside that of the regime at a factor of 1 (the larger term decides)."""
    plain = replace(verdict_growth_regime(*at_one), null=1.0)
    return thresholds.posthoc(DOMINANCE_KEY, verdict_growth_regime(*at_dominance), plain)


def verdict_log2_every_r(
    per_r: Mapping[float, Verdict], plain: Mapping[float, Verdict] | None = None
) -> Verdict:
    """Fig. 4, "mu_QK grows like log^2 t" over every r: :func:`~attnlab.runner.composite.all_of` the rows per
    r (:func:`verdict_growth_regime`, exact: a part refutes by its word), so it cannot contradict them;
    ``plain``, the rows per r at a dominance factor of 1, where given, judges the row at the plain null
    beside it. Unit: none (deterministic), n = the r."""
    if not per_r:
        raise ValueError("no r to judge")

    def together(rows: Mapping[float, Verdict]) -> Verdict:
        return replace(all_of({f"r = {r:g}": v for r, v in rows.items()}), n=len(rows))

    if plain is None:
        return together(per_r)
    return thresholds.posthoc(DOMINANCE_KEY, together(per_r), replace(together(plain), null=1.0))
