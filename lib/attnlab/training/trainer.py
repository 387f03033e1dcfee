"""Language-model trainer: AdamW with per-group learning rates, linear warm-up then cosine decay
(:mod:`attnlab.training.optim`), gradient clipping, periodic validation, atomic checkpoints and bit-for-bit
resume, all through the one training loop of :mod:`attnlab.training.loop`.

Batches are drawn from a generator seeded by (seed, step), so a run resumed from a checkpoint sees exactly the
batches an uninterrupted run would have seen; with the same thread count a CPU run is repeatable bit for bit.

Under ``torchrun`` the same code trains data-parallel (see :mod:`attnlab.training.distributed`): every rank
draws the global batch and trains on its slice of it, so N processes compute what one would, to float
rounding. ``python -m attnlab.training`` is the command line (:mod:`attnlab.training.launch`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Union

import numpy as np
import torch

from attnlab import fields, realisation
from attnlab.errors import ConfigError
from attnlab.model import GPT, GPTConfig
from attnlab.runner.params import check_device
from attnlab.training import distributed
from attnlab.training.loop import Checkpoint, optimise, progress_bar
from attnlab.training.optim import lr_schedule, make_optimizer

if TYPE_CHECKING:
    from attnlab.data.shards import TokenShards

# a split's tokens: a 1-D tensor in memory, or memory-mapped shards (indexed alike)
Tokens = Union[torch.Tensor, "TokenShards"]


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 1e-3
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio (XSA paper: 1/10)
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    lr_scale: dict[str, float] = field(default_factory=dict)  # per GPT.param_group multipliers
    eval_every: int = 100
    eval_batches: int = 8  # validation: eval_batches x batch_size fixed windows
    checkpoint_every: int = 250
    seed: int = 0
    precision: str = "fp32"  # "bf16": bfloat16 autocast for forward passes (CUDA, gpu/paper presets)
    compile: bool = False  # torch.compile the model for the training steps

    def __post_init__(self) -> None:
        fields.positive_ints(self, "steps", "batch_size", "seq_len", "eval_every", "eval_batches")
        fields.positive_ints(self, "checkpoint_every")
        fields.non_negative_ints(self, "warmup_steps", "seed")
        if self.seed >= 2**63:
            raise ConfigError(f"TrainConfig.seed must be below 2**63 (a torch seed), got {self.seed!r}")
        fields.positive_floats(self, "lr", "grad_clip")
        fields.non_negative_floats(self, "weight_decay", "min_lr_ratio")
        fields.one_of(self, "precision", ("fp32", "bf16"))
        fields.bools(self, "compile")
        if self.min_lr_ratio > 1:
            raise ConfigError(f"TrainConfig.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        betas = self.betas
        if not (
            isinstance(betas, (tuple, list))
            and len(betas) == 2
            and all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1 for b in betas)
        ):
            raise ConfigError(f"TrainConfig.betas must be two numbers in [0, 1), got {betas!r}")
        if not isinstance(self.lr_scale, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
            for k, v in self.lr_scale.items()
        ):
            raise ConfigError(
                f"TrainConfig.lr_scale must map group names to numbers >= 0, got {self.lr_scale!r}"
            )

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    model: GPT
    history: dict[str, list[float]]  # step, train_loss, lr (every step); val_step, val_loss
    timing: dict[str, float]  # seconds and steps of timed training (validation excluded), tokens_per_step
    cached: bool = False

    @property
    def final_val_loss(self) -> float:
        return self.history["val_loss"][-1]

    @property
    def tokens_per_s(self) -> float:
        """Training throughput of the steps this process (or the run it resumed) actually computed."""
        return self.timing["steps"] * self.timing["tokens_per_step"] / max(self.timing["seconds"], 1e-9)


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The device a ``device`` parameter names ("auto": CUDA if available, else the CPU), checked once; a
    ``torch.device`` is already resolved and passes through, so a run resolves its device one time."""
    if isinstance(device, torch.device):
        return device
    if check_device(device) == "auto":  # the one device check, shared with the notebooks' parameters
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _step_generator(seed: int, step: int) -> torch.Generator:
    state = np.random.SeedSequence([seed, step]).generate_state(2, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state) >> 1)


def sample_batch(
    tokens: Tokens,
    batch_size: int,
    seq_len: int,
    generator: torch.Generator,
    rows: slice = slice(None),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of a 1-D token tensor: inputs and next-token targets, each (B, T) int64. ``rows``
    selects some of the batch's windows (a rank's slice) without changing which windows the batch holds."""
    starts = torch.randint(len(tokens) - seq_len - 1, (batch_size,), generator=generator)[rows]
    windows = tokens[starts[:, None] + torch.arange(seq_len + 1)].long()  # (B, T + 1)
    return windows[:, :-1], windows[:, 1:]


def validation_windows(tokens: Tokens, n: int, seq_len: int) -> torch.Tensor:
    """``n`` evenly spaced windows of length seq_len + 1 over the split: the same for every run and seed."""
    starts = torch.linspace(0, len(tokens) - seq_len - 1, n).long()
    return tokens[starts[:, None] + torch.arange(seq_len + 1)].long()  # (n, T + 1)


def _autocast(device: torch.device, precision: str) -> torch.autocast:
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=precision == "bf16")


@torch.no_grad()
def evaluate(
    model: GPT, windows: torch.Tensor, batch_size: int, device: torch.device, precision: str = "fp32"
) -> float:
    """Mean next-token cross-entropy (nats) over validation windows."""
    model.eval()
    total = 0.0
    for chunk in windows.split(batch_size):
        chunk = chunk.to(device)
        with _autocast(device, precision):
            _, loss = model(chunk[:, :-1], chunk[:, 1:])
        total += loss.item() * len(chunk)
    model.train()
    return total / len(windows)


def _forward_backward(
    step_model: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    wrapped: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    micro: int,
    device: torch.device,
    precision: str,
) -> torch.Tensor:
    """Gradients of the mean loss over a rank's rows, in passes of ``micro`` rows (DDP synchronises only the
    last); returns that mean loss."""
    n = len(x) // micro
    losses = []
    for i, (xm, ym) in enumerate(zip(x.split(micro), y.split(micro), strict=True)):
        with distributed.gradient_sync(wrapped, i == n - 1):
            with _autocast(device, precision):
                _, loss = step_model(xm.to(device), ym.to(device))
            (loss / n).backward()
        losses.append(loss.detach())
    return torch.stack(losses).mean()


def train(
    model_cfg: GPTConfig,
    cfg: TrainConfig,
    data: Mapping[str, Tokens],
    *,
    device: str | torch.device = "auto",
    run_dir: Path | None = None,
    progress: bool = True,
    desc: str = "train",
    on_step: Callable[[int], None] | None = None,
    fsdp: bool = False,
    micro_batch: int | None = None,
) -> TrainResult:
    """Train a GPT on ``data["train"]``, validating on ``data["validation"]`` (1-D token tensors, or
    :class:`attnlab.data.shards.TokenShards`).

    With ``run_dir``, a checkpoint is written there every ``checkpoint_every`` steps and an existing one is
    resumed from; the resumed run ends with the same weights and losses as an uninterrupted one.
    ``on_step(step)`` is called after each completed step (tests use it to simulate an interruption).

    Under ``torchrun`` each rank trains on its slice of every global batch of ``batch_size`` rows with
    DistributedDataParallel, or with ``fsdp`` FSDP-sharded; losses are averaged over the ranks, only rank 0
    writes checkpoints and shows progress, and every rank resumes from the same checkpoint. With ``fsdp`` the
    returned model on rank 0 is a full copy on the CPU (the other ranks get their shards). ``micro_batch``
    rows per forward pass (default, or when larger: all of a rank's rows) accumulate the gradient of a step
    in several passes; without it, the realisation :mod:`attnlab.realisation` names decides.
    """
    if cfg.seq_len > model_cfg.block_size:
        raise ConfigError(
            f"TrainConfig.seq_len={cfg.seq_len} exceeds GPTConfig.block_size={model_cfg.block_size}"
        )
    if micro_batch is not None and (not isinstance(micro_batch, int) or micro_batch < 1):
        raise ConfigError(f"micro_batch must be a positive integer, got {micro_batch!r}")
    ctx, dev = distributed.setup(resolve_device(device))
    rows = ctx.shard(cfg.batch_size)  # this rank's rows of every global batch
    local_rows = rows.stop - rows.start
    micro = min(micro_batch or realisation.micro_batch(local_rows) or local_rows, local_rows)
    if local_rows % micro:
        raise ValueError(f"micro_batch={micro} does not divide the {local_rows} rows per process")
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg).to(dev)
    wrapped = distributed.wrap(model, dev, fsdp)
    sharded = distributed.is_sharded(model)
    opt = make_optimizer(model, cfg)
    schedule = lr_schedule(cfg)
    history: dict[str, list[float]] = {k: [] for k in ("step", "train_loss", "lr", "val_step", "val_loss")}
    timing = {"seconds": 0.0, "steps": 0, "tokens_per_step": cfg.batch_size * cfg.seq_len}

    def capture() -> dict:
        model_state, opt_state = distributed.full_state(model, opt)
        return {
            "model": model_state,
            "optimizer": opt_state,
            "history": history,
            "timing": timing,
            "sharded": sharded,
        }

    def restore(state: dict) -> None:
        if state["sharded"] != sharded:
            mode = "with" if state["sharded"] else "without"
            raise ValueError(f"{run_dir} was written {mode} FSDP sharding: resume it {mode} FSDP")
        distributed.load_full_state(model, opt, state["model"], state["optimizer"])
        history.update(state["history"])
        timing.update(state["timing"])

    checkpoint = None  # a corrupt checkpoint is not resumed from: that could store a wrong result
    if run_dir is not None:
        checkpoint = Checkpoint(
            run_dir / "checkpoint.pt",
            cfg.checkpoint_every,
            capture,
            restore,
            write=ctx.is_main,
            load_kwargs={"map_location": "cpu" if sharded else dev},
        )
    start = checkpoint.resume() if checkpoint is not None else 0
    n_val = cfg.eval_batches * cfg.batch_size
    val = validation_windows(data["validation"], n_val, cfg.seq_len)[ctx.shard(n_val)]

    def validate() -> float:
        return distributed.mean(evaluate(model, val, micro, dev, cfg.precision))

    if start == 0:
        history["val_step"].append(0)
        history["val_loss"].append(validate())
    step_model = torch.compile(wrapped) if cfg.compile else wrapped
    started = [0.0]

    def gradient(step: int) -> float:
        started[0] = time.perf_counter()
        x, y = sample_batch(data["train"], cfg.batch_size, cfg.seq_len, _step_generator(cfg.seed, step), rows)
        return distributed.mean(_forward_backward(step_model, wrapped, x, y, micro, dev, cfg.precision))

    def record(done: int, loss: float) -> None:
        timing["seconds"] += time.perf_counter() - started[0]
        timing["steps"] += 1
        history["step"].append(done)
        history["train_loss"].append(loss)
        history["lr"].append(schedule(done - 1))
        if done % cfg.eval_every == 0 or done == cfg.steps:
            history["val_step"].append(done)
            history["val_loss"].append(validate())
            bar.set_postfix(train=f"{loss:.3f}", val=f"{history['val_loss'][-1]:.3f}", refresh=False)

    bar = progress_bar(cfg.steps, start, desc, progress and ctx.is_main)
    optimise(
        model,
        opt,
        cfg.steps,
        gradient,
        schedule,
        start=start,
        grad_clip=cfg.grad_clip,
        record=record,
        checkpoint=checkpoint,
        on_step=on_step,
        label=desc,
        bar=bar,
    )
    bar.close()
    return TrainResult(distributed.unsharded(model, model_cfg), history, timing)
