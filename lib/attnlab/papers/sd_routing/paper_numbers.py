"""S-D routing (arXiv 2605.18826): the claims rows whose paper number is the quantity our estimate measures,
in its units, for the summary figure (``attnlab.runner.paper_figure``; the keys are its (figure, claim)
regular expressions). The numbers are the paper sheet's (``docs/papers/sd-routing.md``,
``shared/papers/sd-routing.md``; the reallocation's in ``presets.PAPER_REALLOCATION``).

The cascade's "effective rank" is the sheet's (inferred) Roy & Vetterli entropy rank, so only our entropy-rank
rows get its 2 and 2-3; the stable rank, participation ratio and top-plane share are other measures. A cascade
row shows either the band part (a rank, judged against the band's edges) or the part against SA's routing
(a difference, null 0): ``nulls`` keeps the first. Left out, with no number in our units: the pretrained
energy and rank claims (words: "dominates", "low rank"), the last layers ("10+ planes": our row measures a
margin over layer 0), the scale trend (33 % -> 92 % are two levels; our row is a slope per decade), the
filtering collapse (the paper's +0.3 is in PPL, ours in % PPL; "catastrophic" is a word), the count of
linear layers (a 12-layer model's 7 against our 4-layer models) and the sanity checks (bounds).
"""

from __future__ import annotations

from attnlab.papers.sd_routing.presets import PAPER_REALLOCATION
from attnlab.papers.sd_routing.rules import FEW_DIMENSIONS, ONE_PLANE
from attnlab.runner.composite import ALL_OF
from attnlab.runner.paper_figure import PaperNumber, PaperNumbers
from attnlab.runner.verdicts import EXACT

SHEET = "the paper sheet (abstract and introduction)"
#: The rule of a claim of several parts (its estimate is the deciding part's).
ALL_OF_RULE = ALL_OF.split("{k}")[0]
SAVED, COST = PAPER_REALLOCATION["params_saved_pct"], PAPER_REALLOCATION["ppl_pct"]

PAPER_NUMBERS: PaperNumbers = {
    # "1,776 heads of GPT-2 variants, BERT-base, Pythia-410M: all heads unstable": no stable head. Our
    # estimate is a model's count of stable heads (every model's, in the row over all of them).
    ("(scale: )?pretrained", "every head is dynamically unstable .+"): PaperNumber(
        "stable heads (count)", f"{SHEET}: all 1,776 heads unstable", 0.0, rules=(EXACT, ALL_OF_RULE)
    ),
    (
        "cascade",
        "layer 0's routing converges to one rotation plane, lower than SA's \\(S-D.*, entropy rank\\)",
    ): PaperNumber(
        "layer 0's routing entropy rank (head mean)",
        f"{SHEET}: layer 0 effective rank 2, 7M-355M",
        2.0,
        nulls=ONE_PLANE,
    ),  # fmt: skip
    (
        "cascade",
        "middle layers route in 2-3 dimensions, fewer than SA's \\(S-D.*, entropy rank\\)",
    ): PaperNumber(
        "middle layers' routing entropy rank (head mean)",
        f"{SHEET}: middle layers effective rank 2-3",
        low=2.0,
        high=3.0,
        nulls=FEW_DIMENSIONS,
    ),  # fmt: skip
    (
        "linearisation",
        "S-D(, shared projection)? with ELU\\+1 in the first third of its layers stays close to the baseline "
        "\\(retrained\\)",
    ): PaperNumber(
        "PPL change with ELU+1 in the first third of the layers (%)",
        f"{SHEET}: ELU+1 on the first 4 of 12 layers within 1.4 % of the baseline",
        1.4,
    ),
    # a composite row: the cost part (against the paper's +8.4 %) or the saving part (against its 47 %)
    ("reallocation", "head dims from the measured routing dimensions save attention parameters .+"): (
        PaperNumber(
            "PPL change of the reallocated model (%)",
            f"{SHEET}: +3.9 % to +8.4 % PPL (presets.PAPER_REALLOCATION)",
            low=COST[0],
            high=COST[1],
            nulls=(COST[1],),
        ),
        PaperNumber(
            "attention parameters saved (%)",
            f"{SHEET}: 47-65 % fewer attention parameters (presets.PAPER_REALLOCATION)",
            low=SAVED[0],
            high=SAVED[1],
            nulls=(SAVED[0],),
        ),
    ),  # fmt: skip
}
