"""The attention variants against naive references on random inputs."""

import math

import pytest
import torch

from attnlab.attention import ATTENTION_KINDS, CausalSelfAttention, RotaryEmbedding, exclusive
from attnlab.model import GPT, GPTConfig


def naive_exclusive(y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    B, H, T, _ = y.shape
    group = H // v.shape[1]
    z = torch.empty_like(y)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                vi = v[b, h // group, i]
                z[b, h, i] = y[b, h, i] - (y[b, h, i] @ vi) / (vi @ vi) * vi
    return z


def test_exclusive_matches_naive_loop_and_is_orthogonal():
    g = torch.Generator().manual_seed(0)
    y, v = torch.randn(2, 3, 5, 8, generator=g), torch.randn(2, 3, 5, 8, generator=g)
    z = exclusive(y, v)
    torch.testing.assert_close(z, naive_exclusive(y, v))
    assert (z * v).sum(-1).abs().max() < 1e-5


def test_exclusive_grouped_query_broadcasts_each_value_head_over_its_group():
    g = torch.Generator().manual_seed(1)
    y, v = torch.randn(2, 6, 5, 4, generator=g), torch.randn(2, 2, 5, 4, generator=g)
    z = exclusive(y, v)
    torch.testing.assert_close(z, naive_exclusive(y, v))
    # same as copying the value heads explicitly
    torch.testing.assert_close(z, exclusive(y, v.repeat_interleave(3, dim=1)))


def test_exclusive_is_identity_and_finite_where_value_is_zero():
    y = torch.randn(1, 2, 4, 8)
    v = torch.randn(1, 2, 4, 8)
    v[0, 1, 2] = 0.0
    z = exclusive(y, v)
    assert torch.isfinite(z).all()
    torch.testing.assert_close(z[0, 1, 2], y[0, 1, 2])


def test_exclusive_rejects_incompatible_heads():
    with pytest.raises(ValueError, match="incompatible"):
        exclusive(torch.randn(1, 3, 4, 8), torch.randn(1, 2, 4, 8))


def test_rope_matches_complex_rotation():
    rope = RotaryEmbedding(head_dim=8, max_len=6)
    x = torch.randn(1, 2, 6, 8)
    pairs = torch.complex(x[..., :4], x[..., 4:])
    freqs = 10000.0 ** (-torch.arange(0, 8, 2) / 8)
    angles = torch.arange(6)[:, None] * freqs
    rotated = pairs * torch.polar(torch.ones_like(angles), angles)
    torch.testing.assert_close(rope(x), torch.cat((rotated.real, rotated.imag), -1))


def reference_attention(attn: CausalSelfAttention, x: torch.Tensor, exclusive_readout: bool):
    """Hand-written masked-softmax attention with a per-position loop over keys."""
    B, T, _ = x.shape
    H, H_kv, d = attn.n_head, attn.n_kv_head, attn.head_dim
    q = (x @ attn.q_proj.weight.T).view(B, T, H, d)
    k = (x @ attn.k_proj.weight.T).view(B, T, H_kv, d)
    v = (x @ attn.v_proj.weight.T).view(B, T, H_kv, d)
    heads = torch.zeros(B, T, H, d)
    for b in range(B):
        for h in range(H):
            kv = h // (H // H_kv)
            for i in range(T):
                scores = torch.stack([q[b, i, h] @ k[b, j, kv] / math.sqrt(d) for j in range(i + 1)])
                weights = scores.softmax(0)
                yi = sum(weights[j] * v[b, j, kv] for j in range(i + 1))
                if exclusive_readout:
                    vi = v[b, i, kv]
                    yi = yi - (yi @ vi) / (vi @ vi) * vi
                heads[b, i, h] = yi
    return heads.reshape(B, T, H * d) @ attn.o_proj.weight.T


@pytest.mark.parametrize("kind", ["sa", "xsa"])
@pytest.mark.parametrize("n_kv_head", [None, 2])
def test_attention_matches_hand_written_reference(kind, n_kv_head):
    torch.manual_seed(0)
    cfg = GPTConfig(
        n_layer=1, d_model=16, n_head=4, head_dim=6, n_kv_head=n_kv_head, pos="learned",
        attn=kind, block_size=8,
    )  # fmt: skip
    attn = GPT(cfg).blocks[0].attn
    x = torch.randn(2, 7, 16)
    expected = reference_attention(attn, x, exclusive_readout=kind == "xsa")
    torch.testing.assert_close(attn(x), expected, atol=1e-5, rtol=1e-4)  # SDPA path
    torch.testing.assert_close(attn(x, capture={}), expected, atol=1e-5, rtol=1e-4)  # explicit path


@pytest.mark.parametrize("kind", ["sa", "xsa"])
def test_captured_intermediates_are_those_the_forward_pass_used(kind):
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=4, head_dim=8, n_kv_head=2, attn=kind, block_size=16)
    model = GPT(cfg)
    idx = torch.randint(0, 256, (2, 16))
    logits, cache = model.run_with_cache(idx)
    plain, _ = model(idx)
    torch.testing.assert_close(logits, plain, atol=1e-5, rtol=1e-5)
    assert len(cache) == 2
    for c in cache:
        B, H, T, d = c["y"].shape
        assert c["pattern"].shape == (B, H, T, T)
        torch.testing.assert_close(c["pattern"].sum(-1), torch.ones(B, H, T))
        assert (c["pattern"].triu(1) == 0).all()
        # y is the pattern applied to the captured values; z is the readout of y
        v = c["v"].repeat_interleave(2, dim=1)
        torch.testing.assert_close(c["y"], c["pattern"] @ v, atol=1e-6, rtol=1e-5)
        expected_z = exclusive(c["y"], c["v"]) if kind == "xsa" else c["y"]
        torch.testing.assert_close(c["z"], expected_z)
    # re-running the first layer's attention on its input reproduces every captured tensor
    x = model.ln_emb(model.wte(idx)) if model.ln_emb is not None else model.wte(idx)
    again: dict = {}
    model.blocks[0].attn(model.blocks[0].ln_1(x), again)
    for key in ("q", "k", "v", "pattern", "y", "z"):
        torch.testing.assert_close(again[key], cache[0][key])


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="unknown kind"):
        GPTConfig(attn="nope")
    with pytest.raises(ValueError, match="layers"):
        GPTConfig(n_layer=2, attn=("sa", "xsa", "sa"))
    with pytest.raises(ValueError, match="multiple"):
        GPTConfig(n_head=4, n_kv_head=3)


def test_per_layer_attention_kinds():
    model = GPT(GPTConfig(n_layer=3, attn=("sa", "xsa", "sa")))
    assert [b.attn.kind for b in model.blocks] == ["sa", "xsa", "sa"]


def test_learned_sinks_are_prepended_and_attended_but_not_predicted():
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=16, n_sink=3, attn="xsa")
    model = GPT(cfg)
    idx = torch.randint(0, 256, (2, 16))
    logits, cache = model.run_with_cache(idx)
    assert logits.shape == (2, 16, 256)
    assert cache[0]["pattern"].shape == (2, 2, 19, 19)
    assert (cache[0]["pattern"][..., 3:, :3].sum(-1) > 0).all()  # every token can attend to the sinks
    # sinks change the prediction, and they learn: the loss sends them a gradient
    without = GPT(GPTConfig(**{**cfg.to_dict(), "n_sink": 0}))
    without.load_state_dict({k: v for k, v in model.state_dict().items() if k != "sink"})
    assert not torch.allclose(without(idx)[0], logits)
    _, loss = model(idx, idx)
    loss.backward()
    assert model.sink.grad is not None and model.sink.grad.abs().sum() > 0
    assert model.param_group("sink") == "embed"
    assert model.num_params() == without.num_params()


def test_classification_head_reads_each_sequences_last_token():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, d_model=32, n_head=2, head_dim=16, block_size=16, n_classes=3))
    short, long = torch.randint(0, 256, (1, 5)), torch.randint(0, 256, (1, 9))
    padded = torch.zeros(2, 9, dtype=torch.long)
    padded[0, :5], padded[1] = short[0], long[0]
    batched = model.classify(padded, last=torch.tensor([4, 8]))
    assert batched.shape == (2, 3)
    # right padding never reaches an earlier position of a causal model
    torch.testing.assert_close(batched[0], model.classify(short)[0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(batched[1], model.classify(long)[0], atol=1e-6, rtol=1e-5)
    assert model.param_group("cls_head.weight") == "head"
    with pytest.raises(ValueError, match="no classification head"):
        GPT(GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8)).classify(short)


def _name_matched_group(name: str) -> str:
    """The learning-rate groups as ``GPT.param_group`` assigned them by matching parameter names, before each
    attention variant declared its own: every parameter must stay in the group it had (same optimizer groups,
    same learning rates, same numbers)."""
    if name.startswith(("wte", "wpe", "sink")):
        return "embed"
    if name.endswith(("q_proj.weight", "k_proj.weight", "q_proj.bias", "k_proj.bias")):
        return "qk"
    if name.endswith(("routing_a", "filtering_delta")):
        return "interaction"
    if ".attn." in name:
        return "ov"
    if ".mlp." in name:
        return "mlp"
    if name.startswith(("lm_head", "cls_head")):
        return "head"
    return "norm"


@pytest.mark.parametrize("kind", sorted(ATTENTION_KINDS))
@pytest.mark.parametrize(
    "extra",
    [
        {},
        dict(bias=True, pos="learned", embed_norm=True, n_sink=2, n_classes=3, tie_embeddings=False),
        dict(norm=False, n_kv_head=1, head_dim=(8, 4)),
    ],
)
def test_every_parameter_keeps_its_learning_rate_group(kind, extra):
    if kind == "sd-shared" and extra.get("n_kv_head"):
        pytest.skip("sd-shared has one projection per head: no grouped key/value heads")
    cfg = GPTConfig(
        **{"n_layer": 2, "d_model": 16, "n_head": 2, "head_dim": 8, "block_size": 8, **extra},
        attn=(kind, "sa"),
    )
    model = GPT(cfg)
    names = [name for name, _ in model.named_parameters()]
    assert {name: model.param_group(name) for name in names} == {n: _name_matched_group(n) for n in names}
    assert model.param_group("lm_head.weight") == "head"  # tied: named once, as wte.weight


def test_controls_project_out_their_own_direction():
    from attnlab.attention import PreviousValueExclusion, RandomDirectionExclusion, previous_values

    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=16)
    x = torch.randn(2, 8, 32)
    rnd, prev = RandomDirectionExclusion(cfg), PreviousValueExclusion(cfg)
    for layer in (rnd, prev):
        cap: dict = {}
        layer(x, cap)
        u = rnd.direction[None, :, None, :] if layer is rnd else previous_values(cap["v"])
        dots = (cap["z"] * torch.nn.functional.normalize(u, dim=-1)).sum(-1)
        assert dots.abs().max() < 1e-5  # z is orthogonal to the removed direction
    cap = {}
    prev(x, cap)
    assert torch.allclose(cap["z"][:, :, 0], cap["y"][:, :, 0])  # no previous token: z_0 = y_0
    # the random direction is fixed by the run's seed and the layer index, not by earlier draws of the global
    # RNG (tests/test_xsa_controls.py checks that seeds differ)
    torch.manual_seed(0)
    torch.randn(7)
    assert torch.equal(RandomDirectionExclusion(cfg).direction, rnd.direction)
    assert not torch.equal(RandomDirectionExclusion(cfg, layer=1).direction, rnd.direction)


def test_shared_projection_sd_has_one_projection_and_a_stable_form():
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=1, d_model=32, n_head=2, head_dim=8, block_size=16, attn=("sd-shared",))
    model = GPT(cfg)
    attn = model.blocks[0].attn
    assert attn.q_proj is attn.k_proj
    names = [n for n, _ in attn.named_parameters()]
    assert sum("proj.weight" in n for n in names) == 3  # q = k, v, o
    with torch.no_grad():
        attn.routing_a.normal_()
    w = attn.k_proj.weight.view(2, 8, 32)
    form = w.transpose(-1, -2) @ attn.interaction_matrices() @ w  # (H, D, D): W^T L W
    sym = (form + form.transpose(-1, -2)) / 2
    assert torch.linalg.eigvalsh(sym).max() < 1e-6  # negative semidefinite symmetric part
    with pytest.raises(ValueError, match="n_kv_head"):
        GPT(GPTConfig(n_layer=1, d_model=32, n_head=2, n_kv_head=1, head_dim=8, attn=("sd-shared",)))


def test_sinks_do_not_move_the_shared_initialisation():
    torch.manual_seed(7)
    a = GPT(GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=16))
    torch.manual_seed(7)
    b = GPT(GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=16, n_sink=4))
    sb = b.state_dict()
    for name, t in a.state_dict().items():
        assert torch.equal(t, sb[name]), name
