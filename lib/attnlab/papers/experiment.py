"""What every paper's experiment shares: where its figures go, which device it runs on, and how a ``steps``
parameter rescales a training schedule."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import torch

from attnlab import paths
from attnlab.training.trainer import TrainConfig, resolve_device


def with_steps(train: TrainConfig, steps: int) -> TrainConfig:
    """``train`` lasting ``steps`` steps, its warmup and evaluation interval scaled in proportion (the same
    warmup share and number of evaluations): a notebook's ``steps`` parameter."""
    scale = steps / train.steps
    return replace(
        train,
        steps=steps,
        warmup_steps=round(train.warmup_steps * scale),
        eval_every=max(1, round(train.eval_every * scale)),
    )


class PaperExperiment:
    """Base of the paper experiments (frozen dataclasses with ``scale`` and ``device`` fields)."""

    paper: ClassVar[str]  # the folder name under figures/<scale>/
    scale: str
    device: str

    @property
    def figures(self) -> Path:
        """``figures/<scale>/<paper>/``."""
        return paths.figures_dir() / self.scale / self.paper

    @property
    def torch_device(self) -> torch.device:
        """The device the ``device`` parameter resolves to on this machine (``auto``: CUDA if available)."""
        return resolve_device(self.device)

    def circuit_steps(self) -> int:
        """Training steps the experiment runs on CPU cores outside the GPU plan (QK-speed's circuits), at
        most; 0 for the others."""
        return 0

    def circuit_stacks(self) -> list[tuple[int, int]]:
        """The batched circuit program among ``circuit_steps``: (circuits, batched steps at most) per stack
        (QK-speed's); none for the others."""
        return []

    def check_data(self) -> None:
        """Fail with a clear message, before any compute, when data the experiment trains on is missing
        (the runner calls it for every notebook before running any; training calls it first)."""
