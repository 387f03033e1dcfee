"""The S-D routing paper's verdict rules (``attnlab.papers.sd_routing.claims``): each rule's answer on
synthetic numbers whose answer is known, its evidence, and the claims table built from small hand-made
tables."""

import math
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from attnlab.model import GPT, GPTConfig
from attnlab.papers import sd_routing
from attnlab.papers.sd_routing import claims as sd
from attnlab.runner.stats import mean_interval

# Pretrained heads -------------------------------------------------------------------------------------------


def test_majority_every_model_holds_only_when_every_model_is_above_half():
    v = sd.verdict_majority_every_model({"a": 80.0, "b": 60.0})
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (60.0, 2, 50.0)
    # 50 % is not above half
    assert str(sd.verdict_majority_every_model({"a": 50.0, "b": 10.0})) == "does not hold"


def test_majority_every_model_names_the_models_on_each_side_when_they_disagree():
    v = sd.verdict_majority_every_model({"a": 80.0, "b": 20.0, "c": 70.0})
    assert str(v) == "inconclusive: holds for a, c, not for b"
    assert v.estimate == 20.0


def test_all_heads_every_model_needs_every_head_unstable():
    assert str(sd.verdict_all_heads_every_model({"a": 100.0, "b": 100.0})) == "holds"
    assert str(sd.verdict_all_heads_every_model({"a": 99.9, "b": 100.0})) == (
        "inconclusive: holds for b, not for a"
    )
    v = sd.verdict_all_heads_every_model({"a": 99.0})
    assert str(v) == "does not hold"
    assert (v.estimate, v.n, v.null) == (99.0, 1, 100.0)


# S-D stability and LayerNorm ------------------------------------------------------------------------------


def test_eigenvalues_stable_judges_the_largest_real_part_with_a_rounding_tolerance():
    v = sd.verdict_eigenvalues_stable([-0.5, 5e-7, -0.1])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (5e-7, 3, sd.STABLE_TOLERANCE)
    assert str(sd.verdict_eigenvalues_stable([-0.5, 1e-3])) == "does not hold"


def test_eigenvalues_stable_without_any_sd_model_does_not_hold():
    v = sd.verdict_eigenvalues_stable([])
    assert str(v) == "does not hold"
    assert math.isnan(v.estimate) and v.n == 0


def test_trains_without_layernorm_holds_within_ten_percent():
    v = sd.verdict_trains_without_layernorm([3.0, -9.5, 10.0], diverged=0)
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (10.0, 3, 10.0)


def test_trains_without_layernorm_is_inconclusive_above_ten_percent_or_without_a_comparison():
    expected = "inconclusive: trains stably, but more than 10 % above the loss with LayerNorm"
    v = sd.verdict_trains_without_layernorm([3.0, 13.7], diverged=0)
    assert str(v) == expected
    assert v.estimate == 13.7
    assert str(sd.verdict_trains_without_layernorm([], diverged=0)) == expected
    assert str(sd.verdict_trains_without_layernorm([math.nan], diverged=0)) == expected


def test_trains_without_layernorm_does_not_hold_when_a_run_diverged():
    assert str(sd.verdict_trains_without_layernorm([1.0], diverged=1)) == "does not hold"


# Spectral cascade and scale trend ---------------------------------------------------------------------------


def test_one_plane_needs_every_layer_zero_rank_between_one_and_a_half_and_min_rank():
    v = sd.verdict_one_plane([2.0, 2.5, 1.5])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (2.5, 3, sd_routing.MIN_RANK)
    assert str(sd.verdict_one_plane([2.0, 2.6])) == "does not hold"
    assert str(sd.verdict_one_plane([1.4, 2.0])) == "does not hold"


def test_few_dimensions_needs_a_middle_layer_and_every_rank_in_range():
    v = sd.verdict_few_dimensions([2.0, 3.5])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (3.5, 2, 3.5)
    assert str(sd.verdict_few_dimensions([2.0, 3.6])) == "does not hold"
    assert str(sd.verdict_few_dimensions([])) == "does not hold"  # no size has middle layers


def test_last_layers_expand_compares_the_last_layer_with_layer_zero_and_the_middle():
    first, last = {"a": 2.0, "b": 2.0}, {"a": 5.0, "b": 3.0}
    v = sd.verdict_last_layers_expand(first, {"a": 4.0}, last)  # b has no middle layers: layer 0 stands in
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (1.0, 2, 0.0)
    v = sd.verdict_last_layers_expand(first, {"a": 4.0, "b": 3.0}, last)  # b's last equals its middle
    assert str(v) == "does not hold"
    assert v.estimate == 0.0


def test_grows_with_size_separates_monotone_rise_a_rise_with_a_dip_and_no_rise():
    v = sd.verdict_grows_with_size([0.0, 0.0, 0.5])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (0.5, 3, 0.0)
    assert str(sd.verdict_grows_with_size([0.2, 0.1, 0.5])) == "inconclusive: not monotone"
    assert str(sd.verdict_grows_with_size([0.0, 0.0, 0.0])) == "does not hold"
    assert str(sd.verdict_grows_with_size([0.5, 0.9, 0.5])) == "does not hold"
    with pytest.raises(ValueError):
        sd.verdict_grows_with_size([])


# Filtering collapse ---------------------------------------------------------------------------------------


def test_cheap_needs_every_change_below_two_percent():
    v = sd.verdict_cheap([0.02, 1.9])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (1.9, 2, sd.CHEAP_PCT)
    assert str(sd.verdict_cheap([0.02, 2.0])) == "does not hold"


def test_catastrophic_needs_every_change_above_twenty_percent():
    v = sd.verdict_catastrophic([30.6, 56.8])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (30.6, 2, sd.CATASTROPHIC_PCT)
    assert str(sd.verdict_catastrophic([30.6, 20.0])) == "does not hold"


def test_inverse_holds_for_every_pair_fails_for_none_and_is_inconclusive_between():
    v = sd.verdict_inverse([38.1, 65.1], [27.0, 34.2])
    assert str(v) == "holds"
    assert v.estimate == pytest.approx(11.1) and (v.n, v.null) == (2, 0.0)
    assert str(sd.verdict_inverse([1.0, 2.0], [5.0, 6.0])) == "does not hold"
    assert str(sd.verdict_inverse([10.0, 2.0], [5.0, 6.0])) == "inconclusive"


# Linearisation --------------------------------------------------------------------------------------------


def test_tolerated_counts_leading_layers_until_the_first_change_out_of_tolerance():
    assert sd.tolerated([0.0, 1.0, 4.9, 6.0, 1.0]) == 2  # k = 4 is within again, but k = 3 is not
    assert sd.tolerated([0.0, 5.0]) == 0  # 5 % is not within 5 %
    assert sd.tolerated([0.0, 1.0, 2.0]) == 2
    assert sd.tolerated([0.0, math.nan]) == 0


def test_more_linear_layers_compares_the_tolerated_counts():
    v = sd.verdict_more_linear_layers(3, 1, 6)
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (2.0, 6, 0.0)
    assert str(sd.verdict_more_linear_layers(1, 1, 6)) == "does not hold"
    assert str(sd.verdict_more_linear_layers(0, 2, 6)) == "does not hold"
    assert str(sd.verdict_more_linear_layers(6, 6, 6)) == (
        "inconclusive: both stay within 5 % with every layer replaced"
    )


def test_retrained_linear_judges_the_seed_mean_against_the_papers_bound_with_an_interval():
    v = sd.verdict_retrained_linear([1.0, 1.6])
    assert str(v) == "holds"  # mean 1.3 <= 1.4
    est = mean_interval([1.0, 1.6])
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((1.3, est.low, est.high, 2, 1.4))
    one = sd.verdict_retrained_linear([4.6])
    assert str(one) == "does not hold"
    assert one.estimate == 4.6 and one.n == 1 and math.isnan(one.low)
    assert str(sd.verdict_retrained_linear([])) == "does not hold"  # no retrained S-D model


# Reallocation ---------------------------------------------------------------------------------------------


def test_reallocation_is_not_testable_when_nothing_is_saved():
    v = sd.verdict_reallocation([0.0], [0.0])
    assert str(v) == (
        "not testable here: every layer's measured rank calls for the uniform head dim, so there is "
        "nothing to reallocate"
    )


def test_reallocation_needs_both_the_papers_saving_and_cost():
    v = sd.verdict_reallocation([50.0, 60.0], [4.0, 6.0])
    assert str(v) == "holds"
    est = mean_interval([4.0, 6.0])
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((5.0, est.low, est.high, 2, 8.4))
    assert str(sd.verdict_reallocation([30.0], [4.0])) == "inconclusive: the saving is smaller"
    assert str(sd.verdict_reallocation([50.0], [9.0])) == "inconclusive: the perplexity cost is larger"
    assert str(sd.verdict_reallocation([30.0], [9.0])) == "does not hold"


# The claims table -----------------------------------------------------------------------------------------


def _sd_model() -> GPT:
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=32, n_layer=2, d_model=16, n_head=2, head_dim=8, block_size=8, attn="sd")
    return GPT(cfg)


def test_claims_table_from_hand_built_tables():
    exp = sd_routing.configure(scale="smoke", device="cpu")  # sizes 2L-32d, 3L-32d, 3L-48d; probe 3L-32d
    sizes, seed = list(exp.sizes), 0
    runs = {(s, v, seed): SimpleNamespace(model=_sd_model()) for s in sizes for v in ("sa", "sd", "sd-noln")}
    losses = pd.DataFrame(
        [{"size": s, "variant": v, "seed": seed, "loss": 1.0 if v == "sd" else 1.05} for (s, v, _) in runs]
    )
    heads = pd.DataFrame([
        {"model": m, "filtering_energy": e, "routing_rank": 2.0, "filtering_rank": 3.0, "n_unstable": 1}
        for m, e in (("minilm", 0.9), ("smollm2", 0.2))
    ])  # fmt: skip
    ranks = {2: [2.0, 6.0], 3: [2.0, 3.0, 6.0]}  # layer 0 one plane, middle 3, last expands
    cascade = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "layer": layer, "routing_rank": r, "params": 1000 * (i + 1)}
        for i, s in enumerate(sizes) for v in ("sa", "sd", "sd-noln")
        for layer, r in enumerate(ranks[exp.preset.sizes[s].model.n_layer])
    ])  # fmt: skip
    collapse = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "intervention": i, "ppl change %": c}
        for s in sizes
        for v, changes in (("sd", (0.5, 40.0)), ("sa", (30.0, 10.0)))
        for i, c in zip(("filtering -> scalar", "routing removed"), changes, strict=True)
    ])  # fmt: skip
    linear = pd.DataFrame(
        [{"variant": v, "seed": seed, "k": k, "mode": "post hoc", "ppl change %": c}
         for v, changes in (("sd", (0.0, 1.0, 2.0, 9.0)), ("sa", (0.0, 8.0, 9.0, 9.0)))
         for k, c in enumerate(changes)]
        + [{"variant": v, "seed": seed, "k": 1, "mode": "retrained", "ppl change %": c}
           for v, c in (("sa", 2.9), ("sd", 4.6))]
    )  # fmt: skip
    realloc = pd.DataFrame({
        "model": ["uniform", "reallocated"], "seed": [seed, seed], "head dims": ["16 16 16", "8 8 8"],
        "attn params saved %": [0.0, 50.0], "ppl change %": [0.0, 5.0],
    })  # fmt: skip
    rows = exp.claims(runs, losses, heads, cascade, exp.scale_trend(cascade), collapse, linear, realloc)
    verdicts = [(c.claim, c.verdict) for c in rows]
    assert [v for _, v in verdicts] == [
        "inconclusive: holds for minilm, not for smollm2",  # filtering dominates
        "holds",  # routing rank below filtering rank in every head
        "holds",  # every head unstable
        "holds",  # S-D eigenvalues
        "holds",  # trains without LayerNorm, +5 %
        *["holds"] * 6,  # the cascade, S-D and S-D without LayerNorm
        "does not hold",  # S-D: 1/2 of layers at min rank at 2 layers, 1/3 at 3
        "does not hold",  # S-D without LayerNorm likewise
        "holds",  # truncating D is cheap
        "holds",  # removing S is catastrophic
        "holds",  # SA inverse
        "holds",  # post hoc: S-D 2, SA 0
        "does not hold",  # retrained: +4.6 % > 1.4 %
        "holds",  # reallocation
    ]
    stable = rows[3]
    assert stable.n == len(runs) * 2 // 3 and stable.null == sd.STABLE_TOLERANCE and stable.estimate <= 0
    assert rows[-1].estimate == 5.0 and rows[-1].n == 1
