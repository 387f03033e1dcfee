"""Every paper's lens on every attention kind (this project's synthesis, docs/papers/synthesis.md): the
trained kinds and the scale presets of its notebook. Each scale's model and schedule are those of the XSA
notebook's first size at its tuned learning rate, so the SA, XSA and previous-value runs of the two notebooks
are one cached run each (``attnlab.training.cache``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from attnlab.model import GPTConfig
from attnlab.papers.xsa.presets import GPU_CORPUS, PAPER_TABLE1
from attnlab.papers.xsa.presets import PRESETS as XSA_PRESETS
from attnlab.training.trainer import TrainConfig

#: The trained kinds, by their ``attnlab.runner.style`` colour name: every ``ATTENTION_KINDS`` kind the four
#: papers study except XSA's random-direction control ("xsa-prev" is the control the XSA notebook found
#: strongest); "linear" is SA with ELU+1 linear attention in its first ``Preset.linear_layers`` layers.
KINDS = ("sa", "xsa", "xsa-prev", "sd", "sd-shared", "linear")
LABELS = {
    "sa": "SA",
    "xsa": "XSA",
    "xsa-prev": "XSA control: previous value",
    "sd": "S-D",
    "sd-shared": "S-D, shared projection",
    "linear": "SA, ELU+1 first layer(s)",
}


@dataclass(frozen=True)
class Preset:
    model: GPTConfig  # the SA configuration; the kinds differ only in ``attn``
    train: TrainConfig  # at the XSA notebook's tuned learning rate for this model
    seeds: tuple[int, ...]
    linear_layers: int  # leading ELU+1 layers of the "linear" kind
    diag_sequences: int  # validation windows every lens reads (one forward pass each)
    control_position: int  # the ordinary token whose value geometry is the sink's control
    qk_ratios: tuple[float, ...]  # eta_QK / eta_OV of the ratio question (1 = the base runs)
    ratio_kinds: tuple[str, ...]  # the kinds trained at every ratio
    faithfulness_windows: int  # validation windows of the single-layer faithfulness lens
    faithfulness_fractions: tuple[
        float, ...
    ]  # value terms zeroed per query and head there (0: the clean pass)
    corpus: str = "shakespeare"
    micro_tokens: int | None = None  # tokens per forward pass per process (gradient accumulation); None = all


def _xsa(scale: str, size: str, lr: float) -> tuple[GPTConfig, TrainConfig]:
    s = XSA_PRESETS[scale].sizes[size]
    return s.model, replace(s.train, lr=lr)


PRESETS: dict[str, Preset] = {
    # Seconds on a CPU, to exercise every cell (judges nothing): XSA's smoke 2L-32d.
    "smoke": Preset(
        *_xsa("smoke", "2L-32d", 3e-3), seeds=(0, 1), linear_layers=1, diag_sequences=8, control_position=8,
        qk_ratios=(1.0, 4.0), ratio_kinds=("sa",), faithfulness_windows=4,
        faithfulness_fractions=(0.0, 0.1, 0.3),
    ),
    # A 2-core laptop, under 30 minutes: XSA's 2L-64d at its tuned rate 0.008 (README, XSA), three seeds;
    # 54 runs of 500 steps (18 base runs, 9 shared with the XSA notebook; 36 at eta_QK / eta_OV 1/2 to 8).
    "cpu": Preset(
        *_xsa("cpu", "2L-64d", 8e-3), seeds=(0, 1, 2), linear_layers=1, diag_sequences=64,
        control_position=32, qk_ratios=(0.5, 1.0, 2.0, 4.0, 8.0), ratio_kinds=("sa", "xsa", "sd"),
        faithfulness_windows=32, faithfulness_fractions=(0.0, 0.05, 0.1, 0.2),
    ),
    # One large GPU: XSA's 6L-384d at its preset rate, on FineWeb bytes.
    "gpu": Preset(
        *_xsa("gpu", "6L-384d", 1e-3), seeds=(0, 1, 2), linear_layers=2, diag_sequences=256,
        control_position=128, qk_ratios=(0.5, 1.0, 2.0, 4.0, 8.0), ratio_kinds=("sa", "xsa", "sd"),
        faithfulness_windows=64, faithfulness_fractions=(0.0, 0.05, 0.1, 0.2), corpus=GPU_CORPUS,
    ),
    # XSA's 0.7B model of Table 1 on FineWeb in GPT-2 tokens, one seed.
    "paper": Preset(
        PAPER_TABLE1["0.7B"].model, PAPER_TABLE1["0.7B"].train, seeds=(0,), linear_layers=4,
        diag_sequences=256, control_position=512, qk_ratios=(1.0,), ratio_kinds=(), faithfulness_windows=64,
        faithfulness_fractions=(0.0, 0.02, 0.05, 0.1, 0.2), corpus="shards/fineweb-gpt2",
        micro_tokens=8 * 2048,
    ),
}  # fmt: skip
