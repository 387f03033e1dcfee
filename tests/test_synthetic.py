"""The class-conditional synthetic task against its specification in docs/papers/qk-speed.md."""

import pytest
import torch

from attnlab.papers.qk_speed import synthetic
from attnlab.papers.qk_speed.synthetic import (
    LABEL_TOKENS,
    QUERY_TOKENS,
    class_distributions,
    distinct_tokens,
    sample_batch,
    sample_batches,
    seeded_generator,
)


def test_class_distributions_match_the_written_weights():
    probs = class_distributions()
    assert probs.shape == (4, 50)
    for c in range(4):
        expected = torch.zeros(50, dtype=torch.float64)
        expected[:10] = 1 / 15.5  # ten common tokens of weight 1, plus 0.1 + ... + 1.0 = 5.5 distinct
        for i in range(10):
            expected[10 * (c + 1) + i] = (i + 1) / 10 / 15.5
        torch.testing.assert_close(probs[c], expected)
    assert list(distinct_tokens(2)) == list(range(30, 40))
    with pytest.raises(ValueError):
        distinct_tokens(4)


def test_layout_query_label_and_distinct_mask():
    batch = sample_batch(64, seq_len=12, generator=seeded_generator(0))
    assert batch.inputs.shape == (64, 11) and batch.targets.shape == (64,)
    assert batch.inputs.dtype == torch.int64
    for b in range(64):
        c = int(batch.classes[b])
        assert batch.inputs[b, -1] == QUERY_TOKENS[c] == 5 + c
        assert batch.targets[b] == LABEL_TOKENS[c] == 1 + c
        allowed = set(range(10)) | set(distinct_tokens(c))
        assert set(batch.inputs[b, :-1].tolist()) <= allowed
    assert torch.equal(batch.distinct, batch.inputs >= 10)
    assert not batch.distinct[:, -1].any()  # the query token is not distinct
    assert torch.equal(batch.sequences[:, :-1], batch.inputs)
    assert torch.equal(batch.sequences[:, -1], batch.targets)


def test_empirical_token_and_class_frequencies_match_the_specification():
    n, L = 4000, 64
    batch = sample_batch(n, seq_len=L, generator=seeded_generator(1))
    class_counts = torch.bincount(batch.classes, minlength=4).double()
    p = 0.25
    assert ((class_counts / n - p).abs() < 5 * (p * (1 - p) / n) ** 0.5).all()
    probs = class_distributions()
    for c in range(4):
        context = batch.inputs[batch.classes == c, :-1].flatten()
        freq = torch.bincount(context, minlength=50).double() / len(context)
        sigma = (probs[c] * (1 - probs[c]) / len(context)).sqrt()
        assert ((freq - probs[c]).abs() <= 5 * sigma + 1e-12).all(), c


def test_a_seed_fixes_the_batch_and_streams_differ():
    a = sample_batch(16, 20, seeded_generator(7))
    b = sample_batch(16, 20, seeded_generator(7))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    c = sample_batch(16, 20, seeded_generator(8))
    d = sample_batch(16, 20, seeded_generator(7, stream=1))
    assert not torch.equal(a.inputs, c.inputs)
    assert not torch.equal(a.inputs, d.inputs)


def test_fixed_classes_and_bad_arguments():
    batch = sample_batch(4, 6, seeded_generator(0), classes=torch.tensor([3, 2, 1, 0]))
    assert batch.targets.tolist() == [4, 3, 2, 1]
    assert batch.inputs[:, -1].tolist() == [8, 7, 6, 5]
    with pytest.raises(ValueError):
        sample_batch(4, 2)
    with pytest.raises(ValueError):
        sample_batch(2, 6, classes=torch.tensor([0, 4]))


def test_the_cell_table_draws_each_token_with_exactly_its_probability():
    table = synthetic._token_table()
    assert table.shape == (4, synthetic.CELLS + 1)
    for c in range(4):
        counts = torch.bincount(table[c, : synthetic.CELLS], minlength=50).double()
        torch.testing.assert_close(counts / synthetic.CELLS, class_distributions()[c], rtol=0, atol=1e-15)
        assert table[c, -1] == QUERY_TOKENS[c]


def test_training_batches_have_the_layout_and_frequencies_of_sample_batch():
    n, B, L = 50, 80, 64
    inputs, targets = sample_batches(n, B, L, seeded_generator(3, 1))
    assert inputs.shape == (n, B, L - 1) and targets.shape == (n, B) and inputs.dtype == torch.int64
    classes = targets.flatten() - 1
    flat = inputs.flatten(0, 1)
    assert torch.equal(flat[:, -1], classes + 5)  # the query token of the class, last
    class_counts = torch.bincount(classes, minlength=4).double()
    p, N = 0.25, len(classes)
    assert ((class_counts / N - p).abs() < 5 * (p * (1 - p) / N) ** 0.5).all()
    probs = class_distributions()
    for c in range(4):
        context = flat[classes == c, :-1].flatten()
        freq = torch.bincount(context, minlength=50).double() / len(context)
        sigma = (probs[c] * (1 - probs[c]) / len(context)).sqrt()
        assert ((freq - probs[c]).abs() <= 5 * sigma + 1e-12).all(), c
        assert (freq[probs[c] == 0] == 0).all()  # never a token of another class


def test_training_batches_are_fixed_by_the_seed_and_differ_between_epochs_and_streams():
    g = seeded_generator(7, 1)
    first, second = sample_batches(3, 16, 20, g), sample_batches(3, 16, 20, g)
    again = sample_batches(3, 16, 20, seeded_generator(7, 1))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], second[0])
    assert not torch.equal(first[0], sample_batches(3, 16, 20, seeded_generator(7, 2))[0])
    with pytest.raises(ValueError):
        sample_batches(1, 4, 2)
