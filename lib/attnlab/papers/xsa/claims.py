"""Exclusive Self Attention (XSA, arXiv 2603.09078): the paper's claims judged on this run's measurements.

The notebook gathers its tables into one :class:`Evidence` (the experiment's ``claims`` method adds the run's
settings: sizes, warm-up steps, device) and :func:`claims` writes each claims row from it alone. The verdicts
are the pure rules of :mod:`attnlab.papers.xsa.rules`; every row names its unit of replication: a trained
model (seed), a pretrained model, a layer, a text window, a timing repeat, or none (an identity).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Protocol

import numpy as np
import pandas as pd

from attnlab.papers.xsa import rules
from attnlab.papers.xsa.presets import PAPER_TABLE2_AVG, paper_task_text
from attnlab.papers.xsa.rules import EARLY_WARMUPS, OVERHEAD_LIMIT, STEADY_SLOPE_MARGIN, early_and_final
from attnlab.papers.xsa.zero_shot import (
    BASELINES,
    CLAIM_SCORINGS,
    GREEDY,
    SCORING_LABELS,
    ZERO_SHOT_COLUMNS,
    baseline_label,
    best_baseline,
)
from attnlab.runner.claims import Claim, signed
from attnlab.runner.claims import interval as _ci
from attnlab.runner.stats import estimate
from attnlab.runner.verdicts import Verdict, paired

__all__ = ["EARLY_WARMUPS", "STEADY_SLOPE_MARGIN", "Evidence", "claims", "early_and_final"]

# Evidence -------------------------------------------------------------------------------------------------

#: The columns each table of :class:`Evidence` must have: a table passed under the wrong name fails there,
#: not in a verdict.
EVIDENCE_COLUMNS = {
    "loss_curves": ("size", "kind", "seed", "step", "split", "loss"),
    "layer_diagnostics": ("kind", "seed", "layer", "cos_vv", "a_ii", "a_ii_uniform", "cos_yv",
                          "zv_residual", "cos_zv"),
    "block_costs": ("kind", "d_model", "seq_len", "repeat", "time_ms", "memory_mib"),
    "seq_len_sweep": ("kind", "seed", "seq_len", "validation"),
    "sink_sweep": ("kind", "seed", "n_sink", "validation"),
    "sink_attention": ("kind", "seed", "n_sink", "layer", "sink_mass", "first_mass", "sink_uniform",
                       "first_uniform"),
    "zero_shot": ZERO_SHOT_COLUMNS,
}  # fmt: skip


class LearningRateGrid(Protocol):
    """What the claims read of a size's learning-rate search (``XSAExperiment.tune``'s ``Grid``)."""

    @property
    def size(self) -> str: ...
    @property
    def frame(self) -> pd.DataFrame: ...
    @property
    def note(self) -> str: ...


@dataclass(frozen=True)
class Evidence:
    """The notebook's tables that the claims are judged on, by name (each produced by the
    :class:`~attnlab.papers.xsa.experiment.XSAExperiment` method of the same purpose), and the run's settings
    the rows need (filled in by ``XSAExperiment.claims``)."""

    lr_grids: Mapping[str, LearningRateGrid]  # Fig. 4: size -> its learning-rate search (``tune``)
    loss_curves: pd.DataFrame  # Fig. 3, gap over training, controls (``loss_curves``)
    layer_diagnostics: pd.DataFrame  # Fig. 1, Alg. 1 (``layer_diagnostics``)
    block_costs: pd.DataFrame  # Fig. 2 (``block_costs``: SA and XSA alternated, one row per repeat)
    seq_len_sweep: pd.DataFrame  # Fig. 5 (``seq_len_sweep``)
    sink_sweep: pd.DataFrame  # Fig. 6 (``sink_sweep``)
    sink_attention: pd.DataFrame  # Fig. 6, measured (``sink_attention``)
    zero_shot: pd.DataFrame  # Table 2 (``zero_shot``)
    # Fig. 1 on pretrained models: name -> {"description", "table", ...} (``pretrained.measure_models``)
    pretrained: Mapping[str, Mapping] = field(default_factory=dict)
    sizes: tuple[str, ...] = ()  # the trained sizes, smallest first (Fig. 1 reads the last)
    control_sizes: tuple[str, ...] = ()  # the sizes trained with XSA's controls
    warmup_steps: Mapping[str, int] = field(default_factory=dict)  # size -> its warm-up steps
    device: str = ""  # where Fig. 2 was timed ("cpu", "cuda")

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("lr_grids", "pretrained", "warmup_steps") and not isinstance(value, Mapping):
                raise ValueError(f"Evidence.{f.name} must be a mapping by name; got {type(value)}")
            if f.name not in EVIDENCE_COLUMNS:  # a setting
                continue
            if not isinstance(value, pd.DataFrame):
                raise ValueError(f"Evidence.{f.name} must be a DataFrame; got {type(value).__name__}")
            missing = [c for c in EVIDENCE_COLUMNS[f.name] if c not in value.columns]
            if len(value) and missing:
                raise ValueError(f"Evidence.{f.name} lacks the columns {missing}: is it the right table?")


# Claims rows ----------------------------------------------------------------------------------------------


def claims(evidence: Evidence) -> list[Claim]:
    """Every claim of the paper, with a verdict computed from this run's measurements (``evidence`` alone):
    the learning-rate grids (Fig. 4), loss curves (Fig. 3, its gap over training and XSA's controls), layer
    diagnostics (Fig. 1), block costs (Fig. 2), the sequence-length and sink sweeps with the sinks' attention
    mass (Figs. 5-6), zero-shot accuracies (Table 2), and Fig. 1 on each pretrained model and on all of
    them."""
    e = evidence
    return [
        *_claims_fig1(e.layer_diagnostics),
        *_claims_fig2(e.block_costs, e.device),
        *_claims_fig3(e),
        *_claims_gap_over_training(e),
        *_claims_controls(e),
        *_claims_fig4(e.lr_grids),
        *_claims_fig5(e.seq_len_sweep),
        *_claims_fig6(e.sink_sweep, e.sink_attention),
        *_claims_table2(e.zero_shot),
        *pretrained_rows(e.pretrained),
    ]


def final_losses(curves: pd.DataFrame) -> pd.DataFrame:
    """Final train and validation loss per (size, seed), a column per (split, kind) (as
    ``XSAExperiment.final_losses``)."""
    last = curves[curves["step"] == curves.groupby(["size", "kind", "seed"])["step"].transform("max")]
    return last.pivot_table(index=["size", "seed"], columns=["split", "kind"], values="loss")


def gap_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """Each kind's validation loss minus SA's of the same size and seed at every evaluation (size, kind,
    seed, step, gap; as ``XSAExperiment.gap_curves``)."""
    val = curves[curves["split"] == "validation"]
    wide = val.pivot_table(index=["size", "seed", "step"], columns="kind", values="loss")
    gaps = wide.drop(columns="sa").sub(wide["sa"], axis=0)
    tidy = gaps.reset_index().melt(id_vars=["size", "seed", "step"], var_name="kind", value_name="gap")
    return tidy.dropna(subset=["gap"])


def _by_seed(series: pd.Series) -> dict[Hashable, float]:
    """``{seed: value}`` of a Series indexed by seed."""
    return {seed: float(v) for seed, v in series.items()}


def _per_layer(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``metric`` averaged over sequences and heads: a row per seed, a column per layer."""
    return frame.groupby(["seed", "layer"])[metric].mean().unstack("layer")


def _layers(wide: pd.DataFrame) -> dict[Hashable, dict[Hashable, float]]:
    """``{"layer l": {seed: value}}`` of a seed x layer table."""
    return {f"layer {layer}": _by_seed(wide[layer]) for layer in wide.columns}


def _join(values: Sequence[float], digits: int = 2) -> str:
    return ", ".join(f"{x:.{digits}f}" for x in values)


def _power_of_ten_above(x: float) -> float:
    """The smallest power of ten above ``x``: a bound that does not change with rounding noise."""
    return 10.0 ** math.floor(math.log10(max(x, 1e-30)) + 1)


def _claims_fig1(diag: pd.DataFrame) -> list[Claim]:
    size = str(diag["size"].iloc[0]) if "size" in diag and len(diag) else "the deepest size"
    sa_rows = diag[diag["kind"] == "sa"]
    sa = sa_rows.groupby("layer")[["cos_vv", "a_ii", "a_ii_uniform", "cos_yv"]].mean()
    cos_yv, cos_vv, a_ii = sa["cos_yv"].to_numpy(), sa["cos_vv"].to_numpy(), sa["a_ii"].to_numpy()
    uniform = float(sa_rows["a_ii_uniform"].mean())  # 1/(i+1) averaged over positions: one value per length
    yv, vv, aii = (_per_layer(sa_rows, m) for m in ("cos_yv", "cos_vv", "a_ii"))
    xsa = diag[diag["kind"] == "xsa"]
    ortho, mean_cos_zv = rules.orthogonal(xsa["zv_residual"].to_numpy()), xsa["cos_zv"].mean()
    bias = rules.verdict_similarity_bias(_layers(yv), _layers(vv))
    depth_yv = rules.verdict_grows_with_depth({s: row.tolist() for s, row in yv.iterrows()})
    depth_aii = rules.verdict_grows_with_depth({s: row.tolist() for s, row in aii.iterrows()})
    seeds = len(yv)
    return [
        Claim(
            "Fig. 1", "SA output is aligned with the token's own value (similarity bias)",
            "cos(y_i, v_i) ~0.2-0.6 across layers (1.3B model)",
            f"SA cos(y_i, v_i) by layer: {_join(cos_yv)}; the values' own mean cos(v_i, v_j): "
            f"{_join(cos_vv)} ({size}, {seeds} seed(s)); least clear layer's margin {_ci(bias)}",
            bias, unit="trained model",
        ),
        Claim(
            "Fig. 1", "the similarity bias grows with depth",
            "cos(y_i, v_i) ~0.2 (first layers) -> ~0.6 (layer 23)",
            f"SA cos(y_i, v_i) over {len(cos_yv)} layers: first {cos_yv[0]:.2f}, last {cos_yv[-1]:.2f}; "
            f"slope {_ci(depth_yv, 4)} per layer over {depth_yv.n} seed(s)",
            depth_yv, unit="trained model",
        ),
        Claim(
            "Fig. 1", "values are positively correlated within a sequence",
            "mean cos(v_i, v_j) > 0",
            f"SA mean cos(v_i, v_j) by layer: {_join(cos_vv)} ({seeds} seed(s))",
            rules.verdict_every_layer_above({k: list(v.values()) for k, v in _layers(vv).items()}, 0.0),
            unit="trained model",
        ),
        Claim(
            "Fig. 1", "diagonal attention a_ii is relatively high", "high a_ii (no number given)",
            f"SA a_ii by layer: {_join(a_ii, 3)}; uniform causal attention: {uniform:.3f} ({seeds} seed(s))",
            rules.verdict_every_layer_above({k: list(v.values()) for k, v in _layers(aii).items()}, uniform),
            unit="trained model",
        ),
        Claim(
            "Fig. 1", "a_ii grows with depth", "rising with depth (no number given)",
            f"SA a_ii: first layer {a_ii[0]:.3f}, last layer {a_ii[-1]:.3f}; slope {_ci(depth_aii, 4)} per "
            f"layer over {depth_aii.n} seed(s)",
            depth_aii, unit="trained model",
        ),
        Claim(
            "Alg. 1", "XSA output is orthogonal to the own value", "cos(z_i, v_i) = 0 up to rounding",
            f"max |z_i . v_i| / (|y_i| |v_i|) < {_power_of_ten_above(ortho.estimate):.0e}; "
            f"|mean cos(z_i, v_i)| = {abs(mean_cos_zv):.3f}",
            ortho, unit="none",
        ),
    ]  # fmt: skip


def _claims_fig2(costs: pd.DataFrame, device: str) -> list[Claim]:
    if costs.empty:
        ratios: dict[Hashable, float] = {}
        memory = pd.Series(dtype=float)
        configs, repeats, spread = 0, 0, "n/a"
    else:
        times = costs.pivot_table(index=["d_model", "seq_len", "repeat"], columns="kind", values="time_ms")
        by_config = {
            kind: {c: _by_seed(g.droplevel([0, 1])) for c, g in times[kind].groupby(level=[0, 1])}
            for kind in ("sa", "xsa")
        }
        ratios = rules.per_repeat_ratios(by_config["sa"], by_config["xsa"])
        mem = costs.groupby(["d_model", "seq_len", "kind"])["memory_mib"].mean().unstack("kind")
        memory = (mem["xsa"] / mem["sa"]).dropna()
        per_config = (times["xsa"] / times["sa"]).groupby(level=[0, 1]).median()
        configs, repeats = len(per_config), len(ratios)
        spread = f"{per_config.min():.3f} to {per_config.max():.3f}"
    verdict = rules.minimal_overhead(ratios, memory.tolist())
    geo = math.exp(float(np.mean(np.log(memory)))) if len(memory) else math.nan
    return [
        Claim(
            "Fig. 2", "XSA adds minimal time and memory to an attention + FFN block",
            "minimal overhead (B200, bf16)",
            f"XSA/SA time ratio on {device or 'this device'}, SA and XSA alternated within each of {repeats} "
            f"repeats in one process, per repeat the geometric mean over {configs} widths x lengths: "
            f"{_ratio(list(ratios.values()))} (median per configuration {spread}); memory ratio {geo:.3f} "
            f"(geometric mean, deterministic); limit {OVERHEAD_LIMIT:.2f}",
            verdict, unit="repeat",
        )
    ]  # fmt: skip


def _ratio(ratios: Sequence[float]) -> str:
    """The mean of XSA/SA ratios with its 95% interval (the mean alone for one, "n/a" for none)."""
    if not ratios:
        return "n/a"
    est = estimate(list(ratios))
    if not (math.isfinite(est.low) and math.isfinite(est.high)):
        return f"{est.mean:.3f}"
    return f"{est.mean:.3f} [{est.low:.3f}, {est.high:.3f}]"


def _claims_fig3(e: Evidence) -> list[Claim]:
    finals = final_losses(e.loss_curves)
    gaps = gap_curves(e.loss_curves)
    claims = []
    for size in e.sizes:
        # "throughout": every evaluation after warm-up, each judged on its per-seed gaps
        g = gaps[(gaps["size"] == size) & (gaps["kind"] == "xsa") & (gaps["step"] > e.warmup_steps[size])]
        by_step: dict[Hashable, list[float]] = {
            f"step {step}": s["gap"].tolist() for step, s in g.groupby("step")
        }
        mean_gap = g.groupby("step")["gap"].mean()
        throughout = rules.verdict_below_throughout(by_step)
        claims.append(Claim(
            "Fig. 3", f"XSA's validation loss is below SA's throughout training ({size})",
            "XSA below SA throughout, at 0.7B, 1.3B and 2.7B",
            f"XSA - SA (same seed) below zero at {int((mean_gap < 0).sum())} of {len(mean_gap)} "
            f"evaluations after warm-up (mean of {g['seed'].nunique()} seed(s)); least clear evaluation "
            f"{_ci(throughout)}",
            throughout, unit="trained model",
        ))  # fmt: skip
        for split in ("validation", "train"):
            xsa, sa = _by_seed(finals.loc[size, (split, "xsa")]), _by_seed(finals.loc[size, (split, "sa")])
            verdict = rules.verdict_gap_below_zero(xsa, sa)
            claims.append(Claim(
                "Fig. 3", f"XSA reaches a lower final {split} loss than SA ({size})",
                "XSA below SA throughout, at 0.7B, 1.3B and 2.7B",
                f"XSA - SA (same seed) = {_ci(verdict)} nats/byte over {len(xsa)} seed(s)",
                verdict, unit="trained model",
            ))  # fmt: skip
    return claims


def _claims_gap_over_training(e: Evidence) -> list[Claim]:
    gaps = gap_curves(e.loss_curves)
    claims = []
    for size in e.sizes:
        g = gaps[(gaps["size"] == size) & (gaps["kind"] == "xsa")]
        warmup = e.warmup_steps[size]
        early, last = early_and_final(g, warmup)
        by_step = g.pivot_table(index="seed", columns="step", values="gap")
        verdict = rules.gap_narrows({int(step): _by_seed(by_step[step]) for step in by_step.columns}, warmup)
        first, final = by_step[early].tolist(), by_step[last].tolist()
        change = estimate(paired(_by_seed(by_step[last]), _by_seed(by_step[early])))
        claims.append(Claim(
            "Fig. 3", f"XSA's advantage over SA narrows by the end of training ({size})",
            "not claimed: the paper shows the gap throughout training",
            f"XSA - SA at step {early} of {last} (early: after a quarter of training and {EARLY_WARMUPS} "
            f"warm-ups of {warmup} steps): {_ci(estimate(first))}; at step {last}: {_ci(estimate(final))}; "
            f"change {_ci(change)} nats/byte over {len(final)} seed(s)",
            verdict, unit="trained model",
        ))  # fmt: skip
    return claims


CONTROL_DIRECTIONS = {
    "xsa-random": "a fixed random direction per head",
    "xsa-prev": "the previous token's value",
}


def _claims_controls(e: Evidence) -> list[Claim]:
    finals = final_losses(e.loss_curves)["validation"]
    claims = []
    for size in [s for s in e.sizes if s in e.control_sizes]:
        f = finals.loc[size]
        xsa, sa = _by_seed(f["xsa"]), _by_seed(f["sa"])
        for control, what in CONTROL_DIRECTIONS.items():
            other = _by_seed(f[control])
            verdict = rules.verdict_gap_below_zero(xsa, other)
            claims.append(Claim(
                "control", f"XSA beats projecting out {what} ({control}, {size})",
                "no control in the paper",
                f"XSA - {control} (same seed) = {_ci(verdict)}; {control} - SA = "
                f"{_ci(estimate(paired(other, sa)))} nats/byte over {len(xsa)} seed(s)",
                verdict, unit="trained model",
            ))  # fmt: skip
    return claims


def _gaps(frame: pd.DataFrame, axis: str) -> pd.DataFrame:
    """XSA - SA final validation loss (same seed): a row per seed, a column per ``axis`` value."""
    wide = frame.pivot_table(index=[axis, "seed"], columns="kind", values="validation")
    return (wide["xsa"] - wide["sa"]).unstack(axis)


def _by_setting(gaps: pd.DataFrame, label: str) -> dict[Hashable, list[float]]:
    """``{label with the setting: [gap per seed]}`` of a seed x setting table (seeds without a run left
    out)."""
    return {label.format(x): gaps[x].dropna().tolist() for x in gaps.columns}


def _claims_fig4(grids: Mapping[str, LearningRateGrid]) -> list[Claim]:
    claims = []
    for grid in grids.values():
        if grid.frame.empty:
            continue
        gaps = _gaps(grid.frame, "lr")
        steady = rules.steady_margin(
            gaps.columns.to_numpy(float), {s: row.tolist() for s, row in gaps.iterrows()}
        )
        every_lr = rules.verdict_below_at_every_setting(_by_setting(gaps, "LR {:g}"))
        claims += [
            Claim(
                "Fig. 4", f"XSA's margin over SA is nearly constant across learning rates ({grid.size})",
                "margin nearly constant over LR 1e-4 ... 6e-4",
                "XSA - SA by LR: " + ", ".join(f"{k:g}: {signed(v, 4)}" for k, v in gaps.mean().items())
                + f"; slope against log2(LR) {_ci(steady)} per doubling over {len(gaps)} seed(s), margin "
                f"+-{STEADY_SLOPE_MARGIN:g}; {grid.note}",
                steady, unit="trained model",
            ),
            Claim(
                "Fig. 4", f"XSA is below SA at every learning rate of the grid ({grid.size})",
                "XSA below SA at each LR",
                f"XSA below SA in {int((gaps < 0).sum().sum())} of {int(gaps.notna().sum().sum())} "
                f"(LR, seed) pairs; least clear LR {_ci(every_lr)}",
                every_lr, unit="trained model",
            ),
        ]  # fmt: skip
    return claims


def _claims_fig5(seq: pd.DataFrame) -> list[Claim]:
    gaps = _gaps(seq, "seq_len")
    grows = rules.verdict_gain_grows_with_length(gaps.columns.to_numpy(float),
                                           {s: row.tolist() for s, row in gaps.iterrows()})  # fmt: skip
    return [
        Claim(
            "Fig. 5", "XSA's gain grows with sequence length (tokens per batch fixed)",
            "gap widens from 512 to 16384 tokens",
            "XSA - SA by length: " + ", ".join(f"{k}: {signed(v, 4)}" for k, v in gaps.mean().items())
            + f"; slope {_ci(grows)} per doubling over {len(gaps)} seed(s)",
            grows, unit="trained model",
        )
    ]  # fmt: skip


def sink_like_mass(sink_mass: pd.DataFrame) -> pd.DataFrame:
    """Per (kind, seed): the attention mass on the learned sinks plus the first real token, and the same
    for uniform causal attention, each averaged over layers and sink counts."""
    frame = sink_mass.assign(
        mass=sink_mass["sink_mass"] + sink_mass["first_mass"],
        uniform=sink_mass["sink_uniform"] + sink_mass["first_uniform"],
    )
    return frame.groupby(["kind", "seed"])[["mass", "uniform"]].mean()


def _claims_fig6(sinks: pd.DataFrame, sink_mass: pd.DataFrame) -> list[Claim]:
    gaps = _gaps(sinks, "n_sink")
    every_count = rules.verdict_below_at_every_setting(_by_setting(gaps, "{} sinks"))
    mass = sink_like_mass(sink_mass)
    sa, xsa = mass.loc["sa"], mass.loc["xsa"]
    sink = rules.verdict_implicit_sink(_by_seed(xsa["mass"]), _by_seed(sa["mass"]), _by_seed(sa["uniform"]))
    counts = ", ".join(str(n) for n in sorted(sink_mass["n_sink"].unique()))
    return [
        Claim(
            "Fig. 6", "XSA keeps its margin when SA gets learned attention sinks",
            "XSA below SA with 0, 1 and 4 sink tokens",
            "XSA - SA by sink count: " + ", ".join(f"{k}: {signed(v, 4)}" for k, v in gaps.mean().items())
            + f" ({len(gaps)} seed(s)); least clear count {_ci(every_count)}",
            every_count, unit="trained model",
        ),
        Claim(
            "Fig. 6", "XSA acts as an implicit sink: it needs less attention on sink tokens than SA",
            "suggested, not measured",
            f"attention mass on the learned sinks + first real token (mean over layers, {counts} sinks): "
            f"SA {sa['mass'].mean():.3f}, XSA {xsa['mass'].mean():.3f}, uniform attention "
            f"{sa['uniform'].mean():.3f}; XSA - SA (same seed) {_ci(sink, 3)}",
            sink, unit="trained model",
        ),
    ]  # fmt: skip


# Table 2 --------------------------------------------------------------------------------------------------


def task_gates(task: pd.DataFrame) -> dict[str, Verdict | None]:
    """Table 2's gate of each model (SA, XSA) on one task under one scoring (the rows of ``zero_shot`` for
    them): its items answered correctly (seed mean, rounded) above the best of the task's trivial baselines
    and its own no-prompt baseline (seed mean), by :func:`~attnlab.papers.xsa.rules.above_baseline`. Only
    SA's gates a claim (the baseline must have learned the task); XSA's is shown, never a gate."""
    n = int(task["n"].iloc[0])
    gates = {}
    for kind in ("sa", "xsa"):
        rows = task[task["kind"] == kind]
        baselines = {b: float(rows[b].mean()) for b in BASELINES}
        gates[kind] = rules.above_baseline(round(rows["correct"].mean()), n, baselines)
    return gates


def _baseline_text(task: pd.DataFrame) -> str:
    """The task's best trivial baseline (the no-prompt one: the higher model's seed mean), named, in
    percent."""
    baselines = {b: float(task.groupby("kind")[b].mean().max()) for b in BASELINES}
    _, value = best_baseline(baselines)
    return f"best trivial baseline {100 * value:.1f} %: {baseline_label(baselines, value)}"


def _claims_table2(zero_shot: pd.DataFrame) -> list[Claim]:
    """Table 2's rows: LAMBADA's (a task scored ``greedy``) once, then under each scoring of
    :data:`~attnlab.papers.xsa.zero_shot.CLAIM_SCORINGS` a row per multiple-choice task and the average over
    the tasks where SA passes its gate (:func:`task_gates`), LAMBADA's greedy accuracy among them (the
    paper's average, too, takes LAMBADA's one accuracy beside the others' choice scores). Each row gives the
    paper's numbers on its task beside ours."""
    greedy = {task: _task_claim(task, t) for task, t in _by_task(zero_shot, GREEDY)}
    rows = [claim for claim, _ in greedy.values()]
    for scoring in CLAIM_SCORINGS:
        scored = {task: _task_claim(task, t) for task, t in _by_task(zero_shot, scoring)}
        rows += [claim for claim, _ in scored.values()]
        rows.append(_average_claim(scoring, scored | greedy))
    return rows


def _by_task(zero_shot: pd.DataFrame, scoring: str) -> list[tuple[str, pd.DataFrame]]:
    """The rows of ``zero_shot`` under ``scoring``, per task, in the table's order."""
    scored = zero_shot[zero_shot["scoring"] == scoring]
    return [(str(task), t) for task, t in scored.groupby("task", sort=False)]


def _task_claim(task: str, t: pd.DataFrame) -> tuple[Claim, pd.DataFrame | None]:
    """One task's claims row under one scoring (``t``: its rows of ``zero_shot``), and each model's accuracy
    (points) per seed where SA passes its gate, for the average (else None)."""
    n = int(t["n"].iloc[0])
    how = SCORING_LABELS[str(t["scoring"].iloc[0])]
    gates = task_gates(t)
    points = 100 * t.pivot_table(index="seed", columns="kind", values="accuracy")
    xsa, sa = _by_seed(points["xsa"]), _by_seed(points["sa"])
    verdict = rules.verdict_zero_shot_task(xsa, sa, gates["sa"])
    above = "above" if gates["xsa"] is None else "not above"
    claim = Claim(
        "Table 2", f"XSA improves zero-shot accuracy ({task}, {how})", f"SA -> XSA: {paper_task_text(task)}",
        f"SA {points['sa'].mean():.1f} %, XSA {points['xsa'].mean():.1f} % ({above} its baselines); "
        f"{_baseline_text(t)}, chance {100 * t['chance'].iloc[0]:.1f} %, {n} items; gain "
        f"{_ci(estimate(paired(xsa, sa)), 2)} points over {len(xsa)} seed(s)",
        verdict, unit="trained model",
    )  # fmt: skip
    return claim, points if gates["sa"] is None else None


def _average_claim(scoring: str, tasks: Mapping[str, tuple[Claim, pd.DataFrame | None]]) -> Claim:
    """The average row under ``scoring``: the gain averaged, per seed, over the ``tasks`` (task -> its claims
    row and points, :func:`_task_claim`) where SA passes its gate."""
    testable = {task: points for task, (_, points) in tasks.items() if points is not None}
    if testable:
        average = sum(testable.values()) / len(testable)  # per seed, the mean over the testable tasks
        xsa, sa = _by_seed(average["xsa"]), _by_seed(average["sa"])
    else:
        xsa, sa = {}, {}
    verdict = rules.verdict_zero_shot_average(xsa, sa, len(testable))
    paper = ", ".join(f"{k} {b:.2f} -> {x:.2f} ({x - b:+.2f})" for k, (b, x) in PAPER_TABLE2_AVG.items())
    which = f" ({', '.join(testable)}): {_ci(verdict, 2)} points" if testable else ": none"
    ours = f"gain averaged over the {len(testable)} of {len(tasks)} tasks where SA is above its trivial "
    ours += f"baselines{which}"
    claim = f"XSA improves average zero-shot accuracy ({SCORING_LABELS[scoring]})"
    return Claim("Table 2", claim, f"avg: {paper}", ours, verdict, unit="trained model")


# Fig. 1 on pretrained models (attnlab.papers.xsa.pretrained) ------------------------------------------

#: The Fig. 1 claims on each pretrained model: (claim, the paper's number, the column, its baseline or None
#: for a trend over depth).
PRETRAINED_CLAIMS = (
    ("SA output is aligned with the token's own value beyond uniform mixing",
     "cos(y_i, v_i) ~0.2-0.6 across layers (their 1.3B model)", "cos_yv", "cos_uniform"),
    ("SA output is aligned with the token's own value beyond a token half a window back",
     "cos(y_i, v_i) ~0.2-0.6 across layers (their 1.3B model)", "cos_yv", "cos_far"),
    ("the similarity bias grows with depth", "cos(y_i, v_i) ~0.2 (first layers) -> ~0.6 (layer 23)",
     "cos_yv", None),
    ("diagonal attention a_ii is relatively high", "high a_ii (no number given)", "a_ii", "a_ii_uniform"),
    ("a_ii grows with depth", "rising with depth (no number given)", "a_ii", None),
)  # fmt: skip
BASELINE_WORDS = {"cos_uniform": "uniform mixing", "cos_far": "a token half a window back",
                  "a_ii_uniform": "uniform causal attention"}  # fmt: skip


def _layers_text(means: Sequence[float]) -> str:
    values = np.asarray(means, float)
    return f"first layer {values[0]:.2f}, middle {values[len(values) // 2]:.2f}, last {values[-1]:.2f}"


def pretrained_verdict(table: pd.DataFrame, column: str, baseline: str | None) -> Verdict:
    """One pretrained model's Fig. 1 verdict from its :func:`attnlab.papers.xsa.pretrained.layer_table`:
    with a ``baseline``, the per-window mean over layers of ``column`` minus it
    (:func:`~attnlab.papers.xsa.rules.verdict_above_baseline`, windows as units); without, the trend of
    ``column``'s per-layer mean against relative depth (:func:`~attnlab.papers.xsa.rules.
    verdict_rises_with_depth`, layers as units)."""
    if baseline is not None:
        margin = (table[column] - table[baseline]).groupby(table["window"]).mean()
        return rules.verdict_above_baseline(margin.tolist())
    by_layer = table.groupby("layer")[["depth", column]].mean().sort_index()
    return rules.verdict_rises_with_depth(by_layer["depth"].to_numpy(), by_layer[column].to_numpy())


def pretrained_claims(table: pd.DataFrame, model: str) -> list[Claim]:
    """The Fig. 1 rows for one pretrained model (``model``: its description, as ``attnlab.hf.PRETRAINED``
    words it), from its :func:`attnlab.papers.xsa.pretrained.layer_table`."""
    columns = sorted({c for _, _, col, base in PRETRAINED_CLAIMS for c in (col, base) if c})
    by_layer = table.groupby("layer")[columns].mean()
    n_layers, n_windows = len(by_layer), table["window"].nunique()
    where = f"[{model}; {n_layers} layers, {n_windows} windows]"
    rows = []
    for claim, paper, column, baseline in PRETRAINED_CLAIMS:
        verdict = pretrained_verdict(table, column, baseline)
        what = "cos(y_i, v_i)" if column == "cos_yv" else column
        if baseline is None:
            ours = (
                f"{where} {what} by layer: {_layers_text(by_layer[column])}; slope against relative depth "
                f"(first layer 0, last 1) {_ci(verdict, 3)}, against 9,999 random layer orders"
            )
            unit = "layer"
        else:
            words = BASELINE_WORDS[baseline]
            ours = (
                f"{where} {what}: {_layers_text(by_layer[column])}; {words}: "
                f"{_layers_text(by_layer[baseline])}; margin (mean over layers) {_ci(verdict, 3)} over "
                "windows"
            )
            unit = "window"
        rows.append(Claim("Fig. 1 (pretrained)", claim, paper, ours, verdict, unit=unit))  # fmt: skip
    return rows


def pretrained_rows(results: Mapping[str, Mapping]) -> list[Claim]:
    """Every pretrained model's Fig. 1 rows (:func:`pretrained_claims`), then, with two models or more, each
    claim in every pretrained model (:func:`~attnlab.papers.xsa.rules.every` model's verdict, n = models)."""
    rows = [row for r in results.values() for row in pretrained_claims(r["table"], r["description"])]
    if len(results) < 2:
        return rows
    for claim, paper, column, baseline in PRETRAINED_CLAIMS:
        by_model = {name: pretrained_verdict(r["table"], column, baseline) for name, r in results.items()}
        verdict = replace(rules.every(by_model), n=len(by_model))
        each = "; ".join(f"{name} {_ci(v, 3)}" for name, v in by_model.items())
        what = (
            "slope against relative depth" if baseline is None else f"margin over {BASELINE_WORDS[baseline]}"
        )
        rows.append(Claim("Fig. 1 (pretrained)", f"{claim}, in every pretrained model", paper,
                          f"{what} per model: {each}", verdict, unit="pretrained model"))  # fmt: skip
    return rows
