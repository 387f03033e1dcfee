"""What the real-data tasks of "Faster query-key learning sharpens attention" (arXiv 2608.06776) share (SVA,
SQuAD and HateXplain, its text experiments): a run's variant, the baseline or faster QK at a factor, and
faster QK's learning-rate multipliers; the per-seed summaries of their per-example frames (AC, ACMC, the mean
and std over seeds); and whether HateXplain can run (offline: it cannot).
"""

from __future__ import annotations

import pandas as pd

from attnlab.metrics import attention_confidence, attention_confidence_model_correct
from attnlab.papers.qk_speed.text_tasks import DatasetUnavailable, load_hatexplain

#: A real-data run: its variant label ("baseline", "fast QK x<factor>") and faster QK's factor (None: the
#: baseline).
Variant = tuple[str, float | None]


def lr_scale(qk_scale: float | None, groups: tuple[str, ...] = ("qk", "embed")) -> dict[str, float]:
    """Faster QK's learning-rate multipliers (``qk_scale``; None: the baseline, none): the authors' SVA
    notebooks scale the embeddings with W_Q and W_K, their SQuAD notebooks W_Q and W_K alone
    (``groups=("qk",)``)."""
    return {} if qk_scale is None else dict.fromkeys(groups, qk_scale)


def ac_by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    """AC (%) per (variant, seed): mass on the relevant tokens > 0.1 and true-answer probability > 0.1."""
    rows = [
        {"variant": v, "seed": s, "AC": attention_confidence(g["mass"], g["true_prob"])}
        for (v, s), g in frame.groupby(["variant", "seed"], sort=False)
    ]
    return pd.DataFrame(rows)


def acmc_by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    """ACMC (%) per (variant, seed): AC among the correct predictions (``correct``, or exact match ``em``
    for SQuAD), :func:`attnlab.metrics.attention_confidence_model_correct`; NaN where none is correct."""
    ok = "correct" if "correct" in frame else "em"
    rows = [
        {
            "variant": v,
            "seed": s,
            "ACMC": attention_confidence_model_correct(g["mass"], g["true_prob"], g[ok].astype(bool)),
        }
        for (v, s), g in frame.groupby(["variant", "seed"], sort=False)
    ]
    return pd.DataFrame(rows)


def real_summary(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per variant: mean and std over seeds of the per-seed means of ``columns``, and of AC and ACMC (%,
    ``ac_by_seed``, ``acmc_by_seed``); flat columns ``<metric>_mean``, ``<metric>_std``."""
    per_seed = frame.groupby(["variant", "seed"], sort=False)[columns].mean()
    per_seed = per_seed.join(ac_by_seed(frame).set_index(["variant", "seed"]))
    per_seed = per_seed.join(acmc_by_seed(frame).set_index(["variant", "seed"]))
    out = per_seed.groupby(level=0, sort=False).agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    return out


def hatexplain() -> str:
    """Try to load HateXplain; return what happened in a sentence (offline: why it is unavailable)."""
    try:
        ds = load_hatexplain("test")
    except DatasetUnavailable as err:
        return f"not run: {err}"
    return f"available ({len(ds)} test posts), but this notebook has no HateXplain experiment yet"
