"""The routing and filtering structure of attention (S-D attention, arXiv 2605.18826): the trained variants,
the scale presets of its notebook and the paper's reference numbers."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.model import GPTConfig
from attnlab.training.trainer import TrainConfig

#: Trained variants: attention kind and whether the model has LayerNorms.
VARIANTS: dict[str, tuple[str, bool]] = {"sa": ("sa", True), "sd": ("sd", True), "sd-noln": ("sd", False)}
LABELS = {"sa": "standard (SA)", "sd": "S-D", "sd-noln": "S-D, no LayerNorm"}

#: "Minimum rank" (our definition): a layer whose routing matrix has a head-mean effective rank <= 2.5, i.e.
#: one rotation plane (effective rank 2) with at most half a plane's worth of spread into others.
MIN_RANK = 2.5

GPT2_VOCAB = 50257

# The paper's numbers (docs/papers/sd-routing.md, "Claims and the paper's numbers").
PAPER_HEADS = "1,776 heads of GPT-2 variants, BERT-base, Pythia-410M"
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
