"""One figure per paper: for each claim whose paper number is the same quantity, in the same units, as our
estimate, the paper's number beside ours with its 95 % interval, coloured by the verdict.

The claims tables keep the paper's number as text (``paper``), since most of the papers' numbers are words
("minimal overhead"), several numbers at once, or a different quantity from what the rule measured. Each paper
therefore lists, in ``attnlab.papers.<paper>.paper_numbers.PAPER_NUMBERS``, the rows whose number *is*
comparable: a key ``(figure, claim)`` of two regular expressions (each matching the whole cell, so that a key
survives the run-dependent parts of a claim's text: a model size, a model name) to a `PaperNumber`, or
to several, one per quantity the row's estimate can be. A row's estimate is the quantity of the rule that
decided it, and that can change between runs: a row gated on its baseline having learned the task shows the
gate's estimate (the baseline's accuracy, say) when the gate closes and the claim's (a gain) when it opens;
a claim of several parts shows the deciding part's. A `PaperNumber` says for which rules (``rules``) and
which nulls (``nulls``: which part of a composite row) it is the same quantity; a row where none applies is
left out this run, and the figure counts it.

The design (`paper_figure`). Rows carry different quantities, so one shared axis would be wrong; a
panel per row would be tall and repetitive. The figure is a stack of forest plots, one panel per quantity (the
``quantity`` of the paper numbers, also the panel's x-axis label): rows of one quantity share an axis, rows
of different quantities never do. In each row, below: our estimate (the verdict's colour and marker) with its
95 % interval as a line, as the claims table has them; above, at the same x scale: the paper's number (a
black diamond) and, where the paper gives several numbers for the row (model sizes, seeds, a "2-3"), their
range (a black bar). The row's null, the value its verdict was judged against, is a dashed grey tick across
the row. The title says how many rows were drawn and why the others were left out.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from attnlab.runner.style import VERDICT_COLORS, apply_style, save_figure
from attnlab.runner.verdicts import DOES_NOT_HOLD, GATE, HOLDS, INCONCLUSIVE, NOT_TESTABLE

#: The claims-table columns the figure reads (``attnlab.runner.claims.COLUMNS`` has them all).
REQUIRED = ("figure", "claim", "verdict", "estimate", "low", "high", "null", "rule")

#: Our estimate's marker per verdict word (the colour is ``style.VERDICT_COLORS``'s); shapes as well as
#: colours, so that the words stay apart in grey print and for colour-blind readers.
VERDICT_MARKERS = {HOLDS: "o", DOES_NOT_HOLD: "X", INCONCLUSIVE: "s", NOT_TESTABLE: "^"}

#: Why a row of a claims table is not drawn (the title counts each).
NO_NUMBER = "no paper number in our estimate's units"
OTHER_QUANTITY = "an estimate of another quantity this run (a gate's, or another part's)"
NO_ESTIMATE = "no estimate"

#: The summary figures' folder under ``figures/<scale>/`` (``attnlab.runner.report`` writes them).
SUMMARY_DIR = "summary"

_OFFSET = 0.17  # how far ours sits below and the paper's number above the middle of a row (row units)


@dataclass(frozen=True)
class PaperNumber:
    """The paper's number for a claims row, in the units of our estimate: ``value`` (NaN when the paper gives
    only a range) and/or the range ``low``-``high`` of its numbers (model sizes, seeds, "2-3"); ``quantity``
    names it (the panel's axis label), ``source`` says where it was read. It is the row's quantity when the
    row's rule starts with one of ``rules`` (empty: any rule but the gate, ``verdicts.GATE``) and, where
    ``nulls`` is given, the row's null is one of them (the part a composite row shows)."""

    quantity: str
    source: str
    value: float = math.nan
    low: float = math.nan
    high: float = math.nan
    rules: tuple[str, ...] = ()
    nulls: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if math.isnan(self.low) != math.isnan(self.high):
            raise ValueError(f"{self.quantity}: a range needs both ends")
        ranged = math.isfinite(self.low) and math.isfinite(self.high)
        if not (math.isfinite(self.value) or ranged):
            raise ValueError(f"{self.quantity}: a paper number needs a value or a range (low, high)")
        if ranged and self.low > self.high:
            raise ValueError(f"{self.quantity}: range {self.low} > {self.high}")

    def applies(self, rule: object, null: object) -> bool:
        """Whether our estimate in a row judged by ``rule`` against ``null`` is this number's quantity."""
        text = "" if pd.isna(rule) else str(rule)
        if self.rules:
            if not any(text.startswith(r) for r in self.rules):
                return False
        elif text.startswith(GATE):
            return False
        if self.nulls:
            value = _float(null)
            return any(math.isclose(value, n, rel_tol=1e-9, abs_tol=1e-12) for n in self.nulls)
        return True


#: A mapping key: (figure, claim) regular expressions, each matching the whole cell.
Key = tuple[str, str]
PaperNumbers = Mapping[Key, PaperNumber | Sequence[PaperNumber]]


def check_columns(frame: pd.DataFrame) -> None:
    """Raise ``ValueError`` naming the `REQUIRED` columns ``frame`` lacks."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"a paper figure needs the claims-table columns {missing}; the table has "
                         f"{list(frame.columns)}")  # fmt: skip


def key_rows(frame: pd.DataFrame, key: Key) -> pd.Series:
    """Which rows of ``frame`` a mapping ``key`` matches (both expressions match their whole cell)."""
    figure, claim = (re.compile(k) for k in key)
    return pd.Series(
        [
            bool(figure.fullmatch(str(f))) and bool(claim.fullmatch(str(c)))
            for f, c in zip(frame["figure"], frame["claim"], strict=True)
        ],
        index=frame.index,
        dtype=bool,
    )


def unmatched_keys(frame: pd.DataFrame, numbers: PaperNumbers) -> list[Key]:
    """The keys of ``numbers`` that match no row of ``frame`` (a claim reworded or dropped: a dead entry)."""
    return [key for key in numbers if not key_rows(frame, key).any()]


@dataclass(frozen=True)
class Comparison:
    """One drawn row: where it is in the claims table (``row``, 0-based), its figure and claim, our
    evidence, the paper's number."""

    row: int
    figure: str
    claim: str
    verdict: str
    estimate: float
    low: float
    high: float
    null: float
    number: PaperNumber


def compare(frame: pd.DataFrame, numbers: PaperNumbers) -> tuple[list[Comparison], dict[str, int]]:
    """The rows of ``frame`` to draw, each with the paper's number that applies to it, and the count of the
    rows left out per reason (`NO_NUMBER`, `OTHER_QUANTITY`, `NO_ESTIMATE`). A row two keys
    match is an error: the mapping would be ambiguous."""
    check_columns(frame)
    frame = frame.reset_index(drop=True)
    owner: dict[int, Key] = {}
    for key in numbers:
        for i in frame.index[key_rows(frame, key)]:
            if i in owner:
                raise ValueError(
                    f"claims row {i} ({frame.at[i, 'claim']!r}) matches two keys: {owner[i]} and {key}"
                )
            owner[int(i)] = key
    drawn: list[Comparison] = []
    left = {NO_NUMBER: 0, OTHER_QUANTITY: 0, NO_ESTIMATE: 0}
    for i, r in frame.iterrows():
        if i not in owner:
            left[NO_NUMBER] += 1
            continue
        given = numbers[owner[int(i)]]
        options = (given,) if isinstance(given, PaperNumber) else tuple(given)
        number = next((n for n in options if n.applies(r["rule"], r["null"])), None)
        if number is None:
            left[OTHER_QUANTITY] += 1
            continue
        estimate = _float(r["estimate"])
        if not math.isfinite(estimate):
            left[NO_ESTIMATE] += 1
            continue
        drawn.append(
            Comparison(
                int(i),
                str(r["figure"]),
                str(r["claim"]),
                str(r["verdict"]),
                estimate,
                _float(r["low"]),
                _float(r["high"]),
                _float(r["null"]),
                number,
            )
        )
    return drawn, left


def _float(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _common_prefix(texts: list[str]) -> str:
    """The words every one of ``texts`` starts with (empty for one text: its label is the whole text)."""
    if len(texts) < 2:
        return ""
    words = [t.split(" ") for t in texts]
    shared = []
    for column in zip(*words, strict=False):
        if len(set(column)) > 1:
            break
        shared.append(column[0])
    if len(shared) == min(len(w) for w in words):  # one text is the others' prefix: keep a word to show
        shared = shared[:-1]
    prefix = " ".join(shared)
    if prefix.count("(") > prefix.count(
        ")"
    ):  # never end inside a parenthesis: "claim (a, b)", "claim (a, c)"
        prefix = prefix[: prefix.rindex("(")]
    return prefix.rstrip()


def _wrap(text: str, width: int = 52, lines: int = 2) -> str:
    wrapped = textwrap.wrap(text, width)
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = wrapped[-1][: width - 1].rstrip() + "…"
    return "\n".join(wrapped)


def _panels(drawn: list[Comparison]) -> dict[str, list[Comparison]]:
    panels: dict[str, list[Comparison]] = {}
    for c in drawn:
        panels.setdefault(c.number.quantity, []).append(c)
    return panels


def _enclosed(text: str) -> bool:
    """Whether ``text`` is one parenthesis, "(...)", from its first character to its last."""
    depth = 0
    for k, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return k == len(text) - 1 and k > 0
    return False


def _labels(rows: list[Comparison]) -> tuple[str, list[str]]:
    """A panel's title and each row's label: the title the figure its rows share and the words their claims
    share (the whole claim where every row has the same one), the label the rest of its claim (and its
    figure where the rows' figures differ); the claims-table row number added where two labels would read
    the same."""
    figures = {c.figure for c in rows}
    claims = [c.claim for c in rows]
    if len(rows) > 1 and len(set(claims)) == 1:
        prefix, rests = claims[0], ["" for _ in rows]
    else:
        prefix = _common_prefix(claims)
        rests = [c[len(prefix) :].strip(" :") for c in claims]
        if all(_enclosed(t) for t in rests):  # "claim (a)", "claim (b)": a, b
            rests = [t[1:-1] for t in rests]
    if len(figures) > 1:
        rests = [f"{c.figure}: {t}" if t else c.figure for t, c in zip(rests, rows, strict=True)]
    title = (f"{rows[0].figure}: " if len(figures) == 1 else "") + prefix
    if len(rows) == 1:  # a lone row: its whole text as its label, the panel untitled
        title, rests = "", [f"{rows[0].figure}: {rows[0].claim}"]
    repeated = {t for t in rests if rests.count(t) > 1}
    labels = [
        _wrap(t + (f" (row {c.row + 1})" if t in repeated else "")) for t, c in zip(rests, rows, strict=True)
    ]
    return title.rstrip(" (:"), labels


def _limits(rows: list[Comparison]) -> tuple[float, float]:
    values = [
        v
        for c in rows
        for v in (c.estimate, c.low, c.high, c.null, c.number.value, c.number.low, c.number.high)
        if math.isfinite(v)
    ]
    low, high = min(values), max(values)
    pad = 0.08 * (high - low) if high > low else max(abs(low), 1.0) * 0.5
    return low - pad, high + pad


def _draw_panel(ax: plt.Axes, quantity: str, rows: list[Comparison]) -> None:
    title, labels = _labels(rows)
    for y, c in enumerate(rows):
        colour, marker = VERDICT_COLORS[c.verdict], VERDICT_MARKERS[c.verdict]
        if math.isfinite(c.null):
            ax.vlines(c.null, y - 0.45, y + 0.45, colors="#7f7f7f", linestyles="dashed", lw=1.0, zorder=1)
        if math.isfinite(c.low) and math.isfinite(c.high):
            ax.hlines(y + _OFFSET, c.low, c.high, colors=colour, lw=2.4, zorder=2)
        ax.plot(
            c.estimate, y + _OFFSET, marker=marker, ms=7.5, color=colour, mec="#333333", mew=0.6, zorder=3
        )
        n = c.number
        if math.isfinite(n.low):
            ax.hlines(y - _OFFSET, n.low, n.high, colors="black", lw=1.3, zorder=2)
            ax.plot([n.low, n.high], [y - _OFFSET] * 2, "|", color="black", ms=7, mew=1.3, zorder=2)
        if math.isfinite(n.value):
            ax.plot(n.value, y - _OFFSET, "D", ms=6, color="black", zorder=3)
    ax.set_yticks(range(len(rows)), labels, fontsize=7.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(*_limits(rows))
    ax.set_xlabel(quantity, fontsize=8.5)
    ax.tick_params(axis="x", labelsize=7.5)
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(_wrap(title, 80, 2), fontsize=8.5, loc="left")


def _legend() -> list[Line2D]:
    handles = [
        Line2D([], [], marker=VERDICT_MARKERS[w], color=VERDICT_COLORS[w], mec="#333333", mew=0.6, lw=2.4,
               label=f"ours, {w} [95 % interval]")
        for w in VERDICT_MARKERS
    ]  # fmt: skip
    handles += [
        Line2D([], [], marker="D", color="black", ls="none", ms=6, label="the paper's number"),
        Line2D([], [], marker="|", color="black", lw=1.3, ms=7, mew=1.3, label="the paper's range"),
        Line2D([], [], color="#7f7f7f", ls="--", lw=1.0, label="the null of the verdict"),
    ]
    return handles


def _left_out(left: Mapping[str, int]) -> str:
    parts = [f"{n} with {why}" for why, n in left.items() if n]
    return "; left out: " + "; ".join(parts) if parts else ""


def paper_figure(frame: pd.DataFrame, numbers: PaperNumbers, title: str) -> Figure:
    """The paper's numbers beside ours for the rows of the claims table ``frame`` that ``numbers`` (the
    paper's ``PAPER_NUMBERS``) makes comparable: one forest-plot panel per quantity (the module docstring
    says why), the title ``title`` followed by how many rows were drawn and why the others were not. A table
    without the `REQUIRED` columns raises ``ValueError``; a table with no comparable row gives a small
    figure that says so."""
    drawn, left = compare(frame, numbers)
    panels = _panels(drawn)
    head = [f"{title}: the paper's numbers beside ours", f"{len(drawn)} of {len(frame)} claims rows drawn"]
    head[1] += _left_out(left)
    heading = "\n".join(_wrap(line, 120, 3) for line in head)
    with plt.rc_context():
        apply_style()
        if not panels:
            fig = Figure(figsize=(8.0, 1.3), layout="constrained")
            fig.suptitle(heading, fontsize=9)
            fig.text(0.5, 0.3, "No claim of this paper has a number in the units of our estimate.",
                     ha="center", fontsize=9)  # fmt: skip
            return fig
        heights = [len(rows) * 0.36 + 0.85 for rows in panels.values()]
        fig = Figure(figsize=(8.0, sum(heights) + 1.2), layout="constrained")
        axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=heights)[:, 0]
        for ax, (quantity, rows) in zip(axes, panels.items(), strict=True):
            _draw_panel(ax, quantity, rows)
        fig.suptitle(heading, fontsize=9)
        fig.legend(handles=_legend(), loc="outside lower center", ncol=4, fontsize=7, frameon=False)
    return fig


def write_paper_figure(
    frame: pd.DataFrame, numbers: PaperNumbers, title: str, folder: Path, name: str
) -> Path:
    """Draw `paper_figure` and save it as ``<folder>/<name>.png`` and ``.pdf``
    (``style.save_figure``); returns the PNG."""
    folder.mkdir(parents=True, exist_ok=True)
    with plt.rc_context():  # the project's style while drawing and saving, the caller's settings kept
        apply_style()
        return save_figure(paper_figure(frame, numbers, title), folder, name)
