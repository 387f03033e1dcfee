"""Batched circuit training (qk_speed.batched) against the one-circuit path, run by run: the same weights,
losses, learning rates, stopping epochs and held-out metrics, and the experiment's use of it."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.errors import TrainingDiverged
from attnlab.papers import qk_speed
from attnlab.papers.qk_speed.batched import CircuitSpec, CircuitStack, train_circuits
from attnlab.papers.qk_speed.circuit_configs import CircuitJobs
from attnlab.papers.qk_speed.circuits import (
    CIRCUITS,
    attention_shift,
    evaluate_circuit,
    make_circuit,
    train_circuit,
)
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.synthetic import sample_batch, seeded_generator

RTOL = 1e-5


def one_by_one(spec: CircuitSpec, **settings):
    model = make_circuit(spec.kind, seed=spec.seed, init_scale=spec.init_scale)
    return train_circuit(
        model, lr_qk=spec.lr_qk, lr_ov=spec.lr_ov, qk_ramp=spec.qk_ramp, ov_ramp=spec.ov_ramp,
        seq_len=spec.seq_len, seed=spec.seed, **settings,
    )  # fmt: skip


def assert_same_run(batched, single, rtol=RTOL):
    """The same history (epochs and learning rates exactly, losses to rtol), steps, stop and weights."""
    for key in ("epoch", "lr_qk", "lr_ov"):
        assert batched.history[key] == single.history[key], key
    np.testing.assert_allclose(batched.history["train_loss"], single.history["train_loss"], rtol=rtol)
    assert (batched.steps, batched.stopped_early) == (single.steps, single.stopped_early)
    names = [n for n, _ in single.model.named_parameters()]
    assert [n for n, _ in batched.model.named_parameters()] == names
    for a, b in zip(batched.model.parameters(), single.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * b.abs().max().item())


def randomised(kind: str, seed: int):
    model = make_circuit(kind)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def test_one_stack_computes_each_circuits_forward_whatever_its_parameterisation():
    models = [randomised(kind, seed) for seed in range(2) for kind in sorted(CIRCUITS)]
    stack = CircuitStack(models, torch.device("cpu"))
    tokens = torch.stack([sample_batch(4, 12, seeded_generator(s, 1)).inputs for s in range(len(models))])
    logits, attn = stack.forward(tokens)
    for c, m in enumerate(models):
        with torch.no_grad():
            ref = m(tokens[c])
        torch.testing.assert_close(attn[c], ref.attn, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(logits[c], ref.logits, rtol=1e-5, atol=1e-5)
        copy = make_circuit(m.kind)
        stack.copy_to(c, copy)
        for a, b in zip(copy.parameters(), m.parameters(), strict=True):
            assert torch.equal(a, b)


@pytest.mark.parametrize("kinds", [sorted(CIRCUITS), ["caco"], ["cafo"], ["faco"], ["fafo"]])
def test_one_step_is_each_circuits_autograd_sgd_step(kinds):
    """The hand-written gradients of ``train_epoch``, in a mixed stack and in the stacks that leave W_Q or
    W_V (= I in all circuits) out: each circuit's loss and SGD update are its ``Circuit``'s under autograd,
    each circuit reading its own stream among shared ones, and identity matrices stay exactly I."""
    models = [randomised(kind, seed) for seed in range(3) for kind in kinds]
    stack = CircuitStack(models, torch.device("cpu"))
    assert stack.identity == {"caco": {"W_Q", "W_V"}, "cafo": {"W_Q"}, "faco": {"W_V"}}.get(
        kinds[0] if len(kinds) == 1 else "", set()
    )
    batches = [sample_batch(8, 12, seeded_generator(s, 1)) for s in range(2)]
    tokens = torch.stack([b.inputs for b in batches])[None]  # (1, S, B, T)
    targets = torch.stack([b.targets for b in batches])[None]  # (1, S, B)
    C = len(models)
    reads = torch.tensor([(c + 1) % 2 for c in range(C)])
    lrs = torch.tensor([[[0.3 + 0.1 * c, 0.05 * (c + 1)] for c in range(C)]])  # (1, C, 2)
    losses = stack.train_epoch(tokens, targets, lrs, reads)
    for c, model in enumerate(models):
        batch = batches[reads[c]]
        loss = torch.nn.functional.cross_entropy(model(batch.inputs).logits, batch.targets)
        loss.backward()
        torch.testing.assert_close(losses[0, c], loss.detach(), rtol=1e-6, atol=1e-6)
        after = make_circuit(model.kind)
        stack.copy_to(c, after)
        groups = {id(p): name for name, ps in model.parameter_groups().items() for p in ps}
        for (name, p), q in zip(model.named_parameters(), after.parameters(), strict=True):
            lr = lrs[0, c, 0 if groups[id(p)] == "qk" else 1].item()
            torch.testing.assert_close(q, p.detach() - lr * p.grad, rtol=1e-5, atol=1e-6, msg=name)
            assert not torch.equal(q, p.detach()), name
        eye = torch.eye(50)
        for slot, held in (
            ("W_Q", "W_Q" not in dict(model.named_parameters())),
            ("W_V", model.kind[2:] == "co"),
        ):
            assert not held or torch.equal(stack.weights[slot][c], eye), slot


SETTINGS = dict(batch_size=32, batches_per_epoch=10, max_epochs=4)


@pytest.mark.parametrize("kind", sorted(CIRCUITS))
def test_a_stack_of_one_parameterisation_matches_the_one_circuit_path(kind):
    """The stacks that leave W_Q or W_V out (CACO, CAFO, FACO alone), over several epochs."""
    specs = [CircuitSpec(kind, 1.0, 0.5, seq_len=16, seed=seed, init_scale=0.5) for seed in (3, 4)]
    for spec, b in zip(specs, train_circuits(specs, loss_stop=None, **SETTINGS), strict=True):
        assert_same_run(b, one_by_one(spec, loss_stop=None, **SETTINGS))


def test_every_parameterisation_seed_and_learning_rate_matches_the_one_circuit_path():
    specs = [
        CircuitSpec(kind, qk, ov, qk_ramp, ov_ramp, seq_len, seed, init_scale)
        for kind in sorted(CIRCUITS)
        for seed in (3, 4)
        for qk, ov, qk_ramp, ov_ramp, seq_len, init_scale in (
            (1.0, 1.0, (1.0, 1.0), (1.0, 1.0), 16, 1e-6),  # the paper's start: FO circuits stay at the saddle
            (1.0, 1.0, (1.0, 1.0), (1.0, 1.0), 16, 0.5),
            (5.0, 0.5, (1.0, 1.0), (1.0, 1.0), 16, 0.5),
            (1.0, 1.0, (1.0, 10.0), (1.0, 1.0), 16, 0.5),
            (2.0, 1.0, (1.0, 1.0), (2.0, 0.5), 24, 0.5),
        )
    ]
    batched = train_circuits(specs, loss_stop=None, **SETTINGS)
    held_out = {seq_len: sample_batch(64, seq_len, seeded_generator(9, 2)) for seq_len in (16, 24)}
    for spec, b in zip(specs, batched, strict=True):
        single = one_by_one(spec, loss_stop=None, **SETTINGS)
        assert_same_run(b, single)
        assert single.history["lr_qk"][-1] != single.history["lr_qk"][0] or spec.qk_ramp == (1.0, 1.0)
        got, want = (evaluate_circuit(r.model, held_out[spec.seq_len]) for r in (b, single))
        for key in ("distinct_mass", "true_prob", "loss"):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-6, err_msg=key)
        assert (got["correct"] == want["correct"]).mean() >= 0.98  # an argmax may flip on a near-tie
    # the runs learn something, so matching weights is not matching the initialisation
    moved = [r for s, r in zip(specs, batched, strict=True) if s.init_scale > 1e-6]
    assert all(r.history["train_loss"][-1] < 0.97 * r.history["train_loss"][0] for r in moved)


def test_circuits_stopping_at_different_epochs_keep_their_final_state():
    specs = [
        CircuitSpec(kind, lr, lr, seq_len=16, seed=seed)
        for kind in ("caco", "faco")
        for lr, seed in ((2.0, 1), (1.0, 2), (0.5, 3), (0.2, 4))
    ]
    settings = dict(batch_size=32, batches_per_epoch=10, max_epochs=6)
    # a threshold the one-circuit runs cross at different epochs (some never): the median of their epoch-3
    # losses, which the faster runs reach earlier and the slower later or not at all
    free = [one_by_one(s, loss_stop=None, **settings).history["train_loss"] for s in specs]
    loss_stop = float(np.median([h[2] for h in free]))
    singles = [one_by_one(s, loss_stop=loss_stop, **settings) for s in specs]
    epochs = [len(r.history["epoch"]) for r in singles]
    assert len(set(epochs)) >= 3 and any(not r.stopped_early for r in singles), epochs
    batched = train_circuits(specs, loss_stop=loss_stop, **settings)
    for b, single in zip(batched, singles, strict=True):
        assert_same_run(b, single)


def test_a_diverging_circuit_raises_as_on_its_own():
    spec = CircuitSpec("caco", 1e38, 1e38, seq_len=8, seed=0)
    settings = dict(batch_size=4, batches_per_epoch=3, max_epochs=2)
    with pytest.raises(TrainingDiverged):
        one_by_one(spec, **settings)
    with pytest.raises(TrainingDiverged, match="caco"):
        train_circuits([CircuitSpec("fafo", 0.1, 0.1, seq_len=8), spec], **settings)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_the_gpu_the_runs_match_the_cpu_ones():
    specs = [CircuitSpec(kind, 1.0, 1.0, seq_len=16, seed=5) for kind in sorted(CIRCUITS)]
    cpu = train_circuits(specs, loss_stop=None, **SETTINGS)
    gpu = train_circuits(specs, loss_stop=None, device="cuda", **SETTINGS)
    for a, b in zip(gpu, cpu, strict=True):
        assert_same_run(a, b, rtol=1e-4)


def test_the_benchmark_times_the_runs_of_the_default_experiment():
    for scale in qk_speed.PRESETS:
        jobs = CircuitJobs.at_scale(scale)  # batched.benchmark's runs
        assert jobs.configs() == qk_speed.configure(scale=scale, device="cpu").circuit_configs()


@pytest.fixture
def build(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNLAB_BUILD", str(tmp_path))
    return tmp_path


def test_the_experiment_trains_fig2_and_the_ratio_sweep_at_once_as_one_by_one(build):
    base = qk_speed.configure(scale="smoke", seeds=[1234, 1235], device="cpu")
    tiny = replace(base.preset.circuits, batches_per_epoch=5, max_epochs=2, eval_size=64, ratios=(1.0, 3.0))
    exp = replace(base, preset=replace(base.preset, circuits=tiny, ratio_seeds=2))
    configs = exp.circuit_configs()
    # the ratio sweep at x1 from either QK init is Fig. 2's row-1 FAFO run from that init: trained once
    assert len(configs) == len(qk_speed.fig2_runs(tiny)) * 2 + len(tiny.ratio_inits) * 2 * 2 - 2 * 2
    assert {(cfg["max_epochs"], cfg["loss_stop"]) for cfg in configs} == {(2, 1e-3), (2, 1e-3), (3, None)}
    fig2 = exp.fig2()
    jobs = exp.circuit_runs.jobs
    assert (exp.cache.loaded, exp.cache.computed) == (0, len(jobs.fig2()))
    ratio = exp.ratio_sweep()  # trained with Fig. 2's runs
    assert exp.cache.computed == len(jobs.fig2()) + len(jobs.ratio())
    c = exp.preset.circuits
    for r, (init, ratio_value, seed, _) in zip(ratio.itertuples(), jobs.ratio(), strict=True):
        single = train_circuit(
            make_circuit("fafo", seed=seed, qk_init=init), lr_qk=c.lr * ratio_value, lr_ov=c.lr,
            seq_len=c.seq_len, seed=seed, batch_size=32,
            batches_per_epoch=c.batches_per_epoch, max_epochs=c.max_epochs, loss_stop=c.loss_stop,
        )  # fmt: skip
        stats = evaluate_circuit(
            single.model, sample_batch(c.eval_size, c.seq_len, seeded_generator(seed, 2))
        )
        assert (r.ratio, r.seed, r.epochs) == (ratio_value, seed, len(single.history["epoch"]))
        assert r.mass == pytest.approx(stats["distinct_mass"].mean(), rel=1e-5)
        assert r.query_mass == pytest.approx(stats["query_mass"].mean(), rel=1e-5)
        start = make_circuit("fafo", seed=seed, qk_init=init)
        held_out = sample_batch(c.eval_size, c.seq_len, seeded_generator(seed, 2))
        assert r.moved == pytest.approx(
            attention_shift(single.model, start, held_out).mean(), rel=1e-4, abs=1e-9
        )
        assert r.true_prob == pytest.approx(stats["true_prob"].mean(), rel=1e-5)
    again = replace(exp, cache=CountedCache())
    pd.testing.assert_frame_equal(again.fig2(), fig2)
    assert (again.cache.loaded, again.cache.computed) == (len(jobs.fig2()), 0)
