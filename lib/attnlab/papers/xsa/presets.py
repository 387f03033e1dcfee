"""Exclusive Self Attention (XSA, arXiv 2603.09078): the scale presets of its notebook and the paper's own
configurations and numbers (Tables 1 and 2)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from attnlab.model import GPTConfig
from attnlab.training.trainer import TrainConfig

KINDS = ("sa", "xsa")
CONTROLS = ("xsa-random", "xsa-prev")  # XSA's controls (not in the paper): other rank-1 projections
SUBWORD, GROUPED = "subword", "grouped-query"  # the variants' settings (``Variants``)


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
    """One model of Fig. 3. ``lrs``: its learning-rate grid (Fig. 4), searched for SA as in the paper and
    extended past an edge that wins (``Preset.lr_extensions``); empty: train at ``train.lr`` (the paper's
    Table 1 rates). The grid trains SA and XSA with the first ``grid_seeds`` seeds."""

    model: GPTConfig  # the SA configuration; XSA and its controls differ only in ``attn``
    train: TrainConfig
    lrs: tuple[float, ...] = ()
    grid_seeds: int = 1


@dataclass(frozen=True)
class Sweep:
    """Figs. 5-6: the Fig. 3 size named ``size``, at its best SA learning rate, trained at several sequence
    lengths with tokens per batch held at ``train.batch_size * train.seq_len`` (Fig. 5) and with learned
    sink counts (Fig. 6), with the first ``seeds`` seeds. Its run at the base length without sinks is the
    Fig. 3 run of that seed (one cached run)."""

    size: str
    seq_lens: tuple[int, ...]
    sinks: tuple[int, ...]
    seeds: int


@dataclass(frozen=True)
class Variants:
    """XSA beyond the paper's setting (not in it), at the Fig. 3 size ``size`` and its best SA learning rate,
    with the first ``seeds`` seeds:

    - **subword tokens**: SA, XSA and both controls trained on the same corpus in the subword tokens of the
      pinned model ``tokenizer`` (``attnlab.hf.PRETRAINED``; :mod:`attnlab.papers.xsa.subword`), for
      ``subword_steps`` steps of ``subword_batch`` sequences of the size's context (warm-up and evaluations
      scaled with the steps);
    - **grouped-query attention**: SA and XSA with ``n_kv_head`` value heads shared by the query heads (Alg. 1
      normalises each shared value once and removes its direction from every query head of its group).
    """

    size: str
    tokenizer: str
    subword_steps: int
    subword_batch: int
    n_kv_head: int
    seeds: int


@dataclass(frozen=True)
class Bench:
    """Fig. 2: one attention + FFN block timed across widths and sequence lengths."""

    d_models: tuple[int, ...]
    seq_lens: tuple[int, ...]
    batch_size: int
    head_dim: int
    repeats: int


# The paper's Table 2: its eight zero-shot tasks (lm-eval-harness), by their names here: ``lambada`` is scored
# by ``attnlab.papers.xsa.zero_shot.lambada_hits``, the others are ``attnlab.data.tasks.TASKS``.
TABLE2_TASKS = ("arc_easy", "boolq", "hellaswag", "lambada", "openbookqa", "piqa", "social_iqa", "winogrande")


@dataclass(frozen=True)
class Preset:
    sizes: dict[str, Size]
    seeds: tuple[int, ...]
    diag_sequences: int  # validation sequences for Figs. 1 and 6 (attention mass)
    sweep: Sweep
    bench: Bench
    task_limit: int | None  # examples per zero-shot task (Table 2), a fixed random sample; None = all
    corpus: str = (
        "shakespeare"  # a corpus name, or a folder of token shards (``python -m attnlab.data.shards``)
    )
    micro_tokens: int | None = None  # tokens per forward pass per process (gradient accumulation); None = all
    control_sizes: tuple[str, ...] = ()  # sizes where XSA's controls (xsa-random, xsa-prev) train every seed
    lr_extensions: int = 2  # grid points a size's LR search may add beyond an edge that wins
    tasks: tuple[str, ...] = TABLE2_TASKS  # Table 2's zero-shot tasks, the paper's eight at every scale
    variants: Variants | None = None  # subword tokens and grouped-query attention (not in the paper)


# The GPU presets train in bfloat16 autocast with a compiled model, as the paper's runs would.
GPU = {"precision": "bf16", "compile": True}

# The paper's Table 1 (LR from its grid search; 200K steps of 256 x 2048 tokens, GPT-2 vocabulary).
PAPER_TABLE1 = {
    "0.7B": Size(_gpt(24, 1536, 6, 256, 2048, 50257), _train(200_000, 256, 2048, 5e-4, 2000, 400, **GPU)),
    "1.3B": Size(_gpt(24, 2048, 24, 128, 2048, 50257), _train(200_000, 256, 2048, 4e-4, 2000, 400, **GPU)),
    "2.7B": Size(_gpt(32, 2560, 24, 128, 2048, 50257), _train(200_000, 256, 2048, 3e-4, 2000, 400, **GPU)),
}

# The paper's Table 2 per model and task: zero-shot accuracy (%), baseline (SA) -> XSA.
PAPER_TABLE2 = {
    "0.7B": {
        "arc_easy": (51.26, 52.69), "boolq": (61.07, 61.19), "hellaswag": (55.68, 56.29),
        "lambada": (52.82, 54.07), "openbookqa": (35.00, 32.20), "piqa": (74.05, 73.78),
        "social_iqa": (40.02, 41.45), "winogrande": (55.88, 56.20),
    },
    "1.3B": {
        "arc_easy": (56.19, 58.84), "boolq": (65.47, 62.29), "hellaswag": (60.69, 62.41),
        "lambada": (56.24, 58.57), "openbookqa": (34.60, 36.00), "piqa": (75.90, 76.61),
        "social_iqa": (41.40, 42.84), "winogrande": (58.80, 59.98),
    },
    "2.7B": {
        "arc_easy": (58.59, 60.65), "boolq": (60.98, 64.86), "hellaswag": (66.20, 67.40),
        "lambada": (60.18, 62.04), "openbookqa": (37.00, 38.40), "piqa": (76.61, 77.80),
        "social_iqa": (42.94, 41.45), "winogrande": (61.96, 62.75),
    },
}  # fmt: skip

# The paper's Table 2: zero-shot accuracy (%), baseline -> XSA, averaged over its eight tasks (as printed).
PAPER_TABLE2_AVG = {"0.7B": (53.22, 53.48), "1.3B": (56.16, 57.19), "2.7B": (58.06, 59.42)}


def paper_gains(task: str) -> dict[str, float]:
    """The paper's gain on ``task`` per model, XSA - baseline accuracy (points); empty for a task not in its
    Table 2."""
    return {size: round(xsa - sa, 2) for size, (sa, xsa) in _paper_rows(task)}


def paper_task_text(task: str) -> str:
    """The paper's Table 2 numbers of ``task``, "0.7B 51.26 -> 52.69 (+1.43), ..." (baseline -> XSA, %)."""
    rows = _paper_rows(task)
    if not rows:
        return f"{task} is not a task of the paper's Table 2"
    return ", ".join(f"{size} {sa:.2f} -> {xsa:.2f} ({xsa - sa:+.2f})" for size, (sa, xsa) in rows)


def _paper_rows(task: str) -> list[tuple[str, tuple[float, float]]]:
    return [(size, by_task[task]) for size, by_task in PAPER_TABLE2.items() if task in by_task]


# The gpu scale's corpus: FineWeb in byte tokens (the gpu models read bytes, as the smaller scales do), built
# once with this command; 1e9 bytes is more than any gpu run trains on (164M), so no run repeats its data. The
# offline corpora are 4-6M bytes each: dozens of epochs per run (``-p corpus=shakespeare``; check_data says
# how many).
GPU_CORPUS = "shards/fineweb-bytes"
GPU_CORPUS_COMMAND = (
    "python -m attnlab.data.shards fineweb --out data/shards/fineweb-bytes --tokenizer byte --max-tokens 1e9"
)

PRESETS: dict[str, Preset] = {
    # Seconds on a CPU, to exercise every cell.
    "smoke": Preset(
        sizes={
            "1L-16d": Size(_gpt(1, 16, 2, 8, 32), _train(30, 16, 32, 3e-3, 5, 6, eval_batches=2)),
            "2L-32d": Size(
                _gpt(2, 32, 2, 16, 64), _train(30, 16, 32, 3e-3, 5, 6, eval_batches=2), lrs=(1.5e-3, 3e-3)
            ),
            "3L-32d": Size(_gpt(3, 32, 2, 16, 32), _train(30, 16, 32, 3e-3, 5, 6, eval_batches=2)),
        },
        seeds=(0, 1),
        diag_sequences=8,
        sweep=Sweep("2L-32d", seq_lens=(16, 32), sinks=(0, 1), seeds=1),
        bench=Bench(d_models=(32,), seq_lens=(32, 64), batch_size=4, head_dim=16, repeats=3),
        task_limit=40,
        control_sizes=("2L-32d",),
        lr_extensions=0,
        variants=Variants("2L-32d", "smollm2", subword_steps=30, subword_batch=8, n_kv_head=1, seeds=2),
    ),
    # A 2-core laptop: a 2-layer model that carries the sweeps, and an 8-layer model for Fig. 1's depth
    # trend, each with five seeds, both controls and a learning-rate grid of three seeds at every rate (with
    # one seed, 8L-64d's Fig. 4 slope had no interval); 0.8-1M tokens a run (docs/papers/xsa.md, "Budget").
    # Both sizes search the same four rates: 8L-64d's earlier grid (1e-3 to 4e-3) had to be extended twice
    # to reach its optimum (8e-3, as 2L-64d's), ten runs more than a grid that contains it. A narrower
    # 2-layer model (2L-32d, a quarter of 2L-64d's parameters and 1/16 of 8L-64d's) gives the gain's trend
    # over size three points spanning 16x; narrower models take larger rates, so its grid sits a step
    # higher. The variants (subword tokens, grouped-query attention) train at 2L-64d.
    "cpu": Preset(
        sizes={
            "2L-32d": Size(
                _gpt(2, 32, 2, 16, 256), _train(500, 16, 128, 8e-3, 50, 20, eval_batches=6),
                lrs=(4e-3, 8e-3, 1.6e-2, 3.2e-2), grid_seeds=3,
            ),
            "2L-64d": Size(
                _gpt(2, 64, 4, 16, 256), _train(500, 16, 128, 4e-3, 50, 20, eval_batches=6),
                lrs=(2e-3, 4e-3, 8e-3, 1.6e-2), grid_seeds=3,
            ),
            "8L-64d": Size(
                _gpt(8, 64, 4, 16, 128), _train(400, 16, 128, 2e-3, 40, 20, eval_batches=6),
                lrs=(2e-3, 4e-3, 8e-3, 1.6e-2), grid_seeds=3,
            ),
        },
        seeds=(0, 1, 2, 3, 4),
        diag_sequences=64,
        sweep=Sweep("2L-64d", seq_lens=(32, 64, 128, 256, 512, 1024), sinks=(0, 1, 4), seeds=3),
        bench=Bench(
            d_models=(64, 128, 256), seq_lens=(64, 128, 256, 512), batch_size=8, head_dim=32, repeats=10
        ),
        task_limit=300,  # items per task (a fixed random sample, zero_shot.sample_items), for ten models
        control_sizes=("2L-64d", "8L-64d"),
        # about 1.3M bytes of text a subword run (410k tokens of ~3.2 bytes), as the byte runs' 1M
        variants=Variants("2L-64d", "smollm2", subword_steps=400, subword_batch=8, n_kv_head=2, seeds=5),
    ),
    # One large GPU, a few hours (make plan): FineWeb bytes, never more than one epoch.
    "gpu": Preset(
        sizes={
            "6L-384d": Size(
                _gpt(6, 384, 6, 64, 1024), _train(5000, 64, 512, 1e-3, 200, 50, **GPU),
                lrs=(5e-4, 1e-3, 2e-3),
            ),
            "12L-768d": Size(
                _gpt(12, 768, 12, 64, 512), _train(5000, 64, 512, 6e-4, 200, 50, **GPU),
                lrs=(3e-4, 6e-4, 1.2e-3),
            ),
        },
        seeds=(0, 1, 2, 3, 4),
        diag_sequences=256,
        sweep=Sweep("6L-384d", seq_lens=(128, 256, 512, 1024), sinks=(0, 1, 4), seeds=3),
        bench=Bench(
            d_models=(512, 1024, 2048), seq_lens=(512, 1024, 2048, 4096), batch_size=8, head_dim=64,
            repeats=20,
        ),
        task_limit=None,
        corpus=GPU_CORPUS,
        control_sizes=("6L-384d",),
    ),
    # The paper's Table 1 configurations, schedule and sweeps, on FineWeb in GPT-2 tokens (shards built once
    # with python -m attnlab.data.shards; see check_corpus). Fig. 4's grid is the paper's, not extended.
    "paper": Preset(
        sizes={**PAPER_TABLE1, "0.7B": replace(PAPER_TABLE1["0.7B"], lrs=(1e-4, 2e-4, 4e-4, 6e-4))},
        seeds=(0,),
        diag_sequences=1024,
        sweep=Sweep("0.7B", seq_lens=(512, 1024, 2048, 4096, 8192, 16384), sinks=(0, 1, 4), seeds=1),
        bench=Bench(
            d_models=(1024, 2048, 4096), seq_lens=(1024, 2048, 4096, 8192), batch_size=32,
            head_dim=128, repeats=20,
        ),
        task_limit=None,
        corpus="shards/fineweb-gpt2",
        micro_tokens=8 * 2048,  # 256 x 2048 tokens per step do not fit one pass on one GPU; 16K-token
        # rows of the sequence-length sweep pass one at a time
        control_sizes=("0.7B",),
        lr_extensions=0,
    ),
}  # fmt: skip
