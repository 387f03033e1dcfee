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
from attnlab.runner.stats import binomial_interval, mean_interval

# Pretrained heads against random weights ------------------------------------------------------------------


def test_beyond_random_holds_only_when_every_models_interval_clears_its_random_share():
    v = sd.verdict_beyond_random({"a": (95, 100), "b": (180, 200)}, {"a": 76.0, "b": 70.0})
    assert str(v) == "holds: beyond the random-weight baseline in every model"
    est = binomial_interval(95, 100)  # a is the weaker: 95 - 76 = 19 points vs 90 - 70 = 20
    assert v.estimate == pytest.approx(19.0) and v.n == 100 and v.null == 0.0
    assert (v.low, v.high) == pytest.approx((100 * est.low - 76, 100 * est.high - 76))


def test_beyond_random_is_inconclusive_where_a_model_matches_its_random_baseline():
    # the reviewer's case: 77 % filtering dominant where random weights give 76-78 %
    v = sd.verdict_beyond_random(
        {"minilm": (70, 72), "smollm2": (209, 270)}, {"minilm": 79.2, "smollm2": 77.8}
    )
    assert str(v) == "inconclusive: not beyond the random-weight baseline in smollm2"
    # every head unstable, as every random head is: indistinguishable
    v = sd.verdict_beyond_random({"a": (72, 72)}, {"a": 100.0})
    assert str(v).startswith("inconclusive") and v.estimate == 0.0


def test_beyond_random_does_not_hold_when_every_model_is_on_the_other_side():
    v = sd.verdict_beyond_random({"a": (6, 72), "b": (61, 270)}, {"a": 20.8, "b": 50.0})
    assert str(v) == "does not hold"
    assert v.estimate < 0
    # side "below": the same numbers hold
    assert str(sd.verdict_beyond_random({"a": (6, 72)}, {"a": 20.8}, side="below")).startswith("holds")
    with pytest.raises(ValueError):
        sd.verdict_beyond_random({}, {})


# Sanity checks and LayerNorm ------------------------------------------------------------------------------


def test_eigenvalues_stable_judges_the_largest_real_part_with_a_rounding_tolerance():
    v = sd.verdict_eigenvalues_stable([-0.5, 5e-7, -0.1])
    assert str(v) == "holds"
    assert (v.estimate, v.n, v.null) == (5e-7, 3, sd.STABLE_TOLERANCE)
    assert str(sd.verdict_eigenvalues_stable([-0.5, 1e-3])) == "does not hold"
    empty = sd.verdict_eigenvalues_stable([])
    assert str(empty) == "does not hold" and math.isnan(empty.estimate) and empty.n == 0


def test_no_unstable_heads_counts_the_shared_projection_heads():
    v = sd.verdict_no_unstable_heads(0, 30)
    assert str(v) == "holds" and (v.estimate, v.n) == (0.0, 30)
    v = sd.verdict_no_unstable_heads(3, 30)
    assert str(v) == "does not hold" and v.estimate == pytest.approx(10.0)
    assert str(sd.verdict_no_unstable_heads(0, 0)).startswith("not testable here")


def test_trains_without_layernorm_compares_the_loss_increase_with_sas():
    # SA loses 10-12 % without LayerNorm, S-D 2-3 %: the paired differences lie above 0
    v = sd.verdict_trains_without_layernorm([2.0, 3.0, 2.5], [10.0, 12.0, 11.0], 0, 0)
    assert str(v) == "holds: the 95% interval excludes the null"
    assert v.estimate == pytest.approx(8.5) and v.n == 3 and v.null == 0.0
    # both lose about the same: inconclusive, said so
    v = sd.verdict_trains_without_layernorm([13.7, 14.5, 9.5], [14.0, 13.0, 11.0], 0, 0)
    assert str(v) == "inconclusive: both lose about the same without LayerNorm (the 95% interval contains 0)"
    # S-D loses more than SA
    assert str(sd.verdict_trains_without_layernorm([10.0, 12.0, 11.0], [2.0, 3.0, 2.5], 0, 0)) == (
        "does not hold"
    )


def test_trains_without_layernorm_by_divergence_and_without_runs():
    assert str(sd.verdict_trains_without_layernorm([1.0], [1.0], 1, 0)) == (
        "does not hold: 1 S-D run(s) without LayerNorm diverged"
    )
    assert str(sd.verdict_trains_without_layernorm([], [], 0, 2)).startswith("holds: 2 SA run(s)")
    assert str(sd.verdict_trains_without_layernorm([], [], 0, 0)) == (
        "not testable here: no pair of runs without LayerNorm"
    )


# Spectral cascade and scale trend ---------------------------------------------------------------------------


def test_one_plane_holds_when_every_sizes_interval_lies_in_the_band():
    v = sd.verdict_one_plane({"a": [2.0, 2.1, 1.9], "b": [2.2, 2.3, 2.1]})
    assert str(v) == "holds"
    est = mean_interval([2.2, 2.3, 2.1])
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((2.2, est.low, est.high, 3, 2.5))


def test_one_plane_does_not_hold_when_a_size_lies_above_and_is_inconclusive_across_the_edge():
    assert str(sd.verdict_one_plane({"a": [2.0, 2.1, 1.9], "b": [7.9, 8.1, 8.0]})) == "does not hold"
    assert str(sd.verdict_one_plane({"a": [2.9]})) == "does not hold"  # one seed, outside
    assert str(sd.verdict_one_plane({"a": [1.6, 2.9, 2.2]})) == "inconclusive: an interval crosses the band"
    assert str(sd.verdict_one_plane({"a": [2.0]})) == "inconclusive: one seed only, no interval"
    assert str(sd.verdict_one_plane({})).startswith("not testable here")


def test_few_dimensions_needs_middle_layers():
    assert str(sd.verdict_few_dimensions({"a": [3.0, 3.1, 2.9]})) == "holds"
    v = sd.verdict_few_dimensions({"a": [3.0, 3.1, 2.9], "b": [5.0, 5.2, 5.1]})
    assert str(v) == "does not hold" and v.null == 3.5 and v.estimate == pytest.approx(5.1)
    assert str(sd.verdict_few_dimensions({})) == "not testable here: no size has middle layers"


def test_last_layers_expand_needs_the_margins_interval_above_zero():
    assert str(sd.verdict_last_layers_expand([1.0, 1.2, 0.9, 1.1])).startswith("holds")
    assert str(sd.verdict_last_layers_expand([-1.0, -1.2, -0.9])) == "does not hold"
    assert str(sd.verdict_last_layers_expand([1.0, -0.8, 0.5])).startswith("inconclusive")
    assert str(sd.verdict_last_layers_expand([])) == "not testable here: no S-D model finished"


def test_grows_with_size_judges_the_rise_per_seed():
    v = sd.verdict_grows_with_size([0.5, 0.25, 0.5])
    assert str(v).startswith("holds") and v.n == 3
    assert str(sd.verdict_grows_with_size([0.0, 0.0, 0.0])) == "does not hold"
    assert str(sd.verdict_grows_with_size([0.5, -0.25, 0.25])).startswith("inconclusive")
    assert str(sd.verdict_grows_with_size([])) == "not testable here: fewer than two sizes"


# Filtering collapse ---------------------------------------------------------------------------------------


def test_cheap_needs_the_interval_below_two_percent_and_a_d_that_moved():
    v = sd.verdict_cheap([0.5, 0.6, 0.4], d_cv=0.5)
    assert str(v).startswith("holds") and v.null == sd.CHEAP_PCT
    v = sd.verdict_cheap([0.02, 0.09, 0.05], d_cv=0.14)
    assert str(v) == (
        "inconclusive: D stayed near its initialisation (CV 0.14), so the truncation is close to a no-op"
    )
    assert str(sd.verdict_cheap([5.0, 6.0, 5.5], d_cv=0.5)) == "does not hold"
    assert str(sd.verdict_cheap([5.0, 6.0, 5.5], d_cv=0.1)) == "does not hold"


def test_catastrophic_needs_the_interval_above_twenty_percent():
    v = sd.verdict_catastrophic([30.6, 56.8, 73.3])
    assert str(v).startswith("inconclusive")  # the interval reaches below 20 %
    v = sd.verdict_catastrophic([50.0, 55.0, 60.0])
    assert str(v).startswith("holds") and v.null == sd.CATASTROPHIC_PCT
    assert str(sd.verdict_catastrophic([1.0, 2.0, 1.5])) == "does not hold"


def test_inversion_needs_opposite_orders_under_the_same_truncation():
    sa = [11.0, 13.0, 12.0]  # SA: filtering to a scalar minus routing removed, above 0
    v = sd.verdict_inversion([-20.0, -25.0, -22.0], sa)
    assert str(v) == "holds" and v.estimate == pytest.approx(-22.333, abs=1e-3) and v.null == 0.0
    assert str(sd.verdict_inversion([-20.0, -25.0, -22.0], [11.0, 30.0, -5.0])) == (
        "inconclusive: an interval contains 0"
    )
    # the reviewer's case: S-D orders them as SA does (+47 % vs +29 %)
    assert str(sd.verdict_inversion([18.0, 20.0, 16.0], sa)) == "does not hold: S-D on the wrong side"
    assert str(sd.verdict_inversion([-20.0, -25.0, -22.0], [-5.0, -6.0, -4.0])) == (
        "does not hold: SA on the wrong side"
    )
    assert str(sd.verdict_inversion([-20.0, 5.0, -22.0], sa)) == "inconclusive: an interval contains 0"


# Linearisation --------------------------------------------------------------------------------------------


def test_tolerated_counts_leading_layers_until_the_first_change_out_of_tolerance():
    assert sd.tolerated([0.0, 1.0, 4.9, 6.0, 1.0]) == 2  # k = 4 is within again, but k = 3 is not
    assert sd.tolerated([0.0, 5.0]) == 0  # 5 % is not within 5 %
    assert sd.tolerated([0.0, 1.0, 2.0]) == 2
    assert sd.tolerated([0.0, math.nan]) == 0


def test_more_linear_layers_compares_the_tolerated_counts_per_seed():
    v = sd.verdict_more_linear_layers([3, 3, 2], [1, 0, 0], 6)
    assert str(v).startswith("holds") and v.n == 3 and v.estimate == pytest.approx(7 / 3)
    assert str(sd.verdict_more_linear_layers([0, 0, 0], [0, 0, 0], 6)) == "does not hold"
    assert str(sd.verdict_more_linear_layers([2, 0, 0], [0, 1, 0], 6)).startswith("inconclusive")
    assert str(sd.verdict_more_linear_layers([6, 6], [6, 6], 6)) == (
        "inconclusive: both stay within 5 % with every layer replaced"
    )
    assert str(sd.verdict_more_linear_layers([], [], 6)) == "not testable here: no pair of models"


def test_retrained_linear_judges_the_interval_against_the_papers_bound():
    v = sd.verdict_retrained_linear([1.0, 1.1, 0.9])
    assert str(v).startswith("holds")
    est = mean_interval([1.0, 1.1, 0.9])
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((1.0, est.low, est.high, 3, 1.4))
    assert str(sd.verdict_retrained_linear([4.6, 4.0, 5.0])) == "does not hold"
    assert str(sd.verdict_retrained_linear([1.0, 1.6, 1.2])).startswith("inconclusive")
    assert str(sd.verdict_retrained_linear([])) == "not testable here: no retrained model finished"


# Reallocation ---------------------------------------------------------------------------------------------


def test_reallocation_is_not_testable_when_nothing_is_saved():
    v = sd.verdict_reallocation([0.0, 0.0], [0.0, 0.1])
    assert str(v) == (
        "not testable here: every layer's measured dimensions call for the uniform head dim: nothing to "
        "reallocate"
    )


def test_reallocation_needs_both_the_papers_saving_and_cost():
    v = sd.verdict_reallocation([50.0, 50.0, 50.0], [4.0, 5.0, 6.0])
    assert str(v) == "holds"
    est = mean_interval([4.0, 5.0, 6.0])
    assert (v.estimate, v.low, v.high, v.n, v.null) == pytest.approx((5.0, est.low, est.high, 3, 8.4))
    assert str(sd.verdict_reallocation([30.0] * 3, [4.0, 5.0, 6.0])) == "inconclusive: the saving is smaller"
    assert str(sd.verdict_reallocation([50.0] * 3, [9.0, 10.0, 11.0])) == (
        "inconclusive: the perplexity cost is not within the bound"
    )
    assert str(sd.verdict_reallocation([30.0] * 3, [9.0, 10.0, 11.0])) == "does not hold"


# The claims table -----------------------------------------------------------------------------------------


def _model(kind: str, norm: bool = True) -> GPT:
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=32, n_layer=2, d_model=16, n_head=2, head_dim=8, block_size=8, attn=kind,
                    norm=norm)  # fmt: skip
    return GPT(cfg)


def _tables(exp):
    sizes, seeds = list(exp.sizes), [0, 1, 2]
    variants = list(sd_routing.VARIANTS)
    runs = {
        (s, v, seed): SimpleNamespace(model=_model(*sd_routing.VARIANTS[v]))
        for s in sizes for v in variants for seed in seeds
    }  # fmt: skip
    loss = {"sa": 1.0, "sa-noln": 1.2, "sd": 1.0, "sd-noln": 1.03, "sd-shared": 1.0}
    losses = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "loss": loss[v] + 0.01 * seed} for (s, v, seed) in runs
    ])  # fmt: skip
    head = {"filtering_energy": 0.9, "routing_rank": 2.0, "filtering_rank": 3.0, "routing_stable_rank": 1.5,
            "filtering_stable_rank": 2.5, "n_unstable": 1}  # fmt: skip
    heads = pd.DataFrame(
        [{"model": m, "weights": w, "source": "pretrained", **head} for m in exp.models for w in ("trained",)
         for _ in range(50)]
        + [{"model": m, "weights": "random init", "source": "pretrained", **head, "filtering_energy": 0.4,
            "routing_rank": 4.0, "routing_stable_rank": 4.0} for m in exp.models for _ in range(50)]
        + [{"model": "ours", "weights": "trained", "source": "sd-shared", **head, "n_unstable": 0}]
    )  # fmt: skip
    one_plane = {"routing_rank": 2.0, "routing_stable_rank": 2.0, "routing_pr": 2.0, "routing_top_plane": 1.0}
    wide = {"routing_rank": 6.0, "routing_stable_rank": 6.0, "routing_pr": 6.0, "routing_top_plane": 1 / 3}
    layers = {
        2: [one_plane, wide],
        3: [one_plane, one_plane, wide],
        4: [one_plane, one_plane, one_plane, wide],
    }
    cascade = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "layer": layer, **values, "params": 1000 * (i + 1)}
        for i, s in enumerate(sizes) for v in variants for seed in seeds
        for layer, values in enumerate(layers[exp.preset.sizes[s].model.n_layer])
    ])  # fmt: skip
    baseline = pd.DataFrame([
        {"variant": v, "size": s, "routing_rank": 12.6, "routing_stable_rank": 5.3, "routing_pr": 7.9,
         "routing_top_plane": 0.38}
        for v in variants for s in sizes
    ])  # fmt: skip
    drift = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "layer": 0, "d_cv": 0.5}
        for s in sizes for v in sd_routing.presets.SD_VARIANTS for seed in seeds
    ])  # fmt: skip
    change = {("model", "sa"): (30.0, 10.0), ("model", "sa-noln"): (30.0, 10.0), ("model", "sd"): (0.5, 40.0),
              ("model", "sd-noln"): (0.5, 40.0), ("model", "sd-shared"): (0.5, 40.0)}  # fmt: skip
    change |= {("head", v): (0.5, 40.0) for v in sd_routing.presets.SD_VARIANTS}
    collapse = pd.DataFrame([
        {"size": s, "variant": v, "seed": seed, "space": space, "intervention": i,
         "ppl change %": c + 0.1 * seed}
        for (space, v), cs in change.items() for s in sizes for seed in seeds
        for i, c in zip(("filtering to a scalar", "routing removed"), cs, strict=True)
    ])  # fmt: skip
    post = {"sa": (0.0, 8.0, 9.0, 9.0), "sd": (0.0, 1.0, 2.0, 9.0), "sd-shared": (0.0, 1.0, 2.0, 9.0)}
    linear = pd.DataFrame(
        [{"variant": v, "seed": seed, "k": k, "mode": "post hoc", "ppl change %": c + 0.1 * seed}
         for v, cs in post.items() for seed in seeds for k, c in enumerate(cs)]
        + [{"variant": v, "seed": seed, "k": 1, "mode": "retrained", "ppl change %": c + 0.1 * seed}
           for v, c in (("sa", 2.9), ("sd", 4.6), ("sd-shared", 0.5)) for seed in seeds]
    )  # fmt: skip
    realloc = pd.DataFrame([
        {"variant": v, "model": m, "seed": seed, "head dims": d, "attn params saved %": p,
         "ppl change %": c + seed}
        for v in ("sd", "sd-shared") for seed in seeds
        for m, d, p, c in (("uniform", "16 16", 0.0, 0.0), ("reallocated", "8 8", 50.0, 4.0))
    ])  # fmt: skip
    return runs, losses, heads, cascade, baseline, drift, collapse, linear, realloc


def test_claims_table_from_hand_built_tables():
    exp = sd_routing.configure(scale="cpu", device="cpu")  # sizes 3L-48d, 4L-64d
    runs, losses, heads, cascade, baseline, drift, collapse, linear, realloc = _tables(exp)
    trend = exp.scale_trend(cascade)
    rows = exp.claims(runs, losses, heads, cascade, baseline, trend, drift, collapse, linear, realloc)
    by_claim = {c.claim: c.verdict for c in rows}
    assert by_claim["filtering dominates the spectral budget of pretrained heads (energy > 1/2)"].startswith(
        "holds"
    )
    assert by_claim[
        "every head is dynamically unstable (an eigenvalue of W with positive real part)"
    ].startswith("inconclusive")  # as unstable as the random baseline
    sanity = [c for c in rows if c.claim.startswith(sd.SANITY)]
    assert [c.verdict for c in sanity] == ["holds", "holds"]
    assert by_claim["S-D attention trains without LayerNorm (control: SA without LayerNorm)"].startswith(
        "holds"
    )
    cascade_rows = [c for c in rows if c.figure == "cascade"]
    assert len(cascade_rows) == 3 * 4 * 3  # three claims, four measures, three S-D variants
    assert all(c.verdict.startswith("holds") for c in cascade_rows)
    trend_rows = [c for c in rows if c.figure == "scale trend"]
    # one plane at layer 0 in every size: 1/2 of 2 layers, 2/3 of 3 layers: the fraction grows
    assert len(trend_rows) == 4 * 3 and all(c.verdict.startswith("holds") for c in trend_rows)
    collapse_rows = [c for c in rows if c.figure == "collapse"]
    assert len(collapse_rows) == 2 * 3 + 3 and all(c.verdict.startswith("holds") for c in collapse_rows)
    linear_rows = [c for c in rows if c.figure == "linearisation"]
    assert [c.verdict.split(":")[0] for c in linear_rows] == ["holds", "holds", "does not hold", "holds"]
    realloc_rows = [c for c in rows if c.figure == "reallocation"]
    assert [c.verdict for c in realloc_rows] == ["holds", "holds"]


def test_smoke_scale_judges_nothing():
    exp = sd_routing.configure(scale="smoke", device="cpu")
    tables = _tables(exp)
    runs, losses, heads, cascade, baseline, drift, collapse, linear, realloc = tables
    rows = exp.claims(runs, losses, heads, cascade, baseline, exp.scale_trend(cascade), drift, collapse,
                      linear, realloc)  # fmt: skip
    assert rows and all(c.verdict == f"not testable here: {sd.SMOKE}" for c in rows)
