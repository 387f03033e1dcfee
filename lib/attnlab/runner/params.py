"""Validation of notebook parameters, shared by the notebooks and the runner so that a bad value fails with a
clear message before any compute."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from attnlab.errors import ParameterError

SCALES = ("smoke", "cpu", "gpu", "paper")


def check_scale(scale: object) -> str:
    if scale not in SCALES:
        raise ParameterError(f"scale must be one of {', '.join(SCALES)}; got {scale!r}")
    return str(scale)


def check_seeds(seeds: object, default: Sequence[int]) -> tuple[int, ...]:
    """A list of distinct non-negative ints; empty means the preset's ``default``."""
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, (list, tuple)) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds
    ):
        raise ParameterError(f"seeds must be a list of non-negative integers; got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"seeds must be distinct; got {seeds!r}")
    return tuple(seeds) or tuple(default)


def check_device(device: object) -> str:
    """``"auto"`` or a torch device string that exists on this machine."""
    if not isinstance(device, str):
        raise ParameterError(f"device must be a string such as 'auto', 'cpu' or 'cuda'; got {device!r}")
    if device == "auto":
        return device
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ParameterError(f"device {device!r} is not a torch device: {err}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError(f"device {device!r} requested but CUDA is not available here")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ParameterError(f"device {device!r} requested but MPS is not available here")
    return device


def check_subset(name: str, chosen: object, available: Iterable[str]) -> tuple[str, ...]:
    """A list drawn from ``available``; empty means all of them."""
    available = tuple(available)
    if not isinstance(chosen, (list, tuple)) or not all(isinstance(c, str) for c in chosen):
        raise ParameterError(f"{name} must be a list of names from {list(available)}; got {chosen!r}")
    unknown = [c for c in chosen if c not in available]
    if unknown:
        raise ParameterError(f"{name}: unknown {unknown}; choose from {list(available)}")
    return tuple(chosen) or available
