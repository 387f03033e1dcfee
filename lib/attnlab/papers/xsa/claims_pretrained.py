"""XSA Fig. 1 on pretrained models (arXiv 2603.09078; measured by :mod:`attnlab.papers.xsa.pretrained`): the
claims rows, one per claim and model, then each claim in every pretrained model.

Each claim compares a measured column of :func:`attnlab.papers.xsa.pretrained.layer_table` with a null:
another column measured beside it on the same windows (uniform mixing, a far token, the previous token, the
same weights with the non-sink keys shuffled, uniform attention, a_(i,i-1)), a constant (0 for "the values are
positively correlated"), or, for a trend over depth, none. Every claim is judged with the attention sink (key
0) inside y_i and again with its contribution a_i0 v_0 removed from both sides ("the sink removed"), since the
sink holds a third or more of these models' attention. The units: the text windows for a mean over the text of
one fixed model (stated in every row as such), the layers for a depth trend, the models for "in every
pretrained model" (:func:`~attnlab.papers.xsa.rules.every`, all_of over the models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from attnlab.papers.xsa import rules
from attnlab.runner.claims import Claim
from attnlab.runner.claims import interval as _ci
from attnlab.runner.verdicts import Verdict

PAPER_YV = "cos(y_i, v_i) ~0.2-0.6 across layers (their 1.3B model)"
PAPER_YV_NULL = PAPER_YV + "; no null given"
PAPER_DEPTH = "cos(y_i, v_i) ~0.2 (first layers) -> ~0.6 (layer 23)"
PAPER_AII = "high a_ii (no number given)"
SINK_REMOVED = " (the sink removed)"


@dataclass(frozen=True)
class PretrainedClaim:
    """One Fig. 1 claim on a pretrained model: the measured ``column``, its ``null`` (a column measured
    beside it, a constant, or None for a trend over depth) and the null in words."""

    claim: str
    paper: str
    column: str
    null: str | float | None
    null_words: str = ""


_C = PretrainedClaim
OWN = "SA output is aligned with the token's own value beyond "
SHUFFLED = "the same weights with the non-sink keys shuffled"
HIGH, ABOVE_PREV = "diagonal attention a_ii is relatively high", "diagonal attention a_ii is above a_(i,i-1)"
CORRELATED, RISES = (
    "values are positively correlated within a sequence",
    "rising with depth (no number given)",
)
#: The Fig. 1 claims on each pretrained model, in the order of the rows; the first five are the claims as
#: first judged (their wording unchanged), the rest the nulls that tell a preference for the own value from
#: its neighbours and from the sink.
PRETRAINED_CLAIMS = (
    _C(OWN + "uniform mixing", PAPER_YV, "cos_yv", "cos_uniform", "uniform mixing"),
    _C(OWN + "a token half a window back", PAPER_YV, "cos_yv", "cos_far", "a token half a window back"),
    _C("the similarity bias grows with depth", PAPER_DEPTH, "cos_yv", None),
    _C(HIGH, PAPER_AII, "a_ii", "a_ii_uniform", "uniform causal attention"),
    _C("a_ii grows with depth", RISES, "a_ii", None),
    _C(OWN + "the previous token's value", PAPER_YV_NULL, "cos_yv", "cos_prev", "cos(y_i, v_(i-1))"),
    _C(OWN + SHUFFLED, PAPER_YV_NULL, "cos_yv", "cos_shuffled", SHUFFLED),
    _C(CORRELATED, "mean cos(v_i, v_j) > 0", "cos_vv", 0.0, "0"),
    _C(ABOVE_PREV, PAPER_AII, "a_ii", "a_prev", "a_(i,i-1)"),
    _C(OWN + "uniform mixing" + SINK_REMOVED, PAPER_YV_NULL, "cos_yv_nosink", "cos_uniform_nosink",
       "uniform mixing over keys 1..i"),
    _C(OWN + "the previous token's value" + SINK_REMOVED, PAPER_YV_NULL, "cos_yv_nosink", "cos_prev_nosink",
       "cos(y_i - a_i0 v_0, v_(i-1))"),
    _C(OWN + SHUFFLED + SINK_REMOVED, PAPER_YV_NULL, "cos_yv_nosink", "cos_shuffled_nosink", SHUFFLED),
    _C("the similarity bias grows with depth" + SINK_REMOVED, PAPER_DEPTH, "cos_yv_nosink", None),
    _C(CORRELATED + SINK_REMOVED, "mean cos(v_i, v_j) > 0", "cos_vv_nosink", 0.0, "0"),
    _C(HIGH + SINK_REMOVED, PAPER_AII, "a_ii_nosink", "a_ii_uniform_nosink", "uniform attention, keys 1..i"),
    _C(ABOVE_PREV + SINK_REMOVED, PAPER_AII, "a_ii_nosink", "a_prev_nosink", "a_(i,i-1) / (1 - a_i0)"),
    _C("a_ii grows with depth" + SINK_REMOVED, RISES, "a_ii_nosink", None),
)  # fmt: skip

#: How a column reads in a row.
WHAT = {
    "cos_yv": "cos(y_i, v_i)", "cos_yv_nosink": "cos(y_i - a_i0 v_0, v_i)", "cos_vv": "cos(v_i, v_j)",
    "cos_vv_nosink": "cos(v_i, v_j), j >= 1", "a_ii": "a_ii", "a_ii_nosink": "a_ii / (1 - a_i0)",
}  # fmt: skip


def _layers_text(means: Sequence[float]) -> str:
    values = np.asarray(means, float)
    return f"first layer {values[0]:.2f}, middle {values[len(values) // 2]:.2f}, last {values[-1]:.2f}"


def pretrained_verdict(table: pd.DataFrame, column: str, null: str | float | None) -> Verdict:
    """One pretrained model's Fig. 1 verdict from its :func:`attnlab.papers.xsa.pretrained.layer_table`:
    with a ``null`` (a column or a constant), the per-window mean over layers of ``column`` minus it
    (:func:`~attnlab.papers.xsa.rules.verdict_above_baseline`, windows as units); without, the trend of
    ``column``'s per-layer mean against relative depth (:func:`~attnlab.papers.xsa.rules.
    verdict_rises_with_depth`, layers as units)."""
    if null is None:
        by_layer = table.groupby("layer")[["depth", column]].mean().sort_index()
        return rules.verdict_rises_with_depth(by_layer["depth"].to_numpy(), by_layer[column].to_numpy())
    baseline = table[null] if isinstance(null, str) else float(null)
    margin = (table[column] - baseline).groupby(table["window"]).mean()
    return rules.verdict_above_baseline(margin.tolist())


def pretrained_claims(table: pd.DataFrame, model: str) -> list[Claim]:
    """The Fig. 1 rows for one pretrained model (``model``: its description, as ``attnlab.hf.PRETRAINED``
    words it), from its :func:`attnlab.papers.xsa.pretrained.layer_table`: one per
    :data:`PRETRAINED_CLAIMS`."""
    n_layers, n_windows = table["layer"].nunique(), table["window"].nunique()
    where = f"[{model}; {n_layers} layers, {n_windows} windows]"
    rows = []
    for c in PRETRAINED_CLAIMS:
        verdict = pretrained_verdict(table, c.column, c.null)
        by_layer = table.groupby("layer")[c.column].mean()
        what = WHAT.get(c.column, c.column)
        if c.null is None:
            ours = (
                f"{where} {what} by layer: {_layers_text(by_layer)}; slope against relative depth (first "
                f"layer 0, last 1) {_ci(verdict, 3)}, against 9,999 random layer orders (the layers are the "
                "units)"
            )
            unit = "layer"
        else:
            if isinstance(c.null, str):
                null = f"{c.null_words}: {_layers_text(table.groupby('layer')[c.null].mean())}"
            else:
                null = f"against {c.null:g}"
            ours = (
                f"{where} {what}: {_layers_text(by_layer)}; {null}; margin (mean over "
                f"layers) {_ci(verdict, 3)} over {n_windows} text windows (a mean over this one model's "
                "text: the windows are the units)"
            )
            unit = "window"
        rows.append(Claim("Fig. 1 (pretrained)", c.claim, c.paper, ours, verdict, unit=unit))
    return rows


def pretrained_rows(results: Mapping[str, Mapping]) -> list[Claim]:
    """Every pretrained model's Fig. 1 rows (:func:`pretrained_claims`), then, with two models or more, each
    claim in every pretrained model (:func:`~attnlab.papers.xsa.rules.every` model's verdict, n = models)."""
    rows = [row for r in results.values() for row in pretrained_claims(r["table"], r["description"])]
    if len(results) < 2:
        return rows
    for c in PRETRAINED_CLAIMS:
        by_model = {name: pretrained_verdict(r["table"], c.column, c.null) for name, r in results.items()}
        verdict = replace(rules.verdict_in_every_model(by_model), n=len(by_model))
        each = "; ".join(f"{name} {_ci(v, 3)}" for name, v in by_model.items())
        what = "slope against relative depth" if c.null is None else f"margin over {c.null_words}"
        rows.append(Claim("Fig. 1 (pretrained)", f"{c.claim}, in every pretrained model", c.paper,
                          f"{what} per model: {each}", verdict, unit="pretrained model"))  # fmt: skip
    return rows
