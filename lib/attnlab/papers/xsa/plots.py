"""XSA figures: one function per kind of plot, each taking a tidy DataFrame (save with
``attnlab.runner.style.save_figure``)."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from attnlab.runner.stats import mean_interval
from attnlab.runner.style import color, interval95, legend_below, legend_beside

KIND_LABELS = {"sa": "SA", "xsa": "XSA", "xsa-random": "XSA control: random direction",
               "xsa-prev": "XSA control: previous value"}  # fmt: skip
KIND_COLORS = {label: color(kind) for kind, label in KIND_LABELS.items()}


def loss_curves(curves: pd.DataFrame) -> plt.Figure:
    """Fig. 3: loss vs step, one panel per model size; colour = attention kind, line style = split.

    ``curves`` has columns size, kind, seed, step, split, loss; the line is the mean over seeds and the band
    its 95 % interval (``style.interval95``).
    """
    data = curves.assign(kind=curves["kind"].map(KIND_LABELS))
    sizes = list(dict.fromkeys(data["size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.2 * len(sizes), 3.8), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        sub = data[data["size"] == size]
        sns.lineplot(
            data=sub, x="step", y="loss", hue="kind", style="split", errorbar=interval95,
            palette=KIND_COLORS, ax=ax, style_order=["validation", "train"],
            hue_order=[k for k in KIND_LABELS.values() if k in set(sub["kind"])],
        )  # fmt: skip
        # Zoom past the first tenth of training, where the loss is still falling steeply.
        late = sub[sub["step"] >= 0.1 * sub["step"].max()]["loss"]
        ax.set_ylim(late.min() - 0.02 * (late.max() - late.min()) - 0.01, late.max() + 0.01)
        ax.set(title=f"{size}: loss, mean over seeds [95 % interval]", xlabel="training step",
               ylabel="loss (nats / byte)")  # fmt: skip
    fig.suptitle("Fig. 3 (the claims judge the final validation loss minus SA's, paired by seed)")
    legend_below(fig, ncol=4)
    fig.tight_layout()
    return fig


DIAGNOSTICS = {
    "cos_vv": "mean cos(v_i, v_j), j < i",
    "a_ii": "mean diagonal attention a_ii",
    "cos_yv": "mean cos(y_i, v_i)",
    "cos_zv": "mean cos(z_i, v_i)",
}


def layer_diagnostics(diag: pd.DataFrame) -> plt.Figure:
    """Fig. 1: per-layer similarity-bias diagnostics; each seed's mean over its rows (sequences, heads) of a
    layer, then the mean over seeds with its 95 % interval (``style.interval95``: seeds are the independent
    units); the dashed grey line in the a_ii panel is uniform attention."""
    data = diag.assign(kind=diag["kind"].map(KIND_LABELS), layer=diag["layer"] + 1)
    if "seed" in data:  # one row per (kind, layer, seed): the band is over seeds, not over pooled rows
        columns = [*DIAGNOSTICS, "a_ii_uniform"]
        keys = [c for c in ("size", "kind", "layer", "seed") if c in data]
        data = data.groupby(keys, as_index=False)[columns].mean()
    fig, axes = plt.subplots(1, len(DIAGNOSTICS), figsize=(4.0 * len(DIAGNOSTICS), 3.5))
    for ax, (metric, label) in zip(axes, DIAGNOSTICS.items(), strict=True):
        sns.lineplot(
            data=data, x="layer", y=metric, hue="kind", errorbar=interval95, marker="o",
            palette=KIND_COLORS, ax=ax,
        )  # fmt: skip
        if metric == "a_ii":
            ref = data.groupby("layer")["a_ii_uniform"].mean()
            ax.plot(ref.index, ref.to_numpy(), ls="--", color="grey", label="uniform attention")
        ax.set(title=label, xlabel="layer", ylabel=metric)
        ax.set_xticks(sorted(data["layer"].unique()))
    fig.suptitle(
        "Fig. 1: per-layer mean over seeds [95 % interval]; the depth claims judge each seed's slope"
    )
    legend_below(fig, ncol=5)
    fig.tight_layout()
    return fig


def block_costs(costs: pd.DataFrame, device: str) -> plt.Figure:
    """Fig. 2: time and memory of one attention + FFN block (forward + backward) vs sequence length, one line
    per width; SA solid, XSA dashed; the right panels show the ratio XSA / SA."""
    data = costs.assign(kind=costs["kind"].map(KIND_LABELS))
    wide = costs.pivot_table(index=["d_model", "seq_len"], columns="kind", values=["time_ms", "memory_mib"])
    ratios = pd.DataFrame({
        "time": wide["time_ms"]["xsa"] / wide["time_ms"]["sa"],
        "memory": wide["memory_mib"]["xsa"] / wide["memory_mib"]["sa"],
    }).reset_index()  # fmt: skip
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    panels = [
        (data, "time_ms", f"time per step (ms, {device})", "kind"),
        (ratios, "time", "time ratio XSA / SA", None),
        (data, "memory_mib", "activation memory (MiB)", "kind"),
        (ratios, "memory", "memory ratio XSA / SA", None),
    ]
    for ax, (frame, y, label, style) in zip(axes, panels, strict=True):
        sns.lineplot(
            data=frame, x="seq_len", y=y, hue="d_model", style=style, marker="o", ax=ax,
            palette="viridis", errorbar=None,
        )  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set(xlabel="sequence length (tokens)", ylabel=label, title=label)
        if style is None:
            ax.axhline(1.0, color="grey", ls=":", lw=1)
        else:
            ax.set_yscale("log")
    legend_below(fig, ncol=6)
    fig.tight_layout()
    return fig


def sweep(frame: pd.DataFrame, axis: str, xlabel: str, log_x: bool = False, title: str = "") -> plt.Figure:
    """Figs. 4-6: final train (dashed) and validation (solid) loss of SA and XSA against one swept setting,
    mean over seeds with its 95 % interval; the right panel is the validation gap XSA - SA (mean over seeds
    of the paired gaps, band: their 95 % interval, the one the claims judge)."""
    tidy = frame.melt(id_vars=["kind", "seed", axis], value_vars=["train", "validation"], var_name="split")
    tidy = tidy.assign(kind=tidy["kind"].map(KIND_LABELS))
    wide = frame.pivot_table(index=[axis, "seed"], columns="kind", values="validation")
    gaps = (wide["xsa"] - wide["sa"]).rename("gap").reset_index()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 3.8))
    if title:
        fig.suptitle(title)
    sns.lineplot(
        data=tidy, x=axis, y="value", hue="kind", style="split", style_order=["validation", "train"],
        marker="o", errorbar=interval95, palette=KIND_COLORS, ax=left,
    )  # fmt: skip
    left.set(xlabel=xlabel, ylabel="final loss (nats / byte)")
    sns.lineplot(data=gaps, x=axis, y="gap", marker="o", errorbar=interval95, color="black", ax=right)
    right.axhline(0.0, color="grey", ls=":", lw=1)
    right.set(xlabel=xlabel, ylabel="validation loss XSA - SA (nats / byte)",
              title="XSA - SA, paired by seed: mean [95 % interval]")  # fmt: skip
    left.set(title="final loss: mean over seeds [95 % interval]")
    for ax in (left, right):
        if log_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(frame[axis].unique()))
        ax.set_xticklabels([f"{v:g}" for v in sorted(frame[axis].unique())])
    legend_below(fig, ncol=6)
    fig.tight_layout()
    return fig


def _interval_band(ax: plt.Axes, frame: pd.DataFrame, x: str, y: str, label: str, line_color: str) -> None:
    """The mean of ``y`` over the rows at each ``x`` with its 95% t-interval (seeds) as a band."""
    rows = []
    for value, g in frame.groupby(x):
        est = mean_interval(g[y].tolist())
        rows.append((value, est.mean, est.low, est.high))
    xs, mean, low, high = (np.array(c, float) for c in zip(*rows, strict=True))
    ax.plot(xs, mean, color=line_color, label=label, marker="o", ms=3)
    if np.isfinite(low).all():
        ax.fill_between(xs, low, high, color=line_color, alpha=0.2, lw=0)


def gap_over_training(gaps: pd.DataFrame, warmups: Mapping[str, int]) -> plt.Figure:
    """Gap over training (Fig. 3): each kind's validation loss minus SA's of the same seed against the
    training tokens seen, one panel per size; line: mean over seeds, band: its 95% interval; the dashed
    line is the early evaluation where the claims read the gap (:func:`attnlab.papers.xsa.claims.
    early_and_final`, from each size's warm-up steps ``warmups``), the last evaluation the final one."""
    from attnlab.papers.xsa.claims import early_and_final

    sizes = list(dict.fromkeys(gaps["size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.2 * len(sizes), 3.6), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        sub = gaps[gaps["size"] == size]
        for kind in [k for k in KIND_LABELS if k in set(sub["kind"])]:
            _interval_band(ax, sub[sub["kind"] == kind], "tokens", "gap", f"{KIND_LABELS[kind]} - SA",
                           color(kind))  # fmt: skip
        early, _ = early_and_final(sub, warmups[size])
        tokens = sub.loc[sub["step"] == early, "tokens"].iloc[0]
        ax.axhline(0.0, color="grey", ls=":", lw=1)
        ax.axvline(tokens, color="grey", ls="--", lw=0.8, label=f"early reading (step {early})")
        ax.set(title=size, xlabel="training tokens seen", ylabel="validation loss minus SA's (nats / byte)")
        legend_beside(ax)
    fig.tight_layout()
    return fig


def paired_gaps(finals: pd.DataFrame, unit: str = "nats / byte") -> plt.Figure:
    """Fig. 3's final validation gaps: each kind minus SA, one point per seed (paired: same seed) and, beside
    the points, their mean over seeds with its 95% t interval (diamond and bar: what the claims judge), one
    panel per size (or variant); ``unit``: the loss's unit, for the axis."""
    val = finals["validation"]
    sizes = list(dict.fromkeys(val.index.get_level_values("size")))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.6 * len(sizes), 3.9), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        f = val.loc[size]
        kinds = [k for k in KIND_LABELS if k in f.columns and k != "sa" and f[k].notna().all()]
        for i, kind in enumerate(kinds):
            d = (f[kind] - f["sa"]).to_numpy()
            est = mean_interval(d.tolist())
            ax.scatter(np.full(len(d), i - 0.1), d, color=color(kind), alpha=0.6, s=18)
            ax.errorbar(i + 0.1, est.mean, yerr=[[est.mean - est.low], [est.high - est.mean]]
                        if np.isfinite(est.low) else None, fmt="D", color=color(kind), capsize=4)  # fmt: skip
        ax.axhline(0.0, color="grey", ls=":", lw=1)
        ax.set_xlim(-0.6, len(kinds) - 0.4)  # the mean beside its own dots, however few kinds there are
        ax.set_xticks(range(len(kinds)), [KIND_LABELS[k].replace("XSA control: ", "").replace(" ", "\n")
                                          for k in kinds])  # fmt: skip
        ax.set(title=f"{size} ({len(f)} seeds)", ylabel=f"final validation loss minus SA's ({unit})")
    handles = [
        axes[0, 0].scatter([], [], color="grey", alpha=0.6, s=18, label="one seed: its loss minus SA's"),
        axes[0, 0].errorbar([], [], yerr=[], fmt="D", color="grey", capsize=4,
                            label="mean over seeds and its 95% t interval (what the claims judge)"),
    ]  # fmt: skip
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def sink_attention(sink_mass: pd.DataFrame) -> plt.Figure:
    """Fig. 6, measured: attention mass on the learned sinks (left) and on the first real token (right) by
    layer, one line per (kind, sink count) (mean over seeds); thin dashed lines: what uniform causal
    attention would put there with each sink count, each labelled with its count at its right end."""
    data = sink_mass.assign(kind=sink_mass["kind"].map(KIND_LABELS), layer=sink_mass["layer"] + 1)
    with_sinks = data[data["n_sink"] > 0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    panels = [(with_sinks, "sink_mass", "sink_uniform", "mass on the learned sinks"),
              (data, "first_mass", "first_uniform", "mass on the first real token")]  # fmt: skip
    for ax, (frame, y, ref, title) in zip(axes, panels, strict=True):
        if frame.empty:
            ax.set_axis_off()
            continue
        sns.lineplot(data=frame, x="layer", y=y, hue="kind", style="n_sink", marker="o", errorbar=None,
                     palette=KIND_COLORS, ax=ax)  # fmt: skip
        for n_sink, g in frame.groupby("n_sink"):
            u = g.groupby("layer")[ref].mean()
            ax.plot(u.index, u.to_numpy(), ls="--", color=color("chance"), lw=1)
            ax.annotate(f"uniform, {n_sink} sink{'s' * (n_sink != 1)}", (u.index[-1], u.iloc[-1]),
                        xytext=(-2, 2), textcoords="offset points", fontsize=7, ha="right", va="bottom",
                        color=color("chance"))  # fmt: skip
        ax.plot([], [], ls="--", color=color("chance"), lw=1, label="uniform causal attention (per count)")
        ax.set(title=title, xlabel="layer", ylabel="attention mass")
        ax.set_xticks(sorted(frame["layer"].unique()))
        ax.get_legend().remove()  # one legend, beside the last panel: it has every sink count
    legend_beside(axes[-1])
    fig.tight_layout()
    return fig


def _size(parameters: float) -> str:
    """A parameter count as people write it: 135M, 1.78B."""
    return f"{parameters / 1e9:.3g}B" if parameters >= 1e9 else f"{parameters / 1e6:.3g}M"


def pretrained_similarity(results: Mapping[str, Mapping]) -> plt.Figure:
    """Fig. 1 on pretrained models (``attnlab.papers.xsa.pretrained.measure_models``). One panel per model,
    smallest first, on a shared y axis: cos(y_i, v_i) per layer against relative depth beside uniform
    mixing's cos(ybar_i, v_i) (dashed), mean over windows with its 95 % interval. Last panel, the scale
    view: per model, the margin of cos(y_i, v_i) over each baseline (mean over layers, then over windows,
    95 % interval), the models in order of parameter count, evenly spaced; the claims judge these margins
    (above 0) and each window's slope against depth. One legend, under the panels."""
    order = sorted(results, key=lambda name: results[name]["parameters"])
    fig = plt.figure(figsize=(2.9 * len(order) + 5.0, 3.9))
    grid = fig.add_gridspec(1, len(order) + 1, width_ratios=[1.0] * len(order) + [1.7])
    panels = [fig.add_subplot(grid[0, 0])]
    panels += [fig.add_subplot(grid[0, k], sharey=panels[0]) for k in range(1, len(order))]
    right = fig.add_subplot(grid[0, -1])
    measured, uniform = color("sa"), color("random init")
    for k, (ax, name) in enumerate(zip(panels, order, strict=True)):
        table = results[name]["table"]
        sns.lineplot(data=table, x="depth", y="cos_yv", errorbar=interval95, color=measured, marker="o", ms=3,
                     ax=ax, label="cos(y_i, v_i): mean over windows [95 % interval]")  # fmt: skip
        sns.lineplot(data=table, x="depth", y="cos_uniform", errorbar=interval95, color=uniform, ls="--",
                     lw=1.5, ax=ax, label="uniform mixing: cos(ybar_i, v_i)")  # fmt: skip
        ax.set(title=f"{name}\n{_size(results[name]['parameters'])} parameters", xlabel="relative depth",
               ylabel="cos(y_i, v_i)" if k == 0 else "", xlim=(0, 1))  # fmt: skip
        ax.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
        ax.title.set_fontsize(9)
        if k:
            ax.tick_params(labelleft=False)
    baselines = (("cos_uniform", "o", measured, "over uniform mixing"),
                 ("cos_far", "s", "white", "over a token half a window back"))  # fmt: skip
    for baseline, marker, face, label in baselines:
        xs: list[float] = []
        means: list[float] = []
        errors: list[list[float]] = [[], []]
        for name in order:
            table = results[name]["table"]
            est = mean_interval((table["cos_yv"] - table[baseline]).groupby(table["window"]).mean().tolist())
            xs.append(len(xs) + (0.1 if marker == "s" else -0.1))  # side by side
            means.append(est.mean)
            errors[0].append(est.mean - est.low)
            errors[1].append(est.high - est.mean)
        right.errorbar(xs, means, yerr=errors, fmt=marker, color=measured, mfc=face, capsize=3,
                       label=f"margin {label}")  # fmt: skip
    right.axhline(0.0, color="grey", lw=1)
    right.set(xlabel="model (parameters with embeddings)", ylabel="cos(y_i, v_i) - baseline",
              title="margin over each baseline, by size", xlim=(-0.5, len(order) - 0.5))  # fmt: skip
    right.title.set_fontsize(9)
    right.set_xticks(range(len(order)), [f"{name}\n{_size(results[name]['parameters'])}" for name in order],
                     fontsize=7)  # fmt: skip
    right.yaxis.set_label_position("right")
    right.yaxis.tick_right()
    fig.suptitle("Fig. 1 on pretrained models: mean over text windows [95 % interval]")
    legend_below(fig, ncol=2)
    fig.tight_layout(w_pad=0.6)
    return fig


def gain_by_size(finals: pd.DataFrame, parameters: Mapping[str, int]) -> plt.Figure:
    """XSA's gain across sizes (Table 2's gain rising from 0.7B to 2.7B, read on the loss): each seed's final
    validation gap XSA - SA (dots, one seed's sizes joined by a thin line) against the size's parameters
    without embeddings (log axis), and the mean over seeds with its 95% t interval; the claims judge each
    seed's slope against log2(parameters). ``finals``: ``XSAExperiment.final_losses``."""
    val = finals["validation"]
    sizes = [s for s in parameters if s in set(val.index.get_level_values("size"))]
    x = np.array([parameters[s] for s in sizes], float)
    gaps = pd.DataFrame({s: val.loc[s]["xsa"] - val.loc[s]["sa"] for s in sizes})  # seed x size
    fig, ax = plt.subplots(figsize=(5.6, 3.9))
    for _, row in gaps.iterrows():
        ax.plot(x, row.to_numpy(), color=color("xsa"), alpha=0.35, lw=0.8, marker="o", ms=3)
    for xi, size in zip(x, sizes, strict=True):
        est = mean_interval(gaps[size].tolist())
        err = [[est.mean - est.low], [est.high - est.mean]] if np.isfinite(est.low) else None
        ax.errorbar(xi * 1.08, est.mean, yerr=err, fmt="D", color=color("xsa"), capsize=4)
    ax.axhline(0.0, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{s}\n{int(n):,}" for s, n in zip(sizes, x, strict=True)], fontsize=8)
    ax.minorticks_off()
    ax.set(xlabel="size (parameters without embeddings)", ylabel="XSA - SA final validation loss",
           title=f"XSA's gain by size ({len(gaps)} seeds; diamond: mean, 95% t interval)")  # fmt: skip
    fig.tight_layout()
    return fig


#: The nulls of Fig. 1 on pretrained models, one line each: (label, (column, null) with the sink, the same
#: with the sink removed or None); a null is a column measured beside it or a constant.
Null = tuple[str, str | float]  # (column, its null: a column measured beside it, or a constant)
NULL_ROWS: tuple[tuple[str, Null, Null | None], ...] = (
    ("cos(y,v) - uniform mixing", ("cos_yv", "cos_uniform"), ("cos_yv_nosink", "cos_uniform_nosink")),
    ("cos(y,v) - previous value", ("cos_yv", "cos_prev"), ("cos_yv_nosink", "cos_prev_nosink")),
    ("cos(y,v) - shuffled keys", ("cos_yv", "cos_shuffled"), ("cos_yv_nosink", "cos_shuffled_nosink")),
    ("cos(y,v) - far token", ("cos_yv", "cos_far"), None),
    ("cos(v_i,v_j)", ("cos_vv", 0.0), ("cos_vv_nosink", 0.0)),
    ("a_ii - uniform", ("a_ii", "a_ii_uniform"), ("a_ii_nosink", "a_ii_uniform_nosink")),
    ("a_ii - a_(i,i-1)", ("a_ii", "a_prev"), ("a_ii_nosink", "a_prev_nosink")),
)


def _window_margin(table: pd.DataFrame, column: str, null: str | float) -> list[float]:
    """Per window, the mean over layers of ``column`` minus its null (what the claims judge)."""
    baseline = table[null] if isinstance(null, str) else float(null)
    return (table[column] - baseline).groupby(table["window"]).mean().tolist()


def pretrained_nulls(results: Mapping[str, Mapping]) -> plt.Figure:
    """Fig. 1 on pretrained models against every null (``attnlab.papers.xsa.pretrained.measure_models``): per
    model (a panel each, smallest first), the margin of cos(y_i, v_i), cos(v_i, v_j) and a_ii over each of
    :data:`NULL_ROWS`, with the sink inside y_i (filled circles) and with the first token's contribution
    removed from both sides (open squares): the mean over text windows with its 95% t interval, the windows
    the units of these rows of the claims table."""
    order = sorted(results, key=lambda name: results[name]["parameters"])
    fig, axes = plt.subplots(1, len(order), figsize=(3.4 * len(order) + 1.6, 3.9), squeeze=False, sharey=True)
    y = np.arange(len(NULL_ROWS))[::-1]
    for ax, name in zip(axes[0], order, strict=True):
        table = results[name]["table"]
        for yi, (_, with_sink, without) in zip(y, NULL_ROWS, strict=True):
            marks: tuple[tuple[Null | None, float, str, str | None], ...] = (
                (with_sink, 0.12, "o", None), (without, -0.12, "s", "none"),
            )  # fmt: skip
            for spec, dy, marker, face in marks:
                if spec is None:
                    continue
                est = mean_interval(_window_margin(table, spec[0], spec[1]))
                err = [[est.mean - est.low], [est.high - est.mean]] if np.isfinite(est.low) else None
                ax.errorbar(est.mean, yi + dy, xerr=err, fmt=marker, color=color("sa"), mfc=face, capsize=3)
        ax.axvline(0.0, color="grey", ls=":", lw=1)
        ax.set(
            title=f"{name}\n{_size(results[name]['parameters'])} parameters", xlabel="margin over the null"
        )
    axes[0, 0].set_yticks(y, [label for label, _, _ in NULL_ROWS], fontsize=8)
    handles = [
        axes[0, 0].errorbar([], [], fmt="o", color=color("sa"), label="with the sink"),
        axes[0, 0].errorbar([], [], fmt="s", color=color("sa"), mfc="none", label="the sink removed"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("Fig. 1 on pretrained models: margin over each null, mean over windows [95 % interval]")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
