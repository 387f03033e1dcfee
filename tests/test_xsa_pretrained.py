"""XSA Fig. 1 on pretrained models (attnlab.papers.xsa.pretrained): the baselines against naive loops, the
table against the reuse module's own similarity bias, and the claims on hand-built tables."""

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attnlab import reuse
from attnlab.papers.xsa import claims_pretrained as xcp
from attnlab.papers.xsa.pretrained import COLUMNS, head_baselines, layer_table
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, slope_rule


def _heads(B=2, H=4, H_kv=2, T=12, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, H, T, T, generator=g).masked_fill(
        ~torch.ones(T, T, dtype=torch.bool).tril(), -1e9
    )
    pattern = scores.softmax(-1)
    v = torch.randn(B, H_kv, T, d, generator=g)
    y = pattern @ v.repeat_interleave(H // H_kv, dim=1)
    return {"pattern": pattern, "v": v, "y": y}


def test_baselines_match_a_naive_loop():
    heads, far = _heads(), 5
    got = head_baselines(heads, far)
    B, H, T, _ = heads["y"].shape
    v = heads["v"].repeat_interleave(2, dim=1)
    for b in range(B):
        for h in range(H):
            yv = [F.cosine_similarity(heads["y"][b, h, i], v[b, h, i], dim=0) for i in range(1, T)]
            uni = [F.cosine_similarity(v[b, h, : i + 1].mean(0), v[b, h, i], dim=0) for i in range(1, T)]
            back = [F.cosine_similarity(heads["y"][b, h, i], v[b, h, i - far], dim=0) for i in range(far, T)]
            assert got["cos_yv"][b, h] == pytest.approx(float(torch.stack(yv).mean()), abs=1e-6)
            assert got["cos_uniform"][b, h] == pytest.approx(float(torch.stack(uni).mean()), abs=1e-6)
            assert got["cos_far"][b, h] == pytest.approx(float(torch.stack(back).mean()), abs=1e-6)
            diag = heads["pattern"][b, h].diagonal()[1:].mean()
            assert got["a_ii"][b, h] == pytest.approx(float(diag), abs=1e-6)
    assert float(got["a_ii_uniform"][0, 0]) == pytest.approx(np.mean([1 / (i + 1) for i in range(1, T)]))


def test_a_head_that_attends_to_itself_is_fully_aligned():
    heads = _heads(T=10)
    heads["pattern"] = torch.eye(10).expand_as(heads["pattern"]).clone()
    heads["y"] = heads["v"].repeat_interleave(2, dim=1)
    got = head_baselines(heads, far=3)
    assert torch.allclose(got["cos_yv"], torch.ones_like(got["cos_yv"]))
    assert torch.allclose(got["a_ii"], torch.ones_like(got["a_ii"]))
    assert (got["cos_uniform"] < 0.9).all()  # uniform mixing dilutes the own value
    with pytest.raises(ValueError, match="far"):
        head_baselines(heads, far=10)


def test_the_table_agrees_with_the_reuse_module():
    lm = reuse.tiny_llama(seed=1)
    windows = torch.randint(0, 256, (3, 20), generator=torch.Generator().manual_seed(0))
    table = layer_table(lm, windows, batch_size=2)
    assert len(table) == 3 * 2 and set(COLUMNS) <= set(table.columns)
    assert list(table["depth"].unique()) == [0.0, 1.0]
    reference = reuse.forward_measures(lm.model, windows).set_index("layer")
    mean = table.groupby("layer")[["cos_yv", "a_ii"]].mean()
    assert np.allclose(mean["cos_yv"], reference["cos_yv"], atol=1e-5)
    assert np.allclose(mean["a_ii"], reference["a_ii"], atol=1e-5)


def _table(windows=8, layers=6, rise=0.3, margin=0.1, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(windows):
        for layer in range(layers):
            depth = layer / (layers - 1)
            base = 0.2 + 0.02 * rng.standard_normal()
            noise = 0.01 * rng.standard_normal(2)
            rows.append({
                "window": w, "layer": layer, "depth": depth, "cos_uniform": base, "cos_far": base - 0.1,
                "cos_yv": base + margin + rise * depth + noise[0],
                "a_ii": 0.1 + rise * depth / 3 + noise[1], "a_ii_uniform": 0.05,
                **{c: base for c in COLUMNS if c.endswith(("nosink", "prev", "shuffled", "vv", "sink"))},
            })  # fmt: skip
    return pd.DataFrame(rows)


N_CLAIMS = len(xcp.PRETRAINED_CLAIMS)


def test_pretrained_claims_follow_the_evidence():
    rows = xcp.pretrained_claims(_table(), "a model")
    assert len(rows) == N_CLAIMS == 17
    assert [r.verdict.word for r in rows[:5]] == [HOLDS] * 5  # the claims as first judged, first
    assert all(r.ours.startswith("[a model; 6 layers, 8 windows]") for r in rows)
    falling = xcp.pretrained_claims(_table(rise=-0.3, margin=0.5), "a model")
    assert falling[2].claim == "the similarity bias grows with depth"
    assert falling[2].verdict.word == DOES_NOT_HOLD and falling[4].verdict.word == DOES_NOT_HOLD
    below = xcp.pretrained_claims(_table(rise=0.0, margin=-0.2), "a model")
    assert below[0].verdict.word == DOES_NOT_HOLD  # below uniform mixing
    assert [r.unit for r in rows[:5]] == ["window", "window", "layer", "window", "layer"]
    assert rows[2].verdict.n == 6 and rows[2].verdict.rule.startswith("slope over layers")
    # every row of a mean over text says so and rests on the windows; a depth trend on the layers
    for row, claim in zip(rows, xcp.PRETRAINED_CLAIMS, strict=True):
        assert row.unit == ("layer" if claim.null is None else "window")
        assert row.verdict.n == (6 if claim.null is None else 8)
        if claim.null is not None:
            assert "the windows are the units" in row.ours


def test_a_depth_trend_uses_the_layers_as_units_never_the_windows():
    """A fixed model whose layer profile has no trend (a zigzag with a slight tilt) read through 32 windows
    that barely differ: one slope per window would make the tilt significant; against random orders of its
    8 layers it is not."""
    profile = np.array([0.3, 0.6, 0.2, 0.55, 0.25, 0.6, 0.3, 0.5])
    rng = np.random.default_rng(0)
    table = pd.DataFrame([
        {"window": w, "layer": k, "depth": k / 7, "cos_yv": profile[k] + 1e-3 * rng.standard_normal()}
        for w in range(32) for k in range(8)
    ])  # fmt: skip
    v = xcp.pretrained_verdict(table, "cos_yv", None)
    assert v.word == INCONCLUSIVE and v.n == 8 and v.low < v.estimate < v.high
    per_window = table.pivot(index="window", columns="layer", values="cos_yv")
    windows_as_units = slope_rule(
        np.arange(8) / 7, {w: r.tolist() for w, r in per_window.iterrows()}, "above"
    )
    assert windows_as_units.word == HOLDS  # the old rule's answer


def test_every_pretrained_model_is_all_of_the_models():
    """With two models the table adds a row per claim "in every pretrained model", judged by all_of over the
    models (n = models): one model whose a_ii falls with depth refutes "a_ii grows with depth" in every
    model, both clear the far token, and a model whose mean a_ii equals uniform attention's leaves "a_ii is
    relatively high" open."""
    results = {
        "rising": {"description": "a rising model", "table": _table()},
        "falling": {"description": "a falling model", "table": _table(rise=-0.3, margin=0.5, seed=1)},
    }
    rows = xcp.pretrained_rows(results)
    every = {r.claim: r for r in rows if r.unit == "pretrained model"}
    assert len(rows) == 2 * N_CLAIMS + N_CLAIMS and len(every) == N_CLAIMS
    grows = every["a_ii grows with depth, in every pretrained model"]
    assert (
        grows.verdict.word == DOES_NOT_HOLD
        and grows.verdict.n == 2
        and "falling refutes it" in grows.verdict.why
    )
    assert grows.verdict.rule.startswith("all of 2 parts")
    far = "SA output is aligned with the token's own value beyond a token half a window back"
    assert every[far + ", in every pretrained model"].verdict.word == HOLDS
    # the falling model's a_ii sits at uniform attention's on average: that part stays open
    assert (
        every["diagonal attention a_ii is relatively high, in every pretrained model"].verdict.word
        == INCONCLUSIVE
    )
    assert "rising" in grows.ours and "falling" in grows.ours
    one = xcp.pretrained_rows({"rising": results["rising"]})
    assert len(one) == N_CLAIMS  # a single model: its own rows only


def test_the_pretrained_figure_names_each_model_and_its_size_on_the_size_axis():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.papers.xsa.plots import pretrained_similarity

    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        [{"window": w, "layer": k, "depth": k / 2, **{c: rng.uniform(0.1, 0.5) for c in COLUMNS}}
         for w in range(3) for k in range(3)]
    )  # fmt: skip
    fig = pretrained_similarity({"big": {"parameters": 1_777_088_000, "table": table},
                                 "small": {"parameters": 134_515_008, "table": table}})  # fmt: skip
    labels = [t.get_text() for t in fig.axes[-1].get_xticklabels()]
    assert labels == ["small\n135M", "big\n1.78B"]  # smallest first, sizes as written, not 1.78e+03M
    assert [ax.get_title() for ax in fig.axes[:2]] == ["small\n135M parameters", "big\n1.78B parameters"]


def _sink_table(windows=8, layers=4, seed=0):
    """A model whose output is aligned with its own value only through the sink: with the sink inside y_i
    cos(y_i, v_i) clears uniform mixing, the previous token and the shuffled keys; with a_i0 v_0 removed
    from both sides it sits below each of them. Its a_ii is above a_(i,i-1) with the sink and below it among
    the non-sink keys; the values are correlated with the sink's value and not without it."""
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(windows):
        for layer in range(layers):
            e = 0.01 * rng.standard_normal(8)
            rows.append({
                "window": w, "layer": layer, "depth": layer / (layers - 1),
                "cos_yv": 0.5 + e[0], "cos_uniform": 0.3, "cos_far": 0.3, "cos_prev": 0.3 + e[1],
                "cos_shuffled": 0.3 + e[2], "cos_yv_nosink": 0.1 + e[3], "cos_uniform_nosink": 0.2,
                "cos_prev_nosink": 0.25 + e[4], "cos_shuffled_nosink": 0.2 + e[5], "cos_vv": 0.2 + e[6],
                "cos_vv_nosink": -0.05 + e[7], "a_ii": 0.2 + e[0], "a_ii_uniform": 0.05, "a_prev": 0.1,
                "a_ii_nosink": 0.2 + e[1], "a_ii_uniform_nosink": 0.05, "a_prev_nosink": 0.4 + e[2],
            })  # fmt: skip
    return pd.DataFrame(rows)


def test_the_sink_removed_rows_read_the_nosink_columns_on_both_sides():
    rows = {r.claim: r for r in xcp.pretrained_claims(_sink_table(), "a sink model")}
    own = "SA output is aligned with the token's own value beyond "
    for null in ("uniform mixing", "the previous token's value", xcp.SHUFFLED):
        assert rows[own + null].verdict.word == HOLDS, null
        removed = rows[own + null + xcp.SINK_REMOVED]
        assert removed.verdict.word == DOES_NOT_HOLD and removed.verdict.high < 0, null
        assert removed.ours.startswith("[a sink model; 4 layers, 8 windows] cos(y_i - a_i0 v_0, v_i)")
    assert rows[xcp.ABOVE_PREV].verdict.word == HOLDS
    assert rows[xcp.ABOVE_PREV + xcp.SINK_REMOVED].verdict.word == DOES_NOT_HOLD
    assert rows[xcp.HIGH + xcp.SINK_REMOVED].verdict.word == HOLDS


def test_values_are_correlated_is_judged_against_zero_over_the_windows():
    """cos(v_i, v_j) > 0: a constant null, each window's mean over layers a unit (8 windows, not 32 rows);
    without the sink's value the same model's values are anti-correlated."""
    rows = {r.claim: r for r in xcp.pretrained_claims(_sink_table(), "m")}
    with_sink = rows[xcp.CORRELATED].verdict
    assert with_sink.word == HOLDS and with_sink.null == 0.0 and with_sink.n == 8
    assert with_sink.estimate == pytest.approx(_sink_table()["cos_vv"].mean())
    without = rows[xcp.CORRELATED + xcp.SINK_REMOVED].verdict
    assert without.word == DOES_NOT_HOLD and without.high < 0
    # the windows are the units: one window far below and seven barely above leave the claim open
    table = _sink_table()
    table.loc[table["window"] == 0, "cos_vv"] = -1.2
    table.loc[table["window"] != 0, "cos_vv"] = 0.02 + 0.001 * table["layer"]
    v = xcp.pretrained_verdict(table, "cos_vv", 0.0)
    assert v.n == 8 and v.word == INCONCLUSIVE
