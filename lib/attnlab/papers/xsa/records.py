"""XSA's record of its runs (arXiv 2603.09078; the notebook's experiment is
:mod:`attnlab.papers.xsa.experiment`, whose methods of the same names these are): the table of every training
run (``runs.csv``), the runs a scale plans to train (for :mod:`attnlab.runner.plan`), and what each run reads
and how large each size is."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from attnlab.data import shards
from attnlab.data.corpora import corpus_names
from attnlab.papers.xsa import subword, variants
from attnlab.papers.xsa.presets import KINDS
from attnlab.papers.xsa.runs import RUN_COLUMNS, RUN_IDENTITY, count_params, final_losses
from attnlab.runner.plan import PlannedRun
from attnlab.training.cache import RunSpec

if TYPE_CHECKING:
    from attnlab.papers.xsa.experiment import Runs, XSAExperiment
    from attnlab.papers.xsa.runs import Grid


def tokenizer_name(exp: XSAExperiment, spec: RunSpec) -> str:
    """The tokens the run ``spec`` reads: "byte" for a named corpus, else its shard folder's tokenizer (the
    subword corpus's: "<tokenizer>-compact", :mod:`attnlab.papers.xsa.subword`)."""
    if spec.corpus in corpus_names():
        return "byte"
    return str(shards.read_meta(Path(spec.corpus))["tokenizer"])


def size_parameters(exp: XSAExperiment) -> dict[str, int]:
    """Each trained size's parameters without the embeddings (the gain's trend over size)."""
    return {size: count_params(exp.preset.sizes[size].model) for size in exp.sizes}


def run_row(exp: XSAExperiment, size: str, spec: RunSpec, losses: Mapping[str, float]) -> dict:
    """A row of :meth:`run_table`: what identifies the run ``spec``, its final losses, its threads."""
    return {
        "size": size, "kind": spec.model.attn, "seed": spec.train.seed, "lr": spec.train.lr,
        "seq_len": spec.train.seq_len, "n_sink": spec.model.n_sink, "n_kv_head": spec.model.kv_heads,
        "tokenizer": exp.tokenizer_name(spec), "steps": spec.train.steps, "train": float(losses["train"]),
        "validation": float(losses["validation"]), "threads": exp.training_threads(spec),
    }  # fmt: skip


def run_table(
    exp: XSAExperiment,
    grids: dict[str, Grid],
    runs: Runs,
    seq_sweep: pd.DataFrame,
    sink_sweep: pd.DataFrame,
    variant_runs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every training run of the notebook once (the grids of Fig. 4, Fig. 3 and its controls, the sweeps
    of Figs. 5-6, the variants; a run shared between them appears once): size, kind, seed, lr, seq_len,
    n_sink, n_kv_head, tokenizer, steps, the final train and validation loss
    (:func:`~attnlab.papers.xsa.runs.final_losses`) and the torch thread count it was trained with (empty
    where unknown), so that one retrained seed can be checked against it (``runs.csv``)."""
    rows = []
    for size, grid in grids.items():
        for r in grid.frame.to_dict("records"):
            rows.append(run_row(exp, size, exp.spec(size, r["kind"], r["seed"], r["lr"]), r))
    for (size, kind, seed), run in runs.items():
        spec = exp.spec(size, kind, seed, exp._best(grids, size))
        rows.append(run_row(exp, size, spec, final_losses(run)))
    sw = exp.preset.sweep
    for frame, axis in ((seq_sweep, "seq_len"), (sink_sweep, "n_sink")):
        for r in frame.to_dict("records"):
            spec = exp.spec(sw.size, r["kind"], r["seed"], grids[sw.size].best, **{axis: r[axis]})
            rows.append(run_row(exp, sw.size, spec, r))
    if variant_runs is not None and len(variant_runs):
        v = exp.preset.variants
        assert v is not None  # variant runs come from the preset's variants
        specs = variants.variant_specs(exp, grids[v.size].best, variants.subword_folder(exp))
        for r in variant_runs.to_dict("records"):
            spec, _ = specs[r["setting"], r["kind"], r["seed"]]
            rows.append(run_row(exp, v.size, spec, r))
    table = pd.DataFrame(rows, columns=list(RUN_COLUMNS)).astype({"threads": "Int64"})
    table = table.drop_duplicates(RUN_IDENTITY).sort_values(RUN_IDENTITY, kind="stable")
    return table.reset_index(drop=True)


def save_run_table(exp: XSAExperiment, table: pd.DataFrame) -> Path:
    """Write :meth:`run_table` to ``figures/<scale>/xsa/runs.csv`` (losses at full precision)."""
    exp.figures.mkdir(parents=True, exist_ok=True)
    path = exp.figures / "runs.csv"
    table.to_csv(path, index=False)
    return path


def planned_runs(exp: XSAExperiment) -> dict[str, PlannedRun]:
    """Every training run of the notebook (Figs. 3-6 and the variants), for :mod:`attnlab.runner.plan`:
    the preset's grids (not the extensions a search may add), and Figs. 3, 5, 6 and the variants at the
    preset's rate standing in for the best one (the cost does not depend on it); the subword runs with the
    tokenizer's full vocabulary until their corpus is built (nothing is built here)."""
    specs: dict[str, RunSpec] = {}
    for size in exp._tuned_sizes():
        s = exp.preset.sizes[size]
        specs |= {
            f"{size} lr={lr:g} {kind} seed {seed}": exp.spec(size, kind, seed, lr)
            for lr in s.lrs for seed in exp.seeds[: s.grid_seeds] for kind in KINDS
        }  # fmt: skip
    for size in exp.sizes:
        specs |= {
            f"{size} {kind} seed {seed}": exp.spec(size, kind, seed)
            for seed in exp.seeds for kind in exp.kinds(size)
        }  # fmt: skip
    sw = exp.preset.sweep
    for seed in exp.seeds[: sw.seeds]:
        for kind in KINDS:
            specs |= {f"seq_len={x} {kind} seed {seed}": exp.spec(sw.size, kind, seed, seq_len=x)
                      for x in sw.seq_lens}  # fmt: skip
            specs |= {f"n_sink={x} {kind} seed {seed}": exp.spec(sw.size, kind, seed, n_sink=x)
                      for x in sw.sinks}  # fmt: skip
    v = exp.preset.variants
    named = v is not None and exp.preset.corpus in corpus_names()
    folder = str(subword.folder(exp.preset.corpus, v.tokenizer)) if v is not None and named else None
    specs |= {label: spec for spec, label in variants.variant_specs(exp, None, folder).values()}
    return {label: PlannedRun.from_spec(spec) for label, spec in specs.items()}
