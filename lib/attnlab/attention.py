"""Causal attention variants behind one base class.

``CausalSelfAttention`` is standard softmax attention (SA). A variant overrides only the step that differs:

- ``ExclusiveSelfAttention`` (XSA, arXiv 2603.09078) overrides ``readout``, which turns the mixed values ``y``
  into the head output ``z`` before ``W_O``; its two controls (``RandomDirectionExclusion``,
  ``PreviousValueExclusion``) project out a direction not tied to the token's own value;
- ``SDAttention`` (S-D routing/filtering attention, arXiv 2605.18826) overrides ``fold``, which puts a learned
  per-head d x d interaction matrix L = S - D between queries and keys; ``SharedProjectionSDAttention`` uses
  one projection W per head for queries and keys, so the head's model-space form W^T L W is stable;
- ``LinearAttention`` (ELU+1 causal linear attention, Katharopoulos et al. 2020) overrides ``mix`` and
  ``mix_explicit``, which turn queries, keys and values into the mixed values ``y``.

What the rest of the library needs from a layer it asks the layer, never its kind: ``param_group`` (the
learning-rate group of each parameter, from the class's ``PARAM_GROUPS``), ``heads`` (the one place the head
outputs are formed, fused or explicit, capturing q, k, v, pattern, y, z and applying a per-head value scale
set by ``scaling_values``), ``values_additive`` (the output is a sum of per-token value terms),
``bilinear_scores`` and ``interaction_matrices`` (the scores are softmax(q^T L k / sqrt(d)), with L per
head) and ``routing_filtering`` (L is learned as S - D).

Each kind registers in ``ATTENTION_KINDS``. Shapes: B batch, T time, H query heads, H_kv key/value heads
(H % H_kv == 0), d head dim (per layer: ``GPTConfig.layer_head_dims``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

if TYPE_CHECKING:
    from attnlab.model import GPTConfig


def exclusive(y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """XSA projection (paper eq. 2 / Algorithm 1): z_i = y_i - (y_i . v_i) v_i / ||v_i||^2, per head.

    ``y`` is (B, H, T, d); ``v`` is (B, H, T, d) or (B, H_kv, T, d) with H a multiple of H_kv (grouped-query
    attention: each value head is broadcast over its group of H / H_kv query heads by a view, not copied).
    Where v_i = 0 the projection is the identity (``F.normalize`` clamps the norm), so no NaN appears.
    """
    B, H, T, d = y.shape
    H_kv = v.shape[1]
    if v.shape[0] != B or v.shape[2:] != (T, d) or H % H_kv:
        raise ValueError(f"exclusive(): y {tuple(y.shape)} and v {tuple(v.shape)} are incompatible")
    yg = y.reshape(B, H_kv, H // H_kv, T, d)  # (B, H_kv, g, T, d)
    vn = F.normalize(v, dim=-1).unsqueeze(2)  # (B, H_kv, 1, T, d), broadcast over the group
    z = yg - (yg * vn).sum(-1, keepdim=True) * vn
    return z.reshape(B, H, T, d)


def previous_values(v: torch.Tensor) -> torch.Tensor:
    """The previous token's value v_{i-1} at every position i, (B, H_kv, T, d); zero at i = 0, where
    ``exclusive`` then leaves y unchanged."""
    return F.pad(v, (0, 0, 1, 0))[:, :, :-1]


def rescaled_mix(pattern: torch.Tensor, v: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """y_i = sum_{j<=i} s_ij a_ij v_j: the values mixed by the pattern a (B, H, T, S) with every term rescaled
    by ``scale`` s (broadcastable to a; a bool tensor keeps where True), no renormalisation (arXiv 2606.07604:
    zeroing v~_j for query i is zeroing the term a_ij v~_j). ``v`` (B, H_kv, S, d), H a multiple of H_kv, is
    repeated to the query heads (head h reads value head h // (H / H_kv)); returns (B, H, T, d)."""
    s = scale.to(device=pattern.device, dtype=pattern.dtype)
    return (pattern * s) @ v.repeat_interleave(pattern.shape[1] // v.shape[1], dim=1)


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoFormer), rotating pairs (i, i + d/2) of each head's q and k."""

    cos: torch.Tensor  # (T, d/2) buffers
    sin: torch.Tensor

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"RoPE needs an even head dim, got {head_dim}")
        inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)  # (T, d/2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, H, T, d)
        T = x.shape[-2]
        cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class CausalSelfAttention(nn.Module):
    """Standard causal softmax self-attention (SA), with optional grouped-query heads and RoPE.

    Without capture the values are mixed by ``F.scaled_dot_product_attention``; when a ``capture`` dict is
    passed the same mix is computed explicitly so the pattern exists, and q, k, v, pattern, y and z are stored
    in it from that very forward pass (``heads``). ``layer`` selects this layer's head dim from
    ``cfg.layer_head_dims``.
    """

    kind = "sa"

    #: The learning-rate group (``GPT.param_group``) of each parameter, by its first name component: "qk" for
    #: the query and key projections, "ov" for the value and output projections; a variant adds its own
    #: parameters ("interaction": those of the query-key interaction L, which folding into W_Q absorbs).
    PARAM_GROUPS: ClassVar[dict[str, str]] = {"q_proj": "qk", "k_proj": "qk", "v_proj": "ov", "o_proj": "ov"}

    #: True where the output is o_i = sum_h sum_{j<=i} a^h_ij v~^h_j + b_O (``readout`` is the identity), so
    #: the layer has per-head projected values v~^h_j = v^h_j W_O^h (arXiv 2606.07604); False where the head
    #: output depends on the query beyond the pattern (XSA).
    values_additive: ClassVar[bool] = True

    #: True where the scores are the bilinear form softmax(q_i^T L k_j / sqrt(d)) (``interaction_matrices``),
    #: which a model-space form x_i^T W x_j can replace; False for linear attention (no softmax of q . k).
    bilinear_scores: ClassVar[bool] = True

    #: True where L is learned as S - D, with ``routing()`` (S) and ``filtering()`` (diag D) and the
    #: parameters ``routing_a`` and ``filtering_delta`` (S-D attention, arXiv 2605.18826).
    routing_filtering: ClassVar[bool] = False

    #: A per-head scale s of the value terms a_ij v_j, broadcastable to the pattern (B, H, T, T), set for the
    #: duration of ``scaling_values``; None: the layer's own output.
    value_scale: torch.Tensor | None = None

    def __init__(self, cfg: GPTConfig, layer: int = 0) -> None:
        super().__init__()
        self.n_head, self.n_kv_head = cfg.n_head, cfg.kv_heads
        self.head_dim = cfg.layer_head_dims[layer]
        self.q_proj = nn.Linear(cfg.d_model, self.n_head * self.head_dim, bias=cfg.bias)
        self.k_proj = nn.Linear(cfg.d_model, self.n_kv_head * self.head_dim, bias=cfg.bias)
        self.v_proj = nn.Linear(cfg.d_model, self.n_kv_head * self.head_dim, bias=cfg.bias)
        self.o_proj = nn.Linear(self.n_head * self.head_dim, cfg.d_model, bias=cfg.bias)
        max_len = cfg.block_size + cfg.n_sink
        self.rope = RotaryEmbedding(self.head_dim, max_len) if cfg.pos == "rope" else None

    def forward(self, x: torch.Tensor, capture: dict | None = None) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        q = self.fold(q)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        z = self.heads(q, k, v, capture, self.value_scale)  # (B, H, T, d)
        return self.o_proj(z.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))

    def heads(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        capture: dict | None = None,
        value_scale: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The head outputs z (B, H, T, d) from the (folded, rotated) queries q and the keys and values k, v.

        Without ``capture`` and ``value_scale``: z = readout(mix(q, k, v), v), by the fused kernel. Otherwise
        the mix is explicit (``mix_explicit``), so the pattern a exists; with ``value_scale`` s (broadcastable
        to (B, H, T, T)) every value term is rescaled before the sum (``rescaled_mix``). A ``capture`` dict
        receives q, k, v, the layer's own pattern (before any scale), and the y and z this call used, so
        o_proj of z is the layer's output.
        """
        if capture is None and value_scale is None:
            y, pattern = self.mix(q, k, v), None
        else:
            y, pattern = self.mix_explicit(q, k, v)
            if value_scale is not None:
                y = rescaled_mix(pattern, v, value_scale)  # (B, H, T, d)
        z = self.readout(y, v)  # (B, H, T, d)
        if capture is not None:
            capture.update(q=q, k=k, v=v, pattern=pattern, y=y, z=z)
        return z

    @contextlib.contextmanager
    def scaling_values(self, scale: torch.Tensor | None) -> Iterator[None]:
        """Within the block, every forward pass rescales the value terms by ``scale`` (``heads``'
        ``value_scale``; None leaves the layer alone)."""
        self.value_scale = scale
        try:
            yield
        finally:
            del self.value_scale  # back to the class default, None

    def param_group(self, name: str) -> str:
        """The learning-rate group of the parameter ``name`` of this module (e.g. ``"q_proj.weight"``), as
        declared by ``PARAM_GROUPS``; a parameter no group declares is an error."""
        top = name.split(".", 1)[0]
        if top not in self.PARAM_GROUPS:
            raise KeyError(f"{type(self).__name__} declares no learning-rate group for parameter {name!r}")
        return self.PARAM_GROUPS[top]

    def interaction_matrices(self) -> torch.Tensor:
        """The per-head interaction L (H, d, d) through which the queries meet the keys (``fold``: q_i ->
        L^T q_i), so a softmax head's score is q_i^T L k_j / sqrt(d): the identity for SA."""
        eye = torch.eye(self.head_dim, device=self.q_proj.weight.device, dtype=self.q_proj.weight.dtype)
        return eye.expand(self.n_head, -1, -1)

    def fold(self, q: torch.Tensor) -> torch.Tensor:
        """The queries that meet the keys in q . k (identity for SA; S-D folds its interaction matrix in)."""
        return q

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """y_i = sum_{j<=i} a_ij v_j with a = softmax(q k^T / sqrt(d) + causal mask), by the fused kernel."""
        return F.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=self.n_kv_head != self.n_head
        )

    def mix_explicit(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """y_i = sum_{j<=i} a_ij v_j with a = softmax(q k^T / sqrt(d) + causal mask); returns (y, a)."""
        B, H, T, d = q.shape
        g = H // self.n_kv_head
        qg = q.reshape(B, self.n_kv_head, g, T, d)  # (B, H_kv, g, T, d)
        scores = qg @ k.unsqueeze(2).transpose(-1, -2) / math.sqrt(d)  # (B, H_kv, g, T, T)
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        pattern = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = pattern @ v.unsqueeze(2)  # (B, H_kv, g, T, d)
        return y.reshape(B, H, T, d), pattern.reshape(B, H, T, T)

    def readout(self, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Head output z from the mixed values y (identity for SA)."""
        return y


class ExclusiveSelfAttention(CausalSelfAttention):
    """Exclusive self-attention (XSA): SA followed by removing each head's own-value direction, so z_i depends
    on v_i beyond the pattern (no per-token value terms)."""

    kind = "xsa"
    values_additive = False

    def readout(self, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return exclusive(y, v)


def random_direction_seed(run_seed: int, layer: int) -> int:
    """The seed of ``RandomDirectionExclusion``'s direction in ``layer`` of a run seeded ``run_seed``: a
    digest of both (distinct pairs give unrelated generators), in the range ``torch.Generator`` accepts."""
    digest = hashlib.sha256(f"xsa-random {run_seed} {layer}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


class RandomDirectionExclusion(CausalSelfAttention):
    """XSA's control (not in the paper): the same rank-1 projection as XSA, z_i = y_i - (y_i . u) u, but of a
    fixed random unit direction u per head instead of the token's own value v_i. If XSA's gain comes from
    removing the own-value direction, this control does not share it; if any rank-1 projection helps, it
    does. u is drawn once per layer from its own generator, seeded by the run's seed (the seed of torch's
    global generator, which training sets before it builds the model) and the layer index, so each seed
    draws its own directions while the model's other weights are initialised exactly as for SA and XSA; it is
    stored as a buffer (a cached model loads it back), not trained."""

    kind = "xsa-random"
    values_additive = False
    direction: torch.Tensor  # (H, d) buffer

    def __init__(self, cfg: GPTConfig, layer: int = 0) -> None:
        super().__init__(cfg, layer)
        gen = torch.Generator().manual_seed(random_direction_seed(torch.initial_seed(), layer))
        u = torch.randn(self.n_head, self.head_dim, generator=gen)
        self.register_buffer("direction", F.normalize(u, dim=-1))  # (H, d)

    def readout(self, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, T, d = y.shape
        u = self.direction.to(y.dtype)[None, :, None, :].expand(B, H, T, d)  # (B, H, T, d), a view
        return exclusive(y, u)


class PreviousValueExclusion(CausalSelfAttention):
    """XSA's second control (not in the paper): project out the previous token's value v_{i-1} instead of
    the own value v_i (z_0 = y_0): a direction of the same kind and scale as XSA's, from the same values,
    but not the token's own."""

    kind = "xsa-prev"
    values_additive = False

    def readout(self, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return exclusive(y, previous_values(v))


#: softplus^-1(1): the filtering parameter delta at which D = softplus(delta) is the identity.
SOFTPLUS_INV_ONE = math.log(math.e - 1.0)


class SDAttention(CausalSelfAttention):
    """S-D attention (routing/filtering attention, arXiv 2605.18826; parameterisation inferred,
    docs/papers/sd-routing.md): per head h the score is

        score_ij = (W_Q x_i)^T L_h (W_K x_j) / sqrt(d),    L_h = S_h - D_h,
        S_h = A_h - A_h^T (antisymmetric: routing),          D_h = diag(softplus(delta_h)) > 0 (filtering),

    so every eigenvalue of L_h has real part <= 0 (x^* L x = x^* S x - x^* D x, the first term imaginary, the
    second real and negative). Choices left open (docs/papers/sd-routing.md, "Inferred choices"):

    - the query and key projections are separate (``q_proj``, ``k_proj`` as in SA); with separate projections
      the constraint holds for L in head space, not for the model-space form W_Q^T L W_K;
    - initialisation: A = 0 and softplus(delta) = 1, so L = -I at the start and the head is SA with negated
      keys (the sign is immaterial: the key projection is random); S grows from its gradient G - G^T;
    - cost: L is folded into the queries, q'_i = L^T q_i (one d x d product per head), and the fused SDPA
      kernel mixes q' with the keys, since q'_i . k_j = q_i^T L k_j. Folding into the queries rather than the
      keys works unchanged with grouped-query heads, where one key head serves several query heads with their
      own L;
    - RoPE (``pos="rope"``) is applied after the fold: score = (R_i L^T q_i)^T (R_j k_j) = q_i^T L R_{j-i}
      k_j depends on i - j only, as in SA, and at offset 0 the interaction is exactly L. (Rotating before the
      fold, R_i^T L R_j, would not be relative unless L commuted with every rotation.) The experiments of
      ``attnlab.papers.sd_routing`` use learned absolute positions, as GPT-2-style models do, so that the
      bilinear form of every head is position free.

    ``routing_a`` (A, (H, d, d)) and ``filtering_delta`` (delta, (H, d)) form the ``interaction`` parameter
    group (``GPT.param_group``), so their learning rate can be scaled apart: they start at O(1) while the
    projections start at O(0.02), and Adam moves every parameter by about the learning rate per step, so at
    one shared rate L changes relatively ~50x slower than W_Q, W_K. The optimizer decays them like every
    matrix. With capture, ``q`` holds the folded, rotated queries, those the pattern is made of:
    pattern = softmax(q k^T / sqrt(d)).
    """

    kind = "sd"
    PARAM_GROUPS = {
        **CausalSelfAttention.PARAM_GROUPS,
        "routing_a": "interaction",
        "filtering_delta": "interaction",
    }
    routing_filtering = True

    def __init__(self, cfg: GPTConfig, layer: int = 0) -> None:
        super().__init__(cfg, layer)
        H, d = self.n_head, self.head_dim
        self.routing_a = nn.Parameter(torch.zeros(H, d, d))
        self.filtering_delta = nn.Parameter(torch.full((H, d), SOFTPLUS_INV_ONE))

    def routing(self) -> torch.Tensor:
        """S = A - A^T, (H, d, d)."""
        return self.routing_a - self.routing_a.transpose(-1, -2)

    def filtering(self) -> torch.Tensor:
        """The diagonal of D, softplus(delta), (H, d)."""
        return F.softplus(self.filtering_delta)

    def interaction_matrices(self) -> torch.Tensor:
        """L = S - D per head, (H, d, d)."""
        return self.routing() - torch.diag_embed(self.filtering())

    def fold(self, q: torch.Tensor) -> torch.Tensor:
        return q @ self.interaction_matrices()  # (B, H, T, d): row q_i^T L = (L^T q_i)^T


class SharedProjectionSDAttention(SDAttention):
    """S-D attention with one projection per head for queries and keys (this project's variant, for the
    review of arXiv 2605.18826's model-space reading): score_ij = (W x_i)^T (S - D) (W x_j) / sqrt(d), so the
    head's model-space form W^T L W has the symmetric part -W^T D W, negative semidefinite, and its routing
    and filtering are W^T S W and W^T D W exactly. The query projection is the key projection (``q_proj`` is
    ``k_proj``, one parameter, counted once); needs as many key/value heads as query heads."""

    kind = "sd-shared"

    def __init__(self, cfg: GPTConfig, layer: int = 0) -> None:
        super().__init__(cfg, layer)
        if self.n_kv_head != self.n_head:
            raise ValueError(
                f"sd-shared needs n_kv_head == n_head (one projection per head); got {self.n_kv_head} and "
                f"{self.n_head}"
            )
        self.q_proj = self.k_proj


def elu1(x: torch.Tensor) -> torch.Tensor:
    """The linear-attention feature map phi(x) = elu(x) + 1 > 0 (Katharopoulos et al. 2020)."""
    return F.elu(x) + 1.0


def causal_linear_attention(
    phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, chunk_size: int = 64, eps: float = 1e-6
) -> torch.Tensor:
    """y_i = phi(q_i)^T sum_{j<=i} phi(k_j) v_j^T / (phi(q_i)^T sum_{j<=i} phi(k_j)), all (B, H, T, d), by
    a causal prefix sum over chunks of ``chunk_size`` positions: within a chunk the masked C x C product,
    across chunks the running state sum_j phi(k_j) v_j^T (d x d) and normaliser sum_j phi(k_j), so no T x T
    matrix is formed. T need not be a multiple of the chunk (the tail is padded, and padding only follows the
    real positions, which a causal sum never reads). The denominator is clamped at ``eps``."""
    B, H, T, d = phi_q.shape
    C = min(chunk_size, T)
    n = -(-T // C)
    pad = n * C - T
    if pad:
        phi_q, phi_k, v = (F.pad(t, (0, 0, 0, pad)) for t in (phi_q, phi_k, v))
    qc, kc, vc = (t.reshape(B, H, n, C, t.shape[-1]) for t in (phi_q, phi_k, v))  # (B, H, n, C, d)
    # Sums across chunks accumulate in float32, so a bf16 run does not lose the early chunks to rounding.
    kv = (kc.transpose(-1, -2) @ vc).float()  # (B, H, n, d, d_v): each chunk's sum of phi(k_j) v_j^T
    state = (kv.cumsum(2) - kv).to(qc.dtype)  # (B, H, n, d, d_v): the sum over all earlier chunks
    k_sum = kc.float().sum(3)  # (B, H, n, d)
    norm = (k_sum.cumsum(2) - k_sum).to(qc.dtype)  # (B, H, n, d)
    mask = torch.ones(C, C, dtype=torch.bool, device=phi_q.device).tril()
    scores = (qc @ kc.transpose(-1, -2)).masked_fill(~mask, 0.0)  # (B, H, n, C, C): within the chunk
    num = scores @ vc + qc @ state  # (B, H, n, C, d_v)
    den = scores.sum(-1) + (qc * norm.unsqueeze(3)).sum(-1)  # (B, H, n, C)
    y = num / den.clamp_min(eps).unsqueeze(-1)
    return y.reshape(B, H, n * C, -1)[:, :, :T]


def causal_linear_attention_quadratic(
    phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same mix as ``causal_linear_attention`` by its masked T x T form: a_ij = phi(q_i) . phi(k_j) /
    sum_{l<=i} phi(q_i) . phi(k_l) for j <= i, y = a v; returns (y, a), (B, H, T, d) and (B, H, T, T)."""
    T = phi_q.shape[-2]
    mask = torch.ones(T, T, dtype=torch.bool, device=phi_q.device).tril()
    scores = (phi_q @ phi_k.transpose(-1, -2)).masked_fill(~mask, 0.0)  # (B, H, T, T)
    pattern = scores / scores.sum(-1, keepdim=True).clamp_min(eps)
    return pattern @ v, pattern


class LinearAttention(CausalSelfAttention):
    """ELU+1 causal linear attention (Katharopoulos et al. 2020), the kind S-D attention's early layers are
    replaced by (arXiv 2605.18826, "linearisation"): y_i = phi(q_i)^T sum_{j<=i} phi(k_j) v_j^T /
    (phi(q_i)^T sum_{j<=i} phi(k_j)) with phi = elu + 1, no 1/sqrt(d) scale, no softmax.

    Same projections as SA (so a softmax layer's weights load into it); with ``pos="rope"`` q and k are
    rotated before phi. Training uses the chunked prefix sum (``causal_linear_attention``); with capture the
    mix is computed in its explicit T x T form and ``pattern`` holds the normalised weights a_ij (rows sum to
    1), for the same analyses as a softmax pattern. Grouped key/value heads are repeated to the query heads.
    """

    kind = "linear"
    bilinear_scores = False
    chunk_size = 64

    def _features(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = self.n_head // self.n_kv_head
        return elu1(q), elu1(k.repeat_interleave(g, dim=1)), v.repeat_interleave(g, dim=1)  # (B, H, T, d)

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return causal_linear_attention(*self._features(q, k, v), chunk_size=self.chunk_size)

    def mix_explicit(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return causal_linear_attention_quadratic(*self._features(q, k, v))


ATTENTION_KINDS: dict[str, type[CausalSelfAttention]] = {
    cls.kind: cls
    for cls in (
        CausalSelfAttention,
        ExclusiveSelfAttention,
        RandomDirectionExclusion,
        PreviousValueExclusion,
        SDAttention,
        SharedProjectionSDAttention,
        LinearAttention,
    )
}
