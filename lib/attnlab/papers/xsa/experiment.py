"""Exclusive Self Attention (XSA, arXiv 2603.09078): the experiments of its notebook (presets in
:mod:`attnlab.papers.xsa.presets`, claims in :mod:`attnlab.papers.xsa.claims`).

The notebook ``notebooks/xsa.ipynb`` calls ``configure`` with its parameters, then the methods of the returned
``XSAExperiment``; nothing here is specific to a notebook cell.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import pandas as pd

from attnlab import verified
from attnlab.data import shards
from attnlab.data.tasks import MultipleChoice, choice_logprobs, load_lambada, load_task
from attnlab.data.tokenizer import Tokenizer
from attnlab.errors import CorruptFile, ParameterError
from attnlab.model import GPT
from attnlab.papers.experiment import PaperExperiment, with_steps
from attnlab.papers.xsa import curves, measures, records, subword, variants
from attnlab.papers.xsa.presets import (
    CONTROLS,
    GPU_CORPUS,
    GPU_CORPUS_COMMAND,
    KINDS,
    PAPER_TABLE1,
    PAPER_TABLE2,
    PRESETS,
    Preset,
    paper_gains,
)
from attnlab.papers.xsa.runs import (
    RUN_COLUMNS,
    Grid,
    best_lr,
    count_params,
    final_losses,
    next_lr,
    record_threads,
    threads_file,
    train_in_worker,
)
from attnlab.papers.xsa.subword import FULL_VOCABULARY
from attnlab.papers.xsa.zero_shot import (
    BASELINES,
    GREEDY,
    LAMBADA,
    SAMPLE_SEED,
    SCORINGS,
    ZERO_SHOT_COLUMNS,
    accuracy,
    best_baseline,
    lambada_baselines,
    lambada_hits,
    no_prompt_accuracy,
    sample_items,
    trivial_baselines,
)
from attnlab.runner.params import (
    check_count,
    check_device,
    check_numbers,
    check_scale,
    check_seeds,
    check_subset,
)
from attnlab.runner.stats import binomial_interval
from attnlab.training.cache import (
    RunSpec,
    cached_result,
    check_corpus,
    corpus_parameter,
    corpus_tokenizer,
    corpus_tokens,
    corpus_vocab_size,
    resolve_corpus,
    run_folder,
)
from attnlab.training.launch import launch, nproc_default
from attnlab.training.trainer import TrainResult, resolve_device
from attnlab.training.workers import available_cores, check_workers, run_in_workers

# claims are judged after the computation: imported where used, outside the results' code keys
if TYPE_CHECKING:
    from attnlab.papers.xsa.claims import Evidence
    from attnlab.runner.claims import Claim

PAPER = "xsa"
__all__ = ["PAPER", "KINDS", "CONTROLS", "RUN_COLUMNS", "Grid", "Runs", "XSAExperiment", "best_lr",
           "configure", "next_lr"]  # fmt: skip

Runs = dict[tuple, TrainResult]


@dataclass(frozen=True)
class XSAExperiment(PaperExperiment):
    paper = PAPER
    parameter_names: ClassVar[dict[str, str]] = {".lrs": "lr_grid"}

    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    sizes: tuple[str, ...]
    device: str
    workers: int = 1  # processes that train independent runs at once (``prefetch``)

    def _train(self, spec: RunSpec, label: str) -> TrainResult:
        run = launch(spec, device=self.device, label=label, micro_tokens=self.preset.micro_tokens)
        if not run.cached:
            record_threads(spec, self.torch_device)
        return run

    def prefetch(self, specs: Iterable[tuple[RunSpec, str]]) -> None:
        """Train the runs of ``specs`` (spec, label) that the results cache lacks in ``workers`` processes at
        once, each with an equal share of the CPU threads, so that the calls that follow load them: the runs
        of one figure are independent, and on a CPU several small single-threaded runs use the cores better
        than one run on all of them. With one worker (a GPU, torchrun, or ``workers=1``) or one missing run,
        nothing happens here and the runs train one by one where they are read."""
        missing = {
            spec.key(self.torch_device): (spec, label)
            for spec, label in specs
            if not (run_folder(spec, self.torch_device) / "result.pt").exists()
        }
        jobs = [
            (spec, str(self.torch_device), label, self.preset.micro_tokens)
            for spec, label in missing.values()
        ]
        run_in_workers(train_in_worker, jobs, self.workers, desc="XSA runs")

    def training_threads(self, spec: RunSpec) -> int | None:
        """The torch thread count the run ``spec`` was trained with; None where it is not known (a run trained
        before the count was recorded, or by several processes, or whose record fails its check: said, with
        the file's name)."""
        path = threads_file(spec, self.torch_device)
        if not path.is_file():
            return None
        try:
            threads = json.loads(verified.read_text(path)).get("threads")
        except (CorruptFile, ValueError, AttributeError) as err:
            why = str(err) if isinstance(err, CorruptFile) else f"{path}: not a thread record ({err})"
            print(f"{why}; its run's thread count is taken as unknown")
            return None
        return None if threads is None else int(threads)

    def spec(
        self,
        size: str,
        kind: str,
        seed: int,
        lr: float | None = None,
        seq_len: int | None = None,
        n_sink: int = 0,
        n_kv_head: int | None = None,
        subword: str | None = None,
    ) -> RunSpec:
        """A run of ``size`` (its preset learning rate unless ``lr``). ``seq_len`` (Fig. 5) changes the
        training length with the tokens per batch held fixed; ``n_sink`` (Fig. 6) adds learned sinks. At the
        base length without sinks this is the Fig. 3 run, so the sweeps share it through the cache. The
        variants (:mod:`attnlab.papers.xsa.variants`): ``n_kv_head`` value heads shared by the query heads;
        ``subword``, the shard folder of the subword corpus, trained with its vocabulary (the tokenizer's
        full one while the folder is not built: for planning) and the variants' subword budget."""
        s = self.preset.sizes[size]
        seq = seq_len or s.train.seq_len
        train, corpus, vocab = s.train, self.preset.corpus, s.model.vocab_size
        if subword is not None:
            v = self.preset.variants
            if v is None:
                raise ParameterError(f"scale {self.scale} has no variants: no subword runs")
            built = (Path(subword) / shards.META).is_file()
            corpus = subword
            vocab = corpus_vocab_size(subword) if built else FULL_VOCABULARY[v.tokenizer]
            train = replace(with_steps(train, v.subword_steps), batch_size=v.subword_batch)
        tokens = train.batch_size * train.seq_len
        model = replace(s.model, attn=kind, n_sink=n_sink, block_size=max(s.model.block_size, seq),
                        n_kv_head=n_kv_head, vocab_size=vocab)  # fmt: skip
        train = replace(train, seed=seed, lr=lr or train.lr, seq_len=seq, batch_size=max(1, tokens // seq))
        return RunSpec(model, train, corpus)

    def kinds(self, size: str) -> tuple[str, ...]:
        """SA and XSA, and XSA's controls at the preset's control sizes."""
        return KINDS + (CONTROLS if size in self.preset.control_sizes else ())

    # Table 1 ------------------------------------------------------------------------------------------

    def config_table(self) -> pd.DataFrame:
        """Table 1: each size of this scale beside the paper's three models (parameters without embeddings;
        tokens = steps x batch x context)."""
        ours = [(name, "this scale", self.preset.sizes[name]) for name in self.sizes]
        paper = [(name, "paper", size) for name, size in PAPER_TABLE1.items()]
        rows = []
        for name, source, size in ours + paper:
            m, t = size.model, size.train
            rows.append({
                "model": name, "source": source, "layers": m.n_layer, "d_model": m.d_model,
                "heads": m.n_head, "head_dim": m.head_dim, "vocab": m.vocab_size, "context": t.seq_len,
                "batch": t.batch_size, "steps": t.steps, "lr": t.lr, "params": count_params(m),
                "tokens": t.steps * t.batch_size * t.seq_len,
            })  # fmt: skip
        return pd.DataFrame(rows).set_index("model")

    def check_data(self) -> None:
        """The corpus exists, with no more token ids than the models' vocabulary. The gpu scale's FineWeb
        bytes, when missing, stop everything with the command that builds them and the offline
        alternative's cost in epochs."""
        corpus = self.preset.corpus
        if corpus == resolve_corpus(GPU_CORPUS) and not (Path(corpus) / shards.META).is_file():
            raise ParameterError(
                f"corpus {corpus!r} (FineWeb in byte tokens, this scale's corpus) is missing. Build it once "
                f"with {GPU_CORPUS_COMMAND} (needs the Hugging Face hub), or train offline with "
                f"-p corpus=shakespeare: {self._offline_epochs('shakespeare')}"
            )
        sizes = [self.preset.sizes[name] for name in self._tuned_sizes()]
        check_corpus(corpus, min(s.model.vocab_size for s in sizes))

    def _offline_epochs(self, corpus: str) -> str:
        """How many epochs of ``corpus`` this scale's longest run would train on."""
        most = max(s.train.steps * s.train.batch_size * s.train.seq_len for s in self.preset.sizes.values())
        try:
            have = len(corpus_tokens(corpus)["train"])
        except Exception as err:  # noqa: BLE001 (the corpus may not be fetched yet: say so, do not fail here)
            return f"{most:,} tokens a run (the size of {corpus} unknown here: {type(err).__name__})"
        return f"{most / have:.0f} epochs of its {have:,} train bytes a run (memorisation, not pretraining)"

    def _tuned_sizes(self) -> list[str]:
        """The sizes this notebook trains: the chosen ones, the sweeps' and the variants' base sizes, in
        preset order."""
        wanted = set(self.sizes) | {self.preset.sweep.size}
        if self.preset.variants is not None:
            wanted.add(self.preset.variants.size)
        return [name for name in self.preset.sizes if name in wanted]

    # Fig. 4: learning rates, searched per size ----------------------------------------------------------

    def _final(self, spec: RunSpec, label: str) -> dict[str, float]:
        return final_losses(self._train(spec, label))

    def lr_grid(self, size: str) -> Grid:
        """Fig. 4 and the tuned baseline: SA and XSA at every rate of ``size``'s grid with its first
        ``grid_seeds`` seeds; while SA's best rate (mean over those seeds) is at an edge, the grid grows one
        geometric step past it, at most ``lr_extensions`` times. Without a grid: the preset's rate alone."""
        s = self.preset.sizes[size]
        if not s.lrs:
            return Grid(size, pd.DataFrame(columns=["kind", "seed", "lr", "train", "validation"]),
                        s.train.lr, (), False)  # fmt: skip
        lrs = list(s.lrs)
        added: list[float] = []
        while True:
            runs = self._grid_runs(size, lrs)
            self.prefetch(runs.values())
            rows = [
                {"kind": kind, "seed": seed, "lr": lr, **self._final(*runs[lr, seed, kind])}
                for lr, seed, kind in runs
            ]
            frame = pd.DataFrame(rows)
            best = best_lr(frame)
            step = next_lr(lrs, best)
            if step is None or len(added) == self.preset.lr_extensions:
                return Grid(size, frame, best, tuple(added), step is not None)
            lrs, added = sorted([*lrs, step]), [*added, step]

    def _grid_runs(
        self, size: str, lrs: Sequence[float]
    ) -> dict[tuple[float, int, str], tuple[RunSpec, str]]:
        """The grid's runs of ``size`` at ``lrs``: (lr, seed, kind) -> (spec, progress label)."""
        seeds = self.seeds[: self.preset.sizes[size].grid_seeds]
        return {
            (lr, seed, kind): (self.spec(size, kind, seed, lr), f"{size} lr={lr:g} {kind.upper()} s{seed}")
            for lr in lrs for seed in seeds for kind in KINDS
        }  # fmt: skip

    def tune(self) -> dict[str, Grid]:
        """Every trained size's learning-rate search (:meth:`lr_grid`); the preset's grids of all sizes train
        together first (:meth:`prefetch`), then each search extends its own."""
        self.check_data()
        sizes = self._tuned_sizes()
        self.prefetch(
            run for size in sizes for run in self._grid_runs(size, self.preset.sizes[size].lrs).values()
        )
        return {size: self.lr_grid(size) for size in sizes}

    @staticmethod
    def grid_table(grids: dict[str, Grid]) -> pd.DataFrame:
        """The searched grids together (size, kind, seed, lr, train, validation)."""
        frames = [g.frame.assign(size=g.size) for g in grids.values() if len(g.frame)]
        return pd.concat(frames, ignore_index=True)

    # Table 1 and Fig. 3 -------------------------------------------------------------------------------

    @staticmethod
    def _best(grids: dict[str, Grid] | None, size: str) -> float | None:
        """``size``'s best SA learning rate; None (the preset's rate) without a search."""
        return grids[size].best if grids else None

    def train_all(self, grids: dict[str, Grid] | None = None) -> Runs:
        """Train (or load from the results cache) every size and seed at the size's best SA learning rate
        (without ``grids``: the preset's rate): SA and XSA, and XSA's controls at the control sizes
        (Fig. 3)."""
        self.check_data()
        runs = {
            (size, kind, seed): (
                self.spec(size, kind, seed, self._best(grids, size)),
                f"{size} {kind.upper()} seed {seed}",
            )
            for size in self.sizes
            for seed in self.seeds
            for kind in self.kinds(size)
        }
        self.prefetch(runs.values())
        return {name: self._train(*run) for name, run in runs.items()}

    # Fig. 3's curves (attnlab.papers.xsa.curves)
    loss_curves = staticmethod(curves.loss_curves)
    final_losses = staticmethod(curves.final_losses)
    gap_curves = staticmethod(curves.gap_curves)

    def warmup_steps(self) -> dict[str, int]:
        """Each trained size's warm-up steps: the gap over training is read well after them
        (:func:`attnlab.papers.xsa.claims.early_and_final`)."""
        return {size: self.preset.sizes[size].train.warmup_steps for size in self.sizes}

    def results_cached(self, runs: Runs) -> str:
        n = sum(r.cached for r in runs.values())
        return f"{n} of {len(runs)} training runs were loaded from the results cache."

    # Figs. 1, 2, 5, 6: measured on the trained models and blocks (attnlab.papers.xsa.measures) ----------

    layer_diagnostics = measures.layer_diagnostics
    block_costs = measures.block_costs
    seq_len_sweep = measures.seq_len_sweep
    sink_sweep = measures.sink_sweep
    sink_attention = measures.sink_attention

    # Variants (not in the paper): subword tokens, grouped-query attention ----------------------------------

    def variant_runs(self, grids: dict[str, Grid]) -> pd.DataFrame:
        """The variants' runs (:func:`attnlab.papers.xsa.variants.variant_runs`): SA, XSA and both controls
        in subword tokens, SA and XSA with grouped-query attention, one row per run with its final losses."""
        return variants.variant_runs(self, grids)

    def subword_note(self) -> str:
        """What the subword corpus holds (empty without it)."""
        v = self.preset.variants
        if v is None or not subword.built(self.preset.corpus, v.tokenizer):
            return ""
        return subword.describe(str(subword.folder(self.preset.corpus, v.tokenizer)))

    def _variant_settings(self) -> dict[str, str]:
        """The variants' settings in words, for the claims rows (empty without variants)."""
        v = self.preset.variants
        if v is None:
            return {}
        heads = self.preset.sizes[v.size].model.n_head
        return {
            variants.SUBWORD: f"{v.size}; {self.subword_note() or v.tokenizer + ' subword tokens'}",
            variants.GROUPED: f"{v.size}; grouped-query attention, {heads} query heads sharing {v.n_kv_head} "
            "value head(s)",
        }

    # Every run (attnlab.papers.xsa.records) ----------------------------------------------------------------

    tokenizer_name = records.tokenizer_name
    size_parameters = records.size_parameters
    run_table = records.run_table
    save_run_table = records.save_run_table
    planned_runs = records.planned_runs

    # Table 2 ------------------------------------------------------------------------------------------

    def zero_shot(self, runs: Runs, grids: dict[str, Grid] | None = None) -> pd.DataFrame:
        """Table 2: zero-shot accuracy of the deepest size's SA and XSA models on the paper's tasks
        (``preset.tasks``: seven multiple-choice sets and LAMBADA; a fixed random sample of ``task_limit``
        items each, :func:`~attnlab.papers.xsa.zero_shot.sample_items`), the multiple-choice sets under each
        scoring of :data:`~attnlab.papers.xsa.zero_shot.SCORINGS`, LAMBADA by greedy continuation
        (:func:`~attnlab.papers.xsa.zero_shot.lambada_hits`, scoring ``greedy``), cached per trained run, task
        and item sample (``grids`` as for :meth:`train_all`). A row per (task, kind, seed, scoring): the
        accuracy, the items answered correctly (accuracy x n, rounded: ties earn fractional credit) and the
        task's trivial baselines (:func:`~attnlab.papers.xsa.zero_shot.trivial_baselines`; ``no_prompt``: this
        model's preferred answer without the prompt; LAMBADA's:
        :func:`~attnlab.papers.xsa.zero_shot.lambada_baselines`, NaN where one does not apply)."""
        size = self.sizes[-1]
        rows = []
        for task in self.preset.tasks:
            if task == LAMBADA:
                pairs = sample_items(load_lambada(), self.preset.task_limit)
                baselines = {**lambada_baselines([word for _, word in pairs]), "no_prompt": math.nan}
            else:
                items = sample_items(load_task(task), self.preset.task_limit)
                baselines = trivial_baselines(items)
            for kind in KINDS:
                for seed in self.seeds:
                    spec = self.spec(size, kind, seed, self._best(grids, size))
                    model = runs[size, kind, seed].model
                    if task == LAMBADA:
                        result = self._lambada_scores(pairs, model, spec)
                        accuracies, no_prompt = {GREEDY: result["accuracy"]}, math.nan
                    else:
                        result = self._zero_shot_scores(task, items, model, spec)
                        accuracies, no_prompt = result["accuracy"], result["no_prompt"]
                    for scoring, acc in accuracies.items():
                        rows.append({"task": task, "n": result["n"], "kind": kind, "seed": seed,
                                     "scoring": scoring, "accuracy": acc, "correct": round(acc * result["n"]),
                                     **baselines, "no_prompt": no_prompt})  # fmt: skip
        return pd.DataFrame(rows, columns=list(ZERO_SHOT_COLUMNS))

    def _zero_shot_key(self, task: str, spec: RunSpec, tokenizer: Tokenizer) -> dict:
        return {"run": spec.key(self.torch_device), "task": task, "limit": self.preset.task_limit,
                "sample_seed": SAMPLE_SEED, "tokenizer": tokenizer.name}  # fmt: skip

    def _zero_shot_scores(self, task: str, items: list[MultipleChoice], model: GPT, spec: RunSpec) -> dict:
        """The scores on ``task`` of ``model`` (trained as ``spec``), from the results cache: every choice's
        summed log-likelihood with and without the prompt, the accuracy under each scoring, and the no-prompt
        baseline."""
        tokenizer = corpus_tokenizer(self.preset.corpus)

        def compute() -> dict:
            conditional = choice_logprobs(model, items, tokenizer=tokenizer)
            unconditional = _unconditional_logprobs(model, items, tokenizer)
            return {"n": len(items), "conditional": conditional, "unconditional": unconditional,
                    "accuracy": {s: accuracy(items, conditional, unconditional, s) for s in SCORINGS},
                    "no_prompt": no_prompt_accuracy(items, unconditional)}  # fmt: skip

        return cached_result("xsa_zero_shot_scores", self._zero_shot_key(task, spec, tokenizer), compute)[0]

    def _lambada_scores(self, items: list[tuple[str, str]], model: GPT, spec: RunSpec) -> dict:
        """LAMBADA's greedy hits of ``model`` (trained as ``spec``) per item and their share, from the results
        cache."""
        tokenizer = corpus_tokenizer(self.preset.corpus)

        def compute() -> dict:
            hits = lambada_hits(model, items, tokenizer)
            return {"n": len(items), "hits": hits, "accuracy": statistics.fmean(hits)}

        key = self._zero_shot_key(LAMBADA, spec, tokenizer)
        return cached_result("xsa_zero_shot_lambada", key, compute)[0]

    @staticmethod
    def zero_shot_table(zero_shot: pd.DataFrame) -> pd.DataFrame:
        """Table 2 per task, scoring and kind: mean accuracy over seeds, its 95% Wilson interval (items
        answered correctly, seed mean), the task's chance level and its best trivial baseline (name and
        accuracy; the no-prompt baseline as a seed mean); beside them the task's gain, XSA - SA accuracy in
        points (seed mean, ours under that scoring, the same on both kinds' rows), and the paper's gain on
        the task at each of its sizes (``paper_gain_<size>``, points, :data:`PAPER_TABLE2`)."""
        rows = []
        for (task, scoring, kind), g in zero_shot.groupby(["task", "scoring", "kind"], sort=False):
            n = int(g["n"].iloc[0])
            est = binomial_interval(round(g["correct"].mean()), n)
            name, value = best_baseline({b: float(g[b].mean()) for b in BASELINES})
            by_kind = zero_shot[(zero_shot["task"] == task) & (zero_shot["scoring"] == scoring)]
            mean = by_kind.groupby("kind")["accuracy"].mean()
            gain = 100 * (mean["xsa"] - mean["sa"]) if {"sa", "xsa"} <= set(mean.index) else math.nan
            paper = {f"paper_gain_{size}": gain for size, gain in paper_gains(str(task)).items()}
            rows.append({"task": task, "scoring": scoring, "kind": kind, "n": n,
                         "chance": g["chance"].iloc[0], "baseline": name, "baseline_accuracy": value,
                         "accuracy": est.mean, "low": est.low, "high": est.high, "gain_points": gain,
                         **paper})  # fmt: skip
        paper_columns = [f"paper_gain_{size}" for size in PAPER_TABLE2]  # NaN: not a task of the paper's
        columns = ["task", "scoring", "kind", "n", "chance", "baseline", "baseline_accuracy", "accuracy",
                   "low", "high", "gain_points", *paper_columns]  # fmt: skip
        return pd.DataFrame(rows, columns=columns).set_index(["task", "scoring", "kind"])

    # Claims -------------------------------------------------------------------------------------------

    def claims(self, evidence: Evidence) -> list[Claim]:
        """Every claim of the paper, with a verdict computed from this run's measurements, gathered by name in
        ``evidence`` (see :mod:`attnlab.papers.xsa.claims`), to which this adds the run's settings: its sizes,
        the sizes with controls, each size's warm-up steps and parameters, the variants' settings in words and
        the device Fig. 2 was timed on."""
        from attnlab.papers.xsa.claims import claims as xsa_claims  # judged after computing

        settings = replace(
            evidence,
            sizes=tuple(self.sizes),
            control_sizes=tuple(s for s in self.sizes if s in self.preset.control_sizes),
            warmup_steps=self.warmup_steps(),
            size_parameters=self.size_parameters(),
            variant_settings=self._variant_settings(),
            device=self.torch_device.type,
        )
        return xsa_claims(settings)


def _unconditional_logprobs(
    model: GPT, items: list[MultipleChoice], tokenizer: Tokenizer | None
) -> list[list[float]]:
    """Each choice's summed log-likelihood without the prompt (after the newline that
    :func:`~attnlab.data.tasks.choice_logprobs` puts before every context), computed once per distinct set of
    choices."""
    distinct = list(dict.fromkeys(item.choices for item in items))
    scored = choice_logprobs(
        model, [MultipleChoice("", choices, 0) for choices in distinct], tokenizer=tokenizer
    )
    by_choices = dict(zip(distinct, scored, strict=True))
    return [by_choices[item.choices] for item in items]


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    sizes: list[str] | tuple[str, ...] = (),
    corpus: str = "",
    lr_grid: dict[str, list[float]] | None = None,
    steps: int = 0,
    workers: int = 0,
) -> XSAExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``corpus``: a corpus
    name or a folder of token shards (``python -m attnlab.data.shards``; a relative folder is looked up in the
    data folder too); empty: the preset's, FineWeb in GPT-2 tokens at paper scale. ``lr_grid``: size name ->
    its learning-rate grid (Fig. 4), replacing the preset's grid of each size named (an empty list: the
    preset's); the search still extends a winning edge ``lr_extensions`` times. ``steps``: training steps of
    every size, warmup and evaluations scaled in proportion; 0: the preset's. ``workers``: processes that
    train a figure's independent runs at once on a CPU (each with an equal share of the threads); 0: one
    per available core on a CPU, one on a GPU or under torchrun."""
    scale = check_scale(scale)
    preset = PRESETS[scale]
    lr_grid = {} if lr_grid is None else lr_grid
    if not isinstance(lr_grid, dict) or not set(lr_grid) <= set(preset.sizes):
        raise ParameterError(
            f"lr_grid must map size names of scale {scale} ({list(preset.sizes)}) to learning-rate lists; "
            f"got {lr_grid!r}"
        )
    steps = check_count("steps", steps)
    workers = check_workers(workers)
    device = check_device(device)
    if workers == 0:
        on_cpu = resolve_device(device).type == "cpu" and nproc_default() == 1
        workers = available_cores() if on_cpu else 1
    tuned = {
        name: replace(
            size,
            lrs=check_numbers(f"lr_grid[{name!r}]", lr_grid.get(name, []), size.lrs, high=1.0),
            train=with_steps(size.train, steps or size.train.steps),
        )
        for name, size in preset.sizes.items()
    }
    preset = replace(preset, corpus=corpus_parameter(corpus, preset.corpus), sizes=tuned)
    return XSAExperiment(
        scale=scale,
        preset=preset,
        seeds=check_seeds(seeds, preset.seeds),
        sizes=check_subset("sizes", sizes, preset.sizes),
        device=device,
        workers=workers,
    )
