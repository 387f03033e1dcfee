"""XSA Fig. 6's measured sink attention (attnlab.papers.xsa.diagnostics.attention_to_sinks_by_layer) and Fig.
2's block timing, SA and XSA alternated within one process (alternated_block_costs)."""

import pytest
import torch

from attnlab.model import GPT, GPTConfig
from attnlab.papers.xsa.diagnostics import attention_to_sinks_by_layer


def _model(n_sink: int, kind: str = "sa") -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=32, n_layer=2, d_model=16, n_head=2, head_dim=8, block_size=16,
                         pos="rope", n_sink=n_sink, attn=kind))  # fmt: skip


@pytest.mark.parametrize("kind", ["sa", "xsa"])
def test_uniform_attention_gives_the_uniform_masses(kind):
    """With zero queries every score is equal, so the pattern is uniform causal attention: the measured
    masses equal the references."""
    model = _model(3, kind)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.q_proj.weight.zero_()
    tokens = torch.randint(0, 32, (5, 12))
    frame = attention_to_sinks_by_layer(model, tokens, batch_size=2)
    assert list(frame["layer"]) == [0, 1]
    assert frame["sink_mass"].to_numpy() == pytest.approx(frame["sink_uniform"].to_numpy(), rel=1e-5)
    assert frame["first_mass"].to_numpy() == pytest.approx(frame["first_uniform"].to_numpy(), rel=1e-5)
    keys = 3 + torch.arange(1, 12, dtype=torch.float64) + 1
    assert frame["sink_uniform"].iloc[0] == pytest.approx(float((3 / keys).mean()))


def test_trained_like_masses_are_shares_and_no_sinks_means_no_sink_mass():
    tokens = torch.randint(0, 32, (4, 10))
    with_sinks = attention_to_sinks_by_layer(_model(1), tokens)
    total = with_sinks["sink_mass"] + with_sinks["first_mass"]
    assert ((with_sinks["sink_mass"] > 0) & (total < 1)).all()
    without = attention_to_sinks_by_layer(_model(0), tokens)
    assert (without["sink_mass"] == 0).all() and (without["sink_uniform"] == 0).all()
    assert (without["first_mass"] > 0).all()


def test_block_costs_alternate_the_kinds_within_each_repeat(monkeypatch):
    """Fig. 2's timing: SA and XSA are timed back to back in every repeat, in alternating order (neither
    always first), one row per (kind, repeat), memory as the benchmark measures it."""
    from attnlab.model import Block
    from attnlab.papers.xsa import diagnostics
    from attnlab.tools.benchmark import block_cost

    calls = []

    class Recording(Block):
        def __init__(self, cfg, kind):
            super().__init__(cfg, kind)
            self.kind = kind

        def forward(self, x, capture=None):
            calls.append(self.kind)
            return super().forward(x, capture)

    monkeypatch.setattr(diagnostics, "Block", Recording)
    cfg = GPTConfig(d_model=16, n_head=2, head_dim=8, block_size=16)
    cpu = torch.device("cpu")
    frame = diagnostics.alternated_block_costs(cfg, ("sa", "xsa"), 2, 16, cpu, repeats=4, warmup=1)
    assert frame is not None
    assert calls == [
        "sa",
        "xsa",
        "sa",
        "xsa",
        "xsa",
        "sa",
        "sa",
        "xsa",
        "xsa",
        "sa",
    ]  # warm-up, then 4 repeats
    assert list(frame.columns) == ["kind", "repeat", "time_ms", "memory_mib"]
    assert frame.groupby("kind")["repeat"].apply(list).to_dict() == {"sa": [0, 1, 2, 3], "xsa": [0, 1, 2, 3]}
    assert (frame["time_ms"] > 0).all()
    for kind in ("sa", "xsa"):
        memory = block_cost(cfg, kind, 2, 16, cpu, warmup=0, repeats=1)["memory_mib"]
        assert (frame.loc[frame["kind"] == kind, "memory_mib"] == memory).all()


def test_block_costs_leave_out_a_point_that_runs_out_of_memory(monkeypatch, capsys):
    from attnlab.papers.xsa import diagnostics

    def too_big(*args, **kwargs):
        raise torch.OutOfMemoryError("no room")

    monkeypatch.setattr(diagnostics, "_alternated_times", too_big)
    cfg = GPTConfig(d_model=16, n_head=2, head_dim=8, block_size=16)
    assert (
        diagnostics.alternated_block_costs(cfg, ("sa", "xsa"), 2, 16, torch.device("cpu"), repeats=2) is None
    )
    assert "ran out of memory" in capsys.readouterr().out
