"""Figures of the contribution-weights notebook (arXiv 2606.07604), one function per figure, each taking the
tidy results of ``attnlab.papers.contribution_weights``. A result with nothing in it (every text set or task
skipped, its data unavailable here) is drawn as a figure that says so and why (:func:`unavailable`)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.artist import Artist
from matplotlib.colors import TwoSlopeNorm

from attnlab.papers.contribution_weights.claims import skipped
from attnlab.papers.contribution_weights.faithfulness import window_areas
from attnlab.papers.contribution_weights.presets import MEASURE_LABELS, RANKINGS
from attnlab.runner.stats import estimate
from attnlab.runner.style import color, legend_below, legend_beside

_CONCEPT = {"raw": "raw", "value_weighted": "value-weighted", "output_normalised": "output-normalised",
            "contribution": "contribution", "contribution_abs": "contribution"}  # fmt: skip
#: Colour by concept (|c| shares contribution's colour), and a line style and marker per measure, so that
#: curves that coincide stay visible (the later ones are drawn dashed over the earlier).
MEASURE_COLORS = {m: color(c) for m, c in _CONCEPT.items()}
MEASURE_STYLE = {"raw": ("-", "o"), "value_weighted": ("--", "s"), "output_normalised": (":", "^"),
                 "contribution": ("-", "D"), "contribution_abs": (":", "v")}  # fmt: skip


def unavailable(what: str, frame: pd.DataFrame) -> plt.Figure:
    """The figure of an empty result: ``what`` could not be drawn here, with each skipped part's reason."""
    reasons = skipped(frame) or {"": "no data"}
    lines = [f"{what}: no data here"] + [f"{name}: skipped: {why}" if name else why
                                         for name, why in reasons.items()]  # fmt: skip
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * len(lines)))
    ax.axis("off")
    text = "\n".join(textwrap.fill(line, 90) for line in lines)
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, transform=ax.transAxes)
    return fig


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
    """Delta-PPL vs the fraction of value terms zeroed in one layer set (rows), terms ranked within
    ``scope`` ("head" or "joint"); columns: text set x mode (comprehensiveness: top zeroed, higher = more
    faithful; sufficiency: bottom zeroed, lower = more faithful). Lines: the mean over windows; bands: its
    95% interval. Linear axes without offset, so small effects read as they are."""
    if curves.empty:
        return unavailable(f"faithfulness curves ({scope})", curves)
    curves = curves[curves["scope"] == scope]
    sets = list(dict.fromkeys(curves["layers"]))
    columns = [(t, mode) for t in dict.fromkeys(curves["text"]) for mode in RANKINGS]
    fig, axes = plt.subplots(
        len(sets), len(columns), figsize=(3.6 * len(columns), 2.8 * len(sets)), squeeze=False
    )
    for row, layers in zip(axes, sets, strict=True):
        for ax, (text, mode) in zip(row, columns, strict=True):
            sub = curves[(curves["layers"] == layers) & (curves["text"] == text) & (curves["mode"] == mode)]
            for m in RANKINGS[mode]:
                by = sub[sub["measure"] == m].groupby("fraction")["delta_ppl"]
                est = [estimate(v.to_list()) for _, v in by]
                x = np.asarray(list(by.groups))
                ls, marker = MEASURE_STYLE[m]
                ax.plot(x, [e.mean for e in est], ls=ls, marker=marker, ms=4, color=MEASURE_COLORS[m],
                        label=MEASURE_LABELS[m])  # fmt: skip
                ax.fill_between(
                    x, [e.low for e in est], [e.high for e in est], color=MEASURE_COLORS[m], alpha=0.15
                )
            ax.ticklabel_format(axis="y", style="plain", useOffset=False)
            ax.axhline(0, color="k", lw=0.6)
            better = "higher" if mode == "comprehensiveness" else "lower"
            ax.set_title(f"{text}, {layers}\n{mode} ({better} = more faithful)", fontsize=9)
            ax.set(xlabel="fraction zeroed per query", ylabel="delta PPL")
    handles, labels = axes[0, -1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8, bbox_to_anchor=(0.5, 1.0))
    fig.suptitle(f"terms ranked {'per head' if scope == 'head' else 'jointly across heads'}", y=1.03)
    fig.tight_layout()
    return fig


def _area_panel(ax: plt.Axes, sub: pd.Series, mode: str, log: bool) -> None:
    """One panel of :func:`areas`: per layer set (x), a bar per measure with its 95% interval over windows."""
    groups = list(dict.fromkeys(sub.index.get_level_values("layers")))
    measures = RANKINGS[mode]
    width = 0.8 / len(measures)
    for k, m in enumerate(measures):
        est = [estimate(sub.xs((lay, m), level=["layers", "measure"]).to_list()) for lay in groups]
        x = np.arange(len(groups)) + (k - (len(measures) - 1) / 2) * width
        ax.bar(x, [e.mean for e in est], width, color=MEASURE_COLORS[m], label=MEASURE_LABELS[m],
               hatch="//" if m == "contribution_abs" else None, edgecolor="white")  # fmt: skip
        err = [[e.mean - e.low for e in est], [e.high - e.mean for e in est]]
        ax.errorbar(x, [e.mean for e in est], yerr=err, fmt="none", ecolor="k", lw=0.8,
                    label="95% interval over windows" if k == 0 else None)  # fmt: skip
    ax.set_xticks(np.arange(len(groups)), groups, fontsize=8)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.set(xlabel="layers intervened on", ylabel="area, log(1 + dPPL)" if log else "area, dPPL")


def areas(curves: pd.DataFrame, log: bool = True) -> plt.Figure:
    """The faithfulness areas (paper: the delta-PPL curves' ordering, raw < value-weighted < contribution):
    area under each window's curve (log scale by default, the one the claims use), mean over windows with
    95% intervals. One message per panel: a row per (ranking scope, mode), a column per text set; in each,
    the measures side by side per layer set, so the panel reads as "does contribution weights' bar stand
    highest (comprehensiveness) or lowest (sufficiency)?". Every bar and the interval are in the legend."""
    if curves.empty:
        return unavailable("faithfulness areas", curves)
    per_window = window_areas(curves, log)
    rows = [(scope, mode) for scope in dict.fromkeys(curves["scope"]) for mode in RANKINGS]
    texts = list(dict.fromkeys(curves["text"]))
    fig, axes = plt.subplots(
        len(rows), len(texts), figsize=(4.6 * len(texts), 3.0 * len(rows)), squeeze=False
    )
    for row, (scope, mode) in zip(axes, rows, strict=True):
        for ax, text in zip(row, texts, strict=True):
            _area_panel(ax, per_window.xs((text, scope, mode), level=["text", "scope", "mode"]), mode, log)
            better = "higher" if mode == "comprehensiveness" else "lower"
            ranked = "ranked per head" if scope == "head" else "ranked jointly"
            ax.set_title(f"{text}, {ranked}: {mode}\n({better} = more faithful)", fontsize=9)
    by_label: dict[str, Artist] = {}
    for ax in axes.flat:  # every measure once, whichever panel drew it
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            by_label.setdefault(label, handle)
    fig.legend(list(by_label.values()), list(by_label), loc="lower center", ncol=len(by_label), fontsize=8,
               bbox_to_anchor=(0.5, 1.0))  # fmt: skip
    fig.tight_layout()
    return fig


def downstream(frame: pd.DataFrame) -> plt.Figure:
    """Accuracy per task with its 95% Wilson interval: clean, and with the top or bottom fraction of the
    value terms zeroed per measure; the dotted line is chance."""
    from attnlab.runner.stats import binomial_interval

    if frame.empty:
        return unavailable("downstream accuracy", frame)

    tasks = list(dict.fromkeys(frame["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        sub = frame[frame["task"] == task]
        bars = [("clean", sub[sub["measure"] == "none"], "#4d4d4d")]
        for mode, ms in RANKINGS.items():
            bars += [(f"{mode[:4]}. {MEASURE_LABELS[m]}", sub[(sub["mode"] == mode) & (sub["measure"] == m)],
                      MEASURE_COLORS[m]) for m in ms]  # fmt: skip
        bars = [bar for bar in bars if len(bar[1])]  # the interventions run (presets.DOWNSTREAM_RANKINGS)
        for k, (_, rows, c) in enumerate(bars):
            est = binomial_interval(round(rows["credit"].sum()), len(rows))
            err = [[max(est.mean - est.low, 0.0)], [max(est.high - est.mean, 0.0)]]  # Wilson: rounding only
            ax.bar(k, est.mean, color=c, yerr=err, capsize=2)
        ax.axhline(sub["chance"].mean(), color=color("chance"), ls=":", lw=1.2, label="chance")
        ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=70, fontsize=7)
        ax.set(title=task, ylabel="accuracy (share correct)", ylim=(0, 1))
    legend_below(fig)
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
    means = means.rename(columns={"sink": "first token (sink)", "tail": "other tokens (tail)"})
    means.plot.bar(ax=left, rot=20)
    left.set(title="factors of the contribution, mean over layers", ylabel="mean value")
    sink = frame[frame["group"] == "sink"].sort_values("layer")
    right.plot(sink["layer"], sink["mean_attention"], "o-", label="attention a_i0")
    right.plot(sink["layer"], sink["mean_contribution"], "s-", label="contribution c_i0")
    right.axhline(0, color="k", lw=0.8)
    right.set(title="first token, per layer", xlabel="layer", ylabel="mean over queries and heads")
    legend_below(fig, ncol=4)
    fig.tight_layout()
    return fig


def sink_cosines(cosines: pd.DataFrame, positions: pd.DataFrame) -> plt.Figure:
    """The paper's sink analysis ("the sink's values are anti-aligned with the others'"). Left: distribution
    of cos(v~_sink, v~_j) (pooled sample). Right: per layer, the mean cos(v~_p, v~_j) of the sink (p = 0) and
    of the control positions. The claim is judged by sign (below 0) and against the controls, so 0 is the
    one line drawn besides the data."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    sample = np.concatenate([np.asarray(s) for s in cosines["sample"]])
    left.hist(sample, bins=60, color="#4c72b0", label="pairs (sink, token j)")
    left.axvline(0, color="k", lw=1, label="orthogonal (cos 0)")
    left.set(title="cos(v~_sink, v~_j), all layers and heads", xlabel="cosine", ylabel="count (sample)")
    legend_beside(left)
    for (p, sub), marker in zip(positions.groupby("position"), "osD^", strict=False):
        by = sub.groupby("layer")["cosine"].mean()
        label = "sink (p = 0)" if p == 0 else f"control p = {p}"
        right.plot(by.index, by.to_numpy(), marker=marker, ms=4, label=label)
    right.axhline(0, color="k", lw=0.8, label="orthogonal (cos 0)")
    right.set(title="mean cos(v~_p, v~_j) per layer", xlabel="layer", ylabel="mean cosine")
    legend_beside(right)
    fig.tight_layout()
    return fig


def _sink_head_panel(ax: plt.Axes, head: pd.Series) -> None:
    """One head of :func:`sink_rate_vs_norm`: its queries, the binned means the test uses, and the quadratic
    fit of ||o||^2 with its vertex (a picture only), the fit drawn over the sampled sink rates and where it
    is positive (its square root is ||o||'s scale)."""
    rate, norm = np.asarray(head["rate_sample"]), np.asarray(head["norm_sample"])
    ax.scatter(rate, norm, s=5, alpha=0.5, color="0.55", label="queries (sample)")
    ax.plot(head["bin_rate"], head["bin_norm"], "ko-", ms=3, lw=1, label="binned mean ||o|| (the test)")
    if head["p2"] > 0:
        grid = np.linspace(rate.min(), rate.max(), 200)
        fit = np.polyval(np.polyfit(rate, norm**2, 2), grid)
        ax.plot(grid, np.sqrt(np.where(fit > 0, fit, np.nan)), "r-", lw=1,
                label=FIT_LABEL)  # fmt: skip
        ax.axvline(head["vertex"], color="r", ls=":", lw=1, label="the fit's minimum (vertex)")
    interior = "interior minimum" if head.get("interior", False) else "no interior minimum"
    ax.set(title=f"L{head['layer']} H{head['head']}: {interior}", xlabel="sink rate a_i0 (attention share)",
           ylabel="||o_i|| (head output norm)", xlim=(0, 1))  # fmt: skip
    ax.title.set_fontsize(9)


#: The legend's words for `_sink_head_panel`'s fit.
FIT_LABEL = "quadratic fit of ||o||^2, its square root where positive (picture only)"


def sink_rate_vs_norm(fits: pd.DataFrame, n_heads: int = 4) -> plt.Figure:
    """The paper's convexity claim (||o|| is a convex function of the sink rate, smallest below 1): ||o_i|| vs
    the sink rate a_i0 for the ``n_heads`` heads whose sink rate spans the widest range, one head per panel
    (`_sink_head_panel`); last panel: where the quadratic fits of the convex heads put their minimum,
    with (0, 1) shaded. One legend, under the panels."""
    fig, axes = plt.subplots(1, n_heads + 1, figsize=(3.4 * (n_heads + 1), 3.4))
    top = (
        fits.assign(span=fits["rate_max"] - fits["rate_min"])
        .sort_values("span", ascending=False)
        .head(n_heads)
    )
    for ax, (_, head) in zip(axes, top.iterrows(), strict=False):
        _sink_head_panel(ax, head)
    convex = fits[fits["p2"] > 0]
    axes[-1].hist(
        convex["vertex"].clip(-0.5, 1.5),
        bins=40,
        color=color("contribution"),
        label="heads (clipped to +-0.5)",
    )
    axes[-1].axvspan(0, 1, color="0.9", zorder=-1, label="minimum inside (0, 1)")
    axes[-1].set(
        title=f"fit's minimum, {len(convex)} convex heads",
        xlabel="sink rate at the fit's minimum ||o||",
        ylabel="heads (count)",
    )
    axes[-1].title.set_fontsize(9)
    legend_below(fig, ncol=3)
    fig.tight_layout()
    return fig


def sink_removal(spread: pd.DataFrame, ppl: dict) -> plt.Figure:
    """Per layer, the head outputs' cone concentration and norm spread, clean vs sink value removed; the
    title gives the perplexity pooled over the windows (the claim pairs each window's)."""
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


def cost(frame: pd.DataFrame, max_gb: float | None = None) -> plt.Figure:
    """Time and peak memory of contribution weights vs the naive terms-tensor implementation, per sequence
    length (the paper's cost argument: no (T, T, d) tensor is formed). ``max_gb``: the memory cap beyond which
    the naive one was skipped (``Preset.bench_naive_max_gb``); the title says where it stops and why."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = {"contribution_weights": "contribution_weights (one matmul per head)",
              "naive": "naive: (H, T, T, D) terms tensor"}  # fmt: skip
    for ax, col, label in zip(
        axes, ("seconds", "peak_gb"), ("time (s, median)", "peak memory (GB)"), strict=True
    ):
        for impl, sub in frame.dropna(subset=[col]).groupby("impl", sort=False):
            ax.plot(sub["T"], sub[col], marker="o", label=labels.get(str(impl), str(impl)))
        ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel=label)
        lengths = sorted(frame["T"].unique())  # one plain label per measured length, no log-axis minor labels
        ax.set_xticks(lengths, labels=[str(int(t)) for t in lengths])
        ax.xaxis.set_minor_locator(plt.NullLocator())
    fig.suptitle(_naive_coverage(frame, max_gb), fontsize=9)
    legend_below(fig)
    fig.tight_layout()
    return fig


def _naive_coverage(frame: pd.DataFrame, max_gb: float | None) -> str:
    """The cost figure's title: the lengths the naive implementation ran at, and why it stops."""
    naive = frame[frame["impl"] == "naive"]
    ran = naive.dropna(subset=["seconds"])["T"].tolist()
    skipped = naive[naive["seconds"].isna()]["T"].tolist()
    where = f"naive run at T = {', '.join(map(str, ran))}" if ran else "naive not run"
    if len(ran) == 1:
        where += " only (one point)"
    if skipped:
        cap = f"{max_gb:g} GB" if max_gb is not None else "the memory cap"
        where += f"; skipped at T = {', '.join(map(str, skipped))}: its terms tensor exceeds {cap}"
    return f"cost of contribution weights: {where}"
