"""Contribution weights (arXiv 2606.07604): the paper's measures, text sets and downstream tasks, and the
scale presets of its notebook."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.hf import CAUSAL_LMS
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
    "contribution_abs": "|contribution weights|",
}
#: What the faithfulness curves rank by, per mode. Output-normalised attention zeroes exactly the terms
#: value-weighted attention zeroes in both scopes (``faithfulness`` module docstring), so it is not run;
#: sufficiency ranks contribution weights both by signed value and by magnitude.
RANKINGS = {
    "comprehensiveness": ("raw", "value_weighted", "contribution"),
    "sufficiency": ("raw", "value_weighted", "contribution", "contribution_abs"),
}
#: The paper's hierarchy as this protocol can test it, least faithful first (output-normalised ranks as
#: value-weighted does).
HIERARCHY = ("raw", "value_weighted", "contribution")
TEXT_SETS = {
    "brown": "Brown corpus, held-out split (stand-in for FineWeb-Edu)",
    "shakespeare": "Shakespeare, held-out split",
    "math": "MathQA word problems with answers, BIG-bench (stand-in for GSM8K)",
}
# Our task -> the paper's set it stands in for (or what it adds). BIG-bench, attnlab.data.tasks.
DOWNSTREAM = {
    "sva_linzen": "none: subject-verb agreement (Linzen et al.), a task a 135M model is above chance on",
    "sva_simple": "none: subject-verb agreement, simple sentences",
    "cause_effect": "none: commonsense cause and effect, two choices",
    "winowhy": "Winogrande",
    "strategyqa": "BoolQ",
    "mmlu": "MMLU (the paper's own task): a fixed subject-stratified sample of its test set, by letter",
}


@dataclass(frozen=True)
class OwnModel:
    """This project's GPT, trained on ``corpus`` and analysed beside the pretrained model."""

    model: GPTConfig
    train: TrainConfig
    windows: int  # held-out windows of ``window`` bytes for its faithfulness curves
    window: int
    corpus: str = "shakespeare"


@dataclass(frozen=True)
class Preset:
    model: str  # "smollm2" (the offline artifact), a hub name in the local cache, or a folder
    dtype: str  # one of DTYPES
    window: int  # tokens per text window
    windows: int  # windows per text set
    batch_size: int  # windows per clean pass; an intervention pass holds len(fractions) times as many
    fractions: tuple[float, ...]  # fractions of value terms zeroed per query
    # ranking scopes of the faithfulness curves (attnlab.papers.contribution_weights.faithfulness.SCOPES)
    scopes: tuple[str, ...]
    layers: int  # evenly spaced layers intervened on one at a time, then together (faithfulness.layer_sets)
    text_sets: tuple[str, ...]  # the default text sets (the notebook's ``text_sets`` overrides)
    tasks: tuple[str, ...]  # the default downstream tasks (the notebook's ``tasks`` overrides)
    task_limit: int | None  # multiple-choice items per downstream task; None: every item available offline
    mmlu_per_subject: int | None  # MMLU questions per subject (57 subjects; None: all 14,042)
    task_fraction: float  # the fraction zeroed for the downstream accuracies (layers together, joint)
    fig1_tokens: int  # length of the Fig. 1 passage
    own: OwnModel
    bench_lengths: tuple[int, ...]  # sequence lengths of the cost benchmark
    bench_naive_max_gb: float  # the naive implementation runs only where its terms tensor fits this
    bench_repeats: int
    # the measures the downstream accuracies rank by, under each mode of RANKINGS that has them
    task_measures: tuple[str, ...] = tuple(dict.fromkeys(m for ms in RANKINGS.values() for m in ms))


def _own(n_layer: int, d_model: int, steps: int, seq: int, windows: int, window: int) -> OwnModel:
    model = GPTConfig(
        n_layer=n_layer, d_model=d_model, n_head=4, head_dim=d_model // 4, block_size=seq, pos="rope"
    )
    train = TrainConfig(
        steps=steps, batch_size=32, seq_len=seq, lr=2e-3, warmup_steps=steps // 10, eval_every=steps // 5,
        eval_batches=4,
    )  # fmt: skip
    return OwnModel(model, train, windows, window)


#: The pinned models of the scale section (``contribution_weights.scale``) per notebook scale, smallest first:
#: SmolLM2 alone at smoke scale (nothing large is downloaded), every pinned causal LM from cpu on.
SCALE_MODELS = {"smoke": ("smollm2",), "cpu": CAUSAL_LMS, "gpu": CAUSAL_LMS, "paper": CAUSAL_LMS}
#: The precisions a pretrained model can run in (bfloat16 is fast only on a CPU or GPU with bfloat16 units).
DTYPES = ("float32", "bfloat16")
FRACTIONS = (0.0, 0.02, 0.05, 0.1, 0.2)
_PAPER_TEXTS = ("brown", "math")  # the stand-ins for FineWeb-Edu and GSM8K
# winowhy and strategyqa: SmolLM2 is at chance on them (docs); by parameter
_TASKS = ("sva_linzen", "sva_simple", "cause_effect")

PRESETS: dict[str, Preset] = {
    # Under 30 s of compute on a CPU (SmolLM2 from its float32 checkpoint): every code path, nothing judged.
    "smoke": Preset(
        model="smollm2", dtype="float32", window=12, windows=2, batch_size=4, fractions=(0.0, 0.1, 0.3),
        scopes=SCOPES, layers=2, text_sets=("brown",), tasks=("sva_linzen",),
        task_limit=1, mmlu_per_subject=1, task_fraction=0.1, fig1_tokens=16, own=_own(2, 32, 40, 32, 2, 32),
        bench_lengths=(32, 64), bench_naive_max_gb=0.5, bench_repeats=2,
    ),
    # A 2-core laptop, about 45 minutes: 3 evenly spaced layers, 32 windows of 48 tokens per text set; every
    # downstream item available offline (sva_linzen 499 two-choice items, sva_simple 600, cause_effect 51:
    # 1,150 against 251 at 100 per task, where a paired test could not see a 3-point difference; the
    # downstream part takes about 4.3 times as long); the cost benchmark from T = 128, so that the naive
    # tensor (9 x T x T x 576 floats) fits the 8 GB cap at three lengths (128, 256, 512).
    "cpu": Preset(
        model="smollm2", dtype="float32", window=48, windows=32, batch_size=16,
        fractions=(0.0, 0.02, 0.05, 0.2), scopes=SCOPES, layers=3, text_sets=_PAPER_TEXTS, tasks=_TASKS,
        task_limit=None, mmlu_per_subject=9, task_fraction=0.1, fig1_tokens=32,
        own=_own(4, 128, 600, 128, 32, 64),
        bench_lengths=(128, 256, 512, 1024, 2048), bench_naive_max_gb=8.0, bench_repeats=3,
    ),
    # One GPU: longer windows, many more of them, every sixth layer.
    "gpu": Preset(
        model="smollm2", dtype="bfloat16", window=256, windows=64, batch_size=16, fractions=FRACTIONS,
        scopes=SCOPES, layers=5, text_sets=tuple(TEXT_SETS), tasks=tuple(DOWNSTREAM),
        task_limit=1000, mmlu_per_subject=18, task_fraction=0.1, fig1_tokens=32,
        own=_own(6, 384, 5000, 512, 256, 128),
        bench_lengths=(512, 1024, 2048), bench_naive_max_gb=40.0, bench_repeats=10,
    ),
    # The paper's protocol on a 7-8B model (pass its name or folder as ``model``; it needs the weights).
    "paper": Preset(
        model="mistralai/Mistral-7B-v0.1", dtype="bfloat16", window=1024, windows=256, batch_size=4,
        fractions=FRACTIONS, scopes=SCOPES, layers=8, text_sets=tuple(TEXT_SETS), tasks=tuple(DOWNSTREAM),
        task_limit=2000, mmlu_per_subject=None, task_fraction=0.1, fig1_tokens=32,
        own=_own(6, 384, 5000, 512, 256, 128),
        bench_lengths=(512, 1024, 2048, 4096), bench_naive_max_gb=40.0, bench_repeats=10,
    ),
}  # fmt: skip
