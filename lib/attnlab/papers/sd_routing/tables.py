"""The S-D routing notebook's summary tables, computed from its measurements (``SDExperiment`` offers each as
a method of the same name): the pretrained heads per model and per RoPE offset, the spectral cascade per
layer, and the scale trend of the fraction of layers at minimum rank; and the per-model values the claims
read off the cascade (``cascade_parts``, ``depth_margins``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnlab.papers.sd_routing.presets import MIN_RANK
from attnlab.papers.sd_routing.pretrained import head_flags
from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS, rank_equivalent


def head_summary(heads: pd.DataFrame) -> pd.DataFrame:
    """Per model and weights (trained / random init; ours: seeds pooled): head count, filtering energy
    (mean) and the share of heads where filtering dominates (energy > 1/2), the mean entropy and stable
    ranks of R and F, the share of heads whose routing rank is below their filtering rank (each measure),
    and the share of unstable heads (an eigenvalue of W with positive real part)."""
    g = head_flags(heads).groupby(["model", "weights"], sort=False)
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


def offset_table(heads: pd.DataFrame, offsets: pd.DataFrame, draws: pd.DataFrame) -> pd.DataFrame:
    """Per pretrained model and relative offset (query minus key position; offset 0 the form of the heads
    table, the others for RoPE models only): the mean filtering energy and the shares of heads with filtering
    above 1/2, routing below filtering rank (entropy, stable) and an unstable eigenvalue, in %, beside the
    median of the random-weight null (``draws``: model-level statistics of Gaussian weights, the same at
    every offset, since a rotation of Gaussian weights is Gaussian)."""
    trained = heads[(heads["source"] == "pretrained") & (heads["weights"] == "trained")].assign(offset=0)
    both = head_flags(pd.concat([trained, offsets], ignore_index=True).astype({"offset": int}))
    columns = {"filtering_energy": "filtering energy", "dominant": "filtering > 1/2 %",
               "lower": "routing rank < filtering %", "lower_stable": "routing stable rank < filtering %",
               "unstable": "unstable %"}  # fmt: skip
    table = both.groupby(["model", "offset"], sort=False)[list(columns)].mean()
    null = draws.groupby("model")[list(columns)].median().reindex(table.index.get_level_values("model"))
    for key, name in columns.items():
        scale = 1.0 if key == "filtering_energy" else 100.0
        table[key] = scale * table[key].astype(float)
        table[f"{name} (random)"] = scale * null[key].to_numpy()
    return table.rename(columns=columns)[[c for name in columns.values() for c in (name, f"{name} (random)")]]


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


Unit = tuple[str, int]  # a trained model: (size, seed)


@dataclass(frozen=True)
class CascadeParts:
    """One variant's cascade in rank units, one value per trained model (size, seed): layer 0, the middle
    layers' mean (sizes with middle layers), the last layer, and the last layer's margin over the larger of
    layer 0 and the middle layers."""

    first: dict[Unit, float]
    middle: dict[Unit, float]
    last: dict[Unit, float]
    margin: dict[Unit, float]


def cascade_parts(sub: pd.DataFrame, sizes: Sequence[str]) -> CascadeParts:
    """:class:`CascadeParts` of one variant's cascade rows (``size``, ``seed``, ``layer``, ``value`` in rank
    units), sizes in the order given."""
    first: dict[Unit, float] = {}
    middle: dict[Unit, float] = {}
    last: dict[Unit, float] = {}
    margin: dict[Unit, float] = {}
    for size in sizes:
        by_seed = sub[sub["size"] == size].pivot_table(index="seed", columns="layer", values="value")
        for seed, row in by_seed.iterrows():
            unit = (size, int(seed))
            values = row.tolist()
            first[unit], last[unit] = values[0], values[-1]
            ref = values[0]
            if len(values) > 2:
                middle[unit] = float(np.mean(values[1:-1]))
                ref = max(ref, middle[unit])
            margin[unit] = values[-1] - ref
    return CascadeParts(first, middle, last, margin)


def grouped_by_size(values: Mapping[Unit, float]) -> dict[str, list[float]]:
    """Values by (size, seed) grouped by size (the seeds' values of each size), in the mapping's order."""
    out: dict[str, list[float]] = {}
    for (size, _), value in values.items():
        out.setdefault(size, []).append(value)
    return out


def depth_margins(sub: pd.DataFrame, column: str = "routing_dims") -> dict[Unit, float]:
    """Per trained model (size, seed) of one variant's cascade rows, the mean of ``column`` over its late
    layers (the last half) minus its early layers (the first half; the middle layer of an odd count in
    neither); models with fewer than two layers are left out."""
    out: dict[Unit, float] = {}
    for (size, seed), model in sub.groupby(["size", "seed"], sort=False):
        values = model.sort_values("layer")[column].astype(float).tolist()
        half = len(values) // 2
        if half:
            out[size, int(seed)] = float(np.mean(values[-half:]) - np.mean(values[:half]))
    return out


def in_order(values: Mapping[Unit, float], order: Sequence[str]) -> dict[Unit, float]:
    """``values`` by (size, seed) with the sizes in ``order``, seeds ascending."""
    return {u: values[u] for s in order for u in sorted(u for u in values if u[0] == s)}


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


def mean(values: Sequence[float]) -> float:
    """The mean of ``values`` (NaN for none)."""
    return float(pd.Series([float(v) for v in values], dtype=float).mean())


def by_size(series: pd.Series) -> dict[str, list[float]]:
    """The values of a Series indexed by (size, seed), grouped by size."""
    return {size: group.tolist() for size, group in series.groupby(level=0, sort=False)}
