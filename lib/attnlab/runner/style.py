"""The figure style every notebook uses, and ``save_figure`` (PNG for reading, PDF for print)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns


def apply_style() -> None:
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 100, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def save_figure(fig: plt.Figure, folder: Path, name: str) -> Path:
    """Save ``fig`` as ``<folder>/<name>.png`` (150 dpi) and ``.pdf``; return the PNG path."""
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / f"{name}.png"
    fig.savefig(png, dpi=150)
    fig.savefig(folder / f"{name}.pdf", metadata={"CreationDate": None})  # no timestamp: reruns diff clean
    return png
