"""XSA's controls and its cpu plan: the random direction of ``xsa-random`` is drawn per run seed and layer
(attnlab.attention.RandomDirectionExclusion), both controls train at both cpu sizes, and Fig. 4's grid has
three seeds at every rate of both sizes, while the smoke scale keeps its size."""

import torch

from attnlab.attention import random_direction_seed
from attnlab.model import GPT, GPTConfig
from attnlab.papers import xsa

CFG = GPTConfig(vocab_size=32, n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=16)


def _model(seed: int, kind: str) -> GPT:
    """A model built as training builds it: the run's seed set first (attnlab.training.trainer.train)."""
    torch.manual_seed(seed)
    return GPT(GPTConfig(**{**CFG.to_dict(), "attn": kind}))


def _directions(model: GPT) -> list[torch.Tensor]:
    return [block.attn.direction for block in model.blocks]


def test_two_seeds_draw_different_random_directions():
    a, b = _directions(_model(0, "xsa-random")), _directions(_model(1, "xsa-random"))
    for layer in range(CFG.n_layer):
        assert not torch.allclose(a[layer], b[layer])
        cos = (a[layer] * b[layer]).sum(-1).abs()
        assert (cos < 0.99).all()  # unrelated unit vectors, not a sign flip
    assert not torch.allclose(a[0], a[1])  # and two layers of one run differ
    again = _directions(_model(0, "xsa-random"))
    assert all(torch.equal(x, y) for x, y in zip(a, again, strict=True))  # the same seed: the same run
    for d in a:
        assert torch.allclose(d.norm(dim=-1), torch.ones(CFG.n_head))


def test_the_direction_leaves_the_shared_initialisation_alone():
    """Every weight the control shares with SA starts as SA's of the same seed: the direction has its own
    generator and draws nothing from the global one."""
    control, sa = _model(3, "xsa-random").state_dict(), _model(3, "sa").state_dict()
    shared = [k for k in sa if k in control]
    assert shared and all(torch.equal(control[k], sa[k]) for k in shared)
    assert {k for k in control if k not in sa} == {f"blocks.{i}.attn.direction" for i in range(CFG.n_layer)}


def test_random_direction_seed_separates_seed_and_layer():
    seeds = {random_direction_seed(s, layer) for s in range(20) for layer in range(12)}
    assert len(seeds) == 240 and all(0 <= s < 2**63 for s in seeds)
    assert random_direction_seed(1, 0) != random_direction_seed(0, 1)  # no sum of the two


def test_cpu_plan_has_controls_and_three_grid_seeds_at_both_sizes():
    exp = xsa.configure(scale="cpu", device="cpu")
    assert set(exp.preset.control_sizes) == {"2L-64d", "8L-64d"} < set(exp.sizes)
    for name, size in exp.preset.sizes.items():
        assert size.lrs and size.grid_seeds >= 3, name
    runs = exp.planned_runs()
    for seed in exp.seeds:
        for control in xsa.CONTROLS:
            assert f"8L-64d {control} seed {seed}" in runs
    for lr in exp.preset.sizes["8L-64d"].lrs:
        assert all(f"8L-64d lr={lr:g} {k} seed {s}" in runs for k in xsa.KINDS for s in (0, 1, 2))


def test_smoke_plan_keeps_its_size():
    """CI runs the smoke scale on two cores: its plan is what it was (18 runs) and the 16 tiny runs that
    exercise the gain's trend over size (a third size, 1L-16d) and the variants (subword tokens: four kinds,
    grouped-query attention: two, two seeds each)."""
    exp = xsa.configure(scale="smoke", device="cpu")
    assert len({run.key for run in exp.planned_runs().values()}) == 18 + 4 + 8 + 4
    assert exp.preset.control_sizes == ("2L-32d",) and len(exp.seeds) == 2
    assert {n: s.grid_seeds for n, s in exp.preset.sizes.items()} == {"1L-16d": 1, "2L-32d": 1, "3L-32d": 1}
