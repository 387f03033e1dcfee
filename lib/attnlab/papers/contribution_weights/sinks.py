"""Attention sinks through the lens of contribution weights (arXiv 2606.07604,
docs/papers/contribution-weights.md, claims "decomposition", "sinks" and "sink-norm removal"). The sink is the
first token of each sequence (j = 0).

Every function takes one layer's ``pattern`` (B, H, T, T) and per-head projected values ``values``
(B, H, T, D) as ``attnlab.hf.capture`` records them, and looks at queries i >= 1 (query 0 sees only the sink).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from attnlab.metrics import attention_outputs, contribution_weights

if TYPE_CHECKING:
    from attnlab.hf import LayerRecord

FACTORS = ("attention", "norm_ratio", "cosine", "contribution")


def _safe_div(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.where(y > 0, x / torch.where(y > 0, y, torch.ones_like(y)), torch.zeros_like(x))


def contribution_factors(pattern: torch.Tensor, values: torch.Tensor) -> dict[str, torch.Tensor]:
    """The factors of c_ij = a_ij (||v~_j|| / ||o_i||) cos(o_i, v~_j) (docs/papers/contribution-weights.md,
    "Definitions"), intra-head, each (B, H, T, T): ``attention`` a_ij, ``norm_ratio`` ||v~_j|| / ||o_i||,
    ``cosine`` cos(o_i, v~_j) and their product ``contribution`` (0 where ||o_i|| or ||v~_j|| is 0)."""
    pattern, values = pattern.float(), values.float()
    o = attention_outputs(pattern, values)  # (B, H, T, D)
    o_norm, v_norm = o.norm(dim=-1), values.norm(dim=-1)  # (B, H, T)
    ratio = _safe_div(v_norm[..., None, :], o_norm[..., :, None])  # (B, H, T, T)
    cosine = _safe_div(o @ values.transpose(-1, -2), o_norm[..., :, None] * v_norm[..., None, :])
    return {
        "attention": pattern,
        "norm_ratio": ratio,
        "cosine": cosine,
        "contribution": contribution_weights(pattern, values),
    }


def _corr(x: torch.Tensor, y: torch.Tensor) -> float:
    x, y = x.double() - x.double().mean(), y.double() - y.double().mean()
    denom = (x.norm() * y.norm()).item()
    return (x @ y).item() / denom if denom > 0 else float("nan")


def decomposition(pattern: torch.Tensor, values: torch.Tensor) -> pd.DataFrame:
    """Sink (j = 0) vs tail (1 <= j <= i) terms of one layer, over queries i >= 1 and all heads: the mean of
    each factor, and the Pearson correlation of the contribution with the attention and with the value
    geometry (norm ratio x cosine) across the terms. Rows: sink, tail."""
    factors = contribution_factors(pattern, values)
    T = pattern.shape[-1]
    tail = torch.ones(T, T, dtype=torch.bool, device=pattern.device).tril()  # (T, T): j <= i
    tail[0], tail[:, 0] = False, False  # queries i >= 1, keys 1 <= j <= i
    rows = {}
    for group in ("sink", "tail"):
        if group == "sink":
            vals = {name: t[..., 1:, 0].flatten() for name, t in factors.items()}
        else:
            vals = {name: t[..., tail].flatten() for name, t in factors.items()}
        geometry = vals["norm_ratio"] * vals["cosine"]
        rows[group] = {f"mean_{name}": v.mean().item() for name, v in vals.items()} | {
            "corr_contribution_attention": _corr(vals["contribution"], vals["attention"]),
            "corr_contribution_geometry": _corr(vals["contribution"], geometry),
        }
    return pd.DataFrame(rows).T


def sink_value_cosines(values: torch.Tensor) -> torch.Tensor:
    """cos(v~^h_0, v~^h_j) for every head h and token j >= 1 of every sequence, flattened: are the sink's
    projected values anti-aligned with the others' (docs/papers/contribution-weights.md, claim "sinks")?"""
    v = torch.nn.functional.normalize(values.float(), dim=-1)  # (B, H, T, D)
    return (v[..., 1:, :] @ v[..., :1, :].transpose(-1, -2)).flatten()


def position_value_cosines(values: torch.Tensor, position: int) -> torch.Tensor:
    """Per window, the mean of cos(v~^h_p, v~^h_j) over heads h and tokens j >= 1, j != p: (B,). With p = 0 it
    is the sink's statistic (``sink_value_cosines``, averaged per window); with a later position p it is the
    same statistic for an ordinary token, the control that says whether the sink is special."""
    B, H, T, D = values.shape
    if not 0 <= position < T:
        raise ValueError(f"position {position} outside a window of {T} tokens")
    v = torch.nn.functional.normalize(values.float(), dim=-1)  # (B, H, T, D)
    cos = (v @ v[..., position : position + 1, :].transpose(-1, -2))[..., 0]  # (B, H, T)
    keep = torch.ones(T, dtype=torch.bool, device=values.device)
    keep[0] = keep[position] = False
    return cos[..., keep].mean(dim=(1, 2))


def binned_minimum(rate: np.ndarray, norm: np.ndarray, bins: int = 10, margin: float = 0.05) -> dict:
    """The convexity test without a fit (claim "sinks", convex ||o|| in the sink rate): sort one head's
    queries by sink rate, split them into ``bins`` bins of equal count, and take each bin's mean ||o||.
    ``interior`` is True when the smallest bin mean is neither the first nor the last bin and both end bins
    exceed it by more than ``margin`` (relative). Returns interior, the argmin bin, the two ends' excess over
    the minimum (relative) and the bins' mean rates and norms."""
    rate, norm = np.asarray(rate, dtype=float), np.asarray(norm, dtype=float)
    if len(rate) < 2 * bins:
        raise ValueError(f"{len(rate)} points cannot fill {bins} bins of at least 2")
    order = np.argsort(rate, kind="stable")
    parts = np.array_split(order, bins)
    rates = np.array([rate[p].mean() for p in parts])
    norms = np.array([norm[p].mean() for p in parts])
    k = int(np.argmin(norms))
    low = norms[k] if norms[k] > 0 else np.finfo(float).tiny
    left, right = norms[0] / low - 1, norms[-1] / low - 1
    return {
        "interior": bool(0 < k < bins - 1 and left > margin and right > margin),
        "argmin": k, "left_excess": float(left), "right_excess": float(right),
        "bin_rate": rates.tolist(), "bin_norm": norms.tolist(),
    }  # fmt: skip


def sink_rate_and_norm(pattern: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per head, the sink rate a^h_i0 and the output norm ||o^h_i|| of every query i >= 1: two (H, B (T - 1))
    tensors."""
    o_norm = attention_outputs(pattern.float(), values.float()).norm(dim=-1)  # (B, H, T)
    rate = pattern.float()[..., 1:, 0]  # (B, H, T - 1)
    return rate.transpose(0, 1).flatten(1), o_norm[..., 1:].transpose(0, 1).flatten(1)


def convex_fit(rate: np.ndarray, norm: np.ndarray) -> dict[str, float]:
    """Least-squares fit ||o||^2 = p2 a^2 + p1 a + p0 of one head (the paper's toy model,
    docs/papers/contribution-weights.md, "Claims": ||a v_s + (1 - a) u||^2 is a convex quadratic in the sink
    rate a, minimised at a* = <u, u - v_s> / ||u - v_s||^2). Returns p2, the vertex a* = -p1 / (2 p2) (NaN
    unless convex), R^2 and the observed range of a."""
    rate, sq = np.asarray(rate, dtype=float), np.asarray(norm, dtype=float) ** 2
    if len(rate) < 4 or np.ptp(rate) == 0:
        nan = float("nan")
        return {"p2": nan, "vertex": nan, "r2": nan, "rate_min": nan, "rate_max": nan}
    p2, p1, p0 = np.polyfit(rate, sq, 2)
    resid = sq - np.polyval([p2, p1, p0], rate)
    total = ((sq - sq.mean()) ** 2).sum()
    return {
        "p2": float(p2),
        "vertex": float(-p1 / (2 * p2)) if p2 > 0 else float("nan"),
        "r2": float(1 - (resid**2).sum() / total) if total > 0 else float("nan"),
        "rate_min": float(rate.min()),
        "rate_max": float(rate.max()),
    }


def cone_concentration(outputs: torch.Tensor) -> torch.Tensor:
    """Per head, how narrow the cone of its outputs is: the mean cosine between each output o^h_i (i >= 1) and
    the head's mean output direction, pooled over the batch. ``outputs`` (B, H, T, D) -> (H,). 1 = every
    output points the same way."""
    o = torch.nn.functional.normalize(outputs.float()[..., 1:, :], dim=-1)  # (B, H, T - 1, D)
    o = o.transpose(0, 1).flatten(1, 2)  # (H, B (T - 1), D)
    centre = torch.nn.functional.normalize(o.mean(1, keepdim=True), dim=-1)  # (H, 1, D)
    return (o * centre).sum(-1).mean(-1)


def output_spread(
    records: Mapping[int, LayerRecord], scales: Mapping[int, torch.Tensor] | None = None
) -> pd.DataFrame:
    """Per layer, the head outputs' cone concentration (``cone_concentration``, mean over heads) and the
    coefficient of variation of their norms (std / mean over heads' queries, mean over heads), from captured
    ``records``; with ``scales`` the outputs are those of the intervened pass, (pattern x scale) @ values."""
    rows = []
    for layer, r in records.items():
        pattern = r["pattern"].float()
        if scales is not None and layer in scales:
            pattern = pattern * scales[layer].to(pattern)
        o = pattern @ r["values"].float()  # (B, H, T, D)
        norms = o[..., 1:, :].norm(dim=-1).transpose(0, 1).flatten(1)  # (H, B (T - 1))
        cv = (norms.std(1) / norms.mean(1).clamp_min(1e-12)).mean().item()
        rows.append({"layer": layer, "cone": cone_concentration(o).mean().item(), "norm_cv": cv})
    return pd.DataFrame(rows)
