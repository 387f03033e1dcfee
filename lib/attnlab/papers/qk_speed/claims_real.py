"""Faster query-key learning sharpens attention (arXiv 2608.06776): the claims table's real-data rows, SVA
(the Brown-tagged substitute for Linzen et al.'s set) and SQuAD, from the per-item frames of ``sva_runs`` and
``squad_runs``, and the texts every row of the table shares (``claims`` imports them).

Per faster-QK variant against the one baseline, the runs paired by seed name (a seed is one trained model):
"more attention on the relevant tokens" (mass and AC together), "raises AC" (AC itself: the paper's own
measure, SQuAD's "AC ~12 % -> ~43 %"), "at a similar score"; for SVA also the authors' own attention
statistic (the share of sentences with mass <= 0.1) and the two faithfulness measures the runs compute,
comprehensiveness and sufficiency. Every row is gated on the baseline alone having learned the task; a
diverged run makes its rows "not testable here". The decision rules are in ``rules``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import replace

import pandas as pd

from attnlab.papers.qk_speed import authors as theirs
from attnlab.papers.qk_speed import rules
from attnlab.papers.qk_speed.presets import BASELINE, SVA_DATA
from attnlab.papers.qk_speed.real_data import ac_by_seed, acmc_by_seed, skipped_reason
from attnlab.papers.qk_speed.rules import Seeds
from attnlab.runner import thresholds
from attnlab.runner.claims import Claim, interval
from attnlab.runner.stats import estimate, mean_interval
from attnlab.runner.verdicts import Verdict, above_chance, not_testable, paired

MODELS, NONE = "trained model", "none"  # the units of replication of the rows (runner.claims.UNITS)
SQUAD_AC = "AC ~12 % -> ~43 %"  # the paper's SQuAD attention claim, in the claims table's "paper" column
SQUAD_SHARPER = f"attention on the answer rises ({SQUAD_AC})"
LEARNS_AGREEMENT_CLAIM = (
    "the 1-layer attention-only model learns agreement (every variant, on this scale's data)"
)
#: The "paper" column of the rows the paper states for every dataset without numbers for this one.
SUMMARY = "the paper's summary: raising eta_QK / eta_OV improves AC, ACMC and sufficiency on every dataset"
#: The authors' SVA bin of weak attention: a sentence with at most this mass on subject and verb (their
#: notebooks print the share of such sentences, ``authors.SVA_TEST_LOW_MASS``).
LOW_MASS = 0.1
Gate = Callable[[Verdict], Verdict]

# Texts -----------------------------------------------------------------------------------------------------


def mean_sd(values: Sequence[float] | Seeds, digits: int = 3) -> str:
    """``mean ± sd`` over seeds (``mean`` alone for one seed)."""
    est = estimate(list(values.values()) if isinstance(values, Mapping) else values)
    spread = f" ± {est.sd:.{digits}f}" if est.n > 1 else ""
    return f"{est.mean:.{digits}f}{spread}"


def difference(fast: Seeds, base: Seeds, digits: int, scale: float = 1.0) -> str:
    """The mean paired difference ``fast`` - ``base`` (x ``scale``) with its 95% t interval, by seed name."""
    diffs = [scale * d for d in paired(fast, base)]
    return (
        interval(mean_interval(diffs), digits) if all(map(math.isfinite, diffs)) else "n/a (a run diverged)"
    )


def authors_mean(values: Sequence[float], scale: float = 1.0, digits: int = 3) -> str:
    return f"{scale * sum(values) / len(values):.{digits}f}"


# Per-seed values and gates ---------------------------------------------------------------------------------


def fast_variants(frame: pd.DataFrame) -> list[str]:
    """The faster-QK variants of a real-data frame ("fast QK x<factor>"), in run order."""
    return [str(v) for v in dict.fromkeys(frame["variant"]) if v != BASELINE]


def diverged_gate(per_seed: pd.DataFrame) -> Verdict | None:
    """ "Not testable here" when any (variant, seed) of ``per_seed`` (indexed by both) has a NaN score (its
    training diverged: the measure is not defined), naming the runs; None when every run has its scores."""
    bad = per_seed.index[per_seed.isna().any(axis=1)]
    if len(bad) == 0:
        return None
    runs = ", ".join(f"{v} seed {s}" for v, s in bad)
    return not_testable(f"training diverged ({runs}): no scores to compare", n=len(per_seed))


def seed_counts(frame: pd.DataFrame, column: str, variant: str = BASELINE) -> dict[Hashable, tuple[int, int]]:
    """Per seed of ``variant``: how many of its rows have ``column`` true, and how many rows it has (NaN rows
    of a diverged run count as not correct)."""
    rows = frame[frame["variant"] == variant]
    by = rows.groupby("seed", sort=False)[column]
    return {s: (int(g.fillna(0).astype(bool).sum()), len(g)) for s, g in by}


def low_mass_by_seed(frame: pd.DataFrame, variant: str) -> dict[Hashable, float]:
    """Per seed of ``variant``: the % of its test items with relevant-token mass <= ``LOW_MASS`` (the
    authors' SVA statistic); NaN for a run without scores (diverged)."""
    rows = frame[frame["variant"] == variant].groupby("seed", sort=False)["mass"]
    return {s: math.nan if g.isna().all() else 100.0 * float((g <= LOW_MASS).mean()) for s, g in rows}


def _pair(frame: pd.DataFrame, fast: str, columns: list[str]) -> tuple[pd.DataFrame, Verdict | None]:
    """The per-seed means of ``columns`` of the baseline and ``fast`` (indexed by variant and seed), and the
    diverged gate of the pair (:func:`diverged_gate`)."""
    pair = frame[frame["variant"].isin([BASELINE, fast])]
    per_seed = pair.groupby(["variant", "seed"])[columns].mean()
    return per_seed, diverged_gate(per_seed)


def _both(per_seed: pd.DataFrame, fast: str, column: str) -> tuple[Seeds, Seeds]:
    """(fast, baseline) per seed of one column of :func:`_pair`'s frame."""
    return per_seed.loc[fast][column].to_dict(), per_seed.loc[BASELINE][column].to_dict()


def _factor(fast: str) -> str:
    return fast.removeprefix("fast QK ")


# The rows of one faster-QK variant -------------------------------------------------------------------------


def real_data_rows(frame: pd.DataFrame, name: str, fast: str, paper: tuple[str, str, str],
                   score: tuple[str, str], gate: Gate = lambda v: v) -> list[Claim]:  # fmt: skip
    """The three real-data rows of the faster-QK variant ``fast`` against the baseline, the runs paired by
    seed name: more attention on the relevant tokens (mass and AC together, ``rules.verdict_real_sharper``;
    ``paper[0]`` the paper's words), AC itself (``rules.verdict_ac_rises``; ``paper[1]``) and a similar score
    (``score``: its column and name; ``paper[2]``) within +-``SIMILAR_POINTS``. ``gate``: the baseline's
    gate applied to each row's verdict; every row is "not testable here" where a run of the pair diverged."""
    acc_col, acc_label = score
    per_seed, diverged = _pair(frame, fast, ["mass", acc_col])
    pair = frame[frame["variant"].isin([BASELINE, fast])]
    ac = ac_by_seed(pair).set_index(["seed", "variant"])["AC"].unstack()
    acmc = acmc_by_seed(pair).set_index(["seed", "variant"])["ACMC"].unstack()  # keeps all-NaN variants
    mass, scores = _both(per_seed, fast, "mass"), _both(per_seed, fast, acc_col)
    acs = (ac[fast].to_dict(), ac[BASELINE].to_dict())
    ac_text = (
        f"AC {mean_sd(acs[1], 1)} % -> {mean_sd(acs[0], 1)} % (paired difference {difference(*acs, 1)} "
        f"points)"
    )
    acmc_text = f"ACMC {mean_sd(acmc[BASELINE], 1)} % -> {mean_sd(acmc[fast], 1)} %"
    x = _factor(fast)
    return [
        Claim(
            name,
            f"faster QK ({x}) puts more attention on the relevant tokens",
            paper[0],
            f"attention mass {mean_sd(mass[1])} -> {mean_sd(mass[0])} (paired difference "
            f"{difference(*mass, 3)}); {ac_text}; {acmc_text}",
            diverged or gate(rules.verdict_real_sharper(mass, acs)),
            unit=MODELS,
        ),
        Claim(
            name,
            f"faster QK ({x}) raises AC, the authors' attention confidence (% of test items with "
            "relevant-token mass > 0.1 and true-answer probability > 0.1)",
            paper[1],
            f"{ac_text}; {acmc_text} (ACMC not judged: its definition is ours)",
            diverged or gate(rules.verdict_ac_rises(*acs)),
            unit=MODELS,
        ),
        Claim(
            name,
            f"faster QK ({x}) at a similar {acc_label}",
            paper[2],
            f"{acc_label} {mean_sd(scores[1])} -> {mean_sd(scores[0])} (paired difference "
            f"{difference(*scores, 1, 100)} points; margin +-{rules.SIMILAR_POINTS:g})",
            diverged or gate(rules.verdict_similar_score(scores[1], scores[0])),
            unit=MODELS,
        ),
    ]


def sva_attention_rows(frame: pd.DataFrame, name: str, fast: str, gate: Gate) -> list[Claim]:
    """SVA's further rows of the faster-QK variant ``fast`` against the baseline, paired by seed name: the
    authors' own attention statistic, the share of test sentences with mass <= ``LOW_MASS`` on the relevant
    tokens (``rules.verdict_low_mass_falls``, their x100 under SGD beside it), and comprehensiveness and
    sufficiency at the top 5 % of the tokens by attention (``rules.verdict_faithfulness``), each gated as
    the other SVA rows (``gate``) and "not testable here" where a run of the pair diverged."""
    measures = ["comprehensiveness", "sufficiency"]
    per_seed, diverged = _pair(frame, fast, ["mass", *measures])
    low = (low_mass_by_seed(frame, fast), low_mass_by_seed(frame, BASELINE))
    low_mass = theirs.SVA_TEST_LOW_MASS
    authors = (
        f"authors' notebooks, x{theirs.SVA_QK_SCALE:g} under SGD: mass <= {LOW_MASS:g} in "
        f"{authors_mean(low_mass['baseline'], 100, 0)} % -> {authors_mean(low_mass['fast QK'], 100, 0)} % of "
        "test sentences"
    )
    x = _factor(fast)
    rows = [
        Claim(
            name,
            f"faster QK ({x}) lowers the share of test sentences with attention mass <= {LOW_MASS:g} on the "
            "relevant tokens (the authors' SVA statistic)",
            authors,
            f"share {mean_sd(low[1], 1)} % -> {mean_sd(low[0], 1)} % (paired difference "
            f"{difference(*low, 1)} points)",
            diverged or gate(rules.verdict_low_mass_falls(*low)),
            unit=MODELS,
        )
    ]
    words = {
        "comprehensiveness": "raises comprehensiveness (removing the top 5 % of tokens by attention costs "
        "more of the predicted class's probability)",
        "sufficiency": "lowers sufficiency (the top 5 % of tokens by attention alone keep more of the "
        "predicted class's probability), the paper's 'improves sufficiency'",
    }
    for m in measures:
        values = _both(per_seed, fast, m)
        rows.append(
            Claim(
                name,
                f"faster QK ({x}) {words[m]}",
                f"{SUMMARY} (no numbers known)",
                f"{m} {mean_sd(values[1])} -> {mean_sd(values[0])} (paired difference "
                f"{difference(*values, 3)})",
                diverged or gate(rules.verdict_faithfulness(m, *values)),
                unit=MODELS,
            )
        )
    return rows


def skipped_rows(frame: pd.DataFrame, figure: str, rows: Sequence[tuple[str, str]]) -> list[Claim] | None:
    """The rows (claim, paper) of a real-data part whose ``frame`` has no rows (``real_data.skip``: no data
    here), each "not testable here" with the reason; None when the part ran."""
    if not frame.empty:
        return None
    why = skipped_reason(frame) or "no results"
    return [
        Claim(figure, claim, paper, "not run: no data here", not_testable(why), unit=MODELS)
        for claim, paper in rows
    ]


# SQuAD -----------------------------------------------------------------------------------------------------


def squad_gate(squad: pd.DataFrame, floor: float = rules.QA_FLOOR) -> Verdict | None:
    """SQuAD's gate (no chance level): the baseline learned the task in every seed, its exact-match rate's
    95% Wilson interval above ``floor`` (``QA_FLOOR``, ``rules.baseline_gate``).
    Only the baseline: a faster-QK model that learned less is a result, judged by the rows."""
    return rules.baseline_gate(seed_counts(squad, "em"), floor, "exact match")


def squad_rows(squad: pd.DataFrame, figure: str = "SQuAD") -> list[Claim]:
    """The SQuAD rows of one protocol (``figure``: "SQuAD", faster QK at the baseline's other rates, three
    rows per factor; "SQuAD, authors' rates"), gated on the baseline alone having learned
    (:func:`squad_gate`; ``QA_FLOOR`` is post hoc: the word at a floor of 0 beside it): more attention, AC
    itself (the paper states SQuAD's claim in AC, "~12 % -> ~43 %") and a similar F1, with the authors'
    printed final F1 at their x20 beside the paper's "similar F1". Skipped runs (no data here): three rows,
    "not testable here"."""
    f1 = theirs.SQUAD_FINAL_F1
    base, fast = authors_mean(f1["baseline"]), authors_mean(f1["fast QK"])
    paper_f1 = (
        f"similar F1 (authors' notebooks at x{theirs.SQUAD_QK_SCALE:g}: final F1 {base} -> {fast}, "
        "300 dev questions)"
    )
    paper = (SQUAD_SHARPER, SQUAD_AC, paper_f1)
    rows = [
        ("faster QK puts more attention on the relevant tokens", paper[0]),
        ("faster QK raises AC, the authors' attention confidence", paper[1]),
        ("faster QK at a similar F1", paper[2]),
    ]
    skipped = skipped_rows(squad, figure, rows)
    if skipped is not None:
        return skipped
    gate, plain = squad_gate(squad), squad_gate(squad, 0.0)

    def gated(v: Verdict) -> Verdict:  # QA_FLOOR is post hoc: the word at a floor of 0 beside it
        return thresholds.posthoc(rules.QA_FLOOR_KEY, gate or v, replace(plain or v, null=0.0))

    return [
        c for v in fast_variants(squad) for c in real_data_rows(squad, figure, v, paper, ("f1", "F1"), gated)
    ]


# SVA -------------------------------------------------------------------------------------------------------


def sva_chance(sva: pd.DataFrame) -> float:
    """SVA's chance level: the share of the majority class among the test sentences (always predicting it);
    0.5 for balanced data, 0.68 on the authors' Linzen set (68 % singular)."""
    one = sva[(sva["variant"] == sva["variant"].iloc[0]) & (sva["seed"] == sva["seed"].iloc[0])]
    share = float(one["label"].mean()) if "label" in one else 0.5
    return max(share, 1.0 - share)


#: The claims table's name for the SVA rows: the data are a substitute for the authors' (``sva.SVA_DATA``).
SVA_FIGURE = SVA_DATA


def sva_rows(sva: pd.DataFrame, figure: str = SVA_FIGURE) -> list[Claim]:
    """The SVA rows of one protocol (``figure``: :data:`SVA_FIGURE`, the authors' SGD at their x100, or
    ":data:`SVA_FIGURE`, Adam", this project's Adam at each factor): per factor the three rows of
    :func:`real_data_rows` and the three of :func:`sva_attention_rows`, gated on the baseline being above
    ``sva_chance`` in every seed; then "learns agreement" over every variant, not gated on chance (it is the
    claim). Skipped runs: every row "not testable here"."""
    a, x = theirs.SVA_TEST_ACCURACY, theirs.SVA_QK_SCALE
    authors = (
        f"authors' notebooks, x{x:g} under SGD: test accuracy {authors_mean(a['baseline'])} -> "
        f"{authors_mean(a['fast QK'])}"
    )
    low = theirs.SVA_TEST_LOW_MASS
    sharp = (
        f"attention on subject and verb rises (authors' notebooks: mass <= {LOW_MASS:g} in "
        f"{authors_mean(low['baseline'], 100, 0)} % -> {authors_mean(low['fast QK'], 100, 0)} % of test "
        "sentences)"
    )
    paper_acc = f"accuracy ~0.92-0.93 ({authors})"
    paper = (sharp, f"{SUMMARY} (the SVA notebooks print no AC)", paper_acc)
    rows = [
        ("faster QK puts more attention on the relevant tokens", paper[0]),
        ("faster QK raises AC, the authors' attention confidence", paper[1]),
        ("faster QK at a similar accuracy", paper[2]),
        (f"faster QK lowers the share of test sentences with attention mass <= {LOW_MASS:g}", sharp),
        ("faster QK raises comprehensiveness", SUMMARY),
        ("faster QK lowers sufficiency", SUMMARY),
        (LEARNS_AGREEMENT_CLAIM, paper_acc),
    ]
    skipped = skipped_rows(sva, figure, rows)
    if skipped is not None:
        return skipped
    chance = sva_chance(sva)
    gate = rules.baseline_gate(seed_counts(sva, "correct"), chance, "accuracy")
    if gate is not None:
        gate = replace(gate, why=f"{gate.why} (chance: the majority class, {chance:.3f})")

    def gated(v: Verdict) -> Verdict:
        return gate or v

    claims = []
    for f in fast_variants(sva):
        claims += real_data_rows(sva, figure, f, paper, ("correct", "accuracy"), gated)
        claims += sva_attention_rows(sva, figure, f, gated)
    return [*claims, learns_agreement(sva, figure, chance, authors)]


def learns_agreement(sva: pd.DataFrame, figure: str, chance: float, authors: str) -> Claim:
    """SVA's "the 1-layer attention-only model learns agreement" over every variant of ``sva``, per seed, with
    the data it learned from beside it (``sva.SVA_DATA``): a model at the majority rate on many times fewer
    sentences than the authors' says something about this data, not about theirs."""
    per_seed = sva.groupby(["variant", "seed"])
    by_seed = per_seed["correct"].mean()
    variants = [str(v) for v in dict.fromkeys(by_seed.index.get_level_values(0))]
    accuracy = {v: by_seed.loc[v].to_dict() for v in variants}
    n_sentences = int(per_seed.size().iloc[0])
    train = int(sva["train_sentences"].iloc[0]) if "train_sentences" in sva else 0
    fewer = f"{theirs.SVA_TRAIN_SENTENCES / train:.0f} x fewer than" if train else "against"
    data = (
        f"{train} training sentences of the Brown-tagged substitute for Linzen et al.'s set, {fewer} the "
        f"authors' {theirs.SVA_TRAIN_SENTENCES} (10 % of Linzen's 1.58M); {n_sentences} test sentences"
    )
    counts = {v: seed_counts(sva, "correct", v).values() for v in variants}
    at_chance = [v for v in variants if all(above_chance(k, n, chance) is not None for k, n in counts[v])]
    note = ": evidence of what this data teaches this model, not of the authors' data"
    scale = f"; {', '.join(at_chance)} at the majority rate{note}" if at_chance else ""
    return Claim(
        figure,
        LEARNS_AGREEMENT_CLAIM,
        f"accuracy ~0.92-0.93 ({authors})",
        "accuracy " + ", ".join(f"{v} {mean_sd(accuracy[v])}" for v in variants) + f" (chance {chance:.3f}; "
        f"{data}; {len(accuracy[variants[0]])} seeds){scale}",
        rules.verdict_learns_agreement(accuracy),
        unit=MODELS,
    )
