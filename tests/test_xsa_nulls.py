"""XSA Fig. 1's sink-aware nulls on pretrained models (attnlab.papers.xsa.pretrained.head_baselines): the
shuffled-key pattern keeps what it must, and every new column equals a naive loop over positions."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlab.papers.xsa.pretrained import COLUMNS, head_baselines, shuffle_non_sink


def _pattern(B: int, H: int, T: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, H, T, T, generator=g)
    return scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -torch.inf).softmax(-1)


def test_shuffle_keeps_the_sink_the_mask_and_the_weights() -> None:
    a = _pattern(2, 3, 9)
    s = shuffle_non_sink(a, torch.Generator().manual_seed(1))
    assert torch.equal(s[..., 0], a[..., 0]) and (s.triu(1) == 0).all()
    assert torch.allclose(s[..., 1:].sort(-1).values, a[..., 1:].sort(-1).values)
    assert not torch.equal(s, a)  # the non-sink keys moved
    again = shuffle_non_sink(a, torch.Generator().manual_seed(1))
    assert torch.equal(s, again)  # seeded


def test_every_column_matches_a_loop() -> None:
    B, H, T, d = 2, 2, 7, 5
    a = _pattern(B, H, T, seed=3)
    v = torch.randn(B, H, T, d, generator=torch.Generator().manual_seed(4))
    y = a @ v
    out = head_baselines({"pattern": a, "v": v, "y": y}, far=3, generator=torch.Generator().manual_seed(0))
    assert set(out) == set(COLUMNS)

    def cos(x: torch.Tensor, z: torch.Tensor) -> float:
        return float(F.cosine_similarity(x, z, dim=0))

    b, h = 1, 1
    # without the sink every measure starts at i = 2 (at i = 1 the token is the only non-sink key)
    nosink = [cos(y[b, h, i] - a[b, h, i, 0] * v[b, h, 0], v[b, h, i]) for i in range(2, T)]
    uniform = [cos(v[b, h, 1 : i + 1].mean(0), v[b, h, i]) for i in range(2, T)]
    prev = [cos(y[b, h, i] - a[b, h, i, 0] * v[b, h, 0], v[b, h, i - 1]) for i in range(2, T)]
    pairs = [cos(v[b, h, i], v[b, h, j]) for i in range(T) for j in range(1, i)]
    ys = shuffle_non_sink(a, torch.Generator().manual_seed(0)) @ v  # the same draw head_baselines made
    shuffled = [cos(ys[b, h, i], v[b, h, i]) for i in range(1, T)]
    shuffled_nosink = [cos(ys[b, h, i] - a[b, h, i, 0] * v[b, h, 0], v[b, h, i]) for i in range(2, T)]
    ratio = [float(a[b, h, i, i] / (1 - a[b, h, i, 0])) for i in range(2, T)]
    prev_ratio = [float(a[b, h, i, i - 1] / (1 - a[b, h, i, 0])) for i in range(2, T)]
    expect = {
        "cos_yv_nosink": sum(nosink) / len(nosink),
        "cos_uniform_nosink": sum(uniform) / len(uniform),
        "cos_prev_nosink": sum(prev) / len(prev),
        "cos_vv_nosink": sum(pairs) / len(pairs),
        "cos_shuffled": sum(shuffled) / len(shuffled),
        "cos_shuffled_nosink": sum(shuffled_nosink) / len(shuffled_nosink),
        "a_prev": float(sum(a[b, h, i, i - 1] for i in range(1, T)) / (T - 1)),
        "a_sink": float(a[b, h, 1:, 0].mean()),
        "a_ii_nosink": sum(ratio) / len(ratio),
        "a_ii_uniform_nosink": sum(1 / i for i in range(2, T)) / (T - 2),
        "a_prev_nosink": sum(prev_ratio) / len(prev_ratio),
    }
    for name, value in expect.items():
        assert abs(float(out[name][b, h]) - value) < 1e-5, name


def test_a_head_on_the_sink_and_itself_is_aligned_once_the_sink_is_removed() -> None:
    # half the attention on key 0, half on the token itself: with the sink removed, y_i is v_i's direction
    T = 6
    a = torch.zeros(1, 1, T, T)
    a[..., 0, 0] = 1.0
    for i in range(1, T):
        a[..., i, 0] = a[..., i, i] = 0.5
    v = torch.randn(1, 1, T, 4, generator=torch.Generator().manual_seed(2))
    out = head_baselines({"pattern": a, "v": v, "y": a @ v}, far=2)
    assert abs(float(out["cos_yv_nosink"]) - 1.0) < 1e-5 and float(out["cos_yv"]) < 0.99
    assert abs(float(out["a_ii_nosink"]) - 1.0) < 1e-6 and abs(float(out["a_sink"]) - 0.5) < 1e-6
