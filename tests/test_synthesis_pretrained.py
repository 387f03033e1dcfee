"""The synthesis lenses on pretrained causal LMs (attnlab.papers.synthesis.pretrained): the weight statistics
against the S-D package's, the null draws, the per-layer table, the rules that judge one fixed model with its
layers as units (attnlab.papers.synthesis.rules) and the rows they give (attnlab.papers.synthesis.claims),
each on hand-made evidence."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.hf import CAUSAL_LMS
from attnlab.papers import synthesis
from attnlab.papers.sd_routing.routing import form_stats
from attnlab.papers.synthesis import claims as sc
from attnlab.papers.synthesis import pretrained as sp
from attnlab.papers.synthesis import rules as sr
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_TESTABLE, PAIRED, RANK

# --- the weight statistics -----------------------------------------------------------------------------


def test_form_statistics_are_the_sd_packages_routing_share_and_effective_rank():
    g = torch.Generator().manual_seed(3)
    for H, H_kv, d, D in ((4, 4, 8, 32), (6, 2, 8, 40), (3, 1, 16, 24)):  # grouped-query heads too
        wq = torch.randn(H, d, D, generator=g, dtype=torch.float64)
        wk = torch.randn(H_kv, d, D, generator=g, dtype=torch.float64)
        ours, theirs = sp.form_statistics(wq, wk), form_stats(wq, wk)
        assert ours["routing_energy"].numpy() == pytest.approx(theirs["routing_energy"].to_numpy(), abs=1e-9)
        assert ours["effective_rank"].numpy() == pytest.approx(theirs["form_rank"].to_numpy(), abs=1e-6)


def test_form_statistics_of_known_forms():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(2, 4, 16, generator=g, dtype=torch.float64)
    symmetric = sp.form_statistics(w, w)  # W = Wq^T Wq: no routing part, rank d = 4 at most
    assert symmetric["routing_energy"].numpy() == pytest.approx([0.0, 0.0], abs=1e-12)
    assert (symmetric["effective_rank"] <= 4 + 1e-9).all()
    # one rotation plane: Wq = [e1; e2], Wk = [e2; -e1] gives W = e1 e2^T - e2 e1^T, all routing, rank 2
    e = torch.eye(8, dtype=torch.float64)
    plane = sp.form_statistics(e[[0, 1]][None], torch.stack([e[1], -e[0]])[None])
    assert plane["routing_energy"].item() == pytest.approx(1.0) and plane[
        "effective_rank"
    ].item() == pytest.approx(2.0)
    zero = sp.form_statistics(torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    assert zero["routing_energy"].item() == 0.0 and zero["effective_rank"].item() == 0.0
    with pytest.raises(ValueError, match="do not pair"):
        sp.form_statistics(torch.zeros(3, 2, 8), torch.zeros(2, 2, 8))


def test_null_forms_are_seeded_draws_of_one_layer_of_the_models_shape():
    shape = ((4, 8, 32), (2, 8, 32))
    a, b = sp.null_forms(shape, 5, seed=0), sp.null_forms(shape, 5, seed=0)
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns) == ["draw", *sp.FORM_COLUMNS] and list(a["draw"]) == list(range(5))
    assert not a.equals(sp.null_forms(shape, 5, seed=1))
    assert a["routing_energy"].between(0.4, 0.6).all()  # Gaussian forms: about half routing
    g = torch.Generator().manual_seed(0)
    layers = [(torch.randn(4, 8, 32, generator=g), torch.randn(2, 8, 32, generator=g)) for _ in range(3)]
    assert sp.layer_shape(layers) == shape
    with pytest.raises(ValueError, match="one layer shape"):
        sp.layer_shape([*layers, (torch.zeros(4, 8, 16), torch.zeros(2, 8, 16))])


def test_layer_table_averages_the_windows_so_that_the_layers_are_the_units():
    windows = pd.DataFrame([
        {"window": w, "layer": layer, **{c: 0.1 * layer + 0.01 * w for c in sp.XSA_COLUMNS.values()}}
        for w in range(16) for layer in range(3)
    ])  # fmt: skip
    forward = pd.DataFrame({"layer": [2, 0, 1], "first_attention": [0.3, 0.1, 0.2],
                            "first_contribution": [0.03, 0.01, 0.02]})  # fmt: skip
    forms = pd.DataFrame({"layer": [0, 1, 2], "routing_energy": [0.3] * 3, "effective_rank": [5.0] * 3})
    table = sp.layer_table(windows, forward, forms)
    assert list(table["layer"]) == [0, 1, 2] and list(table.columns) == ["layer", *sp.COLUMNS]
    assert table["cos_yv"].to_numpy() == pytest.approx([0.075, 0.175, 0.275])  # the mean over 16 windows
    assert table["first_attention"].to_numpy() == pytest.approx([0.1, 0.2, 0.3])  # merged by layer name


# --- the rules: one fixed model, its layers the units --------------------------------------------------

LAYERS = range(6)


def _layers(values):
    return dict(zip(LAYERS, values, strict=True))


def test_beyond_nulls_needs_every_null_cleared_layer_by_layer():
    observed = _layers([0.50, 0.52, 0.48, 0.55, 0.51, 0.53])
    low = _layers([0.30, 0.31, 0.29, 0.33, 0.30, 0.32])
    v = sr.beyond_nulls(observed, {"uniform": low, "shuffled": low}, "above")
    assert v.word == HOLDS and v.n == 6 and math.isclose(v.estimate, 0.2, abs_tol=0.01)
    # the same model against a null it does not clear: "holds" needs both
    level = _layers([0.49, 0.53, 0.47, 0.56, 0.50, 0.54])
    both = sr.beyond_nulls(observed, {"uniform": low, "shuffled": level}, "above")
    assert both.word == INCONCLUSIVE and "shuffled" in both.why
    high = _layers([0.70, 0.71, 0.69, 0.72, 0.70, 0.73])
    assert sr.beyond_nulls(observed, {"uniform": low, "shuffled": high}, "above").word == DOES_NOT_HOLD
    parts = sr.null_margins(observed, {"uniform": low, "shuffled": level}, "above")
    assert set(parts) == {"uniform", "shuffled"} and all(p.rule == PAIRED for p in parts.values())
    one = sr.beyond_nulls(observed, {"uniform": low}, "above")  # one null: the paired rule itself
    assert one == sr.null_margins(observed, {"uniform": low}, "above")["uniform"] and one.rule == PAIRED


def test_beyond_nulls_pairs_by_layer_name_never_by_position():
    observed = _layers([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    null = _layers([0.05, 0.15, 0.25, 0.35, 0.45, 0.55])  # 0.05 below every layer: holds when paired by name
    v = sr.beyond_nulls(observed, {"n": dict(reversed(null.items()))}, "above")
    assert v.word == HOLDS and v.estimate == pytest.approx(0.05)
    with pytest.raises(ValueError, match="do not share their units"):
        sr.beyond_nulls(observed, {"n": {k: x for k, x in null.items() if k != 5}}, "above")
    with pytest.raises(ValueError):
        sr.beyond_nulls(observed, {}, "above")


def _draws(n, mean=0.5, sd=0.01, seed=0):
    return list(mean + sd * np.random.default_rng(seed).normal(size=n))


def test_beyond_random_weights_judges_the_layers_and_ranks_the_median_layer_among_many_draws():
    draws = _draws(199)
    model = _layers([0.30, 0.35, 0.32, 0.28, 0.33, 0.31])
    v = sr.beyond_random_weights(model, draws, "below")
    assert v.word == HOLDS and v.n == 6  # the layers are the units, not the draws
    parts = sr.random_weight_parts(model, draws, "below")
    assert parts["the layers"].rule == PAIRED and parts["the layers"].n == 6
    # each layer against the mean of its own block of draws: layer i with draws i, i + 6, ...
    blocks = [np.mean(draws[i::6]) for i in range(6)]
    assert parts["the layers"].estimate == pytest.approx(
        np.mean([m - b for m, b in zip(model.values(), blocks, strict=True)])
    )
    ranked = parts["the median layer among the draws"]
    assert ranked.rule == RANK and ranked.n == 199 and ranked.word == HOLDS
    assert ranked.estimate == pytest.approx(0.315) and ranked.low < 0.5 < ranked.high
    assert sr.beyond_random_weights(model, draws, "above").word == DOES_NOT_HOLD


def test_a_model_whose_layers_are_draws_of_the_null_does_not_hold():
    """A fixed model whose layers are themselves draws of the null must not come out "holds" (against one
    draw as its null, it would half the time, by the draw's own noise)."""
    words = []
    for seed in range(40):
        draws = _draws(199 + 6, seed=seed)
        words.append(sr.beyond_random_weights(_layers(draws[199:]), draws[:199], "below").word)
    assert words.count(HOLDS) <= 3 and words.count(DOES_NOT_HOLD) <= 3


def test_the_median_layer_part_needs_most_layers_beyond_the_draws():
    """Ten of 21 layers far below random weights and eleven among them: the layers' mean lies below the draws'
    (that part holds), but the median layer is a random one, so the model is not called beyond them."""
    draws = _draws(199)
    rng = np.random.default_rng(1)
    model = dict(enumerate([*(0.5 + 0.002 * rng.normal(size=11)), *(0.45 + 0.002 * rng.normal(size=10))]))
    parts = sr.random_weight_parts(model, draws, "below")
    assert parts["the layers"].word == HOLDS
    assert parts["the median layer among the draws"].word == INCONCLUSIVE
    assert sr.beyond_random_weights(model, draws, "below").word == INCONCLUSIVE


def test_beyond_random_weights_needs_79_draws():
    model = _layers([0.30, 0.35, 0.32, 0.28, 0.33, 0.31])
    few = sr.beyond_random_weights(model, _draws(10), "below")  # the layers part alone would hold
    assert few.word == NOT_TESTABLE and "79" in few.why
    with pytest.raises(ValueError, match="every layer needs one"):
        sr.beyond_random_weights(model, _draws(5), "below")
    with pytest.raises(ValueError):
        sr.beyond_random_weights({}, _draws(99), "below")


def test_in_every_model_needs_every_model_and_counts_the_models():
    low = _layers([0.30, 0.31, 0.29, 0.33, 0.30, 0.32])
    clear = sr.beyond_nulls(_layers([0.50, 0.52, 0.48, 0.55, 0.51, 0.53]), {"n": low}, "above")
    unclear = sr.beyond_nulls(_layers([0.28, 0.35, 0.27, 0.36, 0.29, 0.34]), {"n": low}, "above")
    v = sr.in_every_model({"a": clear, "b": clear, "c": clear})
    assert v.word == HOLDS and v.n == 3
    mixed = sr.in_every_model({"a": clear, "b": unclear, "c": clear})
    assert mixed.word == INCONCLUSIVE and mixed.n == 3 and "b" in mixed.why
    assert mixed.estimate == pytest.approx(unclear.estimate)  # the least clear model is shown
    with pytest.raises(ValueError):
        sr.in_every_model({})


# --- the rows ------------------------------------------------------------------------------------------


def _result(n_layers=6, sink=0.4, contribution=0.1, routing=0.3, rank=20.0, draws=199, seed=0, windows=16):
    """One model's results as ``pretrained.measure`` gives them, hand-made: a similarity bias above both
    nulls with and without the sink, first-token attention ``sink`` (uniform: 0.1), contribution
    ``contribution``, routing share ``routing`` and rank ``rank`` per layer (plus a little noise), and
    ``draws`` Gaussian draws around 0.5 and 30."""
    rng = np.random.default_rng(seed)

    def noisy(x):
        return x + 0.01 * rng.normal(size=n_layers)

    layers = pd.DataFrame({
        "layer": range(n_layers), "cos_yv": noisy(0.5), "cos_uniform": noisy(0.3),
        "cos_shuffled": noisy(0.35), "cos_yv_nosink": noisy(0.6), "cos_uniform_nosink": noisy(0.3),
        "cos_shuffled_nosink": noisy(0.4),
        "a_sink": noisy(sink), "a_uniform": [0.1] * n_layers, "first_attention": noisy(sink),
        "first_contribution": noisy(contribution), "routing_energy": noisy(routing),
        "effective_rank": noisy(rank),
    })  # fmt: skip
    null = pd.DataFrame({"draw": range(draws), "routing_energy": 0.5 + 0.005 * rng.normal(size=draws),
                         "effective_rank": 30 + 0.1 * rng.normal(size=draws)})  # fmt: skip
    return {"description": "a hand-made model", "windows": windows, "layers": layers, "null": null}


CLAIM_IDS = list(sc.PRETRAINED_CLAIMS)


def test_each_pretrained_model_gets_every_lens_with_its_layers_as_units():
    rows = sc.pretrained_rows({"m": _result()})
    assert len(rows) == len(CLAIM_IDS) == 6
    assert {c.unit for c in rows} == {"layer"} and all(c.verdict.n == 6 for c in rows)
    assert all(c.claim.startswith("In m, ") for c in rows)
    assert [c.verdict.word for c in rows] == [HOLDS] * 6
    for c in rows:
        assert "[a hand-made model; 6 layers, 16 windows]" in c.ours
        assert (
            "paired by layer" if c.figure.startswith(("similarity", "sinks")) else "its own block of draws"
        ) in c.ours
        assert not any(word in c.ours for word in (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE))
    routing = rows[CLAIM_IDS.index("routing")]
    assert (
        "199 draws of a layer of Gaussian weights" in routing.ours
        and routing.figure == "routing (pretrained)"
    )


def test_the_rows_read_each_lens_against_its_own_null():
    no_sink = sc.pretrained_rows({"m": _result(sink=0.1, contribution=0.5, routing=0.7, rank=40.0)})
    words = {which: c.verdict.word for which, c in zip(CLAIM_IDS, no_sink, strict=True)}
    assert words["sink"] != HOLDS  # attention on token 0 at uniform's
    assert words["contribution"] == DOES_NOT_HOLD  # contributes more than its attention
    assert words["routing"] == DOES_NOT_HOLD and words["rank"] == DOES_NOT_HOLD  # above the draws


def test_every_pretrained_model_rows_are_all_of_the_models():
    results = {"a": _result(seed=0), "b": _result(seed=1), "c": _result(seed=2, sink=0.1)}
    rows = sc.pretrained_rows(results)
    assert len(rows) == 3 * 6 + 6
    every = [c for c in rows if c.unit == "pretrained model"]
    assert [c.claim.startswith("In every pretrained model, ") for c in every] == [True] * 6
    assert all(c.verdict.n == 3 for c in every)
    words = {which: c.verdict.word for which, c in zip(CLAIM_IDS, every, strict=True)}
    assert words["sink"] != HOLDS  # model c has no sink
    assert words["bias"] == HOLDS and words["routing"] == HOLDS
    assert sc.pretrained_rows({"a": _result()})[-1].unit == "layer"  # one model: no "every" rows


def test_the_pretrained_rows_join_the_table_through_the_evidence():
    exp = synthesis.configure(scale="smoke", seeds=[0, 1, 2], kinds=["sa"])
    lens = pd.DataFrame([
        {"kind": "sa", "seed": s, "ratio": r, "state": state, "layer": layer, "uniform": 0.1,
         "control_value_cos": 0.2, "first_attention": 0.5 + 0.01 * s, "routing_energy": 0.4 + 0.01 * s,
         "entropy": 0.6, "sink_value_cos": -0.1, "cos_yv": 0.3, "first_contribution": 0.4}
        for s in (0, 1, 2) for r in (1.0, 4.0) for state in ("trained", "init") for layer in (0, 1)
        if state == "trained" or r == 1.0
    ])  # fmt: skip
    losses = pd.DataFrame([{"kind": "sa", "seed": s, "ratio": r, "initial": 5.5, "final": 3.8}
                           for s in (0, 1, 2) for r in (1.0, 4.0)])  # fmt: skip
    areas = pd.DataFrame([
        {"kind": "sa", "seed": s, "mode": m, "measure": x, "area": 0.1 * (s + 1) + (x == "contribution")}
        for s in (0, 1, 2) for m in ("comprehensiveness", "sufficiency")
        for x in ("random", "raw", "contribution")
    ])  # fmt: skip
    bare = exp.claims(sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas))
    full = exp.claims(
        sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas, pretrained={"m": _result()})
    )
    assert full[: len(bare)] == bare and len(full) == len(bare) + 6
    assert {c.unit for c in full[len(bare) :]} == {"layer"}
    bad = _result()
    with pytest.raises(ValueError, match="lacks the columns"):
        sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas,
                    pretrained={"m": {**bad, "layers": bad["layers"].drop(columns="a_sink")}})  # fmt: skip
    doubled = pd.concat([bad["layers"], bad["layers"].iloc[:1]])
    with pytest.raises(ValueError, match="more than one row"):
        sc.Evidence(lens=lens, losses=losses, faithfulness_areas=areas,
                    pretrained={"m": {**bad, "layers": doubled}})  # fmt: skip


# --- the measurement -----------------------------------------------------------------------------------


def test_each_scale_measures_the_xsa_notebooks_models_with_its_arguments(monkeypatch):
    """The similarity-bias table is xsa.pretrained.measure_models called with the XSA notebook's arguments, so
    the two notebooks share one cached measurement."""
    calls = []

    def fake_measure_models(models, windows, length, seed=0, device="cpu"):
        calls.append((tuple(models), windows, length, seed, device))
        raise RuntimeError("stop")

    monkeypatch.setattr(sp, "measure_models", fake_measure_models)
    for scale, expected in (
        ("cpu", (CAUSAL_LMS, 16, 128, 0, "cpu")),
        ("smoke", (("tiny-llama",), 3, 32, 0, "cpu")),
    ):
        with pytest.raises(RuntimeError, match="stop"):
            sp.measure_scale(scale, device="cpu")
        assert calls[-1] == expected


def test_the_tiny_stand_in_is_measured_end_to_end(tmp_path, monkeypatch):
    """The smoke-scale measurement on the random tiny Llama, on a stand-in text (nothing downloaded): every
    column, one row per layer, the first token's attention read alike by both passes, the null's draws."""
    import datasets

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    text = " ".join(f"word{i % 50} and the rest of sentence {i}." for i in range(400))

    def fake_corpus(name):
        return {"validation": datasets.Dataset.from_dict({"text": [text]})}

    from attnlab.papers.xsa import pretrained as xsa_pretrained

    monkeypatch.setattr(xsa_pretrained, "load_corpus", fake_corpus)
    monkeypatch.setattr(sp, "load_corpus", fake_corpus)
    results = sp.measure(("tiny-llama",), windows=3, length=32, draws=5)
    r = results["tiny-llama"]
    assert list(r["layers"]["layer"]) == [0, 1] and r["windows"] == 3
    assert r["layers"]["a_sink"].to_numpy() == pytest.approx(
        r["layers"]["first_attention"].to_numpy(), abs=1e-5
    )
    assert len(r["null"]) == 5
    again = sp.measure(("tiny-llama",), windows=3, length=32, draws=5)  # from the cache
    pd.testing.assert_frame_equal(again["tiny-llama"]["layers"], r["layers"])
    summary = sp.summary(results)
    assert summary.loc["tiny-llama", "layers"] == 2 and "routing_energy_random" in summary.columns
