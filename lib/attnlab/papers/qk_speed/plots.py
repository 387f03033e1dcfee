"""The figures of the qk_speed notebook (Faster query-key learning sharpens attention): the distinct-token
attention mass per run in one panel (Fig. 2's statistic) with the DTAP heatmaps beside it (Fig. 2 and the
real-data runs), fixed-attention losses (Fig. 3), the reduced dynamics and their growth-law fits
(Fig. 4), the eta_QK / eta_OV sweep and the baseline-vs-faster-QK bars. Each takes the tidy frames of
``attnlab.papers.qk_speed`` and returns a matplotlib figure; save with
``attnlab.runner.style.save_figure``. A real-data part skipped for lack of its data (no rows,
``real_data.skip``) gets a small figure that says so instead of its panels."""

from __future__ import annotations

import math
import re
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_hex

from attnlab.metrics import DTAP_EDGES
from attnlab.papers.qk_speed.real_data import skipped_reason
from attnlab.runner import style, thresholds
from attnlab.runner.stats import mean_interval

#: A faster-QK run's label names its QK factor or ramp ("FAFO QK x20", "fast QK x5", "... QK ramp x1-x40").
_FASTER_QK = re.compile(r"QK (x\d|ramp)")

#: The ratio sweep's figure circles a ratio whose QK circuit moved at most this share of its attention from
#: its init (``circuits.attention_shift``); no verdict reads it.
QK_STILL = thresholds.value("qk_speed.QK_STILL")


def no_results(why: str) -> plt.Figure:
    """A figure without panels that says there is nothing to plot and ``why`` (a part skipped for lack of its
    data: ``real_data.skip``'s reason)."""
    fig, ax = plt.subplots(figsize=(8.0, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, textwrap.fill(f"No results: {why}", 100), ha="center", va="center", fontsize=9)
    return fig


def variant_colors(variants) -> dict[str, str]:
    """The baseline in the project's colour for standard attention; the faster-QK variants ("fast QK x2",
    ...; in order of their factors) in shades of faster QK's colour, the last in the colour itself."""
    fast = [v for v in variants if v != "baseline"]
    shades = sns.light_palette(style.color("fast-qk"), n_colors=len(fast) + 1)[1:]
    return {"baseline": style.color("sa")} | {v: to_hex(c) for v, c in zip(fast, shades, strict=True)}


def distinct_mass(frame: pd.DataFrame, key: str = "run", xlabel: str = "distinct") -> plt.Figure:
    """Fig. 2's statistic in one panel: per run (a row, in the frame's order), the attention mass on the
    distinct tokens of every test sample (a violin over all seeds' samples), each seed's mean (dots) and the
    mean over seeds with its 95 % interval (black bar, clipped to [0, 1]; the claims judge the per-seed means,
    paired by seed), printed at the right. Faster-QK runs in faster QK's colour, their baselines in standard
    attention's."""
    runs = list(dict.fromkeys(frame[key]))
    fig, ax = plt.subplots(figsize=(8.5, 0.42 * len(runs) + 1.4))
    for y, run in enumerate(runs):
        sub = frame[frame[key] == run]
        colour = style.color("fast-qk" if _FASTER_QK.search(run) else "sa")
        masses = sub["mass"].to_numpy(dtype=float)
        if np.ptp(masses) > 0:  # a violin needs spread; a run whose every sample has one mass is its dots
            body = ax.violinplot(
                masses, positions=[y], orientation="horizontal", widths=0.8, showextrema=False
            )
            plt.setp(body["bodies"], facecolor=colour, edgecolor=colour, alpha=0.35)
        seeds = sub.groupby("seed")["mass"].mean()
        ax.scatter(seeds, np.full(len(seeds), y), s=14, color=colour, edgecolor="k", linewidth=0.4, zorder=3)
        est = mean_interval(seeds)
        if est.n > 1:
            low, high = max(est.low, 0.0), min(est.high, 1.0)  # a mass: the t interval clipped to [0, 1]
            ax.plot([low, high], [y, y], color="k", lw=2.2, zorder=4)
            text = f"{est.mean:.3f} [{low:.3f}, {high:.3f}], {est.n} seeds"
        else:
            text = f"{est.mean:.3f}, one seed, no interval"
        ax.plot([est.mean], [y], marker="|", color="k", ms=10, mew=2, zorder=4)
        ax.annotate(text, (1.02, y), xycoords=("axes fraction", "data"), va="center", fontsize=7.5)
    ax.set_yticks(range(len(runs)), runs, fontsize=8)
    ax.set_ylim(len(runs) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.set(
        xlabel=f"attention mass on {xlabel} tokens (per test sample)",
        ylabel=key,
        title=f"Mass on {xlabel} tokens: samples (violin), seed means (dots), mean and 95 % interval (bar)",
    )
    ax.title.set_fontsize(9)
    fig.tight_layout()
    return fig


def _bin(edges: tuple[float, ...], j: int) -> str:
    """The name of bin ``j`` of ``edges``: [lo, hi), the last closed."""
    return f"[{edges[j]:g}, {edges[j + 1]:g}{']' if j + 2 == len(edges) else ')'}"


def dtap_grid(hists: dict[str, np.ndarray], ncols: int = 4, xlabel: str = "distinct") -> plt.Figure:
    """The DTAP heatmaps (the paper's Fig. 2 view): % of test samples, mean over seeds, by attention mass bin
    (x) and true-label-probability bin (y), the paper's bin edges; a sequential colormap (a share: more is
    darker) with one colorbar. Probability bins without a sample in any run are not drawn (an all-zero row
    says nothing), the title names them; where every sample of every run lies in one probability bin (the
    task learnt: P(true label) >= 0.8), one heatmap holds every run, a row each (`_dtap_rows`), else
    one panel per run. The seed interval of the statistic the claims judge is the distinct-mass figure's
    (`distinct_mass`), so no cell carries a spread. No runs (a skipped part): `no_results`."""
    names = list(hists)
    if not names:
        return no_results("no runs to show (the part was skipped)")
    stack = np.stack([hists[name] for name in names])  # (runs, mass bins, probability bins)
    used = np.flatnonzero(stack.sum(axis=(0, 1)) > 0)
    lo, hi = (used.min(), used.max()) if len(used) else (0, stack.shape[2] - 1)
    empty = [_bin(DTAP_EDGES, j) for j in range(stack.shape[2]) if not lo <= j <= hi]
    note = f"no test sample has P(true label) in {', '.join(empty)} (not drawn)" if empty else ""
    if lo == hi:
        return _dtap_rows(names, stack[:, :, lo], _bin(DTAP_EDGES, lo), xlabel, note)
    nrows = math.ceil(len(names) / ncols)
    rows = hi - lo + 1
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.0 * ncols, (0.45 * rows + 0.85) * nrows + 0.4), squeeze=False
    )
    ticks = [f"{e:.1f}" for e in DTAP_EDGES]
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    for ax, name, hist in zip(axes.flat, names, stack, strict=False):
        grid = hist[:, lo : hi + 1].T[::-1]  # rows: probability bins, highest on top
        labels = np.vectorize(lambda m: f"{m:.0f}")(grid)
        sns.heatmap(grid, ax=ax, cmap=style.SHARE_CMAP, vmin=0, vmax=100, annot=labels, fmt="", cbar=False,
                    annot_kws={"fontsize": 7})  # fmt: skip
        ax.set_xticks(np.arange(len(ticks)), ticks, fontsize=7)
        ax.set_yticks(np.arange(rows + 1), ticks[lo : hi + 2][::-1], fontsize=7, rotation=0)
        ax.set(title=name, xlabel=f"mass on {xlabel} tokens", ylabel="P(true label)")
        ax.title.set_fontsize(9)
    if note:
        fig.suptitle(note, fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.92, 1))
    bar = fig.add_axes((0.935, 0.15, 0.012, 0.7), label="<colorbar>")
    fig.colorbar(ScalarMappable(Normalize(0, 100), style.SHARE_CMAP), cax=bar, label="% of test samples")
    return fig


def _dtap_rows(names: list[str], shares: np.ndarray, where: str, xlabel: str, note: str) -> plt.Figure:
    """`dtap_grid` where every sample lies in one probability bin (``where``): one heatmap, a row per
    run, its % of test samples by attention mass bin (``shares``: (runs, mass bins))."""
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(names) + 1.5))
    labels = np.vectorize(lambda m: f"{m:.0f}")(shares)
    sns.heatmap(shares, ax=ax, cmap=style.SHARE_CMAP, vmin=0, vmax=100, annot=labels, fmt="",
                annot_kws={"fontsize": 8}, cbar_kws={"label": "% of test samples", "pad": 0.02})  # fmt: skip
    ax.set_xticks(np.arange(len(DTAP_EDGES)), [f"{e:.1f}" for e in DTAP_EDGES], fontsize=8)
    ax.set_yticks(np.arange(len(names)) + 0.5, names, fontsize=8, rotation=0)
    ax.set(xlabel=f"attention mass on {xlabel} tokens", ylabel="run")
    ax.set_title(textwrap.fill(f"DTAP, P(true label) in {where}: % of test samples per mass bin, mean over "
                               f"seeds; {note}", 90), fontsize=9)  # fmt: skip
    fig.tight_layout()
    return fig


def fixed_attention(fig3: pd.DataFrame) -> plt.Figure:
    """Fig. 3: held-out loss vs epoch per alpha, factorised and collapsed OV (log scale), and the finite
    difference (L(alpha) - L(alpha + 0.005)) / 0.005 of the factorised model vs epoch; with several seeds,
    their mean and its 95 % interval."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    palette, ci = "viridis", style.interval95
    for ax, ov in zip(axes[:2], ("factorised", "collapsed"), strict=True):
        sub = fig3[fig3["ov"] == ov]
        sns.lineplot(data=sub, x="epoch", y="loss", hue="alpha", palette=palette, errorbar=ci, ax=ax)
        ax.set_yscale("log")
        ax.set(title=f"{ov} OV, attention fixed", xlabel="epoch", ylabel="held-out loss (nats)")
    sub = fig3[(fig3["ov"] == "factorised") & (fig3["epoch"] > 0)]
    sns.lineplot(data=sub, x="epoch", y="fd", hue="alpha", palette=palette, errorbar=ci, ax=axes[2])
    axes[2].set_yscale("symlog", linthresh=1e-3)
    axes[2].set(
        title="finite difference (factorised)",
        xlabel="epoch",
        ylabel="(L(a) - L(a + 0.005)) / 0.005 (nats per unit alpha)",
    )
    style.legend_below(fig, ncol=8, title="alpha")
    fig.tight_layout()
    return fig


def reduced_dynamics(sims: dict) -> plt.Figure:
    """Fig. 4: mu_OV, mu_QK, alpha and the loss vs log10(1 + tau), one line per r = eta_QK / eta_OV."""
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
    colors = sns.color_palette("viridis", len(sims))
    panels = [
        ("mu_ov", "mu_OV"),
        ("mu_qk", "mu_QK"),
        ("alpha", "alpha (mass on relevant tokens)"),
        ("loss", "loss (nats)"),
    ]
    for (r, sim), color in zip(sims.items(), colors, strict=True):
        traj = sim.trajectory
        x = np.log10(1 + traj.tau)
        for ax, (attr, _) in zip(axes, panels, strict=True):
            ax.plot(x, getattr(traj, attr), color=color, label=f"r = {r:g}")
    for ax, (attr, label) in zip(axes, panels, strict=True):
        ax.set(xlabel="log10(1 + tau)   (tau = t x min(eta))", ylabel=label, title=label)
        if attr == "loss":
            ax.set_yscale("log")
    style.legend_below(fig, ncol=8)
    fig.tight_layout()
    return fig


def growth_laws(sims: dict, fits: pd.DataFrame) -> plt.Figure:
    """The growth-law panel: over the late half (in log t) of each run, mu_OV against log t, and mu_QK and
    exp(mu_QK) against log^2 t (each normalised to [0, 1] over the window, so that straight lines mean the law
    holds); the legend gives each fit's R^2."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    colors = sns.color_palette("viridis", len(sims))
    laws = [("mu_OV ~ log t", "log t"), ("mu_QK ~ log^2 t", "log^2 t"), ("exp(mu_QK) ~ log^2 t", "log^2 t")]
    for (r, sim), color in zip(sims.items(), colors, strict=True):
        traj = sim.trajectory
        row = fits[fits["r"] == r].set_index("law")
        lo = row["log_t_from"].iloc[0]
        keep = (traj.t > 1) & (np.log(np.maximum(traj.t, 1e-300)) >= lo)
        log_t = np.log(traj.t[keep])
        ys = {
            "mu_OV ~ log t": traj.mu_ov[keep],
            "mu_QK ~ log^2 t": traj.mu_qk[keep],
            "exp(mu_QK) ~ log^2 t": np.exp(traj.mu_qk[keep]),
        }
        for ax, (law, xname) in zip(axes, laws, strict=True):
            x = log_t if xname == "log t" else log_t**2
            y = ys[law]
            span = (y.max() - y.min()) or 1.0
            ax.plot(x, (y - y.min()) / span, color=color, label=f"r = {r:g} (R^2 {row.loc[law, 'r2']:.3f})")
    for ax, (law, xname) in zip(axes, laws, strict=True):
        ax.set(
            title=law, xlabel=f"{xname}   (t: original time)", ylabel="normalised to [0, 1] over the window"
        )
        style.legend_beside(ax)
    fig.tight_layout()
    return fig


def ratio_sweep(ratio: pd.DataFrame, still: float | None = QK_STILL) -> plt.Figure:
    """Final attention mass on distinct tokens and accuracy vs eta_QK / eta_OV (FAFO), mean over seeds with
    its 95 % interval, one line per QK initialisation (``init``), the legend under the panels. An accuracy
    that is the same in every run (1.0: the task solved at every ratio) gets no panel, a flat line says
    nothing; the title says so. With ``still`` (`QK_STILL`; None: no marks) and a ``moved`` column, a
    ratio at which the QK circuit did not leave its init in some seed is circled in black: its attention is
    the init's. A mark for the reader only: the claims judge every ratio (slow QK staying at its saddle is
    what the claim is about)."""
    panels = [("mass", "mass on distinct tokens (share)")]
    accuracy = ratio["accuracy"].to_numpy(dtype=float)
    flat = np.ptp(accuracy) == 0
    if not flat:
        panels.append(("accuracy", "accuracy (share correct)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 3.8), squeeze=False)
    ratios = sorted(ratio["ratio"].unique())
    flagged = None
    if still is not None and "moved" in ratio:
        by = ratio.groupby(["init", "ratio"], sort=False)
        flagged = by[["mass", "accuracy"]].mean()[by["moved"].min() <= still].reset_index()
    for ax, (y, label) in zip(axes[0], panels, strict=True):
        sns.lineplot(
            data=ratio, x="ratio", y=y, hue="init", style="init", marker="o", errorbar=style.interval95, ax=ax
        )
        if flagged is not None and len(flagged):
            ax.scatter(flagged["ratio"], flagged[y], s=90, facecolors="none", edgecolors="black",
                       label="QK did not leave its init")  # fmt: skip
        ax.set(xscale="log", xlabel="eta_QK / eta_OV", ylabel=label, title=label.split(" (")[0])
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
        ax.minorticks_off()
        ax.set_ylim(0, 1.02)
        ax.title.set_fontsize(9)
    title = "FAFO ratio sweep, held-out: mean over seeds [95 % interval]"
    if flat:
        title += f"; accuracy {accuracy[0]:.3g} at every ratio and seed (no panel)"
    fig.suptitle(textwrap.fill(title, int(15 * fig.get_figwidth())), fontsize=10)
    style.legend_below(fig, ncol=3, title="FAFO init")
    fig.tight_layout()
    return fig


def stopping_thresholds(curves: pd.DataFrame) -> plt.Figure:
    """The authors' stopping-threshold plots (Fig. 4 notebook): mu_OV, mu_QK and alpha at the first point
    where the loss is <= each threshold, thresholds decreasing left to right (log axis), one line per r."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    rs = list(dict.fromkeys(curves["r"]))
    colors = sns.color_palette("viridis", len(rs))
    for r, color in zip(rs, colors, strict=True):
        sub = curves[curves["r"] == r]
        for ax, col in zip(axes, ("mu_ov", "mu_qk", "alpha"), strict=True):
            ax.plot(sub["threshold"], sub[col], marker="o", markersize=3, color=color, label=f"r = {r:g}")
    for ax, label in zip(axes, ("mu_OV at stop", "mu_QK at stop", "alpha at stop"), strict=True):
        ax.set(xscale="log", xlabel="stopping loss threshold", ylabel=label, title=label)
        ax.invert_xaxis()
    style.legend_below(fig, ncol=8)
    fig.tight_layout()
    return fig


def variant_bars(
    frame: pd.DataFrame, metrics: dict[str, str], ac: pd.DataFrame | None = None, title: str = ""
) -> plt.Figure:
    """Baseline vs faster QK: one panel per metric (``metrics``: column -> axis label), bars = mean over seeds
    of the per-seed means, error bars = their 95 % interval, dots = seeds (no random jitter: the same figure
    on every run); an AC panel (%) from ``ac`` if given. A metric that is zero for every run gets no panel (an
    empty panel says nothing); the figure's ``title`` names it. A ``frame`` without rows (a part skipped for
    lack of its data, ``real_data.skip``): :func:`no_results` with the reason, under ``title``."""
    if frame.empty:
        fig = no_results(skipped_reason(frame) or "no rows")
        if title:
            fig.suptitle(title, fontsize=10)
        return fig
    per_seed = frame.groupby(["variant", "seed"], sort=False)[list(metrics)].mean().reset_index()
    panels = [(col, label) for col, label in metrics.items() if per_seed[col].ne(0).any()]
    zero = [label for col, label in metrics.items() if not per_seed[col].ne(0).any()]
    if ac is not None:
        per_seed = per_seed.merge(ac, on=["variant", "seed"])
        panels.append(("AC", "AC (% of examples)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.0 * len(panels), 3.4))
    for ax, (col, label) in zip(np.atleast_1d(axes), panels, strict=True):
        sns.barplot(
            data=per_seed,
            x="variant",
            y=col,
            hue="variant",
            palette=variant_colors(dict.fromkeys(per_seed["variant"])),
            errorbar=style.interval95,
            ax=ax,
            legend=False,
        )
        sns.stripplot(data=per_seed, x="variant", y=col, color="black", size=3, jitter=False, ax=ax)
        ax.set(xlabel="QK learning rate", ylabel=label, title=f"{label}: seed mean [95 % interval]")
        ax.title.set_fontsize(9)
    if zero:
        title = "; ".join([t for t in (title, f"zero in every run (no panel): {', '.join(zero)}") if t])
    if title:
        fig.suptitle(title, fontsize=10, y=1.04)
    fig.tight_layout()
    return fig
