"""Metrics computed from the attention intermediates a model captured in its own forward pass."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F


def _tensor(name: str, x: object, who: str, ndim: int | None = None, shape: str = "") -> torch.Tensor:
    """``x`` checked to be a tensor (of ``ndim`` dims, described by ``shape``), else a ValueError naming
    ``who`` and what it expected."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{who}: {name} must be a torch.Tensor {shape}; got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{who}: {name} has shape {tuple(x.shape)}; expected {shape}")
    return x


def _fraction(name: str, value: object, who: str) -> None:
    """A ValueError naming ``who`` unless ``value`` is a number in [0, 1] (NaN is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{who}: {name} must be a number in [0, 1]; got {value!r}")


def _matrices(matrix: object, who: str) -> torch.Tensor:
    """``matrix`` (..., m, n) checked: a tensor of at least two dims, finite; an integer one is read as
    float64, so that a rank is never truncated to an integer. Returns the dtype-checked tensor."""
    _tensor("matrix", matrix, who, shape="(..., m, n)")
    assert isinstance(matrix, torch.Tensor)
    if matrix.ndim < 2:
        raise ValueError(f"{who}: matrix has shape {tuple(matrix.shape)}; expected (..., m, n)")
    if not bool(torch.isfinite(matrix).all()):
        raise ValueError(f"{who}: matrix holds NaN or infinite values")
    return matrix if matrix.dtype.is_floating_point else matrix.double()


def per_query_head(v: torch.Tensor, n_head: int) -> torch.Tensor:
    """Broadcast (B, H_kv, T, d) value heads to the (B, H, T, d) query heads they serve."""
    if n_head % v.shape[1]:
        raise ValueError(
            f"per_query_head: {n_head} query heads is not a multiple of {v.shape[1]} value heads"
        )
    return v.repeat_interleave(n_head // v.shape[1], dim=1)


def projected_values(value: torch.Tensor, o_weight: torch.Tensor) -> torch.Tensor:
    """Per-head projected values v~^h_j = v^{g(h)}_j (W_O^h)^T (docs/papers/contribution-weights.md,
    "Definitions": x_j W_V^h W_O^h in row-vector notation), (B, H, T, D), from the value states ``value``
    (B, H_kv, T, d) (after the bias of W_V, before grouped-query expansion) and the output projection's weight
    ``o_weight`` (D, H d), whose column block h d .. (h + 1) d is W_O^h. Query head h reads value head
    h // (H / H_kv), as transformers' ``repeat_kv`` and ``torch.repeat_interleave`` order them."""
    B, H_kv, T, d = value.shape
    D, Hd = o_weight.shape
    if Hd % d or (Hd // d) % H_kv:
        shapes = f"o_proj weight {tuple(o_weight.shape)}, value heads {tuple(value.shape)}"
        raise ValueError(f"{shapes}: the output projection does not fit the value heads")
    H = Hd // d
    v = per_query_head(value, H)  # (B, H, T, d)
    w = o_weight.view(D, H, d).permute(1, 2, 0)  # (H, d, D): W_O^h transposed
    return v @ w.to(v.dtype)  # (B, H, T, D)


def similarity_bias(layer: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Attention similarity bias of one layer (XSA paper, Fig. 1), one value per (sequence, head): (B, H).

    - ``cos_vv``: mean cos(v_i, v_j) over causal pairs j < i (the pairs attention can mix);
    - ``a_ii``: mean diagonal attention weight a_ii over positions i >= 1;
    - ``a_ii_uniform``: the same mean for uniform causal attention, 1 / (i + 1): the reference a_ii is "high"
      against;
    - ``cos_yv``: mean cos(y_i, v_i) of the head's mixed value and the token's own value, i >= 1;
    - ``cos_zv``: mean cos(z_i, v_i) of the head output before W_O (equal to cos_yv for SA, ~0 for XSA);
    - ``zv_residual``: max over i >= 1 of |z_i . v_i| / (||y_i|| ||v_i||), the share of the own-value
      direction left in z relative to the size of y: rounding level (~1e-7) for XSA. Unlike cos(z_i, v_i)
      it stays well defined where y_i is parallel to v_i and XSA leaves z_i ~ 0 (e.g. a byte attending
      only to earlier copies of itself, whose first-layer values are identical), where the cosine of a
      rounding-noise vector can take any value.

    Position 0 is left out: there a_00 = 1 and y_0 = v_0 whatever the model learned.
    """
    missing = sorted({"pattern", "v", "y", "z"} - set(layer))
    if missing:
        raise ValueError(f"similarity_bias: the layer's intermediates lack {missing} (hf.capture gives them)")
    pattern, y, z = layer["pattern"], layer["y"], layer["z"]  # (B, H, T, T), (B, H, T, d) x2
    B, H, T, _ = y.shape
    v = per_query_head(layer["v"], H)  # (B, H, T, d)
    vn = F.normalize(v.float(), dim=-1)
    gram = vn @ vn.transpose(-1, -2)  # (B, H, T, T)
    below = torch.ones(T, T, dtype=torch.bool, device=y.device).tril(-1)
    positions = torch.arange(1, T, device=y.device)
    return {
        "cos_vv": gram[..., below].mean(-1),
        "a_ii": pattern.diagonal(dim1=-2, dim2=-1)[..., 1:].float().mean(-1),
        "a_ii_uniform": (1.0 / (positions + 1)).mean().expand(B, H),
        "cos_yv": F.cosine_similarity(y.float(), v.float(), dim=-1)[..., 1:].mean(-1),
        "cos_zv": F.cosine_similarity(z.float(), v.float(), dim=-1)[..., 1:].mean(-1),
        "zv_residual": _relative_projection(z.float(), vn, y.float())[..., 1:].amax(-1),
    }


def _relative_projection(z: torch.Tensor, v_unit: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """|z_i . v_i / ||v_i||| / ||y_i||, (B, H, T); 0 where y_i = 0."""
    return (z * v_unit).sum(-1).abs() / y.norm(dim=-1).clamp_min(torch.finfo(y.dtype).tiny)


# --- Faster query-key learning sharpens attention (arXiv 2608.06776): attention mass, rollout, faithfulness,
# DTAP heatmaps and attention confidence. Definitions: docs/papers/qk-speed.md, "Setup" (metrics).

DTAP_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

ProbFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``prob_fn(inputs, keep) -> probabilities (B, C)``: the model's class probabilities on ``inputs``
(B, T, ...) when only the positions where ``keep`` (B, T) bool is True are present. How a position is removed
(masked out of attention, replaced by a pad token, dropped) is the caller's choice."""


def attention_mass(attn: torch.Tensor, relevant: torch.Tensor) -> torch.Tensor:
    """Attention mass on the relevant positions: m_b = sum_j a_bj [j relevant], (B,) from ``attn`` (B, T)
    (one query row per example, e.g. the last position's attention, or a rollout row) and ``relevant`` (B, T)
    bool (or 0/1). ``attn`` holds attention weights: non-negative, each row summing to at most 1."""
    _tensor("attn", attn, "attention_mass", shape="(B, T)")
    _tensor("relevant", relevant, "attention_mass", shape="(B, T)")
    if attn.shape != relevant.shape:
        raise ValueError(f"attn {tuple(attn.shape)} and relevant {tuple(relevant.shape)} differ")
    if relevant.dtype != torch.bool and not bool(((relevant == 0) | (relevant == 1)).all()):
        raise ValueError("attention_mass: relevant marks positions: bool, or 0 and 1 only")
    if attn.is_floating_point() and not bool(torch.isfinite(attn).all()):
        raise ValueError("attention_mass: attn holds NaN or inf (a diverged model?)")
    if bool((attn < 0).any()) or bool((attn.float().sum(-1) > 1.01).any()):  # 1 % slack: bf16 rows
        raise ValueError(
            "attention_mass: attn must be attention weights (non-negative, rows summing to at most 1), not "
            "scores: apply softmax first"
        )
    return (attn * relevant.to(attn.dtype)).sum(-1)


def attention_rollout(
    patterns: Sequence[torch.Tensor], attn_weight: float = 0.5, query: int | None = -1
) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) over layers ``patterns`` [(B, H, T, T) per layer, first layer
    first], as docs/papers/qk-speed.md ("Setup") defines it: per layer the head mean A = mean_h A_h, then
    A' = a A + (1 - a) I with a = ``attn_weight`` (the residual stream), rows renormalised to sum 1, and
    R = A'_L ... A'_2 A'_1 (the last layer leftmost, so R[i, j] is how much output position i draws on input
    token j).

    Returns the query row R[query] (B, T), or the whole R (B, T, T) with ``query=None``.
    """
    if isinstance(patterns, torch.Tensor) or not isinstance(patterns, Sequence):
        raise ValueError(
            "attention_rollout: patterns must be a list of (B, H, T, T) tensors, one per layer; got "
            f"{type(patterns).__name__}"
        )
    if not patterns:
        raise ValueError("attention_rollout needs at least one layer")
    _fraction("attn_weight", attn_weight, "attention_rollout")
    rollout = None
    for layer, pattern in enumerate(patterns):
        _tensor(f"layer {layer}'s pattern", pattern, "attention_rollout", shape="(B, H, T, T)")
        shape = tuple(pattern.shape)
        if pattern.dim() != 4 or shape[-1] != shape[-2]:
            raise ValueError(
                f"attention_rollout: layer {layer}'s pattern has shape {shape}; expected (B, H, T, T), a "
                "head axis included (add one with pattern[:, None] for a single map)"
            )
        if rollout is not None and shape[-1] != rollout.shape[-1]:
            raise ValueError(
                f"attention_rollout: layer {layer} has T = {shape[-1]}, layer 0 T = {rollout.shape[-1]}"
            )
        if not torch.isfinite(pattern).all():
            raise ValueError(f"attention_rollout: layer {layer}'s pattern holds NaN or infinite values")
        if bool((pattern < 0).any()):
            raise ValueError(
                f"attention_rollout: layer {layer}'s pattern holds negative values; it must be attention "
                "weights (after softmax), not scores"
            )
        A = pattern.float().mean(1)  # (B, T, T)
        eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        A = attn_weight * A + (1.0 - attn_weight) * eye
        A = A / A.sum(-1, keepdim=True)
        rollout = A if rollout is None else A @ rollout
    assert rollout is not None  # patterns is not empty
    if query is None:
        return rollout
    T = rollout.shape[-1]
    if isinstance(query, bool) or not isinstance(query, int) or not -T <= query < T:
        raise ValueError(f"attention_rollout: query must be a position in [-{T}, {T}) or None; got {query!r}")
    return rollout[:, query]


def top_k_positions(importance: torch.Tensor, k: float, valid: torch.Tensor | None = None) -> torch.Tensor:
    """The top-k fraction of positions by ``importance`` (B, T), as a (B, T) bool mask: per example the
    ceil(k * n) highest-scoring of its n valid positions (at least one; ties go to the earlier position).
    Positions outside ``valid`` (B, T) bool are never selected."""
    if not 0.0 < k <= 1.0:
        raise ValueError(f"k must be a fraction in (0, 1], got {k}")
    _tensor("importance", importance, "top_k_positions", ndim=2, shape="(B, T)")
    if valid is None:
        valid = torch.ones_like(importance, dtype=torch.bool)
    if not isinstance(valid, torch.Tensor) or valid.shape != importance.shape or valid.dtype != torch.bool:
        got = (
            f"{valid.dtype} {tuple(valid.shape)}" if isinstance(valid, torch.Tensor) else type(valid).__name__
        )
        raise ValueError(
            f"top_k_positions: valid must be bool of importance's shape {tuple(importance.shape)}; got {got}"
        )
    scores = importance.float().masked_fill(~valid, float("-inf"))
    order = torch.sort(scores, dim=-1, descending=True, stable=True).indices  # (B, T)
    n_keep = torch.clamp(torch.ceil(k * valid.sum(-1).double()).long(), min=1)  # (B,)
    n_keep = torch.minimum(n_keep, valid.sum(-1))
    rank_selected = torch.arange(importance.shape[-1], device=importance.device) < n_keep[:, None]  # (B, T)
    return torch.zeros_like(valid).scatter(-1, order, rank_selected)


@torch.no_grad()
def faithfulness(
    prob_fn: ProbFn,
    inputs: torch.Tensor,
    importance: torch.Tensor,
    k: float = 0.2,
    valid: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Comprehensiveness and sufficiency (DeYoung et al. 2020, ERASER) at the top-k fraction of tokens.

    With f(x) the probability of the class predicted on the full input x (the argmax of ``prob_fn(inputs, all
    kept)``) and R the top-k% positions by ``importance`` (B, T) (e.g. attention mass or its rollout):

    - comprehensiveness = f(x) - f(x without R): large when the rationale was needed;
    - sufficiency = f(x) - f(R only): small (or negative) when the rationale alone suffices.

    Positions outside ``valid`` (e.g. special tokens, the query position) are never ranked and never removed.
    Returns (B,) tensors ``comprehensiveness``, ``sufficiency``, ``p_full``, ``p_without``, ``p_only`` and
    ``predicted`` (the class), and the ``rationale`` mask (B, T).
    """
    B, T = _tensor("importance", importance, "faithfulness", ndim=2, shape="(B, T)").shape
    if valid is None:
        valid = torch.ones(B, T, dtype=torch.bool, device=importance.device)
    rationale = top_k_positions(importance, k, valid)
    everything = torch.ones_like(valid)
    full = prob_fn(inputs, everything)  # (B, C)
    predicted = full.argmax(-1)

    def prob(keep: torch.Tensor) -> torch.Tensor:
        return prob_fn(inputs, keep).gather(-1, predicted[:, None]).squeeze(-1)

    p_full = full.gather(-1, predicted[:, None]).squeeze(-1)
    p_without = prob(~rationale)
    p_only = prob(rationale | ~valid)
    return {
        "comprehensiveness": p_full - p_without,
        "sufficiency": p_full - p_only,
        "p_full": p_full,
        "p_without": p_without,
        "p_only": p_only,
        "predicted": predicted,
        "rationale": rationale,
    }


def comprehensiveness(
    prob_fn: ProbFn, inputs: torch.Tensor, importance: torch.Tensor, k: float = 0.2, valid=None
) -> torch.Tensor:
    """f(x) - f(x without the top-k% tokens), (B,); see ``faithfulness``."""
    return faithfulness(prob_fn, inputs, importance, k, valid)["comprehensiveness"]


def sufficiency(
    prob_fn: ProbFn, inputs: torch.Tensor, importance: torch.Tensor, k: float = 0.2, valid=None
) -> torch.Tensor:
    """f(x) - f(only the top-k% tokens kept), (B,); see ``faithfulness``."""
    return faithfulness(prob_fn, inputs, importance, k, valid)["sufficiency"]


def _as_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=float).reshape(-1)


def _masses_and_probabilities(mass, true_prob, who: str) -> tuple[np.ndarray, np.ndarray]:
    """``mass`` and ``true_prob`` as equal-length arrays of numbers in [0, 1]: NaN (a diverged model) and
    values outside [0, 1] (a percentage for a fraction) are refused, naming how many, never binned or counted
    as "not confident"."""
    x, y = _as_numpy(mass), _as_numpy(true_prob)
    if x.shape != y.shape or not len(x):
        raise ValueError("mass and true_prob must be non-empty and of equal length")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError(
            f"{who}: {int(np.isnan(x).sum())} NaN masses and {int(np.isnan(y).sum())} NaN "
            "probabilities; every example needs both"
        )
    tol = 0.01  # the rounding of a mass summed in bf16
    outside = {n: int(((v < -tol) | (v > 1 + tol)).sum()) for n, v in (("masses", x), ("probabilities", y))}
    if any(outside.values()):
        counts = " and ".join(f"{k} {n}" for n, k in outside.items() if k)
        raise ValueError(f"{who}: {counts} lie outside [0, 1]; give fractions, not percentages")
    return x, y


def dtap_histogram(mass, true_prob, edges: Sequence[float] = DTAP_EDGES) -> np.ndarray:
    """Distinct Token Attention-Prediction (DTAP) heatmap of one model (Fig. 2): the 2-D histogram of
    x = attention mass on distinct (relevant) tokens and y = probability of the true label, with bin ``edges``
    on both axes ([0, .2, .4, .6, .8, 1]; the last bin includes 1), in % of the samples.

    Returns H (n_x, n_y) with H[i, j] the % of samples in x-bin i and y-bin j (``numpy.histogram2d``'s layout:
    plot ``H.T`` with the y axis pointing up). Samples outside [edges[0], edges[-1]] are not counted but still
    count in the denominator. Average the arrays of several seeds for the paper's mean heatmap.
    """
    x, y = _masses_and_probabilities(mass, true_prob, "dtap_histogram")
    bins = np.asarray(edges, dtype=float)
    if bins.ndim != 1 or len(bins) < 2 or not (np.diff(bins) > 0).all():
        raise ValueError(f"dtap_histogram: edges must be at least two increasing numbers; got {edges!r}")
    hist, _, _ = np.histogram2d(x, y, bins=[bins, bins])
    return 100.0 * hist / len(x)


def attention_confidence(mass, true_prob, mass_threshold: float = 0.1, prob_threshold: float = 0.1) -> float:
    """Attention confidence AC (inferred from the authors' SQuAD heatmaps): the % of examples whose attention
    mass on the relevant tokens is > ``mass_threshold`` AND whose true-answer probability is >
    ``prob_threshold`` (both 0.1)."""
    for name, value in (("mass_threshold", mass_threshold), ("prob_threshold", prob_threshold)):
        _fraction(name, value, "attention_confidence")
    x, y = _masses_and_probabilities(mass, true_prob, "attention_confidence")
    return float(100.0 * np.mean((x > mass_threshold) & (y > prob_threshold)))


def attention_confidence_model_correct(
    mass, true_prob, correct, mass_threshold: float = 0.1, prob_threshold: float = 0.1
) -> float:
    """ACMC, "attention confidence when the model is correct". The paper's definition was not found; ours is
    AC conditioned on correct predictions: among the examples the model predicts correctly (``correct`` True:
    argmax = true answer, or exact match for span answers), the % whose relevant-token attention mass is >
    ``mass_threshold`` and true-answer probability > ``prob_threshold``. NaN when no prediction is correct.

    (The unconditional variant, the % of all examples that are correct and attention-confident, is
    ``attention_confidence`` of the correct subset times the accuracy.)
    """
    x, y, flags = _as_numpy(mass), _as_numpy(true_prob), _as_numpy(correct)
    if not (x.shape == y.shape == flags.shape) or not len(x):
        raise ValueError("mass, true_prob and correct must be non-empty and of equal length")
    if not np.isin(flags, (0.0, 1.0)).all():
        raise ValueError("attention_confidence_model_correct: correct holds True/False (or 1/0) per example")
    ok = flags.astype(bool)
    if not ok.any():
        return math.nan
    return attention_confidence(x[ok], y[ok], mass_threshold, prob_threshold)


# --- Contribution weights (arXiv 2606.07604, docs/papers/contribution-weights.md): how much each weighted
# value term a_ij v~_j makes up of the attention output o_i, and the three baselines the paper ranks it
# against. Every measure takes ``pattern`` (B, H, T, T) and ``values`` (B, H, T, D), the per-head projected
# values v~^h_j = x_j W_V^h W_O^h in model space (``attnlab.hf.capture`` returns both), and returns
# (B, H, T, T) intra-head or, with ``inter_head=True``, (B, T, T) for the multi-head output. No
# (B, H, T, T, D) tensor of weighted terms is ever formed: <o_i, v~_j> for all (i, j) is one batched matmul
# per head, so memory is O(B H T^2 + B H T D).


def _check_pattern_values(pattern: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Shape and finiteness check; both as float32 or wider (bf16 inputs are promoted so the row sums stay
    exact)."""
    _tensor("pattern", pattern, "contribution weights", shape="(B, H, T, T)")
    _tensor("values", values, "contribution weights", shape="(B, H, T, D)")
    if pattern.ndim != 4 or values.ndim != 4 or pattern.shape[-1] != pattern.shape[-2]:
        shapes = f"{tuple(pattern.shape)}, {tuple(values.shape)}"
        raise ValueError(f"pattern must be (B, H, T, T) and values (B, H, T, D), got {shapes}")
    if pattern.shape[:2] != values.shape[:2] or pattern.shape[-1] != values.shape[2]:
        raise ValueError(
            f"pattern {tuple(pattern.shape)} and values {tuple(values.shape)} disagree on B, H or T"
        )
    for name, x in (("pattern", pattern), ("values", values)):
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            raise ValueError(f"contribution weights: {name} holds NaN or inf (a diverged model?)")
    dtype = torch.promote_types(torch.promote_types(pattern.dtype, values.dtype), torch.float32)
    return pattern.to(dtype), values.to(dtype)


def _inverse(x: torch.Tensor) -> torch.Tensor:
    """1 / x, and 0 where x = 0 (a zero output has no direction to project on)."""
    return torch.where(x > 0, 1.0 / torch.where(x > 0, x, torch.ones_like(x)), torch.zeros_like(x))


def attention_outputs(pattern: torch.Tensor, values: torch.Tensor, inter_head: bool = False) -> torch.Tensor:
    """The outputs the terms add up to (docs/papers/contribution-weights.md, "Definitions"): o^h_i = sum_j
    a^h_ij v~^h_j, (B, H, T, D), or with ``inter_head`` the multi-head output o_i = sum_h o^h_i, (B, T, D)
    (the layer's attention output without the bias of W_O, which no token contributes)."""
    pattern, values = _check_pattern_values(pattern, values)
    out = pattern @ values  # (B, H, T, D)
    return out.sum(1) if inter_head else out


def contribution_weights(
    pattern: torch.Tensor, values: torch.Tensor, inter_head: bool = False
) -> torch.Tensor:
    """Contribution weights (docs/papers/contribution-weights.md, "Definitions"):
    c_ij = <o_i, a_ij v~_j> / ||o_i||^2 = a_ij (||v~_j|| / ||o_i||) cos(o_i, v~_j), the share of the output
    o_i that the weighted value term of token j makes up along o_i's own direction.

    Intra-head (default): per head, o_i = o^h_i and the term a^h_ij v~^h_j; returns (B, H, T, T).
    Inter-head: o_i = sum_h o^h_i and the term T_ij = sum_h a^h_ij v~^h_j (token j's value through all heads);
    returns (B, T, T). Each row sums to 1 (sum_j T_ij = o_i); entries may be negative (a term pointing against
    o_i) or above 1; a row with o_i = 0 is all 0. Computed as a_ij <o_i, v~_j> with <o_i, v~_j> a batched
    (T, D) x (D, T) matmul per head: O(B H T^2) memory.
    """
    pattern, values = _check_pattern_values(pattern, values)
    o = attention_outputs(pattern, values, inter_head)  # (B, H, T, D) or (B, T, D)
    o_dot_v = (o.unsqueeze(1) if inter_head else o) @ values.transpose(-1, -2)  # (B, H, T, T): <o_i, v~_j>
    terms = pattern * o_dot_v  # (B, H, T, T): <o_i, a_ij v~_j>
    if inter_head:
        terms = terms.sum(1)  # (B, T, T)
    return terms * _inverse((o * o).sum(-1)).unsqueeze(-1)


def _term_norms(pattern: torch.Tensor, values: torch.Tensor, inter_head: bool) -> torch.Tensor:
    """||a^h_ij v~^h_j|| = a^h_ij ||v~^h_j||, (B, H, T, T), or for ``inter_head`` ||T_ij|| with
    T_ij = sum_h a^h_ij v~^h_j, (B, T, T), from ||T_ij||^2 = sum_{h,g} a^h_ij a^g_ij <v~^h_j, v~^g_j>: the
    (B, T, H, H) Gram matrix of each token's head values, one head pair row at a time (O(B T^2) memory)."""
    if not inter_head:
        return pattern * values.norm(dim=-1).unsqueeze(-2)  # (B, H, T, T)
    per_token = values.transpose(1, 2)  # (B, T, H, D)
    gram = (per_token @ per_token.transpose(-1, -2)).transpose(1, 2)  # (B, H, T, H): <v~^h_j, v~^g_j>
    sq = torch.zeros_like(pattern[:, 0])  # (B, T, T)
    for h in range(pattern.shape[1]):
        g_h = gram[:, h].transpose(1, 2).unsqueeze(-2)  # (B, H, 1, T): <v~^h_j, v~^g_j> over g, j
        sq = sq + pattern[:, h] * (pattern * g_h).sum(1)  # a^h_ij sum_g a^g_ij <v~^h_j, v~^g_j>
    return sq.clamp_min(0.0).sqrt()


def raw_attention(pattern: torch.Tensor, values: torch.Tensor, inter_head: bool = False) -> torch.Tensor:
    """Baseline 1, the attention weights a_ij (docs/papers/contribution-weights.md, "Definitions"):
    ``pattern`` itself (B, H, T, T), or with ``inter_head`` the head mean (1/H) sum_h a^h_ij, (B, T, T), so
    rows still sum to 1. ``values`` is only shape-checked (same signature as the other measures)."""
    pattern, values = _check_pattern_values(pattern, values)
    return pattern.mean(1) if inter_head else pattern


def value_weighted(pattern: torch.Tensor, values: torch.Tensor, inter_head: bool = False) -> torch.Tensor:
    """Baseline 2, value-weighted attention ||a_ij v~_j|| = a_ij ||v~_j|| (an inferred form,
    docs/papers/contribution-weights.md, "Inferred choices"; Kobayashi et al. 2020's norm-based analysis), in
    model-space units and not normalised per row.

    Inter-head: the norm of token j's term through all heads, ||sum_h a^h_ij v~^h_j|| (B, T, T), not the sum
    of the per-head norms. A per-row normalisation would not change any per-query ranking; divide by
    ``.sum(-1, keepdim=True)`` where a distribution is wanted."""
    pattern, values = _check_pattern_values(pattern, values)
    return _term_norms(pattern, values, inter_head)


def value_weighted_output_normalised(
    pattern: torch.Tensor, values: torch.Tensor, inter_head: bool = False
) -> torch.Tensor:
    """Baseline 3, value-weighted output-normalised attention a_ij ||v~_j|| / ||o_i|| (an inferred form,
    docs/papers/contribution-weights.md, "Inferred choices"): ``value_weighted`` divided by the norm of the
    output it is part of (head h's o^h_i, or the multi-head o_i with ``inter_head``); 0 where o_i = 0. It
    equals |c_ij| / |cos(o_i, v~_j)|: the contribution weight without the direction. Within one row it ranks
    tokens as ``value_weighted`` does; the two differ once rows or heads are compared or summed (e.g. a
    head-summed intra-head score)."""
    pattern, values = _check_pattern_values(pattern, values)
    o = attention_outputs(pattern, values, inter_head)  # (B, H, T, D) or (B, T, D)
    return _term_norms(pattern, values, inter_head) * _inverse(o.norm(dim=-1)).unsqueeze(-1)


#: The four importance measures in the paper's order of faithfulness (least faithful first).
IMPORTANCE_MEASURES: dict[str, Callable[..., torch.Tensor]] = {
    "raw": raw_attention,
    "value_weighted": value_weighted,
    "output_normalised": value_weighted_output_normalised,
    "contribution": contribution_weights,
}


# --- The routing and filtering structure of attention (arXiv 2605.18826, docs/papers/sd-routing.md): the
# entropy effective rank of a matrix, and the split of a head's bilinear form W into routing (antisymmetric)
# and filtering (symmetric) parts.


def effective_rank(matrix: torch.Tensor) -> torch.Tensor:
    """Entropy effective rank (Roy & Vetterli 2007; inferred, docs/papers/sd-routing.md, "Definitions") of
    each (m, n) matrix of ``matrix`` (..., m, n): exp(H(p)) with p = sigma / sum(sigma) over the singular
    values and H(p) = -sum p log p, returned as (...). A single rotation plane (two equal singular values) has
    effective rank 2, the n x n identity n; a zero matrix 0."""
    matrix = _matrices(matrix, "effective_rank")
    return _entropy_rank(torch.linalg.svdvals(matrix.double())).to(matrix.dtype)


def _entropy_rank(sigma: torch.Tensor) -> torch.Tensor:
    """``effective_rank`` from the singular values ``sigma`` (..., k)."""
    total = sigma.sum(-1, keepdim=True)
    p = sigma / torch.where(total > 0, total, torch.ones_like(total))
    entropy = -torch.special.xlogy(p, p).sum(-1)
    return torch.where(total.squeeze(-1) > 0, entropy.exp(), torch.zeros_like(entropy))


def _ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den where den > 0, else 0."""
    return torch.where(den > 0, num / torch.where(den > 0, den, 1.0), 0.0)


def _stable_rank(s2: torch.Tensor) -> torch.Tensor:
    return _ratio(s2.sum(-1), s2[..., 0])


def _participation_ratio(s2: torch.Tensor) -> torch.Tensor:
    return _ratio(s2.sum(-1).square(), s2.square().sum(-1))


def _top_plane_share(s2: torch.Tensor) -> torch.Tensor:
    return _ratio(s2[..., :2].sum(-1), s2.sum(-1))


def stable_rank(matrix: torch.Tensor) -> torch.Tensor:
    """Stable rank ||M||_F^2 / ||M||_2^2 = sum sigma^2 / max sigma^2 of each (m, n) matrix of ``matrix``
    (..., m, n), returned as (...) (docs/papers/sd-routing.md, "Rank measures"). Small singular values count
    by their energy, so unlike the entropy rank a long tail of tiny ones barely moves it. One rotation plane
    gives 2, the n x n identity n, a zero matrix 0."""
    matrix = _matrices(matrix, "stable_rank")
    return _stable_rank(torch.linalg.svdvals(matrix.double()).square()).to(matrix.dtype)


def participation_ratio(matrix: torch.Tensor) -> torch.Tensor:
    """Participation ratio (sum sigma^2)^2 / sum sigma^4 over the singular values of each (m, n) matrix of
    ``matrix`` (..., m, n), returned as (...) (docs/papers/sd-routing.md, "Rank measures"): the number of
    equally strong directions with the same spread of energy. One rotation plane gives 2, the n x n identity
    n, a zero matrix 0."""
    matrix = _matrices(matrix, "participation_ratio")
    return _participation_ratio(torch.linalg.svdvals(matrix.double()).square()).to(matrix.dtype)


def top_plane_share(matrix: torch.Tensor) -> torch.Tensor:
    """Share of the energy ||M||_F^2 held by the top rotation plane, (sigma_1^2 + sigma_2^2) / sum sigma^2,
    of each (m, n) matrix of ``matrix`` (..., m, n), returned as (...) (docs/papers/sd-routing.md, "Rank
    measures"). For an antisymmetric matrix the singular values come in equal pairs, one pair per rotation
    plane, so this is the energy of its strongest plane: 1 for a single plane, 2/n for a rotation spread
    evenly over n/2 planes. A zero matrix gives 0."""
    matrix = _matrices(matrix, "top_plane_share")
    return _top_plane_share(torch.linalg.svdvals(matrix.double()).square()).to(matrix.dtype)


def rank_measures(matrix: torch.Tensor) -> dict[str, torch.Tensor]:
    """``effective_rank``, ``stable_rank``, ``participation_ratio`` and ``top_plane_share`` of each matrix
    of ``matrix`` (..., m, n) from one singular value decomposition, each (...) in ``matrix``'s dtype, keyed
    by those names (float64 for an integer ``matrix``)."""
    matrix = _matrices(matrix, "rank_measures")
    sigma = torch.linalg.svdvals(matrix.double())
    s2 = sigma.square()
    out = {
        "effective_rank": _entropy_rank(sigma), "stable_rank": _stable_rank(s2),
        "participation_ratio": _participation_ratio(s2), "top_plane_share": _top_plane_share(s2),
    }  # fmt: skip
    return {k: v.to(matrix.dtype) for k, v in out.items()}


def routing_filtering(
    W: torch.Tensor, eigenvalues: torch.Tensor | None = None, rtol: float = 1e-6
) -> dict[str, torch.Tensor]:
    """Routing/filtering decomposition of bilinear forms ``W`` (..., n, n) (docs/papers/sd-routing.md,
    "Definitions"): the antisymmetric part R = (W - W^T) / 2 (routing) and the symmetric part
    F = (W + W^T) / 2 (filtering). Returns, each (...):

    - ``routing_energy`` ||R||_F^2 / ||W||_F^2 and ``filtering_energy`` ||F||_F^2 / ||W||_F^2 (R and F are
      orthogonal in the Frobenius inner product, so the two sum to 1);
    - ``n_unstable``: the number of eigenvalues of W with real part > ``rtol`` x max |eigenvalue| (a head
      with any is "dynamically unstable": x' = W x grows along them); ``max_real``: the largest real part.

    ``eigenvalues`` (..., k): the eigenvalues of W when already known (e.g. those of the d x d matrix
    W_K^T W_Q, which are the nonzero eigenvalues of the rank-d form W_Q W_K^T); by default
    ``torch.linalg.eigvals(W)``. Zero eigenvalues never count as unstable.
    """
    _tensor("W", W, "routing_filtering", shape="(..., n, n)")
    if W.ndim < 2 or W.shape[-1] != W.shape[-2]:
        raise ValueError(
            f"routing_filtering: W has shape {tuple(W.shape)}; expected square forms (..., n, n)"
        )
    if not bool(torch.isfinite(W).all()):
        raise ValueError("routing_filtering: W holds NaN or infinite values")
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 <= rtol < 1:
        raise ValueError(f"routing_filtering: rtol must be a number in [0, 1); got {rtol!r}")
    W = W.double()
    R, F_ = (W - W.transpose(-1, -2)) / 2, (W + W.transpose(-1, -2)) / 2
    total = W.square().sum((-2, -1))
    total = torch.where(total > 0, total, torch.ones_like(total))
    lam = torch.linalg.eigvals(W) if eigenvalues is None else eigenvalues.to(torch.complex128)
    scale = lam.abs().amax(-1, keepdim=True)
    return {
        "routing_energy": R.square().sum((-2, -1)) / total,
        "filtering_energy": F_.square().sum((-2, -1)) / total,
        "n_unstable": (lam.real > rtol * scale).sum(-1),
        "max_real": lam.real.amax(-1),
    }
