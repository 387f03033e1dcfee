"""Faithfulness interventions: the ranking against a naive per-query loop, and the curves and multiple-choice
scores against direct computations on a small GPT."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attnlab.data.tasks import MultipleChoice, tie_credit
from attnlab.hf import TextModel
from attnlab.model import GPT, GPTConfig
from attnlab.papers.contribution_weights.faithfulness import (
    choice_accuracy,
    curve_areas,
    hierarchy_holds,
    intervention_curves,
    rank_mask,
)


def naive_rank_mask(scores: torch.Tensor, fraction: float, top: bool, scope: str) -> torch.Tensor:
    B, H, T, _ = scores.shape
    out = torch.zeros(B, H, T, T, dtype=torch.bool)
    groups = [[h] for h in range(H)] if scope == "head" else [list(range(H))]
    for b in range(B):
        for i in range(T):
            for heads in groups:
                terms = [(scores[b, h, i, j].item(), h * T + j, h, j) for h in heads for j in range(i + 1)]
                # descending for top, ascending for bottom; ties broken by the flat index (h, j)
                terms.sort(key=lambda t: (-t[0] if top else t[0], t[1]))
                for _, _, h, j in terms[: round(fraction * len(heads) * (i + 1))]:
                    out[b, h, i, j] = True
    return out


@pytest.mark.parametrize("scope", ["head", "joint"])
@pytest.mark.parametrize("top", [True, False])
@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.37, 0.5, 1.0])
def test_rank_mask_matches_a_naive_loop(top, fraction, scope):
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 7, 7)
    scores[0, 1, 4, :3] = 0.25  # ties
    expected = naive_rank_mask(scores, fraction, top, scope)
    assert torch.equal(rank_mask(scores, fraction, top, scope), expected)


def test_rank_mask_never_touches_future_keys_and_counts_per_query():
    scores = torch.randn(1, 2, 5, 5)
    for scope in ("head", "joint"):
        mask = rank_mask(scores, 1.0, True, scope)
        assert torch.equal(mask[0, 0], torch.ones(5, 5, dtype=torch.bool).tril())
    half = rank_mask(scores, 0.5, False, "joint")
    assert [int(half[0, :, i].sum()) for i in range(5)] == [round(0.5 * 2 * (i + 1)) for i in range(5)]
    half = rank_mask(scores, 0.5, False, "head")
    assert [int(half[0, 1, i].sum()) for i in range(5)] == [round(0.5 * (i + 1)) for i in range(5)]


def test_per_head_ranking_cannot_tell_the_two_value_weighted_baselines_apart():
    torch.manual_seed(0)
    scores = torch.rand(1, 3, 6, 6)
    rescaled = scores * torch.rand(1, 3, 6, 1)  # a positive factor per (head, query) row: ||o_i||^-1
    assert torch.equal(rank_mask(scores, 0.5, True, "head"), rank_mask(rescaled, 0.5, True, "head"))
    assert not torch.equal(rank_mask(scores, 0.5, True, "joint"), rank_mask(rescaled, 0.5, True, "joint"))


def tiny_gpt() -> TextModel:
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=4, head_dim=8, block_size=16)
    return TextModel(GPT(cfg).eval())


def test_curves_zero_nothing_at_fraction_zero_and_everything_at_one():
    lm = tiny_gpt()
    ids = torch.randint(0, 256, (3, 12))
    curves = intervention_curves(lm, ids, [0.0, 1.0], batch_size=2, scopes=("head", "joint"))
    with torch.no_grad():
        logits, _ = lm.model(ids)
    clean = math.exp(F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item())
    zero = curves[curves["fraction"] == 0.0]
    assert np.allclose(zero["delta_ppl"], 0.0) and np.allclose(zero["ppl"], clean, rtol=1e-5)
    # Zeroing every term of every layer = attention outputs of zero: the MLP-only model.
    hooks = [b.attn.register_forward_hook(lambda m, a, out: torch.zeros_like(out)) for b in lm.model.blocks]
    with torch.no_grad():
        logits, _ = lm.model(ids)
    for h in hooks:
        h.remove()
    no_attn = math.exp(F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item())
    comp = curves[(curves["fraction"] == 1.0) & (curves["mode"] == "comprehensiveness")]
    assert np.allclose(comp["ppl"], no_attn, rtol=1e-5)
    assert len(comp) == 8  # one per measure and scope


def test_areas_and_hierarchy():
    rows = []
    for m, slope in zip(
        ["raw", "value_weighted", "output_normalised", "contribution"], [1, 2, 3, 4], strict=True
    ):
        for f in [0.0, 0.5, 1.0]:
            rows.append({"measure": m, "mode": "comprehensiveness", "fraction": f, "delta_ppl": slope * f})
            rows.append({"measure": m, "mode": "sufficiency", "fraction": f, "delta_ppl": (5 - slope) * f})
    areas = curve_areas(pd.DataFrame(rows))
    assert areas.loc["contribution", "comprehensiveness"] == pytest.approx(2.0)  # mean of 4 f over [0, 1]
    order = ["raw", "value_weighted", "output_normalised", "contribution"]
    assert hierarchy_holds(areas, order) == {"comprehensiveness": True, "sufficiency": True}
    assert hierarchy_holds(areas, order[::-1]) == {"comprehensiveness": False, "sufficiency": False}
    # on the log scale: the mean of log(1 + 4 f) over f in {0, 0.5, 1} by the trapezoid rule
    log_areas = curve_areas(pd.DataFrame(rows), log=True)
    expected = (0.5 * np.log(3.0) + 0.5 * (np.log(3.0) + np.log(5.0))) / 2
    assert log_areas.loc["contribution", "comprehensiveness"] == pytest.approx(expected)


def test_clean_choice_scores_match_one_sequence_at_a_time():
    lm = tiny_gpt()
    items = [MultipleChoice("ab", (" c", " dd"), 0), MultipleChoice("xyz w", ("1", "22", "3"), 2)]
    frame = choice_accuracy(lm, items, [("contribution", "sufficiency", 0.0)], batch_size=2)
    credit = []
    for item in items:
        row = []
        for choice in item.choices:
            ids = torch.tensor([lm.encode(item.prompt + choice)])
            n = len(lm.encode(choice))
            with torch.no_grad():
                logp = F.log_softmax(lm.model(ids)[0], -1)[0]
            row.append(
                sum(logp[len(ids[0]) - n - 1 + k, ids[0, len(ids[0]) - n + k]].item() for k in range(n))
            )
        credit.append(tie_credit(row, item.answer))
    clean = frame[frame["measure"] == "none"]["accuracy"].item()
    assert clean == pytest.approx(np.mean(credit))
    # fraction 0 zeroes nothing: the same accuracy
    assert frame[frame["measure"] == "contribution"]["accuracy"].item() == pytest.approx(clean)


def test_tie_credit():
    assert tie_credit([1.0, 0.0], 0) == 1.0
    assert tie_credit([1.0, 1.0, 0.0], 1) == 0.5
    assert tie_credit([0.0, 1.0], 0) == 0.0
