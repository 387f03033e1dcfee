"""The authors' printed outputs and protocol: numbers and settings read from the saved notebooks of
"Faster query-key learning sharpens attention" (arXiv 2608.06776), GitHub repository
vashishtrahul/Faster-Query-Key-Learning-Sharpens-Attention-in-Self-Attention-Models.

REFERENCE DATA ONLY. Every value here was copied by hand from a notebook's saved output or source, with its
source (notebook path at the commit read, cell index counted from 0 over all cells, markdown included). They
are shown beside this project's results in the notebook's tables ("authors' notebook" columns); they are never
used as our results and no verdict is computed from them.

What the saved notebooks print, and what they do not (recorded here so the tables can say so):

- Fig. 2: the DTAP bin shares exist only as annotations inside the saved heatmap images (PNG), read off them
  by eye into ``DTAP_SHARES`` (row-1 FAFO and FACO, CACO L128 QK x5 and its ramp); the held-out loss and
  accuracy are printed for the same four runs (``HELD_OUT``; row-1 FAFO and FACO ran seed 1234 only, the CACO
  L128 cells print their last seed's). The row-1 CAFO and CACO cells and the faster-QK FAFO cells were not
  executed in the saved notebooks (their settings are read from the source, ``PROTOCOL``).
- Fig. 3: the final losses of the collapsed OV (``FIG3_FINAL``) are printed by its notebook but were not in
  the paper sheet; both notebooks run the authors' protocol (``FIG3_PROTOCOL_SOURCE``).
- Fig. 4: the saved output of the simulation cell holds the end states of r = 0.01 and 0.1 only (the other
  three ratios did not print before the notebook was saved).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

REPO = "vashishtrahul/Faster-Query-Key-Learning-Sharpens-Attention-in-Self-Attention-Models"
# renamed Fig2-Heatmaps/Fig-2-Heatmaps-Row-1.ipynb at ac1e25b, unchanged since
FIG2_ROW1 = ("Fig2-Heatmaps/Fig-2-Heatmaps.ipynb", "86a9e649169afb51a84701fb942129ea32c45bf2")
FIG2_FAST = ("Fig2-Heatmaps/Fig-2_CACO_FAFO Experiments.ipynb", "b8d7a411788c274e5462908ff0eacf46967d5b12")
FIG4 = ("Fig-4 Code/Simulated_Differential_equations.ipynb", "a642848bd7c3c26aa501e5653a5069db693d07b4")
FIG3_FACTORISED = (
    "FIg-3-Code/Fig-3_Fixed-Self-Attention-Experiments_Factorised.ipynb",
    "5c91cca08cf4a10de9cc3ef973e76b956b66c259",
)
FIG3_COLLAPSED = (
    "FIg-3-Code/Fig-3_Fixed-Self-Attention-Experiments_Collapsed.ipynb",
    "838c783be39f2e56ff8be995b26b81141264500c",
)


@dataclass(frozen=True)
class Source:
    """Where a number or setting was read: a notebook of ``REPO`` at ``commit``, cell ``cell`` (0-based)."""

    notebook: str
    commit: str
    cell: int
    what: str  # "printed output" or "source code"

    def __str__(self) -> str:
        return f"{self.notebook} @ {self.commit[:7]}, cell {self.cell} ({self.what})"


@dataclass(frozen=True)
class Fig4EndState:
    """One line the authors' Fig. 4 cell printed: ``eta_QK/eta_OV=r: tau_end=..., mu_OV mid->end, mu_QK
    mid->end, alpha mid->end, loss mid->end`` (``mid``: the state at index len(tau) // 2 of their RK4
    run)."""

    r: float
    tau_end: float
    mu_ov: float
    mu_qk: float
    alpha: float
    loss: float
    source: Source


_FIG4_OUT = Source(*FIG4, cell=0, what="printed output")
FIG4_END_STATES: dict[float, Fig4EndState] = {
    0.01: Fig4EndState(0.01, 2.55e6, 81.669, 0.559, 0.149, 1.000e-4, _FIG4_OUT),
    0.1: Fig4EndState(0.1, 4.9e6, 42.282, 1.395, 0.287, 1.000e-4, _FIG4_OUT),
}


class StopThresholds(TypedDict):
    """The authors' stopping thresholds: ``count`` log-spaced from ``high`` down to ``low``."""

    high: float
    low: float
    count: int
    source: Source


# Fig. 4's stopping-threshold plots: 50 thresholds from 1 down to 1e-4, log-spaced
# (``stop_thresholds = np.logspace(np.log10(L_max), np.log10(L_min), 50)``; the value at a threshold is the
# state at the first step whose loss is <= it, ``stopping_value_vs_threshold``).
STOP_THRESHOLDS = StopThresholds(
    high=1.0, low=1e-4, count=50, source=Source(*FIG4, cell=0, what="source code")
)


@dataclass(frozen=True)
class RunProtocol:
    """How the authors trained one Fig. 2 configuration (source code of the cell named)."""

    label: str
    epochs: int
    batches_per_epoch: int
    lr_qk: str
    lr_ov: float
    early_stop: bool
    init: str
    seeds: tuple[int, ...]
    heatmap_samples: int  # test sequences per seed in the heatmap (``generate_heatmap``: 200 batches of 32)
    source: Source
    executed: bool = True  # the saved notebook holds the cell's output (False: the settings are its source)


_SEEDS = (1234, 1235, 1236, 1237, 1238)
_ROW1_FAFO = Source(*FIG2_ROW1, cell=5, what="source code (n_seeds = [1234]); Net_p1 in cell 2")
_ROW1_FACO = Source(*FIG2_ROW1, cell=26, what="source code (n_seeds = [1234]); Net_p2 in cell 2")
PROTOCOL: dict[str, RunProtocol] = {
    "FAFO": RunProtocol(
        "FAFO (row 1)", 2500, 250, "1e-2", 1e-2, True, "W_Q, W_K: nn.Linear default; W_V, W_O: 1e-6 I",
        (1234,), 6400, _ROW1_FAFO,
    ),
    "FACO": RunProtocol(
        "FACO (row 1)", 2500, 250, "1e-2", 1e-2, True, "W_Q, W_K, W_OV: 1e-6 I", (1234,), 6400, _ROW1_FACO
    ),
    "CAFO": RunProtocol(
        "CAFO (row 1)", 5000, 200, "1e-2", 1e-2, True, "W_QK, W_V, W_O: 1e-6 I (Net_p3)", _SEEDS, 6400,
        Source(*FIG2_ROW1, cell=53, what="source code; Net_p3 in cell 52"), executed=False,
    ),
    "CACO": RunProtocol(
        "CACO (row 1)", 2500, 200, "1e-2", 1e-2, True, "W_QK, W_OV: nn.Linear default (Net_p4)",
        (1234, 1235, 1236), 6400, Source(*FIG2_ROW1, cell=65, what="source code; Net_p4 in cell 64"),
        executed=False,
    ),
    "FAFO QK x20": RunProtocol(
        "FAFO QK x20", 1000, 100, "0.2", 1e-2, True, "all four 1e-6 I", _SEEDS, 6400,
        Source(*FIG2_FAST, cell=3, what="source code; Net_p1 (all four at 1e-6 I) in cell 1"), executed=False,
    ),
    "FAFO QK ramp x1-x40": RunProtocol(
        "FAFO QK ramp x1-x40", 2000, 100, "1e-2 x (1 + 39 step / total)", 1e-2, False, "all four 1e-6 I",
        _SEEDS, 6400, Source(*FIG2_FAST, cell=14, what="source code; the early stop is commented out"),
        executed=False,
    ),
    "CACO L128 QK x5": RunProtocol(
        "CACO L128 QK x5", 2000, 100, "5e-2", 1e-2, False, "nn.Linear default (Net_CACO)", _SEEDS, 6400,
        Source(*FIG2_FAST, cell=21, what="source code: seq_len 128, LRs 0.05 / 0.01, no early-stop check"),
    ),
    "CACO L128 QK ramp x1-x10": RunProtocol(
        "CACO L128 QK ramp x1-x10", 2000, 100, "1e-2 x (1 + 9 step / total)", 1e-2, False,
        "nn.Linear default (Net_CACO)", _SEEDS, 6400,
        Source(*FIG2_FAST, cell=28, what="source code: seq_len 128, no early-stop check"),
    ),
}  # fmt: skip
# Their notebooks have no CACO L128 run at x1 (this project's baseline of the two CACO L128 runs).


@dataclass(frozen=True)
class HeldOut:
    """What an evaluation cell printed after a Fig. 2 run: ``loss:...`` and ``accuracy:...`` on 500 fresh
    batches of 32 sequences of the model of the last seed it trained."""

    loss: float
    accuracy: float
    seed: int
    samples: int
    source: Source


HELD_OUT: dict[str, HeldOut] = {
    "FAFO": HeldOut(0.001, 1.000, 1234, 16000, Source(*FIG2_ROW1, cell=6, what="printed output")),
    "FACO": HeldOut(0.001, 1.000, 1234, 16000, Source(*FIG2_ROW1, cell=28, what="printed output")),
    "CACO L128 QK x5": HeldOut(0.006, 1.000, 1238, 16000, Source(*FIG2_FAST, cell=22, what="printed output")),
    "CACO L128 QK ramp x1-x10": HeldOut(
        0.007, 1.000, 1238, 16000, Source(*FIG2_FAST, cell=29, what="printed output")
    ),
}


@dataclass(frozen=True)
class DtapShares:
    """A saved DTAP heatmap image of the authors' (% of test sequences, as annotated, one decimal): the shares
    of the five attention-mass bins [0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, 1] in the top true-label
    probability bin [0.8, 1]; every other cell of the image reads 0.0. ``seeds``: the runs averaged
    (``mean_hist`` over seeds, 6400 sequences each)."""

    top_row: tuple[float, float, float, float, float]
    seeds: tuple[int, ...]
    source: Source


DTAP_SHARES: dict[str, DtapShares] = {
    "FAFO": DtapShares((0.1, 64.1, 35.7, 0.0, 0.0), (1234,), Source(*FIG2_ROW1, cell=8, what="saved image")),
    "FACO": DtapShares((0.0, 0.0, 0.0, 5.4, 94.6), (1234,), Source(*FIG2_ROW1, cell=32, what="saved image")),
    "CACO L128 QK x5": DtapShares(
        (0.0, 0.0, 2.3, 76.8, 20.8), _SEEDS, Source(*FIG2_FAST, cell=24, what="saved image")
    ),
    "CACO L128 QK ramp x1-x10": DtapShares(
        (0.0, 0.0, 2.6, 86.9, 10.5), _SEEDS, Source(*FIG2_FAST, cell=31, what="saved image")
    ),
}
# Also saved, not recorded: the same heatmaps on 16 000 fresh sequences of the final model (row-1 FAFO, cell
# 17: 0.1, 63.6, 36.3, 0, 0; FACO, cell 38: 0, 0, 0, 5.6, 94.4) and the std images (cells 9 and 33).


def fig2_column(labels) -> dict[str, str]:
    """The "authors' notebook" column of the Fig. 2 summary: the held-out loss and accuracy their notebooks
    printed for a run (``HELD_OUT``; "not printed" where the cell was not executed or the run is ours)."""
    out = {}
    for label in labels:
        h = HELD_OUT.get(label)
        out[label] = (
            f"accuracy {h.accuracy:.3f}, loss {h.loss:.3f} (seed {h.seed})"
            if h is not None
            else "not printed"
        )
    return out


# Fig. 3: the final held-out loss the authors' training cell printed for each alpha (cell 3; seed 1234, SGD
# 1e-2, 500 epochs of 250 balanced batches of 4 x 32, held-out loss over 1000 fresh batches).
FIG3_FINAL: dict[str, dict[float, float]] = {
    "factorised": {0.2: 0.003792358746053651, 0.4: 0.0014788819566601888, 0.6: 0.0008922941937926225,
                   0.8: 0.0006328461089869961, 1.0: 0.00048612764789140783},
    "collapsed": {0.2: 0.5980280479192733, 0.4: 0.15817544285953045, 0.6: 0.06447206139937044,
                  0.8: 0.03459405774623155, 1.0: 0.02155211404338479},
}  # fmt: skip
FIG3_SOURCES = {
    "factorised": Source(*FIG3_FACTORISED, cell=3, what="printed output"),
    "collapsed": Source(*FIG3_COLLAPSED, cell=3, what="printed output"),
}
# Fig. 3 protocol (cells 1-3 of both notebooks, source code): ``generate_data`` draws 32 sequences of every
# class per batch (128, shuffled), context then the label token then the query token, so the model sees the
# label token last and predicts the query token; ``calculate_loss`` draws 1000 fresh batches at every call;
# factorised OV = two ``nn.Linear(50, 50, bias=False)`` at their default init, collapsed OV = one
# ``nn.Linear(50, 50)`` with its bias.
FIG3_PROTOCOL_SOURCE = Source(*FIG3_COLLAPSED, cell=1, what="source code")


def fig4_column(rs) -> dict[float, str]:
    """The "authors' notebook" column of the Fig. 4 end-state table: ``alpha, mu_OV, mu_QK`` at the end of
    their run for each r they printed, "not printed" otherwise."""
    out = {}
    for r in rs:
        e = FIG4_END_STATES.get(float(r))
        out[r] = f"alpha {e.alpha:.3f}, mu_OV {e.mu_ov:.3f}, mu_QK {e.mu_qk:.3f}" if e else "not printed"
    return out


# SVA (``SVA-Dataset/*_SVA_Train+heatmap+Eval.ipynb``). Both notebooks build the same data (cells with
# execution_count 18-37: agr_50_mostcommon_10K.tsv, 1 577 211 sentences, 10 % train / 90 % test, BERT word
# pieces, label verb_pos VBZ / VBP, subject and verb marked) and the same attention-only model
# (execution_count 11-16: ``TransformerBlock`` returns the attention output alone; residual and MLP commented
# out). Their training cell (cell 49, execution_count 43, after the "# Training Loop" heading) trains seeds
# 1234-1238: SGD momentum 0.99, LR 5e-4, weight decay 1e-5,
# 15 epochs of 4929 batches of 32, cosine schedule with 10 % warm-up; the "Faster" notebook puts the
# embeddings, W_Q, b_Q, W_K, b_K at 100 x LR. It prints, per seed, the train and test accuracy and the shares
# of test sentences with attention mass on subject + verb <= 0.1, in (0.1, 0.5] and > 0.5 (``plot_heatmaps``:
# the attention row of the LAST padded position, -1 of 128, not of the last real token).
SVA_COMMIT = "846707c6aabf4bab422292e9e19a7f429b9f14c8"
SVA_BASELINE = ("SVA-Dataset/Baseline_SVA_Train+heatmap+Eval.ipynb", SVA_COMMIT)
SVA_FASTER = ("SVA-Dataset/Faster_SVA_Train+heatmap+Eval.ipynb", SVA_COMMIT)
SVA_SOURCES = {
    "baseline": Source(*SVA_BASELINE, cell=49, what="printed output (execution_count 43)"),
    "fast QK": Source(*SVA_FASTER, cell=49, what="printed output (execution_count 43)"),
}
SVA_QK_SCALE = 100.0  # their faster QK: the embeddings, W_Q, W_K at 100 x the rate
SVA_TEST_ACCURACY = {  # seeds 1234-1238, on the 1 419 490 test sentences
    "baseline": (0.9239, 0.9243, 0.9246, 0.9245, 0.9244),
    "fast QK": (0.9362, 0.9341, 0.9332, 0.9338, 0.9333),
}
SVA_TEST_LOW_MASS = {  # share of test sentences with mass on subject + verb <= 0.1, per seed
    "baseline": (0.5818, 0.5793, 0.5768, 0.5774, 0.5758),
    "fast QK": (0.1438, 0.2539, 0.2949, 0.2434, 0.1619),
}
SVA_TRAIN_SENTENCES = 157_721


def _mean(values: tuple[float, ...]) -> float:
    return sum(values) / len(values)


def authors_variant(variant: str, qk_scale: float) -> str | None:
    """The authors' run (their tables' key, "baseline" or "fast QK") that this project's ``variant`` label
    ("baseline", "fast QK x<factor>") reproduces, given their faster-QK factor ``qk_scale``; None for a
    factor they did not run."""
    if variant == "baseline":
        return "baseline"
    return "fast QK" if variant == f"fast QK x{qk_scale:g}" else None


def sva_column(variants) -> dict[str, str]:
    """The "authors' notebook" column of the SVA summary: mean test accuracy and the mean share of test
    sentences with mass <= 0.1 on subject + verb over their five seeds, for the baseline and their x100
    ("not printed" for a factor they did not run)."""
    out = {}
    for v in variants:
        key = authors_variant(v, SVA_QK_SCALE)
        if key is None:
            out[v] = "not printed"
            continue
        acc, low = _mean(SVA_TEST_ACCURACY[key]), 100 * _mean(SVA_TEST_LOW_MASS[key])
        out[v] = f"test accuracy {acc:.3f}, mass <= 0.1: {low:.1f} %"
    return out


# SQuAD: ``Squad-Dataset/GPT2-Squad-QA_Same.ipynb`` (baseline) and ``GPT2-Squad-QA_Faster.ipynb`` (faster QK),
# both read at commit 969dc61d. A 6-layer pre-norm decoder (d_model 300, 6 heads, d_ff 1200, dropout 0.2,
# tied GloVe-300d embeddings, GPT-2 tokenizer) generates the answer after "Q: <question> C: <context> A:",
# context cut to 200 characters either side of the first answer; 60 000 answerable SQuAD v2.0 training
# questions (an unseeded subset); AdamW, batch 32 x 2 accumulation steps, clip 0.5, weight decay 0.05, label
# smoothing 0.1, one-cycle schedule, seeds 1234-1238. The two runs differ in more than the QK rate: the
# baseline trains everything (W_Q, W_K included) at 5e-4 for 70 epochs; faster QK trains W_Q, W_K and their
# biases at 1e-3 (20 x its base rate) and everything else at 5e-5, 10 x lower than the baseline's, for 100
# epochs (token embeddings at 0.1 x the base rate in both). Scores: greedy answers against the first gold
# answer only. Their execution_count 4 prints per seed the final F1 and exact match on the first 300 dev
# questions (the same 300 also chose their best checkpoint; the cell is at position 4 in the Same notebook
# and 5 in the Faster one, whose cell 4 also carries execution_count 4); execution_count 12 and 13 of the
# Faster notebook re-score the best checkpoints on 5 000 random dev questions. Their heatmap notebooks print
# no AC value as text (the ~12 % -> ~43 % of the paper sheet are read from its figures).
SQUAD_COMMIT = "969dc61d169f3df6c398786c59062d4378c06446"
SQUAD_SOURCES = {
    "baseline": Source(
        "Squad-Dataset/GPT2-Squad-QA_Same.ipynb", SQUAD_COMMIT, 4, "printed output (execution_count 4)"
    ),
    "fast QK": Source(
        "Squad-Dataset/GPT2-Squad-QA_Faster.ipynb", SQUAD_COMMIT, 5, "printed output (execution_count 4)"
    ),
}
SQUAD_QK_SCALE = 20.0  # their faster QK: W_Q, W_K and their biases at 20 x the base rate
SQUAD_FINAL_F1 = {  # seeds 1234-1238, last epoch, 300 dev questions
    "baseline": (0.545, 0.568, 0.592, 0.579, 0.591),
    "fast QK": (0.553, 0.561, 0.590, 0.552, 0.594),
}
SQUAD_FINAL_EM = {
    "baseline": (0.340, 0.347, 0.390, 0.357, 0.360),
    "fast QK": (0.340, 0.367, 0.370, 0.337, 0.373),
}


def squad_column(variants) -> dict[str, str]:
    """The "authors' notebook" column of the SQuAD summary: mean final F1 and exact match over their five
    seeds on 300 dev questions, for the baseline and their x20 ("not printed" for a factor they did not
    run)."""
    out = {}
    for v in variants:
        key = authors_variant(v, SQUAD_QK_SCALE)
        if key is None:
            out[v] = "not printed"
            continue
        f1, em = _mean(SQUAD_FINAL_F1[key]), _mean(SQUAD_FINAL_EM[key])
        out[v] = f"F1 {f1:.3f}, exact match {em:.3f} (300 dev questions)"
    return out
