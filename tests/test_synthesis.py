"""The synthesis notebook's verdict rules (attnlab.papers.synthesis.rules: every answer each can give), its
claims table (attnlab.papers.synthesis.claims), its new lenses, and configure's validation."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.errors import ParameterError
from attnlab.hf import intervene, window_nll
from attnlab.metrics import contribution_weights, projected_values
from attnlab.model import GPT, GPTConfig
from attnlab.papers import synthesis
from attnlab.papers.synthesis import claims as sc
from attnlab.papers.synthesis import rules as sr
from attnlab.papers.synthesis.lenses import (
    EXCLUDED,
    FAITHFULNESS_MEASURES,
    excluded_contributions,
    faithfulness_curves,
    forward_lenses,
    lenses,
    normalised_entropy,
)
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE, PAIRED, SLOPE, VERDICTS

# --- gates ---------------------------------------------------------------------------------------------


def test_learned_passes_only_when_every_run_lowered_its_loss():
    runs = [("sa", 0, 1.0), ("sa", 1, 1.0)]
    initial = dict.fromkeys(runs, 5.5)
    assert sr.learned(initial, dict(zip(runs, [3.8, 3.9], strict=True))) is None
    gate = sr.learned(initial, dict(zip(runs, [3.8, 5.5], strict=True)))
    assert gate.word == NOT_TESTABLE and gate.why == "1 of 2 runs did not lower their validation loss"
    assert gate.n == 2
    diverged = sr.learned(
        initial, dict(zip(runs, [3.8, math.nan], strict=True))
    )  # a diverged run learned nothing
    assert diverged.word == NOT_TESTABLE and diverged.why == gate.why
    with pytest.raises(ValueError):  # paired by run name: the two mappings must name the same runs
        sr.learned({("sa", 0, 1.0): 5.5}, dict(zip(runs, [3.8, 3.9], strict=True)))


def test_sink_present_needs_the_interval_above_uniform():
    uniform = {0: 0.1, 1: 0.1, 2: 0.1}
    assert sr.sink_present({0: 0.50, 1: 0.52, 2: 0.55}, uniform) is None
    for first in ({0: 0.10, 1: 0.11, 2: 0.09}, {0: 0.05, 1: 0.06, 2: 0.05}, {0: 0.5}):
        gate = sr.sink_present(first, {s: 0.1 for s in first})
        assert gate.word == NOT_TESTABLE and "no sink to move" in gate.why


def test_a_failed_gate_makes_the_claim_not_testable_with_every_reason():
    v = sr.shift({0: -0.10, 1: -0.12, 2: -0.11}, {0: 0.0, 1: 0.0, 2: 0.0}, "below")
    assert v.word == HOLDS and math.isclose(v.estimate, -0.11) and v.n == 3
    assert sr.judged(v, None, None) == v
    sink = sr.sink_present({0: 0.1, 1: 0.1, 2: 0.1}, {0: 0.1, 1: 0.11, 2: 0.09})
    runs = [("sa", s, 1.0) for s in range(3)]
    stuck = sr.learned(dict.fromkeys(runs, 5.5), dict.fromkeys(runs, 6.0))
    gated = sr.judged(v, None, sink)
    assert gated.word == NOT_TESTABLE and gated.why == sink.why
    both = sr.judged(v, stuck, sink)
    assert both.word == NOT_TESTABLE and stuck.why in both.why and "no sink to move" in both.why


# --- verdicts ------------------------------------------------------------------------------------------

SEEDS = (0, 1, 2)


def _seeded(values):
    return dict(zip(SEEDS, values, strict=True))


ZERO = _seeded([0.0, 0.0, 0.0])


def test_shift_holds_only_when_the_interval_lies_on_the_side():
    assert sr.shift(_seeded([-0.10, -0.12, -0.11]), ZERO, "below").word == HOLDS
    assert sr.shift(_seeded([0.10, 0.12, 0.11]), ZERO, "below").word == DOES_NOT_HOLD
    assert sr.shift(_seeded([-0.3, 0.1, -0.1]), ZERO, "below").word == INCONCLUSIVE
    assert sr.shift(_seeded([0.10, 0.12, 0.11]), ZERO, "above").word == HOLDS
    # the mean on the wrong side while the interval contains zero: inconclusive, never "does not hold"
    v = sr.shift(_seeded([0.3, -0.1, 0.1]), ZERO, "below")
    assert v.word == INCONCLUSIVE and v.low < 0 < v.high and v.rule == PAIRED


def test_differs_holds_on_either_side_and_is_otherwise_inconclusive():
    assert sr.differs(_seeded([0.20, 0.22, 0.21]), ZERO).word == HOLDS
    assert sr.differs(_seeded([-0.20, -0.22, -0.21]), ZERO).word == HOLDS
    v = sr.differs(_seeded([-0.2, 0.2, 0.01]), ZERO)
    assert v.word == INCONCLUSIVE and "contains the null" in v.why and math.isnan(v.margin)
    assert sr.differs(_seeded([-0.2, 0.2, 0.0]), ZERO).word == INCONCLUSIVE  # mean exactly zero


def test_pairs_by_seed_name_so_a_misaligned_pairing_changes_the_verdict_or_raises():
    control = {0: 0.0, 1: 1.0, 2: 2.0}  # a strong seed effect the pairing removes
    kind = {0: 0.10, 1: 1.12, 2: 2.09}
    assert sr.shift(kind, control, "above").word == HOLDS
    assert sr.shift(dict(reversed(list(kind.items()))), control, "above").word == HOLDS  # order is irrelevant
    misaligned = {0: kind[2], 1: kind[0], 2: kind[1]}  # the same values under the wrong seeds
    assert sr.shift(misaligned, control, "above").word == INCONCLUSIVE
    assert sr.differs(misaligned, control).word == INCONCLUSIVE
    with pytest.raises(ValueError):  # a seed in one condition only
        sr.shift({0: 0.1, 1: 1.1, 3: 2.1}, control, "above")
    with pytest.raises(ValueError):
        sr.differences({0: 0.1, 1: 1.1}, control)
    assert sr.differences(kind, control) == pytest.approx({0: 0.10, 1: 0.12, 2: 0.09})


def test_an_interval_containing_the_null_is_never_does_not_hold():
    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(400):
        a = _seeded(rng.normal(0.0, 1.0, 3).tolist())
        for v in (sr.shift(a, ZERO, "below"), sr.shift(a, ZERO, "above"), sr.differs(a, ZERO)):
            if v.low <= 0.0 <= v.high:
                seen += 1
                assert v.word == INCONCLUSIVE, v
    assert seen > 100


def test_the_undirected_claims_carry_no_margin_whatever_the_spread():
    # no equivalence margin was stated with these hypotheses: no spread of the data makes one, so an interval
    # around zero stays inconclusive however narrow
    for spread in (1.0, 0.01, 1e-6):
        v = sr.differs(_seeded([spread, -spread, spread / 2]), ZERO)
        assert v.word == INCONCLUSIVE and math.isnan(v.margin)


def test_degenerate_evidence_is_not_testable():
    assert sr.shift({0: -0.1}, {0: 0.0}, "below").word == NOT_TESTABLE  # one seed: no interval
    assert sr.differs({0: 0.4}, {0: 0.0}).word == NOT_TESTABLE
    assert sr.shift(_seeded([0.5, 0.5, 0.5]), ZERO, "above").word == NOT_TESTABLE  # no spread
    assert sr.differs(ZERO, ZERO).word == NOT_TESTABLE  # a floor: never "does not hold"
    assert sr.shift(_seeded([0.1, math.nan, 0.2]), ZERO, "above").word == NOT_TESTABLE  # a diverged run


def test_the_sweep_trend_is_one_slope_per_seed_on_log2_ratio():
    assert sr.per_doubling([1.0, 4.0], {0: [0.9, 0.7]}) == pytest.approx({0: -0.1})
    ratios = [0.5, 1.0, 2.0, 8.0]
    assert sr.per_doubling(ratios, {0: [3.0, 2.0, 1.0, -1.0]}) == pytest.approx({0: -1.0})
    assert sr.per_doubling([1.0, 2.0, 4.0], {0: [1.0, 1.0, 1.0]}) == {0: 0.0}
    ratios = [0.5, 1.0, 2.0, 4.0, 8.0]
    falling = {s: [1.0 - (0.10 + 0.01 * s) * math.log2(r) for r in ratios] for s in SEEDS}
    v = sr.sweep_trend(ratios, falling, "below")
    assert v.word == HOLDS and v.rule == SLOPE and v.estimate == pytest.approx(-0.11) and v.n == 3
    assert sr.sweep_trend(ratios, falling, "above").word == DOES_NOT_HOLD
    flat = {s: [0.5 + 0.01 * ((i * (s + 1)) % 3 - 1) for i in range(5)] for s in SEEDS}
    assert sr.sweep_trend(ratios, flat, "below").word != DOES_NOT_HOLD
    assert sr.sweep_trend([1.0, 4.0], {s: [0.9, 0.7 + s / 100] for s in SEEDS}, "below").word == NOT_TESTABLE
    assert sr.sweep_trend(ratios, {0: falling[0]}, "below").word == NOT_TESTABLE  # one seed
    diverged = {**falling, 1: [1.0, 0.9, math.nan, 0.7, 0.6]}
    assert sr.sweep_trend(ratios, diverged, "below").word == NOT_TESTABLE
    # a floor: every seed constant over the ratios (slopes 0 up to rounding) is not judged
    assert sr.sweep_trend(ratios, {s: [1.0] * 5 for s in SEEDS}, "below").word == NOT_TESTABLE
    assert sr.sweep_trend(ratios, {s: [0.3 + s / 7] * 5 for s in SEEDS}, "above").word == NOT_TESTABLE


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
    # the ratio with the geometric mean of the QK and OV rates held at the tuned base rate
    assert exp.spec("sd", 0, 4.0).train.lr_scale == pytest.approx({"qk": 2.0, "ov": 0.5, "interaction": 20.0})
    for r in (0.5, 2.0, 8.0):
        scale = exp.spec("sa", 0, r).train.lr_scale
        assert set(scale) == {"qk", "ov"}  # embeddings, MLPs, norms and head at the base rate
        assert scale["qk"] / scale["ov"] == pytest.approx(r) and scale["qk"] * scale["ov"] == pytest.approx(
            1.0
        )
    with pytest.raises(ValueError):
        synthesis.experiment.ratio_scales(0.0)
    assert exp.spec("linear", 0).model.layer_kinds == ("linear", "sa")
    assert len(exp.planned_runs()) == 6 * 3 + 4 * 3 * 3  # every kind at ratio 1; 3 kinds at 4 other ratios


# --- the claims table from the notebook's tables ----------------------------------------------------------

#: The synthetic tables' values: {column: {kind: value}} (``None``: every kind's own ``default``).
BASE = {
    "cos_yv": {"sa": 0.30, "xsa": 0.10, "xsa-prev": 0.20},
    "first_attention": {"sa": 0.50, "xsa": 0.30},
    "first_contribution": {"sa": 0.40, "xsa": 0.20},
    "entropy": {"linear": 0.95},
    "routing_energy": {"sd": 0.60},
}
DEFAULT = {"cos_yv": 0.3, "first_attention": 0.5, "first_contribution": 0.4, "entropy": 0.6,
           "routing_energy": 0.40, "sink_value_cos": -0.1, "control_value_cos": 0.2}  # fmt: skip
FAITHFUL = "Contribution weights rank {}'s value terms more faithfully than attention weights " \
    "(comprehensiveness, one layer at a time)"  # fmt: skip
SPAN = "eta_QK / eta_OV from 0.5, 1, 2, 4, 8, their geometric mean fixed"


def _tables(exp, noise=0.01, seed_effect=0.0, rng_seed=0):
    """A lens table, losses and faithfulness areas shaped like the notebook's, with independent noise per
    run (sd ``noise``) and, optionally, a shared offset per seed (``seed_effect`` x seed)."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for kind, seed, r in exp.run_keys():
        for state in ("trained", "init") if r == 1.0 else ("trained",):
            row = {"kind": kind, "seed": seed, "ratio": r, "state": state}
            for column, default in DEFAULT.items():
                row[column] = (
                    BASE.get(column, {}).get(kind, default) + noise * rng.normal() + seed_effect * seed
                )
            row["entropy"] -= 0.05 * math.log2(r)  # faster query-key learning sharpens every kind
            if state == "init":
                row["routing_energy"] += 0.1  # training lowers the routing share
            row |= {"a_ii": 0.1, "cos_vv": 0.5, "uniform": 0.1, "form_stable_rank": 2.0}
            rows += [{**row, "layer": layer} for layer in (0, 1)]
    losses = pd.DataFrame([
        {"kind": k, "seed": s, "ratio": r, "initial": 5.5,
         "final": 3.8 + 0.05 * math.log2(r) + noise * rng.normal()}  # faster QK learning raises the loss
        for k, s, r in exp.run_keys()
    ])  # fmt: skip
    area = {"random": 0.1, "raw": 0.5, "contribution": 0.8}
    areas = pd.DataFrame([
        {"kind": kind, "seed": seed, "mode": mode, "measure": measure,
         "area": (0.4 if (kind, measure) == ("xsa", "contribution") else area[measure])
         + noise * rng.normal()}
        for kind in exp.kinds for seed in exp.seeds for mode in ("comprehensiveness", "sufficiency")
        for measure in ("random", "raw", "contribution")
    ])  # fmt: skip
    return pd.DataFrame(rows), losses, areas


def _verdicts(exp, lens, losses, areas):
    return {
        c.claim: c.verdict
        for c in exp.claims(sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas))
    }


@pytest.fixture(scope="module")
def cpu():
    return synthesis.configure(scale="cpu", device="cpu")


def test_claims_judge_every_hypothesis_from_the_tables(cpu):
    lens, losses, areas = _tables(cpu)
    claims = cpu.claims(sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas))
    assert len(claims) == 24
    words = {c.claim: c.verdict.word for c in claims}
    assert words[sc.MIXTURE_VS_SA] == HOLDS
    assert words["XSA puts less attention on the first token than SA (XSA as an implicit sink)"] == HOLDS
    assert words["Training moves SA's routing energy share away from its random initialisation"] == HOLDS
    assert words["sd's heads split their model-space form into routing and filtering differently from SA's "
                 "(routing energy share)"] == HOLDS  # fmt: skip
    assert (
        words["ELU+1 linear attention in the first layer attends less sharply there than SA's softmax does"]
        == HOLDS
    )
    assert words[FAITHFUL.format("sa")] == HOLDS
    assert words[FAITHFUL.format("xsa")] == DOES_NOT_HOLD
    assert (
        words["XSA changes how much more faithful contribution weights are than attention weights"] == HOLDS
    )
    for kind in ("sa", "xsa", "sd"):
        sharpens = words[f"Faster query-key learning ({SPAN}) sharpens {kind}'s attention (entropy falls)"]
        assert sharpens == HOLDS
        assert (
            words[f"Faster query-key learning ({SPAN}) lowers {kind}'s final validation loss"]
            == DOES_NOT_HOLD
        )
    for c in claims:
        v = c.verdict
        assert v.word in VERDICTS and v.rule and v.n == 3
        assert math.isnan(v.margin)  # no synthesis claim has an equivalence margin
        assert not any(word in c.ours for word in VERDICTS)  # "ours" is the measurement, not the verdict
        if v.word != NOT_TESTABLE:
            assert f"[{v.low:+.3f}, {v.high:+.3f}]" in c.ours
    slope = next(c for c in claims if c.claim.endswith("sharpens sa's attention (entropy falls)")).verdict
    assert slope.rule == SLOPE and slope.estimate == pytest.approx(-0.05, abs=0.01)  # per doubling


def test_claims_take_one_named_evidence_bundle(cpu):
    lens, losses, areas = _tables(cpu)
    with pytest.raises(TypeError):
        cpu.claims(lens, losses, areas)  # the old positional tables
    with pytest.raises(TypeError):
        cpu.claims(lens)
    with pytest.raises(ValueError, match="lacks the columns"):
        sc.Evidence(lens=lens, losses=losses.drop(columns="initial"), faithfulness_areas=areas)
    with pytest.raises(ValueError, match="more than one row"):
        sc.Evidence(lens=lens, losses=pd.concat([losses, losses.iloc[:1]]), faithfulness_areas=areas)


def test_claims_pair_by_seed_name_not_by_row_order(cpu):
    lens, losses, areas = _tables(cpu, seed_effect=0.2)  # a strong seed effect the pairing must remove
    before = _verdicts(cpu, lens, losses, areas)
    assert before[sc.MIXTURE_VS_SA].word == HOLDS
    shuffled = [frame.sample(frac=1.0, random_state=1) for frame in (lens, losses, areas)]
    assert _verdicts(cpu, *shuffled) == before  # rows in another order: the same table
    # XSA's seeds misaligned with SA's (each XSA run labelled with the next seed): the verdict changes
    relabel = lens.copy()
    xsa = relabel["kind"] == "xsa"
    relabel.loc[xsa, "seed"] = (relabel.loc[xsa, "seed"] + 1) % 3
    after = _verdicts(cpu, relabel, losses, areas)
    assert after[sc.MIXTURE_VS_SA].word == INCONCLUSIVE
    # a seed missing from one condition is an error, never a silent drop
    with pytest.raises(ValueError):
        _verdicts(cpu, lens[~(xsa & (lens["seed"] == 2))], losses, areas)
    with pytest.raises(ValueError):
        _verdicts(
            cpu, lens[~((lens["kind"] == "sa") & (lens["ratio"] == 4.0) & (lens["seed"] == 1))], losses, areas
        )


def test_no_row_whose_interval_contains_the_null_says_does_not_hold(cpu):
    seen = 0
    for rng_seed in range(4):
        lens, losses, areas = _tables(cpu, noise=0.3, rng_seed=rng_seed)  # noisy: many intervals around 0
        for c in cpu.claims(sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas)):
            v = c.verdict
            if v.word != NOT_TESTABLE and v.low <= v.null <= v.high:
                seen += 1
                assert v.word == INCONCLUSIVE, c
    assert seen >= 10


def test_gates_and_degenerate_evidence_make_rows_not_testable(cpu):
    lens, losses, areas = _tables(cpu)
    # a diverged run (NaN loss) learned nothing: every claim involving its kind is not testable
    diverged = losses.copy()
    diverged.loc[(diverged["kind"] == "linear") & (diverged["seed"] == 1), "final"] = math.nan
    words = {k: v.word for k, v in _verdicts(cpu, lens, diverged, areas).items()}
    assert words[FAITHFUL.format("linear")] == NOT_TESTABLE
    assert (
        words["ELU+1 linear attention in the first layer attends less sharply there than SA's softmax does"]
        == NOT_TESTABLE
    )
    assert words[FAITHFUL.format("sa")] == HOLDS
    # a diverged run in the sweep: its loss trend has a value that is not a number, not testable; its
    # entropy (measured) is still judged: the sweep's runs are the claim's evidence, not its gate
    diverged = losses.copy()
    diverged.loc[
        (diverged["kind"] == "sd") & (diverged["ratio"] == 8.0) & (diverged["seed"] == 0), "final"
    ] = math.nan
    verdicts = _verdicts(cpu, lens, diverged, areas)
    loss_trend = verdicts[f"Faster query-key learning ({SPAN}) lowers sd's final validation loss"]
    assert loss_trend.word == NOT_TESTABLE and "diverged" in loss_trend.why
    assert (
        verdicts[f"Faster query-key learning ({SPAN}) sharpens sd's attention (entropy falls)"].word == HOLDS
    )
    # the kind did not learn at ratio 1, its tuned base condition: its trend rows are set aside
    stuck = losses.copy()
    stuck.loc[(stuck["kind"] == "sd") & (stuck["ratio"] == 1.0) & (stuck["seed"] == 0), "final"] = 6.0
    claim = f"Faster query-key learning ({SPAN}) sharpens sd's attention (entropy falls)"
    sharpens = _verdicts(cpu, lens, stuck, areas)[claim]
    assert sharpens.word == NOT_TESTABLE and "did not lower" in sharpens.why
    # no sink in SA: the claims that XSA moves it are not testable
    nosink = lens.copy()
    nosink.loc[nosink["kind"] == "sa", "first_attention"] = 0.1 + 0.01 * nosink["seed"] - 0.01
    verdicts = _verdicts(cpu, nosink, losses, areas)
    v = verdicts["XSA puts less attention on the first token than SA (XSA as an implicit sink)"]
    assert v.word == NOT_TESTABLE and "no sink to move" in v.why
    # every sink row is gated: SA's sink-value geometry needs SA's sink, XSA's needs XSA's own
    sink_value = "In {}, the first token's projected values point along the others' less than an ordinary " \
        "token's do (the contribution-weights sink-value claim, against a control token)"  # fmt: skip
    v = verdicts[sink_value.format("SA")]
    assert v.word == NOT_TESTABLE and v.why.startswith("SA's attention on the first token")
    assert verdicts[sink_value.format("XSA")].word == HOLDS  # XSA's first token: 0.30 against uniform 0.10
    nosink.loc[nosink["kind"] == "xsa", "first_attention"] = 0.1 + 0.01 * nosink["seed"] - 0.01
    v = _verdicts(cpu, nosink, losses, areas)[sink_value.format("XSA")]
    assert v.word == NOT_TESTABLE and v.why.startswith("XSA's attention on the first token")
    # zero spread (a floor): not testable, never "does not hold"
    floor = lens.copy()
    floor.loc[floor["kind"].isin(["sa", "sd"]), "routing_energy"] = 0.0
    verdicts = _verdicts(cpu, floor, losses, areas)
    sd = "sd's heads split their model-space form into routing and filtering differently from SA's"
    sd += " (routing energy share)"
    assert verdicts[sd].word == NOT_TESTABLE
    # one seed: nothing has an interval, every row is not testable
    one = synthesis.configure(scale="cpu", device="cpu", seeds=[0])
    lens, losses, areas = _tables(one)
    claims = one.claims(sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas))
    assert claims and all(c.verdict.word == NOT_TESTABLE for c in claims)


def test_a_sweep_run_that_learned_nothing_counts_against_the_trend_never_sets_it_aside():
    """Faster query-key learning that leaves the largest ratio's runs above their initial loss is evidence
    against "lowers the final loss"; a gate on every run of the sweep (the old one) would have hidden it."""
    exp = synthesis.configure(scale="cpu", device="cpu")
    lens, losses, areas = _tables(exp)
    worse = losses.copy()
    at = worse["ratio"] > 1.0
    worse.loc[at, "final"] = 5.6 + np.log2(worse.loc[at, "ratio"]) / 10 + 0.01 * worse.loc[at, "seed"]
    v = _verdicts(exp, lens, worse, areas)[
        f"Faster query-key learning ({SPAN}) lowers sa's final validation loss"
    ]
    assert v.word == DOES_NOT_HOLD and "MIN_RATIOS" in v.why  # the post hoc minimum is named


def test_every_row_rests_on_trained_models_and_claims_need_the_evidence_alone(cpu):
    lens, losses, areas = _tables(cpu)
    evidence = sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas)
    through = cpu.claims(evidence)
    alone = sc.claims(
        sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas, kinds=cpu.kinds,
                    qk_ratios=tuple(cpu.preset.qk_ratios), ratio_kinds=tuple(cpu.preset.ratio_kinds))
    )  # fmt: skip
    assert [(c.claim, c.verdict.word, c.verdict.why) for c in alone] == [
        (c.claim, c.verdict.word, c.verdict.why) for c in through
    ]
    assert {c.unit for c in through} == {"trained model"}


def test_the_similarity_bias_rows_name_the_mixture_before_xsas_projection(cpu):
    """XSA's own table finds its output orthogonal to v_i (Alg. 1); these rows judge the mixture before the
    projection, and say so, so that a mixture more aligned than SA's reads as what it is, not as a
    contradiction."""
    lens, losses, areas = _tables(cpu)
    rows = [c for c in cpu.claims(sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas))
            if c.figure == "similarity bias"]  # fmt: skip
    assert [c.claim for c in rows] == [sc.MIXTURE_VS_SA, sc.MIXTURE_VS_CONTROL]
    assert all("before" in c.claim.lower() and "before the projection" in c.ours for c in rows)


def test_two_ratios_are_too_few_for_a_trend():
    exp = synthesis.configure(scale="smoke", seeds=[0, 1, 2], kinds=["sa", "xsa"])
    lens, losses, areas = _tables(exp)
    verdicts = _verdicts(exp, lens, losses, areas)
    rows = [v for claim, v in verdicts.items() if claim.startswith("Faster query-key learning")]
    assert rows and all(v.word == NOT_TESTABLE and "a trend needs 3" in v.why for v in rows)
