"""Faster query-key learning sharpens attention (arXiv 2608.06776): the experiment of its notebook, the parts
composed (the scale presets are in ``presets``, the claims table in ``claims``).

The notebook ``notebooks/qk_speed.ipynb`` calls ``configure`` with its parameters, then the methods of the
returned ``QKSpeedExperiment``, each a part's: the synthetic circuits (Fig. 2 and the eta_QK / eta_OV ratio
sweep: ``circuit_runs``, their tables ``attention_tables``; Fig. 3: ``fixed_attention_runs``), the reduced
dynamics (Fig. 4: ``dynamics_runs``) and the text tasks (``sva_runs``, ``squad_runs``, what they share and
HateXplain: ``real_data``). Every result goes through ``attnlab.training.cache.cached_result``, keyed by the
code of the part that computes it: a re-run with the same settings, data and code loads the trained weights
instead of training them. Settings are those of ``docs/papers/qk-speed.md`` (read from the authors'
notebooks); where a scale departs from them (a larger learning rate with proportionally fewer SGD steps at
``cpu`` scale, fewer items) the preset says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import pandas as pd

from attnlab.data import artifacts, olmo_eval
from attnlab.errors import ParameterError
from attnlab.papers.experiment import PaperExperiment
from attnlab.papers.qk_speed import attention_tables, dynamics_runs, real_data
from attnlab.papers.qk_speed.circuit_configs import CircuitJobs
from attnlab.papers.qk_speed.circuit_runs import CircuitRuns
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.dynamics import Simulation
from attnlab.papers.qk_speed.fixed_attention_runs import FixedAttentionRuns
from attnlab.papers.qk_speed.presets import PRESETS, Preset
from attnlab.papers.qk_speed.real_data import Variant
from attnlab.papers.qk_speed.squad_runs import SQUAD_PROTOCOLS as SQUAD_PROTOCOLS  # re-exported
from attnlab.papers.qk_speed.squad_runs import SquadRuns
from attnlab.papers.qk_speed.sva_runs import SVARuns
from attnlab.papers.qk_speed.text_tasks import ClassificationData, QABatchData
from attnlab.runner.params import (
    check_count,
    check_device,
    check_number,
    check_numbers,
    check_scale,
    check_seeds,
)
from attnlab.runner.plan import PlannedRun
from attnlab.training.trainer import TrainConfig
from attnlab.training.workers import available_cores, check_workers

# claims are judged after the computation: imported where used, outside the results' code keys
if TYPE_CHECKING:
    from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing
    from attnlab.runner.claims import Claim

PAPER = "qk_speed"


@dataclass(frozen=True)
class QKSpeedExperiment(PaperExperiment):
    """The notebook's experiment: its parameters, and its parts built from them (a ``replace``d copy builds
    its own), which count their cached results in one ``cache``."""

    paper = PAPER
    parameter_names: ClassVar[dict[str, str]] = {
        "circuits.fast_fafo": "fast_ratio",
        "circuits.max_epochs": "epochs",
        "sva.epochs": "sva_epochs",
    }

    scale: str
    preset: Preset
    seeds: tuple[int, ...]
    device: str
    workers: int = 1  # processes that train independent runs at once (Fig. 3 on the CPU; SVA, SQuAD on a CPU)
    cache: CountedCache = field(default_factory=CountedCache, compare=False)

    @cached_property
    def circuit_runs(self) -> CircuitRuns:
        """Fig. 2 and the ratio sweep."""
        p = self.preset
        jobs = CircuitJobs(p.circuits, self.seeds, p.ratio_seeds, self.torch_device.type)
        return CircuitRuns(jobs, self.torch_device, self.cache)

    @cached_property
    def fixed_attention(self) -> FixedAttentionRuns:
        """Fig. 3, for every synthetic seed."""
        workers = self.workers if self.preset.parallel else 1
        return FixedAttentionRuns(self.preset.fixed, self.seeds, workers, self.cache)

    @property
    def text_workers(self) -> int:
        """The processes that train a protocol's missing SVA or SQuAD runs at once: ``workers`` on a CPU,
        where the preset trains in parallel (``Preset.parallel``); 1 on a GPU, which one run keeps busy."""
        on_cpu = self.torch_device.type == "cpu"
        return self.workers if self.preset.parallel and on_cpu else 1

    @cached_property
    def sva_runs(self) -> SVARuns:
        """Subject-verb agreement."""
        p = self.preset
        return SVARuns(p.sva, p.sva_seeds, self.torch_device, self.cache, self.text_workers)

    @cached_property
    def squad_runs(self) -> SquadRuns:
        """SQuAD."""
        p = self.preset
        return SquadRuns(p.squad, p.squad_seeds, self.torch_device, self.cache, self.text_workers)

    def cache_summary(self) -> str:
        """How many of the results so far were loaded from the results cache (``CountedCache.summary``)."""
        return self.cache.summary()

    def circuit_steps(self) -> int:
        """SGD steps of the circuit and fixed-attention runs (Figs. 2-3, the ratio sweep), distinct runs once,
        every circuit run counted to ``max_epochs`` (an upper bound: they stop at ``loss_stop``), for
        :mod:`attnlab.runner.plan`. The fixed-attention runs train on the CPU, one core per run, ``workers``
        at a time; the circuit runs all at once (``train_circuits``), a circuit's step costing far less."""
        return self.circuit_runs.steps() + self.fixed_attention.steps()

    def circuit_configs(self) -> list[dict]:
        """The distinct circuit runs of Fig. 2 and the ratio sweep (``CircuitJobs.configs``)."""
        return self.circuit_runs.jobs.configs()

    def circuit_stacks(self) -> list[tuple[int, int]]:
        """The batched program that trains the circuit runs (``CircuitRuns.stacks``), for
        :mod:`attnlab.runner.plan`."""
        return self.circuit_runs.stacks()

    def planned_runs(self, here: bool = False) -> dict[str, PlannedRun]:
        """The GPT training runs of the notebook (SVA's, then SQuAD's), for :mod:`attnlab.runner.plan`, at an
        upper bound of their tokens. The circuit and fixed-attention runs are tiny models, counted apart
        (``circuit_stacks``, ``circuit_steps``). ``here``: only the runs this machine can train, none of
        SQuAD's where the olmo-eval artifact cannot be had (``artifacts.available``); ``make plan`` sizes
        every run."""
        squad = self.squad_runs.planned_runs()
        if here and not artifacts.available(olmo_eval.ARTIFACT):
            squad = {}
        return self.sva_runs.planned_runs() | squad

    # Fig. 2, the ratio sweep and Fig. 3 --------------------------------------------------------------------

    def fig2(self) -> pd.DataFrame:
        """Fig. 2, one row per (run, seed, test example) (``CircuitRuns.fig2``)."""
        return self.circuit_runs.fig2()

    def ratio_sweep(self) -> pd.DataFrame:
        """The ratio sweep, one row per (QK init, ratio, seed) (``CircuitRuns.ratio_sweep``)."""
        return self.circuit_runs.ratio_sweep()

    dtap = staticmethod(attention_tables.dtap)
    summary = staticmethod(attention_tables.summary)
    dtap_shares = staticmethod(attention_tables.dtap_shares)

    def fig3(self) -> pd.DataFrame:
        """Fig. 3, one row per (protocol, OV, alpha, seed, epoch) (``FixedAttentionRuns.fig3``)."""
        return self.fixed_attention.fig3()

    # Fig. 4 ------------------------------------------------------------------------------------------------

    def fig4(self) -> dict[float, Simulation]:
        """Fig. 4, the reduced dynamics per r (``dynamics_runs.fig4``)."""
        return dynamics_runs.fig4(self.preset.dynamics, self.cache)

    final_values = staticmethod(dynamics_runs.final_values)
    final_values_with_authors = staticmethod(dynamics_runs.final_values_with_authors)
    stopping_curves = staticmethod(dynamics_runs.stopping_curves)
    growth_fits = staticmethod(dynamics_runs.growth_fits)
    supported_law = staticmethod(dynamics_runs.supported_law)

    @staticmethod
    def growth_regimes(sims: dict[float, Simulation]) -> pd.DataFrame:
        """``claims.growth_regimes``: the regime of the first integral per r, with its verdict."""
        from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing

        return paper_claims.growth_regimes(sims)

    # SVA, SQuAD, HateXplain --------------------------------------------------------------------------------

    def sva_protocols(self) -> list[str]:
        """The SVA protocols run (``SVARuns.protocols``)."""
        return self.sva_runs.protocols()

    def sva_variants(self, protocol: str) -> list[Variant]:
        """The SVA runs of ``protocol`` (``SVARuns.variants``)."""
        return self.sva_runs.variants(protocol)

    def sva_data(self) -> tuple[ClassificationData, ClassificationData]:
        """The agreement sentences and the test sentences (``SVARuns.data``)."""
        return self.sva_runs.data()

    def sva(self, protocol: str = "authors") -> pd.DataFrame:
        """SVA under ``protocol``, one row per (variant, seed, test sentence) (``SVARuns.run``)."""
        return self.sva_runs.run(protocol)

    sva_summary = staticmethod(SVARuns.summary)

    def squad(self, protocol: str = "shared") -> pd.DataFrame:
        """SQuAD under ``protocol``, one row per (variant, seed, test question) (``SquadRuns.run``)."""
        return self.squad_runs.run(protocol)

    def squad_data(self) -> tuple[QABatchData, QABatchData]:
        """The encoded training and test questions (``SquadRuns.data``)."""
        return self.squad_runs.data()

    def squad_variants(self, protocol: str = "shared") -> list[Variant]:
        """The SQuAD runs of ``protocol`` (``SquadRuns.variants``)."""
        return self.squad_runs.variants(protocol)

    def squad_train(self, seed: int, qk_scale: float | None = None, protocol: str = "shared") -> TrainConfig:
        """The training settings of one SQuAD run (``SquadRuns.train_config``)."""
        return self.squad_runs.train_config(seed, qk_scale, protocol)

    def squad_budget(self, train: QABatchData | None = None) -> dict[str, float]:
        """One SQuAD run's training budget in the authors' units (``SquadRuns.budget``)."""
        return self.squad_runs.budget(train)

    squad_summary = staticmethod(SquadRuns.summary)
    ac_by_seed = staticmethod(real_data.ac_by_seed)
    real_summary = staticmethod(real_data.real_summary)
    hatexplain = staticmethod(real_data.hatexplain)

    # Claims ------------------------------------------------------------------------------------------------

    def claims(self, evidence: paper_claims.Evidence) -> list[Claim]:
        """The claims table's rows (:func:`attnlab.papers.qk_speed.claims.claims`) from the notebook's
        results, named in one :class:`~attnlab.papers.qk_speed.claims.Evidence` bundle, with the settings
        of this experiment's preset filled in: Fig. 2's pairs of runs and how its learning rate departs from
        the authors'."""
        from attnlab.papers.qk_speed import claims as paper_claims  # judged after computing

        c = self.preset.circuits
        pairs, note = tuple(paper_claims.fig2_pairs(c)), paper_claims.rescaling(c)
        return paper_claims.claims(replace(evidence, fig2_pairs=pairs, lr_note=note))


def configure(
    scale: str = "smoke",
    seeds: list[int] | tuple[int, ...] = (),
    device: str = "auto",
    workers: int = 0,
    ratios: list[float] | tuple[float, ...] = (),
    fast_ratio: float = 0.0,
    epochs: int = 0,
    sva_epochs: int = 0,
) -> QKSpeedExperiment:
    """Validate the notebook's parameters and resolve them against the scale's preset. ``seeds`` are the
    synthetic-task seeds (Figs. 2-3 and the ratio sweep; empty: the preset's); ``workers`` the processes that
    train independent runs at once, 0 = one per available CPU core: the (single-threaded) fixed-attention
    runs of Fig. 3, and on a CPU ``device`` a protocol's SVA and SQuAD runs, each process with an equal
    share of the cores (the circuit runs of Fig. 2 and the ratio sweep train all at once on ``device``;
    the smoke preset trains everything in this process). ``ratios``: the
    eta_QK / eta_OV ratios of the sweep; ``fast_ratio``: the ratio of Fig. 2's "FAFO QK x20" run (faster QK,
    above 1); ``epochs``: the row-1 and ratio-sweep budget in epochs (early stop at ``loss_stop``);
    ``sva_epochs``: the SVA classifiers' epochs (the cosine schedule stretches with them); empty or 0: the
    preset's."""
    workers = check_workers(workers)
    workers = workers or available_cores()
    scale = check_scale(scale)
    preset = PRESETS[scale]
    c = preset.circuits
    sweep = check_numbers("ratios", ratios, c.ratios)
    if len(sweep) < 2:
        raise ParameterError(f"ratios: a sweep needs at least two ratios; got {ratios!r}")
    circuits = replace(
        c,
        ratios=sweep,
        fast_fafo=check_number("fast_ratio", fast_ratio, c.fast_fafo, low=1.0),
        max_epochs=check_count("epochs", epochs) or c.max_epochs,
    )
    sva = replace(preset.sva, epochs=check_count("sva_epochs", sva_epochs) or preset.sva.epochs)
    preset = replace(preset, circuits=circuits, sva=sva)
    seeds = check_seeds(seeds, preset.seeds)
    if preset.ratio_seeds > len(seeds):
        preset = replace(preset, ratio_seeds=len(seeds))
    return QKSpeedExperiment(
        scale=scale, preset=preset, seeds=seeds, device=check_device(device), workers=workers
    )
