"""The results a reader sees first: ``figures/<scale>/REPORT.md`` (a verdict overview, then every claim with
its verdict first and a link to its figure) and the README's overview block, both built from the claims tables
the notebooks wrote.

    python -m attnlab.runner.report --scale cpu            # rewrite figures/cpu/REPORT.md
    python -m attnlab.runner.report --scale cpu --readme   # and the README's overview between its markers
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from attnlab import paths
from attnlab.runner.claims import SMOKE_NOTE
from attnlab.runner.verdicts import VERDICTS

#: The column names of the overview, one per verdict word.
VERDICT_COLUMNS = dict(zip(VERDICTS, ("holds", "does not hold", "inconclusive", "not testable"), strict=True))
README_START = "<!-- overview:start (python -m attnlab.runner.report --scale cpu --readme) -->"
README_END = "<!-- overview:end -->"


def paper_folders(scale: str) -> list[Path]:
    """The folders under ``figures/<scale>/`` with a claims table, default-parameter runs only (a
    ``<paper>--<parameters>`` folder is a variant; a hidden folder is an interrupted run's leftover)."""
    root = paths.figures_dir() / scale
    folders = (p.parent for p in root.glob("*/claims.csv"))
    return sorted(f for f in folders if "--" not in f.name and not f.name.startswith("."))


def verdict_word(verdict: str) -> str:
    """A claims row's verdict, which must be one of the four words."""
    if verdict not in VERDICTS:
        raise ValueError(f"not a verdict: {verdict!r} (one of {VERDICTS})")
    return verdict


def figure_file(folder: Path, figure: str) -> str | None:
    """The PNG in ``folder`` that a claim's ``figure`` names ("Fig. 3" -> ``fig3_*.png``, "Table 2" ->
    ``table2*``), if exactly one matches; else None (the row links the folder)."""
    found = re.match(r"(Fig|Table)\.?\s*(\d+)", figure)
    if found is None:
        return None
    stem = f"{found.group(1).lower()}{found.group(2)}"
    matches = sorted(folder.glob(f"{stem}_*.png")) + sorted(folder.glob(f"{stem}.png"))
    return matches[0].name if len(matches) == 1 else None


def overview(scale: str, link_root: str = "") -> str:
    """A Markdown table: one row per paper, how many of its claims hold, do not hold, are inconclusive and
    are not testable here, linking its claims table (paths relative to ``link_root``)."""
    lines = ["| paper | " + " | ".join(VERDICT_COLUMNS.values()) + " | claims |", "|---" * 6 + "|"]
    for folder in paper_folders(scale):
        words = [verdict_word(v) for v in pd.read_csv(folder / "claims.csv")["verdict"]]
        counts = " | ".join(str(words.count(w)) for w in VERDICT_COLUMNS)
        link = f"{link_root}{folder.name}/claims.md"
        lines.append(f"| {folder.name} | {counts} | [{len(words)} claims]({link}) |")
    return "\n".join(lines) + "\n"


def _cell(text: object) -> str:
    return "" if pd.isna(text) else str(text).replace("|", "\\|").replace("\n", " ")


def _evidence(row: pd.Series) -> str:
    """``estimate [low, high] (n = n)`` of a claims row, as far as it has them."""
    if pd.isna(row["estimate"]):
        return ""
    text = f"{row['estimate']:.4g}"
    if not (pd.isna(row["low"]) or pd.isna(row["high"])):
        text += f" [{row['low']:.4g}, {row['high']:.4g}]"
    return text + (f" (n = {int(row['n'])})" if not pd.isna(row["n"]) else "")


def claims_section(folder: Path) -> str:
    """One paper's claims, verdict first: verdict | figure (linked) | claim | ours | reason | evidence |
    detectable effect."""
    frame = pd.read_csv(folder / "claims.csv")
    title = (folder / "claims.md").read_text().splitlines()[0].removeprefix("# ")
    lines = [
        f"## {folder.name}: {title}",
        "",
        "| verdict | figure | claim | ours | reason | estimate [95% interval] | detectable |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, row in frame.iterrows():
        word = verdict_word(row["verdict"])
        image = figure_file(folder, str(row["figure"]))
        figure = f"[{row['figure']}]({folder.name}/{image})" if image else _cell(row["figure"])
        detectable = "" if pd.isna(row["detectable"]) else f"{row['detectable']:.3g}"
        cells = [_cell(row["claim"]), _cell(row["ours"]), _cell(row["reason"]), _evidence(row), detectable]
        lines.append(f"| **{word}** | {figure} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(scale: str) -> Path:
    """``figures/<scale>/REPORT.md``: the overview, then each paper's claims (verdict first)."""
    root = paths.figures_dir() / scale
    root.mkdir(parents=True, exist_ok=True)
    parts = [f"# Claims at scale `{scale}`\n"]
    if scale == "smoke":
        parts.append(f"> {SMOKE_NOTE}\n")
    parts += ["## Overview\n", overview(scale)]
    parts += [claims_section(folder) for folder in paper_folders(scale)]
    report = root / "REPORT.md"
    report.write_text("\n".join(parts))
    return report


def readme_block(scale: str) -> str:
    """The README's overview block (between its markers): the overview with links from the repository
    root."""
    body = overview(scale, link_root=f"figures/{scale}/")
    full = f"figures/{scale}/REPORT.md"
    return f"{README_START}\nVerdicts at `{scale}` scale ([every claim]({full})):\n\n{body}{README_END}"


def update_readme(readme: Path, scale: str) -> bool:
    """Replace the overview block of ``readme`` with :func:`readme_block`; True if it changed."""
    text = readme.read_text()
    pattern = re.compile(re.escape(README_START) + ".*?" + re.escape(README_END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{readme}: no overview markers ({README_START} ... {README_END})")
    new = pattern.sub(lambda _: readme_block(scale), text)
    readme.write_text(new)
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.runner.report", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--scale", default="cpu")
    parser.add_argument("--readme", action="store_true", help="also rewrite the README's overview block")
    args = parser.parse_args(argv)
    print(write_report(args.scale))
    if args.readme:
        root = paths.repo_root()
        if root is None:
            raise SystemExit("--readme needs a checkout")
        print("README.md", "rewritten" if update_readme(root / "README.md", args.scale) else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
