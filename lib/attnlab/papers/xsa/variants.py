"""XSA beyond the paper's setting (arXiv 2603.09078; not in the paper; docs/papers/xsa.md "Variants"): the
preset's :class:`~attnlab.papers.xsa.presets.Variants` size retrained

- with **subword tokens** (:mod:`attnlab.papers.xsa.subword`: the same corpus in SmolLM2's BPE), SA, XSA and
  both controls, so that XSA's gain and its specificity to the own value are seen beyond byte tokens (a
  byte's value is shared by every copy of that byte, a subword's far less);
- with **grouped-query attention** (``n_kv_head`` < ``n_head``), SA and XSA with the same grouping: the form
  of Alg. 1 where one normalised value serves several query heads (``attnlab.attention.exclusive``).

Each at the size's best SA learning rate of its byte-token grid (Fig. 4; neither variant has a grid of its
own), with the first ``Variants.seeds`` seeds, the same seeds as Fig. 3's runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from attnlab.data import corpora
from attnlab.papers.xsa.presets import CONTROLS, GROUPED, KINDS, SUBWORD
from attnlab.papers.xsa.runs import final_losses
from attnlab.papers.xsa.subword import subword_corpus
from attnlab.training.cache import RunSpec

if TYPE_CHECKING:
    from attnlab.papers.xsa.experiment import XSAExperiment
    from attnlab.papers.xsa.runs import Grid

__all__ = ["GROUPED", "SUBWORD", "VARIANT_COLUMNS", "variant_finals", "variant_runs", "variant_specs"]
#: The columns of :func:`variant_runs`' table.
VARIANT_COLUMNS = ("setting", "size", "kind", "seed", "lr", "n_kv_head", "tokenizer", "train", "validation")


def variant_specs(
    exp: XSAExperiment, lr: float | None, subword: str | None
) -> dict[tuple[str, str, int], tuple[RunSpec, str]]:
    """The variants' runs of ``exp``: (setting, kind, seed) -> (spec, progress label), at ``lr`` (None: the
    preset's rate); the subword runs only with ``subword``, the shard folder of the subword corpus (or where
    it will be: an unbuilt folder is planned with the tokenizer's full vocabulary). Empty without variants."""
    v = exp.preset.variants
    if v is None:
        return {}
    seeds = exp.seeds[: v.seeds]
    out: dict[tuple[str, str, int], tuple[RunSpec, str]] = {}
    if subword is not None:
        for seed in seeds:
            for kind in KINDS + CONTROLS:
                spec = exp.spec(v.size, kind, seed, lr, subword=subword)
                out[SUBWORD, kind, seed] = (spec, f"{v.size} {v.tokenizer} tokens {kind.upper()} s{seed}")
    for seed in seeds:
        for kind in KINDS:
            spec = exp.spec(v.size, kind, seed, lr, n_kv_head=v.n_kv_head)
            out[GROUPED, kind, seed] = (spec, f"{v.size} {v.n_kv_head} KV heads {kind.upper()} s{seed}")
    return out


def subword_folder(exp: XSAExperiment) -> str | None:
    """The subword corpus of ``exp``'s variants, built once (:func:`~attnlab.papers.xsa.subword.
    subword_corpus`); None without variants, or when the preset's corpus is a shard folder (it has no text to
    cut into other tokens: said)."""
    v = exp.preset.variants
    if v is None:
        return None
    if exp.preset.corpus not in corpora.corpus_names():
        print(f"subword variant skipped: corpus {exp.preset.corpus} is a shard folder, not a named corpus")
        return None
    return subword_corpus(exp.preset.corpus, v.tokenizer)


def variant_runs(exp: XSAExperiment, grids: dict[str, Grid]) -> pd.DataFrame:
    """Train (or load) every variant run of ``exp`` at its size's best SA rate (``grids``) and return one
    row per run: setting (:data:`SUBWORD`, :data:`GROUPED`), size, kind, seed, lr, n_kv_head, tokenizer,
    and its final train and validation loss (nats per token of its own tokens)."""
    v = exp.preset.variants
    if v is None:
        return pd.DataFrame(columns=list(VARIANT_COLUMNS))
    runs = variant_specs(exp, grids[v.size].best, subword_folder(exp))
    exp.prefetch(runs.values())
    rows = []
    for (setting, kind, seed), (spec, label) in runs.items():
        rows.append({
            "setting": setting, "size": v.size, "kind": kind, "seed": seed, "lr": spec.train.lr,
            "n_kv_head": spec.model.kv_heads, "tokenizer": exp.tokenizer_name(spec),
            **final_losses(exp._train(spec, label)),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def variant_finals(variants: pd.DataFrame) -> pd.DataFrame:
    """The variants' final losses shaped as ``XSAExperiment.final_losses``' (index size, seed; a column per
    (split, kind)), the size named with its setting, for ``plots.paired_gaps``."""
    named = variants.assign(size=variants["size"] + " " + variants["setting"])
    tidy = named.melt(id_vars=["size", "kind", "seed"], value_vars=["train", "validation"], var_name="split")
    return tidy.pivot_table(index=["size", "seed"], columns=["split", "kind"], values="value")
