"""The figure style every notebook uses: one colour per concept across every figure (``PALETTE``, ``color``),
sequential colormaps for shares (``SHARE_CMAP``), one interval for every error bar and band (``interval95``:
the 95 % Student-t interval of the mean that the verdicts use, never a standard deviation), and
``save_figure`` (PNG for reading, PDF for print)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns

from attnlab import verified
from attnlab.runner.stats import mean_interval

#: One colour per concept, the same in every figure of every notebook (colour-blind-safe hues first):
#: attention kinds by their ``ATTENTION_KINDS`` name; the faster-query-key parameterisation; the
#: contribution-weights measures; S-D's interventions; and the controls (random initialisation, chance).
PALETTE: dict[str, str] = {
    # attention kinds
    "sa": "#4d4d4d",
    "xsa": "#0072b2",
    "xsa-random": "#56b4e9",
    "xsa-prev": "#009e73",
    "sd": "#e69f00",
    "sd-shared": "#8c510a",
    "linear": "#66a61e",
    # QK-speed: the baseline parameterisation is "sa"'s grey, faster query-key learning is this
    "fast-qk": "#cc79a7",
    # contribution-weights measures
    "raw": "#999999",
    "value-weighted": "#d55e00",
    "output-normalised": "#f0e442",
    "contribution": "#6a3d9a",
    # S-D interventions
    "routing removed": "#b2182b",
    "filtering to a scalar": "#2166ac",
    # controls
    "random init": "#bdbdbd",
    "chance": "#000000",
}

#: The colormap for a share or probability in [0, 1] (sequential: more is darker); draw it with a colorbar.
SHARE_CMAP = "viridis"


def color(concept: str) -> str:
    """The colour of ``concept`` (a key of ``PALETTE``); an unknown concept is an error, so no figure invents
    its own colour for something the palette names."""
    try:
        return PALETTE[concept]
    except KeyError:
        raise KeyError(f"no colour for {concept!r}; the palette names {sorted(PALETTE)}") from None


def interval95(values: Iterable[float]) -> tuple[float, float]:
    """The error bar of every figure: the 95 % Student-t interval of the mean of ``values`` (one per seed,
    window or item: ``attnlab.runner.stats.mean_interval``, the interval the claims tables judge), as a
    seaborn ``errorbar`` callable. Non-finite values are left out; with fewer than two values there is no
    interval and the bar collapses onto the mean."""
    xs = [float(v) for v in values if math.isfinite(float(v))]
    if not xs:
        return (math.nan, math.nan)
    est = mean_interval(xs)
    return (est.mean, est.mean) if est.n < 2 else (est.low, est.high)


def apply_style() -> None:
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.95)
    plt.rcParams.update({"figure.dpi": 100, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def save_figure(fig: plt.Figure, folder: Path, name: str) -> Path:
    """Save ``fig`` as ``<folder>/<name>.png`` (150 dpi) and ``.pdf``; return the PNG path."""
    png = folder / f"{name}.png"
    # each atomically, a full disk named with the file and the free space (attnlab.verified.atomic)
    verified.atomic(png, lambda f: fig.savefig(f, format="png", dpi=150))
    no_date = {"CreationDate": None}  # no timestamp: reruns diff clean
    verified.atomic(folder / f"{name}.pdf", lambda f: fig.savefig(f, format="pdf", metadata=no_date))
    return png
