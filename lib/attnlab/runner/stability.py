"""Which training verdicts survive a second floating-point realisation (``docs/verdicts.md``, "Stability").

A claim about models this project trains is judged on runs whose last bits depend on the order in which the
machine sums: another CPU, thread count or batch split gives other trained models. Each table is therefore
computed twice on the same machine: once as published (``figures/<scale>/<paper>/``) and once under
``ATTNLAB_REALISATION=half-batches`` (:mod:`attnlab.realisation`: every gradient summed in two passes of half
the rows; its tables land in ``figures/realisations/half-batches/<scale>/<paper>/``)::

    ATTNLAB_REALISATION=half-batches make reproduce SCALE=cpu NOTEBOOKS=synthesis
    python -m attnlab.runner.stability --scale cpu --write docs/verdicts.md

:func:`compare` pairs the rows whose unit is a trained model; a row whose verdict differs between the two sits
at the noise floor, and the flip rate (with its Wilson 95 % interval) is what a reader should expect of any
training verdict here. A pair whose estimates are all equal is refused: that is one realisation twice.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from attnlab import paths
from attnlab.runner import blocks
from attnlab.runner.claims import COLUMNS
from attnlab.runner.stats import binomial_interval

#: The realisation the published tables are compared with (:data:`attnlab.realisation.REALISATIONS`).
SECOND = "half-batches"

#: The unit of the rows compared: claims about models this project trains (``attnlab.runner.claims.UNITS``).
TRAINED = "trained model"

START = "<!-- stability:start (python -m attnlab.runner.stability --write docs/verdicts.md) -->"
END = "<!-- stability:end -->"


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s trained-model rows, keyed by (figure, claim, occurrence): a table may repeat a claim."""
    missing = {"figure", "claim", "verdict", "estimate", "unit"} - set(frame.columns)
    if missing:
        raise ValueError(f"a claims table without {sorted(missing)} (columns: {COLUMNS})")
    rows = frame[frame["unit"] == TRAINED].copy()
    rows["occurrence"] = rows.groupby(["figure", "claim"]).cumcount()
    return rows.set_index(["figure", "claim", "occurrence"])


def compare(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """The trained-model rows of two claims tables of the same run under two realisations, side by side:
    figure, claim, each realisation's verdict and estimate, and ``flipped`` (the verdicts differ). ValueError
    when the tables' trained-model rows differ (not the same table) or every estimate is equal (the second
    is no other realisation: nothing was recomputed)."""
    a, b = _keyed(first), _keyed(second)
    if set(a.index) != set(b.index):
        only = sorted(set(a.index) ^ set(b.index))[:3]
        raise ValueError(
            f"the two tables have different trained-model rows (e.g. {only}): not the same table"
        )
    b = b.loc[a.index]
    out = pd.DataFrame(
        {
            "first": a["verdict"],
            "second": b["verdict"],
            "estimate_first": a["estimate"].astype(float),
            "estimate_second": b["estimate"].astype(float),
        }
    )
    out["flipped"] = out["first"] != out["second"]
    both = out[["estimate_first", "estimate_second"]].dropna()
    if len(both) and (both["estimate_first"] == both["estimate_second"]).all():
        raise ValueError(
            "every estimate is equal in the two tables: they come from one realisation (was the second run "
            "loaded from the first one's cache?)"
        )
    return out.reset_index().drop(columns="occurrence")


def summary(comparisons: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per paper (and all together): rows compared, verdicts flipped, the flip rate and its 95 % interval."""
    rows = []
    for paper, table in {**comparisons, "all": pd.concat(comparisons.values())}.items():
        n, k = len(table), int(table["flipped"].sum())
        if n == 0:
            rows.append(
                {"paper": paper, "rows": 0, "flipped": 0, "rate": float("nan"), "low": 0.0, "high": 1.0}
            )
            continue
        est = binomial_interval(k, n)
        rows.append(
            {"paper": paper, "rows": n, "flipped": k, "rate": k / n, "low": est.low, "high": est.high}
        )
    return pd.DataFrame(rows)


def markdown(comparisons: dict[str, pd.DataFrame], scale: str) -> str:
    """The docs block: the summary, then every flipped row with its two verdicts."""
    lines = [
        f"Scale `{scale}`; the second realisation: `ATTNLAB_REALISATION={SECOND}` (each gradient in two "
        "passes of half the rows). Rows compared: those whose unit is a trained model.",
        "",
        "| paper | rows | flipped | flip rate [95 % interval] |",
        "|---|---:|---:|---|",
    ]
    for r in summary(comparisons).itertuples():
        rate = "—" if r.rows == 0 else f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}]"
        lines.append(f"| {r.paper} | {r.rows} | {r.flipped} | {rate} |")
    flipped = [(p, r) for p, t in comparisons.items() for r in t[t["flipped"]].itertuples()]
    lines += ["", "Rows at the noise floor (their verdict depends on the realisation):" if flipped else
              "No trained-model verdict changed.", ""]  # fmt: skip
    for paper, r in flipped:
        lines.append(f"- {paper}, {r.figure}: {r.claim} — {r.first} / {r.second}")
    return "\n".join(lines) + "\n"


def comparisons(scale: str, papers: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every paper of ``scale`` whose table exists under both realisations, compared (:func:`compare`)."""
    root = paths.figures_dir() / scale
    second_root = paths.figures_dir() / "realisations" / SECOND / scale
    found = {}
    for folder in sorted(p for p in second_root.glob("*") if (p / "claims.csv").is_file()):
        if papers and folder.name not in papers:
            continue
        published = root / folder.name / "claims.csv"
        if not published.is_file():
            raise SystemExit(
                f"{published} is missing: the second realisation has nothing to be compared with"
            )
        found[folder.name] = compare(pd.read_csv(published), pd.read_csv(folder / "claims.csv"))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="cpu")
    parser.add_argument(
        "--papers", nargs="*", help="run folders to compare (default: every one computed twice)"
    )
    parser.add_argument("--write", type=Path, help="the page whose stability block to rewrite")
    args = parser.parse_args(argv)
    found = comparisons(args.scale, args.papers)
    if not found:
        raise SystemExit(
            f"no table of scale {args.scale!r} computed under the second realisation; run e.g. "
            f"ATTNLAB_REALISATION={SECOND} make reproduce SCALE={args.scale} NOTEBOOKS=synthesis"
        )
    return blocks.show(markdown(found, args.scale), args.write, START, END)


if __name__ == "__main__":
    raise SystemExit(main())
