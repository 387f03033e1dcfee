"""The S-D routing notebook's summary tables, computed from its measurements (``SDExperiment`` offers each as
a method of the same name): the pretrained heads per model, the spectral cascade per layer, and the scale
trend of the fraction of layers at minimum rank."""

from __future__ import annotations

import pandas as pd

from attnlab.papers.sd_routing.presets import MIN_RANK
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS, rank_equivalent


def head_summary(heads: pd.DataFrame) -> pd.DataFrame:
    """Per model and weights (trained / random init; ours: seeds pooled): head count, filtering energy
    (mean) and the share of heads where filtering dominates (energy > 1/2), the mean entropy and stable
    ranks of R and F, the share of heads whose routing rank is below their filtering rank (each measure),
    and the share of unstable heads (an eigenvalue of W with positive real part)."""
    g = heads.assign(
        dominant=heads["filtering_energy"] > 0.5,
        lower=heads["routing_rank"] < heads["filtering_rank"],
        lower_stable=heads["routing_stable_rank"] < heads["filtering_stable_rank"],
        unstable=heads["n_unstable"] > 0,
    ).groupby(["model", "weights"], sort=False)
    return pd.DataFrame({
        "heads": g.size(), "filtering energy": g["filtering_energy"].mean(),
        "filtering dominant %": 100 * g["dominant"].mean(), "routing rank": g["routing_rank"].mean(),
        "filtering rank": g["filtering_rank"].mean(),
        "routing stable rank": g["routing_stable_rank"].mean(),
        "filtering stable rank": g["filtering_stable_rank"].mean(),
        "routing rank < filtering rank %": 100 * g["lower"].mean(),
        "routing stable rank < filtering %": 100 * g["lower_stable"].mean(),
        "unstable %": 100 * g["unstable"].mean(),
    })  # fmt: skip


def cascade_table(cascade: pd.DataFrame, baseline: pd.DataFrame) -> pd.DataFrame:
    """The cascade as one row per (measure, variant, size), one column per layer (seeds averaged), with
    the random baseline of the same shapes in the last column."""
    tables = []
    for column, name in MEASURE_COLUMNS.items():
        table = cascade.pivot_table(index=["variant", "size"], columns="layer", values=column)
        table = table.rename(columns=lambda layer: f"layer {layer}")
        table["random"] = baseline.set_index(["variant", "size"])[column].reindex(table.index)
        tables.append(table.assign(measure=name).set_index("measure", append=True))
    return pd.concat(tables).reorder_levels(["measure", "variant", "size"])


def scale_trend(cascade: pd.DataFrame) -> pd.DataFrame:
    """Per (measure, size, variant, seed): the fraction of layers at the minimum rank (head-mean routing
    measure at most MIN_RANK in rank units, ``rank_equivalent``), against the parameter count."""
    rows = []
    for column, name in MEASURE_COLUMNS.items():
        ranks = cascade[column].map(lambda v, n=name: rank_equivalent(n, v))
        at_min = cascade.assign(at_min=ranks <= MIN_RANK)
        per_seed = at_min.groupby(["size", "variant", "seed", "params"], sort=False)["at_min"].mean()
        rows.append(per_seed.rename("fraction at min rank").reset_index().assign(measure=name))
    return pd.concat(rows, ignore_index=True).sort_values(["measure", "variant", "params", "seed"],
                                                          ignore_index=True)  # fmt: skip
