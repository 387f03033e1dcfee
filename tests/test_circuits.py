"""The four single-layer circuits against hand-written formulas, their trainer, the fixed-attention model."""

import math
from itertools import pairwise

import numpy as np
import pytest
import torch

from attnlab.papers.qk_speed.circuits import (
    CACO,
    CAFO,
    CIRCUITS,
    FACO,
    FAFO,
    FixedAttentionCollapsed,
    FixedAttentionFactorised,
    attention_shift,
    evaluate_circuit,
    fixed_attention,
    make_circuit,
    ramp,
    train_circuit,
    train_fixed_attention,
)
from attnlab.papers.qk_speed.synthetic import sample_batch, sample_batches, seeded_generator

V = 50


def randomised(kind: str, seed: int = 0):
    """A circuit whose every matrix is replaced by a random one (the 1e-6 * I start would hide mistakes)."""
    model = make_circuit(kind)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(V, V, generator=g) * 0.5)
    return model


def reference(model, tokens):
    """Per-example loops over the formulas of docs/papers/qk-speed.md with explicit one-hot vectors."""
    B, T = tokens.shape
    logits, attns = torch.zeros(B, V), torch.zeros(B, T)
    for b in range(B):
        xs = [torch.nn.functional.one_hot(tokens[b, j], V).float() for j in range(T)]
        x_T = xs[-1]
        scores = []
        for x_j in xs:
            if isinstance(model, FACO):  # FACO and FAFO: (W_Q x_T) . (W_K x_j)
                s = (model.W_Q @ x_T) @ (model.W_K @ x_j)
            else:  # x_T^T W_QK x_j
                s = x_T @ model.W_QK @ x_j
            scores.append(s / math.sqrt(V))
        a = torch.stack(scores).softmax(0)
        if isinstance(model, CAFO):  # CAFO and FAFO: W_O sum_j a_j W_V x_j
            out = model.W_O @ sum(a[j] * (model.W_V @ xs[j]) for j in range(T))
        else:  # W_OV sum_j a_j x_j
            out = model.W_OV @ sum(a[j] * xs[j] for j in range(T))
        logits[b], attns[b] = out, a
    return logits, attns


@pytest.mark.parametrize("kind", sorted(CIRCUITS))
def test_forward_matches_the_hand_written_formula(kind):
    model = randomised(kind)
    tokens = torch.randint(0, V, (3, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits, attn = model(tokens)
        ref_logits, ref_attn = reference(model, tokens)
    torch.testing.assert_close(attn, ref_attn, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(attn.sum(-1), torch.ones(3))


def test_factorised_circuits_equal_the_collapsed_circuit_of_their_products():
    fafo = randomised("fafo")
    caco = make_circuit("caco")
    with torch.no_grad():
        caco.W_QK.copy_(fafo.W_Q.T @ fafo.W_K)
        caco.W_OV.copy_(fafo.W_O @ fafo.W_V)
        tokens = torch.randint(0, V, (4, 9), generator=torch.Generator().manual_seed(2))
        a, b = fafo(tokens), caco(tokens)
    torch.testing.assert_close(a.attn, b.attn, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(fafo.effective_qk(), caco.W_QK)
    torch.testing.assert_close(fafo.effective_ov(), caco.W_OV)


def test_each_variant_has_its_parameters_and_groups():
    expected = {
        "fafo": (["W_Q", "W_K"], ["W_V", "W_O"]),
        "faco": (["W_Q", "W_K"], ["W_OV"]),
        "cafo": (["W_QK"], ["W_V", "W_O"]),
        "caco": (["W_QK"], ["W_OV"]),
    }
    for kind, (qk, ov) in expected.items():
        model = make_circuit(kind)
        assert [n for n, _ in model.named_parameters()] == qk + ov
        groups = model.parameter_groups()
        assert [id(p) for p in groups["qk"]] == [id(getattr(model, n)) for n in qk]
        assert [id(p) for p in groups["ov"]] == [id(getattr(model, n)) for n in ov]
    assert isinstance(FAFO(), FACO) and isinstance(FAFO(), CAFO) and not isinstance(FAFO(), CACO)


def test_initialisation_factorised_scaled_identity_collapsed_pytorch_default():
    fafo = make_circuit("fafo", seed=0)
    for p in fafo.parameters():
        torch.testing.assert_close(p.data, 1e-6 * torch.eye(V))
    caco = make_circuit("caco", seed=0)
    bound = 1 / math.sqrt(V)
    for p in caco.parameters():
        assert p.abs().max() <= bound and p.abs().max() > 0.9 * bound and p.std() > 0.5 * bound / math.sqrt(3)
    assert torch.equal(make_circuit("caco", seed=0).W_QK, caco.W_QK)  # the seed fixes the draw
    assert not torch.equal(make_circuit("caco", seed=1).W_QK, caco.W_QK)
    ident = make_circuit("caco", collapsed_init="identity", init_scale=1e-3)
    torch.testing.assert_close(ident.W_OV.data, 1e-3 * torch.eye(V))
    with pytest.raises(ValueError):
        make_circuit("caco", collapsed_init="zeros")
    with pytest.raises(ValueError):
        make_circuit("xyz")


def test_keep_mask_removes_positions_from_the_softmax():
    model = randomised("faco", seed=3)
    tokens = torch.randint(0, V, (2, 8), generator=torch.Generator().manual_seed(4))
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[:, [1, 4, 5]] = False
    with torch.no_grad():
        masked = model(tokens, keep)
        sub = model(tokens[:, keep[0]])  # the same positions removed from the sequence
    assert (masked.attn[~keep] == 0).all()
    torch.testing.assert_close(masked.attn[keep].view(2, -1), sub.attn)
    torch.testing.assert_close(masked.logits, sub.logits)


def test_train_smoke_faco_and_caco_learn_the_synthetic_task():
    for kind in ("faco", "caco"):
        result = train_circuit(
            kind, lr_qk=1.0, lr_ov=1.0, batches_per_epoch=50, max_epochs=5, seq_len=32, seed=0
        )
        losses = result.history["train_loss"]
        assert losses[0] < math.log(V) + 0.1
        assert all(b < a for a, b in pairwise(losses)), (kind, losses)
        assert losses[-1] < 0.5 * math.log(V), (kind, losses)
        assert result.steps == 250 and not result.stopped_early


def test_training_is_repeatable_bit_for_bit():
    kwargs = dict(lr_qk=0.5, lr_ov=0.2, qk_ramp=(1, 40), batches_per_epoch=20, max_epochs=2, seq_len=32)
    threads_before = torch.get_num_threads()
    for kind in ("caco", "fafo"):
        runs = [train_circuit(kind, seed=5, **kwargs) for _ in range(2)]
        assert runs[0].history == runs[1].history
        for a, b in zip(runs[0].model.parameters(), runs[1].model.parameters(), strict=True):
            assert torch.equal(a, b)
        other = train_circuit(kind, seed=6, **kwargs)
        assert torch.get_num_threads() == threads_before  # train_circuit ran on 1 thread, then restored it
        name = "W_Q" if kind == "fafo" else "W_QK"
        assert not torch.equal(getattr(other.model, name), getattr(runs[0].model, name))


def test_learning_rate_ramps_and_groups():
    r = ramp(100, 1, 40)
    assert r(0) == 1 and r(100) == 40 and r(50) == 20.5
    seen = []

    def on_epoch(epoch, model):
        seen.append(epoch)

    result = train_circuit(
        "cafo", lr_qk=0.1, lr_ov=0.01, qk_ramp=(1, 40), batches_per_epoch=10, max_epochs=5,
        loss_stop=None, seq_len=16, on_epoch=on_epoch,
    )  # fmt: skip
    # the lr of the last step of epoch e is lr * (1 + 39 * (10 e - 1) / 50)
    expected = [0.1 * (1 + 39 * (10 * e - 1) / 50) for e in range(1, 6)]
    np.testing.assert_allclose(result.history["lr_qk"], expected)
    assert result.history["lr_ov"] == [0.01] * 5
    assert seen == [1, 2, 3, 4, 5]


def test_sgd_updates_each_group_at_its_own_rate():
    """One step by hand: theta <- theta - eta_group * grad, per group."""
    start = randomised("caco", seed=7)
    inputs, targets = sample_batches(1, 32, 16, seeded_generator(9, 1))  # train_circuit's first batch
    logits, _ = start(inputs[0])
    torch.nn.functional.cross_entropy(logits, targets[0]).backward()
    model = randomised("caco", seed=7)
    result = train_circuit(
        model, lr_qk=0.3, lr_ov=0.05, batches_per_epoch=1, max_epochs=1, seq_len=16, seed=9
    )
    torch.testing.assert_close(result.model.W_QK, start.W_QK - 0.3 * start.W_QK.grad)
    torch.testing.assert_close(result.model.W_OV, start.W_OV - 0.05 * start.W_OV.grad)


def test_early_stop_when_the_epoch_loss_reaches_the_threshold():
    result = train_circuit("caco", batches_per_epoch=5, max_epochs=10, loss_stop=100.0, seq_len=16)
    assert result.stopped_early and result.steps == 5 and result.history["epoch"] == [1]


def test_evaluate_circuit_reads_mass_and_probability_from_one_pass():
    model = randomised("faco", seed=1)
    batch = sample_batch(16, 20, seeded_generator(2))
    stats = evaluate_circuit(model, batch)
    with torch.no_grad():
        logits, attn = model(batch.inputs)
    np.testing.assert_allclose(stats["distinct_mass"], (attn * batch.distinct).sum(-1).numpy(), rtol=1e-6)
    probs = logits.softmax(-1)
    np.testing.assert_allclose(stats["true_prob"], probs[torch.arange(16), batch.targets].numpy(), rtol=1e-5)
    assert (stats["correct"] == (logits.argmax(-1) == batch.targets).numpy()).all()
    # the query token: the last input and its repeats in the context, whose class it alone identifies
    query = batch.inputs == batch.inputs[:, -1:]
    assert query[:, -1].all() and (query.sum(-1) > 1).any()  # repeats occur (the query tokens are common)
    np.testing.assert_allclose(stats["query_mass"], (attn * query).sum(-1).numpy(), rtol=1e-6)
    assert not np.allclose(stats["query_mass"], attn[:, -1].numpy())  # the token, not only the position


def test_attention_shift_is_zero_at_the_init_and_measures_how_far_attention_moved():
    batch = sample_batch(32, 20, seeded_generator(3))
    start = make_circuit("fafo", seed=1, qk_init="default")
    assert np.array_equal(attention_shift(make_circuit("fafo", seed=1, qk_init="default"), start, batch),
                          np.zeros(32))  # fmt: skip
    moved = make_circuit("fafo", seed=1, qk_init="default")
    with torch.no_grad():
        moved.W_K.mul_(40.0)  # sharper scores: attention leaves the init's near-uniform pattern
    shift = attention_shift(moved, start, batch)
    with torch.no_grad():
        a, a0 = moved(batch.inputs).attn, start(batch.inputs).attn
    np.testing.assert_allclose(shift, 0.5 * (a - a0).abs().sum(-1).numpy(), rtol=1e-6)
    assert (shift > 0.05).all() and (shift <= 1).all()
    # from 1e-6 I the QK circuit sits at a saddle: an OV update alone leaves the attention where it was
    fafo, still = make_circuit("fafo", seed=1), make_circuit("fafo", seed=1)
    with torch.no_grad():
        fafo.W_O.add_(0.5)
    assert attention_shift(fafo, still, batch).max() == 0.0


def test_fixed_attention_pattern():
    distinct = torch.tensor([[True, False, True, False, False], [False, False, False, False, False]])
    a = fixed_attention(distinct, 0.8)
    torch.testing.assert_close(a[0], torch.tensor([0.4, 0.2 / 3, 0.4, 0.2 / 3, 0.2 / 3]))
    torch.testing.assert_close(a[1], torch.full((5,), 0.2))  # no distinct token: all mass on the others
    torch.testing.assert_close(fixed_attention(distinct, 1.0)[0], torch.tensor([0.5, 0, 0.5, 0, 0]))
    with pytest.raises(ValueError):
        fixed_attention(distinct, 1.5)


def test_fixed_attention_models_train_only_the_ov_circuit():
    assert [n for n, _ in FixedAttentionFactorised().named_parameters()] == ["W_V", "W_O"]
    assert [n for n, _ in FixedAttentionCollapsed().named_parameters()] == ["W_OV"]
    model = FixedAttentionCollapsed()
    tokens = torch.tensor([[12, 3, 15, 7]])
    out = model(tokens, 0.6)
    torch.testing.assert_close(out.attn, torch.tensor([[0.3, 0.2, 0.3, 0.2]]))
    torch.testing.assert_close(out.logits[0], model.W_OV @ (0.3 * torch.eye(V)[12] + 0.2 * torch.eye(V)[3]
                               + 0.3 * torch.eye(V)[15] + 0.2 * torch.eye(V)[7]))  # fmt: skip
    for factorised in (True, False):
        result = train_fixed_attention(
            0.8, factorised=factorised, epochs=3, batches_per_epoch=30, lr=0.5, seq_len=32,
            eval_alphas=(0.805,), eval_size=256,
        )  # fmt: skip
        assert result.loss.shape == (4,) and result.train_loss.shape == (3,)
        assert result.loss[-1] < result.loss[0]
        assert set(result.loss_at) == {0.805} and result.loss_at[0.805].shape == (4,)


def test_qk_init_overrides_the_qk_matrices_only():
    fafo = make_circuit("fafo", seed=0, qk_init="default")  # the authors' row-1 FAFO (Net_p1)
    assert fafo.W_Q.abs().max() > 1e-3 and fafo.W_K.abs().max() > 1e-3
    assert torch.equal(fafo.W_V, 1e-6 * torch.eye(50)) and torch.equal(fafo.W_O, 1e-6 * torch.eye(50))
    assert torch.equal(make_circuit("fafo", seed=0).W_Q, 1e-6 * torch.eye(50))
    faco = make_circuit("faco", seed=0, collapsed_init="identity")  # Net_p2: all three at 1e-6 I
    assert torch.equal(faco.W_OV, 1e-6 * torch.eye(50)) and torch.equal(faco.W_Q, 1e-6 * torch.eye(50))
    cafo = make_circuit("cafo", seed=0, qk_init="identity")  # Net_p3: W_QK, W_V, W_O at 1e-6 I
    assert torch.equal(cafo.W_QK, 1e-6 * torch.eye(50)) and torch.equal(cafo.W_V, 1e-6 * torch.eye(50))
    assert make_circuit("cafo", seed=0).W_QK.abs().max() > 1e-3  # the collapsed default: nn.Linear's
    with pytest.raises(ValueError, match="qk_init"):
        make_circuit("fafo", qk_init="zeros")


def test_the_authors_fig3_protocol():
    from attnlab.papers.qk_speed.circuits import FixedAttentionCollapsedBias
    from attnlab.papers.qk_speed.synthetic import sample_balanced_batch

    batch = sample_balanced_batch(8, 16, seeded_generator(0, 1))
    assert len(batch) == 32 and torch.bincount(batch.classes).tolist() == [8] * 4  # balanced
    assert torch.equal(batch.inputs[:, -1], batch.classes + 1)  # the label token comes last in the input
    assert torch.equal(batch.targets, batch.classes + 5)  # and the query token is the target
    model = FixedAttentionCollapsedBias(generator=seeded_generator(0, 0))
    assert model.b_OV.abs().max() <= 1 / math.sqrt(50) and model.b_OV.abs().max() > 0
    out = model(batch.inputs, 0.5)
    plain = (out.attn.unsqueeze(1) @ model.one_hot(batch.inputs)).squeeze(1) @ model.W_OV.T
    torch.testing.assert_close(out.logits, plain + model.b_OV)
    assert "b_OV" in [n for n, _ in model.named_parameters()]
    for factorised in (True, False):
        result = train_fixed_attention(
            0.8, factorised=factorised, epochs=3, batches_per_epoch=20, lr=0.5, seq_len=32,
            eval_alphas=(0.805,), eval_size=256, protocol="authors",
        )  # fmt: skip
        assert result.loss[-1] < result.loss[0] and result.loss_at[0.805].shape == (4,)
        assert isinstance(result.model, FixedAttentionCollapsedBias) != factorised
    with pytest.raises(ValueError, match="protocol"):
        train_fixed_attention(0.5, protocol="theirs")
