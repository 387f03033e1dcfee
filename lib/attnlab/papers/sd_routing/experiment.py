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
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd
import torch

from attnlab.data import shards
from attnlab.data.corpora import corpus_names
from attnlab.errors import ParameterError, TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.papers.experiment import PaperExperiment, with_steps
from attnlab.papers.sd_routing import tables
from attnlab.papers.sd_routing.presets import (
    GPT2_VOCAB,
    LABELS,
    PRESETS,
    PROBE_VARIANTS,
    REALLOC_CONTROLS,
    REALLOCATED,
    ROUTING_ENERGY_SHARE,
    SD_VARIANTS,
    VARIANTS,
    Preset,
    shards_command,
)
from attnlab.papers.sd_routing.pretrained import NULL_DRAWS, POOL_DRAWS, SMOKE_POOL, analyse, resampled_null
from attnlab.papers.sd_routing.routing import (
    MEASURE_COLUMNS,
    head_dims_from_dims,
    linearised,
    model_heads,
    override_forms,
    random_heads,
    random_routing,
    sa_truncated_forms,
    same_total_uniform,
    sd_heads,
    sd_truncated,
    shuffled_dims,
)
from attnlab.runner.params import check_count, check_device, check_scale, check_seeds, check_subset
from attnlab.runner.plan import PlannedRun
from attnlab.tools.benchmark import block_costs
from attnlab.training.cache import RunSpec, check_corpus, corpus_parameter, corpus_tokens
from attnlab.training.launch import launch, micro_rows
from attnlab.training.trainer import TrainResult, evaluate, validation_windows

if TYPE_CHECKING:  # claims are judged after computing: imported where used, outside the code keys
    from attnlab.papers.sd_routing import claims as sd_claims  # judged after computing
    from attnlab.runner.claims import Claim

PAPER = "sd_routing"

#: The S-D interaction (A, delta) starts at O(1), the projections at O(0.02); Adam moves both by about the
#: learning rate per step, so the interaction group gets this multiple of the learning rate (our choice).
INTERACTION_LR_SCALE = 10.0

Runs = dict[tuple[str, str, int], TrainResult]

#: Random antisymmetric matrices drawn for the cascade's baseline at each head dim.
RANDOM_SAMPLES = 256


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
        lr_scale = {"interaction": INTERACTION_LR_SCALE} if kind in SD_VARIANTS and linear < n else {}
        return RunSpec(model, replace(s.train, seed=seed, lr_scale=lr_scale), self.preset.corpus)

    def check_data(self) -> None:
        """Before any training: the corpus exists (missing shards stop everything with the command that
        builds them), with no more token ids than the models' vocabulary and at least as many training tokens
        as the longest run reads (at most one epoch: no memorisation), and every pretrained model can load
        here (a pinned model, a folder or a cached hub name)."""
        from attnlab.hf import check_model_name  # transformers: imported only where models are loaded

        corpus = self.preset.corpus
        most = max(
            t.steps * t.batch_size * t.seq_len for t in (self.preset.sizes[n].train for n in self.sizes)
        )
        if corpus not in corpus_names() and not (Path(corpus) / shards.META).is_file():
            raise ParameterError(
                f"corpus {corpus!r} is missing. Build it once with {shards_command(most)} (needs the Hugging "
                "Face hub; another --out folder works when passed as the corpus parameter)."
            )
        check_corpus(corpus, min(self.preset.sizes[n].model.vocab_size for n in self.sizes))
        have = len(corpus_tokens(corpus)["train"])
        for name in self.sizes:
            t = self.preset.sizes[name].train
            need = t.steps * t.batch_size * t.seq_len
            if need > have:
                raise ParameterError(
                    f"{name} reads {need:,} training tokens, {need / have:.1f} epochs of the {have:,} of "
                    f"corpus {corpus!r}: each token must be seen at most once (no memorisation). Build a "
                    f"larger corpus once with {shards_command(most)} and pass it as the corpus parameter, or "
                    "train fewer steps."
                )
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
        """Every variant (``VARIANTS``: SA and S-D with and without LayerNorm, S-D with a shared projection)
        at every size and seed; diverged runs are left out."""
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

    def _pretrained(self, name: str, say: bool = True) -> dict:
        """A pretrained model's analysis (``pretrained.analyse``; the null's pool of ``SMOKE_POOL`` Gaussian
        models at smoke scale, ``POOL_DRAWS`` otherwise), from the results cache when it holds it."""
        return analyse(name, SMOKE_POOL if self.scale == "smoke" else POOL_DRAWS, say)

    def random_draws(self) -> pd.DataFrame:
        """The pretrained claims' null, per model: ``NULL_DRAWS`` model-level statistics of Gaussian weights
        of its shapes (``pretrained.NULL_COLUMNS``: mean filtering energy, shares of heads with each
        property), resampled from the key groups of its pool of Gaussian models (computed with
        :meth:`head_analysis`)."""
        frames = [
            resampled_null(pd.DataFrame(self._pretrained(m, say=False)["pool"]), NULL_DRAWS).assign(model=m)
            for m in self.models
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["model", "draw"])

    def pretrained_offsets(self) -> pd.DataFrame:
        """Every RoPE head's statistics at the offsets other than 0 (``pretrained.OFFSETS``), with its
        ``model`` and ``offset`` (computed with :meth:`head_analysis`; none for position-free models)."""
        frames = [
            pd.DataFrame(self._pretrained(m, say=False)["offsets"]).assign(model=m) for m in self.models
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["model", "offset"])

    offset_table = staticmethod(tables.offset_table)

    def head_analysis(self, runs: Runs) -> pd.DataFrame:
        """Every head's routing/filtering statistics (``attnlab.papers.sd_routing.routing.form_stats``) of
        the pretrained models (as each computes them, at offset 0: gains folded in) and of this run's trained
        models (model-space forms; an S-D head's is Wq^T L Wk), each beside its random baseline (``weights``
        "random init"): Gaussian weights of the same shapes for a pretrained model (seed 0; with its
        ``parameters``), a trained model's own initialisation (same config, same seed) for ours."""
        frames = []
        for name in self.models:
            result = self._pretrained(name)
            frames += [
                pd.DataFrame(result[key]).assign(weights=weights, parameters=int(result["parameters"]))
                .assign(model=name, source="pretrained", seed=0)
                for key, weights in (("heads", "trained"), ("random", "random init"))
            ]  # fmt: skip
        for (size, variant, seed), run in runs.items():
            label = f"ours: {LABELS[variant]} {size}"
            with torch.random.fork_rng():
                torch.manual_seed(seed)
                init = GPT(run.model.cfg)
            for weights, model in (("trained", run.model), ("random init", init)):
                frames.append(
                    model_heads(model).assign(model=label, source=variant, seed=seed, weights=weights)
                )
        return pd.concat(frames, ignore_index=True)

    head_summary = staticmethod(tables.head_summary)

    # Spectral cascade and scale trend -----------------------------------------------------------------

    def cascade(self, runs: Runs) -> pd.DataFrame:
        """Each layer's routing matrix under every rank measure (``MEASURE_COLUMNS``) and the dimensions
        holding ``ROUTING_ENERGY_SHARE`` of its energy, averaged over heads: S (head space) for the S-D
        variants, the antisymmetric part R of the model-space form for SA. One row per (size, variant, seed,
        layer)."""
        rows = []
        for (size, variant, seed), run in runs.items():
            sd = variant in SD_VARIANTS
            share = ROUTING_ENERGY_SHARE
            heads = sd_heads(run.model, share) if sd else model_heads(run.model, share)
            per_layer = heads.groupby("layer")[[*MEASURE_COLUMNS, "routing_dims"]].mean()
            n = run.model.cfg.n_layer
            for layer, values in per_layer.iterrows():
                rows.append({
                    "size": size, "variant": variant, "seed": seed, "layer": layer,
                    "depth": layer / max(1, n - 1), **values.to_dict(),
                    "head_dim": run.model.cfg.layer_head_dims[layer], "params": _count(run.model.cfg),
                })  # fmt: skip
        return pd.DataFrame(rows)

    def cascade_baseline(self) -> pd.DataFrame:
        """The random baseline of the cascade, per (variant, size): for the S-D variants, random antisymmetric
        matrices of the head dim (``random_routing``); for SA, R of Gaussian query and key weights of the
        model's shapes (``random_heads``). Head means of every rank measure."""
        rows = []
        for size in self.sizes:
            m = self.preset.sizes[size].model
            assert isinstance(m.head_dim, int)  # the preset's sizes: one head dim for every layer
            sa_shapes = [((m.n_head, m.head_dim, m.d_model), (m.kv_heads, m.head_dim, m.d_model))] * m.n_layer
            for variant in VARIANTS:
                if variant in SD_VARIANTS:
                    frame = random_routing(m.head_dim, RANDOM_SAMPLES, 0, ROUTING_ENERGY_SHARE)
                else:
                    frame = random_heads(sa_shapes, seed=0)
                rows.append({"variant": variant, "size": size, "head_dim": m.head_dim,
                             **frame[list(MEASURE_COLUMNS)].mean().to_dict()})  # fmt: skip
        return pd.DataFrame(rows)

    cascade_table = staticmethod(tables.cascade_table)
    scale_trend = staticmethod(tables.scale_trend)

    def drift(self, runs: Runs) -> pd.DataFrame:
        """How far each S-D layer's D moved from its initialisation (D = 1): per (size, variant, seed, layer),
        head means of D's mean, its coefficient of variation over the head's dimensions, and its
        root-mean-square distance from 1; beside them the share of L's energy held by S."""
        rows = []
        for (size, variant, seed), run in runs.items():
            if variant not in SD_VARIANTS:
                continue
            per_layer = sd_heads(run.model).groupby("layer")[["d_mean", "d_cv", "d_drift", "routing_energy"]]
            for layer, values in per_layer.mean().iterrows():
                rows.append({"size": size, "variant": variant, "seed": seed, "layer": layer,
                             **values.to_dict()})  # fmt: skip
        return pd.DataFrame(rows)

    # Filtering collapse and inversion -----------------------------------------------------------------

    def collapse(self, runs: Runs) -> pd.DataFrame:
        """Perplexity after truncating the filtering part to one scalar per head and after removing the
        routing part. The same model-space edits for every variant (``space`` "model"): the head's form W =
        Wq^T L Wk split into R + F, F -> (tr F / r) P or R = 0 (``sa_truncated_forms``); and for the S-D
        variants their own head-space edits as separate rows (``space`` "head"): D -> mean(D) I or S = 0
        (``sd_truncated``)."""
        rows = []
        for (size, variant, seed), run in runs.items():
            model = run.model
            base = math.exp(self._loss(model, size))
            part: Literal["filtering", "routing"]
            for part, name in (("filtering", "filtering to a scalar"), ("routing", "routing removed")):
                with override_forms(model, sa_truncated_forms(model, part)):
                    edits = [("model", math.exp(self._loss(model, size)))]
                if variant in SD_VARIANTS:
                    edits.append(("head", math.exp(self._loss(sd_truncated(model, part), size))))
                for space, ppl in edits:
                    rows.append({
                        "size": size, "variant": variant, "seed": seed, "space": space, "intervention": name,
                        "ppl": ppl, "base ppl": base, "ppl change %": _pct(ppl, base),
                    })  # fmt: skip
        return pd.DataFrame(rows)

    def planned_runs(self) -> dict[str, PlannedRun]:
        """Every training run of the notebook, for :mod:`attnlab.runner.plan`. The reallocated model's head
        dims (and its controls', of the same total) come from measured ranks and are at most the uniform
        ones: each is counted at the uniform model's cost."""
        specs = {
            f"{size} {variant} seed {seed}": self.spec(size, variant, seed)
            for size in self.sizes
            for seed in self.seeds
            for variant in VARIANTS
        }
        specs |= {
            f"{self.probe} {variant} first {k} linear seed {seed}": self.spec(self.probe, variant, seed, k)
            for variant in PROBE_VARIANTS
            for seed in self.seeds
            for k in self.preset.retrain_linear
        }
        runs = {label: PlannedRun.from_spec(spec) for label, spec in specs.items()}
        for variant in REALLOCATED:
            for seed in self.seeds:
                uniform = PlannedRun.from_spec(self.spec(self.probe, variant, seed))
                for name in ("reallocated", *REALLOC_CONTROLS):
                    runs[f"{self.probe} {variant} {name} seed {seed}"] = replace(
                        uniform, key=f"{uniform.key} {name}"
                    )
        return runs

    # Linearisation ------------------------------------------------------------------------------------

    def linearisation(self, runs: Runs) -> pd.DataFrame:
        """Perplexity with the first k layers as ELU+1 linear attention at the probe size, for SA and S-D:
        post hoc (the trained weights, k = 0..n) and retrained from scratch (the preset's k). Changes are
        relative to the same variant's trained softmax model (k = 0). Variants: ``PROBE_VARIANTS``."""
        size = self.probe
        n = self.preset.sizes[size].model.n_layer
        rows = []
        for variant in PROBE_VARIANTS:
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

    def realloc_dims(self, cascade: pd.DataFrame, variant: str) -> dict[str, tuple[int, ...]] | None:
        """The head dims of the reallocation probe for ``variant`` (None without its cascade rows): the
        measured allocation (``"reallocated"``: the dimensions holding ``ROUTING_ENERGY_SHARE`` of ||S||_F^2,
        head and seed mean; ``head_dims_from_dims``) and its two controls of the same total head dims
        (``REALLOC_CONTROLS``): spread evenly (``same_total_uniform``) and the measured dims shuffled across
        layers (``shuffled_dims``, seed 0)."""
        m = self.preset.sizes[self.probe].model
        assert isinstance(m.head_dim, int)  # the preset's sizes: one head dim for every layer
        sub = cascade[(cascade["size"] == self.probe) & (cascade["variant"] == variant)]
        if sub.empty:
            return None
        dims = head_dims_from_dims(
            sub.groupby("layer")["routing_dims"].mean().tolist(), base=m.head_dim,
            minimum=self.preset.min_head_dim,
        )  # fmt: skip
        return {"reallocated": dims, REALLOC_CONTROLS[0]: same_total_uniform(dims),
                REALLOC_CONTROLS[1]: shuffled_dims(dims, seed=0)}  # fmt: skip

    def _realloc_run(self, variant: str, seed: int, dims: tuple[int, ...], what: str) -> TrainResult | None:
        """The probe model of ``variant`` with per-layer head ``dims``, trained (cached); dims equal to the
        uniform ones name the uniform run, which the cache then loads."""
        m = self.preset.sizes[self.probe].model
        same = dims == m.layer_head_dims
        label = f"{self.probe} {LABELS[variant]} {what} head dims {list(dims)} seed {seed}"
        return self._train(self.spec(self.probe, variant, seed, head_dim=None if same else dims), label)

    def reallocation(self, runs: Runs, cascade: pd.DataFrame) -> pd.DataFrame:
        """Head dims set per layer from the probe S-D models' routing dimensions (``realloc_dims``),
        retrained, for S-D and S-D with a shared projection, beside two controls with the same total head
        dims retrained with the same seeds (spread evenly; the measured dims shuffled across layers):
        attention parameters and perplexity beside the uniform model of the same variant and seed. ``model``:
        "uniform", "reallocated" or a control (``REALLOC_CONTROLS``)."""
        size = self.probe
        m = self.preset.sizes[size].model
        rows = []
        for variant in REALLOCATED:
            allocations = self.realloc_dims(cascade, variant)
            if allocations is None:
                continue
            for seed in self.seeds:
                uniform = runs.get((size, variant, seed))
                trained = {
                    name: self._realloc_run(variant, seed, dims, name) for name, dims in allocations.items()
                }
                if uniform is None:
                    continue
                base = {"attn": _count(uniform.model.cfg, attention_only=True),
                        "ppl": math.exp(self._loss(uniform.model, size))}  # fmt: skip
                models = [("uniform", uniform, m.layer_head_dims)]
                models += [(name, run, allocations[name]) for name, run in trained.items() if run is not None]
                for name, run, hd in models:
                    attn, ppl = (
                        _count(run.model.cfg, attention_only=True),
                        math.exp(self._loss(run.model, size)),
                    )
                    rows.append({
                        "variant": variant, "model": name, "seed": seed, "head dims": " ".join(map(str, hd)),
                        "attn params": attn, "ppl": ppl, "attn params saved %": -_pct(attn, base["attn"]),
                        "ppl change %": _pct(ppl, base["ppl"]),
                    })  # fmt: skip
        return pd.DataFrame(rows)

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
                kinds = ("sa", "sd", "sd-shared", "linear")
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

    def pretrained_scale(self, heads: pd.DataFrame, draws: pd.DataFrame | None = None) -> pd.DataFrame:
        """Each pretrained claim judged on each model alone, against its parameter count: one row per (claim,
        model) (:func:`attnlab.papers.sd_routing.claims.pretrained_scale_table`; ``heads``: this run's
        :meth:`head_analysis`, ``draws``: its :meth:`random_draws` when not given)."""
        from attnlab.papers.sd_routing import claims as sd_claims  # judged after computing

        draws = self.random_draws() if draws is None else draws
        return sd_claims.pretrained_scale_table(heads, draws, self.models, self.scale)

    def claims(self, evidence: sd_claims.Evidence) -> list[Claim]:
        """Every claim of docs/papers/sd-routing.md (:func:`attnlab.papers.sd_routing.claims.claims`) from
        this run's measurements, passed by name (``Evidence``) and completed with the run's settings, each S-D
        model's largest real part of L's eigenvalues, the diverged runs and (unless given) the random-weight
        draws and the RoPE offsets."""
        from attnlab.papers.sd_routing import claims as sd_claims  # judged after computing

        if not isinstance(evidence, sd_claims.Evidence):
            raise TypeError(f"claims() takes one sd_routing.claims.Evidence; got {type(evidence).__name__}")
        runs, sd = evidence.runs, SD_VARIANTS
        largest = tuple(float(sd_heads(r.model)["max_real"].max()) for k, r in runs.items() if k[1] in sd)
        probe = self.preset.sizes[self.probe].model
        assert isinstance(probe.head_dim, int)  # the preset's sizes: one head dim for every layer
        return sd_claims.claims(replace(
            evidence, scale=self.scale, sizes=self.sizes, models=self.models, probe=self.probe,
            probe_layers=probe.n_layer, min_head_dim=self.preset.min_head_dim, head_dim=probe.head_dim,
            sd_max_real=largest, diverged=tuple(self.diverged(dict(runs))),
            draws=self.random_draws() if evidence.draws is None else evidence.draws,
            offsets=self.pretrained_offsets() if evidence.offsets is None else evidence.offsets,
        ))  # fmt: skip


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    sizes: list[str] | tuple[str, ...] = (),
    models: list[str] | tuple[str, ...] = (),
    corpus: str = "",
    steps: int = 0,
    retrain_linear: list[int] | tuple[int, ...] = (),
) -> SDExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``models``: the
    pretrained models to analyse ("smollm2", "minilm", a Hugging Face folder or a cached hub name); empty: the
    preset's. ``corpus``: a corpus name or a folder of token shards (``python -m attnlab.data.shards``; a
    relative folder is looked up in the data folder too); empty: the preset's, OpenWebText in GPT-2 tokens at
    paper scale. ``steps``: training steps of every size, warmup and evaluations scaled in proportion; 0: the
    preset's. ``retrain_linear``: the numbers k of leading ELU+1 layers of the models retrained at the probe
    size (1 to its layer count); empty: the preset's."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, str) and m for m in models):
        raise ParameterError(f"models must be a list of model names or folders; got {models!r}")
    steps = check_count("steps", steps)
    preset = replace(
        preset,
        corpus=corpus_parameter(corpus, preset.corpus),
        sizes={
            name: replace(size, train=with_steps(size.train, steps or size.train.steps))
            for name, size in preset.sizes.items()
        },
    )
    exp = SDExperiment(
        scale=scale,
        preset=preset,
        seeds=check_seeds(seeds, preset.seeds),
        sizes=check_subset("sizes", sizes, preset.sizes),
        models=tuple(models) or preset.models,
        device=check_device(device),
    )
    n = preset.sizes[exp.probe].model.n_layer
    ks = retrain_linear
    if (
        not isinstance(ks, (list, tuple))
        or len(set(ks)) != len(ks)
        or not all(isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= n for k in ks)
    ):
        raise ParameterError(
            f"retrain_linear must be distinct layer counts from 1 to {n} (the {n} layers of probe size "
            f"{exp.probe}); got {retrain_linear!r}"
        )
    return replace(exp, preset=replace(preset, retrain_linear=tuple(sorted(ks)) or preset.retrain_linear))
