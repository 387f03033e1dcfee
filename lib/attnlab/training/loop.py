"""The one optimisation loop every training in attnlab runs through, its one learning-rate schedule and its
checkpoints.

A loop is given what differs between trainings as arguments: ``gradient(step)`` computes the loss of the
step's batch (the batch source lives inside it) and its gradient, and returns the loss; a :class:`Schedule`
(or one per parameter group) sets the learning rates; ``record`` keeps histories, evaluates and may stop
early; a :class:`Checkpoint` saves everything needed to continue and resumes from it. The language-model
trainer (:mod:`attnlab.training.trainer`), QK-speed's circuits, fixed-attention runs, SVA classifier and SQuAD
model all train through :func:`optimise`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from attnlab import fields, verified
from attnlab.errors import ConfigError, TrainingDiverged


@dataclass(frozen=True)
class Schedule:
    """The learning rate (or its factor) at each step: a linear warm-up over ``warmup`` steps to ``peak``,
    then ``shape`` ("cosine" or "linear") from ``peak`` to ``end``, reached at step ``total`` and held after.

    The warm-up's step s is at ``peak`` x (s + ``warmup_offset``) / ``warmup``: offset 1 (this project's
    trainer: the first step already learns) or 0 (``transformers.get_cosine_schedule_with_warmup``, the
    QK-speed authors' SVA schedule: the first step at 0). Each instance in the project:

    - language models (XSA, S–D, SQuAD): warm-up to lr, cosine to lr x ``min_lr_ratio`` at the last step
      (``total = steps - 1``), :func:`attnlab.training.optim.lr_schedule`;
    - the SVA classifier (QK-speed, Sec. 5): factor 0 -> 1 over the warm-up, cosine to 0 at ``total``;
    - the circuits (QK-speed, Fig. 2): a linear ramp of the factor from ``peak`` to ``end`` over the planned
      steps (the authors' LambdaLR ``1 + (40 - 1) * step / total_steps``).
    """

    total: int
    warmup: int = 0
    peak: float = 1.0
    end: float = 1.0
    shape: str = "cosine"
    warmup_offset: int = 1

    def __post_init__(self) -> None:
        fields.non_negative_ints(self, "total", "warmup")
        fields.non_negative_floats(self, "peak", "end")
        fields.one_of(self, "shape", ("cosine", "linear"))
        fields.one_of(self, "warmup_offset", (0, 1))

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return self.peak * (step + self.warmup_offset) / self.warmup
        span = max(1, self.total - self.warmup)
        if self.shape == "linear":
            return self.peak + (self.end - self.peak) * min(step - self.warmup, span) / span
        progress = min(1.0, (step - self.warmup) / span)
        return self.end + 0.5 * (self.peak - self.end) * (1 + math.cos(math.pi * progress))


Schedules = Schedule | Mapping[str, Schedule]
CONSTANT = Schedule(total=0)  # every step at the groups' base rates


def set_rates(opt: torch.optim.Optimizer, schedule: Schedules, step: int) -> list[float]:
    """Set every parameter group's learning rate for ``step``: its ``"base_lr"`` x the schedule's value (one
    schedule for all groups, or one per group ``"name"``); returns the rates in group order."""
    rates = []
    for group in opt.param_groups:
        one = schedule if isinstance(schedule, Schedule) else schedule[group["name"]]
        group["lr"] = group["base_lr"] * one(step)
        rates.append(group["lr"])
    return rates


@dataclass
class Checkpoint:
    """Where a loop saves its state every ``every`` steps, and resumes from.

    ``capture()`` returns everything a run needs to continue exactly (weights, optimizer, histories, the state
    of its random streams); ``restore(state)`` puts it back. The file is written atomically with a checksum
    (:mod:`attnlab.verified`); a damaged one is discarded and the run starts over, so a resumed run ends with
    the same weights and losses as an uninterrupted one. ``write``: False on the processes of a distributed
    run that do not write (all of them read)."""

    path: Path
    every: int
    capture: Callable[[], dict[str, Any]]
    restore: Callable[[dict[str, Any]], None]
    write: bool = True
    load_kwargs: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        fields.positive_ints(self, "every")

    @classmethod
    def of(
        cls,
        path: Path,
        every: int,
        model: torch.nn.Module,
        opt: torch.optim.Optimizer,
        stream: torch.Generator,
        history: list[float],
        device: str | torch.device = "cpu",
    ) -> Checkpoint:
        """The checkpoint of a training whose state is its weights, its optimizer, one random stream (the
        batches it draws) and one list it appends to."""

        def capture() -> dict[str, Any]:
            return {
                "model": model.state_dict(),
                "opt": opt.state_dict(),
                "stream": stream.get_state(),
                "history": history,
            }

        def restore(state: dict[str, Any]) -> None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            stream.set_state(state["stream"])
            history[:] = state["history"]

        return cls(path, every, capture, restore, load_kwargs={"map_location": device})

    def resume(self) -> int:
        """Restore the saved state if a sound checkpoint exists; returns the step it was saved at (or 0)."""
        state = verified.load_or_discard(
            self.path, "checkpoint not used", "starting this run from step 0", **(self.load_kwargs or {})
        )
        if state is None:
            return 0
        self.restore(state["run"])
        return int(state["step"])

    def save(self, step: int) -> None:
        run = self.capture()  # every process takes part (a sharded model gathers its weights)
        if self.write:
            verified.save({"step": step, "run": run}, self.path)


def progress_bar(total: int, initial: int, desc: str, enabled: bool) -> tqdm:
    """A tqdm bar on stderr; outside a terminal it refreshes every 15 s."""
    # Outside a terminal (papermill, CI logs) refresh rarely so the log stays a few readable lines.
    interactive = sys.stderr.isatty()
    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        disable=not enabled,
        file=sys.stderr,
        ascii=not interactive,
        ncols=100,
        mininterval=0.5 if interactive else 15.0,
    )


def backward(loss: Callable[[int], torch.Tensor]) -> Callable[[int], float]:
    """A ``gradient`` for :func:`optimise` from a function returning the step's (graph-attached) loss."""

    def gradient(step: int) -> float:
        value = loss(step)
        value.backward()
        return value.item()

    return gradient


def optimise(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    steps: int,
    gradient: Callable[[int], float],
    schedule: Schedules,
    *,
    start: int = 0,
    grad_clip: float = 0.0,
    record: Callable[[int, float], bool | None] | None = None,
    checkpoint: Checkpoint | None = None,
    on_step: Callable[[int], None] | None = None,
    label: str = "train",
    bar: tqdm | None = None,
) -> int:
    """Steps ``start`` .. ``steps - 1`` of a training; returns the number of steps done.

    Each step sets the learning rates (:func:`set_rates`), zeroes the gradients, calls ``gradient(step)``
    (the step's batch, loss and backward pass; it returns the loss), stops with
    :class:`attnlab.errors.TrainingDiverged` when that loss is not finite, clips the gradient norm to
    ``grad_clip`` (0: no clipping) and steps the optimizer. Then ``record(done, loss)`` (``done`` = steps
    completed) keeps histories and evaluates; a true return stops the loop (early stopping). ``checkpoint``
    saves every ``checkpoint.every`` steps before the last; then ``bar`` (a progress bar) advances and
    ``on_step(done)`` observes the finished step (timing, or a test's simulated interruption)."""
    if not isinstance(grad_clip, (int, float)) or grad_clip < 0:
        raise ConfigError(f"grad_clip must be a number >= 0, got {grad_clip!r}")
    done = start
    for step in range(start, steps):
        rates = set_rates(opt, schedule, step)
        opt.zero_grad(set_to_none=True)
        loss = gradient(step)
        if not math.isfinite(loss):
            if bar is not None:
                bar.close()
            raise TrainingDiverged(
                f"{label}: loss became {loss} at step {step} (learning rate {max(rates):.3g}); lower the "
                "learning rate or check the data. No result was written."
            )
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        done = step + 1
        stop = record(done, loss) if record is not None else None
        if checkpoint is not None and done % checkpoint.every == 0 and done < steps and not stop:
            checkpoint.save(done)
        if bar is not None:
            bar.update(1)
        if on_step is not None:
            on_step(done)
        if stop:
            break
    return done
