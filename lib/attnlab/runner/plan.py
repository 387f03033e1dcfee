"""What a scale costs before it runs: every model each notebook trains at a scale, with its tokens and
training FLOPs, the epochs of its corpus and tokens per parameter, and the hours they take at a stated
sustained throughput.

    python -m attnlab.runner.plan --scale gpu                       # at 30 % of an H100's dense bf16 peak
    python -m attnlab.runner.plan --scale paper --gpus 64 --mfu 0.4 --notebooks xsa sd_routing

FLOPs are PaLM's count (appendix B): 6 x the matmul parameters per token plus 12 x heads x head dim x context
per layer for the attention scores and mix. Only training is counted: evaluation, the analyses and the
pretrained models' forward passes (contribution weights) are left out. The hours assume the throughput given;
measure yours with ``make gpu-check`` (its MFU column) and pass it as ``--mfu``. A run that two experiments
share (same model, training and data) is trained once and counted once. A run that trains on more tokens
than its corpus's train split holds (more than one epoch: it memorises rather than pretrains) is warned
about; a corpus that is not built yet (token shards) has no size, and says so.

QK-speed's circuit runs train as one batched program (``papers.qk_speed.batched.train_circuits``) on the
device the notebook trains on (``--device``; ``auto``: CUDA where there is one): they are counted in batched
steps (at most; circuits stop early at their loss target) and GPU-hours at ``--circuit-gpu-ms`` a batched
step on a GPU, CPU-hours at ``BATCHED_CPU_MS`` on one CPU core otherwise. Its fixed-attention runs (Fig. 3)
train one by one on CPU cores: counted in SGD steps and core-hours at ``--circuit-ms`` per step.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from attnlab.data import corpora, shards
from attnlab.model import GPT, GPTConfig
from attnlab.papers import PAPERS
from attnlab.runner.params import SCALES
from attnlab.training.cache import RunSpec, corpus_tokens, spec_dict

H100_BF16_TFLOPS = 989.0  # dense, no sparsity
# One step of a circuit trained one by one (batch 32, 64 tokens) on one core of this project's 2-core test
# machine: 2.0 ms for FAFO, the slowest kind (CACO: 0.6 ms); Fig. 3's fixed-attention runs 0.4-2.4 ms with
# their per-epoch evaluation.
CIRCUIT_MS = 2.0
# One batched circuit step (``train_circuits``, batch 32) on one core of the same machine: 0.11 ms + 0.03 ms
# per circuit in the stack, FAFO (the costliest; a stack's cost does not depend on the sequence length); fit
# to 1-64 circuits (0.14 ms at 1, 0.99 ms at 32, 1.92 ms at 64), measured at nice 19 beside a 2-core job.
BATCHED_CPU_MS = (0.11, 0.03)
# One batched circuit step on a GPU: an estimate, not a measurement (no GPU was at hand): a step launches 25
# small kernels (6 bmm, 3 baddbmm, 2 softmax, ...), each ~12 us of eager PyTorch launch time, while its
# arithmetic (1.4 MFLOP per circuit) takes microseconds. Measure it with ``make bench`` on the GPU
# (``BENCH_FLAGS=--device cuda``: its ``batched_ms_per_step``) and pass it as ``--circuit-gpu-ms``.
BATCHED_GPU_MS = 0.3


@functools.cache
def _non_embedding_params(cfg: GPTConfig) -> int:
    """``GPT(cfg).num_params()``, built on the meta device once per configuration (runs share a few)."""
    with torch.device("meta"):
        return GPT(cfg).num_params()


def flops_per_token(cfg: GPTConfig, seq_len: int) -> float:
    """Training FLOPs per token: 6 x the matmul parameters (the output projection included, tied or not)
    plus 12 x heads x head dim x context per layer for the attention scores and mix (PaLM, appendix B)."""
    n = _non_embedding_params(cfg)
    if cfg.tie_embeddings:
        n += cfg.d_model * cfg.vocab_size
    return 6 * n + 12 * cfg.n_head * sum(cfg.layer_head_dims) * seq_len


@dataclass(frozen=True)
class PlannedRun:
    """One training run: its model, context length and the tokens it trains on; ``key`` identifies it (runs
    with equal keys are the same cached run); ``corpus`` is what it trains on (None: not a corpus of
    :mod:`attnlab.training.cache`, e.g. a task's items)."""

    model: GPTConfig
    seq_len: int
    tokens: int
    key: str
    corpus: str | None = None

    @classmethod
    def from_spec(cls, spec: RunSpec) -> PlannedRun:
        t = spec.train
        tokens = t.steps * t.batch_size * t.seq_len
        return cls(spec.model, t.seq_len, tokens, json.dumps(spec_dict(spec)), spec.corpus)

    @property
    def flops(self) -> float:
        return self.tokens * flops_per_token(self.model, self.seq_len)


@functools.cache
def corpus_train_tokens(corpus: str) -> int | None:
    """Tokens in the train split of ``corpus`` (a corpus name, read once, or a folder of token shards, from
    its ``shards.json``); None for a shard folder not built yet."""
    if corpus in corpora.corpus_names():
        return len(corpus_tokens(corpus)["train"])
    if not (Path(corpus) / shards.META).is_file():
        return None
    return sum(f["tokens"] for f in shards.read_meta(Path(corpus))["splits"]["train"])


def notebook_runs(notebook: str, scale: str) -> dict[str, PlannedRun]:
    """The training runs of ``notebook`` at ``scale`` with its default parameters, by label."""
    return experiment(notebook, scale).planned_runs()


def experiment(notebook: str, scale: str):
    """``notebook``'s experiment at ``scale`` with its default parameters (found through the registry)."""
    if notebook not in PAPERS:
        raise ValueError(f"unknown notebook {notebook!r}; choose from {sorted(PAPERS)}")
    return importlib.import_module(PAPERS[notebook]).configure(scale=scale, device="cpu")


def describe(runs: dict[str, PlannedRun], circuit_steps: int = 0) -> str:
    """One line for a notebook: how many models it trains (shared runs once), on how many tokens, with how
    many training FLOPs; and its CPU circuit steps, if any."""
    distinct = {run.key: run for run in runs.values()}.values()
    tokens, flops = sum(r.tokens for r in distinct), sum(r.flops for r in distinct)
    line = f"trains {len(distinct)} models on {tokens:,} tokens, {flops:.3g} FLOP"
    if circuit_steps:
        line += f", plus at most {circuit_steps:,} circuit SGD steps on the CPU"
    return line + " (`make plan` for hours)"


def plan(scale: str, notebooks: list[str]) -> pd.DataFrame:
    """One row per distinct training run: notebook, run, params (millions, without embeddings), tokens
    (millions), PFLOPs, its corpus, the epochs of that corpus's train split it trains for (NaN where the
    corpus is not built or the run has none) and its tokens per parameter."""
    rows, seen = [], set()
    for notebook in notebooks:
        for label, run in notebook_runs(notebook, scale).items():
            if run.key in seen:
                continue
            seen.add(run.key)
            params = _non_embedding_params(run.model)
            have = corpus_train_tokens(run.corpus) if run.corpus else None
            rows.append({
                "notebook": notebook, "run": label, "params_M": params / 1e6, "tokens_M": run.tokens / 1e6,
                "PFLOPs": run.flops / 1e15, "corpus": run.corpus,
                "epochs": run.tokens / have if have else math.nan, "tokens_per_param": run.tokens / params,
            })  # fmt: skip
    return pd.DataFrame(rows)


def epoch_warnings(runs: pd.DataFrame) -> list[str]:
    """One line per notebook and corpus whose runs train for more than one epoch (the most epochs and how
    many runs), and one per corpus whose size is unknown because it is not built."""
    lines = []
    for (notebook, corpus), g in runs.dropna(subset=["corpus"]).groupby(["notebook", "corpus"], sort=False):
        over = g[g["epochs"] > 1]
        if len(over):
            lines.append(
                f"warning: {len(over)} of {len(g)} {notebook} runs train for more than one epoch of {corpus} "
                f"(up to {over['epochs'].max():.3g} epochs): they memorise it rather than pretrain"
            )
        if g["epochs"].isna().all():
            lines.append(f"note: {corpus} is not built, so the epochs of {notebook}'s runs are unknown")
    return lines


def circuit_program(scale: str, notebooks: list[str] | None = None) -> tuple[list[tuple[int, int]], int]:
    """The circuit work of ``notebooks`` (default: all) at ``scale`` outside the GPT runs: the stacks of the
    batched circuit program, (circuits, batched steps at most) each (``PaperExperiment.circuit_stacks``:
    QK-speed's), and the SGD steps of the runs trained one by one on CPU cores
    (``circuit_steps`` less the batched circuits' steps: QK-speed's fixed-attention runs)."""
    stacks, single = [], 0
    for n in notebooks or PAPERS:
        exp = experiment(n, scale)
        own = exp.circuit_stacks()
        stacks += own
        single += exp.circuit_steps() - sum(circuits * steps for circuits, steps in own)
    return stacks, single


def batched_hours(stacks: list[tuple[int, int]], device: str, gpu_ms: float = BATCHED_GPU_MS) -> float:
    """Hours of the batched circuit program ``stacks`` ((circuits, steps) each, ``circuit_program``) on
    ``device``: ``gpu_ms`` a batched step on "cuda" (a step's kernels are launch-bound, whatever the number
    of circuits), ``BATCHED_CPU_MS`` (per step + per circuit) on one core on "cpu"."""
    if device == "cuda":
        return sum(steps for _, steps in stacks) * gpu_ms / 3.6e6
    per_step, per_circuit = BATCHED_CPU_MS
    return sum(steps * (per_step + per_circuit * circuits) for circuits, steps in stacks) / 3.6e6


def summary(runs: pd.DataFrame, tflops: float, mfu: float, gpus: int) -> pd.DataFrame:
    """Per notebook: runs, tokens (billions), PFLOPs and the hours on ``gpus`` devices of ``tflops`` peak
    each at ``mfu`` utilisation (perfect scaling assumed)."""
    out = runs.groupby("notebook", sort=False).agg(
        runs=("run", "size"), tokens_B=("tokens_M", "sum"), PFLOPs=("PFLOPs", "sum")
    )
    out["tokens_B"] /= 1e3
    out.loc["total"] = out.sum()
    if "epochs" in runs:
        out["max_epochs"] = runs.groupby("notebook", sort=False)["epochs"].max()
        out.loc["total", "max_epochs"] = runs["epochs"].max()
    out["hours"] = out["PFLOPs"] * 1e15 / (gpus * tflops * 1e12 * mfu) / 3600
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.runner.plan", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=SCALES, default="gpu")
    parser.add_argument("--notebooks", nargs="+", choices=sorted(PAPERS), default=list(PAPERS))
    parser.add_argument("--tflops", type=float, default=H100_BF16_TFLOPS, help="peak TFLOP/s per device")
    parser.add_argument("--mfu", type=float, default=0.3, help="sustained fraction of the peak (0-1]")
    parser.add_argument("--gpus", type=int, default=1, help="devices training together")
    parser.add_argument("--runs", action="store_true", help="also list every run")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where QK-speed's batched circuits train (auto: cuda if available here)",
    )
    parser.add_argument(
        "--circuit-gpu-ms", type=float, default=BATCHED_GPU_MS, help="ms per batched circuit step on the GPU"
    )
    parser.add_argument(
        "--circuit-ms",
        type=float,
        default=CIRCUIT_MS,
        help="ms per step of a run trained one by one on one core (QK-speed's fixed-attention runs)",
    )
    parser.add_argument("--workers", type=int, default=16, help="CPU cores for the runs trained one by one")
    args = parser.parse_args(argv)
    if (
        not 0 < args.mfu <= 1
        or min(args.tflops, args.circuit_ms, args.circuit_gpu_ms) <= 0
        or min(args.gpus, args.workers) < 1
    ):
        parser.error(
            "--mfu must be in (0, 1], --tflops, --circuit-ms and --circuit-gpu-ms positive, --gpus and "
            "--workers >= 1"
        )
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    runs = plan(args.scale, args.notebooks)
    with pd.option_context(
        "display.width", 120, "display.max_rows", None, "display.float_format", "{:,.3g}".format
    ):
        if args.runs:
            print(runs.drop(columns="corpus").to_string(index=False), end="\n\n")
        print(
            f"scale {args.scale}: training only, at {args.mfu:.0%} of {args.tflops:g} TFLOP/s on "
            f"{args.gpus} device(s)"
        )
        table = summary(runs, args.tflops, args.mfu, args.gpus)
        print(table.to_string())
    for line in epoch_warnings(runs):
        print(line)
    stacks, single = circuit_program(args.scale, args.notebooks)
    if stacks:
        hours = batched_hours(stacks, device, args.circuit_gpu_ms)
        steps, most = sum(s for _, s in stacks), max(c for c, _ in stacks)
        where = (
            f"{hours:.3g} GPU-hours at {args.circuit_gpu_ms:g} ms a step (an estimate unless measured)"
            if device == "cuda"
            else f"{hours:.3g} CPU-hours on one core at {BATCHED_CPU_MS[0]:g} + {BATCHED_CPU_MS[1]:g} ms "
            "x circuits a step"
        )
        print(
            f"\ncircuits, batched on {device}: {sum(c for c, _ in stacks)} circuits in {len(stacks)} stacks "
            f"(up to {most} circuits each), {steps:,} batched steps at most: {where}"
        )
        if device == "cuda":
            print(f"GPU total with the batched circuits: {table.loc['total', 'hours'] + hours:.3g} h")
    if single:
        core_h = single * args.circuit_ms / 1e3 / 3600
        print(
            f"on CPU cores, one run each: {single:,} SGD steps at most, {core_h:.3g} core-hours at "
            f"{args.circuit_ms:g} ms/step, {core_h / args.workers:.3g} h on {args.workers} cores"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
