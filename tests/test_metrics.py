"""Similarity-bias metrics (XSA Fig. 1) on inputs whose answers are known."""

import pandas as pd
import torch

from attnlab.metrics import similarity_bias
from attnlab.model import GPT, GPTConfig
from attnlab.papers.xsa.diagnostics import cache_bytes_per_sequence, similarity_bias_by_layer


def test_similarity_bias_on_a_hand_built_layer():
    T, d = 4, 2
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]]).view(1, 1, T, d)
    pattern = torch.eye(T).view(1, 1, T, T)  # every token attends to itself only
    y = pattern @ v
    z = torch.tensor([[0.0, 1.0]] * T).view(1, 1, T, d)
    out = similarity_bias({"v": v, "pattern": pattern, "y": y, "z": z})
    # causal pairs j < i: (1,0)=0, (2,0)=1, (2,1)=0, (3,0)=-1, (3,1)=0, (3,2)=-1 -> mean -1/6
    torch.testing.assert_close(out["cos_vv"], torch.tensor([[-1 / 6]]))
    torch.testing.assert_close(out["a_ii"], torch.tensor([[1.0]]))
    torch.testing.assert_close(out["a_ii_uniform"], torch.tensor([[(1 / 2 + 1 / 3 + 1 / 4) / 3]]))
    torch.testing.assert_close(out["cos_yv"], torch.tensor([[1.0]]))
    # z vs v at positions 1..3: cos = 1, 0, 0
    torch.testing.assert_close(out["cos_zv"], torch.tensor([[1 / 3]]))
    # |z_i . v_i| / (|y_i| |v_i|) at positions 1..3: 1, 0, 0 -> max 1
    torch.testing.assert_close(out["zv_residual"], torch.tensor([[1.0]]))


def test_residual_is_zero_for_the_exclusive_projection_even_where_z_vanishes():
    from attnlab.attention import exclusive

    g = torch.Generator().manual_seed(0)
    v = torch.randn(1, 2, 6, 8, generator=g)
    y = torch.randn(1, 2, 6, 8, generator=g)
    y[0, 0, 3] = 2.5 * v[0, 0, 3]  # y parallel to v: z is rounding noise there
    out = similarity_bias({"v": v, "pattern": torch.eye(6).expand(1, 2, 6, 6), "y": y, "z": exclusive(y, v)})
    assert out["zv_residual"].max() < 1e-6
    z_wrong = y - 0.5 * (y * v).sum(-1, keepdim=True) / (v * v).sum(-1, keepdim=True) * v  # half removed
    wrong = similarity_bias({"v": v, "pattern": torch.eye(6).expand(1, 2, 6, 6), "y": y, "z": z_wrong})
    assert wrong["zv_residual"].min() > 1e-3


def test_grouped_value_heads_are_matched_to_their_query_heads():
    v = torch.randn(1, 1, 5, 4)
    y = torch.cat([v, -v], dim=1)  # head 0 copies its value, head 1 negates it
    pattern = torch.eye(5).expand(1, 2, 5, 5)
    out = similarity_bias({"v": v, "pattern": pattern, "y": y, "z": y})
    torch.testing.assert_close(out["cos_yv"], torch.tensor([[1.0, -1.0]]))


def test_by_layer_uses_the_models_own_capture():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=3, d_model=32, n_head=2, head_dim=8, attn="xsa", block_size=16))
    frame = similarity_bias_by_layer(model, torch.randint(0, 256, (5, 16)), batch_size=2)
    assert len(frame) == 3 * 5 * 2
    assert sorted(frame["sequence"].unique()) == list(range(5))
    assert frame["cos_zv"].abs().max() < 1e-5  # XSA output is orthogonal to the own value
    assert (frame["cos_yv"].abs() > 1e-3).any()


def test_by_layer_fits_its_batches_to_the_memory_budget():
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=16)
    model = GPT(cfg)
    tokens = torch.randint(0, 256, (4, 16))
    _, cache = model.run_with_cache(tokens[:1])
    per_sequence = sum(t.numel() * t.element_size() for layer in cache for t in layer.values())
    assert cache_bytes_per_sequence(cfg, 16) == per_sequence
    calls = []
    original = model.run_with_cache
    model.run_with_cache = lambda idx: calls.append(len(idx)) or original(idx)
    small = similarity_bias_by_layer(model, tokens, memory_gb=2.5 * per_sequence / 2**30)
    assert calls == [2, 2]  # two sequences fit the budget, not three
    whole = similarity_bias_by_layer(model, tokens)
    assert calls[2:] == [4]
    keys = ["layer", "sequence", "head"]
    pd.testing.assert_frame_equal(
        small.sort_values(keys, ignore_index=True),
        whole.sort_values(keys, ignore_index=True),
        atol=1e-6,
        rtol=0,
    )
