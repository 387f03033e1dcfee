"""Which circuit runs Fig. 2 of "Faster query-key learning sharpens attention" (arXiv 2608.06776) and its
eta_QK / eta_OV ratio sweep train: each run's cache config, from the preset's circuit settings, the seeds and
the device. Nothing is trained here: ``circuit_runs`` trains and evaluates the runs, ``batched.benchmark``
times them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from attnlab.papers.qk_speed.presets import PRESETS, CircuitRun, CircuitSetup, fig2_runs


@dataclass(frozen=True)
class CircuitJobs:
    """The circuit runs of Fig. 2 (every run of ``fig2_runs`` for every seed) and of the ratio sweep (FAFO at
    each ratio from each QK initialisation, the first ``ratio_seeds`` seeds)."""

    circuits: CircuitSetup
    seeds: tuple[int, ...]
    ratio_seeds: int  # how many of ``seeds`` the ratio sweep uses
    device: str  # the type of the device the runs train on: float rounding differs by device

    @classmethod
    def at_scale(cls, scale: str, device: str = "cpu") -> CircuitJobs:
        """The runs of the scale's defaults, ``configure(scale=scale, device=device)``'s."""
        p = PRESETS[scale]
        return cls(p.circuits, p.seeds, p.ratio_seeds, device)

    def config(self, run: CircuitRun, lr_qk: float, seed: int) -> dict:
        """A circuit run's cache config: ``run``'s parameterisation, initialisation, budget and early stop
        (the preset's row-1 settings where ``run`` leaves them open), QK learning rate ``lr_qk``."""
        c = self.circuits
        return dict(
            kind=run.kind,
            lr_qk=lr_qk,
            lr_ov=c.lr,
            qk_ramp=list(run.qk_ramp),
            seq_len=run.seq_len,
            qk_init=run.qk_init,
            collapsed_init=run.collapsed_init,
            batch_size=32,
            batches_per_epoch=run.batches_per_epoch or c.batches_per_epoch,
            max_epochs=run.max_epochs or c.max_epochs,
            loss_stop=c.loss_stop if run.early_stop else None,
            seed=seed,
            device=self.device,
        )

    def fig2(self) -> list[tuple[CircuitRun, int, dict]]:
        """(run, seed, config) of every Fig. 2 run."""
        c = self.circuits
        return [
            (run, seed, self.config(run, c.lr * run.qk_factor, seed))
            for run in fig2_runs(c)
            for seed in self.seeds
        ]

    def ratio(self) -> list[tuple[str, float, int, dict]]:
        """(QK init, ratio, seed, config): FAFO at the row-1 budget for every ratio and QK initialisation."""
        c = self.circuits
        return [
            (init, ratio, seed, self.config(run, c.lr * ratio, seed))
            for init in c.ratio_inits
            for run in [CircuitRun("FAFO", "fafo", seq_len=c.seq_len, qk_init=init)]
            for ratio in c.ratios
            for seed in self.seeds[: self.ratio_seeds]
        ]

    def configs(self) -> list[dict]:
        """The distinct circuit runs of Fig. 2 and the ratio sweep (their cache configs), in job order: a run
        of both (the sweep at x1 is Fig. 2's row-1 FAFO run from that init) is trained once."""
        configs = {json.dumps(cfg, sort_keys=True): cfg for *_, cfg in self.fig2() + self.ratio()}
        return list(configs.values())
