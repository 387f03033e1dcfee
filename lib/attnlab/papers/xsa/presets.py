"""Exclusive Self Attention (XSA, arXiv 2603.09078): the scale presets of its notebook and the paper's own
configurations and numbers (Tables 1 and 2)."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.model import GPTConfig
from attnlab.training.trainer import TrainConfig


def _gpt(
    n_layer: int, d_model: int, n_head: int, head_dim: int, block_size: int, vocab_size: int = 256
) -> GPTConfig:
    """The paper's architecture: RoPE, LayerNorm after the embedding, head dim set independently."""
    return GPTConfig(
        vocab_size=vocab_size, n_layer=n_layer, d_model=d_model, n_head=n_head, head_dim=head_dim,
        block_size=block_size, pos="rope", embed_norm=True,
    )  # fmt: skip


def _train(steps: int, batch: int, seq: int, lr: float, warmup: int, evals: int, **kw) -> TrainConfig:
    return TrainConfig(
        steps=steps, batch_size=batch, seq_len=seq, lr=lr, warmup_steps=warmup,
        eval_every=max(1, steps // evals), **kw,
    )  # fmt: skip


@dataclass(frozen=True)
class Size:
    model: GPTConfig  # the SA configuration; XSA differs only in ``attn``
    train: TrainConfig


@dataclass(frozen=True)
class Sweep:
    """The shared base of Figs. 4-6: one model trained at several learning rates (Fig. 4), sequence lengths
    with tokens per batch held at ``train.batch_size * train.seq_len`` (Fig. 5), and sink counts (Fig. 6)."""

    size: Size
    lrs: tuple[float, ...]
    seq_lens: tuple[int, ...]
    sinks: tuple[int, ...]


@dataclass(frozen=True)
class Bench:
    """Fig. 2: one attention + FFN block timed across widths and sequence lengths."""

    d_models: tuple[int, ...]
    seq_lens: tuple[int, ...]
    batch_size: int
    head_dim: int
    repeats: int


@dataclass(frozen=True)
class Preset:
    sizes: dict[str, Size]
    seeds: tuple[int, ...]
    diag_sequences: int  # validation sequences for Fig. 1
    sweep: Sweep
    bench: Bench
    task_limit: int | None  # examples per zero-shot task (Table 2); None = all
    corpus: str = (
        "shakespeare"  # a corpus name, or a folder of token shards (``python -m attnlab.data.shards``)
    )
    micro_tokens: int | None = None  # tokens per forward pass per process (gradient accumulation); None = all


# The GPU presets train in bfloat16 autocast with a compiled model, as the paper's runs would.
GPU = {"precision": "bf16", "compile": True}

# The paper's Table 1 (LR from its grid search; 200K steps of 256 x 2048 tokens, GPT-2 vocabulary).
PAPER_TABLE1 = {
    "0.7B": Size(_gpt(24, 1536, 6, 256, 2048, 50257), _train(200_000, 256, 2048, 5e-4, 2000, 400, **GPU)),
    "1.3B": Size(_gpt(24, 2048, 24, 128, 2048, 50257), _train(200_000, 256, 2048, 4e-4, 2000, 400, **GPU)),
    "2.7B": Size(_gpt(32, 2560, 24, 128, 2048, 50257), _train(200_000, 256, 2048, 3e-4, 2000, 400, **GPU)),
}

# The paper's Table 2: zero-shot accuracy (%), baseline -> XSA, averaged over its eight tasks.
PAPER_TABLE2_AVG = {"0.7B": (53.22, 53.48), "1.3B": (56.16, 57.19), "2.7B": (58.06, 59.42)}

PRESETS: dict[str, Preset] = {
    # A minute on a CPU, to exercise every cell.
    "smoke": Preset(
        sizes={
            "2L-32d": Size(_gpt(2, 32, 2, 16, 64), _train(60, 16, 64, 3e-3, 10, 6, eval_batches=2)),
            "2L-64d": Size(_gpt(2, 64, 4, 16, 64), _train(60, 16, 64, 3e-3, 10, 6, eval_batches=2)),
        },
        seeds=(0,),
        diag_sequences=8,
        sweep=Sweep(
            Size(_gpt(2, 32, 2, 16, 64), _train(30, 16, 32, 3e-3, 5, 3, eval_batches=2)),
            lrs=(1.5e-3, 3e-3), seq_lens=(16, 32), sinks=(0, 1),
        ),
        bench=Bench(d_models=(32,), seq_lens=(32, 64), batch_size=4, head_dim=16, repeats=3),
        task_limit=40,
    ),
    # A 2-core laptop, under 30 minutes.
    "cpu": Preset(
        sizes={
            "2L-64d": Size(_gpt(2, 64, 4, 16, 128), _train(1000, 32, 128, 3e-3, 100, 25)),
            "4L-128d": Size(_gpt(4, 128, 4, 32, 128), _train(800, 32, 128, 2e-3, 80, 20)),
        },
        seeds=(0, 1),
        diag_sequences=64,
        sweep=Sweep(
            Size(_gpt(2, 64, 4, 16, 256), _train(300, 32, 128, 3e-3, 30, 6)),
            lrs=(1e-3, 2e-3, 4e-3, 8e-3), seq_lens=(32, 64, 128, 256), sinks=(0, 1, 4),
        ),
        bench=Bench(
            d_models=(64, 128, 256), seq_lens=(64, 128, 256, 512), batch_size=8, head_dim=32, repeats=10
        ),
        task_limit=1000,  # items per task (the first ones): all of MathQA's 7,688 would take 4 more minutes
    ),
    # One large GPU, about an hour.
    "gpu": Preset(
        sizes={
            "6L-384d": Size(_gpt(6, 384, 6, 64, 512), _train(5000, 64, 512, 1e-3, 200, 50, **GPU)),
            "12L-768d": Size(_gpt(12, 768, 12, 64, 512), _train(5000, 64, 512, 6e-4, 200, 50, **GPU)),
        },
        seeds=(0, 1, 2),
        diag_sequences=256,
        sweep=Sweep(
            Size(_gpt(6, 384, 6, 64, 1024), _train(2000, 64, 512, 1e-3, 100, 20, **GPU)),
            lrs=(3e-4, 6e-4, 1e-3, 2e-3), seq_lens=(128, 256, 512, 1024), sinks=(0, 1, 4),
        ),
        bench=Bench(
            d_models=(512, 1024, 2048), seq_lens=(512, 1024, 2048, 4096), batch_size=8, head_dim=64,
            repeats=20,
        ),
        task_limit=None,
    ),
    # The paper's Table 1 configurations, schedule and sweeps, on FineWeb in GPT-2 tokens (shards built once
    # with python -m attnlab.data.shards; see check_corpus).
    "paper": Preset(
        sizes=PAPER_TABLE1,
        seeds=(0,),
        diag_sequences=1024,
        sweep=Sweep(
            PAPER_TABLE1["0.7B"],
            lrs=(1e-4, 2e-4, 4e-4, 6e-4), seq_lens=(512, 1024, 2048, 4096, 8192, 16384), sinks=(0, 1, 4),
        ),
        bench=Bench(
            d_models=(1024, 2048, 4096), seq_lens=(1024, 2048, 4096, 8192), batch_size=32,
            head_dim=128, repeats=20,
        ),
        task_limit=None,
        corpus="shards/fineweb-gpt2",
        micro_tokens=8 * 2048,  # 256 x 2048 tokens per step do not fit one pass on one GPU; 16K-token
        # rows of the sequence-length sweep pass one at a time
    ),
}  # fmt: skip
