"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the experiment of its
notebook (presets in ``presets``, claims in ``claims``).

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

import pandas as pd
import torch

from attnlab.errors import ParameterError, TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.papers.experiment import PaperExperiment
from attnlab.papers.sd_routing import claims as sd_claims
from attnlab.papers.sd_routing.presets import GPT2_VOCAB, LABELS, MIN_RANK, PRESETS, VARIANTS, Preset
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
from attnlab.runner.claims import Claim
from attnlab.runner.params import check_device, check_scale, check_seeds, check_subset
from attnlab.runner.plan import PlannedRun
from attnlab.tools.benchmark import block_costs
from attnlab.training.cache import RunSpec, cached_result, check_corpus, corpus_parameter, corpus_tokens
from attnlab.training.launch import launch, micro_rows
from attnlab.training.trainer import TrainResult, evaluate, validation_windows

PAPER = "sd_routing"

#: The S-D interaction (A, delta) starts at O(1), the projections at O(0.02); Adam moves both by about the
#: learning rate per step, so the interaction group gets this multiple of the learning rate (our choice).
INTERACTION_LR_SCALE = 10.0

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
        """The corpus exists, with no more token ids than the models' vocabulary, and every pretrained model
        can load here (a pinned model, a folder or a cached hub name)."""
        from attnlab.hf import check_model_name  # transformers: imported only where models are loaded

        check_corpus(self.preset.corpus, min(self.preset.sizes[n].model.vocab_size for n in self.sizes))
        for name in self.models:
            check_model_name(name)

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
        """Every claim of docs/papers/sd-routing.md, with a verdict computed from this run's measurements
        (:func:`attnlab.papers.sd_routing.claims.claims`)."""
        return sd_claims.claims(self, runs, losses, heads, cascade, trend, collapse, linear, realloc)


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
