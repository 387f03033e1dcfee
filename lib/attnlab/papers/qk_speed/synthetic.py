"""The class-conditional synthetic task of "Faster query-key learning sharpens attention" (arXiv 2608.06776).

The paper's task (``docs/papers/qk-speed.md``, "Setup"), details read from the authors' Fig. 2 notebooks:

- vocabulary of 50 tokens; 4 classes c = 0..3;
- tokens 0-9 are *common*: weight 1 in every class;
- class c owns the *distinct* tokens 10(c+1) ... 10(c+1)+9 with weights 0.1, 0.2, ..., 1.0; the weights are
  normalised to a distribution over the 50 tokens (total weight 15.5: a common token has probability 1/15.5,
  the distinct token 10(c+1)+i has (i+1)/155), tokens of the other classes have probability 0;
- a sequence of length L is L-2 i.i.d. context tokens from its class's distribution, then the class's *query*
  token 5 + c, then its *label* token 1 + c; the model sees ``sequence[:-1]`` and predicts the last token.

Assumptions (docs/papers/qk-speed.md, "Inferred choices"; they follow the authors' ``generate_data`` /
``sample_sequence``):

- class c pairs query token ``QUERY_TOKENS[c] = 5 + c`` with label ``LABEL_TOKENS[c] = 1 + c`` and distinct
  tokens 10(c+1)...; classes are drawn i.i.d. and uniformly per sequence (not balanced within a batch);
- the query and label tokens are themselves common tokens (5-8 and 1-4 also occur in every class's context),
  so attention mass on the query position counts as mass on common tokens; the "distinct" mask is
  ``input >= 10``, as in the authors' ``indices = inputs > 9``.

Note that the query token alone identifies the class; the model can only use it through attention (only the
last position queries, and the readout is the attention-weighted sum of the one-hot inputs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

VOCAB_SIZE = 50
N_CLASSES = 4
N_COMMON = 10  # tokens 0 .. 9
GROUP = 10  # distinct tokens per class
QUERY_TOKENS = (5, 6, 7, 8)  # class c -> query token 5 + c
LABEL_TOKENS = (1, 2, 3, 4)  # class c -> label (target) token 1 + c


def distinct_tokens(c: int) -> range:
    """The distinct tokens of class ``c``: 10(c+1) ... 10(c+1)+9."""
    if not 0 <= c < N_CLASSES:
        raise ValueError(f"class must be in 0..{N_CLASSES - 1}, got {c}")
    return range(GROUP * (c + 1), GROUP * (c + 2))


def class_distributions() -> torch.Tensor:
    """The context-token distribution of each class: (4, 50) float64, rows summing to 1."""
    weights = torch.zeros(N_CLASSES, VOCAB_SIZE, dtype=torch.float64)
    weights[:, :N_COMMON] = 1.0
    for c in range(N_CLASSES):
        tokens = distinct_tokens(c)
        weights[c, tokens.start : tokens.stop] = torch.arange(1, GROUP + 1, dtype=torch.float64) / 10
    return weights / weights.sum(-1, keepdim=True)


_DISTRIBUTIONS = class_distributions()  # read-only: the samplers index it (a copy) instead of rebuilding it


@dataclass(frozen=True)
class SyntheticBatch:
    """One batch of the synthetic task. B sequences of length L; the model sees T = L - 1 tokens.

    ``inputs`` (B, T) int64 token ids (context, then the query token); ``targets`` (B,) the label token;
    ``classes`` (B,) the class 0..3; ``distinct`` (B, T) bool, True where the input is a distinct token
    (>= 10).
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    classes: torch.Tensor
    distinct: torch.Tensor

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def sequences(self) -> torch.Tensor:
        """The full sequences (B, L): inputs followed by the target."""
        return torch.cat([self.inputs, self.targets[:, None]], dim=1)


def sample_batch(
    batch_size: int,
    seq_len: int = 64,
    generator: torch.Generator | None = None,
    classes: torch.Tensor | None = None,
) -> SyntheticBatch:
    """Sample ``batch_size`` sequences of length ``seq_len`` (L, including the label token).

    Everything random comes from ``generator`` (a CPU ``torch.Generator``): a seed fixes the batch exactly.
    ``classes`` (B,) fixes the class of each sequence instead of drawing it uniformly.
    """
    if seq_len < 3:
        raise ValueError(f"seq_len must be >= 3 (context, query, label), got {seq_len}")
    if classes is None:
        classes = torch.randint(N_CLASSES, (batch_size,), generator=generator)
    else:
        classes = torch.as_tensor(classes, dtype=torch.long)
        if classes.shape != (batch_size,) or classes.min() < 0 or classes.max() >= N_CLASSES:
            raise ValueError(f"classes must be {batch_size} values in 0..{N_CLASSES - 1}")
    probs = _DISTRIBUTIONS[classes]  # (B, V)
    context = torch.multinomial(probs, seq_len - 2, replacement=True, generator=generator)  # (B, L-2)
    query = torch.tensor(QUERY_TOKENS)[classes]
    inputs = torch.cat([context, query[:, None]], dim=1)  # (B, T)
    return SyntheticBatch(
        inputs=inputs,
        targets=torch.tensor(LABEL_TOKENS)[classes],
        classes=classes,
        distinct=inputs >= N_COMMON,
    )


CELLS = 155  # the class weights in tenths: 10 common tokens x 10 + (1 + ... + 10) distinct


def _token_table() -> torch.Tensor:
    """(4, 156) token ids: every class's context distribution as 155 equally likely cells (a common token
    fills 10 cells, distinct token i of the class i + 1: its weight in tenths), so a uniform cell draws a
    token with exactly its ``class_distributions`` probability; cell 155 is the class's query token."""
    cells = (_DISTRIBUTIONS * CELLS).round()  # (4, V) cells per token
    if (cells / CELLS - _DISTRIBUTIONS).abs().max() > 1e-12:
        raise AssertionError(f"the class distributions are not multiples of 1/{CELLS}")
    context = [torch.arange(VOCAB_SIZE).repeat_interleave(row.long()) for row in cells]
    return torch.stack(
        [torch.cat([row, torch.tensor([q])]) for row, q in zip(context, QUERY_TOKENS, strict=True)]
    )


_TABLE = _token_table()


def sample_batches(
    n: int, batch_size: int, seq_len: int = 64, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` training batches of ``sample_batch``'s task in one vectorised draw (the circuits' training
    stream, ``train_circuit`` and ``batched.train_circuits``, one call per epoch): inputs (n, B, T) and
    targets (n, B).

    The same distribution as ``sample_batch`` (classes i.i.d. uniform, context tokens i.i.d. from the
    class's distribution, then the query token; target the label token), another random stream: the
    classes of all n x B sequences, then a uniform cell of the class's 155 (``_token_table``) for each of
    the T positions, the last one replaced by the query's cell. Exact, and several times faster than
    ``torch.multinomial``."""
    if seq_len < 3:
        raise ValueError(f"seq_len must be >= 3 (context, query, label), got {seq_len}")
    classes = torch.randint(N_CLASSES, (n, batch_size, 1), generator=generator)
    cells = torch.randint(CELLS, (n, batch_size, seq_len - 1), generator=generator)
    cells[..., -1] = CELLS  # the query token
    inputs = torch.take(_TABLE, cells + (CELLS + 1) * classes)  # (n, B, T)
    return inputs, classes.squeeze(-1) + LABEL_TOKENS[0]  # the label token 1 + c


def sample_balanced_batch(
    per_class: int, seq_len: int = 64, generator: torch.Generator | None = None
) -> SyntheticBatch:
    """The authors' Fig. 3 batches (``Fig-3_Fixed-Self-Attention-Experiments_*.ipynb``, cell 1,
    ``generate_data``): ``per_class`` sequences of every class (4 x ``per_class`` in all, shuffled), each
    L - 2 context tokens followed by the class's *label* token and then its *query* token; the model sees all
    but the last token, so its input ends with the label token and its target is the query token 5 + c."""
    if seq_len < 3:
        raise ValueError(f"seq_len must be >= 3 (context, label, query), got {seq_len}")
    classes = torch.arange(N_CLASSES).repeat_interleave(per_class)
    classes = classes[torch.randperm(len(classes), generator=generator)]
    probs = _DISTRIBUTIONS[classes]  # (B, V)
    context = torch.multinomial(probs, seq_len - 2, replacement=True, generator=generator)  # (B, L-2)
    label = torch.tensor(LABEL_TOKENS)[classes]
    inputs = torch.cat([context, label[:, None]], dim=1)  # (B, T): context, then the label token
    return SyntheticBatch(
        inputs=inputs,
        targets=torch.tensor(QUERY_TOKENS)[classes],
        classes=classes,
        distinct=inputs >= N_COMMON,
    )


def seeded_generator(seed: int, stream: int = 0) -> torch.Generator:
    """A CPU generator for (seed, stream): independent streams (model init, training data, evaluation data)
    from one seed, via ``numpy.random.SeedSequence``."""
    state = np.random.SeedSequence([seed, stream]).generate_state(2, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state) >> 1)
