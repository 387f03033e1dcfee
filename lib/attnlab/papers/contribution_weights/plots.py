"""Figures of the contribution-weights notebook (arXiv 2606.07604), one function per figure, each taking the
tidy results of ``attnlab.papers.contribution_weights``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.colors import TwoSlopeNorm

from attnlab.papers.contribution_weights.presets import MEASURE_LABELS, MEASURES

MEASURE_COLORS = dict(zip(MEASURES, sns.color_palette("colorblind", len(MEASURES)), strict=True))


def fig1(result: dict) -> plt.Figure:
    """Fig. 1: attention (left) vs contribution weights (right) of two heads; rows are queries, columns
    keys."""
    tokens = result["tokens"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 10))
    for row, head in zip(axes, result["heads"], strict=True):
        a, c = head["attention"].numpy(), head["contribution"].numpy()
        mask = np.triu(np.ones_like(a, dtype=bool), 1)
        sns.heatmap(a, mask=mask, cmap="viridis", vmin=0, ax=row[0], cbar_kws={"label": "a_ij"})
        lim = max(abs(c[~mask]).max(), 1e-6)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-lim, vmax=lim)
        sns.heatmap(c, mask=mask, cmap="RdBu_r", norm=norm, ax=row[1], cbar_kws={"label": "c_ij"})
        where = f"layer {head['layer']}, head {head['head']}"
        row[0].set_title(f"attention, {where}\nfirst-token mass {a[1:, 0].mean():.2f}")
        row[1].set_title(f"contribution weights, {where}\nfirst-token contribution {c[1:, 0].mean():.2f}")
        for ax in row:
            ax.set_xticks(np.arange(len(tokens)) + 0.5, tokens, rotation=90, fontsize=7)
            ax.set_yticks(np.arange(len(tokens)) + 0.5, tokens, rotation=0, fontsize=7)
            ax.set(xlabel="key token j", ylabel="query token i")
    fig.tight_layout()
    return fig


def faithfulness(curves: pd.DataFrame, scope: str) -> plt.Figure:
    """Delta-PPL vs the fraction of value terms zeroed, terms ranked within ``scope`` ("head" or "joint"):
    one row per text set, comprehensiveness (top zeroed; higher = more faithful) and sufficiency (bottom
    zeroed; lower = more faithful)."""
    curves = curves[curves["scope"] == scope]
    texts = list(dict.fromkeys(curves["text"]))
    fig, axes = plt.subplots(len(texts), 2, figsize=(11, 3.4 * len(texts)), squeeze=False)
    for row, text in zip(axes, texts, strict=True):
        for ax, mode in zip(row, ("comprehensiveness", "sufficiency"), strict=True):
            sub = curves[(curves["text"] == text) & (curves["mode"] == mode)]
            for m in MEASURES:
                line = sub[sub["measure"] == m].sort_values("fraction")
                ax.plot(
                    line["fraction"],
                    line["delta_ppl"],
                    "o-",
                    color=MEASURE_COLORS[m],
                    label=MEASURE_LABELS[m],
                )
            ax.set_yscale("symlog", linthresh=1.0)
            better = "higher" if mode == "comprehensiveness" else "lower"
            ax.set(
                title=f"{text}, ranked per {scope if scope == 'head' else 'layer'}: {mode}\n"
                f"({better} is more faithful)",
                xlabel="fraction of value terms zeroed per query",
                ylabel="delta PPL (symlog)",
            )
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def downstream(frame: pd.DataFrame) -> plt.Figure:
    """Accuracy per task: clean (dashed line) and with the top or bottom fraction zeroed per measure."""
    tasks = list(dict.fromkeys(frame["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        sub = frame[(frame["task"] == task) & (frame["measure"] != "none")]
        clean = frame[(frame["task"] == task) & (frame["measure"] == "none")]["accuracy"].iloc[0]
        sns.barplot(
            data=sub.assign(measure=sub["measure"].map(MEASURE_LABELS)), x="mode", y="accuracy",
            hue="measure", hue_order=[MEASURE_LABELS[m] for m in MEASURES], ax=ax,
            palette=[MEASURE_COLORS[m] for m in MEASURES],
        )  # fmt: skip
        ax.axhline(clean, color="k", ls="--", lw=1, label="no intervention")
        ax.set(title=task, xlabel="", ylabel="accuracy", ylim=(0, 1))
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def decomposition(frame: pd.DataFrame) -> plt.Figure:
    """Left: the mean factors of c_ij = a_ij (||v~_j|| / ||o_i||) cos(o_i, v~_j) for the first token (sink)
    vs the others (tail), averaged over layers. Right: per layer, the sink's mean attention and
    contribution."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    factors = ["mean_attention", "mean_norm_ratio", "mean_cosine", "mean_contribution"]
    means = frame.groupby("group")[factors].mean().T
    means.index = ["attention a", "norm ratio ||v||/||o||", "cos(o, v)", "contribution c"]
    means.plot.bar(ax=left, rot=20)
    left.set(title="factors of the contribution, mean over layers", ylabel="mean value")
    sink = frame[frame["group"] == "sink"].sort_values("layer")
    right.plot(sink["layer"], sink["mean_attention"], "o-", label="attention a_i0")
    right.plot(sink["layer"], sink["mean_contribution"], "s-", label="contribution c_i0")
    right.axhline(0, color="k", lw=0.8)
    right.set(title="first token, per layer", xlabel="layer", ylabel="mean over queries and heads")
    right.legend()
    fig.tight_layout()
    return fig


def sink_cosines(cosines: pd.DataFrame) -> plt.Figure:
    """Distribution of cos(v~_sink, v~_j) (pooled sample) and its mean per layer."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    sample = np.concatenate([np.asarray(s) for s in cosines["sample"]])
    left.hist(sample, bins=60, color="#4c72b0")
    left.axvline(0, color="k", lw=1)
    left.set(title="cos(v~_sink, v~_j), all layers and heads", xlabel="cosine", ylabel="count (sample)")
    right.bar(cosines["layer"], cosines["mean"], color="#dd8452")
    right.axhline(0, color="k", lw=0.8)
    right.set(title="mean cosine per layer", xlabel="layer", ylabel="mean cos(v~_sink, v~_j)")
    fig.tight_layout()
    return fig


def sink_rate_vs_norm(fits: pd.DataFrame, n_heads: int = 4) -> plt.Figure:
    """||o_i|| vs the sink rate a_i0 for the heads whose sink rate spans the widest range, with the fitted
    quadratic of ||o||^2 (square root plotted, over the observed range) and, when convex, its vertex; right:
    the vertices of all convex heads."""
    fig, axes = plt.subplots(1, n_heads + 1, figsize=(3.4 * (n_heads + 1), 3.4))
    top = (
        fits.assign(span=fits["rate_max"] - fits["rate_min"])
        .sort_values("span", ascending=False)
        .head(n_heads)
    )
    for ax, (_, head) in zip(axes, top.iterrows(), strict=False):
        rate, norm = np.asarray(head["rate_sample"]), np.asarray(head["norm_sample"])
        ax.scatter(rate, norm, s=5, alpha=0.5)
        if head["p2"] > 0:
            coef = np.polyfit(rate, norm**2, 2)
            grid = np.linspace(0, 1, 100)
            ax.plot(grid, np.sqrt(np.clip(np.polyval(coef, grid), 0, None)), "r-", lw=1)
            ax.axvline(head["vertex"], color="r", ls=":", lw=1)
        ax.set(
            title=f"L{head['layer']} H{head['head']}", xlabel="sink rate a_i0", ylabel="||o_i||", xlim=(0, 1)
        )
    convex = fits[fits["p2"] > 0]
    axes[-1].hist(convex["vertex"].clip(-0.5, 1.5), bins=40, color="#55a868")
    axes[-1].axvspan(0, 1, color="0.9", zorder=-1)
    axes[-1].set(
        title=f"vertex of {len(convex)} convex heads", xlabel="sink rate at minimum ||o||", ylabel="heads"
    )
    fig.tight_layout()
    return fig


def sink_removal(spread: pd.DataFrame, ppl: dict) -> plt.Figure:
    """Per layer, the head outputs' cone concentration and norm spread, clean vs sink value removed."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, col, label in zip(
        axes,
        ("cone", "norm_cv"),
        ("cone: mean cos to the head's mean output", "norm CV of head outputs"),
        strict=True,
    ):
        sns.lineplot(data=spread, x="layer", y=col, hue="state", marker="o", ax=ax)
        ax.set(ylabel=label, xlabel="layer")
    fig.suptitle(f"sink-norm removal: PPL {ppl['clean']:.1f} -> {ppl['sink removed']:.1f}")
    fig.tight_layout()
    return fig


def cost(frame: pd.DataFrame) -> plt.Figure:
    """Time and peak memory of contribution weights vs the naive terms-tensor implementation."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, label in zip(
        axes, ("seconds", "peak_gb"), ("time (s, median)", "peak memory (GB)"), strict=True
    ):
        sns.lineplot(data=frame.dropna(subset=[col]), x="T", y=col, hue="impl", marker="o", ax=ax)
        ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel=label)
    fig.tight_layout()
    return fig
