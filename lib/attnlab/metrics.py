"""Metrics computed from the attention intermediates a model captured in its own forward pass."""

from __future__ import annotations

import pandas as pd
import torch
import torch.nn.functional as F

from attnlab.model import GPT


def _per_query_head(v: torch.Tensor, n_head: int) -> torch.Tensor:
    """Broadcast (B, H_kv, T, d) value heads to the (B, H, T, d) query heads they serve."""
    return v.repeat_interleave(n_head // v.shape[1], dim=1)


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
    pattern, y, z = layer["pattern"], layer["y"], layer["z"]  # (B, H, T, T), (B, H, T, d) x2
    B, H, T, _ = y.shape
    v = _per_query_head(layer["v"], H)  # (B, H, T, d)
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


@torch.no_grad()
def similarity_bias_by_layer(model: GPT, tokens: torch.Tensor, batch_size: int = 32) -> pd.DataFrame:
    """``similarity_bias`` for every layer over sequences ``tokens`` (N, T): one row per (layer, sequence,
    head) with a column per metric; aggregate with ``groupby("layer")``."""
    model.eval()
    device = next(model.parameters()).device
    frames = []
    for start in range(0, len(tokens), batch_size):
        _, cache = model.run_with_cache(tokens[start : start + batch_size].to(device))
        for layer, captured in enumerate(cache):
            values = similarity_bias(captured)
            B, H = values["cos_vv"].shape
            frame = pd.DataFrame({k: t.flatten().cpu().numpy() for k, t in values.items()})
            frame.insert(0, "head", list(range(H)) * B)
            frame.insert(0, "sequence", [start + b for b in range(B) for _ in range(H)])
            frame.insert(0, "layer", layer)
            frames.append(frame)
    model.train()
    return pd.concat(frames, ignore_index=True)
