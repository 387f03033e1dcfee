"""Benchmarks of the trainer's own cost (not tests; numbers depend on the machine):

* overhead: step time of :func:`attnlab.training.trainer.train` against a bare PyTorch loop (forward,
  backward, clipping, AdamW) on the same model and batch size; the difference is batch sampling, the
  schedule, the loss read-back and bookkeeping (target: under 5 %);
* data: tokens/s that :func:`attnlab.training.trainer.sample_batch` delivers from memory and from
  memory-mapped shards, against the tokens/s a training step consumes.

From the command line:

    python -m attnlab.tools.trainer_bench [--device cpu] [--steps 40]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from attnlab.data import shards
from attnlab.model import GPT, GPTConfig
from attnlab.training.optim import make_optimizer
from attnlab.training.trainer import TrainConfig, resolve_device, sample_batch, train

# About 50-100 ms a step on one CPU thread.
MODEL = GPTConfig(n_layer=4, d_model=128, n_head=4, head_dim=32, block_size=128, attn="xsa")
CFG = TrainConfig(batch_size=8, seq_len=128, lr=1e-3, warmup_steps=5)


def random_tokens(n: int, vocab: int = 256, seed: int = 0) -> torch.Tensor:
    return torch.randint(vocab, (n,), generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)


def bare_step_times(model_cfg: GPTConfig, cfg: TrainConfig, steps: int, device: torch.device) -> list[float]:
    """Seconds per step of a plain loop on one fixed batch: forward, backward, clip, AdamW."""
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg).to(device)
    opt = make_optimizer(model, cfg)
    x, y = sample_batch(random_tokens(2**16), cfg.batch_size, cfg.seq_len, torch.Generator().manual_seed(0))
    x, y = x.to(device), y.to(device)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return times


def trainer_step_times(
    model_cfg: GPTConfig, cfg: TrainConfig, steps: int, device: torch.device
) -> list[float]:
    """Seconds between the trainer's completed steps (the last, which validates, left out)."""
    tokens = random_tokens(2**16)
    stamps: list[float] = []
    cfg = replace(cfg, steps=steps + 1, eval_every=steps + 1, eval_batches=1)
    data = {"train": tokens, "validation": tokens}
    train(
        model_cfg,
        cfg,
        data,
        device=str(device),
        progress=False,
        on_step=lambda s: stamps.append(time.perf_counter()),
    )
    return [b - a for a, b in itertools.pairwise(stamps)][:-1]


def loader_tokens_per_s(tokens, cfg: TrainConfig, steps: int = 200) -> float:
    """Tokens/s of drawing training batches as the trainer does."""
    t0 = time.perf_counter()
    for step in range(steps):
        sample_batch(tokens, cfg.batch_size, cfg.seq_len, torch.Generator().manual_seed(step))
    return steps * cfg.batch_size * cfg.seq_len / (time.perf_counter() - t0)


def overhead(steps: int, rounds: int, device: torch.device) -> dict[str, float]:
    """Median step times of the trainer and the bare loop, alternated ``rounds`` times (the first tenth of
    each run's steps left out as warm-up)."""
    trainer: list[float] = []
    bare: list[float] = []
    for _ in range(rounds):
        for times, run in ((trainer, trainer_step_times), (bare, bare_step_times)):
            t = run(MODEL, CFG, steps, device)
            times.append(statistics.median(t[len(t) // 10 :]))
    t_trainer, t_bare = statistics.median(trainer), statistics.median(bare)
    return {"trainer_ms": 1e3 * t_trainer, "bare_ms": 1e3 * t_bare, "overhead": t_trainer / t_bare - 1}


def data_throughput(consumed_tokens_per_s: float) -> dict[str, float]:
    """Loader tokens/s at this benchmark's batch and at the paper's (256 x 2048), from memory and shards."""
    paper = replace(CFG, batch_size=256, seq_len=2048)
    tokens = random_tokens(50_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        writer = shards.ShardWriter(Path(tmp), "train", np.dtype("<u2"), shard_tokens=20_000_000)
        writer.write(tokens.numpy())
        writer.close()
        mapped = shards.TokenShards([Path(tmp) / f["file"] for f in writer.files], np.dtype("<u2"))
        return {
            "step_consumes": consumed_tokens_per_s,
            "memory": loader_tokens_per_s(tokens, CFG),
            "shards": loader_tokens_per_s(mapped, CFG),
            "memory_paper_batch": loader_tokens_per_s(tokens, paper, steps=10),
            "shards_paper_batch": loader_tokens_per_s(mapped, paper, steps=10),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.tools.trainer_bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=40, help="timed steps per run")
    parser.add_argument("--rounds", type=int, default=3, help="trainer / bare-loop alternations")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    o = overhead(args.steps, args.rounds, device)
    print(
        f"step time ({MODEL.n_layer}L-{MODEL.d_model}d, {CFG.batch_size} x {CFG.seq_len} tokens, "
        f"{device.type}): "
        f"trainer {o['trainer_ms']:.1f} ms, bare loop {o['bare_ms']:.1f} ms, overhead {o['overhead']:+.1%}"
    )
    d = data_throughput(CFG.batch_size * CFG.seq_len / (o["trainer_ms"] / 1e3))
    print(f"a training step consumes {d['step_consumes']:,.0f} tokens/s; sample_batch delivers:")
    for key in ("memory", "shards", "memory_paper_batch", "shards_paper_batch"):
        print(f"  {key:<20} {d[key]:>14,.0f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
