"""Verdicts and claims tables."""

import pandas as pd
import pytest

from attnlab.runner.claims import Claim, gather_report, save_table, write_claims
from attnlab.runner.verdicts import every_seed


def verdict_below_zero(gaps):
    return str(every_seed(gaps, "below"))


def test_verdict_below_zero():
    assert verdict_below_zero([-0.1, -0.2]) == "holds"
    assert verdict_below_zero([-0.1]).startswith("holds: one seed")
    assert verdict_below_zero([0.1, -0.05]) == "does not hold"
    assert verdict_below_zero([-0.1, 0.05]).startswith("inconclusive")
    with pytest.raises(ValueError):
        verdict_below_zero([])


def test_every_seed_judges_both_sides_and_carries_its_evidence():
    v = every_seed([0.2, 0.3, 0.4], "above")
    assert v.word == "holds" and v.n == 3 and v.null == 0.0
    assert v.estimate == pytest.approx(0.3) and v.low < 0.3 < v.high
    assert every_seed([0.2, 0.3], "above", null=0.5).word == "does not hold"
    assert every_seed([float("nan"), -1.0], "below").word == "inconclusive"  # a diverged run is on no side


def test_claims_need_a_plain_verdict():
    with pytest.raises(ValueError, match="verdict"):
        Claim("Fig. 1", "c", "p", "o", "probably")


def test_claims_are_written_and_gathered(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    claim = Claim("Fig. 1", "a | b", "1", "2", "holds")
    write_claims([claim], tmp_path / "cpu" / "xsa", "XSA")
    assert (tmp_path / "cpu" / "xsa" / "claims.csv").read_text().splitlines()[1].startswith("Fig. 1,a | b")
    report = gather_report("cpu").read_text()
    assert "## xsa: XSA" in report and "a \\| b" in report


def test_tables_round_floats_so_reruns_differ_only_in_what_matters(tmp_path):
    frame = pd.DataFrame({"model": ["a|b"], "energy": [0.5852937231352217], "heads": [72]}).set_index("model")
    save_table(frame, tmp_path, "t", "T")
    assert (
        tmp_path / "t.md"
    ).read_text() == "# T\n\n| model | energy | heads |\n|---|---|---|\n| a\\|b | 0.5853 | 72 |\n"
    assert (tmp_path / "t.csv").read_text() == "model,energy,heads\na|b,0.5852937231,72\n"
