"""Exclusive Self Attention (XSA, arXiv 2603.09078): the paper's claims judged on this run's measurements.

Each claim's rule is a ``verdict_*`` function of plain numbers returning a
:class:`~attnlab.runner.verdicts.Verdict` (its word and reason, and the evidence: the estimate it rests on,
the 95% interval over seeds where there is one, how many values and the null or threshold); :func:`claims`
computes those numbers from the notebook's tables and writes each claims row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from attnlab.papers.xsa.presets import PAPER_TABLE2_AVG
from attnlab.runner.claims import Claim, signed
from attnlab.runner.stats import estimate
from attnlab.runner.verdicts import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, Verdict, every_seed

if TYPE_CHECKING:
    from attnlab.papers.xsa.experiment import XSAExperiment

ORTHOGONAL_TOLERANCE = 1e-5  # Alg. 1: the largest |z_i . v_i| / (|y_i| |v_i|) that counts as rounding
OVERHEAD_LIMIT = 1.10  # Fig. 2: the largest median XSA/SA time or memory ratio that counts as minimal


# Verdicts -------------------------------------------------------------------------------------------------


def _word(holds: bool) -> str:
    return HOLDS if holds else DOES_NOT_HOLD


def verdict_gap_below_zero(gaps: Sequence[float]) -> Verdict:
    """Figs. 3, 4, 6: "XSA's loss is below SA's", from one XSA - SA gap per seed (or per setting and seed):
    :func:`~attnlab.runner.verdicts.every_seed` below 0 (holds when every gap is below zero, does not hold
    when their mean is not, inconclusive when they disagree; evidence: the mean gap, its interval)."""
    return every_seed(gaps, "below")


def verdict_gain_above_zero(gains: Sequence[float]) -> Verdict:
    """Table 2: "XSA improves zero-shot accuracy", from one XSA - SA accuracy gain per seed:
    :func:`~attnlab.runner.verdicts.every_seed` above 0."""
    return every_seed(gains, "above")


def verdict_similarity_bias(cos_yv: Sequence[float], cos_vv: Sequence[float]) -> Verdict:
    """Fig. 1: "SA output is aligned with the token's own value", from one value per layer: holds when in
    every layer cos(y_i, v_i) is above zero and above the values' own mean cos(v_i, v_j) (the alignment any
    value would get); otherwise does not hold. Evidence: the smallest margin of cos(y_i, v_i) over the larger
    of the two, across layers, against 0."""
    yv, vv = np.asarray(cos_yv, float), np.asarray(cos_vv, float)
    holds = bool((yv > vv).all() and (yv > 0).all())
    margin = float(np.min(yv - np.maximum(vv, 0.0))) if len(yv) else math.nan
    return Verdict(_word(holds), "", margin, math.nan, math.nan, len(yv), 0.0)


def verdict_grows_with_depth(by_layer: Sequence[float]) -> Verdict:
    """Fig. 1: "the quantity grows with depth", from one value per layer: holds when the last layer's is
    above the first's; otherwise does not hold. Evidence: last minus first, against 0."""
    first, last = float(by_layer[0]), float(by_layer[-1])
    return Verdict(_word(last > first), "", last - first, math.nan, math.nan, len(by_layer), 0.0)


def verdict_every_layer_above(by_layer: Sequence[float], null: float) -> Verdict:
    """Fig. 1: "the quantity is above ``null`` in every layer" (mean cos(v_i, v_j) above 0; a_ii above
    uniform causal attention's): holds when every layer's value is; otherwise does not hold. Evidence: the
    smallest value across layers, against ``null``."""
    values = np.asarray(by_layer, float)
    lowest = float(np.min(values)) if len(values) else math.nan
    return Verdict(_word(bool((values > null).all())), "", lowest, math.nan, math.nan, len(values), null)


def verdict_orthogonal(residuals: Sequence[float], tolerance: float = ORTHOGONAL_TOLERANCE) -> Verdict:
    """Alg. 1: "XSA's output is orthogonal to the token's own value", from |z_i . v_i| / (|y_i| |v_i|) per
    layer and seed: holds when the largest (values that are not a number left out) is below ``tolerance``;
    otherwise does not hold. Evidence: that largest residual, against ``tolerance``."""
    values = np.asarray(residuals, float)
    finite = values[~np.isnan(values)]
    largest = float(finite.max()) if len(finite) else math.nan
    return Verdict(_word(largest < tolerance), "", largest, math.nan, math.nan, len(values), tolerance)


def verdict_minimal_overhead(
    time_ratio: float, memory_ratio: float, n: int, limit: float = OVERHEAD_LIMIT
) -> Verdict:
    """Fig. 2: "XSA adds minimal time and memory", from the median XSA/SA time and memory ratios over ``n``
    block configurations: holds when both are at most ``limit``; otherwise does not hold. Evidence: the
    larger ratio, against ``limit``."""
    holds = time_ratio <= limit and memory_ratio <= limit
    larger = float(np.max([time_ratio, memory_ratio]))
    return Verdict(_word(bool(holds)), "", larger, math.nan, math.nan, n, limit)


def verdict_below_throughout(xsa: Sequence[float], sa: Sequence[float]) -> Verdict:
    """Fig. 3: "XSA's validation loss is below SA's throughout training", from both losses (mean of seeds)
    at each evaluation after warm-up: holds when XSA's is below at every one (also when there is none);
    otherwise does not hold. Evidence: the largest XSA - SA gap over the evaluations, against 0."""
    x, s = np.asarray(xsa, float), np.asarray(sa, float)
    below = int((x < s).sum())
    worst = float(np.max(x - s)) if len(x) else math.nan
    return Verdict(_word(below == len(x)), "", worst, math.nan, math.nan, len(x), 0.0)


def verdict_steady_margin(gaps_by_lr: Sequence[float]) -> Verdict:
    """Fig. 4: "XSA's margin over SA is nearly constant across learning rates", from the mean XSA - SA gap
    at each learning rate: holds when every gap is below zero and their range (max - min) is at most the
    size of their mean; otherwise does not hold. Evidence: the range (values that are not a number left
    out), against the mean's size."""
    gaps = np.asarray(gaps_by_lr, float)
    spread = float(np.nanmax(gaps) - np.nanmin(gaps))
    size = abs(float(np.nanmean(gaps)))
    holds = bool((gaps < 0).all()) and spread <= size
    return Verdict(_word(holds), "", spread, math.nan, math.nan, len(gaps), size)


def verdict_gain_grows_with_length(seq_lens: Sequence[float], gaps_by_len: Sequence[float]) -> Verdict:
    """Fig. 5: "XSA's gain grows with sequence length", from the mean XSA - SA gap at each length: holds when
    every gap is below zero and the least-squares slope of the gap against log2(length) is below zero (the
    gap widens); otherwise does not hold. Evidence: that slope, per doubling, against 0."""
    gaps = np.asarray(gaps_by_len, float)
    slope = float(np.polyfit(np.log2(np.asarray(seq_lens, float)), gaps, 1)[0])
    holds = slope < 0 and bool((gaps < 0).all())
    return Verdict(_word(holds), "", slope, math.nan, math.nan, len(gaps), 0.0)


def at_chance(accuracies: Sequence[float], n_items: Sequence[int]) -> bool:
    """Table 2's gate: whether every (binary) task's accuracy is within two standard errors of 50 %, the
    standard error of a task with ``n`` items being sqrt(0.25 / n)."""
    acc, n = np.asarray(accuracies, float), np.asarray(n_items, float)
    return bool((np.abs(acc - 0.5) <= 2 * np.sqrt(0.25 / n)).all())


def verdict_zero_shot_gain(
    gains: Sequence[float], accuracies: Sequence[float], n_items: Sequence[int]
) -> Verdict:
    """Table 2: "XSA improves zero-shot accuracy", from the XSA - SA gain (points) per seed, gated on the
    tasks' accuracies (one per task and kind, with its item count): not testable here when every one is
    :func:`at_chance` (the models learned none of the tasks); otherwise :func:`verdict_gain_above_zero`."""
    if at_chance(accuracies, n_items):
        est = estimate(gains)
        why = "every task's accuracy is within two standard errors of chance"
        return Verdict(NOT_TESTABLE, why, est.mean, est.low, est.high, est.n, 0.0)
    return verdict_gain_above_zero(gains)


# Claims rows ----------------------------------------------------------------------------------------------


def claims(
    exp: XSAExperiment,
    curves: pd.DataFrame,
    diag: pd.DataFrame,
    costs: pd.DataFrame,
    lr: pd.DataFrame,
    seq: pd.DataFrame,
    sinks: pd.DataFrame,
    zero_shot: pd.DataFrame,
) -> list[Claim]:
    """Every claim of the paper, with a verdict computed from this run's measurements: the loss curves
    (Fig. 3), layer diagnostics (Fig. 1), block costs (Fig. 2), the three sweeps (Figs. 4-6) and zero-shot
    accuracies (Table 2) of ``exp``."""
    return [
        *_claims_fig1(diag, exp.sizes[-1]),
        *_claims_fig2(costs, exp.torch_device.type),
        *_claims_fig3(exp, curves),
        *_claims_fig4(exp, lr),
        *_claims_fig5(seq),
        *_claims_fig6(sinks),
        *_claims_table2(zero_shot),
    ]


def _claims_fig1(diag: pd.DataFrame, size: str) -> list[Claim]:
    sa = diag[diag["kind"] == "sa"].groupby("layer")[["cos_vv", "a_ii", "a_ii_uniform", "cos_yv"]].mean()
    cos_yv, cos_vv, a_ii = sa["cos_yv"].to_numpy(), sa["cos_vv"].to_numpy(), sa["a_ii"].to_numpy()
    uniform = sa["a_ii_uniform"].iloc[0]
    xsa = diag[diag["kind"] == "xsa"]
    orthogonal, mean_cos_zv = verdict_orthogonal(xsa["zv_residual"].to_numpy()), xsa["cos_zv"].mean()
    return [
        Claim(
            "Fig. 1", "SA output is aligned with the token's own value (similarity bias)",
            "cos(y_i, v_i) ~0.2-0.6 across layers (1.3B model)",
            f"SA cos(y_i, v_i) by layer: {_join(cos_yv)}, above the values' own mean "
            f"cos(v_i, v_j): {_join(cos_vv)} ({size})",
            verdict_similarity_bias(cos_yv, cos_vv),
        ),
        Claim(
            "Fig. 1", "the similarity bias grows with depth",
            "cos(y_i, v_i) ~0.2 (first layers) -> ~0.6 (layer 23)",
            f"SA cos(y_i, v_i): first layer {cos_yv[0]:.2f}, last layer {cos_yv[-1]:.2f}",
            verdict_grows_with_depth(cos_yv),
        ),
        Claim(
            "Fig. 1", "values are positively correlated within a sequence",
            "mean cos(v_i, v_j) > 0", f"SA mean cos(v_i, v_j) by layer: {_join(cos_vv)}",
            verdict_every_layer_above(cos_vv, 0.0),
        ),
        Claim(
            "Fig. 1", "diagonal attention a_ii is relatively high", "high a_ii (no number given)",
            f"SA a_ii by layer: {_join(a_ii, 3)}; uniform causal attention: {uniform:.3f}",
            verdict_every_layer_above(a_ii, uniform),
        ),
        Claim(
            "Fig. 1", "a_ii grows with depth", "rising with depth (no number given)",
            f"SA a_ii: first layer {a_ii[0]:.3f}, last layer {a_ii[-1]:.3f}",
            verdict_grows_with_depth(a_ii),
        ),
        Claim(
            "Alg. 1", "XSA output is orthogonal to the own value", "cos(z_i, v_i) = 0 up to rounding",
            f"max |z_i . v_i| / (|y_i| |v_i|) < {_power_of_ten_above(orthogonal.estimate):.0e}; "
            f"|mean cos(z_i, v_i)| = {abs(mean_cos_zv):.3f}",
            orthogonal,
        ),
    ]  # fmt: skip


def _claims_fig2(costs: pd.DataFrame, device: str) -> list[Claim]:
    ratio = costs.pivot_table(index=["d_model", "seq_len"], columns="kind", values=["time_ms", "memory_mib"])
    time_ratio = (ratio["time_ms"]["xsa"] / ratio["time_ms"]["sa"]).median()
    memory_ratio = (ratio["memory_mib"]["xsa"] / ratio["memory_mib"]["sa"]).median()
    return [
        Claim(
            "Fig. 2", "XSA adds minimal time and memory to an attention + FFN block",
            "minimal overhead (B200, bf16)",
            f"median XSA/SA ratio on {device}: time {time_ratio:.2f}, memory {memory_ratio:.2f} "
            f"(over {len(ratio)} widths x lengths)",
            verdict_minimal_overhead(time_ratio, memory_ratio, len(ratio)),
        )
    ]  # fmt: skip


def _claims_fig3(exp: XSAExperiment, curves: pd.DataFrame) -> list[Claim]:
    finals = exp.final_losses(curves)
    claims = []
    for size in exp.sizes:
        # "throughout": every evaluation after warm-up, seeds averaged
        warmup = exp.preset.sizes[size].train.warmup_steps
        val = curves[(curves["size"] == size) & (curves["split"] == "validation")]
        val = val[val["step"] > warmup].groupby(["step", "kind"])["loss"].mean().unstack("kind")
        below = int((val["xsa"] < val["sa"]).sum())
        claims.append(Claim(
            "Fig. 3", f"XSA's validation loss is below SA's throughout training ({size})",
            "XSA below SA throughout, at 0.7B, 1.3B and 2.7B",
            f"XSA below SA at {below} of {len(val)} evaluations after warm-up (mean of seeds)",
            verdict_below_throughout(val["xsa"].to_numpy(), val["sa"].to_numpy()),
        ))  # fmt: skip
        for split in ("validation", "train"):
            gaps = (finals.loc[size, (split, "xsa")] - finals.loc[size, (split, "sa")]).tolist()
            claims.append(Claim(
                "Fig. 3", f"XSA reaches a lower final {split} loss than SA ({size})",
                "XSA below SA throughout, at 0.7B, 1.3B and 2.7B",
                f"XSA - SA = {_mean_sd(gaps)} nats/byte over {len(gaps)} seed(s)",
                verdict_gap_below_zero(gaps),
            ))  # fmt: skip
    return claims


def _gaps(frame: pd.DataFrame, axis: str) -> pd.DataFrame:
    """XSA - SA final validation loss per (axis value, seed)."""
    wide = frame.pivot_table(index=[axis, "seed"], columns="kind", values="validation")
    return (wide["xsa"] - wide["sa"]).rename("gap").reset_index()


def _claims_fig4(exp: XSAExperiment, lr: pd.DataFrame) -> list[Claim]:
    gaps = _gaps(lr, "lr")
    by_lr = gaps.groupby("lr")["gap"].mean()
    steady = verdict_steady_margin(by_lr.to_numpy())
    return [
        Claim(
            "Fig. 4", "XSA's margin over SA is nearly constant across learning rates",
            "margin nearly constant over LR 1e-4 ... 6e-4",
            "XSA - SA by LR: " + ", ".join(f"{k:g}: {signed(v, 4)}" for k, v in by_lr.items())
            + f" (range {steady.estimate:.4f}); {exp.best_lr_note(exp.best_lr(lr))}",
            steady,
        ),
        Claim(
            "Fig. 4", "XSA is below SA at every learning rate of the grid", "XSA below SA at each LR",
            f"XSA below SA in {int((gaps['gap'] < 0).sum())} of {len(gaps)} (LR, seed) pairs",
            verdict_gap_below_zero(gaps["gap"].tolist()),
        ),
    ]  # fmt: skip


def _claims_fig5(seq: pd.DataFrame) -> list[Claim]:
    by_len = _gaps(seq, "seq_len").groupby("seq_len")["gap"].mean()
    grows = verdict_gain_grows_with_length(by_len.index.to_numpy(float), by_len.to_numpy())
    return [
        Claim(
            "Fig. 5", "XSA's gain grows with sequence length (tokens per batch fixed)",
            "gap widens from 512 to 16384 tokens",
            "XSA - SA by length: " + ", ".join(f"{k}: {signed(v, 4)}" for k, v in by_len.items())
            + f"; slope {signed(grows.estimate, 4)} per doubling",
            grows,
        )
    ]  # fmt: skip


def _claims_fig6(sinks: pd.DataFrame) -> list[Claim]:
    gaps = _gaps(sinks, "n_sink")
    by_sink = gaps.groupby("n_sink")["gap"].mean()
    return [
        Claim(
            "Fig. 6", "XSA keeps its margin when SA gets learned attention sinks",
            "XSA below SA with 0, 1 and 4 sink tokens",
            "XSA - SA by sink count: " + ", ".join(f"{k}: {signed(v, 4)}" for k, v in by_sink.items()),
            verdict_gap_below_zero(gaps["gap"].tolist()),
        )
    ]  # fmt: skip


def _claims_table2(zero_shot: pd.DataFrame) -> list[Claim]:
    per_seed = zero_shot.groupby(["kind", "seed"])["accuracy"].mean().unstack("kind")
    gains = (100 * (per_seed["xsa"] - per_seed["sa"])).tolist()
    mean_acc = zero_shot.groupby(["task", "kind"]).agg(acc=("accuracy", "mean"), n=("n", "first"))
    paper = ", ".join(f"{k} {b:.2f} -> {x:.2f}" for k, (b, x) in PAPER_TABLE2_AVG.items())
    ours = (
        f"average over {zero_shot['task'].nunique()} BIG-bench tasks: SA "
        f"{100 * per_seed['sa'].mean():.1f} %, XSA {100 * per_seed['xsa'].mean():.1f} %, "
        f"gain {_mean_sd(gains, 2)} points"
    )
    verdict = verdict_zero_shot_gain(gains, mean_acc["acc"].to_numpy(), mean_acc["n"].to_numpy())
    return [Claim("Table 2", "XSA improves zero-shot accuracy", f"average accuracy: {paper}", ours, verdict)]


def _join(values: Sequence[float], digits: int = 2) -> str:
    return ", ".join(f"{x:.{digits}f}" for x in values)


def _mean_sd(values: Sequence[float], digits: int = 4) -> str:
    """``mean ± sd`` of per-seed values, with the mean's sign; the mean alone for one seed."""
    est = estimate(values)
    spread = f" ± {est.sd:.{digits}f}" if est.n > 1 else ""
    return f"{signed(est.mean, digits)}{spread}"


def _power_of_ten_above(x: float) -> float:
    """The smallest power of ten above ``x``: a bound that does not change with rounding noise."""
    return 10.0 ** math.floor(math.log10(max(x, 1e-30)) + 1)
