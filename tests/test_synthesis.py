"""The synthesis notebook's verdict functions (every answer each can give), its new lenses, and configure's
validation."""

import math

import pandas as pd
import pytest
import torch

from attnlab.errors import ParameterError
from attnlab.hf import intervene
from attnlab.metrics import contribution_weights, projected_values
from attnlab.model import GPT, GPTConfig
from attnlab.papers import synthesis
from attnlab.papers.contribution_weights.faithfulness import window_nll
from attnlab.papers.synthesis import claims as sc
from attnlab.papers.synthesis.lenses import (
    EXCLUDED,
    FAITHFULNESS_MEASURES,
    excluded_contributions,
    faithfulness_curves,
    forward_lenses,
    lenses,
    normalised_entropy,
)
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE

# --- gates ---------------------------------------------------------------------------------------------


def test_learned_passes_only_when_every_run_lowered_its_loss():
    assert sc.learned([5.5, 5.5], [3.8, 3.9]) is None
    reason = sc.learned([5.5, 5.5], [3.8, 5.5])
    assert reason == "1 of 2 runs did not lower their validation loss"
    assert sc.learned([5.5, 5.5], [3.8, math.nan]) == reason  # a diverged run learned nothing
    with pytest.raises(ValueError):
        sc.learned([5.5], [3.8, 3.9])


def test_sink_present_needs_the_interval_above_uniform():
    assert sc.sink_present([0.50, 0.52, 0.55], [0.1, 0.1, 0.1]) is None
    assert "no sink to move" in sc.sink_present([0.10, 0.11, 0.09], [0.1, 0.1, 0.1])
    assert "no sink to move" in sc.sink_present([0.05, 0.06, 0.05], [0.1, 0.1, 0.1])


# --- verdicts ------------------------------------------------------------------------------------------


def test_shift_holds_only_when_the_interval_lies_on_the_side():
    assert sc.shift([-0.10, -0.12, -0.11], "below").word == HOLDS
    assert sc.shift([0.10, 0.12, 0.11], "below").word == DOES_NOT_HOLD
    assert sc.shift([-0.3, 0.1, -0.1], "below").word == INCONCLUSIVE
    assert sc.shift([0.10, 0.12, 0.11], "above").word == HOLDS


def test_shift_is_not_testable_behind_a_gate_and_keeps_its_evidence():
    v = sc.shift([-0.10, -0.12, -0.11], "below", [None, "no sink to move"])
    assert v.word == NOT_TESTABLE and v.why == "no sink to move"
    assert v.n == 3 and math.isclose(v.estimate, -0.11)
    assert sc.shift([-0.10, -0.12, -0.11], "below", [None, None]).word == HOLDS


def test_differs_holds_on_either_side_and_is_otherwise_inconclusive():
    assert sc.differs([0.20, 0.22, 0.21]).word == HOLDS
    assert sc.differs([-0.20, -0.22, -0.21]).word == HOLDS
    assert sc.differs([-0.2, 0.2, 0.01]).word == INCONCLUSIVE
    assert sc.differs([0.0, 0.0, 0.0]).word == INCONCLUSIVE  # no spread, mean zero: never "does not hold"
    assert sc.differs([0.2]).word == INCONCLUSIVE  # one seed, no interval
    assert (
        sc.differs([0.20, 0.22, 0.21], ["1 of 3 runs did not lower their validation loss"]).word
        == NOT_TESTABLE
    )


# --- lenses ----------------------------------------------------------------------------------------------


def _random_head(B=2, H=3, T=6, d=4, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, H, T, T, generator=g).masked_fill(
        ~torch.ones(T, T, dtype=torch.bool).tril(), -1e9
    )
    return scores.softmax(-1), torch.randn(B, H, T, d, generator=g), torch.randn(D, H * d, generator=g)


def test_excluded_contributions_without_a_direction_are_the_contribution_weights():
    pattern, v, w = _random_head()
    ours = excluded_contributions(pattern, v, torch.zeros_like(v), w)
    assert torch.allclose(ours, contribution_weights(pattern, projected_values(v, w)), atol=1e-5)


def test_excluded_contributions_decompose_the_xsa_output():
    pattern, v, w = _random_head(seed=1)
    u = torch.nn.functional.normalize(EXCLUDED["xsa"](v), dim=-1)
    c = excluded_contributions(pattern, v, u, w)
    assert torch.allclose(c[..., 1:, :].sum(-1), torch.ones(2, 3, 5), atol=1e-4)  # rows sum to 1
    assert (c[..., 0, :] == 0).all()  # z_0 = v_0 - v_0 = 0: no output, no contributions
    # the term of token j for query i is a_ij P_i v_j W_O: check one entry against its definition
    b, h, i, j = 1, 2, 4, 0
    P = torch.eye(4) - torch.outer(u[b, h, i], u[b, h, i])
    W = w.view(8, 3, 4)[:, h]  # (D, d): W_O^h
    y = pattern[b, h, i] @ v[b, h]
    o = W @ (P @ y)
    term = pattern[b, h, i, j] * (W @ (P @ v[b, h, j]))
    assert torch.isclose(c[b, h, i, j], o @ term / (o @ o), atol=1e-5)


def test_normalised_entropy_is_one_for_uniform_and_zero_for_one_token():
    T = 5
    uniform = torch.ones(T, T).tril()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None, None]
    assert torch.allclose(normalised_entropy(uniform), torch.ones(1, 1, T - 1))
    first = torch.zeros(1, 1, T, T)
    first[..., 0] = 1.0
    assert torch.allclose(normalised_entropy(first), torch.zeros(1, 1, T - 1))


@pytest.mark.parametrize("attn", ["sa", "xsa", "xsa-prev", "sd", "sd-shared", ("linear", "sa")])
def test_every_lens_runs_on_every_kind(attn):
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, d_model=16, n_head=2, head_dim=8, block_size=16, attn=attn))
    tokens = torch.randint(0, 256, (3, 12))
    frame = lenses(model, tokens, control_position=4)
    assert list(frame["layer"]) == [0, 1]
    assert frame.drop(columns=["routing_energy", "form_stable_rank"]).notna().all().all()
    linear_first = attn == ("linear", "sa")
    assert frame["routing_energy"].isna().tolist() == [linear_first, False]
    # the first-token attention of a batch split in two equals the whole batch's
    halves = forward_lenses(model, tokens, 4, batch_size=2)
    assert torch.allclose(torch.tensor(halves["first_attention"].to_numpy()),
                          torch.tensor(frame["first_attention"].to_numpy()), atol=1e-6)  # fmt: skip


def test_log_slope_is_the_change_per_doubling():
    assert sc.log_slope({1.0: 0.9, 4.0: 0.7}) == pytest.approx(-0.1)
    assert sc.log_slope({0.5: 3.0, 1.0: 2.0, 2.0: 1.0, 8.0: -1.0}) == pytest.approx(-1.0)
    assert sc.log_slope({1.0: 1.0, 2.0: 1.0, 4.0: 1.0}) == 0.0
    with pytest.raises(ValueError):
        sc.log_slope({1.0: 0.5})


@pytest.mark.parametrize("attn", ["sa", "xsa", "sd", ("linear", "sa")])
def test_faithfulness_curves_zero_the_ranked_terms_of_one_layer(attn):
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, d_model=16, n_head=2, head_dim=8, block_size=16, attn=attn))
    tokens = torch.randint(0, 256, (3, 12))
    curves = faithfulness_curves(model, tokens, [0.0, 0.5, 1.0], seed=0, batch_size=2)
    assert len(curves) == 3 * 2 * 2 * len(FAITHFULNESS_MEASURES) * 2  # windows, layers, modes, rankings, f
    with torch.no_grad():
        clean = window_nll(model(tokens)[0], tokens)
        for layer in (0, 1):  # everything zeroed in one layer: the same loss whatever the ranking
            with intervene(model, {layer: torch.zeros(1, 1, 12, 12)}):
                empty = window_nll(model(tokens)[0], tokens)
            rows = curves[(curves["layers"] == f"layer {layer}") & (curves["fraction"] == 1.0)]
            for window in range(3):
                got = rows[rows["window"] == window]["nll"].to_numpy()
                assert got == pytest.approx([float(empty[window])] * len(got), rel=1e-5)
    assert curves.groupby("window")["clean_nll"].first().to_numpy() == pytest.approx(clean.numpy(), rel=1e-6)
    half = curves[curves["fraction"] == 0.5].set_index(["window", "layers", "mode", "measure"])["nll"]
    assert half.unstack("measure").nunique(axis=1).min() > 1  # the rankings zero different terms
    keys = ["window", "layers", "mode", "measure", "fraction"]
    again = faithfulness_curves(model, tokens, [0.0, 0.5, 1.0], seed=0, batch_size=3)
    same = curves.set_index(keys)["nll"], again.set_index(keys)["nll"].reindex(curves.set_index(keys).index)
    ranked = same[0].index.get_level_values("measure") != "random"  # the random order depends on the batching
    assert same[1][ranked].to_numpy() == pytest.approx(same[0][ranked].to_numpy(), rel=1e-5)
    repeat = faithfulness_curves(model, tokens, [0.0, 0.5, 1.0], seed=0, batch_size=2)
    assert repeat["nll"].to_numpy() == pytest.approx(curves["nll"].to_numpy(), rel=1e-6)  # the seed repeats


def test_faithfulness_areas_average_windows_and_layers_per_seed():
    rows = []
    for seed in (0, 1):
        for layer in (0, 1):
            for window in (0, 1):
                for measure, slope in (("random", 1.0), ("raw", 2.0), ("contribution", 4.0)):
                    for f in (0.0, 0.5, 1.0):
                        rows.append({"kind": "sa", "seed": seed, "layers": f"layer {layer}", "window": window,
                                     "mode": "comprehensiveness", "measure": measure, "fraction": f,
                                     "delta_ppl": slope * f * (1 + seed)})  # fmt: skip
    areas = synthesis.SynthesisExperiment.faithfulness_areas(pd.DataFrame(rows))
    got = areas.set_index(["seed", "measure"])["area"]
    # the log area of y = s f over f in {0, 0.5, 1}: the trapezoid mean of log(1 + y)
    expected = (0.5 * math.log1p(2.0) + 0.5 * (math.log1p(2.0) + math.log1p(4.0))) / 2  # s = 4, seed 0
    assert got[0, "contribution"] == pytest.approx(expected)
    assert got[1, "raw"] == pytest.approx(expected)  # s = 2 x (1 + 1)


# --- configure -----------------------------------------------------------------------------------------


def test_configure_resolves_the_preset_and_validates():
    exp = synthesis.configure(scale="smoke")
    assert exp.kinds == synthesis.KINDS and exp.seeds == (0, 1)
    assert synthesis.configure(scale="cpu", kinds=["xsa", "sa"]).kinds == ("sa", "xsa")
    assert synthesis.configure(scale="smoke", steps=10).preset.train.steps == 10
    assert synthesis.configure(scale="smoke", qk_ratios=[4, 1]).preset.qk_ratios == (1.0, 4.0)
    for bad in (
        {"scale": "tiny"},
        {"kinds": ["xsa"]},  # SA is every claim's control
        {"kinds": ["mamba"]},
        {"seeds": [1, 1]},
        {"qk_ratios": [0]},
        {"steps": -1},
        {"device": "nonsense"},
    ):
        with pytest.raises(ParameterError):
            synthesis.configure(**{"scale": "smoke", **bad})


def test_cpu_runs_share_the_xsa_notebooks_cache_keys():
    from attnlab.papers import xsa

    exp, x = synthesis.configure(scale="cpu", device="cpu"), xsa.configure(scale="cpu", device="cpu")
    for kind in ("sa", "xsa", "xsa-prev"):
        assert exp.spec(kind, 1) == x.spec("2L-64d", kind, 1, 8e-3)
    assert exp.spec("sd", 0).train.lr_scale == {"interaction": 10.0}
    assert exp.spec("sd", 0, 4.0).train.lr_scale == {"qk": 4.0, "interaction": 40.0}
    assert exp.spec("linear", 0).model.layer_kinds == ("linear", "sa")
    assert len(exp.planned_runs()) == 6 * 3 + 4 * 3 * 3  # every kind at ratio 1; 3 kinds at 4 other ratios


def test_claims_judge_every_hypothesis_from_the_tables():
    exp = synthesis.configure(scale="smoke", seeds=[0, 1, 2])
    rows = []
    for kind, seed, r in exp.run_keys():
        for state in ("trained", "init") if r == 1.0 else ("trained",):
            for layer in (0, 1):
                value = 0.1 * seed + (0.5 if kind == "xsa" else 0.0)
                rows.append({"kind": kind, "seed": seed, "ratio": r, "state": state, "layer": layer,
                             "cos_yv": value, "a_ii": 0.1, "cos_vv": 0.5, "uniform": 0.1,
                             "first_attention": 0.5, "first_contribution": 0.2, "sink_value_cos": -0.1,
                             "control_value_cos": 0.2,
                             "entropy": 0.9 / r, "routing_energy": 0.4, "form_stable_rank": 2.0})  # fmt: skip
    lens = pd.DataFrame(rows)
    losses = pd.DataFrame([{"kind": k, "seed": s, "ratio": r, "initial": 5.5, "final": 3.8}
                           for k, s, r in exp.run_keys()])  # fmt: skip
    area = {"random": 0.1, "raw": 0.5, "contribution": 0.8}
    areas = pd.DataFrame([
        {"kind": kind, "seed": seed, "mode": mode, "measure": measure,
         "area": (0.4 if (kind, measure) == ("xsa", "contribution") else area[measure]) + 0.01 * seed}
        for kind in exp.kinds for seed in exp.seeds for mode in ("comprehensiveness", "sufficiency")
        for measure in ("random", "raw", "contribution")
    ])  # fmt: skip
    verdicts = {c.claim: c.verdict for c in exp.claims(lens, losses, areas)}
    assert verdicts["XSA lowers the similarity bias cos(y_i, v_i) relative to SA"].startswith(DOES_NOT_HOLD)
    sharpens = "Faster query-key learning (eta_QK / eta_OV from 1, 4) sharpens sa's attention (entropy falls)"
    assert verdicts[sharpens].startswith(HOLDS)
    faithful = "Contribution weights rank {}'s value terms more faithfully than attention weights"
    assert verdicts[faithful.format("sa") + " (comprehensiveness, one layer at a time)"].startswith(HOLDS)
    assert verdicts[faithful.format("xsa") + " (comprehensiveness, one layer at a time)"].startswith(
        DOES_NOT_HOLD
    )
    gap = "XSA changes how much more faithful contribution weights are than attention weights"
    assert verdicts[gap].startswith(HOLDS)
    losses.loc[losses["kind"] == "linear", "final"] = math.nan  # a diverged run: nothing to judge
    verdicts = {c.claim: c.verdict for c in exp.claims(lens, losses, areas)}
    assert verdicts[faithful.format("linear") + " (comprehensiveness, one layer at a time)"].startswith(
        NOT_TESTABLE
    )
    assert all(
        v.split(":")[0] in (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE) for v in verdicts.values()
    )
