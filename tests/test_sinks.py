"""Sink analyses: the factors multiply back to the contribution weights, the fit finds a known vertex, and the
cone and cosine summaries on hand-made inputs."""

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.metrics import contribution_weights
from attnlab.papers.contribution_weights.sinks import (
    binned_minimum,
    cone_concentration,
    contribution_factors,
    convex_fit,
    decomposition,
    position_value_cosines,
    sink_rate_and_norm,
    sink_value_cosines,
)


def random_layer(B=2, H=3, T=6, D=5):
    torch.manual_seed(0)
    scores = torch.randn(B, H, T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1), torch.randn(B, H, T, D)


def test_factors_multiply_to_the_contribution():
    pattern, values = random_layer()
    f = contribution_factors(pattern, values)
    product = f["attention"] * f["norm_ratio"] * f["cosine"]
    assert torch.allclose(product, contribution_weights(pattern, values), atol=1e-5)
    assert torch.allclose(f["contribution"], product, atol=1e-5)


def test_decomposition_separates_sink_and_tail():
    pattern, values = random_layer()
    d = decomposition(pattern, values)
    f = contribution_factors(pattern, values)
    assert d.loc["sink", "mean_attention"] == pytest.approx(pattern[..., 1:, 0].mean().item(), rel=1e-5)
    T = pattern.shape[-1]
    tail = torch.tensor([[1 <= j <= i for j in range(T)] for i in range(T)])
    assert d.loc["tail", "mean_contribution"] == pytest.approx(
        f["contribution"][..., tail].mean().item(), rel=1e-5
    )


def test_convex_fit_recovers_the_toy_vertex():
    # ||a v_s + (1 - a) u||^2 with v_s anti-aligned to u: minimum at <u, u - v_s> / ||u - v_s||^2
    u, v_s = np.array([1.0, 0.2]), np.array([-0.5, 0.1])
    a = np.linspace(0, 1, 50)
    norm = np.linalg.norm(a[:, None] * v_s + (1 - a[:, None]) * u, axis=1)
    fit = convex_fit(a, norm)
    expected = u @ (u - v_s) / ((u - v_s) @ (u - v_s))
    assert (
        fit["p2"] > 0 and fit["vertex"] == pytest.approx(expected, rel=1e-6) and fit["r2"] == pytest.approx(1)
    )
    assert 0 < fit["vertex"] < 1


def test_sink_value_cosines_and_rates():
    values = torch.zeros(1, 1, 3, 2)
    values[0, 0, 0] = torch.tensor([1.0, 0.0])
    values[0, 0, 1] = torch.tensor([-2.0, 0.0])
    values[0, 0, 2] = torch.tensor([0.0, 3.0])
    assert torch.allclose(sink_value_cosines(values), torch.tensor([-1.0, 0.0]))
    pattern = torch.tensor([[[[1.0, 0, 0], [0.25, 0.75, 0], [0.5, 0.25, 0.25]]]])
    rate, norm = sink_rate_and_norm(pattern, values)
    assert torch.allclose(rate, torch.tensor([[0.25, 0.5]]))
    assert torch.allclose(norm[0, 0], torch.tensor(1.25))  # ||0.25 (1, 0) + 0.75 (-2, 0)||


def test_cone_is_one_for_parallel_outputs_and_lower_for_spread_ones():
    same = torch.ones(2, 1, 4, 3)
    assert cone_concentration(same).item() == pytest.approx(1.0)
    spread = torch.randn(2, 1, 50, 3)
    assert cone_concentration(spread).item() < 0.9


def test_position_cosines_of_the_sink_average_its_cosines_per_window():
    _, values = random_layer(B=2, H=3, T=6, D=5)
    sink = position_value_cosines(values, 0)
    per_window = sink_value_cosines(values).view(2, -1).mean(-1)
    assert torch.allclose(sink, per_window, atol=1e-6)
    # position 3: cos(v~_3, v~_j) over heads and j in {1, 2, 4, 5}, by a loop
    v = torch.nn.functional.normalize(values, dim=-1)
    pairs = [(h, j) for h in range(3) for j in (1, 2, 4, 5)]
    expected = torch.stack(
        [torch.stack([v[b, h, 3] @ v[b, h, j] for h, j in pairs]).mean() for b in range(2)]
    )
    assert torch.allclose(position_value_cosines(values, 3), expected, atol=1e-6)
    with pytest.raises(ValueError):
        position_value_cosines(values, 6)


def test_binned_minimum_finds_an_interior_dip_and_rejects_monotone_or_shallow_curves():
    rng = np.random.default_rng(0)
    rate = rng.uniform(0, 1, 500)
    v_shape = binned_minimum(rate, 1.0 + (rate - 0.6) ** 2)
    assert v_shape["interior"] and v_shape["argmin"] in (5, 6)
    assert v_shape["left_excess"] > 0.05 and v_shape["right_excess"] > 0.05
    assert not binned_minimum(rate, 1.0 + rate)["interior"]  # the minimum is the first bin
    assert not binned_minimum(rate, 1.0 - rate)["interior"]  # the last
    shallow = binned_minimum(rate, 1.0 + 0.01 * (rate - 0.5) ** 2)  # interior, but the ends are < 5% above it
    assert shallow["argmin"] in (4, 5) and not shallow["interior"]
    assert len(v_shape["bin_rate"]) == 10 and np.all(np.diff(v_shape["bin_rate"]) > 0)
    with pytest.raises(ValueError):
        binned_minimum(rate[:15], rate[:15])


def _fits(heads: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for h in range(heads):
        rate = rng.uniform(0, 1, 200)
        norm = np.sqrt((rate - 0.4) ** 2 + 0.1) + 0.01 * rng.normal(size=200)
        rows.append({"layer": 0, "head": h, **convex_fit(rate, norm), **binned_minimum(rate, norm),
                     "rate_sample": rate, "norm_sample": norm})  # fmt: skip
    return pd.DataFrame(rows)


def test_sink_rate_figure_labels_every_line():
    import matplotlib.pyplot as plt

    from attnlab.papers.contribution_weights import plots

    fits = _fits()
    fig = plots.sink_rate_vs_norm(fits, n_heads=2)
    head, hist = fig.get_axes()[0], fig.get_axes()[-1]
    labels = [t.get_text() for t in head.get_legend().get_texts()]
    assert set(labels) == {
        "binned mean ||o|| (the test)",
        "quadratic fit of ||o||^2, square root (picture only)",
        "the fit's minimum (vertex)",
        "queries (sample)",
    }
    assert head.get_title().endswith(": interior minimum")  # the toy dip at 0.4 is interior
    assert {t.get_text() for t in hist.get_legend().get_texts()} == {
        "minimum inside (0, 1)", "heads (clipped to +-0.5)"}  # fmt: skip
    plt.close(fig)


def test_sink_cosine_figure_shows_the_near_orthogonal_margin():
    import matplotlib.pyplot as plt

    from attnlab.papers.contribution_weights import plots
    from attnlab.papers.contribution_weights.claims import ANTI_ALIGNMENT

    cosines = pd.DataFrame({"layer": [0, 1], "sample": [[-0.1, 0.05], [0.0, -0.02]]})
    positions = pd.DataFrame([{"layer": layer, "window": w, "position": p, "cosine": -0.04 if p == 0 else 0.2}
                              for layer in (0, 1) for w in (0, 1) for p in (0, 5)])  # fmt: skip
    fig = plots.sink_cosines(cosines, positions)
    right = fig.get_axes()[1]
    labels = [t.get_text() for t in right.get_legend().get_texts()]
    assert f"near-orthogonal, |cos| < {ANTI_ALIGNMENT:g}" in labels and "sink (p = 0)" in labels
    plt.close(fig)
