"""Costs the papers report: time and memory of one transformer block (attention + FFN), forward and backward
(XSA paper, Fig. 2), and of contribution weights against the naive tensor of weighted terms (contribution
weights paper, cost section).

Block timing: ``warmup`` untimed iterations, then ``repeats`` timed ones; the median is reported. On CUDA each
iteration is timed with CUDA events and memory is the peak allocated during one iteration, above what was
allocated before it. On the CPU there is no allocator statistic, so memory is the activation memory a training
step holds: the bytes of the distinct tensors autograd saves for the backward pass.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import torch

from attnlab.model import Block, GPTConfig


def _saved_bytes(block: Block, x: torch.Tensor) -> int:
    """Bytes of the distinct tensors autograd saves for backward in one forward pass of ``block``."""
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x).sum().backward()
    return sum(storages.values())


def block_cost(
    cfg: GPTConfig,
    kind: str,
    batch_size: int,
    seq_len: int,
    device: torch.device,
    *,
    warmup: int = 3,
    repeats: int = 10,
    dtype: torch.dtype = torch.float32,
) -> dict[str, float]:
    """Median forward+backward time (ms) and memory (MiB) of one block of kind ``kind`` of ``cfg``."""
    torch.manual_seed(0)
    block = Block(cfg, kind).to(device=device, dtype=dtype)
    x = torch.randn(batch_size, seq_len, cfg.d_model, device=device, dtype=dtype, requires_grad=True)

    def step() -> None:
        block(x).sum().backward()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append(1e3 * (time.perf_counter() - t0))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        step()
        torch.cuda.synchronize(device)
        memory = torch.cuda.max_memory_allocated(device) - before
    else:
        memory = _saved_bytes(block, x)
    return {"time_ms": statistics.median(times), "memory_mib": memory / 2**20}


def block_costs(
    cfg: GPTConfig,
    kinds: tuple[str, ...],
    batch_size: int,
    seq_len: int,
    device: torch.device,
    *,
    repeats: int = 10,
    dtype: torch.dtype = torch.float32,
) -> dict[str, dict[str, float]] | None:
    """``block_cost`` of each kind at one point of a benchmark grid; None (and a printed note) when one of
    them runs out of device memory, so that the largest points of a grid on a smaller GPU are left out
    instead of ending the run, and every point kept compares all kinds."""
    costs = {}
    for kind in kinds:
        try:
            costs[kind] = block_cost(cfg, kind, batch_size, seq_len, device, repeats=repeats, dtype=dtype)
        except torch.OutOfMemoryError:
            if device.type == "cuda":
                torch.cuda.empty_cache()
            print(
                f"d_model {cfg.d_model}, T {seq_len}, batch {batch_size}: {kind} ran out of memory; left out"
            )
            return None
    return costs


_COST_SCRIPT = """
import json, sys, time, torch
from attnlab.metrics import contribution_weights
impl, H, T, D, repeats, device = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
torch.manual_seed(0)
scores = torch.randn(1, H, T, T, device=device).masked_fill(~torch.ones(T, T, dtype=torch.bool,
    device=device).tril(), float("-inf"))
pattern, values = scores.softmax(-1), torch.randn(1, H, T, D, device=device)
del scores

def naive(pattern, values):
    terms = pattern[..., None] * values[:, :, None]  # (B, H, T, T, D): every weighted term a_ij v_j
    o = terms.sum(3)  # (B, H, T, D)
    return (terms * o[:, :, :, None]).sum(-1) / (o * o).sum(-1)[..., None]

fn = contribution_weights if impl == "contribution_weights" else naive
def hwm():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))
sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
if device == "cpu":
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak resident set size (VmHWM) to the current one
    before = hwm()
else:
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
fn(pattern, values); sync()
times = []
for _ in range(repeats):
    t = time.perf_counter(); fn(pattern, values); sync(); times.append(time.perf_counter() - t)
peak = hwm() if device == "cpu" else torch.cuda.max_memory_allocated()
print(json.dumps({"seconds": sorted(times)[len(times) // 2], "peak_gb": (peak - before) / 1e9}))
"""


def contribution_cost(impl: str, H: int, T: int, D: int, repeats: int, device: torch.device) -> dict:
    """Contribution weights (``impl="contribution_weights"``, ``attnlab.metrics``) or the naive
    (B, H, T, T, D) tensor of weighted terms (``impl="naive"``) on a random causal pattern and values,
    batch 1. One (impl, T) measurement in a fresh process, so that its peak memory is its own: median
    seconds of ``repeats`` calls after a warm-up, and the peak memory above the inputs (CPU: peak resident
    set size, reset after the inputs are made, Linux only; CUDA: peak allocated)."""
    dev = "cpu" if device.type == "cpu" else str(device)
    args = [impl, H, T, D, repeats, dev]
    out = subprocess.run(
        [sys.executable, "-c", _COST_SCRIPT, *map(str, args)], capture_output=True, text=True, check=True
    )
    return {"impl": impl, "T": T, **json.loads(out.stdout.strip().splitlines()[-1])}
