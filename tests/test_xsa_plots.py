"""XSA's figures say what their marks are: Fig. 3's paired gaps put each mean beside its own dots and name
both, Fig. 6's uniform-attention references are labelled with their sink counts, and the gap over training
marks the evaluation the claims read early."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from attnlab.papers.xsa import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _finals() -> pd.DataFrame:
    """Final validation losses: 2L with XSA and both controls, 8L with XSA only (as the old cpu plan had)."""
    gaps = {"xsa": [0.017, -0.017, -0.091, -0.128, -0.137], "xsa-random": [0.0] * 5, "xsa-prev": [-0.1] * 5}
    rows = []
    for size, kinds in (("2L-64d", gaps), ("8L-64d", {"xsa": gaps["xsa"]})):
        for seed in range(5):
            rows.append({"size": size, "seed": seed, "sa": 2.0 + seed / 10,
                         **{k: 2.0 + seed / 10 + g[seed] for k, g in kinds.items()}})  # fmt: skip
    frame = pd.DataFrame(rows).set_index(["size", "seed"])
    frame.columns = pd.MultiIndex.from_product([["validation"], frame.columns], names=["split", "kind"])
    return frame


def test_paired_gaps_puts_the_mean_beside_its_dots_and_says_what_it_is():
    fig = plots.paired_gaps(_finals())
    one_kind = fig.axes[1]  # 8L-64d: XSA only
    dots = one_kind.collections[0].get_offsets()
    diamond = next(line for line in one_kind.lines if line.get_marker() == "D" and len(line.get_xdata()))
    x_mean, y_mean = diamond.get_xdata()[0], diamond.get_ydata()[0]
    assert y_mean == pytest.approx(np.mean([0.017, -0.017, -0.091, -0.128, -0.137]))
    assert abs(x_mean - dots[0, 0]) <= 0.25  # beside its dots, not at the far edge of the panel
    low, high = one_kind.get_xlim()
    assert high - low <= 1.5
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("one seed" in t for t in labels) and any("95%" in t for t in labels)
    assert "5 seeds" in one_kind.get_title()


def _sink_mass() -> pd.DataFrame:
    return pd.DataFrame([
        {"kind": kind, "seed": 0, "n_sink": n, "layer": layer, "sink_mass": 0.1 * (n > 0),
         "first_mass": 0.01, "sink_uniform": n / (n + 10), "first_uniform": 1 / (n + 10)}
        for kind in ("sa", "xsa") for n in (0, 1, 4) for layer in (0, 1)
    ])  # fmt: skip


def test_sink_attention_labels_each_uniform_reference_with_its_sink_count():
    fig = plots.sink_attention(_sink_mass())
    sinks, first = fig.axes
    assert {t.get_text() for t in first.texts} == {"uniform, 0 sinks", "uniform, 1 sink", "uniform, 4 sinks"}
    assert {t.get_text() for t in sinks.texts} == {"uniform, 1 sink", "uniform, 4 sinks"}
    legend = [t.get_text() for t in first.get_legend().get_texts()]
    assert any("uniform causal attention" in t for t in legend)


def test_gap_over_training_marks_the_early_reading():
    gaps = pd.DataFrame([
        {"size": "8L-64d", "kind": "xsa", "seed": seed, "step": step, "tokens": 10 * step,
         "gap": -0.1 + seed / 100}
        for seed in range(3) for step in range(0, 401, 20)
    ])  # fmt: skip
    fig = plots.gap_over_training(gaps, {"8L-64d": 40})
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "early reading (step 120)" in labels
    early = next(line for line in ax.lines if line.get_label() == "early reading (step 120)")
    assert early.get_xdata()[0] == 1200


def test_gain_by_size_puts_each_size_at_its_parameters_with_every_seed():
    finals = _finals()
    fig = plots.gain_by_size(finals, {"2L-64d": 98_000, "8L-64d": 393_000})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2L-64d\n98,000", "8L-64d\n393,000"]
    seeds = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(seeds) == 5 and list(seeds[0].get_xdata()) == [98_000, 393_000]


def test_pretrained_nulls_show_each_null_with_and_without_the_sink():
    from attnlab.papers.xsa.pretrained import COLUMNS

    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        [{"window": w, "layer": k, "depth": k / 2, **{c: rng.uniform(0.1, 0.5) for c in COLUMNS}}
         for w in range(4) for k in range(3)]
    )  # fmt: skip
    fig = plots.pretrained_nulls({"big": {"parameters": 1_777_088_000, "table": table},
                                  "small": {"parameters": 134_515_008, "table": table}})  # fmt: skip
    assert [ax.get_title().split("\n")[0] for ax in fig.axes[:2]] == ["small", "big"]
    labels = {t.get_text() for t in fig.axes[0].get_yticklabels()}
    assert labels == {label for label, _, _ in plots.NULL_ROWS}
    # one mark per null with the sink, one per null with it removed (the far token has no such null)
    marks = [c for c in fig.axes[0].containers if len(c.lines[0].get_xdata())]
    assert len(marks) == 2 * len(plots.NULL_ROWS) - 1
