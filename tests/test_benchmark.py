"""Block cost measurement (XSA Fig. 2)."""

import os

import pytest
import torch

from attnlab.model import GPTConfig
from attnlab.papers import qk_speed
from attnlab.papers.qk_speed import batched
from attnlab.tools import benchmark
from attnlab.tools.benchmark import block_cost


def test_block_cost_reports_time_and_activation_memory_that_grows_with_length():
    cfg = GPTConfig(d_model=32, n_head=2, head_dim=16, block_size=64)
    cpu = torch.device("cpu")
    short = block_cost(cfg, "sa", 2, 16, cpu, warmup=1, repeats=2)
    long = block_cost(cfg, "sa", 2, 64, cpu, warmup=1, repeats=2)
    xsa = block_cost(cfg, "xsa", 2, 64, cpu, warmup=1, repeats=2)
    assert short["time_ms"] > 0
    # the input alone is 2 x 64 x 32 floats; saved activations are several times that
    assert long["memory_mib"] > 4 * 2 * 64 * 32 * 4 / 2**20
    assert long["memory_mib"] > 2 * short["memory_mib"]  # weights are saved too: not quite 4x
    assert xsa["memory_mib"] > long["memory_mib"]  # XSA saves its normalised values for backward


def test_a_grid_point_that_runs_out_of_memory_is_left_out_for_every_kind(monkeypatch, capsys):
    cfg = GPTConfig(d_model=32, n_head=2, head_dim=16, block_size=16)
    cpu = torch.device("cpu")
    both = benchmark.block_costs(cfg, ("sa", "xsa"), 2, 16, cpu, repeats=2)
    assert set(both) == {"sa", "xsa"} and all(c["time_ms"] > 0 for c in both.values())

    measured = benchmark.block_cost

    def xsa_too_big(cfg, kind, *args, **kwargs):
        if kind == "xsa":
            raise torch.OutOfMemoryError("CUDA out of memory")
        return measured(cfg, kind, *args, **kwargs)

    monkeypatch.setattr(benchmark, "block_cost", xsa_too_big)
    assert benchmark.block_costs(cfg, ("sa", "xsa"), 2, 16, cpu, repeats=2) is None
    assert "xsa ran out of memory; left out" in capsys.readouterr().out


def test_the_circuit_benchmark_times_both_paths_and_checks_they_agree(capsys):
    """``make bench``'s circuit part at smoke scale (``--quick --only circuits``): the batched program and
    one run per kind one by one, with the same stopping epochs and metrics to float rounding."""
    from attnlab.tools import bench

    out = batched.benchmark(scale="smoke")
    specs = qk_speed.configure(scale="smoke", device="cpu").circuit_stacks()
    assert out["circuits"] == sum(n for n, _ in specs) and out["batched_steps"] <= sum(s for _, s in specs)
    assert out["same_epochs"] and out["max_metric_abs_diff"] < 1e-4 and out["max_final_loss_rel_diff"] < 1e-4
    assert out["one_by_one_cpu_s_all"] > out["one_by_one_cpu_s"] > 0 and out["batched_cpu_ms_per_step"] > 0
    assert bench.main(["--quick", "--only", "circuits"]) == 0
    printed = capsys.readouterr().out
    assert "4. QK-speed circuits, batched (on cpu)" in printed and "cpu_speedup" in printed
    assert "1. trainer" not in printed and "5. Fig. 4" not in printed


def test_the_protocol_bench_computes_afresh_in_a_temporary_cache_and_restores_it(monkeypatch, tmp_path):
    from attnlab.papers.contribution_weights import scale
    from attnlab.tools import bench

    seen = []

    class Stub:
        def __init__(self, tasks):
            self.tasks = tasks

        @property
        def lm(self):
            seen.append(("load", os.environ["ATTNLAB_BUILD"]))

        def faithfulness(self):
            seen.append(("faithfulness", os.environ["ATTNLAB_BUILD"]))

        def sinks(self):
            seen.append(("sinks", os.environ["ATTNLAB_BUILD"]))

        def downstream(self):
            seen.append(("downstream", os.environ["ATTNLAB_BUILD"]))

    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    monkeypatch.setattr(
        scale, "experiment_for", lambda exp, name, preset: Stub(("mmlu",) if name == "a" else ())
    )
    times = bench.protocol_times("a", "smoke", "cpu", full=False)
    assert [part for part, _ in seen] == ["load", "faithfulness", "sinks", "downstream"]
    assert len({folder for _, folder in seen}) == 1 and seen[0][1] != str(tmp_path)  # not the real cache
    assert os.environ["ATTNLAB_BUILD"] == str(tmp_path)  # restored
    assert set(times) == {"load", "faithfulness", "sinks", "downstream", "total"}
    seen.clear()
    assert "downstream" not in bench.protocol_times("b", "smoke", "cpu", full=False)  # a model given no task
    assert [part for part, _ in seen] == ["load", "faithfulness", "sinks"]


def test_the_full_protocol_bench_runs_the_main_protocol_on_the_model(monkeypatch):
    from attnlab.papers import contribution_weights as cw
    from attnlab.tools import bench

    chosen = {}

    def configure(**kwargs):
        chosen.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr(cw, "configure", configure)
    with pytest.raises(RuntimeError, match="stop"):
        bench.protocol_times("gemma3-270m", "cpu", "cpu", full=True)
    assert chosen == {"scale": "cpu", "device": "cpu", "model": "gemma3-270m", "dtype": "bfloat16"}
