"""Every training loop's optimizer: AdamW with per-group learning rates and its schedule (linear warm-up, then
cosine decay) for the language-model trainer, and plain or momentum SGD over named parameter groups for the
paper-specific loops.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from attnlab.model import GPT
    from attnlab.training.trainer import TrainConfig


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup_steps``, then cosine decay from lr to lr * min_lr_ratio at the end."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - 1 - cfg.warmup_steps)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1 + math.cos(math.pi * min(1.0, progress)))


def set_lr(opt: torch.optim.Optimizer, step: int, cfg: TrainConfig) -> float:
    """Set each group of a :func:`make_optimizer` optimizer to ``lr_at(step, cfg)`` x its ``lr_scale``;
    returns ``lr_at(step, cfg)``."""
    lr = lr_at(step, cfg)
    for group in opt.param_groups:
        group["lr"] = lr * group["lr_scale"]
    return lr


def make_optimizer(model: GPT, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with one parameter group per (``GPT.param_group``, decayed?) pair; matrices are decayed."""
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
            "lr_scale": cfg.lr_scale.get(name, 1.0),
            "weight_decay": cfg.weight_decay if decay else 0.0,
        }
        for (name, decay), params in sorted(groups.items())
    ]
    fused = next(model.parameters()).device.type == "cuda"
    return torch.optim.AdamW(param_groups, lr=cfg.lr, betas=cfg.betas, fused=fused)


def gpt_groups(model: GPT | torch.nn.Module) -> dict[str, list[torch.nn.Parameter]]:
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
) -> Iterable[torch.nn.Parameter] | list[dict]:
    """Named groups as optimizer param groups, each at ``lr`` x ``lr_scale.get(name, 1)``; plain parameters
    as they are."""
    if not isinstance(params, Mapping):
        return params
    scale = lr_scale or {}
    return [{"params": list(ps), "name": g, "lr": lr * scale.get(g, 1.0)} for g, ps in params.items()]
