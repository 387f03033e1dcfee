"""Sink analyses: the factors multiply back to the contribution weights, the fit finds a known vertex, and the
cone and cosine summaries on hand-made inputs."""

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.metrics import contribution_weights
from attnlab.papers.contribution_weights.sinks import (
    analyse,
    binned_minimum,
    cone_concentration,
    contribution_factors,
    convex_fit,
    decomposition,
    negative_terms,
    output_residual,
    position_value_cosines,
    recording_outputs,
    rounding_bound,
    row_sums,
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
    labels = [t.get_text() for t in fig.legends[0].get_texts()]  # one legend, under the panels
    assert set(labels) == {
        "binned mean ||o|| (the test)",
        plots.FIT_LABEL,
        "the fit's minimum (vertex)",
        "queries (sample)",
        "minimum inside (0, 1)",
        "heads (clipped to +-0.5)",
    }
    assert head.get_title().endswith(": interior minimum")  # the toy dip at 0.4 is interior
    assert hist.get_xlabel().startswith("sink rate")
    # the fit is drawn over the sampled rates only, and never as a flat zero where the quadratic is negative
    [fit] = [line for line in head.lines if line.get_label() == plots.FIT_LABEL]
    rate = head.collections[0].get_offsets()[:, 0]  # the head's sampled queries
    assert fit.get_xdata().min() >= rate.min() and fit.get_xdata().max() <= rate.max()
    assert not (fit.get_ydata() == 0).any()
    plt.close(fig)


def test_sink_cosine_figure_draws_zero_and_no_margin():
    """Anti-alignment is judged by sign and against ordinary positions: the figure draws 0, not the post-hoc
    +-0.1 band that once judged it."""
    import matplotlib.pyplot as plt

    from attnlab.papers.contribution_weights import plots

    cosines = pd.DataFrame({"layer": [0, 1], "sample": [[-0.1, 0.05], [0.0, -0.02]]})
    positions = pd.DataFrame([{"layer": layer, "window": w, "position": p, "cosine": -0.04 if p == 0 else 0.2}
                              for layer in (0, 1) for w in (0, 1) for p in (0, 5)])  # fmt: skip
    fig = plots.sink_cosines(cosines, positions)
    for ax in fig.get_axes():
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "orthogonal (cos 0)" in labels and not [x for x in labels if "near-orthogonal" in x]
        assert not [p for p in ax.patches if p.get_label() and "margin" in p.get_label()]
    assert "sink (p = 0)" in [t.get_text() for t in fig.get_axes()[1].get_legend().get_texts()]
    plt.close(fig)


# --- the definition's two properties ----------------------------------------------------------------------


@pytest.mark.parametrize("inter_head", [False, True])
def test_rows_of_c_sum_to_one_within_the_rounding_bound(inter_head):
    pattern, values = random_layer(B=2, H=3, T=16, D=8)
    got = row_sums(pattern, values, inter_head)
    bound = rounding_bound(16, 3, 8)
    assert got["rows"] == (2 * 16 if inter_head else 2 * 3 * 16) and got["zero_rows"] == 0
    assert 0 <= got["max_scaled"] <= got["max_deviation"] < bound  # kappa >= 1
    # a row whose terms nearly cancel (a sink pointing against the rest): its deviation may grow, by at most
    # its condition number, which the scaled deviation divides out
    values[:, :, 0] = -values[:, :, 1:].sum(2) * 0.999  # (B, H, D): token 0 against the others
    pattern = torch.zeros_like(pattern)
    pattern[..., 0] = 0.5
    pattern[..., 1:] = 0.5 / 15
    pattern = pattern.tril()
    pattern = pattern / pattern.sum(-1, keepdim=True)
    cancelled = row_sums(pattern, values, inter_head)
    assert cancelled["max_scaled"] < bound
    # a zero output (every value 0) has no direction: its rows are counted apart, not as deviations
    zero = row_sums(pattern, torch.zeros_like(values), inter_head)
    assert zero["zero_rows"] == zero["rows"] and np.isnan(zero["max_deviation"])


def test_rounding_bound_grows_with_every_sum_and_the_roundoff():
    assert rounding_bound(48, 9, 576) == pytest.approx(2 * (48 + 9 + 576) * 2.0**-24)
    assert rounding_bound(48, 9, 576, torch.float64) < 1e-12 < rounding_bound(48, 9, 576)


def test_negative_terms_count_as_a_loop_does():
    pattern, values = random_layer(B=2, H=3, T=7, D=4)
    got = negative_terms(pattern, values)
    c = contribution_weights(pattern, values)
    terms = [
        c[b, h, i, j].item() for b in range(2) for h in range(3) for i in range(1, 7) for j in range(i + 1)
    ]
    assert got["terms"] == len(terms) and got["negative"] == sum(x < 0 for x in terms) > 0
    assert got["rows"] == 2 * 3 * 6 and got["min"] == pytest.approx(min(terms))
    assert got["destructive"] == pytest.approx(sum(-x for x in terms if x < 0), rel=1e-5)
    # every value alike: every term points along its output, nothing negative
    same = negative_terms(pattern, values[:, :, :1].expand_as(values).contiguous())
    assert same["negative"] == 0 and same["destructive"] == 0


def _biased_llama(layers: int = 2):
    """A tiny Llama whose projections have biases (Qwen2 has them on q, k and v), W_O's included."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=64, attention_bias=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.bias.normal_()
            layer.self_attn.v_proj.bias.normal_()
    return model


def test_a_layers_own_output_is_the_sum_of_its_terms_and_the_bias_of_w_o():
    """W_V's bias rides inside every v~_j (the rows of c still sum to 1); W_O's is no token's term: the
    layer's own output is the terms' sum plus it, and the sum without it misses it."""
    from attnlab.hf import capture

    model = _biased_llama()
    ids = torch.randint(0, 64, (2, 9))
    with recording_outputs(model) as outputs:
        _, records = capture(model, ids)
    assert sorted(outputs) == sorted(records) == [0, 1]
    for layer, r in records.items():
        got = output_residual(r, outputs[layer])
        assert got["max_residual"] < 1e-5 and got["bias_share"] > 0.1
        unbiased = output_residual({**r, "o_bias": None}, outputs[layer])
        assert unbiased["max_residual"] > 0.1 and unbiased["bias_share"] == 0
        assert row_sums(r["pattern"], r["values"])["max_scaled"] < rounding_bound(9, 4, 32)
    with recording_outputs(model) as outputs:
        pass
    model(input_ids=ids)
    assert outputs == {}  # the hooks are gone after the block


def test_analyse_keeps_each_windows_nll_in_both_states():
    """The sink-norm removal's perplexity per window (the claim's units) is the summed NLL capture_nll gives
    each window, clean and with the sink's value terms zeroed; the pooled perplexity is theirs pooled."""
    from attnlab.hf import TextModel, capture_nll, value_scale

    model = _biased_llama(layers=2)
    ids = torch.randint(0, 64, (5, 12))
    result = analyse(TextModel(model), ids, batch_size=2, controls=(5, 6), seed=0)
    nll = pd.DataFrame(result["nll"])
    assert list(nll["window"]) == list(range(5)) and set(nll["tokens"]) == {11}
    clean, _ = capture_nll(model, ids)
    sink = value_scale(torch.arange(12).eq(0).expand_as(ids))
    removed, _ = capture_nll(model, ids, scales=dict.fromkeys(range(2), sink))
    assert np.allclose(nll["clean"], clean.numpy(), rtol=1e-5)
    assert np.allclose(nll["sink removed"], removed.numpy(), rtol=1e-5)
    assert result["ppl"]["clean"] == pytest.approx(np.exp(clean.sum().item() / (5 * 11)), rel=1e-5)
    identity, negative = pd.DataFrame(result["identity"]), pd.DataFrame(result["negative"])
    assert list(identity["layer"]) == list(negative["layer"]) == [0, 1]
    assert (identity["rows"] == 5 * 4 * 12).all() and (identity["inter_rows"] == 5 * 12).all()
    assert (identity["max_scaled"] < identity["bound"]).all() and (identity["bias_share"] > 0).all()
    assert (identity["max_residual"] < 1e-5).all()  # the capture reproduces the model's own output
    assert (negative["terms"] == 5 * 4 * sum(range(2, 13))).all()  # causal terms of queries 1..11
    assert (negative["share"] == negative["negative"] / negative["terms"]).all()
