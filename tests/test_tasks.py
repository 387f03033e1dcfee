"""Multiple-choice scoring against a one-sequence-at-a-time reference."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlab.data.tasks import MultipleChoice, accuracy, choice_logprobs
from attnlab.data.tokenizer import ByteTokenizer
from attnlab.model import GPT, GPTConfig


def reference_logprob(model: GPT, prompt: str, choice: str, encode=None) -> float:
    encode = encode or ByteTokenizer().encode
    context, answer = encode("\n" + prompt).long(), encode(choice).long()
    seq = torch.cat((context, answer))[None]
    logits, _ = model(seq[:, :-1])
    logp = F.log_softmax(logits, -1)[0]
    return sum(logp[len(context) - 1 + i, answer[i]].item() for i in range(len(answer)))


def test_batched_scores_equal_one_sequence_at_a_time():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=2, d_model=32, n_head=2, head_dim=16, block_size=64, attn="xsa"))
    items = [
        MultipleChoice("The athlete ", ("admires", "admire"), 0),
        MultipleChoice("", ("A because B.", "B because A, surely."), 1),
        MultipleChoice("x" * 20, ("yes", "no", "maybe"), 2),
    ]
    scores = choice_logprobs(model, items, batch_size=2)
    for item, row in zip(items, scores, strict=True):
        for choice, score in zip(item.choices, row, strict=True):
            assert abs(score - reference_logprob(model, item.prompt, choice)) < 1e-4
    picked = [max(range(len(r)), key=r.__getitem__) for r in scores]
    expected = sum(p == it.answer for p, it in zip(picked, items, strict=True)) / len(items)
    assert accuracy(model, items) == expected


def test_each_choice_is_scored_after_its_own_context_where_the_choices_have_one():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=64))
    contexts = ("The cup fell off the table because the cup", "The cup fell off the table because the table")
    item = MultipleChoice("The cup fell off the table because _", (" was tilted.",) * 2, 1, contexts=contexts)
    (row,) = choice_logprobs(model, [item])
    assert row == [pytest.approx(reference_logprob(model, c, " was tilted."), abs=1e-4) for c in contexts]
    assert abs(row[0] - row[1]) > 1e-3  # the same words after two different contexts


def test_a_tie_earns_the_expected_score_of_a_random_pick():
    model = GPT(GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=16))
    same = MultipleChoice("x", ("abc", "abc"), 0)  # identical choices always tie
    assert accuracy(model, [same]) == 0.5


def test_long_context_is_cut_from_the_left():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=16))
    long = MultipleChoice("a" * 100 + "tail ", ("one", "two"), 0)
    short = MultipleChoice("a" * 40 + "tail ", ("one", "two"), 0)
    assert choice_logprobs(model, [long]) == choice_logprobs(model, [short])


class CharMod:
    """A stand-in for a corpus's tokenizer (``attnlab.data.tokenizer`` interface): one id per character, mod
    50."""

    @staticmethod
    def encode_batch(texts: list[str]) -> list[np.ndarray]:
        return [np.array([ord(c) % 50 for c in text]) for text in texts]


def test_choices_are_encoded_with_the_corpus_tokenizer():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, n_layer=1, d_model=16, n_head=2, head_dim=8, block_size=32))
    items = [MultipleChoice("The keys ", ("are", "is"), 0), MultipleChoice("", ("yes", "no"), 1)]
    scores = choice_logprobs(model, items, tokenizer=CharMod())

    def encode(text: str) -> torch.Tensor:
        return torch.from_numpy(CharMod.encode_batch([text])[0])

    for item, row in zip(items, scores, strict=True):
        for choice, score in zip(item.choices, row, strict=True):
            assert abs(score - reference_logprob(model, item.prompt, choice, encode)) < 1e-4
