"""XSA (arXiv 2603.09078): the claims rows whose paper number is the quantity our estimate measures, in its
units, for the summary figure (``attnlab.runner.paper_figure``; the keys are its (figure, claim) regular
expressions). The numbers are the paper sheet's (``docs/papers/xsa.md``, ``shared/papers/xsa.md``), kept in
``presets.PAPER_TABLE2``.

Left out, with no number in our units: Fig. 1 (the paper's cos(y_i, v_i) of about 0.2 to 0.6 is a level; our
rows measure its margin over the values' mutual similarity, a slope per layer, or a margin over a null), Figs.
2-6 (words: "minimal overhead", "below throughout", "nearly constant", "widens"), the controls and variants
(not in the paper), and Table 2's average (the paper averages all eight tasks; ours only the tasks SA passes
its gate on, so the two averages are over different tasks).
"""

from __future__ import annotations

import re

from attnlab.papers.xsa.presets import PAPER_TABLE2
from attnlab.runner.paper_figure import PaperNumber, PaperNumbers
from attnlab.runner.verdicts import EXACT, GATE

#: The model the paper's number is: the smallest, nearest this project's scales (the range spans all three).
NEAREST = "0.7B"


def _table2(task: str) -> tuple[PaperNumber, PaperNumber]:
    """Table 2's numbers of ``task``: XSA's gain over SA (points, the paired rule's estimate when SA passes
    its gate) and SA's accuracy (a share of the items, the gate's estimate when it does not), each the 0.7B
    model's with the range over 0.7B, 1.3B and 2.7B. The paper scores with lm-eval-harness; our rows score
    per byte, or against the choice's likelihood without the prompt (LAMBADA: the greedy last word)."""
    sizes = {size: rows[task] for size, rows in PAPER_TABLE2.items()}  # size -> (SA, XSA), %
    gains = [xsa - sa for sa, xsa in sizes.values()]
    accuracies = [sa / 100 for sa, _ in sizes.values()]
    sa, xsa = sizes[NEAREST]
    source = (
        f"Table 2, {task}: SA -> XSA at 0.7B, 1.3B, 2.7B (presets.PAPER_TABLE2); the number is {NEAREST}'s"
    )
    gain = PaperNumber("XSA - SA zero-shot accuracy (points)", source, xsa - sa, min(gains), max(gains))
    gate = PaperNumber("SA zero-shot accuracy (share of items)", source, sa / 100, min(accuracies),
                       max(accuracies), rules=(GATE,))  # fmt: skip
    return gain, gate


PAPER_NUMBERS: PaperNumbers = {
    # Alg. 1: z_i = y_i - (y_i . v_i) v_i / ||v_i||^2, so z_i . v_i = 0 exactly; our estimate is the largest
    # |z_i . v_i| / (||y_i|| ||v_i||), which that identity makes 0 too.
    ("Alg\\. 1", "XSA output is orthogonal to the own value"): PaperNumber(
        "largest |z_i . v_i| / (|y_i| |v_i|)", "Alg. 1: z_i . v_i = 0 by construction", 0.0, rules=(EXACT,)
    ),
    **{
        ("Table 2", f"XSA improves zero-shot accuracy \\({re.escape(task)}, .+\\)"): _table2(task)
        for task in PAPER_TABLE2[NEAREST]
    },
}
