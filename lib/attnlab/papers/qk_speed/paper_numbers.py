"""Faster query-key learning (arXiv 2608.06776): the claims rows whose paper number is the quantity our
estimate measures, in its units, for the summary figure (``attnlab.runner.paper_figure``; the keys are its
(figure, claim) regular expressions). The paper's text was not available: the numbers are the authors' saved
notebook outputs (``authors``, copied by hand with their sources) and the paper sheet's SQuAD AC
(``docs/papers/qk-speed.md``, read off the paper's figures).

Only rows at the authors' own setting get their number: SVA at their x100 under SGD, SQuAD at their x20. Left
out, with no number in our units: Fig. 2 and the ratio sweep (words, and DTAP shares read by eye off heatmap
images, not what the rows measure), Fig. 4 (the authors' notebook printed alpha at two of our five r; the row
measures the smallest rise over all five), the attention-mass rows (the authors print no mass difference),
comprehensiveness and sufficiency (no numbers), the Adam runs' factors (not the authors' setting) and
HateXplain (no numbers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from attnlab.papers.qk_speed import authors
from attnlab.papers.qk_speed.claims_real import LEARNS_AGREEMENT_CLAIM, SVA_FIGURE
from attnlab.runner.paper_figure import PaperNumber, PaperNumbers
from attnlab.runner.verdicts import GATE, SLOPE


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values))


def _paired_points(printed: Mapping[str, Sequence[float]]) -> float:
    """The authors' faster-QK minus baseline, paired by seed (both run seeds 1234-1238), in points: what our
    paired rule estimates."""
    return 100 * _mean([f - b for f, b in zip(printed["fast QK"], printed["baseline"], strict=True)])


def _fig3_slope(ov: str) -> PaperNumber:
    """Fig. 3: the least-squares slope of the authors' final loss against alpha (their five alphas), the
    quantity our slope rule estimates per seed."""
    final = authors.FIG3_FINAL[ov]
    slope = float(np.polyfit(list(final), list(final.values()), 1)[0])
    source = f"the authors' Fig. 3 notebook ({ov}), final loss at alpha = 0.2 ... 1.0 (authors.FIG3_FINAL)"
    return PaperNumber(f"slope of the final loss against alpha, {ov} OV (loss per unit alpha)", source, slope,
                       rules=(SLOPE,))  # fmt: skip


SVA_X = f"x{authors.SVA_QK_SCALE:g}"
SQUAD_X = f"x{authors.SQUAD_QK_SCALE:g}"
SVA_SOURCE = f"the authors' SVA notebooks, {SVA_X} under SGD, seeds 1234-1238 (authors.SVA_TEST_*)"
SQUAD_SOURCE = f"the authors' SQuAD notebooks, {SQUAD_X}, seeds 1234-1238 (authors.SQUAD_FINAL_*)"
SVA_ACCURACY = (_mean(authors.SVA_TEST_ACCURACY["baseline"]), _mean(authors.SVA_TEST_ACCURACY["fast QK"]))
SQUAD = ("SQuAD", "SQuAD, authors' rates")

PAPER_NUMBERS: PaperNumbers = {
    **{
        (
            "Fig\\. 3",
            f"with attention fixed, more mass on the distinct tokens gives a lower loss \\({ov} OV, .+\\)",
        ): _fig3_slope(ov)
        for ov in authors.FIG3_FINAL
    },  # fmt: skip
    (re.escape(SVA_FIGURE), f"faster QK \\({SVA_X}\\) at a similar accuracy"): (
        PaperNumber(
            "test accuracy, faster QK - baseline (points)",
            SVA_SOURCE,
            _paired_points(authors.SVA_TEST_ACCURACY),
        ),
        # the gate's estimate when the baseline did not learn: the baseline's accuracy
        PaperNumber("baseline test accuracy (share)", SVA_SOURCE, SVA_ACCURACY[0], rules=(GATE,)),
    ),  # fmt: skip
    (
        re.escape(SVA_FIGURE),
        f"faster QK \\({SVA_X}\\) lowers the share of test sentences with attention mass .+",
    ): PaperNumber(
        "share of test sentences with mass <= 0.1 on subject and verb, faster QK - baseline (points)",
        SVA_SOURCE,
        _paired_points(authors.SVA_TEST_LOW_MASS),
    ),
    # learns agreement: the authors' baseline and faster QK both at 0.92-0.93 (their SGD; ours also Adam's)
    (f"{re.escape(SVA_FIGURE)}(, Adam)?", re.escape(LEARNS_AGREEMENT_CLAIM)): PaperNumber(
        "test accuracy of the 1-layer model (share)",
        SVA_SOURCE,
        SVA_ACCURACY[0],
        min(SVA_ACCURACY),
        max(SVA_ACCURACY),
    ),  # fmt: skip
    **{
        (re.escape(figure), f"faster QK \\({SQUAD_X}\\) at a similar F1"): (
            PaperNumber(
                "F1, faster QK - baseline (points)", SQUAD_SOURCE, _paired_points(authors.SQUAD_FINAL_F1)
            ),
            # the gate's estimate when the baseline did not learn: the baseline's exact-match rate
            PaperNumber(
                "baseline exact match (share)",
                SQUAD_SOURCE,
                _mean(authors.SQUAD_FINAL_EM["baseline"]),
                rules=(GATE,),
            ),
        )
        for figure in SQUAD
    },  # fmt: skip
    **{
        # AC ~12 % -> ~43 %, read off the paper's SQuAD heatmaps (the paper sheet; the definition is inferred)
        (re.escape(figure), f"faster QK \\({SQUAD_X}\\) raises AC, .+"): PaperNumber(
            "AC, faster QK - baseline (points)",
            "the paper's SQuAD figure: AC ~12 % -> ~43 % (paper sheet)",
            43.0 - 12.0,
        )
        for figure in SQUAD
    },
}
