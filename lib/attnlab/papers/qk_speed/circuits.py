"""Single-layer attention circuits of "Faster query-key learning sharpens attention" (arXiv 2608.06776).

A layer is two interacting linear circuits (``docs/papers/qk-speed.md``, "Setup"):
the query-key (QK) circuit decides where the last position attends, the output-value (OV) circuit maps what it
reads to logits. With one-hot inputs x_1 .. x_T (vocabulary V = 50), only the last position T querying and
d = V:

    s_j = x_T^T W_QK x_j / sqrt(d),   a = softmax(s) over all positions j = 1 .. T (T included),
    logits = W_OV sum_j a_j x_j.

Factorised circuits write W_QK = W_Q^T W_K (so s_j = (W_Q x_T) . (W_K x_j) / sqrt(d)) and W_OV = W_O W_V;
the collapsed ones learn W_QK and W_OV directly. ``Circuit`` is CACO (both collapsed); FACO overrides the QK
circuit, CAFO the OV circuit, and FAFO inherits both overrides. No matrix has a bias.

Initialisation: factorised matrices start at 1e-6 * I (``docs/papers/qk-speed.md``, "Setup"). What was read of
the paper is silent on the collapsed ones; we follow the authors' Fig. 2 notebooks (``Net_p4`` / ``Net_CACO``,
whose 1e-6 * I lines are commented out): PyTorch's default ``nn.Linear`` initialisation,
U(-1/sqrt(V), 1/sqrt(V)). Both are options (``factorised_init`` / ``collapsed_init``: ``"identity"`` =
``init_scale`` * I, ``"default"`` = nn.Linear's). ``qk_init`` overrides both for the QK circuit's matrices:
the authors' row-1 FAFO (``Fig-2-Heatmaps.ipynb``, cell 2, ``Net_p1``) comments out the 1e-6 * I lines of
W_Q and W_K only, so its QK circuit starts at nn.Linear's default while W_V and W_O start at 1e-6 * I; their
faster-QK FAFO runs (``Fig-2_CACO_FAFO Experiments.ipynb``, cell 1) start all four at 1e-6 * I; their row-1
CAFO (``Net_p3``, cell 52) starts W_QK, W_V and W_O at 1e-6 * I (``qk_init="identity"``).

Also here: ``train_circuit`` (SGD with separate QK / OV learning rates and linear ramps, the Fig. 2 runs) and
the fixed-attention experiment of Fig. 3 (``train_fixed_attention``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.errors import TrainingDiverged
from attnlab.metrics import attention_mass
from attnlab.papers.qk_speed.synthetic import (
    N_CLASSES,
    N_COMMON,
    VOCAB_SIZE,
    SyntheticBatch,
    sample_balanced_batch,
    sample_batch,
    sample_batches,
    seeded_generator,
)
from attnlab.training.loop import CONSTANT, Schedule, backward, optimise
from attnlab.training.optim import sgd

INIT_KINDS = ("identity", "default")


class CircuitOutput(NamedTuple):
    logits: torch.Tensor  # (B, V) at the query (last) position
    attn: torch.Tensor  # (B, T) the query position's attention weights, from the same pass


class Circuit(nn.Module):
    """CACO: collapsed attention (one W_QK, the query is the raw x_T), collapsed output-value (one W_OV).

    Subclasses override only what differs: ``_init_qk`` / ``scores`` / ``effective_qk`` for a factorised QK
    circuit, ``_init_ov`` / ``readout`` / ``effective_ov`` for a factorised OV circuit.
    """

    kind = "caco"
    QK_NAMES: tuple[str, ...] = ("W_Q", "W_K", "W_QK")
    OV_NAMES: tuple[str, ...] = ("W_V", "W_O", "W_OV")

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        *,
        init_scale: float = 1e-6,
        factorised_init: str = "identity",
        collapsed_init: str = "default",
        qk_init: str | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        inits = (("factorised_init", factorised_init), ("collapsed_init", collapsed_init))
        for name, value in (*inits, ("qk_init", qk_init or "identity")):
            if value not in INIT_KINDS:
                raise ValueError(f"{name} must be one of {INIT_KINDS}, got {value!r}")
        self.vocab_size = vocab_size
        self.init_scale = init_scale
        self.factorised_init = factorised_init
        self.collapsed_init = collapsed_init
        self.qk_init = qk_init  # the QK circuit's matrices; None: factorised_init / collapsed_init by form
        self._init_qk(generator)
        self._init_ov(generator)

    # --- initialisation ------------------------------------------------------------------------------------
    def _matrix(self, init: str, generator: torch.Generator | None) -> nn.Parameter:
        V = self.vocab_size
        if init == "identity":
            return nn.Parameter(self.init_scale * torch.eye(V))
        w = torch.empty(V, V)
        nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=generator)  # nn.Linear's: U(+-1/sqrt(V))
        return nn.Parameter(w)

    def _factorised(self, generator: torch.Generator | None) -> nn.Parameter:
        return self._matrix(self.factorised_init, generator)

    def _collapsed(self, generator: torch.Generator | None) -> nn.Parameter:
        return self._matrix(self.collapsed_init, generator)

    def _init_qk(self, generator: torch.Generator | None) -> None:
        self.W_QK = self._matrix(self.qk_init or self.collapsed_init, generator)

    def _init_ov(self, generator: torch.Generator | None) -> None:
        self.W_OV = self._collapsed(generator)

    # --- the two circuits ----------------------------------------------------------------------------------
    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """Scores of the last position, s_j = x_T^T W_QK x_j / sqrt(d): (B, T) from one-hot x (B, T, V)."""
        q = x[:, -1] @ self.W_QK  # (B, V): q_k = sum_i x_T,i W_QK[i, k]
        return (x @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(self.vocab_size)

    def readout(self, context: torch.Tensor) -> torch.Tensor:
        """Logits W_OV c from the attended input c = sum_j a_j x_j: (B, V) -> (B, V)."""
        return context @ self.W_OV.T

    def effective_qk(self) -> torch.Tensor:
        """The collapsed W_QK this circuit computes, (V, V)."""
        return self.W_QK

    def effective_ov(self) -> torch.Tensor:
        """The collapsed W_OV this circuit computes, (V, V)."""
        return self.W_OV

    # --- forward and parameter groups ----------------------------------------------------------------------
    def one_hot(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, V) one-hot in the parameters' dtype; float (B, T, V) passes as is."""
        if tokens.is_floating_point():
            return tokens
        return F.one_hot(tokens, self.vocab_size).to(self.effective_dtype)

    @property
    def effective_dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def attend(self, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Attention of the last position, a = softmax(s) over the positions where ``keep`` (B, T) is True
        (all by default; the query still comes from x_T when T itself is not kept): (B, T)."""
        s = self.scores(x)  # (B, T)
        if keep is not None:
            s = s.masked_fill(~keep, float("-inf"))
        return s.softmax(-1)

    def forward(self, tokens: torch.Tensor, keep: torch.Tensor | None = None) -> CircuitOutput:
        """Token ids (B, T) (or one-hot (B, T, V)) -> logits (B, V) of the last position and its attention
        weights (B, T). ``keep`` (B, T) bool removes positions from the softmax (faithfulness metrics)."""
        x = self.one_hot(tokens)  # (B, T, V)
        a = self.attend(x, keep)  # (B, T)
        context = (a.unsqueeze(1) @ x).squeeze(1)  # (B, V): sum_j a_j x_j
        return CircuitOutput(self.readout(context), a)

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """The parameters of each circuit: ``{"qk": [...], "ov": [...]}`` (learning-rate groups)."""
        groups: dict[str, list[nn.Parameter]] = {"qk": [], "ov": []}
        for name, p in self.named_parameters():
            if name in self.QK_NAMES:
                groups["qk"].append(p)
            elif name in self.OV_NAMES:
                groups["ov"].append(p)
            else:
                raise RuntimeError(f"parameter {name} belongs to neither circuit")
        return groups


class CACO(Circuit):
    """Collapsed attention and output-value: s_j = x_T^T W_QK x_j / sqrt(d), logits = W_OV sum_j a_j x_j."""

    kind = "caco"


class FACO(Circuit):
    """Factorised attention (W_Q, W_K), collapsed output-value (the values are the raw x_j; one W_OV)."""

    kind = "faco"

    def _init_qk(self, generator: torch.Generator | None) -> None:
        init = self.qk_init or self.factorised_init
        self.W_Q = self._matrix(init, generator)
        self.W_K = self._matrix(init, generator)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """s_j = (W_Q x_T) . (W_K x_j) / sqrt(d): (B, T)."""
        q = x[:, -1] @ self.W_Q.T  # (B, d)
        k = x @ self.W_K.T  # (B, T, d)
        return (k @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(self.vocab_size)

    def effective_qk(self) -> torch.Tensor:
        return self.W_Q.T @ self.W_K


class CAFO(Circuit):
    """Collapsed attention (one W_QK), factorised output-value: logits = W_O sum_j a_j W_V x_j."""

    kind = "cafo"

    def _init_ov(self, generator: torch.Generator | None) -> None:
        self.W_V = self._factorised(generator)
        self.W_O = self._factorised(generator)

    def readout(self, context: torch.Tensor) -> torch.Tensor:
        """W_O W_V c (= W_O sum_j a_j W_V x_j): (B, V)."""
        return (context @ self.W_V.T) @ self.W_O.T

    def effective_ov(self) -> torch.Tensor:
        return self.W_O @ self.W_V


class FAFO(FACO, CAFO):
    """Factorised attention and output-value: W_Q, W_K, W_V, W_O (FACO's QK circuit, CAFO's OV circuit)."""

    kind = "fafo"


CIRCUITS: dict[str, type[Circuit]] = {cls.kind: cls for cls in (FAFO, FACO, CAFO, CACO)}


def make_circuit(kind: str, *, seed: int | None = None, **kwargs) -> Circuit:
    """Build a circuit by name (fafo, faco, cafo, caco); ``seed`` fixes any random initialisation
    (stream 0 of ``seeded_generator``), other keywords go to ``Circuit``."""
    if kind not in CIRCUITS:
        raise ValueError(f"unknown circuit {kind!r}; choose from {sorted(CIRCUITS)}")
    if seed is not None:
        kwargs.setdefault("generator", seeded_generator(seed, 0))
    return CIRCUITS[kind](**kwargs)


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` intra-op threads, then restore the setting (``None``: leave it alone).

    The circuits' tensors are tiny (32 x 63 x 50): extra threads only add synchronisation, and on a loaded
    2-core machine they slow a training step down by two orders of magnitude. One thread also makes a run's
    numbers independent of the machine's core count.
    """
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# --- training (Fig. 2) ------------------------------------------------------------------------------------


@dataclass
class CircuitTrainResult:
    model: Circuit
    history: dict[
        str, list[float]
    ]  # per epoch: epoch, train_loss (mean over the epoch), lr_qk, lr_ov (last step)
    steps: int
    stopped_early: bool  # the epoch's mean training loss reached loss_stop

    @property
    def final_loss(self) -> float:
        return self.history["train_loss"][-1]


def ramp(total: int, start: float, end: float) -> Schedule:
    """Linear learning-rate multiplier: ``start`` at step 0, ``end`` at step ``total`` (the authors' LambdaLR
    ``1 + (40 - 1) * step / total_steps``, with total = the planned max_epochs x batches_per_epoch)."""
    return Schedule(total=total, peak=start, end=end, shape="linear")


def train_circuit(
    model: Circuit | str,
    *,
    lr_qk: float = 1e-2,
    lr_ov: float = 1e-2,
    qk_ramp: tuple[float, float] = (1.0, 1.0),
    ov_ramp: tuple[float, float] = (1.0, 1.0),
    batch_size: int = 32,
    seq_len: int = 64,
    batches_per_epoch: int = 250,
    max_epochs: int = 2500,
    loss_stop: float | None = 1e-3,
    seed: int = 1234,
    on_epoch: Callable[[int, Circuit], None] | None = None,
    threads: int | None = 1,
) -> CircuitTrainResult:
    """Train a circuit on the synthetic task with plain SGD (no momentum, no weight decay; paper, Fig. 2).

    The QK parameters learn at eta_QK = ``lr_qk`` x ``ramp(.., *qk_ramp)(step)``, the OV ones at eta_OV =
    ``lr_ov`` x ``ramp(.., *ov_ramp)(step)`` (e.g. ``qk_ramp=(1, 40)``: the QK learning rate grows linearly x1
    -> x40 over the planned ``max_epochs`` x ``batches_per_epoch`` steps). The loss is the cross-entropy of
    the last position's logits (over all V tokens) against the label token. Training stops after the first
    epoch whose mean training loss is <= ``loss_stop`` (paper: 1e-3; ``None`` never stops early), or after
    ``max_epochs``.

    A kind name builds the model with ``make_circuit(kind, seed=seed)``; batches come from stream 1 of
    ``seeded_generator(seed)``, an epoch's in one draw (``sample_batches``), so a run is repeatable bit for
    bit on CPU; it trains with ``threads`` intra-op threads (see ``torch_threads``; 1 by default).
    ``on_epoch(epoch, model)`` is called after each epoch.
    """
    if isinstance(model, str):
        model = make_circuit(model, seed=seed)
    opt = sgd(model.parameter_groups(), lr_ov)  # groups "qk", then "ov"
    for group in opt.param_groups:
        group["base_lr"] = {"qk": lr_qk, "ov": lr_ov}[group["name"]]
    total = max_epochs * batches_per_epoch
    schedule = {"qk": ramp(total, *qk_ramp), "ov": ramp(total, *ov_ramp)}
    data = seeded_generator(seed, 1)
    history: dict[str, list[float]] = {k: [] for k in ("epoch", "train_loss", "lr_qk", "lr_ov")}
    batches: list[torch.Tensor] = []  # the epoch's inputs (steps, B, T) and targets (steps, B)
    running, stopped = [0.0], [False]

    def loss(step: int) -> torch.Tensor:
        t = step % batches_per_epoch
        if t == 0:
            batches[:] = sample_batches(batches_per_epoch, batch_size, seq_len, data)  # one draw per epoch
        logits, _ = model(batches[0][t])
        return F.cross_entropy(logits, batches[1][t])

    def record(done: int, value: float) -> bool:
        running[0] += value
        if done % batches_per_epoch:
            return False
        epoch, mean = done // batches_per_epoch, running[0] / batches_per_epoch
        running[0] = 0.0
        if not math.isfinite(mean):
            raise TrainingDiverged(f"{model.kind}: training loss {mean} at epoch {epoch - 1}")
        history["epoch"].append(epoch)
        history["train_loss"].append(mean)
        history["lr_qk"].append(opt.param_groups[0]["lr"])
        history["lr_ov"].append(opt.param_groups[1]["lr"])
        if on_epoch is not None:
            on_epoch(epoch, model)
        stopped[0] = loss_stop is not None and mean <= loss_stop
        return stopped[0]

    with torch_threads(threads):
        model.train()
        steps = optimise(model, opt, total, backward(loss), schedule, record=record, label=model.kind)
    return CircuitTrainResult(model=model, history=history, steps=steps, stopped_early=stopped[0])


def query_token_positions(inputs: torch.Tensor) -> torch.Tensor:
    """(B, T) bool: the positions that hold the query token x_T (the last input and its repeats in the
    context). A circuit's score depends on the token alone, so it cannot tell these positions apart; the query
    token alone identifies the class, so attention on it is a shortcut past the distinct tokens (Fig. 2)."""
    return inputs == inputs[:, -1:]


@torch.no_grad()
def evaluate_circuit(model: nn.Module, batch: SyntheticBatch, **forward_kwargs) -> dict[str, np.ndarray]:
    """Per-example statistics of one pass over ``batch``: ``distinct_mass`` (attention mass of the query on
    the distinct tokens, the DTAP x), ``query_mass`` (on the query token, ``query_token_positions``),
    ``true_prob`` (probability of the label token, the DTAP y), ``correct`` (argmax = label) and ``loss``
    (cross-entropy); numpy arrays of length B."""
    was_training = model.training
    model.eval()
    logits, attn = model(batch.inputs, **forward_kwargs)
    model.train(was_training)
    probs = logits.float().softmax(-1)
    return {
        "distinct_mass": attention_mass(attn, batch.distinct).double().numpy(),
        "query_mass": attention_mass(attn, query_token_positions(batch.inputs)).double().numpy(),
        "true_prob": probs.gather(-1, batch.targets[:, None]).squeeze(-1).double().numpy(),
        "correct": (logits.argmax(-1) == batch.targets).numpy(),
        "loss": F.cross_entropy(logits.float(), batch.targets, reduction="none").double().numpy(),
    }


@torch.no_grad()
def attention_shift(model: Circuit, start: Circuit, batch: SyntheticBatch) -> np.ndarray:
    """How far the trained ``model``'s attention has moved from that of the same circuit at its
    initialisation (``start``) on each sequence of ``batch``: the total variation distance
    1/2 sum_j |a_j - a0_j| (B,), the share of the attention mass that moved. Only the QK circuit sets the
    attention, so near 0 means the QK circuit has not left its initialisation (e.g. from 1e-6 I, where its
    gradient starts at ~1e-6 of its size: the ratio sweep's slow runs)."""
    was_training = model.training
    model.eval()
    attn = model(batch.inputs).attn
    model.train(was_training)
    return (0.5 * (attn - start(batch.inputs).attn).abs().sum(-1)).double().numpy()


# --- fixed attention (Fig. 3) -----------------------------------------------------------------------------


def fixed_attention(distinct: torch.Tensor, alpha: float) -> torch.Tensor:
    """Fig. 3's fixed attention pattern (B, T) from the distinct-token mask (B, T): mass ``alpha`` spread
    uniformly over the distinct positions and 1 - alpha uniformly over the others (common tokens and the query
    position), as in the authors' ``Net_p1_fixed_attn``. A row without distinct tokens (probability ~1e-12 at
    L = 64) puts all its mass on the others, so every row sums to 1."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    d = distinct.to(torch.float64)
    n_distinct = d.sum(-1, keepdim=True)  # (B, 1)
    n_other = (1 - d).sum(-1, keepdim=True)
    a_distinct = torch.where(n_distinct > 0, alpha / n_distinct.clamp_min(1), 0.0)
    a_other = torch.where(n_distinct > 0, 1 - alpha, 1.0) / n_other.clamp_min(1)
    a_other = torch.where(n_other > 0, a_other, 0.0)
    a_distinct = torch.where(n_other > 0, a_distinct, 1.0 / n_distinct.clamp_min(1))
    return torch.where(distinct, a_distinct, a_other).float()


class _FixedAttention(Circuit):
    """No QK circuit; attention is ``fixed_attention(distinct, alpha)``, only the OV circuit learns."""

    def _init_qk(self, generator: torch.Generator | None) -> None:
        pass

    def forward(  # type: ignore[override]  # a fixed attention alpha takes the place of the QK circuit's keep
        self, tokens: torch.Tensor, alpha: float, distinct: torch.Tensor | None = None
    ) -> CircuitOutput:
        x = self.one_hot(tokens)  # (B, T, V)
        if distinct is None:
            distinct = tokens >= N_COMMON
        a = fixed_attention(distinct, alpha).to(x.dtype)  # (B, T)
        context = (a.unsqueeze(1) @ x).squeeze(1)  # (B, V)
        return CircuitOutput(self.readout(context), a)


class FixedAttentionCollapsed(_FixedAttention):
    """Fig. 3, collapsed OV: logits = W_OV sum_j a_j x_j with a fixed."""

    kind = "fixed-co"


class FixedAttentionCollapsedBias(FixedAttentionCollapsed):
    """Fig. 3 as the authors' collapsed notebook has it (``nn.Linear(50, 50)`` with its bias): logits =
    W_OV sum_j a_j x_j + b_OV, b_OV drawn as nn.Linear draws a bias, U(-1/sqrt(V), 1/sqrt(V))."""

    kind = "fixed-co-bias"
    OV_NAMES = (*Circuit.OV_NAMES, "b_OV")

    def _init_ov(self, generator: torch.Generator | None) -> None:
        super()._init_ov(generator)
        bound = 1 / math.sqrt(self.vocab_size)
        self.b_OV = nn.Parameter(torch.empty(self.vocab_size).uniform_(-bound, bound, generator=generator))

    def readout(self, context: torch.Tensor) -> torch.Tensor:
        return super().readout(context) + self.b_OV


class FixedAttentionFactorised(_FixedAttention, CAFO):
    """Fig. 3, factorised OV: logits = W_O W_V sum_j a_j x_j with a fixed."""

    kind = "fixed-fo"


@dataclass
class FixedAttentionResult:
    alpha: float
    factorised: bool
    loss: np.ndarray  # (epochs + 1,) held-out loss at alpha: before training, then after each epoch
    train_loss: np.ndarray  # (epochs,) mean training loss of each epoch
    loss_at: dict[float, np.ndarray] = field(default_factory=dict)  # held-out loss with attention alpha'
    model: nn.Module | None = None


def train_fixed_attention(
    alpha: float,
    *,
    factorised: bool = True,
    epochs: int = 500,
    batches_per_epoch: int = 250,
    lr: float = 1e-2,
    batch_size: int = 32,
    seq_len: int = 64,
    seed: int = 1234,
    eval_alphas: Sequence[float] = (),
    eval_size: int = 1024,
    init: str = "default",
    threads: int | None = 1,
    protocol: str = "ours",
) -> FixedAttentionResult:
    """The fixed-attention experiment of Fig. 3: attention frozen at ``alpha`` on the distinct tokens, only
    the OV circuit (W_O W_V if ``factorised``, else W_OV) trained by SGD at ``lr`` (paper: 1e-2, 500 epochs).

    Returns the loss per epoch on a held-out set of ``eval_size`` sequences (stream 2 of
    ``seeded_generator``), evaluated before training and after every epoch, as the authors'
    ``calculate_loss``; ``eval_alphas`` also evaluates the same model with attention alpha' (Fig. 3's finite
    difference uses alpha' = alpha + 0.005). ``init``: the OV weights' initialisation, ``"default"``
    (nn.Linear's, as in the authors' Fig. 3 notebook) or ``"identity"`` (1e-6 * I). ``threads``: as in
    ``train_circuit``.

    ``protocol="authors"`` runs it as the authors' notebooks do: every step a balanced batch of
    ``batch_size`` sequences per class (``sample_balanced_batch``: 4 x ``batch_size``, label token before the
    query token, the query token the target), the collapsed OV with its bias (``FixedAttentionCollapsedBias``)
    and a fresh held-out set (``eval_size`` sequences, balanced) at every evaluation. One fresh set serves
    both alpha and alpha' of an evaluation (the authors draw one per call; at our sizes separate draws would
    bury the finite difference in sampling noise).
    """
    if protocol not in ("ours", "authors"):
        raise ValueError(f"protocol must be 'ours' or 'authors', got {protocol!r}")
    authors = protocol == "authors"
    collapsed = FixedAttentionCollapsedBias if authors else FixedAttentionCollapsed
    cls = FixedAttentionFactorised if factorised else collapsed
    model = cls(factorised_init=init, collapsed_init=init, generator=seeded_generator(seed, 0))
    opt = sgd(model.parameters(), lr)
    data, eval_stream = seeded_generator(seed, 1), seeded_generator(seed, 2)
    per_class = max(1, eval_size // N_CLASSES)

    def draw(stream: torch.Generator, size: int, balanced: bool) -> SyntheticBatch:
        return (
            sample_balanced_batch(size, seq_len, stream) if balanced else sample_batch(size, seq_len, stream)
        )

    held_out = None if authors else sample_batch(eval_size, seq_len, eval_stream)

    @torch.no_grad()
    def held_out_losses(alphas: Sequence[float]) -> list[float]:
        batch = held_out or draw(eval_stream, per_class, balanced=True)  # the authors': fresh every time
        return [
            F.cross_entropy(model(batch.inputs, a, batch.distinct).logits, batch.targets).item()
            for a in alphas
        ]

    with torch_threads(threads):
        alphas = [alpha, *eval_alphas]
        curves: dict[float, list[float]] = {
            a: [v] for a, v in zip(alphas, held_out_losses(alphas), strict=True)
        }
        train_loss: list[float] = []
        running = [0.0]

        def loss(step: int) -> torch.Tensor:
            batch = draw(data, batch_size, balanced=authors)
            logits, _ = model(batch.inputs, alpha, batch.distinct)
            return F.cross_entropy(logits, batch.targets)

        def record(done: int, value: float) -> None:
            running[0] += value
            if done % batches_per_epoch == 0:
                train_loss.append(running[0] / batches_per_epoch)
                running[0] = 0.0
                for a, v in zip(alphas, held_out_losses(alphas), strict=True):
                    curves[a].append(v)

        optimise(
            model, opt, epochs * batches_per_epoch, backward(loss), CONSTANT, record=record, label="fixed"
        )
    return FixedAttentionResult(
        alpha=alpha,
        factorised=factorised,
        loss=np.array(curves[alpha]),
        train_loss=np.array(train_loss),
        loss_at={a: np.array(curves[a]) for a in eval_alphas},
        model=model,
    )
