"""The rules added for claims made of parts and for fixed models: p-values that agree with the words, the
Holm step of all_of, Monte Carlo and permutation rules, Benjamini-Hochberg q, the threshold registry."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnlab.runner import thresholds
from attnlab.runner import verdicts as v
from attnlab.runner.claims import Claim, bh_q, by_chance, claims_frame
from attnlab.runner.composite import all_of


@pytest.mark.parametrize("effect", [-1.5, -0.5, 0.0, 0.5, 1.5])
def test_p_values_agree_with_the_words(effect: float) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        xs = rng.normal(effect, 1.0, 6)
        for side in ("above", "below"):
            r = v.mean_rule(xs, side)
            assert (r.word == v.HOLDS) == (r.p < v.ALPHA_SIDE)
            assert (r.word == v.DOES_NOT_HOLD) == (r.p_refute < v.ALPHA_SIDE)
        e = v.equivalence_rule(xs, 1.0)
        assert (e.word == v.HOLDS) == (e.p < v.ALPHA_SIDE)
        assert (e.word == v.DOES_NOT_HOLD) == (e.p_refute < v.ALPHA_SIDE)
        k = int(rng.binomial(40, 0.5 + effect / 4))
        s = v.share_rule(k, 40, 0.5)
        assert (s.word == v.HOLDS) == (s.p < v.ALPHA_SIDE)
        assert (s.word == v.DOES_NOT_HOLD) == (s.p_refute < v.ALPHA_SIDE)


def test_the_margin_refutes_through_p_refute() -> None:
    r = v.mean_rule([0.01, -0.01, 0.02, 0.0, 0.01], "above", margin=0.1)
    assert r.word == v.DOES_NOT_HOLD and r.p_refute < v.ALPHA_SIDE
    assert r.power_effect is not None and r.power_effect(0.9) > r.detectable


def _part(p_refute: float, word: str = v.INCONCLUSIVE, p: float = 0.5) -> v.Verdict:
    return v.Verdict(word, "x", 1.0, 0.0, 2.0, 5, 0.0, p=p, p_refute=p_refute)


def test_all_of_refutes_only_past_holm() -> None:
    # a part that refutes at its own 2.5% but not at 2.5% / 3 leaves a claim of three parts undecided
    weak = _part(0.02, v.DOES_NOT_HOLD, p=0.98)
    held = _part(0.99, v.HOLDS, p=0.001)
    assert all_of({"a": held, "b": weak, "c": held}).word == v.INCONCLUSIVE
    strong = _part(0.005, v.DOES_NOT_HOLD, p=0.995)
    out = all_of({"a": held, "b": strong, "c": held})
    assert out.word == v.DOES_NOT_HOLD and "b refutes" in out.why and math.isclose(out.p_refute, 0.015)
    both = all_of({"a": held, "b": _part(0.9, v.HOLDS, p=0.01)})
    assert both.word == v.HOLDS and both.p == 0.01  # the intersection-union p is the largest


def test_all_of_exact_parts_refute_by_word() -> None:
    exact = v.exact_rule(2.0, 1.0, "below", n=1)
    held = _part(0.99, v.HOLDS, p=0.001)
    assert all_of({"exact": exact, "held": held}).word == v.DOES_NOT_HOLD


def test_all_of_detectable_asks_each_part_for_more_power() -> None:
    rng = np.random.default_rng(1)
    a = v.mean_rule(rng.normal(1.0, 1.0, 5), "above")
    b = v.mean_rule(rng.normal(1.0, 1.0, 5), "above")
    whole = all_of({"a": a, "b": b})
    assert whole.detectable > a.detectable  # 0.8 ** (1/2) = 0.894 power per part


def test_rank_rule_needs_many_draws_and_reads_both_sides() -> None:
    draws = np.random.default_rng(2).normal(0.0, 1.0, 500)
    assert v.rank_rule(5.0, draws[:50], "above").word == v.NOT_TESTABLE  # one draw or a few never decide
    assert v.rank_rule(5.0, draws, "above").word == v.HOLDS
    assert v.rank_rule(-5.0, draws, "above").word == v.DOES_NOT_HOLD
    assert v.rank_rule(0.0, draws, "above").word == v.INCONCLUSIVE


def test_order_rule_permutes_layers() -> None:
    layers = np.arange(12.0)
    assert v.order_rule(layers, layers, "above").word == v.HOLDS
    assert v.order_rule(layers, -layers, "above").word == v.DOES_NOT_HOLD
    assert v.order_rule(layers[:4], layers[:4], "above").word == v.NOT_TESTABLE  # 24 orders: p >= 1/24
    assert v.order_rule(layers[:5], layers[:5], "above").word == v.HOLDS  # 120 orders reach 2.5%
    assert v.order_rule(layers, np.ones(12), "above").word == v.NOT_TESTABLE
    zigzag = np.array([0, 1] * 6, float)  # no trend: a slope of ~0 that a window-level test would call real
    assert v.order_rule(layers, zigzag, "above").word == v.INCONCLUSIVE


def test_bh_q_matches_a_hand_computation() -> None:
    q = bh_q(pd.Series([0.01, 0.04, 0.03, math.nan, 0.2]))
    assert q.round(4).tolist()[:3] == [0.04, 0.0533, 0.0533] and math.isnan(q[3]) and q[4] == 0.2


def test_claims_table_carries_unit_p_q_and_chance() -> None:
    rows = [Claim("Fig. 1", "c", "p", "o", v.mean_rule([1.0, 1.1, 0.9], "above"), unit="trained model"),
            Claim("Fig. 2", "c", "p", "o", v.not_testable("floor"), unit="layer")]  # fmt: skip
    frame = claims_frame(rows)
    assert frame["unit"].tolist() == ["trained model", "layer"] and frame["p"].notna().tolist() == [
        True,
        False,
    ]
    tested, expected, survive = by_chance(frame)
    assert (tested, survive) == (1, 1) and math.isclose(expected, 0.05)
    with pytest.raises(ValueError, match="unit"):
        Claim("Fig. 1", "c", "p", "o", v.not_testable("x"), unit="seed")


def test_threshold_registry() -> None:
    for key, t in thresholds.REGISTRY.items():
        assert key == t.key and key.split(".")[0] in {"xsa", "qk_speed", "contribution_weights", "sd_routing",
                                                      "synthesis"}  # fmt: skip
        assert len(t.fixed_in) >= 7 and len(t.first_table) >= 7
    anti = thresholds.REGISTRY["contribution_weights.ANTI_ALIGNMENT"]
    assert anti.posthoc and not thresholds.REGISTRY["qk_speed.LEARNS_AGREEMENT"].posthoc
    at, plain = v.mean_rule([-0.05, -0.06, -0.04], "below", -0.1), v.mean_rule([-0.05, -0.06, -0.04], "below")
    out = thresholds.posthoc(anti.key, at, plain)
    assert out.word == at.word and "98cea2c" in out.why and "plain null (0): holds" in out.why
    with pytest.raises(KeyError, match="register"):
        thresholds.value("xsa.NOPE")


def test_the_docs_print_the_registry() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "verdicts.md").read_text()
    block = text.split(thresholds.BLOCK_START)[1].split(thresholds.BLOCK_END)[0]
    assert block.strip() == thresholds.markdown().strip()


def test_wilson_interval_reaches_the_ends_exactly() -> None:
    from attnlab.runner.stats import binomial_interval

    assert binomial_interval(0, 400).low == 0.0 and binomial_interval(400, 400).high == 1.0
    assert v.above_chance(0, 400, 0.0) is not None  # no correct answer is not above a chance of 0


def test_a_generated_block_replaces_only_its_markers(tmp_path) -> None:
    from attnlab.runner.blocks import write_block

    page = tmp_path / "page.md"
    page.write_text("before\n<!-- a:start -->\nold\n<!-- a:end -->\nafter\n")
    assert write_block(page, "<!-- a:start -->", "<!-- a:end -->", "new\n")
    assert page.read_text() == "before\n<!-- a:start -->\nnew\n<!-- a:end -->\nafter\n"
    assert not write_block(page, "<!-- a:start -->", "<!-- a:end -->", "new\n")  # unchanged
    with pytest.raises(SystemExit, match="page.md: no block markers"):
        write_block(page, "<!-- b:start -->", "<!-- b:end -->", "x")


@pytest.mark.parametrize(
    ("start", "end", "body", "match"),
    [
        ("", "<b>", "new\n", "non-empty"),  # an empty start marker once deleted everything before the block
        ("<a>", "", "new\n", "non-empty"),
        ("<a>", "<a>", "new\n", "the same"),
        ("<a>", "<b>", "<b>\n", "holds a marker"),
        ("<a>", "<b>", None, "must be text"),
    ],
)
def test_a_block_with_bad_markers_or_body_is_refused_and_the_page_kept(tmp_path, start, end, body, match):
    from attnlab.runner.blocks import write_block

    page = tmp_path / "page.md"
    page.write_text("HEAD\n<a>\nold\n<b>\nTAIL\n")
    with pytest.raises(SystemExit, match=match):
        write_block(page, start, end, body)
    assert page.read_text() == "HEAD\n<a>\nold\n<b>\nTAIL\n"


def test_a_page_with_the_block_twice_is_refused(tmp_path) -> None:
    from attnlab.runner.blocks import write_block

    page = tmp_path / "page.md"
    page.write_text("<a>\nx\n<b>\nmid\n<a>\ny\n<b>\n")
    with pytest.raises(SystemExit, match="2 blocks"):
        write_block(page, "<a>", "<b>", "new\n")


def test_an_interrupted_block_write_leaves_the_page_as_it_was(tmp_path, monkeypatch) -> None:
    import os

    from attnlab.runner.blocks import write_block
    from attnlab.verified import WriteFailed

    page = tmp_path / "page.md"
    page.write_text("HEAD\n<a>\nold\n<b>\nTAIL\n")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(WriteFailed, match="page.md"):
        write_block(page, "<a>", "<b>", "new\n")
    assert page.read_text() == "HEAD\n<a>\nold\n<b>\nTAIL\n"


def test_posthoc_names_the_registry_for_an_unknown_key_and_refuses_non_verdicts() -> None:
    at = v.mean_rule([1.0, 1.1, 1.2], "above")
    with pytest.raises(KeyError, match="REGISTRY"):  # was a bare KeyError: 'nope'
        thresholds.posthoc("xsa.nope", at, at)
    key = next(iter(thresholds.REGISTRY))
    with pytest.raises(TypeError, match="at_plain_null must be a Verdict"):
        thresholds.posthoc(key, at, None)  # type: ignore[arg-type]


def test_all_of_refuses_parts_that_are_not_verdicts() -> None:
    at = v.mean_rule([1.0, 1.1, 1.2], "above")
    with pytest.raises(TypeError, match="mapping"):  # were AttributeErrors
        all_of([at, at])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"\['b'\] are not Verdicts"):
        all_of({"a": at, "b": "holds"})  # type: ignore[dict-item]


def test_rules_refuse_inputs_that_cannot_be_judged() -> None:
    with pytest.raises(ValueError, match="finite margin"):
        v.equivalence_rule([0.1, 0.2, 0.0], math.inf)
    with pytest.raises(ValueError, match="whole units"):
        v.share_rule(2.5, 10, 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite bound"):
        v.exact_rule(1.0, math.nan, "below", n=1)
    with pytest.raises(ValueError, match="n >= 0"):
        v.exact_rule(1.0, 2.0, "below", n=-1)
    with pytest.raises(ValueError, match="unit"):
        Claim("Fig. 1", "c", "p", "o", v.not_testable("x"), unit=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bh_q(pd.Series([0.01, 1.5]))
    assert v.share_rule(np.int64(7), 10, 0.5).n == 10  # numpy counts are whole units too
