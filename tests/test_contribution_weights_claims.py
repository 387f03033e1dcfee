"""The contribution-weights claims (arXiv 2606.07604): each verdict function on inputs whose answer is known,
its evidence, and the claims table on small hand-built results."""

import math

import pandas as pd
import pytest

from attnlab.papers import contribution_weights as cw
from attnlab.papers.contribution_weights import claims as cwc
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE, Verdict, above_chance


def test_first_token_holds_with_large_attention_and_small_contribution():
    v = cwc.verdict_first_token(0.5, 0.1, layers=6)
    assert (v.word, str(v)) == (HOLDS, "holds")
    assert v.estimate == pytest.approx(0.15)  # min(0.5 - 0.3, 0.5 / 2 - 0.1)
    assert (v.n, v.null) == (6, 0.0)
    assert math.isnan(v.low) and math.isnan(v.high)  # one model: no interval


@pytest.mark.parametrize(
    "attention, contribution, margin",
    [
        (0.3, 0.0, 0.0),
        (0.25, 0.0, -0.05),
        (0.6, 0.3, 0.0),
        (0.6, 0.5, -0.2),
    ],  # attention too low, c too large
)
def test_first_token_does_not_hold_when_either_criterion_fails(attention, contribution, margin):
    v = cwc.verdict_first_token(attention, contribution, layers=2)
    assert str(v) == DOES_NOT_HOLD
    assert v.estimate == pytest.approx(margin)


def test_first_token_with_a_nan_does_not_hold_and_has_no_estimate():
    v = cwc.verdict_first_token(math.nan, 0.1, layers=2)
    assert v.word == DOES_NOT_HOLD and math.isnan(v.estimate)


def test_saturation_gate():
    # every measure already gives more than half of its largest effect at the smallest fraction
    v = cwc.saturation_gate({"raw": 600.0, "contribution": 700.0}, {"raw": 900.0, "contribution": 800.0})
    assert v.word == NOT_TESTABLE and v.why.startswith("saturated")
    assert (v.estimate, v.n, v.null) == (pytest.approx(600 / 900), 2, 0.5)
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


def _v(word: str, estimate: float = 0.0) -> Verdict:
    return Verdict(word, "why" if word == NOT_TESTABLE else "", estimate)


def test_all_of():
    assert cwc.all_of({"a": _v(HOLDS, 1.0), "b": _v(HOLDS, 2.0)}).word == HOLDS
    v = cwc.all_of({"a": _v(HOLDS), "b": _v(DOES_NOT_HOLD, -1.0), "c": _v(INCONCLUSIVE)})
    assert (str(v), v.estimate) == ("does not hold: b", -1.0)
    assert str(cwc.all_of({"a": _v(HOLDS), "b": _v(INCONCLUSIVE)})) == "inconclusive: b undecided"
    assert str(cwc.all_of({"a": _v(NOT_TESTABLE), "b": _v(HOLDS)})) == "not testable here: why"
    with pytest.raises(ValueError):
        cwc.all_of({})


def test_steps_need_every_interval_above_zero():
    up = [0.9, 1.1, 1.0, 1.2]
    assert cwc.verdict_steps({"a < b": up, "b < c": up}).word == HOLDS
    v = cwc.verdict_steps({"a < b": up, "b < c": [-1.0, -1.2, -0.9, -1.1]})
    assert str(v) == "does not hold: b < c" and v.estimate == pytest.approx(-1.05)
    assert cwc.verdict_steps({"a < b": up, "b < c": [1.0, -0.8, 0.5, -0.4]}).word == INCONCLUSIVE


def test_conditions():
    v = cwc.verdict_conditions({"x": _v(HOLDS), "y": _v(HOLDS), "z": _v(NOT_TESTABLE)})
    assert (str(v), v.estimate, v.n) == (
        "holds: in all 2 testable conditions; 1 of 3 conditions not testable",
        1.0,
        2,
    )
    v = cwc.verdict_conditions({"x": _v(DOES_NOT_HOLD), "y": _v(INCONCLUSIVE)})
    assert (v.word, v.estimate) == (DOES_NOT_HOLD, 0.0)
    v = cwc.verdict_conditions({"x": _v(HOLDS), "y": _v(DOES_NOT_HOLD), "z": _v(HOLDS)})
    assert (str(v), v.estimate) == ("inconclusive: holds in 2 of 3 testable conditions", pytest.approx(2 / 3))
    v = cwc.verdict_conditions({"x": _v(NOT_TESTABLE)})
    assert (str(v), v.n) == ("not testable here: why", 0)
    with pytest.raises(ValueError):
        cwc.verdict_conditions({})


def test_downstream_sets_tasks_at_chance_aside():
    at_chance = above_chance(50, 100, 0.5)
    assert at_chance is not None and above_chance(80, 100, 0.5) is None
    v = cwc.verdict_downstream({"a": _v(HOLDS), "b": _v(DOES_NOT_HOLD)}, {"a": None, "b": at_chance})
    assert (v.word, v.n) == (HOLDS, 1)
    v = cwc.verdict_downstream({"a": _v(HOLDS)}, {"a": at_chance})
    assert str(v) == "not testable here: the clean model is not above chance on any task"
    assert cwc.verdict_downstream({"a": _v(DOES_NOT_HOLD)}, {"a": None}).word == DOES_NOT_HOLD
    v = cwc.verdict_downstream({"a": _v(DOES_NOT_HOLD), "b": _v(HOLDS)}, {"a": None, "b": None})
    assert v.word == INCONCLUSIVE
    with pytest.raises(ValueError):
        cwc.verdict_downstream({"a": _v(HOLDS)}, {"b": None})


def test_decomposition_verdicts():
    v = cwc.verdict_decomposition(0.1, 0.8, 0.5, 0.4, layers=30)
    assert (str(v), v.n, v.null) == (HOLDS, 30, 0.0)
    assert v.estimate == pytest.approx(0.1)  # the tail's geometry correlation is 0.1 above 0.3
    v = cwc.verdict_decomposition(0.8, 0.1, 0.5, 0.4, layers=30)  # the sink follows attention
    assert (str(v), v.estimate) == (DOES_NOT_HOLD, pytest.approx(-0.7))
    assert str(cwc.verdict_decomposition(0.1, 0.8, 0.5, 0.3, layers=30)) == DOES_NOT_HOLD  # tail at 0.3


def test_anti_aligned_needs_the_sink_below_zero_and_below_its_controls():
    sink = [-0.2, -0.25, -0.15, -0.22]
    v = cwc.verdict_anti_aligned(sink, {"position 5": [0.1, 0.2, 0.15, 0.1]})
    assert v.word == HOLDS and v.estimate == pytest.approx(
        -0.205
    )  # the first step's evidence: the sink's mean
    # every position is anti-aligned alike: the sink is not special
    v = cwc.verdict_anti_aligned(sink, {"position 5": [-0.3, -0.35, -0.25, -0.3]})
    assert str(v) == "does not hold: sink < position 5"
    v = cwc.verdict_anti_aligned([0.1, 0.2, 0.1, 0.15], {"position 5": [0.3, 0.4, 0.3, 0.3]})
    assert str(v) == "does not hold: sink cosine < 0"
    v = cwc.verdict_anti_aligned(sink, {"position 5": [-0.1, -0.4, 0.0, -0.3]})
    assert str(v) == "inconclusive: sink < position 5 undecided"


def test_convex_minimum_needs_a_majority_of_heads():
    v = cwc.verdict_convex_minimum(4, 6)
    assert (str(v), v.estimate, v.n, v.null) == (HOLDS, pytest.approx(2 / 3), 6, 0.5)
    v = cwc.verdict_convex_minimum(3, 6)
    assert (str(v), v.estimate) == (DOES_NOT_HOLD, 0.5)
    with pytest.raises(ValueError):
        cwc.verdict_convex_minimum(0, 0)


def test_sink_removal_verdicts():
    v = cwc.verdict_sink_removal((10.0, 14.0), (0.3, 0.8), (0.1, 0.2))
    assert (str(v), v.estimate, v.null, v.n) == (HOLDS, 4.0, 0.0, 1)
    # neither the cone nor the perplexity rises: the noise alone does not count
    v = cwc.verdict_sink_removal((10.0, 9.0), (0.3, 0.3), (0.1, 0.2))
    assert (str(v), v.estimate) == (DOES_NOT_HOLD, -1.0)
    v = cwc.verdict_sink_removal((10.0, 9.0), (0.3, 0.8), (0.1, 0.1))
    assert str(v) == "inconclusive: cone rises, PPL does not rise, noise does not rise"
    v = cwc.verdict_sink_removal((10.0, 11.0), (0.8, 0.3), (0.1, 0.2))
    assert str(v) == "inconclusive: cone does not rise, PPL rises, noise rises"


# --- the claims table on hand-built results ---------------------------------------------------------------


def _decomposition(layers: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"layer": layer, "group": group, "mean_attention": a, "mean_contribution": c,
             "mean_norm_ratio": 1.0, "mean_cosine": -0.5, "corr_contribution_attention": ca,
             "corr_contribution_geometry": cg}
            for layer in range(layers)
            for group, a, c, ca, cg in (("sink", 0.6, 0.1, 0.1, 0.8), ("tail", 0.1, 0.2, 0.5, 0.5))
        ]
    )  # fmt: skip


def _sinks(layers: int = 2) -> dict:
    cosines = pd.DataFrame(
        {"layer": range(layers), "mean": -0.3, "negative": 0.8, "n": 50, "sample": [[]] * layers}
    )
    positions = pd.DataFrame(
        [{"layer": layer, "window": w, "position": p, "cosine": (-0.3 if p == 0 else 0.2) + 0.01 * w}
         for layer in range(layers) for w in range(4) for p in (0, 5, 8)]
    )  # fmt: skip
    fits = pd.DataFrame({"p2": [1.0, 1.0, 1.0, -1.0], "vertex": [0.5, 0.5, 0.5, math.nan],
                         "interior": [True, True, True, False]})  # fmt: skip
    spread = pd.DataFrame(
        {"state": ["clean", "sink removed"], "layer": 0, "cone": [0.3, 0.8], "norm_cv": [0.1, 0.2]}
    )
    return {"decomposition": _decomposition(layers), "decomposition_bos": _decomposition(layers),
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
                            y = end * (0.9 if saturated and f > 0 else f) + 0.01 * w
                            rows.append({"text": text, "layers": layers, "scope": scope, "mode": mode,
                                         "measure": m, "window": w, "fraction": f,
                                         "delta_ppl": 0.0 if f == 0 else y})  # fmt: skip
    return pd.DataFrame(rows)


def _downstream(clean: float = 0.9) -> pd.DataFrame:
    rows = []
    for task in ("sva_linzen", "cause_effect"):
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


def test_claims_table_on_hand_built_results():
    exp = cw.configure(scale="cpu", device="cpu")
    rows = exp.claims(_sinks(), _curves("brown", True), _downstream(), _curves("shakespeare", False))
    figures = [r.figure for r in rows]
    assert figures == ["Fig. 1"] * 2 + ["faithfulness"] * 6 + ["downstream", "decomposition"] + [
        "sinks", "sinks", "sink-norm removal"] + ["faithfulness"] * 6  # fmt: skip
    words = [r.verdict.split(" (criterion: ")[0].split(":")[0] for r in rows]
    assert words == [HOLDS] * 13 + [DOES_NOT_HOLD] * 6
    assert all(r.ours.startswith("[SmolLM2-135M-Instruct, Q4_1") for r in rows[:13])
    assert all(r.ours.startswith("[this project's GPT") for r in rows[13:])
    assert (rows[2].estimate, rows[2].n) == (1.0, 2)  # both layer sets hold
    assert (rows[11].estimate, rows[11].n) == (0.75, 4)  # 3 of 4 heads with an interior minimum
    assert (rows[12].estimate, rows[12].null) == (10.0, 0.0)  # the perplexity rises by 10


def test_claims_table_gates_saturation_and_chance():
    exp = cw.configure(scale="cpu", device="cpu")
    rows = exp.claims(_sinks(), _curves("brown", True, saturated=True), _downstream(0.5), _curves("s", True))
    assert rows[2].verdict.startswith("not testable here: saturated")
    assert rows[8].verdict == "not testable here: the clean model is not above chance on any task"
