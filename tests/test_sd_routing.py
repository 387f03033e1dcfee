"""S-D attention, ELU+1 linear attention, per-layer head dims, the routing/filtering metrics and the
interventions of the S-D routing paper (arXiv 2605.18826)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.attention import (
    SDAttention,
    causal_linear_attention,
    causal_linear_attention_quadratic,
    elu1,
)
from attnlab.metrics import effective_rank, routing_filtering
from attnlab.model import GPT, GPTConfig
from attnlab.papers.sd_routing.routing import (
    energy_dims,
    form_stats,
    gpt_qk,
    head_dims_from_dims,
    head_forms,
    hf_attention,
    hf_qk,
    linearised,
    model_heads,
    override_forms,
    random_heads,
    random_routing,
    rank_equivalent,
    sa_truncated_forms,
    sd_heads,
    sd_truncated,
)
from attnlab.training.trainer import TrainConfig, train


def _sd_layer(seed: int = 0, **kw) -> SDAttention:
    torch.manual_seed(seed)
    cfg = GPTConfig(
        n_layer=1, d_model=24, n_head=3, head_dim=8, attn="sd", pos="learned", block_size=16, **kw
    )
    return GPT(cfg).blocks[0].attn


def test_sd_interaction_eigenvalues_have_nonpositive_real_part():
    attn = _sd_layer()
    with torch.no_grad():
        attn.routing_a.normal_(0, 3.0)
        attn.filtering_delta.normal_(0, 3.0)
    L = attn.interaction_matrices().detach().double()
    assert L.shape == (3, 8, 8)
    S = attn.routing().detach()
    torch.testing.assert_close(S, -S.transpose(-1, -2))
    assert torch.linalg.eigvals(L).real.max() <= 1e-9
    # a plain learned matrix would not be stable: the check can fail
    assert torch.linalg.eigvals(attn.routing_a.detach().double()).real.max() > 0


def test_sd_with_no_routing_and_unit_filtering_is_sa_with_negated_keys():
    sd = _sd_layer(seed=1)
    with torch.no_grad():
        sd.routing_a.normal_()  # make S nonzero first, then remove it
    assert not torch.allclose(sd.routing(), torch.zeros_like(sd.routing_a))
    with torch.no_grad():
        sd.routing_a.zero_()
        sd.filtering_delta.fill_(math.log(math.e - 1))  # softplus(delta) = 1: D = I
    torch.manual_seed(1)
    cfg = GPTConfig(n_layer=1, d_model=24, n_head=3, head_dim=8, attn="sa", pos="learned", block_size=16)
    sa = GPT(cfg).blocks[0].attn
    state = {k: v for k, v in sd.state_dict().items() if k not in ("routing_a", "filtering_delta")}
    state["k_proj.weight"] = -state["k_proj.weight"]
    sa.load_state_dict(state)
    x = torch.randn(2, 11, 24)
    torch.testing.assert_close(sd(x), sa(x), atol=1e-6, rtol=1e-5)
    # and without negating the keys it differs
    state["k_proj.weight"] = -state["k_proj.weight"]
    sa.load_state_dict(state)
    assert not torch.allclose(sd(x), sa(x), atol=1e-4)


@pytest.mark.parametrize("pos", ["learned", "rope"])
@pytest.mark.parametrize("n_kv_head", [None, 1])
def test_sd_explicit_capture_path_equals_sdpa_path(pos, n_kv_head):
    torch.manual_seed(0)
    cfg = GPTConfig(
        n_layer=2, d_model=24, n_head=3, head_dim=8, n_kv_head=n_kv_head, attn="sd", pos=pos, block_size=16
    )  # fmt: skip
    model = GPT(cfg)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.routing_a.normal_(0, 0.5)
            block.attn.filtering_delta.normal_(0, 1.0)
    idx = torch.randint(0, 256, (2, 13))
    logits, cache = model.run_with_cache(idx)
    plain, _ = model(idx)
    torch.testing.assert_close(logits, plain, atol=1e-5, rtol=1e-5)
    c = cache[0]
    # the captured (folded) queries and keys make the pattern
    g = 3 // model.cfg.kv_heads
    scores = c["q"] @ c["k"].repeat_interleave(g, 1).transpose(-1, -2) / math.sqrt(8)
    expected = scores.masked_fill(~torch.ones(13, 13, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
    torch.testing.assert_close(c["pattern"], expected, atol=1e-6, rtol=1e-5)


def test_sd_rope_scores_depend_on_relative_position_only():
    torch.manual_seed(2)
    cfg = GPTConfig(n_layer=1, d_model=24, n_head=3, head_dim=8, attn="sd", pos="rope", block_size=32)
    attn = GPT(cfg).blocks[0].attn
    with torch.no_grad():
        attn.routing_a.normal_()
    x = torch.randn(1, 4, 24)
    shifted = torch.cat((torch.randn(1, 5, 24), x), dim=1)  # the same tokens five positions later
    a, b = {}, {}
    attn(x, a)
    attn(shifted, b)
    s_a = a["q"] @ a["k"].transpose(-1, -2)
    s_b = (b["q"] @ b["k"].transpose(-1, -2))[..., 5:, 5:]
    torch.testing.assert_close(s_a, s_b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("T, chunk", [(13, 4), (13, 5), (16, 16), (7, 64), (33, 8)])
def test_linear_attention_prefix_sum_equals_quadratic_form(T, chunk):
    g = torch.Generator().manual_seed(T * chunk)
    q, k, v = (torch.randn(2, 3, T, 6, generator=g, dtype=torch.float64) for _ in range(3))
    y = causal_linear_attention(elu1(q), elu1(k), v, chunk_size=chunk)
    expected, pattern = causal_linear_attention_quadratic(elu1(q), elu1(k), v)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(2, 3, T, dtype=torch.float64))
    # a hand-written loop for one row
    i = T - 1
    w = elu1(q)[0, 0, i] @ elu1(k)[0, 0, : i + 1].T
    torch.testing.assert_close(y[0, 0, i], (w / w.sum()) @ v[0, 0, : i + 1])


@pytest.mark.parametrize("n_kv_head", [None, 2])
def test_linear_attention_module_capture_path_equals_chunked_path(n_kv_head):
    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=4, head_dim=8, n_kv_head=n_kv_head, attn="linear")
    model = GPT(cfg)
    for block in model.blocks:
        block.attn.chunk_size = 5
    idx = torch.randint(0, 256, (2, 23))
    logits, cache = model.run_with_cache(idx)
    torch.testing.assert_close(logits, model(idx)[0], atol=1e-5, rtol=1e-5)
    assert cache[0]["pattern"].shape == (2, 4, 23, 23)
    assert (cache[0]["pattern"].triu(1) == 0).all()


def test_effective_rank_of_rotation_plane_and_identity():
    d = 6
    plane = torch.zeros(d, d)
    plane[:2, :2] = torch.tensor([[0.0, -1.0], [1.0, 0.0]]) * 3.0
    torch.testing.assert_close(effective_rank(plane), torch.tensor(2.0))
    torch.testing.assert_close(effective_rank(torch.eye(d)), torch.tensor(float(d)))
    batch = torch.stack(
        (plane, torch.eye(d), torch.zeros(d, d), torch.diag(torch.tensor([1.0, 0, 0, 0, 0, 0])))
    )
    torch.testing.assert_close(effective_rank(batch), torch.tensor([2.0, 6.0, 0.0, 1.0]))
    # unequal singular values give a rank between 1 and their count
    r = effective_rank(torch.diag(torch.tensor([1.0, 0.1])))
    assert 1.0 < r < 2.0


def test_routing_filtering_energies_sum_to_one_and_pure_parts():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(4, 5, 5, generator=g, dtype=torch.float64)
    rf = routing_filtering(W)
    torch.testing.assert_close(
        rf["routing_energy"] + rf["filtering_energy"], torch.ones(4, dtype=torch.float64)
    )
    by_hand = (W - W.transpose(-1, -2)).square().sum((-2, -1)) / (4 * W.square().sum((-2, -1)))
    torch.testing.assert_close(rf["routing_energy"], by_hand)
    assert ((rf["routing_energy"] > 0) & (rf["routing_energy"] < 1)).all()
    antisym = W - W.transpose(-1, -2)
    torch.testing.assert_close(
        routing_filtering(antisym)["routing_energy"], torch.ones(4, dtype=torch.float64)
    )
    torch.testing.assert_close(
        routing_filtering(W + W.transpose(-1, -2))["filtering_energy"], torch.ones(4, dtype=torch.float64)
    )
    # -I is stable, I has n unstable eigenvalues; a rotation's are imaginary
    eye = torch.eye(3, dtype=torch.float64)
    assert routing_filtering(-eye)["n_unstable"] == 0
    assert routing_filtering(eye)["n_unstable"] == 3
    assert routing_filtering(antisym)["n_unstable"].max() == 0
    assert routing_filtering(antisym)["max_real"].abs().max() < 1e-10


def test_head_forms_match_the_dense_form_and_its_statistics():
    g = torch.Generator().manual_seed(0)
    wq, wk = torch.randn(6, 4, 20, generator=g), torch.randn(2, 4, 20, generator=g)  # 6 query, 2 key heads
    dense = wq.double().transpose(-1, -2) @ wk.double().repeat_interleave(3, 0)  # (6, 20, 20)
    forms = head_forms(wq, wk)
    assert forms.core.shape == (6, 8, 8)
    torch.testing.assert_close(forms.dense(), dense)
    stats = form_stats(wq, wk)
    R, F_ = (dense - dense.transpose(-1, -2)) / 2, (dense + dense.transpose(-1, -2)) / 2
    rf = routing_filtering(dense)
    torch.testing.assert_close(torch.tensor(stats["routing_energy"].to_numpy()), rf["routing_energy"])
    torch.testing.assert_close(torch.tensor(stats["routing_rank"].to_numpy()), effective_rank(R))
    torch.testing.assert_close(torch.tensor(stats["filtering_rank"].to_numpy()), effective_rank(F_))
    assert (torch.tensor(stats["n_unstable"].to_numpy()) == rf["n_unstable"]).all()


def test_hf_query_key_extraction_for_llama_and_bert():
    from transformers import BertConfig, BertModel, LlamaConfig, LlamaModel

    torch.manual_seed(0)
    llama = LlamaModel(LlamaConfig(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_hidden_layers=2,
        intermediate_size=64, vocab_size=50,
    ))  # fmt: skip
    qk = hf_qk(llama)
    assert len(qk) == 2 and qk[0][0].shape == (4, 8, 32) and qk[0][1].shape == (2, 8, 32)
    torch.testing.assert_close(qk[1][1].reshape(16, 32), llama.layers[1].self_attn.k_proj.weight)
    bert = BertModel(BertConfig(
        hidden_size=24, num_attention_heads=3, num_hidden_layers=2, intermediate_size=48, vocab_size=50
    ))  # fmt: skip
    qk = hf_qk(bert)
    assert len(qk) == 2 and qk[0][0].shape == (3, 8, 24)
    torch.testing.assert_close(qk[0][0].reshape(24, 24), bert.encoder.layer[0].attention.self.query.weight)
    from transformers import MPNetConfig, MPNetModel  # its projections are named q and k

    mpnet = MPNetModel(MPNetConfig(
        hidden_size=24, num_attention_heads=3, num_hidden_layers=2, intermediate_size=48, vocab_size=50,
    ))  # fmt: skip
    qk = hf_qk(mpnet)
    assert len(qk) == 2 and qk[1][1].shape == (3, 8, 24)
    torch.testing.assert_close(qk[1][1].reshape(24, 24), mpnet.encoder.layer[1].attention.attn.k.weight)


def _trained_like(kind: str, seed: int = 0, **kw) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(
        n_layer=2, d_model=32, n_head=2, head_dim=8, attn=kind, pos="learned", block_size=16, **kw
    )
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("kind", ["sa", "sd", "sd-shared"])
def test_form_override_with_unchanged_forms_reproduces_the_model(kind):
    model = _trained_like(kind)
    idx = torch.randint(0, 256, (2, 12))
    plain = model(idx)[0]
    forms = {i: head_forms(*gpt_qk(b.attn)) for i, b in enumerate(model.blocks)}
    with override_forms(model, forms):
        torch.testing.assert_close(model(idx)[0], plain, atol=1e-5, rtol=1e-5)
    truncated = sa_truncated_forms(model, "routing")
    with override_forms(model, truncated):
        assert not torch.allclose(model(idx)[0], plain, atol=1e-4)
    torch.testing.assert_close(model(idx)[0], plain)  # the hooks are gone
    # removing routing leaves a symmetric form; truncating filtering leaves R plus a multiple of a projector
    W = truncated[0].dense()
    torch.testing.assert_close(W, W.transpose(-1, -2))
    filt = sa_truncated_forms(model, "filtering")[0]
    F_ = (filt.dense() + filt.dense().transpose(-1, -2)) / 2
    assert effective_rank(F_).sub(filt.rank).abs().max() < 1e-6
    with pytest.raises(ValueError, match="RoPE"):
        rope = GPT(GPTConfig(n_layer=1, d_model=32, n_head=2, head_dim=8, pos="rope"))
        with override_forms(rope, {0: head_forms(*gpt_qk(rope.blocks[0].attn))}):
            pass


def test_the_head_subspace_has_the_heads_own_dimension():
    """Known answer: with shared query/key rows A (d x D) the form W = A^T L A reads a d-dimensional subspace,
    so the filtering truncation is (tr F / d) times the projector onto the rows of A (a 2d basis from a QR
    would put half of its projector outside that subspace and halve the scalar)."""
    model = _trained_like("sd-shared")
    wq, wk = gpt_qk(model.blocks[0].attn)
    d = wk.shape[1]
    forms = head_forms(wq, wk)
    assert (forms.rank == d).all()
    assert (head_forms(*gpt_qk(_trained_like("sa").blocks[0].attn)).rank == 2 * d).all()
    A = wk.double()  # (H, d, D)
    projector = A.transpose(-1, -2) @ torch.linalg.inv(A @ A.transpose(-1, -2)) @ A  # (H, D, D)
    dense = forms.dense()
    scalar = ((dense + dense.transpose(-1, -2)) / 2).diagonal(dim1=-2, dim2=-1).sum(-1) / d  # tr F / d
    filt = sa_truncated_forms(model, "filtering")[0].dense()
    F_ = (filt + filt.transpose(-1, -2)) / 2
    torch.testing.assert_close(F_, scalar[:, None, None] * projector)
    P = forms.basis @ forms.projector_core() @ forms.basis.transpose(-1, -2)
    torch.testing.assert_close(P, projector)


@pytest.mark.parametrize("kind", ["sd", "sd-shared"])
def test_sd_truncations(kind):
    model = _trained_like(kind)
    no_routing = sd_truncated(model, "routing")
    scalar = sd_truncated(model, "filtering")
    for orig, a, b in zip(model.blocks, no_routing.blocks, scalar.blocks, strict=True):
        assert a.attn.routing().abs().max() == 0
        torch.testing.assert_close(b.attn.routing(), orig.attn.routing())
        D, D0 = b.attn.filtering(), orig.attn.filtering()
        torch.testing.assert_close(D, D0.mean(-1, keepdim=True).expand_as(D))
        assert D0.std(-1).min() > 0  # the original was not already scalar
    assert model.blocks[0].attn.routing().abs().max() > 0  # the original is untouched


@pytest.mark.parametrize("kind", ["sa", "sd", "sd-shared"])
def test_linearised_keeps_the_weights_and_folds_the_interaction(kind):
    model = _trained_like(kind)
    lin = linearised(model, 1)
    assert [b.attn.kind for b in lin.blocks] == ["linear", kind]
    wq, _ = gpt_qk(model.blocks[0].attn)
    torch.testing.assert_close(lin.blocks[0].attn.q_proj.weight, wq.reshape(16, 32))
    torch.testing.assert_close(lin.blocks[1].state_dict(), model.blocks[1].state_dict())
    idx = torch.randint(0, 256, (1, 10))
    torch.testing.assert_close(linearised(model, 0)(idx)[0], model(idx)[0])


def test_per_layer_head_dims_run_and_count_parameters():
    cfg = GPTConfig(n_layer=3, d_model=32, n_head=2, head_dim=(4, 8, 16), attn=("sa", "sd", "linear"))
    model = GPT(cfg)
    assert [b.attn.head_dim for b in model.blocks] == [4, 8, 16]
    logits, cache = model.run_with_cache(torch.randint(0, 256, (2, 9)))
    assert logits.shape == (2, 9, 256) and cache[2]["y"].shape == (2, 2, 9, 16)
    D, H = 32, 2

    def attn_params(d: int) -> int:
        return 4 * D * H * d  # q, k, v (H_kv = H) and o, no biases

    expected = [attn_params(4), attn_params(8) + H * 8 * 8 + H * 8, attn_params(16)]
    assert [sum(p.numel() for p in b.attn.parameters()) for b in model.blocks] == expected
    assert model.param_group("blocks.1.attn.routing_a") == "interaction"
    assert model.param_group("blocks.1.attn.filtering_delta") == "interaction"
    with pytest.raises(ValueError, match="head_dim names"):
        GPTConfig(n_layer=2, head_dim=(8, 8, 8))
    # whole rotation planes, clamped to [minimum, base]
    assert head_dims_from_dims([1.0, 2.5, 5.0, 11.0, 40.0], base=32, minimum=4) == (4, 4, 6, 12, 32)


def test_sd_without_layernorm_trains():
    cfg = GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, attn="sd", norm=False, pos="learned",
                    block_size=32)  # fmt: skip
    model = GPT(cfg)
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in model.modules())
    g = torch.Generator().manual_seed(0)
    text = torch.randint(0, 16, (4000,), generator=g, dtype=torch.uint8).repeat(3)  # repeated random text
    data = {"train": text, "validation": text[:2000]}
    tcfg = TrainConfig(
        steps=40, batch_size=8, seq_len=32, lr=3e-3, warmup_steps=5, eval_every=20, eval_batches=2
    )
    result = train(cfg, tcfg, data, device="cpu", progress=False)
    losses = result.history["train_loss"]
    assert all(math.isfinite(x) for x in losses)
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.3
    assert result.history["val_loss"][-1] < result.history["val_loss"][0]


def test_hf_fused_layouts_give_the_models_own_query_key_products():
    from transformers import GPT2Config, GPT2Model, GPTNeoXConfig, GPTNeoXModel

    torch.manual_seed(0)
    x = torch.randn(5, 24)
    gpt2 = GPT2Model(GPT2Config(n_embd=24, n_head=3, n_layer=1, vocab_size=50, n_positions=16))
    attn = gpt2.h[0].attn
    torch.nn.init.zeros_(attn.c_attn.bias)
    q1, k1, _ = attn.c_attn(x).split(24, dim=-1)  # as GPT2Attention splits them
    neox = GPTNeoXModel(GPTNeoXConfig(
        hidden_size=24, num_attention_heads=3, num_hidden_layers=1, intermediate_size=48, vocab_size=50,
        attention_bias=False,
    ))  # fmt: skip
    qkv = neox.layers[0].attention.query_key_value(x).view(5, 3, 24)  # as GPTNeoXAttention views them
    q2, k2, _ = qkv.chunk(3, dim=-1)
    for model, (q, k) in ((gpt2, (q1.view(5, 3, 8), k1.view(5, 3, 8))), (neox, (q2, k2))):
        W = head_forms(*hf_qk(model)[0]).dense().float()  # (H, D, D)
        scores = torch.einsum("ihd,jhd->hij", q, k)
        torch.testing.assert_close(x @ W @ x.T, scores, atol=1e-4, rtol=1e-4)


def test_energy_dims_count_the_directions_holding_the_share():
    one_plane = torch.zeros(8, 8, dtype=torch.float64)
    one_plane[0, 1], one_plane[1, 0] = 1.0, -1.0
    # singular values 3, 3, 1, 1 (sigma^2 9, 9, 1, 1: 90 % of 20 is 18, held by the first two)
    two = torch.zeros(4, 4, dtype=torch.float64)
    two[0, 1], two[1, 0], two[2, 3], two[3, 2] = 3.0, -3.0, 1.0, -1.0
    out = energy_dims(torch.stack([one_plane[:4, :4], two, torch.zeros(4, 4, dtype=torch.float64)]), 0.9)
    assert out.tolist() == [2.0, 2.0, 0.0]
    assert energy_dims(two, 0.95).item() == 3.0 and energy_dims(two, 0.96).item() == 4.0
    assert energy_dims(torch.eye(5), 0.9).item() == 5.0


def test_rank_equivalent_maps_a_top_plane_share_to_rank_units():
    assert rank_equivalent("top-plane share", 1.0) == 2.0
    assert rank_equivalent("top-plane share", 0.25) == 8.0
    assert rank_equivalent("top-plane share", 0.0) == math.inf
    assert rank_equivalent("stable rank", 3.5) == 3.5


def test_random_baselines_are_seeded_and_match_the_shapes():
    a, b = random_routing(16, 64, seed=0, share=0.9), random_routing(16, 64, seed=0, share=0.9)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 64
    # random antisymmetric 16 x 16: entropy rank well above one plane, below the head dim; stable rank lower
    assert 11.0 < a["routing_rank"].mean() < 14.0
    assert a["routing_stable_rank"].mean() < a["routing_rank"].mean()
    assert (a["routing_top_plane"] >= 2 / 16 - 1e-12).all() and (a["routing_top_plane"] <= 1).all()
    heads = random_heads([((3, 4, 12), (1, 4, 12)), ((3, 4, 12), (3, 4, 12))], seed=1)
    assert len(heads) == 6 and heads["layer"].tolist() == [0, 0, 0, 1, 1, 1]
    # a random form has filtering energy near 1/2
    assert 0.3 < heads["filtering_energy"].mean() < 0.7


def test_shared_projection_form_is_stable_and_its_routing_is_the_head_space_one():
    model = _trained_like("sd-shared")
    heads = model_heads(model)
    assert (heads["n_unstable"] == 0).all()
    # an S-D head with separate projections has unstable model-space forms at random init
    torch.manual_seed(0)
    sd = GPT(GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, attn="sd", pos="learned"))
    assert (model_heads(sd)["n_unstable"] > 0).any()
    # D starts at 1: no drift, no spread
    fresh = sd_heads(sd)
    assert fresh["d_drift"].abs().max() < 1e-6 and fresh["d_cv"].abs().max() < 1e-6
    assert fresh["routing_dims"].eq(0).all()  # S = 0 at init


def test_check_data_refuses_more_than_one_epoch_and_names_the_build_command(tmp_path):
    from attnlab.errors import ParameterError
    from attnlab.papers import sd_routing

    # the gpu scale on the offline byte corpus would read it about ten times per run
    exp = sd_routing.configure(scale="gpu", device="cpu", corpus="shakespeare")
    with pytest.raises(ParameterError, match="at most once") as err:
        exp.check_data()
    assert sd_routing.presets.shards_command(1e8) in str(err.value)
    # missing shards stop before anything runs, with the command that builds them
    exp = sd_routing.configure(scale="gpu", device="cpu", corpus=str(tmp_path / "missing"))
    with pytest.raises(ParameterError, match="is missing") as err:
        exp.check_data()
    assert "--max-tokens 1e8" in str(err.value)
    assert sd_routing.presets.shards_command(1.3e9).endswith("--max-tokens 1e10")
    # the cpu scale reads a fraction of an epoch
    cpu = sd_routing.configure(scale="cpu", device="cpu")
    t = cpu.preset.sizes["4L-64d"].train
    assert t.steps * t.batch_size * t.seq_len < 4_000_000


def test_research_parameters_reach_the_training_specs():
    from attnlab.errors import ParameterError
    from attnlab.papers import sd_routing

    cpu = sd_routing.PRESETS["cpu"]
    assert sd_routing.configure(scale="cpu", device="cpu").preset == cpu  # the defaults: the preset's
    exp = sd_routing.configure(scale="cpu", device="cpu", steps=100, retrain_linear=[3, 1])
    train = exp.spec("3L-48d", "sd", 0).train
    assert (train.steps, train.warmup_steps, train.eval_every) == (100, 10, 20)  # preset 300, 30, 60
    assert exp.preset.retrain_linear == (1, 3)
    runs = exp.planned_runs()  # what make plan counts
    assert {"4L-64d sd first 1 linear seed 0", "4L-64d sd first 3 linear seed 0"} <= set(runs)
    bad = [
        ({"steps": -1}, "steps"),
        ({"retrain_linear": [5]}, "retrain_linear"),  # the probe size has 4 layers
        ({"retrain_linear": [1, 1]}, "retrain_linear"),
        ({"retrain_linear": [4], "sizes": ["3L-48d"]}, "retrain_linear"),  # the probe is then 3L-48d
    ]
    for params, key in bad:
        with pytest.raises(ParameterError, match=f"^{key}"):
            sd_routing.configure(scale="cpu", device="cpu", **params)


def test_reallocation_plans_the_measured_dims_and_two_controls_of_the_same_total():
    from attnlab.papers import sd_routing

    exp = sd_routing.configure(scale="cpu", device="cpu")
    n = exp.preset.sizes[exp.probe].model.n_layer  # 4L-64d, head dim 16
    cascade = pd.DataFrame([
        {"size": exp.probe, "variant": "sd", "seed": seed, "layer": layer, "routing_dims": d + 0.1 * seed}
        for seed in exp.seeds for layer, d in enumerate([9.0, 3.0, 3.0, 3.0][:n])
    ])  # fmt: skip
    dims = exp.realloc_dims(cascade, "sd")
    assert dims is not None and dims["reallocated"] == (10, 4, 4, 4)
    controls = [dims[name] for name in sd_routing.presets.REALLOC_CONTROLS]
    assert all(sum(c) == sum(dims["reallocated"]) for c in controls)
    assert controls[0] == (6, 4, 6, 6)  # 11 planes over 4 layers, the extra planes evenly spaced
    assert controls[1] != dims["reallocated"] and sorted(controls[1]) == [4, 4, 4, 10]
    assert exp.realloc_dims(cascade, "sd-shared") is None  # no cascade rows
    runs = exp.planned_runs()
    for name in ("reallocated", *sd_routing.presets.REALLOC_CONTROLS):
        assert f"{exp.probe} sd-shared {name} seed 2" in runs
    assert len({r.key for r in runs.values()}) == len(runs)  # every planned run distinct


def test_figures_say_when_a_trend_panel_is_flat_and_label_ratios_in_percent():
    import matplotlib

    matplotlib.use("Agg")
    from attnlab.papers.sd_routing import plots

    trend = pd.DataFrame([
        {"measure": m, "variant": v, "size": s, "params": p, "seed": seed,
         "fraction at min rank": 0.0 if m == "entropy rank" else 0.25 * i}
        for m in ("entropy rank", "stable rank") for v in ("sa", "sd")
        for i, (s, p) in enumerate((("2L-32d", 2.5e4), ("4L-64d", 2e5), ("5L-80d", 3.9e5))) for seed in (0, 1)
    ])  # fmt: skip
    fig = plots.scale_trend(trend)
    flat, moving = fig.axes
    assert any("no trend to read" in t.get_text() for t in flat.texts) and not moving.texts
    assert [t.get_text().split("\n")[0] for t in moving.get_xticklabels()] == ["2L-32d", "4L-64d", "5L-80d"]
    assert len(moving.lines) == 1  # the S-D variants only: SA is not part of the claim
    linear = pd.DataFrame([
        {"variant": "sd", "seed": seed, "k": k, "mode": mode, "ppl change %": c + seed}
        for seed in (0, 1) for mode, cs in (("post hoc", (0.0, 4.0, 60.0, 900.0)), ("retrained", (0.0, 2.0)))
        for k, c in enumerate(cs)
    ])  # fmt: skip
    fig = plots.linearisation(linear, "4L-64d")
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "+0 %" in labels and all(label.endswith("%") for label in labels) and 3 <= len(labels) <= 8
    matplotlib.pyplot.close("all")


# Every head's statistics from small matrices ------------------------------------------------------------


@pytest.mark.parametrize(
    ("H", "H_kv", "d", "D", "shared"),
    [(6, 2, 4, 20, False), (3, 3, 8, 40, False), (4, 1, 8, 12, False), (2, 2, 4, 16, True)],
)
def test_form_stats_from_small_matrices_equal_the_dense_forms(H, H_kv, d, D, shared):
    """The Gram-matrix path (2d x 2d cores, d x d products) against the dense D x D form: every column, with
    grouped keys, with 2d > D (a rank-deficient Gram matrix) and with shared query/key rows (rank d)."""
    from attnlab import metrics
    from attnlab.papers.sd_routing.routing import gram_core

    g = torch.Generator().manual_seed(H * 100 + D)
    wq, wk = torch.randn(H, d, D, generator=g), torch.randn(H_kv, d, D, generator=g)
    if shared:  # the shared projection's form W^T L W: query rows L^T W, key rows W
        L = torch.randn(H, d, d, generator=g)
        wq = L.transpose(-1, -2) @ wk
    dense = wq.double().transpose(-1, -2) @ wk.double().repeat_interleave(H // H_kv, 0)
    R, F_ = (dense - dense.transpose(-1, -2)) / 2, (dense + dense.transpose(-1, -2)) / 2
    stats = form_stats(wq, wk, share=0.9)
    rf, mR, mF = routing_filtering(dense), metrics.rank_measures(R), metrics.rank_measures(F_)
    expect = {
        "routing_energy": rf["routing_energy"], "filtering_energy": rf["filtering_energy"],
        "routing_rank": mR["effective_rank"], "routing_stable_rank": mR["stable_rank"],
        "routing_pr": mR["participation_ratio"], "routing_top_plane": mR["top_plane_share"],
        "filtering_rank": mF["effective_rank"], "filtering_stable_rank": mF["stable_rank"],
        "filtering_pr": mF["participation_ratio"], "filtering_top_plane": mF["top_plane_share"],
        "form_rank": effective_rank(dense), "routing_dims": energy_dims(R, 0.9),
    }  # fmt: skip
    for column, values in expect.items():
        torch.testing.assert_close(torch.tensor(stats[column].to_numpy()), values, atol=1e-6, rtol=1e-6)
    assert (torch.tensor(stats["n_unstable"].to_numpy()) == rf["n_unstable"]).all()
    # the core is the head_forms core up to an orthogonal change of basis: the same singular values
    core, cross = gram_core(wq, wk)
    ours, theirs = torch.linalg.svdvals(core), torch.linalg.svdvals(head_forms(wq, wk).core)
    r = theirs.shape[-1]  # min(D, 2d): with 2d > D the core's other values are zeros
    torch.testing.assert_close(ours[:, :r], theirs, atol=1e-8, rtol=1e-6)
    assert (ours[:, r:] <= 1e-8 * ours.max()).all()
    torch.testing.assert_close(cross, wk.double().repeat_interleave(H // H_kv, 0) @ wq.double().mT)


# Pretrained forms as each model computes them -------------------------------------------------------------


def _randomised_norms(model, centre: float):
    """``model`` with every normalisation gain (1-d weights with "norm" in their name) drawn around
    ``centre`` (Gemma's gains are 1 + weight: centre 0), the relative position bias of MPNet removed."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and p.ndim == 1 and "bias" not in name:
                p.copy_(centre + 0.5 * torch.randn_like(p))
            if "relative_attention_bias" in name:
                p.zero_()
    return model.eval()


def _decoder_probabilities(model, forms, rots, ids, bias: bool, qk_norm: bool) -> list[torch.Tensor]:
    """Each layer's causal attention probabilities computed from the folded forms at every offset (plus,
    with ``bias``, the terms of the projections' biases the forms leave out, and with ``qk_norm`` the
    per-token division by the raw queries' and keys' root mean square)."""
    from attnlab.papers.sd_routing.pretrained import norm_gain

    out = model(ids, output_hidden_states=True)
    eps, T = model.config.rms_norm_eps, ids.shape[1]
    probs = []
    for layer, (attn, (wq, wk)) in enumerate(hf_attention(model)):
        h = out.hidden_states[layer][0].double()
        x = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)  # the input norm without its gain
        (fq, fk), R = forms[layer], rots[layer]
        H, d, D = fq.shape
        g = H // fk.shape[0]
        gamma = norm_gain(model.model.layers[layer].input_layernorm, D)
        q, k = x @ fq.transpose(-1, -2), x @ fk.repeat_interleave(g, 0).transpose(-1, -2)  # (H, T, d)
        raw_q = x @ (wq.double() * gamma).transpose(-1, -2)
        raw_k = x @ (wk.double() * gamma).repeat_interleave(g, 0).transpose(-1, -2)
        if bias:
            bq, bk = attn.q_proj.bias.double().view(H, 1, d), attn.k_proj.bias.double().view(-1, 1, d)
            q, raw_q = q + bq, raw_q + bq
            k, raw_k = k + bk.repeat_interleave(g, 0), raw_k + bk.repeat_interleave(g, 0)
        scale = torch.ones(H, T, T, dtype=torch.float64)
        if qk_norm:
            inv_q, inv_k = (torch.rsqrt(r.pow(2).mean(-1) + eps) for r in (raw_q, raw_k))
            scale = inv_q[:, :, None] * inv_k[:, None, :]
        i, j = torch.tril_indices(T, T)
        scores = torch.full((H, T, T), float("-inf"), dtype=torch.float64)
        # (R(i - j) q_i) . k_j: the form at offset i - j applied to the queries
        rotated = torch.einsum("ode,hte->hotd", R.double(), q)  # (H, offsets, T, d)
        scores[:, i, j] = (rotated[:, i - j, i] * k[:, j]).sum(-1) * scale[:, i, j]
        probs.append((scores * attn.scaling).softmax(-1))
    return probs


@pytest.mark.parametrize("family", ["gemma3", "qwen2", "llama"])
def test_folded_forms_at_every_offset_give_the_models_own_attention(family):
    """The gains folded into Wq and Wk (input RMSNorm, Gemma 3's q/k RMSNorm with its 1 + weight) and the
    model's own RoPE at each offset reproduce its attention probabilities; Qwen2's q/k biases are exactly
    the terms the bilinear form leaves out."""
    import transformers as tf

    from attnlab.papers.sd_routing.pretrained import folded_qk, rope_rotations

    torch.manual_seed(0)
    small = {"vocab_size": 50, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "attn_implementation": "eager"}  # fmt: skip
    if family == "gemma3":
        cfg = tf.Gemma3TextConfig(**small, head_dim=8, sliding_window=512,
                                  layer_types=["sliding_attention", "full_attention"])  # fmt: skip
        model = _randomised_norms(tf.Gemma3ForCausalLM(cfg), 0.0)
    elif family == "qwen2":
        model = _randomised_norms(tf.Qwen2ForCausalLM(tf.Qwen2Config(**small)), 1.0)
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.q_proj.bias.normal_()
                layer.self_attn.k_proj.bias.normal_()
    else:
        model = _randomised_norms(tf.LlamaForCausalLM(tf.LlamaConfig(**small)), 1.0)
    T = 40
    ids = torch.randint(0, 50, (1, T))
    rots = rope_rotations(model, tuple(range(T)))
    assert all(r is not None and r.shape == (T, 8, 8) for r in rots)
    if family == "gemma3":  # local and global layers rotate at their own frequencies
        assert not torch.allclose(rots[0][5], rots[1][5])
    ours = _decoder_probabilities(
        model, folded_qk(model), rots, ids, bias=family == "qwen2", qk_norm=family == "gemma3"
    )
    theirs = model(ids, output_attentions=True).attentions
    for p, a in zip(ours, theirs, strict=True):
        torch.testing.assert_close(p, a[0].double(), atol=2e-6, rtol=1e-4)


@pytest.mark.parametrize("family", ["bert", "mpnet"])
def test_folded_forms_of_post_norm_encoders_read_the_previous_layers_layernorm(family):
    """BERT and MPNet read the previous layer's output LayerNorm (the embeddings' for the first layer): its
    gain folded into Wq and Wk, its shift and the biases being the terms the form leaves out, reproduce the
    attention (MPNet's relative position bias zeroed: it is added to the scores, not part of the form)."""
    import transformers as tf

    from attnlab.papers.sd_routing.pretrained import folded_qk, input_norms

    torch.manual_seed(0)
    small = {"vocab_size": 50, "hidden_size": 24, "num_attention_heads": 3, "num_hidden_layers": 3,
             "intermediate_size": 48, "attn_implementation": "eager"}  # fmt: skip
    if family == "bert":
        model = _randomised_norms(tf.BertModel(tf.BertConfig(**small)), 1.0)
    else:
        model = _randomised_norms(tf.MPNetModel(tf.MPNetConfig(**small)), 1.0)
    ids = torch.randint(0, 50, (1, 9))
    out = model(ids, output_hidden_states=True, output_attentions=True)
    norms, forms = input_norms(model), folded_qk(model)
    assert norms[0] is model.embeddings.LayerNorm and norms[2] is model.encoder.layer[1].output.LayerNorm
    for layer, (attn, (wq, wk)) in enumerate(hf_attention(model)):
        ln, h = norms[layer], out.hidden_states[layer][0].double()
        x = (h - ln.bias.double()) / ln.weight.double()  # the LayerNorm's output before its gain and shift
        q_lin, k_lin = (attn.query, attn.key) if family == "bert" else (attn.q, attn.k)
        shift_q = (wq.double() @ ln.bias.double()) + q_lin.bias.double().view(3, 8)
        shift_k = (wk.double() @ ln.bias.double()) + k_lin.bias.double().view(3, 8)
        fq, fk = forms[layer]
        q, k = x @ fq.transpose(-1, -2) + shift_q[:, None], x @ fk.transpose(-1, -2) + shift_k[:, None]
        probs = (q @ k.transpose(-1, -2) / math.sqrt(8)).softmax(-1)
        torch.testing.assert_close(probs, out.attentions[layer][0].double(), atol=2e-6, rtol=1e-4)


def test_pretrained_heads_measure_rope_models_at_every_offset_and_encoders_at_zero():
    import transformers as tf

    from attnlab.papers.sd_routing.pretrained import pretrained_heads

    torch.manual_seed(0)
    llama = tf.LlamaForCausalLM(tf.LlamaConfig(
        vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2,
    ))  # fmt: skip
    heads = pretrained_heads(llama, (0, 1, 16))
    assert len(heads) == 3 * 2 * 4 and sorted(set(heads["offset"])) == [0, 1, 16]
    at = heads.set_index(["offset", "layer", "head"])["filtering_energy"]
    assert not np.allclose(at.loc[0].to_numpy(), at.loc[16].to_numpy())  # the rotation moves the split
    bert = tf.BertModel(tf.BertConfig(
        vocab_size=50, hidden_size=24, num_attention_heads=3, num_hidden_layers=2, intermediate_size=48
    ))  # fmt: skip
    assert set(pretrained_heads(bert, (0, 1, 16))["offset"]) == {0}  # position-free: one form


# The random-weight null, resampled from a pool of key groups ----------------------------------------------


def test_resampled_null_spreads_as_full_draws_do():
    """Gaussian heads of one shape are identically distributed in every layer and independent across key
    groups: the model-level statistics resampled from a pool of ten models' groups have the centre and
    spread of 200 full draws (the spread widened by about sqrt(1 + 1/10) for the pool's own uncertainty)."""
    from scipy import stats

    from attnlab.papers.sd_routing.pretrained import NULL_COLUMNS, head_flags, random_pool, resampled_null

    shapes = [((4, 4, 16), (2, 4, 16))] * 4
    full = random_pool(shapes, 210)
    per_model = head_flags(full).groupby("draw")[list(NULL_COLUMNS)].mean().astype(float)
    truth = per_model.loc[:199]
    pool = full[full["draw"] >= 200]
    null = resampled_null(pool, 4000, seed=0)
    assert len(null) == 4000 and list(null.columns) == ["draw", *NULL_COLUMNS]
    for column in ("filtering_energy", "dominant", "lower"):
        sd = truth[column].std()
        assert abs(null[column].mean() - truth[column].mean()) < 0.6 * sd, column  # the pool's mean
        assert 0.8 < null[column].std() / sd < 1.4, column
    # the assumption: a head's statistics do not depend on its layer (one distribution per shape)
    by_layer = [g["filtering_energy"].to_numpy() for _, g in full[full["draw"] < 100].groupby("layer")]
    assert stats.kruskal(*by_layer).pvalue > 0.01
    assert resampled_null(pool, 50, seed=3).equals(resampled_null(pool, 50, seed=3))  # seeded


def test_resampled_null_takes_key_groups_whole_and_keeps_each_strata_count():
    from attnlab.papers.sd_routing.pretrained import random_pool, resampled_null

    # a pool where every group's heads agree and groups differ: a model-level share drawn from whole groups
    # is a multiple of 1 / (groups), never the share of a mixed group
    pool = random_pool([((4, 4, 16), (2, 4, 16))] * 2, 3)
    assert list(pool.groupby(["draw", "layer"])["group"].nunique().unique()) == [2]
    forced = pool.assign(filtering_energy=np.where(pool["group"] == 0, 0.9, 0.1))
    null = resampled_null(forced, 200, seed=1)
    assert set(np.round(null["dominant"] * 4, 9)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    # two shapes: each stratum contributes as many heads as the model has there (8 + 6 of 14 heads)
    mixed = random_pool([((4, 4, 16), (2, 4, 16)), ((4, 4, 16), (2, 4, 16)), ((6, 4, 20), (6, 4, 20))], 4)
    assert mixed["stratum"].nunique() == 2
    ones = mixed.assign(filtering_energy=np.where(mixed["stratum"] == "6x4x20/6", 0.9, 0.1))
    assert np.allclose(resampled_null(ones, 20, seed=0)["dominant"], 6 / 14)
