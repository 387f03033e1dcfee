"""XSA Fig. 1 diagnostics over a trained model: the similarity-bias metrics of every layer, from the
intermediates of the forward pass itself (``GPT.run_with_cache``); Fig. 6's attention on the sinks; and
Fig. 2's block timing, SA and XSA alternated within one process so that their times pair by repeat."""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd
import torch

from attnlab.metrics import similarity_bias
from attnlab.model import GPT, Block, GPTConfig
from attnlab.tools.benchmark import block_cost


@torch.no_grad()
def similarity_bias_by_layer(
    model: GPT, tokens: torch.Tensor, batch_size: int = 32, memory_gb: float = 8.0
) -> pd.DataFrame:
    """``similarity_bias`` for every layer over sequences ``tokens`` (N, T): one row per (layer, sequence,
    head) with a column per metric; aggregate with ``groupby("layer")``. At most ``batch_size`` sequences
    per forward pass, fewer where their captured intermediates would exceed ``memory_gb``
    (:func:`cache_bytes_per_sequence`: XSA's 2.7B model at T = 2048 keeps 16 GiB per sequence)."""
    model.eval()
    device = next(model.parameters()).device
    fits = int(memory_gb * 2**30 // cache_bytes_per_sequence(model.cfg, tokens.shape[1]))
    batch_size = max(1, min(batch_size, fits))
    frames = []
    for start in range(0, len(tokens), batch_size):
        _, cache = model.run_with_cache(tokens[start : start + batch_size].to(device))
        for layer, captured in enumerate(cache):
            values = similarity_bias(captured)
            B, H = values["cos_vv"].shape
            frame = pd.DataFrame({k: t.flatten().cpu().numpy() for k, t in values.items()})
            frame.insert(0, "head", list(range(H)) * B)
            frame.insert(0, "sequence", [start + b for b in range(B) for _ in range(H)])
            frame.insert(0, "layer", layer)
            frames.append(frame)
    model.train()
    return pd.concat(frames, ignore_index=True)


def cache_bytes_per_sequence(cfg: GPTConfig, seq_len: int) -> int:
    """Bytes that ``GPT.run_with_cache`` keeps for one float32 sequence of ``seq_len``: every layer's
    attention pattern (H, T, T) and its q, k, v, y and z (H, T, head dim each, at most)."""
    per_layer = cfg.n_head * seq_len * (seq_len + 5 * max(cfg.layer_head_dims))
    return 4 * cfg.n_layer * per_layer


@torch.no_grad()
def attention_to_sinks_by_layer(model: GPT, tokens: torch.Tensor, batch_size: int = 32) -> pd.DataFrame:
    """Fig. 6, measured: for every layer, the attention mass the real tokens put on the model's learned sink
    tokens (summed over the sinks) and on the first real token, averaged over real query positions i >= 1
    (position 0 is left out: without sinks it can attend only to itself), heads and sequences ``tokens``
    (N, T). Beside each, the mass uniform causal attention would give: n_sink / (n_sink + i + 1) and
    1 / (n_sink + i + 1). One row per layer."""
    model.eval()
    device = next(model.parameters()).device
    S = model.cfg.n_sink
    fits = int(8 * 2**30 // cache_bytes_per_sequence(model.cfg, tokens.shape[1] + S))
    batch_size = max(1, min(batch_size, fits))
    sums: dict[int, torch.Tensor] = {}
    for start in range(0, len(tokens), batch_size):
        _, cache = model.run_with_cache(tokens[start : start + batch_size].to(device))
        for layer, captured in enumerate(cache):
            real = captured["pattern"][:, :, S + 1 :].float()  # (B, H, T - 1, S + T): queries i >= 1
            masses = torch.stack((real[..., :S].sum(-1), real[..., S]))  # (2, B, H, T - 1)
            sums[layer] = sums.get(layer, 0) + masses.mean(-1).sum((1, 2)).cpu()  # (2,)
    model.train()
    T = tokens.shape[1]
    keys = S + torch.arange(1, T, dtype=torch.float64) + 1  # keys seen by real query i >= 1
    heads = model.cfg.n_head
    return pd.DataFrame(
        {
            "layer": layer,
            "sink_mass": float(total[0]) / (len(tokens) * heads),
            "first_mass": float(total[1]) / (len(tokens) * heads),
            "sink_uniform": float((S / keys).mean()),
            "first_uniform": float((1 / keys).mean()),
        }
        for layer, total in sums.items()
    )


def alternated_block_costs(
    cfg: GPTConfig,
    kinds: tuple[str, ...],
    batch_size: int,
    seq_len: int,
    device: torch.device,
    *,
    repeats: int,
    warmup: int = 3,
    dtype: torch.dtype = torch.float32,
) -> pd.DataFrame | None:
    """Fig. 2: forward+backward time (ms) of one attention + FFN block of each of ``kinds``, timed in
    alternation in this one process: after ``warmup`` untimed steps of each kind, every repeat times one step
    of each kind back to back, in the kinds' order on even repeats and in reverse on odd ones (neither kind
    always runs first), so that a drift of the machine (clock, cache, other load) falls on both kinds of a
    repeat alike and their ratio pairs by repeat. Memory (MiB) per kind as :func:`attnlab.tools.benchmark.
    block_cost` measures it (deterministic: the same in every repeat). One row per (kind, repeat): ``kind``,
    ``repeat``, ``time_ms``, ``memory_mib``. None (and a printed note) when a kind runs out of device memory,
    so that the largest points of a grid on a smaller GPU are left out and every point kept compares all
    kinds. On CUDA each step is timed with CUDA events."""
    try:
        times = _alternated_times(cfg, kinds, batch_size, seq_len, device, repeats, warmup, dtype)
        memory = {
            kind: block_cost(cfg, kind, batch_size, seq_len, device, warmup=0, repeats=1, dtype=dtype)[
                "memory_mib"
            ]
            for kind in kinds
        }
    except torch.OutOfMemoryError:
        if device.type == "cuda":
            torch.cuda.empty_cache()
        print(f"d_model {cfg.d_model}, T {seq_len}, batch {batch_size}: a kind ran out of memory; left out")
        return None
    rows = [
        {"kind": kind, "repeat": repeat, "time_ms": times[kind, repeat], "memory_mib": memory[kind]}
        for kind in kinds
        for repeat in range(repeats)
    ]
    return pd.DataFrame(rows)


def _alternated_times(
    cfg: GPTConfig,
    kinds: tuple[str, ...],
    batch_size: int,
    seq_len: int,
    device: torch.device,
    repeats: int,
    warmup: int,
    dtype: torch.dtype,
) -> dict[tuple[str, int], float]:
    """``{(kind, repeat): ms}`` of :func:`alternated_block_costs`: one input for every kind's block."""
    torch.manual_seed(0)
    blocks = {kind: Block(cfg, kind).to(device=device, dtype=dtype) for kind in kinds}
    x = torch.randn(batch_size, seq_len, cfg.d_model, device=device, dtype=dtype, requires_grad=True)

    def step(kind: str) -> Callable[[], None]:
        def run() -> None:
            blocks[kind](x).sum().backward()

        return run

    for kind in kinds:
        for _ in range(warmup):
            step(kind)()
    times = {}
    for repeat in range(repeats):
        for kind in kinds if repeat % 2 == 0 else kinds[::-1]:
            times[kind, repeat] = _timed(step(kind), device)
    return times


def _timed(step: Callable[[], None], device: torch.device) -> float:
    """Milliseconds of one call of ``step`` on ``device`` (CUDA events on CUDA, wall clock elsewhere)."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize(device)
        return float(start.elapsed_time(end))
    t0 = time.perf_counter()
    step()
    return 1e3 * (time.perf_counter() - t0)
