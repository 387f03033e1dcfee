"""Subject-verb agreement as the authors of "Faster query-key learning sharpens attention" (arXiv 2608.06776)
set it up in their notebooks (``SVA-Dataset/Baseline_SVA_Train+heatmap+Eval.ipynb`` and ``Faster_SVA_...``,
``authors.SVA_SOURCES``): the FULL sentence goes in, an attention-only block reads it, and a class head on the
attention output of the last real token says whether the marked verb is singular (VBZ, class 0) or plural
(VBP, class 1).

The authors' model (their ``DemoTransformer``): token + learned position embeddings, ONE attention layer with
biases (4 heads x 64, d_model 64, N(0, 0.02) init) whose output goes straight to the class head: no residual
stream, no LayerNorm, no MLP (the block's residual and MLP lines are commented out; the config's d_mlp 256 is
unused). :class:`AttentionOnlyClassifier` is that model built from attnlab's own attention layer
(``attnlab.attention.ATTENTION_KINDS``), so the captured forward pass (``capture``: q, k, v, pattern) serves
the attention metrics.

Their data: Linzen et al.'s ``agr_50_mostcommon_10K.tsv``, 1 577 211 Wikipedia sentences with the subject and
verb marked, 10 % for training and 90 % for testing, 68 % singular. It is not available offline. Here: every
English subject-verb agreement set of BIG-bench's PyPI sdist (:data:`SVA_SETS`), each item's prefix followed
by its correct continuation (the full sentence; for Linzen's and Gulordava's items the rest of the sentence,
for the templated sets of Lakretz et al. the sentence ends at the verb), labelled by the number of that verb
(:func:`verb_number`). Left out: the two ``_mini`` sets (copies of items of other sets), the two ``_cont``
sets (their sentences are exactly those of each other, labelled once by the inner and once by the outer verb,
so a whole-sentence classifier cannot tell the labels apart) and the Italian sets. Sentences that occur twice
are kept once. The subject is the templated sets' second word ("The athlete ...") or, in the ``*_inner`` sets,
the noun after "that the" (the verb there agrees with the embedded subject); in the natural sets a rule finds
it (``text_tasks.subject_head``). A deterministic hash of the sentence puts ``train_fraction`` of them in
training (the authors: 10 %).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.attention import ATTENTION_KINDS
from attnlab.data.artifacts import extract
from attnlab.model import GPTConfig
from attnlab.papers.qk_speed.text_tasks import (
    ClassificationData,
    Vocabulary,
    split_suffix,
    subject_head,
    words,
)
from attnlab.training.loop import Checkpoint, Schedule, optimise
from attnlab.training.optim import adam, gpt_groups, sgd

_ROOT = "bigbench-1.0.0/bigbench/benchmark_tasks/subject_verb_agreement"

# Every English set of BIG-bench's subject_verb_agreement task but the _mini and _cont ones (docstring).
NATURAL_SETS = ("linzen2016_english", "gulordava_nonce_english", "frequency_disbalance_nonce_english")
TEMPLATED_SETS = (
    "simple_english",
    "adv_english",
    "adv_adv_english",
    "adv_conjunction_english",
    "namepp_english",
    "nounpp_english",
    "nounpp_adv_english",
    "short_nested_inner_english",
    "short_nested_outer_english",
    "long_nested_inner_english",
    "long_nested_outer_english",
)
SVA_SETS = NATURAL_SETS + TEMPLATED_SETS
LINZEN_SENTENCES = 1_577_211  # the authors' agr_50_mostcommon_10K.tsv ("total_data", authors.SVA_SOURCES)

SINGULAR, PLURAL = 0, 1  # the authors' LabelEncoder classes ["VBZ", "VBP"]
_SINGULAR_FORMS = frozenset("is was has does isn't wasn't hasn't doesn't".split())
_PLURAL_FORMS = frozenset("are were have do aren't weren't haven't don't".split())


def _word_stem(word: str) -> str:
    """``word`` up to an apostrophe ("carries'kayani" -> "carries"), unless it is a listed form ("isn't")."""
    if word in _SINGULAR_FORMS or word in _PLURAL_FORMS:
        return word
    return re.split(r"['’]", word)[0]


def verb_number(correct: str, wrong: str) -> int:
    """:data:`SINGULAR` or :data:`PLURAL`: the number of the verb ``correct`` (a word), given its form in the
    other number ``wrong`` (each cut at an apostrophe). Forms of be / have / do by list; otherwise the form
    with the third-person "-s" ("admires" / "admire", "passes" / "pass") is the singular. Raises ValueError
    when neither rule decides."""
    c, w = (_word_stem(x.lower()) for x in (correct, wrong))
    if c in _SINGULAR_FORMS or w in _PLURAL_FORMS:
        return SINGULAR
    if c in _PLURAL_FORMS or w in _SINGULAR_FORMS:
        return PLURAL
    if c.endswith("s") != w.endswith("s"):
        return SINGULAR if c.endswith("s") else PLURAL
    if c.startswith(w) and len(c) > len(w):
        return SINGULAR
    if w.startswith(c) and len(w) > len(c):
        return PLURAL
    raise ValueError(f"cannot tell the number of {correct!r} against {wrong!r}")


def _subject(prefix: Sequence[str], name: str) -> int:
    """Index of the subject's head in ``prefix`` (words): the templated sets' second word, after "that the" in
    the ``*_inner`` sets, ``subject_head``'s rule in the natural sets."""
    if name in NATURAL_SETS:
        return subject_head(prefix)
    if name.endswith("_inner_english"):
        return len(prefix) - 1 - prefix[::-1].index("that") + 2
    return 1


def _train_side(sentence: str, fraction: float) -> bool:
    """A fixed pseudo-random draw per sentence: True (train) for about ``fraction`` of them."""
    return int(hashlib.sha256(sentence.encode()).hexdigest()[:8], 16) / 16**8 < fraction


def load_agreement(
    sets: Sequence[str] = SVA_SETS, train_fraction: float = 0.1, limit: int | None = None
) -> ClassificationData:
    """The full sentences of ``sets`` (the first ``limit`` items of each; None: all) as verb-number
    classification (module docstring): ``labels`` 0 singular / 1 plural, ``relevant`` the subject's head and
    the verb (their "+s" pieces included), ``item`` the index of the source set in ``sets``, ``train`` the
    split. Words are tokenised as in ``text_tasks`` (lower case, a trailing "-s" split off as ``+s``); the
    vocabulary is that of the training sentences (id 1 for any other token)."""
    root = extract("bigbench", [f"{_ROOT}/{name}.json" for name in sets])
    rows: list[tuple[list[str], int, list[int], int, bool]] = []
    seen: dict[
        str, int
    ] = {}  # rows: (tokens, label, relevant, set index, train); seen: sentence -> row index
    conflicting = set()
    for s, name in enumerate(sets):
        examples = json.loads((root / _ROOT / f"{name}.json").read_text())["examples"][:limit]
        for ex in examples:
            if len(ex["target_scores"]) != 2:  # a few items list one continuation twice: nothing to contrast
                continue
            (correct, _), (wrong, _) = sorted(ex["target_scores"].items(), key=lambda kv: -kv[1])
            prefix, continuation = words(ex["input"]), words(correct)
            label = verb_number(continuation[0], words(wrong)[0])
            sentence = " ".join(prefix + continuation)
            if sentence in seen:
                if rows[seen[sentence]][1] != label:
                    conflicting.add(seen[sentence])
                continue
            head = _subject(prefix, name)
            toks: list[str] = []
            marked: list[int] = []
            for j, w in enumerate(prefix + continuation):
                pieces = split_suffix(w)
                if j in (head, len(prefix)):  # the subject's head, the verb
                    marked += range(len(toks), len(toks) + len(pieces))
                toks += pieces
            seen[sentence] = len(rows)
            rows.append((toks, label, marked, s, _train_side(sentence, train_fraction)))
    rows = [r for i, r in enumerate(rows) if i not in conflicting]
    vocab = Vocabulary([t for r in rows if r[4] for t in r[0]])
    T = max(len(r[0]) for r in rows)
    tokens = torch.zeros(len(rows), T, dtype=torch.long)
    relevant = torch.zeros(len(rows), T, dtype=torch.bool)
    for n, (toks, _, rel, _, _) in enumerate(rows):
        tokens[n, : len(toks)] = torch.tensor(vocab.encode(toks))
        relevant[n, rel] = True
    return ClassificationData(
        tokens=tokens,
        lengths=torch.tensor([len(r[0]) for r in rows]),
        labels=torch.tensor([r[1] for r in rows]),
        relevant=relevant,
        item=torch.tensor([r[3] for r in rows]),
        train=torch.tensor([r[4] for r in rows]),
        vocab=vocab,
        n_classes=2,
    )


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
