"""The GPU check: its CPU mode runs every paper's models end to end; without CUDA it refuses clearly."""

import pytest
import torch

from attnlab.tools import gpu_check


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
