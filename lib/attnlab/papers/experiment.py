"""What every paper's experiment shares: where its figures go and which device it runs on."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import torch

from attnlab import paths
from attnlab.training.trainer import resolve_device


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

    def check_data(self) -> None:
        """Fail with a clear message, before any compute, when data the experiment trains on is missing
        (the runner calls it for every notebook before running any; training calls it first)."""
