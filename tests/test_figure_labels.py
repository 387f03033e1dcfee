"""Every paper's figures are fit for a paper: each visible axis says what it shows (its quantity and unit; a
categorical axis names its categories, the inner panels of a shared axis lean on the outer one) and no legend
sits over the data (``attnlab.runner.style.figure_problems``). Each figure is drawn from small hand-made
inputs shaped like the experiments' results."""

import functools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnlab.runner.style import figure_problems, legend_below  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


RNG = np.random.default_rng(0)


# --- the check itself ---------------------------------------------------------------------------------------


def test_an_axis_without_its_label_is_named():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [0.1, 0.4, 0.2])
    ax.set_xlabel("step")
    assert figure_problems(fig) == ["panel 0 ('panel 0'): no y label"]
    ax.set_ylabel("loss (nats)")
    assert figure_problems(fig) == []


def test_a_shared_axis_needs_its_label_on_the_outer_panel_only():
    fig, axes = plt.subplots(1, 3, sharey=True)
    for ax in axes:
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel("step")
    axes[1].set_ylabel("loss")  # an inner panel, whose ticks are hidden: the outer one has no label
    assert figure_problems(fig) == ["panel 0 ('panel 0'): no y label", "panel 2 ('panel 2'): no y label"]
    axes[1].set_ylabel("")
    axes[0].set_ylabel("loss")
    assert figure_problems(fig) == []


def test_a_categorical_axis_is_exempt_and_a_numeric_heatmap_is_not():
    import seaborn as sns

    fig, ax = plt.subplots()
    sns.heatmap(np.eye(3), ax=ax, xticklabels=["a", "b", "c"], yticklabels=["x", "y", "z"], cbar=False)
    assert figure_problems(fig) == []  # the tick labels name the categories
    fig, ax = plt.subplots()
    sns.heatmap(np.eye(3), ax=ax, cbar_kws={"label": "share"})  # numbered rows and columns: say what they are
    assert figure_problems(fig) == ["panel 0 ('panel 0'): no x label", "panel 0 ('panel 0'): no y label"]
    fig, ax = plt.subplots()
    ax.plot([1, 10, 100], [1, 2, 3])
    ax.set(xscale="log", ylabel="y")  # log ticks are numbers, written in mathtext
    assert figure_problems(fig) == ["panel 0 ('y'): no x label"]


def test_a_legend_over_the_data_is_named_and_one_beside_or_below_it_is_not():
    x = np.linspace(0, 1, 40)
    fig, ax = plt.subplots()
    ax.plot(x, 0.5 + 0.0 * x, "o", label="flat")
    ax.set(xlabel="x", ylabel="y")
    ax.legend(loc="center")
    [problem] = figure_problems(fig)
    assert problem.startswith("legend ('flat') covers") and problem.endswith("panel 0")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    assert figure_problems(fig) == []
    fig, ax = plt.subplots()
    ax.bar(range(5), [1, 2, 3, 4, 5], label="bars")
    ax.set(xlabel="x", ylabel="y")
    ax.legend(loc="upper right")  # over the tallest bar
    assert figure_problems(fig) and "bars" in figure_problems(fig)[0]
    legend_below(fig)
    assert figure_problems(fig) == [] and ax.get_legend() is None


# --- hand-made results, shaped like each experiment's -------------------------------------------------------


def _scale_table() -> pd.DataFrame:
    """The scale view of four models and three claims, one model not testable on one claim (a far-off
    estimate) and one missing a claim."""
    models = {
        "smollm2": 134_515_008,
        "gemma3-270m": 268_098_176,
        "qwen2.5-coder-0.5b": 630_167_424,
        "qwen2.5-coder-1.5b": 1_777_088_000,
    }
    rows = []
    for k, claim in enumerate(
        [
            "Fig. 1: the first token gets a large attention mass but contributes little",
            "sinks: output norm is convex in the sink rate",
            "sink-norm removal: removing the sink's value norm raises the perplexity",
        ]
    ):
        for j, (model, parameters) in enumerate(models.items()):
            if k == 1 and j == 0:
                continue
            estimate = 0.1 * (j - 1.5) + 0.05 * k
            verdict = ["holds", "does not hold", "inconclusive"][(j + k) % 3]
            if k == 2 and j == 1:
                verdict, estimate = "not testable here", 2861.5
            rows.append(
                {
                    "claim": claim,
                    "model": model,
                    "parameters": parameters,
                    "verdict": verdict,
                    "estimate": estimate,
                    "low": estimate - 0.05,
                    "high": estimate + 0.05,
                    "null": 0.0,
                    "n": 20,
                }
            )
    return pd.DataFrame(rows)


def _cw_curves() -> pd.DataFrame:
    from attnlab.papers.contribution_weights.presets import RANKINGS

    rows = []
    for text in ("brown", "gsm8k"):
        for layers in ("layer 5", "layers 5+15"):
            for scope in ("head", "joint"):
                for mode, measures in RANKINGS.items():
                    for r, m in enumerate(measures):
                        for w in range(4):
                            for f in (0.0, 0.05, 0.2, 0.5):
                                rows.append(
                                    {
                                        "text": text,
                                        "layers": layers,
                                        "scope": scope,
                                        "mode": mode,
                                        "measure": m,
                                        "window": w,
                                        "fraction": f,
                                        "delta_ppl": (1 + r) * f * (1 + 0.1 * w),
                                    }
                                )
    return pd.DataFrame(rows)


def _cw_downstream() -> pd.DataFrame:
    from attnlab.papers.contribution_weights.presets import RANKINGS

    rows = []
    for task in ("winogrande", "boolq"):
        for item in range(30):
            rows.append(
                {
                    "task": task,
                    "item": item,
                    "mode": "none",
                    "measure": "none",
                    "credit": float(RNG.random() < 0.7),
                    "chance": 0.5,
                }
            )
            for mode, measures in RANKINGS.items():
                for m in measures:
                    rows.append(
                        {
                            "task": task,
                            "item": item,
                            "mode": mode,
                            "measure": m,
                            "credit": float(RNG.random() < 0.55),
                            "chance": 0.5,
                        }
                    )
    return pd.DataFrame(rows)


def _cw_fits(heads: int = 6) -> pd.DataFrame:
    from attnlab.papers.contribution_weights.sinks import binned_minimum, convex_fit

    rows = []
    for h in range(heads):
        rate = RNG.uniform(0, 1, 200) ** (1 + h % 3)
        norm = np.abs(40 * (1 - rate) ** 2 + 5 + RNG.normal(0, 3, 200))
        rows.append(
            {
                "layer": h % 3,
                "head": h,
                **convex_fit(rate, norm),
                **binned_minimum(rate, norm),
                "rate_sample": rate,
                "norm_sample": norm,
            }
        )
    return pd.DataFrame(rows)


@functools.cache  # built once: each figure draws from them afresh
def _contribution_weights() -> dict:
    from attnlab.papers.contribution_weights import plots
    from attnlab.runner.scale_figure import scale_figure

    T = 8
    heads = []
    for layer, head in ((3, 1), (7, 4)):
        a = torch.tril(torch.rand(T, T))
        a = a / a.sum(-1, keepdim=True)
        heads.append({"attention": a, "contribution": a * torch.randn(T, T), "layer": layer, "head": head})
    curves = _cw_curves()
    decomposition = pd.DataFrame(
        [
            {
                "group": g,
                "layer": layer,
                "mean_attention": 0.5 if g == "sink" else 0.05,
                "mean_norm_ratio": 0.2 if g == "sink" else 1.1,
                "mean_cosine": 0.1,
                "mean_contribution": 0.1,
            }
            for g in ("sink", "tail")
            for layer in range(6)
        ]
    )
    cosines = pd.DataFrame({"layer": range(4), "sample": [RNG.normal(-0.05, 0.2, 50) for _ in range(4)]})
    positions = pd.DataFrame(
        [
            {"layer": layer, "window": w, "position": p, "cosine": RNG.normal(0.1 * p, 0.05)}
            for layer in range(4)
            for w in range(3)
            for p in (0, 1, 5)
        ]
    )
    spread = pd.DataFrame(
        [
            {
                "layer": layer,
                "state": s,
                "cone": 0.3 + 0.1 * (s == "sink removed"),
                "norm_cv": 0.5 + 0.01 * layer,
            }
            for layer in range(6)
            for s in ("clean", "sink removed")
        ]
    )
    cost = pd.DataFrame(
        [("contribution_weights", T, 0.01 * T, 0.001 * T) for T in (128, 256, 512)]
        + [("naive", 128, 0.5, 0.3), ("naive", 256, 2.0, 1.4), ("naive", 512, np.nan, np.nan)],
        columns=["impl", "T", "seconds", "peak_gb"],
    )
    return {
        "fig1": lambda: plots.fig1({"tokens": [f"t{i}" for i in range(T)], "heads": heads}),
        "faithfulness": lambda: plots.faithfulness(curves, "joint"),
        "areas": lambda: plots.areas(curves),
        "downstream": lambda: plots.downstream(_cw_downstream()),
        "decomposition": lambda: plots.decomposition(decomposition),
        "sink_cosines": lambda: plots.sink_cosines(cosines, positions),
        "sink_rate_vs_norm": lambda: plots.sink_rate_vs_norm(_cw_fits()),
        "sink_removal": lambda: plots.sink_removal(spread, {"clean": 20.3, "sink removed": 31.0}),
        "cost": lambda: plots.cost(cost, max_gb=1.5),
        "scale": lambda: scale_figure(_scale_table(), "Contribution weights by model size"),
    }


@functools.cache
def _qk_speed() -> dict:
    from attnlab.papers import qk_speed
    from attnlab.papers.qk_speed import plots
    from attnlab.papers.qk_speed.dynamics import simulate

    runs = ["FAFO", "FACO", "FAFO (QK 1e-6 I)", "FAFO QK x20"]
    masses = pd.DataFrame(
        [
            {"run": run, "seed": s, "mass": m}
            for k, run in enumerate(runs)
            for s in range(3)
            for m in np.clip(0.3 + 0.1 * k + 0.1 * RNG.standard_normal(40), 0, 1)
        ]
    )
    hist = np.zeros((5, 5))
    hist[1:3, -1] = (60.0, 40.0)  # every sample in the top probability bin, as at cpu scale
    fig3 = pd.DataFrame(
        [
            {"ov": ov, "alpha": a, "epoch": e, "seed": s, "loss": (1 + s / 10) / (e + 1), "fd": 0.1 / (e + 1)}
            for ov in ("factorised", "collapsed")
            for a in (0.2, 1.0)
            for e in range(5)
            for s in range(2)
        ]
    )
    sims = {r: simulate(r, loss_stop=1e-2, record_every=50) for r in (1.0, 10.0)}
    ratio = pd.DataFrame(
        [
            {
                "init": init,
                "ratio": r,
                "seed": s,
                "mass": 0.35 + 0.04 * r**0.5 + 0.01 * s,
                "accuracy": 1.0,
                "moved": 0.0 if r < 5 else 0.3,
            }
            for init in ("QK at nn.Linear default", "QK at 1e-6 I")
            for r in (0.5, 1, 2, 5, 10, 20)
            for s in range(3)
        ]
    )
    variants = pd.DataFrame(
        [
            {
                "variant": v,
                "seed": s,
                "mass": 0.2 + 0.3 * (v != "baseline") + 0.01 * s,
                "correct": 0.9,
                "f1": 0.5 + 0.02 * s,
            }
            for v in ("baseline", "fast QK x5")
            for s in range(3)
        ]
    )
    ac = pd.DataFrame(
        [
            {"variant": v, "seed": s, "AC": 10.0 + 30 * (v != "baseline") + s}
            for v in ("baseline", "fast QK x5")
            for s in range(3)
        ]
    )
    growth = qk_speed.QKSpeedExperiment.growth_fits(sims)
    return {
        "distinct_mass": lambda: plots.distinct_mass(masses),
        "dtap_grid": lambda: plots.dtap_grid({run: hist for run in runs}),
        "dtap_grid_spread": lambda: plots.dtap_grid({"A": np.full((5, 5), 4.0), "B": np.full((5, 5), 4.0)}),
        "fixed_attention": lambda: plots.fixed_attention(fig3),
        "reduced_dynamics": lambda: plots.reduced_dynamics(sims),
        "growth_laws": lambda: plots.growth_laws(sims, growth),
        "ratio_sweep": lambda: plots.ratio_sweep(ratio),
        "ratio_sweep_accuracy": lambda: plots.ratio_sweep(ratio.assign(accuracy=0.5 + 0.02 * ratio["ratio"])),
        "stopping_thresholds": lambda: plots.stopping_thresholds(
            qk_speed.QKSpeedExperiment.stopping_curves(sims)
        ),
        "variant_bars": lambda: plots.variant_bars(
            variants, {"mass": "attention on subject", "f1": "F1"}, ac
        ),
    }


@functools.cache
def _sd_routing() -> dict:
    from attnlab.papers.sd_routing import plots
    from attnlab.papers.sd_routing.presets import REALLOC_CONTROLS, VARIANTS
    from attnlab.papers.sd_routing.routing import MEASURE_COLUMNS

    models = ["minilm", "smollm2", "qwen2.5-coder-1.5b"]
    summary = pd.DataFrame(
        [
            {
                "model": m,
                "weights": w,
                "filtering dominant %": 60 + 10 * k,
                "routing rank < filtering rank %": 20.0 + k,
                "routing stable rank < filtering %": 15.0 + k,
                "unstable %": 100.0,
            }
            for k, m in enumerate(models)
            for w in ("trained", "random init")
        ]
    ).set_index(["model", "weights"])
    cascade = pd.DataFrame(
        [
            {
                "variant": v,
                "size": size,
                "seed": s,
                "depth": layer / 3,
                "head_dim": 16,
                **{c: (0.3 if c.endswith("top_plane") else 3.0 + layer + s) for c in MEASURE_COLUMNS},
            }
            for v in VARIANTS
            for size in ("4L-64d", "4L-128d")
            for s in range(2)
            for layer in range(4)
        ]
    )
    baseline = pd.DataFrame(
        [
            {"variant": v, "size": size, **{c: 6.0 for c in MEASURE_COLUMNS}}
            for v in VARIANTS
            for size in ("4L-64d", "4L-128d")
        ]
    )
    trend = pd.DataFrame(
        [
            {
                "variant": v,
                "measure": m,
                "size": size,
                "params": p,
                "seed": s,
                "fraction at min rank": 0.2 + 0.3 * k + 0.05 * s,
            }
            for v in ("sd", "sd-shared")
            for m in ("entropy rank", "stable rank")
            for k, (size, p) in enumerate((("4L-64d", 2e5), ("6L-128d", 1.2e6)))
            for s in range(2)
        ]
    )
    collapse = pd.DataFrame(
        [
            {
                "space": space,
                "variant": v,
                "intervention": i,
                "size": "4L-64d",
                "seed": s,
                "ppl change %": 5.0 + 20 * (i == "routing removed") + s,
            }
            for space in ("model", "head")
            for v in VARIANTS
            for i in ("filtering to a scalar", "routing removed")
            for s in range(2)
        ]
    )
    linear = pd.DataFrame(
        [
            {"mode": mode, "variant": v, "k": k, "seed": s, "ppl change %": 2.0 * k + s}
            for mode in ("post hoc", "retrained")
            for v in ("sa", "sd")
            for k in range(4)
            for s in range(2)
        ]
    )
    realloc = pd.DataFrame(
        [
            {
                "variant": v,
                "model": m,
                "seed": s,
                "attn params": 1e4 * (2 + k),
                "ppl": 3.0 + 0.1 * k,
                "head dims": "16,16",
            }
            for v in ("sd", "sd-shared")
            for k, m in enumerate(("uniform", "reallocated", *REALLOC_CONTROLS))
            for s in range(2)
        ]
    )
    bench = pd.DataFrame(
        [
            {"kind": kind, "size": size, "seq_len": t, "time / SA": 1.0 + 0.2 * (kind == "sd")}
            for kind in ("sa", "sd", "linear")
            for size in ("4L-64d",)
            for t in (64, 128, 256)
        ]
    )
    return {
        "head_statistics": lambda: plots.head_statistics(summary, models),
        "cascade": lambda: plots.cascade(cascade, baseline),
        "scale_trend": lambda: plots.scale_trend(trend),
        "collapse": lambda: plots.collapse(collapse),
        "linearisation": lambda: plots.linearisation(linear, "4L-64d"),
        "reallocation": lambda: plots.reallocation(realloc),
        "cost": lambda: plots.cost(bench, "cpu"),
    }


@functools.cache
def _synthesis() -> dict:
    from attnlab.papers.synthesis import plots

    kinds = ["sa", "xsa", "sd"]
    table = pd.DataFrame(
        [
            {"kind": k, "measure": m, "mean": 0.1 * i + 0.01 * j, "low": 0.1 * i, "high": 0.1 * i + 0.02}
            for i, k in enumerate([*kinds, "random init"])
            for j, m in enumerate(("val_loss", "cos_yv", "a_ii"))
        ]
    )
    lens = pd.DataFrame(
        [
            {
                "kind": k,
                "state": st,
                "ratio": r,
                "seed": s,
                "layer": layer,
                "cos_yv": 0.3 + 0.1 * i,
                "a_ii": 0.2,
                "cos_vv": 0.1,
                "first_attention": 0.4,
                "first_contribution": 0.1,
                "uniform": 0.25,
                "entropy": 0.6,
                "routing_energy": 0.5,
                "form_stable_rank": 3.0,
            }
            for i, k in enumerate(kinds)
            for st in ("trained", "init")
            for r in (0.5, 1.0, 2.0)
            for s in range(2)
            for layer in range(3)
        ]
    )
    values = pd.DataFrame(
        [
            {
                "kind": k,
                "state": "trained",
                "ratio": r,
                "seed": s,
                "first_attention": 0.3 + 0.1 * i,
                "first_contribution": 0.1,
                "sink_value_cos": -0.05 * i,
                "control_value_cos": 0.1,
                "entropy": 0.6 - 0.05 * i,
                "val_loss": 2.0 + 0.1 * i,
            }
            for i, k in enumerate(kinds)
            for r in (0.5, 1.0, 2.0)
            for s in range(2)
        ]
    )
    areas = pd.DataFrame(
        [
            {"kind": k, "mode": mode, "measure": m, "seed": s, "area": 0.1 * j + 0.01 * s}
            for k in kinds
            for mode in ("comprehensiveness", "sufficiency")
            for j, m in enumerate(("random", "raw", "contribution"))
            for s in range(2)
        ]
    )
    return {
        "overview": lambda: plots.overview(table),
        "by_layer": lambda: plots.by_layer(lens, ["cos_yv", "a_ii", "cos_vv"], kinds, reference="uniform"),
        "sink_geometry": lambda: plots.sink_geometry(values, kinds),
        "ratio_effects": lambda: plots.ratio_effects(values, kinds),
        "faithfulness": lambda: plots.faithfulness(areas, kinds),
    }


@functools.cache
def _xsa_pretrained() -> dict:
    from attnlab.papers.xsa.pretrained import COLUMNS

    out = {}
    for name, parameters, layers in (
        ("smollm2", 134_515_008, 30),
        ("gemma3-270m", 268_098_176, 18),
        ("qwen2.5-coder-0.5b", 630_167_424, 24),
        ("qwen2.5-coder-1.5b", 1_777_088_000, 28),
    ):
        table = pd.DataFrame(
            [
                {
                    "window": w,
                    "layer": k,
                    "depth": k / (layers - 1),
                    **{c: RNG.uniform(0.2, 0.6) for c in COLUMNS},
                }
                for w in range(8)
                for k in range(layers)
            ]
        )
        out[name] = {"parameters": parameters, "table": table}
    return out


@functools.cache
def _xsa() -> dict:
    from attnlab.papers.xsa import plots

    kinds = ("sa", "xsa", "xsa-random", "xsa-prev")
    curves = pd.DataFrame(
        [
            {
                "size": size,
                "kind": k,
                "seed": s,
                "step": step,
                "split": split,
                "loss": 2.0 + 3.0 / (1 + step / 50) - 0.02 * i + 0.01 * s,
            }
            for size in ("2L-64d", "8L-64d")
            for i, k in enumerate(kinds)
            for s in range(3)
            for step in range(0, 401, 40)
            for split in ("train", "validation")
        ]
    )
    diag = pd.DataFrame(
        [
            {
                "kind": k,
                "layer": layer,
                "seed": s,
                "cos_vv": 0.2,
                "a_ii": 0.3 - 0.05 * layer,
                "cos_yv": 0.5 - 0.1 * i,
                "cos_zv": 0.1 * i,
                "a_ii_uniform": 1 / (layer + 2),
            }
            for i, k in enumerate(kinds)
            for layer in range(4)
            for s in range(3)
        ]
    )
    costs = pd.DataFrame(
        [
            {
                "kind": k,
                "d_model": d,
                "seq_len": t,
                "time_ms": t * d / 1e3 * (1.1 if k == "xsa" else 1),
                "memory_mib": t * d / 1e2,
            }
            for k in ("sa", "xsa")
            for d in (64, 128)
            for t in (128, 256, 512)
        ]
    )
    sweep = pd.DataFrame(
        [
            {
                "kind": k,
                "seed": s,
                "lr": lr,
                "train": 2.0 + abs(np.log10(lr) + 3) / 5,
                "validation": 2.1 + abs(np.log10(lr) + 3) / 5 - 0.03 * (k == "xsa"),
            }
            for k in ("sa", "xsa")
            for s in range(3)
            for lr in (3e-4, 1e-3, 3e-3)
        ]
    )
    gaps = pd.DataFrame(
        [
            {"size": "8L-64d", "kind": k, "seed": s, "step": step, "tokens": 10 * step, "gap": -0.1 + s / 100}
            for k in ("xsa", "xsa-prev")
            for s in range(3)
            for step in range(0, 401, 20)
        ]
    )
    finals_rows = []
    for size in ("2L-64d", "8L-64d"):
        for s in range(5):
            finals_rows.append(
                {
                    "size": size,
                    "seed": s,
                    "sa": 2.0 + s / 10,
                    **{k: 2.0 + s / 10 - 0.05 * (i + 1) + 0.01 * s for i, k in enumerate(kinds[1:])},
                }
            )
    finals = pd.DataFrame(finals_rows).set_index(["size", "seed"])
    finals.columns = pd.MultiIndex.from_product([["validation"], finals.columns], names=["split", "kind"])
    sink_mass = pd.DataFrame(
        [
            {
                "kind": k,
                "seed": 0,
                "n_sink": n,
                "layer": layer,
                "sink_mass": 0.1 * (n > 0),
                "first_mass": 0.01,
                "sink_uniform": n / (n + 10),
                "first_uniform": 1 / (n + 10),
            }
            for k in ("sa", "xsa")
            for n in (0, 1, 4)
            for layer in (0, 1, 2)
        ]
    )
    pretrained = _xsa_pretrained()
    return {
        "loss_curves": lambda: plots.loss_curves(curves),
        "layer_diagnostics": lambda: plots.layer_diagnostics(diag),
        "block_costs": lambda: plots.block_costs(costs, device="cpu"),
        "sweep": lambda: plots.sweep(sweep, "lr", "peak learning rate", log_x=True, title="2L-64d"),
        "gap_over_training": lambda: plots.gap_over_training(gaps, {"8L-64d": 40}),
        "paired_gaps": lambda: plots.paired_gaps(finals),
        "sink_attention": lambda: plots.sink_attention(sink_mass),
        "pretrained_similarity": lambda: plots.pretrained_similarity(pretrained),
        "gain_by_size": lambda: plots.gain_by_size(finals, {"2L-64d": 98_000, "8L-64d": 393_000}),
        "pretrained_nulls": lambda: plots.pretrained_nulls(pretrained),
    }


PAPERS = {
    "contribution_weights": _contribution_weights,
    "qk_speed": _qk_speed,
    "sd_routing": _sd_routing,
    "synthesis": _synthesis,
    "xsa": _xsa,
}
FIGURES = [(paper, name) for paper, figures in PAPERS.items() for name in figures()]


@pytest.mark.parametrize(("paper", "name"), FIGURES, ids=[f"{p}-{n}" for p, n in FIGURES])
def test_every_axis_is_labelled_and_no_legend_covers_the_data(paper, name):
    fig = PAPERS[paper]()[name]()
    assert figure_problems(fig) == []


# --- the six figures a reader rated badly, redrawn ----------------------------------------------------------


def test_the_scale_view_is_one_grid_whose_cells_write_each_estimate_in_its_own_unit():
    from attnlab.runner.scale_figure import scale_figure

    [ax] = scale_figure(_scale_table(), "t").axes
    assert len(ax.get_yticklabels()) == 3 and ax.get_xticklabels()[0].get_text() == "smollm2\n135M"
    texts = [t.get_text() for t in ax.texts]
    assert "not testable (2.86e+03)" in texts and len(texts) == 11  # one cell missing: no row, no text


def test_the_ratio_sweep_drops_an_accuracy_flat_at_its_ceiling_and_says_so():
    figures = _qk_speed()
    flat, moving = figures["ratio_sweep"](), figures["ratio_sweep_accuracy"]()
    assert len(
        flat.axes
    ) == 1 and "accuracy 1 at every ratio and seed (no panel)" in flat._suptitle.get_text().replace("\n", " ")
    assert [ax.get_title() for ax in moving.axes] == ["mass on distinct tokens", "accuracy"]
    assert flat.legends and all(ax.get_legend() is None for ax in flat.axes)


def test_the_dtap_heatmaps_leave_out_empty_probability_rows():
    figures = _qk_speed()
    [ax, bar] = figures["dtap_grid"]().axes  # every sample in [0.8, 1]: one heatmap, a row per run
    assert [t.get_text() for t in ax.get_yticklabels()] == ["FAFO", "FACO", "FAFO (QK 1e-6 I)", "FAFO QK x20"]
    assert "[0.8, 1]" in ax.get_title() and "[0, 0.2)" in ax.get_title() and bar.get_ylabel()
    spread = figures["dtap_grid_spread"]()  # samples in every bin: a panel per run, every row
    assert len([a for a in spread.axes if a.axison and a.get_label() != "<colorbar>"]) == 2


def test_pretrained_similarity_draws_one_panel_per_model():
    fig = _xsa()["pretrained_similarity"]()
    models = fig.axes[:-1]
    assert [ax.get_title().split("\n")[0] for ax in models] == list(_xsa_pretrained())
    assert all(len([line for line in ax.lines if len(line.get_xdata())]) == 2 for ax in models)


def test_pretrained_heads_are_named_by_short_names_and_a_flat_share_gets_no_panel():
    fig = _sd_routing()["head_statistics"]()
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert names[1] == "SmolLM2-135M-Instruct" and not any("(" in name for name in names)
    assert len(fig.axes) == 3 and "Re λ(W) > 0: 100 % for every model" in fig._suptitle.get_text()


def test_the_sink_fit_is_not_drawn_where_its_quadratic_is_negative():
    from attnlab.papers.contribution_weights import plots
    from attnlab.papers.contribution_weights.sinks import binned_minimum, convex_fit

    rate = np.linspace(0.01, 1, 200)
    norm = np.abs(40 * (1 - rate) ** 3 + RNG.normal(0, 0.5, 200))  # ||o||^2's quadratic fit dips below 0
    head = {
        "layer": 0,
        "head": 0,
        **convex_fit(rate, norm),
        **binned_minimum(rate, norm),
        "rate_sample": rate,
        "norm_sample": norm,
    }
    fig = plots.sink_rate_vs_norm(pd.DataFrame([head]), n_heads=1)
    [fit] = [line for line in fig.axes[0].lines if line.get_label() == plots.FIT_LABEL]
    y = np.asarray(fit.get_ydata(), dtype=float)
    assert np.isnan(y).any() and np.nanmin(y) > 0  # a gap, not a flat line at 0
