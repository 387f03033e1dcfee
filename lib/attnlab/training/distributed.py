"""Data-parallel training under ``torchrun``: the process group, each rank's device and batch slice, model
wrapping (DistributedDataParallel, or FSDP for models that do not fit one device) and full-state checkpoints.

``torchrun`` (``python -m torch.distributed.run``) starts one process per device and sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``; :func:`setup` reads them. Without them (a
plain ``python`` process, a notebook) there is one process and every function here leaves the model, the
batch and the numbers as they are.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from attnlab.model import GPT, GPTConfig


@dataclass(frozen=True)
class Context:
    """This process's place in the job: its rank among ``world_size`` processes, and on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0 alone writes checkpoints, results and logs, and shows progress."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def shard(self, n: int) -> slice:
        """This rank's contiguous slice of ``n`` rows (``n`` a multiple of ``world_size``)."""
        if n % self.world_size:
            raise ValueError(f"{n} rows cannot be split evenly over {self.world_size} processes")
        per_rank = n // self.world_size
        return slice(self.rank * per_rank, (self.rank + 1) * per_rank)


def context() -> Context:
    """The job as ``torchrun`` describes it in the environment; one process when it does not."""
    env = os.environ
    return Context(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)))


def setup(device: torch.device) -> tuple[Context, torch.device]:
    """Join the process group once per process (nccl on CUDA, gloo on the CPU) and return this rank's
    device: on CUDA, the GPU numbered ``LOCAL_RANK`` (one GPU per process, whichever ``device`` names)."""
    ctx = context()
    if not ctx.enabled:
        return ctx, device
    if device.type == "cuda":
        device = torch.device("cuda", ctx.local_rank)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return ctx, device


def destroy() -> None:
    """Leave the process group, if this process joined one. Garbage is collected first: a DDP wrapper left
    for the interpreter's exit to free can abort the process there (seen with gloo, torch 2.13)."""
    if dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()


def barrier() -> None:
    """Wait for every rank (nothing to wait for in a single process)."""
    if dist.is_initialized():
        dist.barrier()


@contextlib.contextmanager
def main_first() -> Iterator[None]:
    """Rank 0 runs the block (downloading, preparing files) before the other ranks do."""
    main = context().is_main
    if not main:
        barrier()
    yield
    if main:
        barrier()


def mean(value: torch.Tensor | float) -> float:
    """The mean of a scalar over the ranks (the value itself in a single process)."""
    if not dist.is_initialized():
        return value.item() if isinstance(value, torch.Tensor) else float(value)
    device: torch.device | str
    if isinstance(value, torch.Tensor):
        device = value.device
    else:
        device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    total = torch.as_tensor(value, dtype=torch.float64, device=device).detach().reshape(1).clone()
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def wrap(model: GPT, device: torch.device, fsdp: bool) -> nn.Module:
    """The module that runs the training steps: ``model`` itself in a single process; under ``torchrun``
    DistributedDataParallel around it, or, with ``fsdp``, ``model`` sharded in place by ``fully_shard``
    (each block, then the rest), so that the optimizer must be built afterwards."""
    if not dist.is_initialized():
        return model
    if fsdp:
        from torch.distributed.fsdp import fully_shard

        for block in model.blocks:
            fully_shard(block)
        # the ignore: torch types the result as FSDPModule; it is ``model`` itself, its class now a subclass
        # of both FSDPModule and GPT
        return fully_shard(model)  # type: ignore[return-value]
    device_ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids, gradient_as_bucket_view=True)


def gradient_sync(module: nn.Module, enabled: bool) -> contextlib.AbstractContextManager:
    """Around the forward and backward of a micro-batch: DDP skips its gradient all-reduce unless ``enabled``
    (the step's last micro-batch). FSDP reduce-scatters after every micro-batch, keeping gradients sharded."""
    if enabled or not isinstance(module, nn.parallel.DistributedDataParallel):
        return contextlib.nullcontext()
    return module.no_sync()


def is_sharded(model: nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def full_state(model: GPT, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    """Model and optimizer state dicts of the whole model. A sharded model's are gathered onto the CPU of
    rank 0 (every rank must call this; the others get empty dicts) in the format of
    ``torch.distributed.checkpoint.state_dict``."""
    if not is_sharded(model):
        return model.state_dict(), optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    return get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_full_state(
    model: GPT, optimizer: torch.optim.Optimizer, model_state: dict, optim_state: dict
) -> None:
    """Load what :func:`full_state` returned (read from a checkpoint by every rank) into ``model`` and
    ``optimizer``; a sharded model keeps its own shard of each tensor."""
    if not is_sharded(model):
        model.load_state_dict(model_state)
        optimizer.load_state_dict(optim_state)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    set_state_dict(
        model,
        optimizer,
        model_state_dict=model_state,
        optim_state_dict=optim_state,
        options=StateDictOptions(full_state_dict=True),
    )


def unsharded(model: GPT, cfg: GPTConfig) -> GPT:
    """A sharded model's weights as a plain GPT on the CPU of rank 0 (every rank must call this; the other
    ranks get ``model`` back); an unsharded model as it is."""
    if not is_sharded(model):
        return model
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if not context().is_main:
        return model
    full = GPT(cfg)
    full.load_state_dict(state)
    return full
