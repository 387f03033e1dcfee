"""The scale view every paper draws for its pretrained-model claims: one panel, a row per claim and a column
per model in order of parameter count, each cell the verdict's marker with the estimate and its 95 %
interval written beside it. It answers "does the verdict move with size?" at a glance. The estimates of one
row need not share a unit (a composite claim shows the part that decided it, which can differ between
models), so they are written, not plotted on a common axis; the claims tables hold each row's unit and
rule."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE

#: (marker, face colour) per verdict word; a not-testable cell is an open circle, its estimate (where it has
#: one, perhaps far off the others' scale: a saturated perplexity) in parentheses.
VERDICT_MARKERS = {
    HOLDS: ("o", "#009e73"),
    DOES_NOT_HOLD: ("X", "#d55e00"),
    INCONCLUSIVE: ("s", "#999999"),
    NOT_TESTABLE: ("o", "none"),
}

#: The columns `scale_figure` reads.
COLUMNS = ("claim", "model", "parameters", "verdict", "estimate", "low", "high", "null")


def _size(parameters: float) -> str:
    """A parameter count as 22.7M or 1.78B."""
    return f"{parameters / 1e9:.3g}B" if parameters >= 1e9 else f"{parameters / 1e6:.3g}M"


def cell_text(row: pd.Series) -> str:
    """A cell's words: the estimate with its 95 % interval and the null it was judged against (3 significant
    digits); a not-testable row says so, with its estimate where it has one."""
    if row["verdict"] == NOT_TESTABLE or not np.isfinite(row["estimate"]):
        return "not testable" + (f" ({row['estimate']:.3g})" if np.isfinite(row["estimate"]) else "")
    text = f"{row['estimate']:.3g}"
    if np.isfinite(row["low"]) and np.isfinite(row["high"]):
        text += f" [{row['low']:.3g}, {row['high']:.3g}]"
    return text + (f"\nnull {row['null']:.3g}" if np.isfinite(row["null"]) else "")


def scale_figure(table: pd.DataFrame, title: str) -> plt.Figure:
    """The verdict grid of ``table`` (columns `COLUMNS`, one row per (claim, model)): a row per claim
    in the table's order, a column per model in order of parameter count (labelled with its size), each cell
    the verdict's marker (`VERDICT_MARKERS`) and `cell_text`; a (claim, model) without a row is
    left empty."""
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"scale_figure needs the columns {missing}")
    claims = list(dict.fromkeys(table["claim"]))
    sizes = table.groupby("model", sort=False)["parameters"].first().sort_values(kind="stable")
    models = list(sizes.index)
    fig, ax = plt.subplots(figsize=(4.2 + 2.0 * len(models), 0.62 * len(claims) + 1.3))
    for _, r in table.iterrows():
        y, x = claims.index(r["claim"]), models.index(r["model"])
        marker, face = VERDICT_MARKERS[r["verdict"]]
        ax.plot(x - 0.36, y, marker=marker, ms=9, mfc=face, mec="#4d4d4d", ls="none")
        ax.annotate(cell_text(r), (x - 0.36, y), xytext=(9, 0), textcoords="offset points", va="center",
                    fontsize=7, linespacing=1.1)  # fmt: skip
    ax.set_xticks(range(len(models)), [f"{m}\n{_size(p)}" for m, p in sizes.items()], fontsize=8)
    ax.set_yticks(range(len(claims)), ["\n".join(textwrap.wrap(c, 60)[:3]) for c in claims], fontsize=7)
    ax.set_xlim(-0.5, len(models) - 0.5)
    ax.set_ylim(len(claims) - 0.5, -0.5)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.grid(False)
    for edge in np.arange(len(claims) - 1) + 0.5:
        ax.axhline(edge, color="0.9", lw=0.8)
    ax.set(xlabel="model (parameters), in order of size", ylabel="claim")
    for word, (marker, face) in VERDICT_MARKERS.items():
        ax.plot([], [], marker=marker, mfc=face, mec="#4d4d4d", ls="none", label=word)
    fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, ncol=4, frameon=False)
    heading = (f"{title}: the verdict per claim and model, beside it the estimate [95 % interval] and the "
               "null (each in the unit of its claims-table row)")  # fmt: skip
    ax.set_title(textwrap.fill(heading, 100), fontsize=9, pad=12)
    fig.tight_layout()
    return fig
