"""The attention tables of "Faster query-key learning sharpens attention" (arXiv 2608.06776) from per-example
frames (one row per run or variant, seed and test example): the DTAP histograms of Fig. 2 (and of SVA), Fig.
2's summary per run, and Fig. 2's mass-bin shares beside the authors' saved heatmaps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from attnlab.metrics import DTAP_EDGES, dtap_histogram
from attnlab.papers.qk_speed import authors


def dtap(frame: pd.DataFrame, key: str = "run") -> dict[str, np.ndarray]:
    """Per run: the mean DTAP histogram over seeds (%, (5, 5), x = mass bin). Its statistic's seed interval
    is the distinct-mass figure's (``plots.distinct_mass``), not a spread per cell."""
    out = {}
    for run, sub in frame.groupby(key, sort=False):
        hists = np.stack([dtap_histogram(s["mass"], s["true_prob"]) for _, s in sub.groupby("seed")])
        out[run] = hists.mean(0)
    return out


def summary(frame: pd.DataFrame, key: str = "run") -> pd.DataFrame:
    """Per run: mean attention mass on the relevant tokens, accuracy and true-label probability, and where
    the frame has them (Fig. 2) the mass on the query token and the share of the attention that moved from
    the initialisation (mean and std over seeds of the per-seed means)."""
    columns = {"mass": "mass", "accuracy": "correct", "true_prob": "true_prob"}
    columns |= {c: c for c in ("query_mass", "moved") if c in frame}
    per_seed = frame.groupby([key, "seed"], sort=False).agg(**{k: (v, "mean") for k, v in columns.items()})
    out = per_seed.groupby(level=0, sort=False).agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    if key == "run":  # Fig. 2: what the authors' notebooks printed, beside ours (reference only)
        out["authors' notebook"] = pd.Series(authors.fig2_column(out.index))
    return out


def dtap_shares(frame: pd.DataFrame) -> pd.DataFrame:
    """Fig. 2, ours beside the authors' saved heatmaps (``authors.DTAP_SHARES``, reference only): for each
    run they have an image of, the % of test sequences in each attention-mass bin within the top
    true-label-probability bin [0.8, 1] (the only row of their images that is not 0), ours the mean over
    seeds (``dtap``), one row per (run, source)."""
    ours = dtap(frame)
    rows = []
    for run, shares in authors.DTAP_SHARES.items():
        if run not in ours:
            continue
        seeds = f"seed {shares.seeds[0]}" if len(shares.seeds) == 1 else f"{len(shares.seeds)} seeds"
        rows.append({"run": run, "source": f"authors' notebook ({seeds})", **_bins(shares.top_row)})
        rows.append({"run": run, "source": "ours", **_bins(ours[run][:, -1])})
    return pd.DataFrame(rows).set_index(["run", "source"])


def _bins(shares: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Five DTAP attention-mass bin shares (%) as columns named by their bins."""
    edges = DTAP_EDGES
    names = [
        f"[{lo:g}, {hi:g}{']' if hi == edges[-1] else ')'}" for lo, hi in zip(edges, edges[1:], strict=False)
    ]
    return {name: float(v) for name, v in zip(names, shares, strict=True)}
