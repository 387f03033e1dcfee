"""Fig. 3 of "Faster query-key learning sharpens attention" (arXiv 2608.06776): the held-out loss per epoch
with the attention fixed at each alpha, factorised and collapsed OV, under each protocol of the preset, for
every synthetic seed, and its finite difference in alpha; each run trained on one CPU core
(``circuits.train_fixed_attention``), the missing ones in a pool of worker processes, into the results cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pandas as pd
import torch

from attnlab.papers.qk_speed.circuits import train_fixed_attention
from attnlab.papers.qk_speed.counted_cache import CountedCache
from attnlab.papers.qk_speed.presets import FixedSetup
from attnlab.training.cache import cached_result, result_path
from attnlab.training.workers import run_in_workers

#: What keys the fixed-attention results: the import closure of this module, which computes them
#: (``attnlab.codekeys``; named because the worker pool looks results up without their computation).
CODE = (__name__,)
KIND = "fixed_attention"


def _train_fixed(config: dict) -> dict:
    """Train one fixed-attention run from its cache config."""
    kw = {k: v for k, v in config.items() if k not in ("alpha", "other")}
    r = train_fixed_attention(config["alpha"], eval_alphas=(config["other"],), **kw)
    return {"loss": torch.tensor(r.loss), "other": torch.tensor(r.loss_at[config["other"]])}


def _store(config: dict) -> None:
    """Worker of ``FixedAttentionRuns._prefetch`` (one torch thread): compute one run into the results
    cache."""
    cached_result(KIND, config, partial(_train_fixed, config), code=CODE)


@dataclass(frozen=True)
class FixedAttentionRuns:
    """The fixed-attention runs of Fig. 3, for every synthetic seed (a seed's runs, one per alpha, are the
    unit of the claim "more mass gives a lower loss": one slope over alpha per seed)."""

    fixed: FixedSetup
    seeds: tuple[int, ...]
    workers: int  # processes that train the missing runs in parallel (1: none, they train in ``fig3``)
    cache: CountedCache

    def jobs(self) -> list[dict]:
        """Every run's cache config: per seed, protocol, factorised and collapsed OV, each alpha (and the
        alpha of its finite difference, ``other``)."""
        f = self.fixed
        jobs = []
        for seed in self.seeds:
            for protocol in f.protocols:
                for factorised in (True, False):
                    for alpha in f.alphas:
                        other = alpha + f.step if alpha + f.step <= 1.0 else alpha - f.step
                        jobs.append(dict(
                            alpha=alpha, other=other, factorised=factorised, epochs=f.epochs, lr=f.lr,
                            batches_per_epoch=f.batches_per_epoch, eval_size=f.eval_size, seed=seed,
                            protocol=protocol,
                        ))  # fmt: skip
        return jobs

    def steps(self) -> int:
        """SGD steps of the runs (each on one CPU core)."""
        return sum(cfg["epochs"] * cfg["batches_per_epoch"] for cfg in self.jobs())

    def _prefetch(self, configs: list[dict]) -> None:
        """Compute the runs of ``configs`` that are not cached yet in ``workers`` single-threaded processes,
        so that the calls that follow load them. With one worker, or one missing run, nothing happens here."""
        missing = [cfg for cfg in configs if not result_path(KIND, cfg, code=CODE).exists()]
        if run_in_workers(_store, missing, self.workers, threads=1, desc="Fig. 3 runs"):
            self.cache.prefetched.update(result_path(KIND, cfg, code=CODE) for cfg in missing)

    def fig3(self) -> pd.DataFrame:
        """Held-out loss per epoch with attention fixed at each alpha, factorised and collapsed OV, under each
        protocol of the preset (``FixedSetup.protocols``), for every seed; ``fd`` is the finite difference
        (L(alpha) - L(alpha + d)) / d of the same model (backward difference (L(alpha - d) - L(alpha)) / d at
        alpha = 1)."""
        step = self.fixed.step
        jobs = self.jobs()
        self._prefetch(jobs)
        rows = []
        for config in jobs:
            res = self.cache.result(KIND, config, partial(_train_fixed, config), code=CODE)
            loss, loss_other = res["loss"].numpy(), res["other"].numpy()
            alpha, other = config["alpha"], config["other"]
            fd = (loss - loss_other) / step if other > alpha else (loss_other - loss) / step
            for epoch, (lv, d) in enumerate(zip(loss, fd, strict=True)):
                rows.append(
                    {
                        "protocol": config["protocol"],
                        "ov": "factorised" if config["factorised"] else "collapsed",
                        "alpha": alpha,
                        "seed": config["seed"],
                        "epoch": epoch,
                        "loss": float(lv),
                        "fd": float(d),
                    }
                )
        return pd.DataFrame(rows)
