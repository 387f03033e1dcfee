"""The shared verdict rules: interval_excludes, above_chance and the Wilson interval behind it."""

import math

import pytest

from attnlab.runner import verdicts
from attnlab.runner.stats import binomial_interval


def test_interval_excludes_holds_only_when_the_interval_clears_the_null():
    assert verdicts.interval_excludes([0.10, 0.12, 0.11, 0.13, 0.09], "above").word == verdicts.HOLDS
    # every value above zero, but so spread that the interval reaches below it: not "holds"
    v = verdicts.interval_excludes([0.01, 0.5, 0.02], "above")
    assert v.word == verdicts.INCONCLUSIVE and v.low < 0 < v.estimate
    assert verdicts.interval_excludes([-0.1, -0.12, -0.11], "above").word == verdicts.DOES_NOT_HOLD
    assert verdicts.interval_excludes([-0.1, -0.12, -0.11], "below").word == verdicts.HOLDS
    assert verdicts.interval_excludes([1.1, 1.2, 1.15], "above", null=1.0).word == verdicts.HOLDS


def test_interval_excludes_with_no_interval_is_inconclusive():
    one = verdicts.interval_excludes([0.5], "above")
    assert one.word == verdicts.INCONCLUSIVE and "one value" in one.why
    nan = verdicts.interval_excludes([0.5, math.nan, 0.4], "above")
    assert nan.word == verdicts.INCONCLUSIVE and "diverged" in nan.why
    with pytest.raises(ValueError):
        verdicts.interval_excludes([], "above")


def test_wilson_interval_matches_known_values():
    est = binomial_interval(8, 10)  # Wilson 95% for 8/10: 0.490-0.943
    assert est.mean == 0.8
    assert est.low == pytest.approx(0.4902, abs=1e-3) and est.high == pytest.approx(0.9433, abs=1e-3)
    assert binomial_interval(0, 20).low == 0.0 and binomial_interval(20, 20).high == 1.0
    with pytest.raises(ValueError):
        binomial_interval(3, 2)


def test_above_chance_gate():
    assert verdicts.above_chance(90, 100, 0.5) is None
    gate = verdicts.above_chance(55, 100, 0.5)  # 0.55, interval 0.45-0.64 contains 0.5
    assert gate is not None and gate.word == verdicts.NOT_TESTABLE and gate.null == 0.5
    assert verdicts.above_chance(25, 100, 0.2) is not None  # five choices: 0.25 is not clearly above 0.2
    assert verdicts.above_chance(40, 100, 0.2) is None
    with pytest.raises(ValueError):
        verdicts.above_chance(1, 2, 1.0)
