"""Pretrained heads as each model computes them, and the random-weight null of their statistics (arXiv
2605.18826, docs/papers/sd-routing.md, "Pretrained heads" and "The random-weight null").

**The forms.** A head's score is q_i . k_j with q = g_q * qknorm(Wq (gamma * x_hat_i) + b_q) rotated to its
position, and k likewise (x_hat: the attention's input normalised without its gain gamma; g_q, g_k: the gains
of a per-head q/k normalisation, Gemma 3's RMSNorm; the rotation: RoPE). The gains are folded into the weights
(:func:`folded_qk`): Wq <- diag(g_q) Wq diag(gamma), Wk <- diag(g_k) Wk diag(gamma), so x_hat_i^T Wq^T Wk
x_hat_j is the score up to the per-token positive divisions of the normalisations (which change no sign and
no part's share). RoPE makes the form depend on the offset delta = i - j between query and key: the score is
(R_delta q_i)^T (R_0 k_j), so the form at offset delta is Wq^T R_delta^T R_0 Wk, folded into the queries as
Wq(delta) = R_0^T R_delta Wq (:func:`rope_rotations`, from the model's own rotary embedding; R_0 is the
identity up to a scalar). Left out, and stated: the projections' biases and an encoder LayerNorm's shift
(terms linear in x, or constant, that are not part of any bilinear form), MPNet's relative position bias
(added to the scores), and softcaps. Tested against the models' own attention.

**The null.** Under Gaussian weights of fixed shapes every query head's statistics have one distribution,
the same in every layer of that shape and at every RoPE offset (a rotation of Gaussian rows is Gaussian);
heads that read one key head share its weights, so the independent units are the key groups. A model's
statistic (the mean filtering energy, the share of heads with a property) is a mean over its N groups, so it
is drawn many times by resampling groups from a pool of K Gaussian models' groups (:func:`random_pool`,
:func:`resampled_null`): each draw first resamples the pool (whose mean is known only to sigma / sqrt(K N))
and then the model's groups from it, so the draws spread as a new model's statistic does around the pool's
mean (variance sigma^2 / N + sigma^2 / (K N)), and a model beyond all but 2.5 % of them is beyond Gaussian
weights at about 2.5 %.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from attnlab.papers.sd_routing.routing import (
    QK,
    form_stats,
    hf_attention,
    hf_qk,
    load_pretrained,
    pretrained_fingerprint,
    random_heads,
)
from attnlab.training.cache import cached_result

#: The relative offsets (query position minus key position, in tokens) at which a RoPE model's forms are
#: measured; position-free models have the offset-0 form only.
OFFSETS = (0, 1, 4, 16, 64)

#: The null: models of Gaussian weights of a pretrained model's shapes drawn in full (the pool, seeds 0, 1,
#: ...; smoke scale, which judges nothing, draws two), and the model-level statistics resampled from their
#: key groups (a Monte Carlo test at 2.5 % needs 79 draws, ``attnlab.runner.verdicts.rank_rule``). Ten
#: models widen the null's spread by sqrt(1 + 1/10), 5 %, for the pool's own uncertainty.
POOL_DRAWS, SMOKE_POOL, NULL_DRAWS = 10, 2, 999

#: The per-head properties of the pretrained claims, from :func:`head_flags`.
FLAGS = ("dominant", "lower", "lower_stable", "unstable")
#: The model-level statistics of the null: the mean filtering energy and the share of heads with each flag.
NULL_COLUMNS = ("filtering_energy", *FLAGS)


def head_flags(heads: pd.DataFrame) -> pd.DataFrame:
    """``heads`` with each head's property of the pretrained claims: filtering dominant (``dominant``: its
    energy above 1/2), routing below filtering rank (``lower``: entropy rank; ``lower_stable``: stable rank),
    unstable (an eigenvalue of W with positive real part)."""
    return heads.assign(
        dominant=heads["filtering_energy"] > 0.5,
        lower=heads["routing_rank"] < heads["filtering_rank"],
        lower_stable=heads["routing_stable_rank"] < heads["filtering_stable_rank"],
        unstable=heads["n_unstable"] > 0,
    )


# The forms as the model computes them -----------------------------------------------------------------------


def norm_gain(norm: nn.Module, n: int) -> torch.Tensor:
    """The elementwise gain (n,) of a normalisation layer, float64: a LayerNorm's weight; for any other
    (RMSNorm, Gemma's 1 + weight) its output on a constant vector, which it divides by its own root mean
    square (so the probe reads the gain whatever the convention)."""
    if isinstance(norm, nn.LayerNorm):
        return norm.weight.detach().double().cpu() if norm.weight is not None else torch.ones(n).double()
    param = next(norm.parameters())
    with torch.no_grad():
        out = norm(torch.full((1, n), 1e3, dtype=param.dtype, device=param.device))[0]
    return out.detach().double().cpu()


def _layers(model: nn.Module, modules: Sequence[nn.Module]) -> nn.ModuleList | None:
    """The model's list of layers, the i-th holding the i-th attention module; None when there is none."""
    for candidate in model.modules():
        if isinstance(candidate, nn.ModuleList) and len(candidate) == len(modules):
            if all(any(m is a for m in layer.modules()) for layer, a in zip(candidate, modules, strict=True)):
                return candidate
    return None


_PRE_NORMS = ("input_layernorm", "ln_1", "attention_norm")  # Llama/Qwen/Gemma/NeoX, GPT-2, others


def input_norms(model: nn.Module) -> list[nn.Module | None]:
    """The normalisation whose output each attention layer reads, in layer order: a pre-norm layer's own
    (``input_layernorm``, ``ln_1``); in a post-norm encoder (BERT, MPNet) the previous layer's output
    LayerNorm, and for the first layer the embeddings' LayerNorm; None where none is found."""
    modules = [m for m, _ in hf_attention(model)]
    layers = _layers(model, modules)
    if layers is None:
        return [None] * len(modules)
    out: list[nn.Module | None] = []
    embeddings = next((m for name, m in model.named_modules() if name.split(".")[-1] == "embeddings"), None)
    for i, layer in enumerate(layers):
        pre = next(
            (getattr(layer, n) for n in _PRE_NORMS if isinstance(getattr(layer, n, None), nn.Module)), None
        )
        if pre is not None:
            out.append(pre)
        elif i == 0:
            out.append(getattr(embeddings, "LayerNorm", None))
        else:
            out.append(getattr(getattr(layers[i - 1], "output", None), "LayerNorm", None))
    return out


def _qk_gains(attn: nn.Module, wq: torch.Tensor, wk: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-head gains (H, d) and (H_kv, d) of the attention's q/k normalisation (``q_norm``, ``k_norm``:
    Gemma 3, Qwen 3; one gain per head dimension, or per head and dimension), ones without one."""
    gains = []
    for name, w in (("q_norm", wq), ("k_norm", wk)):
        norm = getattr(attn, name, None)
        heads, d = w.shape[0], w.shape[1]
        if not isinstance(norm, nn.Module):
            gains.append(torch.ones(heads, d, dtype=torch.float64))
            continue
        n = sum(p.numel() for p in norm.parameters(recurse=False)) or d
        gain = norm_gain(norm, n)
        gains.append(gain.expand(heads, d) if n == d else gain.reshape(heads, d))
    return gains[0], gains[1]


def folded_qk(model: nn.Module) -> list[QK]:
    """(Wq, Wk) of every attention layer (``routing.hf_attention``) with the gains the model applies folded
    in, float64: Wq <- diag(g_q) Wq diag(gamma) and Wk <- diag(g_k) Wk diag(gamma), gamma the gain of the
    normalisation the layer reads (:func:`input_norms`), g_q, g_k those of its q/k normalisation."""
    out = []
    for (attn, (wq, wk)), norm in zip(hf_attention(model), input_norms(model), strict=True):
        D = wq.shape[-1]
        gamma = norm_gain(norm, D) if norm is not None else torch.ones(D, dtype=torch.float64)
        gq, gk = _qk_gains(attn, wq, wk)
        out.append((gq[..., None] * wq.double() * gamma, gk[..., None] * wk.double() * gamma))
    return out


def _rotate_half(d: int) -> torch.Tensor:
    """The matrix P with P x = rotate_half(x) = (-x[d/2:], x[:d/2]) (the Llama family's RoPE pairing)."""
    half = d // 2
    P = torch.zeros(d, d, dtype=torch.float64)
    P[torch.arange(half), torch.arange(half) + half] = -1.0
    P[torch.arange(half) + half, torch.arange(half)] = 1.0
    return P


def rope_rotations(model: nn.Module, offsets: Sequence[int] = OFFSETS) -> list[torch.Tensor | None]:
    """Per attention layer, the maps M (len(offsets), d, d) that put a RoPE head's form at each offset into
    its queries: with the query at position delta and the key at 0 the score is (R_delta q)^T (R_0 k), so
    Wq(delta) = R_0^T R_delta Wq; R_p = diag(cos) + diag(sin) P from the model's own rotary embedding at
    position p (its layer's type where the embedding has several, Gemma 3's local and global layers). None
    for a layer without RoPE (no rotary embedding in the model, or one that rotates part of the head only)."""
    attention = hf_attention(model)
    rotary = [m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")]
    if len(rotary) != 1:
        return [None] * len(attention)
    emb = rotary[0]
    typed = "layer_type" in inspect.signature(emb.forward).parameters
    positions = torch.tensor([[0, *offsets]])
    out: list[torch.Tensor | None] = []
    for attn, (wq, _) in attention:
        d = wq.shape[1]
        kwargs = {"layer_type": getattr(attn, "layer_type", None)} if typed else {}
        with torch.no_grad():
            cos, sin = emb(torch.zeros(1, 1, d), positions, **kwargs)
        cos, sin = cos[0].double().cpu(), sin[0].double().cpu()  # (1 + len(offsets), rot)
        if cos.shape[-1] != d:
            out.append(None)
            continue
        R = torch.diag_embed(cos) + torch.diag_embed(sin) @ _rotate_half(d)  # (1 + n, d, d)
        out.append(R[0].transpose(-1, -2) @ R[1:])
    return out


def pretrained_heads(model: nn.Module, offsets: Sequence[int] = OFFSETS) -> pd.DataFrame:
    """``routing.form_stats`` of every head of a Hugging Face model's forms as it computes them
    (:func:`folded_qk`), one row per (``offset``, ``layer``, head): at every offset for a RoPE layer
    (:func:`rope_rotations`), at offset 0 only for a position-free one."""
    frames = []
    for layer, ((wq, wk), rot) in enumerate(
        zip(folded_qk(model), rope_rotations(model, offsets), strict=True)
    ):
        for i, offset in enumerate(offsets):
            if rot is None and offset != 0:
                continue
            q = wq if rot is None else rot[i] @ wq
            frames.append(form_stats(q, wk).assign(layer=layer, offset=offset))
    return pd.concat(frames, ignore_index=True)


# The random-weight null -------------------------------------------------------------------------------------


def random_pool(shapes: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], draws: int) -> pd.DataFrame:
    """``draws`` models of Gaussian weights of the given per-layer shapes (``routing.random_heads``, seeds 0,
    1, ...): one row per head (its statistics, ``layer``, key ``group``, ``draw`` the seed), with its layer's
    shape as ``stratum``."""
    strata = dict(enumerate(f"{q[0]}x{q[1]}x{q[2]}/{k[0]}" for q, k in shapes))
    frames = [random_heads(shapes, seed=seed).assign(draw=seed) for seed in range(draws)]
    pool = pd.concat(frames, ignore_index=True)
    return pool.assign(stratum=pool["layer"].map(strata))


def resampled_null(pool: pd.DataFrame, draws: int, seed: int = 0) -> pd.DataFrame:
    """``draws`` model-level statistics (``NULL_COLUMNS``: the mean filtering energy and the share of heads
    with each of :func:`head_flags`) of models of Gaussian weights, resampled from ``pool``
    (:func:`random_pool`): the units are key groups (draw, layer, group), and each null draw takes, in every
    stratum (layer shape), as many groups as one model has there, from a bootstrap copy of the stratum's
    pooled groups (two stages, so that the draws carry the pool's own uncertainty about its mean), then
    averages over the heads. Seeded; one row per draw."""
    flagged = head_flags(pool)
    units = flagged.groupby(["stratum", "draw", "layer", "group"], sort=True)
    values = units[list(NULL_COLUMNS)].mean().astype(float)
    sizes = units.size()
    models = pool["draw"].nunique()
    rng = np.random.default_rng(seed)
    total = np.zeros((draws, len(NULL_COLUMNS)))
    weight = 0.0
    for stratum, block in values.groupby(level="stratum", sort=True):
        x = block.to_numpy()  # (P, columns)
        n_heads = sizes.loc[stratum].to_numpy()
        P = len(x)
        N = P // models  # groups of one model in this stratum
        first = rng.integers(P, size=(draws, P))  # a bootstrap copy of the pool
        picked = np.take_along_axis(first, rng.integers(P, size=(draws, N)), axis=1)
        total += (x[picked] * n_heads[picked][..., None]).sum(1)
        weight += N * float(n_heads.mean())
    return pd.DataFrame(total / weight, columns=list(NULL_COLUMNS)).rename_axis("draw").reset_index()


# One pretrained model's analysis ----------------------------------------------------------------------------


def analyse(name: str, pool: int, say: bool = True) -> dict:
    """A pretrained model's heads as it computes them (:func:`pretrained_heads`: ``heads`` at offset 0,
    ``offsets`` the other RoPE offsets), its null (``pool``: :func:`random_pool` of ``pool`` Gaussian models
    of its shapes; ``random``: the first of them, the heads table's baseline), and its parameter count
    (``parameters``: embeddings included, tied weights once); kept by the results cache."""

    def compute() -> dict:
        model = load_pretrained(name)
        shapes = [(tuple(q.shape), tuple(k.shape)) for q, k in hf_qk(model)]
        heads, parameters = pretrained_heads(model, OFFSETS), sum(p.numel() for p in model.parameters())
        del model
        null = random_pool(shapes, pool)
        at, first = heads["offset"] == 0, null["draw"] == 0
        return {
            "heads": heads[at].drop(columns="offset").to_dict(orient="list"), "parameters": parameters,
            "offsets": heads[~at].to_dict(orient="list"), "pool": null.to_dict(orient="list"),
            "random": null[first].drop(columns=["draw", "group", "stratum"]).to_dict(orient="list"),
        }  # fmt: skip

    config = {"model": name, "forms": "as computed", "offsets": list(OFFSETS), "pool": pool}
    result, cached = cached_result("sd_routing_heads", config, compute, data=pretrained_fingerprint(name))
    if say:
        print(f"{name}: {'loaded from the results cache' if cached else 'analysed'}")
    return result
