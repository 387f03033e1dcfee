"""Bad inputs a probe of new users' mistakes found accepted, or answered with a bare error (issue 49): each is
refused with a message that names the problem, before anything is judged or written. The verdict rules,
their statistics, the claims tables, the papers' rules and the training command line."""

import math

import numpy as np
import pandas as pd
import pytest

from attnlab import verified
from attnlab.errors import ParameterError
from attnlab.papers.contribution_weights import rules as cw
from attnlab.papers.qk_speed import rules as qk
from attnlab.papers.sd_routing import rules as sd
from attnlab.papers.synthesis import rules as syn
from attnlab.papers.xsa import rules as xsa
from attnlab.runner import claims, stats
from attnlab.runner import verdicts as v
from attnlab.runner.params import check_seeds

NAN = math.nan
DRAWS = list(np.random.default_rng(0).uniform(0.3, 0.6, 200))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: stats.t_quantile(1.5, 3), r"t_quantile\(\) needs q strictly between 0 and 1"),
        (lambda: stats.z_quantile(-0.1), r"z_quantile\(\) needs q"),
        (lambda: stats.mean_interval([1, 2, 3], level=1.5), "level strictly between 0 and 1"),
        (lambda: stats.mean_interval([1, 2, 3], level=0.0), "level strictly between 0 and 1"),
        (lambda: stats.mean_interval(["a"]), r"mean_interval\(\) needs one number per unit; value 0"),
        (lambda: stats.binomial_interval(1.5, 3), "counts whole units"),
        (lambda: stats.binomial_interval(1, 2, level=2.0), "level strictly between"),
        (lambda: stats.estimate([[1, 2], [3, 4]]), r"estimate\(\) needs one number per unit"),
    ],
)
def test_the_statistics_refuse_levels_and_values_they_cannot_use(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # a mapping's keys (the seeds) or a string's digits were judged as the values
        (lambda: v.mean_rule({10: -1.0, 11: -2.0, 12: -1.5}, "above"), r"a mapping: pass its \.values\(\)"),
        (lambda: v.mean_rule("123", "above"), "got text"),
        (lambda: v.mean_rule(np.arange(6.0).reshape(2, 3), "above"), r"a 1-D sequence"),
        (lambda: v.mean_rule([1, None, 2], "above"), "value 1 is None"),
        (lambda: v.mean_rule([1, 2, 3], "above", NAN), r"mean_rule\(\): null must be finite"),
        (lambda: v.mean_rule([1, 2, 3], "above", smallest=NAN), "smallest must be finite"),
        (lambda: v.equivalence_rule([1, 2, 3], 1.0, NAN), r"equivalence_rule\(\): null must be finite"),
        (lambda: v.paired_rule([1.0, 2.0], [2.0, 1.0], "above"), r"each condition is a mapping"),
        (lambda: v.paired_rule({0: "a", 1: 2.0}, {0: 1.0, 1: 1.0}, "above"), "value 0 is 'a'"),
        (lambda: v.share_rule(0, -2, 0.5), "0 <= successes <= n"),
        (lambda: v.share_rule(5, 3, 0.5), "0 <= successes <= n"),
        (lambda: v.every_unit({"a": [1, 2], "b": []}, "above"), r"no values to judge at unit\(s\) \['b'\]"),
        (lambda: v.exact_rule(1.0, 0.0, "above", n=1.5), "a whole n >= 0"),
        (lambda: v.exact_rule("3", 0.0, "above", n=1), "the value must be a number"),
        (lambda: v.rank_rule("1", np.random.rand(100), "above"), "the observed value must be a number"),
        (lambda: v.Verdict(v.HOLDS, p=2.0), r"p is a probability in \[0, 1\]"),
        (lambda: v.Verdict(v.HOLDS, n=-3), "n counts units"),
        (lambda: v.Verdict(v.HOLDS, estimate=3, low=5, high=1), "low <= high"),
    ],
)
def test_the_verdict_rules_refuse_what_cannot_be_judged(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_verdict_rules_still_judge_what_they_judged():
    """The checks refuse; they change no verdict: NaN values are still not testable, bools and numpy numbers
    still judged."""
    assert v.mean_rule([1.0, NAN], "above").word == v.NOT_TESTABLE
    assert v.mean_rule(np.array([1.0, 1.1, 0.9, 1.05]), "above").word == v.HOLDS
    assert v.share_rule(0, 0, 0.5).word == v.NOT_TESTABLE
    assert v.exact_rule(np.float64(1.0), 0.0, "above", n=np.int64(2)).word == v.HOLDS
    assert v.paired_rule({0: 1.0, 1: 2.1}, {0: 0.0, 1: 1.0}, "above").n == 2


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: claims.Claim(None, "c", "p", "o", v.Verdict(v.HOLDS)),
            ValueError,
            "are text; got {'figure': None}",
        ),
        (lambda: claims.bh_q(pd.Series(["a", "0.1"])), ValueError, r"p-values are numbers in \[0, 1\]"),
        (lambda: claims.claims_frame(["x"]), TypeError, "a list of Claim rows"),
        (lambda: claims.save_table([1, 2], "x", "t", "T"), TypeError, "takes a pandas DataFrame"),
        (lambda: claims.fixed("a", 2), TypeError, r"fixed\(\) formats a number; got 'a'"),
        (lambda: claims.signed(None, 2), TypeError, r"signed\(\) formats a number; got None"),
        (lambda: claims.interval("x"), TypeError, "takes a Verdict or an Estimate"),
        (lambda: claims.rounded([1.234], 1), TypeError, "takes a pandas DataFrame or Series"),
    ],
)
def test_the_claims_helpers_name_a_bad_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_bh_q_reads_a_list_or_an_array_as_a_series():
    expected = claims.bh_q(pd.Series([0.01, 0.04, NAN]))
    pd.testing.assert_series_equal(claims.bh_q([0.01, 0.04, NAN]), expected)
    pd.testing.assert_series_equal(claims.bh_q(np.array([0.01, 0.04, NAN])), expected)


@pytest.mark.parametrize("name", ["../escaped", "", "a/b", ".hidden"])
def test_save_table_keeps_its_files_inside_the_folder(tmp_path, name):
    with pytest.raises(ValueError, match="a plain file name"):
        claims.save_table(pd.DataFrame({"a": [1.0]}), tmp_path / "sub", name, "T")
    assert not list(tmp_path.rglob("*.csv"))


def test_tables_and_claims_written_where_a_file_stands_name_it(tmp_path):
    (tmp_path / "a-file").write_text("x")
    row = claims.Claim("Fig. 1", "c", "p", "o", v.Verdict(v.HOLDS), unit="none")
    with pytest.raises(verified.WriteFailed, match=r"a-file is a file, not a folder"):
        claims.write_claims([row], tmp_path / "a-file", "T")
    with pytest.raises(verified.WriteFailed, match=r"a-file is a file, not a folder"):
        claims.save_table(pd.DataFrame({"a": [1.0]}), tmp_path / "a-file" / "sub", "t", "T")
    claims.write_claims([row], str(tmp_path / "as-text"), "T")  # a folder given as text is a folder
    assert (tmp_path / "as-text" / "claims.csv").is_file()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # more heads with the property than heads, or fewer than none, once said "holds"
        (
            lambda: sd.verdict_every_head_unstable(10, 5),
            r"the unstable heads must be a whole number in \[0, n = 5\]",
        ),
        (lambda: sd.verdict_every_head_unstable(0, -1), "the unstable heads"),
        (lambda: sd.verdict_no_unstable_heads(-1, 5), "the unstable heads"),
        (lambda: sd.verdict_no_unstable_heads(7, 5), "the unstable heads"),
        (lambda: sd.verdict_no_unstable_heads(0, -3), "the unstable heads"),
        (lambda: sd.verdict_share_beyond_random(10, 5, DRAWS), r"the heads with the property \(k\)"),
        (
            lambda: sd.verdict_share_beyond_random(3, 5, [1.5] * 100),
            r"random weights' shares must lie in \[0, 1\]",
        ),
        (lambda: sd.verdict_held_in_check({0: 1.0}, {0: 2.0}, -1, 0), "whole numbers >= 0"),
        (lambda: sd.verdict_more_linear_layers({0: 20, 1: 19}, {0: 1, 1: 2}, 12), r"k_sd\[0\]"),
        (lambda: sd.verdict_more_linear_layers({0: 3, 1: 4}, {0: -5, 1: -6}, 12), r"k_sa\[0\]"),
        (lambda: sd.verdict_reallocation([150.0, 150.0], [1.0, 2.0]), r"saved \(%\) must lie in"),
        (
            lambda: sd.verdict_grows_with_size([0, -1e6, 1e7], {0: [0.1, 0.2, 0.3]}),
            "parameter counts must be positive",
        ),
        (
            lambda: sd.verdict_grows_with_size([1e6, 1e7, 1e8], {0: [10, 20, 30]}),
            r"fractions of seed 0 must lie in \[0, 1\]",
        ),
        (lambda: sd.verdict_at_offsets({"m at 1": 0.6}, {}), r"no null draws for \['m at 1'\]"),
        # an R^2 above 1 once said "holds"
        (lambda: qk.verdict_log_fit([1.5, 1.2]), r"R\^2 must lie in \[-inf, 1\]"),
        (lambda: qk.verdict_growth_regime("n mu_QK", 3.0, 0.5), r"R\^2 must lie in"),
        (lambda: qk.sweep_position([0, 1, 2]), "the ratios are positive numbers"),
        (lambda: qk.sweep_position([-1, 1, 2]), "the ratios are positive numbers"),
        (
            lambda: qk.equivalence_points({0: 0.9, 1: 0.8}, {0: 0.9, 1: 0.85}, -1.0),
            "margin is a finite number",
        ),
        (
            lambda: qk.verdict_same_accuracy({0: 95.0, 1: 96.0}, {0: 94.5, 1: 95.0}),
            r"fractions: 0.95, not 95",
        ),
        (
            lambda: qk.verdict_authors_share({0: 50.0, 1: 60.0}, 150.0),
            r"the authors' share \(%\) must lie in",
        ),
        (lambda: qk.verdict_correct_with_weak_attention({0: 0.9}, {0: 0.1}, 2.0), r"chance lies in \[0, 1\)"),
        (
            lambda: qk.verdict_collapsed_sharper({"FAFO": {0: 1.0}, "FACO": {0: 1.0}, "CAFO": {0: 1.0}}),
            r"no masses for \['CACO'\]",
        ),
        (lambda: qk.verdict_alpha_rises(["a", "b"]), r"verdict_alpha_rises\(\) needs one number per unit"),
        (lambda: cw.negative_contributions({0: 1.5, 1: 2.0}), r"shares of negative c must lie in \[0, 1\]"),
        (lambda: cw.memory({128: 1.0}, {128: 0.0}), "tensor's size must be above 0"),
        (
            lambda: cw.speed({128: ({0: -1.0, 1: 2.0}, {0: 1.0, 1: 1.0})}),
            "naive seconds at T = 128 must be above 0",
        ),
        (lambda: xsa.verdict_orthogonal([1e-8, 2e-8], tolerance=-1.0), "tolerance is a finite number >= 0"),
        (
            lambda: xsa.verdict_zero_shot_average({0: 1.0, 1: 2.0}, {0: 0.5, 1: 0.4}, -1),
            "testable counts tasks",
        ),
        (
            lambda: syn.trend([0, 1, 2], {0: [1, 2, 3], 1: [2, 3, 5]}, "above"),
            "ratios eta_QK / eta_OV must be above 0",
        ),
    ],
)
def test_the_papers_rules_refuse_impossible_evidence(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_papers_rules_still_judge_possible_evidence():
    assert sd.verdict_no_unstable_heads(0, 5).word == v.HOLDS
    assert sd.verdict_every_head_unstable(5, 5).word == v.HOLDS
    assert sd.verdict_every_head_unstable(0, 0).word == v.NOT_TESTABLE
    assert qk.verdict_log_fit([0.99, NAN]).word == v.NOT_TESTABLE  # a NaN fit: not testable, as before
    assert qk.equivalence_points({0: 0.9, 1: 0.8}, {0: 0.9, 1: NAN}, 0.0).word == v.NOT_TESTABLE
    assert xsa.verdict_orthogonal([1e-8], tolerance=0.0).word == v.DOES_NOT_HOLD  # the plain bound 0


def test_seeds_beyond_torchs_range_are_refused():
    with pytest.raises(ParameterError, match=r"below 2\*\*63"):
        check_seeds([2**70], (0,))
    assert check_seeds([2**63 - 1], (0,)) == (2**63 - 1,)


def test_a_misspelt_papermill_parameter_is_named_and_a_declared_one_is_not():
    from attnlab.runner.params import unknown_injected

    declared = 'scale: str = "auto"  # ...\nseeds: list[int] = []\n'
    history = ["", "import os\n", declared, '# Parameters\nscale = "smoke"\nseed = 1\n', "exp = ...\n"]
    assert unknown_injected(history) == ["seed"]
    assert unknown_injected(history[:3] + ['# Parameters\nscale = "smoke"\nseeds = [0]\n']) == []
    assert unknown_injected(history[:3]) == []  # run by hand: nothing injected, nothing refused


def test_every_notebook_refuses_unknown_parameters_right_after_its_parameters():
    import json
    from pathlib import Path

    for path in sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        tagged = [i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", [])]
        assert tagged, path.name
        assert "\nrefuse_unknown_parameters()" in "".join(cells[tagged[0] + 1]["source"]), path.name
