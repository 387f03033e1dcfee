"""Similarity-bias metrics (XSA Fig. 1) on inputs whose answers are known."""

import pandas as pd
import pytest
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


# Rank measures (S-D routing review): values computed by hand from the singular values.


def _plane(n: int, strength: float = 1.0) -> torch.Tensor:
    """An n x n antisymmetric matrix with one rotation plane: singular values (s, s, 0, ...)."""
    m = torch.zeros(n, n, dtype=torch.float64)
    m[0, 1], m[1, 0] = strength, -strength
    return m


def test_rank_measures_of_one_rotation_plane_and_the_identity():
    from attnlab.metrics import participation_ratio, stable_rank, top_plane_share

    for n in (2, 5, 16):
        assert stable_rank(_plane(n, 3.0)).item() == pytest.approx(2.0)
        assert participation_ratio(_plane(n, 3.0)).item() == pytest.approx(2.0)
        assert top_plane_share(_plane(n, 3.0)).item() == pytest.approx(1.0)
        eye = torch.eye(n, dtype=torch.float64)
        assert stable_rank(eye).item() == pytest.approx(n)
        assert participation_ratio(eye).item() == pytest.approx(n)
        assert top_plane_share(eye).item() == pytest.approx(min(2, n) / n)


def test_rank_measures_on_hand_computed_singular_values():
    from attnlab.metrics import participation_ratio, stable_rank, top_plane_share

    # singular values 2, 1, 1, 0: sigma^2 = 4, 1, 1, 0
    m = torch.diag(torch.tensor([1.0, -2.0, 0.0, 1.0], dtype=torch.float64))
    assert stable_rank(m).item() == pytest.approx(6 / 4)
    assert participation_ratio(m).item() == pytest.approx(36 / 18)
    assert top_plane_share(m).item() == pytest.approx(5 / 6)
    # a non-square matrix with singular values 4 and 3
    r = torch.tensor([[4.0, 0.0, 0.0], [0.0, 3.0, 0.0]])
    assert stable_rank(r).item() == pytest.approx(25 / 16)
    assert participation_ratio(r).item() == pytest.approx(625 / 337)
    assert top_plane_share(r).item() == pytest.approx(1.0)


def test_rank_measures_on_batches_keep_the_batch_shape_and_dtype_and_give_zero_for_zero():
    from attnlab.metrics import participation_ratio, stable_rank, top_plane_share

    batch = torch.stack(
        [_plane(4), torch.eye(4, dtype=torch.float64), torch.zeros(4, 4, dtype=torch.float64)]
    )
    batch = batch.float().view(1, 3, 4, 4).expand(2, 3, 4, 4)
    for fn, expected in (
        (stable_rank, [2.0, 4.0, 0.0]),
        (participation_ratio, [2.0, 4.0, 0.0]),
        (top_plane_share, [1.0, 0.5, 0.0]),
    ):
        out = fn(batch)
        assert out.shape == (2, 3) and out.dtype == torch.float32
        torch.testing.assert_close(out, torch.tensor([expected, expected]))


def test_entropy_rank_counts_a_small_tail_that_stable_rank_ignores():
    from attnlab.metrics import effective_rank, stable_rank

    # one strong plane plus seven weak ones at 1 % of its strength
    m = _plane(16, 1.0)
    for i in range(2, 16, 2):
        m[i, i + 1], m[i + 1, i] = 0.01, -0.01
    assert stable_rank(m).item() < 2.01
    assert effective_rank(m).item() > 2.3


def test_rank_measures_in_one_pass_equal_the_separate_functions():
    from attnlab.metrics import (
        effective_rank,
        participation_ratio,
        rank_measures,
        stable_rank,
        top_plane_share,
    )

    m = torch.randn(3, 2, 6, 6, generator=torch.Generator().manual_seed(0))
    out = rank_measures(m)
    for name, fn in (
        ("effective_rank", effective_rank),
        ("stable_rank", stable_rank),
        ("participation_ratio", participation_ratio),
        ("top_plane_share", top_plane_share),
    ):
        torch.testing.assert_close(out[name], fn(m))
        assert out[name].shape == (3, 2)
