"""The GPU check: its CPU mode runs every paper's models end to end; without CUDA it refuses clearly."""

import pytest
import torch

from attnlab import gpu_check
from attnlab.model import GPTConfig


def test_cpu_mode_trains_every_paper_model_and_reports(capsys):
    assert gpu_check.main(["--device", "cpu", "--steps", "5", "--peak-tflops", "1"]) == 0
    out = capsys.readouterr().out
    for case in gpu_check.cases("smoke"):
        assert f"{case.paper:<12} {case.size:<9} {case.variant:<8} fp32" in out
    assert "XSA/SA step time, xsa 2L-32d:" in out and "SD/SA step time" in out
    assert "%" in out  # an MFU against the given peak


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_without_cuda_it_says_so_and_fails(capsys):
    assert gpu_check.main([]) == 1
    assert "no CUDA device here" in capsys.readouterr().err


def test_flops_count_parameters_and_attention():
    cfg = GPTConfig(vocab_size=100, n_layer=2, d_model=8, n_head=2, head_dim=(4, 6), d_ff=16)
    blocks = sum(8 * 2 * d * 4 + 2 * 8 * 16 for d in (4, 6))  # q, k, v, o + MLP per layer
    norms = 2 * 2 * 8 + 8  # ln_1, ln_2 per layer, ln_f (no biases)
    assert gpu_check.flops_per_token(cfg, 10) == 6 * (blocks + norms + 8 * 100) + 12 * 2 * (4 + 6) * 10
