"""The contribution-weights claims (arXiv 2606.07604): each verdict function on inputs whose answer is known,
its evidence, and the claims table on small hand-built results."""

import math

import pandas as pd
import pytest

from attnlab.papers import contribution_weights as cw
from attnlab.papers.contribution_weights import claims as cwc
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE


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


def test_every_text_set():
    v = cwc.verdict_every_text_set([True, True, True])
    assert (str(v), v.estimate, v.n) == (HOLDS, 1.0, 3)
    v = cwc.verdict_every_text_set([False, False])
    assert (str(v), v.estimate, v.n) == (DOES_NOT_HOLD, 0.0, 2)
    v = cwc.verdict_every_text_set([True, False, True])
    assert str(v) == "inconclusive: 2 of 3 text sets"
    assert (v.word, v.estimate, v.n) == (INCONCLUSIVE, pytest.approx(2 / 3), 3)
    assert math.isnan(v.null)
    with pytest.raises(ValueError):
        cwc.verdict_every_text_set([])


def test_most_faithful_per_text_set():
    index = pd.MultiIndex.from_product([["a", "b"], ["raw", "contribution"]], names=["text", "measure"])
    areas = pd.DataFrame(
        {"comprehensiveness": [1.0, 2.0, 3.0, 2.0], "sufficiency": [2.0, 1.0, 1.0, 2.0]}, index=index
    )
    assert cwc.most_faithful(areas) == ([True, False], [True, False])


def test_chance_bar_is_chance_plus_two_standard_errors():
    assert cwc.chance_bar(2, 100) == pytest.approx(0.5 + 2 * 0.05)
    assert cwc.chance_bar(4, 3) == pytest.approx(0.25 + 2 * math.sqrt(0.25 * 0.75 / 3))


def test_downstream_verdicts():
    above = ([0.9, 0.9], [2, 2], 100)  # clean accuracies well above the bar of 0.6
    v = cwc.verdict_downstream([True, True], *above)
    assert (str(v), v.estimate, v.n) == (HOLDS, 1.0, 2)
    assert str(cwc.verdict_downstream([False, False], *above)) == DOES_NOT_HOLD
    v = cwc.verdict_downstream([True, False], *above)
    assert (str(v), v.estimate) == ("inconclusive: differs between tasks", 0.5)
    # one task above chance is enough to judge all of them
    assert str(cwc.verdict_downstream([True, True], [0.9, 0.5], [2, 2], 100)) == HOLDS


def test_downstream_is_not_testable_when_every_task_is_at_chance():
    # 0.6 is exactly the bar for two choices and 100 items: not above it
    v = cwc.verdict_downstream([True, True], [0.6, 0.55], [2, 2], 100)
    assert str(v) == "not testable here: the clean model is at chance on every task"
    assert (v.word, v.estimate, v.n) == (NOT_TESTABLE, 1.0, 2)
    with pytest.raises(ValueError):
        cwc.verdict_downstream([True], [0.9, 0.9], [2, 2], 100)


def test_decomposition_verdicts():
    v = cwc.verdict_decomposition(0.1, 0.8, 0.5, 0.4, layers=30)
    assert (str(v), v.n, v.null) == (HOLDS, 30, 0.0)
    assert v.estimate == pytest.approx(0.1)  # the tail's geometry correlation is 0.1 above 0.3
    v = cwc.verdict_decomposition(0.8, 0.1, 0.5, 0.4, layers=30)  # the sink follows attention
    assert (str(v), v.estimate) == (DOES_NOT_HOLD, pytest.approx(-0.7))
    assert str(cwc.verdict_decomposition(0.1, 0.8, 0.5, 0.3, layers=30)) == DOES_NOT_HOLD  # tail at 0.3


def test_anti_aligned_verdicts():
    v = cwc.verdict_anti_aligned(-0.2, 0.8, pairs=1000)
    assert (str(v), v.n, v.null) == (HOLDS, 1000, 0.0)
    assert v.estimate == pytest.approx(0.2)
    assert str(cwc.verdict_anti_aligned(0.0, 0.8, pairs=10)) == DOES_NOT_HOLD  # mean not below zero
    v = cwc.verdict_anti_aligned(-0.2, 0.5, pairs=10)  # half negative is not more than half
    assert (str(v), v.estimate) == (DOES_NOT_HOLD, 0.0)


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


def _sinks(layers: int = 2) -> dict:
    decomposition = pd.DataFrame(
        [
            {"layer": layer, "group": group, "mean_attention": a, "mean_contribution": c,
             "mean_norm_ratio": 1.0, "mean_cosine": -0.5, "corr_contribution_attention": ca,
             "corr_contribution_geometry": cg}
            for layer in range(layers)
            for group, a, c, ca, cg in (("sink", 0.6, 0.1, 0.1, 0.8), ("tail", 0.1, 0.2, 0.5, 0.5))
        ]
    )  # fmt: skip
    cosines = pd.DataFrame(
        {"layer": range(layers), "mean": -0.3, "negative": 0.8, "n": 50, "sample": [[]] * layers}
    )
    fits = pd.DataFrame({"p2": [1.0, 1.0, 1.0, -1.0], "vertex": [0.5, 0.5, 0.5, math.nan]})
    spread = pd.DataFrame(
        {"state": ["clean", "sink removed"], "layer": 0, "cone": [0.3, 0.8], "norm_cv": [0.1, 0.2]}
    )
    return {"decomposition": decomposition, "cosines": cosines, "fits": fits, "spread": spread,
            "ppl": {"clean": 10.0, "sink removed": 20.0}}  # fmt: skip


def _curves(text: str, contribution_best: bool) -> pd.DataFrame:
    """Delta-PPL curves at fractions 0 and 1 whose areas follow the hierarchy (or its reverse)."""
    rank = {m: i for i, m in enumerate(cw.MEASURES)}  # 0 = least faithful
    rows = []
    for scope in ("head", "joint"):
        for m in cw.MEASURES:
            r = rank[m] if contribution_best else len(rank) - 1 - rank[m]
            for mode, end in (("comprehensiveness", 1.0 + r), ("sufficiency", 5.0 - r)):
                for f in (0.0, 1.0):
                    rows.append({"scope": scope, "measure": m, "mode": mode, "fraction": f,
                                 "delta_ppl": f * end, "text": text})  # fmt: skip
    return pd.DataFrame(rows)


def _downstream() -> pd.DataFrame:
    rows = []
    for task in cw.DOWNSTREAM:
        rows.append({"task": task, "measure": "none", "mode": "none", "fraction": 0.0, "accuracy": 0.9})
        for m in cw.MEASURES:
            best = m == "contribution"
            rows.append(
                {"task": task, "measure": m, "mode": "comprehensiveness", "accuracy": 0.1 if best else 0.5}
            )
            rows.append({"task": task, "measure": m, "mode": "sufficiency", "accuracy": 0.8 if best else 0.5})
    return pd.DataFrame(rows)


def test_claims_table_on_hand_built_results():
    exp = cw.configure(scale="cpu", device="cpu")  # 100 items per task: the bar for two choices is 0.6
    rows = exp.claims(_sinks(), _curves("brown", True), _downstream(), _curves("shakespeare", False))
    got = [(r.figure, r.verdict) for r in rows]
    criterion = " (criterion: "
    assert [f for f, _ in got] == ["Fig. 1"] + ["faithfulness"] * 4 + ["downstream", "decomposition"] + [
        "sinks", "sinks", "sink-norm removal"] + ["faithfulness"] * 4  # fmt: skip
    assert [v.split(criterion)[0] for _, v in got] == [HOLDS] * 10 + [DOES_NOT_HOLD] * 4
    assert got[0][1].endswith("(criterion: mean attention > 0.3 and contribution below half of it)")
    fig1 = rows[0]
    assert (fig1.estimate, fig1.n, fig1.null) == (pytest.approx(0.2), 2, 0.0)  # min(0.6 - 0.3, 0.3 - 0.1)
    assert (rows[1].estimate, rows[1].n) == (1.0, 1)  # one text set, where it holds
    assert (rows[7].n, rows[8].estimate, rows[8].n) == (100, 0.75, 4)  # cosine pairs; 3 of 4 heads
    assert (rows[9].estimate, rows[9].null) == (10.0, 0.0)  # the perplexity rises by 10


def test_claims_table_is_not_testable_at_chance():
    exp = cw.configure(scale="smoke", device="cpu")  # 4 items per task: the bar is 1.0, never exceeded
    rows = exp.claims(_sinks(), _curves("brown", True), _downstream(), _curves("shakespeare", False))
    assert rows[5].verdict == "not testable here: the clean model is at chance on every task"
