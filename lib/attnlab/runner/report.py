"""The results a reader sees first: ``figures/<scale>/REPORT.md`` (a verdict overview, then every claim with
its verdict first and a link to its figure) and the README's overview block, both built from the claims tables
the notebooks wrote.

    .venv/bin/python -m attnlab.runner.report --scale cpu            # rewrite figures/cpu/REPORT.md
    .venv/bin/python -m attnlab.runner.report --scale cpu --readme   # and the README's overview block

The overviews and the README count the runs with each scale's default parameters only
(``figures/<scale>/<paper>/``); REPORT.md lists the runs with other parameters after them
(``figures/<scale>/<paper>--<slug>-<hash8>/``), each table under the run it comes from (its ``params.json``).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path

import pandas as pd

from attnlab import paths
from attnlab.papers.experiment import PARAMS_FILE, RUN_SEPARATOR
from attnlab.runner import manifest
from attnlab.runner.blocks import write_block
from attnlab.runner.claims import COLUMNS, FDR, SMOKE_NOTE, by_chance
from attnlab.runner.params import SCALES
from attnlab.runner.verdicts import VERDICTS

#: The column names of the overview, one per verdict word.
VERDICT_COLUMNS = dict(zip(VERDICTS, ("holds", "does not hold", "inconclusive", "not testable"), strict=True))
README_START = "<!-- overview:start (.venv/bin/python -m attnlab.runner.report --scale cpu --readme) -->"
README_END = "<!-- overview:end -->"


def run_folders(scale: str) -> list[Path]:
    """The folders under ``figures/<scale>/`` that publish wrote (a manifest) or that hold a claims table (a
    hidden folder is an interrupted run's leftover, never a run)."""
    root = paths.figures_dir() / scale
    found = {p.parent for pattern in ("*/claims.csv", f"*/{manifest.MANIFEST}") for p in root.glob(pattern)}
    return sorted(f for f in found if not f.name.startswith("."))


def incomplete(folder: Path) -> str:
    """Why a run folder cannot be read as publish left it ("" when it can): its manifest's problems
    (:func:`attnlab.runner.manifest.problems`), else its tables' (:func:`table_problems`), in one line."""
    found = manifest.problems(folder) or table_problems(folder)
    return "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")


def table_problems(folder: Path) -> list[str]:
    """What keeps the report from reading a run folder's tables: a ``claims.csv`` that does not parse or
    lacks the columns every table has, a verdict that is not one of the four words (in a table judged by the
    shared rule), a ``claims.md`` without a title line."""
    try:
        frame = pd.read_csv(folder / "claims.csv")
    except FileNotFoundError:
        return ["claims.csv is missing"]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        return [f"claims.csv cannot be read ({str(err).splitlines()[0][:80]})"]
    found = [f"claims.csv has no {c!r} column" for c in ("figure", "claim", "verdict") if c not in frame]
    if not found and judged_by_the_rule(frame):
        found += [
            f"claims.csv row {i + 1}: {v!r} is not a verdict" for i, v in enumerate(frame["verdict"])
            if v not in VERDICTS
        ][:3]  # fmt: skip
    try:
        lines = (folder / "claims.md").read_text().splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        lines = []
    if not lines or not lines[0].startswith("# "):
        found.append("claims.md is missing or has no title line")
    return found


def paper_folders(scale: str) -> list[Path]:
    """The :func:`run_folders` of default-parameter runs, one per paper (``figures/<scale>/<paper>/``)."""
    return [f for f in run_folders(scale) if RUN_SEPARATOR not in f.name]


def other_runs(scale: str) -> list[Path]:
    """The :func:`run_folders` of runs with other parameters, ``figures/<scale>/<paper>--<slug>-<hash8>/``."""
    return [f for f in run_folders(scale) if RUN_SEPARATOR in f.name]


def run_line(folder: Path) -> str:
    """Which run a folder's tables come from, from its ``params.json``: the scale's defaults, or each changed
    setting with its default; a folder without one was written before runs recorded their parameters."""
    record = folder / PARAMS_FILE
    if not record.is_file():
        kind = "the scale's default parameters" if RUN_SEPARATOR not in folder.name else "other parameters"
        return f"Run `{folder.name}`: {kind} (written before runs recorded them in {PARAMS_FILE})."
    run = json.loads(record.read_text())
    link = f"[{PARAMS_FILE}]({folder.name}/{PARAMS_FILE})"
    if run["default"]:
        return f"Run `{folder.name}`: the scale's default parameters ({link})."
    changed = "; ".join(
        f"`{path}` = {change['value']} (default {change['default']})"
        for path, change in run["changed"].items()
    )
    return f"Run `{folder.name}`, not the scale's defaults: {changed} ({link})."


def verdict_word(verdict: str) -> str:
    """A claims row's verdict, which must be one of the four words."""
    if verdict not in VERDICTS:
        raise ValueError(f"not a verdict: {verdict!r} (one of {VERDICTS})")
    return verdict


def figure_file(folder: Path, figure: str) -> str | None:
    """The PNG in ``folder`` that a claim's ``figure`` names ("Fig. 3" -> ``fig3_*.png``, "Table 2" ->
    ``table2*``), if exactly one matches; else None (the row links the folder)."""
    if not isinstance(figure, str):
        raise TypeError(f"figure_file: figure must be a claim's figure text, like 'Fig. 3'; got {figure!r}")
    found = re.match(r"(Fig|Table)\.?\s*(\d+)", figure)
    if found is None:
        return None
    stem = f"{found.group(1).lower()}{found.group(2)}"
    matches = sorted(folder.glob(f"{stem}_*.png")) + sorted(folder.glob(f"{stem}.png"))
    return matches[0].name if len(matches) == 1 else None


#: The columns added with the calibrated composite rule, the unit of replication and the p / q values.
CALIBRATED_COLUMNS = ("unit", "p", "q")


def judged_by_the_rule(frame: pd.DataFrame) -> bool:
    """Whether a claims table was judged by the shared decision rule (it has every column the rule writes but
    the calibrated ones, :data:`CALIBRATED_COLUMNS`); a table written before it has free-text verdicts and is
    reported as not re-judged, never counted."""
    return set(COLUMNS) - set(CALIBRATED_COLUMNS) <= set(frame.columns)


def calibrated(frame: pd.DataFrame) -> bool:
    """Whether a claims table was judged with the calibrated composite rule and names each row's unit (it has
    every column); an older table is counted, with :data:`UNCALIBRATED` beside its counts."""
    return set(COLUMNS) <= set(frame.columns)


NOT_REJUDGED = (
    "judged by the rule used before docs/verdicts.md; not re-judged yet (its free-text verdicts are not "
    "counted): re-run the notebook at this scale"
)
UNCALIBRATED = (
    "judged before composite claims had a calibrated rule and rows named their unit: a composite row may "
    "err more often than 5 %; no p-values"
)


def chance_cell(frame: pd.DataFrame) -> str:
    """The overview's chance column: of the rows with a test, how many decisive words (holds, does not hold)
    chance alone would give if every claim sat at its null, and how many holds survive Benjamini-Hochberg."""
    if not calibrated(frame):
        return "no p-values: judged before the calibrated rules (see below)"
    unreadable = [c for c in ("p", "q") if not pd.api.types.is_numeric_dtype(frame[c])]
    if unreadable:
        return f"not counted: its {' and '.join(unreadable)} column holds text (edited by hand?)"
    tested, expected, survive = by_chance(frame)
    return f"{tested} tested: ~{expected:.1f} decisive by chance; {survive} holds with q <= {FDR:g}"


def overview(scale: str, link_root: str = "", folders: list[Path] | None = None) -> str:
    """A Markdown table: one row per run folder (``folders``; default: :func:`paper_folders`, the default
    runs), how many of its claims hold, do not hold, are inconclusive and are not testable here, linking its
    claims table (paths relative to ``link_root``). A table not judged by the shared rule is listed without
    counts."""
    head = "| paper | " + " | ".join(VERDICT_COLUMNS.values()) + " | claims | against chance |"
    lines = [head, "|---" * 7 + "|"]
    for folder in paper_folders(scale) if folders is None else folders:
        why = incomplete(folder)
        if why:
            lines.append(f"| {folder.name} | incomplete, not counted: {_cell(why)} |  |  |  |  |  |")
            continue
        frame = pd.read_csv(folder / "claims.csv")
        if not judged_by_the_rule(frame):
            link = f"{link_root}{folder.name}/claims.md"
            lines.append(f"| {folder.name} | {NOT_REJUDGED} |  |  |  | [{len(frame)} claims]({link}) |  |")
            continue
        words = [verdict_word(v) for v in frame["verdict"]]
        counts = " | ".join(str(words.count(w)) for w in VERDICT_COLUMNS)
        link = f"{link_root}{folder.name}/claims.md"
        lines.append(f"| {folder.name} | {counts} | [{len(words)} claims]({link}) | {chance_cell(frame)} |")
    return "\n".join(lines) + "\n"


def _number(value: object, spec: str) -> str:
    """A number of a claims row as the report prints it; empty where it is missing."""
    return "" if value is None or pd.isna(value) else format(float(value), spec)  # type: ignore[arg-type]


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
    detectable effect. A folder that is not as publish left it (:func:`incomplete`) is named with what is
    wrong, and nothing of it is read."""
    folder = Path(folder)
    why = incomplete(folder)
    if why:
        return f"## {folder.name}: incomplete\n\n> Not read: {why}. Run its notebook again at this scale.\n"
    frame = pd.read_csv(folder / "claims.csv")
    title = (folder / "claims.md").read_text().splitlines()[0].removeprefix("# ")
    if not judged_by_the_rule(frame):
        return (
            f"## {folder.name}: {title}\n\n{run_line(folder)}\n\n> {NOT_REJUDGED} ([the old table]"
            f"({folder.name}/claims.md)).\n"
        )
    lines = [
        f"## {folder.name}: {title}",
        "",
        run_line(folder),
        "",
        "| verdict | figure | claim | ours | reason | estimate [95% interval] | unit | detectable | q |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, row in frame.iterrows():
        word = verdict_word(row["verdict"])
        image = figure_file(folder, str(row["figure"]))
        figure = f"[{row['figure']}]({folder.name}/{image})" if image else _cell(row["figure"])
        detectable = "" if pd.isna(row["detectable"]) else f"{row['detectable']:.3g}"
        q = _cell(row.get("q")) if isinstance(row.get("q"), str) else _number(row.get("q"), ".2g")
        unit = _cell(row.get("unit", ""))
        cells = [
            _cell(row["claim"]),
            _cell(row["ours"]),
            _cell(row["reason"]),
            _evidence(row),
            unit,
            detectable,
            q,
        ]
        lines.append(f"| **{word}** | {figure} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(scale: str) -> Path:
    """``figures/<scale>/REPORT.md``: the overview of the default runs, each one's claims (verdict first),
    then the same for the runs with other parameters, under a heading that says they are not the scale's."""
    root = paths.figures_dir() / scale
    root.mkdir(parents=True, exist_ok=True)
    parts = [f"# Claims at scale `{scale}`\n"]
    if scale == "smoke":
        parts.append(f"> {SMOKE_NOTE}\n")
    parts += ["## Overview\n", "The runs with the scale's default parameters.\n", overview(scale)]
    folders = paper_folders(scale)
    if any(not calibrated(pd.read_csv(f / "claims.csv")) for f in folders if not incomplete(f)):
        parts.append(f"A table with no p-values was {UNCALIBRATED}.\n")
    parts += [claims_section(folder) for folder in paper_folders(scale)]
    others = other_runs(scale)
    if others:
        parts += [
            "# Runs with other parameters\n",
            "Not the scale's defaults (each section says what changed), so not counted above nor in the "
            "README.\n",
            overview(scale, folders=others),
        ]
        parts += [claims_section(folder) for folder in others]
    report = root / "REPORT.md"
    report.write_text("\n".join(parts))
    write_summary_figures(scale)
    return report


def write_summary_figures(scale: str) -> list[Path]:
    """One figure per paper, ``figures/<scale>/summary/<paper>.png`` (and ``.pdf``): the paper's numbers
    beside ours (`attnlab.runner.paper_figure.paper_figure`), from the claims table of each default run
    that is complete and judged by the shared rule, with that paper's ``paper_numbers.PAPER_NUMBERS``. The
    figure of a paper without such a table is removed, so that none outlives its table."""
    import importlib

    from attnlab.papers import PAPERS
    from attnlab.runner.paper_figure import SUMMARY_DIR, write_paper_figure  # matplotlib only here

    out = paths.figures_dir() / scale / SUMMARY_DIR
    written = []
    for folder in paper_folders(scale):
        if folder.name not in PAPERS or incomplete(folder):
            continue
        frame = pd.read_csv(folder / "claims.csv")
        if not judged_by_the_rule(frame):
            continue
        numbers = importlib.import_module(f"{PAPERS[folder.name]}.paper_numbers").PAPER_NUMBERS
        title = (folder / "claims.md").read_text().splitlines()[0].removeprefix("# ")
        title = re.sub(r": claims at scale (\S+)$", r" at \1 scale", title)
        written.append(write_paper_figure(frame, numbers, title, out, folder.name))
    for name in PAPERS:
        if out / f"{name}.png" not in written:
            for suffix in (".png", ".pdf"):
                (out / f"{name}{suffix}").unlink(missing_ok=True)
    return written


def readme_block(scale: str) -> str:
    """The README's overview block (between its markers): the overview with links from the repository
    root."""
    body = overview(scale, link_root=f"figures/{scale}/")
    full = f"figures/{scale}/REPORT.md"
    folders = [f for f in paper_folders(scale) if not incomplete(f)]
    if any(not calibrated(pd.read_csv(f / "claims.csv")) for f in folders):
        body += f"\nA table with no p-values was {UNCALIBRATED}.\n"
    return f"{README_START}\nVerdicts at `{scale}` scale ([every claim]({full})):\n\n{body}{README_END}"


def update_readme(readme: Path, scale: str) -> bool:
    """Replace the overview block of ``readme`` with :func:`readme_block`; True if it changed."""
    body = readme_block(scale).removeprefix(f"{README_START}\n").removesuffix(README_END)
    return write_block(readme, README_START, README_END, body)


CHANGES_START = "<!-- changes:start -->"
CHANGES_END = "<!-- changes:end -->"


def old_word(text: str) -> str:
    """The verdict word a claims row written before the shared rule starts with ("does not hold: ..." ->
    "does not hold")."""
    for word in sorted(VERDICTS, key=len, reverse=True):  # "does not hold" before "holds"
        if str(text).startswith(word):
            return word
    raise ValueError(f"not a verdict: {text!r}")


def verdict_changes(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Rows whose verdict word differs between two claims tables of one paper, matched by (figure, claim)
    and, where a claim has several rows (one per pretrained model), by their order: figure, claim, old word,
    new word (``-`` for a row present in one table only)."""
    key = ["figure", "claim", "occurrence"]

    def words(table: pd.DataFrame, column: str) -> pd.DataFrame:
        occurrence = table.groupby(["figure", "claim"], sort=False).cumcount()
        words = [old_word(v) for v in table["verdict"]]
        return table.assign(occurrence=occurrence, **{column: words})[[*key, column]]

    before, after = words(old, "old"), words(new, "new")
    both = before.merge(after, on=key, how="outer").fillna("-")
    return both[both["old"] != both["new"]].drop(columns="occurrence").reset_index(drop=True)


def changes_markdown(scale: str, ref: str) -> str:
    """Every verdict at ``scale`` that differs from the claims tables committed at git ``ref``, per paper,
    with the counts of rows compared."""
    import subprocess

    root = paths.repo_root()
    if root is None:
        raise SystemExit("the verdict changes need a checkout (they read the claims tables committed in git)")
    known = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                           capture_output=True, text=True)  # fmt: skip
    if known.returncode:
        raise SystemExit(f"--changes-since {ref}: no such commit in {root}")
    if not paper_folders(scale):
        raise SystemExit(
            f"no claims tables at scale {scale!r} under {paths.figures_dir()}: nothing to compare"
        )
    parts = [
        f"Re-judged at `{scale}` scale; the old words are those committed at `{ref}` (the rule before this "
        "one)."
    ]
    for folder in paper_folders(scale):
        why = incomplete(folder)
        if why:
            parts.append(f"\n**{folder.name}**: incomplete, not compared: {why}.")
            continue
        new = pd.read_csv(folder / "claims.csv")
        if not judged_by_the_rule(new):
            parts.append(f"\n**{folder.name}**: not re-judged yet.")
            continue
        rel = folder.relative_to(root) / "claims.csv"
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"{ref}:{rel}"], capture_output=True, text=True
        )
        if shown.returncode:
            parts.append(f"\n**{folder.name}**: no table at `{ref}`.")
            continue
        old = pd.read_csv(io.StringIO(shown.stdout))
        changed = verdict_changes(old, new)
        parts.append(f"\n**{folder.name}**: {len(changed)} of {len(new)} rows changed ({len(old)} before).\n")
        if len(changed):
            parts += ["| figure | claim | before | now |", "|---|---|---|---|"]
            parts += [
                f"| {_cell(r.figure)} | {_cell(r.claim)} | {r.old} | {r.new} |" for r in changed.itertuples()
            ]
    return "\n".join(parts) + "\n"


def write_changes(path: Path, scale: str, ref: str) -> None:
    """Replace the changes block of ``path`` (``docs/verdicts.md``) with :func:`changes_markdown`."""
    write_block(path, CHANGES_START, CHANGES_END, changes_markdown(scale, ref))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.runner.report", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--scale", default="cpu", choices=SCALES)
    parser.add_argument("--readme", action="store_true", help="also rewrite the README's overview block")
    parser.add_argument("--changes-since", metavar="REF", help="list in docs/verdicts.md every verdict that "
                        "differs from the claims tables committed at git REF")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        print(write_report(args.scale))
    except OSError as err:  # a read-only or damaged figures folder: named, never a traceback
        raise SystemExit(f"error: cannot write the report at scale {args.scale}: {err}") from None
    if args.changes_since:
        root = paths.repo_root()
        if root is None:
            raise SystemExit("--changes-since needs a checkout")
        write_changes(root / "docs" / "verdicts.md", args.scale, args.changes_since)
        print("docs/verdicts.md: changes since", args.changes_since)
    if args.readme:
        root = paths.repo_root()
        if root is None:
            raise SystemExit("--readme needs a checkout")
        print("README.md", "rewritten" if update_readme(root / "README.md", args.scale) else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
