"""The figures of the sd_routing notebook (the routing and filtering structure of attention, arXiv
2605.18826): pretrained heads against random weights, the spectral cascade under four rank measures beside
its random baseline, the scale trend, filtering collapse, linearisation, reallocation and cost. Each takes the
tidy frames of ``attnlab.papers.sd_routing`` and returns a matplotlib figure; save with
``attnlab.runner.style.save_figure``. Colours are the concepts' (``attnlab.runner.style.color``): one per
attention kind; a variant without LayerNorm is drawn dashed (lines) or hatched (bars) in its kind's colour."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from attnlab.papers.sd_routing.presets import LABELS, MIN_RANK, REALLOC_CONTROLS, SD_VARIANTS, VARIANTS
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS, describe
from attnlab.runner.style import color, interval95, legend_below, legend_beside

SIZE_STYLES = ("-", "--", ":", "-.")


def _kind_color(variant: str) -> str:
    return color(VARIANTS[variant][0])


def _dashes(variant: str) -> str:
    """Solid with LayerNorm, dashed without."""
    return "-" if VARIANTS[variant][1] else "--"


def short_name(model: str) -> str:
    """A pretrained model's name as a figure labels it: its description up to the provenance in parentheses
    (package, precision, base or instruct: ``describe``), which the tables carry ("SmolLM2-135M-Instruct")."""
    return describe(model).split(" (")[0]


def head_statistics(summary: pd.DataFrame, models: list[str]) -> plt.Figure:
    """Pretrained heads beside Gaussian weights of the same shapes: per model (`short_name`), the
    share of heads whose filtering energy is above 1/2, whose routing rank is below their filtering rank
    (entropy and stable rank), and with an eigenvalue of W with positive real part. A share that is the same
    for every model and both weights (every head unstable: 100 %) gets no panel, the title says it.
    ``summary``: ``SDExperiment.head_summary``."""
    panels: tuple[tuple[str, str], ...] = (
        ("filtering dominant %", "heads with ||F||² / ||W||² > 1/2 (%)"),
        ("routing rank < filtering rank %", "heads: entropy rank R < F (%)"),
        ("routing stable rank < filtering %", "heads: stable rank R < F (%)"),
        ("unstable %", "heads with Re λ(W) > 0 (%)"),
    )
    shares = {column: summary.loc[[(m, w) for m in models for w in ("trained", "random init")], column]
              for column, _ in panels}  # fmt: skip
    flat = [f"{xlabel.removesuffix(' (%)')}: {shares[c].iloc[0]:.0f} % for every model and both weights"
            for c, xlabel in panels if shares[c].nunique() == 1]  # fmt: skip
    panels = tuple((c, xlabel) for c, xlabel in panels if shares[c].nunique() > 1)
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(3.4 * len(panels) + 2.0, 0.55 * len(models) + 1.6),
        sharey=True,
        squeeze=False,
    )
    y = range(len(models))
    for ax, (column, xlabel) in zip(axes[0], panels, strict=True):
        for offset, weights, concept in ((-0.2, "trained", "sa"), (0.2, "random init", "random init")):
            values = [summary.loc[(m, weights), column] for m in models]
            label = "pretrained" if weights == "trained" else "random weights, same shapes"
            ax.barh([i + offset for i in y], values, height=0.4, color=color(concept), label=label)
        ax.axvline(50, color="grey", ls=":", lw=1)
        ax.set(xlim=(0, 100), xlabel=xlabel)
        ax.xaxis.label.set_fontsize(9)
    axes[0][0].set_yticks(list(y), [short_name(m) for m in models], fontsize=8)
    axes[0][0].invert_yaxis()
    title = "pretrained heads: W = W_Q^h W_K^hᵀ, R and F its antisymmetric and symmetric parts"
    fig.suptitle("\n".join([title, *[f"{note} (no panel)" for note in flat]]), fontsize=10)
    legend_below(fig, ncol=2)
    fig.tight_layout()
    return fig


def _matrix_name(variant: str) -> str:
    return "S (head space)" if variant in SD_VARIANTS else "R of W_Qᵀ W_K (model space)"


def cascade(frame: pd.DataFrame, baseline: pd.DataFrame) -> plt.Figure:
    """The spectral cascade: each layer's routing matrix, head mean, against relative depth (0 = first layer,
    1 = last), one row per rank measure, one column per variant, one line style per size (seeds: mean and 95 %
    interval). Dashed grey: the random baseline of the same shapes; dotted: the head-dim bound (ranks: d for
    S, 2d for R; top-plane share: 2/d, an even spread) and the minimum rank (2.5, or a share of 2/2.5)."""
    variants = [v for v in VARIANTS if v in set(frame["variant"])]
    sizes = list(dict.fromkeys(frame["size"]))
    measures = list(MEASURE_COLUMNS.items())
    fig, axes = plt.subplots(
        len(measures), len(variants), figsize=(3.6 * len(variants), 2.9 * len(measures)), squeeze=False,
        sharex=True,
    )  # fmt: skip
    for row, (column, measure) in enumerate(measures):
        for col, variant in enumerate(variants):
            ax = axes[row][col]
            sub = frame[frame["variant"] == variant]
            for size, style in zip(sizes, SIZE_STYLES, strict=False):
                per_layer = sub[sub["size"] == size].groupby("depth")[column]
                mean = per_layer.mean()
                band = per_layer.agg(interval95)  # the 95 % interval over seeds, as every figure's
                ax.plot(mean.index, mean, style, marker="o", ms=3, color=_kind_color(variant), label=size)
                ax.fill_between(
                    mean.index, [lo for lo, _ in band], [hi for _, hi in band], color=_kind_color(variant),
                    alpha=0.15,
                )  # fmt: skip
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
    fig.suptitle(
        "spectral cascade (dashed grey: random matrices of the same shapes; dotted: head-dim bound and "
        "minimum rank)", fontsize=10,
    )  # fmt: skip
    legend_below(fig, title="size (line style; colour: the variant)")
    fig.tight_layout()
    return fig


def scale_trend(trend: pd.DataFrame) -> plt.Figure:
    """The scale trend (the paper: 33 % at 18M -> 92 % at 355M): the fraction of layers at the minimum rank
    against non-embedding parameters (log scale, each tick named by its size), one panel per rank measure,
    one line per S-D variant (the claim's; seed mean, each seed a faint point). A panel where every size of
    every variant sits at 0 % or at 100 % says so instead of drawing a flat line at the edge."""
    trend = trend[trend["variant"].isin(SD_VARIANTS)]
    measures = list(dict.fromkeys(trend["measure"]))
    fig, axes = plt.subplots(1, len(measures), figsize=(3.8 * len(measures), 3.6), squeeze=False, sharey=True)
    for ax, measure in zip(axes[0], measures, strict=True):
        sub = trend[trend["measure"] == measure]
        for variant in [v for v in SD_VARIANTS if v in set(sub["variant"])]:
            part = sub[sub["variant"] == variant]
            ax.scatter(part["params"], 100 * part["fraction at min rank"], s=10, alpha=0.3,
                       color=_kind_color(variant))  # fmt: skip
            line = part.groupby("params")["fraction at min rank"].mean()
            ax.plot(line.index, 100 * line, _dashes(variant), marker="o", color=_kind_color(variant),
                    label=LABELS[variant])  # fmt: skip
        ticks = sub.groupby("size")["params"].median().sort_values()
        ax.set_xscale("log")
        ax.set_xticks(ticks.to_numpy(), [f"{s}\n{p / 1e3:.0f}k" for s, p in ticks.items()], fontsize=7)
        ax.minorticks_off()
        ax.set(ylim=(-5, 105), xlabel="size (non-embedding parameters)", title=measure)
        fractions = sub["fraction at min rank"]
        if len(fractions) and (fractions.eq(0).all() or fractions.eq(1).all()):
            edge = "0 %" if fractions.eq(0).all() else "100 %"
            ax.text(0.5, 0.5, f"every size and seed at {edge}:\nno trend to read", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="grey")  # fmt: skip
    axes[0][0].set_ylabel(f"layers at rank <= {MIN_RANK} (%)")
    fig.suptitle("scale trend: the share of S-D layers at the minimum rank", fontsize=10)
    legend_below(fig)
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
    legend_below(fig)
    fig.tight_layout()
    return fig


#: The perplexity changes (%) a log-ratio axis may label, from which those in the data's range are shown.
RATIO_TICKS_PCT = (-50, -20, -10, -5, -2, 0, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)


def _ratio_axis(ax: plt.Axes) -> None:
    """A y axis of perplexity ratios on a log scale, ticked and labelled as the change in percent (call after
    plotting: the ticks are those of ``RATIO_TICKS_PCT`` inside the data's range, at most about seven)."""
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    gap = math.log(high / low) / 7  # ticks at least a seventh of the axis apart, 0 % always among them
    candidates = [1 + t / 100 for t in RATIO_TICKS_PCT if low <= 1 + t / 100 <= high]
    ticks = [1.0]
    for ratio in sorted(candidates, key=lambda r: abs(math.log(r))):  # nearest 0 % first
        if all(abs(math.log(ratio / kept)) >= gap for kept in ticks):
            ticks.append(ratio)
    ax.set_yticks(sorted(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{100 * (y - 1):+.0f} %"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(low, high)
    ax.axhline(1.0, color="grey", lw=1)


def linearisation(frame: pd.DataFrame, size: str) -> plt.Figure:
    """Perplexity change with the first k layers as ELU+1 linear attention, relative to the same softmax
    model (the paper: S-D's first 7 of 12 layers within 5 %): left, post hoc (the trained weights); right,
    retrained from scratch. Log scale of the perplexity ratio, labelled in percent; seed mean, each seed a
    faint point; dotted: the paper's 5 % tolerance."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    titles = {
        "post hoc": f"post hoc, trained weights ({size})",
        "retrained": f"retrained from scratch ({size})",
    }
    for ax, (mode, title) in zip(axes, titles.items(), strict=True):
        sub = frame[frame["mode"] == mode]
        for variant in [v for v in VARIANTS if v in set(sub["variant"])]:
            part = sub[sub["variant"] == variant]
            ratio = 1 + part["ppl change %"] / 100
            ax.scatter(part["k"], ratio, s=10, alpha=0.3, color=_kind_color(variant))
            line = ratio.groupby(part["k"]).mean()
            ax.plot(line.index, line, "-o", ms=4, color=_kind_color(variant), label=LABELS[variant])
        _ratio_axis(ax)
        ax.axhline(1.05, color="grey", ls=":", lw=1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(title=title, xlabel="leading layers replaced by ELU+1 linear attention",
               ylabel="perplexity change (log scale)")  # fmt: skip
    legend_below(fig)
    fig.tight_layout()
    return fig


def reallocation(frame: pd.DataFrame) -> plt.Figure:
    """Attention parameters against perplexity, the uniform and the reallocated model of each variant and
    the reallocation's two controls of the same total head dims (spread evenly, shuffled across layers), one
    point per seed."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for variant, sub in frame.groupby("variant", sort=False):
        for model, marker in (("uniform", "o"), ("reallocated", "^"), (REALLOC_CONTROLS[0], "s"),
                              (REALLOC_CONTROLS[1], "x")):  # fmt: skip
            part = sub[sub["model"] == model]
            if part.empty:
                continue
            ax.scatter(part["attn params"], part["ppl"], marker=marker, s=50, color=_kind_color(variant),
                       label=f"{LABELS[variant]}, {model} ({part['head dims'].iloc[0]})")  # fmt: skip
    ax.set(xlabel="attention parameters", ylabel="validation perplexity (per byte)",
           title="head-dim reallocation")  # fmt: skip
    legend_beside(ax)
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
    legend_beside(ax)
    fig.tight_layout()
    return fig
