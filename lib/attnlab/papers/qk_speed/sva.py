"""Subject-verb agreement as the authors of "Faster query-key learning sharpens attention" (arXiv 2608.06776)
set it up in their notebooks (``SVA-Dataset/Baseline_SVA_Train+heatmap+Eval.ipynb`` and ``Faster_SVA_...``,
``authors.SVA_SOURCES``): a sentence goes in (theirs: the full sentence; here: the words before the verb, see
below), an attention-only block reads it, and a class head on the attention output of the last real token
says whether the verb is singular (VBZ, class 0) or plural (VBP, class 1).

The authors' model (their ``DemoTransformer``): token + learned position embeddings, ONE attention layer with
biases (4 heads x 64, d_model 64, N(0, 0.02) init) whose output goes straight to the class head: no residual
stream, no LayerNorm, no MLP (the block's residual and MLP lines are commented out; the config's d_mlp 256 is
unused). :class:`AttentionOnlyClassifier` is that model built from attnlab's own attention layer
(``attnlab.attention.ATTENTION_KINDS``), so the captured forward pass (``capture``: q, k, v, pattern) serves
the attention metrics.

Their data: Linzen et al.'s ``agr_50_mostcommon_10K.tsv``, 1 577 211 Wikipedia sentences with the subject and
verb marked, 10 % for training and 90 % for testing, 68 % singular. It is not available offline. Here its
substitute (:data:`SVA_DATA`), the agreement set built from the POS-tagged Brown corpus
(:mod:`attnlab.data.agreement`): for every verb whose tag gives its number, the sentence up to, not including,
the verb (Linzen et al.'s number-prediction input: the verb itself is not in the input, so only the words
before it can tell its number), labelled by the verb's number; the subject's head found by a rule on the tags.
It is split by document (``train_fraction`` of Brown's 500 documents train; the authors' share, 10 %) and
each split class-balanced (50 % singular, theirs 68 %). The relevant token, where attention should go, is the
subject's head (the authors mark the subject and the verb; the verb is not in the input here). ``item`` holds
each sentence's number of attractors (nouns of the other number between the subject and the verb).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.attention import ATTENTION_KINDS
from attnlab.data import agreement
from attnlab.model import GPTConfig
from attnlab.papers.qk_speed.presets import SVA_DATA as SVA_DATA  # re-exported
from attnlab.papers.qk_speed.text_tasks import (
    ClassificationData,
    Vocabulary,
    split_suffix,
)
from attnlab.training.loop import Checkpoint, Schedule, optimise
from attnlab.training.optim import adam, gpt_groups, sgd

LINZEN_SENTENCES = 1_577_211  # the authors' agr_50_mostcommon_10K.tsv ("total_data", authors.SVA_SOURCES)

SINGULAR, PLURAL = agreement.SINGULAR, agreement.PLURAL  # the authors' LabelEncoder classes ["VBZ", "VBP"]


def encode_items(items: Sequence[agreement.AgreementItem], train: Sequence[bool]) -> ClassificationData:
    """Agreement items as verb-number classification: each prefix in lower case, a trailing "-s" split off
    (``text_tasks.split_suffix``), ``labels`` 0 singular / 1 plural, ``relevant`` the pieces of the subject's
    head, ``item`` the number of attractors, ``train`` the split. The vocabulary is that of the training
    prefixes (id 1 for any other token)."""
    rows: list[tuple[list[str], list[int]]] = []
    for it in items:
        toks: list[str] = []
        marked: list[int] = []
        for j, w in enumerate(it.prefix):
            pieces = split_suffix(w.lower())
            if j == it.subject:
                marked += range(len(toks), len(toks) + len(pieces))
            toks += pieces
        rows.append((toks, marked))
    vocab = Vocabulary([t for (toks, _), tr in zip(rows, train, strict=True) if tr for t in toks])
    T = max(len(toks) for toks, _ in rows)
    tokens = torch.zeros(len(rows), T, dtype=torch.long)
    relevant = torch.zeros(len(rows), T, dtype=torch.bool)
    for n, (toks, rel) in enumerate(rows):
        tokens[n, : len(toks)] = torch.tensor(vocab.encode(toks))
        relevant[n, rel] = True
    return ClassificationData(
        tokens=tokens,
        lengths=torch.tensor([len(toks) for toks, _ in rows]),
        labels=torch.tensor([it.label for it in items]),
        relevant=relevant,
        item=torch.tensor([it.attractors for it in items]),
        train=torch.tensor(list(train), dtype=torch.bool),
        vocab=vocab,
        n_classes=2,
    )


def load_agreement(
    train_fraction: float = 0.1, limit: int | None = None, seed: int = 0
) -> ClassificationData:
    """:data:`SVA_DATA` as verb-number classification (:func:`encode_items`): the class-balanced train and
    test items of ``agreement.agreement_set`` (split by document, ``train_fraction`` of the documents
    training); ``limit``: a fixed random ``limit`` of each split (None: all), classes kept balanced."""
    train, test = agreement.agreement_set(train_fraction, seed)
    if limit is not None:
        train, test = (_subsample(part, limit, seed) for part in (train, test))
    return encode_items(train + test, [True] * len(train) + [False] * len(test))


def _subsample(items: list[agreement.AgreementItem], limit: int, seed: int) -> list[agreement.AgreementItem]:
    """A fixed random ``limit`` of the balanced ``items``, half of each class, in their order."""
    if limit >= len(items):
        return items
    keep: list[int] = []
    for label in (SINGULAR, PLURAL):
        idx = [n for n, it in enumerate(items) if it.label == label]
        g = torch.Generator().manual_seed(seed)
        keep += [idx[k] for k in torch.randperm(len(idx), generator=g)[: limit // 2].tolist()]
    return [items[n] for n in sorted(keep)]


def held_out_subset(data: ClassificationData, limit: int | None, seed: int = 0) -> ClassificationData:
    """The test split, or a fixed random ``limit`` of its sentences (the same for every run)."""
    test = data.split(False)
    if limit is None or limit >= len(test):
        return test
    keep = torch.randperm(len(test), generator=torch.Generator().manual_seed(seed))[:limit].sort().values
    return ClassificationData(
        test.tokens[keep],
        test.lengths[keep],
        test.labels[keep],
        test.relevant[keep],
        test.item[keep],
        test.train[keep],
        test.vocab,
        test.n_classes,
    )


class AttentionOnlyClassifier(nn.Module):
    """The authors' SVA model (module docstring): embeddings, one attention layer of kind ``cfg.attn`` (with
    biases when ``cfg.bias``), and a class head on the layer's output at each sequence's last real token; no
    residual, LayerNorm or MLP. ``cfg``: vocab_size, block_size, d_model, n_head, head_dim, n_classes, attn,
    bias (n_layer must be 1; pos "learned"). Every weight starts N(0, 0.02), every bias at 0 (their
    init_range)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if cfg.n_layer != 1 or cfg.pos != "learned" or cfg.n_classes < 2 or cfg.n_sink:
            raise ValueError("AttentionOnlyClassifier: 1 layer, learned positions, n_classes >= 2, no sinks")
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.block_size, cfg.d_model)
        self.attn = ATTENTION_KINDS[cfg.layer_kinds[0]](cfg, 0)
        self.cls_head = nn.Linear(cfg.d_model, cfg.n_classes)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def classify(
        self, idx: torch.Tensor, last: torch.Tensor | None = None, cache: list[dict] | None = None
    ) -> torch.Tensor:
        """Class logits (B, n_classes) from the attention output at position ``last[b]`` (default T - 1) of
        the token ids ``idx`` (B, T). ``cache``: a list that receives the layer's intermediates (q, k, v,
        pattern, y, z) of this very pass, as ``GPT.classify``."""
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))  # (B, T, D)
        capture: dict[str, torch.Tensor] | None = None
        if cache is not None:
            capture = {}
            cache.append(capture)
        out = self.attn(x, capture)  # (B, T, D)
        rows = torch.arange(len(idx), device=idx.device)
        return self.cls_head(out[rows, last] if last is not None else out[:, -1])

    def param_group(self, name: str) -> str:
        """The learning-rate group of a parameter: "embed" (token and position embeddings), the attention
        layer's own group ("qk" for W_Q, W_K and their biases, "ov" for W_V, W_O and theirs), "head"."""
        if name.startswith(("wte", "wpe")):
            return "embed"
        if name.startswith("attn."):
            return self.attn.param_group(name.removeprefix("attn."))
        return "head"


def train_agreement(
    cfg: GPTConfig,
    data: ClassificationData,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    momentum: float,
    weight_decay: float,
    warmup: float,
    lr_scale: dict[str, float],
    seed: int,
    device: str = "cpu",
    optimizer: str = "sgd",
    checkpoint: Path | None = None,
) -> dict:
    """Train ``AttentionOnlyClassifier(cfg)`` on the train split as the authors' training cell does: SGD with
    ``momentum`` and ``weight_decay``, each ``param_group`` at ``lr`` x ``lr_scale.get(group, 1)`` (faster QK:
    embed and qk x100), the cosine schedule with ``warmup`` x the total steps of linear warm-up, stepped every
    batch; random batches of ``batch_size``, cross-entropy. ``optimizer="adam"``: this project's protocol,
    Adam (default betas; ``momentum`` and ``weight_decay`` unused) with the same groups, rates and schedule.
    Returns ``{"model": state_dict, "train_loss": per-epoch means}``. ``checkpoint``: a file to save the run
    to after every epoch and resume it from (bit for bit)."""
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    torch.manual_seed(seed)
    model = AttentionOnlyClassifier(cfg).to(device)
    opt: torch.optim.Optimizer
    if optimizer == "sgd":
        opt = sgd(gpt_groups(model), lr, momentum=momentum, weight_decay=weight_decay, lr_scale=lr_scale)
    else:
        opt = adam(gpt_groups(model), lr, lr_scale=lr_scale)
    train = data.split(True)
    per_epoch = math.ceil(len(train) / batch_size)
    total = epochs * per_epoch
    # the authors' transformers.get_cosine_schedule_with_warmup, stepped every batch
    schedule = Schedule(total=total, warmup=int(warmup * total), end=0.0, warmup_offset=0)
    gen = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    order, sum_loss = [torch.empty(0, dtype=torch.long)], [0.0]

    def gradient(step: int) -> float:
        start = step % per_epoch
        if start == 0:
            order[0] = torch.randperm(len(train), generator=gen)
        idx = order[0][start * batch_size : (start + 1) * batch_size]
        width = int(train.lengths[idx].max())
        logits = model.classify(
            train.tokens[idx, :width].to(device), last=(train.lengths[idx] - 1).to(device)
        )
        loss = F.cross_entropy(logits.float(), train.labels[idx].to(device))
        loss.backward()
        sum_loss[0] += loss.item() * len(idx)
        return loss.item()

    def record(done: int, value: float) -> None:
        if done % per_epoch == 0:
            losses.append(sum_loss[0] / len(train))
            sum_loss[0] = 0.0

    saver = None  # saved at epoch ends: the next step draws the next epoch's order
    if checkpoint is not None:
        saver = Checkpoint.of(checkpoint, per_epoch, model, opt, gen, losses, device)
    start = saver.resume() if saver is not None else 0
    model.train()
    optimise(
        model,
        opt,
        total,
        gradient,
        schedule,
        start=start,
        record=record,
        checkpoint=saver,
        label="SVA classifier",
    )
    return {"model": {k: v.cpu() for k, v in model.state_dict().items()}, "train_loss": losses}
