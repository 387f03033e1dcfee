"""The contract every attention variant in ``ATTENTION_KINDS`` keeps, checked on small random float64 models:
a new variant is tested by registering it.

- the fused path (no capture) and the explicit path (capture) compute the same output;
- the captured intermediates reproduce the layer's output: o_proj of z, y = pattern @ v, z = readout(y, v),
  and ``heads`` on the captured q, k, v gives z again;
- the scores are q^T L k / sqrt(d) with the declared ``interaction_matrices`` where ``bilinear_scores``;
- a value scale of 1 everywhere changes nothing, and a value scale rescales exactly the terms a_ij v_j, for
  ``GPT`` through ``attnlab.hf.capture`` / ``attnlab.hf.intervene``;
- every parameter has a declared learning-rate group, and an undeclared one is refused.
"""

import math

import pytest
import torch

from attnlab.attention import ATTENTION_KINDS, CausalSelfAttention
from attnlab.model import GPT, GPTConfig

KINDS = sorted(ATTENTION_KINDS)
SHAPES = {  # (n_kv_head, pos, bias)
    "mha-rope": (None, "rope", False),
    "gqa-learned-bias": (2, "learned", True),
}
ATOL = 1e-6


def _model(kind: str, shape: str, block_size: int = 16, n_layer: int = 2) -> GPT:
    """A float64 GPT with every layer of ``kind``, its parameters moved off their initial values (S-D starts
    at L = -I) by seeded noise."""
    n_kv_head, pos, bias = SHAPES[shape]
    if kind == "sd-shared" and n_kv_head is not None:
        pytest.skip("sd-shared has one projection per head: no grouped key/value heads")
    torch.manual_seed(0)
    cfg = GPTConfig(
        vocab_size=64, block_size=block_size, n_layer=n_layer, d_model=24, n_head=4, head_dim=6,
        n_kv_head=n_kv_head, pos=pos, bias=bias, attn=kind,
    )  # fmt: skip
    model = GPT(cfg).double().eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def _input(model: GPT, T: int, B: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(2)
    return torch.randn(B, T, model.cfg.d_model, generator=g, dtype=torch.float64)


def _merge(z: torch.Tensor) -> torch.Tensor:
    B, H, T, d = z.shape
    return z.transpose(1, 2).reshape(B, T, H * d)


def _expand(v: torch.Tensor, n_head: int) -> torch.Tensor:
    return v.repeat_interleave(n_head // v.shape[1], dim=1)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_fused_path_equals_explicit_path(kind, shape):
    model = _model(kind, shape, block_size=80)
    attn = model.blocks[0].attn
    x = _input(model, T=80)  # longer than one chunk of a chunked kernel
    torch.testing.assert_close(attn(x), attn(x, capture={}), atol=ATOL, rtol=0)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_captured_intermediates_reproduce_the_output(kind, shape):
    model = _model(kind, shape)
    attn = model.blocks[0].attn
    x = _input(model, T=11)
    cap: dict = {}
    out = attn(x, capture=cap)
    torch.testing.assert_close(attn.o_proj(_merge(cap["z"])), out, atol=ATOL, rtol=0)
    torch.testing.assert_close(attn.readout(cap["y"], cap["v"]), cap["z"], atol=ATOL, rtol=0)
    if attn.values_additive:
        torch.testing.assert_close(cap["z"], cap["y"], atol=0, rtol=0)
    # the one place head outputs are formed, fused, from the captured queries, keys and values
    torch.testing.assert_close(attn.heads(cap["q"], cap["k"], cap["v"]), cap["z"], atol=ATOL, rtol=0)
    pattern = cap["pattern"]
    if pattern is not None:
        B, H, T, _ = pattern.shape
        assert pattern.shape == (B, attn.n_head, T, T)
        assert (pattern.triu(1) == 0).all()
        torch.testing.assert_close(
            pattern.sum(-1), torch.ones(B, H, T, dtype=pattern.dtype), atol=ATOL, rtol=0
        )
        torch.testing.assert_close(pattern @ _expand(cap["v"], attn.n_head), cap["y"], atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_bilinear_scores_use_the_declared_interaction(kind):
    model = _model(kind, "gqa-learned-bias")
    attn = model.blocks[0].attn
    with torch.no_grad():  # scores without projection biases: x_i^T Wq^T L Wk x_j / sqrt(d)
        attn.q_proj.bias.zero_()
        attn.k_proj.bias.zero_()
    x = _input(model, T=9)
    cap: dict = {}
    attn(x, capture=cap)
    L = attn.interaction_matrices()  # (H, d, d)
    assert L.shape == (attn.n_head, attn.head_dim, attn.head_dim)
    if attn.routing_filtering:
        torch.testing.assert_close(L, attn.routing() - torch.diag_embed(attn.filtering()))
        torch.testing.assert_close(attn.routing(), -attn.routing().transpose(-1, -2))
        assert (attn.filtering() > 0).all()
    if not attn.bilinear_scores:
        return
    B, T, _ = x.shape
    q = attn.q_proj(x).view(B, T, attn.n_head, attn.head_dim).transpose(1, 2)
    k = _expand(attn.k_proj(x).view(B, T, attn.n_kv_head, attn.head_dim).transpose(1, 2), attn.n_head)
    scores = q @ L @ k.transpose(-1, -2) / math.sqrt(attn.head_dim)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    want = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    torch.testing.assert_close(cap["pattern"], want, atol=ATOL, rtol=0)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_value_scale_through_hf_capture_and_intervene(kind, shape):
    pytest.importorskip("transformers")
    from attnlab import hf

    model = _model(kind, shape)
    attn = model.blocks[0].attn
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(3))
    inputs = []
    handle = attn.register_forward_pre_hook(lambda mod, args: inputs.append(args[0]))
    plain, cache = model.run_with_cache(ids)
    handle.remove()
    # a scale that removes nothing changes nothing
    ones = {layer: torch.ones(1) for layer in range(model.cfg.n_layer)}
    with hf.intervene(model, ones):
        same, _ = model(ids)
    torch.testing.assert_close(same, plain, atol=ATOL, rtol=0)
    with hf.intervene(model, lambda layer: hf.value_scale(torch.zeros(2, 10, dtype=torch.bool))):
        torch.testing.assert_close(model(ids)[0], plain, atol=ATOL, rtol=0)

    # a scale rescales exactly the terms a_ij v_j: the layer's output is o_proj(readout((a * s) @ v, v))
    scale = torch.rand(
        2, model.cfg.n_head, 10, 10, generator=torch.Generator().manual_seed(4), dtype=torch.float64
    )
    cap: dict = {}
    with attn.scaling_values(scale):
        out = attn(inputs[0], capture=cap)
    assert attn.value_scale is None  # the scale is gone after the block
    torch.testing.assert_close(cap["pattern"], cache[0]["pattern"], atol=ATOL, rtol=0)  # the model's own
    y = (cache[0]["pattern"] * scale) @ _expand(cache[0]["v"], attn.n_head)
    torch.testing.assert_close(cap["y"], y, atol=ATOL, rtol=0)
    torch.testing.assert_close(out, attn.o_proj(_merge(attn.readout(y, cache[0]["v"]))), atol=ATOL, rtol=0)

    # dropping token 4 everywhere leaves the earlier positions alone
    drop4 = hf.value_scale(torch.arange(10).expand(2, 10) == 4)
    with hf.intervene(model, {0: drop4, 1: drop4}):
        dropped, _ = model(ids)
    torch.testing.assert_close(dropped[:, :4], plain[:, :4], atol=ATOL, rtol=0)
    # later ones change (at 4 itself XSA's readout removes the v_4 direction whether the term is there or not)
    assert (dropped[:, 5:] - plain[:, 5:]).abs().amax(-1).min() > 1e-6

    if not attn.values_additive:
        with pytest.raises(ValueError, match="no per-head projected values"):
            hf.capture(model, ids)
        return
    outs = {}
    handles = [
        m.register_forward_hook(lambda mod, a, o, layer=layer: outs.__setitem__(layer, o))
        for layer, m in hf.attention_modules(model).items()
    ]
    logits, records = hf.capture(model, ids, scales=ones)
    for h in handles:
        h.remove()
    torch.testing.assert_close(logits, plain, atol=ATOL, rtol=0)
    for layer, rec in records.items():
        bias = 0 if rec["o_bias"] is None else rec["o_bias"]
        torch.testing.assert_close(
            (rec["pattern"] @ rec["values"]).sum(1) + bias, outs[layer], atol=ATOL, rtol=0
        )


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_every_parameter_has_a_declared_group(kind, shape):
    attn = _model(kind, shape).blocks[0].attn
    groups = {name: attn.param_group(name) for name, _ in attn.named_parameters(remove_duplicate=False)}
    assert set(groups.values()) <= {"qk", "ov", "interaction"}
    assert groups["q_proj.weight"] == groups["k_proj.weight"] == "qk"
    assert groups["v_proj.weight"] == groups["o_proj.weight"] == "ov"
    attn.extra = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))  # a parameter no group declares
    with pytest.raises(KeyError, match="extra"):
        attn.param_group("extra")


def test_the_registry_names_each_kind_once():
    assert all(
        cls.kind == kind and issubclass(cls, CausalSelfAttention) for kind, cls in ATTENTION_KINDS.items()
    )
