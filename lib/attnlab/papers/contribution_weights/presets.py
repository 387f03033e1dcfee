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
#: both modes rank contribution weights by signed value and by magnitude.
RANKINGS = {
    "comprehensiveness": ("raw", "value_weighted", "contribution", "contribution_abs"),
    "sufficiency": ("raw", "value_weighted", "contribution", "contribution_abs"),
}
#: What the downstream accuracies rank by (of ``Preset.task_measures``): the faithfulness rankings less
#: |c| under comprehensiveness, which no downstream verdict reads and which would add one intervention pass
#: per item to the longest part of the notebook.
DOWNSTREAM_RANKINGS = {
    "comprehensiveness": ("raw", "value_weighted", "contribution"),
    "sufficiency": ("raw", "value_weighted", "contribution", "contribution_abs"),
}
#: The paper's hierarchy as this protocol can test it, least faithful first (output-normalised ranks as
#: value-weighted does).
HIERARCHY = ("raw", "value_weighted", "contribution")
TEXT_SETS = {
    "brown": "Brown corpus, held-out split (stand-in for FineWeb-Edu)",
    "gsm8k": "GSM8K's test problems with their worked answers (the paper's own set)",
    "shakespeare": "Shakespeare, held-out split",
}
#: The paper's three downstream tasks (attnlab.data.tasks): each the paper's own set.
DOWNSTREAM = {
    "mmlu": "MMLU: a fixed subject-stratified sample of its test set, answered by letter",
    "winogrande": "WinoGrande (dev): each option fills the blank, the rest of the sentence is scored",
    "boolq": "BoolQ (validation): a yes/no question on a passage",
}
#: The seed of the fixed sample of every downstream task but MMLU (``experiment.task_items``; MMLU's sample
#: is ``attnlab.data.tasks.load_mmlu``'s, seed 0). Not the notebook's ``seed``: every run sees the same items.
SAMPLE_SEED = 0


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
    # items per downstream task but MMLU, a fixed sample drawn with SAMPLE_SEED (None: the whole split)
    task_sample: int | None
    mmlu_per_subject: int | None  # MMLU questions per subject (57 subjects; None: all 14,042)
    task_fraction: float  # the fraction zeroed for the downstream accuracies (layers together, joint)
    fig1_tokens: int  # length of the Fig. 1 passage
    own: OwnModel
    bench_lengths: tuple[int, ...]  # sequence lengths of the cost benchmark
    bench_naive_max_gb: float  # the naive implementation runs only where its terms tensor fits this
    bench_repeats: int
    # the measures the downstream accuracies rank by, under each mode of DOWNSTREAM_RANKINGS that has them
    task_measures: tuple[str, ...] = tuple(dict.fromkeys(m for ms in RANKINGS.values() for m in ms))
    # the timing claim's paired measurement (cost.paired_times): repeats per length, at the bench lengths
    # whose naive terms tensor fits this cap (cpu: T = 128 and 256; 58 s measured on two cores shared with
    # other work, about 13 s expected on free ones from the naive form's times in the cpu cost.csv)
    bench_pair_repeats: int = 10
    bench_pair_max_gb: float = 2.0


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
#: The layers of each pinned causal LM (their configs), so that ``layers`` beyond them is refused before
#: anything is loaded; another model is checked when it is loaded (``ContributionExperiment.layer_sets``).
PINNED_LAYERS = {"smollm2": 30, "gemma3-270m": 18, "qwen2.5-coder-0.5b": 24, "qwen2.5-coder-1.5b": 28}
SCALE_MODELS = {"smoke": ("smollm2",), "cpu": CAUSAL_LMS, "gpu": CAUSAL_LMS, "paper": CAUSAL_LMS}
#: The precisions a pretrained model can run in (bfloat16 is fast only on a CPU or GPU with bfloat16 units).
DTYPES = ("float32", "bfloat16")
FRACTIONS = (0.0, 0.02, 0.05, 0.1, 0.2)
_PAPER_TEXTS = ("brown", "gsm8k")  # FineWeb-Edu's stand-in and the paper's GSM8K
_PAPER_TASKS = tuple(DOWNSTREAM)  # the paper's three: MMLU, WinoGrande, BoolQ

PRESETS: dict[str, Preset] = {
    # Under 30 s of compute on a CPU (SmolLM2 from its float32 checkpoint): every code path, nothing judged.
    "smoke": Preset(
        model="smollm2", dtype="float32", window=12, windows=2, batch_size=4, fractions=(0.0, 0.1, 0.3),
        scopes=SCOPES, layers=2, text_sets=("brown",), tasks=("winogrande", "boolq"),
        task_sample=2, mmlu_per_subject=1, task_fraction=0.1, fig1_tokens=16, own=_own(2, 32, 40, 32, 2, 32),
        bench_lengths=(32, 64), bench_naive_max_gb=0.5, bench_repeats=2, bench_pair_repeats=5,
    ),
    # A 2-core laptop: 3 evenly spaced layers, 32 windows of 48 tokens per text set; the paper's three
    # downstream tasks, each a fixed sample of at least 500 items (MMLU 9 per subject: 513; WinoGrande and
    # BoolQ 500 each, drawn with SAMPLE_SEED), clean and under the 7 interventions (about 6.8 full passes of
    # SmolLM2 per item). Expected, from the tokens against SmolLM2's measured MMLU rate (not timed here): MMLU
    # about 10 minutes, WinoGrande 5 (1,000 sequences of about 24 tokens: 0.45 of MMLU's tokens), BoolQ 14
    # (passages: 1.3 times MMLU's tokens), about 30 minutes of downstream on two free cores
    # (docs/papers/contribution-weights.md, "Budget"). The cost benchmark from T = 128, so that the naive
    # tensor (9 x T x T x 576 floats) fits the 8 GB cap at three lengths (128, 256, 512).
    "cpu": Preset(
        model="smollm2", dtype="float32", window=48, windows=32, batch_size=16,
        fractions=(0.0, 0.02, 0.05, 0.2), scopes=SCOPES, layers=3, text_sets=_PAPER_TEXTS,
        tasks=_PAPER_TASKS, task_sample=500, mmlu_per_subject=9, task_fraction=0.1, fig1_tokens=32,
        own=_own(4, 128, 600, 128, 32, 64),
        bench_lengths=(128, 256, 512, 1024, 2048), bench_naive_max_gb=8.0, bench_repeats=3,
    ),
    # One GPU: longer windows, many more of them, every sixth layer.
    "gpu": Preset(
        model="smollm2", dtype="bfloat16", window=256, windows=64, batch_size=16, fractions=FRACTIONS,
        scopes=SCOPES, layers=5, text_sets=tuple(TEXT_SETS), tasks=tuple(DOWNSTREAM),
        task_sample=1000, mmlu_per_subject=18, task_fraction=0.1, fig1_tokens=32,
        own=_own(6, 384, 5000, 512, 256, 128),
        bench_lengths=(512, 1024, 2048), bench_naive_max_gb=40.0, bench_repeats=10, bench_pair_max_gb=24.0,
    ),
    # The paper's protocol on a 7-8B model (pass its name or folder as ``model``; it needs the weights).
    "paper": Preset(
        model="mistralai/Mistral-7B-v0.1", dtype="bfloat16", window=1024, windows=256, batch_size=4,
        fractions=FRACTIONS, scopes=SCOPES, layers=8, text_sets=tuple(TEXT_SETS), tasks=tuple(DOWNSTREAM),
        task_sample=None, mmlu_per_subject=None, task_fraction=0.1, fig1_tokens=32,
        own=_own(6, 384, 5000, 512, 256, 128),
        bench_lengths=(512, 1024, 2048, 4096), bench_naive_max_gb=40.0, bench_repeats=10,
        bench_pair_max_gb=24.0,
    ),
}  # fmt: skip
