"""The figure style every notebook uses: one colour per concept across every figure (``PALETTE``, ``color``),
sequential colormaps for shares (``SHARE_CMAP``), one interval for every error bar and band (``interval95``:
the 95 % Student-t interval of the mean that the verdicts use, never a standard deviation), and
``save_figure`` (PNG for reading, PDF for print). ``legend_below`` puts a figure's one legend under its
panels, off the data, ``legend_beside`` one panel's legend to its right; ``figure_problems`` names what a
paper's figure may not have: an axis without its label, a legend over the data."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.artist import Artist
from matplotlib.axis import Axis
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.transforms import Bbox

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

#: One colour per verdict word (``attnlab.runner.verdicts.VERDICTS``), the hues of the site's verdict badges:
#: green holds, vermillion does not hold, amber inconclusive, grey not testable here.
VERDICT_COLORS: dict[str, str] = {
    "holds": "#009e73",
    "does not hold": "#d55e00",
    "inconclusive": "#e69f00",
    "not testable here": "#999999",
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


def legend_below(fig: plt.Figure, ncol: int | None = None, title: str | None = None) -> Legend:
    """One legend for the whole figure, under its panels and off the data: every labelled mark of every
    panel once (the first of each label), each panel's own legend removed. Call it before ``tight_layout``
    (which would make room for the panels' legends); ``save_figure``'s tight bounding box keeps it in the
    file."""
    by_label: dict[str, Artist] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            by_label.setdefault(label, handle)
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
    return fig.legend(
        list(by_label.values()), list(by_label), loc="upper center", bbox_to_anchor=(0.5, 0.0),
        ncol=ncol or min(len(by_label), 4), fontsize=8, title=title, title_fontsize=8, frameon=False,
    )  # fmt: skip


def legend_beside(ax: plt.Axes, **kwargs) -> Legend:
    """``ax``'s legend to the right of its frame, off the data (``kwargs``: ``Axes.legend``'s, over these
    defaults); ``tight_layout`` makes room for it."""
    defaults = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0, "fontsize": 7,
                "title_fontsize": 7, "frameon": False}  # fmt: skip
    return ax.legend(**(defaults | kwargs))


#: A tick label that is a number: plain, signed, with a thousands separator or a percent sign, or a power as
#: a log axis writes it in mathtext ("$\\mathdefault{10^{-2}}$").
_NUMBER = re.compile(r"[+-]?(\d[\d,]*\.?\d*|\.\d+)(e[+-]?\d+)?(\^[+-]?\d+(\.\d+)?)?\s*%?")


def _number(text: str) -> bool:
    plain = text.replace("\u2212", "-").replace("\\mathdefault", "").replace("\\times", "x")
    plain = re.sub(r"[${}\s]", "", plain)
    return bool(_NUMBER.fullmatch(plain))


def _shown_ticks(axis: Axis) -> list[str]:
    return [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]


def _labelled(ax: plt.Axes, which: str, fig: plt.Figure) -> bool:
    """Whether ``ax``'s ``which`` ("x" or "y") axis says what it shows: its own label or a figure-wide one
    (``fig.supxlabel``); or no tick labels shown (a colorbar's short side, an inner panel of a shared axis)
    and, where the axis is shared, an outer panel that says it. Exempt, by design: a categorical axis, whose
    tick labels are text naming the categories (models, runs, claims: a heatmap's rows), not numbers; it has
    no unit to give."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    sup = getattr(fig, f"_sup{which}label", None)
    if axis.get_label().get_text().strip() or (sup is not None and sup.get_text().strip()):
        return True
    ticks = _shown_ticks(axis)
    if ticks:
        return not all(_number(t) for t in ticks)
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    outer = [
        s
        for s in shared.get_siblings(ax)
        if s is not ax and s.get_visible() and _shown_ticks(s.xaxis if which == "x" else s.yaxis)
    ]
    return not outer or any(_labelled(s, which, fig) for s in outer)


def _data_points(ax: plt.Axes) -> np.ndarray:
    """The display coordinates of the data ``ax`` plots inside its frame: every vertex of its lines and
    every scatter point drawn in data coordinates, and the corners and centre of every bar; (n, 2)."""
    points = [np.empty((0, 2))]
    for line in ax.lines:
        if line.get_visible() and line.get_transform() == ax.transData:
            xy = np.column_stack([line.get_xdata(orig=False), line.get_ydata(orig=False)]).astype(float)
            points.append(ax.transData.transform(xy))
    for collection in ax.collections:
        if collection.get_visible() and collection.get_offset_transform() == ax.transData:
            offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
            points.append(ax.transData.transform(offsets))
    for patch in ax.patches:
        if (
            patch.get_visible()
            and isinstance(patch, Rectangle)
            and patch.get_transform().contains_branch(ax.transData)
        ):
            box = patch.get_window_extent()
            points.append(np.array([[box.x0, box.y0], [box.x1, box.y1], [box.x0, box.y1], [box.x1, box.y0],
                                    [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]]))  # fmt: skip
    xy = np.concatenate(points)
    xy = xy[np.isfinite(xy).all(axis=1)]
    frame = ax.bbox
    inside = (xy[:, 0] >= frame.x0) & (xy[:, 0] <= frame.x1) & (xy[:, 1] >= frame.y0) & (xy[:, 1] <= frame.y1)
    return xy[inside]


def _covers(box: Bbox, xy: np.ndarray) -> int:
    inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
    return int(inside.sum())


def figure_problems(fig: plt.Figure) -> list[str]:
    """What keeps ``fig`` out of a paper, one line each (empty: none): a visible panel with an axis that does
    not say what it shows (no label: ``_labelled``, which exempts categorical axes and the inner panels of a
    shared axis whose outer panel has the label), and a legend whose box covers plotted data (a line's
    vertex, a scatter point, a bar: ``_data_points``) of any panel. Draws the figure first."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    problems = []
    for k, ax in enumerate(panels):
        name = ax.get_title() or ax.get_ylabel() or ax.get_label() or f"panel {k}"
        problems += [
            f"panel {k} ({name!r}): no {which} label" for which in "xy" if not _labelled(ax, which, fig)
        ]
    legends = [lg for lg in (ax.get_legend() for ax in fig.axes) if lg is not None] + list(fig.legends)
    for legend in legends:
        if not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for k, ax in enumerate(panels):
            covered = _covers(box, _data_points(ax))
            if covered:
                title = legend.get_title().get_text() or ", ".join(
                    t.get_text() for t in legend.get_texts()[:2]
                )
                problems.append(f"legend ({title!r}) covers {covered} data points of panel {k}")
    return problems
