"""Every paper's measurement on one model, from the intermediates of its own forward passes
(``GPT.run_with_cache``) and from its weights (docs/papers/synthesis.md, "Lenses"):

- XSA's similarity bias (``attnlab.metrics.similarity_bias``): cos(y_i, v_i), a_ii, cos(v_i, v_j);
- the contribution-weights lens: attention and contribution of the first token (the sink), and the sink's
  value geometry against an ordinary position's (``papers.contribution_weights.sinks``);
- the S-D lens on the weights: routing energy share and stable rank of every head's model-space form
  (``papers.sd_routing.routing``);
- attention sharpness (QK-speed's question): the normalised entropy of every attention row;
- the contribution-weights paper's single-layer faithfulness protocol on every kind (``faithfulness_curves``).

Two pieces are new here, because no paper package needs them: the contribution weights of a layer whose head
output removes one direction per query (XSA and its control, ``excluded_contributions``), and the normalised
attention entropy (``normalised_entropy``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd
import torch

from attnlab.attention import CausalSelfAttention, previous_values
from attnlab.hf import intervene, window_nll
from attnlab.metrics import (
    contribution_weights,
    per_query_head,
    projected_values,
    similarity_bias,
    stable_rank,
)
from attnlab.model import GPT
from attnlab.papers.contribution_weights.faithfulness import MODES, rank_mask
from attnlab.papers.contribution_weights.sinks import position_value_cosines
from attnlab.papers.sd_routing.routing import gpt_qk, head_forms, model_heads
from attnlab.papers.xsa.diagnostics import cache_bytes_per_sequence

#: The direction each exclusion kind removes from head output y_i, from the value heads v (B, H, T, d): XSA
#: its own value v_i (paper eq. 2), its control the previous token's value v_{i-1} (``attnlab.attention``).
EXCLUDED: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "xsa": lambda v: v,
    "xsa-prev": previous_values,
}

#: The per-layer measures, in the overview's order: column name -> label.
FORWARD_MEASURES = {
    "cos_yv": "cos(y_i, v_i)",
    "a_ii": "a_ii",
    "cos_vv": "cos(v_i, v_j)",
    "first_attention": "attention on token 0",
    "first_contribution": "contribution of token 0",
    "sink_value_cos": "cos(v~_0, v~_j)",
    "entropy": "attention entropy / log(i+1)",
}
WEIGHT_MEASURES = {"routing_energy": "routing energy share", "form_stable_rank": "stable rank of W_Q^T W_K"}
MEASURES = FORWARD_MEASURES | WEIGHT_MEASURES


def excluded_contributions(
    pattern: torch.Tensor, v: torch.Tensor, u: torch.Tensor, o_weight: torch.Tensor
) -> torch.Tensor:
    """Contribution weights c_ij (arXiv 2606.07604's definition, intra-head) of a head whose output removes
    the unit direction u_i from y_i = sum_j a_ij v_j: z_i = y_i - (y_i . u_i) u_i = sum_j a_ij P_i v_j, so
    token j's term for query i is a_ij P_i v_j W_O and

        c_ij = a_ij [<o_i, v~_j> - (v_j . u_i) <o_i, u~_i>] / ||o_i||^2,   o_i = z_i W_O,

    with v~ = v W_O^h and u~ = u W_O^h. Rows sum to 1; with u = 0 this is
    ``attnlab.metrics.contribution_weights`` of the projected values. ``pattern`` (B, H, T, T), ``v`` and
    ``u`` (B, H, T, d) (u unit or zero per position), ``o_weight`` (D, H d); returns (B, H, T, T), 0 on rows
    with o_i = 0 (up to rounding: ||o_i||^2 at most 1e-10 ||y_i W_O||^2)."""
    pattern, v, u = pattern.float(), v.float(), u.float()
    values, u_model = (
        projected_values(v, o_weight.float()),
        projected_values(u, o_weight.float()),
    )  # (B, H, T, D)
    y_u = ((pattern @ v) * u).sum(-1, keepdim=True)  # (B, H, T, 1): y_i . u_i
    o = pattern @ values - y_u * u_model  # (B, H, T, D)
    o_dot_v = o @ values.transpose(-1, -2)  # (B, H, T, T): <o_i, v~_j>
    v_dot_u = u @ v.transpose(-1, -2)  # (B, H, T, T): v_j . u_i
    o_dot_u = (o * u_model).sum(-1, keepdim=True)  # (B, H, T, 1)
    terms = pattern * (o_dot_v - v_dot_u * o_dot_u)
    norm2 = o.square().sum(-1, keepdim=True)
    # o_i = 0 up to rounding where y_i is parallel to u_i (XSA at i = 0: y_0 = v_0): no direction, row 0
    mixed2 = (pattern @ values).square().sum(-1, keepdim=True)  # ||y_i W_O||^2, the scale of the rounding
    some = norm2 > 1e-10 * mixed2
    return torch.where(some, terms / torch.where(some, norm2, 1.0), 0.0)


def layer_terms(
    attn: CausalSelfAttention, captured: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer's captured pass (``GPT.run_with_cache``) as the contribution-weights lens reads it: the
    pattern (B, H, T, T), the projected values v~ = v W_O^h (B, H, T, D) and the intra-head contribution
    weights (B, H, T, T): ``attnlab.metrics.contribution_weights`` for the kinds whose output is a sum of
    per-token terms, ``excluded_contributions`` for XSA and its control."""
    pattern, v = captured["pattern"], per_query_head(captured["v"], attn.n_head)  # (B, H, T, T), (B, H, T, d)
    values = projected_values(v.float(), attn.o_proj.weight.float())  # (B, H, T, D)
    if attn.kind in EXCLUDED:
        u = torch.nn.functional.normalize(EXCLUDED[attn.kind](v).float(), dim=-1)
        return pattern, values, excluded_contributions(pattern, v, u, attn.o_proj.weight)
    return pattern, values, contribution_weights(pattern, values)


def normalised_entropy(pattern: torch.Tensor) -> torch.Tensor:
    """H(a_i) / log(i + 1) of every attention row i >= 1 (B, H, T - 1) from ``pattern`` (B, H, T, T): 1 for
    uniform causal attention, 0 for attention on one token (sharper attention, QK-speed's measure)."""
    p = pattern[..., 1:, :].float()  # (B, H, T - 1, T)
    entropy = -torch.special.xlogy(p, p).sum(-1)
    keys = torch.arange(2, pattern.shape[-1] + 1, device=pattern.device, dtype=p.dtype)  # i + 1, i >= 1
    return entropy / keys.log()


def _fitting_batch(model: GPT, T: int, batch_size: int) -> int:
    """At most ``batch_size`` sequences of length ``T``, and no more than the captured intermediates of every
    layer (``run_with_cache``, twice for the working copies) hold in 8 GiB."""
    fits = int(8 * 2**30 // (2 * cache_bytes_per_sequence(model.cfg, T)))
    return max(1, min(batch_size, fits))


@torch.no_grad()
def forward_lenses(
    model: GPT, tokens: torch.Tensor, control_position: int, batch_size: int = 32
) -> pd.DataFrame:
    """Every forward-pass measure (``FORWARD_MEASURES``) of every layer over the sequences ``tokens`` (N, T),
    each from the same captured pass, averaged over queries i >= 1, heads and sequences; one row per layer.
    ``sink_value_cos`` is the mean cos(v~_0, v~_j) of the first token's projected values with the others'
    (``position_value_cosines``), ``control_value_cos`` the same for the token at ``control_position``;
    ``uniform`` is a_ii (and the attention on token 0) under uniform causal attention."""
    model.eval()
    device = next(model.parameters()).device
    batch_size = _fitting_batch(model, tokens.shape[1], batch_size)
    sums: dict[int, dict[str, float]] = {}
    for start in range(0, len(tokens), batch_size):
        batch = tokens[start : start + batch_size].to(device)
        _, cache = model.run_with_cache(batch)
        for layer, captured in enumerate(cache):
            pattern, values, c = layer_terms(model.blocks[layer].attn, captured)
            bias = similarity_bias(captured)
            row = {
                "cos_yv": bias["cos_yv"].mean(), "a_ii": bias["a_ii"].mean(), "cos_vv": bias["cos_vv"].mean(),
                "uniform": bias["a_ii_uniform"].mean(),
                "first_attention": pattern[..., 1:, 0].float().mean(),
                "first_contribution": c[..., 1:, 0].mean(),
                "sink_value_cos": position_value_cosines(values, 0).mean(),
                "control_value_cos": position_value_cosines(values, control_position).mean(),
                "entropy": normalised_entropy(pattern).mean(),
            }  # fmt: skip
            acc = sums.setdefault(layer, {k: 0.0 for k in row})
            for k, value in row.items():
                acc[k] += float(value) * len(batch)
    model.train()
    return pd.DataFrame([{"layer": layer, **{k: s / len(tokens) for k, s in acc.items()}}
                         for layer, acc in sums.items()])  # fmt: skip


#: The rankings of the faithfulness lens: a random order (the null every ranking must beat), the attention
#: weights, and the contribution weights (``layer_terms``).
FAITHFULNESS_MEASURES = ("random", "raw", "contribution")


@torch.no_grad()
def faithfulness_curves(
    model: GPT, tokens: torch.Tensor, fractions: Sequence[float], seed: int = 0, batch_size: int = 16
) -> pd.DataFrame:
    """The contribution-weights paper's single-layer protocol (docs/papers/contribution-weights.md,
    "Faithfulness") on any attention kind: in one layer at a time, for every query, the top
    (comprehensiveness) or bottom (sufficiency) ``fractions`` of each head's value terms j <= i, ranked by
    each of ``FAITHFULNESS_MEASURES``, are zeroed (``attnlab.hf.intervene``: the term a_ij v_j is scaled
    before the layer's readout, so for XSA the zeroed term is a_ij P_i v_j, exactly the term its
    contribution weight scores) and the next-token loss of every sequence of ``tokens`` (N, T) is measured.
    The random ranking draws from a generator seeded with ``seed``. Returns the columns of
    ``contribution_weights.faithfulness.intervention_curves`` (window, layers, scope, mode, measure,
    fraction, nll, clean_nll, tokens), so ``with_delta`` and ``curve_areas`` apply."""
    model.eval()
    device = next(model.parameters()).device
    fractions = [f for f in fractions if f > 0]
    batch_size = _fitting_batch(model, tokens.shape[1], batch_size)
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for start in range(0, len(tokens), batch_size):
        ids = tokens[start : start + batch_size].to(device)  # (B, T)
        logits, cache = model.run_with_cache(ids)
        clean = window_nll(logits, ids).tolist()
        stacked = ids.repeat(len(fractions), 1)  # (F B, T): copy k holds fraction k
        for layer, captured in enumerate(cache):
            pattern, _, c = layer_terms(model.blocks[layer].attn, captured)
            scores = {
                "random": torch.rand(pattern.shape, generator=generator).to(device),
                "raw": pattern,
                "contribution": c,
            }
            for mode in MODES:
                for measure in FAITHFULNESS_MEASURES:
                    zero = [
                        rank_mask(scores[measure], f, mode == "comprehensiveness", "head") for f in fractions
                    ]
                    with intervene(model, {layer: (~torch.cat(zero)).float()}):
                        nll = window_nll(model(stacked)[0], stacked).view(len(fractions), -1)  # (F, B)
                    per_window = nll.tolist()
                    for k, f in enumerate(fractions):
                        for b in range(len(ids)):
                            rows.append({
                                "window": start + b, "layers": f"layer {layer}", "scope": "head",
                                "mode": mode, "measure": measure, "fraction": f, "nll": per_window[k][b],
                                "clean_nll": clean[b], "tokens": ids.shape[1] - 1,
                            })  # fmt: skip
    model.train()
    return pd.DataFrame(rows)


@torch.no_grad()
def weight_lenses(model: GPT) -> pd.DataFrame:
    """The S-D lens on the weights (``WEIGHT_MEASURES``), head mean per softmax layer: the routing energy
    share ||R||^2 / ||W||^2 of every head's model-space form W = W_Q^T L W_K (``model_heads``) and W's stable
    rank. Linear-attention layers have no bilinear form and no row."""
    heads = model_heads(model).groupby("layer")["routing_energy"].mean()
    rows = []
    for layer, block in enumerate(model.blocks):
        if block.attn.bilinear_scores:
            core = head_forms(*gpt_qk(block.attn)).core  # (H, r, r)
            rows.append({"layer": layer, "routing_energy": float(heads[layer]),
                         "form_stable_rank": float(stable_rank(core).mean())})  # fmt: skip
    return pd.DataFrame(rows)


def lenses(model: GPT, tokens: torch.Tensor, control_position: int) -> pd.DataFrame:
    """``forward_lenses`` and ``weight_lenses`` of ``model``, one row per layer (weight measures NaN on
    linear-attention layers)."""
    frame = forward_lenses(model, tokens, control_position)
    weights = weight_lenses(model)
    if weights.empty:
        return frame.assign(**{k: math.nan for k in WEIGHT_MEASURES})
    return frame.merge(weights, on="layer", how="left")
