"""Contribution weights at every pinned model size (docs/papers/contribution-weights.md, "Scale"): the
pretrained-model part of the protocol, reduced, on each offline causal LM from 135M to 1.5B parameters, so
that each claim's verdict can be read against size.

The paper measured 7-8B base models; the largest offline models are 1.5B (``attnlab.hf.PRETRAINED``: all are
GGUF weights dequantised to float32, Gemma-3-270M is a base model, the others instruct models). Each model
runs the notebook's own methods (``ContributionExperiment.sinks``, ``faithfulness``, ``downstream``; cached,
so a re-run loads no model) with the scale's reduced settings: one text set (Brown), the joint ranking
scope, a few fractions, and the paper's three downstream tasks (MMLU, WinoGrande, BoolQ), each a fixed
sample of ``task_sample`` items (MMLU: ``mmlu_per_subject`` per subject), under the interventions the
downstream claim compares. A task is judged only where the model's clean accuracy is above chance
(``claims.downstream_task``); Gemma-3-270M base, measured at chance on MMLU (it answers "D" to most
questions), is given WinoGrande and BoolQ only (``set_aside``). The claims rows are those of the main table
(``claims.pretrained_rows`` of each model's ``ContributionExperiment.evidence``), one set per model.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pandas as pd
from safetensors import safe_open

from attnlab.hf import PRETRAINED, checkpoint
from attnlab.papers.contribution_weights.experiment import DOWNSTREAM_COLUMNS, ContributionExperiment
from attnlab.papers.contribution_weights.presets import HIERARCHY, SCALE_MODELS
from attnlab.training.cache import cached_result

# claims are judged after the computation: imported where used, outside the results' code keys
if TYPE_CHECKING:
    from attnlab.runner.claims import Claim


@dataclass(frozen=True)
class Scale:
    """The reduced protocol of the scale section, per notebook scale."""

    models: tuple[str, ...]
    windows: int  # Brown windows per model
    window: int  # tokens per window
    fractions: tuple[float, ...]  # value terms zeroed per query (0, the clean pass, first)
    layers: int  # evenly spaced layers intervened on (one at a time, then together)
    tasks: tuple[str, ...]  # downstream tasks of every model (less its ``set_aside`` ones)
    dtype: str  # the precision every model runs in (presets.DTYPES)
    task_sample: int | None  # items per task but MMLU, a fixed sample (experiment.task_items; None: all)
    mmlu_per_subject: int | None  # MMLU questions per subject (57 subjects: 9 gives 513)
    # (model, task) pairs not run: the model was measured at chance on the task (a gate on the baseline only)
    set_aside: tuple[tuple[str, str], ...] = (("gemma3-270m", "mmlu"),)
    # the downstream interventions: those the downstream claim compares (contribution weights against each
    # baseline, top and bottom zeroed); the main section also runs |c|, which no verdict reads
    task_measures: tuple[str, ...] = HIERARCHY


#: The paper's three downstream tasks, in every scale's section.
TASKS = ("mmlu", "winogrande", "boolq")
_WIDE = Scale(
    SCALE_MODELS["gpu"], windows=64, window=128, fractions=(0.0, 0.02, 0.05, 0.2), layers=3, tasks=TASKS,
    dtype="bfloat16", task_sample=1000, mmlu_per_subject=18,
)  # fmt: skip
PRESETS = {
    # SmolLM2 alone (nothing large is downloaded at smoke scale), two items of WinoGrande and BoolQ.
    "smoke": Scale(
        SCALE_MODELS["smoke"],
        windows=2,
        window=12,
        fractions=(0.0, 0.3),
        layers=1,
        tasks=("winogrande", "boolq"),
        dtype="float32",
        task_sample=2,
        mmlu_per_subject=1,
    ),
    # bfloat16, as the gpu preset runs: on a CPU with bfloat16 matrix units (AMX) it is 2.9x faster than
    # float32 on Qwen-1.5B's MMLU (65 questions, clean and one intervention: 85 s against 245 s on two cores;
    # accuracy 0.49 against 0.48, the same letter on 59 of 65); Qwen-1.5B's MMLU, 513 questions under the 6
    # interventions of ``task_measures`` with the last MLP at the read positions only, took 26.7 minutes on
    # a CPU without AMX (docs/papers/contribution-weights.md, "Speed and precision of the scale section",
    # "Where the time goes"). The paper's three tasks at 500 or more items each: MMLU 513, WinoGrande and
    # BoolQ 500. Expected, not measured, from their tokens against that MMLU time: WinoGrande (0.45 of
    # MMLU's tokens) about 12 minutes and BoolQ (1.3 times, long passages) about 35 for Qwen-1.5B, whose
    # downstream grows from 27 to about 74 minutes; Qwen-0.5B's about a third of that; the scale section
    # about two hours in all on two cores. SmolLM2 also runs in float32 in the main sections, so the
    # precision's effect can be read off one model.
    "cpu": Scale(
        SCALE_MODELS["cpu"],
        windows=16,
        window=48,
        fractions=(0.0, 0.05, 0.2),
        layers=1,
        tasks=TASKS,
        dtype="bfloat16",
        task_sample=500,
        mmlu_per_subject=9,
    ),
    "gpu": _WIDE,
    "paper": _WIDE,
}


def experiment_for(exp: ContributionExperiment, name: str, scale: Scale) -> ContributionExperiment:
    """``exp`` on pinned model ``name`` with the reduced settings of ``scale`` (the rest of ``exp``'s preset,
    its seed and device, unchanged)."""
    preset = replace(
        exp.preset, windows=scale.windows, window=scale.window, fractions=scale.fractions,
        layers=scale.layers, scopes=("joint",), dtype=scale.dtype, task_measures=scale.task_measures,
        task_sample=scale.task_sample, mmlu_per_subject=scale.mmlu_per_subject,
    )  # fmt: skip
    tasks = tuple(t for t in scale.tasks if (name, t) not in scale.set_aside)
    return replace(exp, model=name, preset=preset, text_sets=("brown",), tasks=tasks)


def parameters(name: str) -> int:
    """The parameter count of pinned model ``name`` (embeddings included, tied ones once), read from its
    float32 checkpoint's safetensors headers; cached, so a re-run needs no checkpoint."""

    def compute() -> dict:
        total = 0
        for path in sorted(checkpoint(name).glob("*.safetensors")):
            with safe_open(str(path), "pt") as f:
                total += sum(math.prod(f.get_slice(key).get_shape()) for key in f.keys())
        return {"parameters": total}

    result, _ = cached_result("cw_parameters", {"model": name, "source": PRETRAINED[name].folder}, compute)
    return int(result["parameters"])


def measure(exp: ContributionExperiment, scale: Scale) -> dict[str, dict[str, Any]]:
    """Each model of ``scale`` (those of ``exp.scale_models`` where it names some):
    ``{name: {"experiment", "parameters", "sinks", "curves", "downstream"}}``, the notebook's own results of
    :func:`experiment_for` (the downstream table empty for a model given no task, or whose tasks' data is
    unavailable here: ``ContributionExperiment.downstream`` prints that it skips them); prints each model's
    time (a cached re-run: seconds)."""
    out = {}
    for name in exp.scale_models or scale.models:
        start = time.perf_counter()
        e = experiment_for(exp, name, scale)
        downstream = e.downstream() if e.tasks else pd.DataFrame(columns=DOWNSTREAM_COLUMNS)
        out[name] = {"experiment": e, "parameters": parameters(name), "sinks": e.sinks(),
                     "curves": e.faithfulness(), "downstream": downstream}  # fmt: skip
        print(f"{e.weights}: {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    return out


def claims(results: dict[str, dict[str, Any]]) -> dict[str, list[Claim]]:
    """The pretrained-model claims rows of each model of :func:`measure` (figure "scale: <figure>"), by
    model."""
    from attnlab.papers.contribution_weights.claims import pretrained_rows  # judged after computing

    return {
        name: [
            replace(row, figure=f"scale: {row.figure}")
            for row in pretrained_rows(r["experiment"].evidence(r["sinks"], r["curves"], r["downstream"]))
        ]
        for name, r in results.items()
    }


#: Fig. 1's two variants that put a BOS first: one prefixed to a model whose tokenizer adds none ("BOS
#: prefixed"), or the one the model's own tokenizer puts there (Gemma's: "BOS, as the model is fed"). The same
#: question of each model, so the scale view draws them in one panel, where every model has its point.
BOS_FIRST = ("(BOS prefixed)", "(BOS, as the model is fed)")
BOS_PANEL = "(a BOS first: prefixed, or as the model is fed)"


def _panel(claim: str) -> str:
    """The scale view's name of a claim: Fig. 1's ``BOS_FIRST`` variants under one name, others unchanged."""
    for label in BOS_FIRST:
        if claim.endswith(label):
            return claim.removesuffix(label) + BOS_PANEL
    return claim


def scale_table(results: dict[str, dict[str, Any]], rows: dict[str, list[Claim]]) -> pd.DataFrame:
    """The scale view of :func:`claims`: one row per (claim, model), smallest model first, with the model's
    parameter count and its verdict's word, estimate, 95% interval, null and n
    (``attnlab.runner.scale_figure`` draws it). Fig. 1's BOS-first rows share one claim (``BOS_FIRST``)."""
    records = [
        {"claim": _panel(f"{row.figure.removeprefix('scale: ')}: {row.claim}"), "model": name,
         "parameters": results[name]["parameters"], "verdict": row.verdict.word,
         "estimate": row.verdict.estimate, "low": row.verdict.low, "high": row.verdict.high,
         "null": row.verdict.null, "n": row.verdict.n}
        for name, model_rows in rows.items()
        for row in model_rows
    ]  # fmt: skip
    return pd.DataFrame(records).sort_values(["claim", "parameters"], kind="stable", ignore_index=True)
