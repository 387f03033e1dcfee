"""Metrics of "Faster query-key learning sharpens attention" on hand-made examples with known answers."""

import math

import numpy as np
import pytest
import torch

from attnlab.metrics import (
    attention_confidence,
    attention_confidence_model_correct,
    attention_mass,
    attention_rollout,
    comprehensiveness,
    dtap_histogram,
    faithfulness,
    sufficiency,
    top_k_positions,
)
from attnlab.papers.qk_speed.circuits import make_circuit


def test_attention_mass():
    attn = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    relevant = torch.tensor([[True, False, True, False], [False, False, False, False]])
    torch.testing.assert_close(attention_mass(attn, relevant), torch.tensor([0.4, 0.0]))
    with pytest.raises(ValueError):
        attention_mass(attn, relevant[:, :3])


def naive_rollout(patterns, a):
    """Loops: head mean, a A + (1 - a) I, row-normalise, then R = A'_L ... A'_1 by explicit sums."""
    B, _, T, _ = patterns[0].shape
    out = torch.zeros(B, T, T)
    for b in range(B):
        R = None
        for p in patterns:
            A = [
                [sum(p[b, h, i, j] for h in range(p.shape[1])) / p.shape[1] for j in range(T)]
                for i in range(T)
            ]
            A = [[a * A[i][j] + (1 - a) * (i == j) for j in range(T)] for i in range(T)]
            A = [[A[i][j] / sum(A[i]) for j in range(T)] for i in range(T)]
            if R is None:
                R = A
            else:
                R = [[sum(A[i][k] * R[k][j] for k in range(T)) for j in range(T)] for i in range(T)]
        out[b] = torch.tensor(R)
    return out


def test_attention_rollout_against_loops_and_a_hand_value():
    g = torch.Generator().manual_seed(0)
    patterns = [torch.rand(2, 3, 4, 4, generator=g) for _ in range(3)]  # rows not normalised: A' renormalises
    full = attention_rollout(patterns, attn_weight=0.6, query=None)
    torch.testing.assert_close(full, naive_rollout(patterns, 0.6), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(attention_rollout(patterns, 0.6), full[:, -1])
    torch.testing.assert_close(full.sum(-1), torch.ones(2, 4))
    # one layer, one head, T = 2: A = [[1, 0], [0.5, 0.5]], a = 0.5 -> A' = [[1, 0], [0.25, 0.75]]
    A = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]])
    torch.testing.assert_close(attention_rollout([A], 0.5), torch.tensor([[0.25, 0.75]]))
    # two such layers: R = A' A' -> query row [0.25 + 0.75 * 0.25, 0.75^2]
    torch.testing.assert_close(attention_rollout([A, A], 0.5), torch.tensor([[0.4375, 0.5625]]))


def test_top_k_positions():
    importance = torch.tensor([[0.1, 0.5, 0.3, 0.5, 0.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
    valid = torch.tensor([[True] * 5, [True, True, True, True, False]])
    # row 0: ceil(0.4 * 5) = 2 -> positions 1 and 3 (tie 0.5 / 0.5); row 1: ceil(0.4 * 4) = 2 valid -> 3, 2
    mask = top_k_positions(importance, 0.4, valid)
    assert mask.tolist() == [[False, True, False, True, False], [False, False, True, True, False]]
    # ties go to the earlier position; at least one position
    assert top_k_positions(torch.tensor([[0.5, 0.9, 0.9]]), 0.01).tolist() == [[False, True, False]]
    with pytest.raises(ValueError):
        top_k_positions(importance, 0.0)


def test_comprehensiveness_and_sufficiency_on_a_toy_model():
    """p(class 0 | kept positions) = 0.2 + 0.6 * (kept evidence) / (total evidence); class 1 gets the rest."""
    evidence = torch.tensor([[4.0, 1.0, 0.0, 3.0, 2.0]])

    def prob_fn(inputs, keep):
        p0 = 0.2 + 0.6 * (inputs * keep).sum(-1) / inputs.sum(-1)
        return torch.stack([p0, 1 - p0], -1)

    out = faithfulness(prob_fn, evidence, importance=evidence, k=0.4)  # top 2 of 5: positions 0 and 3
    assert out["rationale"].tolist() == [[True, False, False, True, False]]
    assert out["predicted"].tolist() == [0]  # p0 = 0.8 on the full input
    torch.testing.assert_close(out["p_full"], torch.tensor([0.8]))
    torch.testing.assert_close(out["comprehensiveness"], torch.tensor([0.8 - (0.2 + 0.6 * 3 / 10)]))
    torch.testing.assert_close(out["sufficiency"], torch.tensor([0.8 - (0.2 + 0.6 * 7 / 10)]))
    torch.testing.assert_close(comprehensiveness(prob_fn, evidence, evidence, 0.4), out["comprehensiveness"])
    torch.testing.assert_close(sufficiency(prob_fn, evidence, evidence, 0.4), out["sufficiency"])
    # a position outside `valid` is never ranked and never removed
    valid = torch.tensor([[False, True, True, True, True]])
    out = faithfulness(prob_fn, evidence, evidence, k=0.25, valid=valid)  # ceil(0.25 * 4) = 1: position 3
    assert out["rationale"].tolist() == [[False, False, False, True, False]]
    torch.testing.assert_close(out["p_only"], torch.tensor([0.2 + 0.6 * 7 / 10]))


def test_faithfulness_with_a_circuit_masking_attention():
    model = make_circuit("caco", seed=0)
    tokens = torch.randint(0, 50, (3, 10), generator=torch.Generator().manual_seed(1))

    def prob_fn(inputs, keep):
        return model(inputs, keep).logits.softmax(-1)

    with torch.no_grad():
        attn = model(tokens).attn
    out = faithfulness(prob_fn, tokens, attn, k=0.2)
    assert out["rationale"].sum(-1).tolist() == [2, 2, 2]
    with torch.no_grad():
        sub = model(tokens, ~out["rationale"]).logits.softmax(-1)
    expected = out["p_full"] - sub.gather(-1, out["predicted"][:, None]).squeeze(-1)
    torch.testing.assert_close(out["comprehensiveness"], expected)


def test_dtap_histogram_bins_and_percentages():
    mass = [0.05, 0.2, 0.95, 1.0, 0.5]
    prob = [0.1, 0.99, 1.0, 0.0, 0.59]
    H = dtap_histogram(mass, prob)
    expected = np.zeros((5, 5))
    expected[0, 0] = 20  # (0.05, 0.1)
    expected[1, 4] = 20  # 0.2 opens the second bin
    expected[4, 4] = 20  # 1.0 falls in the last bin on both axes
    expected[4, 0] = 20
    expected[2, 2] = 20
    np.testing.assert_allclose(H, expected)
    assert H.sum() == pytest.approx(100.0)
    np.testing.assert_allclose(dtap_histogram(torch.tensor(mass), torch.tensor(prob)), expected)


def test_attention_confidence_and_acmc():
    mass = [0.5, 0.05, 0.3, 0.11, 0.1]
    prob = [0.9, 0.9, 0.05, 0.2, 0.5]
    correct = [True, True, False, False, True]
    # confident: examples 0 and 3 (0.1 is not > 0.1)
    assert attention_confidence(mass, prob) == pytest.approx(40.0)
    # among the correct examples 0, 1, 4 only example 0 is confident
    assert attention_confidence_model_correct(mass, prob, correct) == pytest.approx(100 / 3)
    assert math.isnan(attention_confidence_model_correct(mass, prob, [False] * 5))
    assert attention_confidence(mass, prob, mass_threshold=0.0, prob_threshold=0.0) == 100.0
