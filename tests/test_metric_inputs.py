"""Bad inputs to the public metrics are refused with a message that says what was expected, never answered
with a number of the wrong shape or a silent 0 (cases found by a probe of new users' mistakes)."""

import math

import pytest
import torch

from attnlab.metrics import attention_confidence, attention_confidence_model_correct, attention_rollout


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
