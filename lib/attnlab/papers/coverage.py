"""Which claims-table rows judge each claim of the four papers: one :class:`Entry` per numbered claim of a
paper's text (its figures, tables and findings, as the papers' sheets and the accounts in ``docs/papers/``
list them), with the rows of its paper's claims table that judge it, or the reason it has none.

A row is named by its figure label and one or more pieces of its claim text (:class:`Row`). Rows built from
templates (an f-string, a constant joined to a variant's label) are named by the literal pieces of the
template, so every piece is text that the paper's claims code holds as a string literal; :func:`unmatched`
checks that against the code (``tests/test_coverage.py`` runs it on every entry). ``docs/coverage.md``
prints the registry (``python -m attnlab.papers.coverage --write docs/coverage.md``). The synthesis package
is this project's own and has no paper: it is not here.
"""

from __future__ import annotations

import argparse
import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from attnlab.runner.blocks import replaced, write_block

#: The papers whose claims are registered, in the site's order, with the title the page prints.
TITLES = {
    "xsa": "Exclusive Self Attention (XSA)",
    "qk_speed": "Faster query-key learning sharpens attention",
    "contribution_weights": "Contribution weights",
    "sd_routing": "The routing and filtering structure of attention (S–D attention)",
}


@dataclass(frozen=True)
class Row:
    """Rows of a paper's claims table: those whose figure label is ``figure`` and whose claim text holds
    every one of ``parts`` (each a literal piece of the claims code; one for a fixed text, several for a
    template)."""

    figure: str
    parts: tuple[str, ...]


def row(figure: str, *parts: str) -> Row:
    return Row(figure, parts)


@dataclass(frozen=True)
class Entry:
    """One claim of a paper: where the paper makes it (``id``, its figure, table or section), the claim in a
    sentence, and either the claims-table ``rows`` that judge it or the ``reason`` it has none; ``note``
    says where the rows judge less than the paper shows (its models, its scale)."""

    paper: str  # the paper's package name (a key of TITLES)
    id: str
    claim: str
    rows: tuple[Row, ...] = ()
    reason: str = ""
    note: str = ""

    def problem(self) -> str:
        """Why the entry is malformed ("" when it is not): neither rows nor a reason, or both."""
        if self.paper not in TITLES:
            return f"unknown paper {self.paper!r}"
        if not self.id.strip() or not self.claim.strip():
            return "an entry needs an id and a claim"
        if not self.rows and not self.reason.strip():
            return "neither rows nor a reason"
        if self.rows and self.reason:
            return "both rows and a reason (a limit of the rows goes in the note)"
        if any(not r.figure or not r.parts or not all(p.strip() for p in r.parts) for r in self.rows):
            return "a row needs a figure label and non-empty parts"
        return ""


_E = Entry
XSA, QK, CW, SD = "xsa", "qk_speed", "contribution_weights", "sd_routing"
SMALL_XSA = "judged on this project's byte-level models (2-8 layers, width 32-64 at cpu), not 0.7B-2.7B"
SVA = "SVA (Brown-tagged substitute for Linzen et al.)"
SQUAD_CPU = (
    "at cpu a small decoder on part of SQuAD; a faster-QK run that does not learn the task leaves its rows "
    "not testable there"
)
PRETRAINED_CW = (
    "judged on SmolLM2-135M (the 'scale:' rows repeat it on further small pretrained models), not the "
    "paper's 7-8B LLMs"
)
FAITHFULNESS_CW = (
    "judged on SmolLM2-135M and this project's GPT, per head and ranked jointly (the 'scale:' rows repeat it "
    "on further small pretrained models), not on the paper's four 7-8B models"
)
PRETRAINED_SD = (
    "judged on the small pretrained models that ship in registry packages (SmolLM2-135M, MiniLM-L6 and "
    "others), not the paper's 1,776 heads of GPT-2, BERT-base and Pythia-410M"
)
SIZES_SD = (
    "per variant (S–D, S–D without LayerNorm, shared projection) and rank measure; at cpu the sizes span "
    "25k-385k non-embedding parameters, not 7M-355M (the gpu and paper presets hold larger ones)"
)

# fmt: off
ENTRIES: tuple[Entry, ...] = (
    # XSA ----------------------------------------------------------------------------------------------------
    _E(XSA, "Fig. 1", "In a trained SA model the output is aligned with the token's own value: cos(y_i, "
       "v_i) is high (the attention similarity bias).",
       (row("Fig. 1", "SA output is aligned with the token's own value (similarity bias)"),)),
    _E(XSA, "Fig. 1", "The similarity bias grows with depth (cos(y_i, v_i) about 0.2 in the first layers, "
       "0.6 at layer 23 of the 1.3B model).", (row("Fig. 1", "the similarity bias grows with depth"),),
       note=SMALL_XSA),
    _E(XSA, "Fig. 1", "Values are positively correlated within a sequence: mean cos(v_i, v_j) > 0.",
       (row("Fig. 1", "values are positively correlated within a sequence"),)),
    _E(XSA, "Fig. 1", "The diagonal attention a_ii is relatively high.",
       (row("Fig. 1", "diagonal attention a_ii is relatively high"),)),
    _E(XSA, "Fig. 1", "a_ii grows with depth.", (row("Fig. 1", "a_ii grows with depth"),)),
    _E(XSA, "Fig. 1", "The diagnostics hold in pretrained SA models too: the output aligned with its own "
       "value, values positively correlated (cos(v_i, v_j) > 0), a_ii high, both rising with depth.",
       (row("Fig. 1 (pretrained)", "SA output is aligned with the token's own value beyond "),
        row("Fig. 1 (pretrained)", "values are positively correlated within a sequence"),
        row("Fig. 1 (pretrained)", "diagonal attention a_ii is relatively high"),
        row("Fig. 1 (pretrained)", "the similarity bias grows with depth"),
        row("Fig. 1 (pretrained)", "a_ii grows with depth")),
       note="per pretrained model that ships here, with and without the attention sink, and in every model"),
    _E(XSA, "Alg. 1", "The XSA output is orthogonal to the token's own value (cos(z_i, v_i) = 0 up to "
       "rounding).", (row("Alg. 1", "XSA output is orthogonal to the own value"),)),
    _E(XSA, "Alg. 1", "With grouped-query attention XSA normalises the shared value head and broadcasts it "
       "over its query group (and trains as well there).",
       (row("Alg. 1", "XSA with grouped-query attention reaches a lower final validation loss"),),
       note="the paper states the form and gives no grouped-query result; the row compares with SA of the "
       "same grouping"),
    _E(XSA, "Table 1", "The model configurations: 0.7B, 1.3B and 2.7B (layers, width, heads, learning "
       "rate).",
       reason="a setup, not a claim: the 'paper' preset holds Table 1's configurations (not run here: a "
       "multi-GPU cluster)"),
    _E(XSA, "Fig. 2", "The projection adds minimal time and memory to an attention + FFN block.",
       (row("Fig. 2", "XSA adds minimal time and memory to an attention + FFN block"),),
       note="timed on the machine the notebook ran on, not a B200 in bf16"),
    _E(XSA, "Fig. 3", "XSA's training and validation loss stay below SA's throughout training, at every "
       "size.",
       (row("Fig. 3", "XSA's validation loss is below SA's throughout training"),
        row("Fig. 3", "XSA reaches a lower final ", " loss than SA"),
        row("Fig. 3", "XSA reaches a lower final validation loss than SA in subword tokens")),
       note=SMALL_XSA),
    _E(XSA, "Table 2", "XSA raises zero-shot accuracy on each of eight tasks and on their average.",
       (row("Table 2", "XSA improves zero-shot accuracy ("),
        row("Table 2", "XSA improves average zero-shot accuracy")),
       note="each task judged where SA is above its trivial baselines; small models sit near chance"),
    _E(XSA, "Table 2", "XSA's gain grows with model size (average +0.26 at 0.7B, +1.03 at 1.3B, +1.36 at "
       "2.7B).", (row("Fig. 3", "XSA's gain over SA grows with model size"),),
       note="judged on the final validation loss over the trained sizes, not on accuracy at 0.7B-2.7B"),
    _E(XSA, "Fig. 4", "XSA's margin is nearly constant across learning rates 1e-4 to 6e-4.",
       (row("Fig. 4", "XSA's margin over SA is nearly constant across learning rates"),
        row("Fig. 4", "XSA is below SA at every learning rate of the grid")),
       note="on each size's own grid of four rates"),
    _E(XSA, "Fig. 5", "XSA's gap widens as the training sequence grows (512 to 16,384 tokens, tokens per "
       "batch fixed).", (row("Fig. 5", "XSA's gain grows with sequence length (tokens per batch fixed)"),),
       note="the sweep reaches 1,024 tokens at cpu (16,384 in the paper preset)"),
    _E(XSA, "Fig. 6", "With 0, 1 or 4 learned attention-sink tokens XSA keeps its margin.",
       (row("Fig. 6", "XSA keeps its margin when SA gets learned attention sinks"),)),
    _E(XSA, "Fig. 6", "XSA acts as an implicit attention sink.",
       (row("Fig. 6", "XSA acts as an implicit sink"),),
       note="read as: XSA puts less attention on the sink tokens than SA"),
    # QK-speed -----------------------------------------------------------------------------------------------
    _E(QK, "Idea", "Factorised parameterisations (W_Q W_K^T, W_O W_V) implicitly rescale the learning rates "
       "compared with collapsed ones (a single W_QK, W_OV).",
       reason="a gradient-flow result the runs cannot isolate: the factorised and collapsed circuits differ "
       "in initialisation too, and the matched run (a collapsed circuit at the factorised one's effective, "
       "state-dependent rate) is not trained; Fig. 2's first row and Fig. 3 agree with it without testing "
       "it"),
    _E(QK, "Fig. 2", "At one shared SGD learning rate the collapsed-OV circuits (FACO, CACO) concentrate "
       "attention on the distinct tokens.",
       (row("Fig. 2", "collapsed-OV models (FACO, CACO) concentrate attention on distinct tokens"),)),
    _E(QK, "Fig. 2", "FAFO predicts correctly with weak attention.",
       (row("Fig. 2", "FAFO predicts correctly with weak attention"),)),
    _E(QK, "Fig. 2", "Faster QK (eta_QK 0.2 against eta_OV 0.01) moves FAFO towards sharp, FACO-like "
       "attention at the same accuracy.",
       (row("Fig. 2", "sharpens attention on distinct tokens at the same accuracy", "paper: 0.2 vs 0.01"),)),
    _E(QK, "Fig. 2", "A QK learning rate ramped x1 -> x40 does the same for FAFO.",
       (row("Fig. 2", "sharpens attention on distinct tokens at the same accuracy", "FAFO QK ramp x1-x"),)),
    _E(QK, "Fig. 2", "The same for CACO with a faster key learning rate (0.05 against 0.01, L = 128).",
       (row("Fig. 2", "sharpens attention on distinct tokens at the same accuracy", "(0.05 vs 0.01)"),)),
    _E(QK, "Fig. 2", "The same for CACO with a QK learning rate ramped x1 -> x10.",
       (row("Fig. 2",
            "sharpens attention on distinct tokens at the same accuracy",
            "QK LR ramp x1 -> x",
            "CACO L"),)),
    _E(QK, "Fig. 2", "The DTAP heatmaps: the share of test samples in each cell of attention mass x "
       "true-label probability, as the authors' saved heatmaps show it.",
       (row("Fig. 2", "puts as many held-out sequences in the sharp-and-correct DTAP cell"),),
       note="the sharp-and-correct cell, per run the authors saved a heatmap of"),
    _E(QK, "ratio sweep", "Raising eta_QK / eta_OV sharpens attention without changing accuracy.",
       (row("ratio sweep", "raising eta_QK / eta_OV sharpens attention without changing accuracy"),)),
    _E(QK, "ratio sweep", "The sharpening holds at the ratios the authors' schedules reach, between x5 and "
       "x40.", (row("ratio sweep", "raising eta_QK / eta_OV sharpens attention without changing accuracy"),),
       note="one trend over the whole grid of ratios, per QK initialisation (at cpu x0.5 to x40, with x7, "
       "x14, x28 and x40 between x5 and x40)"),
    _E(QK, "Fig. 3", "With attention fixed at alpha on the distinct tokens and only OV trained, more mass "
       "gives a lower loss (factorised OV: final loss 3.8e-3 at alpha = 0.2 down to 4.9e-4 at 1.0).",
       (row("Fig. 3", "with attention fixed, more mass on the distinct tokens gives a lower loss"),),
       note="factorised and collapsed OV, the authors' protocol and this project's"),
    _E(QK, "Fig. 3", "Fig. 3 holds over the authors' seeds (1234-1238), not one run.",
       (row("Fig. 3", "with attention fixed, more mass on the distinct tokens gives a lower loss"),),
       note="one slope over alpha per seed; the seeds are the units"),
    _E(QK, "Fig. 4", "In the reduced two-scalar dynamics a larger r = eta_QK / eta_OV ends with a larger "
       "alpha.", (row("Fig. 4", "a faster QK circuit (larger r) ends with sharper attention"),)),
    _E(QK, "Fig. 4", "mu_OV grows like log t.", (row("Fig. 4", "mu_OV grows like log t"),)),
    _E(QK, "Fig. 4", "mu_QK grows like log^2 t.",
       (row("Fig. 4", "mu_QK grows like log^2 t, at every r"),
        row("Fig. 4", "(per regime of the first integral)")),
       note="from a summary of the paper; judged per r in the regime that holds there"),
    _E(QK, "SVA", "On subject-verb agreement faster QK (x100) puts more attention on subject and verb.",
       (row(SVA, "puts more attention on the relevant tokens"),
        row(SVA, "lowers the share of test sentences with attention mass <= "),
        row(SVA, "raises AC, the authors' attention confidence")),
       note="on a Brown-tagged substitute for Linzen et al.'s set, far smaller than the authors'; the same "
       "rows under Adam (x2 to x10) carry the same label followed by ', Adam'"),
    _E(QK, "SVA", "On SVA faster QK keeps a similar accuracy (about 0.92-0.93).",
       (row(SVA, "at a similar "), row(SVA, "the 1-layer attention-only model learns agreement"))),
    _E(QK, "SVA", "Faster QK improves comprehensiveness and sufficiency (the top 5 % or 20 % of tokens by "
       "attention removed, or kept alone).",
       (row(SVA, "raises comprehensiveness"), row(SVA, "lowers sufficiency")),
       note="at the top 5 %, on SVA (the one real-data task whose runs compute them)"),
    _E(QK, "summary", "Raising eta_QK / eta_OV improves ACMC on every dataset.",
       reason="ACMC's definition was not found in the authors' material: this project's stand-in is "
       "printed beside AC, not judged"),
    _E(QK, "HateXplain", "Faster QK (x30) sharpens attention on the rationale tokens at similar accuracy.",
       (row("HateXplain", "faster QK sharpens attention on rationale tokens at similar accuracy"),),
       note="not testable here: HateXplain is not available offline"),
    _E(QK, "SQuAD", "On generative QA (6-layer decoder, QK x20) AC rises from about 12 % to about 43 %.",
       (row("SQuAD", "raises AC, the authors' attention confidence"),
        row("SQuAD", "puts more attention on the relevant tokens"),
        row("SQuAD, authors' rates", "raises AC, the authors' attention confidence"),
        row("SQuAD, authors' rates", "puts more attention on the relevant tokens")), note=SQUAD_CPU),
    _E(QK, "SQuAD", "On SQuAD faster QK keeps a similar F1.", (row("SQuAD", "at a similar ", "F1"),
        row("SQuAD, authors' rates", "at a similar ", "F1")),
       note=SQUAD_CPU),
    # Contribution weights -----------------------------------------------------------------------------------
    _E(CW, "Fig. 1", "The first token gets a large attention mass but contributes little to the output.",
       (row("Fig. 1", "the first token gets a large attention mass but contributes little"),),
       note=PRETRAINED_CW),
    _E(CW, "faithfulness", "Zeroing the top-ranked tokens (comprehensiveness) orders the measures raw < "
       "value-weighted < contribution weights: a larger perplexity rise is more faithful.",
       (row("faithfulness", "comprehensiveness (top zeroed), signed c"),), note=FAITHFULNESS_CW),
    _E(CW, "faithfulness", "Zeroing the bottom-ranked tokens (sufficiency) gives the same order: a smaller "
       "perplexity rise is more faithful.",
       (row("faithfulness", "sufficiency (bottom zeroed), signed c"),
        row("faithfulness", "sufficiency (bottom zeroed), |c|")), note=FAITHFULNESS_CW),
    _E(CW, "faithfulness", "Comprehensiveness with the tokens ranked by |c|.",
       (row("faithfulness", "comprehensiveness (top zeroed), |c|"),), note=FAITHFULNESS_CW),
    _E(CW, "faithfulness", "Output-normalised attention sits between value-weighted attention and "
       "contribution weights.",
       reason="not separable: within a head's row (or a query's joint set) it is value-weighted attention "
       "times a constant, so it zeroes the same tokens (unit-tested); the rows judge value-weighted in its "
       "place"),
    _E(CW, "downstream", "The same interventions, scored by accuracy (MMLU, Winogrande, BoolQ), give the "
       "same ordering.",
       (row("downstream", "interventions guided by contribution weights hurt accuracy most"),),
       note="on the multiple-choice tasks that ship offline, with small models that are often at chance "
       "there"),
    _E(CW, "decomposition", "The sink's contribution is set by value geometry, not attention; the tail's by "
       "attention and alignment together.",
       (row("decomposition", "the sink's contribution is driven by value geometry, not attention"),)),
    _E(CW, "sinks", "The sink's values are anti-aligned with the semantic tokens' (negative cosine).",
       (row("sinks", "the sink's projected values are anti-aligned with the other tokens'"),)),
    _E(CW, "sinks", "The output norm is a convex function of the sink rate, smallest at a rate below 1 (the "
       "toy model's a*).", (row("sinks", "output norm is a convex function of the sink rate"),)),
    _E(CW, "sink-norm removal", "Removing the sink's value norm collapses the head outputs into a 'semantic "
       "cone'; noise rises.",
       (row("sink-norm removal", "removing the sink's value norm collapses head outputs into a cone"),)),
    _E(CW, "sink-norm removal", "Removing the sink's value norm raises the perplexity.",
       (row("sink-norm removal", "removing the sink's value norm raises the perplexity"),)),
    _E(CW, "definitions", "Each row of contribution weights sums to 1 exactly.",
       (row("definitions", "each row of contribution weights sums to 1 exactly"),)),
    _E(CW, "definitions", "Contribution weights can be negative (destructive interference).",
       (row("definitions", "contribution weights can be negative (destructive interference)"),)),
    _E(CW, "cost", "Every measure takes O(T^2) memory per head: the T x T x d tensor of weighted terms is "
       "never formed.",
       (row("cost", "contribution weights need O(T^2) memory per head"),
        row("cost", "computing contribution weights without the T x T x d tensor takes less time")),
       note="memory and time against the naive tensor, measured on the machine the notebook ran on"),
    # S–D routing --------------------------------------------------------------------------------------------
    _E(SD, "pretrained", "In pretrained heads filtering (the symmetric part) holds most of the spectral "
       "energy.",
       (row("pretrained", "filtering dominates the spectral budget of pretrained heads"),
        row("pretrained", "filtering dominates at every relative offset of the RoPE models")),
       note=PRETRAINED_SD),
    _E(SD, "pretrained", "Routing (the antisymmetric part) runs at low rank.",
       (row("pretrained", "routing runs at lower rank than filtering"),), note=PRETRAINED_SD),
    _E(SD, "pretrained", "Every head is dynamically unstable (W has an eigenvalue with positive real part).",
       (row("pretrained", "every head is dynamically unstable"),), note=PRETRAINED_SD),
    _E(SD, "pretrained", "The unstable heads are held in check by LayerNorm.",
       (row("S-D", "which holds standard attention's unstable heads in check"),),
       note="read as: without LayerNorm SA degrades, S–D less (paired by size and seed)"),
    _E(SD, "S–D", "Every eigenvalue of L = S - D has real part <= 0.",
       (row("S-D", "every eigenvalue of L = S - D has real part <= 0"),),
       note="true by construction: a sanity check"),
    _E(SD, "S–D", "S–D attention trains without LayerNorm.",
       (row("S-D", "S-D attention trains without LayerNorm"),)),
    _E(SD, "spectral cascade", "Layer 0's routing converges to effective rank 2 (one rotation plane).",
       (row("cascade", "layer 0's routing converges to one rotation plane"),), note=SIZES_SD),
    _E(SD, "spectral cascade", "Middle layers route in 2-3 dimensions.",
       (row("cascade", "middle layers route in 2-3 dimensions"),), note=SIZES_SD),
    _E(SD, "spectral cascade", "The last layers expand (10+ planes, bounded by d_head).",
       (row("cascade", "the last layers expand"),), note=SIZES_SD),
    _E(SD, "scale trend", "The fraction of layers at the minimum rank grows with size (33 % at 18M -> 92 % "
       "at 355M).", (row("scale trend", "the fraction of layers at minimum rank grows with size"),),
       note=SIZES_SD),
    _E(SD, "filtering collapse", "In S–D, truncating D to its mean (one scalar per head) is nearly free "
       "(+0.3 PPL).", (row("collapse", "truncating D to its mean (head space) is nearly free"),)),
    _E(SD, "filtering collapse", "In S–D, removing routing (S = 0) is catastrophic.",
       (row("collapse", "removing routing, S = 0 (head space), is catastrophic"),)),
    _E(SD, "filtering collapse", "Standard attention shows the inverse: truncating filtering is forbidden, "
       "removing routing cheap.", (row("collapse", "the same model-space truncations order oppositely"),)),
    _E(SD, "linearisation", "ELU+1 linear attention in the first 7 layers of a 125M S–D model costs < 5 % "
       "PPL; standard attention collapses by layer 3.",
       (row("linearisation", "tolerates more leading ELU+1 layers than standard attention"),),
       note="at this scale's depths, not 125M"),
    _E(SD, "linearisation", "ELU+1 on the first 4 layers stays within 1.4 % of the baseline.",
       (row("linearisation", "with ELU+1 in the first third of its layers stays close to the"),),
       note="retrained, at this scale's depths"),
    _E(SD, "reallocation", "Head dims set from each layer's measured rank save 47-65 % of the attention "
       "parameters for +3.9 % to +8.4 % PPL.",
       (row("reallocation", "head dims from the measured routing dimensions save attention parameters"),)),
    _E(SD, "reallocation", "The measured allocation is small early and large late (e.g. 8 early, 64 late).",
       (row("reallocation", "the measured allocation grows with depth"),)),
)
# fmt: on


# -- checking the rows against the claims code ---------------------------------------------------------------


def package_dir(paper: str) -> Path:
    return Path(__file__).parent / paper


def claims_sources(paper: str) -> list[Path]:
    """The modules that build ``paper``'s claims rows: ``claims.py``, ``claims_*.py`` and ``rules.py``."""
    folder = package_dir(paper)
    return sorted({*folder.glob("claims*.py"), folder / "rules.py"} & set(folder.glob("*.py")))


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string statements of ``tree`` (docstrings, attribute docstrings): text, not code."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _imported_constants(tree: ast.Module, paper: str) -> set[str]:
    """The module-level string constants that ``tree`` imports by name from a sibling module of ``paper``'s
    package (a figure label defined in the presets, ``SVA_DATA``)."""
    found: set[str] = set()
    prefix = f"attnlab.papers.{paper}."
    for node in tree.body:
        if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(prefix)):
            continue
        source = package_dir(paper) / (node.module.removeprefix(prefix).replace(".", "/") + ".py")
        if not source.is_file():
            continue
        names = {a.name for a in node.names}
        for stmt in ast.parse(source.read_text()).body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []  # fmt: skip
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                    found.add(value.value)
    return found


def literals_of(source: str) -> set[str]:
    """The string literals of the Python ``source``, docstrings left out: adjacent literals as Python joins
    them, an f-string as its literal pieces."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    }


@functools.cache
def code_literals(paper: str) -> frozenset[str]:
    """Every string literal of ``paper``'s claims code (:func:`claims_sources`, :func:`literals_of`), with the
    string constants those modules import by name from the paper's other modules."""
    found: set[str] = set()
    for source in claims_sources(paper):
        text = source.read_text()
        found |= literals_of(text) | _imported_constants(ast.parse(text), paper)
    return frozenset(found)


def unmatched(entry: Entry) -> list[str]:
    """The references of ``entry`` its paper's claims code cannot produce: a figure label that is no string
    literal of the code, a part of the claim text that is in none."""
    literals = code_literals(entry.paper)
    problems = []
    for r in entry.rows:
        if r.figure not in literals:
            problems.append(
                f"{entry.paper} {entry.id}: figure label {r.figure!r} is no literal of the claims code"
            )
        for part in r.parts:
            if not any(part in text for text in literals):
                problems.append(f"{entry.paper} {entry.id}: {part!r} is in no literal of the claims code")
    return problems


# -- the page ------------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows_cell(e: Entry) -> str:
    if not e.rows:
        return "—"
    return "<br>".join(
        f"{_cell(r.figure)}: " + " … ".join(f"“{_cell(p.strip())}”" for p in r.parts) for r in e.rows
    )


def markdown() -> str:
    """The registry as ``docs/coverage.md`` prints it: the counts, then a table per paper."""
    with_rows = [e for e in ENTRIES if e.rows]
    lines = [
        f"{len(ENTRIES)} claims: {len(with_rows)} judged by claims-table rows, "
        f"{len(ENTRIES) - len(with_rows)} with the reason they have none.",
        "",
        "| paper | claims | with rows | with a reason |",
        "|---|---|---|---|",
    ]
    for paper, title in TITLES.items():
        mine = [e for e in ENTRIES if e.paper == paper]
        n_rows = sum(1 for e in mine if e.rows)
        lines.append(f"| {title} | {len(mine)} | {n_rows} | {len(mine) - n_rows} |")
    for paper, title in TITLES.items():
        doc = paper.replace("_", "-")
        lines += [
            "",
            f"## {title}",
            "",
            f"[The paper and this reproduction](papers/{doc}.md) · "
            f"[its claims table at cpu scale](../figures/cpu/{paper}/claims.md)",
            "",
            "| id | the paper's claim | claims-table rows (figure: pieces of the claim text) "
            "| no row because / limits |",
            "|---|---|---|---|",
        ]
        for e in ENTRIES:
            if e.paper == paper:
                why = f"**{_cell(e.reason)}**" if e.reason else _cell(e.note)
                lines.append(f"| {_cell(e.id)} | {_cell(e.claim)} | {_rows_cell(e)} | {why} |")
    return "\n".join(lines) + "\n"


BLOCK_START = "<!-- coverage:start (python -m attnlab.papers.coverage --write docs/coverage.md) -->"
BLOCK_END = "<!-- coverage:end -->"


def rendered(text: str) -> str:
    """``text`` (a Markdown page with the registry's markers) with its block replaced by :func:`markdown`."""
    return replaced(text, BLOCK_START, BLOCK_END, markdown())


def write_docs(path: Path) -> bool:
    """Replace the registry block of ``path`` with :func:`markdown`; True if it changed."""
    return write_block(path, BLOCK_START, BLOCK_END, markdown())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="print (or --write into a Markdown file) the claims' coverage"
    )
    parser.add_argument("--write", type=Path, help="rewrite the coverage block of this Markdown file")
    args = parser.parse_args(argv)
    bad = [f"{e.paper} {e.id}: {e.problem()}" for e in ENTRIES if e.problem()]
    bad += [p for e in ENTRIES for p in unmatched(e)]
    if bad:
        raise SystemExit("\n".join(bad))
    if args.write:
        print(f"{args.write}: {'updated' if write_docs(args.write) else 'unchanged'}")
    else:
        print(markdown())


if __name__ == "__main__":
    main()
