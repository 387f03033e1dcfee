"""Figures: one function per kind of plot, each taking a tidy DataFrame; ``save_figure`` writes PNG + PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

KIND_LABELS = {"sa": "SA", "xsa": "XSA"}
KIND_COLORS = {"SA": "#4c72b0", "XSA": "#dd8452"}


def apply_style() -> None:
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 100, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def save_figure(fig: plt.Figure, folder: Path, name: str) -> Path:
    """Save ``fig`` as ``<folder>/<name>.png`` (150 dpi) and ``.pdf``; return the PNG path."""
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / f"{name}.png"
    fig.savefig(png, dpi=150)
    fig.savefig(folder / f"{name}.pdf")
    return png


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
