"""Every lens of the synthesis that applies to a pretrained causal LM (docs/papers/synthesis.md, "Pretrained
models"), each beside a null a reader can see, on the XSA notebook's pretrained models and text windows
(``attnlab.papers.xsa.pretrained.PRESETS``: from cpu on every pinned causal LM of ``attnlab.hf.CAUSAL_LMS``;
at smoke scale the random tiny Llama stand-in):

- **similarity bias** (XSA Fig. 1), with and without the first token's term a_i0 v_0 in y_i: cos(y_i, v_i)
  beside uniform causal mixing and beside the same attention weights with the non-sink keys shuffled. These
  are :func:`attnlab.papers.xsa.pretrained.measure_models`' own per-(window, layer) columns, called with the
  XSA notebook's arguments, so both notebooks read one cached measurement;
- **first-token sink**: the attention on token 0, a_i0, beside uniform causal attention's, mean 1 / (i + 1)
  (the same table);
- **contribution weights** (arXiv 2606.07604): the first token's contribution weight c_i0 beside its attention
  a_i0, from one forward pass over the same windows (``attnlab.reuse.forward_measures``);
- **routing/filtering** (S-D, arXiv 2605.18826) and **effective rank** of every head's query-key form
  W = W_Q^T W_K (``attnlab.papers.sd_routing.routing.hf_qk``): the routing energy share ||R||^2 / ||W||^2 and
  the entropy effective rank of W, head means per layer, beside :data:`NULL_DRAWS` draws of one layer of
  Gaussian query and key weights of the model's layer shape (every layer of the pinned models and of the
  stand-in has one shape; a model whose layers differ is refused). Drawing single layers, not whole models,
  keeps the null cheap: the layers of a draw of a whole model would be independent draws of that one layer.

Everything per model is reduced to one value per layer (the mean over windows, heads and queries i >= 1):
a claim about one fixed model counts its layers (``claims``), never its windows. Results are cached per model
(``cached_result``: a re-run loads no model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import torch

from attnlab.data.corpora import load_corpus
from attnlab.hf import model_fingerprint
from attnlab.papers.sd_routing.routing import QK, hf_qk
from attnlab.papers.xsa.pretrained import PRESETS as XSA_PRESETS
from attnlab.papers.xsa.pretrained import TINY, measure_models
from attnlab.reuse import forward_measures, text_model, tiny_llama
from attnlab.training.cache import cached_result

#: Draws of one layer of Gaussian query and key weights of each model's layer shape: the null of the weight
#: lenses (a Monte Carlo test at 2.5% needs 79, ``attnlab.runner.verdicts.rank_rule``; every layer is also
#: paired with its own block of them, six or more per layer for the pinned models' 18 to 30 layers).
NULL_DRAWS = 199

#: The per-layer columns of :func:`measure`'s ``layers`` frame: what each is and where it comes from.
COLUMNS = {
    "cos_yv": "mean cos(y_i, v_i), i >= 1 (XSA Fig. 1; xsa.pretrained)",
    "cos_uniform": "the same of uniform causal mixing (1 / (i + 1)) sum_(j<=i) v_j",
    "cos_shuffled": "the same of the same weights with the non-sink keys 1..i shuffled within each query",
    "cos_yv_nosink": "mean cos(y_i - a_i0 v_0, v_i): without the first token's term",
    "cos_uniform_nosink": "uniform mixing over the keys 1..i",
    "cos_shuffled_nosink": "the shuffled weights without the first token's term",
    "a_sink": "mean attention on the first token a_i0, i >= 1",
    "a_uniform": "a_i0 of uniform causal attention, mean of 1 / (i + 1)",
    "first_attention": "a_i0 of the pass the contribution weights are read from (reuse.forward_measures)",
    "first_contribution": "mean contribution weight of the first token c_i0, i >= 1 (intra-head)",
    "routing_energy": "head mean of ||R||^2 / ||W||^2, W = W_Q^T W_K, R = (W - W^T) / 2",
    "effective_rank": "head mean of W's entropy effective rank",
}
#: The columns of xsa.pretrained's table read here, by their name in :data:`COLUMNS`.
XSA_COLUMNS = {
    "cos_yv": "cos_yv", "cos_uniform": "cos_uniform", "cos_shuffled": "cos_shuffled",
    "cos_yv_nosink": "cos_yv_nosink", "cos_uniform_nosink": "cos_uniform_nosink",
    "cos_shuffled_nosink": "cos_shuffled_nosink", "a_sink": "a_sink", "a_uniform": "a_ii_uniform",
}  # fmt: skip
#: The weight statistics of :func:`form_statistics`, per head.
FORM_COLUMNS = ("routing_energy", "effective_rank")


# the weights ----------------------------------------------------------------------------------------------


@torch.no_grad()
def form_statistics(wq: torch.Tensor, wk: torch.Tensor) -> dict[str, torch.Tensor]:
    """The routing energy share and the entropy effective rank of every head's form W = Wq^T Wk (D x D) of a
    layer with query weights ``wq`` (H, d, D) and key weights ``wk`` (H_kv, d, D) (query head h reads key
    head h // (H / H_kv)), each (H,): the ``routing_energy`` and ``form_rank`` of
    ``attnlab.papers.sd_routing.routing.form_stats`` (tested equal), from d x d Gram matrices instead of a
    D-dimensional decomposition, so that many random draws stay cheap. With A = Wq Wq^T, B = Wk Wk^T,
    C = Wk Wq^T: ||W||_F^2 = tr(A B), tr(W^2) = tr(C^2), and the routing part R = (W - W^T) / 2 has
    ||R||^2 = (||W||^2 - tr(W^2)) / 2; the squared singular values of W are the eigenvalues of A B, those of
    L^T B L for A = L L^T (Cholesky; an eigendecomposition of A where A is singular). A zero form has share
    0 and rank 0."""
    H, H_kv = wq.shape[0], wk.shape[0]
    if H % H_kv or wq.shape[1:] != wk.shape[1:]:
        raise ValueError(f"query weights {tuple(wq.shape)} and key weights {tuple(wk.shape)} do not pair")
    a = (wq @ wq.transpose(-1, -2)).double()
    b = (wk @ wk.transpose(-1, -2)).double().repeat_interleave(H // H_kv, dim=0)
    c = (wk.repeat_interleave(H // H_kv, dim=0) @ wq.transpose(-1, -2)).double()
    energy = (a * b).sum((-1, -2))  # ||W||_F^2
    trace_w2 = (c * c.transpose(-1, -2)).sum((-1, -2))
    some = energy > 0
    share = torch.where(some, (energy - trace_w2) / (2 * torch.where(some, energy, 1.0)), 0.0)
    root, failed = torch.linalg.cholesky_ex(a)
    if bool(failed.any()):  # a singular A: its square root from the eigendecomposition
        lam, u = torch.linalg.eigh(a)
        root = u * lam.clamp_min(0).sqrt()[..., None, :]  # root root^T = A
    sigma = torch.linalg.eigvalsh(root.transpose(-1, -2) @ b @ root).clamp_min(0).sqrt()  # (H, d)
    total = sigma.sum(-1, keepdim=True)
    p = sigma / torch.where(total > 0, total, 1.0)
    rank = torch.where(total.squeeze(-1) > 0, (-torch.special.xlogy(p, p).sum(-1)).exp(), 0.0)
    return {"routing_energy": share, "effective_rank": rank}


def layer_forms(layers: Sequence[QK]) -> pd.DataFrame:
    """:func:`form_statistics` of every layer's (Wq, Wk), one row per (layer, head)."""
    frames = [
        pd.DataFrame({k: v.numpy() for k, v in form_statistics(wq, wk).items()}).assign(layer=i)
        for i, (wq, wk) in enumerate(layers)
    ]
    frame = pd.concat(frames, ignore_index=True)
    frame.insert(0, "head", frame.groupby("layer").cumcount())
    return frame[["layer", "head", *FORM_COLUMNS]]


def layer_shape(layers: Sequence[QK]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The one ((H, d, D), (H_kv, d, D)) shape of every layer's query and key weights; a ValueError naming the
    shapes when the layers differ (the null of :func:`null_forms` is one layer shape)."""
    shapes = {(tuple(q.shape), tuple(k.shape)) for q, k in layers}
    if len(shapes) != 1:
        raise ValueError(f"the weight null draws one layer shape; these layers have {sorted(shapes)}")
    return shapes.pop()


def null_forms(shape: tuple[Sequence[int], Sequence[int]], draws: int, seed: int = 0) -> pd.DataFrame:
    """The null of the weight lenses: ``draws`` draws of one layer of Gaussian query and key weights of
    ``shape`` ((H, d, D), (H_kv, d, D)), from one generator seeded with ``seed``; per draw the head means of
    :func:`form_statistics` (scale free, so the weights' scale does not matter). On one thread: many small
    decompositions gain nothing from more, and threads that contend for busy cores made them ten times
    slower on a shared two-core machine."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for draw in range(draws):
            wq = torch.randn(tuple(shape[0]), generator=generator)
            wk = torch.randn(tuple(shape[1]), generator=generator)
            rows.append({"draw": draw, **{k: float(v.mean()) for k, v in form_statistics(wq, wk).items()}})
    finally:
        torch.set_num_threads(threads)
    return pd.DataFrame(rows)


# one model ------------------------------------------------------------------------------------------------


def _per_layer(name: str, windows: int, length: int, seed: int, device: str, draws: int) -> dict:
    """The measurements of one model that xsa.pretrained's table lacks, cached: the first token's attention
    and contribution per layer over the same Brown windows, the head means of the weight statistics per
    layer, and the null draws of one layer of the model's shape."""

    def compute() -> dict:
        lm = tiny_llama(seed) if name == TINY else text_model(model=name, device=device)
        brown = "\n\n".join(load_corpus("brown")["validation"]["text"])
        ids = lm.text_windows(brown, length, windows, seed, "the Brown held-out text")
        forward = forward_measures(lm.model, ids)[["layer", "first_attention", "first_contribution"]]
        layers = hf_qk(lm.model)
        forms = layer_forms(layers).groupby("layer")[list(FORM_COLUMNS)].mean().reset_index()
        null = null_forms(layer_shape(layers), draws, seed)
        return {
            "forward": forward.to_dict("list"),
            "forms": forms.to_dict("list"),
            "null": null.to_dict("list"),
        }

    key = {
        "model": name,
        "windows": windows,
        "length": length,
        "seed": seed,
        "device": device,
        "draws": draws,
    }
    result, _ = cached_result(
        "synthesis_pretrained", key, compute, data="" if name == TINY else model_fingerprint(name)
    )
    return result


def layer_table(xsa_table: pd.DataFrame, forward: pd.DataFrame, forms: pd.DataFrame) -> pd.DataFrame:
    """One row per layer with every :data:`COLUMNS` measure: xsa.pretrained's per-(window, layer) table
    averaged over its windows, beside the forward and weight measures of the same layer."""
    xsa = xsa_table.groupby("layer")[list(XSA_COLUMNS.values())].mean().reset_index()
    xsa = xsa.rename(columns={v: k for k, v in XSA_COLUMNS.items()})
    table = xsa.merge(forward, on="layer", validate="one_to_one").merge(
        forms, on="layer", validate="one_to_one"
    )
    return table[["layer", *COLUMNS]].sort_values("layer", ignore_index=True)


def measure(
    models: Sequence[str],
    windows: int,
    length: int,
    seed: int = 0,
    device: str = "cpu",
    draws: int = NULL_DRAWS,
) -> dict[str, dict]:
    """Every lens of the module docstring on each of ``models`` (pinned names of ``attnlab.hf.PRETRAINED``,
    or xsa.pretrained's ``TINY``) over ``windows`` Brown windows of ``length`` tokens. Returns ``{name:
    {"description", "parameters", "windows", "layers", "null"}}``: ``layers`` one row per layer
    (:func:`layer_table`), ``null`` one row per draw of one layer of Gaussian weights (:func:`null_forms`)."""
    xsa = measure_models(models, windows, length, seed, device)  # the XSA notebook's cached measurement
    out = {}
    for name in models:
        result = _per_layer(name, windows, length, seed, device, draws)
        table = xsa[name]["table"]
        layers = layer_table(table, pd.DataFrame(result["forward"]), pd.DataFrame(result["forms"]))
        out[name] = {"description": xsa[name]["description"], "parameters": xsa[name]["parameters"],
                     "windows": int(table["window"].nunique()), "layers": layers,
                     "null": pd.DataFrame(result["null"])}  # fmt: skip
    return out


def measure_scale(scale: str, device: str = "cpu", draws: int = NULL_DRAWS) -> dict[str, dict]:
    """:func:`measure` with the XSA notebook's models, windows and length at ``scale`` (its Fig. 1 on
    pretrained models: one cached measurement for both notebooks)."""
    pre = XSA_PRESETS[scale]
    return measure(pre.models, pre.windows, pre.length, device=device, draws=draws)


def summary(results: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per model of :func:`measure`'s results: its layers, and the layer mean of every measure (the
    null draws' mean beside the weight statistics, ``<measure>_random``)."""
    rows = []
    for name, r in results.items():
        means = r["layers"][list(COLUMNS)].mean()
        null = r["null"][list(FORM_COLUMNS)].mean()
        rows.append({"model": name, "layers": len(r["layers"]), **means.to_dict(),
                     **{f"{k}_random": float(null[k]) for k in FORM_COLUMNS}})  # fmt: skip
    return pd.DataFrame(rows).set_index("model")
