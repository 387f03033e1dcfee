"""XSA Table 2: zero-shot scoring as language-model evaluation harnesses score it, and the trivial baselines a
model must beat before its accuracy supports a claim.

The tasks are the paper's eight (:data:`~attnlab.papers.xsa.presets.TABLE2_TASKS`): seven multiple-choice sets
(:data:`attnlab.data.tasks.TASKS`) and LAMBADA.

A candidate answer c of prompt x is scored three ways (lm-eval-harness's ``acc``, ``acc_norm`` and
``acc_mutual_info``), from its summed log-likelihood given the prompt, log P(c | x), and given no prompt,
log P(c):

- ``sum``: log P(c | x). A longer answer has more tokens to pay for, so this prefers short answers;
- ``per_byte``: log P(c | x) / bytes(c), the length-normalised likelihood;
- ``unconditional``: log P(c | x) - log P(c), how much the prompt raises the answer's likelihood, which
  cancels both the answer's length and how common it is.

LAMBADA has no choices: a passage counts as right when the model's greedy continuation of it is " " + its
last word, token for token in the model's own tokenizer (lm-eval-harness's LAMBADA ``acc``;
:func:`lambada_hits`), one scoring, ``greedy``.

An accuracy means something only above what a model gets without reading the item well: the trivial
baselines (:func:`trivial_baselines`): chance (1 / choices), always the most frequent correct answer text,
always the shortest or the longest answer, and (per model) the answer the model prefers with no prompt at
all. LAMBADA's (:func:`lambada_baselines`) are chance, taken as 0 (one word of an open vocabulary), and always
the most frequent last word of the items: an answer that ignores the passage is one fixed word, and no fixed
word is right more often than the most frequent one, so that baseline bounds the no-prompt one too (the
others do not apply: NaN, which :func:`best_baseline` passes over). A task is judged only where SA's accuracy
lies above the best of them: the baseline must have learned the task before XSA's gain over it means
anything, while XSA's own accuracy is shown beside it and never gates the claim, which would select on the
outcome (the gate :func:`attnlab.papers.xsa.rules.above_baseline`, kept with the other verdicts, outside the
results' code keys). The position of the correct choice is no baseline: the
scores do not depend on the order of the choices (a tie earns the same credit wherever the answer is listed).

A task's items are a fixed random sample (:func:`sample_items`), not its first ones, so that an ordered file
cannot hand a model a run of one kind of item.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
import torch

from attnlab.data.tasks import MultipleChoice, tie_credit
from attnlab.data.tokenizer import ByteTokenizer, Tokenizer
from attnlab.model import GPT

#: The ways a choice is scored (see the module docstring).
SCORINGS = ("sum", "per_byte", "unconditional")
#: The scorings the claims are judged on: the summed log-likelihood is shown beside them, never judged, since
#: it prefers short answers (a model picking the shortest choice looks like one that learned the task).
CLAIM_SCORINGS = ("per_byte", "unconditional")
#: LAMBADA's one scoring (greedy continuation), and the task's name in Table 2.
GREEDY = "greedy"
LAMBADA = "lambada"
SCORING_LABELS = {
    "sum": "summed log-likelihood",
    "per_byte": "log-likelihood per byte",
    "unconditional": "log-likelihood minus its value without the prompt",
    GREEDY: "greedy continuation is the last word",
}
#: The trivial baselines of a task, in the order a tie between them is named; ``no_prompt`` is per model.
BASELINES = ("chance", "majority_answer", "shortest", "longest", "no_prompt")
BASELINE_LABELS = {
    "chance": "chance",
    "majority_answer": "always the most frequent correct answer",
    "shortest": "always the shortest answer",
    "longest": "always the longest answer",
    "no_prompt": "the answer the model prefers without the prompt",
}


#: The columns of Table 2's tidy table (``XSAExperiment.zero_shot``): a row per (task, kind, seed, scoring).
ZERO_SHOT_COLUMNS = ("task", "n", "kind", "seed", "scoring", "accuracy", "correct", *BASELINES)
#: The seed of every task's item sample (:func:`sample_items`): fixed before any run, never changed to move a
#: result.
SAMPLE_SEED = 0


_Item = TypeVar("_Item")


def sample_items(items: Sequence[_Item], limit: int | None, seed: int = SAMPLE_SEED) -> list[_Item]:
    """``limit`` of ``items`` drawn at random without replacement by ``seed``, kept in file order (all of them
    when ``limit`` is None or not smaller than their number)."""
    if limit is None or limit >= len(items):
        return list(items)
    keep = np.sort(np.random.default_rng(seed).choice(len(items), size=limit, replace=False))
    return [items[int(k)] for k in keep]


def choice_bytes(item: MultipleChoice) -> list[int]:
    """The length of each choice in UTF-8 bytes (the unit of the per-byte score), at least 1."""
    return [max(1, len(choice.encode("utf-8"))) for choice in item.choices]


def scores(
    conditional: Sequence[float], unconditional: Sequence[float], n_bytes: Sequence[int], scoring: str
) -> list[float]:
    """One item's choice scores under ``scoring`` (:data:`SCORINGS`), from each choice's summed
    log-likelihood given the prompt (``conditional``) and given no prompt (``unconditional``) and its length
    in bytes."""
    if not len(conditional) == len(unconditional) == len(n_bytes):
        raise ValueError(f"{len(conditional)}, {len(unconditional)} and {len(n_bytes)} values for one item")
    if scoring == "sum":
        return [float(c) for c in conditional]
    if scoring == "per_byte":
        return [float(c) / b for c, b in zip(conditional, n_bytes, strict=True)]
    if scoring == "unconditional":
        return [float(c) - float(u) for c, u in zip(conditional, unconditional, strict=True)]
    raise ValueError(f"unknown scoring {scoring!r}; known: {SCORINGS}")


def accuracy(
    items: Sequence[MultipleChoice],
    conditional: Sequence[Sequence[float]],
    unconditional: Sequence[Sequence[float]],
    scoring: str,
) -> float:
    """The share of ``items`` whose correct choice scores highest under ``scoring``; a tie for the highest
    earns 1 / (number tied) (:func:`attnlab.data.tasks.tie_credit`)."""
    credits = [
        tie_credit(scores(c, u, choice_bytes(item), scoring), item.answer)
        for item, c, u in zip(items, conditional, unconditional, strict=True)
    ]
    return statistics.fmean(credits)


def no_prompt_accuracy(items: Sequence[MultipleChoice], unconditional: Sequence[Sequence[float]]) -> float:
    """The trivial baseline of a model that does not read the prompt: the accuracy of the choice it prefers
    with no prompt (``unconditional``: each choice's summed log-likelihood without it), by summed or by
    per-byte log-likelihood, whichever is higher (the stricter baseline)."""
    pairs = list(zip(items, unconditional, strict=True))
    by_sum = statistics.fmean(tie_credit(list(u), item.answer) for item, u in pairs)
    by_byte = statistics.fmean(
        tie_credit([x / b for x, b in zip(u, choice_bytes(item), strict=True)], item.answer)
        for item, u in pairs
    )
    return max(by_sum, by_byte)


def _constant_answer(items: Sequence[MultipleChoice], pick: Sequence[int | None]) -> float:
    """The accuracy of answering item k with choice ``pick[k]``, or at random (1 / choices) where it is
    None."""
    return statistics.fmean(
        1 / len(item.choices) if p is None else float(p == item.answer)
        for item, p in zip(items, pick, strict=True)
    )


def trivial_baselines(items: Sequence[MultipleChoice]) -> dict[str, float]:
    """A task's model-free baselines (the accuracy over ``items``): ``chance`` (the mean of 1 / choices),
    ``majority_answer`` (always the answer text most often correct where it is offered, else at random),
    ``shortest`` and ``longest`` (always the shortest or longest choice in bytes; ties earn 1 / number tied).
    Read off the same items as the models' accuracy, so the gate is as strict as it can be."""
    answer = Counter(item.choices[item.answer] for item in items).most_common(1)[0][0]
    by_answer = [item.choices.index(answer) if answer in item.choices else None for item in items]
    return {
        "chance": statistics.fmean(1 / len(item.choices) for item in items),
        "majority_answer": _constant_answer(items, by_answer),
        "shortest": statistics.fmean(
            tie_credit([-float(b) for b in choice_bytes(i)], i.answer) for i in items
        ),
        "longest": statistics.fmean(tie_credit([float(b) for b in choice_bytes(i)], i.answer) for i in items),
    }


def best_baseline(baselines: Mapping[str, float]) -> tuple[str, float]:
    """The highest of ``baselines`` (name, accuracy), passing over NaN (a baseline that does not apply to the
    task); a tie goes to the first in :data:`BASELINES` order."""
    given = {n: v for n, v in baselines.items() if not math.isnan(v)}
    order = [name for name in BASELINES if name in given] + [n for n in given if n not in BASELINES]
    name = max(order, key=lambda n: (baselines[n], -order.index(n)))
    return name, float(baselines[name])


def baseline_label(baselines: Mapping[str, float], value: float) -> str:
    """The labels of every baseline at ``value`` (several where they tie), in :data:`BASELINES` order."""
    names = [n for n in dict.fromkeys((*BASELINES, *baselines)) if baselines.get(n) == value]
    return " = ".join(BASELINE_LABELS.get(n, n) for n in names)


def lambada_baselines(words: Sequence[str]) -> dict[str, float]:
    """LAMBADA's model-free baselines over the items' last ``words``: ``chance`` 0 (one word of an open
    vocabulary), ``majority_answer`` the share of items whose word is the most frequent one (the best any
    answer that ignores the passage can do, so it also bounds the model's no-prompt answer), and NaN for the
    choice-length baselines, which do not apply."""
    if not words:
        raise ValueError("no LAMBADA items")
    share = Counter(words).most_common(1)[0][1] / len(words)
    return {"chance": 0.0, "majority_answer": share, "shortest": math.nan, "longest": math.nan}


def greedy_hit(logits: torch.Tensor, targets: torch.Tensor) -> bool:
    """Whether greedy decoding reproduces ``targets``: ``logits[k]`` (the model's output at the position
    before ``targets[k]``, shape (n, vocab)) has its maximum at ``targets[k]`` for every k. Teacher forcing
    is exact here: while every earlier token matched, the greedy continuation's prefix is the target's."""
    if logits.shape[:-1] != targets.shape or not len(targets):
        raise ValueError(f"logits {tuple(logits.shape)} for targets {tuple(targets.shape)}")
    return bool((logits.argmax(dim=-1) == targets).all())


@torch.no_grad()
def lambada_hits(
    model: GPT, items: Sequence[tuple[str, str]], tokenizer: Tokenizer | None = None, batch_size: int = 64
) -> list[bool]:
    """LAMBADA's accuracy per item (``(context, last word)``, :func:`attnlab.data.tasks.load_lambada`): the
    model's greedy continuation of the context is " " + the word (:func:`greedy_hit`), as lm-eval-harness
    scores it. ``tokenizer``: the model's (default bytes: greedy bytes), applied to the context and the target
    separately; the context is cut from the left to fit the block size. Float64 on a copy of the model, as
    :func:`~attnlab.data.tasks.choice_logprobs` scores (the argmax must not depend on the thread count)."""
    tok = tokenizer or ByteTokenizer()
    model = copy.deepcopy(model).double()
    model.eval()
    device = next(model.parameters()).device
    block = model.cfg.block_size

    def encode(text: str) -> torch.Tensor:
        return torch.from_numpy(tok.encode_batch([text])[0].astype(np.int64))

    seqs, spans = [], []
    for context, word in items:
        target = encode(" " + word)
        seq = torch.cat((encode(context), target))[-(block + 1) :]
        seqs.append(seq)
        spans.append(min(len(target), len(seq) - 1))
    hits = []
    for start in range(0, len(seqs), batch_size):
        chunk = seqs[start : start + batch_size]
        batch = torch.zeros(len(chunk), max(len(s) for s in chunk), dtype=torch.long)
        for i, s in enumerate(chunk):
            batch[i, : len(s)] = s  # right padding never affects earlier positions (causal)
        logits, _ = model(batch[:, :-1].to(device))
        for i, s in enumerate(chunk):
            n = spans[start + i]
            # the output at position p predicts token p + 1: the n targets s[-n:] come from outputs [-n-1, -1)
            hits.append(greedy_hit(logits[i, len(s) - 1 - n : len(s) - 1].cpu(), s[len(s) - n :]))
    return hits
