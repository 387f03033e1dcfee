"""Faithfulness of importance measures by causal intervention (arXiv 2606.07604,
docs/papers/contribution-weights.md, claims "faithfulness" and "downstream").

For each layer, query position i and importance measure m (``attnlab.metrics.IMPORTANCE_MEASURES``), the value
terms a^h_ij v~^h_j are ranked by m^h_ij and a fraction of them is zeroed in every layer at once:

- comprehensiveness: zero the top-ranked fraction; a faithful measure makes the perplexity rise most;
- sufficiency: zero the bottom-ranked fraction (keep the top); a faithful measure makes it rise least.

Ranking scope (the paper's exact protocol is not known; both are implemented):

- ``"head"`` (the default, "rank the context tokens of each query"): each head ranks its own row, zeroing the
  top round(fraction * (i + 1)) of the keys j <= i of query i. Within one row the value-weighted and the
  output-normalised baselines order the keys identically (they differ by the factor 1 / ||o^h_i||, constant
  along a row), so under this scope their curves coincide and their order cannot be tested.
- ``"joint"``: the H (i + 1) terms (h, j <= i) of query i in a layer are ranked together across heads and
  the top round(fraction * H * (i + 1)) zeroed; the measures normalised per head (raw attention,
  output-normalised, contribution weights) then compete with the unnormalised value-weighted one on
  different scales.

Contribution weights are ranked by their signed value: the bottom of a row holds the terms that point against
the output.

The measures are computed from a clean forward pass (``attnlab.hf.capture``); the interventions
(``attnlab.hf.intervene``) rescale the terms of the following passes, so upstream changes do not re-rank
downstream layers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlab.data.tasks import MultipleChoice, tie_credit
from attnlab.hf import TextModel, capture, intervene
from attnlab.metrics import IMPORTANCE_MEASURES

MODES = ("comprehensiveness", "sufficiency")

Measure = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


SCOPES = ("head", "joint")


def rank_mask(scores: torch.Tensor, fraction: float, top: bool, scope: str = "head") -> torch.Tensor:
    """The terms to zero for one layer: ``scores`` (B, H, T, T) of an intra-head measure -> bool (B, H, T, T),
    True for the highest (``top``) or lowest terms of each query i among its causal terms j <= i: per head,
    round(fraction * (i + 1)) of them (``scope="head"``), or round(fraction * H * (i + 1)) of the H (i + 1)
    terms (h, j) ranked jointly across heads (``scope="joint"``). Ties keep the lower index first."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    B, H, T, _ = scores.shape
    causal = torch.ones(T, T, dtype=torch.bool, device=scores.device).tril()  # (T, T): query i, key j
    if scope == "head":
        flat, valid, per_query = scores.float(), causal.expand(B, H, T, T), 1  # (B, H, T, T): rows i
    else:
        valid = causal[None, :, None, :].expand(B, T, H, T).reshape(B, T, H * T)  # (B, T, H T)
        flat, per_query = scores.float().permute(0, 2, 1, 3).reshape(B, T, H * T), H  # query i's (h, j)
    flat = flat.masked_fill(~valid, -math.inf if top else math.inf)
    order = flat.argsort(dim=-1, descending=top, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(flat.shape[-1], device=scores.device).expand_as(order))
    n_terms = per_query * torch.arange(1, T + 1, device=scores.device, dtype=torch.float64)
    counts = torch.round(fraction * n_terms).to(rank.dtype)[:, None]  # (T, 1): per query i
    zero = (rank < counts) & valid
    return zero if scope == "head" else zero.view(B, T, H, T).permute(0, 2, 1, 3)


def _layer_scores(records: Mapping[int, dict], measure: Measure) -> dict[int, torch.Tensor]:
    return {layer: measure(r["pattern"], r["values"]) for layer, r in records.items()}


def _scales(
    scores: Mapping[int, torch.Tensor], fraction: float, mode: str, scope: str
) -> Callable[[int], torch.Tensor]:
    """Per-layer keep scales (1 keep, 0 zero), built lazily one layer at a time."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")

    def scale(layer: int) -> torch.Tensor | None:
        if layer not in scores:
            return None
        return (~rank_mask(scores[layer], fraction, mode == "comprehensiveness", scope)).float()

    return scale


def token_nll(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Summed next-token negative log-likelihood of ``ids`` (B, T) under ``logits`` (B, T, V)."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten(), reduction="sum")


def _batches(n: int, batch_size: int) -> Iterable[slice]:
    return (slice(s, min(s + batch_size, n)) for s in range(0, n, batch_size))


@torch.no_grad()
def intervention_curves(
    lm: TextModel,
    windows: torch.Tensor,
    fractions: Sequence[float],
    measures: Mapping[str, Measure] = IMPORTANCE_MEASURES,
    layers: Sequence[int] | None = None,
    batch_size: int = 8,
    desc: str = "interventions",
    scopes: Sequence[str] = ("head",),
) -> pd.DataFrame:
    """Perplexity of ``windows`` (N, T) token ids under each ranking scope x measure x mode x fraction; the
    interventions act in ``layers`` (default all). Returns columns scope, measure, mode, fraction, ppl,
    delta_ppl (ppl minus the clean perplexity; exactly 0 at fraction 0, where nothing is zeroed)."""
    nll: dict[tuple[str, str, str, float], float] = {}
    clean_nll, tokens = 0.0, 0
    steps = len(range(0, len(windows), batch_size)) * len(measures)
    bar = tqdm(total=steps, desc=desc, mininterval=15)
    for rows in _batches(len(windows), batch_size):
        ids = windows[rows].to(lm.device)
        logits, records = capture(lm.model, ids, layers=layers)
        clean = token_nll(logits, ids).item()
        clean_nll += clean
        tokens += ids[:, 1:].numel()
        for name, measure in measures.items():
            scores = _layer_scores(records, measure)
            for scope, mode, f in itertools.product(scopes, MODES, fractions):
                if f == 0:
                    value = clean
                else:
                    with intervene(lm.model, _scales(scores, f, mode, scope)):
                        value = token_nll(lm.logits(ids), ids).item()
                key = (scope, name, mode, f)
                nll[key] = nll.get(key, 0.0) + value
            bar.update()
        del records
    bar.close()
    ppl0 = math.exp(clean_nll / tokens)
    rows_out = [
        {"scope": scope, "measure": m, "mode": mode, "fraction": f, "ppl": math.exp(v / tokens)}
        for (scope, m, mode, f), v in nll.items()
    ]
    frame = pd.DataFrame(rows_out)
    frame["delta_ppl"] = frame["ppl"] - ppl0
    return frame


def curve_areas(curves: pd.DataFrame, log: bool = False) -> pd.DataFrame:
    """Area under each delta-PPL curve (trapezoid rule) divided by the span of the fractions, i.e. the mean
    delta-PPL over the fractions: a (measure x mode) table. Comprehensiveness: higher is more faithful;
    sufficiency: lower is. With ``log`` the curve is sign(dPPL) log(1 + |dPPL|) (the symlog scale of the
    plots), so that the small fractions, where the perplexity is still finite-looking, weigh as much as the
    large ones, where zeroing most terms of every layer makes it explode."""
    out = {}
    for (measure, mode), sub in curves.groupby(["measure", "mode"], sort=False):
        sub = sub.sort_values("fraction")
        x, y = sub["fraction"].to_numpy(), sub["delta_ppl"].to_numpy()
        if log:
            y = np.sign(y) * np.log1p(np.abs(y))
        out[measure, mode] = float(np.trapezoid(y, x) / (x[-1] - x[0]))
    return pd.Series(out).rename_axis(["measure", "mode"]).unstack("mode")


def hierarchy_holds(areas: pd.DataFrame, order: Sequence[str]) -> dict[str, bool]:
    """Whether the areas follow the paper's hierarchy ``order`` (least faithful first): comprehensiveness
    strictly increasing along it, sufficiency strictly decreasing."""
    comp = areas.loc[list(order), "comprehensiveness"].to_numpy()
    suff = areas.loc[list(order), "sufficiency"].to_numpy()
    return {
        "comprehensiveness": bool(np.all(np.diff(comp) > 0)),
        "sufficiency": bool(np.all(np.diff(suff) < 0)),
    }


def _choice_batch(lm: TextModel, items: Sequence[MultipleChoice]) -> tuple[list[list[int]], list[int]]:
    """Token ids of prompt + choice for every (item, choice), and each choice's length in tokens."""
    seqs, spans = [], []
    for item in items:
        context = lm.encode(item.prompt)
        for choice in item.choices:
            answer = lm.encode(choice)
            seqs.append(context + answer)
            spans.append(len(answer))
    return seqs, spans


@torch.no_grad()
def choice_accuracy(
    lm: TextModel,
    items: Sequence[MultipleChoice],
    interventions: Sequence[tuple[str, str, float]],
    measures: Mapping[str, Measure] = IMPORTANCE_MEASURES,
    batch_size: int = 16,
    desc: str = "multiple choice",
    scope: str = "head",
) -> pd.DataFrame:
    """Zero-shot accuracy on ``items`` (each choice scored by the summed log-likelihood of its tokens after
    the prompt; a tie earns 1 / number tied) without intervention and under each (measure, mode, fraction) of
    ``interventions``, ranked (within ``scope``) on the clean pass of the same sequence. Returns columns
    measure, mode, fraction, accuracy; the clean row has measure "none"."""
    seqs, spans = _choice_batch(lm, items)
    settings = [("none", "none", 0.0), *interventions]
    scores: dict[tuple, list[float]] = {s: [] for s in settings}
    for rows in tqdm(list(_batches(len(seqs), batch_size)), desc=desc, mininterval=15):
        chunk = seqs[rows]
        width = max(len(s) for s in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        for b, s in enumerate(chunk):
            ids[b, : len(s)] = torch.tensor(s)  # right padding never reaches earlier positions (causal)
        ids = ids.to(lm.device)
        logits, records = capture(lm.model, ids)
        by_measure = {}
        for setting in settings:
            name, mode, f = setting
            if name == "none":
                out = logits
            else:
                if name not in by_measure:
                    by_measure[name] = _layer_scores(records, measures[name])
                with intervene(lm.model, _scales(by_measure[name], f, mode, scope)):
                    out = lm.logits(ids)
            logp = F.log_softmax(out.float(), dim=-1)
            for b, s in enumerate(chunk):
                n = spans[rows.start + b]
                target = torch.tensor(s[len(s) - n :], device=logp.device)
                scores[setting].append(
                    logp[b, len(s) - n - 1 : len(s) - 1].gather(-1, target[:, None]).sum().item()
                )
    rows_out = []
    for (name, mode, f), flat in scores.items():
        it = iter(flat)
        credit = [tie_credit([next(it) for _ in item.choices], item.answer) for item in items]
        rows_out.append({"measure": name, "mode": mode, "fraction": f, "accuracy": float(np.mean(credit))})
    return pd.DataFrame(rows_out)
