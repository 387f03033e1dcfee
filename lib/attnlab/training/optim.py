"""Every training's optimizer: AdamW with per-group learning rates and its schedule (linear warm-up, then
cosine decay) for the language models, and plain or momentum SGD, or Adam, over named parameter groups for the
paper-specific trainings. Every group carries its ``"name"`` and ``"base_lr"``, the rate a
:class:`attnlab.training.loop.Schedule` multiplies (:func:`attnlab.training.loop.set_rates`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

import torch

from attnlab.training.loop import Schedule

if TYPE_CHECKING:
    from attnlab.model import GPT
    from attnlab.training.trainer import TrainConfig


def lr_schedule(cfg: TrainConfig) -> Schedule:
    """The language models' learning rate: linear warm-up over ``warmup_steps`` (the first step at
    lr / warmup_steps), then cosine decay from lr to lr * min_lr_ratio at the last step."""
    return Schedule(total=cfg.steps - 1, warmup=cfg.warmup_steps, peak=cfg.lr, end=cfg.lr * cfg.min_lr_ratio)


def make_optimizer(model: GPT, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with one parameter group per (``GPT.param_group``, decayed?) pair; matrices are decayed. A
    group's ``"base_lr"`` is its ``lr_scale`` (the schedule, :func:`lr_schedule`, gives the rate itself)."""
    groups: dict[tuple[str, bool], list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        groups.setdefault((model.param_group(name), p.dim() >= 2), []).append(p)
    unknown = set(cfg.lr_scale) - {g for g, _ in groups}
    if unknown:
        raise ValueError(f"lr_scale names unknown parameter groups {sorted(unknown)}")
    param_groups = [
        {
            "params": params,
            "name": name,
            "base_lr": cfg.lr_scale.get(name, 1.0),
            "weight_decay": cfg.weight_decay if decay else 0.0,
        }
        for (name, decay), params in sorted(groups.items())
    ]
    fused = next(model.parameters()).device.type == "cuda"
    return torch.optim.AdamW(param_groups, lr=cfg.lr, betas=cfg.betas, fused=fused)


class Grouped(Protocol):
    """A model whose parameters each belong to a named learning-rate group (``GPT``, the SVA classifier)."""

    def named_parameters(self) -> Iterator[tuple[str, torch.nn.Parameter]]: ...

    def param_group(self, name: str) -> str: ...


def gpt_groups(model: Grouped) -> dict[str, list[torch.nn.Parameter]]:
    """The parameters of each ``param_group`` of ``model`` (a GPT, or any module with the same
    ``param_group(name)`` method), groups in name order, parameters in model order."""
    groups: dict[str, list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        groups.setdefault(model.param_group(name), []).append(p)
    return dict(sorted(groups.items()))


def sgd(
    params: Iterable[torch.nn.Parameter] | Mapping[str, Iterable[torch.nn.Parameter]],
    lr: float,
    *,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    lr_scale: Mapping[str, float] | None = None,
) -> torch.optim.SGD:
    """SGD at ``lr`` (with ``momentum`` and ``weight_decay``, if given). ``params``: the parameters, or named
    groups (in the order given), each group learning at ``lr`` x ``lr_scale.get(name, 1)`` and keeping its
    ``"name"``, so a loop can set per-group rates later."""
    return torch.optim.SGD(_named(params, lr, lr_scale), lr=lr, momentum=momentum, weight_decay=weight_decay)


def adam(
    params: Iterable[torch.nn.Parameter] | Mapping[str, Iterable[torch.nn.Parameter]],
    lr: float,
    *,
    lr_scale: Mapping[str, float] | None = None,
) -> torch.optim.Adam:
    """Adam at ``lr`` (default betas, no weight decay), with ``params`` and ``lr_scale`` as :func:`sgd`."""
    return torch.optim.Adam(_named(params, lr, lr_scale), lr=lr)


def _named(
    params: Iterable[torch.nn.Parameter] | Mapping[str, Iterable[torch.nn.Parameter]],
    lr: float,
    lr_scale: Mapping[str, float] | None,
) -> list[dict]:
    """Named groups as optimizer param groups, each at ``lr`` x ``lr_scale.get(name, 1)`` (its ``"lr"`` and
    ``"base_lr"``); plain parameters as one group named ``"all"``."""
    groups = params if isinstance(params, Mapping) else {"all": params}
    scale = lr_scale or {}
    return [
        {"params": list(ps), "name": g, "lr": lr * scale.get(g, 1.0), "base_lr": lr * scale.get(g, 1.0)}
        for g, ps in groups.items()
    ]
