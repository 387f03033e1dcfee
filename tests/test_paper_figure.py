"""The summary figure of each paper (``attnlab.runner.paper_figure``): its paper-number mappings name rows the
claims code writes, a row gets the number of the quantity its estimate is, the figure draws ours beside the
paper's per quantity, and the report writes one figure per paper."""

import importlib
import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from attnlab.papers import PAPERS  # noqa: E402
from attnlab.runner import manifest  # noqa: E402
from attnlab.runner.claims import Claim, claims_frame, write_claims  # noqa: E402
from attnlab.runner.composite import all_of  # noqa: E402
from attnlab.runner.paper_figure import (  # noqa: E402
    NO_ESTIMATE,
    NO_NUMBER,
    OTHER_QUANTITY,
    REQUIRED,
    SUMMARY_DIR,
    PaperNumber,
    compare,
    paper_figure,
    unmatched_keys,
)
from attnlab.runner.style import VERDICT_COLORS  # noqa: E402
from attnlab.runner.verdicts import (  # noqa: E402
    GATE,
    HOLDS,
    NOT_TESTABLE,
    Verdict,
    mean_rule,
    not_testable,
    paired_rule,
)

ROOT = Path(__file__).resolve().parents[1]


def stored_claims(paper: str) -> pd.DataFrame:
    """(figure, claim) of every row of the claims table that ``notebooks/<paper>.ipynb`` printed when it was
    last stored at smoke scale: what the paper's claims code writes now (nbval fails a stored notebook whose
    outputs the current code no longer reproduces)."""
    notebook = json.loads((ROOT / "notebooks" / f"{paper}.ipynb").read_text())
    rows = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", ""))
            if "| figure | claim |" not in text:
                continue
            for line in text.splitlines():
                if line.startswith("| ") and not line.startswith("| figure |"):
                    figure, claim = re.split(r"(?<!\\) \| ", line[2:])[:2]
                    rows.append((figure.replace("\\|", "|"), claim.replace("\\|", "|")))
    return pd.DataFrame(rows, columns=["figure", "claim"])


def numbers_of(paper: str):
    return importlib.import_module(f"{PAPERS[paper]}.paper_numbers").PAPER_NUMBERS


@pytest.mark.parametrize("paper", list(PAPERS))
def test_every_paper_number_names_a_row_the_claims_code_writes(paper):
    rows = stored_claims(paper)
    assert len(rows) > 10, f"notebooks/{paper}.ipynb printed no claims table"
    assert unmatched_keys(rows, numbers_of(paper)) == []


def test_a_key_for_a_reworded_claim_matches_no_row():
    rows = stored_claims("xsa")
    dead = {("Table 2", "XSA improves zero-shot accuracy \\(arc-easy, .+\\)"): PaperNumber("q", "s", 1.0)}
    assert unmatched_keys(rows, dead) == list(dead)
    # the expressions match the whole cell, so a key cannot quietly match a longer claim by its start
    partial = {("Table 2", "XSA improves zero-shot accuracy"): PaperNumber("q", "s", 1.0)}
    assert unmatched_keys(rows, partial) == list(partial)


def test_the_mappings_give_numbers_where_the_papers_give_them():
    counts = {p: len(numbers_of(p)) for p in PAPERS}
    assert counts["synthesis"] == 0  # this project's hypotheses: no paper numbers
    assert all(counts[p] > 0 for p in ("xsa", "qk_speed", "sd_routing", "contribution_weights"))


GAIN = PaperNumber("gain (points)", "Table 9", 1.5, 0.5, 2.5)
BASE = PaperNumber("baseline accuracy (share)", "Table 9", 0.6, rules=(GATE,))
NUMBERS = {
    ("Table 9", "gain on (a|b)"): (GAIN, BASE),
    ("Fig\\. 9", "a level"): PaperNumber("level", "Fig. 9", 3.0),
}


def _frame() -> pd.DataFrame:
    gate = Verdict(NOT_TESTABLE, "at chance", 0.3, 0.25, 0.35, 300, 0.5, rule=GATE)
    gain = paired_rule({0: 2.0, 1: 3.0, 2: 2.5}, {0: 1.0, 1: 1.0, 2: 1.0}, "above")
    claims = [
        Claim("Table 9", "gain on a", "+1.5", "o", gain),
        Claim("Table 9", "gain on b", "+1.5", "o", gate),
        Claim("Fig. 9", "a level", "3", "o", mean_rule([2.0, 2.2, 2.4], "above", 1.0)),
        Claim("Fig. 9", "a level with no number", "words", "o", mean_rule([2.0, 2.2, 2.4], "above", 1.0)),
        Claim("Fig. 9", "a level", "3", "o", not_testable("no run")),
    ]  # fmt: skip
    return claims_frame(claims)


def test_each_row_gets_the_number_of_the_quantity_its_estimate_is():
    drawn, left = compare(_frame(), NUMBERS)
    assert [(c.row, c.number) for c in drawn] == [(0, GAIN), (1, BASE), (2, NUMBERS[("Fig\\. 9", "a level")])]
    assert drawn[0].estimate == pytest.approx(1.5) and drawn[0].low < 1.5 < drawn[0].high
    assert drawn[1].estimate == 0.3 and drawn[1].null == 0.5  # the gate's accuracy against its baseline
    assert left == {NO_NUMBER: 1, OTHER_QUANTITY: 0, NO_ESTIMATE: 1}
    # without a number for the gate's quantity, the gated row is another quantity, never the gain's
    drawn, left = compare(_frame(), {**NUMBERS, ("Table 9", "gain on (a|b)"): GAIN})
    assert [c.row for c in drawn] == [0, 2] and left[OTHER_QUANTITY] == 1


def test_a_composite_row_gets_the_number_of_the_part_it_shows():
    saved = PaperNumber("saved (%)", "s", low=47.0, high=65.0, nulls=(47.0,))
    cost = PaperNumber("cost (%)", "s", low=3.9, high=8.4, nulls=(8.4,))
    parts = {
        "cost": mean_rule([1.0, 2.0, 1.5], "below", 8.4),
        "saving": mean_rule([70.0, 71.0, 72.0], "above", 47.0),
    }
    refuted = {**parts, "saving": mean_rule([10.0, 11.0, 12.0], "above", 47.0)}
    frame = claims_frame(
        [Claim("R", "c", "p", "o", all_of(parts)), Claim("R", "c", "p", "o", all_of(refuted))]
    )
    drawn, _ = compare(frame, {("R", "c"): (cost, saved)})
    assert [c.number for c in drawn] == [cost, saved]  # the saving part refutes the second: its estimate
    assert drawn[1].estimate == pytest.approx(11.0)


def test_a_row_two_keys_match_is_an_error():
    with pytest.raises(ValueError, match="matches two keys"):
        compare(_frame(), {**NUMBERS, ("Table.*", "gain on a"): GAIN})


def test_a_paper_number_needs_a_value_or_a_whole_range():
    with pytest.raises(ValueError, match="value or a range"):
        PaperNumber("q", "s")
    with pytest.raises(ValueError, match="both ends"):
        PaperNumber("q", "s", low=1.0)
    with pytest.raises(ValueError, match="range 2.0 > 1.0"):
        PaperNumber("q", "s", low=2.0, high=1.0)


@pytest.mark.parametrize("column", REQUIRED)
def test_a_figure_is_never_drawn_from_a_table_without_its_columns(column):
    with pytest.raises(ValueError, match=f"columns \\['{column}'\\]"):
        paper_figure(_frame().drop(columns=column), NUMBERS, "T")


def test_the_figure_puts_each_quantity_on_its_own_labelled_axis_with_ours_beside_the_papers():
    frame = _frame()
    fig = paper_figure(frame, NUMBERS, "Paper T")
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert labels == ["gain (points)", "baseline accuracy (share)", "level"]  # one panel per quantity
    gain = fig.axes[0]
    points = {(to_hex(line.get_color()), line.get_marker()): line.get_xydata()[0] for line in gain.lines}
    ours, paper = points[(VERDICT_COLORS[HOLDS], "o")], points[("#000000", "D")]
    assert ours[0] == pytest.approx(frame.loc[0, "estimate"]) and paper[0] == GAIN.value
    assert ours[1] != paper[1]  # beside, not on top of each other
    low, high = gain.get_xlim()
    assert low < min(frame.loc[0, "low"], GAIN.low, 0.0) and high > max(frame.loc[0, "high"], GAIN.high)
    ends = [line for line in gain.lines if line.get_marker() == "|"]
    assert sorted(ends[0].get_xdata()) == [GAIN.low, GAIN.high]  # the paper's range
    gated = fig.axes[1]
    assert to_hex(gated.lines[0].get_color()) == VERDICT_COLORS[NOT_TESTABLE]
    assert [seg[0][0] for seg in gated.collections[0].get_segments()] == [0.5]  # the gate's null, dashed
    title = fig._suptitle.get_text()
    assert "Paper T" in title and "3 of 5 claims rows drawn" in title
    assert f"1 with {NO_NUMBER}" in title and f"1 with {NO_ESTIMATE}" in title


def test_a_table_with_no_comparable_row_says_so():
    fig = paper_figure(_frame(), {}, "Synthesis")
    assert not [ax for ax in fig.axes if ax.get_visible()]
    assert "0 of 5 claims rows drawn" in fig._suptitle.get_text()
    assert any("No claim of this paper" in t.get_text() for t in fig.texts)


@pytest.mark.parametrize("paper", list(PAPERS))
def test_the_committed_cpu_table_draws(paper, tmp_path):
    table = ROOT / "figures" / "cpu" / paper / "claims.csv"
    if not table.is_file():
        pytest.skip(f"no committed cpu table of {paper}")
    frame = pd.read_csv(table)
    drawn, left = compare(frame, numbers_of(paper))
    assert len(drawn) + sum(left.values()) == len(frame)
    assert all(math.isfinite(c.estimate) for c in drawn)
    paper_figure(frame, numbers_of(paper), paper).savefig(tmp_path / f"{paper}.png")


def test_the_report_writes_one_figure_per_paper_and_removes_a_stale_one(tmp_path, monkeypatch):
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    folder = tmp_path / "cpu" / "xsa"
    write_claims([Claim("Alg. 1", "XSA output is orthogonal to the own value", "0", "o", Verdict(HOLDS))],
                 folder, "XSA")  # fmt: skip
    manifest.write(folder)
    summary = tmp_path / "cpu" / SUMMARY_DIR
    summary.mkdir()
    (summary / "qk_speed.png").write_bytes(b"from a table since withdrawn")
    report.write_report("cpu")
    assert sorted(p.name for p in summary.iterdir()) == ["xsa.pdf", "xsa.png"]
    assert (summary / "xsa.png").read_bytes().startswith(b"\x89PNG")
    assert report.run_folders("cpu") == [folder]  # the summary folder is no run
