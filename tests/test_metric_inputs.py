"""Bad inputs to the public metrics are refused with a message that says what was expected, never answered
with a number of the wrong shape or a silent 0 (cases found by a probe of new users' mistakes)."""

import math

import pytest
import torch

from attnlab.metrics import (
    attention_confidence,
    attention_confidence_model_correct,
    attention_mass,
    attention_rollout,
    contribution_weights,
    dtap_histogram,
    effective_rank,
    faithfulness,
    per_query_head,
    rank_measures,
    routing_filtering,
    similarity_bias,
    stable_rank,
    top_k_positions,
)


def test_rollout_refuses_a_pattern_without_its_head_axis():
    with pytest.raises(ValueError, match=r"shape \(2, 3\); expected \(B, H, T, T\)"):
        attention_rollout([torch.rand(2, 3)])
    maps = torch.softmax(torch.randn(2, 4, 4), -1)  # (B, T, T): no head axis
    with pytest.raises(ValueError, match=r"shape \(2, 4, 4\).*pattern\[:, None\]"):
        attention_rollout([maps])
    # with the head axis added, one head's map is its own head mean
    out = attention_rollout([maps[:, None]], attn_weight=1.0, query=None)
    torch.testing.assert_close(out, maps)


def test_rollout_refuses_layers_of_different_lengths_and_non_finite_maps():
    a = torch.softmax(torch.randn(1, 2, 3, 3), -1)
    b = torch.softmax(torch.randn(1, 2, 4, 4), -1)
    with pytest.raises(ValueError, match="layer 1 has T = 4, layer 0 T = 3"):
        attention_rollout([a, b])
    a[0, 0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="layer 0's pattern holds NaN"):
        attention_rollout([a])


def test_attention_confidence_refuses_nan_instead_of_counting_it_as_not_confident():
    with pytest.raises(ValueError, match="1 NaN masses and 1 NaN probabilities"):
        attention_confidence([math.nan], [math.nan])
    with pytest.raises(ValueError, match="0 NaN masses and 1 NaN probabilities"):
        attention_confidence([0.5, 0.5], [0.5, math.nan])
    with pytest.raises(ValueError, match="NaN"):
        attention_confidence_model_correct([0.5, math.nan], [0.5, 0.5], [True, True])
    assert attention_confidence([0.5, 0.05], [0.5, 0.5]) == pytest.approx(50.0)


P4 = torch.softmax(torch.randn(2, 3, 5, 5), -1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # counted twice, or a sum of scores that are no weights
        (lambda: attention_mass(torch.full((1, 4), 0.25), torch.full((1, 4), 2)), "bool, or 0 and 1 only"),
        (
            lambda: attention_mass(torch.tensor([[3.0, -2.0, 5.0]]), torch.ones(1, 3).bool()),
            "apply softmax first",
        ),
        (lambda: attention_mass([[0.5, 0.5]], [[True, False]]), "attn must be a torch.Tensor"),
        (lambda: attention_rollout(P4), "a list of \\(B, H, T, T\\) tensors, one per layer"),
        (lambda: attention_rollout([P4], attn_weight=2.0), r"attn_weight must be a number in \[0, 1\]"),
        (lambda: attention_rollout([P4], attn_weight=-0.5), r"attn_weight must be a number in \[0, 1\]"),
        (lambda: attention_rollout([P4], attn_weight=math.nan), r"attn_weight must be a number in \[0, 1\]"),
        (lambda: attention_rollout([P4], query=10), r"query must be a position in \[-5, 5\)"),
        (lambda: attention_rollout([P4.numpy()]), "layer 0's pattern must be a torch.Tensor"),
        (lambda: attention_rollout([torch.randn(2, 3, 5, 5)]), "negative values.*not scores"),
        (lambda: top_k_positions(torch.rand(5), 0.5), r"importance has shape \(5,\); expected \(B, T\)"),
        (
            lambda: top_k_positions(torch.rand(2, 5), 0.5, torch.ones(2, 4, dtype=torch.bool)),
            "valid must be bool",
        ),
        (
            lambda: faithfulness(lambda x, keep: torch.rand(2, 2), torch.zeros(2, 5), torch.rand(5)),
            "importance has shape",
        ),
        (lambda: dtap_histogram([math.nan, 0.5], [0.5, 0.5]), "1 NaN masses"),
        (lambda: dtap_histogram([50.0, 90.0], [0.5, 0.9]), r"2 masses lie outside \[0, 1\]"),
        (
            lambda: dtap_histogram([0.1], [0.2], edges=[1.0, 0.5, 0.0]),
            "edges must be at least two increasing",
        ),
        (
            lambda: attention_confidence([0.5], [0.5], mass_threshold=math.nan),
            "mass_threshold must be a number",
        ),
        (lambda: attention_confidence([0.5], [0.5], prob_threshold=10.0), "prob_threshold must be a number"),
        (lambda: attention_confidence([5.0, 0.05], [0.5, 0.5]), r"1 masses lie outside \[0, 1\]"),
        (lambda: attention_confidence_model_correct([0.5, 0.5], [0.5, 0.5], [0.2, 0.7]), "True/False"),
        (lambda: contribution_weights(P4.numpy(), P4.numpy()), "pattern must be a torch.Tensor"),
        (lambda: effective_rank(torch.rand(5)), r"effective_rank: matrix has shape \(5,\)"),
        (lambda: effective_rank(torch.full((3, 3), math.nan)), "effective_rank: matrix holds NaN"),
        (lambda: routing_filtering(torch.rand(3, 4)), "expected square forms"),
        (lambda: routing_filtering(torch.full((3, 3), math.nan)), "W holds NaN"),
        (lambda: routing_filtering(torch.eye(3), rtol=-1.0), r"rtol must be a number in \[0, 1\)"),
        (
            lambda: per_query_head(torch.rand(1, 3, 2, 4), 4),
            "4 query heads is not a multiple of 3 value heads",
        ),
        (lambda: similarity_bias({"pattern": P4, "y": P4, "v": P4}), r"lack \['z'\]"),
    ],
)
def test_the_metrics_refuse_inputs_they_would_misread(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_rank_of_an_integer_matrix_is_not_truncated():
    m = torch.tensor([[2, 0], [0, 1]])
    assert effective_rank(m).item() == pytest.approx(effective_rank(m.double()).item())
    assert 1 < effective_rank(m).item() < 2  # 1.89, not 1
    assert stable_rank(m).item() == pytest.approx(1.25)
    assert rank_measures(m)["top_plane_share"].item() == pytest.approx(1.0)
    assert effective_rank(m.float()).dtype == torch.float32  # a float matrix keeps its dtype


def test_nan_attention_or_values_are_refused_not_propagated():
    nan_row = torch.tensor([[0.5, float("nan")]])
    with pytest.raises(ValueError, match="attention_mass: attn holds NaN or inf"):
        attention_mass(nan_row, torch.tensor([[True, False]]))
    pattern = torch.full((1, 1, 2, 2), 0.5)
    values = torch.ones(1, 1, 2, 3)
    values[0, 0, 1, 0] = float("inf")
    with pytest.raises(ValueError, match="contribution weights: values holds NaN or inf"):
        contribution_weights(pattern, values)
    assert torch.isfinite(contribution_weights(pattern, torch.ones(1, 1, 2, 3))).all()
