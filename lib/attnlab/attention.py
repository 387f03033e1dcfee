"""Causal attention variants behind one base class.

``CausalSelfAttention`` is standard softmax attention (SA). A variant overrides only the step that differs:
``ExclusiveSelfAttention`` (XSA, arXiv 2603.09078) overrides ``readout``, which turns the mixed values ``y``
into the head output ``z`` before ``W_O``. Later variants (S-D routing, linear attention) plug in through
``mix`` / ``readout`` and register in ``ATTENTION_KINDS``.

Shapes: B batch, T time, H query heads, H_kv key/value heads (H % H_kv == 0), d head dim.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

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


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoFormer), rotating pairs (i, i + d/2) of each head's q and k."""

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
    in it from that very forward pass.
    """

    kind = "sa"

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head, self.n_kv_head, self.head_dim = cfg.n_head, cfg.kv_heads, cfg.head_dim
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
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)
        if capture is None:
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, enable_gqa=self.n_kv_head != self.n_head
            )
            pattern = None
        else:
            y, pattern = self.mix_explicit(q, k, v)
        z = self.readout(y, v)  # (B, H, T, d)
        out = self.o_proj(z.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))
        if capture is not None:
            capture.update(q=q, k=k, v=v, pattern=pattern, y=y, z=z)
        return out

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
    """Exclusive self-attention (XSA): SA followed by removing each head's own-value direction."""

    kind = "xsa"

    def readout(self, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return exclusive(y, v)


ATTENTION_KINDS: dict[str, type[CausalSelfAttention]] = {
    cls.kind: cls for cls in (CausalSelfAttention, ExclusiveSelfAttention)
}
