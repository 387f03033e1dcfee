"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): scale presets and the
experiments of its notebook.

The notebook ``notebooks/sd_routing.ipynb`` calls ``configure`` with its parameters, then the methods of the
returned ``SDExperiment``. Every language model is trained through ``attnlab.training.launch.launch`` (the
results cache; torchrun with ``make reproduce NPROC=N``) and every pretrained-model analysis is kept by
``attnlab.training.cache.cached_result``, so a re-run trains and loads nothing it has already done. The
library pieces are ``attnlab.attention.SDAttention`` / ``LinearAttention``, ``attnlab.metrics.effective_rank``
/ ``routing_filtering`` and ``attnlab.papers.sd_routing.routing``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from attnlab.errors import ParameterError, TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.papers.experiment import PaperExperiment
from attnlab.papers.sd_routing.routing import (
    head_dims_from_rank,
    linearised,
    load_pretrained,
    model_heads,
    override_forms,
    pretrained_fingerprint,
    sa_truncated_forms,
    sd_heads,
    sd_truncated,
)
from attnlab.runner.claims import Claim, signed
from attnlab.runner.params import check_device, check_scale, check_seeds, check_subset
from attnlab.runner.plan import PlannedRun
from attnlab.tools.benchmark import block_costs
from attnlab.training.cache import RunSpec, cached_result, check_corpus, corpus_parameter, corpus_tokens
from attnlab.training.launch import launch, micro_rows
from attnlab.training.trainer import TrainConfig, TrainResult, evaluate, validation_windows

PAPER = "sd_routing"

#: Trained variants: attention kind and whether the model has LayerNorms.
VARIANTS: dict[str, tuple[str, bool]] = {"sa": ("sa", True), "sd": ("sd", True), "sd-noln": ("sd", False)}
LABELS = {"sa": "standard (SA)", "sd": "S-D", "sd-noln": "S-D, no LayerNorm"}

#: "Minimum rank" (our definition): a layer whose routing matrix has a head-mean effective rank <= 2.5, i.e.
#: one rotation plane (effective rank 2) with at most half a plane's worth of spread into others.
MIN_RANK = 2.5

#: The S-D interaction (A, delta) starts at O(1), the projections at O(0.02); Adam moves both by about the
#: learning rate per step, so the interaction group gets this multiple of the learning rate (our choice).
INTERACTION_LR_SCALE = 10.0

GPT2_VOCAB = 50257

# The paper's numbers (sheet, "Findings to reproduce").
PAPER_HEADS = "1,776 heads of GPT-2 variants, BERT-base, Pythia-410M"
PAPER_SCALE_TREND = {"18M": 0.33, "355M": 0.92}
PAPER_FILTER_TRUNCATION_PPL = 0.3  # PPL points, S-D, D -> mean(D)
PAPER_LINEAR = {"layers": 7, "of": 12, "ppl_pct": 5.0, "elu_layers": 4, "elu_pct": 1.4}
PAPER_REALLOCATION = {"params_saved_pct": (47.0, 65.0), "ppl_pct": (3.9, 8.4)}

# Verdict thresholds (ours; the paper gives none).
CHEAP_PCT = 2.0  # an intervention is "cheap" below a 2 % PPL increase (the paper's +0.3 PPL is ~1 %)
CATASTROPHIC_PCT = 20.0  # and "catastrophic" above 20 %
LINEAR_TOLERANCE_PCT = 5.0  # the paper's "< 5 % PPL" for leading linear layers


def _gpt(
    n_layer: int, d_model: int, n_head: int, head_dim: int, block_size: int, vocab: int = 256
) -> GPTConfig:
    """GPT-2-shaped (the paper's 7M-355M models, inferred): pre-LayerNorm, learned absolute positions (so
    every head has one position-free bilinear form), no LayerNorm after the embedding."""
    return GPTConfig(
        vocab_size=vocab, n_layer=n_layer, d_model=d_model, n_head=n_head, head_dim=head_dim,
        block_size=block_size, pos="learned",
    )  # fmt: skip


def _train(steps: int, batch: int, seq: int, lr: float, evals: int = 5, **kw) -> TrainConfig:
    return TrainConfig(
        steps=steps, batch_size=batch, seq_len=seq, lr=lr, warmup_steps=max(1, steps // 10),
        eval_every=max(1, steps // evals), **kw,
    )  # fmt: skip


@dataclass(frozen=True)
class Size:
    model: (
        GPTConfig  # the SA configuration; variants differ in ``attn``, ``norm`` and (reallocation) head dims
    )
    train: TrainConfig


@dataclass(frozen=True)
class Bench:
    """Training-step cost of one attention + FFN block, S-D and linear vs SA, at every size's width."""

    seq_lens: tuple[int, ...]
    batch_size: int
    repeats: int


@dataclass(frozen=True)
class Preset:
    sizes: dict[str, Size]  # the spectral cascade and the scale trend
    probe: str  # the size of the linearisation and reallocation experiments
    retrain_linear: tuple[int, ...]  # leading linear layers of the retrained models
    min_head_dim: int  # reallocation's smallest head dim
    seeds: tuple[int, ...]
    eval_windows: int  # validation windows of every perplexity
    models: tuple[str, ...]  # pretrained models analysed
    bench: Bench
    corpus: str = (
        "shakespeare"  # a corpus name, or a folder of token shards (``python -m attnlab.data.shards``)
    )
    micro_tokens: int | None = None  # tokens per forward pass per process (gradient accumulation); None = all


GPU = {"precision": "bf16", "compile": True}

# GPT-2-shaped sizes; with the GPT-2 vocabulary their parameter counts are the paper's 7M, 18M, 51M, 124M and
# 355M (the shapes are inferred from those counts).
PAPER_SIZES = {
    "4L-128d": (4, 128, 4, 32),
    "6L-256d": (6, 256, 4, 64),
    "8L-512d": (8, 512, 8, 64),
    "12L-768d": (12, 768, 12, 64),
    "24L-1024d": (24, 1024, 16, 64),
}


def _paper_size(name: str, steps: int, batch: int, seq: int, lr: float, vocab: int = 256) -> Size:
    return Size(_gpt(*PAPER_SIZES[name], seq, vocab), _train(steps, batch, seq, lr, 20, **GPU))


PRESETS: dict[str, Preset] = {
    # About a minute on a CPU, to exercise every cell.
    "smoke": Preset(
        sizes={
            "2L-32d": Size(_gpt(2, 32, 2, 16, 32), _train(30, 8, 32, 3e-3, 2, eval_batches=2)),
            "3L-32d": Size(_gpt(3, 32, 2, 16, 32), _train(30, 8, 32, 3e-3, 2, eval_batches=2)),
            "3L-48d": Size(_gpt(3, 48, 3, 16, 32), _train(30, 8, 32, 3e-3, 2, eval_batches=2)),
        },
        probe="3L-32d", retrain_linear=(1,), min_head_dim=4, seeds=(0,), eval_windows=16,
        models=("minilm", "smollm2"), bench=Bench(seq_lens=(32, 64), batch_size=2, repeats=2),
    ),
    # A 2-core laptop, about half an hour.
    "cpu": Preset(
        sizes={
            "4L-64d": Size(_gpt(4, 64, 4, 16, 128), _train(600, 16, 128, 2e-3)),
            "6L-96d": Size(_gpt(6, 96, 4, 24, 128), _train(600, 16, 128, 2e-3)),
            "8L-128d": Size(_gpt(8, 128, 4, 32, 128), _train(600, 16, 128, 2e-3)),
        },
        probe="6L-96d", retrain_linear=(2, 4), min_head_dim=8, seeds=(0,), eval_windows=64,
        models=("minilm", "smollm2"), bench=Bench(seq_lens=(128, 1024, 2048), batch_size=4, repeats=5),
    ),
    # One large GPU: the paper's 7M-124M shapes, byte tokens.
    "gpu": Preset(
        sizes={
            name: _paper_size(name, 3000, 32, 512, lr)
            for name, lr in (("4L-128d", 2e-3), ("6L-256d", 1.5e-3), ("8L-512d", 1e-3), ("12L-768d", 6e-4))
        },
        probe="12L-768d", retrain_linear=(2, 4, 7), min_head_dim=8, seeds=(0,), eval_windows=256,
        models=("minilm", "smollm2"), bench=Bench(seq_lens=(512, 1024, 2048, 4096), batch_size=8, repeats=20),
    ),
    # The paper's range, 7M-355M, on OpenWebText in GPT-2 tokens (shards built once with python -m
    # attnlab.data.shards), so the parameter counts are exact.
    "paper": Preset(
        sizes={
            name: _paper_size(name, 20_000, 64, 1024, lr, GPT2_VOCAB)
            for name, lr in (
                ("4L-128d", 2e-3), ("6L-256d", 1.5e-3), ("8L-512d", 1e-3), ("12L-768d", 6e-4),
                ("24L-1024d", 3e-4),
            )
        },
        probe="12L-768d", retrain_linear=(2, 4, 7), min_head_dim=8, seeds=(0, 1), eval_windows=1024,
        models=("minilm", "smollm2"),
        bench=Bench(seq_lens=(1024, 2048, 4096, 8192), batch_size=8, repeats=20), micro_tokens=8 * 1024,
        corpus="shards/openwebtext-gpt2",
    ),
}  # fmt: skip


Runs = dict[tuple[str, str, int], TrainResult]


def _count(model: GPTConfig, attention_only: bool = False, non_embedding: bool = True) -> int:
    with torch.device("meta"):
        gpt = GPT(model)
    if attention_only:
        return sum(p.numel() for name, p in gpt.named_parameters() if ".attn." in name)
    return gpt.num_params(non_embedding)


def _pct(new: float, base: float) -> float:
    return 100.0 * (new / base - 1.0)


@dataclass(frozen=True)
class SDExperiment(PaperExperiment):
    paper = PAPER

    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    sizes: tuple[str, ...]
    models: tuple[str, ...]
    device: str

    @property
    def probe(self) -> str:
        """The linearisation and reallocation size: the preset's, or the largest chosen size without it."""
        return self.preset.probe if self.preset.probe in self.sizes else self.sizes[-1]

    # Training -----------------------------------------------------------------------------------------

    def spec(
        self, size: str, variant: str, seed: int, linear: int = 0, head_dim: tuple[int, ...] | None = None
    ) -> RunSpec:
        """The run of ``variant`` at ``size``: with ``linear`` leading ELU+1 layers and per-layer head dims
        ``head_dim`` when given."""
        s = self.preset.sizes[size]
        kind, norm = VARIANTS[variant]
        n = s.model.n_layer
        attn = ("linear",) * linear + (kind,) * (n - linear) if linear else kind
        model = replace(s.model, attn=attn, norm=norm, head_dim=head_dim or s.model.head_dim)
        lr_scale = {"interaction": INTERACTION_LR_SCALE} if kind == "sd" and linear < n else {}
        return RunSpec(model, replace(s.train, seed=seed, lr_scale=lr_scale), self.preset.corpus)

    def check_data(self) -> None:
        """The corpus exists, with no more token ids than the models' vocabulary."""
        check_corpus(self.preset.corpus, min(self.preset.sizes[n].model.vocab_size for n in self.sizes))

    def _train(self, spec: RunSpec, label: str) -> TrainResult | None:
        """The cached run, or None when it diverged (reported by ``diverged``)."""
        try:
            return launch(spec, device=self.device, label=label, micro_tokens=self.preset.micro_tokens)
        except TrainingDiverged as err:
            print(f"{label}: {err}")
            return None

    def train_all(self) -> Runs:
        """SA, S-D and S-D without LayerNorm at every size and seed; diverged runs are left out."""
        self.check_data()
        runs = {}
        for size in self.sizes:
            for seed in self.seeds:
                for variant in VARIANTS:
                    run = self._train(self.spec(size, variant, seed), f"{size} {LABELS[variant]} seed {seed}")
                    if run is not None:
                        runs[size, variant, seed] = run
        return runs

    def diverged(self, runs: Runs) -> list[tuple[str, str, int]]:
        return [
            (size, variant, seed)
            for size in self.sizes for seed in self.seeds for variant in VARIANTS
            if (size, variant, seed) not in runs
        ]  # fmt: skip

    def results_cached(self, runs: Runs) -> str:
        n = sum(r.cached for r in runs.values())
        return f"{n} of {len(runs)} training runs were loaded from the results cache."

    def config_table(self) -> pd.DataFrame:
        """The sizes of this scale: shape, schedule, parameters (without embeddings), attention parameters of
        SA and S-D, and the count with the GPT-2 vocabulary's embeddings (the paper's size labels)."""
        rows = []
        for name in self.sizes:
            m, t = self.preset.sizes[name].model, self.preset.sizes[name].train
            rows.append({
                "size": name, "layers": m.n_layer, "d_model": m.d_model, "heads": m.n_head,
                "head_dim": m.head_dim, "context": t.seq_len, "batch": t.batch_size, "steps": t.steps,
                "lr": t.lr, "params": _count(m), "attn params SA": _count(m, attention_only=True),
                "attn params S-D": _count(replace(m, attn="sd"), attention_only=True),
                "params with GPT-2 vocab": _count(replace(m, vocab_size=GPT2_VOCAB), non_embedding=False),
            })  # fmt: skip
        return pd.DataFrame(rows).set_index("size")

    def _windows(self, size: str) -> torch.Tensor:
        seq = self.preset.sizes[size].train.seq_len
        return validation_windows(
            corpus_tokens(self.preset.corpus)["validation"], self.preset.eval_windows, seq
        )

    def _loss(self, model: GPT, size: str) -> float:
        """Validation loss over the preset's windows, in batches no larger than a training pass."""
        t = self.preset.sizes[size].train
        rows = micro_rows(t.seq_len, self.preset.micro_tokens) or t.batch_size
        return evaluate(model, self._windows(size), rows, self.torch_device, t.precision)

    def final_losses(self, runs: Runs) -> pd.DataFrame:
        """Validation loss (nats/byte) and perplexity per byte of every trained model, on the experiment's
        validation windows."""
        rows = []
        for (size, variant, seed), run in runs.items():
            loss = self._loss(run.model, size)
            rows.append({
                "size": size, "variant": variant, "seed": seed, "initial loss": run.history["val_loss"][0],
                "loss": loss, "ppl": math.exp(loss),
            })  # fmt: skip
        return pd.DataFrame(rows)

    # Pretrained analysis ------------------------------------------------------------------------------

    def _pretrained(self, name: str) -> pd.DataFrame:
        def compute() -> dict:
            return {"heads": model_heads(load_pretrained(name)).to_dict(orient="list")}

        result, cached = cached_result(
            "sd_routing_heads", {"model": name}, compute, data=pretrained_fingerprint(name),
            code=("papers/sd_routing/routing.py", "metrics.py"),
        )  # fmt: skip
        print(f"{name}: {'loaded from the results cache' if cached else 'analysed'}")
        return pd.DataFrame(result["heads"])

    def head_analysis(self, runs: Runs) -> pd.DataFrame:
        """Every head's routing/filtering statistics (``attnlab.papers.sd_routing.routing.form_stats``) for
        the pretrained models and for this run's trained models (model-space forms; an S-D head's is Wq^T L
        Wk)."""
        frames = [self._pretrained(name).assign(model=name, source="pretrained") for name in self.models]
        for (size, variant, seed), run in runs.items():
            label = f"ours: {LABELS[variant]} {size} seed {seed}"
            frames.append(model_heads(run.model).assign(model=label, source=variant))
        return pd.concat(frames, ignore_index=True)

    @staticmethod
    def head_summary(heads: pd.DataFrame) -> pd.DataFrame:
        """Per model: head count, filtering energy (mean) and the share of heads where filtering dominates
        (energy > 1/2), mean effective ranks of R and F, the share of heads whose routing rank is below their
        filtering rank, and the share of unstable heads (an eigenvalue of W with positive real part)."""
        g = heads.assign(
            dominant=heads["filtering_energy"] > 0.5,
            lower=heads["routing_rank"] < heads["filtering_rank"],
            unstable=heads["n_unstable"] > 0,
        ).groupby("model", sort=False)
        return pd.DataFrame({
            "heads": g.size(), "filtering energy": g["filtering_energy"].mean(),
            "filtering dominant %": 100 * g["dominant"].mean(), "routing rank": g["routing_rank"].mean(),
            "filtering rank": g["filtering_rank"].mean(),
            "routing rank < filtering rank %": 100 * g["lower"].mean(),
            "unstable %": 100 * g["unstable"].mean(),
        })  # fmt: skip

    # Spectral cascade and scale trend -----------------------------------------------------------------

    def cascade(self, runs: Runs) -> pd.DataFrame:
        """Effective rank of each layer's routing matrix, averaged over heads: S (head space) for S-D, the
        antisymmetric part R of the model-space form for SA. One row per (size, variant, seed, layer)."""
        rows = []
        for (size, variant, seed), run in runs.items():
            if variant == "sa":
                heads = model_heads(run.model)
            else:
                heads = sd_heads(run.model)
            per_layer = heads.groupby("layer")["routing_rank"].mean()
            n = run.model.cfg.n_layer
            for layer, rank in per_layer.items():
                rows.append({
                    "size": size, "variant": variant, "seed": seed, "layer": layer,
                    "depth": layer / max(1, n - 1),
                    "routing_rank": rank, "head_dim": run.model.cfg.layer_head_dims[layer],
                    "params": _count(run.model.cfg),
                })  # fmt: skip
        return pd.DataFrame(rows)

    @staticmethod
    def cascade_table(cascade: pd.DataFrame) -> pd.DataFrame:
        """The cascade as one row per (variant, size), one column per layer, seeds averaged."""
        table = cascade.pivot_table(index=["variant", "size"], columns="layer", values="routing_rank")
        return table.rename(columns=lambda layer: f"layer {layer}")

    @staticmethod
    def scale_trend(cascade: pd.DataFrame) -> pd.DataFrame:
        """Per (size, variant): the fraction of layers at the minimum rank (head-mean routing rank <=
        MIN_RANK), mean over seeds, against the parameter count."""
        at_min = cascade.assign(at_min=cascade["routing_rank"] <= MIN_RANK)
        per_seed = at_min.groupby(["size", "variant", "seed", "params"], sort=False)["at_min"].mean()
        trend = (
            per_seed.groupby(["size", "variant", "params"], sort=False).mean().rename("fraction at min rank")
        )
        return trend.reset_index().sort_values(["variant", "params"], ignore_index=True)

    # Filtering collapse and inversion -----------------------------------------------------------------

    def collapse(self, runs: Runs) -> pd.DataFrame:
        """Perplexity after truncating the filtering part to one scalar per head and after removing the
        routing part: S-D's D -> mean(D) I and S = 0; for SA the matching truncations of the model-space form,
        F -> (tr F / r) P and R = 0 (``attnlab.papers.sd_routing.routing.sa_truncated_forms``)."""
        rows = []
        for (size, variant, seed), run in runs.items():
            model = run.model
            base = self._loss(model, size)
            for part, name in (("filtering", "filtering -> scalar"), ("routing", "routing removed")):
                if variant == "sa":
                    with override_forms(model, sa_truncated_forms(model, part)):
                        loss = self._loss(model, size)
                else:
                    loss = self._loss(sd_truncated(model, part), size)
                rows.append({
                    "size": size, "variant": variant, "seed": seed, "intervention": name,
                    "ppl": math.exp(loss), "base ppl": math.exp(base),
                    "ppl change %": _pct(math.exp(loss), math.exp(base)),
                })  # fmt: skip
        return pd.DataFrame(rows)

    def planned_runs(self) -> dict[str, PlannedRun]:
        """Every training run of the notebook, for :mod:`attnlab.runner.plan`. The reallocated model's head
        dims come
        from measured ranks and are at most the uniform ones: it is counted at the uniform model's cost."""
        specs = {
            f"{size} {variant} seed {seed}": self.spec(size, variant, seed)
            for size in self.sizes
            for seed in self.seeds
            for variant in VARIANTS
        }
        specs |= {
            f"{self.probe} {variant} first {k} linear seed {seed}": self.spec(self.probe, variant, seed, k)
            for variant in ("sa", "sd")
            for seed in self.seeds
            for k in self.preset.retrain_linear
        }
        runs = {label: PlannedRun.from_spec(spec) for label, spec in specs.items()}
        for seed in self.seeds:
            uniform = PlannedRun.from_spec(self.spec(self.probe, "sd", seed))
            runs[f"{self.probe} sd reallocated seed {seed}"] = replace(
                uniform, key=uniform.key + " reallocated"
            )
        return runs

    # Linearisation ------------------------------------------------------------------------------------

    def linearisation(self, runs: Runs) -> pd.DataFrame:
        """Perplexity with the first k layers as ELU+1 linear attention at the probe size, for SA and S-D:
        post hoc (the trained weights, k = 0..n) and retrained from scratch (the preset's k). Changes are
        relative to the same variant's trained softmax model (k = 0)."""
        size = self.probe
        n = self.preset.sizes[size].model.n_layer
        rows = []
        for variant in ("sa", "sd"):
            for seed in self.seeds:
                run = runs.get((size, variant, seed))
                if run is None:
                    continue
                base = math.exp(self._loss(run.model, size))
                for k in range(n + 1):
                    ppl = math.exp(self._loss(linearised(run.model, k), size))
                    rows.append({"variant": variant, "seed": seed, "k": k, "mode": "post hoc", "ppl": ppl,
                                 "ppl change %": _pct(ppl, base)})  # fmt: skip
                rows.append({"variant": variant, "seed": seed, "k": 0, "mode": "retrained", "ppl": base,
                             "ppl change %": 0.0})  # fmt: skip
                for k in self.preset.retrain_linear:
                    label = f"{size} {LABELS[variant]} first {k} linear seed {seed}"
                    retrained = self._train(self.spec(size, variant, seed, linear=k), label)
                    if retrained is None:
                        continue
                    ppl = math.exp(self._loss(retrained.model, size))
                    rows.append({"variant": variant, "seed": seed, "k": k, "mode": "retrained", "ppl": ppl,
                                 "ppl change %": _pct(ppl, base)})  # fmt: skip
        return pd.DataFrame(rows)

    # Reallocation -------------------------------------------------------------------------------------

    def reallocation(self, runs: Runs, cascade: pd.DataFrame) -> pd.DataFrame:
        """Head dims set per layer from the probe S-D model's measured routing ranks (``head_dims_from_rank``,
        seeds averaged), retrained; attention parameters and perplexity beside the uniform S-D model."""
        size = self.probe
        m = self.preset.sizes[size].model
        sub = cascade[(cascade["size"] == size) & (cascade["variant"] == "sd")]
        ranks = sub.groupby("layer")["routing_rank"].mean().tolist()
        dims = head_dims_from_rank(ranks, base=m.head_dim, minimum=self.preset.min_head_dim)
        rows = []
        for seed in self.seeds:
            uniform = runs.get((size, "sd", seed))
            label = f"{size} S-D head dims {list(dims)} seed {seed}"
            # head dims equal to the uniform ones name the uniform run, which the cache then loads
            same = dims == m.layer_head_dims
            realloc = self._train(self.spec(size, "sd", seed, head_dim=None if same else dims), label)
            for name, run, hd in (("uniform", uniform, m.layer_head_dims), ("reallocated", realloc, dims)):
                if run is None:
                    continue
                rows.append({
                    "model": name, "seed": seed, "head dims": " ".join(map(str, hd)),
                    "attn params": _count(run.model.cfg, attention_only=True),
                    "ppl": math.exp(self._loss(run.model, size)),
                })  # fmt: skip
        frame = pd.DataFrame(rows)
        base = frame[frame["model"] == "uniform"].set_index("seed")
        frame["attn params saved %"] = [
            -_pct(r["attn params"], base.loc[r["seed"], "attn params"]) for _, r in frame.iterrows()
        ]
        frame["ppl change %"] = [_pct(r["ppl"], base.loc[r["seed"], "ppl"]) for _, r in frame.iterrows()]
        return frame

    # Cost ---------------------------------------------------------------------------------------------

    def benchmark(self) -> pd.DataFrame:
        """Forward + backward time of one attention + FFN block (``attnlab.tools.benchmark.block_cost``) for
        SA, S-D and linear attention at every size's width and head shape, across the preset's sequence
        lengths; time and memory ratios to SA. bf16 on CUDA, float32 elsewhere."""
        b = self.preset.bench
        device = self.torch_device
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        rows = []
        for size in self.sizes:
            m = self.preset.sizes[size].model
            for seq_len in b.seq_lens:
                cfg = replace(m, block_size=seq_len)
                kinds = ("sa", "sd", "linear")
                costs = block_costs(cfg, kinds, b.batch_size, seq_len, device, repeats=b.repeats, dtype=dtype)
                for kind, cost in (costs or {}).items():
                    rows.append({"size": size, "seq_len": seq_len, "kind": kind, **cost})
        frame = pd.DataFrame(rows)
        sa = frame[frame["kind"] == "sa"].set_index(["size", "seq_len"])
        key = list(zip(frame["size"], frame["seq_len"], strict=True))
        frame["time / SA"] = frame["time_ms"].to_numpy() / sa.loc[key, "time_ms"].to_numpy()
        frame["memory / SA"] = frame["memory_mib"].to_numpy() / sa.loc[key, "memory_mib"].to_numpy()
        return frame

    # Claims -------------------------------------------------------------------------------------------

    def claims(
        self,
        runs: Runs,
        losses: pd.DataFrame,
        heads: pd.DataFrame,
        cascade: pd.DataFrame,
        trend: pd.DataFrame,
        collapse: pd.DataFrame,
        linear: pd.DataFrame,
        realloc: pd.DataFrame,
    ) -> list[Claim]:
        """Every finding of the sheet, with a verdict computed from this run's measurements."""
        return [
            *self._claims_pretrained(heads),
            *self._claims_stability(runs, losses),
            *self._claims_cascade(cascade),
            *self._claims_trend(trend),
            *self._claims_collapse(collapse),
            *self._claims_linear(linear),
            *self._claims_realloc(realloc),
        ]

    def _claims_pretrained(self, heads: pd.DataFrame) -> list[Claim]:
        summary = self.head_summary(heads)
        pre = summary.loc[[m for m in self.models if m in summary.index]]
        paper = f"{PAPER_HEADS}:"

        def per_model(column: str, digits: int = 1) -> str:
            return "; ".join(f"{m} {v:.{digits}f}" for m, v in pre[column].items())

        ranks = "; ".join(
            f"{m} {r:.1f} vs {f:.1f}"
            for m, r, f in zip(pre.index, pre["routing rank"], pre["filtering rank"], strict=True)
        )
        return [
            Claim(
                "pretrained",
                "filtering dominates the spectral budget of pretrained heads",
                f"{paper} filtering dominates",
                f"heads with filtering energy > 1/2 (%): {per_model('filtering dominant %')}; "
                f"mean filtering energy: {per_model('filtering energy', 2)}",
                _per_model_verdict(pre["filtering dominant %"] > 50),
            ),
            Claim(
                "pretrained",
                "routing runs at low rank",
                f"{paper} routing low rank",
                f"mean effective rank of R vs F: {ranks}",
                _per_model_verdict(pre["routing rank < filtering rank %"] > 50),
            ),
            Claim(
                "pretrained",
                "every head is dynamically unstable (an eigenvalue of W with positive real part)",
                f"{paper} all heads",
                f"unstable heads (%): {per_model('unstable %')}",
                _per_model_verdict(pre["unstable %"] == 100),
            ),
        ]

    def _claims_stability(self, runs: Runs, losses: pd.DataFrame) -> list[Claim]:
        sd_runs = [r for (_, v, _), r in runs.items() if v != "sa"]
        max_real = max((sd_heads(r.model)["max_real"].max() for r in sd_runs), default=math.nan)
        stable = Claim(
            "S-D",
            "every eigenvalue of L = S - D has real part <= 0",
            "by construction",
            f"largest real part over all heads of the trained S-D models: {max_real:.2e}",
            "holds" if max_real <= 1e-6 else "does not hold",
        )
        wide = losses.pivot_table(index=["size", "seed"], columns="variant", values="loss")
        failed = [k for k in self.diverged(runs) if k[1] == "sd-noln"]
        if {"sd", "sd-noln"} <= set(wide.columns):
            gaps = 100 * (wide["sd-noln"] / wide["sd"] - 1)
            ours = "loss without vs with LayerNorm: " + ", ".join(
                f"{s} {signed(g, 1)} %" for (s, _), g in gaps.items()
            )
            close = (gaps.abs() <= 10).all()
        else:
            ours, close = "no S-D model without LayerNorm finished", False
        if failed:
            ours += f"; diverged: {failed}"
            verdict = "does not hold"
        elif close:
            verdict = "holds"
        else:
            verdict = "inconclusive: trains stably, but more than 10 % above the loss with LayerNorm"
        trains = Claim(
            "S-D", "S-D attention trains without LayerNorm", "trains (no number given)", ours, verdict
        )
        return [stable, trains]

    def _claims_cascade(self, cascade: pd.DataFrame) -> list[Claim]:
        claims = []
        for variant in ("sd", "sd-noln"):
            by = cascade[cascade["variant"] == variant].groupby(["size", "layer"])["routing_rank"].mean()
            sizes = [s for s in self.sizes if s in by.index.get_level_values(0)]
            if not sizes:
                continue
            first = {s: by[s].iloc[0] for s in sizes}
            last = {s: by[s].iloc[-1] for s in sizes}
            middle = {s: by[s].iloc[1:-1].mean() for s in sizes if len(by[s]) > 2}
            label = LABELS[variant]
            claims += [
                Claim(
                    "cascade",
                    f"layer 0's routing converges to one rotation plane ({label})",
                    "layer 0 effective rank 2, 7M-355M",
                    "layer 0: " + _by_size(first),
                    "holds" if all(1.5 <= v <= MIN_RANK for v in first.values()) else "does not hold",
                ),
                Claim(
                    "cascade",
                    f"middle layers route in 2-3 dimensions ({label})",
                    "effective rank 2-3",
                    "middle layers (mean): " + (_by_size(middle) or "no size has middle layers"),
                    "holds" if middle and all(1.5 <= v <= 3.5 for v in middle.values()) else "does not hold",
                ),
                Claim(
                    "cascade",
                    f"the last layers expand ({label})",
                    "10+ planes, bounded by d_head",
                    "last layer vs layer 0: "
                    + ", ".join(f"{s} {last[s]:.2f} vs {first[s]:.2f}" for s in sizes),
                    "holds"
                    if all(last[s] > max(first[s], middle.get(s, first[s])) for s in sizes)
                    else "does not hold",
                ),
            ]
        return claims

    def _claims_trend(self, trend: pd.DataFrame) -> list[Claim]:
        claims = []
        for variant in ("sd", "sd-noln"):
            sub = trend[trend["variant"] == variant].sort_values("params")
            if len(sub) < 2:
                continue
            frac = sub["fraction at min rank"].to_numpy()
            if (np.diff(frac) >= 0).all() and frac[-1] > frac[0]:
                verdict = "holds"
            else:
                verdict = "inconclusive: not monotone" if frac[-1] > frac[0] else "does not hold"
            ours = ", ".join(
                f"{s} ({p / 1e6:.2f}M) {100 * f:.0f} %"
                for s, p, f in zip(sub["size"], sub["params"], frac, strict=True)
            )
            claims.append(
                Claim(
                    "scale trend",
                    f"the fraction of layers at minimum rank grows with size ({LABELS[variant]})",
                    "33 % at 18M -> 92 % at 355M",
                    f"layers with routing rank <= {MIN_RANK}: {ours}",
                    verdict,
                )
            )
        return claims

    def _claims_collapse(self, collapse: pd.DataFrame) -> list[Claim]:
        wide = collapse.pivot_table(
            index=["variant", "size", "seed"], columns="intervention", values="ppl change %"
        )
        claims = []
        if "sd" in wide.index:
            filt, rout = wide.loc["sd", "filtering -> scalar"], wide.loc["sd", "routing removed"]
            claims += [
                Claim(
                    "collapse",
                    "S-D: truncating D to one scalar per head is nearly free",
                    f"+{PAPER_FILTER_TRUNCATION_PPL} PPL",
                    "PPL change: " + _by_size(filt, "+.2f", " %"),
                    "holds" if (filt < CHEAP_PCT).all() else "does not hold",
                ),
                Claim(
                    "collapse",
                    "S-D: removing routing (S = 0) is catastrophic",
                    "catastrophic",
                    "PPL change: " + _by_size(rout, "+.1f", " %"),
                    "holds" if (rout > CATASTROPHIC_PCT).all() else "does not hold",
                ),
            ]
        if "sa" in wide.index:
            filt, rout = wide.loc["sa", "filtering -> scalar"], wide.loc["sa", "routing removed"]
            inverse = filt > rout
            pairs = ", ".join(
                f"{s} {signed(a, 1)} % vs {signed(b, 1)} %"
                for (s, _), a, b in zip(filt.index, filt, rout, strict=True)
            )
            claims.append(
                Claim(
                    "collapse",
                    "standard attention shows the inverse: truncating filtering hurts more than removing "
                    "routing",
                    "truncating filtering is forbidden, routing is cheap",
                    f"SA PPL change, filtering -> scalar vs routing removed: {pairs}",
                    "holds" if inverse.all() else ("does not hold" if not inverse.any() else "inconclusive"),
                )
            )
        return claims

    def _claims_linear(self, linear: pd.DataFrame) -> list[Claim]:
        if linear.empty:
            return []
        n = self.preset.sizes[self.probe].model.n_layer
        post = linear[linear["mode"] == "post hoc"].groupby(["variant", "k"])["ppl change %"].mean()

        def tolerated(variant: str) -> int:
            """The most leading layers whose replacement (and every smaller k's) stays within tolerance."""
            within = (post[variant] < LINEAR_TOLERANCE_PCT).astype(int)
            return int(within.cumprod().sum() - 1)

        k_sd, k_sa = tolerated("sd"), tolerated("sa")
        if k_sd > k_sa:
            verdict = "holds"
        elif k_sd == k_sa == n:
            verdict = "inconclusive: both stay within 5 % with every layer replaced"
        else:
            verdict = "does not hold"
        claims = [
            Claim(
                "linearisation",
                "S-D tolerates more leading ELU+1 layers than standard attention (post hoc)",
                f"S-D: first {PAPER_LINEAR['layers']} of {PAPER_LINEAR['of']} layers < 5 % PPL; SA collapses "
                "by layer 3",
                f"{self.probe}, most leading layers within 5 %: S-D {k_sd}, SA {k_sa} (of {n})",
                verdict,
            )
        ]
        retrained = linear[(linear["mode"] == "retrained") & (linear["k"] > 0)]
        if not retrained.empty:
            k = min(retrained["k"].unique(), key=lambda x: abs(x - n / 3))
            change = retrained[retrained["k"] == k].groupby("variant")["ppl change %"].mean()
            ours = ", ".join(f"{LABELS[v]} {signed(c, 1)} %" for v, c in change.items())
            claims.append(
                Claim(
                    "linearisation",
                    "S-D with ELU+1 in the first third of its layers stays close to the baseline (retrained)",
                    f"first {PAPER_LINEAR['elu_layers']} of {PAPER_LINEAR['of']} layers within "
                    f"{PAPER_LINEAR['elu_pct']} %",
                    f"{self.probe}, first {k} of {n} layers, retrained: {ours}",
                    "holds" if change.get("sd", math.inf) <= PAPER_LINEAR["elu_pct"] else "does not hold",
                )
            )
        return claims

    def _claims_realloc(self, realloc: pd.DataFrame) -> list[Claim]:
        sub = realloc[realloc["model"] == "reallocated"]
        if sub.empty:
            return []
        saved, cost = sub["attn params saved %"].mean(), sub["ppl change %"].mean()
        ok = [saved >= PAPER_REALLOCATION["params_saved_pct"][0], cost <= PAPER_REALLOCATION["ppl_pct"][1]]
        if saved == 0:
            verdict = (
                "not testable here: every layer's measured rank calls for the uniform head dim, so there is "
                "nothing to reallocate"
            )
        elif all(ok):
            verdict = "holds"
        elif any(ok):
            verdict = "inconclusive: " + (
                "the saving is smaller" if ok[1] else "the perplexity cost is larger"
            )
        else:
            verdict = "does not hold"
        return [
            Claim(
                "reallocation",
                "head dims from measured rank save attention parameters at a small PPL cost",
                "47-65 % fewer attention parameters for +3.9 % to +8.4 % PPL",
                f"head dims {sub['head dims'].iloc[0]}: {saved:.0f} % fewer attention parameters, "
                f"PPL {signed(cost, 1)} %",
                verdict,
            )
        ]


def _per_model_verdict(ok: pd.Series) -> str:
    """``holds`` when the claim holds for every pretrained model, ``does not hold`` when for none."""
    if ok.all():
        return "holds"
    if not ok.any():
        return "does not hold"
    return f"inconclusive: holds for {', '.join(ok[ok].index)}, not for {', '.join(ok[~ok].index)}"


def _by_size(values, spec: str = ".2f", unit: str = "") -> str:
    """``size value`` pairs of a dict or of a Series indexed by size (or by (size, seed))."""

    def fmt(v: float) -> str:
        return signed(v, int(spec[-2])) if spec.startswith("+") else format(v, spec)

    return ", ".join(f"{k[0] if isinstance(k, tuple) else k} {fmt(v)}{unit}" for k, v in values.items())


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    sizes: list[str] | tuple[str, ...] = (),
    models: list[str] | tuple[str, ...] = (),
    corpus: str = "",
) -> SDExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``models``: the
    pretrained models to analyse ("smollm2", "minilm", a Hugging Face folder or a cached hub name); empty: the
    preset's. ``corpus``: a corpus name or a folder of token shards (``python -m attnlab.data.shards``; a
    relative folder is looked up in the data folder too); empty: the preset's, OpenWebText in GPT-2 tokens at
    paper scale."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    preset = replace(preset, corpus=corpus_parameter(corpus, preset.corpus))
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, str) and m for m in models):
        raise ParameterError(f"models must be a list of model names or folders; got {models!r}")
    return SDExperiment(
        scale=scale,
        preset=preset,
        seeds=check_seeds(seeds, preset.seeds),
        sizes=check_subset("sizes", sizes, preset.sizes),
        models=tuple(models) or preset.models,
        device=check_device(device),
    )
