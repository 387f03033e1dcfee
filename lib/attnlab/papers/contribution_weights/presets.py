"""Contribution weights (arXiv 2606.07604): the paper's measures, text sets and downstream tasks, and the
scale presets of its notebook."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.metrics import IMPORTANCE_MEASURES
from attnlab.model import GPTConfig
from attnlab.papers.contribution_weights.faithfulness import SCOPES
from attnlab.training.trainer import TrainConfig

PAPER = "contribution_weights"
MEASURES = tuple(IMPORTANCE_MEASURES)  # least faithful first, the paper's hierarchy
MEASURE_LABELS = {
    "raw": "raw attention",
    "value_weighted": "value-weighted",
    "output_normalised": "value-weighted, output-normalised",
    "contribution": "contribution weights",
}
TEXT_SETS = {
    "brown": "Brown corpus, held-out split (stand-in for FineWeb-Edu)",
    "shakespeare": "Shakespeare, held-out split",
    "math": "MathQA word problems with answers, BIG-bench (stand-in for GSM8K)",
}
DOWNSTREAM = {"winowhy": "Winogrande", "strategyqa": "BoolQ"}  # our stand-in -> the paper's set


@dataclass(frozen=True)
class OwnModel:
    """This project's GPT, trained on ``corpus`` and analysed beside the pretrained model."""

    model: GPTConfig
    train: TrainConfig
    windows: int  # held-out windows of ``model.block_size`` bytes for its faithfulness curves
    corpus: str = "shakespeare"


@dataclass(frozen=True)
class Preset:
    model: str  # "smollm2" (the offline artifact), a hub name in the local cache, or a folder
    dtype: str  # float32 | bfloat16
    window: int  # tokens per text window
    windows: int  # windows per text set
    batch_size: int
    fractions: tuple[float, ...]  # fractions of value terms zeroed per query
    scopes: tuple[
        str, ...
    ]  # ranking scopes of the faithfulness curves (attnlab.papers.contribution_weights.faithfulness.SCOPES)
    task_limit: int  # multiple-choice items per downstream task
    task_fraction: float  # the fraction zeroed for the downstream accuracies
    fig1_tokens: int  # length of the Fig. 1 passage
    own: OwnModel
    bench_lengths: tuple[int, ...]  # sequence lengths of the cost benchmark
    bench_naive_max_gb: float  # the naive implementation runs only where its terms tensor fits this
    bench_repeats: int


def _own(n_layer: int, d_model: int, steps: int, seq: int, windows: int) -> OwnModel:
    model = GPTConfig(
        n_layer=n_layer, d_model=d_model, n_head=4, head_dim=d_model // 4, block_size=seq, pos="rope"
    )
    train = TrainConfig(
        steps=steps, batch_size=32, seq_len=seq, lr=2e-3, warmup_steps=steps // 10, eval_every=steps // 5,
        eval_batches=4,
    )  # fmt: skip
    return OwnModel(model, train, windows)


FRACTIONS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)

PRESETS: dict[str, Preset] = {
    # About a minute on a CPU (most of it loading SmolLM2).
    "smoke": Preset(
        model="smollm2", dtype="float32", window=24, windows=2, batch_size=2, fractions=(0.0, 0.3, 0.6),
        scopes=SCOPES,
        task_limit=4, task_fraction=0.3, fig1_tokens=16, own=_own(2, 32, 40, 32, 2),
        bench_lengths=(32, 64), bench_naive_max_gb=0.5, bench_repeats=2,
    ),
    # A 2-core laptop, under 30 minutes.
    "cpu": Preset(
        model="smollm2", dtype="float32", window=128, windows=8, batch_size=8, fractions=FRACTIONS,
        scopes=SCOPES,
        task_limit=100, task_fraction=0.3, fig1_tokens=32, own=_own(4, 128, 600, 128, 32),
        bench_lengths=(512, 1024, 2048), bench_naive_max_gb=8.0, bench_repeats=3,
    ),
    # One GPU: longer windows, many more of them, the full downstream sets' first thousand items.
    "gpu": Preset(
        model="smollm2", dtype="bfloat16", window=512, windows=64, batch_size=16, fractions=FRACTIONS,
        scopes=SCOPES,
        task_limit=1000, task_fraction=0.3, fig1_tokens=32, own=_own(6, 384, 5000, 512, 256),
        bench_lengths=(512, 1024, 2048), bench_naive_max_gb=40.0, bench_repeats=10,
    ),
    # The paper's protocol on a 7-8B model (pass its name or folder as ``model``; it needs the weights).
    "paper": Preset(
        model="mistralai/Mistral-7B-v0.1", dtype="bfloat16", window=1024, windows=256, batch_size=4,
        fractions=FRACTIONS, scopes=SCOPES, task_limit=2000, task_fraction=0.3, fig1_tokens=32,
        own=_own(6, 384, 5000, 512, 256), bench_lengths=(512, 1024, 2048, 4096), bench_naive_max_gb=40.0,
        bench_repeats=10,
    ),
}  # fmt: skip
