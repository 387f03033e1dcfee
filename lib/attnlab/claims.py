"""Claims tables: each paper's claim and number beside ours, with a plain verdict, as CSV and Markdown;
result tables; and the gathered ``figures/<scale>/REPORT.md``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from attnlab import paths

VERDICTS = ("holds", "does not hold", "inconclusive", "not testable here")


@dataclass(frozen=True)
class Claim:
    figure: str  # e.g. "Fig. 3"
    claim: str  # the paper's claim, in a sentence
    paper: str  # the paper's number(s)
    ours: str  # what this run measured
    verdict: str  # one of VERDICTS, optionally followed by ": why"

    def __post_init__(self) -> None:
        if not self.verdict.startswith(VERDICTS):
            raise ValueError(f"verdict must start with one of {VERDICTS}; got {self.verdict!r}")


def verdict_below_zero(gaps: Sequence[float]) -> str:
    """Verdict for "the gap is negative" from one gap per seed: ``holds`` when every seed's gap is below
    zero, ``does not hold`` when the mean gap is not, ``inconclusive`` when seeds disagree."""
    if not gaps:
        raise ValueError("no gaps to judge")
    if all(g < 0 for g in gaps):
        return "holds" if len(gaps) > 1 else "holds: one seed only, no spread"
    if sum(gaps) / len(gaps) >= 0:
        return "does not hold"
    return "inconclusive: the sign differs between seeds"


def rounded(frame: pd.DataFrame | pd.Series, decimals: int) -> pd.DataFrame | pd.Series:
    """``frame`` with its numeric columns rounded to ``decimals`` and negative zeros made positive, so that a
    printed table shows no "-0.00" (whose sign, and the column width it widens, depend on float noise)."""
    if isinstance(frame, pd.Series):
        return frame.round(decimals) + 0.0 if pd.api.types.is_numeric_dtype(frame) else frame
    out = frame.copy()
    numeric = out.select_dtypes("number").columns
    out[numeric] = out[numeric].round(decimals) + 0.0  # -0.0 + 0.0 == +0.0
    return out


def signed(value: float, decimals: int) -> str:
    """``value`` with an explicit sign, except when it rounds to zero ("0.0", never "+0.0" or "-0.0")."""
    text = f"{value:+.{decimals}f}"
    return text[1:] if float(text) == 0 else text


def claims_frame(claims: list[Claim]) -> pd.DataFrame:
    return pd.DataFrame([asdict(c) for c in claims])


def _cell(value: object) -> str:
    """A table cell: floats to 4 significant digits (readable, and stable against last-digit rounding noise
    between runs), anything else as its string."""
    text = format(value, ".4g") if isinstance(value, float) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(frame: pd.DataFrame) -> str:
    cells = [[_cell(v) for v in row] for row in frame.astype(object).to_numpy()]
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def write_claims(claims: list[Claim], folder: Path, title: str) -> pd.DataFrame:
    """Write ``claims.csv`` and ``claims.md`` into ``folder``; return the table."""
    frame = claims_frame(claims)
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / "claims.csv", index=False)
    (folder / "claims.md").write_text(f"# {title}\n\n{_markdown(frame)}")
    return frame


def save_table(frame: pd.DataFrame, folder: Path, name: str, title: str) -> None:
    """A result table (e.g. Table 1, Table 2) as ``<name>.csv`` (floats to 10 significant digits) and
    ``<name>.md`` (to 4)."""
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{name}.csv", float_format="%.10g")
    flat = frame.reset_index()
    (folder / f"{name}.md").write_text(f"# {title}\n\n{_markdown(flat)}")


def gather_report(scale: str) -> Path:
    """Concatenate every paper's ``claims.md`` under ``figures/<scale>/`` into ``REPORT.md``."""
    root = paths.figures_dir() / scale
    parts = [f"# Claims at scale `{scale}`\n"]
    for md in sorted(root.glob("*/claims.md")):
        parts.append(md.read_text().replace("# ", f"## {md.parent.name}: ", 1))
    report = root / "REPORT.md"
    root.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(parts))
    return report
