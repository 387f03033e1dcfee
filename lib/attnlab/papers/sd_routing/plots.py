"""The figures of the sd_routing notebook (the routing and filtering structure of attention, arXiv
2605.18826): pretrained heads against random weights, the spectral cascade under four rank measures beside
its random baseline, the scale trend, filtering collapse, linearisation, reallocation and cost. Each takes the
tidy frames of ``attnlab.papers.sd_routing`` and returns a matplotlib figure; save with
``attnlab.runner.style.save_figure``. Colours are the concepts' (``attnlab.runner.style.color``): one per
attention kind; a variant without LayerNorm is drawn dashed (lines) or hatched (bars) in its kind's colour."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from attnlab.papers.sd_routing.presets import LABELS, MIN_RANK, SD_VARIANTS, VARIANTS
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS
from attnlab.runner.style import color

SIZE_STYLES = ("-", "--", ":", "-.")


def _kind_color(variant: str) -> str:
    return color(VARIANTS[variant][0])


def _dashes(variant: str) -> str:
    """Solid with LayerNorm, dashed without."""
    return "-" if VARIANTS[variant][1] else "--"


def head_statistics(summary: pd.DataFrame, models: list[str]) -> plt.Figure:
    """Pretrained heads beside Gaussian weights of the same shapes: per model, the share of heads whose
    filtering energy is above 1/2, whose routing rank is below their filtering rank (entropy and stable
    rank), and with an eigenvalue of W with positive real part. ``summary``: ``SDExperiment.head_summary``."""
    panels = (
        ("filtering dominant %", "heads with ||F||² / ||W||² > 1/2 (%)"),
        ("routing rank < filtering rank %", "heads: entropy rank R < F (%)"),
        ("routing stable rank < filtering %", "heads: stable rank R < F (%)"),
        ("unstable %", "heads with Re λ(W) > 0 (%)"),
    )
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.0 * len(panels), 0.7 * len(models) + 2.0), sharey=True
    )
    y = range(len(models))
    for ax, (column, xlabel) in zip(axes, panels, strict=True):
        for offset, weights, concept in ((-0.2, "trained", "sa"), (0.2, "random init", "random init")):
            values = [summary.loc[(m, weights), column] for m in models]
            label = "pretrained" if weights == "trained" else "random weights, same shapes"
            ax.barh([i + offset for i in y], values, height=0.4, color=color(concept), label=label)
        ax.axvline(50, color="grey", ls=":", lw=1)
        ax.set(xlim=(0, 100), xlabel=xlabel)
    axes[0].set(yticks=list(y), yticklabels=models)
    axes[0].invert_yaxis()
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle("pretrained heads: W = W_Q^h W_K^hᵀ, R and F its antisymmetric and symmetric parts")
    fig.tight_layout()
    return fig


def _matrix_name(variant: str) -> str:
    return "S (head space)" if variant in SD_VARIANTS else "R of W_Qᵀ W_K (model space)"


def cascade(frame: pd.DataFrame, baseline: pd.DataFrame) -> plt.Figure:
    """The spectral cascade: each layer's routing matrix, head mean, against relative depth (0 = first layer,
    1 = last), one row per rank measure, one column per variant, one line style per size (seeds: mean and
    spread). Dashed grey: the random baseline of the same shapes; dotted: the head-dim bound (ranks: d for S,
    2d for R; top-plane share: 2/d, an even spread) and the minimum rank (2.5, or a share of 2/2.5)."""
    variants = [v for v in VARIANTS if v in set(frame["variant"])]
    sizes = list(dict.fromkeys(frame["size"]))
    measures = list(MEASURE_COLUMNS.items())
    fig, axes = plt.subplots(
        len(measures), len(variants), figsize=(3.6 * len(variants), 2.9 * len(measures)), squeeze=False
    )
    for row, (column, measure) in enumerate(measures):
        for col, variant in enumerate(variants):
            ax = axes[row][col]
            sub = frame[frame["variant"] == variant]
            for size, style in zip(sizes, SIZE_STYLES, strict=False):
                per_layer = sub[sub["size"] == size].groupby("depth")[column]
                mean, spread = per_layer.mean(), per_layer.std().fillna(0.0)
                ax.plot(mean.index, mean, style, marker="o", ms=3, color=_kind_color(variant), label=size)
                ax.fill_between(
                    mean.index, mean - spread, mean + spread, color=_kind_color(variant), alpha=0.15
                )
                base = baseline[(baseline["variant"] == variant) & (baseline["size"] == size)]
                if not base.empty:
                    ax.axhline(base[column].iloc[0], color=color("random init"), ls="--", lw=1.2)
            d = sub["head_dim"].max()
            bound = d if variant in SD_VARIANTS else 2 * d
            top = measure == "top-plane share"
            ax.axhline(2 / d if top else bound, color="black", ls=":", lw=0.8)
            ax.axhline(2 / MIN_RANK if top else MIN_RANK, color="grey", ls=":", lw=0.8)
            if top:
                ax.set_ylim(0, 1.05)
            else:
                ax.set_ylim(0, bound * 1.05)
            ax.set(xlabel="relative depth" if row == len(measures) - 1 else "",
                   ylabel=f"{measure} of\n{_matrix_name(variant)}")  # fmt: skip
            ax.yaxis.label.set_fontsize(8)
            if row == 0:
                ax.set_title(LABELS[variant], fontsize=10)
                ax.legend(fontsize=7, title="size", title_fontsize=7)
    fig.suptitle(
        "spectral cascade (dashed grey: random matrices of the same shapes; dotted: head-dim bound and "
        "minimum rank)", fontsize=10,
    )  # fmt: skip
    fig.tight_layout()
    return fig


def scale_trend(trend: pd.DataFrame) -> plt.Figure:
    """Fraction of layers at the minimum rank against non-embedding parameters, one panel per measure, one
    line per variant (seed mean)."""
    measures = list(dict.fromkeys(trend["measure"]))
    fig, axes = plt.subplots(1, len(measures), figsize=(3.8 * len(measures), 3.4), squeeze=False, sharey=True)
    for ax, measure in zip(axes[0], measures, strict=True):
        sub = trend[trend["measure"] == measure]
        for variant in [v for v in VARIANTS if v in set(sub["variant"])]:
            line = sub[sub["variant"] == variant].groupby("params")["fraction at min rank"].mean()
            ax.plot(line.index, line, _dashes(variant), marker="o", color=_kind_color(variant),
                    label=LABELS[variant])  # fmt: skip
        ax.set_xscale("log")
        ax.set(ylim=(-0.05, 1.05), xlabel="parameters (non-embedding)", title=measure)
    axes[0][0].set_ylabel(f"layers at rank <= {MIN_RANK}")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def collapse(frame: pd.DataFrame) -> plt.Figure:
    """Perplexity change after filtering to a scalar and after removing routing: left, the same model-space
    truncation of W = R + F for every variant; right, S-D's own head-space truncations (D -> mean D, S = 0).
    Bars: mean over sizes and seeds, whiskers: min-max (symlog scale)."""
    spaces = [(s, t) for s, t in (("model", "model space: W = R + F"), ("head", "head space: L = S - D"))
              if s in set(frame["space"])]  # fmt: skip
    fig, axes = plt.subplots(1, len(spaces), figsize=(6.5 * len(spaces), 3.8), squeeze=False, sharey=True)
    for ax, (space, title) in zip(axes[0], spaces, strict=True):
        sub = frame[frame["space"] == space]
        variants = [v for v in VARIANTS if v in set(sub["variant"])]
        for j, name in enumerate(("filtering to a scalar", "routing removed")):
            g = sub[sub["intervention"] == name].groupby("variant")["ppl change %"]
            mean, low, high = (g.agg(f).reindex(variants) for f in ("mean", "min", "max"))
            x = [i + (j - 0.5) * 0.38 for i in range(len(variants))]
            bars = ax.bar(x, mean, width=0.38, color=color(name), label=name,
                          yerr=[mean - low, high - mean], capsize=2)  # fmt: skip
            for bar, variant in zip(bars, variants, strict=True):
                if not VARIANTS[variant][1]:
                    bar.set_hatch("//")
        ax.set_xticks(
            range(len(variants)), [LABELS[v] for v in variants], rotation=20, ha="right", fontsize=8
        )
        ax.set_yscale("symlog", linthresh=1.0)
        ax.axhline(0, color="grey", lw=1)
        ax.set(title=title, ylabel="perplexity change (%)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def linearisation(frame: pd.DataFrame, size: str) -> plt.Figure:
    """Perplexity change with the first k layers as ELU+1 linear attention, post hoc (solid) and retrained
    (markers only), per variant (seed mean)."""
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for variant in [v for v in VARIANTS if v in set(frame["variant"])]:
        sub = frame[frame["variant"] == variant]
        for mode, style in (("post hoc", "-o"), ("retrained", "s")):
            line = sub[sub["mode"] == mode].groupby("k")["ppl change %"].mean()
            ax.plot(line.index, line, style, color=_kind_color(variant), ms=6 if mode == "retrained" else 4,
                    label=f"{LABELS[variant]}, {mode}")  # fmt: skip
    ax.set_yscale("symlog", linthresh=1.0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.axhline(5.0, color="grey", ls=":", lw=1)
    ax.set(title=f"linearisation ({size})", xlabel="leading layers replaced by ELU+1 linear attention",
           ylabel="perplexity change (%)")  # fmt: skip
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def reallocation(frame: pd.DataFrame) -> plt.Figure:
    """Attention parameters against perplexity, the uniform and the reallocated model of each variant, one
    point per seed."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for variant, sub in frame.groupby("variant", sort=False):
        for model, marker in (("uniform", "o"), ("reallocated", "^")):
            part = sub[sub["model"] == model]
            ax.scatter(part["attn params"], part["ppl"], marker=marker, s=50, color=_kind_color(variant),
                       label=f"{LABELS[variant]}, {model} ({part['head dims'].iloc[0]})")  # fmt: skip
    ax.set(xlabel="attention parameters", ylabel="validation perplexity (per byte)",
           title="head-dim reallocation")  # fmt: skip
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def cost(bench: pd.DataFrame, device: str) -> plt.Figure:
    """Forward + backward time of one block relative to SA against sequence length, per kind and size."""
    data = bench[bench["kind"] != "sa"]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for (kind, size), sub in data.groupby(["kind", "size"], sort=False):
        style = SIZE_STYLES[list(dict.fromkeys(data["size"])).index(size) % len(SIZE_STYLES)]
        ax.plot(
            sub["seq_len"], sub["time / SA"], style, marker="o", color=color(kind), label=f"{kind}, {size}"
        )
    ax.set_xscale("log", base=2)
    ax.axhline(1.0, color="grey", ls=":", lw=1)
    ax.set(xlabel="sequence length", ylabel=f"block time / SA time ({device})",
           title="cost of S-D and linear attention")  # fmt: skip
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
