"""The compute plan: FLOPs per token, every notebook's training runs counted once, hours from throughput."""

import json

import pandas as pd
import pytest

from attnlab.data import shards
from attnlab.errors import ParameterError
from attnlab.model import GPTConfig
from attnlab.papers import qk_speed, xsa
from attnlab.runner import plan
from attnlab.training.cache import corpus_tokens


def test_flops_count_parameters_and_attention():
    cfg = GPTConfig(vocab_size=100, n_layer=2, d_model=8, n_head=2, head_dim=(4, 6), d_ff=16)
    blocks = sum(8 * 2 * d * 4 + 2 * 8 * 16 for d in (4, 6))  # q, k, v, o + MLP per layer
    norms = 2 * 2 * 8 + 8  # ln_1, ln_2 per layer, ln_f (no biases)
    assert plan.flops_per_token(cfg, 10) == 6 * (blocks + norms + 8 * 100) + 12 * 2 * (4 + 6) * 10


def test_xsa_runs_are_every_figure_and_shared_runs_count_once():
    p = xsa.PRESETS["smoke"]
    exp = xsa.configure(scale="smoke", device="cpu")
    sw = p.sweep
    runs = plan.plan("smoke", ["xsa"])
    # Fig. 4: every size's grid, SA and XSA; Fig. 3: every kind (controls at the control sizes) and seed, its
    # grid runs at the preset rate trained once; Figs. 5 and 6 share their base run (the base sequence
    # length, no sink) with Fig. 3's run of the same seed.
    grids = sum(len(s.lrs) * 2 * s.grid_seeds for s in p.sizes.values())
    fig3 = sum(len(exp.kinds(name)) * len(exp.seeds) for name in p.sizes)
    shared = sum(2 * s.grid_seeds for s in p.sizes.values() if s.train.lr in s.lrs)
    sweeps = (len(sw.seq_lens) - 1 + len(sw.sinks) - 1) * 2 * sw.seeds
    # the variants: SA, XSA and both controls on subword tokens; SA and XSA with grouped-query attention
    variants = (4 + 2) * p.variants.seeds if p.variants else 0
    assert len(runs) == grids + fig3 - shared + sweeps + variants
    spec = exp.spec("3L-32d", "sa", 0)
    t = spec.train
    row = runs[runs["run"] == "3L-32d sa seed 0"].iloc[0]
    assert row["tokens_M"] * 1e6 == t.steps * t.batch_size * t.seq_len
    assert row["PFLOPs"] * 1e15 == pytest.approx(
        row["tokens_M"] * 1e6 * plan.flops_per_token(spec.model, t.seq_len)
    )


def test_every_run_has_its_epochs_and_tokens_per_parameter():
    runs = plan.plan("smoke", ["xsa"])
    have = len(corpus_tokens("shakespeare")["train"])
    row = runs[runs["run"] == "3L-32d sa seed 0"].iloc[0]
    assert row["corpus"] == "shakespeare" and row["epochs"] == pytest.approx(row["tokens_M"] * 1e6 / have)
    assert row["tokens_per_param"] == pytest.approx(row["tokens_M"] / row["params_M"])
    assert plan.summary(runs, 989.0, 0.3, 1).loc["xsa", "max_epochs"] == pytest.approx(runs["epochs"].max())


def test_runs_past_one_epoch_are_warned_about_and_unbuilt_corpora_noted(tmp_path):
    runs = pd.DataFrame({"notebook": ["a", "a", "b"], "run": ["1", "2", "3"], "corpus": ["c", "c", "d"],
                         "epochs": [0.5, 36.0, float("nan")]})  # fmt: skip
    lines = plan.epoch_warnings(runs)
    assert lines[0].startswith("warning: 1 of 2 a runs train for more than one epoch of c (up to 36 epochs)")
    assert lines[1] == "note: d is not built, so the epochs of b's runs are unknown"
    assert plan.epoch_warnings(runs.iloc[:1]) == []
    assert plan.corpus_train_tokens(str(tmp_path / "none")) is None
    files = [{"file": "a", "tokens": 7}, {"file": "b", "tokens": 5}]
    (tmp_path / shards.META).write_text(json.dumps({"format": shards.FORMAT, "splits": {"train": files}}))
    assert plan.corpus_train_tokens(str(tmp_path)) == 12


def test_the_gpu_scale_trains_at_most_one_epoch_or_stops_before_training(capsys):
    """Item 8 of the XSA review: the gpu preset's corpus holds more tokens than any of its runs trains on,
    or, absent, the notebook stops before training with the command that builds it."""
    exp = xsa.configure(scale="gpu", device="cpu")
    most = max(r.tokens for r in exp.planned_runs().values())
    assert xsa.GPU_CORPUS_COMMAND.split("--max-tokens ")[1] == "1e9" and most <= 1e9
    if plan.corpus_train_tokens(exp.preset.corpus) is None:
        with pytest.raises(ParameterError, match="Build it once with python -m attnlab.data.shards fineweb"):
            exp.check_data()
        assert plan.main(["--scale", "gpu", "--notebooks", "xsa"]) == 0
        assert "is not built" in capsys.readouterr().out
    else:
        assert plan.corpus_train_tokens(exp.preset.corpus) >= most


def test_every_notebook_plans_at_every_scale():
    for scale in ("smoke", "cpu", "gpu", "paper"):
        runs = plan.plan(scale, ["xsa", "qk_speed", "contribution_weights", "sd_routing"])
        assert set(runs["notebook"]) == {"xsa", "qk_speed", "contribution_weights", "sd_routing"}
        assert (runs["PFLOPs"] > 0).all() and not runs.duplicated(["notebook", "run"]).any()


def test_hours_follow_from_flops_and_throughput():
    runs = pd.DataFrame({"notebook": ["a", "a", "b"], "run": ["1", "2", "3"], "params_M": [1.0] * 3,
                         "tokens_M": [1.0, 2.0, 3.0], "PFLOPs": [360.0, 0.0, 720.0]})  # fmt: skip
    out = plan.summary(runs, tflops=1000.0, mfu=0.5, gpus=2)
    # 360 PFLOP at 2 x 1000 TFLOP/s x 0.5 = 1 PFLOP/s: 360 s = 0.1 h
    assert out.loc["a", "hours"] == pytest.approx(0.1) and out.loc["total", "hours"] == pytest.approx(0.3)
    assert out.loc["a", "runs"] == 2 and out.loc["total", "tokens_B"] == pytest.approx(6e-3)


def test_circuit_steps_count_distinct_runs_to_their_epoch_limit():
    e = qk_speed.configure(scale="smoke", device="cpu")
    c, f = e.preset.circuits, e.preset.fixed
    # the ratio sweep's runs at x1 and x20 are Fig. 2's FAFO and FAFO QK x20 runs: not counted again
    assert set(c.ratios) == {1.0, c.fast_fafo} and e.preset.ratio_seeds <= len(e.seeds)
    circuits = sum(cfg["max_epochs"] * cfg["batches_per_epoch"] for cfg in e.circuit_configs())
    # two OV forms, two protocols (ours, authors'), every synthetic seed
    fig3 = 2 * 2 * len(f.alphas) * f.epochs * f.batches_per_epoch * len(e.seeds)
    assert e.circuit_steps() == circuits + fig3


def test_the_batched_circuit_program_is_one_stack_per_training_settings_and_length():
    e = qk_speed.configure(scale="cpu", device="cpu")
    c, stacks = e.preset.circuits, e.circuit_stacks()
    # row 1 and the ratio sweep (64 tokens, early stop), CAFO and CACO at the authors' budgets, FAFO QK x20
    # at both inits, the FAFO ramp at both inits (64 tokens) and the three CACO runs at 128 tokens (the long
    # budget, no early stop): every distinct run in one stack
    n = len(e.seeds)
    assert sorted(stacks) == sorted([
        (len(e.circuit_configs()) - 9 * n, c.max_epochs * c.batches_per_epoch),
        (n, c.cafo_budget[0] * c.cafo_budget[1]),
        (n, c.caco_budget[0] * c.caco_budget[1]),
        (2 * n, c.fast_epochs * c.fast_batches_per_epoch),
        (2 * n, c.long_epochs * c.fast_batches_per_epoch),
        (3 * n, c.long_epochs * c.fast_batches_per_epoch),
    ])  # fmt: skip
    batched, single = plan.circuit_program("cpu", ["qk_speed", "xsa"])
    assert batched == stacks
    assert single == e.circuit_steps() - sum(n * steps for n, steps in stacks) > 0  # Fig. 3's runs
    assert plan.circuit_program("cpu", ["xsa"]) == ([], 0)


def test_batched_circuit_hours_on_the_gpu_and_on_one_cpu_core():
    stacks = [(10, 3600), (2, 7200)]
    assert plan.batched_hours(stacks, "cuda", gpu_ms=0.5) == pytest.approx(10800 * 0.5e-3 / 3600)
    per_step, per_circuit = plan.BATCHED_CPU_MS
    cpu = (3600 * (per_step + 10 * per_circuit) + 7200 * (per_step + 2 * per_circuit)) / 3.6e6
    assert plan.batched_hours(stacks, "cpu") == pytest.approx(cpu)
    # one stack of many circuits costs far less than the same circuits one by one
    assert plan.batched_hours([(40, 3600)], "cpu") < 40 * 3600 * plan.CIRCUIT_MS / 3.6e6 / 20


def test_command_line_prints_the_totals(capsys):
    assert plan.main(["--scale", "smoke", "--notebooks", "xsa", "qk_speed", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "total" in out and "circuits, batched on cpu: 26 circuits in 4 stacks" in out
    assert "CPU-hours on one core" in out and "on CPU cores, one run each: 1,920 SGD steps" in out
    assert plan.main(["--scale", "smoke", "--notebooks", "qk_speed", "--device", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "batched on cuda" in out and "GPU-hours at 0.3 ms a step" in out
    assert "GPU total with the batched circuits" in out
    assert plan.main(["--scale", "smoke", "--notebooks", "xsa"]) == 0
    assert "circuits, batched" not in capsys.readouterr().out
    for bad in (["--mfu", "1.5"], ["--circuit-gpu-ms", "0"], ["--device", "tpu"]):
        with pytest.raises(SystemExit):
            plan.main(bad)


def test_notebook_line_counts_shared_runs_once():
    runs = xsa.configure(scale="smoke", device="cpu").planned_runs()
    frame = plan.plan("smoke", ["xsa"])
    line = plan.describe(runs)
    assert len(runs) > len(frame)  # the sweeps' shared base runs appear under two labels
    assert line.startswith(f"trains {len(frame)} models on {round(frame['tokens_M'].sum() * 1e6):,} tokens")
    assert "circuit" not in line and "1,920 circuit SGD steps" in plan.describe(runs, 1920)
