"""Attention sinks through the lens of contribution weights (arXiv 2606.07604,
docs/papers/contribution-weights.md, claims "decomposition", "sinks" and "sink-norm removal"), and the two
properties of c the paper states with its definition (each row sums to 1; c can be negative), measured on the
same pass. The sink is the first token of each sequence (j = 0).

Every per-layer function takes one layer's ``pattern`` (B, H, T, T) and per-head projected values ``values``
(B, H, T, D) as ``attnlab.hf.capture`` records them, and looks at queries i >= 1 (query 0 sees only the sink);
:func:`analyse` runs them all over a model's windows.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from attnlab.hf import LayerRecord, TextModel, attention_modules, capture, capture_nll, value_scale
from attnlab.metrics import attention_outputs, contribution_weights

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


# --- the definition's two properties (docs/papers/contribution-weights.md, "Definitions") ------------------


def rounding_bound(T: int, H: int, D: int, dtype: torch.dtype = torch.float32) -> float:
    """How far float rounding can move sum_j c_ij from 1, per unit of the row's condition number kappa_i
    (:func:`row_sums`): to first order 2 (T + H + D) u, u the unit roundoff of ``dtype``. The output o_i is a
    sum of T (intra-head) or T + H (inter-head) terms, each <o_i, v~_j> a dot product of D, and the row's sum
    one of T more: each sum's error is at most (its length) x u x (the sum of its terms' sizes), and those
    sizes add up to kappa_i ||o_i||^2 (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1)."""
    return 2 * (T + H + D) * torch.finfo(dtype).eps / 2


def row_sums(pattern: torch.Tensor, values: torch.Tensor, inter_head: bool = False) -> dict[str, float]:
    """The identity sum_j c_ij = 1 of ``contribution_weights`` as computed (float32 or wider): it holds
    exactly whenever o_i = sum_j a_ij v~_j, since then sum_j <o_i, a_ij v~_j> = ||o_i||^2. Per query row
    (every i, every head, or per query with ``inter_head``): the deviation |sum_j c_ij - 1| and the row's
    condition number kappa_i = sum_j ||a_ij v~_j|| / ||o_i|| (>= 1; large where the terms cancel). Returns
    rows, zero_rows (o_i = 0: no direction, c is 0 there, left out), max_deviation and max_scaled (the
    largest deviation / kappa_i, which :func:`rounding_bound` bounds)."""
    c = contribution_weights(pattern, values, inter_head)  # (B, H, T, T) or (B, T, T)
    o = attention_outputs(pattern, values, inter_head)
    p, v = pattern.to(c.dtype), values.to(c.dtype)
    sizes = p * v.norm(dim=-1).unsqueeze(-2)  # (B, H, T, T): ||a_ij v~_j||
    mass = sizes.sum((1, 3)) if inter_head else sizes.sum(-1)
    o_norm = o.norm(dim=-1)
    live = o_norm > 0
    deviation = (c.sum(-1) - 1).abs()[live]
    kappa = mass[live] / o_norm[live]
    return {
        "rows": live.numel(), "zero_rows": int((~live).sum()),
        "max_deviation": deviation.max().item() if deviation.numel() else math.nan,
        "max_scaled": (deviation / kappa).max().item() if deviation.numel() else math.nan,
    }  # fmt: skip


def negative_terms(pattern: torch.Tensor, values: torch.Tensor) -> dict[str, float]:
    """Destructive interference, c_ij < 0 (a term pointing against its head's output), over the causal terms
    j <= i of queries i >= 1: terms, negative (how many), rows, destructive (the sum over rows of
    sum_j max(-c_ij, 0), the share of the output the negative terms cancel) and min (the most negative c)."""
    c = contribution_weights(pattern, values)[..., 1:, :]  # (B, H, T - 1, T): queries i >= 1
    T = pattern.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool, device=c.device).tril()[1:]  # (T - 1, T): j <= i
    below = (-c).clamp_min(0.0) * causal
    return {
        "terms": int(causal.sum()) * c[..., 0, 0].numel(), "negative": int(below.gt(0).sum()),
        "rows": c[..., 0].numel(), "destructive": below.sum().item(),
        "min": c.masked_fill(~causal, math.inf).min().item(),
    }  # fmt: skip


@contextlib.contextmanager
def recording_outputs(model: torch.nn.Module) -> Iterator[dict[int, torch.Tensor]]:
    """For the block, each attention layer's own output (its W_O's, bias included) by layer index, as the
    model computed it: what :func:`output_residual` compares with the sum of the layer's terms."""
    outputs: dict[int, torch.Tensor] = {}
    handles = [
        module.get_submodule("o_proj").register_forward_hook(
            lambda _m, _i, out, layer=layer: outputs.__setitem__(layer, out.detach())
        )
        for layer, module in attention_modules(model).items()
    ]
    try:
        yield outputs
    finally:
        for handle in handles:
            handle.remove()


def output_residual(record: LayerRecord, output: torch.Tensor) -> dict[str, float]:
    """Whether the layer's own output (B, T, D) is the sum of its terms, sum_h sum_j a^h_ij v~^h_j, plus the
    bias of W_O (no token's term: with o_i taken as the output, bias included, sum_j c_ij =
    <o_i + b, o_i> / ||o_i + b||^2, not 1). The bias of W_V is inside every v~_j and, the a_ij of a row
    summing to 1, inside o_i: it breaks nothing. Returns the largest ||output - terms - b|| / ||output|| over
    positions (float rounding of the model's dtype) and the bias's norm over the mean output norm (0: no
    bias)."""
    terms = attention_outputs(record["pattern"], record["values"], inter_head=True)  # (B, T, D)
    bias = record.get("o_bias")
    out = output.to(terms.dtype)
    norm = out.norm(dim=-1)
    b = torch.zeros_like(out[0, 0]) if bias is None else bias.detach().to(terms)
    residual = (out - terms - b).norm(dim=-1) / norm.clamp_min(torch.finfo(norm.dtype).tiny)
    return {"max_residual": residual.max().item(), "bias_share": (b.norm() / norm.mean()).item()}


# --- the analyses over a model's windows ------------------------------------------------------------------


def _pool_cosines(rows: list[dict]) -> dict:
    """Per layer: the count-weighted mean cosine and negative fraction over batches, and the pooled sample."""
    out: dict[int, dict] = {}
    for r in rows:
        o = out.setdefault(r["layer"], {"layer": r["layer"], "sum": 0.0, "neg": 0.0, "n": 0, "sample": []})
        o["sum"] += r["mean"] * r["n"]
        o["neg"] += r["negative"] * r["n"]
        o["n"] += r["n"]
        o["sample"] += r["sample"]
    rows_out = [
        {"layer": o["layer"], "mean": o["sum"] / o["n"], "negative": o["neg"] / o["n"], "n": o["n"],
         "sample": o["sample"]}
        for o in out.values()
    ]  # fmt: skip
    return pd.DataFrame(rows_out).to_dict("list")


def _mean_by_layer(parts: list[pd.DataFrame]) -> dict:
    if not parts:
        return {}
    frame = pd.concat(parts, ignore_index=True)
    return (frame.groupby(["layer", "group"]).mean(numeric_only=True).drop(columns="batch")
            .reset_index().to_dict("list"))  # fmt: skip


def _identity_by_layer(rows: list[dict], bound: float) -> dict:
    """Per layer, over the batches: the largest deviations of :func:`row_sums` (intra- and inter-head, the
    latter prefixed ``inter_``), the rows and zero rows, :func:`output_residual`'s largest residual and bias
    share, and the rounding bound of the scaled deviation."""
    frame = pd.DataFrame(rows).drop(columns="batch")
    sums = [c for c in frame.columns if c.endswith("rows")]
    out = frame.groupby("layer").max()
    out[sums] = frame.groupby("layer")[sums].sum()
    return out.assign(bound=bound).reset_index().to_dict("list")


def _negative_by_layer(rows: list[dict]) -> dict:
    """Per layer, over the batches: the share of negative c among the causal terms, the mean destructive
    mass per row (:func:`negative_terms`) and the most negative c."""
    frame = pd.DataFrame(rows).groupby("layer").agg(
        terms=("terms", "sum"), negative=("negative", "sum"), rows=("rows", "sum"),
        destructive=("destructive", "sum"), min=("min", "min"),
    )  # fmt: skip
    frame["share"] = frame["negative"] / frame["terms"]
    frame["mass"] = frame["destructive"] / frame["rows"]
    return frame.reset_index().to_dict("list")


def analyse(
    lm: TextModel, ids: torch.Tensor, batch_size: int, controls: Sequence[int], seed: int
) -> dict[str, object]:
    """Every sink analysis of ``ids`` (N, T) windows, ``batch_size`` at a time
    (``ContributionExperiment.sinks`` caches it): per layer the decomposition (also with the tokenizer's BOS
    prefixed, for a model whose windows do not begin with it already), the sink's value cosines, the row sums
    of c and the model's own output against its terms, the negative c; per window and layer the mean value
    cosine of the sink and of the ``controls`` positions; per head the binned minimum and quadratic fit of
    ||o|| against the sink rate; and the sink-norm removal (the sink's value terms zeroed in every layer): per
    window the summed next-token NLL of both states, the pooled perplexity, and per layer the head outputs'
    cone and norm spread."""
    ids = ids.to(lm.device)
    bos = lm.tokenizer.bos_token_id if lm.tokenizer is not None and not lm.prefix else None
    decomp, decomp_bos, cosines, positions, fits, scatter, spread = [], [], [], [], [], [], []
    identity, negative, nll = [], [], []
    rng = np.random.default_rng(seed)
    for start in range(0, len(ids), batch_size):
        batch = ids[start : start + batch_size]
        with recording_outputs(lm.model) as outputs:
            clean, records = capture_nll(lm.model, batch)
        sink = value_scale(torch.arange(batch.shape[1], device=batch.device).eq(0).expand_as(batch))
        scales = dict.fromkeys(records, sink)
        removed, records_removed = capture_nll(lm.model, batch, scales=scales)
        nll += [{"window": start + b, "clean": c, "sink removed": r, "tokens": batch.shape[1] - 1}
                for b, (c, r) in enumerate(zip(clean.tolist(), removed.tolist(), strict=True))]  # fmt: skip
        spread.append(output_spread(records).assign(batch=start, state="clean"))
        spread.append(output_spread(records_removed, scales).assign(batch=start, state="sink removed"))
        del records_removed
        for layer, r in records.items():
            d = decomposition(r["pattern"], r["values"]).assign(layer=layer, batch=start)
            decomp.append(d.rename_axis("group").reset_index())
            inter = row_sums(r["pattern"], r["values"], inter_head=True)
            identity.append({"layer": layer, "batch": start, **row_sums(r["pattern"], r["values"]),
                             **{f"inter_{k}": v for k, v in inter.items()},
                             **output_residual(r, outputs[layer])})  # fmt: skip
            negative.append({"layer": layer, **negative_terms(r["pattern"], r["values"])})
            cos = sink_value_cosines(r["values"])
            cosines.append({
                "layer": layer, "batch": start, "mean": cos.mean().item(),
                "negative": (cos < 0).float().mean().item(), "n": cos.numel(),
                "sample": cos[torch.from_numpy(rng.choice(cos.numel(), 200))].tolist(),
            })  # fmt: skip
            for pos in (0, *controls):
                for b, value in enumerate(position_value_cosines(r["values"], pos).tolist()):
                    positions.append({"layer": layer, "window": start + b, "position": pos, "cosine": value})
            rates, norms = sink_rate_and_norm(r["pattern"], r["values"])
            for h in range(rates.shape[0]):
                scatter.append((layer, h, start, rates[h].cpu().numpy(), norms[h].cpu().numpy()))
        _, H, T, D = next(iter(records.values()))["values"].shape
        del records, outputs
        if bos is not None:
            prefixed = torch.cat([torch.full_like(batch[:, :1], bos), batch], dim=1)  # (B, 1 + T)
            _, records = capture(lm.model, prefixed)
            for layer, r in records.items():
                d = decomposition(r["pattern"], r["values"]).assign(layer=layer, batch=start)
                decomp_bos.append(d.rename_axis("group").reset_index())
            del records
    for layer, h in sorted({(s[0], s[1]) for s in scatter}):
        rate = np.concatenate([s[3] for s in scatter if s[:2] == (layer, h)])
        norm = np.concatenate([s[4] for s in scatter if s[:2] == (layer, h)])
        sample = rng.choice(len(rate), size=min(len(rate), 300), replace=False)
        fits.append({
            "layer": layer, "head": h, **convex_fit(rate, norm), **binned_minimum(rate, norm),
            "mean_rate": float(rate.mean()), "rate_sample": rate[sample].tolist(),
            "norm_sample": norm[sample].tolist(),
        })  # fmt: skip
    per_window = pd.DataFrame(nll)
    tokens = per_window["tokens"].sum()
    return {
        "first_token": "BOS, as the model is fed" if lm.prefix else "first text token",
        "decomposition": _mean_by_layer(decomp),
        "decomposition_bos": _mean_by_layer(decomp_bos),
        "cosines": _pool_cosines(cosines),
        "positions": pd.DataFrame(positions).to_dict("list"),
        "fits": pd.DataFrame(fits).to_dict("list"),
        "spread": pd.concat(spread).groupby(["state", "layer"]).mean(numeric_only=True)
        .drop(columns="batch").reset_index().to_dict("list"),
        "nll": per_window.to_dict("list"),
        "ppl": {state: math.exp(per_window[state].sum() / tokens) for state in ("clean", "sink removed")},
        "identity": _identity_by_layer(identity, rounding_bound(T, H, D)),
        "negative": _negative_by_layer(negative),
    }  # fmt: skip
