"""Contribution weights (arXiv 2606.07604): the claims rows whose paper number is the quantity our estimate
measures, in its units, for the summary figure (``attnlab.runner.paper_figure``; the keys are its (figure,
claim) regular expressions).

Only the abstract, the introduction's start and Fig. 1's caption were readable
(``docs/papers/contribution-weights.md``): the paper's claims are qualitative, so the one number is its
definition's identity.
Left out, with no number in our units: Fig. 1, the faithfulness ordering, downstream accuracy, the
decomposition, the sinks' cosine and convexity, the sink-norm removal (all stated in words or as curves of
7-8B models that were not readable), "c can be negative" (no share given) and the cost (O(T^2), no number).
"""

from __future__ import annotations

from attnlab.runner.composite import ALL_OF
from attnlab.runner.paper_figure import PaperNumber, PaperNumbers
from attnlab.runner.verdicts import EXACT

PAPER_NUMBERS: PaperNumbers = {
    # "c can be negative ... and sum_j c_ij = 1 exactly" (the definition): a deviation of 0. Our estimate is
    # the largest |sum_j c_ij - 1| divided by the row's condition number (a form's, in the row over both
    # forms), which that identity makes 0 too.
    ("(scale: )?definitions", "each row of contribution weights sums to 1 exactly.*"): PaperNumber(
        "largest |sum_j c_ij - 1| / kappa_i",
        "the definition: sum_j c_ij = 1 exactly",
        0.0,
        rules=(EXACT, ALL_OF.split("{k}")[0]),
    ),  # fmt: skip
}
