"""``make bench``: where the time goes, side by side in one run (numbers depend on the machine; not tests).

1. the trainer against a bare PyTorch loop (``trainer_bench.overhead``);
2. each attention kind's training-step time relative to SA, same model and batch;
3. contribution weights against the naive (B, H, T, T, D) tensor of weighted terms (``contribution_cost``);
4. QK-speed's circuits trained batched against one by one (``papers.qk_speed.batched.benchmark``);
5. the reduced dynamics of QK-speed Fig. 4: the authors' fixed-step RK4 against the adaptive solve;
6. contribution weights on pinned models, part by part, computed afresh (a temporary results cache): load,
   faithfulness curves, sinks, downstream under the interventions (``protocol_times``); Gemma-3-270M with the
   notebook's main protocol in bfloat16 (``model=gemma3-270m dtype=bfloat16``), Qwen-1.5B with the scale
   section's reduced one;
7. the reuse measures (``attnlab.reuse.measure``) on pinned models, part by part (``reuse_times``):
   SmolLM2-135M on 19 tokens, Qwen2.5-Coder-1.5B on 256 (the issue's targets: 10 s and 2 minutes on two
   cores).

From the command line:

    python -m attnlab.tools.bench [--device cpu] [--quick] [--only circuits ...] [--full gemma3-270m ...]
        [--reduced qwen2.5-coder-1.5b ...] [--reuse smollm2:19 qwen2.5-coder-1.5b:256 ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace

import torch

from attnlab.attention import ATTENTION_KINDS
from attnlab.papers.qk_speed.batched import benchmark as circuit_benchmark
from attnlab.tools.benchmark import contribution_cost
from attnlab.tools.trainer_bench import CFG, MODEL, overhead, trainer_step_times
from attnlab.training.trainer import resolve_device

SECTIONS = ("trainer", "kinds", "contribution", "circuits", "ode", "scale", "reuse")
#: Section 6's models: with the main protocol (``full``) and with the scale section's reduced one.
FULL_MODELS, REDUCED_MODELS = ("gemma3-270m",), ("qwen2.5-coder-1.5b",)
#: Section 7's models and token counts, as ``name:tokens``.
REUSE_MODELS = ("smollm2:19", "qwen2.5-coder-1.5b:256")
#: The text section 7 measures, repeated to the length wanted (the timing does not depend on the words).
REUSE_TEXT = (
    "The keys to the cabinet are on the table, where the children left them before they ran outside to "
    "play in the rain. Nobody noticed until the evening, when the cabinet had to be opened again."
)


def kind_step_times(device: torch.device, steps: int) -> dict[str, float]:
    """Median training-step seconds of ``trainer_bench.MODEL`` with every layer of each attention kind."""
    out = {}
    for kind in ATTENTION_KINDS:
        times = trainer_step_times(replace(MODEL, attn=kind), CFG, steps, device)
        out[kind] = statistics.median(times[len(times) // 5 :])
    return out


def contribution_vs_naive(device: torch.device, lengths: tuple[int, ...]) -> list[dict]:
    """Contribution weights and the naive tensor at SmolLM2-135M's shape (9 heads, width 576), batch 1."""
    return [
        contribution_cost(impl, 9, T, 576, 3, device)
        for T in lengths
        for impl in ("contribution_weights", "naive")
    ]


def ode_solvers() -> dict[str, float]:
    """Seconds for all five ratios of Fig. 4 by each solver, and the largest relative difference of their
    end states (mu_OV, mu_QK, alpha)."""
    from attnlab.papers.qk_speed.dynamics import simulate, simulate_adaptive

    rs = (0.01, 0.1, 1.0, 10.0, 100.0)
    simulate_adaptive(1.0)  # import SciPy outside the timing
    t0 = time.perf_counter()
    adaptive = [simulate_adaptive(r) for r in rs]
    t1 = time.perf_counter()
    fixed = [simulate(r, record_every=1000) for r in rs]
    t2 = time.perf_counter()
    diff = max(
        abs(getattr(a, k) - getattr(f, k)) / abs(getattr(f, k))
        for a, f in zip(adaptive, fixed, strict=True)
        for k in ("mu_ov", "mu_qk", "alpha")
    )
    return {"rk4_s": t2 - t1, "adaptive_s": t1 - t0, "max_rel_diff": diff}


def protocol_times(name: str, scale: str, device: str, full: bool) -> dict[str, float]:
    """Seconds of each part of contribution weights on pinned model ``name``: the notebook's main protocol
    at ``scale`` in the scale section's precision (``full``: ``model=<name> dtype=...``) or the scale
    section's reduced one (``contribution_weights.scale.PRESETS``), computed afresh: the results cache points
    at a temporary folder for the duration (the model weights are read from ``data/`` as usual)."""
    from attnlab.papers.contribution_weights import configure
    from attnlab.papers.contribution_weights.scale import PRESETS, experiment_for

    if full:  # in the scale section's precision (bfloat16 from cpu scale on)
        exp = configure(scale=scale, device=device, model=name, dtype=PRESETS[scale].dtype)
    else:
        exp = experiment_for(configure(scale=scale, device=device), name, PRESETS[scale])
    times: dict[str, float] = {}
    previous = os.environ.get("ATTNLAB_BUILD")
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-") as build:
        os.environ["ATTNLAB_BUILD"] = build
        try:
            parts = {"load": lambda: exp.lm, "faithfulness": exp.faithfulness, "sinks": exp.sinks}
            if exp.tasks:
                parts["downstream"] = exp.downstream
            for part, run in parts.items():
                t0 = time.perf_counter()
                run()
                times[part] = time.perf_counter() - t0
        finally:
            if previous is None:
                os.environ.pop("ATTNLAB_BUILD", None)
            else:
                os.environ["ATTNLAB_BUILD"] = previous
    times["total"] = sum(times.values())
    return times


def reuse_times(name: str, tokens: int, device: str) -> dict[str, tuple[float, float]]:
    """Seconds of each part of ``attnlab.reuse.measure`` on pinned model ``name`` over one sequence of
    ``tokens`` tokens (``REUSE_TEXT`` repeated), each as (wall clock, this process's CPU time, all threads):
    ``load`` (the float32 folder into memory, every weight read; converted first if missing, not counted),
    ``forward`` (``forward_measures``: one pass and the forward-pass measures), ``weights``
    (``weight_measures``: every head's routing split and its Gaussian null) and ``measure``, the two together
    (what ``measure`` costs, the model loaded). On a shared machine the wall clock also counts the other
    jobs' turns; the CPU time does not."""
    from attnlab import hf, reuse

    hf.checkpoint(name)  # a missing folder is converted outside the timing
    marks = [(time.perf_counter(), time.process_time())]
    lm = reuse.text_model(model=name, device=device)
    for p in lm.model.parameters():  # read in now: the weights are mapped from disk, read on first use
        p.detach().sum()
    marks.append((time.perf_counter(), time.process_time()))
    text = lm.encode(REUSE_TEXT)
    ids = torch.tensor([(text * (tokens // len(text) + 1))[:tokens]])
    reuse.forward_measures(lm.model, ids)
    marks.append((time.perf_counter(), time.process_time()))
    reuse.weight_measures(lm.model)
    marks.append((time.perf_counter(), time.process_time()))

    def span(i: int, j: int) -> tuple[float, float]:
        return marks[j][0] - marks[i][0], marks[j][1] - marks[i][1]

    return {"load": span(0, 1), "forward": span(1, 2), "weights": span(2, 3), "measure": span(1, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.tools.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="fewer steps and shorter sequences")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS, help="run only these parts")
    parser.add_argument(
        "--full", nargs="*", default=None,
        help=f"section 6's models with the main protocol (default {' '.join(FULL_MODELS)}; --quick: none)",
    )  # fmt: skip
    parser.add_argument(
        "--reduced", nargs="*", default=None,
        help=f"section 6's models, reduced protocol (default {' '.join(REDUCED_MODELS)}; --quick: smollm2)",
    )  # fmt: skip
    parser.add_argument(
        "--reuse", nargs="*", default=None, metavar="NAME:TOKENS",
        help=f"section 7's models and tokens (default {' '.join(REUSE_MODELS)}; --quick: smollm2:19)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    steps = 10 if args.quick else 30
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)

    if "trainer" in args.only:
        o = overhead(steps, 1 if args.quick else 3, device)
        print(
            f"\n1. trainer {o['trainer_ms']:.1f} ms/step vs bare loop {o['bare_ms']:.1f} ms "
            f"({MODEL.n_layer}L-{MODEL.d_model}d, {CFG.batch_size} x {CFG.seq_len} tokens): overhead "
            f"{o['overhead']:+.1%}",
            flush=True,
        )

    if "kinds" in args.only:
        kinds = kind_step_times(device, steps)
        print("\n2. training step by attention kind (every layer of that kind):")
        for kind, seconds in kinds.items():
            print(f"   {kind:<7} {1e3 * seconds:7.1f} ms   {seconds / kinds['sa']:.2f} x SA", flush=True)

    if "contribution" in args.only:
        print("\n3. contribution weights vs the naive terms tensor (9 heads, width 576, batch 1):")
        for row in contribution_vs_naive(device, (128, 256) if args.quick else (128, 256, 512)):
            ms, gb = 1e3 * row["seconds"], row["peak_gb"]
            print(f"   T {row['T']:>4} {row['impl']:<21} {ms:8.1f} ms  peak {gb:.3f} GB")

    if "circuits" in args.only:
        print(f"\n4. QK-speed circuits, batched (on {device.type}) vs one by one (on the CPU):", flush=True)
        scale = "smoke" if args.quick else "cpu"
        for key, value in circuit_benchmark(scale=scale, device=device.type).items():
            print(f"   {key:<28} {value:.4g}" if isinstance(value, float) else f"   {key:<28} {value}")

    if "ode" in args.only:
        ode = ode_solvers()
        print(
            f"\n5. Fig. 4 reduced dynamics, five ratios: RK4 (step 10) {ode['rk4_s']:.2f} s, adaptive "
            f"{1e3 * ode['adaptive_s']:.0f} ms ({ode['rk4_s'] / ode['adaptive_s']:.0f}x); end states agree "
            f"to {ode['max_rel_diff']:.1e} (relative)"
        )

    if "scale" in args.only:
        scale = "smoke" if args.quick else "cpu"
        full = args.full if args.full is not None else (() if args.quick else FULL_MODELS)
        reduced = (
            args.reduced if args.reduced is not None else (("smollm2",) if args.quick else REDUCED_MODELS)
        )
        print(
            f"\n6. contribution weights at {scale} scale on pinned models, computed afresh (seconds):",
            flush=True,
        )
        for name, is_full in [(n, True) for n in full] + [(n, False) for n in reduced]:
            times = protocol_times(name, scale, args.device, is_full)
            parts = ", ".join(f"{part} {seconds:.0f}" for part, seconds in times.items())
            what = "main protocol" if is_full else "scale section"
            print(f"   {name:<20} {what:<14} {parts} ({times['total'] / 60:.1f} min)", flush=True)

    if "reuse" in args.only:
        wanted = args.reuse if args.reuse is not None else (REUSE_MODELS[:1] if args.quick else REUSE_MODELS)
        print("\n7. reuse.measure on pinned models, one sequence (seconds, wall and CPU):", flush=True)
        for spec in wanted:
            name, _, tokens = spec.partition(":")
            if not tokens.isdigit():
                parser.error(f"--reuse takes NAME:TOKENS, got {spec!r}")
            spent = reuse_times(name, int(tokens), args.device)
            parts = ", ".join(f"{part} {wall:.1f} (cpu {cpu:.1f})" for part, (wall, cpu) in spent.items())
            print(f"   {name:<20} {int(tokens):>4} tokens: {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
