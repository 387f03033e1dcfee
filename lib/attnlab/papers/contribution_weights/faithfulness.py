"""Faithfulness of importance measures by causal intervention (arXiv 2606.07604,
docs/papers/contribution-weights.md, claims "faithfulness" and "downstream").

For a set of layers, each query position i and an importance measure m, the value terms a^h_ij v~^h_j are
ranked by m and a fraction of them is zeroed in those layers only:

- comprehensiveness: zero the top-ranked fraction; a faithful measure makes the perplexity rise most;
- sufficiency: zero the bottom-ranked fraction (keep the top); a faithful measure makes it rise least.

Layer sets (``layer_sets``): one layer at a time, at evenly spaced depths, and those layers together (the
few-layer variant). Zeroing a fraction of the terms in every layer at once saturates: already at 5% every
measure raised SmolLM2's perplexity by hundreds, so the measures could not be told apart.

Ranking scope (the paper's exact protocol is not known; both are implemented, ``term_scores``):

- ``"head"``: each head ranks its own row, zeroing the top round(fraction * (i + 1)) of the keys j <= i of
  query i, by the intra-head measures (``attnlab.metrics.IMPORTANCE_MEASURES``).
- ``"joint"``: the H (i + 1) terms (h, j <= i) of query i in a layer are ranked together, by inter-head
  scores that share one scale across heads: a^h_ij, a^h_ij ||v~^h_j||, a^h_ij ||v~^h_j|| / ||o_i|| and the
  inter-head contribution weight of the term, <o_i, a^h_ij v~^h_j> / ||o_i||^2 with o_i the layer's
  multi-head output (``joint_contribution``; summed over heads it is
  ``attnlab.metrics.contribution_weights(inter_head=True)``).

In both scopes value-weighted and output-normalised attention differ by a factor constant across the ranked
terms (1 / ||o^h_i|| within a head's row, 1 / ||o_i|| within a query's joint set), so they zero the same terms
and their curves coincide (unit-tested); ``RANKINGS`` therefore runs value-weighted only.

Contribution weights rank by their signed value (``"contribution"``: the bottom of a row holds the terms
that point against the output, the destructive ones) and by magnitude (``"contribution_abs"``: |c|, the
bottom holds the terms that matter least either way); both are reported in both modes.

The measures are computed from a clean forward pass (``attnlab.hf.capture``); the interventions
(``attnlab.hf.intervene``) rescale the terms of the following passes. The fractions of one (layer set, scope,
measure, mode) run as one batched pass: the windows are repeated once per fraction, each copy with its own
scale. In a Hugging Face model that pass skips the layers below the set (``attnlab.hf.resume_at``): the
intervention cannot change them, so their output is the clean pass's.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlab.data.tasks import MultipleChoice, tie_credit
from attnlab.hf import (
    TextModel,
    capture,
    capture_nll,
    decoder_layers,
    intervene,
    recording_layer_inputs,
    resume_at,
)
from attnlab.metrics import IMPORTANCE_MEASURES, attention_outputs

MODES = ("comprehensiveness", "sufficiency")

SCOPES = ("head", "joint")
#: The measures a ranking can use: the four of ``attnlab.metrics.IMPORTANCE_MEASURES`` and |contribution|.
RANKED_MEASURES = (*IMPORTANCE_MEASURES, "contribution_abs")


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


def joint_contribution(pattern: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Inter-head contribution weight of each term (docs/papers/contribution-weights.md, "Definitions"):
    <o_i, a^h_ij v~^h_j> / ||o_i||^2 with o_i = sum_h o^h_i the layer's multi-head output, (B, H, T, T). The
    B x T rows sum to 1 over (h, j); summed over h it is ``contribution_weights(inter_head=True)``."""
    pattern, values = pattern.float(), values.float()
    o = attention_outputs(pattern, values, inter_head=True)  # (B, T, D)
    o_dot_v = o.unsqueeze(1) @ values.transpose(-1, -2)  # (B, H, T, T): <o_i, v~^h_j>
    sq = (o * o).sum(-1)  # (B, T)
    inv = torch.where(sq > 0, 1.0 / torch.where(sq > 0, sq, torch.ones_like(sq)), torch.zeros_like(sq))
    return pattern * o_dot_v * inv[:, None, :, None]


def term_scores(measure: str, pattern: torch.Tensor, values: torch.Tensor, scope: str) -> torch.Tensor:
    """The score (B, H, T, T) by which ``measure`` ranks the value terms of one layer within ``scope``
    (module docstring): the intra-head measures for ``"head"``, inter-head ones for ``"joint"``;
    ``"contribution_abs"`` is |contribution|."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    if measure not in RANKED_MEASURES:
        raise ValueError(f"measure must be one of {RANKED_MEASURES}, got {measure!r}")
    base = measure.removesuffix("_abs")
    if scope == "head":
        score = IMPORTANCE_MEASURES[base](pattern, values)
    elif base == "contribution":
        score = joint_contribution(pattern, values)
    else:
        pattern, values = pattern.float(), values.float()
        score = pattern if base == "raw" else pattern * values.norm(dim=-1).unsqueeze(-2)  # (B, H, T, T)
        if base == "output_normalised":
            norm = attention_outputs(pattern, values, inter_head=True).norm(dim=-1)  # (B, T)
            score = score / norm.clamp_min(1e-30)[:, None, :, None]
    return score.abs() if measure.endswith("_abs") else score


def layer_sets(n_layers: int, count: int) -> dict[str, tuple[int, ...]]:
    """``count`` evenly spaced layers (the centres of ``count`` equal bins of the depth), each alone, and,
    when there are several, all of them together: {"layer 5": (5,), ..., "layers 5+15+25": (5, 15, 25)}."""
    if not 1 <= count <= n_layers:
        raise ValueError(f"count must be in [1, {n_layers}], got {count}")
    chosen = sorted({int((k + 0.5) * n_layers / count) for k in range(count)})
    sets: dict[str, tuple[int, ...]] = {f"layer {layer}": (layer,) for layer in chosen}
    if len(chosen) > 1:
        sets["layers " + "+".join(map(str, chosen))] = tuple(chosen)
    return sets


def _batches(n: int, batch_size: int) -> Iterable[slice]:
    return (slice(s, min(s + batch_size, n)) for s in range(0, n, batch_size))


#: Padded tokens per multiple-choice batch (``choice_scores``): 16 MMLU prompts of 128 tokens.
BATCH_TOKENS = 2048


def _length_batches(lengths: Sequence[int], budget: int) -> list[slice]:
    """Consecutive batches of sequences sorted by ``lengths`` (ascending), each as many as fit ``budget``
    padded tokens (its size times its longest length), at least one: long sequences go in small batches,
    so little compute is spent on padding."""
    batches, start = [], 0
    for end in range(1, len(lengths) + 1):
        if end < len(lengths) and (end + 1 - start) * lengths[end] <= budget:
            continue
        batches.append(slice(start, end))
        start = end
    return batches


def _stacked_scale(
    scores: Mapping[int, torch.Tensor], fractions: Sequence[float], top: bool, scope: str
) -> Callable[[int], torch.Tensor | None]:
    """Keep scales (1 keep, 0 zero) for the windows repeated once per fraction: (F B, H, T, T) per layer."""

    def scale(layer: int) -> torch.Tensor | None:
        if layer not in scores:
            return None
        return torch.cat([(~rank_mask(scores[layer], f, top, scope)).float() for f in fractions])

    return scale


@torch.no_grad()
def intervention_curves(
    lm: TextModel,
    windows: torch.Tensor,
    fractions: Sequence[float],
    sets: Mapping[str, Sequence[int]],
    rankings: Mapping[str, Sequence[str]],
    scopes: Sequence[str] = SCOPES,
    batch_size: int = 8,
    desc: str = "interventions",
) -> pd.DataFrame:
    """Per-window negative log-likelihood of ``windows`` (N, T) token ids with the top (comprehensiveness)
    or bottom (sufficiency) ``fractions`` of the value terms zeroed in each layer set of ``sets`` (name ->
    layers), ranked within each scope by each measure of ``rankings`` (mode -> measures). Returns one row per
    window x layer set x scope x mode x measure x fraction: columns window, layers, scope, mode, measure,
    fraction, nll, clean_nll (the same window without intervention) and tokens (predicted tokens)."""
    fractions = [f for f in fractions if f > 0]
    needed = sorted({layer for layers in sets.values() for layer in layers})
    settings = [(scope, mode, m) for scope in scopes for mode, ms in rankings.items() for m in ms]
    if any(mode not in MODES for mode in rankings):
        raise ValueError(f"rankings must be keyed by {MODES}, got {list(rankings)}")
    skip = decoder_layers(lm.model) is not None  # a Hugging Face model: skip the layers below each set
    rows = []
    bar = tqdm(total=len(range(0, len(windows), batch_size)) * len(settings), desc=desc, mininterval=15)
    for span in _batches(len(windows), batch_size):
        ids = windows[span].to(lm.device)
        starts = sorted({min(layers) for layers in sets.values()}) if skip else []
        with contextlib.ExitStack() as stack:
            inputs = stack.enter_context(recording_layer_inputs(lm.model, starts)) if skip else {}
            clean_nll, records = capture_nll(lm.model, ids, layers=needed)
        clean = clean_nll.tolist()
        stacked = ids.repeat(len(fractions), 1)  # (F B, T): copy k holds fraction k
        for scope, mode, measure in settings:
            scores = {
                layer: term_scores(measure, r["pattern"], r["values"], scope) for layer, r in records.items()
            }
            for name, layers in sets.items():
                top = mode == "comprehensiveness"
                scale = _stacked_scale({lr: scores[lr] for lr in layers}, fractions, top, scope)
                with contextlib.ExitStack() as stack:
                    if skip and min(layers) > 0:  # the layers below the set are the clean pass's
                        hidden = inputs[min(layers)].repeat(len(fractions), 1, 1)  # (F B, T, D)
                        stack.enter_context(resume_at(lm.model, min(layers), hidden))
                    stack.enter_context(intervene(lm.model, scale))
                    nll = lm.nll(stacked).view(len(fractions), -1)  # (F, B)
                for k, f in enumerate(fractions):
                    for b, w in enumerate(range(span.start, span.stop)):
                        rows.append({
                            "window": w, "layers": name, "scope": scope, "mode": mode, "measure": measure,
                            "fraction": f, "nll": nll[k, b].item(), "clean_nll": clean[b],
                            "tokens": ids.shape[1] - 1,
                        })  # fmt: skip
            bar.update()
        del records
    bar.close()
    return pd.DataFrame(rows)


def with_delta(curves: pd.DataFrame) -> pd.DataFrame:
    """``curves`` with each window's perplexity (ppl), clean perplexity (ppl0) and delta_ppl = ppl - ppl0,
    and a fraction-0 row (delta 0, nothing zeroed) per window and setting."""
    keys = [c for c in curves.columns if c not in ("fraction", "nll")]
    zero = curves.drop_duplicates([k for k in keys if k != "clean_nll"]).assign(fraction=0.0)
    zero["nll"] = zero["clean_nll"]
    out = pd.concat([zero, curves], ignore_index=True)
    out["ppl"] = np.exp(out["nll"] / out["tokens"])
    out["ppl0"] = np.exp(out["clean_nll"] / out["tokens"])
    out["delta_ppl"] = out["ppl"] - out["ppl0"]
    return out


def symlog(y: np.ndarray) -> np.ndarray:
    """sign(y) log(1 + |y|): the log scale of the areas and plots."""
    return np.sign(y) * np.log1p(np.abs(y))


def curve_areas(curves: pd.DataFrame, log: bool = False, by: Sequence[str] = ()) -> pd.Series:
    """Area under each delta-PPL curve (trapezoid rule over the fractions, 0 included) divided by the span
    of the fractions, i.e. the mean delta-PPL over the fractions, one value per group of ``by`` + (measure,
    mode). ``curves`` needs columns fraction and delta_ppl (``with_delta``). Comprehensiveness: higher is more
    faithful; sufficiency: lower is. With ``log`` the curve is sign(dPPL) log(1 + |dPPL|), on which a
    perplexity that explodes at the large fractions does not outweigh the small ones."""
    out = {}
    for key, sub in curves.groupby([*by, "measure", "mode"], sort=False):
        sub = sub.groupby("fraction")["delta_ppl"].mean().sort_index()
        x, y = sub.index.to_numpy(), sub.to_numpy()
        if log:
            y = symlog(y)
        out[key] = float(np.trapezoid(y, x) / (x[-1] - x[0]))
    index = pd.MultiIndex.from_tuples(list(out), names=[*by, "measure", "mode"])  # also with no curve
    return pd.Series(list(out.values()), index=index, dtype=float)


def window_areas(curves: pd.DataFrame, log: bool = False) -> pd.Series:
    """``curve_areas`` of every window's own curve: indexed by (text, layers, scope, window, measure, mode)
    (the text column is optional), for intervals over windows and paired differences between measures."""
    by = [c for c in ("text", "layers", "scope", "window") if c in curves.columns]
    return curve_areas(curves, log, by)


#: One score read from a sequence's log-probabilities: the position of the first target's prediction and the
#: target tokens, scored by the sum of their log-probabilities.
Read = tuple[int, list[int]]


def _choice_batch(lm: TextModel, items: Sequence[MultipleChoice]) -> tuple[list[list[int]], list[list[Read]]]:
    """The sequences that score every (item, choice) and, per sequence, its reads in choice order: "\n" +
    the choice's context (``MultipleChoice.context``: the prompt, or the choice's own context, as WinoGrande's
    option filling the blank) + the choice, one read of the choice's tokens, for each choice; or, where every
    choice of an item is one token (MMLU's letters " A" .. " D", BoolQ's " no" / " yes") and every choice
    follows the same context, that context alone, read once per choice at its last position (one forward
    pass per item instead of one per choice; the same numbers, unit-tested). The newline gives an empty
    prompt a context, as ``attnlab.data.tasks.choice_logprobs`` does; the tokenizer's ``TextModel.prefix``
    (Gemma's BOS) comes first."""
    seqs: list[list[int]] = []
    reads: list[list[Read]] = []
    for item in items:
        texts = [item.context(k) for k in range(len(item.choices))]
        contexts = {text: lm.prefix + lm.encode("\n" + text) for text in texts}  # each distinct one once
        answers = [lm.encode(choice) for choice in item.choices]
        if len(contexts) == 1 and all(len(a) == 1 for a in answers):
            (context,) = contexts.values()
            seqs.append(context)
            reads.append([(len(context) - 1, a) for a in answers])
            continue
        for text, answer in zip(texts, answers, strict=True):
            seqs.append(contexts[text] + answer)
            reads.append([(len(contexts[text]) - 1, answer)])
    return seqs, reads


def _read_positions(
    reads: Sequence[Sequence[Read]], lengths: Sequence[int]
) -> tuple[torch.Tensor, list[int]]:
    """The positions (B, P) whose logits a batch's reads need (each sequence's from its first read's position
    on, P the longest such span; a shorter span repeats its sequence's last position) and each sequence's
    first position, from which its reads are offset."""
    firsts = [min(at for at, _ in r) for r in reads]
    lasts = [max(at + len(t) - 1 for at, t in r) for r in reads]
    span = max(last - first for first, last in zip(firsts, lasts, strict=True)) + 1
    keep = torch.tensor(
        [[min(first + k, n - 1) for k in range(span)] for first, n in zip(firsts, lengths, strict=True)]
    )
    return keep, firsts


@torch.no_grad()
def choice_scores(
    lm: TextModel,
    items: Sequence[MultipleChoice],
    interventions: Sequence[tuple[str, str, float]],
    layers: Sequence[int] | None = None,
    scope: str = "joint",
    batch_tokens: int = BATCH_TOKENS,
    desc: str = "multiple choice",
) -> dict[tuple[str, str, float], list[float]]:
    """The summed log-likelihood of every (item, choice)'s tokens after its context (the prompt, or the
    choice's own: ``MultipleChoice.context``), flat in item order, without intervention (key ("none", "none",
    0.0)) and under each (measure, mode, fraction) of ``interventions`` in ``layers`` (default all), ranked
    within ``scope`` on the clean pass of the same sequence. The sequences are sorted by length and batched
    up to ``batch_tokens`` padded tokens (``_length_batches``: little padding), and the logits computed only
    at the positions read (``attnlab.hf.keep_logits``); in a Hugging Face model the layers below the
    intervened ones are not run again: they start from the clean pass's hidden states."""
    seqs, reads = _choice_batch(lm, items)
    settings = [("none", "none", 0.0), *interventions]
    hf_model = decoder_layers(lm.model) is not None
    start = min(layers) if hf_model and layers else 0
    by_seq: dict[tuple, list[list[float]]] = {s: [[] for _ in seqs] for s in settings}
    order = sorted(range(len(seqs)), key=lambda k: len(seqs[k]))  # stable: ties keep item order
    batches = _length_batches([len(seqs[k]) for k in order], batch_tokens)
    for rows in tqdm(batches, desc=desc, mininterval=15):
        chosen_seqs = order[rows]
        chunk = [seqs[k] for k in chosen_seqs]
        width = max(len(s) for s in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        for b, s in enumerate(chunk):
            ids[b, : len(s)] = torch.tensor(s)  # right padding never reaches earlier positions (causal)
        ids = ids.to(lm.device)
        keep, firsts = _read_positions([reads[k] for k in chosen_seqs], [len(s) for s in chunk])
        keep = keep.to(lm.device)
        with contextlib.ExitStack() as stack:
            inputs = stack.enter_context(recording_layer_inputs(lm.model, [start])) if start else {}
            logits, records = capture(lm.model, ids, layers=layers, keep=keep)  # (B, P, V)
        for name, mode, f in settings:
            if name == "none":
                out = logits
            else:
                ranked = {
                    layer: term_scores(name, r["pattern"], r["values"], scope) for layer, r in records.items()
                }
                scale = _stacked_scale(ranked, [f], mode == "comprehensiveness", scope)
                with contextlib.ExitStack() as stack:
                    if start:  # the layers below the intervened ones are the clean pass's
                        stack.enter_context(resume_at(lm.model, start, inputs[start]))
                    stack.enter_context(intervene(lm.model, scale))
                    out = lm.logits(ids, keep)
            logp = F.log_softmax(out.float(), dim=-1)
            for b, k in enumerate(chosen_seqs):
                for at, targets in reads[k]:
                    target = torch.tensor(targets, device=logp.device)
                    at = at - firsts[b]
                    picked = logp[b, at : at + len(targets)].gather(-1, target[:, None])
                    by_seq[name, mode, f][k].append(picked.sum().item())
    return {s: [x for per_seq in values for x in per_seq] for s, values in by_seq.items()}


def choice_accuracy(
    lm: TextModel,
    items: Sequence[MultipleChoice],
    interventions: Sequence[tuple[str, str, float]],
    layers: Sequence[int] | None = None,
    scope: str = "joint",
    batch_tokens: int = BATCH_TOKENS,
    desc: str = "multiple choice",
) -> pd.DataFrame:
    """Zero-shot multiple choice on ``items`` (each choice scored by the summed log-likelihood of its tokens
    after its context, ``choice_scores``; a tie earns 1 / number tied), without intervention and under each
    (measure, mode, fraction) of ``interventions`` in ``layers`` (default all), ranked within ``scope`` on the
    clean pass of the same sequence. Returns one row per item and setting: columns item, measure, mode,
    fraction, credit (0, 1 or a tie's share) and chance (:func:`chance_level` of the items, the same on every
    row); the clean rows have measure "none"."""
    scores = choice_scores(lm, items, interventions, layers, scope, batch_tokens, desc)
    chance = chance_level(items)
    rows_out = []
    for (name, mode, f), flat in scores.items():
        it = iter(flat)
        for k, item in enumerate(items):
            credit = tie_credit([next(it) for _ in item.choices], item.answer)
            rows_out.append({"item": k, "measure": name, "mode": mode, "fraction": f, "credit": credit,
                             "chance": chance})  # fmt: skip
    return pd.DataFrame(rows_out)


def chance_level(items: Sequence[MultipleChoice]) -> float:
    """The accuracy a model reaches on ``items`` without having learned the task: the better of guessing
    (the mean of 1 / choices) and always giving the same answer position (the share of the commonest
    correct position: BoolQ's " yes", the second choice, is right on about 62% of its items). The downstream
    claim judges a task only where the clean accuracy is above this (``claims.downstream_task``)."""
    if not items:
        return math.nan
    guess = sum(1 / len(item.choices) for item in items) / len(items)
    counts = np.bincount([item.answer for item in items])
    return max(guess, float(counts.max()) / len(items))
