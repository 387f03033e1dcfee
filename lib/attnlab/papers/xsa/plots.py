"""XSA figures: one function per kind of plot, each taking a tidy DataFrame (save with
``attnlab.runner.style.save_figure``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

KIND_LABELS = {"sa": "SA", "xsa": "XSA"}
KIND_COLORS = {"SA": "#4c72b0", "XSA": "#dd8452"}


def loss_curves(curves: pd.DataFrame) -> plt.Figure:
    """Fig. 3: loss vs step, one panel per model size; colour = attention kind, line style = split.

    ``curves`` has columns size, kind, seed, step, split, loss; the line is the mean over seeds and the band
    one standard deviation.
    """
    data = curves.assign(kind=curves["kind"].map(KIND_LABELS))
    sizes = list(dict.fromkeys(data["size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.2 * len(sizes), 3.8), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        sub = data[data["size"] == size]
        sns.lineplot(
            data=sub, x="step", y="loss", hue="kind", style="split", errorbar="sd",
            palette=KIND_COLORS, ax=ax, style_order=["validation", "train"],
        )  # fmt: skip
        # Zoom past the first tenth of training, where the loss is still falling steeply.
        late = sub[sub["step"] >= 0.1 * sub["step"].max()]["loss"]
        ax.set_ylim(late.min() - 0.02 * (late.max() - late.min()) - 0.01, late.max() + 0.01)
        ax.set(title=size, xlabel="training step", ylabel="loss (nats / byte)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


DIAGNOSTICS = {
    "cos_vv": "mean cos(v_i, v_j), j < i",
    "a_ii": "mean diagonal attention a_ii",
    "cos_yv": "mean cos(y_i, v_i)",
    "cos_zv": "mean cos(z_i, v_i)",
}


def layer_diagnostics(diag: pd.DataFrame) -> plt.Figure:
    """Fig. 1: per-layer similarity-bias diagnostics; mean and one standard deviation over the rows
    (sequences, heads, seeds) of each layer; the dashed grey line in the a_ii panel is uniform attention."""
    data = diag.assign(kind=diag["kind"].map(KIND_LABELS), layer=diag["layer"] + 1)
    fig, axes = plt.subplots(1, len(DIAGNOSTICS), figsize=(4.0 * len(DIAGNOSTICS), 3.5))
    for ax, (metric, label) in zip(axes, DIAGNOSTICS.items(), strict=True):
        sns.lineplot(
            data=data, x="layer", y=metric, hue="kind", errorbar="sd", marker="o",
            palette=KIND_COLORS, ax=ax,
        )  # fmt: skip
        if metric == "a_ii":
            ref = data.groupby("layer")["a_ii_uniform"].mean()
            ax.plot(ref.index, ref.to_numpy(), ls="--", color="grey", label="uniform")
            ax.legend(fontsize=8)
        ax.set(title=label, xlabel="layer", ylabel=metric)
        ax.set_xticks(sorted(data["layer"].unique()))
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
        ax.legend(fontsize=7, title_fontsize=8)
    fig.tight_layout()
    return fig


def sweep(frame: pd.DataFrame, axis: str, xlabel: str, log_x: bool = False) -> plt.Figure:
    """Figs. 4-6: final train (dashed) and validation (solid) loss of SA and XSA against one swept setting,
    mean over seeds with one standard deviation; the right panel is the validation gap XSA - SA."""
    tidy = frame.melt(id_vars=["kind", "seed", axis], value_vars=["train", "validation"], var_name="split")
    tidy = tidy.assign(kind=tidy["kind"].map(KIND_LABELS))
    wide = frame.pivot_table(index=[axis, "seed"], columns="kind", values="validation")
    gaps = (wide["xsa"] - wide["sa"]).rename("gap").reset_index()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 3.8))
    sns.lineplot(
        data=tidy, x=axis, y="value", hue="kind", style="split", style_order=["validation", "train"],
        marker="o", errorbar="sd", palette=KIND_COLORS, ax=left,
    )  # fmt: skip
    left.set(xlabel=xlabel, ylabel="final loss (nats / byte)")
    left.legend(fontsize=8)
    sns.lineplot(data=gaps, x=axis, y="gap", marker="o", errorbar="sd", color="black", ax=right)
    right.axhline(0.0, color="grey", ls=":", lw=1)
    right.set(xlabel=xlabel, ylabel="validation loss XSA - SA (nats / byte)")
    for ax in (left, right):
        if log_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(frame[axis].unique()))
        ax.set_xticklabels([f"{v:g}" for v in sorted(frame[axis].unique())])
    fig.tight_layout()
    return fig
