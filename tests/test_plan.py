"""The compute plan: FLOPs per token, every notebook's training runs counted once, hours from throughput."""

import pandas as pd
import pytest

from attnlab.model import GPTConfig
from attnlab.papers import qk_speed, xsa
from attnlab.runner import plan


def test_flops_count_parameters_and_attention():
    cfg = GPTConfig(vocab_size=100, n_layer=2, d_model=8, n_head=2, head_dim=(4, 6), d_ff=16)
    blocks = sum(8 * 2 * d * 4 + 2 * 8 * 16 for d in (4, 6))  # q, k, v, o + MLP per layer
    norms = 2 * 2 * 8 + 8  # ln_1, ln_2 per layer, ln_f (no biases)
    assert plan.flops_per_token(cfg, 10) == 6 * (blocks + norms + 8 * 100) + 12 * 2 * (4 + 6) * 10


def test_xsa_runs_are_every_figure_and_shared_runs_count_once():
    p = xsa.PRESETS["smoke"]
    seeds, sw = len(p.seeds), p.sweep
    runs = plan.plan("smoke", ["xsa"])
    # Fig. 3: sizes x kinds x seeds; Fig. 4: every LR. Figs. 5 and 6 share their base run (the base sequence
    # length, no sink) with Fig. 4's run at the same LR, which is trained once.
    fig3 = len(p.sizes) * 2 * seeds
    sweeps = (len(sw.lrs) + len(sw.seq_lens) - 1 + len(sw.sinks) - 1) * 2 * seeds
    assert len(runs) == fig3 + sweeps
    spec = xsa.configure(scale="smoke", device="cpu").spec("2L-32d", "sa", 0)
    t = spec.train
    row = runs[runs["run"] == "2L-32d sa seed 0"].iloc[0]
    assert row["tokens_M"] * 1e6 == t.steps * t.batch_size * t.seq_len
    assert row["PFLOPs"] * 1e15 == pytest.approx(
        row["tokens_M"] * 1e6 * plan.flops_per_token(spec.model, t.seq_len)
    )


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
    fig2 = len(qk_speed.fig2_runs(c)) * len(e.seeds) * c.max_epochs * c.batches_per_epoch
    fig3 = 2 * len(f.alphas) * f.epochs * f.batches_per_epoch
    assert e.circuit_steps() == fig2 + fig3


def test_command_line_prints_the_totals(capsys):
    assert plan.main(["--scale", "smoke", "--notebooks", "xsa", "qk_speed"]) == 0
    out = capsys.readouterr().out
    assert "total" in out and "circuit steps at most" in out
    with pytest.raises(SystemExit):
        plan.main(["--mfu", "1.5"])


def test_notebook_line_counts_shared_runs_once():
    runs = xsa.configure(scale="smoke", device="cpu").planned_runs()
    frame = plan.plan("smoke", ["xsa"])
    line = plan.describe(runs)
    assert len(runs) > len(frame)  # the sweeps' shared base runs appear under two labels
    assert line.startswith(f"trains {len(frame)} models on {round(frame['tokens_M'].sum() * 1e6):,} tokens")
    assert "circuit" not in line and "1,920 circuit SGD steps" in plan.describe(runs, 1920)
