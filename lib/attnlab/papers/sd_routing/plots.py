"""The figures of the sd_routing notebook (the routing and filtering structure of attention, arXiv
2605.18826): per-head routing/filtering statistics, the spectral cascade, the scale trend, filtering collapse,
linearisation, reallocation and cost. Each takes the tidy frames of ``attnlab.papers.sd_routing`` and returns
a matplotlib figure; save with ``attnlab.runner.style.save_figure``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from attnlab.papers.sd_routing.presets import LABELS, MIN_RANK

VARIANT_COLORS = {"sa": "#4c72b0", "sd": "#dd8452", "sd-noln": "#55a868"}


def head_statistics(heads: pd.DataFrame) -> plt.Figure:
    """Per head of every analysed model: filtering energy (left), effective rank of R against that of F
    (middle), and the share of heads with an eigenvalue of W with positive real part (right)."""
    data = heads.assign(unstable=100.0 * (heads["n_unstable"] > 0))
    order = list(dict.fromkeys(data["model"]))
    fig, axes = plt.subplots(
        1, 3, figsize=(17, 0.45 * len(order) + 2.5), gridspec_kw={"width_ratios": [3, 3, 2]}
    )
    sns.boxplot(
        data=data, y="model", x="filtering_energy", order=order, ax=axes[0], color="#dd8452", fliersize=2
    )
    axes[0].axvline(0.5, color="grey", ls=":")
    axes[0].set(xlabel="filtering energy ||F||² / ||W||²", ylabel="", title="filtering share of each head")
    sns.scatterplot(
        data=data, x="filtering_rank", y="routing_rank", hue="model", hue_order=order, s=12, ax=axes[1]
    )
    top = max(data["filtering_rank"].max(), data["routing_rank"].max())
    axes[1].plot([0, top], [0, top], color="grey", ls=":", lw=1)
    axes[1].set(xlabel="effective rank of F", ylabel="effective rank of R", title="routing vs filtering rank")
    axes[1].legend(fontsize=6, markerscale=0.8)
    share = data.groupby("model", sort=False)["unstable"].mean().reindex(order)
    axes[2].barh(share.index, share.to_numpy(), color="#4c72b0")
    axes[2].invert_yaxis()
    axes[2].set(xlim=(0, 100), xlabel="% heads with Re(λ) > 0", title="unstable heads", yticklabels=[])
    fig.tight_layout()
    return fig


def cascade(frame: pd.DataFrame) -> plt.Figure:
    """The spectral cascade: head-mean effective rank of each layer's routing matrix against depth (0 = first
    layer, 1 = last), one line per size, one panel per variant; dotted: the minimum-rank threshold."""
    variants = list(dict.fromkeys(frame["variant"]))
    fig, axes = plt.subplots(1, len(variants), figsize=(5.2 * len(variants), 3.8), squeeze=False, sharey=True)
    for ax, variant in zip(axes[0], variants, strict=True):
        sub = frame[frame["variant"] == variant]
        sns.lineplot(data=sub, x="depth", y="routing_rank", hue="size", marker="o", errorbar="sd", ax=ax)
        ax.axhline(MIN_RANK, color="grey", ls=":", lw=1)
        space = "R of W_Q W_K^T" if variant == "sa" else "S (head space)"
        ax.set(title=LABELS[variant], xlabel="relative depth", ylabel=f"effective rank of {space}")
        ax.legend(fontsize=8, title="size")
    fig.tight_layout()
    return fig


def scale_trend(trend: pd.DataFrame) -> plt.Figure:
    """Fraction of layers at the minimum rank against non-embedding parameters, one line per variant."""
    data = trend.assign(variant=trend["variant"].map(LABELS))
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    sns.lineplot(
        data=data, x="params", y="fraction at min rank", hue="variant", marker="o", ax=ax,
        palette={LABELS[k]: c for k, c in VARIANT_COLORS.items()},
    )  # fmt: skip
    ax.set_xscale("log")
    ax.set(ylim=(-0.05, 1.05), xlabel="parameters (non-embedding)", ylabel=f"layers with rank <= {MIN_RANK}")
    fig.tight_layout()
    return fig


def collapse(frame: pd.DataFrame) -> plt.Figure:
    """Perplexity change after truncating filtering to a scalar and after removing routing, per variant and
    size (symlog scale: catastrophic changes and near-free ones on one axis)."""
    data = frame.assign(variant=frame["variant"].map(LABELS))
    sizes = list(dict.fromkeys(data["size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.6 * len(sizes), 3.8), squeeze=False, sharey=True)
    for ax, size in zip(axes[0], sizes, strict=True):
        sns.barplot(
            data=data[data["size"] == size], x="variant", y="ppl change %", hue="intervention", ax=ax,
            errorbar=None,
        )  # fmt: skip
        ax.set_yscale("symlog", linthresh=1.0)
        ax.axhline(0, color="grey", lw=1)
        ax.set(title=size, xlabel="", ylabel="perplexity change (%)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def linearisation(frame: pd.DataFrame, size: str) -> plt.Figure:
    """Perplexity change with the first k layers as ELU+1 linear attention, post hoc (solid) and retrained
    (dashed), SA vs S-D."""
    data = frame.assign(variant=frame["variant"].map(LABELS))
    fig, ax = plt.subplots(figsize=(6, 3.8))
    sns.lineplot(
        data=data, x="k", y="ppl change %", hue="variant", style="mode", marker="o", errorbar=None, ax=ax,
        palette={LABELS[k]: c for k, c in VARIANT_COLORS.items() if k != "sd-noln"},
    )  # fmt: skip
    ax.set_yscale("symlog", linthresh=1.0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.axhline(5.0, color="grey", ls=":", lw=1)
    ax.set(title=f"linearisation ({size})", xlabel="leading layers replaced by ELU+1 linear attention",
           ylabel="perplexity change (%)")  # fmt: skip
    fig.tight_layout()
    return fig


def reallocation(frame: pd.DataFrame) -> plt.Figure:
    """Attention parameters against perplexity, the uniform S-D model and the reallocated one."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    sns.scatterplot(data=frame, x="attn params", y="ppl", hue="model", style="model", s=80, ax=ax)
    for _, row in frame.iterrows():
        ax.annotate(row["head dims"], (row["attn params"], row["ppl"]), fontsize=7, xytext=(4, 4),
                    textcoords="offset points")  # fmt: skip
    ax.set(
        xlabel="attention parameters",
        ylabel="validation perplexity (per byte)",
        title="head-dim reallocation",
    )
    fig.tight_layout()
    return fig


def cost(bench: pd.DataFrame, device: str) -> plt.Figure:
    """Forward + backward time of one block relative to SA against sequence length, per size."""
    data = bench[bench["kind"] != "sa"]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    sns.lineplot(data=data, x="seq_len", y="time / SA", hue="size", style="kind", marker="o", ax=ax)
    ax.set_xscale("log", base=2)
    ax.axhline(1.0, color="grey", ls=":", lw=1)
    ax.set(
        xlabel="sequence length", ylabel=f"block time / SA time ({device})", title="cost of S-D and linear"
    )
    fig.tight_layout()
    return fig
