"""What the real-data tasks of "Faster query-key learning sharpens attention" (arXiv 2608.06776) share (SVA,
SQuAD and HateXplain, its text experiments): a run's variant, the baseline or faster QK at a factor, and
faster QK's learning-rate multipliers; the per-seed summaries of their per-example frames (AC, ACMC, the mean
and std over seeds); the empty result of a part whose data cannot be had here (``skip``: SQuAD where its
artifact is unavailable, ``attnlab.data.artifacts``); and whether HateXplain can run (offline: it cannot).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

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


#: The ``DataFrame.attrs`` key of a skipped part's empty result: why its data cannot be had here.
SKIPPED = "skipped"


def skip(part: str, columns: Mapping[str, str], reason: str, said: set[str]) -> pd.DataFrame:
    """The result of ``part`` ("SVA", "SQuAD") where its data cannot be had here (``reason``: the
    ``DataUnavailable.reason``, the same on every machine): no rows, the part's usual ``columns`` (name ->
    dtype), and ``reason`` in ``attrs[SKIPPED]`` for the figures and the claims (``skipped_reason``). Prints
    "<part>: skipped: <reason>" unless ``said`` (the reasons printed so far for this part) holds it already,
    so that a part run under several protocols says it once."""
    if reason not in said:
        print(f"{part}: skipped: {reason}")
        said.add(reason)
    frame = pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in columns.items()})
    frame.attrs[SKIPPED] = reason
    return frame


def skipped_reason(frame: pd.DataFrame) -> str | None:
    """Why ``frame`` has no rows where its part was skipped (``skip``); None for a part that ran."""
    reason = frame.attrs.get(SKIPPED)
    return None if reason is None else str(reason)


def _diverged(g: pd.DataFrame) -> bool:
    """Whether the rows of one run have no scores at all (its training diverged: every mass and probability
    NaN, ``SquadRuns.run``); a run with only some NaN is not, and the metrics refuse it."""
    return bool(g["mass"].isna().all() and g["true_prob"].isna().all())


def ac_by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    """AC (%) per (variant, seed): mass on the relevant tokens > 0.1 and true-answer probability > 0.1; NaN
    for a run whose training diverged (no scores)."""
    rows = [
        {
            "variant": v,
            "seed": s,
            "AC": math.nan if _diverged(g) else attention_confidence(g["mass"], g["true_prob"]),
        }
        for (v, s), g in frame.groupby(["variant", "seed"], sort=False)
    ]
    return pd.DataFrame(rows, columns=["variant", "seed", "AC"])


def acmc_by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    """ACMC (%) per (variant, seed): AC among the correct predictions (``correct``, or exact match ``em``
    for SQuAD), :func:`attnlab.metrics.attention_confidence_model_correct`; NaN where none is correct or the
    run's training diverged (no scores)."""
    ok = "correct" if "correct" in frame else "em"
    rows = [
        {
            "variant": v,
            "seed": s,
            "ACMC": math.nan
            if _diverged(g)
            else attention_confidence_model_correct(g["mass"], g["true_prob"], g[ok].astype(bool)),
        }
        for (v, s), g in frame.groupby(["variant", "seed"], sort=False)
    ]
    return pd.DataFrame(rows, columns=["variant", "seed", "ACMC"])


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
