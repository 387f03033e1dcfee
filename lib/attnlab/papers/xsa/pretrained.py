"""XSA's motivating observation (arXiv 2603.09078, Fig. 1, docs/papers/xsa.md "Fig. 1") on pretrained causal
LMs: is a standard-attention head's output y_i = sum_{j<=i} a_ij v_j aligned with the token's own value v_i,
more than two baselines say it would be, and does that grow with depth?

The paper shows cos(y_i, v_i) of its own 1.3B model only. Here the same quantity is read from the forward pass
of each pinned pretrained model (``attnlab.reuse.capture_heads``: the pattern and value heads of the model's
own attention), per text window and layer, averaged over heads and positions, beside:

- **uniform mixing**: cos(ybar_i, v_i) with ybar_i = (1 / (i + 1)) sum_{j<=i} v_j, the output attention
  with no preference would give: it is positive whenever the values are similar to each other, and it
  contains v_i with weight 1 / (i + 1);
- **a token far back**: cos(y_i, v_{i-T/2}) (half a window of T tokens back), the alignment of the output
  with an unrelated earlier value: what "aligned with a value" means without the token's own;
- for the diagonal weight a_ii, uniform causal attention's 1 / (i + 1);

and the nulls that can tell a preference for the token's own value from its neighbours and from the attention
sink (key 0, which holds a third or more of the attention in these models and stays inside y_i):

- **the previous token's value**: cos(y_i, v_(i-1)), and a_(i,i-1) beside a_ii;
- **shuffled keys**: y'_i from the same attention weights with the weights of the non-sink keys 1..i randomly
  permuted within each query (seeded), a_i0 kept on key 0: the same peakedness and sink, no position;
- **without the sink**: each cosine recomputed with the first token's contribution a_i0 v_0 removed from
  y_i (and from the shuffled y'_i), uniform mixing over keys 1..i only, a_ii and a_(i,i-1) renormalised over
  the non-sink keys, a_ii / (1 - a_i0) and a_(i,i-1) / (1 - a_i0), beside uniform's 1 / i. Every measure
  without the sink is read from i >= 2: at i = 1 the token itself is the only key left, so y_1 - a_10 v_0 is
  along v_1 and a_11 / (1 - a_10) = 1 whatever the model learned (as at i = 0 with the sink);
- **value similarity**: cos(v_i, v_j) over causal pairs j < i, and over 1 <= j < i without the sink.

The units of every interval are the text windows (one fixed model; its seed is not a unit here). Depth is
relative (layer / (layers - 1)), so that slopes compare across models of 18 to 30 layers.

Models and their caveats (``attnlab.hf.PRETRAINED``): all are Q4_K_M or Q4_1 GGUF weights dequantised to
float32; SmolLM2 and both Qwen2.5-Coder models are instruct models, Gemma-3-270M is a base model. Rotary
position embeddings, query/key norms (Gemma 3) and biases (Qwen2) act on the queries and keys only, so they
change the pattern a_ij but not the vectors compared (y_i, v_i); Gemma 3's sliding-window layers (512 tokens)
see the whole of a 128-token window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlab.data.corpora import load_corpus
from attnlab.hf import CAUSAL_LMS, TextModel
from attnlab.hf import describe as hf_describe
from attnlab.metrics import per_query_head, similarity_bias
from attnlab.reuse import capture_heads, text_model, tiny_llama
from attnlab.training.cache import cached_result

#: The smoke-scale stand-in (``attnlab.reuse.tiny_llama``): random weights, nothing to download.
TINY = "tiny-llama"


@dataclass(frozen=True)
class Models:
    """What a scale measures: the models, and how many Brown windows of how many tokens each."""

    models: tuple[str, ...]
    windows: int
    length: int


#: Per scale. From cpu on: every pinned causal LM, 135M to 1.5B parameters; smoke: the random stand-in,
#: nothing downloaded.
PRESETS = {
    "smoke": Models((TINY,), windows=3, length=32),
    "cpu": Models(CAUSAL_LMS, windows=16, length=128),
    "gpu": Models(CAUSAL_LMS, windows=64, length=256),
    "paper": Models(CAUSAL_LMS, windows=64, length=256),
}

#: The per-(window, layer) columns of :func:`layer_table`.
COLUMNS = {
    "cos_yv": "mean cos(y_i, v_i), i >= 1 (XSA Fig. 1)",
    "cos_uniform": "mean cos(ybar_i, v_i) of uniform causal mixing, i >= 1",
    "cos_far": "mean cos(y_i, v_(i-T/2)), i >= T/2: the value of a token half a window back",
    "cos_prev": "mean cos(y_i, v_(i-1)), i >= 1: the previous token's value",
    "cos_shuffled": "mean cos(y'_i, v_i), i >= 1: the same weights, non-sink keys shuffled within each query",
    "cos_yv_nosink": "mean cos(y_i - a_i0 v_0, v_i), i >= 2: without the first token's contribution",
    "cos_uniform_nosink": "mean cos(mean_(1<=j<=i) v_j, v_i), i >= 2: uniform mixing without the first token",
    "cos_prev_nosink": "mean cos(y_i - a_i0 v_0, v_(i-1)), i >= 2",
    "cos_shuffled_nosink": "mean cos(y'_i - a_i0 v_0, v_i), i >= 2",
    "cos_vv": "mean cos(v_i, v_j) over causal pairs j < i",
    "cos_vv_nosink": "mean cos(v_i, v_j) over pairs 1 <= j < i (the sink's value left out)",
    "a_ii": "mean diagonal attention a_ii, i >= 1",
    "a_ii_uniform": "a_ii of uniform causal attention, mean of 1 / (i + 1)",
    "a_prev": "mean attention on the previous token a_(i,i-1), i >= 1",
    "a_sink": "mean attention on the first token a_i0, i >= 1",
    "a_ii_nosink": "mean a_ii / (1 - a_i0), i >= 2: the diagonal among the non-sink keys",
    "a_ii_uniform_nosink": "a_ii / (1 - a_i0) of uniform causal attention, mean of 1 / i over i >= 2",
    "a_prev_nosink": "mean a_(i,i-1) / (1 - a_i0), i >= 2: the previous token among the non-sink keys",
}


def shuffle_non_sink(pattern: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """``pattern`` (B, H, T, T) with each query i's weights on the keys 1..i randomly permuted among those
    keys (a fresh permutation per batch row, head and query; ``generator`` seeds it), the sink key 0 and the
    masked keys j > i left in place: the same row sums, peakedness and sink mass, no preference for a
    position."""
    B, H, T, _ = pattern.shape
    keys = torch.arange(T, device=pattern.device)
    valid = (keys[None, :] >= 1) & (keys[None, :] <= keys[:, None])  # (T, T): query i, key j in 1..i
    noise = torch.rand(B, H, T, T, generator=generator).to(pattern.device)
    order = noise.masked_fill(~valid, torch.inf).argsort(-1)  # the first i entries: keys 1..i, shuffled
    shifted = torch.cat([order[..., :1], order[..., :-1]], dim=-1)  # shifted[..., k] = order[..., k - 1]
    index = torch.where(valid, shifted, keys.expand(B, H, T, T))
    return pattern.gather(-1, index)


def head_baselines(
    heads: Mapping[str, torch.Tensor], far: int, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
    """The :data:`COLUMNS` of one layer, one value per (sequence, head), (B, H), from the intermediates of
    ``attnlab.reuse.capture_heads`` (``pattern`` (B, H, T, T), ``v`` (B, H_kv, T, d), ``y`` (B, H, T, d)).
    Position 0 is left out (y_0 = v_0 whatever the model learned); the far-back baseline reads ``far`` tokens
    back (0 < far < T); ``generator`` seeds the shuffled keys (:func:`shuffle_non_sink`)."""
    y = heads["y"].float()
    B, H, T, _ = y.shape
    if not 0 < far < T or T < 3:
        raise ValueError(f"the baselines need T >= 3 and 0 < far < T; got far={far}, T={T}")
    pattern = heads["pattern"].float()  # (B, H, T, T)
    v = per_query_head(heads["v"], H).float()  # (B, H, T, d)
    bias = similarity_bias({"pattern": pattern, "v": heads["v"], "y": y, "z": y})
    counts = torch.arange(1, T + 1, device=y.device, dtype=y.dtype)[:, None]  # (T, 1)
    ybar = v.cumsum(-2) / counts  # (B, H, T, d): uniform causal mixing
    sink = pattern[..., :, :1] * v[..., :1, :]  # (B, H, T, d): a_i0 v_0
    shuffled = shuffle_non_sink(pattern, generator) @ v  # (B, H, T, d)
    ybar_nosink = (v.cumsum(-2) - v[..., :1, :])[..., 2:, :] / counts[1:-1]  # (B, H, T-2, d): keys 1..i
    a_sink = pattern[..., 1:, 0]  # (B, H, T-1)
    # the non-sink share 1 - a_i0 of queries i >= 2 (B, H, T-2), kept above 0 where a head is all sink
    rest = (1 - pattern[..., 2:, 0]).clamp_min(torch.finfo(y.dtype).tiny)
    vn = F.normalize(v, dim=-1)
    gram = vn @ vn.transpose(-1, -2)  # (B, H, T, T)
    pairs = torch.ones(T, T, dtype=torch.bool, device=y.device).tril(-1)
    pairs[:, 0] = False  # 1 <= j < i

    def cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(a, b, dim=-1).mean(-1)

    diagonal = pattern.diagonal(dim1=-2, dim2=-1)  # (B, H, T): a_ii
    below = pattern.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T-1): a_(i,i-1) of queries i >= 1
    positions = torch.arange(2, T, device=y.device, dtype=y.dtype)
    return {
        "cos_yv": bias["cos_yv"],
        "cos_uniform": cos(ybar[..., 1:, :], v[..., 1:, :]),
        "cos_far": cos(y[..., far:, :], v[..., :-far, :]),
        "cos_prev": cos(y[..., 1:, :], v[..., :-1, :]),
        "cos_shuffled": cos(shuffled[..., 1:, :], v[..., 1:, :]),
        "cos_yv_nosink": cos((y - sink)[..., 2:, :], v[..., 2:, :]),
        "cos_uniform_nosink": cos(ybar_nosink, v[..., 2:, :]),
        "cos_prev_nosink": cos((y - sink)[..., 2:, :], v[..., 1:-1, :]),
        "cos_shuffled_nosink": cos((shuffled - sink)[..., 2:, :], v[..., 2:, :]),
        "cos_vv": bias["cos_vv"],
        "cos_vv_nosink": gram[..., pairs].mean(-1),
        "a_ii": bias["a_ii"],
        "a_ii_uniform": bias["a_ii_uniform"],
        "a_prev": below.mean(-1),
        "a_sink": a_sink.mean(-1),
        "a_ii_nosink": (diagonal[..., 2:] / rest).mean(-1),
        "a_ii_uniform_nosink": (1.0 / positions).mean().expand(B, H),
        "a_prev_nosink": (below[..., 1:] / rest).mean(-1),
    }


@torch.no_grad()
def layer_table(lm: TextModel, windows: torch.Tensor, batch_size: int = 4, seed: int = 0) -> pd.DataFrame:
    """:func:`head_baselines` of every layer of ``lm`` over the text ``windows`` (N, T), the far-back
    baseline T // 2 tokens back, the shuffled keys seeded by ``seed``, averaged over heads: one row per
    (window, layer), columns window, layer, depth (layer / (layers - 1)) and :data:`COLUMNS`."""
    if windows.ndim != 2 or windows.shape[1] < 4:
        raise ValueError(f"windows must be (N, T) with T >= 4; got {tuple(windows.shape)}")
    far = windows.shape[1] // 2
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for start in tqdm(range(0, len(windows), batch_size), desc=f"Fig. 1 on {lm.name or 'the model'}"):
        batch = windows[start : start + batch_size].to(lm.device)
        for layer, heads in capture_heads(lm.model, batch).items():
            baselines = head_baselines(heads, far, generator)
            means = {k: t.mean(-1).cpu().numpy() for k, t in baselines.items()}  # (B,) each
            rows += [{"window": start + b, "layer": layer, **{k: float(m[b]) for k, m in means.items()}}
                     for b in range(len(batch))]  # fmt: skip
    frame = pd.DataFrame(rows)
    frame.insert(2, "depth", frame["layer"] / max(frame["layer"].max(), 1))
    return frame.sort_values(["window", "layer"], ignore_index=True)


def describe(name: str) -> str:
    """A pinned model's registry description (``attnlab.hf.describe``); the stand-in's own."""
    if name == TINY:
        return "tiny random Llama (2 layers, random weights: the smoke-scale stand-in)"
    return hf_describe(name)


def measure_models(
    models: Sequence[str], windows: int, length: int, seed: int = 0, device: str = "cpu"
) -> dict[str, dict]:
    """:func:`layer_table` of each model in ``models`` (pinned names of ``attnlab.hf.PRETRAINED``, or
    :data:`TINY`) over ``windows`` Brown windows of ``length`` tokens, each cached (a re-run loads no model).
    Returns ``{name: {"description", "parameters", "layers", "table"}}``."""
    out = {}
    for name in models:

        def compute(name: str = name) -> dict:
            lm = tiny_llama(seed) if name == TINY else text_model(model=name, device=device)
            brown = "\n\n".join(load_corpus("brown")["validation"]["text"])
            text = lm.text_windows(brown, length, windows, seed, "the Brown held-out text")
            table = layer_table(lm, text, seed=seed)
            parameters = sum(p.numel() for p in lm.model.parameters())
            return {"parameters": parameters, "table": table.to_dict("list")}

        key = {"model": name, "windows": windows, "length": length, "seed": seed, "device": device}
        result, _ = cached_result("xsa_pretrained", key, compute)
        table = pd.DataFrame(result["table"])
        out[name] = {"description": describe(name), "parameters": int(result["parameters"]),
                     "layers": int(table["layer"].nunique()), "table": table}  # fmt: skip
    return out


def summary(results: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per model of :func:`measure_models`' results, smallest first: its parameters (millions,
    with embeddings), layers, and the mean over windows and layers of each of :data:`COLUMNS`."""
    rows = [
        {"model": name, "parameters (M)": r["parameters"] / 1e6, "layers": r["layers"],
         **r["table"][list(COLUMNS)].mean().to_dict()}
        for name, r in sorted(results.items(), key=lambda item: item[1]["parameters"])
    ]  # fmt: skip
    return pd.DataFrame(rows).set_index("model")
