"""Synthesis figures: the kinds-by-measures overview and one figure per question, each from the tidy tables
of :class:`attnlab.papers.synthesis.experiment.SynthesisExperiment` (save with
``attnlab.runner.style.save_figure``). Colours: ``attnlab.runner.style``, one per kind."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnlab.papers.synthesis.lenses import MEASURES
from attnlab.papers.synthesis.presets import LABELS
from attnlab.runner.stats import mean_interval
from attnlab.runner.style import SHARE_CMAP, color, legend_below

COLUMN_LABELS = {"val_loss": "final val loss", **MEASURES}


def _label(kind: str) -> str:
    return LABELS.get(kind, kind)


def overview(table: pd.DataFrame) -> plt.Figure:
    """The overview matrix: kinds (rows, "random init" last) by measures (columns), each cell the mean over
    seeds and its 95% interval. Measures have different units, so the colour is each cell's place within its
    column's range (0: the column's lowest mean, 1: its highest), on the share colormap with its colorbar."""
    wide = table.pivot_table(index="kind", columns="measure", values="mean", observed=True, sort=False)
    low = table.pivot_table(index="kind", columns="measure", values="low", observed=True, sort=False)
    high = table.pivot_table(index="kind", columns="measure", values="high", observed=True, sort=False)
    cols = [c for c in COLUMN_LABELS if c in wide.columns]
    wide, low, high = wide[cols], low.reindex_like(wide)[cols], high.reindex_like(wide)[cols]
    span = (wide.max() - wide.min()).replace(0, np.nan)
    shade = (wide - wide.min()) / span
    fig, ax = plt.subplots(figsize=(1.45 * len(cols) + 2.5, 0.75 * len(wide) + 1.6))
    image = ax.imshow(shade.to_numpy(dtype=float), cmap=SHARE_CMAP, vmin=0, vmax=1, aspect="auto")
    for i in range(len(wide)):
        for j in range(len(cols)):
            m, lo, hi = wide.iat[i, j], low.iat[i, j], high.iat[i, j]
            if np.isnan(m):
                continue
            text = f"{m:.3g}" if np.isnan(lo) else f"{m:.3g}\n[{lo:.3g}, {hi:.3g}]"
            dark = not np.isnan(shade.iat[i, j]) and shade.iat[i, j] < 0.55
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(len(cols)), [COLUMN_LABELS[c] for c in cols], rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(wide)), [_label(k) for k in wide.index], fontsize=8)
    ax.grid(False)
    bar = fig.colorbar(image, ax=ax, fraction=0.025)
    bar.set_label("place in the column's range (0 lowest, 1 highest)")
    ax.set_title("Every lens on every kind (layer mean; mean [95% interval] over seeds)")
    fig.tight_layout()
    return fig


def by_layer(
    lens: pd.DataFrame, measures: list[str], kinds: list[str], reference: str | None = None
) -> plt.Figure:
    """One panel per measure: its value at every layer for every trained kind at ratio 1 (mean over seeds,
    the seeds as dots), and the same kind at initialisation dashed. ``reference``: a column drawn as a grey
    dotted line (uniform attention) in the panels of a_ii and the first token's attention."""
    data = lens[lens["ratio"] == 1.0]
    fig, axes = plt.subplots(1, len(measures), figsize=(4.1 * len(measures), 3.5), squeeze=False)
    for ax, measure in zip(axes[0], measures, strict=True):
        for kind in kinds:
            for state, style in (("trained", "-"), ("init", ":")):
                sub = data[(data["kind"] == kind) & (data["state"] == state)].dropna(subset=[measure])
                if sub.empty:
                    continue
                mean = sub.groupby("layer")[measure].mean()
                label = _label(kind) if state == "trained" else None
                ax.plot(mean.index + 1, mean.to_numpy(), style, marker="o", color=color(kind), label=label)
                if state == "trained":
                    ax.scatter(sub["layer"] + 1, sub[measure], s=10, color=color(kind), alpha=0.5)
        if reference and measure in ("a_ii", "first_attention"):
            ref = data.groupby("layer")[reference].mean()
            ax.plot(ref.index + 1, ref.to_numpy(), ls="--", color="grey", label="uniform attention")
        ax.set(title=MEASURES[measure], xlabel="layer", ylabel=measure)
        ax.set_xticks(sorted(data["layer"].unique() + 1))
    axes[0][0].plot([], [], ":", color=color("random init"), label="dotted: at initialisation")
    legend_below(fig, ncol=4)
    fig.tight_layout()
    return fig


def sink_geometry(values: pd.DataFrame, kinds: list[str]) -> plt.Figure:
    """The contribution-weights lens per kind (trained, ratio 1, layer mean): left, attention on the first
    token against its contribution, one dot per seed, with the diagonal (contribution = attention); right,
    the first token's value cosine with the others beside the control token's, per seed."""
    data = values[(values["ratio"] == 1.0) & (values["state"] == "trained")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for kind in kinds:
        sub = data[data["kind"] == kind]
        left.scatter(sub["first_attention"], sub["first_contribution"], color=color(kind), label=_label(kind))
    lim = [0, max(data["first_attention"].max(), data["first_contribution"].max(), 0.05) * 1.1]
    left.plot(lim, lim, ls="--", color="grey", label="contribution = attention")
    left.set(xlabel="attention on token 0", ylabel="contribution of token 0", title="first-token sink")
    x = np.arange(len(kinds))
    for offset, column, hatch, name in ((-0.2, "sink_value_cos", "", "token 0"),
                                        (0.2, "control_value_cos", "//", "control token")):  # fmt: skip
        means = [data.loc[data["kind"] == k, column].mean() for k in kinds]
        right.bar(x + offset, means, width=0.38, color=[color(k) for k in kinds], hatch=hatch,
                  edgecolor="white", label=name)  # fmt: skip
        for i, k in enumerate(kinds):
            right.scatter(np.full(sum(data["kind"] == k), i + offset), data.loc[data["kind"] == k, column],
                          s=10, color="black")  # fmt: skip
    right.axhline(0, color="black", lw=0.8)
    right.set_xticks(x, [_label(k) for k in kinds], rotation=25, ha="right", fontsize=8)
    right.set(ylabel="mean cos(v~_p, v~_j)", title="value geometry: token 0 (plain) vs control (hatched)")
    legend_below(fig, ncol=4)
    fig.tight_layout()
    return fig


def ratio_effects(values: pd.DataFrame, kinds: list[str]) -> plt.Figure:
    """The eta_QK / eta_OV question: normalised attention entropy and final validation loss against the
    ratio (QK x sqrt(r), OV / sqrt(r): their geometric mean at the tuned base rate), per kind (mean over
    seeds, seeds as dots)."""
    data = values[(values["state"] == "trained") & values["kind"].isin(kinds)]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, column, label in zip(
        axes,
        ("entropy", "val_loss"),
        ("attention entropy / log(i+1)", "final val loss (nats / byte)"),
        strict=True,
    ):
        for kind in kinds:
            sub = data[data["kind"] == kind]
            mean = sub.groupby("ratio")[column].mean()
            ax.plot(mean.index, mean.to_numpy(), marker="o", color=color(kind), label=_label(kind))
            ax.scatter(sub["ratio"], sub[column], s=10, color=color(kind), alpha=0.5)
        ax.set_xscale("log", base=2)
        ax.set(xlabel="eta_QK / eta_OV (geometric mean of the two rates fixed)", ylabel=label, title=label)
    legend_below(fig, ncol=4)
    fig.tight_layout()
    return fig


#: The faithfulness lens's rankings: legend label and ``attnlab.runner.style`` colour concept.
RANKINGS = {"random": ("random order (null)", "chance"), "raw": ("attention", "raw"),
            "contribution": ("contribution weights", "contribution")}  # fmt: skip


def faithfulness(areas: pd.DataFrame, kinds: list[str]) -> plt.Figure:
    """The single-layer faithfulness protocol on every kind: per mode, the log area (mean over windows and
    layers) of each ranking, bars the mean over seeds with its 95% interval, seeds as dots. Comprehensiveness:
    higher is more faithful; sufficiency: lower is; the random order is the null every ranking must beat."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    x = np.arange(len(kinds))
    width = 0.8 / len(RANKINGS)
    for ax, mode in zip(axes, ("comprehensiveness", "sufficiency"), strict=True):
        data = areas[areas["mode"] == mode]
        for k, (measure, (label, concept)) in enumerate(RANKINGS.items()):
            offset = (k - (len(RANKINGS) - 1) / 2) * width
            means: list[float] = []
            errors: list[list[float]] = [[], []]
            for kind in kinds:
                seeds = data.loc[(data["kind"] == kind) & (data["measure"] == measure), "area"].tolist()
                est = mean_interval(seeds)
                means.append(est.mean)
                errors[0].append(est.mean - est.low if len(seeds) > 1 else 0.0)
                errors[1].append(est.high - est.mean if len(seeds) > 1 else 0.0)
                ax.scatter(
                    np.full(len(seeds), x[kinds.index(kind)] + offset), seeds, s=8, color="black", zorder=3
                )
            null = concept == "chance"  # the floor: white with grey hatching, apart from attention's grey
            ax.bar(x + offset, means, width=width, color="white" if null else color(concept), label=label,
                   yerr=errors, capsize=2, hatch="///" if null else None, edgecolor=color("random init"),
                   alpha=0.9)  # fmt: skip
        better = "higher" if mode == "comprehensiveness" else "lower"
        ax.set_xticks(x, [_label(k) for k in kinds], rotation=25, ha="right", fontsize=8)
        ax.set(ylabel="log area (mean sign * log(1 + |dPPL|))", title=f"{mode} ({better} is more faithful)")
    legend_below(fig)
    fig.tight_layout()
    return fig
