"""Trainer: repeatability, resume, divergence, schedule and parameter groups."""

import math

import pytest
import torch

import attnlab.training.trainer as train_module
from attnlab.errors import TrainingDiverged
from attnlab.model import GPT, GPTConfig
from attnlab.training.optim import gpt_groups, lr_schedule, make_optimizer, sgd
from attnlab.training.trainer import TrainConfig, train

MODEL = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=32, attn="xsa")
CFG = TrainConfig(
    steps=12, batch_size=4, seq_len=32, lr=3e-3, warmup_steps=3, eval_every=4, eval_batches=2,
    checkpoint_every=5,
)  # fmt: skip


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    text = torch.randint(0, 40, (4000,), generator=g, dtype=torch.uint8)
    return {"train": text[:3500], "validation": text[3500:]}


def test_same_seed_same_losses_and_weights(data):
    a = train(MODEL, CFG, data, device="cpu", progress=False)
    b = train(MODEL, CFG, data, device="cpu", progress=False)
    assert a.history == b.history
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    c = train(MODEL, CFG.__class__(**{**CFG.to_dict(), "seed": 1}), data, device="cpu", progress=False)
    assert c.history["train_loss"] != a.history["train_loss"]


def test_interrupted_and_resumed_run_equals_uninterrupted(data, tmp_path):
    reference = train(MODEL, CFG, data, device="cpu", progress=False)

    def interrupt(step: int) -> None:
        if step == 7:  # after the checkpoint at step 5, before the end
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(MODEL, CFG, data, device="cpu", run_dir=tmp_path, progress=False, on_step=interrupt)
    assert (tmp_path / "checkpoint.pt").exists()
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 5
    resumed = train(MODEL, CFG, data, device="cpu", run_dir=tmp_path, progress=False)
    assert resumed.history == reference.history
    for p, q in zip(resumed.model.parameters(), reference.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert not list(tmp_path.glob(".*.tmp"))


def test_nan_loss_stops_with_clear_message(data, tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(train_module, "GPT", lambda cfg: built.append(GPT(cfg)) or built[-1])

    def poison(step: int) -> None:  # a weight turns NaN after step 2, as a blown-up update would
        if step == 2:
            next(built[0].parameters()).data.fill_(float("nan"))

    with pytest.raises(TrainingDiverged, match=r"loss became nan at step 2"):
        train(MODEL, CFG, data, device="cpu", run_dir=tmp_path, progress=False, on_step=poison)
    assert not (tmp_path / "result.pt").exists()


def test_warmup_then_cosine_to_a_tenth():
    cfg = TrainConfig(steps=101, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    lr_at = lr_schedule(cfg)
    assert lr_at(0) == pytest.approx(0.1)
    assert lr_at(9) == pytest.approx(1.0)
    assert lr_at(10) == pytest.approx(1.0)
    assert lr_at(100) == pytest.approx(0.1)
    mid = lr_at(55)
    assert mid == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi * 0.5)))
    assert all(lr_at(s) >= lr_at(s + 1) for s in range(10, 100))


def test_parameter_groups_get_their_own_learning_rates(data):
    model = GPT(MODEL)
    opt = make_optimizer(model, TrainConfig(lr_scale={"qk": 4.0, "embed": 0.5}))
    by_param = {id(p): g for g in opt.param_groups for p in g["params"]}
    blocks = model.blocks[0].attn
    assert by_param[id(blocks.q_proj.weight)]["base_lr"] == 4.0
    assert by_param[id(blocks.k_proj.weight)]["base_lr"] == 4.0
    assert by_param[id(blocks.v_proj.weight)]["base_lr"] == 1.0
    assert by_param[id(model.wte.weight)]["base_lr"] == 0.5
    assert by_param[id(model.ln_f.weight)]["weight_decay"] == 0.0
    assert by_param[id(blocks.o_proj.weight)]["weight_decay"] == CFG.weight_decay
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="unknown parameter groups"):
        make_optimizer(model, TrainConfig(lr_scale={"qv": 2.0}))
    # the scale reaches the optimizer's learning rate during training
    cfg = TrainConfig(**{**CFG.to_dict(), "steps": 1, "lr_scale": {"qk": 0.0}})
    result = train(MODEL, cfg, data, device="cpu", progress=False)
    torch.manual_seed(cfg.seed)
    init = GPT(MODEL)
    q_after = result.model.blocks[0].attn.q_proj.weight
    # a zero learning rate leaves only weight decay, which is also scaled by lr: q is unchanged
    assert torch.equal(q_after, init.blocks[0].attn.q_proj.weight)
    assert not torch.equal(result.model.blocks[0].attn.v_proj.weight, init.blocks[0].attn.v_proj.weight)


def test_sgd_keeps_group_order_scaled_rates_and_momentum():
    model = GPT(MODEL)
    groups = gpt_groups(model)
    assert list(groups) == sorted(groups)
    assert [id(p) for ps in groups.values() for p in ps] == [
        id(p) for g in sorted(groups) for n, p in model.named_parameters() if model.param_group(n) == g
    ]
    opt = sgd(groups, 0.1, momentum=0.9, lr_scale={"qk": 4.0})
    assert [g["name"] for g in opt.param_groups] == list(groups)
    assert {g["name"]: g["lr"] for g in opt.param_groups} == {g: 0.4 if g == "qk" else 0.1 for g in groups}
    assert all(g["momentum"] == 0.9 and g["weight_decay"] == 0 for g in opt.param_groups)
    # named groups stay in the order given (the circuits read "qk" as group 0), plain parameters are one group
    w, v = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    assert [g["name"] for g in sgd({"qk": [w], "ov": [v]}, 0.5).param_groups] == ["qk", "ov"]
    plain = sgd([w, v], 0.5)
    assert len(plain.param_groups) == 1 and plain.param_groups[0]["lr"] == 0.5


def test_bf16_autocast_trains_and_precision_is_validated(data):
    cfg = TrainConfig(**{**CFG.to_dict(), "steps": 3, "precision": "bf16"})
    result = train(MODEL, cfg, data, device="cpu", progress=False)
    assert all(math.isfinite(v) for v in result.history["train_loss"])
    assert result.model.wte.weight.dtype == torch.float32  # weights stay fp32 under autocast
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp8")


@pytest.mark.slow  # torch.compile (inductor)
def test_compiled_training_matches_eager_for_every_attention_kind(data):
    """The gpu and paper presets compile the model (torch.compile, inductor): on the CPU the compiled steps
    must give the eager losses and weights, with one layer of each attention kind in the model."""
    model = GPTConfig(
        n_layer=4, d_model=32, n_head=2, head_dim=16, block_size=32, attn=("sa", "xsa", "sd", "linear")
    )
    cfg = TrainConfig(**{**CFG.to_dict(), "steps": 4, "eval_every": 2})
    eager = train(model, cfg, data, device="cpu", progress=False)
    compiled = train(
        model, TrainConfig(**{**cfg.to_dict(), "compile": True}), data, device="cpu", progress=False
    )
    assert eager.history["train_loss"] == pytest.approx(compiled.history["train_loss"], abs=1e-5)
    assert eager.history["val_loss"] == pytest.approx(compiled.history["val_loss"], abs=1e-5)
    for (name, p), q in zip(
        eager.model.state_dict().items(), compiled.model.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4, msg=name)
