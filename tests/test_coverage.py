"""The registry of the papers' claims (``attnlab.papers.coverage``): every claim has rows or a reason, every
row it names is one the paper's claims code can produce, and ``docs/coverage.md`` prints it.

How a row is matched: a reference is a figure label and pieces of the claim text. The figure label must be a
whole string literal of the paper's claims code (``claims.py``, ``claims_*.py``, ``rules.py``, or a string
constant those modules import by name from the paper's package, as the SVA label from the presets); each
piece must lie inside one string literal of that code, docstrings left out. Python joins adjacent literals
before this reads them, so a claim split over lines matches whole; an f-string counts as its literal pieces,
so a row built from a template (``f"XSA reaches a lower final {split} loss than SA ({size})"``) is named by
those pieces ("XSA reaches a lower final", " loss than SA"), each checked on its own, and the reference stands
for every row the template gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnlab.papers import coverage
from attnlab.papers.coverage import ENTRIES, TITLES, Entry, row, unmatched
from attnlab.tools import site

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "coverage.md"


def test_every_claim_has_rows_or_a_reason():
    problems = [f"{e.paper} {e.id} ({e.claim[:60]}): {e.problem()}" for e in ENTRIES if e.problem()]
    assert not problems, "\n".join(problems)


def test_an_entry_without_rows_or_reason_is_flagged():
    assert Entry("xsa", "Fig. 9", "a claim").problem() == "neither rows nor a reason"
    assert Entry("xsa", "Fig. 9", "a claim", reason="   ").problem() == "neither rows nor a reason"
    both = Entry("xsa", "Fig. 9", "a claim", (row("Fig. 1", "a_ii grows with depth"),), reason="why")
    assert both.problem()
    assert Entry("xsa", "Fig. 9", "a claim", reason="needs 7B models").problem() == ""


def test_every_row_reference_matches_the_claims_code():
    problems = [p for e in ENTRIES for p in unmatched(e)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("paper", "figure", "part"),
    [
        ("xsa", "Fig. 7", "XSA output is orthogonal to the own value"),  # no such figure label
        ("xsa", "Fig. 1", "XSA output is orthogonal to the own values"),  # no such text
        ("qk_speed", "SVA", "at a similar"),  # the label is the presets' SVA_DATA, whole
        ("sd_routing", "S-D", "XSA output is orthogonal"),  # another paper's row
    ],
)
def test_a_reference_the_code_cannot_produce_is_caught(paper, figure, part):
    assert unmatched(Entry(paper, "x", "a claim", (row(figure, part),)))


def test_literals_are_whole_joined_strings_and_template_pieces_without_docstrings():
    source = (
        "def rows(size):\n"
        '    """A docstring: not a claim."""\n'
        '    "an attribute docstring"\n'
        '    return Claim("Fig. 3", f"XSA is below SA ({size}) at the " "end", "a paper " "number")\n'
    )
    assert coverage.literals_of(source) == {"Fig. 3", "XSA is below SA (", ") at the end", "a paper number"}


def test_template_pieces_and_imported_labels_match():
    assert not unmatched(
        Entry("xsa", "x", "c", (row("Fig. 3", "XSA reaches a lower final ", " loss than SA"),))
    )
    sva = "SVA (Brown-tagged substitute for Linzen et al.)"
    assert not unmatched(Entry("qk_speed", "x", "c", (row(sva, "at a similar "),)))


def test_the_page_is_the_registry():
    assert DOC.read_text() == coverage.rendered(DOC.read_text()), (
        "docs/coverage.md is stale: python -m attnlab.papers.coverage --write docs/coverage.md"
    )


def test_the_page_counts_every_claim():
    text = coverage.markdown()
    with_rows = sum(1 for e in ENTRIES if e.rows)
    assert text.startswith(f"{len(ENTRIES)} claims: {with_rows} judged by claims-table rows")
    assert sum(text.count(f"| {e.id} | ") >= 1 for e in ENTRIES) == len(ENTRIES)


def _account_ids(paper: str) -> list[str]:
    """The ids of the table "Claims and the paper's numbers" of the paper's account in docs/papers/."""
    text = (ROOT / "docs" / "papers" / site.doc_name(paper)).read_text()
    section = text.split("## Claims and the paper's numbers", 1)[1].split("\n## ", 1)[0]
    table = re.search(r"^\| id \|.*?\n\|[-| ]+\|\n((?:\|.*\n)+)", section, re.MULTILINE)
    assert table, f"no claims table in the account of {paper}"
    return [line.split("|")[1].strip() for line in table.group(1).splitlines()]


@pytest.mark.parametrize("paper", list(TITLES))
def test_every_claim_of_the_account_is_registered(paper):
    ids = {e.id for e in ENTRIES if e.paper == paper}
    missing = [i for i in _account_ids(paper) if i not in ids]
    assert not missing, f"{paper}: the account's claims {missing} are not in attnlab.papers.coverage"


#: The claims outside reviews found without a row: each must be registered (with its row, or the reason).
REVIEWED = [
    ("xsa", "grows with model size"),
    ("xsa", "grouped-query"),
    ("xsa", "16,384"),
    ("xsa", "cos(v_i, v_j) > 0), a_ii high"),
    ("sd_routing", "held in check by LayerNorm"),
    ("sd_routing", "8 early, 64 late"),
    ("qk_speed", "implicitly rescale the learning rates"),
    ("qk_speed", "the authors' saved heatmaps"),
    ("qk_speed", "AC rises from about 12 % to about 43 %"),
    ("qk_speed", "comprehensiveness and sufficiency"),
    ("qk_speed", "over the authors' seeds"),
    ("qk_speed", "between x5 and x40"),
    ("contribution_weights", "O(T^2)"),
    ("contribution_weights", "sums to 1"),
    ("contribution_weights", "can be negative"),
    ("contribution_weights", "Comprehensiveness with the tokens ranked by |c|"),
]


@pytest.mark.parametrize(("paper", "words"), REVIEWED)
def test_the_claims_reviews_found_without_a_row_are_registered(paper, words):
    found = [e for e in ENTRIES if e.paper == paper and words in e.claim]
    assert len(found) == 1, f"{paper}: {len(found)} entries say {words!r}"
    assert not found[0].problem() and not unmatched(found[0])


def test_the_site_publishes_the_page(tmp_path):
    assert site.site_targets("cpu", [], {})["docs/coverage.md"] == "coverage.md"
    config = site.mkdocs_config("cpu", [], {}, tmp_path, tmp_path)
    nav = config["nav"]
    assert isinstance(nav, list) and {"Which rows judge each claim": "coverage.md"} in nav
