"""The scale view every paper draws for its pretrained-model claims: one panel per claim, each model's
estimate with its 95 % interval, the models in order of parameter count, the marker saying the verdict, the
null as a line. It answers "does the verdict move with size?" at a glance; the claims tables hold the rows."""

from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE

#: (marker, face colour) per verdict word a panel plots; a not-testable row is named at the foot of its panel
#: instead (its estimate, where there is one, may lie far off the others' scale: a saturated perplexity).
VERDICT_MARKERS = {
    HOLDS: ("o", "#009e73"),
    DOES_NOT_HOLD: ("X", "#d55e00"),
    INCONCLUSIVE: ("s", "#999999"),
}

#: The columns :func:`scale_figure` reads.
COLUMNS = ("claim", "model", "parameters", "verdict", "estimate", "low", "high", "null")


def _size(parameters: float) -> str:
    """A parameter count as 22.7M or 1.78B."""
    return f"{parameters / 1e9:.3g}B" if parameters >= 1e9 else f"{parameters / 1e6:.3g}M"


def scale_figure(table: pd.DataFrame, title: str, columns: int = 3) -> plt.Figure:
    """One panel per claim of ``table`` (columns :data:`COLUMNS`, one row per (claim, model)): x the models
    in order of parameter count, evenly spaced and labelled with their size (models a few percent apart in
    size stay legible), y the estimate with its 95 % interval, the marker the verdict word, the dashed line
    the null the verdict compared against; a model whose row is not testable here is named at the foot of
    its panel, with its estimate where it has one, and not plotted."""
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"scale_figure needs the columns {missing}")
    claims = list(dict.fromkeys(table["claim"]))
    rows = math.ceil(len(claims) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.2 * rows), squeeze=False)
    for ax, claim in zip(axes.flat, claims, strict=False):
        sub = table[table["claim"] == claim].sort_values("parameters", kind="stable", ignore_index=True)
        untestable = []
        for x, r in sub.iterrows():
            if r["verdict"] == NOT_TESTABLE or not np.isfinite(r["estimate"]):
                estimate = f" ({r['estimate']:.3g})" if np.isfinite(r["estimate"]) else ""
                untestable.append(f"{r['model']}{estimate}")
                continue
            marker, face = VERDICT_MARKERS[r["verdict"]]
            if np.isfinite(r["low"]) and np.isfinite(r["high"]):
                ax.plot([x, x], [r["low"], r["high"]], color="#4d4d4d", lw=1.2)
            ax.plot(x, r["estimate"], marker=marker, ms=8, mfc=face, mec="#4d4d4d", ls="none")
        nulls = sub["null"].dropna().unique()
        if len(nulls) == 1:
            ax.axhline(float(nulls[0]), color="#4d4d4d", ls="--", lw=0.8)
        labels = [f"{m}\n{_size(p)}" for m, p in zip(sub["model"], sub["parameters"], strict=True)]
        ax.set_xticks(range(len(sub)), labels, rotation=30, ha="right", fontsize=7)
        ax.set_xlim(-0.5, len(sub) - 0.5)
        if untestable:
            note = textwrap.fill("not testable here: " + ", ".join(untestable), 60)
            ax.text(0.02, 0.03, note, transform=ax.transAxes, fontsize=7, va="bottom")
        ax.set_title("\n".join(textwrap.wrap(claim, 58)[:3]), fontsize=8)
    for ax in list(axes.flat)[len(claims) :]:
        ax.set_visible(False)
    for word, (marker, face) in VERDICT_MARKERS.items():
        fig.axes[0].plot([], [], marker=marker, mfc=face, mec="#4d4d4d", ls="none", label=word)
    heading = (f"{title}: estimate [95 % interval], models in order of size; dashed: the null; named at the "
               "foot: not testable here (estimate)")  # fmt: skip
    fig.suptitle(textwrap.fill(heading, int(11 * fig.get_figwidth())), y=1.0)
    fig.legend(loc="lower center", bbox_to_anchor=(0.5, 0.0), fontsize=8, ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    return fig
