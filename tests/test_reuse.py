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
from attnlab.papers.sd_routing import routing  # noqa: E402


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
    """Per (sequence, layer, head): the similarity bias (XSA Fig. 1), attention and contribution weight of
    token 0 (arXiv 2606.07604: c_i0 = <o_i, a_i0 v~_0> / ||o_i||^2, v~_j = W_O^h v_j), by loops over
    positions i >= 1."""
    heads = reuse.capture_heads(model, ids)
    modules = hf.attention_modules(model)
    rows = {}
    for layer, rec in heads.items():
        P, v = rec["pattern"].double(), rec["v"].double()
        W_O = modules[layer].o_proj.weight.detach().double()
        B, H, T, _ = P.shape
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
                values = (cos_yv / n, cos_vv / pairs, a_ii / n, uniform / n, first_a / n, first_c / n)
                rows[b, layer, h] = dict(zip(reuse.FORWARD_COLUMNS, values, strict=True))
    return pd.DataFrame(
        [{"sequence": b, "layer": layer, "head": h, **row} for (b, layer, h), row in rows.items()]
    )


def test_forward_measures_match_the_naive_reference(model, ids):
    """Per sequence and head, per head (the mean over sequences) and per layer (then over heads); two
    batches: the means are over every sequence."""
    naive = _naive_forward(model, ids)
    columns = list(reuse.FORWARD_COLUMNS)
    per_sequence = reuse.sequence_measures(model, ids, batch_size=2)
    assert list(per_sequence.columns) == ["sequence", "layer", "head", *columns]
    per_head = naive.groupby(["layer", "head"])[columns].mean().reset_index()
    per_layer = per_head.groupby("layer")[columns].mean().reset_index()
    for got, expect in [
        (per_sequence, naive.sort_values(["sequence", "layer", "head"], ignore_index=True)),
        (reuse.forward_measures(model, ids, batch_size=2, per_head=True), per_head),
        (reuse.forward_measures(model, ids, batch_size=2), per_layer),
    ]:
        assert list(got.columns) == list(expect.columns)
        np.testing.assert_allclose(got.to_numpy(float), expect.to_numpy(float), rtol=1e-4, atol=1e-6)


def _dense_routing(wq, wk):
    """Energy share and stable rank of R = (W - W^T) / 2 of the dense D x D forms W = Wq^h^T Wk^{g(h)}."""
    H = wq.shape[0]
    W = wq.double().transpose(-1, -2) @ wk.double().repeat_interleave(H // wk.shape[0], 0)
    R = (W - W.transpose(-1, -2)) / 2
    s = torch.linalg.svdvals(R)
    energy = R.square().sum((-2, -1)) / W.square().sum((-2, -1))
    return energy, s.square().sum(-1) / s[:, 0].square()


@pytest.mark.parametrize(
    ("H", "H_kv", "d", "D", "kind"),
    [
        (6, 2, 4, 20, "full"), (3, 3, 8, 40, "full"), (4, 1, 8, 12, "full"),  # 2d > D: rank-deficient factors
        (2, 2, 4, 16, "shared"),  # query rows L^T Wk: [Wq^T Wk^T] of rank d
        (4, 2, 6, 30, "repeated"),  # query heads of rank 2, keys of rank 3
    ],
)  # fmt: skip
def test_low_rank_routing_equals_the_dense_forms_and_form_stats(H, H_kv, d, D, kind):
    """The low-rank route (d x d products, a D x 2d QR and a 2d x 2d eigendecomposition per head) gives the
    dense D x D forms' numbers and `form_stats`' (the S-D notebook's), with full-rank and rank-deficient
    factors; the energy alone is the same number without the rest."""
    g = torch.Generator().manual_seed(H * 100 + D)
    wq, wk = torch.randn(H, d, D, generator=g), torch.randn(H_kv, d, D, generator=g)
    if kind == "shared":
        wq = torch.randn(H, d, d, generator=g).transpose(-1, -2) @ wk
    if kind == "repeated":
        wq = wq[:, torch.arange(d) % 2]
        wk = wk[:, torch.arange(d) % 3]
    got = routing.low_rank_routing(wq, wk)
    energy, stable = _dense_routing(wq, wk)
    torch.testing.assert_close(got["routing_energy"], energy, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(got["routing_stable_rank"], stable, rtol=1e-9, atol=1e-12)
    energy_alone = routing.low_rank_routing(wq, wk, stable_rank=False)
    assert list(energy_alone) == ["routing_energy"]
    assert torch.equal(energy_alone["routing_energy"], got["routing_energy"])
    stats = routing.form_stats(wq, wk)
    for column in got:
        np.testing.assert_allclose(got[column].numpy(), stats[column].to_numpy(), rtol=1e-6, atol=1e-9)


def test_low_rank_routing_of_symmetric_and_zero_forms():
    """Query rows equal to the key rows: W = Wk^T Wk is symmetric, no routing; a zero form: both 0."""
    wk = torch.randn(2, 4, 16, generator=torch.Generator().manual_seed(0))
    symmetric = routing.low_rank_routing(wk.repeat_interleave(2, 0), wk)
    assert symmetric["routing_energy"].abs().max() < 1e-12
    zero = routing.low_rank_routing(torch.zeros(3, 4, 16), torch.zeros(3, 4, 16))
    assert (zero["routing_energy"] == 0).all() and (zero["routing_stable_rank"] == 0).all()


def test_weight_measures_match_the_dense_forms(model):
    """W = W_Q^h^T W_K^{g(h)} (D x D) per head from the q/k projections; routing R = (W - W^T) / 2 (arXiv
    2605.18826): energy share ||R||^2 / ||W||^2 and stable rank of R, per head and head means; the null is
    `random_heads`' (the same draws)."""
    per_head = reuse.weight_measures(model, per_head=True)
    got = reuse.weight_measures(model).set_index("layer")
    assert list(per_head.columns) == ["layer", "head", *reuse.WEIGHT_COLUMNS]
    layers = routing.hf_qk(model)
    null = routing.random_heads([(tuple(wq.shape), tuple(wk.shape)) for wq, wk in layers], 0)
    np.testing.assert_allclose(per_head["routing_energy_random"], null["routing_energy"], rtol=1e-9)
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
        mine = per_head[per_head["layer"] == layer]
        np.testing.assert_allclose(mine["routing_energy"], energies, rtol=1e-6)
        np.testing.assert_allclose(mine["routing_stable_rank"], ranks, rtol=1e-6)
        assert got.loc[layer, "routing_energy"] == pytest.approx(np.mean(energies), rel=1e-6)
        assert got.loc[layer, "routing_stable_rank"] == pytest.approx(np.mean(ranks), rel=1e-6)
        assert 0.3 < got.loc[layer, "routing_energy_random"] < 0.7  # Gaussian weights: about one half
    threads = torch.get_num_threads()
    again = reuse.weight_measures(model)
    assert torch.get_num_threads() == threads  # one thread within, the setting restored
    assert again.equals(reuse.weight_measures(model)) and again.equals(got.reset_index())
    other = reuse.weight_measures(model, seed=1)
    assert not other["routing_energy_random"].equals(again["routing_energy_random"])


def test_measure_is_one_row_per_layer_or_per_head_with_every_column(model, ids):
    frame = reuse.measure(model, ids)
    assert list(frame.columns) == ["layer", *reuse.COLUMNS] and len(frame) == 2
    assert frame.notna().all().all()
    heads = reuse.measure(model, ids, per_head=True)
    assert list(heads.columns) == ["layer", "head", *reuse.COLUMNS] and len(heads) == 2 * 6
    assert list(heads["head"]) == [*range(6)] * 2
    means = heads.groupby("layer")[list(reuse.COLUMNS)].mean().reset_index()
    pd.testing.assert_frame_equal(means, frame, rtol=1e-9)


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


def _padded(sequences, side):
    """The ids and attention mask of ``sequences`` padded to one length on ``side`` with token 0."""
    T = max(len(x) for x in sequences)
    ids, mask = (
        torch.zeros(len(sequences), T, dtype=torch.long),
        torch.zeros(len(sequences), T, dtype=torch.long),
    )
    for b, x in enumerate(sequences):
        where = slice(0, len(x)) if side == "right" else slice(T - len(x), T)
        ids[b, where], mask[b, where] = x, 1
    return ids, mask


@pytest.mark.parametrize("side", ["right", "left"])
def test_a_padded_batch_gives_each_sequence_its_own_numbers(model, side):
    """Two sequences of different lengths padded to one: every measure of each (per head and layer) is the
    one it gets alone, and the batch's means are the means of the two alone (each sequence counts once). The
    padding was counted as text before (then refused); ignoring the mask changes the numbers (checked, so
    that the comparison can fail)."""
    from transformers import BatchEncoding

    g = torch.Generator().manual_seed(2)
    sequences = [torch.randint(1, 64, (n,), generator=g) for n in (12, 7)]
    ids, mask = _padded(sequences, side)
    columns = list(reuse.FORWARD_COLUMNS)
    alone = pd.concat(
        [reuse.sequence_measures(model, x[None]).assign(sequence=b) for b, x in enumerate(sequences)],
        ignore_index=True,
    )
    batch = reuse.sequence_measures(model, BatchEncoding({"input_ids": ids, "attention_mask": mask}))
    np.testing.assert_allclose(batch[columns].to_numpy(), alone[columns].to_numpy(), rtol=1e-4, atol=1e-6)
    assert (batch[["sequence", "layer", "head"]] == alone[["sequence", "layer", "head"]]).all().all()
    unmasked = reuse.sequence_measures(model, ids)
    assert not np.allclose(unmasked[columns].to_numpy(), alone[columns].to_numpy(), rtol=1e-2, atol=1e-3)
    # the same through measure(), the mask given apart, one sequence per pass
    frame = reuse.measure(model, ids, attention_mask=mask, batch_size=1, per_head=True)
    singles = [reuse.measure(model, x[None], per_head=True) for x in sequences]
    expect = (singles[0][list(reuse.COLUMNS)] + singles[1][list(reuse.COLUMNS)]) / 2
    np.testing.assert_allclose(frame[list(reuse.COLUMNS)].to_numpy(), expect.to_numpy(), rtol=1e-4, atol=1e-6)


def test_a_tokenizers_output_is_read_and_anything_else_refused(model, ids):
    """A `BatchEncoding` or a dict with ``input_ids`` gives the same numbers as its ids (a mask of ones is no
    padding); anything else is a ParameterError that says what is wrong."""
    from transformers import BatchEncoding

    ones = torch.ones_like(ids)
    expect = reuse.forward_measures(model, ids)
    for inputs in (BatchEncoding({"input_ids": ids, "attention_mask": ones}), {"input_ids": ids}):
        pd.testing.assert_frame_equal(reuse.forward_measures(model, inputs), expect)
    gap = ones.clone()
    gap[0, 4] = 0
    short = ones.clone()
    short[1, 1:] = 0
    for inputs, kwargs, match in [
        ("some text", {}, "got str"),
        (ids.tolist(), {}, "got list"),
        ({"input_ids": ids.tolist()}, {}, "return_tensors='pt'"),
        ({"ids": ids}, {}, "needs input_ids"),
        (ids.float(), {}, "integer token ids"),
        (ids[0], {}, r"\(N, T\)"),
        (ids[:, :1], {}, "T >= 2"),
        ({"input_ids": ids, "attention_mask": ones}, {"attention_mask": ones}, "given twice"),
        (ids, {"attention_mask": ones[:, :-1]}, "shape"),
        (ids, {"attention_mask": 2 * ones}, "0/1"),
        (ids, {"attention_mask": gap}, "gaps"),
        (ids, {"attention_mask": short}, "two real tokens"),
        (ids - ids.max() - 1, {}, "ids >= 0"),
        (ids + model.get_input_embeddings().num_embeddings, {}, "below the model's vocabulary"),
        (ids, {"batch_size": 0}, "batch_size must be a positive integer"),
    ]:
        with pytest.raises(ParameterError, match=match):
            reuse.measure(model, inputs, **kwargs)


def test_anything_but_a_causal_lm_is_refused_naming_what_was_given(ids):
    for call in (lambda: reuse.measure("x", ids), lambda: reuse.weight_measures(torch.nn.Linear(2, 2))):
        with pytest.raises(ParameterError, match="expected a Hugging Face causal LM .* got (str|Linear)"):
            call()


def test_the_bench_times_each_part_of_measure(monkeypatch):
    """``make bench``'s reuse part (section 7) on the tiny Llama in place of a pinned model: every part timed
    by wall clock and CPU, ``measure`` the forward and weight parts together; a model without a token count
    is refused."""
    from attnlab.tools import bench

    monkeypatch.setattr(hf, "checkpoint", lambda name: None)
    monkeypatch.setattr(reuse, "text_model", lambda model, device: reuse.tiny_llama())
    spent = bench.reuse_times("smollm2", 19, "cpu")
    assert list(spent) == ["load", "forward", "weights", "measure"]
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in spent.values())
    for k in range(2):
        assert spent["measure"][k] == pytest.approx(spent["forward"][k] + spent["weights"][k])
    with pytest.raises(SystemExit):
        bench.main(["--only", "reuse", "--reuse", "smollm2"])
