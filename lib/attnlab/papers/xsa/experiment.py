"""Exclusive Self Attention (XSA, arXiv 2603.09078): the experiments of its notebook (presets in
:mod:`attnlab.papers.xsa.presets`, claims in :mod:`attnlab.papers.xsa.claims`).

The notebook ``notebooks/xsa.ipynb`` calls ``configure`` with its parameters, then the methods of the returned
``XSAExperiment``; nothing here is specific to a notebook cell.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

import pandas as pd
import torch

from attnlab.data.tasks import TASKS, accuracy, load_task
from attnlab.model import GPT, GPTConfig
from attnlab.papers.experiment import PaperExperiment
from attnlab.papers.xsa.claims import claims as xsa_claims
from attnlab.papers.xsa.diagnostics import similarity_bias_by_layer
from attnlab.papers.xsa.presets import PAPER_TABLE1, PRESETS, Preset
from attnlab.runner.claims import Claim
from attnlab.runner.params import check_device, check_scale, check_seeds, check_subset
from attnlab.runner.plan import PlannedRun
from attnlab.tools.benchmark import block_costs
from attnlab.training.cache import (
    RunSpec,
    cached_result,
    check_corpus,
    corpus_parameter,
    corpus_tokenizer,
    corpus_tokens,
)
from attnlab.training.launch import launch
from attnlab.training.trainer import TrainResult, validation_windows

PAPER = "xsa"
KINDS = ("sa", "xsa")

Runs = dict[tuple, TrainResult]


def _final_losses(run: TrainResult) -> dict[str, float]:
    """Final validation loss, and the mean training loss over the last evaluation interval."""
    h = run.history
    last_interval = h["val_step"][-1] - h["val_step"][-2]
    return {"train": statistics.fmean(h["train_loss"][-last_interval:]), "validation": h["val_loss"][-1]}


@dataclass(frozen=True)
class XSAExperiment(PaperExperiment):
    paper = PAPER

    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    sizes: tuple[str, ...]
    device: str

    def _train(self, spec: RunSpec, label: str) -> TrainResult:
        return launch(spec, device=self.device, label=label, micro_tokens=self.preset.micro_tokens)

    # Table 1 and Fig. 3 -------------------------------------------------------------------------------

    def spec(self, size: str, kind: str, seed: int) -> RunSpec:
        s = self.preset.sizes[size]
        return RunSpec(replace(s.model, attn=kind), replace(s.train, seed=seed), self.preset.corpus)

    def config_table(self) -> pd.DataFrame:
        """Table 1: each size of this scale beside the paper's three models (parameters without embeddings;
        tokens = steps x batch x context)."""
        ours = [(name, "this scale", self.preset.sizes[name]) for name in self.sizes]
        paper = [(name, "paper", size) for name, size in PAPER_TABLE1.items()]
        rows = []
        for name, source, size in ours + paper:
            m, t = size.model, size.train
            rows.append({
                "model": name, "source": source, "layers": m.n_layer, "d_model": m.d_model,
                "heads": m.n_head, "head_dim": m.head_dim, "vocab": m.vocab_size, "context": t.seq_len,
                "batch": t.batch_size, "steps": t.steps, "lr": t.lr, "params": _count_params(m),
                "tokens": t.steps * t.batch_size * t.seq_len,
            })  # fmt: skip
        return pd.DataFrame(rows).set_index("model")

    def check_data(self) -> None:
        """The corpus exists, with no more token ids than the models' vocabulary."""
        sizes = [self.preset.sizes[name] for name in self.sizes] + [self.preset.sweep.size]
        check_corpus(self.preset.corpus, min(s.model.vocab_size for s in sizes))

    def train_all(self) -> Runs:
        """Train (or load from the results cache) SA and XSA for every size and seed (Fig. 3)."""
        self.check_data()
        return {
            (size, kind, seed): self._train(self.spec(size, kind, seed), f"{size} {kind.upper()} seed {seed}")
            for size in self.sizes
            for seed in self.seeds
            for kind in KINDS
        }

    @staticmethod
    def loss_curves(runs: Runs) -> pd.DataFrame:
        """Tidy curves for Fig. 3: validation loss at each evaluation, and the mean training loss over the
        steps since the previous evaluation."""
        rows = []
        for (size, kind, seed), run in runs.items():
            h = run.history
            prev = 0
            for step, val in zip(h["val_step"], h["val_loss"], strict=True):
                rows.append((size, kind, seed, step, "validation", val))
                if step > 0:
                    rows.append(
                        (size, kind, seed, step, "train", statistics.fmean(h["train_loss"][prev:step]))
                    )
                prev = step
        return pd.DataFrame(rows, columns=["size", "kind", "seed", "step", "split", "loss"])

    @staticmethod
    def final_losses(curves: pd.DataFrame) -> pd.DataFrame:
        """Final train and validation loss per (size, kind, seed)."""
        last = curves[curves["step"] == curves.groupby(["size", "kind", "seed"])["step"].transform("max")]
        return last.pivot_table(index=["size", "seed"], columns=["split", "kind"], values="loss")

    def results_cached(self, runs: Runs) -> str:
        n = sum(r.cached for r in runs.values())
        return f"{n} of {len(runs)} training runs were loaded from the results cache."

    # Fig. 1 -------------------------------------------------------------------------------------------

    def layer_diagnostics(self, runs: Runs) -> pd.DataFrame:
        """Fig. 1 diagnostics of the largest size, for SA and XSA, over validation sequences and all seeds."""
        size = self.sizes[-1]
        seq_len = self.preset.sizes[size].train.seq_len
        windows = validation_windows(
            corpus_tokens(self.preset.corpus)["validation"], self.preset.diag_sequences, seq_len
        )[:, :-1]
        frames = []
        for kind in KINDS:
            for seed in self.seeds:
                frame = similarity_bias_by_layer(runs[size, kind, seed].model, windows)
                frames.append(frame.assign(kind=kind, seed=seed, size=size))
        return pd.concat(frames, ignore_index=True)

    # Fig. 2 -------------------------------------------------------------------------------------------

    def block_costs(self) -> pd.DataFrame:
        """Fig. 2: forward+backward time and memory of one block, SA vs XSA, on this experiment's device
        (bf16 on CUDA as in the paper, float32 elsewhere)."""
        b = self.preset.bench
        device = self.torch_device
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        rows = []
        for d_model in b.d_models:
            n_head = max(1, d_model // b.head_dim)
            for seq_len in b.seq_lens:
                cfg = GPTConfig(d_model=d_model, n_head=n_head, head_dim=b.head_dim, block_size=seq_len)
                costs = block_costs(cfg, KINDS, b.batch_size, seq_len, device, repeats=b.repeats, dtype=dtype)
                for kind, cost in (costs or {}).items():
                    rows.append({"kind": kind, "d_model": d_model, "seq_len": seq_len, **cost})
        return pd.DataFrame(rows)

    # Figs. 4-6 ----------------------------------------------------------------------------------------

    def sweep_spec(
        self, kind: str, seed: int, lr: float, seq_len: int | None = None, n_sink: int = 0
    ) -> RunSpec:
        sw = self.preset.sweep
        base = sw.size.train
        seq = seq_len or base.seq_len
        tokens = base.batch_size * base.seq_len
        model = replace(sw.size.model, attn=kind, n_sink=n_sink, block_size=max(sw.seq_lens))
        train = replace(base, seed=seed, lr=lr, seq_len=seq, batch_size=max(1, tokens // seq))
        return RunSpec(model, train, self.preset.corpus)

    def _sweep(self, axis: str, specs: dict[tuple[str, int, float], RunSpec]) -> pd.DataFrame:
        rows = []
        for (kind, seed, value), spec in specs.items():
            run = self._train(spec, f"{axis}={value:g} {kind.upper()} seed {seed}")
            rows.append({"kind": kind, "seed": seed, axis: value, **_final_losses(run)})
        return pd.DataFrame(rows)

    def lr_sweep(self) -> pd.DataFrame:
        """Fig. 4: final losses of SA and XSA over the learning-rate grid."""
        return self._sweep("lr", {
            (kind, seed, lr): self.sweep_spec(kind, seed, lr)
            for lr in self.preset.sweep.lrs for seed in self.seeds for kind in KINDS
        })  # fmt: skip

    @staticmethod
    def best_lr(lr_sweep: pd.DataFrame) -> float:
        """The grid's best learning rate for SA (final validation loss, mean over seeds): XSA reuses it."""
        sa = lr_sweep[lr_sweep["kind"] == "sa"].groupby("lr")["validation"].mean()
        return float(sa.idxmin())

    def best_lr_note(self, best_lr: float) -> str:
        """The grid search's outcome, flagging a best value at the edge of the grid."""
        lrs = self.preset.sweep.lrs
        edge = (
            " (an edge of the grid: the optimum may lie beyond it)" if best_lr in (min(lrs), max(lrs)) else ""
        )
        return f"best SA learning rate of the grid {list(lrs)}: {best_lr:g}{edge}"

    def seq_len_sweep(self, lr: float) -> pd.DataFrame:
        """Fig. 5: final losses over sequence lengths, tokens per batch held constant."""
        return self._sweep("seq_len", {
            (kind, seed, seq): self.sweep_spec(kind, seed, lr, seq_len=seq)
            for seq in self.preset.sweep.seq_lens for seed in self.seeds for kind in KINDS
        })  # fmt: skip

    def sink_sweep(self, lr: float) -> pd.DataFrame:
        """Fig. 6: final losses with 0, 1, 4 learned attention-sink tokens."""
        return self._sweep("n_sink", {
            (kind, seed, n): self.sweep_spec(kind, seed, lr, n_sink=n)
            for n in self.preset.sweep.sinks for seed in self.seeds for kind in KINDS
        })  # fmt: skip

    def planned_runs(self) -> dict[str, PlannedRun]:
        """Every training run of the notebook (Figs. 3-6), for :mod:`attnlab.runner.plan`. Figs. 5-6 train at
        the grid's best LR, known only after Fig. 4; the cost does not depend on it, so the base LR stands
        in."""
        lr = self.preset.sweep.size.train.lr
        specs = {
            f"{size} {kind} seed {seed}": self.spec(size, kind, seed)
            for size in self.sizes
            for seed in self.seeds
            for kind in KINDS
        }
        for seed in self.seeds:
            for kind in KINDS:
                specs |= {
                    f"lr={x:g} {kind} seed {seed}": self.sweep_spec(kind, seed, x)
                    for x in self.preset.sweep.lrs
                }
                specs |= {
                    f"seq_len={x} {kind} seed {seed}": self.sweep_spec(kind, seed, lr, seq_len=x)
                    for x in self.preset.sweep.seq_lens
                }
                specs |= {f"n_sink={x} {kind} seed {seed}": self.sweep_spec(kind, seed, lr, n_sink=x)
                          for x in self.preset.sweep.sinks}  # fmt: skip
        return {label: PlannedRun.from_spec(spec) for label, spec in specs.items()}

    # Table 2 ------------------------------------------------------------------------------------------

    def zero_shot(self, runs: Runs) -> pd.DataFrame:
        """Table 2: zero-shot accuracy of the largest size's SA and XSA models on BIG-bench tasks (cached per
        trained run, task and item limit)."""
        size = self.sizes[-1]
        tokenizer = corpus_tokenizer(self.preset.corpus)
        rows = []
        for task in TASKS:
            for kind in KINDS:
                for seed in self.seeds:
                    model = runs[size, kind, seed].model
                    key = {"run": self.spec(size, kind, seed).key(self.torch_device), "task": task,
                           "limit": self.preset.task_limit, "tokenizer": tokenizer.name}  # fmt: skip

                    def compute(task: str = task, model: GPT = model) -> dict:
                        items = load_task(task, self.preset.task_limit)
                        return {"n": len(items), "accuracy": accuracy(model, items, tokenizer)}

                    result, _ = cached_result("xsa_zero_shot", key, compute, code=("data/tasks.py",))
                    rows.append({"task": task, "n": result["n"], "kind": kind, "seed": seed,
                                 "accuracy": result["accuracy"]})  # fmt: skip
        return pd.DataFrame(rows)

    # Claims -------------------------------------------------------------------------------------------

    def claims(
        self,
        curves: pd.DataFrame,
        diag: pd.DataFrame,
        costs: pd.DataFrame,
        lr: pd.DataFrame,
        seq: pd.DataFrame,
        sinks: pd.DataFrame,
        zero_shot: pd.DataFrame,
    ) -> list[Claim]:
        """Every claim of the paper, with a verdict computed from this run's measurements (see
        :mod:`attnlab.papers.xsa.claims`)."""
        return xsa_claims(self, curves, diag, costs, lr, seq, sinks, zero_shot)


def _count_params(model: GPTConfig) -> int:
    with torch.device("meta"):
        return GPT(model).num_params()


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    sizes: list[str] | tuple[str, ...] = (),
    corpus: str = "",
) -> XSAExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``corpus``: a corpus
    name or a folder of token shards (``python -m attnlab.data.shards``; a relative folder is looked up in the
    data folder too); empty: the preset's, FineWeb in GPT-2 tokens at paper scale."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    preset = replace(preset, corpus=corpus_parameter(corpus, preset.corpus))
    return XSAExperiment(
        scale=scale,
        preset=preset,
        seeds=check_seeds(seeds, preset.seeds),
        sizes=check_subset("sizes", sizes, preset.sizes),
        device=check_device(device),
    )
