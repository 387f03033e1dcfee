"""Claims tables: each paper's claim and number beside ours, with a plain verdict, as CSV and Markdown;
result tables (``attnlab.runner.report`` gathers them into ``figures/<scale>/REPORT.md``)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from attnlab import verified
from attnlab.runner.stats import Estimate
from attnlab.runner.verdicts import ALPHA_SIDE, HOLDS, VERDICTS, Verdict

#: The columns of every claims table, in order (``docs/verdicts.md`` says what each means).
COLUMNS = (
    "figure", "claim", "paper", "ours", "verdict", "reason", "estimate", "low", "high", "n", "unit", "null",
    "margin", "detectable", "rule", "p", "q",
)  # fmt: skip

#: The units of replication a claim may rest on (the ``unit`` column): where the claim lives, and so what its
#: ``n`` counts. A training claim rests on trained models (seeds), a claim about "every pretrained model" on
#: models, a depth trend of one model on its layers; ``repeat`` is a timing repeat within one process;
#: ``none`` a deterministic quantity (an identity, a count, a simulation without noise).
UNITS = ("trained model", "pretrained model", "layer", "head", "window", "item", "repeat", "none")

#: The false-discovery level of the ``q`` column's Benjamini-Hochberg step.
FDR = 0.05


@dataclass(frozen=True)
class Claim:
    """One row of a claims table: the paper's claim and number, ours, and the
    :class:`~attnlab.runner.verdicts.Verdict` one of :mod:`attnlab.runner.verdicts`' rules judged (its word,
    reason and evidence fill the other columns)."""

    figure: str  # e.g. "Fig. 3"
    claim: str  # the paper's claim, in a sentence
    paper: str  # the paper's number(s)
    ours: str  # what this run measured
    verdict: Verdict
    unit: str = ""  # what n counts: one of UNITS (every row of a paper's table names one)

    def __post_init__(self) -> None:
        texts = {"figure": self.figure, "claim": self.claim, "paper": self.paper, "ours": self.ours}
        not_text = {name: value for name, value in texts.items() if not isinstance(value, str)}
        if not_text:
            raise ValueError(f"a claim's figure, claim, paper and ours are text; got {not_text}")
        if not isinstance(self.verdict, Verdict):
            raise ValueError(f"a claim's verdict must be a Verdict (one of {VERDICTS}); got {self.verdict!r}")
        if not isinstance(self.unit, str) or (self.unit and self.unit not in UNITS):
            raise ValueError(f"a claim's unit must be one of {UNITS}; got {self.unit!r}")

    def row(self) -> dict[str, object]:
        """The claims-table row: the texts, then the verdict's word, reason and evidence."""
        v = self.verdict
        return {
            "figure": self.figure, "claim": self.claim, "paper": self.paper, "ours": self.ours,
            "verdict": v.word, "reason": v.why, "estimate": v.estimate, "low": v.low, "high": v.high,
            "n": v.n or None, "unit": self.unit, "null": v.null, "margin": v.margin,
            "detectable": v.detectable, "rule": v.rule, "p": v.p, "q": math.nan,
        }  # fmt: skip


def rounded(frame: pd.DataFrame | pd.Series, decimals: int) -> pd.DataFrame | pd.Series:
    """``frame`` with its numeric columns rounded to ``decimals`` and negative zeros made positive, so that a
    printed table shows no "-0.00" (whose sign, and the column width it widens, depend on float noise)."""
    if not isinstance(frame, (pd.DataFrame, pd.Series)):
        raise TypeError(f"rounded() takes a pandas DataFrame or Series; got {type(frame).__name__}")
    if isinstance(frame, pd.Series):
        return frame.round(decimals) + 0.0 if pd.api.types.is_float_dtype(frame) else frame
    out = frame.copy()
    floats = out.select_dtypes("float").columns  # integer columns stay integers
    out[floats] = out[floats].round(decimals) + 0.0  # -0.0 + 0.0 == +0.0
    return out


def _check_number(value: object, who: str) -> None:
    """A TypeError naming ``who`` unless ``value`` is a number (text or None would fail deep in format())."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{who}() formats a number; got {value!r}")


def fixed(value: float, decimals: int) -> str:
    """``value`` to ``decimals`` places, a zero always unsigned ("0.00", never "-0.00": whether a mean of
    near-zero numbers prints a minus is float noise that differs between machines)."""
    _check_number(value, "fixed")
    text = f"{value:.{decimals}f}"
    return text.lstrip("-") if float(text) == 0 else text


def signed(value: float, decimals: int) -> str:
    """``value`` with an explicit sign, except when it rounds to zero ("0.0", never "+0.0" or "-0.0")."""
    _check_number(value, "signed")
    text = f"{value:+.{decimals}f}"
    return text[1:] if float(text) == 0 else text


def interval(value: Verdict | Estimate, digits: int = 4) -> str:
    """``mean [low, high]`` (the 95% interval) of a verdict's or estimate's evidence, each end signed but a
    zero (never "-0.000": its sign is float noise); the mean alone where there is no interval (one unit),
    "n/a" where there is no mean."""
    if not isinstance(value, (Verdict, Estimate)):
        raise TypeError(f"interval() takes a Verdict or an Estimate; got {type(value).__name__}")
    mean = value.estimate if isinstance(value, Verdict) else value.mean
    if not math.isfinite(mean):
        return "n/a"
    if not (math.isfinite(value.low) and math.isfinite(value.high)):
        return signed(mean, digits)
    return f"{signed(mean, digits)} [{signed(value.low, digits)}, {signed(value.high, digits)}]"


def bh_q(p: pd.Series) -> pd.Series:
    """Benjamini-Hochberg q-values of the finite p-values in ``p`` (NaN elsewhere): the smallest false
    discovery rate at which each row's claim would be among the discoveries of its table. ``p``: a Series
    (or any sequence, read as one) of numbers, NaN where a row has no test."""
    if not isinstance(p, pd.Series):
        p = pd.Series(p, dtype=object)
    try:
        p = p.astype(float)
    except (TypeError, ValueError):
        raise ValueError(f"p-values are numbers in [0, 1] (NaN: no test); got {p.tolist()[:5]}") from None
    finite = p.dropna()
    if not finite.between(0.0, 1.0).all():
        raise ValueError(f"p-values lie in [0, 1]; got {sorted(finite[~finite.between(0.0, 1.0)])[:5]}")
    q = pd.Series(math.nan, index=p.index, dtype=float)
    m = len(finite)
    if not m:
        return q
    order = finite.sort_values(kind="stable")
    ranked = order.to_numpy() * m / np.arange(1, m + 1)
    q[order.index] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q


def claims_frame(claims: list[Claim]) -> pd.DataFrame:
    """The table of ``claims``, with each row's Benjamini-Hochberg ``q`` over the table's p-values."""
    if isinstance(claims, Claim) or not all(isinstance(c, Claim) for c in claims):
        raise TypeError(f"a claims table is a list of Claim rows; got {claims!r:.120}")
    frame = pd.DataFrame([c.row() for c in claims], columns=list(COLUMNS)).astype({"n": "Int64"})
    frame["q"] = bh_q(frame["p"].astype(float))
    return frame


def by_chance(frame: pd.DataFrame) -> tuple[int, float, int]:
    """How a table stands against chance: the number of rows with a test (a p-value), how many decisive words
    ("holds" or "does not hold") they would show by chance alone if every claim sat at its null (2.5% of
    each per row, 5% in all), and how many "holds" rows survive Benjamini-Hochberg at ``FDR``."""
    tested = frame["p"].notna() if "p" in frame else pd.Series(False, index=frame.index)
    survive = (
        int(((frame["verdict"] == HOLDS) & (frame.get("q", math.nan) <= FDR)).sum()) if "q" in frame else 0
    )
    return int(tested.sum()), 2 * ALPHA_SIDE * int(tested.sum()), survive


def _cell(value: object) -> str:
    """A table cell: floats to 4 significant digits (readable, and stable against last-digit rounding noise
    between runs), anything else as its string."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = format(value, ".4g") if isinstance(value, float) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(frame: pd.DataFrame) -> str:
    cells = [[_cell(v) for v in row] for row in frame.astype(object).to_numpy()]
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


#: Printed above every smoke-scale claims table: smoke checks that the code runs end to end, nothing more.
SMOKE_NOTE = (
    "Smoke scale checks that the code runs end to end; its models are too small and too briefly trained to "
    "judge any claim, so read no verdict below as a result (the cpu-scale tables are the results)."
)


def write_claims(claims: list[Claim], folder: Path, title: str) -> pd.DataFrame:
    """Write ``claims.csv`` and ``claims.md`` into ``folder`` (``figures/<scale>/<paper>/``; at smoke scale
    the Markdown opens with ``SMOKE_NOTE``, which is also printed); return the table."""
    folder = Path(folder)
    frame = claims_frame(claims)
    note = ""
    if folder.parent.name == "smoke":
        note = f"> {SMOKE_NOTE}\n\n"
        print(SMOKE_NOTE)
    _write(folder / "claims.csv", frame.to_csv(index=False))
    _write(folder / "claims.md", f"# {title}\n\n{note}{_markdown(frame)}")
    return frame


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically; a full disk is named with the file and the free space
    (:func:`attnlab.verified.atomic`)."""
    verified.atomic(path, lambda f: f.write(text.encode("utf-8")))


def save_table(frame: pd.DataFrame, folder: Path, name: str, title: str) -> None:
    """A result table (e.g. Table 1, Table 2) as ``<name>.csv`` (floats to 10 significant digits) and
    ``<name>.md`` (to 4). ``name`` is a file name (no folder, no suffix), kept inside ``folder``."""
    if not isinstance(frame, (pd.DataFrame, pd.Series)):
        raise TypeError(f"save_table() takes a pandas DataFrame (or Series); got {type(frame).__name__}")
    if not isinstance(name, str) or not name or name.startswith(".") or "/" in name or "\\" in name:
        raise ValueError(
            f"save_table(): name must be a plain file name without a folder or suffix; got {name!r}"
        )
    folder = Path(folder)
    _write(folder / f"{name}.csv", frame.to_csv(float_format="%.10g"))
    flat = frame.reset_index()
    _write(folder / f"{name}.md", f"# {title}\n\n{_markdown(flat)}")
