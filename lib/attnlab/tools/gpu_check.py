"""A throughput check of the GPU training path (``make gpu-check``): each paper's language models trained by
:func:`attnlab.training.trainer.train` at ``gpu`` scale for a few hundred steps, on random tokens (throughput
does not depend on the text), with the precision and compilation of their presets.

    # CUDA; starts no model after --budget-s (360 s)
    python -m attnlab.tools.gpu_check
    python -m attnlab.tools.gpu_check --device cpu --steps 5   # the same code on the CPU, smoke-scale models

The models: XSA's sizes as SA and XSA; S-D routing's probe size in each variant; the contribution-weights
paper's own GPT; QK-speed's SQuAD model (trained as a language model on its context). For each it prints the
median step time, tokens/s, the model FLOPs utilisation (MFU: 6 N + attention FLOPs per token, PaLM's count,
against the device's dense bf16 peak from :data:`PEAK_BF16_TFLOPS`, or ``--peak-tflops`` /
``ATTNLAB_PEAK_TFLOPS``) and the peak memory; then each variant's step-time ratio to SA of the same size
(XSA/SA among them). Models that would start after ``--budget-s`` are skipped. Without CUDA (and without
``--device cpu``) it says so and exits with status 1.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from attnlab.runner.params import SCALES
from attnlab.runner.plan import flops_per_token
from attnlab.training.cache import RunSpec
from attnlab.training.trainer import train

# Dense bf16 tensor-core peaks (TFLOP/s, no sparsity), matched in order against torch.cuda.get_device_name().
PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIe", 756.0),
    ("H100", 989.0),
    ("H200", 989.0),
    ("B200", 2250.0),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
)
PEAK_ENV = "ATTNLAB_PEAK_TFLOPS"


@dataclass(frozen=True)
class Case:
    paper: str
    size: str
    variant: str
    spec: RunSpec


def cases(scale: str) -> list[Case]:
    """The language models each paper trains at ``scale``, built by the papers' own presets."""
    from attnlab.papers import contribution_weights, qk_speed, sd_routing, xsa

    x = xsa.configure(scale=scale, device="cpu")
    out = [Case("xsa", size, kind, x.spec(size, kind, 0)) for size in x.sizes for kind in xsa.KINDS]
    sd = sd_routing.configure(scale=scale, device="cpu")
    out += [Case("sd_routing", sd.probe, v, sd.spec(sd.probe, v, 0)) for v in sd_routing.VARIANTS]
    own = contribution_weights.PRESETS[scale].own
    out.append(Case("contribution", "own GPT", "sa", RunSpec(own.model, own.train, own.corpus)))
    squad = qk_speed.PRESETS[scale].squad
    out.append(Case("qk_speed", "SQuAD", "sa", RunSpec(squad.model, squad.train)))
    return out


def peak_tflops(device: torch.device, override: float | None) -> float | None:
    """The device's dense bf16 peak: ``override``, else ``ATTNLAB_PEAK_TFLOPS``, else the table (CUDA)."""
    if override is not None:
        return override
    if PEAK_ENV in os.environ:
        return float(os.environ[PEAK_ENV])
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def flash_sdpa(device: torch.device) -> str:
    """Whether the flash kernel of ``F.scaled_dot_product_attention`` runs causal bf16 attention here."""
    if device.type != "cuda":
        return "n/a on the CPU"
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 4, 256, 64, device=device, dtype=torch.bfloat16)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
    except RuntimeError as err:
        return f"unavailable ({str(err).splitlines()[0]})"
    return "available"


def measure(case: Case, steps: int, device: torch.device, peak: float | None) -> dict:
    """Train ``case`` for ``steps`` steps; the median step time leaves out the first fifth of the steps
    (compilation, warm-up) and the last (which validates)."""
    model = case.spec.model
    cfg = replace(case.spec.train, steps=steps, eval_every=steps, eval_batches=1, checkpoint_every=steps)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(model.vocab_size, (max(2**20, 4 * cfg.batch_size * cfg.seq_len),), generator=g)
    stamps: list[float] = []

    def stamp(step: int) -> None:
        stamps.append(time.perf_counter())

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    train(
        model, cfg, {"train": tokens, "validation": tokens}, device=str(device), progress=False, on_step=stamp
    )
    intervals = [b - a for a, b in itertools.pairwise(stamps)][:-1] or [stamps[-1] - stamps[0]]
    step_s = statistics.median(intervals[len(intervals) // 5 :])
    tokens_per_s = cfg.batch_size * cfg.seq_len / step_s
    flops = flops_per_token(model, cfg.seq_len) * tokens_per_s
    return {
        "step_ms": 1e3 * step_s,
        "tokens_per_s": tokens_per_s,
        "mfu": None if peak is None else flops / (peak * 1e12),
        "peak_gib": torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
        "precision": f"{cfg.precision}{' compiled' if cfg.compile else ''}",
    }


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.tools.gpu_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--steps", type=int, default=300, help="training steps per model (default 300)")
    parser.add_argument(
        "--scale", choices=SCALES, help="presets to train (default: gpu on CUDA, smoke on the CPU)"
    )
    parser.add_argument("--peak-tflops", type=float, help=f"the device's dense bf16 peak (or {PEAK_ENV})")
    parser.add_argument("--budget-s", type=float, default=360, help="start no model after this (s)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(
            f"gpu-check: no CUDA device here (torch {torch.__version__}: torch.cuda.is_available() is "
            "False).\n"
            "Run it on a machine with an NVIDIA GPU, or try the code path on the CPU:\n"
            "  python -m attnlab.tools.gpu_check --device cpu --steps 5",
            file=sys.stderr,
        )
        return 1
    if args.steps < 2:
        parser.error("--steps must be at least 2")
    scale = args.scale or ("gpu" if device.type == "cuda" else "smoke")
    peak = peak_tflops(device, args.peak_tflops)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}; bf16 peak {_fmt(peak, '.4g')} TFLOP/s")
    print(f"flash SDPA: {flash_sdpa(device)}; scale {scale}, {args.steps} steps per model\n")
    print(
        f"{'paper':<12} {'model':<9} {'variant':<8} {'precision':<14} {'step ms':>9} {'tokens/s':>11} "
        f"{'MFU':>6} {'peak GiB':>8}",
        flush=True,
    )
    start, results = time.perf_counter(), {}
    for case in cases(scale):
        row = f"{case.paper:<12} {case.size:<9} {case.variant:<8}"
        if time.perf_counter() - start > args.budget_s:
            print(f"{row} skipped: past the {args.budget_s:.0f} s budget")
            continue
        r = results[case.paper, case.size, case.variant] = measure(case, args.steps, device, peak)
        print(
            f"{row} {r['precision']:<14} {r['step_ms']:>9.1f} {r['tokens_per_s']:>11,.0f} "
            f"{_fmt(r['mfu'], '.1%'):>6} {_fmt(r['peak_gib'], '.2f'):>8}",
            flush=True,
        )
    print()
    for (paper, size, variant), r in results.items():
        if variant != "sa" and (paper, size, "sa") in results:
            ratio = r["step_ms"] / results[paper, size, "sa"]["step_ms"]
            print(f"{variant.upper()}/SA step time, {paper} {size}: {ratio:.3f}")
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
