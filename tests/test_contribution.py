"""Contribution weights and their three baselines (arXiv 2606.07604) against naive per-(i, j) loops and
hand-computed cases."""

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnlab.metrics import (
    IMPORTANCE_MEASURES,
    attention_outputs,
    contribution_weights,
    raw_attention,
    value_weighted,
    value_weighted_output_normalised,
)


def _random_layer(B=2, H=3, T=6, D=5, seed=0, causal=True):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, H, T, T, generator=g, dtype=torch.float64)
    if causal:
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1), torch.randn(B, H, T, D, generator=g, dtype=torch.float64)


def _naive(pattern, values, inter_head):
    """Every measure from explicit per-(b, i, j) sums of the weighted terms a^h_ij v~^h_j."""
    B, H, T, D = values.shape
    shape = (B, T, T) if inter_head else (B, H, T, T)
    out = {name: torch.zeros(shape, dtype=torch.float64) for name in IMPORTANCE_MEASURES}
    for b in range(B):
        for i in range(T):
            heads = [None] if inter_head else range(H)
            for h in heads:
                hs = range(H) if inter_head else [h]
                o = sum(pattern[b, k, i, j] * values[b, k, j] for k in hs for j in range(T))
                for j in range(T):
                    term = sum(pattern[b, k, i, j] * values[b, k, j] for k in hs)  # (D,)
                    idx = (b, i, j) if inter_head else (b, h, i, j)
                    on = float(o.norm())
                    out["raw"][idx] = sum(pattern[b, k, i, j] for k in hs) / len(hs)
                    out["value_weighted"][idx] = term.norm()
                    out["output_normalised"][idx] = term.norm() / on if on > 0 else 0.0
                    out["contribution"][idx] = torch.dot(o, term) / on**2 if on > 0 else 0.0
    return out


@pytest.mark.parametrize("inter_head", [False, True])
@pytest.mark.parametrize("causal", [True, False])
def test_every_measure_matches_the_naive_loop(inter_head, causal):
    pattern, values = _random_layer(causal=causal)
    naive = _naive(pattern, values, inter_head)
    for name, fn in IMPORTANCE_MEASURES.items():
        got = fn(pattern, values, inter_head=inter_head)
        torch.testing.assert_close(got, naive[name], msg=name)


def test_grouped_query_values_match_the_naive_loop():
    # GQA shares a value head within a group of query heads; with equal W_O slices their v~ coincide too
    pattern, values = _random_layer(H=4)
    values[:, 1] = values[:, 0]
    values[:, 3] = values[:, 2]
    for inter_head in (False, True):
        naive = _naive(pattern, values, inter_head)
        for name, fn in IMPORTANCE_MEASURES.items():
            torch.testing.assert_close(fn(pattern, values, inter_head=inter_head), naive[name], msg=name)


@pytest.mark.parametrize("inter_head", [False, True])
def test_contribution_rows_sum_to_one_in_float32(inter_head):
    pattern, values = _random_layer(B=3, H=4, T=20, D=16, seed=1)
    c = contribution_weights(pattern.float(), values.float(), inter_head=inter_head)
    assert c.dtype == torch.float32
    torch.testing.assert_close(c.sum(-1), torch.ones(c.shape[:-1]), atol=1e-5, rtol=0)
    assert (c < 0).any()  # destructive interference exists on random values
    raw = raw_attention(pattern, values, inter_head=inter_head)
    torch.testing.assert_close(raw.sum(-1), torch.ones(raw.shape[:-1], dtype=raw.dtype))


def test_hand_made_layer():
    # one head, two tokens: v~_0 = (1, 0), v~_1 = (-2, 1); query 1 attends 0.5 / 0.5 -> o_1 = (-0.5, 0.5)
    values = torch.tensor([[1.0, 0.0], [-2.0, 1.0]]).view(1, 1, 2, 2)
    pattern = torch.tensor([[1.0, 0.0], [0.5, 0.5]]).view(1, 1, 2, 2)
    r5, s5 = math.sqrt(0.5), math.sqrt(5.0)
    expected = {
        "raw": [[1.0, 0.0], [0.5, 0.5]],
        "value_weighted": [[1.0, 0.0], [0.5, 0.5 * s5]],
        "output_normalised": [[1.0, 0.0], [0.5 / r5, 0.5 * s5 / r5]],
        # <o_1, 0.5 v~_0> / ||o_1||^2 = -0.25 / 0.5; <o_1, 0.5 v~_1> / 0.5 = 0.75 / 0.5
        "contribution": [[1.0, 0.0], [-0.5, 1.5]],
    }
    for name, fn in IMPORTANCE_MEASURES.items():
        for inter_head in (False, True):  # one head: inter-head = intra-head
            got = fn(pattern, values, inter_head=inter_head)
            want = torch.tensor(expected[name]).expand(got.shape)
            torch.testing.assert_close(got, want, msg=f"{name} inter_head={inter_head}")


def test_zero_output_gives_zero_not_nan():
    # v~_1 = -v~_0 and equal attention: o_1 = 0 although both terms are non-zero; head 1 has all-zero values
    values = torch.tensor([[[1.0, 2.0], [-1.0, -2.0]], [[0.0, 0.0], [0.0, 0.0]]]).view(1, 2, 2, 2)
    pattern = torch.tensor([[1.0, 0.0], [0.5, 0.5]]).expand(1, 2, 2, 2)
    intra = contribution_weights(pattern, values)
    inter = contribution_weights(pattern, values, inter_head=True)
    normed = value_weighted_output_normalised(pattern, values)
    for t in (intra, inter, normed):
        assert torch.isfinite(t).all()
    torch.testing.assert_close(intra[0, 0, 1], torch.zeros(2))  # o_1 = 0
    torch.testing.assert_close(intra[0, 1], torch.zeros(2, 2))  # a head whose values are all 0
    torch.testing.assert_close(inter[0, 1], torch.zeros(2))
    torch.testing.assert_close(normed[0, 0, 1], torch.zeros(2))
    torch.testing.assert_close(inter[0, 0], torch.tensor([1.0, 0.0]))  # row 0 still sums to 1


def test_inter_head_equals_intra_head_when_only_one_head_writes():
    pattern, values = _random_layer(H=3, seed=2)
    values[:, 1:] = 0.0  # heads 1 and 2 write nothing: the multi-head output is head 0's
    for fn in (contribution_weights, value_weighted, value_weighted_output_normalised):
        torch.testing.assert_close(fn(pattern, values, inter_head=True), fn(pattern, values)[:, 0])
    # H identical heads: o = H o^h, and the inter-head weights are any head's intra-head ones
    pattern, values = _random_layer(H=1, seed=3)
    same_p, same_v = pattern.expand(-1, 3, -1, -1), values.expand(-1, 3, -1, -1)
    torch.testing.assert_close(
        contribution_weights(same_p, same_v, inter_head=True), contribution_weights(pattern, values)[:, 0]
    )
    # in general: the per-head terms a^h_ij v~^h_j projected on the summed output, summed over heads
    pattern, values = _random_layer(H=3, seed=4)
    o = attention_outputs(pattern, values, inter_head=True)  # (B, T, D)
    c_inter = contribution_weights(pattern, values, inter_head=True)
    # <o_i, a^h_ij v~^h_j> summed over heads, via the per-head terms
    terms = torch.einsum("bhij,bhjd,bid->bij", pattern, values, o) / (o * o).sum(-1, keepdim=True)
    torch.testing.assert_close(c_inter, terms)


class _LargestTensor(TorchDispatchMode):
    """Records the largest number of elements and the most dimensions of any tensor an op returns."""

    def __init__(self):
        super().__init__()
        self.numel, self.ndim = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor):
                self.numel, self.ndim = max(self.numel, t.numel()), max(self.ndim, t.ndim)
        return out


@pytest.mark.parametrize("inter_head", [False, True])
def test_no_tensor_of_weighted_terms_is_formed(inter_head):
    B, H, T, D = 1, 3, 256, 64
    pattern, values = _random_layer(B, H, T, D)
    pattern, values = pattern.float(), values.float()
    for name, fn in IMPORTANCE_MEASURES.items():
        with _LargestTensor() as seen:
            fn(pattern, values, inter_head=inter_head)
        assert seen.ndim <= 4, name
        assert seen.numel <= max(B * H * T * T, B * H * T * D), name  # O(B H T^2), never B H T^2 D


def test_long_context_runs_in_bounded_memory():
    # T = 2048: the (B, H, T, T, D) tensor of weighted terms would take 2 * 2048^2 * 128 * 4 B = 4 GiB
    B, H, T, D = 1, 2, 2048, 128
    g = torch.Generator().manual_seed(0)
    pattern = torch.rand(B, H, T, T, generator=g).tril()
    pattern = pattern / pattern.sum(-1, keepdim=True)
    values = torch.randn(B, H, T, D, generator=g)
    c = contribution_weights(pattern, values, inter_head=True)
    torch.testing.assert_close(c.sum(-1), torch.ones(B, T), atol=1e-3, rtol=0)


def test_shape_errors():
    pattern, values = _random_layer()
    with pytest.raises(ValueError, match="disagree"):
        contribution_weights(pattern, values[:, :2])
    with pytest.raises(ValueError, match=r"\(B, H, T, T\)"):
        contribution_weights(pattern[0], values)


# --- the naive form the cost claims compare against -------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
def test_the_naive_form_equals_contribution_weights(causal):
    from attnlab.papers.contribution_weights.cost import naive_contribution

    pattern, values = _random_layer(B=2, H=3, T=7, D=5, causal=causal)
    torch.testing.assert_close(naive_contribution(pattern, values), contribution_weights(pattern, values))
    values[:, 1] = 0.0  # a head whose output is 0: c is 0 there, as contribution_weights gives
    torch.testing.assert_close(naive_contribution(pattern, values), contribution_weights(pattern, values))


def test_paired_times_alternate_the_order_and_time_both_forms_every_repeat():
    from attnlab.papers.contribution_weights.cost import IMPLS, paired_times, ratios

    pairs = paired_times(2, 8, (8, 16), 4, torch.device("cpu"))
    assert list(pairs.columns) == ["T", "repeat", "first", *IMPLS]
    assert list(pairs["T"]) == [8] * 4 + [16] * 4 and list(pairs["repeat"]) == [0, 1, 2, 3] * 2
    assert list(pairs["first"]) == ["contribution_weights", "naive"] * 4  # alternated
    assert (pairs[list(IMPLS)] > 0).all().all()
    table = ratios(pairs)
    assert list(table.index) == [8, 16] and (table["repeats"] == 4).all()
    expected = math.exp((pairs["naive"] / pairs["contribution_weights"]).map(math.log)[:4].mean())
    assert table.loc[8, "ratio"] == pytest.approx(expected)
