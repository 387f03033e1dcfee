"""Verdicts and claims tables."""

import pandas as pd
import pytest

from attnlab.runner import manifest
from attnlab.runner.claims import COLUMNS, Claim, claims_frame, fixed, save_table, signed, write_claims
from attnlab.runner.report import write_report
from attnlab.runner.verdicts import HOLDS, Verdict, mean_rule


def test_claims_need_a_verdict():
    with pytest.raises(ValueError, match="verdict"):
        Claim("Fig. 1", "c", "p", "o", "probably")
    with pytest.raises(ValueError, match="verdict"):
        Claim("Fig. 1", "c", "p", "o", "holds")  # words come from a rule, never typed in
    with pytest.raises(ValueError):
        Verdict("holds: sort of")


def test_a_claims_row_carries_the_word_reason_and_evidence_in_its_columns():
    verdict = mean_rule([0.2, 0.3, 0.4], "above")
    frame = claims_frame([Claim("Fig. 1", "c", "p", "o", verdict)])
    assert tuple(frame.columns) == COLUMNS
    row = frame.iloc[0]
    assert row["verdict"] == HOLDS and row["reason"] == verdict.why and row["n"] == 3
    assert row["estimate"] == pytest.approx(0.3) and row["low"] < 0.3 < row["high"]
    assert row["detectable"] > 0 and row["rule"] == verdict.rule


def test_claims_are_written_and_gathered(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    claim = Claim("Fig. 1", "a | b", "1", "2", Verdict(HOLDS))
    write_claims([claim], tmp_path / "cpu" / "xsa", "XSA")
    manifest.write(tmp_path / "cpu" / "xsa")  # as publish does
    assert (tmp_path / "cpu" / "xsa" / "claims.csv").read_text().splitlines()[1].startswith("Fig. 1,a | b")
    report = write_report("cpu").read_text()
    assert "## xsa: XSA" in report and "a \\| b" in report


def test_tables_round_floats_so_reruns_differ_only_in_what_matters(tmp_path):
    frame = pd.DataFrame({"model": ["a|b"], "energy": [0.5852937231352217], "heads": [72]}).set_index("model")
    save_table(frame, tmp_path, "t", "T")
    assert (
        tmp_path / "t.md"
    ).read_text() == "# T\n\n| model | energy | heads |\n|---|---|---|\n| a\\|b | 0.5853 | 72 |\n"
    assert (tmp_path / "t.csv").read_text() == "model,energy,heads\na|b,0.5852937231,72\n"


def test_report_opens_with_the_overview_and_puts_the_verdict_first(tmp_path, monkeypatch):
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    claims = [
        Claim("Fig. 3", "XSA lowers the loss", "-0.05", "-0.02", Verdict(HOLDS)),
        Claim("Fig. 3", "the gap grows with size", "yes", "no", Verdict("does not hold", "it shrinks")),
        Claim("Table 2", "accuracy rises", "+1", "+0.1", Verdict("not testable here", "at chance")),
        Claim("Fig. 9", "no figure file", "", "", Verdict("inconclusive", "the interval contains the null")),
    ]
    folder = tmp_path / "cpu" / "xsa"
    write_claims(claims, folder, "XSA")
    (folder / "fig3_loss.png").write_bytes(b"png")
    write_claims(claims[:1], tmp_path / "cpu" / "xsa--seeds-0", "XSA variant")
    for published in (folder, tmp_path / "cpu" / "xsa--seeds-0"):
        manifest.write(published)
    row = report.overview("cpu").splitlines()[2]
    assert row.startswith("| xsa | 1 | 1 | 1 | 1 | [4 claims](xsa/claims.md) | ")
    assert "decisive by chance" in row  # against chance: the tested rows and what chance alone would give
    text = report.write_report("cpu").read_text()
    assert text.index("## Overview") < text.index("## xsa")
    assert (
        "| **does not hold** | [Fig. 3](xsa/fig3_loss.png) | the gap grows with size | no | it shrinks |  "
        "|  |" in text  # no evidence, no detectable effect: empty cells
    )
    defaults, others = text.split("# Runs with other parameters")
    assert "| **not testable here** | Table 2 |" in defaults and "xsa--seeds" not in defaults
    assert "## xsa--seeds-0: XSA variant" in others  # listed after the defaults, under its own heading
    assert "xsa--seeds" not in report.readme_block("cpu")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.README_START}\nold\n{report.README_END}\n\nrest\n")
    assert report.update_readme(readme, "cpu") and not report.update_readme(readme, "cpu")
    assert "[4 claims](figures/cpu/xsa/claims.md)" in readme.read_text() and "rest" in readme.read_text()


def test_a_report_accepts_only_the_four_words():
    from attnlab.runner.report import verdict_word

    assert verdict_word("does not hold") == "does not hold"
    for text in ("maybe", "holds: the 95% interval excludes the null", "does not hold: in none of 8"):
        with pytest.raises(ValueError):
            verdict_word(text)


def test_printed_zeros_carry_no_sign():
    """A mean of near-zero numbers may come out as -0.001 on one machine and +0.001 on another: printed, both
    are "0.00", so stored notebook outputs do not depend on float noise."""
    values = (-0.001, -0.0, 0.001, -0.005001, 1.234)
    assert [fixed(v, 2) for v in values] == ["0.00", "0.00", "0.00", "-0.01", "1.23"]
    assert [signed(v, 1) for v in (-0.01, 0.04, 0.06, -2.0)] == ["0.0", "0.0", "+0.1", "-2.0"]


def test_a_table_from_before_the_rule_is_flagged_not_counted(tmp_path, monkeypatch):
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    folder = tmp_path / "cpu" / "qk_speed"
    folder.mkdir(parents=True)
    old = {
        "figure": ["Fig. 2"],
        "claim": ["c"],
        "paper": ["p"],
        "ours": ["o"],
        "verdict": ["does not hold: x"],
    }
    pd.DataFrame(old).to_csv(folder / "claims.csv", index=False)
    (folder / "claims.md").write_text("# QK\n")
    manifest.write(folder)
    row = report.overview("cpu").splitlines()[2]
    assert "not re-judged" in row and "| 0 |" not in row
    assert "not re-judged" in report.claims_section(folder)


def test_verdict_changes_are_matched_by_figure_and_claim():
    from attnlab.runner.report import verdict_changes

    old = pd.DataFrame({"figure": ["F1", "F1", "F2"], "claim": ["a", "b", "gone"],
                        "verdict": ["does not hold: mean below", "holds", "holds"]})  # fmt: skip
    new = pd.DataFrame({"figure": ["F1", "F1", "F3"], "claim": ["b", "a", "added"],
                        "verdict": ["holds", "inconclusive", "not testable here"]})  # fmt: skip
    changed = verdict_changes(old, new)
    rows = {(r.claim, r.old, r.new) for r in changed.itertuples()}
    assert rows == {
        ("a", "does not hold", "inconclusive"),
        ("gone", "holds", "-"),
        ("added", "-", "not testable here"),
    }
    # a claim judged once per model: rows matched in order, never each with each
    per_model = pd.DataFrame(
        {"figure": ["F"] * 3, "claim": ["c"] * 3, "verdict": ["holds", "holds", "holds"]}
    )
    moved = per_model.assign(verdict=["holds", "does not hold: x", "holds"])
    assert [(r.old, r.new) for r in verdict_changes(per_model, moved).itertuples()] == [
        ("holds", "does not hold")
    ]
    assert verdict_changes(per_model, per_model).empty


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda f: (f / "claims.csv").unlink(), "claims.csv is missing"),
        (lambda f: (f / "claims.md").unlink(), "claims.md is missing"),
        (lambda f: (f / "claims.csv").write_text("figure,claim\nFig. 1,edited\n"), "claims.csv was changed"),
        (lambda f: (f / "extra.png").write_bytes(b"x"), "extra.png was added"),
        (lambda f: (f / manifest.MANIFEST).unlink(), "no MANIFEST.sha256"),
    ],
)
def test_a_damaged_run_folder_is_shown_incomplete_never_dropped_or_read(tmp_path, monkeypatch, damage, why):
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    folder = tmp_path / "cpu" / "xsa"
    write_claims([Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))], folder, "XSA")
    manifest.write(folder)
    assert manifest.problems(folder) == [] and "| xsa | 1 |" in report.overview("cpu")
    damage(folder)
    row = report.overview("cpu").splitlines()[2]
    assert row.startswith("| xsa | incomplete, not counted:") and why in row
    text = write_report("cpu").read_text()  # no crash, whatever is missing
    assert f"## xsa: incomplete\n\n> Not read: {why}" in text and "| **holds** |" not in text


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (
            lambda f: (f / "claims.csv").write_text((f / "claims.csv").read_text().replace("holds", "maybe")),
            "row 1: 'maybe' is not a verdict",
        ),
        (lambda f: (f / "claims.csv").write_bytes(b'a,b\n"x\n\xff\x00'), "claims.csv cannot be read"),
        (lambda f: (f / "claims.md").write_text(""), "claims.md is missing or has no title line"),
    ],
)
def test_a_table_published_damaged_is_shown_incomplete_not_a_crash(tmp_path, monkeypatch, damage, why):
    # the manifest is written after the damage: what publish itself wrote is still checked for readability
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    folder = tmp_path / "cpu" / "xsa"
    write_claims([Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))], folder, "XSA")
    damage(folder)
    manifest.write(folder)
    row = report.overview("cpu").splitlines()[2]
    assert row.startswith("| xsa | incomplete, not counted:") and why in row
    text = write_report("cpu").read_text()
    assert "## xsa: incomplete\n\n> Not read: " in text and why in text


@pytest.mark.parametrize(
    ("text", "why"),
    [(b"\xff\xfe\x00garbage", "is not text"), (b"not a manifest line\n", "line 1 is not '<sha256>  <file>'")],
)
def test_a_damaged_manifest_is_named_as_damaged(tmp_path, text, why):
    folder = tmp_path / "xsa"
    write_claims([Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))], folder, "XSA")
    (folder / manifest.MANIFEST).write_bytes(text)
    assert manifest.problems(folder) == [f"{manifest.MANIFEST} {why}: damaged"]


def test_the_report_command_refuses_an_unknown_scale_and_names_an_unwritable_report(tmp_path, monkeypatch,
                                                                                    capsys):  # fmt: skip
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    for scale in ("huge", "", "../elsewhere"):
        with pytest.raises(SystemExit) as exit_:
            report.main(["--scale", scale])
        assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere
    (tmp_path / "cpu" / "REPORT.md").mkdir(parents=True)  # where the report goes, a folder stands
    with pytest.raises(SystemExit, match="cannot write the report at scale cpu: .*REPORT.md"):
        report.main(["--scale", "cpu"])


def test_the_report_helpers_name_a_bad_argument(tmp_path):
    from attnlab.runner import report

    with pytest.raises(TypeError, match="figure must be a claim's figure text"):
        report.figure_file(tmp_path, None)  # type: ignore[arg-type]
    folder = tmp_path / "xsa"
    write_claims([Claim("Fig. 1", "c", "p", "o", Verdict(HOLDS))], folder, "XSA")
    manifest.write(folder)
    assert "| **holds** |" in report.claims_section(str(folder))  # type: ignore[arg-type]


def test_verdict_changes_refuse_an_unknown_commit_and_an_empty_scale(tmp_path, monkeypatch):
    # a bad reference or a scale without tables once emptied the changes block of docs/verdicts.md
    from attnlab.runner import report

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    with pytest.raises(SystemExit, match="no such commit"):
        report.changes_markdown("cpu", "nosuchref123")
    with pytest.raises(SystemExit, match="nothing to compare"):
        report.changes_markdown("cpu", "HEAD")


def test_a_hand_edited_p_column_is_not_counted(tmp_path, monkeypatch):
    from attnlab.runner import report
    from attnlab.runner.claims import Claim, write_claims
    from attnlab.runner.verdicts import mean_rule

    monkeypatch.setenv("ATTNLAB_FIGURES", str(tmp_path))
    folder = tmp_path / "cpu" / "xsa"
    write_claims([Claim("Fig. 1", "c", "p", "o", mean_rule([1.0, 1.2, 0.9], "above"), unit="trained model")],
                 folder, "XSA")  # fmt: skip
    frame = pd.read_csv(folder / "claims.csv")
    frame["p"] = frame["p"].astype(object)
    frame.loc[0, "p"] = "tiny"
    frame.to_csv(folder / "claims.csv", index=False)
    manifest.write(folder)
    row = report.overview("cpu").splitlines()[2]
    assert "p column holds text" in row and "decisive by chance" not in row
    assert "| **holds** |" in report.claims_section(folder)  # the table still reads, no crash


def test_an_interval_prints_no_signed_zero():
    from attnlab.runner.claims import interval
    from attnlab.runner.stats import mean_interval

    assert interval(mean_interval([0.0001, -0.0001, 0.0]), 3) == "0.000 [0.000, 0.000]"
    assert interval(mean_interval([1.0, 2.0, 3.0]), 1) == "+2.0 [-0.5, +4.5]"
