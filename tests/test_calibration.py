"""The rules' error rates, simulated: a false "holds" and a false "does not hold" each at most 5 % (plus Monte
Carlo error), the detectable effect each row prints found about 80 % of the time, and the docs' table equal
to what the code computes."""

from pathlib import Path

import pytest

from attnlab.runner import calibration
from attnlab.runner import verdicts as v

DOCS = Path(__file__).resolve().parents[1] / "docs" / "verdicts.md"


@pytest.fixture(scope="module")
def table():
    return calibration.calibrate()


def test_error_rates_stay_within_the_bound(table):
    errors = table[table["checks"] != "power"]
    assert len(errors) >= 10
    for row in errors.itertuples():
        assert row.rate <= calibration.ERROR_BOUND + 3 * max(row.mc_se, 0.0035), (
            row.rule,
            row.truth,
            row.rate,
        )


def test_power_at_the_printed_detectable_effect_is_about_80_percent(table):
    power = table[(table["checks"] == "power") & table["rule"].str.match(r"(mean|paired|slope|all of)")]
    assert len(power) >= 10
    assert power["rate"].between(0.7, 0.9).all(), power[["rule", "rate"]]


def test_a_rule_that_ignores_its_interval_would_fail_calibration():
    # the old sign-of-the-mean rule: "does not hold" whenever the mean is on the wrong side
    import numpy as np

    rng = np.random.default_rng(0)
    wrong = [float(np.mean(rng.normal(0.0, 1.0, 5))) <= 0 for _ in range(2000)]
    assert sum(wrong) / len(wrong) > 0.4  # far above the 5 % bound the rules above keep


def test_the_docs_table_is_the_computed_one(table):
    text = DOCS.read_text()
    block = text.split(calibration.TABLE_START)[1].split(calibration.TABLE_END)[0]
    assert block.strip() == calibration.markdown(table).strip()


def test_every_verdict_word_is_a_column(table):
    assert set(v.VERDICTS) <= set(table.columns)


def test_every_rule_a_table_uses_is_calibrated(table):
    # every calibrated cpu table (one with a unit column): each row's rule is calibrated, each row has a unit
    import pandas as pd

    from attnlab.runner.claims import UNITS

    covered = {name.split(" (")[0] for name in table["rule"]}
    for path in sorted((DOCS.parents[1] / "figures" / "cpu").glob("*/claims.csv")):
        frame = pd.read_csv(path)
        if "unit" not in frame:
            continue  # judged before units and calibrated composites: the report says so
        for row in frame.itertuples():
            fam = calibration.family(str(row.rule))
            assert fam is not None and (fam == "" or fam in covered), (path.parent.name, row.rule)
            assert row.unit in UNITS, (path.parent.name, row.claim, row.unit)


def test_family_names_the_rules():
    assert calibration.family(v.MEAN) == "mean" and calibration.family(v.EXACT) == ""
    assert calibration.family("all of 3 parts: each holds") == "all of 3 parts"
    assert calibration.family("majority vote of conditions") is None  # an uncalibrated rule is caught
