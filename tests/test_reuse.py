"""attnlab.reuse: three papers' measurements on any Hugging Face causal LM, each checked against a naive
reference computed by loops from the model's own weights and forward pass (a tiny random Llama with grouped
query attention and non-zero biases)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("transformers")

from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from attnlab import hf, reuse  # noqa: E402
from attnlab.errors import ParameterError  # noqa: E402


def _tiny_llama(seed=0):
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, head_dim=8, attention_bias=True, max_position_embeddings=64,
        initializer_range=0.3,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            torch.nn.init.normal_(p, std=0.5)
    return model


@pytest.fixture(scope="module")
def model():
    return _tiny_llama()


@pytest.fixture(scope="module")
def ids():
    return torch.randint(0, 64, (3, 12), generator=torch.Generator().manual_seed(1))


def _attention_io(model):
    """Each attention module's input hidden states and output, by layer (forward hooks)."""
    seen, handles = {}, []
    for layer, module in hf.attention_modules(model).items():

        def hook(mod, args, kwargs, out, layer=layer):
            x = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
            seen[layer] = (x.detach(), out[0].detach())

        handles.append(module.register_forward_hook(hook, with_kwargs=True))
    return seen, handles


def test_capture_heads_gives_the_tensors_the_layer_computed(model, ids):
    seen, handles = _attention_io(model)
    try:
        heads = reuse.capture_heads(model, ids)
    finally:
        for h in handles:
            h.remove()
    modules = hf.attention_modules(model)
    assert sorted(heads) == [0, 1]
    for layer, rec in heads.items():
        module = modules[layer]
        x, out = seen[layer]
        B, T = ids.shape
        assert rec["pattern"].shape == (B, 6, T, T) and rec["v"].shape == (B, 2, T, 8)
        assert rec["y"].shape == (B, 6, T, 8) and rec["values"].shape == (B, 6, T, 48)
        assert rec["z"] is rec["y"]
        # the value heads are v_proj of the layer's input, by head
        naive_v = module.v_proj(x).detach().view(B, T, 2, 8).transpose(1, 2)
        torch.testing.assert_close(rec["v"], naive_v)
        # y_i = sum_j a_ij v_j per query head (head h reads value head h // 3), and o_proj(y) is the output
        y = torch.zeros(B, 6, T, 8)
        for b in range(B):
            for h in range(6):
                for i in range(T):
                    for j in range(i + 1):
                        y[b, h, i] += rec["pattern"][b, h, i, j] * rec["v"][b, h // 3, j]
        torch.testing.assert_close(rec["y"], y, rtol=1e-5, atol=1e-5)
        assert rec["pattern"].triu(1).abs().max() == 0
        recon = module.o_proj(rec["y"].transpose(1, 2).reshape(B, T, 48))
        torch.testing.assert_close(recon, out, rtol=1e-4, atol=1e-5)


def _naive_forward(model, ids):
    """Per layer: the similarity bias (XSA Fig. 1), attention and contribution weight of token 0 (arXiv
    2606.07604: c_i0 = <o_i, a_i0 v~_0> / ||o_i||^2, v~_j = W_O^h v_j), by loops over sequences, heads and
    positions i >= 1."""
    heads = reuse.capture_heads(model, ids)
    modules = hf.attention_modules(model)
    rows = {}
    for layer, rec in heads.items():
        P, v = rec["pattern"].double(), rec["v"].double()
        W_O = modules[layer].o_proj.weight.detach().double()
        B, H, T, _ = P.shape
        sums = dict.fromkeys(
            ["cos_yv", "cos_vv", "a_ii", "uniform", "first_attention", "first_contribution"], 0.0
        )
        for b in range(B):
            for h in range(H):
                vh = v[b, h // 3]  # (T, d)
                proj = vh @ W_O[:, h * 8 : (h + 1) * 8].T  # (T, D): v~_j
                cos_yv, cos_vv, pairs, a_ii, first_a, first_c, uniform = 0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0
                for i in range(1, T):
                    y = sum(P[b, h, i, j] * vh[j] for j in range(i + 1))
                    cos_yv += float(torch.dot(y, vh[i]) / (y.norm() * vh[i].norm()))
                    for j in range(i):
                        cos_vv += float(torch.dot(vh[i], vh[j]) / (vh[i].norm() * vh[j].norm()))
                        pairs += 1
                    a_ii += float(P[b, h, i, i])
                    uniform += 1 / (i + 1)
                    o = sum(P[b, h, i, j] * proj[j] for j in range(i + 1))
                    first_a += float(P[b, h, i, 0])
                    first_c += float(P[b, h, i, 0] * torch.dot(o, proj[0]) / torch.dot(o, o))
                n = T - 1
                for key, value in zip(
                    sums,
                    (cos_yv / n, cos_vv / pairs, a_ii / n, uniform / n, first_a / n, first_c / n),
                    strict=True,
                ):
                    sums[key] += value / (B * H)
        rows[layer] = sums
    return rows


def test_forward_measures_match_the_naive_reference(model, ids):
    got = reuse.forward_measures(model, ids, batch_size=2)  # two batches: the mean is over every sequence
    naive = _naive_forward(model, ids)
    assert list(got["layer"]) == [0, 1]
    for _, row in got.iterrows():
        for key, value in naive[int(row["layer"])].items():
            assert row[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


def test_weight_measures_match_the_dense_forms(model):
    """W = W_Q^h^T W_K^{g(h)} (D x D) per head from the q/k projections; routing R = (W - W^T) / 2 (arXiv
    2605.18826): energy share ||R||^2 / ||W||^2 and stable rank of R, head means."""
    got = reuse.weight_measures(model).set_index("layer")
    for layer, module in hf.attention_modules(model).items():
        wq = module.q_proj.weight.detach().double().view(6, 8, 48)
        wk = module.k_proj.weight.detach().double().view(2, 8, 48)
        energies, ranks = [], []
        for h in range(6):
            W = wq[h].T @ wk[h // 3]
            R = (W - W.T) / 2
            energies.append(float(R.square().sum() / W.square().sum()))
            s = np.linalg.svd(R.numpy(), compute_uv=False)
            ranks.append(float((s**2).sum() / s.max() ** 2))
        assert got.loc[layer, "routing_energy"] == pytest.approx(np.mean(energies), rel=1e-5)
        assert got.loc[layer, "routing_stable_rank"] == pytest.approx(np.mean(ranks), rel=1e-4)
        assert 0.3 < got.loc[layer, "routing_energy_random"] < 0.7  # Gaussian weights: about one half
    again = reuse.weight_measures(model)
    assert again.equals(reuse.weight_measures(model)) and again.equals(got.reset_index())


def test_measure_is_one_row_per_layer_with_every_column(model, ids):
    frame = reuse.measure(model, ids)
    assert list(frame.columns) == ["layer", *reuse.COLUMNS] and len(frame) == 2
    assert frame.notna().all().all()


def test_values_transformed_after_v_proj_are_refused(model, ids):
    heads = reuse.capture_heads(model, ids)
    o_weight = hf.attention_modules(model)[0].o_proj.weight
    rec = heads[0]
    reuse.check_values(0, rec["v"], rec["values"], o_weight)
    with pytest.raises(ValueError, match="after v_proj"):
        reuse.check_values(0, 2 * rec["v"], rec["values"], o_weight)


def test_text_model_at_smoke_is_the_seeded_tiny_llama():
    a, b, c = (reuse.text_model(scale="smoke", seed=s, device="cpu") for s in (0, 0, 1))
    assert a.n_layers == 2 and a.tokenizer is None and "tiny random Llama" in a.name
    wa, wb, wc = (next(m.model.parameters()) for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    ids = torch.tensor([a.encode("Caf\u00e9 au lait.")])
    assert ids.max() < 256 and ids.shape[1] == len("Caf\u00e9 au lait.".encode())
    frame = reuse.measure(a.model, ids)
    assert math.isfinite(frame["cos_yv"].sum())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scale": "laptop"}, "scale"),
        ({"scale": "smoke", "seed": -1}, "seed"),
        ({"scale": "smoke", "device": "tpu"}, "device"),
        ({"scale": "smoke", "model": "no-such/model-anywhere"}, "no-such/model-anywhere"),
    ],
)
def test_text_model_checks_its_parameters(kwargs, match, monkeypatch):
    monkeypatch.setattr(hf, "hub_offline", lambda: True)
    with pytest.raises(ParameterError, match=match):
        reuse.text_model(**kwargs)


def test_a_tokenizers_output_is_read_and_a_padded_batch_refused(model, ids):
    """A ``BatchEncoding`` (a dict with ``input_ids``) gives the same numbers as its ids; a batch padded to
    one length is refused, never measured with its padding counted as text (it was accepted, mask ignored)."""
    from transformers import BatchEncoding

    ones = torch.ones_like(ids)
    encoded = BatchEncoding({"input_ids": ids, "attention_mask": ones})
    pd.testing.assert_frame_equal(reuse.forward_measures(model, encoded), reuse.forward_measures(model, ids))
    padded = ones.clone()
    padded[0, -3:] = 0
    with pytest.raises(ValueError, match="padded batch"):
        reuse.measure(model, {"input_ids": ids, "attention_mask": padded})
    with pytest.raises(TypeError, match="return_tensors='pt'"):
        reuse.forward_measures(model, {"input_ids": ids.tolist()})
    with pytest.raises(TypeError, match="got str"):
        reuse.forward_measures(model, "some text")
